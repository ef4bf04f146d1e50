//! Council review with a real daemon and real files: the test plays every member,
//! writing their files, and checks what polisd writes back: `council.md`, anonymised packets,
//! prompts and notices, the contract's `review.status` and the chronicle line. Time moves by
//! the daemon's test clock (`POLISD_FAKE_NOW_FILE`), never by sleeping.

mod harness;

use harness::{ok, wait_for, TestPolis};
use std::path::PathBuf;
use std::process::Output;

const OWNER: &str = "claude-founder-one";
const A: &str = "claude-member-aaaa";
const B: &str = "codex-member-bbbb";
const C: &str = "gemini-member-cccc";
const D: &str = "claude-member-dddd";
const MEMBERS: [&str; 4] = [A, B, C, D];

#[track_caller]
fn refused(out: Output, why: &str) {
    assert_eq!(
        out.status.code(),
        Some(1),
        "expected a refusal: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(why), "{why} not in: {err}");
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
}

/// A polis whose citizens rate the `arch` tag differently, from three vendors.
fn polis() -> TestPolis {
    let p = TestPolis::init(OWNER);
    p.citizen(A, "anthropic", &[("arch", 5)], "medium");
    p.citizen(B, "openai", &[("arch", 4)], "medium");
    p.citizen(C, "google", &[("arch", 3)], "medium");
    p.citizen(D, "anthropic", &[("arch", 2)], "medium");
    p
}

/// The daemon's clock: a file holding an RFC 3339 time.
struct Clock {
    path: PathBuf,
    at: chrono::DateTime<chrono::Utc>,
}

impl Clock {
    fn new(p: &TestPolis) -> Clock {
        let c = Clock {
            path: p.dir.path().join("fake-now"),
            at: chrono::Utc::now(),
        };
        c.set();
        c
    }

    fn set(&self) {
        std::fs::write(&self.path, self.at.to_rfc3339()).unwrap();
    }

    fn advance_minutes(&mut self, m: i64) {
        self.at += chrono::Duration::minutes(m);
        self.set();
    }
}

fn contract(p: &TestPolis, id: &str, extra: &str) {
    p.save(
        &format!("contracts/open/{id}.md"),
        &format!(
            "---\ncontract_id: {id}\ntitle: Replace the cache layer\nopened_by: {OWNER}\nopened_at: '2026-11-30 10:00:00'\nowner: null\nstatus: proposed\nstakes: high\nrequired_tags: [arch]\n{extra}routing:\n  recommended_by_router: {OWNER}\n---\n\n## Intent\n\nReplace the cache layer.\n"
        ),
    );
}

/// Any change makes a pass: re-save the contract with its own bytes.
fn nudge(p: &TestPolis, id: &str) {
    let rel = format!("contracts/open/{id}.md");
    let text = p.read(&rel);
    p.save(&rel, &text);
}

fn words(n: usize, about: &str) -> String {
    let mut s = format!("My position on {about}.");
    let k = s.split_whitespace().count();
    for i in 0..n.saturating_sub(k) {
        s.push_str(&format!(" w{i}"));
    }
    s.push('\n');
    s
}

fn seat(cid: &str, n: usize, id: &str) -> String {
    format!("reviews/{cid}/round-{n}/{id}.md")
}

fn packet(cid: &str, n: usize) -> String {
    format!("reviews/{cid}/round-{n}-packet.md")
}

/// `polisd council write` from a file.
fn write(p: &TestPolis, cid: &str, id: &str, text: &str) -> Output {
    let file = p.dir.path().join(format!("{id}-contribution.md"));
    std::fs::write(&file, text).unwrap();
    p.polisd(&["council", "write", cid, "--as", id, file.to_str().unwrap()])
}

/// The council seed's anti-conformity directive, as the seed gives it: every round 2 prompt
/// must carry it byte for byte.
const DIRECTIVE: &str = "Anti-conformity directive. If your Round 1 position was correct, defend it. Do not update merely because peers disagree, because consensus is forming, or because a position is repeated by multiple members. Update only when presented with sound, validity-aligned reasoning that exposes a specific flaw in your earlier argument. Naming that flaw is required when you update; if you cannot name it, you should not update.";

fn inbox(p: &TestPolis, id: &str) -> String {
    p.read(&format!("citizens/{id}/inbox.md"))
}

/// Whether `id` has been asked for round `n` (0 restates the question).
fn asked(p: &TestPolis, id: &str, n: usize) -> bool {
    let text = inbox(p, id);
    if n == 0 {
        text.contains("It starts by restating the question")
    } else {
        text.contains(&format!("Round {n} of "))
    }
}

/// Waits for every one of `who` to be asked for round `n`.
#[track_caller]
fn wait_asked(p: &TestPolis, who: &[&str], n: usize) {
    wait_for(p, &format!("round {n} prompts to {who:?}"), || {
        who.iter().all(|m| asked(p, m, n))
    });
}

/// Lets the open round's time and both retries pass for the silent `who`, waiting for each
/// retry notice before moving the clock on (`retry_hours: 0.1`: 6 then 15 minutes).
fn outwait_retries(p: &TestPolis, clock: &mut Clock, cid: &str, round_minutes: i64, who: &str) {
    clock.advance_minutes(round_minutes);
    nudge(p, cid);
    wait_for(p, "retry 1", || {
        inbox(p, who).matches("(retry 1 of 2)").count() >= 1
    });
    // The retry extends the round, and every surface says so alike.
    let json = |args: &[&str]| -> serde_json::Value {
        serde_json::from_slice(&ok(p.polisd(args)).stdout).unwrap()
    };
    let council = json(&["council", "status", cid, "--json"]);
    let status = json(&["status", "--json"]);
    let row = status["councils"]
        .as_array()
        .and_then(|rows| rows.iter().find(|r| r["contract_id"] == cid))
        .unwrap_or_else(|| panic!("no council row in {status}"));
    assert!(council["closes_at"].is_string(), "{council}");
    assert_eq!(row["closes_at"], council["closes_at"], "{row}");
    clock.advance_minutes(7);
    nudge(p, cid);
    wait_for(p, "retry 2", || {
        inbox(p, who).matches("(retry 2 of 2)").count() >= 1
    });
    clock.advance_minutes(16);
    nudge(p, cid);
}

const VERDICT_BAD: &str = "---\ndecision: requested_changes\n---\n\n## Panel and mode\nFull council, three seats.\n\n## Chairman\nThe chair.\n\n## Acceptable compromises\n- keep the old cache behind a flag\n\n## Kill criteria\n- the latency could go up\n\n## Concrete next step\nThink about it more.\n\n## Unresolved questions\n- who owns the cache?\n\n## Key agreements\n- the cache must go\n\n## Key disagreements\n- Member B holds that the TTL is too short\n\n## Decision options\n- ship now: fast, risky\n- ship after a canary: slower, safer\n";

fn verdict_good(decision: &str) -> String {
    VERDICT_BAD
        .replace("decision: requested_changes", &format!("decision: {decision}"))
        .replace(
            "- the latency could go up",
            "- If p95 latency rises above 200 ms by 2027-01-15, invalidated → roll back to the old cache",
        )
        .replace("Think about it more.", "- Write the migration plan in docs/migration.md")
        + "\n## Confidence\nmedium, because the load test was small.\n"
}

#[test]
fn full_council_with_a_silent_seat_an_over_long_contribution_and_a_corrected_verdict() {
    let p = polis();
    let mut clock = Clock::new(&p);
    let _daemon = p.start_daemon_with(&[("POLISD_FAKE_NOW_FILE", clock.path.as_path())]);
    let cid = "cache-layer";
    contract(
        &p,
        cid,
        "review: {mode: council, round_hours: 1, retry_hours: 0.1}\n",
    );
    ok(p.polisd(&["contract", "claim", cid, "--as", OWNER]));
    let state = format!("reviews/{cid}/council.md");
    wait_for(&p, "the council to start on claim", || p.exists(&state));
    let text = p.read(&state);
    // Different vendors first (A anthropic, B openai, C google), then the chair: D. Nothing
    // named a panel: the `arch` tag picks the architecture triad's lenses.
    for row in [
        format!("| Member A | {A} | anthropic | aristotle |"),
        format!("| Member B | {B} | openai | ada |"),
        format!("| Member C | {C} | google | feynman |"),
    ] {
        assert!(text.contains(&row), "{row} not in:\n{text}");
    }
    assert!(text.contains(&format!("chairman: {D}")), "{text}");
    // The restatement gate first, each prompt carrying the seat's lens.
    wait_asked(&p, &[A, B, C], 0);
    assert!(
        inbox(&p, A).contains("Your lens for this council is `aristotle`: Sort the problem"),
        "{}",
        inbox(&p, A)
    );
    for m in [A, B, C] {
        ok(write(
            &p,
            cid,
            m,
            &format!("1) Swap the cache as {m} sees it. 2) Or: is the cache needed?\n"),
        ));
    }
    wait_asked(&p, &[A, B, C], 1);
    assert!(inbox(&p, A).contains("Round 1 is blind"));
    assert_eq!(p.count(D, "council-prompt"), 0, "the chair waits");

    // A writes by hand, over the limit; B through the command; C stays silent.
    p.save(&seat(cid, 1, A), &words(350, &format!("{B} and {C}")));
    ok(write(
        &p,
        cid,
        B,
        &words(120, &format!("what {A} will say")),
    ));
    wait_for(&p, "the over-limit notice", || {
        p.count(A, "council-over-limit") == 1
    });
    // Refusals: not a member, over twice the limit; nothing written.
    // (D chairs: it is told where its word goes instead.)
    refused(
        write(&p, cid, D, &words(50, "x")),
        &format!("chairs the council on `{cid}` and has no seat in its rounds: once every round has closed, polisd asks the chairman for reviews/{cid}/verdict.md"),
    );
    let before = p.read(&seat(cid, 1, B));
    refused(write(&p, cid, B, &words(650, "x")), "over twice");
    assert_eq!(p.read(&seat(cid, 1, B)), before);
    assert!(!p.exists(&seat(cid, 1, D)));
    assert!(
        !p.exists(&packet(cid, 1)),
        "round 1 is blind until it closes"
    );

    // The round's hour passes: C is asked twice more, then its seat is a labelled stub.
    outwait_retries(&p, &mut clock, cid, 61, C);
    assert!(inbox(&p, C).contains("Answer now, in 300 words or fewer"));
    wait_for(&p, "the round 1 packet", || p.exists(&packet(cid, 1)));
    let p1 = p.read(&packet(cid, 1));
    assert!(
        p1.contains("## Member C\n\n*[Simulated — written by polisd, not by this member]*\n\n> polisd wrote this stub because this seat did not answer round 1 of 3, even after 2 retries. Its lens, `feynman`"),
        "{p1}"
    );
    assert!(
        p1.contains("## Restating the question\n")
            && p1.contains("Swap the cache as [self] sees it"),
        "the gate's answers open the round 1 packet, anonymised: {p1}"
    );
    assert!(
        p1.contains("*[cut at 300 words: the contribution had 350]*"),
        "{p1}"
    );
    assert!(p1.contains("My position on Member B and Member C."), "{p1}");
    assert!(p1.contains("what Member A will say"), "{p1}");
    wait_asked(&p, &[A, B, C], 2);
    let text = inbox(&p, B);
    assert!(
        text.contains(DIRECTIVE),
        "the seed's directive, byte for byte: {text}"
    );
    assert!(text.contains("Engage at least 2 peers by label"), "{text}");
    let state_text = p.read(&state);
    assert!(state_text.contains("| 1 | 300 |"), "{state_text}");
    assert!(
        state_text.contains(&format!("({C}) |\n")),
        "the retries: {state_text}"
    );

    // Round 2: everyone writes (C is back), naming peers by id: the packet shows labels.
    ok(write(
        &p,
        cid,
        A,
        &words(200, &format!("the flaw {B} exposed")),
    ));
    ok(write(&p, cid, B, &words(200, &format!("{A} and {C}"))));
    p.save(
        &seat(cid, 2, C),
        &words(100, &format!("I, {C}, agree with {A}")),
    );
    wait_for(&p, "the round 2 packet", || p.exists(&packet(cid, 2)));
    let p2 = p.read(&packet(cid, 2));
    assert!(p2.contains("I, [self], agree with Member A"), "{p2}");
    wait_asked(&p, &[A, B, C], 3);

    // Round 3: C is silent again; time and both retries run out.
    ok(write(&p, cid, A, &words(90, "the final word")));
    ok(write(&p, cid, B, &words(90, "the final word")));
    clock.advance_minutes(61);
    nudge(&p, cid);
    wait_for(&p, "retry 1 of round 3", || {
        inbox(&p, C).matches("(retry 1 of 2)").count() == 2
    });
    clock.advance_minutes(7);
    nudge(&p, cid);
    wait_for(&p, "retry 2 of round 3", || {
        inbox(&p, C).matches("(retry 2 of 2)").count() == 2
    });
    clock.advance_minutes(16);
    nudge(&p, cid);
    wait_for(&p, "the last packet", || p.exists(&packet(cid, 3)));
    let p3 = p.read(&packet(cid, 3));
    assert!(
        p3.contains(&format!("## Member A ({A})")),
        "names restored: {p3}"
    );
    assert!(
        p3.contains(&format!(
            "## Member C ({C})\n\n*[Simulated — written by polisd, not by this member]*"
        )),
        "{p3}"
    );
    assert!(
        p3.contains("Its own last words (round 2 of 3), quoted: \"My position on I,"),
        "a stub quotes the seat's own last words, never invents: {p3}"
    );
    for (n, text) in [(1, &p1), (2, &p2)] {
        for id in MEMBERS.iter().chain([&OWNER]) {
            assert!(!text.contains(id), "packet {n} names {id}:\n{text}");
        }
    }

    // The chair is asked; a verdict missing a section and a kill criterion's form is refused.
    wait_for(&p, "the verdict request", || {
        p.count(D, "council-prompt") == 1
    });
    // After the last round closed, nothing more is placed.
    refused(write(&p, cid, A, &words(20, "too late")), "no open round");
    assert!(!p.exists(&seat(cid, 4, A)));
    p.save(&format!("reviews/{cid}/verdict.md"), VERDICT_BAD);
    wait_for(&p, "the invalid-verdict notice", || {
        p.count(D, "council-verdict-invalid") == 1
    });
    let text = inbox(&p, D);
    assert!(
        text.contains("the Concrete next step `Think about it more.` defers the decision"),
        "{text}"
    );
    assert!(text.contains("the latency could go up"), "{text}");
    let contract_rel = format!("contracts/open/{cid}.md");
    assert!(p
        .read(&contract_rel)
        .contains("review: {mode: council, round_hours: 1, retry_hours: 0.1}\n"));
    // Corrected on the second try: applied.
    p.save(
        &format!("reviews/{cid}/verdict.md"),
        &verdict_good("requested_changes"),
    );
    wait_for(&p, "review.status set from the verdict", || {
        p.read(&contract_rel)
            .contains("review: {mode: council, round_hours: 1, retry_hours: 0.1, status: requested_changes}\n")
    });
    wait_for(&p, "the owner's notice", || {
        p.count(OWNER, "council-verdict") == 1
    });
    let chronicle = p.read("chronicle.md");
    assert_eq!(
        chronicle
            .matches(&format!(
                "| polis-daemon | requested changes | [[reviews/{cid}/verdict]] |"
            ))
            .count(),
        1,
        "{chronicle}"
    );
    let text = p.read(&state);
    assert!(text.contains("## Outcome"), "{text}");
    assert!(text.contains(&format!("- degraded seats: {C}")), "{text}");
    assert!(text.contains("- rounds run: 3"), "{text}");
    for line in [
        "schema_version: 1\nmode: full\npanel_size: 3\nrounds_run: 3\n",
        "provider_count: 3\nfallbacks_triggered: 6\ninput_tokens_estimate: ~unknown\noutput_tokens_estimate: ~",
    ] {
        assert!(text.contains(line), "{line} not in the metadata:\n{text}");
    }
    assert_eq!(p.count(D, "council-verdict-invalid"), 1);
    let status = ok(p.polisd(&["council", "status", cid, "--json"]));
    let v: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(v["phase"], "done");
    assert_eq!(v["outcome"]["decision"], "requested_changes");
    let status = ok(p.polisd(&["status", "--json"]));
    let v: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(v["councils"][0]["contract_id"], cid);
    assert_eq!(v["councils"][0]["decision"], "requested_changes");
    let text = String::from_utf8_lossy(&ok(p.polisd(&["status"])).stdout).into_owned();
    assert!(
        text.contains(&format!("  {cid} (full): finished: requested_changes")),
        "{text}"
    );
}

#[test]
fn quick_council_started_by_command_survives_a_restart_mid_round_doing_nothing_twice() {
    let p = polis();
    let clock = Clock::new(&p);
    let env = [("POLISD_FAKE_NOW_FILE", clock.path.as_path())];
    let daemon = p.start_daemon_with(&env);
    let cid = "cache-quick";
    contract(&p, cid, "");
    ok(p.polisd(&["contract", "claim", cid, "--as", OWNER]));
    // The contract did not ask: the command starts one, with the panel named by hand.
    let out = ok(p.polisd(&[
        "council",
        "start",
        cid,
        "--mode",
        "quick",
        "--panel",
        &format!("{C}:taleb,{B},{A}"),
        "--json",
    ]));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["ok"], true);
    assert_eq!(v["mode"], "quick");
    assert_eq!(v["seats"][0]["id"], C, "labels follow the panel's order");
    assert_eq!(v["seats"][0]["lens"], "taleb", "a member named with a lens");
    assert_eq!(
        v["seats"][1]["lens"],
        serde_json::Value::Null,
        "and one without"
    );
    assert_eq!(v["chairman"], D);
    refused(
        p.polisd(&["council", "start", cid, "--mode", "quick"]),
        "already exists",
    );
    refused(
        p.polisd(&["council", "start", "no-such-contract"]),
        "no contract",
    );
    let state = format!("reviews/{cid}/council.md");
    // The command delivered the prompts and the daemon derived the same ones: each once.
    wait_for(&p, "round 0 prompts", || {
        [A, B, C].iter().all(|m| p.count(m, "council-prompt") == 1)
    });
    assert!(inbox(&p, C).contains("Your lens for this council is `taleb`"));
    assert!(!inbox(&p, B).contains("Your lens"));
    for m in [A, B, C] {
        ok(write(&p, cid, m, &words(40, "the restatement")));
    }
    wait_for(&p, "round 1 prompts", || {
        [A, B, C].iter().all(|m| p.count(m, "council-prompt") == 2)
    });
    for m in [A, B, C] {
        ok(write(&p, cid, m, &words(150, "round one")));
    }
    wait_for(&p, "the round 1 packet", || p.exists(&packet(cid, 1)));
    wait_for(&p, "round 2 prompts", || {
        [A, B, C].iter().all(|m| p.count(m, "council-prompt") == 3)
    });
    assert!(
        inbox(&p, A).contains(DIRECTIVE),
        "quick round 2 carries the directive"
    );
    let p1 = p.read(&packet(cid, 1));
    for id in MEMBERS {
        assert!(!p1.contains(id), "packet 1 names {id}:\n{p1}");
    }
    ok(write(&p, cid, A, &words(60, "round two")));
    // Killed mid-round; B writes while no daemon runs.
    daemon.kill9();
    ok(write(&p, cid, B, &words(60, "round two")));
    let state_before = p.read(&state);
    let daemon = p.start_daemon_with(&env);
    ok(write(&p, cid, C, &words(60, "round two")));
    wait_for(&p, "the last packet and the verdict request", || {
        p.exists(&packet(cid, 2)) && p.count(D, "council-prompt") == 1
    });
    assert!(state_before.contains("| 2 | 75 |"), "{state_before}");
    // Acceptable compromises are optional in quick mode.
    let quick_verdict = verdict_good("signed_off").replace(
        "## Acceptable compromises\n- keep the old cache behind a flag\n\n",
        "",
    );
    assert!(!quick_verdict.contains("compromises"));
    p.save(&format!("reviews/{cid}/verdict.md"), &quick_verdict);
    let contract_rel = format!("contracts/open/{cid}.md");
    wait_for(&p, "review.status from the verdict", || {
        p.read(&contract_rel)
            .contains("review: {status: signed_off}\n")
    });
    wait_for(&p, "the owner's notice", || {
        p.count(OWNER, "council-verdict") == 1
    });
    // Restarted once more after the verdict: nothing is done again.
    daemon.kill9();
    let _daemon = p.start_daemon_with(&env);
    // A barrier: the nudge and then a broken chronicle line; its notice shows the passes
    // after the restart are done.
    nudge(&p, cid);
    p.append(
        "chronicle.md",
        &format!("- {} | {OWNER} | broken line\n", harness::chronicle_stamp()),
    );
    wait_for(&p, "the barrier notice", || {
        p.count(OWNER, "chronicle-finding") == 1
    });
    assert_eq!(p.read(&packet(cid, 1)), p1, "packet 1 rewritten");
    for m in [A, B, C] {
        assert_eq!(p.count(m, "council-prompt"), 3, "{m}: one prompt per round");
    }
    assert_eq!(p.count(D, "council-prompt"), 1);
    assert_eq!(p.count(OWNER, "council-verdict"), 1);
    let chronicle = p.read("chronicle.md");
    assert_eq!(
        chronicle
            .matches(&format!(
                "| polis-daemon | signed off | [[reviews/{cid}/verdict]] |"
            ))
            .count(),
        1,
        "{chronicle}"
    );
    let text = p.read(&state);
    assert_eq!(text.matches("| 1 | 200 |").count(), 1, "{text}");
    assert!(text.contains("- rounds run: 2"), "{text}");
    assert!(
        text.contains(&format!("- live seats: {C}, {B}, {A}")),
        "{text}"
    );
}

