//! Writing [`Value`]s as the exact bytes PyYAML 6 writes with
//! `safe_dump(v, default_flow_style=False, sort_keys=…, allow_unicode=…)`.
//!
//! Byte identity matters twice: a card's `content_hash` is a SHA-256 of this text (SPEC §4), and
//! `routing_stats.yml` must equal the reference's file (SPEC §6). So this module mirrors PyYAML's
//! choices (scalar style, folding at column 80, indentation, key order) rather than producing
//! merely valid YAML. Where PyYAML's output cannot be predicted from a [`Value`] alone, it returns
//! an [`EmitError`] instead of guessing; callers turn that into "unverifiable", never into a
//! wrong answer. It never panics on any value.

use super::resolve::resolve_plain;
use super::value::{Mapping, Timestamp, Value};
use chrono::{Datelike, Timelike};
use std::cmp::Ordering;

/// The two knobs of PyYAML's dump the protocol uses. Block style is always on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DumpOptions {
    pub sort_keys: bool,
    pub allow_unicode: bool,
}

impl DumpOptions {
    /// What `content_hash` uses (SPEC §4): keys sorted, non-ASCII written raw.
    pub const CARD: DumpOptions = DumpOptions {
        sort_keys: true,
        allow_unicode: true,
    };
    /// What the files the reference's commands write use (frontmatter of contracts, lessons,
    /// reviews, guardrails, amendments, councils; `reservations.yml`): keys in the order given,
    /// non-ASCII written raw.
    pub const FRONTMATTER: DumpOptions = DumpOptions {
        sort_keys: false,
        allow_unicode: true,
    };
    /// What `routing_stats.yml` uses (SPEC §6 point 7): `yaml.dump(sort_keys=False)`.
    pub const STATS: DumpOptions = DumpOptions {
        sort_keys: false,
        allow_unicode: false,
    };
}

/// A value whose PyYAML text polisd cannot reproduce with certainty.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EmitError {
    #[error("a {0} cannot be a mapping key (Python cannot hash it)")]
    UnhashableKey(&'static str),
    #[error("mapping keys {0} and {1} are the same key to Python, so PyYAML would see one")]
    EqualKeys(String, String),
    #[error("the keys of this mapping have no order Python's sort would reproduce ({0})")]
    UnpredictableOrder(String),
    #[error("PyYAML would not write {0} as a plain implicit scalar")]
    Unrepresentable(String),
}

/// `yaml.safe_dump(value, default_flow_style=False, sort_keys=…, allow_unicode=…)`.
pub fn dump(value: &Value, opts: &DumpOptions) -> Result<String, EmitError> {
    let mut w = Writer::new(*opts);
    w.node(value, Context::Root)?;
    // End of document: finish the last line; a bare plain scalar document also gets `...`.
    w.write_indent();
    if w.open_ended {
        w.write_indicator("...", true, false, false);
        w.write_indent();
    }
    Ok(w.out)
}

