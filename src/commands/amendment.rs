//! `polisd amendment propose|vote|list`.

use crate::commands::agent::{finish, read_body, warnings, Env};
use crate::commands::cli::Deferred;
use crate::commands::cli::{AmendmentCommand, VoteArg};
use crate::operations::amendment::{self, ProposeRequest};
use crate::protocol::amendments::amendment::Vote;

pub fn run(command: AmendmentCommand) -> anyhow::Result<u8> {
    match command {
        AmendmentCommand::Propose(Deferred(a)) => {
            let env = Env::open(&a.opts)?;
            let r = read_body("--body", a.body.as_deref()).and_then(|body| {
                let req = ProposeRequest {
                    title: a.title,
                    by: a.by,
                    body,
                    expires: a.expires,
                    quorum: a.quorum,
                    ..ProposeRequest::default()
                };
                amendment::propose(&env.writer, &env.now, &req)
            });
            finish(&a.opts, r, |p| {
                format!(
                    "Proposed amendment {} -> {}{}",
                    p.amendment_id,
                    p.path,
                    warnings(p.chronicle.as_ref())
                )
            })
        }
        AmendmentCommand::Vote(Deferred(a)) => {
            let env = Env::open(&a.opts)?;
            let vote = match a.vote {
                VoteArg::Agree => Vote::Agree,
                VoteArg::Disagree => Vote::Disagree,
                VoteArg::Abstain => Vote::Abstain,
                VoteArg::RequestChanges => Vote::RequestChanges,
            };
            let r = amendment::vote(
                &env.writer,
                &env.now,
                &a.amendment_id,
                &a.citizen,
                vote,
                a.rationale.as_deref(),
            );
            finish(&a.opts, r, |v| {
                format!(
                    "{} voted {} on {}{}",
                    v.citizen,
                    v.vote,
                    v.amendment_id,
                    warnings(Some(&v.chronicle))
                )
            })
        }
        AmendmentCommand::List(Deferred(a)) => {
            let root = crate::commands::locate(a.opts.polis.as_deref())?;
            #[derive(serde::Serialize)]
            struct Listing {
                amendments: Vec<amendment::AmendmentSummary>,
            }
            let rows = amendment::list(&root);
            finish(&a.opts, Ok(Listing { amendments: rows }), |l| {
                if l.amendments.is_empty() {
                    return "No amendments.".into();
                }
                l.amendments
                    .iter()
                    .map(|x| {
                        let n = |k: &str| x.votes.get(k).map_or(0, Vec::len);
                        // The count the tally uses, so that it matches `polisd tally`'s.
                        let agree = match &x.implied_agree {
                            Some(_) => format!("{} (the proposer's included)", x.agrees),
                            None => x.agrees.to_string(),
                        };
                        format!(
                            "  {:40} [{:8}] agree {} disagree {} abstain {} changes {}  {}",
                            x.amendment_id,
                            x.status,
                            agree,
                            n("disagree"),
                            n("abstain"),
                            n("request_changes"),
                            // One row per amendment, whatever a hand-written title holds.
                            crate::protocol::delivery::agent_text::flat(&x.title)
                        )
                    })
                    .collect::<Vec<_>>()
                    .join("\n")
            })
        }
    }
}
