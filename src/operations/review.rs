//! Writing a review (`reviews/<YYYY-MM-DD-HHMM>-<cid>.md`) and announcing its decision.

use crate::fs::writer::Writer;
use crate::operations::chronicle::{self, Appended};
use crate::operations::error::OpError;
use crate::operations::gate::Gate;
use crate::protocol::clock::PolisTime;
use crate::protocol::contracts::review::{self as rules, Decision};
use crate::protocol::delivery::inbox::Notification;
use crate::protocol::layout;

#[derive(Debug, Clone, serde::Serialize)]
pub struct Reviewed {
    pub contract_id: String,
    pub decision: String,
    pub path: String,
    /// 1 for the first review by a citizen other than the owner, 2 for the round after it…
    pub round: usize,
    pub chronicle: Appended,
    /// The owner, when told of `requested_changes` or `rejected` (a `review-decided` notice).
    pub owner_notified: Option<String>,
}

/// Writes `reviewer`'s review of contract `cid` (in any folder) and appends `signed off`,
/// `rejected review` or `requested changes`, linking the review.
pub fn review(
    writer: &Writer,
    now: &PolisTime,
    cid: &str,
    reviewer: &str,
    decision: &Decision,
    body: &str,
) -> Result<Reviewed, OpError> {
    let root = writer.root();
    chronicle::require_citizen(root, reviewer)?;
    chronicle::check_appendable(writer)?;
    // The owner is read under the lock, so a claim racing this review is seen whole.
    let _transition = writer.transition_lock()?;
    let (_, contract_rel) = crate::operations::lookup::find(root, cid)?;
    let contract_text = crate::fs::snapshot::read_text(
        root,
        &contract_rel,
        Some(crate::fs::snapshot::MAX_RECORD_BYTES),
    )?;
    let owner = contract_text
        .as_deref()
        .and_then(|t| crate::protocol::contracts::contract::Contract::parse(t).ok())
        .and_then(|c| c.owner);
    // The contract's `review` block follows the decision, so the owner and the primer see it.
    let set_block = |text: &str| {
        let t =
            crate::protocol::council::verdict::set_review_field(text, "status", decision.as_str())?;
        crate::protocol::council::verdict::set_review_field(&t, "reviewer", reviewer)
    };
    let edits_block = !matches!(decision, Decision::Other(_));
    if edits_block
        && contract_text
            .as_deref()
            .is_some_and(|t| set_block(t).is_none())
    {
        return Err(OpError::Review(format!(
            "{contract_rel}'s `review:` line is not a mapping polisd can set `status` and `reviewer` in; make it `review: {{}}` (or a block of `key: value` lines), then review again; nothing was written"
        )));
    }
    if owner.as_deref() == Some(reviewer) {
        return Err(OpError::Gate(Gate::OwnWork {
            reviewer: reviewer.to_string(),
            cid: cid.to_string(),
            link: contract_rel.trim_end_matches(".md").to_string(),
        }));
    }
    // A review after earlier ones is their next round: each one by someone other than the
    // owner counts, so a second round after `requested_changes` is on record.
    // The block is edited first, waiting out an agent still writing the contract: if that
    // cannot be done, the review is refused with nothing written, never left half-recorded.
    let edit_block = || -> Result<(), OpError> {
        if edits_block {
            super::edit::edit_agent_file_within(
                writer,
                root,
                &contract_rel,
                set_block,
                super::edit::LOCKED_WAIT,
            )?;
        }
        Ok(())
    };
    let earlier = reviews_with_minutes(root, cid, owner.as_deref().unwrap_or(""));
    if let Some((rel, round)) =
        unrecorded_review(root, cid, &earlier, owner.as_deref(), reviewer, decision)
    {
        edit_block()?;
        return record(writer, now, cid, reviewer, decision, owner, rel, round);
    }
    let round = earlier.len() + 1;
    if !layout::fits_review_file_name(cid) {
        return Err(OpError::Review(format!(
            "contract `{}`'s review file `reviews/<YYYY-MM-DD-HHMM>-<id>.md` would be too long for a file name ({} bytes, at most {}); rename the contract to a shorter id (its file and `contract_id`), then review again; nothing was written",
            crate::protocol::input::excerpt(cid, 40),
            rules::file_name(&now.now, cid).len(),
            layout::MAX_FILE_NAME
        )));
    }
    let name = rules::file_name(&now.now, cid);
    let rel = format!("{}/{name}", layout::REVIEWS_DIR);
    let text = rules::render_new(
        reviewer,
        contract_rel.trim_end_matches(".md"),
        cid,
        decision,
        &now.second_stamp(),
        round,
        body,
    )?;
    crate::operations::error::check_record_size("the review", &text)?;
    let taken = |rel: &str| {
        let winner =
            crate::fs::snapshot::read_text(root, rel, Some(crate::fs::snapshot::MAX_RECORD_BYTES))
                .ok()
                .flatten()
                .and_then(|t| crate::protocol::frontmatter::parse(&t).ok())
                .and_then(|r| r.get("reviewer").as_str().map(str::to_string))
                .unwrap_or_else(|| "another reviewer".to_string());
        OpError::Reviewed {
            id: cid.to_string(),
            by: winner,
            path: rel.to_string(),
        }
    };
    if std::fs::symlink_metadata(root.join(&rel)).is_ok() {
        return Err(taken(&rel));
    }
    edit_block()?;
    if !writer.create_new(&rel, text.as_bytes())? {
        // Only a review written by hand this very minute gets here (polisd's own reviewers
        // wait on the transition lock).
        return Err(taken(&rel));
    }
    record(writer, now, cid, reviewer, decision, owner, rel, round)
}

