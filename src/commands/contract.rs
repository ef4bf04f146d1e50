//! `polisd contract open|claim|settle|abandon|show|list|context`.

use crate::commands::agent::{finish, warnings, Env};
use crate::commands::cli::Deferred;
use crate::commands::cli::{split_tags, ContractCommand, StateArg};
use crate::operations::contract::{self, OpenRequest, SettleLesson, SettleRequest};
use crate::protocol::layout::ContractFolder;

pub fn run(command: ContractCommand) -> anyhow::Result<u8> {
    match command {
        ContractCommand::Open(Deferred(a)) => {
            let env = Env::open(&a.opts)?;
            let req = OpenRequest {
                title: a.title.trim().to_string(),
                by: a.by,
                tags: split_tags(&a.tags),
                stakes: a.stakes.as_str().into(),
                cost_ceiling: a.cost_ceiling.as_str().into(),
                deadline: a.deadline,
                accept: a.accept,
            };
            let r = contract::open(&env.writer, &env.now, &req);
            finish(&a.opts, r, |o| {
                format!(
                    "Opened contract {} -> {}{}{}",
                    o.contract_id,
                    o.path,
                    if o.inherited_guardrails > 0 {
                        format!(" ({} guardrail(s) inherited)", o.inherited_guardrails)
                    } else {
                        String::new()
                    },
                    warnings(Some(&o.chronicle))
                )
            })
        }
        ContractCommand::Claim(Deferred(a)) => {
            let env = Env::open(&a.opts)?;
            let r = contract::claim(
                &env.writer,
                &env.now,
                &a.contract_id,
                &a.citizen,
                a.force,
                a.reason.as_deref(),
            );
            finish(&a.opts, r, |c| {
                if c.already_owned {
                    format!(
                        "{} is already yours ({}); nothing written",
                        c.contract_id, c.owner
                    )
                } else {
                    format!(
                        "claimed {} for {}{}{}",
                        c.contract_id,
                        c.owner,
                        c.took_over_from
                            .as_ref()
                            .map(|p| format!(" (taken over from {p})"))
                            .unwrap_or_default(),
                        warnings(c.chronicle.as_ref())
                    )
                }
            })
        }
        ContractCommand::Settle(Deferred(a)) => {
            let env = Env::open(&a.opts)?;
            let req = SettleRequest {
                id: a.contract_id,
                quality: a.quality,
                minutes: a.minutes,
                by: a.by,
                outcome: a.outcome,
                lesson: a.lesson.map(|text| SettleLesson {
                    text,
                    impact: a.impact.unwrap_or(0),
                }),
                no_lesson: a.no_lesson,
                review_override: a.review_override.map(|o| match o.split_once(':') {
                    Some((who, why)) => (who.trim().to_string(), why.trim().to_string()),
                    None => (o.trim().to_string(), String::new()),
                }),
                reconcile_without_daemon: true,
                suggest: a
                    .suggest
                    .iter()
                    .map(|s| match s.split_once(':') {
                        Some((c, r)) => (c.trim().to_string(), r.trim().to_string()),
                        None => (s.trim().to_string(), String::new()),
                    })
                    .collect(),
            };
            let r = contract::settle(&env.writer, &env.now, &req);
            finish(&a.opts, r, |s| {
                let mut out = format!(
                    "settled {} (quality {}) -> {}{}",
                    s.contract_id,
                    s.quality_score,
                    s.path,
                    if s.resumed {
                        " (finished an interrupted settle)"
                    } else {
                        ""
                    }
                );
                if let Some(l) = &s.lesson {
                    out.push_str(&format!("\nfiled lesson {} -> {}", l.lesson_id, l.path));
                }
                match s.reconciled {
                    Some(true) => out.push_str("\nno daemon running: routing_stats.yml rebuilt"),
                    Some(false) => out.push_str("\nno daemon running: routing_stats.yml unchanged"),
                    None => {}
                }
                if let Some(e) = &s.reconcile_error {
                    out.push_str(&format!(
                        "\nrouting_stats.yml not rebuilt: {e} (the settlement stands; `polisd reconcile` rebuilds the stats once that is fixed)"
                    ));
                }
                out.push_str(&released(&s.reservations));
                out.push_str(&warnings(s.chronicle.as_ref()));
                out
            })
        }
        ContractCommand::Abandon(Deferred(a)) => {
            let env = Env::open(&a.opts)?;
            let r = contract::abandon(
                &env.writer,
                &env.now,
                &a.contract_id,
                a.reason.as_deref(),
                a.citizen.as_deref(),
            );
            finish(&a.opts, r, |x| {
                format!(
                    "abandoned {} -> {}{}{}",
                    x.contract_id,
                    x.path,
                    released(&x.reservations),
                    warnings(x.chronicle.as_ref())
                )
            })
        }
        ContractCommand::Show(Deferred(a)) => {
            let root = crate::commands::locate(a.opts.polis.as_deref())?;
            let r = contract::show(&root, &a.contract_id);
            // The file's path, then its text, as the reference's `contract show` prints them.
            finish(&a.opts, r, |s| {
                let file = root.join(&s.path);
                let file = std::fs::canonicalize(&file).unwrap_or(file);
                format!("{}\n{}", file.display(), s.text.trim_end())
            })
        }
        ContractCommand::List(Deferred(a)) => {
            let root = crate::commands::locate(a.opts.polis.as_deref())?;
            let folder = match a.state {
                StateArg::Open => ContractFolder::Open,
                StateArg::Settled => ContractFolder::Settled,
                StateArg::Abandoned => ContractFolder::Abandoned,
            };
            let rows = contract::list(&root, folder, a.owner.as_deref());
            #[derive(serde::Serialize)]
            struct Listing {
                contracts: Vec<contract::Summary>,
            }
            finish(&a.opts, Ok(Listing { contracts: rows }), |l| {
                if l.contracts.is_empty() {
                    return format!("No {} contracts.", folder.name());
                }
                l.contracts
                    .iter()
                    .map(|r| {
                        format!(
                            "  {:32} [{:9}] owner={}  {}",
                            r.contract_id,
                            r.status,
                            r.owner.as_deref().unwrap_or("—"),
                            // One row per contract, whatever a hand-written title holds.
                            crate::protocol::delivery::agent_text::flat(&r.title)
                        )
                    })
                    .collect::<Vec<_>>()
                    .join("\n")
            })
        }
        ContractCommand::Context(Deferred(a)) => {
            crate::commands::context::run(crate::commands::cli::ContextArgs {
                contract_id: a.contract_id,
                opts: a.opts,
            })
        }
    }
}

/// The line about reservations the end of a contract released (nothing when none).
fn released(r: &contract::ReleasedReservations) -> String {
    match (&r.error, r.paths.is_empty()) {
        (Some(e), _) => format!("\nreservations not released yet (the daemon will): {e}"),
        (None, false) => format!("\nreleased reservations: {}", r.paths.join(", ")),
        (None, true) => String::new(),
    }
}
