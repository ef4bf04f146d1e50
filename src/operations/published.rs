//! The state of one polis as a reader beside its writer sees it (the dashboard): the polis as
//! last read without its settled contracts, the ledger of those as a shared snapshot, and the
//! routing stats they give.
//!
//! Two producers fill it. The daemon publishes one after every pass from what it already holds
//! (`daemon::Change::state`): nothing is read for it. A reader without a daemon (`polisd
//! serve`, `polisd report`) keeps a [`FolderState`]: the settled contracts as last read, each
//! with its fingerprint, so a change reads the files it names (or, after a rescan, stats each
//! settled file and reads those that moved), never the whole folder again.

use crate::fs::chronicle_copy::ChronicleCopies;
use crate::fs::snapshot::{self, Polis};
use crate::fs::state::Fingerprint;
use crate::protocol::clock::PolisZone;
use crate::protocol::finding::{Code, Finding};
use crate::protocol::frontmatter::Record;
use crate::protocol::layout::{self, ContractFolder};
use crate::protocol::routing::policy::History;
use crate::protocol::routing::stats::{Ledger, LedgerSnapshot, Recorded, RoutingStats, Settlement};
use crate::yaml::Value;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::Path;
use std::sync::Arc;

/// One polis at one moment, shared between threads.
#[derive(Debug, Clone)]
pub struct PolisState {
    /// The polis without its settled contracts (`contracts` holds open and abandoned ones,
    /// `settlements` is empty); its `findings` and `settled_findings` together are all of
    /// them (the daemon keeps those about settled files apart, see [`SettledFindings`]).
    /// The daemon leaves `chronicle` and `archives` out (`None`, empty): a reader fills them
    /// from copies of its own (`fs::chronicle_copy`), as [`FolderState::read`] does.
    pub polis: Arc<Polis>,
    /// Findings about settled files that `polis.findings` leaves out.
    pub settled_findings: SettledFindingsList,
    /// Every file of `contracts/settled/`, with its settlement if it gives one.
    pub settled: LedgerSnapshot,
    /// The stats `settled` gives (what `routing_stats.yml` holds once reconciled).
    pub stats: Arc<RoutingStats>,
    /// The sync conflict copies in the polis, (copy, original), sorted: as the daemon's last
    /// sync step left them (those it merged or removed are gone), or as a [`FolderState`]
    /// keeps them (the settled folder's from its events, the rest walked on each read).
    pub copies: Arc<Vec<(String, String)>>,
}

/// One settled file as read.
#[derive(Debug)]
pub struct SettledFile {
    pub fingerprint: Fingerprint,
    pub findings: Vec<Finding>,
    pub settlement: Option<Settlement>,
    /// Its frontmatter, when it parsed.
    pub record: Option<Record>,
}

/// Reads one settled file (`rel` below `contracts/settled/`, whose folder the caller checked
/// for links); `None` when it is gone.
pub fn read_settled(root: &Path, rel: &str, zone: PolisZone) -> Option<SettledFile> {
    let mut read = SettledFile {
        fingerprint: Fingerprint::default(),
        findings: Vec::new(),
        settlement: None,
        record: None,
    };
    let text = match snapshot::read_text_and_metadata_in_checked_folder(
        root,
        rel,
        Some(snapshot::MAX_RECORD_BYTES),
    ) {
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
    // Git's conflict markers: reported, not parsed (docs/sync.md).
    if let Some(f) = snapshot::conflict_markers(rel, &text) {
        read.findings = vec![f];
        return Some(read);
    }
    let record = match crate::protocol::frontmatter::parse(&text) {
        Ok(record) => record,
        Err(e) => {
            read.findings =
                vec![crate::protocol::contracts::contract::unreadable_frontmatter(rel, &e)];
            return Some(read);
        }
    };
    let settled = crate::protocol::contracts::contract::settlement_of(rel, &record, zone);
    read.findings = settled.findings;
    // SPEC §6 as `check` applies it to a settled file, here where the file is read: the
    // daemon's ledger and a `FolderState` keep them until the file changes.
    let stem = crate::protocol::layout::record_stem(rel);
    read.findings
        .extend(super::records::settled_contract_findings(
            rel, stem, &text, &record,
        ));
    read.settlement = settled.settlement;
    read.record = Some(record);
    Some(read)
}

/// What may have changed since a [`FolderState`] last read the folder.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Refresh {
    /// Anything (the first read, a rescan): every settled file is stat'ed, the rest of the
    /// polis read again.
    #[default]
    Full,
    /// Only these paths of `contracts/settled/` (relative to `_polis/`) and, when `others`,
    /// something outside that folder (the rest of the polis is read again only then).
    Paths {
        settled: BTreeSet<String>,
        others: bool,
    },
}

impl Refresh {
    /// Nothing changed yet.
    pub fn nothing() -> Refresh {
        Refresh::Paths {
            settled: BTreeSet::new(),
            others: false,
        }
    }

    /// Whether the polis outside `contracts/settled/` may have changed.
    pub fn others(&self) -> bool {
        match self {
            Refresh::Full => true,
            Refresh::Paths { others, .. } => *others,
        }
    }

