//! Integrity at the edges: what a hostile or unlucky caller passes never panics, never forges
//! a system line, never leaves `_polis/`, and never makes an agent's file worse. Each test is
//! named after the fault it pins.

mod harness;

use harness::{describe, ok, tree, TestPolis};
use std::process::Output;

const FOUNDER: &str = "claude-founder-one";

#[track_caller]
fn usage(out: Output) -> String {
    assert_eq!(out.status.code(), Some(2), "{}", describe(&out));
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn claimed_contract(p: &TestPolis, id: &str, title: &str) {
    p.save(
        &format!("contracts/open/{id}.md"),
        &format!(
            "---\ncontract_id: {id}\ntitle: \"{title}\"\nopened_by: {FOUNDER}\nopened_at: 2026-01-01 10:00:00\nowner: {FOUNDER}\nstatus: claimed\nstakes: low\nrequired_tags: [python]\n---\n\n## Intent\n\nx\n"
        ),
    );
}

#[test]
fn settle_and_abandon_of_a_path_like_id_is_a_usage_error_not_a_panic() {
    let p = TestPolis::init(FOUNDER);
    claimed_contract(&p, "real", "Real");
    let before = tree(&p);
    for id in [
        "../x",
        "../../etc/passwd",
        "/etc/passwd",
        "a/b",
        "x\0y",
        "..",
        "",
    ] {
        if id.contains('\0') {
            continue; // a NUL cannot be passed in argv; the MCP test sends one
        }
        for args in [
            vec!["contract", "settle", id, "--quality", "3"],
            vec!["contract", "abandon", id],
            vec!["contract", "claim", id, "--as", FOUNDER],
            vec!["contract", "show", id],
            vec!["review", id, "--as", FOUNDER, "--decision", "signed_off"],
        ] {
            let err = usage(p.polisd(&args));
            assert!(!err.contains("panicked"), "{err}");
        }
    }
    assert_eq!(tree(&p), before, "nothing written");
}

#[test]
fn system_identities_cannot_act_and_a_link_cannot_leave_the_polis() {
    let p = TestPolis::init(FOUNDER);
    claimed_contract(&p, "real", "Real");
    let before = tree(&p);
    for system in ["polis-daemon", "polis-reflector", "polis-tally"] {
        for args in [
            vec!["log", "--as", system, "did things"],
            vec!["contract", "claim", "real", "--as", system, "--force"],
            vec![
                "contract",
                "settle",
                "real",
                "--quality",
                "3",
                "--by",
                system,
                "--no-lesson",
                "refused before the lesson matters",
            ],
            vec!["contract", "abandon", "real", "--as", system],
            vec!["contract", "open", "--title", "x", "--by", system],
            vec!["amendment", "propose", "--title", "x", "--by", system],
            vec!["reserve", "src/", "--as", system],
            vec!["notices", "--as", system],
            vec!["inbox", "archive", "--as", system],
            vec![
                "lesson", "file", "--as", system, "--tags", "x", "--impact", "3", "text",
            ],
        ] {
            let err = usage(p.polisd(&args));
            assert!(err.contains("system identity"), "{args:?}: {err}");
        }
    }
    for link in [
        "../../../etc/passwd",
        "/etc/passwd",
        "[[../x]]",
        "contracts/../../x",
    ] {
        let err = usage(p.polisd(&["log", "--as", FOUNDER, "did things", "--link", link]));
        assert!(err.contains("leaves _polis/"), "{err}");
    }
    assert_eq!(tree(&p), before, "nothing written");
}

#[test]
fn a_title_too_long_for_a_file_name_is_a_usage_error_that_says_to_shorten_it() {
    // The id is the title's slug and the file is named after it: past the file system's 255
    // bytes for a name, the create fails. The reference crashes there; polisd says what to do.
    let p = TestPolis::init(FOUNDER);
    let before = tree(&p);
    let title = "word ".repeat(60);
    for args in [
        vec!["contract", "open", "--title", &title, "--by", FOUNDER],
        vec!["amendment", "propose", "--title", &title, "--by", FOUNDER],
    ] {
        let err = usage(p.polisd(&args));
        assert!(err.contains("shorter title"), "{args:?}: {err}");
        assert!(!err.contains("os error"), "{args:?}: {err}");
    }
    assert_eq!(tree(&p), before, "nothing written");
    // A contract's id also leaves room for its reviews' `<YYYY-MM-DD-HHMM>-` stamp: an id of
    // 249 bytes names its own file but no review's (the reference files it anyway).
    let no_review = "word ".repeat(50);
    let err = usage(p.polisd(&["contract", "open", "--title", &no_review, "--by", FOUNDER]));
    assert!(err.contains("shorter title"), "{err}");
    let fits = "word ".repeat(47);
    ok(p.polisd(&["contract", "open", "--title", &fits, "--by", FOUNDER]));
}

#[test]
fn a_chronicle_replaced_by_a_link_refuses_every_transition_before_it_writes() {
    // Every transition ends with its chronicle line. With `chronicle.md` a link (polisd never
    // writes through one), the command must refuse before its first write, not leave a claim,
    // a settlement or a vote on disk with no line recording it.
    let p = TestPolis::init(FOUNDER);
    p.citizen("codex-second-one", "openai", &[("python", 3)], "medium");
    claimed_contract(&p, "mine", "Mine");
    ok(p.polisd(&[
        "contract", "open", "--title", "Free", "--by", FOUNDER, "--tags", "python",
    ]));
    let out = ok(p.polisd(&[
        "amendment",
        "propose",
        "--title",
        "A rule",
        "--by",
        FOUNDER,
        "--json",
    ]));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let aid = v["amendment_id"].as_str().unwrap().to_string();
    let outside = p.dir.path().join("outside-chronicle.md");
    std::fs::copy(p.path("chronicle.md"), &outside).unwrap();
    std::fs::remove_file(p.path("chronicle.md")).unwrap();
    std::os::unix::fs::symlink(&outside, p.path("chronicle.md")).unwrap();
    let before = tree(&p);
    let cases: Vec<Vec<&str>> = vec![
        vec!["contract", "open", "--title", "New", "--by", FOUNDER],
        vec!["contract", "claim", "free", "--as", "codex-second-one"],
        vec![
            "contract",
            "settle",
            "mine",
            "--quality",
            "4",
            "--no-lesson",
            "x",
        ],
        vec!["contract", "abandon", "mine"],
        vec![
            "review",
            "mine",
            "--as",
            "codex-second-one",
            "--decision",
            "signed_off",
        ],
        vec![
            "amendment",
            "propose",
            "--title",
            "Another",
            "--by",
            FOUNDER,
        ],
        vec![
            "amendment",
            "vote",
            &aid,
            "--as",
            "codex-second-one",
            "--vote",
            "agree",
        ],
        vec![
            "lesson",
            "file",
            "--as",
            FOUNDER,
            "--tags",
            "python",
            "--impact",
            "3",
            "A lesson.",
        ],
        vec![
            "register",
            "gemini-third-one",
            "--vendor",
            "google",
            "--model",
            "m",
            "--tags",
            "python:3",
        ],
    ];
    for args in &cases {
        let out = p.polisd(args);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {}", describe(&out));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("symbolic link"), "{args:?}: {err}");
        assert!(
            tree(&p) == before,
            "{args:?} wrote before its chronicle line was refused"
        );
    }
}

#[test]
fn control_characters_are_refused_in_agent_text_and_escaped_when_printed() {
    let p = TestPolis::init(FOUNDER);
    let before = tree(&p);
    for bad in [
        "\u{1b}[2J",
        "\u{7}",
        "\u{7f}",
        "\u{85}",
        "\u{202e}evil",
        "a\rb",
    ] {
        for args in [
            vec!["log", "--as", FOUNDER, "did things", "--note", bad],
            vec!["contract", "open", "--title", bad, "--by", FOUNDER],
            vec!["log", "--as", FOUNDER, bad],
        ] {
            let err = usage(p.polisd(&args));
            assert!(err.contains("control character"), "{err}");
        }
    }
    assert_eq!(tree(&p), before, "nothing written");
    // A title written into a file by hand reaches the terminal escaped, in text and in JSON.
    claimed_contract(&p, "painted", "a\u{202e}red\u{2066}");
    let listed = ok(p.polisd(&["contract", "list"]));
    let shown = String::from_utf8(listed.stdout).unwrap();
    assert!(
        !shown.contains('\u{202e}') && !shown.contains('\u{2066}'),
        "{shown:?}"
    );
    assert!(shown.contains("a\\u202ered\\u2066"), "{shown}");
    let json = ok(p.polisd(&["contract", "show", "painted", "--json"]));
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert!(v["text"].as_str().unwrap().contains("a\u{202e}red"));
    assert!(!String::from_utf8_lossy(&json.stdout).contains('\u{202e}'));
    // A C0 or C1 control in a frontmatter is YAML no reader loads (PyYAML refuses it): `check`
    // names it, with the file and line, and prints it escaped.
    claimed_contract(&p, "shouting", "a\u{1b}[31mred\u{7}");
    let checked = p.polisd(&["check"]);
    assert_eq!(checked.status.code(), Some(1), "{}", describe(&checked));
    let said = describe(&checked);
    assert!(
        said.contains("contracts/open/shouting.md") && said.contains("U+001B"),
        "{said}"
    );
    assert!(
        !said.contains('\u{1b}') && !said.contains('\u{7}'),
        "{said:?}"
    );
}

#[test]
fn notices_mark_read_never_prepends_a_second_frontmatter_to_a_broken_status() {
    let p = TestPolis::init(FOUNDER);
    let status = format!("citizens/{FOUNDER}/status.md");
    let broken = format!("---\nagent_id: {FOUNDER}\nstate: working\n\n# Status\n\nnotes\n");
    p.save(&status, &broken);
    p.append(
        &format!("citizens/{FOUNDER}/inbox.md"),
        "\n### 2026-01-01 10:00 from polis-daemon\n\nSomething happened.\n\n<!-- polisd:contract-settled:0123456789abcdef -->\n\n---\n",
    );
    let out = p.polisd(&["notices", "--as", FOUNDER, "--mark-read"]);
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("{status}:1:")) && err.contains("add a line `---`"),
        "file, line and fix: {err}"
    );
    assert_eq!(
        p.read(&status),
        broken,
        "the agent's file is left as it was"
    );
    // A session start records nothing in it either, and still shows the primer.
    let primed = ok(p.polisd(&["prime", "--as", FOUNDER]));
    assert!(String::from_utf8_lossy(&primed.stderr).contains("add a line `---`"));
    assert!(!primed.stdout.is_empty());
    assert_eq!(p.read(&status), broken, "prime left it as it was");
}

