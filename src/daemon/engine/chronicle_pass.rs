//! The chronicle (SPEC §3, §11): the engine's copies of `chronicle.md` and its archives, the
//! validation of newly completed lines, lost lines, conflict copies and the quarterly rollover.

use super::{Engine, Pass};
use crate::fs::snapshot::{self, Polis};
use crate::operations;
use crate::protocol::chronicle::{self, ChronicleContext, Resume};
use crate::protocol::clock::PolisTime;
use crate::protocol::delivery::inbox::Notification;
use crate::protocol::finding::Finding;
use crate::protocol::layout::{self};
use std::collections::{BTreeSet, HashMap};

pub(super) use crate::fs::chronicle_copy::{ChronicleCopies, TAIL_WINDOW};

/// The activity of a chronicle text up to `offset`, with the hash of the bytes before it so a
/// rewrite is noticed.
#[derive(Debug, Clone)]
pub(super) struct Covered {
    name: String,
    offset: usize,
    tail: String,
    activity: chronicle::activity::Activity,
}

impl Covered {
    pub(super) fn new(name: &str, text: &str, offset: usize, now: &PolisTime) -> Covered {
        Covered {
            name: name.to_string(),
            offset,
            tail: tail_hash(text, offset),
            activity: chronicle::activity::Activity::of_text(&text[..offset], now),
        }
    }

    /// Whether `text` still starts with the bytes this covers (it was at most appended to).
    pub(super) fn is_prefix_of(&self, name: &str, text: &str) -> bool {
        self.name == name
            && self.offset <= text.len()
            && text.is_char_boundary(self.offset)
            && tail_hash(text, self.offset) == self.tail
    }

    /// Covers `text` up to `upto`, reading only the lines after the current offset when the
    /// text was appended to.
    pub(super) fn extend_to(&mut self, text: &str, upto: usize, now: &PolisTime) {
        if self.offset > 0
            && self.offset <= upto
            && text.as_bytes()[self.offset - 1] == b'\n'
            && self.is_prefix_of(&self.name.clone(), text)
        {
            let lines = chronicle::scan_tail(&text[self.offset..upto], 0).lines;
            self.activity.add(&lines, now);
            self.offset = upto;
            self.tail = tail_hash(text, upto);
        } else {
            *self = Covered::new(&self.name.clone(), text, upto, now);
        }
    }
}

impl Engine {
    pub(super) fn chronicle_step(&mut self, pass: &mut Pass) {
        match self.chronicle_pass(&pass.polis, &pass.now) {
            Ok(true) => self.after_write(pass),
            Ok(false) => {}
            Err(e) => pass.errors.push(format!("chronicle: {e:#}")),
        }
    }

