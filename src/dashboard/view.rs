//! What the pages read: one polis, read through `fs::snapshot` and summarized through
//! `operations`, cached until the next change is published. Nothing is read while nobody
//! looks: a change only bumps a generation, and the next request re-reads the folder.

use crate::daemon::Change;
use crate::fs::snapshot::Polis;
use crate::operations::status::Summary;
use crate::protocol::clock::PolisTime;
use crate::protocol::finding::Finding;
use crate::protocol::stats::{RoutingStats, TagHistory};
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
}

/// Everything a page may show, read at one generation.
pub struct Snapshot {
    pub generation: u64,
    pub polis: Polis,
    pub now: PolisTime,
    pub summary: Summary,
    pub findings: Vec<Finding>,
    pub stats: RoutingStats,
    pub history: Vec<(String, TagHistory)>,
    /// Per citizen: `inbox.md` as read (`None`: no inbox).
    pub inboxes: BTreeMap<String, Option<String>>,
    pub queue: Vec<super::queue::Item>,
}

impl PolisView {
    pub fn new(root: &Path, changes: watch::Receiver<Change>) -> PolisView {
        PolisView {
            root: root.to_path_buf(),
            name: PolisView::name_of(root),
            changes,
            cache: Mutex::new(None),
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

    /// The snapshot of the current generation, read now if the cached one is older. Blocking
    /// (it reads the folder): call it off the async threads.
    pub fn current(&self) -> Arc<Snapshot> {
        let generation = self.generation();
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(s) = cache.as_ref().filter(|s| s.generation == generation) {
            return Arc::clone(s);
        }
        let snapshot = Arc::new(read(&self.root, generation));
        *cache = Some(Arc::clone(&snapshot));
        snapshot
    }
}

/// Reads and summarizes the polis at `root`.
pub fn read(root: &Path, generation: u64) -> Snapshot {
    let polis = Polis::read(root);
    let now = PolisTime::system(polis.settings.timezone);
    let daemon = crate::fs::state::read_status(root).ok().flatten();
    let summary = crate::operations::status::summarize(&polis, &now, daemon).unwrap_or_else(|e| {
        tracing::warn!("dashboard: cannot summarize {}: {e:#}", root.display());
        empty_summary(&polis, &now)
    });
    let findings = crate::operations::findings(&polis, &now);
    // From the settlements themselves: the page is current even with no daemon reconciling.
    let stats = crate::protocol::stats::reconcile_over(&polis.settlements, None);
    let history = crate::protocol::stats::history(&polis.settlements);
    let inboxes = polis
        .cards
        .keys()
        .map(|id| {
            let text = crate::protocol::layout::inbox_path(id).and_then(|rel| {
                crate::fs::snapshot::read_text(root, &rel, Some(INBOX_LIMIT))
                    .ok()
                    .flatten()
            });
            (id.clone(), text)
        })
        .collect();
    let mut snapshot = Snapshot {
        generation,
        polis,
        now,
        summary,
        findings,
        stats,
        history,
        inboxes,
        queue: Vec::new(),
    };
    snapshot.queue = super::queue::items(&snapshot);
    snapshot
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
            .unwrap_or(crate::protocol::stats::DEFAULT_EXPLORE_RATE),
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

/// Notices waiting in an inbox: the blocks (`### …` headings) of `inbox.md`; the owner moves
/// what they have read to `inbox-archive.md` (SPEC §2).
pub fn unread(inbox: Option<&str>) -> usize {
    inbox.map_or(0, |t| t.lines().filter(|l| l.starts_with("### ")).count())
}