#[test]
fn prime_never_prepends_a_second_frontmatter_to_a_broken_status_and_still_primes() {
    let p = TestPolis::init(FOUNDER);
    let status = format!("citizens/{FOUNDER}/status.md");
    let broken = format!("---\nagent_id: {FOUNDER}\nstate: working\n\n# Status\n\nnotes\n");
    p.save(&status, &broken);
    ok(p.polisd(&[
        "log",
        "--as",
        FOUNDER,
        "started work",
        "--note",
        "an event to catch up on",
    ]));
    let out = ok(p.polisd(&["prime", "--as", FOUNDER]));
    assert!(!out.stdout.is_empty(), "the session still gets its primer");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("{status}:1:")) && err.contains("add a line `---`"),
        "file, line and fix: {err}"
    );
    assert_eq!(
        p.read(&status),
        broken,
        "the agent's file is left as it was"
    );
}

#[test]
fn prime_with_an_inbox_over_16_mib_delivers_the_newest_notices() {
    let p = TestPolis::init(FOUNDER);
    let inbox = format!("citizens/{FOUNDER}/inbox.md");
    let mut text = String::from("---\nfile_type: inbox\n---\n");
    let old = "\n### 2026-01-01 10:00 from polis-daemon\n\nAn old notice, padded out. ".to_string()
        + &"pad ".repeat(2_000)
        + "\n\n---\n";
    while text.len() < 17 * 1024 * 1024 {
        text.push_str(&old);
    }
    text.push_str("\n### 2026-01-02 10:00 from polis-daemon\n\nThe newest notice of all.\n\n<!-- polisd:contract-settled:00000000000000ff -->\n\n---\n");
    p.save(&inbox, &text);
    let out = ok(p.polisd(&["prime", "--as", FOUNDER, "--no-mark-read"]));
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(shown.contains("The newest notice of all."), "{shown:.2000}");
}

