//! Rebuilding `contracts/routing_stats.yml` from the settled contracts (SPEC §6).

use super::ActionError;
use crate::fs::snapshot::{self, Polis};
use crate::fs::state::{
    Fingerprint, LedgerAhead, LedgerFile, LedgerLock, LedgerTry, ListedNames, Listing, NameIndex,
    Records, Restored, SettledRecord,
};
use crate::fs::writer::{WriteOutcome, Writer};
use crate::protocol::clock::PolisZone;
use crate::protocol::contracts::contract::Heading;
use crate::protocol::finding::Finding;
use crate::protocol::layout::{self, ContractFolder};
use crate::protocol::routing::stats::{self, Replay, Settlement, SettlementView, TagLists};
use crate::yaml::Value;
use std::collections::HashSet;
use std::path::Path;
use std::thread::ScopedJoinHandle;

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
/// full replay, the daemon with its incremental [`crate::protocol::routing::stats::Ledger`]. `replayed` is only
/// reported.
pub fn reconcile_with(
    root: &std::path::Path,
    writer: &Writer,
    replayed: usize,
    build: impl FnOnce(&Value, &Value) -> crate::protocol::routing::stats::RoutingStats,
) -> Result<Reconciled, ActionError> {
    reconcile_over(root, writer, replayed, &read_previous_stats(root), build)
}

