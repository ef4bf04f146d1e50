//! `polisd check`: what it finds, how it reports it, and what resolves a finding.

use super::{
    contract, describe, edit_founder_card, json, keys, set, stdout, FOUNDER, FOUNDER_CARD,
};
use crate::harness::{self, TestPolis, BIN};
use serde_json::Value;
use std::process::Command;

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

/// A vote file the tally cannot read counts for nobody: one whose vote is not a vote word, one
/// whose frontmatter does not parse, one holding git's conflict markers (a citizen who voted
/// two ways on two machines). Each was skipped in silence, `check` said `0 errors`; now each
/// is a finding on the vote file's line, shown by `tally` and `status` too.
#[test]
fn a_vote_file_the_tally_cannot_count_is_reported() {
    let p = TestPolis::init(FOUNDER);
    p.citizen("codex-second-two", "openai", &[("python", 3)], "medium");
    p.citizen("gemini-third-three", "google", &[("python", 3)], "medium");
    p.citizen("aider-fourth-four", "other", &[("python", 3)], "medium");
    let aid = "2026-11-01-quality-floor";
    p.save(
        &format!("amendments/proposed/{aid}.md"),
        &format!(
            "---\namendment_id: {aid}\ntitle: Quality floor\nproposed_by: {FOUNDER}\n\
             proposed_at: '2099-11-01 10:00:00'\nstatus: proposed\nquorum_required: 4\n\
             expires_at: '2099-12-01'\n---\n\n# Quality floor\n"
        ),
    );
    let vote = |who: &str, vote: &str| {
        format!("---\namendment_id: {aid}\nvoter: {who}\n{vote}voted_at: 2099-11-01 10:05\n---\n")
    };
    let dir = format!("amendments/votes/{aid}");
    p.save(
        &format!("{dir}/codex-second-two.md"),
        &vote("codex-second-two", "vote: yes\n"),
    );
    p.save(
        &format!("{dir}/gemini-third-three.md"),
        &vote(
            "gemini-third-three",
            "<<<<<<< HEAD\nvote: agree\n=======\nvote: disagree\n>>>>>>> origin/main\n",
        ),
    );
    p.save(
        &format!("{dir}/aider-fourth-four.md"),
        &vote("aider-fourth-four", "vote: [agree\n"),
    );
    let check = p.polisd(&["check", "--json"]);
    assert_eq!(check.status.code(), Some(1), "{}", describe(&check));
    let report = json(&check);
    let on = |code: &str, who: &str| -> Vec<serde_json::Value> {
        with_code(&report, code)
            .into_iter()
            .filter(|f| f["path"] == format!("{dir}/{who}.md").as_str())
            .cloned()
            .collect()
    };
    let yes = on("P021", "codex-second-two");
    assert_eq!(yes.len(), 1, "{report:#}");
    assert_eq!(yes[0]["line"], 4, "{report:#}");
    let message = yes[0]["message"].as_str().unwrap();
    assert!(
        message.contains("`vote: yes`") && message.contains("vote: agree"),
        "{message}"
    );
    let markers = on("P023", "gemini-third-three");
    assert_eq!(markers.len(), 1, "{report:#}");
    assert_eq!(markers[0]["line"], 4, "{report:#}");
    let yaml = on("P002", "aider-fourth-four");
    assert_eq!(yaml.len(), 1, "{report:#}");
    assert!(yaml[0]["line"].is_u64(), "{report:#}");
    let tally = json(&p.polisd(&["tally", "--dry-run", "--json"]));
    assert_eq!(tally["malformed"].as_array().unwrap().len(), 3, "{tally:#}");
    let status = stdout(&p.polisd(&["status"]));
    assert!(
        status.contains(&format!("malformed: {dir}/codex-second-two.md")),
        "{status}"
    );
    // A readable vote file is no finding.
    p.save(
        &format!("{dir}/codex-second-two.md"),
        &vote("codex-second-two", "vote: agree\n"),
    );
    let report = json(&p.polisd(&["check", "--json"]));
    assert!(
        report["findings"]
            .as_array()
            .unwrap()
            .iter()
            .all(|f| f["path"] != format!("{dir}/codex-second-two.md").as_str()),
        "{report:#}"
    );
}

