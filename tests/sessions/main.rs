//! Delivery into running agent sessions, run as the real binary: the primer and its bound, the
//! hooks each agent CLI runs (fed the payloads their documentation describes), the read cursor
//! that keeps a read notice from coming back, installing and uninstalling the hooks, and an MCP
//! session over stdio.
//!
//! One test binary; the tests are grouped by concept in its modules, which share the helpers
//! below.

#[path = "../harness/mod.rs"]
mod harness;

mod hooks;
mod install;
mod mcp;
mod mcp_records;
mod mcp_texts;
mod notices;
mod primer;

use harness::{McpStdio as Mcp, TestPolis, BIN};
use serde_json::{json, Value};
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

const ME: &str = "claude-code-one";
const OTHER: &str = "codex-frontend-one";

fn text(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn project(p: &TestPolis) -> PathBuf {
    p.root.parent().unwrap().to_path_buf()
}

/// A polis with two citizens.
fn polis() -> TestPolis {
    let p = TestPolis::init(ME);
    p.citizen(OTHER, "openai", &[("frontend", 4)], "low");
    p
}

/// A citizen's message appended to an inbox the way agents write them.
fn message(p: &TestPolis, to: &str, stamp: &str, from: &str, body: &str) {
    p.append(
        &format!("citizens/{to}/inbox.md"),
        &format!("\n### {stamp} from {from}\n\n{body}\n\n---\n"),
    );
}

/// Runs `polisd hook <cli> <kind> …` from the project folder with `payload` on stdin.
fn hook(p: &TestPolis, cli: &str, kind: &str, extra: &[&str], payload: &Value) -> Output {
    let out = harness::output_with_stdin(
        Command::new(BIN)
            .args(["hook", cli, kind])
            .args(extra)
            .env("POLISD_STATE_DIR", &p.state_dir)
            .env_remove("POLIS_CITIZEN")
            .current_dir(project(p)),
        payload.to_string().as_bytes(),
    );
    assert_eq!(out.status.code(), Some(0), "a hook always exits 0: {out:?}");
    out
}

/// The notices hook of `cli` as ME, with no once-a-minute limit, as the CLI fires it.
fn notices_hook(p: &TestPolis, cli: &str, payload: &Value) -> Output {
    hook(p, cli, "notices", &["--as", ME, "--interval", "0"], payload)
}

/// An MCP session over stdio on `p`, initialized as a client does at protocol `version`, and
/// the server's answer to `initialize`.
fn mcp_session(p: &TestPolis, version: &str) -> (Mcp, Value) {
    let mut mcp = Mcp::start(&p.root, &p.state_dir);
    let init = mcp.request(
        1,
        "initialize",
        json!({"protocolVersion": version, "capabilities": {},
               "clientInfo": {"name": "test", "version": "1"}}),
    );
    assert_eq!(init["result"]["serverInfo"]["name"], "polisd", "{init}");
    mcp.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    (mcp, init)
}

/// Claude Code's PostToolUse payload, as its hooks reference documents it.
fn claude_post_tool_use(p: &TestPolis) -> Value {
    json!({
        "session_id": "abc123",
        "transcript_path": "/tmp/transcript.jsonl",
        "cwd": project(p),
        "permission_mode": "default",
        "hook_event_name": "PostToolUse",
        "tool_name": "Write",
        "tool_input": {"file_path": "/tmp/x.txt", "content": "x"},
        "tool_response": {"filePath": "/tmp/x.txt", "success": true},
        "tool_use_id": "toolu_01"
    })
}

/// The context a hook added, from the `hookSpecificOutput` of its JSON output.
#[track_caller]
fn context(out: &Output, event: &str) -> String {
    let v: Value = serde_json::from_str(text(out).trim()).unwrap_or_else(|e| {
        panic!("hook output is not JSON ({e}): {:?}", text(out));
    });
    assert_eq!(v["hookSpecificOutput"]["hookEventName"], event, "{v}");
    v["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap()
        .to_string()
}

/// How many of `ME`'s notices are unread.
fn unread_count(p: &TestPolis) -> usize {
    let out = p.polisd(&["notices", "--as", ME, "--unread", "--json"]);
    let v: Value = serde_json::from_str(&text(&out)).unwrap();
    v["notices"].as_array().unwrap().len()
}
