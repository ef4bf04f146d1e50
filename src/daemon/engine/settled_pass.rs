//! Settled contracts (SPEC §6): an in-memory cache keyed by each file's fingerprint, an
//! incremental ledger of their settlements, and the reconcile that renders it, so a settlement
//! re-reads one file, not ten thousand.

use super::{rel_stem, Engine, Pass, Scope};
use crate::fs::snapshot::{self, Polis};
use crate::fs::state::Fingerprint;
use crate::fs::writer::WriteOutcome;
use crate::operations;
use crate::protocol::contract::Heading;
use crate::protocol::finding::Finding;
use crate::protocol::inbox::Notification;
use crate::protocol::layout::{self, ContractFolder};
use crate::protocol::stats::Ledger;
use std::collections::BTreeSet;
use std::path::Path;

/// One settled file as read in a pass.
#[derive(Debug)]
pub(super) struct SettledRead {
    fingerprint: Fingerprint,
    findings: Vec<Finding>,
    /// What its notices name, kept only for the pass that read it.
    heading: Heading,
    settlement: Option<crate::protocol::stats::Settlement>,
}

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

impl Engine {
    pub(super) fn stats_file_hash(&self) -> Option<String> {
        snapshot::read_regular(&self.root.join(layout::ROUTING_STATS))
            .map(|bytes| crate::fs::state::hex_sha256(&bytes))
    }

