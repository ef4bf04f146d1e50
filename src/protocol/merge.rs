//! Copies of one polis that diverged on two machines, clones or worktrees, brought back
//! together (SPEC §11, docs/sync.md): the id-aware union that git's merge driver and the
//! conflict-copy merge use for the chronicle and the inboxes, git's conflict markers, and
//! which file a merge driver treats how.
//!
//! Pure: texts in, merged text and a report out. The rules, the same for a three-way merge
//! (git: a base and two sides) and a two-way one (a sync tool's conflict copy: no base):
//! - a unit (a chronicle line, an inbox block) is known by its id: polisd's own carry an id
//!   derived from their cause in a trailing marker; any other unit's id is its text;
//! - a unit added on either side is kept, and once when both added it (two daemons that
//!   noticed the same event, two syncs of the same append);
//! - a unit removed on one side is removed when the protocol lets it go: an inbox block (its
//!   owner archives), a chronicle line moved out by a rollover on that side. A chronicle line
//!   otherwise removed or edited on one side is kept from the other (the chronicle is
//!   append-only) and reported, so an edit ends up as both versions, never as neither;
//! - a unit that is not on "our" side but in one of `elsewhere` (the archives, the inbox
//!   archive) is not brought back: a two-way union would otherwise resurrect what was moved.
//!
//! It never writes a file; callers hand the text to `fs::writer` or to git.

use crate::protocol::amendments::reflection::REFLECTOR;
use crate::protocol::chronicle::{self, rollover::Quarter};
use chrono::NaiveDateTime;
use std::collections::{HashMap, HashSet};

// ---------------------------------------------------------------------------------------------
// Git conflict markers

/// The 1-based line of the first git conflict block (`<<<<<<< ` … `>>>>>>> `) in a text, if
/// it holds one. A lone `=======` line is a setext heading, not a conflict, so only an opening
/// marker followed later by a closing one counts.
pub fn conflict_marker_line(text: &str) -> Option<usize> {
    // Every pass asks this of the whole chronicle (65 MB at 1M lines): memchr's vectorised
    // search takes a few milliseconds there, `str::contains` ten times that.
    memchr::memmem::find(text.as_bytes(), b"<<<<<<<")?;
    let mut open = None;
    for (i, line) in text.lines().enumerate() {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if open.is_none() && is_marker(line, '<') {
            open = Some(i + 1);
        } else if open.is_some() && is_marker(line, '>') {
            return open;
        }
    }
    None
}

/// A marker line: seven or more of `c` (git's `conflict-marker-size` makes them longer), then
/// the end of the line or a space.
fn is_marker(line: &str, c: char) -> bool {
    let rest = line.trim_start_matches(c);
    line.len() - rest.len() >= 7 && (rest.is_empty() || rest.starts_with(' '))
}

/// The message of the finding about a file with conflict markers.
pub fn conflict_marker_message(what: &str) -> String {
    format!(
        "the file holds git conflict markers (`<<<<<<<` … `>>>>>>>`), so polisd does not read it as \
         {what} until they are resolved: keep the right lines, delete the markers, and commit. \
         `polisd git-setup` makes git merge the chronicle and the inboxes without markers"
    )
}

/// Why a sync conflict copy of the chronicle or an inbox is left for a person instead of
/// merged, given the copy's and the original's text (`Err`: why it cannot be read, e.g. not
/// UTF-8; `Ok(None)`: missing):
/// a side that is not text, or that already holds git conflict markers (a person's unfinished
/// merge that the sync tool carried along), would spread them through the merged file, which
/// polisd then stops reading; git's merge driver refuses the same. `original` names the file.
pub fn copy_held_back(
    copy: Result<&str, &str>,
    current: Result<Option<&str>, &str>,
    original: &str,
) -> Option<String> {
    match (copy, current) {
        (Err(why), _) => Some(format!("the copy cannot be read: {why}")),
        (Ok(c), _) if conflict_marker_line(c).is_some() => Some(format!(
            "the copy holds git conflict markers (line {})",
            conflict_marker_line(c).unwrap_or(0)
        )),
        (_, Err(why)) => Some(format!("`{original}` cannot be read: {why}")),
        (_, Ok(None)) => Some(format!(
            "`{original}` is missing, so there is nothing to merge into"
        )),
        (_, Ok(Some(t))) if conflict_marker_line(t).is_some() => {
            Some(format!("`{original}` holds git conflict markers"))
        }
        _ => None,
    }
}

// ---------------------------------------------------------------------------------------------
// What a merge driver does with a path

/// How the merge driver treats a file, by its path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strategy {
    /// `chronicle.md` and its archives: line union sorted by timestamp.
    Chronicle,
    /// `citizens/<id>/inbox.md` and `inbox-archive.md`: block union.
    Inbox,
    /// `contracts/routing_stats.yml`: derived, so never merged; rebuilt from the contracts.
    Derived,
    /// `amendments/proposed/<id>.md`: when both sides are reflection's drafts of one proposal,
    /// the draft with the fuller evidence; anything else there is merged as text.
    Draft,
    /// Anything else: git's own text merge.
    Text,
}

/// The strategy for a path as git names it (relative to the repository, any prefix before
/// `_polis/` allowed).
pub fn strategy_for(path: &str) -> Strategy {
    let path = path.replace('\\', "/");
    let rel = match path.rfind("_polis/") {
        Some(i) => &path[i + "_polis/".len()..],
        None => path.as_str(),
    };
    let name = rel.rsplit('/').next().unwrap_or(rel);
    if rel == crate::protocol::layout::ROUTING_STATS {
        Strategy::Derived
    } else if !rel.contains('/')
        && (name == crate::protocol::layout::CHRONICLE
            || Quarter::from_archive_name(name).is_some())
    {
        Strategy::Chronicle
    } else if rel.starts_with("citizens/")
        && rel.matches('/').count() == 2
        && (name == "inbox.md" || name == "inbox-archive.md")
    {
        Strategy::Inbox
    } else if rel.starts_with("amendments/proposed/")
        && rel.matches('/').count() == 2
        && name.ends_with(".md")
    {
        Strategy::Draft
    } else {
        Strategy::Text
    }
}

/// The `.gitattributes` lines `polisd git-setup` writes into `_polis/.gitattributes`
/// (patterns relative to that folder).
pub const GITATTRIBUTES_LINES: [&str; 6] = [
    "chronicle.md merge=polisd",
    "chronicle-*.md merge=polisd",
    "citizens/*/inbox.md merge=polisd",
    "citizens/*/inbox-archive.md merge=polisd",
    "contracts/routing_stats.yml merge=polisd",
    "amendments/proposed/*.md merge=polisd",
];

