//! `contracts/routing_stats.yml` (SPEC §6 steps 4–7): replaying settlements into per-tag,
//! per-citizen averages, choosing each tag's leader, and the file's exact bytes.
//!
//! Pure: it takes settlements already read (see `contract::read_settled`) and returns values
//! and text. The float arithmetic follows the reference operation for operation, because the
//! file must be byte-identical to the reference's; never "simplify" a formula here.

use crate::yaml::{self, Mapping, Value};
use chrono::NaiveDateTime;
use std::cmp::Ordering;
use std::collections::HashMap;

/// `explore_rate` when neither the old file nor anything else gives one.
pub const DEFAULT_EXPLORE_RATE: f64 = 0.15;

/// What one settled contract contributes (SPEC §6 steps 1–3).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Settlement {
    /// The file, relative to `_polis/` (for findings and notices).
    pub path: String,
    pub owner: String,
    /// Deduplicated, first-seen order.
    pub tags: Vec<String>,
    /// The settlement time as polis-local wall time; `None` when there is no readable time.
    pub instant: Option<NaiveDateTime>,
    /// The time as Python's `str()` writes it, for a settlement without an instant: it orders
    /// those (SPEC §6 step 4). Empty when there is an instant, which orders instead.
    pub when_text: String,
    /// `str(settled_at)[:10]`, `None` when there is no time at all.
    pub last_completed: Option<String>,
    pub quality: u8,
    /// No quality was readable and 3 was assumed: the owner is told (SPEC §6 step 2, §9).
    pub quality_defaulted: bool,
    /// As the double the reference's arithmetic uses.
    pub minutes: f64,
}

impl Settlement {
    /// The settlement borrowed, as a [`Ledger`] gives its own.
    pub fn view(&self) -> SettlementView<'_> {
        SettlementView {
            owner: &self.owner,
            tags: &self.tags,
            instant: self.instant,
            when_text: &self.when_text,
            last_completed: self.last_completed.as_deref(),
            quality: self.quality,
            quality_defaulted: self.quality_defaulted,
            minutes: self.minutes,
        }
    }
}

/// One citizen's record on one tag.
#[derive(Debug, Clone, PartialEq)]
pub struct CitizenStats {
    pub citizen: String,
    pub contracts_completed: u64,
    pub avg_quality_score: f64,
    pub avg_actual_minutes: f64,
    pub last_completed: Option<String>,
}

impl CitizenStats {
    fn new(citizen: &str) -> CitizenStats {
        CitizenStats {
            citizen: citizen.to_string(),
            contracts_completed: 0,
            avg_quality_score: 0.0,
            avg_actual_minutes: 0.0,
            last_completed: None,
        }
    }

    /// Replays one settlement (SPEC §6 step 5): exactly the reference's operations,
    /// `(avg * n + x) / (n + 1)`, in this order, so the doubles are the reference's.
    fn record(&mut self, s: &SettlementView<'_>) {
        self.record_values(s.quality, s.minutes, s.last_completed);
    }

    fn record_values(&mut self, quality: u8, minutes: f64, last_completed: Option<&str>) {
        let n = self.contracts_completed as f64;
        self.avg_quality_score = (self.avg_quality_score * n + f64::from(quality)) / (n + 1.0);
        self.avg_actual_minutes = (self.avg_actual_minutes * n + minutes) / (n + 1.0);
        self.contracts_completed += 1;
        if self.last_completed.as_deref() != last_completed {
            self.last_completed = last_completed.map(str::to_string);
        }
    }
}

/// One tag: its citizens in first-seen order, and the leader.
#[derive(Debug, Clone, PartialEq)]
pub struct TagStats {
    pub tag: String,
    pub citizens: Vec<CitizenStats>,
    pub leader: Option<String>,
    pub leader_confidence: Option<f64>,
}

/// The whole file.
#[derive(Debug, Clone, PartialEq)]
pub struct RoutingStats {
    /// Kept as read (or the newest settlement's `YYYY-MM-DD HH:MM:SS`); `Null` when unknown.
    pub last_updated: Value,
    /// Kept as read, so a hand-set rate survives a rebuild byte for byte.
    pub explore_rate: Value,
    pub tags: Vec<TagStats>,
}

impl Default for RoutingStats {
    fn default() -> Self {
        RoutingStats {
            last_updated: Value::Null,
            explore_rate: Value::Float(DEFAULT_EXPLORE_RATE),
            tags: Vec::new(),
        }
    }
}

impl RoutingStats {
    pub fn tag(&self, tag: &str) -> Option<&TagStats> {
        self.tags.iter().find(|t| t.tag == tag)
    }

    pub fn citizen(&self, tag: &str, citizen: &str) -> Option<&CitizenStats> {
        self.tag(tag)?
            .citizens
            .iter()
            .find(|c| c.citizen == citizen)
    }

    /// The rate as a number, for routing; `None` when the file holds something else.
    pub fn explore_rate_f64(&self) -> Option<f64> {
        match &self.explore_rate {
            Value::Null => Some(DEFAULT_EXPLORE_RATE),
            v => v.as_f64(),
        }
    }
}

/// The order settlements are replayed in (SPEC §6 step 4): by instant (none first), then owner,
/// tags, quality, minutes. Different time styles compare as instants instead of failing.
/// The replay order of SPEC §6 step 4 (instant, owner, tags, quality, minutes).
pub fn replay_order(a: &Settlement, b: &Settlement) -> Ordering {
    replay_order_of_views(&a.view(), &b.view())
}

/// [`replay_order`] of borrowed settlements.
pub fn replay_order_of_views(a: &SettlementView<'_>, b: &SettlementView<'_>) -> Ordering {
    let time = match (&a.instant, &b.instant) {
        (None, None) => a.when_text.cmp(b.when_text),
        (x, y) => x.cmp(y),
    };
    time.then_with(|| a.owner.cmp(b.owner))
        .then_with(|| a.tags.cmp(b.tags))
        .then_with(|| a.quality.cmp(&b.quality))
        .then_with(|| a.minutes.total_cmp(&b.minutes))
}

