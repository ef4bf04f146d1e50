//! Queueing notices in the outbox and delivering them, each at most once (SPEC §9).

use super::Engine;
use crate::fs::snapshot::Polis;
use crate::fs::state::OutboxEntry;
use crate::operations;
use crate::protocol::inbox::{Kind, Notification};

/// How often a long delivery saves its progress.
pub(super) const OUTBOX_CHECKPOINT: std::time::Duration = std::time::Duration::from_secs(2);

/// The most notices kept waiting for a recipient without a card.
const MAX_WAITING: usize = 200;

impl Engine {
    /// Marks notices as sent without delivering them (the baseline).
    pub(super) fn silence(&mut self, notices: &[Notification]) {
        for n in notices {
            self.state.mark_sent(n.kind.as_str(), &n.id());
        }
    }

    pub(super) fn enqueue(&mut self, notices: Vec<Notification>) {
        // A set rather than `outbox.contains`: a backlog after downtime holds thousands.
        // By id (kind, subject, recipient, discriminator): the same notice derived again is
        // queued once, whatever its words or stamp.
        let key = |e: &OutboxEntry| {
            (
                e.kind.clone(),
                e.recipient.clone(),
                e.subject.clone(),
                e.discriminator.clone(),
            )
        };
        let mut queued: std::collections::HashSet<(String, String, String, String)> =
            self.state.outbox.iter().map(key).collect();
        for n in notices {
            if self.state.was_sent(n.kind.as_str(), &n.id()) {
                continue;
            }
            let entry = OutboxEntry {
                kind: n.kind.as_str().to_string(),
                recipient: n.recipient,
                subject: n.subject,
                discriminator: n.discriminator,
                link: n.link,
                paragraph: n.paragraph,
                at: n.at,
            };
            if queued.insert(key(&entry)) {
                self.state.outbox.push(entry);
            }
        }
    }

    /// Delivers the outbox. A notice that cannot be written (a symlinked inbox, a recipient
    /// without a card) is dropped with a warning; an I/O failure keeps it for the next pass.
    pub(super) fn deliver(&mut self, polis: &Polis, clock: &str) {
        let outbox = std::mem::take(&mut self.state.outbox);
        let enabled = self.options.notifications;
        let mut keep = Vec::new();
        let mut unresolved_kept = 0usize;
        // A long outbox (a backlog after downtime) is checkpointed as it drains: a crash
        // half-way then resumes where it was, instead of re-checking every inbox from the top.
        let mut checkpoint = std::time::Instant::now();
        for (i, entry) in outbox.iter().enumerate() {
            if checkpoint.elapsed() >= OUTBOX_CHECKPOINT {
                self.state.outbox = keep.iter().chain(&outbox[i..]).cloned().collect();
                if let Err(e) = self.state.save() {
                    tracing::warn!("could not save the outbox's progress: {e}");
                }
                checkpoint = std::time::Instant::now();
            }
            let entry = entry.clone();
            let Some(kind) = Kind::parse(&entry.kind) else {
                continue;
            };
            let n = Notification {
                kind,
                recipient: entry.recipient.clone(),
                subject: entry.subject.clone(),
                discriminator: entry.discriminator.clone(),
                link: entry.link.clone(),
                paragraph: entry.paragraph.clone(),
                at: entry.at.clone(),
            };
            let report = operations::deliver(
                polis,
                &self.writer,
                &mut self.state,
                std::slice::from_ref(&n),
                &|k| enabled.enabled(k.as_str()),
                clock,
            );
            self.state.counters.notifications += report.delivered as u64;
            // An inbox append is a write like any other.
            self.state.counters.writes += report.delivered as u64;
            if report.found_in_inbox > 0
                && self.options.writer == crate::daemon::config::WriterMode::ThisMachineOnly
                && !self.reported_other_writer
            {
                self.reported_other_writer = true;
                tracing::warn!(
                    kind = %n.kind, to = %n.recipient,
                    "this machine is the polis's only writer (writer = \"this-machine-only\"), yet \
                     this notice was already in the inbox, though this machine's ledger did not have it: \
                     another machine's polisd delivers notices too (or this one crashed before \
                     saving). Set `writer = \"none\"` for this polis in that machine's config"
                );
            }
            if report.delivered > 0 {
                // `id` is the one in the inbox's `<!-- polisd:<kind>:<id> -->` marker.
                tracing::info!(kind = %n.kind, id = %n.id(), to = %n.recipient, subject = %n.subject, "notified");
                self.log_activity(
                    "notified",
                    Some(&format!("citizens/{}/inbox.md", n.recipient)),
                    format!("{} about {} (marker id {})", n.kind, n.subject, n.id()),
                );
            }
            if !report.unresolved.is_empty()
                && crate::protocol::layout::is_agent_id(&n.recipient)
                && unresolved_kept < MAX_WAITING
            {
                // The recipient has no card yet (a folder being restored, a card being
                // rewritten): the notice waits for it.
                unresolved_kept += 1;
                keep.push(entry.clone());
            }
            for (who, why) in report.failed {
                if matches!(why, crate::fs::writer::WriteError::HardLinked { .. }) {
                    // Sent nowhere until the inbox is a plain single-link file again.
                    let key = format!("hard link: {}", n.recipient);
                    if self.warned_once.insert(key) {
                        tracing::warn!("not notifying {who} yet: {why}");
                    }
                    keep.push(entry.clone());
                } else if why.is_refusal() {
                    tracing::warn!("not notifying {who}: {why}");
                } else {
                    tracing::warn!("could not notify {who} yet (will retry): {why}");
                    keep.push(entry.clone());
                }
            }
        }
        self.state.outbox = keep;
    }
}
