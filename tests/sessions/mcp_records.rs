//! The MCP tools that write a record or a line: `polis_review`, `polis_log`,
//! `polis_file_lesson`, `polis_propose_amendment`. Each is run over stdio beside the command it
//! stands for, on a twin polis: both must write the same files and the same chronicle line
//! (times aside), and every refusal must write nothing.

use super::*;

/// An MCP session on `p`, initialized.
fn session(p: &TestPolis) -> Mcp {
    mcp_session(p, "2025-06-18").0
}

fn tool_text(v: &Value) -> &str {
    v["result"]["content"][0]["text"].as_str().unwrap()
}

/// A call's JSON answer, which must not be a tool error.
#[track_caller]
fn done(answer: &Value) -> Value {
    assert_eq!(answer["result"]["isError"], false, "{answer}");
    serde_json::from_str(tool_text(answer)).unwrap()
}

/// A tool error's one-line reason.
#[track_caller]
fn refused(answer: &Value) -> String {
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    let reason = tool_text(answer).to_string();
    assert!(!reason.contains('\n'), "one line: {reason}");
    reason
}

/// Arguments the schema rejects: −32602, naming the key.
#[track_caller]
fn invalid(answer: &Value, key: &str) {
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    let message = answer["error"]["message"].as_str().unwrap();
    assert!(message.contains(&format!("`{key}`")), "{message}");
}

/// Times, dates and minute stamps (in names too) as one placeholder, so two runs a minute
/// apart compare equal.
fn masked(text: &str) -> String {
    let stamp =
        regex::Regex::new(r"\d{4}-\d{2}-\d{2}(?:[ T]\d{2}:\d{2}(?::\d{2})?|-\d{4})?").unwrap();
    stamp.replace_all(text, "<time>").into_owned()
}

/// What happened to the polis between two trees: each new or changed file, with its new
/// tail when it was appended to and its whole text otherwise, times masked.
fn written(before: &[(String, Vec<u8>)], after: &[(String, Vec<u8>)]) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = after
        .iter()
        .filter_map(|(path, bytes)| {
            let old = before.iter().find(|(p, _)| p == path).map(|(_, b)| b);
            let new = match old {
                Some(old) if old == bytes => return None,
                Some(old) if bytes.starts_with(old) => &bytes[old.len()..],
                _ => &bytes[..],
            };
            Some((masked(path), masked(&String::from_utf8_lossy(new))))
        })
        .collect();
    out.sort();
    out
}

/// Two polises made alike: one for the MCP tool, one for the command.
fn twins() -> (TestPolis, TestPolis) {
    (polis(), polis())
}

/// Runs `polisd args…` on `p` and returns what it wrote.
#[track_caller]
fn command_writes(p: &TestPolis, args: &[&str]) -> Vec<(String, String)> {
    let before = harness::tree(p);
    let out = p.polisd(args);
    assert!(out.status.success(), "{}", harness::describe(&out));
    written(&before, &harness::tree(p))
}

