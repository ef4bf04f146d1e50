//! Copies of `chronicle.md` and its archives kept by a long-running reader (the daemon's
//! engine, the dashboard), so a read after an append reads the appended bytes, and an archive
//! is read again only when it changes, whatever their size.
//!
//! A copy is shared (`Arc<String>`) with the polis it was read into and appended to in place
//! when nobody else holds it; a reader that keeps an older polis alive makes the next append
//! copy the text, so such readers drop theirs before reading again.

use crate::fs::snapshot;
use crate::fs::state::Fingerprint;
use crate::fs::writer;
use crate::protocol::layout;
use std::collections::{BTreeSet, HashMap};
use std::path::Path;

/// Bytes of the chronicle before the validated offset that are hashed to notice a rewrite.
pub const TAIL_WINDOW: usize = 4096;

/// A reader's copy of `chronicle.md`: which file it was (device, inode) and its text.
#[derive(Debug)]
pub struct ChronicleCopy {
    dev: u64,
    ino: u64,
    text: std::sync::Arc<String>,
    /// The text's first bytes, this many, hold no `<<<<<<<` (no conflict block can open
    /// there). The copy only grows at its end, so this stays true until it is replaced.
    clean_upto: usize,
}

/// A reader's copy of an archive, which changes rarely (a rollover writes it once): kept
/// while the file's identity, size and mtime stay the same.
#[derive(Debug)]
pub struct ArchiveCopy {
    stamp: (u64, u64, Fingerprint),
    text: std::sync::Arc<String>,
}

/// The chronicle files as a reader keeps them between reads, so a read takes the bytes
/// appended to `chronicle.md` and no archive at all, whatever their size.
#[derive(Debug, Default)]
pub struct ChronicleCopies {
    chronicle: Option<ChronicleCopy>,
    archives: HashMap<String, ArchiveCopy>,
    /// Archives read (or found unchanged) in the current pass; the others are dropped.
    seen: BTreeSet<String>,
}

impl ChronicleCopies {
    /// Forgets the archives the last read of the polis did not see.
    pub fn forget_unseen(&mut self) {
        let seen = std::mem::take(&mut self.seen);
        self.archives.retain(|name, _| seen.contains(name));
    }
}

impl snapshot::ChronicleSource for ChronicleCopies {
    fn chronicle(&mut self, root: &Path) -> snapshot::ChronicleRead {
        read_chronicle(root, &mut self.chronicle)
    }

    fn chronicle_conflict_line(&mut self, text: &str) -> Option<usize> {
        const OPENING: &[u8] = b"<<<<<<<";
        let Some(copy) = self
            .chronicle
            .as_mut()
            .filter(|c| c.text.as_ptr() == text.as_ptr() && c.text.len() == text.len())
        else {
            return crate::protocol::merge::conflict_marker_line(text);
        };
        // An opening marker that straddles the clean part's end starts at most 6 bytes back.
        let from = copy
            .clean_upto
            .min(text.len())
            .saturating_sub(OPENING.len() - 1);
        if memchr::memmem::find(&text.as_bytes()[from..], OPENING).is_none() {
            copy.clean_upto = text.len();
            return None;
        }
        crate::protocol::merge::conflict_marker_line(text)
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
        // A stamp taken in the clock tick of the file's change may also be a second write's in
        // that tick: no copy is kept on its word.
        let stamp = stamp
            .filter(|(_, _, print)| !print.may_change_unseen(crate::fs::state::read_instant()));
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

/// `chronicle.md`, reading only what was appended to `copy` when the file is the same one
/// (device and inode) and the bytes before the copy's end are unchanged; otherwise the whole
/// file, as [`snapshot::read_text`] reads it.
pub fn read_chronicle(root: &Path, copy: &mut Option<ChronicleCopy>) -> snapshot::ChronicleRead {
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
                clean_upto: 0,
            });
        }
        text
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::snapshot::ChronicleSource as _;
    use std::time::Duration;

    #[test]
    fn a_conflict_block_appended_to_the_kept_copy_is_found_also_across_two_reads() {
        use std::io::Write;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(layout::CHRONICLE);
        let line = "- 2026-01-02 10:00 | alpha-agent | did | - | x\n";
        std::fs::write(&path, line.repeat(50)).unwrap();
        let append = |bytes: &str| {
            let mut f = std::fs::OpenOptions::new()
                .append(true)
                .open(&path)
                .unwrap();
            f.write_all(bytes.as_bytes()).unwrap();
        };
        let mut copies = ChronicleCopies::default();
        let check = |copies: &mut ChronicleCopies| {
            let text = copies.chronicle(dir.path()).unwrap().unwrap();
            copies.chronicle_conflict_line(&text)
        };
        assert_eq!(check(&mut copies), None);
        let clean = copies.chronicle.as_ref().unwrap().clean_upto;
        assert_eq!(clean, line.len() * 50, "the whole text found clean");
        // The opening marker split across two appends (and two reads): found once whole.
        append("<<<");
        assert_eq!(check(&mut copies), None);
        append("<<<< HEAD\n");
        append(line);
        append("=======\n>>>>>>> theirs\n");
        assert_eq!(check(&mut copies), Some(51));
        // A replaced file (another inode) is searched from its start.
        std::fs::remove_file(&path).unwrap();
        std::fs::write(&path, format!("<<<<<<< a\n{line}>>>>>>> b\n")).unwrap();
        assert_eq!(check(&mut copies), Some(1));
    }

    #[test]
    fn an_archive_is_read_again_only_when_it_changes() {
        let dir = tempfile::tempdir().unwrap();
        let name = "chronicle-2026-Q1.md";
        let path = dir.path().join(name);
        std::fs::write(&path, "- 2026-01-02 10:00 | a | did | - | x\n").unwrap();
        let mut copies = ChronicleCopies::default();
        // Read in the clock tick of its change, the archive is not kept on its stamp's word.
        let print = Fingerprint::of(&std::fs::symlink_metadata(&path).unwrap());
        let changed_at = print.changed_at();
        crate::fs::state::set_read_instant(Some(changed_at + Duration::from_millis(5)));
        let first = copies.archive(dir.path(), name).unwrap().unwrap();
        let again = copies.archive(dir.path(), name).unwrap().unwrap();
        assert!(!std::sync::Arc::ptr_eq(&first, &again), "read again");
        // Read later, it is kept while it stays unchanged.
        crate::fs::state::set_read_instant(Some(changed_at + Duration::from_secs(60)));
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
        crate::fs::state::set_read_instant(None);
    }
}
