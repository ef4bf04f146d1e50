//! Read-only summaries of a polis for the servers (the MCP server's `polis_status` and its
//! `polis://state` resource), with the reference MCP server's keys so that a client written for
//! it reads them unchanged.

use crate::fs::snapshot::{self, MAX_RECORD_BYTES};
use crate::protocol::layout::{self, ContractFolder};
use serde_json::{json, Value};
use std::path::Path;

/// The registered citizens (folders with a card), sorted.
pub fn citizens(root: &Path) -> Vec<String> {
    snapshot::subdirs(root, layout::CITIZENS_DIR)
        .into_iter()
        .filter(|id| {
            layout::card_path(id)
                .is_some_and(|c| std::fs::symlink_metadata(root.join(c)).is_ok_and(|m| m.is_file()))
        })
        .collect()
}

fn count(root: &Path, folder: ContractFolder) -> usize {
    let mut findings = Vec::new();
    snapshot::list(root, folder.dir(), ".md", &mut findings).len()
}

/// The reference's `polis_status`: citizens, open and settled counts, explore rate, and the
/// leader of each tag. Reads the citizens folder, two listings and `routing_stats.yml`.
pub fn status(root: &Path) -> Value {
    let stats = snapshot::read_text(root, layout::ROUTING_STATS, Some(MAX_RECORD_BYTES))
        .ok()
        .flatten()
        .and_then(|t| crate::protocol::routing::stats::parse(&t).ok())
        .unwrap_or_default();
    let mut leaders = serde_json::Map::new();
    for t in &stats.tags {
        leaders.insert(
            t.tag.clone(),
            json!({"leader": t.leader, "confidence": t.leader_confidence.unwrap_or(0.0)}),
        );
    }
    json!({
        "polis_root": root.display().to_string(),
        "citizens": citizens(root),
        "open_contracts": count(root, ContractFolder::Open),
        "settled_contracts": count(root, ContractFolder::Settled),
        "explore_rate": stats.explore_rate_f64().unwrap_or(0.15),
        "routing_leaders": leaders,
    })
}

/// `polis://state`: the status, every open contract and the proposed amendments.
pub fn state(root: &Path) -> Value {
    let mut findings = Vec::new();
    let amendments: Vec<Value> = snapshot::list(
        root,
        layout::AmendmentFolder::Proposed.dir(),
        ".md",
        &mut findings,
    )
    .into_iter()
    .filter_map(|e| {
        let text = snapshot::read_text(root, &e.rel, Some(MAX_RECORD_BYTES)).ok()??;
        let a = crate::protocol::amendments::amendment::parse(&text, &e.stem).ok()?;
        Some(json!({
            "amendment_id": a.id,
            "title": a.title,
            "status": a.status,
            "proposed_by": a.proposed_by,
        }))
    })
    .collect();
    json!({
        "status": status(root),
        "contracts": {"open": crate::operations::contract::list(root, ContractFolder::Open, None)},
        "amendments": amendments,
    })
}