    /// Merges conflict copies, rolls over at a new quarter, validates the newly completed
    /// lines and notices lost ones. Returns whether polisd wrote to the chronicle.
    pub(super) fn chronicle_pass(
        &mut self,
        polis: &Polis,
        now: &PolisTime,
    ) -> anyhow::Result<bool> {
        let mut wrote = self.derived_writes() && self.merge_conflict_copies(polis)?;
        if self.options.rollover && self.derived_writes() {
            wrote |= self.roll_over(polis, now)?;
        }
        let current;
        let polis = if wrote {
            current = self.read_polis();
            &current
        } else {
            polis
        };
        let Some(text) = polis.chronicle_text() else {
            return Ok(wrote);
        };
        let progress = self
            .state
            .chronicles
            .get(layout::CHRONICLE)
            .cloned()
            .unwrap_or_default();
        let resume = Resume {
            offset: progress.offset as usize,
            line: progress.line as usize,
        };
        let appended = chronicle::scan_from(text, resume)
            .filter(|_| tail_hash(text, resume.offset) == progress.tail_hash);
        let mut notices = Vec::new();
        let mut told_lost = Vec::new();
        let rewritten = appended.is_none();
        let (scan, new_lines) = match appended {
            Some(scan) => {
                let lines = scan.lines.clone();
                (scan, lines)
            }
            None => {
                // Rewritten, shrunk, rolled over or merged: what polisd saw before must still be
                // somewhere (SPEC §3 C009), and only lines it has not seen are new.
                let seen_bytes = self.state.read_seen_chronicle();
                let seen_text = String::from_utf8_lossy(&seen_bytes);
                let seen_lines: Vec<String> = chronicle::scan(&seen_text)
                    .lines
                    .into_iter()
                    .map(|l| l.text)
                    .collect();
                let mut files: Vec<&str> = vec![text];
                files.extend(polis.archives.iter().map(|(_, t)| t.as_str()));
                for lost in chronicle::lost_lines(&seen_lines, &files) {
                    self.lost_line(polis, &lost, &mut notices);
                    told_lost.push(lost);
                }
                let scan = chronicle::scan(text);
                let mut seen_counts: HashMap<String, usize> = HashMap::new();
                for l in &seen_lines {
                    *seen_counts.entry(chronicle::line_key(l)).or_default() += 1;
                }
                let fresh = scan
                    .lines
                    .iter()
                    .filter(
                        |l| match seen_counts.get_mut(&chronicle::line_key(&l.text)) {
                            Some(n) if *n > 0 => {
                                *n -= 1;
                                false
                            }
                            _ => true,
                        },
                    )
                    .cloned()
                    .collect();
                self.state
                    .reset_seen_chronicle(&text.as_bytes()[..scan.resume.offset])?;
                (scan, fresh)
            }
        };
        if !new_lines.is_empty() {
            let findings = if rewritten {
                // Rewritten by a merge (git's driver, a conflict copy): the new lines sit among
                // the others in timestamp order, so each is checked against the lines before
                // it in the file, not against the end of the old file (a line from a branch
                // merged days later is late, not backdated).
                self.validate_in_place(polis, &scan.lines, &new_lines, now)
            } else {
                let earlier = self
                    .activity_upto(text, resume.offset, now)
                    .newest_stamp(now)
                    .unwrap_or_else(|| {
                        chronicle::activity::newest_stamp(&text[..resume.offset], now)
                    });
                self.validate(polis, &new_lines, earlier, now).0
            };
            // One info line per pass: a single append names its line.
            match new_lines.as_slice() {
                [one] => tracing::info!(
                    line = one.number,
                    findings = findings.len(),
                    "chronicle line validated"
                ),
                [first, .., last] => tracing::info!(
                    lines = new_lines.len(),
                    from = first.number,
                    to = last.number,
                    findings = findings.len(),
                    "chronicle lines validated"
                ),
                [] => {}
            }
            let fresh: BTreeSet<usize> = new_lines.iter().map(|l| l.number).collect();
            let named: Vec<(&str, &str)> = std::iter::once((layout::CHRONICLE, text))
                .chain(polis.archives.iter().map(|(n, t)| (n.as_str(), t.as_str())))
                .collect();
            let mut findings = findings;
            findings.extend(chronicle::duplicate_lines(&named, &|n| fresh.contains(&n)));
            for f in &findings {
                let line_text = new_lines
                    .iter()
                    .find(|l| Some(l.number) == f.line)
                    .map(|l| l.text.clone())
                    .unwrap_or_default();
                self.tell_or_hold(polis, f, &line_text, &mut notices);
            }
            // A polisd line whose id is already in the chronicle arrived twice (a sync without
            // the merge driver): reported once, never removed (docs/sync.md).
            if new_lines
                .iter()
                .any(|l| chronicle::marker_id(&l.text).is_some())
            {
                let archives: Vec<(&str, &str)> = polis
                    .archives
                    .iter()
                    .map(|(n, t)| (n.as_str(), t.as_str()))
                    .chain(std::iter::once((layout::CHRONICLE, text)))
                    .collect();
                let dups: Vec<Finding> = crate::protocol::merge::duplicate_markers(&archives)
                    .into_iter()
                    .filter(|f| {
                        f.path == layout::CHRONICLE && f.line.is_some_and(|n| fresh.contains(&n))
                    })
                    .collect();
                for f in &dups {
                    tracing::warn!("{f}");
                }
                self.state.push_findings(&dups);
            }
        }
        // Every advance, lines or not, so the mirror stays the chronicle up to the offset.
        if !rewritten && scan.resume.offset != resume.offset {
            self.state
                .extend_seen_chronicle(&text.as_bytes()[..scan.resume.offset], resume.offset)?;
        }
        self.record_progress(text, scan.resume);
        self.activity_upto(text, scan.resume.offset, now);
        // Only the complete lines read are in the mirror of what was seen: a note whose line is
        // still being written waits for the next pass.
        self.take_appended_notes(polis, &text[..scan.resume.offset], &told_lost, &mut notices);
        self.enqueue(notices);
        Ok(wrote)
    }

