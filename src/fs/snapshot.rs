//! Reading a polis from disk: the shell around the pure core.
//!
//! This module opens files (and only reads them). It never follows a symbolic link, never opens
//! anything but a regular file (a FIFO in `contracts/open/` must not block the daemon), refuses
//! oversized records, and turns every unreadable file into a finding instead of an error.

use crate::protocol::finding::{Code, Finding, Severity};
use std::fs;
use std::io::{ErrorKind, Read};
use std::path::{Path, PathBuf};

/// Records (cards, contracts, amendments, lessons) larger than this are reported, not parsed:
/// no agent writes a 16 MiB contract, and a runaway file must not stall every pass.
pub const MAX_RECORD_BYTES: u64 = 16 * 1024 * 1024;

/// `chronicle.md` as [`Polis`] holds it (absent: `None`), or why it cannot be read.
pub type ChronicleRead = Result<Option<std::sync::Arc<String>>, Finding>;

/// A file read as text, or the finding that says why it could not be.
pub type TextResult = Result<String, Finding>;

/// Reads `rel` (relative to the polis root) as UTF-8 text, refusing links and special files.
/// `Ok(None)` when the file does not exist.
pub fn read_text(root: &Path, rel: &str, limit: Option<u64>) -> Result<Option<String>, Finding> {
    read_text_and_metadata(root, rel, limit).map(|read| read.map(|(text, _)| text))
}

/// [`read_text`], with the metadata the file had when it was opened (its size and mtime
/// fingerprint what was read, without a second `stat`).
pub fn read_text_and_metadata(
    root: &Path,
    rel: &str,
    limit: Option<u64>,
) -> Result<Option<(String, fs::Metadata)>, Finding> {
    if let Some(parent) = rel.rsplit_once('/').map(|(p, _)| p) {
        if let Some(link) = linked_folder(root, parent) {
            return Err(unreadable(rel, &linked_folder_why(&link)));
        }
    }
    read_text_and_metadata_in_checked_folder(root, rel, limit)
}

/// [`read_text_and_metadata`] of a file whose folder the caller has just checked with
/// [`linked_folder`] (a listing does): the per-file `lstat` of each parent is skipped, which
/// matters when 100,000 settled contracts are read at start-up.
pub fn read_text_and_metadata_in_checked_folder(
    root: &Path,
    rel: &str,
    limit: Option<u64>,
) -> Result<Option<(String, fs::Metadata)>, Finding> {
    let path = root.join(rel);
    let meta = match fs::symlink_metadata(&path) {
        Ok(m) => m,
        // A name too long for the file system names no file there either.
        Err(e) if matches!(e.kind(), ErrorKind::NotFound | ErrorKind::InvalidFilename) => {
            return Ok(None)
        }
        Err(e) => return Err(unreadable(rel, &format!("cannot inspect it: {e}"))),
    };
    if meta.file_type().is_symlink() {
        return Err(unreadable(
            rel,
            "it is a symbolic link, which polisd never follows; replace it with a regular file",
        ));
    }
    if !meta.is_file() {
        return Err(unreadable(
            rel,
            "it is not a regular file (a folder, FIFO or device); remove it or rename it",
        ));
    }
    if let Some(limit) = limit {
        if meta.len() > limit {
            return Err(unreadable(
                rel,
                &format!(
                    "it is {} bytes, over the {limit}-byte limit for a record; split or trim it",
                    meta.len()
                ),
            ));
        }
    }
    let mut bytes = Vec::with_capacity(meta.len().min(limit.unwrap_or(u64::MAX)) as usize);
    // The limit holds for the read too, not only for the size seen before it: a file still
    // being written (or growing on purpose) would otherwise be read whole.
    open_no_follow(&path)
        .and_then(|f| {
            f.take(limit.map_or(u64::MAX, |l| l + 1))
                .read_to_end(&mut bytes)
        })
        .map_err(|e| unreadable(rel, &format!("cannot read it: {e}; check its permissions")))?;
    if let Some(limit) = limit {
        if bytes.len() as u64 > limit {
            return Err(unreadable(
                rel,
                &format!(
                    "it grew past the {limit}-byte limit for a record while being read; split or \
                     trim it"
                ),
            ));
        }
    }
    match String::from_utf8(bytes) {
        Ok(text) => Ok(Some((text, meta))),
        Err(e) => {
            let good = &e.as_bytes()[..e.utf8_error().valid_up_to()];
            let line = 1 + good.iter().filter(|b| **b == b'\n').count();
            Err(Finding::error(
                Code::Unreadable,
                rel,
                Some(line),
                "the file is not valid UTF-8 text; re-save it as UTF-8",
            ))
        }
    }
}

/// The bytes of a regular file, or `None` (missing, a link, a FIFO, a folder, unreadable).
/// For a quick look at a file (is this our own write?): it never blocks on a FIFO and never
/// reads through a link to something like `/dev/zero`.
pub fn read_regular(path: &Path) -> Option<Vec<u8>> {
    let mut file = open_no_follow(path).ok()?;
    if !file.metadata().ok()?.is_file() {
        return None;
    }
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).ok()?;
    Some(bytes)
}

pub(crate) fn open_no_follow(path: &Path) -> std::io::Result<fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    fs::OpenOptions::new()
        .read(true)
        .custom_flags(crate::fs::writer::syscall::no_follow_flags())
        .open(path)
}

/// The first folder of `dir` (relative to the root, `/`-separated) that is a symbolic link,
/// if any: polisd never enters a folder through a link (SPEC §1), wherever it points.
pub fn linked_folder(root: &Path, dir: &str) -> Option<String> {
    let mut at = root.to_path_buf();
    let mut rel = String::new();
    for part in dir.split('/').filter(|p| !p.is_empty() && *p != ".") {
        at.push(part);
        if !rel.is_empty() {
            rel.push('/');
        }
        rel.push_str(part);
        match fs::symlink_metadata(&at) {
            Ok(m) if m.file_type().is_symlink() => return Some(rel),
            Ok(_) => {}
            Err(_) => return None,
        }
    }
    None
}

