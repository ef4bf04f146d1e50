//! `settled.ledger` on disk: its writer lock, the snapshot and journal a command or the daemon
//! writes under it, and reading it back (mapped, not copied). The format is `settled`'s.

use super::*;

pub(super) fn open_settled_lock(dir: &Path) -> Result<fs::File, StateError> {
    let path = dir.join(SETTLED_LOCK_FILE);
    fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(io_err("open", &path))
}

/// `settled.ledger` opened by a one-shot command while no daemon runs (`contract settle`
/// reconciling on its own), holding the ledger's writer lock until dropped. The command
/// checks the records against every file's fingerprint exactly as the daemon's start-up does,
/// then appends a journal line per change (or writes a new snapshot); the daemon, once
/// started, takes the same lock for its whole run and reads what the command left.
#[derive(Debug)]
pub struct LedgerFile {
    dir: PathBuf,
    journal_lines: usize,
    _lock: fs::File,
}

/// How long a command waits for another command's reconcile before giving up on its own.
const LEDGER_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

impl LedgerFile {
    /// Opens the ledger of `polis_root` with its writer lock, with what it holds; `None` when
    /// a daemon runs for the polis (it keeps the stats itself, and the command touches
    /// nothing of its state). Waits while another command holds the lock. Without a journal
    /// the settled paths an older polisd's `state.json` counted come back as
    /// [`Restored::Untrusted`], as they do for the daemon.
    pub fn open(polis_root: &Path) -> Result<Option<(LedgerFile, Restored)>, StateError> {
        LedgerFile::open_in(&state_base_dir()?, polis_root)
    }

    /// [`LedgerFile::open`] with an explicit base state directory.
    pub fn open_in(
        base: &Path,
        polis_root: &Path,
    ) -> Result<Option<(LedgerFile, Restored)>, StateError> {
        Ok(LedgerFile::lock_in(base, polis_root)?.map(|locked| locked.restore(None)))
    }

    /// [`LedgerFile::open`] in two steps: the writer lock first, and the file's records
    /// ([`LedgerLock::restore`]) once the caller has done what must follow the lock (listing
    /// the settled folder) while the file was read ahead ([`LedgerAhead`]).
    pub fn lock(polis_root: &Path) -> Result<Option<LedgerLock>, StateError> {
        LedgerFile::lock_in(&state_base_dir()?, polis_root)
    }

    /// [`LedgerFile::lock`] with an explicit base state directory.
    pub fn lock_in(base: &Path, polis_root: &Path) -> Result<Option<LedgerLock>, StateError> {
        match LedgerFile::lock_waiting(base, polis_root, LEDGER_WAIT)? {
            LedgerTry::Held(lock) => Ok(Some(lock)),
            LedgerTry::Daemon => Ok(None),
            LedgerTry::Busy => unreachable!("a wait ends with the lock, a daemon or an error"),
        }
    }

    /// [`LedgerFile::lock`] without waiting, and only where a ledger lock file already is:
    /// [`LedgerTry::Busy`] while another command holds the lock, or when there is no lock file
    /// yet (nothing is created here). `contract settle` takes it so before its own change, to
    /// list the settled folder meanwhile; a settle that is then refused has written nothing.
    pub fn try_lock_existing(polis_root: &Path) -> Result<LedgerTry, StateError> {
        LedgerFile::try_lock_existing_in(&state_base_dir()?, polis_root)
    }

    /// [`LedgerFile::try_lock_existing`] with an explicit base state directory.
    pub fn try_lock_existing_in(base: &Path, polis_root: &Path) -> Result<LedgerTry, StateError> {
        let dir = polis_state_dir(base, &canonical(polis_root));
        if !dir.join(SETTLED_LOCK_FILE).is_file() || !dir.join(PATH_FILE).is_file() {
            return Ok(LedgerTry::Busy);
        }
        LedgerFile::lock_waiting(base, polis_root, std::time::Duration::ZERO)
    }

