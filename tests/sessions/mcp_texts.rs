//! What an MCP client reads on success names the tools to call, never a `polisd` command: the
//! client may have no shell. The notices stay as the inbox holds them (they are the protocol's
//! text), and the answer says once which tool does each command they name.

use super::*;
use std::collections::BTreeMap;

fn tool_text(v: &Value) -> &str {
    v["result"]["content"][0]["text"].as_str().unwrap()
}

/// A polis where every section of the primer has more than it shows, and notices that name
/// commands as polisd writes them.
fn crowded() -> TestPolis {
    let p = polis();
    for i in 0..14 {
        p.save(
            &format!("contracts/open/task-{i:02}.md"),
            &format!("---\ncontract_id: task-{i:02}\ntitle: Task {i}\nopened_by: {OTHER}\nopened_at: 2026-01-01 10:00:00\nowner: null\nstatus: proposed\nstakes: low\nrequired_tags: []\nrouting:\n  recommended_by_router: {ME}\n  recommendation_score: 0.5\n  exploration: false\n---\n\n## Intent\n"),
        );
        p.save(
            &format!("contracts/open/mine-{i:02}.md"),
            &format!("---\ncontract_id: mine-{i:02}\ntitle: Mine {i}\nopened_by: {OTHER}\nopened_at: 2026-01-01 10:00:00\nowner: {ME}\nstatus: claimed\nrequired_tags: []\n---\n"),
        );
        p.save(
            &format!("amendments/proposed/2026-01-{:02}-a{i}.md", i + 1),
            &format!("---\namendment_id: 2026-01-{:02}-a{i}\ntitle: Amendment {i}\nproposed_by: {OTHER}\nproposed_at: 2026-01-03 10:00:00\nexpires_at: 2099-01-01\nstatus: proposed\n---\n", i + 1),
        );
        message(
            &p,
            ME,
            &format!("2026-02-01 10:{i:02}"),
            OTHER,
            &format!("Message {i}."),
        );
    }
    let notice = |stamp: &str, kind: &str, id: &str, text: &str| {
        p.append(
            &format!("citizens/{ME}/inbox.md"),
            &format!("\n### {stamp} from polis-daemon\n\n{text}\n\n[[contracts/open/task-00]]\n<!-- polisd:{kind}:{id} -->\n\n---\n"),
        );
    };
    notice(
        "2026-03-02 10:00",
        "contract-routed",
        "00000000000000a1",
        &format!("The router recommends you for the new open contract `task-00`. To take it, run `polisd contract claim task-00 --as {ME}` (it refuses if another citizen claimed it first)."),
    );
    notice(
        "2026-03-02 10:01",
        "review-needed",
        "00000000000000a2",
        &format!("You are the reviewer of the contract `mine-00`. Review the work, then run `polisd review mine-00 --as {ME} --decision signed_off`."),
    );
    notice(
        "2026-03-02 10:02",
        "reservation-conflict",
        "00000000000000a3",
        &format!("Leave those files to `{OTHER}` and release yours with `polisd release src/ --as {ME}`."),
    );
    let mut reservations = String::from("reservations:\n");
    for i in 0..14 {
        reservations.push_str(&format!(
            "- citizen: {ME}\n  paths: [src/m{i}.rs]\n  reserved_at: 2026-01-01 10:00:00\n  expires_at: 2099-01-01 10:00:00\n"
        ));
    }
    reservations.push_str("- citizen: nobody-registered\n  paths: [docs/x.md]\n  reserved_at: 2026-01-01 10:00:00\n  expires_at: 2099-01-01 10:00:00\n");
    p.save("reservations.yml", &reservations);
    p
}

/// Every tool call `text` names (`` `polis_x` (`key: value`, `other`) ``), as the tool and
/// the keys it passes.
fn calls(text: &str) -> Vec<(String, Vec<String>)> {
    let mut out = Vec::new();
    for (at, _) in text.match_indices("`polis_") {
        let rest = &text[at + 1..];
        let Some(end) = rest.find('`') else { continue };
        let tool = rest[..end].to_string();
        let after = &rest[end + 1..];
        let mut keys = Vec::new();
        if let Some(args) = after.strip_prefix(" (") {
            let args = &args[..args.find(')').unwrap_or(args.len())];
            for part in args.split("`, `") {
                let key = part.trim_matches('`').split(':').next().unwrap().trim();
                keys.push(key.to_string());
            }
        }
        out.push((tool, keys));
    }
    out
}

