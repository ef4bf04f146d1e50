//! Tallying amendments and acting on the outcome (SPEC §8).

use super::ActionError;
use crate::fs::snapshot::{self, Polis};
use crate::fs::writer::{RenameOutcome, Writer};
use crate::protocol::amendments::amendment::{self, Action, Outcome, TallyContext};
use crate::protocol::clock::PolisTime;
use crate::protocol::delivery::inbox::Notification;
use crate::protocol::layout::{self, AmendmentFolder};
use std::collections::BTreeSet;

/// One amendment's tally, as `polisd tally --json` reports it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct TallyResult {
    pub amendment_id: String,
    pub action: &'static str,
    pub agrees: usize,
    pub quorum: usize,
    pub detail: String,
    /// A ratification waiting for the chronicle lines that date its votes, which a sync may
    /// still be bringing (only when the caller said files are in transit).
    #[serde(skip)]
    pub waits_for_lines: bool,
}

/// Who the quorum rules count, read from a polis (SPEC §8, leaving out who left):
/// the one place the tally, the notices about outcomes, `polisd status`, the dashboard and
/// reflection get it from. [`Electorate::context`] hands it to the pure rules
/// (`amendment::voters`, `amendment::active_voters`).
#[derive(Debug, Clone)]
pub struct Electorate {
    pub registered: BTreeSet<String>,
    /// Authors in the activity window (registered or not).
    pub authors: BTreeSet<String>,
    pub away: BTreeSet<String>,
    /// Whose latest membership line (current chronicle and newest archive) is `left polis`.
    pub departed: BTreeSet<String>,
}

impl Electorate {
    pub fn of(polis: &Polis, now: &PolisTime) -> Electorate {
        let registered = polis.registered();
        let authors = polis.active_authors(now);
        let away = registered
            .iter()
            .filter(|id| polis.status(id).is_away())
            .cloned()
            .collect();
        let departed = polis.departed();
        Electorate {
            registered,
            authors,
            away,
            departed,
        }
    }

    pub fn context(&self, now: &PolisTime) -> TallyContext<'_> {
        TallyContext {
            registered: &self.registered,
            active: &self.authors,
            away: &self.away,
            departed: &self.departed,
            now: *now,
        }
    }

    /// The active citizens: voters with a line in the window who are not away.
    pub fn active(&self, now: &PolisTime) -> BTreeSet<String> {
        amendment::active_voters(&self.context(now))
    }

    /// The citizens whose votes count.
    pub fn voters(&self, now: &PolisTime) -> BTreeSet<String> {
        amendment::voters(&self.context(now))
    }
}

/// Who is active: registered citizens with a chronicle line in the last 14 days who are not
/// away and have not left the polis (SPEC §8).
pub fn active_citizens(polis: &Polis, now: &PolisTime) -> BTreeSet<String> {
    Electorate::of(polis, now).active(now)
}

/// What [`apply`] did: each amendment's tally and whom its notices could not reach.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Applied {
    pub results: Vec<TallyResult>,
    pub undelivered: Vec<Undelivered>,
    /// Amendments the tally skipped or read differently from what they say.
    pub malformed: Vec<crate::protocol::finding::Finding>,
}

/// A notice that could not be appended to its recipient's inbox.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Undelivered {
    pub recipient: String,
    pub why: String,
}

