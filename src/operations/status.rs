//! The one-screen summary of a polis (`polisd status`, the dashboard's overview): citizens,
//! contract counts, leaders, amendments as a tally would see them now, findings, and the daemon
//! watching it. Read-only.

use crate::fs::snapshot::Polis;
use crate::fs::state::{DaemonStatus, StoredFinding};
use crate::protocol::amendments::amendment::{self, Expiry};
use crate::protocol::clock::PolisTime;
use crate::protocol::contracts::contract::instant_of;
use crate::protocol::finding::Finding;
use crate::protocol::layout::{AmendmentFolder, ContractFolder};
use chrono::NaiveDateTime;
use serde::Serialize;
use std::collections::BTreeMap;

/// How many findings the summary shows.
pub const NEWEST_FINDINGS: usize = 10;

#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    pub polis: String,
    pub now: String,
    pub timezone: String,
    pub citizens: Vec<CitizenRow>,
    pub contracts: Counts,
    /// The exploration rate the router uses (`routing.explore_rate` in polis.yml, else the
    /// stats file's, else 0.15).
    pub explore_rate: f64,
    /// How much the router explored over the newest routings, to set beside `explore_rate`.
    pub exploration: Exploration,
    pub tags: Vec<TagRow>,
    pub amendments: Vec<AmendmentRow>,
    /// Amendments the tally skips or reads differently from what they say, and why.
    pub malformed_amendments: Vec<Finding>,
    /// The newest decided amendments (ratified, rejected, expired), newest last.
    pub recent_outcomes: Vec<OutcomeRow>,
    /// Every council in `reviews/`, by contract id.
    pub councils: Vec<CouncilRow>,
    pub findings: FindingsSummary,
    /// Empty unless filled by [`worktrees`] (`polisd status` does).
    pub worktrees: Worktrees,
    pub daemon: Option<DaemonRow>,
    /// A daemon.json left by a daemon that no longer runs (text output mentions it).
    #[serde(skip)]
    pub stale_daemon_pid: Option<u32>,
}

#[derive(Debug, Clone, Serialize)]
pub struct CitizenRow {
    pub id: String,
    pub vendor: Option<String>,
    pub model: Option<String>,
    pub state: String,
    /// The open contract it owns and works on (claimed, in progress, blocked or under
    /// review), from the contracts: a claim writes the contract, not the citizen's
    /// `status.md`, whose `state` is the citizen's own word. The most recently opened wins.
    pub working_on: Option<String>,
    pub last_activity: Option<String>,
    pub activity_source: Option<&'static str>,
}

/// The same polis in the repository's other git worktrees (docs/sync.md).
#[derive(Debug, Clone, Default, Serialize)]
pub struct Worktrees {
    /// The repository's common git dir (shared by its worktrees); null outside git.
    pub git_common_dir: Option<String>,
    /// The other worktrees' `_polis/` folders.
    pub others: Vec<String>,
    /// Contracts whose copies differ (folder, owner or status) between worktrees.
    pub diverged: Vec<DivergedRow>,
}

#[derive(Debug, Clone, Serialize)]
pub struct DivergedRow {
    pub contract_id: String,
    /// One line per copy: `path (folder, owner X, status Y)`.
    pub copies: Vec<String>,
}

/// How many of the newest routings [`Exploration`] covers.
pub const EXPLORATION_WINDOW: usize = 100;

/// The router's measured exploration: of the newest [`EXPLORATION_WINDOW`] contracts the
/// router recommended (by `opened_at`, when the router saw them; the contract id breaks ties)
/// and nobody overrode, how many were exploration picks. Not by id alone: an id is a slug of
/// the title (the reference's rule, and `contract open`'s), so its order is the alphabet's.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Exploration {
    pub window: usize,
    pub routings: usize,
    pub explored: usize,
    /// `explored / routings`; null before the first routing.
    pub share: Option<f64>,
}