/// A path each line of [`GITATTRIBUTES_LINES`] gives the driver to (its `*` as `x`), relative
/// to `_polis/`: what `git-setup` asks git about, to find a later line that takes it back.
pub fn driver_sample_paths() -> Vec<String> {
    GITATTRIBUTES_LINES
        .iter()
        .filter_map(|l| l.split_whitespace().next())
        .map(|pattern| pattern.replace('*', "x"))
        .collect()
}

/// The driver's name in git's configuration (`merge.<name>.driver`).
pub const DRIVER_NAME: &str = "polisd";

/// The `merge.polisd.driver` command line running `program`. git hands it to `sh`, so a path
/// with a space, a quote or a backslash (`/Users/Jo Smith/…`, `C:\…`) is single-quoted: split
/// by the shell, it failed every merge and left the chronicle in conflict.
pub fn driver_command(program: &str) -> String {
    let plain = !program.is_empty()
        && program
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-+:@,=".contains(&b));
    let program = if plain {
        program.to_string()
    } else {
        format!("'{}'", program.replace('\'', r"'\''"))
    };
    format!("{program} merge-driver %O %A %B %P")
}

/// The program a `merge.polisd.driver` command line runs: its first word as `sh` reads it,
/// single quotes (as [`driver_command`] writes them) and backslashes undone. `None` for an
/// empty command, or one whose quote never closes.
pub fn driver_program(command: &str) -> Option<String> {
    let mut out = String::new();
    let mut chars = command.trim_start().chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' => loop {
                match chars.next()? {
                    '\'' => break,
                    q => out.push(q),
                }
            },
            '\\' => out.push(chars.next()?),
            c if c.is_whitespace() => break,
            c => out.push(c),
        }
    }
    Some(out).filter(|p| !p.is_empty())
}

/// Whether a `.gitattributes` text assigns the polisd merge driver to some path.
pub fn names_driver(gitattributes: &str) -> bool {
    gitattributes.lines().any(|l| {
        let l = l.trim();
        !l.starts_with('#')
            && l.split_whitespace()
                .skip(1)
                .any(|a| a == format!("merge={DRIVER_NAME}"))
    })
}

/// `.gitattributes` with every line of [`GITATTRIBUTES_LINES`] present: the existing text
/// kept as it is, missing lines appended under a comment. `None` when nothing is missing.
pub fn with_driver_lines(existing: &str) -> Option<String> {
    let present: HashSet<&str> = existing.lines().map(str::trim).collect();
    let missing: Vec<&str> = GITATTRIBUTES_LINES
        .iter()
        .copied()
        .filter(|l| !present.contains(l))
        .collect();
    if missing.is_empty() {
        return None;
    }
    let mut out = existing.to_string();
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    if !out.is_empty() {
        out.push('\n');
    }
    out.push_str(
        "# polisd merges these as an id-aware union (see `polisd git-setup`); routing_stats.yml\n\
         # is rebuilt from the merged contracts instead of merged.\n",
    );
    for l in missing {
        out.push_str(l);
        out.push('\n');
    }
    Some(out)
}

// ---------------------------------------------------------------------------------------------
// The union

/// The result of a merge.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Merged {
    pub text: String,
    /// One sentence per thing a person may want to know (a line kept from one side, a
    /// duplicate dropped).
    pub report: Vec<String>,
}

/// One line of a chronicle, or one block of an inbox.
#[derive(Debug, Clone)]
struct Unit<'a> {
    id: String,
    text: &'a str,
    stamp: Option<NaiveDateTime>,
}

/// Which side of a merge.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    Ours,
    Theirs,
}

