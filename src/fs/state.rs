//! Machine-local state per polis, kept in polisd's state directory and never in `_polis/`
//! (SPEC §1): chronicle progress, sent-notification ids, fingerprints of what was already
//! processed, counters and the latest findings.
//!
//! Where: `$POLISD_STATE_DIR` if set (tests, unusual setups), else `$STATE_DIRECTORY` (systemd's
//! `StateDirectory=`; the first entry when it lists several), else the platform state folder
//! (`$XDG_STATE_HOME/polisd`, `~/.local/state/polisd`; on macOS, which has none, the local data
//! folder). Each polis gets `polis-<16 hex of SHA-256 of its canonical path>/` holding:
//!
//! - `polis-path` — the canonical `_polis/` path, so a human can tell the folders apart;
//! - `state.json` — [`PolisState`], rewritten atomically (temp file, fsync, rename);
//! - `daemon.json` — [`DaemonStatus`], the status file: while a daemon watches the polis it
//!   keeps pid, start time, counters and latest findings here, and `polisd status` reads it
//!   (with [`read_status`]) to say whether and how a daemon is watching;
//! - `daemon.lock` — held (advisory lock) by the running daemon, see [`State::try_lock_daemon`];
//! - `settled.ledger` — the durable ledger of settled contracts (`state/settled.rs`; earlier
//!   versions kept it as JSON in `settled.jsonl`, read once as untrusted and removed), and
//!   `settled.lock`, held by its one writer: the daemon for as long as it runs, or a one-shot
//!   command with no daemon running ([`LedgerFile`]), so the two never write it at once;
//! - `chronicle-appended.md` — the chronicle lines this machine appended that the daemon has
//!   not read yet (`state/appended.rs`), so a sync tool's replace cannot take one unnoticed.
//!
//! A corrupt `state.json` is moved aside (`state.json.corrupt-<unix secs>`) with a warning and
//! rebuilt from the folder; it never stops the daemon. This module writes only inside the state
//! directory; `_polis/` is `writer`'s alone. It holds data, not rules: what the fields mean to
//! the protocol is decided by the engine and the core modules.

mod appended;
mod catch_up;
mod fingerprint;
mod hooks;
mod ledger_file;
mod report_key;
mod sent;
mod settled;
pub use appended::{note_appended, take_appended};
pub use catch_up::{catch_up_seen, set_catch_up_seen};
#[cfg(test)]
pub use fingerprint::set_read_instant;
pub use fingerprint::{
    fingerprints_in, fingerprints_of_names, listed_fingerprints, listed_fingerprints_then,
    read_instant, Fingerprint, ListedNames, Listing, Unvouched,
};
use ledger_file::{open_settled_lock, read_settled_file, write_ledger_snapshot};
pub use ledger_file::{read_ledger_in, LedgerAhead, LedgerFile, LedgerLock, LedgerTry};
pub use report_key::report_key;
pub use sent::SentNotifications;

pub use hooks::{
    hook_identity, install_record, set_hook_identity, set_install_record, InstallRecord,
};
pub use settled::{NameIndex, RecordRef, Records, Restored, SettledRecord, LEDGER_VERSION};

use crate::protocol::finding::Finding;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io::{self, Write};
use std::ops::{Deref, DerefMut};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// Overrides every other choice of state directory.
pub const STATE_DIR_ENV: &str = "POLISD_STATE_DIR";
/// Set by systemd for units with `StateDirectory=`.
pub const SYSTEMD_STATE_ENV: &str = "STATE_DIRECTORY";
/// How many findings [`PolisState::latest_findings`] and the status file keep.
pub const MAX_FINDINGS: usize = 200;
/// Bumped when a field changes meaning; an older daemon reading a newer file rebuilds.
pub const STATE_VERSION: u32 = 1;

const STATE_FILE: &str = "state.json";
const STATUS_FILE: &str = "daemon.json";
const PATH_FILE: &str = "polis-path";
const LOCK_FILE: &str = "daemon.lock";
const SEEN_CHRONICLE_FILE: &str = "chronicle-seen.md";
/// The durable ledger of settled contracts, a snapshot and a journal of changes (see
/// `state/settled.rs`): with 100k settled contracts it is ~7 MB, which `state.json` would
/// rewrite on every settlement.
const SETTLED_FILE: &str = "settled.ledger";
/// The JSON ledger of earlier versions: read (as untrusted) only when there is no
/// [`SETTLED_FILE`], and removed once a snapshot replaces it.
const LEGACY_SETTLED_FILE: &str = "settled.jsonl";
/// Held by whoever writes `settled.ledger`: the daemon for its whole run, a command for one
/// reconcile.
const SETTLED_LOCK_FILE: &str = "settled.lock";
const TRANSITION_LOCK_FILE: &str = "transition.lock";

#[derive(Debug, thiserror::Error)]
pub enum StateError {
    #[error("no state directory: set {STATE_DIR_ENV} (or HOME) so polisd can keep its machine-local state")]
    NoStateDir,
    #[error("cannot {op} {}: {source}; check that the state directory is writable or set {STATE_DIR_ENV}", .path.display())]
    Io {
        op: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("cannot encode the state for {}: {source}", .path.display())]
    Encode {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error("cannot encode the ledger of settled contracts for {}: {source}", .path.display())]
    EncodeLedger {
        path: PathBuf,
        #[source]
        source: postcard::Error,
    },
}

/// The bytes of a small record of the state folder, or `None` when it is missing, over `max`
/// bytes or not a regular file: a named pipe would hold the reader forever and a link to a
/// device would never end. Such a record is only a saving, and a hook must answer at once
/// whatever a corrupted or hand-made folder holds.
fn read_record(path: &Path, max: u64) -> Option<Vec<u8>> {
    use io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    // Non-blocking, so that opening a pipe nobody writes returns at once.
    let file = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
        .ok()?;
    let meta = file.metadata().ok()?;
    if !meta.is_file() || meta.len() > max {
        return None;
    }
    let mut bytes = Vec::new();
    file.take(max + 1).read_to_end(&mut bytes).ok()?;
    (bytes.len() as u64 <= max).then_some(bytes)
}

fn io_err<'a>(op: &'static str, path: &'a Path) -> impl FnOnce(io::Error) -> StateError + 'a {
    move |source| StateError::Io {
        op,
        path: path.to_path_buf(),
        source,
    }
}

/// Everything polisd remembers about one polis between runs.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct PolisState {
    pub version: u32,
    /// The canonical `_polis/` path this state belongs to.
    pub polis: PathBuf,
    /// When polisd first met this polis (RFC 3339, UTC); `None` until the first pass ends.
    /// Inbox notices go only to lines after the baseline (SPEC §3).
    pub first_met: Option<String>,
    /// Per chronicle file (path relative to `_polis/`).
    pub chronicles: BTreeMap<String, ChronicleProgress>,
    /// Notifications already sent (SPEC §9).
    pub sent_notifications: SentNotifications,
    /// Only read, from a `state.json` an older polisd wrote: the settled files it had counted.
    /// They are now in `settled.ledger` with their settlements ([`State::take_settled`]); the
    /// map is emptied on load.
    #[serde(skip_serializing)]
    pub settled: BTreeMap<String, Fingerprint>,
    /// Contract ids last seen in `contracts/open/`, to notice new ones.
    pub open_contracts: BTreeSet<String>,
    /// Amendments by id.
    pub amendments: BTreeMap<String, AmendmentState>,
    /// Card path → SHA-256 (hex) of the card bytes last seen.
    pub cards: BTreeMap<String, String>,
    /// Facts the engine has observed and acted on, by key (e.g. `amendment/<id>` → the status
    /// last seen), so a change is announced once even when its recipients would drift.
    pub known: BTreeMap<String, String>,
    /// Notifications decided but not yet delivered. They are saved before delivery, so a crash
    /// between the two loses none; delivery is idempotent, so a replay doubles none.
    pub outbox: Vec<OutboxEntry>,
    /// The notices delivered lately, oldest first: a sync tool's replace can lose one from its
    /// inbox, and the daemon delivers it again (docs/sync.md). Bounded by age and count.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub delivered: Vec<Delivered>,
    /// Settled files first counted while a git operation was stopped halfway, with what their
    /// notices name: their handoffs, post-it nudges and reflection wait for the pass after the
    /// operation ends. Kept here because the ledger already counts them, so after a restart no
    /// pass would see them as new.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub held_settled: Vec<(String, crate::protocol::contracts::contract::Heading)>,
    pub counters: Counters,
    /// Newest last, at most [`MAX_FINDINGS`].
    pub latest_findings: Vec<StoredFinding>,
}

