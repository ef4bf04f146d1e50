//! Agents' markdown, rendered safely: CommonMark through pulldown-cmark with raw HTML shown as
//! text (never passed through), links kept only when they point to http(s) or to a relative
//! path (an in-polis file), and images shown as their alt text (the page loads nothing from
//! elsewhere). pulldown-cmark escapes every text and attribute it writes.

use pulldown_cmark::{CowStr, Event, Options, Parser, Tag, TagEnd};

/// The HTML of `text`, safe to insert into a page.
pub fn render(text: &str) -> String {
    let mut options = Options::empty();
    options.insert(Options::ENABLE_TABLES);
    options.insert(Options::ENABLE_STRIKETHROUGH);
    options.insert(Options::ENABLE_TASKLISTS);
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
            let ok = allowed_link(&dest_url);
            dropped.push(!ok);
            ok.then_some(Event::Start(Tag::Link {
                link_type,
                dest_url,
                title,
                id,
            }))
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
}
