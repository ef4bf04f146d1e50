//! `polisd review CID --as ID --decision signed_off|requested_changes|rejected [--body FILE]`.

use crate::commands::agent::{finish, read_body, warnings, Env};
use crate::commands::cli::{DecisionArg, ReviewArgs};
use crate::protocol::contracts::review::Decision;

pub fn run(a: ReviewArgs) -> anyhow::Result<u8> {
    let env = Env::open(&a.opts)?;
    let decision = match a.decision {
        DecisionArg::SignedOff => Decision::SignedOff,
        DecisionArg::RequestedChanges => Decision::RequestedChanges,
        DecisionArg::Rejected => Decision::Rejected,
    };
    let r = read_body("--body", a.body.as_deref()).and_then(|body| {
        crate::operations::review::review(
            &env.writer,
            &env.now,
            &a.contract_id,
            &a.citizen,
            &decision,
            &body,
        )
    });
    finish(&a.opts, r, |x| {
        format!(
            "{} on {} -> {}{}",
            x.decision,
            x.contract_id,
            x.path,
            warnings(Some(&x.chronicle))
        )
    })
}
