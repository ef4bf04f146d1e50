//! Every command's argument parser driven with arbitrary strings: path-like ids, control and
//! bidi characters, very long values, in every positional and option a command has (read from
//! the real clap tree). The real binary runs each on a fresh polis; it must exit 0, 1 or 2
//! (never 101, a panic) and write nothing outside `_polis/`. The MCP server gets the same
//! values, NUL and 1 MB strings included (argv cannot carry those), and must answer each.

mod harness;

use harness::{McpStdio, TestPolis, BIN};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const FOUNDER: &str = "claude-founder-one";

/// Commands that are no one-shot over the polis: servers, or tools whose job is writing
/// outside `_polis/` (the agent CLIs' settings, git's config, a service unit, a demo folder).
const LEFT_OUT: &[&str] = &[
    "run",
    "serve",
    "mcp",
    "demo",
    "init",
    "service",
    "git-setup",
    "merge-driver",
    "bench",
    "config",
    "hooks",
    "completions",
    "man",
    "hook",
];

/// A hostile or unlucky value.
fn value() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("../x".to_string()),
        Just("../../../etc/passwd".to_string()),
        Just("/etc/passwd".to_string()),
        Just("..".to_string()),
        Just("".to_string()),
        Just("polis-daemon".to_string()),
        Just("[[../../x]]".to_string()),
        Just("claude-founder-one".to_string()),
        Just("x\u{1b}[2J\u{7}".to_string()),
        Just("\u{202e}txt.exe".to_string()),
        Just("a\u{85}b\u{7f}".to_string()),
        Just("-".to_string()),
        Just("--".to_string()),
        Just("9999999999999999999999".to_string()),
        Just("-5".to_string()),
        "[a-z0-9/._-]{1,20}",
        any::<String>().prop_map(|s| s.replace('\0', "")),
        (1usize..100_000).prop_map(|n| "x".repeat(n)),
    ]
}

/// One leaf command of the tree: its path of subcommand names, positionals and options.
struct Leaf {
    path: Vec<String>,
    positionals: usize,
    options: Vec<(String, bool)>,
}

fn leaves(cmd: &clap::Command, path: Vec<String>, out: &mut Vec<Leaf>) {
    let subs: Vec<&clap::Command> = cmd.get_subcommands().collect();
    if !subs.is_empty() {
        for s in subs {
            let name = s.get_name().to_string();
            if path.is_empty() && LEFT_OUT.contains(&name.as_str()) {
                continue;
            }
            let mut p = path.clone();
            p.push(name);
            leaves(s, p, out);
        }
        return;
    }
    let mut positionals = 0;
    let mut options = Vec::new();
    for a in cmd.get_arguments() {
        if a.is_positional() {
            positionals += 1;
        } else if let Some(long) = a.get_long() {
            if long == "help" || long == "version" || long == "polis" || long == "polis-root" {
                continue;
            }
            let takes_value = a.get_num_args().is_some_and(|n| n.takes_values())
                || matches!(
                    a.get_action(),
                    clap::ArgAction::Set | clap::ArgAction::Append
                );
            options.push((format!("--{long}"), takes_value));
        }
    }
    out.push(Leaf {
        path,
        positionals,
        options,
    });
}

/// Every file outside `_polis/` under `dir`, with its bytes.
fn outside_polis(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let path = e.path();
            if path.file_name().is_some_and(|n| n == "_polis") {
                continue;
            }
            let Ok(meta) = std::fs::symlink_metadata(&path) else {
                continue;
            };
            if meta.is_dir() {
                stack.push(path);
            } else {
                out.insert(path.clone(), std::fs::read(&path).unwrap_or_default());
            }
        }
    }
    out
}

