//! Warning classes a person has silenced (`_polis/silenced.yml`): the human queue (the
//! dashboard's, `notify_command`'s) leaves their warnings out, while `polisd check` still
//! reports every finding. Errors are never silenced. Pure: text in, entries and new text out;
//! `operations::silence` writes the file under its lock.
//!
//! The file is polisd's own (the reference has no such file and ignores it): a comment line,
//! then `silenced:` → a list of `{code, by, at, reason}` maps. It lives in the polis, not in
//! polisd's machine-local state, because silencing is a decision of the team, shared with
//! every machine and clone as the rest of the folder is.

use crate::yaml::{self, DumpOptions, Mapping, Value};

/// The file, relative to `_polis/`.
pub const FILE: &str = "silenced.yml";

/// The first line of the file.
pub const HEADER: &str = "# Warning classes left out of the human queue (polisd check still reports them). Managed by the dashboard's console.\n";

/// One silenced class of warning.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Silence {
    /// A finding code (`P007`, `C004`).
    pub code: String,
    /// The citizen the person acted as.
    pub by: String,
    /// `YYYY-MM-DD HH:MM` in the polis timezone.
    pub at: String,
    pub reason: String,
}

/// Why the file cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FileError {
    #[error("{FILE} is not valid YAML ({0}); fix it by hand or remove it")]
    Yaml(String),
    #[error("{FILE} has no `silenced:` list; fix it by hand or remove it")]
    Shape,
}

/// Whether `code` has a finding code's shape: a letter `C` or `P` and three digits.
pub fn is_code(code: &str) -> bool {
    let b = code.as_bytes();
    b.len() == 4 && matches!(b[0], b'C' | b'P') && b[1..].iter().all(u8::is_ascii_digit)
}

/// The entries of the file's text. Entries without a well-formed code are skipped.
pub fn parse(text: &str) -> Result<Vec<Silence>, FileError> {
    let doc = yaml::load(text).map_err(|e| FileError::Yaml(e.to_string()))?;
    if doc.is_null() {
        return Ok(Vec::new());
    }
    let list = match doc.get("silenced") {
        Value::Seq(items) => items.as_slice(),
        Value::Null => &[],
        _ => return Err(FileError::Shape),
    };
    let text_of = |v: &Value, k: &str| v.get(k).as_str().unwrap_or("").to_string();
    Ok(list
        .iter()
        .filter(|v| v.get("code").as_str().is_some_and(is_code))
        .map(|v| Silence {
            code: text_of(v, "code"),
            by: text_of(v, "by"),
            at: text_of(v, "at"),
            reason: text_of(v, "reason"),
        })
        .collect())
}

/// The file's text for `entries`.
pub fn render(entries: &[Silence]) -> Result<String, yaml::EmitError> {
    let s = |t: &str| Value::Str(t.to_string());
    let items = entries
        .iter()
        .map(|e| {
            let mut m = Mapping::new();
            m.insert(s("code"), s(&e.code));
            m.insert(s("by"), s(&e.by));
            m.insert(s("at"), s(&e.at));
            m.insert(s("reason"), s(&e.reason));
            Value::Map(m)
        })
        .collect();
    let mut doc = Mapping::new();
    doc.insert(s("silenced"), Value::Seq(items));
    Ok(format!(
        "{HEADER}{}",
        yaml::dump(&Value::Map(doc), &DumpOptions::FRONTMATTER)?
    ))
}

/// `entries` with `new` in place of any entry for the same code (a second silence of a class
/// updates its reason), or added at the end.
pub fn with(entries: &[Silence], new: Silence) -> Vec<Silence> {
    let mut out: Vec<Silence> = entries
        .iter()
        .filter(|e| e.code != new.code)
        .cloned()
        .collect();
    out.push(new);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(code: &str, reason: &str) -> Silence {
        Silence {
            code: code.into(),
            by: "ann-agent".into(),
            at: "2026-03-01 10:00".into(),
            reason: reason.into(),
        }
    }

    #[test]
    fn render_then_parse_gives_the_entries_back() {
        let entries = vec![
            entry("P007", "we score by hand: \"3\" is fine"),
            entry("C004", ""),
        ];
        let text = render(&entries).unwrap();
        assert!(text.starts_with(HEADER));
        assert_eq!(parse(&text).unwrap(), entries);
    }

    #[test]
    fn a_second_silence_of_a_class_replaces_the_first() {
        let out = with(
            &[entry("P007", "old"), entry("C004", "x")],
            entry("P007", "new"),
        );
        assert_eq!(out, [entry("C004", "x"), entry("P007", "new")]);
    }

    #[test]
    fn bad_files_and_codes() {
        assert_eq!(parse("").unwrap(), []);
        assert_eq!(parse("silenced: 3\n"), Err(FileError::Shape));
        assert!(matches!(parse("silenced: [\n"), Err(FileError::Yaml(_))));
        let odd = parse("silenced:\n- code: X1\n- code: P0071\n- {code: P012}\n").unwrap();
        assert_eq!(odd.len(), 1);
        assert_eq!(odd[0].code, "P012");
        assert!(is_code("C009") && !is_code("p007") && !is_code("P07"));
    }
}
