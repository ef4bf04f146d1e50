//! Which claimed contracts have gone quiet (SPEC §9's `contract-stale`): no chronicle line
//! about them for 14 days.

use crate::fs::snapshot::Polis;
use crate::protocol::chronicle;
use crate::protocol::clock::PolisTime;
use crate::protocol::contracts::contract::Contract;
use crate::protocol::layout::ContractFolder;
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// Every open contract that is claimed (an owner, status `claimed` or `in_progress`) and has
/// had no chronicle line about it for 14 days, by id, with the stamp of its last line (or of
/// its opening), which makes each silence a distinct notice.
pub fn stale_claims(polis: &Polis, now: &PolisTime) -> BTreeMap<String, String> {
    let claimed: Vec<(&str, &Contract)> = polis
        .contracts
        .iter()
        .filter(|c| c.folder == ContractFolder::Open)
        .filter(|c| {
            c.contract.owner.is_some()
                && matches!(
                    c.contract.status.as_deref(),
                    Some("claimed" | "in_progress")
                )
        })
        .map(|c| (c.file.stem.as_str(), &c.contract))
        .collect();
    let ids: BTreeSet<&str> = claimed.iter().map(|(id, _)| *id).collect();
    // One pass over the chronicle for every claimed contract, not one per contract.
    let last_lines = last_lines_about(polis, &ids);
    claimed
        .into_iter()
        .filter_map(|(id, k)| {
            stale_since(last_lines.get(id).copied(), k, now).map(|last| (id.to_string(), last))
        })
        .collect()
}

/// The newest chronicle line about each of `ids` (a line whose link names the contract), over
/// the texts the activity window reads. Nothing is scanned when `ids` is empty.
fn last_lines_about(polis: &Polis, ids: &BTreeSet<&str>) -> HashMap<String, chrono::NaiveDateTime> {
    let mut last: HashMap<String, chrono::NaiveDateTime> = HashMap::new();
    if ids.is_empty() {
        return last;
    }
    for text in polis.recent_chronicle() {
        chronicle::newest_lines_about(chronicle::lines(text).map(|(_, l)| l), ids, &mut last);
    }
    last
}

/// When a claimed contract has had no chronicle line about it for 14 days, the stamp of the
/// last one (or of its opening), which makes each silence a distinct notice.
fn stale_since(
    last_line: Option<chrono::NaiveDateTime>,
    k: &Contract,
    now: &PolisTime,
) -> Option<String> {
    let last = last_line;
    let last = last.or_else(|| {
        crate::protocol::amendments::amendment::read_when(&k.opened_at, now).map(|w| match w {
            crate::protocol::amendments::amendment::When::Moment(t) => t,
            crate::protocol::amendments::amendment::When::Day(d) => {
                d.and_hms_opt(0, 0, 0).unwrap_or_default()
            }
        })
    })?;
    (now.now - last > chrono::Duration::days(chronicle::ACTIVITY_WINDOW_DAYS))
        .then(|| last.format("%Y-%m-%d %H:%M").to_string())
}
