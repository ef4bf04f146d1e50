//! Dispatching handoffs: the suggestions of a settled contract become routed
//! follow-up contracts, within the chain rules of `protocol::contracts::handoff`.
//!
//! Idempotent by construction: the n-th next-citizen block of `<parent>` always names
//! `contracts/open/<parent>-next-<n>.md`, created with `create_new`; a block whose file exists
//! in any folder was dispatched before, and only its chronicle line (if a crash lost it) and
//! its notice (whose id the inboxes already hold) are derived again. So a restart, a replayed
//! event or a second machine dispatches nothing twice. The follow-up's bytes depend only on the
//! synced files (its `opened_at` is the parent's `settled_at`) and its `opened contract` line
//! carries the id of its cause, so two machines that both dispatch converge (docs/sync.md).
//! The notices are returned, not sent: the caller queues them (the daemon's outbox).

use crate::fs::snapshot::{self, Polis};
use crate::fs::writer::Writer;
use crate::operations::chronicle;
use crate::operations::error::OpError;
use crate::operations::lookup;
use crate::protocol::clock::PolisTime;
use crate::protocol::contracts::contract::{self as rules, Contract};
use crate::protocol::contracts::handoff::{
    self, Deferral, FollowUp, NewCitizen, Skip, Source, Suggestion,
};
use crate::protocol::delivery::inbox::Notification;
use crate::protocol::frontmatter;
use crate::protocol::layout::{self, ContractFolder};
use std::collections::BTreeSet;
use std::path::Path;

/// One follow-up contract of a dispatch.
#[derive(Debug, Clone, serde::Serialize)]
pub struct OpenedHandoff {
    pub contract_id: String,
    pub citizen: String,
    pub step: usize,
    /// Already there from an earlier dispatch (nothing new was written for it).
    pub existing: bool,
}

/// A suggestion that was not dispatched, and why.
#[derive(Debug, Clone, serde::Serialize)]
pub struct NotDispatched {
    pub suggestion: Suggestion,
    pub why: String,
}

/// What dispatching one parent's suggestions did.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Dispatch {
    pub parent_id: String,
    pub opened: Vec<OpenedHandoff>,
    /// Refused by the chain rules (told to the chain's first opener).
    pub deferred: Vec<NotDispatched>,
    /// The citizen cannot take work (told to the suggestion's author).
    pub skipped: Vec<NotDispatched>,
    pub citizens_needed: Vec<NewCitizen>,
    #[serde(skip)]
    pub notices: Vec<Notification>,
    /// Whether anything was written into the polis.
    pub wrote: bool,
}

fn read_record(root: &Path, rel: &str) -> Result<Option<(String, Contract)>, OpError> {
    let Some(text) = snapshot::read_text(root, rel, Some(snapshot::MAX_RECORD_BYTES))? else {
        return Ok(None);
    };
    match rules::Contract::parse(&text) {
        Ok(c) => Ok(Some((text, c))),
        Err(e) => Err(OpError::Unreadable {
            path: rel.to_string(),
            why: e.to_string(),
        }),
    }
}

/// The opener of the first contract of `contract`'s handoff sequence: up the `parent_contract`
/// links (bounded, so a hand-made loop ends) to a contract without one.
pub fn first_opener(root: &Path, contract: &Contract) -> Option<String> {
    let mut current = contract.clone();
    for _ in 0..32 {
        let parent = current
            .fields
            .get("parent_contract")
            .as_str()
            .map(str::to_string);
        let Some(parent) = parent.filter(|p| layout::is_slug(p)) else {
            return current.opened_by.clone();
        };
        let (_, rel) = lookup::find(root, &parent).ok()?;
        current = read_record(root, &rel).ok().flatten()?.1;
    }
    None
}