/// Rebuilds the stats (SPEC §6 steps 4–6). `explore_rate` and `previous_last_updated` are the
/// values of the file being replaced (`Null` when there is none): the rate is kept, and the
/// stamp is kept when no settlement has a time.
pub fn reconcile(
    settlements: &[Settlement],
    explore_rate: &Value,
    previous_last_updated: &Value,
) -> RoutingStats {
    let views: Vec<SettlementView<'_>> = settlements.iter().map(Settlement::view).collect();
    reconcile_views(&views, explore_rate, previous_last_updated)
}

/// [`reconcile`] over borrowed settlements (a one-shot command's ledger records), in the same
/// order as the owned ones would be given (a stable sort keeps ties in that order).
pub fn reconcile_views(
    settlements: &[SettlementView<'_>],
    explore_rate: &Value,
    previous_last_updated: &Value,
) -> RoutingStats {
    let mut order: Vec<&SettlementView<'_>> = settlements.iter().collect();
    order.sort_by(|a, b| replay_order_of_views(a, b));

    let mut tags: Vec<TagStats> = Vec::new();
    let mut tag_index: HashMap<&str, usize> = HashMap::new();
    let mut citizen_index: Vec<HashMap<&str, usize>> = Vec::new();
    for s in &order {
        for tag in s.tags {
            let t = *tag_index.entry(tag.as_str()).or_insert_with(|| {
                tags.push(TagStats {
                    tag: tag.clone(),
                    citizens: Vec::new(),
                    leader: None,
                    leader_confidence: None,
                });
                citizen_index.push(HashMap::new());
                tags.len() - 1
            });
            let citizens = &mut tags[t].citizens;
            let c = *citizen_index[t].entry(s.owner).or_insert_with(|| {
                citizens.push(CitizenStats::new(s.owner));
                citizens.len() - 1
            });
            citizens[c].record(s);
        }
    }
    for t in &mut tags {
        let (leader, confidence) = leader_of(&t.citizens);
        t.leader = leader;
        t.leader_confidence = confidence;
    }

    let newest = order.iter().rev().find_map(|s| s.instant);
    assemble(tags, newest, explore_rate, previous_last_updated)
}

/// The stats file's values around the tags: `last_updated` is the newest settlement's time
/// (the file's previous value when none has one), `explore_rate` is kept or defaulted.
fn assemble(
    tags: Vec<TagStats>,
    newest: Option<NaiveDateTime>,
    explore_rate: &Value,
    previous_last_updated: &Value,
) -> RoutingStats {
    let last_updated = newest
        .map(|i| Value::Str(i.format("%Y-%m-%d %H:%M:%S").to_string()))
        .unwrap_or_else(|| previous_last_updated.clone());
    let explore_rate = match explore_rate {
        Value::Null => Value::Float(DEFAULT_EXPLORE_RATE),
        v => v.clone(),
    };
    RoutingStats {
        last_updated,
        explore_rate,
        tags,
    }
}

/// Marks a settlement without a readable time in [`Entry::instant`].
const NO_INSTANT: i64 = i64::MIN;

/// A polis-local wall time as the ledger keeps it: microseconds since 1970-01-01 00:00 (the
/// reference reads times to the microsecond; every year chrono can hold fits).
fn instant_micros(i: Option<NaiveDateTime>) -> i64 {
    i.map_or(NO_INSTANT, |i| i.and_utc().timestamp_micros())
}

fn micros_instant(micros: i64) -> Option<NaiveDateTime> {
    if micros == NO_INSTANT {
        return None;
    }
    chrono::DateTime::from_timestamp_micros(micros).map(|d| d.naive_utc())
}

/// A string shared by every settlement that names it, found by its text.
#[derive(Debug, Clone)]
struct Shared(std::sync::Arc<String>);

impl PartialEq for Shared {
    fn eq(&self, other: &Self) -> bool {
        self.0 == other.0
    }
}
impl Eq for Shared {}
impl std::hash::Hash for Shared {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.0.as_str().hash(state)
    }
}
impl std::borrow::Borrow<str> for Shared {
    fn borrow(&self) -> &str {
        &self.0
    }
}

/// A tag list shared the same way.
#[derive(Debug, Clone)]
struct SharedTags(std::sync::Arc<Vec<String>>);

impl PartialEq for SharedTags {
    fn eq(&self, other: &Self) -> bool {
        self.0 == other.0
    }
}
impl Eq for SharedTags {}
impl std::hash::Hash for SharedTags {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        // As a slice hashes, which `Borrow<[String]>` requires.
        self.0.as_slice().hash(state)
    }
}
impl std::borrow::Borrow<[String]> for SharedTags {
    fn borrow(&self) -> &[String] {
        &self.0
    }
}

/// The owners, dates and tag lists of a ledger, each kept once: a polis of 100k settlements
/// has a few dozen owners, a few thousand days and a few hundred tag lists.
#[derive(Debug, Clone, Default)]
struct Interner {
    texts: std::collections::HashSet<Shared>,
    tag_lists: std::collections::HashSet<SharedTags>,
}

impl Interner {
    fn text(&mut self, s: &str) -> std::sync::Arc<String> {
        if let Some(shared) = self.texts.get(s) {
            return shared.0.clone();
        }
        let shared = std::sync::Arc::new(s.to_string());
        self.texts.insert(Shared(shared.clone()));
        shared
    }

    fn tags(&mut self, tags: &[String]) -> std::sync::Arc<Vec<String>> {
        if let Some(shared) = self.tag_lists.get(tags) {
            return shared.0.clone();
        }
        let shared = std::sync::Arc::new(tags.to_vec());
        self.tag_lists.insert(SharedTags(shared.clone()));
        shared
    }

    /// Forgets what no settlement names any more.
    fn purge(&mut self) {
        self.texts
            .retain(|s| std::sync::Arc::strong_count(&s.0) > 1);
        self.tag_lists
            .retain(|t| std::sync::Arc::strong_count(&t.0) > 1);
    }