    /// Rebuilds `routing_stats.yml` from the ledger when the cache changed, on the first pass,
    /// or when the pass concerns settled/ and the stats file is not what the last reconcile
    /// left. A settled/ event whose file did not change (an event split across two batches, a
    /// replayed event) needs no second reconcile. A changed cache always counts, whatever the
    /// scope: a settlement absorbed by a pass without the settled scope (its own event lost to
    /// a queue overflow) would otherwise never be reconciled. The stats file is read (and
    /// hashed) only when the pass concerns settled/.
    pub(super) fn reconcile_step(&mut self, pass: &mut Pass, scope: Scope) {
        if self.warmed
            && !pass.settled_changed
            && !(scope.settled && self.stats_file_hash() != self.stats_hash)
        {
            return;
        }
        let ledger = &mut self.ledger;
        let replayed = ledger.len();
        let done =
            operations::reconcile_with(&pass.polis.root, &self.writer, replayed, |rate, last| {
                ledger.stats(rate, last)
            });
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
                    tracing::info!(settlements = done.replayed, "routing_stats.yml rebuilt");
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

    /// that are new since polisd last recorded them (with what their notices need), and
    /// whether the cache changed.
    pub(super) fn refresh_settled(
        &mut self,
        polis: &mut Polis,
        refresh: SettledRefresh,
    ) -> (Vec<(String, Heading)>, bool) {
        let zone = polis.settings.timezone;
        let mut changed = false;
        let mut refresh = refresh;
        if self.settled_zone != Some(zone) {
            // Instants depend on the zone: everything is read again.
            changed = true;
            self.settled.clear();
            self.settled_findings.clear();
            self.ledger = Ledger::new();
            self.settled_zone = Some(zone);
            refresh = SettledRefresh::Full;
        }
        let candidates: Vec<String> = match refresh {
            SettledRefresh::Nothing => return (Vec::new(), changed),
            SettledRefresh::Paths(paths) => paths
                .into_iter()
                .filter(|rel| {
                    let name = rel.rsplit('/').next().unwrap_or(rel);
                    name.ends_with(".md") && !layout::is_ignored_name(name)
                })
                .collect(),
            SettledRefresh::Full => {
                let dir = ContractFolder::Settled.dir();
                let mut listing_findings = Vec::new();
                let entries = snapshot::list(&self.root, dir, ".md", &mut listing_findings);
                polis.findings.extend(listing_findings);
                let listed: BTreeSet<String> = entries.into_iter().map(|e| e.rel).collect();
                // Cached or recorded (by an earlier run), and no longer there.
                let gone: BTreeSet<String> = self
                    .settled
                    .keys()
                    .chain(self.state.settled.keys())
                    .filter(|rel| !listed.contains(*rel))
                    .cloned()
                    .collect();
                for rel in &gone {
                    changed |= self.forget_settled(rel);
                }
                listed.into_iter().collect()
            }
        };

        // Stat each cached candidate; read (in parallel) those whose size or mtime moved, and
        // those not cached (reading them tells whether they are still there).
        let mut to_read = Vec::new();
        for rel in candidates {
            if !self.settled.contains_key(&rel) {
                to_read.push(rel);
                continue;
            }
            let meta = match std::fs::symlink_metadata(self.root.join(&rel)) {
                Ok(meta) => meta,
                Err(_) => {
                    changed |= self.forget_settled(&rel);
                    continue;
                }
            };
            let fresh = self.settled.get(&rel) == Some(&Fingerprint::of(&meta));
            if !fresh {
                to_read.push(rel);
            }
        }
        let root = self.root.clone();
        let read = snapshot::par_map(&to_read, |rel| read_settled(&root, rel, zone));
        let mut new = Vec::new();
        for (rel, read) in to_read.into_iter().zip(read) {
            let Some(read) = read else {
                changed |= self.forget_settled(&rel);
                continue;
            };
            changed = true;
            match read.settlement {
                Some(s) => self.ledger.insert(s),
                None => {
                    self.ledger.remove(&rel);
                }
            }
            if read.findings.is_empty() {
                self.settled_findings.remove(&rel);
            } else {
                self.settled_findings.insert(rel.clone(), read.findings);
            }
            if !self.state.settled.contains_key(&rel) && self.state.first_met.is_some() {
                new.push((rel.clone(), read.heading));
            }
            self.state.settled_put(&rel, read.fingerprint);
            self.settled.insert(rel, read.fingerprint);
        }
        (new, changed)
    }

    /// Drops a settled file from the cache, the ledger and the state's record; whether it was
    /// cached.
    pub(super) fn forget_settled(&mut self, rel: &str) -> bool {
        self.ledger.remove(rel);
        self.settled_findings.remove(rel);
        self.state.settled_remove(rel);
        self.settled.remove(rel).is_some()
    }

    /// `contract-settled` to the opener and `quality-defaulted` to the owner, for settlements
    /// that appeared since the last pass.
    pub(super) fn settled_notices(&self, new: &[(String, Heading)]) -> Vec<Notification> {
        let mut out = Vec::new();
        for (rel, e) in new {
            let Some(s) = self.ledger.get(rel) else {
                continue;
            };
            let id = rel_stem(rel);
            let title = e.title.clone().unwrap_or_else(|| id.to_string());
            if let Some(opener) = &e.opened_by {
                if opener != &s.owner {
                    out.push(Notification::contract_settled(
                        opener, id, &title, &s.owner, e.quality,
                    ));
                }
            }
            if s.quality_defaulted {
                out.push(Notification::quality_defaulted(&s.owner, id));
            }
        }
        out
    }
}

/// Reads one settled file; `None` when it is gone. The frontmatter is parsed once for all.
pub(super) fn read_settled(
    root: &Path,
    rel: &str,
    zone: crate::protocol::clock::PolisZone,
) -> Option<SettledRead> {
    let mut read = SettledRead {
        fingerprint: Fingerprint::default(),
        findings: Vec::new(),
        heading: Heading::default(),
        settlement: None,
    };
    let text = match snapshot::read_text_and_metadata(root, rel, Some(snapshot::MAX_RECORD_BYTES)) {
        Ok(Some((text, meta))) => {
            read.fingerprint = Fingerprint::of(&meta);
            text
        }
        Ok(None) => return None,
        Err(finding) => {
            let meta = std::fs::symlink_metadata(root.join(rel)).ok()?;
            read.fingerprint = Fingerprint::of(&meta);
            read.findings.push(finding);
            return Some(read);
        }
    };
    if let Some(f) = snapshot::conflict_markers(rel, &text) {
        read.findings = vec![f];
        return Some(read);
    }
    let record = match crate::protocol::frontmatter::parse(&text) {
        Ok(record) => record,
        Err(e) => {
            read.findings = vec![crate::protocol::contract::unreadable_frontmatter(rel, &e)];
            return Some(read);
        }
    };
    let settled = crate::protocol::contract::settlement_of(rel, &record, zone);
    read.findings = settled.findings;
    read.settlement = settled.settlement;
    read.heading = Heading::of(&record);
    Some(read)
}
