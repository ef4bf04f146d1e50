//! The durable ledger of settled contracts: `settled.ledger` in the polis's state folder, so a
//! restart (or a `contract settle` with no daemon running) restores the ledger instead of
//! reading every settled file again.
//!
//! The file is a **snapshot** followed by a **journal**, in a compact binary form (postcard,
//! the serde format; see the module's tests for the layout in use):
//!
//! ```text
//! "polisd settled ledger\n"  u32 version  u32 header length  header  body  frame…
//! header: polisd version, fingerprint fields, zone seconds, record count, body length, SHA-256
//! body:   the distinct texts (owners, dates), the distinct tag lists, then one record per file
//!         in path order: path, fingerprint, flags, the settlement as indices into those tables
//! frame:  u32 length  8 bytes of the payload's SHA-256  payload (a put with its texts inline,
//!         or a removal)
//! ```
//!
//! The snapshot is written whole and atomically ([`encode_snapshot`]); each change after it is
//! one frame. Nothing here is trusted as stats: a restored record is only a claim "this file,
//! with this fingerprint, settles this", and the reader stats every file and re-reads those
//! whose fingerprint differs before the ledger is used. What makes the whole file untrusted
//! (then every settled file is read again, with one log line): another format version or
//! polisd version (a newer parser may read a file differently), another set of fingerprint
//! fields (the fingerprint grew: old ones cannot be compared), a snapshot whose checksum,
//! record count or tables do not match, a frame that is not what its checksum says (except a
//! torn last frame, which a crash mid-append leaves: that change is simply read again). The
//! zone the instants were computed in is checked by the reader, which knows the polis's
//! current one. The JSON file of earlier versions (`settled.jsonl`) is read as untrusted, for
//! the paths it had counted only: an upgrade costs one full read, never wrong stats.
//!
//! Settlement times are kept as integers (microseconds) and minutes as the exact bits of their
//! double, so a restored ledger replays to exactly the bytes a fresh read gives.

use super::Fingerprint;
use crate::protocol::digest::sha256;
use crate::protocol::routing::stats::{Settlement, SettlementView};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeSet, HashMap};
use std::io::Write as _;

/// Bumped whenever a record's meaning or the layout changes; any other version is untrusted.
/// (1 was a JSON journal of fingerprints, 2 a JSON snapshot and journal, 3 the binary form
/// without what reflection reads of a settlement: the router's recommendation, guarded and
/// renamed.)
pub const LEDGER_VERSION: u32 = 4;
const MAGIC: &[u8] = b"polisd settled ledger\n";
/// Bytes before a frame's payload: its length and the first bytes of its SHA-256.
const FRAME_HEAD: usize = 4 + FRAME_SUM;
const FRAME_SUM: usize = 8;

/// What the ledger file of an earlier run gives its reader.
#[derive(Debug, Clone, PartialEq)]
pub enum Restored {
    /// No file: nothing is recorded for this polis.
    Nothing,
    /// Records to check against each file's fingerprint. `zone_seconds` is the UTC offset the
    /// instants were computed with.
    Records { zone_seconds: i32, records: Records },
    /// Not usable, for `reason` (one line for the log). `recorded` are the paths it still
    /// names, as far as they could be read: polisd had counted them, so they are read again
    /// but not announced as new settlements.
    Untrusted {
        reason: String,
        recorded: Vec<String>,
    },
}

/// One settled file as a journal frame records it, owned.
#[derive(Debug, Clone, PartialEq)]
pub struct SettledRecord {
    pub path: String,
    pub fingerprint: Fingerprint,
    /// Read the file again before its record is trusted: it had findings, which are not
    /// stored, or a command read it too soon after a change for its fingerprint to tell the
    /// next one ([`Fingerprint::may_change_unseen`]).
    pub reread: bool,
    pub settlement: Option<StoredSettlement>,
    /// Recorded by a one-shot command (no daemon running) for a file no daemon has counted
    /// yet: the daemon reads it again on restart and announces it as a new settlement, as it
    /// would have without the command's record.
    pub unannounced: bool,
}

impl SettledRecord {
    /// The record of a file the ledger holds.
    pub fn of(
        path: &str,
        fingerprint: &Fingerprint,
        reread: bool,
        settlement: Option<SettlementView<'_>>,
    ) -> SettledRecord {
        SettledRecord {
            path: path.to_string(),
            fingerprint: *fingerprint,
            reread,
            settlement: settlement.map(StoredSettlement::of),
            unannounced: false,
        }
    }

    /// The settlement again, with this record's path.
    pub fn settlement(&self) -> Option<Settlement> {
        self.view().map(|v| v.to_settlement(&self.path))
    }

    /// The settlement, borrowed (for [`crate::protocol::routing::stats::Ledger::restore`]).
    pub fn view(&self) -> Option<SettlementView<'_>> {
        self.settlement.as_ref().map(StoredSettlement::view)
    }

    /// The record borrowed, as snapshots are written from.
    pub fn as_ref(&self) -> RecordRef<'_> {
        RecordRef {
            path: &self.path,
            fingerprint: self.fingerprint,
            reread: self.reread,
            unannounced: self.unannounced,
            settlement: self.view(),
        }
    }
}

/// A record borrowed from a [`Records`], a [`SettledRecord`] or the caller's ledger.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RecordRef<'a> {
    pub path: &'a str,
    pub fingerprint: Fingerprint,
    pub reread: bool,
    pub unannounced: bool,
    pub settlement: Option<SettlementView<'a>>,
}

impl RecordRef<'_> {
    pub fn to_owned(&self) -> SettledRecord {
        SettledRecord {
            path: self.path.to_string(),
            fingerprint: self.fingerprint,
            reread: self.reread,
            settlement: self.settlement.map(StoredSettlement::of),
            unannounced: self.unannounced,
        }
    }
}

/// A [`Settlement`] without its path, owned.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredSettlement {
    owner: String,
    tags: Vec<String>,
    /// Microseconds since 1970 of the polis-local wall time.
    instant_us: Option<i64>,
    when_text: String,
    last_completed: Option<String>,
    quality: u8,
    quality_defaulted: bool,
    minutes: f64,
    recommended: Option<String>,
    guarded: bool,
    renamed: bool,
}

impl StoredSettlement {
    fn of(v: SettlementView<'_>) -> StoredSettlement {
        StoredSettlement {
            owner: v.owner.to_string(),
            tags: v.tags.to_vec(),
            instant_us: instant_us(&v),
            when_text: v.when_text.to_string(),
            last_completed: v.last_completed.map(str::to_string),
            quality: v.quality,
            quality_defaulted: v.quality_defaulted,
            minutes: v.minutes,
            recommended: v.recommended.map(str::to_string),
            guarded: v.guarded,
            renamed: v.renamed,
        }
    }