/// A notification waiting in the outbox (see [`PolisState::outbox`]).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct OutboxEntry {
    pub kind: String,
    pub recipient: String,
    pub subject: String,
    pub discriminator: String,
    pub link: String,
    pub paragraph: String,
    /// The heading's stamp: when the notice's cause happened (`None`: the polis's clock at
    /// delivery, also for entries an older polisd queued).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub at: Option<String>,
    /// Delivered once already and lost from the inbox since: it is not watched again, so a
    /// reader who deletes it is not fought.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub again: bool,
}

/// A notice delivered (or found already delivered) lately: what it said, with the stamp it
/// was written with, and when, in seconds since the epoch by this machine's clock.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Delivered {
    pub notice: OutboxEntry,
    pub at: u64,
}

/// How far polisd has read and validated one chronicle file.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct ChronicleProgress {
    /// Byte offset just past the last complete line validated.
    pub offset: u64,
    /// Number of that last complete line (frontmatter lines count).
    pub line: u64,
    /// Hex SHA-256 of the bytes just before `offset` (up to 4 KiB): if they changed, the file
    /// was rewritten rather than appended to, and every seen line is checked again (C009).
    pub tail_hash: String,
    /// Lines at or before this offset existed when polisd first met the polis: their
    /// findings are logged but not sent to inboxes. `None` until the baseline is taken.
    pub baseline_offset: Option<u64>,
    /// Hex SHA-256 of each complete line seen → its text and how often it occurs, so a line
    /// that disappears can be named (C009).
    pub seen_lines: BTreeMap<String, SeenLine>,
    /// Lines found missing (C009), kept so the report can quote them.
    pub lost_lines: Vec<LostLine>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct SeenLine {
    pub text: String,
    pub count: u32,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct LostLine {
    pub text: String,
    /// RFC 3339 time the loss was noticed.
    pub noticed_at: String,
}

/// What polisd last saw and did about one amendment.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct AmendmentState {
    /// Path relative to `_polis/` where it was last seen.
    pub path: String,
    /// `proposed`, `ratified`, `rejected` or `expired` as last seen or set.
    pub status: String,
    /// Hex SHA-256 of the file when last tallied.
    pub hash: String,
    /// The tally outcome polisd last acted on, if any.
    pub outcome: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Counters {
    pub events: u64,
    pub rescans: u64,
    pub reconciles: u64,
    pub tallies: u64,
    pub notifications: u64,
    pub writes: u64,
    /// RFC 3339 start time of the daemon that last saved this state.
    pub started_at: Option<String>,
    pub pid: Option<u32>,
}

/// A [`Finding`] as stored (the finding type itself is not deserialisable).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct StoredFinding {
    pub code: String,
    pub severity: String,
    pub path: String,
    pub line: Option<usize>,
    pub message: String,
}

impl From<&Finding> for StoredFinding {
    fn from(f: &Finding) -> Self {
        StoredFinding {
            code: f.code.as_str().to_string(),
            severity: f.severity.as_str().to_string(),
            path: f.path.clone(),
            line: f.line,
            message: f.message.clone(),
        }
    }
}

impl PolisState {
    /// Appends findings, keeping the newest [`MAX_FINDINGS`].
    pub fn push_findings<'a>(&mut self, findings: impl IntoIterator<Item = &'a Finding>) {
        push_bounded(
            &mut self.latest_findings,
            findings.into_iter().map(StoredFinding::from),
        );
    }

    /// True when a notification of this kind and id was already sent.
    pub fn was_sent(&self, kind: &str, id: &str) -> bool {
        self.sent_notifications.contains(kind, id)
    }

    /// Records a sent notification; false if it was already recorded.
    pub fn mark_sent(&mut self, kind: &str, id: &str) -> bool {
        self.sent_notifications.insert(kind, id)
    }

    /// Forgets a sent notification whose block left its inbox without reaching the archive,
    /// so it can be delivered again.
    pub fn unmark_sent(&mut self, kind: &str, id: &str) -> bool {
        self.sent_notifications.remove(kind, id)
    }
}

fn push_bounded(list: &mut Vec<StoredFinding>, new: impl Iterator<Item = StoredFinding>) {
    list.extend(new);
    if list.len() > MAX_FINDINGS {
        list.drain(..list.len() - MAX_FINDINGS);
    }
}

/// The status file a running daemon keeps current (`daemon.json`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct DaemonStatus {
    pub pid: u32,
    pub polis: PathBuf,
    /// RFC 3339 times.
    pub started_at: String,
    pub updated_at: String,
    /// `native` or `poll` (see `watch::Mode`).
    pub watch_mode: String,
    /// The dashboard's address when the daemon serves one (`http://127.0.0.1:7341/`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dashboard: Option<String>,
    pub counters: Counters,
    /// Newest last, at most [`MAX_FINDINGS`].
    pub last_findings: Vec<StoredFinding>,
}

impl DaemonStatus {
    /// Whether the recorded process still runs: `Some` on Linux (via `/proc`), `None` where
    /// that cannot be told without extra dependencies. A pid may have been reused; callers
    /// should combine this with the daemon lock ([`State::daemon_lock_held`]).
    pub fn process_running(&self) -> Option<bool> {
        if cfg!(target_os = "linux") {
            Some(Path::new("/proc").join(self.pid.to_string()).exists())
        } else {
            None
        }
    }
}

/// The base state directory, from the environment as the module comment describes.
pub fn state_base_dir() -> Result<PathBuf, StateError> {
    if let Some(dir) = std::env::var_os(STATE_DIR_ENV).filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(dir));
    }
    if let Some(dirs) = std::env::var_os(SYSTEMD_STATE_ENV).filter(|d| !d.is_empty()) {
        // systemd joins several StateDirectory= entries with ':'.
        let first = std::env::split_paths(&dirs).next();
        if let Some(first) = first.filter(|p| !p.as_os_str().is_empty()) {
            return Ok(first);
        }
    }
    if cfg!(test) {
        // The library's own unit tests take transition locks and note appended lines for
        // temporary polises: kept out of the person's state folder.
        return Ok(std::env::temp_dir().join("polisd-unit-tests"));
    }
    let dirs = directories::ProjectDirs::from("", "", "polisd").ok_or(StateError::NoStateDir)?;
    Ok(dirs
        .state_dir()
        .unwrap_or_else(|| dirs.data_local_dir())
        .to_path_buf())
}

/// The state folder for one polis inside `base`; `polis_root` should be canonical.
pub fn polis_state_dir(base: &Path, polis_root: &Path) -> PathBuf {
    let digest = crate::protocol::digest::sha256_hex(polis_root.as_os_str().as_encoded_bytes());
    base.join(format!("polis-{}", &digest[..16]))
}

/// The lock every state transition of a polis is checked and committed under
/// ([`transition_lock`]); held until dropped.
pub struct TransitionLock {
    _file: fs::File,
    _contracts: Option<fs::File>,
}

