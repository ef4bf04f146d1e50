//! Advisory file reservations (`_polis/reservations.yml`): which citizen holds which project
//! paths, until when. Pure: text in, entries, conflicts and new text out.
//!
//! The file is the reference's (`polis reserve`): a comment line, then
//! `reservations:` → a list of `{citizen, paths, reserved_at, expires_at, note}` maps, written
//! as PyYAML's `safe_dump(sort_keys=False, allow_unicode=True)` writes it, so the reference's
//! CLI and MCP server keep reading it. Where polisd deliberately differs from the reference:
//!
//! - a path is normalised without losing bytes: `./src/` is `src`, but `.github/x` stays
//!   `.github/x` (the reference's `lstrip("./")` turns it into `github/x`);
//! - `..` that would leave the project is refused instead of stored, and so is a path longer
//!   than [`MAX_PATH_BYTES`] or with a name longer than [`MAX_NAME_BYTES`];
//! - a path may be a glob (`src/**/*.rs`, `docs/*.md`, `{a,b}.toml`), and two reservations
//!   conflict when any path could fall under both, in either direction (the reference compares
//!   globs as plain names);
//! - timestamps are written with their offset, and a timestamp written without one (by hand,
//!   or as an unquoted YAML datetime, which the reference cannot read) is taken in the polis
//!   timezone instead of being ignored or crashing the comparison;
//! - an entry may name the contract it serves (`contract:`), which the daemon uses to release
//!   it when that contract settles or is abandoned; the reference keeps unknown keys;
//! - paths that differ only in letter case or Unicode normalisation overlap, since they name
//!   one file on macOS and Windows.
//!
//! Nothing here decides *when* to write; `operations::reservation` does that under a lock.

use crate::protocol::clock::{PolisTime, PolisZone};
use crate::yaml::{self, DumpOptions, Mapping, Value};
use chrono::{DateTime, Duration, FixedOffset, NaiveDate, NaiveDateTime, TimeZone as _};
use unicode_normalization::UnicodeNormalization;

/// The file, relative to `_polis/`.
pub const FILE: &str = "reservations.yml";

/// The first line of the file, as the reference writes it.
pub const HEADER: &str =
    "# Advisory file reservations (collision prevention). Managed by `polis reserve/release`.\n";

/// At most this many alternatives after expanding `{a,b}` groups in one pattern.
pub const MAX_ALTERNATIVES: usize = 256;

/// At most this many bytes in a reserved path, and in all its `{a,b}` alternatives written out
/// (Linux's `PATH_MAX`). Comparing two patterns costs the product of their lengths, so an
/// unbounded path could stall every reservation command and the daemon.
pub const MAX_PATH_BYTES: usize = 4096;

/// At most this many bytes in one component of a reserved path (Linux's `NAME_MAX`).
pub const MAX_NAME_BYTES: usize = 255;

// ---------------------------------------------------------------------------------------------
// Paths.

/// Why a path cannot be reserved.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    #[error("`{0}` is empty; name a file, folder or glob inside the project")]
    Empty(String),
    #[error(
        "`{0}` is the whole project; reserve `**` to hold everything, or name what you will edit"
    )]
    WholeProject(String),
    #[error("`{0}` is outside the project; reservations name paths inside the project root (the folder holding _polis/)")]
    Outside(String),
    #[error("`{0}`: `..` after a wildcard cannot be resolved; write the path without it")]
    DotDotAfterGlob(String),
    #[error("`{0}` holds a control character; name the path as it is written on disk")]
    Control(String),
    #[error(
        "`{0}` expands to more than {MAX_ALTERNATIVES} alternatives; split it into several paths"
    )]
    TooManyAlternatives(String),
    #[error("`{0}` is too long: a reserved path holds at most {MAX_PATH_BYTES} bytes (with its {{a,b}} alternatives written out) and {MAX_NAME_BYTES} in one name; reserve a folder above it instead")]
    TooLong(String),
}

/// The start of an over-long path, for a message that stays one readable line.
fn shortened(raw: &str) -> String {
    crate::protocol::input::excerpt(raw, 60)
}

/// Normalises `raw`, a path or glob relative to `base` (the folder it was given from, as
/// components relative to the project root), into the project-relative form stored in the
/// file: `/`-separated, no `.` components, no empty components, no trailing slash. `..` is
/// resolved lexically and refused when it would leave the project. Nothing else changes: a
/// leading dot stays.
pub fn normalize(raw: &str, base: &[String]) -> Result<String, PathError> {
    if raw.chars().any(|c| c.is_control()) {
        return Err(PathError::Control(raw.escape_debug().to_string()));
    }
    if raw.trim().is_empty() {
        return Err(PathError::Empty(raw.to_string()));
    }
    if raw.starts_with('/') {
        // The caller turns absolute paths inside the project into relative ones first.
        return Err(PathError::Outside(raw.to_string()));
    }
    let mut parts: Vec<String> = base.to_vec();
    for comp in raw.split('/') {
        match comp {
            "" | "." => {}
            ".." => match parts.last() {
                None => return Err(PathError::Outside(raw.to_string())),
                Some(last) if is_glob(last) => {
                    return Err(PathError::DotDotAfterGlob(raw.to_string()))
                }
                Some(_) => {
                    parts.pop();
                }
            },
            other => parts.push(other.to_string()),
        }
    }
    if parts.is_empty() {
        return Err(PathError::WholeProject(raw.to_string()));
    }
    let out = parts.join("/");
    if !within_bounds(&out) {
        return Err(PathError::TooLong(shortened(raw)));
    }
    match expand_braces(&out) {
        None => Err(PathError::TooManyAlternatives(raw.to_string())),
        Some(alts) if alts.iter().map(String::len).sum::<usize>() > MAX_PATH_BYTES => {
            Err(PathError::TooLong(shortened(raw)))
        }
        Some(_) => Ok(out),
    }
}

/// Whether a pattern's text is short enough to compare ([`MAX_PATH_BYTES`], [`MAX_NAME_BYTES`]).
fn within_bounds(text: &str) -> bool {
    text.len() <= MAX_PATH_BYTES && text.split('/').all(|c| c.len() <= MAX_NAME_BYTES)
}

/// Whether `text` holds an unescaped wildcard (`*`, `?`, `[`, `{`).
pub fn is_glob(text: &str) -> bool {
    let mut escaped = false;
    for c in text.chars() {
        if escaped {
            escaped = false;
            continue;
        }
        match c {
            '\\' => escaped = true,
            '*' | '?' | '[' | '{' => return true,
            _ => {}
        }
    }
    false
}

/// Whether two reserved paths (each a path or a glob, project-relative, as [`normalize`]
/// leaves them) can name a common file. A reservation holds the paths its pattern matches and,
/// for a plain path or a glob ending in `*` or `**`, everything below them ([`holds_below`]).
/// So `src` and `src/**/*.rs` overlap, `src/*.rs` and `src/main.rs` overlap, `docs/*.md` and
/// `*/README.md` overlap (`docs/README.md`), `src/*` and `src/a/b.rs` overlap, and `src/*.rs`
/// and `src/*.md` do not, nor `**/*.rs` and `**/*.md`.
pub fn overlaps(a: &str, b: &str) -> bool {
    Pattern::new(a).overlaps(&Pattern::new(b))
}

/// A path as a file system that ignores letter case and Unicode normalisation names it
/// (macOS's default, Windows): two paths that may be one file there fold to the same text, so
/// a polis shared with such a machine never lets two citizens hold one file. Each letter is
/// folded on its own, as both file systems do (`str::to_lowercase` writes a word's last `Σ` as
/// `ς`, which they take for `σ`), through its upper case so `ſ` meets `s` and `ς` meets `σ`;
/// conservative where the two systems differ (`ß` meets `ss`).
pub fn fold(text: &str) -> String {
    text.nfd()
        .flat_map(char::to_uppercase)
        .flat_map(char::to_lowercase)
        .nfc()
        .collect()
}

/// A reserved path parsed once for many comparisons (the daemon compares every pair of
/// entries on each pass).
#[derive(Debug, Clone, PartialEq)]
pub struct Pattern {
    text: String,
    /// The brace alternatives, each split into components; `None` when the pattern is too
    /// large to compare (too many alternatives, or longer than [`normalize`] accepts: only a
    /// hand-written entry can be), and then the text is compared as it is.
    alternatives: Option<Vec<Vec<Comp>>>,
}

