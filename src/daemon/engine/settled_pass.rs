//! Settled contracts (SPEC §6): an in-memory cache keyed by each file's fingerprint, an
//! incremental ledger of their settlements, and the reconcile that renders it, so a settlement
//! re-reads one file, not ten thousand.

use super::{Engine, Pass, Scope};
use crate::fs::snapshot::{self, Polis};
use crate::fs::state::{Fingerprint, ListedNames, RecordRef, Restored, SettledRecord};
use crate::fs::writer::WriteOutcome;
use crate::operations::{self, read_settled, SettledRead};
use crate::protocol::clock::PolisZone;
use crate::protocol::contracts::contract::Heading;
use crate::protocol::delivery::inbox::Notification;
use crate::protocol::finding::Code;
use crate::protocol::layout::{self, ContractFolder};
use crate::protocol::routing::stats::{Ledger, Settlement};
use std::collections::{BTreeSet, HashSet};

/// How many settled files are read (in parallel) before what they said is put in the ledger.
const READ_CHUNK: usize = 4096;

/// What a pass must look at in `contracts/settled/`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum SettledRefresh {
    /// Nothing there changed.
    Nothing,
    /// Only these files (relative paths) may have changed: stat them, not the folder.
    Paths(BTreeSet<String>),
    /// List the folder and stat every file (start-up, rescans, a folder-level event).
    Full,
}

impl SettledRefresh {
    pub(super) fn add(&mut self, rel: &str) {
        let Some(name) = rel.strip_prefix("contracts/settled/") else {
            if rel != layout::ROUTING_STATS && Scope::of_path(rel).settled {
                *self = SettledRefresh::Full;
            }
            return;
        };
        let plain = !name.contains('/') && !name.contains('\u{FFFD}');
        match self {
            SettledRefresh::Full => {}
            _ if !plain => *self = SettledRefresh::Full,
            SettledRefresh::Nothing => *self = SettledRefresh::Paths(BTreeSet::from([rel.into()])),
            SettledRefresh::Paths(paths) => {
                paths.insert(rel.to_string());
            }
        }
    }
}

/// The ledger of an earlier run as the first pass takes it: decoded and built, possibly on a
/// thread of its own ([`Engine::start_preparing_settled`]). Made once per run: the size of
/// the ledger inline costs nothing.
#[allow(clippy::large_enum_variant)]
pub(super) enum PreparedSettled {
    Nothing,
    Untrusted {
        reason: String,
        recorded: Vec<String>,
    },
    Records {
        zone_seconds: i32,
        count: usize,
        /// The records counted (all but those a command left unannounced).
        ledger: Ledger<Fingerprint>,
        /// The slots of those to read again before they are trusted (they had findings, which
        /// are not stored, or a command read them too soon after a change for their
        /// fingerprints to tell the next). Held in the ledger meanwhile, so the read changes
        /// nothing there when the file says what it said.
        unverified: SlotSet,
    },
}

/// Slots of a [`Ledger`], a bit each (a restart may have a million to read again).
#[derive(Debug, Default)]
pub(super) struct SlotSet(Vec<u64>);

impl SlotSet {
    fn insert(&mut self, slot: u32) {
        let (word, bit) = (slot as usize / 64, slot % 64);
        if self.0.len() <= word {
            self.0.resize(word + 1, 0);
        }
        self.0[word] |= 1 << bit;
    }

    fn remove(&mut self, slot: u32) {
        if let Some(word) = self.0.get_mut(slot as usize / 64) {
            *word &= !(1 << (slot % 64));
        }
    }

    pub(super) fn contains(&self, slot: u32) -> bool {
        self.0
            .get(slot as usize / 64)
            .is_some_and(|word| word & (1 << (slot % 64)) != 0)
    }
}

impl PreparedSettled {
    fn of(restored: Restored) -> PreparedSettled {
        match restored {
            Restored::Nothing => PreparedSettled::Nothing,
            Restored::Untrusted { reason, recorded } => {
                PreparedSettled::Untrusted { reason, recorded }
            }
            Restored::Records {
                zone_seconds,
                records,
            } => {
                let count = records.len();
                // A record a command made for a file no daemon counted yet is not trusted as
                // known: the file is read again and announced as a new settlement.
                let ledger = Ledger::restore(
                    records
                        .iter()
                        .filter(|r| !r.unannounced)
                        .map(|r| (r.path, r.fingerprint, r.settlement)),
                );
                let mut unverified = SlotSet::default();
                for r in records.iter().filter(|r| r.reread && !r.unannounced) {
                    if let Some(slot) = ledger.slot(r.path) {
                        unverified.insert(slot);
                    }
                }
                PreparedSettled::Records {
                    zone_seconds,
                    count,
                    ledger,
                    unverified,
                }
            }
        }
    }
}

