//! Lessons (SPEC §10): the typed view of `lessons/<tag>/<lesson-id>.md`, which lessons may
//! affect routing, and the bounded routing bonus they give a citizen (SPEC §7 `L`).
//!
//! Pure: records in, values out. The caller hands lessons in the reference's order (sorted by
//! path, see [`path_order`]) because the bonus is a float sum and `applied_lessons` a list.

use crate::protocol::frontmatter::Record;
use crate::yaml::Value;

/// One `routing_effect` entry: `{citizen, tags, delta}`.
#[derive(Debug, Clone, PartialEq)]
pub struct RoutingEffect {
    /// Only a string names a citizen.
    pub citizen: Option<String>,
    /// Empty means "any tag". Items that are not strings never meet a contract's tags but
    /// still make the list non-empty.
    pub tags: Vec<Value>,
    /// `float(delta)` as Python would take it; `None` when that fails (the entry is skipped).
    pub delta: Option<f64>,
}

/// A lesson's frontmatter.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Lesson {
    pub lesson_id: String,
    pub filed_by: Option<String>,
    pub filed_at: Value,
    pub capability_tags: Vec<String>,
    pub related_contracts: Value,
    pub quality_impact: Option<f64>,
    /// `status` as written; absent = accepted.
    pub status: Value,
    /// `None` unless `routing_effect` is a list. Entries that are not mappings are dropped.
    pub routing_effect: Option<Vec<RoutingEffect>>,
    pub fields: Value,
}

/// Python's `float(x)` for the values YAML can give; `None` where it raises.
pub fn python_float(v: &Value) -> Option<f64> {
    match v {
        Value::Int(i) => Some(*i as f64),
        Value::Float(f) => Some(*f),
        Value::Bool(b) => Some(f64::from(u8::from(*b))),
        Value::BigInt(s) => s.parse::<f64>().ok().filter(|f| f.is_finite()),
        Value::Str(s) => python_float_str(s),
        _ => None,
    }
}

/// `float(str)`: surrounding whitespace ignored, `_` allowed between digits, `inf`/`nan`.
fn python_float_str(s: &str) -> Option<f64> {
    let t = s.trim();
    let b = t.as_bytes();
    for (i, c) in b.iter().enumerate() {
        if *c == b'_' {
            let ok = i > 0
                && b[i - 1].is_ascii_digit()
                && b.get(i + 1).is_some_and(|n| n.is_ascii_digit());
            if !ok {
                return None;
            }
        }
    }
    let cleaned: String = t.chars().filter(|c| *c != '_').collect();
    let lower = cleaned.to_ascii_lowercase();
    let body = lower.trim_start_matches(['+', '-']);
    if lower.len() - body.len() > 1 {
        return None;
    }
    if matches!(body, "inf" | "infinity" | "nan") {
        return cleaned.parse().ok();
    }
    if body.is_empty()
        || !body
            .bytes()
            .all(|c| c.is_ascii_digit() || matches!(c, b'.' | b'e' | b'+' | b'-'))
    {
        return None;
    }
    cleaned.parse().ok()
}

fn tag_list(v: &Value) -> Vec<Value> {
    match v {
        Value::Seq(items) => items.clone(),
        // One tag, as SPEC §6 reads `required_tags` (the reference splits it into letters).
        Value::Str(s) if !s.is_empty() => vec![v.clone()],
        Value::Map(m) => m.iter().map(|(k, _)| k.clone()).collect(),
        other if other.is_truthy() => vec![other.clone()],
        _ => Vec::new(),
    }
}

impl Lesson {
    /// `stem` is the file name without `.md`, the id when `lesson_id` is absent.
    pub fn from_record(stem: &str, record: &Record) -> Lesson {
        let f = &record.fields;
        let lesson_id = match f.get("lesson_id") {
            Value::Null => stem.to_string(),
            Value::Str(s) => s.clone(),
            other => other.python_str(),
        };
        let routing_effect = f.get("routing_effect").as_seq().map(|effects| {
            effects
                .iter()
                .filter(|e| e.as_map().is_some())
                .map(|e| RoutingEffect {
                    citizen: e.get("citizen").as_str().map(str::to_string),
                    tags: tag_list(e.get("tags")),
                    delta: match e.as_map().and_then(|m| m.get("delta")) {
                        None => Some(0.0),
                        Some(d) => python_float(d),
                    },
                })
                .collect()
        });
        Lesson {
            lesson_id,
            filed_by: f.get("filed_by").as_str().map(str::to_string),
            filed_at: f.get("filed_at").clone(),
            capability_tags: crate::protocol::contracts::contract::tags_of(
                f.get("capability_tags"),
            )
            .0,
            related_contracts: f.get("related_contracts").clone(),
            quality_impact: match f.get("quality_impact") {
                v @ (Value::Int(_) | Value::Float(_)) => v.as_f64(),
                _ => None,
            },
            status: f
                .as_map()
                .and_then(|m| m.get("status"))
                .cloned()
                .unwrap_or_else(|| Value::Str("accepted".into())),
            routing_effect,
            fields: f.clone(),
        }
    }

