//! A settings file as an agent CLI reads it, with the place of every value in the text, so that
//! polisd's edit splices its own entries in and out and leaves every other byte as it was: a
//! person's comments, spacing and key order.
//!
//! Two dialects. Strict JSON, as Claude Code and Codex CLI read theirs; and JSON with `//` and
//! `/* */` comments outside strings, as Gemini CLI 0.61.0 reads `settings.json` (the
//! `strip-json-comments` package, which blanks them, then `JSON.parse`: so no trailing commas).
//! A key an object repeats is kept in the tree as the last one (as `JSON.parse` and serde_json
//! take it) and listed with its line, because Codex refuses a file that repeats a key it reads.
//!
//! The tree is [`Json`], whose objects keep their keys in file order. Pure: text in, tree or
//! text out. Must never panic on any input (nesting is bounded).

use serde::ser::{SerializeMap, SerializeSeq, Serializer};
use serde::Serialize;

/// A JSON value whose objects keep their keys in file order.
#[derive(Debug, Clone, PartialEq)]
pub enum Json {
    Null,
    Bool(bool),
    Num(serde_json::Number),
    Str(String),
    Arr(Vec<Json>),
    Obj(Vec<(String, Json)>),
}

impl Json {
    pub fn get(&self, key: &str) -> Option<&Json> {
        match self {
            Json::Obj(entries) => entries.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Json::Str(s) => Some(s),
            _ => None,
        }
    }

    pub fn type_name(&self) -> &'static str {
        match self {
            Json::Null => "null",
            Json::Bool(_) => "a boolean",
            Json::Num(_) => "a number",
            Json::Str(_) => "a string",
            Json::Arr(_) => "an array",
            Json::Obj(_) => "an object",
        }
    }
}

impl Serialize for Json {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Json::Null => s.serialize_unit(),
            Json::Bool(b) => s.serialize_bool(*b),
            Json::Num(n) => n.serialize(s),
            Json::Str(t) => s.serialize_str(t),
            Json::Arr(items) => {
                let mut seq = s.serialize_seq(Some(items.len()))?;
                for i in items {
                    seq.serialize_element(i)?;
                }
                seq.end()
            }
            Json::Obj(entries) => {
                let mut map = s.serialize_map(Some(entries.len()))?;
                for (k, v) in entries {
                    map.serialize_entry(k, v)?;
                }
                map.end()
            }
        }
    }
}

/// Deeper nesting than this is refused, as serde_json refuses it.
const MAX_DEPTH: usize = 128;

/// One value and where it is: `start..end` in the text.
#[derive(Debug, Clone)]
pub struct Node {
    pub start: usize,
    pub end: usize,
    pub kind: Kind,
}

#[derive(Debug, Clone)]
pub enum Kind {
    Scalar(Json),
    Arr(Container<Node>),
    Obj(Container<Member>),
}

/// An array's items or an object's members, with the places an edit needs.
#[derive(Debug, Clone)]
pub struct Container<T> {
    pub items: Vec<T>,
    /// For each item, where the whitespace before it starts (after the `[`, `{`, `,` or
    /// comment before it): removing an item takes that whitespace and keeps the comments.
    leads: Vec<usize>,
    /// The comma after each item but the last.
    commas: Vec<usize>,
    /// Where the whitespace before the closing bracket starts.
    trail: usize,
}

/// `"key": value` in an object.
#[derive(Debug, Clone)]
pub struct Member {
    pub key: String,
    /// Where the key's opening quote is.
    pub start: usize,
    /// The key's line, from 1.
    pub line: usize,
    pub value: Node,
}

/// One step of the way from the root to a value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    Key(String),
    Index(usize),
}

/// A key an object holds more than once: the object's place, the key, the line of the
/// repeat.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Duplicate {
    pub at: Vec<Step>,
    pub key: String,
    pub line: usize,
}

#[derive(Debug, Clone)]
pub struct Doc {
    pub root: Node,
    pub duplicates: Vec<Duplicate>,
}

/// Why a text is not JSON of the dialect: where, and what was expected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    pub line: usize,
    pub column: usize,
    pub reason: String,
}

