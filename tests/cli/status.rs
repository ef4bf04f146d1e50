//! `polisd status`: the polis at a glance, in text and JSON, and whether a daemon watches it.

use super::{contract, describe, json, keys, set, stdout, FOUNDER};
use crate::harness::TestPolis;
use serde_json::Value;
use std::process::Command;

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

/// An amendment at quorum moves only when a tally runs: status says what a tally would do, in
/// words, and who runs one.
#[test]
fn status_says_what_a_tally_would_do_and_who_tallies() {
    let p = busy_polis();
    let out = p.polisd(&[
        "amendment",
        "vote",
        "2026-11-01-quality-floor",
        "--as",
        "codex-second-two",
        "--vote",
        "agree",
    ]);
    assert!(out.status.success(), "{}", describe(&out));
    let text = stdout(&p.polisd(&["status"]));
    for needle in [
        "a tally would ratify it",
        "who tallies: no daemon watches this polis; run `polisd tally`",
    ] {
        assert!(text.contains(needle), "no `{needle}` in:\n{text}");
    }
    assert!(!text.contains("next tally:"), "{text}");
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

#[test]
fn status_says_which_contract_each_citizen_works_on() {
    // A claim writes the contract, not the citizen's status.md: its self-reported state stays
    // `idle`, and the row says what it holds beside it, as the dashboard's overview does.
    let p = busy_polis();
    for args in [
        &["contract", "open", "--title", "Open three", "--as", FOUNDER][..],
        &[
            "contract",
            "claim",
            "open-three",
            "--as",
            "codex-second-two",
        ],
    ] {
        let out = p.polisd(args);
        assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    }
    let text = stdout(&p.polisd(&["status"]));
    let header = text.lines().find(|l| l.contains("LAST ACTIVITY")).unwrap();
    assert!(header.contains("WORKING ON"), "{header}");
    let row = text
        .lines()
        .find(|l| l.contains("codex-second-two"))
        .unwrap();
    assert!(row.contains("open-three"), "{row}");
    let founder_row = text.lines().find(|l| l.contains(FOUNDER)).unwrap();
    assert!(!founder_row.contains("open-"), "{founder_row}");
    let s = json(&p.polisd(&["status", "--json"]));
    let working_on = |id: &str| {
        s["citizens"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["id"] == id)
            .unwrap()["working_on"]
            .clone()
    };
    assert_eq!(working_on("codex-second-two"), "open-three");
    assert_eq!(working_on(FOUNDER), Value::Null);
    // Settled, it holds nothing.
    let out = p.polisd(&[
        "contract",
        "settle",
        "open-three",
        "--quality",
        "4",
        "--as",
        "codex-second-two",
        "--no-lesson",
        "nothing to learn here",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    let row = stdout(&p.polisd(&["status"]))
        .lines()
        .find(|l| l.contains("codex-second-two"))
        .unwrap()
        .to_string();
    assert!(!row.contains("open-three"), "{row}");
}

/// `polisd queue` lists the decisions it answers and, after them, the rest of the human queue
/// the dashboard shows: it never says that nothing waits for a person while the dashboard
/// lists a ratified amendment to apply.
#[test]
fn queue_lists_what_the_dashboard_queue_asks_of_a_person_too() {
    let p = TestPolis::init(FOUNDER);
    let out = p.polisd(&["queue"]);
    assert_eq!(
        stdout(&out).trim(),
        "nothing waits for a person",
        "{}",
        describe(&out)
    );
    p.save(
        "amendments/ratified/2026-01-01-two-reviewers.md",
        &format!("---\namendment_id: 2026-01-01-two-reviewers\ntitle: Two reviewers\nproposed_by: {FOUNDER}\nproposed_at: 2026-01-01 10:00:00\nstatus: ratified\nratified_at: 2026-01-02 10:00:00\nexpires_at: '2026-01-31'\n---\n\n## Problem\n\nOne reviewer.\n"),
    );
    let out = p.polisd(&["queue"]);
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    let text = stdout(&out);
    assert!(!text.contains("nothing waits"), "{text}");
    assert!(text.contains("to act on (1):"), "{text}");
    assert!(text.contains("Edit CONSTITUTION.md"), "{text}");
    let v = json(&p.polisd(&["queue", "--json"]));
    assert_eq!(v["items"], serde_json::json!([]), "{v}");
    let key = v["to_act_on"][0]["key"].as_str().unwrap_or_default();
    assert!(key.starts_with("constitution/"), "{v}");
}

/// The share covers the newest routings by `opened_at`, not the last ids in the alphabet: a
/// contract id is a slug of its title, so `zz-…` opened a year ago is not newer than `aa-…`.
#[test]
fn exploration_share_covers_the_newest_routings_not_the_last_ids() {
    let p = TestPolis::init(FOUNDER);
    let routed = |id: &str, opened: &str, explored: bool| {
        format!(
            "---\ncontract_id: {id}\ntitle: Routed\nopened_by: {FOUNDER}\nopened_at: '{opened}'\n\
             owner: {FOUNDER}\nstatus: settled\nrequired_tags:\n- python\nrouting:\n  \
             recommended_by_router: {FOUNDER}\n  recommendation_score: 0.5\n  exploration: {explored}\n  \
             override: null\nquality_score: 4\nsettled_at: '{opened}'\n---\n\n# Routed\n"
        )
    };
    // 50 old exploration picks whose ids sort last, then 100 newer greedy picks.
    for n in 0..50 {
        let id = format!("zz-old-pick-{n:03}");
        p.save(
            &format!("contracts/settled/{id}.md"),
            &routed(&id, &format!("2025-01-01 10:{n:02}:00"), true),
        );
    }
    for n in 0..100 {
        let id = format!("aa-new-pick-{n:03}");
        p.save(
            &format!("contracts/settled/{id}.md"),
            &routed(
                &id,
                &format!("2026-06-{:02} 10:{:02}:00", 1 + n / 60, n % 60),
                false,
            ),
        );
    }
    let s = json(&p.polisd(&["status", "--json"]));
    assert_eq!(
        s["exploration"],
        serde_json::json!({"window": 100, "routings": 100, "explored": 0, "share": 0.0}),
        "{}",
        s["exploration"]
    );
    // One newer exploration pick enters the window and the oldest greedy one leaves it.
    p.save(
        "contracts/settled/mm-newest.md",
        &routed("mm-newest", "2026-07-01 09:00:00", true),
    );
    let text = stdout(&p.polisd(&["status"]));
    assert!(
        text.contains("explored 1 of the last 100 routings (1.0%)"),
        "{text}"
    );
}

/// A card's vendor or a status's state is the agent's text: a line break or tab in it is shown
/// escaped in its cell, so the citizens table keeps one row per citizen, its columns aligned.
#[test]
fn a_line_break_in_a_cards_vendor_does_not_break_the_citizens_table() {
    let p = TestPolis::init(FOUNDER);
    p.citizen(
        "hostile-vendor-two",
        "\"acme\\n## Findings: 0 errors\\tok\"",
        &[("python", 4)],
        "low",
    );
    p.save(
        "citizens/hostile-vendor-two/status.md",
        "---\nagent_id: hostile-vendor-two\nstate: \"idle\\r\\nfake-agent-one  x\"\n---\n",
    );
    let text = stdout(&p.polisd(&["status"]));
    let table: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("Citizens"))
        .skip(1)
        .take_while(|l| !l.is_empty())
        .collect();
    assert_eq!(table.len(), 3, "a header and two rows:\n{text}");
    let row = table
        .iter()
        .find(|l| l.contains("hostile-vendor-two"))
        .unwrap();
    assert!(
        row.contains("acme\\u000a## Findings: 0 errors\\u0009ok"),
        "{row}"
    );
    assert!(!text.contains("\t"), "{text}");
    // Every row's LAST ACTIVITY starts where the header's does.
    let at = table[0].find("LAST ACTIVITY").unwrap();
    for l in &table[1..] {
        let column = l.chars().take(at).count();
        assert_eq!(column, at, "{l}");
        assert!(
            l.chars().nth(at - 1) == Some(' ') && l.chars().nth(at) != Some(' '),
            "{l}"
        );
    }
}