/// [`reconcile_with`] over `previous`, the stats file as it is (read already).
fn reconcile_over(
    root: &std::path::Path,
    writer: &Writer,
    replayed: usize,
    previous: &Value,
    build: impl FnOnce(&Value, &Value) -> crate::protocol::routing::stats::RoutingStats,
) -> Result<Reconciled, ActionError> {
    // A folder that cannot be listed read as empty: the stats rebuilt from it would forget every
    // settlement, so they are left as they are.
    let settled = layout::ContractFolder::Settled.dir();
    match std::fs::read_dir(root.join(settled)) {
        Ok(_) => {}
        Err(e) if crate::fs::snapshot::is_absent(&e) => {
            return Ok(Reconciled {
                replayed,
                outcome: None,
                stats_sha256: None,
            });
        }
        Err(source) => {
            return Err(ActionError::Unlistable {
                path: settled.to_string(),
                source,
            })
        }
    }
    let stats = build(previous.get("explore_rate"), previous.get("last_updated"));
    let text = crate::protocol::routing::stats::render(&stats)?;
    let outcome = writer.replace_atomic(layout::ROUTING_STATS, text.as_bytes())?;
    Ok(Reconciled {
        replayed,
        outcome: Some(outcome),
        stats_sha256: Some(crate::protocol::digest::sha256_hex(text.as_bytes())),
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
                let read = crate::protocol::contracts::contract::settlement_of(
                    &file.rel,
                    &file.record,
                    zone,
                );
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
        crate::protocol::routing::stats::reconcile(&settlements, rate, last)
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

/// How [`AloneReconcile`] went about it, for the caller to report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LedgerUse {
    /// The ledger was trusted: only these many files were read.
    Incremental { read: usize },
    /// No ledger, or one that cannot be trusted: every settled file was read (and a new
    /// snapshot written).
    Full,
}

/// What the thread started first gives: the ledger read ahead of the lock's checks with its
/// records found by name, the polis's timezone, and (read under the lock) the stats file.
struct Ahead {
    ledger: Option<LedgerAhead>,
    index: Option<NameIndex>,
    zone: PolisZone,
    /// `None` when it was read before the lock was held (it is read again then).
    previous: Option<Value>,
}

impl Ahead {
    fn records(&self) -> Option<&Records> {
        match self.ledger.as_ref()?.restored() {
            Restored::Records { records, .. } => Some(records),
            _ => None,
        }
    }
}

/// Shared by the thread that reads the ledger, which sets it, and the listing's threads, which
/// match their chunks against it once it is set.
type Ready = std::sync::Arc<std::sync::OnceLock<Ahead>>;

/// Set (by tests), `contract settle` with no daemon waits for the ledger's records before it
/// matches each chunk of the settled folder it stat'ed, so every chunk is matched on the thread
/// that stat'ed it (without it, a chunk stat'ed before the records are decoded is matched once
/// the folder is listed).
pub const MATCH_WHILE_LISTING_ENV: &str = "POLISD_TEST_MATCH_WHILE_LISTING";

/// Per listed name of a chunk, as matched against the ledger's records: [`UNKNOWN`] for a name
/// no record has, else the record's index, with [`KEPT`] when the file has the fingerprint the
/// record holds (and the record needs no second read).
type Matched = Vec<u32>;
const UNKNOWN: u32 = u32::MAX;
const KEPT: u32 = 1 << 31;

/// Each name of a chunk matched against `records` (see [`Matched`]).
fn match_chunk(
    records: &Records,
    index: &NameIndex,
    names: &ListedNames,
    now: &[Option<Fingerprint>],
) -> Matched {
    index
        .find_each(records, names.iter())
        .into_iter()
        .zip(now)
        .map(|(found, now)| match found {
            Some(i) if !records.reread(i) && *now == Some(records.fingerprint(i)) => {
                i as u32 | KEPT
            }
            Some(i) => i as u32,
            None => UNKNOWN,
        })
        .collect()
}

/// `routing_stats.yml` rebuilt by a one-shot command while no daemon runs (`contract settle`):
/// from the daemon's durable ledger of settled contracts in the state folder, checked against
/// every settled file's fingerprint, so only the files that changed (and the new ones) are
/// read. The bytes are those of a full reconcile ([`reconcile_settled`]). Without a ledger,
/// or with one that cannot be trusted (another version, a damaged snapshot or journal, another
/// timezone), every file is read and a fresh snapshot written. What changed is journalled for
/// the next command or daemon, under the ledger's writer lock. Nothing is done when a daemon
/// runs: it keeps the stats, and its state is left alone. A state folder that cannot be used
/// costs the full read, never the reconcile.
///
/// It is begun before the command's own change of the settled folder so that most of it is
/// done while that change waits on the disk: the ledger is read and decoded (and its records
/// indexed by name) on a thread of its own, and, when the ledger's writer lock is free at the
/// start, the lock is taken at once and the settled folder listed and stat'ed meanwhile too,
/// each chunk of names matched against the records on the thread that stat'ed it. The lock
/// comes before the listing either way: every record an earlier holder journalled names a file
/// moved in before the listing begins, so a record the listing lacks is a file really gone
/// (listed before the lock, another command's new settlement could be taken for a removal).
/// The file the command moves in itself while the folder is being listed may be listed or
/// not: [`AloneReconcile::finish`] is given its path and stats it again afterwards. When
/// another command holds the lock at the start, it is waited for after the change, and the
/// folder listed then.
pub struct AloneReconcile<'scope> {
    root: &'scope Path,
    ready: Ready,
    begun: Begun<'scope>,
}

enum Begun<'scope> {
    /// The lock held since the start; the folder being listed.
    Early {
        lock: LedgerLock,
        listing: ScopedJoinHandle<'scope, Listing<Matched>>,
        ahead: ScopedJoinHandle<'scope, Option<Replayed>>,
    },
    /// The lock to be waited for; the ledger being read ahead of it.
    Late {
        ahead: ScopedJoinHandle<'scope, Option<Replayed>>,
    },
    /// A daemon runs: nothing to do.
    Daemon,
    /// The state folder could not be used: every settled file is read.
    Failed(crate::fs::state::StateError),
}

