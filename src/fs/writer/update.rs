//! Read-modify-write of a file polisd and people both edit (reservations, silences, council
//! state): serialised against other polisd processes by a lock, and compare-before-replace
//! against a hand edit, which takes no lock.

use super::*;

/// How often an update decides again on a file a hand edit changed under it, before it gives
/// up with nothing written.
const ROUNDS: usize = 8;

impl Writer {
    /// A read-modify-write of `rel` that no other process doing the same can interleave with:
    /// under an exclusive advisory lock on `.polisd-<name>.lock` beside the file, reads the
    /// current bytes (`None`: no file), asks `decide` for the new bytes (`None`: leave it),
    /// and replaces the file atomically when they differ. The lock is on a file of its own,
    /// not on `rel`, because the atomic rename swaps `rel`'s inode: a waiter holding the old
    /// one would read stale bytes. Nothing is written when `decide` fails.
    ///
    /// A hand edit takes no lock, so the file is read again just before the replace, and the
    /// replace swaps the files so the one it displaced is in hand: when either shows a save
    /// that landed after the read, that save stays in place and `decide` is asked again on
    /// it (so `decide` must be free of side effects). A file that keeps changing is refused
    /// with [`WriteError::KeptChanging`].
    ///
    /// The lock file is empty, hidden and never removed (removing a lock file races with a
    /// process about to take it); watchers ignore `.polisd-*` names.
    pub fn update_locked<T, E: From<WriteError>>(
        &self,
        rel: impl AsRef<Path>,
        mut decide: impl FnMut(Option<&[u8]>) -> Result<(Option<Vec<u8>>, T), E>,
    ) -> Result<(WriteOutcome, T), E> {
        let t = self.target(rel.as_ref())?;
        self.ensure_parents(&t, true)?;
        let name = t
            .rel
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let lock = self.lock_named(&t.rel.with_file_name(format!("{TEMP_PREFIX}{name}.lock")))?;
        for _ in 0..ROUNDS {
            // Held open, so the swap can tell the file read from one renamed in since.
            let opened = match self.existing_file(&t)? {
                Some(_) => Some(open_no_follow(&t)?),
                None => None,
            };
            let current = opened.as_ref().map(|f| read_open(&t, f)).transpose()?;
            let (new, out) = decide(current.as_deref())?;
            let bytes = match new {
                Some(bytes) if current.as_deref() != Some(bytes.as_slice()) => bytes,
                _ => return Ok((WriteOutcome::Unchanged, out)),
            };
            let mode = opened
                .as_ref()
                .and_then(|f| f.metadata().ok())
                .map(|m| m.permissions().mode());
            let tmp = write_temp(&t, &bytes, mode)?;
            #[cfg(test)]
            super::tests::BEFORE_RECHECK.with(|h| h.borrow().as_ref().map(|h| h(&t.abs)));
            self.ensure_parents(&t, false)?;
            let again = match self.existing_file(&t)? {
                Some(_) => Some(read_no_follow(&t)?),
                None => None,
            };
            if again != current {
                continue;
            }
            #[cfg(test)]
            super::tests::BEFORE_SWAP.with(|h| h.borrow().as_ref().map(|h| h(&t.abs)));
            let placed = match (&opened, &current) {
                (Some(file), Some(read)) => swap_in(&t, tmp, file, read)?,
                _ => create(&t, tmp)?,
            };
            if placed {
                self.record(&t.rel, Ledger::Wrote(sha256(&bytes)));
                drop(lock);
                return Ok((WriteOutcome::Written, out));
            }
        }
        Err(WriteError::KeptChanging(t.rel.clone()).into())
    }
}

/// Puts `tmp` in place of the file `opened` was opened from, whose bytes were `read`; `false`
/// (and the displaced file put back) when another file had been renamed in since, or the file
/// was written in place since. Where the system cannot swap two files, a plain replace: the
/// re-read before it is then the only guard.
fn swap_in(
    t: &Target,
    tmp: tempfile::NamedTempFile,
    opened: &File,
    read: &[u8],
) -> Result<bool, WriteError> {
    use std::os::unix::fs::MetadataExt;
    match rename_exchange(tmp.path(), &t.abs) {
        Ok(()) => {
            let ino = |m: io::Result<fs::Metadata>| m.ok().map(|m| m.ino());
            let renamed_in = ino(fs::symlink_metadata(tmp.path())) != ino(opened.metadata());
            // The displaced file is the one read, but a save written into it in place since
            // the re-read would go with it.
            if renamed_in || fs::read(tmp.path()).ok().as_deref() != Some(read) {
                put_back(t, tmp)?;
                return Ok(false);
            }
            // The displaced file, now under the temporary name, is removed with it.
            drop(tmp);
            sync_dir(t.dir())?;
            Ok(true)
        }
        Err(e) if e.kind() == io::ErrorKind::Unsupported => persist(tmp, t).map(|_| true),
        Err(e) => Err(io_err("replace", &t.rel)(e)),
    }
}