/// Why [`apply`] failed as a whole.
#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    #[error(transparent)]
    Action(#[from] ActionError),
    #[error(transparent)]
    Write(#[from] crate::fs::writer::WriteError),
    #[error(transparent)]
    State(#[from] crate::fs::state::StateError),
}

/// `polisd tally` and the MCP tool `polis_tally`: reads the polis at `root`, tallies every
/// proposed amendment and, unless `dry_run`, acts on the outcomes (status, move, chronicle
/// line) and delivers their notices at once, as a one-shot action does.
pub fn apply(root: &std::path::Path, dry_run: bool) -> Result<Applied, ApplyError> {
    // A tally reads no settled contract: 10k of them are not read for it.
    let polis = Polis::read_with(root, false);
    let now = PolisTime::system(polis.settings.timezone);
    let writer = if dry_run {
        None
    } else {
        Some(Writer::new(root)?)
    };
    let (results, notices) = tally(&polis, writer.as_ref(), &now, false)?;
    let malformed = crate::operations::amendment_problems(&polis, &now);
    let mut undelivered = Vec::new();
    if let Some(writer) = &writer {
        // Read again: the tally may have moved files and appended to the chronicle.
        let after = Polis::read_with(root, false);
        undelivered = crate::operations::deliver_now(&after, writer, &notices, &now)?
            .into_iter()
            .map(|(recipient, why)| Undelivered { recipient, why })
            .collect();
    }
    Ok(Applied {
        results,
        undelivered,
        malformed,
    })
}

/// Tallies every proposed amendment and, unless `writer` is `None` (a dry run), acts on the
/// outcome: edits `status`/`ratified_at`, moves ratified files, appends the chronicle line and
/// returns the notifications to deliver.
///
/// `in_transit`: a sync may still be bringing files (the daemon's settling window). A
/// ratification whose agreeing votes are not all dated by a chronicle line then waits
/// (`waits_for_lines`): its `ratified_at` read without a line still on its way, or from the
/// clock, would differ from what the machines that hold the line write.
pub fn tally(
    polis: &Polis,
    writer: Option<&Writer>,
    now: &PolisTime,
    in_transit: bool,
) -> Result<(Vec<TallyResult>, Vec<Notification>), ActionError> {
    let electorate = Electorate::of(polis, now);
    let ctx = electorate.context(now);
    let active = electorate.active(now);
    let mut results = Vec::new();
    let mut notices = Vec::new();
    // Every outcome is checked again and acted on under the transition lock, so of racing
    // tallies (commands, MCP, the daemon) one acts on each amendment and the others find it
    // done (`act_on_outcome` sees the file gone or the line written).
    let _transition = writer.map(Writer::transition_lock).transpose()?;
    let line_in_progress = match writer {
        Some(w) => chronicle_line_in_progress(polis, w)?,
        None => false,
    };
    for file in polis.amendments.iter() {
        if file.folder != AmendmentFolder::Proposed {
            continue;
        }
        let a = &file.amendment;
        // An interrupted ratification (status already ratified, file still in proposed/) is
        // finished: moved, chronicled and announced. A `ratified` typed by hand without the
        // votes is left alone (`check` reports it).
        if amendment::needs_move(a, true) && !amendment::ratification_stands(a, &ctx) {
            continue;
        }
        let outcome = if amendment::needs_move(a, true) {
            let mut outcome = amendment::tally(a, &ctx);
            outcome.action = Action::Ratified;
            outcome.detail =
                "ratified earlier; the move to amendments/ratified/ is completed now".into();
            outcome
        } else {
            amendment::tally(a, &ctx)
        };
        if outcome.action == Action::Closed {
            continue;
        }
        if in_transit && outcome.action == Action::Ratified && !amendment::needs_move(a, true) {
            let undated = amendment::undated_agrees(&polis.recent_chronicle(), a, &outcome);
            if !undated.is_empty() {
                let why = format!(
                    "the chronicle lines of the votes by {}, which a sync may still bring",
                    undated.join(", ")
                );
                results.push(waiting(a, &outcome, &why, true));
                continue;
            }
        }
        if line_in_progress && outcome.action != Action::Pending {
            // Our chronicle line would split the agent's; the append that completes it
            // triggers the next tally.
            results.push(waiting(
                a,
                &outcome,
                "the chronicle line being written to end",
                false,
            ));
            continue;
        }
        results.push(TallyResult {
            amendment_id: a.id.clone(),
            action: action_name(outcome.action),
            agrees: outcome.agrees,
            quorum: outcome.quorum,
            detail: outcome.detail.clone(),
            waits_for_lines: false,
        });
        let Some(writer) = writer else { continue };
        if outcome.action == Action::Pending {
            continue;
        }
        match act_on_outcome(polis, writer, file, &outcome, &active, now) {
            Ok(Acted::Already) => {
                // Another tally acted on it since this one read the polis.
                results.pop();
            }
            Ok(Acted::Unrecordable) => {
                if let Some(r) = results.last_mut() {
                    r.detail = format!(
                        "{} ({}); not recorded: its frontmatter has no `status:` line to set (`polisd check` says how to fix it)",
                        r.action, r.detail
                    );
                    r.action = action_name(Action::Pending);
                }
            }
            Ok(Acted::Done) => {
                // Stamped with the decision as the files record it (the `ratified_at` just
                // written, the deadline, the last vote), never this run's clock alone.
                let texts = polis.recent_chronicle();
                let at = amendment::decided_at(&texts, a, outcome.action, now)
                    .map(crate::protocol::delivery::inbox::time_stamp)
                    .or_else(|| {
                        (outcome.action == Action::Ratified)
                            .then(|| amendment::ratified_at(&texts, a, &outcome, now))
                    });
                notices.extend(
                    outcome_notices(polis, a, &outcome, &active)
                        .into_iter()
                        .map(|n| n.caused_at(at.clone())),
                );
            }
            Err(e) if e.is_not_settled() => {
                // Someone is still writing the amendment: nothing is edited, chronicled or
                // moved until they are done (the writer keeps the path for a later pass).
                if let Some(r) = results.last_mut() {
                    r.detail = format!("{} ({}); waiting: {e}", r.action, r.detail);
                    r.action = action_name(Action::Pending);
                }
            }
            Err(e) => return Err(e),
        }
    }
    Ok((results, notices))
}

/// Whether the chronicle ends inside a line an agent is still writing (SPEC §3: a line without
/// its final newline is not complete). polisd's own line must not be appended into it: the
/// writer would end the fragment with a newline and the agent's rest would become a line of
/// its own. "Still writing" is the writer's stability rule, not the file's mtime: the
/// fragment changed within the stability window, or (Linux) a process has the file open for
/// writing. A fragment left alone longer than that is abandoned, and polisd's line goes after
/// it on a line of its own.
fn chronicle_line_in_progress(polis: &Polis, writer: &Writer) -> Result<bool, ActionError> {
    let Some(text) = polis.chronicle_text() else {
        return Ok(false);
    };
    if text.is_empty() || text.ends_with('\n') {
        return Ok(false);
    }
    Ok(writer.settled(layout::CHRONICLE)?.is_some())
}

fn action_name(action: Action) -> &'static str {
    match action {
        Action::Ratified => "ratified",
        Action::Expired => "expired",
        Action::Rejected => "rejected",
        Action::Pending | Action::Closed => "pending",
    }
}

/// An outcome held back, reported as pending with what it waits for.
fn waiting(
    a: &amendment::Amendment,
    outcome: &Outcome,
    why: &str,
    waits_for_lines: bool,
) -> TallyResult {
    TallyResult {
        amendment_id: a.id.clone(),
        action: action_name(Action::Pending),
        agrees: outcome.agrees,
        quorum: outcome.quorum,
        detail: format!(
            "{} ({}); waiting for {why}",
            action_name(outcome.action),
            outcome.detail
        ),
        waits_for_lines,
    }
}

/// What [`act_on_outcome`] did.
enum Acted {
    /// Recorded, chronicled and (for a ratification) moved.
    Done,
    /// Another tally acted on it since the polis was read.
    Already,
    /// The frontmatter has no `status` line [`amendment::set_status`] can set: nothing was
    /// recorded, chronicled or moved.
    Unrecordable,
}

fn act_on_outcome(
    polis: &Polis,
    writer: &Writer,
    file: &snapshot::AmendmentFile,
    outcome: &Outcome,
    _active: &BTreeSet<String>,
    now: &PolisTime,
) -> Result<Acted, ActionError> {
    let a = &file.amendment;
    // The polis was read before the transition lock was taken: an amendment another tally
    // moved meanwhile is done, and one whose outcome it already chronicled and whose status
    // it already wrote needs nothing more (a ratified one still needs its move).
    let now_text = crate::fs::snapshot::read_text(&polis.root, &file.rel, None)
        .ok()
        .flatten();
    let Some(now_text) = now_text else {
        return Ok(Acted::Already);
    };
    let status = outcome.action.status().unwrap_or("proposed");
    let current = crate::protocol::frontmatter::parse(&now_text).ok();
    let current_status = current
        .as_ref()
        .and_then(|r| r.get("status").as_str().map(str::to_string));
    if outcome.action != Action::Ratified
        && current_status.as_deref() == Some(status)
        && a.status.as_deref() != Some(status)
    {
        return Ok(Acted::Already);
    }
    if a.status.as_deref() != Some(status) {
        // From the chronicle when it shows the moment, so every machine writes the same bytes.
        let ratified_at = (outcome.action == Action::Ratified)
            .then(|| amendment::ratified_at(&polis.recent_chronicle(), a, outcome, now));
        // SPEC §8 records the outcome in the file before anything else: one `set_status`
        // leaves as it was (a `{…}` frontmatter) is neither chronicled nor moved, or it would
        // sit in ratified/ still saying `proposed`.
        if current_status.as_deref() != Some(status) && !amendment::outcome_recordable(&now_text) {
            return Ok(Acted::Unrecordable);
        }
        super::edit_agent_file(writer, &polis.root, &file.rel, |text| {
            Some(amendment::set_status(text, status, ratified_at.as_deref()))
        })?;
    }
    // The chronicle line before the move: a crash after the move would leave a ratified file
    // that no later tally looks at (they read proposed/ only), so its line would never be
    // written. A file still in proposed/ is finished by the next pass, and the line is not
    // appended twice.
    let chronicle_texts = polis.recent_chronicle();
    if !amendment::outcome_in_chronicle(&chronicle_texts, a, outcome.action) {
        if let Some(line) = amendment::chronicle_line(a, outcome, now) {
            // Checked again under the chronicle's lock: another polisd (a second daemon, a
            // one-shot `polisd tally`) may have appended the same outcome since the read.
            writer.append_locked_unless(layout::CHRONICLE, line.as_bytes(), |current| {
                let current = String::from_utf8_lossy(current);
                amendment::outcome_in_chronicle(&[&current], a, outcome.action)
            })?;
        }
    }
    if outcome.action == Action::Ratified {
        let name = file.rel.rsplit('/').next().unwrap_or(&file.rel);
        let moved = writer.rename_within(
            &file.rel,
            format!("{}/{name}", AmendmentFolder::Ratified.dir()),
        )?;
        if let RenameOutcome::NotSettled {
            reason,
            retry_after,
        } = moved
        {
            return Err(ActionError::NotSettled {
                path: file.rel.clone(),
                reason,
                retry_after,
            });
        }
    }
    Ok(Acted::Done)
}

/// The notices of an outcome, to [`amendment::outcome_recipients`].
fn outcome_notices(
    polis: &Polis,
    a: &amendment::Amendment,
    outcome: &Outcome,
    active: &BTreeSet<String>,
) -> Vec<Notification> {
    let ratified = outcome.action == Action::Ratified;
    amendment::outcome_recipients(a, ratified, active, polis.index_keeper.as_ref())
        .iter()
        .filter_map(|r| Notification::amendment_outcome(r, a, outcome))
        .collect()
}
