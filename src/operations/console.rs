//! What a person does from the dashboard's console. Each action opens the writer and reads the
//! clock as the CLI does (`commands::agent::Env`), then calls the same operation, so a form
//! writes the same bytes as the command:
//!
//! - [`review`]: `polisd review CID --as ID --decision D` (the person acts as a citizen);
//! - [`write_to_inbox`]: a message block appended to a citizen's `inbox.md`, as a citizen
//!   writes one by hand (SPEC §9: `### YYYY-MM-DD HH:MM from <id>`, the text, `---`).

use crate::fs::writer::Writer;
use crate::operations::chronicle::{polis_now, require_citizen};
use crate::operations::error::OpError;
use crate::protocol::contracts::review::Decision;
use crate::protocol::layout;
use std::path::Path;

/// Longest message the console writes into an inbox.
pub const MAX_MESSAGE_CHARS: usize = 4000;

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
/// would read as a new block's heading is indented, so one message stays one notice.
pub fn write_to_inbox(root: &Path, from: &str, to: &str, text: &str) -> Result<Written, OpError> {
    require_citizen(root, from)?;
    require_citizen(root, to)?;
    let text = text.trim();
    if text.is_empty() {
        return Err(OpError::Empty {
            what: "the message",
            fix: "write what the citizen should read",
        });
    }
    if text.chars().count() > MAX_MESSAGE_CHARS {
        return Err(OpError::Empty {
            what: "room for a message this long",
            fix: "keep it under 4,000 characters, or point to a file",
        });
    }
    let path = layout::inbox_path(to).ok_or_else(|| OpError::BadId {
        what: "citizen id",
        value: to.to_string(),
        rule: "lowercase letters, digits and hyphens",
    })?;
    let body: Vec<String> = text
        .lines()
        .map(|l| {
            let l = l.trim_end();
            if l.starts_with('#') || l == "---" {
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
}
