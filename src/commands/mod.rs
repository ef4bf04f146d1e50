//! The one-shot commands. Each gathers inputs with [`crate::snapshot`], calls the pure core and
//! hands writes to [`crate::writer`]; the daemon calls the same functions.

use crate::cli::Command;

/// Runs a command; the `u8` is the process exit code.
pub fn dispatch(command: Command) -> anyhow::Result<u8> {
    match command {
        _ => anyhow::bail!("not implemented yet"),
    }
}