    /// The lock, waiting up to `wait` for another command's (an error past a non-zero wait,
    /// [`LedgerTry::Busy`] with none).
    fn lock_waiting(
        base: &Path,
        polis_root: &Path,
        wait: std::time::Duration,
    ) -> Result<LedgerTry, StateError> {
        let polis = canonical(polis_root);
        let dir = polis_state_dir(base, &polis);
        fs::create_dir_all(&dir).map_err(io_err("create the state directory", &dir))?;
        let path_file = dir.join(PATH_FILE);
        if !path_file.exists() {
            write_atomic(&dir, PATH_FILE, format!("{}\n", polis.display()).as_bytes())?;
        }
        let lock = open_settled_lock(&dir)?;
        let deadline = std::time::Instant::now() + wait;
        loop {
            // Before every try: a running daemon holds the lock for good.
            if daemon_running_in(base, &polis) {
                return Ok(LedgerTry::Daemon);
            }
            match fs4::fs_std::FileExt::try_lock_exclusive(&lock) {
                Ok(true) => break,
                Ok(false) if wait.is_zero() => return Ok(LedgerTry::Busy),
                Ok(false) if std::time::Instant::now() < deadline => {
                    std::thread::sleep(std::time::Duration::from_millis(2))
                }
                Ok(false) => {
                    return Err(io_err("lock", &dir.join(SETTLED_LOCK_FILE))(
                        io::Error::new(
                            io::ErrorKind::WouldBlock,
                            "another polisd command kept it for 10 s",
                        ),
                    ))
                }
                Err(e) => return Err(io_err("lock", &dir.join(SETTLED_LOCK_FILE))(e)),
            }
        }
        Ok(LedgerTry::Held(LedgerLock { dir, lock }))
    }

    /// Whether the journal, after `more` lines, would outgrow a snapshot of `files` files (the
    /// daemon's rule): write a snapshot instead of appending then.
    pub fn snapshot_due(&self, files: usize, more: usize) -> bool {
        settled::journal_outgrown(self.journal_lines + more, files)
    }

    /// Appends one journal line per change (a record, or `Err(path)` for a file gone), in one
    /// write. Not synced: a line lost to a crash only costs the next look a read of that file
    /// (every record is checked against its file's fingerprint, and a torn line is dropped).
    pub fn append(
        &mut self,
        changes: impl IntoIterator<Item = Result<SettledRecord, String>>,
    ) -> Result<(), StateError> {
        let path = self.dir.join(SETTLED_FILE);
        let mut bytes = Vec::new();
        let mut lines = 0;
        for change in changes {
            let line = match change {
                Ok(record) => settled::encode_put(record.as_ref()),
                Err(rel) => settled::encode_del(&rel),
            }
            .map_err(|source| StateError::EncodeLedger {
                path: path.clone(),
                source,
            })?;
            bytes.extend(line);
            lines += 1;
        }
        if bytes.is_empty() {
            return Ok(());
        }
        fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .and_then(|mut f| f.write_all(&bytes))
            .map_err(io_err("append to", &path))?;
        self.journal_lines += lines;
        Ok(())
    }

    /// Replaces the file with a snapshot of these records, atomically.
    pub fn write_snapshot<'a>(
        &mut self,
        zone_seconds: i32,
        records: impl IntoIterator<Item = RecordRef<'a>>,
    ) -> Result<(), StateError> {
        write_ledger_snapshot(&self.dir, |out| {
            settled::write_snapshot(out, zone_seconds, records)
        })?;
        self.journal_lines = 0;
        Ok(())
    }
}

/// What [`LedgerFile::try_lock_existing`] found.
#[derive(Debug)]
pub enum LedgerTry {
    /// The lock is this command's now.
    Held(LedgerLock),
    /// Another command holds it (or there is no lock file yet, for
    /// [`LedgerFile::try_lock_existing`]).
    Busy,
    /// A daemon runs for the polis: it keeps the ledger (and the stats) itself.
    Daemon,
}

/// `settled.ledger`'s writer lock, held ([`LedgerFile::lock`]); the file is not read yet.
#[derive(Debug)]
pub struct LedgerLock {
    dir: PathBuf,
    lock: fs::File,
}