#[test]
fn every_command_given_hostile_arguments_exits_0_1_or_2_and_writes_only_inside_the_polis() {
    let mut all = Vec::new();
    leaves(
        &polisd::commands::cli::whole_command(),
        Vec::new(),
        &mut all,
    );
    assert!(all.len() > 20, "the tree was read: {} commands", all.len());
    let p = TestPolis::init(FOUNDER);
    p.save(
        "contracts/open/real.md",
        &format!("---\ncontract_id: real\ntitle: Real\nopened_by: {FOUNDER}\nopened_at: 2026-01-01 10:00:00\nowner: {FOUNDER}\nstatus: claimed\n---\n\n## Intent\n\nx\n"),
    );
    let project = p.root.parent().unwrap().to_path_buf();
    let home = p.dir.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let before = (outside_polis(&project), outside_polis(&home));
    let mut runner = TestRunner::new(Config {
        cases: 6,
        failure_persistence: None,
        ..Config::default()
    });
    for leaf in &all {
        // Once with every positional path-like, then random values.
        let mut args = leaf.path.clone();
        args.push("--".to_string());
        args.extend((0..leaf.positionals).map(|_| "../x".to_string()));
        let out = Command::new(BIN)
            .args(&args)
            .env("POLISD_STATE_DIR", &p.state_dir)
            .env("HOME", &home)
            .current_dir(&p.root)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(
            matches!(out.status.code(), Some(0..=2)),
            "{args:?} exited {:?}:\n{}",
            out.status.code(),
            String::from_utf8_lossy(&out.stderr)
        );
        let strategy = (
            proptest::collection::vec(value(), leaf.positionals..=leaf.positionals),
            proptest::collection::vec((0..leaf.options.len().max(1), value()), 0..4),
        );
        runner
            .run(&strategy, |(positionals, options)| {
                let mut args: Vec<String> = leaf.path.clone();
                for (i, v) in &options {
                    if let Some((name, takes)) = leaf.options.get(*i) {
                        if *takes {
                            args.push(format!("{name}={v}"));
                        } else {
                            args.push(name.clone());
                        }
                    }
                }
                args.push("--".to_string());
                args.extend(positionals);
                let out = Command::new(BIN)
                    .args(&args)
                    .env("POLISD_STATE_DIR", &p.state_dir)
                    .env("HOME", &home)
                    .env("XDG_CONFIG_HOME", home.join(".config"))
                    .env("XDG_STATE_HOME", home.join(".state"))
                    .current_dir(&p.root)
                    .stdin(Stdio::null())
                    .output()
                    .unwrap();
                let code = out.status.code();
                prop_assert!(
                    matches!(code, Some(0..=2)),
                    "{args:?} exited {code:?}:\n{}",
                    String::from_utf8_lossy(&out.stderr)
                );
                Ok(())
            })
            .unwrap_or_else(|e| panic!("{}: {e}", leaf.path.join(" ")));
    }
    assert_eq!(
        (outside_polis(&project), outside_polis(&home)),
        before,
        "nothing written outside _polis/"
    );
}

#[test]
fn every_mcp_tool_given_hostile_arguments_answers_and_writes_only_inside_the_polis() {
    use serde_json::{json, Value};
    let p = TestPolis::init(FOUNDER);
    let project = p.root.parent().unwrap().to_path_buf();
    let before = outside_polis(&project);
    let mut mcp = McpStdio::start(&p.root, &p.state_dir);
    let mut ask = |id: u64, method: &str, params: Value| -> Value {
        mcp.send_request(id, method, params.clone());
        // A message too large to read is answered without an id (its id was never read).
        mcp.message_where(&format!("an answer to {method} {params:.200}"), |v| {
            v["id"] == json!(id) || (v.get("id").is_none() && v.get("error").is_some())
        })
    };
    ask(
        1,
        "initialize",
        json!({"protocolVersion": "2025-06-18", "capabilities": {},
               "clientInfo": {"name": "arguments", "version": "1"}}),
    );
    let tools = ask(2, "tools/list", json!({}));
    let mut id = 10;
    let hostile = [
        "../x".to_string(),
        "/etc/passwd".to_string(),
        "x\0y".to_string(),
        "polis-daemon".to_string(),
        "\u{1b}[2J\u{202e}".to_string(),
        "x".repeat(1 << 20),
    ];
    for tool in tools["result"]["tools"].as_array().unwrap() {
        let name = tool["name"].as_str().unwrap();
        let props = tool["inputSchema"]["properties"]
            .as_object()
            .cloned()
            .unwrap_or_default();
        for bad in &hostile {
            let args: serde_json::Map<String, Value> = props
                .iter()
                .map(|(k, schema)| {
                    let v = match schema["type"].as_str() {
                        Some("array") => json!([bad]),
                        Some("integer") => json!(3),
                        Some("boolean") => json!(true),
                        _ => json!(bad),
                    };
                    (k.clone(), v)
                })
                .collect();
            id += 1;
            let answer = ask(id, "tools/call", json!({"name": name, "arguments": args}));
            assert!(
                answer.get("result").is_some() || answer.get("error").is_some(),
                "{name}: {answer:.300}"
            );
        }
    }
    drop(mcp); // stopped before the tree outside the polis is compared
    assert_eq!(
        outside_polis(&project),
        before,
        "nothing written outside _polis/"
    );
}