/// Each tool's input schema, as the server lists them.
fn schemas(mcp: &mut Mcp) -> BTreeMap<String, Value> {
    let tools = mcp.request(2, "tools/list", json!({}));
    tools["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["name"].as_str().unwrap().to_string(),
                t["inputSchema"].clone(),
            )
        })
        .collect()
}

/// The tools and keys `text` names that the server does not have.
fn unknown_calls(text: &str, schemas: &BTreeMap<String, Value>) -> Vec<String> {
    let mut wrong = Vec::new();
    for (tool, keys) in calls(text) {
        let Some(schema) = schemas.get(&tool) else {
            wrong.push(format!("no tool `{tool}`"));
            continue;
        };
        for key in keys {
            if schema["properties"].get(&key).is_none() {
                wrong.push(format!("`{tool}` has no `{key}`"));
            }
        }
    }
    wrong
}

/// The primer through `polis_prime` names tools for every action and every "more" hint, and
/// says once which tool does each command the notices it shows name.
#[test]
fn the_mcp_primer_names_tools_never_a_polisd_command() {
    let p = crowded();
    let (mut mcp, _) = mcp_session(&p, "2025-06-18");
    let schemas = schemas(&mut mcp);
    let primer = mcp.call(3, "polis_prime", json!({"citizen": ME, "mark_read": false}));
    assert_eq!(primer["result"]["isError"], false, "{primer}");
    let text = tool_text(&primer);
    let notices = text.find("## Unread notices").unwrap();
    let after_notices = notices + text[notices..].find("\n## ").unwrap() + 1;
    // The notices are shown as the inbox holds them; everything else is the primer's own.
    let own = format!("{}{}", &text[..notices], &text[after_notices..]);
    let shown_notices = &text[notices..after_notices];
    let mut wrong: Vec<String> = own
        .lines()
        .chain(shown_notices.lines().filter(|l| l.starts_with("- … and")))
        .filter(|l| l.contains("polisd ") || l.contains("`ls ") || l.contains("`cat "))
        .map(|l| format!("a command: {l}"))
        .collect();
    wrong.extend(unknown_calls(text, &schemas));
    assert!(wrong.is_empty(), "{}\n\nin\n{text}", wrong.join("\n"));
    let tools_line = shown_notices
        .lines()
        .find(|l| l.starts_with("For the commands in these notices:"))
        .unwrap_or_else(|| panic!("no tools line in\n{text}"));
    for needle in [
        &format!("Start: `polis_ready` (`citizen: \"{ME}\"`)")[..],
        "`polis_claim_contract` (`contract_id: <contract id>`",
        "`polis_settle_contract` (",
        "`polis_vote` (",
        "`polis_log` (",
        &format!("more: `polis_notices` (`citizen: \"{ME}\"`)"),
        &format!("more: `polis_list_contracts` (`owner: \"{ME}\"`)"),
        "more: `polis_amendments`",
    ] {
        assert!(text.contains(needle), "missing {needle:?} in\n{text}");
    }
    for (command, tool) in [
        ("polisd contract claim", "polis_claim_contract`"),
        ("polisd review", "polis_review`"),
        ("polisd release", "polis_release` (`citizen`, `paths`)"),
    ] {
        assert!(
            tools_line.contains(&format!("`{command} …` is `{tool}")),
            "{tools_line}"
        );
    }
    assert_eq!(
        tools_line.matches("polisd ").count(),
        tools_line.matches("` is `polis_").count(),
        "every command the line names is a tool: {tools_line}"
    );
    assert!(
        shown_notices.contains(&format!("'polisd contract claim task-00 --as {ME}'")),
        "the notice as the inbox holds it (its spans flattened, as every notice is shown)"
    );
}

/// The same primer through `polisd prime` keeps its commands, and no tools line.
#[test]
fn the_cli_primer_keeps_its_commands() {
    let p = crowded();
    let out = p.polisd(&["prime", "--as", ME, "--json"]);
    let v: Value = serde_json::from_str(&text(&out)).unwrap();
    let primer = v["markdown"].as_str().unwrap();
    for needle in [
        &format!("Start: `polisd ready --as {ME}`, then `polisd contract claim ID --as {ME}`")[..],
        &format!("more: `polisd notices --as {ME} --unread`"),
        &format!("more: `grep -l 'owner: {ME}' _polis/contracts/open/*.md`"),
        "more: `ls _polis/amendments/proposed/`",
    ] {
        assert!(primer.contains(needle), "missing {needle:?} in\n{primer}");
    }
    assert!(!primer.contains("polis_"), "{primer}");
}

