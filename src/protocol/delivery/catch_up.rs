//! The entry routine's catch-up: the chronicle lines a citizen has not seen since its last
//! session, and the cursor (`last_seen_event` in its `status.md`) that records what it has now
//! seen.
//!
//! `last_seen_event` holds the stamp of the newest chronicle line seen, as the protocol says.
//! Chronicle stamps have minute precision, so several lines share one; `last_seen_event_lines`
//! says how many lines of that minute were seen, so a line appended later in the same minute
//! is still new (the chronicle is append-only: the seen ones come first).
//!
//! A copy of the polis merged in from another machine sorts its lines into the chronicle by
//! stamp, so work done there while this machine's citizen was in session lands before the
//! cursor, where a stamp alone would call it seen. So the caller also keeps, per machine,
//! digests of the lines a session saw within [`LATE_DAYS`] of its cursor ([`Seen`]); a line in
//! that span whose digest is not among them arrived late, and is new too.
//!
//! Pure: the caller reads the chronicle's tail back to the cursor and the status text.

use crate::protocol::amendments::amendment::{read_when, When};
use crate::protocol::chronicle;
use crate::protocol::clock::{PolisTime, PolisZone};
use crate::protocol::delivery::notice;
use crate::protocol::finding::Finding;
use crate::protocol::frontmatter;
use crate::yaml::Value;
use chrono::{NaiveDateTime, Timelike};

/// The status key of the cursor's stamp (SPEC §5).
pub const SEEN_KEY: &str = "last_seen_event";
/// How many lines stamped `last_seen_event` were seen.
pub const SEEN_LINES_KEY: &str = "last_seen_event_lines";
/// The status key of the last session start.
pub const ACTIVE_KEY: &str = "last_active";
/// How far before the cursor a line merged in late is still caught up with: a copy that was
/// away for longer brings work the citizen learns of from the contracts, not the catch-up.
pub const LATE_DAYS: i64 = chronicle::ACTIVITY_WINDOW_DAYS;

/// The lines one session saw, from `from` on, as [`digest`]s; valid only while the status still
/// holds the `cursor` that session recorded (a session on another machine moves it on).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Seen {
    pub cursor: Option<Cursor>,
    pub from: Option<NaiveDateTime>,
    /// Sorted, without repeats.
    pub digests: Vec<u64>,
}

impl Seen {
    fn holds(&self, digest: u64) -> bool {
        self.digests.binary_search(&digest).is_ok()
    }
}

/// A chronicle line's short digest, for [`Seen`]. A fast hash, not a cryptographic one: it only
/// tells lines of one chronicle apart on one machine, and the record is kept per polisd version
/// (the hash may change with foldhash's).
pub fn digest(line: &str) -> u64 {
    use std::hash::BuildHasher;
    foldhash::quality::FixedState::with_seed(0).hash_one(line.trim())
}

/// How far a citizen has read the chronicle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cursor {
    pub stamp: NaiveDateTime,
    /// Lines stamped `stamp` already seen.
    pub lines: usize,
}

impl Cursor {
    /// The cursor in a status frontmatter; `None` when `last_seen_event` is absent, null or not
    /// a time. A stamp with no line count counts every line of its minute as seen.
    ///
    /// Agents following the entry routine write it by hand, so besides polisd's own
    /// `'YYYY-MM-DD HH:MM'` it reads what they write: a YAML datetime (one with an offset is
    /// moved into the polis timezone `zone`, as chronicle stamps are), an ISO string with `T`,
    /// a date (its midnight), or the seen chronicle line itself. Seconds are dropped: chronicle
    /// stamps have minutes.
    pub fn of(fields: &Value, zone: PolisZone) -> Option<Cursor> {
        let value = fields.get(SEEN_KEY);
        let line_stamp = value
            .as_str()
            .and_then(|s| chronicle::stamp_and_author(s).map(|(t, _)| t));
        let read = || {
            let now = PolisTime {
                zone,
                now: NaiveDateTime::default(),
            };
            Some(match read_when(value, &now)? {
                When::Moment(t) => t,
                When::Day(d) => d.and_hms_opt(0, 0, 0)?,
            })
        };
        let stamp = line_stamp.or_else(read)?;
        let stamp = stamp.with_second(0)?.with_nanosecond(0)?;
        let lines = match fields.get(SEEN_LINES_KEY) {
            Value::Int(n) if *n >= 0 => *n as usize,
            _ => usize::MAX,
        };
        Some(Cursor { stamp, lines })
    }