    fn entry(&mut self, path: &str, s: SettlementView<'_>) -> Entry {
        Entry {
            path: path.into(),
            owner: self.text(s.owner),
            tags: self.tags(s.tags),
            instant: instant_micros(s.instant),
            when_text: s.instant.is_none().then(|| self.text(s.when_text)),
            last_completed: s.last_completed.map(|d| self.text(d)),
            minutes: s.minutes,
            quality: s.quality,
            quality_defaulted: s.quality_defaulted,
        }
    }
}

/// One settlement as the ledger keeps it (about a tenth of a [`Settlement`]'s heap): the path
/// once, owner, tags and date shared through the [`Interner`], the time as an integer.
#[derive(Debug)]
struct Entry {
    path: Box<str>,
    owner: std::sync::Arc<String>,
    tags: std::sync::Arc<Vec<String>>,
    /// See [`instant_micros`]; [`NO_INSTANT`] when there is none.
    instant: i64,
    /// Only for a settlement without an instant: it orders those (SPEC §6 step 4).
    when_text: Option<std::sync::Arc<String>>,
    last_completed: Option<std::sync::Arc<String>>,
    minutes: f64,
    quality: u8,
    quality_defaulted: bool,
}

impl Entry {
    fn when_text(&self) -> &str {
        self.when_text.as_deref().map_or("", String::as_str)
    }

    fn settlement(&self) -> Settlement {
        Settlement {
            path: self.path.to_string(),
            owner: self.owner.to_string(),
            tags: self.tags.to_vec(),
            instant: micros_instant(self.instant),
            when_text: self.when_text().to_string(),
            last_completed: self.last_completed.as_deref().cloned(),
            quality: self.quality,
            quality_defaulted: self.quality_defaulted,
            minutes: self.minutes,
        }
    }

    fn view(&self) -> SettlementView<'_> {
        SettlementView {
            owner: &self.owner,
            tags: &self.tags,
            instant: micros_instant(self.instant),
            when_text: self.when_text(),
            last_completed: self.last_completed.as_deref().map(String::as_str),
            quality: self.quality,
            quality_defaulted: self.quality_defaulted,
            minutes: self.minutes,
        }
    }

    /// Whether `s` says what this entry says (its `when_text` counts only without an instant).
    fn same_as(&self, s: &Settlement) -> bool {
        *self.owner == s.owner
            && *self.tags == s.tags
            && self.instant == instant_micros(s.instant)
            && (s.instant.is_some() || self.when_text() == s.when_text)
            && self.last_completed.as_deref() == s.last_completed.as_ref()
            && self.minutes.to_bits() == s.minutes.to_bits()
            && self.quality == s.quality
            && self.quality_defaulted == s.quality_defaulted
    }

    /// [`replay_order`] over entries, then the path.
    fn order(&self, other: &Entry) -> Ordering {
        let time = if self.instant == NO_INSTANT && other.instant == NO_INSTANT {
            self.when_text().cmp(other.when_text())
        } else {
            self.instant.cmp(&other.instant)
        };
        time.then_with(|| self.owner.cmp(&other.owner))
            .then_with(|| self.tags.cmp(&other.tags))
            .then_with(|| self.quality.cmp(&other.quality))
            .then_with(|| self.minutes.total_cmp(&other.minutes))
            .then_with(|| self.path.cmp(&other.path))
    }
}

/// A settlement kept by a [`Ledger`], borrowed (for writing it elsewhere without a copy).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SettlementView<'a> {
    pub owner: &'a str,
    pub tags: &'a [String],
    pub instant: Option<NaiveDateTime>,
    pub when_text: &'a str,
    pub last_completed: Option<&'a str>,
    pub quality: u8,
    pub quality_defaulted: bool,
    pub minutes: f64,
}

impl SettlementView<'_> {
    /// The settlement owned, with its path.
    pub fn to_settlement(&self, path: &str) -> Settlement {
        Settlement {
            path: path.to_string(),
            owner: self.owner.to_string(),
            tags: self.tags.to_vec(),
            instant: self.instant,
            when_text: self.when_text.to_string(),
            last_completed: self.last_completed.map(str::to_string),
            quality: self.quality,
            quality_defaulted: self.quality_defaulted,
            minutes: self.minutes,
        }
    }
}

/// A settlement placed in the replay order. Equal replay keys fall back to the path: a full
/// [`reconcile`] sorts stably over settlements listed in path order, which is the same order.
#[derive(Debug, Clone)]
struct Placed(std::sync::Arc<Entry>);

impl PartialEq for Placed {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Placed {}
impl PartialOrd for Placed {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Placed {
    fn cmp(&self, other: &Self) -> Ordering {
        if std::sync::Arc::ptr_eq(&self.0, &other.0) {
            return Ordering::Equal;
        }
        self.0.order(&other.0)
    }
}

/// A placed settlement found by its path, without a second copy of the path as a key.
#[derive(Debug, Clone)]
struct ByPath(Placed);

impl PartialEq for ByPath {
    fn eq(&self, other: &Self) -> bool {
        self.0 .0.path == other.0 .0.path
    }
}
impl Eq for ByPath {}
impl std::hash::Hash for ByPath {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        // As `str` hashes, which `Borrow<str>` requires.
        self.0 .0.path.hash(state)
    }
}
impl std::borrow::Borrow<str> for ByPath {
    fn borrow(&self) -> &str {
        &self.0 .0.path
    }
}

/// One tag as the ledger keeps it: its settlements in replay order and the stats they give.
#[derive(Debug, Clone)]
struct TagLedger {
    members: std::collections::BTreeSet<Placed>,
    stats: TagStats,
    citizen_index: HashMap<String, usize>,
    /// The running averages no longer match `members` (an older settlement arrived, or one
    /// left): replayed from scratch when the stats are next asked for.
    dirty: bool,
}

impl TagLedger {
    fn new(tag: &str) -> TagLedger {
        TagLedger {
            members: std::collections::BTreeSet::new(),
            stats: TagStats {
                tag: tag.to_string(),
                citizens: Vec::new(),
                leader: None,
                leader_confidence: None,
            },
            citizen_index: HashMap::new(),
            dirty: false,
        }
    }

