//! The durable ledger of settled contracts: `settled.jsonl` in the polis's state folder, so a
//! restart restores the ledger instead of reading every settled file again.
//!
//! The file is a **snapshot** followed by a **journal**:
//!
//! ```text
//! {"format":"polisd-settled-ledger","version":2,"polisd":"0.1.0","fingerprint":["size","mtime_ns"],
//!  "zone_seconds":3600,"records":2,"sha256":"<hex of the two record lines>"}
//! {"p":"contracts/settled/a.md","f":{"size":412,"mtime_ns":...},"s":{"o":"alice-agent",...}}
//! {"p":"contracts/settled/b.md","f":{...},"r":true}
//! 3f1c0a9d2b7e4c11 {"put":{"p":"contracts/settled/c.md",...}}
//! 9a0b1c2d3e4f5a6b {"del":"contracts/settled/a.md"}
//! ```
//!
//! The snapshot is written whole and atomically ([`encode_snapshot`]); each change after it is
//! one journal line carrying the first 16 hex of its own SHA-256. Nothing here is trusted as
//! stats: a restored record is only a claim "this file, with this fingerprint, settles this",
//! and the engine stats every file and re-reads those whose fingerprint differs before the
//! ledger is used. What makes the whole file untrusted (then every settled file is read again,
//! with one log line): another format version or polisd version (a newer parser may read a
//! file differently), another set of fingerprint fields (the fingerprint grew: old ones cannot
//! be compared), a snapshot whose checksum or record count does not match, a journal line that
//! is not what its checksum says (except a torn last line, which a crash mid-append leaves:
//! that change is simply read again). The zone the instants were computed in is checked by the
//! engine, which knows the polis's current one.
//!
//! Settlement times are kept as integers (microseconds) and minutes as the bits of their
//! double, so a restored ledger replays to exactly the bytes a fresh read gives.

use super::Fingerprint;
use crate::protocol::stats::{Settlement, SettlementView};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::io::Write as _;

/// Bumped whenever a record's meaning changes; any other version is read as untrusted.
pub const LEDGER_VERSION: u32 = 2;
const FORMAT: &str = "polisd-settled-ledger";

/// What the journal of an earlier run gives the engine.
#[derive(Debug, Clone, PartialEq)]
pub enum Restored {
    /// No journal: nothing is recorded for this polis.
    Nothing,
    /// Records to check against each file's fingerprint. `zone_seconds` is the UTC offset the
    /// instants were computed with.
    Records {
        zone_seconds: i32,
        records: Vec<SettledRecord>,
    },
    /// Not usable, for `reason` (one line for the log). `recorded` are the paths it still
    /// names, as far as they could be read: polisd had counted them, so they are read again
    /// but not announced as new settlements.
    Untrusted {
        reason: String,
        recorded: Vec<String>,
    },
}

/// One settled file as the snapshot or a journal line records it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SettledRecord {
    #[serde(rename = "p")]
    pub path: String,
    #[serde(rename = "f")]
    pub fingerprint: Fingerprint,
    /// The file had findings, which are not stored: read it again on restart.
    #[serde(rename = "r", default, skip_serializing_if = "is_false")]
    pub reread: bool,
    #[serde(rename = "s", default, skip_serializing_if = "Option::is_none")]
    pub settlement: Option<StoredSettlement>,
    /// Recorded by a one-shot command (no daemon running) for a file no daemon has counted
    /// yet: the daemon reads it again on restart and announces it as a new settlement, as it
    /// would have without the command's record.
    #[serde(rename = "n", default, skip_serializing_if = "is_false")]
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

    /// The settlement, borrowed (for [`crate::protocol::stats::Ledger::restore`]).
    pub fn view(&self) -> Option<SettlementView<'_>> {
        self.settlement.as_ref().map(StoredSettlement::view)
    }
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// A [`Settlement`] without its path, in short keys (100k of them make the snapshot).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredSettlement {
    #[serde(rename = "o")]
    owner: String,
    #[serde(rename = "t")]
    tags: Vec<String>,
    /// Microseconds since 1970 of the polis-local wall time.
    #[serde(rename = "i", default, skip_serializing_if = "Option::is_none")]
    instant_us: Option<i64>,
    #[serde(rename = "w", default, skip_serializing_if = "String::is_empty")]
    when_text: String,
    #[serde(rename = "l", default, skip_serializing_if = "Option::is_none")]
    last_completed: Option<String>,
    #[serde(rename = "q")]
    quality: u8,
    #[serde(rename = "d", default, skip_serializing_if = "is_false")]
    quality_defaulted: bool,
    /// `f64::to_bits` of the minutes: JSON's decimal form would not round-trip every double.
    #[serde(rename = "m")]
    minutes_bits: u64,
}

