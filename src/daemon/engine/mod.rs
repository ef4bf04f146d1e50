//! The daemon's engine for one polis: it compares the folder's state with what it knew and acts
//! on the difference.
//!
//! It never sees notify. It is told "these paths may have changed" (or "rescan everything") and
//! works from the folder itself, so a move that arrives as create+delete, or only as a rescan,
//! gives the same result. Each pass: read what the change concerns, act (reconcile, route,
//! tally, rollover, merge), then derive the notifications the folder now calls for, save them in
//! the outbox, and deliver them. Every step is idempotent, so a crash at any point is repaired
//! by the next pass and nothing is announced twice.

use crate::daemon::config::Notifications;
use crate::fs::snapshot::{self, Polis};
use crate::fs::state::{Counters, Fingerprint, OutboxEntry, State};
use crate::fs::writer::{self, WriteOutcome, Writer};
use crate::operations;
use crate::operations::route::{self as routing, RouteOptions};
use crate::protocol::chronicle::{self, ChronicleContext, Resume};
use crate::protocol::clock::PolisTime;
use crate::protocol::contract::{Contract, Heading};
use crate::protocol::finding::Finding;
use crate::protocol::inbox::{Kind, Notification};
use crate::protocol::layout::{self, AmendmentFolder, ContractFolder};
use crate::protocol::stats::Ledger;
use anyhow::Context as _;
use chrono::{DateTime, Utc};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

/// What the configuration lets the engine do for this polis.
#[derive(Debug, Clone, Copy)]
pub struct EngineOptions {
    pub auto_route: bool,
    pub rollover: bool,
    pub notifications: Notifications,
}

impl From<crate::daemon::config::Effective> for EngineOptions {
    fn from(e: crate::daemon::config::Effective) -> Self {
        EngineOptions {
            auto_route: e.auto_route,
            rollover: e.rollover,
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
}

/// Which rules a pass must run, from the paths that changed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Scope {
    pub chronicle: bool,
    pub settled: bool,
    pub open: bool,
    pub tally: bool,
    /// Notices derived from the whole folder (cards, lessons, reviews, staleness).
    pub derive: bool,
}

impl Scope {
    pub fn all() -> Scope {
        Scope {
            chronicle: true,
            settled: true,
            open: true,
            tally: true,
            derive: true,
        }
    }

    pub fn is_empty(&self) -> bool {
        *self == Scope::default()
    }

    /// What a change to `rel` concerns.
    pub fn of_path(rel: &str) -> Scope {
        let name = rel.rsplit('/').next().unwrap_or(rel);
        let derive_only = Scope {
            derive: true,
            ..Scope::default()
        };
        if rel.is_empty() || rel == layout::POLIS_YML || rel == layout::INDEX {
            return Scope::all();
        }
        if !rel.contains('/') && name.starts_with("chronicle") {
            return Scope {
                chronicle: true,
                tally: true,
                derive: true,
                ..Scope::default()
            };
        }
        if rel == layout::ROUTING_STATS || rel.starts_with("contracts/settled") {
            return Scope {
                settled: true,
                derive: true,
                ..Scope::default()
            };
        }
        if rel.starts_with("contracts/open") || rel == "contracts" {
            return Scope {
                open: true,
                derive: true,
                ..Scope::default()
            };
        }
        if rel.starts_with("amendments") {
            return Scope {
                tally: true,
                derive: true,
                ..Scope::default()
            };
        }
        if let Some(rest) = rel.strip_prefix("citizens/") {
            return match rest.split('/').nth(1) {
                // Inboxes and journals change nothing polisd decides.
                Some(f) if f.starts_with("inbox") || f == "journal.md" => Scope::default(),
                Some("capability_card.yml") => Scope {
                    chronicle: true, // C002 depends on who is registered
                    tally: true,
                    open: true,
                    derive: true,
                    ..Scope::default()
                },
                Some("status.md") => Scope {
                    tally: true,
                    derive: true,
                    ..Scope::default()
                },
                _ => Scope::all(),
            };
        }
        if rel.starts_with("contracts/abandoned")
            || rel.starts_with(layout::LESSONS_DIR)
            || rel.starts_with(layout::REVIEWS_DIR)
        {
            return derive_only;
        }
        if rel.contains('/') {
            derive_only
        } else {
            Scope::default()
        }
    }

    fn union(self, other: Scope) -> Scope {
        Scope {
            chronicle: self.chronicle || other.chronicle,
            settled: self.settled || other.settled,
            open: self.open || other.open,
            tally: self.tally || other.tally,
            derive: self.derive || other.derive,
        }
    }
}

/// One settled file as read in a pass.
#[derive(Debug)]
struct SettledRead {
    fingerprint: Fingerprint,
    findings: Vec<Finding>,
    /// What its notices name, kept only for the pass that read it.
    heading: Heading,
    settlement: Option<crate::protocol::stats::Settlement>,
}

/// What a pass must look at in `contracts/settled/`.
#[derive(Debug, Clone, PartialEq, Eq)]
enum SettledRefresh {
    /// Nothing there changed.
    Nothing,
    /// Only these files (relative paths) may have changed: stat them, not the folder.
    Paths(BTreeSet<String>),
    /// List the folder and stat every file (start-up, rescans, a folder-level event).
    Full,
}

impl SettledRefresh {
    fn add(&mut self, rel: &str) {
        let Some(name) = rel.strip_prefix("contracts/settled/") else {
            if rel != layout::ROUTING_STATS && Scope::of_path(rel).settled {
                *self = SettledRefresh::Full;
            }
            return;
        };
        let plain = !name.contains('/') && !name.contains('\u{FFFD}');
        match self {
            SettledRefresh::Full => {}
            _ if !plain => *self = SettledRefresh::Full,
            SettledRefresh::Nothing => *self = SettledRefresh::Paths(BTreeSet::from([rel.into()])),
            SettledRefresh::Paths(paths) => {
                paths.insert(rel.to_string());
            }
        }
    }
}

/// The activity of a chronicle text up to `offset`, with the hash of the bytes before it so a
/// rewrite is noticed.
#[derive(Debug, Clone)]
struct Covered {
    name: String,
    offset: usize,
    tail: String,
    activity: chronicle::Activity,
}

impl Covered {
    fn new(name: &str, text: &str, offset: usize, now: &PolisTime) -> Covered {
        Covered {
            name: name.to_string(),
            offset,
            tail: tail_hash(text, offset),
            activity: chronicle::Activity::of_text(&text[..offset], now),
        }
    }