    /// Adds one settlement at the end of the replay: the same operations as [`reconcile`].
    fn extend(&mut self, e: &Entry) {
        let citizens = &mut self.stats.citizens;
        let c = match self.citizen_index.get(e.owner.as_str()) {
            Some(&c) => c,
            None => {
                citizens.push(CitizenStats::new(&e.owner));
                self.citizen_index
                    .insert(e.owner.to_string(), citizens.len() - 1);
                citizens.len() - 1
            }
        };
        citizens[c].record_values(
            e.quality,
            e.minutes,
            e.last_completed.as_deref().map(String::as_str),
        );
    }

    fn replay(&mut self) {
        self.stats.citizens.clear();
        self.citizen_index.clear();
        let members = std::mem::take(&mut self.members);
        for m in &members {
            self.extend(&m.0);
        }
        self.members = members;
        self.dirty = false;
    }

    fn settle_leader(&mut self) {
        let (leader, confidence) = leader_of(&self.stats.citizens);
        self.stats.leader = leader;
        self.stats.leader_confidence = confidence;
    }

    /// Where the tag first appears in the replay: its first settlement, then the tag's place
    /// among that settlement's tags.
    fn first_seen(&self) -> Option<(&Placed, usize)> {
        let first = self.members.first()?;
        let at = first.0.tags.iter().position(|t| *t == self.stats.tag);
        Some((first, at.unwrap_or(0)))
    }
}

/// The settled files of a polis kept between changes, so `routing_stats.yml` follows one
/// settlement at a cost that does not grow with the polis: a settlement later in the replay
/// than every other on its tags extends the running averages directly; an older one, an edit or
/// a removal replays only the tags it touches. [`Ledger::stats`] equals [`reconcile`] over the
/// same settlements, byte for byte once rendered (`tests/incremental.rs` checks it).
///
/// Each file carries a value `M` of the caller's (the daemon keeps its fingerprint there), so
/// the path is kept once for the file, its settlement and its metadata. Files that give no
/// settlement are kept too, with their `M` only.
#[derive(Debug, Clone)]
pub struct Ledger<M = ()> {
    by_path: HashMap<ByPath, M>,
    unsettled: HashMap<Box<str>, M>,
    all: std::collections::BTreeSet<Placed>,
    tags: HashMap<String, TagLedger>,
    /// Tags whose leader must be chosen again before the next [`Ledger::stats`].
    touched: std::collections::BTreeSet<String>,
    interner: Interner,
    /// Interned values when they were last purged, to purge again once they double.
    interned_at_purge: usize,
    /// Stamped anew (unique in the process) by every change of what the ledger holds: a reader
    /// keeps a snapshot until it moves.
    version: u64,
}

/// A stamp no ledger of this process has had.
fn next_version() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

impl<M> Default for Ledger<M> {
    fn default() -> Self {
        Ledger {
            by_path: HashMap::new(),
            unsettled: HashMap::new(),
            all: std::collections::BTreeSet::new(),
            tags: HashMap::new(),
            touched: std::collections::BTreeSet::new(),
            interner: Interner::default(),
            interned_at_purge: 0,
            version: next_version(),
        }
    }
}

impl Ledger {
    pub fn new() -> Ledger {
        Ledger::default()
    }
}

impl<M> Ledger<M> {
    /// How many settlements the ledger holds.
    pub fn len(&self) -> usize {
        self.by_path.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_path.is_empty()
    }

    /// How many files the ledger holds, with a settlement or without.
    pub fn file_count(&self) -> usize {
        self.by_path.len() + self.unsettled.len()
    }

    pub fn contains_file(&self, path: &str) -> bool {
        self.by_path.contains_key(path) || self.unsettled.contains_key(path)
    }

    /// The caller's value for the file `path`.
    pub fn meta(&self, path: &str) -> Option<&M> {
        self.by_path.get(path).or_else(|| self.unsettled.get(path))
    }

    /// The settlement of `path`, if the ledger holds one.
    pub fn get(&self, path: &str) -> Option<Settlement> {
        self.by_path
            .get_key_value(path)
            .map(|(k, _)| k.0 .0.settlement())
    }

    /// Every settlement with its path, borrowed, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, SettlementView<'_>)> {
        self.by_path.keys().map(|k| (&*k.0 .0.path, k.0 .0.view()))
    }

    /// Every settlement, in path order (the order [`reconcile`] is given them elsewhere).
    /// A settlement's `when_text` is given back only when it has no instant (the only case
    /// where it counts).
    pub fn settlements(&self) -> Vec<Settlement> {
        let mut out: Vec<Settlement> = self.by_path.keys().map(|p| p.0 .0.settlement()).collect();
        out.sort_by(|a, b| a.path.cmp(&b.path));
        out
    }

    /// Every file: its path, the caller's value and its settlement if it gives one.
    pub fn files(&self) -> impl Iterator<Item = (&str, &M, Option<SettlementView<'_>>)> {
        self.by_path
            .iter()
            .map(|(k, m)| (&*k.0 .0.path, m, Some(k.0 .0.view())))
            .chain(self.unsettled.iter().map(|(p, m)| (&**p, m, None)))
    }

    /// Adds the settlement of `s.path`, replacing what that file said before.
    pub fn insert(&mut self, s: Settlement)
    where
        M: Default,
    {
        let path = s.path.clone();
        self.record(&path, M::default(), Some(s));
    }

    /// Forgets the settlement of `path` (the file left `settled/` or no longer counts).
    pub fn remove(&mut self, path: &str) -> Option<Settlement> {
        let s = self.get(path);
        self.forget(path);
        s
    }