impl LedgerLock {
    /// The ledger with what it holds: `ahead`'s records when it read the file that is there
    /// now ([`LedgerAhead::is_current`]), else the file read here.
    pub fn restore(self, ahead: Option<LedgerAhead>) -> (LedgerFile, Restored) {
        let (file, restored, _) = self.restore_telling(ahead);
        (file, restored)
    }

    /// [`LedgerLock::restore`], telling whether what it gives is `ahead`'s (so what the caller
    /// derived from `ahead`'s records meanwhile still applies).
    pub fn restore_telling(self, ahead: Option<LedgerAhead>) -> (LedgerFile, Restored, bool) {
        let path = self.dir.join(SETTLED_FILE);
        let ahead = ahead.filter(|a| a.path == path && a.is_current());
        let from_ahead = ahead.is_some();
        let (restored, journal_lines) = match ahead {
            Some(ahead) => (ahead.restored, ahead.journal_lines),
            None => read_settled_file(&path),
        };
        let restored = match restored {
            Restored::Nothing => {
                let migrated = migrated_settled(&self.dir);
                if migrated.is_empty() {
                    Restored::Nothing
                } else {
                    Restored::Untrusted {
                        reason: "an older polisd kept only fingerprints, in state.json".into(),
                        recorded: migrated,
                    }
                }
            }
            other => other,
        };
        (
            LedgerFile {
                dir: self.dir,
                journal_lines,
                _lock: self.lock,
            },
            restored,
            from_ahead,
        )
    }
}

/// `settled.ledger` read and decoded ahead of its lock, on another thread while a command does
/// work that needs no lock (`contract settle` editing and moving the contract), for
/// [`LedgerLock::restore`] to use once the lock is held. It is used only if the file at the
/// path is still the one read, at the length read: the file is only ever appended to or
/// replaced whole by a rename (never rewritten in place, never truncated), and the descriptor
/// read from is kept open so its inode cannot be given to another file meanwhile; the same
/// inode at the same length is therefore the same bytes. Otherwise the file is read again under
/// the lock. Either way each record is still only a claim checked against its file's
/// fingerprint.
#[derive(Debug)]
pub struct LedgerAhead {
    pub(super) path: PathBuf,
    file: fs::File,
    pub(super) len: u64,
    restored: Restored,
    journal_lines: usize,
}

impl LedgerAhead {
    /// The ledger of `polis_root` as it is now; `None` when there is none (or it cannot be
    /// read: the lock's holder then reads it).
    pub fn read(polis_root: &Path) -> Option<LedgerAhead> {
        LedgerAhead::read_in(&state_base_dir().ok()?, polis_root)
    }

    /// [`LedgerAhead::read`] with an explicit base state directory.
    pub fn read_in(base: &Path, polis_root: &Path) -> Option<LedgerAhead> {
        let path = polis_state_dir(base, &canonical(polis_root)).join(SETTLED_FILE);
        let file = fs::File::open(&path).ok()?;
        let bytes = map_ledger(&file).ok()?;
        let (restored, journal_lines) = settled::decode(&bytes);
        Some(LedgerAhead {
            path,
            file,
            len: bytes.len() as u64,
            restored,
            journal_lines,
        })
    }

    /// What the file read holds (still only claims, checked once the lock is held).
    pub fn restored(&self) -> &Restored {
        &self.restored
    }

    /// Whether the path still names the file read, at the length read.
    fn is_current(&self) -> bool {
        use std::os::unix::fs::MetadataExt;
        let (Ok(now), Ok(read)) = (fs::symlink_metadata(&self.path), self.file.metadata()) else {
            return false;
        };
        now.dev() == read.dev()
            && now.ino() == read.ino()
            && now.len() == self.len
            && read.len() == self.len
    }
}