/// The owners of `parent`'s handoff sequence so far, its own owner last, as the contracts show
/// them: the `chain` the sequence's first contract records, then the owner of every contract
/// down the `parent_contract` links to `parent` (bounded, so a hand-made loop ends; where an
/// ancestor cannot be read, the `chain` of the last one read stands for those above it). A
/// citizen who owns two steps counts twice, as the seed's "append after each agent returns"
/// says, and the `chain:` a follow-up records is not trusted: its owner can edit it while the
/// chain runs, and neither that nor claiming one's own follow-ups loosens the chain rules.
pub fn chain_of(root: &Path, parent_id: &str, parent: &Contract) -> Vec<String> {
    let mut owners = Vec::new();
    let mut seen = BTreeSet::from([parent_id.to_string()]);
    let mut current = parent.clone();
    loop {
        if let Some(owner) = current.owner.as_deref().filter(|o| !o.trim().is_empty()) {
            owners.push(owner.to_string());
        }
        let above = current
            .fields
            .get("parent_contract")
            .as_str()
            .filter(|p| layout::is_slug(p) && seen.len() <= 32 && seen.insert(p.to_string()))
            .and_then(|p| lookup::find(root, p).ok())
            .and_then(|(_, rel)| read_record(root, &rel).ok().flatten());
        match above {
            Some((_, contract)) => current = contract,
            None => break,
        }
    }
    let mut chain = handoff::ids_of(current.fields.get("chain"));
    chain.extend(owners.into_iter().rev());
    chain
}

/// Why `id` cannot take work, if it cannot.
fn skip_reason(polis: &Polis, id: &str) -> Option<Skip> {
    if !layout::is_agent_id(id) {
        return Some(Skip::BadId);
    }
    if !polis.cards.contains_key(id) {
        return Some(Skip::Unknown);
    }
    if polis.status(id).is_away() {
        return Some(Skip::Away);
    }
    if polis.departed().contains(id) {
        return Some(Skip::Left);
    }
    None
}

fn worded(n: &NotDispatched) -> String {
    let s = &n.suggestion;
    let context = if s.context.trim().is_empty() {
        "-"
    } else {
        s.context.as_str()
    };
    format!(
        "`{}` was suggested but {}. Reason: {}. Context: {}.",
        s.citizen,
        n.why,
        s.reason.trim_end_matches('.'),
        context.trim_end_matches('.')
    )
}

/// Dispatches the suggestions in the `## Settlement` of the settled contract `parent_id`.
/// Reads only that contract, its ancestors and the existence of its follow-ups.
pub fn dispatch_settled(
    writer: &Writer,
    now: &PolisTime,
    polis: &Polis,
    parent_id: &str,
) -> Result<Dispatch, OpError> {
    let root = writer.root();
    lookup::check_slug("contract id", parent_id)?;
    let rel = layout::contract_path(ContractFolder::Settled, parent_id).expect("a slug");
    let Some((text, parent)) = read_record(root, &rel)? else {
        return Err(OpError::NoContract(parent_id.to_string()));
    };
    let blocks = handoff::parse_blocks(handoff::settlement_section(&text));
    let author = parent
        .owner
        .clone()
        .unwrap_or_else(|| layout::DAEMON_ID.to_string());
    dispatch_blocks(
        writer,
        now,
        polis,
        parent_id,
        &parent,
        &author,
        &Source::Settlement,
        &blocks,
    )
}

