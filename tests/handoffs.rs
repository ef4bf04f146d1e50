//! Handoff chains with a real daemon and real files: a suggestion in a Settlement
//! becomes a routed follow-up contract and a notice; the chain rules refuse with reasons; a
//! restart dispatches nothing twice; a new-citizen suggestion waits in the human queue.

mod harness;

use harness::{chronicle_line, ok, wait_for, TestPolis};
use std::process::Output;

const FOUNDER: &str = "claude-founder-one";
const B: &str = "codex-agent-two";
const C: &str = "gemini-agent-three";
const D: &str = "claude-agent-four";
const AWAY: &str = "codex-agent-away";

fn polis() -> TestPolis {
    let p = TestPolis::init(FOUNDER);
    for id in [B, C, D, AWAY] {
        p.citizen(id, "test", &[("api", 4), ("frontend", 3)], "medium");
    }
    p.save(
        &format!("citizens/{AWAY}/status.md"),
        &format!("---\nagent_id: {AWAY}\nstate: away\n---\n"),
    );
    p
}

fn claim_and_settle(p: &TestPolis, id: &str, owner: &str, suggest: &[&str]) {
    ok(p.polisd(&["contract", "claim", id, "--as", owner]));
    let mut args = vec![
        "contract",
        "settle",
        id,
        "--quality",
        "4",
        "--no-lesson",
        "the handoff is the point here",
    ];
    for s in suggest {
        args.push("--suggest");
        args.push(s);
    }
    ok(p.polisd(&args));
}

fn inbox(p: &TestPolis, id: &str) -> String {
    p.read(&format!("citizens/{id}/inbox.md"))
}

#[test]
fn suggestions_become_routed_follow_ups_and_the_fourth_step_is_deferred_to_the_first_opener() {
    let p = polis();
    let daemon = p.start_daemon();
    ok(p.polisd(&[
        "contract",
        "open",
        "--title",
        "Login API",
        "--by",
        FOUNDER,
        "--tags",
        "api",
    ]));
    // Step 1 (FOUNDER owns it) suggests B: the follow-up is step 2.
    claim_and_settle(
        &p,
        "login-api",
        FOUNDER,
        &[&format!("{B}:Wire the endpoint into the login form")],
    );
    let next1 = "contracts/open/login-api-next-1.md";
    wait_for(&p, "the first follow-up", || p.exists(next1));
    let text = p.read(next1);
    assert!(text.contains("opened_by: polis-daemon"), "{text}");
    assert!(
        text.contains(&format!("  recommended_by_router: {B}\n")),
        "{text}"
    );
    assert!(text.contains(&format!("chain: [{FOUNDER}]")), "{text}");
    assert!(text.contains("parent_contract: login-api"), "{text}");
    assert!(text.contains("depends_on: [login-api]"), "{text}");
    assert!(text.contains("- api\n"), "tags from the parent: {text}");
    assert!(
        text.contains(&format!(
            "Call chain so far: [{FOUNDER}]; you are step 2 of at most 3"
        )),
        "{text}"
    );
    wait_for(&p, "the handoff-opened notice", || {
        p.count(B, "handoff-opened") == 1
    });
    assert!(p
        .read("chronicle.md")
        .contains("| polis-daemon | opened contract | [[contracts/open/login-api-next-1]] |"));

    // Step 2 (B) suggests C (step 3), B again (in the chain), an unknown id and an away one.
    claim_and_settle(
        &p,
        "login-api-next-1",
        B,
        &[
            &format!("{C}:Test the login form end to end"),
            &format!("{FOUNDER}:Review it again"),
            "nobody-registered-here:Translate it",
            &format!("{AWAY}:Document it"),
        ],
    );
    let next2 = "contracts/open/login-api-next-1-next-1.md";
    wait_for(&p, "the second follow-up", || p.exists(next2));
    assert!(p.read(next2).contains(&format!("chain: [{FOUNDER}, {B}]")));
    assert!(p.read(next2).contains("you are step 3 of at most 3"));
    for n in 2..=4 {
        assert!(!p.exists(&format!("contracts/open/login-api-next-1-next-{n}.md")));
    }
    wait_for(&p, "the deferred and skipped notices", || {
        p.count(FOUNDER, "handoff-deferred") == 1 && p.count(B, "handoff-deferred") == 1
    });
    let founder = inbox(&p, FOUNDER);
    assert!(
        founder.contains("already owns a step of this chain"),
        "{founder}"
    );
    let b = inbox(&p, B);
    assert!(
        b.contains("`nobody-registered-here` was suggested but is not a registered citizen"),
        "{b}"
    );
    assert!(
        b.contains(&format!("`{AWAY}` was suggested but is away")),
        "{b}"
    );

    // Step 3 (C) suggests D: the fourth step is deferred to the first opener, with context.
    claim_and_settle(&p, "login-api-next-1-next-1", C, &[&format!("{D}:Ship it")]);
    wait_for(&p, "the chain-depth deferral", || {
        p.count(FOUNDER, "handoff-deferred") == 2
    });
    assert!(!p.exists("contracts/open/login-api-next-1-next-1-next-1.md"));
    let founder = inbox(&p, FOUNDER);
    assert!(
        founder.contains("it would be step 4 of a chain limited to 3"),
        "{founder}"
    );
    assert!(founder.contains("Reason: Ship it"), "{founder}");

    // A restart (after a crash) dispatches nothing twice.
    let markers = p.all_markers().len();
    let chronicle = p.read("chronicle.md");
    daemon.kill9();
    let _daemon = p.start_daemon();
    p.append("chronicle.md", ""); // an event, so the restarted daemon runs a pass
    ok(p.polisd(&["check"]));
    assert_eq!(p.read("chronicle.md"), chronicle);
    assert_eq!(p.all_markers().len(), markers);
    assert_eq!(p.count(B, "handoff-opened"), 1);
    assert_eq!(p.count(C, "handoff-opened"), 1);

    // The dispatch itself, run again on every settled parent (as a replayed event or a
    // second machine would), writes nothing and finds its follow-ups in place.
    let writer = polisd::fs::writer::Writer::new(&p.root).unwrap();
    let now = polisd::operations::chronicle::polis_now(&p.root);
    let polis = polisd::fs::snapshot::Polis::read(&p.root);
    for parent in ["login-api", "login-api-next-1", "login-api-next-1-next-1"] {
        let d =
            polisd::operations::handoff::dispatch_settled(&writer, &now, &polis, parent).unwrap();
        assert!(!d.wrote, "{parent} dispatched again");
        assert!(
            d.opened.iter().all(|o| o.existing),
            "{parent}: {:?}",
            d.opened
        );
    }
    assert_eq!(p.read("chronicle.md"), chronicle);
}

