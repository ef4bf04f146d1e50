//! Splitting a markdown file into its YAML frontmatter and body (SPEC §2).
//!
//! The split follows the reference's rule exactly (`^---\s*\n(.*?)\n---\s*\n(.*)$`, dot matches
//! newline) on text read the way Python's `read_text` reads it: a BOM is dropped and CRLF or
//! lone CR become LF. Only reading is normalised; edits splice the original bytes.

use crate::yaml::{self, Mapping, Value, YamlError};
use std::borrow::Cow;

/// A file's text split at its frontmatter fences.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Split<'a> {
    /// The YAML between the fences, `None` when the file has no frontmatter.
    pub yaml: Option<&'a str>,
    pub body: &'a str,
    /// 1-based line of the file on which the YAML starts (after the opening fence).
    pub yaml_line: usize,
    /// 1-based line of the file on which the body starts.
    pub body_line: usize,
}

/// Text as Python's `Path.read_text(encoding="utf-8")` hands it to the reference.
pub fn normalise(text: &str) -> Cow<'_, str> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if text.contains('\r') {
        Cow::Owned(text.replace("\r\n", "\n").replace('\r', "\n"))
    } else {
        Cow::Borrowed(text)
    }
}

/// Splits normalised text; without a frontmatter block the whole text is the body.
pub fn split(text: &str) -> Split<'_> {
    match fences(text) {
        Some(f) => Split {
            yaml: Some(&text[f.yaml.clone()]),
            body: &text[f.body_start..],
            yaml_line: 1 + count_lines(&text[..f.yaml.start]),
            body_line: 1 + count_lines(&text[..f.body_start]),
        },
        None => Split {
            yaml: None,
            body: text,
            yaml_line: 1,
            body_line: 1,
        },
    }
}

/// Where the frontmatter of `text` lies.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Fences {
    yaml: std::ops::Range<usize>,
    body_start: usize,
}

/// The reference's rule, `\A---\s*\n(.*?)\n---\s*\n` with dot matching newline, matched by
/// hand in one pass: a regex engine needs its slowest matcher for the capture and made the
/// split a fifth of reading a settled contract. The same choices as a backtracking matcher:
/// the opening `\s*\n` ends at the last newline of the blank run after `---` (greedy), falling
/// back to earlier ones; the YAML ends at the first closing fence after that (lazy); the
/// closing `\s*\n` ends at the last newline of its blank run. `\s` is Unicode white space, as
/// in Python and the regex crate. `tests::fences_match_the_regex` checks it against the regex.
fn fences(text: &str) -> Option<Fences> {
    let rest = text.strip_prefix("---")?;
    // The newlines the opening `\s*\n` may end on: the last of the blank run (greedy), else
    // the one before it.
    let blank = &rest[..blank_run(rest)];
    let last = 3 + blank.rfind('\n')?;
    if let Some(closing) = closing_fence(text, last + 1) {
        return Some(Fences {
            yaml: last + 1..closing.0,
            body_start: closing.1,
        });
    }
    // No closing fence after the greedy opening. An earlier opening can only add closing
    // fences that start inside the blank run, and only one can: its last newline, when `---`
    // follows the run (the character after a fence's newline is a `-`, not a blank).
    let earlier = 3 + blank[..last - 3].rfind('\n')?;
    closing_at(text, last).map(|body_start| Fences {
        yaml: earlier + 1..last,
        body_start,
    })
}

/// The first closing fence `\n---\s*\n` starting at or after `from`: (its start, the end of
/// the match).
fn closing_fence(text: &str, from: usize) -> Option<(usize, usize)> {
    let mut at = from;
    while let Some(i) = text.get(at..)?.find("\n---") {
        let start = at + i;
        if let Some(end) = closing_at(text, start) {
            return Some((start, end));
        }
        at = start + 1;
    }
    None
}

/// The end of a closing fence starting exactly at `start` (a newline followed by `---`).
fn closing_at(text: &str, start: usize) -> Option<usize> {
    let after = text.get(start..)?.strip_prefix("\n---")?;
    let run = &after[..blank_run(after)];
    let newline = run.rfind('\n')?;
    Some(start + 4 + newline + 1)
}

