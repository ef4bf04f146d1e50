//! Reflection (issue 19): once a day every detector, and after a settlement the detectors that
//! settled contracts feed, filing what they find as amendments through the application layer.
//!
//! After a settlement the ledger (owner, tags, quality) says on which tags a proposal is at all
//! possible ([`rules::tags_worth_reading`]); only the settled files of those tags are read
//! again, for the routing and review fields the ledger does not keep.

use super::{Engine, Pass};
use crate::fs::snapshot::{self, ContractFile};
use crate::operations::reflection::{self, Scope};
use crate::protocol::contract::Contract;
use crate::protocol::layout::ContractFolder;
use crate::protocol::reflection::{self as rules, SettledEvidence};

/// The `state.known` key holding the polis-local date of the last daily run.
const LAST_DAILY_RUN: &str = "reflect/daily";

impl Engine {
    pub(super) fn reflection_step(&mut self, pass: &mut Pass) {
        if !self.options.reflect || pass.first_meeting {
            return;
        }
        let today = pass.now.now.date().format("%Y-%m-%d").to_string();
        let daily = self.state.known.get(LAST_DAILY_RUN) != Some(&today);
        let scope = if daily {
            Scope::All
        } else if !pass.new_settled.is_empty() {
            Scope::Settled
        } else {
            return;
        };
        // After a settlement only its own tags can have changed a detector's answer.
        let touched: Option<std::collections::BTreeSet<String>> =
            (scope == Scope::Settled).then(|| {
                pass.new_settled
                    .iter()
                    .filter_map(|(rel, _)| self.ledger.get(rel))
                    .flat_map(|s| s.tags)
                    .collect()
            });
        let settled = self.settled_evidence(touched.as_ref());
        // Reading that many files leaves the heap holding their freed parses, and the evidence
        // too once the detectors ran: given back at the end of the step.
        let read_many = settled.len() >= super::MANY_FILES;
        let mut evidence = reflection::gather_with(&pass.polis, settled, scope, &pass.now);
        evidence.clock = chrono::NaiveDateTime::parse_from_str(
            &self.polis_clock(&pass.polis, &pass.now),
            crate::protocol::chronicle::STAMP_FORMAT,
        )
        .ok()
        .filter(|t| t.and_utc().timestamp() != 0);
        match reflection::reflect(
            &evidence,
            rules::DEFAULT_MIN_EVIDENCE,
            Some(&self.writer),
            &pass.now,
        ) {
            Ok(results) => {
                if daily {
                    self.state.known.insert(LAST_DAILY_RUN.into(), today);
                }
                let filed: Vec<_> = results.iter().filter(|r| r.written).collect();
                for r in &filed {
                    tracing::info!(amendment = %r.amendment_id, kind = r.proposal.kind.as_str(), "reflection filed a proposal");
                }
                if !filed.is_empty() {
                    self.state.counters.writes += filed.len() as u64;
                    self.after_write(pass);
                }
            }
            Err(e) => pass.errors.push(format!("reflection: {e}")),
        }
        drop(evidence);
        if read_many {
            super::trim_heap();
        }
    }

    /// The settled contracts of every tag where a detector could fire (of `only`'s tags, when
    /// given), read again for the
    /// fields the ledger does not keep; in path order, as the reference lists them.
    fn settled_evidence(
        &self,
        only: Option<&std::collections::BTreeSet<String>>,
    ) -> Vec<SettledEvidence> {
        let mut worth = rules::tags_worth_reading(
            self.ledger
                .iter()
                .map(|(_, s)| (s.owner, s.tags, s.quality)),
            rules::DEFAULT_MIN_EVIDENCE,
        );
        if let Some(only) = only {
            worth.retain(|t| only.contains(t));
        }
        if worth.is_empty() {
            return Vec::new();
        }
        // Borrowed from the ledger: an owned copy of every settlement is made only for the
        // file being read.
        let mut wanted: Vec<_> = self
            .ledger
            .iter()
            .filter(|(_, s)| s.tags.iter().any(|t| worth.contains(t)))
            .collect();
        wanted.sort_by(|a, b| a.0.cmp(b.0));
        let root = self.root.clone();
        // Each file is turned into its few fields of evidence as soon as it is read: holding
        // every parsed file until all are read cost a daily run at 10k settled ~50 MB.
        let mut out: Vec<SettledEvidence> = snapshot::par_map(&wanted, |(path, view)| {
            let stem = path.rsplit('/').next()?.strip_suffix(".md")?;
            let file = snapshot::read_record(&root, path, stem, &mut Vec::new())?;
            let contract = Contract::from_record(&file.record);
            let file = ContractFile {
                folder: ContractFolder::Settled,
                file,
                contract,
            };
            Some(reflection::settled_evidence(
                &file,
                &view.to_settlement(path),
            ))
        })
        .into_iter()
        .flatten()
        .collect();
        out.sort_by(|a, b| a.contract_id.cmp(&b.contract_id));
        out
    }
}
