//! The chronicle (SPEC §3): reading its lines, the line grammar and rules C001–C009, quarterly
//! rollover, merging a sync conflict copy, polisd's own lines, and the 14-day activity window.
//!
//! Pure: every function takes the file text (and "now") and returns lines, findings or new text.
//! Nothing here reads or writes a file, and nothing here ever produces text that drops or edits
//! an agent's line — rollover and merge only move and reorder lines.

pub mod activity;
pub mod claims;
pub mod duplicates;
pub mod resolution;
pub mod rollover;
pub mod summary;

pub use duplicates::duplicate_lines;

use crate::protocol::clock::PolisTime;
use crate::protocol::finding::{quoted, Code, Finding};
use crate::protocol::layout::{self, DAEMON_ID};
use chrono::{Duration, NaiveDateTime};
use regex::Regex;
use std::collections::{BTreeSet, HashMap};
use std::sync::LazyLock;

pub use crate::protocol::clock::{parse_stamp, STAMP_FORMAT};
/// How far in the future a stamp may be before C004 (and before it stops counting as activity).
pub const FUTURE_TOLERANCE_MINUTES: i64 = 10;
/// C005: how much older than the newest earlier line a stamp may be.
pub const BACKDATE_TOLERANCE_HOURS: i64 = 24;
/// The activity window of SPEC §8.
pub const ACTIVITY_WINDOW_DAYS: i64 = 14;
/// C008: the longest verb phrase.
pub const MAX_VERB_WORDS: usize = 6;

/// The reserved verb phrases of SPEC §3 (`blocked on` takes a free `<thing>` after it).
pub const RESERVED_VERBS: [&str; 20] = [
    "joined polis",
    "left polis",
    "opened contract",
    "claimed contract",
    "settled contract",
    "abandoned contract",
    "filed lesson",
    "requested review",
    "signed off",
    "rejected review",
    "proposed amendment",
    "ratified amendment",
    "rejected amendment",
    "expired amendment",
    "blocked on",
    "unblocked",
    "assumed index keeper",
    "released index keeper",
    "routed contract",
    "overrode routing",
];

// ---------------------------------------------------------------------------------------------
// Reading lines

/// One complete, non-blank chronicle line outside the frontmatter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    /// 1-based line number in the file (frontmatter lines count).
    pub number: usize,
    /// The line without its line end (`\n` or `\r\n`).
    pub text: String,
}

/// Where a scan stopped: just after the last complete line. Feed it back to [`scan_from`] to
/// read only what was appended since.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct Resume {
    /// Byte offset of the end of the last complete line (0 when there is none).
    pub offset: usize,
    /// Number of the last complete line (0 when there is none).
    pub line: usize,
}

/// The lines a scan found and where to resume.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Scan {
    pub lines: Vec<Line>,
    pub resume: Resume,
}

/// Reads every complete line of a chronicle text, skipping its frontmatter and blank lines.
pub fn scan(text: &str) -> Scan {
    scan_from(text, Resume::default()).expect("offset 0 is always a valid resume point")
}

/// Reads the complete lines after `from`. `None` when `from` cannot be a resume point of this
/// text (the file shrank or was rewritten); the caller then scans from the start.
///
/// A final line without its newline is not yet complete: it is left for the next scan.
pub fn scan_from(text: &str, from: Resume) -> Option<Scan> {
    if from.offset > text.len()
        || !text.is_char_boundary(from.offset)
        || (from.offset > 0 && text.as_bytes()[from.offset - 1] != b'\n')
    {
        return None;
    }
    Some(scan_lines(text, from, from.offset == 0))
}

/// Reads the complete lines of `tail`, the bytes of a file from a resume point on (for a caller
/// that reads only what was appended). Line numbers continue after `last_line`; the returned
/// offset is relative to `tail`. No frontmatter is looked for.
pub fn scan_tail(tail: &str, last_line: usize) -> Scan {
    scan_lines(
        tail,
        Resume {
            offset: 0,
            line: last_line,
        },
        false,
    )
}

fn scan_lines(text: &str, from: Resume, at_start: bool) -> Scan {
    let mut read = Lines::from(text, from, at_start);
    let lines = read
        .by_ref()
        .map(|(number, text)| Line {
            number,
            text: text.to_string(),
        })
        .collect();
    Scan {
        lines,
        resume: read.resume,
    }
}

/// The complete lines of a chronicle text as [`scan`] finds them, (number, text) borrowed from
/// the text: for a reader that looks at each line once and keeps little of it, so a
/// million-line chronicle costs no allocation per line.
pub fn lines(text: &str) -> Lines<'_> {
    Lines::from(text, Resume::default(), true)
}

/// The iterator of [`lines`].
pub struct Lines<'a> {
    text: &'a str,
    pos: usize,
    /// Lines before this one are frontmatter.
    body_line: usize,
    number: usize,
    resume: Resume,
}

impl<'a> Lines<'a> {
    fn from(text: &'a str, from: Resume, at_start: bool) -> Lines<'a> {
        let mut pos = from.offset;
        // Lines before `body_line` are frontmatter; only a scan from the start can see it.
        let mut body_line = 1;
        if at_start {
            if text.starts_with('\u{feff}') {
                pos = '\u{feff}'.len_utf8();
            }
            body_line = frontmatter_body_line(text);
        }
        Lines {
            text,
            pos,
            body_line,
            number: from.line,
            resume: from,
        }
    }
}

impl<'a> Iterator for Lines<'a> {
    type Item = (usize, &'a str);

    fn next(&mut self) -> Option<(usize, &'a str)> {
        let text = self.text;
        while let Some(rel) = memchr::memchr(b'\n', &text.as_bytes()[self.pos..]) {
            let end = self.pos + rel;
            let raw = text[self.pos..end]
                .strip_suffix('\r')
                .unwrap_or(&text[self.pos..end]);
            self.number += 1;
            self.pos = end + 1;
            self.resume = Resume {
                offset: self.pos,
                line: self.number,
            };
            if self.number < self.body_line || raw.trim().is_empty() {
                continue;
            }
            return Some((self.number, raw));
        }
        None
    }
}

/// 1-based line on which the body starts (1 without frontmatter). Only the BOM and CRLF are
/// normalised, so line numbers stay the file's.
///
/// Only the head of the file is looked at: the frontmatter rule (`frontmatter::split`) captures
/// the whole body, which for a chronicle of a million lines costs a regex pass over ~100 MB on
/// every scan. Where the body starts is decided by the head alone (the body group matches
/// anything), so the head pattern is matched on a growing prefix until the answer cannot change.
pub fn frontmatter_body_line(text: &str) -> usize {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if !text.starts_with("---") {
        return 1;
    }
    let mut len = 64 * 1024;
    loop {
        let whole = len >= text.len();
        let mut end = len.min(text.len());
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        let head = text[..end].replace("\r\n", "\n");
        if let Some(m) = FRONTMATTER_HEAD.find(&head) {
            // The closing fence's `\s*` is greedy: the match is final once non-blank text
            // follows it inside the prefix.
            if whole || !head[m.end()..].trim_start().is_empty() {
                return 1 + head[..m.end()].bytes().filter(|b| *b == b'\n').count();
            }
        } else if whole {
            return 1;
        }
        len *= 16;
    }
}

/// The head of `frontmatter::split`'s rule (`\A---\s*\n(.*?)\n---\s*\n(.*)\z`): the body
/// group matches anything, so the head's preferred match is the full rule's.
static FRONTMATTER_HEAD: std::sync::LazyLock<regex::Regex> =
    std::sync::LazyLock::new(|| regex::Regex::new(r"(?s)\A---\s*\n(.*?)\n---\s*\n").unwrap());

// ---------------------------------------------------------------------------------------------
// The line grammar

/// A line that follows the grammar of SPEC §3. Fields are trimmed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry<'a> {
    pub stamp: NaiveDateTime,
    pub stamp_text: &'a str,
    pub author: &'a str,
    pub verb: &'a str,
    /// What is inside `[[…]]`, `None` for `-`.
    pub link: Option<&'a str>,
    pub note: &'a str,
}

/// Why a line is not an [`Entry`]: C001 (grammar) or C003 (not a real date and time).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntryError {
    pub code: Code,
    pub reason: String,
}

