//! The human queue: what only a person can unblock, each item with what to do. Derived from a
//! snapshot, so an item disappears by itself once the folder no longer calls for it.
//!
//! Sources (issue 18): a ratified amendment whose id `CONSTITUTION.md` does not mention yet; a
//! high-stakes contract claimed with no reviewer; a vote short of quorum with days left;
//! findings about polis files other than the chronicle (chronicle findings go to their authors'
//! inboxes); sync-conflict copies. Handoffs, `citizen-needed` and council fallbacks join when
//! those features land.

use super::view::Snapshot;
use crate::protocol::finding::Severity;
use crate::protocol::layout::{AmendmentFolder, ContractFolder};

/// One thing waiting for a person.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Item {
    /// Stable while the item stands, so `notify_command` runs once per item.
    pub key: String,
    pub title: String,
    /// What to do, in one sentence.
    pub action: String,
    /// A page of the dashboard, relative to the polis (`contracts/x`), or `None`.
    pub link: Option<String>,
}

/// Every item the snapshot calls for, in a stable order.
pub fn items(s: &Snapshot) -> Vec<Item> {
    let mut out = Vec::new();
    let constitution = crate::fs::snapshot::read_text(
        &s.polis.root,
        crate::protocol::layout::CONSTITUTION,
        Some(4 << 20),
    )
    .ok()
    .flatten()
    .unwrap_or_default();
    for a in &s.polis.amendments {
        if a.folder == AmendmentFolder::Ratified && !constitution.contains(&a.amendment.id) {
            out.push(Item {
                key: format!("constitution/{}", a.amendment.id),
                title: format!(
                    "Amendment {} was ratified: CONSTITUTION.md does not reflect it yet",
                    a.amendment.id
                ),
                action: format!(
                    "Edit CONSTITUTION.md to apply `{}` (and mention its id, which clears this item).",
                    a.rel
                ),
                link: None,
            });
        }
    }
    for c in &s.polis.contracts {
        let k = &c.contract;
        if c.folder == ContractFolder::Open
            && k.stakes.as_deref() == Some("high")
            && k.owner.is_some()
            && k.review.reviewer.is_none()
        {
            out.push(Item {
                key: format!("reviewer/{}", c.file.stem),
                title: format!(
                    "High-stakes contract {} is claimed with no reviewer",
                    c.file.stem
                ),
                action: "Choose a reviewer and set `review.reviewer` in its frontmatter.".into(),
                link: Some(format!("contracts/{}", c.file.stem)),
            });
        }
    }
    for a in &s.summary.amendments {
        if a.action == "pending" && a.agrees < a.quorum && !a.expiry_passed {
            out.push(Item {
                key: format!("quorum/{}", a.amendment_id),
                title: format!(
                    "Amendment {} has {} of {} votes{}",
                    a.amendment_id,
                    a.agrees,
                    a.quorum,
                    a.expires
                        .as_deref()
                        .map(|e| format!(", open until {e}"))
                        .unwrap_or_default()
                ),
                action: "Ask the citizens who have not voted to vote before it expires.".into(),
                link: None,
            });
        }
    }
    for f in &s.findings {
        if f.path == crate::protocol::layout::CHRONICLE
            || f.path.starts_with("chronicle/")
            || f.code == crate::protocol::finding::Code::ConflictCopy
        {
            continue;
        }
        out.push(Item {
            key: format!("finding/{}/{}/{:?}", f.code.as_str(), f.path, f.line),
            title: format!(
                "{} in {}{}",
                if f.severity == Severity::Error {
                    "Error"
                } else {
                    "Warning"
                },
                f.path,
                f.line.map(|l| format!(":{l}")).unwrap_or_default()
            ),
            action: f.message.clone(),
            link: None,
        });
    }
    // Every conflict copy in the polis, with the file it is a copy of (docs/sync.md); their
    // P009 findings are left out above, so each copy is one item.
    for (rel, original) in crate::fs::snapshot::conflict_copies(&s.polis.root) {
        out.push(Item {
            key: format!("conflict/{rel}"),
            title: format!("Sync conflict copy {rel} (of {original})"),
            action: "Merge what it holds into the original file and delete the copy.".into(),
            link: None,
        });
    }
    out
}
