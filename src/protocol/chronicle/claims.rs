//! Claim conflicts: two citizens claiming one contract in the chronicle with no
//! release between. Agents that claim by editing the file can still race; this is how the
//! daemon and `check` see it.
//!
//! Pure: chronicle texts in, conflicts out. The rule:
//! - a claim is a valid `claimed contract` line (its author registered) linking
//!   `contracts/…/<id>`; a `settled contract`, `abandoned contract`, `released contract` or
//!   `unclaimed contract` line about the contract ends the round of claims;
//! - in a round, the first claim wins. "First" is the order of (stamp, author id): for a
//!   chronicle in time order that is chronicle order, and two claims stamped in the same minute
//!   (which two synced machines may hold in either order) go to the smaller author id, so both
//!   machines name the same winner;
//! - a claim whose note says `took over from …` (`contract claim --force`) starts a new round.

use crate::protocol::chronicle;
use crate::protocol::finding::{quoted, Code, Finding};
use chrono::NaiveDateTime;
use std::collections::{BTreeMap, BTreeSet};

/// One contract claimed by more than one citizen in a round.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimConflict {
    pub contract_id: String,
    pub winner: String,
    pub won_at: NaiveDateTime,
    /// The later claimers and their stamps, in claim order.
    pub losers: Vec<(String, NaiveDateTime)>,
}

const RELEASES: [&str; 4] = [
    "settled contract",
    "abandoned contract",
    "released contract",
    "unclaimed contract",
];

/// The conflicts in the rounds still open at the end of `texts` (oldest text first).
pub fn conflicts(texts: &[&str], is_registered: &dyn Fn(&str) -> bool) -> Vec<ClaimConflict> {
    let mut rounds = Rounds::default();
    for text in texts {
        for (_, line) in chronicle::lines(text) {
            rounds.line(line, is_registered);
        }
    }
    rounds.conflicts()
}

/// The rounds of claims, fed the lines one at a time in the order they were written.
#[derive(Debug, Default)]
pub struct Rounds {
    /// Per contract, the claims of the current round: (stamp, author).
    rounds: BTreeMap<String, Vec<(NaiveDateTime, String)>>,
}

/// The contract a line's link names (`[[contracts/<folder>/<id>]]`, however the link is
/// written), if it names one.
pub fn contract_of_link(inner: &str) -> Option<String> {
    let target = chronicle::link_target(inner)?;
    target
        .strip_prefix("contracts/")
        .and_then(|rest| rest.rsplit('/').next())
        .filter(|id| crate::protocol::layout::is_slug(id))
        .map(str::to_string)
}

impl Rounds {
    /// Takes in the next line.
    pub fn line(&mut self, line: &str, is_registered: &dyn Fn(&str) -> bool) {
        let Ok(e) = chronicle::parse_entry(line) else {
            return;
        };
        let Some(id) = e.link.and_then(contract_of_link) else {
            return;
        };
        let id = id.as_str();
        if RELEASES.contains(&e.verb) {
            self.rounds.remove(id);
        } else if e.verb == "claimed contract" && is_registered(e.author) {
            let round = self.rounds.entry(id.to_string()).or_default();
            if e.note.starts_with("took over from") {
                round.clear();
            }
            round.push((e.stamp, e.author.to_string()));
        }
    }

    /// The conflicts in the rounds still open after the lines fed.
    pub fn conflicts(self) -> Vec<ClaimConflict> {
        let mut out = Vec::new();
        for (id, mut claims) in self.rounds {
            claims.sort();
            let (won_at, winner) = claims[0].clone();
            let mut seen = BTreeSet::from([winner.clone()]);
            let losers: Vec<_> = claims
                .into_iter()
                .filter(|(_, who)| seen.insert(who.clone()))
                .map(|(at, who)| (who, at))
                .collect();
            if !losers.is_empty() {
                out.push(ClaimConflict {
                    contract_id: id,
                    winner,
                    won_at,
                    losers,
                });
            }
        }
        out
    }
}

/// What `check` says about an unresolved conflict (the contract is still open and its file does
/// not name the winner as owner).
pub fn finding(c: &ClaimConflict, path: &str, owner: Option<&str>) -> Finding {
    let losers: Vec<String> = c
        .losers
        .iter()
        .map(|(who, at)| format!("{} ({})", quoted(who), at.format(chronicle::STAMP_FORMAT)))
        .collect();
    let winner = quoted(&c.winner);
    Finding::warning(
        Code::ClaimConflict,
        path,
        None,
        format!(
            "contract `{}` was claimed by {} ({}) and then by {} with no release between; the first claim wins, so {} owns it, but the file says `owner: {}`. The later claimers should stop and set `owner: {}` back (or {} releases it with a `released contract` line)",
            quoted(&c.contract_id),
            winner,
            c.won_at.format(chronicle::STAMP_FORMAT),
            losers.join(", "),
            winner,
            quoted(owner.unwrap_or("null")),
            winner,
            winner,
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(stamp: &str, who: &str, verb: &str, id: &str, note: &str) -> String {
        format!("- 2026-03-02 {stamp} | {who} | {verb} | [[contracts/open/{id}]] | {note}\n")
    }

    #[test]
    fn first_claim_in_time_wins_and_same_minute_goes_to_the_smaller_id() {
        let text = [
            line("10:00", "zeta-agent-one", "claimed contract", "x", "-"),
            line("10:00", "alpha-agent-one", "claimed contract", "x", "-"),
            line("10:05", "beta-agent-one", "claimed contract", "x", "-"),
        ]
        .concat();
        let all = |_: &str| true;
        let c = conflicts(&[&text], &all);
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].winner, "alpha-agent-one");
        let losers: Vec<_> = c[0].losers.iter().map(|(w, _)| w.as_str()).collect();
        assert_eq!(losers, ["zeta-agent-one", "beta-agent-one"]);
    }

    #[test]
    fn a_release_or_a_forced_takeover_ends_the_round() {
        let all = |_: &str| true;
        let released = [
            line("10:00", "alpha-agent-one", "claimed contract", "x", "-"),
            line("10:01", "alpha-agent-one", "released contract", "x", "-"),
            line("10:02", "beta-agent-one", "claimed contract", "x", "-"),
        ]
        .concat();
        assert!(conflicts(&[&released], &all).is_empty());
        let forced = [
            line("10:00", "alpha-agent-one", "claimed contract", "x", "-"),
            line(
                "10:02",
                "beta-agent-one",
                "claimed contract",
                "x",
                "took over from alpha-agent-one (--force)",
            ),
        ]
        .concat();
        assert!(conflicts(&[&forced], &all).is_empty());
    }

    #[test]
    fn unregistered_claimers_and_repeat_claims_do_not_conflict() {
        let text = [
            line("10:00", "alpha-agent-one", "claimed contract", "x", "-"),
            line("10:01", "alpha-agent-one", "claimed contract", "x", "-"),
            line("10:02", "ghost-agent-one", "claimed contract", "x", "-"),
        ]
        .concat();
        let registered = |id: &str| id != "ghost-agent-one";
        assert!(conflicts(&[&text], &registered).is_empty());
    }
}