    /// Whether `text` still starts with the bytes this covers (it was at most appended to).
    fn is_prefix_of(&self, name: &str, text: &str) -> bool {
        self.name == name
            && self.offset <= text.len()
            && text.is_char_boundary(self.offset)
            && tail_hash(text, self.offset) == self.tail
    }

    /// Covers `text` up to `upto`, reading only the lines after the current offset when the
    /// text was appended to.
    fn extend_to(&mut self, text: &str, upto: usize, now: &PolisTime) {
        if self.offset > 0
            && self.offset <= upto
            && text.as_bytes()[self.offset - 1] == b'\n'
            && self.is_prefix_of(&self.name.clone(), text)
        {
            let lines = chronicle::scan_tail(&text[self.offset..upto], 0).lines;
            self.activity.add(&lines, now);
            self.offset = upto;
            self.tail = tail_hash(text, upto);
        } else {
            *self = Covered::new(&self.name.clone(), text, upto, now);
        }
    }
}

/// The engine's copy of `chronicle.md`: which file it was (device, inode) and its text.
#[derive(Debug)]
struct ChronicleCopy {
    dev: u64,
    ino: u64,
    text: std::sync::Arc<String>,
}

/// The engine's copy of an archive, which changes rarely (a rollover writes it once): kept
/// while the file's identity, size and mtime stay the same.
#[derive(Debug)]
struct ArchiveCopy {
    stamp: (u64, u64, Fingerprint),
    text: std::sync::Arc<String>,
}

/// The chronicle files as the engine keeps them between passes, so a pass reads the bytes
/// appended to `chronicle.md` and no archive at all, whatever their size.
#[derive(Debug, Default)]
struct ChronicleCopies {
    chronicle: Option<ChronicleCopy>,
    archives: HashMap<String, ArchiveCopy>,
    /// Archives read (or found unchanged) in the current pass; the others are dropped.
    seen: BTreeSet<String>,
}

impl ChronicleCopies {
    /// Forgets the archives the last read of the polis did not see.
    fn forget_unseen(&mut self) {
        let seen = std::mem::take(&mut self.seen);
        self.archives.retain(|name, _| seen.contains(name));
    }
}

impl snapshot::ChronicleSource for ChronicleCopies {
    fn chronicle(&mut self, root: &Path) -> snapshot::ChronicleRead {
        read_chronicle(root, &mut self.chronicle)
    }

    fn archive(&mut self, root: &Path, name: &str) -> snapshot::ChronicleRead {
        use std::os::unix::fs::MetadataExt;
        self.seen.insert(name.to_string());
        let stamp = std::fs::symlink_metadata(root.join(name))
            .ok()
            .filter(|m| m.is_file())
            .map(|m| (m.dev(), m.ino(), Fingerprint::of(&m)));
        if let (Some(stamp), Some(copy)) = (stamp, self.archives.get(name)) {
            if copy.stamp == stamp {
                return Ok(Some(copy.text.clone()));
            }
        }
        self.archives.remove(name);
        let text = snapshot::ReadChronicles.archive(root, name)?;
        if let (Some(stamp), Some(text)) = (stamp, &text) {
            self.archives.insert(
                name.to_string(),
                ArchiveCopy {
                    stamp,
                    text: text.clone(),
                },
            );
        }
        Ok(text)
    }
}

/// The engine of one polis.
pub struct Engine {
    root: PathBuf,
    writer: Writer,
    state: State,
    options: EngineOptions,
    /// Each file of `contracts/settled/` as last read (size and mtime tell a change); its
    /// settlement, when it gives one, is in `ledger`.
    settled: HashMap<String, Fingerprint>,
    /// Findings about settled files, by path: they are not read again until the file changes.
    settled_findings: BTreeMap<String, Vec<Finding>>,
    /// The settlements of the cached files, kept replayed (SPEC §6).
    ledger: Ledger,
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
}

/// How often a long delivery saves its progress.
const OUTBOX_CHECKPOINT: std::time::Duration = std::time::Duration::from_secs(2);

/// Bytes of the chronicle before the validated offset that are hashed to notice a rewrite.
const TAIL_WINDOW: usize = 4096;

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
            settled: HashMap::new(),
            settled_findings: BTreeMap::new(),
            ledger: Ledger::new(),
            settled_zone: None,
            started_at,
            watch_mode: "none".to_string(),
            warmed: false,
            stats_hash: None,
            chronicle_activity: None,
            archive_activity: None,
            chronicles: ChronicleCopies::default(),
            logged_findings: BTreeSet::new(),
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