const WIDTH: usize = 80;
const STEP: usize = 2;
/// A key whose text plus its tag's short form (`!!str`, …) reaches this many characters is
/// written in the explicit `? key` form. PyYAML counts the tag even though it never prints it.
const SIMPLE_KEY_LIMIT: usize = 128;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Context {
    Root,
    Sequence,
    Mapping,
    SimpleKey,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Style {
    Plain,
    Single,
    Double,
}

/// The emitter's cursor. The flags have PyYAML's meaning: `whitespace` — the last character
/// written separates tokens (so an indicator needs no leading space); `indention` — the line so
/// far holds only indentation and `-`/`?`/`:` indicators.
struct Writer {
    opts: DumpOptions,
    out: String,
    column: usize,
    whitespace: bool,
    indention: bool,
    open_ended: bool,
    indent: Option<usize>,
    saved: Vec<Option<usize>>,
}

impl Writer {
    fn new(opts: DumpOptions) -> Self {
        Writer {
            opts,
            out: String::new(),
            column: 0,
            whitespace: true,
            indention: true,
            open_ended: false,
            indent: None,
            saved: Vec::new(),
        }
    }

    fn push_indent(&mut self, scalar: bool, indentless: bool) {
        self.saved.push(self.indent);
        self.indent = Some(match self.indent {
            // A scalar's continuation lines at the root are indented one step; a root collection
            // starts at column 0.
            None if scalar => STEP,
            None => 0,
            Some(i) if indentless => i,
            Some(i) => i + STEP,
        });
    }

    fn pop_indent(&mut self) {
        self.indent = self.saved.pop().flatten();
    }

    fn raw(&mut self, text: &str) {
        self.column += text.chars().count();
        self.out.push_str(text);
    }

    fn write_indicator(&mut self, text: &str, need_space: bool, whitespace: bool, indention: bool) {
        if need_space && !self.whitespace {
            self.raw(" ");
        }
        self.raw(text);
        self.whitespace = whitespace;
        self.indention = self.indention && indention;
        self.open_ended = false;
    }

    fn write_indent(&mut self) {
        let indent = self.indent.unwrap_or(0);
        if !self.indention || self.column > indent || (self.column == indent && !self.whitespace) {
            self.line_break('\n');
        }
        if self.column < indent {
            self.whitespace = true;
            let pad = " ".repeat(indent - self.column);
            self.raw(&pad);
        }
    }

    fn line_break(&mut self, ch: char) {
        self.out.push(ch);
        self.whitespace = true;
        self.indention = true;
        self.column = 0;
    }

    fn node(&mut self, value: &Value, ctx: Context) -> Result<(), EmitError> {
        match value {
            // Empty collections are the only flow collections block style produces.
            Value::Seq(items) if items.is_empty() => {
                self.write_indicator("[", true, true, false);
                self.write_indicator("]", false, false, false);
                Ok(())
            }
            Value::Map(map) if map.is_empty() => {
                self.write_indicator("{", true, true, false);
                self.write_indicator("}", false, false, false);
                Ok(())
            }
            Value::Seq(items) => self.block_sequence(items, ctx),
            Value::Map(map) => self.block_mapping(map),
            scalar => self.scalar(scalar, ctx),
        }
    }

    fn block_sequence(&mut self, items: &[Value], ctx: Context) -> Result<(), EmitError> {
        // A sequence that is a mapping value starts at the key's column ("indentless").
        let indentless = ctx == Context::Mapping && !self.indention;
        self.push_indent(false, indentless);
        for item in items {
            self.write_indent();
            self.write_indicator("-", true, false, true);
            self.node(item, Context::Sequence)?;
        }
        self.pop_indent();
        Ok(())
    }

    fn block_mapping(&mut self, map: &Mapping) -> Result<(), EmitError> {
        let entries = ordered_entries(map, self.opts.sort_keys)?;
        self.push_indent(false, false);
        for (key, value) in entries {
            self.write_indent();
            let key_scalar = Scalar::of(key, self.opts)?;
            if key_scalar.fits_simple_key() {
                self.write_scalar(&key_scalar, Context::SimpleKey)?;
                self.write_indicator(":", false, false, false);
            } else {
                self.write_indicator("?", true, false, true);
                self.write_scalar(&key_scalar, Context::Mapping)?;
                self.write_indent();
                self.write_indicator(":", true, false, true);
            }
            self.node(value, Context::Mapping)?;
        }
        self.pop_indent();
        Ok(())
    }

    fn scalar(&mut self, value: &Value, ctx: Context) -> Result<(), EmitError> {
        let scalar = Scalar::of(value, self.opts)?;
        self.write_scalar(&scalar, ctx)
    }

    fn write_scalar(&mut self, scalar: &Scalar, ctx: Context) -> Result<(), EmitError> {
        let style = scalar.style(ctx)?;
        let split = ctx != Context::SimpleKey;
        self.push_indent(true, false);
        let chars: Vec<char> = scalar.text.chars().collect();
        match style {
            Style::Plain => self.write_plain(&chars, split, ctx == Context::Root),
            Style::Single => self.write_single_quoted(&chars, split),
            Style::Double => self.write_double_quoted(&chars, split),
        }
        self.pop_indent();
        Ok(())
    }

    /// Plain text never holds a line break here (analysis forbids it), so the only layout
    /// decision is folding: a single space after column 80 becomes a line break.
    fn write_plain(&mut self, text: &[char], split: bool, root: bool) {
        if root {
            self.open_ended = true;
        }
        if text.is_empty() {
            return;
        }
        if !self.whitespace {
            self.raw(" ");
        }
        self.whitespace = false;
        self.indention = false;
        for run in runs(text) {
            let s: String = run.iter().collect();
            if run[0] == ' ' && run.len() == 1 && split && self.column > WIDTH {
                self.write_indent();
                self.whitespace = false;
                self.indention = false;
            } else {
                self.raw(&s);
            }
        }
    }

    fn write_single_quoted(&mut self, text: &[char], split: bool) {
        self.write_indicator("'", true, false, false);
        let mut at = 0;
        for run in runs(text) {
            let (start, end) = (at, at + run.len());
            at = end;
            if run[0] == ' ' {
                // Only a lone interior space may fold; the space itself is dropped.
                if run.len() == 1 && split && self.column > WIDTH && start != 0 && end != text.len()
                {
                    self.write_indent();
                } else {
                    self.raw(&run.iter().collect::<String>());
                }
            } else if is_break(run[0]) {
                // In a quoted scalar one line break reads back as a space, so each `\n` needs
                // an extra empty line to survive.
                if run[0] == '\n' {
                    self.line_break('\n');
                }
                for &br in run {
                    self.line_break(br);
                }
                self.write_indent();
            } else {
                let s: String = run.iter().collect();
                self.raw(&s.replace('\'', "''"));
            }
        }
        self.write_indicator("'", false, false, false);
    }

    fn write_double_quoted(&mut self, text: &[char], split: bool) {
        self.write_indicator("\"", true, false, false);
        let len = text.len();
        // `pending` is the start of text not yet written; after an escape it is one past it.
        let mut pending = 0usize;
        for end in 0..=len {
            let ch = text.get(end).copied();
            if ch.is_none_or(|c| self.needs_escape(c)) {
                if pending < end {
                    let s: String = text[pending..end].iter().collect();
                    self.raw(&s);
                    pending = end;
                }
                if let Some(c) = ch {
                    let esc = escape(c);
                    self.raw(&esc);
                    pending = end + 1;
                }
            }
            // Folding happens at a space or right after an escape; a break is written as `\` at
            // the end of the line, and a leading space on the next line is escaped as `\ `.
            // Right after an escape `pending` is `end + 1`, so this is one less than the column.
            let reach = (self.column + end) as isize - pending as isize;
            if split
                && 0 < end
                && end + 1 < len
                && (ch == Some(' ') || pending >= end)
                && reach > WIDTH as isize
            {
                let mut s: String = if pending < end {
                    text[pending..end].iter().collect()
                } else {
                    String::new()
                };
                s.push('\\');
                if pending < end {
                    pending = end;
                }
                self.raw(&s);
                self.write_indent();
                self.whitespace = false;
                self.indention = false;
                if text.get(pending) == Some(&' ') {
                    self.raw("\\");
                }
            }
        }
        self.write_indicator("\"", false, false, false);
    }

    fn needs_escape(&self, c: char) -> bool {
        if matches!(
            c,
            '"' | '\\' | '\u{85}' | '\u{2028}' | '\u{2029}' | '\u{FEFF}'
        ) {
            return true;
        }
        let printable_ascii = (' '..='~').contains(&c);
        let raw_unicode = self.opts.allow_unicode
            && (('\u{A0}'..='\u{D7FF}').contains(&c) || ('\u{E000}'..='\u{FFFD}').contains(&c));
        !(printable_ascii || raw_unicode)
    }
}

/// Splits text into maximal runs of spaces, of line breaks, and of everything else.
fn runs(text: &[char]) -> Vec<&[char]> {
    let kind = |c: char| {
        if c == ' ' {
            0
        } else if is_break(c) {
            1
        } else {
            2
        }
    };
    let mut out = Vec::new();
    let mut start = 0;
    for i in 1..=text.len() {
        if i == text.len() || kind(text[i]) != kind(text[start]) {
            out.push(&text[start..i]);
            start = i;
        }
    }
    out
}

fn is_break(c: char) -> bool {
    matches!(c, '\n' | '\u{85}' | '\u{2028}' | '\u{2029}')
}

fn escape(c: char) -> String {
    let short = match c {
        '\0' => Some('0'),
        '\u{7}' => Some('a'),
        '\u{8}' => Some('b'),
        '\t' => Some('t'),
        '\n' => Some('n'),
        '\u{B}' => Some('v'),
        '\u{C}' => Some('f'),
        '\r' => Some('r'),
        '\u{1B}' => Some('e'),
        '"' => Some('"'),
        '\\' => Some('\\'),
        '\u{85}' => Some('N'),
        '\u{A0}' => Some('_'),
        '\u{2028}' => Some('L'),
        '\u{2029}' => Some('P'),
        _ => None,
    };
    let code = c as u32;
    match short {
        Some(s) => format!("\\{s}"),
        None if code <= 0xFF => format!("\\x{code:02X}"),
        None if code <= 0xFFFF => format!("\\u{code:04X}"),
        None => format!("\\U{code:08X}"),
    }
}

/// A scalar ready to write: its text, and what PyYAML's analysis allows for it.
struct Scalar {
    text: String,
    key_len: usize,
    /// A string whose plain form would read back as a string (PyYAML's `implicit[0]`). For
    /// other types it is checked to be true, and quoting them is not possible without a tag.
    plain_reads_back: bool,
    is_str: bool,
    empty: bool,
    multiline: bool,
    allow_plain: bool,
    allow_single: bool,
}

impl Scalar {
    fn of(value: &Value, opts: DumpOptions) -> Result<Scalar, EmitError> {
        let tag = match value {
            Value::Str(_) => "!!str",
            Value::Null => "!!null",
            Value::Bool(_) => "!!bool",
            Value::Int(_) | Value::BigInt(_) => "!!int",
            Value::Float(_) => "!!float",
            _ => "!!timestamp",
        };
        let (text, is_str) = match value {
            Value::Str(s) => (s.clone(), true),
            Value::Null => ("null".to_string(), false),
            Value::Bool(b) => (if *b { "true" } else { "false" }.to_string(), false),
            Value::Int(i) => (i.to_string(), false),
            Value::BigInt(s) => (s.clone(), false),
            Value::Float(f) => (float_text(*f), false),
            Value::Date(d) => {
                if !(1..=9999).contains(&d.year()) {
                    return Err(EmitError::Unrepresentable(format!("the date {d}")));
                }
                (
                    format!("{:04}-{:02}-{:02}", d.year(), d.month(), d.day()),
                    false,
                )
            }
            Value::DateTime(ts) => (datetime_text(ts)?, false),
            Value::Seq(_) => return Err(EmitError::UnhashableKey("list")),
            Value::Map(_) => return Err(EmitError::UnhashableKey("mapping")),
        };
        let plain_reads_back = if is_str {
            matches!(resolve_plain(&text), Ok(Value::Str(ref s)) if *s == text)
        } else {
            // The text must resolve back to the same type, as PyYAML's representers ensure.
            let back = resolve_plain(&text);
            let same = match (&back, value) {
                (Ok(Value::Float(a)), Value::Float(b)) => a.is_nan() && b.is_nan() || a == b,
                (Ok(v), orig) => v == orig,
                _ => false,
            };
            if !same {
                return Err(EmitError::Unrepresentable(format!("the value {text}")));
            }
            true
        };
        let a = analyze(&text, opts.allow_unicode);
        Ok(Scalar {
            key_len: text.chars().count() + tag.len(),
            text,
            plain_reads_back,
            is_str,
            empty: a.empty,
            multiline: a.multiline,
            allow_plain: a.allow_plain,
            allow_single: a.allow_single,
        })
    }

    fn fits_simple_key(&self) -> bool {
        self.key_len < SIMPLE_KEY_LIMIT && !self.empty && !self.multiline
    }

    fn style(&self, ctx: Context) -> Result<Style, EmitError> {
        let key = ctx == Context::SimpleKey;
        let style = if self.plain_reads_back
            && !(key && (self.empty || self.multiline))
            && self.allow_plain
        {
            Style::Plain
        } else if self.allow_single && !(key && self.multiline) {
            Style::Single
        } else {
            Style::Double
        };
        // A non-string in quotes would need an explicit tag; PyYAML never does that for the
        // types a Value holds, so neither do we.
        if style != Style::Plain && !self.is_str {
            return Err(EmitError::Unrepresentable(format!(
                "the value {}",
                self.text
            )));
        }
        Ok(style)
    }
}

struct Analysis {
    empty: bool,
    multiline: bool,
    allow_plain: bool,
    allow_single: bool,
}

/// Which styles can carry `text` faithfully (PyYAML's scalar analysis, block context only).
fn analyze(text: &str, allow_unicode: bool) -> Analysis {
    let chars: Vec<char> = text.chars().collect();
    if chars.is_empty() {
        return Analysis {
            empty: true,
            multiline: false,
            allow_plain: true,
            allow_single: true,
        };
    }
    let blank = |c: char| matches!(c, '\0' | ' ' | '\t' | '\r') || is_break(c);
    let mut indicator = text.starts_with("---") || text.starts_with("...");
    let mut line_breaks = false;
    let mut special = false;
    let (mut space_then_break, mut break_then_space) = (false, false);
    let n = chars.len();
    for (i, &c) in chars.iter().enumerate() {
        let before_blank = i == 0 || blank(chars[i - 1]);
        let after_blank = i + 1 >= n || blank(chars[i + 1]);
        if i == 0 {
            indicator |=
                "#,[]{}&*!|>'\"%@`".contains(c) || (matches!(c, '?' | ':' | '-') && after_blank);
        } else {
            indicator |= (c == ':' && after_blank) || (c == '#' && before_blank);
        }
        if is_break(c) {
            line_breaks = true;
        }
        if !(c == '\n' || (' '..='~').contains(&c)) {
            let printable_unicode = (c == '\u{85}'
                || ('\u{A0}'..='\u{D7FF}').contains(&c)
                || ('\u{E000}'..='\u{FFFD}').contains(&c)
                || ('\u{10000}'..'\u{10FFFF}').contains(&c))
                && c != '\u{FEFF}';
            if !printable_unicode || !allow_unicode {
                special = true;
            }
        }
        if i > 0 {
            let prev = chars[i - 1];
            if c == ' ' && is_break(prev) {
                break_then_space = true;
            }
            if is_break(c) && prev == ' ' {
                space_then_break = true;
            }
        }
    }
    let edge_blank = |c: char| c == ' ' || is_break(c);
    let edges = edge_blank(chars[0]) || edge_blank(chars[n - 1]);
    Analysis {
        empty: false,
        multiline: line_breaks,
        allow_plain: !(edges
            || break_then_space
            || space_then_break
            || special
            || line_breaks
            || indicator),
        allow_single: !(break_then_space || space_then_break || special),
    }
}

/// PyYAML's float text: Python's `repr`, lower-cased, with `.0` added to a bare exponent form
/// (`1e+16` → `1.0e+16`) so it still reads as a float.
fn float_text(f: f64) -> String {
    if f.is_nan() {
        return ".nan".to_string();
    }
    if f.is_infinite() {
        return if f > 0.0 { ".inf" } else { "-.inf" }.to_string();
    }
    let repr = super::value::python_float_repr(f).to_lowercase();
    if !repr.contains('.') && repr.contains('e') {
        repr.replacen('e', ".0e", 1)
    } else {
        repr
    }
}

/// `datetime.isoformat(' ')`, refusing what a Python datetime cannot hold.
fn datetime_text(ts: &Timestamp) -> Result<String, EmitError> {
    let nanos = ts.local.nanosecond();
    if !(1..=9999).contains(&ts.local.year())
        || !nanos.is_multiple_of(1000)
        || nanos >= 1_000_000_000
    {
        return Err(EmitError::Unrepresentable(format!(
            "the datetime {}",
            ts.local
        )));
    }
    Ok(ts.python_str(' '))
}

/// Comparability classes of Python keys: `sorted` raises TypeError across classes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum KeyClass {
    None,
    Number,
    Str,
    Date,
    NaiveDateTime,
    AwareDateTime,
}

