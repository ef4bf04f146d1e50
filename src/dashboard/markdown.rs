//! Agents' markdown, rendered safely: CommonMark through pulldown-cmark with raw HTML shown as
//! text (never passed through), links kept only when they point to http(s) or to a relative
//! path (an in-polis file), and images shown as their alt text (the page loads nothing from
//! elsewhere). pulldown-cmark escapes every text and attribute it writes.
//!
//! With a resolver ([`render_with`]), relative links and `[[wiki]]` links are links inside
//! the polis: the resolver turns the path they name into a page of the dashboard, or refuses
//! it, and the link is dropped with its text kept (never a link that 404s).

use pulldown_cmark::{CowStr, Event, LinkType, Options, Parser, Tag, TagEnd};

/// What a link inside the polis names, for a resolver.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target<'a> {
    /// A relative link (`../lessons/x.md`), as written.
    Relative(&'a str),
    /// A `[[wiki]]` link's target, relative to the polis root (`contracts/open/x`).
    Wiki(&'a str),
}

/// The HTML of `text`, safe to insert into a page; relative links kept as written.
pub fn render(text: &str) -> String {
    render_with(text, &|t| match t {
        Target::Relative(d) => Some(d.to_string()),
        Target::Wiki(_) => None,
    })
}

/// [`render`], with relative and `[[wiki]]` links turned into URLs by `resolve` (`None`:
/// dropped, text kept).
pub fn render_with(text: &str, resolve: &dyn Fn(Target<'_>) -> Option<String>) -> String {
    let mut options = Options::empty();
    options.insert(Options::ENABLE_TABLES);
    options.insert(Options::ENABLE_STRIKETHROUGH);
    options.insert(Options::ENABLE_TASKLISTS);
    options.insert(Options::ENABLE_WIKILINKS);
    // Links whose destination is refused are dropped, with their text kept; their end tags
    // must be dropped too, so the open ones are tracked.
    let mut dropped: Vec<bool> = Vec::new();
    let events = Parser::new_ext(text, options).filter_map(|event| match event {
        Event::Html(raw) | Event::InlineHtml(raw) => Some(Event::Text(raw)),
        Event::Start(Tag::Link {
            link_type,
            dest_url,
            title,
            id,
        }) => {
            let dest = match link_type {
                LinkType::WikiLink { .. } => resolve(Target::Wiki(&dest_url)),
                _ if !allowed_link(&dest_url) => None,
                _ if is_absolute_or_fragment(&dest_url) => Some(dest_url.to_string()),
                _ => resolve(Target::Relative(&dest_url)),
            };
            dropped.push(dest.is_none());
            dest.map(|d| {
                Event::Start(Tag::Link {
                    link_type,
                    dest_url: d.into(),
                    title,
                    id,
                })
            })
        }
        Event::End(TagEnd::Link) => {
            if dropped.pop().unwrap_or(true) {
                None
            } else {
                Some(Event::End(TagEnd::Link))
            }
        }
        Event::Start(Tag::Image { .. }) => {
            dropped.push(true);
            Some(Event::Text(CowStr::Borrowed("[image: ")))
        }
        Event::End(TagEnd::Image) => {
            dropped.pop();
            Some(Event::Text(CowStr::Borrowed("]")))
        }
        other => Some(other),
    });
    let mut out = String::with_capacity(text.len() + text.len() / 4);
    pulldown_cmark::html::push_html(&mut out, events);
    out
}

/// An http(s) URL or a link within the page (`#section`): never resolved.
fn is_absolute_or_fragment(dest: &str) -> bool {
    let lower = dest.trim().to_ascii_lowercase();
    lower.starts_with("http://") || lower.starts_with("https://") || lower.starts_with('#')
}

/// http(s) URLs, and relative paths without a scheme (`../lessons/x.md`, `#section`).
pub fn allowed_link(dest: &str) -> bool {
    let d = dest.trim();
    let lower = d.to_ascii_lowercase();
    if lower.starts_with("http://") || lower.starts_with("https://") {
        return true;
    }
    // A relative reference has no scheme: no ':' before the first '/', '?' or '#'. A leading
    // "//" would be another host. Control characters and backslashes are refused outright
    // (browsers strip or reinterpret them, which is how `java\tscript:` gets through).
    let before = d.split(['/', '?', '#']).next().unwrap_or("");
    !d.starts_with("//")
        && !d.starts_with('\\')
        && !before.contains(':')
        && !d.chars().any(|c| c.is_control() || c == '\\')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_html_is_shown_as_text() {
        let html = render("hello <script>alert(1)</script>\n\n<img src=x onerror=alert(1)>\n");
        assert!(!html.contains("<script"), "{html}");
        assert!(!html.contains("<img"), "{html}");
        assert!(html.contains("&lt;script&gt;"), "{html}");
    }

    #[test]
    fn javascript_and_data_links_are_dropped_with_their_text_kept() {
        for dest in [
            "javascript:alert(1)",
            "JaVaScRiPt:alert(1)",
            "data:text/html,<script>alert(1)</script>",
            "vbscript:x",
            "//evil.example/x",
            "java\tscript:alert(1)",
        ] {
            let html = render(&format!("[click]({dest})"));
            assert!(!html.contains("<a"), "{dest}: {html}");
            assert!(html.contains("click"), "{dest}: {html}");
        }
        let html = render("[ok](https://example.org/a?b=1) [rel](../lessons/x.md)");
        assert_eq!(html.matches("<a href").count(), 2, "{html}");
    }

    #[test]
    fn images_become_their_alt_text() {
        let html = render("![a cat](https://example.org/cat.png)");
        assert!(!html.contains("<img"), "{html}");
        assert!(html.contains("[image: a cat]"), "{html}");
    }

    #[test]
    fn autolinks_and_attributes_are_escaped() {
        let html = render("[x](https://e.org/\"onmouseover=\"alert(1) \"t\\\"itle\")");
        assert!(!html.contains("onmouseover=\"alert"), "{html}");
    }

    #[test]
    fn relative_and_wiki_links_go_through_the_resolver() {
        let resolve = |t: Target<'_>| match t {
            Target::Relative("../x.md") => Some("/p/0/x".to_string()),
            Target::Wiki("contracts/open/job") => Some("/p/0/contracts/job".to_string()),
            _ => None,
        };
        let html = render_with(
            "[a](../x.md) [[contracts/open/job]] [[contracts/open/job|the job]] [b](../nowhere.md) [[gone]] [c](https://e.org/) [d](#top)",
            &resolve,
        );
        assert!(html.contains("<a href=\"/p/0/x\">a</a>"), "{html}");
        assert!(
            html.contains("<a href=\"/p/0/contracts/job\">contracts/open/job</a>"),
            "{html}"
        );
        assert!(
            html.contains("<a href=\"/p/0/contracts/job\">the job</a>"),
            "{html}"
        );
        assert!(
            html.contains("https://e.org/") && html.contains("href=\"#top\""),
            "{html}"
        );
        assert_eq!(html.matches("<a ").count(), 5, "{html}");
        assert!(html.contains(" b ") && html.contains("gone"), "{html}");
    }
}