impl Pattern {
    pub fn new(raw: &str) -> Pattern {
        // The bounds `normalize` holds a path to, on the path as written: folding may lengthen
        // it (`Ⱥ` is two bytes, `ⱥ` three), and a path it accepts must still be compared.
        // Parsed as written and folded token by token (`parse_component`): folding the text
        // first would fold a class's range ends and so change the range.
        let alternatives = within_bounds(raw)
            .then(|| expand_braces(raw))
            .flatten()
            .filter(|alts| alts.iter().map(String::len).sum::<usize>() <= MAX_PATH_BYTES);
        Pattern {
            text: fold(raw),
            alternatives: alternatives.map(|alts| alts.iter().map(|p| parse_pattern(p)).collect()),
        }
    }

    /// [`overlaps`] of the two patterns.
    pub fn overlaps(&self, other: &Pattern) -> bool {
        match (&self.alternatives, &other.alternatives) {
            (Some(xs), Some(ys)) => xs
                .iter()
                .any(|x| ys.iter().any(|y| PathOverlap::new(x, y).run())),
            // Unreachable for normalised paths: patterns too large to compare are refused.
            _ => self.text == other.text,
        }
    }
}

/// One `/`-separated part of a pattern.
#[derive(Debug, Clone, PartialEq)]
enum Comp {
    /// `**`: any number of components, none included.
    AnyDepth,
    /// One component: a sequence of tokens.
    Name(Vec<Tok>),
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    /// `*`: any run of characters, the empty one included.
    Star,
    /// One character from a set (a literal, `?`, `[…]`).
    One(CharSet),
}

/// A set of characters as sorted, disjoint, inclusive ranges of code points. `/` is never in
/// a set: it separates components.
#[derive(Debug, Clone, PartialEq)]
struct CharSet(Vec<(u32, u32)>);

const MAX_CHAR: u32 = 0x10FFFF;
const SLASH: u32 = '/' as u32;

impl CharSet {
    fn literal(c: char) -> CharSet {
        CharSet(vec![(c as u32, c as u32)])
    }

    fn any() -> CharSet {
        CharSet::from_ranges(vec![(0, MAX_CHAR)])
    }

    /// Sorts, merges and removes `/`.
    fn from_ranges(mut ranges: Vec<(u32, u32)>) -> CharSet {
        ranges.sort();
        let mut merged: Vec<(u32, u32)> = Vec::new();
        for (lo, hi) in ranges {
            if lo > hi {
                continue;
            }
            match merged.last_mut() {
                Some(last) if lo <= last.1.saturating_add(1) => last.1 = last.1.max(hi),
                _ => merged.push((lo, hi)),
            }
        }
        let mut out = Vec::new();
        for (lo, hi) in merged {
            if lo <= SLASH && SLASH <= hi {
                if lo < SLASH {
                    out.push((lo, SLASH - 1));
                }
                if SLASH < hi {
                    out.push((SLASH + 1, hi));
                }
            } else {
                out.push((lo, hi));
            }
        }
        CharSet(out)
    }

    fn complement(&self) -> CharSet {
        let mut out = Vec::new();
        let mut next = 0u32;
        for &(lo, hi) in &self.0 {
            if lo > next {
                out.push((next, lo - 1));
            }
            next = hi.saturating_add(1);
        }
        if next <= MAX_CHAR {
            out.push((next, MAX_CHAR));
        }
        CharSet::from_ranges(out)
    }

    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    fn contains(&self, u: u32) -> bool {
        self.0
            .binary_search_by(|&(lo, hi)| {
                if hi < u {
                    std::cmp::Ordering::Less
                } else if lo > u {
                    std::cmp::Ordering::Greater
                } else {
                    std::cmp::Ordering::Equal
                }
            })
            .is_ok()
    }

    /// The set with every character's [`fold`] added: the folded names a class may match on a
    /// file system that folds them (a name folded to more than one character, `ß` to `ss`,
    /// cannot stand in one place and is left out).
    fn folded(self) -> CharSet {
        let size: u64 = self.0.iter().map(|&(lo, hi)| u64::from(hi - lo) + 1).sum();
        let folds: Vec<(u32, u32)> = if size <= SMALL_CLASS {
            (self.0.iter().flat_map(|&(lo, hi)| lo..=hi))
                .filter_map(|u| char::from_u32(u).and_then(fold_char))
                .map(|x| (x as u32, x as u32))
                .collect()
        } else {
            (folded_chars().iter())
                .filter(|&&(from, _)| self.contains(from))
                .map(|&(_, to)| (to, to))
                .collect()
        };
        let mut ranges = self.0;
        ranges.extend(folds);
        CharSet::from_ranges(ranges)
    }

    fn meets(&self, other: &CharSet) -> bool {
        let (mut i, mut j) = (0, 0);
        while i < self.0.len() && j < other.0.len() {
            let (a, b) = (self.0[i], other.0[j]);
            if a.1 < b.0 {
                i += 1;
            } else if b.1 < a.0 {
                j += 1;
            } else {
                return true;
            }
        }
        false
    }
}

/// A class up to this many code points is folded one character at a time; a larger one (a
/// negated class, a wide range) through [`folded_chars`].
const SMALL_CLASS: u64 = 4096;

/// The fold of one character when it is another single character.
fn fold_char(c: char) -> Option<char> {
    let folded = fold(c.encode_utf8(&mut [0u8; 4]));
    let mut chars = folded.chars();
    match (chars.next(), chars.next()) {
        (Some(x), None) if x != c => Some(x),
        _ => None,
    }
}

/// Every character whose fold is another single character, with that fold (about 2,500),
/// worked out once, on the first large class: a character that case mapping and canonical
/// decomposition both leave alone is its own fold.
fn folded_chars() -> &'static [(u32, u32)] {
    static TABLE: std::sync::OnceLock<Vec<(u32, u32)>> = std::sync::OnceLock::new();
    TABLE.get_or_init(|| {
        let alone = |c: char| {
            let mut parts = 0;
            let mut same = true;
            unicode_normalization::char::decompose_canonical(c, |d| {
                parts += 1;
                same &= d == c;
            });
            let one =
                |it: &mut dyn Iterator<Item = char>| it.next() == Some(c) && it.next().is_none();
            parts == 1 && same && one(&mut c.to_uppercase()) && one(&mut c.to_lowercase())
        };
        (0..=MAX_CHAR)
            .filter_map(char::from_u32)
            .filter(|&c| !alone(c))
            .filter_map(|c| Some((c as u32, fold_char(c)? as u32)))
            .collect()
    })
}

/// Expands `{a,b}` groups (nested too) into the patterns they stand for; `None` past
/// [`MAX_ALTERNATIVES`]. An unclosed `{` is a literal, as in most shells.
fn expand_braces(pattern: &str) -> Option<Vec<String>> {
    let chars: Vec<char> = pattern.chars().collect();
    // Find the first top-level, unescaped `{` with a matching `}` and at least one `,`.
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '\\' => i += 2,
            '{' => {
                let mut depth = 0;
                let mut commas = Vec::new();
                let mut j = i;
                let mut close = None;
                while j < chars.len() {
                    match chars[j] {
                        '\\' => j += 1,
                        '{' => depth += 1,
                        '}' => {
                            depth -= 1;
                            if depth == 0 {
                                close = Some(j);
                                break;
                            }
                        }
                        ',' if depth == 1 => commas.push(j),
                        _ => {}
                    }
                    j += 1;
                }
                let Some(close) = close else {
                    i += 1;
                    continue;
                };
                let prefix: String = chars[..i].iter().collect();
                let suffix: String = chars[close + 1..].iter().collect();
                let mut bounds = vec![i];
                bounds.extend(&commas);
                bounds.push(close);
                let mut out = Vec::new();
                for w in bounds.windows(2) {
                    let alt: String = chars[w[0] + 1..w[1]].iter().collect();
                    for tail in expand_braces(&format!("{alt}{suffix}"))? {
                        out.push(format!("{prefix}{tail}"));
                        if out.len() > MAX_ALTERNATIVES {
                            return None;
                        }
                    }
                }
                return Some(out);
            }
            _ => i += 1,
        }
    }
    Some(vec![pattern.to_string()])
}

