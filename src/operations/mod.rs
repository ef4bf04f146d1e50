//! The application layer: every operation on a polis, written once and called by every front
//! end (the one-shot commands, the daemon, and the servers built on them).
//!
//! Each action takes a [`Polis`] read from disk, asks the pure core what should change, and
//! hands every write to the [`Writer`]. Every action is idempotent: it derives what to do from
//! the folder's state (and the sent-notification ledger), so running it twice, or after a crash
//! half-way, changes nothing twice (SPEC §11).

pub mod agent_hooks;
pub mod amendment;
pub mod arg;
mod check;
pub mod chronicle;
pub mod console;
pub mod context;
pub mod contract;
pub mod council;
mod deliver;
mod edit;
pub mod error;
pub mod gate;
pub mod guardrail;
pub mod handoff;
pub mod lesson;
pub mod lookup;
pub mod migrate;
pub mod published;
pub mod queue;
pub mod ready;
mod reconcile;
pub mod records;
pub mod reflection;
pub mod register;
pub mod reservation;
pub mod review;
pub mod route;
pub mod session;
mod staleness;
pub mod status;
pub mod summary;
pub mod sync;
pub mod tally;
#[cfg(test)]
pub(crate) mod test_polis;

pub use check::{
    amendment_problems, amendment_problems_with, chronicle_summary, chronicle_texts, count,
    dependency_findings, findings, findings_and_resolved, findings_and_resolved_beside,
    findings_and_resolved_from, findings_and_resolved_with, reservation_findings, Rechecks,
    Resolved,
};
pub use deliver::{archived_ids, deliver, deliver_now, Delivery, Outcome};
pub use edit::{edit_agent_file, edit_agent_file_now};
pub use error::OpError;
pub use reconcile::{
    current_stats, read_settled, reconcile_settled, reconcile_settled_with_progress,
    reconcile_with, AloneReconcile, LedgerUse, Reconciled, SettledRead, MATCH_WHILE_LISTING_ENV,
};
pub use staleness::stale_claims;
pub use tally::{active_citizens, tally, Electorate, TallyResult};

use crate::fs::writer::WriteError;

/// Errors of an action. Findings about agents' files are not errors; these are failures to
/// write that the caller reports (and the daemon retries on its next pass).
#[derive(Debug, thiserror::Error)]
pub enum ActionError {
    #[error(transparent)]
    Write(#[from] WriteError),
    #[error("cannot render routing_stats.yml: {0}")]
    Render(#[from] crate::yaml::EmitError),
    #[error("cannot list {path}/: {source}; routing_stats.yml is left as it is (rebuilt from an empty listing it would forget every settlement): make the folder readable (`chmod u+rx _polis/{path}`) and run `polisd reconcile`")]
    Unlistable {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "{path} kept changing while polisd tried to edit it; it will try again on the next change"
    )]
    Busy { path: String },
    #[error("{path} is not edited yet: {}; polisd looks again in {} ms", .reason.describe(), .retry_after.as_millis())]
    NotSettled {
        path: String,
        reason: crate::fs::writer::Unsettled,
        retry_after: std::time::Duration,
    },
    #[error("{path} is still being written by another program ({}) after {} s; nothing was changed: run the command again once that program has saved and closed it", .reason.describe(), .waited.as_secs())]
    StillWriting {
        path: String,
        reason: crate::fs::writer::Unsettled,
        waited: std::time::Duration,
    },
}

impl ActionError {
    /// Whether the action only waits for an agent to finish writing a file (not a failure).
    pub fn is_not_settled(&self) -> bool {
        matches!(self, ActionError::NotSettled { .. })
    }
}
