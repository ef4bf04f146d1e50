//! What an agent may pass to polisd, checked at the edge (the command line, MCP, HTTP) before
//! anything is read or written: text without control characters, an acting id that is no
//! system citizen and can be no path, a link that stays inside `_polis/`.
//!
//! It never repairs a value: a refused value is named with what to do instead, and nothing is
//! written.

use crate::protocol::layout;

/// The longest free text one field of an agent's or a person's action keeps (a message, a
/// reservation's note): far above what a note needs, far below what makes a shared file too
/// large to read.
pub const MAX_TEXT_CHARS: usize = 4000;

/// Why a value an agent passed was refused (a usage error: the same on every retry).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InputError {
    #[error("{what} holds the control character {code} at character {at}; pass printable text (tab and newline are allowed)")]
    Control {
        what: String,
        code: String,
        at: usize,
    },
    #[error("`{id}` is a system identity that only polisd writes as; pass your own citizen id")]
    Reserved { id: String },
    #[error("`{value}` is not a valid {what}: use lowercase letters, digits and hyphens")]
    NotAnId { what: String, value: String },
    #[error("the link `{link}` leaves _polis/; pass a path inside it, relative to _polis/ (e.g. contracts/open/x)")]
    OutsidePolis { link: String },
    #[error("{what} is {length} {unit} long; keep it within {max} ({why})")]
    TooLong {
        what: String,
        length: usize,
        unit: &'static str,
        max: usize,
        why: &'static str,
    },
}

/// The longest value echoed whole in a message: past it, [`excerpt`] shows its start.
pub const ECHO_CHARS: usize = 80;

/// `text` as a message may quote it: whole when short, else its first `max_chars` characters
/// and its size, so a refusal of a 100 KB value stays one readable line.
pub use crate::yaml::excerpt;