/// Takes the polis's transition lock, waiting for whoever holds it: `transition.lock` in its
/// state directory, then an advisory lock on the `_polis/contracts/` folder itself. The file
/// lives in the state directory so that taking it writes nothing in the polis (a refused
/// action leaves `_polis/` byte for byte as it was); the folder's lock, which writes nothing
/// either, binds the processes of this machine whose state directories differ (another user,
/// a container, `POLISD_STATE_DIR`). An advisory lock binds one machine only, as the state
/// directory does. (`_polis/` itself is the running daemon's lock; `contracts/` is in every
/// polis that has anything to transition. A polis without it, or with a link there, has the
/// state directory's lock alone.)
pub fn transition_lock(polis_root: &Path) -> Result<TransitionLock, StateError> {
    let dir = polis_state_dir(&state_base_dir()?, &canonical(polis_root));
    let path = dir.join(TRANSITION_LOCK_FILE);
    let open = || {
        fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
    };
    let file = match open() {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            fs::create_dir_all(&dir).map_err(io_err("create", &dir))?;
            open().map_err(io_err("open", &path))?
        }
        Err(e) => return Err(io_err("open", &path)(e)),
    };
    fs4::fs_std::FileExt::lock_exclusive(&file).map_err(io_err("lock", &path))?;
    let contracts = polis_root.join(crate::protocol::layout::CONTRACTS_DIR);
    // A file system that cannot lock a folder (some network and FUSE mounts) leaves the state
    // directory's lock alone, as before the folder's was added, rather than stop every
    // transition.
    let folder = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW)
        .open(&contracts)
        .ok()
        .filter(
            |folder| match fs4::fs_std::FileExt::lock_exclusive(folder) {
                Ok(()) => true,
                Err(e) => {
                    tracing::debug!("could not lock {}: {e}", contracts.display());
                    false
                }
            },
        );
    Ok(TransitionLock {
        _file: file,
        _contracts: folder,
    })
}

fn canonical(polis_root: &Path) -> PathBuf {
    fs::canonicalize(polis_root).unwrap_or_else(|_| polis_root.to_path_buf())
}

/// Reads the status file of the daemon watching `polis_root`, if any (for `polisd status`).
pub fn read_status(polis_root: &Path) -> Result<Option<DaemonStatus>, StateError> {
    let dir = polis_state_dir(&state_base_dir()?, &canonical(polis_root));
    read_status_in(&dir)
}

fn read_status_in(dir: &Path) -> Result<Option<DaemonStatus>, StateError> {
    let path = dir.join(STATUS_FILE);
    match fs::read(&path) {
        // A half-understood status file is reported as no status, not as an error.
        Ok(bytes) => Ok(serde_json::from_slice(&bytes).ok()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io_err("read", &path)(e)),
    }
}

/// A polis's state, bound to its state folder. Derefs to [`PolisState`].
#[derive(Debug)]
pub struct State {
    data: PolisState,
    dir: PathBuf,
    /// Length and hash of the bytes of the last load or save, so an unchanged state is not
    /// rewritten. Not the bytes: with a notice per settled file they run to a hundred MB.
    saved: (usize, u64),
    /// Where a corrupt state file was moved, when this load had to rebuild.
    pub recovered_from: Option<PathBuf>,
    /// The settled paths an older `state.json` named, until the engine takes the ledger
    /// ([`State::take_settled`]; `None` after).
    settled_migrated: Option<Vec<String>>,
    /// Journal lines not yet appended to `settled.ledger`, and how many.
    settled_pending: Vec<u8>,
    settled_pending_lines: usize,
    /// Journal lines after the snapshot in `settled.ledger`.
    settled_journal_lines: usize,
    /// The file must be rewritten whole from the ledger (it was missing, untrusted, or the
    /// ledger was rebuilt): changes are not journalled until then.
    settled_snapshot_due: bool,
}

impl Deref for State {
    type Target = PolisState;
    fn deref(&self) -> &PolisState {
        &self.data
    }
}

impl DerefMut for State {
    fn deref_mut(&mut self) -> &mut PolisState {
        &mut self.data
    }
}

/// What reading `settled.ledger` needs, apart from the state (see [`State::settled_source`]).
#[derive(Debug)]
pub struct SettledSource {
    path: PathBuf,
    /// `None` once the ledger was taken: reading gives [`Restored::Nothing`] then.
    migrated: Option<Vec<String>>,
}

impl SettledSource {
    /// Reads and decodes the file; also how many journal lines follow its snapshot.
    pub fn read(self) -> (Restored, usize) {
        let Some(migrated) = self.migrated else {
            return (Restored::Nothing, 0);
        };
        let (restored, journal_lines) = read_settled_file(&self.path);
        let restored = match restored {
            Restored::Records { .. } => restored,
            _ if migrated.is_empty() => restored,
            Restored::Nothing => Restored::Untrusted {
                reason: "an older polisd kept only fingerprints, in state.json".to_string(),
                recorded: migrated,
            },
            Restored::Untrusted {
                reason,
                mut recorded,
            } => {
                recorded.extend(migrated);
                Restored::Untrusted { reason, recorded }
            }
        };
        (restored, journal_lines)
    }
}

/// Held while a daemon runs for a polis; dropping it releases the lock.
#[derive(Debug)]
pub struct DaemonLock {
    _file: fs::File,
    _settled: fs::File,
}

impl State {
    /// Loads the state of `polis_root` from the state directory the environment names.
    pub fn load(polis_root: &Path) -> Result<State, StateError> {
        State::load_in(&state_base_dir()?, polis_root)
    }

    /// Loads the state of `polis_root` from an explicit base directory.
    pub fn load_in(base: &Path, polis_root: &Path) -> Result<State, StateError> {
        let polis = canonical(polis_root);
        let dir = polis_state_dir(base, &polis);
        fs::create_dir_all(&dir).map_err(io_err("create the state directory", &dir))?;
        let path_file = dir.join(PATH_FILE);
        let path_line = format!("{}\n", polis.display());
        if fs::read(&path_file).ok().as_deref() != Some(path_line.as_bytes()) {
            write_atomic(&dir, PATH_FILE, path_line.as_bytes())?;
        }
        let file = dir.join(STATE_FILE);
        let mut recovered_from = None;
        let (data, saved) = match fs::read(&file) {
            Ok(bytes) => match serde_json::from_slice::<PolisState>(&bytes) {
                Ok(data) if data.version == STATE_VERSION && data.polis == polis => {
                    (data, digest(&bytes))
                }
                Ok(_) | Err(_) => {
                    let aside = set_aside(&file)?;
                    tracing::warn!(
                        file = %file.display(),
                        moved_to = %aside.display(),
                        "polisd's state for this polis was unreadable or from another version; \
                         moved it aside and rebuilding it from the folder (notices already in \
                         inboxes are not sent again)"
                    );
                    recovered_from = Some(aside);
                    (PolisState::default(), (0, 0))
                }
            },
            Err(e) if e.kind() == io::ErrorKind::NotFound => (PolisState::default(), (0, 0)),
            Err(e) => return Err(io_err("read", &file)(e)),
        };
        let mut data = data;
        data.version = STATE_VERSION;
        data.polis = polis;
        let migrated: Vec<String> = std::mem::take(&mut data.settled).into_keys().collect();
        Ok(State {
            data,
            dir,
            saved,
            recovered_from,
            settled_migrated: Some(migrated),
            settled_pending: Vec::new(),
            settled_pending_lines: 0,
            settled_journal_lines: 0,
            // Until the engine has taken the ledger: a command that loads the state for
            // something else journals nothing.
            settled_snapshot_due: true,
        })
    }

    /// What `settled.ledger` holds (the durable ledger of an earlier run, to be checked against
    /// each file's fingerprint). Read here, not on load, so a command that loads the state for
    /// something else does not read megabytes; [`Restored::Nothing`] after the first call.
    pub fn take_settled(&mut self) -> Restored {
        let (restored, journal_lines) = self.settled_source().read();
        self.settled_taken(matches!(restored, Restored::Records { .. }), journal_lines);
        restored
    }

    /// [`State::take_settled`] in two halves, so the file can be read and decoded on another
    /// thread (the daemon does it while its watches are registered): this one takes what the
    /// reading needs, [`State::settled_taken`] records what it found.
    pub fn settled_source(&mut self) -> SettledSource {
        SettledSource {
            path: self.dir.join(SETTLED_FILE),
            migrated: self.settled_migrated.take(),
        }
    }

