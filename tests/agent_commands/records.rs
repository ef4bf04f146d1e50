//! The records agents file beside a contract: lessons, reviews, and the text they hand in by
//! file.

use super::*;

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
fn a_review_records_its_decision_in_a_review_line_written_null_or_refuses_what_it_cannot_set() {
    let p = polis_with_contract();
    p.citizen("codex-second-one", "openai", &[], "medium");
    ok(p.polisd(&["contract", "claim", "fix-the-login-bug", "--as", FOUNDER]));
    let rel = "contracts/open/fix-the-login-bug.md";
    let blocked = |text: &str| {
        let mut out = String::new();
        let mut skipping = false;
        for line in text.split_inclusive('\n') {
            if skipping && line.starts_with("  ") {
                continue;
            }
            skipping = line.starts_with("review:");
            out.push_str(if skipping { "review: null\n" } else { line });
        }
        out
    };
    // An agent wrote `review: null`: the decision still lands on the contract.
    p.save(rel, &blocked(&p.read(rel)));
    let review = [
        "review",
        "fix-the-login-bug",
        "--as",
        "codex-second-one",
        "--decision",
        "requested_changes",
    ];
    ok(p.polisd(&review));
    let file = p.read(rel);
    assert!(
        file.contains("review: {status: requested_changes, reviewer: codex-second-one}\n"),
        "{file}"
    );
    // A `review:` line that is no mapping is refused, nothing written.
    p.save(
        rel,
        &file.replace(
            "review: {status: requested_changes, reviewer: codex-second-one}",
            "review: see the thread",
        ),
    );
    refused_writing_nothing(&p, || p.polisd(&review), "`review:` line");
}

#[test]
fn a_replayed_guardrail_is_added_once() {
    let p = polis_with_contract();
    let add = [
        "guardrail",
        "add",
        "--text",
        "Run the auth tests",
        "--tags",
        "python",
    ];
    ok(p.polisd(&add));
    let before = tree(&p);
    let err = refused(p.polisd(&add));
    assert!(
        err.contains("already active as guardrails/run-the-auth-tests.md"),
        "{err}"
    );
    assert!(tree(&p) == before, "a replayed guardrail wrote");
    // The same words for other tags are a guardrail of their own.
    ok(p.polisd(&[
        "guardrail",
        "add",
        "--text",
        "Run the auth tests",
        "--tags",
        "auth",
    ]));
    assert!(p.root.join("guardrails/run-the-auth-tests-2.md").is_file());
}

