//! The protocol's source documents (the seeds) taken to the letter, each test named after the
//! seed rule it pins and run on the real binary: the entry routine's catch-up, settling with a
//! lesson, the chavruta review that gates high stakes, the council's verdict gating settlement
//! and handoffs written in the orchestration seed's own words.

mod harness;

use harness::TestPolis;
use serde_json::Value;
use std::process::Output;

const ME: &str = "claude-code-one";
const OTHER: &str = "codex-frontend-one";

fn json(out: &Output) -> Value {
    assert!(out.status.success(), "{}", harness::describe(out));
    serde_json::from_slice(&out.stdout).expect("JSON on stdout")
}

fn polis() -> TestPolis {
    let p = TestPolis::init(ME);
    p.citizen(OTHER, "openai", &[("frontend", 4)], "low");
    p
}

fn status_field(p: &TestPolis, citizen: &str, key: &str) -> Option<String> {
    let text = p.read(&format!("citizens/{citizen}/status.md"));
    text.lines()
        .take_while(|l| *l != "---" || text.starts_with(l))
        .find_map(|l| l.strip_prefix(&format!("{key}: ")))
        .map(|v| v.trim().trim_matches('\'').to_string())
}

/// Skill seed, "The first thing to do every session", steps 4 to 8: the primer serves
/// index.md's state, the inbox, the chronicle since `last_seen_event` and the open contracts,
/// then records `last_seen_event` and `last_active`. Fifty events by others in the very minute
/// of the last session are all new; a second session start sees none of them again.
#[test]
fn entry_routine_catches_up_since_last_seen_event_and_records_it() {
    let p = polis();
    p.save(
        "index.md",
        "---\nindex_keeper: claude-code-one\n---\n\n# Project\n\n## Current state\n\nLogin rewrite half done; CI red on main.\n\n## Citizens\n\n- someone\n",
    );
    let first = json(&p.polisd(&["prime", "--as", ME, "--json"]));
    let md = first["markdown"].as_str().unwrap();
    assert!(
        md.contains("## Where things stand (index.md)\n> Login rewrite half done; CI red on main."),
        "{md}"
    );
    let seen = status_field(&p, ME, "last_seen_event").expect("last_seen_event recorded");
    assert!(status_field(&p, ME, "last_active").is_some());

    // Fifty lines by another citizen, stamped in the same minute as the cursor (and one of
    // the citizen's own, which is not news to it).
    let mut lines = String::new();
    for i in 0..50 {
        lines.push_str(&format!(
            "- {seen} | {OTHER} | filed lesson | - | event {i:02}\n"
        ));
    }
    lines.push_str(&format!("- {seen} | {ME} | filed lesson | - | my own\n"));
    p.append("chronicle.md", &lines);

    let second = json(&p.polisd(&["prime", "--as", ME, "--json"]));
    assert_eq!(second["since_last_seen"]["events"], 50, "{second}");
    assert_eq!(second["since_last_seen"]["complete"], true);
    let md = second["markdown"].as_str().unwrap();
    assert!(
        md.contains("Since your last session: 50 chronicle events by others"),
        "{md}"
    );
    // Newest first, and the rest counted.
    let newest = md.find("event 49").expect("newest shown");
    assert!(md.find("event 48").is_some_and(|older| newest < older));
    assert!(!md.contains("my own"));
    assert!(md.contains("… and 38 more"), "{md}");
    assert_eq!(
        status_field(&p, ME, "last_seen_event").as_deref(),
        Some(seen.as_str())
    );
    assert_eq!(
        status_field(&p, ME, "last_seen_event_lines")
            .as_deref()
            .map(|n| n.parse::<usize>().unwrap() >= 51),
        Some(true)
    );

    let third = json(&p.polisd(&["prime", "--as", ME, "--json"]));
    assert_eq!(third["since_last_seen"]["events"], 0, "{third}");
    assert!(third["markdown"]
        .as_str()
        .unwrap()
        .contains("## Chronicle since your last session (newest first)\n- nothing new"));

    // A peek records nothing: the cursor stays where it was.
    p.append(
        "chronicle.md",
        &format!("- {seen} | {OTHER} | filed lesson | - | later\n"),
    );
    let before = p.read(&format!("citizens/{ME}/status.md"));
    let peek = json(&p.polisd(&["prime", "--as", ME, "--json", "--no-mark-read"]));
    assert_eq!(peek["since_last_seen"]["events"], 1);
    assert_eq!(p.read(&format!("citizens/{ME}/status.md")), before);
}

