//! When a claimed contract has gone quiet (SPEC §9 `contract-stale`): the newest chronicle line
//! about each contract, and whether its silence has passed the activity window. The daemon's
//! notices and the dashboard's overview both ask.

use crate::fs::snapshot::Polis;
use crate::protocol::chronicle;
use crate::protocol::clock::PolisTime;
use crate::protocol::contract::Contract;
use std::collections::{BTreeSet, HashMap};

/// The newest chronicle line about each of `ids` (a line whose link names the contract), over
/// the texts the activity window reads. Nothing is scanned when `ids` is empty.
pub fn last_lines_about(
    polis: &Polis,
    ids: &BTreeSet<&str>,
) -> HashMap<String, chrono::NaiveDateTime> {
    let mut last: HashMap<String, chrono::NaiveDateTime> = HashMap::new();
    if ids.is_empty() {
        return last;
    }
    for text in polis.recent_chronicle() {
        for line in chronicle::scan(text).lines {
            let Ok(entry) = chronicle::parse_entry(&line.text) else {
                continue;
            };
            let Some(target) = entry.link.and_then(chronicle::link_target) else {
                continue;
            };
            let Some(id) = target.rsplit('/').next().filter(|id| ids.contains(id)) else {
                continue;
            };
            let slot = last.entry(id.to_string()).or_insert(entry.stamp);
            *slot = (*slot).max(entry.stamp);
        }
    }
    last
}

/// When a claimed contract has had no chronicle line about it for 14 days, the stamp of the
/// last one (or of its opening), which makes each silence a distinct notice.
pub fn stale_since(
    last_line: Option<chrono::NaiveDateTime>,
    k: &Contract,
    now: &PolisTime,
) -> Option<String> {
    let last = last_line;
    let last = last.or_else(|| {
        crate::protocol::amendment::read_when(&k.opened_at, now).map(|w| match w {
            crate::protocol::amendment::When::Moment(t) => t,
            crate::protocol::amendment::When::Day(d) => d.and_hms_opt(0, 0, 0).unwrap_or_default(),
        })
    })?;
    (now.now - last > chrono::Duration::days(chronicle::ACTIVITY_WINDOW_DAYS))
        .then(|| last.format("%Y-%m-%d %H:%M").to_string())
}
