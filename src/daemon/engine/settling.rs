//! The transfer settling window (docs/sync.md): while a sync tool or a pull brings a peer's
//! files in, they arrive out of order (a chronicle line before the contract it links to, a
//! merged chronicle before the conflict copy holding the rest of its lines). A finding that a
//! later arrival can resolve is held until the polis has been quiet for the window, checked
//! again against the polis as it then is, and notified only if it still stands.

use super::{Engine, Pass};
use crate::protocol::chronicle;
use crate::protocol::delivery::inbox::Notification;
use crate::protocol::finding::{Code, Finding};
use crate::protocol::layout;
use std::collections::BTreeSet;
use std::time::{Duration, Instant};

/// The most findings held at once (a polis restored line by line holds many; the oldest is
/// told at once rather than dropped).
const MAX_HELD: usize = 1000;

/// Whether a later arrival can make `code` go away: a link to a file still in transit (C006),
/// a line whose author's card is still in transit (C002), a line merged in out of order
/// (C005), a line that vanished while the file was replaced by a peer's version whose
/// conflict copy holds it (C009), a line that is the same as one still being merged (P024).
/// In records: a contract whose ending arrived before its move (P018: `status: settled` still
/// in `open/`), a citizen or voter whose card is still in transit (P019, P005).
pub fn may_resolve_by_arrival(code: Code) -> bool {
    matches!(
        code,
        Code::C002
            | Code::C005
            | Code::C006
            | Code::C009
            | Code::Duplicate
            | Code::StatusFolder
            | Code::UnknownCitizen
            | Code::UnknownVoter
    )
}

/// A chronicle finding waiting for the polis to be quiet.
#[derive(Debug, Clone)]
pub(super) struct Held {
    pub finding: Finding,
    /// The line it is about (for C009, the lost line).
    pub line: String,
}

/// What the engine keeps for the window.
#[derive(Debug)]
pub(super) struct Settling {
    window: Duration,
    last_arrival: Instant,
    held: Vec<Held>,
    /// A sync episode waits for the window to be told.
    wake: bool,
}

impl Default for Settling {
    fn default() -> Self {
        Settling {
            // An engine tells at once until the daemon sets the configured window.
            window: Duration::ZERO,
            last_arrival: Instant::now(),
            held: Vec::new(),
            wake: false,
        }
    }
}

impl Settling {
    pub(super) fn set_window(&mut self, window: Duration) {
        self.window = window;
    }

    /// Something arrived: the window starts again.
    pub(super) fn arrived(&mut self, at: Instant) {
        self.last_arrival = self.last_arrival.max(at);
    }

    /// Holds `f` until the polis is quiet; an identical finding already held is kept once.
    /// Returns the oldest held finding when the queue is full (told at once).
    pub(super) fn hold(&mut self, finding: Finding, line: String) -> Option<Held> {
        if self
            .held
            .iter()
            .any(|h| h.finding == finding && h.line == line)
        {
            return None;
        }
        let evicted = (self.held.len() >= MAX_HELD).then(|| self.held.remove(0));
        self.held.push(Held { finding, line });
        evicted
    }

    /// When the held findings (or a waiting sync episode) are due, if any.
    pub(super) fn due_at(&self) -> Option<Instant> {
        (!self.held.is_empty() || self.wake).then(|| self.last_arrival + self.window)
    }

    /// Whether the polis has been quiet for the window at `now`.
    pub(super) fn is_quiet(&self, now: Instant) -> bool {
        self.last_arrival + self.window <= now
    }

    /// Asks for a pass once the polis is quiet (a sync episode to tell).
    pub(super) fn wake_when_quiet(&mut self) {
        self.wake = true;
    }

    /// The wake-up asked for is being served.
    pub(super) fn woken(&mut self) {
        self.wake = false;
    }

    /// The held findings, when the polis has been quiet for the window at `now`.
    pub(super) fn take_due(&mut self, now: Instant) -> Vec<Held> {
        match self.due_at() {
            Some(at) if at <= now => std::mem::take(&mut self.held),
            _ => Vec::new(),
        }
    }

    pub(super) fn is_holding(&self) -> bool {
        !self.held.is_empty()
    }
}

impl Engine {
    /// Tells a chronicle finding now, or holds it for the window when a later arrival may
    /// resolve it. `notices` receives the notice when it is told now.
    pub(super) fn tell_or_hold(
        &mut self,
        polis: &crate::fs::snapshot::Polis,
        f: &Finding,
        line: &str,
        notices: &mut Vec<Notification>,
    ) {
        if may_resolve_by_arrival(f.code) && !self.settling.window.is_zero() {
            tracing::debug!("{f} (held for the settling window)");
            if let Some(old) = self.settling.hold(f.clone(), line.to_string()) {
                self.tell_now(polis, &old.finding, &old.line, notices);
            }
            return;
        }
        self.tell_now(polis, f, line, notices);
    }