#[test]
fn duo_council_names_its_members_and_cuts_the_short_third_round() {
    let p = polis();
    let clock = Clock::new(&p);
    let _daemon = p.start_daemon_with(&[("POLISD_FAKE_NOW_FILE", clock.path.as_path())]);
    let cid = "cache-duo";
    contract(&p, cid, "council:\n  mode: duo\n  round_hours: 2\n");
    ok(p.polisd(&["contract", "claim", cid, "--as", OWNER]));
    let state = format!("reviews/{cid}/council.md");
    wait_for(&p, "the duo to start", || p.exists(&state));
    let text = p.read(&state);
    // Two seats of two vendors; the chair from the vendor not seated (google).
    // No member named and no duo keyword in the problem: the seed's default polarity pair.
    assert!(
        text.contains(&format!("| Member A | {A} | anthropic | socrates |")),
        "{text}"
    );
    assert!(
        text.contains(&format!("| Member B | {B} | openai | feynman |")),
        "{text}"
    );
    assert!(text.contains(&format!("chairman: {C}")), "{text}");
    for (n, limit) in [(0, 50), (1, 250), (2, 180), (3, 60)] {
        wait_for(&p, &format!("round {n} prompts"), || {
            [A, B].iter().all(|m| p.count(m, "council-prompt") == n + 1)
        });
        let inbox = p.read(&format!("citizens/{A}/inbox.md"));
        assert!(inbox.contains(&format!("at most {limit} words")), "{inbox}");
        if n == 2 {
            assert!(
                inbox.contains(DIRECTIVE),
                "a duo's round 2 carries the directive"
            );
        }
        let long = if n == 3 { 100 } else { limit - 10 };
        ok(write(&p, cid, A, &words(long, &format!("what {B} said"))));
        ok(write(
            &p,
            cid,
            B,
            &words(limit - 10, &format!("what {A} said")),
        ));
        if n == 0 {
            continue;
        }
        wait_for(&p, &format!("the round {n} packet"), || {
            p.exists(&packet(cid, n))
        });
        let text = p.read(&packet(cid, n));
        assert!(
            text.contains(&format!("## {A}\n")),
            "a duo is not anonymised: {text}"
        );
        assert!(text.contains(&format!("what {B} said")), "{text}");
    }
    assert!(p
        .read(&packet(cid, 3))
        .contains("*[cut at 60 words: the contribution had 100]*"));
    wait_for(&p, "the verdict request and the over-limit notice", || {
        p.count(C, "council-prompt") == 1 && p.count(A, "council-over-limit") == 1
    });
    p.save(
        &format!("reviews/{cid}/verdict.md"),
        &verdict_good("rejected"),
    );
    let contract_rel = format!("contracts/open/{cid}.md");
    wait_for(&p, "review.status from the verdict", || {
        p.read(&contract_rel)
            .contains("review: {status: rejected}\n")
    });
    wait_for(&p, "the chronicle line", || {
        p.read("chronicle.md").contains(&format!(
            "| polis-daemon | rejected review | [[reviews/{cid}/verdict]] |"
        ))
    });
}

