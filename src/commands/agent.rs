//! What the agents' commands share: finding the polis, the writer and the clock, and printing
//! an operation's result (text or `--json`) with the exit code: 0 done, 1 refused, 2 a value
//! that can never be right (a path-like id, a control character). A refusal
//! is one line on stderr (and `{"ok": false, "error": …}` on stdout with `--json`); nothing
//! was written.

use crate::commands::cli::AgentOpts;
use crate::fs::writer::Writer;
use crate::operations::OpError;
use crate::protocol::clock::PolisTime;
use std::path::PathBuf;

/// The polis a command works on.
pub struct Env {
    pub root: PathBuf,
    pub writer: Writer,
    pub now: PolisTime,
}

impl Env {
    pub fn open(opts: &AgentOpts) -> anyhow::Result<Env> {
        let root = crate::commands::locate(opts.polis.as_deref())?;
        let writer = Writer::unrecorded(&root)?;
        let now = crate::operations::chronicle::polis_now(&root);
        Ok(Env { root, writer, now })
    }
}

/// Prints `result` and returns the exit code.
pub fn finish<T: serde::Serialize>(
    opts: &AgentOpts,
    result: Result<T, OpError>,
    text: impl FnOnce(&T) -> String,
) -> anyhow::Result<u8> {
    match result {
        Ok(value) => {
            if opts.json {
                let mut v = serde_json::to_value(&value)?;
                if let Some(map) = v.as_object_mut() {
                    map.insert("ok".into(), serde_json::Value::Bool(true));
                }
                say!("{}", serde_json::to_string_pretty(&v)?);
            } else {
                let out = text(&value);
                if !out.is_empty() {
                    say!("{out}");
                }
            }
            Ok(0)
        }
        Err(e) => {
            let line = super::refusal_text(&e);
            if opts.json {
                let mut v = serde_json::json!({ "ok": false, "error": line });
                if let OpError::Chronicle { finding, line } = &e {
                    v["code"] = serde_json::Value::String(finding.code.to_string());
                    v["line"] = serde_json::Value::String(super::refusal_text(line));
                }
                say!("{}", serde_json::to_string_pretty(&v)?);
            }
            tell!("polisd: {line}");
            Ok(if e.is_usage() { 2 } else { 1 })
        }
    }
}

/// Warnings a written chronicle line drew, one per line, for the text output.
pub fn warnings(appended: Option<&crate::operations::chronicle::Appended>) -> String {
    appended
        .map(|a| a.warnings.iter().map(|w| format!("\n  {w}")).collect())
        .unwrap_or_default()
}

/// Reads a `--body FILE` argument (`-` is standard input; `option` is how the command line
/// names it, for the refusal): agent text like any argument, so
/// a control character is refused as it is on the command line, and so is a file polisd
/// could not keep (unreadable, not UTF-8, or past what it reads back in a record; it reads
/// no further than that, whatever the file).
pub fn read_body(option: &str, path: Option<&std::path::Path>) -> Result<String, OpError> {
    use std::io::Read as _;
    let Some(p) = path else {
        return Ok(String::new());
    };
    let what = if p.as_os_str() == "-" {
        "standard input".to_string()
    } else {
        format!("`{}`", p.display())
    };
    let fail = |why: String| OpError::Body {
        what: what.clone(),
        why,
    };
    let limit = crate::operations::error::MAX_BODY_BYTES;
    let mut bytes = Vec::new();
    let read = if p.as_os_str() == "-" {
        std::io::stdin().take(limit + 1).read_to_end(&mut bytes)
    } else {
        std::fs::File::open(p).and_then(|f| f.take(limit + 1).read_to_end(&mut bytes))
    };
    read.map_err(|e| {
        // The likeliest slip: the text itself passed where its file goes.
        if e.kind() == std::io::ErrorKind::NotFound {
            fail(format!("there is no such file: {option} takes the path of a markdown file, not the text; to give the text without a file, pipe it in and pass `-` as {option}"))
        } else {
            fail(format!("cannot read it ({e})"))
        }
    })?;
    if bytes.len() as u64 > limit {
        return Err(fail(format!(
            "it holds more than {} MB, past what polisd reads back in a record; shorten it, or link to a longer document",
            limit / (1024 * 1024)
        )));
    }
    let text = String::from_utf8(bytes).map_err(|_| fail("it is not UTF-8 text".into()))?;
    crate::protocol::input::check_text(&what, &text)?;
    Ok(text)
}
