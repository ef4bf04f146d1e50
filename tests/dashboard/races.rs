//! The console's actions raced against themselves, the command line and MCP: each round starts
//! the callers at once and asserts the transition's invariant (one winner, one record).

use super::console::{console_polis, csrf_of, post};
use super::*;

const ROUNDS: usize = 8;

/// polisd's notice asking for a new citizen, unread in bravo's inbox; its id.
fn citizen_needed(p: &TestPolis, round: usize) -> String {
    let id = format!("{:016x}", 0xabc0_0000_u64 + round as u64);
    p.append(
        &format!("citizens/{BRAVO}/inbox.md"),
        &format!(
            "\n### 2026-11-30 09:00 from polis-daemon\n\nA new citizen with the `gpu` capability \
             is asked for by next-job.\n\n[[contracts/open/next-job]]\n\
             <!-- polisd:citizen-needed:{id} -->\n\n---\n"
        ),
    );
    id
}

/// People answering one notice from several tabs: one answer reaches the citizen, the others
/// are refused as already answered (without the transition lock each read the notice unread
/// before another marked it read, and every answer was written).
#[test]
fn a_notice_answered_from_the_console_at_once_is_answered_once() {
    let p = console_polis();
    let s = std::sync::Arc::new(serve(&p, "127.0.0.1:0"));
    let (cookie, token) = csrf_of(&get(&s, &format!("/p/0/citizens/{BRAVO}")));
    let inbox = p.path(&format!("citizens/{BRAVO}/inbox.md"));
    for round in 0..ROUNDS {
        let notice = citizen_needed(&p, round);
        let form = format!(
            "csrf={token}&citizen={BRAVO}&notice={notice}&as={FOUNDER}&text=round+{round}+answer"
        );
        let replies = race(
            (0..4)
                .map(|i| {
                    let form = form.clone();
                    (
                        format!("tab {i}"),
                        console_racer(&s, &cookie, "answer", form),
                    )
                })
                .collect(),
        );
        let text = std::fs::read_to_string(&inbox).unwrap();
        one_winner(round, &replies);
        assert_eq!(
            text.matches(&format!("round {round} answer")).count(),
            1,
            "round {round} ({notice}): {replies:#?}\n{text}"
        );
        assert!(
            replies.iter().all(|r| r.1 || r.2.starts_with("422")),
            "{replies:#?}"
        );
    }
}

/// One racer: who it acts as, and the call, which says whether it won and what it answered.
type Racer = (String, Box<dyn FnOnce() -> (bool, String) + Send>);

/// Runs `racers` at once (one barrier); each one's name, whether it won, and its answer.
fn race(racers: Vec<Racer>) -> Vec<(String, bool, String)> {
    let barrier = std::sync::Arc::new(std::sync::Barrier::new(racers.len()));
    let handles: Vec<_> = racers
        .into_iter()
        .map(|(who, call)| {
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                barrier.wait();
                let (won, text) = call();
                (who, won, text)
            })
        })
        .collect();
    handles.into_iter().map(|h| h.join().unwrap()).collect()
}

/// A console form as a racer: won when answered 303.
fn console_racer(
    s: &std::sync::Arc<Server>,
    cookie: &str,
    action: &str,
    form: String,
) -> Box<dyn FnOnce() -> (bool, String) + Send> {
    let (s, cookie, path) = (s.clone(), cookie.to_string(), format!("/p/0/act/{action}"));
    Box::new(move || {
        let r = post(&s, &path, &cookie, &form, "");
        (r.status == 303, format!("{} {}", r.status, r.body))
    })
}

/// A command as a racer: won when it exits 0.
fn cli_racer(p: &TestPolis, args: &[&str]) -> Box<dyn FnOnce() -> (bool, String) + Send> {
    let mut cmd = Command::new(BIN);
    cmd.args(args)
        .env("POLISD_STATE_DIR", &p.state_dir)
        .env("NO_COLOR", "1")
        .current_dir(&p.root);
    Box::new(move || {
        let out = cmd.output().unwrap();
        (
            out.status.success(),
            format!(
                "{:?} {}{}",
                out.status.code(),
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ),
        )
    })
}

/// An initialized `polisd mcp` on `p`.
fn mcp(p: &TestPolis) -> harness::McpStdio {
    let mut m = harness::McpStdio::start(&p.root, &p.state_dir);
    m.request(
        0,
        "initialize",
        serde_json::json!({"protocolVersion": "2025-06-18", "capabilities": {},
                           "clientInfo": {"name": "console-races", "version": "1"}}),
    );
    m.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    m
}

