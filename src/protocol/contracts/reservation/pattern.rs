//! The paths of a reservation: how a written path is normalised, its glob patterns (`*`, `?`,
//! `**`, `[…]`, `{a,b}`), and when two patterns could name one file, case and Unicode
//! normalisation folded. Pure: strings in, answers out.

use unicode_normalization::UnicodeNormalization;

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

/// What a path written by hand in the file, one [`normalize`] refuses, holds all the same
/// when entries are compared.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HeldAs {
    /// Every path of the project: the path has no component once `.`, empty components and
    /// slashes are dropped (``, `/`, `./`), as the reference reads it too.
    Everything,
    /// The same as this normalised path (`/etc` is read as `etc`, as the reference reads it).
    Path(String),
    /// Something else (`../x` names no file of the project).
    Other,
}

/// How [`Pattern::overlaps`] reads `raw`, a path written by hand that [`normalize`] refuses:
/// a message that calls it empty or outside the project must not hide that it holds the
/// whole project, or a folder inside it.
pub fn held_as(raw: &str) -> HeldAs {
    let comps = |text: &str| {
        expand_braces(text).map(|alts| alts.iter().map(|a| parse_pattern(a)).collect::<Vec<_>>())
    };
    let Some(alts) = within_bounds(raw).then(|| comps(raw)).flatten() else {
        return HeldAs::Other;
    };
    if alts.iter().any(Vec::is_empty) {
        return HeldAs::Everything;
    }
    match normalize(raw.trim_start_matches('/'), &[]) {
        Ok(n) if raw.starts_with('/') && comps(&n).as_ref() == Some(&alts) => HeldAs::Path(n),
        _ => HeldAs::Other,
    }
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

    /// Written by hand, a path `normalize` refuses is still compared: ``, `/` and `./` hold
    /// every path, `/etc` the project's `etc`, as the reference reads them.
    #[test]
    fn what_a_refused_path_holds_when_written_by_hand() {
        for raw in ["", "/", "//", "./", ".", "{,src}"] {
            assert_eq!(held_as(raw), HeldAs::Everything, "{raw:?}");
            assert!(overlaps(raw, "docs/x.md"), "{raw:?}");
        }
        assert_eq!(held_as("/etc"), HeldAs::Path("etc".into()));
        assert!(overlaps("/etc", "etc/x"));
        assert_eq!(held_as("/src/*.rs"), HeldAs::Path("src/*.rs".into()));
        for raw in ["../x", " ", "/a/../b", "src/*/../x"] {
            assert_eq!(held_as(raw), HeldAs::Other, "{raw:?}");
        }
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