    fn view(&self) -> SettlementView<'_> {
        SettlementView {
            owner: &self.owner,
            tags: &self.tags,
            instant: instant_of(self.instant_us),
            when_text: &self.when_text,
            last_completed: self.last_completed.as_deref(),
            quality: self.quality,
            quality_defaulted: self.quality_defaulted,
            minutes: self.minutes,
            recommended: self.recommended.as_deref(),
            guarded: self.guarded,
            renamed: self.renamed,
        }
    }
}

fn instant_us(v: &SettlementView<'_>) -> Option<i64> {
    v.instant.map(|i| i.and_utc().timestamp_micros())
}

/// The microseconds [`instant_of`] makes an instant of (chrono's range).
const INSTANT_MICROS: (i64, i64) = (
    chrono::DateTime::<chrono::Utc>::MIN_UTC.timestamp_micros(),
    chrono::DateTime::<chrono::Utc>::MAX_UTC.timestamp_micros(),
);

/// [`crate::protocol::routing::stats::replay_key`] of the settlement whose instant [`instant_of`]
/// makes of `us`.
fn replay_key_of(us: Option<i64>) -> i64 {
    us.filter(|us| (INSTANT_MICROS.0..=INSTANT_MICROS.1).contains(us))
        .unwrap_or(i64::MIN)
}

fn instant_of(us: Option<i64>) -> Option<chrono::NaiveDateTime> {
    us.and_then(chrono::DateTime::from_timestamp_micros)
        .map(|d| d.naive_utc())
}

/// The records of a trusted file, decoded once and kept compact: every owner, date and tag
/// list once, the paths in one buffer, one small fixed record per file, in path order.
/// Borrowed as [`RecordRef`]s; nothing is allocated per record.
#[derive(Debug, Clone, Default)]
pub struct Records {
    texts: Vec<String>,
    tag_lists: Vec<Vec<String>>,
    paths: String,
    recs: Vec<Rec>,
}

/// Records are equal when they say the same, whatever their tables' order.
impl PartialEq for Records {
    fn eq(&self, other: &Records) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
struct Rec {
    path_at: usize,
    path_len: usize,
    fingerprint: Fingerprint,
    flags: u8,
    settlement: Option<WireSettlement>,
}

const REREAD: u8 = 1;
const UNANNOUNCED: u8 = 2;
const DEFAULTED: u8 = 4;
const GUARDED: u8 = 8;
const RENAMED: u8 = 16;

/// Appends one record: its path to the shared buffer, the rest as a fixed [`Rec`].
fn place(
    paths: &mut String,
    recs: &mut Vec<Rec>,
    path: &str,
    fingerprint: Fingerprint,
    flags: u8,
    settlement: Option<WireSettlement>,
) {
    let path_at = paths.len();
    paths.push_str(path);
    recs.push(Rec {
        path_at,
        path_len: path.len(),
        fingerprint,
        flags,
        settlement,
    });
}

fn flags_of(r: &RecordRef<'_>) -> u8 {
    let mut flags = 0;
    if r.reread {
        flags |= REREAD;
    }
    if r.unannounced {
        flags |= UNANNOUNCED;
    }
    if r.settlement.is_some_and(|s| s.quality_defaulted) {
        flags |= DEFAULTED;
    }
    if r.settlement.is_some_and(|s| s.guarded) {
        flags |= GUARDED;
    }
    if r.settlement.is_some_and(|s| s.renamed) {
        flags |= RENAMED;
    }
    flags
}

impl Records {
    pub fn len(&self) -> usize {
        self.recs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.recs.is_empty()
    }

    /// The `i`th record in path order.
    pub fn get(&self, i: usize) -> RecordRef<'_> {
        self.view(&self.recs[i])
    }

    /// The `i`th record's path, without the rest of its view.
    pub fn path(&self, i: usize) -> &str {
        let r = &self.recs[i];
        &self.paths[r.path_at..r.path_at + r.path_len]
    }

    /// The `i`th record's fingerprint.
    pub fn fingerprint(&self, i: usize) -> Fingerprint {
        self.recs[i].fingerprint
    }

    /// Whether the `i`th record holds a settlement.
    pub fn has_settlement(&self, i: usize) -> bool {
        self.recs[i].settlement.is_some()
    }

    /// [`crate::protocol::routing::stats::replay_key`] of the `i`th record's settlement, read from the
    /// stored microseconds without building its view (`i64::MIN` without a settlement).
    pub fn replay_key(&self, i: usize) -> i64 {
        replay_key_of(self.recs[i].settlement.and_then(|s| s.instant_us))
    }

