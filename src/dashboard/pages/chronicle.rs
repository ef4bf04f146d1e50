//! The chronicle, newest first, a page of [`TAIL`] lines at a time (`?page=N`, 0 the newest),
//! with findings marked, filterable by citizen and verb (a plain GET form, so it works
//! without JavaScript). The lines are read from `chronicle.md` on disk for each request
//! ([`window`]): the page holds what it shows, not the file.

use super::{citizen_link, Context, Page, PageError, Rendered};
use crate::fs::chronicle_lines::{LineReader, Position};
use crate::protocol::finding::Code;
use crate::protocol::{chronicle, layout};
use maud::html;
use std::collections::{BTreeMap, BTreeSet};

pub const PAGE: Page = Page {
    route: "/chronicle",
    nav: Some("Chronicle"),
    render,
};

/// Lines a page shows (after filtering).
pub const TAIL: usize = 200;

/// A page of the chronicle as read from disk: its lines, newest first, and what the filter
/// and the paging need.
#[derive(Debug, Default)]
pub struct Window {
    /// (line number, text), newest first; at most [`TAIL`].
    pub shown: Vec<(usize, String)>,
    /// Lines that match the filter, and lines in all.
    pub matching: usize,
    pub total: usize,
    /// The page shown (the one asked for, or the last there is), and how many there are.
    pub page: usize,
    pub pages: usize,
    /// Every author and verb of the file, for the filter's choices.
    pub authors: BTreeSet<String>,
    pub verbs: BTreeSet<String>,
}

impl Window {
    /// No lines: one empty page.
    fn empty() -> Window {
        Window {
            pages: 1,
            ..Window::default()
        }
    }
}

