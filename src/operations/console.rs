//! What a person does from the dashboard's console. Each action opens the writer and reads the
//! clock as the CLI does (`commands::agent::Env`), then calls the same operation, so a form
//! writes the same bytes as the command:
//!
//! - [`review`]: `polisd review CID --as ID --decision D` (the person acts as a citizen);
//! - [`write_to_inbox`]: a message block appended to a citizen's `inbox.md`, as a citizen
//!   writes one by hand (SPEC §9: `### YYYY-MM-DD HH:MM from <id>`, the text, `---`);
//! - [`override_routing`]: `polisd contract claim CID --as ID --reason WHY`;
//! - [`answer_notice`]: a person's answer to a notice only a person can decide on (a new
//!   citizen asked for, a follow-up the rules deferred): a message to the citizen the notice
//!   went to, then the notice marked read in its cursor, which takes it off the queue;
//! - [`silence`] and [`unsilence`]: a class of warning (a finding code) in or out of
//!   `silenced.yml`, which the human queue reads through [`silenced`].

use crate::fs::writer::Writer;
use crate::operations::chronicle::{polis_now, require_citizen};
use crate::operations::error::OpError;
use crate::protocol::contracts::review::Decision;
use crate::protocol::layout;
use crate::protocol::silenced::{self as silence_rules, Silence};
use std::path::Path;

/// Longest message the console writes into an inbox.
pub const MAX_MESSAGE_CHARS: usize = crate::protocol::input::MAX_TEXT_CHARS;

/// `polisd review`: `reviewer`'s decision on contract `cid`, with `body` as the review's text.
pub fn review(
    root: &Path,
    cid: &str,
    reviewer: &str,
    decision: &Decision,
    body: &str,
) -> Result<crate::operations::review::Reviewed, OpError> {
    let writer = Writer::unrecorded(root)?;
    let now = polis_now(root);
    crate::operations::review::review(&writer, &now, cid, reviewer, decision, body)
}

/// What [`write_to_inbox`] appended, and where.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Written {
    pub path: String,
    pub block: String,
}

/// Appends a message from `from` to `to`'s inbox (one locked append). Both must be registered;
/// the text must not be empty, nor longer than [`MAX_MESSAGE_CHARS`]. A line of the text that
/// would read as a new block (a heading, a rule, a one-line note) is indented, so one message
/// stays one notice in its writer's name; an HTML comment opener is broken, so no line of it
/// is a notice marker.
pub fn write_to_inbox(root: &Path, from: &str, to: &str, text: &str) -> Result<Written, OpError> {
    require_citizen(root, from)?;
    require_citizen(root, to)?;
    let text = text.trim();
    if text.is_empty() {
        return Err(OpError::Empty {
            what: "the message",
            fix: "write what the citizen should read".into(),
        });
    }
    let chars = text.chars().count();
    if chars > MAX_MESSAGE_CHARS {
        return Err(OpError::Body {
            what: "the message".to_string(),
            why: format!(
                "it is {} characters, over the {} a message may hold; shorten it, or point to \
                 a file",
                thousands(chars),
                thousands(MAX_MESSAGE_CHARS)
            ),
        });
    }
    let path = layout::inbox_path(to).ok_or_else(|| OpError::BadId {
        what: "citizen id",
        value: to.to_string(),
        rule: "lowercase letters, digits and hyphens".into(),
    })?;
    let body: Vec<String> = text
        .lines()
        .map(|l| {
            // A marker anywhere in an inbox counts its notice as sent: never one in a message.
            let l = crate::protocol::delivery::agent_text::without_marker_openers(l.trim_end());
            let l = l.as_str();
            if l.starts_with('#')
                || l == "---"
                || crate::protocol::delivery::notice::starts_a_block(l)
            {
                format!(" {l}")
            } else {
                l.to_string()
            }
        })
        .collect();
    let now = polis_now(root);
    let block = format!(
        "\n### {} from {from}\n\n{}\n\n---\n",
        now.minute_stamp(),
        body.join("\n")
    );
    let writer = Writer::unrecorded(root)?;
    writer.append_locked(&path, block.as_bytes())?;
    Ok(Written { path, block })
}

/// `polisd contract claim CID --as CITIZEN --reason WHY`: the open, unowned contract
/// `cid` goes to `citizen` against the router's recommendation, for `reason`.
pub fn override_routing(
    root: &Path,
    cid: &str,
    citizen: &str,
    reason: &str,
) -> Result<crate::operations::contract::Claimed, OpError> {
    let writer = Writer::unrecorded(root)?;
    let now = polis_now(root);
    crate::operations::contract::claim(&writer, &now, cid, citizen, false, Some(reason))
}