/// Splits a brace-free pattern into components. `.` and empty components are skipped, so a
/// hand-written `./src/` in the file still means `src`.
fn parse_pattern(pattern: &str) -> Vec<Comp> {
    pattern
        .split('/')
        .filter(|c| !c.is_empty() && *c != ".")
        .map(|c| {
            if c == "**" {
                Comp::AnyDepth
            } else {
                Comp::Name(parse_component(c))
            }
        })
        .collect()
}

/// The tokens of one component: `*`, `?`, `[set]`, `[!set]` / `[^set]`, `\x`, literals. An
/// unclosed `[` is a literal, as Python's `fnmatch` reads it.
fn parse_component(text: &str) -> Vec<Tok> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    // Literal characters wait here to be folded together, as a name is (`e` and a combining
    // accent fold to `é`).
    let mut run = String::new();
    let flush = |run: &mut String, out: &mut Vec<Tok>| {
        out.extend(fold(run).chars().map(|c| Tok::One(CharSet::literal(c))));
        run.clear();
    };
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '*' => {
                flush(&mut run, &mut out);
                if out.last() != Some(&Tok::Star) {
                    out.push(Tok::Star);
                }
                i += 1;
            }
            '?' => {
                flush(&mut run, &mut out);
                out.push(Tok::One(CharSet::any()));
                i += 1;
            }
            '\\' if i + 1 < chars.len() => {
                run.push(chars[i + 1]);
                i += 2;
            }
            '[' => match parse_class(&chars, i) {
                Some((set, next)) => {
                    flush(&mut run, &mut out);
                    out.push(Tok::One(set));
                    i = next;
                }
                None => {
                    run.push('[');
                    i += 1;
                }
            },
            c => {
                run.push(c);
                i += 1;
            }
        }
    }
    flush(&mut run, &mut out);
    out
}

/// A `[…]` class starting at `start`; the set and the index after `]`.
fn parse_class(chars: &[char], start: usize) -> Option<(CharSet, usize)> {
    let mut i = start + 1;
    let negated = matches!(chars.get(i), Some('!' | '^'));
    if negated {
        i += 1;
    }
    let mut ranges = Vec::new();
    let mut first = true;
    loop {
        let c = *chars.get(i)?;
        if c == ']' && !first {
            break;
        }
        first = false;
        let lo = if c == '\\' {
            i += 1;
            *chars.get(i)?
        } else {
            c
        };
        if chars.get(i + 1) == Some(&'-') && chars.get(i + 2).is_some_and(|c| *c != ']') {
            let hi = chars[i + 2];
            ranges.push((lo as u32, hi as u32));
            i += 3;
        } else {
            ranges.push((lo as u32, lo as u32));
            i += 1;
        }
    }
    // Matched as a name is, folded: `[!b]` leaves out `B` too, as a case-folding glob does.
    let set = CharSet::from_ranges(ranges).folded();
    Some((if negated { set.complement() } else { set }, i + 1))
}

/// Whether two single components can name one non-empty file name. A search over pairs of
/// token positions: `*` may stay put while the other side consumes a character.
fn names_meet(a: &[Tok], b: &[Tok]) -> bool {
    // Plain names (most paths): equal or not, no search.
    if is_literal(a) && is_literal(b) {
        return !a.is_empty() && a == b;
    }
    // State: (i, j, consumed anything yet); bounded by MAX_NAME_BYTES on both sides.
    let mut seen = vec![false; (a.len() + 1) * (b.len() + 1) * 2];
    let mut stack = vec![(0usize, 0usize, false)];
    while let Some(state) = stack.pop() {
        let (i, j, some) = state;
        let k = (i * (b.len() + 1) + j) * 2 + usize::from(some);
        if std::mem::replace(&mut seen[k], true) {
            continue;
        }
        if i == a.len() && j == b.len() {
            if some {
                return true;
            }
            continue;
        }
        match (a.get(i), b.get(j)) {
            (Some(Tok::Star), Some(Tok::Star)) => {
                stack.push((i + 1, j, some));
                stack.push((i, j + 1, some));
                // Both stars consume one character together.
                stack.push((i, j, true));
            }
            (Some(Tok::Star), other) => {
                stack.push((i + 1, j, some));
                if let Some(Tok::One(set)) = other {
                    if !set.is_empty() {
                        stack.push((i, j + 1, true));
                    }
                }
            }
            (other, Some(Tok::Star)) => {
                stack.push((i, j + 1, some));
                if let Some(Tok::One(set)) = other {
                    if !set.is_empty() {
                        stack.push((i + 1, j, true));
                    }
                }
            }
            (Some(Tok::One(x)), Some(Tok::One(y))) if x.meets(y) => {
                stack.push((i + 1, j + 1, true));
            }
            _ => {}
        }
    }
    false
}

/// Whether a component is a plain name: every token one character, no wildcard.
fn is_literal(toks: &[Tok]) -> bool {
    toks.iter()
        .all(|t| matches!(t, Tok::One(CharSet(r)) if r.len() == 1 && r[0].0 == r[0].1))
}

/// Whether a component can match any file name at all (`[]`-like sets cannot).
fn name_satisfiable(a: &[Tok]) -> bool {
    a.iter().all(|t| match t {
        Tok::Star => true,
        Tok::One(set) => !set.is_empty(),
    }) && !a.is_empty()
}

/// Whether what a pattern names holds what is below it: a plain path does (a folder holds its
/// files, as in the reference), and so does a glob ending in `*` or `**`; a glob whose last
/// part is a partial pattern (`*.rs`, `test_?`) names files, so `**/*.rs` and `**/*.md` do not
/// meet in a folder that happens to be called `x.md`.
fn holds_below(pattern: &[Comp]) -> bool {
    match pattern.last() {
        None | Some(Comp::AnyDepth) => true,
        Some(Comp::Name(toks)) => {
            toks == &[Tok::Star]
                || toks.iter().all(|t| match t {
                    Tok::One(set) => set.0.len() == 1 && set.0[0].0 == set.0[0].1,
                    Tok::Star => false,
                })
        }
    }
}

/// The search over pairs of component positions for [`overlaps`]: both patterns read the same
/// path from the left; the reservations overlap as soon as one pattern is used up while the
/// other can still go on (one holds a folder above what the other holds) or both end together.
/// Filled from the ends backwards, without recursion, so a deep path cannot overflow the stack.
struct PathOverlap<'a> {
    a: &'a [Comp],
    b: &'a [Comp],
}

impl<'a> PathOverlap<'a> {
    fn new(a: &'a [Comp], b: &'a [Comp]) -> Self {
        PathOverlap { a, b }
    }

    fn rest_ok(rest: &[Comp]) -> bool {
        rest.iter().all(|c| match c {
            Comp::AnyDepth => true,
            Comp::Name(t) => name_satisfiable(t),
        })
    }

    fn run(&self) -> bool {
        let (a, b) = (self.a, self.b);
        // The leading names of both sides meet pair by pair or not at all (most paths part in
        // their first or second folder): only the rest needs the search.
        let mut k = 0;
        while let (Some(Comp::Name(x)), Some(Comp::Name(y))) = (a.get(k), b.get(k)) {
            if !names_meet(x, y) {
                return false;
            }
            k += 1;
        }
        let width = b.len() + 1;
        // ok[i * width + j]: whether a[i..] and b[j..] overlap.
        let mut ok = vec![false; (a.len() + 1) * width];
        for i in (k..=a.len()).rev() {
            for j in (k..=b.len()).rev() {
                let at = |i: usize, j: usize| ok[i * width + j];
                let v = if i == a.len() && j == b.len() {
                    true
                } else if i == a.len() {
                    holds_below(a) && Self::rest_ok(&b[j..])
                } else if j == b.len() {
                    holds_below(b) && Self::rest_ok(&a[i..])
                } else {
                    match (&a[i], &b[j]) {
                        (Comp::AnyDepth, Comp::AnyDepth) => at(i + 1, j) || at(i, j + 1),
                        (Comp::AnyDepth, Comp::Name(t)) => {
                            at(i + 1, j) || (name_satisfiable(t) && at(i, j + 1))
                        }
                        (Comp::Name(t), Comp::AnyDepth) => {
                            at(i, j + 1) || (name_satisfiable(t) && at(i + 1, j))
                        }
                        (Comp::Name(x), Comp::Name(y)) => at(i + 1, j + 1) && names_meet(x, y),
                    }
                };
                ok[i * width + j] = v;
            }
        }
        ok[k * width + k]
    }
}

