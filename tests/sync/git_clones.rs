//! Clones synced by real `git` operations through polisd's merge driver: two daemons converge,
//! roll the chronicle over once, merge late lines and votes without a conflict, and never route
//! into another contract through git's rename detection.

use super::{
    assert_converged, commit_all, founded_repo, git, git_command, project, pull, quiet, settled,
    tree, two_clones, ALPHA, BETA, FOUNDER,
};
use crate::harness::{self, *};
use std::fs;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

#[test]
fn two_daemons_on_two_git_clones_converge() {
    let (_origin, a, b) = two_clones();
    let (project_a, project_b) = (project(&a), project(&b));

    let _da = a.start_daemon();
    let _db = b.start_daemon();
    let mut lines = Vec::new();

    // Each side: an agent's line, a settlement (committed at once, before its daemon writes
    // anything, so the other daemon derives the same notices on its own), a new contract.
    let la = chronicle_line(ALPHA, "noted", "-", "working on the parser");
    a.append("chronicle.md", &la);
    // The settlement suggests a next citizen: each daemon dispatches the follow-up
    // on its own, A's now and B's once it pulls the settlement.
    let parser = settled("parser", BETA, ALPHA, 5, "2026-03-02 10:00:00").replace(
        "Done.\n",
        &format!("Done.\n\n### Suggested next citizen\n- **Citizen**: {BETA}\n- **Reason**: Fuzz the parser.\n- **Context**: src/parser.rs\n"),
    );
    a.save("contracts/settled/parser.md", &parser);
    git(&project_a, &["add", "_polis/contracts/settled/parser.md"]);
    git(&project_a, &["commit", "-qm", "settle parser"]);
    git(&project_a, &["push", "-q", "origin", "main"]);
    let follow_up = "contracts/open/parser-next-1.md";
    wait_for(&a, "A's follow-up contract", || {
        a.root.join(follow_up).is_file() && a.count(BETA, "handoff-opened") == 1
    });
    let dispatched_on_a = Instant::now();
    // On B the agents use polisd's commands instead of editing files: open, claim
    // and settle a contract, and log a line; every one appends its chronicle line.
    let line_of = |out: std::process::Output| -> String {
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let line = v["line"].as_str().or(v["chronicle"]["line"].as_str());
        format!("{}\n", line.unwrap())
    };
    let lb = line_of(b.polisd(&[
        "log",
        "--as",
        BETA,
        "noted",
        "--note",
        "working on the lexer",
        "--json",
    ]));
    let opened = line_of(b.polisd(&[
        "contract", "open", "--title", "Lexer", "--by", ALPHA, "--tags", "rust", "--json",
    ]));
    let claimed = line_of(b.polisd(&["contract", "claim", "lexer", "--as", BETA, "--json"]));
    let settled_b = line_of(b.polisd(&[
        "contract",
        "settle",
        "lexer",
        "--no-lesson",
        "sync is the point here",
        "--quality",
        "3",
        "--minutes",
        "15",
        "--json",
    ]));
    assert!(opened.contains("opened contract"));
    lines.extend([la, lb, claimed, settled_b]);
    // Both daemons notify the opener of the settlement they see.
    wait_for(&a, "A's contract-settled notice", || {
        a.count(BETA, "contract-settled") == 1
    });
    wait_for(&b, "B's contract-settled notice", || {
        b.count(ALPHA, "contract-settled") == 1
    });
    // B dispatches in a later second than A did: a follow-up stamped with the wall clock
    // would differ between the machines, and git would stop on an add/add conflict.
    while dispatched_on_a.elapsed() < Duration::from_millis(1100) {
        std::thread::sleep(Duration::from_millis(50));
    }
    git(
        &project_b,
        &["pull", "-q", "--no-rebase", "--no-edit", "origin", "main"],
    );
    // B's daemon now sees `parser` too and tells beta, as A's did on A, and opens the same
    // follow-up, byte for byte.
    wait_for(&b, "B's notice about the pulled settlement", || {
        b.count(BETA, "contract-settled") == 1
            && b.root.join(follow_up).is_file()
            && b.count(BETA, "handoff-opened") == 1
    });
    assert_eq!(b.read(follow_up), a.read(follow_up));

    // Sync until nothing is left to commit: every side commits what it has, B merges A's
    // history and pushes, A pulls.
    for _ in 0..4 {
        quiet(&a);
        quiet(&b);
        for project in [&project_a, &project_b] {
            git(project, &["add", "-A"]);
            if !git(project, &["status", "--porcelain"]).is_empty() {
                git(project, &["commit", "-qm", "sync"]);
            }
        }
        git(
            &project_a,
            &["pull", "-q", "--no-rebase", "--no-edit", "origin", "main"],
        );
        git(&project_a, &["push", "-q", "origin", "main"]);
        git(
            &project_b,
            &["pull", "-q", "--no-rebase", "--no-edit", "origin", "main"],
        );
        git(&project_b, &["push", "-q", "origin", "main"]);
        git(
            &project_a,
            &["pull", "-q", "--no-rebase", "--no-edit", "origin", "main"],
        );
        quiet(&a);
        quiet(&b);
        let clean = |p: &Path| git(p, &["status", "--porcelain"]).is_empty();
        if clean(&project_a) && clean(&project_b) {
            break;
        }
    }
    assert_converged(&a, &b, &lines);
    assert_eq!(a.count(BETA, "contract-settled"), 1);
    assert_eq!(a.count(ALPHA, "contract-settled"), 1);
    assert_eq!(a.count(BETA, "handoff-opened"), 1);
    let chronicle = a.read("chronicle.md");
    assert_eq!(
        chronicle
            .lines()
            .filter(|l| l.contains("| opened contract | [[contracts/open/parser-next-1]]"))
            .count(),
        1,
        "the follow-up's line once:\n{chronicle}"
    );
}

