//! One polis on several machines, clones or worktrees (docs/sync.md): inbox conflict copies
//! merged, other conflict copies reported to the index keeper, contracts whose copies differ
//! between the repository's worktrees reported to the index keeper, and a merge driver named
//! in `.gitattributes` but missing from this clone's git config logged.
//!
//! The chronicle's own conflict copies are merged by the chronicle pass, before it reads.

use super::{Engine, Pass};
use crate::operations::sync::{self, CopyKind};
use crate::protocol::delivery::inbox::Notification;
use crate::protocol::finding::Finding;
use std::collections::BTreeSet;
use std::path::PathBuf;

/// What the sync pass keeps between passes.
#[derive(Debug, Default)]
pub(super) struct SyncCache {
    /// The same polis in the repository's other worktrees (worktree top, polis folder), as of
    /// the last start-up, rescan or timer pass: `git worktree list` is not run on every event.
    pub(super) worktrees: Vec<(PathBuf, PathBuf)>,
    /// This worktree's git dir, when the polis is in a repository (as of the same moments):
    /// where a rebase or merge stopped halfway shows.
    pub(super) git_dir: Option<PathBuf>,
    /// The sync findings last logged, by kind, so each is logged (and put in the status) once
    /// while it lasts.
    copies_logged: BTreeSet<String>,
    diverged_logged: BTreeSet<String>,
    driver_logged: Option<String>,
    /// The conflict copies the last conflict-copy step left in the polis (found and neither
    /// merged nor removed), (copy, original), sorted: published for the dashboard.
    pub(super) copies: std::sync::Arc<Vec<(String, String)>>,
    /// The episode of conflict copies polisd cannot merge, while one lasts.
    copies_episode: Option<Episode>,
    /// The episode of worktree divergences, while one lasts.
    diverged_episode: Option<Episode>,
}

/// A stretch of time during which a sync condition (conflict copies, diverging worktrees)
/// holds: told once, when the polis has been quiet for the settling window, with how many
/// states it went through; over when the condition clears (docs/sync.md).
#[derive(Debug)]
struct Episode {
    number: u64,
    changes: usize,
    last: String,
    told: bool,
}

/// Where the state folder keeps an episode kind's last number and whether it was told.
fn episode_keys(kind: &str) -> (String, String) {
    (
        format!("sync-episode/{kind}/last"),
        format!("sync-episode/{kind}/told"),
    )
}

impl Episode {
    /// Goes on with an episode (or starts one, numbered after the last one this polis had) for
    /// a condition now described by `now`. An episode told before a restart and still going
    /// is not told again.
    fn go_on(
        current: &mut Option<Episode>,
        kind: &str,
        now: String,
        known: &mut std::collections::BTreeMap<String, String>,
    ) {
        let (last_key, told_key) = episode_keys(kind);
        match current {
            Some(e) if e.last == now => {}
            Some(e) => {
                e.changes += 1;
                e.last = now;
            }
            None => {
                let last: u64 = known
                    .get(&last_key)
                    .and_then(|n| n.parse().ok())
                    .unwrap_or(0);
                let told = known.get(&told_key).and_then(|n| n.parse().ok());
                let number = told.unwrap_or(last + 1);
                known.insert(last_key, number.max(last).to_string());
                *current = Some(Episode {
                    number,
                    changes: 1,
                    last: now,
                    told: told.is_some(),
                });
            }
        }
    }

    /// Marks the episode told (kept across restarts).
    fn told(&mut self, kind: &str, known: &mut std::collections::BTreeMap<String, String>) {
        self.told = true;
        known.insert(episode_keys(kind).1, self.number.to_string());
    }

    /// The condition cleared: the episode is over.
    fn end(
        current: &mut Option<Episode>,
        kind: &str,
        known: &mut std::collections::BTreeMap<String, String>,
    ) {
        if let Some(e) = current.take() {
            tracing::info!(
                episode = e.number,
                changes = e.changes,
                "the {kind} episode is over"
            );
            known.remove(&episode_keys(kind).1);
        }
    }
}

