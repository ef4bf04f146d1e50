//! One contract: its frontmatter, its body as markdown, the routing explanation (what `polisd
//! route ID --explain` prints), its handoff chain (parent, follow-ups and what became of each
//! suggestion, new citizens asked for), its dependencies and readiness, the chronicle lines
//! about it, its lessons and reviews.

use super::{citizen_link, contract_link, Context, Page, PageError, Rendered};
use crate::operations::handoff::BlockOutcome;
use crate::protocol::chronicle;
use crate::protocol::contracts::dependency;
use crate::protocol::layout::ContractFolder;
use maud::html;

pub const PAGE: Page = Page {
    route: "/contracts/{id}",
    nav: None,
    render,
};

fn render(cx: &Context<'_>) -> Result<Rendered, PageError> {
    let s = cx.snapshot;
    let id = cx.param("id");
    let file = s
        .contract(id)
        .ok_or_else(|| PageError::NotFound(format!("no contract `{id}` in this polis")))?;
    let file = file.as_ref();
    let k = &file.contract;
    let split = crate::protocol::frontmatter::split(&file.file.text);
    let routing = (file.folder == ContractFolder::Open).then(|| {
        let options = crate::operations::route::RouteOptions {
            adaptive: false,
            // A fixed seed, so the page does not change on every reload.
            seed: Some(0),
            policy: None,
        };
        // The snapshot's polis keeps its settled contracts apart (in the ledger), so the
        // router is handed their history, as the daemon and the MCP server hand it theirs.
        let history = crate::protocol::routing::history_of(s.state.settled.iter().map(|(_, v)| v));
        crate::operations::route::recommend_from(&s.polis, &history, file, &options)
    });
    // The files the activity window reads (`chronicle.md`, then the newest archive), read
    // from disk a line at a time.
    let mut lines = Vec::new();
    let current = crate::protocol::layout::CHRONICLE;
    let recent = (s.chronicle_files.iter().filter(|f| *f == current))
        .chain(s.chronicle_files.iter().rev().find(|f| *f != current));
    for name in recent {
        let Some(mut reader) = crate::fs::chronicle_lines::LineReader::open(&s.polis.root, name)
        else {
            continue;
        };
        while let Some(line) = reader.next_line() {
            let about = chronicle::parse_entry(line.text)
                .ok()
                .and_then(|e| e.link.and_then(chronicle::link_target))
                .is_some_and(|t| t.rsplit('/').next() == Some(id));
            if about {
                lines.push(line.text.to_string());
            }
        }
    }
    let lessons: Vec<_> = s
        .polis
        .lessons
        .iter()
        .filter(|l| mentions(&l.lesson.related_contracts, id))
        .collect();
    let mut ignored = Vec::new();
    let reviews: Vec<_> = crate::fs::snapshot::read_records(
        &s.polis.root,
        crate::protocol::layout::REVIEWS_DIR,
        &mut ignored,
    )
    .into_iter()
    .filter_map(|r| {
        let review = crate::protocol::contracts::review::parse(&r.text).ok()?;
        (review.contract.as_deref() == Some(id)).then_some((r.rel, review))
    })
    .collect();
    let title = k.title.clone().unwrap_or_else(|| id.to_string());
    let handoffs = handoff_section(cx, file);
    let dependencies = dependency_section(cx, file);
    // Read only to link to it: the councils page shows it whole.
    let council = crate::operations::council::read(&s.polis.root, id)
        .ok()
        .flatten();
    let body = html! {
        h1 { (title) }
        p.muted {
            (file.file.rel) " · " (file.folder.name())
            @if let Some(st) = &k.status { " · status " strong #status { (st) } }
            @if let Some(o) = &k.owner { " · owner " (citizen_link(cx, o)) }
            @if let Some(st) = &k.stakes { " · stakes " (st) }
        }
        h2 { "Frontmatter" }
        div #frontmatter { @if let Some(yaml) = split.yaml { (super::frontmatter_table(yaml)) } @else { "(none)" } }
        h2 { "Body" }
        (super::markdown_at(cx, &file.file.rel, &k.body))
        @if let Some(routed) = &routing {
            h2 { "Routing" }
            (routing_section(cx, file, routed))
            @if k.owner.is_none() {
                section #override-form {
                    (super::action_form(cx, "override", &format!("contracts/{}", super::urlencode(id)), html! {
                        input type="hidden" name="contract" value=(id);
                        (super::citizen_select(cx, "to", super::field_label("override", "to")))
                        label.wide { (super::field_label("override", "reason")) " " input type="text" name="reason" required maxlength="300"; }
                        button type="submit" { "Override the routing" }
                    }))
                }
            }
        }
        (handoffs)
        (dependencies)
        @if let Some(c) = &council {
            h2 { "Council" }
            p #council {
                (c.mode.as_str()) " council: " (c.phase_words())
                @if let Some(o) = &c.outcome { ": decided " strong { (o.decision) } }
                " · " a href=(format!("{}#{}", cx.href("councils"), super::councils::anchor(id))) { "seats, rounds and verdict" }
            }
        }
        h2 { "Chronicle (" (lines.len()) ")" }
        @if lines.is_empty() { p.muted { "No chronicle line links to this contract." } }
        @else { ul #contract-chronicle { @for l in &lines { li { (super::chronicle::entry_inline(cx, l)) } } } }
        h2 { "Lessons (" (lessons.len()) ")" }
        @if !lessons.is_empty() {
            ul #contract-lessons { @for l in &lessons { li { (super::lesson_link(cx, &l.lesson.lesson_id)) " by " (l.lesson.filed_by.as_deref().unwrap_or("?")) " (" (l.rel) ")" } } }
        }
        h2 { "Reviews (" (reviews.len()) ")" }
        @if !reviews.is_empty() {
            ul { @for (rel, r) in &reviews {
                li { (r.reviewer.as_deref().unwrap_or("?")) ": " (r.decision.as_ref().map(|d| d.as_str().to_string()).unwrap_or_else(|| "no decision".into())) " (" (rel) ")" }
            } }
        }
        section #review-form {
            h2 { "Review as a person" }
            (super::action_form(cx, "review", &format!("contracts/{}", super::urlencode(id)), html! {
                input type="hidden" name="contract" value=(id);
                (super::citizen_select(cx, "as", super::field_label("review", "as")))
                label { (super::field_label("review", "decision")) " "
                    select name="decision" {
                        option value="signed_off" { "sign off" }
                        option value="requested_changes" { "request changes" }
                        option value="rejected" { "reject" }
                    }
                }
                label.wide { (super::field_label("review", "body")) " " textarea name="body" rows="3" {} }
                button type="submit" { "Write the review" }
            }))
        }
    };
    Ok(Rendered { title, body })
}

