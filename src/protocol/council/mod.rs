//! Council review: several citizens from different vendors deliberate on a contract
//! in rounds, through plain files, and a chairman writes a falsifiable verdict.
//!
//! This module owns the rules and nothing else: the modes and their limits, what a contract
//! asks for ([`requested`]), who sits on the panel and in the chair ([`choose`]), the state
//! file `reviews/<cid>/council.md` ([`state`]), the anonymised packets, word limits and prompts
//! ([`packet`]), and the verdict's form ([`verdict`]). It reads no file and no clock: the
//! operations layer gathers the inputs (`operations::council`) and writes what these
//! functions return. Scores come from `protocol::routing::score`; nothing here re-implements
//! them.

pub mod fallback;
pub mod lens;
pub mod notices;
pub mod packet;
pub mod state;
pub mod verdict;

use crate::yaml::Value;
use serde::{Deserialize, Serialize};

/// The three council shapes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Three rounds (300, 220, 100 words), anonymised until the last packet.
    #[default]
    Full,
    /// Two rounds (200, 75 words), anonymised until the last packet.
    Quick,
    /// Two seats, two rounds and a short third (250, 180, 60 words), never anonymised.
    Duo,
}

impl Mode {
    pub const ALL: [Mode; 3] = [Mode::Full, Mode::Quick, Mode::Duo];

    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Full => "full",
            Mode::Quick => "quick",
            Mode::Duo => "duo",
        }
    }

    pub fn parse(text: &str) -> Option<Mode> {
        Mode::ALL
            .into_iter()
            .find(|m| m.as_str() == text.trim().to_ascii_lowercase())
    }

    /// The word limit of each round, in order; its length is the number of rounds.
    pub fn word_limits(self) -> &'static [usize] {
        match self {
            Mode::Full => &[300, 220, 100],
            Mode::Quick => &[200, 75],
            Mode::Duo => &[250, 180, 60],
        }
    }

    pub fn rounds(self) -> usize {
        self.word_limits().len()
    }

    /// The word limit of round `n` (1-based; round 0 is the restatement gate); the last
    /// round's for anything past it.
    pub fn word_limit(self, n: usize) -> usize {
        if n == 0 {
            return RESTATEMENT_WORDS;
        }
        let limits = self.word_limits();
        limits[n.clamp(1, limits.len()) - 1]
    }

    pub fn default_panel_size(self) -> usize {
        match self {
            Mode::Duo => 2,
            _ => 3,
        }
    }

    /// Whether packets hide who said what (every packet but the last; never in duo).
    pub fn anonymised(self) -> bool {
        self != Mode::Duo
    }
}

/// The default time each round stays open.
pub const DEFAULT_ROUND_HOURS: f64 = 24.0;
/// The restatement gate (round 0): one sentence restating the problem, one reframing it.
pub const RESTATEMENT_WORDS: usize = 50;
/// How often a silent seat is asked again before it is marked degraded.
pub const RETRIES: usize = 2;
/// The fewest seats that must answer a round for the council to go on unsimulated.
pub const HARD_MIN_LIVE_SEATS: usize = 2;
/// The largest panel polisd seats (labels run from A; more voices do not deliberate better).
pub const MAX_PANEL: usize = 7;

/// What a contract (or `polisd council start`) asks of a council.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Request {
    pub mode: Mode,
    /// Members named by hand, in label order; empty: polisd picks.
    pub panel: Vec<String>,
    pub panel_size: Option<usize>,
    pub chairman: Option<String>,
    pub round_hours: Option<f64>,
    /// The lens of each named member (same order as `panel`), from `members:`.
    pub lenses: Vec<Option<String>>,
    /// A triad by domain, or a profile by name (the seed's panels).
    pub triad: Option<String>,
    pub profile: Option<String>,
    /// Deadlines: the restatement gate, each retry window (the second is 2.5 times as long,
    /// as the seed's backoff of 2 s then 5 s), and the chairman's verdict.
    pub restatement_hours: Option<f64>,
    pub retry_hours: Option<f64>,
    pub verdict_hours: Option<f64>,
}

impl Request {
    /// The restatement gate is short: a quarter of a round unless set.
    pub fn restatement_hours(&self) -> f64 {
        self.restatement_hours
            .unwrap_or_else(|| self.round_hours() / 4.0)
    }

    pub fn retry_hours(&self) -> f64 {
        self.retry_hours.unwrap_or_else(|| self.round_hours() / 8.0)
    }