/// Dispatches the suggestions in the review file `reviews/<name>` (SPEC §10:
/// `<YYYY-MM-DD-HHMM>-<cid>.md`) as its reviewer's suggestions of follow-ups to the reviewed
/// contract, in whichever folder it is, under the same chain rules as a Settlement's. The
/// blocks are read from the whole body; the n-th names
/// `<cid>-review-<YYYYMMDDHHMM>-next-<n>`. Reads only that review, the contract, its ancestors
/// and the existence of the follow-ups.
pub fn dispatch_review(
    writer: &Writer,
    now: &PolisTime,
    polis: &Polis,
    name: &str,
) -> Result<Dispatch, OpError> {
    let root = writer.root();
    let Some((source, named)) = Source::review(name) else {
        return Err(OpError::BadId {
            what: "review file name",
            value: name.to_string(),
            rule: "reviews are named <YYYY-MM-DD-HHMM>-<contract-id>.md (SPEC §10)".into(),
        });
    };
    let rel = format!("{}/{name}", layout::REVIEWS_DIR);
    let Some(text) = snapshot::read_text(root, &rel, Some(snapshot::MAX_RECORD_BYTES))? else {
        return Err(OpError::NoContract(named));
    };
    let review =
        crate::protocol::contracts::review::parse(&text).map_err(|e| OpError::Unreadable {
            path: rel.clone(),
            why: e.to_string(),
        })?;
    let body = frontmatter::parse(&text)
        .map(|r| r.body)
        .unwrap_or_default();
    let blocks = handoff::parse_blocks(&body);
    if blocks.next.is_empty() && blocks.new.is_empty() {
        return Ok(Dispatch {
            parent_id: named,
            ..Dispatch::default()
        });
    }
    // The frontmatter names the contract; the file name does when it does not.
    let parent_id = review
        .contract
        .filter(|c| layout::is_slug(c))
        .unwrap_or(named);
    let (_, parent_rel) = lookup::find(root, &parent_id)?;
    let Some((_, parent)) = read_record(root, &parent_rel)? else {
        return Err(OpError::NoContract(parent_id));
    };
    let author = review
        .reviewer
        .filter(|r| layout::is_agent_id(r))
        .unwrap_or_else(|| layout::DAEMON_ID.to_string());
    dispatch_blocks(
        writer, now, polis, &parent_id, &parent, &author, &source, &blocks,
    )
}

/// Dispatches `blocks` as suggestions of `author` for follow-ups to `parent`, written in
/// `source` (the parent's Settlement or a review of it).
#[allow(clippy::too_many_arguments)]
pub fn dispatch_blocks(
    writer: &Writer,
    now: &PolisTime,
    polis: &Polis,
    parent_id: &str,
    parent: &Contract,
    author: &str,
    source: &Source,
    blocks: &handoff::Blocks,
) -> Result<Dispatch, OpError> {
    let root = writer.root();
    let mut out = Dispatch {
        parent_id: parent_id.to_string(),
        ..Dispatch::default()
    };
    if blocks.next.is_empty() && blocks.new.is_empty() {
        return Ok(out);
    }
    let max = handoff::max_chain_depth(&polis.settings.merged);
    let chain = chain_of(root, parent_id, parent);
    let mut seen = BTreeSet::new();
    for s in &blocks.next {
        let id = source.follow_up_id(parent_id, s.n);
        // A parent whose id is near the file-name limit (a hand-written one, or deep in a
        // chain) leaves no room for the follow-up's name, nor for its reviews' names, which
        // every contract polisd opens must have: its author opens one by hand.
        if !layout::fits_review_file_name(&id) {
            out.skipped.push(NotDispatched {
                suggestion: s.clone(),
                why: format!(
                    "its follow-up's id `{}` would be too long for a file name; open the \
                     follow-up by hand with a shorter title",
                    crate::protocol::input::excerpt(&id, 40)
                ),
            });
            continue;
        }
        // An opened follow-up (found from an earlier pass, or new) is reported and its citizen
        // told the same way.
        let opened = |out: &mut Dispatch, existing: bool| {
            out.opened.push(OpenedHandoff {
                contract_id: id.clone(),
                citizen: s.citizen.clone(),
                step: chain.len() + 1,
                existing,
            });
            out.notices.push(Notification::handoff_opened(
                &s.citizen,
                &id,
                parent_id,
                author,
                source.doing(),
                chain.len() + 1,
                max,
            ));
        };
        if let Ok((folder, existing)) = lookup::find(root, &id) {
            seen.insert((s.citizen.clone(), s.reason.clone()));
            recover(writer, now, &mut out, folder, &existing, &id, s)?;
            opened(&mut out, true);
            continue;
        }
        if let Some(skip) = skip_reason(polis, &s.citizen) {
            out.skipped.push(NotDispatched {
                suggestion: s.clone(),
                why: skip.to_string(),
            });
            continue;
        }
        if let Err(d) = handoff::judge(&chain, s, max, &mut seen) {
            out.deferred.push(NotDispatched {
                suggestion: s.clone(),
                why: deferral_text(&d),
            });
            continue;
        }
        let follow = FollowUp {
            id: id.clone(),
            parent_id,
            parent_title: parent.title.as_deref().unwrap_or(parent_id),
            parent_tags: &parent.required_tags,
            stakes: parent.stakes.as_deref().unwrap_or("medium"),
            cost_ceiling: parent.cost_ceiling().unwrap_or("60min"),
            opened_at: opened_at(source, parent, now),
            chain: &chain,
            max,
            suggestion: s,
            suggested_by: author,
            source,
        };
        let bytes = handoff::render_follow_up(&follow)?;
        let new_rel = layout::contract_path(ContractFolder::Open, &id).expect("a slug");
        if writer.create_new(&new_rel, bytes.as_bytes())? {
            out.wrote = true;
            let title = handoff::follow_up_title(&s.reason, parent_id);
            let link = new_rel.trim_end_matches(".md");
            chronicle::append_daemon(writer, now, "opened contract", Some(link), &title)?;
        }
        opened(&mut out, false);
    }
    if !out.deferred.is_empty() {
        let opener = first_opener(root, parent)
            .filter(|o| polis.cards.contains_key(o))
            .or_else(|| Some(author.to_string()).filter(|a| polis.cards.contains_key(a)));
        if let Some(opener) = opener {
            let items: Vec<String> = out.deferred.iter().map(worded).collect();
            out.notices.push(Notification::handoff_deferred(
                &opener, parent_id, source, "deferred", &items,
            ));
        }
    }
    if !out.skipped.is_empty() && polis.cards.contains_key(author) {
        let items: Vec<String> = out.skipped.iter().map(worded).collect();
        out.notices.push(Notification::handoff_deferred(
            author, parent_id, source, "skipped", &items,
        ));
    }
    // A new citizen is the person's decision (orchestration seed: "confirm with the user
    // first"): it waits in the human queue (`operations::queue`), never in an agent's inbox.
    out.citizens_needed.extend(blocks.new.iter().cloned());
    // Every notice of a dispatch is caused by the parent's settlement (or the review): stamped
    // with the follow-up's `opened_at`, the same on every machine.
    let cause = crate::protocol::delivery::inbox::cause_stamp(&opened_at(source, parent, now));
    for n in &mut out.notices {
        n.at = n.at.take().or_else(|| cause.clone());
    }
    Ok(out)
}

