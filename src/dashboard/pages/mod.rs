//! The pages, and the frame they share. A page is one file here: a `pub const PAGE: Page` with
//! its route (below `/p/{polis}`), its place in the navigation, and a render function over a
//! [`Snapshot`]; adding one is that file, its `mod` line and its entry in [`PAGES`].
//!
//! Pages are plain server-rendered HTML that works without JavaScript; every value goes
//! through maud, which escapes it. The one script (`/static/live.js`) only re-fetches the page
//! when the polis changes.

pub mod amendment;
pub mod chronicle;
pub mod citizen;
pub mod contract;
pub mod councils;
pub mod lesson;
pub mod lessons;
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
    &lessons::PAGE,
    &search::PAGE,
    &contract::PAGE,
    &citizen::PAGE,
    &amendment::PAGE,
    &lesson::PAGE,
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

/// The label of console form `action`'s field `field`: the words its refusals name it by.
pub fn field_label(action: &str, field: &'static str) -> &'static str {
    super::console::label(action, field).unwrap_or(field)
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

/// A polis file's markdown (`file` relative to `_polis/`), rendered safely: its frontmatter
/// as a table of keys and values, its body with relative and `[[wiki]]` links resolved to
/// pages of this polis ([`page_of_path`]).
pub fn document(cx: &Context<'_>, file: &str, text: &str) -> Markup {
    let split = crate::protocol::frontmatter::split(text);
    html! {
        @if let Some(yaml) = split.yaml { (frontmatter_table(yaml)) }
        (markdown_at(cx, file, split.body))
    }
}

/// A markdown body of polis file `file`, links resolved as [`document`] does.
pub fn markdown_at(cx: &Context<'_>, file: &str, body: &str) -> Markup {
    use super::markdown::Target;
    let dir = file.rsplit_once('/').map_or("", |(d, _)| d);
    let resolve = |t: Target<'_>| {
        let path = match t {
            Target::Wiki(p) => in_polis("", p)?,
            Target::Relative(p) => in_polis(dir, p)?,
        };
        Some(cx.href(&page_of_path(&path)))
    };
    html! { div.md { (PreEscaped(super::markdown::render_with(body, &resolve))) } }
}

/// Frontmatter as a table: one row per top-level key, scalars as text, the rest as YAML.
/// YAML that does not parse is shown as written.
pub fn frontmatter_table(yaml: &str) -> Markup {
    use crate::yaml::Value;
    let Ok(Value::Map(map)) = crate::yaml::load(yaml) else {
        return html! { pre.frontmatter { (yaml) } };
    };
    let shown = |v: &Value| match v {
        Value::Str(s) => s.clone(),
        Value::Null => String::new(),
        Value::Map(_) | Value::Seq(_) => {
            crate::yaml::dump(v, &crate::yaml::DumpOptions::FRONTMATTER)
                .unwrap_or_default()
                .trim_end()
                .to_string()
        }
        other => other.python_str(),
    };
    html! {
        table.frontmatter {
            tbody {
                @for (k, v) in map.iter() {
                    tr { th { (shown(k)) } td { @match v { Value::Map(_) | Value::Seq(_) => { pre { (shown(v)) } } _ => { (shown(v)) } } } }
                }
            }
        }
    }
}

/// `link` (a path, maybe with `#…` or `?…`) taken from folder `dir` of the polis, as a
/// polis-relative path; `None` when it leaves the polis.
fn in_polis(dir: &str, link: &str) -> Option<String> {
    let path = link.split(['#', '?']).next().unwrap_or("");
    let mut parts: Vec<&str> = if path.starts_with('/') {
        Vec::new()
    } else {
        dir.split('/').filter(|p| !p.is_empty()).collect()
    };
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            p => parts.push(p),
        }
    }
    Some(parts.join("/"))
}

/// The page of this polis that shows polis file or folder `path`: a contract's page for its
/// file (or its review folder), a citizen's page for anything in its folder, an amendment's
/// or a lesson's page for its file, the chronicle for the chronicle, the overview for the
/// root, else a search for the file's name.
pub fn page_of_path(path: &str) -> String {
    let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
    let stem = |p: &str| {
        p.strip_suffix(".md")
            .or_else(|| p.strip_suffix(".yml"))
            .unwrap_or(p)
            .to_string()
    };
    match parts.as_slice() {
        [] => String::new(),
        ["contracts", "open" | "settled" | "abandoned", id] | ["reviews", id, ..] => {
            format!("contracts/{}", urlencode(&stem(id)))
        }
        ["citizens", id, ..] => format!("citizens/{}", urlencode(id)),
        ["amendments", "proposed" | "ratified", id] => {
            format!("amendments/{}", urlencode(&stem(id)))
        }
        ["lessons", _, .., id] => format!("lessons/{}", urlencode(&stem(id))),
        ["chronicle.md" | "chronicle", ..] => "chronicle".into(),
        [.., last] => format!("search?q={}", urlencode(&stem(last))),
    }
}

/// polisd's own one-line advice, where `backticks` mark a command, a path or a key: those
/// parts as code, the rest as text (both escaped). An unpaired backtick stays as it is.
pub fn code_spans(text: &str) -> Markup {
    let parts: Vec<&str> = text.split('`').collect();
    // Parts at odd places were between backticks; with an even count the last one was not
    // closed, so it is text with its backtick put back.
    let unclosed = parts.len().is_multiple_of(2);
    html! {
        @for (i, part) in parts.iter().enumerate() {
            @if unclosed && i == parts.len() - 1 { "`" (part) }
            @else if i % 2 == 1 { code { (part) } }
            @else { (part) }
        }
    }
}

/// A contract id as a link to its page.
pub fn contract_link(cx: &Context<'_>, id: &str) -> Markup {
    html! { a href=(cx.href(&format!("contracts/{}", urlencode(id)))) { (id) } }
}

/// A lesson id as a link to its page.
pub fn lesson_link(cx: &Context<'_>, id: &str) -> Markup {
    html! { a href=(cx.href(&format!("lessons/{}", urlencode(id)))) { (id) } }
}

/// A polis path (a chronicle line's `[[link]]`) as a link to the page that shows it.
pub fn record_link(cx: &Context<'_>, path: &str) -> Markup {
    html! { a href=(cx.href(&page_of_path(path))) { (path) } }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backticked_parts_of_advice_are_code_and_everything_is_escaped() {
        let shown = |t: &str| code_spans(t).into_string();
        assert_eq!(
            shown("Edit `polis.yml`: set `a.b` to 2."),
            "Edit <code>polis.yml</code>: set <code>a.b</code> to 2."
        );
        assert_eq!(shown("no code"), "no code");
        assert_eq!(shown("one ` alone"), "one ` alone");
        assert_eq!(
            shown("`<b>` & <i>"),
            "<code>&lt;b&gt;</code> &amp; &lt;i&gt;"
        );
    }
}