    /// `rel` may have changed. A path that is a folder of settled contracts, or below one,
    /// makes it a full look; any other path outside that folder, a read of the rest.
    pub fn note(&mut self, rel: &str) {
        let Refresh::Paths {
            settled: paths,
            others,
        } = self
        else {
            return;
        };
        let dir = ContractFolder::Settled.dir();
        let plain = rel
            .strip_prefix(dir)
            .and_then(|r| r.strip_prefix('/'))
            .is_some_and(|name| !name.contains('/') && name.ends_with(".md"));
        if plain {
            paths.insert(rel.to_string());
        } else if rel == dir || rel == "contracts" || rel.is_empty() || rel.starts_with(dir) {
            *self = Refresh::Full;
        } else {
            *others = true;
        }
    }
}

/// Sync conflict copies as (copy, original) paths relative to `_polis/`.
type Copies = Vec<(String, String)>;

/// The findings about settled files, by the slot each file lies in in the reader's ledger
/// ([`Ledger::slot`]), as a long-running reader keeps them: they are not read again until their
/// file changes. An old polis may hold one on most of its settled files (no quality score, a
/// renamed id), so each file costs a pointer in a vector indexed by slot, and its path is the
/// ledger's: what a file holds (its findings, their messages with the file's own name taken
/// out, and who wrote it) is kept once for all the files that hold the same, and a
/// [`Finding`] is made again when asked for. The list is shared with a [`PolisState`] as it is,
/// and copied only when it changes while a reader still holds it.
///
/// The caller keeps the slots true: a file's findings are removed before the ledger forgets
/// it, and put again under the slot [`Ledger::record`] gives it.
#[derive(Debug, Default)]
pub struct SettledFindings {
    list: SettledFindingsList,
    /// Each distinct [`FileFindings`] with the number of files holding it.
    interned: HashMap<Arc<FileFindings>, u32>,
}

/// What one settled file holds, without its path: its findings and its authors (its owner,
/// then its opener: a daemon tells them).
#[derive(Debug, PartialEq, Eq, Hash)]
struct FileFindings {
    authors: [Option<Box<str>>; 2],
    findings: Box<[KeptFinding]>,
}

/// A [`Finding`] about a settled file, its path left to the ledger.
#[derive(Debug, PartialEq, Eq, Hash)]
struct KeptFinding {
    code: Code,
    severity: crate::protocol::finding::Severity,
    line: Option<usize>,
    /// The message, each occurrence of the file's name (without `.md`) replaced by
    /// [`STEM_MARK`] when `stemmed`: what differs from file to file is mostly that.
    message: Box<str>,
    stemmed: bool,
    /// The finding's path when it is not the file's own.
    path: Option<Box<str>>,
}

/// Stands for the file's name in a kept message (a control character: `Finding`'s messages
/// have theirs escaped, and a message holding one anyway is kept whole).
const STEM_MARK: char = '\u{0}';

impl KeptFinding {
    fn of(rel: &str, stem: &str, f: Finding) -> KeptFinding {
        let stemmed = !stem.is_empty() && !f.message.contains(STEM_MARK);
        KeptFinding {
            code: f.code,
            severity: f.severity,
            line: f.line,
            message: if stemmed {
                f.message.replace(stem, STEM_MARK.encode_utf8(&mut [0; 4]))
            } else {
                f.message
            }
            .into(),
            stemmed,
            path: (f.path != rel).then(|| f.path.into()),
        }
    }

    fn finding(&self, rel: &str, stem: &str) -> Finding {
        Finding {
            code: self.code,
            severity: self.severity,
            path: self.path.as_deref().unwrap_or(rel).to_string(),
            line: self.line,
            message: if self.stemmed {
                self.message.replace(STEM_MARK, stem)
            } else {
                self.message.to_string()
            },
        }
    }
}

impl FileFindings {
    fn findings<'a>(&'a self, rel: &'a str) -> impl Iterator<Item = Finding> + 'a {
        let stem = layout::record_stem(rel);
        self.findings.iter().map(move |f| f.finding(rel, stem))
    }
}

/// The findings about settled files as a [`PolisState`] shares them: by ledger slot, read with
/// the ledger (or its snapshot) they were kept beside.
#[derive(Debug, Clone, Default)]
pub struct SettledFindingsList(Arc<BySlot>);

#[derive(Debug, Clone, Default)]
struct BySlot {
    /// What the file in each slot holds (a slot past the end holds nothing).
    files: Vec<Option<Arc<FileFindings>>>,
    /// How many slots hold something.
    count: usize,
}

impl BySlot {
    fn get(&self, slot: u32) -> Option<&Arc<FileFindings>> {
        self.files.get(slot as usize).and_then(Option::as_ref)
    }
}