/// Whether citizen `id` has a capability card as reading the polis finds one: a regular file
/// in `citizens/<id>/` reached without a link (a linked folder is never entered). Reads only
/// metadata.
pub fn has_card(root: &Path, id: &str) -> bool {
    let (Some(dir), Some(card)) = (
        crate::protocol::layout::citizen_dir(id),
        crate::protocol::layout::card_path(id),
    ) else {
        return false;
    };
    linked_folder(root, &dir).is_none()
        && fs::symlink_metadata(root.join(card)).is_ok_and(|m| m.file_type().is_file())
}

fn linked_folder_why(link: &str) -> String {
    format!(
        "`{link}` is a symbolic link to a folder, which polisd never enters; replace it with a \
         real folder holding the files"
    )
}

/// The finding about a folder reached through a link.
fn linked_folder_finding(link: &str) -> Finding {
    Finding::error(
        Code::Unreadable,
        link,
        None,
        format!(
            "polisd does not read this folder: {}",
            linked_folder_why(link)
        ),
    )
}

fn unreadable(rel: &str, why: &str) -> Finding {
    Finding::error(
        Code::Unreadable,
        rel,
        None,
        format!("polisd cannot read this file: {why}"),
    )
}

/// An entry of a folder listing that polisd may read as a record.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Entry {
    /// Path relative to the polis root, with `/` separators.
    pub rel: String,
    /// The file name without its extension.
    pub stem: String,
}

/// Lists `dir` (relative) for files ending in `ext`, sorted by name, skipping ignored and
/// conflict-copy names (SPEC §11). Names that are not UTF-8 are skipped with a finding.
pub fn list(root: &Path, dir: &str, ext: &str, findings: &mut Vec<Finding>) -> Vec<Entry> {
    let mut out: Vec<Entry> = list_names(root, dir, ext, findings)
        .into_iter()
        .map(|name| Entry {
            stem: name[..name.len() - ext.len()].to_string(),
            rel: format!("{dir}/{name}"),
        })
        .collect();
    out.sort();
    out
}

/// The bare names [`list`] would give for `dir` (with the same findings), unsorted: for a caller
/// that only looks names up (a one-shot command checking 10k settled files against a ledger).
pub fn list_names(root: &Path, dir: &str, ext: &str, findings: &mut Vec<Finding>) -> Vec<String> {
    let mut out = Vec::new();
    list_names_each(root, dir, ext, findings, &mut |name| out.push(name));
    out
}

/// [`list_names`], each name handed to `each` as the folder is read (so a caller can work on
/// the first names while the rest are listed).
pub fn list_names_each(
    root: &Path,
    dir: &str,
    ext: &str,
    findings: &mut Vec<Finding>,
    each: &mut dyn FnMut(String),
) {
    if let Some(link) = linked_folder(root, dir) {
        findings.push(linked_folder_finding(&link));
        return;
    }
    let read = match fs::read_dir(root.join(dir)) {
        Ok(read) => read,
        Err(e) => {
            findings.extend(unlistable_folder(dir, &e));
            return;
        }
    };
    for entry in read.flatten() {
        let name = match entry.file_name().into_string() {
            Ok(name) => name,
            Err(name) => {
                findings.push(unreadable_name(dir, &name.to_string_lossy()));
                continue;
            }
        };
        if is_listed_name(&name, ext) {
            each(name);
        }
    }
}

/// Whether [`list_names_each`] gives `name` (an `ext` file that is not a temporary, editor or
/// conflict copy name).
pub fn is_listed_name(name: &str, ext: &str) -> bool {
    name.ends_with(ext) && !crate::protocol::layout::is_ignored_name(name)
}

/// Whether listing a folder failed because there is no folder there (missing, or a file in its
/// place), not because it cannot be read.
pub fn is_absent(error: &std::io::Error) -> bool {
    matches!(
        error.kind(),
        std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
    )
}

/// The finding about a folder `dir` that is there but cannot be listed (`error`, a permission
/// most often): what is in it is left out, so the reader is told. A missing folder, or a file
/// where the folder belongs, says nothing here.
pub fn unlistable_folder(dir: &str, error: &std::io::Error) -> Option<Finding> {
    if is_absent(error) {
        return None;
    }
    let shown = if dir.is_empty() { "." } else { dir };
    Some(Finding::error(
        Code::Unreadable,
        dir.to_string(),
        None,
        format!(
            "polisd cannot list this folder ({error}), so what is in it is left out; make it \
             readable (`chmod u+rx _polis/{shown}`)"
        ),
    ))
}

/// The finding about a file name in `dir` that is not valid UTF-8 (`lossy` is it made
/// readable).
pub fn unreadable_name(dir: &str, lossy: &str) -> Finding {
    Finding::warning(
        Code::Unreadable,
        format!("{dir}/{lossy}"),
        None,
        "the file name is not valid UTF-8; rename it",
    )
}

/// Every sync conflict copy in the polis (SPEC §11), as (copy, original) paths relative to the
/// root, sorted; folders are walked without following links, a few levels deep (the deepest
/// records are `lessons/<tag>/<id>.md`).
pub fn conflict_copies(root: &Path) -> Vec<(String, String)> {
    conflict_copies_but(root, None)
}

/// [`conflict_copies`] without looking inside the folder `skip` (relative to the root): a
/// reader that keeps the copies of a big folder from its change events
/// ([`conflict_copies_in`] on a rescan) walks only the rest.
pub fn conflict_copies_but(root: &Path, skip: Option<&str>) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut stack = vec![(String::new(), 0usize)];
    while let Some((dir, depth)) = stack.pop() {
        if skip == Some(dir.as_str()) {
            continue;
        }
        let Ok(read) = fs::read_dir(root.join(&dir)) else {
            continue;
        };
        for entry in read.flatten() {
            let Some(name) = entry.file_name().to_str().map(str::to_string) else {
                continue;
            };
            let rel = if dir.is_empty() {
                name.clone()
            } else {
                format!("{dir}/{name}")
            };
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() && depth < 3 && !name.starts_with('.') {
                stack.push((rel, depth + 1));
            } else if kind.is_file() && crate::protocol::layout::is_conflict_copy(&name) {
                if let Some(original) = crate::protocol::layout::conflict_original_path(&rel) {
                    out.push((rel, original));
                }
            }
        }
    }
    out.sort();
    out
}

