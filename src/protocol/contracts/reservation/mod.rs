//! Advisory file reservations (`_polis/reservations.yml`): which citizen holds which project
//! paths, until when. Pure: text in, entries, conflicts and new text out.
//!
//! The file is the reference's (`polis reserve`): a comment line, then
//! `reservations:` → a list of `{citizen, paths, reserved_at, expires_at, note}` maps, written
//! as PyYAML's `safe_dump(sort_keys=False, allow_unicode=True)` writes it, so the reference's
//! CLI and MCP server keep reading it. Where polisd deliberately differs from the reference:
//!
//! - a path is normalised without losing bytes: `./src/` is `src`, but `.github/x` stays
//!   `.github/x` (the reference's `lstrip("./")` turns it into `github/x`);
//! - `..` that would leave the project is refused instead of stored, and so is a path longer
//!   than [`MAX_PATH_BYTES`] or with a name longer than [`MAX_NAME_BYTES`];
//! - a path may be a glob (`src/**/*.rs`, `docs/*.md`, `{a,b}.toml`), and two reservations
//!   conflict when any path could fall under both, in either direction (the reference compares
//!   globs as plain names);
//! - timestamps are written with their offset, and a timestamp written without one (by hand,
//!   or as an unquoted YAML datetime, which the reference cannot read) is taken in the polis
//!   timezone instead of being ignored or crashing the comparison;
//! - an entry may name the contract it serves (`contract:`), which the daemon uses to release
//!   it when that contract settles or is abandoned; the reference keeps unknown keys;
//! - paths that differ only in letter case or Unicode normalisation overlap, since they name
//!   one file on macOS and Windows.
//!
//! Nothing here decides *when* to write; `operations::reservation` does that under a lock.

use crate::protocol::clock::{PolisTime, PolisZone};
use crate::yaml::{self, DumpOptions, Mapping, Value};
use chrono::{DateTime, Duration, FixedOffset, NaiveDate, NaiveDateTime, TimeZone as _};

mod pattern;
pub use pattern::{
    fold, held_as, is_glob, normalize, overlaps, HeldAs, PathError, Pattern, MAX_ALTERNATIVES,
    MAX_NAME_BYTES, MAX_PATH_BYTES,
};

/// The file, relative to `_polis/`.
pub const FILE: &str = "reservations.yml";

/// The first line of the file, as the reference writes it.
pub const HEADER: &str =
    "# Advisory file reservations (collision prevention). Managed by `polis reserve/release`.\n";

// ---------------------------------------------------------------------------------------------
// Time.

/// The stamp polisd writes: ISO 8601 with the polis timezone's offset, to the second
/// (`2026-03-02T14:05:00+00:00`). Python's `datetime.fromisoformat` reads it aware.
pub fn stamp(t: DateTime<FixedOffset>) -> String {
    t.format("%Y-%m-%dT%H:%M:%S%:z").to_string()
}

/// "Now" as an aware instant.
pub fn aware_now(now: &PolisTime) -> DateTime<FixedOffset> {
    local_in(now.now, now.zone)
}

fn local_in(t: NaiveDateTime, zone: PolisZone) -> DateTime<FixedOffset> {
    zone.0
        .from_local_datetime(&t)
        .single()
        .unwrap_or_else(|| DateTime::from_naive_utc_and_offset(t, zone.0))
}