    /// Accepted: `status` absent or any casing of `accepted` (an explicit null is not).
    pub fn is_accepted(&self) -> bool {
        self.status.python_str().to_lowercase() == "accepted"
    }

    /// Whether this lesson may change routing (SPEC §10): accepted, with a `routing_effect`
    /// list, and with `quality_impact` at least `floor`. A floor of 1 or less is no floor at
    /// all, so a lesson without `quality_impact` still counts then.
    pub fn affects_routing(&self, floor: f64) -> bool {
        if !self.is_accepted()
            || self.routing_effect.is_none()
            || self.fields.as_map().is_none_or(|m| m.is_empty())
        {
            return false;
        }
        floor <= 1.0 || self.quality_impact.is_some_and(|q| q >= floor)
    }
}

/// The lessons that affect routing, in the order given.
pub fn routing_lessons(lessons: &[Lesson], floor: f64) -> Vec<&Lesson> {
    lessons
        .iter()
        .filter(|l| l.affects_routing(floor))
        .collect()
}

/// The order the reference reads lessons in: `sorted(Path.rglob(...))` compares paths part by
/// part, so `a/x.md` comes before `a-b/x.md`. Sort relative paths with this key.
pub fn path_order(relative: &str) -> Vec<&str> {
    relative.split('/').collect()
}

/// Python's `min(a, b)` / `max(a, b)`: the first argument unless the second is strictly
/// beyond it (so a NaN second argument loses).
fn py_min(a: f64, b: f64) -> f64 {
    if b < a {
        b
    } else {
        a
    }
}

fn py_max(a: f64, b: f64) -> f64 {
    if b > a {
        b
    } else {
        a
    }
}

/// SPEC §7 `L`: the summed `delta` of effects naming `citizen` whose tags are empty or meet
/// `tags`, clamped to ±`cap`; with the ids of the lessons applied (once per effect).
pub fn lessons_score(
    citizen: &str,
    tags: &[String],
    lessons: &[&Lesson],
    cap: f64,
) -> (f64, Vec<String>) {
    if tags.is_empty() || lessons.is_empty() {
        return (0.0, Vec::new());
    }
    let mut raw = 0.0;
    let mut applied = Vec::new();
    for lesson in lessons {
        for effect in lesson.routing_effect.iter().flatten() {
            if effect.citizen.as_deref() != Some(citizen) {
                continue;
            }
            let meets = effect.tags.is_empty()
                || effect
                    .tags
                    .iter()
                    .any(|t| t.as_str().is_some_and(|t| tags.iter().any(|x| x == t)));
            if !meets {
                continue;
            }
            let Some(delta) = effect.delta else { continue };
            if delta == 0.0 {
                continue;
            }
            raw += delta;
            applied.push(lesson.lesson_id.clone());
        }
    }
    (py_max(-cap, py_min(cap, raw)), applied)
}

/// What `lesson file` (and `contract settle --lesson`) was asked for.
#[derive(Debug, Clone, PartialEq)]
pub struct NewLesson {
    pub lesson_id: String,
    pub filed_by: String,
    /// `YYYY-MM-DD HH:MM:SS` in the polis timezone.
    pub filed_at: String,
    pub capability_tags: Vec<String>,
    pub related_contracts: Vec<String>,
    pub quality_impact: u8,
    pub text: String,
}

/// The lesson's title: its text's first line, cut at 80 characters.
pub fn title_of(text: &str) -> String {
    let first = text.trim().lines().next().unwrap_or("").trim();
    let mut t: String = first.chars().take(80).collect();
    if first.chars().count() > 80 {
        t.push('…');
    }
    t
}

