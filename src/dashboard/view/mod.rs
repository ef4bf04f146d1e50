//! What the pages read: one polis at one published generation, cached until the next.
//!
//! Beside the daemon (`polisd run`) a snapshot is built from what the engine published after
//! its pass ([`PolisState`]: the polis it read, its ledger of settled contracts, the stats), so
//! the first page after a change reads no contract file. Alone (`polisd serve`), the view keeps
//! a [`FolderState`] and the paths the watcher reported since the last read: a change reads the
//! files it names, not the settled folder again. Either way nothing is read while nobody looks:
//! a change only bumps a generation, and the next request builds the snapshot.
//!
//! Neither a snapshot nor its build holds a chronicle text: the build reads the chronicle files
//! from disk a line at a time for what it sums up (findings, activity, the queue's answers:
//! `protocol::chronicle::summary`), and a page that shows chronicle lines reads them from disk,
//! a window at a time (`fs::chronicle_lines`). So the memory a view needs does not grow with
//! the chronicle.

pub mod queue;

use crate::daemon::Change;
use crate::fs::snapshot::{ContractFile, Polis};
use crate::operations::published::{FolderState, PolisState, Refresh};
use crate::operations::status::Summary;
use crate::operations::sync::ConflictCopy;
use crate::operations::Rechecks;
use crate::protocol::clock::PolisTime;
use crate::protocol::finding::Finding;
use crate::protocol::layout::ContractFolder;
use crate::protocol::routing::stats::{RoutingStats, TagHistory};
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use tokio::sync::watch;

/// Longest inbox read for the pages (bigger ones are shown cut, with a note).
const INBOX_LIMIT: u64 = 4 << 20;

/// One polis the dashboard shows.
pub struct PolisView {
    pub root: PathBuf,
    /// A short name for the picker: the project folder's name.
    pub name: String,
    pub changes: watch::Receiver<Change>,
    cache: Mutex<Option<Arc<Snapshot>>>,
    /// Without a daemon's state: the settled contracts as last read.
    folder: Mutex<FolderState>,
    /// Without a daemon's state: what may have changed since `folder` last read.
    pending: Mutex<Refresh>,
    /// What the last summary checked that only a changed file changes (the amendments).
    rechecks: Mutex<Rechecks>,
}

/// Everything a page may show, read at one generation.
pub struct Snapshot {
    pub generation: u64,
    /// The polis without its settled contracts (see [`PolisState`]).
    pub polis: Arc<Polis>,
    pub state: Arc<PolisState>,

    pub now: PolisTime,
    pub summary: Summary,
    pub findings: Vec<Finding>,
    pub stats: Arc<RoutingStats>,
    /// Built by the first page that shows it (tags, citizen), once per generation.
    history: std::sync::OnceLock<Vec<(String, TagHistory)>>,
    /// Per citizen: `inbox.md` as read (`None`: no inbox, or one that cannot be read).
    pub inboxes: BTreeMap<String, Option<String>>,
    /// Per citizen whose inbox is not shown as it is on disk: why (cut to its newest part,
    /// bytes that are not UTF-8 replaced, or why it cannot be read at all).
    pub inbox_notes: BTreeMap<String, String>,
    /// Per citizen: the notices of its inbox not in its read cursor (`notices_read`).
    pub unread: BTreeMap<String, usize>,
    /// The guardrails in force (`guardrails/`).
    pub guardrails: Vec<crate::protocol::contracts::guardrail::Guardrail>,
    /// The reservations still in force (`reservations.yml`), or why the file cannot be read.
    pub reservations: Result<Vec<crate::operations::reservation::View>, String>,
    /// Settlements per day over the last [`TREND_DAYS`] days, built by the first page that
    /// shows it.
    trend: std::sync::OnceLock<Vec<(String, usize)>>,
    pub queue: Vec<queue::Item>,
    /// The classes of warning a person silenced (`silenced.yml`): out of the queue.
    pub silenced: Vec<crate::protocol::silenced::Silence>,
    /// The chronicle files the snapshot was built from, in the order their lines were written
    /// (archives oldest first, then `chronicle.md`); one that could not be read is not here.
    /// Their texts are not kept: pages read the lines they show from disk.
    pub chronicle_files: Vec<String>,
}

/// Days the overview's trend covers.
pub const TREND_DAYS: i64 = 14;

impl Snapshot {
    /// Whether `contracts/settled/<id>.md` is there (one `lstat`: the few ids a page asks
    /// about cost less than a set of every settled id built per generation).
    pub fn is_settled(&self, id: &str) -> bool {
        crate::operations::ready::is_in(&self.polis.root, ContractFolder::Settled, id)
    }

