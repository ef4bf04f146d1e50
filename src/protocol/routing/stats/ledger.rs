//! The incremental [`Ledger`] of settled files and the [`LedgerSnapshot`] readers take of it.
//!
//! Dense on purpose (a polis keeps every settlement it ever had): each file is one slot of a
//! `Vec` (its settlement as integers and table indices, and the caller's value beside it), its
//! path lies in one string buffer, the path index holds slot numbers only, and the replay
//! orders (the whole ledger's and each tag's) are sorted `u32` slot numbers. Owners, dates and
//! tag lists are kept once each in counted tables. About 100 bytes per settlement with a
//! 40-byte fingerprint, against about 250 for one `Arc` per entry in B-tree sets.

use super::TagStats;
use super::{assemble, dedup, leader_of, CitizenStats, RoutingStats, Settlement, SettlementView};
use crate::yaml::Value;
use chrono::NaiveDateTime;
use std::cmp::Ordering;
use std::collections::{BTreeSet, HashMap};
use std::hash::BuildHasher;
use std::sync::Arc;

/// Marks a settlement without a readable time in [`Packed::instant`].
const NO_INSTANT: i64 = i64::MIN;
/// Marks "none" for a table index ([`Packed::owner`] of a file without a settlement).
const NONE: u32 = u32::MAX;
/// [`Packed::flags`]: the slot holds a file (free slots wait for reuse).
const LIVE: u8 = 1;
/// [`Packed::flags`]: no quality was readable and 3 was assumed.
const DEFAULTED: u8 = 2;
/// [`Packed::flags`]: [`Settlement::guarded`].
const GUARDED: u8 = 4;
/// [`Packed::flags`]: [`Settlement::renamed`].
const RENAMED: u8 = 8;

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

/// `f64::total_cmp` as an integer key (the same bit trick the standard library uses).
fn minutes_key(m: f64) -> i64 {
    let bits = m.to_bits() as i64;
    bits ^ ((((bits >> 63) as u64) >> 1) as i64)
}

/// Values kept once each with a count of the settlements naming them; a value no settlement
/// names any more is forgotten and its index reused.
#[derive(Debug, Clone)]
struct Table<T: std::hash::Hash + Eq + Clone + Default> {
    items: Vec<T>,
    counts: Vec<u32>,
    find: HashMap<T, u32>,
    free: Vec<u32>,
}

impl<T: std::hash::Hash + Eq + Clone + Default> Default for Table<T> {
    fn default() -> Self {
        Table {
            items: Vec::new(),
            counts: Vec::new(),
            find: HashMap::new(),
            free: Vec::new(),
        }
    }
}

impl<T: std::hash::Hash + Eq + Clone + Default> Table<T> {
    fn intern<Q>(&mut self, value: &Q) -> u32
    where
        T: std::borrow::Borrow<Q>,
        Q: std::hash::Hash + Eq + ?Sized + ToOwned<Owned = T>,
    {
        if let Some(&at) = self.find.get(value) {
            self.counts[at as usize] += 1;
            return at;
        }
        let owned = value.to_owned();
        let at = match self.free.pop() {
            Some(at) => {
                self.items[at as usize] = owned.clone();
                self.counts[at as usize] = 1;
                at
            }
            None => {
                self.items.push(owned.clone());
                self.counts.push(1);
                (self.items.len() - 1) as u32
            }
        };
        self.find.insert(owned, at);
        at
    }

    fn release(&mut self, at: u32) {
        if at == NONE {
            return;
        }
        let count = &mut self.counts[at as usize];
        *count -= 1;
        if *count == 0 {
            let item = std::mem::take(&mut self.items[at as usize]);
            self.find.remove(&item);
            self.free.push(at);
        }
    }

    fn get(&self, at: u32) -> &T {
        &self.items[at as usize]
    }

    /// Each index's rank in the values' order (free indices rank anywhere).
    fn ranks(&self) -> Vec<u32>
    where
        T: Ord,
    {
        let mut order: Vec<u32> = (0..self.items.len() as u32).collect();
        order.sort_unstable_by(|a, b| self.items[*a as usize].cmp(&self.items[*b as usize]));
        let mut ranks = vec![0; self.items.len()];
        for (rank, at) in order.into_iter().enumerate() {
            ranks[at as usize] = rank as u32;
        }
        ranks
    }
}

/// One settlement as the ledger keeps it: integers and table indices.
#[derive(Debug, Clone, Copy)]
struct Packed {
    /// See [`instant_micros`]; [`NO_INSTANT`] when there is none.
    instant: i64,
    minutes: f64,
    /// Into the texts; [`NONE`] for a file that gives no settlement.
    owner: u32,
    /// Into the tag lists.
    tags: u32,
    /// Into the texts, only for a settlement without an instant (it orders those, SPEC §6
    /// step 4); else [`NONE`].
    when_text: u32,
    /// Into the texts; [`NONE`] when there is no time at all.
    last_completed: u32,
    /// Into the texts: [`Settlement::recommended`], else [`NONE`]. (It fills what was padding:
    /// a slot is still 48 bytes.)
    recommended: u32,
    quality: u8,
    /// [`LIVE`], [`DEFAULTED`], [`GUARDED`], [`RENAMED`].
    flags: u8,
}

