//! The 14-day activity window (SPEC §8): who has written lately, who joined or left, and the
//! newest stamp a chronicle holds.
//!
//! Pure: chronicle texts and "now" in, authors and stamps out.

use super::rollover::Quarter;
use super::{
    parse_entry, scan, stamp_and_author, Line, ACTIVITY_WINDOW_DAYS, FUTURE_TOLERANCE_MINUTES,
};
use crate::protocol::clock::PolisTime;
use crate::protocol::frontmatter;
use crate::yaml::Value;
use chrono::{Duration, NaiveDateTime};
use std::collections::BTreeSet;

/// Authors with a line in the last 14 days as of now (SPEC §8), over the given texts (the
/// current chronicle and the newest archive). Lines more than 10 minutes in the future do not
/// count. The caller keeps only registered, not-away citizens.
pub fn active_authors(texts: &[&str], now: &PolisTime) -> BTreeSet<String> {
    let from = now.now - Duration::days(ACTIVITY_WINDOW_DAYS);
    let to = now.now + Duration::minutes(FUTURE_TOLERANCE_MINUTES);
    let mut out = BTreeSet::new();
    for text in texts {
        for (_, line) in super::lines(text) {
            if let Some((stamp, author)) = stamp_and_author(line) {
                if stamp >= from && stamp <= to {
                    out.insert(author.to_string());
                }
            }
        }
    }
    out
}

/// What the activity window (SPEC §8) and C005 read of a chronicle, kept between passes so an
/// appended line costs one line: per author the stamps that can still fall in the window, the
/// newest stamp not in the future, and the stamps that were in the future when seen.
///
/// Answers equal [`active_authors`] and [`newest_stamp`] over the same lines for any `now` at
/// or after the latest one given to [`Activity::add`]; for an earlier `now` (a clock set back)
/// they are `None` and the caller scans the text.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Activity {
    recent: std::collections::BTreeMap<String, BTreeSet<NaiveDateTime>>,
    newest: Option<NaiveDateTime>,
    future: Vec<NaiveDateTime>,
    latest_now: Option<NaiveDateTime>,
    /// Per citizen, whether their latest membership line so far is `left polis`.
    members: std::collections::BTreeMap<String, bool>,
}

/// The bounds lines are taken in against, from one `now` ([`Activity::open`]).
#[derive(Debug, Clone, Copy)]
pub struct Span {
    floor: NaiveDateTime,
    limit: NaiveDateTime,
}

/// A membership line (`joined polis` / `left polis`): the citizen it is about (the one its
/// `[[citizens/<id>]]` link names, else its author) and whether they left.
pub fn membership(line: &str) -> Option<(String, bool)> {
    membership_stamped(line).map(|(who, left, _)| (who, left))
}

/// [`membership`] with the line's stamp.
pub fn membership_stamped(line: &str) -> Option<(String, bool, NaiveDateTime)> {
    // A cheap filter before parsing: one vectorised search (every line of a chronicle is asked).
    static VERB: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| memchr::memmem::Finder::new(" polis |"));
    VERB.find(line.as_bytes())?;
    let e = parse_entry(line).ok()?;
    if e.verb != "joined polis" && e.verb != "left polis" {
        return None;
    }
    let who = e
        .link
        .and_then(|l| l.strip_prefix("citizens/"))
        .map(|l| l.trim_end_matches('/'))
        .unwrap_or(e.author);
    Some((who.to_string(), e.verb == "left polis", e.stamp))
}

impl Activity {
    /// The activity of every line of `text`.
    pub fn of_text(text: &str, now: &PolisTime) -> Activity {
        let mut a = Activity::default();
        a.add(&scan(text).lines, now);
        a
    }

    /// Takes in lines appended after those already added.
    pub fn add(&mut self, lines: &[Line], now: &PolisTime) {
        let span = self.open(now);
        for line in lines {
            self.add_line(&line.text, stamp_and_author(&line.text), span);
        }
        self.close(span);
    }

    /// Starts taking in lines at `now`, one at a time ([`Activity::add_line`]), until
    /// [`Activity::close`].
    pub fn open(&mut self, now: &PolisTime) -> Span {
        let latest = self.latest_now.map_or(now.now, |l| l.max(now.now));
        self.latest_now = Some(latest);
        Span {
            floor: latest - Duration::days(ACTIVITY_WINDOW_DAYS),
            limit: now.now + Duration::minutes(FUTURE_TOLERANCE_MINUTES),
        }
    }

