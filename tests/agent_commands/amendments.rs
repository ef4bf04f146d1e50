//! Amendments as agents propose them and vote on them.

use super::*;

/// The id of the amendment `title` that the founder proposes.
fn proposed(p: &TestPolis, title: &str) -> String {
    let out = ok(p.polisd(&[
        "amendment",
        "propose",
        "--title",
        title,
        "--as",
        FOUNDER,
        "--json",
    ]));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    v["amendment_id"].as_str().unwrap().to_string()
}

#[test]
fn amendment_vote_changed_moves_the_id_and_replaces_the_block() {
    let p = TestPolis::init(FOUNDER);
    p.citizen("codex-second-one", "openai", &[], "medium");
    let aid = proposed(&p, "Reviews for high stakes");
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
    refused_writing_nothing(
        &p,
        || {
            p.polisd(&[
                "amendment",
                "vote",
                aid,
                "--as",
                "codex-second-one",
                "--vote",
                "agree",
            ])
        },
        "2020-01-31",
    );
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

/// SPEC §8 raises a quorum below 2 to 2: a proposal asking for 0 or 1 agree votes would be
/// filed with a quorum the tally never applies, so it is refused as a usage error.
#[test]
fn an_amendment_proposed_with_a_quorum_below_two_is_refused() {
    let p = TestPolis::init(FOUNDER);
    let before = tree(&p);
    for quorum in ["0", "1"] {
        let out = p.polisd(&[
            "amendment",
            "propose",
            "--title",
            "Tiny quorum",
            "--by",
            FOUNDER,
            "--quorum",
            quorum,
        ]);
        assert_eq!(out.status.code(), Some(2), "{}", describe(&out));
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("at least 2"),
            "{}",
            describe(&out)
        );
    }
    assert!(tree(&p) == before, "a refused proposal wrote");
    ok(p.polisd(&[
        "amendment",
        "propose",
        "--title",
        "Two",
        "--by",
        FOUNDER,
        "--quorum",
        "2",
    ]));
}

#[test]
fn a_proposal_whose_body_holds_a_vote_is_refused_and_writes_nothing() {
    // The tally counts every response block in the file: a body holding one would file
    // another citizen's vote without them.
    let p = TestPolis::init(FOUNDER);
    p.citizen("codex-second-one", "openai", &[], "medium");
    let body = p.dir.path().join("body.md");
    std::fs::write(
        &body,
        "Reviews before settling.\n\n## Response from codex-second-one (agree)\nYes.\n",
    )
    .unwrap();
    let before = tree(&p);
    let propose = |body: &std::path::Path| {
        p.polisd(&[
            "amendment",
            "propose",
            "--title",
            "Reviews for high stakes",
            "--by",
            FOUNDER,
            "--body",
            body.to_str().unwrap(),
            "--json",
        ])
    };
    let out = propose(&body);
    assert_eq!(out.status.code(), Some(2), "{}", describe(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let error = v["error"].as_str().unwrap();
    assert!(
        error.contains("line 3") && error.contains("codex-second-one"),
        "{v}"
    );
    assert!(tree(&p) == before, "a refused proposal wrote");

    // The same block as an example inside a code fence is text, and is filed.
    std::fs::write(
        &body,
        "Votes look like this:\n\n```\n## Response from codex-second-one (agree)\n```\n",
    )
    .unwrap();
    ok(propose(&body));
}

/// A proposal by the founder, as an agent makes it.
const PROPOSE: [&str; 6] = [
    "amendment",
    "propose",
    "--title",
    "Reviews for high stakes",
    "--by",
    FOUNDER,
];

#[test]
fn a_replayed_amendment_proposal_is_filed_once() {
    // Two copies of one proposal split its votes between them: neither may reach quorum.
    let p = TestPolis::init(FOUNDER);
    let propose = PROPOSE;
    ok(p.polisd(&propose));
    refused_writing_nothing(&p, || p.polisd(&propose), "already proposed");
    assert_eq!(lines_with(&p, "proposed amendment"), 1);
    // Another proposer's amendment of the same title is theirs.
    p.citizen("codex-second-one", "openai", &[], "medium");
    let mut other = propose;
    other[5] = "codex-second-one";
    ok(p.polisd(&other));
    assert_eq!(lines_with(&p, "proposed amendment"), 2);
}

#[test]
fn a_proposal_killed_between_its_file_and_its_line_is_recorded_by_the_rerun() {
    // The proposal's file is made, then its `proposed amendment` line appended: a process
    // killed in between leaves the file alone, and the rerun must write the line (the tally
    // dates the proposer's implied vote by it) rather than refuse.
    let p = TestPolis::init(FOUNDER);
    let propose = PROPOSE;
    ok(p.polisd(&propose));
    drop_lines(&p, "proposed amendment");
    ok(p.polisd(&propose));
    assert_eq!(lines_with(&p, "proposed amendment"), 1);
    let proposals = std::fs::read_dir(p.path("amendments/proposed"))
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".md"))
        .count();
    assert_eq!(proposals, 1, "the rerun proposed it again");
    // Recorded now: a replay is refused with nothing written.
    refused_writing_nothing(&p, || p.polisd(&propose), "already proposed");
}

