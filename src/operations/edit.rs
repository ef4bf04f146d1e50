//! Editing a file an agent owns without losing a byte of theirs (SPEC §11).

use super::ActionError;
use crate::fs::snapshot::{self};
use crate::fs::writer::{CompareOutcome, RenameOutcome, Writer};
use std::time::Duration;

/// Compare-before-replace edit of a file an agent owns (SPEC §11): compute the new text from
/// the current bytes, and start over if the file changed meanwhile. A file someone may still be
/// writing is not edited: [`ActionError::NotSettled`] (the writer keeps the path as deferred).
pub fn edit_agent_file(
    writer: &Writer,
    root: &std::path::Path,
    rel: &str,
    edit: impl Fn(&str) -> Option<String>,
) -> Result<bool, ActionError> {
    for _ in 0..5 {
        let Some(current) =
            snapshot::read_text(root, rel, None).map_err(|f| ActionError::Busy { path: f.path })?
        else {
            return Ok(false);
        };
        let Some(new) = edit(&current) else {
            return Ok(false);
        };
        if new == current {
            return Ok(false);
        }
        match writer.compare_and_replace(rel, current.as_bytes(), new.as_bytes())? {
            CompareOutcome::Written => return Ok(true),
            CompareOutcome::Unchanged => return Ok(false),
            CompareOutcome::Conflict { current: None } => return Ok(false),
            CompareOutcome::Conflict { .. } => continue,
            CompareOutcome::NotSettled {
                reason,
                retry_after,
            } => {
                return Err(ActionError::NotSettled {
                    path: rel.to_string(),
                    reason,
                    retry_after,
                })
            }
        }
    }
    Err(ActionError::Busy {
        path: rel.to_string(),
    })
}

/// How long a one-shot command waits, at most, for another program to finish writing a file
/// it must edit. It has no later pass to defer to, so it waits for itself; past this it says
/// what to do.
pub const COMMAND_WAIT: Duration = Duration::from_secs(10);

/// [`edit_agent_file`] for a one-shot command (`inbox archive`, `notices --mark-read`, `verify
/// --fix`): while another program still writes the file, it waits for it (the writer's moment
/// at a time, [`COMMAND_WAIT`] in all), and if that is not enough it refuses with what to do,
/// never with a promise of a later look no process will make.
pub fn edit_agent_file_now(
    writer: &Writer,
    root: &std::path::Path,
    rel: &str,
    edit: impl Fn(&str) -> Option<String>,
) -> Result<bool, ActionError> {
    edit_agent_file_within(writer, root, rel, edit, COMMAND_WAIT)
}

/// How long a command waits for another program's write while it holds the transition lock
/// (which every other transition of the polis waits on): about as long as a claim retries.
pub const LOCKED_WAIT: Duration = Duration::from_secs(2);

/// [`edit_agent_file_now`] waiting at most `wait`.
pub fn edit_agent_file_within(
    writer: &Writer,
    root: &std::path::Path,
    rel: &str,
    edit: impl Fn(&str) -> Option<String>,
    wait: Duration,
) -> Result<bool, ActionError> {
    let deadline = std::time::Instant::now() + wait;
    loop {
        match edit_agent_file(writer, root, rel, &edit) {
            Err(ActionError::NotSettled {
                reason,
                retry_after,
                ..
            }) if std::time::Instant::now() < deadline => {
                let _ = reason;
                std::thread::sleep(
                    retry_after.clamp(Duration::from_millis(20), Duration::from_millis(200)),
                );
            }
            Err(ActionError::NotSettled { path, reason, .. }) => {
                return Err(ActionError::StillWriting {
                    path,
                    reason,
                    waited: wait,
                })
            }
            other => return other,
        }
    }
}

/// Whether a command's compare-before-replace edit took: written, or the file said so already.
/// `false` means read the file again and try once more: it changed since it was read, or
/// another process still has it open for writing (then after [`wait_for_writer`]).
pub(crate) fn command_edit_took(outcome: CompareOutcome) -> bool {
    match outcome {
        CompareOutcome::Written | CompareOutcome::Unchanged => true,
        CompareOutcome::Conflict { .. } => false,
        CompareOutcome::NotSettled { retry_after, .. } => {
            wait_for_writer(retry_after);
            false
        }
    }
}

/// Whether a command's move went through; `false` (after [`wait_for_writer`]) means another
/// process still had the file open for writing: read it again and try once more.
pub(crate) fn command_move_took(outcome: RenameOutcome) -> bool {
    match outcome {
        RenameOutcome::Moved | RenameOutcome::AlreadyMoved => true,
        RenameOutcome::NotSettled { retry_after, .. } => {
            wait_for_writer(retry_after);
            false
        }
    }
}

/// A command waits out another process's write for the writer's moment, but never more than
/// 200 ms at a time: a person or an agent is waiting on it (the daemon defers instead).
fn wait_for_writer(retry_after: Duration) {
    std::thread::sleep(retry_after.min(Duration::from_millis(200)));
}
