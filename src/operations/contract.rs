//! The contract lifecycle as agents run it: open, claim, settle, abandon, show, list.
//!
//! Each reads only the files it needs (never the settled folder as a whole), asks
//! `protocol::contracts::contract` for the new bytes, and writes through the [`Writer`]:
//! - a new contract with `create_new`, so two openers of one title get `x` and `x-2`;
//! - a claim under the contract file's advisory lock with compare-before-replace, so of any
//!   number of simultaneous claimers exactly one wins and an agent's hand edit is never lost;
//! - a settle or abandon as an edit in `open/`, then one rename into the other folder: a crash
//!   between the two leaves the file in `open/` (with `status: settled`), never in two folders,
//!   and running the command again finishes the move.

use crate::fs::snapshot;
use crate::fs::writer::{FileLock, WriteError, Writer};
use crate::operations::arg::{Arg, Words};
use crate::operations::chronicle::{self, Appended};
use crate::operations::edit::{command_edit_took, command_move_took};
use crate::operations::error::{on_one_line, one_line, OpError};
use crate::operations::guardrail;
use crate::operations::lesson::{self, Filed, LessonRequest};
use crate::protocol::clock::PolisTime;
use crate::protocol::contracts::contract::{self as rules, NewContract};
use crate::protocol::finding::quoted;
use crate::protocol::frontmatter::{self, Record};
use crate::protocol::layout::{self, ContractFolder};
use crate::yaml::Value;
use std::path::Path;

/// Set to make `settle` and `abandon` abort the process between writing the file and moving it
/// (the crash test of the "never in two folders" rule).
pub const CRASH_BEFORE_MOVE_ENV: &str = "POLISD_TEST_CRASH_BEFORE_MOVE";

/// Set to make `settle` abort the process just after its `settled contract` line (the crash
/// test of a rerun that finds the settlement recorded: nothing it asked for may be missing).
pub const CRASH_AFTER_LINE_ENV: &str = "POLISD_TEST_CRASH_AFTER_LINE";

/// How often a claim or settle starts over when the file changed under it.
const ATTEMPTS: usize = 8;

pub use crate::operations::lookup::{check_slug, find};

fn read(root: &Path, rel: &str) -> Result<Option<(String, Record)>, OpError> {
    let Some(text) = snapshot::read_text(root, rel, Some(snapshot::MAX_RECORD_BYTES))? else {
        return Ok(None);
    };
    let record = frontmatter::parse(&text).map_err(|e| OpError::Unreadable {
        path: rel.to_string(),
        why: e.to_string(),
    })?;
    if record.fields.as_map().is_none_or(|m| m.is_empty()) {
        return Err(OpError::Unreadable {
            path: rel.to_string(),
            why: "the file does not start with a `---` fenced YAML block".into(),
        });
    }
    Ok(Some((text, record)))
}

