//! Codex CLI's review of polisd's hooks, judged against the real Codex CLI. Codex runs a
//! project's hook only while the hash it recorded when the person approved it
//! (`trusted_hash` in `~/.codex/config.toml`) is the hash of the handler as it is now; a hook
//! changed since (another `--bin`, `--interval 0`) is skipped by `codex exec` without a word.
//! Codex's own view of each hook, its `currentHash` and `trustStatus`, comes from `codex
//! app-server`'s `hooks/list`, the oracle here (polisd itself never runs Codex):
//! - `hooks status` reports a hook as changed since its approval exactly when Codex says
//!   "modified", and as never approved exactly when Codex says "untrusted", for handlers a team
//!   edited by hand too;
//! - after `hooks install --codex --bin` changed approved hooks, `hooks install` and `hooks
//!   status` say so, and the real `codex exec` indeed runs none of them; approved again, they
//!   run and the status has nothing to say.
//! - a hooks file that gives a key Codex reads twice Codex refuses whole (`hooks/list` finds
//!   none of its hooks): `hooks status` names file, line and key, `hooks install` refuses.

use crate::harness::{self, KilledGroup, BIN, DEADLINE};
use crate::{
    clients, codex_review_record, codex_status, excerpt, primer_heading, shown, Project, CODEX,
    CODEX_UNBYPASSED, ME,
};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;
use std::sync::mpsc;

/// The hooks Codex CLI finds for the project, as its app server lists them (`hooks/list`):
/// each with its `key`, `eventName`, `command`, `currentHash` and `trustStatus`.
fn codex_hooks(project: &Project) -> Vec<Value> {
    let mut server = KilledGroup::spawn(
        project
            .as_person(&clients::agent_clis().join("codex"))
            .arg("app-server")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null()),
    )
    .unwrap();
    let mut input = server.child().stdin.take().unwrap();
    let output = server.child().stdout.take().unwrap();
    // Read on a thread, so a silent server fails the test at the deadline; the thread ends
    // when the server, killed with the group when `server` drops, closes its output.
    let (lines, received) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(output).lines().map_while(Result::ok) {
            if lines.send(line).is_err() {
                break;
            }
        }
    });
    // A request, or with no id a notification (no answer).
    let mut call = |id: Option<u64>, method: &str, params: Value| -> Value {
        let mut message = json!({"jsonrpc": "2.0", "method": method, "params": params});
        if let Some(id) = id {
            message["id"] = json!(id);
        }
        writeln!(input, "{message}").unwrap();
        input.flush().unwrap();
        let Some(id) = id else {
            return Value::Null;
        };
        loop {
            let line = received
                .recv_timeout(DEADLINE)
                .unwrap_or_else(|e| panic!("codex app-server's answer to {method}: {e}"));
            let Ok(message) = serde_json::from_str::<Value>(&line) else {
                continue;
            };
            if message["id"] == json!(id) {
                assert!(message.get("error").is_none(), "{method}: {message}");
                return message["result"].clone();
            }
        }
    };
    call(
        Some(1),
        "initialize",
        json!({"clientInfo": {"name": "polisd-tests", "version": "1"}}),
    );
    call(None, "initialized", json!({}));
    let listed = call(Some(2), "hooks/list", json!({"cwds": [project.dir()]}));
    let entry = &listed["data"][0];
    assert_eq!(entry["errors"], json!([]), "{listed:#}");
    entry["hooks"].as_array().unwrap().clone()
}

/// polisd's hooks among Codex's list.
fn ours(hooks: &[Value]) -> Vec<&Value> {
    hooks
        .iter()
        .filter(|h| h["command"].as_str().unwrap_or("").contains("hook codex "))
        .collect()
}

/// The events (as the hooks file names them) of polisd's hooks whose Codex trust is `status`,
/// in the order polisd installs them, as `hooks status` lists them.
fn events_with(hooks: &[Value], status: &str) -> String {
    let order = ["SessionStart", "PostToolUse", "UserPromptSubmit"];
    let mut events: Vec<String> = ours(hooks)
        .into_iter()
        .filter(|h| h["trustStatus"] == status)
        .map(|h| {
            let name = h["eventName"].as_str().unwrap();
            name[..1].to_uppercase() + &name[1..]
        })
        .collect();
    events.sort_by_key(|e| order.iter().position(|o| o == e));
    events.join(", ")
}

/// What the person's approval in Codex's review records: each hook's current hash, as Codex
/// reports it, under its key.
fn approve(project: &Project, hooks: &[Value]) {
    let config = project.home.join(".codex/config.toml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    for hook in hooks {
        let key = hook["key"].as_str().unwrap();
        let hash = hook["currentHash"].as_str().unwrap();
        // A table written twice is not TOML: replace an earlier approval.
        let header = format!("[hooks.state.\"{key}\"]\n");
        if let Some(at) = text.find(&header) {
            let end = text[at + header.len()..]
                .find("\n[")
                .map_or(text.len(), |e| at + header.len() + e + 1);
            text.replace_range(at..end, "");
        }
        text.push_str(&format!("\n{header}trusted_hash = \"{hash}\"\n"));
    }
    std::fs::write(&config, text).unwrap();
}

