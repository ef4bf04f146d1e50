//! The file-system calls the writer is built from: opens that never follow a link, renames
//! that never replace, read leases, temporary files and `fsync` of a folder. Each takes a
//! [`Target`] the writer has already checked; none decides what to write.

use super::error::{io_err, WriteError};
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

/// Prefix and suffix of polisd's temporary files (ignored by the watcher, SPEC §11).
pub const TEMP_PREFIX: &str = ".polisd-";
pub const TEMP_SUFFIX: &str = ".tmp";

/// `rename(2)` that fails with `AlreadyExists` instead of replacing `to` (Linux's
/// `renameat2(RENAME_NOREPLACE)`); `Unsupported` where the system has none.
pub(super) fn rename_no_replace(from: &Path, to: &Path) -> io::Result<()> {
    #[cfg(target_os = "linux")]
    return rename_with_flags(from, to, libc::RENAME_NOREPLACE);
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (from, to);
        Err(io::Error::from(io::ErrorKind::Unsupported))
    }
}

/// Swaps the files at `a` and `b` in one step (Linux's `renameat2(RENAME_EXCHANGE)`), so the
/// file a replace displaces is in hand and can be put back; `Unsupported` where the system or
/// the filesystem has no such rename.
pub(super) fn rename_exchange(a: &Path, b: &Path) -> io::Result<()> {
    #[cfg(target_os = "linux")]
    return rename_with_flags(a, b, libc::RENAME_EXCHANGE);
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (a, b);
        Err(io::Error::from(io::ErrorKind::Unsupported))
    }
}

#[cfg(target_os = "linux")]
pub(super) fn rename_with_flags(from: &Path, to: &Path, flags: libc::c_uint) -> io::Result<()> {
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;
    let f = CString::new(from.as_os_str().as_bytes()).map_err(io::Error::other)?;
    let t = CString::new(to.as_os_str().as_bytes()).map_err(io::Error::other)?;
    // SAFETY: both are valid NUL-terminated paths; AT_FDCWD resolves them as given.
    let rc = unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            f.as_ptr(),
            libc::AT_FDCWD,
            t.as_ptr(),
            flags,
        )
    };
    if rc == 0 {
        return Ok(());
    }
    let e = io::Error::last_os_error();
    match e.raw_os_error() {
        Some(libc::EINVAL) | Some(libc::ENOSYS) => Err(io::Error::from(io::ErrorKind::Unsupported)),
        _ => Err(e),
    }
}

/// The files outside `_polis/` that polisd writes, relative to the project root, and only when
/// a person or agent asks (`polisd hooks install`, `polisd init`): each agent CLI's
/// project-level hook configuration (Aider's config and its `load:` command file) and the bridge
/// pointers of the protocol's skill.
pub const PROJECT_FILES: [&str; 9] = [
    ".claude/settings.json",
    ".codex/hooks.json",
    ".gemini/settings.json",
    ".aider.conf.yml",
    ".polis.aider",
    "CLAUDE.md",
    "AGENTS.md",
    "GEMINI.md",
    ".agents/skills/polis-protocol/SKILL.md",
];

/// The longest wait before looking again at a file a process keeps open for writing.
pub const MAX_OPEN_RETRY: Duration = Duration::from_secs(30);

/// `O_NOFOLLOW | O_NONBLOCK`: a link is refused rather than followed, and a FIFO put in place
/// of a file cannot block the open.
pub(crate) const fn no_follow_flags() -> i32 {
    libc::O_NOFOLLOW | libc::O_NONBLOCK
}

/// The longest wait for another process's read lease to be given up (see [`open_for_append`]).
const LEASE_BREAK_WAIT: Duration = Duration::from_secs(5);

/// Opens a file for writing where another polisd may hold a read lease on it: the daemon takes
/// one for the few milliseconds it compares and replaces an agent's file. With `O_NONBLOCK`
/// (see [`no_follow_flags`]) the kernel answers `EWOULDBLOCK` while it tells the holder to let
/// go, so the open is tried again, briefly, until the lease is given up.
pub(super) fn open_for_append(open: impl Fn() -> std::io::Result<File>) -> std::io::Result<File> {
    let deadline = std::time::Instant::now() + LEASE_BREAK_WAIT;
    let mut pause = Duration::from_millis(1);
    loop {
        match open() {
            Err(e)
                if e.raw_os_error() == Some(libc::EWOULDBLOCK)
                    && std::time::Instant::now() < deadline =>
            {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(50));
            }
            other => return other,
        }
    }
}