/// The id-aware union of the units of both sides; `deletes` says whether a side's removals
/// stand. Units come out in the order ours, then theirs' additions, sorted stably by stamp
/// (a unit without one keeps the stamp of the unit it followed).
fn union<'a>(
    base: Option<&[Unit<'a>]>,
    ours: &[Unit<'a>],
    theirs: &[Unit<'a>],
    deletes: impl Fn(Side) -> bool,
    elsewhere: &HashSet<String>,
    what: &str,
    report: &mut Vec<String>,
) -> Vec<Unit<'a>> {
    let count = |units: &[Unit<'a>]| {
        let mut m: HashMap<String, usize> = HashMap::new();
        for u in units {
            *m.entry(u.id.clone()).or_default() += 1;
        }
        m
    };
    let (o, a, b) = (count(base.unwrap_or(&[])), count(ours), count(theirs));
    let mut quota: HashMap<&str, usize> = HashMap::new();
    let ids = ours
        .iter()
        .chain(theirs.iter())
        .map(|u| u.id.as_str())
        .collect::<Vec<_>>();
    for id in ids {
        if quota.contains_key(id) {
            continue;
        }
        let get = |m: &HashMap<String, usize>| m.get(id).copied().unwrap_or(0);
        let (o, mut a, mut b) = (get(&o), get(&a), get(&b));
        let in_ours = a > 0;
        // A removal the protocol does not allow is undone for as many copies as the other
        // side kept (removed on both sides, it stays removed; a base holding the unit twice
        // and a side keeping one copy keeps that one).
        let (a_kept, b_kept) = (a.max(o.min(b)), b.max(o.min(a)));
        if a_kept > a && !deletes(Side::Ours) {
            a = a_kept;
            report.push(format!(
                "{what} `{}` was removed or edited on our side and is kept from theirs",
                first_line(ours, theirs, id)
            ));
        }
        if b_kept > b && !deletes(Side::Theirs) {
            b = b_kept;
            report.push(format!(
                "{what} `{}` was removed or edited on their side and is kept from ours",
                first_line(ours, theirs, id)
            ));
        }
        let mut keep = o.min(a).min(b) + a.saturating_sub(o).max(b.saturating_sub(o));
        if !in_ours && elsewhere.contains(id) {
            keep = 0;
        }
        quota.insert(id, keep);
    }
    let mut out: Vec<Unit<'a>> = Vec::new();
    let mut taken: HashMap<&str, usize> = HashMap::new();
    let mut from_ours: HashMap<&str, usize> = HashMap::new();
    // Compared without line ends: one block synced through a CRLF checkout and an LF one is
    // the same block, not one "written on both sides".
    let same = |t: &'a str| -> std::borrow::Cow<'a, str> {
        if t.contains('\r') {
            t.replace('\r', "").into()
        } else {
            t.into()
        }
    };
    let our_texts: HashSet<std::borrow::Cow<'a, str>> = ours.iter().map(|u| same(u.text)).collect();
    for (side, units) in [(Side::Ours, ours), (Side::Theirs, theirs)] {
        for u in units {
            let q = quota.get(u.id.as_str()).copied().unwrap_or(0);
            let t = taken.entry(u.id.as_str()).or_default();
            if *t < q {
                *t += 1;
                if side == Side::Ours {
                    *from_ours.entry(u.id.as_str()).or_default() += 1;
                }
                out.push(u.clone());
            } else if side == Side::Theirs
                && from_ours.get(u.id.as_str()).copied().unwrap_or(0) > 0
                && !our_texts.contains(&same(u.text))
            {
                report.push(format!(
                    "{what} `{}` was written on both sides for the same cause; ours is kept",
                    u.text.lines().next().unwrap_or("").trim()
                ));
            }
        }
    }
    // Each unit sorts by its own stamp, or by the stamp of the unit it followed.
    let mut last = None;
    let mut keyed: Vec<(Option<NaiveDateTime>, Unit<'a>)> = Vec::with_capacity(out.len());
    for u in out {
        if u.stamp.is_some() {
            last = u.stamp;
        }
        keyed.push((last, u));
    }
    keyed.sort_by_key(|(k, _)| *k);
    keyed.into_iter().map(|(_, u)| u).collect()
}

fn first_line(ours: &[Unit<'_>], theirs: &[Unit<'_>], id: &str) -> String {
    ours.iter()
        .chain(theirs)
        .find(|u| u.id == id)
        .map(|u| u.text.lines().next().unwrap_or("").trim().to_string())
        .unwrap_or_else(|| id.to_string())
}

// ---------------------------------------------------------------------------------------------
// The chronicle

fn chronicle_units(text: &str) -> Vec<Unit<'_>> {
    // `scan` owns its line texts; the units borrow from the file's text instead.
    let mut out = Vec::new();
    let body_from = chronicle::frontmatter_body_line(text);
    // A last line without its final newline is a line all the same: git hands the driver whole
    // versions, and a line dropped here would be lost from the merge.
    for (i, raw) in text.split_inclusive('\n').enumerate() {
        if i + 1 < body_from {
            continue;
        }
        let line = raw.trim_end_matches('\n').trim_end_matches('\r');
        let line = if i == 0 {
            line.strip_prefix('\u{feff}').unwrap_or(line)
        } else {
            line
        };
        if line.trim().is_empty() {
            continue;
        }
        out.push(Unit {
            id: chronicle::line_id(line),
            text: line,
            stamp: chronicle::stamp_and_author(line).map(|(s, _)| s),
        });
    }
    out
}

fn period(text: &str) -> Option<Quarter> {
    let fm = chronicle::rollover::frontmatter_block(text)?;
    fm.lines()
        .find_map(|l| l.trim().strip_prefix("current_period:"))
        .and_then(Quarter::parse)
}

/// Merges two versions of a chronicle (or of one archive), with their common ancestor when
/// git gives one; `elsewhere` are the texts of the archives beside it. Lines come out sorted
/// by timestamp (stable, ours first); the frontmatter is the one with the latest
/// `current_period` (ours on a tie, theirs when ours has none); line ends follow ours.
/// Merging the result again with either side changes nothing, and no line either side added
/// is lost.
pub fn merge_chronicle(base: Option<&str>, ours: &str, theirs: &str, elsewhere: &[&str]) -> Merged {
    let (mine, yours) = (chronicle_units(ours), chronicle_units(theirs));
    let base_units = base.map(chronicle_units);
    let base_period = base.and_then(period);
    // A side whose period moved past the base's rolled over: its removals are the move.
    let rolled = |text: &str| period(text).is_some_and(|p| Some(p) > base_period);
    let (ours_rolled, theirs_rolled) = (rolled(ours), rolled(theirs));
    let elsewhere: HashSet<String> = elsewhere
        .iter()
        .flat_map(|t| chronicle_units(t))
        .map(|u| u.id)
        .collect();
    let mut report = Vec::new();
    let units = union(
        base_units.as_deref(),
        &mine,
        &yours,
        |side| match side {
            Side::Ours => ours_rolled,
            Side::Theirs => theirs_rolled,
        },
        &elsewhere,
        "the chronicle line",
        &mut report,
    );
    let eol = if ours.contains("\r\n") { "\r\n" } else { "\n" };
    let head = match (
        chronicle::rollover::frontmatter_block(ours),
        chronicle::rollover::frontmatter_block(theirs),
    ) {
        (Some(_), Some(t)) if period(theirs) > period(ours) => Some(t),
        (Some(o), _) => Some(o),
        (None, t) => t,
    }
    .map(|h| {
        if eol == "\n" {
            h.replace("\r\n", "\n")
        } else {
            h
        }
    })
    .map(|h| format!("{h}{eol}"));
    let mut body = String::new();
    for u in &units {
        body.push_str(u.text);
        body.push_str(eol);
    }
    let text = assemble(head, body, eol);
    Merged { text, report }
}

fn assemble(head: Option<String>, mut body: String, eol: &str) -> String {
    if let Some(head) = head {
        let out = format!("{head}{body}");
        // The union's lines start on the line after the head. An empty frontmatter (only blank
        // lines between the fences) can instead end at a later `---` line of the union, hiding
        // the lines before it; it holds no fields, so then the lines are written without it.
        if chronicle::frontmatter_body_line(&out) <= head.matches('\n').count() + 1 {
            return out;
        }
    }
    // Without a frontmatter, sorted lines that happen to open with `---` and hold another `---`
    // would read as one and hide every line between them, and a first line starting with U+FEFF
    // would lose it as a BOM; a blank first line keeps them lines as they were.
    if chronicle::frontmatter_body_line(&body) > 1 || body.starts_with('\u{feff}') {
        body.insert_str(0, eol);
    }
    body
}

// ---------------------------------------------------------------------------------------------
// Inboxes

/// An inbox split into its head (before the first `### ` heading) and its blocks (each from a
/// `### ` heading to the next).
fn inbox_units(text: &str) -> (Option<&str>, Vec<Unit<'_>>) {
    let mut starts = Vec::new();
    let mut pos = 0;
    for line in text.split_inclusive('\n') {
        if line.starts_with("### ") {
            starts.push(pos);
        }
        pos += line.len();
    }
    let head_end = starts.first().copied().unwrap_or(text.len());
    let head = Some(&text[..head_end]).filter(|h| !h.trim().is_empty());
    let mut units = Vec::new();
    for (i, &start) in starts.iter().enumerate() {
        let end = starts.get(i + 1).copied().unwrap_or(text.len());
        let block = text[start..end].trim_matches(|c| c == '\n' || c == '\r');
        units.push(Unit {
            id: block_id(block),
            text: block,
            stamp: block_stamp(block),
        });
    }
    (head, units)
}

/// A block's id: its polisd marker (`<kind>:<16 hex>`), else the hash of its text with
/// trailing whitespace removed from each line.
fn block_id(block: &str) -> String {
    for line in block.lines().rev() {
        let l = line.trim();
        if let Some(rest) = l
            .strip_prefix("<!-- polisd:")
            .and_then(|r| r.strip_suffix(" -->"))
        {
            if rest.split_once(':').is_some_and(|(k, id)| {
                !k.is_empty() && id.len() == 16 && id.bytes().all(|b| b.is_ascii_hexdigit())
            }) {
                return rest.to_string();
            }
        }
    }
    let normal: Vec<&str> = block.lines().map(str::trim_end).collect();
    format!(
        "block:{}",
        crate::protocol::digest::short_id(normal.join("\n").as_bytes())
    )
}

/// The stamp of a block's `### YYYY-MM-DD HH:MM …` heading.
fn block_stamp(block: &str) -> Option<NaiveDateTime> {
    let heading = block.lines().next()?.strip_prefix("### ")?;
    let stamp = heading.get(..16)?;
    chronicle::parse_stamp(stamp)
}

/// Merges two versions of an inbox (or inbox archive), with their common ancestor when git
/// gives one; `elsewhere` is the citizen's inbox archive (a block archived there is not
/// brought back). Blocks removed on one side stay removed (the owner archived or cleared
/// them) unless the other side edited them; blocks added on either side are kept, a notice
/// both sides delivered once; a block edited on one side only is taken as edited.
pub fn merge_inbox(base: Option<&str>, ours: &str, theirs: &str, elsewhere: &[&str]) -> Merged {
    let (our_head, mut mine) = inbox_units(ours);
    let (their_head, yours) = inbox_units(theirs);
    let base_units = base.map(|b| inbox_units(b).1);
    let mut yours = yours;
    let mut report = Vec::new();
    if let Some(base_units) = &base_units {
        take_their_edits(base_units, &mut mine, &yours);
        keep_edits_of_removed(base_units, &mut mine, &mut yours, &mut report);
    }
    let elsewhere: HashSet<String> = elsewhere
        .iter()
        .flat_map(|t| inbox_units(t).1)
        .map(|u| u.id)
        .collect();
    let units = union(
        base_units.as_deref(),
        &mine,
        &yours,
        |_| true,
        &elsewhere,
        "the inbox block",
        &mut report,
    );
    let eol = if ours.contains("\r\n") { "\r\n" } else { "\n" };
    let mut text = String::new();
    if let Some(head) = our_head.or(their_head) {
        text.push_str(head.trim_end_matches(['\n', '\r']));
        text.push_str(eol);
    }
    for u in &units {
        text.push_str(eol);
        text.push_str(u.text);
        text.push_str(eol);
    }
    Merged { text, report }
}

/// Where each id's blocks sit in `units`: an inbox can hold thousands, so ids are looked up,
/// not searched for.
fn positions(units: &[Unit<'_>]) -> HashMap<String, Vec<usize>> {
    let mut out: HashMap<String, Vec<usize>> = HashMap::new();
    for (i, u) in units.iter().enumerate() {
        out.entry(u.id.clone()).or_default().push(i);
    }
    out
}

/// Whether two blocks say the same, line ends aside.
fn same_block(a: &str, b: &str) -> bool {
    a.replace('\r', "") == b.replace('\r', "")
}

/// A block (one id, once on each side and in the base) that our side left as the base had it
/// and their side edited, as words written beneath a notice, is taken in their version: the
/// union keeps our copy of an id, which would drop the edit. Line ends do not count as an
/// edit.
fn take_their_edits<'a>(base: &[Unit<'a>], ours: &mut [Unit<'a>], theirs: &[Unit<'a>]) {
    let (in_base, in_ours, in_theirs) = (positions(base), positions(ours), positions(theirs));
    let once = |at: &HashMap<String, Vec<usize>>, id: &str| match at.get(id).map(Vec::as_slice) {
        Some([i]) => Some(*i),
        _ => None,
    };
    for id in in_ours.keys() {
        let (Some(b), Some(o), Some(t)) =
            (once(&in_base, id), once(&in_ours, id), once(&in_theirs, id))
        else {
            continue;
        };
        if same_block(ours[o].text, base[b].text) && !same_block(theirs[t].text, base[b].text) {
            ours[o] = theirs[t].clone();
        }
    }
}

