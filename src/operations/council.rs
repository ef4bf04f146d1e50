//! Councils: starting one, reading its state, placing a member's contribution, and
//! moving it on (closing rounds, writing packets, checking and applying the verdict).
//!
//! Everything is derived from the files: `reviews/<cid>/council.md` says where a council
//! stands, the seat files and `verdict.md` say what members wrote. Each change of
//! `council.md` happens under `Writer::update_locked`, so the daemon and a command never
//! interleave; every side effect before it is idempotent (a packet with the same bytes is not
//! rewritten, `review.status` already set is not set again, the chronicle line is appended
//! only if it is not there, notices have stable ids), so a crash at any point is repaired by
//! the next call and nothing is done twice. Notices are returned, not sent: the caller queues
//! them (the daemon's outbox) or delivers them (a one-shot command).

use crate::fs::snapshot::{self, Polis};
use crate::fs::writer::Writer;
use crate::operations::{chronicle, edit_agent_file, lookup, OpError};
use crate::protocol::clock::PolisTime;
use crate::protocol::contracts::contract::Contract;
use crate::protocol::contracts::review::{self, Decision};
use crate::protocol::council::lens::{self, Library};
pub use crate::protocol::council::notices::notices_for;
use crate::protocol::council::state::{self, Council, Fallback, Outcome, Phase};
use crate::protocol::council::{self as rules, fallback, packet, verdict, Eligible, Mode};
use crate::protocol::delivery::inbox::Notification;
use crate::protocol::finding::Finding;
use crate::protocol::layout::{self, ContractFolder};
use crate::protocol::routing::score;
use chrono::NaiveDateTime;
use std::path::Path;

/// The largest seat or verdict file polisd reads (far above any word limit).
const MAX_FILE_BYTES: u64 = 1024 * 1024;

fn refuse(why: impl Into<String>) -> OpError {
    OpError::Council(why.into())
}

/// Where a polis keeps its own lenses (relative to `_polis/`).
pub const LENS_DIR: &str = "council/lenses";

/// The lenses this polis can use: the built-in ones and `council/lenses/<name>.md`.
pub fn lens_library(root: &Path) -> Library {
    let mut findings = Vec::new();
    let own = snapshot::list(root, LENS_DIR, ".md", &mut findings)
        .into_iter()
        .filter(|e| lens::is_lens_name(&e.stem))
        .filter_map(|e| {
            let text = snapshot::read_text(root, &e.rel, Some(64 * 1024))
                .ok()
                .flatten()?;
            (!text.trim().is_empty()).then_some((e.stem, text, e.rel))
        })
        .collect();
    Library::with(own)
}

/// What `polisd council start` may set over the contract's own request.
#[derive(Debug, Clone, Default)]
pub struct StartOptions {
    pub mode: Option<Mode>,
    /// Members, each `id` or `id:lens`.
    pub panel: Vec<String>,
    pub triad: Option<String>,
    pub profile: Option<String>,
    pub panel_size: Option<usize>,
    pub chairman: Option<String>,
    pub round_hours: Option<f64>,
}

/// One seat as shown by `start` and `status`.
#[derive(Debug, Clone, serde::Serialize)]
pub struct SeatView {
    pub label: String,
    pub id: String,
    pub vendor: String,
    pub why: String,
    pub lens: Option<String>,
    /// `live`, `degraded` or `offline` over the closed rounds.
    pub state: String,
    /// Whether a contribution is in place for the open round.
    pub wrote_this_round: bool,
    pub words: Option<usize>,
}

/// A council that was started.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Started {
    pub contract_id: String,
    pub path: String,
    pub mode: Mode,
    pub round_closes_at: String,
    /// [`Council::phase_words`](crate::protocol::council::state::Council::phase_words): the
    /// restatement round open, as `status` and the pages word it.
    pub phase_words: String,
    pub seats: Vec<SeatView>,
    pub chairman: String,
    pub chairman_is_owner: bool,
    pub notes: Vec<String>,
    #[serde(skip)]
    pub notices: Vec<Notification>,
}

/// Where a council stands (`polisd council status`).
#[derive(Debug, Clone, serde::Serialize)]
pub struct StatusView {
    pub contract_id: String,
    pub path: String,
    pub mode: Mode,
    pub phase: Phase,
    /// [`Council::phase_words`](crate::protocol::council::state::Council::phase_words).
    pub phase_words: String,
    pub rounds: usize,
    /// The open round, with its limit and when it closes by time.
    pub round: Option<usize>,
    pub word_limit: Option<usize>,
    pub closes_at: Option<String>,
    pub seats: Vec<SeatView>,
    pub chairman: String,
    pub chairman_is_owner: bool,
    pub packets: Vec<String>,
    /// While the verdict is awaited: whether `verdict.md` exists, and what is wrong with it.
    pub verdict_present: bool,
    pub verdict_problems: Vec<String>,
    pub outcome: Option<Outcome>,
    pub fallback: Option<Fallback>,
}

/// What one [`advance`] did.
#[derive(Debug, Clone, Default)]
pub struct Advanced {
    pub contract_id: String,
    pub phase: Option<Phase>,
    pub closed_rounds: Vec<usize>,
    /// The decision applied to the contract in this call.
    pub applied: Option<String>,
    pub fell_back: bool,
    /// Whether anything was written into the polis.
    pub wrote: bool,
    /// When the open round closes by time (polis time).
    pub deadline: Option<NaiveDateTime>,
    /// Why the verdict in place is not valid yet.
    pub verdict_problems: Vec<String>,
    pub notices: Vec<Notification>,
}

