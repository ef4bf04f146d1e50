//! The daemon's engine for one polis: it compares the folder's state with what it knew and acts
//! on the difference.
//!
//! It never sees notify. It is told "these paths may have changed" (or "rescan everything") and
//! works from the folder itself, so a move that arrives as create+delete, or only as a rescan,
//! gives the same result. Each pass: read what the change concerns, act (reconcile, route,
//! tally, rollover, merge), then derive the notifications the folder now calls for, save them in
//! the outbox, and deliver them. Every step is idempotent, so a crash at any point is repaired
//! by the next pass and nothing is announced twice.

mod chronicle_pass;
mod council_pass;
mod delivery;
mod derived_notices;
mod git_hold;
mod handoff_pass;
mod index_pass;
mod reflection_pass;
mod reservation_pass;
mod routing_pass;
mod scope;
mod settled_pass;
mod settling;
mod sync_pass;
mod tally_pass;

pub use scope::Scope;

use crate::daemon::config::{Notifications, WriterMode};
use crate::fs::snapshot::{self, Polis};
use crate::fs::state::{Counters, Fingerprint, State};
use crate::fs::writer::{self, Writer};
use crate::protocol::chronicle::{self};
use crate::protocol::clock::PolisTime;
use crate::protocol::contracts::contract::Heading;
use crate::protocol::finding::Finding;
use crate::protocol::layout::{self};
use crate::protocol::routing::stats::Ledger;
use anyhow::Context as _;
use chronicle_pass::{ChronicleCopies, Covered};
use chrono::{DateTime, Utc};
use settled_pass::SettledRefresh;
use std::collections::{BTreeSet, HashSet};
use std::path::{Path, PathBuf};

/// What the configuration lets the engine do for this polis.
#[derive(Debug, Clone, Copy)]
pub struct EngineOptions {
    pub auto_route: bool,
    pub rollover: bool,
    pub writer: WriterMode,
    pub reflect: bool,
    pub notifications: Notifications,
}

impl From<crate::daemon::config::Effective> for EngineOptions {
    fn from(e: crate::daemon::config::Effective) -> Self {
        EngineOptions {
            auto_route: e.auto_route,
            rollover: e.rollover,
            writer: e.writer,
            reflect: e.reflect,
            notifications: e.notifications,
        }
    }
}

/// Why the engine runs a pass.
#[derive(Debug, Clone, PartialEq)]
pub enum Trigger {
    /// These paths (relative to `_polis/`) may have changed.
    Paths(Vec<PathBuf>),
    /// Anything may have changed: start-up, a watcher overflow or error, the safety timer.
    Rescan,
    /// The clock moved on: expiries, stale contracts, rollover.
    Timer,
    /// A reservation's lease or a council round ran out ([`Engine::next_expiry`]).
    ReservationExpiry,
    /// The day's reflection is due ([`Engine::next_wakeup`]): at the polis's midnight, not on
    /// the first agent's change of the day (on a large chronicle it reads for a while).
    Reflection,
    /// The polis has been quiet for the settling window: the findings held for it are checked
    /// again and told if they still stand (docs/sync.md).
    Settled,
    /// A git operation that held derived writes back has ended (continued or aborted): the
    /// whole folder is looked at again and what it calls for is written (docs/sync.md).
    GitOperationEnded,
}

/// What one pass has read and done so far.
struct Pass {
    polis: Polis,
    now: PolisTime,
    first_meeting: bool,
    /// Settled files new since polisd last recorded them, with what their notices name.
    new_settled: Vec<(String, Heading)>,
    /// Whether the settled cache changed in this pass.
    settled_changed: bool,
    /// Whether polisd wrote to the polis in this pass.
    wrote: bool,
    /// Notices of the sync pass (conflict copies, diverging worktrees).
    sync_notices: Vec<crate::protocol::delivery::inbox::Notification>,
    errors: Vec<String>,
}