/// Bytes of Unicode white space at the start of `text`.
fn blank_run(text: &str) -> usize {
    text.find(|c: char| !c.is_whitespace())
        .unwrap_or(text.len())
}

fn count_lines(text: &str) -> usize {
    text.bytes().filter(|b| *b == b'\n').count()
}

/// Why a file's frontmatter could not be used.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FrontmatterError {
    #[error("invalid YAML in the frontmatter at line {line}: {message}")]
    Yaml { line: usize, message: String },
    #[error("the frontmatter is not a mapping of `key: value` lines (line {line})")]
    NotAMapping { line: usize },
}

impl FrontmatterError {
    pub fn line(&self) -> usize {
        match self {
            FrontmatterError::Yaml { line, .. } | FrontmatterError::NotAMapping { line } => *line,
        }
    }
}

/// A markdown record: its frontmatter (empty when absent) and body.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Record {
    pub fields: Value,
    pub body: String,
    pub body_line: usize,
}

impl Record {
    pub fn get(&self, key: &str) -> &Value {
        self.fields.get(key)
    }
}

/// Reads a markdown file's text into a [`Record`]. Line numbers in errors are the file's.
pub fn parse(raw: &str) -> Result<Record, FrontmatterError> {
    let text = normalise(raw);
    let split = split(&text);
    let fields = match split.yaml {
        None => Value::Map(Mapping::new()),
        Some(src) => match yaml::load(src) {
            Ok(Value::Null) => Value::Map(Mapping::new()),
            Ok(v @ Value::Map(_)) => v,
            Ok(_) => {
                return Err(FrontmatterError::NotAMapping {
                    line: split.yaml_line,
                })
            }
            Err(YamlError { line, message }) => {
                return Err(FrontmatterError::Yaml {
                    line: split.yaml_line + line - 1,
                    message,
                })
            }
        },
    };
    Ok(Record {
        fields,
        body: split.body.to_string(),
        body_line: split.body_line,
    })
}

/// The 1-based line of a top-level frontmatter key in the file's text, when it is written at
/// the start of a line.
pub fn key_line(text: &str, key: &str) -> Option<usize> {
    let mut fences = 0;
    for (i, line) in text.lines().enumerate() {
        let line = line.trim_start_matches('\u{feff}');
        if line.trim_end() == "---" {
            fences += 1;
            if fences == 2 {
                return None;
            }
            continue;
        }
        if let Some(rest) = line.strip_prefix(key) {
            if rest.trim_start().starts_with(':') {
                return Some(i + 1);
            }
        }
    }
    None
}