/// Replaces the ledger file in `dir` with the snapshot `write` streams to it, atomically, and
/// removes the JSON file of an earlier version it supersedes.
pub(super) fn write_ledger_snapshot(
    dir: &Path,
    write: impl FnOnce(&mut fs::File) -> io::Result<()>,
) -> Result<(), StateError> {
    // Streamed to the file: 100k records encode to ~8 MB.
    let target = dir.join(SETTLED_FILE);
    replace_file_with(dir, SETTLED_FILE, true, write).map_err(io_err("write", &target))?;
    match fs::remove_file(dir.join(LEGACY_SETTLED_FILE)) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => {
            tracing::debug!("could not remove the older ledger file: {e}")
        }
        _ => {}
    }
    Ok(())
}

/// The durable ledger file decoded, with its journal's line count: nothing when it is not
/// there, untrusted (and read again from the folder) when it cannot be read. Without one, the
/// JSON file an earlier version kept gives the paths it had counted (untrusted).
pub(super) fn read_settled_file(path: &Path) -> (Restored, usize) {
    let legacy = || path.with_file_name(LEGACY_SETTLED_FILE);
    let read = fs::File::open(path)
        .or_else(|e| match e.kind() {
            io::ErrorKind::NotFound => fs::File::open(legacy()),
            _ => Err(e),
        })
        .and_then(|file| map_ledger(&file));
    match read {
        Ok(bytes) => settled::decode(&bytes),
        Err(e) if e.kind() == io::ErrorKind::NotFound => (Restored::Nothing, 0),
        Err(e) => (
            Restored::Untrusted {
                reason: format!("it cannot be read ({e})"),
                recorded: Vec::new(),
            },
            0,
        ),
    }
}

/// The bytes of an open ledger file, mapped rather than read: the file is in the page cache
/// (it was written moments ago), so mapping costs no copy and no fresh memory to fault in,
/// where reading 10k settlements' 0.9 MB was a fifth of `contract settle`'s page faults.
/// Sound because a ledger is only ever appended to or replaced whole by a rename, never
/// rewritten in place or truncated (see [`LedgerAhead`]): the bytes mapped stay as they were
/// for as long as the map lives, which is the decode's. The mapping is populated at once (one
/// call, not a fault per 64 KiB) since the decode reads all of it. A file that cannot be
/// mapped (some network and FUSE file systems) is read instead.
fn map_ledger(file: &fs::File) -> io::Result<LedgerBytes> {
    // SAFETY: polisd never modifies a ledger's existing bytes (above); a map outliving the
    // path's file (after a rename) keeps the old file's pages.
    match unsafe { memmap2::MmapOptions::new().populate().map(file) } {
        Ok(map) => Ok(LedgerBytes::Mapped(map)),
        Err(_) => {
            use std::io::Read as _;
            let mut bytes = Vec::new();
            (&*file).read_to_end(&mut bytes)?;
            Ok(LedgerBytes::Read(bytes))
        }
    }
}

/// A ledger file's bytes, as [`map_ledger`] got them.
enum LedgerBytes {
    Mapped(memmap2::Mmap),
    Read(Vec<u8>),
}

impl std::ops::Deref for LedgerBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            LedgerBytes::Mapped(map) => map,
            LedgerBytes::Read(bytes) => bytes,
        }
    }
}

/// What the ledger of settled contracts in the polis state folder `dir` holds, and how many
/// journal frames follow its snapshot (for tests and diagnostics; the daemon and the commands
/// read it under its lock).
pub fn read_ledger_in(dir: &Path) -> (Restored, usize) {
    read_settled_file(&dir.join(SETTLED_FILE))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_ledger_file_maps_to_nothing_recorded() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join(SETTLED_FILE), b"").unwrap();
        assert_eq!(read_ledger_in(dir.path()), (Restored::Nothing, 0));
        let bytes = map_ledger(&fs::File::open(dir.path().join(SETTLED_FILE)).unwrap()).unwrap();
        assert!(bytes.is_empty());
    }

    /// A file that cannot be mapped (a `/proc` file here; some network file systems too) is read.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_ledger_that_cannot_be_mapped_is_read() {
        let file = fs::File::open("/proc/self/status").unwrap();
        let bytes = map_ledger(&file).unwrap();
        assert!(matches!(bytes, LedgerBytes::Read(_)));
        assert!(bytes.starts_with(b"Name:"));
    }
}