/// The engine of one polis.
pub struct Engine {
    root: PathBuf,
    writer: Writer,
    state: State,
    options: EngineOptions,
    /// Settled files an earlier run had counted that `ledger` does not hold (its durable
    /// snapshot was not usable): read again, not announced as new. Empty after the first full
    /// pass.
    settled_recorded: HashSet<String>,
    /// Slots of `ledger` restored from records that asked to be read again (the file had
    /// findings, which are not stored, or was read in the tick of a change): read whatever
    /// their fingerprint says. Empty after the first full pass.
    settled_unverified: settled_pass::SlotSet,
    /// Settled files read within a clock tick of their last change, so that a second write in
    /// that tick would leave their fingerprint as it is (racily clean): read again at their next
    /// event whatever the fingerprint says, and marked so in the state folder's ledger, so that
    /// a restart or a command reads them again too.
    settled_racy: crate::fs::state::Unvouched,
    /// Findings about settled files, by path: they are not read again until the file changes.
    settled_findings: crate::operations::published::SettledFindings,
    /// Findings about settled files logged in this pass, and those left out of the log once
    /// [`MAX_LOGGED_SETTLED_FINDINGS`] were.
    settled_findings_logged: (usize, usize),
    /// Each file of `contracts/settled/` as last read, with its fingerprint (which tells a
    /// change) and its settlement, kept replayed (SPEC §6). Restored from the state's
    /// snapshot on start-up and checked against every file's fingerprint.
    ledger: Ledger<Fingerprint>,
    /// The timezone the settled cache was read with: instants depend on it.
    settled_zone: Option<crate::protocol::clock::PolisZone>,
    /// The ledger of an earlier run, being read while the watches are registered.
    settled_preparing: Option<settled_pass::Preparing>,
    started_at: String,
    watch_mode: String,
    /// The dashboard's address, shown by `polisd status`.
    dashboard_url: Option<String>,
    /// `chronicle.md` and its archives as last read, so a pass reads only the bytes appended
    /// since.
    chronicles: ChronicleCopies,
    /// Whether a pass since start-up has completed (the first one takes the baseline).
    warmed: bool,
    /// Passes run since the engine opened (the event loop gives memory back after one).
    passes_run: u64,
    /// Hex SHA-256 of `routing_stats.yml` as the last reconcile left it: with the settled cache
    /// unchanged and these bytes in place, a reconcile would change nothing.
    stats_hash: Option<String>,
    /// The activity window of `chronicle.md` up to its validated offset, kept so an appended
    /// line is read once (SPEC §3, §8).
    chronicle_activity: Option<Covered>,
    /// The same for the newest archive, which the window also reads.
    archive_activity: Option<Covered>,
    /// Findings about the folder's files already logged by this process, so each is logged
    /// once while it lasts (and again if it comes back after being fixed).
    logged_findings: BTreeSet<String>,
    /// Other worktrees' copies of this polis (docs/sync.md).
    sync: sync_pass::SyncCache,
    /// Whether a notice another machine's daemon delivered was already reported
    /// (`writer = "this-machine-only"`).
    reported_other_writer: bool,
    /// The lock on the `_polis/` folder itself, once [`Engine::lock`] took it.
    polis_lock: Option<writer::PolisLock>,
    /// Whether the missing lock on a restored folder was logged.
    warned_lock: bool,
    /// While `_polis/` is coming back (restored file by file), passes wait until the tree has
    /// been quiet for the stability window: nothing is derived from a half-restored folder.
    arriving_until: Option<std::time::Instant>,
    /// Notices kept after a failed write (an immutable or hard-linked inbox, a full disk):
    /// when to try again and the inboxes to name in that pass. Nothing may announce the cause
    /// going away (an attribute change, a link removed elsewhere), so the daemon looks again
    /// by itself, backing off to at most [`delivery::MAX_RETRY`].
    delivery_retry: Option<delivery::Retry>,
    /// Citizens whose inbox changed while it held a notice delivered lately: looked at once
    /// the polis is quiet, for a notice a sync tool's replace lost ([`Engine::queue_lost_notices`]).
    inbox_checks: BTreeSet<String>,
    /// Chronicle findings whose recipient could not be resolved yet (the author's card and
    /// the index are not there, as while a folder is restored): looked at again every pass.
    unresolved: Vec<(Finding, String)>,
    /// Conditions already warned about once in this process (a hard-linked inbox).
    warned_once: BTreeSet<String>,
    /// Settled files that were counted and then disappeared (the folder deleted, restored
    /// file by file): when one comes back it is not a new settlement, and draws no notice.
    settled_gone: std::collections::HashSet<String>,
    /// When the earliest lease in `reservations.yml` ends, as the last reservation step saw it.
    next_expiry: Option<DateTime<Utc>>,
    /// Why `reservations.yml` could not be read, as last logged (logged again only when it
    /// changes).
    reservations_problem: Option<String>,
    /// Whether a reader beside the daemon (the dashboard) takes [`Engine::published`].
    publishing: bool,
    /// What the last pass left for that reader.
    published: Option<std::sync::Arc<crate::operations::published::PolisState>>,
    /// The stats the last reconcile rendered.
    published_stats: std::sync::Arc<crate::protocol::routing::stats::RoutingStats>,
    /// The ledger's snapshot and the version it was taken at (taken again only when it moved).
    published_settled: Option<(u64, crate::protocol::routing::stats::LedgerSnapshot)>,
    /// When the earliest open council round closes by time, as the last council step saw it
    /// (from `council.md`, never from file times).
    council_deadline: Option<DateTime<Utc>>,
    /// Each review file as last read by the review handoff step, so an unchanged one is not
    /// read again in this process (its dispatch is decided from its bytes, `state.known`).
    review_prints: std::collections::HashMap<String, Fingerprint>,
    /// The `contract_id` of each settled file whose id is not its name, as reflection last
    /// read it, with the ledger's fingerprint of the file then: the ledger keeps only a flag
    /// for them, and reading them all again after every settlement cost seconds where most
    /// files are renamed.
    renamed_ids: std::collections::HashMap<String, (Fingerprint, String)>,
    /// The polis-local day whose reflection this process last woke for, so a run that cannot
    /// happen (the polis gone, its lock held elsewhere) asks again the next day, not at once.
    reflection_woken: Option<chrono::NaiveDate>,
    /// Findings a later arrival may resolve, held until the polis is quiet (docs/sync.md).
    settling: settling::Settling,
    /// Derived writes held back while a git operation is stopped halfway (docs/sync.md).
    git_hold: git_hold::GitHold,
}

