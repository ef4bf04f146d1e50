//! Telling whether a file changed without reading it: a [`Fingerprint`] of its metadata, the
//! reads too close to a change for it to vouch for ([`Unvouched`]), and the listings of the
//! polis's folders that take every file's fingerprint in one pass.

use crate::protocol::finding::Finding;
use serde::{Deserialize, Serialize};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// Cheap identity of a file's content: enough to skip a re-read. Size and mtime tell a write;
/// ctime, mode and inode tell what a write does not change: a `chmod` or `chown` (a file that
/// becomes readable) and a replacement by another file with the same size and mtime. (Older
/// versions kept only size and mtime, and before that a SHA-256 nothing read; an entry from
/// them reads with zeros here, so the file is read once more.)
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Fingerprint {
    pub size: u64,
    /// Modification time in nanoseconds since the Unix epoch.
    pub mtime_ns: i64,
    /// Status-change time in nanoseconds since the Unix epoch.
    pub ctime_ns: i64,
    pub mode: u32,
    pub ino: u64,
}

impl Fingerprint {
    /// The fingerprint of a file with metadata `meta`.
    pub fn of(meta: &fs::Metadata) -> Fingerprint {
        use std::os::unix::fs::MetadataExt;
        Fingerprint {
            size: meta.len(),
            mtime_ns: meta.mtime().saturating_mul(1_000_000_000) + meta.mtime_nsec(),
            ctime_ns: meta.ctime().saturating_mul(1_000_000_000) + meta.ctime_nsec(),
            mode: meta.mode(),
            ino: meta.ino(),
        }
    }

    /// Whether a file with this fingerprint, taken before `now`, may still change without
    /// changing its fingerprint ("racily clean", as git calls it). The kernel stamps a change
    /// with a clock that ticks every few milliseconds, so a second write of the same size in
    /// the tick of the first leaves size, times and inode as they were. A change after `now`
    /// is stamped later than a `ctime` this far behind it, and so tells.
    pub fn may_change_unseen(&self, now: SystemTime) -> bool {
        // A jiffy is at most 10 ms; a file system that keeps whole seconds (a `ctime` with no
        // nanoseconds) stamps every change of a second alike, and FAT rounds to two.
        const FINE: i64 = 20_000_000;
        const WHOLE_SECONDS: i64 = 2_000_000_000;
        let window = if self.ctime_ns % 1_000_000_000 == 0 {
            WHOLE_SECONDS
        } else {
            FINE
        };
        let now_ns = match now.duration_since(std::time::UNIX_EPOCH) {
            Ok(d) => i64::try_from(d.as_nanos()).unwrap_or(i64::MAX),
            // A clock before 1970 tells nothing: keep nothing on its word.
            Err(_) => return true,
        };
        self.ctime_ns.saturating_add(window) > now_ns
    }

    /// When the file last changed (its `ctime`), for a test to place a read after it.
    #[cfg(test)]
    pub fn changed_at(&self) -> SystemTime {
        std::time::UNIX_EPOCH + std::time::Duration::from_nanos(self.ctime_ns as u64)
    }
}

/// The files whose last read came within a clock tick of their change, so that their
/// fingerprint does not vouch for them ([`Fingerprint::may_change_unseen`]) until they are read
/// again. Kept by each long-lived reader that trusts fingerprints: the daemon, and the
/// dashboard's reader when it runs alone (`polisd serve`).
#[derive(Debug, Default)]
pub struct Unvouched(std::collections::HashSet<String>);

impl Unvouched {
    /// Notes that `rel` was just read with `fingerprint`, `read_at` being taken after the
    /// read ([`read_instant`]); whether its fingerprint may miss its next change.
    pub fn note_read(&mut self, rel: &str, fingerprint: &Fingerprint, read_at: SystemTime) -> bool {
        let racy = fingerprint.may_change_unseen(read_at);
        if racy {
            self.0.insert(rel.to_string());
        } else {
            self.0.remove(rel);
        }
        racy
    }

    /// `rel` is gone.
    pub fn forget(&mut self, rel: &str) {
        self.0.remove(rel);
    }

    /// Whether `rel`'s last read came within a clock tick of its change.
    pub fn contains(&self, rel: &str) -> bool {
        self.0.contains(rel)
    }

    /// Whether `rel`'s fingerprint `now` vouches that the file is as it was read, with `held`.
    pub fn vouches(&self, rel: &str, held: &Fingerprint, now: &Fingerprint) -> bool {
        held == now && !self.contains(rel)
    }
}

/// The instant a batch of reads is judged against for a change too recent to tell
/// ([`Fingerprint::may_change_unseen`]), taken after the reads: the wall clock, or the
/// instant a test set on this thread ([`set_read_instant`]).
pub fn read_instant() -> SystemTime {
    #[cfg(test)]
    if let Some(at) = READ_INSTANT.with(std::cell::Cell::get) {
        return at;
    }
    SystemTime::now()
}