/// Reads a stamp of the file: an ISO 8601 string (offset optional, `T` or space, fraction
/// optional), an unquoted YAML datetime or date. A stamp without an offset is in the polis
/// timezone. `None` for anything else.
pub fn read_instant(v: &Value, zone: PolisZone) -> Option<DateTime<FixedOffset>> {
    match v {
        Value::DateTime(ts) => Some(match ts.offset_seconds {
            Some(off) => {
                let offset = FixedOffset::east_opt(off)?;
                DateTime::from_naive_utc_and_offset(
                    ts.local - Duration::seconds(i64::from(off)),
                    offset,
                )
            }
            None => local_in(ts.local, zone),
        }),
        Value::Date(d) => Some(local_in(d.and_hms_opt(0, 0, 0)?, zone)),
        Value::Str(s) => {
            let s = s.trim();
            let t = s.replacen(' ', "T", 1);
            let t = t
                .strip_suffix('Z')
                .map_or(t.clone(), |x| format!("{x}+00:00"));
            if let Ok(d) = DateTime::parse_from_rfc3339(&t) {
                return Some(d);
            }
            for f in ["%Y-%m-%dT%H:%M:%S%.f%:z", "%Y-%m-%dT%H:%M%:z"] {
                if let Ok(d) = DateTime::parse_from_str(&t, f) {
                    return Some(d);
                }
            }
            for f in ["%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%dT%H:%M"] {
                if let Ok(n) = NaiveDateTime::parse_from_str(&t, f) {
                    return Some(local_in(n, zone));
                }
            }
            NaiveDate::parse_from_str(s, "%Y-%m-%d")
                .ok()
                .and_then(|d| d.and_hms_opt(0, 0, 0))
                .map(|n| local_in(n, zone))
        }
        _ => None,
    }
}

// ---------------------------------------------------------------------------------------------
// The file.

/// One entry of the file, as read. The map is kept whole, so keys polisd does not know (or
/// an entry it cannot read) are written back as they were.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub raw: Value,
    pub citizen: Option<String>,
    /// The paths as written (the reference's and polisd's normalised forms both).
    pub paths: Vec<String>,
    /// `paths`, parsed for comparison.
    patterns: Vec<Pattern>,
    pub reserved_at: Option<DateTime<FixedOffset>>,
    pub expires: Expiry,
    pub note: Option<String>,
    /// The contract the reservation serves (polisd's `--contract`).
    pub contract: Option<String>,
}

/// When an entry stops holding its paths.
#[derive(Debug, Clone, PartialEq)]
pub enum Expiry {
    Never,
    At(DateTime<FixedOffset>),
    /// `expires_at` is set but is not a time: the entry holds until someone fixes it (the
    /// reference treats it the same), and the listing says so.
    Unreadable(String),
}

impl Entry {
    fn from_value(raw: Value, zone: PolisZone) -> Entry {
        let text = |k: &str| match raw.get(k) {
            Value::Null | Value::Seq(_) | Value::Map(_) => None,
            v => Some(v.python_str()),
        };
        let paths = match raw.get("paths") {
            Value::Seq(items) => items
                .iter()
                .filter(|v| !matches!(v, Value::Null | Value::Seq(_) | Value::Map(_)))
                .map(Value::python_str)
                .collect(),
            Value::Null | Value::Map(_) => Vec::new(),
            one => vec![one.python_str()],
        };
        let expires = match raw.get("expires_at") {
            Value::Null => Expiry::Never,
            Value::Str(s) if s.trim().is_empty() => Expiry::Never,
            v => match read_instant(v, zone) {
                Some(t) => Expiry::At(t),
                None => Expiry::Unreadable(v.python_str()),
            },
        };
        Entry {
            citizen: text("citizen"),
            patterns: paths.iter().map(|p| Pattern::new(p)).collect(),
            paths,
            reserved_at: read_instant(raw.get("reserved_at"), zone),
            expires,
            note: text("note"),
            contract: text("contract"),
            raw,
        }
    }

    /// Whether the entry still holds its paths at `now`.
    pub fn is_active(&self, now: DateTime<FixedOffset>) -> bool {
        match &self.expires {
            Expiry::At(t) => *t > now,
            Expiry::Never | Expiry::Unreadable(_) => true,
        }
    }

    /// The entry with `paths` in place of its own (other keys kept).
    fn with_paths(&self, paths: Vec<String>) -> Entry {
        let mut e = self.clone();
        if let Value::Map(m) = &mut e.raw {
            m.insert(
                Value::Str("paths".into()),
                Value::Seq(paths.iter().cloned().map(Value::Str).collect()),
            );
        }
        e.patterns = paths.iter().map(|p| Pattern::new(p)).collect();
        e.paths = paths;
        e
    }
}

