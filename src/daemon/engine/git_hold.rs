//! Derived writes wait while a git operation is stopped halfway (docs/sync.md): a rebase, a
//! merge, a cherry-pick or a revert waiting for a person to resolve a conflict, or a bisect
//! waiting for their verdict on an older commit. Anything polisd
//! writes to a tracked file then is a change the person did not make: `git rebase --continue`
//! refuses it, or replays the next commit onto it and conflicts. The passes still read, and
//! hold their findings, notices and new settlements (`settling.rs`, `delivery.rs`, the state
//! folder, so that a restart meanwhile loses none of them); once the operation ends,
//! continued or aborted, one full pass catches up, writing, as every pass does, only what the
//! folder then calls for.
//!
//! Never decides anything from `.git/` by hand beyond the files `git status` looks for
//! (`fs::git::operation_in_progress`); never writes.

use super::{Engine, Pass};
use std::time::{Duration, Instant};

/// How often a held engine looks whether the operation ended: git's own state is outside
/// `_polis/`, so no watcher event tells it (a few `stat`s a look).
const LOOK_AGAIN: Duration = Duration::from_millis(500);

/// What the engine keeps while a git operation holds its writes back.
#[derive(Debug, Default)]
pub(super) struct GitHold {
    /// The operation the current pass found stopped, if any.
    op: Option<&'static str>,
    /// When to look again whether it ended: set by a pass that held writes back, cleared by the
    /// catch-up.
    look_at: Option<Instant>,
}

impl Engine {
    /// At the start of a pass: whether a git operation is stopped in this polis's worktree.
    pub(super) fn look_for_git_operation(&mut self) {
        let op = self
            .sync
            .git_dir
            .as_deref()
            .and_then(crate::fs::git::operation_in_progress);
        match (op, self.git_hold.op) {
            (Some(op), None) => tracing::info!(
                "a git {op} is stopped halfway: polisd's derived writes wait until it ends \
                 (continued or aborted; a bisect, reset)"
            ),
            (None, Some(op)) => tracing::info!("the git {op} ended: polisd catches up"),
            _ => {}
        }
        self.git_hold.op = op;
        if op.is_some() {
            self.git_hold.look_at = Some(Instant::now() + LOOK_AGAIN);
        }
    }

    /// Whether this pass may write what the rules derive: the configuration lets this machine
    /// write, and no git operation is stopped halfway.
    pub(super) fn derived_writes(&self) -> bool {
        self.options.writer.writes() && self.git_hold.op.is_none()
    }

    /// Whether writes are held back by a stopped git operation in this pass.
    pub(super) fn held_by_git(&self) -> bool {
        self.git_hold.op.is_some()
    }

    /// When the engine looks again whether the operation ended.
    pub(super) fn git_look_at(&self) -> Option<Instant> {
        self.git_hold.look_at
    }

    /// Whether the catch-up pass is due at `now`: a pass held writes back and the operation
    /// has since ended. Looked at no more often than [`LOOK_AGAIN`].
    pub(super) fn git_operation_ended(&mut self, now: Instant) -> bool {
        if self.git_hold.look_at.is_none_or(|at| at > now) {
            return false;
        }
        let stopped = self
            .sync
            .git_dir
            .as_deref()
            .and_then(crate::fs::git::operation_in_progress);
        if stopped.is_some() {
            self.git_hold.look_at = Some(now + LOOK_AGAIN);
            return false;
        }
        self.git_hold.look_at = None;
        true
    }

    /// A held pass keeps its new settlements for the catch-up; the first pass that may write
    /// again takes them back into its own. They are kept in the state folder, saved with the
    /// ledger that counted them: a daemon started again while the operation is stopped (or
    /// after it ended) still has them to act on, and one pass takes them.
    pub(super) fn carry_held_settlements(&mut self, pass: &mut Pass) {
        let held = &mut self.state.held_settled;
        if self.git_hold.op.is_some() {
            if !pass.first_meeting {
                for new in &pass.new_settled {
                    if !held.iter().any(|(rel, _)| *rel == new.0) {
                        held.push(new.clone());
                    }
                }
            }
        } else if !held.is_empty() {
            let mut held = std::mem::take(held);
            held.retain(|(rel, _)| !pass.new_settled.iter().any(|(r, _)| r == rel));
            pass.new_settled.splice(0..0, held);
        }
    }
}
