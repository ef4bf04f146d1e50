//! A line appended twice: the same text (an agent's line, no polisd id) at two places of the
//! chronicle and its archives.
//!
//! The search holds one 64-bit hash per line, in a table sized once (9 bytes a line, where a
//! line's text is about 65), not the lines: the files are fed to it line by line ([`Feed`]).
//! A hash seen before only marks the line as a candidate; a second pass, run only when there
//! is one, compares the texts of the lines that share a candidate's hash, so two different
//! lines whose hashes collide are never reported.

use super::{lines, marker_id, stamp_and_author};
use crate::protocol::finding::{quoted, Code, Finding};
use std::collections::{HashMap, HashSet};
use std::hash::Hasher;

/// Feeds the lines of file `i` (an index into the paths given to [`duplicates`]) to `each`,
/// as (number, text) in the file's order, as [`lines`] gives them.
pub type Feed<'a> = dyn FnMut(usize, &mut dyn FnMut(usize, &str)) + 'a;

/// [`duplicates`] over texts in memory: `files[0]` is the current chronicle, the rest its
/// archives, oldest first.
pub fn duplicate_lines(files: &[(&str, &str)], fresh: &dyn Fn(usize) -> bool) -> Vec<Finding> {
    let paths: Vec<&str> = files.iter().map(|(path, _)| *path).collect();
    let capacity = files
        .iter()
        .map(|(_, text)| memchr::memchr_iter(b'\n', text.as_bytes()).count())
        .sum();
    let mut feed = |i: usize, each: &mut dyn FnMut(usize, &str)| {
        for (number, line) in lines(files[i].1) {
            each(number, line);
        }
    };
    duplicates(&paths, capacity, &mut feed, fresh)
}

/// Two equal lines are one event written twice, typically by an agent that followed a "put
/// the line back" advice while the line was still in transit: a warning naming both places.
/// `paths[0]` is the current chronicle, the rest its archives oldest first; a line in the
/// current chronicle repeats one archived earlier. Only lines of `paths[0]` numbered in `fresh`
/// are reported, so an old duplicate is told once. `capacity`: about how many lines there are
/// (the table is sized once: one grown by doubling leaves its smaller copies behind in the
/// allocator). polisd removes nothing.
pub fn duplicates(
    paths: &[&str],
    capacity: usize,
    feed: &mut Feed<'_>,
    fresh: &dyn Fn(usize) -> bool,
) -> Vec<Finding> {
    duplicates_hashed_by(line_hash, paths, capacity, feed, fresh)
}

/// A line's hash as the search keys it: its text without trailing whitespace, through a
/// hasher with fixed keys.
fn line_hash(line: &str) -> u64 {
    let mut h = std::hash::DefaultHasher::new();
    h.write(line.trim_end().as_bytes());
    h.finish()
}

/// Whether the search looks at `line` at all: an agent's line (polisd's own lines carry an
/// id, and a merge may keep two of them on purpose).
fn is_searched(line: &str) -> bool {
    marker_id(line).is_none() && stamp_and_author(line).is_some()
}

/// [`duplicates`] with the hash given (a test forces collisions with it).
fn duplicates_hashed_by(
    hash: fn(&str) -> u64,
    paths: &[&str],
    capacity: usize,
    feed: &mut Feed<'_>,
    fresh: &dyn Fn(usize) -> bool,
) -> Vec<Finding> {
    // Archives first, then the current chronicle: the order the lines were written in.
    let mut order: Vec<usize> = (1..paths.len()).collect();
    order.extend(paths.first().map(|_| 0));
    let mut candidates = Candidates::hashed_by(hash, capacity);
    for &i in &order {
        feed(i, &mut |number, line| {
            candidates.line(line, i == 0 && fresh(number))
        });
    }
    candidates.confirm(paths, &order, 0, feed, fresh)
}

/// The search's first pass, fed every line once in the order they were written: the hashes
/// of the lines that could be reported again.
pub struct Candidates {
    hash: fn(&str) -> u64,
    seen: HashSet<u64>,
    suspects: HashSet<u64>,
}

impl Candidates {
    /// For about `capacity` lines (the table is sized once).
    pub fn new(capacity: usize) -> Candidates {
        Candidates::hashed_by(line_hash, capacity)
    }

    fn hashed_by(hash: fn(&str) -> u64, capacity: usize) -> Candidates {
        Candidates {
            hash,
            seen: HashSet::with_capacity(capacity),
            suspects: HashSet::new(),
        }
    }

    /// Takes in the next line; `reportable`: it is a line of the current chronicle that may be
    /// reported (a fresh one).
    pub fn line(&mut self, line: &str, reportable: bool) {
        if !is_searched(line) {
            return;
        }
        let key = (self.hash)(line);
        if !self.seen.insert(key) && reportable {
            self.suspects.insert(key);
        }
    }

