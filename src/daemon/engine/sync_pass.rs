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
    /// The sync findings last logged, by kind, so each is logged (and put in the status) once
    /// while it lasts.
    copies_logged: BTreeSet<String>,
    diverged_logged: BTreeSet<String>,
    driver_logged: Option<String>,
    /// The conflict copies the last conflict-copy step left in the polis (found and neither
    /// merged nor removed), (copy, original), sorted: published for the dashboard.
    pub(super) copies: std::sync::Arc<Vec<(String, String)>>,
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
        self.sync.worktrees = sync::other_worktree_polises(&self.root);
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
            if let Some(keeper) = pass.polis.index_keeper.clone() {
                for (id, copies) in &divergences {
                    pass.sync_notices
                        .push(Notification::worktree_diverged(&keeper, id, copies));
                }
            }
        }
    }

    fn conflict_copies_step(&mut self, pass: &mut Pass) {
        let writes = self.options.writer.writes();
        let mut merged_any = false;
        let mut reported = Vec::new();
        let mut left = Vec::new();
        for copy in sync::conflict_copies(&self.root) {
            let merged = match copy.kind {
                CopyKind::Chronicle => {
                    // The chronicle pass merges these; one still here is shown.
                    left.push((copy.copy, copy.original));
                    continue;
                }
                CopyKind::Inbox if writes => {
                    match sync::merge_inbox_copy(&self.writer, &self.root, &copy) {
                        Ok(Some(changed)) => {
                            tracing::info!(copy = %copy.copy, "merged an inbox conflict copy");
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
            if let Some(keeper) = pass.polis.index_keeper.clone() {
                // Stamped with the time the sync tool wrote into the copy's name, if any.
                pass.sync_notices.push(
                    Notification::sync_conflict(&keeper, &copy.copy, &copy.original)
                        .caused_at(crate::protocol::layout::conflict_stamp(&copy.copy)),
                );
            }
        }
        SyncCache::log_new(&mut self.sync.copies_logged, &reported, &mut self.state);
        if *self.sync.copies != left {
            self.sync.copies = std::sync::Arc::new(left);
        }
        if merged_any {
            self.after_write(pass);
        }
    }
}

/// Whether `rel` is an inbox (`citizens/<id>/inbox.md`) with a sync conflict copy of it in the
/// same folder. Reads that one folder only.
pub(super) fn has_conflict_copy_beside(root: &std::path::Path, rel: &str) -> bool {
    let Some(dir) = rel
        .strip_prefix("citizens/")
        .and_then(|r| r.strip_suffix("/inbox.md"))
    else {
        return false;
    };
    if dir.contains('/') {
        return false;
    }
    let Ok(entries) = std::fs::read_dir(root.join("citizens").join(dir)) else {
        return false;
    };
    entries.flatten().any(|e| {
        e.file_name().to_str().is_some_and(|n| {
            crate::protocol::layout::is_conflict_copy(n)
                && crate::protocol::layout::conflict_original(n).as_deref() == Some("inbox.md")
        })
    })
}