#[cfg(test)]
thread_local! {
    static READ_INSTANT: std::cell::Cell<Option<SystemTime>> = const { std::cell::Cell::new(None) };
}

/// Sets what [`read_instant`] says on this thread (`None`: the wall clock again).
#[cfg(test)]
pub fn set_read_instant(at: Option<SystemTime>) {
    READ_INSTANT.with(|c| c.set(at));
}

/// The fingerprints of `rels`, files directly inside the folder `dir` of `root` (the caller
/// checked the folder for links), on every core: one `fstatat` of the bare name relative to the
/// open folder each, instead of a lookup of every component of the full path (100k settled
/// files are stat'ed on every restart). `None` for a file that is gone. A path outside `dir`,
/// or a folder that cannot be opened, is stat'ed by its full path.
pub fn fingerprints_in<S: AsRef<str> + Sync>(
    root: &Path,
    dir: &str,
    rels: &[S],
) -> Vec<Option<Fingerprint>> {
    let prefix = format!("{}/", dir.trim_end_matches('/'));
    fingerprints_by(
        root,
        dir,
        rels,
        |rel| {
            rel.as_ref()
                .strip_prefix(prefix.as_str())
                .filter(|n| !n.contains('/'))
        },
        |rel| root.join(rel.as_ref()),
    )
}

/// [`fingerprints_in`] of bare file names inside `dir` (a listing's names, unjoined).
pub fn fingerprints_of_names<S: AsRef<str> + Sync>(
    root: &Path,
    dir: &str,
    names: &[S],
) -> Vec<Option<Fingerprint>> {
    let folder = root.join(dir);
    fingerprints_by(
        root,
        dir,
        names,
        |name| Some(name.as_ref()).filter(|n| !n.contains('/')),
        |name| folder.join(name.as_ref()),
    )
}

fn fingerprints_by<S: Sync>(
    root: &Path,
    dir: &str,
    items: &[S],
    name_of: impl Fn(&S) -> Option<&str> + Sync,
    path_of: impl Fn(&S) -> PathBuf + Sync,
) -> Vec<Option<Fingerprint>> {
    let by_path = |item: &S| fingerprint_by_path(&path_of(item));
    let Ok(folder) = open_folder(&root.join(dir)) else {
        return crate::fs::snapshot::par_map(items, by_path);
    };
    crate::fs::snapshot::par_map(items, |item| match name_of(item) {
        Some(name) => fingerprint_at(&folder, name).unwrap_or_else(|| by_path(item)),
        None => by_path(item),
    })
}

/// The `ext` files directly inside the folder `dir` of `root`, as
/// [`crate::fs::snapshot::list_names`] names them, with their fingerprints (as
/// [`fingerprints_of_names`] takes them): the names are stat'ed on the other cores in chunks
/// while the folder is still being read, and by every core once it is (a folder of 10k settled
/// files costs its listing about a third of its stats, which this hides).
pub fn listed_fingerprints(
    root: &Path,
    dir: &str,
    ext: &str,
    findings: &mut Vec<Finding>,
) -> Listing {
    listed_fingerprints_then(root, dir, ext, findings, &|_, _| Some(()))
}

/// What [`listed_fingerprints_then`] makes of each chunk of names and their fingerprints.
pub type ChunkThen<'a, M> = dyn Fn(&ListedNames, &[Option<Fingerprint>]) -> Option<M> + Sync + 'a;

/// The names of one chunk of a listing, kept in one buffer: a name is not an allocation of its
/// own (10k names were 10k allocations to make and as many to free, on the way out of every
/// `contract settle` with no daemon).
#[derive(Debug, Default)]
pub struct ListedNames {
    text: String,
    /// Where each name ends in `text`.
    ends: Vec<u32>,
}

impl ListedNames {
    fn with_capacity(names: usize) -> ListedNames {
        ListedNames {
            // Settled files' names are about 30 bytes.
            text: String::with_capacity(names * 32),
            ends: Vec::with_capacity(names),
        }
    }

    pub fn push(&mut self, name: &str) {
        self.text.push_str(name);
        self.ends
            .push(u32::try_from(self.text.len()).expect("names under 4 GiB"));
    }

    pub fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// The `i`th name.
    pub fn get(&self, i: usize) -> &str {
        let start = i.checked_sub(1).map_or(0, |j| self.ends[j] as usize);
        &self.text[start..self.ends[i] as usize]
    }

    /// The names in order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = &str> + Clone + '_ {
        (0..self.ends.len()).map(|i| self.get(i))
    }
}

