//! How a chronicle finding is resolved without editing the append-only chronicle (SPEC §3).
//!
//! A finding about line N of a chronicle file, written by author A at stamp S, is resolved by a
//! later line (in the same file or a newer archive/current file) by the same author that is
//! either
//!
//! - **a correction**: the same stamp S and the same verb phrase (any verb, when line N is too
//!   malformed to have one), and itself free of errors; or
//! - **a retraction**: the verb phrase `retracted line` with a note starting with S
//!   (`YYYY-MM-DD HH:MM`, retracting A's lines at that minute) or with `line N` (that line of
//!   the same file). The link may be `-` or `[[chronicle]]`.
//!
//! Resolved findings stay in the record (`polisd check` lists them apart) but no longer fail
//! `check`. Pure: the chronicle texts and their findings in, a resolution per finding out.

use crate::protocol::chronicle::{self, STAMP_FORMAT};
use crate::protocol::finding::{Finding, Severity};
use std::collections::{HashMap, HashSet};

/// The verb phrase of an explicit retraction.
pub const RETRACT_VERB: &str = "retracted line";

/// One complete chronicle line, in writing order across files, borrowed while it is read.
struct Seen<'a> {
    path: &'a str,
    number: usize,
    author: Option<&'a str>,
    stamp: Option<String>,
    verb: Option<&'a str>,
    note: &'a str,
}

impl<'a> Seen<'a> {
    fn of(path: &'a str, number: usize, text: &'a str) -> Seen<'a> {
        let (author, stamp, verb, note) = match chronicle::parse_entry(text) {
            Ok(e) => (
                Some(e.author),
                Some(e.stamp_text.to_string()),
                Some(e.verb),
                e.note,
            ),
            Err(_) => match chronicle::stamp_and_author(text) {
                Some((stamp, author)) => (
                    Some(author),
                    Some(stamp.format(STAMP_FORMAT).to_string()),
                    None,
                    "",
                ),
                None => (None, None, None, ""),
            },
        };
        Seen {
            path,
            number,
            author,
            stamp,
            verb,
            note,
        }
    }
}

/// A line with findings, held until a later line resolves them: what of it a resolution reads.
struct Held {
    path: String,
    number: usize,
    stamp: Option<String>,
    verb: Option<String>,
}

/// For each of `findings` (in order), the line that resolves it, as `path:line`, or `None`.
/// `files` are the chronicle texts oldest first (archives, then `chronicle.md`), `findings` the
/// findings about them.
pub fn resolutions(files: &[(&str, &str)], findings: &[Finding]) -> Vec<Option<String>> {
    resolve(&mut super::summary::Texts::new(files.to_vec()), findings)
}

/// [`resolutions`] over the files of `source`, fed a line at a time; none is read when no
/// finding has a line.
pub fn resolve(
    source: &mut dyn super::summary::Source,
    findings: &[Finding],
) -> Vec<Option<String>> {
    let mut resolver = Resolver::new(findings);
    let paths: Vec<String> = source.paths().into_iter().map(str::to_string).collect();
    for (i, path) in paths.iter().enumerate() {
        if resolver.is_done() {
            break;
        }
        source.feed(i, &mut |number, line| resolver.line(path, number, line));
    }
    resolver.finish()
}

/// [`resolutions`] fed the lines one at a time, in writing order across files: a line with
/// findings waits, by author, for a later line of that author that resolves them; only the
/// waiting lines are held, never the chronicle's.
pub struct Resolver<'f> {
    out: Vec<Option<String>>,
    /// Per path, per line, the findings about it not yet reached.
    about: HashMap<&'f str, HashMap<usize, Vec<usize>>>,
    /// Per path, the lines with an error (a correction must be free of them).
    with_errors: HashMap<&'f str, HashSet<usize>>,
    /// Per author, the lines with findings still unresolved, with those findings.
    waiting: HashMap<String, Vec<(Held, Vec<usize>)>>,
}

