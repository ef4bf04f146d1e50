//! The notices the folder's state calls for (SPEC §9): routed, stale and high-stakes
//! contracts, proposed and decided amendments, filed lessons, changed cards.

use super::Engine;
use crate::fs::snapshot::Polis;
use crate::operations;
use crate::protocol::chronicle;
use crate::protocol::clock::PolisTime;
use crate::protocol::delivery::inbox::{self, Notification};
use crate::protocol::layout::{AmendmentFolder, ContractFolder};
use std::collections::BTreeSet;

impl Engine {
    /// Every notice the folder's current state calls for. Notices whose recipients depend on
    /// who is active are fixed when the fact is first seen (`state.known`). With
    /// `silence_settled` (a first meeting), the notices about settled files' findings are
    /// marked sent instead of returned.
    pub(super) fn derive(
        &mut self,
        polis: &Polis,
        now: &PolisTime,
        silence_settled: bool,
    ) -> Vec<Notification> {
        let mut out = Vec::new();
        let electorate = operations::Electorate::of(polis, now);
        let active = electorate.active(now);
        let voters = electorate.voters(now);
        let open: Vec<_> = polis
            .contracts
            .iter()
            .filter(|c| c.folder == ContractFolder::Open)
            .collect();
        let stale = operations::stale_claims(polis, now);
        // Each notice carries its cause's time (docs/sync.md, "inbox notices").
        let stamp = |v: &crate::yaml::Value| inbox::value_stamp(v, now.zone);
        let high: BTreeSet<&str> = open
            .iter()
            .filter(|c| c.contract.stakes.as_deref() == Some("high"))
            .filter(|c| {
                // Only where a review-needed notice is still to be sent: the chronicle is read
                // for its stamp, not on every pass.
                let id = c.file.stem.as_str();
                let unsent = |to: &str, why: &str| {
                    let nid = inbox::notification_id(inbox::Kind::ReviewNeeded, id, to, why);
                    !self
                        .state
                        .was_sent(inbox::Kind::ReviewNeeded.as_str(), &nid)
                };
                let k = &c.contract;
                match (&k.owner, &k.review.reviewer) {
                    (_, Some(r)) => unsent(r, &format!("reviewer:{r}")),
                    (Some(o), None) => unsent(o, "no-reviewer"),
                    (None, None) => false,
                }
            })
            .map(|c| c.file.stem.as_str())
            .collect();
        let review_lines = lines_about(polis, &high, &["claimed contract", "requested review"]);

        for c in &open {
            let k = &c.contract;
            let id = c.file.stem.as_str();
            let title = k.title.clone().unwrap_or_else(|| id.to_string());
            let deps = crate::protocol::contracts::dependency::depends_on(k);
            let handoff = !k.fields.get("parent_contract").is_null();
            if k.owner.is_none() && handoff {
                // A follow-up's citizen has its `handoff-opened` notice.
            } else if k.owner.is_none() && !deps.is_empty() {
                if let Some(r) = &k.routing.recommended_by_router {
                    // The settlement of its last dependency made it ready.
                    let ready = deps
                        .iter()
                        .filter_map(|d| {
                            let rel =
                                crate::protocol::layout::contract_path(ContractFolder::Settled, d)?;
                            self.ledger.get(&rel)?.instant
                        })
                        .max()
                        .map(inbox::time_stamp);
                    out.push(
                        Notification::contract_unblocked(r, id, &title, &deps)
                            .caused_at(ready.or_else(|| stamp(&k.opened_at))),
                    );
                }
            } else if k.owner.is_none() {
                if let Some(r) = &k.routing.recommended_by_router {
                    out.push(
                        Notification::contract_routed(
                            r,
                            id,
                            &title,
                            k.routing.recommendation_score.unwrap_or(0.0),
                            k.routing.exploration.unwrap_or(false),
                        )
                        .caused_at(stamp(&k.opened_at)),
                    );
                }
            }
            if k.stakes.as_deref() == Some("high") {
                // The claim (its chronicle line), and the request for the reviewer; else the
                // contract's opening.
                let line = |verb: &str| {
                    review_lines
                        .get(&(id.to_string(), verb.to_string()))
                        .map(|t| inbox::time_stamp(*t))
                };
                let claimed = line("claimed contract").or_else(|| stamp(&k.opened_at));
                if let Some(owner) = &k.owner {
                    if k.review.reviewer.is_none() {
                        out.push(
                            Notification::review_needed(owner, id, &title, None)
                                .caused_at(claimed.clone()),
                        );
                    }
                }
                if let Some(reviewer) = &k.review.reviewer {
                    out.push(
                        Notification::review_needed(reviewer, id, &title, Some(reviewer))
                            .caused_at(line("requested review").or(claimed)),
                    );
                }
            }
            if let (Some(owner), Some(last)) = (&k.owner, stale.get(id)) {
                out.push(Notification::contract_stale(owner, id, last));
            }
        }

        // Only an open contract with an owner can be in dispute; none, no chronicle scan.
        let claimed: BTreeSet<&str> = open
            .iter()
            .filter(|c| c.contract.owner.is_some())
            .map(|c| c.file.stem.as_str())
            .collect();
        if !claimed.is_empty() {
            out.extend(claim_conflict_notices(polis, &claimed, now));
        }

        for file in polis.amendments.iter() {
            let a = &file.amendment;
            let status = a.status.clone().unwrap_or_default();
            if file.folder == AmendmentFolder::Proposed && status == "proposed" {
                let key = format!("proposed/{}", a.id);
                if let std::collections::btree_map::Entry::Vacant(e) = self.state.known.entry(key) {
                    e.insert("1".into());
                    for r in active.iter().filter(|r| Some(*r) != a.proposed_by.as_ref()) {
                        out.push(
                            Notification::amendment_proposed(r, a).caused_at(stamp(&a.proposed_at)),
                        );
                    }
                }
            }
            let decided = matches!(status.as_str(), "ratified" | "rejected" | "expired");
            let key = format!("amendment/{}", a.id);
            if decided && self.state.known.get(&key) != Some(&status) {
                self.state.known.insert(key, status.clone());
                let outcome = decided_outcome(a, &status, &voters, &active);
                let decided_at = crate::protocol::amendments::amendment::decided_at(
                    &polis.recent_chronicle(),
                    a,
                    outcome.action,
                    now,
                )
                .map(inbox::time_stamp);
                let recipients = crate::protocol::amendments::amendment::outcome_recipients(
                    a,
                    status == "ratified",
                    &active,
                    polis.index_keeper.as_ref(),
                );
                for r in &recipients {
                    out.extend(
                        Notification::amendment_outcome(r, a, &outcome)
                            .map(|n| n.caused_at(decided_at.clone())),
                    );
                }
                if status == "ratified" {
                    let change = crate::protocol::frontmatter::parse(&file.text)
                        .ok()
                        .and_then(|r| {
                            crate::protocol::amendments::reflection::setting_change_of(&r.fields)
                        });
                    if let (Some(change), Some(keeper)) = (change, &polis.index_keeper) {
                        out.push(
                            Notification::setting_change(keeper, a, &change)
                                .caused_at(decided_at.clone()),
                        );
                    }
                }
            }
        }

        for lesson in &polis.lessons {
            let key = format!("lesson/{}", lesson.rel);
            if self.state.known.contains_key(&key) {
                continue;
            }
            self.state.known.insert(key, "1".into());
            let link = lesson.rel.trim_end_matches(".md");
            for c in &open {
                let Some(owner) = &c.contract.owner else {
                    continue;
                };
                if let Some(tag) = c
                    .contract
                    .required_tags
                    .iter()
                    .find(|t| lesson.lesson.capability_tags.contains(t))
                {
                    out.push(
                        Notification::lesson_filed(owner, link, tag, &c.file.stem)
                            .caused_at(stamp(&lesson.lesson.filed_at)),
                    );
                }
            }
        }

        // Each finding about a contract, amendment or lesson, once, to whoever wrote it.
        let registered = polis.registered();
        let in_transit = !silence_settled && !self.settling.is_quiet(std::time::Instant::now());
        for r in operations::records::record_findings(polis, now) {
            if in_transit && super::settling::may_resolve_by_arrival(r.finding.code) {
                // A peer's move may be half-way here (its edit before its rename): derived
                // again, and told if it still stands, once the polis has been quiet.
                tracing::debug!("{} (held for the settling window)", r.finding);
                self.settling.wake_when_quiet();
                continue;
            }
            let recipient = r
                .author
                .as_ref()
                .filter(|a| registered.contains(*a))
                .or(polis.index_keeper.as_ref());
            if let Some(recipient) = recipient {
                out.push(
                    Notification::record_finding(recipient, r.author.as_deref(), &r.finding)
                        .caused_at(r.at.clone()),
                );
            }
        }
        // A settled file is read once, by the daemon (not by `record_findings`): its findings
        // go to whoever settled it, else its opener, else the index keeper; the dashboard's
        // human queue lists them whoever is told.
        let gone = |id: &str| polis.departed.as_ref().is_some_and(|d| d.contains(id));
        // Made in slot order, queued in path order (as the files are listed): only those not
        // yet sent are sorted.
        let mut unsent: Vec<(&str, Notification)> = Vec::new();
        for slot in self.settled_findings.slots() {
            let Some(rel) = self.ledger.path_at(slot) else {
                continue;
            };
            let authors = self.settled_findings.authors(slot);
            let author = authors
                .into_iter()
                .flatten()
                .find(|a| registered.contains(*a) && !gone(a));
            let named = authors.into_iter().flatten().next();
            let Some(recipient) = author.or(polis.index_keeper.as_deref()) else {
                continue;
            };
            for f in self.settled_findings.get(slot, rel).unwrap_or_default() {
                if f.code == crate::protocol::finding::Code::QualityDefaulted {
                    continue; // told in a `quality-defaulted` notice of its own
                }
                // One at a time, never gathered: an old polis may have a finding in each of a
                // million settled files. Silenced as made, or skipped when already sent (as
                // `enqueue` would skip it).
                let n = Notification::record_finding(recipient, author.or(named), &f);
                let id = n.id();
                if silence_settled {
                    self.state.mark_sent(n.kind.as_str(), &id);
                } else if !self.state.was_sent(n.kind.as_str(), &id) {
                    unsent.push((rel, n));
                }
            }
        }
        unsent.sort_by(|a, b| a.0.cmp(b.0));
        out.extend(unsent.into_iter().map(|(_, n)| n));
        out.extend(self.reservation_notices(polis, now));
        if in_transit {
            // As for a contract naming a citizen: the card an entry names may be on its way.
            self.settling.wake_when_quiet();
        } else {
            out.extend(self.reservation_finding_notices(polis, now));
        }

        for card in polis.cards.values() {
            let v = card.card.verify();
            if v.state == crate::protocol::citizens::card::VerifyState::Mismatch {
                let actual = v.computed.clone().unwrap_or_default();
                // The card's own `last_card_update` (else `registered`): the change is in the
                // card's bytes, and this is the time they hold.
                let at = stamp(card.card.raw.get("last_card_update"))
                    .or_else(|| stamp(card.card.raw.get("registered")));
                out.push(
                    Notification::card_changed(&card.id, &card.id, &actual).caused_at(at.clone()),
                );
                if let Some(keeper) = &polis.index_keeper {
                    if keeper != &card.id {
                        out.push(
                            Notification::card_changed(keeper, &card.id, &actual)
                                .caused_at(at.clone()),
                        );
                    }
                }
            }
        }
        out
    }
}

