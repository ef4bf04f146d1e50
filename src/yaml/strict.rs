//! What PyYAML's scanner and parser refuse but yaml-rust2 reads anyway. The reference reads
//! every file with PyYAML, so a text it cannot load is invalid YAML (SPEC §2) and must be a
//! finding here too, not a silently different value. Each rule was found by loading generated
//! near-YAML with both (`tests/reference_yaml_accept.rs`):
//!
//! - a tab where PyYAML looks for the next token: in indentation, after `:`, `-` or `?`,
//!   around or inside a plain scalar, on a whitespace-only line. Tabs inside quoted scalars,
//!   comments and block-scalar content are fine.
//! - a `:` at the start of a line with no key before it (`: value`, `: : bad yaml`), unless it
//!   answers an explicit `? key`.
//! - a `...` document-end marker with no document before it, or followed by more content.
//! - an anchor (`&name`) defined twice.
//! - a NUL or another control character anywhere, quoted or in a comment alike (PyYAML's
//!   reader refuses every character outside YAML's printable set before parsing; yaml-rust2
//!   takes a NUL for the end of the text and would silently drop everything after it, and
//!   reads the others into the value).
//!
//! Pure: text in, the first problem (with its 1-based line) out.

use super::quote::quoted;

/// Whether YAML 1.1 lets `c` appear in a stream: tab, the line breaks, the printable ASCII and
/// the rest of Unicode but for the C1 controls (NEL aside) and the two non-characters U+FFFE
/// and U+FFFF. PyYAML's reader applies exactly this set.
fn printable(c: char) -> bool {
    matches!(c,
        '\t' | '\n' | '\r' | ' '..='~' | '\u{85}' | '\u{A0}'..='\u{D7FF}'
        | '\u{E000}'..='\u{FFFD}' | '\u{10000}'..)
}

