//! `polisd status`: a one-screen summary of a polis and of the daemon watching it.
//!
//! Read-only: it reads the polis, tallies amendments without acting on them, gathers findings
//! with [`super::check::findings`] and reads the daemon's `daemon.json`. It never writes.
//!
//! `--json` prints one object with these keys:
//!
//! - `polis`: the `_polis/` folder; `now`: `YYYY-MM-DD HH:MM` in the polis timezone;
//!   `timezone`: its UTC offset (`+00:00`).
//! - `citizens`: `[{id, vendor, model, state, last_activity, activity_source}]`, by id.
//!   `last_activity` is the stamp of the citizen's newest chronicle line (current file and
//!   archives; lines more than 10 minutes in the future ignored), else `last_active` from
//!   `status.md`, else null; `activity_source` says which: `chronicle`, `status` or null.
//! - `contracts`: `{open, settled, abandoned}` file counts.
//! - `tags`: `[{tag, leader, leader_confidence, contracts_completed}]` from
//!   `contracts/routing_stats.yml` as it is on disk (run `polisd reconcile` to refresh it).
//! - `amendments`: every amendment a tally would look at now: `[{amendment_id, title, action,
//!   agrees, quorum, expires, expiry_passed, detail}]`. `action` is what `polisd tally` would do
//!   (`pending`, `ratified`, `expired`, `rejected`); `expires` is the deadline as text (null when
//!   none can be read).
//! - `findings`: `{errors, warnings, newest: [{code, severity, path, line, message}]}`, the
//!   totals of `polisd check` and its last 10 findings (the current chronicle's last).
//! - `worktrees`: `{git_common_dir, others: [path], diverged: [{contract_id, copies: [text]}]}`:
//!   the repository's common git dir (null outside git), the same polis in its other
//!   worktrees, and the contracts whose copies differ there (folder, owner or status).
//! - `daemon`: null when no daemon is watching (no `daemon.json`, or its process is gone);
//!   else `{pid, started_at, updated_at, watch_mode, counters: {events, rescans, reconciles,
//!   tallies, notifications, writes}, last_findings: [..up to 10, newest last]}`.

use crate::fs::snapshot::Polis;
use crate::fs::state::{DaemonStatus, StoredFinding};
use crate::protocol::amendment::{self, Expiry};
use crate::protocol::clock::PolisTime;
use crate::protocol::finding::Finding;
use crate::protocol::layout::{AmendmentFolder, ContractFolder};
use chrono::{Duration, NaiveDateTime};
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
    pub tags: Vec<TagRow>,
    pub amendments: Vec<AmendmentRow>,
    pub findings: FindingsSummary,
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

#[derive(Debug, Clone, Serialize)]
pub struct FindingsSummary {
    pub errors: usize,
    pub warnings: usize,
    pub newest: Vec<Finding>,
}

#[derive(Debug, Clone, Serialize)]
pub struct DaemonRow {
    pub pid: u32,
    pub started_at: String,
    pub updated_at: String,
    pub watch_mode: String,
    pub counters: crate::fs::state::Counters,
    pub last_findings: Vec<StoredFinding>,
}

pub fn run(args: crate::commands::cli::JsonPolisArg) -> anyhow::Result<u8> {
    let root = super::locate(args.path.as_deref())?;
    let polis = Polis::read(&root);
    let now = PolisTime::system(polis.settings.timezone);
    // An unreadable daemon.json says nothing about the polis: report "no daemon" and go on.
    let daemon = crate::fs::state::read_status(&root).ok().flatten();
    let summary = summarize(&polis, &now, daemon)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&summary)?);
    } else {
        print!("{}", render(&summary));
    }
    Ok(0)
}

