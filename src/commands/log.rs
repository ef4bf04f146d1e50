//! `polisd log --as ID VERB [--link L] [--note N]`: one validated chronicle line.

use crate::commands::agent::{finish, warnings, Env};
use crate::commands::cli::LogArgs;

pub fn run(a: LogArgs) -> anyhow::Result<u8> {
    let env = Env::open(&a.opts)?;
    let r = crate::operations::chronicle::log(
        &env.writer,
        &env.now,
        &a.citizen,
        &a.verb,
        a.link.as_deref(),
        a.note.as_deref().unwrap_or("-"),
    );
    finish(&a.opts, r, |x| format!("{}{}", x.line, warnings(Some(x))))
}
