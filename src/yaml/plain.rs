//! A fast reader for the plain shape nearly every protocol frontmatter has: top-level
//! `key: value` lines, one level of indented `key: value` lines under a `key:` (a contract's
//! `routing:` and `review:`), block lists of scalars (`- item`) and one-line flow lists of plain
//! scalars (`[python, docs]`). Reading 100k settled contracts spent most of its time in
//! yaml-rust2's character-at-a-time scanner for exactly this shape.
//!
//! It owns one promise: whenever [`load`] returns `Some`, the value equals what the full
//! reader ([`super::load`]) returns for the same text, `Ok` included; for anything it cannot
//! prove plain it returns `None` and the caller reads the text with the full reader (so every
//! finding, with its line and message, still comes from there). Why the promise holds, rule by
//! rule:
//!
//! - **Typing** is not re-implemented: every plain scalar and key goes through
//!   [`super::resolve::resolve_plain`], the function the full reader calls for a plain scalar; a
//!   quoted scalar is a string there and here. A scalar it refuses (`2026-02-30`) is left to
//!   the full reader, which refuses it with its line.
//! - **The text is refused whole** when it holds a byte any rule below would have to reason
//!   about: a tab, a carriage return, a NUL or another control character, a byte-order mark,
//!   U+2028/U+2029 or a C1 control (line breaks to YAML 1.1), `&` (anchors, and the duplicate
//!   anchor rule of `strict`), or more than [`MAX_BYTES`] bytes (so the node budget and the
//!   1024-character simple-key window can never be reached).
//! - **`strict::check` finds nothing** in an accepted text: its rules are a tab (refused
//!   above), `...` or `:` at the start of a line and `--- ` / `...` document markers (every
//!   accepted line starts with a key character, `-` followed by a space, or spaces), and a
//!   duplicate anchor (no `&`). Its quote, flow and block-scalar tracking can only switch its
//!   checks off, never on.
//! - **Each accepted scalar is one token** to yaml-rust2 and PyYAML: a plain scalar starts
//!   with no indicator (`-` only before a non-space), holds no `: ` (nor ends in `:`) and no
//!   ` #`, and sits on one line with nothing indented under it; a quoted one opens and closes
//!   on its line with nothing after it, a single-quoted one escaping only `''` and a
//!   double-quoted one holding no `\` or `"`; a flow item holds none of `,[]{}:#` and starts
//!   with no indicator.
//! - **Structure**: lines are split at `\n` only; a blank line and a comment line starting at
//!   column 0 are skipped, as YAML skips them between tokens; every indented line must sit at
//!   exactly the indentation its block opened with, so nothing is a continuation or a deeper
//!   level. Duplicate keys go through [`Mapping::insert`], as in the full reader.
//!
//! `tests::plain_equals_full_reader` (proptest) generates frontmatters of this shape with
//! hostile characters mixed in and checks the promise on each.
//!
//! Pure: text in, a value or `None` out. It never reports: that is the full reader's job.

use super::resolve::resolve_plain;
use super::value::{Mapping, Value};

/// Longest text read here. Real frontmatters are under a few KB; past this the full reader's
/// node budget and limits decide.
pub const MAX_BYTES: usize = 64 * 1024;
/// Longest key read here (yaml-rust2 wants a simple key's `:` within 1024 characters).
const MAX_KEY: usize = 128;

/// `text` read as the full reader would read it, when it is in the plain shape; `None` when
/// it is not (the caller then reads it with [`super::load`]).
pub fn load(text: &str) -> Option<Value> {
    if text.len() > MAX_BYTES || !bytes_are_plain(text.as_bytes()) {
        return None;
    }
    let mut lines = Lines::new(text);
    // One entry a line at most: sized once instead of grown five times for a contract.
    let mut map = Mapping::with_capacity(1 + newlines(text.as_bytes()));
    let mut any = false;
    while let Some(line) = lines.next() {
        let (key, rest) = key_line(line)?;
        let value = if rest.is_empty() {
            block_under(&mut lines)?
        } else {
            inline(rest)?
        };
        map.insert(key, value);
        any = true;
    }
    // A text of blank and comment lines is an empty document, as `safe_load` gives `None`.
    Some(if any { Value::Map(map) } else { Value::Null })
}

fn newlines(b: &[u8]) -> usize {
    b.iter().filter(|c| **c == b'\n').count()
}

