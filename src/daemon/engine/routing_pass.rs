//! Routing new open contracts (SPEC §7) through the application layer.

use super::{Engine, Pass};
use crate::fs::snapshot::Polis;
use crate::operations::route::{self as routing, RouteOptions};
use crate::protocol::layout::ContractFolder;

impl Engine {
    pub(super) fn route_step(&mut self, pass: &mut Pass) {
        if pass.polis.settlements.is_empty() && wants_routing(&pass.polis) {
            // The posterior policy reads the history; only routing needs it as a list.
            pass.polis.settlements = self.ledger.settlements();
        }
        match self.route_new_contracts(&pass.polis) {
            Ok(true) => self.after_write(pass),
            Ok(false) => {}
            Err(e) => pass.errors.push(format!("routing: {e:#}")),
        }
    }

    pub(super) fn route_new_contracts(&mut self, polis: &Polis) -> anyhow::Result<bool> {
        let mut wrote = false;
        for file in polis
            .contracts
            .iter()
            .filter(|c| c.folder == ContractFolder::Open && c.contract.wants_recommendation())
        {
            let options = RouteOptions {
                seed: Some(crate::protocol::routing::seed_for(
                    &file.file.rel,
                    &file.file.text,
                )),
                ..RouteOptions::default()
            };
            let rec = match routing::recommend(polis, file, &options).map(|r| r.recommendation) {
                Ok(rec) => rec,
                Err(routing::RouteError::NoCitizens) => return Ok(wrote),
                Err(e) => {
                    tracing::debug!("not routing {}: {e}", file.file.rel);
                    continue;
                }
            };
            if routing::apply(polis, &self.writer, file, &rec)? {
                self.state.counters.writes += 1;
                tracing::info!(
                    contract = %file.file.stem,
                    recommendation = rec.recommendation.as_deref().unwrap_or("-"),
                    score = rec.score,
                    exploration = rec.exploration,
                    "contract routed"
                );
                wrote = true;
            }
        }
        Ok(wrote)
    }
}

/// Whether an open contract waits for a recommendation (routing needs the history then).
pub(super) fn wants_routing(polis: &Polis) -> bool {
    polis
        .contracts
        .iter()
        .any(|c| c.folder == ContractFolder::Open && c.contract.wants_recommendation())
}