impl<'a> FromIterator<&'a str> for ListedNames {
    fn from_iter<I: IntoIterator<Item = &'a str>>(names: I) -> ListedNames {
        let mut out = ListedNames::default();
        for name in names {
            out.push(name);
        }
        out
    }
}

/// [`listed_fingerprints`], calling `then` on each chunk of names and their fingerprints on the
/// thread that stat'ed it, as soon as it is stat'ed (a caller matching the names against what
/// it knows does it there, beside the other chunks' stats); its result is kept with the chunk.
/// `None` means "not yet" (what it needs is still being made elsewhere): the chunk is tried
/// once more when the folder is read to its end, and left without a result if it is still
/// `None` then.
pub fn listed_fingerprints_then<M: Send>(
    root: &Path,
    dir: &str,
    ext: &str,
    findings: &mut Vec<Finding>,
    then: &ChunkThen<'_, M>,
) -> Listing<M> {
    const CHUNK: usize = 256;
    let folder_path = root.join(dir);
    let Ok(folder) = open_folder(&folder_path) else {
        let listed = crate::fs::snapshot::list_names(root, dir, ext, findings);
        let now = fingerprints_of_names(root, dir, &listed);
        let names: ListedNames = listed.iter().map(String::as_str).collect();
        let then = then(&names, &now);
        return Listing {
            parts: vec![Part {
                at: 0,
                names,
                now,
                then,
            }],
        };
    };
    let stat = |name: &str| {
        fingerprint_at(&folder, name)
            .unwrap_or_else(|| fingerprint_by_path(&folder_path.join(name)))
    };
    let (send, receive) = std::sync::mpsc::channel::<(usize, ListedNames)>();
    let receive = std::sync::Mutex::new(receive);
    // Chunks until the sender is gone.
    let stat_chunks = || -> Vec<Part<M>> {
        let mut done = Vec::new();
        loop {
            let next = match receive.lock() {
                Ok(receive) => receive.recv(),
                Err(_) => break,
            };
            let Ok((at, names)) = next else { break };
            let now: Vec<_> = names.iter().map(stat).collect();
            let then = then(&names, &now);
            done.push(Part {
                at,
                names,
                now,
                then,
            });
        }
        // The chunks `then` had nothing for yet, once more.
        for part in done.iter_mut().filter(|p| p.then.is_none()) {
            part.then = then(&part.names, &part.now);
        }
        done
    };
    std::thread::scope(|scope| {
        let mut helpers = Vec::new();
        let mut chunk = ListedNames::with_capacity(CHUNK);
        let mut at = 0;
        list_open_folder(&folder, root, dir, ext, findings, &mut |name| {
            chunk.push(name);
            if chunk.len() == CHUNK {
                // The helpers start with the first full chunk: a small folder needs none.
                if helpers.is_empty() {
                    helpers = (1..crate::fs::snapshot::cores().max(2))
                        .map(|_| scope.spawn(stat_chunks))
                        .collect();
                }
                let full = std::mem::replace(&mut chunk, ListedNames::with_capacity(CHUNK));
                at += full.len();
                // The helpers hold the receiver until the sender is dropped below.
                let _ = send.send((at - full.len(), full));
            }
        });
        if !chunk.is_empty() {
            let _ = send.send((at, chunk));
        }
        drop(send);
        let mut parts = stat_chunks();
        for helper in helpers {
            parts.extend(
                helper
                    .join()
                    .unwrap_or_else(|e| std::panic::resume_unwind(e)),
            );
        }
        // In listing order; kept in their chunks (copied into one vector, 10k names and
        // fingerprints are 0.7 MB of fresh memory for a one-shot command to fault in).
        parts.sort_unstable_by_key(|p| p.at);
        Listing { parts }
    })
}

/// The names and fingerprints [`listed_fingerprints`] found, in the order the folder listed
/// them, in chunks, each with what [`listed_fingerprints_then`]'s `then` made of it.
#[derive(Debug)]
pub struct Listing<M = ()> {
    parts: Vec<Part<M>>,
}

impl<M> Default for Listing<M> {
    fn default() -> Self {
        Listing { parts: Vec::new() }
    }
}

#[derive(Debug)]
struct Part<M> {
    at: usize,
    names: ListedNames,
    now: Vec<Option<Fingerprint>>,
    /// `None` when `then` gave nothing, or a fingerprint changed after it ran
    /// ([`Listing::put`]).
    then: Option<M>,
}