pub(super) fn kind_name(ft: fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if ft.is_dir() {
        "folder"
    } else if ft.is_fifo() {
        "FIFO"
    } else if ft.is_socket() {
        "socket"
    } else if ft.is_block_device() || ft.is_char_device() {
        "device"
    } else {
        "special file"
    }
}

/// A checked target: its normalised relative path and absolute path.
pub(super) struct Target {
    pub(super) rel: PathBuf,
    pub(super) abs: PathBuf,
}

impl Target {
    pub(super) fn dir(&self) -> &Path {
        self.abs
            .parent()
            .expect("a target always has a parent inside the root")
    }
}

pub(super) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Refuses a file with more than one hard link: writing it would change the other name too,
/// which may lie outside the polis; replacing it would silently split the two.
pub(super) fn check_single_link(t: &Target, meta: &fs::Metadata) -> Result<(), WriteError> {
    use std::os::unix::fs::MetadataExt;
    if meta.is_file() && meta.nlink() > 1 {
        return Err(WriteError::HardLinked {
            path: t.rel.clone(),
            links: meta.nlink(),
        });
    }
    Ok(())
}

/// A second name for the target's inode (`.polisd-<pid>-keep-<n>.tmp`), so it can be put back.
pub(super) fn keep_link(t: &Target) -> Option<PathBuf> {
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let keep = t.dir().join(format!(
        "{TEMP_PREFIX}{}-keep-{n}{TEMP_SUFFIX}",
        std::process::id()
    ));
    fs::hard_link(&t.abs, &keep).ok().map(|_| keep)
}

/// The metadata of `file`, opened at `t`; refused unless it is a regular file (a folder, FIFO or
/// device put where a record belongs is never read or written as one).
pub(super) fn regular(t: &Target, file: &File) -> Result<fs::Metadata, WriteError> {
    let meta = file.metadata().map_err(io_err("inspect", &t.rel))?;
    if !meta.is_file() {
        return Err(WriteError::NotRegular {
            path: t.rel.clone(),
            kind: kind_name(meta.file_type()),
        });
    }
    Ok(meta)
}

/// Opens a regular file for reading without following a link or blocking on a FIFO.
pub(super) fn open_no_follow(t: &Target) -> Result<File, WriteError> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(no_follow_flags())
        .open(&t.abs)
        .map_err(io_err("read", &t.rel))?;
    regular(t, &file)?;
    Ok(file)
}

/// The whole content of a file opened by [`open_no_follow`].
pub(super) fn read_open(t: &Target, mut file: &File) -> Result<Vec<u8>, WriteError> {
    let mut bytes = Vec::new();
    file.seek(SeekFrom::Start(0))
        .and_then(|_| file.read_to_end(&mut bytes))
        .map_err(io_err("read", &t.rel))?;
    Ok(bytes)
}

/// Read leases (`F_SETLEASE`): granted only while no process has the file open for writing,
/// broken when one opens it. Linux only; elsewhere every file counts as not open.
pub(super) mod lease {
    use std::fs::File;

    pub enum Taken {
        /// Held until the file is closed.
        Held,
        OpenForWriting,
        /// Not available here (another OS, a file system without leases, a file owned by
        /// another user without CAP_LEASE): only the stability window applies.
        Unsupported,
    }

