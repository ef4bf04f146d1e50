//! What the chronicle files say, gathered from their lines one at a time: the findings about
//! them (C001–C008, polisd ids and agents' lines written twice), the claim conflicts, who is
//! active and who has left, each citizen's last line, and the person's answers.
//!
//! The files come from a [`Source`] that feeds their lines in the order they were written:
//! texts in memory ([`Texts`], `polisd check`) or files read from disk a line at a time (the
//! dashboard, which so never holds a chronicle whole). Each rule is fed the lines by one pass
//! ([`summarize`]); the search for agents' lines written twice reads them a second time only
//! when its first pass found a candidate, and resolving findings
//! ([`super::resolution::resolve`]) is one more pass only when there are findings.

use super::activity::Activity;
use super::claims::{ClaimConflict, Rounds};
use super::duplicates::Candidates;
use super::{stamp_and_author, ChronicleContext, Validation, FUTURE_TOLERANCE_MINUTES};
use crate::protocol::clock::PolisTime;
use crate::protocol::contracts::person_queue::{Answers, LatestAnswers};
use crate::protocol::finding::Finding;
use crate::protocol::layout;
use crate::protocol::merge::MarkerSearch;
use chrono::{Duration, NaiveDateTime};
use std::collections::{BTreeMap, BTreeSet};

/// The chronicle files of a polis in the order their lines were written (archives oldest
/// first, then `chronicle.md`), each fed line by line as often as asked.
pub trait Source {
    /// The files' paths relative to `_polis/`, in writing order.
    fn paths(&self) -> Vec<&str>;
    /// About how many lines they hold (a table is sized from it, once).
    fn line_count(&self) -> usize;
    /// Feeds the lines of file `file` (an index into [`Source::paths`]) to `each` as
    /// (number, text), as [`super::lines`] gives them.
    fn feed(&mut self, file: usize, each: &mut dyn FnMut(usize, &str));
}

/// Chronicle texts in memory, (path, text) in writing order.
pub struct Texts<'a> {
    files: Vec<(&'a str, &'a str)>,
}

impl<'a> Texts<'a> {
    pub fn new(files: Vec<(&'a str, &'a str)>) -> Texts<'a> {
        Texts { files }
    }
}

impl Source for Texts<'_> {
    fn paths(&self) -> Vec<&str> {
        self.files.iter().map(|(path, _)| *path).collect()
    }

    fn line_count(&self) -> usize {
        self.files
            .iter()
            .map(|(_, text)| memchr::memchr_iter(b'\n', text.as_bytes()).count())
            .sum()
    }

    fn feed(&mut self, file: usize, each: &mut dyn FnMut(usize, &str)) {
        if let Some((_, text)) = self.files.get(file) {
            for (number, line) in super::lines(text) {
                each(number, line);
            }
        }
    }
}

/// What the rules need to know about the polis.
pub struct Context<'a> {
    /// Whether an id has `citizens/<id>/capability_card.yml`.
    pub has_card: &'a dyn Fn(&str) -> bool,
    /// Whether a path relative to `_polis/` exists (file or folder).
    pub link_exists: &'a dyn Fn(&str) -> bool,
    pub now: PolisTime,
}

/// What the chronicle files say.
#[derive(Debug, Clone, Default)]
pub struct Summary {
    /// The files read, in writing order.
    pub paths: Vec<String>,
    /// C001–C008 and polisd ids written twice, line by line, then agents' lines written twice
    /// in the current chronicle (`polisd check`'s order).
    pub findings: Vec<Finding>,
    /// Claim conflicts in the rounds still open (current chronicle and newest archive).
    pub claim_conflicts: Vec<ClaimConflict>,
    /// Authors with a line in the activity window (current chronicle and newest archive).
    pub active_authors: BTreeSet<String>,
    /// Whose latest membership line (current chronicle and newest archive) is `left polis`.
    pub departed: BTreeSet<String>,
    /// Each citizen with a card: the newest stamp of its lines (none in the future), over
    /// every file.
    pub last_activity: BTreeMap<String, NaiveDateTime>,
    /// The person's newest answer to each queue item (current chronicle).
    pub answers: LatestAnswers,
}