    /// Records the file `path` with the caller's value and what it settles (`None`: it is kept
    /// but counts for nothing), replacing what it said before.
    pub fn record(&mut self, path: &str, meta: M, settlement: Option<Settlement>) {
        self.version = next_version();
        if let Some(s) = &settlement {
            let same = self
                .by_path
                .get_key_value(path)
                .is_some_and(|(k, _)| k.0 .0.same_as(s));
            if same {
                if let Some(m) = self.by_path.get_mut(path) {
                    *m = meta;
                }
                return;
            }
        }
        self.forget(path);
        let Some(s) = settlement else {
            self.unsettled.insert(path.into(), meta);
            return;
        };
        let placed = Placed(std::sync::Arc::new(self.interner.entry(path, s.view())));
        for tag in dedup(&placed.0.tags) {
            let t = self
                .tags
                .entry(tag.clone())
                .or_insert_with(|| TagLedger::new(tag));
            let at_end = t.members.last().is_none_or(|last| *last < placed);
            if at_end && !t.dirty {
                t.extend(&placed.0);
            } else {
                t.dirty = true;
            }
            t.members.insert(placed.clone());
            self.touched.insert(tag.clone());
        }
        self.all.insert(placed.clone());
        self.by_path.insert(ByPath(placed), meta);
    }

    /// Forgets the file `path`; whether the ledger held it.
    pub fn forget(&mut self, path: &str) -> bool {
        self.version = next_version();
        if self.unsettled.remove(path).is_some() {
            return true;
        }
        let Some((key, _)) = self.by_path.remove_entry(path) else {
            return false;
        };
        let placed = key.0;
        self.all.remove(&placed);
        for tag in dedup(&placed.0.tags) {
            if let Some(t) = self.tags.get_mut(tag) {
                t.members.remove(&placed);
                if t.members.is_empty() {
                    self.tags.remove(tag);
                } else {
                    t.dirty = true;
                }
                self.touched.insert(tag.clone());
            }
        }
        drop(placed);
        let interned = self.interner.texts.len() + self.interner.tag_lists.len();
        if interned > 2 * self.interned_at_purge.max(512) {
            self.interner.purge();
            self.interned_at_purge = self.interner.texts.len() + self.interner.tag_lists.len();
        }
        true
    }

    /// A ledger of these files at once (a restart: the files as a snapshot recorded them).
    /// The same as recording them one by one, in a fraction of the time: the replay order is
    /// sorted once and every tag is replayed once. A path given twice keeps its last record.
    /// The settlements are borrowed, so nothing but the ledger's own entries is allocated
    /// while it is built (they then lie together in memory).
    pub fn restore<'a>(
        files: impl IntoIterator<Item = (&'a str, M, Option<SettlementView<'a>>)>,
    ) -> Ledger<M> {
        let mut ledger = Ledger::default();
        let mut placed = Vec::new();
        for (path, meta, settlement) in files {
            if ledger.contains_file(path) {
                ledger.record(path, meta, settlement.map(|s| s.to_settlement(path)));
                continue;
            }
            match settlement {
                None => {
                    ledger.unsettled.insert(path.into(), meta);
                }
                Some(s) => {
                    let p = Placed(std::sync::Arc::new(ledger.interner.entry(path, s)));
                    ledger.by_path.insert(ByPath(p.clone()), meta);
                    placed.push(p);
                }
            }
        }
        // Entries recorded twice above were placed by `record`; keep those they replaced out.
        placed.retain(|p| {
            ledger
                .by_path
                .get_key_value(&*p.0.path)
                .is_some_and(|(k, _)| std::sync::Arc::ptr_eq(&k.0 .0, &p.0))
        });
        placed.sort();
        let mut per_tag: HashMap<String, Vec<Placed>> = HashMap::new();
        for p in &placed {
            for tag in dedup(&p.0.tags) {
                match per_tag.get_mut(tag.as_str()) {
                    Some(members) => members.push(p.clone()),
                    None => {
                        per_tag.insert(tag.clone(), vec![p.clone()]);
                    }
                }
            }
        }
        for (tag, members) in per_tag {
            let t = ledger
                .tags
                .entry(tag.clone())
                .or_insert_with(|| TagLedger::new(&tag));
            // Collected, not inserted one by one: a sorted run is built in one go.
            t.members = members.into_iter().collect();
            t.dirty = true;
            ledger.touched.insert(tag);
        }
        ledger.all = placed.into_iter().collect();
        ledger.interned_at_purge = ledger.interner.texts.len() + ledger.interner.tag_lists.len();
        ledger
    }

    /// The stats [`reconcile`] would give over the same settlements (see there for the two
    /// values kept from the file being replaced).
    pub fn stats(&mut self, explore_rate: &Value, previous_last_updated: &Value) -> RoutingStats {
        for tag in std::mem::take(&mut self.touched) {
            if let Some(t) = self.tags.get_mut(&tag) {
                if t.dirty {
                    t.replay();
                }
                t.settle_leader();
            }
        }
        let mut order: Vec<(&Placed, usize, &TagLedger)> = self
            .tags
            .values()
            .filter_map(|t| t.first_seen().map(|(p, at)| (p, at, t)))
            .collect();
        order.sort_by(|a, b| a.0.cmp(b.0).then(a.1.cmp(&b.1)));
        let tags = order.into_iter().map(|(_, _, t)| t.stats.clone()).collect();
        let newest = self.all.last().and_then(|p| micros_instant(p.0.instant));
        assemble(tags, newest, explore_rate, previous_last_updated)
    }
}

/// A settlement's tags without repeats (they are deduplicated when read; this keeps a
/// hand-built settlement from counting twice on one tag).
fn dedup(tags: &[String]) -> Vec<&String> {
    let mut out: Vec<&String> = Vec::with_capacity(tags.len());
    for t in tags {
        if !out.contains(&t) {
            out.push(t);
        }
    }
    out
}

/// [`reconcile`] over the file being replaced (`None` when there is none): keeps its
/// `explore_rate`, and its `last_updated` when no settlement has a time.
pub fn reconcile_over(settlements: &[Settlement], previous: Option<&RoutingStats>) -> RoutingStats {
    match previous {
        Some(p) => reconcile(settlements, &p.explore_rate, &p.last_updated),
        None => reconcile(settlements, &Value::Null, &Value::Null),
    }
}

