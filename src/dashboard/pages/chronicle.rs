//! The chronicle, newest first, a page of [`TAIL`] lines at a time (`?page=N`, 0 the newest),
//! with findings marked, filterable by citizen and verb (a plain GET form, so it works
//! without JavaScript).

use super::{citizen_link, Context, Page, PageError, Rendered};
use crate::protocol::chronicle;
use maud::html;
use std::collections::{BTreeMap, BTreeSet};

pub const PAGE: Page = Page {
    route: "/chronicle",
    nav: Some("Chronicle"),
    render,
};

/// Lines a page shows (after filtering).
const TAIL: usize = 200;

fn render(cx: &Context<'_>) -> Result<Rendered, PageError> {
    let s = cx.snapshot;
    let text = s.polis.chronicle_text().unwrap_or("");
    let lines = chronicle::scan(text).lines;
    let mut findings: BTreeMap<usize, Vec<&crate::protocol::finding::Finding>> = BTreeMap::new();
    for f in &s.findings {
        if f.path == crate::protocol::layout::CHRONICLE {
            if let Some(l) = f.line {
                findings.entry(l).or_default().push(f);
            }
        }
    }
    let mut authors = BTreeSet::new();
    let mut verbs = BTreeSet::new();
    for l in &lines {
        if let Ok(e) = chronicle::parse_entry(&l.text) {
            authors.insert(e.author.to_string());
            verbs.insert(e.verb.to_string());
        }
    }
    let want_citizen = cx.query("citizen");
    let want_verb = cx.query("verb");
    let page: usize = cx.query("page").and_then(|p| p.parse().ok()).unwrap_or(0);
    let matching: Vec<_> = lines
        .iter()
        .rev()
        .filter(|l| {
            let e = chronicle::parse_entry(&l.text).ok();
            want_citizen.is_none_or(|w| e.as_ref().is_some_and(|e| e.author == w))
                && want_verb.is_none_or(|w| e.as_ref().is_some_and(|e| e.verb == w))
        })
        .collect();
    let pages = matching.len().div_ceil(TAIL).max(1);
    let page = page.min(pages - 1);
    let shown = &matching[page * TAIL..(page * TAIL + TAIL).min(matching.len())];
    let link_to = |n: usize| {
        let mut q = format!("chronicle?page={n}");
        for (k, v) in [("citizen", want_citizen), ("verb", want_verb)] {
            if let Some(v) = v {
                q.push_str(&format!("&{k}={}", super::urlencode(v)));
            }
        }
        cx.href(&q)
    };
    let body = html! {
        h1 { "Chronicle" }
        form.filter method="get" {
            label { "citizen"
                select name="citizen" {
                    option value="" { "any" }
                    @for a in &authors { option value=(a) selected[want_citizen == Some(a.as_str())] { (a) } }
                }
            }
            label { "verb"
                select name="verb" {
                    option value="" { "any" }
                    @for v in &verbs { option value=(v) selected[want_verb == Some(v.as_str())] { (v) } }
                }
            }
            button type="submit" { "Filter" }
        }
        p.muted #chronicle-paging {
            (shown.len()) " of " (matching.len()) " matching lines (" (lines.len()) " in all), newest first; page "
            (page + 1) " of " (pages)
            @if page > 0 { " · " a rel="prev" href=(link_to(page - 1)) { "newer" } }
            @if page + 1 < pages { " · " a rel="next" href=(link_to(page + 1)) { "older" } }
        }
        table #chronicle {
            thead { tr { th { "line" } th { "when" } th { "who" } th { "verb" } th { "link" } th { "note" } } }
            tbody {
                @for l in shown {
                    @let marks = findings.get(&l.number);
                    tr.finding[marks.is_some()] data-line=(l.number) {
                        td.muted { (l.number) }
                        @match chronicle::parse_entry(&l.text) {
                            Ok(e) => {
                                td { (e.stamp_text) }
                                td { (citizen_link(cx, e.author)) }
                                td { (e.verb) }
                                td { (e.link.unwrap_or("")) }
                                td { (e.note) }
                            }
                            Err(_) => { td colspan="5" { code { (l.text) } } }
                        }
                    }
                    @if let Some(marks) = marks {
                        @for f in marks {
                            tr.finding { td {} td colspan="5" class=(super::severity_class(f)) { (f.code.as_str()) ": " (f.message) } }
                        }
                    }
                }
            }
        }
    };
    Ok(Rendered {
        title: "Chronicle".into(),
        body,
    })
}
