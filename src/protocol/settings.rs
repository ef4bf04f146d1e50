//! `polis.yml`, the protocol settings every machine shares (SPEC §1, §2, §7, §10): the polis
//! timezone, routing weights, explore rate, lesson cap and impact floor, routing policy.
//!
//! Pure: it reads the file's text (or its absence) and returns typed settings plus findings.
//! Like the reference, the file is deep-merged over defaults, so a file that sets one weight
//! keeps the others. A bad value is a finding and falls back to its default; it never stops
//! polisd. polisd writes this file only where none exists (`init`, `doctor --write-config`,
//! `migrate`) and, in `migrate`, splices its `schema_version` line.

use crate::protocol::clock::PolisZone;
use crate::protocol::finding::{quoted, Code, Finding};
use crate::protocol::layout::POLIS_YML;
use crate::yaml::{self, Mapping, Value};

/// The routing weights of SPEC §7.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Weights {
    pub history: f64,
    #[serde(rename = "self")]
    pub self_rating: f64,
    pub cost: f64,
    pub avail: f64,
}

impl Default for Weights {
    fn default() -> Self {
        Weights {
            history: 0.55,
            self_rating: 0.20,
            cost: 0.15,
            avail: 0.10,
        }
    }
}

pub const DEFAULT_EXPLORE_RATE: f64 = crate::protocol::routing::stats::DEFAULT_EXPLORE_RATE;
pub const DEFAULT_LESSON_CAP: f64 = 0.15;
pub const DEFAULT_LESSON_IMPACT_FLOOR: f64 = 1.0;

/// A new `polis.yml`: every setting of schema v2 at its default (the values the reference's
/// `write_config` writes) plus polisd's `timezone`. `init`, `doctor --write-config` and
/// `migrate` write it; polisd never rewrites a `polis.yml` that exists.
pub const NEW_FILE: &str = include_str!("templates/polis.yml");

/// The settings polisd uses.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// Whether `polis.yml` exists. With a file, its (merged) `routing.explore_rate` replaces
    /// the stats file's rate even when the file does not set it — the reference's behaviour.
    pub present: bool,
    pub timezone: PolisZone,
    pub weights: Weights,
    /// `Some` when `polis.yml` decides the explore rate (see `present`).
    pub explore_rate: Option<f64>,
    pub lesson_cap: f64,
    pub lesson_impact_floor: f64,
    /// `routing.policy`, carried as written.
    pub policy: Option<String>,
    /// The whole merged document, for settings other modules read.
    pub merged: Value,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            present: false,
            timezone: PolisZone::default(),
            weights: Weights::default(),
            explore_rate: None,
            lesson_cap: DEFAULT_LESSON_CAP,
            lesson_impact_floor: DEFAULT_LESSON_IMPACT_FLOOR,
            policy: None,
            merged: defaults(),
        }
    }
}

fn key(k: &str) -> Value {
    Value::Str(k.to_string())
}

/// The reference's default document (schema v2).
pub fn defaults() -> Value {
    let w = Weights::default();
    let weights: Mapping = [
        (key("history"), Value::Float(w.history)),
        (key("self"), Value::Float(w.self_rating)),
        (key("cost"), Value::Float(w.cost)),
        (key("avail"), Value::Float(w.avail)),
    ]
    .into_iter()
    .collect();
    let routing: Mapping = [
        (key("explore_rate"), Value::Float(DEFAULT_EXPLORE_RATE)),
        (key("lesson_cap"), Value::Float(DEFAULT_LESSON_CAP)),
        (key("weights"), Value::Map(weights)),
    ]
    .into_iter()
    .collect();
    Value::Map(
        [
            (key("schema_version"), Value::Int(2)),
            (key("policy_version"), Value::Int(1)),
            (key("routing"), Value::Map(routing)),
        ]
        .into_iter()
        .collect(),
    )
}

