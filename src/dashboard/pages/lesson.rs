//! One lesson: who filed it and when, the tags and contracts it is about, its text as
//! markdown, whether it weighs on routing (SPEC §10) and through which `routing_effect`
//! entries, and the findings about its file. A lesson polisd could not parse (broken
//! frontmatter, over the size limit) gets a page too, saying why, so a link to it never
//! leads to a bare 404.
//!
//! The id in the URL is only ever compared with the lessons the snapshot read; it never
//! becomes a path, so no id can reach a file outside `lessons/`.

use super::{citizen_link, contract_link, Context, Page, PageError, Rendered};
use crate::fs::snapshot::LessonFile;
use crate::protocol::contracts::lesson::Lesson;
use crate::protocol::finding::{Code, Finding};
use crate::protocol::layout::LESSONS_DIR;
use maud::{html, Markup};

pub const PAGE: Page = Page {
    route: "/lessons/{id}",
    nav: None,
    render,
};

/// The longest body shown: a lesson is a paragraph, and a runaway file must not make a page
/// of megabytes. Longer ones are shown cut, with a note.
const BODY_SHOWN: usize = 256 * 1024;

fn render(cx: &Context<'_>) -> Result<Rendered, PageError> {
    let s = cx.snapshot;
    let id = cx.param("id");
    // By its `lesson_id`, else by its file name (chronicle links name the file); the two
    // differ only in a hand-written file.
    let by_id: Vec<&LessonFile> = s
        .polis
        .lessons
        .iter()
        .filter(|l| l.lesson.lesson_id == id)
        .collect();
    let matches = if by_id.is_empty() {
        s.polis
            .lessons
            .iter()
            .filter(|l| stem(&l.rel) == id)
            .collect()
    } else {
        by_id
    };
    match matches.split_first() {
        Some((l, others)) => Ok(shown(cx, l, others)),
        None => unparsed(cx, id),
    }
}

/// The page of a lesson the snapshot holds; `others` are further files with the same id.
fn shown(cx: &Context<'_>, l: &LessonFile, others: &[&LessonFile]) -> Rendered {
    let s = cx.snapshot;
    let lesson = &l.lesson;
    let read = crate::fs::snapshot::read_text(
        &s.polis.root,
        &l.rel,
        Some(crate::fs::snapshot::MAX_RECORD_BYTES),
    );
    let text = match &read {
        Ok(Some(text)) => Some(text.as_str()),
        _ => None,
    };
    let split = text.map(crate::protocol::frontmatter::split);
    let body = split.as_ref().map_or("", |sp| heading_of(sp.body).1);
    let (body, cut) = cut_at(body, BODY_SHOWN);
    let title = title_of(lesson, text);
    let related = related_ids(&lesson.related_contracts);
    let floor = s.polis.settings.lesson_impact_floor;
    let weighs = lesson.affects_routing(floor);
    let findings: Vec<&Finding> = s.findings.iter().filter(|f| f.path == l.rel).collect();
    let body = html! {
        h1 { (title) }
        p.muted #lesson-meta {
            (l.rel)
            " · lesson " code { (lesson.lesson_id) }
            @if let Some(by) = &lesson.filed_by {
                " · filed by "
                @if s.polis.cards.contains_key(by) { (citizen_link(cx, by)) } @else { (by) }
            }
            @if !lesson.filed_at.is_null() { " · filed " (lesson.filed_at.python_str()) }
            " · status " strong #lesson-status { (lesson.status.python_str()) }
        }
        @if !others.is_empty() {
            p.warning {
                "Other files have this id too: "
                @for (i, o) in others.iter().enumerate() { @if i > 0 { ", " } (o.rel) }
                "; this page shows the first in path order."
            }
        }
        table.frontmatter #lesson-facts {
            tbody {
                tr { th { "tags" } td {
                    @if lesson.capability_tags.is_empty() { span.muted { "none" } }
                    @for (i, t) in lesson.capability_tags.iter().enumerate() { @if i > 0 { ", " } (tag_link(cx, t)) }
                } }
                tr { th { "contracts" } td #lesson-contracts {
                    @if related.is_empty() { span.muted { "none" } }
                    @for (i, c) in related.iter().enumerate() {
                        @if i > 0 { ", " }
                        @if s.folder_of(c).is_some() { (contract_link(cx, c)) } @else { (c) span.muted { " (not in this polis)" } }
                    }
                } }
                tr { th { "quality impact" } td { @match lesson.quality_impact { Some(q) => { (q) } None => { span.muted { "none" } } } } }
            }
        }
        h2 { "Lesson" }
        @match &read {
            Ok(Some(_)) => {
                (super::markdown_at(cx, &l.rel, body))
                @if cut { p.warning { "The text is longer than " (BODY_SHOWN / 1024) " KiB; only its start is shown. The whole file is " code { (l.rel) } "." } }
            }
            Ok(None) => { p.muted { "The file is gone since the polis was read." } }
            Err(f) => { p.warning { (f.message) } }
        }
        h2 { "Routing" }
        (routing(cx, l, weighs, floor))
        @if !findings.is_empty() {
            h2 { "Findings (" (findings.len()) ")" }
            (finding_list(&findings))
        }
        @if let Some(yaml) = split.as_ref().and_then(|sp| sp.yaml) {
            details #lesson-frontmatter {
                summary { "Frontmatter as written" }
                (super::frontmatter_table(yaml))
            }
        }
    };
    Rendered { title, body }
}

