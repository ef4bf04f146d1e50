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
    assert!(
        out.status.success(),
        "exit {:?}\nstdout: {}\nstderr: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
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
