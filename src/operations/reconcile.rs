//! Rebuilding `contracts/routing_stats.yml` from the settled contracts (SPEC §6).

use super::ActionError;
use crate::fs::snapshot::{self, Polis};
use crate::fs::state::{Fingerprint, LedgerAhead, LedgerFile, Records, Restored, SettledRecord};
use crate::fs::writer::{WriteOutcome, Writer};
use crate::protocol::clock::PolisZone;
use crate::protocol::contract::Heading;
use crate::protocol::finding::Finding;
use crate::protocol::layout::{self, ContractFolder};
use crate::protocol::stats::Settlement;
use crate::yaml::Value;
use std::collections::{HashMap, HashSet};
use std::path::Path;

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
    let zone = polis_zone(root);
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

/// The polis's timezone, from `polis.yml` alone.
fn polis_zone(root: &Path) -> PolisZone {
    let settings_text =
        snapshot::read_text(root, layout::POLIS_YML, Some(snapshot::MAX_RECORD_BYTES))
            .ok()
            .flatten();
    crate::protocol::settings::parse(settings_text.as_deref())
        .0
        .timezone
}

/// One settled file as read: what the ledger records of it, and what its notices name.
#[derive(Debug)]
pub struct SettledRead {
    pub fingerprint: Fingerprint,
    pub findings: Vec<Finding>,
    /// What its notices name, kept only for the pass that read it.
    pub heading: Heading,
    pub settlement: Option<Settlement>,
}

/// Reads one settled file of a folder the caller checked for links; `None` when it is gone.
/// The frontmatter is parsed once for all (by [`super::published::read_settled`], which the
/// dashboard shares), and only the heading its notices name is kept of it.
pub fn read_settled(root: &Path, rel: &str, zone: PolisZone) -> Option<SettledRead> {
    let file = super::published::read_settled(root, rel, zone)?;
    Some(SettledRead {
        fingerprint: file.fingerprint,
        findings: file.findings,
        heading: file.record.as_ref().map(Heading::of).unwrap_or_default(),
        settlement: file.settlement,
    })
}

/// How [`reconcile_from_ledger`] went about it, for the caller to report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LedgerUse {
    /// The ledger was trusted: only these many files were read.
    Incremental { read: usize },
    /// No ledger, or one that cannot be trusted: every settled file was read (and a new
    /// snapshot written).
    Full,
}

