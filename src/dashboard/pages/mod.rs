//! The pages, and the frame they share. A page is one file here: a `pub const PAGE: Page` with
//! its route (below `/p/{polis}`), its place in the navigation, and a render function over a
//! [`Snapshot`]; adding one is that file, its `mod` line and its entry in [`PAGES`].
//!
//! Pages are plain server-rendered HTML that works without JavaScript; every value goes
//! through maud, which escapes it. The one script (`/static/live.js`) only re-fetches the page
//! when the polis changes.

pub mod chronicle;
pub mod citizen;
pub mod contract;
pub mod councils;
pub mod overview;
pub mod search;
pub mod tags;

use super::view::{PolisView, Snapshot};
use maud::{html, Markup, PreEscaped, DOCTYPE};
use std::collections::HashMap;

/// Every page, in navigation order.
pub const PAGES: &[&Page] = &[
    &overview::PAGE,
    &tags::PAGE,
    &chronicle::PAGE,
    &councils::PAGE,
    &search::PAGE,
    &contract::PAGE,
    &citizen::PAGE,
];

/// One page of the dashboard.
pub struct Page {
    /// Below `/p/{polis}`, in axum's syntax: `/`, `/tags`, `/contracts/{id}`.
    pub route: &'static str,
    /// Its link in the navigation bar, if it has one (pages about one record have none).
    pub nav: Option<&'static str>,
    pub render: fn(&Context<'_>) -> Result<Rendered, PageError>,
}

/// What a page is given.
pub struct Context<'a> {
    pub snapshot: &'a Snapshot,
    pub view: &'a PolisView,
    /// The route's parameters (`id`).
    pub params: &'a HashMap<String, String>,
    /// The query string's parameters.
    pub query: &'a HashMap<String, String>,
    /// This polis's prefix, `/p/0`.
    pub base: String,
    /// The visitor's CSRF token, for the console's forms (see `security`).
    pub csrf: &'a str,
}

impl Context<'_> {
    /// A link to another page of this polis: `href("contracts/x")` → `/p/0/contracts/x`.
    pub fn href(&self, rel: &str) -> String {
        format!("{}/{}", self.base, rel.trim_start_matches('/'))
    }

    pub fn param(&self, name: &str) -> &str {
        self.params.get(name).map_or("", String::as_str)
    }

    pub fn query(&self, name: &str) -> Option<&str> {
        self.query
            .get(name)
            .map(String::as_str)
            .filter(|v| !v.is_empty())
    }
}

/// A rendered page body and its title.
pub struct Rendered {
    pub title: String,
    pub body: Markup,
}

#[derive(Debug, thiserror::Error)]
pub enum PageError {
    #[error("{0}")]
    NotFound(String),
}

/// The whole document: head, navigation, the polis picker, `<main>` with the page.
pub fn frame(
    page: &Page,
    cx: &Context<'_>,
    polises: &[(String, String)],
    rendered: &Rendered,
) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                meta name="polisd-events" content=(cx.href("events"));
                title { (rendered.title) " · " (cx.view.name) " · polisd" }
                link rel="stylesheet" href="/static/style.css";
                script src="/static/live.js" defer {}
            }
            body data-generation=(cx.snapshot.generation) {
                header {
                    span.brand { "polisd" }
                    @if polises.len() > 1 {
                        nav.picker aria-label="polis" {
                            @for (href, name) in polises {
                                a href=(href) .here[href.trim_end_matches('/') == cx.base] { (name) }
                            }
                        }
                    } @else {
                        span.muted { (cx.view.name) }
                    }
                    nav aria-label="pages" {
                        @for p in PAGES {
                            @if let Some(label) = p.nav {
                                a href=(cx.href(p.route)) .here[p.route == page.route] { (label) }
                            }
                        }
                    }
                    span.live {}
                }
                div #offline role="status" hidden {}
                main {
                    (rendered.body)
                    p.muted { "read " (cx.snapshot.now.minute_stamp()) " (polis time) · generation " (cx.snapshot.generation) }
                }
            }
        }
    }
}

/// The search box, a plain GET form to the search page.
pub fn search_form(cx: &Context<'_>, q: &str) -> Markup {
    html! {
        form.search method="get" action=(cx.href("search")) role="search" {
            input type="search" name="q" value=(q) placeholder="contracts, lessons, chronicle" aria-label="search";
            button type="submit" { "Search" }
        }
    }
}

/// A console form posting to `act/{action}`: the CSRF token and the page to come back to are
/// hidden fields; `fields` are the form's own.
pub fn action_form(cx: &Context<'_>, action: &str, back: &str, fields: Markup) -> Markup {
    html! {
        form.console method="post" action=(cx.href(&format!("act/{action}"))) {
            input type="hidden" name="csrf" value=(cx.csrf);
            input type="hidden" name="back" value=(cx.href(back));
            (fields)
        }
    }
}

/// A select of the polis's citizens named `name`, for "as whom" a person acts.
pub fn citizen_select(cx: &Context<'_>, name: &str, label: &str) -> Markup {
    html! {
        label { (label) " "
            select name=(name) required {
                @for id in cx.snapshot.polis.cards.keys() { option value=(id) { (id) } }
            }
        }
    }
}

/// A not-found page in the same frame.
pub fn not_found(message: &str) -> Rendered {
    Rendered {
        title: "Not found".into(),
        body: html! { h1 { "Not found" } p { (message) } },
    }
}

/// Markdown from an agent, rendered safely (see `markdown`).
pub fn markdown(text: &str) -> Markup {
    html! { div.md { (PreEscaped(super::markdown::render(text))) } }
}

/// A contract id as a link to its page.
pub fn contract_link(cx: &Context<'_>, id: &str) -> Markup {
    html! { a href=(cx.href(&format!("contracts/{}", urlencode(id)))) { (id) } }
}

/// A citizen id as a link to its page.
pub fn citizen_link(cx: &Context<'_>, id: &str) -> Markup {
    html! { a href=(cx.href(&format!("citizens/{}", urlencode(id)))) { (id) } }
}

/// Percent-encodes a path segment (ids are slugs, but a page never trusts that).
pub fn urlencode(segment: &str) -> String {
    let mut out = String::with_capacity(segment.len());
    for b in segment.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// `error` or `warning`, the CSS class of a finding.
pub fn severity_class(f: &crate::protocol::finding::Finding) -> &'static str {
    match f.severity {
        crate::protocol::finding::Severity::Error => "error",
        crate::protocol::finding::Severity::Warning => "warning",
    }
}