/// Parses one chronicle line. The first four ` | ` separate the fields; the note is the rest of
/// the line and may contain `|`. Trailing whitespace is ignored.
pub fn parse_entry(line: &str) -> Result<Entry<'_>, EntryError> {
    let c001 = |reason: String| EntryError {
        code: Code::C001,
        reason,
    };
    let t = line.trim_end();
    let Some(rest) = t.strip_prefix("- ") else {
        return Err(c001("a line must start with `- ` (dash, space)".into()));
    };
    let parts: Vec<&str> = rest.splitn(5, " | ").collect();
    if parts.len() < 5 {
        return Err(c001(format!(
            "a line has five fields separated by ` | ` (space, bar, space); this one has {}",
            parts.len()
        )));
    }
    let stamp_text = parts[0].trim();
    let Some(fields) = crate::protocol::clock::stamp_fields(stamp_text) else {
        return Err(c001(format!(
            "the timestamp `{}` is not in the form `YYYY-MM-DD HH:MM`",
            quoted(stamp_text)
        )));
    };
    let Some(stamp) = crate::protocol::clock::stamp_of_fields(fields) else {
        return Err(EntryError {
            code: Code::C003,
            reason: format!(
                "the timestamp `{}` is not a real date and time",
                quoted(stamp_text)
            ),
        });
    };
    let author = parts[1].trim();
    if author.is_empty() || author.chars().any(char::is_whitespace) {
        return Err(c001(format!(
            "the author `{}` must be one agent id without spaces",
            quoted(author)
        )));
    }
    let verb = parts[2].trim();
    if verb.is_empty() {
        return Err(c001("the verb phrase is empty".into()));
    }
    let link_field = parts[3].trim();
    let link = if link_field == "-" {
        None
    } else {
        match link_field
            .strip_prefix("[[")
            .and_then(|l| l.strip_suffix("]]"))
        {
            Some(inner) if !inner.trim().is_empty() && !inner.contains("]]") => Some(inner.trim()),
            _ => {
                return Err(c001(format!(
                    "the link field `{}` must be one wikilink `[[path]]` or `-`",
                    quoted(link_field)
                )))
            }
        }
    };
    let note = parts[4].trim();
    if note.is_empty() {
        return Err(c001("the note is empty; write `-` for no note".into()));
    }
    Ok(Entry {
        stamp,
        stamp_text,
        author,
        verb,
        link,
        note,
    })
}

/// The stamp and author of a line, read leniently (for activity and routing the notice of a
/// finding): a line whose link or note is malformed still tells who was active when.
pub fn stamp_and_author(line: &str) -> Option<(NaiveDateTime, &str)> {
    // Asked of every line by several rules: one vectorised search per field, not a searcher
    // built for each.
    static FIELD_END: LazyLock<memchr::memmem::Finder<'static>> =
        LazyLock::new(|| memchr::memmem::Finder::new(" | "));
    let rest = line.trim_start().strip_prefix("- ")?;
    let stamp_end = FIELD_END.find(rest.as_bytes())?;
    let stamp = parse_stamp(rest[..stamp_end].trim())?;
    let after = &rest[stamp_end + 3..];
    // The author is followed by a third field.
    let author = after[..FIELD_END.find(after.as_bytes())?].trim();
    (!author.is_empty()).then_some((stamp, author))
}

// ---------------------------------------------------------------------------------------------
// Links

/// Folds into `last` the newest stamp of the lines among `lines` whose link names one of `ids`
/// (a contract, by the last part of the link's path): how long each has gone without a line.
pub fn newest_lines_about<'a>(
    lines: impl IntoIterator<Item = &'a str>,
    ids: &BTreeSet<&str>,
    last: &mut HashMap<String, NaiveDateTime>,
) {
    for line in lines {
        // Most lines link none of `ids`: a substring test spares parsing them (the window of a
        // busy chronicle is tens of thousands of lines). A link is always a `[[…]]`.
        if !line.contains("[[") || !ids.iter().any(|id| line.contains(id)) {
            continue;
        }
        let Ok(entry) = parse_entry(line) else {
            continue;
        };
        let Some(target) = entry.link.and_then(link_target) else {
            continue;
        };
        let Some(id) = target.rsplit('/').next().filter(|id| ids.contains(id)) else {
            continue;
        };
        let slot = last.entry(id.to_string()).or_insert(entry.stamp);
        *slot = (*slot).max(entry.stamp);
    }
}

/// A wikilink's target relative to `_polis/`, without `.md`, alias (`|…`) or heading (`#…`);
/// `None` when it would leave `_polis/` (absolute or `..`).
pub fn link_target(inner: &str) -> Option<String> {
    let t = inner.split(['|', '#']).next().unwrap_or("").trim();
    let t = t.strip_prefix("./").unwrap_or(t);
    let t = t.strip_prefix("_polis/").unwrap_or(t);
    let t = t.strip_suffix(".md").unwrap_or(t);
    if t.is_empty() || t.starts_with('/') || t.split('/').any(|seg| seg == "..") {
        return None;
    }
    Some(t.trim_end_matches('/').to_string())
}

/// The paths (relative to `_polis/`) under which a link target may exist. Contracts and
/// amendments move between their folders by design, so a link to any folder's copy counts: a
/// line written as `[[contracts/open/x]]` stays valid after `x` settles.
pub fn link_candidates(target: &str) -> Vec<String> {
    let mut stems = vec![target.to_string()];
    let moves: [&[&str]; 2] = [
        &[
            "contracts/open/",
            "contracts/settled/",
            "contracts/abandoned/",
        ],
        &["amendments/proposed/", "amendments/ratified/"],
    ];
    for group in moves {
        if let Some(rest) = group.iter().find_map(|p| target.strip_prefix(p)) {
            for p in group {
                let other = format!("{p}{rest}");
                if !stems.contains(&other) {
                    stems.push(other);
                }
            }
        }
    }
    let mut out = Vec::new();
    for s in stems {
        out.push(format!("{s}.md"));
        out.push(s);
    }
    out
}

/// The kind of file a reserved verb should link to (C007).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkKind {
    /// `citizens/<id>/…`
    Citizen,
    /// Any of `contracts/{open,settled,abandoned}/`.
    Contract,
    SettledContract,
    AbandonedContract,
    Lesson,
    /// `reviews/…` or the contract under review.
    ReviewOrContract,
    Amendment,
    /// `index.md`.
    Index,
}

impl LinkKind {
    pub fn matches(self, target: &str) -> bool {
        let contract = [
            "contracts/open/",
            "contracts/settled/",
            "contracts/abandoned/",
        ]
        .iter()
        .any(|p| target.starts_with(p));
        match self {
            LinkKind::Citizen => target.starts_with("citizens/"),
            LinkKind::Contract => contract,
            LinkKind::SettledContract => target.starts_with("contracts/settled/"),
            LinkKind::AbandonedContract => target.starts_with("contracts/abandoned/"),
            LinkKind::Lesson => target.starts_with("lessons/"),
            LinkKind::ReviewOrContract => target.starts_with("reviews/") || contract,
            LinkKind::Amendment => target.starts_with("amendments/"),
            LinkKind::Index => target == "index",
        }
    }

    /// What a correct link looks like, for messages.
    pub fn example(self) -> &'static str {
        match self {
            LinkKind::Citizen => "citizens/<your-id>/capability_card.yml",
            LinkKind::Contract => "contracts/open/<contract-id>",
            LinkKind::SettledContract => "contracts/settled/<contract-id>",
            LinkKind::AbandonedContract => "contracts/abandoned/<contract-id>",
            LinkKind::Lesson => "lessons/<tag>/<lesson-id>",
            LinkKind::ReviewOrContract => "reviews/<YYYY-MM-DD-HHMM>-<contract-id>",
            LinkKind::Amendment => "amendments/proposed/<amendment-id>",
            LinkKind::Index => "index",
        }
    }
}