/// Puts `tmp` where no file was; `false` when one was made there since. Where the system has
/// no such rename, a plain one.
fn create(t: &Target, tmp: tempfile::NamedTempFile) -> Result<bool, WriteError> {
    match rename_no_replace(tmp.path(), &t.abs) {
        Ok(()) => {
            // Renamed away: nothing is left for the handle to remove.
            let _ = tmp.into_temp_path().keep();
            sync_dir(t.dir())?;
            Ok(true)
        }
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(false),
        Err(e) if e.kind() == io::ErrorKind::Unsupported => persist(tmp, t).map(|_| true),
        Err(e) => Err(io_err("create", &t.rel)(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{polis, swaps_files_or_skip, BEFORE_RECHECK, BEFORE_SWAP};
    use super::*;
    use std::cell::{Cell, RefCell};
    use std::rc::Rc;

    type Hook = std::thread::LocalKey<RefCell<Option<Box<dyn Fn(&Path)>>>>;

    /// Updates `r.yml` (appending "ours") while a hand edit saves "agent" the way editors do
    /// (a copy renamed in) at `hook`, `saves` times at most. Returns the outcome, the file's
    /// bytes and how often `decide` was asked.
    fn update_with_saves(
        w: &Writer,
        hook: &'static Hook,
        saves: usize,
    ) -> (Result<WriteOutcome, WriteError>, Vec<u8>, usize) {
        let done = Rc::new(Cell::new(0));
        let count = done.clone();
        hook.with(|h| {
            *h.borrow_mut() = Some(Box::new(move |p: &Path| {
                if count.get() < saves {
                    count.set(count.get() + 1);
                    let copy = p.with_extension("swp");
                    fs::write(&copy, format!("agent {}\n", count.get())).unwrap();
                    fs::rename(&copy, p).unwrap();
                }
            }))
        });
        let mut asked = 0;
        let out = w
            .update_locked("r.yml", |cur| {
                asked += 1;
                let mut text = cur.map(<[u8]>::to_vec).unwrap_or_default();
                text.extend_from_slice(b"ours\n");
                Ok::<_, WriteError>((Some(text), ()))
            })
            .map(|(o, ())| o);
        hook.with(|h| *h.borrow_mut() = None);
        let bytes = fs::read(w.root().join("r.yml")).unwrap_or_default();
        let names: Vec<_> = fs::read_dir(w.root())
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| !n.ends_with(".lock"))
            .collect();
        assert_eq!(names, ["r.yml"], "temporary files removed");
        (out, bytes, asked)
    }

    #[test]
    fn a_hand_save_before_the_reread_is_kept_and_decided_on_again() {
        let (_d, w) = polis();
        fs::write(w.root().join("r.yml"), "old\n").unwrap();
        let (out, bytes, asked) = update_with_saves(&w, &BEFORE_RECHECK, 1);
        assert_eq!(out.unwrap(), WriteOutcome::Written);
        assert_eq!(bytes, b"agent 1\nours\n");
        assert_eq!(asked, 2);
    }

    /// The window the re-read cannot close: the swap hands back the file displaced, which is
    /// the hand save, so it goes back in place and the update is decided on it.
    #[test]
    fn a_hand_save_after_the_reread_is_put_back_and_decided_on_again() {
        let (_d, w) = polis();
        if !swaps_files_or_skip(w.root(), "the re-read is the only guard") {
            return;
        }
        fs::write(w.root().join("r.yml"), "old\n").unwrap();
        let (out, bytes, asked) = update_with_saves(&w, &BEFORE_SWAP, 1);
        assert_eq!(out.unwrap(), WriteOutcome::Written);
        assert_eq!(bytes, b"agent 1\nours\n");
        assert_eq!(asked, 2);
    }

    /// A save written into the same file in place, not renamed in: the swap's displaced file
    /// is the one read, but its bytes are not, so it goes back and is decided on again.
    #[test]
    fn a_save_written_in_place_after_the_reread_is_put_back_and_decided_on_again() {
        let (_d, w) = polis();
        if !swaps_files_or_skip(w.root(), "the re-read is the only guard") {
            return;
        }
        fs::write(w.root().join("r.yml"), "old\n").unwrap();
        let saved = Rc::new(Cell::new(false));
        let once = saved.clone();
        BEFORE_SWAP.with(|h| {
            *h.borrow_mut() = Some(Box::new(move |p: &Path| {
                if !once.replace(true) {
                    use std::io::Write;
                    let mut file = fs::OpenOptions::new().append(true).open(p).unwrap();
                    file.write_all(b"agent\n").unwrap();
                }
            }))
        });
        let mut asked = 0;
        let out = w.update_locked("r.yml", |cur| {
            asked += 1;
            let mut text = cur.map(<[u8]>::to_vec).unwrap_or_default();
            text.extend_from_slice(b"ours\n");
            Ok::<_, WriteError>((Some(text), ()))
        });
        BEFORE_SWAP.with(|h| *h.borrow_mut() = None);
        assert_eq!(out.unwrap().0, WriteOutcome::Written);
        assert!(saved.get(), "the hook ran");
        assert_eq!(
            fs::read(w.root().join("r.yml")).unwrap(),
            b"old\nagent\nours\n"
        );
        assert_eq!(asked, 2);
    }

    #[test]
    fn a_file_made_by_hand_while_polisd_creates_it_is_kept() {
        let (_d, w) = polis();
        let (out, bytes, _) = update_with_saves(&w, &BEFORE_SWAP, 1);
        assert_eq!(out.unwrap(), WriteOutcome::Written);
        assert_eq!(bytes, b"agent 1\nours\n");
    }

    #[test]
    fn a_file_that_keeps_changing_is_refused_with_the_last_save_in_place() {
        let (_d, w) = polis();
        fs::write(w.root().join("r.yml"), "old\n").unwrap();
        let (out, bytes, asked) = update_with_saves(&w, &BEFORE_RECHECK, usize::MAX);
        assert!(matches!(out, Err(WriteError::KeptChanging(_))), "{out:?}");
        assert_eq!(bytes, format!("agent {ROUNDS}\n").as_bytes());
        assert_eq!(asked, ROUNDS);
    }
}