    /// Takes the notes of the lines this machine appended ([`crate::fs::state::take_appended`])
    /// after the pass has read `text`. A noted line in `text` is read now, so the mirror of what
    /// was seen holds it; one appended after `text` was read waits for the next pass; and one
    /// found nowhere, the chronicle read again under the notes' lock, was lost before this
    /// daemon read it (a sync tool's replace) and is held as a lost line is, unless the pass
    /// already told it from the mirror (`told_lost`).
    fn take_appended_notes(
        &mut self,
        polis: &Polis,
        text: &str,
        told_lost: &[String],
        notices: &mut Vec<Notification>,
    ) {
        let mut lost = Vec::new();
        let root = &self.root;
        let taken = crate::fs::state::take_appended(self.state.dir(), |noted| {
            let mut again: Option<Option<String>> = None;
            noted
                .into_iter()
                .filter(|line| {
                    if chronicle::holds_line(text.as_bytes(), line.as_bytes()) {
                        return false;
                    }
                    let again = again.get_or_insert_with(|| {
                        snapshot::read_text(root, layout::CHRONICLE, None)
                            .ok()
                            .flatten()
                    });
                    // Unreadable now (gone, not text): kept, and looked at on the next pass.
                    let Some(now) = again.as_deref() else {
                        return true;
                    };
                    if chronicle::holds_line(now.as_bytes(), line.as_bytes()) {
                        return true;
                    }
                    let mut files: Vec<&str> = vec![now];
                    files.extend(polis.archives.iter().map(|(_, t)| t.as_str()));
                    if !chronicle::lost_lines(std::slice::from_ref(line), &files).is_empty() {
                        lost.push(line.clone());
                    }
                    false
                })
                .collect()
        });
        if let Err(e) = taken {
            tracing::warn!("could not read the notes of appended chronicle lines: {e}");
        }
        for line in lost {
            if told_lost.iter().any(|t| t.trim_end() == line.trim_end()) {
                continue;
            }
            tracing::info!(
                "a line appended on this machine is gone before the daemon read it: {line}"
            );
            self.lost_line(polis, &line, notices);
        }
    }

    /// Records a lost chronicle line in the state (polisd's copy of it) and tells or holds its
    /// C009: a peer's version of the file may have replaced this one while the rest of its
    /// lines are still in transit (a conflict copy, the next pull).
    fn lost_line(&mut self, polis: &Polis, line: &str, notices: &mut Vec<Notification>) {
        self.state
            .chronicles
            .entry(layout::CHRONICLE.to_string())
            .or_default()
            .lost_lines
            .push(crate::fs::state::LostLine {
                text: line.to_string(),
                noticed_at: crate::fs::state::now_rfc3339(),
            });
        let finding = chronicle::lost_line_finding(layout::CHRONICLE, line);
        self.tell_or_hold(polis, &finding, line, notices);
    }

