//! Reading YAML text into [`Value`]s with PyYAML's safe-loader typing.
//!
//! yaml-rust2 supplies the events (it is a maintained, pure-Rust YAML parser); this module owns
//! the typing (PyYAML's YAML 1.1 implicit resolvers and constructors), merge keys, and the
//! limits that keep a hostile file from exhausting memory or the stack. It never panics on
//! input: the parser is driven iteratively and guarded.

use super::quote::quoted;
use super::resolve::{
    construct_float, construct_int, construct_timestamp, is_merge_marker, resolve_plain, MERGE_KEY,
    TIMESTAMP,
};
use super::value::{Mapping, Value};
use std::collections::HashMap;
use yaml_rust2::parser::{Event, Parser, Tag};
use yaml_rust2::scanner::TScalarStyle;

/// Deepest nesting accepted. PyYAML itself stops near Python's recursion limit; real protocol
/// files nest a few levels.
pub const MAX_DEPTH: usize = 128;
/// Most nodes a document may produce, counting every node an alias copies. This is what turns
/// a "billion laughs" file into a finding instead of a hang.
pub const MAX_NODES: usize = 1_000_000;
/// Nodes a document may produce per byte of its text (with a floor of [`MIN_NODE_BUDGET`]):
/// a plain document has at most one node per two bytes, so this leaves room for real aliases
/// while a 1.5 KB alias bomb stops at about 24,000 nodes (a few MB), not at [`MAX_NODES`].
pub const NODES_PER_BYTE: usize = 16;
pub const MIN_NODE_BUDGET: usize = 4096;

/// The node budget of a text of `len` bytes.
pub fn node_budget(len: usize) -> usize {
    len.saturating_mul(NODES_PER_BYTE)
        .clamp(MIN_NODE_BUDGET, MAX_NODES)
}

/// Why a YAML text could not be read. `line` is 1-based within the text given.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message} (line {line})")]
pub struct YamlError {
    pub line: usize,
    pub message: String,
}

/// Reads one YAML document. An empty document is `Null`, as `yaml.safe_load` gives `None`.
/// Text in the plain shape most protocol files have is read by [`super::plain`], which yields
/// exactly what [`load_full`] would; anything else by [`load_full`].
pub fn load(text: &str) -> Result<Value, YamlError> {
    match super::plain::load(text) {
        Some(value) => Ok(value),
        None => load_full(text),
    }
}

/// [`load`] through yaml-rust2's events, for every text.
pub fn load_full(text: &str) -> Result<Value, YamlError> {
    // PyYAML's reader drops a byte-order mark at the start of the stream.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    // What PyYAML refuses is invalid here too, even where yaml-rust2 would read it.
    if let Some((line, message)) = super::strict::check(text) {
        return Err(YamlError { line, message });
    }
    // yaml-rust2 is not written to be panic-free on every malformed input; a panic there must
    // become a finding, never a crashed daemon.
    match std::panic::catch_unwind(|| Loader::new(text).run()) {
        Ok(result) => result,
        Err(_) => Err(YamlError {
            line: 1,
            message: "the YAML parser could not read this text".to_string(),
        }),
    }
}

enum Frame {
    Seq(Vec<Value>, usize),
    Map(Mapping, Option<Value>, usize, Vec<Value>),
}

struct Loader<'a> {
    text: &'a str,
    parser: Parser<std::str::Chars<'a>>,
    anchors: HashMap<usize, Value>,
    stack: Vec<Frame>,
    nodes: usize,
    budget: usize,
    documents: usize,
    root: Option<Value>,
}

impl<'a> Loader<'a> {
    fn new(text: &'a str) -> Self {
        Loader {
            text,
            parser: Parser::new_from_str(text),
            anchors: HashMap::new(),
            stack: Vec::new(),
            nodes: 0,
            budget: node_budget(text.len()),
            documents: 0,
            root: None,
        }
    }

