//! A chronicle file read from disk one line at a time, for a reader that shows a few lines of
//! a file of any size (the dashboard's chronicle page, its search) or sums them up ([`Files`],
//! the dashboard's snapshot): it holds one line and a read buffer, never the file. Lines are
//! those `protocol::chronicle::scan` gives (frontmatter and blank lines skipped, the line end
//! taken off, a last line without its newline left out), with the same numbers, and each comes
//! with the [`Position`] it starts at, so a second read can start there instead of at the top.

use crate::protocol::finding::Finding;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

/// Bytes read at the top of a file to find where its frontmatter ends.
const HEAD: u64 = 1 << 20;
/// The read buffer.
const BUFFER: usize = 64 * 1024;

/// Where a line starts: its byte offset and its 1-based number in the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Position {
    pub offset: u64,
    pub number: usize,
}

/// One line as read: where it starts and its text (without the line end).
#[derive(Debug, Clone, Copy)]
pub struct ReadLine<'a> {
    pub at: Position,
    pub text: &'a str,
}

/// A chronicle file open for reading line by line.
pub struct LineReader {
    reader: BufReader<std::fs::File>,
    /// Lines before this one are frontmatter.
    body_line: usize,
    /// Where the next line starts, and how many lines come before it.
    offset: u64,
    lines_before: usize,
    bytes: Vec<u8>,
    text: String,
}

impl LineReader {
    /// `rel` (below `root`), or `None` when it is missing, a link, not a regular file or cannot
    /// be opened (a reader of the polis reports those; this one shows nothing).
    pub fn open(root: &Path, rel: &str) -> Option<LineReader> {
        let mut file = super::snapshot::open_no_follow(&root.join(rel)).ok()?;
        if !file.metadata().ok()?.is_file() {
            return None;
        }
        let mut head = Vec::new();
        (&mut file).take(HEAD).read_to_end(&mut head).ok()?;
        let head = String::from_utf8_lossy(&head);
        let body_line = crate::protocol::chronicle::frontmatter_body_line(&head);
        file.seek(SeekFrom::Start(0)).ok()?;
        let mut reader = LineReader {
            reader: BufReader::with_capacity(BUFFER, file),
            body_line,
            offset: 0,
            lines_before: 0,
            bytes: Vec::new(),
            text: String::new(),
        };
        reader.seek(Position::default())?;
        Some(reader)
    }

    /// Reads on from `at` (a position a line of this file was read at).
    pub fn seek(&mut self, at: Position) -> Option<()> {
        self.reader.seek(SeekFrom::Start(at.offset)).ok()?;
        self.offset = at.offset;
        self.lines_before = at.number.saturating_sub(1);
        if at.offset == 0 {
            // A byte-order mark is not part of the first line.
            if self
                .reader
                .fill_buf()
                .ok()?
                .starts_with("\u{feff}".as_bytes())
            {
                self.reader.consume(3);
                self.offset = 3;
            }
        }
        Some(())
    }

    /// The next complete, non-blank line of the body; `None` at the end (or on a read error).
    pub fn next_line(&mut self) -> Option<ReadLine<'_>> {
        loop {
            self.bytes.clear();
            let read = self.reader.read_until(b'\n', &mut self.bytes).ok()?;
            if read == 0 || self.bytes.last() != Some(&b'\n') {
                return None;
            }
            let offset = self.offset;
            self.offset += read as u64;
            self.lines_before += 1;
            let number = self.lines_before;
            let raw = &self.bytes[..read - 1];
            let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
            self.text.clear();
            self.text.push_str(&String::from_utf8_lossy(raw));
            if number < self.body_line || self.text.trim().is_empty() {
                continue;
            }
            return Some(ReadLine {
                at: Position { offset, number },
                text: &self.text,
            });
        }
    }
}

/// The chronicle files of a polis on disk (archives oldest first, then `chronicle.md`), each
/// read a line at a time whenever a rule asks ([`crate::protocol::chronicle::summary::Source`]),
/// never whole.
pub struct Files {
    root: PathBuf,
    paths: Vec<String>,
    lines: usize,
    /// Per file, the last line the first read of it reached: a later read stops there, so
    /// every pass sees the same lines (what was appended meanwhile is for the next read).
    ends: Vec<Option<usize>>,
}

impl Files {
    /// The chronicle files at `root` that a polis reader would read
    /// ([`super::snapshot::read_chronicles`]); each one it would refuse (a link, not a regular
    /// file, an archive over the size of a record, not UTF-8, git's conflict markers) is left
    /// out and reported in `findings` with the reader's own finding.
    pub fn open(root: &Path, findings: &mut Vec<Finding>) -> Files {
        use crate::protocol::layout::CHRONICLE;
        // The rest of the polis was read with the folder listed: a listing error is told there.
        let mut names = super::snapshot::archive_names(root, &mut Vec::new());
        names.push(CHRONICLE.to_string());
        let mut files = Files {
            root: root.to_path_buf(),
            paths: Vec::new(),
            lines: 0,
            ends: Vec::new(),
        };
        for name in names {
            let limit = (name != CHRONICLE).then_some(super::snapshot::MAX_RECORD_BYTES);
            match line_count(root, &name, limit) {
                Ok(Some(lines)) => {
                    files.paths.push(name);
                    files.lines += lines;
                    files.ends.push(None);
                }
                Ok(None) => {}
                Err(f) => findings.push(f),
            }
        }
        files
    }
}