/// What the router recorded when polisd routed the contract (the routing block, and the
/// citizen its notice went to), what it would pick now, and why the two differ: a lead reading
/// two names must not take the difference for a bug.
fn routing_section(
    cx: &Context<'_>,
    file: &crate::fs::snapshot::ContractFile,
    routed: &Result<crate::protocol::routing::Routed, crate::operations::route::RouteError>,
) -> maud::Markup {
    let s = cx.snapshot;
    let id = file.file.stem.as_str();
    let k = &file.contract;
    let recorded = k.routing.recommended_by_router.as_deref();
    let opened = crate::protocol::delivery::inbox::value_stamp(&k.opened_at, s.now.zone);
    let r = match routed {
        Ok(r) => r,
        Err(e) => return html! { p.muted { (e.to_string()) } },
    };
    let now = r.recommendation.recommendation.as_deref();
    let since = crate::operations::route::settled_since(k, s.state.settled.iter(), s.now.zone);
    const LISTED: usize = 10;
    html! {
        p #routing-recorded {
            @if let Some(who) = recorded {
                "Recorded when polisd routed it"
                @if let Some(at) = &opened { " (on its first pass after it was opened, " (at) ")" }
                ": " strong { (citizen_link(cx, who)) }
                @if let Some(score) = k.routing.recommendation_score {
                    // The routing block records the pick's score total then; the breakdown
                    // below is the same score now, so the two are put side by side.
                    " (score total " (format!("{score:.3}")) " then"
                    @if let Some(now) = r.recommendation.scores.iter().find(|x| x.citizen == who) {
                        "; " (format!("{:.3}", now.total)) " now, as the breakdown's total"
                    }
                    ")"
                }
                @if k.routing.exploration == Some(true) { ", an exploration pick" }
                "; the notice that it should take it went to its inbox."
            } @else if let Some(owner) = &k.owner {
                "Never routed: " (citizen_link(cx, owner)) " claimed it before the router recorded a pick."
            } @else {
                "Not routed yet: polisd records the router's pick here, and tells that citizen in its inbox, on the daemon's first pass once the contract is ready."
            }
        }
        p #routing-now {
            "If it were routed now: "
            @if let Some(who) = now { strong { (citizen_link(cx, who)) } } @else { "nobody" }
            @if r.recommendation.exploration {
                " (an exploration draw with seed 0; " code { "polisd route " (id) " --explain" } " draws afresh)"
            } @else {
                " (the router's best estimate; " (format!("{:.0}", 100.0 * r.recommendation.explore_rate)) "% of routings explore instead)"
            }
            " · policy " (r.policy.to_string())
        }
        @if let (Some(then), Some(now)) = (recorded, now) {
            p #routing-why {
                @if then == now {
                    "The router would still pick " (then) "."
                } @else if !since.is_empty() {
                    "It differs because " (since.len()) " contract" @if since.len() != 1 { "s" }
                    " on its tags settled since it was opened, and the router learns from each: "
                    @for (i, c) in since.iter().take(LISTED).enumerate() {
                        @if i > 0 { ", " }
                        (contract_link(cx, &c.contract)) " (" (citizen_link(cx, &c.owner)) ", quality " (c.quality) ")"
                    }
                    @if since.len() > LISTED { ", and " (since.len() - LISTED) " more" }
                    "."
                } @else if k.routing.exploration == Some(true) {
                    "It differs because the recorded pick was an exploration: a deliberate try of a citizen the router knew less about."
                } @else {
                    "Nothing on its tags settled since it was opened: a capability card, a lesson or the routing settings of polis.yml changed since."
                }
            }
        }
        details #routing-breakdown {
            summary { "Every citizen's score, as " code { "polisd route " (id) " --explain" } " prints it" }
            p.muted #routing-scales {
                code { "total" } " is the routing score: history, self-rating, cost fit, availability and lessons, each weighed by "
                code { "polis.yml" } "'s routing weights, computed now. A contract's " code { "recommendation_score" }
                " records the picked citizen's total when polisd routed it."
                @if !r.explanation.is_empty() {
                    " Under policy " (r.policy.to_string()) ", " code { "value" }
                    " is what the policy ranked by"
                    @if r.policy == crate::protocol::routing::policy::Policy::Posterior {
                        " (its estimate of the citizen's quality, counted with some optimism, in place of history and self-rating, plus the same cost fit, availability and lessons)"
                    }
                    "; it is recorded nowhere."
                }
            }
            pre #routing {
                (crate::operations::route::explain(&r.recommendation))
                @if !r.explanation.is_empty() { "Policy `" (r.policy.to_string()) "`:\n" (r.explanation) }
            }
        }
    }
}