impl Packed {
    const UNSETTLED: Packed = Packed {
        instant: NO_INSTANT,
        minutes: 0.0,
        owner: NONE,
        tags: NONE,
        when_text: NONE,
        last_completed: NONE,
        recommended: NONE,
        quality: 0,
        flags: LIVE,
    };
}

/// One file: where its path lies in the [`Names`], and its settlement. The caller's value
/// lies beside it, in [`Ledger::metas`].
#[derive(Debug, Clone, Copy)]
struct Slot {
    name_at: u32,
    name_len: u32,
    packed: Packed,
}

impl Slot {
    fn live(&self) -> bool {
        self.packed.flags & LIVE != 0
    }

    fn settled(&self) -> bool {
        self.live() && self.packed.owner != NONE
    }
}

/// Slots per chunk of [`Chunked`].
const CHUNK_BITS: u32 = 12;
const CHUNK: usize = 1 << CHUNK_BITS;

/// A vector in shared chunks: a [`LedgerSnapshot`] takes the chunks (a pointer each), and the
/// ledger copies a chunk only when it changes one a snapshot still holds.
#[derive(Debug, Clone, Default)]
struct Chunked {
    chunks: Vec<Arc<Vec<Slot>>>,
    len: usize,
}

impl Chunked {
    fn get(&self, id: u32) -> &Slot {
        &self.chunks[(id >> CHUNK_BITS) as usize][id as usize & (CHUNK - 1)]
    }

    fn get_mut(&mut self, id: u32) -> &mut Slot {
        &mut Arc::make_mut(&mut self.chunks[(id >> CHUNK_BITS) as usize])[id as usize & (CHUNK - 1)]
    }

    fn push(&mut self, slot: Slot) -> u32 {
        if self.len.is_multiple_of(CHUNK) {
            self.chunks.push(Arc::new(Vec::with_capacity(CHUNK)));
        }
        if let Some(last) = self.chunks.last_mut() {
            Arc::make_mut(last).push(slot);
        }
        self.len += 1;
        u32::try_from(self.len - 1).expect("fewer than 4 billion settled files")
    }

    fn iter(&self) -> impl Iterator<Item = (u32, &Slot)> {
        self.chunks
            .iter()
            .flat_map(|c| c.iter())
            .enumerate()
            .map(|(id, s)| (id as u32, s))
    }
}

/// Bytes per chunk of [`Names`] (a longer path gets a chunk of its own).
const NAME_CHUNK: usize = 1 << 16;

/// Every path, back to back, in shared chunks as [`Chunked`]; a path lies in one chunk, at
/// `chunk << 16 | offset`.
#[derive(Debug, Clone, Default)]
struct Names {
    chunks: Vec<Arc<String>>,
}

impl Names {
    fn get(&self, at: u32, len: u32) -> &str {
        let chunk = &self.chunks[(at >> 16) as usize];
        let from = (at & 0xFFFF) as usize;
        &chunk[from..from + len as usize]
    }

    fn push(&mut self, name: &str) -> u32 {
        let fits = self
            .chunks
            .last()
            .is_some_and(|c| c.len() + name.len() < NAME_CHUNK);
        if !fits {
            self.chunks
                .push(Arc::new(String::with_capacity(NAME_CHUNK.max(name.len()))));
        }
        let chunk = self.chunks.len() - 1;
        let last = Arc::make_mut(&mut self.chunks[chunk]);
        let at = last.len();
        last.push_str(name);
        u32::try_from(chunk << 16 | at).expect("settled paths under 4 GiB")
    }

    fn bytes(&self) -> usize {
        self.chunks.iter().map(|c| c.len()).sum()
    }
}

/// What a settlement's place in the replay order is read from.
struct Keys<'a> {
    slots: &'a Chunked,
    names: &'a Names,
    texts: &'a [String],
    lists: &'a [Vec<String>],
}

impl Keys<'_> {
    fn name(&self, id: u32) -> &str {
        name_of(self.names, self.slots.get(id))
    }

    fn text(&self, at: u32) -> &str {
        if at == NONE {
            ""
        } else {
            &self.texts[at as usize]
        }
    }

    /// [`super::replay_order`] over slots, then the path (a full reconcile sorts stably over
    /// settlements listed in path order, which is the same order).
    fn order(&self, a: u32, b: u32) -> Ordering {
        if a == b {
            return Ordering::Equal;
        }
        let (x, y) = (&self.slots.get(a).packed, &self.slots.get(b).packed);
        let time = if x.instant == NO_INSTANT && y.instant == NO_INSTANT {
            self.text(x.when_text).cmp(self.text(y.when_text))
        } else {
            x.instant.cmp(&y.instant)
        };
        time.then_with(|| self.text(x.owner).cmp(self.text(y.owner)))
            .then_with(|| {
                if x.tags == y.tags {
                    Ordering::Equal
                } else {
                    self.lists[x.tags as usize].cmp(&self.lists[y.tags as usize])
                }
            })
            .then_with(|| x.quality.cmp(&y.quality))
            .then_with(|| x.minutes.total_cmp(&y.minutes))
            .then_with(|| self.name(a).cmp(self.name(b)))
    }

    fn view(&self, id: u32) -> SettlementView<'_> {
        view_of(self.slots.get(id), self.texts, self.lists)
    }
}

fn name_of<'a>(names: &'a Names, slot: &Slot) -> &'a str {
    names.get(slot.name_at, slot.name_len)
}