impl<'scope> AloneReconcile<'scope> {
    /// Starts it on `scope`'s threads (see the type). The lock is taken now only when it is
    /// free and the state folder already holds its lock file (a command that fails its own
    /// checks then leaves no state behind it).
    pub fn start<'env>(
        scope: &'scope std::thread::Scope<'scope, 'env>,
        root: &'scope Path,
    ) -> AloneReconcile<'scope> {
        let ready = Ready::default();
        let read_ahead = |locked: bool| {
            let ready = ready.clone();
            move || {
                let ledger = LedgerAhead::read(root);
                let index = ledger.as_ref().and_then(|a| match a.restored() {
                    Restored::Records { records, .. } => {
                        Some(NameIndex::new(records, &settled_prefix()))
                    }
                    _ => None,
                });
                let _ = ready.set(Ahead {
                    ledger,
                    index,
                    zone: polis_zone(root),
                    previous: locked.then(|| read_previous_stats(root)),
                });
                // Then, while the folder is still being stat'ed, the ledger's settlements are
                // replayed as if every record is kept, which the end checks.
                Some(replay_ahead(ready.get().and_then(Ahead::records)?))
            }
        };
        let begun = match LedgerFile::try_lock_existing(root) {
            Ok(LedgerTry::Held(lock)) => {
                let for_listing = ready.clone();
                // The ledger first: the sooner its records are indexed, the more chunks of
                // the listing are matched beside the stats.
                let ahead = scope.spawn(read_ahead(true));
                Begun::Early {
                    lock,
                    listing: scope.spawn(move || list_settled(root, &for_listing)),
                    ahead,
                }
            }
            Ok(LedgerTry::Busy) => Begun::Late {
                ahead: scope.spawn(read_ahead(false)),
            },
            Ok(LedgerTry::Daemon) => Begun::Daemon,
            Err(e) => Begun::Failed(e),
        };
        AloneReconcile { root, ready, begun }
    }

    /// Ends it once the command's change is made: `own` is the settled file the command moved
    /// in itself since the start (stat'ed again here, whatever the listing saw of it).
    pub fn finish(
        self,
        writer: &Writer,
        own: Option<&str>,
    ) -> Result<Option<(Reconciled, LedgerUse)>, ActionError> {
        let root = self.root;
        let opened = match self.begun {
            Begun::Daemon => return Ok(None),
            Begun::Failed(e) => Err(e),
            Begun::Early {
                lock,
                listing,
                ahead,
            } => {
                let mut listing = join(listing);
                let prefix = settled_prefix();
                if let Some(name) = own.and_then(|own| own.strip_prefix(prefix.as_str())) {
                    let now = crate::fs::state::fingerprints_of_names(
                        root,
                        ContractFolder::Settled.dir(),
                        &[name],
                    );
                    listing.put(name, now[0]);
                }
                let replayed = join(ahead);
                Ok(Some((lock, listing, replayed)))
            }
            Begun::Late { ahead } => match LedgerFile::lock(root) {
                Ok(Some(lock)) => {
                    // Listed only once the lock is held (see the type).
                    let listing = list_settled(root, &self.ready);
                    let replayed = join(ahead);
                    Ok(Some((lock, listing, replayed)))
                }
                Ok(None) => return Ok(None),
                Err(e) => Err(e),
            },
        };
        let (lock, listing, replayed) = match opened {
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
        // Every thread that shared it is joined.
        let ahead = std::sync::Arc::try_unwrap(self.ready)
            .ok()
            .and_then(std::sync::OnceLock::into_inner);
        let (ledger, index, zone, previous) = match ahead {
            Some(a) => (a.ledger, a.index, Some(a.zone), a.previous),
            None => (None, None, None, None),
        };
        let (file, restored, from_ahead) = lock.restore_telling(ledger);
        let zone = zone.unwrap_or_else(|| polis_zone(root));
        let previous = previous.unwrap_or_else(|| read_previous_stats(root));
        let index = index.filter(|_| from_ahead);
        let replayed = replayed.filter(|_| from_ahead);
        let ahead = AheadWork { index, replayed };
        reconcile_listed(root, writer, file, restored, ahead, listing, zone, previous)
    }
}

/// The ledger's settlements replayed in the order a full reconcile would replay them, as if
/// every record is kept: how many, and the last record of that order.
struct Replayed {
    replay: Replay,
    count: usize,
    last: Option<usize>,
}

/// A record to be read again whatever its file is counted too: the end keeps the replay when
/// the read finds the settlement the record holds.
fn replay_ahead(records: &Records) -> Replayed {
    let settled: Vec<usize> = (0..records.len())
        .filter(|&i| records.has_settlement(i))
        .collect();
    let view = |k: usize| {
        records
            .settlement(settled[k])
            .expect("kept for its settlement")
    };
    let order = stats::replay_places(settled.len(), |k| records.replay_key(settled[k]), view);
    let mut replay = Replay::default();
    let mut lists = TagLists::default();
    for &(_, k) in &order {
        replay.push(&view(k), &mut lists);
    }
    Replayed {
        replay,
        count: settled.len(),
        last: order.last().map(|&(_, k)| settled[k]),
    }
}