/// `text` with every word (a run without spaces) longer than `max_chars` quoted by its start
/// ([`excerpt`]): a message built around a value an agent passed (an id, a path, a whole file
/// given as an argument) stays readable however long that value was. Words of the message's
/// own text are far shorter.
pub fn short_words(text: &str, max_chars: usize) -> String {
    if text.len() <= max_chars {
        return text.to_string();
    }
    text.split(' ')
        .map(|word| {
            if word.chars().nth(max_chars).is_some() {
                excerpt(word, ECHO_CHARS)
            } else {
                word.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Refuses `text` longer than `max` characters; `what` names the field, `why` says what a
/// value that long should be instead.
pub fn check_chars(
    what: &str,
    text: &str,
    max: usize,
    why: &'static str,
) -> Result<(), InputError> {
    let length = text.chars().count();
    if length <= max {
        return Ok(());
    }
    Err(InputError::TooLong {
        what: what.to_string(),
        length,
        unit: "characters",
        max,
        why,
    })
}

/// A character agents may not pass in text: C0 controls but tab and newline, DEL, C1
/// controls, and the bidirectional embeddings, overrides and isolates that make a terminal
/// or an editor show text in another order than it is stored.
pub fn is_forbidden_char(c: char) -> bool {
    matches!(c,
        '\u{0}'..='\u{8}' | '\u{b}'..='\u{1f}' | '\u{7f}'..='\u{9f}'
        | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// Refuses text with a character [`is_forbidden_char`] names; `what` names the argument.
pub fn check_text(what: &str, text: &str) -> Result<(), InputError> {
    match text
        .chars()
        .enumerate()
        .find(|(_, c)| is_forbidden_char(*c))
    {
        None => Ok(()),
        Some((at, c)) => Err(InputError::Control {
            what: what.to_string(),
            code: format!("U+{:04X}", c as u32),
            at: at + 1,
        }),
    }
}

/// Where a one-line text (a title, a criterion, a guardrail, a reason, a note, a card's field)
/// breaks its line: the first line break or other control character, tab allowed, as
/// `(character number from 1, what it is)`: "a line break (U+000A)", "the control character
/// U+0007". Such a text is written into a heading, a list item or
/// a line a reader counts, where a line break would write structure of its own (a vote, a
/// checked criterion, a handoff block). Unicode's line and paragraph separators count too.
pub fn line_break(text: &str) -> Option<(usize, String)> {
    text.chars()
        .enumerate()
        .find(|(_, c)| {
            (c.is_control() && *c != '\t')
                || matches!(c, '\u{2028}' | '\u{2029}')
                || is_forbidden_char(*c)
        })
        .map(|(at, c)| {
            let code = format!("U+{:04X}", c as u32);
            let what = if matches!(
                c,
                '\n' | '\r' | '\u{b}' | '\u{c}' | '\u{85}' | '\u{2028}' | '\u{2029}'
            ) {
                format!("a line break ({code})")
            } else {
                format!("the control character {code}")
            };
            (at + 1, what)
        })
}

/// A deadline as polisd writes one: `YYYY-MM-DD`, or `YYYY-MM-DD HH:MM`, a real day and time.
pub fn is_deadline(text: &str) -> bool {
    chrono::NaiveDate::parse_from_str(text, "%Y-%m-%d").is_ok() && text.len() == 10
        || chrono::NaiveDateTime::parse_from_str(text, "%Y-%m-%d %H:%M").is_ok() && text.len() == 16
}

/// Refuses what may not be the id an agent acts as: a system citizen (SPEC §2), or anything
/// that is not a slug (and so could become a path).
pub fn check_acting_id(id: &str) -> Result<(), InputError> {
    if layout::is_system_citizen(id) {
        return Err(InputError::Reserved { id: id.to_string() });
    }
    check_slug("citizen id", id)
}

/// Refuses what may not be a contract id, tag or other slug-shaped name.
pub fn check_slug(what: &str, value: &str) -> Result<(), InputError> {
    if layout::is_slug(value) {
        Ok(())
    } else {
        Err(InputError::NotAnId {
            what: what.to_string(),
            value: excerpt(value, ECHO_CHARS),
        })
    }
}

/// Refuses a chronicle link that could name something outside `_polis/`: an absolute path, a
/// `..` component, a backslash, NUL or another control character. `[[…]]` and a leading
/// `_polis/` are accepted as SPEC §2 writes wikilinks.
pub fn check_link(link: &str) -> Result<(), InputError> {
    check_text("the link", link)?;
    let inner = link
        .trim()
        .trim_start_matches("[[")
        .trim_end_matches("]]")
        .trim();
    let inner = inner.strip_prefix("_polis/").unwrap_or(inner);
    let outside = inner.starts_with('/')
        || inner.starts_with('~')
        || inner.contains('\\')
        || inner.contains('\n')
        || inner.contains('\t')
        || inner.split('/').any(|part| part == ".." || part == ".");
    if outside {
        Err(InputError::OutsidePolis {
            link: excerpt(link, ECHO_CHARS),
        })
    } else {
        Ok(())
    }
}

/// Text read from files, made safe to print on a terminal: every character
/// [`is_forbidden_char`] names is written as `\uXXXX`. That is also JSON's escape, so a JSON
/// document printed through this reads back to the same strings.
pub fn escape_for_terminal(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.chars().any(is_forbidden_char) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if is_forbidden_char(c) {
            out.push_str(&format!("\\u{:04x}", c as u32));
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_one_line_text_holds_no_line_break_nor_control_character() {
        assert_eq!(line_break("Ban tabs\tin code"), None);
        assert_eq!(
            line_break("Ban\n## x"),
            Some((4, "a line break (U+000A)".into()))
        );
        assert_eq!(
            line_break("a\rb"),
            Some((2, "a line break (U+000D)".into()))
        );
        assert_eq!(
            line_break("a\u{85}b"),
            Some((2, "a line break (U+0085)".into()))
        );
        assert_eq!(
            line_break("a\u{7}b"),
            Some((2, "the control character U+0007".into()))
        );
        assert_eq!(
            line_break("a\u{2028}b"),
            Some((2, "a line break (U+2028)".into()))
        );
    }

    #[test]
    fn a_deadline_is_a_day_or_a_day_and_a_minute() {
        for ok in ["2026-12-31", "2026-12-31 17:00"] {
            assert!(is_deadline(ok), "{ok}");
        }
        for bad in [
            "next friday",
            "2026-02-30",
            "2026-12-31\n## x",
            "2026-1-5",
            "2026-12-31 17:00:00",
            "2026-12-31T17:00",
        ] {
            assert!(!is_deadline(bad), "{bad}");
        }
    }

    #[test]
    fn a_long_word_is_quoted_by_its_start_and_the_rest_kept() {
        let long = "a".repeat(10_000);
        let text = format!("`{long}` is not a registered citizen; register first");
        let short = short_words(&text, 200);
        assert!(short.len() < 200, "{short}");
        assert!(
            short.ends_with("(10002 bytes) is not a registered citizen; register first"),
            "{short}"
        );
        let plain = "a message of ordinary words, kept as it is";
        assert_eq!(short_words(plain, 10), plain);
    }

    #[test]
    fn terminal_output_escapes_what_files_hold() {
        assert_eq!(escape_for_terminal("a\tb\nc"), "a\tb\nc");
        assert_eq!(
            escape_for_terminal("x\x1b[2Jy\u{202e}z\x07"),
            "x\\u001b[2Jy\\u202ez\\u0007"
        );
        let json = serde_json::json!({"t": "a\u{7f}b\u{202e}"}).to_string();
        let back: serde_json::Value = serde_json::from_str(&escape_for_terminal(&json)).unwrap();
        assert_eq!(back["t"], "a\u{7f}b\u{202e}");
    }

    #[test]
    fn control_characters_are_refused_tab_and_newline_kept() {
        assert!(check_text("the note", "a\tb\nc é 日本").is_ok());
        for bad in [
            "\0", "\x1b[31m", "\x07", "\r", "\x7f", "\u{85}", "\u{202e}", "\u{2067}",
        ] {
            let e = check_text("the note", &format!("x{bad}y")).unwrap_err();
            assert!(e.to_string().contains("at character 2"), "{e}");
        }
    }

    #[test]
    fn system_identities_and_path_like_ids_cannot_act() {
        for id in layout::SYSTEM_CITIZENS {
            assert!(matches!(
                check_acting_id(id),
                Err(InputError::Reserved { .. })
            ));
        }
        for id in ["../x", "/etc", "a/b", "a\0b", "", "A"] {
            assert!(check_acting_id(id).is_err(), "{id:?}");
        }
        assert!(check_acting_id("claude-agent-1").is_ok());
    }

    #[test]
    fn links_stay_inside_the_polis() {
        for ok in [
            "contracts/open/x",
            "[[contracts/open/x]]",
            "_polis/chronicle.md",
        ] {
            assert!(check_link(ok).is_ok(), "{ok}");
        }
        for bad in [
            "../../../etc/passwd",
            "/etc/passwd",
            "[[../x]]",
            "contracts/../../x",
            "a\\..\\b",
            "x\0",
            "~/x",
        ] {
            assert!(check_link(bad).is_err(), "{bad}");
        }
    }
}