    /// The `i`th record's settlement, without the rest of its view.
    pub fn settlement(&self, i: usize) -> Option<SettlementView<'_>> {
        let r = &self.recs[i];
        r.settlement.map(|s| self.settlement_view(r, s))
    }

    fn settlement_view(&self, r: &Rec, s: WireSettlement) -> SettlementView<'_> {
        SettlementView {
            owner: &self.texts[s.owner as usize],
            tags: &self.tag_lists[s.tags as usize],
            instant: instant_of(s.instant_us),
            when_text: &self.texts[s.when_text as usize],
            last_completed: s.last_completed.map(|d| self.texts[d as usize].as_str()),
            quality: s.quality,
            quality_defaulted: r.flags & DEFAULTED != 0,
            minutes: s.minutes,
            recommended: s.recommended.map(|d| self.texts[d as usize].as_str()),
            guarded: r.flags & GUARDED != 0,
            renamed: r.flags & RENAMED != 0,
        }
    }

    /// Whether the `i`th record's file is to be read again (see [`SettledRecord::reread`]).
    pub fn reread(&self, i: usize) -> bool {
        self.recs[i].flags & REREAD != 0
    }

    /// Every record, in path order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = RecordRef<'_>> + '_ {
        self.recs.iter().map(|r| self.view(r))
    }

    fn view(&self, r: &Rec) -> RecordRef<'_> {
        RecordRef {
            path: &self.paths[r.path_at..r.path_at + r.path_len],
            fingerprint: r.fingerprint,
            reread: r.flags & REREAD != 0,
            unannounced: r.flags & UNANNOUNCED != 0,
            settlement: r.settlement.map(|s| self.settlement_view(r, s)),
        }
    }

    /// Records of these (a test's, or a caller's that keeps them as records), in path order; a
    /// path given twice keeps its last record.
    pub fn from_refs<'a>(refs: impl IntoIterator<Item = RecordRef<'a>>) -> Records {
        let mut out = Records::default();
        let mut tables = Tables::default();
        for r in refs {
            out.push(&mut tables, r);
        }
        out.sort_by_path();
        out
    }

    fn push(&mut self, tables: &mut Tables, r: RecordRef<'_>) {
        self.push_journal(tables, JournalRecord::of(&r));
    }

    fn push_journal(&mut self, tables: &mut Tables, r: JournalRecord<'_>) {
        let settlement = r.settlement.map(|s| WireSettlement {
            owner: tables.text(&mut self.texts, s.owner),
            tags: tables.tags(&mut self.tag_lists, s.tags.iter().copied()),
            instant_us: s.instant_us,
            when_text: tables.text(&mut self.texts, s.when_text),
            last_completed: s.last_completed.map(|d| tables.text(&mut self.texts, d)),
            recommended: s.recommended.map(|d| tables.text(&mut self.texts, d)),
            quality: s.quality,
            minutes: s.minutes,
        });
        place(
            &mut self.paths,
            &mut self.recs,
            r.path,
            r.fingerprint,
            r.flags,
            settlement,
        );
    }

    /// In path order, the last of a path given twice kept (a stable sort keeps them in the
    /// order they were pushed).
    fn sort_by_path(&mut self) {
        let paths = &self.paths;
        let path = |r: &Rec| &paths[r.path_at..r.path_at + r.path_len];
        if !self.recs.windows(2).all(|w| path(&w[0]) < path(&w[1])) {
            self.recs.sort_by(|a, b| path(a).cmp(path(b)));
            let mut kept: Vec<Rec> = Vec::with_capacity(self.recs.len());
            for r in self.recs.drain(..) {
                match kept.last_mut() {
                    Some(last) if path(last) == path(&r) => *last = r,
                    _ => kept.push(r),
                }
            }
            self.recs = kept;
        }
    }

    /// Merges the records from `from` on (in path order, none of their paths before) into
    /// those before it (in path order too): in place, from the back, so the (few) new ones
    /// cost a binary search each and the snapshot's records move within the memory they
    /// already have. A merge into a fresh vector faulted in a second copy of all of them, a
    /// seventh of `contract settle`'s page faults at 10k.
    fn merge_from(&mut self, from: usize) {
        let Records { paths, recs, .. } = self;
        let path = |r: &Rec| &paths[r.path_at..r.path_at + r.path_len];
        let tail: Vec<Rec> = recs[from..].to_vec();
        let mut head_end = from;
        let mut write = recs.len();
        for t in tail.iter().rev() {
            let at = recs[..head_end].partition_point(|h| path(h) < path(t));
            let moved = head_end - at;
            recs.copy_within(at..head_end, write - moved);
            write -= moved + 1;
            recs[write] = *t;
            head_end = at;
        }
    }

    /// The tables' indices all point somewhere (a snapshot that passed its checksum but was
    /// written wrong is not trusted).
    fn indices_hold(&self) -> bool {
        let texts = self.texts.len() as u32;
        self.recs.iter().all(|r| {
            r.path_at + r.path_len <= self.paths.len()
                && self.paths.is_char_boundary(r.path_at)
                && self.paths.is_char_boundary(r.path_at + r.path_len)
                && r.settlement.is_none_or(|s| {
                    s.owner < texts
                        && s.when_text < texts
                        && s.last_completed.is_none_or(|d| d < texts)
                        && s.recommended.is_none_or(|d| d < texts)
                        && (s.tags as usize) < self.tag_lists.len()
                })
        })
    }
}

/// [`Records`] found by file name: the part of each path after a folder's prefix, for a caller
/// matching the folder's listing against them (one hash lookup a name, no copy of the names).
/// Built once for the records it was made from, and only valid with them.
#[derive(Debug, Default)]
pub struct NameIndex {
    table: hashbrown::HashTable<u32>,
    hasher: foldhash::fast::RandomState,
    prefix: usize,
    /// How many records it was built over (a check that it is used with those).
    records: usize,
}

impl NameIndex {
    /// The records of `records` whose path is `prefix` followed by a name (a path elsewhere is
    /// left out).
    pub fn new(records: &Records, prefix: &str) -> NameIndex {
        let hasher = foldhash::fast::RandomState::default();
        let mut table = hashbrown::HashTable::with_capacity(records.len());
        for i in 0..records.len() {
            if let Some(name) = records.path(i).strip_prefix(prefix) {
                let hash = std::hash::BuildHasher::hash_one(&hasher, name);
                table.insert_unique(hash, i as u32, |&j| {
                    let other = &records.path(j as usize)[prefix.len()..];
                    std::hash::BuildHasher::hash_one(&hasher, other)
                });
            }
        }
        NameIndex {
            table,
            hasher,
            prefix: prefix.len(),
            records: records.len(),
        }
    }

    /// The index of the record of `name` in `records` (those the index was built over).
    pub fn find(&self, records: &Records, name: &str) -> Option<usize> {
        debug_assert_eq!(records.len(), self.records, "an index of other records");
        let hash = std::hash::BuildHasher::hash_one(&self.hasher, name);
        self.table
            .find(hash, |&i| {
                records
                    .path(i as usize)
                    .get(self.prefix..)
                    .is_some_and(|n| n == name)
            })
            .map(|&i| i as usize)
    }

    /// [`NameIndex::find`] of each of `names`, in two passes so that the loads of many
    /// records overlap instead of waiting one by one: each name's first candidate from the
    /// table (small enough to stay in a cache), then the candidates' paths compared. A name
    /// whose first candidate is another name's (their hashes share the table's tag) is
    /// looked up in full.
    pub fn find_each<'n>(
        &self,
        records: &Records,
        names: impl Iterator<Item = &'n str> + Clone,
    ) -> Vec<Option<usize>> {
        debug_assert_eq!(records.len(), self.records, "an index of other records");
        let first: Vec<Option<u32>> = names
            .clone()
            .map(|name| {
                let hash = std::hash::BuildHasher::hash_one(&self.hasher, name);
                self.table.iter_hash(hash).next().copied()
            })
            .collect();
        names
            .zip(first)
            .map(|(name, first)| {
                let i = first? as usize;
                if records.path(i).get(self.prefix..) == Some(name) {
                    Some(i)
                } else {
                    self.find(records, name)
                }
            })
            .collect()
    }
}

/// Where each distinct text and tag list already is, while records are added.
#[derive(Default)]
struct Tables {
    texts: HashMap<String, u32>,
    tag_lists: HashMap<Vec<String>, u32>,
}

