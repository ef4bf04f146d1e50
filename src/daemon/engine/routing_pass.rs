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
        match self.route_new_contracts(&pass.polis, &mut pass.sync_notices) {
            Ok(true) => self.after_write(pass),
            Ok(false) => {}
            Err(e) => pass.errors.push(format!("routing: {e:#}")),
        }
    }

    pub(super) fn route_new_contracts(
        &mut self,
        polis: &Polis,
        notices: &mut Vec<crate::protocol::delivery::inbox::Notification>,
    ) -> anyhow::Result<bool> {
        let mut wrote = false;
        // In a git clone, a contract already committed is shared: another clone may move it
        // to `settled/` and open a similar one, and git's rename detection would then carry an
        // edit made here into that other file. polisd writes a routing block only into a
        // contract still local to this clone; a shared one is routed by notice alone, which
        // every clone derives alike (docs/sync.md). In a folder Syncthing shares, every
        // contract is shared the moment it is written: two daemons would write routing blocks
        // that differ (each replays the settlements it has received so far), and one written
        // while the other machine settles the contract brings the open copy back.
        let wanted = wants_routing(polis);
        let all_shared = wanted && crate::fs::locate::shared_by_sync_tool(&self.root);
        let shared = if wanted && !all_shared {
            crate::fs::git::Repo::find(&self.root)
                .map(|r| r.shared_unchanged(&self.root, ContractFolder::Open.dir()))
                .unwrap_or_default()
        } else {
            Default::default()
        };
        for file in polis
            .contracts
            .iter()
            .filter(|c| c.folder == ContractFolder::Open && c.contract.wants_recommendation())
        {
            if crate::operations::records::contract_has_errors(polis, file) {
                // Its author hears of each error (`record-finding`); routing waits for the fix.
                tracing::info!(
                    contract = %file.file.stem,
                    "not routing: the contract has errors (see `polisd check`)"
                );
                continue;
            }
            // Never a contract that is not ready: it is routed when its last dependency
            // settles.
            let deps = crate::protocol::contracts::dependency::depends_on(&file.contract);
            if !deps.is_empty()
                && !crate::protocol::contracts::dependency::dependencies_settled(&deps, &|d| {
                    crate::operations::ready::is_in(&polis.root, ContractFolder::Settled, d)
                })
            {
                continue;
            }
            // Seeded by the contract's path and bytes: two daemons on synced machines draw
            // alike and write the same routing block (docs/sync.md).
            let options = RouteOptions {
                seed: Some(crate::protocol::routing::seed_for(
                    &file.file.rel,
                    &file.file.text,
                )),
                ..RouteOptions::default()
            };
            let rec = match routing::recommend(polis, file, &options) {
                Ok(routed) => {
                    if let Some(f) = routed.rule.as_ref().and_then(|m| m.finding.as_ref()) {
                        tracing::warn!("{f}");
                    }
                    routed.recommendation
                }
                Err(routing::RouteError::NoCitizens) => return Ok(wrote),
                Err(e) => {
                    tracing::debug!("not routing {}: {e}", file.file.rel);
                    continue;
                }
            };
            if all_shared || shared.contains(&file.file.rel) {
                if let Some(r) = &rec.recommendation {
                    let title = file
                        .contract
                        .title
                        .clone()
                        .unwrap_or_else(|| file.file.stem.clone());
                    let at = crate::protocol::delivery::inbox::value_stamp(
                        &file.contract.opened_at,
                        polis.settings.timezone,
                    );
                    notices.push(
                        crate::protocol::delivery::inbox::Notification::contract_routed(
                            r,
                            &file.file.stem,
                            &title,
                            rec.score,
                            rec.exploration,
                        )
                        .caused_at(at),
                    );
                }
                continue;
            }
            let applied = match routing::apply(polis, &self.writer, file, &rec) {
                Ok(applied) => applied,
                Err(e) if e.is_not_settled() => {
                    // An agent is still writing the contract: routed once it is done.
                    tracing::debug!("{e}");
                    continue;
                }
                Err(e) => return Err(e.into()),
            };
            if applied {
                self.state.counters.writes += 1;
                self.log_activity(
                    "routed",
                    Some(&file.file.rel),
                    format!(
                        "a new open contract without a recommendation: picked {} (score {:.3}{})",
                        rec.recommendation.as_deref().unwrap_or("nobody"),
                        rec.score,
                        if rec.exploration { ", exploring" } else { "" }
                    ),
                );
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