/// Skill seed, step 4: index.md says "where things stand". A freshly founded polis has said
/// nothing there yet, so once a contract is open the primer must not quote init's words as
/// the state, neither polisd's template nor the reference's placeholder "No open contracts
/// yet." (which turns false at the first contract).
#[test]
fn entry_routine_never_quotes_init_s_placeholder_as_where_things_stand() {
    let p = polis();
    let open = p.polisd(&["contract", "open", "--title", "First work", "--by", ME]);
    assert!(open.status.success(), "{}", harness::describe(&open));
    let fresh = json(&p.polisd(&["prime", "--as", OTHER, "--json", "--no-mark-read"]));
    let md = fresh["markdown"].as_str().unwrap();
    let stand = md
        .split("## Where things stand (index.md)\n")
        .nth(1)
        .and_then(|rest| rest.split("\n## ").next())
        .expect("the section is there");
    assert_eq!(
        stand, "- index.md states no current focus yet (its index keeper writes it)\n",
        "{md}"
    );

    let index = p.read("index.md");
    let (head, tail) = index
        .split_once("## Current focus")
        .expect("init's section");
    let tail = tail.replacen(
        "\n\n<!--",
        "\n\nNo open contracts yet. Open the first contract under `contracts/open/`.\n<!--",
        1,
    );
    p.save("index.md", &format!("{head}## Current focus{tail}"));
    let reference = json(&p.polisd(&["prime", "--as", OTHER, "--json", "--no-mark-read"]));
    let md = reference["markdown"].as_str().unwrap();
    assert!(md.contains("states no current focus yet"), "{md}");
    assert!(!md.contains("No open contracts"), "{md}");
}

fn refused(out: Output, why: &str) -> String {
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(
        out.status.code(),
        Some(1),
        "expected a refusal (exit 1)\nstderr: {err}"
    );
    assert!(err.contains(why), "refusal should say {why:?}: {err}");
    err
}

fn open_claimed(p: &TestPolis, title: &str, stakes: &str) -> String {
    let out = json(&p.polisd(&[
        "contract", "open", "--title", title, "--by", ME, "--tags", "python", "--stakes", stakes,
        "--json",
    ]));
    let id = out["contract_id"].as_str().unwrap().to_string();
    json(&p.polisd(&["contract", "claim", &id, "--as", ME, "--json"]));
    id
}

/// The file names of the reviews of `id` under `reviews/`.
fn reviews_of(p: &TestPolis, id: &str) -> Vec<String> {
    let Ok(dir) = std::fs::read_dir(p.path("reviews")) else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(&format!("-{id}.md")))
        .collect()
}

fn settle(p: &TestPolis, id: &str, extra: &[&str]) -> Output {
    let mut args = vec!["contract", "settle", id, "--quality", "4"];
    args.extend_from_slice(extra);
    p.polisd(&args)
}

/// Skill seed, "Settling does three things together": the Settlement, a lesson and the
/// chronicle line. Without a lesson the settle is refused and nothing is written; an explicit
/// `--no-lesson` says why in the Settlement section.
#[test]
fn settling_does_three_things_together_and_refuses_a_settle_without_a_lesson() {
    let p = polis();
    let id = open_claimed(&p, "Fix the login", "medium");
    let open = format!("contracts/open/{id}.md");
    let before = p.read(&open);
    let chronicle = p.read("chronicle.md");
    refused(settle(&p, &id, &[]), "--no-lesson");
    assert_eq!(p.read(&open), before, "nothing written");
    assert_eq!(p.read("chronicle.md"), chronicle, "no chronicle line");

    json(&settle(
        &p,
        &id,
        &[
            "--no-lesson",
            "a one-line typo fix teaches nothing",
            "--json",
        ],
    ));
    let settled = p.read(&format!("contracts/settled/{id}.md"));
    assert!(
        settled.contains("## Settlement")
            && settled.contains("No lesson: a one-line typo fix teaches nothing"),
        "{settled}"
    );

    let other = open_claimed(&p, "Speed up the tests", "low");
    let v = json(&settle(
        &p,
        &other,
        &[
            "--lesson",
            "Run the slow suite last.",
            "--impact",
            "3",
            "--json",
        ],
    ));
    let lesson = v["lesson"]["path"].as_str().expect("a lesson filed");
    assert!(p.read(lesson).contains("Run the slow suite last."));
    assert!(p
        .read("chronicle.md")
        .contains(&format!("settled contract | [[contracts/settled/{other}]]")));
}