/// Every rule of [`Summary`] fed each line of `source` once (and the lines of the current
/// chronicle a second time when one may have been written twice).
pub fn summarize(source: &mut dyn Source, ctx: &Context<'_>) -> Summary {
    let paths: Vec<String> = source.paths().into_iter().map(str::to_string).collect();
    let current = paths.iter().position(|p| p == layout::CHRONICLE);
    let newest_archive = paths.iter().rposition(|p| p != layout::CHRONICLE);
    let is_registered = |id: &str| (ctx.has_card)(id) || layout::is_system_citizen(id);
    let validation_ctx = ChronicleContext {
        path: layout::CHRONICLE,
        is_registered: &is_registered,
        link_exists: ctx.link_exists,
        newest_earlier: None,
        now: ctx.now,
    };
    let mut validation = Validation::new(&validation_ctx);
    let mut markers = MarkerSearch::default();
    // Lines written twice are looked for only when there is a current chronicle to report in.
    let mut candidates = current.map(|_| Candidates::new(source.line_count()));
    let mut rounds = Rounds::default();
    let mut activity = Activity::default();
    let span = activity.open(&ctx.now);
    let mut answers = Answers::default();
    let mut last_activity: BTreeMap<String, NaiveDateTime> = BTreeMap::new();
    let limit = ctx.now.now + Duration::minutes(FUTURE_TOLERANCE_MINUTES);
    let mut findings = Vec::new();
    for (i, path) in paths.iter().enumerate() {
        let is_current = Some(i) == current;
        let recent = is_current || Some(i) == newest_archive;
        source.feed(i, &mut |number, line| {
            findings.extend(validation.line(path, number, line));
            findings.extend(markers.line(path, number, line));
            if let Some(candidates) = candidates.as_mut() {
                candidates.line(line, is_current);
            }
            let stamped = stamp_and_author(line);
            if recent {
                rounds.line(line, ctx.has_card);
                activity.add_line(line, stamped, span);
            }
            if is_current {
                answers.line(line);
            }
            if let Some((stamp, author)) = stamped {
                if stamp <= limit && (ctx.has_card)(author) {
                    match last_activity.get_mut(author) {
                        Some(newest) => *newest = (*newest).max(stamp),
                        None => {
                            last_activity.insert(author.to_string(), stamp);
                        }
                    }
                }
            }
        });
    }
    activity.close(span);
    if let (Some(candidates), Some(current)) = (candidates, current) {
        let refs: Vec<&str> = paths.iter().map(String::as_str).collect();
        let order: Vec<usize> = (0..paths.len()).collect();
        let mut feed = |i: usize, each: &mut dyn FnMut(usize, &str)| source.feed(i, each);
        findings.extend(candidates.confirm(&refs, &order, current, &mut feed, &|_| true));
    }
    Summary {
        paths,
        findings,
        claim_conflicts: rounds.conflicts(),
        active_authors: activity.active_authors(&ctx.now).unwrap_or_default(),
        departed: activity.departed(),
        last_activity,
        answers: answers.into_map(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A source that feeds each file a few lines at a time and counts the passes over it, as
    /// a reader from disk does.
    struct Pieces<'a> {
        texts: Texts<'a>,
        passes: usize,
    }

    impl Source for Pieces<'_> {
        fn paths(&self) -> Vec<&str> {
            self.texts.paths()
        }
        fn line_count(&self) -> usize {
            3
        }
        fn feed(&mut self, file: usize, each: &mut dyn FnMut(usize, &str)) {
            self.passes += 1;
            let mut held: Vec<(usize, String)> = Vec::new();
            self.texts
                .feed(file, &mut |n, l| held.push((n, l.to_string())));
            for piece in held.chunks(2) {
                for (n, l) in piece {
                    each(*n, l);
                }
            }
        }
    }

    const ARCHIVE: &str = "---\nkind: chronicle\n---\n- 2026-03-20 10:00 | a-agent | joined polis | - | hi\n- 2026-03-20 10:01 | b-agent | claimed contract | [[contracts/open/x]] | -\n- 2026-03-20 10:02 | polis-daemon | noted | - | x <!-- polisd:chronicle:0123456789abcdef -->\n";
    const CURRENT: &str = "- 2026-04-01 09:00 | a-agent | claimed contract | [[contracts/open/x]] | -\n- 2026-04-01 09:01 | a-agent | Did Things | - | -\n- 2026-04-01 09:02 | polis-daemon | noted | - | x <!-- polisd:chronicle:0123456789abcdef -->\n- 2026-04-01 09:01 | a-agent | Did Things | - | -\n- 2026-04-01 09:03 | b-agent | left polis | - | bye\n- 2026-04-01 09:04 | polis-daemon | answered queue item | - | new-citizen/x accept by ana\nnot a line\n";

    fn now() -> PolisTime {
        PolisTime::at_stamp(Default::default(), "2026-04-02 12:00").unwrap()
    }

    /// Fed in pieces, a pass at a time, the summary is what the rules give over the whole
    /// texts; the lines are read once, and a second time only for a line written twice.
    #[test]
    fn fed_in_pieces_it_says_what_the_whole_texts_say() {
        let files = [("chronicle-2026-Q1.md", ARCHIVE), ("chronicle.md", CURRENT)];
        let has_card = |id: &str| id == "a-agent" || id == "b-agent";
        let link_exists = |rel: &str| rel.starts_with("contracts/open/x");
        let ctx = Context {
            has_card: &has_card,
            link_exists: &link_exists,
            now: now(),
        };
        let mut pieces = Pieces {
            texts: Texts::new(files.to_vec()),
            passes: 0,
        };
        let got = summarize(&mut pieces, &ctx);
        // Two files read once, the current chronicle's duplicate confirmed by a second pass.
        assert_eq!(pieces.passes, 4);

        let is_registered = |id: &str| has_card(id) || layout::is_system_citizen(id);
        let mut validated = Vec::new();
        let mut newest = None;
        for (path, text) in files {
            let lines: Vec<super::super::Line> = super::super::lines(text)
                .map(|(number, text)| super::super::Line {
                    number,
                    text: text.to_string(),
                })
                .collect();
            let (found, n) = super::super::validate_all(
                &lines,
                &ChronicleContext {
                    path,
                    is_registered: &is_registered,
                    link_exists: &link_exists,
                    newest_earlier: newest,
                    now: now(),
                },
            );
            validated.extend(found);
            newest = n;
        }
        let markers = crate::protocol::merge::duplicate_markers(&files);
        let twice = super::super::duplicate_lines(&[files[1], files[0]], &|_| true);
        let mut want: Vec<Finding> = validated
            .iter()
            .chain(&markers)
            .chain(&twice)
            .cloned()
            .collect();
        let mut have = got.findings.clone();
        want.sort_by(|a, b| (&a.path, a.line, &a.message).cmp(&(&b.path, b.line, &b.message)));
        have.sort_by(|a, b| (&a.path, a.line, &a.message).cmp(&(&b.path, b.line, &b.message)));
        assert_eq!(have, want);
        assert!(!markers.is_empty() && !twice.is_empty() && !validated.is_empty());

        let recent = [CURRENT, ARCHIVE];
        assert_eq!(
            got.claim_conflicts,
            super::super::claims::conflicts(&[ARCHIVE, CURRENT], &has_card)
        );
        assert_eq!(got.claim_conflicts.len(), 1);
        assert_eq!(
            got.active_authors,
            super::super::activity::active_authors(&recent, &now())
        );
        assert_eq!(
            got.departed,
            crate::protocol::contracts::handoff::departed(&recent)
        );
        assert_eq!(got.departed, BTreeSet::from(["b-agent".to_string()]));
        assert_eq!(
            got.answers,
            crate::protocol::contracts::person_queue::answers(CURRENT)
        );
        assert_eq!(got.answers.len(), 1);
        let stamp = |s: &str| crate::protocol::clock::parse_stamp(s).unwrap();
        assert_eq!(
            got.last_activity,
            BTreeMap::from([
                ("a-agent".to_string(), stamp("2026-04-01 09:01")),
                ("b-agent".to_string(), stamp("2026-04-01 09:03")),
            ])
        );
        assert_eq!(got.paths, ["chronicle-2026-Q1.md", "chronicle.md"]);
    }
}