fn folder_label(cx: &Context<'_>, id: &str) -> String {
    cx.snapshot
        .folder_of(id)
        .map_or_else(|| "not in this polis".to_string(), |f| f.name().to_string())
}

/// The handoff chain, when there is one: the chain of owners, the parent, each suggestion of
/// the Settlement with its outcome, follow-ups opened by hand, new citizens asked for.
fn handoff_section(cx: &Context<'_>, file: &crate::fs::snapshot::ContractFile) -> maud::Markup {
    let s = cx.snapshot;
    let id = file.file.stem.as_str();
    let k = &file.contract;
    let chain = crate::protocol::contracts::handoff::ids_of(k.fields.get("chain"));
    let parent = k
        .fields
        .get("parent_contract")
        .as_str()
        .map(str::to_string)
        .filter(|p| !p.trim().is_empty());
    let settled = file.folder == crate::protocol::layout::ContractFolder::Settled;
    let (blocks, new) =
        crate::operations::handoff::explain(&s.polis, id, k, settled, &file.file.text, &|c| {
            s.folder_of(c)
        });
    let listed: Vec<String> = blocks
        .iter()
        .map(|(b, _)| format!("{id}-next-{}", b.n))
        .collect();
    // Open or abandoned contracts naming this one as parent that no block accounts for.
    let others: Vec<&crate::fs::snapshot::ContractFile> = s
        .polis
        .contracts
        .iter()
        .filter(|c| c.contract.fields.get("parent_contract").as_str() == Some(id))
        .filter(|c| !listed.contains(&c.file.stem))
        .collect();
    if chain.is_empty()
        && parent.is_none()
        && blocks.is_empty()
        && new.is_empty()
        && others.is_empty()
    {
        return html! {};
    }
    let max = crate::protocol::contracts::handoff::max_chain_depth(&s.polis.settings.merged);
    html! {
        section #handoffs {
            h2 { "Handoff chain" }
            @if !chain.is_empty() {
                p #chain { "Owners so far: "
                    @for (i, c) in chain.iter().enumerate() { @if i > 0 { " → " } (citizen_link(cx, c)) }
                    " · this contract is step " (chain.len() + 1) " of at most " (max) }
            }
            @if let Some(p) = &parent {
                p #parent { "Follow-up of " (contract_link(cx, p)) " (" (folder_label(cx, p)) ")" }
            }
            @if !blocks.is_empty() || !others.is_empty() {
                table #followups {
                    thead { tr { th { "#" } th { "suggested citizen" } th { "reason" } th { "what became of it" } } }
                    tbody {
                        @for (b, outcome) in &blocks {
                            tr class=(match outcome { BlockOutcome::Dispatched { .. } => "dispatched", BlockOutcome::Deferred { .. } => "deferred", BlockOutcome::Skipped { .. } => "skipped", BlockOutcome::Pending => "pending", BlockOutcome::NotOpened => "not-opened" }) {
                                td { (b.n) }
                                td { (citizen_link(cx, &b.citizen)) }
                                td { (b.reason) }
                                td {
                                    @match outcome {
                                        BlockOutcome::Dispatched { id, folder } => { "follow-up " (contract_link(cx, id)) " (" (folder) ")" }
                                        BlockOutcome::Deferred { why, .. } => { span.warning { "deferred" } ": " (why) "; the chain's first opener was told, so a person can open it by hand" }
                                        BlockOutcome::Skipped { why } => { span.warning { "skipped" } ": the citizen " (why) "; its author was told" }
                                        BlockOutcome::Pending => { span.muted { "dispatched when the contract settles" } }
                                        BlockOutcome::NotOpened => { span.muted { "no follow-up: it settled before polisd met the polis, or the citizen could not take work then" } }
                                    }
                                }
                            }
                        }
                        @for c in &others {
                            tr.dispatched {
                                td { "-" }
                                td { @if let Some(o) = &c.contract.owner { (citizen_link(cx, o)) } @else { span.muted { "unclaimed" } } }
                                td { (c.contract.title.as_deref().unwrap_or("")) }
                                td { "follow-up " (contract_link(cx, &c.file.stem)) " (" (c.folder.name()) ")" }
                            }
                        }
                    }
                }
            }
            @if !new.is_empty() {
                h3 { "New citizens asked for" }
                ul #citizens-needed {
                    @for n in &new {
                        li { strong { (n.need) } ": " (n.reason) @if !n.role.is_empty() { " (role: " (n.role) ")" }
                            span.muted { " · waits for a person in the human queue (`polisd queue`)" } }
                    }
                }
            }
        }
    }
}