    fn pass(
        &mut self,
        scope: Scope,
        refresh: SettledRefresh,
        wall: DateTime<Utc>,
    ) -> anyhow::Result<()> {
        if !self.root.join(layout::CONSTITUTION).is_file() {
            tracing::warn!(polis = %self.root.display(), "no CONSTITUTION.md: waiting for the polis to come back");
            return Ok(());
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

        let mut errors: Vec<String> = Vec::new();
        let mut wrote = false;

        if scope.chronicle {
            match self.chronicle_pass(&polis, &now) {
                Ok(changed) => wrote |= changed,
                Err(e) => errors.push(format!("chronicle: {e:#}")),
            }
            if wrote {
                polis = self.reread(&polis);
            }
        }
        self.fill_activity(&mut polis, &now);

        // A settled/ event whose file did not change (an event split across two batches, a
        // replayed event) needs no second reconcile: its inputs are the cache and the stats file.
        // A changed cache always counts, whatever the scope: with the cache empty any pass
        // lists settled/, and a settlement absorbed by a pass without the settled scope (its
        // own event lost to a queue overflow) would otherwise never be reconciled.
        // The stats file is read (and hashed) only when the pass concerns settled/.
        if !self.warmed
            || settled_changed
            || (scope.settled && self.stats_file_hash() != self.stats_hash)
        {
            let ledger = &mut self.ledger;
            let replayed = ledger.len();
            let done =
                operations::reconcile_with(&polis.root, &self.writer, replayed, |rate, last| {
                    ledger.stats(rate, last)
                });
            match done {
                Ok(done) => {
                    // From the rendered bytes: re-reading could pick up an edit made since.
                    self.stats_hash = match &done.stats_sha256 {
                        Some(hash) => Some(hash.clone()),
                        None => self.stats_file_hash(),
                    };
                    self.state.counters.reconciles += 1;
                    if done.outcome == Some(WriteOutcome::Written) {
                        self.state.counters.writes += 1;
                        tracing::info!(settlements = done.replayed, "routing_stats.yml rebuilt");
                    }
                }
                Err(e) => {
                    // The settled cache is already up to date, so the retry must not take the
                    // stats file's unchanged bytes for a completed reconcile.
                    self.stats_hash = None;
                    errors.push(format!("reconcile: {e}"));
                }
            }
        }

        if scope.open && self.options.auto_route {
            if polis.settlements.is_empty() && wants_routing(&polis) {
                // The posterior policy reads the history; only routing needs it as a list.
                polis.settlements = self.ledger.settlements();
            }
            match self.route_new_contracts(&polis) {
                Ok(true) => {
                    wrote = true;
                    polis = self.reread(&polis);
                    self.fill_activity(&mut polis, &now);
                }
                Ok(false) => {}
                Err(e) => errors.push(format!("routing: {e:#}")),
            }
        }

        if scope.tally {
            match operations::tally(&polis, Some(&self.writer), &now) {
                Ok((results, _)) => {
                    self.state.counters.tallies += 1;
                    let acted: Vec<_> = results.iter().filter(|r| r.action != "pending").collect();
                    for r in &acted {
                        tracing::info!(amendment = %r.amendment_id, action = r.action, detail = %r.detail, "amendment tallied");
                    }
                    if !acted.is_empty() {
                        wrote = true;
                        polis = self.reread(&polis);
                        self.fill_activity(&mut polis, &now);
                    }
                }
                Err(e) => errors.push(format!("tally: {e}")),
            }
        }

        let mut notices = self.settled_notices(&new_settled);
        if scope.derive || wrote {
            notices.extend(self.derive(&polis, &now));
        }
        if first_meeting {
            // Nothing that was already there when polisd arrived is announced (SPEC §3, §9).
            self.silence(&notices);
            notices.clear();
        }
        self.enqueue(notices);
        // Saved after delivery, not before: until then the saved state is the previous pass's,
        // so a crash repeats this pass, and delivery finds what already reached an inbox
        // (`operations::deliver` reads it first). Saving first would put two fsyncs between an
        // agent's line and the notice about it.
        self.deliver(&polis, &now);
        self.state.save()?;
        if !self.warmed {
            tracing::info!(polis = %self.root.display(), "initial scan done; reacting to changes");
            release_free_memory();
        }
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

    fn stats_file_hash(&self) -> Option<String> {
        snapshot::read_regular(&self.root.join(layout::ROUTING_STATS))
            .map(|bytes| crate::fs::state::hex_sha256(&bytes))
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
            let progress = self
                .state
                .chronicles
                .entry(layout::CHRONICLE.to_string())
                .or_default();
            progress.offset = scan.resume.offset as u64;
            progress.line = scan.resume.line as u64;
            progress.baseline_offset = Some(scan.resume.offset as u64);
            progress.tail_hash = tail_hash(text, scan.resume.offset);
            self.state
                .reset_seen_chronicle(&text.as_bytes()[..scan.resume.offset])?;
        }
        self.state.save()?;
        Ok(())
    }

    // -----------------------------------------------------------------------------------------
    // Settled contracts: an in-memory cache keyed by size and mtime, so a settlement re-reads
    // one file, not ten thousand.

    /// Refreshes the settled cache and its ledger as `refresh` says, and returns the files
    /// that are new since polisd last recorded them (with what their notices need), and
    /// whether the cache changed.
    fn refresh_settled(
        &mut self,
        polis: &mut Polis,
        refresh: SettledRefresh,
    ) -> (Vec<(String, Heading)>, bool) {
        let zone = polis.settings.timezone;
        let mut changed = false;
        let mut refresh = refresh;
        if self.settled_zone != Some(zone) {
            // Instants depend on the zone: everything is read again.
            changed = true;
            self.settled.clear();
            self.settled_findings.clear();
            self.ledger = Ledger::new();
            self.settled_zone = Some(zone);
            refresh = SettledRefresh::Full;
        }
        let candidates: Vec<String> = match refresh {
            SettledRefresh::Nothing => return (Vec::new(), changed),
            SettledRefresh::Paths(paths) => paths
                .into_iter()
                .filter(|rel| {
                    let name = rel.rsplit('/').next().unwrap_or(rel);
                    name.ends_with(".md") && !layout::is_ignored_name(name)
                })
                .collect(),
            SettledRefresh::Full => {
                let dir = ContractFolder::Settled.dir();
                let mut listing_findings = Vec::new();
                let entries = snapshot::list(&self.root, dir, ".md", &mut listing_findings);
                polis.findings.extend(listing_findings);
                let listed: BTreeSet<String> = entries.into_iter().map(|e| e.rel).collect();
                // Cached or recorded (by an earlier run), and no longer there.
                let gone: BTreeSet<String> = self
                    .settled
                    .keys()
                    .chain(self.state.settled.keys())
                    .filter(|rel| !listed.contains(*rel))
                    .cloned()
                    .collect();
                for rel in &gone {
                    changed |= self.forget_settled(rel);
                }
                listed.into_iter().collect()
            }
        };

        // Stat each cached candidate; read (in parallel) those whose size or mtime moved, and
        // those not cached (reading them tells whether they are still there).
        let mut to_read = Vec::new();
        for rel in candidates {
            if !self.settled.contains_key(&rel) {
                to_read.push(rel);
                continue;
            }
            let meta = match std::fs::symlink_metadata(self.root.join(&rel)) {
                Ok(meta) => meta,
                Err(_) => {
                    changed |= self.forget_settled(&rel);
                    continue;
                }
            };
            let fresh = self.settled.get(&rel) == Some(&Fingerprint::of(&meta));
            if !fresh {
                to_read.push(rel);
            }
        }
        let root = self.root.clone();
        let read = snapshot::par_map(&to_read, |rel| read_settled(&root, rel, zone));
        let mut new = Vec::new();
        for (rel, read) in to_read.into_iter().zip(read) {
            let Some(read) = read else {
                changed |= self.forget_settled(&rel);
                continue;
            };
            changed = true;
            match read.settlement {
                Some(s) => self.ledger.insert(s),
                None => {
                    self.ledger.remove(&rel);
                }
            }
            if read.findings.is_empty() {
                self.settled_findings.remove(&rel);
            } else {
                self.settled_findings.insert(rel.clone(), read.findings);
            }
            if !self.state.settled.contains_key(&rel) && self.state.first_met.is_some() {
                new.push((rel.clone(), read.heading));
            }
            self.state.settled_put(&rel, read.fingerprint);
            self.settled.insert(rel, read.fingerprint);
        }
        (new, changed)
    }

    /// Drops a settled file from the cache, the ledger and the state's record; whether it was
    /// cached.
    fn forget_settled(&mut self, rel: &str) -> bool {
        self.ledger.remove(rel);
        self.settled_findings.remove(rel);
        self.state.settled_remove(rel);
        self.settled.remove(rel).is_some()
    }

    /// `contract-settled` to the opener and `quality-defaulted` to the owner, for settlements
    /// that appeared since the last pass.
    fn settled_notices(&self, new: &[(String, Heading)]) -> Vec<Notification> {
        let mut out = Vec::new();
        for (rel, e) in new {
            let Some(s) = self.ledger.get(rel) else {
                continue;
            };
            let id = rel_stem(rel);
            let title = e.title.clone().unwrap_or_else(|| id.to_string());
            if let Some(opener) = &e.opened_by {
                if opener != &s.owner {
                    out.push(Notification::contract_settled(
                        opener, id, &title, &s.owner, e.quality,
                    ));
                }
            }
            if s.quality_defaulted {
                out.push(Notification::quality_defaulted(&s.owner, id));
            }
        }
        out
    }

    // -----------------------------------------------------------------------------------------
    // The chronicle (SPEC §3, §11)

    /// Merges conflict copies, rolls over at a new quarter, validates the newly completed
    /// lines and notices lost ones. Returns whether polisd wrote to the chronicle.
    fn chronicle_pass(&mut self, polis: &Polis, now: &PolisTime) -> anyhow::Result<bool> {
        let mut wrote = self.merge_conflict_copies()?;
        if self.options.rollover {
            wrote |= self.roll_over(polis, now)?;
        }
        let current;
        let polis = if wrote {
            current = self.read_polis();
            &current
        } else {
            polis
        };
        let Some(text) = polis.chronicle_text() else {
            return Ok(wrote);
        };
        let progress = self
            .state
            .chronicles
            .get(layout::CHRONICLE)
            .cloned()
            .unwrap_or_default();
        let resume = Resume {
            offset: progress.offset as usize,
            line: progress.line as usize,
        };
        let appended = chronicle::scan_from(text, resume)
            .filter(|_| tail_hash(text, resume.offset) == progress.tail_hash);
        let mut notices = Vec::new();
        let rewritten = appended.is_none();
        let (scan, new_lines) = match appended {
            Some(scan) => {
                let lines = scan.lines.clone();
                (scan, lines)
            }
            None => {
                // Rewritten, shrunk, rolled over or merged: what polisd saw before must still be
                // somewhere (SPEC §3 C009), and only lines it has not seen are new.
                let seen_bytes = self.state.read_seen_chronicle();
                let seen_text = String::from_utf8_lossy(&seen_bytes);
                let seen_lines: Vec<String> = chronicle::scan(&seen_text)
                    .lines
                    .into_iter()
                    .map(|l| l.text)
                    .collect();
                let mut files: Vec<&str> = vec![text];
                files.extend(polis.archives.iter().map(|(_, t)| t.as_str()));
                for lost in chronicle::lost_lines(&seen_lines, &files) {
                    let finding = chronicle::lost_line_finding(layout::CHRONICLE, &lost);
                    tracing::warn!("{finding}");
                    self.state.push_findings(std::iter::once(&finding));
                    self.state
                        .chronicles
                        .entry(layout::CHRONICLE.to_string())
                        .or_default()
                        .lost_lines
                        .push(crate::fs::state::LostLine {
                            text: lost.clone(),
                            noticed_at: crate::fs::state::now_rfc3339(),
                        });
                    if let Some(n) = self.finding_notice(polis, &finding, &lost) {
                        notices.push(n);
                    }
                }
                let scan = chronicle::scan(text);
                let mut seen_counts: HashMap<String, usize> = HashMap::new();
                for l in &seen_lines {
                    *seen_counts.entry(chronicle::line_key(l)).or_default() += 1;
                }
                let fresh = scan
                    .lines
                    .iter()
                    .filter(
                        |l| match seen_counts.get_mut(&chronicle::line_key(&l.text)) {
                            Some(n) if *n > 0 => {
                                *n -= 1;
                                false
                            }
                            _ => true,
                        },
                    )
                    .cloned()
                    .collect();
                self.state
                    .reset_seen_chronicle(&text.as_bytes()[..scan.resume.offset])?;
                (scan, fresh)
            }
        };
        if !new_lines.is_empty() {
            let earlier = if rewritten {
                chronicle::newest_stamp(&text[..resume.offset.min(text.len())], now)
            } else {
                self.activity_upto(text, resume.offset, now)
                    .newest_stamp(now)
                    .unwrap_or_else(|| chronicle::newest_stamp(&text[..resume.offset], now))
            };
            let (findings, _) = self.validate(polis, &new_lines, earlier, now);
            for f in &findings {
                tracing::warn!("{f}");
                let line_text = new_lines
                    .iter()
                    .find(|l| Some(l.number) == f.line)
                    .map(|l| l.text.as_str())
                    .unwrap_or("");
                if let Some(n) = self.finding_notice(polis, f, line_text) {
                    notices.push(n);
                }
            }
            self.state.push_findings(&findings);
            if !rewritten {
                self.state
                    .append_seen_chronicle(&text.as_bytes()[resume.offset..scan.resume.offset])?;
            }
        }
        let progress = self
            .state
            .chronicles
            .entry(layout::CHRONICLE.to_string())
            .or_default();
        progress.offset = scan.resume.offset as u64;
        progress.line = scan.resume.line as u64;
        progress.tail_hash = tail_hash(text, scan.resume.offset);
        self.activity_upto(text, scan.resume.offset, now);
        self.enqueue(notices);
        Ok(wrote)
    }

    /// The activity of `chronicle.md` up to `upto` (a line end), read incrementally.
    fn activity_upto(&mut self, text: &str, upto: usize, now: &PolisTime) -> &chronicle::Activity {
        let covered = self
            .chronicle_activity
            .get_or_insert_with(|| Covered::new(layout::CHRONICLE, text, 0, now));
        if covered.offset != upto || !covered.is_prefix_of(layout::CHRONICLE, text) {
            covered.extend_to(text, upto, now);
        }
        &covered.activity
    }

    /// Fills `polis.active_authors` from the kept activity when it covers the chronicle as read
    /// (every complete line) and the newest archive; otherwise leaves it for a scan.
    fn fill_activity(&mut self, polis: &mut Polis, now: &PolisTime) {
        polis.active_authors = None;
        let mut authors = match polis.chronicle_text() {
            None => BTreeSet::new(),
            Some(text) => {
                let Some(c) = &self.chronicle_activity else {
                    return;
                };
                if !c.is_prefix_of(layout::CHRONICLE, text) || text[c.offset..].contains('\n') {
                    return;
                }
                match c.activity.active_authors(now) {
                    Some(authors) => authors,
                    None => return,
                }
            }
        };
        if let Some((name, text)) = polis.archives.last() {
            let fresh = self
                .archive_activity
                .as_ref()
                .is_some_and(|a| a.offset == text.len() && a.is_prefix_of(name, text));
            if !fresh {
                self.archive_activity = Some(Covered::new(name, text, text.len(), now));
            }
            match self
                .archive_activity
                .as_ref()
                .and_then(|a| a.activity.active_authors(now))
            {
                Some(more) => authors.extend(more),
                None => return,
            }
        }
        polis.active_authors = Some(authors);
    }

    fn validate(
        &self,
        polis: &Polis,
        lines: &[chronicle::Line],
        newest_earlier: Option<chrono::NaiveDateTime>,
        now: &PolisTime,
    ) -> (Vec<Finding>, Option<chrono::NaiveDateTime>) {
        let registered = |id: &str| polis.cards.contains_key(id);
        let exists = |rel: &str| polis.exists(rel);
        let ctx = ChronicleContext {
            path: layout::CHRONICLE,
            is_registered: &registered,
            link_exists: &exists,
            newest_earlier,
            now: *now,
        };
        chronicle::validate_all(lines, &ctx)
    }

    /// The inbox notice for a chronicle finding: to the author when registered, otherwise to
    /// the index keeper (SPEC §3).
    fn finding_notice(&self, polis: &Polis, f: &Finding, line_text: &str) -> Option<Notification> {
        let author = chronicle::stamp_and_author(line_text)
            .map(|(_, a)| a.to_string())
            .or_else(|| line_text.split(" | ").nth(1).map(|a| a.trim().to_string()))
            .unwrap_or_default();
        let recipient = if polis.cards.contains_key(&author) {
            author.clone()
        } else {
            polis.index_keeper.clone()?
        };
        Some(Notification::chronicle_finding(
            &recipient, &author, f, line_text,
        ))
    }

    /// Merges chronicle conflict copies left by a sync tool (SPEC §11).
    fn merge_conflict_copies(&mut self) -> anyhow::Result<bool> {
        let mut wrote = false;
        let Ok(entries) = std::fs::read_dir(&self.root) else {
            return Ok(false);
        };
        let mut copies: Vec<String> = entries
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
            .filter_map(|e| e.file_name().to_str().map(str::to_string))
            .filter(|n| n.starts_with("chronicle") && layout::is_conflict_copy(n))
            .collect();
        copies.sort();
        for name in copies {
            let Ok(Some(copy)) = snapshot::read_text(&self.root, &name, None) else {
                continue;
            };
            let merged =
                operations::edit_agent_file(&self.writer, &self.root, layout::CHRONICLE, |cur| {
                    Some(chronicle::merge_conflict_copy(cur, &copy))
                })?;
            self.writer.remove(&name)?;
            tracing::info!(copy = %name, "merged a chronicle conflict copy");
            wrote |= merged;
            self.state.counters.writes += 1;
        }
        Ok(wrote)
    }

    /// Quarterly rollover (SPEC §3), when the configuration turns it on.
    fn roll_over(&mut self, polis: &Polis, now: &PolisTime) -> anyhow::Result<bool> {
        let Some(text) = polis.chronicle_text() else {
            return Ok(false);
        };
        let Some(r) = chronicle::rollover(text, now) else {
            return Ok(false);
        };
        let archive_exists = self.root.join(&r.archive_name).exists();
        if !archive_exists {
            self.writer
                .create_new(&r.archive_name, r.archive_text.as_bytes())?;
        } else if snapshot::read_regular(&self.root.join(&r.archive_name)).as_deref()
            != Some(r.archive_text.as_bytes())
        {
            // Another machine rolled over already; its archive wins and this chronicle's lines
            // stay where they are.
            return Ok(false);
        }
        let original = text.to_string();
        let changed =
            operations::edit_agent_file(&self.writer, &self.root, layout::CHRONICLE, |cur| {
                (cur == original).then(|| r.new_text.clone())
            })?;
        if changed {
            tracing::info!(archive = %r.archive_name, "chronicle rolled over");
        }
        Ok(changed)
    }

    // -----------------------------------------------------------------------------------------
    // Routing (SPEC §7)

    fn route_new_contracts(&mut self, polis: &Polis) -> anyhow::Result<bool> {
        let mut wrote = false;
        for file in polis
            .contracts
            .iter()
            .filter(|c| c.folder == ContractFolder::Open && c.contract.wants_recommendation())
        {
            let rec = match routing::recommend(polis, file, &RouteOptions::default())
                .map(|r| r.recommendation)
            {
                Ok(rec) => rec,
                Err(routing::RouteError::NoCitizens) => return Ok(wrote),
                Err(e) => {
                    tracing::debug!("not routing {}: {e}", file.file.rel);
                    continue;
                }
            };
            if routing::apply(polis, &self.writer, file, &rec)? {
                self.state.counters.writes += 1;
                tracing::info!(
                    contract = %file.file.stem,
                    recommendation = rec.recommendation.as_deref().unwrap_or("-"),
                    score = rec.score,
                    exploration = rec.exploration,
                    "contract routed"
                );
                wrote = true;
            }
        }
        Ok(wrote)
    }

    // -----------------------------------------------------------------------------------------
    // Notifications derived from the folder (SPEC §9)

    /// Every notice the folder's current state calls for. Notices whose recipients depend on
    /// who is active are fixed when the fact is first seen (`state.known`).
    fn derive(&mut self, polis: &Polis, now: &PolisTime) -> Vec<Notification> {
        let mut out = Vec::new();
        let active = operations::active_citizens(polis, now);
        let open: Vec<_> = polis
            .contracts
            .iter()
            .filter(|c| c.folder == ContractFolder::Open)
            .collect();
        let claimed: BTreeSet<&str> = open
            .iter()
            .filter(|c| {
                c.contract.owner.is_some()
                    && matches!(
                        c.contract.status.as_deref(),
                        Some("claimed" | "in_progress")
                    )
            })
            .map(|c| c.file.stem.as_str())
            .collect();
        // One pass over the chronicle for every claimed contract, not one per contract.
        let last_lines = last_lines_about(polis, &claimed);

        for c in &open {
            let k = &c.contract;
            let id = c.file.stem.as_str();
            let title = k.title.clone().unwrap_or_else(|| id.to_string());
            if k.owner.is_none() {
                if let Some(r) = &k.routing.recommended_by_router {
                    out.push(Notification::contract_routed(
                        r,
                        id,
                        &title,
                        k.routing.recommendation_score.unwrap_or(0.0),
                        k.routing.exploration.unwrap_or(false),
                    ));
                }
            }
            if k.stakes.as_deref() == Some("high") {
                if let Some(owner) = &k.owner {
                    if k.review.reviewer.is_none() {
                        out.push(Notification::review_needed(owner, id, &title, None));
                    }
                }
                if let Some(reviewer) = &k.review.reviewer {
                    out.push(Notification::review_needed(
                        reviewer,
                        id,
                        &title,
                        Some(reviewer),
                    ));
                }
            }
            if let (Some(owner), true) = (&k.owner, claimed.contains(id)) {
                if let Some(last) = stale_since(last_lines.get(id).copied(), k, now) {
                    out.push(Notification::contract_stale(owner, id, &last));
                }
            }
        }

        for file in &polis.amendments {
            let a = &file.amendment;
            let status = a.status.clone().unwrap_or_default();
            if file.folder == AmendmentFolder::Proposed && status == "proposed" {
                let key = format!("proposed/{}", a.id);
                if let std::collections::btree_map::Entry::Vacant(e) = self.state.known.entry(key) {
                    e.insert("1".into());
                    for r in active.iter().filter(|r| Some(*r) != a.proposed_by.as_ref()) {
                        out.push(Notification::amendment_proposed(r, a));
                    }
                }
            }
            let decided = matches!(status.as_str(), "ratified" | "rejected" | "expired");
            let key = format!("amendment/{}", a.id);
            if decided && self.state.known.get(&key) != Some(&status) {
                self.state.known.insert(key, status.clone());
                let outcome = decided_outcome(polis, a, &status, &active);
                let mut recipients: BTreeSet<String> = BTreeSet::new();
                if status == "ratified" {
                    recipients.extend(active.iter().cloned());
                    recipients.extend(polis.index_keeper.iter().cloned());
                } else {
                    recipients.extend(a.proposed_by.iter().cloned());
                }
                for r in &recipients {
                    out.extend(Notification::amendment_outcome(r, a, &outcome));
                }
            }
        }

        for lesson in &polis.lessons {
            let key = format!("lesson/{}", lesson.rel);
            if self.state.known.contains_key(&key) {
                continue;
            }
            self.state.known.insert(key, "1".into());
            let link = lesson.rel.trim_end_matches(".md");
            for c in &open {
                let Some(owner) = &c.contract.owner else {
                    continue;
                };
                if let Some(tag) = c
                    .contract
                    .required_tags
                    .iter()
                    .find(|t| lesson.lesson.capability_tags.contains(t))
                {
                    out.push(Notification::lesson_filed(owner, link, tag, &c.file.stem));
                }
            }
        }

        for card in polis.cards.values() {
            let v = card.card.verify();
            if v.state == crate::protocol::card::VerifyState::Mismatch {
                let actual = v.computed.clone().unwrap_or_default();
                out.push(Notification::card_changed(&card.id, &card.id, &actual));
                if let Some(keeper) = &polis.index_keeper {
                    if keeper != &card.id {
                        out.push(Notification::card_changed(keeper, &card.id, &actual));
                    }
                }
            }
        }
        out
    }

    /// Marks notices as sent without delivering them (the baseline).
    fn silence(&mut self, notices: &[Notification]) {
        for n in notices {
            self.state.mark_sent(n.kind.as_str(), &n.id());
        }
    }

    fn enqueue(&mut self, notices: Vec<Notification>) {
        // A set rather than `outbox.contains`: a backlog after downtime holds thousands.
        let mut queued: std::collections::HashSet<OutboxEntry> =
            self.state.outbox.iter().cloned().collect();
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
            };
            if queued.insert(entry.clone()) {
                self.state.outbox.push(entry);
            }
        }
    }

    /// Delivers the outbox. A notice that cannot be written (a symlinked inbox, a recipient
    /// without a card) is dropped with a warning; an I/O failure keeps it for the next pass.
    fn deliver(&mut self, polis: &Polis, now: &PolisTime) {
        let outbox = std::mem::take(&mut self.state.outbox);
        let enabled = self.options.notifications;
        let mut keep = Vec::new();
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
            };
            let report = operations::deliver(
                polis,
                &self.writer,
                &mut self.state,
                std::slice::from_ref(&n),
                &|k| enabled.enabled(k.as_str()),
                now,
            );
            self.state.counters.notifications += report.delivered as u64;
            if report.delivered > 0 {
                tracing::info!(kind = %n.kind, to = %n.recipient, subject = %n.subject, "notified");
            }
            for (who, why) in report.failed {
                if why.is_refusal() {
                    tracing::warn!("not notifying {who}: {why}");
                } else {
                    tracing::warn!("could not notify {who} yet (will retry): {why}");
                    keep.push(entry.clone());
                }
            }
        }
        self.state.outbox = keep;
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

