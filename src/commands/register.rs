//! `polisd register ID --vendor V --model M [--tool CLI] --tags tag:rating,…`: adds a citizen to a polis
//! (see [`crate::operations::register`]).

use crate::commands::cli::RegisterArgs;
use crate::commands::Usage;
use crate::fs::snapshot;
use crate::fs::writer::Writer;
use crate::operations::register::{register, Refusal};
use crate::protocol::citizens::register::{parse_tags, NewCitizen};
use crate::protocol::clock::PolisTime;
use crate::protocol::layout;

pub fn run(args: RegisterArgs) -> anyhow::Result<u8> {
    let tags = parse_tags(&args.tags.join(",")).map_err(|e| Usage(e.to_string()))?;
    let citizen = NewCitizen {
        agent_id: args.agent_id,
        vendor: args.vendor,
        model: args.model,
        tool: args.tool,
        tags,
        cost: args.cost,
    };
    citizen
        .validate()
        .map_err(|e| Usage(format!("{e}; nothing was written")))?;
    let root = super::locate(args.path.get())?;
    // Only polis.yml (for the timezone): registering needs no scan of the polis.
    let settings_text =
        snapshot::read_text(&root, layout::POLIS_YML, Some(snapshot::MAX_RECORD_BYTES))
            .ok()
            .flatten();
    let zone = crate::protocol::settings::parse(settings_text.as_deref())
        .0
        .timezone;
    let now = PolisTime::system(zone);
    let writer = if args.dry_run {
        None
    } else {
        Some(Writer::new(&root)?)
    };
    match register(&root, writer.as_ref(), &citizen, &now) {
        Ok(done) => {
            if args.json {
                let row = serde_json::json!({
                    "registered": !args.dry_run,
                    "agent_id": done.agent_id,
                    "files": done.files,
                    "chronicle_line": done.chronicle_line,
                });
                say!("{}", serde_json::to_string_pretty(&row)?);
            } else {
                let verb = if args.dry_run { "would write" } else { "wrote" };
                if args.dry_run {
                    say!("dry run: {} (nothing written)", done.agent_id);
                } else {
                    say!("registered {}", done.agent_id);
                }
                for f in &done.files {
                    say!("  {verb} {f}");
                }
                say!("  {verb} chronicle.md: {}", done.chronicle_line);
            }
            Ok(0)
        }
        Err(Refusal::Invalid(e)) => Err(Usage(format!("{e}; nothing was written")).into()),
        Err(refusal) => {
            if args.json {
                say!(
                    "{}",
                    serde_json::to_string_pretty(&serde_json::json!({
                        "ok": false,
                        "error": super::refusal_text(&refusal),
                        "registered": false,
                        "agent_id": citizen.agent_id,
                        "refused": super::refusal_text(&refusal),
                    }))?
                );
            }
            tell!("polisd: {}", super::refusal_text(&refusal));
            Ok(1)
        }
    }
}