/// A contribution placed by `polisd council write`.
#[derive(Debug, Clone, serde::Serialize)]
pub struct SeatWritten {
    pub contract_id: String,
    pub round: usize,
    /// The round as texts name it ([`Council::round_words`]).
    pub round_words: String,
    pub path: String,
    pub words: usize,
    pub word_limit: usize,
    /// Over the limit (but within twice it): the packet will cut it.
    pub over_limit: bool,
    pub closes_at: String,
    pub replaced: bool,
}

/// Reads `reviews/<cid>/council.md`; `None` when there is no council on `cid`.
pub fn read(root: &Path, cid: &str) -> Result<Option<Council>, OpError> {
    lookup::check_slug("contract id", cid)?;
    let rel = state::state_path(cid);
    match snapshot::read_text(root, &rel, Some(snapshot::MAX_RECORD_BYTES))? {
        None => Ok(None),
        Some(text) => match Council::parse(&rel, &text) {
            Ok(c) if c.contract == cid => Ok(Some(c)),
            Ok(c) => Err(refuse(format!(
                "{rel} names the contract `{}`, not `{cid}`; polisd owns this file: restore it from version control",
                c.contract
            ))),
            Err(e) => Err(refuse(e.to_string())),
        },
    }
}

/// No council on `cid`: where there is no such contract either, that is what is said, not a
/// start the contract could not have.
fn no_council(root: &Path, cid: &str) -> OpError {
    if let Err(e) = lookup::find(root, cid) {
        return e;
    }
    OpError::NoCouncil(cid.to_string())
}

/// The contract's title (its id when unreadable), for prompts.
fn title_of(root: &Path, cid: &str) -> String {
    lookup::find(root, cid)
        .ok()
        .and_then(|(_, rel)| {
            snapshot::read_text(root, &rel, Some(snapshot::MAX_RECORD_BYTES))
                .ok()
                .flatten()
        })
        .and_then(|t| Contract::parse(&t).ok())
        .and_then(|c| c.title)
        .filter(|t| !t.trim().is_empty())
        .unwrap_or_else(|| cid.to_string())
}

/// Who may sit: registered, not away, not departed, not the owner; scored for the contract
/// by the router's own score (`protocol::routing::score`), best first.
pub fn eligible(polis: &Polis, contract: &Contract, owner: Option<&str>) -> Vec<Eligible> {
    let left = polis.departed();
    let candidates: Vec<score::Candidate> = polis
        .candidates()
        .into_iter()
        .filter(|c| !left.contains(&c.id))
        .filter(|c| Some(c.id.as_str()) != owner)
        .filter(|c| c.state.as_deref() != Some("away"))
        .collect();
    let stats = super::current_stats(polis);
    let lessons = polis.routing_lessons();
    let ctx = score::Context {
        stats: &stats,
        lessons: &lessons,
        weights: polis.settings.weights,
        lesson_cap: polis.settings.lesson_cap,
    };
    score::score_all(&candidates, contract, &ctx)
        .into_iter()
        .map(|s| Eligible {
            vendor: polis
                .cards
                .get(&s.citizen)
                .and_then(|c| c.card.vendor.clone())
                .filter(|v| !v.trim().is_empty())
                .unwrap_or_else(|| "unknown".into()),
            id: s.citizen,
            score: s.total,
        })
        .collect()
}

/// Open contracts that ask for a council, have an owner and have none yet; and those whose
/// request cannot be read, with why.
pub fn wanting_start(polis: &Polis) -> (Vec<String>, Vec<(String, String)>) {
    let mut want = Vec::new();
    let mut bad = Vec::new();
    for c in polis
        .contracts
        .iter()
        .filter(|c| c.folder == ContractFolder::Open)
    {
        let id = &c.file.stem;
        if c.contract.owner.is_none() || !layout::is_slug(id) {
            continue;
        }
        match rules::requested(&c.contract.fields) {
            Ok(Some(_)) => {
                if std::fs::symlink_metadata(polis.root.join(state::state_path(id))).is_err() {
                    want.push(id.clone());
                }
            }
            Ok(None) => {}
            Err(e) => bad.push((id.clone(), format!("{}: {e}", c.file.rel))),
        }
    }
    (want, bad)
}

/// P027 for a council request that cannot be read, P028 for a `council.md` that cannot be
/// read back (`polisd check`).
pub fn findings(polis: &Polis) -> Vec<crate::protocol::finding::Finding> {
    use crate::protocol::finding::{Code, Finding};
    let mut out: Vec<Finding> = polis
        .contracts
        .iter()
        .filter(|c| c.folder == ContractFolder::Open)
        .filter_map(|c| {
            rules::requested(&c.contract.fields).err().map(|e| {
                Finding::warning(
                    Code::BadCouncil,
                    &c.file.rel,
                    council_line(&c.file.text),
                    format!(
                        "{e}; no council starts until it is fixed (docs/council.md lists the keys)"
                    ),
                )
            })
        })
        .collect();
    // A request that reads well but cannot be seated (a chair who is not a citizen, a panel
    // of one) is found only by seating it: the daemon tries again on every pass, and says so
    // only in its log, so the contract's owner learns it here.
    let now = PolisTime::system(polis.settings.timezone);
    for id in wanting_start(polis).0 {
        if let Err(e) = seated(&now, polis, &id, "contract", None) {
            if let Some(file) = polis.contract(&id) {
                out.push(Finding::warning(
                    Code::BadCouncil,
                    &file.file.rel,
                    council_line(&file.file.text),
                    format!(
                        "the council it asks for cannot start: {e}; the daemon starts it once this is fixed (docs/council.md, Who sits)"
                    ),
                ));
            }
        }
    }
    for id in listed(&polis.root) {
        match read(&polis.root, &id) {
            Ok(Some(council)) => {
                out.extend(ahead(&polis.root, &council).into_iter().map(|(_, f)| f))
            }
            Ok(None) => {}
            Err(e) => out.push(Finding::error(
                Code::CouncilState,
                state::state_path(&id),
                None,
                e.to_string(),
            )),
        }
    }
    out
}

