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

/// One complete chronicle line, in writing order across files.
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

/// For each of `findings` (in order), the line that resolves it, as `path:line`, or `None`.
/// `files` are the chronicle texts oldest first (archives, then `chronicle.md`), `findings` the
/// findings about them.
///
/// One pass over the lines: a line with findings waits, by author, for a later line of that
/// author that resolves them; only the waiting lines are held, never the chronicle's.
pub fn resolutions(files: &[(&str, &str)], findings: &[Finding]) -> Vec<Option<String>> {
    let mut out = vec![None; findings.len()];
    // Per (path, line), the findings about it.
    let mut about: HashMap<(&str, usize), Vec<usize>> = HashMap::new();
    for (i, f) in findings.iter().enumerate() {
        if let Some(line) = f.line {
            about.entry((f.path.as_str(), line)).or_default().push(i);
        }
    }
    if about.is_empty() {
        return out;
    }
    let with_errors: HashSet<(&str, usize)> = findings
        .iter()
        .filter(|f| f.severity == Severity::Error)
        .filter_map(|f| Some((f.path.as_str(), f.line?)))
        .collect();
    // Per author, the lines with findings still unresolved, with those findings.
    let mut waiting: HashMap<&str, Vec<(Seen<'_>, Vec<usize>)>> = HashMap::new();
    for (path, text) in files {
        for (number, line) in chronicle::lines(text) {
            let pending = about.remove(&(*path, number));
            if pending.is_none() && waiting.is_empty() {
                continue;
            }
            let later = Seen::of(path, number, line);
            if let Some(author) = later.author {
                if let Some(bad) = waiting.get_mut(author) {
                    bad.retain(|(bad, ids)| {
                        let resolves =
                            is_correction(bad, &later, &with_errors) || is_retraction(bad, &later);
                        if resolves {
                            for i in ids {
                                out[*i] = Some(format!("{}:{}", later.path, later.number));
                            }
                        }
                        !resolves
                    });
                    if bad.is_empty() {
                        waiting.remove(author);
                    }
                }
                if let Some(ids) = pending {
                    waiting.entry(author).or_default().push((later, ids));
                }
            }
        }
    }
    out
}

fn is_correction(bad: &Seen<'_>, later: &Seen<'_>, with_errors: &HashSet<(&str, usize)>) -> bool {
    later.verb.is_some()
        && later.verb != Some(RETRACT_VERB)
        && later.stamp.is_some()
        && later.stamp == bad.stamp
        && (bad.verb.is_none() || later.verb == bad.verb)
        && !with_errors.contains(&(later.path, later.number))
}

fn is_retraction(bad: &Seen<'_>, later: &Seen<'_>) -> bool {
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