/// The path in slot `id`, when a file lies there.
fn live_name<'a>(slots: &Chunked, names: &'a Names, id: u32) -> Option<&'a str> {
    ((id as usize) < slots.len)
        .then(|| slots.get(id))
        .filter(|s| s.live())
        .map(|s| name_of(names, s))
}

fn view_of<'a>(slot: &Slot, texts: &'a [String], lists: &'a [Vec<String>]) -> SettlementView<'a> {
    let p = &slot.packed;
    let text = |at: u32| (at != NONE).then(|| texts[at as usize].as_str());
    SettlementView {
        owner: text(p.owner).unwrap_or(""),
        tags: &lists[p.tags as usize],
        instant: micros_instant(p.instant),
        when_text: text(p.when_text).unwrap_or(""),
        last_completed: text(p.last_completed),
        quality: p.quality,
        quality_defaulted: p.flags & DEFAULTED != 0,
        minutes: p.minutes,
        recommended: text(p.recommended),
        guarded: p.flags & GUARDED != 0,
        renamed: p.flags & RENAMED != 0,
    }
}

/// Slot numbers in the replay order: a sorted run, then a tail in arrival order (settlements
/// recorded out of order are sorted in once, when the order is next read).
#[derive(Debug, Clone, Default)]
struct Order {
    ids: Vec<u32>,
    sorted: usize,
}

impl Order {
    fn is_sorted(&self) -> bool {
        self.sorted == self.ids.len()
    }

    /// Adds `id`; whether it went at the end of a sorted order.
    fn push(&mut self, id: u32, keys: &Keys<'_>) -> bool {
        let at_end = self.is_sorted()
            && self
                .ids
                .last()
                .is_none_or(|&last| keys.order(last, id) == Ordering::Less);
        self.ids.push(id);
        if at_end {
            self.sorted = self.ids.len();
        }
        at_end
    }

    /// Takes `id` out, wherever it is; whether it was there.
    fn remove(&mut self, id: u32, keys: &Keys<'_>) -> bool {
        if let Some(i) = self.ids[self.sorted..].iter().position(|&x| x == id) {
            self.ids.swap_remove(self.sorted + i);
            return true;
        }
        match self.ids[..self.sorted].binary_search_by(|&probe| keys.order(probe, id)) {
            Ok(i) => {
                self.ids.remove(i);
                self.sorted -= 1;
                true
            }
            Err(_) => false,
        }
    }

    /// Sorts the tail into the run.
    fn normalize(&mut self, keys: &Keys<'_>) {
        if self.is_sorted() {
            return;
        }
        let mut tail = self.ids.split_off(self.sorted);
        tail.sort_unstable_by(|a, b| keys.order(*a, *b));
        let run = std::mem::take(&mut self.ids);
        self.ids = merge(run, tail, keys);
        self.sorted = self.ids.len();
    }

    fn first(&self) -> Option<u32> {
        debug_assert!(self.is_sorted());
        self.ids.first().copied()
    }

    fn last(&self) -> Option<u32> {
        debug_assert!(self.is_sorted());
        self.ids.last().copied()
    }
}

/// Two sorted runs as one.
fn merge(a: Vec<u32>, b: Vec<u32>, keys: &Keys<'_>) -> Vec<u32> {
    if b.is_empty() {
        return a;
    }
    if a.last()
        .is_none_or(|&l| keys.order(l, b[0]) == Ordering::Less)
    {
        let mut a = a;
        a.extend(b);
        return a;
    }
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        if keys.order(a[i], b[j]) == Ordering::Less {
            out.push(a[i]);
            i += 1;
        } else {
            out.push(b[j]);
            j += 1;
        }
    }
    out.extend_from_slice(&a[i..]);
    out.extend_from_slice(&b[j..]);
    out
}

/// One tag as the ledger keeps it: its settlements in replay order and the stats they give.
#[derive(Debug, Clone)]
struct TagLedger {
    members: Order,
    stats: TagStats,
    citizen_index: HashMap<String, usize>,
    /// The running averages no longer match `members` (an older settlement arrived, or one
    /// left): replayed from scratch when the stats are next asked for.
    dirty: bool,
}

