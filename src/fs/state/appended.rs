//! The chronicle lines this machine appended, kept in the polis's state folder
//! (`chronicle-appended.md`) until the daemon has read them in `chronicle.md`.
//!
//! A sync tool puts a peer's version of the chronicle in place by renaming it over the file.
//! A line a command appended after the tool's look at the file is gone with the rename, and
//! when the daemon had not read it yet (it was starting, busy, or not running), nothing knew
//! the line was ever there: the daemon restores only lines it knows of (SPEC §3 C009). Every
//! append through the writer notes its lines here; the daemon's chronicle pass takes the
//! notes, keeps those whose line it has not read yet, and treats a line found nowhere as lost.

use super::{canonical, io_err, polis_state_dir, state_base_dir, StateError};
use std::fs::{self, File, OpenOptions};
use std::io::{Read, Seek, Write};
use std::path::Path;

const APPENDED_FILE: &str = "chronicle-appended.md";

/// Past this size nobody is taking the notes (no daemon has run for a long while), and a
/// daemon that starts reads the chronicle as it then is: new notes are not kept.
const MAX_BYTES: u64 = 1 << 20;

/// Notes `lines` (whole lines, as appended) for the daemon of the polis at `polis_root`.
/// The append they describe has been made, so a failure here is logged, not returned.
pub fn note_appended(polis_root: &Path, lines: &[u8]) {
    let noted = state_base_dir().and_then(|base| {
        let dir = polis_state_dir(&base, &canonical(polis_root));
        fs::create_dir_all(&dir).map_err(io_err("create", &dir))?;
        note_in(&dir, lines)
    });
    if let Err(e) = noted {
        tracing::debug!("could not note an appended chronicle line: {e}");
    }
}

fn note_in(dir: &Path, lines: &[u8]) -> Result<(), StateError> {
    let path = dir.join(APPENDED_FILE);
    let mut file = OpenOptions::new()
        .create(true)
        .read(true)
        .append(true)
        .open(&path)
        .map_err(io_err("open", &path))?;
    fs4::fs_std::FileExt::lock_exclusive(&file).map_err(io_err("lock", &path))?;
    let len = file.metadata().map_err(io_err("inspect", &path))?.len();
    if len >= MAX_BYTES {
        return Ok(());
    }
    // A note cut short before this one (a full disk, a crash) goes, rather than join it.
    let whole = whole_lines_len(&file, len).map_err(io_err("read", &path))?;
    if whole != len {
        file.set_len(whole).map_err(io_err("truncate", &path))?;
    }
    let mut block = lines.to_vec();
    if !block.ends_with(b"\n") {
        block.push(b'\n');
    }
    file.write_all(&block).map_err(|e| {
        // Not left half written: the next note would join it.
        let _ = file.set_len(whole);
        io_err("append to", &path)(e)
    })
}

/// The length of the first `len` bytes of `file` up to the end of their last complete line.
fn whole_lines_len(file: &File, len: u64) -> std::io::Result<u64> {
    use std::os::unix::fs::FileExt;
    let mut last = [0u8];
    if len == 0 || (file.read_at(&mut last, len - 1)? == 1 && last[0] == b'\n') {
        return Ok(len);
    }
    let mut bytes = vec![0u8; len as usize];
    file.read_exact_at(&mut bytes, 0)?;
    Ok(complete_lines_len(&bytes) as u64)
}

/// The length of `bytes` up to the end of their last complete line.
fn complete_lines_len(bytes: &[u8]) -> usize {
    bytes.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1)
}

/// Hands the noted lines (in the order they were appended) to `keep` under the notes' lock,
/// and keeps only the lines it returns. Costs one `stat` when there are none.
pub fn take_appended(
    state_dir: &Path,
    keep: impl FnOnce(Vec<String>) -> Vec<String>,
) -> Result<(), StateError> {
    let path = state_dir.join(APPENDED_FILE);
    if fs::metadata(&path).map_or(true, |m| m.len() == 0) {
        return Ok(());
    }
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .open(&path)
        .map_err(io_err("open", &path))?;
    fs4::fs_std::FileExt::lock_exclusive(&file).map_err(io_err("lock", &path))?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)
        .map_err(io_err("read", &path))?;
    // Complete lines only: a note cut short was never appended whole.
    let whole = complete_lines_len(&bytes);
    let noted: Vec<String> = String::from_utf8_lossy(&bytes[..whole])
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(str::to_string)
        .collect();
    let kept = keep(noted);
    rewrite(&mut file, &kept).map_err(io_err("rewrite", &path))
}

/// Replaces the notes' content in place: a rename would leave a command waiting on the old
/// file's lock to append where nobody looks.
fn rewrite(file: &mut File, lines: &[String]) -> std::io::Result<()> {
    file.set_len(0)?;
    file.rewind()?;
    let mut text = String::new();
    for l in lines {
        text.push_str(l);
        text.push('\n');
    }
    file.write_all(text.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The notes, all but the first `read` of them kept.
    fn taken(dir: &Path, read: usize) -> Vec<String> {
        let mut seen = Vec::new();
        take_appended(dir, |lines| {
            seen.clone_from(&lines);
            lines.into_iter().skip(read).collect()
        })
        .unwrap();
        seen
    }

    #[test]
    fn notes_are_taken_in_order_and_only_the_kept_ones_stay() {
        let dir = tempfile::tempdir().unwrap();
        assert!(taken(dir.path(), 0).is_empty(), "no notes, no file");
        note_in(dir.path(), b"- a\n").unwrap();
        note_in(dir.path(), b"- b\n- c").unwrap();
        assert_eq!(taken(dir.path(), 1), ["- a", "- b", "- c"]);
        assert_eq!(taken(dir.path(), 2), ["- b", "- c"]);
        assert!(taken(dir.path(), 0).is_empty());
    }

    #[test]
    fn a_note_cut_short_is_never_taken_for_a_line() {
        // A write cut short (a full disk, a crash, a damaged state folder): the partial line
        // was never appended whole, and is neither handed on nor joined to the next note.
        let dir = tempfile::tempdir().unwrap();
        fs::write(
            dir.path().join(APPENDED_FILE),
            "- a\n- 2026-05-01 09:00 | al",
        )
        .unwrap();
        assert_eq!(taken(dir.path(), 0), ["- a"]);
        fs::write(
            dir.path().join(APPENDED_FILE),
            "- a\n- 2026-05-01 09:00 | al",
        )
        .unwrap();
        note_in(dir.path(), b"- b\n").unwrap();
        assert_eq!(taken(dir.path(), 0), ["- a", "- b"]);
    }

    #[test]
    fn notes_stop_at_the_cap_rather_than_grow_without_a_reader() {
        let dir = tempfile::tempdir().unwrap();
        let line = format!("- {}\n", "x".repeat(1023));
        for _ in 0..(MAX_BYTES as usize / line.len() + 10) {
            note_in(dir.path(), line.as_bytes()).unwrap();
        }
        let size = fs::metadata(dir.path().join(APPENDED_FILE)).unwrap().len();
        assert!(size <= MAX_BYTES + line.len() as u64, "{size}");
    }
}