/// The line of a contract's `council:` key, where a P027 points.
fn council_line(text: &str) -> Option<usize> {
    crate::protocol::frontmatter::key_line(text, "council")
}

/// P030 for each seat file of a round after the open one, by seat: written early (or for the
/// wrong round), it would count as that seat's contribution the moment its round opens, before
/// its author read the packet the round answers, and the round could close on it.
fn ahead(root: &Path, council: &Council) -> Vec<(String, Finding)> {
    use crate::protocol::finding::Code;
    let Some(open) = council.open().filter(|_| council.phase == Phase::Rounds) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for k in open.n + 1..=council.mode.rounds() {
        for s in &council.seats {
            let rel = state::seat_path(&council.contract, k, &s.id);
            if std::fs::symlink_metadata(root.join(&rel)).is_err() {
                continue;
            }
            let message = format!(
                "{} is not open yet ({} is): this file would count as your contribution to it the moment it opens, before you read the packet it answers; move it to {}, or delete it and write it when polisd asks",
                council.round_words(k),
                council.round_words(open.n),
                state::seat_path(&council.contract, open.n, &s.id)
            );
            out.push((
                s.id.clone(),
                Finding::warning(Code::SeatAhead, rel, None, message),
            ));
        }
    }
    out
}

/// The councils in `reviews/` (folders holding a `council.md`).
pub fn listed(root: &Path) -> Vec<String> {
    snapshot::subdirs(root, layout::REVIEWS_DIR)
        .into_iter()
        .filter(|id| layout::is_slug(id))
        .filter(|id| {
            std::fs::symlink_metadata(root.join(state::state_path(id)))
                .is_ok_and(|m| m.file_type().is_file())
        })
        .collect()
}

/// Starts a council on open contract `cid`: seats the panel and the chair, writes
/// `council.md` with round 1 open, and returns the round's prompts. `options` (from the
/// command) override the contract's request; `started_by` is recorded. Refused when a council
/// exists or cannot be seated; nothing is written then.
pub fn start(
    writer: &Writer,
    now: &PolisTime,
    polis: &Polis,
    cid: &str,
    started_by: &str,
    options: Option<&StartOptions>,
) -> Result<Started, OpError> {
    let (council, title) = seated(now, polis, cid, started_by, options)?;
    let bytes = council.render()?;
    let rel = state::state_path(cid);
    writer.update_locked(&rel, |current| {
        if current.is_some() {
            return Err(refuse(format!(
                "a council on `{cid}` was started meanwhile; `polisd council status {cid}` shows it"
            )));
        }
        Ok((Some(bytes.clone().into_bytes()), ()))
    })?;
    Ok(Started {
        contract_id: cid.to_string(),
        path: rel,
        mode: council.mode,
        round_closes_at: council
            .rounds
            .first()
            .map(|r| r.closes_at.clone())
            .unwrap_or_default(),
        phase_words: council.phase_words(),
        seats: seat_views(&council, &[]),
        chairman: council.chairman.clone(),
        chairman_is_owner: council.chairman_is_owner,
        notes: council.notes.clone(),
        notices: notices_for(&council, &title),
    })
}