// ---------------------------------------------------------------------------------------------
// Time.

/// The stamp polisd writes: ISO 8601 with the polis timezone's offset, to the second
/// (`2026-03-02T14:05:00+00:00`). Python's `datetime.fromisoformat` reads it aware.
pub fn stamp(t: DateTime<FixedOffset>) -> String {
    t.format("%Y-%m-%dT%H:%M:%S%:z").to_string()
}

/// "Now" as an aware instant.
pub fn aware_now(now: &PolisTime) -> DateTime<FixedOffset> {
    local_in(now.now, now.zone)
}

fn local_in(t: NaiveDateTime, zone: PolisZone) -> DateTime<FixedOffset> {
    zone.0
        .from_local_datetime(&t)
        .single()
        .unwrap_or_else(|| DateTime::from_naive_utc_and_offset(t, zone.0))
}

/// Reads a stamp of the file: an ISO 8601 string (offset optional, `T` or space, fraction
/// optional), an unquoted YAML datetime or date. A stamp without an offset is in the polis
/// timezone. `None` for anything else.
pub fn read_instant(v: &Value, zone: PolisZone) -> Option<DateTime<FixedOffset>> {
    match v {
        Value::DateTime(ts) => Some(match ts.offset_seconds {
            Some(off) => {
                let offset = FixedOffset::east_opt(off)?;
                DateTime::from_naive_utc_and_offset(
                    ts.local - Duration::seconds(i64::from(off)),
                    offset,
                )
            }
            None => local_in(ts.local, zone),
        }),
        Value::Date(d) => Some(local_in(d.and_hms_opt(0, 0, 0)?, zone)),
        Value::Str(s) => {
            let s = s.trim();
            let t = s.replacen(' ', "T", 1);
            let t = t
                .strip_suffix('Z')
                .map_or(t.clone(), |x| format!("{x}+00:00"));
            if let Ok(d) = DateTime::parse_from_rfc3339(&t) {
                return Some(d);
            }
            for f in ["%Y-%m-%dT%H:%M:%S%.f%:z", "%Y-%m-%dT%H:%M%:z"] {
                if let Ok(d) = DateTime::parse_from_str(&t, f) {
                    return Some(d);
                }
            }
            for f in ["%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%dT%H:%M"] {
                if let Ok(n) = NaiveDateTime::parse_from_str(&t, f) {
                    return Some(local_in(n, zone));
                }
            }
            NaiveDate::parse_from_str(s, "%Y-%m-%d")
                .ok()
                .and_then(|d| d.and_hms_opt(0, 0, 0))
                .map(|n| local_in(n, zone))
        }
        _ => None,
    }
}

// ---------------------------------------------------------------------------------------------
// The file.

/// One entry of the file, as read. The map is kept whole, so keys polisd does not know (or
/// an entry it cannot read) are written back as they were.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub raw: Value,
    pub citizen: Option<String>,
    /// The paths as written (the reference's and polisd's normalised forms both).
    pub paths: Vec<String>,
    /// `paths`, parsed for comparison.
    patterns: Vec<Pattern>,
    pub reserved_at: Option<DateTime<FixedOffset>>,
    pub expires: Expiry,
    pub note: Option<String>,
    /// The contract the reservation serves (polisd's `--contract`).
    pub contract: Option<String>,
}

/// When an entry stops holding its paths.
#[derive(Debug, Clone, PartialEq)]
pub enum Expiry {
    Never,
    At(DateTime<FixedOffset>),
    /// `expires_at` is set but is not a time: the entry holds until someone fixes it (the
    /// reference treats it the same), and the listing says so.
    Unreadable(String),
}

impl Entry {
    fn from_value(raw: Value, zone: PolisZone) -> Entry {
        let text = |k: &str| match raw.get(k) {
            Value::Null | Value::Seq(_) | Value::Map(_) => None,
            v => Some(v.python_str()),
        };
        let paths = match raw.get("paths") {
            Value::Seq(items) => items
                .iter()
                .filter(|v| !matches!(v, Value::Null | Value::Seq(_) | Value::Map(_)))
                .map(Value::python_str)
                .collect(),
            Value::Null | Value::Map(_) => Vec::new(),
            one => vec![one.python_str()],
        };
        let expires = match raw.get("expires_at") {
            Value::Null => Expiry::Never,
            Value::Str(s) if s.trim().is_empty() => Expiry::Never,
            v => match read_instant(v, zone) {
                Some(t) => Expiry::At(t),
                None => Expiry::Unreadable(v.python_str()),
            },
        };
        Entry {
            citizen: text("citizen"),
            patterns: paths.iter().map(|p| Pattern::new(p)).collect(),
            paths,
            reserved_at: read_instant(raw.get("reserved_at"), zone),
            expires,
            note: text("note"),
            contract: text("contract"),
            raw,
        }
    }

    /// Whether the entry still holds its paths at `now`.
    pub fn is_active(&self, now: DateTime<FixedOffset>) -> bool {
        match &self.expires {
            Expiry::At(t) => *t > now,
            Expiry::Never | Expiry::Unreadable(_) => true,
        }
    }

    /// The entry with `paths` in place of its own (other keys kept).
    fn with_paths(&self, paths: Vec<String>) -> Entry {
        let mut e = self.clone();
        if let Value::Map(m) = &mut e.raw {
            m.insert(
                Value::Str("paths".into()),
                Value::Seq(paths.iter().cloned().map(Value::Str).collect()),
            );
        }
        e.patterns = paths.iter().map(|p| Pattern::new(p)).collect();
        e.paths = paths;
        e
    }
}

/// Why the file could not be read. Nothing is written while it stands: the reference would
/// read such a file as empty and overwrite everyone's reservations.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FileError {
    #[error("{FILE} line {line}: {message}; fix the YAML by hand (polisd will not overwrite it)")]
    Yaml { line: usize, message: String },
    #[error("{FILE}: {0}; expected `reservations:` followed by a list of entries")]
    Shape(String),
}

/// Reads the file's text (`None`: no file yet).
pub fn parse(text: Option<&str>, zone: PolisZone) -> Result<Vec<Entry>, FileError> {
    let Some(text) = text else {
        return Ok(Vec::new());
    };
    let doc = yaml::load(text).map_err(|e| FileError::Yaml {
        line: e.line,
        message: e.to_string(),
    })?;
    let list = match &doc {
        Value::Null => return Ok(Vec::new()),
        Value::Map(_) => match doc.get("reservations") {
            Value::Null => return Ok(Vec::new()),
            Value::Seq(items) => items.clone(),
            other => {
                return Err(FileError::Shape(format!(
                    "`reservations` is a {}, not a list",
                    kind_of(other)
                )))
            }
        },
        other => {
            return Err(FileError::Shape(format!(
                "the file is a {}, not a mapping",
                kind_of(other)
            )))
        }
    };
    Ok(list
        .into_iter()
        .map(|v| Entry::from_value(v, zone))
        .collect())
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Seq(_) => "list",
        Value::Map(_) => "mapping",
        Value::Null => "null",
        _ => "scalar",
    }
}

/// The file's text for these entries: the reference's header line and PyYAML's bytes.
pub fn render(entries: &[Entry]) -> Result<String, yaml::EmitError> {
    let mut doc = Mapping::new();
    doc.insert(
        Value::Str("reservations".into()),
        Value::Seq(entries.iter().map(|e| e.raw.clone()).collect()),
    );
    Ok(format!(
        "{HEADER}{}",
        yaml::dump(&Value::Map(doc), &DumpOptions::FRONTMATTER,)?
    ))
}

// ---------------------------------------------------------------------------------------------
// Reserve, release, prune.

/// A requested path that another citizen's active reservation overlaps.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Conflict {
    /// The path asked for.
    pub path: String,
    /// Who holds the overlapping path.
    pub holder: String,
    /// The path as the holder reserved it.
    pub held_path: String,
    /// When the holder's reservation ends (`None`: until released).
    pub expires_at: Option<String>,
}