impl SettledFindingsList {
    /// Every finding, file by file in path order; `path_at` names the file in a slot (the
    /// ledger's, or the snapshot's published with this list).
    pub fn findings<'a>(
        &'a self,
        path_at: impl Fn(u32) -> Option<&'a str>,
    ) -> impl Iterator<Item = Finding> + 'a {
        let mut files: Vec<(&str, &FileFindings)> = self
            .slots()
            .filter_map(|slot| Some((path_at(slot)?, &**self.0.get(slot)?)))
            .collect();
        files.sort_unstable_by(|a, b| a.0.cmp(b.0));
        files.into_iter().flat_map(|(rel, f)| f.findings(rel))
    }

    /// The slots that hold findings, in slot order.
    pub fn slots(&self) -> impl Iterator<Item = u32> + '_ {
        self.0
            .files
            .iter()
            .enumerate()
            .filter(|(_, f)| f.is_some())
            .map(|(slot, _)| slot as u32)
    }

    /// How many files have findings.
    pub fn len(&self) -> usize {
        self.0.count
    }

    pub fn is_empty(&self) -> bool {
        self.0.count == 0
    }

    /// Whether both are the same list (not a copy).
    pub fn same(&self, other: &SettledFindingsList) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl SettledFindings {
    /// Records a settled file as read: what it settles (and the caller's `meta`) in `ledger`,
    /// its findings and authors here, under the slot it lies in now. What the ledger did, and
    /// whether the file's findings changed.
    #[allow(clippy::too_many_arguments)]
    pub fn record<M>(
        &mut self,
        ledger: &mut Ledger<M>,
        rel: &str,
        meta: M,
        settlement: Option<Settlement>,
        findings: Vec<Finding>,
        authors: [Option<&str>; 2],
    ) -> (Recorded, bool) {
        let before = ledger.slot(rel);
        let recorded = ledger.record(rel, meta, settlement);
        let moved = before.filter(|&slot| slot != recorded.slot);
        if let Some(slot) = moved {
            self.remove(slot);
        }
        let changed = self.put(recorded.slot, rel, findings, authors) || moved.is_some();
        (recorded, changed)
    }

    /// Forgets the settled file `rel`: its findings here, then the file in `ledger` (which
    /// frees its slot); whether the ledger held it.
    pub fn forget<M>(&mut self, ledger: &mut Ledger<M>, rel: &str) -> bool {
        if let Some(slot) = ledger.slot(rel) {
            self.remove(slot);
        }
        ledger.forget(rel)
    }

    /// Records what the file `rel` in `slot` holds now (nothing: forgotten) and who wrote it;
    /// whether its findings changed.
    fn put(
        &mut self,
        slot: u32,
        rel: &str,
        findings: Vec<Finding>,
        authors: [Option<&str>; 2],
    ) -> bool {
        if findings.is_empty() {
            return self.remove(slot);
        }
        let stem = layout::record_stem(rel);
        let file = FileFindings {
            authors: authors.map(|a| a.map(Into::into)),
            findings: findings
                .into_iter()
                .map(|f| KeptFinding::of(rel, stem, f))
                .collect(),
        };
        // Whether the findings changed (a change of authors only is kept, not reported).
        let changed = match self.list.0.get(slot) {
            Some(kept) if **kept == file => return false,
            Some(kept) => kept.findings != file.findings,
            None => true,
        };
        let file = match self.interned.get_key_value(&file) {
            Some((kept, _)) => Arc::clone(kept),
            None => Arc::new(file),
        };
        *self.interned.entry(Arc::clone(&file)).or_insert(0) += 1;
        let list = Arc::make_mut(&mut self.list.0);
        let at = slot as usize;
        if list.files.len() <= at {
            list.files.resize(at + 1, None);
        }
        match list.files[at].replace(file) {
            Some(old) => self.release(&old),
            None => list.count += 1,
        }
        changed
    }

    /// One file fewer holds `file`.
    fn release(&mut self, file: &Arc<FileFindings>) {
        if let Some(count) = self.interned.get_mut(file) {
            *count -= 1;
            if *count == 0 {
                self.interned.remove(file);
            }
        }
    }

    /// Forgets what the file in `slot` holds; whether it held something.
    fn remove(&mut self, slot: u32) -> bool {
        if self.list.0.get(slot).is_none() {
            return false;
        }
        let list = Arc::make_mut(&mut self.list.0);
        let old = list.files[slot as usize].take();
        list.count -= 1;
        // Trailing empty slots are not kept (a polis whose findings were fixed holds none).
        while list.files.last().is_some_and(Option::is_none) {
            list.files.pop();
        }
        if let Some(old) = old {
            self.release(&old);
        }
        true
    }

    pub fn clear(&mut self) {
        *self = SettledFindings::default();
    }

    /// The findings about the file `rel` in `slot`, made again from what is kept.
    pub fn get(&self, slot: u32, rel: &str) -> Option<Vec<Finding>> {
        Some(self.list.0.get(slot)?.findings(rel).collect())
    }

    /// Whether the file in `slot` has a finding with this code.
    pub fn has(&self, slot: u32, code: Code) -> bool {
        self.list
            .0
            .get(slot)
            .is_some_and(|f| f.findings.iter().any(|f| f.code == code))
    }

    /// Who wrote the file in `slot`, as [`SettledFindings::put`] was told (nothing for a file
    /// without findings).
    pub fn authors(&self, slot: u32) -> [Option<&str>; 2] {
        match self.list.0.get(slot) {
            Some(f) => [f.authors[0].as_deref(), f.authors[1].as_deref()],
            None => [None, None],
        }
    }

    pub fn contains(&self, slot: u32) -> bool {
        self.list.0.get(slot).is_some()
    }

    /// The slots that hold findings, in slot order.
    pub fn slots(&self) -> impl Iterator<Item = u32> + '_ {
        self.list.slots()
    }

    /// Every file's findings; the same list until the next change.
    pub fn all(&self) -> SettledFindingsList {
        self.list.clone()
    }
}