/// Whether `b` holds none of the bytes the rules above do not reason about.
fn bytes_are_plain(b: &[u8]) -> bool {
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'\n' => {}
            0..=0x1f | 0x7f | b'&' => return false,
            // U+0080..U+009F (C1 controls, NEL among them).
            0xc2 if matches!(b.get(i + 1), Some(0x80..=0x9f)) => return false,
            // U+2028, U+2029.
            0xe2 if b.get(i + 1) == Some(&0x80) && matches!(b.get(i + 2), Some(0xa8 | 0xa9)) => {
                return false
            }
            // U+FEFF, U+FFFE, U+FFFF.
            0xef if matches!(
                (b.get(i + 1), b.get(i + 2)),
                (Some(0xbb), Some(0xbf)) | (Some(0xbf), Some(0xbe | 0xbf))
            ) =>
            {
                return false
            }
            _ => {}
        }
        i += 1;
    }
    true
}

/// The content lines of a text: blank lines and column-0 comment lines are skipped.
struct Lines<'a> {
    rest: Option<&'a str>,
    peeked: Option<&'a str>,
}

impl<'a> Lines<'a> {
    fn new(text: &'a str) -> Self {
        Lines {
            rest: Some(text),
            peeked: None,
        }
    }

    fn raw(&mut self) -> Option<&'a str> {
        let rest = self.rest?;
        match rest.find('\n') {
            Some(i) => {
                self.rest = Some(&rest[i + 1..]);
                Some(&rest[..i])
            }
            None => {
                self.rest = None;
                Some(rest)
            }
        }
    }

    fn next(&mut self) -> Option<&'a str> {
        if let Some(line) = self.peeked.take() {
            return Some(line);
        }
        loop {
            let line = self.raw()?;
            if !(line.is_empty() || line.starts_with('#')) {
                return Some(line);
            }
        }
    }

    fn peek(&mut self) -> Option<&'a str> {
        if self.peeked.is_none() {
            self.peeked = self.next();
        }
        self.peeked
    }
}

/// `key:` or `key: value` at the start of `line`: the key resolved, and the value's text with
/// its surrounding spaces removed (empty for none). `None` when the line is not that shape.
fn key_line(line: &str) -> Option<(Value, &str)> {
    let b = line.as_bytes();
    if !matches!(b.first(), Some(b'a'..=b'z' | b'A'..=b'Z' | b'_')) {
        return None;
    }
    let end = b
        .iter()
        .position(|c| !matches!(c, b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'_' | b'-'))?;
    if end > MAX_KEY || b[end] != b':' {
        return None;
    }
    let after = &line[end + 1..];
    if !(after.is_empty() || after.starts_with(' ')) {
        return None;
    }
    let key = resolve_plain(&line[..end]).ok()?;
    Some((key, after.trim_matches(' ')))
}

/// Spaces at the start of `line`.
fn indent_of(line: &str) -> usize {
    line.len() - line.trim_start_matches(' ').len()
}

/// What follows a `key:` with nothing after it: a block list (at column 0 or indented), a
/// mapping indented under it, or nothing (null).
fn block_under(lines: &mut Lines<'_>) -> Option<Value> {
    let Some(next) = lines.peek() else {
        return Some(Value::Null);
    };
    let indent = indent_of(next);
    let body = &next[indent..];
    if body == "-" || body.starts_with("- ") {
        return block_list(lines, indent);
    }
    if indent == 0 {
        return Some(Value::Null);
    }
    nested_map(lines, indent)
}

/// Whether a content line ends the block at `indent`: it starts at column 0 and is not an
/// item of a column-0 list. A line between is refused by the caller.
fn ends_block(line: &str) -> bool {
    !(line.starts_with(' ') || line == "-" || line.starts_with("- "))
}

/// Items `- scalar` at exactly `indent` spaces, up to the next top-level line.
fn block_list(lines: &mut Lines<'_>, indent: usize) -> Option<Value> {
    let mut items = Vec::new();
    while let Some(line) = lines.peek() {
        let at = indent_of(line);
        let body = &line[at..];
        let is_item = body == "-" || body.starts_with("- ");
        if at != indent || !is_item {
            if at == 0 && !is_item {
                break;
            }
            return None;
        }
        lines.next();
        let item = body[1..].trim_matches(' ');
        items.push(if item.is_empty() {
            Value::Null
        } else {
            scalar(item)?
        });
    }
    Some(Value::Seq(items))
}

