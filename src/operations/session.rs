//! What a running agent session asks of the polis as one citizen: its primer, its unread
//! notices, marking them read, and archiving read notices.
//!
//! Every read here is bounded to what is printed: the citizen's own card, status and inbox,
//! `contracts/open/` (and, for the ready queue, one `lstat` in `contracts/settled/` per
//! dependency), `amendments/proposed/`, the lesson folders of the tags it works on,
//! `guardrails/`, `reservations.yml`, and the tail of the chronicle back to the stale window. Settled contracts, other citizens'
//! folders and the rest of the chronicle are never opened, so a session start costs the same on
//! a polis with ten thousand settled contracts as on a new one.
//!
//! The read cursor is the `notices_read` list in the citizen's own `status.md` (see
//! [`crate::protocol::delivery::notice`]): it travels with the polis to every clone and machine where the
//! citizen works, it is written only when the citizen acts (`--as`), and it is edited by
//! compare-before-replace like every agent-owned file.

use super::{edit_agent_file_now, ActionError};
use crate::fs::snapshot::{self, MAX_RECORD_BYTES};
use crate::fs::writer::Writer;
use crate::operations::arg::{flags, Action, Arg, Names, Spell};
use crate::protocol::clock::PolisTime;
use crate::protocol::contracts::contract::Contract;
use crate::protocol::delivery::catch_up::{self, CatchUp, Cursor};
use crate::protocol::delivery::notice::{self, Notice};
use crate::protocol::delivery::primer::{
    self, Claim, Identity, LessonLine, PrimerInput, Routed, VoteWanted,
};
use crate::protocol::finding::{quoted, Finding};
use crate::protocol::layout::{self, CHRONICLE};
use std::collections::BTreeSet;
use std::path::Path;

/// What a session records in the citizen's `status.md`, for a finding that it cannot.
const SESSION_FIELDS: &str = "`notices_read:`, `last_seen_event` and `last_active` are";

