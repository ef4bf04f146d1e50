//! What `polisd hooks install` keeps for one person, outside the repository: the citizen id
//! each agent CLI acts as in this polis, and the settings files as they were before polisd
//! edited them (so uninstall gives back the very bytes). Both live in the polis's state folder
//! (`hooks/_identity.json`, `hooks/_installs.json`; a citizen id cannot start with `_`, so they
//! never meet a hook's rate-limit record), which is per user and never shared through git.

use super::{
    canonical, io_err, polis_state_dir, read_record, replace_file, state_base_dir, StateError,
};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

const IDENTITY_FILE: &str = "_identity.json";
const INSTALLS_FILE: &str = "_installs.json";
/// The most bytes of either file read: the settings files of three CLIs as they were (each at
/// most 4 MiB), escaped as JSON.
const MAX_MAP_BYTES: u64 = 64 * 1024 * 1024;

fn hooks_dir(polis_root: &Path) -> Result<PathBuf, StateError> {
    Ok(polis_state_dir(&state_base_dir()?, &canonical(polis_root)).join("hooks"))
}

fn read_map<T: for<'de> Deserialize<'de>>(polis_root: &Path, name: &str) -> BTreeMap<String, T> {
    hooks_dir(polis_root)
        .ok()
        .and_then(|dir| read_record(&dir.join(name), MAX_MAP_BYTES))
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or_default()
}

fn write_map<T: Serialize>(
    polis_root: &Path,
    name: &str,
    map: &BTreeMap<String, T>,
) -> Result<(), StateError> {
    let dir = hooks_dir(polis_root)?;
    fs::create_dir_all(&dir).map_err(io_err("create", &dir))?;
    let mut bytes = serde_json::to_vec_pretty(map).map_err(|source| StateError::Encode {
        path: dir.join(name),
        source,
    })?;
    bytes.push(b'\n');
    replace_file(&dir, name, &bytes, true)
}

/// The citizen id this person's `cli` hooks act as in the polis at `polis_root`, if recorded.
pub fn hook_identity(polis_root: &Path, cli: &str) -> Option<String> {
    read_map::<String>(polis_root, IDENTITY_FILE).remove(cli)
}

/// Records the citizen id of this person's `cli` hooks.
pub fn set_hook_identity(polis_root: &Path, cli: &str, citizen: &str) -> Result<(), StateError> {
    let mut map = read_map::<String>(polis_root, IDENTITY_FILE);
    if map.get(cli).map(String::as_str) == Some(citizen) {
        return Ok(());
    }
    map.insert(cli.to_string(), citizen.to_string());
    write_map(polis_root, IDENTITY_FILE, &map)
}

/// A settings file polisd installed hooks into: the digest of the text it wrote, and the text
/// before (`None`: polisd created the file).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InstallRecord {
    pub written_sha256: String,
    pub original: Option<String>,
}

/// The record of the settings file `rel` (relative to the project root), if any.
pub fn install_record(polis_root: &Path, rel: &str) -> Option<InstallRecord> {
    read_map::<InstallRecord>(polis_root, INSTALLS_FILE).remove(rel)
}

/// Records (or, with `None`, forgets) what polisd wrote to `rel` and what was there before.
pub fn set_install_record(
    polis_root: &Path,
    rel: &str,
    record: Option<InstallRecord>,
) -> Result<(), StateError> {
    let mut map = read_map::<InstallRecord>(polis_root, INSTALLS_FILE);
    let changed = match record {
        Some(r) => map.insert(rel.to_string(), r.clone()) != Some(r),
        None => map.remove(rel).is_some(),
    };
    if changed {
        write_map(polis_root, INSTALLS_FILE, &map)?;
    }
    Ok(())
}
