//! `polisd verify`: the `content_hash` of every capability card (SPEC §4), and `--fix` to stamp
//! the cards that lack a matching one.
//!
//! Reading and judging go through [`crate::protocol::citizens::card`]; the only write is the stamp, through
//! [`crate::operations::edit_agent_file`] (compare-before-replace: a card its citizen is editing at
//! that moment is never overwritten). A card polisd cannot hash exactly is never stamped.

use crate::fs::snapshot;
use crate::fs::writer::Writer;
use crate::operations::lookup::card_files;
use crate::protocol::citizens::card::{self, StampError, VerifyState};
use serde::Serialize;
use std::cell::RefCell;
use std::path::Path;

/// One card's verdict. Serialises as `{"citizen","state","digest"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CardReport {
    /// The citizen's folder name.
    pub citizen: String,
    /// `ok`, `mismatch`, `legacy`, `unstamped`, `unverifiable`, or `unreadable` (the file
    /// cannot be read or is not a YAML mapping).
    pub state: String,
    /// The digest polisd computed (64 hex), when it could.
    pub digest: Option<String>,
    /// Why, for the states that need a word (text output only).
    #[serde(skip)]
    pub note: Option<String>,
    /// The state before `--fix` stamped the card, when it did.
    #[serde(skip)]
    pub stamped_from: Option<String>,
}

impl CardReport {
    /// States that fail the check: a card edited since it was stamped, or one that cannot be
    /// read at all (the reference also fails on a card it cannot parse).
    pub fn is_failure(&self) -> bool {
        matches!(self.state.as_str(), "mismatch" | "unreadable")
    }

    fn needs_stamp(&self) -> bool {
        matches!(self.state.as_str(), "mismatch" | "legacy" | "unstamped")
    }
}

pub fn run(args: crate::commands::cli::VerifyArgs) -> anyhow::Result<u8> {
    let root = super::locate(args.path.get())?;
    let reports = if args.fix {
        let writer = Writer::new(&root)?;
        fix(&root, &writer)
    } else {
        verify_all(&root)
    };
    if args.json {
        #[derive(Serialize)]
        struct Report<'a> {
            cards: &'a [CardReport],
        }
        say!(
            "{}",
            serde_json::to_string_pretty(&Report { cards: &reports })?
        );
    } else {
        say_part!("{}", render(&reports));
    }
    Ok(u8::from(reports.iter().any(CardReport::is_failure)))
}

/// Every `citizens/<id>/capability_card.yml`, in citizen-id order, as it stands.
pub fn verify_all(root: &Path) -> Vec<CardReport> {
    card_files(root)
        .into_iter()
        .filter_map(|(id, rel)| verify_one(root, &id, &rel))
        .collect()
}

/// Stamps every card that is `unstamped`, `legacy` or `mismatch`, and returns every card's
/// state after that. Cards that cannot be stamped keep their state, with a note saying why.
pub fn fix(root: &Path, writer: &Writer) -> Vec<CardReport> {
    let mut out = Vec::new();
    for (id, rel) in card_files(root) {
        let Some(before) = verify_one(root, &id, &rel) else {
            continue;
        };
        if !before.needs_stamp() {
            out.push(before);
            continue;
        }
        if !crate::protocol::layout::is_agent_id(&id) {
            out.push(CardReport {
                note: Some(
                    "not stamped: the folder name is not a valid agent id; rename the folder first"
                        .into(),
                ),
                ..before
            });
            continue;
        }
        let refused: RefCell<Option<StampError>> = RefCell::new(None);
        let written = crate::operations::edit_agent_file(writer, root, &rel, |text| {
            match card::stamp(text) {
                Ok(stamped) => Some(stamped),
                Err(e) => {
                    *refused.borrow_mut() = Some(e);
                    None
                }
            }
        });
        let failure = match (written, refused.into_inner()) {
            (Err(e), _) => Some(e.to_string()),
            (Ok(_), Some(e)) => Some(e.to_string()),
            (Ok(_), None) => None,
        };
        let after = verify_one(root, &id, &rel);
        match (failure, after) {
            (None, Some(after)) => out.push(CardReport {
                stamped_from: (after.state != before.state).then(|| before.state.clone()),
                ..after
            }),
            (Some(why), _) => out.push(CardReport {
                note: Some(format!("not stamped: {why}")),
                ..before
            }),
            // The card went away while polisd looked at it: nothing left to report.
            (None, None) => {}
        }
    }
    out
}