/// How far back the primer reads the chronicle to date its claims: the stale window and a day.
const TAIL_DAYS: i64 = crate::protocol::chronicle::ACTIVITY_WINDOW_DAYS + 1;
/// The most chronicle bytes the primer reads from the end, whatever the dates say.
const TAIL_MAX_BYTES: u64 = 4 * 1024 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    // A variant that names an argument is worded by a function given the names, here the
    // command line's flags; `spelled` calls the same function with another front end's.
    #[error("{}", not_an_id(.0, &flags))]
    NotAnId(String),
    #[error("{}", unknown(.id, .known, &flags))]
    Unknown { id: String, known: String },
    #[error("{0}")]
    Unreadable(Finding),
    #[error(transparent)]
    Input(#[from] crate::protocol::input::InputError),
    #[error(transparent)]
    Action(#[from] ActionError),
}

impl Spell for SessionError {
    fn spelled(&self, names: Names) -> String {
        match self {
            SessionError::NotAnId(id) => not_an_id(id, names),
            SessionError::Unknown { id, known } => unknown(id, known, names),
            other => other.to_string(),
        }
    }
}

fn not_an_id(id: &str, names: Names) -> String {
    format!(
        "`{id}` is not a citizen id (8 to 40 lowercase letters, digits and hyphens, starting with a letter); pass your own id with {}",
        names.arg(Arg::SessionCitizen)
    )
}

fn unknown(id: &str, known: &str, names: Names) -> String {
    format!(
        "`{id}` is not a citizen of this polis (no _polis/citizens/{id}/capability_card.yml); {known}; pass your own id with {}, or register with {}",
        names.arg(Arg::SessionCitizen),
        names.action(&Action::Register { id: id.to_string() })
    )
}

impl From<crate::fs::writer::WriteError> for SessionError {
    fn from(e: crate::fs::writer::WriteError) -> Self {
        SessionError::Action(ActionError::Write(e))
    }
}

/// Checks that `id` is a registered citizen of the polis at `root` (a card exists), reading
/// only that card's metadata and, to name the known ids in the refusal, the citizens folder.
pub fn check_citizen(root: &Path, id: &str) -> Result<(), SessionError> {
    if layout::is_system_citizen(id) {
        crate::protocol::input::check_acting_id(id)?;
    }
    let Some(card) = layout::card_path(id) else {
        return Err(SessionError::NotAnId(id.to_string()));
    };
    if snapshot::has_card(root, id) {
        return Ok(());
    }
    // A citizen folder that is a link is never entered, so acting commands hold the citizen
    // unregistered; a session still comes, and the primer names the link and its fix.
    if layout::citizen_dir(id).is_some_and(|dir| snapshot::linked_folder(root, &dir).is_some()) {
        return Ok(());
    }
    // A card polisd may not even look at (a folder it cannot enter) is no unknown id: told to
    // register, the citizen would only meet its own folder. What reads the card names what is
    // wrong with it, as for a card behind a link.
    if let Err(e) = std::fs::symlink_metadata(root.join(&card)) {
        if !matches!(
            e.kind(),
            std::io::ErrorKind::NotFound
                | std::io::ErrorKind::InvalidFilename
                | std::io::ErrorKind::NotADirectory
        ) {
            return Ok(());
        }
    }
    let known: Vec<String> = snapshot::subdirs(root, layout::CITIZENS_DIR)
        .into_iter()
        .filter(|d| snapshot::has_card(root, d))
        .take(8)
        .collect();
    let known = if known.is_empty() {
        "no citizen is registered".to_string()
    } else {
        format!("registered: {}", known.join(", "))
    };
    Err(SessionError::Unknown {
        id: id.to_string(),
        known,
    })
}

/// A citizen's inbox with its read cursor.
#[derive(Debug, Clone)]
pub struct InboxView {
    pub citizen: String,
    /// Every notice of `inbox.md`, oldest first.
    pub notices: Vec<Notice>,
    /// The ids the citizen has read (`notices_read` in its `status.md`).
    pub read: BTreeSet<String>,
    pub inbox_text: String,
}

impl InboxView {
    /// The unread notices, newest first.
    pub fn unread(&self) -> Vec<&Notice> {
        notice::unread(&self.notices, &self.read)
    }
}

fn read_opt(root: &Path, rel: &str) -> Result<Option<String>, SessionError> {
    snapshot::read_text(root, rel, Some(MAX_RECORD_BYTES)).map_err(SessionError::Unreadable)
}

/// Reads the inbox and the read cursor of `citizen` (two files).
pub fn read_inbox(root: &Path, citizen: &str) -> Result<InboxView, SessionError> {
    let inbox_text = read_inbox_text(root, citizen)?;
    let status_rel =
        layout::status_path(citizen).ok_or_else(|| SessionError::NotAnId(citizen.into()))?;
    Ok(InboxView {
        citizen: citizen.to_string(),
        notices: notice::parse_inbox(&inbox_text),
        read: read_set(read_opt(root, &status_rel)?.as_deref()),
        inbox_text,
    })
}

/// The text of the citizen's `inbox.md` (empty when there is none).
fn read_inbox_text(root: &Path, citizen: &str) -> Result<String, SessionError> {
    let inbox_rel =
        layout::inbox_path(citizen).ok_or_else(|| SessionError::NotAnId(citizen.into()))?;
    let oversized = std::fs::symlink_metadata(root.join(&inbox_rel))
        .is_ok_and(|m| m.is_file() && m.len() > MAX_RECORD_BYTES);
    Ok(if oversized {
        // An inbox past the bound every record is read within: its newest notices, the last
        // MAX_RECORD_BYTES of it, rather than none (what comes before the first whole notice
        // there is left out as text before a heading is).
        snapshot::read_tail_lines(root, &inbox_rel, MAX_RECORD_BYTES, |_| false)
            .map_err(SessionError::Unreadable)?
            .map(|tail| tail.text)
            .unwrap_or_default()
    } else {
        read_opt(root, &inbox_rel)?.unwrap_or_default()
    })
}

/// The read cursor in a `status.md` text.
fn read_set(status_text: Option<&str>) -> BTreeSet<String> {
    status_text
        .and_then(|t| crate::protocol::frontmatter::parse(t).ok())
        .map(|r| notice::read_ids(&r.fields))
        .unwrap_or_default()
}

/// Marks the polisd notices to `citizen` whose record has moved on: its link leads nowhere
/// any more (one `lstat`; a link to a moved record is not followed to its new folder: the move
/// is the news), or the contract it asks the citizen to take has another owner now (one read).
pub fn mark_outdated(root: &Path, citizen: &str, notices: &mut [Notice]) {
    use crate::protocol::delivery::inbox::Kind;
    let exists = |rel: &str| std::fs::symlink_metadata(root.join(rel)).is_ok();
    for n in notices.iter_mut().filter(|n| n.from_daemon()) {
        let Some(target) = n
            .link
            .as_deref()
            .and_then(crate::protocol::chronicle::link_target)
        else {
            continue;
        };
        let file = format!("{target}.md");
        if !exists(&file) && !exists(&target) {
            n.outdated = Some(format!("[[{target}]] no longer exists"));
            continue;
        }
        let offers_it = matches!(
            n.kind,
            Some(Kind::ContractRouted | Kind::ContractUnblocked | Kind::HandoffOpened)
        );
        if !offers_it || !target.starts_with("contracts/open/") {
            continue;
        }
        let owner = read_opt(root, &file)
            .ok()
            .flatten()
            .and_then(|t| crate::protocol::frontmatter::parse(&t).ok())
            .and_then(|r| Contract::from_record(&r).owner);
        if let Some(owner) = owner.filter(|o| o != citizen) {
            n.outdated = Some(format!(
                "'{}' was claimed by '{}'",
                target.trim_start_matches("contracts/open/"),
                quoted(&owner)
            ));
        }
    }
}

/// Adds `ids` to the citizen's read cursor in its `status.md` (created with a minimal
/// frontmatter when missing), pruned to the notices still in `view`. Returns whether the file
/// changed. Compare-before-replace: an edit the citizen makes meanwhile is never lost.
pub fn mark_read(
    root: &Path,
    writer: &Writer,
    view: &InboxView,
    ids: &[String],
) -> Result<bool, SessionError> {
    let citizen = &view.citizen;
    let rel = layout::status_path(citizen).ok_or_else(|| SessionError::NotAnId(citizen.clone()))?;
    let next = notice::next_read_set(&view.read, ids, &view.notices);
    if next == view.read && ids.iter().all(|i| view.read.contains(i)) {
        return Ok(false);
    }
    write_status(root, writer, &rel, |current| {
        let old = current
            .and_then(|t| crate::protocol::frontmatter::parse(t).ok())
            .map(|r| notice::read_ids(&r.fields))
            .unwrap_or_default();
        let set = notice::next_read_set(&old, ids, &view.notices);
        notice::with_read_set(current, citizen, &set, &rel)
    })
}

/// What a delivery records once its text reached the reader (a hook's CLI, the MCP client,
/// the terminal of `notices --mark-read`), and not before: a reader that went away leaves
/// every notice unread, to be shown again.
pub enum Shown {
    /// The primer was shown: the session is recorded (its notices read, its chronicle cursor).
    Session {
        root: std::path::PathBuf,
        primed: Box<Primed>,
        now: PolisTime,
    },
    /// These notices were shown: they are marked read.
    Read {
        root: std::path::PathBuf,
        view: InboxView,
        ids: Vec<String>,
    },
}

impl Shown {
    /// Records it. `Ok(Some(finding))`: the session was shown but its `status.md` is one
    /// polisd must leave alone (the primer names it at its top).
    pub fn record(self) -> Result<Option<Finding>, SessionError> {
        match self {
            Shown::Session { root, primed, now } => {
                let writer = Writer::unrecorded(&root)?;
                record_session_or_finding(&root, &writer, &primed, &now)
            }
            Shown::Read { root, view, ids } => {
                let writer = Writer::unrecorded(&root)?;
                mark_read(&root, &writer, &view, &ids)?;
                Ok(None)
            }
        }
    }
}

/// Whether [`mark_read`] could record `ids` as read, checked without writing: the read cursor
/// lives in `status.md`, whose frontmatter polisd must leave alone when it cannot read it. A
/// hook asks before it shows anything, so a notice is never shown unless it can be marked read
/// (shown and not marked, it would come back after every tool).
pub fn check_mark_read(root: &Path, view: &InboxView, ids: &[String]) -> Result<(), SessionError> {
    let citizen = &view.citizen;
    let rel = layout::status_path(citizen).ok_or_else(|| SessionError::NotAnId(citizen.clone()))?;
    let current = read_opt(root, &rel)?;
    let set = notice::next_read_set(&view.read, ids, &view.notices);
    notice::with_read_set(current.as_deref(), citizen, &set, &rel)
        .map(drop)
        .map_err(SessionError::Unreadable)
}

/// Writes a citizen's `status.md` at `rel` as `compute` derives it from the current text
/// (`None` when the file is missing): created when missing, else one compare-before-replace
/// edit, so an edit the citizen makes meanwhile is never lost. A text `compute` refuses (a
/// frontmatter polisd must leave alone) is reported, with nothing written.
fn write_status(
    root: &Path,
    writer: &Writer,
    rel: &str,
    compute: impl Fn(Option<&str>) -> Result<String, Finding>,
) -> Result<bool, SessionError> {
    if read_opt(root, rel)?.is_none() {
        let text = compute(None).map_err(SessionError::Unreadable)?;
        if writer.create_new(rel, text.as_bytes())? {
            return Ok(true);
        }
    }
    let refused = std::cell::RefCell::new(None);
    let edited = edit_agent_file_now(writer, root, rel, |current| match compute(Some(current)) {
        Ok(text) => Some(text),
        Err(finding) => {
            *refused.borrow_mut() = Some(finding);
            None
        }
    })?;
    match refused.into_inner() {
        Some(finding) => Err(SessionError::Unreadable(finding)),
        None => Ok(edited),
    }
}

/// The polis timezone, from `polis.yml` alone.
pub fn polis_zone(root: &Path) -> crate::protocol::clock::PolisZone {
    let text = snapshot::read_text(root, layout::POLIS_YML, Some(MAX_RECORD_BYTES))
        .ok()
        .flatten();
    crate::protocol::settings::parse(text.as_deref()).0.timezone
}

/// What `prime` produced.
#[derive(Debug, Clone)]
pub struct Primed {
    pub primer: primer::Primer,
    pub input: PrimerInput,
    pub view: InboxView,
    /// The chronicle lines since the citizen's `last_seen_event`, and the cursor to record.
    pub catch_up: CatchUp,
}

/// Gathers and renders the primer of `citizen` at `now`, reading only what it prints, its
/// actions named as the front end asking (`names`) calls them.
pub fn prime(
    root: &Path,
    citizen: &str,
    now: &PolisTime,
    names: crate::operations::arg::Names,
) -> Result<Primed, SessionError> {
    check_citizen(root, citizen)?;
    // A file of the citizen's own that cannot be read (a link, a folder, unreadable) leaves its
    // part out and is named in the primer, with the fix: the session still gets the rest.
    let mut problems = Vec::new();
    let mut readable = |read: Result<_, SessionError>| match read {
        Ok(v) => Ok(Some(v)),
        Err(SessionError::Unreadable(finding)) => {
            problems.push(finding.to_string());
            Ok(None)
        }
        Err(e) => Err(e),
    };
    let card_rel =
        layout::card_path(citizen).ok_or_else(|| SessionError::NotAnId(citizen.into()))?;
    let card_text = readable(read_opt(root, &card_rel))?.flatten();
    let status_rel =
        layout::status_path(citizen).ok_or_else(|| SessionError::NotAnId(citizen.into()))?;
    let status_text = readable(read_opt(root, &status_rel))?.flatten();
    let inbox_text = readable(read_inbox_text(root, citizen).map(Some))?.flatten();
    // A status.md polisd must leave alone cannot take the read cursor: the notices shown now
    // will be shown again, and the session is told why.
    if let Some(Err(finding)) = status_text
        .as_deref()
        .map(|t| notice::status_fit_for_splice(t, &status_rel, SESSION_FIELDS))
    {
        problems.push(finding.to_string());
    }
    // A state the router reads as none of the five (`Away`): the citizen is told at once, since
    // it is still being routed work it meant to be away from.
    if let Some(problem) = status_text
        .as_deref()
        .and_then(|t| crate::protocol::citizens::citizen::parse_status(Some(t)).ok())
        .and_then(|s| s.state_problem())
    {
        problems.push(format!("{status_rel}: {problem}"));
    }
    let inbox_unreadable = inbox_text.is_none();
    let inbox_text = inbox_text.unwrap_or_default();
    let view = InboxView {
        citizen: citizen.to_string(),
        notices: notice::parse_inbox(&inbox_text),
        read: read_set(status_text.as_deref()),
        inbox_text,
    };
    let (identity, cursor) = identity(
        citizen,
        card_text.as_deref(),
        status_text.as_deref(),
        now.zone,
    );
    let catch_up = catch_up(root, citizen, cursor, now);
    let index_state = index_state(root);

    let mut findings = Vec::new();
    let records = snapshot::read_records(root, "contracts/open", &mut findings);
    let open: Vec<(String, Contract)> = records
        .iter()
        .map(|f| (f.stem.clone(), Contract::from_record(&f.record)))
        .collect();
    let nodes: Vec<crate::protocol::contracts::dependency::Node> = records
        .iter()
        .zip(&open)
        .map(|(f, (id, c))| crate::protocol::contracts::dependency::Node::of(id, &f.rel, c))
        .collect();
    let text_of = |v: &crate::yaml::Value| match v {
        crate::yaml::Value::Null => None,
        v => Some(v.python_str()),
    };
    let routed: Vec<Routed> = open
        .iter()
        .filter(|(_, c)| {
            c.owner.is_none() && c.routing.recommended_by_router.as_deref() == Some(citizen)
        })
        .map(|(id, c)| Routed {
            id: id.clone(),
            title: c.title.clone().unwrap_or_else(|| id.clone()),
            tags: c.required_tags.clone(),
            stakes: c.stakes.clone(),
            score: c.routing.recommendation_score,
            exploration: c.routing.exploration.unwrap_or(false),
            deadline: text_of(&c.deadline),
        })
        .collect();
    let owned: Vec<&(String, Contract)> = open
        .iter()
        .filter(|(_, c)| c.owner.as_deref() == Some(citizen))
        .collect();
    let owned_ids: BTreeSet<&str> = owned.iter().map(|(id, _)| id.as_str()).collect();
    let last_lines = last_lines_about(root, &owned_ids, now);
    let claims: Vec<Claim> = owned
        .iter()
        .map(|(id, c)| {
            let last = last_lines.get(id.as_str()).copied();
            let since = last.or_else(|| {
                crate::protocol::amendments::amendment::read_when(&c.opened_at, now).map(
                    |w| match w {
                        crate::protocol::amendments::amendment::When::Moment(t) => t,
                        crate::protocol::amendments::amendment::When::Day(d) => {
                            d.and_hms_opt(0, 0, 0).unwrap_or_default()
                        }
                    },
                )
            });
            let idle_days = since.map(|t| (now.now - t).num_days().max(0));
            Claim {
                id: id.clone(),
                title: c.title.clone().unwrap_or_else(|| id.clone()),
                status: c.status.clone().unwrap_or_else(|| "claimed".into()),
                last_line: last.map(|t| t.format("%Y-%m-%d %H:%M").to_string()),
                idle_days,
                stale: idle_days
                    .is_some_and(|d| d > crate::protocol::chronicle::ACTIVITY_WINDOW_DAYS),
            }
        })
        .collect();

    let votes = votes_wanted(root, citizen, now);
    let mut tags: Vec<&str> = Vec::new();
    for (_, c) in &owned {
        for t in &c.required_tags {
            if !tags.contains(&t.as_str()) {
                tags.push(t);
            }
        }
    }
    let lessons = lessons_for(root, &tags);
    let tag_list: Vec<String> = tags.iter().map(|t| t.to_string()).collect();
    // Guardrails the citizen's contracts inherit; none when it owns nothing (a tagless
    // guardrail applies to every contract, but there is no contract to apply it to).
    let guardrails: Vec<String> = if owned.is_empty() {
        Vec::new()
    } else {
        super::guardrail::matching(root, &tag_list)
            .into_iter()
            .map(|g| g.text)
            .collect()
    };

    let all_reservations = super::reservation::list(root, now, names);
    // The ready queue as `polisd ready` computes it, from what the primer has read already
    // (one `lstat` per dependency).
    let card_tags: BTreeSet<String> = identity.tags.iter().map(|(t, _)| t.clone()).collect();
    let queue = super::ready::queue_of(
        root,
        citizen,
        &card_tags,
        &nodes,
        all_reservations.as_deref().unwrap_or_default(),
    );
    let reservations = match all_reservations {
        Ok(all) => all
            .into_iter()
            .filter(|v| v.active && v.citizen.as_deref() == Some(citizen))
            .map(|v| {
                let until = v
                    .expires_at
                    .map_or("until released".to_string(), |t| format!("until {t}"));
                let contract = v.contract.map_or(String::new(), |c| {
                    format!(", for `{}`", notice::one_line(&c, 60))
                });
                format!(
                    "`{}` {until}{contract}",
                    notice::one_line(&v.paths.join(", "), 120)
                )
            })
            .collect(),
        Err(e) => vec![format!("reservations.yml cannot be read: {e}")],
    };
    let input = PrimerInput {
        identity,
        routed,
        claims,
        votes,
        notices: {
            let mut unread: Vec<Notice> = view.unread().into_iter().cloned().collect();
            mark_outdated(root, citizen, &mut unread);
            unread
        },
        lessons,
        guardrails,
        has_guardrails: true,
        reservations,
        has_reservations: true,
        ready: queue.ready,
        held: queue.held,
        index_state,
        catch_up: catch_up.events.clone(),
        catch_up_complete: catch_up.complete,
        catch_up_late: catch_up.late,
        first_session: catch_up.previous.is_none(),
        problems,
        inbox_unreadable,
    };
    let primer = primer::render(&input, primer::BUDGET, names);
    Ok(Primed {
        primer,
        input,
        view,
        catch_up,
    })
}

/// The most chronicle bytes the catch-up reads back from the end looking for the cursor.
const CATCH_UP_MAX_BYTES: u64 = 1024 * 1024;

/// How many chunks of the tail reader (64 KiB each) are read past the cursor for lines merged
/// in late.
const LATE_CHUNKS: usize = 4;

/// The chronicle lines since `cursor`, read from the end of `chronicle.md` back to the cursor
/// and [`catch_up::LATE_DAYS`] before it, where lines merged in late land (at most
/// [`CATCH_UP_MAX_BYTES`]; with no cursor, back to the stale window), never the whole file.
fn catch_up(root: &Path, citizen: &str, cursor: Option<Cursor>, now: &PolisTime) -> CatchUp {
    use crate::protocol::chronicle;
    let window = now.now - chrono::Duration::days(TAIL_DAYS);
    let before = |line: &str, reach: &dyn Fn(Cursor) -> chrono::NaiveDateTime| {
        chronicle::stamp_and_author(line).is_some_and(|(stamp, _)| match cursor {
            Some(c) => stamp < reach(c),
            None => stamp < window,
        })
    };
    let reached = |line: &str| before(line, &|c| c.stamp);
    // Past the cursor, at most LATE_CHUNKS more chunks of the late span are read: a session
    // start must stay cheap, and a merge lands most lines near the end.
    let chunks_past = std::cell::Cell::new(0usize);
    let far_enough = |line: &str| {
        if reached(line) {
            chunks_past.set(chunks_past.get() + 1);
        }
        chunks_past.get() > LATE_CHUNKS
            || before(line, &|c| {
                c.stamp - chrono::Duration::days(catch_up::LATE_DAYS)
            })
    };
    let seen = crate::fs::state::catch_up_seen(root, citizen);
    match snapshot::read_tail_lines(root, CHRONICLE, CATCH_UP_MAX_BYTES, far_enough) {
        Ok(Some(tail)) => {
            let complete = tail.whole || tail.text.lines().any(reached);
            catch_up::since(
                &tail.text,
                cursor,
                citizen,
                (complete, tail.whole),
                seen.as_ref(),
            )
        }
        _ => catch_up::since("", cursor, citizen, (true, true), None),
    }
}

/// Where things stand, from `index.md` ([`primer::index_focus`]).
fn index_state(root: &Path) -> Vec<String> {
    let Ok(Some(text)) = snapshot::read_text(root, layout::INDEX, Some(MAX_RECORD_BYTES)) else {
        return Vec::new();
    };
    let body = crate::protocol::frontmatter::parse(&text).map_or(text.clone(), |r| r.body);
    primer::index_focus(&body)
}

/// Records in the citizen's `status.md`, in one compare-before-replace edit, what a session
/// start showed: the notices (`notices_read`), the chronicle cursor (`last_seen_event`) and
/// `last_active`. The status is created when missing. Returns whether the file changed.
pub fn record_session(
    root: &Path,
    writer: &Writer,
    primed: &Primed,
    now: &PolisTime,
) -> Result<bool, SessionError> {
    let citizen = &primed.view.citizen;
    let rel = layout::status_path(citizen).ok_or_else(|| SessionError::NotAnId(citizen.clone()))?;
    let ids = &primed.primer.shown_notices;
    let cursor = primed.catch_up.next;
    let active = now.second_stamp();
    let compute = |current: Option<&str>| -> Result<String, Finding> {
        let with_notices = if ids.is_empty() {
            current.map(str::to_string)
        } else {
            let old = current
                .and_then(|t| crate::protocol::frontmatter::parse(t).ok())
                .map(|r| notice::read_ids(&r.fields))
                .unwrap_or_default();
            let set = notice::next_read_set(&old, ids, &primed.view.notices);
            Some(notice::with_read_set(current, citizen, &set, &rel)?)
        };
        catch_up::with_seen(with_notices.as_deref(), citizen, cursor, &active, &rel)
    };
    let changed = write_status(root, writer, &rel, compute)?;
    // Only a saving: without it the next catch-up goes by the stamp alone and misses lines
    // merged in before the cursor, as it did before the record was kept.
    let _ = crate::fs::state::set_catch_up_seen(root, citizen, &primed.catch_up.seen);
    Ok(changed)
}

/// [`record_session`], with a `status.md` polisd must leave alone (its frontmatter is broken)
/// given back as the finding to show rather than as an error: the session still gets its primer.
pub fn record_session_or_finding(
    root: &Path,
    writer: &Writer,
    primed: &Primed,
    now: &PolisTime,
) -> Result<Option<Finding>, SessionError> {
    match record_session(root, writer, primed, now) {
        Ok(_) => Ok(None),
        Err(SessionError::Unreadable(finding)) => Ok(Some(finding)),
        Err(e) => Err(e),
    }
}

/// Who the citizen is, from its card and `status.md` texts, and its chronicle cursor.
fn identity(
    citizen: &str,
    card_text: Option<&str>,
    status_text: Option<&str>,
    zone: crate::protocol::clock::PolisZone,
) -> (Identity, Option<Cursor>) {
    let card = card_text.and_then(|t| crate::protocol::citizens::card::parse(t).ok());
    let cursor = status_text
        .and_then(|t| crate::protocol::frontmatter::parse(t).ok())
        .and_then(|r| Cursor::of(&r.fields, zone));
    let status = crate::protocol::citizens::citizen::parse_status(status_text).unwrap_or_default();
    let identity = Identity {
        id: citizen.to_string(),
        vendor: card
            .as_ref()
            .map(|c| c.vendor.clone().unwrap_or_else(|| "unknown vendor".into())),
        model: card.as_ref().and_then(|c| c.model.clone()),
        tags: card
            .map(|c| {
                c.capability_tags
                    .into_iter()
                    .map(|(t, claim)| (t, claim.self_rating.map(|r| r as i64)))
                    .collect()
            })
            .unwrap_or_default(),
        state: status.state.as_str().to_string(),
        current_contract: status.current_contract,
    };
    (identity, cursor)
}

/// Proposed amendments the citizen has not voted on (and did not propose), and that take a
/// vote: `status: proposed` and not past the deadline, as `amendment vote` requires.
fn votes_wanted(root: &Path, citizen: &str, now: &PolisTime) -> Vec<VoteWanted> {
    let mut findings = Vec::new();
    let mut out = Vec::new();
    for entry in snapshot::list(
        root,
        layout::AmendmentFolder::Proposed.dir(),
        ".md",
        &mut findings,
    ) {
        let Ok(Some(text)) = snapshot::read_text(root, &entry.rel, Some(MAX_RECORD_BYTES)) else {
            continue;
        };
        let Ok(a) = snapshot::parse_amendment(root, &text, &entry.stem) else {
            continue;
        };
        if a.status.as_deref() != Some("proposed")
            || matches!(
                crate::protocol::amendments::amendment::expiry(&a, now),
                crate::protocol::amendments::amendment::Expiry::Passed(_)
            )
            || a.proposed_by.as_deref() == Some(citizen)
            || a.votes.iter().any(|v| v.citizen == citizen)
        {
            continue;
        }
        let expires = match &a.expires_at {
            crate::yaml::Value::Null => None,
            v => Some(v.python_str()),
        };
        out.push(VoteWanted {
            id: a.id.clone(),
            title: a.title.clone().unwrap_or_else(|| a.id.clone()),
            proposed_by: a.proposed_by.clone(),
            expires,
        });
    }
    out
}

/// Accepted lessons filed under the given tags (`lessons/<tag>/`), newest id first.
fn lessons_for(root: &Path, tags: &[&str]) -> Vec<LessonLine> {
    let mut findings = Vec::new();
    let mut out: Vec<LessonLine> = Vec::new();
    let mut seen = BTreeSet::new();
    for tag in tags.iter().filter(|t| layout::is_slug(t)) {
        let dir = format!("{}/{tag}", layout::LESSONS_DIR);
        for file in snapshot::read_records(root, &dir, &mut findings) {
            let lesson =
                crate::protocol::contracts::lesson::Lesson::from_record(&file.stem, &file.record);
            if !lesson.is_accepted() || !seen.insert(lesson.lesson_id.clone()) {
                continue;
            }
            let summary = file
                .record
                .body
                .split("\n\n")
                .map(str::trim)
                .find(|p| !p.is_empty() && !p.starts_with('#'))
                .unwrap_or("")
                .to_string();
            out.push(LessonLine {
                id: lesson.lesson_id.clone(),
                tags: lesson.capability_tags.clone(),
                summary,
            });
        }
    }
    out.sort_by(|a, b| b.id.cmp(&a.id));
    out
}

/// The newest chronicle line linking each of `ids`, read from the end of `chronicle.md` back
/// to [`TAIL_DAYS`] before `now` (and from the newest archive when the current file is younger
/// than that, as after a rollover).
fn last_lines_about(
    root: &Path,
    ids: &BTreeSet<&str>,
    now: &PolisTime,
) -> std::collections::HashMap<String, chrono::NaiveDateTime> {
    use crate::protocol::chronicle;
    let mut last = std::collections::HashMap::new();
    if ids.is_empty() {
        return last;
    }
    let cutoff = now.now - chrono::Duration::days(TAIL_DAYS);
    let old_enough =
        |line: &str| chronicle::stamp_and_author(line).is_some_and(|(stamp, _)| stamp < cutoff);
    let mut files = vec![CHRONICLE.to_string()];
    let mut findings = Vec::new();
    let archives: Vec<String> = snapshot::list(root, "", ".md", &mut findings)
        .into_iter()
        .map(|e| e.rel.trim_start_matches('/').to_string())
        .filter(|n| chronicle::rollover::Quarter::from_archive_name(n).is_some())
        .collect();
    if let Some(newest) = chronicle::rollover::newest_archive(archives.iter().map(String::as_str)) {
        files.push(newest.to_string());
    }
    for rel in files {
        let Ok(Some(tail)) = snapshot::read_tail_lines(root, &rel, TAIL_MAX_BYTES, old_enough)
        else {
            continue;
        };
        chronicle::newest_lines_about(tail.text.lines(), ids, &mut last);
        // The current file went back far enough (or hit the byte cap): no archive needed.
        if !tail.whole {
            break;
        }
    }
    last
}

/// What archiving an inbox did.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Archived {
    /// Notices moved to `inbox-archive.md`.
    pub moved: usize,
    /// Read notices kept because they are newer than the age limit.
    pub kept_recent: usize,
    /// Unread notices (never moved).
    pub unread: usize,
}

