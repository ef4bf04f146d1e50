//! `polisd council start|status|write`: the work is `operations::council`; this
//! module parses, calls it and prints. `status` and `write` read only the council's own
//! files (and the contract, for its title); `start` reads the citizens to seat the panel.
//!
//! Exit codes: 0 done, 1 refused (one line saying what to do; nothing written), 2 usage.

use crate::commands::agent::{finish, read_body, Env};
use crate::commands::cli::Deferred;
use crate::commands::cli::{CouncilCommand, CouncilModeArg};
use crate::fs::snapshot::Polis;
use crate::operations::council::{self as op, StartOptions};
use crate::protocol::council::state::Phase;
use crate::protocol::council::Mode;

pub fn run(command: CouncilCommand) -> anyhow::Result<u8> {
    match command {
        CouncilCommand::Start(Deferred(a)) => {
            let env = Env::open(&a.opts)?;
            let polis = Polis::read_with(&env.root, false);
            let options = StartOptions {
                mode: a.mode.map(|m| match m {
                    CouncilModeArg::Full => Mode::Full,
                    CouncilModeArg::Quick => Mode::Quick,
                    CouncilModeArg::Duo => Mode::Duo,
                }),
                panel: a
                    .panel
                    .iter()
                    .map(|p| p.trim().to_string())
                    .filter(|p| !p.is_empty())
                    .collect(),
                triad: a.triad,
                profile: a.profile,
                panel_size: a.panel_size.map(usize::from),
                chairman: a.chairman,
                round_hours: a.round_hours,
            };
            if let Some(h) = options.round_hours.filter(|h| !(*h > 0.0 && *h <= 720.0)) {
                return Err(crate::commands::Usage(format!(
                    "--round-hours {h} is out of range; give a number of hours above 0, at most 720"
                ))
                .into());
            }
            let r = op::start(
                &env.writer,
                &env.now,
                &polis,
                &a.contract_id,
                "polisd council start",
                Some(&options),
            );
            let notices = r.as_ref().map(|s| s.notices.clone()).unwrap_or_default();
            let code = finish(&a.opts, r, |s| {
                let mut out = format!(
                    "Started a {} council on {} -> {}\n",
                    s.mode.as_str(),
                    s.contract_id,
                    s.path
                );
                for seat in &s.seats {
                    out.push_str(&format!(
                        "  {}  {} ({}), lens {}: {}\n",
                        seat.label,
                        seat.id,
                        seat.vendor,
                        seat.lens.as_deref().unwrap_or("none"),
                        seat.why
                    ));
                }
                out.push_str(&format!(
                    "  chairman: {}{}\n  {} (or until every seat has written)",
                    s.chairman,
                    if s.chairman_is_owner {
                        " (the owner: nobody was left off the panel)"
                    } else {
                        ""
                    },
                    s.phase_words
                ));
                for n in &s.notes {
                    out.push_str(&format!("\n  note: {n}"));
                }
                out
            })?;
            if code == 0 && !notices.is_empty() {
                let polis = Polis::read_with(&env.root, false);
                if !super::deliver_now(&polis, &env.writer, &notices, &env.now)? {
                    return Ok(1);
                }
            }
            Ok(code)
        }
        CouncilCommand::Status(Deferred(a)) => {
            let env = Env::open(&a.opts)?;
            finish(&a.opts, op::status(&env.root, &a.contract_id), |s| {
                let mut out = format!("Council on {} ({}): ", s.contract_id, s.mode.as_str());
                // The phase in the pages' words (`phase_words`), with what only the command
                // adds: whose verdict and where, the decision, why it stopped.
                out.push_str(&s.phase_words);
                match s.phase {
                    Phase::Rounds => {}
                    Phase::Verdict => out.push_str(&format!(
                        " ({}, in reviews/{}/verdict.md){}",
                        s.chairman,
                        s.contract_id,
                        if s.verdict_present {
                            " - present but not valid yet"
                        } else {
                            ""
                        }
                    )),
                    Phase::Done => out.push_str(&format!(
                        ": {}",
                        s.outcome.as_ref().map_or("-", |o| o.decision.as_str())
                    )),
                    Phase::Fallback => out.push_str(&format!(
                        ": {}",
                        s.fallback.as_ref().map_or("-", |f| f.why.as_str())
                    )),
                }
                out.push('\n');
                for seat in &s.seats {
                    let wrote = match (s.phase, seat.words) {
                        (Phase::Rounds, Some(w)) => format!("wrote {w} words"),
                        (Phase::Rounds, None) => "not written yet".into(),
                        _ => String::new(),
                    };
                    out.push_str(&format!(
                        "  {}  {}  {}  {}\n",
                        seat.label, seat.id, seat.state, wrote
                    ));
                }
                out.push_str(&format!(
                    "  chairman: {}{}",
                    s.chairman,
                    if s.chairman_is_owner {
                        " (the owner)"
                    } else {
                        ""
                    }
                ));
                for p in &s.verdict_problems {
                    out.push_str(&format!("\n  verdict: {p}"));
                }
                out
            })
        }
        CouncilCommand::Write(Deferred(a)) => {
            let env = Env::open(&a.opts)?;
            let r = read_body("FILE", Some(&a.file)).and_then(|text| {
                op::write_seat(&env.writer, &env.now, &a.contract_id, &a.citizen, &text)
            });
            finish(&a.opts, r, |w| {
                let mut out = format!(
                    "{} contribution to {} -> {} ({} of {} words; it closes {})",
                    if w.replaced {
                        "Replaced your"
                    } else {
                        "Wrote your"
                    },
                    w.round_words,
                    w.path,
                    w.words,
                    w.word_limit,
                    w.closes_at
                );
                if w.over_limit {
                    out.push_str(&format!(
                        "\n  warning: over the limit: the packet will show only the first {} words, marked as cut",
                        w.word_limit
                    ));
                }
                out
            })
        }
    }
}