/// The council [`start`] would write on `cid`, and the contract's title; refused as `start`
/// refuses, with nothing written.
fn seated(
    now: &PolisTime,
    polis: &Polis,
    cid: &str,
    started_by: &str,
    options: Option<&StartOptions>,
) -> Result<(Council, String), OpError> {
    lookup::check_slug("contract id", cid)?;
    let Some(file) = polis.contract(cid) else {
        // The callers read the polis without the settled folder (it can be large), so a
        // settled contract is looked for by name before it is called missing.
        let settled = layout::contract_path(ContractFolder::Settled, cid)
            .is_some_and(|rel| std::fs::symlink_metadata(polis.root.join(rel)).is_ok());
        return Err(if settled {
            OpError::NotOpen {
                id: cid.to_string(),
                folder: ContractFolder::Settled.name(),
                action: "reviewed by a council",
            }
        } else if let Some(f) = polis.unreadable_contract(cid) {
            OpError::from(f.clone())
        } else {
            OpError::NoContract(cid.to_string())
        });
    };
    if file.folder != ContractFolder::Open {
        return Err(OpError::NotOpen {
            id: cid.to_string(),
            folder: file.folder.name(),
            action: "reviewed by a council",
        });
    }
    if let Some(existing) = read(&polis.root, cid)? {
        return Err(refuse(format!(
            "a council on `{cid}` already exists ({}); `polisd council status {cid}` shows it",
            existing.phase_words()
        )));
    }
    let contract = &file.contract;
    let mut request = rules::requested(&contract.fields)
        .map_err(|e| refuse(format!("{}: {e}", file.file.rel)))?
        .unwrap_or_default();
    if let Some(o) = options {
        if let Some(m) = o.mode {
            request.mode = m;
        }
        if !o.panel.is_empty() || o.triad.is_some() || o.profile.is_some() {
            request.panel.clear();
            request.lenses.clear();
            request.triad = None;
            request.profile = None;
        }
        for m in &o.panel {
            let (id, lens) = match m.split_once(':') {
                Some((id, l)) => (id.trim(), Some(l.trim().to_string())),
                None => (m.trim(), None),
            };
            request.panel.push(id.to_string());
            request.lenses.push(lens);
        }
        if let Some(t) = &o.triad {
            if lens::triad(t).is_none() {
                return Err(refuse(format!(
                    "there is no `{t}` triad; name one of: {}",
                    lens::TRIADS
                        .iter()
                        .map(|(d, _)| *d)
                        .collect::<Vec<_>>()
                        .join(", ")
                )));
            }
            request.triad = Some(t.trim().to_ascii_lowercase());
        }
        if let Some(p) = &o.profile {
            if lens::profile(p).is_none() {
                return Err(refuse(format!(
                    "there is no `{p}` profile; name one of: {}",
                    lens::PROFILE_NAMES.join(", ")
                )));
            }
            request.profile = Some(p.trim().to_ascii_lowercase());
        }
        if o.panel_size.is_some() {
            request.panel_size = o.panel_size;
        }
        if o.chairman.is_some() {
            request.chairman = o.chairman.clone();
        }
        if o.round_hours.is_some() {
            request.round_hours = o.round_hours;
        }
    }
    if request.mode == Mode::Duo && request.panel.len() > 2 {
        return Err(refuse(
            "a duo has two seats: name at most two members with --panel",
        ));
    }
    let library = lens_library(&polis.root);
    for l in request.lenses.iter().flatten() {
        if library.get(l).is_none() {
            return Err(refuse(format!(
                "there is no lens `{l}` (neither built in nor in {LENS_DIR}/{l}.md); name a built-in lens or add that file"
            )));
        }
    }
    if let Some((roles, _)) = rules::requested_lenses(&request) {
        if request.panel_size.is_none() {
            request.panel_size = Some(roles.len().min(rules::MAX_PANEL));
        }
    }
    let owner = contract.owner.as_deref();
    let mut choice = rules::choose(&eligible(polis, contract, owner), &request)
        .map_err(|e| refuse(e.to_string()))?;
    let problem = format!(
        "{} {} {}",
        contract.title.clone().unwrap_or_default(),
        contract.fields.get("required_tags").python_str(),
        contract.body
    );
    let lens_note = rules::assign_lenses(&mut choice, &request, &problem);
    choice.notes.push(lens_note);
    if choice.chairman.is_none() && owner.is_none() {
        return Err(refuse(format!(
            "nobody is left off the panel to chair, and `{cid}` has no owner to write the verdict; claim it first, or name a smaller --panel"
        )));
    }
    let council = Council::new(cid, owner, &request, &choice, started_by, &library, now);
    let title = contract.title.clone().unwrap_or_else(|| cid.to_string());
    Ok((council, title))
}

/// Each seat's contribution to round `n`, as read now (`None`: no file, or only whitespace).
fn read_seats(root: &Path, council: &Council, n: usize) -> SeatTexts {
    read_seats_telling(root, council, n).0
}

/// Each seat's text for a round (`None`: nothing written), by seat id.
type SeatTexts = Vec<(String, Option<String>)>;

/// [`read_seats`], with the finding about each seat file that could not be read (one over
/// [`MAX_FILE_BYTES`], a link): its author must be told, not only the log.
fn read_seats_telling(
    root: &Path,
    council: &Council,
    n: usize,
) -> (SeatTexts, Vec<(String, Finding)>) {
    let mut problems = Vec::new();
    let texts = council
        .seats
        .iter()
        .map(|s| {
            let rel = state::seat_path(&council.contract, n, &s.id);
            let text = match snapshot::read_text(root, &rel, Some(MAX_FILE_BYTES)) {
                Ok(t) => t.filter(|t| !packet::body(t).trim().is_empty()),
                Err(f) => {
                    tracing::warn!("{f}");
                    problems.push((s.id.clone(), f));
                    None
                }
            };
            (s.id.clone(), text)
        })
        .collect();
    (texts, problems)
}

fn seat_views(council: &Council, texts: &[(String, Option<String>)]) -> Vec<SeatView> {
    let states = council.seat_states();
    council
        .seats
        .iter()
        .map(|s| {
            let text = texts
                .iter()
                .find(|(id, _)| *id == s.id)
                .and_then(|(_, t)| t.as_deref());
            SeatView {
                label: s.label.clone(),
                id: s.id.clone(),
                vendor: s.vendor.clone(),
                why: s.why.clone(),
                lens: s.lens.clone(),
                state: states
                    .iter()
                    .find(|(id, _)| *id == s.id)
                    .map_or("live", |(_, st)| st)
                    .to_string(),
                wrote_this_round: text.is_some(),
                words: text.map(packet::word_count),
            }
        })
        .collect()
}

/// Where the council on `cid` stands. Reads only its own files.
pub fn status(root: &Path, cid: &str) -> Result<StatusView, OpError> {
    let council = read(root, cid)?.ok_or_else(|| no_council(root, cid))?;
    let open = council.open().cloned();
    let texts = open
        .as_ref()
        .map(|r| read_seats(root, &council, r.n))
        .unwrap_or_default();
    let (verdict_present, verdict_problems) = if council.phase == Phase::Verdict {
        match snapshot::read_text(root, &state::verdict_path(cid), Some(MAX_FILE_BYTES))? {
            Some(t) => (
                true,
                verdict::check(&t, council.mode).err().unwrap_or_default(),
            ),
            None => (false, Vec::new()),
        }
    } else {
        (false, Vec::new())
    };
    Ok(StatusView {
        contract_id: cid.to_string(),
        path: state::state_path(cid),
        mode: council.mode,
        phase: council.phase,
        phase_words: council.phase_words(),
        rounds: council.mode.rounds(),
        round: open.as_ref().map(|r| r.n),
        word_limit: open.as_ref().map(|r| council.mode.word_limit(r.n)),
        closes_at: open.as_ref().map(|r| r.closes().to_string()),
        seats: seat_views(&council, &texts),
        chairman: council.chairman.clone(),
        chairman_is_owner: council.chairman_is_owner,
        packets: council
            .rounds
            .iter()
            .filter(|r| r.closed_at.is_some())
            .map(|r| state::packet_path(cid, r.n))
            .collect(),
        verdict_present,
        verdict_problems,
        outcome: council.outcome.clone(),
        fallback: council.fallback.clone(),
    })
}

