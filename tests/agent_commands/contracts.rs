//! Contracts from claim to settlement or abandonment: claims that cannot race, an ending
//! that is never in two folders, and an ending only by the contract's owner.

use super::*;

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
    p.crashed(
        &[
            "contract",
            "settle",
            "fix-the-login-bug",
            "--no-lesson",
            "the crash is the point here",
            "--quality",
            "4",
            "--minutes",
            "20",
        ],
        "POLISD_TEST_CRASH_BEFORE_MOVE",
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
fn an_ending_interrupted_before_its_move_is_finished_by_that_ending_and_by_nothing_else() {
    // A crash between the edit and the move leaves `status: settled` or `abandoned` in
    // `open/`. A claim must not revive it, nor the other ending turn it into itself: only the
    // same command, run again, finishes the move.
    let p = polis_with_contract();
    ok(p.polisd(&[
        "contract", "open", "--title", "Dropped", "--by", FOUNDER, "--tags", "python",
    ]));
    ok(p.polisd(&["contract", "claim", "fix-the-login-bug", "--as", FOUNDER]));
    ok(p.polisd(&["contract", "claim", "dropped", "--as", FOUNDER]));
    let crash = |args: &[&str]| p.crashed(args, "POLISD_TEST_CRASH_BEFORE_MOVE");
    let settle = [
        "contract",
        "settle",
        "fix-the-login-bug",
        "--quality",
        "4",
        "--no-lesson",
        "x",
    ];
    crash(&settle);
    crash(&["contract", "abandon", "dropped"]);
    p.citizen("codex-second-one", "openai", &[], "medium");
    let before = tree(&p);
    for (args, how) in [
        (
            vec!["contract", "claim", "dropped", "--as", FOUNDER],
            "contract abandon dropped",
        ),
        (
            vec![
                "contract",
                "claim",
                "fix-the-login-bug",
                "--as",
                "codex-second-one",
                "--force",
            ],
            "contract settle fix-the-login-bug",
        ),
        (
            vec!["contract", "abandon", "fix-the-login-bug"],
            "contract settle fix-the-login-bug",
        ),
        (
            vec![
                "contract",
                "settle",
                "dropped",
                "--quality",
                "3",
                "--by",
                FOUNDER,
                "--no-lesson",
                "x",
            ],
            "contract abandon dropped",
        ),
    ] {
        let err = refused(p.polisd(&args));
        assert!(err.contains(how), "{args:?}: {err}");
        assert!(tree(&p) == before, "{args:?} wrote");
    }
    ok(p.polisd(&settle));
    ok(p.polisd(&["contract", "abandon", "dropped"]));
    assert!(p
        .read("contracts/settled/fix-the-login-bug.md")
        .contains("\nstatus: settled\n"));
    assert!(p
        .read("contracts/abandoned/dropped.md")
        .contains("\nstatus: abandoned\n"));
}

#[test]
fn an_interrupted_abandon_of_an_unclaimed_contract_finishes_and_is_recorded_once() {
    // Nobody owns it, so the rerun's line is its opener's, as the first run's would have
    // been; it must not fall to a system identity the chronicle refuses after the move.
    let p = polis_with_contract();
    p.crashed(
        &["contract", "abandon", "fix-the-login-bug"],
        "POLISD_TEST_CRASH_BEFORE_MOVE",
    );
    let out = ok(p.polisd(&["contract", "abandon", "fix-the-login-bug", "--json"]));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["resumed"], true, "{v}");
    assert!(p.exists("contracts/abandoned/fix-the-login-bug.md"));
    assert_eq!(lines_with(&p, "abandoned contract"), 1);
    assert!(p.read("chronicle.md").contains(&format!(
        "| {FOUNDER} | abandoned contract | [[contracts/abandoned/fix-the-login-bug]]"
    )));
    refused(p.polisd(&["contract", "abandon", "fix-the-login-bug"]));
}