    /// Whether a line stamped `stamp` lies before the cursor, so reading back can stop there.
    pub fn is_before(&self, stamp: NaiveDateTime) -> bool {
        stamp < self.stamp
    }
}

/// What the citizen has not seen.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CatchUp {
    /// The unseen lines written by others, newest first, as written.
    pub events: Vec<String>,
    /// Whether the tail read reached the cursor (else there may be more than `events`).
    pub complete: bool,
    /// The cursor to record: the newest line now seen (own lines included).
    pub next: Option<Cursor>,
    /// The cursor read from the status (`None`: no previous session recorded).
    pub previous: Option<Cursor>,
    /// How many of `events` arrived late: stamped before the cursor, merged in since.
    pub late: usize,
    /// What this catch-up saw, to keep for the next one (with `next` as its cursor).
    pub seen: Seen,
}

/// The lines of `tail` (chronicle lines in file order, the end of the file) that come after
/// `cursor`, leaving out `citizen`'s own, and those before it that `seen` (the last session's,
/// when it recorded this cursor) does not hold. `complete` says whether `tail` reached back to
/// the cursor, `whole` whether it is the whole file. Lines that are not chronicle lines
/// (frontmatter, blank) are skipped.
pub fn since(
    tail: &str,
    cursor: Option<Cursor>,
    citizen: &str,
    (complete, whole): (bool, bool),
    seen: Option<&Seen>,
) -> CatchUp {
    let late_from = |c: Cursor| c.stamp - chrono::Duration::days(LATE_DAYS);
    let seen = seen.filter(|s| s.cursor.is_some() && s.cursor == cursor);
    let mut events = Vec::new();
    let mut late = 0;
    let mut at_cursor = 0usize;
    let mut newest: Option<Cursor> = cursor;
    let mut stamped: Vec<(NaiveDateTime, u64)> = Vec::new();
    for line in tail.lines() {
        let Some((stamp, author)) = chronicle::stamp_and_author(line) else {
            continue;
        };
        let digest = digest(line);
        stamped.push((stamp, digest));
        let new = match cursor {
            None => true,
            Some(c) if stamp > c.stamp => true,
            Some(c) if stamp == c.stamp => {
                at_cursor += 1;
                at_cursor > c.lines
            }
            Some(_) => false,
        };
        let arrived_late = !new
            && seen.is_some_and(|s| {
                s.from.is_some_and(|from| stamp >= from)
                    && cursor.is_some_and(|c| stamp >= late_from(c))
                    && !s.holds(digest)
            });
        newest = match newest {
            Some(n) if n.stamp == stamp && new => Some(Cursor {
                stamp,
                lines: n.lines.saturating_add(1),
            }),
            Some(n) if n.stamp >= stamp => Some(n),
            _ => Some(Cursor { stamp, lines: 1 }),
        };
        if (new || arrived_late) && author != citizen {
            events.push(line.trim().to_string());
            late += usize::from(arrived_late);
        }
    }
    events.reverse();
    // What the next catch-up may call seen: every line read within its late span. A tail cut
    // short of the span holds what it read, from its oldest line on.
    let seen_next = match newest {
        Some(next) => Seen {
            cursor: Some(next),
            from: Some(match stamped.iter().map(|(t, _)| *t).min() {
                Some(oldest) if !whole => oldest.max(late_from(next)),
                _ => late_from(next),
            }),
            digests: {
                let mut d: Vec<u64> = stamped
                    .iter()
                    .filter(|(t, _)| *t >= late_from(next))
                    .map(|(_, d)| *d)
                    .collect();
                d.sort_unstable();
                d.dedup();
                d
            },
        },
        None => Seen::default(),
    };
    CatchUp {
        events,
        complete,
        next: newest,
        previous: cursor,
        late,
        seen: seen_next,
    }
}

