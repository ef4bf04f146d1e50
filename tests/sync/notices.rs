//! Who is told what while a sync brings records in: one machine as the only writer, findings
//! held for the settling window, a line appended twice, and a settled file's findings.

use super::{settled, wait_logged, with_settling, ALPHA, BETA, FOUNDER};
use crate::harness::*;
use std::fs;

/// `writer = "none"`: this machine's daemon appends and edits nothing (another machine's
/// does), and still keeps routing_stats.yml, whose bytes are the same everywhere.
#[test]
fn a_daemon_with_writer_none_writes_only_the_stats() {
    let p = TestPolis::init(FOUNDER);
    p.citizen(ALPHA, "anthropic", &[("rust", 4)], "medium");
    fs::write(
        p.dir.path().join("polisd.toml"),
        "[watch]\ndebounce = \"50ms\"\n\n[behaviour]\nwriter = \"none\"\n\n[log]\nlevel = \"debug\"\n",
    )
    .unwrap();
    let _daemon = p.start_daemon();
    let open = "---\ncontract_id: lexer\ntitle: Lexer\nopened_by: founder-agent\nowner: null\nstatus: proposed\nrequired_tags: [rust]\nrouting:\n  recommended_by_router: null\n---\n\n## Intent\n\nLex.\n";
    p.save("contracts/open/lexer.md", open);
    p.save(
        "contracts/settled/parser.md",
        &settled("parser", FOUNDER, ALPHA, 4, "2026-03-02 10:00:00"),
    );
    p.append(
        "chronicle.md",
        &chronicle_line(ALPHA, "NOTED", "-", "bad verb"),
    );
    wait_for(&p, "the stats", || {
        p.read("contracts/routing_stats.yml") == p.expected_stats()
            && p.read("contracts/routing_stats.yml").contains(ALPHA)
    });
    let probe = "contracts/settled/probe.md";
    p.save(
        probe,
        &settled("probe", FOUNDER, ALPHA, 2, "2026-03-02 11:00:00"),
    );
    wait_for(&p, "the stats after a second settlement", || {
        p.read("contracts/routing_stats.yml") == p.expected_stats()
    });
    assert_eq!(
        p.read("contracts/open/lexer.md"),
        open,
        "no routing block written"
    );
    assert!(p.all_markers().is_empty(), "{:?}", p.all_markers());
}

/// `writer = "this-machine-only"`: a notice this machine was about to send is already in the
/// inbox though its ledger never sent it, so another machine's polisd writes too; polisd adds
/// nothing and says so once.
#[test]
fn the_only_writer_reports_a_notice_another_machine_delivered() {
    let p = TestPolis::init(FOUNDER);
    p.citizen(ALPHA, "anthropic", &[("rust", 4)], "medium");
    p.citizen(BETA, "openai", &[("rust", 3)], "low");
    fs::write(
        p.dir.path().join("polisd.toml"),
        "[watch]\ndebounce = \"50ms\"\n\n[behaviour]\nwriter = \"this-machine-only\"\n\n[log]\nlevel = \"debug\"\n",
    )
    .unwrap();
    let daemon = p.start_daemon();
    // Another machine's daemon already told beta (its block arrived with the sync).
    let other = polisd::protocol::delivery::inbox::Notification::contract_settled(
        BETA,
        "parser",
        "parser",
        ALPHA,
        Some(5),
    );
    p.append(
        &format!("citizens/{BETA}/inbox.md"),
        &other.render("2026-03-02 10:00"),
    );
    p.save(
        "contracts/settled/parser.md",
        &settled("parser", BETA, ALPHA, 5, "2026-03-02 10:00:00"),
    );
    wait_for(&p, "the report about the other writer", || {
        daemon
            .log_text()
            .contains("another machine's polisd delivers notices too")
    });
    assert_eq!(p.count(BETA, "contract-settled"), 1);
}

/// While a peer catches up, a chronicle line arrives before the contract it links to. The
/// finding is held for the settling window and dropped when the contract arrives within it;
/// a link that still points to nothing once the polis is quiet is told.
#[test]
fn a_link_to_a_contract_still_in_transit_is_not_a_notice() {
    let p = TestPolis::init(FOUNDER);
    p.citizen(ALPHA, "anthropic", &[("rust", 4)], "medium");
    with_settling(&p, "1500ms");
    let daemon = p.start_daemon();
    let contract = settled("parser", FOUNDER, ALPHA, 4, "2026-03-02 10:00:00");
    p.append(
        "chronicle.md",
        &chronicle_line(
            ALPHA,
            "settled contract",
            "[[contracts/settled/parser]]",
            "done",
        ),
    );
    wait_logged(&p, &daemon, "held for the settling window", 1);
    p.save("contracts/settled/parser.md", &contract);
    wait_logged(&p, &daemon, "resolved itself within the settling window", 1);
    assert_eq!(p.count(ALPHA, "chronicle-finding"), 0);

    // A link to a contract that never arrives: told once the window is over.
    p.append(
        "chronicle.md",
        &chronicle_line(
            ALPHA,
            "settled contract",
            "[[contracts/settled/lexer]]",
            "done",
        ),
    );
    wait_for(&p, "the notice about the dangling link", || {
        p.count(ALPHA, "chronicle-finding") == 1
    });
    assert!(p
        .read(&format!("citizens/{ALPHA}/inbox.md"))
        .contains("C006"));
}