/// The settled contracts of a polis as a reader without a daemon last read them.
#[derive(Debug, Default)]
pub struct FolderState {
    ledger: Ledger<Fingerprint>,
    findings: SettledFindings,
    /// Files read within a clock tick of their change: read again at their next look.
    racy: crate::fs::state::Unvouched,
    zone: Option<PolisZone>,
    /// The sync conflict copies in `contracts/settled/` (listed on a full look, else kept
    /// from the paths named), so a read does not list ten thousand names to find them.
    settled_copies: BTreeSet<(String, String)>,
    /// The rest of the polis as last read (without the settled files' findings and without
    /// the chronicle files, which each read adds) and its conflict copies: read again only when a path outside the settled folder changed.
    rest: Option<(Arc<Polis>, Copies)>,
    /// The ledger's snapshot and the version it was taken at.
    snapshot: Option<(u64, LedgerSnapshot)>,
}

impl FolderState {
    /// The polis now: the settled contracts brought up to date as `refresh` says, the rest
    /// read again when `refresh` says it may have changed (small, but its amendments are
    /// parsed), else as last read. Whether the rest was read is [`Refresh::others`] (or this
    /// was the first read): a caller keeping chronicle copies forgets unseen ones only then.
    pub fn read(
        &mut self,
        root: &Path,
        refresh: Refresh,
        chronicles: &mut dyn snapshot::ChronicleSource,
    ) -> PolisState {
        let (rest, rest_copies) = match self.rest.take() {
            Some(rest) if !refresh.others() => rest,
            _ => (
                Arc::new(Polis::read_using(root, false, &mut snapshot::NoChronicles)),
                snapshot::conflict_copies_but(root, Some(ContractFolder::Settled.dir())),
            ),
        };
        let mut polis = (*rest).clone();
        // The chronicle files come from `chronicles` on every read, and the rest is kept
        // without them: a reader that drops them after its read (the dashboard) holds no
        // chronicle text between reads, and one that keeps copies appends to them in place.
        let (chronicle, archives) =
            snapshot::read_chronicles(root, chronicles, &mut polis.findings);
        polis.chronicle = chronicle;
        polis.archives = archives;
        let zone = polis.settings.timezone;
        let refresh = if self.zone == Some(zone) {
            refresh
        } else {
            // Instants depend on the zone: everything is read again.
            *self = FolderState {
                zone: Some(zone),
                ..FolderState::default()
            };
            Refresh::Full
        };
        self.refresh(root, zone, refresh, &mut polis.findings);
        let findings = self.findings.all();
        polis
            .findings
            .extend(findings.findings(|slot| self.ledger.path_at(slot)));
        let stats = self.ledger.stats(&Value::Null, &Value::Null);
        let mut copies = rest_copies.clone();
        copies.extend(self.settled_copies.iter().cloned());
        copies.sort();
        self.rest = Some((rest, rest_copies));
        let version = self.ledger.version();
        let settled = match &self.snapshot {
            Some((v, s)) if *v == version => s.clone(),
            _ => {
                let s = self.ledger.snapshot();
                self.snapshot = Some((version, s.clone()));
                s
            }
        };
        PolisState {
            polis: Arc::new(polis),
            settled_findings: SettledFindingsList::default(),
            settled,
            stats: Arc::new(stats),
            copies: Arc::new(copies),
        }
    }

    fn refresh(&mut self, root: &Path, zone: PolisZone, refresh: Refresh, out: &mut Vec<Finding>) {
        let dir = ContractFolder::Settled.dir();
        if let Some(link) = snapshot::linked_folder(root, dir) {
            self.ledger = Ledger::default();
            self.findings.clear();
            self.settled_copies.clear();
            out.push(Finding::error(
                Code::Unreadable,
                dir,
                None,
                format!("`{link}` is a symbolic link, which polisd never follows; replace it with a folder"),
            ));
            return;
        }
        let candidates: Vec<String> = match refresh {
            Refresh::Paths { settled: paths, .. } => paths
                .into_iter()
                .filter(|rel| {
                    let name = rel.rsplit('/').next().unwrap_or(rel);
                    if layout::is_conflict_copy(name) {
                        self.note_copy(root, rel);
                    }
                    !layout::is_ignored_name(name)
                })
                .collect(),
            Refresh::Full => {
                self.settled_copies = snapshot::conflict_copies_in(root, dir)
                    .into_iter()
                    .collect();
                let listed: HashSet<String> = snapshot::list(root, dir, ".md", out)
                    .into_iter()
                    .map(|e| e.rel)
                    .collect();
                let gone: Vec<String> = self
                    .ledger
                    .files()
                    .map(|(rel, _, _)| rel)
                    .filter(|rel| !listed.contains(*rel))
                    .map(str::to_string)
                    .collect();
                for rel in gone {
                    self.forget(&rel);
                }
                listed.into_iter().collect()
            }
        };
        let (held, mut to_read): (Vec<String>, Vec<String>) = candidates
            .into_iter()
            .partition(|rel| self.ledger.contains_file(rel));
        let stats = snapshot::par_map(&held, |rel| {
            std::fs::symlink_metadata(root.join(rel))
                .ok()
                .map(|m| Fingerprint::of(&m))
        });
        for (rel, fingerprint) in held.into_iter().zip(stats) {
            let unreadable = self
                .ledger
                .slot(&rel)
                .is_some_and(|slot| self.findings.has(slot, Code::Unreadable));
            match fingerprint {
                None => self.forget(&rel),
                Some(fp)
                    if !unreadable
                        && self
                            .ledger
                            .meta(&rel)
                            .is_some_and(|held| self.racy.vouches(&rel, held, &fp)) => {}
                Some(_) => to_read.push(rel),
            }
        }
        let read = snapshot::par_map(&to_read, |rel| {
            read_settled(root, rel, zone).map(|f| (f.fingerprint, f.findings, f.settlement))
        });
        let read_at = crate::fs::state::read_instant();
        for (rel, read) in to_read.into_iter().zip(read) {
            match read {
                None => self.forget(&rel),
                Some((fingerprint, findings, settlement)) => {
                    self.racy.note_read(&rel, &fingerprint, read_at);
                    self.findings.record(
                        &mut self.ledger,
                        &rel,
                        fingerprint,
                        settlement,
                        findings,
                        [None, None],
                    );
                }
            }
        }
    }