impl Tables {
    fn text(&mut self, texts: &mut Vec<String>, s: &str) -> u32 {
        if let Some(&i) = self.texts.get(s) {
            return i;
        }
        let i = texts.len() as u32;
        texts.push(s.to_string());
        self.texts.insert(s.to_string(), i);
        i
    }

    fn tags<'a>(
        &mut self,
        lists: &mut Vec<Vec<String>>,
        tags: impl Iterator<Item = &'a str>,
    ) -> u32 {
        let tags: Vec<String> = tags.map(str::to_string).collect();
        if let Some(&i) = self.tag_lists.get(&tags) {
            return i;
        }
        let i = lists.len() as u32;
        lists.push(tags.clone());
        self.tag_lists.insert(tags, i);
        i
    }
}

/// A settlement in the snapshot: indices into its tables.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
struct WireSettlement {
    owner: u32,
    tags: u32,
    instant_us: Option<i64>,
    when_text: u32,
    last_completed: Option<u32>,
    recommended: Option<u32>,
    quality: u8,
    minutes: f64,
}

#[derive(Serialize, Deserialize)]
struct WireRecord<'a> {
    path: &'a str,
    fingerprint: Fingerprint,
    flags: u8,
    settlement: Option<WireSettlement>,
}

// The body is, in postcard, what `struct Body { texts: Vec<&str>, tag_lists: Vec<Vec<u32>>,
// records: Vec<WireRecord> }` would be: written part by part by [`write_snapshot`] and read
// part by part by [`decode`].

#[derive(Debug, Serialize, Deserialize)]
struct Header<'a> {
    polisd: &'a str,
    #[serde(borrow)]
    fingerprint: Vec<&'a str>,
    zone_seconds: i32,
    records: u64,
    body_len: u64,
    sha256: [u8; 32],
}

/// A settlement in a journal frame, its texts inline.
#[derive(Serialize, Deserialize)]
struct JournalSettlement<'a> {
    owner: &'a str,
    #[serde(borrow)]
    tags: Vec<&'a str>,
    instant_us: Option<i64>,
    when_text: &'a str,
    last_completed: Option<&'a str>,
    recommended: Option<&'a str>,
    quality: u8,
    minutes: f64,
}

#[derive(Serialize, Deserialize)]
struct JournalRecord<'a> {
    path: &'a str,
    fingerprint: Fingerprint,
    flags: u8,
    #[serde(borrow)]
    settlement: Option<JournalSettlement<'a>>,
}

impl<'a> JournalRecord<'a> {
    /// `record` as the journal writes it (its settlement's texts borrowed).
    fn of(record: &RecordRef<'a>) -> JournalRecord<'a> {
        JournalRecord {
            path: record.path,
            fingerprint: record.fingerprint,
            flags: flags_of(record),
            settlement: record.settlement.map(|s| JournalSettlement {
                owner: s.owner,
                tags: s.tags.iter().map(String::as_str).collect(),
                instant_us: instant_us(&s),
                when_text: s.when_text,
                last_completed: s.last_completed,
                recommended: s.recommended,
                quality: s.quality,
                minutes: s.minutes,
            }),
        }
    }
}

/// One journal frame after the snapshot.
#[derive(Serialize, Deserialize)]
enum Op<'a> {
    #[serde(borrow)]
    Put(JournalRecord<'a>),
    Del(&'a str),
}

/// The names of the fingerprint's fields, in the order it serialises them: a snapshot made
/// with other fields (the fingerprint grew, or shrank) is not compared with today's.
pub fn fingerprint_fields() -> Vec<String> {
    match serde_json::to_value(Fingerprint::default()) {
        Ok(serde_json::Value::Object(map)) => map.keys().cloned().collect(),
        _ => Vec::new(),
    }
}

/// Whether a journal of `lines` frames after a snapshot of `files` files should give way to a
/// new snapshot: past a quarter of the snapshot, reading the journal would start to cost more
/// than the snapshot it follows.
pub fn journal_outgrown(lines: usize, files: usize) -> bool {
    lines > files / 4 + 256
}

/// The whole file for these records (in any order; a path given twice keeps its last): the
/// header, then the body in path order.
#[cfg(test)]
pub fn encode_snapshot<'a>(
    zone_seconds: i32,
    records: impl IntoIterator<Item = RecordRef<'a>>,
) -> std::io::Result<Vec<u8>> {
    let mut out = Vec::new();
    write_snapshot(&mut out, zone_seconds, records)?;
    Ok(out)
}

/// [`encode_snapshot`]'s bytes written to `out` without holding the encoded body in memory
/// ([`write_snapshot_in_order`]); the records' references are held to be sorted by path.
pub fn write_snapshot<'a>(
    out: &mut impl std::io::Write,
    zone_seconds: i32,
    records: impl IntoIterator<Item = RecordRef<'a>>,
) -> std::io::Result<()> {
    let refs = in_path_order(records);
    write_snapshot_in_order(out, zone_seconds, || refs.iter().copied())
}

/// Records in path order, a path given twice keeping its last record: as a snapshot holds them.
pub fn in_path_order<'a>(records: impl IntoIterator<Item = RecordRef<'a>>) -> Vec<RecordRef<'a>> {
    let mut refs: Vec<RecordRef<'a>> = records.into_iter().collect();
    refs.sort_by(|a, b| a.path.cmp(b.path));
    // A path given twice keeps its last record (the sort is stable).
    let mut kept = 0;
    for i in 0..refs.len() {
        if kept > 0 && refs[kept - 1].path == refs[i].path {
            refs[kept - 1] = refs[i];
        } else {
            refs[kept] = refs[i];
            kept += 1;
        }
    }
    refs.truncate(kept);
    refs
}