    /// Records that `chronicle.md` has been validated up to `resume`, with the hash of the
    /// bytes before it (a rewrite is noticed by the next pass).
    pub(super) fn record_progress(
        &mut self,
        text: &str,
        resume: Resume,
    ) -> &mut crate::fs::state::ChronicleProgress {
        let progress = self
            .state
            .chronicles
            .entry(layout::CHRONICLE.to_string())
            .or_default();
        progress.offset = resume.offset as u64;
        progress.line = resume.line as u64;
        progress.tail_hash = tail_hash(text, resume.offset);
        progress
    }

    /// The activity of `chronicle.md` up to `upto` (a line end), read incrementally.
    pub(super) fn activity_upto(
        &mut self,
        text: &str,
        upto: usize,
        now: &PolisTime,
    ) -> &chronicle::activity::Activity {
        let covered = self
            .chronicle_activity
            .get_or_insert_with(|| Covered::new(layout::CHRONICLE, text, 0, now));
        if covered.offset != upto || !covered.is_prefix_of(layout::CHRONICLE, text) {
            covered.extend_to(text, upto, now);
        }
        &covered.activity
    }

    /// The polis's clock for the headings of notices whose cause records no time
    /// ([`crate::protocol::delivery::inbox::polis_clock`]): the newest stamp among the chronicle lines
    /// this daemon has read (kept incrementally), else of the newest archive. Lines dated more
    /// than ten minutes ahead (C004) do not count.
    pub(super) fn polis_clock(&self, polis: &Polis, now: &PolisTime) -> String {
        let kept = |c: &Option<Covered>| {
            c.as_ref()
                .and_then(|c| c.activity.newest_stamp(now))
                .flatten()
        };
        let current = kept(&self.chronicle_activity).or_else(|| {
            polis
                .chronicle_text()
                .and_then(|t| chronicle::activity::newest_stamp(t, now))
        });
        let newest = current
            .or_else(|| kept(&self.archive_activity).or_else(|| polis.newest_archive_stamp(now)));
        crate::protocol::delivery::inbox::polis_clock(newest)
    }

    /// Fills `polis.active_authors` from the kept activity when it covers the chronicle as read
    /// (every complete line) and the newest archive; otherwise leaves it for a scan.
    pub(super) fn fill_activity(&mut self, polis: &mut Polis, now: &PolisTime) {
        polis.active_authors = None;
        polis.departed = None;
        // Per citizen, whether the latest membership line is `left polis`: the current
        // chronicle decides over the archive.
        let mut members = std::collections::BTreeMap::new();
        let mut authors = match polis.chronicle_text() {
            None => BTreeSet::new(),
            Some(text) => {
                let Some(c) = &self.chronicle_activity else {
                    return;
                };
                if !c.is_prefix_of(layout::CHRONICLE, text) || text[c.offset..].contains('\n') {
                    return;
                }
                members.clone_from(c.activity.membership());
                match c.activity.active_authors(now) {
                    Some(authors) => authors,
                    None => return,
                }
            }
        };
        if let Some((name, text)) = polis.archives.last() {
            let fresh = self
                .archive_activity
                .as_ref()
                .is_some_and(|a| a.offset == text.len() && a.is_prefix_of(name, text));
            if !fresh {
                self.archive_activity = Some(Covered::new(name, text, text.len(), now));
            }
            match self
                .archive_activity
                .as_ref()
                .and_then(|a| a.activity.active_authors(now))
            {
                Some(more) => authors.extend(more),
                None => return,
            }
            if let Some(a) = &self.archive_activity {
                for (who, left) in a.activity.membership() {
                    members.entry(who.clone()).or_insert(*left);
                }
            }
        }
        polis.active_authors = Some(authors);
        polis.departed = Some(
            members
                .into_iter()
                .filter_map(|(who, left)| left.then_some(who))
                .collect(),
        );
    }