    pub fn verdict_hours(&self) -> f64 {
        self.verdict_hours.unwrap_or_else(|| self.round_hours())
    }

    pub fn panel_size(&self) -> usize {
        if self.mode == Mode::Duo {
            return 2;
        }
        self.panel_size
            .unwrap_or_else(|| self.mode.default_panel_size())
    }

    pub fn round_hours(&self) -> f64 {
        self.round_hours.unwrap_or(DEFAULT_ROUND_HOURS)
    }
}

/// Why a council request cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RequestError {
    #[error("`{key}: {}` is not valid in the council request: {rule}", crate::protocol::finding::quoted(.value))]
    Bad {
        key: &'static str,
        value: String,
        rule: &'static str,
    },
}

fn bad(key: &'static str, value: &Value, rule: &'static str) -> RequestError {
    RequestError::Bad {
        key,
        value: value.python_str(),
        rule,
    }
}

/// The council a contract's frontmatter asks for: `review: {mode: council, …}` or a top-level
/// `council:` block (a mapping, or `true`), with `council_mode`, `panel`, `panel_size`,
/// `chairman` and `round_hours` in either. `Ok(None)` when it asks for none.
pub fn requested(fields: &Value) -> Result<Option<Request>, RequestError> {
    let review = fields.get("review");
    let council = fields.get("council");
    let block = if review
        .get("mode")
        .as_str()
        .is_some_and(|m| m.trim().eq_ignore_ascii_case("council"))
    {
        review
    } else if council.as_map().is_some() {
        council
    } else if matches!(council, Value::Bool(true)) {
        &Value::Null
    } else if matches!(council, Value::Null | Value::Bool(false)) {
        return Ok(None);
    } else {
        // `council: quick`, `council: [a, b]`: a council was asked for in a shape that says
        // nothing polisd can read, so it is named rather than taken for no request.
        return Err(bad(
            "council",
            council,
            "a block of council keys, such as `council: {mode: quick}`, or `true` for the defaults",
        ));
    };
    // Keys of a `council:` block may also be written without the `council_` prefix.
    let key = |k: &'static str| {
        let v = block.get(k);
        if v.is_null() && k == "council_mode" && std::ptr::eq(block, council) {
            block.get("mode")
        } else {
            v
        }
    };
    // Errors name the key as written: `mode` inside a `council:` block.
    let mode_key = if std::ptr::eq(block, council) && block.get("council_mode").is_null() {
        "mode"
    } else {
        "council_mode"
    };
    request_from(&key, mode_key)
}

/// One `members:` item: `id`, `id: lens` (a one-key mapping) or `{id: …, lens: …}`.
fn member(item: &Value) -> Option<(String, Option<String>)> {
    let id_ok = |s: &str| crate::protocol::layout::is_agent_id(s.trim());
    let lens_of = |v: &Value| -> Option<Option<String>> {
        match v {
            Value::Null => Some(None),
            v => v
                .as_str()
                .map(str::trim)
                .filter(|l| lens::is_lens_name(l))
                .map(|l| Some(l.to_string())),
        }
    };
    if let Some(s) = item.as_str() {
        return id_ok(s).then(|| (s.trim().to_string(), None));
    }
    let map = item.as_map()?;
    if !item.get("id").is_null() {
        let id = item.get("id").as_str().filter(|s| id_ok(s))?;
        return Some((id.trim().to_string(), lens_of(item.get("lens"))?));
    }
    let mut entries = map.iter();
    let (k, v) = entries.next()?;
    if entries.next().is_some() {
        return None;
    }
    let id = k.as_str().filter(|s| id_ok(s))?;
    Some((id.trim().to_string(), lens_of(v)?))
}

