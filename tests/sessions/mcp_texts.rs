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
        .find(|l| l.starts_with("The commands in these notices are tools here:"))
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