    /// How many files `contracts/settled/` holds.
    pub fn settled_count(&self) -> usize {
        self.state.settled.file_count()
    }

    /// Each citizen's overrides of the router among the settled contracts, with how that work
    /// turned out (`protocol::routing::overrides`).
    pub fn overrides(&self) -> Vec<crate::protocol::routing::overrides::Overrides> {
        crate::protocol::routing::overrides::by_citizen(
            self.state
                .settled
                .iter()
                .map(|(_, st)| (st.owner, st.recommended, st.quality)),
        )
    }

    /// Per tag, each citizen's running average and the leader changes (see
    /// `protocol::routing::stats::history`), from the ledger's snapshot without a sort.
    pub fn history(&self) -> &[(String, TagHistory)] {
        self.history.get_or_init(|| self.state.settled.history())
    }

    /// Contract `id`: an open or abandoned one from the snapshot, a settled one read now
    /// (one file).
    pub fn contract(&self, id: &str) -> Option<Cow<'_, ContractFile>> {
        if let Some(c) = self.polis.contract(id) {
            return Some(Cow::Borrowed(c));
        }
        if !self.is_settled(id) {
            return None;
        }
        let rel = crate::protocol::layout::contract_path(ContractFolder::Settled, id)?;
        let mut ignored = Vec::new();
        let file = crate::fs::snapshot::read_record(&self.polis.root, &rel, id, &mut ignored)?;
        let contract = crate::protocol::contracts::contract::Contract::from_record(&file.record);
        Some(Cow::Owned(ContractFile {
            folder: ContractFolder::Settled,
            file,
            contract,
        }))
    }

    /// Settlements per day (`YYYY-MM-DD`, count) over the last [`TREND_DAYS`] days, oldest
    /// first, today included.
    pub fn trend(&self) -> &[(String, usize)] {
        self.trend.get_or_init(|| {
            let today = self.now.now.date();
            let first = today - chrono::Duration::days(TREND_DAYS - 1);
            let mut days: Vec<(String, usize)> = (0..TREND_DAYS)
                .map(|i| ((first + chrono::Duration::days(i)).to_string(), 0))
                .collect();
            for (_, s) in self.state.settled.iter() {
                let Some(day) = s.instant.map(|t| t.date()) else {
                    continue;
                };
                if let Ok(i) = usize::try_from((day - first).num_days()) {
                    if let Some(slot) = days.get_mut(i) {
                        slot.1 += 1;
                    }
                }
            }
            days
        })
    }

    /// Which folder contract `id` is in, if any (open first, as [`Snapshot::contract`]).
    pub fn folder_of(&self, id: &str) -> Option<ContractFolder> {
        self.polis
            .contract(id)
            .map(|c| c.folder)
            .or_else(|| self.is_settled(id).then_some(ContractFolder::Settled))
    }
}

impl PolisView {
    pub fn new(root: &Path, changes: watch::Receiver<Change>) -> PolisView {
        PolisView {
            root: root.to_path_buf(),
            name: PolisView::name_of(root),
            changes,
            cache: Mutex::new(None),
            folder: Mutex::new(FolderState::default()),
            pending: Mutex::new(Refresh::Full),
            rechecks: Mutex::new(Rechecks::kept()),
        }
    }

    /// The project folder's name (the parent of `_polis/`).
    pub fn name_of(root: &Path) -> String {
        let project = if root.file_name().is_some_and(|n| n == "_polis") {
            root.parent().unwrap_or(root)
        } else {
            root
        };
        project.file_name().map_or_else(
            || root.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        )
    }

    /// The generation the latest published change has reached.
    pub fn generation(&self) -> u64 {
        self.changes.borrow().generation
    }