    fn run(mut self) -> Result<Value, YamlError> {
        loop {
            let (event, mark) = self.parser.next_token().map_err(|e| YamlError {
                line: e.marker().line(),
                message: e.info().to_string(),
            })?;
            let line = mark.line();
            match event {
                Event::StreamEnd => break,
                Event::DocumentStart => {
                    self.documents += 1;
                    if self.documents > 1 {
                        return Err(err(line, "expected a single document but found another"));
                    }
                }
                Event::Nothing | Event::StreamStart | Event::DocumentEnd => {}
                Event::Alias(id) => {
                    // Counted before it is copied: the copy is what costs the memory.
                    let size = self.anchors.get(&id).map(count_nodes).ok_or_else(|| {
                        err(line, "found an alias to an anchor that is not defined")
                    })?;
                    self.count(size, line)?;
                    let value = self.anchors.get(&id).cloned().unwrap_or(Value::Null);
                    self.push_value(value, None, line)?;
                }
                Event::Scalar(text, style, anchor, tag) => {
                    self.count(1, line)?;
                    let block = matches!(style, TScalarStyle::Literal | TScalarStyle::Folded);
                    let text = if block && !text.is_empty() && text.bytes().all(|b| b == b'\n') {
                        empty_block_scalar(self.text, mark.index())
                    } else {
                        text
                    };
                    let value = resolve_scalar(&text, style, tag.as_ref())
                        .map_err(|message| err(line, &message))?;
                    self.push_value(value, Some(anchor), line)?;
                }
                Event::SequenceStart(anchor, _) => {
                    self.count(1, line)?;
                    self.open(Frame::Seq(Vec::new(), anchor), line)?;
                }
                Event::MappingStart(anchor, _) => {
                    self.count(1, line)?;
                    self.open(Frame::Map(Mapping::new(), None, anchor, Vec::new()), line)?;
                }
                Event::SequenceEnd => {
                    let Some(Frame::Seq(items, anchor)) = self.stack.pop() else {
                        return Err(err(line, "unbalanced sequence"));
                    };
                    self.push_value(Value::Seq(items), Some(anchor), line)?;
                }
                Event::MappingEnd => {
                    let Some(Frame::Map(map, _, anchor, merges)) = self.stack.pop() else {
                        return Err(err(line, "unbalanced mapping"));
                    };
                    let map = apply_merges(map, merges).map_err(|m| err(line, &m))?;
                    self.push_value(Value::Map(map), Some(anchor), line)?;
                }
            }
        }
        Ok(self.root.unwrap_or(Value::Null))
    }

    fn count(&mut self, n: usize, line: usize) -> Result<(), YamlError> {
        self.nodes = self.nodes.saturating_add(n);
        if self.nodes > self.budget {
            return Err(err(
                line,
                &format!(
                    "the document expands to more than {} nodes, {NODES_PER_BYTE} per byte of its \
                     text (an alias bomb?); polisd stops there",
                    self.budget
                ),
            ));
        }
        Ok(())
    }

    fn open(&mut self, frame: Frame, line: usize) -> Result<(), YamlError> {
        if self.stack.len() >= MAX_DEPTH {
            return Err(err(
                line,
                &format!("nesting is deeper than {MAX_DEPTH} levels"),
            ));
        }
        self.stack.push(frame);
        Ok(())
    }

    fn push_value(
        &mut self,
        value: Value,
        anchor: Option<usize>,
        line: usize,
    ) -> Result<(), YamlError> {
        if let Some(id) = anchor.filter(|id| *id > 0) {
            self.anchors.insert(id, value.clone());
        }
        let is_key = matches!(self.stack.last(), Some(Frame::Map(_, None, _, _)));
        if !is_key && is_merge_marker(&value) {
            // PyYAML types a plain `<<` with the merge tag wherever it stands, and its safe
            // loader constructs that tag only as a mapping's key.
            return Err(err(
                line,
                "could not determine a constructor for the tag 'tag:yaml.org,2002:merge' \
                 (a plain `<<` is only a mapping's merge key; quote it to mean the text)",
            ));
        }
        match self.stack.last_mut() {
            None => self.root = Some(value),
            Some(Frame::Seq(items, _)) => items.push(value),
            Some(Frame::Map(map, pending_key, _, merges)) => match pending_key.take() {
                None => {
                    if matches!(value, Value::Seq(_) | Value::Map(_)) {
                        return Err(err(
                            line,
                            "found an unhashable key (a list or mapping used as a key)",
                        ));
                    }
                    *pending_key = Some(value);
                }
                Some(key) if key == Value::Str(MERGE_KEY.to_string()) => merges.push(value),
                Some(key) => map.insert(key, value),
            },
        }
        Ok(())
    }
}

/// The value of a block scalar (`|` or `>`) with no content line, whose header is at char
/// `at` of `text`: yaml-rust2 reads one at the end of the text as a line break, PyYAML as
/// nothing, unless its `+` keeps the blank lines that follow (one break each).
fn empty_block_scalar(text: &str, at: usize) -> String {
    let from: String = text.chars().skip(at + 1).collect();
    let (header, rest) = from.split_once('\n').unwrap_or((from.as_str(), ""));
    let keep = header
        .chars()
        .take_while(|c| matches!(c, '+' | '-' | '0'..='9'))
        .any(|c| c == '+');
    if !keep {
        return String::new();
    }
    let lines = rest
        .split_inclusive('\n')
        .take_while(|l| l.ends_with('\n') && l.trim_matches([' ', '\t', '\r', '\n']).is_empty())
        .count();
    "\n".repeat(lines)
}