/// The snapshot of records given in path order, each path once, by `records` each time it is
/// called (three times: for the tables, to hash and measure the body for the header, and to
/// write it after the header). Nothing is held per record: a million records held as
/// references to sort were the peak of a daemon's first meeting.
pub fn write_snapshot_in_order<'a, I: Iterator<Item = RecordRef<'a>>>(
    out: &mut impl std::io::Write,
    zone_seconds: i32,
    records: impl Fn() -> I,
) -> std::io::Result<()> {
    let mut texts: Vec<&str> = Vec::new();
    let mut text_at: HashMap<&str, u32> = HashMap::new();
    let mut tag_lists: Vec<Vec<u32>> = Vec::new();
    let mut list_at: HashMap<&[String], u32> = HashMap::new();
    let mut count = 0u64;
    {
        let mut text = |s: &'a str| -> u32 {
            *text_at.entry(s).or_insert_with(|| {
                texts.push(s);
                texts.len() as u32 - 1
            })
        };
        // In the order the tables always had: owner, tags, dates, recommendation.
        for r in records() {
            count += 1;
            let Some(s) = r.settlement else { continue };
            text(s.owner);
            if !list_at.contains_key(s.tags) {
                let list = s.tags.iter().map(|t| text(t)).collect();
                tag_lists.push(list);
                list_at.insert(s.tags, tag_lists.len() as u32 - 1);
            }
            text(s.when_text);
            for d in [s.last_completed, s.recommended].into_iter().flatten() {
                text(d);
            }
        }
    }
    let text = |s: &str| text_at[s];
    let wire = |s: SettlementView<'_>| WireSettlement {
        owner: text(s.owner),
        tags: list_at[s.tags],
        instant_us: instant_us(&s),
        when_text: text(s.when_text),
        last_completed: s.last_completed.map(text),
        recommended: s.recommended.map(text),
        quality: s.quality,
        minutes: s.minutes,
    };
    // The body as a `Body`: the tables, then the records' count and each record.
    let body = |w: &mut dyn std::io::Write| -> Result<(), postcard::Error> {
        postcard::to_io(&texts, &mut *w)?;
        postcard::to_io(&tag_lists, &mut *w)?;
        postcard::to_io(&count, &mut *w)?;
        for r in records() {
            let wire = WireRecord {
                path: r.path,
                fingerprint: r.fingerprint,
                flags: flags_of(&r),
                settlement: r.settlement.map(wire),
            };
            postcard::to_io(&wire, &mut *w)?;
        }
        Ok(())
    };
    let invalid = std::io::Error::other;
    let mut digest = Digesting(sha2::Digest::new(), 0);
    body(&mut digest).map_err(invalid)?;
    let fields = fingerprint_fields();
    let header = postcard::to_allocvec(&Header {
        polisd: env!("CARGO_PKG_VERSION"),
        fingerprint: fields.iter().map(String::as_str).collect(),
        zone_seconds,
        records: count,
        body_len: digest.1,
        sha256: sha2::Digest::finalize(digest.0).into(),
    })
    .map_err(invalid)?;
    let mut out = std::io::BufWriter::with_capacity(1 << 16, out);
    out.write_all(MAGIC)?;
    out.write_all(&LEDGER_VERSION.to_le_bytes())?;
    out.write_all(&(header.len() as u32).to_le_bytes())?;
    out.write_all(&header)?;
    body(&mut out).map_err(invalid)?;
    out.flush()
}

/// Hashes and measures what is written to it.
struct Digesting(sha2::Sha256, u64);

