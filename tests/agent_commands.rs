//! The agents' commands (`contract`, `amendment`, `log`, `lesson`, `review`, `context`,
//! `guardrail`) run as the real binary on temporary polises: claims that cannot race, a settle
//! that is never in two folders, refusals that write nothing, and exit codes 0 / 1 / 2.

mod harness;

use harness::{describe, ok, TestPolis, BIN};
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

/// Every file under `_polis/` with its bytes, to show that a refusal wrote nothing.
fn tree(p: &TestPolis) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![p.root.clone()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let path = e.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let rel = path.strip_prefix(&p.root).unwrap().display().to_string();
                out.push((rel, std::fs::read(&path).unwrap()));
            }
        }
    }
    out.sort();
    out
}

fn lines_with(p: &TestPolis, verb: &str) -> usize {
    p.read("chronicle.md")
        .lines()
        .filter(|l| l.contains(&format!("| {verb} |")))
        .count()
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
fn eight_simultaneous_claims_have_exactly_one_winner() {
    let p = polis_with_contract();
    let ids: Vec<String> = (0..8).map(|i| format!("claimer-agent-{i}")).collect();
    for id in &ids {
        p.citizen(id, "openai", &[("python", 3)], "medium");
    }
    // All eight start before any is waited for, so their claims overlap.
    let children: Vec<_> = ids
        .iter()
        .map(|id| p.spawn(&["contract", "claim", "fix-the-login-bug", "--as", id]))
        .collect();
    let outs: Vec<Output> = children
        .into_iter()
        .map(|c| c.wait_with_output().unwrap())
        .collect();
    let winners: Vec<usize> = (0..8)
        .filter(|&i| outs[i].status.code() == Some(0))
        .collect();
    assert_eq!(
        winners.len(),
        1,
        "exactly one winner: {:#?}",
        outs.iter().map(describe).collect::<Vec<_>>()
    );
    let winner = &ids[winners[0]];
    for (i, out) in outs.iter().enumerate() {
        if i != winners[0] {
            let err = refused(out.clone());
            assert!(err.contains(&format!("already owned by {winner}")), "{err}");
        }
    }
    let file = p.read("contracts/open/fix-the-login-bug.md");
    assert!(file.contains(&format!("\nowner: {winner}\n")), "{file}");
    assert!(file.contains("\nstatus: claimed\n"), "{file}");
    assert_eq!(lines_with(&p, "claimed contract"), 1);
}

#[test]
fn settle_killed_between_write_and_move_is_in_one_folder_and_finishes_on_rerun() {
    let p = polis_with_contract();
    ok(p.polisd(&["contract", "claim", "fix-the-login-bug", "--as", FOUNDER]));
    let out = Command::new(BIN)
        .args([
            "contract",
            "settle",
            "fix-the-login-bug",
            "--no-lesson",
            "the crash is the point here",
            "--quality",
            "4",
            "--minutes",
            "20",
        ])
        .env("POLISD_STATE_DIR", &p.state_dir)
        .env("POLISD_TEST_CRASH_BEFORE_MOVE", "1")
        .current_dir(&p.root)
        .output()
        .unwrap();
    assert!(
        !out.status.success(),
        "the hook aborts the process: {}",
        describe(&out)
    );
    assert!(p.exists("contracts/open/fix-the-login-bug.md"));
    assert!(
        !p.exists("contracts/settled/fix-the-login-bug.md"),
        "never in two folders"
    );
    assert!(p
        .read("contracts/open/fix-the-login-bug.md")
        .contains("\nstatus: settled\n"));
    assert_eq!(lines_with(&p, "settled contract"), 0);

    let out = ok(p.polisd(&[
        "contract",
        "settle",
        "fix-the-login-bug",
        "--no-lesson",
        "the crash is the point here",
        "--quality",
        "4",
        "--json",
    ]));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["resumed"], true, "{v}");
    assert!(!p.exists("contracts/open/fix-the-login-bug.md"));
    let settled = p.read("contracts/settled/fix-the-login-bug.md");
    assert!(
        settled.contains("\nquality_score: 4\n") && settled.contains("\nactual_minutes: 20\n"),
        "{settled}"
    );
    assert_eq!(settled.matches("## Settlement").count(), 1, "{settled}");
    assert_eq!(lines_with(&p, "settled contract"), 1);
    // No daemon runs, so the settle rebuilt the stats itself.
    assert!(p.read("contracts/routing_stats.yml").contains(FOUNDER));
    // A third run is refused: it is settled, and recorded.
    refused(p.polisd(&[
        "contract",
        "settle",
        "fix-the-login-bug",
        "--quality",
        "4",
        "--no-lesson",
        "x",
    ]));
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

#[test]
fn claim_by_another_is_refused_until_forced() {
    let p = polis_with_contract();
    p.citizen("codex-second-one", "openai", &[("python", 4)], "medium");
    ok(p.polisd(&["contract", "claim", "fix-the-login-bug", "--as", FOUNDER]));
    let again = ok(p.polisd(&["contract", "claim", "fix-the-login-bug", "--as", FOUNDER]));
    assert!(String::from_utf8_lossy(&again.stdout).contains("already yours"));
    let err = refused(p.polisd(&[
        "contract",
        "claim",
        "fix-the-login-bug",
        "--as",
        "codex-second-one",
    ]));
    assert!(
        err.contains(&format!("already owned by {FOUNDER}")),
        "{err}"
    );
    ok(p.polisd(&[
        "contract",
        "claim",
        "fix-the-login-bug",
        "--as",
        "codex-second-one",
        "--force",
    ]));
    assert!(p
        .read("contracts/open/fix-the-login-bug.md")
        .contains("\nowner: codex-second-one\n"));
    assert_eq!(lines_with(&p, "claimed contract"), 2);
}

#[test]
fn settling_or_abandoning_another_citizens_claim_is_refused_and_writes_nothing() {
    // Taking a claimed contract from its owner needs `claim --force`, which the chronicle
    // records; settling or abandoning it under another id must not be a quiet way round that
    // (a settle would credit the other citizen with the owner's work).
    let p = polis_with_contract();
    p.citizen("codex-second-one", "openai", &[("python", 4)], "medium");
    ok(p.polisd(&["contract", "claim", "fix-the-login-bug", "--as", FOUNDER]));
    let before = tree(&p);
    let settle = [
        "contract",
        "settle",
        "fix-the-login-bug",
        "--quality",
        "5",
        "--no-lesson",
        "x",
        "--by",
        "codex-second-one",
    ];
    let abandon = [
        "contract",
        "abandon",
        "fix-the-login-bug",
        "--as",
        "codex-second-one",
    ];
    for args in [&settle[..], &abandon[..]] {
        let err = refused(p.polisd(args));
        assert!(
            err.contains(&format!("owned by {FOUNDER}")) && err.contains("--force"),
            "{args:?}: {err}"
        );
        assert!(tree(&p) == before, "{args:?} wrote");
    }
    // The way round is on record: take it over, then settle it.
    ok(p.polisd(&[
        "contract",
        "claim",
        "fix-the-login-bug",
        "--as",
        "codex-second-one",
        "--force",
    ]));
    ok(p.polisd(&settle));
    assert!(p
        .read("contracts/settled/fix-the-login-bug.md")
        .contains("\nowner: codex-second-one\n"));
}

#[test]
fn a_settle_or_abandon_whose_move_cannot_land_is_refused_before_it_edits_the_contract() {
    let p = polis_with_contract();
    ok(p.polisd(&["contract", "claim", "fix-the-login-bug", "--as", FOUNDER]));
    let settle = [
        "contract",
        "settle",
        "fix-the-login-bug",
        "--quality",
        "4",
        "--no-lesson",
        "x",
    ];
    let abandon = ["contract", "abandon", "fix-the-login-bug"];
    // Another copy of the contract already in the destination (a sync artifact).
    let copy =
        "---\ncontract_id: fix-the-login-bug\nstatus: settled\n---\nAnother machine's copy.\n";
    p.save("contracts/settled/fix-the-login-bug.md", copy);
    p.save("contracts/abandoned/fix-the-login-bug.md", copy);
    let before = tree(&p);
    for args in [&settle[..], &abandon[..]] {
        let err = refused(p.polisd(args));
        assert!(err.contains("already there"), "{args:?}: {err}");
        assert!(
            tree(&p) == before,
            "{args:?} edited the contract it could not move"
        );
    }
    // The destination folder replaced by a link out of the polis.
    std::fs::remove_dir_all(p.path("contracts/settled")).unwrap();
    let outside = p.dir.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::os::unix::fs::symlink(&outside, p.path("contracts/settled")).unwrap();
    let before = tree(&p);
    let err = refused(p.polisd(&settle));
    assert!(err.contains("symbolic link"), "{err}");
    assert!(
        tree(&p) == before,
        "the settle edited the contract it could not move"
    );
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
}

#[test]
fn an_owner_line_that_names_no_citizen_is_refused_as_the_files_fault_not_a_usage_error() {
    // An agent wrote something other than an id into `owner:`. The caller did nothing wrong
    // (exit 1, not 2), and the message names the line to fix in the file's own terms.
    let p = TestPolis::init(FOUNDER);
    p.citizen("codex-second-one", "openai", &[], "medium");
    for (n, owner) in [
        "yes",
        "[claude-founder-one, codex-second-one]",
        "{a: b}",
        "Founder One",
    ]
    .into_iter()
    .enumerate()
    {
        let id = format!("odd-owner-{n}");
        p.save(
            &format!("contracts/open/{id}.md"),
            &format!("---\ncontract_id: {id}\nopened_by: {FOUNDER}\nowner: {owner}\nstatus: claimed\n---\n\n## Intent\n\nx\n"),
        );
        let before = tree(&p);
        for args in [
            vec!["contract", "claim", &id, "--as", "codex-second-one"],
            vec![
                "contract",
                "settle",
                &id,
                "--quality",
                "3",
                "--no-lesson",
                "x",
            ],
        ] {
            let err = refused(p.polisd(&args));
            assert!(
                err.contains("`owner:`") && err.contains("not a citizen id"),
                "{args:?}: {err}"
            );
            assert!(
                !err.contains("Seq(") && !err.contains("Map("),
                "{args:?}: {err}"
            );
            assert!(tree(&p) == before, "{args:?} wrote");
        }
        // Taking it over replaces the line.
        ok(p.polisd(&[
            "contract",
            "claim",
            &id,
            "--as",
            "codex-second-one",
            "--force",
        ]));
        assert!(p
            .read(&format!("contracts/open/{id}.md"))
            .contains("\nowner: codex-second-one\n"));
    }
}

#[test]
fn a_claim_waits_for_an_agent_still_writing_the_contract_and_keeps_its_bytes() {
    use std::io::Write;
    let p = polis_with_contract();
    let rel = "contracts/open/fix-the-login-bug.md";
    // An agent has the contract open for writing (its editor, mid-save).
    let mut agent = std::fs::OpenOptions::new()
        .append(true)
        .open(p.path(rel))
        .unwrap();
    let before = p.read(rel);
    let mut claim =
        harness::Killed::new(p.spawn(&["contract", "claim", "fix-the-login-bug", "--as", FOUNDER]));
    // The agent takes half a second over its save. All that time the claim neither writes nor
    // gives up: watched throughout, so a claim that does either fails at once.
    let saved_at = std::time::Instant::now() + std::time::Duration::from_millis(500);
    while std::time::Instant::now() < saved_at {
        assert!(
            claim.child().try_wait().unwrap().is_none(),
            "the claim ended while the agent was still writing"
        );
        assert_eq!(p.read(rel), before, "the claim wrote under an open writer");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    agent.write_all(b"\nA note the agent added.\n").unwrap();
    drop(agent);
    let out = ok(claim.into_inner().wait_with_output().unwrap());
    assert!(describe(&out).contains("claimed"), "{}", describe(&out));
    let file = p.read(rel);
    assert!(file.contains("\nowner: claude-founder-one\n"), "{file}");
    assert!(file.contains("\nstatus: claimed\n"), "{file}");
    assert!(file.ends_with("\nA note the agent added.\n"), "{file}");
    assert_eq!(lines_with(&p, "claimed contract"), 1);
}

#[test]
fn a_review_waits_for_an_agent_still_writing_the_contract_and_writes_nothing_before() {
    use std::io::Write;
    let p = polis_with_contract();
    p.citizen("codex-second-one", "openai", &[], "medium");
    ok(p.polisd(&["contract", "claim", "fix-the-login-bug", "--as", FOUNDER]));
    let rel = "contracts/open/fix-the-login-bug.md";
    let mut agent = std::fs::OpenOptions::new()
        .append(true)
        .open(p.path(rel))
        .unwrap();
    let before = tree(&p);
    let mut review = harness::Killed::new(p.spawn(&[
        "review",
        "fix-the-login-bug",
        "--as",
        "codex-second-one",
        "--decision",
        "rejected",
    ]));
    // While the owner's editor holds the contract, the review neither gives up half-written
    // (its file and chronicle line on disk, the contract's `review` block not) nor writes.
    let saved_at = std::time::Instant::now() + std::time::Duration::from_millis(500);
    while std::time::Instant::now() < saved_at {
        let ended = review.child().try_wait().unwrap();
        assert!(
            ended.is_none(),
            "the review ended while the owner was still writing"
        );
        assert!(tree(&p) == before, "the review wrote under an open writer");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    agent.write_all(b"\nThe owner's note.\n").unwrap();
    drop(agent);
    ok(review.into_inner().wait_with_output().unwrap());
    let file = p.read(rel);
    assert!(file.contains("reviewer: codex-second-one"), "{file}");
    assert!(file.ends_with("\nThe owner's note.\n"), "{file}");
    assert_eq!(lines_with(&p, "rejected review"), 1);
}

#[test]
fn abandon_moves_by_rename_and_records_it() {
    let p = polis_with_contract();
    ok(p.polisd(&[
        "contract",
        "abandon",
        "fix-the-login-bug",
        "--reason",
        "duplicate",
    ]));
    assert!(!p.exists("contracts/open/fix-the-login-bug.md"));
    let f = p.read("contracts/abandoned/fix-the-login-bug.md");
    assert!(
        f.contains("\nstatus: abandoned\n") && f.contains("\nabandoned_reason: duplicate\n"),
        "{f}"
    );
    assert!(p.read("chronicle.md").contains(&format!(
        "| {FOUNDER} | abandoned contract | [[contracts/abandoned/fix-the-login-bug]] | duplicate"
    )));
    let list = ok(p.polisd(&["contract", "list", "--state", "abandoned", "--json"]));
    let v: serde_json::Value = serde_json::from_slice(&list.stdout).unwrap();
    assert_eq!(v["contracts"][0]["contract_id"], "fix-the-login-bug");
}

#[test]
fn amendment_vote_changed_moves_the_id_and_replaces_the_block() {
    let p = TestPolis::init(FOUNDER);
    p.citizen("codex-second-one", "openai", &[], "medium");
    let out = ok(p.polisd(&[
        "amendment",
        "propose",
        "--title",
        "Reviews for high stakes",
        "--by",
        FOUNDER,
        "--json",
    ]));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let aid = v["amendment_id"].as_str().unwrap().to_string();
    let rel = format!("amendments/proposed/{aid}.md");
    ok(p.polisd(&[
        "amendment",
        "vote",
        &aid,
        "--as",
        "codex-second-one",
        "--vote",
        "disagree",
        "--rationale",
        "too slow",
    ]));
    ok(p.polisd(&[
        "amendment",
        "vote",
        &aid,
        "--as",
        "codex-second-one",
        "--vote",
        "agree",
        "--rationale",
        "convinced",
    ]));
    // The amendment file is left alone: the vote is a file of its own, replaced on a change.
    assert!(!p.read(&rel).contains("codex-second-one"));
    let f = p.read(&format!("amendments/votes/{aid}/codex-second-one.md"));
    assert!(f.contains("\nvote: agree\n"), "{f}");
    assert!(!f.contains("disagree") && !f.contains("too slow"), "{f}");
    assert!(f.ends_with("---\n\nconvinced\n"), "{f}");
    assert_eq!(lines_with(&p, "voted on amendment"), 2);
    let list = ok(p.polisd(&["amendment", "list", "--json"]));
    let v: serde_json::Value = serde_json::from_slice(&list.stdout).unwrap();
    assert_eq!(v["amendments"][0]["votes"]["agree"][0], "codex-second-one");
}

#[test]
fn a_vote_after_the_amendments_deadline_is_refused_and_writes_nothing() {
    // No daemon has tallied it yet, so its status still says `proposed`; a late vote must not
    // become the agree that ratifies an expired amendment on the next tally.
    let p = TestPolis::init(FOUNDER);
    p.citizen("codex-second-one", "openai", &[], "medium");
    let aid = "2020-01-01-late";
    p.save(
        &format!("amendments/proposed/{aid}.md"),
        &format!("---\namendment_id: {aid}\ntitle: Late\nproposed_by: {FOUNDER}\nproposed_at: 2020-01-01 10:00:00\nstatus: proposed\nexpires_at: '2020-01-31'\n---\n\n## Problem\n\nLate.\n"),
    );
    let before = tree(&p);
    let err = refused(p.polisd(&[
        "amendment",
        "vote",
        aid,
        "--as",
        "codex-second-one",
        "--vote",
        "agree",
    ]));
    assert!(err.contains("2020-01-31"), "{err}");
    assert!(tree(&p) == before, "a refused vote wrote");
    let tally = ok(p.polisd(&["tally", "--dry-run"]));
    assert!(describe(&tally).contains("expired"), "{}", describe(&tally));
}

#[test]
fn an_amendment_proposed_with_a_past_expiry_is_refused() {
    let p = TestPolis::init(FOUNDER);
    let before = tree(&p);
    let out = p.polisd(&[
        "amendment",
        "propose",
        "--title",
        "Already over",
        "--by",
        FOUNDER,
        "--expires",
        "2020-01-31",
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", describe(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["ok"], false, "{v}");
    assert!(v["error"].as_str().unwrap().contains("2020-01-31"), "{v}");
    assert!(tree(&p) == before, "a refused proposal wrote");
}

#[test]
fn a_replayed_lesson_is_filed_once() {
    let p = polis_with_contract();
    let file = [
        "lesson",
        "file",
        "--as",
        FOUNDER,
        "--tags",
        "python",
        "--impact",
        "4",
        "--contract",
        "fix-the-login-bug",
        "Check the session store first.",
    ];
    ok(p.polisd(&file));
    let before = tree(&p);
    // An agent that retries the command (it timed out waiting, its session restarted).
    let err = refused(p.polisd(&file));
    assert!(err.contains("already filed"), "{err}");
    assert!(tree(&p) == before, "a replayed lesson wrote");
    assert_eq!(lines_with(&p, "filed lesson"), 1);
    // The same words on another contract, or by another citizen, are a lesson of their own.
    p.citizen("codex-second-one", "openai", &[], "medium");
    let mut other = file;
    other[3] = "codex-second-one";
    ok(p.polisd(&other));
    assert_eq!(lines_with(&p, "filed lesson"), 2);
}

#[test]
fn a_replayed_amendment_proposal_is_filed_once() {
    // Two copies of one proposal split its votes between them: neither may reach quorum.
    let p = TestPolis::init(FOUNDER);
    let propose = [
        "amendment",
        "propose",
        "--title",
        "Reviews for high stakes",
        "--by",
        FOUNDER,
    ];
    ok(p.polisd(&propose));
    let before = tree(&p);
    let err = refused(p.polisd(&propose));
    assert!(err.contains("already proposed"), "{err}");
    assert!(tree(&p) == before, "a replayed proposal wrote");
    assert_eq!(lines_with(&p, "proposed amendment"), 1);
    // Another proposer's amendment of the same title is theirs.
    p.citizen("codex-second-one", "openai", &[], "medium");
    let mut other = propose;
    other[5] = "codex-second-one";
    ok(p.polisd(&other));
    assert_eq!(lines_with(&p, "proposed amendment"), 2);
}

#[test]
fn a_body_file_polisd_could_not_keep_is_a_usage_error_with_nothing_written() {
    // `--body FILE` is agent text like any argument: control characters are refused as they
    // are on the command line, and a file past what polisd reads back (a review it would then
    // skip at the settle gate) or one that cannot be read is refused, in JSON too.
    let p = polis_with_contract();
    p.citizen("codex-second-one", "openai", &[], "medium");
    let dir = p.dir.path();
    std::fs::write(dir.join("nul.md"), "hello\0world \u{1b}[2J\n").unwrap();
    let big = "a line of review text that goes on and on and on and on\n".repeat(320_000);
    std::fs::write(dir.join("big.md"), big).unwrap();
    let before = tree(&p);
    for (file, why) in [
        ("nul.md", "control character"),
        ("big.md", "MB"),
        ("missing.md", "missing.md"),
    ] {
        let body = dir.join(file).display().to_string();
        for args in [
            vec![
                "review",
                "fix-the-login-bug",
                "--as",
                "codex-second-one",
                "--decision",
                "signed_off",
                "--body",
                &body,
                "--json",
            ],
            vec![
                "amendment",
                "propose",
                "--title",
                "A rule",
                "--by",
                FOUNDER,
                "--body",
                &body,
                "--json",
            ],
        ] {
            let out = p.polisd(&args);
            assert_eq!(out.status.code(), Some(2), "{args:?}: {}", describe(&out));
            let v: serde_json::Value = serde_json::from_slice(&out.stdout)
                .unwrap_or_else(|_| panic!("{args:?}: no JSON: {}", describe(&out)));
            assert_eq!(v["ok"], false, "{v}");
            assert!(v["error"].as_str().unwrap().contains(why), "{args:?}: {v}");
            assert!(tree(&p) == before, "{args:?} wrote");
        }
    }
}

#[test]
fn lesson_review_guardrail_and_context_packet() {
    let p = polis_with_contract();
    let cold = ok(p.polisd(&["context", "fix-the-login-bug"]));
    assert!(String::from_utf8_lossy(&cold.stdout).contains("No prior lessons"));
    ok(p.polisd(&[
        "guardrail",
        "add",
        "--text",
        "Run the auth tests",
        "--tags",
        "python",
        "--from",
        "fix-the-login-bug",
    ]));
    ok(p.polisd(&["guardrail", "add", "--text", "Never log a password"]));
    ok(p.polisd(&[
        "lesson",
        "file",
        "--as",
        FOUNDER,
        "--tags",
        "python",
        "--impact",
        "2",
        "Cookies expire early.",
    ]));
    ok(p.polisd(&[
        "lesson",
        "file",
        "--as",
        FOUNDER,
        "--tags",
        "python,auth",
        "--impact",
        "5",
        "--contract",
        "fix-the-login-bug",
        "Check the session store first.",
    ]));
    ok(p.polisd(&[
        "review",
        "fix-the-login-bug",
        "--as",
        FOUNDER,
        "--decision",
        "signed_off",
    ]));
    assert_eq!(lines_with(&p, "signed off"), 1);
    assert_eq!(lines_with(&p, "filed lesson"), 2);
    let out = ok(p.polisd(&["context", "fix-the-login-bug", "--json"]));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        v["lessons"][0]["quality_impact"], 5.0,
        "strongest first: {v}"
    );
    assert_eq!(
        v["guardrails"].as_array().unwrap().len(),
        2,
        "an untagged guardrail applies too: {v}"
    );
    // A contract opened now inherits both guardrails as acceptance criteria.
    ok(p.polisd(&[
        "contract", "open", "--title", "Another", "--by", FOUNDER, "--tags", "python",
    ]));
    let f = p.read("contracts/open/another.md");
    assert!(
        f.contains("- '[guardrail] Run the auth tests'")
            || f.contains("- '[guardrail] Never log a password'"),
        "{f}"
    );
    assert_eq!(
        f.matches("[guardrail]").count(),
        4,
        "twice each: frontmatter and body: {f}"
    );
    // `check` finds nothing wrong with what the commands wrote.
    let check = p.polisd(&["check", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&check.stdout).unwrap();
    let errors: Vec<_> = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["severity"] == "error")
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
}

#[test]
fn daemon_sends_claim_conflict_notices_and_check_reports_it_until_resolved() {
    let p = polis_with_contract();
    let second = "codex-second-one";
    p.citizen(second, "openai", &[("python", 4)], "medium");
    let _daemon = p.start_daemon();
    let rel = "contracts/open/fix-the-login-bug.md";
    let link = "[[contracts/open/fix-the-login-bug]]";
    let claim_by_hand = |who: &str| {
        let text = p.read(rel);
        let text = text
            .replacen("\nowner: null\n", &format!("\nowner: {who}\n"), 1)
            .replacen(
                &format!("\nowner: {FOUNDER}\n"),
                &format!("\nowner: {who}\n"),
                1,
            )
            .replacen("\nstatus: proposed\n", "\nstatus: claimed\n", 1);
        p.save(rel, &text);
        p.append(
            "chronicle.md",
            &harness::chronicle_line(who, "claimed contract", link, "-"),
        );
    };
    // Both claim by hand in the same minute: the tie goes to the smaller id, the founder.
    claim_by_hand(FOUNDER);
    claim_by_hand(second);
    harness::wait_for(&p, "claim-conflict notices to both claimers", || {
        p.count(FOUNDER, "claim-conflict") == 1 && p.count(second, "claim-conflict") == 1
    });
    assert!(p
        .read(&format!("citizens/{second}/inbox.md"))
        .contains(&format!("`{FOUNDER}` had claimed it first")));
    let check = p.polisd(&["check"]);
    let out = String::from_utf8_lossy(&check.stdout).into_owned();
    assert!(
        out.contains("P011") && out.contains(&format!("so {FOUNDER} owns it")),
        "{out}"
    );

    // The later claimer gives way: the conflict is resolved and `check` is quiet about it.
    let text = p.read(rel).replacen(
        &format!("\nowner: {second}\n"),
        &format!("\nowner: {FOUNDER}\n"),
        1,
    );
    p.save(rel, &text);
    let check = p.polisd(&["check"]);
    assert!(!String::from_utf8_lossy(&check.stdout).contains("P011"));
    // A claim through the command cannot conflict: the loser writes nothing.
    let err = refused(p.polisd(&["contract", "claim", "fix-the-login-bug", "--as", second]));
    assert!(err.contains(&format!("already owned by {FOUNDER}")));
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

/// Opens, claims and settles one contract with the agents' commands (no daemon running).
fn open_claim_settle(p: &TestPolis, title: &str, owner: &str, quality: &str) -> String {
    let out = ok(p.polisd(&[
        "contract", "open", "--title", title, "--by", FOUNDER, "--tags", "python", "--json",
    ]));
    let opened: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let id = opened["contract_id"].as_str().unwrap().to_string();
    ok(p.polisd(&["contract", "claim", &id, "--as", owner]));
    ok(p.polisd(&[
        "contract",
        "settle",
        &id,
        "--quality",
        quality,
        "--no-lesson",
        "routing is the point here",
    ]));
    id
}

/// The ledger's records (`None` when not trusted) and how many journal frames follow its
/// snapshot.
fn ledger(p: &TestPolis) -> (Option<Vec<String>>, usize) {
    let (restored, journal) = polisd::fs::state::read_ledger_in(&p.polis_state_dir());
    let paths = match restored {
        polisd::fs::state::Restored::Records { records, .. } => {
            Some(records.iter().map(|r| r.path.to_string()).collect())
        }
        _ => None,
    };
    (paths, journal)
}

#[test]
fn settle_without_a_daemon_reconciles_from_the_ledger_to_a_full_reconciles_bytes() {
    const WORKER: &str = "codex-worker-one";
    let p = TestPolis::init(FOUNDER);
    p.citizen(WORKER, "openai", &[("python", 3)], "medium");
    let stats = |p: &TestPolis| p.read("contracts/routing_stats.yml");
    // A daemon met the polis once, so settlements made since are news to it.
    p.start_daemon().kill9();

    // Each settle journals one line for its own file after the daemon's (empty) snapshot, and
    // the second one more when it read the first's file again (the first read it within a tick
    // of moving it in, which it always does unless this machine is very slow): no snapshot.
    let first = open_claim_settle(&p, "First job", WORKER, "4");
    assert_eq!(stats(&p), p.expected_stats());
    let second = open_claim_settle(&p, "Second job", FOUNDER, "2");
    assert_eq!(stats(&p), p.expected_stats());
    let (paths, journal) = ledger(&p);
    assert!((2..=3).contains(&journal), "{journal} lines: {paths:?}");
    assert_eq!(
        paths,
        Some(vec![
            format!("contracts/settled/{first}.md"),
            format!("contracts/settled/{second}.md")
        ])
    );

    // A settled file edited behind the ledger's back (same size: only the fingerprint tells)
    // and one removed: the next settle reads the edit, drops the removed one, and still writes
    // a full reconcile's bytes.
    let rel = format!("contracts/settled/{first}.md");
    let edited = p
        .read(&rel)
        .replacen("quality_score: 4", "quality_score: 5", 1);
    assert_ne!(edited, p.read(&rel));
    p.save(&rel, &edited);
    std::fs::remove_file(p.path(&format!("contracts/settled/{second}.md"))).unwrap();
    open_claim_settle(&p, "Third job", WORKER, "3");
    let after_edit = stats(&p);
    assert_eq!(after_edit, p.expected_stats());
    assert!(
        after_edit.contains("avg_quality_score: 4.0"),
        "{after_edit}"
    );
    assert!(!after_edit.contains(FOUNDER), "{after_edit}");

    // A daemon restarted now restores the commands' journal, yet announces their settlements
    // (no daemon counted them): the first and the third (the second was removed).
    let daemon = p.start_daemon();
    harness::wait_until(
        "the opener told of two settlements",
        harness::DEADLINE,
        || p.count(FOUNDER, "contract-settled") == 2,
    );
    assert!(daemon.log_text().contains("restored the ledger"));
    daemon.kill9();

    // A damaged snapshot, then no ledger at all: both fall back to reading every file, with
    // the same bytes, and leave a fresh snapshot.
    let file = p.polis_state_dir().join("settled.ledger");
    let mut damaged = std::fs::read(&file).unwrap();
    let at = damaged
        .windows(WORKER.len())
        .position(|w| w == WORKER.as_bytes())
        .expect("the ledger names the worker");
    damaged[at] = b'C';
    std::fs::write(&file, damaged).unwrap();
    assert_eq!(ledger(&p).0, None);
    open_claim_settle(&p, "Fourth job", WORKER, "1");
    assert_eq!(stats(&p), p.expected_stats());
    let only_snapshot = |p: &TestPolis| {
        let (paths, journal) = ledger(p);
        paths.is_some() && journal == 0
    };
    assert!(only_snapshot(&p), "{:?}", ledger(&p));
    std::fs::remove_file(&file).unwrap();
    open_claim_settle(&p, "Fifth job", WORKER, "5");
    assert_eq!(stats(&p), p.expected_stats());
    assert!(only_snapshot(&p), "{:?}", ledger(&p));

    // A daemon started afterwards restores what the commands left; the settlements no daemon
    // counted yet are still news to the opener (the commands' records say so).
    let _daemon = p.start_daemon();
    harness::wait_until(
        "the opener told of the four settlements by another citizen",
        harness::DEADLINE,
        || p.count(FOUNDER, "contract-settled") == 4,
    );
    assert_eq!(stats(&p), p.expected_stats());
}

/// A second write of the same size in the clock tick of the first leaves a file's fingerprint
/// as it was. A command that read the file in between (no daemon watching) marks its record to
/// be read again, and the next command does, whatever the fingerprint says.
#[test]
fn a_settled_file_read_in_the_tick_of_its_change_is_read_again_by_the_next_command() {
    use polisd::fs::state::{Fingerprint, LedgerFile, Restored, SettledRecord};
    const WORKER: &str = "codex-worker-one";
    let p = TestPolis::init(FOUNDER);
    p.citizen(WORKER, "openai", &[("python", 3)], "medium");
    p.start_daemon().kill9();
    let stats = |p: &TestPolis| p.read("contracts/routing_stats.yml");

    let first = open_claim_settle(&p, "First job", WORKER, "4");
    let done = std::time::SystemTime::now();
    let rel = format!("contracts/settled/{first}.md");
    let recorded = |p: &TestPolis| -> SettledRecord {
        let (restored, _) = polisd::fs::state::read_ledger_in(&p.polis_state_dir());
        let Restored::Records { records, .. } = restored else {
            panic!("the ledger is trusted: {restored:?}")
        };
        let own = records
            .iter()
            .find(|r| r.path == rel)
            .expect("recorded")
            .to_owned();
        own
    };
    // The settle read its own file moments after moving it in: unless this machine took
    // longer than a tick's margin to get here, the record says to read it again.
    let own = recorded(&p);
    assert!(
        own.reread || !own.fingerprint.may_change_unseen(done),
        "a record of a file read in the tick of its change is trusted: {own:?}"
    );
    // Read again unchanged by the next settle, whose own settlement follows it (same owner,
    // same quality): counted once, beside the replay of the ledger made ahead.
    open_claim_settle(&p, "Next job", WORKER, "4");
    assert_eq!(stats(&p), p.expected_stats());

    // That second write, as if it came in the tick the settle read the file: the ledger holds
    // the file's fingerprint now and the settlement it had before.
    let edited = p
        .read(&rel)
        .replacen("quality_score: 4", "quality_score: 5", 1);
    p.save(&rel, &edited);
    let stale = |reread: bool| {
        let now = std::fs::symlink_metadata(p.path(&rel)).unwrap();
        let lock = LedgerFile::lock_in(&p.state_dir, &p.canonical_root())
            .unwrap()
            .expect("no daemon runs");
        let (mut file, _) = lock.restore(None);
        let was = recorded(&p);
        let record = SettledRecord {
            fingerprint: Fingerprint::of(&now),
            reread,
            ..was
        };
        file.append([Ok(record)]).unwrap();
    };
    // The control: trusted on its fingerprint, the record keeps the stale quality.
    stale(false);
    open_claim_settle(&p, "Second job", FOUNDER, "2");
    assert!(
        stats(&p).contains("avg_quality_score: 4.0"),
        "{}",
        stats(&p)
    );
    assert_ne!(stats(&p), p.expected_stats());
    // Marked, it is read again, and the stats are a full reconcile's.
    stale(true);
    open_claim_settle(&p, "Third job", FOUNDER, "3");
    assert_eq!(stats(&p), p.expected_stats());
    assert!(
        stats(&p).contains("avg_quality_score: 4.5"),
        "{}",
        stats(&p)
    );
}

/// A settled contract written by hand, as an agent that edits files leaves it.
fn settled_by_hand(id: &str, owner: &str, quality: u8, day: u32) -> String {
    format!(
        "---\ncontract_id: {id}\ntitle: {id}\nopened_by: {FOUNDER}\nopened_at: 2026-03-{day:02}T09:00:00Z\nowner: {owner}\nstatus: settled\nrequired_tags: [python]\nsettled_at: 2026-03-{day:02}T10:00:00Z\nquality_score: {quality}\nactual_minutes: 20\n---\n\n## Settlement\n\nDone.\n"
    )
}

#[test]
fn settle_without_a_daemon_checks_every_file_listed_while_its_own_move_is_made() {
    // Enough settled files for the folder to be stat'ed in several chunks, on more than one
    // thread, while the settle's own edit and move are made.
    const WORKER: &str = "codex-worker-one";
    const FILES: usize = 900;
    let p = TestPolis::init(FOUNDER);
    p.citizen(WORKER, "openai", &[("python", 3)], "medium");
    for i in 0..FILES {
        let owner = if i % 3 == 0 { FOUNDER } else { WORKER };
        let rel = format!("contracts/settled/hand-{i:04}.md");
        p.save(
            &rel,
            &settled_by_hand(&format!("hand-{i:04}"), owner, 4, 1 + (i % 28) as u32),
        );
    }
    p.start_daemon().kill9();
    let stats = |p: &TestPolis| p.read("contracts/routing_stats.yml");

    // Behind the ledger's back: same-size edits spread over the folder (only the fingerprints
    // tell), removals, and files added by hand.
    for round in 0..2 {
        for i in (round..FILES).step_by(97) {
            let rel = format!("contracts/settled/hand-{i:04}.md");
            let text = p.read(&rel);
            let edited = text.replacen("quality_score: 4", "quality_score: 1", 1);
            let edited = if edited == text {
                text.replacen("quality_score: 1", "quality_score: 5", 1)
            } else {
                edited
            };
            assert_ne!(edited, text);
            p.save(&rel, &edited);
        }
        for i in (round * 7 + 3..FILES).step_by(211) {
            let _ = std::fs::remove_file(p.path(&format!("contracts/settled/hand-{i:04}.md")));
        }
        for i in 0..5 {
            let id = format!("added-{round}-{i}");
            p.save(
                &format!("contracts/settled/{id}.md"),
                &settled_by_hand(&id, WORKER, 2, 20 + i),
            );
        }
        // Once with every chunk matched on the threads that stat'ed it, once as it comes.
        let id = format!("job-{round}");
        ok(p.polisd(&[
            "contract", "open", "--title", &id, "--by", FOUNDER, "--tags", "python",
        ]));
        ok(p.polisd(&["contract", "claim", &id, "--as", WORKER]));
        let mut settle = Command::new(BIN);
        settle
            .args([
                "contract",
                "settle",
                &id,
                "--quality",
                "3",
                "--no-lesson",
                "x",
            ])
            .env("POLISD_STATE_DIR", &p.state_dir)
            .current_dir(&p.root);
        if round == 0 {
            settle.env(polisd::operations::MATCH_WHILE_LISTING_ENV, "1");
        }
        ok(settle.output().unwrap());
        assert_eq!(stats(&p), p.expected_stats(), "round {round}");
    }
    // What the two settles journalled is trusted by the next one, and a settle with nothing
    // else changed still counts its own file.
    open_claim_settle(&p, "Job after", FOUNDER, "5");
    assert_eq!(stats(&p), p.expected_stats());
    let (paths, _) = ledger(&p);
    assert!(paths.is_some_and(|p| p.iter().any(|p| p.ends_with("/job-after.md"))));
}

#[test]
fn settle_waits_for_another_commands_lock_and_lists_the_folder_after_it() {
    const WORKER: &str = "codex-worker-one";
    let p = TestPolis::init(FOUNDER);
    p.citizen(WORKER, "openai", &[("python", 3)], "medium");
    open_claim_settle(&p, "Before", WORKER, "4");
    p.start_daemon().kill9();
    let out = ok(p.polisd(&[
        "contract", "open", "--title", "Waiting", "--by", FOUNDER, "--tags", "python", "--json",
    ]));
    let opened: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let id = opened["contract_id"].as_str().unwrap().to_string();
    ok(p.polisd(&["contract", "claim", &id, "--as", WORKER]));

    // Another command holds the ledger's lock for its reconcile: this settle makes its own
    // change, then waits for the lock before it lists the folder.
    let state_base = p.state_dir.clone();
    let root = p.canonical_root();
    let held = polisd::fs::state::LedgerFile::lock_in(&state_base, &root)
        .unwrap()
        .expect("no daemon runs");
    let settle = Command::new(BIN)
        .args([
            "contract",
            "settle",
            &id,
            "--quality",
            "2",
            "--no-lesson",
            "x",
        ])
        .env("POLISD_STATE_DIR", &state_base)
        .current_dir(&p.root)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let settle = harness::Killed::new(settle);
    harness::wait_until("the settle to move its contract", harness::DEADLINE, || {
        p.exists(&format!("contracts/settled/{id}.md"))
    });
    // Meanwhile the holder moves in a settlement of its own and journals it: listed before
    // the lock, it would be taken for a file removed.
    let other = "contracts/settled/other-holders.md";
    p.save(other, &settled_by_hand("other-holders", FOUNDER, 5, 9));
    let (mut file, _) = held.restore(None);
    let fingerprint = polisd::fs::state::fingerprints_in(&root, "contracts/settled", &[other])[0]
        .expect("the file is there");
    let zone = polisd::protocol::settings::parse(Some(&p.read("polis.yml")))
        .0
        .timezone;
    let read = polisd::operations::read_settled(&root, other, zone).expect("the file reads");
    file.append([Ok(polisd::fs::state::SettledRecord::of(
        other,
        &fingerprint,
        false,
        read.settlement.as_ref().map(|s| s.view()),
    ))])
    .unwrap();
    drop(file);
    let out = settle.into_inner().wait_with_output().unwrap();
    ok(out);
    assert_eq!(p.read("contracts/routing_stats.yml"), p.expected_stats());
}
