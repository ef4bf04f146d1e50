//! Lessons: every lesson the polis holds, newest first, [`PER_PAGE`] at a time (`?page=N`, 0
//! the newest), filterable by tag and by who filed it (`?tag=T`, `?citizen=ID`, a plain GET
//! form). Each row says what the lesson is about, where it came from and whether it weighs on
//! routing now, and links to the lesson's own page.
//!
//! Only the shown rows' files are read (for their titles), so a polis of 10,000 lessons costs
//! a sort of what the snapshot holds and at most a page of small reads. A lesson polisd could
//! not parse is not in the snapshot and not listed; its page and the findings say why.

use super::lesson::{related_ids, title_of};
use super::{citizen_link, contract_link, urlencode, Context, Page, PageError, Rendered};
use crate::fs::snapshot::LessonFile;
use crate::protocol::amendments::amendment::{read_when, When};
use crate::protocol::contracts::lesson::Lesson;
use chrono::NaiveDateTime;
use maud::{html, Markup};
use std::collections::BTreeSet;

pub const PAGE: Page = Page {
    route: "/lessons",
    nav: Some("Lessons"),
    render,
};

/// Rows a page shows (after filtering).
pub const PER_PAGE: usize = 50;
/// Longest lesson file read for its title; a larger one is listed under its id.
const TITLE_READ_LIMIT: u64 = 1 << 20;
/// Characters of a title shown in a list: a heading is a line, but nothing makes it short.
const TITLE_SHOWN: usize = 200;
/// Tags and contracts shown per row before "and N more", so one runaway lesson cannot make
/// the page unbounded.
const LIST_SHOWN: usize = 10;

/// When a lesson was filed, as a time to sort by: `filed_at` as a date or time (a date counts
/// as its midnight); `None` when it is absent or no time.
pub fn filed_when(cx: &Context<'_>, lesson: &Lesson) -> Option<NaiveDateTime> {
    match read_when(&lesson.filed_at, &cx.snapshot.now)? {
        When::Moment(t) => Some(t),
        When::Day(d) => d.and_hms_opt(0, 0, 0),
    }
}

/// The lessons `keep` keeps, newest first by `filed_at`, then by path; those with no readable
/// `filed_at` come last, so a hand-written lesson without one never hides the recent ones.
pub fn newest_first<'a>(
    cx: &'a Context<'_>,
    keep: impl Fn(&Lesson) -> bool,
) -> Vec<&'a LessonFile> {
    let mut found: Vec<(Option<NaiveDateTime>, &LessonFile)> = cx
        .snapshot
        .polis
        .lessons
        .iter()
        .filter(|l| keep(&l.lesson))
        .map(|l| (filed_when(cx, &l.lesson), l))
        .collect();
    found.sort_by(|(a, la), (b, lb)| b.cmp(a).then_with(|| la.rel.cmp(&lb.rel)));
    found.into_iter().map(|(_, l)| l).collect()
}

/// A link to the lesson's page, showing its title (the lesson page's own rule, shortened).
pub fn title_link(cx: &Context<'_>, l: &LessonFile) -> Markup {
    let s = cx.snapshot;
    let text = crate::fs::snapshot::read_text(&s.polis.root, &l.rel, Some(TITLE_READ_LIMIT))
        .ok()
        .flatten();
    let title = title_of(&l.lesson, text.as_deref());
    let shown = if title.trim().is_empty() {
        l.rel.clone()
    } else {
        shorten(&title, TITLE_SHOWN)
    };
    html! { a.lesson href=(cx.href(&format!("lessons/{}", urlencode(page_id(l))))) { (shown) } }
}

/// The id the lesson's page finds it by: its `lesson_id`, else (an empty one) its file name.
fn page_id(l: &LessonFile) -> &str {
    if l.lesson.lesson_id.is_empty() {
        let name = l.rel.rsplit('/').next().unwrap_or(&l.rel);
        name.strip_suffix(".md").unwrap_or(name)
    } else {
        &l.lesson.lesson_id
    }
}

/// At most `max` characters of `text`, with `…` when cut.
fn shorten(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_string(),
    }
}

