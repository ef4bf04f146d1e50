//! A citizen's `status.md` (SPEC §5): what state the citizen says it is in.
//!
//! Pure: text in, a [`Status`] out. A missing file means `idle`; polisd only ever reads this
//! file, it belongs to its citizen.

use crate::protocol::finding::quoted;
use crate::protocol::frontmatter::{self, FrontmatterError};
use crate::yaml::Value;

/// `state:` as written. Values are compared exactly, as the reference does: `Idle` is not
/// `idle`, it is [`State::Other`].
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum State {
    #[default]
    Idle,
    Working,
    Blocked,
    Reviewing,
    Away,
    /// Any other value (Python's `str()` of it; `None` for an explicit null).
    Other(String),
}

impl State {
    /// Reads `state:`; a missing key is `idle` (the reference's `status.get("state", "idle")`).
    pub fn from_value(value: Option<&Value>) -> State {
        match value {
            None => State::Idle,
            Some(Value::Str(s)) => match s.as_str() {
                "idle" => State::Idle,
                "working" => State::Working,
                "blocked" => State::Blocked,
                "reviewing" => State::Reviewing,
                "away" => State::Away,
                other => State::Other(other.to_string()),
            },
            Some(v) => State::Other(v.python_str()),
        }
    }

    pub fn as_str(&self) -> &str {
        match self {
            State::Idle => "idle",
            State::Working => "working",
            State::Blocked => "blocked",
            State::Reviewing => "reviewing",
            State::Away => "away",
            State::Other(s) => s,
        }
    }
}

/// A citizen's status frontmatter.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Status {
    pub agent_id: Option<String>,
    pub last_active: Value,
    pub state: State,
    pub current_contract: Option<String>,
    /// `blockers` items as text.
    pub blockers: Vec<String>,
    /// Whether `blockers` is truthy (a non-empty list, or any other non-empty value).
    pub has_blockers: bool,
    pub last_seen_event: Value,
    pub last_seen_amendment: Value,
    /// The whole frontmatter, for fields this type does not name.
    pub fields: Value,
}

impl Status {
    /// The status of a citizen without a `status.md`.
    pub fn idle() -> Status {
        Status::default()
    }

    /// What is wrong with `state:`, if it is not one of SPEC §5's states: read exactly, as the
    /// reference reads it, `Away` or `on leave` count as half available, and the router can
    /// still pick a citizen that meant to be away.
    pub fn state_problem(&self) -> Option<String> {
        let State::Other(written) = &self.state else {
            return None;
        };
        let meant = State::from_value(Some(&Value::Str(written.trim().to_lowercase())));
        let fix = match meant {
            State::Other(_) => "write one of idle, working, blocked, reviewing or away".to_string(),
            known => format!("write `state: {}`", known.as_str()),
        };
        Some(format!(
            "`state: {}` is not one of idle, working, blocked, reviewing or away (lowercase); the router counts the citizen as half available (0.5), so it is still picked when away; {fix}",
            quoted(written)
        ))
    }

    pub fn is_away(&self) -> bool {
        self.state == State::Away
    }

    /// SPEC §7's availability A: idle 1.0; working 0.7, or 0.5 with blockers; blocked or
    /// reviewing 0.3; away 0.0; anything else 0.5.
    pub fn availability(&self) -> f64 {
        match self.state {
            State::Idle => 1.0,
            State::Working if self.has_blockers => 0.5,
            State::Working => 0.7,
            State::Blocked | State::Reviewing => 0.3,
            State::Away => 0.0,
            State::Other(_) => 0.5,
        }
    }
}

/// Reads a `status.md` text; `None` (no file) is `idle`.
pub fn parse_status(text: Option<&str>) -> Result<Status, FrontmatterError> {
    let Some(text) = text else {
        return Ok(Status::idle());
    };
    let record = frontmatter::parse(text)?;
    let f = record.fields;
    let map = f.as_map();
    let string = |key: &str| match f.get(key) {
        Value::Null => None,
        v => Some(v.python_str()),
    };
    let blockers_value = f.get("blockers");
    let blockers = match blockers_value {
        Value::Seq(items) => items.iter().map(Value::python_str).collect(),
        Value::Null => Vec::new(),
        other => vec![other.python_str()],
    };
    Ok(Status {
        agent_id: string("agent_id"),
        last_active: f.get("last_active").clone(),
        state: State::from_value(map.and_then(|m| m.get("state"))),
        current_contract: string("current_contract"),
        has_blockers: blockers_value.is_truthy(),
        blockers,
        last_seen_event: f.get("last_seen_event").clone(),
        last_seen_amendment: f.get("last_seen_amendment").clone(),
        fields: f.clone(),
    })
}

/// A `status.md` body longer than this is a warning: status is a post-it each session
/// overwrites, not a log (registry audit).
pub const STATUS_MAX_BODY_LINES: usize = 30;

