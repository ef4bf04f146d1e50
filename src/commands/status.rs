//! `polisd status`: a one-screen summary of a polis and of the daemon watching it.
//!
//! Read-only: it reads the polis, tallies amendments without acting on them, gathers findings
//! with [`crate::operations::findings`] and reads the daemon's `daemon.json`. It never writes.
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
//! - `explore_rate`: the exploration rate the router uses (`routing.explore_rate` in
//!   polis.yml, else `contracts/routing_stats.yml`'s, else 0.15; the reference shows the
//!   stats file's).
//! - `exploration`: `{window, routings, explored, share}`, what the router did beside that
//!   rate: of the newest `window` (100) contracts the router recommended and nobody
//!   overrode, newest by `opened_at`, how many were exploration picks; `share` is null before
//!   the first routing.
//! - `tags`: sorted by name, `[{tag, leader, leader_confidence, contracts_completed}]` from
//!   `contracts/routing_stats.yml` as it is on disk (run `polisd reconcile` to refresh it).
//! - `amendments`: every amendment a tally would look at now: `[{amendment_id, title, action,
//!   agrees, quorum, expires, expiry_passed, detail}]`. `action` is what `polisd tally` would do
//!   (`pending`, `ratified`, `expired`, `rejected`); `expires` is the deadline as text (null when
//!   none can be read).
//! - `malformed_amendments`: findings (as in `check --json`) about amendments the tally skips
//!   or reads differently from what they say (bad YAML, unknown status, unreadable quorum or
//!   expiry, unknown vote category).
//! - `recent_outcomes`: the last 5 decided amendments by id: `[{amendment_id, status,
//!   ratified_at}]`.
//! - `councils`: every council in `reviews/`: `[{contract_id, mode, phase, phase_words, round,
//!   closes_at, decision, problem}]`, `phase_words` where it stands as the pages word it.
//! - `findings`: `{errors, warnings, resolved, newest: [{code, severity, path, line, message}]}`, the
//!   totals of `polisd check` and its last 10 findings (the current chronicle's last).
//! - `worktrees`: `{git_common_dir, others: [path], diverged: [{contract_id, copies: [text]}]}`:
//!   the repository's common git dir (null outside git), the same polis in its other
//!   worktrees, and the contracts whose copies differ there (folder, owner or status).
//! - `daemon`: null when no daemon is watching (no `daemon.json`, or its process is gone);
//!   else `{pid, started_at, updated_at, watch_mode, dashboard (its URL or null), counters: {events, rescans, reconciles,
//!   tallies, notifications, writes}, last_findings: [..up to 10, newest last]}`.

use crate::fs::snapshot::Polis;
use crate::operations::status::{summarize, Summary};
use crate::protocol::clock::PolisTime;