fn apply_merges(map: Mapping, merges: Vec<Value>) -> Result<Mapping, String> {
    if merges.is_empty() {
        return Ok(map);
    }
    // PyYAML puts merged keys first, later sources losing to earlier ones, and the mapping's
    // own keys win over all of them.
    let mut merged = Mapping::new();
    for source in merges {
        let sources = match source {
            Value::Map(m) => vec![m],
            Value::Seq(items) => items
                .into_iter()
                .map(|v| match v {
                    Value::Map(m) => Ok(m),
                    _ => Err("expected a mapping for merging".to_string()),
                })
                .collect::<Result<Vec<_>, _>>()?
                .into_iter()
                .rev()
                .collect(),
            _ => return Err("expected a mapping or list of mappings for merging".to_string()),
        };
        for m in sources {
            for (k, v) in m.iter() {
                merged.insert(k.clone(), v.clone());
            }
        }
    }
    for (k, v) in map.iter() {
        merged.insert(k.clone(), v.clone());
    }
    Ok(merged)
}

fn count_nodes(value: &Value) -> usize {
    match value {
        Value::Seq(items) => 1 + items.iter().map(count_nodes).sum::<usize>(),
        Value::Map(m) => {
            1 + m
                .iter()
                .map(|(k, v)| count_nodes(k) + count_nodes(v))
                .sum::<usize>()
        }
        _ => 1,
    }
}

fn err(line: usize, message: &str) -> YamlError {
    YamlError {
        line: line.max(1),
        message: message.to_string(),
    }
}

fn resolve_scalar(text: &str, style: TScalarStyle, tag: Option<&Tag>) -> Result<Value, String> {
    if let Some(tag) = tag {
        return resolve_tagged(text, style, tag);
    }
    match style {
        TScalarStyle::Plain => resolve_plain(text),
        _ => Ok(Value::Str(text.to_string())),
    }
}