/// Why a citizen's post-it (its `status.md`: overwritten each session, at most
/// [`STATUS_MAX_BODY_LINES`] body lines) does not show the handoff step that began at
/// `step_start` (orchestration seed, "Agent State": always written, at most 30 lines), or
/// `None` when it does. Only its stamp (`last_active`) and its length are read, never what it
/// says: the post-it is private.
pub fn postit_gap(
    status_text: Option<&str>,
    step_start: chrono::NaiveDateTime,
    zone: crate::protocol::clock::PolisZone,
) -> Option<String> {
    let Some(text) = status_text else {
        return Some("you have no `status.md` (your post-it)".into());
    };
    let record = frontmatter::parse(text).ok()?;
    let stamp = crate::protocol::contracts::contract::instant_of(record.get("last_active"), zone);
    match stamp {
        Some(t) if t >= step_start => {}
        _ => {
            return Some(format!(
                "its `last_active` is not later than the step's start ({})",
                step_start.format("%Y-%m-%d %H:%M")
            ))
        }
    }
    let lines = record.body.lines().count();
    (lines > STATUS_MAX_BODY_LINES)
        .then(|| format!("its body is {lines} lines, more than {STATUS_MAX_BODY_LINES}"))
}

/// The files every citizen folder holds.
pub const CITIZEN_FILES: [&str; 4] = ["capability_card.yml", "status.md", "inbox.md", "journal.md"];

/// The registry audit of one citizen folder `dir` (`citizens/<id>`): each of
/// [`CITIZEN_FILES`] that is `missing`, and a `status.md` body over
/// [`STATUS_MAX_BODY_LINES`] lines. (A card whose `agent_id` is not the folder's name is
/// reported where the card is read.)
pub fn registry_findings(
    dir: &str,
    missing: &[&str],
    status_text: Option<&str>,
) -> Vec<crate::protocol::finding::Finding> {
    use crate::protocol::finding::{Code, Finding};
    let mut out: Vec<Finding> = missing
        .iter()
        .map(|name| {
            Finding::warning(
                Code::Registry,
                format!("{dir}/{name}"),
                None,
                format!("the citizen folder has no `{name}`; every citizen has a capability card, a status, an inbox and a journal (`polisd init` writes them)"),
            )
        })
        .collect();
    if let Some(text) = status_text {
        let body = frontmatter::parse(text)
            .map(|r| r.body)
            .unwrap_or_else(|_| text.to_string());
        let lines = body.lines().count();
        if lines > STATUS_MAX_BODY_LINES {
            out.push(Finding::warning(
                Code::Registry,
                format!("{dir}/status.md"),
                None,
                format!("the status body is {lines} lines (more than {STATUS_MAX_BODY_LINES}): status is a post-it each session overwrites, not a log; move the history to journal.md"),
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_state_outside_the_five_is_a_problem_naming_the_fix() {
        let with = |state: &str| Status {
            state: State::from_value(Some(&Value::Str(state.into()))),
            ..Status::default()
        };
        assert_eq!(with("away").state_problem(), None);
        let away = with("Away").state_problem().unwrap();
        assert!(
            away.contains("`state: Away`") && away.ends_with("write `state: away`"),
            "{away}"
        );
        let leave = with("on leave").state_problem().unwrap();
        assert!(
            leave.ends_with("idle, working, blocked, reviewing or away"),
            "{leave}"
        );
    }

    #[test]
    fn registry_audit_reports_missing_files_and_a_long_status() {
        let long = format!("---\nstate: idle\n---\n{}", "line\n".repeat(31));
        let f = registry_findings("citizens/x", &["journal.md"], Some(&long));
        assert_eq!(f.len(), 2);
        assert_eq!(f[0].path, "citizens/x/journal.md");
        assert!(f[1].message.contains("31 lines"));
        let short = format!("---\nstate: idle\n---\n{}", "line\n".repeat(30));
        assert!(registry_findings("citizens/x", &[], Some(&short)).is_empty());
    }

    #[test]
    fn missing_file_is_idle() {
        let s = parse_status(None).unwrap();
        assert_eq!(s.state, State::Idle);
        assert_eq!(s.availability(), 1.0);
    }

    #[test]
    fn reads_the_reference_template() {
        let text = "---\nagent_id: claude-code-one\nlast_active: 2026-03-02 10:00:00\nstate: working\ncurrent_contract: fix-login\nblockers: [waiting on CI]\nlast_seen_event: 2026-03-02 09:00\nlast_seen_amendment: null\n---\n\n# Status\n";
        let s = parse_status(Some(text)).unwrap();
        assert_eq!(s.agent_id.as_deref(), Some("claude-code-one"));
        assert_eq!(s.state, State::Working);
        assert_eq!(s.current_contract.as_deref(), Some("fix-login"));
        assert_eq!(s.blockers, vec!["waiting on CI"]);
        assert_eq!(s.availability(), 0.5);
        assert!(matches!(s.last_active, Value::DateTime(_)));
    }

    #[test]
    fn state_values_compare_exactly() {
        let st = |t: &str| parse_status(Some(t)).unwrap().state;
        assert_eq!(st("---\nstate: away\n---\n"), State::Away);
        assert_eq!(st("---\nstate: Away\n---\n"), State::Other("Away".into()));
        assert_eq!(st("---\nstate:\n---\n"), State::Other("None".into()));
        assert_eq!(st("---\nagent_id: x\n---\n"), State::Idle);
        assert_eq!(st("no frontmatter\n"), State::Idle);
        assert!(parse_status(Some("---\nstate: [\n---\n")).is_err());
    }
}