/// Everything `status` shows. `daemon` is the `daemon.json` found for this polis, if any.
pub fn summarize(
    polis: &Polis,
    now: &PolisTime,
    daemon: Option<DaemonStatus>,
) -> anyhow::Result<Summary> {
    let activity = last_activity(polis, now);
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

    let tags = crate::operations::current_stats(polis)
        .tags
        .into_iter()
        .map(|t| TagRow {
            contracts_completed: t.citizens.iter().map(|c| c.contracts_completed).sum(),
            tag: t.tag,
            leader: t.leader,
            leader_confidence: t.leader_confidence,
        })
        .collect();

    let (results, _) = crate::operations::tally(polis, None, now)?;
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

    let found = super::check::findings(polis, now);
    let (errors, warnings) = super::check::count(&found);
    let findings = FindingsSummary {
        errors,
        warnings,
        newest: newest_findings(found),
    };

    let repo = crate::fs::git::Repo::find(&polis.root);
    let others = repo.as_ref().map_or_else(Vec::new, |r| {
        crate::operations::sync::other_worktree_polises_in(r, &polis.root)
    });
    let worktrees = Worktrees {
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
    };

    let (daemon, stale_daemon_pid) = match daemon {
        Some(d) if d.pid != 0 && d.process_running() != Some(false) => (
            Some(DaemonRow {
                pid: d.pid,
                started_at: d.started_at,
                updated_at: d.updated_at,
                watch_mode: d.watch_mode,
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
        tags,
        amendments,
        findings,
        worktrees,
        daemon,
        stale_daemon_pid,
    })
}

/// Each author's newest chronicle stamp over the archives and the current file, ignoring lines
/// more than 10 minutes in the future (as the activity window does).
fn last_activity<'p>(polis: &'p Polis, now: &PolisTime) -> BTreeMap<&'p str, NaiveDateTime> {
    let limit = now.now + Duration::minutes(crate::protocol::chronicle::FUTURE_TOLERANCE_MINUTES);
    let texts = polis
        .archives
        .iter()
        .map(|(_, t)| t.as_str())
        .chain(polis.chronicle_text());
    let mut out: BTreeMap<&str, NaiveDateTime> = BTreeMap::new();
    for text in texts {
        // Frontmatter lines never parse as entries, so plain `lines()` will do (and borrows).
        for line in text.lines() {
            if let Some((stamp, author)) = crate::protocol::chronicle::stamp_and_author(line) {
                if stamp <= limit && polis.cards.contains_key(author) {
                    let e = out.entry(author).or_insert(stamp);
                    *e = (*e).max(stamp);
                }
            }
        }
    }
    out
}

