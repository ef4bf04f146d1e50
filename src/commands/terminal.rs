//! Standard output for commands that write through an `io::Write` (activity, config, service,
//! the routing bench, demo): every complete line goes through the same escaping as `say!`, so
//! what a file held (a path, a key, a note) cannot drive the terminal.

use crate::protocol::input::escape_for_terminal;
use std::io::{self, Write};

/// A writer that escapes control and bidi characters line by line before passing them on.
pub struct Escaped<W: Write> {
    inner: W,
    /// Bytes after the last newline, held until the line is complete (a character may arrive
    /// in two writes).
    partial: Vec<u8>,
}

impl<W: Write> Escaped<W> {
    pub fn new(inner: W) -> Escaped<W> {
        Escaped {
            inner,
            partial: Vec::new(),
        }
    }

    fn pass_on(&mut self, bytes: &[u8]) -> io::Result<()> {
        let text = String::from_utf8_lossy(bytes);
        self.inner.write_all(escape_for_terminal(&text).as_bytes())
    }
}

impl<W: Write> Write for Escaped<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.partial.extend_from_slice(buf);
        if let Some(end) = self.partial.iter().rposition(|&b| b == b'\n') {
            let lines: Vec<u8> = self.partial.drain(..=end).collect();
            self.pass_on(&lines)?;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        if !self.partial.is_empty() {
            let rest = std::mem::take(&mut self.partial);
            self.pass_on(&rest)?;
        }
        self.inner.flush()
    }
}

impl<W: Write> Drop for Escaped<W> {
    fn drop(&mut self) {
        let _ = self.flush();
    }
}

/// Standard output, escaped.
pub fn stdout() -> Escaped<io::StdoutLock<'static>> {
    Escaped::new(io::stdout().lock())
}

/// The widest polisd lays out text for a person (`--help`, the demo's narration): past it a
/// line is harder to read, however wide the terminal.
pub const MAX_WIDTH: usize = 100;

/// The width to wrap text for a person at, as clap finds it for `--help`: the terminal's, else
/// `COLUMNS` (piped from a shell that exports it), else [`MAX_WIDTH`]; never more than that.
pub fn columns() -> usize {
    let found = terminal_size::terminal_size()
        .map(|(w, _)| usize::from(w.0))
        .or_else(|| std::env::var("COLUMNS").ok()?.trim().parse().ok());
    found
        .filter(|&w| w > 0)
        .map_or(MAX_WIDTH, |w| w.min(MAX_WIDTH))
}

/// `text`'s words laid out from column `start`, a line broken before a word that would pass
/// `width`; each continuation line starts with `indent` spaces. A word wider than the room left
/// keeps a line of its own rather than being cut (a path stays one piece).
pub fn fill(text: &str, start: usize, indent: usize, width: usize) -> String {
    let mut out = String::new();
    let mut column = start;
    let mut first = true;
    for word in text.split_whitespace() {
        let len = word.chars().count();
        if !first && column + 1 + len > width {
            out.push('\n');
            out.push_str(&" ".repeat(indent));
            column = indent;
        } else if !first {
            out.push(' ');
            column += 1;
        }
        out.push_str(word);
        column += len;
        first = false;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fill_keeps_words_and_indents_continuations() {
        let text = "word ".repeat(40);
        let filled = fill(text.trim(), 10, 10, 60);
        assert!(filled.lines().count() > 1);
        assert!(filled
            .lines()
            .skip(1)
            .all(|l| l.starts_with(&" ".repeat(10)) && l.len() <= 60));
        assert!(filled.lines().next().unwrap().len() <= 50);
        assert_eq!(filled.split_whitespace().count(), 40);
        // A word wider than the line is kept whole, on a line of its own.
        let long = format!("a {} b", "x".repeat(80));
        assert_eq!(fill(&long, 0, 2, 40).lines().count(), 3);
    }

    #[test]
    fn lines_are_escaped_even_when_split_across_writes() {
        let mut out = Escaped::new(Vec::new());
        out.write_all(b"path a\x1b[2J").unwrap();
        // The second write ends inside the three bytes of U+202E.
        let rest = "b\u{202e}c\nnext é".as_bytes();
        out.write_all(&rest[..3]).unwrap();
        out.write_all(&rest[3..]).unwrap();
        out.flush().unwrap();
        let text = String::from_utf8(out.inner.clone()).unwrap();
        assert_eq!(text, "path a\\u001b[2Jb\\u202ec\nnext é");
    }
}