    /// For a publisher without state (`polisd serve`'s watcher): these paths may have changed
    /// (`None`: anything may have). Cheap: nothing is read until a page is asked for.
    pub fn note_changed<'a>(&self, paths: Option<impl IntoIterator<Item = &'a str>>) {
        let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        match paths {
            None => *pending = Refresh::Full,
            Some(paths) => {
                for p in paths {
                    pending.note(p);
                }
            }
        }
    }

    /// The snapshot of the current generation, built now if the cached one is older. Blocking
    /// (without a daemon's state it reads the folder): call it off the async threads.
    pub fn current(&self) -> Arc<Snapshot> {
        let (generation, state) = {
            let change = self.changes.borrow();
            (change.generation, change.state.clone())
        };
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(s) = cache.as_ref().filter(|s| s.generation == generation) {
            return Arc::clone(s);
        }
        // Its ledger (a pointer per settlement, 100k in a large polis) is freed off this
        // request.
        if let Some(old) = cache.take() {
            free_later(old);
        }
        let state = match state {
            Some(published) => {
                // The daemon's polis comes without the chronicle texts; the build reads the
                // files a line at a time.
                let mut polis = (*published.polis).clone();
                polis.findings.extend(
                    published
                        .settled_findings
                        .findings(|slot| published.settled.path_at(slot)),
                );
                Arc::new(PolisState {
                    polis: Arc::new(polis),
                    settled_findings: Default::default(),
                    settled: published.settled.clone(),
                    stats: Arc::clone(&published.stats),
                    copies: Arc::clone(&published.copies),
                })
            }
            None => Arc::new(self.read_folder()),
        };
        let mut rechecks = self.rechecks.lock().unwrap_or_else(|e| e.into_inner());
        let snapshot = Arc::new(build(&self.root, generation, state, &mut rechecks));
        rechecks.retain(&snapshot.polis);
        drop(rechecks);
        *cache = Some(Arc::clone(&snapshot));
        // The build's tables (the duplicate search's, the findings) are freed: glibc keeps the
        // heap they used unless asked (as after a daemon's pass).
        crate::daemon::memory::release_free_memory();
        snapshot
    }

    /// The polis from the folder, reading only what changed since the last time (the rest of
    /// the polis, chronicle included, only when a path outside the settled folder changed).
    fn read_folder(&self) -> PolisState {
        let refresh = std::mem::replace(
            &mut *self.pending.lock().unwrap_or_else(|e| e.into_inner()),
            Refresh::nothing(),
        );
        let mut folder = self.folder.lock().unwrap_or_else(|e| e.into_inner());
        folder.read(&self.root, refresh, &mut crate::fs::snapshot::NoChronicles)
    }
}

/// Reads the polis at `root` from scratch and summarizes it (`polisd report`).
pub fn read(root: &Path, generation: u64) -> Snapshot {
    let state =
        FolderState::default().read(root, Refresh::Full, &mut crate::fs::snapshot::NoChronicles);
    build(root, generation, Arc::new(state), &mut Rechecks::once())
}

/// Summarizes a published state (read without the chronicle texts): the chronicle files are
/// read from disk a line at a time, every rule fed each line ([`crate::operations::chronicle_summary`]),
/// so the build never holds them whole; the parts that change with the clock or live outside
/// the engine (inboxes, `CONSTITUTION.md`) are read here, the rest comes from `state` (the
/// polis, the stats, the conflict copies); an amendment is checked again only when its text
/// changed (`rechecks`).
fn build(
    root: &Path,
    generation: u64,
    state: Arc<PolisState>,
    rechecks: &mut Rechecks,
) -> Snapshot {
    let now = PolisTime::system(state.polis.settings.timezone);
    let mut unread = Vec::new();
    let mut files = crate::fs::chronicle_lines::Files::open(root, &mut unread);
    let chronicle = crate::operations::chronicle_summary(&state.polis, &now, &mut files);
    let state = with_chronicle(state, &chronicle, unread);
    let polis = Arc::clone(&state.polis);
    let daemon = crate::fs::state::read_status(root).ok().flatten();
    // One `lstat` per id asked about (the few open contracts), not a set of every settled id.
    let is_settled = |id: &str| crate::operations::ready::is_in(root, ContractFolder::Settled, id);
    let copies: Vec<ConflictCopy> = state
        .copies
        .iter()
        // Read, not only named: a copy left for a person (conflict markers, not text) is told
        // as such, not as one the daemon merges. Copies are rare; each costs reading two files.
        .map(|(copy, original)| ConflictCopy::read(root, copy.clone(), original.clone()))
        .collect();
    let (findings, resolved) = crate::operations::findings_and_resolved_from(
        &polis,
        &now,
        &is_settled,
        &copies,
        rechecks,
        &chronicle,
        &mut files,
    );
    let malformed = crate::operations::amendment_problems_with(&polis, &now, rechecks);
    let mut summary = crate::operations::status::summarize_from(
        &polis,
        &now,
        daemon,
        (findings.clone(), resolved),
        malformed,
        &state.stats,
        &chronicle.last_activity,
    )
    .unwrap_or_else(|e| {
        tracing::warn!("dashboard: cannot summarize {}: {e:#}", root.display());
        empty_summary(&polis, &now)
    });
    // The polis was read without its settled contracts; the ledger counts them.
    summary.contracts.settled += state.settled.file_count();
    let stats = Arc::clone(&state.stats);
    let mut inbox_notes = BTreeMap::new();
    let inboxes = polis
        .cards
        .keys()
        .map(|id| {
            let (text, note) = crate::protocol::layout::inbox_path(id)
                .map_or((None, None), |rel| read_inbox(root, &rel));
            if let Some(note) = note {
                inbox_notes.insert(id.clone(), note);
            }
            (id.clone(), text)
        })
        .collect();
    let unread = unread_by_cursor(&polis, &inboxes);
    let guardrails = crate::operations::guardrail::list(root);
    let reservations =
        crate::operations::reservation::list(root, &now, &crate::operations::arg::flags)
            .map(|all| all.into_iter().filter(|r| r.active).collect())
            .map_err(|e| e.to_string());
    let mut snapshot = Snapshot {
        generation,
        polis,
        state,
        now,
        summary,
        findings,
        stats,
        history: std::sync::OnceLock::new(),
        inboxes,
        inbox_notes,
        unread,
        guardrails,
        reservations,
        trend: std::sync::OnceLock::new(),
        queue: Vec::new(),
        silenced: crate::operations::console::silenced(root),
        chronicle_files: Vec::new(),
    };
    snapshot.queue = queue::items(&snapshot);
    snapshot.chronicle_files = chronicle.paths;
    snapshot
}