    /// Records what [`SettledSource::read`] gave (whether its records are trusted, and how
    /// many journal lines follow the snapshot): changes are journalled only after a trusted
    /// file; otherwise the next save writes a snapshot.
    pub fn settled_taken(&mut self, trusted: bool, journal_lines: usize) {
        self.settled_journal_lines = journal_lines;
        self.settled_snapshot_due = !trusted;
    }

    /// Journals that the settled file `record.path` was counted as `record` says.
    pub fn settled_put(&mut self, record: SettledRecord) {
        if self.settled_snapshot_due {
            return;
        }
        match settled::encode_put(record.as_ref()) {
            Ok(line) => self.push_settled_line(line),
            Err(_) => self.settled_snapshot_due = true,
        }
    }

    /// Journals that the settled file `rel` is gone.
    pub fn settled_remove(&mut self, rel: &str) {
        if self.settled_snapshot_due {
            return;
        }
        match settled::encode_del(rel) {
            Ok(line) => self.push_settled_line(line),
            Err(_) => self.settled_snapshot_due = true,
        }
    }

    fn push_settled_line(&mut self, line: Vec<u8>) {
        self.settled_pending.extend(line);
        self.settled_pending_lines += 1;
    }

    /// Asks for `settled.ledger` to be rewritten whole (the ledger was rebuilt).
    pub fn require_settled_snapshot(&mut self) {
        self.settled_snapshot_due = true;
        self.settled_pending.clear();
        self.settled_pending_lines = 0;
    }

    /// Whether `settled.ledger` should be rewritten from a ledger of `files` files: it is due,
    /// or its journal has outgrown the snapshot ([`settled::journal_outgrown`]).
    pub fn settled_snapshot_due(&self, files: usize) -> bool {
        self.settled_snapshot_due
            || settled::journal_outgrown(
                self.settled_journal_lines + self.settled_pending_lines,
                files,
            )
    }

    /// Replaces `settled.ledger` with a snapshot of these records (instants computed in the
    /// zone `zone_seconds` east of UTC), atomically, streamed to the file
    /// ([`settled::write_snapshot`]: the encoded body is never held whole). Call it after
    /// [`State::save`]: see there.
    pub fn write_settled_snapshot<'a>(
        &mut self,
        zone_seconds: i32,
        records: impl IntoIterator<Item = RecordRef<'a>>,
    ) -> Result<(), StateError> {
        let refs = settled::in_path_order(records);
        self.write_settled_snapshot_in_order(zone_seconds, || refs.iter().copied())
    }

    /// [`State::write_settled_snapshot`] of records given in path order, each path once, by
    /// `records` each time it is called ([`settled::write_snapshot_in_order`]: nothing is held
    /// per record).
    pub fn write_settled_snapshot_in_order<'a, I: Iterator<Item = RecordRef<'a>>>(
        &mut self,
        zone_seconds: i32,
        records: impl Fn() -> I,
    ) -> Result<(), StateError> {
        write_ledger_snapshot(&self.dir, |out| {
            settled::write_snapshot_in_order(out, zone_seconds, records)
        })?;
        self.settled_snapshot_due = false;
        self.settled_pending.clear();
        self.settled_pending_lines = 0;
        self.settled_journal_lines = 0;
        Ok(())
    }

    /// This polis's state folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Writes `state.json` atomically, unless nothing changed since the last load or save, then
    /// appends pending changes to `settled.ledger` (only after a snapshot: a journal line never
    /// starts the file). In that order: the outbox in `state.json`
    /// holds the notices a new settlement calls for, so a crash between the two writes leaves
    /// the settlement unrecorded (seen as new again, its notices deduplicated) rather than
    /// recorded with its notices lost.
    pub fn save(&mut self) -> Result<(), StateError> {
        let file = self.dir.join(STATE_FILE);
        // Encoded twice when it changed, never held: with a notice per settled file the bytes
        // run to a hundred MB, and holding them was the peak of a first meeting.
        let encode = |out: &mut dyn io::Write| -> Result<(), serde_json::Error> {
            serde_json::to_writer_pretty(&mut *out, &self.data)?;
            out.write_all(b"\n").map_err(serde_json::Error::io)
        };
        let mut hashed = Digest::default();
        encode(&mut hashed).map_err(|source| StateError::Encode {
            path: file.clone(),
            source,
        })?;
        let saved = hashed.finish();
        if saved != self.saved {
            replace_file_with(&self.dir, STATE_FILE, true, |f| {
                let mut out = io::BufWriter::new(f);
                encode(&mut out).map_err(io::Error::from)?;
                io::Write::flush(&mut out)
            })
            .map_err(io_err("replace", &file))?;
            self.saved = saved;
        }
        if !self.settled_pending.is_empty() {
            use std::io::Write;
            let path = self.dir.join(SETTLED_FILE);
            let appended = fs::OpenOptions::new()
                .append(true)
                .open(&path)
                .and_then(|mut f| {
                    f.write_all(&self.settled_pending)
                        .and_then(|_| f.sync_data())
                });
            match appended {
                Ok(()) => {}
                // Removed behind polisd's back: the next snapshot writes it whole.
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    self.require_settled_snapshot();
                    return Ok(());
                }
                Err(e) => return Err(io_err("append to", &path)(e)),
            }
            self.settled_pending.clear();
            self.settled_journal_lines += self.settled_pending_lines;
            self.settled_pending_lines = 0;
        }
        Ok(())
    }

    /// The chronicle bytes polisd has already validated, mirrored in the state folder so a
    /// lost line (C009) can be named without keeping every line in `state.json`.
    pub fn read_seen_chronicle(&self) -> Vec<u8> {
        fs::read(self.dir.join(SEEN_CHRONICLE_FILE)).unwrap_or_default()
    }

    /// Brings the mirror, which holds `seen[..from]`, up to `seen` (the chronicle up to the
    /// end of its last validated line) by appending the rest. A mirror of another length is
    /// replaced whole: cut short (a full disk, a damaged folder) or ahead of `state.json` (a
    /// crash between this append and the state's save), an append would join two lines or
    /// hold one twice, and a later rewrite of the chronicle would tell it lost (C009).
    pub fn extend_seen_chronicle(&self, seen: &[u8], from: usize) -> Result<(), StateError> {
        use std::io::Write;
        let path = self.dir.join(SEEN_CHRONICLE_FILE);
        let mut file = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(io_err("append to", &path))?;
        let len = file.metadata().map_err(io_err("inspect", &path))?.len();
        if len != from as u64 {
            drop(file);
            return self.reset_seen_chronicle(seen);
        }
        file.write_all(&seen[from..])
            .map_err(io_err("append to", &path))
    }

    /// Replaces the mirror (after a rewrite, rollover or merge of the chronicle).
    pub fn reset_seen_chronicle(&self, bytes: &[u8]) -> Result<(), StateError> {
        write_atomic(&self.dir, SEEN_CHRONICLE_FILE, bytes)
    }

    /// Writes the status file (`daemon.json`) for `polisd status`.
    pub fn write_status(&self, status: &DaemonStatus) -> Result<(), StateError> {
        let file = self.dir.join(STATUS_FILE);
        let mut bytes = serde_json::to_vec_pretty(status)
            .map_err(|source| StateError::Encode { path: file, source })?;
        bytes.push(b'\n');
        replace_file(&self.dir, STATUS_FILE, &bytes, false)
    }

    /// A status built from this state's counters and findings, for the daemon to stamp.
    pub fn status(&self, started_at: &str, watch_mode: &str) -> DaemonStatus {
        DaemonStatus {
            pid: std::process::id(),
            polis: self.data.polis.clone(),
            started_at: started_at.to_string(),
            updated_at: now_rfc3339(),
            watch_mode: watch_mode.to_string(),
            dashboard: None,
            counters: self.data.counters.clone(),
            last_findings: self.data.latest_findings.clone(),
        }
    }

    /// Reads this polis's status file.
    pub fn read_status(&self) -> Result<Option<DaemonStatus>, StateError> {
        read_status_in(&self.dir)
    }

    /// Removes the status file (clean shutdown: no daemon is watching any more).
    pub fn clear_status(&self) -> Result<(), StateError> {
        let file = self.dir.join(STATUS_FILE);
        match fs::remove_file(&file) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(io_err("remove", &file)(e)),
        }
    }

    /// Takes the per-polis daemon lock, or `None` when another process holds it (a second
    /// daemon for the same polis on this machine must not run).
    pub fn try_lock_daemon(&self) -> Result<Option<DaemonLock>, StateError> {
        let path = self.dir.join(LOCK_FILE);
        let file = fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(io_err("open", &path))?;
        match fs4::fs_std::FileExt::try_lock_exclusive(&file) {
            Ok(true) => {}
            Ok(false) => return Ok(None),
            Err(e) => return Err(io_err("lock", &path)(e)),
        }
        // The ledger's writer lock, for the whole run: a command that began reconciling before
        // this daemon started holds it for one reconcile, and is waited for here, before the
        // engine reads the ledger.
        let settled = open_settled_lock(&self.dir)?;
        fs4::fs_std::FileExt::lock_exclusive(&settled)
            .map_err(io_err("lock", &self.dir.join(SETTLED_LOCK_FILE)))?;
        Ok(Some(DaemonLock {
            _file: file,
            _settled: settled,
        }))
    }

    /// True when some process holds the daemon lock (for `polisd status`).
    pub fn daemon_lock_held(&self) -> Result<bool, StateError> {
        Ok(self.try_lock_daemon()?.is_none())
    }
}

