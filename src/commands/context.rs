//! `polisd context CID` (also `polisd contract context CID`).

use crate::commands::agent::finish;
use crate::commands::cli::ContextArgs;

pub fn run(a: ContextArgs) -> anyhow::Result<u8> {
    let root = crate::commands::locate(a.opts.polis.as_deref())?;
    let r = crate::operations::context::packet(&root, &a.contract_id);
    finish(&a.opts, r, crate::operations::context::render)
}
