//! The one-shot commands `check`, `verify` and `status` (and `reconcile` on a polis the reference
//! built), run as the real binary on temporary polises. Comparison tests run the Python
//! reference and fail, never skip, when it is missing.

mod harness;
#[path = "common/reference.rs"]
mod reference;

use harness::{TestPolis, BIN};
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const FOUNDER: &str = "claude-founder-one";
const FOUNDER_CARD: &str = "citizens/claude-founder-one/capability_card.yml";

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn describe(out: &Output) -> String {
    format!(
        "exit {:?}\n--- stdout\n{}--- stderr\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[track_caller]
fn json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}):\n{}", describe(out)))
}

fn keys(v: &Value) -> BTreeSet<&str> {
    v.as_object()
        .unwrap_or_else(|| panic!("not an object: {v}"))
        .keys()
        .map(String::as_str)
        .collect()
}

fn set<'a>(items: &[&'a str]) -> BTreeSet<&'a str> {
    items.iter().copied().collect()
}

/// Findings of `check --json` with the given code.
fn with_code<'v>(report: &'v Value, code: &str) -> Vec<&'v Value> {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["code"] == code)
        .collect()
}

/// Number of the last line of a file (1-based), i.e. the line a fresh append landed on.
fn last_line_number(text: &str) -> usize {
    text.lines().count()
}

/// A polis with one malformed chronicle line appended; returns the line's number.
fn polis_with_malformed_line() -> (TestPolis, usize) {
    let p = TestPolis::init(FOUNDER);
    p.append("chronicle.md", "- this line is not a chronicle entry\n");
    let line = last_line_number(&p.read("chronicle.md"));
    (p, line)
}

// ---------------------------------------------------------------------------------------------
// check

#[test]
fn check_c001_malformed_appended_line_names_its_line_and_exits_1() {
    let (p, line) = polis_with_malformed_line();
    let out = p.polisd(&["check"]);
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    let text = stdout(&out);
    let expected = format!("chronicle.md:{line}: error C001: ");
    assert!(text.contains(&expected), "no `{expected}` in:\n{text}");
    assert!(text.trim_end().ends_with("1 error, 0 warnings"), "{text}");
}

#[test]
fn check_json_has_exactly_the_documented_keys() {
    let (p, line) = polis_with_malformed_line();
    let out = p.polisd(&["check", "--json"]);
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    let report = json(&out);
    assert_eq!(
        keys(&report),
        set(&["findings", "errors", "warnings", "resolved"])
    );
    assert_eq!(report["errors"], 1);
    assert_eq!(report["warnings"], 0);
    let findings = report["findings"].as_array().unwrap();
    assert_eq!(findings.len(), 1, "{report:#}");
    for f in findings {
        assert_eq!(
            keys(f),
            set(&["code", "severity", "path", "line", "message"])
        );
    }
    let c001 = &findings[0];
    assert_eq!(c001["code"], "C001");
    assert_eq!(c001["severity"], "error");
    assert_eq!(c001["path"], "chronicle.md");
    assert_eq!(c001["line"], line);
}

#[test]
fn check_fresh_init_polis_reports_no_errors() {
    let p = TestPolis::init(FOUNDER);
    let out = p.polisd(&["check"]);
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    assert_eq!(stdout(&out), "0 errors, 0 warnings\n");
    let report = json(&p.polisd(&["check", "--json"]));
    assert_eq!(report["errors"], 0);
    assert_eq!(report["findings"], serde_json::json!([]));
}

#[test]
fn check_output_is_sorted_by_path_then_line() {
    let p = TestPolis::init(FOUNDER);
    p.append("chronicle.md", "- first bad line\n")
        .append(
            "chronicle.md",
            "- 2026-01-01 00:00 | nobody-registered | joined polis | - | hi\n",
        )
        .save(
            "contracts/open/a-contract.md",
            "---\ntitle: [unclosed\n---\nbody\n",
        );
    let out = p.polisd(&["check", "--json"]);
    let report = json(&out);
    let order: Vec<(String, u64)> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["path"].as_str().unwrap().to_string(),
                f["line"].as_u64().unwrap_or(0),
            )
        })
        .collect();
    let mut sorted = order.clone();
    sorted.sort();
    assert_eq!(order, sorted);
    assert!(order
        .iter()
        .any(|(p, _)| p == "contracts/open/a-contract.md"));
    assert!(order.iter().filter(|(p, _)| p == "chronicle.md").count() >= 2);
}

fn contract(id: &str, status: &str) -> String {
    format!(
        "---\ncontract_id: {id}\ntitle: Twice\nopened_by: {FOUNDER}\nopened_at: '2026-01-01 10:00:00'\n\
         owner: {FOUNDER}\nstatus: {status}\nrequired_tags:\n- python\nquality_score: 4\n\
         actual_minutes: 20\nsettled_at: '2026-01-02 10:00:00'\n---\n\n# Twice\n"
    )
}