/// What to reserve.
#[derive(Debug, Clone)]
pub struct Request<'a> {
    pub citizen: &'a str,
    /// Normalised paths ([`normalize`]).
    pub paths: &'a [String],
    pub ttl_minutes: Option<u32>,
    pub note: Option<&'a str>,
    pub contract: Option<&'a str>,
}

/// The conflicts `request` meets among the active entries of other citizens.
pub fn conflicts(
    entries: &[Entry],
    citizen: &str,
    paths: &[String],
    now: DateTime<FixedOffset>,
) -> Vec<Conflict> {
    let mut out = Vec::new();
    let asked: Vec<Pattern> = paths.iter().map(|p| Pattern::new(p)).collect();
    for e in entries.iter().filter(|e| e.is_active(now)) {
        let Some(holder) = &e.citizen else { continue };
        if holder == citizen {
            continue;
        }
        for (held, held_pattern) in e.paths.iter().zip(&e.patterns) {
            for (path, pattern) in paths.iter().zip(&asked) {
                if pattern.overlaps(held_pattern) {
                    out.push(Conflict {
                        path: path.clone(),
                        holder: holder.clone(),
                        held_path: held.clone(),
                        expires_at: match &e.expires {
                            Expiry::At(t) => Some(stamp(*t)),
                            _ => None,
                        },
                    });
                }
            }
        }
    }
    out
}

/// The entries after `request` is granted, and the new entry; or the conflicts that refuse
/// it. As the reference: the new entry goes last and the citizen's own expired entries are
/// dropped. Unlike it, paths the citizen already holds are moved into the new entry rather
/// than held twice, so reserving again renews instead of piling up duplicates.
pub fn reserve(
    entries: &[Entry],
    request: &Request<'_>,
    now: &PolisTime,
) -> Result<(Vec<Entry>, Entry), Vec<Conflict>> {
    let at = aware_now(now);
    let found = conflicts(entries, request.citizen, request.paths, at);
    if !found.is_empty() {
        return Err(found);
    }
    let mut paths: Vec<String> = Vec::new();
    for p in request.paths {
        if !paths.contains(p) {
            paths.push(p.clone());
        }
    }
    let mut kept = Vec::new();
    for e in entries {
        let own = e.citizen.as_deref() == Some(request.citizen);
        if own && !e.is_active(at) {
            continue;
        }
        if own && e.paths.iter().any(|p| paths.contains(p)) {
            let rest: Vec<String> = e
                .paths
                .iter()
                .filter(|p| !paths.contains(p))
                .cloned()
                .collect();
            if !rest.is_empty() {
                kept.push(e.with_paths(rest));
            }
            continue;
        }
        kept.push(e.clone());
    }
    let mut m = Mapping::new();
    m.insert(
        Value::Str("citizen".into()),
        Value::Str(request.citizen.into()),
    );
    m.insert(
        Value::Str("paths".into()),
        Value::Seq(paths.iter().cloned().map(Value::Str).collect()),
    );
    m.insert(Value::Str("reserved_at".into()), Value::Str(stamp(at)));
    let expires = request
        .ttl_minutes
        .filter(|m| *m > 0)
        .map(|m| at + Duration::minutes(i64::from(m)));
    m.insert(
        Value::Str("expires_at".into()),
        expires.map_or(Value::Null, |t| Value::Str(stamp(t))),
    );
    if let Some(note) = request.note.filter(|n| !n.is_empty()) {
        m.insert(Value::Str("note".into()), Value::Str(note.into()));
    }
    if let Some(c) = request.contract {
        m.insert(Value::Str("contract".into()), Value::Str(c.into()));
    }
    let entry = Entry::from_value(Value::Map(m), now.zone);
    kept.push(entry.clone());
    Ok((kept, entry))
}

/// What [`release`] let go.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Released {
    /// Entries removed or shortened (the reference's count).
    pub entries: usize,
    /// The held paths let go.
    pub paths: Vec<String>,
}

/// The entries after `citizen` releases `targets` (`None`: everything they hold). As the
/// reference: a held path is released when it overlaps a target, so `release src` lets go of
/// `src/a.rs` (and `release src/a.rs` of `src`); expired entries count too.
pub fn release(
    entries: &[Entry],
    citizen: &str,
    targets: Option<&[String]>,
) -> (Vec<Entry>, Released) {
    let mut kept = Vec::new();
    let mut done = Released::default();
    let targets: Option<Vec<Pattern>> =
        targets.map(|t| t.iter().map(|p| Pattern::new(p)).collect());
    for e in entries {
        if e.citizen.as_deref() != Some(citizen) {
            kept.push(e.clone());
            continue;
        }
        let Some(targets) = &targets else {
            done.entries += 1;
            done.paths.extend(e.paths.iter().cloned());
            continue;
        };
        let (gone, rest): (Vec<_>, Vec<_>) = e
            .paths
            .iter()
            .zip(&e.patterns)
            .partition(|(_, p)| targets.iter().any(|t| p.overlaps(t)));
        let gone: Vec<String> = gone.into_iter().map(|(p, _)| p.clone()).collect();
        let rest: Vec<String> = rest.into_iter().map(|(p, _)| p.clone()).collect();
        if gone.is_empty() {
            kept.push(e.clone());
            continue;
        }
        done.entries += 1;
        done.paths.extend(gone);
        if !rest.is_empty() {
            kept.push(e.with_paths(rest));
        }
    }
    (kept, done)
}

/// What the daemon knows of contracts, for releasing reservations when work ends.
#[derive(Debug, Clone, Default)]
pub struct ContractFacts {
    /// Citizens who own a contract in `contracts/open/`.
    pub open_owners: std::collections::BTreeSet<String>,
    /// Contract ids in `contracts/open/`.
    pub open: std::collections::BTreeSet<String>,
    /// Settled and abandoned contracts: id, owner, when (polis-local), if known.
    pub finished: Vec<(String, Option<String>, Option<NaiveDateTime>)>,
    /// Citizens whose latest membership line is `left polis`, with its stamp (polis-local).
    pub departed: std::collections::BTreeMap<String, NaiveDateTime>,
}

/// Why the daemon dropped an entry.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub enum Dropped {
    Expired,
    /// The contract it was made for settled or was abandoned.
    ContractFinished(String),
    /// Made for no contract; its citizen finished a contract after making it and owns no
    /// other open one.
    WorkFinished(String),
    /// Its citizen has left the polis: nobody is left to release it.
    CitizenLeft,
}

/// Whether the end of a contract releases `e`: one made `--contract C` when C is settled or
/// abandoned (and not open again); one made for no contract when its citizen owns no open
/// contract and finished one after reserving. Both stamps are to the second, so an end in the
/// reservation's own second (settling, then reserving the next paths at once) does not count,
/// nor an end stamped after `now` (a clock running ahead): either would drop a reservation
/// made for the work that comes next.
pub fn finished_by(e: &Entry, facts: &ContractFacts, now: &PolisTime) -> Option<Dropped> {
    let citizen = e.citizen.as_deref()?;
    if let Some(c) = &e.contract {
        let done = facts.finished.iter().any(|(id, _, _)| id == c) && !facts.open.contains(c);
        return done.then(|| Dropped::ContractFinished(c.clone()));
    }
    if facts.open_owners.contains(citizen) {
        return None;
    }
    let since = e.reserved_at?.with_timezone(&now.zone.0).naive_local();
    facts
        .finished
        .iter()
        .filter(|(_, owner, at)| {
            owner.as_deref() == Some(citizen) && at.is_some_and(|t| t > since && t <= now.now)
        })
        .map(|(id, _, _)| Dropped::WorkFinished(id.clone()))
        .next()
}

/// Whether `e` is what its citizen held when it left the polis: its latest membership line
/// is `left polis` (stamped `departures[citizen]`, polis-local) and the entry was reserved no
/// later than that line's minute, or says not when. An entry reserved after the line still
/// holds: a machine whose chronicle lacks the citizen's `joined polis` line so far (a sync on
/// its way) must not release what the citizen reserved on coming back. The line's stamp has
/// no seconds, so an entry of the same minute counts as held then.
pub fn left_behind(
    e: &Entry,
    departures: &std::collections::BTreeMap<String, NaiveDateTime>,
    zone: PolisZone,
) -> bool {
    let Some(left) = e.citizen.as_ref().and_then(|c| departures.get(c)) else {
        return false;
    };
    e.reserved_at
        .is_none_or(|r| r.with_timezone(&zone.0).naive_local() < *left + Duration::minutes(1))
}

