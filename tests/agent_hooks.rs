//! The hooks as the agent CLIs run them: `polisd hooks install` writes each CLI's settings
//! file, and the test then does what Claude Code, Codex CLI and Gemini CLI document doing — it
//! reads the command of every installed handler from the real settings file and runs it with
//! `sh -c` in the project folder, the event's payload JSON on stdin, and reads the JSON the
//! CLI would read. The settings files start as teams have them: other tools' hooks, CRLF, a
//! byte-order mark, tabs, `{}`. And the project is a real git repository with two people.
//!
//! Aider has no hooks: `polisd hooks install --aider` lists `AGENTS.md` in its config and sets
//! its `load:` file, whose `/run` line the test runs as Aider does (and starts the real Aider,
//! `common/clients.rs`, to see that it reads the pointer).

#[path = "common/clients.rs"]
mod clients;
mod harness;
#[path = "common/reference.rs"]
mod reference;

use harness::{Killed, TestPolis, BIN, DEADLINE};
use polisd::protocol::delivery::codex_trust;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const ME: &str = "claude-code-one";
const OTHER: &str = "codex-frontend-one";

fn project(p: &TestPolis) -> PathBuf {
    p.root.parent().unwrap().to_path_buf()
}

/// The home of the people in these tests: Gemini CLI trusts the project folder there, and
/// Codex CLI the project and polisd's hooks as they are now, as they do once their user chose
/// to (without it, neither runs the project's hooks; a hook changed since its approval is
/// `agent_clis`'s case).
fn home(p: &TestPolis) -> PathBuf {
    let home = p.dir.path().join("home");
    let project = std::fs::canonicalize(project(p)).unwrap();
    let record = home.join(".gemini/trustedFolders.json");
    if !record.exists() {
        std::fs::create_dir_all(record.parent().unwrap()).unwrap();
        std::fs::write(
            &record,
            json!({ project.to_str().unwrap(): "TRUST_FOLDER" }).to_string(),
        )
        .unwrap();
    }
    // Codex records the project's trust, without which it reads none of its `.codex/`, and
    // its review the hash of each handler approved, by the handler's place in the hooks file.
    let hooks = project.join(".codex/hooks.json");
    let mut codex = format!(
        "[projects.\"{}\"]\ntrust_level = \"trusted\"\n",
        project.display()
    );
    let file: Value = std::fs::read_to_string(&hooks)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or(Value::Null);
    for (event, groups) in file["hooks"].as_object().into_iter().flatten() {
        let snake: String = event
            .chars()
            .enumerate()
            .flat_map(|(i, c)| {
                let gap = (i > 0 && c.is_ascii_uppercase()).then_some('_');
                gap.into_iter().chain([c.to_ascii_lowercase()])
            })
            .collect();
        for (g, group) in groups.as_array().into_iter().flatten().enumerate() {
            for (h, handler) in group["hooks"].as_array().into_iter().flatten().enumerate() {
                if let Some(hash) = codex_trust::handler_hash(event, group, handler) {
                    codex.push_str(&format!(
                        "[hooks.state.\"{}:{snake}:{g}:{h}\"]\ntrusted_hash = \"{hash}\"\n",
                        hooks.display()
                    ));
                }
            }
        }
    }
    std::fs::create_dir_all(home.join(".codex")).unwrap();
    std::fs::write(home.join(".codex/config.toml"), codex).unwrap();
    home
}

/// `polisd …` as one person: their own state folder (polisd's per-user state) and home.
fn polisd_as(p: &TestPolis, state: &Path, args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .env("HOME", home(p))
        .env_remove("CODEX_HOME")
        .env("POLISD_STATE_DIR", state)
        .env_remove("POLIS_CITIZEN")
        .current_dir(project(p))
        .output()
        .unwrap()
}