/// The sync conflict copies directly in the folder `dir` (relative to the root, not followed
/// when it is a link), as [`conflict_copies`] gives them.
pub fn conflict_copies_in(root: &Path, dir: &str) -> Vec<(String, String)> {
    if linked_folder(root, dir).is_some() {
        return Vec::new();
    }
    let Ok(read) = fs::read_dir(root.join(dir)) else {
        return Vec::new();
    };
    let mut out: Vec<(String, String)> = read
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name().to_str()?.to_string();
            if !crate::protocol::layout::is_conflict_copy(&name)
                || !entry.file_type().ok()?.is_file()
            {
                return None;
            }
            let rel = format!("{dir}/{name}");
            let original = crate::protocol::layout::conflict_original_path(&rel)?;
            Some((rel, original))
        })
        .collect();
    out.sort();
    out
}

/// Below this many items a thread costs more than it saves.
const PARALLEL_MIN: usize = 64;

/// How many threads work on a parallel read: the CPUs this process may use, asked once (the
/// standard library reads the cgroup's CPU quota files on every call, which cost a daemon's
/// small passes more than their own reading).
pub fn cores() -> usize {
    static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CORES.get_or_init(|| {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    })
}

/// `f` over `items` on every core (scoped threads over contiguous chunks), results in the
/// items' order. Reading a folder of many small files is syscall- and parse-bound, so the
/// cores help; a handful of items runs on the calling thread.
pub fn par_map<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let threads = if items.len() < 2 * PARALLEL_MIN {
        1
    } else {
        cores().min(items.len() / PARALLEL_MIN).max(1)
    };
    if threads == 1 {
        return items.iter().map(f).collect();
    }
    let chunk = items.len().div_ceil(threads);
    let f = &f;
    std::thread::scope(|scope| {
        let handles: Vec<_> = items
            .chunks(chunk)
            .map(|part| scope.spawn(move || part.iter().map(f).collect::<Vec<R>>()))
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect()
    })
}

/// Sub-folders of `dir` (not links), sorted.
pub fn subdirs(root: &Path, dir: &str) -> Vec<String> {
    subdirs_reporting(root, dir, &mut Vec::new())
}

/// [`subdirs`], with a finding for each link to a folder among them (and for `dir` itself
/// when it is reached through a link): a linked folder is never entered.
pub fn subdirs_reporting(root: &Path, dir: &str, findings: &mut Vec<Finding>) -> Vec<String> {
    if let Some(link) = linked_folder(root, dir) {
        findings.push(linked_folder_finding(&link));
        return Vec::new();
    }
    let read = match fs::read_dir(root.join(dir)) {
        Ok(read) => read,
        Err(e) => {
            findings.extend(unlistable_folder(dir, &e));
            return Vec::new();
        }
    };
    let mut out = Vec::new();
    for e in read.flatten() {
        let Ok(t) = e.file_type() else { continue };
        let Some(name) = e.file_name().to_str().map(str::to_string) else {
            continue;
        };
        if t.is_dir() {
            out.push(name);
        } else if t.is_symlink() && e.path().is_dir() {
            let rel = if dir.is_empty() {
                name
            } else {
                format!("{dir}/{name}")
            };
            findings.push(linked_folder_finding(&rel));
        }
    }
    out.sort();
    out
}

/// The canonical path of a polis root, the key for its machine-local state.
pub fn canonical_root(root: &Path) -> PathBuf {
    fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf())
}

/// The first non-blank line of `older` followed by `newer` that starts after a line break of
/// theirs (or at their start, when `older` opens the file), copying only that line: the tail
/// reader asks this once per chunk read.
fn oldest_line(older: &[u8], newer: &[u8], at_start: bool) -> Option<Vec<u8>> {
    let at = |i: usize| {
        if i < older.len() {
            older[i]
        } else {
            newer[i - older.len()]
        }
    };
    let len = older.len() + newer.len();
    let next_break = |from: usize| (from..len).find(|&i| at(i) == b'\n');
    let mut start = if at_start { 0 } else { next_break(0)? + 1 };
    while start < len {
        let end = next_break(start).unwrap_or(len);
        if (start..end).any(|i| !at(i).is_ascii_whitespace()) {
            return Some((start..end).map(at).collect());
        }
        start = end + 1;
    }
    None
}

/// The end of a text file read backwards in chunks: the complete lines from the first line
/// break of the bytes read to the end, newest last. Reading stops as soon as `enough` says the
/// oldest complete line read so far is old enough, at the start of the file, or after
/// `max_bytes` (then the result says it was cut). Refuses links and special files like
/// [`read_text`]. For the primer: the last days of a million-line chronicle, without reading
/// the million lines.
pub fn read_tail_lines(
    root: &Path,
    rel: &str,
    max_bytes: u64,
    enough: impl Fn(&str) -> bool,
) -> Result<Option<TailLines>, Finding> {
    use std::io::{Seek, SeekFrom};
    const CHUNK: u64 = 64 * 1024;
    let path = root.join(rel);
    let meta = match fs::symlink_metadata(&path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(unreadable(rel, &format!("cannot inspect it: {e}"))),
    };
    if !meta.is_file() {
        return Err(unreadable(
            rel,
            "it is a symbolic link or not a regular file; replace it with a regular file",
        ));
    }
    let mut file =
        open_no_follow(&path).map_err(|e| unreadable(rel, &format!("cannot open it: {e}")))?;
    let len = file
        .metadata()
        .map_err(|e| unreadable(rel, &format!("cannot inspect it: {e}")))?
        .len();
    let mut start = len;
    // Chunks newest first; joined once at the end (prepending each chunk to one buffer would
    // copy the tail again for every chunk read).
    let mut chunks: Vec<Vec<u8>> = Vec::new();
    loop {
        let step = CHUNK.min(start);
        start -= step;
        let mut chunk = vec![0u8; step as usize];
        file.seek(SeekFrom::Start(start))
            .and_then(|_| file.read_exact(&mut chunk))
            .map_err(|e| unreadable(rel, &format!("cannot read it: {e}")))?;
        chunks.push(chunk);
        let at_start = start == 0;
        let cut = !at_start && len - start >= max_bytes;
        // The oldest complete line read so far: after the first line break of the oldest
        // bytes (unless at the start of the file), looked for in the two oldest chunks.
        let newer = chunks
            .len()
            .checked_sub(2)
            .map_or(&[][..], |i| &chunks[i][..]);
        let oldest = oldest_line(&chunks[chunks.len() - 1], newer, at_start);
        let done = at_start || cut || oldest.is_some_and(|l| enough(&String::from_utf8_lossy(&l)));
        if done {
            let mut buf = Vec::with_capacity((len - start) as usize);
            for c in chunks.iter().rev() {
                buf.extend_from_slice(c);
            }
            let skip = if at_start {
                0
            } else {
                buf.iter()
                    .position(|b| *b == b'\n')
                    .map_or(buf.len(), |i| i + 1)
            };
            let text = String::from_utf8_lossy(&buf[skip..]).into_owned();
            return Ok(Some(TailLines {
                text,
                whole: at_start,
            }));
        }
    }
}