impl StoredSettlement {
    fn of(v: SettlementView<'_>) -> StoredSettlement {
        StoredSettlement {
            owner: v.owner.to_string(),
            tags: v.tags.to_vec(),
            instant_us: v.instant.map(|i| i.and_utc().timestamp_micros()),
            when_text: v.when_text.to_string(),
            last_completed: v.last_completed.map(str::to_string),
            quality: v.quality,
            quality_defaulted: v.quality_defaulted,
            minutes_bits: v.minutes.to_bits(),
        }
    }

    fn view(&self) -> SettlementView<'_> {
        SettlementView {
            owner: &self.owner,
            tags: &self.tags,
            instant: self
                .instant_us
                .and_then(chrono::DateTime::from_timestamp_micros)
                .map(|d| d.naive_utc()),
            when_text: &self.when_text,
            last_completed: self.last_completed.as_deref(),
            quality: self.quality,
            quality_defaulted: self.quality_defaulted,
            minutes: f64::from_bits(self.minutes_bits),
        }
    }
}

#[derive(Debug, Serialize, Deserialize)]
struct Header {
    format: String,
    version: u32,
    polisd: String,
    fingerprint: Vec<String>,
    zone_seconds: i32,
    records: usize,
    sha256: String,
}

/// One journal line after the snapshot.
#[derive(Debug, Serialize, Deserialize)]
enum Op {
    #[serde(rename = "put")]
    Put(SettledRecord),
    #[serde(rename = "del")]
    Del(String),
}

/// A line of the format before the snapshot existed (fingerprints only).
#[derive(Debug, Deserialize)]
enum OldOp {
    #[serde(rename = "put")]
    Put(String, serde::de::IgnoredAny),
    #[serde(rename = "del")]
    Del(String),
}

/// The names of the fingerprint's fields, in the order it serialises them: a snapshot made
/// with other fields (the fingerprint grew, or shrank) is not compared with today's.
pub fn fingerprint_fields() -> Vec<String> {
    match serde_json::to_value(Fingerprint::default()) {
        Ok(serde_json::Value::Object(map)) => map.keys().cloned().collect(),
        _ => Vec::new(),
    }
}

/// The whole file for these records: the header and one line per record.
pub fn encode_snapshot(
    zone_seconds: i32,
    records: impl IntoIterator<Item = SettledRecord>,
) -> Result<Vec<u8>, serde_json::Error> {
    let mut body = Vec::new();
    let mut count = 0usize;
    for r in records {
        serde_json::to_writer(&mut body, &r)?;
        body.push(b'\n');
        count += 1;
    }
    let header = Header {
        format: FORMAT.to_string(),
        version: LEDGER_VERSION,
        polisd: env!("CARGO_PKG_VERSION").to_string(),
        fingerprint: fingerprint_fields(),
        zone_seconds,
        records: count,
        sha256: super::hex_sha256(&body),
    };
    let mut out = serde_json::to_vec(&header)?;
    out.push(b'\n');
    out.extend(body);
    Ok(out)
}