    /// The second pass, run only when the first found a candidate: the lines that share a
    /// candidate's hash, compared by their text. `order`: the files (indices into `paths`) in
    /// the order their lines were written, as the first pass was fed; `current`: the file
    /// whose lines numbered in `fresh` are reported.
    pub fn confirm(
        self,
        paths: &[&str],
        order: &[usize],
        current: usize,
        feed: &mut Feed<'_>,
        fresh: &dyn Fn(usize) -> bool,
    ) -> Vec<Finding> {
        let Candidates {
            hash,
            seen,
            suspects,
        } = self;
        drop(seen);
        if suspects.is_empty() {
            return Vec::new();
        }
        let mut first: HashMap<String, (usize, usize)> = HashMap::new();
        let mut out = Vec::new();
        for &i in order {
            feed(i, &mut |number, line| {
                if !is_searched(line) || !suspects.contains(&hash(line)) {
                    return;
                }
                let text = line.trim_end();
                match first.get(text) {
                    None => {
                        first.insert(text.to_string(), (i, number));
                    }
                    Some(&(f, l)) if i == current && fresh(number) => out.push(Finding::warning(
                        Code::Duplicate,
                        paths[current],
                        Some(number),
                        format!(
                            "`{}` is here a second time (first at {}:{l}): one event written twice. \
                             Delete this copy; when a line seems missing after a sync, wait for the \
                             sync to finish before appending it again",
                            quoted(text),
                            paths[f],
                        ),
                    )),
                    Some(_) => {}
                }
            });
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ARCHIVE: &str = "---\nkind: chronicle\n---\n- 2026-01-01 10:00 | a-agent | did | - | one\n- 2026-01-01 10:01 | b-agent | did | - | two\n";
    const CURRENT: &str = "- 2026-02-01 10:00 | a-agent | did | - | three\n- 2026-01-01 10:00 | a-agent | did | - | one  \n- 2026-02-01 10:01 | b-agent | did | - | four\n- 2026-02-01 10:00 | a-agent | did | - | three\n- 2026-02-01 10:02 | polis-daemon | noted | - | x <!-- polisd:chronicle:0123456789abcdef -->\n- 2026-02-01 10:02 | polis-daemon | noted | - | x <!-- polisd:chronicle:0123456789abcdef -->\nnot a line\nnot a line\n";

    fn files() -> [(&'static str, &'static str); 2] {
        [("chronicle.md", CURRENT), ("chronicle-2026-Q1.md", ARCHIVE)]
    }

    fn whole(hash: fn(&str) -> u64, fresh: &dyn Fn(usize) -> bool) -> Vec<Finding> {
        let files = files();
        let paths: Vec<&str> = files.iter().map(|(p, _)| *p).collect();
        let mut feed = |i: usize, each: &mut dyn FnMut(usize, &str)| {
            for (n, l) in lines(files[i].1) {
                each(n, l);
            }
        };
        duplicates_hashed_by(hash, &paths, 16, &mut feed, fresh)
    }

    fn places(found: &[Finding]) -> Vec<(usize, String)> {
        found
            .iter()
            .map(|f| {
                let first = f.message.split("(first at ").nth(1).unwrap();
                (
                    f.line.unwrap(),
                    first.split(')').next().unwrap().to_string(),
                )
            })
            .collect()
    }

    #[test]
    fn a_line_written_twice_is_told_with_its_first_place() {
        let found = duplicate_lines(&files(), &|_| true);
        assert_eq!(
            places(&found),
            [
                (2, "chronicle-2026-Q1.md:4".to_string()),
                (4, "chronicle.md:1".to_string())
            ]
        );
        assert!(found.iter().all(|f| f.path == "chronicle.md"));
        // Only the fresh lines are told.
        assert_eq!(places(&duplicate_lines(&files(), &|n| n == 4)).len(), 1);
    }

    /// Every line with the same hash: the texts decide, so the answer is the same.
    #[test]
    fn colliding_hashes_never_make_a_duplicate() {
        let honest = whole(line_hash, &|_| true);
        let colliding = whole(|_| 7, &|_| true);
        assert_eq!(colliding, honest);
        assert_eq!(places(&colliding).len(), 2);
        // Two different lines with one hash and no equal text: nothing.
        let text = "- 2026-01-01 10:00 | a-agent | did | - | one\n- 2026-01-01 10:00 | a-agent | did | - | two\n";
        let mut feed = |_: usize, each: &mut dyn FnMut(usize, &str)| {
            for (n, l) in lines(text) {
                each(n, l);
            }
        };
        assert!(duplicates_hashed_by(|_| 7, &["chronicle.md"], 2, &mut feed, &|_| true).is_empty());
    }

    /// Fed a few lines at a time (as a reader from disk does), the search gives what it gives
    /// over the whole texts.
    #[test]
    fn fed_in_pieces_it_finds_what_the_whole_texts_give() {
        let files = files();
        let paths: Vec<&str> = files.iter().map(|(p, _)| *p).collect();
        let mut fed = 0;
        let mut feed = |i: usize, each: &mut dyn FnMut(usize, &str)| {
            let all: Vec<(usize, &str)> = lines(files[i].1).collect();
            for piece in all.chunks(2) {
                for (n, l) in piece {
                    fed += 1;
                    each(*n, l);
                }
            }
        };
        let found = duplicates(&paths, 16, &mut feed, &|_| true);
        assert_eq!(found, duplicate_lines(&files, &|_| true));
        assert!(fed > 0);
    }
}