/// Whether every settlement of `fresh` (none sorting before another in `fresh`'s order) can
/// follow the replay ahead: none sorts before its `last` record in replay order. One that
/// ties with it, settled at the same instant with the same owner, tags, quality and minutes,
/// counts the same either side of it when its date is the same too.
fn follows(held: &Records, last: Option<usize>, fresh: &[SettlementView<'_>]) -> bool {
    let Some(last) = last else { return true };
    let Some(l) = held.settlement(last) else {
        return false;
    };
    let last_key = held.replay_key(last);
    fresh.iter().all(|f| {
        match stats::replay_key(f)
            .cmp(&last_key)
            .then_with(|| stats::replay_order_of_views(f, &l))
        {
            std::cmp::Ordering::Greater => true,
            std::cmp::Ordering::Equal => f.last_completed == l.last_completed,
            std::cmp::Ordering::Less => false,
        }
    })
}

/// What the thread that read the ledger made of it for the end, when the ledger it read is the
/// one the lock holds.
struct AheadWork {
    index: Option<NameIndex>,
    replayed: Option<Replayed>,
}

fn join<T>(handle: ScopedJoinHandle<'_, T>) -> T {
    handle
        .join()
        .unwrap_or_else(|e| std::panic::resume_unwind(e))
}

fn settled_prefix() -> String {
    format!("{}/", ContractFolder::Settled.dir())
}

/// The settled folder's names and fingerprints, every file stat'ed on every core as the folder
/// is read, each chunk matched against the ledger's records on its thread once they are read.
fn list_settled(root: &Path, ready: &Ready) -> Listing<Matched> {
    let wait = std::env::var_os(MATCH_WHILE_LISTING_ENV).is_some();
    let then = |names: &ListedNames, now: &[Option<Fingerprint>]| {
        let ahead = if wait {
            Some(ready.wait())
        } else {
            ready.get()
        }?;
        let records = ahead.records().filter(|r| r.len() < KEPT as usize)?;
        Some(match_chunk(records, ahead.index.as_ref()?, names, now))
    };
    crate::fs::state::listed_fingerprints_then(
        root,
        ContractFolder::Settled.dir(),
        ".md",
        &mut Vec::new(),
        &then,
    )
}

/// Where a record of the reconciled folder is: kept from the ledger, or read again.
#[derive(Debug, Clone, Copy)]
enum Place {
    Held(usize),
    Fresh(usize),
}

/// The rest of [`AloneReconcile::finish`], with the lock held and the folder listed: each
/// record checked against its file's fingerprint, the rest read, the stats written, the
/// changes journalled. `index` is given when the chunks' matches were made against these
/// records.
#[allow(clippy::too_many_arguments)]
fn reconcile_listed(
    root: &Path,
    writer: &Writer,
    mut file: LedgerFile,
    restored: Restored,
    ahead: AheadWork,
    listing: Listing<Matched>,
    zone: PolisZone,
    previous: Value,
) -> Result<Option<(Reconciled, LedgerUse)>, ActionError> {
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
    // file the ledger holds with the fingerprint it records, and not marked to be read again
    // (for findings, which are not stored, or a change too recent to tell), is kept; the rest
    // is read. Most chunks were matched as they were stat'ed.
    let prefix = settled_prefix();
    let AheadWork { index, replayed } = ahead;
    let matched_ahead = index.is_some() && trusted;
    let by_name = match index {
        Some(index) if trusted => index,
        _ => NameIndex::new(&held, &prefix),
    };
    let mut listed = vec![false; held.len()];
    let mut kept = vec![false; held.len()];
    let mut to_read: Vec<(Option<usize>, String)> = Vec::new();
    for (names, now, matched) in listing.chunks() {
        let here;
        let matched = match matched.filter(|_| matched_ahead) {
            Some(m) => m,
            None => {
                here = match_chunk(&held, &by_name, names, now);
                &here
            }
        };
        for (name, &m) in names.iter().zip(matched) {
            if m == UNKNOWN {
                to_read.push((None, format!("{prefix}{name}")));
                continue;
            }
            let i = (m & !KEPT) as usize;
            listed[i] = true;
            if m & KEPT != 0 {
                kept[i] = true;
            } else {
                to_read.push((Some(i), held.path(i).to_string()));
            }
        }
    }
    let mut changes: Vec<Result<SettledRecord, String>> = listed
        .iter()
        .enumerate()
        .filter(|(_, listed)| !**listed)
        .map(|(i, _)| Err(held.path(i).to_string()))
        .collect();
    let reads = snapshot::par_map(&to_read, |(_, rel)| read_settled(root, rel, zone));
    // Taken after every read's stat: a file changed too recently to be told from a later
    // change by its fingerprint is read again by the next look (no watcher sees that change).
    let read_at = crate::fs::state::read_instant();
    let read_count = to_read.len();
    // Each file read, with whether the replay ahead counted its settlement as it is (a record
    // read again, for its findings or its recent change, that holds what it held).
    let mut fresh: Vec<(SettledRecord, bool)> = Vec::with_capacity(read_count);
    let mut counted_ahead = kept.clone();
    for ((at, rel), read) in to_read.into_iter().zip(reads) {
        let before = at.map(|i| held.get(i));
        let Some(read) = read else {
            if before.is_some() {
                changes.push(Err(rel));
            }
            continue;
        };
        let mut record = SettledRecord::of(
            &rel,
            &read.fingerprint,
            !read.findings.is_empty() || read.fingerprint.may_change_unseen(read_at),
            read.settlement.as_ref().map(Settlement::view),
        );
        record.unannounced = match &before {
            Some(b) => b.unannounced,
            None if trusted => true,
            None => !known.contains(&rel),
        };
        // A file read again (for its findings or a recent change), unchanged and still marked,
        // needs no new line.
        if before != Some(record.as_ref()) {
            changes.push(Ok(record.clone()));
        }
        let same = before.is_some_and(|b| b.settlement == record.view());
        if let Some(i) = at.filter(|_| same) {
            counted_ahead[i] = true;
        }
        fresh.push((record, same));
    }
    fresh.sort_by(|a, b| a.0.path.cmp(&b.0.path));
    // The kept records (in path order already) and the fresh ones, merged in path order: the
    // order a full reconcile lists them in, as places in `held` or `fresh`.
    let mut order: Vec<Place> = Vec::with_capacity(held.len() + fresh.len());
    let mut next_fresh = fresh.iter().enumerate().peekable();
    for i in (0..held.len()).filter(|&i| kept[i]) {
        let path = held.path(i);
        while let Some((f, _)) = next_fresh.next_if(|(_, f)| f.0.path.as_str() <= path) {
            order.push(Place::Fresh(f));
        }
        order.push(Place::Held(i));
    }
    order.extend(next_fresh.map(|(f, _)| Place::Fresh(f)));
    let record = |at: Place| match at {
        Place::Held(i) => held.get(i),
        Place::Fresh(f) => fresh[f].0.as_ref(),
    };
    let settlement = |at: Place| match at {
        Place::Held(i) => held.settlement(i),
        Place::Fresh(f) => fresh[f].0.view(),
    };
    let files = order.len();
    // The settlements the replay ahead did not count, in their order among themselves (their
    // places are in path order).
    let fresh_settled: Vec<SettlementView<'_>> = fresh
        .iter()
        .filter(|(_, counted)| !counted)
        .filter_map(|(f, _)| f.view())
        .collect();
    let fresh_order = stats::replay_places(
        fresh_settled.len(),
        |k| stats::replay_key(&fresh_settled[k]),
        |k| fresh_settled[k],
    );
    let fresh_settled: Vec<SettlementView<'_>> =
        fresh_order.iter().map(|&(_, k)| fresh_settled[k]).collect();
    // The replay made ahead holds when every record it counted is here with the settlement it
    // counted and the new settlements follow it; else the whole replay is done now, over every
    // settlement's place.
    let ahead = replayed.filter(|r| {
        trusted && counted_ahead.iter().all(|&c| c) && follows(&held, r.last, &fresh_settled)
    });
    let settled: Vec<Place> = match ahead {
        Some(_) => Vec::new(),
        None => order
            .iter()
            .copied()
            .filter(|&at| match at {
                Place::Held(i) => held.has_settlement(i),
                Place::Fresh(f) => fresh[f].0.settlement.is_some(),
            })
            .collect(),
    };
    let replayed_count = match &ahead {
        Some(r) => r.count + fresh_settled.len(),
        None => settled.len(),
    };
    let key = |at: Place| match at {
        Place::Held(i) => held.replay_key(i),
        Place::Fresh(f) => fresh[f]
            .0
            .view()
            .map_or(i64::MIN, |s| stats::replay_key(&s)),
    };
    let done = reconcile_over(
        root,
        writer,
        replayed_count,
        &previous,
        |rate, last| match ahead {
            Some(Replayed { mut replay, .. }) => {
                let mut lists = TagLists::default();
                for f in &fresh_settled {
                    replay.push(f, &mut lists);
                }
                replay.finish(rate, last)
            }
            None => stats::reconcile_each(
                settled.len(),
                |i| key(settled[i]),
                |i| settlement(settled[i]).expect("kept for its settlement"),
                rate,
                last,
            ),
        },
    )?;
    drop(settled);
    // After the stats: a ledger that misses a change only costs the next look a read.
    let journalled = if trusted && !file.snapshot_due(files, changes.len()) {
        file.append(changes)
    } else {
        file.write_snapshot(zone_seconds, order.iter().map(|&at| record(at)))
    };
    if let Err(e) = journalled {
        tracing::warn!("could not record the settled contracts in polisd's state folder: {e}");
    }
    let used = if trusted {
        LedgerUse::Incremental { read: read_count }
    } else {
        LedgerUse::Full
    };
    drop_aside((held, by_name, listing, fresh, order));
    Ok(Some((done, used)))
}

/// Drops `value` on a thread of its own. The ledger's records and the listing are freed beside
/// a settle's last steps, not before them: a one-shot command ends without waiting for 10k
/// records to be freed (about 0.15 ms of its serial tail), and a long-lived caller (the MCP
/// server) gets the memory back all the same.
fn drop_aside<T: Send + 'static>(value: T) {
    // Should no thread start, `value` is dropped here, by the failed spawn.
    let _ = std::thread::Builder::new()
        .name("polisd-drop".to_string())
        .spawn(move || drop(value));
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
pub fn current_stats(polis: &Polis) -> crate::protocol::routing::stats::RoutingStats {
    crate::protocol::routing::stats::from_value(&read_previous_stats(&polis.root))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::state::SettledRecord;
    use chrono::NaiveDate;

    struct Made {
        owner: &'static str,
        tags: Vec<String>,
        minute: u32,
        quality: u8,
        date: &'static str,
    }

    fn made(owner: &'static str, tag: &str, minute: u32, quality: u8) -> Made {
        Made {
            owner,
            tags: vec![tag.to_string(), "shared".to_string()],
            minute,
            quality,
            date: "2026-03-01",
        }
    }

    fn view(m: &Made) -> SettlementView<'_> {
        SettlementView {
            owner: m.owner,
            tags: &m.tags,
            instant: NaiveDate::from_ymd_opt(2026, 3, 1)
                .unwrap()
                .and_hms_opt(10, m.minute, 0),
            when_text: "",
            last_completed: Some(m.date),
            quality: m.quality,
            quality_defaulted: false,
            minutes: 30.0,
            recommended: None,
            guarded: false,
            renamed: false,
        }
    }

    fn records(held: &[(&str, Made)]) -> Records {
        let owned: Vec<SettledRecord> = held
            .iter()
            .map(|(name, m)| {
                let path = format!("contracts/settled/{name}.md");
                SettledRecord::of(&path, &Fingerprint::default(), false, Some(view(m)))
            })
            .collect();
        Records::from_refs(owned.iter().map(SettledRecord::as_ref))
    }

    /// What the end makes with the replay ahead (`None` when it does not hold) and what a
    /// whole replay of every settlement in path order makes.
    fn both(held: &[(&str, Made)], fresh: &[(&str, Made)]) -> (Option<RoutingStats>, RoutingStats) {
        let records = records(held);
        let fresh_views: Vec<SettlementView<'_>> = fresh.iter().map(|(_, m)| view(m)).collect();
        let ahead = replay_ahead(&records);
        let continued = follows(&records, ahead.last, &fresh_views).then(|| {
            let mut replay = ahead.replay;
            let mut lists = TagLists::default();
            for f in &fresh_views {
                replay.push(f, &mut lists);
            }
            replay.finish(&Value::Null, &Value::Null)
        });
        let mut all: Vec<(&str, SettlementView<'_>)> = held
            .iter()
            .map(|(n, m)| (*n, view(m)))
            .chain(fresh.iter().map(|(n, m)| (*n, view(m))))
            .collect();
        all.sort_by(|a, b| a.0.cmp(b.0));
        let views: Vec<SettlementView<'_>> = all.into_iter().map(|(_, v)| v).collect();
        (
            continued,
            stats::reconcile_views(&views, &Value::Null, &Value::Null),
        )
    }

    use crate::protocol::routing::stats::RoutingStats;

    #[test]
    fn a_settlement_after_the_ledgers_is_added_to_the_replay_made_ahead() {
        let held = [
            ("a", made("alice-agent", "py", 3, 4)),
            ("c", made("bob-agent", "py", 1, 2)),
            ("b", made("carol-agent", "go", 2, 5)),
        ];
        let (ahead, whole) = both(&held, &[("aa", made("dave-agent-1", "go", 4, 3))]);
        assert_eq!(ahead.as_ref(), Some(&whole));
    }

    #[test]
    fn a_settlement_before_the_ledgers_last_is_replayed_whole() {
        let held = [
            ("a", made("alice-agent", "py", 3, 4)),
            ("b", made("bob-agent", "py", 5, 2)),
        ];
        let (ahead, _) = both(&held, &[("c", made("carol-agent", "py", 4, 3))]);
        assert_eq!(ahead, None);
    }

    /// At the last one's instant: after it in the whole order (a greater owner), or equal to
    /// it in all that counts, counts the same either side of it; a smaller owner or another
    /// date does not follow.
    #[test]
    fn a_settlement_at_the_ledgers_last_instant_follows_only_where_it_counts_the_same() {
        let held = [
            ("m", made("alice-agent", "py", 1, 4)),
            ("n", made("bob-agent", "py", 5, 2)),
        ];
        let (ahead, whole) = both(&held, &[("z", made("carol-agent", "py", 5, 3))]);
        assert_eq!(ahead.as_ref(), Some(&whole));
        // Equal in everything but the place, and before it by place.
        let (ahead, whole) = both(&held, &[("a", made("bob-agent", "py", 5, 2))]);
        assert_eq!(ahead.as_ref(), Some(&whole));
        let (ahead, _) = both(&held, &[("a", made("alice-agent", "py", 5, 2))]);
        assert_eq!(ahead, None);
        let mut other_date = made("bob-agent", "py", 5, 2);
        other_date.date = "2026-02-28";
        let (ahead, _) = both(&held, &[("a", other_date)]);
        assert_eq!(ahead, None);
    }

    #[test]
    fn a_record_to_be_read_again_is_replayed_ahead_with_the_rest() {
        let (m, n) = (
            made("alice-agent", "py", 1, 4),
            made("bob-agent", "py", 2, 2),
        );
        let owned = [
            SettledRecord::of(
                "contracts/settled/a.md",
                &Fingerprint::default(),
                true,
                Some(view(&m)),
            ),
            SettledRecord::of(
                "contracts/settled/b.md",
                &Fingerprint::default(),
                false,
                Some(view(&n)),
            ),
        ];
        let records = Records::from_refs(owned.iter().map(SettledRecord::as_ref));
        let ahead = replay_ahead(&records);
        assert_eq!((ahead.count, ahead.last), (2, Some(1)));
        let whole = stats::reconcile_views(&[view(&m), view(&n)], &Value::Null, &Value::Null);
        assert_eq!(ahead.replay.finish(&Value::Null, &Value::Null), whole);
    }
}