/// `state` with what its chronicle says (who is active, who has left, the person's answers),
/// which later calls read instead of the texts the polis does not hold, and the findings of
/// the chronicle files that could not be read (`unread`).
fn with_chronicle(
    state: Arc<PolisState>,
    chronicle: &crate::protocol::chronicle::summary::Summary,
    unread: Vec<Finding>,
) -> Arc<PolisState> {
    let mut state = Arc::unwrap_or_clone(state);
    let mut polis = Arc::unwrap_or_clone(state.polis);
    polis.chronicle = None;
    polis.archives = Vec::new();
    polis.active_authors = Some(chronicle.active_authors.clone());
    polis.departed = Some(chronicle.departed.clone());
    polis.answers = Some(chronicle.answers.clone());
    polis.findings.extend(unread);
    state.polis = Arc::new(polis);
    Arc::new(state)
}

/// Drops an old snapshot: its polis now, its ledger on a
/// blocking thread of the runtime when there is one (freeing a pointer per settlement is the
/// one part of a new generation that grows with the history).
fn free_later(old: Arc<Snapshot>) {
    let Ok(old) = Arc::try_unwrap(old) else {
        return; // a page still renders it; the last one drops it
    };
    let Snapshot {
        polis,
        state,
        history,
        ..
    } = old;
    drop(polis);
    let Ok(state) = Arc::try_unwrap(state) else {
        return; // its history still goes with this thread: rare (a render in flight)
    };
    let PolisState { polis, settled, .. } = state;
    drop(polis);
    match tokio::runtime::Handle::try_current() {
        Ok(runtime) => {
            runtime.spawn_blocking(move || drop((settled, history)));
        }
        Err(_) => drop((settled, history)),
    }
}

fn empty_summary(polis: &Polis, now: &PolisTime) -> Summary {
    Summary {
        polis: polis.root.display().to_string(),
        now: now.minute_stamp(),
        timezone: now.zone.0.to_string(),
        citizens: Vec::new(),
        contracts: Default::default(),
        explore_rate: polis
            .settings
            .explore_rate
            .unwrap_or(crate::protocol::routing::stats::DEFAULT_EXPLORE_RATE),
        exploration: Default::default(),
        tags: Vec::new(),
        amendments: Vec::new(),
        malformed_amendments: Vec::new(),
        recent_outcomes: Vec::new(),
        councils: Vec::new(),
        findings: crate::operations::status::FindingsSummary {
            errors: 0,
            warnings: 0,
            resolved: 0,
            newest: Vec::new(),
        },
        worktrees: Default::default(),
        daemon: None,
        stale_daemon_pid: None,
    }
}