impl Node {
    /// The last member named `key` (the one the CLIs read), if this is an object.
    pub fn member(&self, key: &str) -> Option<&Member> {
        match &self.kind {
            Kind::Obj(c) => c.items.iter().rev().find(|m| m.key == key),
            _ => None,
        }
    }

    /// The value as a tree, a repeated key's last value in the place of its first, as
    /// `JSON.parse` builds it.
    pub fn to_json(&self) -> Json {
        match &self.kind {
            Kind::Scalar(v) => v.clone(),
            Kind::Arr(c) => Json::Arr(c.items.iter().map(Node::to_json).collect()),
            Kind::Obj(c) => {
                let mut out: Vec<(String, Json)> = Vec::new();
                for m in &c.items {
                    let v = m.value.to_json();
                    match out.iter_mut().find(|(k, _)| *k == m.key) {
                        Some(slot) => slot.1 = v,
                        None => out.push((m.key.clone(), v)),
                    }
                }
                Json::Obj(out)
            }
        }
    }
}

/// `text` read as one JSON value, with `//` and `/* */` comments when `comments`.
pub fn parse(text: &str, comments: bool) -> Result<Doc, Error> {
    let mut p = Parser {
        text,
        bytes: text.as_bytes(),
        at: 0,
        comments,
        path: Vec::new(),
        duplicates: Vec::new(),
    };
    p.trivia();
    let root = p.value(0)?;
    p.trivia();
    if p.at < p.bytes.len() {
        return Err(p.error("trailing characters after the value"));
    }
    Ok(Doc {
        root,
        duplicates: p.duplicates,
    })
}

struct Parser<'a> {
    text: &'a str,
    bytes: &'a [u8],
    at: usize,
    comments: bool,
    path: Vec<Step>,
    duplicates: Vec<Duplicate>,
}

