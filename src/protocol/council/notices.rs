//! The notices a council's state calls for: prompts to the seats and the chair, retries,
//! the owner's word of a duo and of the outcome. Pure over `council.md`'s state: each notice's
//! id is stable (contract, recipient, round), so deriving them again on every pass sends each
//! once. Must not read files or the clock.

use super::packet;
use super::state::{self, Council, Phase};
use crate::protocol::delivery::inbox::Notification;

/// The notices a council's state calls for now (stable ids: each is sent once).
/// Each is stamped with the council's own record of the step (`council.md`, synced): the
/// round's `opened_at`, `verdict_asked_at`, `finished_at`; else its `started_at`.
pub fn notices_for(council: &Council, title: &str) -> Vec<Notification> {
    let at = match council.phase {
        Phase::Rounds => council.open().map(|r| r.opened_at.clone()),
        Phase::Verdict => council.verdict_asked_at.clone(),
        Phase::Done | Phase::Fallback => council.finished_at.clone(),
    }
    .or_else(|| Some(council.started_at.clone()));
    let mut out: Vec<Notification> = notices_unstamped(council, title)
        .into_iter()
        .map(|n| n.caused_at(at.clone()))
        .collect();
    let cid = &council.contract;
    if let Some(round) = council.open().filter(|_| council.simulated.is_none()) {
        for (k, retry) in round.retries.iter().enumerate() {
            for id in &retry.seats {
                out.push(
                    Notification::council_prompt(
                        id,
                        cid,
                        &format!("round-{}-retry-{}", round.n, k + 1),
                        state::seat_path(cid, round.n, id).trim_end_matches(".md"),
                        packet::retry_prompt(council, round.n, id, k + 1),
                    )
                    .caused_at(Some(retry.at.clone())),
                );
            }
        }
    }
    // The requester is told when the council is not the one asked for (a duo instead, the
    // owner in the chair).
    if let (Some(owner), Some(asked)) = (&council.owner, council.requested_mode) {
        out.push(
            Notification::council_verdict(
                owner,
                cid,
                "started",
                state::state_path(cid).trim_end_matches(".md"),
                format!(
                    "The council on `{cid}` ({title}) runs as a {} although a {} council was asked for: {}. The chair: {}.",
                    council.mode.as_str(),
                    asked.as_str(),
                    council.notes.join("; "),
                    if council.chairman_is_owner {
                        format!("you, {owner}, since nobody is left off the panel")
                    } else {
                        format!("{}, off the panel", council.chairman)
                    }
                ),
            )
            .caused_at(Some(council.started_at.clone())),
        );
    }
    out
}

fn notices_unstamped(council: &Council, title: &str) -> Vec<Notification> {
    let cid = &council.contract;
    let mut out = Vec::new();
    match council.phase {
        Phase::Rounds => {
            if let Some(round) = council.open().filter(|_| council.simulated.is_none()) {
                let link = if round.n <= 1 {
                    format!("contracts/open/{cid}")
                } else {
                    state::packet_path(cid, round.n - 1)
                        .trim_end_matches(".md")
                        .to_string()
                };
                for seat in &council.seats {
                    out.push(Notification::council_prompt(
                        &seat.id,
                        cid,
                        &format!("round-{}", round.n),
                        &link,
                        packet::round_prompt(council, round.n, &seat.id, title),
                    ));
                }
            }
        }
        Phase::Verdict => {
            let last = council.rounds.last().map_or(1, |r| r.n);
            out.push(Notification::council_prompt(
                &council.chairman,
                cid,
                "verdict",
                state::packet_path(cid, last).trim_end_matches(".md"),
                packet::verdict_prompt(council),
            ));
        }
        Phase::Done => {
            if let (Some(owner), Some(o)) = (&council.owner, &council.outcome) {
                let (path, how) = if council.chairman_failed {
                    (
                        state::fallback_verdict_path(cid),
                        format!(
                            "The chairman, {}, wrote no valid verdict in time (FAILED — synthesized by coordinator fallback): polisd wrote one from the packets, taking no side, with every final position verbatim. ",
                            council.chairman
                        ),
                    )
                } else {
                    (state::verdict_path(cid), String::new())
                };
                out.push(Notification::council_verdict(
                    owner,
                    cid,
                    "done",
                    path.trim_end_matches(".md"),
                    format!(
                        "{how}The council on `{cid}` ({title}) reached its verdict: {}. polisd set the contract's `review.status` to it. {} council, {} seats ({} degraded, {} offline), {} rounds, {} minutes. Read the verdict for its kill criteria and its one concrete next step.",
                        o.decision,
                        o.mode.as_str(),
                        o.panel_size,
                        o.degraded.len(),
                        o.offline.len(),
                        o.rounds_run,
                        o.duration_minutes
                    ),
                ));
            }
        }
        Phase::Fallback => {
            let why = council
                .fallback
                .as_ref()
                .map_or(String::new(), |f| f.why.clone());
            if let Some(reviewer) = council
                .fallback
                .as_ref()
                .and_then(|f| f.reviewer.as_deref())
            {
                out.push(Notification::council_prompt(
                    reviewer,
                    cid,
                    "fallback",
                    &format!("contracts/open/{cid}"),
                    format!(
                        "The council on `{cid}` ({title}) stopped: {why}. You are now its reviewer (`review.reviewer`). Review it alone and record your decision with `polisd review {cid} --as {reviewer} --decision signed_off|requested_changes|rejected --body FILE`."
                    ),
                ));
            }
            if let Some(owner) = &council.owner {
                out.push(Notification::council_verdict(
                    owner,
                    cid,
                    "fallback",
                    state::state_path(cid).trim_end_matches(".md"),
                    format!(
                        "The council on `{cid}` ({title}) stopped without a verdict: {why}. {}",
                        if council.fallback.as_ref().is_some_and(|f| f.reviewer.is_some()) {
                            "A chavruta review replaces it; wait for that review."
                        } else {
                            "Ask for a review by hand (set `review.reviewer`), or start a new council later."
                        }
                    ),
                ));
            }
        }
    }
    out
}
