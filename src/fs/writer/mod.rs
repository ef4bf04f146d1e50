//! The one module that writes files (STYLE "One writer", SPEC §11).
//!
//! A [`Writer`] is bound to one canonical `_polis/` root and takes every target as a path
//! relative to it. It refuses anything that could land outside the root: absolute paths, `..`,
//! and any path whose existing components (the file included) are symbolic links or not what
//! they should be (a folder where a file belongs, a FIFO). It knows four ways to write —
//! atomic replace, locked append, compare-before-replace of an agent's file, and moving or
//! removing a file inside the root — and keeps the own-write ledger that lets the engine
//! ignore the events its own writes cause.
//!
//! It never decides *what* to write; callers bring the bytes. Nothing else in the crate opens a
//! file for writing. The state directory (outside `_polis/`) is written by `state`, not here.
//!
//! Before it edits or moves a file an agent owns, the writer makes sure nobody is still writing
//! it (SPEC §11): the file must have been seen unchanged (identity, size, mtime,
//! ctime, mode) for the [`Stability`] window, and on Linux polisd must be able to take a read
//! lease on it (`F_SETLEASE`), which the kernel grants only while no process has the file open
//! for writing and breaks when one opens it during the edit. A file that is not settled yet is
//! left alone and its path is recorded as deferred, for the caller to come back to. Elsewhere
//! (macOS, file systems without leases, a file owned by another user) only the window applies.
//! No file with more than one hard link is written or replaced: the other name may lie
//! outside the polis.
//!
//! Residual race: parent folders are checked with `lstat` just before use, so an agent that
//! swaps a checked folder for a link in the microseconds between check and rename could still
//! redirect one write. The final component is never followed (rename replaces a link rather
//! than writing through it; appends open with `O_NOFOLLOW`).

use std::collections::HashMap;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime};

mod append;
mod error;
mod update;
// open to the readers (`snapshot`) by name, so that reading never imports the writer itself
pub(crate) mod syscall;

use error::io_err;
pub use error::WriteError;
pub(crate) use syscall::no_follow_flags;
use syscall::*;
pub use syscall::{MAX_OPEN_RETRY, TEMP_PREFIX, TEMP_SUFFIX};

/// SHA-256 of some bytes; the key of the own-write ledger.
pub type Hash = [u8; 32];

/// The SHA-256 of `bytes`, as the ledger records it.
pub use crate::protocol::digest::sha256;

/// What [`Writer::replace_atomic`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteOutcome {
    /// The file already held these bytes; nothing was touched.
    Unchanged,
    Written,
}

/// What [`Writer::compare_and_replace`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CompareOutcome {
    Unchanged,
    Written,
    /// The file is not (or no longer) `expected_old`: someone else wrote it. Nothing was
    /// written; recompute from `current` (`None`: the file is gone) and try again.
    Conflict {
        current: Option<Vec<u8>>,
    },
    /// Someone may still be writing the file; nothing was written. Its path is recorded as
    /// deferred ([`Writer::take_due`]); try again after `retry_after`.
    NotSettled {
        reason: Unsettled,
        retry_after: Duration,
    },
}

/// Why an agent's file is not edited yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unsettled {
    /// It changed less than the stability window ago.
    Changing,
    /// Another process has it open for writing (Linux: the read lease was refused or broken).
    OpenForWriting,
}

impl Unsettled {
    pub fn describe(self) -> &'static str {
        match self {
            Unsettled::Changing => "it changed too recently",
            Unsettled::OpenForWriting => "another process has it open for writing",
        }
    }
}

/// How the writer waits for an agent's file to be settled before editing or moving it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stability {
    /// How long the file must have been seen unchanged.
    pub window: Duration,
    /// `true`: wait inside the call (one-shot commands); `false`: return
    /// [`CompareOutcome::NotSettled`] at once and record the path as deferred (the daemon).
    pub wait: bool,
}

impl Default for Stability {
    /// Twice the daemon's default debounce, waited for in the call.
    fn default() -> Self {
        Stability {
            window: Duration::from_millis(400),
            wait: true,
        }
    }
}

/// Why a file is not settled, and when to look again.
type NotYet = (Unsettled, Duration);

/// What can tell a file changed: its identity and the metadata a write, a `chmod` or a
/// replacement changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FileId {
    dev: u64,
    ino: u64,
    size: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
    mode: u32,
}

impl FileId {
    fn of(meta: &fs::Metadata) -> FileId {
        use std::os::unix::fs::MetadataExt;
        FileId {
            dev: meta.dev(),
            ino: meta.ino(),
            size: meta.len(),
            mtime: (meta.mtime(), meta.mtime_nsec()),
            ctime: (meta.ctime(), meta.ctime_nsec()),
            mode: meta.mode(),
        }
    }
}

/// What [`Writer::rename_within`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RenameOutcome {
    Moved,
    /// The target already held the same bytes (a replayed move); the source, if still there,
    /// was removed.
    AlreadyMoved,
    /// Someone may still be writing the source; nothing was moved (see
    /// [`CompareOutcome::NotSettled`]).
    NotSettled {
        reason: Unsettled,
        retry_after: Duration,
    },
}

/// What [`Writer::remove`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RemoveOutcome {
    Removed,
    AlreadyGone,
}

/// The lock on a `_polis/` folder taken by [`Writer::try_lock_polis`].
#[derive(Debug)]
pub struct PolisLock {
    /// (device, inode) of the locked folder.
    pub id: (u64, u64),
    _dir: File,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ledger {
    Wrote(Hash),
    Removed,
}

/// Writes inside one `_polis/` root. Shareable (`&self` everywhere); the ledger is locked.
#[derive(Debug)]
pub struct Writer {
    root: PathBuf,
    ledger: Mutex<HashMap<PathBuf, Ledger>>,
    /// For a project writer, the only paths it may write.
    allow: Option<&'static [&'static str]>,
    stability: Stability,
    /// Agents' files polisd wanted to edit: how each looked when first seen so, and since when.
    seen: Mutex<HashMap<PathBuf, (FileId, Instant)>>,
    /// Paths left alone because they were not settled, with when to look again.
    deferred: Mutex<HashMap<PathBuf, Instant>>,
    /// How many times in a row each deferred path was found open for writing.
    held_open: Mutex<HashMap<PathBuf, u32>>,
    /// Whether writes are recorded in the own-write ledger. A one-shot command has no watcher
    /// to tell about its writes, and recording an append costs a read of the whole file.
    recording: bool,
}

/// An advisory lock from [`Writer::lock_file`], released when dropped.
#[derive(Debug)]
pub struct FileLock {
    _file: File,
}

impl Writer {
    /// Binds a writer to `root` (the `_polis/` folder), canonicalising it.
    pub fn new(root: &Path) -> Result<Writer, WriteError> {
        let root = fs::canonicalize(root).map_err(io_err("find the polis root", root))?;
        let meta = fs::metadata(&root).map_err(io_err("inspect the polis root", &root))?;
        if !meta.is_dir() {
            return Err(WriteError::RootGone(root));
        }
        Ok(Writer {
            root,
            ledger: Mutex::new(HashMap::new()),
            allow: None,
            stability: Stability::default(),
            seen: Mutex::new(HashMap::new()),
            deferred: Mutex::new(HashMap::new()),
            held_open: Mutex::new(HashMap::new()),
            recording: true,
        })
    }