/// C007's table: the link kind a reserved verb expects, and whether `-` (no link) is also
/// wrong. Joining, leaving and the index-keeper verbs may go without a link; the others name a
/// record, and a line without it tells readers nothing they can open.
pub fn expected_link(verb: &str) -> Option<(LinkKind, bool)> {
    Some(match verb {
        "joined polis" | "left polis" => (LinkKind::Citizen, false),
        "opened contract" | "claimed contract" | "routed contract" | "overrode routing" => {
            (LinkKind::Contract, true)
        }
        "settled contract" => (LinkKind::SettledContract, true),
        "abandoned contract" => (LinkKind::AbandonedContract, true),
        "filed lesson" => (LinkKind::Lesson, true),
        "requested review" | "signed off" | "rejected review" => (LinkKind::ReviewOrContract, true),
        "proposed amendment" | "ratified amendment" | "rejected amendment"
        | "expired amendment" => (LinkKind::Amendment, true),
        "assumed index keeper" | "released index keeper" => (LinkKind::Index, false),
        _ => return None,
    })
}

/// Whether a verb phrase is one of the reserved ones (`blocked on <thing>` included).
pub fn is_reserved_verb(verb: &str) -> bool {
    verb.starts_with("blocked on ") || RESERVED_VERBS.contains(&verb)
}

// ---------------------------------------------------------------------------------------------
// Validation (C001–C008)

/// What validating one line needs to know about the polis.
pub struct ChronicleContext<'a> {
    /// The file the line is in, relative to `_polis/` (`chronicle.md` or an archive's name).
    pub path: &'a str,
    /// Whether an id has `citizens/<id>/capability_card.yml`.
    pub is_registered: &'a dyn Fn(&str) -> bool,
    /// Whether a path relative to `_polis/` exists (file or folder).
    pub link_exists: &'a dyn Fn(&str) -> bool,
    /// The newest timestamp among earlier lines, for C005.
    pub newest_earlier: Option<NaiveDateTime>,
    pub now: PolisTime,
}

/// C001–C008 for one line, in code order. A line that fails C001 or C003 gets only that
/// finding: its other fields cannot be trusted.
pub fn validate(line: &Line, ctx: &ChronicleContext<'_>) -> Vec<Finding> {
    validate_line(line.number, &line.text, ctx).0
}

/// [`validate`] of line `number`, `text`, borrowed (a reader that feeds lines one at a time),
/// with the line's stamp when it parses (so a caller need not parse it again).
fn validate_line(
    number: usize,
    text: &str,
    ctx: &ChronicleContext<'_>,
) -> (Vec<Finding>, Option<NaiveDateTime>) {
    // A runaway line is quoted by its start, and so is the corrected line built from it;
    // quoted only for a finding, so a valid line costs nothing more.
    let shown = || quoted(text);
    let at = Some(number);
    let entry = match parse_entry(text) {
        Ok(e) => e,
        Err(e) => {
            let example = quoted(&example_from(text, &ctx.now));
            let found = Finding::error(
                e.code,
                ctx.path,
                at,
                format!(
                    "`{}`: {}. A chronicle line reads `{example}`",
                    shown(),
                    e.reason
                ),
            );
            return (vec![found], None);
        }
    };
    let mut out = Vec::new();
    let fixed =
        |stamp: Option<&str>, author: Option<&str>, verb: Option<&str>, link: Option<&str>| {
            quoted(&render_line(
                stamp.unwrap_or(entry.stamp_text),
                author.unwrap_or(entry.author),
                verb.unwrap_or(entry.verb),
                link.or(entry.link)
                    .map(|l| format!("[[{l}]]"))
                    .as_deref()
                    .unwrap_or("-"),
                entry.note,
            ))
        };

    if !(ctx.is_registered)(entry.author) && !layout::is_system_citizen(entry.author) {
        out.push(Finding::error(
            Code::C002,
            ctx.path,
            at,
            format!(
                "`{}`: the author `{}` is not a registered citizen (no `citizens/{}/capability_card.yml`) nor a system citizen ({}). Register with a capability card first, or write your own agent id: `{}`",
                shown(),
                quoted(entry.author),
                quoted(entry.author),
                layout::SYSTEM_CITIZENS.join(", "),
                fixed(None, Some("<your-agent-id>"), None, None),
            ),
        ));
    }

    let now = ctx.now.now;
    if entry.stamp > now + Duration::minutes(FUTURE_TOLERANCE_MINUTES) {
        let ahead = describe_span(entry.stamp - now);
        out.push(Finding::error(
            Code::C004,
            ctx.path,
            at,
            format!(
                "`{}`: the timestamp is {ahead} in the future (now is {} in the polis timezone, UTC{}). Stamp lines with the current time in the polis timezone: `{}`",
                shown(),
                ctx.now.minute_stamp(),
                ctx.now.zone.0,
                fixed(Some(&ctx.now.minute_stamp()), None, None, None),
            ),
        ));
    }

    if let Some(newest) = ctx.newest_earlier {
        if entry.stamp < newest - Duration::hours(BACKDATE_TOLERANCE_HOURS) {
            out.push(Finding::warning(
                Code::C005,
                ctx.path,
                at,
                format!(
                    "`{}`: the timestamp is more than {BACKDATE_TOLERANCE_HOURS} hours older than the line before it ({}). Append events when they happen, stamped with the current time: `{}`",
                    shown(),
                    newest.format(STAMP_FORMAT),
                    fixed(Some(&ctx.now.minute_stamp()), None, None, None),
                ),
            ));
        }
    }

    if let Some(inner) = entry.link {
        let exists = link_target(inner)
            .map(|t| link_candidates(&t).iter().any(|c| (ctx.link_exists)(c)))
            .unwrap_or(false);
        if !exists {
            out.push(Finding::warning(
                Code::C006,
                ctx.path,
                at,
                format!(
                    "`{}`: the link `[[{}]]` points to nothing in `_polis/`. Links are relative to `_polis/` with `.md` optional; link a file that exists, or write `-`: `{}`",
                    shown(),
                    quoted(inner),
                    fixed(None, None, None, Some(expected_link(&entry.verb.to_lowercase()).map_or("<path-that-exists>", |(k, _)| k.example()))),
                ),
            ));
        }
    }

    // The table is looked up case-blind: `Settled Contract` is still a settlement (C008 tells
    // about the case).
    if let Some((kind, required)) = expected_link(&entry.verb.to_lowercase()) {
        let wrong = match entry.link {
            Some(inner) => !link_target(inner).is_some_and(|t| kind.matches(&t)),
            None => required,
        };
        if wrong {
            let what = match entry.link {
                Some(inner) => format!("links to `[[{}]]`", quoted(inner)),
                None => "has no link".to_string(),
            };
            out.push(Finding::warning(
                Code::C007,
                ctx.path,
                at,
                format!(
                    "`{}`: `{}` {what}, but it should link to `{}`: `{}`",
                    shown(),
                    quoted(entry.verb),
                    kind.example(),
                    fixed(None, None, None, Some(kind.example())),
                ),
            ));
        }
    }

    // `blocked on <thing>` names something free-form; only the reserved part is checked.
    let checked = if entry.verb.starts_with("blocked on ") {
        "blocked on"
    } else {
        entry.verb
    };
    let words = checked.split_whitespace().count();
    if checked != checked.to_lowercase() || words > MAX_VERB_WORDS {
        let suggestion: String = checked
            .to_lowercase()
            .split_whitespace()
            .take(MAX_VERB_WORDS)
            .collect::<Vec<_>>()
            .join(" ");
        out.push(Finding::warning(
            Code::C008,
            ctx.path,
            at,
            format!(
                "`{}`: the verb phrase `{}` should be lowercase and at most {MAX_VERB_WORDS} words (past tense, e.g. `settled contract`); put details in the note: `{}`",
                shown(),
                quoted(entry.verb),
                fixed(None, None, Some(&suggestion), None),
            ),
        ));
    }
    (out, Some(entry.stamp))
}

/// Validates lines in order, carrying "the newest earlier line" from `ctx.newest_earlier`.
/// Returns the findings and the newest stamp seen, for the next call. A line dated in the
/// future (C004) does not become "newest": otherwise every honest line after it would be C005.
pub fn validate_all(
    lines: &[Line],
    ctx: &ChronicleContext<'_>,
) -> (Vec<Finding>, Option<NaiveDateTime>) {
    let mut validation = Validation::new(ctx);
    let mut out = Vec::new();
    for line in lines {
        out.extend(validation.line(ctx.path, line.number, &line.text));
    }
    (out, validation.newest())
}

