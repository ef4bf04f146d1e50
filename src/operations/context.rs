//! The context packet an agent reads before starting a contract (the reference's `contract
//! context`): the accepted lessons on the contract's tags by impact, the must-pass guardrails,
//! the routing block's explanation and the open questions, bounded in size.

use crate::fs::snapshot;
use crate::operations::error::OpError;
use crate::protocol::contracts::guardrail::Guardrail;
use crate::protocol::frontmatter::{self, Record};
use crate::protocol::layout;
use crate::yaml::Value;
use std::path::Path;

/// At most this many lessons are in a packet (the strongest first).
pub const MAX_LESSONS: usize = 12;
/// A lesson's summary is cut at this many characters, as the reference cuts it.
pub const SUMMARY_CHARS: usize = 240;

#[derive(Debug, Clone, serde::Serialize)]
pub struct LessonBrief {
    pub lesson_id: String,
    pub tags: Vec<String>,
    pub title: String,
    pub summary: String,
    pub quality_impact: Option<f64>,
    pub path: String,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct Packet {
    pub contract_id: String,
    pub title: String,
    pub state: &'static str,
    pub owner: Option<String>,
    pub required_tags: Vec<String>,
    pub acceptance_criteria: Vec<String>,
    pub guardrails: Vec<Guardrail>,
    pub lessons: Vec<LessonBrief>,
    /// Lessons that matched but were left out by [`MAX_LESSONS`].
    pub lessons_left_out: usize,
    /// The `routing:` block in words, when the router has written it.
    pub routing: Option<String>,
    pub open_questions: Vec<String>,
}

fn lesson_title(body: &str, fallback: &str) -> String {
    body.lines()
        .map(str::trim)
        .find(|l| l.starts_with('#'))
        .map(|l| l.trim_start_matches('#').trim().to_string())
        .unwrap_or_else(|| fallback.to_string())
}

fn first_paragraph(body: &str) -> String {
    let mut chunk = Vec::new();
    for line in body.lines() {
        let s = line.trim();
        if s.starts_with('#') {
            continue;
        }
        if s.is_empty() {
            if !chunk.is_empty() {
                break;
            }
            continue;
        }
        chunk.push(s);
    }
    let text = chunk.join(" ");
    if text.chars().count() > SUMMARY_CHARS {
        format!("{}…", text.chars().take(SUMMARY_CHARS).collect::<String>())
    } else {
        text
    }
}

/// Accepted lessons sharing a tag with `tags` (every lesson when `tags` is empty), by
/// impact, strongest first; ties keep path order.
pub fn matching_lessons(root: &Path, tags: &[String]) -> Vec<LessonBrief> {
    let mut findings = Vec::new();
    let mut files = snapshot::read_records_recursive(root, layout::LESSONS_DIR, &mut findings);
    files.sort_by(|a, b| a.rel.cmp(&b.rel));
    let mut out = Vec::new();
    for f in files {
        let l = crate::protocol::contracts::lesson::Lesson::from_record(&f.stem, &f.record);
        if f.record.fields.as_map().is_none_or(|m| m.is_empty()) || !l.is_accepted() {
            continue;
        }
        let mut overlap: Vec<String> = l
            .capability_tags
            .iter()
            .filter(|t| tags.contains(t))
            .cloned()
            .collect();
        overlap.sort();
        overlap.dedup();
        if !tags.is_empty() && overlap.is_empty() {
            continue;
        }
        let shown = if overlap.is_empty() {
            let mut all = l.capability_tags.clone();
            all.sort();
            all
        } else {
            overlap
        };
        out.push(LessonBrief {
            title: lesson_title(&f.record.body, &l.lesson_id),
            summary: first_paragraph(&f.record.body),
            lesson_id: l.lesson_id,
            tags: shown,
            quality_impact: l.quality_impact,
            path: f.rel,
        });
    }
    out.sort_by(|a, b| {
        b.quality_impact
            .unwrap_or(0.0)
            .total_cmp(&a.quality_impact.unwrap_or(0.0))
    });
    out
}

fn strings(v: &Value) -> Vec<String> {
    match v {
        Value::Seq(items) => items.iter().map(Value::python_str).collect(),
        Value::Null => Vec::new(),
        v => vec![v.python_str()],
    }
}

fn routing_words(record: &Record) -> Option<String> {
    let r = record.get("routing");
    let who = r.get("recommended_by_router").as_str()?;
    let score = match r.get("recommendation_score") {
        Value::Null => String::new(),
        v => format!(" (score {})", v.python_str()),
    };
    let how = if r.get("exploration").is_truthy() {
        "an exploration pick, to learn more about a less-proven citizen"
    } else {
        "the citizen with the best record on these tags"
    };
    Some(format!("The router recommended {who}{score}: {how}."))
}

/// The `Open questions` section's items (any heading level), or its lines.
fn open_questions(body: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut inside = false;
    for line in body.lines() {
        let t = line.trim();
        if t.starts_with('#') {
            inside = t
                .trim_start_matches('#')
                .trim()
                .eq_ignore_ascii_case("open questions");
            continue;
        }
        if inside && !t.is_empty() {
            out.push(t.trim_start_matches(['-', '*']).trim().to_string());
        }
    }
    out
}

/// The packet for contract `cid`.
pub fn packet(root: &Path, cid: &str) -> Result<Packet, OpError> {
    let (folder, rel) = crate::operations::lookup::find(root, cid)?;
    let text = snapshot::read_text(root, &rel, Some(snapshot::MAX_RECORD_BYTES))?
        .ok_or_else(|| OpError::NoContract(cid.to_string()))?;
    let record = frontmatter::parse(&text).map_err(|e| OpError::Unreadable {
        path: rel.clone(),
        why: e.to_string(),
    })?;
    let tags = crate::protocol::contracts::contract::tags_of(record.get("required_tags")).0;
    let mut lessons = matching_lessons(root, &tags);
    let left_out = lessons.len().saturating_sub(MAX_LESSONS);
    lessons.truncate(MAX_LESSONS);
    Ok(Packet {
        contract_id: record
            .get("contract_id")
            .as_str()
            .unwrap_or(cid)
            .to_string(),
        title: record.get("title").as_str().unwrap_or("").to_string(),
        state: folder.name(),
        owner: record.get("owner").as_str().map(str::to_string),
        acceptance_criteria: strings(record.get("acceptance_criteria")),
        guardrails: crate::operations::guardrail::matching(root, &tags),
        routing: routing_words(&record),
        open_questions: open_questions(&record.body),
        required_tags: tags,
        lessons,
        lessons_left_out: left_out,
    })
}

/// The packet as markdown, the reference's layout with polisd's additions.
///
/// What hand-written files give it (a title, a criterion, a guardrail, a lesson's heading) is
/// flattened to the one line it is shown on: a line break there would start sections of the
/// packet's own, which the agent reads as polisd's.
pub fn render(p: &Packet) -> String {
    use crate::protocol::delivery::agent_text::plain;
    let mut lines = vec![
        format!("# Context packet — {}", p.contract_id),
        format!("_{}_", plain(&p.title)),
        String::new(),
        format!(
            "**Required tags:** {}",
            if p.required_tags.is_empty() {
                "—".to_string()
            } else {
                p.required_tags.join(", ")
            }
        ),
    ];
    if !p.acceptance_criteria.is_empty() {
        lines.extend([String::new(), "**Acceptance criteria:**".into()]);
        lines.extend(
            p.acceptance_criteria
                .iter()
                .map(|c| format!("- {}", plain(c))),
        );
    }
    if !p.guardrails.is_empty() {
        lines.extend([
            String::new(),
            format!(
                "## Must-pass guardrails ({}, learned from past failures)",
                p.guardrails.len()
            ),
        ]);
        for g in &p.guardrails {
            let tags = if g.tags.is_empty() {
                "any contract".to_string()
            } else {
                g.tags.join(", ")
            };
            lines.push(format!("- ⚠️ {}  `[{tags}]`", plain(&g.text)));
        }
    }
    if let Some(r) = &p.routing {
        lines.extend([String::new(), "## Routing".into(), r.clone()]);
    }
    let total = p.lessons.len() + p.lessons_left_out;
    lines.extend([
        String::new(),
        format!("## What the team already learned ({total} applicable lesson(s))"),
    ]);
    if p.lessons.is_empty() {
        lines.push("No prior lessons match these tags yet — this task will help seed them.".into());
    }
    for l in &p.lessons {
        let impact = l
            .quality_impact
            .map(|i| format!(" · impact {i}"))
            .unwrap_or_default();
        lines.extend([
            String::new(),
            format!("### {}  `[{}]`{impact}", plain(&l.title), l.tags.join(", ")),
            l.summary.clone(),
        ]);
    }
    if p.lessons_left_out > 0 {
        lines.push(format!(
            "\n({} weaker lesson(s) left out; `ls _polis/lessons/` lists them all)",
            p.lessons_left_out
        ));
    }
    if !p.open_questions.is_empty() {
        lines.extend([String::new(), "## Open questions".into()]);
        lines.extend(p.open_questions.iter().map(|q| format!("- {q}")));
    }
    lines.join("\n")
}