/// Where the session hooks of one citizen keep their rate limit on this machine:
/// `hooks/<citizen>.json` in the polis's state folder. Small and separate from `state.json`, so
/// a hook never loads (or rewrites) the daemon's state.
fn hook_file(polis_root: &Path, citizen: &str) -> Result<(PathBuf, PathBuf), StateError> {
    let dir = polis_state_dir(&state_base_dir()?, &canonical(polis_root)).join("hooks");
    let name = format!("{citizen}.json");
    Ok((dir, PathBuf::from(name)))
}

/// The rate-limit record of `citizen`'s hooks, or an empty one when there is none or it
/// cannot be read.
fn hook_record(polis_root: &Path, citizen: &str) -> HookRecord {
    hook_file(polis_root, citizen)
        .ok()
        .and_then(|(dir, name)| read_record(&dir.join(name), 4 * 1024))
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or_default()
}

/// Reads `citizen`'s hook record, changes it with `change` and writes it back, under the
/// record's own lock: hooks of one citizen's sessions fire at once, and each replacing the
/// record it read lost what another had just written (a session's primer remembered, then
/// forgotten). Without the lock (in time, or at all), it writes anyway: the record is only a
/// saving.
fn update_hook_record(
    polis_root: &Path,
    citizen: &str,
    change: impl FnOnce(&mut HookRecord) -> bool,
) -> Result<(), StateError> {
    let _lock = hook_lock(polis_root, citizen, "record.lock", HOOK_RECORD_WAIT)
        .ok()
        .flatten();
    let mut record = hook_record(polis_root, citizen);
    if !change(&mut record) {
        return Ok(());
    }
    write_hook_record(polis_root, citizen, &record)
}

/// How long a hook waits for the lock of its record: the few milliseconds of a write.
const HOOK_RECORD_WAIT: std::time::Duration = std::time::Duration::from_secs(1);

fn write_hook_record(
    polis_root: &Path,
    citizen: &str,
    record: &HookRecord,
) -> Result<(), StateError> {
    let (dir, name) = hook_file(polis_root, citizen)?;
    fs::create_dir_all(&dir).map_err(io_err("create", &dir))?;
    let mut bytes = serde_json::to_vec(record).map_err(|source| StateError::Encode {
        path: dir.join(&name),
        source,
    })?;
    bytes.push(b'\n');
    replace_file(&dir, &name.to_string_lossy(), &bytes, false)
}

/// When the hooks of `citizen` last looked at its inbox on this machine, as recorded (the
/// recorded time, never a file's mtime). `None` when never, or unreadable.
pub fn hook_last_check(polis_root: &Path, citizen: &str) -> Option<chrono::DateTime<chrono::Utc>> {
    chrono::DateTime::parse_from_rfc3339(&hook_record(polis_root, citizen).last_check)
        .ok()
        .map(|t| t.with_timezone(&chrono::Utc))
}

/// The agent sessions whose primer a hook of one citizen remembers: enough for the sessions
/// a person runs at once on one machine. An older one forgotten is primed again, once.
const PRIMED_SESSIONS: usize = 16;

/// Whether a hook already primed agent session `session` (the payload's `session_id`) for
/// `citizen` on this machine. Keyed by `citizen`, which may also be a name starting with `_`
/// for a session that has no citizen id yet (no id starts with one).
pub fn hook_session_primed(polis_root: &Path, citizen: &str, session: &str) -> bool {
    let key = crate::protocol::digest::short_id(session.as_bytes());
    hook_record(polis_root, citizen).primed.contains(&key)
}

/// Records that a hook primed agent session `session` for `citizen`, forgetting the oldest
/// past [`PRIMED_SESSIONS`].
pub fn set_hook_session_primed(
    polis_root: &Path,
    citizen: &str,
    session: &str,
) -> Result<(), StateError> {
    let key = crate::protocol::digest::short_id(session.as_bytes());
    update_hook_record(polis_root, citizen, |record| {
        if record.primed.contains(&key) {
            return false;
        }
        record.primed.push(key);
        let excess = record.primed.len().saturating_sub(PRIMED_SESSIONS);
        record.primed.drain(..excess);
        true
    })
}

/// Held while one notices hook of a citizen looks at its inbox, shows what is new and marks it
/// read, on this machine; released when dropped.
#[derive(Debug)]
pub struct HookDeliveryLock {
    _file: fs::File,
}

/// Waits up to `wait` for the lock of `citizen`'s notices hooks: sessions of one citizen
/// whose hooks fire at once would otherwise all find the same notices unread and show them
/// each. `Ok(None)` when another hook still holds it when the wait is over.
pub fn hook_delivery_lock(
    polis_root: &Path,
    citizen: &str,
    wait: std::time::Duration,
) -> Result<Option<HookDeliveryLock>, StateError> {
    hook_lock(polis_root, citizen, "lock", wait)
}

/// Waits up to `wait` for the lock `<citizen>.<suffix>` in the hooks' folder; `Ok(None)` when
/// another process still holds it then.
fn hook_lock(
    polis_root: &Path,
    citizen: &str,
    suffix: &str,
    wait: std::time::Duration,
) -> Result<Option<HookDeliveryLock>, StateError> {
    use std::os::unix::fs::OpenOptionsExt;
    let (dir, _) = hook_file(polis_root, citizen)?;
    fs::create_dir_all(&dir).map_err(io_err("create", &dir))?;
    let path = dir.join(format!("{citizen}.{suffix}"));
    // Non-blocking and only a regular file, as every record here (see `read_record`).
    let file = fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(&path)
        .map_err(io_err("open", &path))?;
    if !file.metadata().is_ok_and(|m| m.is_file()) {
        return Err(io_err("lock", &path)(io::Error::other(
            "not a regular file",
        )));
    }
    let deadline = std::time::Instant::now() + wait;
    loop {
        match fs4::fs_std::FileExt::try_lock_exclusive(&file) {
            Ok(true) => return Ok(Some(HookDeliveryLock { _file: file })),
            Ok(false) if std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            Ok(false) => return Ok(None),
            Err(e) => return Err(io_err("lock", &path)(e)),
        }
    }
}