/// SPEC §6 step 6: the leader (ties: first seen) and `leader_confidence`.
fn leader_of(citizens: &[CitizenStats]) -> (Option<String>, Option<f64>) {
    if citizens.is_empty() {
        return (None, None);
    }
    // A stable sort, descending, as the reference's `sorted(..., reverse=True)`.
    let mut ranked: Vec<&CitizenStats> = citizens.iter().collect();
    ranked.sort_by(|a, b| {
        b.avg_quality_score
            .partial_cmp(&a.avg_quality_score)
            .unwrap_or(Ordering::Equal)
    });
    let gap = match ranked.get(1) {
        Some(second) => ranked[0].avg_quality_score - second.avg_quality_score,
        None => ranked[0].avg_quality_score / 5.0,
    };
    let total_n: u64 = citizens.iter().map(|c| c.contracts_completed).sum();
    let confidence = 1.0 / (1.0 + (-(gap * (total_n as f64).sqrt() / 3.0)).exp());
    (
        Some(ranked[0].citizen.clone()),
        Some(round_half_even(confidence, 3)),
    )
}

/// Python's `round(x, ndigits)` for small `ndigits`: the exact binary value rounded to the
/// nearest decimal, ties to even.
pub fn round_half_even(x: f64, ndigits: usize) -> f64 {
    if !x.is_finite() {
        return x;
    }
    // `{:.N}` formats the exact binary value correctly rounded; only an exact tie needs care.
    // A double is exactly halfway at N decimals iff x * 10^N * 2 is an odd integer, which we
    // detect on the exact decimal expansion (binary fractions terminate).
    let exact = exact_decimal(x);
    let (int_part, frac) = exact.split_once('.').unwrap_or((&exact, ""));
    let tail = frac.get(ndigits..).unwrap_or("");
    let is_tie = tail.starts_with('5') && tail[1..].bytes().all(|b| b == b'0');
    if !is_tie {
        return format!("{x:.ndigits$}").parse().unwrap_or(x);
    }
    // A tie has a fractional part, so |x| < 2^53 and the digits fit an i128.
    let negative = int_part.starts_with('-');
    let digits = format!("{}{}", int_part.trim_start_matches('-'), &frac[..ndigits]);
    let mut n: i128 = digits.parse().unwrap_or(0);
    if n % 2 == 1 {
        n += 1;
    }
    let scale = 10i128.pow(ndigits as u32);
    let sign = if negative { "-" } else { "" };
    format!("{sign}{}.{:0ndigits$}", n / scale, n % scale)
        .parse()
        .unwrap_or(x)
}

/// The exact decimal expansion of a finite double.
fn exact_decimal(x: f64) -> String {
    // 1074 fractional digits always suffice for a double; Rust prints them exactly.
    let s = format!("{:.1100}", x);
    let s = s.trim_end_matches('0');
    s.strip_suffix('.')
        .map_or(s.to_string(), |t| format!("{t}.0"))
}

/// The settlements whose owner must be told that quality 3 was assumed (SPEC §6 step 2).
pub fn quality_defaulted(settlements: &[Settlement]) -> impl Iterator<Item = &Settlement> {
    settlements.iter().filter(|s| s.quality_defaulted)
}

fn key(k: &str) -> Value {
    Value::Str(k.to_string())
}

/// The file's contents as a YAML value, keys in the reference's order (SPEC §6 step 7).
pub fn to_value(stats: &RoutingStats) -> Value {
    let mut tags = Mapping::new();
    for t in &stats.tags {
        let mut citizens = Mapping::new();
        for c in &t.citizens {
            let mut m = Mapping::new();
            m.insert(
                key("contracts_completed"),
                Value::Int(c.contracts_completed as i64),
            );
            m.insert(key("avg_quality_score"), Value::Float(c.avg_quality_score));
            m.insert(
                key("avg_actual_minutes"),
                Value::Float(c.avg_actual_minutes),
            );
            m.insert(
                key("last_completed"),
                c.last_completed.clone().map_or(Value::Null, Value::Str),
            );
            citizens.insert(key(&c.citizen), Value::Map(m));
        }
        let mut tm = Mapping::new();
        tm.insert(key("citizens"), Value::Map(citizens));
        if let Some(leader) = &t.leader {
            tm.insert(key("leader"), Value::Str(leader.clone()));
        }
        if let Some(conf) = t.leader_confidence {
            tm.insert(key("leader_confidence"), Value::Float(conf));
        }
        tags.insert(key(&t.tag), Value::Map(tm));
    }
    let mut out = Mapping::new();
    out.insert(key("last_updated"), stats.last_updated.clone());
    out.insert(key("explore_rate"), stats.explore_rate.clone());
    out.insert(key("tags"), Value::Map(tags));
    Value::Map(out)
}

/// The file's bytes: PyYAML `dump(default_flow_style=False, sort_keys=False)` of
/// [`to_value`], as the reference writes it (non-ASCII tags and ids double-quoted and escaped).
pub fn render(stats: &RoutingStats) -> Result<String, yaml::EmitError> {
    yaml::dump(&to_value(stats), &yaml::DumpOptions::STATS)
}

/// Reads an existing `routing_stats.yml` leniently: entries of the wrong shape are skipped
/// (the reference would crash on most of them), numbers may be ints or floats.
pub fn from_value(v: &Value) -> RoutingStats {
    let mut stats = RoutingStats {
        last_updated: v.get("last_updated").clone(),
        explore_rate: v.get("explore_rate").clone(),
        tags: Vec::new(),
    };
    let Some(tags) = v.get("tags").as_map() else {
        return stats;
    };
    for (tag, td) in tags.iter() {
        let Some(tag) = tag.as_str() else { continue };
        let mut citizens = Vec::new();
        if let Some(cm) = td.get("citizens").as_map() {
            for (id, c) in cm.iter() {
                let Some(id) = id.as_str() else { continue };
                // The reference skips a falsy entry (`if not tag_stats: continue`).
                if !c.is_truthy() || c.as_map().is_none() {
                    continue;
                }
                citizens.push(CitizenStats {
                    citizen: id.to_string(),
                    contracts_completed: match c.get("contracts_completed") {
                        Value::Int(i) => (*i).max(0) as u64,
                        Value::Float(f) if f.is_finite() && *f > 0.0 => *f as u64,
                        _ => 0,
                    },
                    avg_quality_score: c.get("avg_quality_score").as_f64().unwrap_or(0.0),
                    avg_actual_minutes: c.get("avg_actual_minutes").as_f64().unwrap_or(0.0),
                    last_completed: match c.get("last_completed") {
                        Value::Null => None,
                        other => Some(other.python_str()),
                    },
                });
            }
        }
        stats.tags.push(TagStats {
            tag: tag.to_string(),
            citizens,
            leader: td.get("leader").as_str().map(str::to_string),
            leader_confidence: td.get("leader_confidence").as_f64(),
        });
    }
    stats
}