/// Answers an item of the person's queue, as `polisd queue answer` does: a suggested new
/// citizen, a handoff deferred at the chain's depth, a chaining hint (`operations::queue`).
pub fn decide(
    root: &Path,
    request: &crate::operations::queue::AnswerRequest,
) -> Result<crate::operations::queue::Answered, OpError> {
    let writer = Writer::unrecorded(root)?;
    let now = polis_now(root);
    crate::operations::queue::answer(&writer, &now, request)
}

/// Answers notice `id` of `citizen`'s inbox (a `citizen-needed` or `handoff-deferred` notice
/// from polisd, unread): `text` goes to `citizen`'s inbox as a message from `by`, quoting the
/// notice, and the notice is marked read in `citizen`'s cursor. Refused, writing nothing,
/// when the notice is not there, already read, or of another kind.
pub fn answer_notice(
    root: &Path,
    citizen: &str,
    id: &str,
    by: &str,
    text: &str,
) -> Result<Written, OpError> {
    use crate::protocol::delivery::inbox::Kind;
    require_citizen(root, citizen)?;
    let session_error = |path: Option<String>| {
        move |e: crate::operations::session::SessionError| OpError::Read {
            path: path.unwrap_or_default(),
            why: e.to_string(),
        }
    };
    // Checked and answered under the transition lock: two people answering one notice at
    // once would each find it unread and each write an answer.
    let writer = Writer::unrecorded(root)?;
    let _transition = writer.transition_lock()?;
    let view = crate::operations::session::read_inbox(root, citizen)
        .map_err(session_error(layout::inbox_path(citizen)))?;
    let notice = view
        .unread()
        .into_iter()
        .find(|n| {
            n.id == id
                && n.from_daemon()
                && matches!(n.kind, Some(Kind::CitizenNeeded | Kind::HandoffDeferred))
        })
        .cloned()
        .ok_or_else(|| OpError::NoNotice {
            citizen: citizen.to_string(),
            id: id.to_string(),
        })?;
    if text.trim().is_empty() {
        return Err(OpError::Empty {
            what: "the answer",
            fix: "write what was decided, so the citizen knows".into(),
        });
    }
    let about = if notice.subject.is_empty() {
        notice.id.clone()
    } else {
        format!("{} ({})", notice.id, notice.subject)
    };
    let written = write_to_inbox(
        root,
        by,
        citizen,
        &format!("Answer to {about}:\n\n{}", text.trim()),
    )?;
    crate::operations::session::mark_read(root, &writer, &view, &[notice.id])
        .map_err(session_error(layout::status_path(citizen)))?;
    Ok(written)
}

/// The classes of warning silenced in the polis at `root` (none when the file is missing or
/// unreadable: a broken file never hides a warning).
pub fn silenced(root: &Path) -> Vec<Silence> {
    crate::fs::snapshot::read_text(root, silence_rules::FILE, Some(1 << 20))
        .ok()
        .flatten()
        .and_then(|text| silence_rules::parse(&text).ok())
        .unwrap_or_default()
}

/// Leaves warnings with finding code `code` out of the human queue, as `by`, for `reason`
/// (required: the next person asks why). Silencing a class again updates its reason.
pub fn silence(root: &Path, code: &str, by: &str, reason: &str) -> Result<Silence, OpError> {
    require_citizen(root, by)?;
    let code = code.trim();
    if !silence_rules::is_code(code) {
        return Err(OpError::BadId {
            what: "finding code",
            value: code.to_string(),
            rule: "a letter C or P and three digits, as `polisd check` prints (P007)".into(),
        });
    }
    let reason = one_line(reason);
    if reason.is_empty() {
        return Err(OpError::Empty {
            what: "the reason",
            fix: "say why this class of warning needs no one's attention".into(),
        });
    }
    let entry = Silence {
        code: code.to_string(),
        by: by.to_string(),
        at: polis_now(root).minute_stamp(),
        reason,
    };
    let writer = Writer::unrecorded(root)?;
    writer.update_locked(silence_rules::FILE, |bytes| {
        let entries = entries_of(bytes)?;
        let text = silence_rules::render(&silence_rules::with(&entries, entry.clone()))?;
        Ok::<_, OpError>((Some(text.into_bytes()), ()))
    })?;
    Ok(entry)
}