/// A block (once in the base) that one side removed, archiving it as it was, while the other
/// edited it (words written beneath a notice): its removal standing would lose the words, so
/// the edited block is kept on both sides, and reported.
fn keep_edits_of_removed<'a>(
    base: &[Unit<'a>],
    ours: &mut Vec<Unit<'a>>,
    theirs: &mut Vec<Unit<'a>>,
    report: &mut Vec<String>,
) {
    let (in_base, in_ours, in_theirs) = (positions(base), positions(ours), positions(theirs));
    fn at<'m>(side: &'m HashMap<String, Vec<usize>>, id: &str) -> &'m [usize] {
        side.get(id).map_or(&[], Vec::as_slice)
    }
    let mut to_ours = Vec::new();
    let mut to_theirs = Vec::new();
    for b in base {
        if in_base.get(&b.id).map_or(0, Vec::len) != 1 {
            continue;
        }
        let edited = match (at(&in_ours, &b.id), at(&in_theirs, &b.id)) {
            ([], [t]) if !same_block(theirs[*t].text, b.text) => {
                to_ours.push(theirs[*t].clone());
                &theirs[*t]
            }
            ([o], []) if !same_block(ours[*o].text, b.text) => {
                to_theirs.push(ours[*o].clone());
                &ours[*o]
            }
            _ => continue,
        };
        report.push(format!(
            "the inbox block `{}` was archived on one side and written beneath on the other; it \
             is kept with those words: archive it again once read",
            edited.text.lines().next().unwrap_or("").trim()
        ));
    }
    ours.extend(to_ours);
    theirs.extend(to_theirs);
}

// ---------------------------------------------------------------------------------------------
// Reflection's drafts

