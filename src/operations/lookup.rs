//! Finding a contract by id and checking ids before they become paths: the lookups every
//! agents' operation starts with. It reads no more than a few `lstat`s.

use crate::operations::error::OpError;
use crate::protocol::layout::{self, ContractFolder};
use std::path::Path;

/// Refuses what may not become a contract id or tag.
pub fn check_slug(what: &'static str, value: &str) -> Result<(), OpError> {
    if layout::is_slug(value) {
        Ok(())
    } else {
        Err(OpError::BadId {
            what,
            value: value.to_string(),
            rule: "use lowercase letters, digits and hyphens",
        })
    }
}

/// Where contract `id` is: its folder and path relative to `_polis/` (open, then settled, then
/// abandoned, as the reference searches).
pub fn find(root: &Path, id: &str) -> Result<(ContractFolder, String), OpError> {
    check_slug("contract id", id)?;
    ContractFolder::ALL
        .into_iter()
        .find_map(|folder| {
            let rel = layout::contract_path(folder, id)?;
            std::fs::symlink_metadata(root.join(&rel))
                .is_ok_and(|m| m.file_type().is_file())
                .then_some((folder, rel))
        })
        .ok_or_else(|| OpError::NoContract(id.to_string()))
}