/// Parses the text of `routing_stats.yml`.
pub fn parse(text: &str) -> Result<RoutingStats, yaml::YamlError> {
    yaml::load(text).map(|v| from_value(&v))
}

/// How one tag's averages and leader moved, settlement by settlement (the dashboard's chart).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TagHistory {
    /// Per citizen (first-seen order): after the tag's n-th settlement (1-based), the
    /// citizen's running average quality. A point only where that citizen settled.
    pub series: Vec<(String, Vec<(usize, f64)>)>,
    /// Every change of leader: after which settlement, its time as written, from whom, to whom.
    pub leader_changes: Vec<LeaderChange>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct LeaderChange {
    pub after: usize,
    pub when: String,
    pub from: Option<String>,
    pub to: String,
}

/// Replays `settlements` in the order of SPEC §6 and records, per tag, each citizen's running
/// average after each settlement and each change of leader (highest average, ties to the first
/// seen, as [`reconcile`] picks).
pub fn history(settlements: &[Settlement]) -> Vec<(String, TagHistory)> {
    let mut sorted: Vec<&Settlement> = settlements.iter().collect();
    sorted.sort_by(|a, b| replay_order(a, b));
    history_in_order(sorted.into_iter().map(Settlement::view))
}

/// [`history`] over settlements already in the replay order (a [`LedgerSnapshot`]'s).
pub fn history_in_order<'a>(
    settlements: impl IntoIterator<Item = SettlementView<'a>>,
) -> Vec<(String, TagHistory)> {
    let mut tags: Vec<(String, Vec<CitizenStats>, TagHistory, usize)> = Vec::new();
    for s in settlements {
        for tag in s.tags {
            let i = match tags.iter().position(|t| &t.0 == tag) {
                Some(i) => i,
                None => {
                    tags.push((tag.clone(), Vec::new(), TagHistory::default(), 0));
                    tags.len() - 1
                }
            };
            let (_, citizens, hist, n) = &mut tags[i];
            *n += 1;
            let c = match citizens.iter().position(|c| c.citizen == s.owner) {
                Some(c) => c,
                None => {
                    citizens.push(CitizenStats::new(s.owner));
                    hist.series.push((s.owner.to_string(), Vec::new()));
                    citizens.len() - 1
                }
            };
            citizens[c].record_values(s.quality, s.minutes, s.last_completed);
            hist.series[c].1.push((*n, citizens[c].avg_quality_score));
            let mut leader = &citizens[0];
            for x in &citizens[1..] {
                if x.avg_quality_score > leader.avg_quality_score {
                    leader = x;
                }
            }
            let before = hist.leader_changes.last().map(|l| l.to.clone());
            if before.as_deref() != Some(leader.citizen.as_str()) {
                hist.leader_changes.push(LeaderChange {
                    after: *n,
                    when: s
                        .instant
                        .map_or_else(|| s.when_text.to_string(), |t| t.to_string()),
                    from: before,
                    to: leader.citizen.clone(),
                });
            }
        }
    }
    tags.into_iter().map(|(t, _, h, _)| (t, h)).collect()
}

/// A [`Ledger`]'s files at one moment, sharing the ledger's entries (taking one copies a
/// pointer per settlement, nothing else): what the daemon publishes after a pass for readers
/// beside it (the dashboard), which must not hold the ledger itself.
#[derive(Debug, Clone, Default)]
pub struct LedgerSnapshot {
    /// In the replay order.
    settled: std::sync::Arc<Vec<Placed>>,
    /// Files that give no settlement.
    unsettled: std::sync::Arc<Vec<Box<str>>>,
}

impl LedgerSnapshot {
    /// How many settlements it holds.
    pub fn len(&self) -> usize {
        self.settled.len()
    }

    pub fn is_empty(&self) -> bool {
        self.settled.is_empty()
    }

    /// How many files, with a settlement or without.
    pub fn file_count(&self) -> usize {
        self.settled.len() + self.unsettled.len()
    }

    /// Every settlement with its path, in the replay order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, SettlementView<'_>)> {
        self.settled.iter().map(|p| (&*p.0.path, p.0.view()))
    }

    /// Every file's path.
    pub fn paths(&self) -> impl Iterator<Item = &str> {
        self.settled
            .iter()
            .map(|p| &*p.0.path)
            .chain(self.unsettled.iter().map(|p| &**p))
    }

    /// [`history`] of these settlements, without sorting them again.
    pub fn history(&self) -> Vec<(String, TagHistory)> {
        history_in_order(self.iter().map(|(_, v)| v))
    }
}

impl<M> Ledger<M> {
    /// Changes whenever a file is recorded or forgotten (and differs between ledgers): equal
    /// versions, same files.
    pub fn version(&self) -> u64 {
        self.version
    }