/// The outcome behind a decided amendment, for the notice's wording.
pub(super) fn decided_outcome(
    a: &crate::protocol::amendments::amendment::Amendment,
    status: &str,
    voters: &BTreeSet<String>,
    active: &BTreeSet<String>,
) -> crate::protocol::amendments::amendment::Outcome {
    let votes = crate::protocol::amendments::amendment::counted_votes(a, voters);
    let agrees = votes.count(crate::protocol::amendments::amendment::Vote::Agree);
    let quorum = crate::protocol::amendments::amendment::quorum(&a.quorum_required, active.len());
    let (action, detail) = match status {
        "ratified" => (
            crate::protocol::amendments::amendment::Action::Ratified,
            format!("{agrees} citizens agreed (quorum {quorum})"),
        ),
        "rejected" => (
            crate::protocol::amendments::amendment::Action::Rejected,
            format!("it can no longer reach its quorum of {quorum} ({agrees} agreed)"),
        ),
        _ => (
            crate::protocol::amendments::amendment::Action::Expired,
            format!("its deadline passed with {agrees} of {quorum} agreeing votes"),
        ),
    };
    crate::protocol::amendments::amendment::Outcome {
        action,
        agrees,
        quorum,
        detail,
        votes,
    }
}

/// `claim-conflict` notices for the open, claimed contracts: to the first claimer
/// and to each later one, for later claims inside the activity window (older ones are
/// `check`'s to report, so a long-lived polis does not flood inboxes).
pub(super) fn claim_conflict_notices(
    polis: &Polis,
    claimed: &BTreeSet<&str>,
    now: &PolisTime,
) -> Vec<Notification> {
    let registered = |id: &str| polis.cards.contains_key(id);
    let mut texts = polis.recent_chronicle();
    texts.reverse(); // oldest first
    let mut out = Vec::new();
    for c in crate::protocol::chronicle::claims::conflicts(&texts, &registered) {
        if !claimed.contains(c.contract_id.as_str()) {
            continue;
        }
        for (loser, at) in &c.losers {
            if now.now - *at > chrono::Duration::days(chronicle::ACTIVITY_WINDOW_DAYS) {
                continue;
            }
            let stamp = at.format(chronicle::STAMP_FORMAT).to_string();
            for recipient in [c.winner.as_str(), loser.as_str()] {
                out.push(Notification::claim_conflict(
                    recipient,
                    &c.contract_id,
                    &c.winner,
                    loser,
                    &stamp,
                ));
            }
        }
    }
    out
}

/// The newest line of each of `verbs` linking each of `ids` (a contract), over the texts the
/// activity window reads: `(id, verb) -> stamp`. Nothing is scanned when `ids` is empty.
fn lines_about(
    polis: &Polis,
    ids: &BTreeSet<&str>,
    verbs: &[&str],
) -> std::collections::HashMap<(String, String), chrono::NaiveDateTime> {
    let mut out = std::collections::HashMap::new();
    if ids.is_empty() {
        return out;
    }
    for text in polis.recent_chronicle() {
        for line in chronicle::scan(text).lines {
            let Ok(e) = chronicle::parse_entry(&line.text) else {
                continue;
            };
            if !verbs.contains(&e.verb) {
                continue;
            }
            let Some(target) = e.link.and_then(chronicle::link_target) else {
                continue;
            };
            let Some(id) = target.rsplit('/').next().filter(|id| ids.contains(id)) else {
                continue;
            };
            let slot = out
                .entry((id.to_string(), e.verb.to_string()))
                .or_insert(e.stamp);
            *slot = (*slot).max(e.stamp);
        }
    }
    out
}
