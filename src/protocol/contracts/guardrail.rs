//! Guardrails (`guardrails/<slug>.md`, as the reference writes them): must-pass criteria learned
//! from failures, inherited by new contracts on their tags and shown in context packets.
//!
//! Pure: records in, guardrails out; rendering a new one returns its bytes.
//!
//! Deliberate difference: a guardrail with no tags applies to every contract, as the
//! reference's tool description says. The reference's code skips it for a contract that has
//! tags (it intersects an empty tag set), so such a guardrail never reached tagged work.

use crate::protocol::frontmatter::Record;
use crate::yaml::{self, Mapping, Value};

/// Where guardrails live, relative to `_polis/`.
pub const DIR: &str = "guardrails";

/// An active guardrail.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Guardrail {
    pub guardrail_id: String,
    pub tags: Vec<String>,
    pub text: String,
    pub source_contract: Option<String>,
}

/// The guardrail a record describes, `None` when its `status` is not `active`.
pub fn from_record(stem: &str, record: &Record) -> Option<Guardrail> {
    let status = match record.get("status") {
        Value::Null => "active".to_string(),
        v => v.python_str(),
    };
    if status.to_lowercase() != "active" {
        return None;
    }
    let tags = match record.get("tags") {
        Value::Seq(items) => items.iter().map(Value::python_str).collect(),
        Value::Null => Vec::new(),
        v => vec![v.python_str()],
    };
    Some(Guardrail {
        guardrail_id: record
            .get("guardrail_id")
            .as_str()
            .map_or_else(|| stem.to_string(), str::to_string),
        tags,
        text: record.body.trim().to_string(),
        source_contract: record.get("source_contract").as_str().map(str::to_string),
    })
}

/// Whether a guardrail applies to a contract requiring `tags`: it shares a tag, or it has no
/// tags (see the module note), or the contract has none.
pub fn applies(g: &Guardrail, tags: &[String]) -> bool {
    g.tags.is_empty() || tags.is_empty() || g.tags.iter().any(|t| tags.contains(t))
}

/// The acceptance criterion a guardrail adds to a new contract.
/// A guardrail file is written by hand too, its text on several lines: here it becomes one
/// `- ` item of a contract's criteria, so its whitespace runs collapse to one space and it
/// cannot add items (a checked one) or headings of its own.
pub fn criterion(g: &Guardrail) -> String {
    format!(
        "[guardrail] {}",
        crate::protocol::delivery::agent_text::plain(&g.text)
    )
}

/// The bytes of a new guardrail file, frontmatter in the reference's key order.
pub fn render_new(
    id: &str,
    text: &str,
    tags: &[String],
    source_contract: Option<&str>,
    created_at: &str,
) -> Result<String, yaml::EmitError> {
    let s = |v: &str| Value::Str(v.to_string());
    let mut m = Mapping::new();
    m.insert(s("guardrail_id"), s(id));
    m.insert(s("tags"), Value::Seq(tags.iter().map(|t| s(t)).collect()));
    m.insert(s("status"), s("active"));
    m.insert(s("source_contract"), source_contract.map_or(Value::Null, s));
    m.insert(s("created_at"), s(created_at));
    let head = yaml::dump(&Value::Map(m), &crate::yaml::DumpOptions::FRONTMATTER)?;
    Ok(format!("---\n{head}---\n\n{}\n", text.trim()))
}

/// Whether `existing` is the guardrail `new` would add again: the same active check and source
/// contract on the same set of tags, whatever its id and time. The tags are a set, as
/// `applies` reads them: `api,py` after `py,api`, or `py,py` after `py`, is the same check, and
/// a twin would put it into every later contract's criteria twice.
pub fn same_guardrail(existing: &str, new: &str) -> bool {
    let read = |text: &str| {
        let record = crate::protocol::frontmatter::parse(text).ok()?;
        let g = from_record("", &record)?;
        let tags: std::collections::BTreeSet<String> = g.tags.into_iter().collect();
        Some((g.text, g.source_contract, tags))
    };
    matches!((read(existing), read(new)), (Some(a), Some(b)) if a == b)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn g(tags: &[&str]) -> Guardrail {
        Guardrail {
            guardrail_id: "x".into(),
            tags: tags.iter().map(|t| t.to_string()).collect(),
            text: "t".into(),
            source_contract: None,
        }
    }

    #[test]
    fn untagged_guardrail_applies_to_tagged_contracts() {
        assert!(applies(&g(&[]), &["python".into()]));
        assert!(applies(&g(&["python"]), &["python".into(), "sql".into()]));
        assert!(!applies(&g(&["rust"]), &["python".into()]));
        assert!(applies(&g(&["rust"]), &[]));
    }

    #[test]
    fn the_same_guardrail_is_the_same_check_tags_and_source_whatever_its_id_and_time() {
        let new = |id: &str, at: &str, text: &str, tags: &[String]| {
            render_new(id, text, tags, Some("old-bug"), at).unwrap()
        };
        let py = ["python".to_string()];
        let first = new("run-tests", "2026-01-02 03:04:05", "Run the tests", &py);
        assert!(same_guardrail(
            &first,
            &new("run-tests-2", "2026-03-02 10:00:00", "Run the tests", &py)
        ));
        assert!(!same_guardrail(
            &first,
            &new("run-tests", "2026-01-02 03:04:05", "Run the tests", &[])
        ));
        assert!(!same_guardrail(
            &first,
            &new(
                "run-tests",
                "2026-01-02 03:04:05",
                "Run the tests first",
                &py
            )
        ));
        let retired = first.replace("status: active", "status: retired");
        assert!(!same_guardrail(&retired, &first));
    }

    #[test]
    fn the_same_tags_in_another_order_or_named_twice_are_the_same_guardrail() {
        let tags = |t: &[&str]| t.iter().map(|t| t.to_string()).collect::<Vec<_>>();
        let new = |t: &[&str]| {
            render_new("x", "Run the tests", &tags(t), None, "2026-01-02 03:04:05").unwrap()
        };
        assert!(same_guardrail(&new(&["py", "api"]), &new(&["api", "py"])));
        assert!(same_guardrail(&new(&["py", "py"]), &new(&["py"])));
        assert!(!same_guardrail(&new(&["py", "api"]), &new(&["py"])));
    }

    #[test]
    fn render_new_reads_back() {
        let text = render_new(
            "run-tests",
            "Run the tests",
            &["python".into()],
            None,
            "2026-01-02 03:04:05",
        )
        .unwrap();
        assert!(text.starts_with("---\nguardrail_id: run-tests\ntags:\n- python\nstatus: active\nsource_contract: null\ncreated_at: '2026-01-02 03:04:05'\n---\n\nRun the tests\n"), "{text}");
        let rec = crate::protocol::frontmatter::parse(&text).unwrap();
        assert_eq!(
            from_record("run-tests", &rec).unwrap().text,
            "Run the tests"
        );
    }
}