/// The one problem that contains `needle`.
#[track_caller]
fn problem_with<'a>(row: &'a Value, needle: &str) -> &'a str {
    let found: Vec<&str> = row["problems"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .filter(|p| p.contains(needle))
        .collect();
    assert_eq!(found.len(), 1, "one problem with {needle:?}: {row:#}");
    found[0]
}

/// A team's hand edits of the hooks file: polisd's SessionStart hook beside the team's own in
/// a group with a matcher, with a status message; a matcher Codex ignores on UserPromptSubmit,
/// and no timeout there.
const TEAM_HOOKS: &str = r#"{
  "hooks": {
    "SessionStart": [
      {"matcher": "startup|resume", "hooks": [
        {"type": "command", "command": "./team-start.sh"},
        {"type": "command", "command": "polisd hook codex prime", "timeout": 10, "statusMessage": "Reading the polis…"}
      ]}
    ],
    "PostToolUse": [
      {"matcher": "*", "hooks": [{"type": "command", "command": "polisd hook codex notices --interval 0", "timeout": 10}]}
    ],
    "UserPromptSubmit": [
      {"matcher": "ignored", "hooks": [{"type": "command", "command": "polisd hook codex notices"}]}
    ]
  }
}
"#;

/// `hooks status` tells an approval Codex holds current from one it holds stale exactly as the
/// real Codex CLI does, for handlers a team edited by hand, and after `hooks install` changed
/// them.
#[test]
fn codex_hooks_status_judges_each_approval_as_codex_cli_does() {
    let project = Project::new(&CODEX);
    std::fs::write(project.dir().join(".codex/hooks.json"), TEAM_HOOKS).unwrap();
    let hooks = codex_hooks(&project);
    assert_eq!(ours(&hooks).len(), 3, "{hooks:#?}");
    approve(&project, &hooks);
    let hooks = codex_hooks(&project);
    assert!(
        hooks.iter().all(|h| h["trustStatus"] == "trusted"),
        "{hooks:#?}"
    );
    let (row, code) = codex_status(&project);
    assert_eq!(row["problems"], json!([]), "Codex trusts them all: {row:#}");
    assert_eq!(code, Some(0));

    // Another binary: install rewrites polisd's handlers, moving the SessionStart one out of
    // the team's group (so out of its approved place).
    let out = project.run(&["hooks", "install", "--codex", "--as", ME, "--bin", BIN]);
    assert!(out.status.success(), "{}", harness::describe(&out));
    let hooks = codex_hooks(&project);
    let (modified, untrusted) = (
        events_with(&hooks, "modified"),
        events_with(&hooks, "untrusted"),
    );
    assert_eq!(
        (modified.as_str(), untrusted.as_str()),
        ("PostToolUse, UserPromptSubmit", "SessionStart"),
        "Codex's view: {hooks:#?}"
    );
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains(&format!("polisd's {modified} hook(s)")) && said.contains("changed since"),
        "install says so: {said}"
    );
    let (row, code) = codex_status(&project);
    let stale = problem_with(&row, "changed since");
    assert!(
        stale.contains(&format!("polisd's {modified} hook(s)")) && stale.contains("/hooks"),
        "{stale}"
    );
    let never = problem_with(&row, "has no trust");
    assert!(
        never.contains(&format!("polisd's {untrusted} hook(s)")),
        "{never}"
    );
    assert_eq!(code, Some(1), "{row:#}");

    approve(&project, &hooks);
    let (row, code) = codex_status(&project);
    assert_eq!(row["problems"], json!([]), "approved again: {row:#}");
    assert_eq!(code, Some(0));
}

/// After `hooks install --codex` changed hooks the person approved (another `--bin`), the real
/// `codex exec` runs none of them, and `hooks install` and `hooks status` say so; once the
/// person approves them again, they run and the status has nothing to say.
#[test]
fn codex_cli_skips_hooks_changed_since_their_approval_and_hooks_status_says_so() {
    let project = Project::new(&CODEX);
    let config = project.home.join(".codex/config.toml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str(&codex_review_record(&project.dir()));
    std::fs::write(&config, text).unwrap();
    let (row, code) = codex_status(&project);
    assert_eq!(row["problems"], json!([]), "approved: {row:#}");
    assert_eq!(code, Some(0));

    let out = project.run(&["hooks", "install", "--codex", "--as", ME, "--bin", BIN]);
    assert!(out.status.success(), "{}", harness::describe(&out));
    let all = "polisd's SessionStart, PostToolUse, UserPromptSubmit hook(s)";
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains("warning: ") && said.contains(all) && said.contains("changed since"),
        "install says so: {said}"
    );
    let (row, code) = codex_status(&project);
    let stale = problem_with(&row, "changed since");
    assert!(
        stale.contains(all) && stale.contains("~/.codex/config.toml") && stale.contains("/hooks"),
        "{stale}"
    );
    assert_eq!(code, Some(1), "{row:#}");
    let hooks = codex_hooks(&project);
    assert_eq!(
        events_with(&hooks, "modified"),
        "SessionStart, PostToolUse, UserPromptSubmit",
        "{hooks:#?}"
    );
    let first = project.first_request(&CODEX_UNBYPASSED);
    assert_eq!(
        shown(&first, &primer_heading()),
        0,
        "Codex skips a hook changed since its approval: {}",
        excerpt(&first)
    );

    approve(&project, &hooks);
    let (row, code) = codex_status(&project);
    assert_eq!(row["problems"], json!([]), "approved again: {row:#}");
    assert_eq!(code, Some(0));
    let first = project.first_request(&CODEX_UNBYPASSED);
    assert_eq!(
        shown(&first, &primer_heading()),
        1,
        "approved again, they run: {}",
        excerpt(&first)
    );
}