#[test]
fn a_new_citizen_suggestion_waits_in_the_human_queue_and_registers_nobody() {
    let p = polis();
    let _daemon = p.start_daemon();
    ok(p.polisd(&[
        "contract",
        "open",
        "--title",
        "Licence audit",
        "--by",
        FOUNDER,
        "--tags",
        "api",
    ]));
    ok(p.polisd(&["contract", "claim", "licence-audit", "--as", B]));
    let rel = "contracts/open/licence-audit.md";
    let text = p.read(rel);
    p.save(
        rel,
        &format!(
            "{text}\n## Settlement\n\nQuality self-score: 4\n\n### Suggested new citizen\n- **Need**: legal review\n- **Reason**: nobody here can read licences\n- **Suggested role**: reviews third-party licences before release\n"
        ),
    );
    let settled = p
        .read(rel)
        .replace("status: claimed", "status: settled")
        .replace("quality_score: null", "quality_score: 4");
    p.save(rel, &settled);
    p.mv(rel, "contracts/settled/licence-audit.md");
    wait_for(&p, "the person's queue item", || {
        let out = p.polisd(&["queue", "--json"]);
        String::from_utf8_lossy(&out.stdout).contains("new-citizen/licence-audit/1")
    });
    let queue = String::from_utf8_lossy(&ok(p.polisd(&["queue"])).stdout).into_owned();
    assert!(queue.contains("legal review"), "{queue}");
    assert_eq!(p.count(FOUNDER, "citizen-needed"), 0, "no inbox is told");
    let citizens = std::fs::read_dir(p.path("citizens")).unwrap().count();
    assert_eq!(citizens, 5, "polisd registered nobody");
}

