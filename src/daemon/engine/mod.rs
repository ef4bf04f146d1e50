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
mod delivery;
mod derived_notices;
mod reflection_pass;
mod reservation_pass;
mod routing_pass;
mod scope;
mod settled_pass;
mod sync_pass;
mod tally_pass;

pub use scope::Scope;

use crate::daemon::config::{Notifications, WriterMode};
use crate::fs::snapshot::{self, Polis};
use crate::fs::state::{Counters, Fingerprint, State};
use crate::fs::writer::{self, Writer};
use crate::protocol::chronicle::{self};
use crate::protocol::clock::PolisTime;
use crate::protocol::contract::Heading;
use crate::protocol::finding::Finding;
use crate::protocol::layout::{self};
use crate::protocol::stats::Ledger;
use anyhow::Context as _;
use chronicle_pass::{ChronicleCopies, Covered};
use chrono::{DateTime, Utc};
use settled_pass::SettledRefresh;
use std::collections::{BTreeMap, BTreeSet, HashSet};
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
    /// A reservation's lease ran out ([`Engine::next_expiry`]).
    ReservationExpiry,
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
    sync_notices: Vec<crate::protocol::inbox::Notification>,
    errors: Vec<String>,
}

/// The engine of one polis.
pub struct Engine {
    root: PathBuf,
    writer: Writer,
    state: State,
    options: EngineOptions,
    /// Settled files an earlier run had counted that `ledger` does not hold (its durable
    /// snapshot was not usable, or held findings): read again, not announced as new. Empty
    /// after the first full pass.
    settled_recorded: HashSet<String>,
    /// Findings about settled files, by path: they are not read again until the file changes.
    settled_findings: BTreeMap<String, Vec<Finding>>,
    /// Each file of `contracts/settled/` as last read, with its fingerprint (which tells a
    /// change) and its settlement, kept replayed (SPEC §6). Restored from the state's
    /// snapshot on start-up and checked against every file's fingerprint.
    ledger: Ledger<Fingerprint>,
    /// The timezone the settled cache was read with: instants depend on it.
    settled_zone: Option<crate::protocol::clock::PolisZone>,
    started_at: String,
    watch_mode: String,
    /// `chronicle.md` and its archives as last read, so a pass reads only the bytes appended
    /// since.
    chronicles: ChronicleCopies,
    /// Whether a pass since start-up has completed (the first one takes the baseline).
    warmed: bool,
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
    /// When the earliest lease in `reservations.yml` ends, as the last reservation step saw it.
    next_expiry: Option<DateTime<Utc>>,
    /// Why `reservations.yml` could not be read, as last logged (logged again only when it
    /// changes).
    reservations_problem: Option<String>,
}