/// A markdown file outside `_polis/`, for a command's `--body`.
fn body_file(p: &TestPolis, text: &str) -> String {
    let path = p.dir.path().join("body.md");
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

/// A stakes: high contract opened and claimed by `OTHER`, as the commands do it.
fn high_stakes_claimed(p: &TestPolis) -> String {
    let opened = p.polisd(&[
        "contract",
        "open",
        "--title",
        "Harden the parser",
        "--by",
        OTHER,
        "--tags",
        "frontend",
        "--stakes",
        "high",
        "--json",
    ]);
    assert!(opened.status.success(), "{}", harness::describe(&opened));
    let cid = serde_json::from_str::<Value>(&text(&opened)).unwrap()["contract_id"]
        .as_str()
        .unwrap()
        .to_string();
    let claimed = p.polisd(&["contract", "claim", &cid, "--as", OTHER]);
    assert!(claimed.status.success(), "{}", harness::describe(&claimed));
    cid
}

#[test]
fn polis_review_signs_off_as_polisd_review_does_and_refuses_the_owner() {
    let (p, twin) = twins();
    let cid = high_stakes_claimed(&p);
    assert_eq!(high_stakes_claimed(&twin), cid);
    let mut mcp = session(&p);

    // A stakes: high contract does not settle before its review.
    let before = harness::tree(&p);
    let early = mcp.call(
        2,
        "polis_settle_contract",
        json!({"contract_id": cid, "quality": 4, "no_lesson": "routine"}),
    );
    assert!(refused(&early).contains("signs off"), "{early}");
    // The owner does not review its own work.
    let own = mcp.call(
        3,
        "polis_review",
        json!({"contract_id": cid, "citizen": OTHER, "decision": "signed_off"}),
    );
    assert!(refused(&own).contains("owns contract"), "{own}");
    invalid(
        &mcp.call(
            4,
            "polis_review",
            json!({"contract_id": cid, "citizen": ME, "decision": "approved"}),
        ),
        "decision",
    );
    invalid(
        &mcp.call(
            5,
            "polis_review",
            json!({"contract_id": cid, "citizen": ME, "decision": "signed_off", "body": 3}),
        ),
        "body",
    );
    assert!(
        harness::tree(&p) == before,
        "a refused review wrote something"
    );

    let body = "Read every branch; the fuzz corpus passes.\n";
    let before = harness::tree(&p);
    let reviewed = done(&mcp.call(
        6,
        "polis_review",
        json!({"contract_id": cid, "citizen": ME, "decision": "signed_off", "body": body}),
    ));
    let by_mcp = written(&before, &harness::tree(&p));
    let by_command = command_writes(
        &twin,
        &[
            "review",
            &cid,
            "--as",
            ME,
            "--decision",
            "signed_off",
            "--body",
            &body_file(&twin, body),
        ],
    );
    assert_eq!(
        by_mcp, by_command,
        "the tool writes what the command writes"
    );
    assert_eq!(reviewed["decision"], "signed_off", "{reviewed}");
    assert!(p.read(reviewed["path"].as_str().unwrap()).contains(body));
    assert!(p.read("chronicle.md").ends_with(&format!(
        "| {ME} | signed off | [[{}]] | signed_off (round 1)\n",
        reviewed["path"].as_str().unwrap().trim_end_matches(".md")
    )));

    // Signed off, it settles.
    let settled = mcp.call(
        7,
        "polis_settle_contract",
        json!({"contract_id": cid, "quality": 4, "no_lesson": "routine"}),
    );
    assert_eq!(settled["result"]["isError"], false, "{settled}");
    assert!(p.exists(&format!("contracts/settled/{cid}.md")));
}

#[test]
fn polis_log_writes_the_line_polisd_log_writes_and_refuses_what_it_refuses() {
    let (p, twin) = twins();
    let mut mcp = session(&p);

    let before = harness::tree(&p);
    // Refused by the validator: the author is not a citizen (C002), a `|` in the verb (C001);
    // each with a corrected line.
    let stranger = mcp.call(
        2,
        "polis_log",
        json!({"citizen": "unknown-agent-x", "verb": "fixed the build"}),
    );
    let why = refused(&stranger);
    assert!(
        why.contains("C002") && why.contains("| <your-agent-id> | fixed the build |"),
        "{why}"
    );
    let piped = mcp.call(
        3,
        "polis_log",
        json!({"citizen": ME, "verb": "fixed | the build"}),
    );
    let why = refused(&piped);
    assert!(
        why.contains("C001") && why.contains(&format!("| {ME} | fixed - the build | - | -`")),
        "{why}"
    );
    // A link out of _polis/ is refused as `--link` refuses it.
    let outside = mcp.call(
        4,
        "polis_log",
        json!({"citizen": ME, "verb": "noted progress", "link": "../../etc/passwd"}),
    );
    refused(&outside);
    // The command's bounds: the verb is a few words, the link and the note bounded too.
    let long_verb = "a".repeat(201);
    invalid(
        &mcp.call(5, "polis_log", json!({"citizen": ME, "verb": long_verb})),
        "verb",
    );
    invalid(
        &mcp.call(
            6,
            "polis_log",
            json!({"citizen": ME, "verb": "noted", "note": "n".repeat(4_001)}),
        ),
        "note",
    );
    invalid(
        &mcp.call(
            7,
            "polis_log",
            json!({"citizen": ME, "verb": "noted", "link": "l".repeat(1_025)}),
        ),
        "link",
    );
    invalid(
        &mcp.call(
            8,
            "polis_log",
            json!({"citizen": ME, "verb": "noted", "note": 5}),
        ),
        "note",
    );
    invalid(&mcp.call(9, "polis_log", json!({"citizen": ME})), "verb");
    assert!(
        harness::tree(&p) == before,
        "a refused line wrote something"
    );

    let note = "waiting for a second reader";
    let link = "CONSTITUTION";
    let logged = done(&mcp.call(
        10,
        "polis_log",
        json!({"citizen": ME, "verb": "blocked on review", "link": link, "note": note}),
    ));
    let by_mcp = written(&before, &harness::tree(&p));
    let by_command = command_writes(
        &twin,
        &[
            "log",
            "--as",
            ME,
            "blocked on review",
            "--link",
            link,
            "--note",
            note,
        ],
    );
    assert_eq!(
        by_mcp, by_command,
        "the tool writes what the command writes"
    );
    let line = logged["line"].as_str().unwrap();
    assert!(
        p.read("chronicle.md").ends_with(&format!("{line}\n")),
        "{line}"
    );
    // No note: the grammar's empty field, as the command writes it.
    let bare = done(&mcp.call(
        11,
        "polis_log",
        json!({"citizen": ME, "verb": "joined polis", "note": null}),
    ));
    assert!(
        bare["line"]
            .as_str()
            .unwrap()
            .ends_with(&format!("| {ME} | joined polis | - | -")),
        "{bare}"
    );
}

#[test]
fn polis_file_lesson_files_what_polisd_lesson_file_files_and_refuses_a_bad_impact() {
    let (p, twin) = twins();
    let mut mcp = session(&p);
    let lesson = "Profile before optimising: the parser, not the lexer, was slow.";

    let before = harness::tree(&p);
    for (id, impact) in [(2, json!(9)), (3, json!(0)), (4, json!(-1))] {
        let answer = mcp.call(
            id,
            "polis_file_lesson",
            json!({"citizen": ME, "tags": ["rust"], "text": lesson, "impact": impact}),
        );
        assert!(
            refused(&answer).contains(&format!("impact must be 1 to 5, not {impact}")),
            "{answer}"
        );
    }
    invalid(
        &mcp.call(
            5,
            "polis_file_lesson",
            json!({"citizen": ME, "tags": ["rust"], "text": lesson, "impact": "4"}),
        ),
        "impact",
    );
    invalid(
        &mcp.call(
            6,
            "polis_file_lesson",
            json!({"citizen": ME, "tags": "rust", "text": lesson, "impact": 4}),
        ),
        "tags",
    );
    let untagged = mcp.call(
        7,
        "polis_file_lesson",
        json!({"citizen": ME, "tags": [" "], "text": lesson, "impact": 4}),
    );
    refused(&untagged);
    let unknown = mcp.call(
        8,
        "polis_file_lesson",
        json!({"citizen": ME, "tags": ["rust"], "text": lesson, "impact": 4,
               "contract": "no-such-contract"}),
    );
    refused(&unknown);
    assert!(
        harness::tree(&p) == before,
        "a refused lesson wrote something"
    );

    let filed = done(&mcp.call(
        9,
        "polis_file_lesson",
        json!({"citizen": ME, "tags": ["rust", "perf"], "text": lesson, "impact": 4}),
    ));
    let by_mcp = written(&before, &harness::tree(&p));
    let by_command = command_writes(
        &twin,
        &[
            "lesson",
            "file",
            "--as",
            ME,
            "--tags",
            "rust,perf",
            "--impact",
            "4",
            lesson,
        ],
    );
    assert_eq!(
        by_mcp, by_command,
        "the tool writes what the command writes"
    );
    let path = filed["path"].as_str().unwrap();
    assert!(path.starts_with("lessons/rust/"), "{filed}");
    assert!(p.read(path).contains(lesson));
    assert!(p.read("chronicle.md").contains(&format!(
        "| {ME} | filed lesson | [[{}]] |",
        path.trim_end_matches(".md")
    )));
    // The same lesson again (a retried call) is refused, not filed twice.
    let before = harness::tree(&p);
    let again = mcp.call(
        10,
        "polis_file_lesson",
        json!({"citizen": ME, "tags": ["rust", "perf"], "text": lesson, "impact": 4}),
    );
    refused(&again);
    assert!(harness::tree(&p) == before, "a lesson was filed twice");
}

#[test]
fn polis_propose_amendment_proposes_what_polisd_amendment_propose_does() {
    let (p, twin) = twins();
    let mut mcp = session(&p);
    let body =
        "## Problem\n\nSettled work below 3 teaches routing nothing.\n\n## Change\n\nA floor.\n";

    let before = harness::tree(&p);
    let past = mcp.call(
        2,
        "polis_propose_amendment",
        json!({"citizen": ME, "title": "Quality floor", "expires": "2020-01-01"}),
    );
    assert!(refused(&past).contains("it has passed"), "{past}");
    let unreadable = mcp.call(
        3,
        "polis_propose_amendment",
        json!({"citizen": ME, "title": "Quality floor", "expires": "next month"}),
    );
    assert!(refused(&unreadable).contains("YYYY-MM-DD"), "{unreadable}");
    // A vote in the body would be counted by the tally.
    let voting = mcp.call(
        4,
        "polis_propose_amendment",
        json!({"citizen": ME, "title": "Quality floor",
               "body": format!("## Response from {OTHER} (agree)\n")}),
    );
    refused(&voting);
    invalid(
        &mcp.call(
            5,
            "polis_propose_amendment",
            json!({"citizen": ME, "title": "Quality floor", "quorum": -1}),
        ),
        "quorum",
    );
    invalid(
        &mcp.call(
            6,
            "polis_propose_amendment",
            json!({"citizen": ME, "title": "Quality floor", "quorum": "2"}),
        ),
        "quorum",
    );
    invalid(
        &mcp.call(
            7,
            "polis_propose_amendment",
            json!({"citizen": "polis-reflector", "title": "Quality floor"}),
        ),
        "citizen",
    );
    assert!(
        harness::tree(&p) == before,
        "a refused proposal wrote something"
    );

    let proposed = done(&mcp.call(
        8,
        "polis_propose_amendment",
        json!({"citizen": ME, "title": "Quality floor", "body": body,
               "expires": "2099-12-31", "quorum": 2}),
    ));
    let by_mcp = written(&before, &harness::tree(&p));
    let by_command = command_writes(
        &twin,
        &[
            "amendment",
            "propose",
            "--title",
            "Quality floor",
            "--as",
            ME,
            "--body",
            &body_file(&twin, body),
            "--expires",
            "2099-12-31",
            "--quorum",
            "2",
        ],
    );
    assert_eq!(
        by_mcp, by_command,
        "the tool writes what the command writes"
    );
    let path = proposed["path"].as_str().unwrap();
    let text = p.read(path);
    assert!(
        text.contains("quorum_required: 2") && text.contains("2099-12-31") && text.contains(body),
        "{text}"
    );
    assert!(p.read("chronicle.md").contains(&format!(
        "| {ME} | proposed amendment | [[{}]] |",
        path.trim_end_matches(".md")
    )));
    // Proposed again (a retried call): refused, nothing written twice.
    let before = harness::tree(&p);
    let again = mcp.call(
        9,
        "polis_propose_amendment",
        json!({"citizen": ME, "title": "Quality floor", "body": body,
               "expires": "2099-12-31", "quorum": 2}),
    );
    assert!(refused(&again).contains("already proposed"), "{again}");
    assert!(harness::tree(&p) == before, "a proposal was written twice");
}