/// SPEC §3 rollover with two daemons: both roll the same chronicle over at the start of a
/// quarter and write the same bytes, so git merges their work without a conflict and the
/// polis holds one archive and one `rolled over chronicle` line.
#[test]
fn rollover_happens_once_with_two_daemons() {
    let (_origin, a, b) = two_clones();
    let (project_a, project_b) = (project(&a), project(&b));
    // The chronicle's first line is from this quarter; move the clock to the next one.
    let first = a.read("chronicle.md");
    let next_quarter = {
        let stamp = first
            .lines()
            .find(|l| l.contains("founded polis"))
            .map(|l| l[2..12].to_string())
            .unwrap();
        let (y, m) = (
            stamp[..4].parse::<i32>().unwrap(),
            stamp[5..7].parse::<u32>().unwrap(),
        );
        let q = (m - 1) / 3 + 1;
        if q == 4 {
            format!("{}-01-01T00:07:00Z", y + 1)
        } else {
            format!("{y}-{:02}-01T00:07:00Z", q * 3 + 1)
        }
    };
    for p in [&a, &b] {
        let now_file = p.dir.path().join("now");
        fs::write(&now_file, &next_quarter).unwrap();
        fs::write(
            p.dir.path().join("polisd.toml"),
            "[watch]\ndebounce = \"50ms\"\n\n[behaviour]\nrollover = true\n\n[log]\nlevel = \"debug\"\n",
        )
        .unwrap();
    }
    let start = |p: &TestPolis| {
        let log = fs::File::create(p.dir.path().join("daemon.log")).unwrap();
        Command::new(BIN)
            .arg("run")
            .arg(&p.root)
            .arg("--config")
            .arg(p.dir.path().join("polisd.toml"))
            .env("POLISD_STATE_DIR", &p.state_dir)
            .env("POLISD_FAKE_NOW_FILE", p.dir.path().join("now"))
            .stderr(log)
            .spawn()
            .unwrap()
    };
    struct Kill(std::process::Child);
    impl Drop for Kill {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let _da = Kill(start(&a));
    let _db = Kill(start(&b));
    let archives = |p: &TestPolis| -> Vec<String> {
        fs::read_dir(&p.root)
            .unwrap()
            .flatten()
            .filter_map(|e| e.file_name().to_str().map(str::to_string))
            .filter(|n| n.starts_with("chronicle-"))
            .collect()
    };
    let deadline = Instant::now() + DEADLINE;
    while archives(&a).is_empty() || archives(&b).is_empty() {
        assert!(Instant::now() < deadline, "both daemons roll over");
        std::thread::sleep(Duration::from_millis(20));
    }
    quiet(&a);
    quiet(&b);
    assert_eq!(a.read("chronicle.md"), b.read("chronicle.md"));
    for (project, msg) in [
        (&project_a, "rolled over on A"),
        (&project_b, "rolled over on B"),
    ] {
        git(project, &["add", "-A"]);
        git(project, &["commit", "-qm", msg]);
    }
    git(&project_a, &["push", "-q", "origin", "main"]);
    git(
        &project_b,
        &["pull", "-q", "--no-rebase", "--no-edit", "origin", "main"],
    );
    git(&project_b, &["push", "-q", "origin", "main"]);
    git(
        &project_a,
        &["pull", "-q", "--no-rebase", "--no-edit", "origin", "main"],
    );
    quiet(&a);
    quiet(&b);
    assert_eq!(archives(&a), archives(&b));
    assert_eq!(archives(&a).len(), 1);
    let chronicle = a.read("chronicle.md");
    assert_eq!(
        chronicle.matches("rolled over chronicle").count(),
        1,
        "{chronicle}"
    );
    assert_eq!(tree(&a.root), tree(&b.root));
}

/// A line from a branch merged days later sits among its peers in timestamp order: it is late,
/// not backdated, and its author is not told otherwise (C005 compares with the lines before it
/// in the merged file, not with the end of the old one).
#[test]
fn a_line_merged_from_an_old_branch_is_not_reported_as_backdated() {
    let (p, project) = founded_repo();
    assert!(p.polisd(&["git-setup", "--program", BIN]).status.success());
    git(&project, &["add", "-A"]);
    git(&project, &["commit", "-qm", "found"]);
    // The branch's line is three days older than the founding line on main.
    let old = (chrono::Utc::now() - chrono::Duration::days(3))
        .format("%Y-%m-%d %H:%M")
        .to_string();
    git(&project, &["checkout", "-qb", "old-branch"]);
    let line = format!("- {old} | {ALPHA} | noted | - | written on a branch\n");
    p.append("chronicle.md", &line);
    git(&project, &["commit", "-qam", "a line on a branch"]);
    git(&project, &["checkout", "-q", "main"]);
    for note in ["on main", "still on main"] {
        p.append("chronicle.md", &chronicle_line(BETA, "noted", "-", note));
    }
    git(&project, &["commit", "-qam", "lines on main"]);
    let daemon = p.start_daemon();
    git(&project, &["merge", "-q", "--no-edit", "old-branch"]);
    let chronicle = p.read("chronicle.md");
    assert!(chronicle.find(&line).unwrap() < chronicle.find("founded polis").unwrap());
    // The daemon has read the merged file when a line appended after it is reported.
    p.append("chronicle.md", &chronicle_line(BETA, "NOTED", "-", "probe"));
    wait_for(&p, "the probe's C008 notice", || {
        p.count(BETA, "chronicle-finding") == 1
    });
    assert_eq!(
        p.count(ALPHA, "chronicle-finding"),
        0,
        "{}\n{}",
        daemon.log_text(),
        p.read("chronicle.md")
    );
}

/// A checkout of another branch, or of an older commit, leaves the lines committed since
/// behind, and `git stash` sets aside lines not committed yet: they are in the repository, not
/// lost, so nobody is told (a notice would say "append it again" and dirty a tracked inbox).
/// A committed line deleted in the work tree, and a line reset away, are still told.
#[test]
fn a_checkout_leaves_lines_behind_untold_but_a_deletion_or_a_reset_is_told() {
    let (p, project) = founded_repo();
    commit_all(&p, "found");
    git(&project, &["branch", "side"]);
    let lines: Vec<String> = (1..=3)
        .map(|i| chronicle_line(ALPHA, "noted", "-", &format!("on main {i}")))
        .collect();
    for line in &lines {
        p.append("chronicle.md", line);
    }
    commit_all(&p, "lines on main");
    let daemon = p.start_daemon();
    let left_behind = || {
        daemon
            .log_text()
            .matches("left behind by a checkout")
            .count()
    };

    git(&project, &["checkout", "-q", "side"]);
    let told = || p.count(ALPHA, "chronicle-finding");
    wait_for(&p, "the lines main holds to be left behind", || {
        left_behind() == 3 || told() > 0
    });
    assert_eq!(told(), 0, "{}", daemon.log_text());
    git(&project, &["checkout", "-q", "main"]);
    // Logged by a command, the line is known to the daemon whether or not it read it before
    // the next checkout.
    assert!(p
        .polisd(&["log", "--as", ALPHA, "on main 4"])
        .status
        .success());
    commit_all(&p, "a fourth line");
    git(&project, &["checkout", "-q", "--detach", "HEAD~1"]);
    wait_for(&p, "the newer commit's line to be left behind", || {
        left_behind() == 4 || told() > 0
    });
    git(&project, &["checkout", "-q", "main"]);
    // A line not committed yet, set aside by `git stash` while the branch is pulled.
    assert!(p
        .polisd(&["log", "--as", ALPHA, "not committed yet"])
        .status
        .success());
    git(&project, &["stash", "-q"]);
    wait_for(&p, "the stashed line to be left behind", || {
        left_behind() == 5 || told() > 0
    });
    git(&project, &["stash", "pop", "-q"]);
    commit_all(&p, "the stashed line");
    quiet(&p);
    assert_eq!(told(), 0, "{}", daemon.log_text());
    assert_eq!(git(&project, &["status", "--porcelain"]), "");

    // A line committed on this branch, deleted by hand.
    let text = p.read("chronicle.md");
    p.save("chronicle.md", &text.replace(&lines[0], ""));
    wait_for(&p, "the deleted line's C009", || told() == 1);
    git(&project, &["checkout", "--", "_polis/chronicle.md"]);
    // Lines of a commit no other branch holds, reset away.
    for i in 1..=2 {
        let note = format!("to reset {i}");
        assert!(p.polisd(&["log", "--as", BETA, &note]).status.success());
    }
    commit_all(&p, "lines to reset");
    git(&project, &["reset", "-q", "--hard", "HEAD~1"]);
    wait_for(&p, "the C009s of the lines reset away", || {
        p.count(BETA, "chronicle-finding") == 2
    });
}

/// `polisd init --git-setup` registers the driver in a new repository's clone; outside a
/// repository it is refused before anything is written.
#[test]
fn init_with_git_setup_registers_the_driver_and_refuses_outside_git() {
    let d = tempfile::tempdir().unwrap();
    let outside = d.path().join("plain");
    fs::create_dir_all(&outside).unwrap();
    let init = |project: &Path| {
        Command::new(BIN)
            .arg("init")
            .arg(project)
            .args(["--agent-id", FOUNDER, "--git-setup"])
            .env("POLISD_STATE_DIR", d.path().join("state"))
            .output()
            .unwrap()
    };
    if !harness::inside_git(&outside) {
        let out = init(&outside);
        assert_eq!(out.status.code(), Some(1));
        assert!(
            !outside.join("_polis").exists(),
            "written before the refusal"
        );
    }
    let repo = d.path().join("repo");
    fs::create_dir_all(&repo).unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    let out = init(&repo);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(git(&repo, &["config", "--get", "merge.polisd.driver"])
        .contains("merge-driver %O %A %B %P"));
    let attributes = fs::read_to_string(repo.join("_polis/.gitattributes")).unwrap();
    assert!(
        attributes.contains("chronicle.md merge=polisd"),
        "{attributes}"
    );
}

/// Two machines vote on one amendment in the same minute: each vote is a file of its own, git
/// merges them without a conflict, and the tally counts both.
#[test]
fn two_machines_voting_on_one_amendment_merge_and_both_count() {
    let (_origin, a, b) = two_clones();
    b.citizen("gamma-agent-three", "google", &[("rust", 2)], "low");
    let out = a.polisd(&[
        "amendment",
        "propose",
        "--title",
        "Reviews for high stakes",
        "--by",
        FOUNDER,
        "--quorum",
        "4",
        "--json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let aid = v["amendment_id"].as_str().unwrap().to_string();
    commit_all(&a, "propose");
    git(&project(&a), &["push", "-q", "origin", "main"]);
    commit_all(&b, "gamma");
    pull(&b);
    for (p, who) in [(&a, ALPHA), (&b, BETA)] {
        let out = p.polisd(&["amendment", "vote", &aid, "--as", who, "--vote", "agree"]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        commit_all(p, "vote");
    }
    git(&project(&b), &["push", "-q", "origin", "main"]);
    pull(&a); // panics on a conflict
    let list: serde_json::Value =
        serde_json::from_slice(&a.polisd(&["amendment", "list", "--json"]).stdout).unwrap();
    let agree = list["amendments"][0]["votes"]["agree"].to_string();
    assert!(agree.contains(ALPHA) && agree.contains(BETA), "{list}");
    for (rel, bytes) in tree(&a.root) {
        assert!(
            !String::from_utf8_lossy(&bytes).contains("<<<<<<<"),
            "{rel}"
        );
    }
    // The tally counts both votes: with the proposer's, 3 of the 4 the quorum asks; gamma's
    // makes 4 and ratifies it.
    let out = a.polisd(&[
        "amendment",
        "vote",
        &aid,
        "--as",
        "gamma-agent-three",
        "--vote",
        "agree",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let _daemon = a.start_daemon();
    wait_for(&a, "the ratification", || {
        a.exists(&format!("amendments/ratified/{aid}.md"))
    });
}

/// One citizen votes agree on one machine and disagree on the other: both write the same vote
/// file, git stops on a conflict, and an agent that commits the merge as it stands leaves
/// git's markers in it. The tally cannot count that vote; `check` and `tally` name the file and
/// its line instead of leaving the vote out in silence.
#[test]
fn one_citizen_voting_two_ways_on_two_machines_is_reported_not_dropped() {
    let (_origin, a, b) = two_clones();
    let out = a.polisd(&[
        "amendment",
        "propose",
        "--title",
        "Reviews for high stakes",
        "--by",
        FOUNDER,
        "--quorum",
        "3",
        "--json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let aid = v["amendment_id"].as_str().unwrap().to_string();
    commit_all(&a, "propose");
    git(&project(&a), &["push", "-q", "origin", "main"]);
    pull(&b);
    for (p, vote) in [(&a, "agree"), (&b, "disagree")] {
        let out = p.polisd(&["amendment", "vote", &aid, "--as", ALPHA, "--vote", vote]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        commit_all(p, "vote");
    }
    git(&project(&b), &["push", "-q", "origin", "main"]);
    let merge = git_command(
        &project(&a),
        &["pull", "-q", "--no-rebase", "--no-edit", "origin", "main"],
    )
    .output()
    .unwrap();
    assert!(!merge.status.success(), "the two votes merged cleanly");
    let rel = format!("amendments/votes/{aid}/{ALPHA}.md");
    assert!(a.read(&rel).contains("<<<<<<<"), "{}", a.read(&rel));
    commit_all(&a, "merge");
    let out = a.polisd(&["check", "--json"]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let on_vote: Vec<&serde_json::Value> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["path"] == rel.as_str())
        .collect();
    assert_eq!(on_vote.len(), 1, "{report:#}");
    assert_eq!(on_vote[0]["code"], "P023", "{report:#}");
    assert!(on_vote[0]["line"].is_u64(), "{report:#}");
    let tally = a.polisd(&["tally", "--dry-run"]);
    let text = String::from_utf8_lossy(&tally.stdout);
    assert!(text.contains(&format!("malformed {rel}")), "{text}");
}

/// git's rename detection pairs template-similar contracts: A routes X while B settles X and
/// opens a similar Y, and on A's pull A's routing edit would land in Y. polisd writes a
/// routing block only into a contract still local to its clone; a committed one is routed by
/// notice alone, so nothing of A's lands in Y.
#[test]
fn a_routing_never_lands_in_another_contract_through_a_rename() {
    let (_origin, a, b) = two_clones();
    let body = "\n## Intent\n\nMake the parser faster on large inputs, with benchmarks and a short report of what changed and why.\n\n## Acceptance\n\n- Benchmarks in benches/.\n- No regression in the test suite.\n";
    let contract = |id: &str| {
        format!("---\ncontract_id: {id}\ntitle: {id}\nopened_by: {FOUNDER}\nopened_at: 2026-03-02 10:00\nowner: null\nstatus: proposed\nrequired_tags: [rust]\nrouting:\n  recommended_by_router: null\n---\n{body}")
    };
    b.save("contracts/open/x.md", &contract("x"));
    commit_all(&b, "open x");
    git(&project(&b), &["push", "-q", "origin", "main"]);
    let daemon = a.start_daemon();
    pull(&a);
    // A's daemon routes X by notice: the committed file stays as it is.
    wait_for(&a, "the routing notice", || {
        [ALPHA, BETA, FOUNDER]
            .iter()
            .map(|c| a.count(c, "contract-routed"))
            .sum::<usize>()
            == 1
    });
    assert_eq!(a.read("contracts/open/x.md"), contract("x"));
    drop(daemon);
    // B settles X and opens Y, a contract much like X.
    let settled_x = contract("x")
        .replace("owner: null", &format!("owner: {ALPHA}"))
        .replace(
            "status: proposed",
            "status: settled\nsettled_at: 2026-03-02 11:00\nquality_score: 4",
        )
        + "\n## Settlement\n\nDone.\n";
    b.save("contracts/settled/x.md", &settled_x);
    fs::remove_file(b.path("contracts/open/x.md")).unwrap();
    b.save("contracts/open/y.md", &contract("y"));
    commit_all(&b, "settle x, open y");
    git(&project(&b), &["push", "-q", "origin", "main"]);
    commit_all(&a, "a's work");
    pull(&a);
    assert_eq!(a.read("contracts/open/y.md"), contract("y"));
    assert!(!a.exists("contracts/open/x.md"));

    // A contract opened on this clone and not committed yet is routed in place.
    a.save("contracts/open/z.md", &contract("z"));
    let _daemon = a.start_daemon();
    wait_for(&a, "z's routing block", || {
        !a.read("contracts/open/z.md")
            .contains("recommended_by_router: null")
    });
}

/// The entry routine's catch-up across a real `git pull`: work another machine did before this
/// citizen's last session is merged into the chronicle in stamp order, before its cursor, and
/// the next primer still shows it, once.
#[test]
fn a_primer_shows_a_line_another_clone_merged_in_before_the_cursor() {
    let (_origin, a, b) = two_clones();
    let prime = |p: &TestPolis| -> serde_json::Value {
        let out = ok(p.polisd(&["prime", "--as", ALPHA, "--json"]));
        serde_json::from_slice(&out.stdout).unwrap()
    };
    ok(a.polisd(&["log", "--as", ALPHA, "noted", "--note", "parser half done"]));
    prime(&a);
    commit_all(&a, "alpha's session");

    // B worked offline two hours ago; its commit reaches A only now.
    let earlier = (chrono::Utc::now() - chrono::Duration::hours(2)).format("%Y-%m-%d %H:%M");
    let offline = format!("- {earlier} | {BETA} | noted | - | lexer rewritten offline");
    b.append("chronicle.md", &format!("{offline}\n"));
    commit_all(&b, "beta's offline work");
    git(&project(&b), &["push", "-q", "origin", "main"]);
    pull(&a);
    let chronicle = a.read("chronicle.md");
    let merged_at = chronicle
        .find(&offline)
        .expect("the merge brought B's line");
    assert!(
        merged_at < chronicle.find("parser half done").unwrap(),
        "the merge sorts B's line before A's:\n{chronicle}"
    );

    let second = prime(&a);
    let md = second["markdown"].as_str().unwrap();
    assert_eq!(second["since_last_seen"]["events"], 1, "{md}");
    assert_eq!(second["since_last_seen"]["late"], 1, "{md}");
    assert!(md.contains("lexer rewritten offline"), "{md}");
    assert!(md.contains("1 of them merged in from another copy"), "{md}");
    let third = prime(&a);
    assert_eq!(third["since_last_seen"]["events"], 0, "{third}");
}