/// An inbox as the pages show it, and a note when that is not the file as it is. An inbox
/// over [`INBOX_LIMIT`] is shown by its last [`INBOX_LIMIT`] bytes from a line start (notices
/// are appended, so those are the newest); bytes that are not UTF-8 are shown replaced. Only
/// a file polisd would not read at all (a link, not a regular file) is `None`, with why.
fn read_inbox(root: &Path, rel: &str) -> (Option<String>, Option<String>) {
    use std::io::{Read as _, Seek as _};
    let why = match crate::fs::snapshot::read_text(root, rel, Some(INBOX_LIMIT)) {
        Ok(text) => return (text, None),
        Err(finding) => finding.message,
    };
    let parent = rel.rsplit_once('/').map_or("", |(p, _)| p);
    if crate::fs::snapshot::linked_folder(root, parent).is_some() {
        return (None, Some(why));
    }
    let read = || -> std::io::Result<(Vec<u8>, u64)> {
        let mut file = crate::fs::snapshot::open_no_follow(&root.join(rel))?;
        let meta = file.metadata()?;
        if !meta.is_file() {
            return Err(std::io::Error::other("not a regular file"));
        }
        let start = meta.len().saturating_sub(INBOX_LIMIT);
        file.seek(std::io::SeekFrom::Start(start))?;
        let mut bytes = Vec::new();
        file.take(INBOX_LIMIT).read_to_end(&mut bytes)?;
        Ok((bytes, start))
    };
    let Ok((mut bytes, start)) = read() else {
        return (None, Some(why));
    };
    let mut notes = Vec::new();
    if start > 0 {
        // From the first whole line: a notice cut in its middle is not shown.
        let line = bytes.iter().position(|b| *b == b'\n').map_or(0, |i| i + 1);
        bytes.drain(..line);
        notes.push(format!(
            "inbox.md is {} bytes: only its last {} (the newest messages) are shown",
            start + INBOX_LIMIT,
            INBOX_LIMIT
        ));
    }
    let text = match String::from_utf8(bytes) {
        Ok(text) => text,
        Err(e) => {
            notes.push(
                "inbox.md is not valid UTF-8 text: the bytes that are not are shown as \u{fffd}"
                    .to_string(),
            );
            String::from_utf8_lossy(e.as_bytes()).into_owned()
        }
    };
    (Some(text), Some(notes.join("; ")))
}