/// Overlays `over` on `base`: mappings merge key by key, anything else replaces.
pub fn deep_merge(base: &Value, over: &Value) -> Value {
    match (base, over) {
        (Value::Map(b), Value::Map(o)) => {
            let mut out = b.clone();
            for (k, v) in o.iter() {
                let merged = match (k.as_str().and_then(|k| b.get(k)), v) {
                    (Some(bv @ Value::Map(_)), Value::Map(_)) => deep_merge(bv, v),
                    _ => v.clone(),
                };
                out.insert(k.clone(), merged);
            }
            Value::Map(out)
        }
        _ => over.clone(),
    }
}

/// A finding on the setting at `path` (dotted, as in `routing.explore_rate`), on its line.
fn finding(text: &str, path: &str, message: String) -> Finding {
    Finding::warning(Code::BadYaml, POLIS_YML, key_path_line(text, path), message)
}

/// The line (1-based) of the setting at the dotted `path` in a block-style YAML file: each key
/// looked for inside the block of the one before it. When only the start of the path is found
/// (a flow mapping such as `routing: {explore_rate: x}`), the line of the deepest key found;
/// `None` when the first key is not a top-level line.
fn key_path_line(text: &str, path: &str) -> Option<usize> {
    let mut keys = path.split('.');
    let mut want = keys.next()?;
    // The line and indent of the deepest key found so far.
    let mut found: Option<(usize, usize)> = None;
    for (i, line) in text.lines().enumerate() {
        let line = line.trim_start_matches('\u{feff}');
        let body = line.trim_start();
        if body.is_empty() || body.starts_with('#') {
            continue;
        }
        let indent = line.len() - body.len();
        match found {
            Some((_, parent)) if indent <= parent => break,
            None if indent != 0 => continue,
            _ => {}
        }
        let is_key = body
            .strip_prefix(want)
            .is_some_and(|rest| rest.trim_start().starts_with(':'));
        if is_key {
            found = Some((i + 1, indent));
            match keys.next() {
                Some(k) => want = k,
                None => break,
            }
        }
    }
    found.map(|(line, _)| line)
}