    /// Logs `f`, records it in the status, and queues its notice (or waits for a recipient).
    pub(super) fn tell_now(
        &mut self,
        polis: &crate::fs::snapshot::Polis,
        f: &Finding,
        line: &str,
        notices: &mut Vec<Notification>,
    ) {
        tracing::warn!("{f}");
        self.state.push_findings(std::iter::once(f));
        match self.finding_notice(polis, f, line) {
            Some(n) => notices.push(n),
            // Nobody to tell yet (the author's card and the index are missing, as while the
            // folder is restored): looked at again on every pass.
            None => self.wait_for_recipient(f, line),
        }
    }

    /// The held findings whose window ended and that still stand, as notices; those that a
    /// later arrival resolved are dropped with a debug line.
    pub(super) fn findings_after_settling(&mut self, pass: &mut Pass) -> Vec<Notification> {
        if let Some(op) = self
            .sync
            .git_dir
            .as_deref()
            .and_then(crate::fs::git::operation_in_progress)
        {
            // A rebase stopped on a conflict lacks the lines of the commits it has yet to
            // replay: nothing is lost until the person finishes or aborts it. Looked at again
            // a window later.
            if self
                .settling
                .due_at()
                .is_some_and(|at| at <= Instant::now())
            {
                tracing::debug!("a git {op} is in progress; held findings wait for it to end");
                self.settling.arrived(Instant::now());
            }
            return Vec::new();
        }
        let due = self.settling.take_due(Instant::now());
        let standing: Vec<Held> = due
            .into_iter()
            .filter(|held| {
                let stands = self.still_stands(pass, held);
                if !stands {
                    tracing::info!(
                        code = %held.finding.code,
                        "a finding resolved itself within the settling window: {}",
                        held.line
                    );
                }
                stands
            })
            .collect();
        let left_behind = self.left_behind_by_a_checkout(&standing);
        let mut notices = Vec::new();
        for held in standing {
            if held.finding.code == Code::C009 {
                if left_behind.contains(&held.line) {
                    tracing::info!(
                        "a chronicle line the checked-out commit lacks is on another branch: \
                         left behind by a checkout, not lost: {}",
                        held.line
                    );
                    continue;
                }
                if self.restore_lost_line(&pass.polis, &held, &mut notices) {
                    continue;
                }
            }
            self.tell_now(&pass.polis, &held.finding, &held.line, &mut notices);
        }
        notices
    }

    /// Of the lost lines among `held`, those a checkout left behind: the checked-out commit
    /// lacks them too, and another branch holds them (`git switch` to a branch without them,
    /// `git checkout` of an older commit, `git stash` of lines not yet committed, until the
    /// `pop`). They are in the repository, and telling their
    /// authors to append them again would fork the history and dirty tracked inboxes. A line
    /// the checked-out commit holds was deleted in the work tree, and one no other branch
    /// holds was reset away: both are told.
    fn left_behind_by_a_checkout(&self, held: &[Held]) -> BTreeSet<String> {
        let lost: Vec<&str> = held
            .iter()
            .filter(|h| h.finding.code == Code::C009)
            .map(|h| h.line.as_str())
            .collect();
        if lost.is_empty() || self.sync.git_dir.is_none() {
            return BTreeSet::new();
        }
        let committed = crate::fs::git::committed_chronicle_lines(&self.root, &lost);
        lost.into_iter()
            .filter(|line| {
                is_lost(line, &committed.head, &[])
                    && !is_lost(line, &committed.other_branches, &[])
            })
            .map(str::to_string)
            .collect()
    }

