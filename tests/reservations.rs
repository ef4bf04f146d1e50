//! `polisd reserve`, `release` and `reservations` on real folders, the daemon's care of
//! `reservations.yml` (expiry, release when work ends, `reservation-conflict` notices), and the
//! file against the Python reference: each reads what the other writes, and for the same
//! arguments both write the same bytes apart from timestamps.

mod harness;
#[path = "common/reference.rs"]
mod reference;

use harness::{wait_for, TestPolis, BIN};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const FOUNDER: &str = "founder-one";
const ALPHA: &str = "alpha-agent";
const BRAVO: &str = "bravo-agent";
const CHARLIE: &str = "charlie-agent";
const FILE: &str = "reservations.yml";

fn polis() -> TestPolis {
    let p = TestPolis::init(FOUNDER);
    p.citizen(ALPHA, "openai", &[("rust", 4)], "low")
        .citizen(BRAVO, "google", &[("rust", 3)], "medium")
        .citizen(CHARLIE, "mistral", &[("ops", 4)], "high");
    p
}

fn project(p: &TestPolis) -> PathBuf {
    p.root.parent().unwrap().to_path_buf()
}

/// Runs polisd from the project root (where an agent usually is).
fn run(p: &TestPolis, args: &[&str]) -> Output {
    run_in(p, &project(p), args)
}

fn run_in(p: &TestPolis, cwd: &Path, args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .env("POLISD_STATE_DIR", &p.state_dir)
        .current_dir(cwd)
        .output()
        .unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[track_caller]
fn ok(out: &Output) -> String {
    assert!(
        out.status.success(),
        "expected success, got {:?}\nstdout: {}\nstderr: {}",
        out.status.code(),
        text(&out.stdout),
        text(&out.stderr)
    );
    text(&out.stdout)
}

#[track_caller]
fn refused(out: &Output) -> String {
    assert_eq!(
        out.status.code(),
        Some(1),
        "expected a refusal (exit 1)\nstdout: {}\nstderr: {}",
        text(&out.stdout),
        text(&out.stderr)
    );
    let err = text(&out.stderr);
    assert_eq!(err.lines().count(), 1, "one line saying what to do: {err}");
    err
}

fn json(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&out.stdout)))
}