/// Whether the lesson weighs on routing and, if it does, each `routing_effect` entry: the
/// citizen it names, the tags it is limited to, its delta.
fn routing(cx: &Context<'_>, l: &LessonFile, weighs: bool, floor: f64) -> Markup {
    let s = cx.snapshot;
    let effects = l.lesson.routing_effect.as_deref().unwrap_or(&[]);
    html! {
        @if weighs {
            p #lesson-routing {
                "Weighs on routing: its " code { "routing_effect" } " adds to the lessons part of a citizen's score "
                "on a contract whose tags it meets, the sum capped at ±" (s.polis.settings.lesson_cap) "."
            }
        } @else {
            p.muted #lesson-routing {
                "Does not weigh on routing: a lesson does only when it is accepted, has a "
                code { "routing_effect" } " list and a " code { "quality_impact" } " of at least "
                (floor) " (" code { "routing.lesson_impact_floor" } ")."
            }
        }
        @if !effects.is_empty() {
            table #lesson-effects {
                thead { tr { th { "citizen" } th { "tags" } th { "delta" } } }
                tbody {
                    @for e in effects {
                        tr {
                            td { @match &e.citizen {
                                Some(c) if s.polis.cards.contains_key(c) => { (citizen_link(cx, c)) }
                                Some(c) => { (c) span.muted { " (not a citizen)" } }
                                None => { span.muted { "no citizen: never applies" } }
                            } }
                            td { @if e.tags.is_empty() { span.muted { "any" } }
                                @for (i, t) in e.tags.iter().enumerate() { @if i > 0 { ", " } (t.python_str()) } }
                            td { @match e.delta { Some(d) => { (format!("{d:+}")) } None => { span.warning { "not a number: skipped" } } } }
                        }
                    }
                }
            }
        }
    }
}