    /// Puts a lost chronicle line back where its stamp puts it, in a polis a sync tool shares;
    /// true when it is back (or held again while agents are appending), false when it is to
    /// be told.
    ///
    /// A sync tool replaces a file by renaming a peer's version over it; an agent's line
    /// appended between its look at the file and the rename is gone, with no conflict copy to
    /// bring it back, and the tool keeps no history to restore it from. polisd saw the line and
    /// kept it, so it does what the rule asks of whoever lost it. In a git clone the history
    /// holds the line, and a person who reset the chronicle decides: told, not restored.
    fn restore_lost_line(
        &mut self,
        polis: &crate::fs::snapshot::Polis,
        held: &Held,
        notices: &mut Vec<Notification>,
    ) -> bool {
        if !crate::fs::locate::shared_by_sync_tool(&self.root) {
            return false;
        }
        let archives: Vec<&str> = polis.archives.iter().map(|(_, t)| t.as_str()).collect();
        let line = held.line.trim_end();
        let restored = crate::operations::edit_agent_file(
            &self.writer,
            &self.root,
            layout::CHRONICLE,
            |cur| {
                if crate::protocol::merge::conflict_marker_line(cur).is_some()
                    || !is_lost(line, cur, &archives)
                {
                    return None;
                }
                let mut with = cur.to_string();
                if !with.ends_with('\n') {
                    with.push('\n');
                }
                with.push_str(line);
                with.push('\n');
                Some(crate::protocol::merge::merge_chronicle(None, cur, &with, &archives).text)
            },
        );
        match restored {
            Ok(true) => {
                tracing::info!("restored a chronicle line a sync tool's replace lost: {line}");
                self.log_activity(
                    "restored",
                    Some(layout::CHRONICLE),
                    format!(
                        "a sync tool replaced the chronicle without the line `{}`",
                        crate::protocol::delivery::agent_text::cut(line, 160)
                    ),
                );
                self.state.counters.writes += 1;
                true
            }
            // Nothing written: back already (a peer's version brought it), or no chronicle to
            // put it in, or one holding conflict markers, which a person resolves first.
            Ok(false) => matches!(
                crate::fs::snapshot::read_text(&self.root, layout::CHRONICLE, None),
                Ok(Some(cur)) if !is_lost(line, &cur, &archives)
            ),
            Err(e) if e.is_not_settled() => {
                // Agents are appending: looked at again a window later.
                if let Some(old) = self.settling.hold(held.finding.clone(), held.line.clone()) {
                    self.tell_now(polis, &old.finding, &old.line, notices);
                }
                true
            }
            Err(e) => {
                tracing::warn!("could not put back a lost chronicle line: {e}");
                false
            }
        }
    }

    /// Whether a held finding still holds in the polis as it is now.
    fn still_stands(&self, pass: &Pass, held: &Held) -> bool {
        let polis = &pass.polis;
        let Some(text) = polis.chronicle_text() else {
            return false;
        };
        if held.finding.code == Code::C009 {
            let archives: Vec<&str> = polis.archives.iter().map(|(_, t)| t.as_str()).collect();
            return is_lost(&held.line, text, &archives);
        }
        let key = chronicle::line_key(&held.line);
        let scan = chronicle::scan(text);
        let Some(now_line) = scan
            .lines
            .iter()
            .find(|l| chronicle::line_key(&l.text) == key)
        else {
            // The line is gone (a lost line is a finding of its own): nothing to tell about it.
            return false;
        };
        if held.finding.code == Code::Duplicate {
            let named: Vec<(&str, &str)> = std::iter::once((layout::CHRONICLE, text))
                .chain(polis.archives.iter().map(|(n, t)| (n.as_str(), t.as_str())))
                .collect();
            return chronicle::duplicate_lines(&named, &|_| true)
                .iter()
                .chain(crate::protocol::merge::duplicate_markers(&named).iter())
                .any(|f| f.line == Some(now_line.number) || f.message == held.finding.message);
        }
        self.validate_in_place(
            polis,
            &scan.lines,
            std::slice::from_ref(now_line),
            &pass.now,
        )
        .iter()
        .any(|f| f.code == held.finding.code)
    }
}

/// Whether `line` is in neither the chronicle's `text` nor any of its `archives`.
fn is_lost(line: &str, text: &str, archives: &[&str]) -> bool {
    let files: Vec<&str> = std::iter::once(text)
        .chain(archives.iter().copied())
        .collect();
    !chronicle::lost_lines(&[line.to_string()], &files).is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn held_findings_wait_for_a_quiet_window() {
        let mut s = Settling::default();
        s.set_window(Duration::from_millis(100));
        let t0 = Instant::now();
        s.arrived(t0);
        let f = Finding::warning(Code::C006, "chronicle.md", Some(3), "x");
        assert!(s.hold(f.clone(), "- line".into()).is_none());
        assert!(s.hold(f, "- line".into()).is_none(), "held once");
        assert!(s.take_due(t0 + Duration::from_millis(50)).is_empty());
        s.arrived(t0 + Duration::from_millis(80));
        assert!(s.take_due(t0 + Duration::from_millis(150)).is_empty());
        assert_eq!(s.take_due(t0 + Duration::from_millis(181)).len(), 1);
        assert!(!s.is_holding());
    }

    #[test]
    fn only_findings_an_arrival_can_resolve_are_held() {
        assert!(may_resolve_by_arrival(Code::C006));
        assert!(may_resolve_by_arrival(Code::C009));
        assert!(may_resolve_by_arrival(Code::StatusFolder));
        assert!(!may_resolve_by_arrival(Code::C001));
        assert!(!may_resolve_by_arrival(Code::C004));
    }
}