/// `polis_notices` shows the notices as written and, once, the tools their commands are.
#[test]
fn mcp_notices_name_the_tools_for_the_commands_they_name() {
    let p = crowded();
    let (mut mcp, _) = mcp_session(&p, "2025-06-18");
    let schemas = schemas(&mut mcp);
    let answer = mcp.call(3, "polis_notices", json!({"citizen": ME}));
    let v: Value = serde_json::from_str(tool_text(&answer)).unwrap();
    let line = v["tools"]
        .as_str()
        .unwrap_or_else(|| panic!("no tools in {v}"));
    for tool in ["polis_claim_contract", "polis_review", "polis_release"] {
        assert!(line.contains(&format!("is `{tool}`")), "{line}");
    }
    let wrong = unknown_calls(line, &schemas);
    assert!(wrong.is_empty(), "{}: {line}", wrong.join("; "));
    assert!(v["notices"]
        .to_string()
        .contains("'polisd contract claim task-00"));
    // A page of messages naming no command says nothing more.
    let quiet = mcp.call(
        4,
        "polis_notices",
        json!({"citizen": ME, "offset": 3, "limit": 2}),
    );
    let q: Value = serde_json::from_str(tool_text(&quiet)).unwrap();
    assert_eq!(q["notices"].as_array().unwrap().len(), 2, "{q}");
    assert!(q.get("tools").is_none(), "{q}");
}

