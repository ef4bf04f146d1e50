//! One citizen: the capability card (with its `content_hash` state), the status, its quality
//! per tag over time, the newest lessons it filed, and the inbox.

use super::{contract_link, Context, Page, PageError, Rendered};
use crate::protocol::citizens::card::VerifyState;
use maud::{html, Markup};

pub const PAGE: Page = Page {
    route: "/citizens/{id}",
    nav: None,
    render,
};

fn render(cx: &Context<'_>) -> Result<Rendered, PageError> {
    let s = cx.snapshot;
    let id = cx.param("id");
    let card = s
        .polis
        .cards
        .get(id)
        .ok_or_else(|| PageError::NotFound(format!("no citizen `{id}` in this polis")))?;
    let status = s.polis.status(id);
    let verify = card.card.verify();
    let hash_state = match verify.state {
        VerifyState::Ok => "content_hash matches",
        VerifyState::Mismatch => {
            "content_hash does NOT match: the card changed after it was stamped"
        }
        VerifyState::Legacy => "legacy signature only",
        VerifyState::Unstamped => "no content_hash",
        VerifyState::Unverifiable => "content_hash present, not reproducible by polisd",
    };
    let inbox = s.inboxes.get(id).and_then(|t| t.as_deref());
    // This citizen's line on every tag it settled work on.
    let series: Vec<(String, Vec<(usize, f64)>)> = s
        .history()
        .iter()
        .filter_map(|(tag, h)| {
            h.series
                .iter()
                .find(|(c, _)| c == id)
                .map(|(_, pts)| (tag.clone(), pts.clone()))
        })
        .collect();
    // Work it took that the router recommended for someone else, and how it turned out.
    let overrides = s.overrides().into_iter().find(|o| o.citizen == id);
    let body = html! {
        h1 { (id) }
        p.muted { (card.card.vendor.as_deref().unwrap_or("?")) " · " (card.card.model.as_deref().unwrap_or("?")) }
        h2 { "Capability card" }
        p #hash-state class=(if verify.state == VerifyState::Mismatch { "error" } else { "muted" }) { (hash_state) }
        pre { (card.text) }
        h2 { "Status" }
        p {
            "state " strong #state { (status.state.as_str()) }
            @if let Some(k) = &status.current_contract { " · current contract " (contract_link(cx, k)) }
            @if !status.last_active.is_null() { " · last active " (status.last_active.python_str()) }
        }
        @if !status.blockers.is_empty() {
            p { "Blockers:" }
            ul { @for b in &status.blockers { li { (b) } } }
        }
        h2 { "Quality per tag" }
        @if series.is_empty() { p.muted { "No settled work yet." } }
        @else {
            table {
                thead { tr { th { "tag" } th { "settled" } th { "avg quality" } } }
                tbody {
                    @for t in &s.stats.tags {
                        @if let Some(c) = t.citizens.iter().find(|c| c.citizen == id) {
                            tr { td { (t.tag) } td { (c.contracts_completed) } td { (format!("{:.2}", c.avg_quality_score)) } }
                        }
                    }
                }
            }
            @if let Some(chart) = crate::dashboard::chart::quality_lines(&series, "running average quality per tag") {
                (chart)
            }
        }
        @if let Some(o) = &overrides {
            p #overrides {
                "Overrode the router " (o.overrides) " times (mean quality " (format!("{:.2}", o.quality_when_overriding)) ")"
                @if let Some(q) = o.quality_when_followed { "; as recommended " (o.followed) " times (mean quality " (format!("{q:.2}")) ")" }
                "."
            }
        }
        (lessons_filed(cx, id))
        h2 { "Inbox (" (s.unread.get(id).copied().unwrap_or(0)) " unread)" }
        section #message-form {
            (super::action_form(cx, "message", &format!("citizens/{}", super::urlencode(id)), html! {
                input type="hidden" name="to" value=(id);
                (super::citizen_select(cx, "as", super::field_label("message", "as")))
                label.wide { (super::field_label("message", "text")) " " textarea name="text" rows="3" required {} }
                button type="submit" { "Write to " (id) "'s inbox" }
            }))
        }
        @if let Some(note) = s.inbox_notes.get(id) {
            p.warning { (note) }
        }
        @match inbox {
            Some(text) => { (super::document(cx, &format!("citizens/{id}/inbox.md"), text)) }
            None if s.inbox_notes.contains_key(id) => {}
            None => { p.muted { "No inbox.md." } }
        }
    };
    Ok(Rendered {
        title: id.to_string(),
        body,
    })
}

/// Lessons this citizen filed shown on its page; the rest are a link away.
const LESSONS_SHOWN: usize = 5;

/// The newest lessons `id` filed, with their tags and when, and a link to all of them on the
/// lessons index.
fn lessons_filed(cx: &Context<'_>, id: &str) -> Markup {
    let filed = super::lessons::newest_first(cx, |l| l.filed_by.as_deref() == Some(id));
    let all = cx.href(&format!("lessons?citizen={}", super::urlencode(id)));
    html! {
        h2 { "Lessons filed (" (filed.len()) ")" }
        @if filed.is_empty() {
            p.muted #citizen-lessons { "None yet." }
        } @else {
            ul #citizen-lessons {
                @for l in filed.iter().take(LESSONS_SHOWN) {
                    li {
                        (super::lessons::title_link(cx, l))
                        span.muted {
                            @if !l.lesson.capability_tags.is_empty() { " · " (super::lessons::tags_text(&l.lesson)) }
                            @if !l.lesson.filed_at.is_null() { " · " (l.lesson.filed_at.python_str()) }
                        }
                    }
                }
            }
            p { a #citizen-lessons-all href=(all) { "All " (filed.len()) " lessons " (id) " filed" } }
        }
    }
}