/// Places `id`'s contribution for the open round (`polisd council write`). Refused, with
/// nothing written, when `id` has no seat, the round has closed (or its time is up), or the
/// text is empty or over twice the round's word limit.
pub fn write_seat(
    writer: &Writer,
    now: &PolisTime,
    cid: &str,
    id: &str,
    text: &str,
) -> Result<SeatWritten, OpError> {
    if !layout::is_agent_id(id) {
        return Err(OpError::BadId {
            what: "citizen id",
            value: id.to_string(),
            rule:
                "an agent id: a lowercase letter, then 7 to 39 lowercase letters, digits or hyphens"
                    .into(),
        });
    }
    // Looked at before the lock: a refused write must not even create the lock file.
    let root = writer.root();
    read(root, cid)?.ok_or_else(|| no_council(root, cid))?;
    let rel = state::state_path(cid);
    let (_, written) = writer.update_locked(&rel, |current| {
        let current = current.ok_or_else(|| no_council(root, cid))?;
        let council = Council::parse(&rel, &String::from_utf8_lossy(current))
            .map_err(|e| refuse(e.to_string()))?;
        let Some(seat) = council.seat(id) else {
            if council.chairman == id {
                return Err(refuse(format!(
                    "`{id}` chairs the council on `{cid}` and has no seat in its rounds: once every round has closed, polisd asks the chairman for {} (nothing was written)",
                    state::verdict_path(cid)
                )));
            }
            return Err(refuse(format!(
                "`{id}` has no seat on the council on `{cid}` (its members are listed in {rel}); only members write contributions"
            )));
        };
        let Some(round) = council.open() else {
            return Err(refuse(format!(
                "the council on `{cid}` has no open round ({}); nothing was written",
                council.phase_words()
            )));
        };
        if council.deadline().is_some_and(|d| now.now >= d) {
            return Err(refuse(format!(
                "the council on `{cid}` took contributions to {} until {}; the contribution is too late and was not written",
                council.round_words(round.n),
                round.closes()
            )));
        }
        let limit = council.mode.word_limit(round.n);
        let words = packet::word_count(text);
        if words == 0 {
            return Err(refuse("the contribution is empty; write your position first"));
        }
        if words > 2 * limit {
            return Err(refuse(format!(
                "the contribution has {words} words, over twice the limit of {limit} for {}; shorten it to {limit} words (nothing was written)",
                council.round_words(round.n)
            )));
        }
        let path = state::seat_path(cid, round.n, &seat.id);
        let replaced = snapshot::read_text(root, &path, Some(MAX_FILE_BYTES))
            .ok()
            .flatten()
            .is_some();
        let mut bytes = text.to_string();
        if !bytes.ends_with('\n') {
            bytes.push('\n');
        }
        writer.replace_atomic(&path, bytes.as_bytes())?;
        Ok((
            None,
            SeatWritten {
                contract_id: cid.to_string(),
                round: round.n,
                round_words: council.round_words(round.n),
                path,
                words,
                word_limit: limit,
                over_limit: words > limit,
                closes_at: round.closes().to_string(),
                replaced,
            },
        ))
    })?;
    Ok(written)
}