impl std::io::Write for Digesting {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        sha2::Digest::update(&mut self.0, buf);
        self.1 += buf.len() as u64;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The journal frame recording `record`.
pub fn encode_put(record: RecordRef<'_>) -> Result<Vec<u8>, postcard::Error> {
    encode_op(&Op::Put(JournalRecord::of(&record)))
}

/// The journal frame recording that `path` is gone.
pub fn encode_del(path: &str) -> Result<Vec<u8>, postcard::Error> {
    encode_op(&Op::Del(path))
}

fn encode_op(op: &Op<'_>) -> Result<Vec<u8>, postcard::Error> {
    let payload = postcard::to_allocvec(op)?;
    let mut frame = Vec::with_capacity(FRAME_HEAD + payload.len());
    frame.extend((payload.len() as u32).to_le_bytes());
    frame.extend(&sha256(&payload)[..FRAME_SUM]);
    frame.extend(payload);
    Ok(frame)
}

/// The frames after a snapshot: each payload, `Err(n)` for the `n`th (1-based) when it is not
/// what its checksum says; a torn last frame (cut short by a crash mid-append) ends them.
fn frames(mut journal: &[u8]) -> impl Iterator<Item = Result<&[u8], usize>> {
    let mut n = 0;
    std::iter::from_fn(move || {
        if journal.len() < FRAME_HEAD {
            return None;
        }
        n += 1;
        let len = u32::from_le_bytes(journal[..4].try_into().ok()?) as usize;
        let payload = journal.get(FRAME_HEAD..FRAME_HEAD + len)?;
        let sum = &journal[4..FRAME_HEAD];
        journal = &journal[FRAME_HEAD + len..];
        if sha256(payload)[..FRAME_SUM] != *sum {
            return Some(Err(n));
        }
        Some(Ok(payload))
    })
}

/// Reads the file's bytes (see the module comment for what is trusted); also returns how many
/// journal frames follow the snapshot, so the caller knows when to compact.
pub fn decode(bytes: &[u8]) -> (Restored, usize) {
    if bytes.is_empty() {
        return (Restored::Nothing, 0);
    }
    let Some(rest) = bytes.strip_prefix(MAGIC) else {
        return (legacy::decode(bytes), 0);
    };
    match decode_trusted(rest) {
        Ok((zone_seconds, records, journal)) => (
            Restored::Records {
                zone_seconds,
                records,
            },
            journal,
        ),
        Err(reason) => (
            Restored::Untrusted {
                reason,
                recorded: paths_named(rest),
            },
            0,
        ),
    }
}

/// The header after the magic bytes, and what follows it.
fn header(rest: &[u8]) -> Result<(Header<'_>, &[u8]), String> {
    header_of(rest, LEDGER_VERSION)
}

/// [`header`] of a file of format `wanted` (the header's layout has not changed since 3).
fn header_of(rest: &[u8], wanted: u32) -> Result<(Header<'_>, &[u8]), String> {
    let cut = || "it is cut short (a partial or damaged file)".to_string();
    let version = u32::from_le_bytes(rest.get(..4).ok_or_else(cut)?.try_into().unwrap_or([0; 4]));
    if version != wanted {
        return Err(format!(
            "its format is v{version}, this polisd reads v{LEDGER_VERSION}"
        ));
    }
    let len = u32::from_le_bytes(rest.get(4..8).ok_or_else(cut)?.try_into().unwrap_or([0; 4]));
    let text = rest.get(8..8 + len as usize).ok_or_else(cut)?;
    let header: Header<'_> =
        postcard::from_bytes(text).map_err(|e| format!("its header does not parse ({e})"))?;
    Ok((header, &rest[8 + len as usize..]))
}

fn decode_trusted(rest: &[u8]) -> Result<(i32, Records, usize), String> {
    let (header, after) = header(rest)?;
    if header.polisd != env!("CARGO_PKG_VERSION") {
        return Err(format!(
            "polisd {} wrote it and this is {} (a settled file may read differently)",
            header.polisd,
            env!("CARGO_PKG_VERSION")
        ));
    }
    let fields = fingerprint_fields();
    if header.fingerprint != fields {
        return Err(format!(
            "its fingerprints hold {:?}, this polisd compares {fields:?}",
            header.fingerprint
        ));
    }
    let damaged = || "its snapshot does not match its checksum (a partial or damaged file)";
    let body_bytes = usize::try_from(header.body_len)
        .ok()
        .and_then(|n| after.get(..n))
        .ok_or_else(damaged)?;
    if sha256(body_bytes) != header.sha256 {
        return Err(damaged().to_string());
    }
    let unparsed = |e: postcard::Error| format!("its snapshot does not parse ({e})");
    // The tables, then the records straight into their compact form (the body is a `Body`).
    let (texts, rest) = postcard::take_from_bytes::<Vec<&str>>(body_bytes).map_err(unparsed)?;
    let (tag_lists, rest) = postcard::take_from_bytes::<Vec<Vec<u32>>>(rest).map_err(unparsed)?;
    let mut records = Records {
        texts: texts.iter().map(|t| t.to_string()).collect(),
        tag_lists: Vec::with_capacity(tag_lists.len()),
        paths: String::with_capacity(body_bytes.len() / 2),
        recs: Vec::new(),
    };
    let mut de = postcard::Deserializer::from_bytes(rest);
    serde::de::DeserializeSeed::deserialize(
        IntoRecords {
            recs: &mut records.recs,
            paths: &mut records.paths,
            most: rest.len() / 16,
        },
        &mut de,
    )
    .map_err(unparsed)?;
    if !de.finalize().map_err(unparsed)?.is_empty() || records.recs.len() as u64 != header.records {
        return Err(damaged().to_string());
    }
    for list in &tag_lists {
        let tags: Option<Vec<String>> = list
            .iter()
            .map(|&i| records.texts.get(i as usize).cloned())
            .collect();
        records
            .tag_lists
            .push(tags.ok_or("a snapshot tag list names no text")?);
    }
    if !records.indices_hold() {
        return Err("a snapshot record names no text".to_string());
    }
    // The journal's last word on each path it names: a new record, or `None` when it is gone.
    let journal = &after[body_bytes.len()..];
    let mut changes: HashMap<&str, Option<JournalRecord<'_>>> = HashMap::new();
    let mut lines = 0;
    for frame in frames(journal) {
        lines += 1;
        let op = frame
            .ok()
            .and_then(|payload| postcard::from_bytes::<Op<'_>>(payload).ok())
            .ok_or_else(|| format!("journal entry {lines} is not what its checksum says"))?;
        match op {
            Op::Put(r) => changes.insert(r.path, Some(r)),
            Op::Del(path) => changes.insert(path, None),
        };
    }
    if !changes.is_empty() {
        // The snapshot's records the journal replaces or removes, found by binary search (the
        // snapshot is in path order): a journal of new settlements, what commands leave,
        // replaces none, and the snapshot's records stay where they are instead of being
        // copied. A dropped record's path stays in the buffer, unreferenced.
        let paths = &records.paths;
        let mut dropped: Vec<usize> = changes
            .keys()
            .filter_map(|p| {
                records
                    .recs
                    .binary_search_by(|r| paths[r.path_at..r.path_at + r.path_len].cmp(p))
                    .ok()
            })
            .collect();
        if !dropped.is_empty() {
            dropped.sort_unstable();
            let mut at = 0;
            let mut next = dropped.into_iter().peekable();
            records.recs.retain(|_| {
                let keep = next.peek() != Some(&at);
                if !keep {
                    next.next();
                }
                at += 1;
                keep
            });
        }
        // The journal's texts are added to the tables as they come (a text already there is
        // only a few bytes again), rather than indexing every text the snapshot holds.
        let mut tables = Tables::default();
        let mut puts: Vec<JournalRecord<'_>> = changes.into_values().flatten().collect();
        puts.sort_by(|a, b| a.path.cmp(b.path));
        let from = records.recs.len();
        for put in puts {
            records.push_journal(&mut tables, put);
        }
        records.merge_from(from);
    }
    Ok((header.zone_seconds, records, lines))
}

/// Decodes the snapshot's records (a sequence of [`WireRecord`]) into a [`Records`]' own
/// vectors, with no vector of wire records between.
struct IntoRecords<'r> {
    recs: &'r mut Vec<Rec>,
    paths: &'r mut String,
    /// At most this many records can follow (a record takes 16 bytes or more): a length
    /// prefix that says more reserves no more.
    most: usize,
}

impl<'de> serde::de::DeserializeSeed<'de> for IntoRecords<'_> {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> serde::de::Visitor<'de> for IntoRecords<'_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("the snapshot's records")
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        self.recs
            .reserve(seq.size_hint().unwrap_or(0).min(self.most));
        while let Some(r) = seq.next_element::<WireRecord<'de>>()? {
            place(
                self.paths,
                self.recs,
                r.path,
                r.fingerprint,
                r.flags,
                r.settlement,
            );
        }
        Ok(())
    }
}

/// Best effort: the paths a damaged or foreign file still names (the snapshot's records if
/// its body still parses, then the journal's frames). A path recorded as not yet announced
/// (by a command) is left out: it is still news. A file of format 3 is read for its paths
/// too: an upgrade reads every settled file again, but announces none of them anew.
fn paths_named(rest: &[u8]) -> Vec<String> {
    let version = rest
        .get(..4)
        .map(|v| u32::from_le_bytes(v.try_into().unwrap_or([0; 4])));
    match version {
        Some(LEDGER_VERSION) => paths_in(rest, LEDGER_VERSION, record_path, frame_path),
        Some(3) => paths_in(rest, 3, v3::record_path, v3::frame_path),
        _ => Vec::new(),
    }
}

/// A record's path and flags, and the bytes after it.
type RecordPath = for<'a> fn(&'a [u8]) -> Option<(&'a str, u8, &'a [u8])>;
/// What a journal frame does to a path.
type FramePath = for<'a> fn(&'a [u8]) -> Option<Named<'a>>;

enum Named<'a> {
    Put(&'a str, u8),
    Del(&'a str),
}

fn record_path(bytes: &[u8]) -> Option<(&str, u8, &[u8])> {
    let (r, more) = postcard::take_from_bytes::<WireRecord<'_>>(bytes).ok()?;
    Some((r.path, r.flags, more))
}

fn frame_path(payload: &[u8]) -> Option<Named<'_>> {
    match postcard::from_bytes::<Op<'_>>(payload).ok()? {
        Op::Put(r) => Some(Named::Put(r.path, r.flags)),
        Op::Del(p) => Some(Named::Del(p)),
    }
}

