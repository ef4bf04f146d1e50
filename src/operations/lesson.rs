//! Filing a lesson (`lessons/<first tag>/<YYYY-MM-DD-slug>.md`) and its `filed lesson` line.

use crate::fs::writer::Writer;
use crate::operations::arg::{Arg, Words};
use crate::operations::chronicle::{self, Appended};
use crate::operations::error::OpError;
use crate::protocol::clock::PolisTime;
use crate::protocol::contracts::lesson::{self as rules, NewLesson};
use crate::protocol::layout;

/// What `lesson file` asks for.
#[derive(Debug, Clone)]
pub struct LessonRequest {
    pub by: String,
    pub tags: Vec<String>,
    pub contract: Option<String>,
    pub impact: i64,
    pub text: String,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct Filed {
    pub lesson_id: String,
    pub path: String,
    pub chronicle: Appended,
}

/// Files an accepted lesson under its first tag's folder, with the id `<today>-<slug of its
/// text>` (`-2`, `-3`… on a clash), and appends `filed lesson`. The same lesson filed again
/// today (a replayed command) is refused with nothing written, unless its line is missing.
pub fn file(writer: &Writer, now: &PolisTime, req: &LessonRequest) -> Result<Filed, OpError> {
    let _transition = writer.transition_lock()?;
    file_locked(writer, now, req)
}

/// [`file`] for an operation that holds the transition lock already (`contract settle`).
pub(crate) fn file_locked(
    writer: &Writer,
    now: &PolisTime,
    req: &LessonRequest,
) -> Result<Filed, OpError> {
    let root = writer.root();
    chronicle::require_citizen(root, &req.by)?;
    if req.text.trim().is_empty() {
        return Err(OpError::Empty {
            what: "the lesson",
            fix: "write one paragraph: what happened and what to do next time".into(),
        });
    }
    // Its first line is the lesson's `# ` heading and the rest one paragraph: a line break
    // would write headings of its own into the file context packets quote.
    crate::operations::error::on_one_line("the lesson", None, &req.text)?;
    if !(1..=5).contains(&req.impact) {
        return Err(OpError::Impact(req.impact));
    }
    // Trimmed and without empty ones, whichever front end split them.
    let tags: Vec<String> = req
        .tags
        .iter()
        .map(|t| t.trim())
        .filter(|t| !t.is_empty())
        .map(str::to_string)
        .collect();
    let Some(first) = tags.first() else {
        return Err(OpError::Empty {
            what: "the tag list",
            fix: Words::asking(
                "name the capability tags the lesson is about in ",
                Arg::Tags,
                "",
            ),
        });
    };
    for tag in &tags {
        crate::operations::lookup::check_slug("tag", tag)?;
    }
    if let Some(cid) = &req.contract {
        crate::operations::lookup::find(root, cid)?;
    }
    let date = now.now.format("%Y-%m-%d").to_string();
    let base = format!("{date}-{}", layout::slugify(&req.text, Some(48), "lesson"));
    let base = base.trim_end_matches('-').to_string();
    chronicle::check_appendable(writer)?;
    let dir = format!("{}/{first}", layout::LESSONS_DIR);
    let new = |id: &str| NewLesson {
        lesson_id: id.to_string(),
        filed_by: req.by.clone(),
        filed_at: now.second_stamp(),
        capability_tags: tags.clone(),
        related_contracts: req.contract.iter().cloned().collect(),
        quality_impact: req.impact as u8,
        text: req.text.clone(),
    };
    let probe = rules::render_new(&new(&base))?;
    if let Some(path) = crate::operations::lookup::filed_earlier(
        root,
        &base,
        |id| Some(format!("{dir}/{id}.md")),
        |_| true,
        |text| rules::same_filing(text, &probe),
    ) {
        // Under the transition lock no other run is half-way: a filing without its line is one
        // killed between the two, and the rerun finishes it.
        let link = path.trim_end_matches(".md");
        if chronicle::has_line_of(root, Some(&req.by), "filed lesson", link) {
            return Err(OpError::LessonFiled { path });
        }
        return recorded(writer, now, req, path);
    }
    for _ in 0..8 {
        let id = layout::unique_id(&base, |id| {
            std::fs::symlink_metadata(root.join(format!("{dir}/{id}.md"))).is_ok()
        });
        let text = rules::render_new(&new(&id))?;
        let rel = format!("{dir}/{id}.md");
        if !writer.create_new(&rel, text.as_bytes())? {
            continue;
        }
        return recorded(writer, now, req, rel);
    }
    Err(OpError::Busy(format!("{dir}/{base}*.md")))
}

/// Appends `filed lesson` for the lesson filed at `rel`, and says what was filed.
fn recorded(
    writer: &Writer,
    now: &PolisTime,
    req: &LessonRequest,
    rel: String,
) -> Result<Filed, OpError> {
    let line = chronicle::append(
        writer,
        now,
        &req.by,
        "filed lesson",
        Some(rel.trim_end_matches(".md")),
        &rules::title_of(&req.text),
    )?;
    Ok(Filed {
        lesson_id: layout::record_stem(&rel).to_string(),
        path: rel,
        chronicle: line,
    })
}