/// [`encode_snapshot`]'s bytes written to `out` without holding them in memory (100k records
/// are ~25 MB): the records are encoded twice, once to hash and count them for the header,
/// then after the header to `out`. `records` must give the same records each time it is called.
pub fn write_snapshot<I: Iterator<Item = SettledRecord>>(
    out: &mut impl std::io::Write,
    zone_seconds: i32,
    records: impl Fn() -> I,
) -> std::io::Result<()> {
    /// Hashes and counts what is written to it.
    struct Digesting(sha2::Sha256);
    impl std::io::Write for Digesting {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            sha2::Digest::update(&mut self.0, buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut digest = Digesting(<sha2::Sha256 as sha2::Digest>::new());
    let mut count = 0usize;
    for r in records() {
        serde_json::to_writer(&mut digest, &r)?;
        std::io::Write::write_all(&mut digest, b"\n")?;
        count += 1;
    }
    let sha256: String = sha2::Digest::finalize(digest.0)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let header = Header {
        format: FORMAT.to_string(),
        version: LEDGER_VERSION,
        polisd: env!("CARGO_PKG_VERSION").to_string(),
        fingerprint: fingerprint_fields(),
        zone_seconds,
        records: count,
        sha256,
    };
    let mut out = std::io::BufWriter::with_capacity(1 << 16, out);
    serde_json::to_writer(&mut out, &header)?;
    out.write_all(b"\n")?;
    let mut written = 0usize;
    for r in records() {
        serde_json::to_writer(&mut out, &r)?;
        out.write_all(b"\n")?;
        written += 1;
    }
    if written != count {
        return Err(std::io::Error::other(
            "the ledger changed while its snapshot was written",
        ));
    }
    out.flush()
}

/// The journal line recording `record`.
pub fn encode_put(record: SettledRecord) -> Result<Vec<u8>, serde_json::Error> {
    encode_op(&Op::Put(record))
}

/// The journal line recording that `path` is gone.
pub fn encode_del(path: &str) -> Result<Vec<u8>, serde_json::Error> {
    encode_op(&Op::Del(path.to_string()))
}

fn encode_op(op: &Op) -> Result<Vec<u8>, serde_json::Error> {
    let json = serde_json::to_vec(op)?;
    let mut line = line_sum(&json).into_bytes();
    line.push(b' ');
    line.extend(json);
    line.push(b'\n');
    Ok(line)
}

fn line_sum(json: &[u8]) -> String {
    super::hex_sha256(json)[..16].to_string()
}

/// Reads the file's bytes (see the module comment for what is trusted); also returns how many
/// journal lines follow the snapshot, so the caller knows when to compact.
pub fn decode(bytes: &[u8]) -> (Restored, usize) {
    let mut lines = bytes.split_inclusive(|b| *b == b'\n');
    let Some(first) = lines.next() else {
        return (Restored::Nothing, 0);
    };
    let header: Header = match serde_json::from_slice(trim_newline(first)) {
        Ok(h) => h,
        Err(_) => return (old_format(bytes), 0),
    };
    let untrusted = |reason: String, rest: &[u8]| Restored::Untrusted {
        reason,
        recorded: paths_named(rest),
    };
    let rest = &bytes[first.len()..];
    if header.format != FORMAT || header.version != LEDGER_VERSION {
        return (
            untrusted(
                format!(
                    "its format is {} v{}, this polisd reads v{LEDGER_VERSION}",
                    header.format, header.version
                ),
                rest,
            ),
            0,
        );
    }
    if header.polisd != env!("CARGO_PKG_VERSION") {
        return (
            untrusted(
                format!(
                    "polisd {} wrote it and this is {} (a settled file may read differently)",
                    header.polisd,
                    env!("CARGO_PKG_VERSION")
                ),
                rest,
            ),
            0,
        );
    }
    if header.fingerprint != fingerprint_fields() {
        return (
            untrusted(
                format!(
                    "its fingerprints hold {:?}, this polisd compares {:?}",
                    header.fingerprint,
                    fingerprint_fields()
                ),
                rest,
            ),
            0,
        );
    }
    // The snapshot's lines, checked as a whole against the header.
    let mut body_len = 0usize;
    let mut body_lines = 0usize;
    for line in rest.split_inclusive(|b| *b == b'\n') {
        if body_lines == header.records {
            break;
        }
        if !line.ends_with(b"\n") {
            break;
        }
        body_len += line.len();
        body_lines += 1;
    }
    let body = &rest[..body_len];
    if body_lines != header.records || super::hex_sha256(body) != header.sha256 {
        return (
            untrusted(
                "its snapshot does not match its checksum (a partial or damaged file)".to_string(),
                rest,
            ),
            0,
        );
    }
    // Parsed on every core: 100k records are most of a restart's decoding.
    let lines: Vec<&[u8]> = body.split_inclusive(|b| *b == b'\n').collect();
    let parsed = crate::fs::snapshot::par_map(&lines, |line| {
        serde_json::from_slice::<SettledRecord>(trim_newline(line))
    });
    drop(lines);
    let mut records: Vec<SettledRecord> = Vec::with_capacity(body_lines);
    for r in parsed {
        match r {
            Ok(r) => records.push(r),
            Err(e) => {
                return (
                    untrusted(format!("a snapshot record does not parse ({e})"), rest),
                    0,
                )
            }
        }
    }
    // The journal's last word on each path it names: a new record, or `None` when it is gone.
    let journal = &rest[body_len..];
    let mut changes: HashMap<String, Option<SettledRecord>> = HashMap::new();
    let mut journal_lines = 0usize;
    for line in journal.split_inclusive(|b| *b == b'\n') {
        journal_lines += 1;
        let torn = !line.ends_with(b"\n");
        match decode_op(trim_newline(line)) {
            Some(Op::Put(r)) => {
                changes.insert(r.path.clone(), Some(r));
            }
            Some(Op::Del(path)) => {
                changes.insert(path, None);
            }
            // A crash mid-append leaves a torn last line: that one change is read again.
            None if torn => {}
            None => {
                return (
                    untrusted(
                        format!("journal line {journal_lines} is not what its checksum says"),
                        rest,
                    ),
                    journal_lines,
                )
            }
        }
    }
    if !changes.is_empty() {
        records.retain(|r| !changes.contains_key(&r.path));
        let mut added: Vec<SettledRecord> = changes.into_values().flatten().collect();
        added.sort_by(|a, b| a.path.cmp(&b.path));
        records.extend(added);
    }
    (
        Restored::Records {
            zone_seconds: header.zone_seconds,
            records,
        },
        journal_lines,
    )
}

fn decode_op(line: &[u8]) -> Option<Op> {
    let (sum, json) = (line.get(..16)?, line.get(17..)?);
    if line.get(16) != Some(&b' ') || line_sum(json).as_bytes() != sum {
        return None;
    }
    serde_json::from_slice(json).ok()
}

fn trim_newline(line: &[u8]) -> &[u8] {
    line.strip_suffix(b"\n").unwrap_or(line)
}

/// The journal of polisd before the snapshot (one `{"put":[path, fingerprint]}` per change):
/// its paths are known, its settlements are not.
fn old_format(bytes: &[u8]) -> Restored {
    let mut recorded: std::collections::BTreeSet<String> = Default::default();
    for line in bytes.split(|b| *b == b'\n') {
        match serde_json::from_slice::<OldOp>(line) {
            Ok(OldOp::Put(path, _)) => {
                recorded.insert(path);
            }
            Ok(OldOp::Del(path)) => {
                recorded.remove(&path);
            }
            Err(_) => {}
        }
    }
    Restored::Untrusted {
        reason: "it was written by an older polisd, without the settlements".to_string(),
        recorded: recorded.into_iter().collect(),
    }
}

/// Best effort: the paths a damaged or foreign file still names (records, then journal lines).
fn paths_named(rest: &[u8]) -> Vec<String> {
    #[derive(Deserialize)]
    struct PathOnly {
        p: String,
        #[serde(default)]
        n: bool,
    }
    // A path recorded as not yet announced (by a command) is left out: it is still news.
    let mut recorded: std::collections::BTreeSet<String> = Default::default();
    for line in rest.split(|b| *b == b'\n') {
        if let Ok(r) = serde_json::from_slice::<PathOnly>(line) {
            if r.n {
                recorded.remove(&r.p);
            } else {
                recorded.insert(r.p);
            }
        } else if let Some(json) = line.get(17..) {
            match serde_json::from_slice::<Op>(json) {
                Ok(Op::Put(r)) if r.unannounced => {
                    recorded.remove(&r.path);
                }
                Ok(Op::Put(r)) => {
                    recorded.insert(r.path);
                }
                Ok(Op::Del(p)) => {
                    recorded.remove(&p);
                }
                Err(_) => {}
            }
        }
    }
    recorded.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::NaiveDate;

    // Field by field: the fingerprint grows fields (ctime, mode, inode) that these tests
    // leave at their defaults.
    #[allow(clippy::field_reassign_with_default)]
    fn record(n: u64, settles: bool) -> SettledRecord {
        let instant = NaiveDate::from_ymd_opt(2026, 3, 1)
            .unwrap()
            .and_hms_micro_opt(10, 0, 0, 123_456)
            .unwrap();
        SettledRecord {
            path: format!("contracts/settled/c-{n}.md"),
            fingerprint: {
                let mut f = Fingerprint::default();
                f.size = n;
                f.mtime_ns = n as i64 * 7;
                f
            },
            reread: n.is_multiple_of(3),
            settlement: settles.then(|| {
                StoredSettlement::of(SettlementView {
                    owner: "alice-agent",
                    tags: &["py".to_string(), "docs".to_string()],
                    instant: Some(instant),
                    when_text: "",
                    last_completed: Some("2026-03-01"),
                    quality: 4,
                    quality_defaulted: false,
                    minutes: 1.0 / 3.0,
                })
            }),
            unannounced: n == 4,
        }
    }

    fn records(restored: Restored) -> Vec<SettledRecord> {
        match restored {
            Restored::Records { records, .. } => records,
            other => panic!("not trusted: {other:?}"),
        }
    }

    #[test]
    fn streamed_snapshot_is_byte_identical_to_the_encoded_one() {
        let all = || (1..=4).map(|n| record(n, n % 2 == 0));
        let mut streamed = Vec::new();
        write_snapshot(&mut streamed, 3600, all).unwrap();
        assert_eq!(streamed, encode_snapshot(3600, all()).unwrap());
        let mut empty = Vec::new();
        write_snapshot(&mut empty, 0, std::iter::empty).unwrap();
        assert_eq!(empty, encode_snapshot(0, []).unwrap());
    }

    #[test]
    fn snapshot_and_journal_round_trip_exactly() {
        let mut bytes =
            encode_snapshot(3600, [record(1, true), record(2, false), record(3, true)]).unwrap();
        bytes.extend(encode_put(record(4, true)).unwrap());
        bytes.extend(encode_del("contracts/settled/c-2.md").unwrap());
        bytes.extend(
            encode_put(SettledRecord {
                reread: false,
                ..record(3, true)
            })
            .unwrap(),
        );
        let (restored, journal) = decode(&bytes);
        assert_eq!(journal, 3);
        let Restored::Records { zone_seconds, .. } = &restored else {
            panic!("{restored:?}")
        };
        assert_eq!(*zone_seconds, 3600);
        let got = records(restored);
        assert_eq!(
            got,
            vec![
                record(1, true),
                SettledRecord {
                    reread: false,
                    ..record(3, true)
                },
                record(4, true)
            ]
        );
        let s = got[0].settlement().unwrap();
        assert_eq!(s.minutes.to_bits(), (1.0f64 / 3.0).to_bits());
        assert_eq!(
            s.instant.unwrap().and_utc().timestamp_subsec_micros(),
            123_456
        );
        assert_eq!(s.path, "contracts/settled/c-1.md");
    }

    #[test]
    fn a_torn_last_line_is_dropped_and_the_rest_trusted() {
        let mut bytes = encode_snapshot(0, [record(1, true)]).unwrap();
        let put = encode_put(record(2, true)).unwrap();
        bytes.extend(&put[..put.len() / 2]);
        assert_eq!(records(decode(&bytes).0), vec![record(1, true)]);
    }

    #[test]
    fn damage_or_another_version_makes_it_untrusted_with_its_paths() {
        let good = encode_snapshot(0, [record(1, true), record(2, true)]).unwrap();
        let cases: Vec<(&str, Vec<u8>)> = vec![
            // A flipped quality inside the snapshot.
            (
                "checksum",
                String::from_utf8(good.clone())
                    .unwrap()
                    .replacen("\"q\":4", "\"q\":5", 1)
                    .into_bytes(),
            ),
            // The snapshot cut short.
            ("checksum", good[..good.len() - 10].to_vec()),
            (
                "this polisd reads v2",
                String::from_utf8(good.clone())
                    .unwrap()
                    .replacen("\"version\":2", "\"version\":3", 1)
                    .into_bytes(),
            ),
            (
                "wrote it",
                String::from_utf8(good.clone())
                    .unwrap()
                    .replacen(env!("CARGO_PKG_VERSION"), "0.0.1", 1)
                    .into_bytes(),
            ),
            (
                "fingerprints hold",
                String::from_utf8(good.clone())
                    .unwrap()
                    .replacen("\"fingerprint\":[", "\"fingerprint\":[\"inode\",", 1)
                    .into_bytes(),
            ),
            ("journal line 1", {
                let mut b = good.clone();
                let line = encode_put(record(3, true)).unwrap();
                let line = String::from_utf8(line)
                    .unwrap()
                    .replacen("\"q\":4", "\"q\":1", 1);
                b.extend(line.as_bytes());
                b.extend(encode_put(record(4, true)).unwrap());
                b
            }),
        ];
        for (why, bytes) in cases {
            match decode(&bytes).0 {
                Restored::Untrusted { reason, recorded } => {
                    assert!(reason.contains(why), "{why}: {reason}");
                    assert!(
                        recorded.contains(&"contracts/settled/c-1.md".to_string()),
                        "{why}: {recorded:?}"
                    );
                }
                other => panic!("{why}: trusted {other:?}"),
            }
        }
    }

    #[test]
    fn the_older_journal_names_its_paths_only() {
        let old = b"{\"put\":[\"contracts/settled/a.md\",{\"size\":1,\"mtime_ns\":2}]}\n{\"put\":[\"contracts/settled/b.md\",{\"size\":1,\"mtime_ns\":2}]}\n{\"del\":\"contracts/settled/a.md\"}\n";
        match decode(old).0 {
            Restored::Untrusted { recorded, .. } => {
                assert_eq!(recorded, vec!["contracts/settled/b.md".to_string()])
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(decode(b"").0, Restored::Nothing);
    }
}
