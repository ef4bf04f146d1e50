//! The daemon's activity log: one JSON line per thing it did to a polis (a write, a notice, a
//! tally), with why, in the polis's state folder (never in `_polis/`). `polisd activity` reads
//! it. Bounded: past [`MAX_BYTES`] the file becomes `activity.1.jsonl` (the previous one is
//! dropped), so a daemon running for months keeps at most twice that.

use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The current log, in a polis's state folder.
pub const FILE: &str = "activity.jsonl";
/// The previous log, kept after a rotation.
pub const OLD_FILE: &str = "activity.1.jsonl";
/// Size past which the log is rotated.
pub const MAX_BYTES: u64 = 1 << 20;

/// One thing the daemon did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Activity {
    /// RFC 3339, UTC.
    pub at: String,
    /// `wrote`, `notified`, `routed`, `tallied`, `merged`, `rolled-over`, `restored`, `dropped`
    /// (a lost notice not delivered again), `started`, `stopped`.
    pub action: String,
    /// The file written, relative to `_polis/`, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Why: what polisd saw that called for it.
    pub cause: String,
}

impl Activity {
    pub fn now(action: &str, path: Option<&str>, cause: impl Into<String>) -> Activity {
        Activity {
            at: crate::fs::state::now_rfc3339(),
            action: action.to_string(),
            path: path.map(str::to_string),
            cause: cause.into(),
        }
    }
}

/// Appends `entry` to the log in `dir` (one write), rotating it first when it is too large.
pub fn record(dir: &Path, entry: &Activity) -> std::io::Result<()> {
    let path = dir.join(FILE);
    if std::fs::metadata(&path).is_ok_and(|m| m.len() > MAX_BYTES) {
        std::fs::rename(&path, dir.join(OLD_FILE))?;
    }
    let mut line = serde_json::to_vec(entry).map_err(std::io::Error::other)?;
    line.push(b'\n');
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .read(true)
        .append(true)
        .open(&path)?;
    // After a line cut by a crash, this one starts its own line rather than join it.
    let len = file.metadata()?.len();
    let mut last = [0u8];
    if len > 0
        && std::os::unix::fs::FileExt::read_at(&file, &mut last, len - 1)? == 1
        && last[0] != b'\n'
    {
        line.insert(0, b'\n');
    }
    file.write_all(&line)
}

/// Every entry, oldest first (the rotated file, then the current one). Lines that do not parse
/// (a line cut by a crash, damaged bytes) are skipped.
pub fn read(dir: &Path) -> Vec<Activity> {
    [OLD_FILE, FILE]
        .iter()
        .flat_map(|name| {
            // Line by line as bytes: damaged bytes cost their own line, not the whole file.
            std::fs::read(dir.join(name))
                .unwrap_or_default()
                .split(|b| *b == b'\n')
                .filter_map(|line| serde_json::from_slice(line).ok())
                .collect::<Vec<_>>()
        })
        .collect()
}

/// The state folder of the polis at `root` (where its daemon keeps the log).
pub fn dir_for(root: &Path) -> Result<PathBuf, crate::fs::state::StateError> {
    let base = crate::fs::state::state_base_dir()?;
    let canonical = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    Ok(crate::fs::state::polis_state_dir(&base, &canonical))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn activity_log_reads_back_oldest_first_across_a_rotation() {
        let dir = tempfile::tempdir().unwrap();
        let a = Activity::now("wrote", Some("contracts/routing_stats.yml"), "settled x");
        record(dir.path(), &a).unwrap();
        // Make the file look full: the next record rotates it.
        let big = "x".repeat(MAX_BYTES as usize + 1);
        std::fs::OpenOptions::new()
            .append(true)
            .open(dir.path().join(FILE))
            .unwrap()
            .write_all(format!("{big}\n").as_bytes())
            .unwrap();
        let b = Activity::now("notified", None, "c");
        record(dir.path(), &b).unwrap();
        assert_eq!(read(dir.path()), vec![a, b]);
        assert!(std::fs::metadata(dir.path().join(FILE)).unwrap().len() < 200);
    }

    #[test]
    fn a_damaged_line_costs_only_itself() {
        // A line cut by a crash, then bytes that are not UTF-8 (a damaged state folder): the
        // entries before and after them are still read.
        let dir = tempfile::tempdir().unwrap();
        let a = Activity::now("wrote", Some("contracts/routing_stats.yml"), "settled x");
        record(dir.path(), &a).unwrap();
        std::fs::OpenOptions::new()
            .append(true)
            .open(dir.path().join(FILE))
            .unwrap()
            .write_all(b"\xff\xfe not json\n{\"at\":\"2026-")
            .unwrap();
        let b = Activity::now("notified", None, "c");
        record(dir.path(), &b).unwrap();
        assert_eq!(read(dir.path()), vec![a, b]);
    }
}