impl Parser<'_> {
    fn error(&self, reason: &str) -> Error {
        let before = &self.text[..self.at.min(self.text.len())];
        let line = before.matches('\n').count() + 1;
        let column = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
        Error {
            line,
            column,
            reason: reason.to_string(),
        }
    }

    fn line(&self, at: usize) -> usize {
        self.text[..at].matches('\n').count() + 1
    }

    /// Skips whitespace and comments; returns where the whitespace after the last comment
    /// starts (a line comment ends after its line end, which stays with it).
    fn trivia(&mut self) -> usize {
        let mut lead = self.at;
        loop {
            match self.bytes.get(self.at) {
                Some(b' ' | b'\t' | b'\n' | b'\r') => self.at += 1,
                Some(b'/') if self.comments => match self.bytes.get(self.at + 1) {
                    Some(b'/') => {
                        self.at = match self.text[self.at..].find('\n') {
                            Some(n) => self.at + n + 1,
                            None => self.bytes.len(),
                        };
                        lead = self.at;
                    }
                    Some(b'*') => {
                        // An unclosed one runs to the end, as strip-json-comments blanks it.
                        self.at = match self.text[self.at + 2..].find("*/") {
                            Some(n) => self.at + 2 + n + 2,
                            None => self.bytes.len(),
                        };
                        lead = self.at;
                    }
                    _ => return lead,
                },
                _ => return lead,
            }
        }
    }

    fn value(&mut self, depth: usize) -> Result<Node, Error> {
        if depth > MAX_DEPTH {
            return Err(self.error("nested too deeply"));
        }
        let start = self.at;
        let kind = match self.bytes.get(self.at) {
            None => return Err(self.error("EOF while parsing a value")),
            Some(b'{') => Kind::Obj(self.container(b'}', depth, |p, d| {
                let start = p.at;
                match p.bytes.get(p.at) {
                    Some(b'"') => {}
                    None => return Err(p.error("EOF while parsing an object")),
                    Some(_) => return Err(p.error("key must be a string")),
                }
                let key = match p.scalar()? {
                    Json::Str(k) => k,
                    _ => return Err(p.error("key must be a string")),
                };
                p.trivia();
                if p.bytes.get(p.at) != Some(&b':') {
                    return Err(p.error("expected `:`"));
                }
                p.at += 1;
                p.trivia();
                p.path.push(Step::Key(key.clone()));
                let value = p.value(d + 1);
                p.path.pop();
                Ok(Member {
                    line: p.line(start),
                    key,
                    start,
                    value: value?,
                })
            })?),
            Some(b'[') => Kind::Arr(self.container(b']', depth, |p, d| p.value(d + 1))?),
            Some(_) => Kind::Scalar(self.scalar()?),
        };
        Ok(Node {
            start,
            end: self.at,
            kind,
        })
    }

    /// The items of an array or object from its opening bracket to `close`, each read by
    /// `item`.
    fn container<T: Keyed>(
        &mut self,
        close: u8,
        depth: usize,
        item: impl Fn(&mut Self, usize) -> Result<T, Error>,
    ) -> Result<Container<T>, Error> {
        self.at += 1;
        let mut c = Container {
            items: Vec::new(),
            leads: Vec::new(),
            commas: Vec::new(),
            trail: 0,
        };
        loop {
            let lead = self.trivia();
            if self.bytes.get(self.at) == Some(&close) && c.commas.len() == c.items.len() {
                if !c.commas.is_empty() {
                    return Err(self.error("trailing comma"));
                }
                c.trail = lead;
                self.at += 1;
                return Ok(c);
            }
            if c.items.len() > c.commas.len() {
                if self.bytes.get(self.at) == Some(&close) {
                    c.trail = lead;
                    self.at += 1;
                    return Ok(c);
                }
                if self.bytes.get(self.at) != Some(&b',') {
                    let wanted = if close == b'}' {
                        "expected `,` or `}`"
                    } else {
                        "expected `,` or `]`"
                    };
                    return Err(self.error(wanted));
                }
                c.commas.push(self.at);
                self.at += 1;
                continue;
            }
            // An array's items are indexed in the path; a member's key says where it is.
            let index = close == b']';
            if index {
                self.path.push(Step::Index(c.items.len()));
            }
            let next = item(self, depth);
            if index {
                self.path.pop();
            }
            let next = next?;
            if let Some(key) = next.key() {
                if c.items.iter().any(|m| m.key() == Some(key)) {
                    let line = next.line();
                    self.duplicates.push(Duplicate {
                        at: self.path.clone(),
                        key: key.to_string(),
                        line,
                    });
                }
            }
            c.leads.push(lead);
            c.items.push(next);
        }
    }

    /// A string, number, `true`, `false` or `null`, decoded as serde_json decodes it.
    fn scalar(&mut self) -> Result<Json, Error> {
        let start = self.at;
        if self.bytes[start] == b'"' {
            let mut i = start + 1;
            loop {
                match self.bytes.get(i) {
                    None => return Err(self.error("EOF while parsing a string")),
                    Some(b'\\') => i += 2,
                    Some(b'"') => break,
                    Some(_) => i += 1,
                }
            }
            self.at = i + 1;
        } else {
            while self
                .bytes
                .get(self.at)
                .is_some_and(|b| b.is_ascii_alphanumeric() || b"+-.".contains(b))
            {
                self.at += 1;
            }
            // A character no value starts with (a comment where none is read, a `'`, a `,`):
            // serde_json, handed the empty token, would say the text ended there.
            if self.at == start {
                return Err(self.error("expected value"));
            }
        }
        let token = self.text.get(start..self.at).unwrap_or("");
        match serde_json::from_str::<serde_json::Value>(token) {
            Ok(serde_json::Value::Null) => Ok(Json::Null),
            Ok(serde_json::Value::Bool(b)) => Ok(Json::Bool(b)),
            Ok(serde_json::Value::Number(n)) => Ok(Json::Num(n)),
            Ok(serde_json::Value::String(s)) => Ok(Json::Str(s)),
            // The token holds no bracket: containers are read above.
            Ok(_) => {
                self.at = start;
                Err(self.error("expected value"))
            }
            Err(e) => {
                self.at = start;
                let reason = e.to_string();
                Err(self.error(reason.split(" at line").next().unwrap_or("expected value")))
            }
        }
    }
}