/// `entries` without what their citizens held when they left ([`left_behind`]).
pub fn still_held(
    entries: &[Entry],
    departures: &std::collections::BTreeMap<String, NaiveDateTime>,
    zone: PolisZone,
) -> Vec<Entry> {
    entries
        .iter()
        .filter(|e| !left_behind(e, departures, zone))
        .cloned()
        .collect()
}

/// The entries the daemon keeps, and those it drops with why: expired ones, those of a
/// citizen who left, and those the end of a contract releases.
pub fn prune(
    entries: &[Entry],
    facts: &ContractFacts,
    now: &PolisTime,
) -> (Vec<Entry>, Vec<(Entry, Dropped)>) {
    let at = aware_now(now);
    let mut kept = Vec::new();
    let mut dropped = Vec::new();
    for e in entries {
        if !e.is_active(at) {
            dropped.push((e.clone(), Dropped::Expired));
        } else if left_behind(e, &facts.departed, now.zone) {
            dropped.push((e.clone(), Dropped::CitizenLeft));
        } else if let Some(why) = finished_by(e, facts, now) {
            dropped.push((e.clone(), why));
        } else {
            kept.push(e.clone());
        }
    }
    (kept, dropped)
}

/// Two active entries of different citizens holding overlapping paths (written without
/// polisd's check: by the reference, by hand, or by a sync of two machines).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Overlap {
    /// The citizen who reserved first (by `reserved_at`; file order on a tie).
    pub first: String,
    pub first_path: String,
    pub first_at: String,
    pub second: String,
    pub second_path: String,
    pub second_at: String,
}