/// Moves the citizen's read notices older than `older_than` (by their heading's stamp) from
/// `inbox.md` to `inbox-archive.md`, as the protocol lets the owner do. Appends to the archive
/// first (skipping blocks it already holds), then removes the blocks from the inbox by
/// compare-before-replace, so a crash in between leaves a notice in both files, never in
/// neither, and a second run finishes the move.
pub fn archive_inbox(
    root: &Path,
    writer: &Writer,
    citizen: &str,
    older_than: chrono::Duration,
    now: &PolisTime,
) -> Result<Archived, SessionError> {
    check_citizen(root, citizen)?;
    // Read and moved under the transition lock: two archives at once would both append the
    // same blocks to the archive.
    let _transition = writer.transition_lock()?;
    let view = read_inbox(root, citizen)?;
    let archive_rel =
        layout::inbox_archive_path(citizen).ok_or_else(|| SessionError::NotAnId(citizen.into()))?;
    let inbox_rel =
        layout::inbox_path(citizen).ok_or_else(|| SessionError::NotAnId(citizen.into()))?;
    // An age reaching before the calendar's first day leaves every notice younger than it.
    let limit = now
        .now
        .checked_sub_signed(older_than)
        .unwrap_or(chrono::NaiveDateTime::MIN);
    let mut report = Archived::default();
    let mut moving: Vec<&Notice> = Vec::new();
    for n in &view.notices {
        if !view.read.contains(&n.id) {
            report.unread += 1;
            continue;
        }
        let stamp = crate::protocol::chronicle::parse_stamp(&n.stamp)
            .or_else(|| chrono::NaiveDateTime::parse_from_str(&n.stamp, "%Y-%m-%d %H:%M:%S").ok());
        match stamp {
            Some(t) if t <= limit => moving.push(n),
            _ => report.kept_recent += 1,
        }
    }
    if moving.is_empty() {
        return Ok(report);
    }
    let archive_text = read_opt(root, &archive_rel)?.unwrap_or_default();
    let archived = notice::parse_inbox(&archive_text);
    let mut append = String::new();
    if archive_text.is_empty() {
        append.push_str(&format!(
            "---\nfile_type: inbox-archive\nowner: {citizen}\n---\n\n<!-- Read notices moved out of inbox.md, oldest first. -->\n"
        ));
    }
    for n in &moving {
        if !notice::archive_has(&archived, &archive_text, n) {
            let block = &view.inbox_text[n.span.0..n.span.1];
            if !block.starts_with('\n') && !append.ends_with("\n\n") {
                append.push('\n');
            }
            append.push_str(block);
            if !block.ends_with('\n') {
                append.push('\n');
            }
        }
    }
    if !append.is_empty() {
        writer.append_locked(&archive_rel, append.as_bytes())?;
    }
    let ids: BTreeSet<&str> = moving.iter().map(|n| n.id.as_str()).collect();
    edit_agent_file_now(writer, root, &inbox_rel, |current| {
        let notices = notice::parse_inbox(current);
        let remove: Vec<&Notice> = notices
            .iter()
            .filter(|n| ids.contains(n.id.as_str()))
            .collect();
        Some(notice::without_blocks(current, &remove))
    })?;
    report.moved = moving.len();
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The command line reads the registration it suggests as the whole command, in the words
    /// it always had.
    #[test]
    fn an_unknown_citizen_is_told_the_register_command() {
        let e = SessionError::Unknown {
            id: "ann-agent".into(),
            known: "registered: bob-agent".into(),
        };
        let said = "`ann-agent` is not a citizen of this polis (no _polis/citizens/ann-agent/capability_card.yml); registered: bob-agent; pass your own id with --as or POLIS_CITIZEN, or register with `polisd register ann-agent --vendor <vendor> --model <model> --tags <tag:rating,…>`";
        assert_eq!(e.to_string(), said);
        assert_eq!(e.spelled(&flags), said);
    }
}