#[test]
fn a_settle_killed_once_its_line_is_written_has_filed_its_lesson() {
    // A rerun finds the settlement recorded and is refused: whatever the killed run was asked
    // for must be on disk by then, or the owner's lesson is lost for good.
    let p = polis_with_contract();
    ok(p.polisd(&["contract", "claim", "fix-the-login-bug", "--as", FOUNDER]));
    let settle = [
        "contract",
        "settle",
        "fix-the-login-bug",
        "--quality",
        "4",
        "--lesson",
        "Reproduce the login bug before fixing it.",
        "--impact",
        "3",
    ];
    p.crashed(&settle, "POLISD_TEST_CRASH_AFTER_LINE");
    assert_eq!(lines_with(&p, "settled contract"), 1);
    let err = refused(p.polisd(&settle));
    assert!(err.contains("already settled"), "{err}");
    assert_eq!(lines_with(&p, "filed lesson"), 1);
    let lessons: Vec<_> = std::fs::read_dir(p.path("lessons/python"))
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    assert_eq!(lessons.len(), 1, "{lessons:?}");
    let lesson = std::fs::read_to_string(&lessons[0]).unwrap();
    assert!(
        lesson.contains("Reproduce the login bug before fixing it.")
            && lesson.contains("fix-the-login-bug"),
        "{lesson}"
    );
}

#[test]
fn an_ending_replayed_after_the_chronicle_rolled_over_is_refused_and_recorded_once() {
    // The ending's line went to last quarter's archive with the rollover: a replayed settle or
    // abandon must find it there, not take the file in `settled/` for an interrupted run.
    let p = polis_with_contract();
    ok(p.polisd(&[
        "contract", "open", "--title", "Dropped", "--by", FOUNDER, "--tags", "python",
    ]));
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
    ok(p.polisd(&settle));
    ok(p.polisd(&["contract", "abandon", "dropped"]));
    // The rollover as the daemon makes it: the lines move to the archive, byte for byte.
    p.save("chronicle-2026-Q3.md", &p.read("chronicle.md"));
    p.save(
        "chronicle.md",
        "---\nfile_type: chronicle\nrollover_policy: quarterly\ncurrent_period: 2026-Q4\n---\n\n",
    );
    let before = tree(&p);
    let err = refused(p.polisd(&settle));
    assert!(err.contains("already settled"), "{err}");
    let err = refused(p.polisd(&["contract", "abandon", "dropped"]));
    assert!(err.contains("already abandoned"), "{err}");
    assert!(tree(&p) == before, "a replayed ending wrote");
}