/// What a container holds: a member has a key and a line, an array's item neither.
trait Keyed {
    fn key(&self) -> Option<&str>;
    fn line(&self) -> usize;
    fn span(&self) -> (usize, usize);
}

impl Keyed for Member {
    fn key(&self) -> Option<&str> {
        Some(&self.key)
    }
    fn line(&self) -> usize {
        self.line
    }
    fn span(&self) -> (usize, usize) {
        (self.start, self.value.end)
    }
}

impl Keyed for Node {
    fn key(&self) -> Option<&str> {
        None
    }
    fn line(&self) -> usize {
        0
    }
    fn span(&self) -> (usize, usize) {
        (self.start, self.end)
    }
}

/// What an edit appends to a container: an array's item or an object's member.
pub enum Added {
    Item(Json),
    Member(String, Json),
}

/// Changes to a text, each a range replaced, applied together by [`Edit::finish`]. Every
/// byte outside the ranges stays.
pub struct Edit<'a> {
    text: &'a str,
    splices: Vec<(usize, usize, String)>,
    indent: String,
    eol: &'static str,
}

impl<'a> Edit<'a> {
    /// An edit of `text`, whose indentation unit is `indent` and line end `eol`.
    pub fn new(text: &'a str, indent: &str, eol: &'static str) -> Edit<'a> {
        Edit {
            text,
            splices: Vec::new(),
            indent: indent.to_string(),
            eol,
        }
    }

    /// Removes the items of the array or object `node` at the indices `remove`, and appends
    /// `add` after the others. Comments between items stay; a container left empty by the
    /// removal closes up (`[]`).
    pub fn change(&mut self, node: &Node, remove: &[usize], add: Vec<Added>) {
        match &node.kind {
            Kind::Arr(c) => self.change_in(node, c, remove, add),
            Kind::Obj(c) => self.change_in(node, c, remove, add),
            Kind::Scalar(_) => {}
        }
    }

    fn change_in<T: Keyed>(
        &mut self,
        node: &Node,
        c: &Container<T>,
        remove: &[usize],
        add: Vec<Added>,
    ) {
        let n = c.items.len();
        let kept: Vec<usize> = (0..n).filter(|i| !remove.contains(i)).collect();
        let (open, close) = (node.start, node.end - 1);
        let inner = &self.text[open + 1..close];
        let mut cut: Vec<(usize, usize)> = Vec::new();
        for &i in remove.iter().filter(|&&i| i < n) {
            cut.push((c.leads[i], c.items[i].span().1));
            // The comma that separated it: after it while a kept item follows, else before.
            if kept.iter().any(|&k| k > i) {
                cut.push((c.commas[i], c.commas[i] + 1));
            } else if i > 0 {
                cut.push((c.commas[i - 1], c.commas[i - 1] + 1));
            }
        }
        cut.sort();
        // The text from the opening bracket to `to` once the items are cut.
        let left_until = |to: usize| {
            let mut left = String::new();
            let mut from = open + 1;
            for &(s, e) in cut.iter().filter(|(_, e)| *e <= to) {
                left.push_str(&self.text[from..s]);
                from = e;
            }
            left.push_str(&self.text[from.min(to)..to]);
            left
        };
        let left = left_until(close);
        if kept.is_empty() && add.is_empty() && left.trim().is_empty() {
            self.splices.push((open + 1, close, String::new()));
            return;
        }
        self.splices
            .extend(cut.iter().map(|&(s, e)| (s, e, String::new())));
        if add.is_empty() {
            return;
        }
        // One line stays one line; a container that spans lines, or holds nothing, gets one
        // line per item, indented one step past the line it opens on.
        let compact = n > 0 && !inner.contains('\n');
        let line_start = self.text[..open].rfind('\n').map_or(0, |i| i + 1);
        let base: String = self.text[line_start..]
            .chars()
            .take_while(|c| *c == ' ' || *c == '\t')
            .collect();
        let child = format!("{base}{}", self.indent);
        let rendered: Vec<String> = add
            .iter()
            .map(|a| {
                let (key, value) = match a {
                    Added::Item(v) => (None, v),
                    Added::Member(k, v) => (Some(k), v),
                };
                let key = key.map_or(String::new(), |k| {
                    format!("{}: ", serde_json::to_string(k).unwrap_or_default())
                });
                let value = if compact {
                    serde_json::to_string(value).unwrap_or_default()
                } else {
                    pretty(value, &self.indent).replace('\n', &format!("{}{child}", self.eol))
                };
                format!("{key}{value}")
            })
            .collect();
        let sep = if compact {
            ", ".to_string()
        } else {
            format!(",{}{child}", self.eol)
        };
        let body = rendered.join(&sep);
        match kept.last() {
            Some(&last) if compact => {
                self.splices.push((
                    c.items[last].span().1,
                    c.items[last].span().1,
                    format!("{sep}{body}"),
                ));
            }
            Some(&last) => {
                let end = c.items[last].span().1;
                self.splices.push((end, end, ",".into()));
                let at = c.trail.max(end);
                // After a line comment, its line end is there already.
                let eol = if left_until(at).ends_with('\n') {
                    ""
                } else {
                    self.eol
                };
                // And the closing bracket on a line of its own, if it followed the comment.
                let close_line = if self.text[at..close].contains('\n') {
                    String::new()
                } else {
                    format!("{}{base}", self.eol)
                };
                self.splices
                    .push((at, at, format!("{eol}{child}{body}{close_line}")));
            }
            None if compact => self.splices.push((open + 1, open + 1, body)),
            None => {
                self.splices
                    .push((open + 1, open + 1, format!("{}{child}{body}", self.eol)));
                if !left.contains('\n') {
                    self.splices
                        .push((close, close, format!("{}{base}", self.eol)));
                }
            }
        }
    }

    /// The text with every change made.
    pub fn finish(mut self) -> String {
        // Stable: of two insertions at one place, the one asked first comes first.
        self.splices.sort_by_key(|(s, e, _)| (*s, *e));
        let mut out = String::with_capacity(self.text.len());
        let mut from = 0;
        for (s, e, new) in &self.splices {
            if *s < from {
                continue;
            }
            out.push_str(&self.text[from..*s]);
            out.push_str(new);
            from = *e;
        }
        out.push_str(&self.text[from..]);
        out
    }
}

