//! Quarterly rollover (SPEC §3): which quarter a chronicle holds, when its lines move to
//! `chronicle-YYYY-Qn.md`, and the frontmatter the new file starts with.
//!
//! Pure: text and "now" in, the new texts out. A rollover only moves lines, never edits one.

use super::{daemon_line, link_target, parse_entry, scan, stamp_and_author};
use crate::protocol::clock::PolisTime;
use crate::protocol::frontmatter;
use chrono::{Datelike, NaiveDate};

/// A quarter, `YYYY-Qn`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Quarter {
    pub year: i32,
    pub q: u32,
}

impl Quarter {
    pub fn of(date: NaiveDate) -> Quarter {
        Quarter {
            year: date.year(),
            q: (date.month() - 1) / 3 + 1,
        }
    }

    /// The first day of the quarter.
    pub fn first_day(self) -> NaiveDate {
        NaiveDate::from_ymd_opt(self.year, (self.q - 1) * 3 + 1, 1).unwrap_or_default()
    }

    pub fn previous(self) -> Quarter {
        if self.q == 1 {
            Quarter {
                year: self.year - 1,
                q: 4,
            }
        } else {
            Quarter {
                year: self.year,
                q: self.q - 1,
            }
        }
    }

    /// Reads `YYYY-Qn`.
    pub fn parse(text: &str) -> Option<Quarter> {
        let (y, q) = text.trim().split_once("-Q")?;
        let year: i32 = y.parse().ok()?;
        let q: u32 = q.parse().ok()?;
        (y.len() == 4 && (1..=4).contains(&q)).then_some(Quarter { year, q })
    }

    /// `chronicle-YYYY-Qn.md`.
    pub fn archive_name(self) -> String {
        format!("chronicle-{self}.md")
    }

    /// The quarter of an archive file name `chronicle-YYYY-Qn.md`.
    pub fn from_archive_name(name: &str) -> Option<Quarter> {
        Quarter::parse(name.strip_prefix("chronicle-")?.strip_suffix(".md")?)
    }
}

/// The newest archive among file names (others are ignored): the one the activity window reads
/// with the current chronicle.
pub fn newest_archive<'a>(names: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    names
        .into_iter()
        .filter_map(|n| Quarter::from_archive_name(n).map(|q| (q, n)))
        .max_by_key(|(q, _)| *q)
        .map(|(_, n)| n)
}

/// Whether a chronicle text already holds a line with this verb linking this target (after
/// [`link_target`] normalisation), by any author. Lets a resumed action (e.g. an interrupted
/// ratification) append its line only once.
pub fn has_line(text: &str, verb: &str, target: &str) -> bool {
    has_line_of(text, None, verb, target)
}

/// [`has_line`] by one author only (`None`: any): whether that citizen's own line records the
/// event, not another's line on the same target.
pub fn has_line_of(text: &str, author: Option<&str>, verb: &str, target: &str) -> bool {
    last_note_of(text, author, verb, target).is_some()
}

/// The note of the last line by `author` (`None`: any) with this verb linking this target in a
/// chronicle text: what a resumed action compares with what it would record (a changed vote
/// is a new line).
pub fn last_note_of(text: &str, author: Option<&str>, verb: &str, target: &str) -> Option<String> {
    let want = link_target(target)?;
    scan(text).lines.iter().rev().find_map(|l| {
        parse_entry(&l.text)
            .ok()
            .filter(|e| {
                e.verb == verb
                    && author.is_none_or(|a| e.author == a)
                    && e.link.and_then(link_target).as_ref() == Some(&want)
            })
            .map(|e| e.note.to_string())
    })
}

impl std::fmt::Display for Quarter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}-Q{}", self.year, self.q)
    }
}

/// A due rollover: write `archive_text` to `archive_name` (next to `chronicle.md`), then
/// replace `chronicle.md` with `new_text`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rollover {
    pub archive_name: String,
    /// The old chronicle, byte for byte (a move, so C009 sees every line again).
    pub archive_text: String,
    pub new_text: String,
    pub period: Quarter,
}

/// Decides whether a quarterly rollover is due and builds it. The chronicle's period is its
/// frontmatter `current_period`, else the quarter of its oldest line; a rollover is due when
/// now is in a later quarter. The archive is named after `current_period` when the file has
/// one, else after the quarter that just ended. A `rollover_policy` other than `quarterly`
/// (e.g. `never`) turns rollover off for that polis.
pub fn rollover(text: &str, now: &PolisTime) -> Option<Rollover> {
    let record = frontmatter::parse(text).ok();
    let fields = record.as_ref().map(|r| &r.fields);
    if let Some(policy) = fields.map(|f| f.get("rollover_policy")) {
        if !policy.is_null() && policy.as_str().map(str::trim) != Some("quarterly") {
            return None;
        }
    }
    let declared = fields
        .and_then(|f| f.get("current_period").as_str())
        .and_then(Quarter::parse);
    let now_q = Quarter::of(now.now.date());
    let scanned = scan(text);
    let oldest = scanned
        .lines
        .iter()
        .filter_map(|l| stamp_and_author(&l.text).map(|(s, _)| s))
        .min();
    let period = declared.or_else(|| oldest.map(|s| Quarter::of(s.date())))?;
    if period >= now_q {
        return None;
    }
    let archived = declared.unwrap_or(now_q.previous());
    let archive_name = archived.archive_name();
    // Stamped at the start of the new quarter, not at the moment polisd noticed it: every
    // machine that rolls the same chronicle over writes the same bytes (docs/sync.md).
    let start = PolisTime {
        zone: now.zone,
        now: now_q.first_day().and_hms_opt(0, 0, 0).unwrap_or(now.now),
    };
    let line = daemon_line(
        &start,
        "rolled over chronicle",
        Some(archive_name.trim_end_matches(".md")),
        &format!(
            "{} {} of {archived} moved to {archive_name}",
            scanned.lines.len(),
            if scanned.lines.len() == 1 {
                "line"
            } else {
                "lines"
            }
        ),
    );
    let period_value = now_q.to_string();
    let head = crate::protocol::frontmatter::splice_field(text, "current_period", &period_value, None)
        .and_then(|t| frontmatter_block(&t))
        .unwrap_or_else(|| {
            format!(
                "---\nfile_type: chronicle\nrollover_policy: quarterly\ncurrent_period: {period_value}\n---\n"
            )
        });
    let eol = if head.contains("\r\n") { "\r\n" } else { "\n" };
    let new_text = format!("{head}{eol}{}", line.replace('\n', eol));
    Some(Rollover {
        archive_name,
        archive_text: text.to_string(),
        new_text,
        period: archived,
    })
}

/// The raw frontmatter block of a text, through the closing fence line (BOM and line ends
/// kept), `None` without one.
pub fn frontmatter_block(text: &str) -> Option<String> {
    let bare = text.strip_prefix('\u{feff}').unwrap_or(text);
    let normal = bare.replace("\r\n", "\n");
    let split = frontmatter::split(&normal);
    let yaml = split.yaml?;
    // Lines through the closing fence: the opening fence and blank lines before the YAML, the
    // YAML, then the fence.
    let lines = split.yaml_line - 1 + yaml.split('\n').count() + 1;
    let mut end = text.len() - bare.len();
    for _ in 0..lines {
        end += text[end..].find('\n')? + 1;
    }
    Some(text[..end].to_string())
}
