//! Acting on a polis: the shell shared by the one-shot commands and the daemon.
//!
//! Each action takes a [`Polis`] read from disk, asks the pure core what should change, and
//! hands every write to the [`Writer`]. Every action is idempotent: it derives what to do from
//! the folder's state (and the sent-notification ledger), so running it twice, or after a crash
//! half-way, changes nothing twice (SPEC §11).

use crate::fs::snapshot::{self, Polis};
use crate::fs::state::PolisState;
use crate::fs::writer::{CompareOutcome, WriteError, WriteOutcome, Writer};
use crate::protocol::amendment::{self, Action, Outcome, TallyContext};
use crate::protocol::clock::PolisTime;
use crate::protocol::inbox::{Kind, Notification};
use crate::protocol::layout::{self, AmendmentFolder};
use crate::yaml::Value;
use std::collections::BTreeSet;

/// Errors of an action. Findings about agents' files are not errors; these are failures to
/// write that the caller reports (and the daemon retries on its next pass).
#[derive(Debug, thiserror::Error)]
pub enum ActionError {
    #[error(transparent)]
    Write(#[from] WriteError),
    #[error("cannot render routing_stats.yml: {0}")]
    Render(#[from] crate::yaml::EmitError),
    #[error(
        "{path} kept changing while polisd tried to edit it; it will try again on the next change"
    )]
    Busy { path: String },
}

// ---------------------------------------------------------------------------------------------
// Reconcile (SPEC §6)

/// What a reconcile did.
#[derive(Debug, Clone, PartialEq)]
pub struct Reconciled {
    pub replayed: usize,
    /// `None` when there is no `contracts/settled/` folder (nothing is written then).
    pub outcome: Option<WriteOutcome>,
    /// Hex SHA-256 of the bytes `routing_stats.yml` now holds by this reconcile (`None` with
    /// `outcome`), so a caller can tell a later edit from its own result without re-reading.
    pub stats_sha256: Option<String>,
}

/// Rebuilds `contracts/routing_stats.yml` with the stats `build` makes from the two values kept
/// from the file being replaced (`explore_rate`, `last_updated`); writes only when the bytes
/// change, and nothing without a `contracts/settled/` folder. `polisd reconcile` builds with a
/// full replay, the daemon with its incremental [`crate::protocol::stats::Ledger`]. `replayed` is only
/// reported.
pub fn reconcile_with(
    root: &std::path::Path,
    writer: &Writer,
    replayed: usize,
    build: impl FnOnce(&Value, &Value) -> crate::protocol::stats::RoutingStats,
) -> Result<Reconciled, ActionError> {
    if !root.join("contracts/settled").is_dir() {
        return Ok(Reconciled {
            replayed,
            outcome: None,
            stats_sha256: None,
        });
    }
    let previous = read_previous_stats(root);
    let stats = build(previous.get("explore_rate"), previous.get("last_updated"));
    let text = crate::protocol::stats::render(&stats)?;
    let outcome = writer.replace_atomic(layout::ROUTING_STATS, text.as_bytes())?;
    Ok(Reconciled {
        replayed,
        outcome: Some(outcome),
        stats_sha256: Some(crate::fs::state::hex_sha256(text.as_bytes())),
    })
}

/// `polisd reconcile`: reads only what a reconcile needs — `polis.yml` for the timezone and
/// the files of `contracts/settled/`, on every core — and rebuilds the stats with a full replay
/// (SPEC §6). Returns the findings about the folder's files too.
pub fn reconcile_settled(
    root: &std::path::Path,
    writer: &Writer,
) -> Result<(Reconciled, Vec<crate::protocol::finding::Finding>), ActionError> {
    let settings_text =
        snapshot::read_text(root, layout::POLIS_YML, Some(snapshot::MAX_RECORD_BYTES))
            .ok()
            .flatten();
    let zone = crate::protocol::settings::parse(settings_text.as_deref())
        .0
        .timezone;
    let mut findings = Vec::new();
    let dir = layout::ContractFolder::Settled.dir();
    let entries = snapshot::list(root, dir, ".md", &mut findings);
    let reads = snapshot::par_map(&entries, |e| {
        let mut found = Vec::new();
        let settlement =
            snapshot::read_record(root, &e.rel, &e.stem, &mut found).and_then(|file| {
                let read = crate::protocol::contract::settlement_of(&file.rel, &file.record, zone);
                found.extend(read.findings);
                read.settlement
            });
        (settlement, found)
    });
    let mut settlements = Vec::with_capacity(reads.len());
    for (settlement, found) in reads {
        findings.extend(found);
        settlements.extend(settlement);
    }
    let done = reconcile_with(root, writer, settlements.len(), |rate, last| {
        crate::protocol::stats::reconcile(&settlements, rate, last)
    })?;
    Ok((done, findings))
}