/// `key: value` lines at exactly `indent` spaces, up to the next top-level line.
fn nested_map(lines: &mut Lines<'_>, indent: usize) -> Option<Value> {
    let mut map = Mapping::new();
    while let Some(line) = lines.peek() {
        let at = indent_of(line);
        if at == 0 && ends_block(line) {
            break;
        }
        if at != indent {
            return None;
        }
        lines.next();
        let (key, rest) = key_line(&line[indent..])?;
        let value = if rest.is_empty() {
            // Something under a nested `key:` (deeper, or a list at its own column) is a level
            // this reader does not take.
            match lines.peek() {
                Some(n) if indent_of(n) > indent => return None,
                Some(n) if indent_of(n) == indent && n[indent..].starts_with('-') => return None,
                _ => Value::Null,
            }
        } else {
            inline(rest)?
        };
        map.insert(key, value);
    }
    Some(Value::Map(map))
}

/// A value written on its key's line: a scalar, a flow list of plain scalars, `[]` or `{}`.
fn inline(text: &str) -> Option<Value> {
    if let Some(inner) = text.strip_prefix('[') {
        let inner = inner.strip_suffix(']')?.trim_matches(' ');
        if inner.is_empty() {
            return Some(Value::Seq(Vec::new()));
        }
        return inner
            .split(',')
            .map(|item| flow_item(item.trim_matches(' ')))
            .collect::<Option<Vec<_>>>()
            .map(Value::Seq);
    }
    if let Some(inner) = text.strip_prefix('{') {
        return (inner.strip_suffix('}')?.trim_matches(' ').is_empty())
            .then(|| Value::Map(Mapping::new()));
    }
    scalar(text)
}

/// A one-line scalar (no surrounding spaces): single- or double-quoted, or plain.
fn scalar(text: &str) -> Option<Value> {
    match text.as_bytes()[0] {
        b'\'' => single_quoted(text),
        b'"' => {
            let inner = text.get(1..)?.strip_suffix('"')?;
            (!inner.contains(['"', '\\'])).then(|| Value::Str(inner.to_string()))
        }
        _ => plain(text, false),
    }
}

/// `'…'` on one line, `''` standing for a quote.
fn single_quoted(text: &str) -> Option<Value> {
    let inner = text.get(1..)?.strip_suffix('\'')?;
    if !inner.contains('\'') {
        return Some(Value::Str(inner.to_string()));
    }
    let mut out = String::with_capacity(inner.len());
    let mut parts = inner.split('\'');
    out.push_str(parts.next()?);
    // Between two quotes of a pair the split yields an empty part; any other quote is lone.
    while let Some(empty) = parts.next() {
        if !empty.is_empty() {
            return None;
        }
        out.push('\'');
        out.push_str(parts.next()?);
    }
    Some(Value::Str(out))
}

/// An item of a one-line flow list.
fn flow_item(text: &str) -> Option<Value> {
    // The full reader refuses a word `-` right before the item's end (a `,` or `]` follows it),
    // where PyYAML reads it as part of the scalar: left to the full reader, so both agree.
    if text.is_empty() || text.contains([',', '[', ']', '{', '}', ':', '#']) || text.ends_with(" -")
    {
        return None;
    }
    plain(text, true)
}

/// A plain scalar of one line (no surrounding spaces), typed as the full reader types it.
fn plain(text: &str, in_flow: bool) -> Option<Value> {
    let b = text.as_bytes();
    match b[0] {
        b'-' if in_flow || matches!(b.get(1), None | Some(b' ')) => return None,
        b'?' | b':' | b',' | b'[' | b']' | b'{' | b'}' | b'#' | b'&' | b'*' | b'!' | b'|'
        | b'>' | b'\'' | b'"' | b'%' | b'@' | b'`' => return None,
        _ => {}
    }
    for (i, c) in b.iter().enumerate() {
        match c {
            b':' if matches!(b.get(i + 1), None | Some(b' ')) => return None,
            b'#' if b[i - 1] == b' ' => return None,
            _ => {}
        }
    }
    // A plain `<<` as a value is refused by the full reader, with its line.
    resolve_plain(text)
        .ok()
        .filter(|v| !super::resolve::is_merge_marker(v))
}

#[cfg(test)]
mod tests {
    use super::load;
    use crate::yaml::load::load_full;
    use proptest::prelude::*;

    /// The promise, on one text: accepted means equal to the full reader's value (compared
    /// by their debug text, so that a NaN equals itself). Whether it was accepted.
    #[track_caller]
    fn same(text: &str) -> bool {
        let Some(fast) = load(text) else {
            return false;
        };
        assert_eq!(
            format!("{:?}", Ok::<_, crate::yaml::YamlError>(fast)),
            format!("{:?}", load_full(text)),
            "{text:?}"
        );
        true
    }

