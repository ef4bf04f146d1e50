//! A team's edit elsewhere in a shared settings file that makes the real CLI skip polisd's
//! hooks though they are there, and `hooks status` saying so: for each, a session shows no
//! primer and the status names the reason; once the edit is undone, the primer is back and the
//! status has nothing to say of it.
//! - Codex CLI refuses a whole `.codex/hooks.json` with a top-level key it does not know, and
//!   skips a group whose matcher is not a valid regex;
//! - Claude Code skips a whole `.claude/settings.json` its schema refuses (a permission mode it
//!   does not know), and a group whose matcher is not a valid regex never runs;
//! - Gemini CLI compares a `SessionStart` matcher with the session's source as plain text, and
//!   a tool matcher that is no valid regex with the tool's name;
//! - for each of the three, a tool group whose matcher is no valid regex: no notice after the
//!   session's tool call;
//! - Gemini CLI reads its settings with comments: `hooks install` edits such a file keeping
//!   the person's text, the hooks run, and uninstall gives the bytes back;
//! - Aider stops at start for a key in `.aider.conf.yml` that is none of its options
//!   (`aider.rs`).

use crate::harness;
use crate::model_api::{ModelApi, Turn};
use crate::{primer_heading, shown, Cli, Project, CLAUDE, CODEX, GEMINI, ME};
use serde_json::{json, Value};

/// An edit of the settings, and what `hooks status` says of it.
type Edit = (fn(&mut Value), &'static str);

/// `cli`'s hooks installed, then each edit in turn: the status says it and a session has no
/// primer; then the file as polisd wrote it: the primer, and no word of any edit.
fn skipped_until_undone(cli: &Cli, edits: &[Edit]) -> Project {
    let project = Project::new(cli);
    (cli.trust)(&project.home, &project.dir());
    let path = project.dir().join(cli.settings);
    let original = std::fs::read_to_string(&path).unwrap();
    for (edit, said) in edits {
        let mut v: Value = serde_json::from_str(&original).unwrap();
        edit(&mut v);
        std::fs::write(&path, serde_json::to_string_pretty(&v).unwrap()).unwrap();
        let out = project.run(&["hooks", "status"]);
        let status = harness::describe(&out);
        assert!(status.contains(said), "{}: {said}: {status}", cli.bin);
        assert_eq!(out.status.code(), Some(1), "{status}");
        let first = project.first_request(cli);
        assert_eq!(
            shown(&first, &primer_heading()),
            0,
            "{}: {said}: the CLI skips the hooks",
            cli.bin
        );
    }
    std::fs::write(&path, &original).unwrap();
    let status = project.hooks_status();
    for (_, said) in edits {
        assert!(!status.contains(said), "{status}");
    }
    assert_eq!(
        shown(&project.first_request(cli), &primer_heading()),
        1,
        "{}",
        cli.bin
    );
    project
}

#[test]
fn codex_cli_skips_a_hooks_file_with_an_unknown_key_or_a_bad_matcher_and_hooks_status_says_so() {
    let project = skipped_until_undone(
        &CODEX,
        &[
            (
                |v| v["team"] = json!("the team's hooks"),
                "Codex CLI refuses the whole file (unknown key `team`)",
            ),
            (
                |v| v["hooks"]["SessionStart"][0]["matcher"] = json!("startup|resume("),
                "Codex CLI skips polisd's SessionStart group, whose matcher \"startup|resume(\" is not a valid regex",
            ),
        ],
    );
    tool_group_skipped_until_undone(
        &CODEX,
        "PostToolUse",
        "Edit(",
        "Codex CLI skips polisd's PostToolUse group, whose matcher \"Edit(\" is not a valid regex",
    );
    // install keeps the team's key, and says what it does.
    let path = project.dir().join(CODEX.settings);
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    v["team"] = json!("the team's hooks");
    std::fs::write(&path, v.to_string()).unwrap();
    let out = project.run(&["hooks", "install", "--codex", "--as", ME]);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains("warning: ") && said.contains("unknown key `team`"),
        "{}",
        harness::describe(&out)
    );
}

#[test]
fn claude_code_skips_settings_its_schema_refuses_or_a_bad_matcher_and_hooks_status_says_so() {
    skipped_until_undone(
        &CLAUDE,
        &[
            (
                |v| v["permissions"] = json!({"defaultMode": "careful"}),
                "Claude Code skips the whole file, its hooks too, for `permissions.defaultMode` \"careful\"",
            ),
            (
                |v| v["hooks"]["SessionStart"][0]["matcher"] = json!("startup|resume("),
                "Claude Code finds polisd's SessionStart matcher \"startup|resume(\" no valid regex",
            ),
        ],
    );
    tool_group_skipped_until_undone(
        &CLAUDE,
        "PostToolUse",
        "Edit(",
        "Claude Code finds polisd's PostToolUse matcher \"Edit(\" no valid regex",
    );
}

#[test]
fn gemini_cli_skips_a_session_start_matcher_that_is_no_source_and_hooks_status_says_so() {
    skipped_until_undone(
        &GEMINI,
        &[(
            |v| v["hooks"]["SessionStart"][0]["matcher"] = json!("startup|resume"),
            "so polisd's SessionStart group (matcher \"startup|resume\") never runs",
        )],
    );
    tool_group_skipped_until_undone(
        &GEMINI,
        "AfterTool",
        "read_file(",
        "so polisd's AfterTool group (matcher \"read_file(\") never runs",
    );
}