pub fn run(args: crate::commands::cli::JsonPolisArg) -> anyhow::Result<u8> {
    let root = super::locate(args.path.get())?;
    let polis = Polis::read(&root);
    let now = PolisTime::system(polis.settings.timezone);
    // An unreadable daemon.json says nothing about the polis: report "no daemon" and go on.
    let daemon = crate::fs::state::read_status(&root).ok().flatten();
    let mut summary = summarize(&polis, &now, daemon)?;
    summary.worktrees = crate::operations::status::worktrees(&polis);
    if args.json {
        say!("{}", serde_json::to_string_pretty(&summary)?);
    } else {
        say_part!("{}", render(&summary));
    }
    Ok(0)
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
                    c.working_on.clone().unwrap_or_else(|| "-".into()),
                    match (&c.last_activity, c.activity_source) {
                        (Some(t), Some("status")) => format!("{t} (status.md)"),
                        (Some(t), _) => t.clone(),
                        (None, _) => "never".into(),
                    },
                ]
            })
            .collect();
        out.push_str(&table(
            &["ID", "VENDOR", "STATE", "WORKING ON", "LAST ACTIVITY"],
            &rows,
        ));
    }

    let c = &s.contracts;
    out.push_str(&format!(
        "\nContracts\n  open {}   settled {}   abandoned {}\n",
        c.open, c.settled, c.abandoned
    ));

    out.push_str(&format!("  explore_rate {}\n", s.explore_rate));
    let e = &s.exploration;
    if let Some(share) = e.share {
        out.push_str(&format!(
            "  explored {} of the last {} routings ({:.1}%)\n",
            e.explored,
            e.routings,
            100.0 * share
        ));
    }

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
    if s.amendments.is_empty() && s.malformed_amendments.is_empty() {
        out.push_str("  (none proposed)\n");
    } else if !s.amendments.is_empty() {
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
                        format!("a tally would {}", a.tally_would())
                    },
                ]
            })
            .collect();
        out.push_str(&table(&["ID", "AGREES/QUORUM", "EXPIRES", "STATE"], &rows));
        // Nothing moves an amendment at quorum until a tally runs: say whether one will.
        if let Some(who) = s.who_tallies() {
            out.push_str(&format!("  who tallies: {who}\n"));
        }
    }
    for f in &s.malformed_amendments {
        out.push_str(&format!(
            "  malformed: {}\n",
            shorten(&f.to_string(), FINDING_WIDTH)
        ));
    }
    if !s.recent_outcomes.is_empty() {
        out.push_str("  recent outcomes:\n");
        for o in &s.recent_outcomes {
            match &o.ratified_at {
                Some(at) => out.push_str(&format!("    {} {} at {at}\n", o.amendment_id, o.status)),
                None => out.push_str(&format!("    {} {}\n", o.amendment_id, o.status)),
            }
        }
    }

    if !s.councils.is_empty() {
        out.push_str("\nCouncils\n");
        for c in &s.councils {
            // The phase in the pages' words (`phase_words`), with what only a line here adds.
            let state = match (&c.problem, &c.decision, c.phase) {
                (Some(p), _, _) => shorten(p, FINDING_WIDTH),
                (None, Some(d), _) => format!("{}: {d}", c.phase_words),
                (None, None, crate::protocol::council::state::Phase::Fallback) => {
                    format!("{}: fell back to a chavruta review", c.phase_words)
                }
                (None, None, _) => c.phase_words.clone(),
            };
            out.push_str(&format!("  {} ({}): {state}\n", c.contract_id, c.mode));
        }
    }

    let f = &s.findings;
    out.push_str(&format!(
        "\nFindings: {}",
        super::check::summary(f.errors, f.warnings)
    ));
    if f.resolved > 0 {
        out.push_str(&format!(", {} resolved", f.resolved));
    }
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
            if let Some(url) = &d.dashboard {
                out.push_str(&format!("  dashboard {url}\n"));
            }
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

/// Left-aligned columns, two spaces apart, indented by two; widths count characters. A cell
/// is what an agent wrote (a vendor, a state, a tag): it is shown on one line, a line break
/// or tab written `\u000a`, `\u0009` as the terminal escaping writes the rest, and measured
/// as it is shown, so no cell starts a row of its own or pushes the next column out of line.
fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|row| row.iter().map(|c| one_line_cell(c)).collect())
        .collect();
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in &rows {
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
    for row in &rows {
        out.push_str(&line(row.iter().map(String::as_str).collect()));
    }
    out
}

/// `text` as a table shows it: what [`escape_for_terminal`] escapes, and line breaks and tabs
/// too, written `\uXXXX`.
///
/// [`escape_for_terminal`]: crate::protocol::input::escape_for_terminal
fn one_line_cell(text: &str) -> String {
    let escaped = crate::protocol::input::escape_for_terminal(text);
    let breaks = |c: char| matches!(c, '\t' | '\n' | '\u{2028}' | '\u{2029}');
    if !escaped.contains(breaks) {
        return escaped.into_owned();
    }
    escaped.chars().fold(String::new(), |mut out, c| {
        if breaks(c) {
            out.push_str(&format!("\\u{:04x}", c as u32));
        } else {
            out.push(c);
        }
        out
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::operations::status::{newest_findings, NEWEST_FINDINGS};
    use crate::protocol::finding::Finding;

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
    fn a_cell_an_agent_wrote_stays_on_its_row_and_in_its_column() {
        let t = table(
            &["ID", "VENDOR", "STATE"],
            &[
                vec!["agent-one".into(), "v\n## heading\tx".into(), "idle".into()],
                vec!["agent-two".into(), "v\u{1b}[2J".into(), "away".into()],
            ],
        );
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines.len(), 3, "{t}");
        assert_eq!(lines[1], "  agent-one  v\\u000a## heading\\u0009x  idle");
        assert_eq!(lines[2], "  agent-two  v\\u001b[2J                away");
        // Printing escapes nothing more: the columns stay where they were measured.
        assert_eq!(crate::protocol::input::escape_for_terminal(&t), t);
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
