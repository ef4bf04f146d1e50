//! The one-shot commands. Each gathers inputs with [`crate::snapshot`], calls the pure core and
//! hands writes to [`crate::writer`]; the daemon calls the same functions.

mod init;

use crate::cli::{Command, ServiceCommand};
use crate::service::ServiceAction;

/// Runs a command; the `u8` is the process exit code.
pub fn dispatch(command: Command) -> anyhow::Result<u8> {
    match command {
        Command::Service(args) => {
            let action = match args.action {
                ServiceCommand::Install => ServiceAction::Install,
                ServiceCommand::Uninstall => ServiceAction::Uninstall,
                ServiceCommand::Status => ServiceAction::Status,
            };
            crate::service::run(
                action,
                args.dry_run,
                args.config.as_deref(),
                &mut std::io::stdout().lock(),
            )
        }
        Command::Init(args) => {
            let project_name = args.project_name.clone().unwrap_or_else(|| {
                std::fs::canonicalize(&args.project_root)
                    .ok()
                    .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
                    .unwrap_or_else(|| "project".to_string())
            });
            let params = init::InitParams {
                agent_id: args.agent_id,
                project_name,
                vendor: args.vendor,
                model: args.model,
            };
            let (created, kept) = init::run(&args.project_root, &params)?;
            let root = args.project_root.join("_polis");
            println!(
                "initialised {}: {} files created, {} already present and kept",
                root.display(),
                created.len(),
                kept.len()
            );
            for rel in &kept {
                println!("  kept {rel}");
            }
            Ok(0)
        }
        _ => anyhow::bail!("not implemented yet"),
    }
}