    /// A writer for a one-shot process (the agents' commands): the same checks and writes,
    /// without the own-write ledger, which only a long-running watcher reads. An agent's own
    /// command (claim, vote, settle) acts on a file at the agent's request: it waits for no
    /// stability window, only (Linux) for no other process to have the file open for writing.
    pub fn unrecorded(root: &Path) -> Result<Writer, WriteError> {
        let mut w = Writer::new(root)?;
        w.recording = false;
        w.stability = Stability {
            window: Duration::ZERO,
            wait: true,
        };
        Ok(w)
    }

    /// A writer for the project root (the folder holding `_polis/`) that may write only
    /// [`PROJECT_FILES`], with the same safety as the polis writer (no links, atomic replace,
    /// compare-before-replace).
    pub fn for_project(project_root: &Path) -> Result<Writer, WriteError> {
        let mut w = Writer::new(project_root)?;
        w.allow = Some(&PROJECT_FILES);
        Ok(w)
    }

    /// Sets how agents' files are waited for (the daemon: its window, without waiting).
    pub fn set_stability(&mut self, stability: Stability) {
        self.stability = stability;
    }

    pub fn stability(&self) -> Stability {
        self.stability
    }

    /// When the earliest deferred path is due to be looked at again.
    pub fn next_deferred(&self) -> Option<Instant> {
        lock(&self.deferred).values().min().copied()
    }

    /// Takes the deferred paths due at `now` (relative to the root).
    pub fn take_due(&self, now: Instant) -> Vec<PathBuf> {
        let mut deferred = lock(&self.deferred);
        let due: Vec<PathBuf> = deferred
            .iter()
            .filter(|(_, at)| **at <= now)
            .map(|(p, _)| p.clone())
            .collect();
        for p in &due {
            deferred.remove(p);
        }
        due
    }

    /// Whether nobody is writing `rel`: unchanged for the stability window and, where leases
    /// exist, open for writing by no process. `Ok(None)` when settled (or missing); otherwise
    /// why not and when to look again (the path is recorded as deferred). Waits for the window
    /// when the writer is set to wait.
    pub fn settled(
        &self,
        rel: impl AsRef<Path>,
    ) -> Result<Option<(Unsettled, Duration)>, WriteError> {
        let t = self.target(rel.as_ref())?;
        if !self.ensure_parents(&t, false)? {
            return Ok(None);
        }
        let Some(meta) = self.existing_file(&t)? else {
            return Ok(None);
        };
        if let Err(not) = self.settle(&t, &meta) {
            return Ok(Some(not));
        }
        let file = open_no_follow(&t)?;
        match lease::take(&file) {
            lease::Taken::OpenForWriting => Ok(Some(self.defer(&t, Unsettled::OpenForWriting))),
            _ => Ok(None),
        }
    }

    /// The stability window for one file: `Err` (deferred) while it has been seen unchanged
    /// for less than the window. Waits instead when the writer is set to wait, giving up after
    /// ten windows of a file that keeps changing.
    fn settle(&self, t: &Target, meta: &fs::Metadata) -> Result<(), (Unsettled, Duration)> {
        let window = self.stability.window;
        let mut meta = meta.clone();
        let deadline = Instant::now() + window.saturating_mul(10);
        loop {
            let id = FileId::of(&meta);
            let now = Instant::now();
            let since = {
                let mut seen = lock(&self.seen);
                if seen.len() > 4096 {
                    seen.clear();
                }
                match seen.get(&t.rel) {
                    Some((seen_id, since)) if *seen_id == id => *since,
                    _ => {
                        seen.insert(t.rel.clone(), (id, now));
                        now
                    }
                }
            };
            let remaining = window.saturating_sub(now.duration_since(since));
            if remaining.is_zero() {
                return Ok(());
            }
            if !self.stability.wait || now >= deadline {
                return Err(self.defer(t, Unsettled::Changing));
            }
            std::thread::sleep(remaining);
            meta = match fs::symlink_metadata(&t.abs) {
                Ok(m) => m,
                Err(_) => return Ok(()),
            };
        }
    }

    /// Records `t` as deferred and says when to look again: after the window for a file that
    /// changed, and with a backoff (doubling up to [`MAX_OPEN_RETRY`]) for one a process keeps
    /// open for writing, so a file held open for hours is not looked at every few hundred
    /// milliseconds (its close is an event of its own, which brings polisd back at once).
    fn defer(&self, t: &Target, reason: Unsettled) -> (Unsettled, Duration) {
        let window = self.stability.window.max(Duration::from_millis(50));
        let mut open = lock(&self.held_open);
        let retry_after = match reason {
            Unsettled::Changing => window,
            Unsettled::OpenForWriting => {
                let n = open.entry(t.rel.clone()).or_insert(0);
                *n = (*n + 1).min(16);
                window
                    .saturating_mul(1 << (*n - 1).min(10))
                    .min(MAX_OPEN_RETRY)
            }
        };
        if reason == Unsettled::Changing {
            open.remove(&t.rel);
        }
        lock(&self.deferred).insert(t.rel.clone(), Instant::now() + retry_after);
        (reason, retry_after)
    }

    /// After polisd's own edit: the file it wrote (`written`, from its own handle) counts as
    /// settled. Not whatever the path names by now: an agent's save renamed in since (during
    /// the folder's fsync) would count as polisd's own, and be moved or edited at once (torture
    /// seed 1424603150473113953 moved a stale amendment to ratified/ this way). Without the
    /// file's metadata nothing is remembered, and the file waits out the window.
    fn remember_settled(&self, t: &Target, written: Option<fs::Metadata>) {
        if let Some(meta) = written {
            let since = Instant::now()
                .checked_sub(self.stability.window)
                .unwrap_or_else(Instant::now);
            lock(&self.seen).insert(t.rel.clone(), (FileId::of(&meta), since));
        }
        lock(&self.deferred).remove(&t.rel);
        lock(&self.held_open).remove(&t.rel);
    }

    /// Opens an agent's file (whose metadata is `meta`) to edit or move it once it has settled:
    /// out of the stability window, then with the read lease taken. Else says why not. The
    /// file, and whether the lease is held (when leases work here).
    fn open_settled(
        &self,
        t: &Target,
        meta: &fs::Metadata,
    ) -> Result<Result<(File, bool), NotYet>, WriteError> {
        if let Err(not) = self.settle(t, meta) {
            return Ok(Err(not));
        }
        let file = open_no_follow(t)?;
        check_single_link(t, &file.metadata().map_err(io_err("inspect", &t.rel))?)?;
        match lease::take(&file) {
            lease::Taken::Held => Ok(Ok((file, true))),
            lease::Taken::Unsupported => Ok(Ok((file, false))),
            lease::Taken::OpenForWriting => Ok(Err(self.defer(t, Unsettled::OpenForWriting))),
        }
    }