/// The last [`NEWEST_FINDINGS`] findings, with the current chronicle's last: its highest line
/// numbers are the newest events in the polis.
fn newest_findings(found: Vec<Finding>) -> Vec<Finding> {
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

/// The terminal summary: sections with headings, columns aligned.
pub fn render(s: &Summary) -> String {
    let mut out = format!("Polis {}\n  now {} (UTC{})\n", s.polis, s.now, s.timezone);

    out.push_str(&format!("\nCitizens ({})\n", s.citizens.len()));
    if s.citizens.is_empty() {
        out.push_str("  (none registered)\n");
    } else {
        let rows: Vec<Vec<String>> = s
            .citizens
            .iter()
            .map(|c| {
                vec![
                    c.id.clone(),
                    c.vendor.clone().unwrap_or_else(|| "-".into()),
                    c.state.clone(),
                    match (&c.last_activity, c.activity_source) {
                        (Some(t), Some("status")) => format!("{t} (status.md)"),
                        (Some(t), _) => t.clone(),
                        (None, _) => "never".into(),
                    },
                ]
            })
            .collect();
        out.push_str(&table(&["ID", "VENDOR", "STATE", "LAST ACTIVITY"], &rows));
    }

    let c = &s.contracts;
    out.push_str(&format!(
        "\nContracts\n  open {}   settled {}   abandoned {}\n",
        c.open, c.settled, c.abandoned
    ));

    if !s.worktrees.others.is_empty() {
        out.push_str(&format!(
            "\nWorktrees ({} other with this polis)\n",
            s.worktrees.others.len()
        ));
        for p in &s.worktrees.others {
            out.push_str(&format!("  {p}\n"));
        }
        if s.worktrees.diverged.is_empty() {
            out.push_str("  every contract agrees across worktrees\n");
        }
        for d in &s.worktrees.diverged {
            out.push_str(&format!("  DIVERGED {}\n", d.contract_id));
            for c in &d.copies {
                out.push_str(&format!("    {c}\n"));
            }
        }
    }

    out.push_str("\nTags (from contracts/routing_stats.yml)\n");
    if s.tags.is_empty() {
        out.push_str("  (no settled work yet)\n");
    } else {
        let rows: Vec<Vec<String>> = s
            .tags
            .iter()
            .map(|t| {
                vec![
                    t.tag.clone(),
                    t.leader.clone().unwrap_or_else(|| "-".into()),
                    t.leader_confidence
                        .map_or_else(|| "-".into(), |c| format!("{c:.3}")),
                    t.contracts_completed.to_string(),
                ]
            })
            .collect();
        out.push_str(&table(&["TAG", "LEADER", "CONFIDENCE", "CONTRACTS"], &rows));
    }

    out.push_str("\nAmendments\n");
    if s.amendments.is_empty() {
        out.push_str("  (none proposed)\n");
    } else {
        let rows: Vec<Vec<String>> = s
            .amendments
            .iter()
            .map(|a| {
                vec![
                    a.amendment_id.clone(),
                    format!("{}/{}", a.agrees, a.quorum),
                    match (&a.expires, a.expiry_passed) {
                        (Some(t), false) => format!("until {t}"),
                        (Some(t), true) => format!("passed: {t}"),
                        (None, _) => "no deadline".into(),
                    },
                    if a.action == "pending" {
                        "pending".into()
                    } else {
                        format!("next tally: {}", a.action)
                    },
                ]
            })
            .collect();
        out.push_str(&table(&["ID", "AGREES/QUORUM", "EXPIRES", "STATE"], &rows));
    }

    let f = &s.findings;
    out.push_str(&format!(
        "\nFindings: {}",
        super::check::summary(f.errors, f.warnings)
    ));
    if f.newest.is_empty() {
        out.push('\n');
    } else {
        out.push_str(&format!(
            " (showing {}; `polisd check` lists all)\n",
            f.newest.len()
        ));
        for finding in &f.newest {
            out.push_str(&format!(
                "  {}\n",
                shorten(&finding.to_string(), FINDING_WIDTH)
            ));
        }
    }

    out.push_str("\nDaemon\n");
    match (&s.daemon, s.stale_daemon_pid) {
        (Some(d), _) => {
            out.push_str(&format!(
                "  pid {} watching since {} ({} mode), last update {}\n",
                d.pid, d.started_at, d.watch_mode, d.updated_at
            ));
            let k = &d.counters;
            out.push_str(&format!(
                "  events {}   rescans {}   reconciles {}   tallies {}   notifications {}   writes {}\n",
                k.events, k.rescans, k.reconciles, k.tallies, k.notifications, k.writes
            ));
        }
        (None, Some(pid)) => out.push_str(&format!(
            "  no daemon is watching this polis (the last one, pid {pid}, is gone); start one with `polisd run`\n"
        )),
        (None, None) => out.push_str(
            "  no daemon is watching this polis; start one with `polisd run` or `polisd service install`\n",
        ),
    }
    out
}

/// Findings carry long messages with a corrected example; the summary shows their start and
/// `polisd check` the whole text.
const FINDING_WIDTH: usize = 118;

/// `text` cut to `width` characters, ending in `…` when cut.
fn shorten(text: &str, width: usize) -> String {
    if text.chars().count() <= width {
        return text.to_string();
    }
    let mut out: String = text.chars().take(width.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// Left-aligned columns, two spaces apart, indented by two; widths count characters.
fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        let mut l = String::from(" ");
        for (cell, w) in cells.iter().zip(&widths) {
            l.push(' ');
            l.push_str(cell);
            l.push_str(&" ".repeat(w - cell.chars().count() + 1));
        }
        format!("{}\n", l.trim_end())
    };
    let mut out = line(header.to_vec());
    for row in rows {
        out.push_str(&line(row.iter().map(String::as_str).collect()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_align_on_characters_not_bytes() {
        let t = table(
            &["ID", "STATE"],
            &[
                vec!["naïve-agent".into(), "idle".into()],
                vec!["b".into(), "away".into()],
            ],
        );
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines[0], "  ID           STATE");
        assert_eq!(lines[1], "  naïve-agent  idle");
        assert_eq!(lines[2], "  b            away");
    }

    #[test]
    fn long_findings_are_shortened_on_characters() {
        assert_eq!(shorten("short", 10), "short");
        assert_eq!(shorten("ünïcödé-long", 5), "ünïc…");
        assert_eq!(shorten("exactly", 7), "exactly");
    }

    #[test]
    fn newest_findings_put_the_chronicle_last_and_keep_ten() {
        use crate::protocol::finding::Code;
        let mut found: Vec<Finding> = (1..=12)
            .map(|n| Finding::error(Code::C001, "chronicle.md", Some(n), "x"))
            .collect();
        found.push(Finding::warning(
            Code::BadYaml,
            "contracts/open/a.md",
            None,
            "y",
        ));
        let newest = newest_findings(found);
        assert_eq!(newest.len(), NEWEST_FINDINGS);
        assert_eq!(newest.last().unwrap().line, Some(12));
        assert_eq!(newest[0].line, Some(3));
    }
}