#[test]
fn check_contract_in_two_folders_p006() {
    let p = TestPolis::init(FOUNDER);
    p.save("contracts/open/twice.md", &contract("twice", "claimed"))
        .save("contracts/settled/twice.md", &contract("twice", "settled"));
    let out = p.polisd(&["check", "--json"]);
    let report = json(&out);
    let p006 = with_code(&report, "P006");
    assert_eq!(p006.len(), 1, "{report:#}");
    // Only the settled copy counts: the stale open copy is named, as a warning.
    assert_eq!(p006[0]["path"], "contracts/open/twice.md");
    assert_eq!(p006[0]["severity"], "warning");
    assert!(p006[0]["message"]
        .as_str()
        .unwrap()
        .contains("contracts/settled/twice.md"));
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));

    // Open and abandoned, nothing settled: which state holds is unknown, an error.
    p.save("contracts/open/limbo.md", &contract("limbo", "claimed"))
        .save(
            "contracts/abandoned/limbo.md",
            &contract("limbo", "abandoned"),
        );
    let out = p.polisd(&["check", "--json"]);
    let report = json(&out);
    let p006 = with_code(&report, "P006");
    assert_eq!(p006.len(), 2, "{report:#}");
    assert!(p006
        .iter()
        .any(|f| f["severity"] == "error" && f["path"] == "contracts/open/limbo.md"));
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
}

#[test]
fn check_unknown_voter_p005() {
    let p = TestPolis::init(FOUNDER);
    p.save(
        "amendments/proposed/2026-11-01-quality-floor.md",
        &format!(
            "---\namendment_id: 2026-11-01-quality-floor\ntitle: Quality floor\nproposed_by: {FOUNDER}\n\
             proposed_at: '2099-11-01 10:00:00'\nstatus: proposed\nquorum_required: 2\nvotes:\n  \
             agree:\n  - {FOUNDER}\n  - ghost-voter-one\n  disagree: []\n---\n\n# Quality floor\n"
        ),
    );
    let report = json(&p.polisd(&["check", "--json"]));
    let p005 = with_code(&report, "P005");
    assert_eq!(p005.len(), 1, "{report:#}");
    assert_eq!(
        p005[0]["path"],
        "amendments/proposed/2026-11-01-quality-floor.md"
    );
    assert!(p005[0]["message"]
        .as_str()
        .unwrap()
        .contains("ghost-voter-one"));
    assert!(!p005[0]["message"].as_str().unwrap().contains(FOUNDER));
}