/// The outcome behind a decided amendment, for the notice's wording.
fn decided_outcome(
    polis: &Polis,
    a: &crate::protocol::amendment::Amendment,
    status: &str,
    active: &BTreeSet<String>,
) -> crate::protocol::amendment::Outcome {
    let votes = crate::protocol::amendment::counted_votes(a, &polis.registered());
    let agrees = votes.count(crate::protocol::amendment::Vote::Agree);
    let quorum = crate::protocol::amendment::quorum(&a.quorum_required, active.len());
    let (action, detail) = match status {
        "ratified" => (
            crate::protocol::amendment::Action::Ratified,
            format!("{agrees} citizens agreed (quorum {quorum})"),
        ),
        "rejected" => (
            crate::protocol::amendment::Action::Rejected,
            format!("it can no longer reach its quorum of {quorum} ({agrees} agreed)"),
        ),
        _ => (
            crate::protocol::amendment::Action::Expired,
            format!("its deadline passed with {agrees} of {quorum} agreeing votes"),
        ),
    };
    crate::protocol::amendment::Outcome {
        action,
        agrees,
        quorum,
        detail,
        votes,
    }
}

/// The newest chronicle line about each of `ids` (a line whose link names the contract), over
/// the texts the activity window reads. Nothing is scanned when `ids` is empty.
fn last_lines_about(polis: &Polis, ids: &BTreeSet<&str>) -> HashMap<String, chrono::NaiveDateTime> {
    let mut last: HashMap<String, chrono::NaiveDateTime> = HashMap::new();
    if ids.is_empty() {
        return last;
    }
    for text in polis.recent_chronicle() {
        for line in chronicle::scan(text).lines {
            let Ok(entry) = chronicle::parse_entry(&line.text) else {
                continue;
            };
            let Some(target) = entry.link.and_then(chronicle::link_target) else {
                continue;
            };
            let Some(id) = target.rsplit('/').next().filter(|id| ids.contains(id)) else {
                continue;
            };
            let slot = last.entry(id.to_string()).or_insert(entry.stamp);
            *slot = (*slot).max(entry.stamp);
        }
    }
    last
}