impl TagLedger {
    fn new(tag: &str) -> TagLedger {
        TagLedger {
            members: Order::default(),
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

    /// Adds one settlement at the end of the replay: the same operations as
    /// [`super::reconcile`].
    fn extend(&mut self, s: &SettlementView<'_>) {
        let citizens = &mut self.stats.citizens;
        let c = match self.citizen_index.get(s.owner) {
            Some(&c) => c,
            None => {
                citizens.push(CitizenStats::new(s.owner));
                self.citizen_index
                    .insert(s.owner.to_string(), citizens.len() - 1);
                citizens.len() - 1
            }
        };
        citizens[c].record_values(s.quality, s.minutes, s.last_completed);
    }

    fn replay(&mut self, keys: &Keys<'_>) {
        self.stats.citizens.clear();
        self.citizen_index.clear();
        let members = std::mem::take(&mut self.members);
        for &id in &members.ids {
            self.extend(&keys.view(id));
        }
        self.members = members;
        self.dirty = false;
    }

    fn settle_leader(&mut self) {
        let (leader, confidence) = leader_of(&self.stats.citizens);
        self.stats.leader = leader;
        self.stats.leader_confidence = confidence;
    }
}

/// The settled files of a polis kept between changes, so `routing_stats.yml` follows one
/// settlement at a cost that does not grow with the polis: a settlement later in the replay
/// than every other on its tags extends the running averages directly; an older one, an edit or
/// a removal replays only the tags it touches. [`Ledger::stats`] equals [`super::reconcile`]
/// over the same settlements, byte for byte once rendered (`tests/incremental.rs` checks it).
///
/// Each file carries a value `M` of the caller's (the daemon keeps its fingerprint there),
/// beside its settlement; files that give no settlement are kept too, with their `M` only.
#[derive(Debug, Clone)]
pub struct Ledger<M = ()> {
    slots: Chunked,
    /// The caller's value of each slot (of a free one: the last file's, until reused).
    metas: Vec<M>,
    /// Slots of forgotten files, reused first.
    free: Vec<u32>,
    names: Names,
    /// Bytes of `names` no live slot points at (compacted once they are half).
    dead_names: usize,
    /// Live slots by their path's hash.
    index: hashbrown::HashTable<u32>,
    hasher: std::hash::RandomState,
    settled: usize,
    texts: Table<String>,
    lists: Table<Vec<String>>,
    all: Order,
    tags: HashMap<String, TagLedger>,
    /// Tags whose leader must be chosen again before the next [`Ledger::stats`].
    touched: BTreeSet<String>,
    /// Stamped anew (unique in the process) by every change of what the ledger holds: a reader
    /// keeps a snapshot until it moves.
    version: u64,
}

/// What [`Ledger::record`] did with a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Recorded {
    /// The slot the file lies in now ([`Ledger::slot`]).
    pub slot: u32,
    /// Whether it settles something else than before (or was not held): `false` when only
    /// the caller's value was replaced.
    pub settlement_changed: bool,
}

/// A stamp no ledger of this process has had.
fn next_version() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

impl<M> Default for Ledger<M> {
    fn default() -> Self {
        Ledger {
            slots: Chunked::default(),
            metas: Vec::new(),
            free: Vec::new(),
            names: Names::default(),
            dead_names: 0,
            index: hashbrown::HashTable::new(),
            hasher: std::hash::RandomState::new(),
            settled: 0,
            texts: Table::default(),
            lists: Table::default(),
            all: Order::default(),
            tags: HashMap::new(),
            touched: BTreeSet::new(),
            version: next_version(),
        }
    }
}

impl Ledger {
    pub fn new() -> Ledger {
        Ledger::default()
    }
}

/// The [`Keys`] of a ledger, borrowing only the fields they read (so the others stay free).
macro_rules! keys {
    ($l:expr) => {
        Keys {
            slots: &$l.slots,
            names: &$l.names,
            texts: &$l.texts.items,
            lists: &$l.lists.items,
        }
    };
}

impl<M> Ledger<M> {
    /// How many settlements the ledger holds.
    pub fn len(&self) -> usize {
        self.settled
    }

    pub fn is_empty(&self) -> bool {
        self.settled == 0
    }

    /// How many files the ledger holds, with a settlement or without.
    pub fn file_count(&self) -> usize {
        self.index.len()
    }

    fn find(&self, path: &str) -> Option<u32> {
        let hash = self.hasher.hash_one(path);
        self.index
            .find(hash, |&id| name_of(&self.names, self.slots.get(id)) == path)
            .copied()
    }

    pub fn contains_file(&self, path: &str) -> bool {
        self.find(path).is_some()
    }

    /// The caller's value for the file `path`.
    pub fn meta(&self, path: &str) -> Option<&M> {
        self.find(path).map(|id| &self.metas[id as usize])
    }

    /// The slot the file `path` lies in: its number while the ledger holds it (a file
    /// forgotten leaves its slot to the next file recorded), so a caller can keep what it
    /// knows of each file by slot instead of by a copy of the path.
    pub fn slot(&self, path: &str) -> Option<u32> {
        self.find(path)
    }

    /// The path of the file in `slot`, if one lies there.
    pub fn path_at(&self, slot: u32) -> Option<&str> {
        live_name(&self.slots, &self.names, slot)
    }

    /// The caller's value for the file in `slot`, if one lies there.
    pub fn meta_at(&self, slot: u32) -> Option<&M> {
        self.path_at(slot).map(|_| &self.metas[slot as usize])
    }

    /// The file in `slot`, as [`Ledger::files`] gives it, if one lies there.
    pub fn file_at(&self, slot: u32) -> Option<(&str, &M, Option<SettlementView<'_>>)> {
        let path = self.path_at(slot)?;
        Some((path, &self.metas[slot as usize], self.view(slot)))
    }

    fn view(&self, id: u32) -> Option<SettlementView<'_>> {
        let slot = self.slots.get(id);
        slot.settled()
            .then(|| view_of(slot, &self.texts.items, &self.lists.items))
    }

    /// The settlement of `path`, if the ledger holds one.
    pub fn get(&self, path: &str) -> Option<Settlement> {
        let id = self.find(path)?;
        self.view(id)
            .map(|v| v.to_settlement(name_of(&self.names, self.slots.get(id))))
    }