impl crate::protocol::chronicle::summary::Source for Files {
    fn paths(&self) -> Vec<&str> {
        self.paths.iter().map(String::as_str).collect()
    }

    fn line_count(&self) -> usize {
        self.lines
    }

    fn feed(&mut self, file: usize, each: &mut dyn FnMut(usize, &str)) {
        let (Some(path), Some(end)) = (self.paths.get(file), self.ends.get(file).copied()) else {
            return;
        };
        let Some(mut reader) = LineReader::open(&self.root, path) else {
            return;
        };
        let mut last = 0;
        while let Some(line) = reader.next_line() {
            if end.is_some_and(|end| line.at.number > end) {
                break;
            }
            last = line.at.number;
            each(line.at.number, line.text);
        }
        if end.is_none() {
            self.ends[file] = Some(last);
        }
    }
}

/// How many line ends `rel` holds, or `None` when it is missing, or the finding a polis reader
/// gives when it refuses the file. Read in blocks, holding one: a file the blocks show to be
/// clean (a regular file within `limit`, UTF-8, without `<<<<<<<`) is counted; any other is
/// read whole by the reader ([`super::snapshot::read_text`]), whose refusal (or git's conflict
/// block) is the answer, so the finding is the same word for word.
fn line_count(root: &Path, rel: &str, limit: Option<u64>) -> Result<Option<usize>, Finding> {
    if let Some(lines) = clean_line_count(root, rel, limit) {
        return Ok(Some(lines));
    }
    let Some(text) = super::snapshot::read_text(root, rel, limit)? else {
        return Ok(None);
    };
    if let Some(f) = super::snapshot::conflict_markers(rel, &text) {
        return Err(f);
    }
    Ok(Some(memchr::memchr_iter(b'\n', text.as_bytes()).count()))
}