fn key_class(key: &Value) -> Result<KeyClass, EmitError> {
    Ok(match key {
        Value::Null => KeyClass::None,
        Value::Bool(_) | Value::Int(_) | Value::BigInt(_) | Value::Float(_) => KeyClass::Number,
        Value::Str(_) => KeyClass::Str,
        Value::Date(_) => KeyClass::Date,
        Value::DateTime(ts) if ts.offset_seconds.is_none() => KeyClass::NaiveDateTime,
        Value::DateTime(_) => KeyClass::AwareDateTime,
        Value::Seq(_) => return Err(EmitError::UnhashableKey("list")),
        Value::Map(_) => return Err(EmitError::UnhashableKey("mapping")),
    })
}

/// The entries in the order PyYAML writes them. With `sort_keys`, PyYAML sorts the
/// `(key, value)` pairs and silently keeps insertion order when Python cannot compare two keys —
/// which happens exactly when the keys span more than one comparability class.
fn ordered_entries(map: &Mapping, sort: bool) -> Result<Vec<(&Value, &Value)>, EmitError> {
    let mut entries: Vec<(&Value, &Value)> = map.iter().collect();
    let mut classes = Vec::with_capacity(entries.len());
    for (k, _) in &entries {
        classes.push(key_class(k)?);
    }
    // A Python dict cannot hold two equal keys (1 and 1.0 and True are one key), so such a
    // mapping has no PyYAML rendering to reproduce.
    for class in [
        KeyClass::Number,
        KeyClass::Str,
        KeyClass::Date,
        KeyClass::NaiveDateTime,
        KeyClass::AwareDateTime,
    ] {
        let mut same: Vec<&Value> = entries
            .iter()
            .zip(&classes)
            .filter(|(_, c)| **c == class)
            .map(|((k, _), _)| *k)
            .filter(|k| !matches!(k, Value::Float(f) if f.is_nan()))
            .collect();
        let mut failure = None;
        same.sort_by(|a, b| {
            python_cmp(a, b).unwrap_or_else(|e| {
                failure.get_or_insert(e);
                Ordering::Equal
            })
        });
        if let Some(e) = failure {
            return Err(e);
        }
        for pair in same.windows(2) {
            if python_cmp(pair[0], pair[1])? == Ordering::Equal {
                return Err(EmitError::EqualKeys(
                    pair[0].python_str(),
                    pair[1].python_str(),
                ));
            }
        }
    }
    if !sort || entries.len() < 2 || classes.iter().any(|c| *c != classes[0]) {
        return Ok(entries);
    }
    if entries
        .iter()
        .any(|(k, _)| matches!(k, Value::Float(f) if f.is_nan()))
    {
        return Err(EmitError::UnpredictableOrder("a NaN key".to_string()));
    }
    let mut failure = None;
    entries.sort_by(|(a, _), (b, _)| {
        python_cmp(a, b).unwrap_or_else(|e| {
            failure.get_or_insert(e);
            Ordering::Equal
        })
    });
    match failure {
        Some(e) => Err(e),
        None => Ok(entries),
    }
}