/// A tool call as a racer on its own `polisd mcp`: won when not `isError`.
fn mcp_racer(
    mut m: harness::McpStdio,
    id: u64,
    tool: &'static str,
    args: serde_json::Value,
) -> Box<dyn FnOnce() -> (bool, String) + Send> {
    Box::new(move || {
        let v = m.call(id, tool, args);
        let result = &v["result"];
        (
            result["isError"] != serde_json::Value::Bool(true) && v.get("error").is_none(),
            v.to_string(),
        )
    })
}

/// Lines of the chronicle with `verb` about contract `id`.
fn chronicle_lines(p: &TestPolis, verb: &str, id: &str) -> usize {
    p.read("chronicle.md")
        .lines()
        .filter(|l| l.contains(&format!("| {verb} |")) && l.contains(&format!("/{id}]]")))
        .count()
}

#[track_caller]
fn one_winner(round: usize, answers: &[(String, bool, String)]) -> String {
    let winners: Vec<_> = answers.iter().filter(|a| a.1).collect();
    assert_eq!(winners.len(), 1, "round {round}: {answers:#?}");
    for a in answers {
        assert!(
            !a.2.contains("panicked") && !a.2.starts_with("500"),
            "{a:?}"
        );
    }
    winners[0].0.clone()
}

/// The console's override (the person gives the contract to a citizen) against the command
/// line's claim and MCP's claim of the same unowned contract: one owner, one chronicle line.
#[test]
fn a_console_override_racing_a_cli_and_an_mcp_claim_has_one_winner() {
    let p = console_polis();
    let s = std::sync::Arc::new(serve(&p, "127.0.0.1:0"));
    let (cookie, token) = csrf_of(&get(&s, "/p/0/"));
    const CHARLIE: &str = "charlie-agent";
    p.citizen(CHARLIE, "anthropic", &[("docs", 3)], "low");
    for round in 0..ROUNDS {
        let id = format!("race-r{round}");
        p.save(
            &format!("contracts/open/{id}.md"),
            &contract(
                &id,
                "a raced job",
                None,
                "proposed",
                &["docs"],
                &format!("routing:\n  recommended_by_router: {BRAVO}\n  recommendation_score: 0.500\n  exploration: false\n  override: null\n"),
                "## Intent\n\nRace.\n",
            ),
        );
        let m = mcp(&p);
        let answers = race(vec![
            (
                ALPHA.to_string(),
                console_racer(
                    &s,
                    &cookie,
                    "override",
                    format!("csrf={token}&contract={id}&to={ALPHA}&reason=alpha+knows+docs"),
                ),
            ),
            (
                FOUNDER.to_string(),
                console_racer(
                    &s,
                    &cookie,
                    "override",
                    format!("csrf={token}&contract={id}&to={FOUNDER}&reason=founder+knows+docs"),
                ),
            ),
            (
                BRAVO.to_string(),
                cli_racer(&p, &["contract", "claim", &id, "--as", BRAVO]),
            ),
            (
                "mcp".to_string(),
                mcp_racer(
                    m,
                    1,
                    "polis_claim_contract",
                    serde_json::json!({"contract_id": id, "citizen": CHARLIE}),
                ),
            ),
        ]);
        let winner = one_winner(round, &answers);
        let owner = if winner == "mcp" {
            CHARLIE
        } else {
            winner.as_str()
        };
        assert!(
            p.read(&format!("contracts/open/{id}.md"))
                .contains(&format!("owner: {owner}\n")),
            "round {round}: {answers:#?}"
        );
        assert_eq!(
            chronicle_lines(&p, "claimed contract", &id),
            1,
            "round {round}"
        );
    }
}