/// What [`read_tail_lines`] read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TailLines {
    /// Complete lines (the last one may lack its newline).
    pub text: String,
    /// Whether the whole file was read.
    pub whole: bool,
}

/// An amendment as the tally reads it: its file, and after the votes the file records, those
/// of its vote files (`amendments/votes/<stem>/<citizen>.md`), which come later and so win.
pub fn parse_amendment(
    root: &Path,
    text: &str,
    stem: &str,
) -> Result<
    crate::protocol::amendments::amendment::Amendment,
    crate::protocol::frontmatter::FrontmatterError,
> {
    let mut a = crate::protocol::amendments::amendment::parse(text, stem)?;
    a.votes.extend(vote_files(root, stem));
    Ok(a)
}

/// The votes recorded in `amendments/votes/<stem>/`, by file name.
pub fn vote_files(
    root: &Path,
    stem: &str,
) -> Vec<crate::protocol::amendments::amendment::VoteRecord> {
    vote_files_reporting(root, stem, &mut Vec::new())
}

/// [`vote_files`], with a finding for each vote file that counts for nobody: unreadable,
/// holding git's conflict markers (one citizen voting differently on two machines), or
/// holding no vote the tally reads.
pub fn vote_files_reporting(
    root: &Path,
    stem: &str,
    findings: &mut Vec<Finding>,
) -> Vec<crate::protocol::amendments::amendment::VoteRecord> {
    use crate::protocol::amendments::amendment;
    if !crate::protocol::layout::is_slug(stem) {
        return Vec::new();
    }
    let dir = format!("{}/{stem}", amendment::VOTES_DIR);
    list(root, &dir, ".md", findings)
        .into_iter()
        .filter_map(|e| {
            let text = read_or_report(root, &e.rel, findings)?;
            let vote = amendment::parse_vote_file(&text, &e.stem);
            if vote.is_none() {
                findings.extend(amendment::vote_file_problem(&e.rel, &text));
            }
            vote
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tail_lines_stop_at_the_first_old_enough_line() {
        let dir = tempfile::tempdir().unwrap();
        let mut text = String::new();
        for i in 0..200_000 {
            text.push_str(&format!("line {i:06}\n"));
        }
        std::fs::write(dir.path().join("c.md"), &text).unwrap();
        let enough = |l: &str| l < "line 199000";
        let tail = read_tail_lines(dir.path(), "c.md", u64::MAX, enough)
            .unwrap()
            .unwrap();
        assert!(!tail.whole);
        assert!(
            tail.text.len() < 200 * 1024,
            "read {} bytes",
            tail.text.len()
        );
        assert!(tail.text.ends_with("line 199999\n"));
        assert!(tail.text.starts_with("line ") && tail.text.lines().all(|l| l.len() == 11));
        assert!(tail.text.contains("line 199000\n"));
        // Never enough: the whole file, or the byte cap.
        let all = read_tail_lines(dir.path(), "c.md", u64::MAX, |_| false)
            .unwrap()
            .unwrap();
        assert!(all.whole);
        assert_eq!(all.text, text);
        let capped = read_tail_lines(dir.path(), "c.md", 100_000, |_| false)
            .unwrap()
            .unwrap();
        assert!(!capped.whole && capped.text.len() < 200_000);
        assert!(read_tail_lines(dir.path(), "missing.md", 10, |_| true)
            .unwrap()
            .is_none());
    }

    #[test]
    fn symlinks_fifos_and_bad_utf8_are_findings() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        fs::write(root.join("ok.md"), "hello\n").unwrap();
        fs::write(root.join("bad.md"), b"line\n\xff\xfe\n").unwrap();
        std::os::unix::fs::symlink("/etc/hostname", root.join("link.md")).unwrap();
        assert_eq!(read_text(root, "ok.md", None).unwrap().unwrap(), "hello\n");
        assert_eq!(read_text(root, "missing.md", None).unwrap(), None);
        assert_eq!(read_text(root, "bad.md", None).unwrap_err().line, Some(2));
        assert!(read_text(root, "link.md", None)
            .unwrap_err()
            .message
            .contains("symbolic link"));
        fs::write(root.join("big.md"), vec![b'a'; 100]).unwrap();
        assert!(read_text(root, "big.md", Some(10)).is_err());
    }

    /// Regression: the limit was checked against the size before the read, and the read was
    /// unbounded, so a record still being written (50 MB in one `write`) was read whole, and
    /// parsed and routed, stalling the daemon for many seconds.
    #[test]
    fn record_growing_past_the_limit_during_the_read_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let path = root.join("growing.md");
        fs::write(&path, vec![b'a'; 8]).unwrap();
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let grower = {
            let (path, stop) = (path.clone(), stop.clone());
            std::thread::spawn(move || {
                use std::io::Write;
                let mut f = fs::OpenOptions::new().append(true).open(path).unwrap();
                while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                    f.write_all(&[b'b'; 4096]).unwrap();
                }
            })
        };
        // Whatever the size at the stat, no read returns more than the limit.
        while fs::metadata(&path).unwrap().len() < 4 * 1024 * 1024 {
            if let Ok(Some(text)) = read_text(root, "growing.md", Some(64 * 1024)) {
                assert!(text.len() <= 64 * 1024, "read {} bytes", text.len());
            }
        }
        stop.store(true, std::sync::atomic::Ordering::SeqCst);
        grower.join().unwrap();
        let err = read_text(root, "growing.md", Some(64 * 1024)).unwrap_err();
        assert!(err.message.contains("limit"), "{err}");
    }
}

