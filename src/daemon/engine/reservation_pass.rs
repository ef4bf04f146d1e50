//! Keeping `reservations.yml` honest: dropping expired entries, releasing what a citizen held
//! for work that has ended (its contract settled or was abandoned) or held when it left the
//! polis, and telling citizens when
//! their reserved paths overlap another citizen's entry (one written without polisd's check:
//! by hand, by the reference's `polis reserve`, or by a sync of two machines).
//!
//! The clean-up is the same locked read-modify-write the commands use
//! (`operations::reservation::prune`), so it cannot undo a `polisd reserve` running at the same
//! moment. Nothing is read when the polis has no `reservations.yml`.

use super::{Engine, Pass};
use crate::fs::snapshot::Polis;
use crate::operations::reservation as op;
use crate::protocol::amendments::amendment::{read_when, When};
use crate::protocol::clock::PolisTime;
use crate::protocol::contracts::reservation::{self as rules, ContractFacts, Dropped};
use crate::protocol::delivery::inbox::Notification;
use crate::protocol::layout::{self, ContractFolder};
use std::collections::BTreeSet;

impl Engine {
    pub(super) fn reservation_step(&mut self, pass: &mut Pass) {
        self.next_expiry = None;
        if !self.root.join(rules::FILE).is_file() {
            return;
        }
        let entries = match op::entries(&self.root, &pass.now) {
            Ok(entries) => {
                self.reservations_problem = None;
                entries
            }
            Err(e) => {
                // A bad file is the agents' to fix: logged once, not retried as a failure
                // (`polisd check` reports it too). The file is left as it is.
                let text = e.to_string();
                if self.reservations_problem.as_deref() != Some(text.as_str()) {
                    tracing::warn!("reservations: {text}");
                    self.reservations_problem = Some(text);
                }
                return;
            }
        };
        if entries.is_empty() {
            return;
        }
        let citizens: BTreeSet<String> = entries.iter().filter_map(|e| e.citizen.clone()).collect();
        let contracts: BTreeSet<String> =
            entries.iter().filter_map(|e| e.contract.clone()).collect();
        let facts = self.contract_facts(&pass.polis, &pass.now, &citizens, &contracts);
        match op::prune(&self.writer, &pass.now, &facts) {
            Ok(pruned) => {
                self.next_expiry = pruned.next_expiry.map(|t| t.with_timezone(&chrono::Utc));
                for (view, why) in &pruned.dropped {
                    let who = view.citizen.as_deref().unwrap_or("(no citizen)");
                    let paths = view.paths.join(", ");
                    let cause = match why {
                        Dropped::Expired => format!("dropped {who}'s {paths}: the lease ran out"),
                        Dropped::ContractFinished(c) | Dropped::WorkFinished(c) => {
                            format!("released {who}'s {paths}: contract {c} ended")
                        }
                        Dropped::CitizenLeft => {
                            format!("released {who}'s {paths}: it left the polis")
                        }
                    };
                    tracing::info!("reservations: {cause}");
                    // Only what this process wrote: a second machine that finds the entry
                    // gone has nothing to say.
                    if pruned.outcome == crate::fs::writer::WriteOutcome::Written {
                        self.log_activity("wrote", Some(rules::FILE), cause);
                    }
                }
                if pruned.outcome == crate::fs::writer::WriteOutcome::Written {
                    pass.wrote = true;
                }
            }
            Err(e) if e.is_refusal() => tracing::warn!("reservations: {e}"),
            Err(e) => pass.errors.push(format!("reservations: {e}")),
        }
    }

    /// When the earliest reservation the file holds expires, or the earliest open council
    /// round closes by time, so the event loop can wake then rather than at the next change.
    pub fn next_expiry(&self) -> Option<chrono::DateTime<chrono::Utc>> {
        match (self.next_expiry, self.council_deadline) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// What the release rule needs to know of contracts, limited to the citizens and contract
    /// ids the file names (the settled folder can hold thousands).
    fn contract_facts(
        &self,
        polis: &Polis,
        now: &PolisTime,
        citizens: &BTreeSet<String>,
        contracts: &BTreeSet<String>,
    ) -> ContractFacts {
        let mut facts = ContractFacts {
            departed: crate::protocol::contracts::handoff::departures(&polis.recent_chronicle())
                .into_iter()
                .filter(|(c, _)| citizens.contains(c))
                .collect(),
            ..ContractFacts::default()
        };
        let moment = |v| match read_when(v, now) {
            Some(When::Moment(t)) => Some(t),
            Some(When::Day(d)) => d.and_hms_opt(0, 0, 0),
            None => None,
        };
        for c in &polis.contracts {
            let id = c.file.stem.clone();
            match c.folder {
                ContractFolder::Open => {
                    facts.open.insert(id);
                    if let Some(owner) = &c.contract.owner {
                        facts.open_owners.insert(owner.clone());
                    }
                }
                ContractFolder::Abandoned => {
                    let owner = c.contract.owner.clone();
                    let named = contracts.contains(&id)
                        || owner.as_ref().is_some_and(|o| citizens.contains(o));
                    if named {
                        facts
                            .finished
                            .push((id, owner, moment(&c.contract.settled_at)));
                    }
                }
                ContractFolder::Settled => {}
            }
        }
        // The ledger holds every settled file.
        for (rel, _, _) in self.ledger.files() {
            let id = layout::record_stem(rel);
            let settlement = self.ledger.get(rel);
            let owner = settlement.as_ref().map(|s| s.owner.clone());
            let named =
                contracts.contains(id) || owner.as_ref().is_some_and(|o| citizens.contains(o));
            if named {
                facts
                    .finished
                    .push((id.to_string(), owner, settlement.and_then(|s| s.instant)));
            }
        }
        facts
    }

    /// A `record-finding` notice for each problem of an entry written wrong by hand
    /// ([`op::entry_problems`]), as for a contract's: to the citizen the entry names when it
    /// is a registered member, else to the index keeper. Sent once each, as every notice is.
    pub(super) fn reservation_finding_notices(
        &self,
        polis: &Polis,
        now: &PolisTime,
    ) -> Vec<Notification> {
        if !self.root.join(rules::FILE).is_file() {
            return Vec::new();
        }
        let Ok(problems) = op::entry_problems(&self.root, now) else {
            return Vec::new(); // the unreadable file is logged by the pass
        };
        if problems.is_empty() {
            return Vec::new();
        }
        let registered = polis.registered();
        let departed = polis.departed();
        let mut out = Vec::new();
        for p in problems {
            let author = p.citizen.clone();
            let recipient = author
                .as_ref()
                .filter(|a| registered.contains(*a) && !departed.contains(*a))
                .or(polis.index_keeper.as_ref());
            if let Some(recipient) = recipient {
                let recipient = recipient.clone();
                out.push(Notification::record_finding(
                    &recipient,
                    author.as_deref(),
                    &op::finding(p),
                ));
            }
        }
        out
    }

    /// The `reservation-conflict` notices the file calls for: for each pair of overlapping
    /// entries of different citizens, one to each.
    pub(super) fn reservation_notices(&self, polis: &Polis, now: &PolisTime) -> Vec<Notification> {
        if !self.root.join(rules::FILE).is_file() {
            return Vec::new();
        }
        // From the chronicle the pass already holds, not read again.
        let departures =
            || crate::protocol::contracts::handoff::departures(&polis.recent_chronicle());
        match op::overlaps_now(&self.root, now, departures) {
            Ok(overlaps) => overlaps
                .iter()
                .flat_map(Notification::reservation_conflict)
                .collect(),
            Err(_) => Vec::new(),
        }
    }
}
