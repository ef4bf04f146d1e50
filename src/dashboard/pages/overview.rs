//! The overview, made to fit one screen at team scale: counts, the human queue grouped by
//! kind (each group folded, the most urgent first), one row per citizen, and the work in
//! flight, blocked and waiting for review, councils, reservations and guardrails in force,
//! amendments, findings and a trend. Long lists are folded (`<details>`), so the page keeps
//! its height whatever the polis size, and works without JavaScript.

use super::{citizen_link, contract_link, Context, Page, PageError, Rendered};
use crate::fs::snapshot::ContractFile;
use crate::protocol::finding::{counted, Severity};
use crate::protocol::layout::ContractFolder;
use maud::{html, Markup};

pub const PAGE: Page = Page {
    route: "/",
    nav: Some("Overview"),
    render,
};

/// Items a folded list shows before "and N more".
const SHOWN: usize = 40;
/// A group or list this short is shown unfolded.
const UNFOLDED: usize = 3;

fn render(cx: &Context<'_>) -> Result<Rendered, PageError> {
    let s = cx.snapshot;
    let polis = &s.polis;
    let open: Vec<&ContractFile> = polis
        .contracts
        .iter()
        .filter(|c| c.folder == ContractFolder::Open)
        .collect();
    let with_status = |wanted: &[&str]| -> Vec<&ContractFile> {
        open.iter()
            .copied()
            .filter(|c| wanted.contains(&c.contract.status.as_deref().unwrap_or("")))
            .collect()
    };
    let in_flight = with_status(&["claimed", "in_progress"]);
    let blocked = with_status(&["blocked"]);
    // What waits for a review, by the rule the human queue asks a reviewer by: a lead must not
    // read two answers to one question.
    let reviews: Vec<&ContractFile> = open
        .iter()
        .copied()
        .filter(|c| crate::protocol::contracts::review::awaiting(&c.contract).is_some())
        .collect();
    let proposed = with_status(&["proposed", ""]);
    let stale = crate::operations::stale_claims(polis, &s.now);
    let counts = &s.summary.contracts;
    let groups = super::super::queue::grouped(&s.queue);
    let reservations = s.reservations.as_ref().map(Vec::len).unwrap_or(0);
    let body = html! {
        div.titlebar {
            h1 { "Overview" }
            (super::search_form(cx, ""))
        }
        div.cards.compact {
            div.card { div.n #count-queue { (s.queue.len()) } "for a person" }
            div.card { div.n #count-open { (counts.open) } "open" }
            div.card { div.n #count-in-flight { (in_flight.len()) } "in flight" }
            div.card { div.n #count-blocked { (blocked.len()) } "blocked" }
            div.card { div.n #count-reviews { (reviews.len()) } "waiting for review" }
            div.card { div.n #count-settled { (counts.settled) } "settled" }
            div.card { div.n #count-abandoned { (counts.abandoned) } "abandoned" }
            div.card { div.n #count-guardrails { (s.guardrails.len()) } "guardrails" }
            div.card { div.n #count-reservations { (reservations) } "reservations" }
        }
        div.columns {
            div {
                section #queue {
                    h2 { "Waiting for a person (" (s.queue.len()) ")" }
                    @if s.queue.is_empty() {
                        div.muted { "Nothing needs a person right now." }
                    }
                    @for g in &groups {
                        details.group open[g.items.len() <= UNFOLDED && g.rank < 5] data-rank=(g.rank) {
                            summary { (g.label) " " span.count { (g.items.len()) } }
                            @for item in g.items.iter().take(SHOWN) {
                                div.item data-key=(item.key) {
                                    span.what {
                                        @if let Some(link) = &item.link { a href=(cx.href(link)) { (item.title) } }
                                        @else { (item.title) }
                                    }
                                    div.muted { (super::code_spans(&item.action)) }
                                    @if let Some(key) = item.decision() {
                                        (super::action_form(cx, "decide", "", html! {
                                            input type="hidden" name="key" value=(key);
                                            select name="answer" aria-label=(super::field_label("decide", "answer")) {
                                                option value="accept" { "accept" }
                                                option value="decline" { "decline" }
                                                option value="later" { "later" }
                                            }
                                            input type="text" name="by" required maxlength="100" placeholder=(super::field_label("decide", "by")) aria-label=(super::field_label("decide", "by"));
                                            input type="text" name="why" maxlength="300" placeholder=(super::field_label("decide", "why")) aria-label=(super::field_label("decide", "why"));
                                            @if key.starts_with("new-citizen/") {
                                                input type="text" name="id" maxlength="40" placeholder=(super::field_label("decide", "id")) aria-label=(super::field_label("decide", "id"));
                                                input type="text" name="vendor" maxlength="40" placeholder=(super::field_label("decide", "vendor")) aria-label=(super::field_label("decide", "vendor"));
                                                input type="text" name="model" maxlength="80" placeholder=(super::field_label("decide", "model")) aria-label=(super::field_label("decide", "model"));
                                            }
                                            button type="submit" { "Decide" }
                                        }))
                                    }
                                    @if let Some((citizen, notice)) = item.notice() {
                                        (super::action_form(cx, "answer", "", html! {
                                            input type="hidden" name="citizen" value=(citizen);
                                            input type="hidden" name="notice" value=(notice);
                                            (super::citizen_select(cx, "as", super::field_label("answer", "as")))
                                            input type="text" name="text" required maxlength="2000" placeholder=(super::field_label("answer", "text")) aria-label=(super::field_label("answer", "text"));
                                            button type="submit" { "Answer" }
                                        }))
                                    }
                                }
                            }
                            @if g.items.len() > SHOWN {
                                div.muted { "and " (g.items.len() - SHOWN) " more" }
                            }
                            @if let Some(code) = g.warning_code() {
                                (super::action_form(cx, "silence", "", html! {
                                    input type="hidden" name="code" value=(code);
                                    (super::citizen_select(cx, "as", super::field_label("silence", "as")))
                                    input type="text" name="reason" required maxlength="300" placeholder=(super::field_label("silence", "reason")) aria-label=(super::field_label("silence", "reason"));
                                    button type="submit" { "Silence " (code) }
                                }))
                            }
                        }
                    }
                    @if !s.silenced.is_empty() {
                        details #silenced {
                            summary { "Silenced warnings " span.count { (s.silenced.len()) } }
                            @for x in &s.silenced {
                                div.item data-code=(x.code) {
                                    span.what { (x.code) } " " span.muted { "by " (x.by) ", " (x.at) ": " (x.reason) }
                                    (super::action_form(cx, "unsilence", "", html! {
                                        input type="hidden" name="code" value=(x.code);
                                        (super::citizen_select(cx, "as", super::field_label("unsilence", "as")))
                                        button type="submit" { "Unsilence" }
                                    }))
                                }
                            }
                        }
                    }
                }
                section #citizens {
                    h2 { "Citizens (" (s.summary.citizens.len()) ")" }
                    table.dense {
                        thead { tr { th { "citizen" } th { "vendor" } th { "state" } th { "working on" } th { "unread" } th { "last active" } } }
                        tbody {
                            @for c in &s.summary.citizens {
                                tr data-citizen=(c.id) {
                                    td { (citizen_link(cx, &c.id)) }
                                    td { (c.vendor.as_deref().unwrap_or("-")) }
                                    td class=(format!("state-{}", c.state)) {
                                        // `state` is the citizen's own word; a claim it holds is
                                        // the contracts' word, and wins where they disagree.
                                        @if c.working_on.is_some() && matches!(c.state.as_str(), "idle" | "away") {
                                            (c.state) span.muted { ", says its status.md" }
                                        } @else { (c.state) }
                                    }
                                    td.current { @if let Some(k) = &c.working_on { (contract_link(cx, k)) } }
                                    td.unread { (s.unread.get(&c.id).copied().unwrap_or(0)) }
                                    td.muted.last-active { (last_seen(c.last_activity.as_deref(), &s.now)) }
                                }
                            }
                        }
                    }
                }
            }
            div {
                section #trend {
                    h2 { "Settled per day, last " (super::super::view::TREND_DAYS) " days" }
                    (super::super::chart::daily_bars(s.trend()))
                }
                section #work {
                    h2 { "Work" }
                    @if open.is_empty() {
                        (next_step(cx))
                    } @else {
                        (contracts(cx, "in-flight", "In flight", &in_flight, &stale))
                        (contracts(cx, "blocked", "Blocked", &blocked, &stale))
                        (reviews_fold(cx, &reviews, &stale))
                        (contracts(cx, "proposed", "Proposed, unclaimed", &proposed, &stale))
                    }
                }
                section #councils-now {
                    details open[(1..=UNFOLDED).contains(&s.summary.councils.len())] {
                        summary { "Councils " span.count { (s.summary.councils.len()) } }
                        @for c in &s.summary.councils {
                            div.item {
                                a href=(cx.href(&format!("councils#council-{}", c.contract_id))) { (c.contract_id) }
                                " " span.muted { (c.mode) " · " (c.phase_words) }
                            }
                        }
                    }
                }
                section #reservations {
                    details open[(1..=UNFOLDED).contains(&reservations) || s.reservations.is_err()] {
                        summary { "Reservations in force " span.count { (reservations) } }
                        @match &s.reservations {
                            Err(why) => { div.error { (why) } }
                            Ok(list) => {
                                @for r in list.iter().take(SHOWN) {
                                    div.item {
                                        @if let Some(c) = &r.citizen { (citizen_link(cx, c)) } @else { span.muted { "nobody" } }
                                        ": " code { (r.paths.join(", ")) }
                                        " " span.muted { "until " (r.expires_at.as_deref().unwrap_or("released")) }
                                    }
                                }
                            }
                        }
                    }
                }
                section #guardrails {
                    details open[(1..=UNFOLDED).contains(&s.guardrails.len())] {
                        summary { "Guardrails in force " span.count { (s.guardrails.len()) } }
                        @for g in s.guardrails.iter().take(SHOWN) {
                            div.item data-guardrail=(g.guardrail_id) {
                                span.what { (g.guardrail_id) }
                                @if !g.tags.is_empty() { " " span.muted { "on " (g.tags.join(", ")) } }
                                div.muted { (crate::protocol::delivery::notice::one_line(&g.text, 160)) }
                            }
                        }
                    }
                }
                section #amendments {
                    details open[(1..=UNFOLDED).contains(&s.summary.amendments.len())] {
                        summary { "Amendments proposed " span.count { (s.summary.amendments.len()) } }
                        @for a in &s.summary.amendments {
                            div.item {
                                a href=(cx.href(&format!("amendments/{}", super::urlencode(&a.amendment_id)))) { (a.amendment_id) }
                                " " span.muted { (a.title.as_deref().unwrap_or("")) }
                                " "
                                progress max=(a.quorum) value=(a.agrees.min(a.quorum)) { (a.agrees) "/" (a.quorum) }
                                " " (a.agrees) " of " (a.quorum)
                                " · " span.muted { "expires " (a.expires.as_deref().unwrap_or("-")) }
                                @if a.expiry_passed { " " span.error { "(passed)" } }
                                " · a tally now would " (a.tally_would())
                                @if let Some(who) = a.who_tallies(s.summary.daemon.as_ref().map(|d| d.pid)) { ": " (super::code_spans(&who)) }
                            }
                        }
                    }
                }
                section #findings {
                    details {
                        summary {
                            "Findings "
                            span.error { (counted(s.summary.findings.errors, Severity::Error)) } ", "
                            span.warning { (counted(s.summary.findings.warnings, Severity::Warning)) }
                        }
                        @if !s.summary.findings.newest.is_empty() {
                            table.dense {
                                thead { tr { th { "code" } th { "where" } th { "what" } } }
                                tbody {
                                    @for f in &s.summary.findings.newest {
                                        tr class=(f.severity.as_str()) {
                                            td { (f.code.as_str()) }
                                            td { (f.path) @if let Some(l) = f.line { ":" (l) } }
                                            td { (f.message) }
                                        }
                                    }
                                }
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

/// With no contract open, four folds of zeros say nothing: say how work starts instead. The
/// `--by` is the one citizen when there is one (a new polis's founder), else a placeholder.
fn next_step(cx: &Context<'_>) -> Markup {
    let citizens = &cx.snapshot.summary.citizens;
    let by = match citizens.as_slice() {
        [only] => only.id.as_str(),
        _ => "YOUR-ID",
    };
    html! {
        div #next-step {
            p { "No contract is open. Open one:" }
            pre { code { "polisd contract open --title \"What to do\" --by " (by) " --tags TAG" } }
            p.muted {
                "(" code { "--stakes high" } " for work another citizen must review first), or copy "
                code { "contracts/TEMPLATE.md" } " into " code { "contracts/open/" } " and fill it in. "
                "Then " code { "polisd route ID" } " (or the daemon, on its next pass) recommends who takes it."
            }
        }
    }
}

/// The contracts waiting for a review, the fold saying what it counts and each item what it
/// waits for.
fn reviews_fold(
    cx: &Context<'_>,
    list: &[&ContractFile],
    stale: &std::collections::BTreeMap<String, String>,
) -> Markup {
    use crate::protocol::contracts::review::{awaiting, Awaiting};
    let means = html! {
        div.muted {
            "Open contracts whose status says " code { "under_review" } ", and every "
            code { "stakes: high" } " contract that is claimed with no review decision yet (it settles only after another citizen signs it off)."
        }
    };
    let why = |c: &ContractFile| -> Markup {
        match awaiting(&c.contract) {
            Some(Awaiting::NoReviewer) => {
                html! { " · " span.state-stale { "no reviewer yet: a person chooses one" } }
            }
            Some(Awaiting::Reviewer(r)) => {
                html! { " · " (citizen_link(cx, &r)) " asked, no decision yet" }
            }
            Some(Awaiting::StatusSays) => {
                html! { " · " span.muted { "its status says under_review" } }
            }
            None => html! {},
        }
    };
    list_fold(
        cx,
        "reviews",
        "Waiting for review",
        list,
        stale,
        Some(means),
        &why,
    )
}

/// A folded list of open contracts, each with its owner and (when quiet) since when.
fn contracts(
    cx: &Context<'_>,
    id: &str,
    label: &str,
    list: &[&ContractFile],
    stale: &std::collections::BTreeMap<String, String>,
) -> Markup {
    list_fold(cx, id, label, list, stale, None, &|_| html! {})
}

/// [`contracts`], with a line under the summary saying what the list holds and a note after
/// each item.
fn list_fold(
    cx: &Context<'_>,
    id: &str,
    label: &str,
    list: &[&ContractFile],
    stale: &std::collections::BTreeMap<String, String>,
    means: Option<Markup>,
    note: &dyn Fn(&ContractFile) -> Markup,
) -> Markup {
    html! {
        details id=(id) open[!list.is_empty() && list.len() <= UNFOLDED] {
            summary { (label) " " span.count { (list.len()) } }
            @if let Some(m) = means { (m) }
            @for c in list.iter().take(SHOWN) {
                @let k = &c.contract;
                div.item {
                    (contract_link(cx, &c.file.stem)) " "
                    span.muted { (k.title.as_deref().unwrap_or("")) }
                    " · "
                    @if let Some(o) = &k.owner { (citizen_link(cx, o)) } @else { span.muted { "unclaimed" } }
                    @if let Some(stakes) = &k.stakes { " · " span.muted { (stakes) } }
                    (note(c))
                    @if let Some(since) = stale.get(&c.file.stem) { " " span.state-stale { "quiet since " (since) } }
                }
            }
            @if list.len() > SHOWN {
                div.muted { "and " (list.len() - SHOWN) " more: " a href=(cx.href("search?q=status:open")) { "search" } }
            }
        }
    }
}

/// When a citizen was last seen, with how long ago: a date alone hides that a citizen went
/// silent. Past the activity window it is marked, as such a citizen counts for no quorum.
fn last_seen(at: Option<&str>, now: &crate::protocol::clock::PolisTime) -> maud::Markup {
    let Some(at) = at else {
        return html! { "never" };
    };
    let when = ["%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M"]
        .iter()
        .find_map(|f| chrono::NaiveDateTime::parse_from_str(at, f).ok());
    let days = when.map(|t| (now.now - t).num_days());
    let window = crate::protocol::chronicle::ACTIVITY_WINDOW_DAYS;
    html! {
        (at)
        @match days {
            Some(d) if d > window => {
                " · " span.state-stale title=(format!("no chronicle line in the {window}-day activity window")) { (d) " days ago: inactive, not counted for quorum" }
            }
            Some(d) if d >= 2 => { " · " (d) " days ago" }
            Some(1) => { " · yesterday" }
            _ => {}
        }
    }
}
