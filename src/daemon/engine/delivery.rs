//! Queueing notices in the outbox and delivering them, each at most once (SPEC §9), and
//! queueing again one a sync tool's replace lost from its inbox (docs/sync.md).

use super::Engine;
use crate::fs::snapshot;
use crate::fs::snapshot::Polis;
use crate::fs::state::{Delivered, OutboxEntry};
use crate::operations::{self, Outcome};
use crate::protocol::delivery::inbox::{markers_anywhere, Kind, Notification};
use crate::protocol::delivery::notice::parse_inbox;
use crate::protocol::layout;

/// How often a long delivery saves its progress.
pub(super) const OUTBOX_CHECKPOINT: std::time::Duration = std::time::Duration::from_secs(2);

/// A long delivery also saves its progress once this many notices were delivered since the
/// last save: a batch of them is one append, so a backlog drains in far less than
/// [`OUTBOX_CHECKPOINT`].
const CHECKPOINT_NOTICES: usize = 256;

/// Notices handed to one [`operations::deliver`] (one inbox append per recipient each).
const DELIVERY_BATCH: usize = 512;

/// The most notices kept waiting for a recipient without a card.
const MAX_WAITING: usize = 200;

/// The first wait before a failed delivery is tried again, doubled after each failure.
const FIRST_RETRY: std::time::Duration = std::time::Duration::from_millis(250);
/// The longest wait between two tries of a failed delivery: a notice is delivered within
/// this long of its inbox becoming writable again.
pub(super) const MAX_RETRY: std::time::Duration = std::time::Duration::from_secs(2);

/// How long a delivered notice is watched for a sync tool's replace. The replace loses what was
/// appended between the tool's look at the inbox and its rename: seconds, or a minute behind
/// Syncthing's watcher delay; a notice gone from the inbox long after was removed by its reader.
const WATCHED_SECS: u64 = 600;

/// The most delivered notices watched at once (a backlog's oldest are let go first).
const MAX_WATCHED: usize = 512;