    /// Every settlement with its path, borrowed, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, SettlementView<'_>)> {
        self.slots
            .iter()
            .filter(|(_, s)| s.settled())
            .map(|(_, s)| {
                (
                    name_of(&self.names, s),
                    view_of(s, &self.texts.items, &self.lists.items),
                )
            })
    }

    /// Every settlement, in path order (the order [`super::reconcile`] is given them
    /// elsewhere). A settlement's `when_text` is given back only when it has no instant (the
    /// only case where it counts).
    pub fn settlements(&self) -> Vec<Settlement> {
        let mut out: Vec<Settlement> = self.iter().map(|(p, v)| v.to_settlement(p)).collect();
        out.sort_by(|a, b| a.path.cmp(&b.path));
        out
    }

    /// Every file: its path, the caller's value and its settlement if it gives one.
    pub fn files(&self) -> impl Iterator<Item = (&str, &M, Option<SettlementView<'_>>)> {
        self.files_in_slots()
            .map(|(_, path, meta, s)| (path, meta, s))
    }

    /// [`Ledger::files`], each with its [`Ledger::slot`].
    pub fn files_in_slots(
        &self,
    ) -> impl Iterator<Item = (u32, &str, &M, Option<SettlementView<'_>>)> {
        self.slots.iter().filter(|(_, s)| s.live()).map(|(id, s)| {
            (
                id,
                name_of(&self.names, s),
                &self.metas[id as usize],
                s.settled()
                    .then(|| view_of(s, &self.texts.items, &self.lists.items)),
            )
        })
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

    /// Whether the slot `id` says what `s` says (its `when_text` counts only without an
    /// instant).
    fn same_as(&self, id: u32, s: &Settlement) -> bool {
        let Some(v) = self.view(id) else {
            return false;
        };
        v.owner == s.owner
            && v.tags == s.tags.as_slice()
            && self.slots.get(id).packed.instant == instant_micros(s.instant)
            && (s.instant.is_some() || v.when_text == s.when_text)
            && v.last_completed == s.last_completed.as_deref()
            && v.minutes.to_bits() == s.minutes.to_bits()
            && v.quality == s.quality
            && v.quality_defaulted == s.quality_defaulted
            && v.recommended == s.recommended.as_deref()
            && v.guarded == s.guarded
            && v.renamed == s.renamed
    }

    /// The settlement packed, its texts and tag list counted once more.
    fn pack(&mut self, s: Option<SettlementView<'_>>) -> Packed {
        let Some(s) = s else {
            return Packed::UNSETTLED;
        };
        Packed {
            instant: instant_micros(s.instant),
            minutes: s.minutes,
            owner: self.texts.intern(s.owner),
            tags: self.lists.intern(s.tags),
            when_text: match s.instant {
                None => self.texts.intern(s.when_text),
                Some(_) => NONE,
            },
            last_completed: s.last_completed.map_or(NONE, |d| self.texts.intern(d)),
            recommended: s.recommended.map_or(NONE, |r| self.texts.intern(r)),
            quality: s.quality,
            flags: LIVE
                | if s.quality_defaulted { DEFAULTED } else { 0 }
                | if s.guarded { GUARDED } else { 0 }
                | if s.renamed { RENAMED } else { 0 },
        }
    }

    /// Gives back what the slot's settlement counted; the slot stays live, unsettled.
    fn unpack(&mut self, id: u32) {
        let p = std::mem::replace(&mut self.slots.get_mut(id).packed, Packed::UNSETTLED);
        if p.owner != NONE {
            self.texts.release(p.owner);
            self.lists.release(p.tags);
            self.texts.release(p.when_text);
            self.texts.release(p.last_completed);
            self.texts.release(p.recommended);
            self.settled -= 1;
        }
    }

    /// A new slot for `path` (not yet in any replay order).
    fn add(&mut self, path: &str, meta: M, s: Option<SettlementView<'_>>) -> u32 {
        let packed = self.pack(s);
        if packed.owner != NONE {
            self.settled += 1;
        }
        let slot = Slot {
            name_at: self.names.push(path),
            name_len: u32::try_from(path.len()).expect("a path under 4 GiB"),
            packed,
        };
        let id = match self.free.pop() {
            Some(id) => {
                *self.slots.get_mut(id) = slot;
                self.metas[id as usize] = meta;
                id
            }
            None => {
                self.metas.push(meta);
                self.slots.push(slot)
            }
        };
        let hash = self.hasher.hash_one(path);
        let (names, slots, hasher) = (&self.names, &self.slots, &self.hasher);
        self.index
            .insert_unique(hash, id, |&i| hasher.hash_one(name_of(names, slots.get(i))));
        id
    }

    /// Puts the settled slot `id` in the replay orders.
    fn place(&mut self, id: u32) {
        let keys = keys!(self);
        let view = keys.view(id);
        for tag in dedup(view.tags) {
            let t = match self.tags.get_mut(tag.as_str()) {
                Some(t) => t,
                None => self
                    .tags
                    .entry(tag.clone())
                    .or_insert_with(|| TagLedger::new(tag)),
            };
            let at_end = t.members.push(id, &keys);
            if at_end && !t.dirty {
                t.extend(&view);
            } else {
                t.dirty = true;
            }
            if !self.touched.contains(tag.as_str()) {
                self.touched.insert(tag.clone());
            }
        }
        self.all.push(id, &keys);
    }

    /// Records the file `path` with the caller's value and what it settles (`None`: it is kept
    /// but counts for nothing), replacing what it said before.
    pub fn record(&mut self, path: &str, meta: M, settlement: Option<Settlement>) -> Recorded {
        self.version = next_version();
        if let Some(id) = self.find(path) {
            let same = match &settlement {
                Some(s) => self.same_as(id, s),
                None => !self.slots.get(id).settled(),
            };
            if same {
                self.metas[id as usize] = meta;
                return Recorded {
                    slot: id,
                    settlement_changed: false,
                };
            }
        }
        self.forget(path);
        let settles = settlement.is_some();
        let id = self.add(path, meta, settlement.as_ref().map(Settlement::view));
        if settles {
            self.place(id);
        }
        Recorded {
            slot: id,
            settlement_changed: true,
        }
    }

    /// Forgets the file `path`; whether the ledger held it.
    pub fn forget(&mut self, path: &str) -> bool {
        self.version = next_version();
        let hash = self.hasher.hash_one(path);
        let (names, slots) = (&self.names, &self.slots);
        let Ok(entry) = self
            .index
            .find_entry(hash, |&id| name_of(names, slots.get(id)) == path)
        else {
            return false;
        };
        let (id, _) = entry.remove();
        if self.slots.get(id).settled() {
            let keys = keys!(self);
            self.all.remove(id, &keys);
            for tag in dedup(keys.view(id).tags) {
                if let Some(t) = self.tags.get_mut(tag.as_str()) {
                    t.members.remove(id, &keys);
                    if t.members.ids.is_empty() {
                        self.tags.remove(tag.as_str());
                    } else {
                        t.dirty = true;
                    }
                    self.touched.insert(tag.clone());
                }
            }
        }
        self.unpack(id);
        let slot = self.slots.get_mut(id);
        slot.packed.flags = 0;
        self.dead_names += slot.name_len as usize;
        self.free.push(id);
        if self.dead_names > 4096 && self.dead_names * 2 > self.names.bytes() {
            self.compact_names();
        }
        true
    }

    /// The names without the paths of forgotten files.
    fn compact_names(&mut self) {
        let mut names = Names::default();
        let live: Vec<u32> = self
            .slots
            .iter()
            .filter(|(_, s)| s.live())
            .map(|(id, _)| id)
            .collect();
        for id in live {
            let slot = *self.slots.get(id);
            let at = names.push(name_of(&self.names, &slot));
            self.slots.get_mut(id).name_at = at;
        }
        self.names = names;
        self.dead_names = 0;
    }

    /// A ledger of these files at once (a restart: the files as a snapshot recorded them).
    /// The same as recording them one by one, in a fraction of the time: the replay order is
    /// sorted once (on integer keys) and every tag is replayed once. A path given twice keeps
    /// its last record.
    pub fn restore<'a>(
        files: impl IntoIterator<Item = (&'a str, M, Option<SettlementView<'a>>)>,
    ) -> Ledger<M> {
        let mut ledger = Ledger::default();
        for (path, meta, settlement) in files {
            match ledger.find(path) {
                None => {
                    ledger.add(path, meta, settlement);
                }
                Some(id) => {
                    // Nothing is placed yet: the slot takes the later record.
                    ledger.unpack(id);
                    let packed = ledger.pack(settlement);
                    if packed.owner != NONE {
                        ledger.settled += 1;
                    }
                    ledger.slots.get_mut(id).packed = packed;
                    ledger.metas[id as usize] = meta;
                }
            }
        }
        ledger.metas.shrink_to_fit();
        let text_rank = ledger.texts.ranks();
        let list_rank = ledger.lists.ranks();
        let rank = |at: u32| {
            if at == NONE {
                0
            } else {
                text_rank[at as usize] + 1
            }
        };
        type Key = (i64, u32, u32, u32, u8, i64);
        let mut keyed: Vec<(Key, u32)> = ledger
            .slots
            .iter()
            .filter(|(_, s)| s.settled())
            .map(|(id, s)| {
                let p = &s.packed;
                let when = if p.instant == NO_INSTANT {
                    rank(p.when_text)
                } else {
                    0
                };
                let key = (
                    p.instant,
                    when,
                    rank(p.owner),
                    list_rank[p.tags as usize],
                    p.quality,
                    minutes_key(p.minutes),
                );
                (key, id)
            })
            .collect();
        {
            let keys = keys!(ledger);
            keyed.sort_unstable_by(|a, b| {
                a.0.cmp(&b.0)
                    .then_with(|| keys.name(a.1).cmp(keys.name(b.1)))
            });
        }
        let order: Vec<u32> = keyed.into_iter().map(|(_, id)| id).collect();
        let mut per_tag: HashMap<String, Vec<u32>> = HashMap::new();
        for &id in &order {
            let tags = ledger.lists.get(ledger.slots.get(id).packed.tags);
            for tag in dedup(tags) {
                match per_tag.get_mut(tag.as_str()) {
                    Some(members) => members.push(id),
                    None => {
                        per_tag.insert(tag.clone(), vec![id]);
                    }
                }
            }
        }
        for (tag, ids) in per_tag {
            let mut t = TagLedger::new(&tag);
            t.members = Order {
                sorted: ids.len(),
                ids,
            };
            t.dirty = true;
            ledger.touched.insert(tag.clone());
            ledger.tags.insert(tag, t);
        }
        ledger.all = Order {
            sorted: order.len(),
            ids: order,
        };
        ledger
    }

    /// The stats [`super::reconcile`] would give over the same settlements (see there for the
    /// two values kept from the file being replaced).
    pub fn stats(&mut self, explore_rate: &Value, previous_last_updated: &Value) -> RoutingStats {
        let keys = keys!(self);
        self.all.normalize(&keys);
        for tag in std::mem::take(&mut self.touched) {
            if let Some(t) = self.tags.get_mut(&tag) {
                t.members.normalize(&keys);
                if t.dirty {
                    t.replay(&keys);
                }
                t.settle_leader();
            }
        }
        // Each tag's place among its first settlement's tags, from one map per settlement: a
        // search per tag was quadratic in a settlement listing 100,000 tags.
        let mut places: HashMap<u32, HashMap<&str, usize>> = HashMap::new();
        let mut order: Vec<(u32, usize, &TagLedger)> = Vec::with_capacity(self.tags.len());
        for t in self.tags.values() {
            let Some(first) = t.members.first() else {
                continue;
            };
            let place = places.entry(first).or_insert_with(|| {
                let mut at = HashMap::new();
                for (i, tag) in keys.view(first).tags.iter().enumerate() {
                    at.entry(tag.as_str()).or_insert(i);
                }
                at
            });
            order.push((
                first,
                place.get(t.stats.tag.as_str()).copied().unwrap_or(0),
                t,
            ));
        }
        order.sort_by(|a, b| keys.order(a.0, b.0).then(a.1.cmp(&b.1)));
        let tags = order.into_iter().map(|(_, _, t)| t.stats.clone()).collect();
        let newest = self
            .all
            .last()
            .and_then(|id| micros_instant(self.slots.get(id).packed.instant));
        assemble(tags, newest, explore_rate, previous_last_updated)
    }

    /// Changes whenever a file is recorded or forgotten (and differs between ledgers): equal
    /// versions, same files.
    pub fn version(&self) -> u64 {
        self.version
    }

    /// The files as they are now (see [`LedgerSnapshot`]).
    pub fn snapshot(&self) -> LedgerSnapshot {
        let keys = keys!(self);
        let mut order = self.all.clone();
        order.normalize(&keys);
        LedgerSnapshot(Arc::new(Frozen {
            slots: self.slots.clone(),
            names: self.names.clone(),
            order: order.ids,
            unsettled: self.index.len() - self.settled,
            texts: self.texts.items.clone(),
            lists: self.lists.items.clone(),
        }))
    }
}