/// A peer's settle can arrive as its edit before its move: for a moment `open/` holds a
/// contract with `status: settled` (P018). The finding is held for the settling window and
/// dropped when the move arrives within it; a contract left that way is told once the polis is
/// quiet.
#[test]
fn a_settle_whose_move_is_still_in_transit_is_not_a_notice() {
    let p = TestPolis::init(FOUNDER);
    p.citizen(ALPHA, "anthropic", &[("rust", 4)], "medium");
    with_settling(&p, "1500ms");
    let daemon = p.start_daemon();
    let half_way = |id: &str| settled(id, FOUNDER, ALPHA, 4, "2026-03-02 10:00:00");
    p.save("contracts/open/parser.md", &half_way("parser"));
    wait_logged(&p, &daemon, "held for the settling window", 1);
    fs::rename(
        p.root.join("contracts/open/parser.md"),
        p.root.join("contracts/settled/parser.md"),
    )
    .unwrap();
    // Left half-way: told once the polis is quiet, when the parser's would have been told too.
    p.save("contracts/open/lexer.md", &half_way("lexer"));
    wait_for(&p, "the notice about the contract left in open/", || {
        p.count(FOUNDER, "record-finding") >= 1
    });
    let inbox = p.read(&format!("citizens/{FOUNDER}/inbox.md"));
    assert_eq!(p.count(FOUNDER, "record-finding"), 1, "{inbox}");
    assert!(inbox.contains("contracts/open/lexer.md"), "{inbox}");
    assert!(!inbox.contains("contracts/open/parser.md"), "{inbox}");
}

/// A chronicle line appended twice (an agent followed "append the missing line" while the
/// line was still in transit) is a P024 finding told to its author, and `check` reports it.
#[test]
fn a_chronicle_line_appended_twice_is_a_finding() {
    let p = TestPolis::init(FOUNDER);
    p.citizen(ALPHA, "anthropic", &[("rust", 4)], "medium");
    let _daemon = p.start_daemon();
    let line = chronicle_line(ALPHA, "noted", "-", "working on the parser");
    p.append("chronicle.md", &line);
    p.append("chronicle.md", &line);
    wait_for(&p, "the duplicate's notice", || {
        p.count(ALPHA, "chronicle-finding") == 1
    });
    assert!(p
        .read(&format!("citizens/{ALPHA}/inbox.md"))
        .contains("P024"));
    let check: serde_json::Value =
        serde_json::from_slice(&p.polisd(&["check", "--json"]).stdout).unwrap();
    let dups: Vec<&serde_json::Value> = check["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["code"] == "P024")
        .collect();
    assert_eq!(dups.len(), 1, "{check}");
}

/// A settled file's finding (P018: its status is not `settled`) reaches the citizen who
/// settled it; when that citizen is gone, the index keeper.
#[test]
fn a_finding_in_a_settled_file_reaches_its_author() {
    let p = TestPolis::init(FOUNDER);
    p.citizen(ALPHA, "anthropic", &[("rust", 4)], "medium");
    let _daemon = p.start_daemon();
    let wrong = |id: &str, owner: &str| {
        settled(id, FOUNDER, owner, 4, "2026-03-02 10:00:00")
            .replace("status: settled", "status: claimed")
    };
    p.save("contracts/settled/parser.md", &wrong("parser", ALPHA));
    wait_for(&p, "the owner's notice", || {
        p.count(ALPHA, "record-finding") == 1
    });
    assert!(p
        .read(&format!("citizens/{ALPHA}/inbox.md"))
        .contains("P018"));
    // Settled by a citizen who left (no card), opened by one who is gone too: the keeper.
    p.save(
        "contracts/settled/lexer.md",
        &wrong("lexer", "gone-agent-one")
            .replace("opened_by: founder-agent", "opened_by: gone-agent-two"),
    );
    wait_for(&p, "the index keeper's notice", || {
        p.count(FOUNDER, "record-finding") == 1
    });
    assert!(p
        .read(&format!("citizens/{FOUNDER}/inbox.md"))
        .contains("lexer"));
}

/// A settled file's finding already there when polisd first meets the polis is not sent (SPEC
/// §3, §9), neither then nor after a restart (the state keeps it as sent, by kind and id); one
/// that comes later is.
#[test]
fn a_finding_in_a_settled_file_before_the_first_meeting_is_never_sent() {
    let p = TestPolis::init(FOUNDER);
    p.citizen(ALPHA, "anthropic", &[("rust", 4)], "medium");
    let wrong = |id: &str| {
        settled(id, FOUNDER, ALPHA, 4, "2026-03-02 10:00:00")
            .replace("status: settled", "status: claimed")
    };
    p.save("contracts/settled/old.md", &wrong("old"));
    let daemon = p.start_daemon();
    p.save("contracts/settled/parser.md", &wrong("parser"));
    wait_for(&p, "the later file's notice", || {
        p.count(ALPHA, "record-finding") == 1
    });
    drop(daemon);
    let _daemon = p.start_daemon();
    p.save("contracts/settled/lexer.md", &wrong("lexer"));
    wait_for(&p, "the notice after the restart", || {
        p.count(ALPHA, "record-finding") == 2
    });
    let inbox = p.read(&format!("citizens/{ALPHA}/inbox.md"));
    assert!(inbox.contains("parser") && inbox.contains("lexer"));
    assert!(!inbox.contains("old.md"), "{inbox}");
}