/// The stats file as it is, for the values a reconcile keeps (`explore_rate`, `last_updated`).
fn read_previous_stats(root: &std::path::Path) -> Value {
    snapshot::read_text(root, layout::ROUTING_STATS, None)
        .ok()
        .flatten()
        .and_then(|text| crate::yaml::load(&text).ok())
        .unwrap_or(Value::Null)
}

/// The stats a router should read: the file on disk, or empty.
pub fn current_stats(polis: &Polis) -> crate::protocol::stats::RoutingStats {
    crate::protocol::stats::from_value(&read_previous_stats(&polis.root))
}

// ---------------------------------------------------------------------------------------------
// Tally (SPEC §8)

/// One amendment's tally, as `polisd tally --json` reports it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct TallyResult {
    pub amendment_id: String,
    pub action: &'static str,
    pub agrees: usize,
    pub quorum: usize,
    pub detail: String,
}

/// Who is active: registered citizens with a chronicle line in the last 14 days who are not
/// away (SPEC §8).
pub fn active_citizens(polis: &Polis, now: &PolisTime) -> BTreeSet<String> {
    let registered = polis.registered();
    let authors = match &polis.active_authors {
        Some(authors) => authors.clone(),
        None => crate::protocol::chronicle::active_authors(&polis.recent_chronicle(), now),
    };
    authors
        .into_iter()
        .filter(|id| registered.contains(id) && !polis.status(id).is_away())
        .collect()
}

fn away_citizens(polis: &Polis) -> BTreeSet<String> {
    polis
        .registered()
        .into_iter()
        .filter(|id| polis.status(id).is_away())
        .collect()
}

/// Tallies every proposed amendment and, unless `writer` is `None` (a dry run), acts on the
/// outcome: edits `status`/`ratified_at`, moves ratified files, appends the chronicle line and
/// returns the notifications to deliver.
pub fn tally(
    polis: &Polis,
    writer: Option<&Writer>,
    now: &PolisTime,
) -> Result<(Vec<TallyResult>, Vec<Notification>), ActionError> {
    let registered = polis.registered();
    let active = active_citizens(polis, now);
    let away = away_citizens(polis);
    let ctx = TallyContext {
        registered: &registered,
        active: &active,
        away: &away,
        now: *now,
    };
    let mut results = Vec::new();
    let mut notices = Vec::new();
    let line_in_progress = writer.is_some() && chronicle_line_in_progress(polis);
    for file in &polis.amendments {
        if file.folder != AmendmentFolder::Proposed {
            continue;
        }
        let a = &file.amendment;
        // An interrupted ratification (status already ratified, file still in proposed/) is
        // finished: moved, chronicled and announced.
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
        if line_in_progress && outcome.action != Action::Pending {
            // Our chronicle line would split the agent's; the append that completes it
            // triggers the next tally.
            results.push(TallyResult {
                amendment_id: a.id.clone(),
                action: action_name(Action::Pending),
                agrees: outcome.agrees,
                quorum: outcome.quorum,
                detail: format!(
                    "{} ({}); waiting for the chronicle line being written to end",
                    action_name(outcome.action),
                    outcome.detail
                ),
            });
            continue;
        }
        results.push(TallyResult {
            amendment_id: a.id.clone(),
            action: action_name(outcome.action),
            agrees: outcome.agrees,
            quorum: outcome.quorum,
            detail: outcome.detail.clone(),
        });
        let Some(writer) = writer else { continue };
        if outcome.action == Action::Pending {
            continue;
        }
        act_on_outcome(polis, writer, file, &outcome, &active, now)?;
        notices.extend(outcome_notices(polis, a, &outcome, &active));
    }
    Ok((results, notices))
}

/// How long a chronicle that ends mid-line (no final newline) counts as an agent still writing
/// that line; after that the fragment is abandoned and polisd appends after it anyway.
const LINE_IN_PROGRESS_GRACE: std::time::Duration = std::time::Duration::from_secs(60);

/// Whether the chronicle ends inside a line an agent is still writing (SPEC §3: a line without
/// its final newline is not complete). polisd's own line must not be appended into it: the
/// writer would end the fragment with a newline and the agent's rest would become a line of
/// its own.
fn chronicle_line_in_progress(polis: &Polis) -> bool {
    let Some(text) = polis.chronicle_text() else {
        return false;
    };
    if text.is_empty() || text.ends_with('\n') {
        return false;
    }
    std::fs::symlink_metadata(polis.root.join(layout::CHRONICLE))
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.elapsed().ok())
        .is_some_and(|age| age < LINE_IN_PROGRESS_GRACE)
}

fn action_name(action: Action) -> &'static str {
    match action {
        Action::Ratified => "ratified",
        Action::Expired => "expired",
        Action::Rejected => "rejected",
        Action::Pending | Action::Closed => "pending",
    }
}