#[track_caller]
fn ok(out: &Output) -> String {
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The payload each CLI documents for an event (the fields polisd may read and a few it does
/// not, as the CLIs send them).
fn payload(cli: &str, event: &str, cwd: &Path) -> Value {
    let mut v = match (cli, event) {
        (_, "SessionStart") => json!({"source": "startup"}),
        ("claude", "PostToolUse") | ("codex", "PostToolUse") => json!({
            "tool_name": "Bash", "tool_input": {"command": "ls"},
            "tool_response": {"stdout": "", "stderr": ""}, "tool_use_id": "toolu_01"}),
        ("gemini", "AfterTool") => json!({
            "tool_name": "run_shell_command", "tool_input": {"command": "ls"},
            "tool_response": {"llmContent": ""}}),
        (_, "UserPromptSubmit") | ("gemini", "BeforeAgent") => json!({"prompt": "go on"}),
        other => panic!("no payload for {other:?}"),
    };
    v["session_id"] = json!("session-1");
    v["transcript_path"] = json!("/tmp/transcript.jsonl");
    v["cwd"] = json!(cwd);
    v["hook_event_name"] = json!(event);
    match cli {
        "claude" => v["permission_mode"] = json!("default"),
        "codex" => v["model"] = json!("gpt-5-codex"),
        _ => v["timestamp"] = json!("2026-03-02T10:00:00Z"),
    }
    v
}

/// Every handler polisd's settings file holds for `cli`, as (event, command).
fn handlers(settings: &str) -> Vec<(String, String)> {
    let v: Value = serde_json::from_str(settings.trim_start_matches('\u{feff}')).unwrap();
    let mut out = Vec::new();
    for (event, groups) in v["hooks"].as_object().unwrap() {
        for group in groups.as_array().unwrap() {
            for h in group["hooks"].as_array().unwrap() {
                out.push((event.clone(), h["command"].as_str().unwrap().to_string()));
            }
        }
    }
    out
}

/// Runs one handler as the CLI does: `sh -c <command>` in the project with the payload on
/// stdin. Returns what it printed.
fn fire(p: &TestPolis, state: &Path, command: &str, payload: &Value) -> String {
    let out = harness::output_with_stdin(
        Command::new("sh")
            .arg("-c")
            .arg(command)
            .env("POLISD_STATE_DIR", state)
            .env_remove("POLIS_CITIZEN")
            .current_dir(project(p)),
        payload.to_string().as_bytes(),
    );
    assert_eq!(out.status.code(), Some(0), "{command}: {out:?}");
    String::from_utf8(out.stdout).unwrap()
}

/// The context a handler's output adds, per the CLIs' contract (`hookSpecificOutput`).
fn added_context(out: &str, event: &str) -> Option<String> {
    let out = out.trim();
    if out.is_empty() || out == "{}" {
        return None;
    }
    let v: Value = serde_json::from_str(out).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert_eq!(v["hookSpecificOutput"]["hookEventName"], event, "{v}");
    Some(
        v["hookSpecificOutput"]["additionalContext"]
            .as_str()
            .unwrap()
            .to_string(),
    )
}

const CLIS: [(&str, &str); 3] = [
    ("claude", ".claude/settings.json"),
    ("codex", ".codex/hooks.json"),
    ("gemini", ".gemini/settings.json"),
];

/// Settings files as teams have them. The foreign hooks include commands that merely contain
/// polisd's words, which are not polisd's.
fn originals(cli: &str) -> Vec<(&'static str, String)> {
    let foreign = format!(
        "{{\n  \"model\": \"x\",\n  \"hooks\": {{\n    \"SessionStart\": [\n      {{\n        \"hooks\": [\n          {{\n            \"type\": \"command\",\n            \"command\": \"echo polisd hook {cli} prime\"\n          }}\n        ]\n      }}\n    ],\n    \"PostToolUse\": [\n      {{\n        \"matcher\": \"Write\",\n        \"hooks\": [\n          {{\n            \"type\": \"command\",\n            \"command\": \"my-wrapper.sh hook {cli} notices\"\n          }}\n        ]\n      }}\n    ]\n  }}\n}}\n"
    );
    let tabs = "{\n\t\"env\": {\n\t\t\"A\": \"1\"\n\t}\n}\n".to_string();
    let crlf = foreign.replace('\n', "\r\n");
    let bom = format!("\u{feff}{}", tabs.replace('\n', "\r\n"));
    let mut files = vec![
        ("foreign hooks", foreign),
        ("tabs", tabs),
        ("CRLF", crlf),
        ("{}", "{}".to_string()),
        ("{} and a line end", "{}\n".to_string()),
    ];
    // Only Claude Code reads a settings file that starts with a byte-order mark; Codex and
    // Gemini CLI refuse one, so install leaves theirs alone (the agent_clis tests show both).
    if cli == "claude" {
        files.push(("BOM and CRLF", bom));
    }
    files
}

#[test]
fn each_clis_hooks_fire_from_the_real_settings_file_and_uninstall_gives_back_the_bytes() {
    let p = TestPolis::init(ME);
    let me = p.dir.path().join("state-me");
    let project = project(&p);
    for (cli, rel) in CLIS {
        for (what, original) in originals(cli) {
            std::fs::create_dir_all(project.join(rel).parent().unwrap()).unwrap();
            std::fs::write(project.join(rel), &original).unwrap();
            let flag = format!("--{cli}");
            ok(&polisd_as(
                &p,
                &me,
                &["hooks", "install", &flag, "--as", ME, "--bin", BIN],
            ));
            let settings = std::fs::read_to_string(project.join(rel)).unwrap();
            assert_eq!(
                settings.starts_with('\u{feff}'),
                original.starts_with('\u{feff}'),
                "{cli} {what}"
            );
            assert_eq!(settings.contains("\r\n"), original.contains("\r\n"));
            assert!(
                !settings.contains(ME),
                "{cli} {what}: the id stays out of the file"
            );
            let all = handlers(&settings);
            for foreign in ["echo polisd hook", "my-wrapper.sh hook"] {
                assert_eq!(
                    all.iter().filter(|(_, c)| c.starts_with(foreign)).count(),
                    usize::from(what.contains("foreign") || what == "CRLF"),
                    "{cli} {what}: other tools' hooks are kept"
                );
            }
            let ours: Vec<&(String, String)> =
                all.iter().filter(|(_, c)| c.starts_with(BIN)).collect();
            assert_eq!(ours.len(), 3, "{cli} {what}: {all:?}");
            for (event, command) in ours {
                let out = fire(&p, &me, command, &payload(cli, event, &project));
                match (event.as_str(), added_context(&out, event)) {
                    ("SessionStart", Some(primer)) => {
                        assert!(
                            primer.contains(&format!("You are citizen `{ME}`")),
                            "{primer}"
                        )
                    }
                    ("SessionStart", None) => panic!("{cli} {what}: no primer"),
                    // Nothing new since the primer: nothing to add (Gemini wants `{}`).
                    (_, None) => assert_eq!(out.trim().is_empty(), cli != "gemini", "{out}"),
                    (_, Some(context)) => panic!("{cli} {event}: unexpected {context}"),
                }
            }
            ok(&polisd_as(&p, &me, &["hooks", "uninstall", &flag]));
            assert_eq!(
                std::fs::read_to_string(project.join(rel)).unwrap(),
                original,
                "{cli} {what}: uninstall gives back the bytes"
            );
            // Someone else uninstalling (no record of the original on their machine) keeps the
            // file's form all the same.
            let someone = p.dir.path().join(format!("state-{cli}-{}", what.len()));
            ok(&polisd_as(
                &p,
                &me,
                &["hooks", "install", &flag, "--as", ME, "--bin", BIN],
            ));
            ok(&polisd_as(&p, &someone, &["hooks", "uninstall", &flag]));
            assert_eq!(
                std::fs::read_to_string(project.join(rel)).unwrap(),
                original,
                "{cli} {what}: uninstall by another person"
            );
        }
        // A file polisd created goes away again.
        std::fs::remove_file(project.join(rel)).unwrap();
        let flag = format!("--{cli}");
        ok(&polisd_as(
            &p,
            &me,
            &["hooks", "install", &flag, "--as", ME, "--bin", BIN],
        ));
        ok(&polisd_as(&p, &me, &["hooks", "uninstall", &flag]));
        assert!(!project.join(rel).exists(), "{cli}");
    }
}

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(["-c", "user.name=Test", "-c", "user.email=test@example.com"])
        .args(args)
        .current_dir(dir)
        .output()
        .expect("git must be installed for this test");
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn in_a_git_clone_each_person_and_each_cli_acts_as_its_own_id_and_no_shared_file_names_one() {
    let p = TestPolis::init(ME);
    p.citizen(OTHER, "openai", &[("frontend", 4)], "low");
    let project = project(&p);
    git(&project, &["init", "-q"]);
    git(&project, &["add", "-A"]);
    git(&project, &["commit", "-q", "-m", "polis"]);
    let alice = p.dir.path().join("state-alice");
    let bob = p.dir.path().join("state-bob");

    // Alice is ME in every CLI.
    ok(&polisd_as(
        &p,
        &alice,
        &["hooks", "install", "--all", "--as", ME, "--bin", BIN],
    ));
    let changed = git(
        &project,
        &["ls-files", "--modified", "--others", "--exclude-standard"],
    );
    assert!(changed.contains(".claude/settings.json"), "{changed}");
    for file in changed.lines() {
        let text = std::fs::read_to_string(project.join(file)).unwrap();
        assert!(!text.contains(ME), "{file} names the citizen: {text}");
    }
    git(&project, &["add", "-A"]);
    git(&project, &["commit", "-q", "-m", "hooks"]);

    // Bob, on the same clone, installs as OTHER: the shared files do not change.
    let bob_install = ok(&polisd_as(
        &p,
        &bob,
        &["hooks", "install", "--all", "--as", OTHER, "--bin", BIN],
    ));
    assert_eq!(
        git(&project, &["status", "--porcelain"]),
        "",
        "{bob_install}"
    );
    // Alice then says her Codex is OTHER too: only her own record changes.
    ok(&polisd_as(
        &p,
        &alice,
        &["hooks", "install", "--codex", "--as", OTHER, "--bin", BIN],
    ));
    assert_eq!(git(&project, &["status", "--porcelain"]), "");

    for (cli, rel) in CLIS {
        let settings = std::fs::read_to_string(project.join(rel)).unwrap();
        let (_, prime) = handlers(&settings)
            .into_iter()
            .find(|(e, _)| e == "SessionStart")
            .unwrap();
        let start = payload(cli, "SessionStart", &project);
        let as_alice = added_context(&fire(&p, &alice, &prime, &start), "SessionStart").unwrap();
        let as_bob = added_context(&fire(&p, &bob, &prime, &start), "SessionStart").unwrap();
        let alice_is = if cli == "codex" { OTHER } else { ME };
        assert!(
            as_alice.contains(&format!("You are citizen `{alice_is}`")),
            "{cli}: {as_alice}"
        );
        assert!(
            as_bob.contains(&format!("You are citizen `{OTHER}`")),
            "{cli}: {as_bob}"
        );
    }

    // Status says who each CLI acts as, for this person.
    let status: Value =
        serde_json::from_str(&ok(&polisd_as(&p, &alice, &["hooks", "status", "--json"]))).unwrap();
    let by_cli = |cli: &str| {
        status
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["cli"] == cli)
            .unwrap()
            .clone()
    };
    assert_eq!(by_cli("claude")["citizen"], ME);
    assert_eq!(by_cli("codex")["citizen"], OTHER);
    assert_eq!(by_cli("claude")["problems"], json!([]));
}

/// `hooks status` says in its text whom the hooks act as (the JSON always did), and exits 1
/// on a problem with `--json` as without it: an agent or a CI job reads the exit code either
/// way.
#[test]
fn status_names_the_citizen_and_exits_1_on_a_problem_with_json_too() {
    let p = TestPolis::init(ME);
    let me = p.dir.path().join("state-me");
    let nobody = p.dir.path().join("state-nobody");
    ok(&polisd_as(
        &p,
        &me,
        &["hooks", "install", "--claude", "--as", ME, "--bin", BIN],
    ));
    let text = ok(&polisd_as(&p, &me, &["hooks", "status"]));
    assert!(text.contains(&format!("acting as {ME}")), "{text}");
    ok(&polisd_as(&p, &me, &["hooks", "status", "--json"]));

    // Someone who never said who they are: a problem, in either form.
    let out = polisd_as(&p, &nobody, &["hooks", "status"]);
    assert_eq!(out.status.code(), Some(1));
    let out = polisd_as(&p, &nobody, &["hooks", "status", "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v[0]["problems"][0]
        .as_str()
        .unwrap()
        .contains("no citizen id"));
}

#[test]
fn status_reports_every_reason_a_hook_will_not_fire() {
    let p = TestPolis::init(ME);
    let project = project(&p);
    let me = p.dir.path().join("state-me");
    let nobody = p.dir.path().join("state-nobody");
    // A binary that is there at install and gone later.
    let bin_dir = p.dir.path().join("bin");
    std::fs::create_dir_all(&bin_dir).unwrap();
    let copy = bin_dir.join("polisd");
    std::fs::copy(BIN, &copy).unwrap();
    let copy = copy.to_str().unwrap();
    ok(&polisd_as(
        &p,
        &me,
        &["hooks", "install", "--all", "--as", ME, "--bin", copy],
    ));
    let problems = |state: &Path| -> Vec<String> {
        let out = polisd_as(&p, state, &["hooks", "status", "--json"]);
        let v: Value = serde_json::from_str(&String::from_utf8_lossy(&out.stdout)).unwrap();
        v.as_array()
            .unwrap()
            .iter()
            .flat_map(|s| s["problems"].as_array().unwrap().clone())
            .map(|p| p.as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(problems(&me), Vec::<String>::new());
    let out = polisd_as(&p, &me, &["hooks", "status"]);
    assert_eq!(out.status.code(), Some(0));

    // Someone who never said who they are.
    let theirs = problems(&nobody);
    assert_eq!(
        theirs
            .iter()
            .filter(|p| p.contains("no citizen id"))
            .count(),
        4,
        "the three CLIs' hooks and Aider's primer: {theirs:?}"
    );
    // A recorded id that is no citizen (any more).
    ok(&polisd_as(
        &p,
        &me,
        &["hooks", "install", "--claude", "--as", ME, "--bin", copy],
    ));
    let record = std::fs::read_dir(&me)
        .unwrap()
        .map(|e| e.unwrap().path().join("hooks/_identity.json"))
        .find(|p| p.exists())
        .unwrap();
    std::fs::write(
        &record,
        r#"{"claude": "left-the-polis", "codex": "claude-code-one", "gemini": "claude-code-one", "aider": "claude-code-one"}"#,
    )
    .unwrap();
    assert!(problems(&me)
        .iter()
        .any(|p| p.contains("`left-the-polis` is not a citizen")));
    std::fs::write(
        &record,
        r#"{"claude": "claude-code-one", "codex": "claude-code-one", "gemini": "claude-code-one", "aider": "claude-code-one"}"#,
    )
    .unwrap();

    // Hooks switched off in each CLI's own way.
    let claude = std::fs::read_to_string(project.join(".claude/settings.json")).unwrap();
    std::fs::write(
        project.join(".claude/settings.local.json"),
        "{\"disableAllHooks\": true}\n",
    )
    .unwrap();
    let gemini = std::fs::read_to_string(project.join(".gemini/settings.json")).unwrap();
    let mut g: Value = serde_json::from_str(&gemini).unwrap();
    g["hooksConfig"] = json!({"enabled": false});
    std::fs::write(project.join(".gemini/settings.json"), g.to_string()).unwrap();
    std::fs::write(
        project.join(".codex/config.toml"),
        "[features]\nhooks = false\n",
    )
    .unwrap();
    // And the binary gone.
    std::fs::remove_file(copy).unwrap();
    let all = problems(&me);
    for needle in [
        "disableAllHooks",
        "hooksConfig.enabled: false",
        "Codex runs no hooks",
        "not an executable file or on PATH",
    ] {
        assert!(all.iter().any(|p| p.contains(needle)), "{needle}: {all:?}");
    }
    assert_eq!(
        all.iter()
            .filter(|p| p.contains("not an executable file"))
            .count(),
        4,
        "{all:?}"
    );
    let out = polisd_as(&p, &me, &["hooks", "status"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(claude.contains(copy));

    // Install itself refuses a binary the CLI could not run.
    let install_with = |bin: &str| {
        polisd_as(
            &p,
            &me,
            &["hooks", "install", "--claude", "--as", ME, "--bin", bin],
        )
    };
    let out = install_with("/nowhere/polisd");
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--bin /absolute/path/to/polisd"));

    // And a binary not named `polisd`: no polisd would know those hooks as its own again, so
    // status would say none, uninstall would leave them and every install would add them again.
    // In a folder with a space: the `ln -s` the message suggests must paste into a shell.
    let renamed = tempfile::tempdir().unwrap();
    let tools = renamed.path().join("my tools");
    std::fs::create_dir(&tools).unwrap();
    let dev = tools.join("polisd-dev");
    std::os::unix::fs::symlink(BIN, &dev).unwrap();
    let settings = project.join(".claude/settings.json");
    let before = std::fs::read(&settings).ok();
    let out = install_with(dev.to_str().unwrap());
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("is not named `polisd`"), "{out:?}");
    assert!(
        err.contains(&format!("`ln -s '{}' ~/.local/bin/polisd`", dev.display())),
        "{err}"
    );
    assert_eq!(std::fs::read(&settings).ok(), before, "nothing written");
}

/// What Aider, started at the project root as its docs say, adds to its chat at start-up:
/// the files of its `.aider.conf.yml` `read:` list that it found. Aider starts, loads its
/// config and exits (`--exit`), offline and asking nothing.
fn aider_reads(project: &Path, home: &Path) -> Vec<String> {
    let log = home.join("aider.out");
    let child = Command::new(clients::aider_python())
        .args(["-m", "aider", "--exit", "--yes-always", "--no-check-update"])
        .args([
            "--no-analytics",
            "--no-gitignore",
            "--no-show-model-warnings",
        ])
        .args(["--no-pretty", "--model", "gpt-4o"])
        .current_dir(project)
        .env("HOME", home)
        .env("OPENAI_API_KEY", "sk-unused")
        .env("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        .stdin(std::process::Stdio::null())
        .stdout(std::fs::File::create(&log).unwrap())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start Aider");
    let mut child = Killed::new(child);
    let start = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.child().try_wait().unwrap() {
            break status;
        }
        assert!(
            start.elapsed() < DEADLINE,
            "Aider did not exit within {DEADLINE:?}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let out = std::fs::read_to_string(&log).unwrap();
    assert!(status.success(), "Aider failed ({status}):\n{out}");
    out.lines()
        .filter_map(|l| {
            l.strip_prefix("Added ")?
                .strip_suffix(" to the chat (read-only).")
        })
        .map(str::to_string)
        .collect()
}

#[test]
fn aider_reads_the_bridge_pointer_once_installed_and_not_after_uninstall() {
    let p = TestPolis::init(ME);
    let root = project(&p);
    let home = tempfile::tempdir().unwrap();
    let state = home.path().join("state");
    git(&root, &["init", "-q"]);
    let config = "# the team's Aider settings\nmap-tokens: 1024\nread:\n  - CONVENTIONS.md\n";
    std::fs::write(root.join(".aider.conf.yml"), config).unwrap();
    std::fs::write(root.join("CONVENTIONS.md"), "Use tabs.\n").unwrap();
    // Without polisd's entry Aider never sees AGENTS.md, though `polisd init` wrote it.
    assert!(root.join("AGENTS.md").is_file());
    assert_eq!(aider_reads(&root, home.path()), ["CONVENTIONS.md"]);

    ok(&polisd_as(
        &p,
        &state,
        &["hooks", "install", "--aider", "--bin", BIN],
    ));
    let mut read = aider_reads(&root, home.path());
    read.sort();
    assert_eq!(read, ["AGENTS.md", "CONVENTIONS.md"]);
    let status = polisd_as(&p, &state, &["hooks", "status"]);
    let status = String::from_utf8_lossy(&status.stdout);
    assert!(
        status.contains(
            "aider   .aider.conf.yml          1 hook(s); reads AGENTS.md at session start"
        ),
        "{status}"
    );

    ok(&polisd_as(&p, &state, &["hooks", "uninstall", "--aider"]));
    assert_eq!(
        std::fs::read_to_string(root.join(".aider.conf.yml")).unwrap(),
        config
    );
    assert_eq!(aider_reads(&root, home.path()), ["CONVENTIONS.md"]);
}

/// The line of Aider's `load:` file that runs polisd, as `/run` gives it to a shell.
fn aider_load_command(root: &Path) -> String {
    let text = std::fs::read_to_string(root.join(".polis.aider")).unwrap();
    let runs: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("/run "))
        .collect();
    assert_eq!(runs.len(), 1, "{text}");
    runs[0].to_string()
}

/// `hooks install --aider --as ME` sets Aider's `load:` to polisd's command file, whose `/run`
/// prints the primer as plain text (what `/run` adds to the chat) and exits 0; installing
/// again changes no byte, `hooks status` names the hook and the citizen, and uninstall gives
/// the team's config back and removes the command file. A team's own `load:` file is refused,
/// nothing written; `hook aider notices` is a usage error.
#[test]
fn aider_load_file_runs_the_plain_primer_and_a_teams_own_load_is_refused() {
    let p = TestPolis::init(ME);
    let root = project(&p);
    let state = p.dir.path().join("state-me");
    let config = "# the team's Aider settings\r\nmap-tokens: 1024\r\n";
    std::fs::write(root.join(".aider.conf.yml"), config).unwrap();
    let install = [
        "hooks",
        "install",
        "--aider",
        "--no-bridge",
        "--as",
        ME,
        "--bin",
        BIN,
    ];
    ok(&polisd_as(&p, &state, &install));
    let written = std::fs::read_to_string(root.join(".aider.conf.yml")).unwrap();
    assert!(written.starts_with(config), "{written:?}");
    assert!(written.contains("load: .polis.aider\r\n"), "{written:?}");
    let command = aider_load_command(&root);
    assert_eq!(command, format!("{BIN} hook aider prime"));

    let out = Command::new("sh")
        .arg("-c")
        .arg(&command)
        .env("POLISD_STATE_DIR", &state)
        .env_remove("POLIS_CITIZEN")
        .current_dir(&root)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let printed = String::from_utf8(out.stdout).unwrap();
    assert!(printed.starts_with("# Polis primer for `"), "{printed}");
    assert!(printed.contains(ME), "{printed}");

    let notices = polisd_as(&p, &state, &["hook", "aider", "notices"]);
    assert_eq!(notices.status.code(), Some(2), "{notices:?}");
    assert!(
        String::from_utf8_lossy(&notices.stderr).contains("polisd notices --as"),
        "{notices:?}"
    );

    let again = ok(&polisd_as(&p, &state, &install));
    assert!(again.lines().all(|l| l.starts_with("unchanged")), "{again}");
    assert_eq!(
        std::fs::read_to_string(root.join(".aider.conf.yml")).unwrap(),
        written
    );
    let status: Value =
        serde_json::from_str(&ok(&polisd_as(&p, &state, &["hooks", "status", "--json"]))).unwrap();
    let row = status
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["cli"] == "aider")
        .unwrap();
    assert_eq!(row["hooks"], json!([["load", command]]), "{row:#}");
    assert_eq!(row["citizen"], ME, "{row:#}");

    ok(&polisd_as(&p, &state, &["hooks", "uninstall", "--aider"]));
    assert_eq!(
        std::fs::read_to_string(root.join(".aider.conf.yml")).unwrap(),
        config
    );
    assert!(!root.join(".polis.aider").exists());

    let theirs = "load: team.aider\nmap-tokens: 1024\n";
    std::fs::write(root.join(".aider.conf.yml"), theirs).unwrap();
    let refused = polisd_as(&p, &state, &install);
    assert_eq!(refused.status.code(), Some(1), "{refused:?}");
    let said = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(said.trim().lines().count(), 1, "{said}");
    assert!(said.contains("team.aider"), "{said}");
    assert_eq!(
        std::fs::read_to_string(root.join(".aider.conf.yml")).unwrap(),
        theirs
    );
    assert!(!root.join(".polis.aider").exists());
    let status: Value = serde_json::from_str(&String::from_utf8_lossy(
        &polisd_as(&p, &state, &["hooks", "status", "--json"]).stdout,
    ))
    .unwrap();
    let row = status
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["cli"] == "aider")
        .unwrap();
    assert_eq!(row["foreign_load"], "team.aider", "{row:#}");
}

/// Someone who never ran Gemini CLI or Codex CLI on this machine (no `~/.gemini`, no
/// `~/.codex`) is not told that those CLIs do not trust the project yet: their first session
/// asks. Once a CLI's folder exists, its missing trust is a problem.
#[test]
fn trust_is_checked_only_for_the_clis_this_person_has_run_here() {
    let p = TestPolis::init(ME);
    let state = p.dir.path().join("state-fresh");
    let fresh = p.dir.path().join("fresh-home");
    std::fs::create_dir_all(&fresh).unwrap();
    let run = |args: &[&str]| {
        Command::new(BIN)
            .args(args)
            .env("HOME", &fresh)
            .env_remove("CODEX_HOME")
            .env_remove("GEMINI_CLI_TRUSTED_FOLDERS_PATH")
            .env_remove("GEMINI_CLI_TRUST_WORKSPACE")
            .env("POLISD_STATE_DIR", &state)
            .env_remove("POLIS_CITIZEN")
            .current_dir(project(&p))
            .output()
            .unwrap()
    };
    let install = ok(&run(&[
        "hooks", "install", "--all", "--as", ME, "--bin", BIN,
    ]));
    assert!(!install.contains("trust"), "{install}");
    let status = run(&["hooks", "status"]);
    assert_eq!(status.status.code(), Some(0), "{}", ok(&status));

    std::fs::create_dir_all(fresh.join(".gemini")).unwrap();
    std::fs::create_dir_all(fresh.join(".codex")).unwrap();
    let status = run(&["hooks", "status"]);
    let said = String::from_utf8_lossy(&status.stdout);
    assert_eq!(status.status.code(), Some(1), "{said}");
    assert!(said.contains("trustedFolders.json"), "{said}");
    assert!(said.contains("~/.codex/config.toml"), "{said}");
}

/// A `load:` naming, by an absolute path, a file that is no regular file (a named pipe no one
/// writes, a device that never ends) is read by `hooks status` within bounds: it waited on
/// the pipe forever, and read a device until memory ran out.
#[test]
fn hooks_status_never_waits_on_a_load_file_that_is_a_pipe() {
    let p = TestPolis::init(ME);
    let fifo = p.dir.path().join("team.fifo");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    std::fs::write(
        project(&p).join(".aider.conf.yml"),
        format!("load: {}\n", fifo.display()),
    )
    .unwrap();
    let mut status = Killed::new(
        Command::new(BIN)
            .args(["hooks", "status"])
            .env("HOME", home(&p))
            .env("POLISD_STATE_DIR", &p.state_dir)
            .env_remove("POLIS_CITIZEN")
            .current_dir(project(&p))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    harness::wait_until("`hooks status` to end", DEADLINE, || {
        status.child().try_wait().unwrap().is_some()
    });
}