/// Why the file could not be read. Nothing is written while it stands: the reference would
/// read such a file as empty and overwrite everyone's reservations.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FileError {
    #[error("{FILE} line {line}: {message}; fix the YAML by hand (polisd will not overwrite it)")]
    Yaml { line: usize, message: String },
    #[error("{FILE}: {0}; expected `reservations:` followed by a list of entries")]
    Shape(String),
}

/// Reads the file's text (`None`: no file yet).
pub fn parse(text: Option<&str>, zone: PolisZone) -> Result<Vec<Entry>, FileError> {
    let Some(text) = text else {
        return Ok(Vec::new());
    };
    let doc = yaml::load(text).map_err(|e| FileError::Yaml {
        line: e.line,
        message: e.to_string(),
    })?;
    let list = match &doc {
        Value::Null => return Ok(Vec::new()),
        Value::Map(_) => match doc.get("reservations") {
            Value::Null => return Ok(Vec::new()),
            Value::Seq(items) => items.clone(),
            other => {
                return Err(FileError::Shape(format!(
                    "`reservations` is a {}, not a list",
                    kind_of(other)
                )))
            }
        },
        other => {
            return Err(FileError::Shape(format!(
                "the file is a {}, not a mapping",
                kind_of(other)
            )))
        }
    };
    Ok(list
        .into_iter()
        .map(|v| Entry::from_value(v, zone))
        .collect())
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Seq(_) => "list",
        Value::Map(_) => "mapping",
        Value::Null => "null",
        _ => "scalar",
    }
}

/// The file's text for these entries: the reference's header line and PyYAML's bytes.
pub fn render(entries: &[Entry]) -> Result<String, yaml::EmitError> {
    let mut doc = Mapping::new();
    doc.insert(
        Value::Str("reservations".into()),
        Value::Seq(entries.iter().map(|e| e.raw.clone()).collect()),
    );
    Ok(format!(
        "{HEADER}{}",
        yaml::dump(&Value::Map(doc), &DumpOptions::FRONTMATTER,)?
    ))
}

// ---------------------------------------------------------------------------------------------
// Reserve, release, prune.

/// A requested path that another citizen's active reservation overlaps.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Conflict {
    /// The path asked for.
    pub path: String,
    /// Who holds the overlapping path.
    pub holder: String,
    /// The path as the holder reserved it.
    pub held_path: String,
    /// When the holder's reservation ends (`None`: until released).
    pub expires_at: Option<String>,
}

/// The longest expiry a reservation may ask for: a year. A longer hold is one until released;
/// near `u32::MAX` minutes the expiry would pass the year 9999, which no reader can parse.
pub const MAX_TTL_MINUTES: u32 = 365 * 24 * 60;

/// What to reserve.
#[derive(Debug, Clone)]
pub struct Request<'a> {
    pub citizen: &'a str,
    /// Normalised paths ([`normalize`]).
    pub paths: &'a [String],
    pub ttl_minutes: Option<u32>,
    pub note: Option<&'a str>,
    pub contract: Option<&'a str>,
}

/// The conflicts `request` meets among the active entries of other citizens.
pub fn conflicts(
    entries: &[Entry],
    citizen: &str,
    paths: &[String],
    now: DateTime<FixedOffset>,
) -> Vec<Conflict> {
    let mut out = Vec::new();
    let asked: Vec<Pattern> = paths.iter().map(|p| Pattern::new(p)).collect();
    for e in entries.iter().filter(|e| e.is_active(now)) {
        let Some(holder) = &e.citizen else { continue };
        if holder == citizen {
            continue;
        }
        for (held, held_pattern) in e.paths.iter().zip(&e.patterns) {
            for (path, pattern) in paths.iter().zip(&asked) {
                if pattern.overlaps(held_pattern) {
                    out.push(Conflict {
                        path: path.clone(),
                        holder: holder.clone(),
                        held_path: held.clone(),
                        expires_at: match &e.expires {
                            Expiry::At(t) => Some(stamp(*t)),
                            _ => None,
                        },
                    });
                }
            }
        }
    }
    out
}

