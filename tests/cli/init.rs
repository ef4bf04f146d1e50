//! `polisd init` checks before it writes; `polisd register` adds a citizen polisd is happy with.

use super::{describe, json, polisd_in, stdout, FOUNDER, FOUNDER_CARD};
use crate::harness::TestPolis;
use std::path::Path;

/// Every path under `dir`, relative, sorted (`.state/` excluded).
fn tree(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let rel = e.path().strip_prefix(dir).unwrap().display().to_string();
            if rel.starts_with(".state") {
                continue;
            }
            if e.file_type().unwrap().is_dir() {
                stack.push(e.path());
            }
            out.push(rel);
        }
    }
    out.sort();
    out
}

#[test]
fn init_with_a_bad_agent_id_exits_2_and_writes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let out = polisd_in(tmp.path(), &["init", ".", "--agent-id", "bad"]);
    assert_eq!(out.status.code(), Some(2), "{}", describe(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a valid agent id"));
    assert_eq!(tree(tmp.path()), Vec::<String>::new());
}

#[test]
fn init_into_a_missing_folder_exits_2_and_creates_no_folder() {
    let tmp = tempfile::tempdir().unwrap();
    let out = polisd_in(tmp.path(), &["init", "x/sub", "--agent-id", FOUNDER]);
    assert_eq!(out.status.code(), Some(2), "{}", describe(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("does not exist"));
    assert!(!tmp.path().join("x").exists());
}

/// A bridge pointer polisd cannot edit (a `CLAUDE.md` that is a symbolic link) refuses
/// `init` before its first write: no half-made `_polis/` is left behind, and the link's
/// target is not created.
#[test]
fn init_refused_by_a_bridge_pointer_writes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let elsewhere = tmp.path().join("elsewhere.md");
    let project = tmp.path().join("project");
    std::fs::create_dir(&project).unwrap();
    std::os::unix::fs::symlink(&elsewhere, project.join("CLAUDE.md")).unwrap();
    let before = tree(&project);
    let out = polisd_in(&project, &["init", "--agent-id", FOUNDER, "--json"]);
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    assert_eq!(json(&out)["ok"], false, "{}", describe(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("CLAUDE.md"),
        "{}",
        describe(&out)
    );
    assert_eq!(tree(&project), before, "a refused init wrote");
    assert!(!elsewhere.exists());
}

#[test]
fn init_dry_run_lists_the_files_and_writes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let out = polisd_in(
        tmp.path(),
        &["init", ".", "--agent-id", FOUNDER, "--dry-run", "--json"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    let report = json(&out);
    let created: Vec<&str> = report["created"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert!(created.contains(&"CONSTITUTION.md"));
    assert!(created.contains(&"contracts/TEMPLATE.md"));
    assert_eq!(report["dry_run"], true);
    assert_eq!(tree(tmp.path()), Vec::<String>::new());
}

/// The dry run names every file a real `init` then writes, the bridge pointers at the project
/// root (AGENTS.md, CLAUDE.md, GEMINI.md, `.agents/`) included.
#[test]
fn init_dry_run_lists_every_file_init_writes_bridge_pointers_included() {
    let tmp = tempfile::tempdir().unwrap();
    let dry = polisd_in(
        tmp.path(),
        &["init", ".", "--agent-id", FOUNDER, "--dry-run"],
    );
    assert_eq!(dry.status.code(), Some(0), "{}", describe(&dry));
    // The headline counts the bridge pointers it lists, not only the files in `_polis/`.
    assert!(
        stdout(&dry).lines().next().is_some_and(|l| l.contains(
            "files to create, 0 already present and kept, 4 bridge files to write at the project root;"
        )),
        "{}",
        describe(&dry)
    );
    let listed: Vec<String> = stdout(&dry)
        .lines()
        .filter_map(|l| l.strip_prefix("  create "))
        .map(|rel| match rel.strip_prefix("../") {
            Some(at_root) => at_root.trim_end_matches(" (project root)").to_string(),
            None => format!("_polis/{rel}"),
        })
        .collect();
    let report = json(&polisd_in(
        tmp.path(),
        &["init", ".", "--agent-id", FOUNDER, "--dry-run", "--json"],
    ));
    let bridge: Vec<&str> = report["bridge"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["path"].as_str().unwrap())
        .collect();
    for rel in [
        "AGENTS.md",
        "CLAUDE.md",
        "GEMINI.md",
        ".agents/skills/polis-protocol/SKILL.md",
    ] {
        assert!(
            listed.iter().any(|l| l == rel),
            "{rel} not listed: {listed:?}"
        );
        assert!(bridge.contains(&rel), "{rel} not in --json: {report:#}");
    }
    assert_eq!(tree(tmp.path()), Vec::<String>::new(), "the dry run wrote");
    let real = polisd_in(tmp.path(), &["init", ".", "--agent-id", FOUNDER]);
    assert_eq!(real.status.code(), Some(0), "{}", describe(&real));
    let written: Vec<String> = tree(tmp.path())
        .into_iter()
        .filter(|p| tmp.path().join(p).is_file())
        .collect();
    let mut listed = listed;
    listed.sort();
    assert_eq!(listed, written, "the dry run and the real init differ");
}

#[test]
fn init_without_a_root_makes_the_polis_in_the_working_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let out = polisd_in(tmp.path(), &["init", "--agent-id", FOUNDER]);
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    assert!(tmp.path().join("_polis/CONSTITUTION.md").is_file());
    // Without --tool the card says it is not known, rather than repeating the vendor.
    let card = std::fs::read_to_string(tmp.path().join("_polis").join(FOUNDER_CARD)).unwrap();
    assert!(card.contains("\ntool: 'unknown'\n"), "{card}");
}

/// A bridge pointer written with CRLF line ends (a Windows editor's AGENTS.md) gets polisd's
/// section with CRLF too, not LF lines after CRLF ones; the user's bytes come first, unchanged,
/// and a second `init` finds the file as it left it.
#[test]
fn init_writes_the_bridge_section_in_a_crlf_files_line_ends() {
    let tmp = tempfile::tempdir().unwrap();
    let mine = "# Agents\r\n\r\nUse pnpm. Never push.\r\n";
    std::fs::write(tmp.path().join("AGENTS.md"), mine).unwrap();
    let out = polisd_in(tmp.path(), &["init", "--agent-id", FOUNDER]);
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    let after = std::fs::read_to_string(tmp.path().join("AGENTS.md")).unwrap();
    assert!(after.starts_with(mine), "{after:?}");
    assert!(after.contains("polisd:bridge:start"), "{after:?}");
    assert_eq!(
        after.matches('\n').count(),
        after.matches("\r\n").count(),
        "a line end without CR: {after:?}"
    );
    let again = polisd_in(tmp.path(), &["init", "--agent-id", FOUNDER]);
    assert_eq!(again.status.code(), Some(0), "{}", describe(&again));
    let twice = std::fs::read_to_string(tmp.path().join("AGENTS.md")).unwrap();
    assert_eq!(twice, after);
}

#[test]
fn init_again_with_a_new_founder_lists_what_it_added() {
    let tmp = tempfile::tempdir().unwrap();
    let first = polisd_in(tmp.path(), &["init", ".", "--agent-id", FOUNDER]);
    assert_eq!(first.status.code(), Some(0), "{}", describe(&first));
    // A fresh polis names no file: the count says it all.
    assert!(
        !stdout(&first).contains("  created "),
        "{}",
        describe(&first)
    );
    let again = polisd_in(tmp.path(), &["init", ".", "--agent-id", "second-founder-2"]);
    assert_eq!(again.status.code(), Some(0), "{}", describe(&again));
    let out = stdout(&again);
    for rel in ["capability_card.yml", "status.md", "inbox.md", "journal.md"] {
        assert!(
            out.contains(&format!("  created citizens/second-founder-2/{rel}\n")),
            "{out}"
        );
    }
    assert!(out.contains("  kept chronicle.md\n"), "{out}");
    // It joined the polis someone else founded, as `register` says it.
    let chronicle = std::fs::read_to_string(tmp.path().join("_polis/chronicle.md")).unwrap();
    assert!(
        chronicle.contains("| second-founder-2 | joined polis | [[citizens/second-founder-2]] |"),
        "{chronicle}"
    );
    let check = polisd_in(tmp.path(), &["check", "--json"]);
    assert_eq!(check.status.code(), Some(0), "{}", describe(&check));
}

#[test]
fn init_writes_a_contract_template_that_is_not_read_as_a_contract() {
    let p = TestPolis::init(FOUNDER);
    let template = p.read("contracts/TEMPLATE.md");
    assert!(template.contains("contract_id:") && template.contains("## Settlement"));
    let status = json(&p.polisd(&["status", "--json"]));
    assert_eq!(status["contracts"]["open"], 0, "{status:#}");
    let check = json(&p.polisd(&["check", "--json"]));
    assert_eq!(check["findings"], serde_json::json!([]), "{check:#}");
    // Copied into open/ and filled in, it is a contract polisd accepts.
    let filled = template
        .lines()
        .filter(|l| !l.starts_with('#'))
        .collect::<Vec<_>>()
        .join("\n")
        .replace("my-contract-id", "first-task");
    p.save("contracts/open/first-task.md", &filled);
    let status = json(&p.polisd(&["status", "--json"]));
    assert_eq!(status["contracts"]["open"], 1, "{status:#}");
    let check = p.polisd(&["check", "--json"]);
    assert_eq!(json(&check)["errors"], 0, "{}", describe(&check));
}

#[test]
fn register_writes_a_stamped_card_and_its_joined_line() {
    let p = TestPolis::init(FOUNDER);
    let out = p.polisd(&[
        "register",
        "codex-agent-2",
        "--vendor",
        "openai",
        "--model",
        "gpt-5",
        "--tags",
        "python:4,docs:3",
        "--cost",
        "low",
        "--tool",
        "codex cli",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).lines().next(),
        Some("registered codex-agent-2"),
        "one line that says so, nothing trailing"
    );
    for f in ["capability_card.yml", "status.md", "inbox.md", "journal.md"] {
        assert!(p.exists(&format!("citizens/codex-agent-2/{f}")), "{f}");
    }
    // The card names the agent CLI, not the vendor a second time.
    let card = p.read("citizens/codex-agent-2/capability_card.yml");
    assert!(
        card.contains("\nvendor: 'openai'\n") && card.contains("\ntool: 'codex cli'\n"),
        "{card}"
    );
    let last = p.read("chronicle.md").lines().last().unwrap().to_string();
    assert!(
        last.contains("| codex-agent-2 | joined polis | [[citizens/codex-agent-2]] |"),
        "{last}"
    );
    let verify = json(&p.polisd(&["verify", "--json"]));
    let states: Vec<&str> = verify["cards"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["state"].as_str().unwrap())
        .collect();
    assert_eq!(states, ["ok", "ok"], "{verify:#}");
    let check = p.polisd(&["check", "--json"]);
    assert_eq!(
        json(&check)["findings"],
        serde_json::json!([]),
        "{}",
        describe(&check)
    );
    // The flag once a tag says the same as one list.
    let repeated = p.polisd(&[
        "register",
        "gemini-cli-03",
        "--vendor",
        "google",
        "--model",
        "gemini-2.5-pro",
        "--tags",
        "python:4",
        "--tags",
        "docs:3,rust:2",
    ]);
    assert_eq!(repeated.status.code(), Some(0), "{}", describe(&repeated));
    let card = p.read("citizens/gemini-cli-03/capability_card.yml");
    for tag in ["python", "docs", "rust"] {
        assert!(card.contains(&format!("{tag}:")), "{tag} missing: {card}");
    }
    // The id is now taken: refused with one line, nothing written.
    let chronicle = p.read("chronicle.md");
    let again = p.polisd(&[
        "register",
        "codex-agent-2",
        "--vendor",
        "openai",
        "--model",
        "gpt-5",
        "--tags",
        "rust:2",
    ]);
    assert_eq!(again.status.code(), Some(1), "{}", describe(&again));
    assert!(String::from_utf8_lossy(&again.stderr).contains("already taken"));
    assert_eq!(p.read("chronicle.md"), chronicle);
}

#[test]
fn register_refuses_an_invalid_id_or_tag_with_exit_2() {
    let p = TestPolis::init(FOUNDER);
    for args in [
        [
            "register", "Bad", "--vendor", "x", "--model", "y", "--tags", "python:4",
        ],
        [
            "register",
            "polis-daemon",
            "--vendor",
            "x",
            "--model",
            "y",
            "--tags",
            "python:4",
        ],
        [
            "register",
            "fine-agent-1",
            "--vendor",
            "x",
            "--model",
            "y",
            "--tags",
            "python:9",
        ],
    ] {
        let out = p.polisd(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", describe(&out));
    }
    assert!(!p.exists("citizens/fine-agent-1"));
}

/// A vendor, model or tool on two lines cannot be one card value: it is refused naming the
/// flag. The card's single-quoted value broke at the line break, and the refusal blamed "the
/// card is not valid YAML … (line 2)", a file the person never wrote.
#[test]
fn register_refuses_a_vendor_or_model_on_two_lines_naming_the_flag() {
    let p = TestPolis::init(FOUNDER);
    for (flag, value) in [
        ("--vendor", "openai\nx"),
        ("--model", "gpt\n---"),
        ("--model", "gpt\u{2028}x"),
    ] {
        let mut args = vec![
            "register",
            "fine-agent-1",
            "--vendor",
            "x",
            "--model",
            "y",
            "--tags",
            "python:4",
        ];
        let at = args.iter().position(|a| *a == flag).unwrap() + 1;
        args[at] = value;
        let out = p.polisd(&args);
        assert_eq!(out.status.code(), Some(2), "{flag}: {}", describe(&out));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(flag) && err.contains("one line") && !err.contains("YAML"),
            "{flag}: {err}"
        );
    }
    assert!(!p.exists("citizens/fine-agent-1"));
}

/// In a git repository, `init` says to run `polisd git-setup` until the clone has the merge
/// driver; a citizen joining a clone that has it is not told to run it again.
#[test]
fn init_suggests_git_setup_only_while_the_clone_lacks_the_driver() {
    let tmp = tempfile::tempdir().unwrap();
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .args(args)
            .current_dir(tmp.path())
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {}", describe(&out));
    };
    git(&["init", "-q"]);
    let hint = "run `polisd git-setup";
    let first = polisd_in(tmp.path(), &["init", ".", "--agent-id", FOUNDER]);
    assert!(stdout(&first).contains(hint), "{}", describe(&first));
    // `--json` says what each run wrote: the first everything, the second nothing.
    let written = |what: &str| {
        let setup = polisd_in(tmp.path(), &["git-setup", ".", "--json"]);
        assert_eq!(setup.status.code(), Some(0), "{}", describe(&setup));
        let v: serde_json::Value = serde_json::from_slice(&setup.stdout).unwrap();
        (v["driver_written"].clone(), v[what].clone())
    };
    let yes = serde_json::Value::Bool(true);
    let no = serde_json::Value::Bool(false);
    assert_eq!(written("gitattributes_written"), (yes.clone(), yes));
    assert_eq!(written("gitattributes_written"), (no.clone(), no));
    let join = polisd_in(tmp.path(), &["init", ".", "--agent-id", "codex-joiner-two"]);
    assert_eq!(join.status.code(), Some(0), "{}", describe(&join));
    assert!(!stdout(&join).contains(hint), "{}", describe(&join));
}

/// `polisd register` under a file-size limit of `limit` bytes (EFBIG, as ENOSPC on a full
/// disk; SIGXFSZ ignored, as a shell's `ulimit -f` with the signal ignored leaves it).
fn register_with_fsize_limit(p: &TestPolis, id: &str, limit: u64) -> std::process::Output {
    use std::os::unix::process::CommandExt;
    let mut cmd = std::process::Command::new(crate::harness::BIN);
    cmd.args(["register", id, "--vendor", "openai", "--model", "gpt-5"])
        .args(["--tags", "rust:3"])
        .env("POLISD_STATE_DIR", &p.state_dir)
        .current_dir(&p.root);
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            let lim = libc::rlimit {
                rlim_cur: limit,
                rlim_max: libc::RLIM_INFINITY,
            };
            if libc::setrlimit(libc::RLIMIT_FSIZE, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    cmd.output().unwrap()
}

/// A registration the disk refuses, at its first file or at its last write (the chronicle
/// line), leaves no citizen folder behind: before, an empty or half-filled
/// `citizens/<id>/` stayed, drew P015 warnings, and the same command, once space returned,
/// was refused with "already taken".
#[test]
fn register_refused_by_a_full_disk_leaves_no_folder_and_works_once_space_returns() {
    let p = TestPolis::init(FOUNDER);
    // Pad the chronicle past the limit below, so that its append fails after the card, the
    // status, the inbox and the journal (each far smaller) were created.
    let pad: String = (0..40)
        .map(|i| {
            crate::harness::chronicle_line(FOUNDER, "blocked on review", "-", &format!("pad {i}"))
        })
        .collect();
    p.append("chronicle.md", &pad);
    let before = tree(&p.root);
    let chronicle = p.read("chronicle.md");
    for limit in [16, 2048] {
        let chronicle_len = p.read("chronicle.md").len() as u64;
        assert!(chronicle_len > limit, "{chronicle_len}");
        let out = register_with_fsize_limit(&p, "codex-agent-2", limit);
        assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("File too large")
                && String::from_utf8_lossy(&out.stderr).contains("raise it, then run it again"),
            "{}",
            describe(&out)
        );
        assert_eq!(
            tree(&p.root),
            before,
            "limit {limit}: the refusal wrote nothing"
        );
        assert_eq!(p.read("chronicle.md"), chronicle);
    }
    let out = register_with_fsize_limit(&p, "codex-agent-2", libc::RLIM_INFINITY);
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    assert!(p.exists("citizens/codex-agent-2/journal.md"));
}

/// A project folder whose name holds a line break (or a control character) gets a polis named
/// on one line: the name is polisd's default, not the user's `--project-name`, which the
/// refusal used to blame.
#[test]
fn init_in_a_folder_named_with_a_line_break_names_the_project_on_one_line() {
    let tmp = tempfile::tempdir().unwrap();
    let project = tmp.path().join("two\nlines\n here");
    std::fs::create_dir(&project).unwrap();
    let out = polisd_in(
        tmp.path(),
        &["init", project.to_str().unwrap(), "--agent-id", FOUNDER],
    );
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    let index = std::fs::read_to_string(project.join("_polis/index.md")).unwrap();
    assert!(index.contains("project_name: 'two lines here'"), "{index}");
}