#[test]
fn check_card_without_tags_p003_and_edited_card_p010_are_warnings() {
    let p = TestPolis::init(FOUNDER);
    p.save(
        "citizens/codex-tagless-two/capability_card.yml",
        "agent_id: codex-tagless-two\nvendor: openai\n",
    );
    edit_founder_card(&p);
    let out = p.polisd(&["check", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    let report = json(&out);
    let p003 = with_code(&report, "P003");
    assert_eq!(p003.len(), 1, "{report:#}");
    assert_eq!(
        p003[0]["path"],
        "citizens/codex-tagless-two/capability_card.yml"
    );
    let p010 = with_code(&report, "P010");
    assert_eq!(p010.len(), 1, "{report:#}");
    assert_eq!(p010[0]["path"], FOUNDER_CARD);
    assert_eq!(p010[0]["severity"], "warning");
}

// ---------------------------------------------------------------------------------------------
// verify

/// An edit after stamping: a new top-level field.
fn edit_founder_card(p: &TestPolis) {
    let card = p.read(FOUNDER_CARD);
    assert!(card.contains("content_hash: \"sha256:"), "{card}");
    p.save(
        FOUNDER_CARD,
        &format!("notes: edited after stamping\n{card}"),
    );
}

#[test]
fn verify_ok_after_init() {
    let p = TestPolis::init(FOUNDER);
    let out = p.polisd(&["verify"]);
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    assert!(
        stdout(&out).starts_with(&format!("  ok     {FOUNDER}\n")),
        "{}",
        describe(&out)
    );
    let report = json(&p.polisd(&["verify", "--json"]));
    assert_eq!(keys(&report), set(&["cards"]));
    let cards = report["cards"].as_array().unwrap();
    assert_eq!(cards.len(), 1);
    assert_eq!(keys(&cards[0]), set(&["citizen", "state", "digest"]));
    assert_eq!(cards[0]["citizen"], FOUNDER);
    assert_eq!(cards[0]["state"], "ok");
    assert_eq!(cards[0]["digest"].as_str().unwrap().len(), 64);
    assert!(p
        .read(FOUNDER_CARD)
        .contains(cards[0]["digest"].as_str().unwrap()));
}

#[test]
fn verify_detects_mismatch_after_card_edit_and_exits_1() {
    let p = TestPolis::init(FOUNDER);
    edit_founder_card(&p);
    let out = p.polisd(&["verify"]);
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    assert!(
        stdout(&out).contains(&format!("mismatch {FOUNDER}")),
        "{}",
        describe(&out)
    );
    let out = p.polisd(&["verify", "--json"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(json(&out)["cards"][0]["state"], "mismatch");
}

/// Runs the reference's CLI (`python -m polis.cli ARGS`); returns its output.
fn reference_cli(args: &[&str], cwd: &Path) -> Output {
    Command::new(reference::reference_python())
        .args(["-m", "polis.cli"])
        .args(args)
        .current_dir(cwd)
        .env("PYTHONIOENCODING", "utf-8")
        .env("PYTHONUTF8", "1")
        .output()
        .expect("run the reference CLI")
}

#[track_caller]
fn reference_ok(args: &[&str], cwd: &Path) -> String {
    let out = reference_cli(args, cwd);
    assert!(
        out.status.success(),
        "reference `polis {}` failed:\n{}",
        args.join(" "),
        describe(&out)
    );
    stdout(&out)
}

/// Copies a directory tree (regular files and folders only).
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

fn card_paths(root: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(root.join("citizens"))
        .unwrap()
        .map(|e| e.unwrap().path().join("capability_card.yml"))
        .filter(|p| p.exists())
        .collect();
    out.sort();
    out
}

#[test]
fn verify_fix_stamps_like_the_reference_and_the_reference_then_says_ok() {
    let p = TestPolis::init(FOUNDER);
    edit_founder_card(&p);
    // An unstamped card and a legacy one (only `signature:`).
    p.citizen("codex-second-two", "openai", &[("python", 4)], "low");
    p.save(
        "citizens/gemini-third-three/capability_card.yml",
        "agent_id: gemini-third-three\nvendor: google\ncapability_tags:\n  docs:\n    self_rating: 3\n\
         signature: \"gemini-third-three:2026-01-01:sha256:00\"\n",
    );
    let theirs = p.dir.path().join("reference-copy");
    copy_tree(&p.root, &theirs);

    let out = p.polisd(&["verify", "--fix"]);
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    let text = stdout(&out);
    for (who, was) in [
        (FOUNDER, "mismatch"),
        ("codex-second-two", "unstamped"),
        ("gemini-third-three", "legacy"),
    ] {
        assert!(
            text.contains(&format!("ok     {who} (stamped; was {was})")),
            "{who}:\n{text}"
        );
    }
    let after = p.polisd(&["verify", "--json"]);
    assert_eq!(after.status.code(), Some(0), "{}", describe(&after));
    let cards = json(&after);
    assert!(
        cards["cards"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["state"] == "ok"),
        "{cards:#}"
    );

    // The reference stamps the same bytes...
    let theirs_str = theirs.to_str().unwrap();
    reference_ok(
        &["verify", "--fix", "--polis-root", theirs_str],
        p.dir.path(),
    );
    let ours = card_paths(&p.root);
    let refs = card_paths(&theirs);
    assert_eq!(ours.len(), 3);
    assert_eq!(ours.len(), refs.len());
    for (a, b) in ours.iter().zip(&refs) {
        assert_eq!(
            std::fs::read_to_string(a).unwrap(),
            std::fs::read_to_string(b).unwrap(),
            "{} differs from the reference's stamp",
            a.display()
        );
    }
    // ...and accepts ours.
    let verdict = reference_ok(
        &["verify", "--polis-root", p.root.to_str().unwrap()],
        p.dir.path(),
    );
    for who in [FOUNDER, "codex-second-two", "gemini-third-three"] {
        assert!(
            verdict.contains(&format!("ok     {who}\n")),
            "{who}:\n{verdict}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// status

fn busy_polis() -> TestPolis {
    let p = TestPolis::init(FOUNDER);
    p.citizen("codex-second-two", "openai", &[("python", 4)], "low")
        .save(
            "contracts/open/open-one.md",
            &contract("open-one", "proposed"),
        )
        .save(
            "contracts/open/open-two.md",
            &contract("open-two", "proposed"),
        )
        .save(
            "contracts/settled/done-one.md",
            &contract("done-one", "settled"),
        )
        .save(
            "contracts/abandoned/gave-up.md",
            &contract("gave-up", "abandoned"),
        )
        .save(
            "amendments/proposed/2026-11-01-quality-floor.md",
            &format!(
                "---\namendment_id: 2026-11-01-quality-floor\ntitle: Quality floor\n\
                 proposed_by: {FOUNDER}\nproposed_at: '2099-11-01 10:00:00'\nstatus: proposed\n\
                 quorum_required: 2\nexpires_at: 2099-12-01\n---\n\n# Quality floor\n"
            ),
        );
    let out = p.polisd(&["reconcile"]);
    assert!(out.status.success(), "{}", describe(&out));
    p
}

#[test]
fn status_text_mentions_citizens_counts_leaders_and_amendments() {
    let p = busy_polis();
    let out = p.polisd(&["status"]);
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    let text = stdout(&out);
    for needle in [
        "Citizens (2)",
        FOUNDER,
        "codex-second-two",
        "open 2   settled 1   abandoned 1",
        "python",
        "2026-11-01-quality-floor",
        "1/2",
        "until the end of 2099-12-01",
        "no daemon is watching this polis",
    ] {
        assert!(text.contains(needle), "no `{needle}` in:\n{text}");
    }
    // The founder's `founded polis` line is their last activity.
    let founder_row = text.lines().find(|l| l.contains(FOUNDER)).unwrap();
    assert!(founder_row.contains("idle"), "{founder_row}");
}

#[test]
fn status_json_parses_with_its_documented_keys() {
    let p = busy_polis();
    let out = p.polisd(&["status", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    let s = json(&out);
    assert_eq!(
        keys(&s),
        set(&[
            "polis",
            "now",
            "timezone",
            "citizens",
            "contracts",
            "explore_rate",
            "exploration",
            "tags",
            "amendments",
            "malformed_amendments",
            "recent_outcomes",
            "councils",
            "findings",
            "worktrees",
            "daemon"
        ])
    );
    assert_eq!(
        s["worktrees"],
        serde_json::json!({"git_common_dir": null, "others": [], "diverged": []})
    );
    assert_eq!(s["explore_rate"], 0.15);
    assert_eq!(s["citizens"].as_array().unwrap().len(), 2);
    assert_eq!(s["citizens"][0]["id"], FOUNDER);
    assert_eq!(s["citizens"][0]["activity_source"], "chronicle");
    assert_eq!(
        s["contracts"],
        serde_json::json!({"open": 2, "settled": 1, "abandoned": 1})
    );
    let python = s["tags"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["tag"] == "python")
        .expect("a python tag");
    assert_eq!(python["leader"], FOUNDER);
    assert_eq!(python["contracts_completed"], 1);
    assert!(python["leader_confidence"].is_f64());
    let a = &s["amendments"][0];
    assert_eq!(a["amendment_id"], "2026-11-01-quality-floor");
    assert_eq!(a["action"], "pending");
    assert_eq!(a["agrees"], 1);
    assert_eq!(a["quorum"], 2);
    assert_eq!(a["expiry_passed"], false);
    assert_eq!(
        keys(&s["findings"]),
        set(&["errors", "warnings", "resolved", "newest"])
    );
    assert_eq!(s["daemon"], Value::Null);
}

#[test]
fn status_reports_a_running_daemon_and_not_a_stale_one() {
    let p = TestPolis::init(FOUNDER);
    let state = polisd::fs::state::State::load_in(&p.state_dir, &p.root).unwrap();
    // This test process stands in for a running daemon.
    let mut running = state.status("2026-11-30T09:00:00Z", "native");
    running.counters.events = 7;
    state.write_status(&running).unwrap();
    let s = json(&p.polisd(&["status", "--json"]));
    assert_eq!(s["daemon"]["pid"], std::process::id());
    assert_eq!(s["daemon"]["watch_mode"], "native");
    assert_eq!(s["daemon"]["counters"]["events"], 7);
    let text = stdout(&p.polisd(&["status"]));
    assert!(
        text.contains(&format!(
            "pid {} watching since 2026-11-30T09:00:00Z",
            std::process::id()
        )),
        "{text}"
    );

    // A daemon.json left behind by a process that has exited.
    let mut gone = Command::new("true").spawn().unwrap();
    let gone_pid = gone.id();
    gone.wait().unwrap();
    state
        .write_status(&polisd::fs::state::DaemonStatus {
            pid: gone_pid,
            ..running
        })
        .unwrap();
    let s = json(&p.polisd(&["status", "--json"]));
    assert_eq!(s["daemon"], Value::Null, "{s:#}");
    let text = stdout(&p.polisd(&["status"]));
    assert!(
        text.contains(&format!(
            "no daemon is watching this polis (the last one, pid {gone_pid}, is gone)"
        )),
        "{text}"
    );
}

// ---------------------------------------------------------------------------------------------
// usage

#[test]
fn path_that_is_not_a_polis_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    for cmd in [
        &["check"][..],
        &["check", "--json"],
        &["verify"],
        &["verify", "--fix"],
        &["status"],
        &["status", "--json"],
    ] {
        let out = Command::new(BIN)
            .args(cmd)
            .arg(dir.path())
            .env("POLISD_STATE_DIR", dir.path().join("state"))
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{cmd:?}: {}", describe(&out));
    }
    // Nothing was created in the folder that is not a polis.
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert!(left.is_empty(), "{left:?}");
}

// ---------------------------------------------------------------------------------------------
// A polis the reference built

#[test]
fn reference_built_polis_reconcile_and_verify() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("project");
    std::fs::create_dir_all(&project).unwrap();
    let project_str = project.to_str().unwrap();
    let root = project.join("_polis");
    let root_str = root.to_str().unwrap();
    let cwd = dir.path();
    for (id, vendor) in [
        ("claude-founder-one", "anthropic"),
        ("codex-second-two", "openai"),
        ("gemini-third-three", "google"),
    ] {
        reference_ok(
            &[
                "init",
                "--project-root",
                project_str,
                "--agent-id",
                id,
                "--vendor",
                vendor,
                "--repair",
            ],
            cwd,
        );
    }
    let contracts = [
        (
            "Fix the login",
            "python,auth",
            "codex-second-two",
            "4",
            "45",
        ),
        ("Write the docs", "docs", "gemini-third-three", "5", "30"),
        (
            "Tune the cache",
            "python,perf",
            "claude-founder-one",
            "3",
            "90",
        ),
        ("Port the parser", "python", "codex-second-two", "2", "120"),
    ];
    for (title, tags, owner, quality, minutes) in contracts {
        let opened = reference_ok(
            &[
                "contract",
                "open",
                "--title",
                title,
                "--tags",
                tags,
                "--by",
                FOUNDER,
                "--polis-root",
                root_str,
            ],
            cwd,
        );
        let id = opened
            .split_whitespace()
            .nth(2)
            .unwrap_or_else(|| panic!("cannot read the contract id from: {opened}"))
            .to_string();
        reference_ok(
            &[
                "contract",
                "claim",
                &id,
                "--as",
                owner,
                "--polis-root",
                root_str,
            ],
            cwd,
        );
        reference_ok(
            &[
                "contract",
                "settle",
                &id,
                "--quality",
                quality,
                "--minutes",
                minutes,
                "--polis-root",
                root_str,
            ],
            cwd,
        );
    }
    // One more contract left open, so not every folder is alike.
    reference_ok(
        &[
            "contract",
            "open",
            "--title",
            "Still open",
            "--tags",
            "python",
            "--by",
            FOUNDER,
            "--polis-root",
            root_str,
        ],
        cwd,
    );

    // The reference's reconcile, on a copy.
    let theirs = dir.path().join("theirs");
    copy_tree(&root, &theirs);
    reference_ok(
        &["reconcile", "--polis-root", theirs.to_str().unwrap()],
        cwd,
    );

    let polisd = |args: &[&str]| {
        Command::new(BIN)
            .args(args)
            .arg(&root)
            .env("POLISD_STATE_DIR", dir.path().join("state"))
            .output()
            .unwrap()
    };
    let out = polisd(&["reconcile"]);
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    assert!(
        stdout(&out).contains("replayed 4 settlements"),
        "{}",
        describe(&out)
    );
    let without_last_updated = |text: String| -> Vec<String> {
        text.lines()
            .filter(|l| !l.starts_with("last_updated:"))
            .map(str::to_string)
            .collect()
    };
    let ours = std::fs::read_to_string(root.join("contracts/routing_stats.yml")).unwrap();
    let refs = std::fs::read_to_string(theirs.join("contracts/routing_stats.yml")).unwrap();
    assert!(ours.starts_with("last_updated: '"), "{ours}");
    assert!(refs.contains("leader_confidence"), "{refs}");
    assert_eq!(without_last_updated(ours), without_last_updated(refs));

    // Cards the reference stamped verify `ok` here.
    reference_ok(&["verify", "--fix", "--polis-root", root_str], cwd);
    let out = polisd(&["verify", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    let cards = json(&out);
    let cards = cards["cards"].as_array().unwrap();
    assert_eq!(cards.len(), 3, "{cards:?}");
    for c in cards {
        assert_eq!(c["state"], "ok", "{c}");
    }
    // And polisd finds no error in what the reference wrote.
    let out = polisd(&["check"]);
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
}

// ---------------------------------------------------------------------------------------------
// `polisd init` checks before it writes; `polisd register` adds a citizen polisd is happy with

fn polisd_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .current_dir(dir)
        .env("POLISD_STATE_DIR", dir.join(".state"))
        .output()
        .unwrap()
}

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
    assert!(tmp.path().join("_polis").join(FOUNDER_CARD).is_file());
}

#[test]
fn every_polisd_command_in_the_readme_parses() {
    use clap::Parser;
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let mut in_block = false;
    let mut checked = 0;
    for line in readme.lines() {
        if line.starts_with("```") {
            in_block = line == "```sh";
            continue;
        }
        if !in_block {
            continue;
        }
        let code = line.split(" #").next().unwrap_or("");
        for command in code.split("&&").map(str::trim) {
            if !command.starts_with("polisd ") {
                continue;
            }
            match polisd::commands::cli::Cli::try_parse_from(command.split_whitespace()) {
                Ok(_) => {}
                Err(e)
                    if matches!(
                        e.kind(),
                        clap::error::ErrorKind::DisplayHelp
                            | clap::error::ErrorKind::DisplayVersion
                    ) => {}
                Err(e) => panic!("README's `{command}` does not parse:\n{e}"),
            }
            checked += 1;
        }
    }
    assert!(checked >= 5, "only {checked} README commands found");
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
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    for f in ["capability_card.yml", "status.md", "inbox.md", "journal.md"] {
        assert!(p.exists(&format!("citizens/codex-agent-2/{f}")), "{f}");
    }
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

// ---------------------------------------------------------------------------------------------
// Amendments and lessons the tally or router cannot use are reported, never skipped silently

const BAD_AMENDMENT: &str = "---\namendment_id: 2026-01-05-bad\ntitle: Bad\nproposed_by: claude-founder-one\n\
proposed_at: 2026-01-05 10:00:00\nstatus: something-bad\nquorum_required: abc\nexpires_at: 'not-a-date'\n\
votes:\n  agree: [claude-founder-one]\n  maybe: []\n---\n\nBody.\n";

#[test]
fn check_status_and_tally_report_a_malformed_amendment() {
    let p = TestPolis::init(FOUNDER);
    p.save("amendments/proposed/2026-01-05-bad.md", BAD_AMENDMENT);
    let check = p.polisd(&["check", "--json"]);
    assert_eq!(check.status.code(), Some(1));
    let report = json(&check);
    let p021: Vec<_> = with_code(&report, "P021");
    assert_eq!(p021.len(), 4, "{report:#}");
    let status = json(&p.polisd(&["status", "--json"]));
    assert_eq!(
        status["malformed_amendments"].as_array().unwrap().len(),
        4,
        "{status:#}"
    );
    let text = stdout(&p.polisd(&["status"]));
    assert!(
        text.contains("malformed: amendments/proposed/2026-01-05-bad.md"),
        "{text}"
    );
    assert!(!text.contains("(none proposed)"), "{text}");
    let tally = p.polisd(&["tally", "--dry-run", "--json"]);
    assert_eq!(json(&tally)["malformed"].as_array().unwrap().len(), 4);
    let tally = stdout(&p.polisd(&["tally", "--dry-run"]));
    assert!(
        tally.contains("malformed amendments/proposed/2026-01-05-bad.md"),
        "{tally}"
    );
}

#[test]
fn check_reports_lesson_effects_on_unknown_citizens_and_non_numeric_deltas() {
    let p = TestPolis::init(FOUNDER);
    p.save(
        "lessons/rust/2026-01-05-borrow.md",
        "---\nlesson_id: 2026-01-05-borrow\nfiled_by: claude-founder-one\ncapability_tags: [rust]\n\
         quality_impact: 3\nrouting_effect:\n- citizen: ghost-agent-9\n  delta: 0.1\n\
         - citizen: claude-founder-one\n  delta: much\n---\n",
    );
    let report = json(&p.polisd(&["check", "--json"]));
    let unknown = with_code(&report, "P019");
    assert_eq!(unknown.len(), 1, "{report:#}");
    assert_eq!(unknown[0]["severity"], "warning");
    let delta = with_code(&report, "P022");
    assert_eq!(delta.len(), 1, "{report:#}");
    assert_eq!(delta[0]["severity"], "error");
}

#[test]
fn status_shows_recent_amendment_outcomes_after_a_ratification() {
    let p = TestPolis::init(FOUNDER);
    p.save(
        "amendments/ratified/2026-01-02-floor.md",
        "---\namendment_id: 2026-01-02-floor\ntitle: Floor\nproposed_by: claude-founder-one\n\
         proposed_at: 2026-01-02 10:00:00\nstatus: ratified\nratified_at: 2026-01-03 09:00:00\n---\n",
    );
    let status = json(&p.polisd(&["status", "--json"]));
    assert_eq!(
        status["recent_outcomes"][0]["amendment_id"],
        "2026-01-02-floor"
    );
    assert_eq!(status["recent_outcomes"][0]["status"], "ratified");
    let text = stdout(&p.polisd(&["status"]));
    assert!(
        text.contains("2026-01-02-floor ratified at 2026-01-03 09:00:00"),
        "{text}"
    );
}

#[test]
fn status_lists_tags_by_name_as_the_reference_does() {
    let p = TestPolis::init(FOUNDER);
    // First seen (the stats file's order) is zeta, then alpha.
    p.save(
        "contracts/routing_stats.yml",
        "last_updated: '2026-01-02 10:00:00'\nexplore_rate: 0.2\ntags:\n  zeta:\n    citizens: {}\n    leader: null\n    leader_confidence: 0.0\n  alpha:\n    citizens: {}\n    leader: null\n    leader_confidence: 0.0\n",
    );
    // polis.yml's rate is the one the router uses.
    let polis_yml = p.read("polis.yml");
    assert!(polis_yml.contains("explore_rate: 0.15"));
    p.save(
        "polis.yml",
        &polis_yml.replace("explore_rate: 0.15", "explore_rate: 0.25"),
    );
    let s = json(&p.polisd(&["status", "--json"]));
    let tags: Vec<&str> = s["tags"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["tag"].as_str().unwrap())
        .collect();
    assert_eq!(tags, ["alpha", "zeta"], "{s:#}");
    assert_eq!(s["explore_rate"], 0.25);
    assert!(stdout(&p.polisd(&["status"])).contains("explore_rate 0.25"));
}

// ---------------------------------------------------------------------------------------------
// A chronicle finding is resolved by a later line, never by editing the chronicle

#[test]
fn check_c001_finding_resolved_by_the_corrected_line_exits_0() {
    let p = TestPolis::init(FOUNDER);
    p.save(
        "contracts/settled/fix-it.md",
        &contract("fix-it", "settled"),
    );
    let stamp = harness::chronicle_stamp();
    // C001 (an error): the note field is missing.
    p.append(
        "chronicle.md",
        &format!("- {stamp} | {FOUNDER} | settled contract | [[contracts/settled/fix-it]]\n"),
    );
    let out = p.polisd(&["check", "--json"]);
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    assert_eq!(with_code(&json(&out), "C001").len(), 1);
    let bad_line = last_line_number(&p.read("chronicle.md"));
    // The notice's advice: the same stamp and verb, correct this time.
    p.append(
        "chronicle.md",
        &format!(
            "- {stamp} | {FOUNDER} | settled contract | [[contracts/settled/fix-it]] | done\n"
        ),
    );
    let out = p.polisd(&["check", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    let report = json(&out);
    assert_eq!(report["errors"], 0);
    assert_eq!(report["warnings"], 0, "{report:#}");
    assert_eq!(report["resolved"][0]["code"], "C001");
    assert_eq!(report["resolved"][0]["line"], bad_line);
    assert_eq!(
        report["resolved"][0]["resolved_by"],
        format!("chronicle.md:{}", bad_line + 1)
    );
    let text = stdout(&p.polisd(&["check"]));
    assert!(
        text.contains("resolved (1; they no longer count):"),
        "{text}"
    );
    let status = json(&p.polisd(&["status", "--json"]));
    assert_eq!(status["findings"]["resolved"], 1);
    assert_eq!(status["findings"]["errors"], 0);
}

#[test]
fn check_c001_finding_resolved_by_a_retracted_line() {
    let (p, line) = polis_with_malformed_line();
    p.append(
        "chronicle.md",
        &harness::chronicle_line(
            FOUNDER,
            "retracted line",
            "-",
            &format!("line {line}: typo"),
        ),
    );
    // A malformed line has no author to match: only its own author may retract it, so this
    // one (no author) stays.
    assert_eq!(p.polisd(&["check"]).status.code(), Some(1));
    let stamp = harness::chronicle_stamp();
    p.append("chronicle.md", &format!("- {stamp} | {FOUNDER} | oops\n"));
    let oops = last_line_number(&p.read("chronicle.md"));
    p.append(
        "chronicle.md",
        &harness::chronicle_line(FOUNDER, "retracted line", "-", &format!("line {oops}")),
    );
    let report = json(&p.polisd(&["check", "--json"]));
    let resolved: Vec<_> = report["resolved"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["line"].as_u64().unwrap() as usize)
        .collect();
    assert_eq!(resolved, [oops], "{report:#}");
    assert_eq!(report["errors"], 1, "the author-less line still counts");
}

#[test]
fn version_names_the_commit_it_was_built_from() {
    let out = Command::new(BIN).arg("--version").output().unwrap();
    let text = stdout(&out);
    let re =
        regex::Regex::new(r"^polisd \d+\.\d+\.\d+ \(commit ([0-9a-f]{12}|unknown)\)\n$").unwrap();
    let caps = re.captures(&text).unwrap_or_else(|| panic!("{text:?}"));
    let head = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    if let Some(head) = head {
        assert_eq!(&caps[1], head, "built from another commit than HEAD");
    }
}

#[test]
fn completions_and_man_page_come_from_the_command_line_definition() {
    for shell in ["bash", "zsh", "fish"] {
        let out = Command::new(BIN)
            .args(["completions", shell])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{shell}");
        let script = stdout(&out);
        for sub in ["register", "config", "check", "completions"] {
            assert!(script.contains(sub), "{shell} completions lack `{sub}`");
        }
    }
    let out = Command::new(BIN)
        .args(["completions", "tcsh"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(2),
        "an unknown shell is a usage error"
    );
    let man = stdout(&Command::new(BIN).arg("man").output().unwrap());
    assert!(man.contains(".TH polisd 1"), "{man}");
    assert!(man.contains("register"), "{man}");
}

/// What docs/install.md tells a user to install is read by the real tools: bash parses the
/// completion script, and `man` renders the page without a warning from groff.
#[test]
fn completions_parse_in_bash_and_the_man_page_renders_in_man() {
    let tmp = tempfile::tempdir().unwrap();
    let script = tmp.path().join("polisd.bash");
    let out = Command::new(BIN)
        .args(["completions", "bash"])
        .output()
        .unwrap();
    std::fs::write(&script, &out.stdout).unwrap();
    let bash = Command::new("bash")
        .arg("-n")
        .arg(&script)
        .output()
        .expect("bash is needed to check the completion script");
    assert!(bash.status.success(), "{}", describe(&bash));
    let page = tmp.path().join("polisd.1");
    let out = Command::new(BIN).arg("man").output().unwrap();
    std::fs::write(&page, &out.stdout).unwrap();
    let man = Command::new("man")
        .args(["--warnings", "-l"])
        .arg(&page)
        .env("MANPAGER", "cat")
        .env("MANWIDTH", "100")
        .output()
        .expect("man (package man-db) is needed to render the manual page");
    assert!(man.status.success(), "{}", describe(&man));
    let text = stdout(&man);
    assert!(text.contains("contract"), "{text}");
    let warnings = String::from_utf8_lossy(&man.stderr);
    assert!(warnings.trim().is_empty(), "groff warned: {warnings}");
}

/// `polisd --help` is a map: the commands under headings by use, one line each, no flat list.
#[test]
fn help_groups_the_commands_under_headings() {
    let out = Command::new(BIN).arg("--help").output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    let help = stdout(&out);
    let headings = [
        "The daemon and the rules it applies (each also runs once):",
        "Agents' actions:",
        "Inspection:",
        "Set-up and service:",
    ];
    let mut at = 0;
    for heading in headings {
        let found = help[at..]
            .find(heading)
            .unwrap_or_else(|| panic!("no `{heading}`:\n{help}"));
        at += found;
    }
    assert!(!help.contains("Commands:"), "{help}");
    // The reference's name for `check` stands beside it.
    assert!(help.contains("\n  check, doctor  "), "{help}");
    for (command, heading) in [
        ("run", 0),
        ("contract", 1),
        ("status", 2),
        ("init", 3),
        ("migrate", 3),
    ] {
        let line = format!("\n  {command} ");
        let pos = help
            .find(&line)
            .unwrap_or_else(|| panic!("no `{command}`:\n{help}"));
        let owner = headings
            .iter()
            .rposition(|h| help[..pos].contains(h))
            .unwrap();
        assert_eq!(
            owner, heading,
            "`{command}` under the wrong heading:\n{help}"
        );
    }
    // One line each: every command line starts a description; wrapped lines are rare.
    let commands = help
        .lines()
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .count();
    assert!(commands >= 35, "{help}");
}

// ---------------------------------------------------------------------------------------------
// docs/protocol.md: every example is a real file

/// Writes every example of docs/protocol.md into a polis, in order (`<!-- example: PATH -->`
/// replaces the file, `(moved from OLD)` removes OLD, `<!-- example-append: PATH -->` appends),
/// and checks it.
#[test]
fn protocol_doc_examples_make_a_polis_without_errors() {
    let doc =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/protocol.md"))
            .unwrap();
    let p = TestPolis::init("claude-code-1");
    for (id, vendor) in [("codex-agent-2", "openai"), ("gemini-cli-03", "google")] {
        let out = p.polisd(&[
            "register", id, "--vendor", vendor, "--model", "m", "--tags", "python:3",
        ]);
        assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    }
    let marker = regex::Regex::new(
        r"(?m)^<!-- (example|example-append): (\S+)(?: \(moved from (\S+)\))? -->\n```[a-z]*\n((?s:.*?))```\n",
    )
    .unwrap();
    let mut examples = 0;
    for c in marker.captures_iter(&doc) {
        let (path, body) = (&c[2], &c[4]);
        if let Some(old) = c.get(3) {
            std::fs::remove_file(p.path(old.as_str())).unwrap();
        }
        if &c[1] == "example" {
            p.save(path, body);
        } else {
            p.append(path, body);
        }
        examples += 1;
    }
    assert_eq!(
        examples,
        doc.matches("<!-- example").count(),
        "a marked example did not parse"
    );
    let out = p.polisd(&["check", "--json"]);
    let report = json(&out);
    assert_eq!(report["errors"], 0, "{report:#}");
    // Only C005 (the examples are older than the founding line) may warn.
    let others: Vec<_> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["code"] != "C005")
        .collect();
    assert!(others.is_empty(), "{others:#?}");
    // The retraction in the chronicle section resolves the C008 above it.
    assert!(
        report["resolved"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["code"] == "C008"),
        "{report:#}"
    );
    // The card example's hash is right.
    let verify = json(&p.polisd(&["verify", "--json"]));
    assert!(
        verify["cards"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["state"] == "ok"),
        "{verify:#}"
    );
    // The amendment's three vote forms all count: 3 agree would ratify; here the tally sees
    // claude-code-1 and codex-agent-2 agreeing and gemini-cli-03 requesting changes.
    let tally = json(&p.polisd(&["tally", "--dry-run", "--json"]));
    assert_eq!(tally["results"][0]["agrees"], 2, "{tally:#}");
}

#[test]
fn readme_links_the_protocol_page_and_cites_no_missing_spec() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    assert!(readme.contains("(docs/protocol.md)"));
    assert!(
        !readme.contains("SPEC.md"),
        "README cites SPEC.md, which is not in the repository"
    );
    assert!(
        readme.contains("(docs/guide.md)"),
        "README links the full guide"
    );
    assert!(
        readme.lines().count() < 400,
        "README.md has {} lines: keep it under 400 and move detail to docs/",
        readme.lines().count()
    );
    let issue = regex::Regex::new(r"(?i)\bissues? #?[0-9]+").unwrap();
    let mut texts = vec![("README.md".to_string(), readme.clone())];
    for entry in std::fs::read_dir(root.join("docs")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "md") {
            let text = std::fs::read_to_string(&path).unwrap();
            texts.push((path.display().to_string(), text));
        }
    }
    for (name, text) in &texts {
        if let Some(m) = issue.find(text) {
            panic!(
                "{name} cites an issue number ({}): say what and why instead",
                m.as_str()
            );
        }
    }
    let doc = std::fs::read_to_string(root.join("docs/protocol.md")).unwrap();
    for code in (1..=9)
        .map(|n| format!("C00{n}"))
        .chain((1..=26).map(|n| format!("P{n:03}")))
    {
        assert!(
            doc.contains(&format!("| {code} |")),
            "docs/protocol.md lacks {code}"
        );
    }
    for kind in polisd::protocol::delivery::inbox::Kind::ALL {
        assert!(
            doc.contains(&format!("`{}`", kind.as_str())),
            "docs/protocol.md lacks {kind}"
        );
    }
}

#[test]
fn reconcile_of_thousands_shows_no_progress_when_stderr_is_not_a_terminal() {
    let p = TestPolis::init(FOUNDER);
    let dir = p.path("contracts/settled");
    for i in 0..2_100 {
        std::fs::write(
            dir.join(format!("c-{i:05}.md")),
            format!(
                "---\ncontract_id: c-{i:05}\nopened_by: {FOUNDER}\nowner: {FOUNDER}\nstatus: settled\n\
                 required_tags: [rust]\nsettled_at: 2026-01-01 10:00:00\nquality_score: 4\n---\n"
            ),
        )
        .unwrap();
    }
    let out = p.polisd(&["reconcile"]);
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    assert!(
        stdout(&out).contains("replayed 2100 settlements"),
        "{}",
        describe(&out)
    );
    // A pipe gets no bar, no carriage returns, no escape codes: nothing at all.
    assert!(out.stderr.is_empty(), "{}", describe(&out));
}

#[test]
fn reconcile_json_says_what_it_replayed_and_what_it_found() {
    let p = TestPolis::init(FOUNDER);
    p.save(
        "contracts/settled/c-00001.md",
        &format!(
            "---\ncontract_id: c-00001\nopened_by: {FOUNDER}\nowner: {FOUNDER}\nstatus: settled\n\
             required_tags: [rust]\nsettled_at: 2026-01-01 10:00:00\nquality_score: 4\n---\n"
        ),
    );
    let out = p.polisd(&["reconcile", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    let report = json(&out);
    assert_eq!(report["replayed"], 1, "{report}");
    assert_eq!(report["routing_stats"], "updated", "{report}");
    assert_eq!(report["findings"], serde_json::json!([]), "{report}");
    let again = json(&p.polisd(&["reconcile", "--json"]));
    assert_eq!(again["routing_stats"], "unchanged", "{again}");
}

#[test]
fn bench_routing_over_every_world_draws_every_worlds_curves() {
    let dir = tempfile::tempdir().unwrap();
    let curves = dir.path().join("curves.png");
    let out = polisd_in(
        dir.path(),
        &[
            "bench",
            "routing",
            "--seeds",
            "0..1",
            "--contracts",
            "40",
            "--plot",
            curves.to_str().unwrap(),
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    for name in [
        "curves.png",
        "curves-drift.png",
        "curves-newcomer.png",
        "curves-large.png",
        "curves-teams.png",
        "curves-churn.png",
    ] {
        let png = std::fs::read(dir.path().join(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(png.starts_with(b"\x89PNG"), "{name} is not a PNG");
    }
}

#[test]
fn bench_routing_json_is_every_worlds_report() {
    let dir = tempfile::tempdir().unwrap();
    let out = polisd_in(
        dir.path(),
        &[
            "bench",
            "routing",
            "--scenario",
            "drift",
            "--seeds",
            "0..2",
            "--contracts",
            "60",
            "--json",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    let reports = json(&out);
    let drift = &reports[0];
    assert_eq!(drift["scenario"], "drift", "{drift}");
    let posterior = drift["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["strategy"] == "posterior")
        .expect("the default policy is in the report");
    assert_eq!(
        posterior["recovery"]["per_seed"].as_array().unwrap().len(),
        2
    );
    assert!(posterior["oracle_gain_interval"].is_number(), "{posterior}");
}