/// The entries after `request` is granted, and the new entry; or the conflicts that refuse
/// it. As the reference: the new entry goes last and the citizen's own expired entries are
/// dropped. Unlike it, paths the citizen already holds are moved into the new entry rather
/// than held twice, so reserving again renews instead of piling up duplicates.
pub fn reserve(
    entries: &[Entry],
    request: &Request<'_>,
    now: &PolisTime,
) -> Result<(Vec<Entry>, Entry), Vec<Conflict>> {
    let at = aware_now(now);
    let found = conflicts(entries, request.citizen, request.paths, at);
    if !found.is_empty() {
        return Err(found);
    }
    let mut paths: Vec<String> = Vec::new();
    for p in request.paths {
        if !paths.contains(p) {
            paths.push(p.clone());
        }
    }
    let mut kept = Vec::new();
    for e in entries {
        let own = e.citizen.as_deref() == Some(request.citizen);
        if own && !e.is_active(at) {
            continue;
        }
        if own && e.paths.iter().any(|p| paths.contains(p)) {
            let rest: Vec<String> = e
                .paths
                .iter()
                .filter(|p| !paths.contains(p))
                .cloned()
                .collect();
            if !rest.is_empty() {
                kept.push(e.with_paths(rest));
            }
            continue;
        }
        kept.push(e.clone());
    }
    let mut m = Mapping::new();
    m.insert(
        Value::Str("citizen".into()),
        Value::Str(request.citizen.into()),
    );
    m.insert(
        Value::Str("paths".into()),
        Value::Seq(paths.iter().cloned().map(Value::Str).collect()),
    );
    m.insert(Value::Str("reserved_at".into()), Value::Str(stamp(at)));
    let expires = request
        .ttl_minutes
        .filter(|m| *m > 0)
        .map(|m| at + Duration::minutes(i64::from(m)));
    m.insert(
        Value::Str("expires_at".into()),
        expires.map_or(Value::Null, |t| Value::Str(stamp(t))),
    );
    if let Some(note) = request.note.filter(|n| !n.is_empty()) {
        m.insert(Value::Str("note".into()), Value::Str(note.into()));
    }
    if let Some(c) = request.contract {
        m.insert(Value::Str("contract".into()), Value::Str(c.into()));
    }
    let entry = Entry::from_value(Value::Map(m), now.zone);
    kept.push(entry.clone());
    Ok((kept, entry))
}

/// What [`release`] let go.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Released {
    /// Entries removed or shortened (the reference's count).
    pub entries: usize,
    /// The held paths let go.
    pub paths: Vec<String>,
}

/// The entries after `citizen` releases `targets` (`None`: everything they hold). As the
/// reference: a held path is released when it overlaps a target, so `release src` lets go of
/// `src/a.rs` (and `release src/a.rs` of `src`); expired entries count too.
pub fn release(
    entries: &[Entry],
    citizen: &str,
    targets: Option<&[String]>,
) -> (Vec<Entry>, Released) {
    let mut kept = Vec::new();
    let mut done = Released::default();
    let targets: Option<Vec<Pattern>> =
        targets.map(|t| t.iter().map(|p| Pattern::new(p)).collect());
    for e in entries {
        if e.citizen.as_deref() != Some(citizen) {
            kept.push(e.clone());
            continue;
        }
        let Some(targets) = &targets else {
            done.entries += 1;
            done.paths.extend(e.paths.iter().cloned());
            continue;
        };
        let (gone, rest): (Vec<_>, Vec<_>) = e
            .paths
            .iter()
            .zip(&e.patterns)
            .partition(|(_, p)| targets.iter().any(|t| p.overlaps(t)));
        let gone: Vec<String> = gone.into_iter().map(|(p, _)| p.clone()).collect();
        let rest: Vec<String> = rest.into_iter().map(|(p, _)| p.clone()).collect();
        if gone.is_empty() {
            kept.push(e.clone());
            continue;
        }
        done.entries += 1;
        done.paths.extend(gone);
        if !rest.is_empty() {
            kept.push(e.with_paths(rest));
        }
    }
    (kept, done)
}