/// [`Exploration`] over a polis's contracts.
pub fn exploration(polis: &Polis) -> Exploration {
    let zone = polis.settings.timezone;
    let mut routed: Vec<(Option<NaiveDateTime>, &str, bool)> = polis
        .contracts
        .iter()
        .filter_map(|c| {
            let r = &c.contract.routing;
            let picked = r.recommended_by_router.is_some() && r.override_.is_null();
            let opened = instant_of(&c.contract.opened_at, zone);
            Some((opened, c.contract.contract_id.as_deref()?, r.exploration?)).filter(|_| picked)
        })
        .collect();
    // A contract whose `opened_at` cannot be read sorts oldest.
    routed.sort_by(|a, b| (a.0, a.1).cmp(&(b.0, b.1)));
    let newest = &routed[routed.len().saturating_sub(EXPLORATION_WINDOW)..];
    let explored = newest.iter().filter(|(_, _, e)| *e).count();
    Exploration {
        window: EXPLORATION_WINDOW,
        routings: newest.len(),
        explored,
        share: (!newest.is_empty()).then(|| explored as f64 / newest.len() as f64),
    }
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Counts {
    pub open: usize,
    pub settled: usize,
    pub abandoned: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct TagRow {
    pub tag: String,
    pub leader: Option<String>,
    pub leader_confidence: Option<f64>,
    pub contracts_completed: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct AmendmentRow {
    pub amendment_id: String,
    pub title: Option<String>,
    pub action: &'static str,
    pub agrees: usize,
    pub quorum: usize,
    pub expires: Option<String>,
    pub expiry_passed: bool,
    pub detail: String,
}

impl Summary {
    /// [`AmendmentRow::who_tallies`] for the first amendment a tally would move, with the
    /// daemon this summary found: the one line `status` and the report put under the table.
    pub fn who_tallies(&self) -> Option<String> {
        let daemon = self.daemon.as_ref().map(|d| d.pid);
        self.amendments.iter().find_map(|a| a.who_tallies(daemon))
    }
}

impl AmendmentRow {
    /// What a tally now would do, as the end of "a tally now would …": `action` is the status
    /// word a tally writes, which reads as nonsense there (`would pending`).
    pub fn tally_would(&self) -> &'static str {
        match self.action {
            "ratified" => "ratify it",
            "expired" => "expire it",
            "rejected" => "reject it",
            _ => "leave it open",
        }
    }

    /// Who carries out what [`AmendmentRow::tally_would`] says, when it would change
    /// something (`None` for one it leaves open): nothing moves an amendment at quorum until a
    /// tally runs, so a reader must know whether one will. `daemon` is the pid of the daemon
    /// watching the polis, if one does ([`Summary::daemon`]). Commands in backticks.
    pub fn who_tallies(&self, daemon: Option<u32>) -> Option<String> {
        // `pending` is the one action a tally writes nothing for.
        if self.action == "pending" {
            return None;
        }
        Some(match daemon {
            Some(pid) => format!(
                "the daemon watching this polis (`polisd run`, pid {pid}) does on its next pass"
            ),
            None => {
                "no daemon watches this polis; run `polisd tally` (or start `polisd run`)".into()
            }
        })
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct OutcomeRow {
    pub amendment_id: String,
    pub status: String,
    /// `ratified_at` as written, for a ratified amendment.
    pub ratified_at: Option<String>,
}

/// One council as `status` shows it.
#[derive(Debug, Clone, Serialize)]
pub struct CouncilRow {
    pub contract_id: String,
    pub mode: &'static str,
    pub phase: crate::protocol::council::state::Phase,
    /// Where it stands, in words (`Council::phase_words`): what the pages show.
    pub phase_words: String,
    /// The open round, and when it closes by time.
    pub round: Option<usize>,
    pub closes_at: Option<String>,
    pub decision: Option<String>,
    /// Why `council.md` cannot be read, when it cannot (P028).
    pub problem: Option<String>,
}

fn council_rows(polis: &Polis) -> Vec<CouncilRow> {
    use crate::operations::council;
    use crate::protocol::council::state::Phase;
    let mut rows = Vec::new();
    for id in council::listed(&polis.root) {
        let read = council::read(&polis.root, &id);
        rows.push(match read {
            Ok(Some(c)) => CouncilRow {
                mode: c.mode.as_str(),
                phase: c.phase,
                phase_words: c.phase_words(),
                round: c.open().map(|r| r.n),
                closes_at: c.open().map(|r| r.closes().to_string()),
                decision: c.outcome.as_ref().map(|o| o.decision.clone()),
                problem: None,
                contract_id: id,
            },
            other => CouncilRow {
                mode: "-",
                phase: Phase::Rounds,
                phase_words: "unreadable".into(),
                round: None,
                closes_at: None,
                decision: None,
                problem: Some(match other {
                    Err(e) => e.to_string(),
                    _ => "council.md went away while it was read".into(),
                }),
                contract_id: id,
            },
        });
    }
    rows
}

/// How many decided amendments the summary shows.
pub const RECENT_OUTCOMES: usize = 5;

#[derive(Debug, Clone, Serialize)]
pub struct FindingsSummary {
    pub errors: usize,
    pub warnings: usize,
    /// Chronicle findings a later line resolved; not in `errors`/`warnings`.
    pub resolved: usize,
    pub newest: Vec<Finding>,
}

#[derive(Debug, Clone, Serialize)]
pub struct DaemonRow {
    pub pid: u32,
    pub started_at: String,
    pub updated_at: String,
    pub watch_mode: String,
    /// The dashboard's address, when the daemon serves one.
    pub dashboard: Option<String>,
    pub counters: crate::fs::state::Counters,
    pub last_findings: Vec<StoredFinding>,
}

/// Everything `status` shows. `daemon` is the `daemon.json` found for this polis, if any.
pub fn summarize(
    polis: &Polis,
    now: &PolisTime,
    daemon: Option<DaemonStatus>,
) -> anyhow::Result<Summary> {
    let mut texts = super::chronicle_texts(polis);
    let chronicle = super::chronicle_summary(polis, now, &mut texts);
    let found = super::findings_and_resolved_with(polis, now, &|_| false, &chronicle, &mut texts);
    let stats = crate::operations::current_stats(polis);
    let malformed = super::amendment_problems(polis, now);
    summarize_from(
        polis,
        now,
        daemon,
        found,
        malformed,
        &stats,
        &chronicle.last_activity,
    )
}

/// Per owner, the open contract it works on (see [`CitizenRow::working_on`]).
fn working_on(polis: &Polis) -> BTreeMap<String, String> {
    let mut out: BTreeMap<String, (String, String)> = BTreeMap::new();
    for c in &polis.contracts {
        let k = &c.contract;
        let working = matches!(
            k.status.as_deref(),
            Some("claimed" | "in_progress" | "blocked" | "under_review")
        );
        let (true, ContractFolder::Open, Some(owner)) = (working, c.folder, k.owner.as_ref())
        else {
            continue;
        };
        let opened = k.opened_at.as_str().unwrap_or_default().to_string();
        if out.get(owner).is_none_or(|(at, _)| *at <= opened) {
            out.insert(owner.clone(), (opened, c.file.stem.clone()));
        }
    }
    out.into_iter().map(|(o, (_, id))| (o, id)).collect()
}

/// [`summarize`] with the findings (the findings that count and the resolved ones, as
/// [`super::findings_and_resolved`] gives them), the amendments' problems (as
/// [`super::amendment_problems`] gives them), the routing stats and each citizen's last
/// chronicle stamp (`chronicle::summary`) already at hand: a reader that keeps the stats and
/// the amendments' checks between changes (the dashboard) reads and parses neither again.
pub fn summarize_from(
    polis: &Polis,
    now: &PolisTime,
    daemon: Option<DaemonStatus>,
    (found, resolved): (Vec<Finding>, Vec<super::Resolved>),
    malformed_amendments: Vec<Finding>,
    stats: &crate::protocol::routing::stats::RoutingStats,
    activity: &BTreeMap<String, NaiveDateTime>,
) -> anyhow::Result<Summary> {
    let mut working_on = working_on(polis);
    let citizens = polis
        .cards
        .values()
        .map(|c| {
            let status = polis.status(&c.id);
            let (last_activity, activity_source) = match activity.get(c.id.as_str()) {
                Some(t) => (
                    Some(
                        t.format(crate::protocol::chronicle::STAMP_FORMAT)
                            .to_string(),
                    ),
                    Some("chronicle"),
                ),
                None if !status.last_active.is_null() => {
                    (Some(status.last_active.python_str()), Some("status"))
                }
                None => (None, None),
            };
            CitizenRow {
                id: c.id.clone(),
                vendor: c.card.vendor.clone(),
                model: c.card.model.clone(),
                state: status.state.as_str().to_string(),
                working_on: working_on.remove(&c.id),
                last_activity,
                activity_source,
            }
        })
        .collect();

    let mut contracts = Counts::default();
    for c in &polis.contracts {
        match c.folder {
            ContractFolder::Open => contracts.open += 1,
            ContractFolder::Settled => contracts.settled += 1,
            ContractFolder::Abandoned => contracts.abandoned += 1,
        }
    }

    let explore_rate = crate::protocol::routing::score::explore_rate(&polis.settings, stats);
    let mut tags: Vec<TagRow> = stats
        .tags
        .iter()
        .map(|t| TagRow {
            contracts_completed: t.citizens.iter().map(|c| c.contracts_completed).sum(),
            tag: t.tag.clone(),
            leader: t.leader.clone(),
            leader_confidence: t.leader_confidence,
        })
        .collect();
    // By name, as the reference's `status` lists them.
    tags.sort_by(|a, b| a.tag.cmp(&b.tag));

    let (results, _) = crate::operations::tally(polis, None, now, false)?;
    let amendments = results
        .into_iter()
        .map(|r| {
            let file = polis.amendments.iter().find(|f| {
                f.folder == AmendmentFolder::Proposed && f.amendment.id == r.amendment_id
            });
            let (expires, expiry_passed) = match file.map(|f| amendment::expiry(&f.amendment, now))
            {
                Some(Expiry::Open(text)) => (Some(text), false),
                Some(Expiry::Passed(text)) => (Some(text), true),
                Some(Expiry::Never) | None => (None, false),
            };
            AmendmentRow {
                title: file.and_then(|f| f.amendment.title.clone()),
                amendment_id: r.amendment_id,
                action: r.action,
                agrees: r.agrees,
                quorum: r.quorum,
                expires,
                expiry_passed,
                detail: r.detail,
            }
        })
        .collect();

    let mut decided: Vec<OutcomeRow> = polis
        .amendments
        .iter()
        .filter_map(|f| {
            let status = f.amendment.status.clone()?;
            matches!(status.as_str(), "ratified" | "rejected" | "expired").then(|| OutcomeRow {
                amendment_id: f.amendment.id.clone(),
                ratified_at: (!f.amendment.ratified_at.is_null())
                    .then(|| f.amendment.ratified_at.python_str()),
                status,
            })
        })
        .collect();
    // Amendment ids start with their date, so id order is the order they were proposed in.
    decided.sort_by(|a, b| a.amendment_id.cmp(&b.amendment_id));
    let recent_outcomes = tail(decided, RECENT_OUTCOMES);

    let (errors, warnings) = super::count(&found);
    let findings = FindingsSummary {
        errors,
        warnings,
        resolved: resolved.len(),
        newest: newest_findings(found),
    };

    let (daemon, stale_daemon_pid) = match daemon {
        Some(d) if d.pid != 0 && d.process_running() != Some(false) => (
            Some(DaemonRow {
                pid: d.pid,
                started_at: d.started_at,
                updated_at: d.updated_at,
                watch_mode: d.watch_mode,
                dashboard: d.dashboard,
                counters: d.counters,
                last_findings: tail(d.last_findings, NEWEST_FINDINGS),
            }),
            None,
        ),
        Some(d) => (None, Some(d.pid)),
        None => (None, None),
    };

    Ok(Summary {
        polis: polis.root.display().to_string(),
        now: now.minute_stamp(),
        timezone: now.zone.0.to_string(),
        citizens,
        contracts,
        explore_rate,
        exploration: exploration(polis),
        tags,
        amendments,
        malformed_amendments,
        recent_outcomes,
        councils: council_rows(polis),
        findings,
        worktrees: Worktrees::default(),
        daemon,
        stale_daemon_pid,
    })
}

/// The same polis in the repository's other git worktrees and the contracts whose copies
/// differ there (docs/sync.md). Asks git (two short processes), so `polisd status` calls it
/// and fills [`Summary::worktrees`]; the dashboard, which summarizes on every change, does not.
pub fn worktrees(polis: &Polis) -> Worktrees {
    let repo = crate::fs::git::Repo::find(&polis.root);
    let others = repo.as_ref().map_or_else(Vec::new, |r| {
        crate::operations::sync::other_worktree_polises_in(r, &polis.root)
    });
    Worktrees {
        git_common_dir: repo.map(|r| r.common_dir.display().to_string()),
        others: others
            .iter()
            .map(|(_, p)| p.display().to_string())
            .collect(),
        diverged: crate::operations::sync::worktree_divergences(&polis.root, &others)
            .into_iter()
            .map(|(contract_id, copies)| DivergedRow {
                contract_id,
                copies,
            })
            .collect(),
    }
}

/// The last [`NEWEST_FINDINGS`] findings, with the current chronicle's last: its highest line
/// numbers are the newest events in the polis.
pub fn newest_findings(found: Vec<Finding>) -> Vec<Finding> {
    let (chronicle, mut rest): (Vec<Finding>, Vec<Finding>) = found
        .into_iter()
        .partition(|f| f.path == crate::protocol::layout::CHRONICLE);
    rest.extend(chronicle);
    tail(rest, NEWEST_FINDINGS)
}

fn tail<T>(mut items: Vec<T>, n: usize) -> Vec<T> {
    let skip = items.len().saturating_sub(n);
    items.drain(..skip);
    items
}