/// The newest review of the contract, as (file, round), when it is the reviewer's, with the
/// decision asked for, written since the owner's claim, and without a chronicle line of its
/// own: a process killed between the file and its line. The rerun records that review rather
/// than refuse it as taken (in the same minute) or open a second round (later). A review
/// written by hand without its line is recorded the same way when its reviewer runs the
/// command; one older than the claim, or followed by another, is not the review asked for.
fn unrecorded_review(
    root: &std::path::Path,
    cid: &str,
    earlier: &[(chrono::NaiveDateTime, String, rules::Review)],
    owner: Option<&str>,
    reviewer: &str,
    decision: &Decision,
) -> Option<(String, usize)> {
    let (at, rel, review) = earlier.last()?;
    let since_claim = owner
        .and_then(|o| claimed_at(root, cid, o))
        .is_none_or(|claimed| *at >= claimed);
    let link = rel.trim_end_matches(".md");
    (review.reviewer.as_deref() == Some(reviewer)
        && review.decision.as_ref() == Some(decision)
        && since_claim
        && !chronicle::has_line_of(root, Some(reviewer), rules::chronicle_verb(decision), link))
    .then(|| (rel.clone(), earlier.len()))
}

/// Appends the review's chronicle line and tells the owner of changes asked for or a
/// rejection: the review's file at `rel` is written.
#[allow(clippy::too_many_arguments)]
fn record(
    writer: &Writer,
    now: &PolisTime,
    cid: &str,
    reviewer: &str,
    decision: &Decision,
    owner: Option<String>,
    rel: String,
    round: usize,
) -> Result<Reviewed, OpError> {
    let root = writer.root();
    let link = rel.trim_end_matches(".md").to_string();
    let line = chronicle::append(
        writer,
        now,
        reviewer,
        rules::chronicle_verb(decision),
        Some(&link),
        &format!("{} (round {round})", decision.as_str()),
    )?;
    // Changes asked for and a rejection are the owner's to act on: told at once, whoever runs
    // the command (CLI, MCP), with or without a daemon.
    let mut owner_notified = None;
    if let (Some(owner), Decision::RequestedChanges | Decision::Rejected) = (&owner, decision) {
        let notice =
            Notification::review_decided(owner, cid, reviewer, decision.as_str(), round, &link);
        let polis = crate::fs::snapshot::Polis::read_with(root, false);
        if crate::operations::deliver_now(&polis, writer, &[notice], now)
            .map_err(|e| {
                OpError::Review(format!(
                    "the review is written, but the owner's notice is not: {e}"
                ))
            })?
            .is_empty()
        {
            owner_notified = Some(owner.clone());
        }
    }
    Ok(Reviewed {
        contract_id: cid.to_string(),
        decision: decision.as_str().to_string(),
        path: rel,
        round,
        chronicle: line,
        owner_notified,
    })
}

