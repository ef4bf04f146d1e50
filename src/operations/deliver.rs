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
    /// Recipients without a card (yet): nothing was written for them.
    pub unresolved: Vec<String>,
}

/// Delivers the notices of a one-shot action (a command or an MCP tool, with or without a
/// daemon) with the machine-local sent ledger, which it loads and saves: the recipients that
/// could not be written to, with why.
pub fn deliver_now(
    polis: &Polis,
    writer: &Writer,
    notifications: &[Notification],
    now: &PolisTime,
) -> Result<Vec<(String, String)>, crate::fs::state::StateError> {
    let mut state = crate::fs::state::State::load(&polis.root)?;
    // The chronicle is scanned only when a notice's cause holds no time of its own.
    let clock = if notifications.iter().any(|n| n.at.is_none()) {
        clock_of(polis, now)
    } else {
        crate::protocol::inbox::EPOCH_STAMP.to_string()
    };
    let delivery = deliver(polis, writer, &mut state, notifications, &|_| true, &clock);
    state.save()?;
    Ok(delivery
        .failed
        .into_iter()
        .map(|(who, why)| (who, why.to_string()))
        .collect())
}

/// The polis's clock ([`crate::protocol::inbox::polis_clock`]) as a one-shot action reads it:
/// the newest stamp of `chronicle.md` (lines dated in the future left out), else of its newest
/// archive. The chronicle is read from disk when `polis` was read without it.
pub fn clock_of(polis: &Polis, now: &PolisTime) -> String {
    use crate::protocol::chronicle;
    let read;
    let current = match polis.chronicle_text() {
        Some(t) => Some(t),
        None => {
            read = snapshot::read_text(&polis.root, layout::CHRONICLE, None)
                .ok()
                .flatten();
            read.as_deref()
        }
    };
    let newest = current
        .and_then(|t| chronicle::newest_stamp(t, now))
        .or_else(|| polis.newest_archive_stamp(now));
    crate::protocol::inbox::polis_clock(newest)
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
    clock: &str,
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
            report.unresolved.push(n.recipient.clone());
            continue;
        }
        let (Some(inbox), Some(archive)) = (
            layout::inbox_path(&n.recipient),
            layout::inbox_archive_path(&n.recipient),
        ) else {
            continue;
        };
        // The archive first, the inbox under its lock: the marker check and the append are
        // one step for every polisd process appending to this inbox (SPEC §9, §11).
        let archived = snapshot::read_text(&polis.root, &archive, None)
            .ok()
            .flatten()
            .is_some_and(|text| n.already_in(&[&text]));
        let appended = if archived {
            Ok(false)
        } else {
            writer.append_locked_unless(&inbox, n.render(clock).as_bytes(), |current| {
                n.marker_in(current)
            })
        };
        match appended {
            Ok(true) => {
                state.mark_sent(n.kind.as_str(), &id);
                report.delivered += 1;
            }
            Ok(false) => {
                // Found in the inbox (checked under the append's own lock) or its archive,
                // though this machine's ledger did not have it: another machine's polisd, or
                // an earlier state folder, delivered it (docs/sync.md).
                state.mark_sent(n.kind.as_str(), &id);
                report.already_sent += 1;
                report.found_in_inbox += 1;
            }
            Err(e) => report.failed.push((n.recipient.clone(), e)),
        }
    }
    report
}
