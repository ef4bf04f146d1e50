//! Agent-written text shown among polisd's own words (a notice, the primer, a hook's
//! answer): on one line, cut to a length, and where it sits inside a sentence, in a code span,
//! which the primer tells every agent marks text written by agents, to read as data.

/// Agent-written text as one line: control characters and runs of whitespace become one space,
/// backticks become `'` (so the text cannot close the code span it is shown in), and it is cut
/// at `max` characters.
pub fn one_line(text: &str, max: usize) -> String {
    let cleaned: String = text
        .chars()
        .map(|c| if c == '`' { '\'' } else { c })
        .collect();
    cut(&plain(&cleaned), max)
}

/// Text read from a file written by hand (a title, a guardrail) as polisd writes it into a line
/// of its own making (a heading, a list item): control characters and runs of whitespace become
/// one space, so its line breaks cannot start lines of structure there.
pub fn plain(text: &str) -> String {
    let spaced: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    flat(&spaced)
}

/// Text on one line for a terminal row: runs of whitespace, line breaks included, become one
/// space. Other control characters stay, for the terminal escaper to show as `\uXXXX`.
pub fn flat(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Cuts at `max` characters, ending with `…` when something was cut.
pub fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let mut out: String = text.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// Agent-written text inside polisd's words, as a code span: [`one_line`] at `max`
/// characters between backticks, which it cannot close.
pub fn code(text: &str, max: usize) -> String {
    format!("`{}`", one_line(text, max))
}

/// `text` with every HTML comment opener broken (`<!--` → `<!- -`): a notice marker found
/// anywhere in an inbox counts its notice as sent, so text polisd writes there on someone's
/// behalf (a quoted title, a console message) must never hold one.
pub fn without_marker_openers(text: &str) -> String {
    text.replace("<!--", "<!- -")
}