    /// The canonical `_polis/` root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Takes an exclusive advisory lock (`flock`) on the `_polis/` folder itself, or `None`
    /// when another process holds it. Whatever state directory each daemon uses, two daemons
    /// on one folder meet here. Held until the returned lock is dropped.
    pub fn try_lock_polis(&self) -> Result<Option<PolisLock>, WriteError> {
        use std::os::unix::fs::MetadataExt;
        self.check_root()?;
        let dir = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW)
            .open(&self.root)
            .map_err(io_err("open the polis folder", &self.root))?;
        let meta = dir
            .metadata()
            .map_err(io_err("inspect the polis folder", &self.root))?;
        match fs4::fs_std::FileExt::try_lock_exclusive(&dir) {
            Ok(true) => Ok(Some(PolisLock {
                id: (meta.dev(), meta.ino()),
                _dir: dir,
            })),
            Ok(false) => Ok(None),
            Err(e) => Err(io_err("lock the polis folder", &self.root)(e)),
        }
    }

    /// The (device, inode) of the `_polis/` folder now at the root, to tell whether a lock is
    /// still on it (the folder may have been deleted and restored).
    pub fn root_id(&self) -> Option<(u64, u64)> {
        use std::os::unix::fs::MetadataExt;
        fs::symlink_metadata(&self.root)
            .ok()
            .filter(|m| m.is_dir())
            .map(|m| (m.dev(), m.ino()))
    }

    /// Replaces `rel` with `bytes` atomically (temp file in the same folder, fsync, rename,
    /// fsync folder), unless it already holds exactly these bytes. Creates missing parent
    /// folders inside the root. Keeps the old file's permission bits.
    pub fn replace_atomic(
        &self,
        rel: impl AsRef<Path>,
        bytes: &[u8],
    ) -> Result<WriteOutcome, WriteError> {
        let t = self.target(rel.as_ref())?;
        self.ensure_parents(&t, true)?;
        let existing = self.existing_file(&t)?;
        let mode = match &existing {
            Some(meta) => {
                check_single_link(&t, meta)?;
                if read_no_follow(&t)? == bytes {
                    return Ok(WriteOutcome::Unchanged);
                }
                Some(meta.permissions().mode())
            }
            None => None,
        };
        let tmp = write_temp(&t, bytes, mode)?;
        self.ensure_parents(&t, false)?;
        self.existing_file(&t)?;
        persist(tmp, &t)?;
        self.record(&t.rel, Ledger::Wrote(sha256(bytes)));
        Ok(WriteOutcome::Written)
    }

    /// Creates `rel` with `bytes` only if nothing is there yet (scaffolding never overwrites).
    /// Returns whether the file was created. The content appears whole: it is written to a
    /// temporary file and linked into place, which fails if the name was taken meanwhile.
    pub fn create_new(&self, rel: impl AsRef<Path>, bytes: &[u8]) -> Result<bool, WriteError> {
        let t = self.target(rel.as_ref())?;
        self.ensure_parents(&t, true)?;
        if fs::symlink_metadata(&t.abs).is_ok() {
            return Ok(false);
        }
        let tmp = write_temp(&t, bytes, None)?;
        match tmp.persist_noclobber(&t.abs) {
            Ok(_) => {
                sync_dir(t.abs.parent().unwrap_or(&self.root))?;
                self.record(&t.rel, Ledger::Wrote(sha256(bytes)));
                Ok(true)
            }
            Err(e) if e.error.kind() == io::ErrorKind::AlreadyExists => Ok(false),
            Err(e) => Err(WriteError::Io {
                op: "create",
                path: t.rel,
                source: e.error,
            }),
        }
    }

    /// An exclusive advisory lock on the empty lock file `lock_rel` (created if missing, never
    /// removed, never through a link), held until the returned lock is dropped.
    fn lock_named(&self, lock_rel: &Path) -> Result<FileLock, WriteError> {
        let lock_t = self.target(lock_rel)?;
        self.existing_file(&lock_t)?;
        let lock = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .custom_flags(no_follow_flags())
            .open(&lock_t.abs)
            .map_err(|e| self.link_or_io(&lock_t, e, "open the lock file"))?;
        syscall::regular(&lock_t, &lock)?;
        fs4::fs_std::FileExt::lock_exclusive(&lock).map_err(io_err("lock", &lock_t.rel))?;
        Ok(FileLock { _file: lock })
    }

    /// The one lock every state transition of the polis is checked and committed under
    /// (claim, settle, abandon, vote, tally, review, archive), whoever calls: a command, the MCP
    /// server, the dashboard or the daemon ([`crate::fs::state::transition_lock`]). Whoever
    /// holds it sees the folder as the last transition left it, chronicle line included, so of
    /// racing callers one wins and the others see the winner. Held for milliseconds. Not
    /// reentrant: an operation takes it once, at its entry, and the operations it calls inside
    /// do not take it again.
    pub fn transition_lock(&self) -> Result<crate::fs::state::TransitionLock, WriteError> {
        crate::fs::state::transition_lock(&self.root).map_err(|e| WriteError::Io {
            op: "lock",
            path: PathBuf::from("the polisd state directory's transition.lock"),
            source: io::Error::other(e.to_string()),
        })
    }

    /// Replaces an agent-owned file whose bytes were `expected_old` with `new`, re-reading it
    /// just before the rename. If the file differs from `expected_old` at any check, nothing is
    /// written and [`CompareOutcome::Conflict`] carries the current bytes (SPEC §11: an agent's
    /// bytes are never lost to a polisd edit). A file someone may still be writing is left
    /// alone ([`CompareOutcome::NotSettled`]); see the module documentation.
    pub fn compare_and_replace(
        &self,
        rel: impl AsRef<Path>,
        expected_old: &[u8],
        new: &[u8],
    ) -> Result<CompareOutcome, WriteError> {
        let t = self.target(rel.as_ref())?;
        self.ensure_parents(&t, false)?;
        let Some(meta) = self.existing_file(&t)? else {
            return Ok(CompareOutcome::Conflict { current: None });
        };
        check_single_link(&t, &meta)?;
        // The lease lasts as long as `file` is open: until the end of this call.
        let (file, leased) = match self.open_settled(&t, &meta)? {
            Ok(opened) => opened,
            Err((reason, retry_after)) => {
                return Ok(CompareOutcome::NotSettled {
                    reason,
                    retry_after,
                })
            }
        };
        let current = read_open(&t, &file)?;
        if current != expected_old {
            return Ok(CompareOutcome::Conflict {
                current: Some(current),
            });
        }
        if current == new {
            return Ok(CompareOutcome::Unchanged);
        }
        let tmp = write_temp(&t, new, Some(meta.permissions().mode()))?;
        #[cfg(test)]
        tests::BEFORE_RECHECK.with(|h| h.borrow().as_ref().map(|h| h(&t.abs)));
        self.ensure_parents(&t, false)?;
        let now = self.existing_file(&t)?;
        let again = match &now {
            Some(_) => Some(read_no_follow(&t)?),
            None => None,
        };
        let same_file = now
            .as_ref()
            .zip(file.metadata().ok())
            .is_some_and(|(a, b)| FileId::of(a).ino == FileId::of(&b).ino);
        if again.as_deref() != Some(expected_old) || (leased && !same_file) {
            drop(tmp);
            return Ok(CompareOutcome::Conflict { current: again });
        }
        if leased && lease::broken(&file) {
            drop(tmp);
            return Ok(self.held_open(&t));
        }
        #[cfg(test)]
        tests::BEFORE_SWAP.with(|h| h.borrow().as_ref().map(|h| h(&t.abs)));
        // Swapped in rather than renamed over: the file displaced is then in hand. An agent
        // that renamed its version in since the re-read would otherwise lose it to this edit;
        // its file goes back in place instead.
        match rename_exchange(tmp.path(), &t.abs) {
            Ok(()) => return self.swapped(&t, tmp, &file, leased, expected_old, new),
            Err(e) if e.kind() == io::ErrorKind::Unsupported => {}
            Err(e) => return Err(io_err("replace", &t.rel)(e)),
        }
        // A writer opening the file from here on waits for the lease (until `file` closes),
        // then writes to the inode it opened: the agent's inode is kept under a second name so
        // it can be put back in place if that happens.
        let keep = if leased { keep_link(&t) } else { None };
        let written = persist(tmp, &t)?.metadata().ok();
        if leased && lease::broken(&file) {
            if let Some(keep) = keep {
                if fs::rename(&keep, &t.abs).is_ok() {
                    let _ = sync_dir(t.dir());
                    return Ok(self.held_open(&t));
                }
            }
        } else if let Some(keep) = keep {
            let _ = fs::remove_file(keep);
        }
        drop(file);
        Ok(self.replaced(&t, expected_old, new, written))
    }

    /// After [`Writer::compare_and_replace`] swapped its file in: `tmp` now names the file it
    /// displaced. Not the file checked (an agent's rename came in between), or the checked
    /// file opened for writing since (the lease broke): swapped back, and the agent's bytes
    /// stay. Otherwise the displaced file is removed.
    fn swapped(
        &self,
        t: &Target,
        tmp: tempfile::NamedTempFile,
        checked: &File,
        leased: bool,
        old: &[u8],
        new: &[u8],
    ) -> Result<CompareOutcome, WriteError> {
        use std::os::unix::fs::MetadataExt;
        let ino = |m: io::Result<fs::Metadata>| m.ok().map(|m| m.ino());
        let displaced_theirs = ino(fs::symlink_metadata(tmp.path())) != ino(checked.metadata());
        if displaced_theirs || (leased && lease::broken(checked)) {
            put_back(t, tmp)?;
            if displaced_theirs {
                return Ok(CompareOutcome::Conflict {
                    current: self
                        .existing_file(t)?
                        .map(|_| read_no_follow(t))
                        .transpose()?,
                });
            }
            return Ok(self.held_open(t));
        }
        // The handle still names the file written; the displaced one, which now has the
        // temporary name, is removed.
        let written = tmp.as_file().metadata().ok();
        drop(tmp);
        #[cfg(test)]
        tests::AFTER_SWAP.with(|h| h.borrow().as_ref().map(|h| h(&t.abs)));
        sync_dir(t.dir())?;
        Ok(self.replaced(t, old, new, written))
    }

    /// The outcome of an edit given up because a process opened the file for writing
    /// meanwhile: deferred, to be tried once it closes.
    fn held_open(&self, t: &Target) -> CompareOutcome {
        let (reason, retry_after) = self.defer(t, Unsettled::OpenForWriting);
        CompareOutcome::NotSettled {
            reason,
            retry_after,
        }
    }

    /// The outcome of an edit that replaced the file with `new` (`written`: the metadata of
    /// the file it wrote), recorded as polisd's own.
    fn replaced(
        &self,
        t: &Target,
        old: &[u8],
        new: &[u8],
        written: Option<fs::Metadata>,
    ) -> CompareOutcome {
        if self.allow.is_none() && t.rel == Path::new(crate::protocol::layout::CHRONICLE) {
            // The lines this edit put in (a restored line, a conflict copy's lines) are noted
            // as an append's are: a sync tool's replace that takes them before the daemon has
            // read them is then noticed, and they are put back again.
            let put_in = crate::protocol::chronicle::lines_put_in(
                &String::from_utf8_lossy(old),
                &String::from_utf8_lossy(new),
            );
            if !put_in.is_empty() {
                crate::fs::state::note_appended(&self.root, put_in.join("\n").as_bytes());
            }
        }
        self.record(&t.rel, Ledger::Wrote(sha256(new)));
        self.remember_settled(t, written);
        CompareOutcome::Written
    }

    /// Whether `rel` could be written: every folder on its way that exists is a plain folder
    /// (never a link) and the file, if there, a regular file. An operation whose last write
    /// goes to `rel` (a transition's chronicle line) asks before its first write.
    pub fn check_writable(&self, rel: impl AsRef<Path>) -> Result<(), WriteError> {
        let t = self.target(rel.as_ref())?;
        if self.ensure_parents(&t, false)? {
            self.existing_file(&t)?;
        }
        Ok(())
    }

    /// Whether [`Writer::rename_within`] could move `from` to `to`: every folder of `to` that
    /// exists is a plain folder (never a link) and nothing is at `to` yet. An operation that
    /// edits a file and then moves it asks first, so a move that cannot land is refused before
    /// the edit, not after it.
    pub fn check_move_target(
        &self,
        from: impl AsRef<Path>,
        to: impl AsRef<Path>,
    ) -> Result<(), WriteError> {
        let f = self.target(from.as_ref())?;
        let t = self.target(to.as_ref())?;
        if self.ensure_parents(&t, false)? && self.existing_file(&t)?.is_some() {
            return Err(WriteError::TargetExists {
                from: f.rel,
                to: t.rel,
            });
        }
        Ok(())
    }

    /// Moves `from` to `to` inside the root (an amendment from proposed/ to ratified/). Never
    /// overwrites a different file at `to`; a replayed move (same bytes already at `to`)
    /// just removes what is left at `from`. A source someone may still be writing is not moved
    /// ([`RenameOutcome::NotSettled`]).
    pub fn rename_within(
        &self,
        from: impl AsRef<Path>,
        to: impl AsRef<Path>,
    ) -> Result<RenameOutcome, WriteError> {
        let f = self.target(from.as_ref())?;
        let t = self.target(to.as_ref())?;
        let from_meta = if self.ensure_parents(&f, false)? {
            self.existing_file(&f)?
        } else {
            None
        };
        self.ensure_parents(&t, true)?;
        let to_present = self.existing_file(&t)?.is_some();
        let Some(from_meta) = from_meta else {
            return if to_present {
                Ok(RenameOutcome::AlreadyMoved)
            } else {
                Err(WriteError::Missing(f.rel))
            };
        };
        check_single_link(&f, &from_meta)?;
        // Held through the move: a writer that opens the file meanwhile waits, then writes to
        // the same inode under its new name.
        let (leased, lease_held) = match self.open_settled(&f, &from_meta)? {
            Ok(opened) => opened,
            Err((reason, retry_after)) => {
                return Ok(RenameOutcome::NotSettled {
                    reason,
                    retry_after,
                })
            }
        };
        // The bytes and the inode of the file checked above, read through the handle: the
        // path may name another file by now.
        let bytes = read_open(&f, &leased)?;
        if to_present {
            if read_no_follow(&t)? != bytes {
                return Err(WriteError::TargetExists {
                    from: f.rel,
                    to: t.rel,
                });
            }
            fs::remove_file(&f.abs).map_err(io_err("remove", &f.rel))?;
            sync_dir(f.dir())?;
            self.record(&f.rel, Ledger::Removed);
            return Ok(RenameOutcome::AlreadyMoved);
        }
        #[cfg(test)]
        tests::BEFORE_MOVE.with(|h| h.borrow().as_ref().map(|h| h(&f.abs)));
        // One rename that refuses to replace a file appearing at `to` meanwhile: the file is
        // never in both folders, not even for an instant (a crash cannot leave two copies).
        // Where the kernel has no such rename, a hard link (which cannot replace a file either)
        // then an unlink; filesystems without hard links fall back to a checked rename.
        match rename_no_replace(&f.abs, &t.abs) {
            Ok(()) => return self.moved(&f, &t, &leased, lease_held, &bytes),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                return Err(WriteError::TargetExists {
                    from: f.rel,
                    to: t.rel,
                })
            }
            Err(_) => {}
        }
        match fs::hard_link(&f.abs, &t.abs) {
            Ok(()) => fs::remove_file(&f.abs).map_err(io_err("remove", &f.rel))?,
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                return Err(WriteError::TargetExists {
                    from: f.rel,
                    to: t.rel,
                })
            }
            Err(_) => {
                if self.existing_file(&t)?.is_some() {
                    return Err(WriteError::TargetExists {
                        from: f.rel,
                        to: t.rel,
                    });
                }
                fs::rename(&f.abs, &t.abs).map_err(io_err("move", &f.rel))?;
            }
        }
        self.moved(&f, &t, &leased, lease_held, &bytes)
    }

    /// After [`Writer::rename_within`]'s move: whether what moved is the file it checked.
    /// An agent that replaced the source by a rename in between, or opened it for writing (the
    /// lease breaks), would otherwise have its version moved unseen, or its write land under
    /// the new name: the file goes back to `from`, and the move waits for the next pass.
    fn moved(
        &self,
        f: &Target,
        t: &Target,
        checked: &File,
        lease_held: bool,
        bytes: &[u8],
    ) -> Result<RenameOutcome, WriteError> {
        use std::os::unix::fs::MetadataExt;
        let checked_ino = checked.metadata().map_err(io_err("inspect", &f.rel))?.ino();
        let replaced = fs::symlink_metadata(&t.abs).map_or(true, |m| m.ino() != checked_ino);
        if replaced || (lease_held && lease::broken(checked)) {
            rename_no_replace(&t.abs, &f.abs).map_err(|e| WriteError::MovedUnderUs {
                from: f.rel.clone(),
                to: t.rel.clone(),
                error: e.to_string(),
            })?;
            sync_dir(t.dir())?;
            sync_dir(f.dir())?;
            let (reason, retry_after) = self.defer(f, Unsettled::Changing);
            return Ok(RenameOutcome::NotSettled {
                reason,
                retry_after,
            });
        }
        sync_dir(t.dir())?;
        sync_dir(f.dir())?;
        self.record(&f.rel, Ledger::Removed);
        self.record(&t.rel, Ledger::Wrote(sha256(bytes)));
        lock(&self.seen).remove(&f.rel);
        lock(&self.deferred).remove(&f.rel);
        lock(&self.held_open).remove(&f.rel);
        Ok(RenameOutcome::Moved)
    }

    /// Takes an advisory exclusive lock on the agent's file `rel` itself, for a
    /// read-decide-replace that must not interleave with another polisd process (a claim).
    /// The lock is on the file's inode; since a replace puts a new inode at the path, the lock
    /// is taken again until the locked inode is the one at the path, so two holders never
    /// overlap. Hand edits take no lock: [`Writer::compare_and_replace`] still guards those.
    pub fn lock_file(&self, rel: impl AsRef<Path>) -> Result<FileLock, WriteError> {
        use std::os::unix::fs::MetadataExt;
        let t = self.target(rel.as_ref())?;
        for _ in 0..1000 {
            if !self.ensure_parents(&t, false)? || self.existing_file(&t)?.is_none() {
                return Err(WriteError::Missing(t.rel));
            }
            let file = match OpenOptions::new()
                .read(true)
                .custom_flags(no_follow_flags())
                .open(&t.abs)
            {
                Ok(f) => f,
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => return Err(self.link_or_io(&t, e, "open to lock")),
            };
            fs4::fs_std::FileExt::lock_exclusive(&file).map_err(io_err("lock", &t.rel))?;
            let held = file.metadata().map_err(io_err("inspect", &t.rel))?;
            match fs::symlink_metadata(&t.abs) {
                Ok(now) if now.ino() == held.ino() && now.dev() == held.dev() => {
                    return Ok(FileLock { _file: file })
                }
                Ok(_) => continue,
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    return Err(WriteError::Missing(t.rel))
                }
                Err(e) => return Err(io_err("inspect", &t.rel)(e)),
            }
        }
        Err(WriteError::Io {
            op: "lock",
            path: t.rel,
            source: io::Error::other("the file was replaced 1000 times while waiting for its lock"),
        })
    }

    /// Removes a regular file (a chronicle conflict copy whose lines are merged).
    pub fn remove(&self, rel: impl AsRef<Path>) -> Result<RemoveOutcome, WriteError> {
        let t = self.target(rel.as_ref())?;
        if !self.ensure_parents(&t, false)? || self.existing_file(&t)?.is_none() {
            return Ok(RemoveOutcome::AlreadyGone);
        }
        match fs::remove_file(&t.abs) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(RemoveOutcome::AlreadyGone),
            Err(e) => return Err(io_err("remove", &t.rel)(e)),
        }
        sync_dir(t.dir())?;
        self.record(&t.rel, Ledger::Removed);
        Ok(RemoveOutcome::Removed)
    }

    /// Removes the folder `rel` if it is empty (a folder a refused write created and left
    /// behind). A folder with anything in it, a link or a file is left alone: `Ok(false)`.
    pub fn remove_empty_folder(&self, rel: impl AsRef<Path>) -> Result<bool, WriteError> {
        let t = self.target(rel.as_ref())?;
        if !self.ensure_parents(&t, false)? {
            return Ok(false);
        }
        match fs::symlink_metadata(&t.abs) {
            Ok(m) if m.is_dir() => {}
            _ => return Ok(false),
        }
        match fs::remove_dir(&t.abs) {
            Ok(()) => {
                sync_dir(t.dir())?;
                Ok(true)
            }
            Err(e)
                if e.kind() == io::ErrorKind::NotFound
                    || e.kind() == io::ErrorKind::DirectoryNotEmpty =>
            {
                Ok(false)
            }
            Err(e) => Err(io_err("remove folder", &t.rel)(e)),
        }
    }

    /// True when the last thing polisd wrote to `rel` had exactly this hash: the event that
    /// reported the file was caused by polisd itself and needs no work.
    pub fn is_own_write(&self, rel: impl AsRef<Path>, hash: &Hash) -> bool {
        let Ok(t) = self.target(rel.as_ref()) else {
            return false;
        };
        self.ledger
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&t.rel)
            == Some(&Ledger::Wrote(*hash))
    }

    /// True when polisd ever wrote, moved or removed `rel` in this process: only then can an
    /// event about it be polisd's own, so only then is the file worth reading to compare.
    pub fn has_touched(&self, rel: impl AsRef<Path>) -> bool {
        let Ok(t) = self.target(rel.as_ref()) else {
            return false;
        };
        self.ledger
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .contains_key(&t.rel)
    }

    /// True when polisd's last action on `rel` was removing it (or moving it away).
    pub fn is_own_removal(&self, rel: impl AsRef<Path>) -> bool {
        let Ok(t) = self.target(rel.as_ref()) else {
            return false;
        };
        self.ledger
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&t.rel)
            == Some(&Ledger::Removed)
    }

    /// Removes `.polisd-*.tmp` regular files anywhere in the polis (left by a crash): at once
    /// when the name says which process wrote it (`.polisd-<pid>-…`) and that process is gone,
    /// otherwise once the modification time is at least `min_age` old, so a write in flight in
    /// another process is not pulled from under it. Never follows links. Returns the relative
    /// paths removed.
    pub fn clean_stale_temp_files(&self, min_age: Duration) -> Result<Vec<PathBuf>, WriteError> {
        self.check_root()?;
        let now = SystemTime::now();
        let mut removed = Vec::new();
        let mut stack = vec![self.root.clone()];
        while let Some(dir) = stack.pop() {
            let Ok(read) = fs::read_dir(&dir) else {
                continue;
            };
            for entry in read.flatten() {
                // DirEntry::file_type does not follow links.
                let Ok(ft) = entry.file_type() else { continue };
                if ft.is_dir() {
                    stack.push(entry.path());
                    continue;
                }
                let name = entry.file_name();
                let Some(name) = name.to_str() else { continue };
                if !ft.is_file() || !name.starts_with(TEMP_PREFIX) || !name.ends_with(TEMP_SUFFIX) {
                    continue;
                }
                // Only now: 100k settled files would each cost a path otherwise.
                let path = entry.path();
                let old_enough = entry
                    .metadata()
                    .and_then(|m| m.modified())
                    .ok()
                    .and_then(|m| now.duration_since(m).ok())
                    .is_some_and(|age| age >= min_age);
                let writer_dead = temp_writer_pid(name).is_some_and(|pid| !process_alive(pid));
                if (old_enough || writer_dead) && fs::remove_file(&path).is_ok() {
                    removed.push(path.strip_prefix(&self.root).unwrap_or(&path).to_path_buf());
                }
            }
        }
        removed.sort();
        Ok(removed)
    }

    fn record(&self, rel: &Path, entry: Ledger) {
        if !self.recording {
            return;
        }
        self.ledger
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(rel.to_path_buf(), entry);
    }

    fn check_root(&self) -> Result<(), WriteError> {
        match fs::symlink_metadata(&self.root) {
            Ok(m) if m.is_dir() => Ok(()),
            _ => Err(WriteError::RootGone(self.root.clone())),
        }
    }

    /// Validates `rel` lexically: relative, no `..`, at least one normal component.
    fn target(&self, rel: &Path) -> Result<Target, WriteError> {
        let mut clean = PathBuf::new();
        for c in rel.components() {
            match c {
                Component::Normal(n) => clean.push(n),
                Component::CurDir => {}
                Component::ParentDir => return Err(WriteError::Escapes(rel.to_path_buf())),
                Component::RootDir | Component::Prefix(_) => {
                    return Err(WriteError::Absolute(rel.to_path_buf()))
                }
            }
        }
        if clean.as_os_str().is_empty() {
            return Err(WriteError::Empty);
        }
        if let Some(allow) = self.allow {
            if !allow.iter().any(|a| Path::new(a) == clean) {
                return Err(WriteError::NotAProjectFile(rel.to_path_buf()));
            }
        }
        Ok(Target {
            abs: self.root.join(&clean),
            rel: clean,
        })
    }

    /// Checks every parent folder of the target below the root with `lstat`: a link or a
    /// non-folder is refused. Missing folders are created when `create` is set (one level at a
    /// time, so a link appearing meanwhile makes `mkdir` fail instead of being followed);
    /// otherwise `Ok(false)` says a parent is missing.
    fn ensure_parents(&self, t: &Target, create: bool) -> Result<bool, WriteError> {
        self.check_root()?;
        let mut dir = self.root.clone();
        let mut rel = PathBuf::new();
        let parents: Vec<_> = t
            .rel
            .parent()
            .into_iter()
            .flat_map(|p| p.components())
            .collect();
        for c in parents {
            dir.push(c);
            rel.push(c);
            match fs::symlink_metadata(&dir) {
                Ok(m) if m.file_type().is_symlink() => {
                    return Err(WriteError::Symlink {
                        path: t.rel.clone(),
                        link: rel,
                    })
                }
                Ok(m) if m.is_dir() => {}
                Ok(_) => {
                    return Err(WriteError::NotADirectory {
                        path: t.rel.clone(),
                        component: rel,
                    })
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    if !create {
                        return Ok(false);
                    }
                    match fs::create_dir(&dir) {
                        Ok(()) => {}
                        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                            let m = fs::symlink_metadata(&dir).map_err(io_err("inspect", &rel))?;
                            if !m.is_dir() {
                                return Err(WriteError::NotADirectory {
                                    path: t.rel.clone(),
                                    component: rel,
                                });
                            }
                        }
                        Err(e) => return Err(io_err("create folder", &rel)(e)),
                    }
                }
                Err(e) => return Err(io_err("inspect", &rel)(e)),
            }
        }
        Ok(true)
    }

    /// `lstat` of the target itself: `None` when missing; a link or non-regular file is refused.
    fn existing_file(&self, t: &Target) -> Result<Option<fs::Metadata>, WriteError> {
        match fs::symlink_metadata(&t.abs) {
            Ok(m) if m.file_type().is_symlink() => Err(WriteError::Symlink {
                path: t.rel.clone(),
                link: t.rel.clone(),
            }),
            Ok(m) if m.is_file() => Ok(Some(m)),
            Ok(m) => Err(WriteError::NotRegular {
                path: t.rel.clone(),
                kind: kind_name(m.file_type()),
            }),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(io_err("inspect", &t.rel)(e)),
        }
    }

    fn link_or_io(&self, t: &Target, e: io::Error, op: &'static str) -> WriteError {
        // O_NOFOLLOW on a link fails with ELOOP; say so plainly.
        if fs::symlink_metadata(&t.abs).is_ok_and(|m| m.file_type().is_symlink()) {
            WriteError::Symlink {
                path: t.rel.clone(),
                link: t.rel.clone(),
            }
        } else {
            io_err(op, &t.rel)(e)
        }
    }
}