    #[cfg(target_os = "linux")]
    pub fn take(file: &File) -> Taken {
        use std::os::fd::AsRawFd;
        static IGNORE_SIGIO: std::sync::Once = std::sync::Once::new();
        // A lease break is announced with SIGIO, whose default action ends the process; polisd
        // asks the lease's state instead (F_GETLEASE).
        // SAFETY: setting a signal's disposition to SIG_IGN has no preconditions.
        IGNORE_SIGIO.call_once(|| unsafe {
            libc::signal(libc::SIGIO, libc::SIG_IGN);
        });
        // SAFETY: fcntl on an open descriptor we own; no pointers.
        let r = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_SETLEASE, libc::F_RDLCK) };
        if r == 0 {
            return Taken::Held;
        }
        match std::io::Error::last_os_error().raw_os_error() {
            Some(libc::EAGAIN) | Some(libc::EBUSY) => Taken::OpenForWriting,
            _ => Taken::Unsupported,
        }
    }

    #[cfg(not(target_os = "linux"))]
    pub fn take(_file: &File) -> Taken {
        Taken::Unsupported
    }

    /// Whether someone opened the file for writing since the lease was taken.
    #[cfg(target_os = "linux")]
    pub fn broken(file: &File) -> bool {
        use std::os::fd::AsRawFd;
        // SAFETY: as above. While a break is pending the kernel reports the type the lease is
        // being broken to (F_UNLCK), not F_RDLCK.
        let r = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_GETLEASE) };
        r != libc::F_RDLCK
    }

    #[cfg(not(target_os = "linux"))]
    pub fn broken(_file: &File) -> bool {
        false
    }
}

/// Reads a regular file without following a link or blocking on a FIFO.
pub(super) fn read_no_follow(t: &Target) -> Result<Vec<u8>, WriteError> {
    read_open(t, &open_no_follow(t)?)
}

/// Writes `bytes` to a fresh `.polisd-*.tmp` beside the target and fsyncs it. The temp file
/// is deleted when the returned handle drops without being persisted.
pub(super) fn write_temp(
    t: &Target,
    bytes: &[u8],
    mode: Option<u32>,
) -> Result<tempfile::NamedTempFile, WriteError> {
    // 0o666 before the umask, like any newly created file; an existing file's mode is kept.
    // The pid in the name lets the next start remove what a killed polisd left at once, rather
    // than after the age rule (SIGKILL gives no chance to clean up).
    let prefix = format!("{TEMP_PREFIX}{}-", std::process::id());
    let mut tmp = tempfile::Builder::new()
        .prefix(&prefix)
        .suffix(TEMP_SUFFIX)
        .permissions(fs::Permissions::from_mode(0o666))
        .tempfile_in(t.dir())
        .map_err(io_err("create a temporary file for", &t.rel))?;
    if let Some(mode) = mode {
        tmp.as_file()
            .set_permissions(fs::Permissions::from_mode(mode & 0o7777))
            .map_err(io_err("set permissions for", &t.rel))?;
    }
    tmp.write_all(bytes)
        .and_then(|_| tmp.as_file().sync_all())
        .map_err(io_err("write", &t.rel))?;
    Ok(tmp)
}

/// The pid in a temporary file name `.polisd-<pid>-<random>.tmp`, when it has one.
pub(super) fn temp_writer_pid(name: &str) -> Option<i32> {
    let rest = name.strip_prefix(TEMP_PREFIX)?;
    let (pid, _) = rest.split_once('-')?;
    let pid: i32 = pid.parse().ok()?;
    (pid > 0).then_some(pid)
}

/// Whether a process with this pid exists (ours counts as alive: its writes may be in flight).
pub(super) fn process_alive(pid: i32) -> bool {
    if pid == std::process::id() as i32 {
        return true;
    }
    // SAFETY: kill with signal 0 only checks for existence and permission; it sends nothing.
    let r = unsafe { libc::kill(pid, 0) };
    r == 0 || io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

/// Renames `tmp` over the target, durably; gives back the handle of the file written.
pub(super) fn persist(tmp: tempfile::NamedTempFile, t: &Target) -> Result<File, WriteError> {
    let written = tmp
        .persist(&t.abs)
        .map_err(|e| io_err("replace", &t.rel)(e.error))?;
    sync_dir(t.dir())?;
    Ok(written)
}

/// fsyncs a folder so a rename survives a crash. Filesystems that cannot fsync a folder
/// (EINVAL) are accepted as they are.
pub(super) fn sync_dir(dir: &Path) -> Result<(), WriteError> {
    match File::open(dir).and_then(|d| d.sync_all()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::InvalidInput => Ok(()),
        Err(e) => Err(io_err("sync folder", dir)(e)),
    }
}