/// Skill seed, "Chavruta review for high-stakes contracts": a `stakes: high` contract settles
/// only after another citizen signed off; the owner cannot review its own; requested changes
/// hold it back, show in `review.status` and are told to the owner; a second round (counted)
/// signs it off; a rejection is told to the owner and leaves escalation (a person's recorded
/// override) or abandoning.
#[test]
fn chavruta_review_gates_high_stakes_settlement() {
    let p = polis();
    let id = open_claimed(&p, "Drop the legacy table", "high");
    let lesson = ["--lesson", "Back up before dropping.", "--impact", "4"];
    refused(settle(&p, &id, &lesson), "signs off");
    refused(
        p.polisd(&["review", &id, "--as", ME, "--decision", "signed_off"]),
        "another citizen",
    );
    assert!(reviews_of(&p, &id).is_empty(), "no review written");

    let first = json(&p.polisd(&[
        "review",
        &id,
        "--as",
        OTHER,
        "--decision",
        "requested_changes",
        "--json",
    ]));
    assert_eq!(first["round"], 1, "{first}");
    assert_eq!(first["owner_notified"], ME, "{first}");
    let open = p.read(&format!("contracts/open/{id}.md"));
    assert!(open.contains("status: requested_changes"), "{open}");
    let inbox = p.read(&format!("citizens/{ME}/inbox.md"));
    assert!(
        inbox.contains("polisd:review-decided:") && inbox.contains("decided `requested_changes`"),
        "the owner is told: {inbox}"
    );
    refused(settle(&p, &id, &lesson), "requested changes");

    // The second round. Review files are named by the minute, so the first one is moved a
    // minute back, as if the owner had taken that minute to make the changes.
    let name = reviews_of(&p, &id).remove(0);
    let at = chrono::NaiveDateTime::parse_from_str(&name[..15], "%Y-%m-%d-%H%M").unwrap();
    let earlier = (at - chrono::Duration::minutes(1)).format("%Y-%m-%d-%H%M");
    p.mv(
        &format!("reviews/{name}"),
        &format!("reviews/{earlier}-{id}.md"),
    );
    let second = json(&p.polisd(&[
        "review",
        &id,
        "--as",
        OTHER,
        "--decision",
        "signed_off",
        "--json",
    ]));
    assert_eq!(second["round"], 2, "{second}");
    assert_eq!(second["owner_notified"], Value::Null);
    assert!(p.read("chronicle.md").contains("signed off | [[reviews/"));
    assert!(p.read("chronicle.md").contains("| signed_off (round 2)"));
    json(&settle(&p, &id, &[&lesson[..], &["--json"]].concat()));

    // A rejection: abandon, or a person decides and is recorded.
    let risky = open_claimed(&p, "Ship on Friday", "high");
    json(&p.polisd(&[
        "review",
        &risky,
        "--as",
        OTHER,
        "--decision",
        "rejected",
        "--json",
    ]));
    assert!(
        p.read(&format!("citizens/{ME}/inbox.md"))
            .contains(&format!(
                "your contract `{risky}` (round 1) and decided `rejected`"
            )),
        "the owner is told of the rejection"
    );
    refused(settle(&p, &risky, &lesson), "escalate");
    json(&settle(
        &p,
        &risky,
        &[
            &lesson[..],
            &[
                "--review-override",
                "Dana Person: the release cannot wait",
                "--json",
            ],
        ]
        .concat(),
    ));
    let settled = p.read(&format!("contracts/settled/{risky}.md"));
    assert!(
        settled.contains("Review overridden by Dana Person: the release cannot wait"),
        "{settled}"
    );
    assert!(p
        .read("chronicle.md")
        .contains("review overridden by Dana Person"));
}

