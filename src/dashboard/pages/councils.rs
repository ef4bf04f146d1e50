//! Councils: every council of the polis (SPEC's multi-citizen review), newest state first: its
//! mode and phase, the open round and when it closes, each seat's state, the chairman, and
//! what was decided — the verdict rendered as markdown once it is applied, or why the council
//! fell back to one review. What `polisd council status` prints, for every council at once.
//!
//! Council files are few (one folder per council under `reviews/`), so the page reads them
//! when it is asked for rather than keeping them in the published state.

use super::{citizen_link, contract_link, Context, Page, PageError, Rendered};
use crate::operations::council;
use crate::protocol::council::state::{verdict_path, Phase};
use maud::{html, Markup};

pub const PAGE: Page = Page {
    route: "/councils",
    nav: Some("Councils"),
    render,
};

/// The anchor of one council's section on this page, for links from elsewhere.
pub fn anchor(cid: &str) -> String {
    format!("council-{}", super::urlencode(cid))
}

fn render(cx: &Context<'_>) -> Result<Rendered, PageError> {
    let root = &cx.snapshot.polis.root;
    let mut councils = Vec::new();
    let mut unreadable = Vec::new();
    for cid in council::listed(root) {
        match council::status(root, &cid) {
            Ok(s) => councils.push(s),
            Err(e) => unreadable.push((cid, e.to_string())),
        }
    }
    // Those still deliberating first, then the finished ones.
    councils.sort_by_key(|s| {
        (
            matches!(s.phase, Phase::Done | Phase::Fallback),
            s.contract_id.clone(),
        )
    });
    let body = html! {
        h1 { "Councils" }
        @if councils.is_empty() && unreadable.is_empty() {
            p.muted { "No councils yet: a contract asks for one with `council:` in its frontmatter, or a citizen runs `polisd council start`." }
        }
        @if !councils.is_empty() {
            table.councils {
                thead { tr { th { "contract" } th { "mode" } th { "phase" } th { "seats" } th { "chairman" } th { "decision" } } }
                tbody {
                    @for s in &councils {
                        tr {
                            td { a href=(format!("#{}", anchor(&s.contract_id))) { (s.contract_id) } }
                            td { (s.mode.as_str()) }
                            td id=(format!("phase-{}", s.contract_id)) { (phase_line(s)) }
                            td { (s.seats.len()) }
                            td { (citizen_link(cx, &s.chairman)) }
                            td { (decision(s)) }
                        }
                    }
                }
            }
        }
        @for s in &councils {
            section.council id=(anchor(&s.contract_id)) {
                h2 { "Council on " (contract_link(cx, &s.contract_id)) }
                p { (s.mode.as_str()) " · " (phase_line(s)) }
                table {
                    thead { tr { th { "seat" } th { "citizen" } th { "vendor" } th { "state" } th { "this round" } th { "why chosen" } } }
                    tbody {
                        @for seat in &s.seats {
                            tr {
                                td { (seat.label) }
                                td { (citizen_link(cx, &seat.id)) }
                                td { (seat.vendor) }
                                td.(seat.state) { (seat.state) }
                                td {
                                    @if s.phase == Phase::Rounds {
                                        @match seat.words {
                                            Some(w) => { "wrote " (w) " words" }
                                            None => span.muted { "not written yet" },
                                        }
                                    } @else { "-" }
                                }
                                td { (seat.why) }
                            }
                        }
                    }
                }
                p {
                    "Chairman: " (citizen_link(cx, &s.chairman))
                    @if s.chairman_is_owner { " (the owner: nobody else was left for the chair)" }
                }
                @if !s.verdict_problems.is_empty() {
                    p.warning { "The verdict cannot be applied yet:" }
                    ul { @for p in &s.verdict_problems { li { (p) } } }
                }
                @if let Some(f) = &s.fallback {
                    p.warning {
                        "Fell back to one review: " (f.why)
                        @if let Some(r) = &f.reviewer { " — reviewer " (citizen_link(cx, r)) }
                    }
                }
                @if let Some(o) = &s.outcome {
                    p {
                        "Decided " strong { (o.decision) } " after " (o.rounds_run) " rounds in "
                        (o.duration_minutes) " minutes; live " (o.live.len()) ", degraded "
                        (o.degraded.len()) ", offline " (o.offline.len()) "."
                    }
                    @if let Ok(Some(text)) = crate::fs::snapshot::read_text(
                        root,
                        &verdict_path(&s.contract_id),
                        Some(crate::fs::snapshot::MAX_RECORD_BYTES),
                    ) {
                        details open {
                            summary { "Verdict" }
                            (super::markdown_at(cx, &verdict_path(&s.contract_id), crate::protocol::frontmatter::split(&text).body))
                        }
                    }
                }
                @if !s.packets.is_empty() {
                    p.muted { "Round packets: " @for (i, p) in s.packets.iter().enumerate() { @if i > 0 { ", " } code { (p) } } }
                }
            }
        }
        @if !unreadable.is_empty() {
            h2 { "Councils that cannot be read" }
            ul {
                @for (cid, why) in &unreadable {
                    li.error { code { (cid) } ": " (why) }
                }
            }
        }
    };
    Ok(Rendered {
        title: "Councils".into(),
        body,
    })
}

fn phase_line(s: &council::StatusView) -> Markup {
    html! {
        (s.phase_words)
        @if s.phase == Phase::Verdict && s.verdict_present { " (present, not valid yet)" }
    }
}

fn decision(s: &council::StatusView) -> Markup {
    html! {
        @if let Some(o) = &s.outcome { strong { (o.decision) } }
        @else if s.fallback.is_some() { "one review instead" }
        @else { span.muted { "-" } }
    }
}