fn request_from<'v>(
    key: &dyn Fn(&'static str) -> &'v Value,
    mode_key: &'static str,
) -> Result<Option<Request>, RequestError> {
    let mut r = Request::default();
    match key("council_mode") {
        Value::Null => {}
        v => {
            r.mode = v
                .as_str()
                .and_then(Mode::parse)
                .ok_or_else(|| bad(mode_key, v, "use full, quick or duo"))?
        }
    }
    match key("panel") {
        Value::Null => {}
        Value::Seq(items) => {
            for item in items {
                let id = item
                    .as_str()
                    .map(str::trim)
                    .filter(|s| crate::protocol::layout::is_agent_id(s));
                match id {
                    Some(id) if !r.panel.iter().any(|p| p == id) => r.panel.push(id.to_string()),
                    Some(_) => return Err(bad("panel", item, "each member once")),
                    None => return Err(bad("panel", item, "a list of citizen ids")),
                }
            }
        }
        Value::Str(s) => {
            for id in s.split(',').map(str::trim).filter(|s| !s.is_empty()) {
                if !crate::protocol::layout::is_agent_id(id) {
                    return Err(bad(
                        "panel",
                        &Value::Str(s.clone()),
                        "a list of citizen ids",
                    ));
                }
                if !r.panel.iter().any(|p| p == id) {
                    r.panel.push(id.to_string());
                }
            }
        }
        v => return Err(bad("panel", v, "a list of citizen ids")),
    }
    match key("members") {
        Value::Null => {}
        Value::Seq(items) => {
            if !r.panel.is_empty() {
                return Err(bad(
                    "members",
                    key("members"),
                    "name the members either in `panel` or in `members`, not both",
                ));
            }
            for item in items {
                let (id, lens) = member(item).ok_or_else(|| {
                    bad(
                        "members",
                        item,
                        "a list of citizen ids, each optionally `id: lens` or `{id: …, lens: …}`",
                    )
                })?;
                if r.panel.contains(&id) {
                    return Err(bad("members", item, "each member once"));
                }
                r.panel.push(id);
                r.lenses.push(lens);
            }
        }
        v => {
            return Err(bad(
                "members",
                v,
                "a list of citizen ids, each optionally `id: lens`",
            ))
        }
    }
    // A triad or a profile: a known name, kept lower-case.
    let named =
        |name: &'static str, known: &dyn Fn(&str) -> bool, rule: &'static str| match key(name) {
            Value::Null => Ok(None),
            v => v
                .as_str()
                .map(str::trim)
                .filter(|s| known(s))
                .map(|s| Some(s.to_ascii_lowercase()))
                .ok_or_else(|| bad(name, v, rule)),
        };
    r.triad = named(
        "triad",
        &|d| lens::triad(d).is_some(),
        "a domain of the council's triads (docs/council.md lists them)",
    )?;
    r.profile = named(
        "profile",
        &|p| lens::profile(p).is_some(),
        "classic, exploration-orthogonal or execution-lean",
    )?;
    let panels = [!r.panel.is_empty(), r.triad.is_some(), r.profile.is_some()];
    if panels.iter().filter(|p| **p).count() > 1 {
        return Err(RequestError::Bad {
            key: "triad",
            value: r.triad.clone().or(r.profile.clone()).unwrap_or_default(),
            rule: "ask for one panel: members, a triad or a profile",
        });
    }
    for (name, slot) in [
        ("restatement_hours", &mut r.restatement_hours),
        ("retry_hours", &mut r.retry_hours),
        ("verdict_hours", &mut r.verdict_hours),
    ] {
        match key(name) {
            Value::Null => {}
            v => match v.as_f64() {
                Some(h) if h > 0.0 && h <= 24.0 * 30.0 => *slot = Some(h),
                _ => {
                    return Err(RequestError::Bad {
                        key: name,
                        value: v.python_str(),
                        rule: "a number of hours above 0, at most 720",
                    })
                }
            },
        }
    }
    match key("panel_size") {
        Value::Null => {}
        Value::Int(n) if (2..=MAX_PANEL as i64).contains(n) => r.panel_size = Some(*n as usize),
        v => return Err(bad("panel_size", v, "a whole number from 2 to 7")),
    }
    match key("chairman") {
        Value::Null => {}
        v => match v.as_str().map(str::trim) {
            Some(id) if crate::protocol::layout::is_agent_id(id) => {
                r.chairman = Some(id.to_string())
            }
            _ => return Err(bad("chairman", v, "a citizen id")),
        },
    }
    match key("round_hours") {
        Value::Null => {}
        v => match v.as_f64() {
            Some(h) if h > 0.0 && h <= 24.0 * 30.0 => r.round_hours = Some(h),
            _ => {
                return Err(bad(
                    "round_hours",
                    v,
                    "a number of hours above 0, at most 720",
                ))
            }
        },
    }
    if r.mode == Mode::Duo && r.panel.len() > 2 {
        return Err(RequestError::Bad {
            key: "panel",
            value: r.panel.join(", "),
            rule: "a duo has two seats",
        });
    }
    Ok(Some(r))
}