    /// Takes in the next line (between [`Activity::open`] and [`Activity::close`]), with its
    /// [`stamp_and_author`] (which a caller feeding several rules reads once).
    pub fn add_line(&mut self, line: &str, stamped: Option<(NaiveDateTime, &str)>, span: Span) {
        if let Some((who, left)) = membership(line) {
            self.members.insert(who, left);
        }
        let Some((stamp, author)) = stamped else {
            return;
        };
        if stamp <= span.limit {
            self.newest = self.newest.max(Some(stamp));
        } else {
            self.future.push(stamp);
        }
        if stamp >= span.floor {
            match self.recent.get_mut(author) {
                Some(stamps) => {
                    stamps.insert(stamp);
                }
                None => {
                    self.recent
                        .insert(author.to_string(), BTreeSet::from([stamp]));
                }
            }
        }
    }

    /// Done taking in lines: what can no longer count is dropped.
    pub fn close(&mut self, span: Span) {
        let (floor, limit) = (span.floor, span.limit);
        // Stamps before the window can never count again while the clock moves forward.
        self.recent.retain(|_, stamps| {
            *stamps = stamps.split_off(&floor);
            !stamps.is_empty()
        });
        // A stamp that was in the future and no longer is counts as an ordinary one now.
        let due = self.future.iter().filter(|f| **f <= limit).max().copied();
        self.newest = self.newest.max(due);
        self.future.retain(|f| *f > limit);
    }

    /// The citizens whose latest membership line among the added lines is `left polis`.
    pub fn departed(&self) -> BTreeSet<String> {
        self.members
            .iter()
            .filter(|(_, left)| **left)
            .map(|(who, _)| who.clone())
            .collect()
    }

    fn answers(&self, now: &PolisTime) -> bool {
        self.latest_now.is_none_or(|l| now.now >= l)
    }

    /// Per citizen with a membership line among the added lines, whether the latest one is
    /// `left polis` (the same as [`crate::protocol::contracts::handoff::departed`] over them).
    pub fn membership(&self) -> &std::collections::BTreeMap<String, bool> {
        &self.members
    }

    /// [`active_authors`] over the added lines.
    pub fn active_authors(&self, now: &PolisTime) -> Option<BTreeSet<String>> {
        if !self.answers(now) {
            return None;
        }
        let from = now.now - Duration::days(ACTIVITY_WINDOW_DAYS);
        let to = now.now + Duration::minutes(FUTURE_TOLERANCE_MINUTES);
        Some(
            self.recent
                .iter()
                .filter(|(_, stamps)| stamps.range(from..=to).next().is_some())
                .map(|(author, _)| author.clone())
                .collect(),
        )
    }

    /// [`newest_stamp`] over the added lines.
    pub fn newest_stamp(&self, now: &PolisTime) -> Option<Option<NaiveDateTime>> {
        if !self.answers(now) {
            return None;
        }
        let limit = now.now + Duration::minutes(FUTURE_TOLERANCE_MINUTES);
        let future = self.future.iter().filter(|f| **f <= limit).max().copied();
        Some(self.newest.max(future))
    }
}

/// The newest stamp of a chronicle text that is not in the future, for seeding C005.
pub fn newest_stamp(text: &str, now: &PolisTime) -> Option<NaiveDateTime> {
    let limit = now.now + Duration::minutes(FUTURE_TOLERANCE_MINUTES);
    super::lines(text)
        .filter_map(|(_, l)| stamp_and_author(l).map(|(s, _)| s))
        .filter(|s| *s <= limit)
        .max()
}

/// The `current_period` a chronicle declares, if any.
pub fn declared_period(text: &str) -> Option<Quarter> {
    let record = frontmatter::parse(text).ok()?;
    match record.get("current_period") {
        Value::Str(s) => Quarter::parse(s),
        _ => None,
    }
}

/// The note a `settled contract` line carries when the settlement filed no lesson (written
/// by `contract settle --no-lesson`); reflection counts these lines.
pub const NO_LESSON_NOTE: &str = "no lesson";

/// The `settled contract` lines whose note says [`NO_LESSON_NOTE`], as (author, stamp, line).
pub fn settled_without_lesson(text: &str) -> Vec<(String, NaiveDateTime, String)> {
    if !text.contains(NO_LESSON_NOTE) {
        return Vec::new();
    }
    text.lines()
        .filter(|l| l.contains("| settled contract |") && l.contains(NO_LESSON_NOTE))
        .filter_map(|l| {
            let e = super::parse_entry(l).ok()?;
            (e.verb == "settled contract" && e.note.contains(NO_LESSON_NOTE))
                .then(|| (e.author.to_string(), e.stamp, l.trim_end().to_string()))
        })
        .collect()
}