#[test]
fn inbox_archive_run_once_waits_for_a_writer_instead_of_promising_a_later_look() {
    let p = TestPolis::init(FOUNDER);
    let id = "00000000000000aa";
    p.save(
        &format!("citizens/{FOUNDER}/status.md"),
        &format!("---\nagent_id: {FOUNDER}\nstate: idle\nnotices_read: ['{id}']\n---\n"),
    );
    let inbox = format!("citizens/{FOUNDER}/inbox.md");
    p.append(
        &inbox,
        &format!("\n### 2026-01-01 10:00 from polis-daemon\n\nRead long ago.\n\n<!-- polisd:contract-settled:{id} -->\n\n---\n"),
    );
    // Another program holds the inbox open for writing when the command starts, and lets go
    // a moment later: the command has no later look, so it must wait for it.
    let held = std::fs::OpenOptions::new()
        .append(true)
        .open(p.path(&inbox))
        .unwrap();
    let child = p.spawn(&[
        "inbox",
        "archive",
        "--as",
        FOUNDER,
        "--older-than",
        "0",
        "--json",
    ]);
    std::thread::sleep(std::time::Duration::from_millis(700));
    drop(held);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    assert!(
        !describe(&out).contains("looks again"),
        "{}",
        describe(&out)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["moved"], 1, "{v}");
    assert!(p
        .read(&format!("citizens/{FOUNDER}/inbox-archive.md"))
        .contains(id));
}