/// Where the prepared ledger is coming from.
pub(super) enum Preparing {
    Thread(std::thread::JoinHandle<(PreparedSettled, usize)>),
    Inline(Option<crate::fs::state::SettledSource>),
}

/// The settled files' paths, unsorted (a sort of 100k paths would cost a restart more than
/// anything it orders), in one buffer (a `String` each was 72 MB at 1M files); the listing's
/// findings go to `findings`.
fn list_settled(
    root: &std::path::Path,
    findings: &mut Vec<crate::protocol::finding::Finding>,
) -> ListedNames {
    let dir = ContractFolder::Settled.dir();
    let mut out = ListedNames::default();
    let mut path = String::new();
    snapshot::list_names_each(root, dir, ".md", findings, &mut |name| {
        path.clear();
        path.push_str(dir);
        path.push('/');
        path.push_str(&name);
        out.push(&path);
    });
    out
}

/// The most vanished settled paths remembered (see `Engine::settled_gone`).
const MAX_GONE: usize = 200_000;

impl Engine {
    pub(super) fn stats_file_hash(&self) -> Option<String> {
        snapshot::read_regular(&self.root.join(layout::ROUTING_STATS))
            .map(|bytes| crate::protocol::digest::sha256_hex(&bytes))
    }

    /// Whether nothing at all is where `routing_stats.yml` belongs while there are settlements
    /// to write: it is rebuilt then, whatever the last reconcile left (a folder or a link put
    /// in its place, refused, then removed).
    fn stats_file_missing(&self) -> bool {
        !self.ledger.is_empty()
            && std::fs::symlink_metadata(self.root.join(layout::ROUTING_STATS))
                .is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound)
    }

    /// Rebuilds `routing_stats.yml` from the ledger when the cache changed, on the first pass,
    /// or when the pass concerns settled/ and the stats file is not what the last reconcile
    /// left. A settled/ event whose file did not change (an event split across two batches, a
    /// replayed event) needs no second reconcile. A changed cache always counts, whatever the
    /// scope: a settlement absorbed by a pass without the settled scope (its own event lost to
    /// a queue overflow) would otherwise never be reconciled. The stats file is read (and
    /// hashed) only when the pass concerns settled/.
    pub(super) fn reconcile_step(&mut self, pass: &mut Pass, scope: Scope) {
        let needed = !self.warmed
            || pass.settled_changed
            || (scope.settled && self.stats_file_hash() != self.stats_hash)
            || self.stats_file_missing();
        if !needed {
            return;
        }
        if self.held_by_git() {
            // Rendered in the catch-up: a hash no file has makes it look again.
            self.stats_hash = None;
            return;
        }
        let ledger = &mut self.ledger;
        let replayed = ledger.len();
        // Kept for `Engine::published` whether or not anyone reads it yet (a few rows per tag):
        // publishing may be switched on after the last reconcile.
        let mut rendered = None;
        let done =
            operations::reconcile_with(&pass.polis.root, &self.writer, replayed, |rate, last| {
                let stats = ledger.stats(rate, last);
                rendered = Some(stats.clone());
                stats
            });
        if let Some(stats) = rendered {
            self.published_stats = std::sync::Arc::new(stats);
        }
        match done {
            Ok(done) => {
                // From the rendered bytes: re-reading could pick up an edit made since.
                self.stats_hash = match &done.stats_sha256 {
                    Some(hash) => Some(hash.clone()),
                    None => self.stats_file_hash(),
                };
                self.state.counters.reconciles += 1;
                if done.outcome == Some(WriteOutcome::Written) {
                    self.state.counters.writes += 1;
                    let new: Vec<&str> = pass
                        .new_settled
                        .iter()
                        .map(|(rel, _)| rel.as_str())
                        .take(5)
                        .collect();
                    let cause = if new.is_empty() {
                        format!(
                            "the settled contracts changed ({} settlements replayed)",
                            done.replayed
                        )
                    } else {
                        format!(
                            "{} settled ({} settlements replayed)",
                            new.join(", "),
                            done.replayed
                        )
                    };
                    self.log_activity("wrote", Some(layout::ROUTING_STATS), cause);
                    tracing::info!(
                        settlements = done.replayed,
                        "reconciled: routing_stats.yml rebuilt"
                    );
                } else {
                    tracing::info!(
                        settlements = done.replayed,
                        "reconciled: routing_stats.yml unchanged"
                    );
                }
            }
            Err(e) => {
                // The settled cache is already up to date, so the retry must not take the
                // stats file's unchanged bytes for a completed reconcile.
                self.stats_hash = None;
                pass.errors.push(format!("reconcile: {e}"));
            }
        }
    }

    /// Brings the ledger up to date with `contracts/settled/`; returns the settled files that
    /// are new since polisd last recorded them (with what their notices need), and whether the
    /// ledger changed. On the first pass the ledger is restored from the state's snapshot and
    /// every listed file is checked against its fingerprint: only a file that changed (or one
    /// the snapshot does not vouch for) is read.
    pub(super) fn refresh_settled(
        &mut self,
        polis: &mut Polis,
        refresh: SettledRefresh,
    ) -> (Vec<(String, Heading)>, bool) {
        let zone = polis.settings.timezone;
        let mut changed = false;
        let mut refresh = refresh;
        let root = self.root.clone();
        // The first look after a restart: the folder is listed and every file stat'ed (on
        // every core) while the ledger of the earlier run may still be decoding on its own
        // thread. After the watches are registered, as every stat must be.
        let mut early: Option<(ListedNames, Vec<Option<Fingerprint>>)> = None;
        // Not on a first meeting: with no ledger to check, every file is read (which stats it)
        // and stat'ing them all first would be wasted.
        if self.settled_zone.is_none()
            && self.settled_preparing.is_some()
            && self.state.first_met.is_some()
        {
            let entries = list_settled(&root, &mut polis.findings);
            let listed: Vec<&str> = entries.iter().collect();
            let stats =
                crate::fs::state::fingerprints_in(&root, ContractFolder::Settled.dir(), &listed);
            drop(listed);
            early = Some((entries, stats));
        }
        if self.settled_zone != Some(zone) {
            changed = true;
            self.settled_findings.clear();
            self.settled_unverified = SlotSet::default();
            let before = std::mem::take(&mut self.ledger);
            if self.settled_zone.is_none() {
                self.restore_settled(zone);
            } else {
                // Instants depend on the zone: everything is read again, nothing announced.
                tracing::info!("the polis's timezone changed: reading every settled file again");
                self.settled_recorded
                    .extend(before.files().map(|(rel, _, _)| rel.to_string()));
                self.state.require_settled_snapshot();
            }
            self.settled_zone = Some(zone);
            refresh = SettledRefresh::Full;
        }
        if let SettledRefresh::Paths(_) = refresh {
            // The folder is checked once here, not for each file read below; a link in its
            // place turns this into a full look, which reports it and reads nothing.
            if snapshot::linked_folder(&self.root, ContractFolder::Settled.dir()).is_some() {
                refresh = SettledRefresh::Full;
            }
        }
        let full = matches!(refresh, SettledRefresh::Full);
        let (candidates, early_stats): (ListedNames, Option<Vec<Option<Fingerprint>>>) =
            match refresh {
                SettledRefresh::Nothing => return (Vec::new(), changed),
                SettledRefresh::Paths(paths) => (
                    paths
                        .iter()
                        .map(String::as_str)
                        .filter(|rel| {
                            let name = rel.rsplit('/').next().unwrap_or(rel);
                            name.ends_with(".md") && !layout::is_ignored_name(name)
                        })
                        .collect(),
                    None,
                ),
                SettledRefresh::Full => match early.take() {
                    Some((entries, stats)) => (entries, Some(stats)),
                    None => (list_settled(&root, &mut polis.findings), None),
                },
            };

        // What the ledger holds of each candidate (one lookup each), and each one's
        // fingerprint now: stat'ed above, or here (on every core) for those it holds. Read (in
        // parallel) those whose fingerprint moved, and those it does not hold (reading them
        // tells whether they are still there).
        let files_before = self.ledger.file_count();
        // The slot of each candidate the ledger holds (its fingerprint lies there).
        let held: Vec<Option<u32>> = candidates.iter().map(|rel| self.ledger.slot(rel)).collect();
        let matched = held.iter().filter(|w| w.is_some()).count();
        // Each held candidate's fingerprint now, in order: stat'ed above (one per candidate),
        // or here for the held ones only (none on a first meeting).
        let (mut early_stats, mut held_stats) = match early_stats {
            Some(stats) => (Some(stats.into_iter()), Vec::new().into_iter()),
            None => {
                let to_stat: Vec<&str> = candidates
                    .iter()
                    .zip(&held)
                    .filter_map(|(rel, w)| w.map(|_| rel))
                    .collect();
                let stats = crate::fs::state::fingerprints_in(
                    &root,
                    ContractFolder::Settled.dir(),
                    &to_stat,
                );
                (None, stats.into_iter())
            }
        };
        let mut to_read: Vec<usize> = Vec::new();
        for (i, held) in held.into_iter().enumerate() {
            let now = match &mut early_stats {
                Some(stats) => stats.next().flatten(),
                None if held.is_some() => held_stats.next().flatten(),
                None => None,
            };
            let Some((slot, was)) = held.and_then(|slot| Some((slot, *self.ledger.meta_at(slot)?)))
            else {
                to_read.push(i);
                continue;
            };
            let rel = candidates.get(i);
            // A file polisd could not read is tried again on every look: making it readable
            // (`chmod`, `chown`) may change nothing else the fingerprint holds. So is one an
            // earlier run asked to be read again.
            let read_anyway = self.settled_findings.has(slot, Code::Unreadable)
                || self.settled_unverified.contains(slot);
            // Nor does a file read in the tick of its change vouch for itself: a second write in
            // that tick leaves the fingerprint as it was.
            match now {
                None => changed |= self.forget_settled(rel),
                Some(fp) if !read_anyway && self.settled_racy.vouches(rel, &was, &fp) => {}
                Some(_) => to_read.push(i),
            }
        }
        // Held or recorded (by an earlier run), and no longer there: looked for only when the
        // listing does not account for every file the ledger holds.
        if full && (matched < files_before || !self.settled_recorded.is_empty()) {
            let listed: HashSet<&str> = candidates.iter().collect();
            let gone: Vec<String> = self
                .ledger
                .files()
                .map(|(rel, _, _)| rel)
                .chain(self.settled_recorded.iter().map(String::as_str))
                .filter(|rel| !listed.contains(*rel))
                .map(str::to_string)
                .collect();
            drop(listed);
            for rel in &gone {
                changed |= self.forget_settled(rel);
            }
        }
        // In path order (the listing is not): new settlements are announced in that order.
        to_read.sort_unstable_by(|a, b| candidates.get(*a).cmp(candidates.get(*b)));
        let mut new = Vec::new();
        // In chunks: what a file's read leaves (its text, its parse) is freed before the next
        // chunk is read, so a first meeting with 100k files does not hold them all at once.
        // With more than one chunk the next one is read (on every core) while this thread puts
        // the last one in the ledger: the ledger is ready as soon as the last file is read.
        // A chunk's paths are made as it is taken, not all at once.
        let chunks: std::collections::VecDeque<&[usize]> = to_read.chunks(READ_CHUNK).collect();
        let chunks = std::sync::Mutex::new(chunks);
        let next = || {
            let chunk = chunks.lock().ok().and_then(|mut c| c.pop_front())?;
            Some(
                chunk
                    .iter()
                    .map(|&i| candidates.get(i).to_string())
                    .collect::<Vec<String>>(),
            )
        };
        if chunks.lock().is_ok_and(|c| c.len() > 1) {
            std::thread::scope(|scope| {
                // One chunk read ahead at most: the memory a chunk's reads hold stays bounded.
                let (tx, rx) = std::sync::mpsc::sync_channel(1);
                let root = &root;
                let next = &next;
                let reader = std::thread::Builder::new()
                    .name("polisd-settled".into())
                    .spawn_scoped(scope, move || {
                        while let Some(chunk) = next() {
                            let read =
                                snapshot::par_map(&chunk, |rel| read_settled(root, rel, zone));
                            if tx.send((chunk, read)).is_err() {
                                break;
                            }
                        }
                    });
                if reader.is_ok() {
                    for (chunk, read) in rx {
                        changed |= self.absorb_settled(chunk, read, &mut new);
                    }
                }
            });
        }
        // One chunk, or no thread to be had: here, one chunk after the other.
        while let Some(chunk) = next() {
            let read = snapshot::par_map(&chunk, |rel| read_settled(&root, rel, zone));
            changed |= self.absorb_settled(chunk, read, &mut new);
        }
        if self.settled_recorded.is_empty() && self.settled_recorded.capacity() > 0 {
            self.settled_recorded = HashSet::new();
        }
        if full {
            // Every file it named was listed, and read or forgotten.
            self.settled_unverified = SlotSet::default();
        }
        (new, changed)
    }

    /// Puts what a chunk of settled files said into the ledger and the state's journal; the
    /// new settlements go to `new`. Whether the ledger changed.
    fn absorb_settled(
        &mut self,
        chunk: Vec<String>,
        read: Vec<Option<SettledRead>>,
        new: &mut Vec<(String, Heading)>,
    ) -> bool {
        let mut changed = false;
        // Taken after every read of the chunk (and so after its stats).
        let read_at = crate::fs::state::read_instant();
        for (rel, read) in chunk.into_iter().zip(read) {
            let Some(read) = read else {
                changed |= self.forget_settled(&rel);
                continue;
            };
            changed = true;
            let held = self.ledger.slot(&rel);
            // Counted once and gone since (the folder deleted and restored): not new either.
            let known = held.is_some()
                | self.settled_recorded.remove(&rel)
                | self.settled_gone.remove(&rel);
            if !known && self.state.first_met.is_some() {
                new.push((rel.clone(), read.heading.clone()));
            }
            let racy = self
                .settled_racy
                .note_read(&rel, &read.fingerprint, read_at);
            // An id reflection kept for the file was read from bytes that may not be these,
            // whatever the fingerprints say (a racily clean read): it is read again.
            self.renamed_ids.remove(&rel);
            let reread = racy || !read.findings.is_empty();
            // An earlier run's record that asked for this read, and that the read confirms
            // (the same bytes as far as the fingerprint tells, still to be read again next
            // time): the journal already says it.
            let confirmed = held.is_some_and(|slot| {
                self.settled_unverified.contains(slot)
                    && reread
                    && self.ledger.meta_at(slot) == Some(&read.fingerprint)
            });
            let record = SettledRecord::of(
                &rel,
                &read.fingerprint,
                reread,
                read.settlement.as_ref().map(Settlement::view),
            );
            let h = &read.heading;
            let authors = [h.owner.as_deref(), h.opened_by.as_deref()];
            let (recorded, findings_changed) = self.settled_findings.record(
                &mut self.ledger,
                &rel,
                read.fingerprint,
                read.settlement,
                read.findings,
                authors,
            );
            if findings_changed {
                for f in self
                    .settled_findings
                    .get(recorded.slot, &rel)
                    .unwrap_or_default()
                {
                    let (logged, left_out) = &mut self.settled_findings_logged;
                    if *logged < super::MAX_LOGGED_SETTLED_FINDINGS {
                        *logged += 1;
                        tracing::warn!("{f}");
                    } else {
                        *left_out += 1;
                    }
                }
            }
            if !confirmed || recorded.settlement_changed {
                self.state.settled_put(record);
            }
        }
        changed
    }

    /// Starts reading the ledger an earlier run left in the state folder on a thread of its
    /// own (decoding and building 100k records takes a while): called once the engine holds
    /// its locks, so it runs while the watches are registered; the first pass takes it.
    pub(super) fn start_preparing_settled(&mut self) {
        if self.settled_zone.is_some() || self.settled_preparing.is_some() {
            return;
        }
        let slot = std::sync::Arc::new(std::sync::Mutex::new(Some(self.state.settled_source())));
        let theirs = slot.clone();
        let spawned = std::thread::Builder::new()
            .name("polisd-ledger".into())
            .spawn(move || {
                let source = theirs.lock().ok().and_then(|mut s| s.take());
                let (restored, lines) = source.map(|s| s.read()).unwrap_or((Restored::Nothing, 0));
                (PreparedSettled::of(restored), lines)
            });
        self.settled_preparing = Some(match spawned {
            Ok(handle) => Preparing::Thread(handle),
            // No thread to be had: the first pass reads it itself.
            Err(_) => Preparing::Inline(slot.lock().ok().and_then(|mut s| s.take())),
        });
    }

    /// The prepared ledger (waiting for its thread), or read now.
    fn take_prepared_settled(&mut self) -> (PreparedSettled, usize) {
        let read = |source: Option<crate::fs::state::SettledSource>| {
            let (restored, lines) = source.map(|s| s.read()).unwrap_or((Restored::Nothing, 0));
            (PreparedSettled::of(restored), lines)
        };
        match self.settled_preparing.take() {
            Some(Preparing::Thread(handle)) => handle.join().unwrap_or_else(|_| {
                (
                    PreparedSettled::Untrusted {
                        reason: "reading it failed".to_string(),
                        recorded: Vec::new(),
                    },
                    0,
                )
            }),
            Some(Preparing::Inline(source)) => read(source),
            None => read(Some(self.state.settled_source())),
        }
    }

    /// Takes the ledger an earlier run left in the state folder, or, when there is none or it
    /// cannot be trusted, the paths it had counted (with one log line saying why every settled
    /// file is read again).
    fn restore_settled(&mut self, zone: PolisZone) {
        let zone_seconds = zone.0.local_minus_utc();
        let (prepared, journal_lines) = self.take_prepared_settled();
        self.state.settled_taken(
            matches!(prepared, PreparedSettled::Records { .. }),
            journal_lines,
        );
        match prepared {
            PreparedSettled::Nothing => {
                if self.state.first_met.is_some() {
                    tracing::warn!(
                        "no ledger of settled contracts in polisd's state folder: reading every settled file again"
                    );
                }
            }
            PreparedSettled::Untrusted { reason, recorded } => {
                tracing::warn!(
                    "the ledger of settled contracts in polisd's state folder is not used ({reason}): reading every settled file again"
                );
                self.settled_recorded.extend(recorded);
            }
            PreparedSettled::Records {
                zone_seconds: was,
                ledger,
                ..
            } if was != zone_seconds => {
                tracing::warn!(
                    "the ledger of settled contracts in polisd's state folder was computed at UTC{:+}s and the polis is now at UTC{:+}s: reading every settled file again",
                    was,
                    zone_seconds
                );
                self.settled_recorded
                    .extend(ledger.files().map(|(rel, _, _)| rel.to_string()));
                self.state.require_settled_snapshot();
            }
            PreparedSettled::Records {
                count,
                ledger,
                unverified,
                ..
            } => {
                self.ledger = ledger;
                self.settled_unverified = unverified;
                tracing::info!(
                    files = count,
                    "restored the ledger of settled contracts; checking each file's fingerprint"
                );
            }
        }
    }

    /// Rewrites the state's snapshot of the ledger when it is due (after a full read, or when
    /// its journal has grown past twice the snapshot). After `state.save()`, for the reason
    /// given there.
    pub(super) fn save_settled_snapshot(&mut self) {
        let Some(zone) = self.settled_zone else {
            return;
        };
        if !self.state.settled_snapshot_due(self.ledger.file_count()) {
            return;
        }
        let findings = &self.settled_findings;
        let racy = &self.settled_racy;
        let unverified = &self.settled_unverified;
        let ledger = &self.ledger;
        // Streamed to the file from the ledger in path order (its slots sorted, the encoded
        // body never held whole): the whole snapshot in memory, then the records' references,
        // were the peak of a first meeting.
        let mut order: Vec<u32> = ledger.files_in_slots().map(|(slot, ..)| slot).collect();
        order.sort_unstable_by(|a, b| ledger.path_at(*a).cmp(&ledger.path_at(*b)));
        let records = || {
            order.iter().filter_map(|&slot| {
                let (rel, fp, settlement) = ledger.file_at(slot)?;
                Some(RecordRef {
                    path: rel,
                    fingerprint: *fp,
                    reread: findings.contains(slot)
                        || racy.contains(rel)
                        || unverified.contains(slot),
                    unannounced: false,
                    settlement,
                })
            })
        };
        if let Err(e) = self
            .state
            .write_settled_snapshot_in_order(zone.0.local_minus_utc(), records)
        {
            // Only costs the next start-up a full read; the next pass tries again.
            tracing::warn!("could not save the ledger of settled contracts: {e}");
        }
    }

    /// Drops a settled file from the ledger and the state's record; whether it was held or
    /// recorded.
    pub(super) fn forget_settled(&mut self, rel: &str) -> bool {
        self.settled_racy.forget(rel);
        self.renamed_ids.remove(rel);
        self.state.settled_remove(rel);
        if let Some(slot) = self.ledger.slot(rel) {
            self.settled_unverified.remove(slot);
        }
        let was =
            self.settled_findings.forget(&mut self.ledger, rel) | self.settled_recorded.remove(rel);
        if was {
            if self.settled_gone.len() >= MAX_GONE {
                self.settled_gone.clear();
            }
            self.settled_gone.insert(rel.to_string());
        }
        was
    }

    /// `contract-settled` to the opener and `quality-defaulted` to the owner, for settlements
    /// that appeared since the last pass.
    pub(super) fn settled_notices(&self, new: &[(String, Heading)]) -> Vec<Notification> {
        let mut out = Vec::new();
        for (rel, e) in new {
            let Some(s) = self.ledger.get(rel) else {
                continue;
            };
            let id = layout::record_stem(rel);
            let title = e.title.clone().unwrap_or_else(|| id.to_string());
            // Stamped with the settlement (`settled_at`, else `opened_at`, SPEC §6).
            let at = s.instant.map(crate::protocol::delivery::inbox::time_stamp);
            if let Some(opener) = &e.opened_by {
                if opener != &s.owner {
                    out.push(
                        Notification::contract_settled(opener, id, &title, &s.owner, e.quality)
                            .caused_at(at.clone()),
                    );
                }
            }
            if s.quality_defaulted {
                out.push(Notification::quality_defaulted(&s.owner, id).caused_at(at));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::daemon::engine::Trigger;
    use crate::fs::state::{set_read_instant, LedgerFile};
    use std::time::{Duration, UNIX_EPOCH};

    const REL: &str = "contracts/settled/fix-login.md";

    fn settled(quality: u8) -> String {
        format!(
            "---\ncontract_id: fix-login\ntitle: Fix login\nopened_by: alice-dev\n\
             opened_at: 2026-05-01 09:00:00\nstatus: settled\nowner: bob-dev\n\
             required_tags: [python]\nsettled_at: 2026-05-02 10:00:00\n\
             quality_score: {quality}\nactual_minutes: 30\n---\n\n## Intent\n\nFix it.\n"
        )
    }

    fn fingerprint(root: &std::path::Path) -> Fingerprint {
        Fingerprint::of(&std::fs::symlink_metadata(root.join(REL)).unwrap())
    }

    /// Whether the state folder's ledger (of a daemon that stopped) marks [`REL`] to be read
    /// again.
    fn marked_in_state(state: &std::path::Path, root: &std::path::Path) -> bool {
        let (_, restored) = LedgerFile::open_in(state, root).unwrap().unwrap();
        let Restored::Records { records, .. } = restored else {
            panic!("no records: {restored:?}");
        };
        let marked = records.iter().any(|r| r.path == REL && r.reread);
        marked
    }

    /// A daemon that met three settled files sees a fourth arrive (quality 2), its read judged
    /// `after` the file's change, and stops; whether the state folder's ledger (its journal)
    /// marked the file to be read again. A restart reads it the same way and rewrites the
    /// snapshot, stops: whether the snapshot marked it. A third run then sees a same-size edit
    /// (quality 4) that the fingerprint cannot tell, made as a second write in the same clock
    /// tick would leave it (the ledger holds the file's new fingerprint with the old
    /// settlement): the quality it holds once the edit's event is handled.
    fn met_then_edited_in_the_same_tick(after: Duration) -> (bool, bool, u8) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("_polis");
        let state = dir.path().join("state");
        std::fs::create_dir_all(root.join("contracts/settled")).unwrap();
        std::fs::write(root.join("CONSTITUTION.md"), "# Constitution\n").unwrap();
        for other in ["a-1", "a-2", "a-3"] {
            let text = settled(3).replace("fix-login", other);
            std::fs::write(root.join(format!("contracts/settled/{other}.md")), text).unwrap();
        }
        let wall = chrono::Utc::now();
        let long_after = UNIX_EPOCH + Duration::from_secs(4_000_000_000);
        set_read_instant(Some(long_after));
        let mut engine = Engine::open_in(&root, &state, Engine::default_options()).unwrap();
        engine.handle(&Trigger::Rescan, wall).unwrap();
        std::fs::write(root.join(REL), settled(2)).unwrap();
        let read_after = |after: Duration| {
            set_read_instant(Some(fingerprint(&root).changed_at() + after));
        };
        read_after(after);
        let only_it = || SettledRefresh::Paths([REL.to_string()].into());
        engine.refresh_settled(&mut Polis::read(&root), only_it());
        engine.close();
        drop(engine);
        let in_journal = marked_in_state(&state, &root);
        let mut engine = Engine::open_in(&root, &state, Engine::default_options()).unwrap();
        engine.handle(&Trigger::Rescan, wall).unwrap();
        engine.state.require_settled_snapshot();
        engine.save_settled_snapshot();
        engine.close();
        drop(engine);
        let in_snapshot = marked_in_state(&state, &root);
        let mut engine = Engine::open_in(&root, &state, Engine::default_options()).unwrap();
        engine.handle(&Trigger::Rescan, wall).unwrap();
        let old = engine.ledger.get(REL);
        assert_eq!(old.as_ref().map(|s| s.quality), Some(2));
        std::fs::write(root.join(REL), settled(4)).unwrap();
        engine.ledger.record(REL, fingerprint(&root), old);
        // The edit's own read comes long after it.
        set_read_instant(Some(long_after));
        engine.refresh_settled(&mut Polis::read(&root), only_it());
        set_read_instant(None);
        let quality = engine.ledger.get(REL).map_or(0, |s| s.quality);
        (in_journal, in_snapshot, quality)
    }

    /// A restart holds the files an earlier run marked to be read again (here: their ids are
    /// not their names, a finding each) in the ledger while it reads them: their findings come
    /// back under their slots, nothing is announced, and a read that confirms the record adds
    /// nothing to the journal (with a million such files it was 120 MB of journal held at
    /// once). One edited since is journalled and counted as it reads now.
    #[test]
    fn a_restart_reads_files_with_findings_again_and_journals_only_what_changed() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("_polis");
        let state = dir.path().join("state");
        std::fs::create_dir_all(root.join("contracts/settled")).unwrap();
        std::fs::write(root.join("CONSTITUTION.md"), "# Constitution\n").unwrap();
        let renamed = ["b-1", "b-2", "b-3"].map(|n| format!("contracts/settled/{n}.md"));
        std::fs::write(root.join(REL), settled(3)).unwrap();
        for rel in &renamed {
            std::fs::write(root.join(rel), settled(3)).unwrap();
        }
        let wall = chrono::Utc::now();
        set_read_instant(Some(UNIX_EPOCH + Duration::from_secs(4_000_000_000)));
        let with_findings = |engine: &Engine| -> Vec<String> {
            let mut held: Vec<String> = engine
                .settled_findings
                .slots()
                .filter_map(|slot| engine.ledger.path_at(slot).map(str::to_string))
                .collect();
            held.sort();
            held
        };
        let ledger_bytes =
            |engine: &Engine| std::fs::read(engine.state.dir().join("settled.ledger")).unwrap();
        let mut engine = Engine::open_in(&root, &state, Engine::default_options()).unwrap();
        engine.handle(&Trigger::Rescan, wall).unwrap();
        assert_eq!(with_findings(&engine), renamed);
        engine.close();
        let written = ledger_bytes(&engine);
        drop(engine);
        for round in ["unchanged", "one edited"] {
            if round == "one edited" {
                std::fs::write(root.join(&renamed[1]), settled(5)).unwrap();
            }
            let mut engine = Engine::open_in(&root, &state, Engine::default_options()).unwrap();
            engine.handle(&Trigger::Rescan, wall).unwrap();
            assert_eq!(with_findings(&engine), renamed, "{round}");
            assert_eq!(engine.ledger.len(), 4, "{round}");
            let qualities: Vec<u8> = renamed
                .iter()
                .map(|rel| engine.ledger.get(rel).unwrap().quality)
                .collect();
            let outbox = engine.state.outbox.len();
            engine.close();
            let now = ledger_bytes(&engine);
            drop(engine);
            assert_eq!(outbox, 0, "{round}: nothing announced");
            if round == "unchanged" {
                assert_eq!(qualities, [3, 3, 3]);
                assert!(now == written, "confirmed records are not journalled again");
            } else {
                assert_eq!(qualities, [3, 5, 3]);
                assert!(now.len() > written.len(), "the edit is journalled");
                assert!(now.starts_with(&written));
            }
        }
        set_read_instant(None);
    }

    #[test]
    fn a_settled_file_read_in_the_tick_of_its_change_is_read_again_at_its_next_event() {
        // Read 5 ms after its change: a second write in that tick is seen at its event.
        let (in_journal, in_snapshot, quality) =
            met_then_edited_in_the_same_tick(Duration::from_millis(5));
        assert!(
            in_journal,
            "the journal must mark it for a restart or a command"
        );
        assert!(in_snapshot, "a snapshot must keep the mark");
        assert_eq!(quality, 4, "the edit's event must read the file again");
        // Control: read a minute after its change, the fingerprint vouches for the file
        // (which is why the case above needs the mark).
        let (in_journal, in_snapshot, quality) =
            met_then_edited_in_the_same_tick(Duration::from_secs(60));
        assert!(!in_journal && !in_snapshot);
        assert_eq!(quality, 2);
    }
}