/// A markdown record file: where it is and what its frontmatter and body say.
#[derive(Debug, Clone)]
pub struct RecordFile {
    pub rel: String,
    pub stem: String,
    pub text: String,
    pub record: crate::protocol::frontmatter::Record,
}

/// Reads every `*.md` record in `dir`, turning unreadable files and bad frontmatter into
/// findings. Files that fail are left out of the result.
pub fn read_records(root: &Path, dir: &str, findings: &mut Vec<Finding>) -> Vec<RecordFile> {
    let entries = list(root, dir, ".md", findings);
    let read = par_map(&entries, |entry| {
        let mut found = Vec::new();
        let file = read_record_in(root, &entry.rel, &entry.stem, &mut found, false);
        (file, found)
    });
    let mut out = Vec::with_capacity(read.len());
    for (file, found) in read {
        findings.extend(found);
        out.extend(file);
    }
    out
}

/// Reads one record file; `None` (with a finding) when it cannot be used.
pub fn read_record(
    root: &Path,
    rel: &str,
    stem: &str,
    findings: &mut Vec<Finding>,
) -> Option<RecordFile> {
    read_record_in(root, rel, stem, findings, true)
}

/// [`read_record`]; `check_folder: false` when a listing has just checked the folder.
fn read_record_in(
    root: &Path,
    rel: &str,
    stem: &str,
    findings: &mut Vec<Finding>,
    check_folder: bool,
) -> Option<RecordFile> {
    let read = if check_folder {
        read_text_and_metadata(root, rel, Some(MAX_RECORD_BYTES))
    } else {
        read_text_and_metadata_in_checked_folder(root, rel, Some(MAX_RECORD_BYTES))
    };
    let text = match read.map(|r| r.map(|(text, _)| text)) {
        Ok(Some(text)) => text,
        Ok(None) => return None,
        Err(f) => {
            findings.push(f);
            return None;
        }
    };
    if let Some(f) = conflict_markers(rel, &text) {
        findings.push(f);
        return None;
    }
    match crate::protocol::frontmatter::parse(&text) {
        Ok(record) => Some(RecordFile {
            rel: rel.to_string(),
            stem: stem.to_string(),
            text,
            record,
        }),
        Err(e) => {
            findings.push(Finding::error(
                Code::BadYaml,
                rel,
                Some(e.line()),
                format!("{e}; fix the YAML between the `---` fences"),
            ));
            None
        }
    }
}

/// Finds markdown files below `dir` at any depth (lessons live in `lessons/<tag>/`).
pub fn read_records_recursive(
    root: &Path,
    dir: &str,
    findings: &mut Vec<Finding>,
) -> Vec<RecordFile> {
    let before = findings.len();
    let mut out = read_records(root, dir, findings);
    // A folder that cannot be listed is reported once, not again for its subfolders.
    if findings[before..]
        .iter()
        .any(|f| f.code == Code::Unreadable && f.path == dir)
    {
        return out;
    }
    for sub in subdirs_reporting(root, dir, findings) {
        out.extend(read_records_recursive(
            root,
            &format!("{dir}/{sub}"),
            findings,
        ));
    }
    out
}

/// A citizen's capability card as found on disk.
#[derive(Debug, Clone)]
pub struct CardFile {
    /// The folder name, which is the citizen's id.
    pub id: String,
    pub rel: String,
    pub text: String,
    pub card: crate::protocol::citizens::card::Card,
}

/// A contract file in one of the three folders.
#[derive(Debug, Clone)]
pub struct ContractFile {
    pub folder: crate::protocol::layout::ContractFolder,
    pub file: RecordFile,
    pub contract: crate::protocol::contracts::contract::Contract,
}

/// An amendment file in `proposed/` or `ratified/`.
#[derive(Debug, Clone)]
pub struct AmendmentFile {
    pub folder: crate::protocol::layout::AmendmentFolder,
    pub rel: String,
    pub text: String,
    pub amendment: crate::protocol::amendments::amendment::Amendment,
}

/// A lesson file.
#[derive(Debug, Clone)]
pub struct LessonFile {
    pub rel: String,
    pub lesson: crate::protocol::contracts::lesson::Lesson,
}

/// Everything the protocol rules read, from one pass over a polis. Reading never fails as a
/// whole: what cannot be read becomes a finding in `findings`.
#[derive(Debug, Clone)]
pub struct Polis {
    pub root: PathBuf,
    pub settings: crate::protocol::settings::Settings,
    pub cards: std::collections::BTreeMap<String, CardFile>,
    pub statuses: std::collections::BTreeMap<String, crate::protocol::citizens::citizen::Status>,
    pub index_keeper: Option<String>,
    pub contracts: Vec<ContractFile>,
    pub settlements: Vec<crate::protocol::routing::stats::Settlement>,
    pub lessons: Vec<LessonFile>,
    /// Shared: a reader beside the daemon copies the polis it was handed (to add chronicle
    /// texts), and amendments with their evidence lists run to megabytes in a large polis.
    pub amendments: std::sync::Arc<Vec<AmendmentFile>>,
    /// `chronicle.md`, when present and readable. Shared, so the daemon can keep it between
    /// passes and read only the bytes appended since (see [`Polis::read_using`]).
    pub chronicle: Option<std::sync::Arc<String>>,
    /// Archives `chronicle-YYYY-Qn.md` by name, oldest first. Shared, so the daemon reads an
    /// archive again only when it changes.
    pub archives: Vec<(String, std::sync::Arc<String>)>,
    /// The authors in the activity window, when a caller that keeps the chronicle's activity
    /// between passes (the daemon) has filled it in; `None` means "scan the texts".
    pub active_authors: Option<std::collections::BTreeSet<String>>,
    /// Who has left the polis (latest membership line `left polis`, current chronicle and
    /// newest archive), when the daemon has filled it in from what it keeps; `None` means
    /// "scan the texts" ([`Polis::departed`]).
    pub departed: Option<std::collections::BTreeSet<String>>,
    /// The person's newest answer to each queue item in `chronicle.md`, when a caller that
    /// reads the chronicle a line at a time (the dashboard) has filled it in; `None` means
    /// "scan the text".
    pub answers: Option<crate::protocol::contracts::person_queue::LatestAnswers>,
    pub findings: Vec<Finding>,
}