/// Reads `polis.yml` (`None` when the file does not exist).
pub fn parse(text: Option<&str>) -> (Settings, Vec<Finding>) {
    let mut findings = Vec::new();
    let Some(text) = text else {
        return (Settings::default(), findings);
    };
    let data = match yaml::load(text) {
        Ok(Value::Null) => Value::Map(Mapping::new()),
        Ok(v @ Value::Map(_)) => v,
        Ok(_) => {
            findings.push(Finding::warning(
                Code::BadYaml,
                POLIS_YML,
                Some(1),
                "polis.yml must be a mapping of settings (e.g. `timezone: UTC`); defaults are used",
            ));
            Value::Map(Mapping::new())
        }
        Err(e) => {
            findings.push(Finding::warning(
                Code::BadYaml,
                POLIS_YML,
                Some(e.line),
                format!(
                    "invalid YAML ({}); every setting falls back to its default",
                    e.message
                ),
            ));
            Value::Map(Mapping::new())
        }
    };
    let merged = deep_merge(&defaults(), &data);
    let mut s = Settings {
        present: true,
        merged: merged.clone(),
        ..Settings::default()
    };

    match merged.get("timezone") {
        Value::Null => {}
        Value::Str(t) => match PolisZone::parse(t) {
            Some(z) => s.timezone = z,
            None => findings.push(finding(
                text,
                "timezone",
                format!(
                    "`timezone: {}` is not UTC or a fixed offset; UTC is used. Write e.g. \
                 `timezone: \"+02:00\"`",
                    quoted(t)
                ),
            )),
        },
        other => findings.push(finding(
            text,
            "timezone",
            format!(
                "`timezone: {}` is not UTC or a fixed offset; UTC is used. Quote the offset, e.g. \
             `timezone: \"+02:00\"`",
                quoted(&other.python_str())
            ),
        )),
    }

    let routing = merged.get("routing");
    if routing.is_truthy() && routing.as_map().is_none() {
        findings.push(finding(
            text,
            "routing",
            "`routing:` must be a mapping (weights, explore_rate, ...); defaults are used".into(),
        ));
    }
    let number = |v: &Value, name: &str, default: f64, findings: &mut Vec<Finding>| -> f64 {
        match v {
            // `.nan` and `.inf` are YAML floats, but a NaN weight makes every score NaN and
            // stops routing silently; they are findings like any other non-number.
            Value::Float(f) if !f.is_finite() => {
                findings.push(finding(
                    text,
                    &format!("routing.{name}"),
                    format!(
                        "`routing.{name}: {}` is not a finite number; {default} is used",
                        v.python_str()
                    ),
                ));
                default
            }
            Value::Int(_) | Value::Float(_) => v.as_f64().unwrap_or(default),
            Value::Null => default,
            other => {
                findings.push(finding(
                    text,
                    &format!("routing.{name}"),
                    format!(
                        "`routing.{name}: {}` is not a number; {default} is used",
                        quoted(&other.python_str())
                    ),
                ));
                default
            }
        }
    };
    if routing.as_map().is_some() {
        let w = routing.get("weights");
        match w.as_map() {
            Some(_) => {
                let d = Weights::default();
                s.weights = Weights {
                    history: number(
                        w.get("history"),
                        "weights.history",
                        d.history,
                        &mut findings,
                    ),
                    self_rating: number(
                        w.get("self"),
                        "weights.self",
                        d.self_rating,
                        &mut findings,
                    ),
                    cost: number(w.get("cost"), "weights.cost", d.cost, &mut findings),
                    avail: number(w.get("avail"), "weights.avail", d.avail, &mut findings),
                };
                // Kept as written (the reference routes with them), but a sign typed by
                // mistake turns the score around: told.
                let sw = &s.weights;
                for (name, value) in [
                    ("history", sw.history),
                    ("self", sw.self_rating),
                    ("cost", sw.cost),
                    ("avail", sw.avail),
                ] {
                    if value < 0.0 {
                        findings.push(finding(text, &format!("routing.weights.{name}"), format!(
                            "`routing.weights.{name}: {value}` is negative, so a better {} counts against a citizen; weights are shares of the score (they should sum to 1)",
                            match name {
                                "history" => "record",
                                "self" => "self-rating",
                                "cost" => "cost fit",
                                _ => "availability",
                            }
                        )));
                    }
                }
            }
            None => findings.push(finding(
                text,
                "routing.weights",
                "`routing.weights` must be a mapping of history/self/cost/avail; defaults are used"
                    .into(),
            )),
        }
        s.explore_rate = match routing.get("explore_rate") {
            v @ (Value::Int(_) | Value::Float(_)) if v.as_f64().is_some_and(f64::is_finite) => {
                let rate = v.as_f64().unwrap_or(DEFAULT_EXPLORE_RATE);
                let share = rate.clamp(0.0, 1.0);
                if share != rate {
                    // A share of the routings: the reference's draw explores always above 1
                    // and never below 0, so the nearest bound routes alike and says so.
                    findings.push(finding(text, "routing.explore_rate", format!(
                        "`routing.explore_rate: {}` is outside 0–1 (a share of the routings); {share} is used",
                        v.python_str()
                    )));
                }
                Some(share)
            }
            other => {
                findings.push(finding(text, "routing.explore_rate", format!(
                    "`routing.explore_rate: {}` is not a number; the rate in routing_stats.yml is used",
                    quoted(&other.python_str())
                )));
                None
            }
        };
        s.lesson_cap = number(
            routing.get("lesson_cap"),
            "lesson_cap",
            DEFAULT_LESSON_CAP,
            &mut findings,
        )
        .abs();
        s.lesson_impact_floor = number(
            routing.get("lesson_impact_floor"),
            "lesson_impact_floor",
            DEFAULT_LESSON_IMPACT_FLOOR,
            &mut findings,
        );
        s.policy = match routing.get("policy") {
            Value::Null => None,
            Value::Str(p) => Some(p.clone()),
            other => Some(other.python_str()),
        };
    } else {
        // `routing: null` (or another falsy value): the reference routes with module defaults
        // and the stats file's rate.
        s.explore_rate = None;
    }
    (s, findings)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absent_file_gives_defaults_and_no_rate_override() {
        let (s, f) = parse(None);
        assert!(!s.present && f.is_empty());
        assert_eq!(s.explore_rate, None);
        assert_eq!(s.weights, Weights::default());
    }

    #[test]
    fn an_explore_rate_outside_0_to_1_is_the_nearest_bound_and_a_finding() {
        for (text, rate) in [("2", 1.0), ("-1", 0.0), ("1", 1.0), ("0", 0.0)] {
            let (s, f) = parse(Some(&format!("routing:\n  explore_rate: {text}\n")));
            assert_eq!(s.explore_rate, Some(rate), "{text}");
            let bounded = text == "1" || text == "0";
            assert_eq!(f.is_empty(), bounded, "{text}: {f:?}");
            if !bounded {
                assert!(f[0].message.contains("outside 0–1"), "{f:?}");
            }
        }
    }

    #[test]
    fn a_negative_weight_is_kept_and_told() {
        let (s, f) = parse(Some("routing:\n  weights:\n    history: -5\n"));
        assert_eq!(s.weights.history, -5.0);
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(
            f[0].message.contains("weights.history: -5` is negative"),
            "{f:?}"
        );
    }

    #[test]
    fn partial_weights_merge_over_defaults() {
        let (s, f) = parse(Some("routing:\n  weights:\n    history: 0.7\n"));
        assert!(f.is_empty(), "{f:?}");
        assert_eq!(s.weights.history, 0.7);
        assert_eq!(s.weights.self_rating, 0.20);
        // A present file decides the rate even without setting it, as in the reference.
        assert_eq!(s.explore_rate, Some(0.15));
    }

    #[test]
    fn settings_are_read() {
        let (s, f) = parse(Some(
            "timezone: '+02:00'\nrouting:\n  explore_rate: 0.3\n  lesson_cap: 0.2\n  lesson_impact_floor: 3\n  policy: adaptive\n",
        ));
        assert!(f.is_empty(), "{f:?}");
        assert_eq!(s.timezone.0.local_minus_utc(), 7200);
        assert_eq!(s.explore_rate, Some(0.3));
        assert_eq!(s.lesson_cap, 0.2);
        assert_eq!(s.lesson_impact_floor, 3.0);
        assert_eq!(s.policy.as_deref(), Some("adaptive"));
    }

    #[test]
    fn a_bad_setting_is_found_on_its_own_line() {
        let text = "# the polis\ntimezone: Mars/Olympus\nrouting:\n  # shares\n  weights:\n    history: 0.5\n    cost: high\n  explore_rate: lots\nlessons: {}\n";
        let (_, f) = parse(Some(text));
        let lines: Vec<(Option<usize>, &str)> = f
            .iter()
            .map(|f| (f.line, f.message.split('`').nth(1).unwrap_or("")))
            .collect();
        assert_eq!(
            lines,
            [
                (Some(2), "timezone: Mars/Olympus"),
                (Some(7), "routing.weights.cost: high"),
                (Some(8), "routing.explore_rate: lots"),
            ]
        );
        // A flow mapping: the line of the key that holds it.
        let (_, f) = parse(Some("timezone: UTC\nrouting: {explore_rate: lots}\n"));
        assert_eq!(f[0].line, Some(2), "{f:?}");
        // A key of the same name deeper in another block is not taken for it.
        assert_eq!(
            key_path_line("a:\n  cost: 1\nb:\n  c: 2\n", "b.cost"),
            Some(3)
        );
    }

    #[test]
    fn bad_values_are_findings_not_failures() {
        let (s, f) = parse(Some(
            "timezone: Mars/Olympus\nrouting:\n  weights:\n    cost: high\n",
        ));
        assert_eq!(f.len(), 2, "{f:?}");
        assert_eq!(s.weights.cost, 0.15);
        let (s, f) = parse(Some("routing: [\n"));
        assert_eq!(f.len(), 1);
        assert!(s.present);
        let (s, _) = parse(Some("routing: null\n"));
        assert_eq!(s.explore_rate, None);
    }
}