/// The council seed's verdict is the council's answer: a contract under a council settles
/// only after it.
#[test]
fn council_verdict_gates_settlement() {
    let p = polis();
    p.citizen("gemini-member-cccc", "google", &[("python", 4)], "low");
    p.citizen("claude-member-dddd", "anthropic", &[("python", 3)], "low");
    let id = open_claimed(&p, "Choose the cache", "medium");
    json(&p.polisd(&[
        "council",
        "start",
        &id,
        "--mode",
        "duo",
        "--panel",
        &format!("{OTHER},gemini-member-cccc"),
        "--json",
    ]));
    let before = p.read(&format!("contracts/open/{id}.md"));
    refused(
        settle(&p, &id, &["--no-lesson", "decided by the council"]),
        "under council review",
    );
    assert_eq!(p.read(&format!("contracts/open/{id}.md")), before);
}

const THIRD: &str = "gemini-writer-three";
const FOURTH: &str = "claude-tester-four";

/// A polis of four citizens on the `api` tag, founded by [`ME`].
fn four() -> TestPolis {
    let p = polis();
    p.citizen(THIRD, "google", &[("api", 3)], "medium");
    p.citizen(FOURTH, "anthropic", &[("api", 3)], "medium");
    p
}

/// Opens `id` (by [`ME`]), claims it as `owner`, then settles it by hand as an agent does:
/// `extra` frontmatter lines, and a Settlement section holding `blocks`.
fn settle_by_hand(p: &TestPolis, title: &str, owner: &str, extra: &str, blocks: &str) -> String {
    let out = json(&p.polisd(&[
        "contract", "open", "--title", title, "--by", ME, "--tags", "api", "--json",
    ]));
    let id = out["contract_id"].as_str().unwrap().to_string();
    json(&p.polisd(&["contract", "claim", &id, "--as", owner, "--json"]));
    let rel = format!("contracts/open/{id}.md");
    let text = p
        .read(&rel)
        .replace("status: claimed", &format!("status: settled\n{extra}"))
        .replace("quality_score: null", "quality_score: 4")
        .replace("settled_at: null", "settled_at: 2026-03-02 10:00:00");
    p.save(
        &rel,
        &format!("{text}\n## Settlement\n\nDone; no lesson: a test.\n\n{blocks}"),
    );
    p.mv(&rel, &format!("contracts/settled/{id}.md"));
    id
}

fn count_markers(p: &TestPolis, kind: &str) -> usize {
    p.all_markers().iter().filter(|m| m.kind == kind).count()
}

