//! A command refused with `--json` says so as JSON on standard output
//! (`{"ok": false, "error": …}`), the one line on stderr, the exit code (1 refused, 2 a value
//! that can never be right) and nothing written, whichever command it is: an agent parses the
//! output of every command the same way.

use super::{describe, json};
use crate::harness::{inside_git, tree, TestPolis};
use std::process::Output;

const FOUNDER: &str = "claude-founder-one";

/// `out` is a refusal with `code`: one line on stderr, `{"ok": false, "error"}` on stdout
/// naming the same thing.
#[track_caller]
fn refused_as_json(out: &Output, code: i32, naming: &str) {
    assert_eq!(out.status.code(), Some(code), "{}", describe(out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.trim_end().lines().count(), 1, "{}", describe(out));
    assert!(stderr.contains(naming), "{}", describe(out));
    let v = json(out);
    assert_eq!(v["ok"], false, "{v}");
    let error = v["error"]
        .as_str()
        .unwrap_or_else(|| panic!("no error: {v}"));
    assert!(error.contains(naming), "{v}");
}

#[test]
fn a_refused_command_with_json_answers_with_json_and_writes_nothing() {
    let p = TestPolis::init(FOUNDER);
    let outside = p.dir.path().join("report.md");
    let inside = p.root.join("report.md");
    let before = tree(&p);
    let cases: Vec<(Vec<&str>, i32, &str)> = vec![
        (
            vec!["route", "no-such-contract", "--json"],
            1,
            "no-such-contract",
        ),
        (
            vec!["report", "--out", inside.to_str().unwrap(), "--json"],
            1,
            "inside the polis",
        ),
        (
            vec![
                "hooks",
                "install",
                "--claude",
                "--bin",
                "/no/such/polisd",
                "--json",
            ],
            1,
            "/no/such/polisd",
        ),
        (
            vec!["route", "x-contract", "--policy", "bogus", "--json"],
            2,
            "bogus",
        ),
        (
            vec![
                "inbox",
                "archive",
                "--as",
                FOUNDER,
                "--older-than",
                "soon",
                "--json",
            ],
            2,
            "soon",
        ),
        (vec!["bench", "routing", "--seeds", "x", "--json"], 2, "`x`"),
    ];
    for (args, code, naming) in &cases {
        refused_as_json(&p.polisd(args), *code, naming);
    }
    if !inside_git(&p.root) {
        refused_as_json(&p.polisd(&["git-setup", "--json"]), 1, "git init");
    }
    assert_eq!(tree(&p), before, "a refusal wrote under _polis/");
    assert!(!outside.exists());
}

/// A value that can never be right (an id that could become a path, a system identity, a
/// link out of `_polis/`, a control character) is a usage error whichever check finds it: with
/// `--json` it answers `{"ok": false, "error"}` as a line break in a title does, not an empty
/// standard output.
#[test]
fn a_value_that_can_never_be_right_answers_json_when_asked() {
    let p = TestPolis::init(FOUNDER);
    let before = tree(&p);
    let cases: [(&[&str], &str); 5] = [
        (&["contract", "claim", "../x", "--as", FOUNDER], "../x"),
        (
            &["contract", "claim", "some-work", "--as", "polis-daemon"],
            "polis-daemon",
        ),
        (
            &[
                "log",
                "noted progress",
                "--as",
                FOUNDER,
                "--link",
                "/etc/passwd",
            ],
            "/etc/passwd",
        ),
        (
            &["contract", "open", "--title", "ring\u{7}", "--as", FOUNDER],
            "U+0007",
        ),
        (
            &["contract", "open", "--title", "a\nb", "--as", FOUNDER],
            "line break",
        ),
    ];
    for (args, naming) in cases {
        let mut args = args.to_vec();
        args.push("--json");
        let out = p.polisd(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", describe(&out));
        let v = json(&out);
        assert_eq!(v["ok"], false, "{args:?}: {v}");
        let error = v["error"].as_str().unwrap_or_default();
        assert!(error.contains(naming), "{args:?}: {v}");
    }
    // Without --json, standard output stays empty.
    let out = p.polisd(&["contract", "claim", "../x", "--as", FOUNDER]);
    assert_eq!(out.status.code(), Some(2), "{}", describe(&out));
    assert!(out.stdout.is_empty(), "{}", describe(&out));
    assert_eq!(tree(&p), before, "a refusal wrote under _polis/");
}

/// A refusal's cause is said once: the errors of polisd's writer and state folder quote the
/// system's error in their own message, and the line printed for them does not repeat it.
#[test]
fn a_refusal_says_its_cause_once() {
    let p = TestPolis::init(FOUNDER);
    let blocked = tempfile::tempdir().unwrap();
    std::fs::write(blocked.path().join("file"), "").unwrap();
    let before = tree(&p);
    let out = std::process::Command::new(crate::harness::BIN)
        .args(["inbox", "archive", "--as", FOUNDER, "--json"])
        .env("POLISD_STATE_DIR", blocked.path().join("file/state"))
        .current_dir(&p.root)
        .output()
        .unwrap();
    refused_as_json(&out, 1, "Not a directory");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        stderr.matches("Not a directory").count(),
        1,
        "{}",
        describe(&out)
    );
    assert_eq!(
        json(&out)["error"]
            .as_str()
            .unwrap_or_default()
            .matches("Not a directory")
            .count(),
        1,
        "{}",
        describe(&out)
    );
    assert_eq!(tree(&p), before, "a refusal wrote under _polis/");
}

/// A contract file polisd cannot read (a symbolic link, a file that is not UTF-8) is named as
/// such by `route` and `council start`, as `contract show` names it, not called missing
/// while `polisd check` reports the file.
#[test]
fn route_and_council_name_a_contract_file_they_cannot_read() {
    let p = TestPolis::init(FOUNDER);
    std::os::unix::fs::symlink("/etc/passwd", p.path("contracts/open/linked.md")).unwrap();
    std::fs::write(
        p.path("contracts/open/garbled.md"),
        b"---\ncontract_id: garbled\n---\n\xff\xfe",
    )
    .unwrap();
    let before = tree(&p);
    for (id, why) in [("linked", "symbolic link"), ("garbled", "UTF-8")] {
        for args in [
            vec!["route", id, "--json"],
            vec!["council", "start", id, "--json"],
        ] {
            let out = p.polisd(&args);
            refused_as_json(&out, 1, why);
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(
                stderr.contains(&format!("contracts/open/{id}.md"))
                    && !stderr.contains("no contract"),
                "{args:?}: {}",
                describe(&out)
            );
        }
    }
    assert!(tree(&p) == before, "a refusal wrote under _polis/");
}

/// `report --out` never writes into the polis by another name: a symbolic link or a hard
/// link to one of its files is refused like a path inside it, and the file is left as it was.
#[test]
fn report_out_through_a_link_into_the_polis_is_refused() {
    let p = TestPolis::init(FOUNDER);
    let project = p.root.parent().unwrap();
    let linked = project.join("report-link.md");
    std::os::unix::fs::symlink(p.path("chronicle.md"), &linked).unwrap();
    let hard = project.join("report-hard.md");
    std::fs::hard_link(p.path("index.md"), &hard).unwrap();
    // A link to a file not there yet would create it.
    let dangling = project.join("report-new.md");
    std::os::unix::fs::symlink(p.path("made-by-report.md"), &dangling).unwrap();
    let before = tree(&p);
    for out in [&linked, &hard, &dangling] {
        let answer = p.polisd(&["report", "--out", out.to_str().unwrap(), "--json"]);
        refused_as_json(&answer, 1, "the polis");
    }
    assert!(tree(&p) == before, "a report was written into the polis");
}

/// A `_polis/` folder closed to the user is said to be unreadable, not missing: "create one
/// with `polisd init`" would send an agent to found a second polis.
#[test]
fn a_polis_folder_the_user_may_not_read_is_named_not_called_missing() {
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::process::CommandExt;
    let p = TestPolis::init(FOUNDER);
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let bin = crate::harness::bin_for_others(p.dir.path());
    let project = p.root.parent().unwrap();
    for dir in [p.dir.path(), project] {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    std::fs::set_permissions(&p.root, std::fs::Permissions::from_mode(0o000)).unwrap();
    let run = |args: &[&str]| {
        let mut cmd = std::process::Command::new(&bin);
        cmd.args(args)
            .env("POLISD_STATE_DIR", p.dir.path().join("state-of-another"))
            .current_dir(project);
        if root {
            cmd.uid(65534).gid(65534);
        }
        cmd.output().unwrap()
    };
    let found = run(&["status", "--json"]);
    let given = run(&["status", project.to_str().unwrap(), "--json"]);
    std::fs::set_permissions(&p.root, std::fs::Permissions::from_mode(0o755)).unwrap();
    for out in [&found, &given] {
        refused_as_json(out, 2, "cannot be read");
        assert!(
            !String::from_utf8_lossy(&out.stderr).contains("polisd init"),
            "{}",
            describe(out)
        );
    }
}

/// `report --json` describes the file `--out` wrote; without `--out` the report itself is the
/// output, so the flag alone is a usage error rather than a promise of JSON it cannot keep.
#[test]
fn report_json_without_out_is_a_usage_error() {
    let p = TestPolis::init(FOUNDER);
    let out = p.polisd(&["report", "--json"]);
    assert_eq!(out.status.code(), Some(2), "{}", describe(&out));
    assert!(out.stdout.is_empty(), "{}", describe(&out));
}

/// An id no file could be named after is refused as such (a usage error), with the id cut
/// short in the message: a 100 KB argument is not echoed back whole.
#[test]
fn an_id_too_long_for_a_file_name_is_a_usage_error_quoted_short() {
    let p = TestPolis::init(FOUNDER);
    let long = "a".repeat(100_000);
    for args in [
        vec!["contract", "show", &long, "--json"],
        vec!["contract", "claim", &long, "--as", FOUNDER, "--json"],
    ] {
        let out = p.polisd(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", describe(&out));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.len() < 1_000,
            "{args:?}: {} bytes on stderr",
            stderr.len()
        );
        assert!(
            stderr.contains("too long for a file name"),
            "{args:?}: {stderr}"
        );
    }
}

/// `polisd log` writes one event on one line: a runaway value (a whole file passed as the
/// note, the author or the link) is a usage error quoted short, and nothing reaches
/// `chronicle.md`; values of an ordinary size still go through.
#[test]
fn a_log_line_with_a_runaway_value_is_refused_quoted_short_and_writes_nothing() {
    let p = TestPolis::init(FOUNDER);
    let long = "a".repeat(100_000);
    let before = tree(&p);
    for (args, naming) in [
        (vec!["log", "noted progress", "--as", &long], "the author"),
        (vec!["log", &long, "--as", FOUNDER], "the verb"),
        (
            vec!["log", "noted progress", "--as", FOUNDER, "--note", &long],
            "the note",
        ),
        (
            vec!["log", "noted progress", "--as", FOUNDER, "--link", &long],
            "the link",
        ),
        (
            vec![
                "amendment",
                "vote",
                &long,
                "--as",
                FOUNDER,
                "--vote",
                "agree",
            ],
            "",
        ),
    ] {
        let mut args = args.clone();
        args.push("--json");
        let out = p.polisd(&args);
        // Quoted by their start: a failure here must not print the 100 KB either.
        let stderr = String::from_utf8_lossy(&out.stderr);
        let start: String = stderr.chars().take(300).collect();
        assert_ne!(out.status.code(), Some(0), "{start}");
        assert!(
            stderr.len() < 1_000 && out.stdout.len() < 1_000 && stderr.contains(naming),
            "{} bytes on stderr, {} on stdout: {start}",
            stderr.len(),
            out.stdout.len()
        );
    }
    assert!(tree(&p) == before, "a refused line wrote something");
    let note = "b".repeat(2_000);
    let out = p.polisd(&["log", "noted progress", "--as", FOUNDER, "--note", &note]);
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
}

/// Whatever command refuses a value of any length (an id, a state, a path), it quotes it by
/// its start, on stderr and in the `--json` answer: an agent that passed a whole file by
/// mistake gets one readable line back.
#[test]
fn every_refusal_quotes_a_runaway_value_short() {
    let p = TestPolis::init(FOUNDER);
    let long = "a".repeat(100_000);
    let cases: Vec<Vec<&str>> = vec![
        vec!["contract", "claim", "some-work", "--as", &long],
        vec!["contract", "list", "--state", &long],
        vec!["reserve", "src/x.rs", "--as", &long],
        vec!["release", "--as", &long],
        vec!["notices", "--as", &long],
        vec!["prime", "--as", &long],
        vec![
            "register", &long, "--vendor", "v", "--model", "m", "--tags", "a:3",
        ],
        vec!["review", &long, "--as", FOUNDER, "--decision", "signed_off"],
        vec![
            "lesson", "file", "--as", &long, "--tags", "a", "--impact", "3", "text",
        ],
        vec![
            "amendment",
            "vote",
            "2026-01-01-x",
            "--as",
            &long,
            "--vote",
            "agree",
        ],
        vec!["inbox", "archive", "--as", &long],
    ];
    for args in cases {
        let mut args = args.clone();
        args.push("--json");
        let out = p.polisd(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        let start: String = stderr.chars().take(200).collect();
        assert_ne!(
            out.status.code(),
            Some(0),
            "{} {}: {start}",
            args[0],
            args[1]
        );
        assert!(
            stderr.len() < 1_000 && out.stdout.len() < 1_000,
            "{} {}: {} bytes on stderr, {} on stdout: {start}",
            args[0],
            args[1],
            stderr.len(),
            out.stdout.len()
        );
    }
}

/// `--body` takes a file. An agent that passes the text itself is told so, and how to give
/// text without a file (`-`, standard input), not only that no such file exists.
#[test]
fn a_body_given_as_text_is_refused_with_how_to_pass_it() {
    let p = TestPolis::init(FOUNDER);
    let before = tree(&p);
    let out = p.polisd(&[
        "amendment",
        "propose",
        "--title",
        "Shorter notes",
        "--as",
        FOUNDER,
        "--body",
        "Keep chronicle notes under 200 characters.",
        "--json",
    ]);
    refused_as_json(&out, 2, "--body takes the path of a markdown file");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("pass `-` as --body"), "{}", describe(&out));
    assert!(tree(&p) == before, "a refused proposal wrote");
}

/// An unknown `--as` is told how to register; the command it is given, its placeholders
/// filled in, is one `polisd register` accepts (its tags carry ratings).
#[test]
fn the_register_command_an_unknown_citizen_is_given_works() {
    // The primer's refusal, and an acting command's (opening a contract), each for its own
    // newcomer.
    for (newcomer, refused) in [
        (
            "codex-newcomer-1",
            &["prime", "--as", "codex-newcomer-1"][..],
        ),
        (
            "codex-newcomer-2",
            &[
                "contract",
                "open",
                "--title",
                "T",
                "--as",
                "codex-newcomer-2",
            ],
        ),
    ] {
        let p = TestPolis::init(FOUNDER);
        let out = p.polisd(refused);
        assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
        let stderr = String::from_utf8_lossy(&out.stderr);
        let command = stderr
            .split("`polisd register ")
            .nth(1)
            .and_then(|rest| rest.split('`').next())
            .unwrap_or_else(|| panic!("no register command: {}", describe(&out)));
        assert!(command.starts_with(newcomer), "{command}");
        let args: Vec<String> = command
            .replace("<vendor>", "openai")
            .replace("<model>", "gpt-5")
            .replace("<tag:rating,…>", "python:3")
            .split(' ')
            .map(str::to_string)
            .collect();
        let mut full = vec!["register"];
        full.extend(args.iter().map(String::as_str));
        let out = p.polisd(&full);
        assert_eq!(out.status.code(), Some(0), "{full:?}\n{}", describe(&out));
    }
}
