//! What the last session of a citizen on this machine saw of the chronicle near its cursor
//! (`protocol::delivery::catch_up::Seen`), so the next catch-up can tell a line merged in late
//! from one already shown. Kept in the polis's state folder (`catch_up/<citizen>.json`), per
//! user and never shared: each machine knows only what its own sessions showed.

use super::{
    canonical, io_err, polis_state_dir, read_record, replace_file, state_base_dir, StateError,
};
use crate::protocol::delivery::catch_up::{Cursor, Seen};
use chrono::NaiveDateTime;
use serde::{Deserialize, Serialize};
use std::fs;
use std::path::{Path, PathBuf};

/// The most digests kept: two weeks of a very busy polis.
const MAX_DIGESTS: usize = 50_000;
const STAMP: &str = "%Y-%m-%d %H:%M";

#[derive(Serialize, Deserialize)]
struct Record {
    /// The polisd that made it: another one may hash lines differently.
    polisd: String,
    cursor: String,
    lines: u64,
    from: String,
    digests: Vec<u64>,
}

fn file(polis_root: &Path, citizen: &str) -> Result<(PathBuf, String), StateError> {
    let dir = polis_state_dir(&state_base_dir()?, &canonical(polis_root)).join("catch_up");
    Ok((dir, format!("{citizen}.json")))
}

/// The record of `citizen`'s last session here; `None` when there is none or it cannot be read
/// (the catch-up then goes by the stamp alone, as before any was kept).
pub fn catch_up_seen(polis_root: &Path, citizen: &str) -> Option<Seen> {
    let (dir, name) = file(polis_root, citizen).ok()?;
    // Its digests at their most, each at most 20 digits, with room for the rest.
    let max = (MAX_DIGESTS as u64 + 1) * 24;
    let record: Record = serde_json::from_slice(&read_record(&dir.join(name), max)?).ok()?;
    if record.polisd != env!("CARGO_PKG_VERSION") {
        return None;
    }
    let stamp = |s: &str| NaiveDateTime::parse_from_str(s, STAMP).ok();
    Some(Seen {
        cursor: Some(Cursor {
            stamp: stamp(&record.cursor)?,
            lines: usize::try_from(record.lines).unwrap_or(usize::MAX),
        }),
        from: Some(stamp(&record.from)?),
        digests: {
            let mut d = record.digests;
            d.sort_unstable();
            d.dedup();
            d
        },
    })
}

/// Keeps `seen` as `citizen`'s last session here.
pub fn set_catch_up_seen(polis_root: &Path, citizen: &str, seen: &Seen) -> Result<(), StateError> {
    let (Some(cursor), Some(mut from)) = (seen.cursor, seen.from) else {
        return Ok(());
    };
    let mut digests = seen.digests.clone();
    if digests.len() > MAX_DIGESTS {
        // Without the stamps at hand, a record that would be too large starts at its cursor:
        // lines merged in before it are then taken as seen.
        digests.clear();
        from = cursor.stamp;
    }
    let record = Record {
        polisd: env!("CARGO_PKG_VERSION").to_string(),
        cursor: cursor.stamp.format(STAMP).to_string(),
        lines: cursor.lines as u64,
        from: from.format(STAMP).to_string(),
        digests,
    };
    let (dir, name) = file(polis_root, citizen)?;
    fs::create_dir_all(&dir).map_err(io_err("create", &dir))?;
    let bytes = serde_json::to_vec(&record).map_err(|source| StateError::Encode {
        path: dir.join(&name),
        source,
    })?;
    replace_file(&dir, &name, &bytes, false)
}