/// A citizen who may sit on the council: registered, not away, not departed, not the owner.
/// `score` is their routing total for the contract (`protocol::routing::score`).
#[derive(Debug, Clone, PartialEq)]
pub struct Eligible {
    pub id: String,
    pub vendor: String,
    pub score: f64,
}

/// One seat as chosen, with why.
#[derive(Debug, Clone, PartialEq)]
pub struct Chosen {
    pub id: String,
    pub vendor: String,
    pub why: String,
    /// The lens this seat takes ([`lens`]); `None`: the citizen's own view.
    pub lens: Option<String>,
}

/// The panel and the chair.
#[derive(Debug, Clone, PartialEq)]
pub struct Choice {
    /// The mode the council runs in: a request for full or quick that can seat only two
    /// members runs as a duo (two people cannot be anonymous to each other).
    pub mode: Mode,
    pub panel: Vec<Chosen>,
    /// `None`: nobody is left, so the owner writes the verdict (and it is marked so).
    pub chairman: Option<Chosen>,
    /// Anything a reader should know (a smaller panel than asked).
    pub notes: Vec<String>,
}

/// Why no council can be seated.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChoiceError {
    #[error("`{0}` cannot sit on the council: {1}")]
    NotEligible(String, String),
    #[error("a council needs at least 2 members and only {0} citizen(s) other than the owner can sit (registered, not away); register more citizens or ask for a chavruta review (`review.reviewer`)")]
    TooFew(usize),
    #[error("the panel names only 1 member (`{0}`) and a council needs at least 2: name another member, or name none and polisd picks the panel")]
    PanelOfOne(String),
    #[error("`{0}` is on the panel and cannot also chair it")]
    ChairOnPanel(String),
    #[error("`{0}` is named twice; a council seats each citizen once: name another member")]
    NamedTwice(String),
}

/// Greedy by vendor, then by score: while some vendor is not yet seated, the best-scored
/// citizen of an unseated vendor; then the best remaining. `eligible` comes sorted by score,
/// highest first (ties in citizen-id order, as `score_all` sorts).
fn pick_next<'e>(
    eligible: &'e [Eligible],
    taken: &[String],
    vendors: &[String],
) -> Option<(&'e Eligible, bool)> {
    let free = || eligible.iter().filter(|e| !taken.contains(&e.id));
    free()
        .find(|e| !vendors.contains(&e.vendor))
        .map(|e| (e, true))
        .or_else(|| free().next().map(|e| (e, false)))
}

fn why_picked(e: &Eligible, new_vendor: bool) -> String {
    if new_vendor {
        format!(
            "vendor `{}` not yet seated; best routing score of that vendor ({:.3})",
            e.vendor, e.score
        )
    } else {
        format!(
            "every vendor already seated; best remaining routing score ({:.3})",
            e.score
        )
    }
}

