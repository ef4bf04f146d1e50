//! Delivering notices into citizens' inboxes, each at most once (SPEC §9).

use crate::fs::snapshot::{self, Polis};
use crate::fs::state::PolisState;
use crate::fs::writer::{WriteError, Writer};
use crate::protocol::clock::PolisTime;
use crate::protocol::delivery::inbox::{markers_anywhere, sent_ids, Kind, Notification};
use crate::protocol::layout::{self};
use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::Path;

/// What delivering a batch of notifications did.
#[derive(Debug, Default)]
pub struct Delivery {
    pub delivered: usize,
    pub already_sent: usize,
    /// Of those, found in the inbox though this machine's ledger did not have them: another
    /// machine's polisd (or an earlier state folder) delivered them.
    pub found_in_inbox: usize,
    /// Inbox appends made: one per recipient with something new.
    pub appends: usize,
    /// Recipients that could not be written to, with why (e.g. a symlinked inbox).
    pub failed: Vec<(String, WriteError)>,
    /// Recipients without a card (yet): nothing was written for them.
    pub unresolved: Vec<String>,
    /// What became of each notification given, in their order.
    pub outcomes: Vec<Outcome>,
}

/// What became of one notification given to [`deliver`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Its kind is switched off, it came earlier in the same batch, or its recipient is no
    /// citizen id.
    Skipped,
    /// This machine's sent ledger has it.
    AlreadySent,
    /// In the inbox or its archive, though this machine's ledger did not have it.
    FoundInInbox,
    Delivered,
    /// Its recipient has no card (yet).
    NoCard,
    /// Its recipient's inbox could not be written: why is `failed[i]`.
    Failed(usize),
}

/// Delivers the notices of a one-shot action (a command or an MCP tool, with or without a
/// daemon) with the machine-local sent ledger, which it loads and saves when no daemon runs
/// (one that runs keeps its own): the recipients that could not be written to, with why.
pub fn deliver_now(
    polis: &Polis,
    writer: &Writer,
    notifications: &[Notification],
    now: &PolisTime,
) -> Result<Vec<(String, String)>, crate::fs::state::StateError> {
    // The chronicle is scanned only when a notice's cause holds no time of its own.
    let clock = if notifications.iter().any(|n| n.at.is_none()) {
        clock_of(polis, now)
    } else {
        crate::protocol::delivery::inbox::EPOCH_STAMP.to_string()
    };
    let delivery = if crate::fs::state::daemon_running(&polis.root) {
        // The daemon owns its state folder: a load and save here could put an older
        // `state.json` back over the one it saved meanwhile. The inbox's markers alone keep
        // the notice from being sent twice, by this command or by the daemon.
        let mut scratch = crate::fs::state::PolisState::default();
        deliver(
            polis,
            writer,
            &mut scratch,
            notifications,
            &|_| true,
            &clock,
        )
    } else {
        let mut state = crate::fs::state::State::load(&polis.root)?;
        let delivery = deliver(polis, writer, &mut state, notifications, &|_| true, &clock);
        state.save()?;
        delivery
    };
    Ok(delivery
        .failed
        .into_iter()
        .map(|(who, why)| (who, why.to_string()))
        .collect())
}

/// The polis's clock ([`crate::protocol::delivery::inbox::polis_clock`]) as a one-shot action reads it:
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
        .and_then(|t| chronicle::activity::newest_stamp(t, now))
        .or_else(|| polis.newest_archive_stamp(now));
    crate::protocol::delivery::inbox::polis_clock(newest)
}