impl<M> Listing<M> {
    pub fn len(&self) -> usize {
        self.parts.iter().map(|p| p.names.len()).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Sets the fingerprint of `name`, listed or not (added then): for a file the caller
    /// itself moved in while the folder was being listed, stat'ed again afterwards. What
    /// `then` made of its chunk is dropped.
    pub fn put(&mut self, name: &str, fingerprint: Option<Fingerprint>) {
        for part in &mut self.parts {
            if let Some(at) = part.names.iter().position(|n| n == name) {
                part.now[at] = fingerprint;
                part.then = None;
                return;
            }
        }
        let at = self.len();
        self.parts.push(Part {
            at,
            names: std::iter::once(name).collect(),
            now: vec![fingerprint],
            then: None,
        });
    }

    /// Each listed name with its fingerprint (`None` for a file gone since it was listed).
    pub fn iter(&self) -> impl Iterator<Item = (&str, Option<Fingerprint>)> + '_ {
        self.parts
            .iter()
            .flat_map(|p| p.names.iter().zip(p.now.iter().copied()))
    }

    /// Each chunk's names and fingerprints, with what `then` made of it (`None` when a
    /// fingerprint was put after it ran).
    #[allow(clippy::type_complexity)]
    pub fn chunks(
        &self,
    ) -> impl Iterator<Item = (&ListedNames, &[Option<Fingerprint>], Option<&M>)> + '_ {
        self.parts
            .iter()
            .map(|p| (&p.names, p.now.as_slice(), p.then.as_ref()))
    }
}

/// The names [`crate::fs::snapshot::list_names_each`] gives, read from the folder `dir` already
/// opened (`folder`, never through a link): on Linux straight from `getdents64` into one buffer,
/// with no allocation but each name's own (10k settled files are listed by every `contract
/// settle` with no daemon).
#[cfg(target_os = "linux")]
fn list_open_folder(
    folder: &fs::File,
    _root: &Path,
    dir: &str,
    ext: &str,
    findings: &mut Vec<Finding>,
    each: &mut dyn FnMut(&str),
) {
    let mut buf = Vec::with_capacity(64 * 1024);
    let mut entries = rustix::fs::RawDir::new(folder, buf.spare_capacity_mut());
    // An error ends the listing, as it ends `std::fs::read_dir`'s.
    while let Some(Ok(entry)) = entries.next() {
        let bytes = entry.file_name().to_bytes();
        if bytes == b"." || bytes == b".." {
            continue;
        }
        match std::str::from_utf8(bytes) {
            Ok(name) if crate::fs::snapshot::is_listed_name(name, ext) => each(name),
            Ok(_) => {}
            Err(_) => findings.push(crate::fs::snapshot::unreadable_name(
                dir,
                &String::from_utf8_lossy(bytes),
            )),
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn list_open_folder(
    _folder: &fs::File,
    root: &Path,
    dir: &str,
    ext: &str,
    findings: &mut Vec<Finding>,
    each: &mut dyn FnMut(&str),
) {
    crate::fs::snapshot::list_names_each(root, dir, ext, findings, &mut |name| each(&name))
}

/// A folder opened to stat the files in it by name (never through a link).
fn open_folder(path: &Path) -> io::Result<fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
}

fn fingerprint_by_path(path: &Path) -> Option<Fingerprint> {
    fs::symlink_metadata(path).ok().map(|m| Fingerprint::of(&m))
}

/// The fingerprint of the file `name` in the open `folder`: one `fstatat` of the bare name,
/// instead of a lookup of every component of a full path. `Some(None)` for a file that is
/// gone; `None` when the name cannot be passed so or the call fails otherwise (the caller
/// stats the full path then).
// The casts are no-ops on Linux only: `libc::stat`'s field types differ between platforms.
#[allow(clippy::unnecessary_cast)]
fn fingerprint_at(folder: &fs::File, name: &str) -> Option<Option<Fingerprint>> {
    use std::os::unix::io::AsRawFd;
    let mut buf = [0u8; 256];
    if name.len() >= buf.len() || name.as_bytes().contains(&0) || name.contains('/') {
        return None;
    }
    buf[..name.len()].copy_from_slice(name.as_bytes());
    let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: `buf` holds the name and a NUL; `st` is written by a successful call only.
    let rc = unsafe {
        libc::fstatat(
            folder.as_raw_fd(),
            buf.as_ptr().cast(),
            st.as_mut_ptr(),
            libc::AT_SYMLINK_NOFOLLOW,
        )
    };
    if rc != 0 {
        return match io::Error::last_os_error().kind() {
            io::ErrorKind::NotFound => Some(None),
            _ => None,
        };
    }
    // SAFETY: initialised by the successful call above.
    let st = unsafe { st.assume_init() };
    Some(Some(Fingerprint {
        size: st.st_size as u64,
        mtime_ns: (st.st_mtime as i64)
            .saturating_mul(1_000_000_000)
            .saturating_add(st.st_mtime_nsec as i64),
        ctime_ns: (st.st_ctime as i64)
            .saturating_mul(1_000_000_000)
            .saturating_add(st.st_ctime_nsec as i64),
        mode: st.st_mode as u32,
        ino: st.st_ino as u64,
    }))
}