    /// The files as they are now (see [`LedgerSnapshot`]).
    pub fn snapshot(&self) -> LedgerSnapshot {
        LedgerSnapshot {
            settled: std::sync::Arc::new(self.all.iter().cloned().collect()),
            unsettled: std::sync::Arc::new(self.unsettled.keys().cloned().collect()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::NaiveDate;

    fn s(day: u32, owner: &str, tags: &[&str], quality: u8, minutes: f64) -> Settlement {
        let instant = NaiveDate::from_ymd_opt(2026, 3, day)
            .unwrap()
            .and_hms_opt(10, 0, 0)
            .unwrap();
        Settlement {
            path: format!("contracts/settled/{day}.md"),
            owner: owner.into(),
            tags: tags.iter().map(|t| t.to_string()).collect(),
            instant: Some(instant),
            when_text: instant.to_string(),
            last_completed: Some(instant.to_string()[..10].to_string()),
            quality,
            minutes,
            ..Default::default()
        }
    }

    #[test]
    fn round_matches_python() {
        // Values checked against CPython's round(x, 3).
        assert_eq!(round_half_even(0.0625, 3), 0.062);
        assert_eq!(round_half_even(0.1875, 3), 0.188);
        assert_eq!(round_half_even(0.5625, 3), 0.562);
        assert_eq!(round_half_even(0.9375, 3), 0.938);
        assert_eq!(round_half_even(0.6224593312018546, 3), 0.622);
        assert_eq!(round_half_even(2.675, 2), 2.67); // binary value is below the tie
        assert_eq!(round_half_even(0.5, 0), 0.0);
        assert_eq!(round_half_even(1.5, 0), 2.0);
        assert_eq!(round_half_even(0.9999, 3), 1.0);
    }

    #[test]
    fn replay_averages_in_time_order() {
        let st = vec![
            s(3, "bob-agent1", &["py"], 5, 10.0),
            s(1, "alice-agent", &["py"], 4, 20.0),
            s(2, "alice-agent", &["py", "docs"], 5, 40.0),
        ];
        let r = reconcile(&st, &Value::Null, &Value::Null);
        let py = r.tag("py").unwrap();
        assert_eq!(py.citizens[0].citizen, "alice-agent");
        assert_eq!(py.citizens[0].avg_quality_score, 4.5);
        assert_eq!(py.citizens[0].avg_actual_minutes, 30.0);
        assert_eq!(py.leader.as_deref(), Some("bob-agent1"));
        assert_eq!(r.tags[1].tag, "docs");
        assert_eq!(r.last_updated, Value::Str("2026-03-03 10:00:00".into()));
        assert_eq!(r.explore_rate, Value::Float(0.15));
    }

    #[test]
    fn leader_ties_go_to_the_first_seen() {
        let st = vec![
            s(1, "zed-agent1", &["py"], 4, 10.0),
            s(2, "amy-agent1", &["py"], 4, 10.0),
        ];
        let r = reconcile(&st, &Value::Null, &Value::Null);
        assert_eq!(r.tags[0].leader.as_deref(), Some("zed-agent1"));
        assert_eq!(r.tags[0].leader_confidence, Some(0.5));
    }

    #[test]
    fn no_settlements_keeps_previous_values() {
        let r = reconcile(&[], &Value::Float(0.3), &Value::Str("x".into()));
        assert_eq!(r.last_updated, Value::Str("x".into()));
        assert_eq!(r.explore_rate, Value::Float(0.3));
        assert!(r.tags.is_empty());
    }

    #[test]
    fn reconcile_over_keeps_the_old_rate() {
        let old =
            parse("last_updated: '2026-01-01 00:00:00'\nexplore_rate: 0.3\ntags: {}\n").unwrap();
        let r = reconcile_over(&[s(1, "alice-agent", &["py"], 4, 10.0)], Some(&old));
        assert_eq!(r.explore_rate, Value::Float(0.3));
        assert_eq!(r.last_updated, Value::Str("2026-03-01 10:00:00".into()));
        let r = reconcile_over(&[], Some(&old));
        assert_eq!(r.last_updated, old.last_updated);
    }

    #[test]
    fn parse_round_trips_values() {
        let st = vec![s(1, "alice-agent", &["py"], 4, 10.0)];
        let r = reconcile(&st, &Value::Null, &Value::Null);
        assert_eq!(from_value(&to_value(&r)), r);
        assert_eq!(parse(&render(&r).unwrap()).unwrap(), r);
    }

    #[test]
    fn render_layout() {
        let st = vec![
            s(1, "alice-agent", &["py"], 4, 10.0),
            s(2, "bob-agent1", &["py"], 5, 20.0),
        ];
        let r = reconcile(&st, &Value::Null, &Value::Null);
        assert_eq!(
            render(&r).unwrap(),
            "last_updated: '2026-03-02 10:00:00'\nexplore_rate: 0.15\ntags:\n  py:\n    citizens:\n      alice-agent:\n        contracts_completed: 1\n        avg_quality_score: 4.0\n        avg_actual_minutes: 10.0\n        last_completed: '2026-03-01'\n      bob-agent1:\n        contracts_completed: 1\n        avg_quality_score: 5.0\n        avg_actual_minutes: 20.0\n        last_completed: '2026-03-02'\n    leader: bob-agent1\n    leader_confidence: 0.616\n"
        );
        assert_eq!(
            render(&reconcile(&[], &Value::Null, &Value::Null)).unwrap(),
            "last_updated: null\nexplore_rate: 0.15\ntags: {}\n"
        );
    }

    #[test]
    fn history_tracks_running_averages_and_leader_changes() {
        let s = |owner: &str, q: u8, day: u32| Settlement {
            path: format!("contracts/settled/{owner}{day}.md"),
            owner: owner.into(),
            tags: vec!["rust".into()],
            instant: chrono::NaiveDate::from_ymd_opt(2026, 1, day)
                .and_then(|d| d.and_hms_opt(0, 0, 0)),
            when_text: format!("2026-01-{day:02}"),
            quality: q,
            minutes: 30.0,
            ..Settlement::default()
        };
        // Given out of order: replay sorts by time.
        let h = history(&[s("bob", 5, 2), s("alice", 4, 1), s("alice", 2, 3)]);
        assert_eq!(h.len(), 1);
        let (tag, h) = &h[0];
        assert_eq!(tag, "rust");
        assert_eq!(h.series[0], ("alice".into(), vec![(1, 4.0), (3, 3.0)]));
        assert_eq!(h.series[1], ("bob".into(), vec![(2, 5.0)]));
        let changes: Vec<(usize, Option<&str>, &str)> = h
            .leader_changes
            .iter()
            .map(|c| (c.after, c.from.as_deref(), c.to.as_str()))
            .collect();
        assert_eq!(changes, [(1, None, "alice"), (2, Some("alice"), "bob")]);
    }
}
