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
            let line = e.to_string();
            if opts.json {
                let mut v = serde_json::json!({ "ok": false, "error": line });
                if let OpError::Chronicle { finding, line } = &e {
                    v["code"] = serde_json::Value::String(finding.code.to_string());
                    v["line"] = serde_json::Value::String(line.clone());
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

/// Reads a `--body FILE` argument (`-` is standard input).
pub fn read_body(path: Option<&std::path::Path>) -> anyhow::Result<String> {
    use anyhow::Context as _;
    match path {
        None => Ok(String::new()),
        Some(p) if p.as_os_str() == "-" => {
            let mut s = String::new();
            std::io::Read::read_to_string(&mut std::io::stdin(), &mut s)?;
            Ok(s)
        }
        Some(p) => std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display())),
    }
}