/// Orchestration seed, "How Agents Signal the Dispatcher" and "Skill-to-agent chaining": the
/// seed's own `### Suggested next agent` / `- **Agent**:` opens the next contract exactly as
/// polisd's `citizen` form does, and a suggestion that cannot be followed is never silently
/// dropped: the deferral summary names it and says why.
#[test]
fn suggested_next_agent_in_the_seeds_words_opens_the_next_contract_as_the_citizen_form_does() {
    let p = four();
    let _daemon = p.start_daemon();
    let seed = settle_by_hand(
        &p,
        "Design the login API",
        ME,
        "",
        &format!("### Suggested next agent\n- **Agent**: {OTHER}\n- **Reason**: Wire the endpoint into the form\n- **Context**: src/ui/login.tsx\n\n### Suggested next agent\n- **Agent**: nobody-here-agent\n- **Reason**: Translate the errors\n"),
    );
    let ours = settle_by_hand(
        &p,
        "Design the signup API",
        ME,
        "",
        &format!("### Suggested next citizen\n- **Citizen**: {OTHER}\n- **Reason**: Wire the endpoint into the form\n- **Context**: src/ui/login.tsx\n"),
    );
    let (a, b) = (
        format!("contracts/open/{seed}-next-1.md"),
        format!("contracts/open/{ours}-next-1.md"),
    );
    harness::wait_for(&p, "both follow-ups", || p.exists(&a) && p.exists(&b));
    let normalise = |text: String, parent: &str| text.replace(parent, "PARENT");
    let (ta, tb) = (normalise(p.read(&a), &seed), normalise(p.read(&b), &ours));
    assert!(
        ta.contains(&format!("  recommended_by_router: {OTHER}\n")),
        "{ta}"
    );
    let without_title = |t: &str| {
        t.lines()
            .filter(|l| !l.contains("Design the"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert_eq!(without_title(&ta), without_title(&tb), "the same follow-up");
    harness::wait_for(&p, "the deferral summary", || {
        p.read(&format!("citizens/{ME}/inbox.md"))
            .contains("`nobody-here-agent` was suggested but is not a registered citizen")
    });
    assert!(p
        .read(&format!("citizens/{ME}/inbox.md"))
        .contains("Translate the errors"));
}

/// Orchestration seed, "Suggesting a New Agent" ("confirm with the user first") and "What
/// Happens at Max Depth" ("return results to the user"): both wait in the human queue
/// (`polisd queue`), nothing about the new agent lands in an agent's inbox, and the answer
/// command decides: an accepted agent becomes a registered citizen stub with its chronicle
/// line; `later` hides an item; an accepted deferral opens as a new chain.
#[test]
fn suggested_new_agent_and_max_depth_go_to_the_person_not_to_an_inbox() {
    let p = four();
    let _daemon = p.start_daemon();
    let id = settle_by_hand(
        &p,
        "Budget report",
        ME,
        &format!("chain: [{THIRD}, {OTHER}]\n"),
        &format!("### Suggested new agent\n- **Need**: personal finance\n- **Reason**: no citizen knows budgets\n- **Suggested role**: keeps the budget notes\n\n### Suggested next agent\n- **Agent**: {FOURTH}\n- **Reason**: Link the orphan notes\n"),
    );
    // The deferral is also told to the chain's opener; once it is there the daemon is done.
    harness::wait_for(&p, "the depth deferral", || {
        count_markers(&p, "handoff-deferred") == 1
    });
    let queue = json(&p.polisd(&["queue", "--json"]));
    let keys: Vec<&str> = queue["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["key"].as_str().unwrap())
        .collect();
    let new_key = format!("new-citizen/{id}/1");
    let deferred_key = format!("deferred/{id}/1");
    assert_eq!(
        keys,
        vec![new_key.as_str(), deferred_key.as_str()],
        "{queue}"
    );
    assert_eq!(queue["items"][0]["need"], "personal finance");
    assert_eq!(count_markers(&p, "citizen-needed"), 0, "no inbox is told");
    for who in [ME, OTHER, THIRD, FOURTH] {
        assert!(!p
            .read(&format!("citizens/{who}/inbox.md"))
            .contains("personal finance"));
    }

    // Accepting without an id is refused (nothing written); with one, the stub is registered.
    let chronicle = p.read("chronicle.md");
    refused(
        p.polisd(&["queue", "answer", &new_key, "accept", "--by", "Dana Person"]),
        "--id",
    );
    assert_eq!(p.read("chronicle.md"), chronicle);
    let accepted = json(&p.polisd(&[
        "queue",
        "answer",
        &new_key,
        "accept",
        "--by",
        "Dana Person",
        "--why",
        "we need it",
        "--id",
        "finance-agent-one",
        "--json",
    ]));
    assert_eq!(accepted["registered"]["agent_id"], "finance-agent-one");
    assert!(p.exists("citizens/finance-agent-one/capability_card.yml"));
    let chronicle = p.read("chronicle.md");
    assert!(
        chronicle.contains("| finance-agent-one | joined polis |"),
        "{chronicle}"
    );
    assert!(
        chronicle.contains(&format!(
            "| polis-daemon | answered queue item | [[contracts/settled/{id}]] | {new_key} accept by Dana Person: we need it"
        )),
        "{chronicle}"
    );
    // Answered once: asked again, it is no longer there.
    refused(
        p.polisd(&[
            "queue",
            "answer",
            &new_key,
            "decline",
            "--by",
            "Dana Person",
        ]),
        "no item",
    );

    // Later: out of the queue for a day, still answerable.
    json(&p.polisd(&[
        "queue",
        "answer",
        &deferred_key,
        "later",
        "--by",
        "Dana Person",
        "--json",
    ]));
    let queue = json(&p.polisd(&["queue", "--json"]));
    assert_eq!(queue["items"], serde_json::json!([]), "{queue}");
    let opened = json(&p.polisd(&[
        "queue",
        "answer",
        &deferred_key,
        "accept",
        "--by",
        "Dana Person",
        "--json",
    ]));
    let next = format!("contracts/open/{}.md", opened["opened"].as_str().unwrap());
    let text = p.read(&next);
    assert!(
        text.contains(&format!("  recommended_by_router: {FOURTH}\n")),
        "{text}"
    );
    assert!(text.contains("chain: []"), "a new chain: {text}");
    assert_eq!(count_markers(&p, "citizen-needed"), 0);
}

/// Orchestration seed, "Dispatcher Decision Logic": chaining without an explicit suggestion
/// "if the output clearly matches another agent's capabilities". polisd's rule: a settled
/// contract with no suggestion whose lesson is on a tag the contract did not require, and that
/// another citizen rates 4 or 5, is offered to the person as a next step for that citizen. It
/// is only offered (the human queue); nothing is opened until a person accepts.
#[test]
fn chaining_without_an_explicit_suggestion_is_only_offered_to_the_person() {
    const DOCS: &str = "gemini-docs-writer";
    let p = four();
    p.citizen(DOCS, "google", &[("docs", 5)], "low");
    let _daemon = p.start_daemon();
    let id = open_claimed(&p, "Rename the endpoints", "medium");
    json(&settle(
        &p,
        &id,
        &["--no-lesson", "filed below, on its own tags", "--json"],
    ));
    json(&p.polisd(&[
        "lesson",
        "file",
        "--as",
        ME,
        "--tags",
        "python,docs",
        "--contract",
        &id,
        "--impact",
        "3",
        "The API reference still names the old endpoints.",
        "--json",
    ]));
    let queue = json(&p.polisd(&["queue", "--json"]));
    let key = format!("chain/{id}/1");
    assert_eq!(queue["items"][0]["key"], key.as_str(), "{queue}");
    assert_eq!(queue["items"][0]["citizen"], DOCS);
    assert_eq!(queue["items"][0]["tags"], serde_json::json!(["docs"]));
    json(&p.polisd(&["check", "--json"]));
    let next = format!("contracts/open/{id}-chain-1.md");
    assert!(!p.exists(&next), "only offered, never opened silently");

    let answered = json(&p.polisd(&[
        "queue",
        "answer",
        &key,
        "accept",
        "--by",
        "Dana Person",
        "--json",
    ]));
    assert_eq!(answered["opened"], format!("{id}-chain-1").as_str());
    let text = p.read(&next);
    assert!(
        text.contains(&format!("  recommended_by_router: {DOCS}\n")),
        "{text}"
    );
    assert!(
        text.contains("required_tags:\n- docs\n") || text.contains("required_tags: [docs]"),
        "{text}"
    );
}

/// Skill seed, "The Contract": routing "is a recommendation, not a command: any citizen may
/// override by claiming and noting why in the Assignment section; overrides are logged". A
/// claim against the router's pick records `routing.override` (who, whom, why) and an
/// `overrode routing` line; a claim by the recommended citizen records none.
#[test]
fn overrides_leave_a_trace_in_routing_override_and_the_chronicle() {
    let p = polis();
    let out = json(&p.polisd(&[
        "contract",
        "open",
        "--title",
        "Tune the cache",
        "--by",
        ME,
        "--tags",
        "python",
        "--json",
    ]));
    let id = out["contract_id"].as_str().unwrap().to_string();
    let rel = format!("contracts/open/{id}.md");
    p.save(
        &rel,
        &p.read(&rel).replace(
            "  recommended_by_router: null\n",
            &format!("  recommended_by_router: {OTHER}\n"),
        ),
    );
    let claimed = json(&p.polisd(&[
        "contract",
        "claim",
        &id,
        "--as",
        ME,
        "--reason",
        "I wrote this cache: a fix: an hour",
        "--json",
    ]));
    assert_eq!(claimed["overrode"]["overrode"], OTHER, "{claimed}");
    let text = p.read(&rel);
    assert!(
        text.contains(&format!(
            "  override: {{by: {ME}, overrode: {OTHER}, why: \"I wrote this cache: a fix: an hour\"}}\n"
        )),
        "{text}"
    );
    assert!(p.read("chronicle.md").contains(&format!(
        "| {ME} | overrode routing | [[{}]] | recommended {OTHER}; I wrote this cache: a fix: an hour",
        rel.trim_end_matches(".md")
    )));

    // The recommended citizen's own claim is no override.
    let out = json(&p.polisd(&[
        "contract",
        "open",
        "--title",
        "Style the form",
        "--by",
        ME,
        "--tags",
        "frontend",
        "--json",
    ]));
    let other = out["contract_id"].as_str().unwrap().to_string();
    let rel = format!("contracts/open/{other}.md");
    p.save(
        &rel,
        &p.read(&rel).replace(
            "  recommended_by_router: null\n",
            &format!("  recommended_by_router: {OTHER}\n"),
        ),
    );
    let claimed = json(&p.polisd(&["contract", "claim", &other, "--as", OTHER, "--json"]));
    assert_eq!(claimed["overrode"], Value::Null);
    assert!(p.read(&rel).contains("  override: null\n"));

    // Settled, the override is counted for its citizen with how the work turned out: the
    // report's table (the dashboard writes it) and the citizen's dashboard page.
    for (cid, quality) in [(&id, "5"), (&other, "3")] {
        let out = p.polisd(&[
            "contract",
            "settle",
            cid,
            "--quality",
            quality,
            "--no-lesson",
            "a test",
            "--json",
        ]);
        assert!(out.status.success(), "{out:?}");
    }
    let report = String::from_utf8_lossy(&p.polisd(&["report"]).stdout).into_owned();
    let table = report
        .split("## Overrides of the router (1)")
        .nth(1)
        .unwrap_or_else(|| panic!("no overrides table: {report}"));
    assert!(
        table.contains(&format!("| {ME} | 1 | 5.00 | 0 | — |")),
        "{table}"
    );
    assert!(
        !table.split("\n## ").next().unwrap().contains(OTHER),
        "{table}"
    );
}

/// Skill seed, "Settling does three things together": the one exception, `--no-lesson`, is
/// counted. A citizen who settles three contracts without a lesson draws a reflection
/// proposal naming those settlements.
#[test]
fn reflection_counts_settlements_without_a_lesson() {
    let p = polis();
    for title in ["Fix a typo", "Bump a version", "Rename a flag"] {
        let id = open_claimed(&p, title, "low");
        json(&settle(
            &p,
            &id,
            &["--no-lesson", "nothing to learn", "--json"],
        ));
    }
    let lines = p.read("chronicle.md");
    assert_eq!(lines.matches("| settled contract |").count(), 3);
    assert_eq!(lines.matches("quality 4; no lesson").count(), 3, "{lines}");
    let root = p.root.to_str().unwrap().to_string();
    let out = p.polisd(&["reflect", &root, "--json"]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(text.contains("settled-without-lesson"), "{text}");
    assert!(text.contains(&format!("no-lesson-{ME}")), "{text}");
}

/// Orchestration seed, "Agent State (Post-it Protocol)": a post-it is always written, at most
/// 30 lines, and private. polisd's post-it is the citizen's `status.md`; after each step of a
/// handoff chain the daemon checks only its stamp and its length, and nudges the owner once
/// when the step did not write it.
#[test]
fn post_its_are_always_written_and_the_daemon_nudges_once_when_not() {
    let p = four();
    let old = format!("---\nagent_id: {ME}\nlast_active: 2026-01-01 09:00:00\nstate: working\n---\n\nSECRET-NOTE\n");
    p.save(&format!("citizens/{ME}/status.md"), &old);
    let _daemon = p.start_daemon();
    let id = settle_by_hand(
        &p,
        "Draft the schema",
        ME,
        "",
        &format!(
            "### Suggested next agent\n- **Agent**: {OTHER}\n- **Reason**: Build the form on it\n"
        ),
    );
    harness::wait_for(&p, "the post-it nudge", || {
        count_markers(&p, "postit-missing") == 1
    });
    let inbox = p.read(&format!("citizens/{ME}/inbox.md"));
    assert!(inbox.contains(&format!("You settled `{id}`")), "{inbox}");
    assert!(
        !inbox.contains("SECRET-NOTE"),
        "the post-it's content is never read out"
    );

    // The follow-up's owner writes its post-it (a stamp within the step, 2 lines): no nudge.
    let next = format!("{id}-next-1");
    harness::wait_for(&p, "the follow-up", || {
        p.exists(&format!("contracts/open/{next}.md"))
    });
    json(&p.polisd(&["contract", "claim", &next, "--as", OTHER, "--json"]));
    let later = (chrono::Local::now() + chrono::Duration::hours(1)).format("%Y-%m-%d %H:%M:%S");
    p.save(
        &format!("citizens/{OTHER}/status.md"),
        &format!("---\nagent_id: {OTHER}\nlast_active: {later}\nstate: idle\n---\n\nForm built.\nNext: tests.\n"),
    );
    json(&p.polisd(&[
        "contract",
        "settle",
        &next,
        "--quality",
        "4",
        "--no-lesson",
        "a form",
        "--json",
    ]));
    // A second settled step, by ME again without a post-it, shows the pass ran for `next`.
    let probe = settle_by_hand(&p, "Probe", ME, &format!("parent_contract: {next}\n"), "");
    harness::wait_for(&p, "the probe's nudge", || {
        count_markers(&p, "postit-missing") == 2
    });
    assert!(p
        .read(&format!("citizens/{ME}/inbox.md"))
        .contains(&format!("You settled `{probe}`")));
    assert!(!p
        .read(&format!("citizens/{OTHER}/inbox.md"))
        .contains("postit-missing"));
}

/// Skill seed, entry routine step 4 ("Read _polis/index.md — where things stand"): the daemon
/// keeps a state block in index.md current (the state, what is in flight, what needs a
/// person), between the markers the index keeper placed, leaving the keeper's own text alone.
/// The block holds no time, so the same state gives the same bytes.
#[test]
fn index_md_states_where_things_stand_and_what_is_in_flight() {
    let p = four();
    p.save(
        "index.md",
        "---\nindex_keeper: claude-code-one\n---\n\n# Project\n\nThe keeper's words.\n\n<!-- polisd:state:begin -->\n<!-- polisd:state:end -->\n\nMore words.\n",
    );
    let _daemon = p.start_daemon();
    let id = open_claimed(&p, "Drop the legacy table", "high");
    harness::wait_for(&p, "the state block", || {
        p.read("index.md").contains(&format!(
            "- [[contracts/open/{id}]] Drop the legacy table ({ME}, claimed)"
        ))
    });
    let index = p.read("index.md");
    assert!(
        index.starts_with(
            "---\nindex_keeper: claude-code-one\n---\n\n# Project\n\nThe keeper's words.\n"
        ),
        "{index}"
    );
    assert!(index.contains("- Citizens: 4\n"), "{index}");
    assert!(
        index.ends_with("<!-- polisd:state:end -->\n\nMore words.\n"),
        "{index}"
    );
    assert!(
        index.contains(&format!(
            "[[contracts/open/{id}]] is high-stakes with no reviewer"
        )),
        "{index}"
    );

    let other = json(&p.polisd(&[
        "contract",
        "open",
        "--title",
        "Write the docs",
        "--by",
        ME,
        "--tags",
        "api",
        "--json",
    ]));
    let _ = other;
    harness::wait_for(&p, "the block to follow the state", || {
        p.read("index.md")
            .contains("- Open contracts: 2, of which in flight: 1\n")
    });
    assert_eq!(
        p.read("index.md")
            .matches("<!-- polisd:state:begin -->")
            .count(),
        1
    );
    // The primer serves it as index.md's state.
    let prime = json(&p.polisd(&["prime", "--as", ME, "--json", "--no-mark-read"]));
    assert!(prime["markdown"].as_str().unwrap().contains("index.md"));
}