/// What [`Engine::lock`] hands the caller: the state directory's lock (the lock on the
/// `_polis/` folder stays with the engine, which takes it again on a restored folder).
#[derive(Debug)]
pub struct EngineLock {
    _state: crate::fs::state::DaemonLock,
}

/// The most unresolved findings kept waiting for a recipient.
const MAX_UNRESOLVED: usize = 1000;

/// The most findings about settled files one pass logs one by one (a first meeting with an
/// old polis may find one in most of its files); the rest are counted in one line.
const MAX_LOGGED_SETTLED_FINDINGS: usize = 50;

impl Engine {
    /// Opens the engine for the `_polis/` folder at `root`, with its machine-local state.
    pub fn open(root: &Path, options: EngineOptions) -> anyhow::Result<Engine> {
        Engine::open_with(root, options, State::load)
    }

    /// The options of a daemon with the default configuration, for a test's engine.
    #[cfg(test)]
    fn default_options() -> EngineOptions {
        crate::daemon::config::Config::default()
            .effective_for(Path::new("/"))
            .into()
    }

    /// [`Engine::open`] with the state kept under `base` (a test's own folder, where the
    /// environment variable would be shared by every test of the process).
    #[cfg(test)]
    fn open_in(root: &Path, base: &Path, options: EngineOptions) -> anyhow::Result<Engine> {
        Engine::open_with(root, options, |root| State::load_in(base, root))
    }

    fn open_with(
        root: &Path,
        options: EngineOptions,
        load: impl FnOnce(&Path) -> Result<State, crate::fs::state::StateError>,
    ) -> anyhow::Result<Engine> {
        let writer =
            Writer::new(root).with_context(|| format!("cannot write inside {}", root.display()))?;
        let root = writer.root().to_path_buf();
        let mut state = load(&root)?;
        // Temporary files of a write that crashed half-way: not in use by anyone after a minute.
        match writer.clean_stale_temp_files(std::time::Duration::from_secs(60)) {
            Ok(removed) if !removed.is_empty() => {
                tracing::info!(count = removed.len(), "removed stale .polisd-*.tmp files")
            }
            Ok(_) => {}
            Err(e) => tracing::warn!("could not clean stale temporary files: {e}"),
        }
        let started_at = crate::fs::state::now_rfc3339();
        state.counters.started_at = Some(started_at.clone());
        state.counters.pid = Some(std::process::id());
        Ok(Engine {
            root,
            writer,
            state,
            options,
            settled_recorded: HashSet::new(),
            settled_unverified: Default::default(),
            settled_racy: Default::default(),
            settled_findings: Default::default(),
            settled_findings_logged: (0, 0),
            ledger: Ledger::default(),
            settled_zone: None,
            settled_preparing: None,
            started_at,
            watch_mode: "none".to_string(),
            dashboard_url: None,
            warmed: false,
            passes_run: 0,
            stats_hash: None,
            chronicle_activity: None,
            archive_activity: None,
            chronicles: ChronicleCopies::default(),
            logged_findings: BTreeSet::new(),
            sync: sync_pass::SyncCache::default(),
            reported_other_writer: false,
            polis_lock: None,
            warned_lock: false,
            arriving_until: None,
            delivery_retry: None,
            inbox_checks: BTreeSet::new(),
            unresolved: Vec::new(),
            warned_once: BTreeSet::new(),
            settled_gone: std::collections::HashSet::new(),
            next_expiry: None,
            reservations_problem: None,
            publishing: false,
            published: None,
            published_stats: Default::default(),
            published_settled: None,
            council_deadline: None,
            review_prints: std::collections::HashMap::new(),
            renamed_ids: std::collections::HashMap::new(),
            reflection_woken: None,
            settling: Default::default(),
            git_hold: Default::default(),
        })
    }

