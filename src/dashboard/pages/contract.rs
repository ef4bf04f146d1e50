//! One contract: its frontmatter, its body as markdown, the routing explanation (what `polisd
//! route ID --explain` prints), the chronicle lines about it, its lessons and reviews.

use super::{citizen_link, markdown, Context, Page, PageError, Rendered};
use crate::protocol::chronicle;
use crate::protocol::layout::ContractFolder;
use maud::html;

pub const PAGE: Page = Page {
    route: "/contracts/{id}",
    nav: None,
    render,
};

fn render(cx: &Context<'_>) -> Result<Rendered, PageError> {
    let s = cx.snapshot;
    let id = cx.param("id");
    let file = s
        .polis
        .contract(id)
        .ok_or_else(|| PageError::NotFound(format!("no contract `{id}` in this polis")))?;
    let k = &file.contract;
    let split = crate::protocol::frontmatter::split(&file.file.text);
    let routing = (file.folder == ContractFolder::Open).then(|| {
        let options = crate::operations::route::RouteOptions {
            adaptive: false,
            // A fixed seed, so the page does not change on every reload.
            seed: Some(0),
            policy: None,
        };
        crate::operations::route::recommend(&s.polis, file, &options)
    });
    let mut lines = Vec::new();
    for text in s.polis.recent_chronicle() {
        for line in chronicle::scan(text).lines {
            let about = chronicle::parse_entry(&line.text)
                .ok()
                .and_then(|e| e.link.and_then(chronicle::link_target))
                .is_some_and(|t| t.rsplit('/').next() == Some(id));
            if about {
                lines.push(line.text);
            }
        }
    }
    let lessons: Vec<_> = s
        .polis
        .lessons
        .iter()
        .filter(|l| mentions(&l.lesson.related_contracts, id))
        .collect();
    let mut ignored = Vec::new();
    let reviews: Vec<_> = crate::fs::snapshot::read_records(
        &s.polis.root,
        crate::protocol::layout::REVIEWS_DIR,
        &mut ignored,
    )
    .into_iter()
    .filter_map(|r| {
        let review = crate::protocol::review::parse(&r.text).ok()?;
        (review.contract.as_deref() == Some(id)).then_some((r.rel, review))
    })
    .collect();
    let title = k.title.clone().unwrap_or_else(|| id.to_string());
    let body = html! {
        h1 { (title) }
        p.muted {
            (file.file.rel) " · " (file.folder.name())
            @if let Some(st) = &k.status { " · status " strong #status { (st) } }
            @if let Some(o) = &k.owner { " · owner " (citizen_link(cx, o)) }
            @if let Some(st) = &k.stakes { " · stakes " (st) }
        }
        h2 { "Frontmatter" }
        pre #frontmatter { (split.yaml.unwrap_or("(none)")) }
        h2 { "Body" }
        (markdown(&k.body))
        @if let Some(routed) = &routing {
            h2 { "Routing" }
            @match routed {
                Ok(r) => {
                    p { "Recommendation: "
                        @if let Some(who) = &r.recommendation.recommendation { strong { (citizen_link(cx, who)) } } @else { "(none)" }
                        " · policy " (r.policy.to_string())
                        " · drawn with seed 0; " code { "polisd route " (id) " --explain" } " draws afresh" }
                    pre #routing { (crate::operations::route::explain(&r.recommendation)) (r.explanation) }
                }
                Err(e) => { p.muted { (e.to_string()) } }
            }
        }
        h2 { "Chronicle (" (lines.len()) ")" }
        @if lines.is_empty() { p.muted { "No chronicle line links to this contract." } }
        @else { ul { @for l in &lines { li { code { (l) } } } } }
        h2 { "Lessons (" (lessons.len()) ")" }
        @if !lessons.is_empty() {
            ul { @for l in &lessons { li { (l.lesson.lesson_id) " by " (l.lesson.filed_by.as_deref().unwrap_or("?")) " (" (l.rel) ")" } } }
        }
        h2 { "Reviews (" (reviews.len()) ")" }
        @if !reviews.is_empty() {
            ul { @for (rel, r) in &reviews {
                li { (r.reviewer.as_deref().unwrap_or("?")) ": " (r.decision.as_ref().map(|d| d.as_str().to_string()).unwrap_or_else(|| "no decision".into())) " (" (rel) ")" }
            } }
        }
    };
    Ok(Rendered { title, body })
}

/// Whether `related_contracts` (a list, or one string) names `id`.
fn mentions(related: &crate::yaml::Value, id: &str) -> bool {
    match related.as_seq() {
        Some(items) => items.iter().any(|v| v.as_str() == Some(id)),
        None => related.as_str() == Some(id),
    }
}