/// `value` as serde_json's pretty printer writes it with the indentation unit `indent`.
pub fn pretty(value: &Json, indent: &str) -> String {
    let mut bytes = Vec::new();
    let formatter = serde_json::ser::PrettyFormatter::with_indent(indent.as_bytes());
    let mut serializer = serde_json::Serializer::with_formatter(&mut bytes, formatter);
    match value.serialize(&mut serializer) {
        Ok(()) => String::from_utf8(bytes).unwrap_or_else(|_| "{}".into()),
        Err(_) => "{}".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_are_read_as_gemini_reads_them_and_strings_are_left_alone() {
        let text =
            "// top\n{\n  /* a */ \"url\": \"http://x/*y*/\", // end\n  \"n\": [1, 2] /* z */\n}\n";
        let doc = parse(text, true).unwrap();
        let json = doc.root.to_json();
        let v = serde_json::to_value(&json).unwrap();
        assert_eq!(v, serde_json::json!({"url": "http://x/*y*/", "n": [1, 2]}));
        assert!(parse(text, false).is_err(), "strict JSON takes no comment");
        // strip-json-comments keeps commas, so JSON.parse refuses a trailing one.
        for bad in [
            "{\"a\": 1,}",
            "[1,]",
            "{\"a\" 1}",
            "[1 2]",
            "{",
            "\"\\u12\"",
            "[01]",
        ] {
            assert!(parse(bad, true).is_err(), "{bad}");
        }
        let e = parse("{\n  \"a\": ,\n}", true).unwrap_err();
        assert_eq!((e.line, e.column), (2, 8), "{e:?}");
    }

    #[test]
    fn a_repeated_key_is_listed_with_its_place_and_the_last_one_counts() {
        let text = "{\"hooks\": {\"A\": [{\"m\": 1,\n \"m\": 2}]},\n\"hooks\": {}}";
        let doc = parse(text, false).unwrap();
        assert_eq!(
            doc.duplicates,
            vec![
                Duplicate {
                    at: vec![
                        Step::Key("hooks".into()),
                        Step::Key("A".into()),
                        Step::Index(0)
                    ],
                    key: "m".into(),
                    line: 2
                },
                Duplicate {
                    at: vec![],
                    key: "hooks".into(),
                    line: 3
                }
            ]
        );
        assert_eq!(
            serde_json::to_value(doc.root.to_json()).unwrap(),
            serde_json::json!({"hooks": {}})
        );
    }

    #[test]
    fn removing_and_appending_keeps_every_other_byte() {
        let text =
            "{\n  // keep\n  \"a\": [\n    1, // one\n    2,\n    3\n  ],\n  \"b\": [] /* b */\n}";
        let doc = parse(text, true).unwrap();
        let a = &doc.root.member("a").unwrap().value;
        let b = &doc.root.member("b").unwrap().value;
        let mut edit = Edit::new(text, "  ", "\n");
        edit.change(a, &[1, 2], vec![Added::Item(Json::Str("x".into()))]);
        edit.change(b, &[], vec![Added::Item(Json::Null)]);
        assert_eq!(
            edit.finish(),
            "{\n  // keep\n  \"a\": [\n    1, // one\n    \"x\"\n  ],\n  \"b\": [\n    null\n  ] /* b */\n}"
        );
        let mut edit = Edit::new(text, "  ", "\n");
        edit.change(&doc.root, &[1], vec![]);
        edit.change(a, &[0], vec![]);
        assert_eq!(
            edit.finish(),
            "{\n  // keep\n  \"a\": [ // one\n    2,\n    3\n  ] /* b */\n}"
        );
        let commented = "{\n  \"a\": 1 // one\n}";
        let doc = parse(commented, true).unwrap();
        let mut edit = Edit::new(commented, "  ", "\n");
        edit.change(&doc.root, &[], vec![Added::Member("b".into(), Json::Null)]);
        assert_eq!(edit.finish(), "{\n  \"a\": 1, // one\n  \"b\": null\n}");
        let one = "{\"a\": [1, 2]}";
        let doc = parse(one, false).unwrap();
        let mut edit = Edit::new(one, "  ", "\n");
        edit.change(
            &doc.root,
            &[],
            vec![Added::Member("b".into(), Json::Bool(true))],
        );
        assert_eq!(edit.finish(), "{\"a\": [1, 2], \"b\": true}");
        let mut edit = Edit::new(one, "  ", "\n");
        edit.change(&doc.root, &[0], vec![]);
        assert_eq!(edit.finish(), "{}");
    }

    #[test]
    fn a_character_no_value_starts_with_is_named_as_such_not_as_the_end_of_the_text() {
        for (text, comments, at, reason) in [
            ("// c\n{\"a\": 1}", false, (1, 1), "expected value"),
            ("{\"a\": 'x'}", true, (1, 7), "expected value"),
            ("{\n  \"a\": ,\n}", true, (2, 8), "expected value"),
            ("[1, #]", true, (1, 5), "expected value"),
            ("{\"a\": 1, ", true, (1, 10), "EOF while parsing an object"),
            ("{\"a\": ", true, (1, 7), "EOF while parsing a value"),
        ] {
            let e = parse(text, comments).unwrap_err();
            assert_eq!(
                ((e.line, e.column), e.reason.as_str()),
                (at, reason),
                "{text:?}"
            );
        }
    }

    #[test]
    fn any_text_is_read_or_refused_without_a_panic() {
        for text in [
            "",
            "/*",
            "//",
            "\"",
            "[",
            "{\"a\"",
            "{\"a\":",
            "-",
            "\"\\",
            &"[".repeat(500),
        ] {
            let _ = parse(text, true);
        }
    }
}