/// A lesson on the contract of `polis_with_contract`, as an agent files it.
const FILE_LESSON: [&str; 11] = [
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

#[test]
fn a_replayed_lesson_is_filed_once() {
    let p = polis_with_contract();
    let file = FILE_LESSON;
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
fn a_lesson_killed_between_its_file_and_its_line_is_recorded_by_the_rerun() {
    // The lesson's file is made, then its `filed lesson` line appended: a process killed in
    // between leaves the file alone, and the rerun must write the line rather than refuse.
    let p = polis_with_contract();
    let file = FILE_LESSON;
    ok(p.polisd(&file));
    drop_lines(&p, "filed lesson");
    ok(p.polisd(&file));
    assert_eq!(lines_with(&p, "filed lesson"), 1);
    let lessons = std::fs::read_dir(p.path("lessons/python")).unwrap().count();
    assert_eq!(lessons, 1, "the rerun filed the lesson again");
    // Recorded now: a replay is refused with nothing written.
    refused_writing_nothing(&p, || p.polisd(&file), "already filed");
}

#[test]
fn a_review_killed_between_its_file_and_its_line_is_recorded_by_the_rerun() {
    // The review's file is made, then its line appended: a process killed in between leaves
    // the file alone, and the rerun must write the line (of that review's round) rather than
    // refuse the review as taken or open a second round.
    let p = polis_with_contract();
    p.citizen("codex-second-one", "openai", &[], "medium");
    ok(p.polisd(&["contract", "claim", "fix-the-login-bug", "--as", FOUNDER]));
    let review = [
        "review",
        "fix-the-login-bug",
        "--as",
        "codex-second-one",
        "--decision",
        "requested_changes",
    ];
    ok(p.polisd(&review));
    drop_lines(&p, "requested changes");
    let before = std::fs::read_dir(p.path("reviews")).unwrap().count();
    ok(p.polisd(&review));
    assert_eq!(lines_with(&p, "requested changes"), 1);
    let chronicle = p.read("chronicle.md");
    assert!(
        chronicle.contains("requested_changes (round 1)"),
        "{chronicle}"
    );
    let reviews = std::fs::read_dir(p.path("reviews")).unwrap().count();
    assert_eq!(reviews, before, "the rerun wrote a second review");
    // Recorded now: running it again is refused within the minute, with nothing written, and
    // is the next round after it; never the first round recorded twice.
    let again = p.polisd(&review);
    let chronicle = p.read("chronicle.md");
    if again.status.success() {
        assert!(
            chronicle.contains("requested_changes (round 2)"),
            "{chronicle}"
        );
    } else {
        let err = String::from_utf8_lossy(&again.stderr);
        assert!(err.contains("already reviewed this minute"), "{err}");
        assert_eq!(lines_with(&p, "requested changes"), 1);
    }
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

/// Settles `drop-the-table` (quality 5, no lesson).
const SETTLE_DROP: [&str; 7] = [
    "contract",
    "settle",
    "drop-the-table",
    "--quality",
    "5",
    "--no-lesson",
    "x",
];

/// `codex-second-one` signs off `drop-the-table`.
const SIGN_OFF_DROP: [&str; 6] = [
    "review",
    "drop-the-table",
    "--as",
    "codex-second-one",
    "--decision",
    "signed_off",
];

/// A polis with the `stakes: high` contract `drop-the-table`, opened by the founder.
fn high_stakes_polis() -> TestPolis {
    let p = TestPolis::init(FOUNDER);
    ok(p.polisd(&[
        "contract",
        "open",
        "--title",
        "Drop the table",
        "--by",
        FOUNDER,
        "--stakes",
        "high",
    ]));
    p
}

/// The settle is refused, names the gate and writes nothing.
#[track_caller]
fn settle_is_held_by_the_gate(p: &TestPolis) {
    let before = tree(p);
    let err = refused(p.polisd(&SETTLE_DROP));
    assert!(err.contains("stakes: high"), "{err}");
    assert!(tree(p) == before, "a refused settle wrote");
}

#[test]
fn a_sign_off_given_before_the_claim_does_not_open_the_high_stakes_gate() {
    // A sign-off of the contract while nobody had claimed it reviewed no work of its owner.
    let p = high_stakes_polis();
    p.citizen("codex-second-one", "openai", &[], "medium");
    p.save(
        "reviews/2026-01-01-0900-drop-the-table.md",
        "---\nreviewer: codex-second-one\ncontract: drop-the-table\ndecision: signed_off\n---\nFine by me.\n",
    );
    ok(p.polisd(&["contract", "claim", "drop-the-table", "--as", FOUNDER]));
    settle_is_held_by_the_gate(&p);
    ok(p.polisd(&SIGN_OFF_DROP));
    ok(p.polisd(&SETTLE_DROP));
}

#[test]
fn a_sign_off_by_someone_who_is_no_citizen_does_not_open_the_high_stakes_gate() {
    // The gate asks for another citizen's sign-off. A review file naming an id with no card
    // (written by hand, by the owner or anyone) is nobody's review.
    let p = high_stakes_polis();
    ok(p.polisd(&["contract", "claim", "drop-the-table", "--as", FOUNDER]));
    p.save(
        "reviews/2026-01-01-0900-drop-the-table.md",
        "---\nreviewer: made-up-reviewer\ncontract: drop-the-table\ndecision: signed_off\n---\nLooks good.\n",
    );
    settle_is_held_by_the_gate(&p);
    // A citizen's sign-off opens it.
    p.citizen("codex-second-one", "openai", &[], "medium");
    ok(p.polisd(&SIGN_OFF_DROP));
    ok(p.polisd(&SETTLE_DROP));
}

#[test]
fn a_review_override_is_a_persons_and_no_citizen_can_grant_it() {
    // `--review-override "PERSON: WHY"` records a person's decision to settle a high-stakes
    // contract unreviewed. The owner (or any citizen) naming itself there would be the agent
    // waiving its own chavruta review.
    let p = high_stakes_polis();
    p.citizen("codex-second-one", "openai", &[], "medium");
    ok(p.polisd(&["contract", "claim", "drop-the-table", "--as", FOUNDER]));
    let settle = |person: &str| {
        p.polisd(&[
            "contract",
            "settle",
            "drop-the-table",
            "--quality",
            "5",
            "--no-lesson",
            "x",
            "--review-override",
            &format!("{person}: looks fine to me"),
        ])
    };
    let before = tree(&p);
    for citizen in [FOUNDER, "codex-second-one", "polis-daemon"] {
        let err = refused(settle(citizen));
        assert!(err.contains("a person"), "{citizen}: {err}");
        assert!(tree(&p) == before, "{citizen}: a refused settle wrote");
    }
    ok(settle("Dana Whitfield"));
}

#[test]
fn a_settle_files_its_lesson_under_the_contracts_valid_tags_only() {
    // `required_tags` written by hand may hold what is no tag (`../x`, `Py`). The lesson's
    // folder is its first tag: such a tag must neither become a path nor fail the settle
    // after the contract has moved (the lesson then lost for good).
    let p = TestPolis::init(FOUNDER);
    for (id, tags, folder) in [
        ("mixed-tags", "[\"../../x\", Py, api]", "api"),
        ("no-good-tags", "[\"a/b\"]", "general"),
    ] {
        p.save(
            &format!("contracts/open/{id}.md"),
            &format!("---\ncontract_id: {id}\nopened_by: {FOUNDER}\nowner: {FOUNDER}\nstatus: claimed\nrequired_tags: {tags}\n---\n\n## Intent\n\nx\n"),
        );
        let out = ok(p.polisd(&[
            "contract",
            "settle",
            id,
            "--quality",
            "3",
            "--lesson",
            &format!("What {id} taught."),
            "--impact",
            "3",
            "--json",
        ]));
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let path = v["lesson"]["path"].as_str().unwrap_or_default().to_string();
        assert!(path.starts_with(&format!("lessons/{folder}/")), "{v}");
        assert!(p.exists(&path), "{path}");
    }
    assert!(!p.dir.path().join("x").exists());
    assert_eq!(lines_with(&p, "filed lesson"), 2);
}

/// A command that tells a citizen at once while a daemon runs (a review asking for changes)
/// leaves the daemon's state folder to the daemon: a load and save of `state.json` there could
/// put an older copy back over the one the daemon saved meanwhile. The inbox's own markers keep
/// the notice from being sent twice, so the notice still arrives, once.
#[test]
fn a_notice_sent_while_a_daemon_runs_leaves_the_daemons_state_alone() {
    let p = polis_with_contract();
    p.citizen("codex-second-one", "openai", &[], "medium");
    ok(p.polisd(&["contract", "claim", "fix-the-login-bug", "--as", FOUNDER]));
    // Stand in for a daemon: its lock held, its state folder as it left it.
    let dir = p.polis_state_dir();
    std::fs::create_dir_all(&dir).unwrap();
    let lock = std::fs::File::create(dir.join("daemon.lock")).unwrap();
    fs4::fs_std::FileExt::lock_exclusive(&lock).unwrap();
    let files = || {
        let mut names: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.is_file())
            // The notes of appended chronicle lines are the one file a command writes there:
            // appended under their own lock, for the running daemon to take.
            .filter(|p| !p.ends_with("chronicle-appended.md"))
            .map(|p| {
                let bytes = std::fs::read(&p).unwrap();
                (p.file_name().unwrap().to_string_lossy().into_owned(), bytes)
            })
            .collect();
        names.sort();
        names
    };
    let before = files();
    let review = [
        "review",
        "fix-the-login-bug",
        "--as",
        "codex-second-one",
        "--decision",
        "requested_changes",
    ];
    ok(p.polisd(&review));
    assert!(
        files() == before,
        "the command wrote into the running daemon's state folder: {:?}",
        files().iter().map(|(n, _)| n).collect::<Vec<_>>()
    );
    let inbox = p.read(&format!("citizens/{FOUNDER}/inbox.md"));
    assert_eq!(inbox.matches("requested_changes").count(), 1, "{inbox}");
    drop(lock);
}

/// A review's file is `reviews/<YYYY-MM-DD-HHMM>-<cid>.md`, 16 bytes longer than the
/// contract's own name. `contract open` made ids up to the file-name limit, so a contract it
/// opened could never be reviewed (a `stakes: high` one never settled), and the review failed
/// with the system's "File name too long". Now open keeps room for the stamp, and a review of
/// a longer hand-written id is refused in one line that says what to do.
#[test]
fn a_contract_polisd_opens_can_be_reviewed_and_a_longer_id_is_refused_in_one_line() {
    let p = TestPolis::init(FOUNDER);
    let reviewer = "codex-second-one";
    p.citizen(reviewer, "openai", &[], "medium");
    let too_long = "r".repeat(240);
    let before = tree(&p);
    let out = p.polisd(&["contract", "open", "--title", &too_long, "--by", FOUNDER]);
    assert_eq!(out.status.code(), Some(2), "{}", describe(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("too long"),
        "{}",
        describe(&out)
    );
    assert!(tree(&p) == before, "a refused open wrote");
    let longest = "r".repeat(236);
    ok(p.polisd(&["contract", "open", "--title", &longest, "--by", FOUNDER]));
    ok(p.polisd(&["contract", "claim", &longest, "--as", FOUNDER]));
    ok(p.polisd(&[
        "review",
        &longest,
        "--as",
        reviewer,
        "--decision",
        "signed_off",
    ]));
    let reviews = std::fs::read_dir(p.path("reviews"))
        .unwrap()
        .filter(|e| {
            let name = e.as_ref().unwrap().file_name();
            name.to_string_lossy().ends_with(&format!("-{longest}.md"))
        })
        .count();
    assert_eq!(reviews, 1);
    // A hand-written contract whose id leaves no room for the stamp.
    let hand = "h".repeat(245);
    std::fs::write(
        p.path(&format!("contracts/open/{hand}.md")),
        format!(
            "---\ncontract_id: {hand}\ntitle: by hand\nopened_by: {FOUNDER}\nopened_at: 2026-03-02 10:00:00\nowner: {FOUNDER}\nstatus: claimed\nstakes: high\nrequired_tags: []\n---\n\n# by hand\n"
        ),
    )
    .unwrap();
    let before = tree(&p);
    let err = refused(p.polisd(&[
        "review",
        &hand,
        "--as",
        reviewer,
        "--decision",
        "signed_off",
    ]));
    assert!(
        err.contains("too long for a file name") && err.contains("shorter id"),
        "{err}"
    );
    assert!(tree(&p) == before, "a refused review wrote");
}