/// One card's verdict; `None` when the file is gone.
fn verify_one(root: &Path, id: &str, rel: &str) -> Option<CardReport> {
    let report = |state: &str, digest: Option<String>, note: Option<String>| CardReport {
        citizen: id.to_string(),
        state: state.to_string(),
        digest,
        note,
        stamped_from: None,
    };
    let text = match snapshot::read_text(root, rel, Some(snapshot::MAX_RECORD_BYTES)) {
        Ok(Some(text)) => text,
        Ok(None) => return None,
        Err(f) => return Some(report("unreadable", None, Some(f.message))),
    };
    let parsed = match card::parse(&text) {
        Ok(c) => c,
        Err(e) => return Some(report("unreadable", None, Some(e.to_string()))),
    };
    let v = parsed.verify();
    let note = match v.state {
        VerifyState::Ok => None,
        VerifyState::Mismatch => Some(format!(
            "the stored content_hash {} does not match the card's content: the card was edited \
             after it was stamped; if the edit is intended, run `polisd verify --fix`",
            v.stored.as_deref().unwrap_or("?")
        )),
        VerifyState::Legacy => Some(
            "only the old `signature:` field; run `polisd verify --fix` to add a content_hash"
                .into(),
        ),
        VerifyState::Unstamped => {
            Some("no content_hash; run `polisd verify --fix` to add one".into())
        }
        VerifyState::Unverifiable => Some(
            "polisd cannot reproduce PyYAML's canonical dump of this card (e.g. a YAML alias), \
             so it can neither confirm nor deny the stored content_hash"
                .into(),
        ),
    };
    Some(report(v.state.as_str(), v.computed, note))
}

/// The text report: one line per card, then a summary.
pub fn render(reports: &[CardReport]) -> String {
    if reports.is_empty() {
        return "no capability cards found\n".to_string();
    }
    let mut out = String::new();
    for r in reports {
        let mut line = format!("  {:<6} {}", r.state, r.citizen);
        if let Some(from) = &r.stamped_from {
            line.push_str(&format!(" (stamped; was {from})"));
        }
        if let Some(note) = &r.note {
            line.push_str(&format!(": {note}"));
        }
        out.push_str(&line);
        out.push('\n');
    }
    let stamped = reports.iter().filter(|r| r.stamped_from.is_some()).count();
    let failed = reports.iter().filter(|r| r.is_failure()).count();
    out.push_str(&format!(
        "\npolisd verify: {} card(s) checked",
        reports.len()
    ));
    if stamped > 0 {
        out.push_str(&format!(", {stamped} stamped"));
    }
    if failed > 0 {
        out.push_str(&format!(", {failed} failed the integrity check"));
    }
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(state: &str) -> CardReport {
        CardReport {
            citizen: "claude-code-one".into(),
            state: state.into(),
            digest: None,
            note: None,
            stamped_from: None,
        }
    }

    #[test]
    fn json_has_exactly_citizen_state_digest() {
        let v = serde_json::to_value(report("ok")).unwrap();
        let mut keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        keys.sort_unstable();
        assert_eq!(keys, ["citizen", "digest", "state"]);
    }

    #[test]
    fn only_mismatch_and_unreadable_fail() {
        for (state, fails) in [
            ("ok", false),
            ("legacy", false),
            ("unstamped", false),
            ("unverifiable", false),
            ("mismatch", true),
            ("unreadable", true),
        ] {
            assert_eq!(report(state).is_failure(), fails, "{state}");
        }
    }

    #[test]
    fn ok_lines_read_like_the_reference() {
        let text = render(&[report("ok")]);
        assert!(text.starts_with("  ok     claude-code-one\n"), "{text}");
        assert!(
            text.ends_with("polisd verify: 1 card(s) checked\n"),
            "{text}"
        );
    }

    #[test]
    fn fix_stamps_unstamped_and_keeps_ok_cards_byte_for_byte() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let card_a = "agent_id: claude-code-one\ncapability_tags:\n  py:\n    self_rating: 4\n";
        std::fs::create_dir_all(root.join("citizens/claude-code-one")).unwrap();
        std::fs::write(
            root.join("citizens/claude-code-one/capability_card.yml"),
            card_a,
        )
        .unwrap();
        let stamped_b = card::stamp("agent_id: codex-agent-two\n").unwrap();
        std::fs::create_dir_all(root.join("citizens/codex-agent-two")).unwrap();
        std::fs::write(
            root.join("citizens/codex-agent-two/capability_card.yml"),
            &stamped_b,
        )
        .unwrap();

        let before = verify_all(root);
        assert_eq!(before[0].state, "unstamped");
        assert_eq!(before[1].state, "ok");

        let writer = Writer::new(root).unwrap();
        let after = fix(root, &writer);
        assert_eq!(after[0].state, "ok");
        assert_eq!(after[0].stamped_from.as_deref(), Some("unstamped"));
        assert_eq!(after[1].state, "ok");
        assert_eq!(after[1].stamped_from, None);
        let b_now =
            std::fs::read_to_string(root.join("citizens/codex-agent-two/capability_card.yml"))
                .unwrap();
        assert_eq!(b_now, stamped_b);
        assert!(verify_all(root).iter().all(|r| r.state == "ok"));
    }

    #[test]
    fn unparseable_cards_are_unreadable_and_never_stamped() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("citizens/claude-code-one")).unwrap();
        let bad = "agent_id: [unclosed\n";
        std::fs::write(
            root.join("citizens/claude-code-one/capability_card.yml"),
            bad,
        )
        .unwrap();
        let writer = Writer::new(root).unwrap();
        let after = fix(root, &writer);
        assert_eq!(after[0].state, "unreadable");
        assert!(after[0].is_failure());
        assert_eq!(
            std::fs::read_to_string(root.join("citizens/claude-code-one/capability_card.yml"))
                .unwrap(),
            bad
        );
    }
}