/// C001–C008 over lines fed one at a time in the order they were written, across files:
/// "the newest earlier line" (C005) carries over from each line to the next.
pub struct Validation<'a> {
    is_registered: &'a dyn Fn(&str) -> bool,
    link_exists: &'a dyn Fn(&str) -> bool,
    now: PolisTime,
    newest: Option<NaiveDateTime>,
}

impl<'a> Validation<'a> {
    /// Starts from `ctx.newest_earlier` (its `path` is given with each line).
    pub fn new(ctx: &ChronicleContext<'a>) -> Validation<'a> {
        Validation {
            is_registered: ctx.is_registered,
            link_exists: ctx.link_exists,
            now: ctx.now,
            newest: ctx.newest_earlier,
        }
    }

    /// The findings about line `number` of `path`; a line dated in the future (C004) does not
    /// become "newest", or every honest line after it would be C005.
    pub fn line(&mut self, path: &str, number: usize, text: &str) -> Vec<Finding> {
        let ctx = ChronicleContext {
            path,
            is_registered: self.is_registered,
            link_exists: self.link_exists,
            newest_earlier: self.newest,
            now: self.now,
        };
        let (found, stamp) = validate_line(number, text, &ctx);
        if let Some(stamp) = stamp {
            let limit = self.now.now + Duration::minutes(FUTURE_TOLERANCE_MINUTES);
            if stamp <= limit && self.newest.is_none_or(|n| stamp > n) {
                self.newest = Some(stamp);
            }
        }
        found
    }

    /// The newest stamp fed so far (not in the future), for a later call.
    pub fn newest(&self) -> Option<NaiveDateTime> {
        self.newest
    }
}

/// A span for a message: minutes, hours or days, whichever reads best.
fn describe_span(span: Duration) -> String {
    let minutes = span.num_minutes();
    if minutes < 120 {
        format!("{minutes} minutes")
    } else if minutes < 48 * 60 {
        format!("{} hours", minutes / 60)
    } else {
        format!("{} days", minutes / (24 * 60))
    }
}

/// A corrected example for a malformed line, keeping whatever fields can be recognised.
fn example_from(line: &str, now: &PolisTime) -> String {
    let rest = line.trim();
    let rest = rest
        .strip_prefix("- ")
        .or_else(|| rest.strip_prefix('-'))
        .or_else(|| rest.strip_prefix("* "))
        .unwrap_or(rest);
    let parts: Vec<&str> = rest.split('|').map(str::trim).collect();
    let stamp = parts
        .first()
        .and_then(|s| {
            let s = s.get(..16).unwrap_or(s);
            parse_stamp(s)
        })
        .map(|s| s.format(STAMP_FORMAT).to_string())
        .unwrap_or_else(|| now.minute_stamp());
    let author = parts
        .get(1)
        .filter(|a| layout::is_agent_id(a))
        .copied()
        .unwrap_or("<your-agent-id>");
    let verb = parts
        .get(2)
        .filter(|v| !v.is_empty())
        .copied()
        .unwrap_or("settled contract");
    let link = parts
        .get(3)
        .filter(|l| **l == "-" || (l.starts_with("[[") && l.ends_with("]]") && l.len() > 4))
        .copied()
        .unwrap_or("[[contracts/settled/<contract-id>]]");
    let note = if parts.len() > 4 {
        let n = parts[4..].join(" | ");
        if n.is_empty() {
            "-".to_string()
        } else {
            n
        }
    } else {
        "<one-line note or ->".to_string()
    };
    render_line(&stamp, author, verb, link, &note)
}

fn render_line(stamp: &str, author: &str, verb: &str, link: &str, note: &str) -> String {
    format!("- {stamp} | {author} | {verb} | {link} | {note}")
}

// ---------------------------------------------------------------------------------------------
// C009: lines that disappeared

/// A stable key for a line polisd has seen: SHA-256 (hex) of the line without its line end and
/// trailing whitespace.
pub fn line_key(text: &str) -> String {
    crate::protocol::digest::sha256_hex(text.trim_end().as_bytes())
}

/// Whether `text` holds `line` (without its newline) as a whole line. Searched from the end,
/// where a line just appended is.
pub fn holds_line(text: &[u8], line: &[u8]) -> bool {
    if line.is_empty() {
        return false;
    }
    let mut end = text.len();
    while let Some(at) = memchr::memmem::rfind(&text[..end], line) {
        let after = at + line.len();
        let starts = at == 0 || text[at - 1] == b'\n';
        let ends = after == text.len() || text[after] == b'\n';
        if starts && ends {
            return true;
        }
        // A longer line holding this one: look before it.
        end = after - 1;
    }
    false
}

fn present_counts(files: &[&str]) -> HashMap<String, usize> {
    let mut counts = HashMap::new();
    for text in files {
        for line in scan(text).lines {
            *counts.entry(line_key(&line.text)).or_insert(0) += 1;
        }
    }
    counts
}

/// C009: the lines of `seen` (texts polisd saw before, in order) that are no longer in any of
/// `files` (the current chronicle and every archive). Lines are counted as a multiset, so
/// reordering and moves into an archive are fine while deleting one of two equal lines is not.
///
/// One of polisd's own lines is not lost while a line with its id is present: a merge keeps one
/// of the copies two machines wrote for the same cause, with the other's stamp.
pub fn lost_lines(seen: &[String], files: &[&str]) -> Vec<String> {
    let mut counts = present_counts(files);
    let lost: Vec<String> = seen
        .iter()
        .filter(|text| match counts.get_mut(&line_key(text)) {
            Some(n) if *n > 0 => {
                *n -= 1;
                false
            }
            _ => true,
        })
        .cloned()
        .collect();
    if lost.iter().all(|l| marker_id(l).is_none()) {
        return lost;
    }
    let present: std::collections::HashSet<String> = files
        .iter()
        .flat_map(|t| scan(t).lines)
        .filter_map(|l| marker_id(&l.text))
        .collect();
    lost.into_iter()
        .filter(|l| marker_id(l).is_none_or(|id| !present.contains(&id)))
        .collect()
}

/// The lines of `new` that `old` does not hold (counted as a multiset): what an edit of the
/// chronicle put in, in `new`'s order.
pub fn lines_put_in(old: &str, new: &str) -> Vec<String> {
    let mut counts = present_counts(&[old]);
    scan(new)
        .lines
        .into_iter()
        .filter(|l| match counts.get_mut(&line_key(&l.text)) {
            Some(n) if *n > 0 => {
                *n -= 1;
                false
            }
            _ => true,
        })
        .map(|l| l.text)
        .collect()
}

/// [`lost_lines`] for a caller that keeps only [`line_key`]s: returns the lost keys.
pub fn lost_keys(seen: &[String], files: &[&str]) -> Vec<String> {
    let mut counts = present_counts(files);
    seen.iter()
        .filter(|key| match counts.get_mut(key.as_str()) {
            Some(n) if *n > 0 => {
                *n -= 1;
                false
            }
            _ => true,
        })
        .cloned()
        .collect()
}

/// The C009 finding for one lost line.
pub fn lost_line_finding(path: &str, text: &str) -> Finding {
    Finding::error(
        Code::C009,
        path,
        None,
        format!(
            "the line `{}` was in the chronicle and is gone (edited or deleted). The chronicle is append-only: put the line back as it was, and append a new line to correct it, e.g. `- <now> | <your-agent-id> | corrected chronicle | - | <what changed>`. polisd keeps a copy of the lost line in its state directory",
            quoted(text)
        ),
    )
}

// ---------------------------------------------------------------------------------------------
// polisd's own lines

/// One line by polisd, newline included:
/// `- YYYY-MM-DD HH:MM | polis-daemon | <verb> | [[link]] | <note>`. The note is flattened to
/// one line; an empty note becomes `-`.
pub fn daemon_line(now: &PolisTime, verb: &str, link: Option<&str>, note: &str) -> String {
    system_line(now, DAEMON_ID, verb, link, note)
}

/// [`daemon_line`] written for one of polisd's system citizens (`polis-daemon`,
/// `polis-reflector`): the same id of its cause, whoever's name it carries.
pub fn system_line(
    now: &PolisTime,
    author: &str,
    verb: &str,
    link: Option<&str>,
    note: &str,
) -> String {
    system_line_caused(now, author, verb, link, note, &cause_id(verb, link))
}

/// [`system_line`] with the id of its cause given: for an action with several causes behind
/// one verb and link (a person's answers to the items of one contract).
pub fn system_line_caused(
    now: &PolisTime,
    author: &str,
    verb: &str,
    link: Option<&str>,
    note: &str,
    id: &str,
) -> String {
    let note = note.split_whitespace().collect::<Vec<_>>().join(" ");
    let note = if note.is_empty() {
        "-".to_string()
    } else {
        note
    };
    let link = link.map_or("-".to_string(), |l| format!("[[{l}]]"));
    format!(
        "{} <!-- polisd:{LINE_KIND}:{id} -->\n",
        render_line(&now.minute_stamp(), author, verb, &link, &note)
    )
}

/// The kind written in the id marker of polisd's own chronicle lines.
pub const LINE_KIND: &str = "chronicle";

static LINE_MARKER: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"<!-- polisd:([a-z-]+):([0-9a-f]{16}) -->\s*$").unwrap());