/// After a swap displaced a file that was not the one checked: swaps it back, so its bytes
/// stay, and drops ours. A third version renamed in meanwhile is newer than the one put back,
/// and takes the place.
fn put_back(t: &Target, tmp: tempfile::NamedTempFile) -> Result<(), WriteError> {
    use std::os::unix::fs::MetadataExt;
    let ino = |m: io::Result<fs::Metadata>| m.ok().map(|m| m.ino());
    rename_exchange(tmp.path(), &t.abs).map_err(io_err("put back", &t.rel))?;
    if ino(fs::symlink_metadata(tmp.path())) != ino(tmp.as_file().metadata()) {
        fs::rename(tmp.path(), &t.abs).map_err(io_err("put back", &t.rel))?;
    }
    drop(tmp);
    sync_dir(t.dir())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;

    type Hook = Box<dyn Fn(&Path)>;
    thread_local! {
        /// Runs inside compare_and_replace between writing the temp file and the re-read.
        pub(super) static BEFORE_RECHECK: RefCell<Option<Hook>> = RefCell::new(None);
        /// Runs inside compare_and_replace between the re-read and the swap.
        pub(super) static BEFORE_SWAP: RefCell<Option<Hook>> = RefCell::new(None);
        /// Runs inside rename_within between its checks and the move.
        pub(super) static BEFORE_MOVE: RefCell<Option<Hook>> = RefCell::new(None);
        /// Runs inside compare_and_replace after its swap, before the folder's fsync.
        pub(super) static AFTER_SWAP: RefCell<Option<Hook>> = RefCell::new(None);
    }

    #[test]
    fn a_file_replaced_just_before_its_move_is_put_back() {
        // An agent saving its vote (a copy renamed over the file) just as polisd moves the
        // ratified amendment: the agent's version must not reach ratified/ unseen.
        let (_d, w) = polis();
        fs::write(w.root().join("c.md"), "status: ratified\n").unwrap();
        BEFORE_MOVE.with(|h| {
            *h.borrow_mut() = Some(Box::new(|p: &Path| {
                let copy = p.with_extension("swp");
                fs::write(&copy, "status: proposed\nagent's vote\n").unwrap();
                fs::rename(&copy, p).unwrap();
            }))
        });
        let moved = w.rename_within("c.md", "d/c.md");
        BEFORE_MOVE.with(|h| *h.borrow_mut() = None);
        assert!(
            matches!(moved, Ok(RenameOutcome::NotSettled { .. })),
            "{moved:?}"
        );
        assert_eq!(
            fs::read_to_string(w.root().join("c.md")).unwrap(),
            "status: proposed\nagent's vote\n"
        );
        assert!(!w.root().join("d/c.md").exists());
    }

    /// Whether the file system under `dir` swaps two files in one rename (`RENAME_EXCHANGE`),
    /// tried on two scratch files it removes again; when it cannot, says why the calling test
    /// checks nothing here (`skipped`).
    pub(super) fn swaps_files_or_skip(dir: &Path, skipped: &str) -> bool {
        let (a, b) = (dir.join(".swap-a"), dir.join(".swap-b"));
        fs::write(&a, "a\n").unwrap();
        fs::write(&b, "b\n").unwrap();
        let swaps = !rename_exchange(&a, &b).is_err_and(|e| e.kind() == io::ErrorKind::Unsupported);
        fs::remove_file(&a).unwrap();
        fs::remove_file(&b).unwrap();
        if !swaps {
            eprintln!("this filesystem cannot swap two files: {skipped}");
        }
        swaps
    }

    /// An agent's save renamed in while polisd's edit is being made durable: the file at the
    /// path is the agent's, not polisd's own, so it is not settled and not moved at once (it
    /// was, as polisd's own: torture seed 1424603150473113953 left a ratified amendment with
    /// an agent's stale `status: proposed` in ratified/).
    #[test]
    fn a_save_renamed_in_after_an_edit_is_not_taken_for_polisds_own() {
        let (_d, mut w) = polis();
        if !swaps_files_or_skip(w.root(), "the hook is on the swap's path") {
            return;
        }
        let window = Duration::from_millis(300);
        w.set_stability(Stability { window, wait: true });
        fs::write(w.root().join("c.md"), "status: proposed\n").unwrap();
        AFTER_SWAP.with(|h| {
            *h.borrow_mut() = Some(Box::new(|p: &Path| {
                let copy = p.with_extension("swp");
                fs::write(&copy, "status: proposed\nagent's vote\n").unwrap();
                fs::rename(&copy, p).unwrap();
            }))
        });
        let edited = w.compare_and_replace("c.md", b"status: proposed\n", b"status: ratified\n");
        AFTER_SWAP.with(|h| *h.borrow_mut() = None);
        assert_eq!(edited.unwrap(), CompareOutcome::Written);
        w.set_stability(Stability {
            window,
            wait: false,
        });
        let moved = w.rename_within("c.md", "d/c.md");
        assert!(
            matches!(moved, Ok(RenameOutcome::NotSettled { .. })),
            "{moved:?}"
        );
        assert!(!w.root().join("d/c.md").exists());
        assert_eq!(
            fs::read_to_string(w.root().join("c.md")).unwrap(),
            "status: proposed\nagent's vote\n"
        );
    }

    /// Runs `compare_and_replace` on `c.md` ("old" to "ours") with an agent's editor-style
    /// save (write a copy, rename it over) at the step `hook` marks, and checks the agent's
    /// bytes won: the edit is refused, the file is the agent's, no temporary file is left.
    fn assert_a_save_at_wins(
        w: &Writer,
        hook: &'static std::thread::LocalKey<RefCell<Option<Hook>>>,
    ) {
        fs::write(w.root().join("c.md"), "old\n").unwrap();
        hook.with(|h| {
            *h.borrow_mut() = Some(Box::new(|p: &Path| {
                let copy = p.with_extension("swp");
                fs::write(&copy, "agent\n").unwrap();
                fs::rename(&copy, p).unwrap();
            }))
        });
        let out = w.compare_and_replace("c.md", b"old\n", b"ours\n").unwrap();
        hook.with(|h| *h.borrow_mut() = None);
        assert_eq!(
            out,
            CompareOutcome::Conflict {
                current: Some(b"agent\n".to_vec())
            }
        );
        assert_eq!(fs::read(w.root().join("c.md")).unwrap(), b"agent\n");
        let names: Vec<_> = fs::read_dir(w.root())
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert_eq!(names.len(), 1, "temporary files removed: {names:?}");
    }

    #[test]
    fn compare_and_replace_rereads_just_before_rename() {
        let (_d, w) = polis();
        // Opening the file itself for writing would wait for polisd's read lease, held by
        // this very thread: the agent saves by a rename.
        assert_a_save_at_wins(&w, &BEFORE_RECHECK);
    }

    /// The window the re-read cannot close: an agent's editor-style save lands after it and
    /// before polisd's replace. The swap hands polisd the file it displaced, sees it is not
    /// the one it checked, and puts the agent's version back (torture seed
    /// 15821799144412209476 lost a vote this way).
    #[test]
    fn compare_and_replace_puts_back_a_save_that_lands_after_the_reread() {
        let (_d, w) = polis();
        if !swaps_files_or_skip(w.root(), "the re-read is the only guard") {
            return;
        }
        assert_a_save_at_wins(&w, &BEFORE_SWAP);
        // Without a save in between, the swap writes and leaves only the file.
        assert_eq!(
            w.compare_and_replace("c.md", b"agent\n", b"ours\n")
                .unwrap(),
            CompareOutcome::Written
        );
        assert_eq!(fs::read(w.root().join("c.md")).unwrap(), b"ours\n");
        assert_eq!(fs::read_dir(w.root()).unwrap().count(), 1);
    }

    #[test]
    fn update_locked_serialises_read_modify_write_across_handles() {
        // Two writers on one root stand for two processes: each appends a line under the lock
        // while the other waits, so no increment is lost.
        let (_d, w) = polis();
        let root = w.root().to_path_buf();
        let threads: Vec<_> = (0..4)
            .map(|i| {
                let root = root.clone();
                std::thread::spawn(move || {
                    let w = Writer::new(&root).unwrap();
                    for j in 0..10 {
                        w.update_locked("counter.txt", |cur| {
                            let mut text = cur.map(|b| b.to_vec()).unwrap_or_default();
                            std::thread::yield_now();
                            text.extend_from_slice(format!("{i}-{j}\n").as_bytes());
                            Ok::<_, WriteError>((Some(text), ()))
                        })
                        .unwrap();
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let text = fs::read_to_string(root.join("counter.txt")).unwrap();
        assert_eq!(text.lines().count(), 40, "{text}");
        assert!(root.join(".polisd-counter.txt.lock").is_file());
    }

    #[test]
    fn update_locked_writes_nothing_when_unchanged_or_refused() {
        let (_d, w) = polis();
        let (out, ()) = w
            .update_locked("r.yml", |cur| {
                assert!(cur.is_none());
                Ok::<_, WriteError>((None, ()))
            })
            .unwrap();
        assert_eq!(out, WriteOutcome::Unchanged);
        assert!(!w.root().join("r.yml").exists());
        let err = w
            .update_locked("r.yml", |_| -> Result<(Option<Vec<u8>>, ()), WriteError> {
                Err(WriteError::Empty)
            })
            .unwrap_err();
        assert!(matches!(err, WriteError::Empty));
        assert!(!w.root().join("r.yml").exists());
        std::os::unix::fs::symlink("/tmp", w.root().join(".polisd-l.yml.lock")).unwrap();
        let err = w
            .update_locked("l.yml", |_| Ok::<_, WriteError>((Some(b"x".to_vec()), ())))
            .unwrap_err();
        assert!(matches!(err, WriteError::Symlink { .. }), "{err}");
    }

    pub(super) fn polis() -> (tempfile::TempDir, Writer) {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir(dir.path().join("_polis")).unwrap();
        let mut w = Writer::new(&dir.path().join("_polis")).unwrap();
        w.set_stability(Stability {
            window: Duration::ZERO,
            wait: false,
        });
        (dir, w)
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn a_file_open_for_writing_elsewhere_is_not_edited_until_closed() {
        let (_d, w) = polis();
        let path = w.root().join("c.md");
        fs::write(&path, "old\n").unwrap();
        let agent = OpenOptions::new().append(true).open(&path).unwrap();
        let out = w.compare_and_replace("c.md", b"old\n", b"ours\n").unwrap();
        let unsettled = matches!(
            out,
            CompareOutcome::NotSettled {
                reason: Unsettled::OpenForWriting,
                ..
            }
        );
        // A lease is refused to a process that does not own the file unless it has CAP_LEASE;
        // then only the window applies and the edit goes through.
        if !unsettled {
            assert_eq!(out, CompareOutcome::Written);
            return;
        }
        assert_eq!(fs::read(&path).unwrap(), b"old\n");
        assert!(w.next_deferred().is_some(), "the path is kept for later");
        drop(agent);
        assert_eq!(
            w.compare_and_replace("c.md", b"old\n", b"ours\n").unwrap(),
            CompareOutcome::Written
        );
        assert_eq!(fs::read(&path).unwrap(), b"ours\n");
    }

    #[test]
    fn a_file_seen_changing_waits_for_the_stability_window() {
        let (_d, mut w) = polis();
        w.set_stability(Stability {
            window: Duration::from_millis(300),
            wait: false,
        });
        fs::write(w.root().join("c.md"), "old\n").unwrap();
        let out = w.compare_and_replace("c.md", b"old\n", b"ours\n").unwrap();
        assert!(
            matches!(
                out,
                CompareOutcome::NotSettled {
                    reason: Unsettled::Changing,
                    ..
                }
            ),
            "{out:?}"
        );
        let at = w.next_deferred().unwrap();
        std::thread::sleep(at.saturating_duration_since(Instant::now()));
        assert_eq!(w.take_due(Instant::now()), vec![PathBuf::from("c.md")]);
        assert_eq!(
            w.compare_and_replace("c.md", b"old\n", b"ours\n").unwrap(),
            CompareOutcome::Written
        );
        // Its own edit counts as settled: the move that follows does not wait again.
        assert_eq!(
            w.rename_within("c.md", "d/c.md").unwrap(),
            RenameOutcome::Moved
        );
    }

    #[test]
    fn a_hard_linked_file_is_never_written() {
        let (d, w) = polis();
        let outside = d.path().join("outside.md");
        fs::write(&outside, "theirs\n").unwrap();
        fs::hard_link(&outside, w.root().join("inbox.md")).unwrap();
        for err in [
            w.append_locked("inbox.md", b"ours\n").unwrap_err(),
            w.replace_atomic("inbox.md", b"ours\n").unwrap_err(),
            w.compare_and_replace("inbox.md", b"theirs\n", b"ours\n")
                .unwrap_err(),
        ] {
            assert!(
                matches!(err, WriteError::HardLinked { links: 2, .. }),
                "{err}"
            );
            assert!(err.is_refusal());
        }
        assert_eq!(fs::read(&outside).unwrap(), b"theirs\n");
    }

    #[test]
    fn the_polis_folder_is_locked_once() {
        let (_d, w) = polis();
        let first = w.try_lock_polis().unwrap();
        assert!(first.is_some());
        let other = Writer::new(w.root()).unwrap();
        assert!(other.try_lock_polis().unwrap().is_none());
        drop(first);
        assert!(other.try_lock_polis().unwrap().is_some());
    }

    #[test]
    fn no_follow_flag_refuses_a_link() {
        let (_d, w) = polis();
        fs::write(w.root().join("real"), "x").unwrap();
        std::os::unix::fs::symlink(w.root().join("real"), w.root().join("link")).unwrap();
        let err = OpenOptions::new()
            .read(true)
            .custom_flags(no_follow_flags())
            .open(w.root().join("link"))
            .unwrap_err();
        // ELOOP is 40 on Linux, 62 on the BSDs and macOS.
        assert!(matches!(err.raw_os_error(), Some(40) | Some(62)), "{err}");
    }

    #[test]
    fn refusals_are_told_from_passing_failures() {
        let (_d, w) = polis();
        assert!(w
            .target(Path::new("/etc/x"))
            .err()
            .is_some_and(|e| e.is_refusal()));
        let io = WriteError::Io {
            op: "write",
            path: PathBuf::from("x"),
            source: io::Error::other("disk full"),
        };
        assert!(!io.is_refusal());
    }

    #[test]
    fn lexical_checks() {
        let (_d, w) = polis();
        assert!(matches!(
            w.target(Path::new("/etc/x")),
            Err(WriteError::Absolute(_))
        ));
        assert!(matches!(
            w.target(Path::new("a/../../x")),
            Err(WriteError::Escapes(_))
        ));
        assert!(matches!(w.target(Path::new("./")), Err(WriteError::Empty)));
        assert_eq!(
            w.target(Path::new("./a/b.md")).unwrap().rel,
            Path::new("a/b.md")
        );
    }

    #[test]
    fn ledger_tracks_last_write_and_removal() {
        let (_d, w) = polis();
        w.replace_atomic("a.md", b"one\n").unwrap();
        assert!(w.is_own_write("a.md", &sha256(b"one\n")));
        assert!(w.is_own_write("./a.md", &sha256(b"one\n")));
        assert!(!w.is_own_write("a.md", &sha256(b"two\n")));
        w.remove("a.md").unwrap();
        assert!(w.is_own_removal("a.md"));
        assert!(!w.is_own_write("a.md", &sha256(b"one\n")));
    }

    #[test]
    fn temp_file_of_a_killed_writer_removed_at_next_start() {
        let (_d, w) = polis();
        // pid_max is at most 2^22 on Linux: no process has this pid.
        let dead = w.root().join(".polisd-999999999-abc123.tmp");
        let ours = w
            .root()
            .join(format!(".polisd-{}-def456.tmp", std::process::id()));
        let unnamed = w.root().join(".polisd-legacy.tmp");
        for f in [&dead, &ours, &unnamed] {
            fs::write(f, "partial").unwrap();
        }
        let removed = w.clean_stale_temp_files(Duration::from_secs(60)).unwrap();
        assert_eq!(removed, vec![PathBuf::from(".polisd-999999999-abc123.tmp")]);
        assert!(ours.exists(), "a live writer's temp file may be in flight");
        assert!(unnamed.exists(), "no pid in the name: the age rule decides");
        // Our own temp files carry our pid.
        w.replace_atomic("x.md", b"x").unwrap();
        assert_eq!(temp_writer_pid(".polisd-42-Ab9.tmp"), Some(42));
        assert_eq!(temp_writer_pid(".polisd-legacy.tmp"), None);
    }
}