/// Two machines' reflection drafts of one proposal: each daemon drafted it from the evidence
/// it had seen, so the bytes differ though the proposal is one. The draft with more evidence
/// is kept (equal counts: the greater text), the same choice on every machine whichever side
/// is ours. `None` when either side is not a draft still waiting for votes, or the two are
/// drafts of different proposals: that is a person's merge.
pub fn merge_drafts(ours: &str, theirs: &str) -> Option<Merged> {
    let draft = |text: &str| -> Option<(String, i64)> {
        let fields = crate::protocol::frontmatter::parse(text).ok()?.fields;
        if fields.get("proposed_by").as_str() != Some(REFLECTOR)
            || fields.get("status").as_str() != Some("proposed")
        {
            return None;
        }
        Some((
            fields.get("reflect_slug").as_str()?.to_string(),
            fields.get("evidence_count").as_i64()?,
        ))
    };
    let (mine, other) = (draft(ours)?, draft(theirs)?);
    if mine.0 != other.0 {
        return None;
    }
    let (text, kept) = if (other.1, theirs) > (mine.1, ours) {
        (theirs, other.1)
    } else {
        (ours, mine.1)
    };
    let report = (ours != theirs)
        .then(|| {
            format!(
                "both sides drafted the proposal `{}`; the draft with {kept} pieces of evidence \
                 is kept",
                mine.0
            )
        })
        .into_iter()
        .collect();
    Some(Merged {
        text: text.to_string(),
        report,
    })
}

// ---------------------------------------------------------------------------------------------
// Duplicates that arrived anyway

/// P024 for every polisd id marker (`<!-- polisd:<kind>:<16 hex> -->`) seen a second time
/// across `files` (path, text), in the order given (archives before the current chronicle):
/// a line or notice that reached the folder twice, e.g. through a plain `merge=union` or two
/// daemons without the merge driver. polisd removes nothing; the finding names both lines.
pub fn duplicate_markers(files: &[(&str, &str)]) -> Vec<crate::protocol::finding::Finding> {
    let mut search = MarkerSearch::default();
    let mut out = Vec::new();
    for (path, text) in files {
        if !text.contains(MARKER_START) {
            continue;
        }
        for (i, line) in text.lines().enumerate() {
            out.extend(search.line(path, i + 1, line));
        }
    }
    out
}

const MARKER_START: &str = "<!-- polisd:";

/// [`duplicate_markers`] fed the lines one at a time, in the order given: the first place of
/// each id seen.
#[derive(Debug, Default)]
pub struct MarkerSearch {
    first: HashMap<String, (String, usize)>,
}