impl SyncCache {
    /// Logs the findings of `now` not in `logged`, and keeps `now` as what is logged.
    fn log_new(
        logged: &mut BTreeSet<String>,
        now: &[Finding],
        state: &mut crate::fs::state::State,
    ) {
        let current: BTreeSet<String> = now.iter().map(|f| f.to_string()).collect();
        for f in now {
            if !logged.contains(&f.to_string()) {
                tracing::warn!("{f}");
                state.push_findings(std::iter::once(f));
            }
        }
        *logged = current;
    }
}

impl Engine {
    /// Looks again at what is slow to find: the worktrees and the merge driver's config. Run on
    /// start-up, rescans and the timer.
    pub(super) fn refresh_sync(&mut self) {
        let repo = crate::fs::git::Repo::find(&self.root);
        self.sync.git_dir = repo.as_ref().map(|r| r.git_dir.clone());
        self.sync.worktrees = repo
            .as_ref()
            .map(|r| sync::other_worktree_polises_in(r, &self.root))
            .unwrap_or_default();
        let found = crate::fs::git::driver_finding(&self.root);
        let text = found.as_ref().map(|f| f.to_string());
        if let Some(f) = found.filter(|_| text != self.sync.driver_logged) {
            tracing::warn!("{f}");
            self.state.push_findings(std::iter::once(&f));
        }
        self.sync.driver_logged = text;
    }

    /// Conflict copies (when the pass concerns them) and worktree divergences (when it
    /// concerns contracts and there are other worktrees).
    pub(super) fn sync_step(&mut self, pass: &mut Pass, copies: bool, contracts: bool) {
        if copies {
            self.conflict_copies_step(pass);
        }
        if contracts && !self.sync.worktrees.is_empty() {
            let divergences = sync::worktree_divergences(&self.root, &self.sync.worktrees);
            SyncCache::log_new(
                &mut self.sync.diverged_logged,
                &sync::divergence_findings(&divergences),
                &mut self.state,
            );
            let known = &mut self.state.known;
            if divergences.is_empty() {
                Episode::end(&mut self.sync.diverged_episode, "worktrees", known);
                return;
            }
            let described = format!("{divergences:?}");
            Episode::go_on(
                &mut self.sync.diverged_episode,
                "worktrees",
                described,
                known,
            );
            if !self.settling.is_quiet(std::time::Instant::now()) {
                // A race is still going on: told once the worktrees have been quiet.
                self.settling.wake_when_quiet();
                return;
            }
            let Some(episode) = self.sync.diverged_episode.as_mut().filter(|e| !e.told) else {
                return;
            };
            if let Some(keeper) = pass.polis.index_keeper.clone() {
                pass.sync_notices.push(Notification::worktree_diverged(
                    &keeper,
                    episode.number,
                    &divergences,
                    episode.changes,
                ));
                episode.told("worktrees", &mut self.state.known);
            }
        }
    }