#[test]
fn a_queue_item_is_a_persons_to_answer_and_no_citizen_can() {
    // The queue holds the decisions only a person makes; an agent answering it under its own
    // id (here the very citizen who asked) would make them itself.
    let p = polis();
    ok(p.polisd(&[
        "contract", "open", "--title", "Licences", "--by", FOUNDER, "--tags", "api",
    ]));
    ok(p.polisd(&["contract", "claim", "licences", "--as", B]));
    ok(p.polisd(&[
        "contract",
        "settle",
        "licences",
        "--quality",
        "4",
        "--no-lesson",
        "x",
        "--outcome",
        "done\n\n### Suggested new citizen\n- **Need**: legal review\n- **Reason**: nobody reads licences\n- **Suggested role**: reviews licences",
    ]));
    let key = "new-citizen/licences/1";
    let answer = |by: &str| {
        p.polisd(&[
            "queue",
            "answer",
            key,
            "accept",
            "--by",
            by,
            "--id",
            "legal-agent-one",
            "--tags",
            "legal:4",
        ])
    };
    let chronicle = p.read("chronicle.md");
    for citizen in [B, FOUNDER, "polis-daemon"] {
        let out = answer(citizen);
        assert_eq!(
            out.status.code(),
            Some(1),
            "{citizen}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(String::from_utf8_lossy(&out.stderr).contains("a person"));
        assert_eq!(p.read("chronicle.md"), chronicle, "{citizen}: written");
        assert!(
            !p.exists("citizens/legal-agent-one"),
            "{citizen}: registered"
        );
    }
    ok(answer("Dana Person"));
    assert!(p.exists("citizens/legal-agent-one/capability_card.yml"));
}

const WEAK: &str = "claude-agent-weak";

fn contract(id: &str, tags: &str, extra: &str) -> String {
    format!(
        "---\ncontract_id: {id}\ntitle: {id}\nopened_by: {FOUNDER}\nopened_at: 2026-03-02 10:00:00\nowner: null\nstatus: proposed\nstakes: medium\nrequired_tags: [{tags}]\ncost_ceiling: 60min\n{extra}routing:\n  recommended_by_router: null\n  recommendation_score: null\n  exploration: null\n  override: null\n---\n\n# {id}\n"
    )
}

fn recommended(p: &TestPolis, id: &str) -> Option<String> {
    let text = p.read(&format!("contracts/open/{id}.md"));
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with("recommended_by_router:"))?;
    let v = line.split_once(':')?.1.trim();
    (v != "null").then(|| v.to_string())
}