/// Appends each notification to its recipient's inbox unless it was already sent (the ledger in
/// `state`, or its marker in `inbox.md`/`inbox-archive.md`) or its kind is switched off.
/// Recipients must be registered citizens: polisd never creates an inbox for an unknown id.
/// Each recipient's new notices are checked against its inbox and appended in one `write`
/// under the inbox's lock, so a backlog costs one read and one `fsync` per inbox, not per
/// notice.
pub fn deliver(
    polis: &Polis,
    writer: &Writer,
    state: &mut PolisState,
    notifications: &[Notification],
    enabled: &dyn Fn(Kind) -> bool,
    clock: &str,
) -> Delivery {
    let mut report = Delivery {
        outcomes: vec![Outcome::Skipped; notifications.len()],
        ..Delivery::default()
    };
    let ids: Vec<String> = notifications.iter().map(Notification::id).collect();
    let mut seen: BTreeSet<(Kind, &str)> = BTreeSet::new();
    // The notices to write, per recipient in the order recipients first appear.
    let mut batches: Vec<(&str, Vec<usize>)> = Vec::new();
    let mut batch_of: HashMap<&str, usize> = HashMap::new();
    for (i, n) in notifications.iter().enumerate() {
        if !enabled(n.kind) || !seen.insert((n.kind, &ids[i])) {
            continue;
        }
        if state.was_sent(n.kind.as_str(), &ids[i]) {
            report.already_sent += 1;
            report.outcomes[i] = Outcome::AlreadySent;
            continue;
        }
        if !polis.cards.contains_key(&n.recipient) {
            report.unresolved.push(n.recipient.clone());
            report.outcomes[i] = Outcome::NoCard;
            continue;
        }
        let b = *batch_of.entry(&n.recipient).or_insert_with(|| {
            batches.push((&n.recipient, Vec::new()));
            batches.len() - 1
        });
        batches[b].1.push(i);
    }
    for (recipient, batch) in batches {
        let (Some(inbox), Some(archive)) = (
            layout::inbox_path(recipient),
            layout::inbox_archive_path(recipient),
        ) else {
            continue;
        };
        // The archive first, the inbox under its lock: the marker check and the append are
        // one step for every polisd process appending to this inbox (SPEC §9, §11).
        let archived = archived_ids(&polis.root, &archive);
        let mut found: Vec<usize> = Vec::new();
        let mut fresh: Vec<usize> = Vec::new();
        for i in batch {
            let key = (notifications[i].kind, ids[i].clone());
            if archived.contains(&key) {
                found.push(i);
            } else {
                fresh.push(i);
            }
        }
        let mut written: Vec<usize> = Vec::new();
        let appended = if fresh.is_empty() {
            Ok(false)
        } else {
            writer.append_locked_composed(&inbox, |current| {
                let current = String::from_utf8_lossy(current);
                let there = markers_anywhere(&current);
                written.clear();
                let mut block = String::new();
                for &i in &fresh {
                    let n = &notifications[i];
                    if !there.contains(n.marker().as_str()) {
                        block.push_str(&n.render(clock));
                        written.push(i);
                    }
                }
                block.into_bytes()
            })
        };
        match appended {
            Ok(appended) => {
                report.appends += usize::from(appended);
                // Found in the inbox (checked under the append's own lock) or its archive,
                // though this machine's ledger did not have them: another machine's polisd,
                // or an earlier state folder, delivered them (docs/sync.md).
                let written_set: std::collections::HashSet<usize> =
                    written.iter().copied().collect();
                found.extend(fresh.iter().filter(|i| !written_set.contains(i)));
                for &i in &written {
                    state.mark_sent(notifications[i].kind.as_str(), &ids[i]);
                    report.delivered += 1;
                    report.outcomes[i] = Outcome::Delivered;
                }
            }
            Err(e) => {
                for &i in &fresh {
                    report.outcomes[i] = Outcome::Failed(report.failed.len());
                }
                report.failed.push((recipient.to_string(), e));
            }
        }
        for i in found {
            state.mark_sent(notifications[i].kind.as_str(), &ids[i]);
            report.already_sent += 1;
            report.found_in_inbox += 1;
            report.outcomes[i] = Outcome::FoundInInbox;
        }
    }
    report
}