#[test]
fn conflict_exits_1_names_the_holder_and_writes_nothing() {
    let p = polis();
    ok(&run(
        &p,
        &[
            "reserve",
            "src/auth.rs",
            "docs",
            "--as",
            ALPHA,
            "--note",
            "login fix",
        ],
    ));
    let before = p.read(FILE);
    let err = refused(&run(&p, &["reserve", "src/auth.rs", "--as", BRAVO]));
    assert!(err.contains(ALPHA) && err.contains("src/auth.rs"), "{err}");
    // A folder holds what is inside it, both ways.
    let err = refused(&run(&p, &["reserve", "docs/guide.md", "--as", BRAVO]));
    assert!(err.contains(&format!("reserved by {ALPHA}")), "{err}");
    let err = refused(&run(&p, &["reserve", "src", "--as", BRAVO]));
    assert!(err.contains(ALPHA), "{err}");
    assert_eq!(p.read(FILE), before, "a refusal writes nothing");
    // --json: the conflicts as data, on stdout.
    let out = run(&p, &["reserve", "src/auth.rs", "--as", BRAVO, "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let v = json(&out);
    assert_eq!(v["ok"], false);
    assert_eq!(v["conflicts"][0]["holder"], ALPHA);
    assert_eq!(v["conflicts"][0]["held_path"], "src/auth.rs");
    // The holder may reserve again (renew); another path is free for others.
    ok(&run(
        &p,
        &["reserve", "src/auth.rs", "--as", ALPHA, "--ttl-min", "5"],
    ));
    ok(&run(&p, &["reserve", "src/other.rs", "--as", BRAVO]));
    let list = json(&run(&p, &["reservations", "--json"]));
    let entries = list["reservations"].as_array().unwrap();
    assert_eq!(entries.len(), 3, "{list}");
    let all_paths: Vec<&str> = entries
        .iter()
        .flat_map(|e| e["paths"].as_array().unwrap())
        .map(|p| p.as_str().unwrap())
        .collect();
    assert_eq!(
        all_paths,
        ["docs", "src/auth.rs", "src/other.rs"],
        "renewed, not doubled"
    );
}

#[test]
fn overlap_by_glob_in_either_direction() {
    let p = polis();
    ok(&run(&p, &["reserve", "src/**/*.rs", "--as", ALPHA]));
    // A path the glob matches, a folder that holds matches, another glob that meets it.
    for (path, why) in [
        ("src/net/http.rs", "a path the held glob matches"),
        ("src", "a folder above the held glob"),
        ("src/*/mod.rs", "a glob that meets the held glob"),
        ("**/lib.rs", "a glob that meets the held glob from the top"),
    ] {
        let err = refused(&run(&p, &["reserve", path, "--as", BRAVO]));
        assert!(
            err.contains(ALPHA) && err.contains("src/**/*.rs"),
            "{why}: {err}"
        );
    }
    // The other direction: a held plain path, a requested glob.
    ok(&run(&p, &["reserve", "docs/guide.md", "--as", CHARLIE]));
    let err = refused(&run(&p, &["reserve", "docs/*.md", "--as", BRAVO]));
    assert!(err.contains(CHARLIE), "{err}");
    // What no glob can reach is free.
    ok(&run(
        &p,
        &[
            "reserve",
            "src/**/*.md",
            "docs/*.txt",
            "Cargo.toml",
            "--as",
            BRAVO,
        ],
    ));
    let list = ok(&run(&p, &["reservations"]));
    assert!(list.contains("src/**/*.md"), "{list}");
}

#[test]
fn reservations_of_a_citizen_who_holds_none_or_is_no_citizen_say_which() {
    let p = polis();
    ok(&run(&p, &["reserve", "src/lib.rs", "--as", BRAVO]));
    let none = ok(&run(&p, &["reservations", "--as", ALPHA]));
    assert_eq!(none.trim(), format!("No active reservations of `{ALPHA}`."));
    // A mistyped id is said to be one, not answered as if it held nothing.
    let typo = ok(&run(&p, &["reservations", "--as", "bravo-agnet"]));
    assert!(
        typo.contains("`bravo-agnet`, which is not a registered citizen"),
        "{typo}"
    );
    let held = ok(&run(&p, &["reservations", "--as", BRAVO]));
    assert!(held.contains("src/lib.rs"), "{held}");
}

#[test]
fn concurrent_reservers_exactly_one_wins() {
    let p = polis();
    let ids: Vec<String> = (0..8).map(|i| format!("racer-agent-{i}")).collect();
    for id in &ids {
        p.citizen(id, "other", &[("rust", 3)], "medium");
    }
    // Each asks for a different spelling of the same files, so only the lock can keep two of
    // them from both seeing an empty file.
    let children: Vec<_> = ids
        .iter()
        .enumerate()
        .map(|(i, id)| {
            let path = if i % 2 == 0 { "src/lib.rs" } else { "src/*.rs" };
            Command::new(BIN)
                .args(["reserve", path, "--as", id])
                .env("POLISD_STATE_DIR", &p.state_dir)
                .current_dir(project(&p))
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let outs: Vec<Output> = children
        .into_iter()
        .map(|c| c.wait_with_output().unwrap())
        .collect();
    let winners: Vec<usize> = (0..8).filter(|&i| outs[i].status.success()).collect();
    assert_eq!(winners.len(), 1, "exactly one winner: {outs:#?}");
    let winner = &ids[winners[0]];
    for (i, out) in outs.iter().enumerate() {
        if i != winners[0] {
            let err = refused(out);
            assert!(
                err.contains(winner.as_str()),
                "loser names the winner: {err}"
            );
        }
    }
    let list = json(&run(&p, &["reservations", "--json"]));
    let entries = list["reservations"].as_array().unwrap();
    assert_eq!(entries.len(), 1, "{list}");
    assert_eq!(entries[0]["citizen"], winner.as_str());
}

#[test]
fn paths_outside_the_project_are_refused() {
    let p = polis();
    let outside = p.dir.path().join("elsewhere.txt");
    for path in [
        "../elsewhere.txt",
        "src/../../x",
        outside.to_str().unwrap(),
        "/etc/passwd",
    ] {
        let err = refused(&run(&p, &["reserve", path, "--as", ALPHA]));
        assert!(err.contains("outside the project"), "{path}: {err}");
    }
    assert!(!p.exists(FILE), "nothing written");
    let err = refused(&run(&p, &["reserve", ".", "--as", ALPHA]));
    assert!(err.contains("whole project"), "{err}");
    let err = refused(&run(&p, &["reserve", "src", "--as", "nobody-registered"]));
    assert!(err.contains("not a registered citizen"), "{err}");
    let err = refused(&run(
        &p,
        &["reserve", "src", "--as", ALPHA, "--contract", "no-such"],
    ));
    assert!(err.contains("not an open contract"), "{err}");
    assert!(!p.exists(FILE), "nothing written");
    // Inside the project, relative to where the agent stands; absolute paths inside count.
    std::fs::create_dir_all(project(&p).join("src/net")).unwrap();
    ok(&run_in(
        &p,
        &project(&p).join("src/net"),
        &["reserve", "http.rs", "../*.toml", "--as", ALPHA],
    ));
    let abs = project(&p).join(".github/workflows/ci.yml");
    ok(&run(&p, &["reserve", abs.to_str().unwrap(), "--as", ALPHA]));
    let file = p.read(FILE);
    assert!(
        file.contains("- src/net/http.rs\n") && file.contains("- src/*.toml\n"),
        "{file}"
    );
    assert!(
        file.contains("- .github/workflows/ci.yml\n"),
        "dot folder kept: {file}"
    );
    // A bad usage is exit 2.
    assert_eq!(run(&p, &["reserve", "--as", ALPHA]).status.code(), Some(2));
    assert_eq!(
        run(&p, &["reserve", "x", "--as", ALPHA, "--ttl-min", "0"])
            .status
            .code(),
        Some(2)
    );
    // Past a year the expiry is refused: near u32::MAX minutes it passed the year 9999 and was
    // written as `+10193-…`, which no reader parses.
    let before = p.read(FILE);
    for ttl in ["525601", "4294967295"] {
        let out = run(&p, &["reserve", "y", "--as", ALPHA, "--ttl-min", ttl]);
        assert_eq!(out.status.code(), Some(2), "{out:?}");
    }
    assert_eq!(p.read(FILE), before);
    ok(&run(
        &p,
        &["reserve", "y", "--as", ALPHA, "--ttl-min", "525600"],
    ));
    assert!(p.read(FILE).contains("expires_at: '2"), "{}", p.read(FILE));
}

#[test]
fn release_lets_go_of_overlapping_paths_and_refuses_unknown_ids() {
    let p = polis();
    ok(&run(
        &p,
        &["reserve", "src/a.rs", "src/b.rs", "docs", "--as", ALPHA],
    ));
    let out = json(&run(&p, &["release", "src/a.rs", "--as", ALPHA, "--json"]));
    assert_eq!(out["released"]["paths"], serde_json::json!(["src/a.rs"]));
    let out = ok(&run(&p, &["release", "--as", BRAVO]));
    assert!(out.contains("nothing released"), "{out}");
    let before = p.read(FILE);
    let err = refused(&run(&p, &["release", "--as", "typo-agent-id"]));
    assert!(err.contains("not a registered citizen"), "{err}");
    assert_eq!(p.read(FILE), before);
    ok(&run(&p, &["release", "--as", ALPHA]));
    assert_eq!(
        json(&run(&p, &["reservations", "--json"]))["reservations"],
        serde_json::json!([])
    );
}

/// Runs polisd from the project root and fails the test (killing the process) when it takes
/// longer than `limit`: a comparison that blows up must show as a failure, not a hung suite.
fn run_within(p: &TestPolis, args: &[&str], limit: std::time::Duration) -> Output {
    let mut child = Command::new(BIN)
        .args(args)
        .env("POLISD_STATE_DIR", &p.state_dir)
        .current_dir(project(p))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > limit {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!("polisd {} ran past {limit:?}", args[0]);
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

#[test]
fn a_path_longer_than_a_path_can_be_is_refused_in_one_short_line() {
    let p = polis();
    ok(&run(&p, &["reserve", "**/b", "--as", ALPHA]));
    let before = p.read(FILE);
    let deep = format!("{}x", "a/".repeat(60_000));
    let long_name = format!("src/{}.rs", "n".repeat(300));
    for path in [&deep, &long_name] {
        let err = refused(&run_within(
            &p,
            &["reserve", path, "--as", BRAVO],
            std::time::Duration::from_secs(20),
        ));
        assert!(err.contains("too long"), "{err}");
        assert!(err.len() < 400, "the path is not printed whole: {err}");
    }
    assert_eq!(p.read(FILE), before, "a refusal writes nothing");
}

#[test]
fn hand_written_huge_paths_neither_crash_nor_stall_check_or_reserve() {
    let p = polis();
    // Deep enough to overflow a recursive comparison, and two star-heavy names whose
    // comparison is quadratic in their length.
    let deep = "a/".repeat(60_000);
    let stars_a = "*a".repeat(3_000);
    let stars_b = format!("{}c", "*b".repeat(3_000));
    p.save(
        FILE,
        &format!(
            "reservations:\n- citizen: {ALPHA}\n  paths: ['**/b', '{stars_a}']\n\
             - citizen: {BRAVO}\n  paths: ['{deep}x', '{stars_b}']\n"
        ),
    );
    let limit = std::time::Duration::from_secs(20);
    let out = run_within(&p, &["check", "--json"], limit);
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "check ended with {:?}: {}",
        out.status,
        text(&out.stderr)
    );
    json(&out);
    ok(&run_within(
        &p,
        &["reserve", "docs/*.md", "--as", CHARLIE],
        limit,
    ));
}

/// `reserve` refuses a note on two lines (tests/agent_commands/one_line.rs); one written by
/// hand is still shown on its entry's line.
#[test]
fn a_note_or_path_with_a_line_break_cannot_forge_a_line_of_the_listing() {
    let p = polis();
    ok(&run(
        &p,
        &["reserve", "src/a.rs", "--as", ALPHA, "--note", "mine"],
    ));
    let mut file = p.read(FILE).replace(
        "note: mine",
        "note: \"mine\\n  bravo-agent: docs  until released\"",
    );
    assert!(file.contains("bravo-agent: docs"), "{file}");
    file.push_str(&format!(
        "- citizen: {CHARLIE}\n  paths:\n  - \"ops\\n  founder-one: everything\"\n  expires_at: null\n"
    ));
    p.save(FILE, &file);
    let out = ok(&run(&p, &["reservations"]));
    assert_eq!(
        out.lines()
            .filter(|l| !l.starts_with("    warning: "))
            .count(),
        3,
        "a header and one line per entry (and the warning about the path): {out}"
    );
    assert!(out.contains("holds a control character"), "{out}");
    assert!(
        !out.lines().any(|l| l.starts_with("  bravo-agent")),
        "{out}"
    );
    let err = refused(&run(&p, &["reserve", "ops*", "--as", BRAVO]));
    assert!(err.contains(CHARLIE), "{err}");
}

/// Every reservation command reads the whole file: one citizen's 100 KB notes would soon push
/// it past what polisd reads and lock everyone out of reserving.
#[test]
fn a_note_longer_than_a_message_is_refused_and_writes_nothing() {
    let p = polis();
    let long = "x".repeat(100_000);
    let err = refused(&run(
        &p,
        &["reserve", "src/a.rs", "--as", ALPHA, "--note", &long],
    ));
    assert!(err.contains("the note is 100000 characters"), "{err}");
    assert!(err.len() < 300, "one short line: {err}");
    assert!(!p.path(FILE).exists(), "nothing written");
    ok(&run(
        &p,
        &[
            "reserve",
            "src/a.rs",
            "--as",
            ALPHA,
            "--note",
            &"x".repeat(4000),
        ],
    ));
}

#[test]
fn unreadable_file_is_refused_not_overwritten() {
    let p = polis();
    p.save(FILE, "reservations: [\n  - citizen: alpha-agent\n");
    let err = refused(&run(&p, &["reserve", "src", "--as", BRAVO]));
    assert!(err.contains("reservations.yml line"), "{err}");
    assert_eq!(p.read(FILE), "reservations: [\n  - citizen: alpha-agent\n");
}

#[test]
fn check_reports_overlapping_entries_p012_odd_ones_p029_and_an_unreadable_file_p002() {
    let p = polis();
    p.save(
        FILE,
        &format!(
            "reservations:\n- citizen: {ALPHA}\n  paths: ['src/*.rs']\n  reserved_at: '{}'\n  expires_at: null\n\
             - citizen: {BRAVO}\n  paths: [src/lib.rs]\n  reserved_at: '{}'\n  expires_at: soon\n",
            stamp(-10),
            stamp(-5)
        ),
    );
    let out = run(&p, &["check", "--json"]);
    let v = json(&out);
    let codes: Vec<(&str, &str)> = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["path"] == FILE)
        .map(|f| (f["code"].as_str().unwrap(), f["severity"].as_str().unwrap()))
        .collect();
    assert_eq!(codes, [("P012", "warning"), ("P029", "warning")], "{v}");
    p.save(FILE, "reservations: [\n");
    let out = run(&p, &["check", "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let v = json(&out);
    assert!(
        v["findings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["path"] == FILE && f["code"] == "P002" && f["severity"] == "error"),
        "{v}"
    );
}

#[test]
fn daemon_leaves_an_unreadable_file_alone_and_is_not_stopped_by_it() {
    let p = polis();
    let daemon = p.start_daemon();
    p.save(FILE, "reservations: [\n");
    // A barrier: a bad chronicle line after the bad file draws its notice, so the daemon has
    // certainly been through the file.
    p.append(
        "chronicle.md",
        &format!("- {} | {ALPHA} | broken line\n", harness::chronicle_stamp()),
    );
    wait_for(&p, "the chronicle finding after the bad file", || {
        p.count(ALPHA, "chronicle-finding") == 1
    });
    wait_for(&p, "the bad file logged", || {
        daemon
            .log_text()
            .contains("reservations: reservations.yml line")
    });
    assert_eq!(p.read(FILE), "reservations: [\n", "left as it is");
    // A warning, not a failed pass (which would be retried, and logged, again and again).
    let log = daemon.log_text();
    assert!(
        !log.lines()
            .any(|l| l.contains("ERROR") && l.contains("reservations")),
        "{log}"
    );
}

#[test]
fn settle_and_abandon_commands_release_at_once_without_a_daemon() {
    let p = polis();
    for title in ["Fix login", "Write docs"] {
        ok(&run(
            &p,
            &[
                "contract", "open", "--title", title, "--by", FOUNDER, "--tags", "ops",
            ],
        ));
    }
    ok(&run(&p, &["contract", "claim", "fix-login", "--as", ALPHA]));
    ok(&run(
        &p,
        &["contract", "claim", "write-docs", "--as", BRAVO],
    ));
    ok(&run(
        &p,
        &[
            "reserve",
            "src/auth",
            "--as",
            ALPHA,
            "--contract",
            "fix-login",
        ],
    ));
    ok(&run(&p, &["reserve", "docs", "--as", BRAVO]));
    ok(&run(&p, &["reserve", "tests", "--as", CHARLIE]));
    let v = json(&run(
        &p,
        &[
            "contract",
            "settle",
            "fix-login",
            "--no-lesson",
            "the reservations are the point here",
            "--quality",
            "4",
            "--json",
        ],
    ));
    assert_eq!(
        v["reservations"]["paths"],
        serde_json::json!(["src/auth"]),
        "{v}"
    );
    let out = ok(&run(&p, &["contract", "abandon", "write-docs"]));
    assert!(out.contains("released reservations: docs"), "{out}");
    let left = json(&run(&p, &["reservations", "--json"]));
    let left = left["reservations"].as_array().unwrap();
    assert_eq!(left.len(), 1);
    assert_eq!(left[0]["citizen"], CHARLIE);
}

fn open_contract(id: &str, owner: &str) -> String {
    format!(
        "---\ncontract_id: {id}\ntitle: Contract {id}\nopened_by: {FOUNDER}\nopened_at: 2026-11-01 09:00:00\n\
         owner: {owner}\nstatus: claimed\nstakes: low\nrequired_tags: [ops]\ncost_ceiling: medium\n---\n\n\
         ## Intent\n\nDo {id}.\n"
    )
}

fn stamp(offset_minutes: i64) -> String {
    (chrono::Utc::now() + chrono::Duration::minutes(offset_minutes))
        .format("%Y-%m-%dT%H:%M:%S+00:00")
        .to_string()
}

#[test]
fn daemon_drops_expired_releases_ended_work_and_tells_overlaps() {
    let p = polis();
    p.save(
        "contracts/open/fix-login.md",
        &open_contract("fix-login", CHARLIE),
    );
    ok(&run(
        &p,
        &[
            "reserve",
            "ops/deploy.sh",
            "--as",
            CHARLIE,
            "--contract",
            "fix-login",
        ],
    ));
    let daemon = p.start_daemon();

    // Written by hand (or by the reference, which does not see globs): an expired lease, one
    // that runs out in a few seconds, and two citizens holding overlapping paths.
    let mut file = p.read(FILE);
    let soon = (chrono::Utc::now() + chrono::Duration::seconds(3))
        .format("%Y-%m-%dT%H:%M:%S+00:00")
        .to_string();
    file.push_str(&format!(
        "- citizen: {FOUNDER}\n  paths:\n  - old/thing\n  reserved_at: '{}'\n  expires_at: '{}'\n\
         - citizen: {FOUNDER}\n  paths:\n  - short/lease\n  reserved_at: '{}'\n  expires_at: '{soon}'\n\
         - citizen: {ALPHA}\n  paths:\n  - src/*.rs\n  reserved_at: '{}'\n  expires_at: null\n\
         - citizen: {BRAVO}\n  paths:\n  - src/lib.rs\n  reserved_at: '{}'\n  expires_at: null\n",
        stamp(-120),
        stamp(-60),
        stamp(-1),
        stamp(-10),
        stamp(-5),
    ));
    p.save(FILE, &file);
    wait_for(&p, "the expired entry dropped", || {
        !p.read(FILE).contains("old/thing")
    });
    // Nothing changes in the folder when the short lease ends: the daemon wakes for it.
    wait_for(&p, "the short lease dropped when it ran out", || {
        !p.read(FILE).contains("short/lease")
    });
    wait_for(&p, "a reservation-conflict notice to both holders", || {
        p.count(ALPHA, "reservation-conflict") == 1 && p.count(BRAVO, "reservation-conflict") == 1
    });
    let to_bravo = p.read(&format!("citizens/{BRAVO}/inbox.md"));
    assert!(
        to_bravo.contains(ALPHA) && to_bravo.contains("src/*.rs"),
        "{to_bravo}"
    );
    assert!(
        p.read(FILE).contains("ops/deploy.sh"),
        "an open contract's reservation stays"
    );

    // The contract ends: its reservation goes.
    let abandoned = open_contract("fix-login", CHARLIE).replace(
        "status: claimed",
        &format!("status: abandoned\nsettled_at: '{}'", stamp(0)),
    );
    p.save("contracts/abandoned/fix-login.md", &abandoned);
    std::fs::remove_file(p.path("contracts/open/fix-login.md")).unwrap();
    wait_for(&p, "the ended contract's reservation released", || {
        !p.read(FILE).contains("ops/deploy.sh")
    });
    // The overlap is still there and still told once.
    assert!(p.read(FILE).contains("src/lib.rs"));
    assert_eq!(p.count(ALPHA, "reservation-conflict"), 1);

    // Bravo reserved without --contract and owns no open contract: settling one releases it.
    let settled = open_contract("bravo-work", BRAVO).replace(
        "status: claimed",
        &format!(
            "status: settled\nsettled_at: {}\nquality_score: 4",
            chrono::Utc::now().format("%Y-%m-%d %H:%M:%S")
        ),
    );
    p.save("contracts/settled/bravo-work.md", &settled);
    wait_for(&p, "bravo's reservation released by the settlement", || {
        !p.read(FILE).contains("src/lib.rs")
    });
    assert!(p.read(FILE).contains("src/*.rs"), "alpha's stays");
    drop(daemon);
    // The daemon's own clean-up left a file the reference still reads.
    let out = reference_in(&project(&p), &["reservations"]);
    assert!(out.contains(ALPHA) && out.contains("src/*.rs"), "{out}");
}

#[test]
fn a_reservation_made_as_work_settles_or_before_a_future_stamp_is_kept() {
    let p = polis();
    let _daemon = p.start_daemon();
    ok(&run(&p, &["reserve", "next/step", "--as", ALPHA]));
    let listed = json(&run(&p, &["reservations", "--json"]));
    let reserved_at = listed["reservations"][0]["reserved_at"].as_str().unwrap();
    // `contract settle` stamps to the second, so settling and then reserving the next paths
    // at once gives both the same stamp; a machine whose clock runs ahead stamps the future.
    let same_second = reserved_at[..19].replace('T', " ");
    let ahead = (chrono::Utc::now() + chrono::Duration::hours(3))
        .format("%Y-%m-%d %H:%M:%S")
        .to_string();
    for (id, at) in [("just-done", same_second), ("clock-ahead", ahead)] {
        let settled = open_contract(id, ALPHA)
            .replace(
                &format!("opened_by: {FOUNDER}"),
                &format!("opened_by: {BRAVO}"),
            )
            .replace(
                "status: claimed",
                &format!("status: settled\nsettled_at: '{at}'\nquality_score: 4"),
            );
        p.save(&format!("contracts/settled/{id}.md"), &settled);
    }
    // The opener's notices come after the reservation step of the same pass.
    wait_for(&p, "both settlements seen", || {
        p.count(BRAVO, "contract-settled") == 2
    });
    assert!(
        p.read(FILE).contains("next/step"),
        "a reservation made after the work ended is kept: {}",
        p.read(FILE)
    );
}

// ---------------------------------------------------------------------------------------------
// Against the reference.

/// Runs the reference CLI (`polis …`) in `cwd`.
fn reference_cli(cwd: &Path, args: &[&str]) -> Output {
    Command::new(reference::reference_python())
        .arg("-c")
        .arg("import sys; from polis.cli import main; sys.exit(main(sys.argv[1:]))")
        .args(args)
        .current_dir(cwd)
        .output()
        .expect("run the reference CLI")
}

#[track_caller]
fn reference_in(cwd: &Path, args: &[&str]) -> String {
    let out = reference_cli(cwd, args);
    assert!(
        out.status.code().is_some_and(|c| c <= 1),
        "reference failed: {}",
        text(&out.stderr)
    );
    text(&out.stdout)
}

/// The file with every timestamp masked.
fn masked(text: &str) -> String {
    let re = regex::Regex::new(r"'\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?\+00:00'").unwrap();
    re.replace_all(text, "'<T>'").into_owned()
}

#[test]
fn same_arguments_same_file_as_the_reference_apart_from_timestamps() {
    let ours = polis();
    let theirs = polis();
    // Paths the reference does not mangle (no leading dot), and the calls both make.
    let steps: [&[&str]; 5] = [
        &[
            "reserve",
            "src/auth.rs",
            "docs/api",
            "--as",
            ALPHA,
            "--ttl-min",
            "30",
            "--note",
            "login: fix",
        ],
        &[
            "reserve",
            "tests/é.rs",
            "--as",
            BRAVO,
            "--note",
            "unicode ✓",
        ],
        &["reserve", "src/auth.rs", "--as", BRAVO],
        &["release", "docs", "--as", ALPHA],
        &["release", "--as", BRAVO],
    ];
    for step in steps {
        let a = run(&ours, step);
        let b = reference_cli(&project(&theirs), step);
        assert_eq!(
            a.status.code(),
            b.status.code(),
            "{step:?}: polisd {} / reference {}",
            text(&a.stderr),
            text(&b.stdout)
        );
        assert_eq!(
            masked(&ours.read(FILE)),
            masked(&theirs.read(FILE)),
            "after {step:?}"
        );
    }
}

#[test]
fn reference_reads_what_polisd_writes_and_polisd_reads_what_the_reference_writes() {
    let p = polis();
    let proj = project(&p);
    ok(&run(
        &p,
        &[
            "reserve",
            "src/auth.rs",
            "--as",
            ALPHA,
            "--ttl-min",
            "60",
            "--note",
            "n",
        ],
    ));
    // The reference sees polisd's entry as active (aware stamps compare) and refuses a
    // conflicting reservation, naming the holder.
    let listed = reference_in(&proj, &["reservations"]);
    assert!(
        listed.contains(ALPHA) && listed.contains("src/auth.rs"),
        "{listed}"
    );
    let out = reference_cli(&proj, &["reserve", "src/auth.rs", "--as", BRAVO]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stdout).contains(ALPHA));
    // The reference writes; polisd reads it and refuses in turn.
    reference_in(
        &proj,
        &["reserve", "lib/db.py", "--as", BRAVO, "--ttl-min", "60"],
    );
    let v = json(&run(&p, &["reservations", "--json"]));
    let entries = v["reservations"].as_array().unwrap();
    assert_eq!(entries.len(), 2, "{v}");
    assert_eq!(entries[1]["citizen"], BRAVO);
    assert_eq!(entries[1]["active"], true);
    let err = refused(&run(&p, &["reserve", "lib", "--as", CHARLIE]));
    assert!(err.contains(BRAVO), "{err}");
    // polisd releases an entry the reference wrote; the reference still reads the result.
    ok(&run(&p, &["release", "--as", BRAVO]));
    let listed = reference_in(&proj, &["reservations"]);
    assert!(
        !listed.contains(BRAVO) && listed.contains(ALPHA),
        "{listed}"
    );
}

/// A citizen who left the polis releases nothing by itself: without a daemon, the next citizen
/// who needs its paths gets them; with one, its entries go as its `left polis` line arrives.
#[test]
fn a_citizen_who_left_holds_nothing() {
    let p = polis();
    ok(&run(&p, &["reserve", "src/parser.rs", "--as", ALPHA]));
    ok(&run(&p, &["reserve", "docs/guide.md", "--as", CHARLIE]));
    let left = |who: &str| {
        p.append(
            "chronicle.md",
            &harness::chronicle_line(
                who,
                "left polis",
                &format!("[[citizens/{who}]]"),
                "moving on",
            ),
        );
    };
    // Still a member: the conflict names the holder.
    let err = refused(&run(&p, &["reserve", "src/parser.rs", "--as", BRAVO]));
    assert!(err.contains(ALPHA), "{err}");
    left(ALPHA);
    let out = ok(&run(
        &p,
        &["reserve", "src/parser.rs", "--as", BRAVO, "--json"],
    ));
    assert!(out.contains(BRAVO), "{out}");
    let file = p.read(FILE);
    assert!(
        !file.contains(ALPHA),
        "the entry of the citizen who left is gone: {file}"
    );
    assert!(
        file.contains("docs/guide.md"),
        "a member's entry stays: {file}"
    );

    // With a daemon: the line alone releases what its citizen held, once.
    let _daemon = p.start_daemon();
    left(CHARLIE);
    wait_for(
        &p,
        "the reservation of the citizen who left released",
        || !p.read(FILE).contains("docs/guide.md"),
    );
    assert!(p.read(FILE).contains("src/parser.rs"), "{}", p.read(FILE));
    // Said where the daemon says what it did and why, as for a contract's end. The daemon
    // records its activity after the write, so the line may come a moment later.
    let said = format!("released {CHARLIE}'s docs/guide.md: it left the polis");
    wait_for(&p, "the release said in the daemon's activity", || {
        let activity = ok(&run(&p, &["activity"]));
        activity.contains("reservations.yml") && activity.contains(&said)
    });
    // Back again: its new reservation holds.
    p.append(
        "chronicle.md",
        &harness::chronicle_line(
            CHARLIE,
            "joined polis",
            &format!("[[citizens/{CHARLIE}]]"),
            "back",
        ),
    );
    ok(&run(&p, &["reserve", "docs/guide.md", "--as", CHARLIE]));
    let err = refused(&run(&p, &["reserve", "docs/*.md", "--as", BRAVO]));
    assert!(err.contains(CHARLIE), "{err}");
}

/// A citizen who left is no member to reserve for, and what it held before leaving overlaps
/// nobody's work: without a daemon `check` counts no P012 for it, and `reserve` refuses it with
/// the way back, writing nothing. Back again (`joined polis`), it reserves as before.
#[test]
fn a_citizen_who_left_neither_reserves_nor_overlaps() {
    let p = polis();
    p.save(
        FILE,
        &format!(
            "reservations:\n- citizen: {ALPHA}\n  paths: ['src/*.rs']\n  reserved_at: '{}'\n  expires_at: null\n\
             - citizen: {BRAVO}\n  paths: [src/lib.rs]\n  reserved_at: '{}'\n  expires_at: null\n",
            stamp(-10),
            stamp(-5)
        ),
    );
    let overlaps = |p: &TestPolis| {
        let v = json(&run(p, &["check", "--json"]));
        v["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["code"] == "P012")
            .count()
    };
    assert_eq!(overlaps(&p), 1, "two members overlap");
    let membership = |who: &str, verb: &str| {
        p.append(
            "chronicle.md",
            &harness::chronicle_line(who, verb, &format!("[[citizens/{who}]]"), "-"),
        );
    };
    membership(ALPHA, "left polis");
    assert_eq!(
        overlaps(&p),
        0,
        "the entry of a citizen who left overlaps nobody's work"
    );

    let before = p.read(FILE);
    let out = run(&p, &["reserve", "docs/guide.md", "--as", ALPHA]);
    let err = refused(&out);
    assert!(
        err.contains("left the polis") && err.contains("joined polis"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert_eq!(p.read(FILE), before, "a refused reserve writes nothing");
    let out = run(&p, &["reserve", "docs/guide.md", "--as", ALPHA, "--json"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(json(&out)["error"]
        .as_str()
        .is_some_and(|e| e.contains("left the polis")));

    membership(ALPHA, "joined polis");
    ok(&run(&p, &["reserve", "docs/guide.md", "--as", ALPHA]));
    assert!(p.read(FILE).contains("docs/guide.md"));
}

/// Entries written by hand that guard nothing, or that nobody can release, are each named by
/// `check` (P029) on their line with their fix, and by the listing; a well-formed one draws
/// nothing.
#[test]
fn entries_written_wrong_by_hand_are_named_on_their_line_with_their_fix() {
    let p = polis();
    ok(&run(&p, &["reserve", "src/lib.rs", "--as", ALPHA]));
    let mut file = p.read(FILE);
    let first = file.lines().count() + 1;
    file.push_str(&format!(
        "- citizen: ghost-agent-nine\n  paths:\n  - src/b.rs\n  reserved_at: '2026-03-02T10:00:00+00:00'\n\
         - paths:\n  - src/c.rs\n\
         - citizen: {BRAVO}\n  paths: src/d.rs\n\
         - citizen: {BRAVO}\n  paths:\n  - /etc/passwd\n  - ../outside.txt\n  - ./src//e.rs\n\
         - citizen: {BRAVO}\n  paths: []\n\
         - just a string\n\
         - citizen: [{BRAVO}]\n  paths:\n  - src/f.rs\n  - SRC/F.rs\n  reserved_at: yesterday\n  expires_at: soon\n  note:\n    a: 1\n  expire_at: '2026-03-02T11:00:00+00:00'\n\
         - citizen: {ALPHA}\n  paths:\n  - src/Lib.rs\n  reserved_at: '2026-03-02T10:00:00+00:00'\n"
    ));
    p.save(FILE, &file);
    let out = run(&p, &["check", "--json"]);
    let findings = json(&out)["findings"].as_array().unwrap().clone();
    let about: Vec<(u64, String)> = findings
        .iter()
        .filter(|f| f["path"] == FILE && f["code"] == "P029")
        .map(|f| {
            (
                f["line"].as_u64().unwrap_or(0),
                f["message"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    // Lines counted from the first entry added above.
    let expected = [
        (0, "`ghost-agent-nine` is not a registered citizen"),
        (4, "names no `citizen`"),
        (4, "no `reserved_at`"),
        (6, "no `reserved_at`"),
        (7, "`paths: [src/d.rs]`"),
        (8, "no `reserved_at`"),
        (
            10,
            "`/etc/passwd` is read as `etc/passwd`, inside the project",
        ),
        (11, "`../outside.txt` is outside the project"),
        (12, "write it as `src/e.rs`"),
        (13, "no `reserved_at`"),
        (14, "holds no path"),
        (15, "not a mapping"),
        (16, "`citizen` is a list, not an id"),
        (19, "`SRC/F.rs` is listed twice in this entry"),
        (20, "`reserved_at` `yesterday` is not a time"),
        (21, "expires_at `soon` is not a time"),
        (22, "`note` is a mapping, not text"),
        (24, "did you mean `expires_at`?"),
        (
            27,
            "`src/Lib.rs` is held already by another entry of `alpha-agent`",
        ),
    ];
    for (offset, what) in expected {
        let line = (first + offset) as u64;
        assert!(
            about.iter().any(|(l, m)| *l == line && m.contains(what)),
            "no P029 on line {line} saying {what}: {about:#?}"
        );
    }
    assert_eq!(
        about.len(),
        expected.len(),
        "one finding per problem: {about:#?}"
    );
    let human = text(&run(&p, &["check"]).stdout);
    assert!(
        human.contains(&format!("{FILE}:{}", first + 20)),
        "the line is printed: {human}"
    );
    let listing = ok(&run(&p, &["reservations"]));
    assert!(listing.contains("names no `citizen`"), "{listing}");
}

/// The daemon tells the citizen whose entry is written wrong, as it tells a contract's author
/// of a finding: once, on its line, and not again after a restart.
#[test]
fn the_daemon_tells_the_citizen_whose_entry_is_written_wrong() {
    let p = polis();
    ok(&run(&p, &["reserve", "src/lib.rs", "--as", ALPHA]));
    let daemon = p.start_daemon();
    let mut file = p.read(FILE);
    file.push_str(&format!(
        "- citizen: {BRAVO}\n  paths:\n  - src/a.rs\n  - src/a.rs\n  reserved_at: '2026-03-02T10:00:00+00:00'\n"
    ));
    p.save(FILE, &file);
    let inbox = format!("citizens/{BRAVO}/inbox.md");
    wait_for(&p, "a record-finding notice to bravo", || {
        p.count(BRAVO, "record-finding") == 1
    });
    let told = p.read(&inbox);
    assert!(
        told.contains("P029") && told.contains("listed twice") && told.contains(FILE),
        "{told}"
    );
    assert!(told.contains("at line 11"), "the line is told: {told}");
    assert_eq!(p.count(ALPHA, "record-finding"), 0, "alpha's entry is fine");
    daemon.kill9();
    let _daemon = p.start_daemon();
    // A change to the file makes the daemon derive its notices again.
    ok(&run(&p, &["reserve", "docs", "--as", CHARLIE]));
    wait_for(&p, "charlie's reservation written", || {
        p.read(FILE).contains("docs")
    });
    ok(&run(&p, &["reserve", "ops", "--as", CHARLIE]));
    wait_for(&p, "the daemon's next pass over the file", || {
        _daemon.log_text().matches("reservations: true").count() >= 3
    });
    assert_eq!(
        p.count(BRAVO, "record-finding"),
        1,
        "told once: {}",
        p.read(&inbox)
    );
}

/// Two spellings of one file on macOS or Windows (letter case, `é` composed or decomposed)
/// are one reservation: the second citizen is told who holds it.
#[test]
fn a_path_spelled_another_way_is_held_too() {
    let p = polis();
    ok(&run(
        &p,
        &[
            "reserve",
            "src/Parser.rs",
            "docs/caf\u{e9}.md",
            "--as",
            ALPHA,
        ],
    ));
    for other in ["src/parser.rs", "docs/cafe\u{301}.md"] {
        let err = refused(&run(&p, &["reserve", other, "--as", BRAVO]));
        assert!(err.contains(ALPHA), "{other}: {err}");
    }
    ok(&run(&p, &["reserve", "src/parser.rs.orig", "--as", BRAVO]));
}

/// Case is folded letter by letter, as macOS and Windows do: a name ending in `Σ` is the same
/// file as the one ending in `σ` or `ς`, and `ſ` is an `s`.
#[test]
fn a_name_is_held_whatever_the_case_of_each_of_its_letters() {
    let p = polis();
    ok(&run(
        &p,
        &[
            "reserve",
            "docs/\u{39f}\u{394}\u{39f}\u{3a3}/a.md",
            "--as",
            ALPHA,
        ],
    ));
    for other in [
        "docs/\u{3bf}\u{3b4}\u{3bf}\u{3c3}/a.md",
        "docs/\u{3bf}\u{3b4}\u{3bf}\u{3c2}/a.md",
    ] {
        let err = refused(&run(&p, &["reserve", other, "--as", BRAVO]));
        assert!(err.contains(ALPHA), "{other}: {err}");
    }
    ok(&run(&p, &["reserve", "\u{17f}rc/lib.rs", "--as", ALPHA]));
    let err = refused(&run(&p, &["reserve", "src/lib.rs", "--as", BRAVO]));
    assert!(err.contains(ALPHA), "{err}");
}

/// A `left polis` line releases what its citizen held then, not what it reserved after: a
/// second machine whose chronicle has not yet received the citizen's `joined polis` line must
/// not lose the reservation the citizen made on coming back (it arrives by the sync, as
/// written here; `reserve` itself refuses a citizen whose chronicle says it left). Reserved
/// within the minute of the line, an entry counts as held then (the line's stamp has no
/// seconds).
#[test]
fn a_reservation_made_after_its_citizen_left_outlives_that_leave() {
    let p = polis();
    let ten_minutes_ago = (chrono::Utc::now() - chrono::Duration::minutes(10))
        .format("%Y-%m-%d %H:%M")
        .to_string();
    p.append(
        "chronicle.md",
        &format!("- {ten_minutes_ago} | {ALPHA} | left polis | [[citizens/{ALPHA}]] | moving on\n"),
    );
    p.save(
        FILE,
        &format!(
            "reservations:\n- citizen: {ALPHA}\n  paths: [src/parser.rs]\n  reserved_at: '{}'\n  expires_at: null\n",
            stamp(0)
        ),
    );
    // Without a daemon: the entry is newer than the leave, so it holds.
    let err = refused(&run(&p, &["reserve", "src/parser.rs", "--as", BRAVO]));
    assert!(err.contains(ALPHA), "{err}");
    // With one: its first pass keeps it too.
    let daemon = p.start_daemon();
    assert!(p.read(FILE).contains("src/parser.rs"), "{}", p.read(FILE));
    // A leave after the reservation releases it, once.
    p.append(
        "chronicle.md",
        &harness::chronicle_line(
            ALPHA,
            "left polis",
            &format!("[[citizens/{ALPHA}]]"),
            "again",
        ),
    );
    wait_for(&p, "the reservation released by the later leave", || {
        !p.read(FILE).contains("src/parser.rs")
    });
    drop(daemon);
    ok(&run(&p, &["reserve", "src/parser.rs", "--as", BRAVO]));
}

/// The release on leaving is derived from the folder: a restarted daemon, or one on a second
/// machine (its own state folder), finds nothing more to release and writes nothing, and the
/// reservation the citizen made on coming back stays.
#[test]
fn a_restart_or_a_second_machine_releases_nothing_twice() {
    let p = polis();
    ok(&run(&p, &["reserve", "docs/guide.md", "--as", CHARLIE]));
    let daemon = p.start_daemon();
    let membership = |verb: &str| {
        p.append(
            "chronicle.md",
            &harness::chronicle_line(CHARLIE, verb, &format!("[[citizens/{CHARLIE}]]"), "-"),
        );
    };
    membership("left polis");
    wait_for(
        &p,
        "the reservation of the citizen who left released",
        || !p.read(FILE).contains("docs/guide.md"),
    );
    membership("joined polis");
    ok(&run(&p, &["reserve", "docs/api.md", "--as", CHARLIE]));
    let before = p.read(FILE);
    daemon.kill9();
    let restarted = p.start_daemon();
    assert_eq!(p.read(FILE), before, "a restart releases nothing");
    drop(restarted);
    let other_state = p.dir.path().join("other-machine-state");
    let _other = p.start_daemon_with(&[("POLISD_STATE_DIR", other_state.as_path())]);
    assert_eq!(p.read(FILE), before, "a second machine releases nothing");
    let other = Command::new(BIN)
        .args(["activity"])
        .env("POLISD_STATE_DIR", &other_state)
        .current_dir(project(&p))
        .output()
        .unwrap();
    let said = text(&other.stdout);
    assert!(!said.contains("released"), "{said}");
    let here = ok(&run(&p, &["activity"]));
    assert_eq!(here.matches("it left the polis").count(), 1, "{here}");
}

/// A name that folding lengthens (`Ⱥ` is two bytes, `ⱥ` three) is still compared: the folder
/// above it holds it.
#[test]
fn a_long_name_that_folding_lengthens_is_held_by_its_folder() {
    let p = polis();
    ok(&run(&p, &["reserve", "docs", "--as", ALPHA]));
    let long = format!("docs/{}", "\u{23a}".repeat(127));
    let err = refused(&run(&p, &["reserve", &long, "--as", BRAVO]));
    assert!(err.contains(ALPHA), "{err}");
}