/// `cli`'s notices group on `event` given `matcher`, which is no valid regex: the status says
/// `said`, and a message written while the session works is not shown after its tool call;
/// with the matcher polisd writes, it is, and the status has no word of it.
fn tool_group_skipped_until_undone(cli: &Cli, event: &str, matcher: &str, said: &str) {
    let project = Project::new(cli);
    (cli.trust)(&project.home, &project.dir());
    let path = project.dir().join(cli.settings);
    let original = std::fs::read_to_string(&path).unwrap();
    let mut v: Value = serde_json::from_str(&original).unwrap();
    v["hooks"][event][0]["matcher"] = json!(matcher);
    std::fs::write(&path, v.to_string()).unwrap();
    for fixed in [false, true] {
        if fixed {
            std::fs::write(&path, &original).unwrap();
        }
        let status = project.hooks_status();
        assert_eq!(
            !status.contains(said),
            fixed,
            "{}: {said}: {status}",
            cli.bin
        );
        let token = format!("LATER-{}", u8::from(fixed));
        let inbox = project.polis.path(&format!("citizens/{ME}/inbox.md"));
        let read = (cli.read_tool)(&project.dir().join("NOTES.md"));
        let word = format!("Later word (token {token}).");
        let api = ModelApi::start(move |turn, _| {
            if turn == 0 {
                crate::message(&inbox, &word);
                read.clone()
            } else {
                Turn::Text("done".into())
            }
        });
        project.session(cli, &api, "Look at the notes, then stop.");
        let turns = api.turns();
        let last = &turns[turns.len() - 1].body;
        assert!(turns.len() >= 2, "{} made a tool call", cli.bin);
        assert_eq!(
            shown(last, &token) >= 1,
            fixed,
            "{}: the notices hook after the tool call, matcher {matcher:?}, fixed: {fixed}",
            cli.bin
        );
    }
}

/// Gemini CLI's settings as a person keeps them: `//` and `/* */` comments, and text in a
/// string that only looks like one (Gemini CLI reads the file through `strip-json-comments`).
const GEMINI_COMMENTED: &str = r#"// The team's Gemini CLI settings.
{
  /* what the status line jokes about */
  "ui": {
    "customWittyPhrases": ["see http://example.com/docs", "/* not a comment */"]
  },
  "security": {"auth": {"selectedType": "gemini-api-key"}} // kept as written
}
"#;

/// `hooks install --gemini` edits settings with comments as Gemini CLI reads them, keeping
/// each of the person's lines; the real Gemini CLI runs the hooks from that file; uninstall
/// gives the file back byte for byte.
#[test]
fn gemini_cli_runs_the_hooks_polisd_installs_into_settings_with_comments() {
    let project = Project::new(&GEMINI);
    (GEMINI.trust)(&project.home, &project.dir());
    let path = project.dir().join(GEMINI.settings);
    let out = project.run(&["hooks", "uninstall", "--gemini"]);
    assert!(out.status.success(), "{}", harness::describe(&out));
    std::fs::write(&path, GEMINI_COMMENTED).unwrap();
    let out = project.run(&["hooks", "install", "--gemini", "--as", ME]);
    assert!(out.status.success(), "{}", harness::describe(&out));
    let installed = std::fs::read_to_string(&path).unwrap();
    // Every byte up to the last member, then the comma the new member needs, then the rest.
    let (head, tail) = GEMINI_COMMENTED.split_at(GEMINI_COMMENTED.find(" // kept").unwrap());
    assert!(
        installed.starts_with(&format!("{head},{}", tail.lines().next().unwrap())),
        "the person's text kept: {installed}"
    );
    assert!(installed.ends_with("\n}\n"), "{installed}");
    let status = project.hooks_status();
    assert!(
        status.contains("3 hook(s), acting as agent-under-test") && !status.contains("problem"),
        "{status}"
    );
    assert_eq!(
        shown(&project.first_request(&GEMINI), &primer_heading()),
        1,
        "Gemini CLI ran the primer hook from the commented settings"
    );
    let out = project.run(&["hooks", "uninstall", "--gemini"]);
    assert!(out.status.success(), "{}", harness::describe(&out));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), GEMINI_COMMENTED);
}

/// Gemini CLI refuses to start in a project whose settings start with a byte-order mark;
/// `hooks status` says why and install leaves the file alone.
#[test]
fn gemini_cli_refuses_settings_with_a_byte_order_mark_and_hooks_status_says_so() {
    let project = Project::new(&GEMINI);
    (GEMINI.trust)(&project.home, &project.dir());
    let path = project.dir().join(GEMINI.settings);
    let original = std::fs::read_to_string(&path).unwrap();
    let marked = format!("\u{feff}{original}");
    std::fs::write(&path, &marked).unwrap();
    let api = ModelApi::start(|_, _| Turn::Text("hello".into()));
    let (ok, output) = project.try_session(&GEMINI, &api, "Hello?", &[]);
    assert!(
        !ok && output.contains("not valid JSON"),
        "Gemini CLI refuses the file: {output}"
    );
    let status = project.hooks_status();
    assert!(
        status.contains("byte-order mark") && status.contains("refuses to start"),
        "{status}"
    );
    let out = project.run(&["hooks", "install", "--gemini", "--as", ME]);
    assert_eq!(out.status.code(), Some(1), "{}", harness::describe(&out));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), marked);
}