    pub(super) fn validate(
        &self,
        polis: &Polis,
        lines: &[chronicle::Line],
        newest_earlier: Option<chrono::NaiveDateTime>,
        now: &PolisTime,
    ) -> (Vec<Finding>, Option<chrono::NaiveDateTime>) {
        let registered = |id: &str| polis.cards.contains_key(id);
        let exists = |rel: &str| polis.exists(rel);
        let ctx = ChronicleContext {
            path: layout::CHRONICLE,
            is_registered: &registered,
            link_exists: &exists,
            newest_earlier,
            now: *now,
        };
        chronicle::validate_all(lines, &ctx)
    }

    /// Validates `fresh` (some of `all`, the file's lines in order), each with the newest stamp
    /// of the lines before it in the file as "the newest earlier line" (C005).
    pub(super) fn validate_in_place(
        &self,
        polis: &Polis,
        all: &[chronicle::Line],
        fresh: &[chronicle::Line],
        now: &PolisTime,
    ) -> Vec<Finding> {
        let limit = now.now + chrono::Duration::minutes(chronicle::FUTURE_TOLERANCE_MINUTES);
        let wanted: BTreeSet<usize> = fresh.iter().map(|l| l.number).collect();
        let mut newest = None;
        let mut out = Vec::new();
        for line in all {
            if wanted.contains(&line.number) {
                out.extend(
                    self.validate(polis, std::slice::from_ref(line), newest, now)
                        .0,
                );
            }
            if let Some((stamp, _)) = chronicle::stamp_and_author(&line.text) {
                if stamp <= limit {
                    newest = newest.max(Some(stamp));
                }
            }
        }
        out
    }

    /// The inbox notice for a chronicle finding: to the author when registered, otherwise to
    /// the index keeper (SPEC §3).
    pub(super) fn finding_notice(
        &self,
        polis: &Polis,
        f: &Finding,
        line_text: &str,
    ) -> Option<Notification> {
        let author = chronicle::stamp_and_author(line_text)
            .map(|(_, a)| a.to_string())
            .or_else(|| line_text.split(" | ").nth(1).map(|a| a.trim().to_string()))
            .unwrap_or_default();
        let recipient = if polis.cards.contains_key(&author) {
            author.clone()
        } else {
            polis.index_keeper.clone()?
        };
        // The line's own stamp; a line whose stamp is the problem (C001 unreadable, C003 not
        // a time, C004 in the future) takes the polis's clock at delivery.
        use crate::protocol::finding::Code;
        let at = (!matches!(f.code, Code::C001 | Code::C003 | Code::C004))
            .then(|| chronicle::stamp_and_author(line_text))
            .flatten()
            .map(|(t, _)| crate::protocol::delivery::inbox::time_stamp(t));
        Some(Notification::chronicle_finding(&recipient, &author, f, line_text).caused_at(at))
    }

    pub(super) fn wait_for_recipient(&mut self, f: &Finding, line_text: &str) {
        if self.unresolved.len() >= super::MAX_UNRESOLVED {
            self.unresolved.remove(0);
        }
        self.unresolved.push((f.clone(), line_text.to_string()));
    }

    /// The findings that waited for a recipient and now have one. A C002 finding whose author
    /// is now registered no longer holds and is dropped: the card was only late.
    pub(super) fn resolved_findings(&mut self, polis: &Polis) -> Vec<Notification> {
        let waiting = std::mem::take(&mut self.unresolved);
        let mut out = Vec::new();
        for (f, line) in waiting {
            let author = chronicle::stamp_and_author(&line).map(|(_, a)| a.to_string());
            if f.code == crate::protocol::finding::Code::C002
                && author.is_some_and(|a| polis.cards.contains_key(&a))
            {
                continue;
            }
            match self.finding_notice(polis, &f, &line) {
                Some(n) => out.push(n),
                None => self.unresolved.push((f, line)),
            }
        }
        out
    }

