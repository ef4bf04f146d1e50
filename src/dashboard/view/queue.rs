//! The human queue: what only a person can unblock, each item with what to do. Derived from a
//! snapshot, so an item disappears by itself once the folder no longer calls for it.
//!
//! Each source is one function in [`SOURCES`] (`fn(&Snapshot, &mut Vec<Item>)`): adding one
//! is that function and its line there.
//! Today's sources: a ratified amendment whose id `CONSTITUTION.md` does not mention yet; a
//! ratified amendment whose `setting_change` `polis.yml` does not show yet; unread
//! `handoff-deferred` and `citizen-needed` notices in any inbox (they stand until their
//! recipient reads them); the person's decisions (`operations::queue`); a high-stakes contract claimed with no reviewer; a vote short of
//! quorum with days left; findings about polis files other than the chronicle (chronicle
//! findings go to their authors' inboxes); sync-conflict copies; councils that stopped and
//! fell back to a chavruta review. Warnings of a class a person silenced (`silenced.yml`) are
//! left out.

use super::Snapshot;
use crate::protocol::delivery::inbox::Kind;
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

impl Item {
    /// The key of a decision only a person makes (`operations::queue`), which the console's
    /// `decide` form answers; `None` for every other item.
    pub fn decision(&self) -> Option<&str> {
        let kind = self.key.split('/').next().unwrap_or("");
        matches!(kind, "new-citizen" | "deferred" | "chain").then_some(self.key.as_str())
    }
}

/// Items of one kind, for the overview: the most urgent group first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Group<'a> {
    /// Lower is more urgent.
    pub rank: u8,
    pub label: String,
    pub items: Vec<&'a Item>,
}

/// The kind of an item (from its key) with its urgency: decisions that block work first, then
/// what goes wrong if left, then errors, then warnings by code.
fn kind_of(item: &Item) -> (u8, String) {
    let prefix = item.key.split('/').next().unwrap_or("");
    let (rank, label) = match prefix {
        "constitution" => (0, "Ratified amendments to apply to CONSTITUTION.md"),
        "setting" => (0, "Ratified setting changes to apply to polis.yml"),
        "reviewer" => (1, "High-stakes contracts without a reviewer"),
        "council-fallback" => (1, "Councils that fell back to one review"),
        "notice" if item.title.starts_with("A new citizen") => (2, "New citizens asked for"),
        "notice" => (2, "Follow-ups deferred"),
        "new-citizen" => (2, "New citizens asked for"),
        "deferred" => (2, "Follow-ups deferred at the chain's depth"),
        "chain" => (2, "Next steps offered"),
        "conflict" => (3, "Sync conflict copies"),
        "quorum" => (4, "Votes short of quorum"),
        "finding" => {
            let code = item.key.split('/').nth(1).unwrap_or("");
            let error = item.title.starts_with("Error");
            return (
                if error { 5 } else { 6 },
                format!("{} {code}", if error { "Errors" } else { "Warnings" }),
            );
        }
        _ => (7, "Other"),
    };
    (rank, label.to_string())
}

impl Group<'_> {
    /// The finding code of a group of warnings (what a person may silence), else `None`.
    pub fn warning_code(&self) -> Option<&str> {
        let first = self.items.first()?;
        (first.key.starts_with("finding/") && first.title.starts_with("Warning"))
            .then(|| first.key.split('/').nth(1))
            .flatten()
    }
}

impl Item {
    /// The citizen and notice id of an item standing for an unread notice (what a person
    /// answers), else `None`.
    pub fn notice(&self) -> Option<(&str, &str)> {
        self.key.strip_prefix("notice/")?.split_once('/')
    }
}

/// `items` grouped by kind, the most urgent group first (then by label), each group in the
/// items' own order.
pub fn grouped(items: &[Item]) -> Vec<Group<'_>> {
    let mut groups: Vec<Group<'_>> = Vec::new();
    for item in items {
        let (rank, label) = kind_of(item);
        match groups.iter_mut().find(|g| g.label == label) {
            Some(g) => g.items.push(item),
            None => groups.push(Group {
                rank,
                label,
                items: vec![item],
            }),
        }
    }
    groups.sort_by(|a, b| a.rank.cmp(&b.rank).then_with(|| a.label.cmp(&b.label)));
    groups
}

/// A source of items.
pub type Source = fn(&Snapshot, &mut Vec<Item>);