fn paths_in(rest: &[u8], version: u32, record: RecordPath, frame: FramePath) -> Vec<String> {
    let mut recorded: BTreeSet<String> = BTreeSet::new();
    let Ok((header, after)) = header_of(rest, version) else {
        return Vec::new();
    };
    // Record by record, as far as they still parse (a cut snapshot keeps its first ones).
    let body_len = usize::try_from(header.body_len).unwrap_or(usize::MAX);
    let body_bytes = &after[..body_len.min(after.len())];
    let records = postcard::take_from_bytes::<Vec<&str>>(body_bytes)
        .and_then(|(_, rest)| postcard::take_from_bytes::<Vec<Vec<u32>>>(rest))
        .and_then(|(_, rest)| postcard::take_from_bytes::<u64>(rest));
    if let Ok((count, mut rest)) = records {
        for _ in 0..count {
            let Some((path, flags, more)) = record(rest) else {
                break;
            };
            if flags & UNANNOUNCED == 0 {
                recorded.insert(path.to_string());
            }
            rest = more;
        }
    }
    if body_len > after.len() {
        return recorded.into_iter().collect();
    }
    for payload in frames(&after[body_len..]).flatten() {
        match frame(payload) {
            Some(Named::Put(path, flags)) if flags & UNANNOUNCED != 0 => {
                recorded.remove(path);
            }
            Some(Named::Put(path, _)) => {
                recorded.insert(path.to_string());
            }
            Some(Named::Del(path)) => {
                recorded.remove(path);
            }
            None => {}
        }
    }
    recorded.into_iter().collect()
}

/// The records and frames of format 3 (a settlement without what reflection reads), read for
/// their paths only: postcard is not self-describing, so each layout needs its own types.
mod v3;