/// The console's decision on an item of the person's queue against `polisd queue answer` on
/// the same item: one answer, one chronicle line, one new citizen.
#[test]
fn a_console_decision_racing_the_queue_command_is_answered_once() {
    let p = console_polis();
    let (id, key) = super::console::ask_for_a_new_citizen(&p);
    let s = std::sync::Arc::new(serve(&p, "127.0.0.1:0"));
    let (cookie, token) = csrf_of(&get(&s, "/p/0/"));
    let answers = race(vec![
        (
            "console".to_string(),
            console_racer(&s, &cookie, "decide", format!("csrf={token}&key={key}&answer=accept&by=Dana+Person&why=console&id=finance-agent-one")),
        ),
        (
            "console-decline".to_string(),
            console_racer(&s, &cookie, "decide", format!("csrf={token}&key={key}&answer=decline&by=Dana+Person&why=console+no")),
        ),
        (
            "cli".to_string(),
            cli_racer(&p, &["queue", "answer", &key, "--accept", "--by", "Eli Person", "--why", "cli", "--id", "finance-agent-two"]),
        ),
        (
            "cli-decline".to_string(),
            cli_racer(&p, &["queue", "answer", &key, "--decline", "--by", "Eli Person", "--why", "cli no"]),
        ),
    ]);
    let winner = one_winner(0, &answers);
    let chronicle = p.read("chronicle.md");
    assert_eq!(
        chronicle
            .lines()
            .filter(|l| l.contains("| answered queue item |") && l.contains(&format!("/{id}]]")))
            .count(),
        1,
        "{answers:#?}\n{chronicle}"
    );
    // The winner's new citizen, and only when the winner accepted.
    let cards: Vec<_> = ["finance-agent-one", "finance-agent-two"]
        .into_iter()
        .filter(|c| p.exists(&format!("citizens/{c}/capability_card.yml")))
        .collect();
    let expected: &[&str] = match winner.as_str() {
        "console" => &["finance-agent-one"],
        "cli" => &["finance-agent-two"],
        _ => &[],
    };
    assert_eq!(cards, expected, "{answers:#?}");
}

/// A review from the console and the same reviewer's review from the command line, at once:
/// one review file, one chronicle line.
#[test]
fn a_console_review_racing_the_same_reviewers_cli_review_is_written_once() {
    let p = console_polis();
    let s = std::sync::Arc::new(serve(&p, "127.0.0.1:0"));
    let (cookie, token) = csrf_of(&get(&s, "/p/0/"));
    let body = p.dir.path().join("review-body.md");
    std::fs::write(&body, "cli\n").unwrap();
    let body = body.to_str().unwrap();
    for round in 0..ROUNDS {
        let id = format!("review-r{round}");
        p.save(
            &format!("contracts/open/{id}.md"),
            &contract(
                &id,
                "a reviewed job",
                Some(BRAVO),
                "in_progress",
                &["rust"],
                "",
                "## Intent\n\nReview.\n",
            ),
        );
        let answers = race(vec![
            (
                "console".to_string(),
                console_racer(&s, &cookie, "review", format!("csrf={token}&contract={id}&as={ALPHA}&decision=requested_changes&body=console")),
            ),
            (
                "cli".to_string(),
                cli_racer(&p, &["review", &id, "--as", ALPHA, "--decision", "requested_changes", "--body", body]),
            ),
        ]);
        let files = std::fs::read_dir(p.path("reviews"))
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .ends_with(&format!("-{id}.md"))
            })
            .count();
        one_winner(round, &answers);
        assert_eq!(files, 1, "round {round}: {answers:#?}");
        let lines = p
            .read("chronicle.md")
            .lines()
            .filter(|l| l.contains("| requested changes |") && l.contains(&format!("-{id}]]")))
            .count();
        assert_eq!(lines, 1, "round {round}: {answers:#?}");
    }
}

/// Silencing from the console racing itself: different classes all kept, one class once.
#[test]
fn console_silences_at_once_keep_every_class_once() {
    let p = console_polis();
    let s = std::sync::Arc::new(serve(&p, "127.0.0.1:0"));
    let (cookie, token) = csrf_of(&get(&s, "/p/0/"));
    let codes = [
        "P001", "P002", "P003", "P004", "C004", "C004", "P007", "P007",
    ];
    // Each class at once, with the same class twice: every answer is a success.
    let all_at_once = |action: &str, fields: &str| {
        let answers = race(
            codes
                .iter()
                .map(|c| {
                    let body = format!("csrf={token}&code={c}&as={FOUNDER}{fields}");
                    (c.to_string(), console_racer(&s, &cookie, action, body))
                })
                .collect(),
        );
        assert!(answers.iter().all(|a| a.1), "{action}: {answers:#?}");
    };
    all_at_once("silence", "&reason=fine");
    let text = p.read("silenced.yml");
    for c in codes {
        assert_eq!(text.matches(&format!("code: {c}")).count(), 1, "{text}");
    }
    // And lifting them at once: none left.
    all_at_once("unsilence", "");
    let left = p.read("silenced.yml");
    assert!(!left.contains("code:"), "{left}");
}
