//! Appends: one `write` under an advisory lock, on a file opened for append without following
//! links, with a newline first when the file does not end with one; and the variants that
//! check or compose what to add from the bytes read under that lock.

use super::*;

/// What [`Writer::append`] adds to a file.
enum Addition<'a> {
    /// These bytes.
    Bytes(&'a [u8]),
    /// These bytes, unless the check says the file (read under the lock) already holds them.
    Unless(&'a [u8], &'a dyn Fn(&[u8]) -> bool),
    /// What the function makes of the file's bytes read under the lock (nothing: no write).
    Composed(&'a mut dyn FnMut(&[u8]) -> Vec<u8>),
}

impl Writer {
    /// Appends `bytes` to `rel` (created if missing) with one `write` on a file opened for
    /// append without following links, under an advisory exclusive lock. If the file does not
    /// end with a newline, one is written first (in the same `write`), so an agent's unfinished
    /// last line never swallows ours.
    pub fn append_locked(&self, rel: impl AsRef<Path>, bytes: &[u8]) -> Result<(), WriteError> {
        self.append(rel.as_ref(), Addition::Bytes(bytes))
            .map(|_| ())
    }

    /// [`Writer::append_locked`], unless `already(current bytes)` says the file holds what the
    /// append would add: the check and the append happen under the same lock, so two polisd
    /// processes (or a one-shot command beside the daemon) never append the same block twice.
    /// Returns whether it appended.
    pub fn append_locked_unless(
        &self,
        rel: impl AsRef<Path>,
        bytes: &[u8],
        already: impl Fn(&[u8]) -> bool,
    ) -> Result<bool, WriteError> {
        self.append(rel.as_ref(), Addition::Unless(bytes, &already))
    }

    /// [`Writer::append_locked`] of what `compose(current bytes)` returns, the file read under
    /// the append's lock (empty when it does not exist yet): several blocks checked against the
    /// file and appended in one `write`. An empty result writes nothing. Returns whether it
    /// appended.
    pub fn append_locked_composed(
        &self,
        rel: impl AsRef<Path>,
        mut compose: impl FnMut(&[u8]) -> Vec<u8>,
    ) -> Result<bool, WriteError> {
        self.append(rel.as_ref(), Addition::Composed(&mut compose))
    }

    fn append(&self, rel: &Path, addition: Addition<'_>) -> Result<bool, WriteError> {
        let t = self.target(rel)?;
        if matches!(addition, Addition::Bytes(b) | Addition::Unless(b, _) if b.is_empty()) {
            return Ok(false);
        }
        self.ensure_parents(&t, true)?;
        if let Some(meta) = self.existing_file(&t)? {
            check_single_link(&t, &meta)?;
        }
        let mut file = syscall::open_for_append(|| {
            OpenOptions::new()
                .read(true)
                .append(true)
                .create(true)
                .custom_flags(no_follow_flags())
                .open(&t.abs)
        })
        .map_err(|e| self.link_or_io(&t, e, "open for append"))?;
        syscall::regular(&t, &file)?;
        fs4::fs_std::FileExt::lock_exclusive(&file).map_err(io_err("lock", &t.rel))?;
        // Re-stat under the lock: another locked appender may have written meanwhile, and the
        // name may have gained a second link since it was opened.
        let meta = file.metadata().map_err(io_err("inspect", &t.rel))?;
        check_single_link(&t, &meta)?;
        // Read once, under the lock, when the duplicate check, the composition or the ledger's
        // hash of the whole file needs it; otherwise only the last byte (does the file end a
        // line?).
        let whole = !matches!(addition, Addition::Bytes(_)) || self.recording;
        let mut all = if whole {
            read_open(&t, &file)?
        } else {
            Vec::new()
        };
        let composed;
        let bytes = match addition {
            Addition::Bytes(bytes) => bytes,
            Addition::Unless(bytes, already) => {
                if !all.is_empty() && already(&all) {
                    return Ok(false);
                }
                bytes
            }
            Addition::Composed(compose) => {
                composed = compose(&all);
                if composed.is_empty() {
                    return Ok(false);
                }
                &composed
            }
        };
        let len = if whole { all.len() as u64 } else { meta.len() };
        let ends_a_line = if whole {
            all.last().is_none_or(|b| *b == b'\n')
        } else if len == 0 {
            true
        } else {
            let mut last = [0u8; 1];
            std::os::unix::fs::FileExt::read_exact_at(&file, &mut last, len - 1)
                .map_err(io_err("read the end of", &t.rel))?;
            last[0] == b'\n'
        };
        let mut block = Vec::with_capacity(bytes.len() + 1);
        if !ends_a_line {
            block.push(b'\n');
        }
        block.extend_from_slice(bytes);
        match file.write(&block) {
            Ok(n) if n == block.len() => {}
            outcome => {
                // Undo a partial block only if nobody else's bytes follow ours.
                let written = *outcome.as_ref().unwrap_or(&0);
                if let Ok(now) = file.metadata().map(|m| m.len()) {
                    if now == len + written as u64 {
                        let _ = file.set_len(len);
                    }
                }
                return Err(match outcome {
                    Err(e) => WriteError::Io {
                        op: "append to",
                        path: t.rel,
                        source: e,
                    },
                    Ok(n) => WriteError::ShortWrite {
                        path: t.rel,
                        written: n,
                        wanted: block.len(),
                    },
                });
            }
        }
        file.sync_data().map_err(io_err("sync", &t.rel))?;
        if self.allow.is_none() && t.rel == Path::new(crate::protocol::layout::CHRONICLE) {
            // Noted under the append's lock, after the write: the daemon, taking the notes
            // before it reads the chronicle, finds every noted line there unless it was lost.
            crate::fs::state::note_appended(&self.root, bytes);
        }
        if !self.recording {
            return Ok(true);
        }
        // An agent's unlocked `>>` landing between the read and the write makes this hash
        // differ from the file: its event is then taken for someone else's, which costs one
        // more look and loses nothing.
        all.extend_from_slice(&block);
        self.record(&t.rel, Ledger::Wrote(sha256(&all)));
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::polis;
    use super::*;

    #[test]
    fn the_duplicate_check_runs_under_the_append_lock() {
        let (_d, w) = polis();
        let w = std::sync::Arc::new(w);
        let block = b"<!-- polisd:x:0123456789abcdef -->\n";
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let w = w.clone();
                std::thread::spawn(move || {
                    w.append_locked_unless("inbox.md", block, |cur| {
                        cur.windows(block.len()).any(|win| win == block)
                    })
                    .unwrap()
                })
            })
            .collect();
        let appended = threads
            .into_iter()
            .map(|t| t.join().unwrap())
            .filter(|a| *a)
            .count();
        assert_eq!(appended, 1);
        assert_eq!(fs::read(w.root().join("inbox.md")).unwrap(), block);
    }

    /// The daemon holds a read lease for the moment it compares and replaces a file; an append
    /// meanwhile (another process's `polisd log`) waits for the holder to let go instead of
    /// failing with "Resource temporarily unavailable".
    #[cfg(target_os = "linux")]
    #[test]
    fn an_append_waits_for_a_read_lease_to_be_given_up() {
        let (_d, w) = polis();
        let path = w.root().join("chronicle.md");
        fs::write(&path, "a\n").unwrap();
        let holder = File::open(&path).unwrap();
        assert!(
            matches!(lease::take(&holder), lease::Taken::Held),
            "the owner of a file is granted a read lease"
        );
        let releaser = std::thread::spawn(move || {
            let deadline = Instant::now() + Duration::from_secs(10);
            while !lease::broken(&holder) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(5));
            }
            // Held a little longer, as a daemon finishing its replace would.
            std::thread::sleep(Duration::from_millis(50));
            drop(holder);
        });
        w.append_locked("chronicle.md", b"b\n").unwrap();
        releaser.join().unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"a\nb\n");
    }
}