    /// How long agents' files (and a returning tree) must be quiet before polisd acts on them;
    /// the engine never waits in a call, it defers the path and asks to be woken
    /// ([`Engine::next_wakeup`]).
    pub fn set_stability(&mut self, window: std::time::Duration) {
        self.writer.set_stability(writer::Stability {
            window,
            wait: false,
        });
    }

    /// How long the polis must be quiet before a finding a later arrival may resolve (a link
    /// to a file still in transit, a line lost while a peer's version replaced the file) is
    /// told; zero tells at once.
    pub fn set_settling(&mut self, window: std::time::Duration) {
        self.settling.set_window(window);
    }

    /// `_polis/` has just come back (or been replaced): hold passes until the tree has been
    /// quiet for the stability window, then rescan.
    pub fn tree_arriving(&mut self) {
        self.arriving_until = Some(std::time::Instant::now() + self.writer.stability().window);
    }

    /// When the engine wants a pass of its own: a deferred edit, the end of a tree's arrival,
    /// or the day's reflection.
    pub fn next_wakeup(&self) -> Option<std::time::Instant> {
        // While the tree arrives, only its end matters: the rescan then covers the rest.
        if self.arriving_until.is_some() {
            return self.arriving_until;
        }
        let reflection = self
            .next_reflection(Utc::now())
            .map(|at| std::time::Instant::now() + (at - Utc::now()).to_std().unwrap_or_default());
        let retry = self.delivery_retry.as_ref().map(|r| r.at);
        [
            self.writer.next_deferred(),
            reflection,
            retry,
            self.settling.due_at(),
            self.git_look_at(),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// The pass due at `now`, if any (see [`Engine::next_wakeup`]).
    pub fn due(&mut self, now: std::time::Instant) -> Option<Trigger> {
        if let Some(until) = self.arriving_until {
            if now < until {
                return None;
            }
            self.arriving_until = None;
            // The rescan covers every deferred path too.
            self.writer
                .take_due(std::time::Instant::now() + std::time::Duration::from_secs(3600));
            return Some(Trigger::Rescan);
        }
        let mut due = self.writer.take_due(now);
        if let Some(retry) = self.delivery_retry.as_mut().filter(|r| r.at <= now) {
            // Looked at again in this pass; `deliver` schedules the next try if it fails again.
            retry.at = now + delivery::MAX_RETRY * 3600;
            due.extend(retry.inboxes.iter().cloned());
        }
        if !due.is_empty() {
            return Some(Trigger::Paths(due));
        }
        if self.settling.due_at().is_some_and(|at| at <= now) {
            self.settling.woken();
            return Some(Trigger::Settled);
        }
        if self.git_operation_ended(now) {
            return Some(Trigger::GitOperationEnded);
        }
        let wall = Utc::now();
        if self.next_reflection(wall).is_some_and(|at| at <= wall) {
            self.reflection_woken = Some(self.polis_day(wall));
            return Some(Trigger::Reflection);
        }
        None
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn counters(&self) -> &Counters {
        &self.state.counters
    }

    pub fn set_options(&mut self, options: EngineOptions) {
        self.options = options;
    }

    pub fn set_watch_mode(&mut self, mode: &str) {
        self.watch_mode = mode.to_string();
    }

    /// Whether to keep what each pass read for a reader beside the daemon
    /// ([`Engine::published`]). Off, a pass keeps nothing it would not otherwise keep.
    pub fn set_publishing(&mut self, on: bool) {
        self.publishing = on;
        if !on {
            self.published = None;
            self.published_settled = None;
        }
    }

    /// The polis as the last completed pass left it (without the chronicle texts), with the
    /// ledger of settled contracts and the stats (`None` before the first pass, or when not publishing). Shared: taking
    /// it copies a pointer.
    pub fn published(&self) -> Option<std::sync::Arc<crate::operations::published::PolisState>> {
        self.published.clone()
    }

    /// Keeps what the pass read for [`Engine::published`]: the polis is moved, not copied; the
    /// ledger's snapshot is taken again only when the ledger changed (a pointer per
    /// settlement). The chronicle texts stay out: the engine appends to its copy in place,
    /// which a reader holding it would turn into a copy of the whole file on every append
    /// (the reader keeps copies of its own, `fs::chronicle_copy`).
    fn publish(&mut self, mut polis: Polis) {
        if !self.publishing {
            return;
        }
        polis.chronicle = None;
        polis.archives = Vec::new();
        let version = self.ledger.version();
        let settled = match &self.published_settled {
            Some((v, s)) if *v == version => s.clone(),
            _ => {
                let s = self.ledger.snapshot();
                self.published_settled = Some((version, s.clone()));
                s
            }
        };
        self.published = Some(std::sync::Arc::new(
            crate::operations::published::PolisState {
                polis: std::sync::Arc::new(polis),
                settled_findings: self.settled_findings.all(),
                settled,
                stats: std::sync::Arc::clone(&self.published_stats),
                copies: std::sync::Arc::clone(&self.sync.copies),
            },
        ));
    }

    /// Records the dashboard's address in the status file, now.
    pub fn set_dashboard_url(&mut self, url: Option<String>) {
        self.dashboard_url = url;
        self.write_status();
    }

    /// Holds the single-daemon locks for this polis, if no other polisd has them: the one in
    /// the state directory, and a lock on the `_polis/` folder itself, which a second daemon
    /// meets whatever its state directory.
    pub fn lock(&mut self) -> anyhow::Result<Option<EngineLock>> {
        let Some(state) = self.state.try_lock_daemon()? else {
            return Ok(None);
        };
        let Some(polis) = self.writer.try_lock_polis()? else {
            return Ok(None);
        };
        self.polis_lock = Some(polis);
        self.start_preparing_settled();
        Ok(Some(EngineLock { _state: state }))
    }

    /// Whether this engine holds the lock on the folder now at the root. After `_polis/` was
    /// deleted and restored the lock is taken again on the new folder; if another polisd got
    /// it first, this one stands aside (an engine that never locked, as in tests, always
    /// acts).
    fn holds_polis_lock(&mut self) -> bool {
        let Some(lock) = &self.polis_lock else {
            return true;
        };
        let Some(now) = self.writer.root_id() else {
            return true;
        };
        if lock.id == now {
            return true;
        }
        match self.writer.try_lock_polis() {
            Ok(Some(lock)) => {
                self.polis_lock = Some(lock);
                self.warned_lock = false;
                true
            }
            Ok(None) | Err(_) => {
                if !self.warned_lock {
                    self.warned_lock = true;
                    tracing::error!(polis = %self.root.display(), "the restored _polis/ folder is locked by another polisd; this one stands aside until it is free");
                }
                false
            }
        }
    }

    /// Runs one pass for `trigger` at wall-clock time `wall`. Errors are returned for the log;
    /// the engine stays usable and the next pass retries whatever failed.
    pub fn handle(&mut self, trigger: &Trigger, wall: DateTime<Utc>) -> anyhow::Result<()> {
        if let Some(until) = self.arriving_until {
            // Still arriving: every change restarts the quiet window; the rescan at its end
            // covers them all.
            if !matches!(trigger, Trigger::Timer) {
                let quiet = std::time::Instant::now() + self.writer.stability().window;
                self.arriving_until = Some(until.max(quiet));
            }
            return Ok(());
        }
        if !self.holds_polis_lock() {
            return Ok(());
        }
        let (scope, refresh) = match trigger {
            Trigger::Rescan => {
                self.state.counters.rescans += 1;
                (Scope::all(), SettledRefresh::Full)
            }
            Trigger::Timer | Trigger::GitOperationEnded => (Scope::all(), SettledRefresh::Full),
            Trigger::Reflection => (Scope::derive_only(), SettledRefresh::Nothing),
            // The quiet window ended: held findings, the sync episodes and the ratifications
            // waiting for it.
            Trigger::Settled => (
                Scope {
                    derive: true,
                    sync: true,
                    open: true,
                    tally: true,
                    ..Scope::default()
                },
                SettledRefresh::Nothing,
            ),
            Trigger::ReservationExpiry => (
                Scope {
                    reservations: true,
                    council: true,
                    derive: true,
                    ..Scope::default()
                },
                SettledRefresh::Nothing,
            ),
            Trigger::Paths(paths) => {
                self.state.counters.events += paths.len() as u64;
                self.scope_of(paths)
            }
        };
        let (scope, refresh) = if self.warmed {
            (scope, refresh)
        } else {
            (Scope::all(), SettledRefresh::Full)
        };
        if scope.is_empty() {
            return Ok(());
        }
        if matches!(trigger, Trigger::Paths(_) | Trigger::Rescan) {
            self.settling.arrived(std::time::Instant::now());
        }
        self.passes_run += 1;
        if !self.warmed || matches!(trigger, Trigger::Rescan | Trigger::Timer) {
            self.refresh_sync();
        }
        let started = std::time::Instant::now();
        let (first, first_meeting) = (!self.warmed, self.state.first_met.is_none());
        let mut result = self.pass(scope, refresh, wall);
        if result.is_ok() && first_meeting && self.reflection_due(wall) {
            // The first meeting's pass files no proposal (what was there is baseline); the
            // day's reflection follows it at once, before the daemon says it is ready.
            self.reflection_woken = Some(self.polis_day(wall));
            result = self.pass(Scope::derive_only(), SettledRefresh::Nothing, wall);
        }
        self.write_status();
        tracing::debug!(
            elapsed_us = started.elapsed().as_micros() as u64,
            ?scope,
            "pass done"
        );
        if first && self.warmed {
            tracing::info!(polis = %self.root.display(), "initial scan done; reacting to changes");
            crate::daemon::memory::release_free_memory();
        }
        result
    }

    /// The scope of a batch of paths, leaving out changes polisd itself made (no loops), and
    /// which settled files it concerns.
    fn scope_of(&mut self, paths: &[PathBuf]) -> (Scope, SettledRefresh) {
        let mut scope = Scope::default();
        let mut refresh = SettledRefresh::Nothing;
        for path in paths {
            let rel = path.to_string_lossy().replace('\\', "/");
            let concerns = Scope::of_path(&rel);
            // An inbox a waiting notice could not be written to (a hard link) was replaced:
            // deliver now rather than at the next rescan.
            if concerns.is_empty() && self.notice_waits_for_inbox(&rel) {
                scope.derive = true;
            }
            if concerns.is_empty() {
                self.inbox_changed(&rel);
            }
            // An inbox or a draft whose conflict copy waited while the file was being written
            // (a deferred edit that is due now): merged on this pass.
            if sync_pass::has_conflict_copy_beside(&self.root, &rel) {
                scope.sync = true;
            }
            // `concerns` asked first: a path no rule concerns (an inbox polisd just appended
            // to) is not read and hashed to tell whose change it was.
            if concerns.is_empty() || self.is_own_change(&rel) {
                continue;
            }
            scope = scope.union(concerns);
            refresh.add(&rel);
        }
        (scope, refresh)
    }

    fn notice_waits_for_inbox(&self, rel: &str) -> bool {
        let Some(id) = rel
            .strip_prefix("citizens/")
            .and_then(|r| r.strip_suffix("/inbox.md"))
        else {
            return false;
        };
        self.state.outbox.iter().any(|e| e.recipient == id)
    }

    fn is_own_change(&self, rel: &str) -> bool {
        // An append's ledger entry is the hash of the whole file read back after the write, so
        // an agent's `>>` (or a `cp`) landing just before the read-back would be taken for
        // ours and its line never validated. The chronicle pass resumes from its offset, so
        // looking again costs little.
        if !rel.contains('/') && rel.starts_with("chronicle") {
            return false;
        }
        // A file polisd never touched is not worth reading (an agent's 50 MB file would be
        // read and hashed on every event).
        if !self.writer.has_touched(rel) {
            return false;
        }
        // Never a plain read: a FIFO would block the daemon for good, a link could lead out.
        match snapshot::read_regular(&self.root.join(rel)) {
            Some(bytes) => self.writer.is_own_write(rel, &writer::sha256(&bytes)),
            None => self.writer.is_own_removal(rel),
        }
    }

    /// One pass, in the order the rules depend on each other: the chronicle first (its
    /// activity window decides who is active; on the first pass the stats come before it),
    /// the stats next (routing reads them), then
    /// routing, the tally, the reservations (released when the contracts read above ended),
    /// reflection (which files amendments for the next tally), and last the notices all of
    /// that calls for. Each step that fails is
    /// reported and the others still run; the next pass retries it.
    fn pass(
        &mut self,
        scope: Scope,
        refresh: SettledRefresh,
        wall: DateTime<Utc>,
    ) -> anyhow::Result<()> {
        let Some(mut pass) = self.begin_pass(refresh, wall)? else {
            return Ok(());
        };
        self.look_for_git_operation();
        self.carry_held_settlements(&mut pass);
        // On the first pass the stats come first: after a restart they are what a settlement
        // made meanwhile waits for, and nothing before them changes the ledger.
        let first = !self.warmed;
        if first {
            self.reconcile_step(&mut pass, scope);
        }
        if scope.chronicle {
            self.chronicle_step(&mut pass);
        }
        self.fill_activity(&mut pass.polis, &pass.now);
        // Conflict copies merged or reported while a git operation is stopped would be told
        // about a folder half-way between two commits: looked at in the catch-up.
        let copies = scope.sync && !self.held_by_git();
        self.sync_step(&mut pass, copies, scope.open || scope.settled);
        if !first {
            self.reconcile_step(&mut pass, scope);
        }
        // `writer = "none"`: another machine's daemon appends and edits (docs/sync.md). A
        // stopped git operation: the notices are still derived and queued, the rest waits.
        let writes = self.derived_writes();
        if writes {
            self.handoff_step(&mut pass);
            if scope.reviews {
                self.review_handoff_step(&mut pass);
            }
        }
        if scope.open && self.options.auto_route && writes {
            self.route_step(&mut pass);
        }
        if scope.tally && writes {
            self.tally_step(&mut pass);
        }
        if writes {
            if scope.reservations {
                self.reservation_step(&mut pass);
            }
            self.reflection_step(&mut pass);
            if scope.council {
                self.council_step(&mut pass);
            }
            // What polisd met is not rewritten on first meeting (SPEC §3, §9): the block
            // appears with the first change to the contracts after it.
            if (scope.open || scope.settled) && !pass.first_meeting {
                self.index_step(&mut pass);
            }
        }
        if self.options.writer.writes() {
            self.notice_step(&mut pass, scope);
        }
        self.finish_pass(pass)
    }

    /// Reads the polis and refreshes the settled cache; on first meeting, takes the baseline.
    /// `None` while the polis is gone.
    fn begin_pass(
        &mut self,
        refresh: SettledRefresh,
        wall: DateTime<Utc>,
    ) -> anyhow::Result<Option<Pass>> {
        if !self.root.join(layout::CONSTITUTION).is_file() {
            tracing::warn!(polis = %self.root.display(), "no CONSTITUTION.md: waiting for the polis to come back");
            return Ok(None);
        }
        let mut polis = self.read_polis();
        let now = PolisTime::at(polis.settings.timezone, wall);
        let (new_settled, settled_changed) = self.refresh_settled(&mut polis, refresh);
        // Findings about settled files live in the cache (those files are not read again),
        // logged as they appear there.
        if let (_, left_out @ 1..) = std::mem::take(&mut self.settled_findings_logged) {
            tracing::warn!(
                "{left_out} more findings about settled files; `polisd check` lists them all"
            );
        }
        // Unknown dependencies and cycles (P013, P014) are logged too, not kept in the polis:
        // `check` derives them itself.
        let mut logged = polis.findings.clone();
        logged.extend(crate::operations::dependency_findings(&polis));
        self.log_new_findings(&logged);
        let first_meeting = self.state.first_met.is_none();
        if first_meeting {
            self.take_baseline(&polis, &now)?;
        }
        Ok(Some(Pass {
            polis,
            now,
            first_meeting,
            new_settled,
            settled_changed,
            wrote: false,
            sync_notices: Vec::new(),
            errors: Vec::new(),
        }))
    }

    /// Records what the daemon did, and why, in the activity log (`polisd activity`). A log
    /// that cannot be written costs a debug line, never the pass.
    pub(super) fn log_activity(&self, action: &str, path: Option<&str>, cause: impl Into<String>) {
        let entry = crate::fs::activity::Activity::now(action, path, cause);
        if let Err(e) = crate::fs::activity::record(self.state.dir(), &entry) {
            tracing::debug!("activity log: {e}");
        }
    }

    /// After a step wrote to the polis: read it again, keeping the settled cache.
    fn after_write(&mut self, pass: &mut Pass) {
        pass.wrote = true;
        pass.polis = self.reread(&pass.polis);
        self.fill_activity(&mut pass.polis, &pass.now);
    }

    /// The notices of the settlements this pass found and, when the pass concerns them or
    /// wrote, those the whole folder calls for; queued and delivered.
    fn notice_step(&mut self, pass: &mut Pass, scope: Scope) {
        let mut notices = self.settled_notices(&pass.new_settled);
        notices.append(&mut pass.sync_notices);
        if self.settling.is_holding() {
            notices.extend(self.findings_after_settling(pass));
        }
        if !self.unresolved.is_empty() {
            notices.extend(self.resolved_findings(&pass.polis));
        }
        if scope.derive || pass.wrote {
            notices.extend(self.derive(&pass.polis, &pass.now, pass.first_meeting));
        }
        if pass.first_meeting {
            // Nothing that was already there when polisd arrived is announced (SPEC §3, §9).
            self.silence(&notices);
            notices.clear();
        }
        if !self.warmed {
            self.check_every_watched_inbox();
        }
        self.enqueue(notices);
        self.queue_lost_notices(&pass.polis);
        // Saved after delivery (in `finish_pass`), not before: until then the saved state is
        // the previous pass's, so a crash repeats this pass, and delivery finds what already
        // reached an inbox (`operations::deliver` reads it first). Saving first would put two
        // fsyncs between an agent's line and the notice about it.
        let clock = self.polis_clock(&pass.polis, &pass.now);
        self.deliver(&pass.polis, &clock);
    }

    fn finish_pass(&mut self, pass: Pass) -> anyhow::Result<()> {
        let Pass { polis, errors, .. } = pass;
        self.publish(polis);
        self.state.save()?;
        self.save_settled_snapshot();
        self.warmed = true;
        if errors.is_empty() {
            Ok(())
        } else {
            anyhow::bail!("{}", errors.join("; "))
        }
    }

    /// Logs each finding about an unreadable or malformed file once: the daemon is otherwise
    /// silent about a bad record it skips, and `polisd check` is not always run.
    fn log_new_findings(&mut self, findings: &[Finding]) {
        let current: BTreeSet<String> = findings.iter().map(|f| f.to_string()).collect();
        for f in current.difference(&self.logged_findings) {
            tracing::warn!("{f}");
        }
        self.logged_findings = current;
    }

    /// The polis without its settled contracts (the engine keeps those), with `chronicle.md`
    /// from the engine's copy.
    fn read_polis(&mut self) -> Polis {
        let polis = Polis::read_using(&self.root, false, &mut self.chronicles);
        self.chronicles.forget_unseen();
        polis
    }

    /// The polis again after polisd wrote to it, keeping the settled cache.
    fn reread(&mut self, previous: &Polis) -> Polis {
        let mut polis = self.read_polis();
        polis.settlements = previous.settlements.clone();
        polis
    }

    /// On first meeting a polis: remember where the chronicle ends, so only lines appended
    /// later are reported to inboxes, and mark what the folder already calls for as known.
    fn take_baseline(&mut self, polis: &Polis, now: &PolisTime) -> anyhow::Result<()> {
        tracing::info!(polis = %self.root.display(), "first meeting with this polis: taking the baseline");
        let notices = self.derive(polis, now, true);
        self.silence(&notices);
        self.state.first_met = Some(crate::fs::state::now_rfc3339());
        // The settled fingerprints are already recorded: `refresh_settled` puts each file read.
        if let Some(text) = polis.chronicle_text() {
            let scan = chronicle::scan(text);
            let (findings, _) = self.validate(polis, &scan.lines, None, now);
            for f in &findings {
                tracing::info!("{f} (before polisd's baseline: logged, not sent)");
            }
            self.state.push_findings(&findings);
            self.record_progress(text, scan.resume).baseline_offset =
                Some(scan.resume.offset as u64);
            self.state
                .reset_seen_chronicle(&text.as_bytes()[..scan.resume.offset])?;
        }
        self.state.save()?;
        Ok(())
    }

    fn write_status(&mut self) {
        let mut status = self.state.status(&self.started_at, &self.watch_mode);
        status.dashboard = self.dashboard_url.clone();
        if let Err(e) = self.state.write_status(&status) {
            tracing::warn!("could not write the status file: {e}");
        }
    }

    /// How many passes the engine has run (a batch whose paths concern no rule runs none).
    pub fn passes_run(&self) -> u64 {
        self.passes_run
    }

    /// Removes the status file: the daemon no longer watches this polis.
    pub fn close(&mut self) {
        let _ = self.state.save();
        let _ = self.state.clear_status();
    }
}