/// `status_text` (or a new status when `None`) with the cursor and `last_active` spliced into
/// its frontmatter, every other byte kept. A broken frontmatter is refused, as
/// [`notice::status_fit_for_splice`] says.
pub fn with_seen(
    status_text: Option<&str>,
    citizen: &str,
    cursor: Option<Cursor>,
    last_active: &str,
    path: &str,
) -> Result<String, Finding> {
    let mut fields: Vec<(&str, String)> = vec![(ACTIVE_KEY, format!("'{last_active}'"))];
    if let Some(c) = cursor {
        fields.push((SEEN_KEY, format!("'{}'", c.stamp.format("%Y-%m-%d %H:%M"))));
        fields.push((SEEN_LINES_KEY, c.lines.min(i64::MAX as usize).to_string()));
    }
    let base = match status_text {
        Some(text) => {
            notice::status_fit_for_splice(text, path, "`last_seen_event` and `last_active` are")?;
            if frontmatter::splice_field(text, ACTIVE_KEY, "x", None).is_some() {
                text.to_string()
            } else {
                format!("---\nagent_id: {citizen}\n---\n{text}")
            }
        }
        None => format!("---\nagent_id: {citizen}\nstate: idle\n---\n\n# Status of {citizen}\n"),
    };
    let mut out = base;
    let mut after = "agent_id";
    for (key, value) in fields {
        if let Some(spliced) = frontmatter::splice_field(&out, key, &value, Some(after)) {
            out = spliced;
        }
        after = key;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> NaiveDateTime {
        chronicle::parse_stamp(s).unwrap()
    }

    const TAIL: &str = "- 2026-03-02 09:00 | a-agent | did | - | -\n- 2026-03-02 09:01 | b-agent | did | - | one\n- 2026-03-02 09:01 | me-agent | did | - | mine\n- 2026-03-02 09:01 | b-agent | did | - | two\n";

    #[test]
    fn lines_of_the_cursor_minute_after_the_seen_ones_are_new() {
        let c = Cursor {
            stamp: at("2026-03-02 09:01"),
            lines: 1,
        };
        let got = since(TAIL, Some(c), "me-agent", (true, true), None);
        assert_eq!(
            got.events,
            vec!["- 2026-03-02 09:01 | b-agent | did | - | two"]
        );
        assert_eq!(
            got.next,
            Some(Cursor {
                stamp: at("2026-03-02 09:01"),
                lines: 3
            })
        );
    }

    #[test]
    fn a_line_merged_in_before_the_cursor_is_new_once() {
        let first = since(TAIL, None, "me-agent", (true, true), None);
        assert_eq!(first.seen.digests.len(), 4);
        // Another machine's line of 08:30, sorted in by the merge, and one of its own.
        let merged = format!(
            "- 2026-03-02 08:30 | c-agent | did | - | offline\n- 2026-03-02 08:40 | me-agent | did | - | elsewhere\n{TAIL}"
        );
        let second = since(
            &merged,
            first.next,
            "me-agent",
            (true, true),
            Some(&first.seen),
        );
        assert_eq!(
            second.events,
            vec!["- 2026-03-02 08:30 | c-agent | did | - | offline"]
        );
        assert_eq!(second.late, 1);
        assert_eq!(second.next, first.next);
        let third = since(
            &merged,
            second.next,
            "me-agent",
            (true, true),
            Some(&second.seen),
        );
        assert!(third.events.is_empty(), "{:?}", third.events);

        // A record kept with another cursor (a session elsewhere moved it) is not used...
        let moved = Cursor {
            stamp: at("2026-03-02 09:01"),
            lines: 1,
        };
        let other = since(
            &merged,
            Some(moved),
            "me-agent",
            (true, true),
            Some(&first.seen),
        );
        assert_eq!(other.late, 0);
        assert_eq!(
            other.events,
            vec!["- 2026-03-02 09:01 | b-agent | did | - | two"]
        );
        // ...nor for a line older than what the record covers (its tail was cut short), or than
        // the late span; a record of the whole file covers the span.
        let older = format!("- 2026-03-01 08:00 | c-agent | did | - | a day older\n{merged}");
        let cut = since(
            &merged,
            first.next,
            "me-agent",
            (true, false),
            Some(&first.seen),
        );
        assert_eq!(cut.seen.from, Some(at("2026-03-02 08:30")));
        let fourth = since(&older, cut.next, "me-agent", (true, true), Some(&cut.seen));
        assert!(fourth.events.is_empty(), "{:?}", fourth.events);
        let covered = since(
            &older,
            second.next,
            "me-agent",
            (true, true),
            Some(&second.seen),
        );
        assert_eq!(covered.late, 1);
        let ancient = format!("- 2026-02-01 08:00 | c-agent | did | - | past the span\n{merged}");
        let fifth = since(
            &ancient,
            second.next,
            "me-agent",
            (true, true),
            Some(&second.seen),
        );
        assert!(fifth.events.is_empty(), "{:?}", fifth.events);
    }

    #[test]
    fn no_cursor_sees_every_line_but_its_own_and_a_second_pass_sees_none() {
        let first = since(TAIL, None, "me-agent", (true, true), None);
        assert_eq!(first.events.len(), 3);
        assert!(first.events[0].ends_with("two"));
        let second = since(TAIL, first.next, "me-agent", (true, true), None);
        assert!(second.events.is_empty());
        assert_eq!(second.next, first.next);
    }

    #[test]
    fn the_cursor_is_spliced_into_the_status_keeping_other_bytes() {
        let status =
            "---\nagent_id: me-agent\nstate: working # mine\nlast_seen_event: null\n---\n\nnotes\n";
        let c = Cursor {
            stamp: at("2026-03-02 09:01"),
            lines: 2,
        };
        let path = "citizens/me-agent/status.md";
        let out = with_seen(
            Some(status),
            "me-agent",
            Some(c),
            "2026-03-02 10:00:00",
            path,
        )
        .unwrap();
        assert!(out.contains("state: working # mine\n"));
        assert!(out.contains("last_seen_event: '2026-03-02 09:01'\n"));
        assert!(out.contains("last_seen_event_lines: 2\n"));
        assert!(out.ends_with("\nnotes\n"));
        let fields = frontmatter::parse(&out).unwrap().fields;
        assert_eq!(Cursor::of(&fields, PolisZone::default()), Some(c));
    }

    #[test]
    fn an_unclosed_frontmatter_gets_no_second_block() {
        let path = "citizens/me-agent/status.md";
        let broken = "---\nagent_id: me-agent\nstate: working\n\nnotes\n";
        let refused = with_seen(Some(broken), "me-agent", None, "2026-03-02 10:00:00", path);
        let finding = refused.unwrap_err();
        assert_eq!(finding.line, Some(1), "{finding:?}");
        assert!(finding.message.contains("never closed"), "{finding:?}");
        let no_frontmatter = with_seen(Some("notes\n"), "me-agent", None, "x", path).unwrap();
        assert!(no_frontmatter.starts_with("---\nagent_id: me-agent\n"));
        assert!(no_frontmatter.ends_with("---\nnotes\n"));
    }
}