/// `routing_stats.yml` rebuilt by a one-shot command while no daemon runs (`contract settle`):
/// from the daemon's durable ledger of settled contracts in the state folder, checked against
/// every settled file's fingerprint, so only the files that changed (and the new ones) are
/// read. The bytes are those of a full reconcile ([`reconcile_settled`]). Without a ledger,
/// or with one that cannot be trusted (another version, a damaged snapshot or journal, another
/// timezone), every file is read and a fresh snapshot written. What changed is journalled for
/// the next command or daemon, under the ledger's writer lock. `None` when a daemon runs: it
/// keeps the stats, and its state is left alone. A state folder that cannot be used costs the
/// full read, never the reconcile. `ahead` gives the ledger file read ahead of its lock
/// ([`LedgerAhead`]; `contract settle` reads it while it moves the contract, another caller
/// passes `|| LedgerAhead::read(root)`): it is called on a thread of its own while the folder is
/// listed.
pub fn reconcile_from_ledger(
    root: &Path,
    writer: &Writer,
    ahead: impl FnOnce() -> Option<LedgerAhead> + Send,
) -> Result<Option<(Reconciled, LedgerUse)>, ActionError> {
    let dir = ContractFolder::Settled.dir();
    let opened = std::thread::scope(|scope| {
        let ahead = scope.spawn(|| {
            let ahead = ahead();
            // On this otherwise idle thread, the patterns compiled on first use that reading
            // the new settlement and rendering the stats need, off the listing's path.
            crate::protocol::contract::prepare_time_pattern();
            crate::yaml::prepare();
            ahead
        });
        let locked = match LedgerFile::lock(root) {
            Ok(Some(locked)) => locked,
            Ok(None) => return Ok(None),
            Err(e) => return Err(e),
        };
        // Listed only once the lock is held: every record an earlier holder journalled then
        // names a file moved in before this listing, so a record the listing lacks is a file
        // really gone (listed before the lock, another command's new settlement could be taken
        // for a removal). Every file is stat'ed on every core, as the folder is read.
        let listing = crate::fs::state::listed_fingerprints(root, dir, ".md", &mut Vec::new());
        let ahead = ahead
            .join()
            .unwrap_or_else(|e| std::panic::resume_unwind(e));
        let (file, restored) = locked.restore(ahead);
        Ok(Some((file, restored, listing)))
    });
    let (mut file, restored, listing) = match opened {
        Ok(Some(opened)) => opened,
        Ok(None) => return Ok(None),
        Err(e) => {
            tracing::warn!(
                "the ledger of settled contracts is not used ({e}): reading every settled file"
            );
            let (done, _) = reconcile_settled(root, writer)?;
            return Ok(Some((done, LedgerUse::Full)));
        }
    };
    let zone = polis_zone(root);
    let zone_seconds = zone.0.local_minus_utc();
    // What the ledger vouches for (in path order), and (when it cannot be trusted) the paths
    // it had counted.
    let (held, known, trusted): (Records, HashSet<String>, bool) = match restored {
        Restored::Records {
            zone_seconds: was,
            records,
        } if was == zone_seconds => (records, HashSet::new(), true),
        Restored::Records { records, .. } => (
            Records::default(),
            records
                .iter()
                .filter(|r| !r.unannounced)
                .map(|r| r.path.to_string())
                .collect(),
            false,
        ),
        Restored::Untrusted { recorded, .. } => {
            (Records::default(), recorded.into_iter().collect(), false)
        }
        Restored::Nothing => (Records::default(), HashSet::new(), false),
    };
    // Each listed name found among the records by name: a record not listed is gone; a listed
    // file the ledger holds (without findings, which are not stored) with the fingerprint it
    // records is kept; the rest is read.
    let prefix = format!("{dir}/");
    let mut by_name: HashMap<&str, usize> = HashMap::with_capacity(held.len());
    by_name.extend((0..held.len()).filter_map(|i| {
        held.path(i)
            .strip_prefix(prefix.as_str())
            .map(|name| (name, i))
    }));
    let mut listed = vec![false; held.len()];
    let mut kept = vec![false; held.len()];
    let mut to_read: Vec<(Option<usize>, String)> = Vec::new();
    for (name, now) in listing.iter() {
        match by_name.get(name) {
            Some(&i) => {
                listed[i] = true;
                if !held.reread(i) && now == Some(held.fingerprint(i)) {
                    kept[i] = true;
                } else {
                    to_read.push((Some(i), held.path(i).to_string()));
                }
            }
            None => to_read.push((None, format!("{prefix}{name}"))),
        }
    }
    drop(by_name);
    let mut changes: Vec<Result<SettledRecord, String>> = listed
        .iter()
        .enumerate()
        .filter(|(_, listed)| !**listed)
        .map(|(i, _)| Err(held.path(i).to_string()))
        .collect();
    let reads = snapshot::par_map(&to_read, |(_, rel)| read_settled(root, rel, zone));
    let read_count = to_read.len();
    let mut fresh: Vec<SettledRecord> = Vec::with_capacity(read_count);
    for ((before, rel), read) in to_read.into_iter().zip(reads) {
        let before = before.map(|i| held.get(i));
        let Some(read) = read else {
            if before.is_some() {
                changes.push(Err(rel));
            }
            continue;
        };
        let mut record = SettledRecord::of(
            &rel,
            &read.fingerprint,
            !read.findings.is_empty(),
            read.settlement.as_ref().map(Settlement::view),
        );
        record.unannounced = match &before {
            Some(b) => b.unannounced,
            None if trusted => true,
            None => !known.contains(&rel),
        };
        // A file read again only for its findings, unchanged, needs no new line.
        if before != Some(record.as_ref()) {
            changes.push(Ok(record.clone()));
        }
        fresh.push(record);
    }
    fresh.sort_by(|a, b| a.path.cmp(&b.path));
    // The kept records (in path order already) and the fresh ones, merged in path order: the
    // order a full reconcile lists them in.
    let merged = || {
        let mut kept_refs = held
            .iter()
            .zip(&kept)
            .filter_map(|(r, k)| k.then_some(r))
            .peekable();
        let mut fresh_refs = fresh.iter().map(SettledRecord::as_ref).peekable();
        std::iter::from_fn(move || match (kept_refs.peek(), fresh_refs.peek()) {
            (Some(k), Some(f)) if k.path < f.path => kept_refs.next(),
            (Some(_), Some(_)) | (None, _) => fresh_refs.next(),
            (Some(_), None) => kept_refs.next(),
        })
    };
    let files = kept.iter().filter(|k| **k).count() + fresh.len();
    let settlements: Vec<_> = merged().filter_map(|r| r.settlement).collect();
    let done = reconcile_with(root, writer, settlements.len(), |rate, last| {
        crate::protocol::stats::reconcile_views(&settlements, rate, last)
    })?;
    drop(settlements);
    // After the stats: a ledger that misses a change only costs the next look a read.
    let journalled = if trusted && !file.snapshot_due(files, changes.len()) {
        file.append(changes)
    } else {
        file.write_snapshot(zone_seconds, merged())
    };
    if let Err(e) = journalled {
        tracing::warn!("could not record the settled contracts in polisd's state folder: {e}");
    }
    let used = if trusted {
        LedgerUse::Incremental { read: read_count }
    } else {
        LedgerUse::Full
    };
    Ok(Some((done, used)))
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
