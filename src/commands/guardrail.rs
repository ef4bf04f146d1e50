//! `polisd guardrail add|list`.

use crate::commands::agent::{finish, Env};
use crate::commands::cli::Deferred;
use crate::commands::cli::{split_tags, GuardrailCommand};
use crate::operations::guardrail;

pub fn run(command: GuardrailCommand) -> anyhow::Result<u8> {
    match command {
        GuardrailCommand::Add(Deferred(a)) => {
            let env = Env::open(&a.opts)?;
            let tags = split_tags(&a.tags);
            let r = guardrail::add(&env.writer, &env.now, &a.text, &tags, a.from.as_deref());
            finish(&a.opts, r, |g| {
                format!(
                    "Added guardrail {} (applies to: {})",
                    g.guardrail_id,
                    if tags.is_empty() {
                        "any".to_string()
                    } else {
                        tags.join(", ")
                    }
                )
            })
        }
        GuardrailCommand::List(Deferred(a)) => {
            let root = crate::commands::locate(a.opts.polis.as_deref())?;
            #[derive(serde::Serialize)]
            struct Listing {
                guardrails: Vec<crate::protocol::contracts::guardrail::Guardrail>,
            }
            finish(
                &a.opts,
                Ok(Listing {
                    guardrails: guardrail::list(&root),
                }),
                |l| {
                    if l.guardrails.is_empty() {
                        return "No guardrails yet.".into();
                    }
                    l.guardrails
                        .iter()
                        .map(|g| format!("  ⚠️ {}  [{}]", g.text, g.tags.join(", ")))
                        .collect::<Vec<_>>()
                        .join("\n")
                },
            )
        }
    }
}
