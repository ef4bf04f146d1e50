//! Tags: per tag, the leader and its confidence, a chart of each citizen's running average
//! quality settlement by settlement, and every change of leader.

use super::{citizen_link, Context, Page, PageError, Rendered};
use maud::html;

pub const PAGE: Page = Page {
    route: "/tags",
    nav: Some("Tags"),
    render,
};

fn render(cx: &Context<'_>) -> Result<Rendered, PageError> {
    let s = cx.snapshot;
    let body = html! {
        h1 { "Tags" }
        @if s.stats.tags.is_empty() {
            p.muted { "No settled work yet: leaders appear once contracts settle." }
        }
        @for t in &s.stats.tags {
            @let history = s.history().iter().find(|(tag, _)| tag == &t.tag).map(|(_, h)| h);
            section.tag id=(format!("tag-{}", super::urlencode(&t.tag))) {
                h2 { (t.tag) }
                p {
                    "Leader: "
                    @if let Some(l) = &t.leader { strong.leader { (citizen_link(cx, l)) } } @else { "none" }
                    @if let Some(c) = t.leader_confidence { " · confidence " span.confidence { (format!("{c:.3}")) } }
                }
                table {
                    thead { tr { th { "citizen" } th { "settled" } th { "avg quality" } th { "avg minutes" } th { "last completed" } } }
                    tbody {
                        @for c in &t.citizens {
                            tr {
                                td { (citizen_link(cx, &c.citizen)) }
                                td { (c.contracts_completed) }
                                td { (format!("{:.2}", c.avg_quality_score)) }
                                td { (format!("{:.0}", c.avg_actual_minutes)) }
                                td { (c.last_completed.as_deref().unwrap_or("-")) }
                            }
                        }
                    }
                }
                @if let Some(h) = history {
                    @if let Some(chart) = crate::dashboard::chart::quality_lines(&h.series, "running average quality") {
                        (chart)
                    }
                    @if h.leader_changes.len() > 1 {
                        details {
                            summary { "Leader changes (" (h.leader_changes.len() - 1) ")" }
                            ul {
                                @for c in h.leader_changes.iter().skip(1) {
                                    li { "after settlement " (c.after) " (" (c.when) "): "
                                        (c.from.as_deref().unwrap_or("-")) " → " (c.to) }
                                }
                            }
                        }
                    }
                }
            }
        }
    };
    Ok(Rendered {
        title: "Tags".into(),
        body,
    })
}