/// Sets one top-level scalar in a file's frontmatter by splicing lines: every line `key: …`
/// (and its indented continuation) becomes `key: value` with its own line end; when the key is
/// missing, the line is added after `insert_after`'s entry, else before the closing fence.
/// Every other byte is kept. `None` when the text has no frontmatter.
pub fn splice_field(
    text: &str,
    key: &str,
    value: &str,
    insert_after: Option<&str>,
) -> Option<String> {
    if let Some(lf) = lone_cr_as_lf(text) {
        return splice_field(&lf, key, value, insert_after).map(|out| out.replace('\n', "\r"));
    }
    let (bom, rest) = match text.strip_prefix('\u{feff}') {
        Some(r) => ("\u{feff}", r),
        None => ("", text),
    };
    // Only CRLF is normalised, so line numbers match the raw text's `\n`-separated lines.
    let normal = rest.replace("\r\n", "\n");
    let split = split(&normal);
    let yaml = split.yaml?;
    let lines: Vec<&str> = rest.split_inclusive('\n').collect();
    let first = split.yaml_line - 1;
    let fence = first + yaml.split('\n').count();
    let fence_eol = if lines.get(fence)?.ends_with("\r\n") {
        "\r\n"
    } else {
        "\n"
    };
    let content = |l: &str| l.trim_end_matches(['\n', '\r']).to_string();
    // The lines (start, end exclusive) of each top-level entry for `k`.
    let entries = |k: &str| -> Vec<(usize, usize)> {
        let mut found = Vec::new();
        let mut i = first;
        while i < fence {
            let c = content(lines[i]);
            if let Some(after) = c.strip_prefix(k).and_then(|r| r.strip_prefix(':')) {
                if after.is_empty() || after.starts_with([' ', '\t']) {
                    let mut end = i + 1;
                    if after.trim().is_empty() {
                        while end < fence {
                            let n = content(lines[end]);
                            if n.starts_with([' ', '\t']) || n == "-" || n.starts_with("- ") {
                                end += 1;
                            } else {
                                break;
                            }
                        }
                    }
                    found.push((i, end));
                    i = end;
                    continue;
                }
            }
            i += 1;
        }
        found
    };
    let mut out: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    let existing = entries(key);
    if existing.is_empty() {
        let at = insert_after
            .and_then(|k| entries(k).last().map(|(_, end)| *end))
            .unwrap_or(fence);
        let eol = if at > 0 && lines[at - 1].ends_with("\r\n") {
            "\r\n"
        } else {
            fence_eol
        };
        out.insert(at, format!("{key}: {value}{eol}"));
    } else {
        for (start, end) in existing.into_iter().rev() {
            let eol = if lines[end - 1].ends_with("\r\n") {
                "\r\n"
            } else {
                "\n"
            };
            out.splice(start..end, [format!("{key}: {value}{eol}")]);
        }
    }
    Some(format!("{bom}{}", out.concat()))
}

/// A file whose every line ends in a lone CR (classic Mac line ends), with LF instead: it is
/// read as LF lines (see [`normalise`]), so an edit finds its fields in that form and turns
/// the LFs back into CRs, keeping the file's line ends. `None` for any other text.
fn lone_cr_as_lf(text: &str) -> Option<String> {
    (text.contains('\r') && !text.contains('\n')).then(|| text.replace('\r', "\n"))
}

/// A frontmatter value as the reference's commands write one into an existing contract:
/// plain, or double-quoted when it holds YAML punctuation or edge white space. Deliberate
/// difference (SPEC §2, what polisd writes reads back with the same types): a string whose
/// reference form would not read back as that same string (`yes`, `42`, a backslash, a line
/// break, a leading `@`, `*`, `!`, `%`…, some of them invalid YAML that would make the whole
/// frontmatter unreadable) is written double-quoted with every escape it needs, on one line.
pub fn reference_scalar(value: &Value) -> String {
    match value {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Int(i) => i.to_string(),
        Value::Str(t) => {
            let special = t.is_empty()
                || t.contains([':', '#', '[', ']', '{', '}', '"', '\''])
                || t.starts_with(char::is_whitespace)
                || t.ends_with(char::is_whitespace);
            let reference = if special {
                format!("\"{}\"", t.replace('"', "\\\""))
            } else {
                t.clone()
            };
            if reads_back_as(&reference, t) {
                reference
            } else {
                double_quoted(t)
            }
        }
        other => other.python_str(),
    }
}

/// Whether `scalar`, written as a mapping's value on one line, reads back as the string `t`.
fn reads_back_as(scalar: &str, t: &str) -> bool {
    !scalar.contains(['\n', '\r'])
        && crate::yaml::load(&format!("k: {scalar}\n"))
            .ok()
            .and_then(|v| v.as_map().and_then(|m| m.get("k").cloned()))
            == Some(Value::Str(t.to_string()))
}