/// A lesson file the snapshot could not parse or read: the findings about it and, when it can
/// be read, its text as written. Found only among the findings' paths, which came from
/// walking `lessons/`.
fn unparsed(cx: &Context<'_>, id: &str) -> Result<Rendered, PageError> {
    let s = cx.snapshot;
    let not_found = || PageError::NotFound(format!("no lesson `{id}` in this polis"));
    let rel = s
        .findings
        .iter()
        .filter(|f| matches!(f.code, Code::Unreadable | Code::BadYaml))
        .map(|f| f.path.as_str())
        .find(|p| {
            p.strip_prefix(LESSONS_DIR)
                .is_some_and(|rest| rest.starts_with('/'))
                && !p.split('/').any(|part| part == "..")
                && stem(p) == id
        })
        .ok_or_else(not_found)?;
    let findings: Vec<&Finding> = s.findings.iter().filter(|f| f.path == rel).collect();
    let text = crate::fs::snapshot::read_text(
        &s.polis.root,
        rel,
        Some(crate::fs::snapshot::MAX_RECORD_BYTES),
    )
    .ok()
    .flatten();
    let body = html! {
        h1 { (id) }
        p.muted { (rel) }
        p.error #lesson-unparsed { "polisd could not read this lesson; until its file is fixed it does not weigh on routing." }
        (finding_list(&findings))
        @if let Some(text) = text {
            h2 { "The file as written" }
            pre #lesson-raw { (cut_at(&text, BODY_SHOWN).0) }
        }
    };
    Ok(Rendered {
        title: id.to_string(),
        body,
    })
}

fn finding_list(findings: &[&Finding]) -> Markup {
    html! {
        ul #lesson-findings {
            @for f in findings {
                li class=(f.severity.as_str()) {
                    (f.code.as_str()) @if let Some(n) = f.line { " line " (n) } ": " (f.message)
                }
            }
        }
    }
}

/// A tag as a link to its section of the tags page, when it has one.
fn tag_link(cx: &Context<'_>, tag: &str) -> Markup {
    if cx.snapshot.stats.tags.iter().any(|t| t.tag == tag) {
        html! { a href=(format!("{}#tag-{}", cx.href("tags"), super::urlencode(tag))) { (tag) } }
    } else {
        html! { (tag) }
    }
}

/// The file name without `.md`.
fn stem(rel: &str) -> &str {
    let name = rel.rsplit('/').next().unwrap_or(rel);
    name.strip_suffix(".md").unwrap_or(name)
}

/// A lesson's title, on its page and wherever it is listed: the body's first line when that
/// is a `# ` heading, else its id. `text` is the file as read (`None` when it could not be).
pub fn title_of(lesson: &Lesson, text: Option<&str>) -> String {
    text.and_then(|t| heading_of(crate::protocol::frontmatter::split(t).body).0)
        .unwrap_or_else(|| lesson.lesson_id.clone())
}

/// The body's first line as the page's title when it is a `# ` heading (what `lesson file`
/// writes), with the rest of the body; else no title and the whole body.
fn heading_of(body: &str) -> (Option<String>, &str) {
    let start = body.len() - body.trim_start().len();
    let rest = &body[start..];
    let (first, after) = rest.split_once('\n').unwrap_or((rest, ""));
    match first.strip_prefix("# ") {
        Some(h) if !h.trim().is_empty() => (Some(h.trim().to_string()), after),
        _ => (None, body),
    }
}

/// At most `max` bytes of `text`, cut at a character boundary, and whether it was cut.
fn cut_at(text: &str, max: usize) -> (&str, bool) {
    if text.len() <= max {
        return (text, false);
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    (&text[..end], true)
}

/// `related_contracts` as ids: a list of strings, or one string.
pub fn related_ids(related: &crate::yaml::Value) -> Vec<String> {
    match related.as_seq() {
        Some(items) => items
            .iter()
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect(),
        None => related.as_str().map(str::to_string).into_iter().collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_heading_first_line_is_the_title_and_leaves_the_body() {
        assert_eq!(
            heading_of("\n# Check the store\n\nCheck it.\n"),
            (Some("Check the store".into()), "\nCheck it.\n")
        );
        assert_eq!(heading_of("Plain.\n"), (None, "Plain.\n"));
        assert_eq!(heading_of("## Sub\n"), (None, "## Sub\n"));
        assert_eq!(heading_of(""), (None, ""));
    }

    #[test]
    fn a_cut_never_splits_a_character() {
        assert_eq!(cut_at("héllo", 2), ("h", true));
        assert_eq!(cut_at("héllo", 3), ("hé", true));
        assert_eq!(cut_at("hi", 3), ("hi", false));
    }
}
