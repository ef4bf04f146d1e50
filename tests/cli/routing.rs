//! `polisd reconcile` (on a polis the reference built, and on thousands of settlements) and
//! `polisd bench routing`.

use super::{copy_tree, describe, json, polisd_in, reference_ok, stdout, FOUNDER};
use crate::harness::{TestPolis, BIN};
use std::process::Command;

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