/// Moves the council on `cid` on as far as its files allow: closes the open round when every
/// seat wrote or its time is up (writing the packet), asks for the verdict, applies a valid
/// verdict (contract `review.status`, the chronicle line, the outcome block) or falls back to
/// a chavruta review; and returns the notices the council's state calls for.
pub fn advance(writer: &Writer, now: &PolisTime, cid: &str) -> Result<Advanced, OpError> {
    let root = writer.root();
    let mut out = Advanced {
        contract_id: cid.to_string(),
        ..Advanced::default()
    };
    let Some(first) = read(root, cid)? else {
        return Ok(out);
    };
    let title = title_of(root, cid);
    if matches!(first.phase, Phase::Done | Phase::Fallback) {
        // Nothing moves any more; only the notices of the outcome (sent once) remain.
        out.phase = Some(first.phase);
        out.notices = notices_for(&first, &title);
        return Ok(out);
    }
    let rel = state::state_path(cid);
    let mut notices = Vec::new();
    let (outcome, council) = writer.update_locked(&rel, |current| {
        // Asked again when a hand edit of the state lands meanwhile: what an earlier try
        // gathered is gathered again from the file as it is now.
        notices.clear();
        out.closed_rounds.clear();
        let Some(current) = current else {
            return Ok((None, None));
        };
        let text = String::from_utf8_lossy(current).into_owned();
        let mut council = Council::parse(&rel, &text).map_err(|e| refuse(e.to_string()))?;
        for _ in 0..8 {
            match council.phase {
                Phase::Rounds => {
                    let Some(round) = council.open().cloned() else {
                        break;
                    };
                    let (texts, mut unreadable) = read_seats_telling(root, &council, round.n);
                    unreadable.extend(ahead(root, &council));
                    for (id, finding) in &unreadable {
                        notices.push(
                            Notification::record_finding(id, Some(id), finding)
                                .caused_at(Some(round.opened_at.clone())),
                        );
                    }
                    let limit = council.mode.word_limit(round.n);
                    for (id, t) in &texts {
                        let words = t.as_deref().map_or(0, packet::word_count);
                        if words > limit {
                            notices.push(
                                Notification::council_over_limit(
                                    id,
                                    cid,
                                    round.n,
                                    state::seat_path(cid, round.n, id).trim_end_matches(".md"),
                                    packet::over_limit_text(&council, round.n, words),
                                )
                                .caused_at(Some(round.opened_at.clone())),
                            );
                        }
                    }
                    let written: Vec<String> = texts
                        .iter()
                        .filter(|(_, t)| t.is_some())
                        .map(|(id, _)| id.clone())
                        .collect();
                    // A silent seat at the deadline is asked again before the round closes.
                    if !council.retry_silent(&written, now).is_empty() {
                        break;
                    }
                    if !council.round_due(&written, now) {
                        break;
                    }
                    let time_up = council.deadline().is_some_and(|d| now.now >= d);
                    if !time_up && council.simulated.is_none() {
                        // Every seat wrote: close once no seat file is still being written
                        // (the writer asks the engine to look again when they are quiet).
                        let mut quiet = true;
                        for id in &written {
                            quiet &= writer
                                .settled(state::seat_path(cid, round.n, id))?
                                .is_none();
                        }
                        if !quiet {
                            break;
                        }
                    }
                    let simulated_mode = council.simulated.is_some();
                    let shown = with_stubs(root, &council, round.n, &texts, simulated_mode);
                    if round.n >= 1 {
                        let gate = council.rounds.iter().find(|r| r.n == 0).cloned();
                        let restatements = match (round.n, gate) {
                            (1, Some(gate)) => {
                                let texts0 = read_seats(root, &council, 0);
                                let texts0: Vec<(String, Option<String>)> = texts0
                                    .into_iter()
                                    .map(|(id, t)| {
                                        let t = t.filter(|_| gate.wrote.contains(&id));
                                        (id, t)
                                    })
                                    .collect();
                                with_stubs(root, &council, 0, &texts0, gate.all_simulated)
                            }
                            _ => Vec::new(),
                        };
                        let (packet_text, cut) = packet::render(
                            &council,
                            round.n,
                            &contributions(&shown),
                            &contributions(&restatements),
                        );
                        if writer.replace_atomic(
                            state::packet_path(cid, round.n),
                            packet_text.as_bytes(),
                        )? == crate::fs::writer::WriteOutcome::Written
                        {
                            out.wrote = true;
                        }
                        council.close_round(&written, &cut, now);
                    } else {
                        // The restatement gate has no packet of its own: its answers open
                        // round 1's.
                        council.close_round(&written, &[], now);
                    }
                    out.closed_rounds.push(round.n);
                }
                Phase::Verdict => {
                    let vrel = state::verdict_path(cid);
                    let vtext = snapshot::read_text(root, &vrel, Some(MAX_FILE_BYTES))?;
                    // Judged only once the chairman has stopped writing it: a half-saved
                    // verdict must not draw a notice.
                    let settled = match &vtext {
                        Some(_) => writer.settled(&vrel)?.is_none(),
                        None => false,
                    };
                    if let (Some(vtext), true) = (&vtext, settled) {
                        match verdict::check(vtext, council.mode) {
                            Err(problems) => {
                                notices.push(
                                    Notification::council_verdict_invalid(
                                        &council.chairman,
                                        cid,
                                        &crate::protocol::digest::short_id(vtext.as_bytes()),
                                        vrel.trim_end_matches(".md"),
                                        &problems,
                                    )
                                    .caused_at(council.verdict_asked_at.clone()),
                                );
                                out.verdict_problems = problems;
                            }
                            Ok(v) => {
                                out.wrote |=
                                    apply_verdict(writer, now, &council, &v.decision, &vrel)?;
                                council.finish(
                                    v.decision.as_str(),
                                    now,
                                    Some(member_words(root, &council)),
                                );
                                out.applied = Some(v.decision.as_str().to_string());
                                continue;
                            }
                        }
                    }
                    if !council.chairman_due(now) {
                        break;
                    }
                    // The chairman's time is up: polisd's synthesis stands in, marked so.
                    let last = council.mode.rounds();
                    let closed = council.rounds.iter().find(|r| r.n == last).cloned();
                    let texts = read_seats(root, &council, last)
                        .into_iter()
                        .map(|(id, t)| {
                            let wrote = closed.as_ref().is_some_and(|r| r.wrote.contains(&id));
                            (id, t.filter(|_| wrote))
                        })
                        .collect::<Vec<_>>();
                    let all = closed.as_ref().is_some_and(|r| r.all_simulated);
                    let finals: Vec<(String, Option<String>, bool)> =
                        with_stubs(root, &council, last, &texts, all)
                            .into_iter()
                            .map(|(id, t, sim)| (id, Some(t), sim))
                            .collect();
                    council.chairman_failed = true;
                    let review_by = council.fallback_review_by(now);
                    let frel = state::fallback_verdict_path(cid);
                    let text = fallback::synthesize(&council, &finals, &review_by);
                    if writer.replace_atomic(&frel, text.as_bytes())?
                        == crate::fs::writer::WriteOutcome::Written
                    {
                        out.wrote = true;
                    }
                    let decision = Decision::RequestedChanges;
                    out.wrote |= apply_verdict(writer, now, &council, &decision, &frel)?;
                    council.finish(decision.as_str(), now, Some(member_words(root, &council)));
                    out.applied = Some(decision.as_str().to_string());
                }
                Phase::Done | Phase::Fallback => break,
            }
        }
        let new = council.render()?;
        Ok::<_, OpError>((Some(new.into_bytes()), Some(council)))
    })?;
    if outcome == crate::fs::writer::WriteOutcome::Written {
        out.wrote = true;
    }
    if let Some(council) = council {
        out.phase = Some(council.phase);
        out.deadline = council.next_wake();
        notices.extend(notices_for(&council, &title));
    }
    out.notices = notices;
    Ok(out)
}