/// What became, or would become, of one `Suggested next citizen` block (the dashboard's view
/// of a contract's handoffs; nothing is written).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case", tag = "outcome")]
pub enum BlockOutcome {
    /// Its follow-up `<parent>-next-<n>` is there, in `folder`.
    Dispatched { id: String, folder: String },
    /// The citizen cannot take work: the suggestion's author was told.
    Skipped { why: String },
    /// The chain rules refuse it: the chain's first opener was told (and, at the chain's
    /// maximum depth, the person: the human queue).
    Deferred { why: String, at_max_depth: bool },
    /// The contract has not settled: the block is dispatched (or not) when it does.
    Pending,
    /// Settled, the rules would accept it now, and no follow-up is there: polisd had not met
    /// the polis when it settled, or the citizen could not take work then.
    NotOpened,
}

/// One contract's handoffs as the folder shows them now: each next-citizen block of its
/// `## Settlement` with its outcome, judged by the same rules as [`dispatch_blocks`] in the
/// same order, and its new-citizen blocks. `folder_of` says where a contract id is.
pub fn explain(
    polis: &Polis,
    parent_id: &str,
    parent: &Contract,
    settled: bool,
    text: &str,
    folder_of: &dyn Fn(&str) -> Option<ContractFolder>,
) -> (Vec<(Suggestion, BlockOutcome)>, Vec<NewCitizen>) {
    let blocks = handoff::parse_blocks(handoff::settlement_section(text));
    let max = handoff::max_chain_depth(&polis.settings.merged);
    let chain = chain_of(&polis.root, parent_id, parent);
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for s in blocks.next {
        let id = format!("{parent_id}-next-{}", s.n);
        let outcome = if let Some(folder) = folder_of(&id) {
            seen.insert((s.citizen.clone(), s.reason.clone()));
            BlockOutcome::Dispatched {
                id,
                folder: folder.name().to_string(),
            }
        } else if !settled {
            BlockOutcome::Pending
        } else if let Some(skip) = skip_reason(polis, &s.citizen) {
            BlockOutcome::Skipped {
                why: skip.to_string(),
            }
        } else if let Err(d) = handoff::judge(&chain, &s, max, &mut seen) {
            BlockOutcome::Deferred {
                why: deferral_text(&d),
                at_max_depth: matches!(d, Deferral::TooDeep { .. }),
            }
        } else {
            BlockOutcome::NotOpened
        };
        out.push((s, outcome));
    }
    (out, blocks.new)
}