    /// Merges chronicle conflict copies left by a sync tool (SPEC §11).
    pub(super) fn merge_conflict_copies(&mut self, polis: &Polis) -> anyhow::Result<bool> {
        let mut wrote = false;
        let Ok(entries) = std::fs::read_dir(&self.root) else {
            return Ok(false);
        };
        // Each copy is merged into the file it is a copy of: `chronicle.md` or an archive.
        let mut copies: Vec<(String, String)> = entries
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
            .filter_map(|e| e.file_name().to_str().map(str::to_string))
            .filter_map(|n| layout::conflict_original(&n).map(|o| (n, o)))
            .filter(|(_, o)| {
                o == layout::CHRONICLE
                    || chronicle::rollover::Quarter::from_archive_name(o).is_some()
            })
            .collect();
        copies.sort();
        for (name, original) in copies {
            // A copy (or original) that is not text or holds git conflict markers is left for
            // a person; the sync pass tells the index keeper.
            if crate::operations::sync::held_back(&self.root, &name, &original).is_some() {
                continue;
            }
            let Ok(Some(copy)) = snapshot::read_text(&self.root, &name, None) else {
                continue;
            };
            // The archives keep the copy's older lines from coming back after a rollover here.
            let archives: Vec<&str> = polis
                .archives
                .iter()
                .filter(|(n, _)| *n != original)
                .map(|(_, t)| t.as_str())
                .collect();
            let held = std::cell::Cell::new(false);
            let merged = operations::edit_agent_file(&self.writer, &self.root, &original, |cur| {
                // Markers written in since the look above: held back all the same.
                if crate::protocol::merge::conflict_marker_line(cur).is_some() {
                    held.set(true);
                    return None;
                }
                let m = crate::protocol::merge::merge_chronicle(None, cur, &copy, &archives);
                for note in &m.report {
                    tracing::info!(copy = %name, "{note}");
                }
                Some(m.text)
            });
            let merged = match merged {
                Err(e) if e.is_not_settled() => {
                    // Agents are still appending: merged when the file is settled, and the
                    // copy stays until its lines are in.
                    tracing::debug!("{e}");
                    continue;
                }
                other => other?,
            };
            // The copy goes only once its lines are in a file that is still there.
            if held.get() || !self.root.join(&original).is_file() {
                continue;
            }
            self.writer.remove(&name)?;
            tracing::info!(copy = %name, "merged a chronicle conflict copy");
            self.log_activity(
                "merged",
                Some(layout::CHRONICLE),
                format!("a sync tool left the conflict copy {name}"),
            );
            wrote |= merged;
            self.state.counters.writes += 1;
        }
        Ok(wrote)
    }

    /// Quarterly rollover (SPEC §3), when the configuration turns it on.
    pub(super) fn roll_over(&mut self, polis: &Polis, now: &PolisTime) -> anyhow::Result<bool> {
        let Some(text) = polis.chronicle_text() else {
            return Ok(false);
        };
        let Some(r) = chronicle::rollover::rollover(text, now) else {
            return Ok(false);
        };
        let archive_exists = self.root.join(&r.archive_name).exists();
        if !archive_exists {
            self.writer
                .create_new(&r.archive_name, r.archive_text.as_bytes())?;
        } else if snapshot::read_regular(&self.root.join(&r.archive_name)).as_deref()
            != Some(r.archive_text.as_bytes())
        {
            // Another machine rolled over already; its archive wins and this chronicle's lines
            // stay where they are.
            return Ok(false);
        }
        let original = text.to_string();
        let changed =
            operations::edit_agent_file(&self.writer, &self.root, layout::CHRONICLE, |cur| {
                (cur == original).then(|| r.new_text.clone())
            });
        let changed = match changed {
            Err(e) if e.is_not_settled() => {
                tracing::debug!("rollover waits: {e}");
                false
            }
            other => other?,
        };
        if changed {
            tracing::info!(archive = %r.archive_name, "chronicle rolled over");
            self.log_activity(
                "rolled-over",
                Some(layout::CHRONICLE),
                format!(
                    "a new quarter began: the old lines are in {}",
                    r.archive_name
                ),
            );
        }
        Ok(changed)
    }
}