fn resolve_tagged(text: &str, style: TScalarStyle, tag: &Tag) -> Result<Value, String> {
    let full = format!("{}{}", tag.handle, tag.suffix);
    let name = full
        .strip_prefix("tag:yaml.org,2002:")
        .unwrap_or(full.as_str());
    match name {
        "!" | "str" => Ok(Value::Str(text.to_string())),
        "null" => Ok(Value::Null),
        "bool" => match resolve_plain(text)? {
            v @ Value::Bool(_) => Ok(v),
            _ => Err(format!("'{}' is not a boolean", quoted(text))),
        },
        "int" => construct_int(text),
        "float" => Ok(Value::Float(construct_float(text)?)),
        "timestamp" if TIMESTAMP.is_match(text) => construct_timestamp(text),
        _ if style != TScalarStyle::Plain || !name.is_empty() => Err(format!(
            "could not determine a constructor for the tag '{}'",
            quoted(&full)
        )),
        _ => resolve_plain(text),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::yaml::resolve::*;
    use chrono::NaiveDate;

    proptest::proptest! {
        /// The point-decimal shortcut is taken only where the resolver's patterns would make a
        /// float of the text.
        #[test]
        fn a_point_decimal_is_what_the_patterns_call_a_float(text in "[0-9._eE+:-]{1,9}") {
            if is_point_decimal(&text) {
                proptest::prop_assert!(!INT.is_match(&text) && FLOAT.is_match(&text), "{}", text);
            }
        }
    }

    proptest::proptest! {
        /// What the shortcut calls no number, neither pattern matches.
        #[test]
        fn what_may_be_number_rules_out_the_patterns_never_match(
            text in "[0-9._eE+:xbaifnINFA -]{1,12}",
        ) {
            if !may_be_number(&text) {
                proptest::prop_assert!(!INT.is_match(&text) && !FLOAT.is_match(&text), "{}", text);
            }
        }
    }

    #[test]
    fn dates_and_timestamps_are_no_numbers_and_numbers_may_be() {
        for text in [
            "2026-12-01",
            "2026-12-01 10:00:00",
            "2026-12-01T10:00:00Z",
            "v1",
        ] {
            assert!(!may_be_number(text), "{text:?}");
        }
        for text in [
            "-1", "0x1f", "1.5e-3", "-.inf", ".NaN", "1:30", "0b101", "1_000",
        ] {
            assert!(may_be_number(text), "{text:?}");
            assert!(INT.is_match(text) || FLOAT.is_match(text), "{text:?}");
        }
    }

    #[test]
    fn point_decimals_are_told_from_other_numbers() {
        assert!(is_point_decimal("0.15") && is_point_decimal("10.5"));
        for text in [
            "1.", ".5", "1.2.3", "1_0.5", "-0.5", "1e5", "1.5e+3", "0.1a", "",
        ] {
            assert!(!is_point_decimal(text), "{text:?}");
        }
        assert_eq!(resolve_plain("0.15"), Ok(Value::Float(0.15)));
    }

    fn one(text: &str) -> Value {
        load(&format!("k: {text}\n")).unwrap().get("k").clone()
    }

    #[test]
    fn yaml11_booleans_in_pyyaml_casings_only() {
        for t in ["yes", "Yes", "YES", "on", "ON", "true", "True"] {
            assert_eq!(one(t), Value::Bool(true), "{t}");
        }
        for t in ["no", "No", "off", "Off", "false", "FALSE"] {
            assert_eq!(one(t), Value::Bool(false), "{t}");
        }
        assert_eq!(one("yEs"), Value::Str("yEs".into()));
        assert_eq!(one("'yes'"), Value::Str("yes".into()));
    }

    #[test]
    fn dates_datetimes_and_quoted_strings() {
        assert_eq!(
            one("2026-03-02"),
            Value::Date(NaiveDate::from_ymd_opt(2026, 3, 2).unwrap())
        );
        assert!(
            matches!(one("2026-03-02 10:11:12"), Value::DateTime(t) if t.offset_seconds.is_none())
        );
        // PyYAML needs seconds for a datetime: without them it is a string.
        assert_eq!(
            one("2026-03-02 10:11"),
            Value::Str("2026-03-02 10:11".into())
        );
        assert_eq!(one("'2026-03-02'"), Value::Str("2026-03-02".into()));
        assert!(load("k: 2026-02-30\n").is_err());
        assert!(
            matches!(one("2026-03-02T10:11:12Z"), Value::DateTime(t) if t.offset_seconds == Some(0))
        );
    }

    #[test]
    fn an_offset_of_a_day_or_more_is_refused_as_pyyaml_refuses_it() {
        // Python's timezone wants an offset strictly within a day; PyYAML's load fails.
        for bad in ["+99:99", "+24:00", "-24", "+24"] {
            let e = load(&format!("settled_at: 2026-12-07 10:00:00{bad}\n")).unwrap_err();
            assert_eq!(e.line, 1, "{e}");
            assert!(e.message.contains("offset"), "{e}");
        }
        assert!(matches!(
            one("2026-12-07 10:00:00+23:59"),
            Value::DateTime(t) if t.offset_seconds == Some(86_340)
        ));
        assert!(matches!(
            one("2026-12-07 10:00:00-5:61"),
            Value::DateTime(t) if t.offset_seconds == Some(-21_660)
        ));
    }

    #[test]
    fn nulls_numbers_and_sexagesimals() {
        assert_eq!(one("~"), Value::Null);
        assert_eq!(one(""), Value::Null);
        assert_eq!(one("Null"), Value::Null);
        assert_eq!(one("012"), Value::Int(10));
        assert_eq!(one("0x1F"), Value::Int(31));
        assert_eq!(one("1:30"), Value::Int(90));
        assert_eq!(one("1_000"), Value::Int(1000));
        assert_eq!(one("1e3"), Value::Str("1e3".into()));
        assert_eq!(one("1.5"), Value::Float(1.5));
        assert_eq!(one("1."), Value::Float(1.0));
        assert_eq!(one(".inf"), Value::Float(f64::INFINITY));
        assert_eq!(
            one("99999999999999999999999"),
            Value::BigInt("99999999999999999999999".into())
        );
    }

    #[test]
    fn a_plain_merge_tag_outside_a_key_is_refused_as_pyyaml_refuses_it() {
        for bad in [
            "title: <<\n",
            "- <<\n",
            "a: [x, <<]\n",
            "<<\n",
            "a: {b: <<}\n",
        ] {
            let e = load(bad).expect_err(bad);
            assert!(
                e.to_string().contains("tag:yaml.org,2002:merge"),
                "{bad:?}: {e}"
            );
        }
        assert_eq!(
            load("title: '<<'\n").unwrap().get("title"),
            &Value::Str("<<".into())
        );
        let merged = load("base: &b {a: 1}\nx: {<<: *b}\n").unwrap();
        assert_eq!(merged.get("x").get("a"), &Value::Int(1));
    }

    #[test]
    fn an_empty_block_scalar_reads_as_pyyaml_reads_it() {
        for (text, want) in [
            ("k: |\n", ""),
            ("k: >\n", ""),
            ("k: |-\n", ""),
            ("k: |\n\n\n", ""),
            ("k: |2\n", ""),
            ("k: |\n  \n", ""),
            ("k: |+\n", ""),
            ("k: |+\n\n\n", "\n\n"),
            ("k: >+\n\n", "\n"),
            ("k: |\n  a\n", "a\n"),
            ("k: |\nn: 1\n", ""),
        ] {
            assert_eq!(
                load(text).unwrap().get("k"),
                &Value::Str(want.into()),
                "{text:?}"
            );
        }
    }

    #[test]
    fn merge_keys_and_aliases() {
        let v = load("base: &b {a: 1, b: 2}\nx:\n  <<: *b\n  b: 3\n").unwrap();
        assert_eq!(v.get("x").get("a"), &Value::Int(1));
        assert_eq!(v.get("x").get("b"), &Value::Int(3));
    }

    #[test]
    fn alias_bomb_is_an_error_not_a_hang() {
        let mut text = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 1..12 {
            let prev = i - 1;
            text.push_str(&format!(
                "a{i}: &a{i} [*a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}]\n"
            ));
        }
        let e = load(&text).unwrap_err();
        assert!(e.message.contains("alias bomb"), "{e}");
    }

    #[test]
    fn deep_nesting_is_an_error() {
        let text = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
        assert!(load(&text).is_err());
    }

    #[test]
    fn errors_name_the_line() {
        let e = load("a: 1\nb: [1, 2\nc: 3\n").unwrap_err();
        assert!(e.line >= 2, "{e:?}");
    }

    #[test]
    fn leading_bom_is_not_part_of_the_first_key() {
        assert_eq!(load("\u{feff}k: 1\n").unwrap().get("k"), &Value::Int(1));
    }

    /// What [`resolve_plain`] decided before its shortcuts: every pattern asked in order.
    fn resolve_by_patterns(text: &str) -> Result<Value, String> {
        let words = resolve_plain(text);
        if matches!(words, Ok(Value::Bool(_) | Value::Null)) || text == "<<" || text == "=" {
            return words;
        }
        if INT.is_match(text) {
            return construct_int(text);
        }
        if FLOAT.is_match(text) {
            return Ok(Value::Float(construct_float(text)?));
        }
        if text.len() >= 8 && is_timestamp_by_regex(text) {
            return construct_timestamp_by_regex(text);
        }
        Ok(Value::Str(text.to_string()))
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(3000))]

        /// The resolver's shortcuts (a first character no number starts with, a plain decimal,
        /// the two common timestamp layouts) decide what the patterns decide.
        #[test]
        fn resolve_shortcuts_agree_with_the_patterns(
            text in "([-+.]?[0-9]{1,4}|[a-zA-Z~<=]{1,3}|20[0-9]{2}-[0-9]{1,2}-[0-9]{1,2}([ Tt][0-9]{1,2}:[0-9]{2}:[0-9]{2}(\\.[0-9]{0,3})?Z?)?)([-_:.0-9a-z ]{0,4})"
        ) {
            // NaN is not equal to itself: compare floats by their bits.
            let key = |r: Result<Value, String>| match r {
                Ok(Value::Float(f)) => Err(format!("float {}", f.to_bits())),
                other => other,
            };
            proptest::prop_assert_eq!(key(resolve_plain(&text)), key(resolve_by_patterns(&text)), "{:?}", text);
        }
    }

    #[test]
    fn common_timestamps_read_as_the_pattern_reads_them() {
        for t in [
            "2026-03-02",
            "2026-02-30",
            "2026-03-02 10:11:12",
            "2026-03-02T23:59:59",
            "2026-03-02t24:00:00",
            "2026-13-02 10:11:12",
            "0000-01-01",
        ] {
            assert_eq!(
                construct_timestamp(t),
                construct_timestamp_by_regex(t),
                "{t}"
            );
            assert!(is_timestamp(t) && is_timestamp_by_regex(t), "{t}");
        }
    }

    #[test]
    fn second_document_is_an_error() {
        assert!(load("a: 1\n---\nb: 2\n").is_err());
    }
}