/// When a claimed contract has had no chronicle line about it for 14 days, the stamp of the
/// last one (or of its opening), which makes each silence a distinct notice.
fn stale_since(
    last_line: Option<chrono::NaiveDateTime>,
    k: &Contract,
    now: &PolisTime,
) -> Option<String> {
    let last = last_line;
    let last = last.or_else(|| {
        crate::protocol::amendment::read_when(&k.opened_at, now).map(|w| match w {
            crate::protocol::amendment::When::Moment(t) => t,
            crate::protocol::amendment::When::Day(d) => d.and_hms_opt(0, 0, 0).unwrap_or_default(),
        })
    })?;
    (now.now - last > chrono::Duration::days(chronicle::ACTIVITY_WINDOW_DAYS))
        .then(|| last.format("%Y-%m-%d %H:%M").to_string())
}

/// Reads one settled file; `None` when it is gone. The frontmatter is parsed once for all.
fn read_settled(
    root: &Path,
    rel: &str,
    zone: crate::protocol::clock::PolisZone,
) -> Option<SettledRead> {
    let mut read = SettledRead {
        fingerprint: Fingerprint::default(),
        findings: Vec::new(),
        heading: Heading::default(),
        settlement: None,
    };
    let text = match snapshot::read_text_and_metadata(root, rel, Some(snapshot::MAX_RECORD_BYTES)) {
        Ok(Some((text, meta))) => {
            read.fingerprint = Fingerprint::of(&meta);
            text
        }
        Ok(None) => return None,
        Err(finding) => {
            let meta = std::fs::symlink_metadata(root.join(rel)).ok()?;
            read.fingerprint = Fingerprint::of(&meta);
            read.findings.push(finding);
            return Some(read);
        }
    };
    let record = match crate::protocol::frontmatter::parse(&text) {
        Ok(record) => record,
        Err(e) => {
            read.findings = vec![crate::protocol::contract::unreadable_frontmatter(rel, &e)];
            return Some(read);
        }
    };
    let settled = crate::protocol::contract::settlement_of(rel, &record, zone);
    read.findings = settled.findings;
    read.settlement = settled.settlement;
    read.heading = Heading::of(&record);
    Some(read)
}