/// Page `page` (0 the newest) of the lines of `rel` that `wanted` keeps, read from disk in
/// two passes: the first counts the matching lines, gathers authors and verbs and notes where
/// every [`TAIL`]-th matching line starts; the second reads from the note before the page's
/// oldest line to its newest. What is held is the page and one position per [`TAIL`] lines,
/// whatever the file's size.
pub fn window(
    root: &std::path::Path,
    rel: &str,
    page: usize,
    wanted: &dyn Fn(Option<&chronicle::Entry<'_>>) -> bool,
) -> Window {
    let mut w = Window::empty();
    let Some(mut reader) = LineReader::open(root, rel) else {
        return w;
    };
    let mut marks: Vec<Position> = Vec::new();
    while let Some(line) = reader.next_line() {
        w.total += 1;
        let entry = chronicle::parse_entry(line.text).ok();
        if let Some(e) = &entry {
            if !w.authors.contains(e.author) {
                w.authors.insert(e.author.to_string());
            }
            if !w.verbs.contains(e.verb) {
                w.verbs.insert(e.verb.to_string());
            }
        }
        if wanted(entry.as_ref()) {
            if w.matching.is_multiple_of(TAIL) {
                marks.push(line.at);
            }
            w.matching += 1;
        }
    }
    w.pages = w.matching.div_ceil(TAIL).max(1);
    w.page = page.min(w.pages - 1);
    // Matching lines [first, end) in file order: the page, newest first, is them reversed.
    let end = w.matching - w.page * TAIL;
    let first = end.saturating_sub(TAIL);
    let Some(&mark) = marks.get(first / TAIL) else {
        return w;
    };
    if reader.seek(mark).is_none() {
        return w;
    }
    let mut index = first / TAIL * TAIL;
    while index < end {
        let Some(line) = reader.next_line() else {
            break;
        };
        if !wanted(chronicle::parse_entry(line.text).ok().as_ref()) {
            continue;
        }
        if index >= first {
            w.shown.push((line.at.number, line.text.to_string()));
        }
        index += 1;
    }
    w.shown.reverse();
    w
}

fn render(cx: &Context<'_>) -> Result<Rendered, PageError> {
    let s = cx.snapshot;
    let mut findings: BTreeMap<usize, Vec<&crate::protocol::finding::Finding>> = BTreeMap::new();
    for f in &s.findings {
        if f.path == layout::CHRONICLE {
            if let Some(l) = f.line {
                findings.entry(l).or_default().push(f);
            }
        }
    }
    let want_citizen = cx.query("citizen");
    let want_verb = cx.query("verb");
    let page: usize = cx.query("page").and_then(|p| p.parse().ok()).unwrap_or(0);
    let wanted = |e: Option<&chronicle::Entry<'_>>| {
        want_citizen.is_none_or(|w| e.is_some_and(|e| e.author == w))
            && want_verb.is_none_or(|w| e.is_some_and(|e| e.verb == w))
    };
    // A chronicle the snapshot could not read (unreadable, git's conflict markers) shows no
    // lines, as its finding says why.
    let readable = s.chronicle_files.iter().any(|f| f == layout::CHRONICLE);
    let w = if readable {
        window(&s.polis.root, layout::CHRONICLE, page, &wanted)
    } else {
        Window::empty()
    };
    // Why an unreadable chronicle shows nothing: its findings, else a plain word.
    let unreadable: Vec<&str> = if readable {
        Vec::new()
    } else {
        let why: Vec<&str> = s
            .findings
            .iter()
            .filter(|f| f.path == layout::CHRONICLE && f.code == Code::Unreadable)
            .map(|f| f.message.as_str())
            .collect();
        if why.is_empty() {
            vec!["it is missing or cannot be read"]
        } else {
            why
        }
    };
    let Window {
        shown,
        matching,
        total,
        page,
        pages,
        authors,
        verbs,
    } = w;
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
        @for why in &unreadable {
            p.warning { "chronicle.md is not shown: " (why) }
        }
        p.muted #chronicle-paging {
            (shown.len()) " of " (matching) " matching lines (" (total) " in all), newest first; page "
            (page + 1) " of " (pages)
            @if page > 0 { " · " a rel="prev" href=(link_to(page - 1)) { "newer" } }
            @if page + 1 < pages { " · " a rel="next" href=(link_to(page + 1)) { "older" } }
        }
        table #chronicle {
            thead { tr { th { "line" } th { "when" } th { "who" } th { "verb" } th { "link" } th { "note" } } }
            tbody {
                @for (number, text) in &shown {
                    @let marks = findings.get(number);
                    tr.finding[marks.is_some()] data-line=(number) {
                        td.muted { (number) }
                        @match chronicle::parse_entry(text) {
                            Ok(e) => {
                                td.stamp { (e.stamp_text) }
                                td.author { (citizen_link(cx, e.author)) }
                                td { (e.verb) }
                                td { @if let Some(link) = e.link { (super::record_link(cx, link)) } }
                                td { (chronicle::shown_note(e.note)) }
                            }
                            Err(_) => { td colspan="5" { code { (text) } } }
                        }
                    }
                    @if let Some(marks) = marks {
                        @for f in marks {
                            tr.finding { td {} td colspan="5" class=(f.severity.as_str()) { (f.code.as_str()) ": " (f.message) } }
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

/// One chronicle line inline, as search and a contract's page list it: stamp, author, verb,
/// the record it links (to its page) and the note without polisd's id; a line that does not
/// parse, as written.
pub fn entry_inline(cx: &Context<'_>, text: &str) -> maud::Markup {
    html! {
        @match chronicle::parse_entry(text) {
            Ok(e) => {
                (e.stamp_text) " " (citizen_link(cx, e.author)) " " (e.verb) " "
                @if let Some(link) = e.link { (super::record_link(cx, link)) " " }
                (chronicle::shown_note(e.note))
            }
            Err(_) => { code { (text) } }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pages of a file of several pages, filtered or not: newest first, with the file's line
    /// numbers, never more than a page held.
    #[test]
    fn a_window_is_one_page_of_the_matching_lines_newest_first() {
        let dir = tempfile::tempdir().unwrap();
        let mut text = String::from("---\nkind: chronicle\n---\n");
        let lines = 4 * TAIL + 7;
        for k in 0..lines {
            let who = if k % 3 == 0 {
                "bravo-agent"
            } else {
                "alpha-agent"
            };
            text.push_str(&format!(
                "- 2026-01-01 10:00 | {who} | worked on | - | step {k}\n"
            ));
        }
        std::fs::write(dir.path().join("chronicle.md"), &text).unwrap();
        // Line k of the loop is line 4 + k of the file.
        let step = |(number, text): &(usize, String)| {
            assert!(
                text.ends_with(&format!("step {}", number - 4)),
                "{number}: {text}"
            );
            number - 4
        };
        let all = |_: Option<&chronicle::Entry<'_>>| true;
        let w = window(dir.path(), "chronicle.md", 0, &all);
        assert_eq!((w.total, w.matching, w.pages, w.page), (lines, lines, 5, 0));
        let steps: Vec<usize> = w.shown.iter().map(step).collect();
        assert_eq!(steps, (lines - TAIL..lines).rev().collect::<Vec<_>>());
        let w = window(dir.path(), "chronicle.md", 2, &all);
        let steps: Vec<usize> = w.shown.iter().map(step).collect();
        assert_eq!(
            steps,
            (lines - 3 * TAIL..lines - 2 * TAIL)
                .rev()
                .collect::<Vec<_>>()
        );
        // Past the end: the oldest page, shorter.
        let w = window(dir.path(), "chronicle.md", 99, &all);
        assert_eq!(w.page, 4);
        let steps: Vec<usize> = w.shown.iter().map(step).collect();
        assert_eq!(steps, (0..7).rev().collect::<Vec<_>>());
        // By author: every third line, paged among those.
        let bravo = |e: Option<&chronicle::Entry<'_>>| e.is_some_and(|e| e.author == "bravo-agent");
        let w = window(dir.path(), "chronicle.md", 1, &bravo);
        let matching = lines.div_ceil(3);
        assert_eq!((w.matching, w.pages), (matching, matching.div_ceil(TAIL)));
        let steps: Vec<usize> = w.shown.iter().map(step).collect();
        let expected: Vec<usize> = (0..lines)
            .filter(|k| k % 3 == 0)
            .rev()
            .skip(TAIL)
            .take(TAIL)
            .collect();
        assert_eq!(steps, expected);
        assert_eq!(
            w.authors.iter().collect::<Vec<_>>(),
            ["alpha-agent", "bravo-agent"]
        );
        assert!(window(dir.path(), "missing.md", 0, &all).shown.is_empty());
    }
}