/// `depends_on` with where each dependency is, the readiness of an open contract, and the
/// open contracts that wait for this one.
fn dependency_section(cx: &Context<'_>, file: &crate::fs::snapshot::ContractFile) -> maud::Markup {
    let s = cx.snapshot;
    let id = file.file.stem.as_str();
    let deps = dependency::depends_on(&file.contract);
    let waiting: Vec<&crate::fs::snapshot::ContractFile> = s
        .polis
        .contracts
        .iter()
        .filter(|c| c.folder == crate::protocol::layout::ContractFolder::Open)
        .filter(|c| dependency::depends_on(&c.contract).iter().any(|d| d == id))
        .collect();
    if deps.is_empty() && waiting.is_empty() {
        return html! {};
    }
    let open = file.folder == crate::protocol::layout::ContractFolder::Open;
    let unsettled: Vec<&String> = deps.iter().filter(|d| !s.is_settled(d)).collect();
    let node = dependency::Node::of(id, &file.file.rel, &file.contract);
    let ready = dependency::is_ready(&node, &|d| s.is_settled(d));
    html! {
        section #dependencies {
            h2 { "Dependencies" }
            @if !deps.is_empty() {
                ul #depends-on {
                    @for d in &deps {
                        li class=(if s.is_settled(d) { "settled" } else { "waiting" }) { (contract_link(cx, d)) " (" (folder_label(cx, d)) ")" }
                    }
                }
            }
            @if open {
                p #readiness {
                    @if let Some(o) = &file.contract.owner {
                        "In progress: claimed by " (citizen_link(cx, o)) "."
                    } @else if ready {
                        strong.ready { "Ready" } ": unowned, and every dependency has settled."
                    } @else {
                        strong.blocked { "Not ready" } ": waiting for "
                        @for (i, d) in unsettled.iter().enumerate() { @if i > 0 { ", " } (contract_link(cx, d)) }
                        " to settle."
                    }
                }
            }
            @if !waiting.is_empty() {
                p #unblocks { "Open contracts waiting for this one: "
                    @for (i, c) in waiting.iter().enumerate() { @if i > 0 { ", " } (contract_link(cx, &c.file.stem)) } }
            }
        }
    }
}

/// Whether `related_contracts` (a list, or one string) names `id`.
fn mentions(related: &crate::yaml::Value, id: &str) -> bool {
    match related.as_seq() {
        Some(items) => items.iter().any(|v| v.as_str() == Some(id)),
        None => related.as_str() == Some(id),
    }
}