/// Why a contract may not settle yet, as the skill seed's chavruta review and the council
/// require: a `stakes: high` contract needs a sign-off by a citizen other than its owner (the
/// newest review by someone else decides), and a contract under a council waits for the
/// verdict. `review_override` is a person's decision to settle anyway (recorded by the
/// caller). `Ok(())` when nothing holds it back.
pub fn settle_gate(
    root: &std::path::Path,
    cid: &str,
    owner: &str,
    stakes: Option<&str>,
    review_override: bool,
) -> Result<(), OpError> {
    if let Some(council) = crate::operations::council::read(root, cid)? {
        if council.finished_at.is_none() && council.outcome.is_none() {
            return Err(OpError::Gate(Gate::UnderCouncil(cid.to_string())));
        }
    }
    if stakes.map(str::trim) != Some("high") || review_override {
        return Ok(());
    }
    match latest_review_by_other(root, cid, owner) {
        Some(Decision::SignedOff) => Ok(()),
        Some(Decision::RequestedChanges) => Err(OpError::Gate(Gate::ChangesRequested(cid.into()))),
        Some(Decision::Rejected) => Err(OpError::Gate(Gate::Rejected(cid.into()))),
        _ => Err(OpError::Gate(Gate::NoSignOff(cid.into()))),
    }
}

/// The decision of the newest review of `cid` written by someone other than `owner` since
/// `owner` claimed it (files `reviews/<YYYY-MM-DD-HHMM>-<cid>.md`, newest by name; the owner's
/// own reviews never count). A sign-off given before the claim reviewed no work of this owner:
/// the contract unclaimed, or another citizen's before a takeover.
fn latest_review_by_other(root: &std::path::Path, cid: &str, owner: &str) -> Option<Decision> {
    let since = claimed_at(root, cid, owner);
    reviews_with_minutes(root, cid, owner)
        .into_iter()
        .rfind(|(at, _, _)| since.is_none_or(|claimed| *at >= claimed))
        .and_then(|(_, _, r)| r.decision)
}

/// The minute of `owner`'s newest `claimed contract` line about `cid` in the chronicle; `None`
/// when there is none (a claim made by hand, or one rolled into an archive): every review
/// counts then, as before a claim was looked for.
fn claimed_at(root: &std::path::Path, cid: &str, owner: &str) -> Option<chrono::NaiveDateTime> {
    let text = crate::fs::snapshot::read_text(root, layout::CHRONICLE, None)
        .ok()
        .flatten()?;
    text.lines().rev().find_map(|line| {
        let e = crate::protocol::chronicle::parse_entry(line).ok()?;
        let about = e
            .link
            .and_then(crate::protocol::chronicle::claims::contract_of_link)
            .is_some_and(|id| id == cid);
        (about && e.author == owner && e.verb.eq_ignore_ascii_case("claimed contract"))
            .then_some(e.stamp)
    })
}

/// The reviews of `cid` by registered citizens other than `owner`, oldest first (by file
/// name, which holds the minute they were written).
pub fn reviews_by_others(root: &std::path::Path, cid: &str, owner: &str) -> Vec<rules::Review> {
    reviews_with_minutes(root, cid, owner)
        .into_iter()
        .map(|(_, _, r)| r)
        .collect()
}

/// [`reviews_by_others`], each with the minute its file name holds and its file.
fn reviews_with_minutes(
    root: &std::path::Path,
    cid: &str,
    owner: &str,
) -> Vec<(chrono::NaiveDateTime, String, rules::Review)> {
    use crate::fs::snapshot;
    let mut findings = Vec::new();
    let mut files: Vec<(chrono::NaiveDateTime, String)> =
        snapshot::list(root, layout::REVIEWS_DIR, ".md", &mut findings)
            .into_iter()
            .filter_map(|e| {
                let name = e.rel.rsplit('/').next()?.to_string();
                let (at, id) = rules::parse_file_name(&name)?;
                (id == cid).then_some((at, e.rel))
            })
            .collect();
    files.sort();
    files
        .into_iter()
        .filter_map(|(at, rel)| {
            let text = snapshot::read_text(root, &rel, Some(snapshot::MAX_RECORD_BYTES))
                .ok()
                .flatten()?;
            let review = rules::parse(&text).ok()?;
            // Another citizen's: a review naming an id with no card is nobody's sign-off.
            let by_other = review
                .reviewer
                .as_deref()
                .is_some_and(|r| r != owner && chronicle::is_registered(root, r));
            (by_other && review.contract.as_deref().is_none_or(|c| c == cid))
                .then_some((at, rel, review))
        })
        .collect()
}