#[test]
fn a_silent_seat_goes_simulated_and_a_silent_chair_gets_the_coordinator_s_verdict_with_no_event() {
    // The real clock: every deadline (gate 1.8 s, retries 0.9 s and 2.25 s, the chair 7.2 s)
    // wakes the daemon; nothing nudges it.
    let p = polis();
    let _daemon = p.start_daemon();
    let cid = "cache-alone";
    contract(&p, cid, "council: {mode: duo, round_hours: 0.002}\n");
    contract(&p, "cache-bad", "council: {mode: huge}\n");
    ok(p.polisd(&["contract", "claim", "cache-bad", "--as", OWNER]));
    ok(p.polisd(&["contract", "claim", cid, "--as", OWNER]));
    wait_asked(&p, &[A, B], 0);
    ok(write(&p, cid, A, "1) Swap the cache. 2) Or drop it.\n"));
    let contract_rel = format!("contracts/open/{cid}.md");
    wait_for(&p, "the coordinator's verdict", || {
        p.read(&contract_rel)
            .contains("review: {status: requested_changes}\n")
            && p.count(OWNER, "council-verdict") == 1
    });
    // B was asked twice more, then degraded; one live seat made the council simulated.
    let b = inbox(&p, B);
    assert!(
        b.contains("(retry 1 of 2)") && b.contains("(retry 2 of 2)"),
        "{b}"
    );
    assert!(b.contains("Answer now, in 50 words or fewer"), "{b}");
    assert!(
        !asked(&p, B, 1),
        "a simulated council asks nobody for its rounds"
    );
    let state = p.read(&format!("reviews/{cid}/council.md"));
    assert!(
        state.contains(
            "**Simulated mode:** only 1 seat(s) wrote their contribution to restating the question"
        ),
        "{state}"
    );
    assert!(state.contains("chairman_failed: true"), "{state}");
    let p1 = p.read(&packet(cid, 1));
    assert!(p1.contains("**Simulated:**"), "{p1}");
    assert!(
        p1.contains("> 1) Swap the cache. 2) Or drop it."),
        "the gate's answer: {p1}"
    );
    assert!(
        p1.contains("the council is in simulated mode")
            && p1.contains("Its own last words (restating the question)"),
        "{p1}"
    );
    // The chair (C, off the panel) wrote nothing: polisd's synthesis, marked, stands.
    assert!(asked(&p, C, 0) || inbox(&p, C).contains("verdict.md"));
    let fallback = p.read(&format!("reviews/{cid}/verdict-fallback.md"));
    assert!(
        fallback.contains(&format!(
            "## Chairman\n\n{C} (FAILED — synthesized by coordinator fallback)\n"
        )),
        "{fallback}"
    );
    assert!(
        fallback.contains("> 1) Swap the cache. 2) Or drop it.")
            || fallback.contains("Its own last words"),
        "{fallback}"
    );
    assert!(
        polisd::protocol::council::verdict::check(&fallback, polisd::protocol::council::Mode::Full)
            .is_ok(),
        "the coordinator's verdict passes the strictest check: {fallback}"
    );
    assert!(
        !p.exists(&format!("reviews/{cid}/verdict.md")),
        "the chair's file is not written for it"
    );
    assert!(inbox(&p, OWNER).contains("FAILED — synthesized by coordinator fallback"));
    assert!(p.read("chronicle.md").contains(&format!(
        "| polis-daemon | requested changes | [[reviews/{cid}/verdict-fallback]] |"
    )));
    // The malformed request started nothing and is reported.
    assert!(!p.exists("reviews/cache-bad"));
    let out = p.polisd(&["check", "--json"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("P027"), "{text}");
    assert!(text.contains("`mode: huge`"), "{text}");
}

const E: &str = "codex-member-eeee";

/// The council's open round, as `council status --json` reports it.
fn open_round(p: &TestPolis, cid: &str) -> Option<u64> {
    let out = p.polisd(&["council", "status", cid, "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).ok()?;
    v["round"].as_u64()
}

fn phase(p: &TestPolis, cid: &str) -> String {
    let out = p.polisd(&["council", "status", cid, "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
    v["phase"].as_str().unwrap_or_default().to_string()
}

/// Every seat writes every round (0 to `rounds`), within every limit, as each opens.
fn play(p: &TestPolis, cid: &str, seats: &[&str], rounds: u64) {
    for n in 0..=rounds {
        wait_for(p, &format!("{cid}: round {n} open"), || {
            open_round(p, cid) == Some(n)
        });
        for m in seats {
            ok(write(p, cid, m, &words(40, &format!("{cid} round {n}"))));
        }
    }
    wait_for(p, &format!("{cid}: the verdict asked"), || {
        phase(p, cid) == "verdict"
    });
}

fn titled(p: &TestPolis, id: &str, title: &str, extra: &str) {
    contract(p, id, extra);
    let rel = format!("contracts/open/{id}.md");
    let text = p.read(&rel).replace("Replace the cache layer", title);
    p.save(&rel, &text);
}

#[test]
fn six_citizens_of_three_vendors_run_a_full_triad_a_quick_profile_and_a_keyword_duo_to_verdicts() {
    // The owner and five members: anthropic, openai and google.
    let p = polis();
    p.citizen(E, "openai", &[("arch", 1)], "medium");
    let _daemon = p.start_daemon();
    let full = "risk-full";
    let quick = "lean-quick";
    let duo = "ship-duo";
    titled(
        &p,
        full,
        "Replace the cache layer",
        "council: {mode: full, triad: risk}\n",
    );
    titled(
        &p,
        quick,
        "Cut the build time",
        "council: {mode: quick, profile: execution-lean, panel_size: 4}\n",
    );
    titled(
        &p,
        duo,
        "Speed up the release execution",
        "council: {mode: duo}\n",
    );

    // Full, with the risk triad: three vendors seated, each with its lens.
    ok(p.polisd(&["contract", "claim", full, "--as", OWNER]));
    wait_for(&p, "the full council", || {
        p.exists(&format!("reviews/{full}/council.md"))
    });
    let state = p.read(&format!("reviews/{full}/council.md"));
    for row in [
        format!("| Member A | {A} | anthropic | sun-tzu |"),
        format!("| Member B | {B} | openai | aurelius |"),
        format!("| Member C | {C} | google | feynman |"),
    ] {
        assert!(state.contains(&row), "{row} not in:\n{state}");
    }
    play(&p, full, &[A, B, C], 3);
    for m in [A, B, C] {
        assert!(
            inbox(&p, m).contains(DIRECTIVE),
            "{m}: the directive in round 2"
        );
    }
    assert!(inbox(&p, C).contains("Your lens for this council is `feynman`"));
    let chair = p
        .read(&format!("reviews/{full}/council.md"))
        .lines()
        .find_map(|l| l.strip_prefix("chairman: ").map(str::to_string))
        .unwrap();
    assert!(
        [D, E].contains(&chair.as_str()),
        "the chair is off the panel: {chair}"
    );
    // A full verdict without Kill criteria is refused, naming the section.
    let vrel = format!("reviews/{full}/verdict.md");
    let without_kill = verdict_good("signed_off").replace(
        "## Kill criteria\n- If p95 latency rises above 200 ms by 2027-01-15, invalidated → roll back to the old cache\n\n",
        "",
    );
    assert!(!without_kill.contains("Kill"));
    p.save(&vrel, &without_kill);
    wait_for(&p, "the refusal", || {
        p.count(&chair, "council-verdict-invalid") == 1
    });
    assert!(
        inbox(&p, &chair)
            .contains("missing section(s) a full council requires: `## Kill criteria`"),
        "{}",
        inbox(&p, &chair)
    );
    p.save(&vrel, &verdict_good("signed_off"));
    wait_for(&p, "the full verdict applied", || phase(&p, full) == "done");

    // Quick, with four seats of the execution-lean profile; the chair is the fifth member.
    ok(p.polisd(&["contract", "claim", quick, "--as", OWNER]));
    wait_for(&p, "the quick council", || {
        p.exists(&format!("reviews/{quick}/council.md"))
    });
    let state = p.read(&format!("reviews/{quick}/council.md"));
    for lens in ["torvalds", "feynman", "sun-tzu", "aurelius"] {
        assert!(
            state.contains(&format!(" | {lens} | ")),
            "{lens} not in:\n{state}"
        );
    }
    assert!(
        state.contains("4 of its 5 roles could be seated (ada left out)"),
        "{state}"
    );
    let seats: Vec<&str> = MEMBERS
        .iter()
        .chain([&E])
        .copied()
        .filter(|m| state.contains(&format!(" | {m} | ")))
        .collect();
    assert_eq!(seats.len(), 4, "{state}");
    play(&p, quick, &seats, 2);
    let chair = [A, B, C, D, E]
        .into_iter()
        .find(|m| !seats.contains(m))
        .unwrap();
    // Quick needs no Acceptable compromises.
    p.save(
        &format!("reviews/{quick}/verdict.md"),
        &verdict_good("requested_changes").replace(
            "## Acceptable compromises\n- keep the old cache behind a flag\n\n",
            "",
        ),
    );
    wait_for(&p, "the quick verdict applied", || {
        phase(&p, quick) == "done"
    });
    assert_eq!(p.count(chair, "council-verdict-invalid"), 0);

    // Duo, no members named: "execution" in the title picks the seed's shipping pair.
    ok(p.polisd(&["contract", "claim", duo, "--as", OWNER]));
    wait_for(&p, "the duo", || {
        p.exists(&format!("reviews/{duo}/council.md"))
    });
    let state = p.read(&format!("reviews/{duo}/council.md"));
    assert!(
        state.contains(&format!("| Member A | {A} | anthropic | torvalds |")),
        "{state}"
    );
    assert!(
        state.contains(&format!("| Member B | {B} | openai | musashi |")),
        "{state}"
    );
    assert!(
        state.contains("the duo polarity pair for `execution`"),
        "{state}"
    );
    play(&p, duo, &[A, B], 3);
    // A duo requires only the Concrete next step.
    p.save(
        &format!("reviews/{duo}/verdict.md"),
        "---\ndecision: signed_off\n---\n\n## Concrete next step\n- Ship the release pipeline change behind a flag.\n",
    );
    wait_for(&p, "the duo verdict applied", || phase(&p, duo) == "done");
    for (cid, status) in [
        (full, "signed_off"),
        (quick, "requested_changes"),
        (duo, "signed_off"),
    ] {
        let text = p.read(&format!("contracts/open/{cid}.md"));
        assert!(
            text.contains(&format!("status: {status}}}")),
            "{cid}: {text}"
        );
    }
}

#[test]
fn three_citizens_make_a_duo_chaired_by_the_owner_and_the_owner_is_told() {
    let p = TestPolis::init(OWNER);
    p.citizen(A, "anthropic", &[("arch", 5)], "medium");
    p.citizen(B, "openai", &[("arch", 4)], "medium");
    let _daemon = p.start_daemon();
    let cid = "small-polis";
    contract(&p, cid, "review: {mode: council, council_mode: full}\n");
    ok(p.polisd(&["contract", "claim", cid, "--as", OWNER]));
    let state_rel = format!("reviews/{cid}/council.md");
    wait_for(&p, "the council", || p.exists(&state_rel));
    let state = p.read(&state_rel);
    assert!(state.contains("mode: duo\n"), "{state}");
    assert!(state.contains("requested_mode: full\n"), "{state}");
    assert!(state.contains(&format!("chairman: {OWNER}\n")), "{state}");
    assert!(state.contains("chairman_is_owner: true\n"), "{state}");
    wait_for(&p, "the owner told", || {
        p.count(OWNER, "council-verdict") == 1
    });
    let told = inbox(&p, OWNER);
    assert!(
        told.contains(&format!(
            "The council on `{cid}` (Replace the cache layer) runs as a duo although a full council was asked for"
        )) && told.contains("nobody is left off the panel"),
        "{told}"
    );
    play(&p, cid, &[A, B], 3);
    p.save(
        &format!("reviews/{cid}/verdict.md"),
        "---\ndecision: signed_off\n---\n\n## Concrete next step\n- Merge the cache replacement.\n",
    );
    wait_for(&p, "the verdict applied", || phase(&p, cid) == "done");
}

#[test]
fn a_polis_lens_file_seats_with_its_member_and_an_unknown_lens_is_refused() {
    let p = polis();
    let _daemon = p.start_daemon();
    p.save(
        "council/lenses/security.md",
        "# Lens: security\n\nAssume an attacker reads every file; find the trust boundary first.\n",
    );
    let cid = "own-lens";
    contract(
        &p,
        cid,
        &format!("council:\n  mode: duo\n  members:\n    - {A}: security\n    - {{id: {B}, lens: munger}}\n"),
    );
    ok(p.polisd(&["contract", "claim", cid, "--as", OWNER]));
    wait_asked(&p, &[A, B], 0);
    assert!(
        inbox(&p, A).contains("Your lens for this council is `security`: Assume an attacker reads every file; find the trust boundary first."),
        "{}",
        inbox(&p, A)
    );
    assert!(inbox(&p, B).contains("Your lens for this council is `munger`"));
    let other = "no-such-lens";
    contract(&p, other, "");
    ok(p.polisd(&["contract", "claim", other, "--as", OWNER]));
    refused(
        p.polisd(&[
            "council",
            "start",
            other,
            "--panel",
            &format!("{A}:nope,{B}"),
        ]),
        "there is no lens `nope`",
    );
    assert!(!p.exists(&format!("reviews/{other}")));
}

#[test]
fn an_oversized_council_seat_file_tells_its_author() {
    let p = polis();
    let _daemon = p.start_daemon();
    let cid = "cache-oversized";
    contract(&p, cid, "");
    ok(p.polisd(&["contract", "claim", cid, "--as", OWNER]));
    ok(p.polisd(&[
        "council",
        "start",
        cid,
        "--mode",
        "quick",
        "--panel",
        &format!("{C},{B},{A}"),
    ]));
    // The open round is the restatement gate (round 0).
    wait_for(&p, "round 0 prompts", || p.count(A, "council-prompt") == 1);
    // Over the 1 MiB a seat file is read within: only the log heard of it before.
    p.save(&seat(cid, 0, A), &"word ".repeat(250_000));
    nudge(&p, cid);
    wait_for(&p, "the author told of the oversized seat file", || {
        p.count(A, "record-finding") == 1
    });
    let inbox = p.read(&format!("citizens/{A}/inbox.md"));
    assert!(inbox.contains(&seat(cid, 0, A)), "{inbox}");
}

#[test]
fn a_panel_naming_one_citizen_twice_is_refused_and_writes_nothing() {
    // Two seats held by one citizen are one view counted twice: the duo and the vote of the
    // panel would be a single member's.
    let p = polis();
    let cid = "one-voice";
    contract(&p, cid, "");
    ok(p.polisd(&["contract", "claim", cid, "--as", OWNER]));
    for panel in [format!("{A},{A}"), format!("{A}:munger,{B},{A}")] {
        refused(
            p.polisd(&["council", "start", cid, "--panel", &panel]),
            &format!("`{A}` is named twice"),
        );
        assert!(!p.exists(&format!("reviews/{cid}")));
    }
}

#[test]
fn a_council_on_a_settled_contract_is_refused_as_settled_not_as_missing() {
    let p = polis();
    let cid = "already-done";
    contract(&p, cid, "");
    p.mv(
        &format!("contracts/open/{cid}.md"),
        &format!("contracts/settled/{cid}.md"),
    );
    refused(
        p.polisd(&["council", "start", cid]),
        &format!("contract `{cid}` is settled, not open"),
    );
    assert!(!p.exists(&format!("reviews/{cid}")));
}

#[test]
fn a_council_whose_contract_is_abandoned_still_gets_its_verdict_applied_on_time() {
    // The verdict is applied to the contract in whichever folder it is (docs/council.md);
    // the abandoned file is new to the daemon, so the edit first waits for it to be quiet.
    let p = polis();
    let _daemon = p.start_daemon();
    let cid = "dropped-work";
    contract(&p, cid, "council: {mode: duo, round_hours: 0.002}\n");
    ok(p.polisd(&["contract", "claim", cid, "--as", OWNER]));
    wait_asked(&p, &[A, B], 0);
    ok(p.polisd(&["contract", "abandon", cid]));
    let rel = format!("contracts/abandoned/{cid}.md");
    wait_for(
        &p,
        "the coordinator's verdict on the abandoned contract",
        || {
            p.read(&rel).contains("status: requested_changes")
                && p.count(OWNER, "council-verdict") == 1
        },
    );
}

#[test]
fn council_status_of_no_council_starts_one_only_where_the_contract_exists() {
    let p = polis();
    let cid = "real-one";
    contract(&p, cid, "");
    refused(
        p.polisd(&["council", "status", cid]),
        &format!("start one with `polisd council start {cid}`"),
    );
    // A mistyped id is told there is no such contract, not offered a council on it.
    let out = p.polisd(&["council", "status", "no-such-contract"]);
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    refused(out, "no contract `no-such-contract`");
    assert!(!err.contains("council start"), "{err}");
}

/// A request that reads well but cannot be seated is not only a line in the daemon's log:
/// `polisd check` names the contract and why, and once it is fixed the council starts.
#[test]
fn a_council_request_that_cannot_be_seated_is_reported_by_check_until_fixed() {
    let p = polis();
    let cid = "lonely-chair";
    contract(
        &p,
        cid,
        "council: {mode: quick, chairman: nobody-sits-here, round_hours: 1}\n",
    );
    ok(p.polisd(&["contract", "claim", cid, "--as", OWNER]));
    let _daemon = p.start_daemon();
    let out = p.polisd(&["check", "--json"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("P027"), "{text}");
    assert!(text.contains(&format!("contracts/open/{cid}.md")), "{text}");
    assert!(text.contains("`nobody-sits-here` cannot sit"), "{text}");
    // It points at the request's own line, as every finding about a line does.
    let rel = format!("contracts/open/{cid}.md");
    let council_line = p
        .read(&rel)
        .lines()
        .position(|l| l.starts_with("council:"))
        .map(|i| i + 1);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let p027: Vec<_> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["code"] == "P027")
        .map(|f| f["line"].as_u64().map(|l| l as usize))
        .collect();
    assert_eq!(p027, vec![council_line], "{text}");
    assert!(!p.exists(&format!("reviews/{cid}/council.md")));
    p.save(&rel, &p.read(&rel).replace("nobody-sits-here", D));
    wait_for(&p, "the council to start", || {
        p.exists(&format!("reviews/{cid}/council.md"))
    });
    let out = p.polisd(&["check", "--json"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!text.contains("cannot sit"), "{text}");
}

/// A seat file written for a round that has not opened (early, or by a member who took the
/// wrong folder) would be taken as that seat's contribution the moment the round opens,
/// before its author read the packet: the author is told while there is time to move it, and
/// `polisd check` names it.
#[test]
fn a_seat_file_written_for_a_round_not_open_yet_tells_its_author() {
    let p = polis();
    let _daemon = p.start_daemon();
    let cid = "early-bird";
    contract(&p, cid, "");
    ok(p.polisd(&["contract", "claim", cid, "--as", OWNER]));
    ok(p.polisd(&[
        "council",
        "start",
        cid,
        "--mode",
        "quick",
        "--panel",
        &format!("{A},{B},{C}"),
    ]));
    wait_asked(&p, &[A, B, C], 0);
    p.save(&seat(cid, 2, B), &words(20, "the cache, early"));
    wait_for(&p, "the early writer told", || {
        inbox(&p, B).contains("(P030)")
    });
    let text = inbox(&p, B);
    assert!(text.contains(&seat(cid, 2, B)), "{text}");
    assert!(
        text.contains(&format!("move it to {}", seat(cid, 0, B))),
        "{text}"
    );
    assert!(!inbox(&p, A).contains("(P030)"));
    let out = p.polisd(&["check", "--json"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("P030"), "{text}");
    // Moved where it belongs, it is no longer reported.
    p.mv(&seat(cid, 2, B), &seat(cid, 0, B));
    let out = p.polisd(&["check", "--json"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!text.contains("P030"), "{text}");
}

/// A verdict polisd cannot apply (the contract's `review:` is one word, so `review.status`
/// cannot be set beside it without rewriting the owner's bytes) is told to the owner, not only
/// logged; fixed by hand, the verdict is applied.
#[test]
fn a_verdict_that_cannot_be_applied_tells_the_owner_and_is_applied_once_fixed() {
    let p = polis();
    let _daemon = p.start_daemon();
    let cid = "one-word-review";
    contract(
        &p,
        cid,
        "review: required\ncouncil: {mode: duo, round_hours: 0.002}\n",
    );
    ok(p.polisd(&["contract", "claim", cid, "--as", OWNER]));
    wait_asked(&p, &[A, B], 0);
    wait_for(&p, "the owner told the verdict cannot be applied", || {
        inbox(&p, OWNER).contains("polisd cannot apply it")
    });
    let text = inbox(&p, OWNER);
    assert!(text.contains("review.status"), "{text}");
    assert!(text.contains(&format!("contracts/open/{cid}.md")), "{text}");
    let rel = format!("contracts/open/{cid}.md");
    p.save(
        &rel,
        &p.read(&rel)
            .replace("review: required", "review: {required: true}"),
    );
    wait_for(&p, "the verdict applied", || {
        p.read(&rel).contains("status: requested_changes")
            && inbox(&p, OWNER).contains("reached its verdict")
    });
    assert_eq!(
        inbox(&p, OWNER).matches("polisd cannot apply it").count(),
        1
    );
}

#[test]
fn a_coordinator_verdict_written_again_days_later_keeps_its_bytes() {
    // A silent council on a contract whose single-word `review:` polisd cannot set a status
    // beside: the coordinator's verdict is written and then waits, passed over again on every
    // later pass until the owner fixes the contract. Its review-by date comes from when the
    // verdict was due, so a pass days later (or another machine's daemon) writes the same bytes.
    let p = polis();
    let mut clock = Clock::new(&p);
    let _daemon = p.start_daemon_with(&[("POLISD_FAKE_NOW_FILE", clock.path.as_path())]);
    let cid = "silent-review";
    contract(
        &p,
        cid,
        "review: required\ncouncil: {mode: duo, round_hours: 0.5, retry_hours: 0.1}\n",
    );
    ok(p.polisd(&["contract", "claim", cid, "--as", OWNER]));
    let fallback = format!("reviews/{cid}/verdict-fallback.md");
    // Nobody writes: move the clock on half an hour at a time until the chair's time is up.
    let start = std::time::Instant::now();
    while !(p.exists(&fallback) && inbox(&p, OWNER).contains("polisd cannot apply it")) {
        assert!(
            start.elapsed() < std::time::Duration::from_secs(90),
            "no coordinator's verdict; council: {}",
            p.read(&format!("reviews/{cid}/council.md"))
        );
        clock.advance_minutes(30);
        nudge(&p, cid);
        std::thread::sleep(std::time::Duration::from_millis(300));
    }
    let first = p.read(&fallback);
    assert!(first.contains("by 20"), "{first}");
    clock.advance_minutes(3 * 24 * 60);
    let rel = format!("contracts/open/{cid}.md");
    p.save(
        &rel,
        &p.read(&rel)
            .replace("review: required", "review: {required: true}"),
    );
    wait_for(&p, "the verdict applied", || {
        p.read(&rel).contains("status: requested_changes")
    });
    assert_eq!(
        p.read(&fallback),
        first,
        "the coordinator's verdict, written again three days later, changed"
    );
}