/// The notices a citizen's inbox archive (`archive`, relative to the polis) holds, by kind and
/// id: moved there, they count as sent. An archive polisd cannot read holds none.
pub fn archived_ids(root: &Path, archive: &str) -> HashSet<(Kind, String)> {
    snapshot::read_text(root, archive, None)
        .ok()
        .flatten()
        .map(|text| sent_ids(&text))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::operations::test_polis::polis_with;
    use crate::protocol::delivery::inbox::Notification;

    fn settled(to: &str, i: usize) -> Notification {
        Notification::contract_settled(to, &format!("c-{i}"), "T", "owner-agent", Some(4))
    }

    /// [`deliver`] with every kind on, at one clock.
    fn deliver_all(
        polis: &Polis,
        w: &Writer,
        state: &mut PolisState,
        notices: &[Notification],
    ) -> Delivery {
        deliver(polis, w, state, notices, &|_| true, "2026-12-01 10:00")
    }

    fn inbox(root: &std::path::Path, who: &str) -> String {
        std::fs::read_to_string(root.join(format!("citizens/{who}/inbox.md"))).unwrap()
    }

    #[test]
    fn a_batch_is_one_append_per_recipient_and_writes_what_one_by_one_would() {
        let (_d, root, w) = polis_with(&["alpha-agent", "bravo-agent"]);
        let notices: Vec<Notification> = (0..40)
            .map(|i| {
                settled(
                    if i % 2 == 0 {
                        "alpha-agent"
                    } else {
                        "bravo-agent"
                    },
                    i,
                )
            })
            .collect();
        let polis = Polis::read(&root);
        let mut state = PolisState::default();
        let report = deliver_all(&polis, &w, &mut state, &notices);
        assert_eq!((report.delivered, report.appends), (40, 2));
        assert!(report.outcomes.iter().all(|o| *o == Outcome::Delivered));
        // The same notices one at a time, on another polis: the same bytes.
        let (_d2, root2, w2) = polis_with(&["alpha-agent", "bravo-agent"]);
        let polis2 = Polis::read(&root2);
        let mut state2 = PolisState::default();
        for n in &notices {
            let one = deliver_all(&polis2, &w2, &mut state2, std::slice::from_ref(n));
            assert_eq!(one.appends, 1);
        }
        for who in ["alpha-agent", "bravo-agent"] {
            assert_eq!(inbox(&root, who), inbox(&root2, who));
        }
        // Again: the ledger has them all; nothing is written.
        let again = deliver_all(&polis, &w, &mut state, &notices);
        assert_eq!(
            (again.delivered, again.already_sent, again.appends),
            (0, 40, 0)
        );
    }

    #[test]
    fn a_marker_in_the_inbox_or_its_archive_is_not_written_again_and_is_recorded() {
        let (_d, root, w) = polis_with(&["alpha-agent"]);
        let notices: Vec<Notification> = (0..4).map(|i| settled("alpha-agent", i)).collect();
        // Another machine delivered notice 1 (its marker mid-line, as a merge may leave it)
        // and archived notice 2.
        let dir = root.join("citizens/alpha-agent");
        std::fs::write(
            dir.join("inbox.md"),
            format!("# Inbox\nmerged: {}\n", notices[1].marker()),
        )
        .unwrap();
        std::fs::write(
            dir.join("inbox-archive.md"),
            notices[2].render("2026-11-30 09:00"),
        )
        .unwrap();
        let polis = Polis::read(&root);
        let mut state = PolisState::default();
        let report = deliver_all(&polis, &w, &mut state, &notices);
        assert_eq!(
            report.outcomes,
            [
                Outcome::Delivered,
                Outcome::FoundInInbox,
                Outcome::FoundInInbox,
                Outcome::Delivered
            ]
        );
        assert_eq!(
            (report.delivered, report.found_in_inbox, report.appends),
            (2, 2, 1)
        );
        let text = inbox(&root, "alpha-agent");
        for (i, n) in notices.iter().enumerate() {
            let want = if i == 2 { 0 } else { 1 };
            assert_eq!(
                text.matches(&n.marker()).count(),
                want,
                "notice {i}:\n{text}"
            );
            assert!(
                state.was_sent(n.kind.as_str(), &n.id()),
                "notice {i} not recorded"
            );
        }
    }

    #[test]
    fn a_recipient_without_a_card_or_a_switched_off_kind_is_not_written() {
        let (_d, root, w) = polis_with(&["alpha-agent"]);
        let notices = [
            settled("alpha-agent", 0),
            settled("ghost-agent", 1),
            settled("alpha-agent", 0),
        ];
        let polis = Polis::read(&root);
        let mut state = PolisState::default();
        let off = deliver(
            &polis,
            &w,
            &mut state,
            &notices,
            &|_| false,
            "2026-12-01 10:00",
        );
        assert_eq!(off.outcomes, [Outcome::Skipped; 3]);
        let report = deliver_all(&polis, &w, &mut state, &notices);
        assert_eq!(
            report.outcomes,
            [Outcome::Delivered, Outcome::NoCard, Outcome::Skipped]
        );
        assert_eq!(report.unresolved, ["ghost-agent"]);
        assert!(!root.join("citizens/ghost-agent").exists());
    }
}
