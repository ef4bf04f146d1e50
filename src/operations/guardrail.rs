//! Guardrails as the reference keeps them (`guardrails/<slug>.md`): add one, list the active
//! ones, and find those a contract's tags inherit.

use crate::fs::snapshot;
use crate::fs::writer::Writer;
use crate::operations::arg::{Arg, Words};
use crate::operations::error::OpError;
use crate::protocol::clock::PolisTime;
use crate::protocol::contracts::guardrail::{self as rules, Guardrail, DIR};
use crate::protocol::layout;
use std::path::Path;

#[derive(Debug, Clone, serde::Serialize)]
pub struct Added {
    pub guardrail_id: String,
    pub path: String,
}

/// Adds a guardrail with the reference's id rule (48 characters of the text's slug, `-2`… on a
/// clash) and frontmatter. Like the reference, it writes no chronicle line.
pub fn add(
    writer: &Writer,
    now: &PolisTime,
    text: &str,
    tags: &[String],
    from: Option<&str>,
) -> Result<Added, OpError> {
    let root = writer.root();
    if text.trim().is_empty() {
        return Err(OpError::Empty {
            what: "the guardrail",
            fix: Words::asking("pass ", Arg::Text, " \"the check that must pass\""),
        });
    }
    // Every later contract on these tags carries the text as one `- ` item of its acceptance
    // criteria: a line break would add criteria of its own, checked ones too.
    crate::operations::error::on_one_line("the guardrail", Arg::Text, text)?;
    for tag in tags {
        crate::operations::lookup::check_slug("tag", tag)?;
    }
    if let Some(cid) = from {
        crate::operations::lookup::check_slug("contract id", cid)?;
    }
    let base = layout::slugify(text, Some(48), "guardrail");
    // A replayed command (an agent retrying after a timeout) would add an active twin, and
    // every contract opened later would carry its check twice.
    let probe = rules::render_new(&base, text, tags, from, &now.second_stamp())?;
    if let Some(path) = crate::operations::lookup::filed_earlier(
        root,
        &base,
        |id| Some(format!("{DIR}/{id}.md")),
        |_| true,
        |existing| rules::same_guardrail(existing, &probe),
    ) {
        return Err(OpError::GuardrailAdded { path });
    }
    for _ in 0..8 {
        let id = layout::unique_id(&base, |id| {
            std::fs::symlink_metadata(root.join(format!("{DIR}/{id}.md"))).is_ok()
        });
        let bytes = rules::render_new(&id, text, tags, from, &now.second_stamp())?;
        let rel = format!("{DIR}/{id}.md");
        if writer.create_new(&rel, bytes.as_bytes())? {
            return Ok(Added {
                guardrail_id: id,
                path: rel,
            });
        }
    }
    Err(OpError::Busy(format!("{DIR}/{base}*.md")))
}

/// The active guardrails, in file-name order. Unreadable files are left out.
pub fn list(root: &Path) -> Vec<Guardrail> {
    let mut findings = Vec::new();
    let mut files = snapshot::read_records(root, DIR, &mut findings);
    files.sort_by(|a, b| a.rel.cmp(&b.rel));
    files
        .iter()
        .filter_map(|f| rules::from_record(&f.stem, &f.record))
        .collect()
}

/// The active guardrails a contract requiring `tags` inherits.
pub fn matching(root: &Path, tags: &[String]) -> Vec<Guardrail> {
    list(root)
        .into_iter()
        .filter(|g| rules::applies(g, tags))
        .collect()
}