/// Seats the panel and the chair. `given` members and `chairman` are
/// checked against `eligible` (an id missing there is not registered, away, departed or the
/// owner); the rest is picked by [`pick_next`].
pub fn choose(eligible: &[Eligible], request: &Request) -> Result<Choice, ChoiceError> {
    let find = |id: &str| {
        eligible.iter().find(|e| e.id == id).ok_or_else(|| {
            ChoiceError::NotEligible(
                id.to_string(),
                "not a registered citizen who is present (not away or departed) and not the contract's owner".into(),
            )
        })
    };
    let mut panel: Vec<Chosen> = Vec::new();
    let mut notes = Vec::new();
    let size = request.panel_size();
    if !request.panel.is_empty() {
        for id in &request.panel {
            let e = find(id)?;
            // One citizen in two seats is one view counted twice.
            if panel.iter().any(|c| c.id == e.id) {
                return Err(ChoiceError::NamedTwice(e.id.clone()));
            }
            panel.push(Chosen {
                id: e.id.clone(),
                vendor: e.vendor.clone(),
                why: "named in the request".into(),
                lens: None,
            });
        }
        if let [only] = panel.as_slice() {
            return Err(ChoiceError::PanelOfOne(only.id.clone()));
        }
    } else {
        let reserved: Vec<String> = request.chairman.iter().cloned().collect();
        let mut taken = reserved.clone();
        let mut vendors = Vec::new();
        while panel.len() < size {
            let Some((e, new_vendor)) = pick_next(eligible, &taken, &vendors) else {
                break;
            };
            taken.push(e.id.clone());
            vendors.push(e.vendor.clone());
            panel.push(Chosen {
                id: e.id.clone(),
                vendor: e.vendor.clone(),
                why: why_picked(e, new_vendor),
                lens: None,
            });
        }
        if panel.len() < 2 {
            return Err(ChoiceError::TooFew(panel.len()));
        }
        if panel.len() < size {
            notes.push(format!(
                "{size} seats were asked for; only {} citizens could sit",
                panel.len()
            ));
        }
    }
    let seated: Vec<String> = panel.iter().map(|c| c.id.clone()).collect();
    let chairman = match &request.chairman {
        Some(id) => {
            if seated.contains(id) {
                return Err(ChoiceError::ChairOnPanel(id.clone()));
            }
            let e = find(id)?;
            Some(Chosen {
                id: e.id.clone(),
                vendor: e.vendor.clone(),
                why: "named in the request".into(),
                lens: None,
            })
        }
        None => {
            let vendors: Vec<String> = panel.iter().map(|c| c.vendor.clone()).collect();
            pick_next(eligible, &seated, &vendors).map(|(e, new_vendor)| Chosen {
                id: e.id.clone(),
                vendor: e.vendor.clone(),
                lens: None,
                why: if new_vendor {
                    format!(
                        "not on the panel; vendor `{}` is not on it either; best routing score of that vendor ({:.3})",
                        e.vendor, e.score
                    )
                } else {
                    format!("not on the panel; best remaining routing score ({:.3})", e.score)
                },
            })
        }
    };
    if chairman.is_none() {
        notes.push("no citizen is left for the chair: the owner writes the verdict".into());
    }
    let mut mode = request.mode;
    if mode != Mode::Duo && panel.len() == 2 {
        mode = Mode::Duo;
        // A named pair is the request's choice, not a shortage of citizens.
        let why = if request.panel.is_empty() {
            "only 2 can sit"
        } else {
            "the panel names 2 members"
        };
        notes.push(format!(
            "a {} council needs 3 members and {why}, so it runs as a duo (two members cannot be anonymous to each other); the chair stays off the panel",
            request.mode.as_str()
        ));
    }
    Ok(Choice {
        mode,
        panel,
        chairman,
        notes,
    })
}

/// The lenses a request asks for before seating, so the panel can be sized to them: a
/// triad's three, a profile's roles (at most [`MAX_PANEL`]), or, when members are named, what
/// each was given. `None`: polisd picks after seating ([`assign_lenses`]).
pub fn requested_lenses(request: &Request) -> Option<(Vec<String>, String)> {
    if let Some(d) = &request.triad {
        let roles = lens::triad(d)?;
        return Some((
            roles.iter().map(|r| r.to_string()).collect(),
            format!("the `{d}` triad, as asked"),
        ));
    }
    if let Some(p) = &request.profile {
        let roles = lens::profile(p)?;
        return Some((
            roles.iter().map(|r| r.to_string()).collect(),
            format!("the `{p}` profile, as asked"),
        ));
    }
    None
}

/// Gives each seat its lens: the named members' own, a triad's or profile's roles in seat
/// order, or (nothing asked) the seed's rules on the problem's words: a duo's polarity pair,
/// else the best-matching triad. Extra seats beyond a triad take roles of the
/// exploration-orthogonal profile not yet used. Returns a note saying where the lenses came
/// from.
pub fn assign_lenses(choice: &mut Choice, request: &Request, problem: &str) -> String {
    // `asked`: how many of `roles` the request stands for; the rest only fill extra seats.
    let (roles, why, asked): (Vec<String>, String, usize) = if !request.panel.is_empty() {
        for seat in choice.panel.iter_mut() {
            let at = request.panel.iter().position(|p| *p == seat.id);
            seat.lens = at.and_then(|i| request.lenses.get(i).cloned().flatten());
        }
        return "lenses as named with the members (a member named without one keeps their own view)".into();
    } else if let Some((roles, why)) = requested_lenses(request) {
        let asked = roles.len();
        (roles, why, asked)
    } else if choice.mode == Mode::Duo {
        let (pair, keyword) = lens::duo_pair(problem);
        let why = match keyword {
            Some(k) => format!("the duo polarity pair for `{k}`, found in the problem"),
            None => {
                "the default duo polarity pair: no keyword of the duo rule in the problem".into()
            }
        };
        (
            pair.iter().map(|r| r.to_string()).collect(),
            why,
            pair.len(),
        )
    } else {
        let (domain, because) = lens::auto_triad(problem);
        let mut roles: Vec<String> = lens::triad(domain)
            .unwrap_or_default()
            .iter()
            .map(|r| r.to_string())
            .collect();
        let asked = roles.len();
        for extra in lens::profile("exploration-orthogonal").unwrap_or_default() {
            if !roles.iter().any(|r| r == extra) {
                roles.push(extra.to_string());
            }
        }
        (roles, format!("the `{domain}` triad: {because}"), asked)
    };
    for (seat, role) in choice.panel.iter_mut().zip(roles.iter()) {
        seat.lens = Some(role.clone());
    }
    if asked > choice.panel.len() {
        format!(
            "lenses from {why}; {} of its {} roles could be seated ({} left out)",
            choice.panel.len(),
            asked,
            roles[choice.panel.len()..asked].join(", ")
        )
    } else {
        format!("lenses from {why}")
    }
}

