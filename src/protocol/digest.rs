//! The SHA-256 names the protocol gives things: a file's hash, a line's key, and the
//! 16-hex-digit ids of notifications, messages and polisd's own lines. Each encoding is written
//! once, so every machine and every version names the same thing the same way.

use sha2::{Digest, Sha256};

/// The SHA-256 of `bytes`.
pub fn sha256(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

/// The SHA-256 of `bytes` in lowercase hex, the form hashes take in files and state.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&sha256(bytes))
}

/// The first 16 hex digits of the SHA-256 of `bytes`: an id short enough for a marker or a
/// notice, with 64 bits against collisions.
pub fn short_id(bytes: &[u8]) -> String {
    hex(&sha256(bytes)[..8])
}

/// The [`short_id`] of `fields`, each written as a netstring (`<byte length>:<bytes>,`). The
/// length prefixes make the encoding unambiguous whatever the fields hold (`("a:b", "c")` and
/// `("a", "b:c")` differ), and the id depends on nothing else.
pub fn netstring_id(fields: &[&str]) -> String {
    let mut h = Sha256::new();
    for field in fields {
        h.update(field.len().to_string().as_bytes());
        h.update(b":");
        h.update(field.as_bytes());
        h.update(b",");
    }
    hex(&h.finalize()[..8])
}

/// `bytes` in lowercase hex.
pub fn hex(bytes: &[u8]) -> String {
    // A table rather than `format!` per byte: a merge hashes every line of both sides.
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(DIGITS[usize::from(b >> 4)] as char);
        out.push(DIGITS[usize::from(b & 15)] as char);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_is_lowercase_and_two_digits_a_byte() {
        assert_eq!(hex(&[0x00, 0x0f, 0xa5, 0xff]), "000fa5ff");
    }

    #[test]
    fn the_digests_are_sha256_as_documented() {
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(short_id(b"abc"), "ba7816bf8f01cfea");
    }

    #[test]
    fn a_netstring_id_tells_apart_fields_that_join_alike() {
        // sha256("3:a:b,1:c,") and sha256("1:a,3:b:c,"), pinned.
        assert_eq!(netstring_id(&["a:b", "c"]), short_id(b"3:a:b,1:c,"));
        assert_eq!(netstring_id(&["a", "b:c"]), short_id(b"1:a,3:b:c,"));
        assert_ne!(netstring_id(&["a:b", "c"]), netstring_id(&["a", "b:c"]));
        assert_eq!(netstring_id(&[]), short_id(b""));
    }
}