impl Polis {
    /// Reads the whole polis at `root` (a `_polis/` folder).
    pub fn read(root: &Path) -> Polis {
        Polis::read_with(root, true)
    }

    /// Reads the polis; with `settled` false the settled contracts are left out (the daemon
    /// keeps them in its own cache and fills [`Polis::settlements`] itself).
    pub fn read_with(root: &Path, settled: bool) -> Polis {
        Polis::read_using(root, settled, &mut ReadChronicles)
    }

    /// [`Polis::read_with`], taking the chronicle and its archives from `chronicles` (the
    /// daemon's copies, which read only what changed).
    pub fn read_using(root: &Path, settled: bool, chronicles: &mut dyn ChronicleSource) -> Polis {
        use crate::protocol::layout::{AmendmentFolder, ContractFolder};
        let mut findings = Vec::new();
        let settings_text = read_or_report(root, crate::protocol::layout::POLIS_YML, &mut findings);
        let (settings, settings_findings) =
            crate::protocol::settings::parse(settings_text.as_deref());
        findings.extend(settings_findings);
        findings.extend(crate::protocol::routing::policy_finding(&settings));
        let zone = settings.timezone;

        let (cards, statuses) = read_citizens(root, &mut findings);
        let index_keeper = read_or_report(root, crate::protocol::layout::INDEX, &mut findings)
            .and_then(|text| crate::protocol::frontmatter::parse(&text).ok())
            .and_then(|r| r.get("index_keeper").as_str().map(str::to_string));

        let mut contracts = Vec::new();
        let mut settlements = Vec::new();
        for folder in ContractFolder::ALL {
            if folder == ContractFolder::Settled && !settled {
                continue;
            }
            for file in read_records(root, folder.dir(), &mut findings) {
                if folder == ContractFolder::Settled {
                    let read = crate::protocol::contracts::contract::settlement_of(
                        &file.rel,
                        &file.record,
                        zone,
                    );
                    findings.extend(read.findings);
                    settlements.extend(read.settlement);
                }
                let contract =
                    crate::protocol::contracts::contract::Contract::from_record(&file.record);
                contracts.push(ContractFile {
                    folder,
                    file,
                    contract,
                });
            }
        }

        let lessons =
            read_records_recursive(root, crate::protocol::layout::LESSONS_DIR, &mut findings)
                .into_iter()
                .map(|file| LessonFile {
                    lesson: crate::protocol::contracts::lesson::Lesson::from_record(
                        &file.stem,
                        &file.record,
                    ),
                    rel: file.rel,
                })
                .collect::<Vec<LessonFile>>();
        let mut lessons = lessons;
        // The reference reads lessons in sorted path order; the order decides which lesson ids
        // `applied_lessons` lists first.
        lessons.sort_by(|a, b| {
            crate::protocol::contracts::lesson::path_order(&a.rel)
                .cmp(&crate::protocol::contracts::lesson::path_order(&b.rel))
        });

        let mut amendments = Vec::new();
        for folder in [AmendmentFolder::Proposed, AmendmentFolder::Ratified] {
            for entry in list(root, folder.dir(), ".md", &mut findings) {
                let Some(text) = read_or_report(root, &entry.rel, &mut findings) else {
                    continue;
                };
                let parsed = crate::protocol::amendments::amendment::parse(&text, &entry.stem).map(
                    |mut a| {
                        a.votes
                            .extend(vote_files_reporting(root, &entry.stem, &mut findings));
                        a
                    },
                );
                match parsed {
                    Ok(amendment) => amendments.push(AmendmentFile {
                        folder,
                        rel: entry.rel,
                        text,
                        amendment,
                    }),
                    Err(e) => findings.push(Finding::error(
                        Code::BadYaml,
                        &entry.rel,
                        Some(e.line()),
                        format!("{e}; the amendment is not tallied until its frontmatter is fixed"),
                    )),
                }
            }
        }

        let (chronicle, archives) = read_chronicles(root, chronicles, &mut findings);

        Polis {
            root: root.to_path_buf(),
            settings,
            cards,
            statuses,
            index_keeper,
            contracts,
            settlements,
            lessons,
            amendments: std::sync::Arc::new(amendments),
            chronicle,
            archives,
            active_authors: None,
            departed: None,
            answers: None,
            findings,
        }
    }

    /// Registered citizens: those with a readable card (SPEC §3 C002).
    pub fn registered(&self) -> std::collections::BTreeSet<String> {
        self.cards.keys().cloned().collect()
    }

    /// The status of a citizen; a missing file reads as idle (SPEC §5).
    pub fn status(&self, id: &str) -> crate::protocol::citizens::citizen::Status {
        self.statuses
            .get(id)
            .cloned()
            .unwrap_or_else(crate::protocol::citizens::citizen::Status::idle)
    }

    /// The chronicle texts that the activity window reads: the current file and the newest
    /// archive (SPEC §3 rollover).
    pub fn recent_chronicle(&self) -> Vec<&str> {
        let mut texts: Vec<&str> = self.chronicle_text().into_iter().collect();
        if let Some((_, newest)) = self.archives.last() {
            texts.push(newest);
        }
        texts
    }

    /// The authors with a chronicle line in the activity window (SPEC §8, 14 days before
    /// `now`): as filled in by the daemon, else from the texts.
    pub fn active_authors(
        &self,
        now: &crate::protocol::clock::PolisTime,
    ) -> std::collections::BTreeSet<String> {
        match &self.active_authors {
            Some(authors) => authors.clone(),
            None => {
                crate::protocol::chronicle::activity::active_authors(&self.recent_chronicle(), now)
            }
        }
    }