/// Every source, in the order the overview lists their items.
pub const SOURCES: &[Source] = &[
    constitution_edits,
    setting_changes,
    handoff_notices,
    person_decisions,
    high_stakes_without_reviewer,
    votes_short_of_quorum,
    file_findings,
    sync_conflicts,
    council_fallbacks,
];

/// Every item the snapshot calls for, in a stable order.
pub fn items(s: &Snapshot) -> Vec<Item> {
    let mut out = Vec::new();
    for source in SOURCES {
        source(s, &mut out);
    }
    out
}

/// A ratified amendment waiting for its `CONSTITUTION.md` edit.
fn constitution_edits(s: &Snapshot, out: &mut Vec<Item>) {
    if !s
        .polis
        .amendments
        .iter()
        .any(|a| a.folder == AmendmentFolder::Ratified)
    {
        return;
    }
    let constitution = crate::fs::snapshot::read_text(
        &s.polis.root,
        crate::protocol::layout::CONSTITUTION,
        Some(4 << 20),
    )
    .ok()
    .flatten()
    .unwrap_or_default();
    for a in s.polis.amendments.iter() {
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
}

/// A ratified amendment that changes a `polis.yml` setting (polisd never edits that file)
/// while the merged settings do not show the new value yet.
fn setting_changes(s: &Snapshot, out: &mut Vec<Item>) {
    for a in s.polis.amendments.iter() {
        if a.folder != AmendmentFolder::Ratified {
            continue;
        }
        let Some(change) = crate::protocol::frontmatter::parse(&a.text)
            .ok()
            .and_then(|r| crate::protocol::amendments::reflection::setting_change_of(&r.fields))
        else {
            continue;
        };
        let now = change
            .key
            .split('.')
            .fold(&s.polis.settings.merged, |v, k| v.get(k))
            .as_f64();
        if now.is_some_and(|v| (v - change.to).abs() < 1e-9) {
            continue;
        }
        out.push(Item {
            key: format!("setting/{}/{}={}", a.amendment.id, change.key, change.to),
            title: format!(
                "Amendment {} was ratified: polis.yml must set {} to {}",
                a.amendment.id, change.key, change.to
            ),
            action: format!(
                "Edit polis.yml: set `{}` to {} (it is {}); polisd never edits that file.",
                change.key,
                change.to,
                now.map_or_else(|| "unset".to_string(), |v| v.to_string())
            ),
            link: None,
        });
    }
}

/// Unread `handoff-deferred` and `citizen-needed` notices: a suggested follow-up the rules
/// refused, a new citizen asked for. Each stands until its recipient has read it.
fn handoff_notices(s: &Snapshot, out: &mut Vec<Item>) {
    for (citizen, text) in &s.inboxes {
        let Some(text) = text.as_deref() else {
            continue;
        };
        if !text.contains("polisd:handoff-deferred:") && !text.contains("polisd:citizen-needed:") {
            continue;
        }
        let read = crate::protocol::delivery::notice::read_ids(&s.polis.status(citizen).fields);
        for n in crate::protocol::delivery::notice::parse_inbox(text) {
            if read.contains(&n.id) || !n.from_daemon() {
                continue;
            }
            let (title, action) = match n.kind {
                Some(Kind::HandoffDeferred) => (
                    format!("Follow-ups suggested in {} were not opened (told to {citizen})", n.subject),
                    "Read the notice: if the work is still needed, open it by hand (`polisd contract open`)."
                        .to_string(),
                ),
                Some(Kind::CitizenNeeded) => (
                    format!("A new citizen is asked for in {} (told to {citizen})", n.subject),
                    "Decide whether to invite an agent with this capability and register it; polisd registers nobody."
                        .to_string(),
                ),
                _ => continue,
            };
            let subject = n
                .link
                .as_deref()
                .and_then(|l| l.rsplit('/').next())
                .unwrap_or(&n.subject)
                .to_string();
            out.push(Item {
                key: format!("notice/{citizen}/{}", n.id),
                title,
                action: format!(
                    "{action} {}",
                    crate::protocol::delivery::notice::one_line(&n.body, 300)
                ),
                link: crate::protocol::layout::is_slug(&subject)
                    .then(|| format!("contracts/{subject}")),
            });
        }
    }
}

/// The decisions only a person makes (`operations::queue`): a suggested new citizen, a
/// handoff deferred at the chain's depth, a chaining hint. Each stands until answered with
/// the command it names. Read from the folder (settled contracts included), as
/// `polisd queue` reads it.
fn person_decisions(s: &Snapshot, out: &mut Vec<Item>) {
    for i in crate::operations::queue::items_beside(&s.polis, &s.now, s.state.settled.paths()) {
        let title = match &i.ask {
            crate::operations::queue::Ask::NewCitizen { need, .. } => {
                format!("A new citizen is asked for in {}: {need}", i.contract_id)
            }
            _ => i.title.clone(),
        };
        out.push(Item {
            key: i.key.clone(),
            title,
            action: format!("Answer: `{}`", i.answer_command),
            link: Some(format!("contracts/{}", i.contract_id)),
        });
    }
}

/// A high-stakes contract claimed with no reviewer and no review decision: the rule the
/// overview's "Waiting for review" lists it by, so the two never disagree.
fn high_stakes_without_reviewer(s: &Snapshot, out: &mut Vec<Item>) {
    use crate::protocol::contracts::review::{awaiting, Awaiting};
    for c in &s.polis.contracts {
        if c.folder == ContractFolder::Open && awaiting(&c.contract) == Some(Awaiting::NoReviewer) {
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
}

/// A vote short of quorum that has not expired.
fn votes_short_of_quorum(s: &Snapshot, out: &mut Vec<Item>) {
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
}

/// Findings about polis files other than the chronicle, but for warnings of a silenced class.
fn file_findings(s: &Snapshot, out: &mut Vec<Item>) {
    for f in &s.findings {
        let silenced =
            f.severity == Severity::Warning && s.silenced.iter().any(|x| x.code == f.code.as_str());
        // Conflict copies are items of their own (`sync_conflicts`).
        if silenced
            || f.path == crate::protocol::layout::CHRONICLE
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
}

/// Every sync-conflict copy in the polis, with the file it is a copy of (docs/sync.md).
fn sync_conflicts(s: &Snapshot, out: &mut Vec<Item>) {
    for (rel, original) in s.state.copies.iter() {
        out.push(Item {
            key: format!("conflict/{rel}"),
            title: format!("Sync conflict copy {rel} (of {original})"),
            action: "Merge what it holds into the original file and delete the copy.".into(),
            link: None,
        });
    }
}

/// A council that stopped with fewer than two live seats and fell back to a chavruta review
///: a person decides whether one review is enough for a decision that asked for a
/// council. `council.md` files are few (one per council), so reading them per change is cheap.
fn council_fallbacks(s: &Snapshot, out: &mut Vec<Item>) {
    use crate::operations::council;
    for id in council::listed(&s.polis.root) {
        let Ok(Some(c)) = council::read(&s.polis.root, &id) else {
            continue;
        };
        let Some(fallback) = c.fallback.as_ref() else {
            continue;
        };
        let reviewer = fallback
            .reviewer
            .as_deref()
            .map_or("no seat wrote, so nobody".to_string(), |r| format!("`{r}`"));
        out.push(Item {
            key: format!("council-fallback/{id}"),
            title: format!("The council on {id} stopped and fell back to one review"),
            action: format!(
                "{}. {reviewer} reviews alone. Decide whether one review is enough for this decision; if not, hold it until more members are available (or registered) to deliberate.",
                fallback.why.trim_end_matches('.')
            ),
            link: Some(format!("contracts/{id}")),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(key: &str, title: &str) -> Item {
        Item {
            key: key.into(),
            title: title.into(),
            action: String::new(),
            link: None,
        }
    }

    #[test]
    fn items_are_grouped_by_kind_most_urgent_first() {
        let items = [
            item("finding/P007/a.md/None", "Warning in a.md"),
            item("finding/P007/b.md/None", "Warning in b.md"),
            item("finding/P001/c.md/None", "Error in c.md"),
            item(
                "reviewer/x",
                "High-stakes contract x is claimed with no reviewer",
            ),
        ];
        let groups = grouped(&items);
        let labels: Vec<(&str, usize)> = groups
            .iter()
            .map(|g| (g.label.as_str(), g.items.len()))
            .collect();
        assert_eq!(
            labels,
            [
                ("High-stakes contracts without a reviewer", 1),
                ("Errors P001", 1),
                ("Warnings P007", 2)
            ]
        );
    }
}