/// The contract `id`, found at `rel` in `folder`, locked and read while it is open: `Ended` (with
/// its owner) once it left `open/`, `None` when it moved or vanished between the listing and
/// the lock (the caller looks again).
fn lock_open(
    writer: &Writer,
    id: &str,
    folder: ContractFolder,
    rel: &str,
) -> Result<Option<(FileLock, String, Record)>, OpError> {
    let root = writer.root();
    if folder != ContractFolder::Open {
        let owner = read(root, rel)?.and_then(|(_, r)| text_field(&r, "owner"));
        return Err(OpError::Ended {
            id: id.to_string(),
            folder: folder.name(),
            by: owner,
        });
    }
    let lock = match writer.lock_file(rel) {
        Ok(lock) => lock,
        Err(WriteError::Missing(_)) => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    Ok(read(root, rel)?.map(|(text, record)| (lock, text, record)))
}

fn text_field(record: &Record, key: &str) -> Option<String> {
    match record.get(key) {
        Value::Null => None,
        v => Some(v.python_str()).filter(|s| !s.trim().is_empty()),
    }
}

/// The contract's `owner:`: `None` when unset (null or blank), refused when the line holds
/// anything but a citizen id (a yes/no, a list, a name with spaces): no command guesses whose
/// it is, and the refusal is the file's, not the caller's.
fn owner_of(record: &Record, id: &str) -> Result<Option<String>, OpError> {
    let shown = match record.get("owner") {
        Value::Null => return Ok(None),
        Value::Str(s) if s.trim().is_empty() => return Ok(None),
        Value::Str(s) if layout::is_agent_id(s) => return Ok(Some(s.clone())),
        Value::Str(s) => format!("`{}`", quoted(s)),
        Value::Bool(_) => "a yes/no value".to_string(),
        Value::Seq(_) => "a list".to_string(),
        Value::Map(_) => "a mapping".to_string(),
        other => format!("`{}`", quoted(&other.python_str())),
    };
    Err(OpError::BadOwner {
        id: id.to_string(),
        shown,
    })
}

/// A settle or abandon interrupted between its edit and its move leaves the file in `open/`
/// with the ending's status: only that ending, run again, finishes it (`except`); a claim
/// would revive it, the other ending overturn it.
fn check_not_ending(id: &str, record: &Record, except: Option<&str>) -> Result<(), OpError> {
    let status = text_field(record, "status");
    let Some(ending) = status
        .as_deref()
        .filter(|s| matches!(*s, "settled" | "abandoned") && Some(*s) != except)
    else {
        return Ok(());
    };
    Err(OpError::Interrupted {
        id: id.to_string(),
        settled: ending == "settled",
    })
}

fn tags_field(record: &Record) -> Vec<String> {
    rules::tags_of(record.get("required_tags")).0
}

// ---------------------------------------------------------------------------------------------
// open

/// What `contract open` asks for.
#[derive(Debug, Clone, Default)]
pub struct OpenRequest {
    pub title: String,
    pub by: String,
    pub tags: Vec<String>,
    pub stakes: String,
    pub cost_ceiling: String,
    pub deadline: Option<String>,
    pub accept: Vec<String>,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct Opened {
    pub contract_id: String,
    pub path: String,
    /// Acceptance criteria inherited from guardrails.
    pub inherited_guardrails: usize,
    pub chronicle: Appended,
}

/// Opens a contract: the reference's id rule (a slug of the title, `-2`, `-3`… on a clash in
/// any of the three folders), its frontmatter and body, the matching guardrails as acceptance
/// criteria, and an `opened contract` line.
pub fn open(writer: &Writer, now: &PolisTime, req: &OpenRequest) -> Result<Opened, OpError> {
    let root = writer.root();
    if req.title.trim().is_empty() {
        return Err(OpError::Empty {
            what: "the title",
            fix: Words::asking("pass ", Arg::Title, " \"what needs doing\""),
        });
    }
    // The title is the body's `# ` heading and each criterion a `- ` item of its list: a line
    // break in either would write headings and (checked) criteria of its own.
    one_line(
        "the title",
        Arg::Title,
        &req.title,
        "write it on one line, and the detail in the contract's body once it is opened",
    )?;
    for c in &req.accept {
        one_line(
            "an acceptance criterion",
            Arg::Accept,
            c,
            Words::asking(
                "write each on one line, one ",
                Arg::Accept,
                " per criterion",
            ),
        )?;
    }
    if let Some(d) = &req.deadline {
        if !crate::protocol::input::is_deadline(d) {
            return Err(OpError::BadId {
                what: "deadline",
                value: d.clone(),
                rule: Words::asking(
                    "write ",
                    Arg::Deadline,
                    " as YYYY-MM-DD or \"YYYY-MM-DD HH:MM\"",
                ),
            });
        }
    }
    chronicle::require_citizen(root, &req.by)?;
    for tag in &req.tags {
        check_slug("tag", tag)?;
    }
    let mut criteria = req.accept.clone();
    let mut inherited = 0;
    for g in guardrail::matching(root, &req.tags) {
        let c = crate::protocol::contracts::guardrail::criterion(&g);
        if !criteria.contains(&c) {
            criteria.push(c);
            inherited += 1;
        }
    }
    chronicle::check_appendable(writer)?;
    let base = layout::slugify(&req.title, None, "contract");
    // Room for the reviews' file names too (and for a `-2` suffix), so every contract polisd
    // opens can be reviewed.
    let too_long = |id: &str| {
        OpError::BadId {
        what: "contract id",
        value: format!("{}…", id.chars().take(40).collect::<String>()),
        rule: "made from the title, it is too long for a file name; pass a shorter title and put the detail in the contract's body".into(),
    }
    };
    if !layout::fits_review_file_name(&base) {
        return Err(too_long(&base));
    }
    let taken = |id: &str| {
        ContractFolder::ALL.into_iter().any(|f| {
            layout::contract_path(f, id)
                .is_some_and(|rel| std::fs::symlink_metadata(root.join(rel)).is_ok())
        })
    };
    for _ in 0..ATTEMPTS {
        let id = layout::unique_id(&base, taken);
        if !layout::fits_review_file_name(&id) {
            return Err(too_long(&id));
        }
        let new = NewContract {
            contract_id: id.clone(),
            title: req.title.clone(),
            opened_by: req.by.clone(),
            opened_at: now.second_stamp(),
            stakes: req.stakes.clone(),
            required_tags: req.tags.clone(),
            deadline: req.deadline.clone(),
            cost_ceiling: req.cost_ceiling.clone(),
            acceptance_criteria: criteria.clone(),
        };
        let text = rules::render_new(&new)?;
        let rel = crate::operations::lookup::contract_rel(ContractFolder::Open, &id)?;
        if !writer.create_new(&rel, text.as_bytes())? {
            continue; // another opener took this id a moment ago
        }
        let link = rel.trim_end_matches(".md").to_string();
        let chronicle = chronicle::append(
            writer,
            now,
            &req.by,
            "opened contract",
            Some(&link),
            &req.title,
        )?;
        return Ok(Opened {
            contract_id: id,
            path: rel,
            inherited_guardrails: inherited,
            chronicle,
        });
    }
    Err(OpError::Busy(format!("contracts/open/{base}*.md")))
}

// ---------------------------------------------------------------------------------------------
// claim

#[derive(Debug, Clone, serde::Serialize)]
pub struct Claimed {
    pub contract_id: String,
    pub owner: String,
    pub path: String,
    /// The citizen already owned it; nothing was written.
    pub already_owned: bool,
    /// The owner `--force` took it from.
    pub took_over_from: Option<String>,
    pub chronicle: Option<Appended>,
    /// The router recommended someone else: the override recorded in `routing.override`.
    pub overrode: Option<Override>,
}

/// A claim against the router's recommendation (skill seed, "any citizen may override by
/// claiming and noting why"): who, whom the router recommended, and why.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Override {
    pub by: String,
    pub overrode: String,
    pub why: Option<String>,
}

/// Claims an open contract for `citizen`: sets `owner` and `status: claimed` and appends
/// `claimed contract`, all under the contract file's lock, so that of any number of
/// simultaneous claimers exactly one wins; the others are told who owns it.
pub fn claim(
    writer: &Writer,
    now: &PolisTime,
    id: &str,
    citizen: &str,
    force: bool,
    reason: Option<&str>,
) -> Result<Claimed, OpError> {
    let root = writer.root();
    if let Some(r) = reason {
        on_one_line("the reason", Arg::Reason, r)?;
    }
    chronicle::require_citizen(root, citizen)?;
    let reason = reason
        .map(|r| r.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|r| !r.is_empty());
    chronicle::check_appendable(writer)?;
    let _transition = writer.transition_lock()?;
    for _ in 0..ATTEMPTS {
        let (folder, rel) = find(root, id)?;
        let Some((_lock, text, record)) = lock_open(writer, id, folder, &rel)? else {
            continue; // settled, abandoned or replaced meanwhile
        };
        check_not_ending(id, &record, None)?;
        let owner = match owner_of(&record, id) {
            Ok(owner) => owner,
            Err(_) if force => None, // taken over: the line is replaced below
            Err(e) => return Err(e),
        };
        if owner.as_deref() == Some(citizen) {
            // A claim killed between its edit and its line left the file naming the claimer
            // and no line: under the locks no other run is half-way, so the line is written now.
            let link = rel.trim_end_matches(".md");
            let line = if chronicle::has_line_of(root, Some(citizen), "claimed contract", link) {
                None
            } else {
                Some(chronicle::append(
                    writer,
                    now,
                    citizen,
                    "claimed contract",
                    Some(link),
                    "-",
                )?)
            };
            return Ok(Claimed {
                contract_id: id.to_string(),
                owner: citizen.to_string(),
                already_owned: line.is_none(),
                path: rel,
                took_over_from: None,
                chronicle: line,
                overrode: None,
            });
        }
        if let Some(owner) = &owner {
            if !force {
                return Err(OpError::AlreadyOwned {
                    id: id.to_string(),
                    owner: owner.clone(),
                });
            }
        }
        let new = rules::set_fields(
            &text,
            &[
                ("owner", Value::Str(citizen.to_string())),
                ("status", Value::Str("claimed".into())),
            ],
        )
        .ok_or_else(|| OpError::Unreadable {
            path: rel.clone(),
            why: "no frontmatter".into(),
        })?;
        let recommended = crate::protocol::contracts::contract::Contract::parse(&text)
            .ok()
            .and_then(|c| c.routing.recommended_by_router)
            .filter(|r| r != citizen);
        let overrode = recommended.map(|r| Override {
            by: citizen.to_string(),
            overrode: r,
            why: reason.clone(),
        });
        // The override goes into `routing.override` when the block can be spliced safely;
        // the chronicle line records it either way.
        let new = match &overrode {
            Some(o) => {
                rules::set_override(&new, &o.by, &o.overrode, o.why.as_deref()).unwrap_or(new)
            }
            None => new,
        };
        if !command_edit_took(writer.compare_and_replace(&rel, text.as_bytes(), new.as_bytes())?) {
            continue;
        }
        let link = rel.trim_end_matches(".md").to_string();
        let note = match &owner {
            Some(prev) => format!("took over from {prev} (--force)"),
            None => "-".to_string(),
        };
        let line = chronicle::append(writer, now, citizen, "claimed contract", Some(&link), &note)?;
        if let Some(o) = &overrode {
            chronicle::append(
                writer,
                now,
                citizen,
                "overrode routing",
                Some(&link),
                &format!(
                    "recommended {}; {}",
                    o.overrode,
                    o.why.as_deref().unwrap_or("no reason given")
                ),
            )?;
        }
        return Ok(Claimed {
            contract_id: id.to_string(),
            owner: citizen.to_string(),
            path: rel,
            already_owned: false,
            took_over_from: owner,
            chronicle: Some(line),
            overrode,
        });
    }
    Err(OpError::Busy(format!("contracts/open/{id}.md")))
}

// ---------------------------------------------------------------------------------------------
// settle and abandon

/// A lesson filed with a settlement.
#[derive(Debug, Clone)]
pub struct SettleLesson {
    pub text: String,
    pub impact: i64,
}

/// What `contract settle` asks for.
#[derive(Debug, Clone, Default)]
pub struct SettleRequest {
    pub id: String,
    pub quality: i64,
    pub minutes: Option<u32>,
    /// The settling owner; default the contract's owner.
    pub by: Option<String>,
    pub outcome: Option<String>,
    pub lesson: Option<SettleLesson>,
    /// Why no lesson is filed: settling without a lesson is refused unless this says why
    /// (recorded in the Settlement section, counted by reflection).
    pub no_lesson: Option<String>,
    /// A person's decision to settle a `stakes: high` contract without a review sign-off:
    /// `(person, why)`, recorded in the Settlement section and the chronicle line.
    pub review_override: Option<(String, String)>,
    /// Rebuild `routing_stats.yml` when no daemon holds this polis (the daemon does it
    /// otherwise). Callers inside the daemon pass `false`.
    pub reconcile_without_daemon: bool,
    /// `(citizen, reason)` pairs written as `### Suggested next citizen` blocks into the
    /// Settlement; the daemon dispatches them.
    pub suggest: Vec<(String, String)>,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct Settled {
    pub contract_id: String,
    pub owner: String,
    pub quality_score: u8,
    pub path: String,
    /// A previous settle had been interrupted; this run finished it.
    pub resumed: bool,
    pub chronicle: Option<Appended>,
    pub lesson: Option<Filed>,
    /// `Some(true)` when routing_stats.yml was rebuilt and changed, `None` when a daemon
    /// runs (it reconciles) or reconciling was not asked for.
    pub reconciled: Option<bool>,
    /// Why `routing_stats.yml` could not be rebuilt here; the settlement stands all the same
    /// (a daemon or `polisd reconcile` rebuilds the stats once that is fixed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reconcile_error: Option<String>,
    /// What the end of the contract released in `reservations.yml`.
    pub reservations: ReleasedReservations,
}

/// The reservations the end of a contract released (`operations::reservation`): those made
/// for it, and its owner's made for no contract when the owner has no other open one.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct ReleasedReservations {
    pub paths: Vec<String>,
    /// Why they could not be released now (the daemon releases them on its next pass); the
    /// contract has ended all the same.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Files the lesson a settle was given, under the settled contract's tags (`general` when it
/// has none); `None` when it was filed already (by `lesson file`, or a settle run before), in
/// which case it stays as it is.
fn file_settle_lesson(
    writer: &Writer,
    now: &PolisTime,
    settled_rel: &str,
    author: &str,
    id: &str,
    lesson: &SettleLesson,
) -> Result<Option<Filed>, OpError> {
    let record = read(writer.root(), settled_rel)?.map(|(_, r)| r);
    // Only what is a tag: a hand-written `../x` must not become the lesson's folder, nor fail
    // the settle now that the contract has moved.
    let tags: Vec<String> = record
        .as_ref()
        .map(tags_field)
        .unwrap_or_default()
        .into_iter()
        .filter(|t| layout::is_slug(t))
        .collect();
    let tags = if tags.is_empty() {
        vec!["general".to_string()]
    } else {
        tags
    };
    let request = LessonRequest {
        by: author.to_string(),
        tags,
        contract: Some(id.to_string()),
        impact: lesson.impact,
        text: lesson.text.clone(),
    };
    match lesson::file_locked(writer, now, &request) {
        Ok(filed) => Ok(Some(filed)),
        Err(OpError::LessonFiled { .. }) => Ok(None),
        Err(e) => Err(e),
    }
}

fn release_reservations(
    writer: &Writer,
    now: &PolisTime,
    id: &str,
    owner: Option<&str>,
) -> ReleasedReservations {
    match crate::operations::reservation::release_for_ended_contract(
        writer.root(),
        writer,
        now,
        id,
        owner,
    ) {
        Ok(done) => ReleasedReservations {
            paths: done
                .dropped
                .into_iter()
                .flat_map(|(v, _)| v.paths)
                .collect(),
            error: None,
        },
        Err(e) => ReleasedReservations {
            paths: Vec::new(),
            error: Some(e.to_string()),
        },
    }
}

/// A claimed contract ends by its owner's hand: another citizen takes it over first with
/// `claim --force` (on record in the chronicle), so a settle never quietly moves the credit
/// and an abandon never drops someone else's work. An unclaimed contract may be ended by any
/// citizen.
fn check_owner(
    id: &str,
    owner: Option<&str>,
    by: &str,
    action: &'static str,
) -> Result<(), OpError> {
    match owner {
        Some(owner) if owner != by => Err(OpError::OwnedByOther {
            id: id.to_string(),
            owner: owner.to_string(),
            by: by.to_string(),
            action,
        }),
        _ => Ok(()),
    }
}

/// The ending's chronicle line by `author`; when no citizen can sign it (the owner left, or an
/// unclaimed contract's opener did), polisd's own system line, which the citizens' path
/// refuses to write as a system identity.
fn ending_line(
    writer: &Writer,
    now: &PolisTime,
    author: &str,
    verb: &str,
    link: &str,
    note: &str,
) -> Result<Option<Appended>, OpError> {
    if author != layout::DAEMON_ID {
        return chronicle::append(writer, now, author, verb, Some(link), note).map(Some);
    }
    let appended = chronicle::append_daemon(writer, now, verb, Some(link), note)?;
    let line = crate::protocol::chronicle::system_line(now, author, verb, Some(link), note);
    Ok(appended.then(|| Appended {
        line: line.trim_end().to_string(),
        warnings: Vec::new(),
    }))
}

fn crash_hook() {
    if std::env::var_os(CRASH_BEFORE_MOVE_ENV).is_some() {
        eprintln!("polisd: {CRASH_BEFORE_MOVE_ENV} is set: aborting between write and move");
        std::process::abort();
    }
}

fn crash_after_line_hook() {
    if std::env::var_os(CRASH_AFTER_LINE_ENV).is_some() {
        eprintln!("polisd: {CRASH_AFTER_LINE_ENV} is set: aborting after the settled line");
        std::process::abort();
    }
}

/// The end state of a settle or abandon: which folder, which status, which verb.
struct Ending {
    folder: ContractFolder,
    status: &'static str,
    verb: &'static str,
}

const SETTLE: Ending = Ending {
    folder: ContractFolder::Settled,
    status: "settled",
    verb: "settled contract",
};
const ABANDON: Ending = Ending {
    folder: ContractFolder::Abandoned,
    status: "abandoned",
    verb: "abandoned contract",
};

/// Where an ending left the contract, and who it was for.
struct Moved {
    rel: String,
    owner: Option<String>,
    resumed: bool,
    /// The chronicle already records this ending (a replay).
    recorded: bool,
}

/// Edits the open contract with `edit` (given its text and record; `Err` refuses), then moves
/// it to the ending's folder by one rename, all under the file's lock. A file already in the
/// ending's folder, or still in `open/` with the ending's status (an interrupted run), is
/// finished instead of refused.
fn end_contract(
    writer: &Writer,
    id: &str,
    ending: &Ending,
    edit: &dyn Fn(&str, &Record) -> Result<String, OpError>,
) -> Result<Moved, OpError> {
    let root = writer.root();
    let target = crate::operations::lookup::contract_rel(ending.folder, id)?;
    let link = target.trim_end_matches(".md").to_string();
    for _ in 0..ATTEMPTS {
        let (folder, rel) = find(root, id)?;
        if folder == ending.folder {
            // Moved by an earlier run: it is done unless its chronicle line is missing. Under
            // the transition lock no other run is half-way, so a missing line means a crash.
            let owner = read(root, &rel)?.and_then(|(_, r)| text_field(&r, "owner"));
            let recorded = chronicle::has_line(root, ending.verb, &link);
            if recorded {
                return Err(OpError::Ended {
                    id: id.to_string(),
                    folder: folder.name(),
                    by: owner,
                });
            }
            return Ok(Moved {
                rel,
                owner,
                resumed: true,
                recorded,
            });
        }
        let Some((_lock, text, record)) = lock_open(writer, id, folder, &rel)? else {
            continue; // settled, abandoned or replaced meanwhile
        };
        check_not_ending(id, &record, Some(ending.status))?;
        let resumed = text_field(&record, "status").as_deref() == Some(ending.status);
        let owner;
        if resumed {
            owner = text_field(&record, "owner");
        } else {
            let new = edit(&text, &record)?;
            // A move that cannot land (another copy already there, a linked folder) is
            // refused now: after the edit it would leave a settled contract in `open/`.
            writer.check_move_target(&rel, &target)?;
            owner = frontmatter::parse(&new)
                .ok()
                .and_then(|r| text_field(&r, "owner"));
            if !command_edit_took(writer.compare_and_replace(
                &rel,
                text.as_bytes(),
                new.as_bytes(),
            )?) {
                continue;
            }
        }
        crash_hook();
        if !command_move_took(writer.rename_within(&rel, &target)?) {
            continue;
        }
        let recorded = resumed && chronicle::has_line(root, ending.verb, &link);
        return Ok(Moved {
            rel: target,
            owner,
            resumed,
            recorded,
        });
    }
    Err(OpError::Busy(format!("contracts/open/{id}.md")))
}

/// Settles an open contract: `status: settled`, `settled_at`, `quality_score`,
/// `actual_minutes` and the owner, a `## Settlement` section, the move to `settled/` by
/// rename, a `settled contract` line, the optional lesson, and (without a daemon) the stats.
/// Deliberate difference: a quality outside 1–5 is refused (the reference clamps it).
pub fn settle(writer: &Writer, now: &PolisTime, req: &SettleRequest) -> Result<Settled, OpError> {
    let root = writer.root();
    if !(1..=5).contains(&req.quality) {
        return Err(OpError::Quality(req.quality));
    }
    let quality = req.quality as u8;
    if let Some(by) = &req.by {
        chronicle::require_citizen(root, by)?;
    }
    if let Some(l) = &req.lesson {
        if !(1..=5).contains(&l.impact) {
            return Err(OpError::Impact(l.impact));
        }
    }
    // Each is one line of the Settlement section, or the lesson's heading and paragraph. (The
    // outcome is the section's body, the owner's own words and blocks: several lines are fine.)
    if let Some(l) = &req.lesson {
        on_one_line("the lesson", Arg::Lesson, &l.text)?;
    }
    if let Some(w) = &req.no_lesson {
        on_one_line("the reason for no lesson", Arg::NoLesson, w)?;
    }
    if let Some((person, why)) = &req.review_override {
        on_one_line("the review override", Arg::ReviewOverride, person)?;
        on_one_line("the review override", Arg::ReviewOverride, why)?;
    }
    for (_, reason) in &req.suggest {
        on_one_line("a suggestion", Arg::Suggest, reason)?;
    }
    let no_lesson = req
        .no_lesson
        .as_deref()
        .map(str::trim)
        .filter(|w| !w.is_empty());
    if req.lesson.is_none() && no_lesson.is_none() {
        return Err(OpError::NoLesson);
    }
    if let Some((person, why)) = &req.review_override {
        if person.trim().is_empty() || why.trim().is_empty() {
            return Err(OpError::Empty {
                what: "the review override",
                // Only the command line takes an override: a person's decision, never a tool's.
                fix:
                    "write --review-override \"PERSON: WHY\", naming the person who decides and why"
                        .into(),
            });
        }
        // Waiving the chavruta review is a person's call: a citizen naming itself (or another
        // citizen) there would be an agent waiving the review its work needs.
        let person = person.trim();
        if layout::is_system_citizen(person) || chronicle::is_registered(root, person) {
            return Err(OpError::Refused(format!(
                "`{person}` is a citizen, and a review override is a person's decision: name the person who decided (--review-override \"NAME: WHY\"), or get another citizen's sign-off (`polisd review {} --as <reviewer> --decision signed_off`)",
                req.id
            )));
        }
    }
    for (citizen, reason) in &req.suggest {
        if !layout::is_agent_id(citizen) {
            return Err(OpError::BadId {
                what: "suggested citizen",
                value: citizen.clone(),
                rule: Words::asking(
                    "write ",
                    Arg::Suggest,
                    " CITIZEN:REASON with a citizen's agent id",
                ),
            });
        }
        if reason.trim().is_empty() {
            return Err(OpError::Empty {
                what: "the suggestion's reason",
                fix: Words::asking(
                    "write ",
                    Arg::Suggest,
                    " CITIZEN:REASON, saying what needs doing and why",
                ),
            });
        }
    }
    chronicle::check_appendable(writer)?;
    let at = now.second_stamp();
    let edit = |text: &str, record: &Record| -> Result<String, OpError> {
        let current = owner_of(record, &req.id)?;
        if let Some(by) = &req.by {
            check_owner(&req.id, current.as_deref(), by, "settles")?;
        }
        let owner = req
            .by
            .clone()
            .or(current)
            .ok_or_else(|| OpError::NoOwner(req.id.clone()))?;
        chronicle::require_citizen(root, &owner)?;
        let stakes = text_field(record, "stakes");
        crate::operations::review::settle_gate(
            root,
            &req.id,
            &owner,
            stakes.as_deref(),
            req.review_override.is_some(),
        )?;
        let at = rules::ending_stamp(record, &at, now.zone);
        let mut updates = vec![
            ("status", Value::Str("settled".into())),
            ("settled_at", Value::Str(at.clone())),
            ("quality_score", Value::Int(quality.into())),
        ];
        if let Some(m) = req.minutes {
            updates.push(("actual_minutes", Value::Int(m.into())));
        }
        updates.push(("owner", Value::Str(owner.clone())));
        let mut new = rules::set_fields(text, &updates).ok_or_else(|| OpError::Unreadable {
            path: format!("contracts/open/{}.md", req.id),
            why: "no frontmatter".into(),
        })?;
        if !rules::has_settlement_section(&new) {
            let section = rules::settlement_section(
                &owner,
                &at,
                quality,
                req.minutes,
                req.outcome.as_deref(),
            );
            new = rules::append_section(&new, &section);
        }
        if let Some(why) = no_lesson {
            new = rules::append_section(&new, &format!("\nNo lesson: {why}\n"));
        }
        if let Some((person, why)) = &req.review_override {
            new = rules::append_section(
                &new,
                &format!("\nReview overridden by {}: {}\n", person.trim(), why.trim()),
            );
        }
        for (citizen, reason) in &req.suggest {
            let block = crate::protocol::contracts::handoff::render_suggestion(citizen, reason);
            new = rules::append_section(&new, &block);
        }
        Ok(new)
    };
    // With no daemon, the stats are rebuilt here from the ledger of settled contracts, and
    // most of that work needs no wait for the contract: the ledger file is read and decoded,
    // and (when no other command holds the ledger's lock) the settled folder listed and each
    // file's fingerprint taken, while the contract is edited and moved; the rest (checking
    // each record against its file, the stats) runs while the chronicle line and the lesson
    // are written. Each of those waits on the disk.
    let reconcile_alone = req.reconcile_without_daemon && !daemon_running(root);
    std::thread::scope(|scope| {
        let early = reconcile_alone.then(|| crate::operations::AloneReconcile::start(scope, root));
        // Held from the check to the chronicle line; released before the reconcile is joined,
        // since another settle may hold the ledger's lock while it waits for this one.
        let transition = writer.transition_lock()?;
        let moved = end_contract(writer, &req.id, &SETTLE, &edit)?;
        let reconcile = early.map(|early| {
            let own = moved.rel.clone();
            scope.spawn(move || early.finish(writer, Some(&own)))
        });
        let owner = moved
            .owner
            .clone()
            .or_else(|| req.by.clone())
            .unwrap_or_default();
        let link = moved.rel.trim_end_matches(".md").to_string();
        let author = if chronicle::is_registered(root, &owner) {
            owner.clone()
        } else {
            layout::DAEMON_ID.to_string()
        };
        // The lesson is filed before the settlement's line: a run killed between the two
        // leaves the line missing, which a rerun finishes (and finds the lesson filed), where
        // the other order left a recorded settlement whose rerun is refused and the lesson lost.
        // A lesson refused is reported after the line, so it never keeps the settlement
        // unrecorded.
        let lesson = req.lesson.as_ref().map_or(Ok(None), |l| {
            file_settle_lesson(writer, now, &moved.rel, &author, &req.id, l)
        });
        let chronicle = if moved.recorded {
            None
        } else {
            ending_line(writer, now, &author, "settled contract", &link, &{
                let mut note = format!("quality {quality}");
                if no_lesson.is_some() && req.lesson.is_none() {
                    note.push_str(&format!(
                        "; {}",
                        crate::protocol::chronicle::activity::NO_LESSON_NOTE
                    ));
                }
                if let Some((person, _)) = &req.review_override {
                    note.push_str(&format!("; review overridden by {}", person.trim()));
                }
                note
            })?
        };
        crash_after_line_hook();
        let lesson = lesson?;
        let reservations = release_reservations(
            writer,
            now,
            &req.id,
            Some(owner.as_str()).filter(|o| !o.is_empty()),
        );
        drop(transition);
        // The settlement is made by now: a rebuild that fails is reported with it, not as a
        // refusal of it.
        let (reconciled, reconcile_error) =
            match reconcile.map(|r| r.join().unwrap_or_else(|e| std::panic::resume_unwind(e))) {
                Some(Ok(done)) => (
                    done.map(|(done, _)| {
                        done.outcome == Some(crate::fs::writer::WriteOutcome::Written)
                    }),
                    None,
                ),
                Some(Err(e)) => (None, Some(e.to_string())),
                None => (None, None),
            };
        Ok(Settled {
            contract_id: req.id.clone(),
            owner,
            quality_score: quality,
            path: moved.rel,
            resumed: moved.resumed,
            chronicle,
            lesson,
            reconciled,
            reconcile_error,
            reservations,
        })
    })
}

/// Whether a daemon holds this polis's lock (it then reconciles on its own).
pub fn daemon_running(root: &Path) -> bool {
    crate::fs::state::daemon_running(root)
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct Abandoned {
    pub contract_id: String,
    pub path: String,
    pub resumed: bool,
    pub chronicle: Option<Appended>,
    /// What the end of the contract released in `reservations.yml`.
    pub reservations: ReleasedReservations,
}

/// Abandons an open contract: `status: abandoned`, `settled_at`, `abandoned_reason`, the move
/// to `abandoned/` by rename and an `abandoned contract` line by `by` (default: the owner,
/// else the opener).
pub fn abandon(
    writer: &Writer,
    now: &PolisTime,
    id: &str,
    reason: Option<&str>,
    by: Option<&str>,
) -> Result<Abandoned, OpError> {
    let root = writer.root();
    if let Some(r) = reason {
        on_one_line("the reason", Arg::Reason, r)?;
    }
    if let Some(by) = by {
        chronicle::require_citizen(root, by)?;
    }
    chronicle::check_appendable(writer)?;
    let _transition = writer.transition_lock()?;
    let at = now.second_stamp();
    let author = std::cell::RefCell::new(by.map(str::to_string));
    let edit = |text: &str, record: &Record| -> Result<String, OpError> {
        if let Some(by) = by {
            // An owner line naming no citizen holds nobody's claim.
            let owner = owner_of(record, id).ok().flatten();
            check_owner(id, owner.as_deref(), by, "abandons")?;
        }
        if author.borrow().is_none() {
            let who = text_field(record, "owner")
                .or_else(|| text_field(record, "opened_by"))
                .filter(|w| chronicle::is_registered(root, w))
                .ok_or(OpError::Empty {
                    what: "the author",
                    fix: Words::asking(
                        "the contract has no registered owner or opener; pass ",
                        Arg::Citizen,
                        " <your id>",
                    ),
                })?;
            *author.borrow_mut() = Some(who);
        }
        let mut updates = vec![
            ("status", Value::Str("abandoned".into())),
            (
                "settled_at",
                Value::Str(rules::ending_stamp(record, &at, now.zone)),
            ),
        ];
        if let Some(r) = reason.map(str::trim).filter(|r| !r.is_empty()) {
            updates.push(("abandoned_reason", Value::Str(r.to_string())));
        }
        rules::set_fields(text, &updates).ok_or_else(|| OpError::Unreadable {
            path: format!("contracts/open/{id}.md"),
            why: "no frontmatter".into(),
        })
    };
    let moved = end_contract(writer, id, &ABANDON, &edit)?;
    let reservations = release_reservations(writer, now, id, moved.owner.as_deref());
    // A resumed run did not edit, so it picks the author the first run would have: the
    // owner, else the opener.
    let opener = || {
        read(root, &moved.rel)
            .ok()
            .flatten()
            .and_then(|(_, r)| text_field(&r, "opened_by"))
    };
    let author = author
        .into_inner()
        .or(moved.owner.clone())
        .filter(|w| chronicle::is_registered(root, w))
        .or_else(|| opener().filter(|w| chronicle::is_registered(root, w)))
        .unwrap_or_else(|| layout::DAEMON_ID.to_string());
    let link = moved.rel.trim_end_matches(".md").to_string();
    let chronicle = if moved.recorded {
        None
    } else {
        ending_line(
            writer,
            now,
            &author,
            "abandoned contract",
            &link,
            reason.unwrap_or("-"),
        )?
    };
    Ok(Abandoned {
        contract_id: id.to_string(),
        path: moved.rel,
        resumed: moved.resumed,
        chronicle,
        reservations,
    })
}

// ---------------------------------------------------------------------------------------------
// show and list

#[derive(Debug, Clone, serde::Serialize)]
pub struct Shown {
    pub contract_id: String,
    pub state: &'static str,
    pub path: String,
    pub text: String,
}

/// One contract's file, wherever it is.
pub fn show(root: &Path, id: &str) -> Result<Shown, OpError> {
    let (folder, rel) = find(root, id)?;
    let text = snapshot::read_text(root, &rel, Some(snapshot::MAX_RECORD_BYTES))?
        .ok_or_else(|| OpError::NoContract(id.to_string()))?;
    Ok(Shown {
        contract_id: id.to_string(),
        state: folder.name(),
        path: rel,
        text,
    })
}

/// A line of `contract list`.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Summary {
    pub contract_id: String,
    pub title: String,
    pub status: String,
    pub owner: Option<String>,
    pub required_tags: Vec<String>,
    pub path: String,
}

/// The contracts in one folder (sorted by file name, as the reference lists them), optionally
/// only one owner's. Unreadable files are listed with status `?`.
pub fn list(root: &Path, folder: ContractFolder, owner: Option<&str>) -> Vec<Summary> {
    list_page(root, folder, owner, 0, usize::MAX).0
}

/// One page of [`list`] (`offset`, at most `limit` rows) and the total. Without an owner to
/// match only the page's files are read, so a page of 10,000 settled contracts costs a page.
pub fn list_page(
    root: &Path,
    folder: ContractFolder,
    owner: Option<&str>,
    offset: usize,
    limit: usize,
) -> (Vec<Summary>, usize) {
    let mut findings = Vec::new();
    let entries = snapshot::list(root, folder.dir(), ".md", &mut findings);
    page_of(root, &entries, owner, offset, limit)
}

/// [`list_page`] of a folder already listed (`entries` in path order).
pub fn page_of(
    root: &Path,
    entries: &[snapshot::Entry],
    owner: Option<&str>,
    offset: usize,
    limit: usize,
) -> (Vec<Summary>, usize) {
    if owner.is_none() {
        let total = entries.len();
        let page: Vec<_> = entries.iter().skip(offset).take(limit).cloned().collect();
        return (summaries(root, &page, None), total);
    }
    let all = summaries(root, entries, owner);
    let total = all.len();
    (all.into_iter().skip(offset).take(limit).collect(), total)
}

fn summaries(root: &Path, entries: &[snapshot::Entry], owner: Option<&str>) -> Vec<Summary> {
    let rows = snapshot::par_map(entries, |e| {
        let record = read(root, &e.rel).ok().flatten().map(|(_, r)| r);
        let get = |k: &str| record.as_ref().and_then(|r| text_field(r, k));
        Summary {
            contract_id: get("contract_id").unwrap_or_else(|| e.stem.clone()),
            title: get("title").unwrap_or_default(),
            status: get("status").unwrap_or_else(|| "?".into()),
            owner: get("owner"),
            required_tags: record.as_ref().map(tags_field).unwrap_or_default(),
            path: e.rel.clone(),
        }
    });
    rows.into_iter()
        .filter(|r| owner.is_none_or(|o| r.owner.as_deref() == Some(o)))
        .collect()
}