/// The `opened_at` of a follow-up: when its cause happened, not when this polisd dispatched
/// it: for a review's suggestion the review's own time (its file name), for a settlement's the
/// parent's `settled_at` (to the second). Two daemons on synced machines that both dispatch one
/// block then create byte-identical follow-up files (docs/sync.md). The wall clock only when
/// neither can be read.
fn opened_at(source: &handoff::Source, parent: &Contract, now: &PolisTime) -> String {
    if let handoff::Source::Review { stamp, .. } = source {
        if let Ok(t) = chrono::NaiveDateTime::parse_from_str(stamp, "%Y%m%d%H%M") {
            return t.format("%Y-%m-%d %H:%M:%S").to_string();
        }
    }
    match crate::protocol::amendments::amendment::read_when(&parent.settled_at, now) {
        Some(crate::protocol::amendments::amendment::When::Moment(t)) => {
            t.format("%Y-%m-%d %H:%M:%S").to_string()
        }
        Some(crate::protocol::amendments::amendment::When::Day(d)) => {
            format!("{} 00:00:00", d.format("%Y-%m-%d"))
        }
        None => now.second_stamp(),
    }
}

fn deferral_text(d: &Deferral) -> String {
    d.to_string()
}

/// A follow-up that exists already: its `opened contract` line is appended if a crash lost it
/// (only when it is still open; this reads the chronicle, a recovery path only).
fn recover(
    writer: &Writer,
    now: &PolisTime,
    out: &mut Dispatch,
    folder: ContractFolder,
    rel: &str,
    id: &str,
    s: &Suggestion,
) -> Result<(), OpError> {
    if folder != ContractFolder::Open {
        return Ok(());
    }
    let link = rel.trim_end_matches(".md");
    let Some((text, contract)) = read_record(writer.root(), rel)? else {
        return Ok(());
    };
    let ours = frontmatter::parse(&text)
        .ok()
        .and_then(|r| r.get("opened_by").as_str().map(str::to_string))
        .as_deref()
        == Some(layout::DAEMON_ID);
    if ours && !chronicle::has_line(writer.root(), "opened contract", link) {
        let title = contract
            .title
            .unwrap_or_else(|| handoff::follow_up_title(&s.reason, id));
        out.wrote |= chronicle::append_daemon(writer, now, "opened contract", Some(link), &title)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> PolisTime {
        PolisTime::at_stamp(Default::default(), "2026-03-05 17:42").unwrap()
    }

    #[test]
    fn a_follow_up_is_opened_at_its_cause_not_at_the_dispatch() {
        let parent = Contract::parse(
            "---\ncontract_id: p\nstatus: settled\nsettled_at: 2026-03-02 10:00:07\n---\n",
        )
        .unwrap();
        assert_eq!(
            opened_at(&Source::Settlement, &parent, &now()),
            "2026-03-02 10:00:07"
        );
        let (review, _) = Source::review("2026-03-03-0915-p.md").unwrap();
        assert_eq!(opened_at(&review, &parent, &now()), "2026-03-03 09:15:00");
        let open = Contract::parse("---\ncontract_id: p\nstatus: claimed\n---\n").unwrap();
        assert_eq!(
            opened_at(&Source::Settlement, &open, &now()),
            "2026-03-05 17:42:00"
        );
    }
}
