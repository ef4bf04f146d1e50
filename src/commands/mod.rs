//! The one-shot commands. Each gathers inputs with [`crate::snapshot`], calls the pure core and
//! hands writes to [`crate::writer`]; the daemon calls the same functions.

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
        _ => anyhow::bail!("not implemented yet"),
    }
}