/// The first construct PyYAML would refuse, as (line, message).
pub fn check(text: &str) -> Option<(usize, String)> {
    if let Some((at, c)) = text.char_indices().find(|(_, c)| !printable(*c)) {
        let line = 1 + text[..at].matches('\n').count();
        let what = match c {
            '\0' => "a NUL character (byte 0)".to_string(),
            c => format!("the control character U+{:04X}", c as u32),
        };
        return Some((
            line,
            format!("{what}, which YAML does not allow; remove it"),
        ));
    }
    let mut quote: Option<char> = None;
    // (parent indentation, content indentation once known) of a block scalar being read.
    let mut block: Option<(usize, Option<usize>)> = None;
    let mut flow_depth = 0usize;
    let mut ended = false;
    let mut has_content = false;
    let mut explicit_key_at: Option<usize> = None;
    let mut anchors: std::collections::HashSet<String> = std::collections::HashSet::new();
    for (i, raw) in text.split('\n').enumerate() {
        let n = i + 1;
        let line = raw.strip_suffix('\r').unwrap_or(raw);
        let spaces = line.len() - line.trim_start_matches(' ').len();
        let rest = &line[spaces..];

        if let Some((parent, content)) = block {
            let blank = rest.is_empty();
            match content {
                _ if blank => continue,
                Some(c) if spaces >= c => continue,
                None if spaces > parent && !rest.starts_with('\t') => {
                    block = Some((parent, Some(spaces)));
                    continue;
                }
                _ => block = None,
            }
        }

        if quote.is_none() {
            if ended && !rest.is_empty() && !rest.starts_with('#') {
                return Some((
                    n,
                    "content after a `...` document end (PyYAML reads one document; remove \
                     the `...` line)"
                        .into(),
                ));
            }
            if spaces == 0 && (line == "..." || line.starts_with("... ")) {
                if !has_content {
                    return Some((n, "a `...` document end with no document before it".into()));
                }
                ended = true;
                continue;
            }
            if spaces == 0 && (line == "---" || line.starts_with("--- ")) {
                continue;
            }
            if flow_depth == 0 {
                // Where a block node starts (the line's start, after `- `, `? ` or the `: `
                // answering an explicit key), a `:` with no key before it is refused; only the
                // line's first `:` may answer a `? key` above at its column.
                let mut col = spaces;
                let mut r = rest;
                let mut answered = false;
                let colon = r == ":" || r.starts_with(": ") || r.starts_with(":\t");
                if explicit_key_at.is_some_and(|c| spaces <= c)
                    && !colon
                    && !r.is_empty()
                    && !r.starts_with('#')
                {
                    // A new entry at the `? key`'s level or left of it: that key went unanswered.
                    explicit_key_at = None;
                }
                loop {
                    if r == ":" || r.starts_with(": ") || r.starts_with(":\t") {
                        if answered || col != spaces || explicit_key_at != Some(spaces) {
                            return Some((
                                n,
                                "a `:` with no key before it; write `key: value` (or quote a \
                                 value that starts with `:`)"
                                    .into(),
                            ));
                        }
                        answered = true;
                        explicit_key_at = None;
                        let after = &r[1..];
                        let trimmed = after.trim_start_matches(' ');
                        col += 1 + (after.len() - trimmed.len());
                        r = trimmed;
                    } else if let Some(after) = r.strip_prefix("- ") {
                        let trimmed = after.trim_start_matches(' ');
                        col += 2 + (after.len() - trimmed.len());
                        r = trimmed;
                    } else if r == "?" || r.starts_with("? ") {
                        // `? key`, also as a sequence item (`- ? key`) or a value (`: ? key`):
                        // its `:` comes at this column.
                        explicit_key_at = Some(col);
                        let after = &r[1..];
                        let trimmed = after.trim_start_matches(' ');
                        col += 1 + (after.len() - trimmed.len());
                        r = trimmed;
                    } else {
                        break;
                    }
                }
            }
        }

        // Character scan: quotes, comments, flow brackets, tabs, block-scalar indicators.
        let chars: Vec<char> = line.chars().collect();
        let mut token_start = quote.is_none();
        let mut k = 0;
        let mut after_indicator = false;
        while k < chars.len() {
            let c = chars[k];
            let was_token_start = token_start;
            if let Some(q) = quote {
                if q == '\'' && c == '\'' {
                    if chars.get(k + 1) == Some(&'\'') {
                        k += 2;
                        continue;
                    }
                    quote = None;
                } else if q == '"' && c == '\\' {
                    k += 2;
                    continue;
                } else if q == '"' && c == '"' {
                    quote = None;
                }
                k += 1;
                continue;
            }
            match c {
                '\t' => {
                    return Some((
                        n,
                        "a tab where PyYAML expects the next token (in indentation, after `:` \
                         or `-`, or around a plain value); use spaces, or quote a value that \
                         holds a tab"
                            .into(),
                    ))
                }
                ' ' => {}
                '#' if k == 0 || chars[k - 1] == ' ' => break,
                '\'' | '"' if token_start => quote = Some(c),
                '&' if token_start => {
                    let name: String = chars[k + 1..]
                        .iter()
                        .take_while(|c| !matches!(c, ' ' | '\t' | ',' | '[' | ']' | '{' | '}'))
                        .collect();
                    if !anchors.insert(name.clone()) {
                        return Some((
                            n,
                            format!(
                                "the anchor `&{}` is defined twice; give each anchor its own name",
                                quoted(&name)
                            ),
                        ));
                    }
                }
                '[' | '{' if token_start => flow_depth += 1,
                ']' | '}' if flow_depth > 0 => flow_depth -= 1,
                '|' | '>' if token_start && flow_depth == 0 => {
                    let tail: String = chars[k + 1..].iter().collect();
                    let tail = tail.split(" #").next().unwrap_or("").trim_end_matches(' ');
                    if tail.chars().all(|t| matches!(t, '+' | '-' | '0'..='9')) {
                        block = Some((spaces, None));
                        break;
                    }
                }
                _ => {}
            }
            if c != ' ' {
                has_content = true;
            }
            // The next character starts a token after an indicator followed by a space, or
            // after a flow indicator. `-` and `?` are indicators only where a token starts:
            // inside a plain scalar (`yes- 'x`) they are text, and so is a quote after them.
            token_start = match c {
                ' ' => token_start || after_indicator,
                '[' | '{' | ',' => flow_depth > 0,
                _ => false,
            };
            after_indicator = match c {
                ':' => true,
                '-' | '?' => was_token_start,
                ',' => flow_depth > 0,
                ' ' => after_indicator,
                _ => false,
            };
            k += 1;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::check;

    #[test]
    fn yaml_strict_refuses_what_pyyaml_refuses() {
        for bad in [
            ": : bad yaml\n",
            "a: 1\n: value\n",
            "key:\tvalue\n",
            "key: value\t\n",
            "\tkey: tab\n",
            "key: a\n\tb\n",
            "- \titem\n",
            "key: |\n\tx\n",
            "k: v\n\t\n",
            "...\nkey: value\n",
            "a: 1\n...\nb: 2\n",
            "#comment\n...\n",
            "a: &x 1\nb: &x 2\n",
            "? a\n: : b\n",
            "? a\n:   :\n",
            "- : x\n",
            "- - : x\n",
            "? : x\n",
            "- ? a\n  : : b\n",
            "? k\nkey: value\n: value\n",
        ] {
            assert!(check(bad).is_some(), "accepted {bad:?}");
        }
    }

    #[test]
    fn yaml_strict_accepts_what_pyyaml_accepts() {
        for good in [
            "key: 'a\n\tb'\n",
            "key: \"a\\tb\"\n",
            "key: |\n  a\tb\n  c\n",
            "k: v  # c\t\n",
            "? a\n: b\n",
            "? a\n: ? b\n  : c\n",
            "? a\n: b: c\n",
            "? a\n: - x\n",
            "- ? a\n  : b\n",
            "? a\n# note\n: b\n",
            "a: 1\n...\n",
            "title: don't\tpanic'\n".split('\t').next().unwrap(),
            "list:\n- a\n- b\n",
            "url: http://x:80/a\n",
            "k: [a, 'b\tc']\n",
            "k: >-\n  folded\n  text\n",
            "a: &x 1\nb: *x\nc: 'a &x'\n",
            "? ''\n: yes- ': null\n? 'a\n  b'\n: null\n",
            "k: a - 'b\nl: c ? 'd\n",
            "",
        ] {
            assert_eq!(check(good), None, "refused {good:?}");
        }
    }

    #[test]
    fn yaml_strict_refuses_a_nul_with_its_line() {
        // PyYAML refuses a NUL anywhere; yaml-rust2 takes it for the end of the text and
        // silently drops every key after it.
        let (line, message) = check("title: Sec\0ond\nopened_by: x\n").expect("accepted a NUL");
        assert_eq!(line, 1);
        assert!(message.contains("NUL"), "{message}");
        assert_eq!(check("a: 1\nb: '\0'\n").map(|(l, _)| l), Some(2));
        assert_eq!(check("a: |\n  x\0\n").map(|(l, _)| l), Some(2));
    }

    #[test]
    fn yaml_strict_refuses_the_control_characters_pyyaml_refuses() {
        // Checked against PyYAML 6.0: each of these is "unacceptable character", quoted, in a
        // block scalar or in a comment alike.
        for c in [
            '\u{1}', '\u{8}', '\u{B}', '\u{C}', '\u{1B}', '\u{7F}', '\u{80}', '\u{9F}',
        ]
        .into_iter()
        .chain(['\u{FFFE}', '\u{FFFF}'])
        {
            for text in [
                format!("a: 1\nb: 'x{c}'\n"),
                format!("a: 1\nb: |\n  x{c}\n"),
                format!("a: 1\nb: 2 # x{c}\n"),
            ] {
                let (line, message) = check(&text).unwrap_or_else(|| panic!("took {text:?}"));
                let expected = 1 + text.lines().position(|l| l.contains(c)).unwrap();
                assert_eq!(line, expected, "{text:?}");
                assert!(
                    message.contains(&format!("U+{:04X}", c as u32)),
                    "{message}"
                );
            }
        }
        for fine in [
            "a: 'x\u{85}y'\n",
            "a: 'caf\u{E9} \u{A0}\u{FEFF}\u{1F600}'\n",
            "a: 1\r\n",
        ] {
            assert_eq!(check(fine), None, "refused {fine:?}");
        }
    }
}