    /// Who has left the polis: as filled in by the daemon, else from the texts.
    pub fn departed(&self) -> std::collections::BTreeSet<String> {
        match &self.departed {
            Some(d) => d.clone(),
            None => crate::protocol::contracts::handoff::departed(&self.recent_chronicle()),
        }
    }

    /// Every chronicle file with its path, in the order its lines were written: the archives,
    /// oldest first, then `chronicle.md` (when present and readable).
    pub fn chronicle_files(&self) -> impl Iterator<Item = (&str, &str)> {
        self.archives
            .iter()
            .map(|(name, text)| (name.as_str(), text.as_str()))
            .chain(
                self.chronicle_text()
                    .map(|text| (crate::protocol::layout::CHRONICLE, text)),
            )
    }

    /// The text of `chronicle.md`, when present and readable.
    pub fn chronicle_text(&self) -> Option<&str> {
        self.chronicle.as_deref().map(String::as_str)
    }

    /// The newest stamp of the newest archive that is not in the future
    /// ([`crate::protocol::chronicle::newest_stamp`]).
    pub fn newest_archive_stamp(
        &self,
        now: &crate::protocol::clock::PolisTime,
    ) -> Option<chrono::NaiveDateTime> {
        self.archives
            .last()
            .and_then(|(_, t)| crate::protocol::chronicle::activity::newest_stamp(t, now))
    }

    /// The newest stamp of `chronicle.md` as read (lines in the future left out), else of the
    /// newest archive: what the polis's clock reads when a cause records no time.
    pub fn newest_stamp(
        &self,
        now: &crate::protocol::clock::PolisTime,
    ) -> Option<chrono::NaiveDateTime> {
        self.chronicle_text()
            .and_then(|t| crate::protocol::chronicle::activity::newest_stamp(t, now))
            .or_else(|| self.newest_archive_stamp(now))
    }

    /// Whether a path relative to `_polis/` exists (for wikilink checks).
    pub fn exists(&self, rel: &str) -> bool {
        !rel.is_empty()
            && !rel.split('/').any(|c| c == "..")
            && fs::symlink_metadata(self.root.join(rel)).is_ok()
    }

    /// Lessons that move routing scores (SPEC §10), in the reference's order.
    pub fn routing_lessons(&self) -> Vec<&crate::protocol::contracts::lesson::Lesson> {
        self.lessons
            .iter()
            .map(|l| &l.lesson)
            .filter(|l| l.affects_routing(self.settings.lesson_impact_floor))
            .collect()
    }

    /// Every registered citizen as a routing candidate, in citizen-id order.
    pub fn candidates(&self) -> Vec<crate::protocol::routing::score::Candidate> {
        self.cards
            .values()
            .map(|c| {
                let status = self.status(&c.id);
                crate::protocol::routing::score::Candidate::from_card(
                    &c.id,
                    &c.card.raw,
                    &status.fields,
                )
            })
            .collect()
    }

    pub fn contract(&self, id: &str) -> Option<&ContractFile> {
        self.contracts.iter().find(|c| c.file.stem == id)
    }

    /// Why contract `id` is not in [`Polis::contracts`] though a file of its name is there (a
    /// symbolic link, a folder, a file that is not UTF-8 or not YAML): the error found reading
    /// it, if any.
    pub fn unreadable_contract(&self, id: &str) -> Option<&Finding> {
        use crate::protocol::layout::{contract_path, ContractFolder};
        let paths: Vec<String> = ContractFolder::ALL
            .into_iter()
            .filter_map(|folder| contract_path(folder, id))
            .collect();
        self.findings
            .iter()
            .find(|f| f.severity == Severity::Error && paths.contains(&f.path))
    }
}

/// The chronicle type of [`Polis::chronicle`] and [`Polis::archives`].
pub type Chronicles = (
    Option<std::sync::Arc<String>>,
    Vec<(String, std::sync::Arc<String>)>,
);

/// `chronicle.md` and the archives (oldest first), from `chronicles`; what cannot be read
/// goes to `findings`. (A reader that keeps a polis without them reads them again with this.)
pub fn read_chronicles(
    root: &Path,
    chronicles: &mut dyn ChronicleSource,
    findings: &mut Vec<Finding>,
) -> Chronicles {
    // A text with git's conflict markers is reported, not read (docs/sync.md).
    let read = chronicles.chronicle(root);
    let chronicle = reported_by(crate::protocol::layout::CHRONICLE, read, findings, |text| {
        chronicles.chronicle_conflict_line(text)
    });
    let mut archives = Vec::new();
    for name in archive_names(root, findings) {
        match chronicles.archive(root, &name) {
            Ok(Some(text)) => match conflict_markers(&name, &text) {
                Some(f) => findings.push(f),
                None => archives.push((name, text)),
            },
            Ok(None) => {}
            Err(f) => findings.push(f),
        }
    }
    (chronicle, archives)
}

/// The archives (`chronicle-YYYY-Qn.md`) at `root`, oldest first; a folder that cannot be
/// listed goes to `findings`.
pub fn archive_names(root: &Path, findings: &mut Vec<Finding>) -> Vec<String> {
    use crate::protocol::chronicle::rollover::Quarter;
    let mut names: Vec<String> = list(root, "", ".md", findings)
        .into_iter()
        .map(|entry| entry.rel.trim_start_matches('/').to_string())
        .filter(|name| Quarter::from_archive_name(name).is_some())
        .collect();
    names.sort_by_key(|name| Quarter::from_archive_name(name));
    names
}

/// Where [`Polis::read_using`] gets the chronicle files: the large, mostly appended-to texts a
/// long-running reader keeps rather than reads again.
pub trait ChronicleSource {
    /// `chronicle.md`.
    fn chronicle(&mut self, root: &Path) -> ChronicleRead;
    /// The archive `name` (a `chronicle-YYYY-Qn.md` at the root).
    fn archive(&mut self, root: &Path, name: &str) -> ChronicleRead;
    /// The first line of a git conflict block in `text`, the chronicle this source just gave
    /// ([`crate::protocol::merge::conflict_marker_line`]). A source that keeps its copy may
    /// search only what was appended since it last found none.
    fn chronicle_conflict_line(&mut self, text: &str) -> Option<usize> {
        crate::protocol::merge::conflict_marker_line(text)
    }
}