/// What the daemon knows of contracts, for releasing reservations when work ends.
#[derive(Debug, Clone, Default)]
pub struct ContractFacts {
    /// Citizens who own a contract in `contracts/open/`.
    pub open_owners: std::collections::BTreeSet<String>,
    /// Contract ids in `contracts/open/`.
    pub open: std::collections::BTreeSet<String>,
    /// Settled and abandoned contracts: id, owner, when (polis-local), if known.
    pub finished: Vec<(String, Option<String>, Option<NaiveDateTime>)>,
    /// Citizens whose latest membership line is `left polis`, with its stamp (polis-local).
    pub departed: std::collections::BTreeMap<String, NaiveDateTime>,
}

/// Why the daemon dropped an entry.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub enum Dropped {
    Expired,
    /// The contract it was made for settled or was abandoned.
    ContractFinished(String),
    /// Made for no contract; its citizen finished a contract after making it and owns no
    /// other open one.
    WorkFinished(String),
    /// Its citizen has left the polis: nobody is left to release it.
    CitizenLeft,
}

/// Whether the end of a contract releases `e`: one made `--contract C` when C is settled or
/// abandoned (and not open again); one made for no contract when its citizen owns no open
/// contract and finished one after reserving. Both stamps are to the second, so an end in the
/// reservation's own second (settling, then reserving the next paths at once) does not count,
/// nor an end stamped after `now` (a clock running ahead): either would drop a reservation
/// made for the work that comes next.
pub fn finished_by(e: &Entry, facts: &ContractFacts, now: &PolisTime) -> Option<Dropped> {
    let citizen = e.citizen.as_deref()?;
    if let Some(c) = &e.contract {
        let done = facts.finished.iter().any(|(id, _, _)| id == c) && !facts.open.contains(c);
        return done.then(|| Dropped::ContractFinished(c.clone()));
    }
    if facts.open_owners.contains(citizen) {
        return None;
    }
    let since = e.reserved_at?.with_timezone(&now.zone.0).naive_local();
    facts
        .finished
        .iter()
        .filter(|(_, owner, at)| {
            owner.as_deref() == Some(citizen) && at.is_some_and(|t| t > since && t <= now.now)
        })
        .map(|(id, _, _)| Dropped::WorkFinished(id.clone()))
        .next()
}

/// Whether `e` is what its citizen held when it left the polis: its latest membership line
/// is `left polis` (stamped `departures[citizen]`, polis-local) and the entry was reserved no
/// later than that line's minute, or says not when. An entry reserved after the line still
/// holds: a machine whose chronicle lacks the citizen's `joined polis` line so far (a sync on
/// its way) must not release what the citizen reserved on coming back. The line's stamp has
/// no seconds, so an entry of the same minute counts as held then.
pub fn left_behind(
    e: &Entry,
    departures: &std::collections::BTreeMap<String, NaiveDateTime>,
    zone: PolisZone,
) -> bool {
    let Some(left) = e.citizen.as_ref().and_then(|c| departures.get(c)) else {
        return false;
    };
    e.reserved_at
        .is_none_or(|r| r.with_timezone(&zone.0).naive_local() < *left + Duration::minutes(1))
}

/// `entries` without what their citizens held when they left ([`left_behind`]).
pub fn still_held(
    entries: &[Entry],
    departures: &std::collections::BTreeMap<String, NaiveDateTime>,
    zone: PolisZone,
) -> Vec<Entry> {
    entries
        .iter()
        .filter(|e| !left_behind(e, departures, zone))
        .cloned()
        .collect()
}

/// The entries the daemon keeps, and those it drops with why: expired ones, those of a
/// citizen who left, and those the end of a contract releases.
pub fn prune(
    entries: &[Entry],
    facts: &ContractFacts,
    now: &PolisTime,
) -> (Vec<Entry>, Vec<(Entry, Dropped)>) {
    let at = aware_now(now);
    let mut kept = Vec::new();
    let mut dropped = Vec::new();
    for e in entries {
        if !e.is_active(at) {
            dropped.push((e.clone(), Dropped::Expired));
        } else if left_behind(e, &facts.departed, now.zone) {
            dropped.push((e.clone(), Dropped::CitizenLeft));
        } else if let Some(why) = finished_by(e, facts, now) {
            dropped.push((e.clone(), why));
        } else {
            kept.push(e.clone());
        }
    }
    (kept, dropped)
}

