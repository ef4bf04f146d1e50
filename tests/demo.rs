//! `polisd demo` end to end: it plays its scene within its time and leaves a polis that
//! `polisd check` finds no errors in; `polisd service install --dry-run` from the real binary.

mod harness;

use harness::BIN;
use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The demo promises to finish in under 30 seconds; past that the test kills it and fails.
const DEMO_DEADLINE: Duration = Duration::from_secs(30);

#[test]
fn demo_plays_its_scene_in_time_and_leaves_a_polis_without_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let mut guard = harness::Killed::new(
        Command::new(BIN)
            .args(["demo", "--keep"])
            .env("TMPDIR", tmp.path())
            .env("POLISD_STATE_DIR", tmp.path().join("state"))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let child = guard.child();
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > DEMO_DEADLINE {
            let _ = child.kill();
            panic!("polisd demo did not finish within {DEMO_DEADLINE:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut out = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert!(status.success(), "demo failed:\n{out}\n{err}");
    for step in [
        "routed it to",
        "the python leader is codex-agent-2",
        "the python leader is now gemini-cli-03",
        "polisd wrote to gemini-cli-03's inbox",
        "moved the",
        "citizens",
    ] {
        assert!(out.contains(step), "the demo did not show `{step}`:\n{out}");
    }
    // The path is the word after the phrase, on its line or, wrapped, on the next.
    let root = out
        .split("The polis is at ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .expect("the demo names its folder")
        .to_string();
    assert!(root.starts_with(&*tmp.path().to_string_lossy()), "{root}");
    let check = Command::new(BIN)
        .args(["check", &root, "--json"])
        .env("POLISD_STATE_DIR", tmp.path().join("state"))
        .output()
        .unwrap();
    let report: serde_json::Value = serde_json::from_slice(&check.stdout).unwrap();
    assert_eq!(
        report["errors"], 0,
        "check found errors after the demo: {report:#}"
    );
    // The demo's own citizens are registered whole: no finding is about them, only the one
    // the scene stages.
    let about_citizens: Vec<_> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| {
            f["path"]
                .as_str()
                .is_some_and(|p| p.starts_with("citizens/"))
        })
        .collect();
    assert!(about_citizens.is_empty(), "{about_citizens:#?}");
    assert!(!out.contains("P015"), "{out}");
    // The demo's malformed line is a warning (C008) that check still reports.
    assert!(
        report["findings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["code"] == "C008"),
        "{report:#}"
    );
}

#[test]
fn service_install_dry_run_renders_absolute_paths_and_writes_nothing() {
    let polis = harness::TestPolis::init("claude-code-1");
    let home = tempfile::tempdir().unwrap();
    let out = Command::new(BIN)
        .args(["service", "install", "--dry-run"])
        .current_dir(&polis.root)
        .env("HOME", home.path())
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("POLISD_CONFIG")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let exec = text
        .lines()
        .map(str::trim)
        .find(|l| l.starts_with("ExecStart="))
        .unwrap_or_else(|| panic!("no ExecStart in:\n{text}"));
    let binary = exec
        .trim_start_matches("ExecStart=")
        .split(' ')
        .next()
        .unwrap();
    assert!(binary.starts_with('/'), "{exec}");
    assert!(exec.contains("run --config /"), "{exec}");
    assert_eq!(
        std::fs::read_dir(home.path()).unwrap().count(),
        0,
        "--dry-run wrote into HOME"
    );
}

#[test]
fn demo_removes_its_folder_unless_keep_is_given() {
    let tmp = tempfile::tempdir().unwrap();
    let out = Command::new(BIN)
        .arg("demo")
        .env("TMPDIR", tmp.path())
        .env_remove("POLISD_STATE_DIR")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("`polisd demo --keep`"));
    let left: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().flatten().collect();
    assert!(left.is_empty(), "the demo left {left:?}");
}

/// On a 60-column terminal (`COLUMNS`, as when piped) the narration wraps at 60, each step's
/// continuation lines under its text, instead of leaving 90-column lines for the terminal to
/// fold into the step numbers' column. `polisd status`'s table after it is left as it is.
#[test]
fn demo_narration_wraps_at_a_narrow_terminal_width() {
    let tmp = tempfile::tempdir().unwrap();
    let out = Command::new(BIN)
        .arg("demo")
        .env("TMPDIR", tmp.path())
        .env("POLISD_STATE_DIR", tmp.path().join("state"))
        .env("COLUMNS", "60")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let narration = text.split("$ polisd status").next().unwrap();
    // A line over 60 is only one word too long to break (a path).
    let long: Vec<&str> = narration
        .lines()
        .filter(|l| l.chars().count() > 60 && l.split_whitespace().count() > 1)
        .collect();
    assert!(long.is_empty(), "wider than 60: {long:#?}\n{text}");
    // Step 5's sentence hangs under its text, three spaces in, like the lines before it.
    let at = narration.find("moved the").expect(&text);
    let line = narration[..at].rsplit('\n').next().unwrap();
    assert!(
        line.starts_with("   ") && !line.starts_with("    "),
        "{line:?}\n{text}"
    );
    assert!(narration.contains("\n5. claude-code-1 proposes"), "{text}");
    assert!(narration.contains("\n   "), "{text}");
}