/// Codex CLI refuses a hooks file that gives a key it reads twice (here a handler's
/// `timeout`), and runs none of its hooks, though serde_json reads such a file (the last value
/// wins): `hooks status` names the file, line and key, without a word of the hooks' trust (the
/// refusal is reason enough), and `hooks install` refuses to edit the file. A key Codex does
/// not read, given twice, it takes, and so does polisd.
#[test]
fn codex_cli_refuses_a_hooks_file_that_repeats_a_key_and_hooks_status_says_so() {
    let project = Project::new(&CODEX);
    let path = project.dir().join(CODEX.settings);
    let original = std::fs::read_to_string(&path).unwrap();
    assert_eq!(ours(&codex_hooks(&project)).len(), 3);
    let repeated = original.replacen("\"timeout\": 10", "\"timeout\": 10, \"timeout\": 5", 1);
    let line = 1 + repeated[..repeated.find("\"timeout\": 5").unwrap()]
        .matches('\n')
        .count();
    std::fs::write(&path, &repeated).unwrap();
    assert_eq!(
        ours(&codex_hooks(&project)).len(),
        0,
        "Codex refuses the whole file"
    );
    let (row, code) = codex_status(&project);
    let said = problem_with(&row, "appears twice");
    assert!(
        said.starts_with(&format!(".codex/hooks.json line {line}: "))
            && said.contains("the key `timeout`")
            && said.contains("keep one"),
        "{said}"
    );
    assert!(
        !row.to_string().contains("approve the hooks it lists"),
        "one reason is enough: {row:#}"
    );
    assert_eq!(code, Some(1));
    let out = project.run(&["hooks", "install", "--codex", "--as", ME]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{}", harness::describe(&out));
    assert!(
        err.contains(said) && err.contains("polisd changed nothing"),
        "{}",
        harness::describe(&out)
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), repeated);

    let ignored = original.replacen(
        "\"timeout\": 10",
        "\"timeout\": 10, \"name\": \"a\", \"name\": \"b\"",
        1,
    );
    std::fs::write(&path, &ignored).unwrap();
    assert_eq!(ours(&codex_hooks(&project)).len(), 3, "Codex takes it");
    let (row, _) = codex_status(&project);
    assert!(!row.to_string().contains("appears twice"), "{row:#}");
    let out = project.run(&["hooks", "install", "--codex", "--as", ME]);
    assert!(out.status.success(), "{}", harness::describe(&out));
}

/// Codex reads a byte-order mark as a character no JSON starts with, and lists none of the
/// file's hooks; `hooks status` says so instead of "untrusted", and install leaves the file.
#[test]
fn codex_cli_runs_no_hook_of_a_file_with_a_byte_order_mark_and_hooks_status_says_so() {
    let project = Project::new(&CODEX);
    let path = project.dir().join(CODEX.settings);
    let original = std::fs::read_to_string(&path).unwrap();
    assert_eq!(ours(&codex_hooks(&project)).len(), 3);
    let marked = format!("\u{feff}{original}");
    std::fs::write(&path, &marked).unwrap();
    assert_eq!(ours(&codex_hooks(&project)).len(), 0, "Codex refuses it");
    let (row, code) = codex_status(&project);
    let said = problem_with(&row, "byte-order mark");
    assert!(said.contains("runs none of its hooks"), "{said}");
    assert!(
        !row.to_string().contains("approve the hooks it lists"),
        "one reason is enough: {row:#}"
    );
    assert_eq!(code, Some(1));
    let out = project.run(&["hooks", "install", "--codex", "--as", ME]);
    assert_eq!(out.status.code(), Some(1), "{}", harness::describe(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("polisd changed nothing"),
        "{}",
        harness::describe(&out)
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), marked);
    // Without the mark Codex lists them again.
    std::fs::write(&path, &original).unwrap();
    assert_eq!(ours(&codex_hooks(&project)).len(), 3);
}