/// Every overlap between active entries of different citizens.
pub fn overlapping(entries: &[Entry], now: &PolisTime) -> Vec<Overlap> {
    let at = aware_now(now);
    let active: Vec<(usize, &Entry)> = entries
        .iter()
        .enumerate()
        .filter(|(_, e)| e.is_active(at) && e.citizen.is_some())
        .collect();
    let when = |e: &Entry| e.reserved_at.map(stamp).unwrap_or_default();
    let mut out = Vec::new();
    for (n, (i, a)) in active.iter().enumerate() {
        for (j, b) in &active[n + 1..] {
            if a.citizen == b.citizen {
                continue;
            }
            // Earlier reservation first; a missing time sorts last; then file order.
            let key = |k: usize, e: &Entry| (e.reserved_at.is_none(), e.reserved_at, k);
            let (x, y) = if key(*i, a) <= key(*j, b) {
                (a, b)
            } else {
                (b, a)
            };
            for (xp, xpat) in x.paths.iter().zip(&x.patterns) {
                for (yp, ypat) in y.paths.iter().zip(&y.patterns) {
                    if xpat.overlaps(ypat) {
                        out.push(Overlap {
                            first: x.citizen.clone().unwrap_or_default(),
                            first_path: xp.clone(),
                            first_at: when(x),
                            second: y.citizen.clone().unwrap_or_default(),
                            second_path: yp.clone(),
                            second_at: when(y),
                        });
                    }
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(raw: &str) -> String {
        normalize(raw, &[]).unwrap()
    }

    /// macOS's default file system and Windows name `Foo.rs` and `foo.rs` as one file, and
    /// `é` composed (NFC) and decomposed (NFD, as macOS once stored it) as one name.
    #[test]
    fn paths_that_may_be_one_file_overlap_whatever_their_case_or_normalisation() {
        assert!(overlaps("src/Foo.rs", "src/foo.rs"));
        assert!(overlaps("SRC/**", "src/lib.rs"));
        assert!(overlaps("docs/caf\u{e9}.md", "docs/cafe\u{301}.md"));
        assert!(overlaps("Docs/*.MD", "docs/readme.md"));
        assert!(!overlaps("src/foo.rs", "src/foo.rs.bak"));
        assert!(!overlaps("docs/cafe.md", "docs/cafe\u{301}.md"));
    }

    /// Both file systems fold case letter by letter, whatever the letter's place in the word:
    /// `ς` (a final sigma), `σ` and `Σ` are one letter there, as are `ſ` (long s) and `s`.
    /// Lowercasing a whole string tells a final `Σ` from a medial one, so it is not enough.
    /// Folding may lengthen a name (`Ⱥ` is two bytes, `ⱥ` three): a path `normalize` accepts
    /// is still compared by its components, not as text.
    #[test]
    fn a_name_that_folding_lengthens_is_still_compared() {
        let long = format!("docs/{}", "\u{23a}".repeat(127));
        assert!(normalize(&long, &[]).is_ok());
        assert!(overlaps("docs", &long));
        assert!(overlaps("**", &long));
    }

    #[test]
    fn case_is_folded_letter_by_letter_as_the_file_systems_do() {
        assert!(overlaps(
            "docs/\u{39f}\u{394}\u{39f}\u{3a3}/a.md",
            "docs/\u{3bf}\u{3b4}\u{3bf}\u{3c3}/a.md"
        ));
        assert!(overlaps(
            "docs/\u{3bf}\u{3b4}\u{3bf}\u{3c2}.md",
            "docs/\u{3bf}\u{3b4}\u{3bf}\u{3c3}.md"
        ));
        assert!(overlaps("\u{17f}rc/a.rs", "src/a.rs"));
        assert!(overlaps("src/\u{212a}elvin.rs", "src/kelvin.rs"));
        assert!(!overlaps(
            "docs/\u{3bf}\u{3b4}\u{3bf}\u{3c3}.md",
            "docs/\u{3bf}\u{3b4}\u{3bf}.md"
        ));
    }

    /// A class matches a name as a case-folding glob does: a letter in either case, `[!b]`
    /// neither `b` nor `B`. Its ranges keep the code points they were written with: folding a
    /// range's ends would turn `[Z-a]` (which holds `_`) into the empty `[z-a]`, and `[A-z]`
    /// into `[a-z]`, which drops `_`. A class wider than [`SMALL_CLASS`] is folded through the table.
    #[test]
    fn a_class_holds_its_letters_in_either_case_and_keeps_its_ranges() {
        assert!(overlaps("src/[Z-a]x.rs", "src/_x.rs"));
        assert!(overlaps("src/[Z-a]x.rs", "src/Ax.rs"));
        assert!(overlaps("src/[Z-a]x.rs", "src/zx.rs"));
        assert!(!overlaps("src/[Z-a]x.rs", "src/bx.rs"));
        assert!(overlaps("src/[A-z].rs", "src/_.rs"));
        assert!(overlaps("src/[a-c].rs", "src/B.rs"));
        assert!(overlaps("src/[A-C].rs", "src/b.rs"));
        assert!(!overlaps("src/[!a].rs", "src/A.rs"));
        assert!(!overlaps("src/[!A-Z].rs", "src/q.rs"));
        assert!(overlaps("src/[!a].rs", "src/B.rs"));
        assert!(overlaps("src/[ -~]x", "src/Qx"));
        // Wide enough to be folded through the table: it holds the Kelvin sign, so `k`.
        assert!(overlaps("src/[\u{100}-\u{2fff}]x", "src/kx"));
        assert!(!overlaps("src/[\u{100}-\u{2fff}]x", "src/jx"));
        assert!(overlaps("docs/[\u{3a3}].md", "docs/\u{3c2}.md"));
        // The Kelvin sign folds to `k`, which the class leaves out, as it does `k` itself.
        assert!(!overlaps("src/[^k]*", "src/\u{212a}x"));
        assert!(!overlaps("src/[^k]*", "src/kx"));
    }

    /// A leave releases what was reserved up to its minute (stamps read in the polis's zone),
    /// and an entry that does not say when it was made; not what was reserved after it.
    #[test]
    fn a_leave_releases_what_was_held_then() {
        let zone = PolisZone::parse("+02:00").unwrap();
        let left = |stamp: &str| {
            std::collections::BTreeMap::from([(
                "alpha-agent".to_string(),
                NaiveDateTime::parse_from_str(stamp, "%Y-%m-%d %H:%M").unwrap(),
            )])
        };
        let entry = |reserved: &str| {
            let text = format!("reservations:\n- citizen: alpha-agent\n  paths: [src]\n{reserved}");
            parse(Some(&text), zone).unwrap().remove(0)
        };
        let at = |t: &str| entry(&format!("  reserved_at: '{t}'\n"));
        let leave = left("2026-03-02 12:00");
        assert!(left_behind(&at("2026-03-02T11:59:59+02:00"), &leave, zone));
        assert!(left_behind(&at("2026-03-02T12:00:59+02:00"), &leave, zone));
        assert!(!left_behind(&at("2026-03-02T12:01:00+02:00"), &leave, zone));
        assert!(!left_behind(&at("2026-03-02T10:01:00+00:00"), &leave, zone));
        assert!(left_behind(&entry(""), &leave, zone));
        assert!(!left_behind(
            &at("2026-03-02T11:00:00+02:00"),
            &std::collections::BTreeMap::new(),
            zone
        ));
    }

    #[test]
    fn dot_folders_are_not_stripped() {
        // The reference's `lstrip("./")` turns `.github/x` into `github/x`.
        assert_eq!(n(".github/workflows/ci.yml"), ".github/workflows/ci.yml");
        assert_eq!(n("./.env"), ".env");
        assert_eq!(n("./src/"), "src");
        assert_eq!(n("src//a/./b.rs"), "src/a/b.rs");
        assert_eq!(n("src/x/../y"), "src/y");
        assert_eq!(
            normalize("b.rs", &["src".into(), "a".into()]).unwrap(),
            "src/a/b.rs"
        );
        assert_eq!(normalize("../b.rs", &["src".into()]).unwrap(), "b.rs");
    }

    #[test]
    fn paths_outside_the_project_are_refused() {
        assert!(matches!(normalize("../x", &[]), Err(PathError::Outside(_))));
        assert!(matches!(
            normalize("src/../../x", &[]),
            Err(PathError::Outside(_))
        ));
        assert!(matches!(
            normalize("/etc/passwd", &[]),
            Err(PathError::Outside(_))
        ));
        assert!(matches!(
            normalize(".", &[]),
            Err(PathError::WholeProject(_))
        ));
        assert!(matches!(normalize("  ", &[]), Err(PathError::Empty(_))));
        assert!(matches!(
            normalize("src/*/../x", &[]),
            Err(PathError::DotDotAfterGlob(_))
        ));
        assert!(matches!(normalize("a\nb", &[]), Err(PathError::Control(_))));
    }

    #[test]
    fn plain_paths_overlap_by_containment_as_in_the_reference() {
        assert!(overlaps("src", "src"));
        assert!(overlaps("src", "src/a.rs"));
        assert!(overlaps("src/a.rs", "src"));
        assert!(!overlaps("src/a.rs", "src/b.rs"));
        assert!(!overlaps("src/a", "src/ab"));
        assert!(!overlaps("src", "srcs/x"));
        // Written by hand in the file.
        assert!(overlaps("./src/", "src/a.rs"));
    }

    #[test]
    fn glob_overlaps_a_path_it_matches_in_either_direction() {
        for (a, b) in [
            ("src/*.rs", "src/main.rs"),
            ("src/**/*.rs", "src/a/b/c.rs"),
            ("src/**", "src"),
            ("src/**", "src/deep/x.md"),
            ("**/*.md", "docs/guide/intro.md"),
            ("**/*.md", "README.md"),
            ("*.toml", "Cargo.toml"),
            ("src/?.rs", "src/a.rs"),
            ("src/[abc].rs", "src/b.rs"),
            ("src/[!x].rs", "src/b.rs"),
            ("{src,docs}/x", "docs/x"),
            ("src/*", "src/a/deep.rs"), // `src/*` holds the folder `src/a`, so what is in it
            ("*", "anything/at/all"),
        ] {
            assert!(overlaps(a, b), "{a} vs {b}");
            assert!(overlaps(b, a), "{b} vs {a}");
        }
    }

    #[test]
    fn glob_does_not_overlap_what_it_cannot_match() {
        for (a, b) in [
            ("src/*.rs", "src/main.md"),
            ("src/*.rs", "docs/main.rs"),
            ("src/[abc].rs", "src/d.rs"),
            ("src/[!b].rs", "src/b.rs"),
            ("src/?.rs", "src/ab.rs"),
            ("{src,docs}/x", "tests/x"),
            ("*.toml", "Cargo.lock"),
            ("src/**/*.rs", "docs/a.rs"),
        ] {
            assert!(!overlaps(a, b), "{a} vs {b}");
            assert!(!overlaps(b, a), "{b} vs {a}");
        }
        // A folder holds what is below it: `a/b` and `a/*/c` share `a/b/c`.
        assert!(overlaps("a/*/c", "a/b"));
    }

    #[test]
    fn two_globs_overlap_when_some_path_matches_both() {
        for (a, b) in [
            ("docs/*.md", "*/README.md"),
            ("src/*.rs", "src/m*"),
            ("src/a*", "src/*b"),
            ("**/test_*.py", "tests/**"),
            ("src/**/mod.rs", "src/*/mod.rs"),
            ("*.{rs,md}", "*.md"),
            ("[a-m]*", "[k-z]*"),
            ("**", "anything"),
        ] {
            assert!(overlaps(a, b), "{a} vs {b}");
            assert!(overlaps(b, a), "{b} vs {a}");
        }
        for (a, b) in [
            ("src/*.rs", "src/*.md"),
            ("docs/*.md", "src/**"),
            ("[a-c]*", "[x-z]*"),
            ("a*z", "b*"),
            ("*.rs", "*.md"),
            ("src/a?", "src/???"),
            ("**/*.rs", "**/*.md"),
            ("src/**/*.md", "src/**/*.rs"),
            ("*.md", "x.md/y.rs"), // a partial pattern names files, not folders
        ] {
            assert!(!overlaps(a, b), "{a} vs {b}");
            assert!(!overlaps(b, a), "{b} vs {a}");
        }
    }

    #[test]
    fn escapes_and_unclosed_brackets_are_literal() {
        assert!(!is_glob(r"a\*b"));
        assert!(overlaps(r"a\*b", "a*b"));
        assert!(!overlaps(r"a\*b", "axb"));
        assert!(overlaps("a[b", "a[b"));
        assert!(!overlaps("a[b", "ab"));
        assert!(overlaps("a{b", "a{b"));
    }

    #[test]
    fn brace_expansion_is_bounded() {
        let big = "{a,b,c,d}{a,b,c,d}{a,b,c,d}{a,b,c,d}{a,b}";
        assert!(matches!(
            normalize(big, &[]),
            Err(PathError::TooManyAlternatives(_))
        ));
        assert_eq!(expand_braces("{a,{b,c}}x").unwrap(), vec!["ax", "bx", "cx"]);
    }

    fn at(stamp: &str) -> PolisTime {
        PolisTime::at_stamp(PolisZone::default(), stamp).unwrap()
    }

    #[test]
    fn reference_file_reads_and_naive_stamps_are_polis_local() {
        let text = "# header\nreservations:\n- citizen: claude-code-1\n  paths:\n  - github/workflows/ci.yml\n  reserved_at: '2026-12-01T06:40:46.470299+00:00'\n  expires_at: '2026-12-01T07:10:46.470299+00:00'\n  note: 'fixing ci: yes'\n- citizen: gemini-cli-1\n  paths: [docs]\n  reserved_at: 2026-12-01 06:00:00\n  expires_at: 2026-12-01 07:00:00\n";
        let zone = PolisZone::parse("+02:00").unwrap();
        let es = parse(Some(text), zone).unwrap();
        assert_eq!(es.len(), 2);
        assert_eq!(es[0].paths, vec!["github/workflows/ci.yml"]);
        assert_eq!(es[0].note.as_deref(), Some("fixing ci: yes"));
        // Unquoted, offset-less: 07:00 in +02:00 is 05:00 UTC.
        let Expiry::At(t) = es[1].expires else {
            panic!("{:?}", es[1].expires)
        };
        assert_eq!(stamp(t), "2026-12-01T07:00:00+02:00");
        let now = PolisTime::at(zone, "2026-12-01T05:30:00Z".parse().unwrap());
        assert!(!es[1].is_active(aware_now(&now)));
        assert!(es[0].is_active(aware_now(&now)));
    }

    #[test]
    fn bad_files_are_refused_not_emptied() {
        let zone = PolisZone::default();
        assert!(matches!(
            parse(Some("reservations: [\n"), zone),
            Err(FileError::Yaml { .. })
        ));
        assert!(matches!(
            parse(Some("reservations: 3\n"), zone),
            Err(FileError::Shape(_))
        ));
        assert_eq!(parse(Some(""), zone).unwrap(), vec![]);
        assert_eq!(parse(None, zone).unwrap(), vec![]);
    }

    #[test]
    fn reserve_writes_the_reference_shape() {
        let now = at("2026-03-02 14:05");
        let paths = vec![".github/x".to_string(), "src".to_string()];
        let req = Request {
            citizen: "claude-code-1",
            paths: &paths,
            ttl_minutes: Some(30),
            note: Some("ci: fix"),
            contract: None,
        };
        let (entries, _) = reserve(&[], &req, &now).unwrap();
        assert_eq!(
            render(&entries).unwrap(),
            format!("{HEADER}reservations:\n- citizen: claude-code-1\n  paths:\n  - .github/x\n  - src\n  reserved_at: '2026-03-02T14:05:00+00:00'\n  expires_at: '2026-03-02T14:35:00+00:00'\n  note: 'ci: fix'\n")
        );
        assert_eq!(render(&[]).unwrap(), format!("{HEADER}reservations: []\n"));
    }

    #[test]
    fn conflict_names_the_holder_and_expiry_frees() {
        let t0 = at("2026-03-02 14:05");
        let mine = vec!["src/**/*.rs".to_string()];
        let (entries, _) = reserve(
            &[],
            &Request {
                citizen: "alpha-agent",
                paths: &mine,
                ttl_minutes: Some(10),
                note: None,
                contract: None,
            },
            &t0,
        )
        .unwrap();
        let theirs = vec!["src/lib.rs".to_string()];
        let req = Request {
            citizen: "bravo-agent",
            paths: &theirs,
            ttl_minutes: None,
            note: None,
            contract: None,
        };
        let err = reserve(&entries, &req, &t0).unwrap_err();
        assert_eq!(err[0].holder, "alpha-agent");
        assert_eq!(err[0].held_path, "src/**/*.rs");
        // The holder itself is never in conflict with its own reservation.
        assert!(conflicts(&entries, "alpha-agent", &theirs, aware_now(&t0)).is_empty());
        // Ten minutes later the lease is gone.
        assert!(reserve(&entries, &req, &at("2026-03-02 14:15")).is_ok());
    }

    #[test]
    fn reserving_again_renews_instead_of_duplicating() {
        let paths = vec!["src".to_string(), "docs".to_string()];
        let req = |p: &'static [&'static str]| p.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let (entries, _) = reserve(
            &[],
            &Request {
                citizen: "alpha-agent",
                paths: &paths,
                ttl_minutes: None,
                note: None,
                contract: None,
            },
            &at("2026-03-02 14:05"),
        )
        .unwrap();
        let again = req(&["src"]);
        let (entries, _) = reserve(
            &entries,
            &Request {
                citizen: "alpha-agent",
                paths: &again,
                ttl_minutes: Some(5),
                note: None,
                contract: None,
            },
            &at("2026-03-02 14:06"),
        )
        .unwrap();
        assert_eq!(entries.len(), 2);
        assert_eq!(entries[0].paths, vec!["docs"]);
        assert_eq!(entries[1].paths, vec!["src"]);
    }

    #[test]
    fn release_by_overlap_keeps_the_rest() {
        let paths = vec!["src/a.rs".to_string(), "docs".to_string()];
        let (entries, _) = reserve(
            &[],
            &Request {
                citizen: "alpha-agent",
                paths: &paths,
                ttl_minutes: None,
                note: Some("n"),
                contract: None,
            },
            &at("2026-03-02 14:05"),
        )
        .unwrap();
        let (kept, done) = release(&entries, "alpha-agent", Some(&["src".to_string()]));
        assert_eq!(done.entries, 1);
        assert_eq!(done.paths, vec!["src/a.rs"]);
        assert_eq!(kept[0].paths, vec!["docs"]);
        assert_eq!(kept[0].note.as_deref(), Some("n"));
        let (kept, done) = release(&kept, "bravo-agent", None);
        assert_eq!(done.entries, 0);
        assert_eq!(kept.len(), 1);
        let (kept, _) = release(&kept, "alpha-agent", None);
        assert!(kept.is_empty());
    }

    #[test]
    fn end_of_work_releases_by_contract_or_by_citizen() {
        let zone = PolisZone::default();
        let text = "reservations:\n- citizen: alpha-agent\n  paths: [a]\n  reserved_at: '2026-03-02T10:00:00+00:00'\n  expires_at: null\n  contract: fix-login\n- citizen: bravo-agent\n  paths: [b]\n  reserved_at: '2026-03-02T10:00:00+00:00'\n  expires_at: null\n- citizen: charlie-agent\n  paths: [c]\n  reserved_at: '2026-03-02T10:00:00+00:00'\n  expires_at: '2026-03-02T11:00:00+00:00'\n";
        let es = parse(Some(text), zone).unwrap();
        let t = |s: &str| NaiveDateTime::parse_from_str(s, "%Y-%m-%d %H:%M").ok();
        let mut facts = ContractFacts::default();
        facts.finished.push((
            "fix-login".into(),
            Some("alpha-agent".into()),
            t("2026-03-02 12:00"),
        ));
        // bravo finished a contract before reserving: that does not release.
        facts.finished.push((
            "old-work".into(),
            Some("bravo-agent".into()),
            t("2026-03-02 09:00"),
        ));
        let now = at("2026-03-02 10:30");
        let (kept, dropped) = prune(&es, &facts, &now);
        assert_eq!(kept.len(), 2);
        assert_eq!(dropped[0].1, Dropped::ContractFinished("fix-login".into()));
        facts.finished.push((
            "new-work".into(),
            Some("bravo-agent".into()),
            t("2026-03-02 10:20"),
        ));
        facts.open_owners.insert("bravo-agent".into());
        assert_eq!(
            prune(&es, &facts, &now).0.len(),
            2,
            "bravo still owns an open contract"
        );
        facts.open_owners.clear();
        let (kept, dropped) = prune(&es, &facts, &at("2026-03-02 11:00"));
        assert!(kept.is_empty());
        assert_eq!(dropped[1].1, Dropped::WorkFinished("new-work".into()));
        assert_eq!(dropped[2].1, Dropped::Expired);
    }

    #[test]
    fn overlapping_entries_name_who_was_first() {
        let zone = PolisZone::default();
        let text = "reservations:\n- citizen: bravo-agent\n  paths: [src/lib.rs]\n  reserved_at: '2026-03-02T10:05:00+00:00'\n- citizen: alpha-agent\n  paths: ['src/*.rs', docs]\n  reserved_at: '2026-03-02T10:00:00+00:00'\n- citizen: alpha-agent\n  paths: [src/lib.rs]\n  reserved_at: '2026-03-02T10:00:00+00:00'\n";
        let es = parse(Some(text), zone).unwrap();
        let o = overlapping(&es, &at("2026-03-02 10:30"));
        assert_eq!(o.len(), 2);
        assert_eq!(o[0].first, "alpha-agent");
        assert_eq!(o[0].first_path, "src/*.rs");
        assert_eq!(o[0].second, "bravo-agent");
        assert_eq!(o[1].first_path, "src/lib.rs");
    }

    mod props {
        use super::super::*;
        use proptest::prelude::*;

        fn pattern() -> impl Strategy<Value = String> {
            proptest::string::string_regex(r"[ab*?/.\[\]!{},\\-]{0,12}").unwrap()
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(2000))]
            #[test]
            fn overlap_never_panics_and_is_symmetric(a in pattern(), b in pattern()) {
                prop_assert_eq!(overlaps(&a, &b), overlaps(&b, &a));
                let _ = normalize(&a, &[]);
            }

            #[test]
            fn a_plain_path_overlaps_itself_and_what_is_below(
                a in "[a-z.]{1,4}(/[a-z.]{1,4}){0,3}",
                tail in "[a-z]{1,4}",
            ) {
                if let Ok(p) = normalize(&a, &[]) {
                    prop_assert!(overlaps(&p, &p));
                    let below = format!("{p}/{tail}");
                    prop_assert!(overlaps(&p, &below));
                }
            }
        }
    }
}