/// The JSON files of earlier versions (`settled.jsonl`): never trusted, read for the paths
/// they had counted.
mod legacy;

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::NaiveDate;

    #[test]
    fn a_records_replay_key_is_that_of_its_view() {
        let (min, max) = INSTANT_MICROS;
        for us in [
            None,
            Some(0),
            Some(1_780_000_000_123_456),
            Some(-1),
            Some(min),
            Some(max),
        ]
        .into_iter()
        .chain([Some(min - 1), Some(max + 1), Some(i64::MIN), Some(i64::MAX)])
        {
            let by_view = instant_of(us).map_or(i64::MIN, |t| t.and_utc().timestamp_micros());
            assert_eq!(replay_key_of(us), by_view, "{us:?}");
        }
    }

    /// Many names, present and absent, so that some first candidates of the table are other
    /// names' (they share its 7-bit tag): each is found as one lookup finds it.
    #[test]
    fn names_found_together_are_found_as_one_by_one() {
        let held: Vec<SettledRecord> = (0..6000).map(|n| record(n, n % 5 != 0)).collect();
        let records = Records::from_refs(held.iter().map(SettledRecord::as_ref));
        let index = NameIndex::new(&records, "contracts/settled/");
        let names: Vec<String> = (0..12000).map(|n| format!("c-{n}.md")).collect();
        let together = index.find_each(&records, names.iter().map(String::as_str));
        let one_by_one: Vec<Option<usize>> =
            names.iter().map(|n| index.find(&records, n)).collect();
        assert_eq!(together, one_by_one);
        assert_eq!(together.iter().flatten().count(), 6000);
        for (name, found) in names.iter().zip(&together) {
            if let Some(i) = found {
                assert_eq!(records.path(*i), format!("contracts/settled/{name}"));
            }
        }
    }

    // Field by field: the fingerprint grows fields (ctime, mode, inode) that these tests
    // leave at their defaults.
    #[allow(clippy::field_reassign_with_default)]
    fn record(n: u64, settles: bool) -> SettledRecord {
        let instant = NaiveDate::from_ymd_opt(2026, 3, 1)
            .unwrap()
            .and_hms_micro_opt(10, 0, 0, 123_456)
            .unwrap();
        let tags = ["py".to_string(), format!("t{}", n % 2)];
        SettledRecord {
            path: format!("contracts/settled/c-{n}.md"),
            fingerprint: {
                let mut f = Fingerprint::default();
                f.size = n;
                f.mtime_ns = n as i64 * 7;
                f.ino = u64::MAX - n;
                f
            },
            reread: n.is_multiple_of(3),
            settlement: settles.then(|| {
                StoredSettlement::of(SettlementView {
                    owner: if n == 2 { "bob-agent" } else { "alice-agent" },
                    tags: &tags,
                    instant: (n != 5).then_some(instant),
                    when_text: if n == 5 { "someday" } else { "" },
                    last_completed: Some("2026-03-01"),
                    quality: 4,
                    quality_defaulted: n == 1,
                    minutes: 1.0 / 3.0,
                    recommended: (n == 2).then_some("alice-agent"),
                    guarded: n == 3,
                    renamed: n == 6,
                })
            }),
            unannounced: n == 4,
        }
    }

    fn snapshot(zone: i32, records: &[SettledRecord]) -> Vec<u8> {
        encode_snapshot(zone, records.iter().map(SettledRecord::as_ref)).unwrap()
    }

    fn owned(restored: Restored) -> Vec<SettledRecord> {
        match restored {
            Restored::Records { records, .. } => records.iter().map(|r| r.to_owned()).collect(),
            other => panic!("not trusted: {other:?}"),
        }
    }

    #[test]
    fn snapshot_and_journal_round_trip_exactly_in_path_order() {
        // Out of order and with a path twice: the snapshot keeps the last, in path order.
        let mut bytes = snapshot(
            3600,
            &[
                record(3, true),
                record(1, true),
                record(2, false),
                record(5, true),
            ],
        );
        bytes.extend(encode_put(record(4, true).as_ref()).unwrap());
        bytes.extend(encode_del("contracts/settled/c-2.md").unwrap());
        let edited = SettledRecord {
            reread: false,
            ..record(3, true)
        };
        bytes.extend(encode_put(edited.as_ref()).unwrap());
        let (restored, journal) = decode(&bytes);
        assert_eq!(journal, 3);
        let Restored::Records { zone_seconds, .. } = &restored else {
            panic!("{restored:?}")
        };
        assert_eq!(*zone_seconds, 3600);
        let got = owned(restored);
        assert_eq!(
            got,
            vec![record(1, true), edited, record(4, true), record(5, true)]
        );
        let s = got[0].settlement().unwrap();
        assert_eq!(s.minutes.to_bits(), (1.0f64 / 3.0).to_bits());
        assert_eq!(
            s.instant.unwrap().and_utc().timestamp_subsec_micros(),
            123_456
        );
        assert!(s.quality_defaulted);
        assert_eq!(s.path, "contracts/settled/c-1.md");
        assert_eq!(got[3].view().unwrap().when_text, "someday");
        // A snapshot of the restored records is the same file again.
        let Restored::Records { records, .. } = decode(&bytes).0 else {
            unreachable!()
        };
        let again = encode_snapshot(3600, records.iter()).unwrap();
        assert_eq!(decode(&again).0, decode(&bytes).0);
    }

    proptest::proptest! {
        /// The journal's new records land where a sort would put them, whichever snapshot
        /// records they fall before, between or after (the merge is in place, from the back).
        #[test]
        fn journal_records_merge_into_the_snapshot_in_path_order(
            snapshot_ns in proptest::collection::btree_set(0u64..60, 0..12),
            journal_ns in proptest::collection::btree_set(0u64..60, 1..8),
        ) {
            let kept: Vec<u64> = snapshot_ns.difference(&journal_ns).copied().collect();
            let mut bytes = snapshot(0, &kept.iter().map(|&n| record(n, true)).collect::<Vec<_>>());
            for &n in journal_ns.iter().rev() {
                bytes.extend(encode_put(record(n, n % 2 == 0).as_ref()).unwrap());
            }
            let mut want: Vec<SettledRecord> = kept
                .iter()
                .map(|&n| record(n, true))
                .chain(journal_ns.iter().map(|&n| record(n, n % 2 == 0)))
                .collect();
            want.sort_by(|a, b| a.path.cmp(&b.path));
            proptest::prop_assert_eq!(owned(decode(&bytes).0), want);
        }
    }

    #[test]
    fn a_torn_last_frame_is_dropped_and_the_rest_trusted() {
        let mut bytes = snapshot(0, &[record(1, true)]);
        let put = encode_put(record(2, true).as_ref()).unwrap();
        for cut in [1, FRAME_HEAD, put.len() - 1] {
            let mut torn = bytes.clone();
            torn.extend(&put[..cut]);
            assert_eq!(
                owned(decode(&torn).0),
                vec![record(1, true)],
                "cut at {cut}"
            );
        }
        bytes.extend(&put);
        assert_eq!(owned(decode(&bytes).0).len(), 2);
    }

    /// `bytes` with the first `from` after `at` replaced by `to` (same length).
    fn patched(bytes: &[u8], at: usize, from: &[u8], to: &[u8]) -> Vec<u8> {
        let i = at
            + bytes[at..]
                .windows(from.len())
                .position(|w| w == from)
                .expect("found");
        let mut out = bytes.to_vec();
        out[i..i + to.len()].copy_from_slice(to);
        out
    }

    #[test]
    fn damage_or_another_version_makes_it_untrusted_with_its_paths() {
        let good = snapshot(0, &[record(1, true), record(2, true)]);
        let version = env!("CARGO_PKG_VERSION").as_bytes();
        let mut other_version = version.to_vec();
        other_version[0] = if version[0] == b'9' { b'8' } else { b'9' };
        let cases: Vec<(&str, Vec<u8>)> = vec![
            // A changed owner inside the snapshot.
            ("checksum", patched(&good, 0, b"alice", b"alicf")),
            // The snapshot cut short.
            ("checksum", good[..good.len() - 3].to_vec()),
            ("this polisd reads v4", {
                let mut b = good.clone();
                b[MAGIC.len()..MAGIC.len() + 4].copy_from_slice(&2u32.to_le_bytes());
                b
            }),
            ("wrote it", patched(&good, 0, version, &other_version)),
            (
                "fingerprints hold",
                patched(&good, 0, b"mtime_ns", b"mtime_us"),
            ),
            ("journal entry 1", {
                let mut b = good.clone();
                let frame = encode_put(record(3, true).as_ref()).unwrap();
                b.extend(patched(&frame, FRAME_HEAD, b"alice", b"alicf"));
                b.extend(encode_put(record(4, true).as_ref()).unwrap());
                b
            }),
        ];
        for (why, bytes) in cases {
            match decode(&bytes).0 {
                Restored::Untrusted { reason, recorded } => {
                    assert!(reason.contains(why), "{why}: {reason}");
                    if why != "this polisd reads v4" {
                        assert!(
                            recorded.contains(&"contracts/settled/c-1.md".to_string()),
                            "{why}: {recorded:?}"
                        );
                    }
                }
                other => panic!("{why}: trusted {other:?}"),
            }
        }
    }

    #[test]
    fn the_json_files_of_earlier_versions_name_their_paths_only() {
        let v1 = b"{\"put\":[\"contracts/settled/a.md\",{\"size\":1,\"mtime_ns\":2}]}\n{\"put\":[\"contracts/settled/b.md\",{\"size\":1,\"mtime_ns\":2}]}\n{\"del\":\"contracts/settled/a.md\"}\n";
        let v2 = concat!(
            "{\"format\":\"polisd-settled-ledger\",\"version\":2,\"records\":2}\n",
            "{\"p\":\"contracts/settled/a.md\",\"f\":{\"size\":1},\"s\":{\"o\":\"x\"}}\n",
            "{\"p\":\"contracts/settled/n.md\",\"f\":{\"size\":1},\"n\":true}\n",
            "3f1c0a9d2b7e4c11 {\"put\":{\"p\":\"contracts/settled/c.md\",\"f\":{}}}\n",
            "9a0b1c2d3e4f5a6b {\"del\":\"contracts/settled/a.md\"}\n",
        );
        for (bytes, want) in [
            (&v1[..], vec!["contracts/settled/b.md"]),
            (v2.as_bytes(), vec!["contracts/settled/c.md"]),
        ] {
            match decode(bytes).0 {
                Restored::Untrusted { recorded, reason } => {
                    assert!(reason.contains("older polisd"), "{reason}");
                    assert_eq!(recorded, want)
                }
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(decode(b"").0, Restored::Nothing);
    }

    #[test]
    fn a_snapshot_is_a_fraction_of_the_json_one() {
        let records: Vec<SettledRecord> = (0..1000).map(|n| record(n, true)).collect();
        let bytes = snapshot(0, &records);
        // The JSON snapshot took about 260 bytes a record.
        assert!(bytes.len() < 1000 * 90, "{} bytes", bytes.len());
    }
}
