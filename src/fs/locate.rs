//! Finding the `_polis/` folder a command is about (SPEC §1), from a given path or by walking
//! up from the working directory.

use crate::protocol::layout::CONSTITUTION;
use std::path::{Path, PathBuf};

/// Why no polis was found.
#[derive(Debug, thiserror::Error)]
pub enum LocateError {
    #[error("{0} is neither a project root with `_polis/{CONSTITUTION}` nor a `_polis/` folder holding `{CONSTITUTION}`; pass the project root or its `_polis/` folder, or create a polis there with `polisd init`")]
    NotAPolis(PathBuf),
    #[error("no `_polis/{CONSTITUTION}` in {0} or any folder above it; pass the project root or `_polis/` folder as PATH, or create one with `polisd init`")]
    NotFound(PathBuf),
    #[error("{} cannot be read ({error}), so polisd cannot tell whether {} is a polis; fix the permissions of that folder (or run as a user who may read it)", .path.display(), .path.parent().unwrap_or(Path::new("/")).display())]
    Unreadable {
        path: PathBuf,
        error: std::io::Error,
    },
}

/// An exclusive advisory lock (`flock`) on a project folder, held until dropped; see
/// [`lock_project`].
#[derive(Debug)]
pub struct ProjectLock {
    _dir: std::fs::File,
}

/// Waits for and takes an exclusive lock on `project_root` itself, where `polisd init` founds
/// a polis. Racing inits meet here whatever state folder each was given (agents sandboxed
/// apart share the project, not a home), and locking a folder writes nothing in it.
pub fn lock_project(project_root: &Path) -> std::io::Result<ProjectLock> {
    use std::os::unix::fs::OpenOptionsExt;
    let dir = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY)
        .open(project_root)?;
    fs4::fs_std::FileExt::lock_exclusive(&dir)?;
    Ok(ProjectLock { _dir: dir })
}

fn is_polis_dir(dir: &Path) -> bool {
    dir.join(CONSTITUTION).is_file()
}

/// The constitution polisd may not look at in `dir` (a folder closed to this user), and why:
/// such a folder is no proof that there is no polis, and `polisd init` there would not help.
fn unreadable_constitution(dir: &Path) -> Option<LocateError> {
    let path = dir.join(CONSTITUTION);
    match std::fs::metadata(&path) {
        Err(error) if error.kind() == std::io::ErrorKind::PermissionDenied => {
            Some(LocateError::Unreadable { path, error })
        }
        _ => None,
    }
}

/// Finds the `_polis/` folder for a command (SPEC §1): the given project root or `_polis/`
/// folder, or the first one walking up from `cwd`.
pub fn locate(given: Option<&Path>, cwd: &Path) -> Result<PathBuf, LocateError> {
    if let Some(path) = given {
        let path = if path.is_absolute() {
            path.to_path_buf()
        } else {
            cwd.join(path)
        };
        let inner = path.join("_polis");
        if is_polis_dir(&inner) {
            return Ok(inner);
        }
        if is_polis_dir(&path) {
            return Ok(path);
        }
        return Err(unreadable_constitution(&inner)
            .or_else(|| unreadable_constitution(&path))
            .unwrap_or(LocateError::NotAPolis(path)));
    }
    let mut unreadable = None;
    for dir in cwd.ancestors() {
        if dir.file_name().is_some_and(|n| n == "_polis") && is_polis_dir(dir) {
            return Ok(dir.to_path_buf());
        }
        let inner = dir.join("_polis");
        if is_polis_dir(&inner) {
            return Ok(inner);
        }
        if unreadable.is_none() {
            unreadable = unreadable_constitution(&inner);
        }
    }
    Err(unreadable.unwrap_or(LocateError::NotFound(cwd.to_path_buf())))
}

/// Syncthing's folder marker, which it keeps at the top of every folder it shares (its default
/// `markerName`).
const SYNCTHING_MARKER: &str = ".stfolder";

/// Whether a sync tool shares `_polis/` with other machines: a Syncthing folder marker in it or
/// in a folder above it. Another machine's daemon then sees each contract too, and its edits race
/// this one's (a routing block written there while the contract is settled here brings the open
/// copy back, as a modification wins over a deletion).
pub fn shared_by_sync_tool(polis: &Path) -> bool {
    polis
        .ancestors()
        .any(|dir| dir.join(SYNCTHING_MARKER).is_dir())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locate_accepts_root_or_polis_and_walks_up() {
        let dir = tempfile::tempdir().unwrap();
        let polis = dir.path().join("_polis");
        std::fs::create_dir_all(polis.join("citizens")).unwrap();
        std::fs::write(polis.join(CONSTITUTION), "# c\n").unwrap();
        assert_eq!(locate(Some(dir.path()), Path::new("/")).unwrap(), polis);
        assert_eq!(locate(Some(&polis), Path::new("/")).unwrap(), polis);
        assert_eq!(locate(None, &polis.join("citizens")).unwrap(), polis);
        assert!(locate(Some(&polis.join("citizens")), Path::new("/")).is_err());
    }
}