/// The label of the `i`-th seat (0-based): `Member A`, `Member B`, …
pub fn label(i: usize) -> String {
    format!("Member {}", (b'A' + (i % 26) as u8) as char)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(yaml: &str) -> Value {
        crate::yaml::load(yaml).unwrap()
    }

    fn e(id: &str, vendor: &str, score: f64) -> Eligible {
        Eligible {
            id: id.into(),
            vendor: vendor.into(),
            score,
        }
    }

    #[test]
    fn limits_per_mode() {
        assert_eq!(Mode::Full.word_limits(), &[300, 220, 100]);
        assert_eq!(Mode::Quick.word_limits(), &[200, 75]);
        assert_eq!(Mode::Duo.word_limits(), &[250, 180, 60]);
        assert_eq!(Mode::Quick.rounds(), 2);
        assert_eq!(Mode::Duo.default_panel_size(), 2);
        assert!(!Mode::Duo.anonymised());
    }

    #[test]
    fn review_mode_council_and_council_block_are_both_requests() {
        let r = requested(&fields(
            "review: {mode: council, council_mode: quick, panel_size: 4, round_hours: 0.5}",
        ))
        .unwrap()
        .unwrap();
        assert_eq!(r.mode, Mode::Quick);
        assert_eq!(r.panel_size(), 4);
        assert_eq!(r.round_hours(), 0.5);
        let r = requested(&fields(
            "council:\n  mode: duo\n  chairman: claude-chair-one\n",
        ))
        .unwrap()
        .unwrap();
        assert_eq!(r.mode, Mode::Duo);
        assert_eq!(r.chairman.as_deref(), Some("claude-chair-one"));
        assert_eq!(r.panel_size(), 2);
        assert!(requested(&fields("council: true")).unwrap().is_some());
        assert!(requested(&fields("review: {required: true}"))
            .unwrap()
            .is_none());
        assert!(requested(&fields("stakes: high")).unwrap().is_none());
    }

    #[test]
    fn bad_requests_name_the_key() {
        let e = requested(&fields("review: {mode: council, council_mode: huge}")).unwrap_err();
        assert!(e.to_string().contains("council_mode"), "{e}");
        let e = requested(&fields("council: {mode: huge}")).unwrap_err();
        assert!(e.to_string().starts_with("`mode: huge`"), "{e}");
        let e = requested(&fields("council: {panel_size: 1}")).unwrap_err();
        assert!(e.to_string().contains("panel_size"), "{e}");
        let e = requested(&fields("council: {panel: [Bad Id]}")).unwrap_err();
        assert!(e.to_string().contains("panel"), "{e}");
        let e = requested(&fields("council: {round_hours: -1}")).unwrap_err();
        assert!(e.to_string().contains("round_hours"), "{e}");
    }

    #[test]
    fn a_council_key_that_is_not_a_block_is_named_not_taken_for_no_request() {
        for text in [
            "council: quick",
            "council: [claude-aaaa-one, codex-bbbb-one]",
            "council: 3",
        ] {
            let e = requested(&fields(text)).unwrap_err();
            assert!(e.to_string().starts_with("`council: "), "{text}: {e}");
            assert!(
                e.to_string().contains("council: {mode: quick}"),
                "{text}: {e}"
            );
        }
        for text in ["council: false", "council: null", "council: no"] {
            assert!(requested(&fields(text)).unwrap().is_none(), "{text}");
        }
    }

    #[test]
    fn different_vendors_first_then_score() {
        let eligible = [
            e("claude-aaaa-one", "anthropic", 0.9),
            e("claude-aaaa-two", "anthropic", 0.8),
            e("codex-bbbb-one", "openai", 0.5),
            e("gemini-cccc-one", "google", 0.4),
            e("codex-bbbb-two", "openai", 0.3),
        ];
        let c = choose(&eligible, &Request::default()).unwrap();
        let ids: Vec<&str> = c.panel.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(
            ids,
            ["claude-aaaa-one", "codex-bbbb-one", "gemini-cccc-one"]
        );
        // The chair: no vendor left unseated, so the best remaining score.
        assert_eq!(c.chairman.unwrap().id, "claude-aaaa-two");
        let c = choose(
            &eligible,
            &Request {
                panel_size: Some(4),
                ..Request::default()
            },
        )
        .unwrap();
        assert_eq!(c.panel[3].id, "claude-aaaa-two");
        assert!(c.panel[3].why.contains("every vendor already seated"));
    }

    #[test]
    fn chair_prefers_an_unseated_vendor() {
        let eligible = [
            e("claude-aaaa-one", "anthropic", 0.9),
            e("claude-aaaa-two", "anthropic", 0.8),
            e("codex-bbbb-one", "openai", 0.5),
            e("gemini-cccc-one", "google", 0.1),
        ];
        let c = choose(
            &eligible,
            &Request {
                mode: Mode::Duo,
                ..Request::default()
            },
        )
        .unwrap();
        assert_eq!(c.panel.len(), 2);
        assert_eq!(c.chairman.unwrap().id, "gemini-cccc-one");
    }

    #[test]
    fn no_one_left_for_the_chair_means_the_owner() {
        let eligible = [
            e("claude-aaaa-one", "a", 0.9),
            e("codex-bbbb-one", "b", 0.5),
        ];
        let c = choose(&eligible, &Request::default()).unwrap();
        assert_eq!(c.panel.len(), 2);
        assert!(c.chairman.is_none());
        assert_eq!(c.notes.len(), 3, "{:?}", c.notes);
        assert_eq!(c.mode, Mode::Duo, "two seats make a duo");
        assert_eq!(
            choose(&eligible[..1], &Request::default()),
            Err(ChoiceError::TooFew(1))
        );
    }

    #[test]
    fn given_members_must_be_eligible_and_the_chair_off_the_panel() {
        let eligible = [
            e("claude-aaaa-one", "a", 0.9),
            e("codex-bbbb-one", "b", 0.5),
            e("gemini-cccc-one", "c", 0.1),
        ];
        let r = Request {
            panel: vec!["claude-aaaa-one".into(), "nobody-at-all".into()],
            ..Request::default()
        };
        assert!(matches!(
            choose(&eligible, &r),
            Err(ChoiceError::NotEligible(..))
        ));
        let r = Request {
            panel: vec!["claude-aaaa-one".into(), "codex-bbbb-one".into()],
            chairman: Some("codex-bbbb-one".into()),
            ..Request::default()
        };
        assert!(matches!(
            choose(&eligible, &r),
            Err(ChoiceError::ChairOnPanel(_))
        ));
        // A named chair is kept out of the picked panel.
        let r = Request {
            chairman: Some("claude-aaaa-one".into()),
            panel_size: Some(2),
            ..Request::default()
        };
        let c = choose(&eligible, &r).unwrap();
        assert!(c.panel.iter().all(|m| m.id != "claude-aaaa-one"));
        assert_eq!(c.chairman.unwrap().id, "claude-aaaa-one");
    }

    #[test]
    fn a_named_panel_too_small_is_blamed_on_the_panel_not_the_polis() {
        let eligible = [
            e("claude-aaaa-one", "a", 0.9),
            e("codex-bbbb-one", "b", 0.5),
            e("gemini-cccc-one", "c", 0.1),
            e("llama-dddd-one", "d", 0.1),
        ];
        let one = Request {
            panel: vec!["claude-aaaa-one".into()],
            ..Request::default()
        };
        let err = choose(&eligible, &one).unwrap_err().to_string();
        assert!(!err.contains("can sit"), "four citizens can sit: {err}");
        assert!(err.contains("names only 1 member"), "{err}");
        let two = Request {
            panel: vec!["claude-aaaa-one".into(), "codex-bbbb-one".into()],
            ..Request::default()
        };
        let c = choose(&eligible, &two).unwrap();
        assert_eq!(c.mode, Mode::Duo);
        let note = c.notes.iter().find(|n| n.contains("duo")).unwrap();
        assert!(!note.contains("only 2 can sit"), "four can sit: {note}");
        assert!(note.contains("names 2 members"), "{note}");
    }

    #[test]
    fn members_with_lenses_triads_profiles_and_deadlines_are_read() {
        let r = requested(&fields(
            "council:\n  members:\n    - claude-aaaa-one: socrates\n    - {id: codex-bbbb-one, lens: feynman}\n    - gemini-cccc-one\n  restatement_hours: 0.1\n  retry_hours: 0.05\n  verdict_hours: 2\n",
        ))
        .unwrap()
        .unwrap();
        assert_eq!(
            r.panel,
            ["claude-aaaa-one", "codex-bbbb-one", "gemini-cccc-one"]
        );
        assert_eq!(
            r.lenses,
            [
                Some("socrates".to_string()),
                Some("feynman".to_string()),
                None
            ]
        );
        assert_eq!(
            (r.restatement_hours(), r.retry_hours(), r.verdict_hours()),
            (0.1, 0.05, 2.0)
        );
        let r = requested(&fields("council: {triad: Risk}"))
            .unwrap()
            .unwrap();
        assert_eq!(r.triad.as_deref(), Some("risk"));
        assert_eq!(
            requested_lenses(&r).unwrap().0,
            ["sun-tzu", "aurelius", "feynman"]
        );
        // Defaults scale with the round.
        let r = requested(&fields("council: {round_hours: 8}"))
            .unwrap()
            .unwrap();
        assert_eq!(
            (r.restatement_hours(), r.retry_hours(), r.verdict_hours()),
            (2.0, 1.0, 8.0)
        );
        for (bad_yaml, key) in [
            ("council: {triad: cooking}", "triad"),
            ("council: {profile: huge}", "profile"),
            ("council: {triad: risk, profile: classic}", "one panel"),
            ("council: {members: [claude-aaaa-one: Bad Lens]}", "members"),
            (
                "council: {panel: [claude-aaaa-one], members: [codex-bbbb-one]}",
                "not both",
            ),
            ("council: {retry_hours: 0}", "retry_hours"),
        ] {
            let e = requested(&fields(bad_yaml)).unwrap_err().to_string();
            assert!(e.contains(key), "{bad_yaml}: {e}");
        }
    }

    #[test]
    fn lenses_go_to_seats_by_request_or_by_the_seed_s_rules() {
        let eligible = [
            e("claude-aaaa-one", "anthropic", 0.9),
            e("codex-bbbb-one", "openai", 0.5),
            e("gemini-cccc-one", "google", 0.4),
            e("claude-dddd-two", "anthropic", 0.3),
        ];
        let duo = Request {
            mode: Mode::Duo,
            ..Request::default()
        };
        let mut c = choose(&eligible, &duo).unwrap();
        let why = assign_lenses(&mut c, &duo, "Which model should we fine-tune?");
        assert_eq!(c.panel[0].lens.as_deref(), Some("karpathy"));
        assert_eq!(c.panel[1].lens.as_deref(), Some("sutskever"));
        assert!(why.contains("`model`"), "{why}");
        let full = Request::default();
        let mut c = choose(&eligible, &full).unwrap();
        assert_eq!(c.mode, Mode::Full);
        let why = assign_lenses(&mut c, &full, "the risk of it");
        assert!(why.contains("`risk` triad"), "{why}");
        assert_eq!(c.panel[2].lens.as_deref(), Some("feynman"));
        // The roles that would fill seats beyond a triad's three are no part of what was
        // asked: a panel of three leaves nothing out.
        assert!(!why.contains("left out"), "{why}");
        // A profile larger than the panel says what it left out.
        let lean = Request {
            profile: Some("execution-lean".into()),
            panel_size: Some(3),
            ..Request::default()
        };
        let mut c = choose(&eligible, &lean).unwrap();
        let why = assign_lenses(&mut c, &lean, "");
        assert!(
            why.contains("3 of its 5 roles could be seated (aurelius, ada left out)"),
            "{why}"
        );
    }

    #[test]
    fn labels_run_from_a() {
        assert_eq!(label(0), "Member A");
        assert_eq!(label(2), "Member C");
    }
}