/// `chronicle.md`, reading only what was appended to `copy` when the file is the same one
/// (device and inode) and the bytes before the copy's end are unchanged; otherwise the whole
/// file, as [`snapshot::read_text`] reads it.
fn read_chronicle(root: &Path, copy: &mut Option<ChronicleCopy>) -> snapshot::ChronicleRead {
    use std::io::{Read, Seek, SeekFrom};
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    let path = root.join(layout::CHRONICLE);
    let appended = (|| -> Option<std::sync::Arc<String>> {
        let c = copy.as_mut()?;
        let meta = std::fs::symlink_metadata(&path).ok()?;
        let old_len = c.text.len() as u64;
        if !meta.is_file() || meta.dev() != c.dev || meta.ino() != c.ino || meta.len() < old_len {
            return None;
        }
        // Not following a final symbolic link, as `snapshot::read_text`.
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(writer::no_follow_flags())
            .open(&path)
            .ok()?;
        let start = old_len.saturating_sub(TAIL_WINDOW as u64);
        file.seek(SeekFrom::Start(start)).ok()?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes).ok()?;
        let window = (old_len - start) as usize;
        if bytes.len() < window || bytes[..window] != c.text.as_bytes()[start as usize..] {
            return None;
        }
        if bytes.len() > window {
            let more = std::str::from_utf8(&bytes[window..]).ok()?;
            // Between passes the engine holds the only reference: this appends in place.
            std::sync::Arc::make_mut(&mut c.text).push_str(more);
        }
        Some(c.text.clone())
    })();
    if let Some(text) = appended {
        return Ok(Some(text));
    }
    *copy = None;
    let meta = std::fs::symlink_metadata(&path).ok();
    let text = snapshot::read_text(root, layout::CHRONICLE, None)?;
    Ok(text.map(|text| {
        let text = std::sync::Arc::new(text);
        if let Some(meta) = meta {
            *copy = Some(ChronicleCopy {
                dev: meta.dev(),
                ino: meta.ino(),
                text: text.clone(),
            });
        }
        text
    }))
}