/// Reads the chronicle files from disk every time (the one-shot commands).
pub struct ReadChronicles;

impl ChronicleSource for ReadChronicles {
    fn chronicle(&mut self, root: &Path) -> ChronicleRead {
        read_text(root, crate::protocol::layout::CHRONICLE, None)
            .map(|t| t.map(std::sync::Arc::new))
    }

    fn archive(&mut self, root: &Path, name: &str) -> ChronicleRead {
        read_text(root, name, Some(MAX_RECORD_BYTES)).map(|t| t.map(std::sync::Arc::new))
    }
}

/// Reads no chronicle file: for a reader that keeps the rest of a polis between reads and
/// adds the chronicle files on each one ([`read_chronicles`]), so it never holds their texts
/// in between.
pub struct NoChronicles;

impl ChronicleSource for NoChronicles {
    fn chronicle(&mut self, _root: &Path) -> ChronicleRead {
        Ok(None)
    }

    fn archive(&mut self, _root: &Path, _name: &str) -> ChronicleRead {
        Ok(None)
    }
}

fn read_or_report(root: &Path, rel: &str, findings: &mut Vec<Finding>) -> Option<String> {
    unless_reported(rel, read_text(root, rel, Some(MAX_RECORD_BYTES)), findings)
}

/// The text `read` gave for `rel`, or `None` with its finding reported: the read's own, or
/// git's conflict markers (such a text is reported, never read as a record).
fn unless_reported<T: std::ops::Deref>(
    rel: &str,
    read: Result<Option<T>, Finding>,
    findings: &mut Vec<Finding>,
) -> Option<T>
where
    T::Target: AsRef<str>,
{
    reported_by(
        rel,
        read,
        findings,
        crate::protocol::merge::conflict_marker_line,
    )
}

/// [`unless_reported`], git's conflict block found by `conflict_line` (its first line).
fn reported_by<T: std::ops::Deref>(
    rel: &str,
    read: Result<Option<T>, Finding>,
    findings: &mut Vec<Finding>,
    conflict_line: impl FnOnce(&str) -> Option<usize>,
) -> Option<T>
where
    T::Target: AsRef<str>,
{
    match read {
        Ok(Some(text)) => match conflict_line((*text).as_ref()) {
            Some(line) => {
                findings.push(conflict_finding(rel, line));
                None
            }
            None => Some(text),
        },
        Ok(None) => None,
        Err(f) => {
            findings.push(f);
            None
        }
    }
}

/// The finding about a file that holds git conflict markers (tbd#155: such a file must not be
/// read as a record, or half of it silently vanishes), or `None`.
pub fn conflict_markers(rel: &str, text: &str) -> Option<Finding> {
    crate::protocol::merge::conflict_marker_line(text).map(|line| conflict_finding(rel, line))
}

/// The finding about git's conflict markers from `line` on in `rel`.
fn conflict_finding(rel: &str, line: usize) -> Finding {
    let what = if rel.starts_with("chronicle") {
        "the chronicle"
    } else {
        "a record"
    };
    Finding::error(
        Code::ConflictMarkers,
        rel,
        Some(line),
        crate::protocol::merge::conflict_marker_message(what),
    )
}

type Citizens = (
    std::collections::BTreeMap<String, CardFile>,
    std::collections::BTreeMap<String, crate::protocol::citizens::citizen::Status>,
);

fn read_citizens(root: &Path, findings: &mut Vec<Finding>) -> Citizens {
    let mut cards = std::collections::BTreeMap::new();
    let mut statuses = std::collections::BTreeMap::new();
    for id in subdirs_reporting(root, crate::protocol::layout::CITIZENS_DIR, findings) {
        let dir = format!("{}/{id}", crate::protocol::layout::CITIZENS_DIR);
        let card_rel = format!("{dir}/capability_card.yml");
        // The registry audit: a few `lstat`s per citizen.
        let missing: Vec<&str> = crate::protocol::citizens::citizen::CITIZEN_FILES
            .into_iter()
            .filter(|name| fs::symlink_metadata(root.join(&dir).join(name)).is_err())
            .collect();
        findings.extend(crate::protocol::citizens::citizen::registry_findings(
            &dir, &missing, None,
        ));
        let Some(text) = read_or_report(root, &card_rel, findings) else {
            continue;
        };
        if !crate::protocol::layout::is_agent_id(&id) {
            findings.push(Finding::error(
                Code::BadId,
                &card_rel,
                None,
                format!(
                    "the folder name `{}` is not a valid agent id (8 to 40 lowercase letters, digits \
                     and hyphens, starting with a letter); rename the folder",
                    id.escape_debug()
                ),
            ));
            continue;
        }
        match crate::protocol::citizens::card::parse(&text) {
            Ok(card) => {
                if card.agent_id.as_deref() != Some(id.as_str()) {
                    findings.push(Finding::warning(
                        Code::BadId,
                        &card_rel,
                        None,
                        format!(
                            "`agent_id` is {:?} but the folder is `{id}`; set `agent_id: {id}`",
                            crate::protocol::finding::quoted(
                                card.agent_id.as_deref().unwrap_or("missing")
                            )
                        ),
                    ));
                }
                cards.insert(
                    id.clone(),
                    CardFile {
                        id: id.clone(),
                        rel: card_rel,
                        text,
                        card,
                    },
                );
            }
            Err(e) => findings.push(Finding::error(
                Code::BadYaml,
                &card_rel,
                e.line(),
                format!("{e}; the citizen is treated as unregistered until the card parses"),
            )),
        }
        let status_rel = format!("{dir}/status.md");
        let status_text = read_or_report(root, &status_rel, findings);
        findings.extend(crate::protocol::citizens::citizen::registry_findings(
            &dir,
            &[],
            status_text.as_deref(),
        ));
        match crate::protocol::citizens::citizen::parse_status(status_text.as_deref()) {
            Ok(status) => {
                statuses.insert(id.clone(), status);
            }
            Err(e) => findings.push(Finding::warning(
                Code::BadYaml,
                &status_rel,
                Some(e.line()),
                format!("{e}; the citizen counts as idle until it is fixed"),
            )),
        }
    }
    (cards, statuses)
}