fn render(cx: &Context<'_>) -> Result<Rendered, PageError> {
    let s = cx.snapshot;
    let want_tag = cx.query("tag");
    let want_citizen = cx.query("citizen");
    let asked: usize = cx.query("page").and_then(|p| p.parse().ok()).unwrap_or(0);
    let all = &s.polis.lessons;
    let matching = newest_first(cx, |l| {
        want_tag.is_none_or(|t| l.capability_tags.iter().any(|x| x == t))
            && want_citizen.is_none_or(|c| l.filed_by.as_deref() == Some(c))
    });
    let pages = matching.len().div_ceil(PER_PAGE).max(1);
    let page = asked.min(pages - 1);
    let shown: Vec<&LessonFile> = matching
        .iter()
        .skip(page * PER_PAGE)
        .take(PER_PAGE)
        .copied()
        .collect();
    let tags: BTreeSet<&str> = all
        .iter()
        .flat_map(|l| l.lesson.capability_tags.iter().map(String::as_str))
        .collect();
    let filers: BTreeSet<&str> = all
        .iter()
        .filter_map(|l| l.lesson.filed_by.as_deref())
        .collect();
    // A link to this index with the given filters, on its first page unless `page` says.
    let link = |tag: Option<&str>, citizen: Option<&str>, page: usize| {
        let mut q: Vec<String> = Vec::new();
        for (k, v) in [("tag", tag), ("citizen", citizen)] {
            if let Some(v) = v {
                q.push(format!("{k}={}", urlencode(v)));
            }
        }
        if page > 0 {
            q.push(format!("page={page}"));
        }
        if q.is_empty() {
            cx.href("lessons")
        } else {
            cx.href(&format!("lessons?{}", q.join("&")))
        }
    };
    let floor = s.polis.settings.lesson_impact_floor;
    let body = html! {
        h1 { "Lessons" }
        @if all.is_empty() {
            p.muted #lessons-none {
                "No lessons yet. An agent files one with "
                code { "polisd lesson file --as ID --tags a,b --impact N TEXT" }
                ", or while settling with "
                code { "polisd contract settle ID --quality N --lesson TEXT --impact N" }
                "; each becomes a file under " code { "lessons/<tag>/" } " and appears here."
            }
        } @else {
            form.filter method="get" {
                label { "tag"
                    select name="tag" {
                        option value="" { "any" }
                        @for t in &tags { option value=(t) selected[want_tag == Some(*t)] { (t) } }
                    }
                }
                label { "filed by"
                    select name="citizen" {
                        option value="" { "anyone" }
                        @for c in &filers { option value=(c) selected[want_citizen == Some(*c)] { (c) } }
                    }
                }
                button type="submit" { "Filter" }
                @if want_tag.is_some() || want_citizen.is_some() {
                    a href=(link(None, None, 0)) { "all lessons" }
                }
            }
            p.muted #lessons-paging {
                (shown.len()) " of " (matching.len()) " matching lessons (" (all.len()) " in all), newest first"
                @if let Some(t) = want_tag { "; tag " code { (t) } }
                @if let Some(c) = want_citizen { "; filed by " code { (c) } }
                "; page " (page + 1) " of " (pages)
                @if page > 0 { " · " a rel="prev" href=(link(want_tag, want_citizen, page - 1)) { "newer" } }
                @if page + 1 < pages { " · " a rel="next" href=(link(want_tag, want_citizen, page + 1)) { "older" } }
            }
            @if matching.is_empty() {
                p.muted #lessons-no-match { "No lesson matches this filter." }
            } @else {
                table #lessons {
                    thead { tr { th { "lesson" } th { "tags" } th { "filed by" } th { "filed" } th { "contracts" } th { "quality impact" } th { "routing" } } }
                    tbody {
                        @for l in &shown {
                            @let lesson = &l.lesson;
                            @let related = related_ids(&lesson.related_contracts);
                            tr data-lesson=(page_id(l)) {
                                td { (title_link(cx, l)) }
                                td.tags {
                                    @for (i, t) in lesson.capability_tags.iter().take(LIST_SHOWN).enumerate() {
                                        @if i > 0 { ", " }
                                        a.tag href=(link(Some(t), want_citizen, 0)) { (t) }
                                    }
                                    (more(lesson.capability_tags.len()))
                                }
                                td {
                                    @match &lesson.filed_by {
                                        Some(by) if s.polis.cards.contains_key(by) => { (citizen_link(cx, by)) }
                                        Some(by) => { (by) }
                                        None => { span.muted { "unknown" } }
                                    }
                                }
                                td.stamp { @if !lesson.filed_at.is_null() { (lesson.filed_at.python_str()) } }
                                td {
                                    @for (i, c) in related.iter().take(LIST_SHOWN).enumerate() {
                                        @if i > 0 { ", " }
                                        @if s.folder_of(c).is_some() { (contract_link(cx, c)) } @else { (c) }
                                    }
                                    (more(related.len()))
                                }
                                td { @match lesson.quality_impact { Some(q) => { (q) } None => { span.muted { "none" } } } }
                                td.routing {
                                    @if lesson.affects_routing(floor) { strong { "weighs" } }
                                    @else if !lesson.is_accepted() { span.muted { "no (" (shorten(&lesson.status.python_str(), 40)) ")" } }
                                    @else { span.muted { "no" } }
                                }
                            }
                        }
                    }
                }
            }
        }
    };
    Ok(Rendered {
        title: "Lessons".into(),
        body,
    })
}

/// A lesson's tags as one line of text, cut at [`LIST_SHOWN`] like a row's.
pub fn tags_text(lesson: &Lesson) -> String {
    let tags = &lesson.capability_tags;
    let mut text = tags[..tags.len().min(LIST_SHOWN)].join(", ");
    if tags.len() > LIST_SHOWN {
        text.push_str(&format!(" and {} more", tags.len() - LIST_SHOWN));
    }
    text
}

/// "and N more" after a list cut at [`LIST_SHOWN`].
fn more(len: usize) -> Markup {
    html! { @if len > LIST_SHOWN { span.muted { " and " (len - LIST_SHOWN) " more" } } }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shortened_title_never_splits_a_character() {
        assert_eq!(shorten("héllo", 2), "hé…");
        assert_eq!(shorten("hi", 2), "hi");
        assert_eq!(shorten("", 2), "");
    }

    #[test]
    fn a_lesson_s_tags_as_text_are_cut_like_a_row_s() {
        let mut lesson = Lesson {
            capability_tags: (0..LIST_SHOWN + 3).map(|k| format!("t{k}")).collect(),
            ..Lesson::default()
        };
        let text = tags_text(&lesson);
        assert!(text.starts_with("t0, t1, "), "{text}");
        assert!(
            text.ends_with(&format!("t{} and 3 more", LIST_SHOWN - 1)),
            "{text}"
        );
        lesson.capability_tags.truncate(1);
        assert_eq!(tags_text(&lesson), "t0");
    }
}