/// When the notices a failed write kept are tried again ([`Engine::next_wakeup`]).
#[derive(Debug, Clone)]
pub(super) struct Retry {
    pub at: std::time::Instant,
    pub wait: std::time::Duration,
    pub inboxes: Vec<std::path::PathBuf>,
}

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
        let mut queued: std::collections::HashSet<(String, String, String, String)> =
            self.state.outbox.iter().map(queue_key).collect();
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
                again: false,
            };
            if queued.insert(queue_key(&entry)) {
                self.state.outbox.push(entry);
            }
        }
    }

    /// Delivers the outbox, in batches of [`DELIVERY_BATCH`] (one inbox append per recipient
    /// each). A notice that cannot be written (a symlinked inbox, a recipient without a card)
    /// is dropped with a warning; an I/O failure keeps it for the next pass.
    pub(super) fn deliver(&mut self, polis: &Polis, clock: &str) {
        let waiting = !self.state.outbox.is_empty();
        if let Some(op) = self
            .sync
            .git_dir
            .as_deref()
            .filter(|_| waiting)
            .and_then(crate::fs::git::operation_in_progress)
        {
            // A notice appended while a rebase or merge waits for a person dirties a tracked
            // inbox, and git then refuses to continue. The outbox waits, looked at again as a
            // failed delivery is.
            tracing::debug!("a git {op} is in progress; notices wait for it to end");
            let inboxes = self
                .state
                .outbox
                .iter()
                .map(|e| format!("citizens/{}/inbox.md", e.recipient))
                .collect();
            self.schedule_retry(inboxes);
            return;
        }
        let outbox = std::mem::take(&mut self.state.outbox);
        let enabled = self.options.notifications;
        let mut keep = Vec::new();
        let mut unresolved_kept = 0usize;
        let mut failed_inboxes = std::collections::BTreeSet::new();
        // A long outbox (a backlog after downtime) is checkpointed as it drains: a crash
        // half-way then resumes where it was, instead of re-checking every inbox from the top.
        let mut checkpoint = std::time::Instant::now();
        let mut since_checkpoint = 0usize;
        // Only a sync tool replaces an inbox behind the daemon's back (a git checkout that
        // drops a notice is a person's doing, and history holds it).
        let watch = crate::fs::locate::shared_by_sync_tool(&self.root);
        let now = epoch_secs();
        for (k, chunk) in outbox.chunks(DELIVERY_BATCH).enumerate() {
            let at = k * DELIVERY_BATCH;
            if at > 0
                && (checkpoint.elapsed() >= OUTBOX_CHECKPOINT
                    || since_checkpoint >= CHECKPOINT_NOTICES)
            {
                self.state.outbox = keep.iter().chain(&outbox[at..]).cloned().collect();
                if let Err(e) = self.state.save() {
                    tracing::warn!("could not save the outbox's progress: {e}");
                }
                checkpoint = std::time::Instant::now();
                since_checkpoint = 0;
            }
            let (entries, notices): (Vec<&OutboxEntry>, Vec<Notification>) = chunk
                .iter()
                .filter_map(|entry| Some((entry, notification_of(entry)?)))
                .unzip();
            let report = operations::deliver(
                polis,
                &self.writer,
                &mut self.state,
                &notices,
                &|k| enabled.enabled(k.as_str()),
                clock,
            );
            since_checkpoint += report.delivered;
            self.state.counters.notifications += report.delivered as u64;
            // An inbox append is a write like any other.
            self.state.counters.writes += report.appends as u64;
            for (who, why) in &report.failed {
                if matches!(why, crate::fs::writer::WriteError::HardLinked { .. }) {
                    // Sent nowhere until the inbox is a plain single-link file again.
                    if self.warned_once.insert(format!("hard link: {who}")) {
                        tracing::warn!("not notifying {who} yet: {why}");
                    }
                } else if why.is_refusal() {
                    tracing::warn!("not notifying {who}: {why}");
                } else {
                    tracing::warn!("could not notify {who} yet (will retry): {why}");
                }
            }
            for ((entry, n), outcome) in entries.into_iter().zip(&notices).zip(&report.outcomes) {
                match *outcome {
                    Outcome::FoundInInbox => {
                        self.warn_of_another_writer(n);
                        if watch {
                            self.watch_delivered(entry, clock, now);
                        }
                    }
                    Outcome::Delivered => {
                        // `id` is the one in the inbox's `<!-- polisd:<kind>:<id> -->` marker.
                        tracing::info!(kind = %n.kind, id = %n.id(), to = %n.recipient, subject = %n.subject, again = entry.again, "notified");
                        let again = if entry.again {
                            ", delivered again: a sync tool's replace lost it from the inbox"
                        } else {
                            ""
                        };
                        self.log_activity(
                            "notified",
                            Some(&format!("citizens/{}/inbox.md", n.recipient)),
                            format!(
                                "{} about {} (marker id {}){again}",
                                n.kind,
                                n.subject,
                                n.id()
                            ),
                        );
                        if watch {
                            self.watch_delivered(entry, clock, now);
                        }
                    }
                    Outcome::NoCard
                        if crate::protocol::layout::is_agent_id(&n.recipient)
                            && unresolved_kept < MAX_WAITING =>
                    {
                        // The recipient has no card yet (a folder being restored, a card being
                        // rewritten): the notice waits for it.
                        unresolved_kept += 1;
                        keep.push(entry.clone());
                    }
                    Outcome::Failed(i)
                        if !report.failed[i].1.is_refusal()
                            || matches!(
                                report.failed[i].1,
                                crate::fs::writer::WriteError::HardLinked { .. }
                            ) =>
                    {
                        keep.push(entry.clone());
                        failed_inboxes.insert(format!("citizens/{}/inbox.md", n.recipient));
                    }
                    _ => {}
                }
            }
        }
        self.state.outbox = keep;
        self.schedule_retry(failed_inboxes);
        let watched = &mut self.state.delivered;
        watched.retain(|d| now.saturating_sub(d.at) < WATCHED_SECS);
        if watched.len() > MAX_WATCHED {
            watched.drain(..watched.len() - MAX_WATCHED);
        }
    }

    /// Watches a notice now in its inbox for a sync tool's replace, with the stamp it was
    /// written with, so the block delivered again is the same bytes. A notice delivered again
    /// is not watched again.
    fn watch_delivered(&mut self, entry: &OutboxEntry, clock: &str, now: u64) {
        if entry.again {
            return;
        }
        let mut notice = entry.clone();
        notice.at.get_or_insert_with(|| clock.to_string());
        self.state.delivered.push(Delivered { notice, at: now });
    }

    /// An inbox (or its archive) changed: whether a watched notice is still in one of them is
    /// looked at once the polis has been quiet for the settling window, when a peer's version
    /// and its conflict copies have all arrived.
    pub(super) fn inbox_changed(&mut self, rel: &str) {
        let Some(who) = rel.strip_prefix("citizens/").and_then(|r| {
            r.strip_suffix("/inbox.md")
                .or(r.strip_suffix("/inbox-archive.md"))
        }) else {
            return;
        };
        // The own-write check reads the inbox: asked last.
        if self
            .state
            .delivered
            .iter()
            .any(|d| d.notice.recipient == who)
            && !self.inbox_checks.contains(who)
            && !self.is_own_change(rel)
        {
            self.inbox_checks.insert(who.to_string());
            self.settling.wake_when_quiet();
        }
    }

    /// After a start: every inbox with a watched notice is looked at (a replace while the
    /// daemon was down).
    pub(super) fn check_every_watched_inbox(&mut self) {
        let who: Vec<String> = self
            .state
            .delivered
            .iter()
            .map(|d| d.notice.recipient.clone())
            .collect();
        if !who.is_empty() {
            self.inbox_checks.extend(who);
            self.settling.wake_when_quiet();
        }
    }

    /// Queues again each watched notice that is in neither its inbox nor its archive, once the
    /// polis has been quiet for the settling window: a sync tool renamed a peer's version over
    /// the inbox after the notice was appended (docs/sync.md). The notice goes through the
    /// outbox like any other, so the append checks the inbox's markers under its lock (a second
    /// machine that delivered it again first wins; nothing is written twice) and never touches
    /// the bytes around it. A notice whose record has moved on is not sent again.
    pub(super) fn queue_lost_notices(&mut self, polis: &Polis) {
        if self.inbox_checks.is_empty() || !self.settling.is_quiet(std::time::Instant::now()) {
            return;
        }
        if self.held_by_git() {
            self.settling.wake_when_quiet();
            return;
        }
        let now = epoch_secs();
        self.state
            .delivered
            .retain(|d| now.saturating_sub(d.at) < WATCHED_SECS);
        for who in std::mem::take(&mut self.inbox_checks) {
            let (Some(inbox), Some(archive)) =
                (layout::inbox_path(&who), layout::inbox_archive_path(&who))
            else {
                continue;
            };
            if super::sync_pass::has_conflict_copy_beside(&self.root, &inbox) {
                // The copy is merged first; looked at again a window later.
                self.inbox_checks.insert(who);
                self.settling.wake_when_quiet();
                continue;
            }
            // No inbox at all is no replace: polisd never creates one for a notice again.
            let Ok(Some(text)) = snapshot::read_text(&self.root, &inbox, None) else {
                continue;
            };
            let archived = operations::archived_ids(&self.root, &archive);
            let there = markers_anywhere(&text);
            let mut lost = Vec::new();
            self.state.delivered.retain(|d| {
                if d.notice.recipient != who {
                    return true;
                }
                let Some(n) = notification_of(&d.notice) else {
                    return false;
                };
                if there.contains(n.marker().as_str()) || archived.contains(&(n.kind, n.id())) {
                    return true;
                }
                lost.push((d.notice.clone(), n));
                false
            });
            for (entry, n) in lost {
                self.queue_again(polis, entry, &n);
            }
        }
    }

    /// Queues a lost notice again, unless what it asks is past.
    fn queue_again(&mut self, polis: &Polis, mut entry: OutboxEntry, n: &Notification) {
        let inbox = format!("citizens/{}/inbox.md", n.recipient);
        let mut block = parse_inbox(&n.render(crate::protocol::delivery::inbox::EPOCH_STAMP));
        crate::operations::session::mark_outdated(&polis.root, &n.recipient, &mut block);
        if let Some(why) = block.first().and_then(|b| b.outdated.clone()) {
            tracing::info!(kind = %n.kind, id = %n.id(), to = %n.recipient, "a sync tool's replace lost a notice that is past: {why}");
            self.log_activity(
                "dropped",
                Some(&inbox),
                format!(
                    "a sync tool's replace lost the {} notice about {}; not delivered again: {why}",
                    n.kind, n.subject
                ),
            );
            return;
        }
        tracing::info!(kind = %n.kind, id = %n.id(), to = %n.recipient, "a sync tool's replace lost a notice; delivering it again");
        self.state.unmark_sent(n.kind.as_str(), &n.id());
        entry.again = true;
        let key = queue_key(&entry);
        if !self.state.outbox.iter().any(|e| queue_key(e) == key) {
            self.state.outbox.push(entry);
        }
    }

    /// Schedules the next try of the notices a failed write kept (none: no retry), backing
    /// off from [`FIRST_RETRY`] to [`MAX_RETRY`].
    fn schedule_retry(&mut self, inboxes: std::collections::BTreeSet<String>) {
        if inboxes.is_empty() {
            self.delivery_retry = None;
            return;
        }
        let wait = match &self.delivery_retry {
            Some(r) => (r.wait * 2).min(MAX_RETRY),
            None => FIRST_RETRY,
        };
        self.delivery_retry = Some(Retry {
            at: std::time::Instant::now() + wait,
            wait,
            inboxes: inboxes.into_iter().map(std::path::PathBuf::from).collect(),
        });
    }

    /// Warns once when a notice this machine's ledger lacked was in the inbox already while
    /// this machine is configured as the polis's only writer.
    fn warn_of_another_writer(&mut self, n: &Notification) {
        if self.options.writer == crate::daemon::config::WriterMode::ThisMachineOnly
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
    }
}

/// What makes an outbox entry one notice, whatever its words or stamp: it is queued once.
fn queue_key(e: &OutboxEntry) -> (String, String, String, String) {
    (
        e.kind.clone(),
        e.recipient.clone(),
        e.subject.clone(),
        e.discriminator.clone(),
    )
}

/// Seconds since the epoch by this machine's clock (what [`Delivered::at`] counts in).
fn epoch_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The notice an outbox entry queued (`None`: a kind this polisd does not know).
fn notification_of(entry: &OutboxEntry) -> Option<Notification> {
    Some(Notification {
        kind: Kind::parse(&entry.kind)?,
        recipient: entry.recipient.clone(),
        subject: entry.subject.clone(),
        discriminator: entry.discriminator.clone(),
        link: entry.link.clone(),
        paragraph: entry.paragraph.clone(),
        at: entry.at.clone(),
    })
}
