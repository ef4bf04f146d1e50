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

#[cfg(test)]
mod tests {
    use super::*;

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
