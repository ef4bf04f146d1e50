//! Writing a review (`reviews/<YYYY-MM-DD-HHMM>-<cid>.md`) and announcing its decision.

use crate::fs::writer::Writer;
use crate::operations::chronicle::{self, Appended};
use crate::operations::error::OpError;
use crate::protocol::clock::PolisTime;
use crate::protocol::contracts::review::{self as rules, Decision};
use crate::protocol::layout;

#[derive(Debug, Clone, serde::Serialize)]
pub struct Reviewed {
    pub contract_id: String,
    pub decision: String,
    pub path: String,
    pub chronicle: Appended,
}

/// Writes `reviewer`'s review of contract `cid` (in any folder) and appends `signed off`,
/// `rejected review` or `requested changes`, linking the review.
pub fn review(
    writer: &Writer,
    now: &PolisTime,
    cid: &str,
    reviewer: &str,
    decision: &Decision,
    body: &str,
) -> Result<Reviewed, OpError> {
    let root = writer.root();
    chronicle::require_citizen(root, reviewer)?;
    let (_, contract_rel) = crate::operations::lookup::find(root, cid)?;
    let _transition = writer.transition_lock()?;
    let name = rules::file_name(&now.now, cid);
    let rel = format!("{}/{name}", layout::REVIEWS_DIR);
    let text = rules::render_new(
        reviewer,
        contract_rel.trim_end_matches(".md"),
        cid,
        decision,
        &now.second_stamp(),
        body,
    )?;
    if !writer.create_new(&rel, text.as_bytes())? {
        let winner =
            crate::fs::snapshot::read_text(root, &rel, Some(crate::fs::snapshot::MAX_RECORD_BYTES))
                .ok()
                .flatten()
                .and_then(|t| crate::protocol::frontmatter::parse(&t).ok())
                .and_then(|r| r.get("reviewer").as_str().map(str::to_string))
                .unwrap_or_else(|| "another reviewer".to_string());
        return Err(OpError::Reviewed {
            id: cid.to_string(),
            by: winner,
            path: rel,
        });
    }
    let link = rel.trim_end_matches(".md").to_string();
    let line = chronicle::append(
        writer,
        now,
        reviewer,
        rules::chronicle_verb(decision),
        Some(&link),
        decision.as_str(),
    )?;
    Ok(Reviewed {
        contract_id: cid.to_string(),
        decision: decision.as_str().to_string(),
        path: rel,
        chronicle: line,
    })
}
