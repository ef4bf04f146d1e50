//! The key that turns ids into a redacted report's pseudonyms (`report_key` in the polis's
//! state folder). Kept on this machine and never shared, so one id reads the same in every
//! report made here, while a reader of a report cannot hash a guessed id, tag or path and look
//! for it: without the key a pseudonym says nothing.

use super::{canonical, io_err, polis_state_dir, state_base_dir, StateError};
use crate::protocol::digest::hex;
use std::fs;
use std::io::Write as _;
use std::path::Path;

const NAME: &str = "report_key";

/// This machine's key for `polis_root`, made on first use. Two reports made at once agree:
/// the first key to land is the one both read.
pub fn report_key(polis_root: &Path) -> Result<[u8; 32], StateError> {
    let dir = polis_state_dir(&state_base_dir()?, &canonical(polis_root));
    let path = dir.join(NAME);
    if let Some(key) = read(&path) {
        return Ok(key);
    }
    fs::create_dir_all(&dir).map_err(io_err("create", &dir))?;
    let key: [u8; 32] = rand::random();
    let mut tmp = tempfile::Builder::new()
        .prefix(".polisd-")
        .suffix(".tmp")
        .tempfile_in(&dir)
        .map_err(io_err("create a temporary file in", &dir))?;
    tmp.write_all(hex(&key).as_bytes())
        .and_then(|()| tmp.as_file().sync_all())
        .map_err(io_err("write", &path))?;
    // Never over a key another report made meanwhile: its pseudonyms are already out.
    match tmp.persist_noclobber(&path) {
        Ok(_) => Ok(key),
        Err(e) if e.error.kind() == std::io::ErrorKind::AlreadyExists => {
            read(&path).ok_or_else(|| StateError::Io {
                op: "read",
                path: path.clone(),
                source: std::io::Error::other("the report key is not 64 hex digits"),
            })
        }
        Err(e) => Err(io_err("write", &path)(e.error)),
    }
}

fn read(path: &Path) -> Option<[u8; 32]> {
    let text = fs::read_to_string(path).ok()?;
    let text = text.trim();
    if text.len() != 64 || !text.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let mut key = [0u8; 32];
    for (i, byte) in key.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&text[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_is_made_once_and_read_back() {
        let state = tempfile::tempdir().unwrap();
        let polis = tempfile::tempdir().unwrap();
        let dir = polis_state_dir(state.path(), &canonical(polis.path()));
        fs::create_dir_all(&dir).unwrap();
        assert_eq!(read(&dir.join(NAME)), None);
        let key = [7u8; 32];
        fs::write(dir.join(NAME), hex(&key)).unwrap();
        assert_eq!(read(&dir.join(NAME)), Some(key));
        fs::write(dir.join(NAME), "short").unwrap();
        assert_eq!(read(&dir.join(NAME)), None);
    }
}