/// Two active entries of different citizens holding overlapping paths (written without
/// polisd's check: by the reference, by hand, or by a sync of two machines).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Overlap {
    /// The citizen who reserved first (by `reserved_at`; file order on a tie).
    pub first: String,
    pub first_path: String,
    pub first_at: String,
    pub second: String,
    pub second_path: String,
    pub second_at: String,
}

/// Every overlap between active entries of different citizens.
pub fn overlapping(entries: &[Entry], now: &PolisTime) -> Vec<Overlap> {
    let at = aware_now(now);
    let active: Vec<(usize, &Entry)> = entries
        .iter()
        .enumerate()
        .filter(|(_, e)| e.is_active(at) && e.citizen.is_some())
        .collect();
    let when = |e: &Entry| e.reserved_at.map(stamp).unwrap_or_default();
    let mut out = Vec::new();
    for (n, (i, a)) in active.iter().enumerate() {
        for (j, b) in &active[n + 1..] {
            if a.citizen == b.citizen {
                continue;
            }
            // Earlier reservation first; a missing time sorts last; then file order.
            let key = |k: usize, e: &Entry| (e.reserved_at.is_none(), e.reserved_at, k);
            let (x, y) = if key(*i, a) <= key(*j, b) {
                (a, b)
            } else {
                (b, a)
            };
            for (xp, xpat) in x.paths.iter().zip(&x.patterns) {
                for (yp, ypat) in y.paths.iter().zip(&y.patterns) {
                    if xpat.overlaps(ypat) {
                        out.push(Overlap {
                            first: x.citizen.clone().unwrap_or_default(),
                            first_path: xp.clone(),
                            first_at: when(x),
                            second: y.citizen.clone().unwrap_or_default(),
                            second_path: yp.clone(),
                            second_at: when(y),
                        });
                    }
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A leave releases what was reserved up to its minute (stamps read in the polis's zone),
    /// and an entry that does not say when it was made; not what was reserved after it.
    #[test]
    fn a_leave_releases_what_was_held_then() {
        let zone = PolisZone::parse("+02:00").unwrap();
        let left = |stamp: &str| {
            std::collections::BTreeMap::from([(
                "alpha-agent".to_string(),
                NaiveDateTime::parse_from_str(stamp, "%Y-%m-%d %H:%M").unwrap(),
            )])
        };
        let entry = |reserved: &str| {
            let text = format!("reservations:\n- citizen: alpha-agent\n  paths: [src]\n{reserved}");
            parse(Some(&text), zone).unwrap().remove(0)
        };
        let at = |t: &str| entry(&format!("  reserved_at: '{t}'\n"));
        let leave = left("2026-03-02 12:00");
        assert!(left_behind(&at("2026-03-02T11:59:59+02:00"), &leave, zone));
        assert!(left_behind(&at("2026-03-02T12:00:59+02:00"), &leave, zone));
        assert!(!left_behind(&at("2026-03-02T12:01:00+02:00"), &leave, zone));
        assert!(!left_behind(&at("2026-03-02T10:01:00+00:00"), &leave, zone));
        assert!(left_behind(&entry(""), &leave, zone));
        assert!(!left_behind(
            &at("2026-03-02T11:00:00+02:00"),
            &std::collections::BTreeMap::new(),
            zone
        ));
    }

    fn at(stamp: &str) -> PolisTime {
        PolisTime::at_stamp(PolisZone::default(), stamp).unwrap()
    }

    #[test]
    fn reference_file_reads_and_naive_stamps_are_polis_local() {
        let text = "# header\nreservations:\n- citizen: claude-code-1\n  paths:\n  - github/workflows/ci.yml\n  reserved_at: '2026-12-01T06:40:46.470299+00:00'\n  expires_at: '2026-12-01T07:10:46.470299+00:00'\n  note: 'fixing ci: yes'\n- citizen: gemini-cli-1\n  paths: [docs]\n  reserved_at: 2026-12-01 06:00:00\n  expires_at: 2026-12-01 07:00:00\n";
        let zone = PolisZone::parse("+02:00").unwrap();
        let es = parse(Some(text), zone).unwrap();
        assert_eq!(es.len(), 2);
        assert_eq!(es[0].paths, vec!["github/workflows/ci.yml"]);
        assert_eq!(es[0].note.as_deref(), Some("fixing ci: yes"));
        // Unquoted, offset-less: 07:00 in +02:00 is 05:00 UTC.
        let Expiry::At(t) = es[1].expires else {
            panic!("{:?}", es[1].expires)
        };
        assert_eq!(stamp(t), "2026-12-01T07:00:00+02:00");
        let now = PolisTime::at(zone, "2026-12-01T05:30:00Z".parse().unwrap());
        assert!(!es[1].is_active(aware_now(&now)));
        assert!(es[0].is_active(aware_now(&now)));
    }

    #[test]
    fn bad_files_are_refused_not_emptied() {
        let zone = PolisZone::default();
        assert!(matches!(
            parse(Some("reservations: [\n"), zone),
            Err(FileError::Yaml { .. })
        ));
        assert!(matches!(
            parse(Some("reservations: 3\n"), zone),
            Err(FileError::Shape(_))
        ));
        assert_eq!(parse(Some(""), zone).unwrap(), vec![]);
        assert_eq!(parse(None, zone).unwrap(), vec![]);
    }

    #[test]
    fn reserve_writes_the_reference_shape() {
        let now = at("2026-03-02 14:05");
        let paths = vec![".github/x".to_string(), "src".to_string()];
        let req = Request {
            citizen: "claude-code-1",
            paths: &paths,
            ttl_minutes: Some(30),
            note: Some("ci: fix"),
            contract: None,
        };
        let (entries, _) = reserve(&[], &req, &now).unwrap();
        assert_eq!(
            render(&entries).unwrap(),
            format!("{HEADER}reservations:\n- citizen: claude-code-1\n  paths:\n  - .github/x\n  - src\n  reserved_at: '2026-03-02T14:05:00+00:00'\n  expires_at: '2026-03-02T14:35:00+00:00'\n  note: 'ci: fix'\n")
        );
        assert_eq!(render(&[]).unwrap(), format!("{HEADER}reservations: []\n"));
    }

    #[test]
    fn conflict_names_the_holder_and_expiry_frees() {
        let t0 = at("2026-03-02 14:05");
        let mine = vec!["src/**/*.rs".to_string()];
        let (entries, _) = reserve(
            &[],
            &Request {
                citizen: "alpha-agent",
                paths: &mine,
                ttl_minutes: Some(10),
                note: None,
                contract: None,
            },
            &t0,
        )
        .unwrap();
        let theirs = vec!["src/lib.rs".to_string()];
        let req = Request {
            citizen: "bravo-agent",
            paths: &theirs,
            ttl_minutes: None,
            note: None,
            contract: None,
        };
        let err = reserve(&entries, &req, &t0).unwrap_err();
        assert_eq!(err[0].holder, "alpha-agent");
        assert_eq!(err[0].held_path, "src/**/*.rs");
        // The holder itself is never in conflict with its own reservation.
        assert!(conflicts(&entries, "alpha-agent", &theirs, aware_now(&t0)).is_empty());
        // Ten minutes later the lease is gone.
        assert!(reserve(&entries, &req, &at("2026-03-02 14:15")).is_ok());
    }

    #[test]
    fn reserving_again_renews_instead_of_duplicating() {
        let paths = vec!["src".to_string(), "docs".to_string()];
        let req = |p: &'static [&'static str]| p.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let (entries, _) = reserve(
            &[],
            &Request {
                citizen: "alpha-agent",
                paths: &paths,
                ttl_minutes: None,
                note: None,
                contract: None,
            },
            &at("2026-03-02 14:05"),
        )
        .unwrap();
        let again = req(&["src"]);
        let (entries, _) = reserve(
            &entries,
            &Request {
                citizen: "alpha-agent",
                paths: &again,
                ttl_minutes: Some(5),
                note: None,
                contract: None,
            },
            &at("2026-03-02 14:06"),
        )
        .unwrap();
        assert_eq!(entries.len(), 2);
        assert_eq!(entries[0].paths, vec!["docs"]);
        assert_eq!(entries[1].paths, vec!["src"]);
    }

    #[test]
    fn release_by_overlap_keeps_the_rest() {
        let paths = vec!["src/a.rs".to_string(), "docs".to_string()];
        let (entries, _) = reserve(
            &[],
            &Request {
                citizen: "alpha-agent",
                paths: &paths,
                ttl_minutes: None,
                note: Some("n"),
                contract: None,
            },
            &at("2026-03-02 14:05"),
        )
        .unwrap();
        let (kept, done) = release(&entries, "alpha-agent", Some(&["src".to_string()]));
        assert_eq!(done.entries, 1);
        assert_eq!(done.paths, vec!["src/a.rs"]);
        assert_eq!(kept[0].paths, vec!["docs"]);
        assert_eq!(kept[0].note.as_deref(), Some("n"));
        let (kept, done) = release(&kept, "bravo-agent", None);
        assert_eq!(done.entries, 0);
        assert_eq!(kept.len(), 1);
        let (kept, _) = release(&kept, "alpha-agent", None);
        assert!(kept.is_empty());
    }

    #[test]
    fn end_of_work_releases_by_contract_or_by_citizen() {
        let zone = PolisZone::default();
        let text = "reservations:\n- citizen: alpha-agent\n  paths: [a]\n  reserved_at: '2026-03-02T10:00:00+00:00'\n  expires_at: null\n  contract: fix-login\n- citizen: bravo-agent\n  paths: [b]\n  reserved_at: '2026-03-02T10:00:00+00:00'\n  expires_at: null\n- citizen: charlie-agent\n  paths: [c]\n  reserved_at: '2026-03-02T10:00:00+00:00'\n  expires_at: '2026-03-02T11:00:00+00:00'\n";
        let es = parse(Some(text), zone).unwrap();
        let t = |s: &str| NaiveDateTime::parse_from_str(s, "%Y-%m-%d %H:%M").ok();
        let mut facts = ContractFacts::default();
        facts.finished.push((
            "fix-login".into(),
            Some("alpha-agent".into()),
            t("2026-03-02 12:00"),
        ));
        // bravo finished a contract before reserving: that does not release.
        facts.finished.push((
            "old-work".into(),
            Some("bravo-agent".into()),
            t("2026-03-02 09:00"),
        ));
        let now = at("2026-03-02 10:30");
        let (kept, dropped) = prune(&es, &facts, &now);
        assert_eq!(kept.len(), 2);
        assert_eq!(dropped[0].1, Dropped::ContractFinished("fix-login".into()));
        facts.finished.push((
            "new-work".into(),
            Some("bravo-agent".into()),
            t("2026-03-02 10:20"),
        ));
        facts.open_owners.insert("bravo-agent".into());
        assert_eq!(
            prune(&es, &facts, &now).0.len(),
            2,
            "bravo still owns an open contract"
        );
        facts.open_owners.clear();
        let (kept, dropped) = prune(&es, &facts, &at("2026-03-02 11:00"));
        assert!(kept.is_empty());
        assert_eq!(dropped[1].1, Dropped::WorkFinished("new-work".into()));
        assert_eq!(dropped[2].1, Dropped::Expired);
    }

    #[test]
    fn overlapping_entries_name_who_was_first() {
        let zone = PolisZone::default();
        let text = "reservations:\n- citizen: bravo-agent\n  paths: [src/lib.rs]\n  reserved_at: '2026-03-02T10:05:00+00:00'\n- citizen: alpha-agent\n  paths: ['src/*.rs', docs]\n  reserved_at: '2026-03-02T10:00:00+00:00'\n- citizen: alpha-agent\n  paths: [src/lib.rs]\n  reserved_at: '2026-03-02T10:00:00+00:00'\n";
        let es = parse(Some(text), zone).unwrap();
        let o = overlapping(&es, &at("2026-03-02 10:30"));
        assert_eq!(o.len(), 2);
        assert_eq!(o[0].first, "alpha-agent");
        assert_eq!(o[0].first_path, "src/*.rs");
        assert_eq!(o[0].second, "bravo-agent");
        assert_eq!(o[1].first_path, "src/lib.rs");
    }
}