impl MarkerSearch {
    /// The finding about line `number` of `path`, when it carries an id seen before.
    pub fn line(
        &mut self,
        path: &str,
        number: usize,
        line: &str,
    ) -> Option<crate::protocol::finding::Finding> {
        use crate::protocol::finding::{Code, Finding};
        // One vectorised search per line: every line of the chronicle is asked.
        static START: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
            std::sync::LazyLock::new(|| memchr::memmem::Finder::new(MARKER_START));
        let start = START.find(line.as_bytes())?;
        let rest = &line[start + MARKER_START.len()..];
        let end = rest.find(" -->")?;
        let id = &rest[..end];
        let valid = id.split_once(':').is_some_and(|(k, h)| {
            !k.is_empty() && h.len() == 16 && h.bytes().all(|b| b.is_ascii_hexdigit())
        });
        if !valid {
            return None;
        }
        match self.first.get(id) {
            None => {
                self.first
                    .insert(id.to_string(), (path.to_string(), number));
                None
            }
            Some((p, l)) => Some(Finding::warning(
                Code::Duplicate,
                path,
                Some(number),
                format!(
                    "polisd's `{id}` is here a second time (first at {p}:{l}): the same line \
                     or notice arrived twice through a sync. polisd removes nothing; delete \
                     one copy if you like, and run `polisd git-setup` so git merges by id"
                ),
            )),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Copies of a contract in several places (worktrees, clones)

/// One copy of a contract, as found in one worktree's polis.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContractCopy {
    /// Where it is (the file's path, for the report).
    pub path: String,
    pub folder: crate::protocol::layout::ContractFolder,
    /// `None` for a settled copy, whose owner is not read (a settlement is final).
    pub owner: Option<String>,
    pub status: Option<String>,
}

impl ContractCopy {
    fn state(
        &self,
    ) -> (
        crate::protocol::layout::ContractFolder,
        Option<&str>,
        Option<&str>,
    ) {
        (self.folder, self.owner.as_deref(), self.status.as_deref())
    }

    /// `path (folder, owner X, status Y)`, as the report names it.
    pub fn describe(&self) -> String {
        format!(
            "{} ({}, owner {}, status {})",
            self.path,
            self.folder.name(),
            self.owner.as_deref().unwrap_or("none"),
            self.status.as_deref().unwrap_or("none")
        )
    }
}

/// The contracts whose copies differ (folder, owner or status) between places, by id, with
/// each copy described; a contract found in one place only is not a divergence (a branch may
/// add one). Ids come out sorted, copies in the order given.
pub fn diverging(copies: &[(String, ContractCopy)]) -> Vec<(String, Vec<String>)> {
    let mut by_id: std::collections::BTreeMap<&str, Vec<&ContractCopy>> = Default::default();
    for (id, c) in copies {
        by_id.entry(id.as_str()).or_default().push(c);
    }
    by_id
        .into_iter()
        .filter(|(_, cs)| cs.len() > 1 && cs.iter().any(|c| c.state() != cs[0].state()))
        .map(|(id, cs)| (id.to_string(), cs.iter().map(|c| c.describe()).collect()))
        .collect()
}

#[cfg(test)]
mod tests {

    #[test]
    fn driver_program_reads_back_what_driver_command_wrote() {
        for program in [
            "/usr/bin/polisd",
            "/Users/Jo Smith/bin/polisd",
            "/a/it's/polisd",
            "polisd",
        ] {
            assert_eq!(
                driver_program(&driver_command(program)).as_deref(),
                Some(program)
            );
        }
        assert_eq!(
            driver_program("/a\\ b/polisd merge-driver").as_deref(),
            Some("/a b/polisd")
        );
        assert_eq!(driver_program("'/never closed merge-driver"), None);
        assert_eq!(driver_program("  "), None);
    }
    use super::*;
    use crate::protocol::chronicle::{lost_lines, scan};

    fn lines(text: &str) -> Vec<String> {
        scan(text).lines.into_iter().map(|l| l.text).collect()
    }

    #[test]
    fn conflict_markers_need_an_opening_and_a_closing_marker() {
        let text = "---\nstatus: settled\n<<<<<<< HEAD\nowner: a\n=======\nowner: b\n>>>>>>> origin/main\n---\n";
        assert_eq!(conflict_marker_line(text), Some(3));
        assert_eq!(conflict_marker_line("Title\n=======\n\ntext\n"), None);
        assert_eq!(
            conflict_marker_line("<<<<<<< HEAD\nonly an opening\n"),
            None
        );
        assert_eq!(conflict_marker_line("a <<<<<<< b\n>>>>>>> c\n"), None);
        assert_eq!(
            conflict_marker_line("x\r\n<<<<<<<\r\ny\r\n>>>>>>>\r\n"),
            Some(2)
        );
    }

    #[test]
    fn a_copy_or_original_with_markers_or_not_text_is_held_back() {
        let marked = "<<<<<<< a\nx\n=======\ny\n>>>>>>> b\n";
        let held = |copy, cur| copy_held_back(copy, cur, "chronicle.md");
        assert_eq!(held(Ok("- a\n"), Ok(Some("- b\n"))), None);
        assert!(held(Ok(marked), Ok(Some("- b\n")))
            .unwrap()
            .contains("line 1"));
        assert!(held(Err("not UTF-8"), Ok(Some("- b\n")))
            .unwrap()
            .contains("UTF-8"));
        assert!(held(Ok("- a\n"), Ok(Some(marked)))
            .unwrap()
            .contains("chronicle.md"));
        assert!(held(Ok("- a\n"), Ok(None)).unwrap().contains("missing"));
        assert!(held(Ok("- a\n"), Err("not UTF-8"))
            .unwrap()
            .contains("UTF-8"));
    }

    #[test]
    fn conflict_markers_longer_than_seven_are_found() {
        // git's `conflict-marker-size` attribute writes longer markers.
        let text = "a\n<<<<<<<<<<<< ours\nx\n============\ny\n>>>>>>>>>>>> theirs\n";
        assert_eq!(conflict_marker_line(text), Some(2));
        assert_eq!(conflict_marker_line("<<<<<<\nx\n>>>>>>\n"), None);
    }

    #[test]
    fn merge_keeps_a_last_line_without_its_final_newline() {
        let base = "- 2026-03-01 10:00 | a-citizen | began | - | -\n";
        let ours = format!("{base}- 2026-03-01 10:05 | a-citizen | ours | - | unterminated");
        let theirs = format!("{base}- 2026-03-01 10:06 | b-citizen | theirs | - | also");
        let merged = merge_chronicle(Some(base), &ours, &theirs, &[]).text;
        assert!(merged.contains("| ours | - | unterminated\n"), "{merged}");
        assert!(merged.contains("| theirs | - | also\n"), "{merged}");
    }

    /// One chronicle-ish line: a stamped line by a citizen, or (rarely) free text.
    fn arb_line() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        prop_oneof![
            8 => (0u32..6, 0u32..60, 0usize..3, "[a-z ]{0,12}").prop_map(|(h, m, who, note)| {
                let who = ["alpha-agent", "beta-agent", "gamma-agent"][who];
                format!("- 2026-03-01 1{h}:{m:02} | {who} | did work | - | {}", note.trim())
            }),
            1 => "[a-z][a-z ]{0,10}[a-z]".prop_map(|t| format!("note {t}")),
        ]
    }

    /// A side: lines joined by LF or CRLF, with or without a final newline.
    fn render(lines: &[String], crlf: bool, final_newline: bool) -> String {
        let eol = if crlf { "\r\n" } else { "\n" };
        let mut text = lines.join(eol);
        if final_newline && !lines.is_empty() {
            text.push_str(eol);
        }
        text
    }

    proptest::proptest! {
        #[test]
        fn merge_driver_keeps_every_line_of_both_sides_in_time_order(
            base in proptest::collection::vec(arb_line(), 0..8),
            ours_new in proptest::collection::vec(arb_line(), 0..6),
            theirs_new in proptest::collection::vec(arb_line(), 0..6),
            ours_keep in proptest::collection::vec(proptest::bool::ANY, 8),
            theirs_keep in proptest::collection::vec(proptest::bool::ANY, 8),
            shape in (proptest::bool::ANY, proptest::bool::ANY, proptest::bool::ANY,
                      proptest::bool::ANY, proptest::bool::ANY),
        ) {
            let (ours_crlf, theirs_crlf, base_nl, ours_nl, theirs_nl) = shape;
            // Each side drops some base lines and adds its own (duplicates included).
            let side = |keep: &[bool], added: &[String]| -> Vec<String> {
                base.iter().zip(keep).filter(|(_, k)| **k).map(|(l, _)| l.clone())
                    .chain(added.iter().cloned()).collect()
            };
            let ours_lines = side(&ours_keep, &ours_new);
            let theirs_lines = side(&theirs_keep, &theirs_new);
            let base_text = render(&base, false, base_nl);
            let ours = render(&ours_lines, ours_crlf, ours_nl);
            let theirs = render(&theirs_lines, theirs_crlf, theirs_nl);
            let merged = merge_chronicle(Some(&base_text), &ours, &theirs, &[]).text;
            let out: Vec<&str> = merged.lines().map(|l| l.trim_end_matches('\r')).collect();
            for line in ours_lines.iter().chain(&theirs_lines) {
                proptest::prop_assert!(out.contains(&line.as_str()), "lost {line:?} from {merged:?}");
            }
            // Every output line came from a side, and the stamped ones are in time order.
            for line in &out {
                proptest::prop_assert!(
                    line.is_empty() || ours_lines.iter().chain(&theirs_lines).any(|l| l == line),
                    "invented {line:?}"
                );
            }
            let stamps: Vec<_> = out.iter().filter_map(|l| chronicle::stamp_and_author(l)).map(|(s, _)| s).collect();
            proptest::prop_assert!(stamps.windows(2).all(|w| w[0] <= w[1]), "{merged:?}");
            proptest::prop_assert!(merged.is_empty() || merged.ends_with('\n'));
        }
    }

    #[test]
    fn copies_differing_in_owner_or_folder_diverge() {
        use crate::protocol::layout::ContractFolder::{Open, Settled};
        let copy = |path: &str, folder, owner: Option<&str>| ContractCopy {
            path: path.into(),
            folder,
            owner: owner.map(Into::into),
            status: Some("claimed".into()),
        };
        let copies = vec![
            ("a".to_string(), copy("/w1/a.md", Open, Some("x-agent-one"))),
            ("a".to_string(), copy("/w2/a.md", Open, Some("y-agent-one"))),
            ("b".to_string(), copy("/w1/b.md", Open, Some("x-agent-one"))),
            ("b".to_string(), copy("/w2/b.md", Open, Some("x-agent-one"))),
            ("c".to_string(), copy("/w1/c.md", Open, None)),
            ("c".to_string(), copy("/w2/c.md", Settled, None)),
            ("d".to_string(), copy("/w2/d.md", Open, None)),
        ];
        let d = diverging(&copies);
        assert_eq!(
            d.iter().map(|(id, _)| id.as_str()).collect::<Vec<_>>(),
            ["a", "c"]
        );
        assert!(d[0].1[1].contains("owner y-agent-one"), "{:?}", d[0]);
    }

    #[test]
    fn a_marker_seen_twice_is_reported_with_both_places() {
        let line = daemon("2026-03-02 10:05");
        let text = format!("{line}- 2026-03-02 10:06 | a-agent-one | x | - | -\n{line}");
        let f = duplicate_markers(&[("chronicle.md", &text)]);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].line, Some(3));
        assert!(f[0].message.contains("chronicle.md:1"));
        assert!(duplicate_markers(&[("chronicle.md", &line)]).is_empty());
    }

    #[test]
    fn strategies_by_path() {
        assert_eq!(strategy_for("_polis/chronicle.md"), Strategy::Chronicle);
        assert_eq!(strategy_for("chronicle-2026-Q1.md"), Strategy::Chronicle);
        assert_eq!(
            strategy_for("sub/_polis/citizens/claude-code-1/inbox.md"),
            Strategy::Inbox
        );
        assert_eq!(
            strategy_for("_polis/citizens/claude-code-1/inbox-archive.md"),
            Strategy::Inbox
        );
        assert_eq!(
            strategy_for("_polis/contracts/routing_stats.yml"),
            Strategy::Derived
        );
        assert_eq!(strategy_for("_polis/contracts/open/x.md"), Strategy::Text);
        assert_eq!(strategy_for("_polis/lessons/chronicle.md"), Strategy::Text);
    }

    #[test]
    fn a_driver_path_the_shell_would_split_is_quoted() {
        assert_eq!(
            driver_command("/usr/bin/polisd"),
            "/usr/bin/polisd merge-driver %O %A %B %P"
        );
        assert_eq!(
            driver_command("/Users/Jo Smith/bin/polisd"),
            "'/Users/Jo Smith/bin/polisd' merge-driver %O %A %B %P"
        );
        assert_eq!(
            driver_command("/home/o'neil/polisd"),
            r"'/home/o'\''neil/polisd' merge-driver %O %A %B %P"
        );
    }

    #[test]
    fn gitattributes_lines_are_added_once_and_others_kept() {
        let added = with_driver_lines("*.png binary\n").unwrap();
        assert!(added.starts_with("*.png binary\n\n# polisd"));
        assert!(names_driver(&added));
        assert_eq!(with_driver_lines(&added), None);
        assert!(!names_driver("# chronicle.md merge=polisd\n*.md text\n"));
    }

    #[test]
    fn merge_unions_and_sorts_stably() {
        let cur = "---\nfile_type: chronicle\n---\n\n- 2026-03-02 10:00 | a-agent-one | x | - | 1\n- 2026-03-02 12:00 | a-agent-one | x | - | 3\n";
        let copy = "---\nfile_type: other\n---\n- 2026-03-02 10:00 | a-agent-one | x | - | 1\n- 2026-03-02 11:00 | b-agent-one | x | - | 2\n- 2026-03-02 12:00 | b-agent-one | x | - | 3b\n";
        let m = merge_chronicle(None, cur, copy, &[]).text;
        assert_eq!(
            m,
            "---\nfile_type: chronicle\n---\n\n- 2026-03-02 10:00 | a-agent-one | x | - | 1\n- 2026-03-02 11:00 | b-agent-one | x | - | 2\n- 2026-03-02 12:00 | a-agent-one | x | - | 3\n- 2026-03-02 12:00 | b-agent-one | x | - | 3b\n"
        );
        assert_eq!(
            merge_chronicle(None, &m, copy, &[]).text,
            m,
            "merging again changes nothing"
        );
        let mut once = lines(cur);
        once.extend(lines(copy).into_iter().filter(|l| !lines(cur).contains(l)));
        assert!(lost_lines(&once, &[&m]).is_empty());
        let the_other_way = merge_chronicle(None, copy, cur, &[]).text;
        assert!(lost_lines(&once, &[&the_other_way]).is_empty());
        assert!(the_other_way.starts_with("---\nfile_type: other\n---\n\n"));
    }

    fn daemon(stamp: &str) -> String {
        let now = crate::protocol::clock::PolisTime::at_stamp(
            crate::protocol::clock::PolisZone::default(),
            stamp,
        )
        .unwrap();
        chronicle::daemon_line(
            &now,
            "ratified amendment",
            Some("amendments/ratified/2026-03-01-floor"),
            "met quorum",
        )
    }

    #[test]
    fn the_same_polisd_line_from_two_machines_is_kept_once() {
        let base = "- 2026-03-02 10:00 | a-agent-one | x | - | 1\n";
        let ours = format!("{base}{}", daemon("2026-03-02 10:05"));
        let theirs = format!(
            "{base}{}- 2026-03-02 10:07 | b-agent-one | x | - | 2\n",
            daemon("2026-03-02 10:06")
        );
        let m = merge_chronicle(Some(base), &ours, &theirs, &[]);
        assert_eq!(
            m.text,
            format!(
                "{base}{}- 2026-03-02 10:07 | b-agent-one | x | - | 2\n",
                daemon("2026-03-02 10:05")
            )
        );
        assert_eq!(m.report.len(), 1, "{:?}", m.report);
        // The machine whose copy was dropped does not take it for a lost line (C009).
        assert!(lost_lines(&lines(&theirs), &[&m.text]).is_empty());
    }

    #[test]
    fn an_edited_chronicle_line_is_kept_from_each_side_and_reported() {
        let base = "- 2026-03-02 10:00 | a-agent-one | x | - | one\n";
        let ours = "- 2026-03-02 10:00 | a-agent-one | x | - | one, edited\n";
        let theirs = "- 2026-03-02 10:00 | a-agent-one | x | - | one\n- 2026-03-02 10:01 | b-agent-one | y | - | two\n";
        let m = merge_chronicle(Some(base), ours, theirs, &[]);
        assert_eq!(lines(&m.text).len(), 3, "{}", m.text);
        assert!(m.text.contains("one, edited") && m.text.contains("| one\n"));
        assert_eq!(m.report.len(), 1);
    }

    #[test]
    fn a_rollover_on_one_side_moves_lines_and_keeps_the_other_sides_new_ones() {
        let base =
            "---\ncurrent_period: 2026-Q1\n---\n- 2026-03-30 10:00 | a-agent-one | x | - | old\n";
        let rolled = chronicle::rollover::rollover(
            base,
            &crate::protocol::clock::PolisTime::at_stamp(Default::default(), "2026-04-01 00:03")
                .unwrap(),
        )
        .unwrap();
        let theirs = format!("{base}- 2026-04-01 00:02 | b-agent-one | x | - | new\n");
        let m = merge_chronicle(Some(base), &rolled.new_text, &theirs, &[]);
        assert!(m.text.starts_with("---\ncurrent_period: 2026-Q2\n---\n"));
        assert!(!m.text.contains("| old"), "{}", m.text);
        assert!(m.text.contains("| new"));
        // The same from the other side.
        let m2 = merge_chronicle(Some(base), &theirs, &rolled.new_text, &[]);
        assert!(
            !m2.text.contains("| old") && m2.text.contains("| new"),
            "{}",
            m2.text
        );
        assert!(m2.text.starts_with("---\ncurrent_period: 2026-Q2\n---\n"));
        // A conflict copy holding the old lines does not bring them back from the archive.
        let m3 = merge_chronicle(None, &rolled.new_text, &theirs, &[&rolled.archive_text]);
        assert!(!m3.text.contains("| old") && m3.text.contains("| new"));
    }

    fn notice(stamp: &str, id: &str) -> String {
        format!("\n### {stamp} from polis-daemon\n\nSomething.\n\n[[contracts/x]]\n<!-- polisd:contract-settled:{id} -->\n\n---\n")
    }

    /// beads#1485: a union merge brought deleted records back. An archived notice stays
    /// archived.
    #[test]
    fn union_merge_does_not_bring_an_archived_block_back() {
        let base = format!(
            "# Inbox\n{}",
            notice("2026-03-02 10:00", "00000000000000aa")
        );
        let ours = "# Inbox\n".to_string(); // the owner archived it
        let theirs = format!("{base}{}", notice("2026-03-02 11:00", "00000000000000bb"));
        let m = merge_inbox(Some(&base), &ours, &theirs, &[]);
        assert!(!m.text.contains("00000000000000aa"), "{}", m.text);
        assert!(m.text.contains("00000000000000bb"));
        // Two-way (a conflict copy): the inbox archive decides.
        let archive = notice("2026-03-02 10:00", "00000000000000aa");
        let m = merge_inbox(None, &ours, &theirs, &[&archive]);
        assert!(!m.text.contains("00000000000000aa") && m.text.contains("00000000000000bb"));
    }

    #[test]
    fn a_notice_both_machines_delivered_is_kept_once_and_bytes_round_trip() {
        let head = "# Inbox\n";
        let ours = format!("{head}{}", notice("2026-03-02 10:00", "00000000000000aa"));
        let theirs = format!("{head}{}", notice("2026-03-02 10:01", "00000000000000aa"));
        let m = merge_inbox(Some(head), &ours, &theirs, &[]);
        assert_eq!(m.text, ours);
        assert_eq!(merge_inbox(None, &ours, &ours, &[]).text, ours);
        let agent = "# Inbox\n\n### 2026-03-02 09:00 from b-agent-one\n\nhello\n\n---\n";
        assert_eq!(merge_inbox(None, agent, agent, &[]).text, agent);
        let both = merge_inbox(None, agent, &ours, &[]).text;
        assert!(both.find("hello").unwrap() < both.find("00000000000000aa").unwrap());
    }

    #[test]
    fn a_block_differing_only_in_line_ends_is_not_reported_as_written_twice() {
        let base = "# Inbox\n\n### 2026-03-02 09:00 from b-agent-one\n\nhello\n";
        let ours = format!(
            "{}### 2026-03-02 10:00 from c-agent-one\r\n\r\nours\r\n",
            base.replace('\n', "\r\n") + "\r\n"
        );
        let theirs = format!("{base}\n### 2026-03-02 10:01 from d-agent-one\n\ntheirs\n");
        let m = merge_inbox(Some(base), &ours, &theirs, &[]);
        assert!(
            m.text.contains("ours") && m.text.contains("theirs"),
            "{}",
            m.text
        );
        assert_eq!(m.text.matches("hello").count(), 1);
        assert!(m.report.is_empty(), "{:?}", m.report);
    }

    fn draft(slug: &str, evidence: usize, status: &str, by: &str) -> String {
        format!(
            "---\nid: 2026-03-01-{slug}\nstatus: {status}\nproposed_by: {by}\n\
             reflect_slug: {slug}\nevidence_count: {evidence}\n---\n# {slug}\n"
        )
    }

    #[test]
    fn two_drafts_of_one_proposal_keep_the_fuller_evidence_whichever_side_is_ours() {
        let three = draft("stakes-rust", 3, "proposed", REFLECTOR);
        let four = draft("stakes-rust", 4, "proposed", REFLECTOR);
        for (ours, theirs) in [(&three, &four), (&four, &three)] {
            let m = merge_drafts(ours, theirs).unwrap();
            assert_eq!(m.text, four);
            assert_eq!(m.report.len(), 1, "{:?}", m.report);
        }
        // Equal counts: one pick on every machine.
        let other = format!("{three}\nmore\n");
        assert_eq!(
            merge_drafts(&three, &other).unwrap().text,
            merge_drafts(&other, &three).unwrap().text
        );
        assert!(merge_drafts(&four, &four).unwrap().report.is_empty());
    }

    #[test]
    fn an_agents_proposal_a_settled_draft_or_two_proposals_are_a_persons_merge() {
        let four = draft("stakes-rust", 4, "proposed", REFLECTOR);
        let agents = draft("stakes-rust", 3, "proposed", "alpha-agent-one");
        let rejected = draft("stakes-rust", 3, "rejected", REFLECTOR);
        let another = draft("low-quality-rust", 3, "proposed", REFLECTOR);
        for theirs in [&agents, &rejected, &another, &"no front matter".to_string()] {
            assert_eq!(merge_drafts(&four, theirs), None, "{theirs}");
        }
        assert_eq!(
            strategy_for("_polis/amendments/proposed/2026-03-01-stakes-rust.md"),
            Strategy::Draft
        );
        assert_eq!(
            strategy_for("_polis/amendments/ratified/2026-03-01-stakes-rust.md"),
            Strategy::Text
        );
    }
}
