//! Reserving, releasing and listing project paths in `_polis/reservations.yml`, and the
//! daemon's clean-up of it.
//!
//! Every change is one read-modify-write under the writer's advisory lock
//! ([`Writer::update_locked`]), so of any number of citizens reserving overlapping paths at
//! once exactly one wins and the others are told who holds them. A refusal (a conflict, a bad
//! path, an unregistered citizen, an unreadable file) writes nothing. The rules themselves
//! (overlap, expiry, what a release lets go) are in [`crate::protocol::contracts::reservation`].

use crate::fs::snapshot;
use crate::fs::writer::{WriteError, WriteOutcome, Writer};
use crate::operations::arg::{flags, Arg, Names, Spell};
use crate::protocol::clock::PolisTime;
use crate::protocol::contracts::reservation::{
    self as rules, Conflict, ContractFacts, Dropped, Entry, Expiry, FileError, Overlap, PathError,
    Released,
};
use crate::protocol::contracts::reservation_check::{self, Problem};
use crate::protocol::layout::{self, ContractFolder};
use std::path::{Component, Path};

/// The longest note a reservation keeps, as long as the console's message.
pub const MAX_NOTE_CHARS: usize = crate::protocol::input::MAX_TEXT_CHARS;

/// Why a reservation action was refused or failed.
#[derive(Debug, thiserror::Error)]
pub enum ReservationError {
    // A variant that names an argument is worded by a function given the names, here the
    // command line's flags; `spelled` calls the same function with another front end's.
    #[error("{}", bad_id(.0, &flags))]
    BadId(String),
    #[error("{}", not_registered(.0, &flags))]
    NotRegistered(String),
    #[error("`{0}` left the polis (its latest membership line is `left polis`), so it has no work to reserve for; nothing was written: a citizen who returns logs `joined polis` first")]
    Left(String),
    #[error("name at least one path to reserve")]
    NoPaths,
    #[error("the note is {0} characters; keep it under {MAX_NOTE_CHARS} (say where the work is, not the work itself)")]
    NoteTooLong(usize),
    /// The note holds a line break: refused as every one-line text is.
    #[error(transparent)]
    OneLine(crate::operations::OpError),
    #[error("{}", not_open(.0, &flags))]
    NotOpen(String),
    #[error(transparent)]
    Path(#[from] PathError),
    #[error(transparent)]
    File(#[from] FileError),
    #[error("{FILE} is not UTF-8 text; fix or remove the bad bytes by hand", FILE = rules::FILE)]
    NotUtf8,
    #[error("{0}")]
    Unreadable(String),
    #[error(transparent)]
    Input(#[from] crate::protocol::input::InputError),
    #[error("{}", conflict_message(.0))]
    Conflict(Vec<Conflict>),
    #[error(transparent)]
    Write(#[from] WriteError),
    #[error("cannot write reservations.yml: {0}")]
    Render(#[from] crate::yaml::EmitError),
}

impl Spell for ReservationError {
    fn spelled(&self, names: Names) -> String {
        match self {
            ReservationError::BadId(id) => bad_id(id, names),
            ReservationError::NotRegistered(id) => not_registered(id, names),
            ReservationError::NotOpen(id) => not_open(id, names),
            ReservationError::OneLine(e) => e.spelled(names),
            other => other.to_string(),
        }
    }
}

fn bad_id(id: &str, names: Names) -> String {
    format!(
        "`{id}` is not a citizen id (ids match ^[a-z][a-z0-9-]{{7,39}}$); pass your own id with {}",
        names.arg(Arg::Citizen)
    )
}

fn not_registered(id: &str, names: Names) -> String {
    format!(
        "`{id}` is not a registered citizen (no citizens/{id}/capability_card.yml); register first, or pass your own id with {}",
        names.arg(Arg::Citizen)
    )
}

fn not_open(id: &str, names: Names) -> String {
    format!(
        "`{id}` is not an open contract (no contracts/open/{id}.md); pass the id of the open contract the reservation is for, or leave out {}",
        names.arg(Arg::Contract)
    )
}

impl ReservationError {
    /// Whether the caller passed something no retry can make right (exit code 2).
    pub fn is_usage(&self) -> bool {
        matches!(self, ReservationError::OneLine(e) if e.is_usage())
    }

    /// Whether the action was refused for what was asked (exit 1, nothing written) rather
    /// than failed for a passing reason.
    pub fn is_refusal(&self) -> bool {
        match self {
            ReservationError::Write(e) => e.is_refusal(),
            _ => true,
        }
    }
}

/// One line naming every holder in the way and what to do.
fn conflict_message(conflicts: &[Conflict]) -> String {
    let held: Vec<String> = conflicts
        .iter()
        .map(|c| {
            let until = c
                .expires_at
                .as_deref()
                .map_or("until released".to_string(), |t| format!("until {t}"));
            let as_held = if c.held_path == c.path {
                String::new()
            } else {
                format!(" as `{}`", c.held_path)
            };
            format!(
                "`{}` is reserved by {}{as_held} ({until})",
                c.path, c.holder
            )
        })
        .collect();
    let holders: std::collections::BTreeSet<&str> =
        conflicts.iter().map(|c| c.holder.as_str()).collect();
    let holders: Vec<&str> = holders.into_iter().collect();
    format!(
        "{}; nothing was reserved: work on other paths, or ask {} to release them",
        held.join("; "),
        holders.join(" or ")
    )
}

/// An entry as the commands print it (`--json`: the reference's keys, plus `contract` and
/// `active`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct View {
    pub citizen: Option<String>,
    pub paths: Vec<String>,
    pub reserved_at: Option<String>,
    pub expires_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub contract: Option<String>,
    pub active: bool,
    /// What is wrong with the entry as written (an `expires_at` that is not a time, so it holds
    /// until fixed; no citizen; paths that guard nothing…), each with its fix.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
}

impl View {
    fn of(e: &Entry, now: &PolisTime) -> View {
        let expires_at = match &e.expires {
            Expiry::Never => None,
            Expiry::At(t) => Some(rules::stamp(*t)),
            Expiry::Unreadable(text) => Some(text.clone()),
        };
        View {
            citizen: e.citizen.clone(),
            paths: e.paths.clone(),
            reserved_at: e.reserved_at.map(rules::stamp),
            expires_at,
            note: e.note.clone(),
            contract: e.contract.clone(),
            active: e.is_active(rules::aware_now(now)),
            problem: None,
        }
    }
}

/// What to reserve; paths as the user gave them, made project-relative by [`project_path`].
#[derive(Debug, Clone)]
pub struct ReserveRequest {
    pub citizen: String,
    pub paths: Vec<String>,
    pub ttl_minutes: Option<u32>,
    pub note: Option<String>,
    pub contract: Option<String>,
}

/// What [`reserve`] did.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Reserved {
    pub reservation: View,
}

/// The project-relative form of `raw`, a path or glob given from `cwd`, for the polis whose
/// `_polis/` folder is `root` (canonical). Relative paths are taken from `cwd` when it is
/// inside the project, else from the project root; absolute ones must lie inside the project.
pub fn project_path(root: &Path, cwd: &Path, raw: &str) -> Result<String, PathError> {
    let project = root.parent().unwrap_or(root);
    let inside = |p: &Path| -> Option<Vec<String>> {
        let rel = p.strip_prefix(project).ok()?;
        rel.components()
            .map(|c| match c {
                Component::Normal(n) => n.to_str().map(str::to_string),
                _ => None,
            })
            .collect()
    };
    if raw.starts_with('/') {
        let path = Path::new(raw);
        // A path that exists is compared canonically (a link to the project counts as in it);
        // a new one by its existing parent, or as written.
        let canonical = std::fs::canonicalize(path).ok().or_else(|| {
            let parent = std::fs::canonicalize(path.parent()?).ok()?;
            Some(parent.join(path.file_name()?))
        });
        let rel = canonical
            .as_deref()
            .and_then(inside)
            .or_else(|| inside(path))
            .ok_or_else(|| PathError::Outside(raw.to_string()))?;
        return rules::normalize(&rel.join("/"), &[]);
    }
    let base = std::fs::canonicalize(cwd)
        .ok()
        .and_then(|c| inside(&c))
        .unwrap_or_default();
    rules::normalize(raw, &base)
}

fn check_citizen(root: &Path, id: &str) -> Result<(), ReservationError> {
    crate::protocol::input::check_acting_id(id)?;
    if !layout::is_agent_id(id) {
        return Err(ReservationError::BadId(id.to_string()));
    }
    if !is_registered(root, id) {
        return Err(ReservationError::NotRegistered(id.to_string()));
    }
    Ok(())
}

fn is_registered(root: &Path, id: &str) -> bool {
    crate::fs::snapshot::has_card(root, id)
}

fn entries_of(bytes: Option<&[u8]>, now: &PolisTime) -> Result<Vec<Entry>, ReservationError> {
    let text = match bytes {
        Some(b) => Some(std::str::from_utf8(b).map_err(|_| ReservationError::NotUtf8)?),
        None => None,
    };
    Ok(rules::parse(text, now.zone)?)
}

/// Reserves `request.paths` for `request.citizen`, or refuses with the conflicts (naming each
/// holder) and writes nothing.
pub fn reserve(
    root: &Path,
    writer: &Writer,
    now: &PolisTime,
    request: &ReserveRequest,
) -> Result<Reserved, ReservationError> {
    check_citizen(root, &request.citizen)?;
    if request.paths.is_empty() {
        return Err(ReservationError::NoPaths);
    }
    // Who left the polis, and when, read once. A citizen who left would hold paths for work
    // nobody does, and no daemon would release an entry made after its `left polis` line.
    let departed = super::chronicle::departures(root);
    if departed.contains_key(&request.citizen) {
        return Err(ReservationError::Left(request.citizen.clone()));
    }
    // Every reservation command reads the whole file: notes without a bound would let one
    // citizen's notes push it past what polisd reads, and lock everyone out of reserving.
    if let Some(note) = request.note.as_deref() {
        let n = note.chars().count();
        if n > MAX_NOTE_CHARS {
            return Err(ReservationError::NoteTooLong(n));
        }
        // Shown on one line in every listing, a line break in it would pose as a line of its
        // own (an entry, a holder): refused, as every one-line text is.
        crate::operations::error::on_one_line("the note", Arg::Note, note)
            .map_err(ReservationError::OneLine)?;
    }
    if let Some(c) = &request.contract {
        let open = layout::contract_path(ContractFolder::Open, c).is_some_and(|rel| {
            std::fs::symlink_metadata(root.join(rel)).is_ok_and(|m| m.is_file())
        });
        if !open {
            return Err(ReservationError::NotOpen(c.clone()));
        }
    }
    let (_, entry) = writer.update_locked(rules::FILE, |bytes| {
        let entries = entries_of(bytes, now)?;
        let req = rules::Request {
            citizen: &request.citizen,
            paths: &request.paths,
            ttl_minutes: request.ttl_minutes,
            note: request.note.as_deref(),
            contract: request.contract.as_deref(),
        };
        let (kept, entry) = match rules::reserve(&entries, &req, now) {
            Ok(done) => done,
            // What a holder held when it left the polis it holds no more (the daemon releases
            // it; without a daemon it goes here).
            Err(conflicts) => {
                let left: std::collections::BTreeMap<String, chrono::NaiveDateTime> = departed
                    .iter()
                    .filter(|(c, _)| conflicts.iter().any(|x| x.holder == **c))
                    .map(|(c, at)| (c.clone(), *at))
                    .collect();
                if left.is_empty() {
                    return Err(ReservationError::Conflict(conflicts));
                }
                let live = rules::still_held(&entries, &left, now.zone);
                rules::reserve(&live, &req, now).map_err(ReservationError::Conflict)?
            }
        };
        Ok::<_, ReservationError>((Some(rules::render(&kept)?.into_bytes()), entry))
    })?;
    Ok(Reserved {
        reservation: View::of(&entry, now),
    })
}

/// Releases what `citizen` holds: every entry, or the held paths that overlap `targets`
/// (project-relative). Releasing nothing is not an error and writes nothing.
pub fn release(
    root: &Path,
    writer: &Writer,
    now: &PolisTime,
    citizen: &str,
    targets: Option<&[String]>,
) -> Result<Released, ReservationError> {
    if !layout::is_agent_id(citizen) {
        return Err(ReservationError::BadId(citizen.to_string()));
    }
    let registered = is_registered(root, citizen);
    let (_, done) = writer.update_locked(rules::FILE, |bytes| {
        let entries = entries_of(bytes, now)?;
        let holds = entries
            .iter()
            .any(|e| e.citizen.as_deref() == Some(citizen));
        // A typo in --as would otherwise "release" nothing and look like success; a citizen
        // whose card is gone may still let go of what it holds.
        if !registered && !holds {
            return Err(ReservationError::NotRegistered(citizen.to_string()));
        }
        let (kept, done) = rules::release(&entries, citizen, targets);
        let new = (done.entries > 0)
            .then(|| rules::render(&kept).map(String::into_bytes))
            .transpose()?;
        Ok::<_, ReservationError>((new, done))
    })?;
    Ok(done)
}

/// Every entry of the file (without a lock: a listing changes nothing), each with what is
/// wrong with it ([`entry_problems`]), its fix naming commands as `names` does.
pub fn list(root: &Path, now: &PolisTime, names: Names) -> Result<Vec<View>, ReservationError> {
    let bytes = read_file(root)?;
    let entries = entries_of(bytes.as_deref(), now)?;
    let problems = problems_of(root, bytes.as_deref(), &entries, names);
    Ok(entries
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let mut view = View::of(e, now);
            let mine: Vec<&str> = problems
                .iter()
                .filter(|p| p.entry == i)
                .map(|p| p.message.as_str())
                .collect();
            view.problem = (!mine.is_empty()).then(|| mine.join("; "));
            view
        })
        .collect())
}

/// What is wrong with each entry as written, with its line and fix
/// ([`crate::protocol::contracts::reservation_check`]), for `check` and the daemon's notices.
pub fn entry_problems(root: &Path, now: &PolisTime) -> Result<Vec<Problem>, ReservationError> {
    let bytes = read_file(root)?;
    let entries = entries_of(bytes.as_deref(), now)?;
    Ok(problems_of(root, bytes.as_deref(), &entries, &flags))
}

/// A problem of an entry as a finding (P029), the entry's citizen named in it.
pub fn finding(p: Problem) -> crate::protocol::finding::Finding {
    let who = p.citizen.as_deref().map_or(String::new(), |c| {
        format!(
            "the entry of `{}`: ",
            crate::protocol::delivery::notice::one_line(c, 60)
        )
    });
    crate::protocol::finding::Finding::warning(
        crate::protocol::finding::Code::BadReservation,
        rules::FILE,
        p.line,
        format!("{who}{}", p.message),
    )
}

fn problems_of(root: &Path, bytes: Option<&[u8]>, entries: &[Entry], names: Names) -> Vec<Problem> {
    if entries.is_empty() {
        return Vec::new();
    }
    // `entries_of` has read the bytes as UTF-8 already.
    let text = bytes.map(String::from_utf8_lossy).unwrap_or_default();
    // Each id the entries name looked up once.
    let named: std::collections::BTreeSet<&str> = entries
        .iter()
        .filter_map(|e| e.citizen.as_deref())
        .collect();
    let registered: std::collections::BTreeSet<&str> = named
        .into_iter()
        .filter(|id| is_registered(root, id))
        .collect();
    reservation_check::check(&text, entries, &|id| registered.contains(id), names)
}

fn read_file(root: &Path) -> Result<Option<Vec<u8>>, ReservationError> {
    match snapshot::read_text(root, rules::FILE, Some(snapshot::MAX_RECORD_BYTES)) {
        Ok(text) => Ok(text.map(String::into_bytes)),
        Err(f) => Err(ReservationError::Unreadable(f.to_string())),
    }
}

/// Every overlap between entries of different citizens now. What a citizen held when it left
/// overlaps nobody's work (the daemon releases it; without one it is set aside here):
/// `departures` says who left and when (`chronicle::departures` reads it from the folder, the
/// daemon from the chronicle its pass holds), asked only when something overlaps.
pub fn overlaps_now(
    root: &Path,
    now: &PolisTime,
    departures: impl FnOnce() -> std::collections::BTreeMap<String, chrono::NaiveDateTime>,
) -> Result<Vec<Overlap>, ReservationError> {
    let entries = entries(root, now)?;
    let overlaps = rules::overlapping(&entries, now);
    if overlaps.is_empty() {
        return Ok(overlaps);
    }
    let left = departures();
    if left.is_empty() {
        return Ok(overlaps);
    }
    Ok(rules::overlapping(
        &rules::still_held(&entries, &left, now.zone),
        now,
    ))
}

/// Every entry of the file as read, without the checks a listing adds: what the daemon's
/// clean-up needs on every pass.
pub fn entries(root: &Path, now: &PolisTime) -> Result<Vec<Entry>, ReservationError> {
    entries_of(read_file(root)?.as_deref(), now)
}

/// What the daemon's clean-up dropped.
#[derive(Debug, Clone)]
pub struct Pruned {
    pub outcome: WriteOutcome,
    pub dropped: Vec<(View, Dropped)>,
    /// When the next kept entry expires (the daemon wakes then to drop it).
    pub next_expiry: Option<chrono::DateTime<chrono::FixedOffset>>,
}

/// Drops expired entries and those the end of a contract releases ([`rules::prune`]), under
/// the lock. With no file, or nothing to drop, nothing is written.
pub fn prune(
    writer: &Writer,
    now: &PolisTime,
    facts: &ContractFacts,
) -> Result<Pruned, ReservationError> {
    let (outcome, (dropped, next_expiry)) = writer.update_locked(rules::FILE, |bytes| {
        if bytes.is_none() {
            return Ok((None, (Vec::new(), None)));
        }
        let entries = entries_of(bytes, now)?;
        let (kept, dropped) = rules::prune(&entries, facts, now);
        let new = (!dropped.is_empty())
            .then(|| rules::render(&kept).map(String::into_bytes))
            .transpose()?;
        let views = dropped
            .iter()
            .map(|(e, why)| (View::of(e, now), why.clone()))
            .collect();
        let next = kept
            .iter()
            .filter_map(|e| match e.expires {
                Expiry::At(t) => Some(t),
                _ => None,
            })
            .min();
        Ok::<_, ReservationError>((new, (views, next)))
    })?;
    Ok(Pruned {
        outcome,
        dropped,
        next_expiry,
    })
}

/// Releases what the end of one contract releases ([`rules::finished_by`]), for the settle
/// and abandon commands, so reservations go at once even with no daemon running. `owner` is
/// the contract's owner; the open contracts are listed from `contracts/open/` (the contract
/// itself must already have left it). With no `reservations.yml`, nothing is read or written.
pub fn release_for_ended_contract(
    root: &Path,
    writer: &Writer,
    now: &PolisTime,
    contract_id: &str,
    owner: Option<&str>,
) -> Result<Pruned, ReservationError> {
    if !root.join(rules::FILE).is_file() {
        return Ok(Pruned {
            outcome: WriteOutcome::Unchanged,
            dropped: Vec::new(),
            next_expiry: None,
        });
    }
    let mut facts = ContractFacts::default();
    let mut findings = Vec::new();
    for file in snapshot::read_records(root, ContractFolder::Open.dir(), &mut findings) {
        let contract = crate::protocol::contracts::contract::Contract::from_record(&file.record);
        if let Some(o) = contract.owner {
            facts.open_owners.insert(o);
        }
        facts.open.insert(file.stem);
    }
    facts.finished.push((
        contract_id.to_string(),
        owner.map(str::to_string),
        Some(now.now),
    ));
    prune(writer, now, &facts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::operations::test_polis::polis_with;

    #[test]
    fn conflict_message_names_holder_and_next_step() {
        let m = conflict_message(&[Conflict {
            path: "src/lib.rs".into(),
            holder: "alpha-agent".into(),
            held_path: "src/**/*.rs".into(),
            expires_at: None,
        }]);
        assert_eq!(
            m,
            "`src/lib.rs` is reserved by alpha-agent as `src/**/*.rs` (until released); nothing was reserved: work on other paths, or ask alpha-agent to release them"
        );
    }

    #[test]
    fn project_paths_from_a_subfolder_and_absolute() {
        let d = tempfile::tempdir().unwrap();
        let project = std::fs::canonicalize(d.path()).unwrap();
        let root = project.join("_polis");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::create_dir_all(project.join("src/a")).unwrap();
        let sub = project.join("src/a");
        assert_eq!(project_path(&root, &sub, "x.rs").unwrap(), "src/a/x.rs");
        assert_eq!(project_path(&root, &sub, "../*.rs").unwrap(), "src/*.rs");
        assert_eq!(
            project_path(
                &root,
                &sub,
                project.join(".github/ci.yml").to_str().unwrap()
            )
            .unwrap(),
            ".github/ci.yml"
        );
        assert!(matches!(
            project_path(&root, &sub, "/etc/passwd"),
            Err(PathError::Outside(_))
        ));
        assert!(matches!(
            project_path(&root, &project, "../elsewhere"),
            Err(PathError::Outside(_))
        ));
        // From outside the project, relative paths are the project root's.
        assert_eq!(project_path(&root, Path::new("/"), "docs").unwrap(), "docs");
    }

    fn at(stamp: &str) -> PolisTime {
        PolisTime::at_stamp(crate::protocol::clock::PolisZone::default(), stamp).unwrap()
    }

    #[test]
    fn ended_contract_releases_its_own_and_the_owners_unlinked_reservations() {
        let (_d, root, w) = polis_with(&["alpha-agent", "bravo-agent"]);
        std::fs::write(
            root.join("contracts/open/fix-login.md"),
            "---\nowner: alpha-agent\nstatus: claimed\n---\n",
        )
        .unwrap();
        let t0 = at("2026-03-02 10:00");
        let req = |who: &str, path: &str, contract: Option<&str>| ReserveRequest {
            citizen: who.into(),
            paths: vec![path.into()],
            ttl_minutes: None,
            note: None,
            contract: contract.map(str::to_string),
        };
        reserve(
            &root,
            &w,
            &t0,
            &req("alpha-agent", "src", Some("fix-login")),
        )
        .unwrap();
        reserve(&root, &w, &t0, &req("alpha-agent", "docs", None)).unwrap();
        reserve(&root, &w, &t0, &req("bravo-agent", "tests", None)).unwrap();
        // The settle moved the contract out of open/ before calling this.
        std::fs::remove_file(root.join("contracts/open/fix-login.md")).unwrap();
        let t1 = at("2026-03-02 11:00");
        let done =
            release_for_ended_contract(&root, &w, &t1, "fix-login", Some("alpha-agent")).unwrap();
        assert_eq!(done.dropped.len(), 2, "{:?}", done.dropped);
        let left = list(&root, &t1, &flags).unwrap();
        assert_eq!(left.len(), 1);
        assert_eq!(left[0].citizen.as_deref(), Some("bravo-agent"));
        // Nothing left to release: nothing written.
        let again =
            release_for_ended_contract(&root, &w, &t1, "fix-login", Some("alpha-agent")).unwrap();
        assert_eq!(again.outcome, WriteOutcome::Unchanged);
    }
}