/// Python's ordering of two keys of one comparability class (no NaN).
fn python_cmp(a: &Value, b: &Value) -> Result<Ordering, EmitError> {
    use Value::*;
    Ok(match (a, b) {
        (Str(x), Str(y)) => x.cmp(y), // UTF-8 byte order is code point order
        (Date(x), Date(y)) => x.cmp(y),
        (DateTime(x), DateTime(y)) => utc_or_local(x).cmp(&utc_or_local(y)),
        (Null, Null) => Ordering::Equal,
        _ => number_cmp(a, b)?,
    })
}

fn utc_or_local(ts: &Timestamp) -> chrono::NaiveDateTime {
    let offset = chrono::Duration::seconds(i64::from(ts.offset_seconds.unwrap_or(0)));
    ts.local - offset
}

enum Num<'a> {
    Int(i128),
    Big(&'a str),
    Float(f64),
}

fn as_num(v: &Value) -> Option<Num<'_>> {
    match v {
        Value::Bool(b) => Some(Num::Int(i128::from(*b))),
        Value::Int(i) => Some(Num::Int(i128::from(*i))),
        Value::BigInt(s) => Some(Num::Big(s)),
        Value::Float(f) => Some(Num::Float(*f)),
        _ => None,
    }
}

fn number_cmp(a: &Value, b: &Value) -> Result<Ordering, EmitError> {
    let unordered = || EmitError::UnpredictableOrder(format!("{a:?} and {b:?}"));
    let (Some(x), Some(y)) = (as_num(a), as_num(b)) else {
        return Err(unordered());
    };
    match (x, y) {
        (Num::Int(x), Num::Int(y)) => Ok(x.cmp(&y)),
        (Num::Float(x), Num::Float(y)) => x.partial_cmp(&y).ok_or_else(unordered),
        (Num::Int(i), Num::Float(f)) => int_float_cmp(i, f).ok_or_else(unordered),
        (Num::Float(f), Num::Int(i)) => int_float_cmp(i, f)
            .map(Ordering::reverse)
            .ok_or_else(unordered),
        (Num::Big(x), Num::Big(y)) => Ok(big_cmp(x, y)),
        (Num::Big(x), Num::Int(i)) => Ok(big_cmp(x, &i.to_string())),
        (Num::Int(i), Num::Big(y)) => Ok(big_cmp(&i.to_string(), y)),
        // Exact comparison of a huge integer with a float is not worth the risk.
        _ => Err(unordered()),
    }
}