    #[track_caller]
    fn accepted(text: &str) {
        assert!(load(text).is_some(), "fell back on {text:?}");
        same(text);
    }

    #[track_caller]
    fn falls_back(text: &str) {
        assert_eq!(load(text), None, "accepted {text:?}");
    }

    #[test]
    fn plain_reads_the_contracts_polisd_and_the_bench_write() {
        accepted(
            "contract_id: fix-the-parser-edge-cases\ntitle: 'Fix the parser: edge cases'\n\
             opened_by: claude-code-1\nopened_at: '2026-12-01 15:08:35'\nowner: claude-code-1\n\
             status: settled\nstakes: medium\nrequired_tags:\n- python\n- docs\ndeadline: null\n\
             cost_ceiling: medium\nacceptance_criteria:\n- tests pass\nrouting:\n  \
             recommended_by_router: null\n  recommendation_score: null\n  exploration: null\n  \
             override: null\nreview:\n  required: false\n  reviewer: null\n  status: null\n\
             settled_at: \"2026-12-01 15:08:37\"\nquality_score: 4\nactual_minutes: 30",
        );
        accepted(
            "contract_id: c-000001\ntitle: Contract 1\nopened_by: claude-code-1\n\
             opened_at: 2026-01-01 00:01:00\nowner: codex-agent-2\nstatus: settled\n\
             stakes: medium\nrequired_tags: [python, docs]\ncost_ceiling: medium\n\
             settled_at: 2026-01-01 00:01:00\nquality_score: 4\nactual_minutes: 120",
        );
        accepted("");
        accepted("# only a comment\n\n");
        accepted("a: []\nb: {}\nc: [ ]\nd:\ne: ~\n");
        accepted("a:\n  - x\n  -\n  - 'y'\n# c\nb: 1\n");
        accepted("a: don't panic\nb: 'it''s'\nc: \"é ✓\"\nd: C#, [x] {y}\ne: http://x:80/p\n");
        accepted("yes: 1\nnull: 2\nk: -5\nl: 0x1F\nm: 1:30\nn: 2026-03-02\no: .inf\n");
    }

    #[test]
    fn plain_falls_back_on_every_shape_it_cannot_prove() {
        for text in [
            // quotes it does not take
            "a: 'multi\n  line'\n",
            // a word `-` before a flow list's `,` or `]` (the full reader refuses it)
            "a: [x -, y]\n",
            "a: [a\" -]\n",
            "a: \"esc\\n\"\n",
            "a: 'x' y\n",
            "a: 'lone ' quote'\n",
            "'quoted key': 1\n",
            // anchors, aliases, tags, block scalars, directives, documents
            "a: &x 1\nb: *x\n",
            "a: R&D\n",
            "a: !!str 1\n",
            "a: |\n  text\n",
            "a: >-\n  text\n",
            "%YAML 1.1\n---\na: 1\n",
            "---\na: 1\n",
            "a: 1\n...\n",
            // multi-line plain scalars, nesting, odd indentation
            "a: one\n  two\n",
            "a:\n  b:\n    c: 1\n",
            "a:\n  b:\n  - 1\n",
            "a:\n  - x\n   - y\n",
            "a:\n  - x\n - y\n",
            "a:\n- - x\n",
            "a:\n- k: v\n",
            "a: [x, [y]]\n",
            "a: [x, {y: 1}]\n",
            "a: {b: 1}\n",
            "a: [x, ]\n",
            "a: [x,\n  y]\n",
            "- a\n- b\n",
            // comments where they are not whole lines at column 0, blank lines with spaces
            "a: x # c\n",
            "a:\n  # c\n  b: 1\n",
            "a: 1\n   \nb: 2\n",
            // mapping values and indicators inside scalars
            "a: b: c\n",
            "a: b:\n",
            "a: - x\n",
            "a: -\n",
            "a: ? x\n",
            "a: @x\n",
            "a: `x`\n",
            "a: [-x]\n",
            "a: [x:y]\n",
            "key : v\n",
            "key:v\n",
            // bytes it refuses whole
            "a: x\tb\n",
            "\ta: 1\n",
            "a: 1\r\nb: 2\r\n",
            "\u{feff}a: 1\n",
            "a: x\u{85}y\n",
            "a: x\u{2028}y\n",
            "a: x\u{0}y\n",
            // scalars the full reader refuses (its finding names the line)
            "a: 2026-02-30\n",
            "a: =\n",
        ] {
            falls_back(text);
        }
        falls_back(&"a: x\n".repeat(super::MAX_BYTES / 4));
        falls_back(&format!("{}: 1\n", "k".repeat(200)));
    }