/// The id of what caused one of polisd's lines: the first 16 hex digits of SHA-256 over the
/// verb and the link target, as netstrings. An action has one cause however many machines take
/// it (a ratification, a quarter's rollover), so its lines share one id even when their stamps
/// differ, and a merge recognises the second as a duplicate (docs/sync.md).
pub fn cause_id(verb: &str, link: Option<&str>) -> String {
    crate::protocol::digest::netstring_id(&[LINE_KIND, verb, link.unwrap_or("-")])
}

/// The stable id of a chronicle line: the marker of polisd's own lines (`chronicle:<16 hex>`),
/// else `line:` and the SHA-256 of the text without trailing whitespace (two equal lines are
/// one event written twice).
pub fn line_id(text: &str) -> String {
    match marker_id(text) {
        Some(id) => id,
        None => format!("line:{}", line_key(text)),
    }
}

/// The `kind:id` of a line's trailing polisd marker, if it has one.
pub fn marker_id(text: &str) -> Option<String> {
    if !text.contains("<!-- polisd:") {
        return None;
    }
    LINE_MARKER
        .captures(text)
        .map(|c| format!("{}:{}", &c[1], &c[2]))
}

/// A note as a person reads it: without the trailing id marker of polisd's own lines, which is
/// there for merges and replays, not for people.
pub fn shown_note(note: &str) -> &str {
    if !note.contains("<!-- polisd:") {
        return note;
    }
    match LINE_MARKER.find(note) {
        Some(m) => note[..m.start()].trim_end(),
        None => note,
    }
}

