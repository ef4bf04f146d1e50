//! `polisd ready --as ID`: the citizen's ready queue.

use crate::commands::agent::finish;
use crate::commands::cli::ReadyArgs;
use crate::operations::ready;

pub fn run(args: ReadyArgs) -> anyhow::Result<u8> {
    let root = crate::commands::locate(args.opts.polis.as_deref())?;
    let result = ready::queue(&root, &args.citizen);
    finish(&args.opts, result, |q| {
        let mut out = String::new();
        if q.ready.is_empty() {
            out.push_str(&format!("nothing ready for {}\n", q.citizen));
        }
        for r in &q.ready {
            let why = if r.recommended {
                "recommended for you"
            } else {
                "on your tags"
            };
            out.push_str(&format!(
                "{}  {}  ({why}; unblocks {})\n",
                r.contract_id,
                crate::protocol::delivery::agent_text::flat(&r.title),
                r.unblocks
            ));
        }
        for h in &q.held {
            out.push_str(&format!(
                "held: {} (its touches overlap {}, in progress)\n",
                h.contract_id, h.overlaps
            ));
        }
        out.trim_end().to_string()
    })
}
