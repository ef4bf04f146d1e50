//! Why a write was refused or failed, and which of those a retry cannot mend.

use std::io;
use std::path::{Path, PathBuf};

/// Why a write was refused or failed. Paths are relative to `_polis/` unless they are the root.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    #[error("`{}`: polisd writes only paths relative to _polis/, not absolute ones", .0.display())]
    Absolute(PathBuf),
    #[error("`{}`: `..` would leave _polis/; polisd never writes outside it", .0.display())]
    Escapes(PathBuf),
    #[error("empty path: name a file inside _polis/")]
    Empty,
    #[error("`{}`: outside _polis/ polisd writes only the agent CLIs' hook settings and the bridge pointers", .0.display())]
    NotAProjectFile(PathBuf),
    #[error("`{}`: `{}` is a symbolic link; polisd never writes through links — replace it with a regular file or folder", .path.display(), .link.display())]
    Symlink { path: PathBuf, link: PathBuf },
    #[error("`{}`: `{}` is not a folder; move it away so polisd can write here", .path.display(), .component.display())]
    NotADirectory { path: PathBuf, component: PathBuf },
    #[error("`{}` is a {kind}, not a regular file; polisd only replaces regular files", .path.display())]
    NotRegular { path: PathBuf, kind: &'static str },
    #[error("the polis root {} is gone or no longer a plain folder", .0.display())]
    RootGone(PathBuf),
    #[error("cannot move `{}` to `{}`: a different file is already there; resolve it by hand", .from.display(), .to.display())]
    TargetExists { from: PathBuf, to: PathBuf },
    #[error("`{}` was replaced while polisd moved it to `{}`, and putting it back failed ({error}); keep the newer of the two and remove the other", .from.display(), .to.display())]
    MovedUnderUs {
        from: PathBuf,
        to: PathBuf,
        error: String,
    },
    #[error("`{}` kept changing while polisd updated it (a hand edit saved again and again); nothing was written: try again once it is saved", .0.display())]
    KeptChanging(PathBuf),
    #[error("cannot move `{}`: it does not exist", .0.display())]
    Missing(PathBuf),
    #[error("`{}` has {links} hard links; polisd never writes a file that another name (perhaps outside _polis/) shares — replace it with a plain copy (`cp --remove-destination`)", .path.display())]
    HardLinked { path: PathBuf, links: u64 },
    #[error("short write appending to `{}`: {written} of {wanted} bytes, taken back (the disk is full or a file-size limit is reached); free some space, then run it again", .path.display())]
    ShortWrite {
        path: PathBuf,
        written: usize,
        wanted: usize,
    },
    #[error("cannot {op} `{}`: {}{}", .path.display(), os_text(.source), advice(.source))]
    Io {
        op: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

/// The system's words for an I/O error, without the temporary file's path that `tempfile`
/// appends (` at path "…"`): the file polisd meant to write is named already.
fn os_text(e: &io::Error) -> String {
    let text = e.to_string();
    match (e.raw_os_error(), text.find(" at path \"")) {
        (None, Some(at)) => text[..at].to_string(),
        _ => text,
    }
}

/// What to do about the I/O errors a machine causes on its own: a full disk, a size limit, a
/// read-only file system, a permission. By kind, which `tempfile`'s wrapped errors keep.
fn advice(e: &io::Error) -> &'static str {
    match e.kind() {
        io::ErrorKind::StorageFull | io::ErrorKind::QuotaExceeded => {
            "; free some space on that disk (or raise the quota), then run it again"
        }
        io::ErrorKind::FileTooLarge => {
            "; a file-size limit is reached (`ulimit -f`): raise it, then run it again"
        }
        io::ErrorKind::ReadOnlyFilesystem => {
            "; the file system is mounted read-only: remount it read-write, then run it again"
        }
        io::ErrorKind::PermissionDenied => {
            "; check the permissions and the owner of the file and its folder (`ls -l`)"
        }
        _ => "",
    }
}

pub(super) fn io_err<'a>(
    op: &'static str,
    path: &'a Path,
) -> impl FnOnce(io::Error) -> WriteError + 'a {
    move |source| WriteError::Io {
        op,
        path: path.to_path_buf(),
        source,
    }
}

impl WriteError {
    /// Whether the write was refused for what the path is (a link, a folder, a path out of
    /// the polis) rather than failed for a passing reason (I/O, a full disk): a refusal is
    /// the same on every retry.
    pub fn is_refusal(&self) -> bool {
        matches!(
            self,
            WriteError::Absolute(_)
                | WriteError::Escapes(_)
                | WriteError::Empty
                | WriteError::NotAProjectFile(_)
                | WriteError::Symlink { .. }
                | WriteError::NotADirectory { .. }
                | WriteError::NotRegular { .. }
                | WriteError::TargetExists { .. }
                | WriteError::HardLinked { .. }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A full disk met while writing the temporary file (`tempfile` wraps the error with the
    /// temporary file's path): the message names the file polisd meant to write and the fix.
    #[test]
    fn a_full_disk_says_what_to_do_and_hides_the_temporary_file() {
        let wrapped = io::Error::new(
            io::ErrorKind::StorageFull,
            format!(
                "{} at path \"/p/_polis/contracts/open/.polisd-1-abc.tmp\"",
                io::Error::from_raw_os_error(libc::ENOSPC)
            ),
        );
        let text = io_err("write", Path::new("contracts/open/x.md"))(wrapped).to_string();
        assert_eq!(
            text,
            "cannot write `contracts/open/x.md`: No space left on device (os error 28); free \
             some space on that disk (or raise the quota), then run it again"
        );
        let read_only = io_err("append to", Path::new("chronicle.md"))(
            io::Error::from_raw_os_error(libc::EROFS),
        );
        assert!(
            read_only.to_string().contains("remount it read-write"),
            "{read_only}"
        );
    }
}