    /// A scalar as a generator writes one: mostly words, with the characters that make YAML
    /// hard mixed in.
    fn scalar_text() -> impl Strategy<Value = String> {
        let atom = prop_oneof![
            12 => "[a-z]{1,6}",
            2 => "(yes|No|on|OFF|true|null|Null|~|=|<<|-|--|---|\\.\\.\\.|\\.inf|\\.NaN)",
            2 => "[-+]?[0-9]{1,4}([._:][0-9]{1,3})?(e[-+]?[0-9])?",
            1 => "0[xob][0-9a-fA-F_]{1,4}",
            2 => "20[0-9]{2}-[01]?[0-9]-[0-3]?[0-9]([ Tt][0-2][0-9]:[0-5][0-9](:[0-5][0-9](\\.[0-9]{1,7})?)?( ?(Z|[-+][0-9]{1,2}(:[0-9]{2})?))?)?",
            3 => "[ :#,'\"\\[\\]{}&*!|>%@`?\\-\\\\]",
            2 => "( #|#| :|: | - |- |\\? |''|' | '|\" | \"|, | \\[|\\] |\\{ |  )",
            1 => "[\t\r\u{0}\u{85}\u{2028}\u{feff}é✓]",
        ];
        proptest::collection::vec(atom, 1..4).prop_map(|v| v.concat())
    }

    fn value_text() -> impl Strategy<Value = String> {
        prop_oneof![
            4 => scalar_text(),
            1 => scalar_text().prop_map(|s| format!("'{s}'")),
            1 => scalar_text().prop_map(|s| format!("\"{s}\"")),
            1 => proptest::collection::vec(scalar_text(), 0..4)
                .prop_map(|v| format!("[{}]", v.join(", "))),
            1 => Just("{}".to_string()),
            1 => Just(String::new()),
        ]
    }

    fn key_text() -> impl Strategy<Value = String> {
        prop_oneof![
            6 => "[a-z_][a-z0-9_-]{0,10}",
            1 => "(yes|on|null|True|x y|'q'|-a|1a|<<|\\? k|k )",
        ]
    }

    fn line() -> impl Strategy<Value = String> {
        let indent = prop_oneof![4 => Just(String::new()), 4 => Just("  ".to_string()), 1 => "( {1,4}|\t)".prop_map(|s| s)];
        prop_oneof![
            6 => (key_text(), value_text()).prop_map(|(k, v)| format!("{k}: {v}")),
            2 => key_text().prop_map(|k| format!("{k}:")),
            3 => (indent.clone(), value_text()).prop_map(|(i, v)| format!("{i}- {v}")),
            3 => (indent, key_text(), value_text()).prop_map(|(i, k, v)| format!("{i}{k}: {v}")),
            1 => "( *#.{0,6}|  *|---|\\.\\.\\.|-|&a x|[|]|'|x)",
            1 => Just(String::new()),
        ]
    }

    fn document() -> impl Strategy<Value = String> {
        (
            proptest::collection::vec(line(), 0..10),
            proptest::bool::ANY,
        )
            .prop_map(|(lines, nl)| {
                let mut text = lines.join("\n");
                if nl {
                    text.push('\n');
                }
                text
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1500))]

        /// The fast reader's promise: whatever it accepts, the full reader reads the same.
        #[test]
        fn plain_equals_full_reader(text in document()) {
            same(&text);
        }
    }

    /// The generator is not vacuous: of its documents, many are accepted (and so compared) and
    /// many fall back.
    #[test]
    fn plain_differential_covers_both_outcomes() {
        use proptest::strategy::ValueTree;
        let mut runner = proptest::test_runner::TestRunner::deterministic();
        let strategy = document();
        let (mut accepted, total) = (0, 2000);
        for _ in 0..total {
            let text = strategy.new_tree(&mut runner).unwrap().current();
            accepted += usize::from(same(&text));
        }
        eprintln!("{accepted} of {total} generated documents read by the plain reader");
        assert!(
            accepted > total / 10 && accepted < total * 9 / 10,
            "{accepted} of {total} accepted"
        );
    }
}
