//! Search over contracts (open and abandoned by id, title, tags, owner and text; settled by id,
//! owner and tags, from the ledger, so no settled file is read), lessons (id, tags and text)
//! and the chronicle with its archives (read from disk a line at a time, keeping the hits
//! shown). Case-insensitive substring; a plain GET form.

use super::{contract_link, Context, Page, PageError, Rendered};
use maud::html;

pub const PAGE: Page = Page {
    route: "/search",
    nav: Some("Search"),
    render,
};

/// Hits shown per kind.
const HITS: usize = 100;
/// Longest lesson file read for a search.
const LESSON_LIMIT: u64 = 1 << 20;

/// The newest `keep` lines of chronicle file `rel` that `has`, newest first, and how many more
/// there are: the file is read line by line, holding `keep` lines at most.
fn newest_hits(
    root: &std::path::Path,
    rel: &str,
    keep: usize,
    has: &dyn Fn(&str) -> bool,
) -> (Vec<(usize, String)>, usize) {
    let mut hits = std::collections::VecDeque::with_capacity(keep);
    let mut more = 0;
    let Some(mut reader) = crate::fs::chronicle_lines::LineReader::open(root, rel) else {
        return (Vec::new(), 0);
    };
    while let Some(line) = reader.next_line() {
        if !has(line.text) {
            continue;
        }
        if hits.len() == keep {
            more += 1;
            if hits.pop_front().is_none() {
                continue;
            }
        }
        hits.push_back((line.at.number, line.text.to_string()));
    }
    (hits.into_iter().rev().collect(), more)
}

fn render(cx: &Context<'_>) -> Result<Rendered, PageError> {
    let s = cx.snapshot;
    let q = cx.query("q").unwrap_or("").trim().to_lowercase();
    let has = |text: &str| text.to_lowercase().contains(&q);
    let mut contracts: Vec<(String, String, String)> = Vec::new();
    let mut more_contracts = 0usize;
    let mut lessons: Vec<(String, String)> = Vec::new();
    let mut lines: Vec<(String, usize, String)> = Vec::new();
    let mut more_lines = 0usize;
    if !q.is_empty() {
        for c in s.polis.contracts.iter() {
            let k = &c.contract;
            if has(&c.file.stem) || has(&c.file.text) {
                contracts.push((
                    c.file.stem.clone(),
                    format!("{:?}", c.folder).to_lowercase(),
                    k.title.clone().unwrap_or_default(),
                ));
            }
        }
        for (path, st) in s.state.settled.iter() {
            let id = path
                .rsplit('/')
                .next()
                .unwrap_or(path)
                .trim_end_matches(".md");
            if has(id) || has(st.owner) || st.tags.iter().any(|t| has(t)) {
                if contracts.len() < HITS {
                    contracts.push((
                        id.to_string(),
                        "settled".into(),
                        format!("{} · {}", st.owner, st.tags.join(", ")),
                    ));
                } else {
                    more_contracts += 1;
                }
            }
        }
        for l in &s.polis.lessons {
            let text = crate::fs::snapshot::read_text(&s.polis.root, &l.rel, Some(LESSON_LIMIT))
                .ok()
                .flatten()
                .unwrap_or_default();
            if has(&l.lesson.lesson_id)
                || l.lesson.capability_tags.iter().any(|t| has(t))
                || has(&text)
            {
                lessons.push((
                    l.lesson.lesson_id.clone(),
                    l.lesson.capability_tags.join(", "),
                ));
            }
        }
        // The newest files first (`chronicle.md`, then the archives), each read from disk a
        // line at a time, keeping its newest hits only.
        for name in s.chronicle_files.iter().rev() {
            let (hits, more) = newest_hits(&s.polis.root, name, HITS - lines.len(), &has);
            lines.extend(hits.into_iter().map(|(n, text)| (name.clone(), n, text)));
            more_lines += more;
        }
    }
    let body = html! {
        h1 { "Search" }
        (super::search_form(cx, &q))
        @if !q.is_empty() {
            section #contract-hits {
                h2 { "Contracts (" (contracts.len() + more_contracts) ")" }
                @for (id, folder, what) in &contracts {
                    div.item { (contract_link(cx, id)) " " span.muted { (folder) } " " (what) }
                }
                @if more_contracts > 0 { div.muted { "and " (more_contracts) " more settled" } }
            }
            section #lesson-hits {
                h2 { "Lessons (" (lessons.len()) ")" }
                @for (id, title) in &lessons {
                    div.item { (super::lesson_link(cx, id)) " " (title) }
                }
            }
            section #chronicle-hits {
                h2 { "Chronicle (" (lines.len() + more_lines) ")" }
                @for (name, number, text) in &lines {
                    div.item {
                        span.muted { (name) ":" (number) } " "
                        (super::chronicle::entry_inline(cx, text))
                    }
                }
                @if more_lines > 0 { div.muted { "and " (more_lines) " more" } }
            }
        }
    };
    Ok(Rendered {
        title: "Search".into(),
        body,
    })
}
