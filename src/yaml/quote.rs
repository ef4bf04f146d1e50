//! How a message quotes a value it did not write (a scalar, a line, an id): whole when short,
//! else its start and its size, so a hand-written 100 KB value makes a message of a few
//! lines. It lives in the lowest layer so YAML's own load errors and every finding and refusal
//! above quote with the one function. It only shapes text; it never escapes it.

/// The most characters of a value a finding or a YAML error quotes whole: an ordinary line or
/// field value fits, and a message about a 100 KB one still reads in a few lines.
pub const QUOTED_CHARS: usize = 200;

/// `text` as a message may quote it: whole up to `max_chars` characters, else its first
/// `max_chars` characters, `…` and its size in bytes.
pub fn excerpt(text: &str, max_chars: usize) -> String {
    match text.char_indices().nth(max_chars) {
        Some((cut, _)) => format!("{}… ({} bytes)", &text[..cut], text.len()),
        None => text.to_string(),
    }
}

/// A value as a finding or a YAML error quotes it: [`excerpt`] at [`QUOTED_CHARS`]. The message
/// names the file and line, so the start is enough to find the rest.
pub fn quoted(text: &str) -> String {
    excerpt(text, QUOTED_CHARS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_is_quoted_whole_when_short_and_by_its_start_and_size_when_long() {
        let short = "- 2026-03-02 14:05 | claude-code-one | worked | - | done";
        assert_eq!(quoted(short), short);
        let edge = "é".repeat(QUOTED_CHARS);
        assert_eq!(quoted(&edge), edge);
        let long = "é".repeat(50_000);
        assert_eq!(
            quoted(&long),
            format!("{}… ({} bytes)", "é".repeat(QUOTED_CHARS), 100_000)
        );
        assert_eq!(excerpt("abcdef", 3), "abc… (6 bytes)");
        assert_eq!(excerpt("", 0), "");
    }
}