impl Engine {
    /// Opens the engine for the `_polis/` folder at `root`, with its machine-local state.
    pub fn open(root: &Path, options: EngineOptions) -> anyhow::Result<Engine> {
        let writer =
            Writer::new(root).with_context(|| format!("cannot write inside {}", root.display()))?;
        let root = writer.root().to_path_buf();
        let mut state = State::load(&root)?;
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
            settled_findings: BTreeMap::new(),
            ledger: Ledger::default(),
            settled_zone: None,
            started_at,
            watch_mode: "none".to_string(),
            warmed: false,
            stats_hash: None,
            chronicle_activity: None,
            archive_activity: None,
            chronicles: ChronicleCopies::default(),
            logged_findings: BTreeSet::new(),
            sync: sync_pass::SyncCache::default(),
            reported_other_writer: false,
            next_expiry: None,
            reservations_problem: None,
        })
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

    /// Holds the single-daemon lock for this polis, if no other polisd has it.
    pub fn lock(&self) -> anyhow::Result<Option<crate::fs::state::DaemonLock>> {
        Ok(self.state.try_lock_daemon()?)
    }

    /// Runs one pass for `trigger` at wall-clock time `wall`. Errors are returned for the log;
    /// the engine stays usable and the next pass retries whatever failed.
    pub fn handle(&mut self, trigger: &Trigger, wall: DateTime<Utc>) -> anyhow::Result<()> {
        let (scope, refresh) = match trigger {
            Trigger::Rescan => {
                self.state.counters.rescans += 1;
                (Scope::all(), SettledRefresh::Full)
            }
            Trigger::Timer => (Scope::all(), SettledRefresh::Full),
            Trigger::ReservationExpiry => (
                Scope {
                    reservations: true,
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
        if !self.warmed || matches!(trigger, Trigger::Rescan | Trigger::Timer) {
            self.refresh_sync();
        }
        let started = std::time::Instant::now();
        let result = self.pass(scope, refresh, wall);
        self.write_status();
        tracing::debug!(
            elapsed_us = started.elapsed().as_micros() as u64,
            ?scope,
            "pass done"
        );
        result
    }

    /// The scope of a batch of paths, leaving out changes polisd itself made (no loops), and
    /// which settled files it concerns.
    fn scope_of(&self, paths: &[PathBuf]) -> (Scope, SettledRefresh) {
        let mut scope = Scope::default();
        let mut refresh = SettledRefresh::Nothing;
        for path in paths {
            let rel = path.to_string_lossy().replace('\\', "/");
            let concerns = Scope::of_path(&rel);
            // Asked first: a path no rule concerns (an inbox polisd just appended to) is not
            // read and hashed to tell whose change it was.
            if concerns.is_empty() {
                continue;
            }
            if self.is_own_change(&rel) {
                continue;
            }
            scope = scope.union(concerns);
            refresh.add(&rel);
        }
        (scope, refresh)
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
    /// activity window decides who is active), the stats next (routing reads them), then
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
        if scope.chronicle {
            self.chronicle_step(&mut pass);
        }
        self.fill_activity(&mut pass.polis, &pass.now);
        self.sync_step(&mut pass, scope.sync, scope.open || scope.settled);
        self.reconcile_step(&mut pass, scope);
        // `writer = "none"`: another machine's daemon appends and edits (docs/sync.md).
        let writes = self.options.writer.writes();
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
        // Findings about settled files live in the cache (those files are not re-read).
        polis
            .findings
            .extend(self.settled_findings.values().flatten().cloned());
        self.log_new_findings(&polis.findings);
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
        if scope.derive || pass.wrote {
            notices.extend(self.derive(&pass.polis, &pass.now));
        }
        if pass.first_meeting {
            // Nothing that was already there when polisd arrived is announced (SPEC §3, §9).
            self.silence(&notices);
            notices.clear();
        }
        self.enqueue(notices);
        // Saved after delivery (in `finish_pass`), not before: until then the saved state is
        // the previous pass's, so a crash repeats this pass, and delivery finds what already
        // reached an inbox (`operations::deliver` reads it first). Saving first would put two
        // fsyncs between an agent's line and the notice about it.
        self.deliver(&pass.polis, &pass.now);
    }

    fn finish_pass(&mut self, pass: Pass) -> anyhow::Result<()> {
        self.state.save()?;
        self.save_settled_snapshot();
        if !self.warmed {
            tracing::info!(polis = %self.root.display(), "initial scan done; reacting to changes");
            release_free_memory();
        }
        self.warmed = true;
        if pass.errors.is_empty() {
            Ok(())
        } else {
            anyhow::bail!("{}", pass.errors.join("; "))
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
        let notices = self.derive(polis, now);
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
        let status = self.state.status(&self.started_at, &self.watch_mode);
        if let Err(e) = self.state.write_status(&status) {
            tracing::warn!("could not write the status file: {e}");
        }
    }

    /// Removes the status file: the daemon no longer watches this polis.
    pub fn close(&mut self) {
        let _ = self.state.save();
        let _ = self.state.clear_status();
    }
}

/// Hands the heap the initial scan freed back to the system: reading every file on several
/// threads leaves glibc arenas holding megabytes the daemon will not use again while it idles.
fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns free heap pages to the kernel; it touches no live
    // allocation.
    unsafe {
        libc::malloc_trim(0);
    }
}

fn rel_stem(rel: &str) -> &str {
    let name = rel.rsplit('/').next().unwrap_or(rel);
    name.strip_suffix(".md").unwrap_or(name)
}