#[test]
fn a_claim_killed_between_its_edit_and_its_line_is_recorded_by_the_rerun() {
    // The file names the claimer, but the process died before its `claimed contract` line:
    // the rerun must write that line, not answer "already yours" with the claim unrecorded.
    let p = polis_with_contract();
    let rel = "contracts/open/fix-the-login-bug.md";
    let claimed = p
        .read(rel)
        .replace("\nowner: null\n", &format!("\nowner: {FOUNDER}\n"))
        .replace("\nstatus: proposed\n", "\nstatus: claimed\n");
    assert!(
        claimed.contains(&format!("\nowner: {FOUNDER}\n")),
        "{claimed}"
    );
    p.save(rel, &claimed);
    let out = ok(p.polisd(&["contract", "claim", "fix-the-login-bug", "--as", FOUNDER]));
    assert!(
        !String::from_utf8_lossy(&out.stdout).contains("already yours"),
        "{}",
        describe(&out)
    );
    assert!(p.read("chronicle.md").contains(&format!(
        "| {FOUNDER} | claimed contract | [[contracts/open/fix-the-login-bug]] | -"
    )));
    // Recorded now: a third run writes nothing.
    let before = tree(&p);
    let again = ok(p.polisd(&["contract", "claim", "fix-the-login-bug", "--as", FOUNDER]));
    assert!(String::from_utf8_lossy(&again.stdout).contains("already yours"));
    assert!(tree(&p) == before, "a recorded claim was recorded again");
    assert_eq!(lines_with(&p, "claimed contract"), 1);
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
fn an_abandon_reason_reads_back_as_written_whatever_it_holds() {
    // The reason goes into the contract's frontmatter. Written as the reference writes it,
    // `C:\qux` or a leading `@` made the whole frontmatter invalid YAML (the contract
    // unreadable), and `yes` or `42` read back as a boolean or a number. (A second line is
    // refused: a reason is one line, `one_line.rs`.)
    let p = TestPolis::init(FOUNDER);
    let reasons = [
        "broke C:\\qux: see the log",
        "@someone said so",
        "`make` fails",
        "*everything* changed",
        "!important",
        "%done",
        "&a b",
        "|",
        "yes",
        "42",
        "2026-01-01",
        "~",
        "tab\there",
        "say \"hi\" \\ back",
        "plain words, as the reference writes them",
    ];
    for (n, reason) in reasons.iter().enumerate() {
        let title = format!("Reason {n}");
        ok(p.polisd(&["contract", "open", "--title", &title, "--by", FOUNDER]));
        let id = format!("reason-{n}");
        ok(p.polisd(&["contract", "abandon", &id, "--reason", reason]));
        let text = p.read(&format!("contracts/abandoned/{id}.md"));
        let record = polisd::protocol::frontmatter::parse(&text)
            .unwrap_or_else(|e| panic!("{reason:?}: {e}\n{text}"));
        assert_eq!(
            record.fields.get("abandoned_reason"),
            &polisd::yaml::Value::Str(reason.trim().to_string()),
            "{reason:?}:\n{text}"
        );
    }
    // Where the reference's bytes read back right, they are kept.
    assert!(p
        .read("contracts/abandoned/reason-14.md")
        .contains("\nabandoned_reason: plain words, as the reference writes them\n"));
    let check = p.polisd(&["check", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&check.stdout).unwrap();
    let broken: Vec<_> = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["code"] == "P002")
        .collect();
    assert!(broken.is_empty(), "{broken:#?}");
}

#[test]
fn settling_a_contract_kept_in_crlf_adds_its_sections_in_crlf() {
    let p = polis_with_contract();
    ok(p.polisd(&["contract", "claim", "fix-the-login-bug", "--as", FOUNDER]));
    let open = "contracts/open/fix-the-login-bug.md";
    let crlf = p.read(open).replace("\r\n", "\n").replace('\n', "\r\n");
    p.save(open, &crlf);
    ok(p.polisd(&[
        "contract",
        "settle",
        "fix-the-login-bug",
        "--quality",
        "4",
        "--no-lesson",
        "a one-line fix",
        "--suggest",
        "codex-second-one:check the form",
    ]));
    let settled = p.read("contracts/settled/fix-the-login-bug.md");
    assert!(settled.contains("## Settlement\r\n"), "{settled:?}");
    let bare = settled.replace("\r\n", "");
    assert!(!bare.contains('\n'), "a line end without CR: {settled:?}");
}

/// A card that claims `self_rating: 99` counts as 5, the top of the scale: at 99 its prior
/// mean outweighed any record and it won every routing on the tag. `check` names the value.
#[test]
fn a_self_rating_above_the_scale_counts_as_its_top() {
    let p = polis_with_contract();
    p.citizen("alpha-agent-one", "anthropic", &[("python", 4)], "medium");
    p.citizen("gamer-agent-two", "openai", &[("python", 99)], "medium");
    let out = ok(p.polisd(&["route", "fix-the-login-bug", "--explain", "--json"]));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let gamer = v["scores"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["citizen"] == "gamer-agent-two")
        .unwrap_or_else(|| panic!("{v}"));
    assert_eq!(gamer["self_rating"], 1.0, "99/5 would be 19.8: {v}");
    let check = p.polisd(&["check", "--json"]);
    let c: serde_json::Value = serde_json::from_slice(&check.stdout).unwrap();
    assert!(
        c["findings"].as_array().unwrap().iter().any(|f| f["path"]
            == "citizens/gamer-agent-two/capability_card.yml"
            && f["message"]
                .as_str()
                .unwrap()
                .contains("self_rating: 99` is outside 1–5")),
        "{c}"
    );
}

/// Every command that acts for a citizen takes `--as ID`, the spelling `claim`, `abandon`,
/// `reserve` and `review` use; the three that name it `--by` (as the reference does) take both.
#[test]
fn every_command_that_acts_for_a_citizen_takes_as() {
    let p = polis_with_contract();
    ok(p.polisd(&[
        "contract",
        "open",
        "--title",
        "Write the docs",
        "--as",
        FOUNDER,
        "--tags",
        "python",
    ]));
    assert!(p.exists("contracts/open/write-the-docs.md"));
    ok(p.polisd(&["contract", "claim", "write-the-docs", "--as", FOUNDER]));
    ok(p.polisd(&[
        "contract",
        "settle",
        "write-the-docs",
        "--as",
        FOUNDER,
        "--quality",
        "4",
        "--no-lesson",
        "a test of the spelling",
    ]));
    assert!(p.exists("contracts/settled/write-the-docs.md"));
    ok(p.polisd(&[
        "amendment",
        "propose",
        "--title",
        "Shorter lines",
        "--as",
        FOUNDER,
    ]));
    assert_eq!(lines_with(&p, "proposed amendment"), 1);
}