    fn conflict_copies_step(&mut self, pass: &mut Pass) {
        let writes = self.derived_writes();
        let mut merged_any = false;
        let mut reported = Vec::new();
        let mut left = Vec::new();
        let mut unmerged = Vec::new();
        for copy in sync::conflict_copies(&self.root) {
            let merged = match copy.kind {
                // Held back (markers, not text): left for a person, and told like any other.
                _ if copy.held.is_some() => false,
                CopyKind::Chronicle => {
                    // The chronicle pass merges these; one still here is shown.
                    left.push((copy.copy, copy.original));
                    continue;
                }
                CopyKind::Inbox | CopyKind::Draft if writes => {
                    match sync::merge_copy(&self.writer, &self.root, &copy) {
                        Ok(Some(changed)) => {
                            tracing::info!(copy = %copy.copy, "merged a conflict copy");
                            self.state.counters.writes += 1;
                            merged_any |= changed;
                            true
                        }
                        Ok(None) => false,
                        Err(e) if e.is_not_settled() => {
                            // The owner is still writing the inbox: merged once it is settled,
                            // and the copy stays until its blocks are in.
                            tracing::debug!("{e}");
                            left.push((copy.copy.clone(), copy.original.clone()));
                            continue;
                        }
                        Err(e) => {
                            pass.errors.push(format!("merging {}: {e}", copy.copy));
                            left.push((copy.copy.clone(), copy.original.clone()));
                            continue;
                        }
                    }
                }
                CopyKind::Derived if writes => match self.writer.remove(&copy.copy) {
                    Ok(_) => {
                        tracing::info!(copy = %copy.copy, "removed a conflict copy of a generated file");
                        true
                    }
                    Err(e) => {
                        pass.errors.push(format!("removing {}: {e}", copy.copy));
                        left.push((copy.copy.clone(), copy.original.clone()));
                        continue;
                    }
                },
                _ => false,
            };
            if merged {
                continue;
            }
            left.push((copy.copy.clone(), copy.original.clone()));
            reported.push(sync::copy_finding(&copy));
            unmerged.push((copy.copy.clone(), copy.original.clone()));
        }
        SyncCache::log_new(&mut self.sync.copies_logged, &reported, &mut self.state);
        self.copies_episode(pass, unmerged);
        if *self.sync.copies != left {
            self.sync.copies = std::sync::Arc::new(left);
        }
        if merged_any {
            self.after_write(pass);
        }
    }
}

impl Engine {
    /// One notice per episode of conflict copies polisd cannot merge, once the polis has been
    /// quiet for the settling window: a transfer in flight leaves and removes copies of its
    /// own, and a sync that brings ten copies is one thing to look at, not ten.
    fn copies_episode(&mut self, pass: &mut Pass, unmerged: Vec<(String, String)>) {
        let known = &mut self.state.known;
        if unmerged.is_empty() {
            Episode::end(&mut self.sync.copies_episode, "copies", known);
            return;
        }
        Episode::go_on(
            &mut self.sync.copies_episode,
            "copies",
            format!("{unmerged:?}"),
            known,
        );
        if !self.settling.is_quiet(std::time::Instant::now()) {
            self.settling.wake_when_quiet();
            return;
        }
        let Some(episode) = self.sync.copies_episode.as_mut().filter(|e| !e.told) else {
            return;
        };
        if let Some(keeper) = pass.polis.index_keeper.clone() {
            // Stamped with the time the sync tool wrote into the first copy's name, if any.
            let at = unmerged
                .iter()
                .find_map(|(copy, _)| crate::protocol::layout::conflict_stamp(copy));
            pass.sync_notices.push(
                Notification::sync_conflicts(&keeper, episode.number, &unmerged).caused_at(at),
            );
            episode.told("copies", &mut self.state.known);
        }
    }
}

/// Whether `rel` is a file the daemon merges conflict copies into (an inbox, a proposed
/// amendment) with a sync conflict copy of it in the same folder. Reads that one folder only.
pub(super) fn has_conflict_copy_beside(root: &std::path::Path, rel: &str) -> bool {
    use crate::protocol::merge::{strategy_for, Strategy};
    if !matches!(strategy_for(rel), Strategy::Inbox | Strategy::Draft) {
        return false;
    }
    let (dir, name) = rel.rsplit_once('/').unwrap_or(("", rel));
    let Ok(entries) = std::fs::read_dir(root.join(dir)) else {
        return false;
    };
    entries.flatten().any(|e| {
        e.file_name().to_str().is_some_and(|n| {
            crate::protocol::layout::is_conflict_copy(n)
                && crate::protocol::layout::conflict_original(n).as_deref() == Some(name)
        })
    })
}