/// A citizen's line as `polisd log` and the commands write it, without its newline: fields
/// flattened to one line each, an empty note as `-`, the link as `[[link]]` or `-`.
pub fn citizen_line(
    stamp: &str,
    author: &str,
    verb: &str,
    link: Option<&str>,
    note: &str,
) -> String {
    let flat = |t: &str| t.split_whitespace().collect::<Vec<_>>().join(" ");
    let note = flat(note);
    let note = if note.is_empty() {
        "-".to_string()
    } else {
        note
    };
    let link = match link.map(flat).filter(|l| !l.is_empty()) {
        Some(l) => format!("[[{}]]", l.trim_start_matches("[[").trim_end_matches("]]")),
        None => "-".to_string(),
    };
    render_line(stamp, &flat(author), &flat(verb), &link, &note)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_note_is_shown_without_polisd_s_line_id() {
        assert_eq!(
            shown_note("Floor three <!-- polisd:chronicle:0123456789abcdef -->"),
            "Floor three"
        );
        assert_eq!(
            shown_note("- <!-- polisd:chronicle:0123456789abcdef -->"),
            "-"
        );
        // Only a whole trailing marker goes: anything else is the author's text.
        assert_eq!(
            shown_note("see <!-- polisd:x --> here"),
            "see <!-- polisd:x --> here"
        );
        assert_eq!(shown_note("plain"), "plain");
    }

    #[test]
    fn activity_keeps_membership_as_the_full_scan_finds_it() {
        use crate::protocol::clock::{PolisTime, PolisZone};
        let now = PolisTime {
            zone: PolisZone::default(),
            now: chrono::NaiveDate::from_ymd_opt(2026, 3, 9)
                .unwrap()
                .and_hms_opt(12, 0, 0)
                .unwrap(),
        };
        let lines = [
            "- 2026-03-01 10:00 | alice-agent | joined polis | [[citizens/alice-agent]] | hi\n",
            "- 2026-03-02 10:00 | bob-agent1 | joined polis | - | hi\n",
            "- 2026-03-03 10:00 | alice-agent | left polis | [[citizens/alice-agent]] | bye\n",
            "- 2026-03-04 10:00 | alice-agent | founded polis | - | not membership\n",
            "- 2026-03-05 10:00 | keeper-agent | left polis | [[citizens/bob-agent1]] | removed\n",
            "- 2026-03-06 10:00 | bob-agent1 | joined polis | - | back\n",
        ];
        let mut text = String::new();
        let mut activity = super::activity::Activity::default();
        for l in lines {
            let from = text.len();
            text.push_str(l);
            activity.add(&super::scan_tail(&text[from..], 0).lines, &now);
            let left: std::collections::BTreeSet<String> = activity
                .membership()
                .iter()
                .filter(|(_, left)| **left)
                .map(|(who, _)| who.clone())
                .collect();
            assert_eq!(
                left,
                crate::protocol::contracts::handoff::departed(&[&text]),
                "{text}"
            );
        }
        assert!(activity.membership()["alice-agent"]);
        assert!(!activity.membership()["bob-agent1"]);
    }

    #[test]
    fn activity_follows_the_full_scans_as_time_moves_on() {
        use crate::protocol::clock::{PolisTime, PolisZone};
        let at = |d: u32, h: u32| {
            chrono::NaiveDate::from_ymd_opt(2026, 3, d)
                .unwrap()
                .and_hms_opt(h, 0, 0)
                .unwrap()
        };
        let t = |d, h| PolisTime {
            zone: PolisZone::default(),
            now: at(d, h),
        };
        let line = |d: u32, h: u32, who: &str| {
            format!(
                "- {} | {who} | worked | - | -\n",
                at(d, h).format("%Y-%m-%d %H:%M")
            )
        };
        let mut text = String::from("---\nfile_type: chronicle\n---\n");
        let mut activity = super::activity::Activity::default();
        // (line day, hour, author, the day the pass runs)
        let steps = [
            (1, 9, "alice-agent", 1),
            (2, 9, "bob-agent1", 2),
            (20, 9, "carol-agent", 3), // in the future until day 20
            (1, 10, "dave-agent1", 5), // older than the newest (C005 material)
            (3, 9, "alice-agent", 10),
            (17, 9, "bob-agent1", 17),
            // Added once day 20 has come: the stamp that was in the future counts now.
            (18, 9, "erin-agent1", 21),
        ];
        for (d, h, who, today) in steps {
            let from = text.len();
            text.push_str(&line(d, h, who));
            let now = t(today, 12);
            let lines = super::scan_tail(&text[from..], 0).lines;
            activity.add(&lines, &now);
            for later in [today, today + 1, today + 9, 19, 20, 28] {
                if later < today {
                    continue;
                }
                let now = t(later, 12);
                assert_eq!(
                    activity.active_authors(&now).unwrap(),
                    super::activity::active_authors(&[&text], &now),
                    "day {today}, asked on day {later}"
                );
                assert_eq!(
                    activity.newest_stamp(&now).unwrap(),
                    super::activity::newest_stamp(&text, &now)
                );
            }
        }
        assert_eq!(
            activity.active_authors(&t(1, 0)),
            None,
            "the clock went back"
        );
    }

    #[test]
    fn body_line_from_the_head_equals_the_full_split() {
        let long_body: String = (0..20_000)
            .map(|i| format!("- 2026-01-01 00:00 | alice-agent | worked | - | {i}\n"))
            .collect();
        let blank_run = format!("---\na: 1\n---\n{}x\n", " \n".repeat(40_000));
        let cases = [
            "no frontmatter\n".to_string(),
            "---\nfile_type: chronicle\n---\n- line\n".to_string(),
            "---\r\nfile_type: chronicle\r\n---\r\n\r\n- line\r\n".to_string(),
            "---\n\n\n---\n\n\nbody\n".to_string(),
            "---\nnever closed\n".to_string(),
            "----\nnot a fence\n---\nx\n".to_string(),
            format!("---\nfile_type: chronicle\n---\n{long_body}"),
            format!("---\n{long_body}---\nbody\n"),
            format!("---\nunclosed\n{long_body}"),
            blank_run,
        ];
        for text in &cases {
            let normal = text.replace("\r\n", "\n");
            let split = crate::protocol::frontmatter::split(&normal);
            let want = if split.yaml.is_some() {
                split.body_line
            } else {
                1
            };
            assert_eq!(
                super::frontmatter_body_line(text),
                want,
                "{:?}",
                &text[..40.min(text.len())]
            );
        }
    }

    use super::activity::*;
    use super::rollover::*;
    use super::*;

    use crate::protocol::clock::PolisZone;
    use proptest::prelude::*;

    #[test]
    fn a_line_is_held_only_whole() {
        let text = b"- a | x\n- a | xy\n- b | z";
        assert!(holds_line(text, b"- a | x"));
        assert!(
            holds_line(text, b"- b | z"),
            "the last line, without its newline"
        );
        assert!(
            !holds_line(text, b"- a | "),
            "a part of a line is not the line"
        );
        assert!(!holds_line(text, b"a | xy"), "nor is its end");
        assert!(!holds_line(b"- a | xy\n", b"- a | x"));
        assert!(!holds_line(text, b""));
    }

    fn at(stamp: &str) -> PolisTime {
        PolisTime::at_stamp(PolisZone::default(), stamp).unwrap()
    }

    const CITIZEN: &str = "claude-code-one";

    fn registered(id: &str) -> bool {
        id == CITIZEN
    }

    fn exists(path: &str) -> bool {
        [
            "contracts/settled/fix-login.md",
            "amendments/ratified/2026-03-01-floor.md",
            "lessons/py/2026-03-01-x.md",
            "citizens/claude-code-one/capability_card.yml",
            "index.md",
        ]
        .contains(&path)
    }

    fn check_at(text: &str, now: &str, newest: Option<&str>) -> Vec<Finding> {
        let ctx = ChronicleContext {
            path: "chronicle.md",
            is_registered: &registered,
            link_exists: &exists,
            newest_earlier: newest.map(|n| NaiveDateTime::parse_from_str(n, STAMP_FORMAT).unwrap()),
            now: at(now),
        };
        validate(
            &Line {
                number: 7,
                text: text.into(),
            },
            &ctx,
        )
    }

    fn check(text: &str) -> Vec<Finding> {
        check_at(text, "2026-03-02 15:00", Some("2026-03-02 13:00"))
    }

    fn codes(f: &[Finding]) -> Vec<Code> {
        f.iter().map(|f| f.code).collect()
    }

    const GOOD: &str = "- 2026-03-02 14:05 | claude-code-one | settled contract | [[contracts/settled/fix-login]] | quality 4";

    #[test]
    fn the_newest_line_about_each_contract_is_the_newest_that_links_it() {
        let lines = [
            "- 2026-03-02 14:05 | claude-code-one | claimed contract | [[contracts/open/fix-login]] | -",
            "- 2026-03-04 09:00 | claude-code-one | progress | [[contracts/open/fix-login|the login]] | half",
            "- 2026-03-03 10:00 | claude-code-one | progress | [[contracts/open/fix-login]] | older",
            // Named in the note only, or linking another contract: not about it.
            "- 2026-03-05 10:00 | codex-agent-two | note | - | fix-login looks hard",
            "- 2026-03-06 10:00 | codex-agent-two | claimed contract | [[contracts/open/fix-login-2]] | -",
            "- 2026-03-07 10:00 | codex-agent-two | claimed contract | [[contracts/open/other]] | -",
            "not a line about [[contracts/open/fix-login]]",
        ];
        let ids: BTreeSet<&str> = ["fix-login", "quiet-one"].into_iter().collect();
        let mut last = HashMap::new();
        newest_lines_about(lines, &ids, &mut last);
        let at = |s: &str| NaiveDateTime::parse_from_str(s, "%Y-%m-%d %H:%M").unwrap();
        assert_eq!(last.len(), 1, "{last:?}");
        assert_eq!(last["fix-login"], at("2026-03-04 09:00"));
        // Folded into what an earlier file found: the newer stamp stays.
        newest_lines_about([lines[0]], &ids, &mut last);
        assert_eq!(last["fix-login"], at("2026-03-04 09:00"));
    }

    #[test]
    fn a_good_line_has_no_findings() {
        assert_eq!(check(GOOD), vec![]);
    }

    #[test]
    fn reference_written_lines_are_valid() {
        // What the reference's init, vote and reflect write must pass every rule.
        let ok_all = |id: &str| id == CITIZEN;
        let any = |_: &str| true;
        let ctx = ChronicleContext {
            path: "chronicle.md",
            is_registered: &ok_all,
            link_exists: &any,
            newest_earlier: None,
            now: at("2026-03-02 15:00"),
        };
        let seed = "---\nfile_type: chronicle\nrollover_policy: quarterly\ncurrent_period: 2026-Q1\n---\n\n- 2026-03-02 10:00 | claude-code-one | founded polis | - | first commit of polis protocol\n- 2026-03-02 10:05 | claude-code-one | voted on amendment | [[amendments/proposed/2026-03-01-floor]] | request_changes: -\n- 2026-03-02 10:06 | polis-reflector | proposed amendment | [[amendments/proposed/2026-03-02-x]] | evidence-mined by polis reflect\n- 2026-03-02 10:07 | polis-tally | ratified amendment | [[amendments/ratified/2026-03-01-floor]] | Floor\n";
        let lines = scan(seed).lines;
        assert_eq!(lines.len(), 4);
        assert_eq!(lines[0].number, 7);
        assert_eq!(validate_all(&lines, &ctx).0, vec![]);
    }

    #[test]
    fn c001_pipe_in_note() {
        let line = "- 2026-03-02 14:05 | claude-code-one | settled contract | [[contracts/settled/fix-login]] | a | b || c";
        assert_eq!(check(line), vec![]);
        assert_eq!(parse_entry(line).unwrap().note, "a | b || c");
    }

    #[test]
    fn c001_bad_grammar() {
        for bad in [
            "2026-03-02 14:05 | claude-code-one | settled contract | - | x",
            "- 2026-03-02 14:05 | claude-code-one | settled contract | -",
            "- 2026-03-02T14:05 | claude-code-one | settled contract | - | x",
            "- 2026-03-02 14:05 | claude-code-one | settled contract | contracts/x | x",
            "- 2026-03-02 14:05 | claude code | settled contract | - | x",
            "- 2026-03-02 14:05 | claude-code-one |  | - | x",
            "# Chronicle",
        ] {
            let f = check(bad);
            assert_eq!(codes(&f), vec![Code::C001], "{bad}");
            assert!(f[0].message.contains(bad.trim()), "shows the line");
            assert!(
                f[0].message.contains("| claude-code-one |")
                    || f[0].message.contains("<your-agent-id>")
            );
            assert_eq!(f[0].line, Some(7));
        }
    }

    #[test]
    fn c001_message_gives_a_corrected_example() {
        let f =
            check("- 2026-03-02 14:05 | claude-code-one | settled contract | contracts/x | done");
        assert!(
            f[0].message.contains(
                "`- 2026-03-02 14:05 | claude-code-one | settled contract | [[contracts/settled/<contract-id>]] | done`"
            ),
            "{}",
            f[0].message
        );
    }

    #[test]
    fn c001_runaway_line_is_quoted_by_its_start_in_the_line_and_the_example() {
        let note = "word ".repeat(20_000);
        let line = format!("-2026-03-02 14:05 | claude-code-one | worked | - | {note}");
        let f = check(&line);
        assert_eq!(codes(&f), vec![Code::C001]);
        let m = &f[0].message;
        assert!(m.len() < 1_000, "{}", &m[..300]);
        assert!(m.starts_with("`-2026-03-02 14:05 | claude-code-one | worked | - | word"));
        assert!(m.contains(&format!("… ({} bytes)`: a line must start", line.len())));
        assert!(m.contains(
            "A chronicle line reads `- 2026-03-02 14:05 | claude-code-one | worked | - | word"
        ));
        // A line of ordinary length is still quoted whole, byte for byte.
        let short = "-2026-03-02 14:05 | claude-code-one | worked | - | done";
        assert_eq!(
            check(short)[0].message,
            format!("`{short}`: a line must start with `- ` (dash, space). A chronicle line reads `- 2026-03-02 14:05 | claude-code-one | worked | - | done`")
        );
    }

    #[test]
    fn c002_to_c008_runaway_line_quotes_the_line_and_each_fix_short() {
        let line = format!(
            "- 2026-03-02 14:05 | ghost-agent-x | Settled Contract | [[contracts/open/nothing]] | {}",
            "word ".repeat(20_000)
        );
        let f = check(&line);
        assert!(f.len() >= 3, "{}", f.len());
        for finding in &f {
            assert!(finding.message.len() < 1_000, "{}", &finding.message[..300]);
            assert_eq!(finding.message.matches(" bytes)`").count(), 2);
        }
    }

    #[test]
    fn c002_unregistered_author() {
        let line = GOOD.replace("claude-code-one", "ghost-agent-x");
        assert_eq!(codes(&check(&line)), vec![Code::C002]);
        let sys = GOOD.replace("claude-code-one", "polis-tally");
        assert_eq!(check(&sys), vec![]);
    }

    #[test]
    fn c003_not_a_real_time() {
        for bad in ["2026-02-30 10:00", "2026-03-02 24:00", "2026-13-01 10:00"] {
            let line = GOOD.replace("2026-03-02 14:05", bad);
            assert_eq!(codes(&check(&line)), vec![Code::C003], "{bad}");
        }
    }

    #[test]
    fn c004_more_than_ten_minutes_ahead() {
        let line = GOOD.replace("14:05", "15:11");
        assert_eq!(codes(&check(&line)), vec![Code::C004]);
        let ok = GOOD.replace("14:05", "15:10");
        assert_eq!(check(&ok), vec![]);
    }

    #[test]
    fn c005_older_than_newest_by_a_day() {
        let f = check_at(GOOD, "2026-03-04 15:00", Some("2026-03-03 14:06"));
        assert_eq!(codes(&f), vec![Code::C005]);
        assert_eq!(f[0].severity, crate::protocol::finding::Severity::Warning);
        assert_eq!(
            check_at(GOOD, "2026-03-04 15:00", Some("2026-03-03 14:05")),
            vec![]
        );
    }

    #[test]
    fn c006_missing_link_target() {
        let line = GOOD.replace("fix-login", "nope");
        assert_eq!(codes(&check(&line)), vec![Code::C006]);
        // `.md` optional, `_polis/` prefix accepted, moved contracts still found.
        for link in [
            "[[contracts/settled/fix-login.md]]",
            "[[_polis/contracts/settled/fix-login]]",
        ] {
            let l = GOOD.replace("[[contracts/settled/fix-login]]", link);
            assert_eq!(check(&l), vec![], "{link}");
        }
        let opened = "- 2026-03-02 14:05 | claude-code-one | opened contract | [[contracts/open/fix-login]] | -";
        assert_eq!(check(opened), vec![]);
        let escape = GOOD.replace("contracts/settled/fix-login", "../../etc/passwd");
        assert!(codes(&check(&escape)).contains(&Code::C006));
    }

    #[test]
    fn c007_reserved_verb_wrong_link_kind() {
        let line = "- 2026-03-02 14:05 | claude-code-one | settled contract | [[lessons/py/2026-03-01-x]] | -";
        assert_eq!(codes(&check(line)), vec![Code::C007]);
        let amend = "- 2026-03-02 14:05 | claude-code-one | proposed amendment | [[contracts/settled/fix-login]] | -";
        assert_eq!(codes(&check(amend)), vec![Code::C007]);
        let no_link = "- 2026-03-02 14:05 | claude-code-one | settled contract | - | -";
        assert_eq!(codes(&check(no_link)), vec![Code::C007]);
        let joined = "- 2026-03-02 14:05 | claude-code-one | joined polis | - | hello";
        assert_eq!(check(joined), vec![]);
        let ratified = "- 2026-03-02 14:05 | claude-code-one | ratified amendment | [[amendments/proposed/2026-03-01-floor]] | -";
        assert_eq!(check(ratified), vec![]);
    }

    #[test]
    fn c008_verb_not_lowercase_or_too_long() {
        let upper = GOOD.replace("settled contract", "Settled Contract");
        assert_eq!(codes(&check(&upper)), vec![Code::C008]);
        let upper_wrong = upper.replace("contracts/settled/fix-login", "lessons/py/2026-03-01-x");
        assert_eq!(codes(&check(&upper_wrong)), vec![Code::C007, Code::C008]);
        let long = GOOD.replace(
            "settled contract",
            "did a lot of very important things today",
        );
        assert_eq!(codes(&check(&long)), vec![Code::C008]);
        let blocked =
            "- 2026-03-02 14:05 | claude-code-one | blocked on PR #12 from Upstream Team | - | -";
        assert_eq!(check(blocked), vec![]);
    }

    #[test]
    fn the_lines_an_edit_put_in_are_counted_as_a_multiset() {
        let a = "- 2026-03-02 14:05 | claude-code-one | founded polis | - | a";
        let b = "- 2026-03-02 14:06 | claude-code-one | noted | - | b";
        let head = "---\nfile_type: chronicle\n---\n\n";
        let old = format!("{head}{a}\n");
        assert_eq!(lines_put_in(&old, &format!("{head}{b}\n{a}\n")), vec![b]);
        assert_eq!(lines_put_in(&old, &format!("{head}{a}\n{a}\n")), vec![a]);
        assert!(lines_put_in(&old, &old).is_empty());
        assert!(
            lines_put_in(&old, head).is_empty(),
            "a rollover puts nothing in"
        );
    }

    #[test]
    fn c009_edit_detected_reorder_ignored() {
        let a = "- 2026-03-02 14:05 | claude-code-one | founded polis | - | a";
        let b = "- 2026-03-02 14:06 | claude-code-one | opened contract | [[contracts/open/x]] | b";
        let seen = vec![a.to_string(), b.to_string()];
        let reordered = format!("---\nfile_type: chronicle\n---\n\n{b}\n{a}\n");
        assert!(lost_lines(&seen, &[&reordered]).is_empty());
        // Rollover: a in the archive, b in the current file.
        assert!(lost_lines(&seen, &[&format!("{b}\n"), &format!("{a}\n")]).is_empty());
        let edited = format!("{a}\n{}\n", b.replace("| b", "| B"));
        assert_eq!(lost_lines(&seen, &[&edited]), vec![b.to_string()]);
        // Deleting one of two identical lines is a loss too.
        let twice = vec![a.to_string(), a.to_string()];
        assert_eq!(
            lost_lines(&twice, &[&format!("{a}\n")]),
            vec![a.to_string()]
        );
        let keys: Vec<String> = seen.iter().map(|s| line_key(s)).collect();
        assert_eq!(lost_keys(&keys, &[&edited]), vec![line_key(b)]);
        assert_eq!(lost_line_finding("chronicle.md", b).code, Code::C009);
    }

    #[test]
    fn scan_skips_frontmatter_and_blanks_and_waits_for_newline() {
        let text = "\u{feff}---\r\nfile_type: chronicle\r\n---\r\n\r\n- a\r\n\n- b\n- partial";
        let s = scan(text);
        assert_eq!(
            s.lines,
            vec![
                Line {
                    number: 5,
                    text: "- a".into()
                },
                Line {
                    number: 7,
                    text: "- b".into()
                }
            ]
        );
        assert_eq!(s.resume.line, 7);
        assert_eq!(&text[s.resume.offset..], "- partial");
        let more = format!("{text} line\n- c\n");
        let s2 = scan_from(&more, s.resume).unwrap();
        assert_eq!(
            s2.lines
                .iter()
                .map(|l| (l.number, l.text.as_str()))
                .collect::<Vec<_>>(),
            vec![(8, "- partial line"), (9, "- c")]
        );
        assert!(scan_from("short", s.resume).is_none());
        let tail = scan_tail(&more[s.resume.offset..], s.resume.line);
        assert_eq!(tail.lines, s2.lines);
        assert_eq!(tail.resume.offset + s.resume.offset, s2.resume.offset);
        // A tail that starts with `---` is not frontmatter.
        assert_eq!(scan_tail("---\nx: 1\n---\n", 9).lines.len(), 3);
    }

    #[test]
    fn validate_all_carries_newest_and_ignores_future_lines() {
        let lines: Vec<Line> = [
            "- 2026-03-02 14:00 | claude-code-one | founded polis | - | -",
            "- 2026-04-09 14:00 | claude-code-one | time travelled | - | -",
            "- 2026-03-02 14:30 | claude-code-one | noted | - | -",
            "- 2026-02-01 14:30 | claude-code-one | backdated | - | -",
        ]
        .iter()
        .enumerate()
        .map(|(i, t)| Line {
            number: i + 1,
            text: t.to_string(),
        })
        .collect();
        let ctx = ChronicleContext {
            path: "chronicle.md",
            is_registered: &registered,
            link_exists: &exists,
            newest_earlier: None,
            now: at("2026-03-02 15:00"),
        };
        let (f, newest) = validate_all(&lines, &ctx);
        assert_eq!(
            f.iter()
                .map(|f| (f.code, f.line.unwrap()))
                .collect::<Vec<_>>(),
            vec![(Code::C004, 2), (Code::C005, 4)]
        );
        assert_eq!(
            newest.unwrap().format(STAMP_FORMAT).to_string(),
            "2026-03-02 14:30"
        );
    }

    #[test]
    fn rollover_moves_the_quarter() {
        let text = "---\nfile_type: chronicle\nrollover_policy: quarterly\ncurrent_period: 2026-Q1\n---\n\n- 2026-03-30 10:00 | claude-code-one | founded polis | - | -\n";
        assert!(rollover(text, &at("2026-03-31 23:59")).is_none());
        let r = rollover(text, &at("2026-04-01 00:05")).unwrap();
        assert_eq!(r.archive_name, "chronicle-2026-Q1.md");
        assert_eq!(r.archive_text, text);
        assert_eq!(
            r.new_text,
            format!("---\nfile_type: chronicle\nrollover_policy: quarterly\ncurrent_period: 2026-Q2\n---\n\n- 2026-04-01 00:00 | polis-daemon | rolled over chronicle | [[chronicle-2026-Q1]] | 1 line of 2026-Q1 moved to chronicle-2026-Q1.md <!-- polisd:chronicle:{} -->\n", cause_id("rolled over chronicle", Some("chronicle-2026-Q1")))
        );
        assert_eq!(
            declared_period(&r.new_text),
            Some(Quarter { year: 2026, q: 2 })
        );
        // The new file is not due again, and its line is valid.
        assert!(rollover(&r.new_text, &at("2026-04-01 00:06")).is_none());
        assert!(parse_entry(scan(&r.new_text).lines[0].text.as_str()).is_ok());
    }

    #[test]
    fn rollover_without_frontmatter_uses_oldest_line() {
        let text = "- 2025-12-30 10:00 | claude-code-one | founded polis | - | -\n";
        let r = rollover(text, &at("2026-01-01 00:00")).unwrap();
        assert_eq!(r.archive_name, "chronicle-2025-Q4.md");
        assert!(r.new_text.starts_with("---\nfile_type: chronicle\nrollover_policy: quarterly\ncurrent_period: 2026-Q1\n---\n\n- 2026-01-01 00:00 | polis-daemon |"));
        let never = "---\nrollover_policy: never\ncurrent_period: 2025-Q1\n---\n";
        assert!(rollover(never, &at("2026-01-01 00:00")).is_none());
    }

    #[test]
    fn archives_and_existing_lines() {
        assert_eq!(
            newest_archive([
                "chronicle-2025-Q4.md",
                "chronicle.md",
                "chronicle-2026-Q1.md",
                "chronicle-2026-Q1.md~"
            ]),
            Some("chronicle-2026-Q1.md")
        );
        assert_eq!(newest_archive(["chronicle.md"]), None);
        let text = "- 2026-03-02 10:00 | polis-daemon | ratified amendment | [[amendments/ratified/2026-03-01-floor]] | x\n";
        assert!(has_line(
            text,
            "ratified amendment",
            "amendments/ratified/2026-03-01-floor.md"
        ));
        assert!(!has_line(
            text,
            "ratified amendment",
            "amendments/ratified/other"
        ));
        assert!(!has_line(
            text,
            "expired amendment",
            "amendments/ratified/2026-03-01-floor"
        ));
        let link = "amendments/ratified/2026-03-01-floor";
        assert!(rollover::has_line_of(
            text,
            Some("polis-daemon"),
            "ratified amendment",
            link
        ));
        assert!(!rollover::has_line_of(
            text,
            Some("claude-founder-one"),
            "ratified amendment",
            link
        ));
        let votes = "- 2026-03-02 10:00 | claude-founder-one | voted on amendment | [[amendments/proposed/a]] | agree: -\n- 2026-03-02 10:05 | claude-founder-one | voted on amendment | [[amendments/proposed/a]] | disagree: no\n";
        let last = |author| {
            rollover::last_note_of(
                votes,
                Some(author),
                "voted on amendment",
                "amendments/proposed/a",
            )
        };
        assert_eq!(last("claude-founder-one").as_deref(), Some("disagree: no"));
        assert_eq!(last("codex-second-one"), None);
    }

    #[test]
    fn daemon_line_format() {
        let l = daemon_line(
            &at("2026-03-02 14:05"),
            "ratified amendment",
            Some("amendments/ratified/2026-03-01-floor"),
            "Floor\nthree",
        );
        let id = cause_id(
            "ratified amendment",
            Some("amendments/ratified/2026-03-01-floor"),
        );
        assert_eq!(l, format!("- 2026-03-02 14:05 | polis-daemon | ratified amendment | [[amendments/ratified/2026-03-01-floor]] | Floor three <!-- polisd:chronicle:{id} -->\n"));
        assert_eq!(line_id(&l), format!("chronicle:{id}"));
        assert!(parse_entry(l.trim_end()).is_ok());
        assert_eq!(
            daemon_line(&at("2026-03-02 14:05"), "noted", None, " "),
            format!(
                "- 2026-03-02 14:05 | polis-daemon | noted | - | - <!-- polisd:chronicle:{} -->\n",
                cause_id("noted", None)
            )
        );
    }

    #[test]
    fn activity_window_is_fourteen_days_and_not_the_future() {
        let cur = "- 2026-03-02 15:10 | soon-agent-one | x | - | -\n- 2026-03-02 15:11 | future-agent-one | x | - | -\n";
        let archive = "- 2026-02-16 15:00 | edge-agent-one | x | - | -\n- 2026-02-16 14:59 | old-agent-one | x | - | -\nbroken line\n";
        let active = active_authors(&[cur, archive], &at("2026-03-02 15:00"));
        assert_eq!(
            active.into_iter().collect::<Vec<_>>(),
            vec!["edge-agent-one".to_string(), "soon-agent-one".to_string()]
        );
    }

    proptest! {
        #[test]
        fn chronicle_parser_never_panics(text in any::<String>(), cut in 0usize..64) {
            let s = scan(&text);
            for l in &s.lines {
                let _ = parse_entry(&l.text);
                let _ = stamp_and_author(&l.text);
                let _ = example_from(&l.text, &at("2026-03-02 15:00"));
            }
            let _ = scan_from(&text, Resume { offset: cut.min(text.len()), line: 3 });
            let _ = scan_tail(&text, 3);
            let _ = lost_lines(std::slice::from_ref(&text), &[&text]);
            let _ = active_authors(&[&text], &at("2026-03-02 15:00"));
            let _ = rollover(&text, &at("2026-03-02 15:00"));
        }

        #[test]
        fn line_like_text_never_panics(
            stamp in "[0-9 :-]{0,20}",
            fields in proptest::collection::vec("[ -~\u{e9}]{0,12}", 0..6),
        ) {
            let line = format!("- {stamp} | {}", fields.join(" | "));
            let ctx = ChronicleContext {
                path: "chronicle.md",
                is_registered: &registered,
                link_exists: &exists,
                newest_earlier: None,
                now: at("2026-03-02 15:00"),
            };
            let _ = validate(&Line { number: 1, text: line }, &ctx);
        }
    }
}