/// A ledger's slots and names as a snapshot shares them.
#[derive(Debug, Default)]
struct Frozen {
    slots: Chunked,
    names: Names,
    /// The settled slots in the replay order.
    order: Vec<u32>,
    /// How many files give no settlement.
    unsettled: usize,
    texts: Vec<String>,
    lists: Vec<Vec<String>>,
}

/// A [`Ledger`]'s files at one moment, sharing the ledger's chunks (taking one copies a
/// pointer per 4096 files and the replay order, 4 bytes per settlement; the ledger copies a
/// chunk it changes while a snapshot holds it): what the daemon publishes after a pass for
/// readers beside it (the dashboard), which must not hold the ledger itself.
#[derive(Debug, Clone, Default)]
pub struct LedgerSnapshot(Arc<Frozen>);

impl LedgerSnapshot {
    /// How many settlements it holds.
    pub fn len(&self) -> usize {
        self.0.order.len()
    }

    /// Whether `other` is this very snapshot (taken at the same ledger version, not copied).
    pub fn same(&self, other: &LedgerSnapshot) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }

    pub fn is_empty(&self) -> bool {
        self.0.order.is_empty()
    }

    /// How many files, with a settlement or without.
    pub fn file_count(&self) -> usize {
        self.0.order.len() + self.0.unsettled
    }

    /// The path of the file in `slot` ([`Ledger::slot`] when the snapshot was taken).
    pub fn path_at(&self, slot: u32) -> Option<&str> {
        live_name(&self.0.slots, &self.0.names, slot)
    }

    /// Every settlement with its path, in the replay order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, SettlementView<'_>)> {
        let f = &*self.0;
        f.order.iter().map(move |&id| {
            let slot = f.slots.get(id);
            (name_of(&f.names, slot), view_of(slot, &f.texts, &f.lists))
        })
    }

    /// Every file's path: the settled ones in the replay order, then the others.
    pub fn paths(&self) -> impl Iterator<Item = &str> {
        let f = &*self.0;
        self.iter().map(|(p, _)| p).chain(
            f.slots
                .iter()
                .filter(|(_, s)| s.live() && !s.settled())
                .map(move |(_, s)| name_of(&f.names, s)),
        )
    }

    /// [`super::history`] of these settlements, without sorting them again.
    pub fn history(&self) -> Vec<(String, super::TagHistory)> {
        super::history_in_order(self.iter().map(|(_, v)| v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settlement(path: &str, owner: &str, tags: &[&str], minute: u32, quality: u8) -> Settlement {
        let instant =
            chrono::NaiveDate::from_ymd_opt(2026, 3, 1).and_then(|d| d.and_hms_opt(10, minute, 0));
        Settlement {
            path: path.into(),
            owner: owner.into(),
            tags: tags.iter().map(|t| t.to_string()).collect(),
            instant,
            last_completed: Some("2026-03-01".into()),
            quality,
            minutes: 10.0,
            ..Settlement::default()
        }
    }

    #[test]
    fn a_slot_stays_small() {
        // The slot is what a settlement costs beside its path; a field added here is paid
        // 100k times over.
        assert!(std::mem::size_of::<Slot>() <= 48);
    }

    #[test]
    fn forgotten_slots_and_texts_are_reused_and_names_compacted() {
        let mut ledger = Ledger::new();
        for round in 0..3 {
            for i in 0..2000 {
                let owner = format!("agent-{round}-{}", i % 7);
                ledger.insert(settlement(
                    &format!("contracts/settled/c-{i:05}.md"),
                    &owner,
                    &["rust"],
                    i % 60,
                    4,
                ));
            }
        }
        assert_eq!(ledger.len(), 2000);
        assert_eq!(
            ledger.slots.len, 2000,
            "the freed slot is reused by the next record"
        );
        assert_eq!(
            ledger.texts.find.len(),
            7 + 1,
            "owners of earlier rounds are forgotten"
        );
        for i in 0..2000 {
            assert!(ledger.forget(&format!("contracts/settled/c-{i:05}.md")));
        }
        assert!(
            ledger.names.bytes() < 4096 + 64,
            "names compacted: {}",
            ledger.names.bytes()
        );
        assert!(ledger.is_empty() && ledger.tags.is_empty());
        assert!(ledger.texts.find.is_empty() && ledger.lists.find.is_empty());
    }

    #[test]
    fn a_restore_sorts_on_integer_keys_as_the_replay_order_does() {
        // Ties on every key but one, times missing (ordered by their text), minutes of both
        // signs, one path given twice: the restored order is the one records one by one give.
        let mut recorded: Ledger<u8> = Ledger::default();
        let mut given = Vec::new();
        for i in 0..120u32 {
            let mut s = settlement(
                &format!("s/{:03}.md", (i * 37) % 120),
                ["zed", "amy", "bob"][(i % 3) as usize],
                [&["py"][..], &["docs", "py"], &["py", "docs"]][(i % 3 / 2 + i % 2) as usize],
                i % 4,
                (i % 5 + 1) as u8,
            );
            s.minutes = [10.0, -0.0, 0.0, -3.5, 7.25][(i % 5) as usize];
            if i % 7 == 0 {
                s.instant = None;
                s.when_text = ["2026-03-01", "soon", ""][(i % 3) as usize].into();
                s.last_completed = None;
            }
            given.push(s);
        }
        given.push(settlement("s/000.md", "amy", &["py"], 59, 2));
        for s in &given {
            recorded.record(&s.path.clone(), 1, Some(s.clone()));
        }
        let restored = Ledger::restore(
            recorded
                .files()
                .map(|(p, m, s)| (p, *m, s))
                .collect::<Vec<_>>(),
        );
        let order = |l: &Ledger<u8>| -> Vec<String> {
            l.snapshot().iter().map(|(p, _)| p.to_string()).collect()
        };
        assert_eq!(order(&restored), order(&recorded));
        assert_eq!(restored.len(), 120);
        let mut restored = restored;
        assert_eq!(
            restored.stats(&Value::Null, &Value::Null),
            recorded.stats(&Value::Null, &Value::Null)
        );
    }

    /// Regression: each tag's place in its first settlement was searched for, and a
    /// settlement's tags deduplicated pairwise, so one settled contract listing 100,000 tags
    /// kept `polisd queue`, `report` and `status` busy for minutes. No clock here (timings
    /// belong to benches): sized so that pairwise work would run for minutes.
    #[test]
    fn a_settlement_of_many_tags_is_recorded_in_linear_time() {
        let names: Vec<String> = (0..30_000).map(|i| format!("t{i}")).collect();
        let tags: Vec<&str> = names.iter().map(String::as_str).collect();
        let mut a = Ledger::new();
        a.insert(settlement("s/wide.md", "bob", &tags, 1, 4));
        a.insert(settlement("s/narrow.md", "ann", &["t9", "t3"], 2, 5));
        let stats = a.stats(&Value::Null, &Value::Null);
        let all: Vec<Settlement> = a.settlements();
        // Not assert_eq: a failure would print 30,000 tags.
        assert!(stats == super::super::reconcile(&all, &Value::Null, &Value::Null));
        assert_eq!(stats.tags.len(), 30_000);
        assert_eq!(stats.tags[3].leader.as_deref(), Some("ann"));
    }

    #[test]
    fn out_of_order_records_are_sorted_in_once_read() {
        let mut a = Ledger::new();
        for i in (0..50).rev() {
            a.insert(settlement(
                &format!("s/{i:02}.md"),
                "bob",
                &["py", "docs"],
                i,
                (i % 5 + 1) as u8,
            ));
        }
        assert!(!a.all.is_sorted());
        let all: Vec<Settlement> = a.settlements();
        let stats = a.stats(&Value::Null, &Value::Null);
        assert_eq!(
            stats,
            super::super::reconcile(&all, &Value::Null, &Value::Null)
        );
        assert!(a.all.is_sorted());
        let snapshot = a.snapshot();
        let minutes: Vec<u32> = snapshot
            .iter()
            .map(|(_, v)| chrono::Timelike::minute(&v.instant.unwrap()))
            .collect();
        assert_eq!(minutes, (0..50).collect::<Vec<_>>());
    }
}