/// The line ends of `rel` when its blocks show nothing a reader would refuse, else `None`.
fn clean_line_count(root: &Path, rel: &str, limit: Option<u64>) -> Option<usize> {
    let path = root.join(rel);
    let meta = std::fs::symlink_metadata(&path).ok()?;
    if !meta.is_file() || limit.is_some_and(|limit| meta.len() > limit) {
        return None;
    }
    let file = super::snapshot::open_no_follow(&path).ok()?;
    let mut file = file.take(limit.map_or(u64::MAX, |l| l + 1));
    let mut block = vec![0u8; BUFFER];
    // The end of the previous block from a character boundary on: an unfinished character,
    // and the start of a marker split between two blocks.
    let mut window: Vec<u8> = Vec::with_capacity(BUFFER + 8);
    let (mut lines, mut total) = (0usize, 0u64);
    loop {
        let n = match file.read(&mut block) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => return None,
        };
        total += n as u64;
        lines += memchr::memchr_iter(b'\n', &block[..n]).count();
        window.extend_from_slice(&block[..n]);
        if memchr::memmem::find(&window, b"<<<<<<<").is_some() {
            return None;
        }
        let valid = match std::str::from_utf8(&window) {
            Ok(_) => window.len(),
            Err(e) if e.error_len().is_none() => e.valid_up_to(),
            Err(_) => return None,
        };
        let mut keep = window.len().saturating_sub(6).min(valid);
        while keep > 0 && window[keep] & 0xC0 == 0x80 {
            keep -= 1;
        }
        window.drain(..keep);
    }
    let over = limit.is_some_and(|limit| total > limit);
    (!over && std::str::from_utf8(&window).is_ok()).then_some(lines)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::chronicle;

    fn lines_of(reader: &mut LineReader) -> Vec<(Position, String)> {
        let mut out = Vec::new();
        while let Some(l) = reader.next_line() {
            out.push((l.at, l.text.to_string()));
        }
        out
    }

    #[test]
    fn reads_the_lines_a_scan_gives_with_their_numbers_and_restarts_at_a_position() {
        let dir = tempfile::tempdir().unwrap();
        let text = "\u{feff}---\nkind: chronicle\n---\n\n- 2026-01-01 10:00 | a | did | - | one\r\n\n   \n- 2026-01-01 10:01 | b | did | - | two\nnot a line\n- incomplete";
        std::fs::write(dir.path().join("chronicle.md"), text).unwrap();
        let mut reader = LineReader::open(dir.path(), "chronicle.md").unwrap();
        let read = lines_of(&mut reader);
        let scanned: Vec<(usize, String)> = chronicle::scan(text)
            .lines
            .into_iter()
            .map(|l| (l.number, l.text))
            .collect();
        let got: Vec<(usize, String)> = read.iter().map(|(p, t)| (p.number, t.clone())).collect();
        assert_eq!(got, scanned);
        assert_eq!(got.len(), 3);
        // From the second line's position: the second and third again.
        reader.seek(read[1].0).unwrap();
        let again = lines_of(&mut reader);
        assert_eq!(again, read[1..]);
        // Each position is the line's byte offset.
        assert!(text.as_bytes()[read[2].0.offset as usize..].starts_with(b"not a line"));
    }

    #[test]
    fn a_link_or_a_missing_file_is_nothing() {
        let dir = tempfile::tempdir().unwrap();
        assert!(LineReader::open(dir.path(), "chronicle.md").is_none());
        std::fs::write(dir.path().join("real.md"), "- x\n").unwrap();
        std::os::unix::fs::symlink(dir.path().join("real.md"), dir.path().join("chronicle.md"))
            .unwrap();
        assert!(LineReader::open(dir.path(), "chronicle.md").is_none());
    }

    /// Read from disk a line at a time, the files give the summary the texts in memory give,
    /// and each file a polis reader refuses is refused with the reader's own finding.
    #[test]
    fn files_on_disk_say_what_their_texts_say_and_are_refused_as_a_reader_refuses_them() {
        use crate::fs::snapshot::{read_chronicles, ReadChronicles};
        use crate::protocol::chronicle::summary::{summarize, Context, Source, Texts};
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let archive = "---\nkind: chronicle\n---\n- 2026-03-20 10:00 | a-agent | joined polis | - | hi\n- 2026-03-20 10:01 | a-agent | Did Things | - | -\n";
        // Longer than a read block, with a line written twice and one without its newline.
        let mut current = String::new();
        for k in 0..3000 {
            current.push_str(&format!(
                "- 2026-04-01 09:00 | a-agent | worked on | - | step {k}\n"
            ));
        }
        current.push_str("- 2026-04-01 09:00 | a-agent | worked on | - | step 7\nnot a line\n- 2026-04-01 09:05 | a-agent | wrote");
        std::fs::write(root.join("chronicle-2026-Q1.md"), archive).unwrap();
        std::fs::write(root.join("chronicle.md"), &current).unwrap();
        // Refused: a link, git's conflict markers, bytes that are not UTF-8.
        std::os::unix::fs::symlink(root.join("chronicle.md"), root.join("chronicle-2025-Q4.md"))
            .unwrap();
        std::fs::write(
            root.join("chronicle-2025-Q3.md"),
            "- a\n<<<<<<< ours\n- b\n=======\n- c\n>>>>>>> theirs\n",
        )
        .unwrap();
        std::fs::write(root.join("chronicle-2025-Q2.md"), b"- a\n- \xff\n").unwrap();

        let mut refused = Vec::new();
        let mut files = Files::open(root, &mut refused);
        let mut read_findings = Vec::new();
        let (chronicle, archives) = read_chronicles(root, &mut ReadChronicles, &mut read_findings);
        let key = |f: &Finding| (f.path.clone(), f.line, f.message.clone());
        refused.sort_by_key(key);
        read_findings.sort_by_key(key);
        assert_eq!(refused, read_findings);
        assert_eq!(refused.len(), 3);

        let mut in_memory: Vec<(&str, &str)> = archives
            .iter()
            .map(|(n, t)| (n.as_str(), t.as_str()))
            .collect();
        in_memory.push(("chronicle.md", chronicle.as_deref().unwrap()));
        let mut texts = Texts::new(in_memory);
        assert_eq!(files.paths(), texts.paths());
        assert_eq!(files.line_count(), texts.line_count());
        let has_card = |id: &str| id == "a-agent";
        let link_exists = |_: &str| false;
        let ctx = Context {
            has_card: &has_card,
            link_exists: &link_exists,
            now: crate::protocol::clock::PolisTime::at_stamp(
                Default::default(),
                "2026-04-02 12:00",
            )
            .unwrap(),
        };
        let from_disk = summarize(&mut files, &ctx);
        let from_texts = summarize(&mut texts, &ctx);
        assert_eq!(from_disk.findings, from_texts.findings);
        assert!(from_disk
            .findings
            .iter()
            .any(|f| f.code == crate::protocol::finding::Code::Duplicate));
        assert_eq!(from_disk.last_activity, from_texts.last_activity);
        assert_eq!(from_disk.active_authors, from_texts.active_authors);
        assert_eq!(from_disk.paths, ["chronicle-2026-Q1.md", "chronicle.md"]);
    }

    /// A line appended between two reads of one build is left for the next build: every pass
    /// sees the lines the first saw.
    #[test]
    fn a_later_pass_stops_where_the_first_stopped() {
        use crate::protocol::chronicle::summary::Source;
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("chronicle.md"), "- one\n- two\n").unwrap();
        let mut files = Files::open(dir.path(), &mut Vec::new());
        let read = |files: &mut Files| {
            let mut seen = Vec::new();
            files.feed(0, &mut |n, _| seen.push(n));
            seen
        };
        assert_eq!(read(&mut files), [1, 2]);
        std::fs::write(dir.path().join("chronicle.md"), "- one\n- two\n- three\n").unwrap();
        assert_eq!(read(&mut files), [1, 2]);
    }
}