impl<'f> Resolver<'f> {
    pub fn new(findings: &'f [Finding]) -> Resolver<'f> {
        let mut about: HashMap<&str, HashMap<usize, Vec<usize>>> = HashMap::new();
        let mut with_errors: HashMap<&str, HashSet<usize>> = HashMap::new();
        for (i, f) in findings.iter().enumerate() {
            let Some(line) = f.line else { continue };
            about
                .entry(f.path.as_str())
                .or_default()
                .entry(line)
                .or_default()
                .push(i);
            if f.severity == Severity::Error {
                with_errors.entry(f.path.as_str()).or_default().insert(line);
            }
        }
        Resolver {
            out: vec![None; findings.len()],
            about,
            with_errors,
            waiting: HashMap::new(),
        }
    }

    /// Whether no later line can resolve anything more.
    pub fn is_done(&self) -> bool {
        self.about.is_empty() && self.waiting.is_empty()
    }

    /// Takes in line `number` of `path`, the next one written.
    pub fn line(&mut self, path: &str, number: usize, text: &str) {
        let pending = match self.about.get_mut(path) {
            Some(lines) => {
                let pending = lines.remove(&number);
                if lines.is_empty() {
                    self.about.remove(path);
                }
                pending
            }
            None => None,
        };
        if pending.is_none() && self.waiting.is_empty() {
            return;
        }
        let later = Seen::of(path, number, text);
        let Some(author) = later.author else {
            return;
        };
        let with_errors = &self.with_errors;
        let out = &mut self.out;
        if let Some(bad) = self.waiting.get_mut(author) {
            bad.retain(|(bad, ids)| {
                let resolves =
                    is_correction(bad, &later, with_errors) || is_retraction(bad, &later);
                if resolves {
                    for i in ids {
                        out[*i] = Some(format!("{}:{}", later.path, later.number));
                    }
                }
                !resolves
            });
            if bad.is_empty() {
                self.waiting.remove(author);
            }
        }
        if let Some(ids) = pending {
            let held = Held {
                path: path.to_string(),
                number,
                stamp: later.stamp,
                verb: later.verb.map(str::to_string),
            };
            self.waiting
                .entry(author.to_string())
                .or_default()
                .push((held, ids));
        }
    }

    /// For each finding, the line that resolved it.
    pub fn finish(self) -> Vec<Option<String>> {
        self.out
    }
}

fn is_correction(
    bad: &Held,
    later: &Seen<'_>,
    with_errors: &HashMap<&str, HashSet<usize>>,
) -> bool {
    later.verb.is_some()
        && later.verb != Some(RETRACT_VERB)
        && later.stamp.is_some()
        && later.stamp == bad.stamp
        && (bad.verb.is_none() || later.verb == bad.verb.as_deref())
        && !with_errors
            .get(later.path)
            .is_some_and(|lines| lines.contains(&later.number))
}

fn is_retraction(bad: &Held, later: &Seen<'_>) -> bool {
    if later.verb != Some(RETRACT_VERB) {
        return false;
    }
    let note = later.note.trim();
    if let Some(stamp) = &bad.stamp {
        if note.starts_with(stamp.as_str()) {
            return true;
        }
    }
    let by_number = note
        .strip_prefix("line ")
        .and_then(|rest| {
            rest.split(|c: char| !c.is_ascii_digit())
                .next()
                .and_then(|n| n.parse::<usize>().ok())
        })
        .is_some_and(|n| n == bad.number && later.path == bad.path);
    by_number
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::finding::Code;

    fn err(line: usize) -> Finding {
        Finding::error(Code::C007, "chronicle.md", Some(line), "x")
    }

    #[test]
    fn chronicle_finding_resolved_by_a_corrected_line_with_the_same_stamp_and_verb() {
        let text = "- 2026-03-02 14:05 | alpha-agent | settled contract | [[contracts/open/x]] | done\n\
                    - 2026-03-02 14:07 | bravo-agent | joined polis | - | hi\n\
                    - 2026-03-02 14:05 | alpha-agent | settled contract | [[contracts/settled/x]] | done\n";
        let r = resolutions(&[("chronicle.md", text)], &[err(1)]);
        assert_eq!(r, vec![Some("chronicle.md:3".to_string())]);
        // Another author's line, or a different verb, is no correction.
        let text = "- 2026-03-02 14:05 | alpha-agent | settled contract | [[contracts/open/x]] | done\n\
                    - 2026-03-02 14:05 | bravo-agent | settled contract | [[contracts/settled/x]] | done\n\
                    - 2026-03-02 14:05 | alpha-agent | opened contract | [[contracts/open/x]] | -\n";
        assert_eq!(
            resolutions(&[("chronicle.md", text)], &[err(1)]),
            vec![None]
        );
    }

    #[test]
    fn chronicle_finding_not_resolved_by_a_correction_that_is_wrong_too() {
        let text = "- 2026-03-02 14:05 | alpha-agent | settled contract | [[contracts/open/x]] | a\n\
                    - 2026-03-02 14:05 | alpha-agent | settled contract | [[contracts/open/x]] | b\n";
        assert_eq!(
            resolutions(&[("chronicle.md", text)], &[err(1), err(2)]),
            vec![None, None]
        );
    }

    #[test]
    fn chronicle_finding_resolved_by_a_retraction_naming_its_stamp_or_line() {
        let text = "- 2026-03-02 14:05 | alpha-agent | Did Things | - | -\n\
                    - 2026-03-02 14:09 | alpha-agent | retracted line | [[chronicle]] | 2026-03-02 14:05 verb not lowercase\n";
        assert_eq!(
            resolutions(&[("chronicle.md", text)], &[err(1)]),
            vec![Some("chronicle.md:2".into())]
        );
        let text = "- 2026-03-02 14:05 | alpha-agent | broken\n\
                    - 2026-03-02 14:09 | alpha-agent | retracted line | - | line 1: sent too early\n";
        assert_eq!(
            resolutions(&[("chronicle.md", text)], &[err(1)]),
            vec![Some("chronicle.md:2".into())]
        );
        // The retraction must come later and from the author.
        let text = "- 2026-03-02 14:09 | bravo-agent | retracted line | - | line 2\n\
                    - 2026-03-02 14:05 | alpha-agent | broken\n";
        assert_eq!(
            resolutions(&[("chronicle.md", text)], &[err(2)]),
            vec![None]
        );
    }

    #[test]
    fn chronicle_finding_in_an_archive_resolved_by_a_line_in_the_current_file() {
        let archive = "- 2026-03-30 23:55 | alpha-agent | Closed Quarter | - | -\n";
        let current = "- 2026-04-01 09:00 | alpha-agent | retracted line | - | 2026-03-30 23:55\n";
        let f = Finding::warning(Code::C008, "chronicle-2026-Q1.md", Some(1), "x");
        assert_eq!(
            resolutions(
                &[("chronicle-2026-Q1.md", archive), ("chronicle.md", current)],
                &[f]
            ),
            vec![Some("chronicle.md:1".into())]
        );
    }
}