    /// A conflict copy in the settled folder was named by an event: kept while it is a file.
    fn note_copy(&mut self, root: &Path, rel: &str) {
        let Some(original) = layout::conflict_original_path(rel) else {
            return;
        };
        let entry = (rel.to_string(), original);
        match std::fs::symlink_metadata(root.join(rel)) {
            Ok(meta) if meta.is_file() => {
                self.settled_copies.insert(entry);
            }
            _ => {
                self.settled_copies.remove(&entry);
            }
        }
    }

    fn forget(&mut self, rel: &str) {
        self.racy.forget(rel);
        self.findings.forget(&mut self.ledger, rel);
    }
}

/// [`FolderState::read`] for a reader that keeps chronicle copies between reads: the copies of
/// archives the read did not see are forgotten when the rest of the polis was read again.
pub fn read_kept(
    folder: &mut FolderState,
    root: &Path,
    refresh: Refresh,
    chronicles: &mut ChronicleCopies,
) -> PolisState {
    let others = refresh.others();
    let state = folder.read(root, refresh, chronicles);
    if others {
        chronicles.forget_unseen();
    }
    state
}

/// The polis as a long-running reader without a daemon keeps it between calls (the MCP
/// server): the settled contracts as last read ([`FolderState`]), the chronicle copies, and
/// what its watcher reported since. A call reads what changed, not 10k settled files again.
/// Unwatched ([`KeptPolis::unwatched`]), every read is a full look: each settled file is
/// stat'ed and the rest of the polis read again.
#[derive(Debug)]
pub struct KeptPolis {
    folder: FolderState,
    chronicles: ChronicleCopies,
    pending: Refresh,
    watched: bool,
    /// What the router learns from the last read's settled contracts, kept while they stay
    /// the same (building it from 10k settlements was most of a routing).
    history: Option<(LedgerSnapshot, Arc<History>)>,
    /// The settled folder's files in path order, kept the same way (a page of them is listed
    /// without listing 10k names).
    settled_entries: Option<(LedgerSnapshot, Arc<Vec<snapshot::Entry>>)>,
}

impl KeptPolis {
    /// For a caller whose watcher reports every change through [`KeptPolis::note_changed`].
    pub fn watched() -> KeptPolis {
        KeptPolis {
            watched: true,
            ..KeptPolis::unwatched()
        }
    }

    /// For a caller without a watcher: every read looks at everything.
    pub fn unwatched() -> KeptPolis {
        KeptPolis {
            folder: FolderState::default(),
            chronicles: ChronicleCopies::default(),
            pending: Refresh::Full,
            watched: false,
            history: None,
            settled_entries: None,
        }
    }