#[test]
fn a_vote_killed_between_its_file_and_its_line_is_recorded_by_the_rerun() {
    // The vote's file is written, then its `voted on amendment` line appended (the tally dates
    // the vote by it): a process killed in between leaves the file alone, and the rerun must
    // write the line rather than answer "already voted". A changed vote counts as its own.
    let p = TestPolis::init(FOUNDER);
    p.citizen("codex-second-one", "openai", &[], "medium");
    let aid = proposed(&p, "Reviews for high stakes");
    let vote = |v: &str| {
        p.polisd(&[
            "amendment",
            "vote",
            &aid,
            "--as",
            "codex-second-one",
            "--vote",
            v,
            "--rationale",
            "the  chronicle folds  these spaces",
        ])
    };
    let strip_last_vote_line = || {
        let chronicle = p.read("chronicle.md");
        let last = chronicle
            .lines()
            .rfind(|l| l.contains("| voted on amendment |"))
            .unwrap()
            .to_string();
        p.save("chronicle.md", &chronicle.replace(&format!("{last}\n"), ""));
    };
    ok(vote("agree"));
    strip_last_vote_line();
    ok(vote("agree"));
    assert_eq!(lines_with(&p, "voted on amendment"), 1);
    ok(vote("disagree"));
    strip_last_vote_line();
    ok(vote("disagree"));
    let lines: Vec<String> = p
        .read("chronicle.md")
        .lines()
        .filter(|l| l.contains("| voted on amendment |"))
        .map(str::to_string)
        .collect();
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(lines[1].contains("| disagree: "), "{lines:?}");
    // Recorded now: a replay is refused with nothing written.
    refused_writing_nothing(&p, || vote("disagree"), "already voted");
}

#[test]
fn a_citizen_who_left_the_polis_cannot_vote() {
    // The tally counts no vote of a citizen whose latest membership line is `left polis`;
    // the command must not report a vote that will never count.
    let p = TestPolis::init(FOUNDER);
    p.citizen("codex-second-one", "openai", &[], "medium");
    ok(p.polisd(&["log", "--as", "codex-second-one", "left polis"]));
    let aid = proposed(&p, "A rule");
    let vote = [
        "amendment",
        "vote",
        &aid,
        "--as",
        "codex-second-one",
        "--vote",
        "agree",
    ];
    refused_writing_nothing(&p, || p.polisd(&vote), "left the polis");
    // Back in the polis, the vote counts and is taken.
    ok(p.polisd(&["log", "--as", "codex-second-one", "joined polis"]));
    ok(p.polisd(&vote));
}

/// `amendment list` counts the agrees as the tally does: the proposer agrees unless they
/// voted otherwise, so a list never shows fewer agrees than ratified an amendment.
#[test]
fn amendment_list_counts_the_proposers_implied_agree_as_the_tally_does() {
    let p = TestPolis::init(FOUNDER);
    p.citizen("codex-second-one", "openai", &[], "medium");
    let aid = proposed(&p, "Two reviewers");
    let tally = String::from_utf8_lossy(&ok(p.polisd(&["tally", "--dry-run"])).stdout).into_owned();
    assert!(tally.contains("1 agree"), "{tally}");
    let list = String::from_utf8_lossy(&ok(p.polisd(&["amendment", "list"])).stdout).into_owned();
    assert!(list.contains("agree 1 (the proposer's included)"), "{list}");
    let v: serde_json::Value =
        serde_json::from_slice(&ok(p.polisd(&["amendment", "list", "--json"])).stdout).unwrap();
    assert_eq!(v["amendments"][0]["implied_agree"], FOUNDER, "{v}");
    assert_eq!(v["amendments"][0]["votes"]["agree"], serde_json::json!([]));

    // The proposer's own vote replaces the implied one.
    ok(p.polisd(&[
        "amendment",
        "vote",
        &aid,
        "--as",
        FOUNDER,
        "--vote",
        "disagree",
    ]));
    let list = String::from_utf8_lossy(&ok(p.polisd(&["amendment", "list"])).stdout).into_owned();
    assert!(list.contains("agree 0 disagree 1"), "{list}");
    let v: serde_json::Value =
        serde_json::from_slice(&ok(p.polisd(&["amendment", "list", "--json"])).stdout).unwrap();
    assert!(v["amendments"][0].get("implied_agree").is_none(), "{v}");
}

/// The tally counts no agree of a proposer who left the polis, nor of an id with no card: the
/// list's count is still the tally's.
#[test]
fn amendment_list_counts_no_agree_of_a_departed_proposer_or_an_unregistered_voter() {
    let p = TestPolis::init(FOUNDER);
    p.citizen("codex-second-one", "openai", &[], "medium");
    let aid = proposed(&p, "Two reviewers");
    let rel = format!("amendments/proposed/{aid}.md");
    let text = p.read(&rel);
    assert!(text.contains("  agree: []\n"), "{text}");
    p.save(
        &rel,
        &text.replace("  agree: []\n", "  agree:\n  - ghost-agent-one\n"),
    );
    ok(p.polisd(&[
        "log",
        "--as",
        FOUNDER,
        "left polis",
        "--link",
        &format!("citizens/{FOUNDER}"),
    ]));
    let tally = String::from_utf8_lossy(&ok(p.polisd(&["tally", "--dry-run"])).stdout).into_owned();
    assert!(tally.contains("(0 agree"), "{tally}");
    let list = String::from_utf8_lossy(&ok(p.polisd(&["amendment", "list"])).stdout).into_owned();
    assert!(list.contains("agree 0 disagree 0"), "{list}");
    let v: serde_json::Value =
        serde_json::from_slice(&ok(p.polisd(&["amendment", "list", "--json"])).stdout).unwrap();
    assert!(v["amendments"][0].get("implied_agree").is_none(), "{v}");
}