/// Brings warnings with code `code` back into the human queue. Lifting a silence that is not
/// there writes nothing.
pub fn unsilence(root: &Path, code: &str, by: &str) -> Result<bool, OpError> {
    require_citizen(root, by)?;
    // Read as `silence` reads it, so " P007" lifts the silence on P007 rather than nothing.
    let code = code.trim();
    let writer = Writer::unrecorded(root)?;
    let (_, lifted) = writer.update_locked(silence_rules::FILE, |bytes| {
        let entries = entries_of(bytes)?;
        let kept: Vec<Silence> = entries.iter().filter(|e| e.code != code).cloned().collect();
        if kept.len() == entries.len() {
            return Ok::<_, OpError>((None, false));
        }
        Ok((Some(silence_rules::render(&kept)?.into_bytes()), true))
    })?;
    Ok(lifted)
}

fn entries_of(bytes: Option<&[u8]>) -> Result<Vec<Silence>, OpError> {
    let Some(bytes) = bytes else {
        return Ok(Vec::new());
    };
    let text = std::str::from_utf8(bytes).map_err(|_| OpError::Read {
        path: silence_rules::FILE.into(),
        why: "not UTF-8 text; fix or remove the bad bytes by hand".into(),
    })?;
    silence_rules::parse(text).map_err(|e| OpError::Read {
        path: silence_rules::FILE.into(),
        why: e.to_string(),
    })
}

/// Text from a form field on one line, white space collapsed.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `4001` as `4,001`.
fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn polis() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for id in ["ann-agent", "bob-agent"] {
            std::fs::create_dir_all(root.join(format!("citizens/{id}"))).unwrap();
            std::fs::write(
                root.join(format!("citizens/{id}/capability_card.yml")),
                format!("agent_id: {id}\n"),
            )
            .unwrap();
        }
        std::fs::write(root.join("CONSTITUTION.md"), "# c\n").unwrap();
        dir
    }

    #[test]
    fn a_message_is_one_block_from_a_registered_citizen() {
        let dir = polis();
        let w = write_to_inbox(
            dir.path(),
            "ann-agent",
            "bob-agent",
            "hello\n### not a heading\n---",
        )
        .unwrap();
        assert_eq!(w.path, "citizens/bob-agent/inbox.md");
        let text = std::fs::read_to_string(dir.path().join(&w.path)).unwrap();
        assert_eq!(text, w.block);
        assert_eq!(
            crate::protocol::delivery::notice::parse_inbox(&text).len(),
            1,
            "{text}"
        );
        assert!(
            text.contains(" from ann-agent\n\nhello\n ### not a heading\n ---\n\n---\n"),
            "{text}"
        );
    }

    #[test]
    fn strangers_and_empty_messages_are_refused_with_nothing_written() {
        let dir = polis();
        assert!(write_to_inbox(dir.path(), "eve-agent", "bob-agent", "hi").is_err());
        assert!(write_to_inbox(dir.path(), "ann-agent", "bob-agent", "  \n").is_err());
        assert!(!dir.path().join("citizens/bob-agent/inbox.md").exists());
    }

    #[test]
    fn a_message_over_the_limit_is_refused_as_too_long_not_as_empty() {
        let dir = polis();
        let long = "x".repeat(MAX_MESSAGE_CHARS + 1);
        let why = write_to_inbox(dir.path(), "ann-agent", "bob-agent", &long)
            .unwrap_err()
            .to_string();
        assert!(!why.contains("empty"), "{why}");
        assert!(
            why.contains("4,001 characters") && why.contains("4,000"),
            "{why}"
        );
        assert!(!dir.path().join("citizens/bob-agent/inbox.md").exists());
    }

    #[test]
    fn a_silence_is_stored_updated_and_lifted() {
        let dir = polis();
        let root = dir.path();
        assert!(silence(root, "P007", "ann-agent", "  ").is_err());
        assert!(silence(root, "p7", "ann-agent", "x").is_err());
        assert!(silence(root, "P007", "nobody-here", "x").is_err());
        assert!(
            !root.join("silenced.yml").exists(),
            "a refusal writes nothing"
        );
        silence(root, "P007", "ann-agent", "we score\nby hand").unwrap();
        silence(root, "C004", "bob-agent", "late lines are fine").unwrap();
        silence(root, "P007", "bob-agent", "still fine").unwrap();
        let now = silenced(root);
        let codes: Vec<(&str, &str)> = now
            .iter()
            .map(|s| (s.code.as_str(), s.reason.as_str()))
            .collect();
        assert_eq!(
            codes,
            [("C004", "late lines are fine"), ("P007", "still fine")]
        );
        // A code with white space around it, as a form may send it, is the same code.
        assert!(unsilence(root, " P007 ", "ann-agent").unwrap());
        assert!(!unsilence(root, "P007", "ann-agent").unwrap());
        assert_eq!(silenced(root).len(), 1);
    }
}