fn act_on_outcome(
    polis: &Polis,
    writer: &Writer,
    file: &snapshot::AmendmentFile,
    outcome: &Outcome,
    _active: &BTreeSet<String>,
    now: &PolisTime,
) -> Result<(), ActionError> {
    let a = &file.amendment;
    let status = outcome.action.status().unwrap_or("proposed");
    if a.status.as_deref() != Some(status) {
        let ratified_at = (outcome.action == Action::Ratified).then(|| now.second_stamp());
        edit_agent_file(writer, &polis.root, &file.rel, |text| {
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
            writer.append_locked(layout::CHRONICLE, line.as_bytes())?;
        }
    }
    if outcome.action == Action::Ratified {
        let name = file.rel.rsplit('/').next().unwrap_or(&file.rel);
        writer.rename_within(
            &file.rel,
            format!("{}/{name}", AmendmentFolder::Ratified.dir()),
        )?;
    }
    Ok(())
}

/// Who hears of an outcome: for a ratification every active citizen and the index keeper,
/// otherwise the proposer (SPEC §8, §9).
fn outcome_notices(
    polis: &Polis,
    a: &amendment::Amendment,
    outcome: &Outcome,
    active: &BTreeSet<String>,
) -> Vec<Notification> {
    let mut recipients: BTreeSet<String> = BTreeSet::new();
    if outcome.action == Action::Ratified {
        recipients.extend(active.iter().cloned());
        recipients.extend(polis.index_keeper.iter().cloned());
    } else {
        recipients.extend(a.proposed_by.iter().cloned());
    }
    recipients
        .iter()
        .filter_map(|r| Notification::amendment_outcome(r, a, outcome))
        .collect()
}

/// Compare-before-replace edit of a file an agent owns (SPEC §11): compute the new text from
/// the current bytes, and start over if the file changed meanwhile.
pub fn edit_agent_file(
    writer: &Writer,
    root: &std::path::Path,
    rel: &str,
    edit: impl Fn(&str) -> Option<String>,
) -> Result<bool, ActionError> {
    for _ in 0..5 {
        let Some(current) =
            snapshot::read_text(root, rel, None).map_err(|f| ActionError::Busy { path: f.path })?
        else {
            return Ok(false);
        };
        let Some(new) = edit(&current) else {
            return Ok(false);
        };
        if new == current {
            return Ok(false);
        }
        match writer.compare_and_replace(rel, current.as_bytes(), new.as_bytes())? {
            CompareOutcome::Written => return Ok(true),
            CompareOutcome::Unchanged => return Ok(false),
            CompareOutcome::Conflict { current: None } => return Ok(false),
            CompareOutcome::Conflict { .. } => continue,
        }
    }
    Err(ActionError::Busy {
        path: rel.to_string(),
    })
}

// ---------------------------------------------------------------------------------------------
// Notifications (SPEC §9)

/// What delivering a batch of notifications did.
#[derive(Debug, Default)]
pub struct Delivery {
    pub delivered: usize,
    pub already_sent: usize,
    /// Recipients that could not be written to, with why (e.g. a symlinked inbox).
    pub failed: Vec<(String, WriteError)>,
}

/// Appends each notification to its recipient's inbox unless it was already sent (the ledger in
/// `state`, or its marker in `inbox.md`/`inbox-archive.md`) or its kind is switched off.
/// Recipients must be registered citizens: polisd never creates an inbox for an unknown id.
pub fn deliver(
    polis: &Polis,
    writer: &Writer,
    state: &mut PolisState,
    notifications: &[Notification],
    enabled: &dyn Fn(Kind) -> bool,
    now: &PolisTime,
) -> Delivery {
    let mut report = Delivery::default();
    let mut seen: BTreeSet<(Kind, String)> = BTreeSet::new();
    for n in notifications {
        let id = n.id();
        if !enabled(n.kind) || !seen.insert((n.kind, id.clone())) {
            continue;
        }
        if state.was_sent(n.kind.as_str(), &id) {
            report.already_sent += 1;
            continue;
        }
        if !polis.cards.contains_key(&n.recipient) {
            continue;
        }
        let (Some(inbox), Some(archive)) = (
            layout::inbox_path(&n.recipient),
            layout::inbox_archive_path(&n.recipient),
        ) else {
            continue;
        };
        let texts: Vec<String> = [&inbox, &archive]
            .iter()
            .filter_map(|rel| snapshot::read_text(&polis.root, rel, None).ok().flatten())
            .collect();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        if n.already_in(&refs) {
            state.mark_sent(n.kind.as_str(), &id);
            report.already_sent += 1;
            continue;
        }
        match writer.append_locked(&inbox, n.render(now).as_bytes()) {
            Ok(()) => {
                state.mark_sent(n.kind.as_str(), &id);
                report.delivered += 1;
            }
            Err(e) => report.failed.push((n.recipient.clone(), e)),
        }
    }
    report
}