/// Records that the hooks of `citizen` looked at its inbox at `at`.
pub fn set_hook_last_check(
    polis_root: &Path,
    citizen: &str,
    at: chrono::DateTime<chrono::Utc>,
) -> Result<(), StateError> {
    update_hook_record(polis_root, citizen, |record| {
        record.last_check = at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
        true
    })
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct HookRecord {
    #[serde(default)]
    last_check: String,
    /// Digests of the agent sessions primed most recently, oldest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    primed: Vec<String>,
}

/// Whether a daemon holds `polis_root`'s lock, without loading (or creating) its state: what a
/// one-shot command asks before doing work the daemon would do anyway. `false` when no daemon
/// ever ran for the polis.
pub fn daemon_running(polis_root: &Path) -> bool {
    let Ok(base) = state_base_dir() else {
        return false;
    };
    daemon_running_in(&base, polis_root)
}

fn daemon_running_in(base: &Path, polis_root: &Path) -> bool {
    let path = polis_state_dir(base, &canonical(polis_root)).join(LOCK_FILE);
    let Ok(file) = fs::OpenOptions::new().read(true).open(&path) else {
        return false;
    };
    // A shared probe: it fails only while the daemon holds its exclusive lock.
    matches!(fs4::fs_std::FileExt::try_lock_shared(&file), Ok(false))
}

/// The settled paths an older polisd's `state.json` in `dir` named (see [`PolisState::settled`]).
fn migrated_settled(dir: &Path) -> Vec<String> {
    #[derive(Deserialize)]
    struct Old {
        #[serde(default)]
        settled: BTreeMap<String, serde::de::IgnoredAny>,
    }
    fs::read(dir.join(STATE_FILE))
        .ok()
        .and_then(|b| serde_json::from_slice::<Old>(&b).ok())
        .map(|o| o.settled.into_keys().collect())
        .unwrap_or_default()
}

/// The current time as RFC 3339 UTC, seconds precision.
pub fn now_rfc3339() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

fn set_aside(file: &Path) -> Result<PathBuf, StateError> {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let aside = file.with_file_name(format!("{STATE_FILE}.corrupt-{secs}"));
    fs::rename(file, &aside).map_err(io_err("move aside", file))?;
    Ok(aside)
}

/// What [`State::save`] compares: the length and a 64-bit hash of the bytes (the empty state
/// file, never written, is `(0, 0)`).
fn digest(bytes: &[u8]) -> (usize, u64) {
    let mut d = Digest::default();
    io::Write::write_all(&mut d, bytes).expect("a digest takes every byte");
    d.finish()
}

/// Bytes per piece a [`Digest`] hashes.
const DIGEST_BLOCK: usize = 1 << 16;

/// The length and a 64-bit hash (foldhash) of bytes written in any pieces: they are hashed in
/// blocks of [`DIGEST_BLOCK`], so the same bytes give the same digest however they came.
struct Digest {
    len: usize,
    block: Vec<u8>,
    hasher: foldhash::quality::FoldHasher,
}

impl Default for Digest {
    fn default() -> Digest {
        use std::hash::BuildHasher;
        Digest {
            len: 0,
            block: Vec::with_capacity(DIGEST_BLOCK),
            hasher: foldhash::quality::FixedState::with_seed(0).build_hasher(),
        }
    }
}

impl Digest {
    fn finish(mut self) -> (usize, u64) {
        use std::hash::Hasher;
        self.hasher.write(&self.block);
        (self.len, self.hasher.finish())
    }
}

impl io::Write for Digest {
    fn write(&mut self, mut buf: &[u8]) -> io::Result<usize> {
        use std::hash::Hasher;
        let written = buf.len();
        self.len += written;
        while !buf.is_empty() {
            let take = buf.len().min(DIGEST_BLOCK - self.block.len());
            self.block.extend_from_slice(&buf[..take]);
            buf = &buf[take..];
            if self.block.len() == DIGEST_BLOCK {
                self.hasher.write(&self.block);
                self.block.clear();
            }
        }
        Ok(written)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fn write_atomic(dir: &Path, name: &str, bytes: &[u8]) -> Result<(), StateError> {
    replace_file(dir, name, bytes, true)
}

/// [`replace_file`] with the bytes written by `write` (durable: synced before and after the
/// rename).
fn replace_file_with(
    dir: &Path,
    name: &str,
    durable: bool,
    write: impl FnOnce(&mut fs::File) -> io::Result<()>,
) -> io::Result<()> {
    let mut tmp = tempfile::Builder::new()
        .prefix(".polisd-")
        .suffix(".tmp")
        .tempfile_in(dir)?;
    write(tmp.as_file_mut())?;
    if durable {
        tmp.as_file().sync_all()?;
    }
    tmp.persist(dir.join(name)).map_err(|e| e.error)?;
    if durable {
        if let Ok(d) = fs::File::open(dir) {
            let _ = d.sync_all();
        }
    }
    Ok(())
}

/// Replaces `dir/name` by renaming a temporary file over it, so a reader sees the old bytes or
/// the new, never a mix. `durable` also syncs the file and the folder before and after the
/// rename; the status file, rewritten by every pass and worthless after a crash, skips that.
fn replace_file(dir: &Path, name: &str, bytes: &[u8], durable: bool) -> Result<(), StateError> {
    let target = dir.join(name);
    let mut tmp = tempfile::Builder::new()
        .prefix(".polisd-")
        .suffix(".tmp")
        .tempfile_in(dir)
        .map_err(io_err("create a temporary file in", dir))?;
    tmp.write_all(bytes)
        .and_then(|_| {
            if durable {
                tmp.as_file().sync_all()
            } else {
                Ok(())
            }
        })
        .map_err(io_err("write", &target))?;
    tmp.persist(&target)
        .map_err(|e| io_err("replace", &target)(e.error))?;
    if durable {
        if let Ok(d) = fs::File::open(dir) {
            let _ = d.sync_all();
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn listed_names_give_back_each_name_in_order() {
        let given = ["a.md", "", "contract-with-a-longer-name.md", "é.md"];
        let names: ListedNames = given.iter().copied().collect();
        assert_eq!(names.len(), 4);
        assert_eq!(names.iter().len(), 4);
        assert_eq!(names.iter().collect::<Vec<_>>(), given);
        assert!(ListedNames::default().iter().next().is_none());
    }

    use super::*;

    #[test]
    fn a_fingerprint_taken_within_a_tick_of_its_change_may_change_unseen() {
        use std::time::{Duration, UNIX_EPOCH};
        let changed = |ctime_ns: i64| Fingerprint {
            ctime_ns,
            ..Fingerprint::default()
        };
        let at = |ns: u64| UNIX_EPOCH + Duration::from_nanos(ns);
        let base: i64 = 1_780_000_000_123_456_789;
        let fine = changed(base);
        // Within 20 ms of a fine-grained change, and in the same nanosecond: a later write of
        // the same size in that tick would leave the fingerprint as it is.
        assert!(fine.may_change_unseen(at(base as u64)));
        assert!(fine.may_change_unseen(at(base as u64 + 19_999_999)));
        assert!(!fine.may_change_unseen(at(base as u64 + 20_000_000)));
        assert!(!fine.may_change_unseen(at(base as u64 + 3_600_000_000_000)));
        // A file system that keeps whole seconds stamps every change of two seconds alike.
        let whole = changed(1_780_000_000_000_000_000);
        assert!(whole.may_change_unseen(at(1_780_000_001_500_000_000)));
        assert!(!whole.may_change_unseen(at(1_780_000_002_000_000_000)));
        // A clock behind the change (set back, or another machine's) tells nothing either.
        assert!(fine.may_change_unseen(at(base as u64 - 5_000_000_000)));
        assert!(fine.may_change_unseen(UNIX_EPOCH - Duration::from_secs(1)));
    }

    // Field by field: the fingerprint grows fields (ctime, mode, inode) that these tests
    // leave at their defaults.
    #[allow(clippy::field_reassign_with_default)]
    fn record(rel: &str, n: u64) -> SettledRecord {
        let mut fingerprint = Fingerprint::default();
        fingerprint.size = n;
        fingerprint.mtime_ns = n as i64;
        SettledRecord {
            path: rel.to_string(),
            fingerprint,
            reread: false,
            settlement: None,
            unannounced: false,
        }
    }

    #[test]
    fn a_folder_listed_while_stated_gives_each_listed_name_its_own_fingerprint() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("contracts/settled");
        fs::create_dir_all(&dir).unwrap();
        // Several chunks and a partial one, among names the listing leaves out.
        for i in 0..1000 {
            fs::write(dir.join(format!("c-{i}.md")), "x".repeat(i)).unwrap();
        }
        // Names the listing leaves out or reports, and one it gives that is a folder.
        for name in [
            "notes.txt",
            ".c-1.md.swp",
            ".polisd-1-x.md",
            "c-2.md~",
            "c-3.md.tmp",
            "c-4.sync-conflict-20260101-120000-ABCDEFG.md",
            "c-5 (conflict 1).md",
            "c-6 (Bob's conflicted copy 2026-01-01).md",
        ] {
            fs::write(dir.join(name), "n").unwrap();
        }
        fs::create_dir(dir.join("folder.md")).unwrap();
        {
            use std::os::unix::ffi::OsStrExt;
            let bad = std::ffi::OsStr::from_bytes(b"bad-\xff.md");
            fs::write(dir.join(bad), "b").unwrap();
        }
        let mut found = Vec::new();
        let listing = listed_fingerprints(root.path(), "contracts/settled", ".md", &mut found);
        let (names, now): (Vec<String>, Vec<Option<Fingerprint>>) =
            listing.iter().map(|(n, f)| (n.to_string(), f)).unzip();
        let mut found_by_list = Vec::new();
        let mut want = crate::fs::snapshot::list_names(
            root.path(),
            "contracts/settled",
            ".md",
            &mut found_by_list,
        );
        assert_eq!(found, found_by_list);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(names.len(), 1001);
        assert_eq!(now.len(), 1001);
        for (name, fingerprint) in names.iter().zip(&now) {
            let meta = fs::symlink_metadata(dir.join(name)).unwrap();
            assert_eq!(*fingerprint, Some(Fingerprint::of(&meta)), "{name}");
        }
        let mut got = names.clone();
        got.sort();
        want.sort();
        assert_eq!(got, want);
        // No folder: nothing listed.
        let listing = listed_fingerprints(root.path(), "contracts/open", ".md", &mut Vec::new());
        assert!(listing.is_empty());
    }

    #[test]
    fn fingerprints_in_a_folder_are_those_of_the_full_paths() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("contracts/settled");
        fs::create_dir_all(&dir).unwrap();
        let mut rels = Vec::new();
        for i in 0..300 {
            fs::write(dir.join(format!("c-{i}.md")), "x".repeat(i)).unwrap();
            rels.push(format!("contracts/settled/c-{i}.md"));
        }
        rels.push("contracts/settled/gone.md".to_string());
        fs::write(root.path().join("elsewhere.md"), "y").unwrap();
        rels.push("elsewhere.md".to_string());
        let got = fingerprints_in(root.path(), "contracts/settled", &rels);
        let want: Vec<Option<Fingerprint>> = rels
            .iter()
            .map(|r| {
                fs::symlink_metadata(root.path().join(r))
                    .ok()
                    .map(|m| Fingerprint::of(&m))
            })
            .collect();
        assert_eq!(got, want);
        assert_eq!(got[300], None);
        assert!(got[301].is_some());
    }

    #[test]
    fn the_ledger_has_one_writer_a_daemon_or_one_command_at_a_time() {
        let base = tempfile::tempdir().unwrap();
        let polis = tempfile::tempdir().unwrap();
        // A command holds the ledger: a second command waits for it (as a daemon starting
        // meanwhile does, in `try_lock_daemon`, before it reads the ledger).
        let (mut held, restored) = LedgerFile::open_in(base.path(), polis.path())
            .unwrap()
            .unwrap();
        assert_eq!(restored, Restored::Nothing);
        held.write_snapshot(0, [record("contracts/settled/a.md", 1).as_ref()])
            .unwrap();
        let (b, p) = (base.path().to_path_buf(), polis.path().to_path_buf());
        let waiting = std::thread::spawn(move || {
            let (mut second, restored) = LedgerFile::open_in(&b, &p).unwrap().unwrap();
            second
                .append([Ok(record("contracts/settled/c.md", 3))])
                .unwrap();
            restored
        });
        std::thread::sleep(std::time::Duration::from_millis(50));
        assert!(!waiting.is_finished(), "the second command did not wait");
        held.append([Ok(record("contracts/settled/b.md", 2))])
            .unwrap();
        drop(held);
        match waiting.join().unwrap() {
            Restored::Records { records, .. } => assert_eq!(records.len(), 2),
            other => panic!("{other:?}"),
        }
        // A running daemon holds it for good: a command does not touch the ledger then.
        let state = State::load_in(base.path(), polis.path()).unwrap();
        let lock = state.try_lock_daemon().unwrap().unwrap();
        assert!(LedgerFile::open_in(base.path(), polis.path())
            .unwrap()
            .is_none());
        drop(lock);
        let mut state = State::load_in(base.path(), polis.path()).unwrap();
        match state.take_settled() {
            Restored::Records { records, .. } => assert_eq!(records.len(), 3),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_ledger_read_ahead_of_its_lock_is_used_only_while_it_is_still_the_file() {
        let base = tempfile::tempdir().unwrap();
        let polis = tempfile::tempdir().unwrap();
        let (a, b) = ("contracts/settled/a.md", "contracts/settled/b.md");
        let restore = |ahead| {
            let locked = LedgerFile::lock_in(base.path(), polis.path())
                .unwrap()
                .unwrap();
            let (file, restored) = locked.restore(ahead);
            drop(file);
            match restored {
                Restored::Records { records, .. } => records,
                other => panic!("{other:?}"),
            }
        };
        let (mut file, _) = LedgerFile::open_in(base.path(), polis.path())
            .unwrap()
            .unwrap();
        file.write_snapshot(0, [record(a, 1).as_ref()]).unwrap();
        drop(file);
        // Unchanged: what was read ahead is what the lock's holder finds.
        let ahead = LedgerAhead::read_in(base.path(), polis.path()).unwrap();
        assert_eq!(restore(Some(ahead)).len(), 1);
        // Another command journals a change between the read and the lock: the file is read
        // again, and the change is there.
        let ahead = LedgerAhead::read_in(base.path(), polis.path()).unwrap();
        let (mut other, _) = LedgerFile::open_in(base.path(), polis.path())
            .unwrap()
            .unwrap();
        other.append([Ok(record(b, 2))]).unwrap();
        drop(other);
        assert_eq!(
            restore(Some(ahead)),
            Records::from_refs([record(a, 1).as_ref(), record(b, 2).as_ref()])
        );
        // A new snapshot of the same length replaces it: another file, read again.
        let (mut other, _) = LedgerFile::open_in(base.path(), polis.path())
            .unwrap()
            .unwrap();
        other
            .write_snapshot(0, [record(a, 1).as_ref(), record(b, 2).as_ref()])
            .unwrap();
        drop(other);
        let ahead = LedgerAhead::read_in(base.path(), polis.path()).unwrap();
        let (mut other, _) = LedgerFile::open_in(base.path(), polis.path())
            .unwrap()
            .unwrap();
        other
            .write_snapshot(0, [record(a, 3).as_ref(), record(b, 4).as_ref()])
            .unwrap();
        drop(other);
        assert_eq!(
            fs::metadata(&ahead.path).unwrap().len(),
            ahead.len,
            "the test needs a snapshot of the same length"
        );
        assert_eq!(
            restore(Some(ahead)),
            Records::from_refs([record(a, 3).as_ref(), record(b, 4).as_ref()])
        );
    }

    #[test]
    fn settled_records_live_in_their_snapshot_and_journal() {
        let base = tempfile::tempdir().unwrap();
        let polis = tempfile::tempdir().unwrap();
        let (a, b) = ("contracts/settled/a.md", "contracts/settled/b.md");
        let mut s = State::load_in(base.path(), polis.path()).unwrap();
        assert_eq!(s.take_settled(), Restored::Nothing);
        assert!(s.settled_snapshot_due(0));
        // Before the first snapshot nothing is journalled: the snapshot will hold it.
        s.settled_put(record(a, 9));
        s.save().unwrap();
        assert!(!s.dir().join(SETTLED_FILE).exists());
        s.write_settled_snapshot(3600, [record(a, 1).as_ref(), record(b, 2).as_ref()])
            .unwrap();
        s.settled_put(record(a, 3));
        s.settled_remove(b);
        s.save().unwrap();
        assert!(!s.settled_snapshot_due(2));
        let json = fs::read_to_string(s.dir().join(STATE_FILE)).unwrap();
        assert!(!json.contains("contracts/settled"), "{json}");
        let mut again = State::load_in(base.path(), polis.path()).unwrap();
        assert_eq!(
            again.take_settled(),
            Restored::Records {
                zone_seconds: 3600,
                records: Records::from_refs([record(a, 3).as_ref()])
            }
        );
        assert_eq!(again.take_settled(), Restored::Nothing);
        // An older state.json with the map inline names its paths, untrusted.
        let old = json.replacen(
            "\"sent_notifications\"",
            "\"settled\": {\"contracts/settled/c.md\": {\"size\": 4, \"mtime_ns\": 4, \"hash\": \"4\"}},\n  \"sent_notifications\"",
            1,
        );
        assert_ne!(old, json);
        fs::write(s.dir().join(STATE_FILE), old).unwrap();
        fs::remove_file(s.dir().join(SETTLED_FILE)).unwrap();
        let mut migrated = State::load_in(base.path(), polis.path()).unwrap();
        assert!(migrated.settled.is_empty());
        match migrated.take_settled() {
            Restored::Untrusted { recorded, .. } => {
                assert_eq!(recorded, vec!["contracts/settled/c.md".to_string()])
            }
            other => panic!("{other:?}"),
        }
        assert!(migrated.settled_snapshot_due(1));
    }

    #[test]
    fn the_json_ledger_of_an_earlier_version_is_read_once_untrusted_and_replaced() {
        let base = tempfile::tempdir().unwrap();
        let polis = tempfile::tempdir().unwrap();
        let mut s = State::load_in(base.path(), polis.path()).unwrap();
        let legacy = s.dir().join(LEGACY_SETTLED_FILE);
        fs::write(
            &legacy,
            "{\"format\":\"polisd-settled-ledger\",\"version\":2}\n{\"p\":\"contracts/settled/a.md\",\"f\":{}}\n",
        )
        .unwrap();
        match s.take_settled() {
            Restored::Untrusted { recorded, reason } => {
                assert!(reason.contains("older polisd"), "{reason}");
                assert_eq!(recorded, vec!["contracts/settled/a.md".to_string()]);
            }
            other => panic!("{other:?}"),
        }
        assert!(s.settled_snapshot_due(1));
        s.write_settled_snapshot(0, [record("contracts/settled/a.md", 1).as_ref()])
            .unwrap();
        assert!(!legacy.exists());
        let mut again = State::load_in(base.path(), polis.path()).unwrap();
        assert!(matches!(again.take_settled(), Restored::Records { .. }));
    }

    #[test]
    fn state_round_trips_and_skips_unchanged_saves() {
        let base = tempfile::tempdir().unwrap();
        let polis = tempfile::tempdir().unwrap();
        let mut s = State::load_in(base.path(), polis.path()).unwrap();
        assert_eq!(s.counters.events, 0);
        s.counters.events = 3;
        s.mark_sent("contract-routed", "0123456789abcdef");
        s.chronicles
            .entry("chronicle.md".into())
            .or_default()
            .offset = 42;
        s.save().unwrap();
        let file = s.dir().join(STATE_FILE);
        let mtime = fs::metadata(&file).unwrap().modified().unwrap();
        let old = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1);
        fs::File::options()
            .write(true)
            .open(&file)
            .unwrap()
            .set_modified(old)
            .unwrap();
        s.save().unwrap();
        assert_eq!(fs::metadata(&file).unwrap().modified().unwrap(), old);
        assert_ne!(mtime, old);

        let again = State::load_in(base.path(), polis.path()).unwrap();
        assert_eq!(again.counters.events, 3);
        assert!(again.was_sent("contract-routed", "0123456789abcdef"));
        assert_eq!(again.chronicles["chronicle.md"].offset, 42);
        assert_eq!(
            fs::read_to_string(again.dir().join(PATH_FILE)).unwrap(),
            format!("{}\n", fs::canonicalize(polis.path()).unwrap().display())
        );
    }

    /// The settlements a stopped git operation holds come back with the state; with none held,
    /// `state.json` does not name them (its bytes stay those of earlier versions).
    #[test]
    fn held_settlements_survive_a_reload_and_leave_no_trace_when_none() {
        let base = tempfile::tempdir().unwrap();
        let polis = tempfile::tempdir().unwrap();
        let mut s = State::load_in(base.path(), polis.path()).unwrap();
        s.save().unwrap();
        let json = fs::read_to_string(s.dir().join(STATE_FILE)).unwrap();
        assert!(!json.contains("held_settled"), "{json}");
        let heading = crate::protocol::contracts::contract::Heading {
            opened_by: Some("alice-dev".into()),
            owner: Some("bob-dev".into()),
            title: Some("Fix login".into()),
            quality: Some(4),
            suggests: true,
        };
        let held = vec![("contracts/settled/fix-login.md".to_string(), heading)];
        s.held_settled = held.clone();
        s.save().unwrap();
        let again = State::load_in(base.path(), polis.path()).unwrap();
        assert_eq!(again.held_settled, held);
    }

    /// `state.json` is written as it always was (pretty JSON and a newline) though never held
    /// whole, and a state loaded then saved unchanged is not written again, however large.
    #[test]
    fn a_large_state_is_written_as_before_and_not_again_once_loaded() {
        let base = tempfile::tempdir().unwrap();
        let polis = tempfile::tempdir().unwrap();
        let mut s = State::load_in(base.path(), polis.path()).unwrap();
        for i in 0..5000u64 {
            s.mark_sent("record-finding", &format!("{:016x}", i * 7919));
        }
        s.save().unwrap();
        let file = s.dir().join(STATE_FILE);
        let bytes = fs::read(&file).unwrap();
        assert!(bytes.len() > 2 * DIGEST_BLOCK);
        let mut expected = serde_json::to_vec_pretty(&s.data).unwrap();
        expected.push(b'\n');
        assert!(bytes == expected, "the same bytes as before");
        let old = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1);
        let mark_old = || {
            fs::File::options()
                .write(true)
                .open(&file)
                .unwrap()
                .set_modified(old)
                .unwrap()
        };
        mark_old();
        let mut again = State::load_in(base.path(), polis.path()).unwrap();
        again.save().unwrap();
        assert_eq!(fs::metadata(&file).unwrap().modified().unwrap(), old);
        let mut pieces = Digest::default();
        for piece in bytes.chunks(1000).chain([&b""[..]]) {
            io::Write::write_all(&mut pieces, piece).unwrap();
        }
        assert_eq!(pieces.finish(), digest(&bytes));
        again.counters.events += 1;
        again.save().unwrap();
        assert_ne!(fs::metadata(&file).unwrap().modified().unwrap(), old);
    }

    #[test]
    fn findings_are_bounded_newest_kept() {
        let mut s = PolisState::default();
        let many: Vec<_> = (0..MAX_FINDINGS + 5)
            .map(|i| {
                Finding::warning(
                    crate::protocol::finding::Code::C005,
                    "chronicle.md",
                    Some(i),
                    "x",
                )
            })
            .collect();
        s.push_findings(&many);
        assert_eq!(s.latest_findings.len(), MAX_FINDINGS);
        assert_eq!(
            s.latest_findings.last().unwrap().line,
            Some(MAX_FINDINGS + 4)
        );
        assert_eq!(s.latest_findings[0].line, Some(5));
    }
}