/// A file in `proposed/` whose status says `ratified` is an interrupted ratification only when
/// its votes reach the quorum. A proposer who types `status: ratified` alone made polisd move
/// the file, chronicle `ratified amendment` as `polis-daemon` and tell every citizen to edit
/// the constitution; now the tally leaves it and `check` names the line. With the votes there,
/// the interrupted move is still finished.
#[test]
fn a_status_ratified_typed_without_the_votes_is_reported_and_never_finished() {
    let p = TestPolis::init(FOUNDER);
    for id in [
        "codex-second-two",
        "gemini-third-three",
        "aider-fourth-four",
    ] {
        p.citizen(id, "openai", &[("python", 3)], "medium");
    }
    let aid = "2026-11-01-quality-floor";
    let rel = format!("amendments/proposed/{aid}.md");
    let text = |agree: &str| {
        format!(
            "---\namendment_id: {aid}\ntitle: Quality floor\nproposed_by: {FOUNDER}\n\
             proposed_at: '2026-11-01 10:00:00'\nstatus: ratified\nquorum_required: 3\n\
             votes:\n  agree: [{agree}]\nexpires_at: '2099-12-01'\n---\n\n# Quality floor\n"
        )
    };
    let forged = text(FOUNDER);
    p.save(&rel, &forged);
    let chronicle = p.read("chronicle.md");
    let tally = p.polisd(&["tally"]);
    assert!(tally.status.success(), "{}", describe(&tally));
    assert!(
        stdout(&tally).contains(&format!("malformed {rel}:6")),
        "{}",
        describe(&tally)
    );
    assert_eq!(p.read(&rel), forged);
    assert!(!p.exists(&format!("amendments/ratified/{aid}.md")));
    assert_eq!(p.read("chronicle.md"), chronicle);
    assert!(
        !p.read("citizens/codex-second-two/inbox.md")
            .contains("amendment-ratified"),
        "{}",
        p.read("citizens/codex-second-two/inbox.md")
    );
    let check = p.polisd(&["check", "--json"]);
    assert_eq!(check.status.code(), Some(1), "{}", describe(&check));
    let report = json(&check);
    let p021 = with_code(&report, "P021");
    assert_eq!(p021.len(), 1, "{report:#}");
    assert_eq!(p021[0]["path"], rel.as_str());
    assert_eq!(p021[0]["line"], 6);
    assert!(
        p021[0]["message"]
            .as_str()
            .unwrap()
            .contains("1 agree of 3 needed"),
        "{report:#}"
    );
    // The votes that reach the quorum make it a ratification the tally finishes.
    p.save(
        &rel,
        &text(&format!("{FOUNDER}, codex-second-two, gemini-third-three")),
    );
    let tally = p.polisd(&["tally"]);
    assert!(tally.status.success(), "{}", describe(&tally));
    assert!(p.exists(&format!("amendments/ratified/{aid}.md")));
    assert!(p.read("chronicle.md").contains("ratified amendment"));
}

/// SPEC §8: a ratification sets `status` and `ratified_at`, then moves the file. A frontmatter
/// written as one flow mapping has no `status:` line to set, so the outcome cannot be recorded:
/// the file must not be chronicled as ratified nor moved still saying `proposed`, and `check`
/// names it.
#[test]
fn an_amendment_whose_status_the_tally_cannot_set_is_reported_not_moved() {
    let p = TestPolis::init(FOUNDER);
    p.citizen("codex-second-two", "openai", &[("python", 3)], "medium");
    let rel = "amendments/proposed/2026-01-05-flow.md";
    let text = format!(
        "---\n{{amendment_id: 2026-01-05-flow, title: Flow, proposed_by: {FOUNDER}, \
         proposed_at: '2026-01-05 10:00:00', status: proposed, expires_at: '2099-01-01', \
         votes: {{agree: [codex-second-two]}}}}\n---\n\nBody.\n"
    );
    p.save(rel, &text);
    let tally = p.polisd(&["tally"]);
    assert!(
        stdout(&tally).contains("malformed amendments/proposed/2026-01-05-flow.md"),
        "{}",
        describe(&tally)
    );
    assert!(!p.exists("amendments/ratified/2026-01-05-flow.md"));
    assert_eq!(p.read(rel), text);
    assert!(
        !p.read("chronicle.md").contains("ratified amendment"),
        "{}",
        p.read("chronicle.md")
    );
    let report = json(&p.polisd(&["check", "--json"]));
    let p021 = with_code(&report, "P021");
    assert_eq!(p021.len(), 1, "{report:#}");
    assert_eq!(p021[0]["path"], rel);
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
        // One line that says what to do, not only what is wrong.
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.trim_end().lines().count(), 1, "{cmd:?}: {err}");
        assert!(err.contains("polisd init"), "{cmd:?}: {err}");
    }
    // Nothing was created in the folder that is not a polis.
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert!(left.is_empty(), "{left:?}");
}