/// Each seat's text for a closed round as the packet shows it: its own, or (silent, or the
/// council simulated) a stub polisd writes from its lens and its last own words.
fn with_stubs(
    root: &Path,
    council: &Council,
    n: usize,
    texts: &[(String, Option<String>)],
    simulated_mode: bool,
) -> Vec<(String, String, bool)> {
    texts
        .iter()
        .map(|(id, t)| match t.as_ref().filter(|_| !simulated_mode) {
            Some(t) => (id.clone(), t.clone(), false),
            None => {
                let earlier = last_words(root, council, id, n);
                let stub = packet::stub(
                    council,
                    id,
                    n,
                    simulated_mode,
                    earlier.as_ref().map(|(k, t)| (*k, t.as_str())),
                );
                (id.clone(), stub, true)
            }
        })
        .collect()
}

fn contributions(shown: &[(String, String, bool)]) -> Vec<packet::Contribution<'_>> {
    shown
        .iter()
        .map(|(id, t, simulated)| packet::Contribution {
            id,
            text: Some(t),
            simulated: *simulated,
        })
        .collect()
}

/// `id`'s own most recent contribution before round `n` that a closed round counted.
fn last_words(root: &Path, council: &Council, id: &str, n: usize) -> Option<(usize, String)> {
    council
        .rounds
        .iter()
        .rfind(|r| r.n < n && r.closed_at.is_some() && r.wrote.iter().any(|w| w == id))
        .and_then(|r| {
            let rel = state::seat_path(&council.contract, r.n, id);
            let text = snapshot::read_text(root, &rel, Some(MAX_FILE_BYTES)).ok()??;
            Some((r.n, text))
        })
}

/// The words members wrote in every round a closed round counted (for the token estimate).
fn member_words(root: &Path, council: &Council) -> usize {
    council
        .rounds
        .iter()
        .filter(|r| r.closed_at.is_some())
        .flat_map(|r| r.wrote.iter().map(move |id| (r.n, id)))
        .filter_map(|(n, id)| {
            snapshot::read_text(
                root,
                &state::seat_path(&council.contract, n, id),
                Some(MAX_FILE_BYTES),
            )
            .ok()
            .flatten()
        })
        .map(|t| packet::word_count(&t))
        .sum()
}

/// Sets `review.<key>` in the contract (wherever it is), compare-before-replace; refused
/// when the contract's frontmatter cannot be edited safely.
fn set_contract_review(
    writer: &Writer,
    cid: &str,
    key: &str,
    value: &str,
) -> Result<bool, OpError> {
    let root = writer.root();
    let (_, rel) = lookup::find(root, cid)?;
    let wrote = edit_agent_file(writer, root, &rel, |text| {
        verdict::set_review_field(text, key, value)
    })?;
    let now_value = snapshot::read_text(root, &rel, Some(snapshot::MAX_RECORD_BYTES))?
        .and_then(|t| Contract::parse(&t).ok())
        .and_then(|c| c.fields.get("review").get(key).as_str().map(str::to_string));
    if now_value.as_deref() != Some(value) {
        return Err(refuse(format!(
            "cannot set `review.{key}: {value}` in {rel} without changing other bytes; set it by hand (polisd tries again on the next change)"
        )));
    }
    Ok(wrote)
}

/// The verdict's effects on the rest of the polis: `review.status` and the chronicle line.
fn apply_verdict(
    writer: &Writer,
    now: &PolisTime,
    council: &Council,
    decision: &Decision,
    verdict_rel: &str,
) -> Result<bool, OpError> {
    let cid = &council.contract;
    let mut wrote = set_contract_review(writer, cid, "status", decision.as_str())?;
    let verb = review::chronicle_verb(decision);
    let link = verdict_rel.trim_end_matches(".md").to_string();
    if !chronicle::has_line(writer.root(), verb, &link) {
        let by = if council.chairman_failed {
            format!(
                "{} (FAILED — synthesized by coordinator fallback)",
                council.chairman
            )
        } else if council.chairman_is_owner {
            format!("{} (the owner, no chair was left)", council.chairman)
        } else {
            council.chairman.clone()
        };
        chronicle::append_daemon(
            writer,
            now,
            verb,
            Some(&link),
            &format!(
                "council verdict on {cid} by {by}: {} ({} council, {} seats, {} rounds)",
                decision.as_str(),
                council.mode.as_str(),
                council.seats.len(),
                council.rounds_run()
            ),
        )?;
        wrote = true;
    }
    Ok(wrote)
}

