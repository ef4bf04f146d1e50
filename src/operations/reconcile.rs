//! Rebuilding `contracts/routing_stats.yml` from the settled contracts (SPEC §6).

use super::ActionError;
use crate::fs::snapshot::{self, Polis};
use crate::fs::writer::{WriteOutcome, Writer};
use crate::protocol::layout::{self};
use crate::yaml::Value;

/// What a reconcile did.
#[derive(Debug, Clone, PartialEq)]
pub struct Reconciled {
    pub replayed: usize,
    /// `None` when there is no `contracts/settled/` folder (nothing is written then).
    pub outcome: Option<WriteOutcome>,
    /// Hex SHA-256 of the bytes `routing_stats.yml` now holds by this reconcile (`None` with
    /// `outcome`), so a caller can tell a later edit from its own result without re-reading.
    pub stats_sha256: Option<String>,
}

/// Rebuilds `contracts/routing_stats.yml` with the stats `build` makes from the two values kept
/// from the file being replaced (`explore_rate`, `last_updated`); writes only when the bytes
/// change, and nothing without a `contracts/settled/` folder. `polisd reconcile` builds with a
/// full replay, the daemon with its incremental [`crate::protocol::stats::Ledger`]. `replayed` is only
/// reported.
pub fn reconcile_with(
    root: &std::path::Path,
    writer: &Writer,
    replayed: usize,
    build: impl FnOnce(&Value, &Value) -> crate::protocol::stats::RoutingStats,
) -> Result<Reconciled, ActionError> {
    if !root.join("contracts/settled").is_dir() {
        return Ok(Reconciled {
            replayed,
            outcome: None,
            stats_sha256: None,
        });
    }
    let previous = read_previous_stats(root);
    let stats = build(previous.get("explore_rate"), previous.get("last_updated"));
    let text = crate::protocol::stats::render(&stats)?;
    let outcome = writer.replace_atomic(layout::ROUTING_STATS, text.as_bytes())?;
    Ok(Reconciled {
        replayed,
        outcome: Some(outcome),
        stats_sha256: Some(crate::fs::state::hex_sha256(text.as_bytes())),
    })
}

/// `polisd reconcile`: reads only what a reconcile needs — `polis.yml` for the timezone and
/// the files of `contracts/settled/`, on every core — and rebuilds the stats with a full replay
/// (SPEC §6). Returns the findings about the folder's files too.
pub fn reconcile_settled(
    root: &std::path::Path,
    writer: &Writer,
) -> Result<(Reconciled, Vec<crate::protocol::finding::Finding>), ActionError> {
    reconcile_settled_with_progress(root, writer, &|_, _| {})
}

/// [`reconcile_settled`], calling `progress(read, total)` after each settled file is read (from
/// the reading threads), so a front end can show how far it got.
pub fn reconcile_settled_with_progress(
    root: &std::path::Path,
    writer: &Writer,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Result<(Reconciled, Vec<crate::protocol::finding::Finding>), ActionError> {
    let settings_text =
        snapshot::read_text(root, layout::POLIS_YML, Some(snapshot::MAX_RECORD_BYTES))
            .ok()
            .flatten();
    let zone = crate::protocol::settings::parse(settings_text.as_deref())
        .0
        .timezone;
    let mut findings = Vec::new();
    let dir = layout::ContractFolder::Settled.dir();
    let entries = snapshot::list(root, dir, ".md", &mut findings);
    let total = entries.len();
    let read_so_far = std::sync::atomic::AtomicUsize::new(0);
    let reads = snapshot::par_map(&entries, |e| {
        let n = read_so_far.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
        progress(n, total);
        let mut found = Vec::new();
        let settlement =
            snapshot::read_record(root, &e.rel, &e.stem, &mut found).and_then(|file| {
                let read = crate::protocol::contract::settlement_of(&file.rel, &file.record, zone);
                found.extend(read.findings);
                read.settlement
            });
        (settlement, found)
    });
    let mut settlements = Vec::with_capacity(reads.len());
    for (settlement, found) in reads {
        findings.extend(found);
        settlements.extend(settlement);
    }
    let done = reconcile_with(root, writer, settlements.len(), |rate, last| {
        crate::protocol::stats::reconcile(&settlements, rate, last)
    })?;
    Ok((done, findings))
}

/// The stats file as it is, for the values a reconcile keeps (`explore_rate`, `last_updated`).
fn read_previous_stats(root: &std::path::Path) -> Value {
    snapshot::read_text(root, layout::ROUTING_STATS, None)
        .ok()
        .flatten()
        .and_then(|text| crate::yaml::load(&text).ok())
        .unwrap_or(Value::Null)
}

/// The stats a router should read: the file on disk, or empty.
pub fn current_stats(polis: &Polis) -> crate::protocol::stats::RoutingStats {
    crate::protocol::stats::from_value(&read_previous_stats(&polis.root))
}
