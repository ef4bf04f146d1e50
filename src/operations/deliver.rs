//! Delivering notices into citizens' inboxes, each at most once (SPEC §9).

use crate::fs::snapshot::{self, Polis};
use crate::fs::state::PolisState;
use crate::fs::writer::{WriteError, Writer};
use crate::protocol::clock::PolisTime;
use crate::protocol::inbox::{Kind, Notification};
use crate::protocol::layout::{self};
use std::collections::BTreeSet;

/// What delivering a batch of notifications did.
#[derive(Debug, Default)]
pub struct Delivery {
    pub delivered: usize,
    pub already_sent: usize,
    /// Of those, found in the inbox though this machine's ledger did not have them: another
    /// machine's polisd (or an earlier state folder) delivered them.
    pub found_in_inbox: usize,
    /// Recipients that could not be written to, with why (e.g. a symlinked inbox).
    pub failed: Vec<(String, WriteError)>,
}

/// Appends each notification to its recipient's inbox unless it was already sent (the ledger in
/// `state`, or its marker in `inbox.md`/`inbox-archive.md`) or its kind is switched off.
/// Recipients must be registered citizens: polisd never creates an inbox for an unknown id.
pub fn deliver(
    polis: &Polis,
    writer: &Writer,
    state: &mut PolisState,
    notifications: &[Notification],
    enabled: &dyn Fn(Kind) -> bool,
    now: &PolisTime,
) -> Delivery {
    let mut report = Delivery::default();
    let mut seen: BTreeSet<(Kind, String)> = BTreeSet::new();
    for n in notifications {
        let id = n.id();
        if !enabled(n.kind) || !seen.insert((n.kind, id.clone())) {
            continue;
        }
        if state.was_sent(n.kind.as_str(), &id) {
            report.already_sent += 1;
            continue;
        }
        if !polis.cards.contains_key(&n.recipient) {
            continue;
        }
        let (Some(inbox), Some(archive)) = (
            layout::inbox_path(&n.recipient),
            layout::inbox_archive_path(&n.recipient),
        ) else {
            continue;
        };
        let texts: Vec<String> = [&inbox, &archive]
            .iter()
            .filter_map(|rel| snapshot::read_text(&polis.root, rel, None).ok().flatten())
            .collect();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        if n.already_in(&refs) {
            state.mark_sent(n.kind.as_str(), &id);
            report.already_sent += 1;
            report.found_in_inbox += 1;
            continue;
        }
        match writer.append_locked(&inbox, n.render(now).as_bytes()) {
            Ok(()) => {
                state.mark_sent(n.kind.as_str(), &id);
                report.delivered += 1;
            }
            Err(e) => report.failed.push((n.recipient.clone(), e)),
        }
    }
    report
}