/// The owner's notice that the council on `cid` cannot apply its verdict (`why`: what
/// [`advance`] refused in the verdict phase, such as a contract whose `review:` is a single
/// word, so `review.status` cannot be set beside it): the council waits until that is fixed,
/// and without this only the daemon's log would say so. `None` in any other phase, or with no
/// owner to tell. One notice per reason.
pub fn stuck_notice(root: &Path, cid: &str, why: &str) -> Option<Notification> {
    let council = read(root, cid).ok().flatten()?;
    if council.phase != Phase::Verdict {
        return None;
    }
    let owner = council.owner.as_deref()?;
    let title = title_of(root, cid);
    Some(
        Notification::council_verdict(
            owner,
            cid,
            &format!(
                "stuck-{}",
                crate::protocol::digest::short_id(why.as_bytes())
            ),
            state::state_path(cid).trim_end_matches(".md"),
            format!(
                "The council on `{cid}` ({title}) has its verdict, but polisd cannot apply it: {why}. The council waits in its verdict phase; once this is fixed, polisd applies the verdict on the next change."
            ),
        )
        .caused_at(council.verdict_asked_at.clone()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::clock::PolisZone;
    use crate::protocol::council::{Choice, Chosen, Request};

    const SEATS: [&str; 3] = ["claude-seat-aaaa", "codex-seat-bbbb", "gemini-seat-cccc"];

    fn at(stamp: &str) -> PolisTime {
        PolisTime::at_stamp(PolisZone::default(), stamp).unwrap()
    }

    /// A polis folder holding only a council on `x` (round 1 open 10:00–11:00).
    fn council_here() -> (tempfile::TempDir, Writer) {
        let d = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(d.path()).unwrap().join("_polis");
        std::fs::create_dir_all(&root).unwrap();
        let writer = Writer::unrecorded(&root).unwrap();
        let choice = Choice {
            mode: Mode::Quick,
            panel: SEATS
                .iter()
                .map(|id| Chosen {
                    id: id.to_string(),
                    vendor: "v".into(),
                    why: "w".into(),
                    lens: None,
                })
                .collect(),
            chairman: Some(Chosen {
                id: "claude-chair-dddd".into(),
                vendor: "v".into(),
                why: "w".into(),
                lens: None,
            }),
            notes: vec![],
        };
        let request = Request {
            mode: Mode::Quick,
            round_hours: Some(1.0),
            restatement_hours: Some(1.0),
            ..Request::default()
        };
        let c = Council::new(
            "x",
            Some("codex-owner-eeee"),
            &request,
            &choice,
            "test",
            &crate::protocol::council::lens::Library::default(),
            &at("2026-12-01 10:00"),
        );
        writer
            .replace_atomic(state::state_path("x"), c.render().unwrap().as_bytes())
            .unwrap();
        (d, writer)
    }

    #[test]
    fn a_seat_write_after_the_round_s_time_is_refused_and_writes_nothing() {
        let (_d, writer) = council_here();
        let w = write_seat(&writer, &at("2026-12-01 10:30"), "x", SEATS[0], "in time").unwrap();
        assert_eq!((w.round, w.words, w.over_limit), (0, 2, false));
        assert_eq!(w.round_words, "restating the question");
        let e = write_seat(&writer, &at("2026-12-01 11:00"), "x", SEATS[1], "late").unwrap_err();
        assert!(
            e.to_string()
                .contains("took contributions to restating the question until 2026-12-01 11:00:00"),
            "{e}"
        );
        let long = "word ".repeat(101);
        let e = write_seat(&writer, &at("2026-12-01 10:30"), "x", SEATS[1], &long).unwrap_err();
        assert!(
            e.to_string()
                .contains("over twice the limit of 50 for restating the question"),
            "{e}"
        );
        assert!(e.is_refusal());
        assert!(!writer
            .root()
            .join(state::seat_path("x", 0, SEATS[1]))
            .exists());
        let e = write_seat(&writer, &at("2026-12-01 10:30"), "y", SEATS[1], "t").unwrap_err();
        // No council, nor a contract `y` to start one on.
        assert!(e.to_string().contains("no contract `y`"), "{e}");
        assert!(
            !writer.root().join("reviews/y").exists(),
            "nothing created on refusal"
        );
    }

    /// A retry extends the open round: a write in it says when the round now closes, and a
    /// write after it names that time, not the round's first deadline.
    #[test]
    fn a_seat_write_in_a_retry_names_the_retry_s_deadline() {
        let (_d, writer) = council_here();
        let rel = state::state_path("x");
        let text = std::fs::read_to_string(writer.root().join(&rel)).unwrap();
        let mut c = Council::parse(&rel, &text).unwrap();
        let open = c.rounds.iter_mut().find(|r| r.closed_at.is_none()).unwrap();
        open.retries.push(state::Retry {
            at: "2026-12-01 11:00:00".into(),
            closes_at: "2026-12-01 11:30:00".into(),
            seats: vec![SEATS[1].into()],
        });
        writer
            .replace_atomic(&rel, c.render().unwrap().as_bytes())
            .unwrap();
        let w = write_seat(&writer, &at("2026-12-01 11:10"), "x", SEATS[0], "in time").unwrap();
        assert_eq!(w.closes_at, "2026-12-01 11:30:00");
        let e = write_seat(&writer, &at("2026-12-01 11:30"), "x", SEATS[1], "late").unwrap_err();
        assert!(e.to_string().contains("until 2026-12-01 11:30:00"), "{e}");
    }

    #[test]
    fn advancing_twice_closes_a_round_once() {
        let (_d, writer) = council_here();
        for seat in SEATS {
            write_seat(&writer, &at("2026-12-01 10:10"), "x", seat, "one").unwrap();
        }
        let first = advance(&writer, &at("2026-12-01 11:05"), "x").unwrap();
        assert_eq!(first.closed_rounds, vec![0]);
        assert!(first.wrote);
        let state_text =
            std::fs::read_to_string(writer.root().join(state::state_path("x"))).unwrap();
        let again = advance(&writer, &at("2026-12-01 11:06"), "x").unwrap();
        assert!(again.closed_rounds.is_empty());
        assert!(!again.wrote);
        assert_eq!(
            std::fs::read_to_string(writer.root().join(state::state_path("x"))).unwrap(),
            state_text
        );
        assert_eq!(first.phase, Some(Phase::Rounds));
    }
}