    /// These paths (relative to `_polis/`) may have changed; `None`: anything may have.
    pub fn note_changed<'a>(&mut self, paths: Option<impl IntoIterator<Item = &'a str>>) {
        match paths {
            None => self.pending = Refresh::Full,
            Some(paths) => {
                for p in paths {
                    self.pending.note(p);
                }
            }
        }
    }

    /// The polis now, reading only what may have changed since the last read.
    pub fn read(&mut self, root: &Path) -> PolisState {
        let next = if self.watched {
            Refresh::nothing()
        } else {
            Refresh::Full
        };
        let refresh = std::mem::replace(&mut self.pending, next);
        read_kept(&mut self.folder, root, refresh, &mut self.chronicles)
    }

    /// The settled files of `state` (read by [`KeptPolis::read`]) as a listing of the folder
    /// gives them, in path order.
    pub fn settled_entries(&mut self, state: &PolisState) -> Arc<Vec<snapshot::Entry>> {
        match &self.settled_entries {
            Some((snapshot, kept)) if snapshot.same(&state.settled) => Arc::clone(kept),
            _ => {
                let mut entries: Vec<snapshot::Entry> = state
                    .settled
                    .paths()
                    .map(|rel| snapshot::Entry {
                        stem: crate::protocol::layout::record_stem(rel).to_string(),
                        rel: rel.to_string(),
                    })
                    .collect();
                entries.sort();
                let built = Arc::new(entries);
                self.settled_entries = Some((state.settled.clone(), Arc::clone(&built)));
                built
            }
        }
    }

    /// What the router learns from the settled contracts of `state` (read by
    /// [`KeptPolis::read`]): built again only when they changed.
    pub fn history(&mut self, state: &PolisState) -> Arc<History> {
        match &self.history {
            Some((snapshot, kept)) if snapshot.same(&state.settled) => Arc::clone(kept),
            _ => {
                let built = Arc::new(crate::protocol::routing::history_of(
                    state.settled.iter().map(|(_, view)| view),
                ));
                self.history = Some((state.settled.clone(), Arc::clone(&built)));
                built
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A ledger of files that settle nothing, and the findings kept beside it.
    fn kept() -> (Ledger<()>, SettledFindings) {
        (Ledger::default(), SettledFindings::default())
    }

    fn warn(rel: &str, what: &str) -> Vec<Finding> {
        vec![Finding::warning(Code::QualityDefaulted, rel, None, what)]
    }

    /// Every finding of `list` as `ledger` names its files: (path, message), in path order.
    fn listed(
        list: &SettledFindingsList,
        path_at: impl Fn(u32) -> Option<String>,
    ) -> Vec<(String, String)> {
        let names: Vec<(u32, String)> = list
            .slots()
            .filter_map(|s| Some((s, path_at(s)?)))
            .collect();
        let name = |slot: u32| {
            names
                .iter()
                .find(|(s, _)| *s == slot)
                .map(|(_, n)| n.as_str())
        };
        list.findings(name).map(|f| (f.path, f.message)).collect()
    }

    /// The list is shared, not built again, until a file's findings change: with one on most
    /// of 1M settled files, building it on every pass was most of each pass.
    #[test]
    fn settled_findings_are_shared_until_a_change() {
        let none = [None, None];
        let (mut ledger, mut kept) = kept();
        let (a, b) = ("contracts/settled/a.md", "contracts/settled/b.md");
        assert!(kept.record(&mut ledger, a, (), None, warn(a, "x"), none).1);
        assert!(kept.record(&mut ledger, b, (), None, warn(b, "y"), none).1);
        let first = kept.all();
        assert_eq!(first.len(), 2);
        assert!(!kept.record(&mut ledger, a, (), None, warn(a, "x"), none).1);
        assert!(first.same(&kept.all()), "unchanged: the same list");
        assert!(kept.record(&mut ledger, a, (), None, warn(a, "z"), none).1);
        let changed = kept.all();
        assert!(!first.same(&changed));
        let path_at = |s| ledger.path_at(s);
        assert_eq!(changed.findings(path_at).next().unwrap().message, "z");
        assert_eq!(
            first.findings(path_at).next().unwrap().message,
            "x",
            "a reader's list stays as it was taken"
        );
        assert!(
            kept.record(&mut ledger, b, (), None, Vec::new(), none).1,
            "fixed: forgotten"
        );
        assert_eq!(kept.all().len(), 1);
        let b_slot = ledger.slot(b).unwrap();
        assert!(!kept.remove(b_slot));
        let with: Vec<&str> = kept.slots().filter_map(|s| ledger.path_at(s)).collect();
        assert_eq!(with, [a]);
    }

    /// Findings are kept by the slot their file lies in: a file forgotten takes its findings
    /// with it, the next file given its slot starts with none, a renamed file's findings are
    /// its new name's, and a list taken before still reads with the snapshot taken with it.
    #[test]
    fn a_files_findings_leave_with_it_and_its_slot_starts_clean_for_the_next_file() {
        let none = [None, None];
        let (mut ledger, mut kept) = kept();
        let at = |stem: &str| format!("contracts/settled/{stem}.md");
        kept.record(
            &mut ledger,
            &at("a"),
            (),
            None,
            warn(&at("a"), "on a"),
            none,
        );
        kept.record(
            &mut ledger,
            &at("b"),
            (),
            None,
            warn(&at("b"), "on b"),
            none,
        );
        let before = (kept.all(), ledger.snapshot());
        let a_slot = ledger.slot(&at("a")).unwrap();
        assert!(kept.forget(&mut ledger, &at("a")));
        assert!(
            !kept.contains(a_slot) && kept.all().len() == 1,
            "gone with its file"
        );
        // The next file recorded lies where `a` was, without its findings.
        let (c, _) = kept.record(&mut ledger, &at("c"), (), None, Vec::new(), none);
        assert_eq!(c.slot, a_slot, "the freed slot is reused");
        assert!(kept.get(c.slot, &at("c")).is_none() && !kept.contains(c.slot));
        assert_eq!(kept.authors(c.slot), [None, None]);
        // `b` renamed to `d` (a removal and a new file with the same findings).
        kept.forget(&mut ledger, &at("b"));
        let (d, _) = kept.record(
            &mut ledger,
            &at("d"),
            (),
            None,
            warn(&at("d"), "on b"),
            none,
        );
        let now = |s: u32| ledger.path_at(s).map(str::to_string);
        assert_eq!(
            listed(&kept.all(), now),
            [(at("d"), "on b".to_string())],
            "only `d`'s, under its name"
        );
        assert_eq!(kept.get(d.slot, &at("d")).unwrap(), warn(&at("d"), "on b"));
        // A reader's list and snapshot, taken together before, still agree.
        let then = |s: u32| before.1.path_at(s).map(str::to_string);
        assert_eq!(
            listed(&before.0, then),
            [(at("a"), "on a".to_string()), (at("b"), "on b".to_string())]
        );
        assert_eq!(kept.all().len(), 1);
        assert_eq!(kept.interned.len(), 1);
    }

    /// What a file holds is kept once for every file that holds the same: the file's own name
    /// is taken out of each message, and each finding comes back as it was put.
    #[test]
    fn files_with_the_same_findings_share_one_record_and_each_gets_its_own_back() {
        let renamed = |stem: &str, line: Option<usize>| {
            let rel = format!("contracts/settled/{stem}.md");
            vec![
                Finding::error(
                    Code::ContractId,
                    &rel,
                    line,
                    format!("`contract_id: old` does not match the file name; make it `{stem}`"),
                ),
                Finding::warning(Code::QualityDefaulted, "elsewhere.md", None, "no quality"),
            ]
        };
        let (mut ledger, mut kept) = kept();
        let owner = [Some("alpha-agent"), Some("beta-agent")];
        let rel = |stem: &str| format!("contracts/settled/{stem}.md");
        for stem in ["c-1", "c-2", "c-3"] {
            assert!(
                kept.record(
                    &mut ledger,
                    &rel(stem),
                    (),
                    None,
                    renamed(stem, Some(2)),
                    owner
                )
                .1
            );
        }
        kept.record(
            &mut ledger,
            &rel("c-4"),
            (),
            None,
            renamed("c-4", Some(3)),
            owner,
        );
        kept.record(
            &mut ledger,
            &rel("c-5"),
            (),
            None,
            renamed("c-5", Some(2)),
            [None, None],
        );
        assert_eq!(kept.interned.len(), 3, "c-1..3 share one record");
        let slot = |stem: &str| ledger.slot(&rel(stem)).unwrap();
        for (stem, line) in [("c-1", 2), ("c-3", 2), ("c-4", 3)] {
            assert_eq!(
                kept.get(slot(stem), &rel(stem)).unwrap(),
                renamed(stem, Some(line))
            );
            assert_eq!(kept.authors(slot(stem)), owner);
        }
        assert_eq!(kept.authors(slot("c-5")), [None, None]);
        let all: Vec<Finding> = kept.all().findings(|s| ledger.path_at(s)).collect();
        assert_eq!(all.len(), 10);
        assert_eq!(all[2], renamed("c-2", Some(2))[0]);
        // A change of authors only is kept, and is not a change of findings.
        assert!(
            !kept
                .record(
                    &mut ledger,
                    &rel("c-1"),
                    (),
                    None,
                    renamed("c-1", Some(2)),
                    [None, None]
                )
                .1
        );
        assert_eq!(
            kept.authors(ledger.slot(&rel("c-1")).unwrap()),
            [None, None]
        );
        assert_eq!(kept.interned.len(), 3, "c-1 now shares c-5's record");
        for stem in ["c-1", "c-2", "c-3", "c-4", "c-5"] {
            kept.forget(&mut ledger, &rel(stem));
        }
        assert!(
            kept.interned.is_empty(),
            "nothing kept for files that are gone"
        );
        assert!(kept.list.0.files.is_empty(), "nor slots for them");
    }

    fn settled(id: &str, quality: u8) -> String {
        format!(
            "---\ncontract_id: {id}\nowner: alpha-agent\nstatus: settled\nrequired_tags:\n- rust\n\
             settled_at: '2026-02-01 12:00:00'\nquality_score: {quality}\nactual_minutes: 30\n---\n"
        )
    }

    #[test]
    fn a_change_reads_the_named_file_and_a_rescan_finds_what_was_missed() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("contracts/settled")).unwrap();
        std::fs::write(root.join("contracts/settled/a.md"), settled("a", 4)).unwrap();
        let mut state = FolderState::default();
        let s = state.read(root, Refresh::Full, &mut snapshot::ReadChronicles);
        assert_eq!(s.settled.len(), 1);
        assert_eq!(s.stats.tags[0].citizens[0].avg_quality_score, 4.0);

        std::fs::write(root.join("contracts/settled/b.md"), settled("b", 2)).unwrap();
        // Not named and no rescan: not seen (nothing is listed).
        assert_eq!(
            state
                .read(root, Refresh::nothing(), &mut snapshot::ReadChronicles)
                .settled
                .len(),
            1
        );
        let mut named = Refresh::nothing();
        named.note("contracts/settled/b.md");
        let s = state.read(root, named, &mut snapshot::ReadChronicles);
        assert_eq!(s.settled.len(), 2);
        assert_eq!(s.stats.tags[0].citizens[0].avg_quality_score, 3.0);

        std::fs::remove_file(root.join("contracts/settled/a.md")).unwrap();
        let s = state.read(root, Refresh::Full, &mut snapshot::ReadChronicles);
        assert_eq!(
            s.settled.paths().collect::<Vec<_>>(),
            ["contracts/settled/b.md"]
        );
    }

    /// A file read `after` its change, then edited to another quality in a way its fingerprint
    /// cannot tell (as a second write of the same size in the same clock tick would leave it:
    /// the ledger holds the new fingerprint with the old settlement): the average quality once
    /// the edit's event is handled.
    fn quality_after_an_edit_in_the_same_tick(after: std::time::Duration) -> f64 {
        use crate::fs::state::set_read_instant;
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let rel = "contracts/settled/a.md";
        let fingerprint = || Fingerprint::of(&std::fs::symlink_metadata(root.join(rel)).unwrap());
        std::fs::create_dir_all(root.join("contracts/settled")).unwrap();
        std::fs::write(root.join(rel), settled("a", 2)).unwrap();
        let mut state = FolderState::default();
        set_read_instant(Some(fingerprint().changed_at() + after));
        state.read(root, Refresh::Full, &mut snapshot::ReadChronicles);
        let old = state.ledger.get(rel);
        std::fs::write(root.join(rel), settled("a", 4)).unwrap();
        state.ledger.record(rel, fingerprint(), old);
        set_read_instant(Some(
            fingerprint().changed_at() + std::time::Duration::from_secs(60),
        ));
        let mut named = Refresh::nothing();
        named.note(rel);
        let s = state.read(root, named, &mut snapshot::ReadChronicles);
        set_read_instant(None);
        s.stats.tags[0].citizens[0].avg_quality_score
    }

    #[test]
    fn a_file_read_in_the_tick_of_its_change_is_read_again_at_its_next_event() {
        assert_eq!(
            quality_after_an_edit_in_the_same_tick(std::time::Duration::from_millis(5)),
            4.0
        );
        // Control: read a minute after its change, its fingerprint vouches for it.
        assert_eq!(
            quality_after_an_edit_in_the_same_tick(std::time::Duration::from_secs(60)),
            2.0
        );
    }

    #[test]
    fn a_settled_read_carries_the_record_findings_its_bytes_decide() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("contracts/settled")).unwrap();
        // An id that is not the file name and an owner with no card (none is registered).
        std::fs::write(root.join("contracts/settled/a.md"), settled("b", 4)).unwrap();
        let read = read_settled(root, "contracts/settled/a.md", PolisZone::default()).unwrap();
        let codes: Vec<Code> = read.findings.iter().map(|f| f.code).collect();
        assert_eq!(
            codes,
            [Code::ContractId, Code::UnknownCitizen],
            "{:?}",
            read.findings
        );
        assert!(read.findings[1].message.contains("no `opened_by`"));
        assert!(read.settlement.is_some(), "still counted");
        // As `check` reports the file (`records::contract_findings`).
        let mut found = Vec::new();
        let file = snapshot::read_record(root, "contracts/settled/a.md", "a", &mut found).unwrap();
        let contract = crate::protocol::contracts::contract::Contract::from_record(&file.record);
        let file = snapshot::ContractFile {
            folder: ContractFolder::Settled,
            file,
            contract,
        };
        assert_eq!(
            read.findings,
            crate::operations::records::contract_findings(&file, &|_| false)
        );
    }

    #[test]
    fn a_kept_polis_reads_what_its_watcher_names_and_unwatched_everything() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("contracts/settled")).unwrap();
        std::fs::write(root.join("contracts/settled/a.md"), settled("a", 4)).unwrap();
        let mut kept = KeptPolis::watched();
        let first = kept.read(root);
        let history = kept.history(&first);
        assert_eq!(history.outcomes().len(), 1);
        let again = kept.read(root);
        assert!(Arc::ptr_eq(&history, &kept.history(&again)), "kept");
        std::fs::write(root.join("contracts/settled/b.md"), settled("b", 2)).unwrap();
        // Not named: not seen.
        let same = kept.read(root);
        assert_eq!(kept.history(&same).outcomes().len(), 1);
        kept.note_changed(Some(["contracts/settled/b.md"]));
        let named = kept.read(root);
        assert_eq!(kept.history(&named).outcomes().len(), 2);
        let entries: Vec<String> = kept
            .settled_entries(&named)
            .iter()
            .map(|e| e.stem.clone())
            .collect();
        assert_eq!(entries, ["a", "b"]);
        // Without a watcher, every read looks.
        let mut alone = KeptPolis::unwatched();
        let s = alone.read(root);
        assert_eq!(alone.history(&s).outcomes().len(), 2);
        std::fs::remove_file(root.join("contracts/settled/a.md")).unwrap();
        let s = alone.read(root);
        assert_eq!(alone.history(&s).outcomes().len(), 1);
    }

    #[test]
    fn a_folder_event_is_a_full_look() {
        let mut r = Refresh::nothing();
        r.note("contracts/open/x.md");
        assert!(matches!(&r, Refresh::Paths { settled, others: true } if settled.is_empty()));
        r.note("contracts/settled/x.md");
        assert!(matches!(&r, Refresh::Paths { settled, .. } if settled.len() == 1));
        r.note("contracts/settled");
        assert_eq!(r, Refresh::Full);
    }
}
