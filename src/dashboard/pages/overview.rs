//! The overview: citizens, contracts by state, amendments with their quorum, open findings,
//! and the human queue.

use super::{citizen_link, contract_link, Context, Page, PageError, Rendered};
use crate::protocol::layout::ContractFolder;
use maud::html;
use std::collections::BTreeMap;

pub const PAGE: Page = Page {
    route: "/",
    nav: Some("Overview"),
    render,
};

fn render(cx: &Context<'_>) -> Result<Rendered, PageError> {
    let s = cx.snapshot;
    let polis = &s.polis;
    let open: Vec<_> = polis
        .contracts
        .iter()
        .filter(|c| c.folder == ContractFolder::Open)
        .collect();
    let mut by_status: BTreeMap<String, usize> = BTreeMap::new();
    for c in &open {
        *by_status
            .entry(
                c.contract
                    .status
                    .clone()
                    .unwrap_or_else(|| "(no status)".into()),
            )
            .or_default() += 1;
    }
    let stale = crate::operations::stale_claims(polis, &s.now);
    let counts = &s.summary.contracts;
    let body = html! {
        h1 { "Overview" }
        section #queue {
            h2 { "Waiting for a person (" (s.queue.len()) ")" }
            @if s.queue.is_empty() {
                p.muted { "Nothing needs a person right now." }
            } @else {
                ul.queue {
                    @for item in &s.queue {
                        li data-key=(item.key) {
                            span.what {
                                @if let Some(link) = &item.link { a href=(cx.href(link)) { (item.title) } }
                                @else { (item.title) }
                            }
                            br;
                            span.muted { (item.action) }
                        }
                    }
                }
            }
        }
        section #contracts {
            h2 { "Contracts" }
            div.cards {
                div.card { div.n #count-open { (counts.open) } "open" }
                div.card { div.n #count-settled { (counts.settled) } "settled" }
                div.card { div.n #count-abandoned { (counts.abandoned) } "abandoned" }
                @for (status, n) in &by_status {
                    div.card { div.n { (n) } "open: " (status) }
                }
            }
            @if !open.is_empty() {
                table {
                    thead { tr { th { "contract" } th { "title" } th { "status" } th { "owner" } th { "stakes" } } }
                    tbody {
                        @for c in &open {
                            @let k = &c.contract;
                            tr {
                                td { (contract_link(cx, &c.file.stem)) }
                                td { (k.title.as_deref().unwrap_or("")) }
                                td class=(format!("state-{}", k.status.as_deref().unwrap_or("none"))) {
                                    (k.status.as_deref().unwrap_or("-"))
                                    @if let Some(since) = stale.get(&c.file.stem) { " " span.state-stale { "quiet since " (since) } }
                                }
                                td { @if let Some(o) = &k.owner { (citizen_link(cx, o)) } @else { span.muted { "unclaimed" } } }
                                td { (k.stakes.as_deref().unwrap_or("-")) }
                            }
                        }
                    }
                }
            }
        }
        section #citizens {
            h2 { "Citizens (" (s.summary.citizens.len()) ")" }
            table {
                thead { tr { th { "id" } th { "vendor" } th { "state" } th { "current contract" } th { "unread notices" } th { "last activity" } } }
                tbody {
                    @for c in &s.summary.citizens {
                        @let status = polis.status(&c.id);
                        tr {
                            td { (citizen_link(cx, &c.id)) }
                            td { (c.vendor.as_deref().unwrap_or("-")) }
                            td class=(format!("state-{}", c.state)) { (c.state) }
                            td { @if let Some(k) = &status.current_contract { (contract_link(cx, k)) } }
                            td { (super::super::view::unread(s.inboxes.get(&c.id).and_then(|t| t.as_deref()))) }
                            td.muted { (c.last_activity.as_deref().unwrap_or("never")) }
                        }
                    }
                }
            }
        }
        section #amendments {
            h2 { "Amendments" }
            @if s.summary.amendments.is_empty() {
                p.muted { "No proposed amendments." }
            } @else {
                table {
                    thead { tr { th { "amendment" } th { "title" } th { "votes" } th { "expires" } th { "a tally now would" } } }
                    tbody {
                        @for a in &s.summary.amendments {
                            tr {
                                td { (a.amendment_id) }
                                td { (a.title.as_deref().unwrap_or("")) }
                                td {
                                    progress max=(a.quorum) value=(a.agrees.min(a.quorum)) { (a.agrees) "/" (a.quorum) }
                                    " " (a.agrees) " of " (a.quorum)
                                }
                                td { (a.expires.as_deref().unwrap_or("-")) @if a.expiry_passed { " " span.error { "(passed)" } } }
                                td { (a.action) }
                            }
                        }
                    }
                }
            }
        }
        section #findings {
            h2 { "Findings" }
            p {
                span.error { (s.summary.findings.errors) " errors" } ", "
                span.warning { (s.summary.findings.warnings) " warnings" }
                " (newest " (s.summary.findings.newest.len()) ")"
            }
            @if !s.summary.findings.newest.is_empty() {
                table {
                    thead { tr { th { "code" } th { "where" } th { "what" } } }
                    tbody {
                        @for f in &s.summary.findings.newest {
                            tr class=(super::severity_class(f)) {
                                td { (f.code.as_str()) }
                                td { (f.path) @if let Some(l) = f.line { ":" (l) } }
                                td { (f.message) }
                            }
                        }
                    }
                }
            }
        }
    };
    Ok(Rendered {
        title: "Overview".into(),
        body,
    })
}