fn json(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn dependencies_route_on_the_last_settlement_rules_beat_the_policy_and_ready_skips_overlaps() {
    // IDLE is registered and not away, but has written no chronicle line in 14 days: inactive
    // (SPEC §8), so its rule falls through to the policy.
    const IDLE: &str = "claude-agent-idle";
    let p = polis();
    p.citizen(WEAK, "test", &[("api", 1)], "high");
    p.citizen(IDLE, "test", &[("api", 1)], "high");
    p.append(
        "chronicle.md",
        &chronicle_line(
            WEAK,
            "joined polis",
            &format!("[[citizens/{WEAK}]]"),
            "hello",
        ),
    );
    let yml = p.read("polis.yml");
    p.save(
        "polis.yml",
        &yml.replace(
            "routing:\n",
            &format!("routing:\n  rules:\n    - {{when: {{title: '^legal'}}, route_to: {WEAK}}}\n    - {{when: {{title: '^idle'}}, route_to: {IDLE}}}\n"),
        ),
    );
    let _daemon = p.start_daemon();
    p.save(
        "contracts/open/idle-chore.md",
        &contract("idle-chore", "api", ""),
    );
    p.save("contracts/open/base-a.md", &contract("base-a", "api", ""));
    p.save("contracts/open/base-b.md", &contract("base-b", "api", ""));
    p.save(
        "contracts/open/wired.md",
        &contract("wired", "api", "depends_on: [base-a, base-b]\n"),
    );
    p.save(
        "contracts/open/legal-review.md",
        &contract("legal-review", "api", ""),
    );
    wait_for(&p, "the bases and the rule's contract routed", || {
        recommended(&p, "base-a").is_some()
            && recommended(&p, "base-b").is_some()
            && recommended(&p, "legal-review").is_some()
    });
    assert_eq!(
        recommended(&p, "wired"),
        None,
        "not ready: never recommended"
    );

    // The routing rule decided, against the policy's scores.
    assert_eq!(recommended(&p, "legal-review").as_deref(), Some(WEAK));
    let explain = p.polisd(&["route", "legal-review", "--explain"]);
    let explain = String::from_utf8_lossy(&explain.stdout).to_string();
    assert!(
        explain.contains(&format!(
            "Routing rule 1 (title /^legal/) -> {WEAK} matched and decided."
        )),
        "{explain}"
    );
    let rec = json(&p.polisd(&["route", "legal-review", "--json"]));
    let best = rec["scores"][0]["citizen"].as_str().unwrap().to_string();
    assert_ne!(best, WEAK, "the policy's scores would not pick it");

    // The inactive target's rule fell through: the policy decided, and `route` says why.
    wait_for(&p, "the inactive target's contract routed", || {
        recommended(&p, "idle-chore").is_some()
    });
    let explain = p.polisd(&["route", "idle-chore", "--explain"]);
    let explain = String::from_utf8_lossy(&explain.stdout).to_string();
    assert!(
        explain.contains(&format!(
            "Routing rule 2 (title /^idle/) -> {IDLE} matched, but {IDLE} is not available"
        )),
        "an inactive target does not decide: {explain}"
    );

    claim_and_settle(&p, "base-a", FOUNDER, &[]);
    wait_for(&p, "base-a in the stats", || {
        !p.read("contracts/routing_stats.yml").contains("tags: {}")
    });
    assert_eq!(recommended(&p, "wired"), None, "one dependency still open");
    claim_and_settle(&p, "base-b", FOUNDER, &[]);
    wait_for(&p, "wired routed when its last dependency settled", || {
        recommended(&p, "wired").is_some()
    });
    let to = recommended(&p, "wired").unwrap();
    wait_for(&p, "the contract-unblocked notice", || {
        p.count(&to, "contract-unblocked") == 1
    });

    // The ready queue leaves out work that overlaps a contract in progress.
    p.save(
        "contracts/open/busy.md",
        &contract("busy", "api", "touches: [src/api/**]\n")
            .replace("owner: null", &format!("owner: {C}")),
    );
    p.save(
        "contracts/open/clash.md",
        &contract("clash", "api", "touches: [src/api/login.rs]\n"),
    );
    p.save(
        "contracts/open/apart.md",
        &contract("apart", "api", "touches: [docs/*.md]\n"),
    );
    let q = json(&ok(p.polisd(&["ready", "--as", B, "--json"])));
    let ids: Vec<&str> = q["ready"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["contract_id"].as_str().unwrap())
        .collect();
    assert!(
        ids.contains(&"apart") && ids.contains(&"legal-review"),
        "{q}"
    );
    assert!(!ids.contains(&"clash") && !ids.contains(&"busy"), "{q}");
    assert_eq!(q["held"][0]["contract_id"], "clash");
    assert_eq!(q["held"][0]["overlaps"], "busy");
    // The session primer shows the same queue.
    let primer =
        String::from_utf8_lossy(&ok(p.polisd(&["prime", "--as", B, "--no-mark-read"])).stdout)
            .to_string();
    let section = primer
        .split("## Ready to start (unowned, dependencies settled)\n")
        .nth(1)
        .and_then(|s| s.split("\n## ").next())
        .unwrap_or_else(|| panic!("no ready section in\n{primer}"));
    for id in &ids {
        assert!(
            section.contains(&format!("`{id}`")),
            "{id} missing: {section}"
        );
    }
    assert!(
        section.contains("- held back: `clash` (its `touches` overlap `busy`)"),
        "{section}"
    );

    // A dependency cycle is a finding.
    p.save(
        "contracts/open/loop-a.md",
        &contract("loop-a", "api", "depends_on: [loop-b]\n"),
    );
    p.save(
        "contracts/open/loop-b.md",
        &contract("loop-b", "api", "depends_on: [loop-a]\n"),
    );
    let check = p.polisd(&["check", "--json"]);
    assert_eq!(check.status.code(), Some(1));
    let found = json(&check);
    let codes: Vec<&str> = found["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["code"].as_str().unwrap())
        .collect();
    assert_eq!(codes.iter().filter(|c| **c == "P014").count(), 1, "{found}");
}

fn review(cid: &str, reviewer: &str, body: &str) -> String {
    format!(
        "---\nreviewer: {reviewer}\ncontract: {cid}\ndecision: requested_changes\nreviewed_at: 2026-03-02 14:30:00\n---\n\n## What is missing\n\nThe form is not wired.\n{body}"
    )
}

#[test]
fn suggestions_in_a_review_file_are_dispatched_under_the_chain_rules_once() {
    let p = polis();
    ok(p.polisd(&[
        "contract",
        "open",
        "--title",
        "Login API",
        "--by",
        FOUNDER,
        "--tags",
        "api",
    ]));
    claim_and_settle(&p, "login-api", B, &[]);
    const GONE: &str = "codex-agent-gone";
    p.citizen(GONE, "test", &[("api", 4)], "medium");
    p.append(
        "chronicle.md",
        &chronicle_line(GONE, "left polis", &format!("[[citizens/{GONE}]]"), "bye"),
    );
    // A review written before polisd met the polis is not acted on.
    let old = "reviews/2026-03-01-0900-login-api.md";
    p.save(
        old,
        &review(
            "login-api",
            D,
            &format!("\n### Suggested next citizen\n- **Citizen**: {C}\n- **Reason**: Old news\n"),
        ),
    );
    let daemon = p.start_daemon();
    ok(p.polisd(&["check"]));
    let rel = "reviews/2026-03-02-1430-login-api.md";
    p.save(
        rel,
        &review(
            "login-api",
            D,
            &format!(
                "\n### Suggested next citizen\n- **Citizen**: {C}\n- **Reason**: Wire the endpoint into the form\n- **Context**: src/ui/login.tsx\n\n\
                 ### Suggested next citizen\n- **Citizen**: {B}\n- **Reason**: Fix it yourself\n\n\
                 ### Suggested next citizen\n- **Citizen**: {GONE}\n- **Reason**: Port it\n\n\
                 ### Suggested new citizen\n- **Need**: accessibility audit\n- **Reason**: nobody checks screen readers\n- **Suggested role**: audits forms\n"
            ),
        ),
    );
    let next = "contracts/open/login-api-review-202603021430-next-1.md";
    wait_for(&p, "the review's follow-up", || p.exists(next));
    let text = p.read(next);
    assert!(
        text.contains(&format!("  recommended_by_router: {C}\n")),
        "{text}"
    );
    assert!(text.contains(&format!("chain: [{B}]")), "{text}");
    assert!(text.contains("parent_contract: login-api"), "{text}");
    assert!(
        text.contains(&format!(
            "Suggested by `{D}` when reviewing [[reviews/2026-03-02-1430-login-api]]"
        )),
        "{text}"
    );
    assert!(text.contains("src/ui/login.tsx"), "{text}");
    wait_for(&p, "the notices of the review's suggestions", || {
        p.count(C, "handoff-opened") == 1
            && p.count(FOUNDER, "handoff-deferred") == 1
            && p.count(D, "handoff-deferred") == 1
    });
    assert!(
        inbox(&p, D).contains(&format!("`{GONE}` was suggested but has left the polis")),
        "{}",
        inbox(&p, D)
    );
    assert!(inbox(&p, C).contains(&format!(
        "`{D}` suggested you as the next citizen when reviewing `login-api`"
    )));
    let founder = inbox(&p, FOUNDER);
    assert!(
        founder.contains(&format!(
            "`{B}` was suggested but that citizen already owns a step of this chain"
        )),
        "{founder}"
    );
    assert!(!founder.contains("accessibility audit"), "{founder}");
    let queue = String::from_utf8_lossy(&ok(p.polisd(&["queue", "--json"])).stdout).into_owned();
    assert!(
        queue.contains("new-citizen/2026-03-02-1430-login-api/1")
            && queue.contains("accessibility audit"),
        "{queue}"
    );
    for n in [2, 3] {
        assert!(!p.exists(&format!(
            "contracts/open/login-api-review-202603021430-next-{n}.md"
        )));
    }
    assert!(!p.exists("contracts/open/login-api-review-202603010900-next-1.md"));

    // After a restart, the review edited to add a block: only the new block is opened, and
    // nothing is dispatched or announced twice.
    let chronicle = p.read("chronicle.md");
    daemon.kill9();
    let _daemon = p.start_daemon();
    p.append(
        rel,
        &format!("\n### Suggested next citizen\n- **Citizen**: {FOUNDER}\n- **Reason**: Document the form\n"),
    );
    let third = "contracts/open/login-api-review-202603021430-next-4.md";
    wait_for(&p, "the added block's follow-up", || p.exists(third));
    wait_for(&p, "its notice", || p.count(FOUNDER, "handoff-opened") == 1);
    let after = p.read("chronicle.md");
    let added: Vec<&str> = after
        .strip_prefix(chronicle.as_str())
        .expect("only appended")
        .lines()
        .collect();
    assert_eq!(added.len(), 1, "{added:?}");
    assert!(added[0].contains("[[contracts/open/login-api-review-202603021430-next-4]]"));
    assert_eq!(p.count(C, "handoff-opened"), 1);
    assert_eq!(p.count(FOUNDER, "handoff-deferred"), 1);
    assert_eq!(p.count(FOUNDER, "citizen-needed"), 0);
    assert_eq!(p.count(D, "handoff-deferred"), 1);
    assert!(!p.exists("contracts/open/login-api-review-202603010900-next-1.md"));
}

/// `check` reports the routing rules that routing cannot follow: an entry of the wrong shape
/// (ignored) and one whose target has no card (the policy decides instead).
#[test]
fn check_reports_ignored_routing_rules_and_rules_to_unregistered_citizens() {
    let p = polis();
    let yml = p.read("polis.yml");
    p.save(
        "polis.yml",
        &yml.replace(
            "routing:\n",
            &format!("routing:\n  rules:\n    - {{when: {{title: '^legal'}}, route_to: {B}}}\n    - {{when: {{title: '^x'}}, route_to: claude-agent-ghost}}\n    - {{when: {{}}, route_to: {C}}}\n"),
        ),
    );
    let out = p.polisd(&["check", "--json"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(
            "routing.rules entry 2 routes to `claude-agent-ghost`, who has no capability card"
        ),
        "{text}"
    );
    assert!(
        text.contains("routing.rules entry 3 is ignored: `when` has neither `tags` nor `title`"),
        "{text}"
    );
    assert!(
        !text.contains("routing.rules entry 1"),
        "a good rule draws nothing: {text}"
    );
}

#[test]
fn check_and_the_daemon_report_unknown_dependencies_and_the_registry_audit() {
    let p = polis();
    let daemon = p.start_daemon();
    p.save(
        "contracts/open/wired.md",
        &contract("wired", "api", "depends_on: [no-such-contract]\n"),
    );
    p.save(
        &format!("citizens/{FOUNDER}/status.md"),
        &format!(
            "---\nagent_id: {FOUNDER}\nstate: idle\n---\n{}",
            "- did a thing\n".repeat(31)
        ),
    );
    let check = p.polisd(&["check", "--json"]);
    assert_eq!(check.status.code(), Some(1), "P013 is an error");
    let found = json(&check);
    let findings = found["findings"].as_array().unwrap();
    let at = |code: &str, path: &str| {
        findings
            .iter()
            .find(|f| f["code"] == code && f["path"] == path)
            .map(|f| f["message"].as_str().unwrap().to_string())
    };
    let unknown = at("P013", "contracts/open/wired.md").expect("P013");
    assert!(unknown.contains("`no-such-contract`"), "{unknown}");
    let journal = at("P015", &format!("citizens/{B}/journal.md")).expect("P015 missing file");
    assert!(journal.contains("no `journal.md`"), "{journal}");
    assert!(at("P015", &format!("citizens/{B}/status.md")).is_some());
    let long = at("P015", &format!("citizens/{FOUNDER}/status.md")).expect("P015 long status");
    assert!(long.contains("31 lines"), "{long}");
    assert!(
        at("P015", &format!("citizens/{FOUNDER}/journal.md")).is_none(),
        "init writes every file: {found}"
    );
    // The daemon logs each of them once.
    wait_for(&p, "the daemon's log of both findings", || {
        let log = daemon.log_text();
        log.contains("contracts/open/wired.md: error P013")
            && log.contains(&format!("citizens/{FOUNDER}/status.md: warning P015"))
    });
    let log = daemon.log_text();
    assert_eq!(log.matches("error P013").count(), 1, "{log}");
}

#[test]
fn quorum_leaves_out_citizens_who_left_in_status_and_tally() {
    let p = polis();
    for id in [B, C, D] {
        p.append(
            "chronicle.md",
            &chronicle_line(id, "joined polis", &format!("[[citizens/{id}]]"), "hello"),
        );
    }
    // C leaves on its own; the index keeper records that D left. Both lines are recent, so
    // without the rule both would still count as active citizens.
    p.append(
        "chronicle.md",
        &chronicle_line(C, "left polis", &format!("[[citizens/{C}]]"), "bye"),
    );
    p.append(
        "chronicle.md",
        &chronicle_line(
            FOUNDER,
            "left polis",
            &format!("[[citizens/{D}]]"),
            "D moved on",
        ),
    );
    let proposed = json(&ok(p.polisd(&[
        "amendment",
        "propose",
        "--title",
        "Quality floor",
        "--by",
        FOUNDER,
        "--json",
    ])));
    let aid = proposed["amendment_id"].as_str().unwrap().to_string();
    ok(p.polisd(&["amendment", "vote", &aid, "--as", B, "--vote", "agree"]));

    // FOUNDER and B remain: quorum max(2, 2/2 + 1) = 2, met by the proposer and B.
    let status = json(&ok(p.polisd(&["status", "--json"])));
    let a = &status["amendments"][0];
    assert_eq!(
        (a["agrees"].as_u64(), a["quorum"].as_u64()),
        (Some(2), Some(2)),
        "{status}"
    );
    let tally = json(&ok(p.polisd(&["tally", "--json"])));
    assert_eq!(tally["results"][0]["action"], "ratified", "{tally}");
    assert!(p.exists(&format!("amendments/ratified/{aid}.md")));
}

/// Record checks (P016–P022) know every key main's features write: a polis worked
/// on only through polisd's commands and daemon (a follow-up contract with `chain`,
/// `parent_contract` and `depends_on`; a contract with `depends_on` and `touches` routed when
/// it is unblocked; a reservation; a read cursor in `status.md`; a review) draws none of them.
#[test]
fn a_polis_written_by_handoffs_dependencies_reservations_and_read_cursors_draws_no_record_finding()
{
    let p = polis();
    let _daemon = p.start_daemon();
    ok(p.polisd(&[
        "contract",
        "open",
        "--title",
        "Login API",
        "--by",
        FOUNDER,
        "--tags",
        "api",
    ]));
    p.save(
        "contracts/open/login-docs.md",
        &contract(
            "login-docs",
            "api",
            "depends_on: [login-api]\ntouches: [docs/login.md]\n",
        ),
    );
    ok(p.polisd(&[
        "reserve",
        "src/api/**",
        "--as",
        B,
        "--contract",
        "login-api",
    ]));
    claim_and_settle(
        &p,
        "login-api",
        FOUNDER,
        &[&format!("{B}:Wire the endpoint into the login form")],
    );
    wait_for(&p, "the follow-up and the unblocked contract", || {
        p.exists("contracts/open/login-api-next-1.md")
            && p.count(B, "handoff-opened") == 1
            && recommended(&p, "login-docs").is_some()
    });
    ok(p.polisd(&["review", "login-api", "--as", C, "--decision", "signed_off"]));
    ok(p.polisd(&["notices", "--as", B, "--mark-read"]));
    assert!(p
        .read(&format!("citizens/{B}/status.md"))
        .contains("notices_read:"));
    let follow_up = p.read("contracts/open/login-api-next-1.md");
    assert!(
        follow_up.contains("parent_contract: login-api"),
        "{follow_up}"
    );

    let found = json(&p.polisd(&["check", "--json"]));
    let record: Vec<&serde_json::Value> = found["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| {
            let code = f["code"].as_str().unwrap();
            ("P016".."P023").contains(&code)
        })
        .collect();
    assert!(
        record.is_empty(),
        "record findings on polisd's own writes: {record:#?}"
    );
}

/// A contract whose id is near the file-name limit (a hand-written one may be) cannot have a
/// follow-up named `<id>-next-<n>`: the suggestion is skipped and its author told why, and the
/// pass goes on. Creating the file failed the whole pass, so the suggestion vanished with only
/// an error in polisd's log, and the pass failed again on every retry.
#[test]
fn a_follow_up_whose_id_would_not_fit_a_file_name_is_skipped_and_its_author_told() {
    let p = polis();
    let daemon = p.start_daemon();
    let long = "l".repeat(250);
    // Written beside and moved in: the editor-style save's temporary name would be too long.
    std::fs::write(p.path("contracts/long.tmp"), contract(&long, "api", "")).unwrap();
    p.mv("contracts/long.tmp", &format!("contracts/open/{long}.md"));
    claim_and_settle(
        &p,
        &long,
        B,
        &[&format!("{C}:Wire the endpoint into the form")],
    );
    wait_for(&p, "the author told of the skipped suggestion", || {
        inbox(&p, B).contains("too long for a file name")
    });
    let open: Vec<_> = std::fs::read_dir(p.path("contracts/open"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.starts_with(&long))
        .collect();
    assert!(open.is_empty(), "{open:?}");
    assert_eq!(p.count(C, "handoff-opened"), 0);
    let log = daemon.log_text();
    assert!(!log.contains("handoffs of"), "{log}");
}

/// A parent's title written by hand on several lines (a YAML block scalar holding a Settlement
/// and a suggestion) is quoted on one line in its follow-up's Goal: the follow-up carries no
/// Settlement its own settle would keep and dispatch as its owner's.
#[test]
fn a_hand_written_parent_title_on_several_lines_writes_no_blocks_into_the_follow_up() {
    let p = polis();
    let _daemon = p.start_daemon();
    ok(p.polisd(&[
        "contract",
        "open",
        "--title",
        "Login API",
        "--by",
        FOUNDER,
        "--tags",
        "api",
    ]));
    let rel = "contracts/open/login-api.md";
    let forged = format!(
        "title: |-\n  Login API\n\n  ## Settlement\n\n  ### Suggested next citizen\n  - **Citizen**: {D}\n  - **Reason**: forged\n"
    );
    p.save(rel, &p.read(rel).replace("title: Login API\n", &forged));
    claim_and_settle(
        &p,
        "login-api",
        FOUNDER,
        &[&format!("{B}:Wire the endpoint into the login form")],
    );
    let next1 = "contracts/open/login-api-next-1.md";
    wait_for(&p, "the follow-up", || p.exists(next1));
    let text = p.read(next1);
    assert!(
        text.contains("(Login API ## Settlement ### Suggested next citizen - **Citizen**: "),
        "{text}"
    );
    let body = text.split("\n---\n").nth(1).unwrap();
    assert!(
        !body
            .lines()
            .any(|l| l.starts_with("## Settlement") || l.starts_with("### Suggested")),
        "{body}"
    );
}

/// The chain is the owners of the steps as the contracts show them: a citizen who takes its
/// own suggested follow-up owns two steps (and counts twice), and a step's owner who edits the
/// `chain:` of its contract while the chain runs neither resets the depth nor lets an earlier
/// owner back in.
#[test]
fn owning_two_steps_or_editing_the_chain_by_hand_does_not_loosen_the_chain_rules() {
    let p = polis();
    let _daemon = p.start_daemon();
    ok(p.polisd(&[
        "contract",
        "open",
        "--title",
        "Login API",
        "--by",
        FOUNDER,
        "--tags",
        "api",
    ]));
    claim_and_settle(&p, "login-api", B, &[&format!("{C}:Wire the endpoint")]);
    let next1 = "contracts/open/login-api-next-1.md";
    wait_for(&p, "the first follow-up", || p.exists(next1));
    // B takes the follow-up suggested for C, and hands on again: that is step 3, not 2.
    claim_and_settle(&p, "login-api-next-1", B, &[&format!("{C}:Test the form")]);
    let next2 = "contracts/open/login-api-next-1-next-1.md";
    wait_for(&p, "the second follow-up", || p.exists(next2));
    let text = p.read(next2);
    assert!(text.contains(&format!("chain: [{B}, {B}]")), "{text}");
    assert!(text.contains("you are step 3 of at most 3"), "{text}");
    // Step 3's owner empties the chain its contract records, then suggests B.
    ok(p.polisd(&["contract", "claim", "login-api-next-1-next-1", "--as", D]));
    p.save(
        next2,
        &p.read(next2)
            .replace(&format!("chain: [{B}, {B}]"), "chain: []"),
    );
    claim_and_settle(&p, "login-api-next-1-next-1", D, &[&format!("{B}:Ship it")]);
    wait_for(&p, "the deferral to the first opener", || {
        p.count(FOUNDER, "handoff-deferred") == 1
    });
    assert!(!p.exists("contracts/open/login-api-next-1-next-1-next-1.md"));
    let founder = inbox(&p, FOUNDER);
    assert!(
        founder.contains("already owns a step of this chain"),
        "{founder}"
    );
    assert_eq!(p.count(B, "handoff-opened"), 0);
}