/// The bytes of a new lesson file: the frontmatter SPEC §10 names (accepted: no `status`), a
/// title heading (what context packets show) and the paragraph.
pub fn render_new(l: &NewLesson) -> Result<String, crate::yaml::EmitError> {
    let s = |v: &str| Value::Str(v.to_string());
    let mut m = crate::yaml::Mapping::new();
    m.insert(s("lesson_id"), s(&l.lesson_id));
    m.insert(s("filed_by"), s(&l.filed_by));
    m.insert(s("filed_at"), s(&l.filed_at));
    m.insert(
        s("capability_tags"),
        Value::Seq(l.capability_tags.iter().map(|t| s(t)).collect()),
    );
    m.insert(
        s("related_contracts"),
        Value::Seq(l.related_contracts.iter().map(|t| s(t)).collect()),
    );
    m.insert(s("quality_impact"), Value::Int(l.quality_impact.into()));
    let head = crate::yaml::dump(&Value::Map(m), &crate::yaml::DumpOptions::FRONTMATTER)?;
    Ok(format!(
        "---\n{head}---\n\n# {}\n\n{}\n",
        title_of(&l.text),
        l.text.trim()
    ))
}

/// Whether the lesson file `existing` records the same filing as `new` (what [`render_new`]
/// writes for it), apart from its id and the second it was filed: the same citizen, tags,
/// contracts, impact and words are a replayed command, not a second lesson.
pub fn same_filing(existing: &str, new: &str) -> bool {
    crate::protocol::frontmatter::same_record_apart_from(existing, new, &["lesson_id", "filed_at"])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::frontmatter;

    #[test]
    fn same_filing_ignores_only_the_id_and_the_second() {
        let new = |id: &str, at: &str, by: &str| {
            render_new(&NewLesson {
                lesson_id: id.into(),
                filed_by: by.into(),
                filed_at: at.into(),
                capability_tags: vec!["py".into()],
                related_contracts: vec![],
                quality_impact: 3,
                text: "Check the store.".into(),
            })
            .unwrap()
        };
        let first = new("2026-03-02-check", "2026-03-02 10:00:00", "alpha-agent");
        assert!(same_filing(
            &first,
            &new("2026-03-02-check-2", "2026-03-02 10:00:07", "alpha-agent")
        ));
        assert!(!same_filing(
            &first,
            &new("2026-03-02-check-2", "2026-03-02 10:00:07", "bravo-agent")
        ));
        assert!(!same_filing(
            &format!("{first}\nA note added by hand.\n"),
            &first
        ));
    }

    fn lesson(fm: &str) -> Lesson {
        Lesson::from_record(
            "2026-03-02-x",
            &frontmatter::parse(&format!("---\n{fm}\n---\n")).unwrap(),
        )
    }

    #[test]
    fn accepted_filter() {
        assert!(lesson("a: 1\nrouting_effect: []").affects_routing(1.0));
        assert!(lesson("status: Accepted\nrouting_effect: []").affects_routing(1.0));
        assert!(!lesson("status: proposed\nrouting_effect: []").affects_routing(1.0));
        assert!(!lesson("status: null\nrouting_effect: []").affects_routing(1.0));
        assert!(!lesson("status: accepted").affects_routing(1.0));
    }

    #[test]
    fn impact_floor() {
        assert!(lesson("routing_effect: []").affects_routing(1.0));
        assert!(!lesson("routing_effect: []").affects_routing(3.0));
        assert!(!lesson("quality_impact: 2\nrouting_effect: []").affects_routing(3.0));
        assert!(lesson("quality_impact: 3\nrouting_effect: []").affects_routing(3.0));
    }

    #[test]
    fn bonus_is_summed_matched_and_clamped() {
        let a = lesson("routing_effect:\n- {citizen: alice-agent, tags: [py], delta: 0.1}\n- {citizen: alice-agent, delta: '0.1'}\n- {citizen: alice-agent, tags: [go], delta: 0.5}\n- {citizen: bob-agent1, delta: 0.5}\n- {citizen: alice-agent, delta: null}\n- {citizen: alice-agent, delta: 0}");
        let tags = vec!["py".to_string()];
        let (bonus, applied) = lessons_score("alice-agent", &tags, &[&a], 0.15);
        assert_eq!(bonus, 0.15);
        assert_eq!(applied.len(), 2);
        let (bonus, _) = lessons_score("alice-agent", &[], &[&a], 0.15);
        assert_eq!(bonus, 0.0);
        let n = lesson("routing_effect:\n- {citizen: alice-agent, delta: .nan}");
        assert_eq!(lessons_score("alice-agent", &tags, &[&n], 0.15).0, 0.15);
    }

    #[test]
    fn float_of_strings_like_python() {
        let f = |s: &str| python_float_str(s);
        assert_eq!(f(" 0.5 "), Some(0.5));
        assert_eq!(f("1_0"), Some(10.0));
        assert_eq!(f("_1"), None);
        assert_eq!(f("-inf"), Some(f64::NEG_INFINITY));
        assert_eq!(f("abc"), None);
        assert_eq!(f("1e3"), Some(1000.0));
        assert_eq!(f("--1"), None);
    }
}