/// Exact comparison of an integer with a float, as Python does it.
fn int_float_cmp(i: i128, f: f64) -> Option<Ordering> {
    if f.is_nan() {
        return None;
    }
    if f.is_infinite() {
        return Some(if f > 0.0 {
            Ordering::Less
        } else {
            Ordering::Greater
        });
    }
    let floor = f.floor();
    // |i| < 2^64 and a float beyond ±2^100 is surely bigger/smaller.
    if floor >= 1e30 {
        return Some(Ordering::Less);
    }
    if floor <= -1e30 {
        return Some(Ordering::Greater);
    }
    let whole = floor as i128;
    Some(match i.cmp(&whole) {
        Ordering::Equal if f > floor => Ordering::Less,
        other => other,
    })
}

fn big_cmp(x: &str, y: &str) -> Ordering {
    let split = |s: &str| -> (bool, String) {
        let neg = s.starts_with('-');
        let digits = s.trim_start_matches(['-', '+']).trim_start_matches('0');
        (neg && !digits.is_empty(), digits.to_string())
    };
    let (xn, xd) = split(x);
    let (yn, yd) = split(y);
    let magnitude = xd.len().cmp(&yd.len()).then_with(|| xd.cmp(&yd));
    match (xn, yn) {
        (false, false) => magnitude,
        (true, true) => magnitude.reverse(),
        (true, false) => Ordering::Less,
        (false, true) => Ordering::Greater,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::NaiveDate;

    fn s(x: &str) -> Value {
        Value::Str(x.to_string())
    }

    fn map(pairs: Vec<(Value, Value)>) -> Value {
        Value::Map(pairs.into_iter().collect())
    }

    fn card(v: &Value) -> String {
        dump(v, &DumpOptions::CARD).unwrap()
    }

    #[test]
    fn spec4_minimal_card_bytes() {
        let v = map(vec![
            (s("agent_id"), s("a")),
            (
                s("capability_tags"),
                map(vec![(
                    s("py"),
                    map(vec![(s("self_rating"), Value::Int(4))]),
                )]),
            ),
        ]);
        assert_eq!(
            card(&v),
            "agent_id: a\ncapability_tags:\n  py:\n    self_rating: 4\n"
        );
    }

    #[test]
    fn sequences_under_a_key_are_not_indented() {
        let v = map(vec![(
            s("k"),
            Value::Seq(vec![
                s("a"),
                map(vec![(s("x"), Value::Int(1)), (s("y"), Value::Null)]),
            ]),
        )]);
        assert_eq!(card(&v), "k:\n- a\n- x: 1\n  y: null\n");
    }

    #[test]
    fn strings_that_read_as_other_types_are_quoted() {
        for (text, want) in [
            ("yes", "'yes'"),
            ("2026-03-02", "'2026-03-02'"),
            ("1.0", "'1.0'"),
            ("null", "'null'"),
            ("", "''"),
            ("<<", "'<<'"),
            ("=", "'='"),
            ("plain text", "plain text"),
        ] {
            let v = map(vec![(s("k"), s(text))]);
            assert_eq!(card(&v), format!("k: {want}\n"), "{text:?}");
        }
    }

    #[test]
    fn top_level_plain_scalar_gets_document_end() {
        assert_eq!(card(&s("hello")), "hello\n...\n");
        assert_eq!(card(&s("yes")), "'yes'\n");
        assert_eq!(card(&Value::Map(Mapping::new())), "{}\n");
    }

    #[test]
    fn dates_floats_and_non_ascii() {
        let v = map(vec![
            (
                s("d"),
                Value::Date(NaiveDate::from_ymd_opt(2026, 3, 2).unwrap()),
            ),
            (s("f"), Value::Float(1e17)),
            (s("g"), Value::Float(4.0)),
            (s("u"), s("café")),
        ]);
        assert_eq!(card(&v), "d: 2026-03-02\nf: 1.0e+17\ng: 4.0\nu: café\n");
        let ascii = dump(&v, &DumpOptions::STATS).unwrap();
        assert!(ascii.ends_with("u: \"caf\\xE9\"\n"), "{ascii}");
    }

    #[test]
    fn mixed_key_types_keep_insertion_order_equal_keys_are_refused() {
        let v = map(vec![
            (s("b"), Value::Int(1)),
            (Value::Int(2), Value::Int(2)),
        ]);
        assert_eq!(card(&v), "b: 1\n2: 2\n");
        let v = map(vec![(Value::Int(1), s("a")), (Value::Float(1.0), s("b"))]);
        assert!(matches!(
            dump(&v, &DumpOptions::CARD),
            Err(EmitError::EqualKeys(..))
        ));
    }

    mod roundtrip {
        use super::super::*;
        use crate::yaml::{load, Timestamp};
        use chrono::{NaiveDate, NaiveTime};
        use proptest::prelude::*;

        // NEL, LS and PS are left out: PyYAML writes them raw as line breaks with
        // allow_unicode and does not read its own output back (`'\u{85}  '` loads as `' '`).
        const PIECES: &[&str] = &[
            "a",
            "word",
            "Ωmega",
            "日本",
            "😀",
            " ",
            "  ",
            ":",
            ": ",
            "#",
            " #",
            "'",
            "\"",
            "\\",
            "- ",
            "-",
            "?",
            ",",
            "[",
            "}",
            "&",
            "*",
            "!",
            "|",
            ">",
            "%",
            "@",
            "`",
            "---",
            "...",
            "\n",
            "\n\n",
            "\t",
            "\r",
            "\u{a0}",
            "\u{7}",
            "\u{1b}",
            "\0",
            "yes",
            "No",
            "~",
            "null",
            "1",
            "1.5",
            "0x1F",
            "2026-03-02",
            " 10:11:12",
            "<<",
            "=",
            ".inf",
            "e3",
            "\u{feff}",
            "\u{fffe}",
            "\u{10ffff}",
        ];

        fn text() -> impl Strategy<Value = String> {
            prop_oneof![
                proptest::collection::vec(proptest::sample::select(PIECES), 0..8)
                    .prop_map(|p| p.concat()),
                "[a-z ]{60,200}",
            ]
        }

        fn scalar() -> impl Strategy<Value = Value> {
            prop_oneof![
                Just(Value::Null),
                any::<bool>().prop_map(Value::Bool),
                any::<i64>().prop_map(Value::Int),
                any::<f64>()
                    .prop_filter("NaN is never equal", |f| !f.is_nan())
                    .prop_map(Value::Float),
                text().prop_map(Value::Str),
                (1900i32..2100, 1u32..13, 1u32..29)
                    .prop_map(|(y, m, d)| Value::Date(NaiveDate::from_ymd_opt(y, m, d).unwrap())),
                (
                    1900i32..2100,
                    0u32..86400,
                    0u32..1_000_000,
                    prop::option::of(-47i32..48)
                )
                    .prop_map(|(y, secs, micros, off)| {
                        let date = NaiveDate::from_ymd_opt(y, 6, 15).unwrap();
                        let time =
                            NaiveTime::from_num_seconds_from_midnight_opt(secs, micros * 1000)
                                .unwrap();
                        Value::DateTime(Timestamp {
                            local: date.and_time(time),
                            offset_seconds: off.map(|q| q * 900),
                        })
                    }),
            ]
        }

        fn value() -> impl Strategy<Value = Value> {
            scalar().prop_recursive(4, 48, 6, |inner| {
                prop_oneof![
                    proptest::collection::vec(inner.clone(), 0..5).prop_map(Value::Seq),
                    proptest::collection::vec(
                        (
                            prop_oneof![
                                text().prop_map(Value::Str),
                                (-5i64..50).prop_map(Value::Int)
                            ],
                            inner
                        ),
                        0..5
                    )
                    .prop_map(|entries| Value::Map(entries.into_iter().collect())),
                ]
            })
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(512))]

            /// What polisd writes reads back with the same types (SPEC §2); sorted output is a
            /// fixed point of load-then-dump.
            #[test]
            fn load_of_dump_is_identity(v in value(), unicode in any::<bool>()) {
                let opts = DumpOptions { sort_keys: false, allow_unicode: unicode };
                let text = dump(&v, &opts).unwrap();
                let back = load(&text).map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
                prop_assert_eq!(&back, &v, "text:\n{}", text);
                let sorted = DumpOptions { sort_keys: true, allow_unicode: unicode };
                let text = dump(&v, &sorted).unwrap();
                let back = load(&text).map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
                prop_assert_eq!(dump(&back, &sorted).unwrap(), text);
            }
        }
    }
}