/// `t` as a YAML double-quoted scalar on one line, escaped so it reads back exactly.
fn double_quoted(t: &str) -> String {
    let mut out = String::with_capacity(t.len() + 2);
    out.push('"');
    for c in t.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                out.push_str(&format!("\\x{:02x}", c as u32))
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Sets `key: value` (`value` as YAML text) inside the top-level mapping `block:` of a
/// frontmatter, keeping every other byte: a block mapping gets its `key:` line replaced or
/// added (at its indentation); a flow mapping on one line is rewritten with the key set; a
/// missing, empty or null block becomes `block: {key: value}`. The caller reads the result back to
/// check it (nothing here proves the YAML still means what it meant).
pub fn splice_block_field(text: &str, block: &str, key: &str, value: &str) -> Option<String> {
    if let Some(lf) = lone_cr_as_lf(text) {
        return splice_block_field(&lf, block, key, value).map(|out| out.replace('\n', "\r"));
    }
    let head = format!("{block}:");
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let content = |l: &str| l.trim_end_matches(['\n', '\r']).to_string();
    // The frontmatter's lines: after the first `---` up to the next `---`.
    if content(lines.first()?)
        .trim_start_matches('\u{feff}')
        .trim_end()
        != "---"
    {
        return None;
    }
    let fence = lines
        .iter()
        .skip(1)
        .position(|l| content(l).trim_end() == "---")?
        + 1;
    let Some(start) = (1..fence).find(|&i| {
        let c = content(lines[i]);
        c.strip_prefix(head.as_str())
            .is_some_and(|r| r.is_empty() || r.starts_with([' ', '\t']))
    }) else {
        return splice_field(text, block, &format!("{{{key}: {value}}}"), None);
    };
    let eol = if lines[start].ends_with("\r\n") {
        "\r\n"
    } else {
        "\n"
    };
    let after = content(lines[start])[head.len()..].trim().to_string();
    let mut out: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    if after.is_empty() || after.starts_with('#') {
        // A block mapping: its child lines are the indented ones that follow.
        let mut end = start + 1;
        while end < fence {
            let c = content(lines[end]);
            if c.starts_with([' ', '\t']) || c.trim().is_empty() {
                end += 1;
            } else {
                break;
            }
        }
        let indent = (start + 1..end)
            .map(|i| content(lines[i]))
            .find(|c| !c.trim().is_empty())
            .map(|c| c[..c.len() - c.trim_start().len()].to_string())
            .unwrap_or_else(|| "  ".into());
        let own = (start + 1..end).find(|&i| {
            let c = content(lines[i]);
            c.strip_prefix(indent.as_str())
                .and_then(|r| r.strip_prefix(key))
                .and_then(|r| r.strip_prefix(':'))
                .is_some_and(|r| r.is_empty() || r.starts_with([' ', '\t']))
        });
        let line = format!("{indent}{key}: {value}{eol}");
        match own {
            Some(i) => out[i] = line,
            None => {
                // After the last non-blank child line.
                let at = (start + 1..end)
                    .rev()
                    .find(|&i| !content(lines[i]).trim().is_empty())
                    .map_or(start + 1, |i| i + 1);
                out.insert(at, line);
            }
        }
        return Some(out.concat());
    }
    // A flow mapping on this line, or a null one (`review: null`, `~`), which becomes one.
    let parsed = crate::yaml::load(&after).ok()?;
    if parsed == Value::Null {
        out[start] = format!("{block}: {{{key}: {value}}}{eol}");
        return Some(out.concat());
    }
    let map = parsed.as_map()?;
    let mut parts = Vec::new();
    let mut set = false;
    for (k, v) in map.iter() {
        let name = k.python_str();
        if name == key {
            parts.push(format!("{key}: {value}"));
            set = true;
        } else {
            parts.push(format!("{name}: {}", flow(v)?));
        }
    }
    if !set {
        parts.push(format!("{key}: {value}"));
    }
    out[start] = format!("{block}: {{{}}}{eol}", parts.join(", "));
    Some(out.concat())
}

/// A value in flow style, for a rewritten `block: {…}` line (checked by reading back).
fn flow(v: &Value) -> Option<String> {
    Some(match v {
        Value::Seq(items) => format!(
            "[{}]",
            items
                .iter()
                .map(flow)
                .collect::<Option<Vec<_>>>()?
                .join(", ")
        ),
        Value::Map(m) => format!(
            "{{{}}}",
            m.iter()
                .map(|(k, v)| Some(format!("{}: {}", k.python_str(), flow(v)?)))
                .collect::<Option<Vec<_>>>()?
                .join(", ")
        ),
        Value::Float(f) => crate::yaml::python_float_repr(*f),
        other => reference_scalar(other),
    })
}

/// Whether two records polisd writes are one record written twice: the same lines, trailing
/// white space aside, apart from the lines of the keys in `apart` (an id and a stamp, which a
/// replayed command draws afresh). A replay check, so a second command makes no second record.
pub fn same_record_apart_from(existing: &str, new: &str, apart: &[&str]) -> bool {
    fn key<'t>(t: &'t str, apart: &[&str]) -> Vec<&'t str> {
        t.lines()
            .filter(|l| {
                !apart
                    .iter()
                    .any(|k| l.strip_prefix(k).is_some_and(|r| r.starts_with(':')))
            })
            .map(str::trim_end)
            .collect()
    }
    key(existing, apart) == key(new, apart)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_record_written_twice_differs_only_in_the_keys_set_apart() {
        let first = "---\nlesson_id: a\nfiled_at: 1\nfiled_by: x\n---\n\nWords.\n";
        let again = "---\nlesson_id: b\nfiled_at: 2\nfiled_by: x\n---\n\nWords.  \n";
        let apart = ["lesson_id", "filed_at"];
        assert!(same_record_apart_from(first, again, &apart));
        assert!(!same_record_apart_from(
            first,
            &again.replace("x", "y"),
            &apart
        ));
        // A key that merely begins with one set apart still counts.
        let longer = |v: &str| first.replace("filed_by", &format!("lesson_id_of: {v}\nfiled_by"));
        assert!(!same_record_apart_from(&longer("p"), &longer("q"), &apart));
    }

    #[test]
    fn reference_scalar_keeps_the_references_bytes_only_where_they_read_back() {
        let s = |t: &str| reference_scalar(&Value::Str(t.into()));
        assert_eq!(s("plain words"), "plain words");
        assert_eq!(s("a: b"), "\"a: b\"");
        assert_eq!(s("2026-03-02 10:00:00"), "\"2026-03-02 10:00:00\"");
        assert_eq!(s("yes"), "\"yes\"");
        assert_eq!(s("42"), "\"42\"");
        assert_eq!(s("C:\\x: y"), "\"C:\\\\x: y\"");
        assert_eq!(s("one\ntwo"), "\"one\\ntwo\"");
        assert_eq!(s("@who"), "\"@who\"");
    }

    /// The reference's rule as a regex (without its trailing `(.*)$`, which always matches).
    fn by_regex(text: &str) -> Option<Fences> {
        static RULE: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
            regex::Regex::new(r"(?s)\A---\s*\n(.*?)\n---\s*\n").unwrap()
        });
        RULE.captures(text).map(|c| Fences {
            yaml: c.get(1).unwrap().range(),
            body_start: c.get(0).unwrap().end(),
        })
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(4000))]
        #[test]
        fn fences_match_the_regex(parts in proptest::collection::vec(
            proptest::sample::select(vec![
                "---", "-", "--", "\n", "\n---", "\n---\n", " ", "\t", "\r", "\u{a0}",
                "\u{2028}", "\u{85}", "a", "x: 1", ":", "é",
            ]),
            0..14,
        )) {
            let text: String = parts.concat();
            proptest::prop_assert_eq!(fences(&text), by_regex(&text), "{:?}", text);
        }
    }

    #[test]
    fn fences_match_the_regex_on_named_cases() {
        for text in [
            "---\n\n---\n",
            "---\n\n---\nfoo: 1\n---\n",
            "--- \n \n---  \n \nbody",
            "---\n---\n",
            "---\na\n---",
            "---\u{a0}\n\u{2028}\n---\u{85}\nx",
            "----\na\n---\n",
            "---\na\n----\nb\n---\n",
            "---",
            "",
        ] {
            assert_eq!(fences(text), by_regex(text), "{text:?}");
        }
    }

    #[test]
    fn splits_like_the_reference() {
        let s = split("---\na: 1\n---\nbody\n");
        assert_eq!(s.yaml, Some("a: 1"));
        assert_eq!(s.body, "body\n");
        assert_eq!(s.yaml_line, 2);
        assert_eq!(s.body_line, 4);
    }

    #[test]
    fn no_closing_fence_means_no_frontmatter() {
        let s = split("---\na: 1\nbody\n");
        assert_eq!(s.yaml, None);
    }

    #[test]
    fn closing_fence_needs_a_newline() {
        assert_eq!(split("---\na: 1\n---").yaml, None);
    }

    #[test]
    fn bom_and_crlf_are_accepted() {
        let r = parse("\u{feff}---\r\nstatus: settled\r\n---\r\nBody\r\n").unwrap();
        assert_eq!(r.get("status"), &Value::Str("settled".into()));
        assert_eq!(r.body, "Body\n");
    }

    #[test]
    fn a_file_of_lone_cr_line_ends_is_spliced_with_them() {
        // Read as LF (as Python's read_text reads it), so the edit must find the same fields.
        let text = "---\rcontract_id: x\rowner: null\rrouting: {}\r---\rBody\r";
        assert_eq!(parse(text).unwrap().get("owner"), &Value::Null);
        assert_eq!(
            splice_field(text, "owner", "alpha-agent", None).as_deref(),
            Some("---\rcontract_id: x\rowner: alpha-agent\rrouting: {}\r---\rBody\r")
        );
        assert_eq!(
            splice_field(text, "status", "claimed", Some("owner")).as_deref(),
            Some("---\rcontract_id: x\rowner: null\rstatus: claimed\rrouting: {}\r---\rBody\r")
        );
        assert_eq!(
            splice_block_field(text, "routing", "exploration", "false").as_deref(),
            Some("---\rcontract_id: x\rowner: null\rrouting: {exploration: false}\r---\rBody\r")
        );
    }

    #[test]
    fn yaml_errors_carry_the_file_line() {
        let e = parse("---\na: 1\nb: [\n---\nbody\n").unwrap_err();
        assert!(e.line() >= 3, "{e:?}");
    }

    #[test]
    fn a_list_is_not_frontmatter() {
        assert!(matches!(
            parse("---\n- a\n---\n"),
            Err(FrontmatterError::NotAMapping { .. })
        ));
    }

    /// Regression: splitting a big record took the regex engine's slowest path over the whole
    /// file (about a minute for 16 MiB in a debug build, stalling the daemon). A deadline, not a
    /// benchmark: linear work finishes far inside it.
    #[test]
    fn big_record_splits_in_linear_time() {
        let mut text = String::from("---\nstatus: settled\n---\n");
        let line = "filler text that goes on and on and on and on\n";
        while text.len() < 8 * 1024 * 1024 {
            text.push_str(line);
        }
        let start = std::time::Instant::now();
        let s = split(&text);
        assert_eq!(s.yaml, Some("status: settled"));
        assert_eq!(s.body_line, 4);
        assert!(s.body.starts_with("filler"));
        // And without a closing fence: no frontmatter, quickly too.
        let unclosed = text.replacen("\n---\n", "\n", 1);
        assert_eq!(split(&unclosed).yaml, None);
        assert!(
            start.elapsed() < std::time::Duration::from_secs(5),
            "took {:?}",
            start.elapsed()
        );
    }

    #[test]
    fn fence_rules_unchanged() {
        // `\s*` after a fence may span blank lines; the YAML is the shortest run before a fence.
        let s = split("---  \n\na: 1\n---\nb\n---\nc\n");
        assert_eq!(s.yaml, Some("a: 1"));
        assert_eq!(s.body, "b\n---\nc\n");
        assert_eq!(
            split("---\na: 1\n---").yaml,
            None,
            "the closing fence needs its newline"
        );
        assert_eq!(split("---\na\n---\n").body, "");
    }
}