/// The other tools' answers name no `polisd` command either.
#[test]
fn mcp_answers_name_no_polisd_command() {
    let p = crowded();
    let (mut mcp, _) = mcp_session(&p, "2025-06-18");
    let schemas = schemas(&mut mcp);
    let mut wrong = Vec::new();
    for (n, (tool, args)) in [
        ("polis_status", json!({})),
        ("polis_list_contracts", json!({})),
        ("polis_route", json!({"contract_id": "task-00", "seed": 1})),
        ("polis_amendments", json!({})),
        ("polis_ready", json!({"citizen": ME})),
        ("polis_reservations", json!({})),
        ("polis_context", json!({"contract_id": "mine-00"})),
        ("polis_show_contract", json!({"contract_id": "mine-00"})),
        ("polis_guardrails", json!({})),
        // And the tools that write, as they answer success.
        (
            "polis_claim_contract",
            json!({"contract_id": "task-01", "citizen": ME}),
        ),
        (
            "polis_log",
            json!({"citizen": ME, "verb": "progress", "link": "contracts/open/task-01"}),
        ),
        (
            "polis_reserve",
            json!({"citizen": ME, "paths": ["lib/x.rs"], "contract": "task-01"}),
        ),
        (
            "polis_release",
            json!({"citizen": ME, "paths": ["lib/x.rs"]}),
        ),
        (
            "polis_vote",
            json!({"amendment_id": "2026-01-01-a0", "citizen": ME, "vote": "agree"}),
        ),
        (
            "polis_add_guardrail",
            json!({"text": "run the tests", "tags": ["rust"]}),
        ),
        (
            "polis_file_lesson",
            json!({"citizen": ME, "tags": ["rust"], "text": "Small steps.", "impact": 3}),
        ),
        (
            "polis_propose_amendment",
            json!({"citizen": ME, "title": "Shorter rounds"}),
        ),
        (
            "polis_open_contract",
            json!({"title": "Another task", "opened_by": ME}),
        ),
        (
            "polis_review",
            json!({"contract_id": "task-01", "citizen": OTHER, "decision": "signed_off"}),
        ),
        (
            "polis_settle_contract",
            json!({"contract_id": "task-01", "quality": 4, "by": ME, "no_lesson": "trivial"}),
        ),
        (
            "polis_abandon_contract",
            json!({"contract_id": "mine-01", "by": ME, "reason": "not needed"}),
        ),
        ("polis_tally", json!({"dry_run": true})),
    ]
    .into_iter()
    .enumerate()
    {
        let answer = mcp.call(10 + n as u64, tool, args);
        assert_eq!(answer["result"]["isError"], false, "{tool}: {answer}");
        let text = tool_text(&answer);
        if text.contains("polisd ") {
            wrong.push(format!("{tool}: {text}"));
        }
        wrong.extend(unknown_calls(text, &schemas));
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n\n"));
}

/// The command every hand-written text below names: no text of polisd's own names it here, so
/// a `tools` line that does has mapped an agent's words.
const HAND_WRITTEN: &str = "polisd reconcile";

/// A polis where polisd's own notices name commands no tool does (`polisd check`, `polisd
/// verify --fix`) beside one a tool does, and agents' texts (a message, a title, a contract's
/// body, a reservation's note, a guardrail, a lesson) name [`HAND_WRITTEN`].
fn with_shell_commands() -> TestPolis {
    let p = polis();
    let notice = |stamp: &str, kind: &str, id: &str, text: &str, link: &str| {
        p.append(
            &format!("citizens/{ME}/inbox.md"),
            &format!("\n### {stamp} from polis-daemon\n\n{text}\n\n[[{link}]]\n<!-- polisd:{kind}:{id} -->\n\n---\n"),
        );
    };
    notice(
        "2026-03-02 10:00",
        "record-finding",
        "00000000000000b1",
        "polisd found an error (P016) in a file you wrote, `contracts/open/odd.md` (line 2): `contract_id: other` is not the file's name; write `contract_id: odd`. Fix the file; `polisd check` shows what is left.",
        "contracts/open/odd",
    );
    notice(
        "2026-03-02 10:01",
        "card-changed",
        "00000000000000b2",
        "Your capability card no longer matches its `content_hash`. If you edited it, restamp it with `polisd verify --fix`; if you did not, someone else changed it: compare it with your last known version and restore it.",
        &format!("citizens/{ME}/capability_card.yml"),
    );
    notice(
        "2026-03-02 10:02",
        "contract-routed",
        "00000000000000b3",
        &format!("The router recommends you for the new open contract `odd`. To take it, run `polisd contract claim odd --as {ME}` (it refuses if another citizen claimed it first)."),
        "contracts/open/odd",
    );
    message(
        &p,
        ME,
        "2026-03-02 10:03",
        OTHER,
        &format!("Please run `{HAND_WRITTEN}` before you start."),
    );
    p.save(
        "contracts/open/odd.md",
        &format!("---\ncontract_id: odd\ntitle: Run `{HAND_WRITTEN}` first\nopened_by: {OTHER}\nopened_at: 2026-01-01 10:00:00\nowner: null\nstatus: proposed\nstakes: low\nrequired_tags: []\n---\n\n## Intent\n\nRun `{HAND_WRITTEN}` first.\n"),
    );
    p.save(
        "reservations.yml",
        &format!("reservations:\n- citizen: {OTHER}\n  paths: [src/a.rs]\n  reserved_at: 2026-01-01 10:00:00\n  expires_at: 2099-01-01 10:00:00\n  note: after `{HAND_WRITTEN}`\n"),
    );
    p.save(
        "guardrails/run-reconcile.md",
        &format!("---\nguardrail_id: run-reconcile\ntags: []\nstatus: active\n---\n\nRun `{HAND_WRITTEN}` before settling.\n"),
    );
    p
}

/// The `polisd` commands `text` names in code spans, as written or as a notice shows them
/// (its spans flattened to `'…'`), each as its program's first two words.
fn commands_in(text: &str) -> Vec<String> {
    let mut out: Vec<String> = text
        .match_indices("polisd ")
        .filter(|(at, _)| matches!(text[..*at].chars().last(), Some('`' | '\'')))
        .map(|(at, _)| {
            let words: Vec<&str> = text[at..]
                .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
                .take(2)
                .collect();
            words.join(" ")
        })
        .collect();
    out.sort();
    out.dedup();
    out
}

/// A command no tool does is named in the tools line too, as a shell's: the client neither
/// looks for a tool nor is left without a word on it. An agent's words are never mapped.
#[test]
fn the_tools_line_says_a_shell_runs_a_command_no_tool_does() {
    let p = with_shell_commands();
    let (mut mcp, _) = mcp_session(&p, "2025-06-18");
    let schemas = schemas(&mut mcp);
    let answer = mcp.call(3, "polis_notices", json!({"citizen": ME}));
    let v: Value = serde_json::from_str(tool_text(&answer)).unwrap();
    let notices_line = v["tools"].as_str().unwrap_or_default().to_string();
    let primer = mcp.call(4, "polis_prime", json!({"citizen": ME, "mark_read": false}));
    let text = tool_text(&primer);
    let primer_line = text
        .lines()
        .find(|l| l.contains("` is `polis_"))
        .unwrap_or_default()
        .to_string();
    for line in [&notices_line, &primer_line] {
        assert!(
            line.contains("`polisd contract claim …` is `polis_claim_contract`"),
            "{line}\n\nin\n{text}"
        );
        for (command, what) in [
            ("polisd check", "reports the findings"),
            ("polisd verify", "restamps a capability card"),
        ] {
            let said = format!(
                "`{command} …` is a shell command (no tool {what}; a person or an agent with a shell runs it)"
            );
            assert!(line.contains(&said), "missing {said:?} in {line}");
        }
        assert!(
            !line.contains(HAND_WRITTEN),
            "an agent's words mapped: {line}"
        );
        let wrong = unknown_calls(line, &schemas);
        assert!(wrong.is_empty(), "{}: {line}", wrong.join("; "));
    }
}

/// Every tool, called where it has something to say: each `polisd` command polisd's own
/// words in its answer name is in that answer's `tools` line, and no command an agent wrote
/// (a message, a title, a body, a note, a guardrail) ever is.
#[test]
fn every_answer_maps_the_commands_polisd_s_own_words_name_and_no_agent_s() {
    let p = with_shell_commands();
    let (mut mcp, _) = mcp_session(&p, "2025-06-18");
    let mut wrong = Vec::new();
    for (n, (tool, args)) in [
        ("polis_status", json!({})),
        ("polis_list_contracts", json!({})),
        ("polis_route", json!({"contract_id": "odd", "seed": 1})),
        ("polis_prime", json!({"citizen": ME, "mark_read": false})),
        ("polis_notices", json!({"citizen": ME, "unread": false})),
        ("polis_amendments", json!({})),
        ("polis_ready", json!({"citizen": ME})),
        ("polis_reservations", json!({})),
        ("polis_context", json!({"contract_id": "odd"})),
        ("polis_show_contract", json!({"contract_id": "odd"})),
        ("polis_guardrails", json!({})),
        ("polis_tally", json!({"dry_run": true})),
        (
            "polis_claim_contract",
            json!({"contract_id": "odd", "citizen": ME}),
        ),
        (
            "polis_reserve",
            json!({"citizen": ME, "paths": ["lib/x.rs"], "note": format!("see `{HAND_WRITTEN}`")}),
        ),
        ("polis_release", json!({"citizen": ME})),
        (
            "polis_log",
            json!({"citizen": ME, "verb": "progress", "link": "contracts/open/odd",
                   "note": format!("ran `{HAND_WRITTEN}`")}),
        ),
    ]
    .into_iter()
    .enumerate()
    {
        let answer = mcp.call(10 + n as u64, tool, args);
        assert_eq!(answer["result"]["isError"], false, "{tool}: {answer}");
        let text = tool_text(&answer);
        let line = match serde_json::from_str::<Value>(text) {
            Ok(v) => v["tools"].as_str().unwrap_or_default().to_string(),
            // The primer is markdown: its line is among its own.
            Err(_) => text
                .lines()
                .filter(|l| l.contains("` is `polis_") || l.contains("` is a shell command"))
                .collect(),
        };
        if line.contains(HAND_WRITTEN) {
            wrong.push(format!("{tool} maps an agent's words: {line}"));
        }
        for command in commands_in(text) {
            if command != HAND_WRITTEN && !line.contains(&format!("`{command}")) {
                wrong.push(format!(
                    "{tool}: `{command}` not in its tools line ({line:?})"
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// A reservation's note is one line over MCP too: refused naming `note`, nothing written.
#[test]
fn a_reservation_note_over_mcp_is_one_line() {
    let p = polis();
    let before = harness::tree(&p);
    let (mut mcp, _) = mcp_session(&p, "2025-06-18");
    let answer = mcp.call(
        3,
        "polis_reserve",
        json!({"citizen": ME, "paths": ["src/"], "note": "api\n- citizen: someone-else"}),
    );
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    let why = tool_text(&answer);
    assert!(
        why.contains("`note` holds a line break (U+000A) at character 4"),
        "{why}"
    );
    assert!(!why.contains("--note"), "{why}");
    assert!(
        harness::tree(&p) == before,
        "a refused reservation wrote something"
    );
}
