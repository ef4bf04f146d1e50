//! The agents' commands (`contract`, `amendment`, `log`, `lesson`, `review`, `context`,
//! `guardrail`) run as the real binary on temporary polises: claims that cannot race, a settle
//! that is never in two folders, refusals that write nothing, and exit codes 0 / 1 / 2.

#[path = "../harness/mod.rs"]
mod harness;

mod amendments;
mod contracts;
mod one_line;
mod records;
mod settle_without_daemon;

use harness::{describe, ok, tree, TestPolis, BIN};
use std::process::{Command, Output, Stdio};

const FOUNDER: &str = "claude-founder-one";

#[track_caller]
fn refused(out: Output) -> String {
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(
        err.trim_end().lines().count(),
        1,
        "a refusal is one line: {err}"
    );
    err
}

fn lines_with(p: &TestPolis, verb: &str) -> usize {
    p.read("chronicle.md")
        .lines()
        .filter(|l| l.contains(&format!("| {verb} |")))
        .count()
}

/// A command that must be refused, saying `says`, with nothing written: what a replay of
/// a recorded command, or one that cannot count, answers.
#[track_caller]
fn refused_writing_nothing(p: &TestPolis, out: impl FnOnce() -> Output, says: &str) {
    let before = tree(p);
    let err = refused(out());
    assert!(err.contains(says), "{err}");
    assert!(tree(p) == before, "the refused command wrote: {err}");
}

/// The state a command killed between its record and its chronicle line leaves: the record,
/// and the chronicle without its `verb` lines (there must have been one).
fn drop_lines(p: &TestPolis, verb: &str) {
    let chronicle = p.read("chronicle.md");
    let kept: String = chronicle
        .split_inclusive('\n')
        .filter(|l| !l.contains(&format!("| {verb} |")))
        .collect();
    assert_ne!(kept, chronicle, "no `{verb}` line to drop");
    p.save("chronicle.md", &kept);
}

fn polis_with_contract() -> TestPolis {
    let p = TestPolis::init(FOUNDER);
    ok(p.polisd(&[
        "contract",
        "open",
        "--title",
        "Fix the login bug",
        "--by",
        FOUNDER,
        "--tags",
        "python",
    ]));
    p
}

#[test]
fn refused_log_line_writes_nothing_and_shows_a_corrected_example() {
    let p = TestPolis::init(FOUNDER);
    let before = tree(&p);
    let err = refused(p.polisd(&["log", "--as", "unknown-agent-x", "fixed the build"]));
    assert!(
        err.contains("C002") && err.contains("| <your-agent-id> | fixed the build |"),
        "{err}"
    );
    let err = refused(p.polisd(&["log", "--as", FOUNDER, "fixed | the build"]));
    assert!(
        err.contains("C001") && err.contains(&format!("| {FOUNDER} | fixed - the build | - | -`")),
        "{err}"
    );
    assert_eq!(tree(&p), before, "a refused line writes nothing");

    let out = ok(p.polisd(&[
        "log",
        "--as",
        FOUNDER,
        "fixed the build",
        "--note",
        "two\nlines",
        "--json",
    ]));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let line = v["line"].as_str().unwrap();
    assert!(
        line.ends_with(&format!("| {FOUNDER} | fixed the build | - | two lines")),
        "{line}"
    );
    assert!(p.read("chronicle.md").ends_with(&format!("{line}\n")));
}

#[test]
fn a_log_replayed_in_the_same_minute_writes_its_line_once() {
    // The same line twice is one event written twice, which `check` then reports (P024)
    // and asks a person to delete: a retried `log` must not make that mess itself.
    let p = TestPolis::init(FOUNDER);
    let log = [
        "log",
        "--as",
        FOUNDER,
        "blocked on review",
        "--note",
        "waiting",
    ];
    // Both runs inside one minute, or the second line is a later event, rightly written.
    harness::wait_until(
        "the first 50 seconds of a minute",
        std::time::Duration::from_secs(15),
        || chrono::Utc::now().timestamp() % 60 < 50,
    );
    ok(p.polisd(&log));
    refused_writing_nothing(&p, || p.polisd(&log), "already");
    assert_eq!(lines_with(&p, "blocked on review"), 1);
}

#[test]
fn a_logged_line_with_a_warning_is_written_and_the_warning_names_no_line_number() {
    let p = TestPolis::init(FOUNDER);
    let out = ok(p.polisd(&[
        "log",
        "--as",
        FOUNDER,
        "opened contract",
        "--link",
        "contracts/open/no-such-contract",
    ]));
    let stdout = String::from_utf8_lossy(&out.stdout);
    // The line was not in the file when it was checked, so there is no line number to give
    // (there used to be a made-up `chronicle.md:0:`), and "warning" is said once.
    assert!(
        stdout.contains("\n  chronicle.md: warning C006: `- "),
        "{stdout}"
    );
    assert!(!stdout.contains("chronicle.md:0"), "{stdout}");
    assert!(p
        .read("chronicle.md")
        .contains("| opened contract | [[contracts/open/no-such-contract]] | -\n"));
}