/// Whether an open contract waits for a recommendation (routing needs the history then).
fn wants_routing(polis: &Polis) -> bool {
    polis
        .contracts
        .iter()
        .any(|c| c.folder == ContractFolder::Open && c.contract.wants_recommendation())
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

/// Hex SHA-256 of up to [`TAIL_WINDOW`] bytes before `offset`.
fn tail_hash(text: &str, offset: usize) -> String {
    let end = offset.min(text.len());
    let start = end.saturating_sub(TAIL_WINDOW);
    crate::fs::state::hex_sha256(&text.as_bytes()[start..end])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::snapshot::ChronicleSource as _;

    #[test]
    fn an_archive_is_read_again_only_when_it_changes() {
        let dir = tempfile::tempdir().unwrap();
        let name = "chronicle-2026-Q1.md";
        let path = dir.path().join(name);
        std::fs::write(&path, "- 2026-01-02 10:00 | a | did | - | x\n").unwrap();
        let mut copies = ChronicleCopies::default();
        let first = copies.archive(dir.path(), name).unwrap().unwrap();
        let again = copies.archive(dir.path(), name).unwrap().unwrap();
        assert!(std::sync::Arc::ptr_eq(&first, &again), "unchanged: kept");

        std::fs::write(&path, "- 2026-01-02 10:00 | a | did | - | x\nmore\n").unwrap();
        let changed = copies.archive(dir.path(), name).unwrap().unwrap();
        assert!(changed.ends_with("more\n"), "{changed}");

        copies.forget_unseen();
        assert!(copies.archives.contains_key(name), "seen in this read");
        copies.forget_unseen();
        assert!(copies.archives.is_empty(), "not seen since: dropped");

        std::fs::remove_file(&path).unwrap();
        assert_eq!(copies.archive(dir.path(), name).unwrap(), None);
    }
}
