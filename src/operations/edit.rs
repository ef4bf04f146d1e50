//! Editing a file an agent owns without losing a byte of theirs (SPEC §11).

use super::ActionError;
use crate::fs::snapshot::{self};
use crate::fs::writer::{CompareOutcome, Writer};

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