/// Hex SHA-256 of up to [`TAIL_WINDOW`] bytes before `offset`.
pub(super) fn tail_hash(text: &str, offset: usize) -> String {
    let end = offset.min(text.len());
    let start = end.saturating_sub(TAIL_WINDOW);
    crate::protocol::digest::sha256_hex(&text.as_bytes()[start..end])
}

#[cfg(test)]
mod tests {
    use crate::daemon::engine::{Engine, Trigger};
    use std::path::Path;

    const HEAD: &str = "---\nfile_type: chronicle\n---\n\n";

    fn line(who: &str, note: &str) -> String {
        format!("- 2026-05-01 09:00 | {who} | started work | - | {note}\n")
    }

    fn append(root: &Path, text: &str) {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(root.join("chronicle.md"))
            .unwrap();
        f.write_all(text.as_bytes()).unwrap();
    }

    fn lost(engine: &Engine) -> Vec<String> {
        engine
            .state
            .chronicles
            .get(crate::protocol::layout::CHRONICLE)
            .map(|p| p.lost_lines.iter().map(|l| l.text.clone()).collect())
            .unwrap_or_default()
    }

    /// The mirror of the chronicle in the state folder cut short (a full disk, a damaged
    /// folder) or ahead of `state.json` (a crash between the two writes) must not make a
    /// later merge of the chronicle tell a line that was never lost.
    #[test]
    fn a_damaged_seen_mirror_tells_no_line_lost_after_a_merge() {
        for damage in ["ahead", "truncated"] {
            let dir = tempfile::tempdir().unwrap();
            let root = dir.path().join("_polis");
            let base = dir.path().join("state");
            std::fs::create_dir_all(&root).unwrap();
            std::fs::write(root.join("CONSTITUTION.md"), "# Constitution\n").unwrap();
            std::fs::write(
                root.join("chronicle.md"),
                format!("{HEAD}{}", line("alpha-one", "a")),
            )
            .unwrap();
            let wall = chrono::Utc::now();
            let chronicle = || Trigger::Paths(vec!["chronicle.md".into()]);
            let mut engine = Engine::open_in(&root, &base, Engine::default_options()).unwrap();
            engine.handle(&Trigger::Rescan, wall).unwrap();
            append(&root, &line("bravo-one", "b"));
            engine.handle(&chronicle(), wall).unwrap();
            let mirror = engine.state.dir().join("chronicle-seen.md");
            let seen = std::fs::read(&mirror).unwrap();
            let state_file = engine.state.dir().join("state.json");
            let state_before = std::fs::read(&state_file).unwrap();
            append(&root, &line("alpha-one", "c"));
            engine.handle(&chronicle(), wall).unwrap();
            engine.close();
            drop(engine);
            match damage {
                "truncated" => std::fs::write(&mirror, &seen[..seen.len() - 5]).unwrap(),
                // The mirror holds line c, the state's offset is still before it.
                _ => std::fs::write(&state_file, state_before).unwrap(),
            }
            let mut engine = Engine::open_in(&root, &base, Engine::default_options()).unwrap();
            engine.handle(&Trigger::Rescan, wall).unwrap();
            append(&root, &line("bravo-one", "d"));
            engine.handle(&chronicle(), wall).unwrap();
            // A merge puts a line among the others: the chronicle is rewritten, nothing lost.
            let text = std::fs::read_to_string(root.join("chronicle.md")).unwrap();
            let merged = text.replacen(
                &line("bravo-one", "b"),
                &(line("bravo-one", "b") + &line("charlie-one", "m")),
                1,
            );
            std::fs::write(root.join("chronicle.md"), merged).unwrap();
            engine.handle(&chronicle(), wall).unwrap();
            assert_eq!(lost(&engine), Vec::<String>::new(), "{damage}");
        }
    }
}
