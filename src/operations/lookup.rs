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
            rule: "use lowercase letters, digits and hyphens".into(),
        })
    }
}

/// Refuses what may not be a contract's id: not a slug, or too long to name its file.
fn check_contract_id(id: &str) -> Result<(), OpError> {
    check_slug("contract id", id)?;
    if !layout::fits_file_name(id) {
        // Cut short: the id may be an argument of any length.
        return Err(OpError::BadId {
            what: "contract id",
            value: format!("{}…", &id[..40]),
            rule: "it is too long for a file name".into(),
        });
    }
    Ok(())
}

/// The path of contract `id` in `folder`, or the refusal of an id that could not be one (so no
/// caller needs to assume its id was checked).
pub fn contract_rel(folder: ContractFolder, id: &str) -> Result<String, OpError> {
    check_contract_id(id)?;
    layout::contract_path(folder, id).ok_or_else(|| OpError::NoContract(id.to_string()))
}

/// Where contract `id` is: its folder and path relative to `_polis/` (open, then settled, then
/// abandoned, as the reference searches).
///
/// A name that is there but is no regular file (a symbolic link, a folder) is named as such
/// when no folder holds the contract as a file, rather than called missing while
/// `polisd contract list` shows it.
pub fn find(root: &Path, id: &str) -> Result<(ContractFolder, String), OpError> {
    check_contract_id(id)?;
    let mut not_a_file = None;
    for folder in ContractFolder::ALL {
        let Some(rel) = layout::contract_path(folder, id) else {
            continue;
        };
        match std::fs::symlink_metadata(root.join(&rel)) {
            Ok(m) if m.file_type().is_file() => return Ok((folder, rel)),
            Ok(m) => {
                not_a_file.get_or_insert((rel, m.file_type().is_symlink()));
            }
            Err(_) => {}
        }
    }
    Err(match not_a_file {
        Some((path, true)) => OpError::Read {
            path,
            why:
                "it is a symbolic link, which polisd never follows; replace it with a regular file"
                    .into(),
        },
        Some((path, false)) => OpError::Read {
            path,
            why: "it is not a regular file; replace it with the contract's markdown file".into(),
        },
        None => OpError::NoContract(id.to_string()),
    })
}

/// `(folder name, card path)` for every citizen folder holding a capability card, sorted by
/// folder name. Folder names are as found: a caller checks them before writing.
pub fn card_files(root: &Path) -> Vec<(String, String)> {
    crate::fs::snapshot::subdirs(root, layout::CITIZENS_DIR)
        .into_iter()
        .map(|id| {
            let rel = format!("{}/{id}/capability_card.yml", layout::CITIZENS_DIR);
            (id, rel)
        })
        .filter(|(_, rel)| std::fs::symlink_metadata(root.join(rel)).is_ok())
        .collect()
}

/// The record filed earlier today that a new one would repeat (a replayed command): the ids
/// `base`, `base-2`, `base-3`… (the order `layout::unique_id` takes them in) are read up to
/// the first that is `free`, and the first whose text `same` accepts is returned as its path.
pub(crate) fn filed_earlier(
    root: &Path,
    base: &str,
    rel_of: impl Fn(&str) -> Option<String>,
    free: impl Fn(&str) -> bool,
    same: impl Fn(&str) -> bool,
) -> Option<String> {
    for n in 1u64.. {
        let id = if n == 1 {
            base.to_string()
        } else {
            format!("{base}-{n}")
        };
        let rel = rel_of(&id)?;
        match crate::fs::snapshot::read_text(
            root,
            &rel,
            Some(crate::fs::snapshot::MAX_RECORD_BYTES),
        ) {
            Ok(None) if free(&id) => return None,
            Ok(Some(text)) if same(&text) => return Some(rel),
            // Unreadable (a folder, a FIFO, a linked folder on the way) is not the earlier
            // filing; once nothing at all is there, no later id is either. Without this end a
            // folder that is a link made every id unreadable and the search endless.
            Err(_) if std::fs::symlink_metadata(root.join(&rel)).is_err() => return None,
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_contract_name_that_is_no_regular_file_is_named_not_called_missing() {
        let (_d, root, _w) = crate::operations::test_polis::polis_with(&[]);
        let open = root.join("contracts/open");
        std::fs::write(open.join("real.md"), "---\ncontract_id: real\n---\n").unwrap();
        std::os::unix::fs::symlink(open.join("real.md"), open.join("linked.md")).unwrap();
        std::fs::create_dir(open.join("folder.md")).unwrap();

        assert_eq!(
            find(&root, "real").unwrap(),
            (ContractFolder::Open, "contracts/open/real.md".to_string())
        );
        let linked = find(&root, "linked").unwrap_err().to_string();
        assert!(
            linked.contains("contracts/open/linked.md") && linked.contains("symbolic link"),
            "{linked}"
        );
        let folder = find(&root, "folder").unwrap_err().to_string();
        assert!(folder.contains("not a regular file"), "{folder}");
        assert!(matches!(find(&root, "absent"), Err(OpError::NoContract(_))));
    }
}