#[test]
fn refusals_exit_1_with_one_line_and_write_nothing() {
    let p = polis_with_contract();
    let before = tree(&p);
    let cases: &[&[&str]] = &[
        &["contract", "claim", "no-such-contract", "--as", FOUNDER],
        &[
            "contract",
            "claim",
            "fix-the-login-bug",
            "--as",
            "not-registered-x",
        ],
        &["contract", "settle", "fix-the-login-bug", "--quality", "7"],
        &[
            "contract",
            "settle",
            "fix-the-login-bug",
            "--quality",
            "3",
            "--no-lesson",
            "x",
        ],
        &[
            "contract",
            "open",
            "--title",
            "x",
            "--by",
            "not-registered-x",
        ],
        &[
            "amendment",
            "vote",
            "2026-01-01-nothing",
            "--as",
            FOUNDER,
            "--vote",
            "agree",
        ],
        &[
            "lesson", "file", "--as", FOUNDER, "--tags", "python", "--impact", "9", "text",
        ],
        &[
            "review",
            "no-such-contract",
            "--as",
            FOUNDER,
            "--decision",
            "signed_off",
        ],
    ];
    for args in cases {
        let err = refused(p.polisd(args));
        assert!(err.starts_with("polisd: "), "{args:?}: {err}");
    }
    // An id too long for a file name names no record: said as such, not as an OS error.
    let long = "a".repeat(300);
    let err = refused(p.polisd(&[
        "amendment",
        "vote",
        &long,
        "--as",
        FOUNDER,
        "--vote",
        "agree",
    ]));
    assert!(err.contains("no amendment"), "{err}");
    let out = p.polisd(&[
        "contract",
        "settle",
        "fix-the-login-bug",
        "--no-lesson",
        "x",
        "--quality",
        "3",
        "--json",
    ]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["ok"], false);
    assert!(
        v["error"].as_str().unwrap().contains("claim it first"),
        "{v}"
    );
    assert_eq!(tree(&p), before, "refusals wrote nothing");
    // Usage errors, clap's and a value that can never be right (a bad tag): exit 2.
    let out = p.polisd(&["contract", "claim", "fix-the-login-bug"]);
    assert_eq!(out.status.code(), Some(2), "{}", describe(&out));
    let out = p.polisd(&[
        "contract", "open", "--title", "x", "--by", FOUNDER, "--tags", "Bad Tag",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", describe(&out));
    assert_eq!(tree(&p), before, "usage errors wrote nothing");
}

/// The command line's refusals name its flags, one case per way an operation names an
/// argument (MCP names the same arguments by its tools' keys; see `mcp::tools`).
#[test]
fn refusals_name_the_command_line_flags() {
    let p = polis_with_contract();
    let before = tree(&p);
    let cases: &[(&[&str], &str)] = &[
        // An argument in the operation's own message.
        (
            &[
                "contract",
                "settle",
                "fix-the-login-bug",
                "--quality",
                "3",
                "--no-lesson",
                "x",
            ],
            "or pass --as <id>",
        ),
        // Three of them.
        (
            &[
                "contract",
                "settle",
                "fix-the-login-bug",
                "--quality",
                "3",
                "--as",
                FOUNDER,
            ],
            "pass --lesson \"<one paragraph>\" --impact N, or --no-lesson \"<why there is none>\"",
        ),
        // In the fix of an empty value.
        (
            &["contract", "open", "--title", " ", "--by", FOUNDER],
            "the title is empty; pass --title \"what needs doing\"",
        ),
        // A reservation's refusal.
        (
            &[
                "reserve",
                "src/",
                "--as",
                FOUNDER,
                "--contract",
                "no-such-contract",
            ],
            "or leave out --contract",
        ),
        // A session's refusal.
        (
            &["prime", "--as", "nobody-here-1"],
            "pass your own id with --as or POLIS_CITIZEN",
        ),
    ];
    for (args, flag) in cases {
        let err = refused(p.polisd(args));
        assert!(err.contains(flag), "{args:?}: {err}");
    }
    assert_eq!(tree(&p), before, "refusals wrote nothing");
}

#[test]
fn output_into_a_closed_pipe_ends_quietly_instead_of_panicking() {
    let p = polis_with_contract();
    // The reader is gone before the command starts, so its first print meets a closed pipe
    // every time (`polisd contract list | head -0`).
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    for args in [&["contract", "list"][..], &["status"][..], &["check"][..]] {
        let out = Command::new(BIN)
            .args(args)
            .env("POLISD_STATE_DIR", &p.state_dir)
            .current_dir(&p.root)
            .stdout(writer.try_clone().unwrap())
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !stderr.contains("panicked"),
            "polisd {args:?} panicked on a closed pipe: {stderr}"
        );
        use std::os::unix::process::ExitStatusExt as _;
        assert_eq!(
            out.status.signal(),
            Some(libc::SIGPIPE),
            "polisd {args:?} should end by SIGPIPE like any Unix tool: {:?}",
            out.status
        );
    }
}