#[test]
fn a_held_notice_is_delivered_soon_after_its_inbox_is_writable_again() {
    let p = TestPolis::init(FOUNDER);
    let daemon = p.start_daemon();
    let inbox = format!("citizens/{FOUNDER}/inbox.md");
    // A second name for the inbox: polisd writes no file another name shares, so the notice
    // is held. Removing that name changes nothing in _polis/ that a watcher would report.
    let other = p.dir.path().join("inbox-elsewhere.md");
    std::fs::hard_link(p.path(&inbox), &other).unwrap();
    p.append(
        "chronicle.md",
        &format!("- 2026-13-45 10:00 | {FOUNDER} | did things | - | a bad stamp\n"),
    );
    harness::wait_until("the notice held", harness::DEADLINE, || {
        daemon.log_text().contains("not notifying")
    });
    assert!(!p.read(&inbox).contains("chronicle-finding"));
    std::fs::remove_file(&other).unwrap();
    // Tried again by itself within 2 s (backing off); without that, only the next event or
    // the safety rescan, a minute later, would deliver it.
    harness::wait_until(
        "the held notice delivered",
        std::time::Duration::from_secs(10),
        || p.read(&inbox).contains("chronicle-finding"),
    );
}

/// `chattr` on `path`, as root or through passwordless sudo (as `scripts/test` requires).
fn chattr(flag: &str, path: &std::path::Path) -> Result<(), String> {
    // SAFETY: geteuid has no preconditions and cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    let mut cmd = if root {
        std::process::Command::new("chattr")
    } else {
        let mut sudo = std::process::Command::new("sudo");
        sudo.args(["-n", "chattr"]);
        sudo
    };
    let out = cmd
        .arg(flag)
        .arg(path)
        .output()
        .map_err(|e| format!("chattr: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

/// Makes a file mutable again when the test ends, pass or fail: an immutable file left behind
/// could not be removed with its temporary folder.
struct Immutable(std::path::PathBuf);

impl Immutable {
    fn set(path: std::path::PathBuf) -> Immutable {
        if let Err(e) = chattr("+i", &path) {
            panic!(
                "this test needs `chattr +i` (root or passwordless sudo, e2fsprogs, and a \
                 filesystem with the immutable flag, such as ext4) on {}: {e}",
                path.display()
            );
        }
        Immutable(path)
    }
}

impl Drop for Immutable {
    fn drop(&mut self) {
        let _ = chattr("-i", &self.0);
    }
}

/// An inbox made immutable (`chattr +i`), then writable again: the held notice goes out within
/// about 2 s of `chattr -i`, by the daemon's own retry (clearing the flag changes no bytes, so
/// no file event would bring it).
#[test]
fn a_notice_held_by_an_immutable_inbox_is_delivered_soon_after_chattr_minus_i() {
    let p = TestPolis::init(FOUNDER);
    let daemon = p.start_daemon();
    let inbox = format!("citizens/{FOUNDER}/inbox.md");
    let flag = Immutable::set(p.path(&inbox));
    p.append(
        "chronicle.md",
        &format!("- 2026-13-45 10:00 | {FOUNDER} | did things | - | a bad stamp\n"),
    );
    harness::wait_until("the notice held", harness::DEADLINE, || {
        daemon
            .log_text()
            .contains("could not notify claude-founder-one yet")
    });
    assert!(!p.read(&inbox).contains("chronicle-finding"));
    drop(flag);
    harness::wait_until(
        "the held notice delivered",
        std::time::Duration::from_secs(5),
        || p.read(&inbox).contains("chronicle-finding"),
    );
    assert_eq!(
        p.read(&inbox)
            .matches("<!-- polisd:chronicle-finding:")
            .count(),
        1
    );
}

/// Commands that write through a writer (config, activity, service, demo) escape what files
/// hold as `say!` does: a config key spelled with ESC is quoted as `\u001b`, never raw.
#[test]
fn config_check_escapes_control_characters_from_the_file_it_reads() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("polisd.toml");
    std::fs::write(&config, "[watch]\n\"de\\u001b[2Jbounce\" = \"1s\"\n").unwrap();
    let out = std::process::Command::new(harness::BIN)
        .args(["config", "check"])
        .arg(&config)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    assert!(!out.stdout.contains(&0x1b), "a raw ESC: {}", describe(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("de\\u001b[2Jbounce"),
        "{}",
        describe(&out)
    );
}

/// Runs `args`, killing it if it has not ended within `within`: a hang is a failure, never a
/// test that waits forever.
fn run_within(p: &TestPolis, args: &[&str], within: std::time::Duration) -> Output {
    let mut child = p.spawn(args);
    let start = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > within {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!("`polisd {}` still ran after {within:?}", args.join(" "));
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

/// A record folder replaced by a link to a folder outside (`lessons/`, `guardrails/`,
/// `amendments/proposed/`): the replay check read `<id>`, `<id>-2`, `<id>-3`… until one was
/// free, and every one was unreadable, so the command spun forever holding its lock. Now it
/// ends with the writer's one-line refusal, and nothing is written outside.
#[test]
fn a_record_folder_that_is_a_link_refuses_instead_of_spinning() {
    let p = TestPolis::init(FOUNDER);
    let outside = p.dir.path().join("outside");
    for (folder, args) in [
        (
            "lessons",
            vec![
                "lesson",
                "file",
                "--as",
                FOUNDER,
                "--tags",
                "python",
                "--impact",
                "3",
                "retry twice",
            ],
        ),
        (
            "guardrails",
            vec![
                "guardrail",
                "add",
                "--tags",
                "python",
                "--text",
                "run the tests",
            ],
        ),
        (
            "amendments/proposed",
            vec![
                "amendment",
                "propose",
                "--as",
                FOUNDER,
                "--title",
                "Two reviewers",
            ],
        ),
    ] {
        let target = outside.join(folder);
        std::fs::create_dir_all(&target).unwrap();
        let path = p.path(folder);
        if path.exists() {
            std::fs::remove_dir_all(&path).unwrap();
        }
        std::os::unix::fs::symlink(&target, &path).unwrap();
        let before = tree(&p);
        let out = run_within(&p, &args, std::time::Duration::from_secs(20));
        assert_eq!(out.status.code(), Some(1), "{folder}: {}", describe(&out));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("link"), "{folder}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{folder}: {err}");
        assert!(tree(&p) == before, "{folder}: a refusal wrote");
        let written: Vec<_> = walk(&outside);
        assert!(written.is_empty(), "{folder}: wrote outside: {written:?}");
    }
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let path = e.unwrap().path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files
}