/// Per citizen, the notices of its inbox that its read cursor (`notices_read` in its own
/// `status.md`) does not name, as `polisd inbox` counts them.
fn unread_by_cursor(
    polis: &Polis,
    inboxes: &BTreeMap<String, Option<String>>,
) -> BTreeMap<String, usize> {
    use crate::protocol::delivery::notice;
    inboxes
        .iter()
        .map(|(id, text)| {
            let n = text.as_deref().map_or(0, |text| {
                let read = notice::read_ids(&polis.status(id).fields);
                notice::unread(&notice::parse_inbox(text), &read).len()
            });
            (id.clone(), n)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dashboard::pages::chronicle::{window, TAIL};

    /// A snapshot keeps what the build found in the chronicle (its findings, who is active) and
    /// not the text: what a view holds does not grow with the file. The chronicle page reads
    /// its window from disk.
    #[test]
    fn a_snapshot_keeps_what_the_chronicle_says_not_its_text() {
        let (_dir, root, _writer) = crate::operations::test_polis::polis_with(&["alpha-agent"]);
        let stamp = PolisTime::system(Default::default()).minute_stamp();
        let mut text = String::from("# Chronicle\n\n");
        let lines = 3 * TAIL + 5;
        for k in 0..lines {
            text.push_str(&format!(
                "- {stamp} | alpha-agent | worked on | - | step {k}\n"
            ));
        }
        text.push_str("- not a line\n");
        std::fs::write(root.join("chronicle.md"), &text).unwrap();
        let bad_line = 3 + lines;
        let (_tx, rx) = watch::channel(Change::default());
        let view = PolisView::new(&root, rx);
        let s = view.current();
        assert!(s.polis.chronicle.is_none() && s.polis.archives.is_empty());
        assert!(s.state.polis.chronicle.is_none() && s.state.polis.archives.is_empty());
        assert_eq!(s.chronicle_files, ["chronicle.md"]);
        assert!(
            s.findings
                .iter()
                .any(|f| f.path == "chronicle.md" && f.line == Some(bad_line)),
            "{:?}",
            s.findings
        );
        assert!(s.polis.active_authors(&s.now).contains("alpha-agent"));
        assert!(s.polis.departed().is_empty());
        let w = window(&root, "chronicle.md", 0, &|_| true);
        // The heading is a line too (a malformed one, as the findings say).
        assert_eq!((w.total, w.shown.len()), (lines + 2, TAIL));
        assert_eq!(w.shown[0], (bad_line, "- not a line".to_string()));
    }

    /// A chronicle conflict copy holding git's conflict markers is left for a person (the daemon
    /// no longer merges such a copy): the dashboard says so, and what to do, rather than
    /// promising a merge that never comes.
    #[test]
    fn a_chronicle_copy_with_conflict_markers_is_shown_as_left_for_a_person() {
        let (_dir, root, _writer) = crate::operations::test_polis::polis_with(&["alpha-agent"]);
        let stamp = PolisTime::system(Default::default()).minute_stamp();
        let copy = "chronicle.sync-conflict-20260301-101500-ABCDEFG.md";
        std::fs::write(
            root.join(copy),
            format!(
                "# Chronicle\n\n<<<<<<< HEAD\n- {stamp} | alpha-agent | noted | - | ours\n=======\n- {stamp} | alpha-agent | noted | - | theirs\n>>>>>>> branch\n"
            ),
        )
        .unwrap();
        let (_tx, rx) = watch::channel(Change::default());
        let s = PolisView::new(&root, rx).current();
        let f = s
            .findings
            .iter()
            .find(|f| f.code == crate::protocol::finding::Code::ConflictCopy && f.path == copy)
            .unwrap_or_else(|| panic!("no P009 for the copy: {:?}", s.findings));
        assert!(!f.message.contains("daemon merges"), "{}", f.message);
        assert!(f.message.contains("does not merge"), "{}", f.message);
        assert!(f.message.contains("without"), "{}", f.message);
        assert!(f.message.contains("delete this copy"), "{}", f.message);
    }

    /// The build starts from a polis read without the chronicle texts and reads the files a
    /// line at a time; what it finds is what `check` finds over the texts in memory (the
    /// findings, the resolved ones, who is active, who has left, the person's answers).
    #[test]
    fn the_build_reads_the_chronicle_a_line_at_a_time_and_finds_what_check_finds() {
        let (_dir, root, _writer) =
            crate::operations::test_polis::polis_with(&["alpha-agent", "bravo-agent"]);
        let now = PolisTime::system(Default::default());
        let stamp = now.minute_stamp();
        let lines = [
            format!("- {stamp} | alpha-agent | joined polis | - | hi"),
            format!("- {stamp} | alpha-agent | Did Things | - | -"),
            format!("- {stamp} | bravo-agent | worked on | - | twice"),
            format!("- {stamp} | bravo-agent | worked on | - | twice"),
            format!("- {stamp} | alpha-agent | retracted line | - | line 4"),
            format!("- {stamp} | bravo-agent | left polis | - | bye"),
            format!(
                "- {stamp} | polis-daemon | answered queue item | - | new-citizen/x later by ana"
            ),
            "not a line".to_string(),
        ];
        std::fs::write(
            root.join("chronicle.md"),
            format!("# Chronicle\n\n{}\n", lines.join("\n")),
        )
        .unwrap();
        let (_tx, rx) = watch::channel(Change::default());
        let view = PolisView::new(&root, rx);
        let read = view.read_folder();
        assert!(read.polis.chronicle.is_none() && read.polis.archives.is_empty());
        let s = view.current();

        let polis = Polis::read(&root);
        let (found, resolved) = crate::operations::findings_and_resolved(&polis, &s.now);
        assert_eq!(s.findings, found);
        assert_eq!(s.summary.findings.resolved, resolved.len());
        assert_eq!(resolved.len(), 1, "{resolved:?}");
        assert!(found
            .iter()
            .any(|f| f.code == crate::protocol::finding::Code::Duplicate));
        assert_eq!(s.polis.active_authors(&s.now), polis.active_authors(&s.now));
        assert_eq!(s.polis.departed(), polis.departed());
        assert_eq!(s.polis.departed().len(), 1);
        let answers =
            crate::protocol::contracts::person_queue::answers(polis.chronicle_text().unwrap());
        assert_eq!(s.polis.answers.as_ref(), Some(&answers));
        assert_eq!(answers.len(), 1);
        let status = crate::operations::status::summarize(&polis, &s.now, None).unwrap();
        let last = |rows: &[crate::operations::status::CitizenRow]| {
            rows.iter()
                .map(|c| (c.id.clone(), c.last_activity.clone()))
                .collect::<Vec<_>>()
        };
        assert_eq!(last(&s.summary.citizens), last(&status.citizens));
        assert!(s.summary.citizens.iter().all(|c| c.last_activity.is_some()));
    }
}
