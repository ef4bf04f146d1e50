//! `polisd mcp` with the clients people run: the official MCP Python SDK in its default mode
//! (it probes `server/discover` and validates every result against the version it adopts) and
//! in legacy mode (the `initialize` handshake), and the official TypeScript SDK. Each one
//! initializes, lists the tools, makes six calls (two writing, two refused), and lists and
//! reads every resource. The SDKs are installed by the tests under `target/`; see
//! `common/clients.rs`.

#[path = "common/clients.rs"]
mod clients;
mod harness;
#[path = "common/reference.rs"]
mod reference;

use harness::{Killed, TestPolis, BIN, DEADLINE};
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

const ME: &str = "claude-code-one";

/// Runs a client script to the end (killed at the deadline) and returns its JSON lines.
#[track_caller]
fn session(mut command: Command) -> Vec<Value> {
    let child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the MCP client");
    let mut child = Killed::new(child);
    let start = Instant::now();
    while child.child().try_wait().unwrap().is_none() {
        assert!(
            start.elapsed() < DEADLINE,
            "the MCP client did not finish within {DEADLINE:?}"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let out = child.into_inner().wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "the MCP client failed ({}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// What every client must have seen; returns the protocol version it reported.
#[track_caller]
fn check(p: &TestPolis, steps: &[Value], opened: &str) {
    let step = |name: &str| -> Vec<&Value> { steps.iter().filter(|s| s["step"] == name).collect() };
    let tools = step("tools");
    let names: Vec<&str> = tools[0]["names"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    for name in [
        "polis_status",
        "polis_open_contract",
        "polis_list_contracts",
        "polis_prime",
    ] {
        assert!(names.contains(&name), "{name} not listed: {names:?}");
    }
    let calls = step("call");
    assert_eq!(calls.len(), 6, "{steps:?}");
    for call in &calls[..4] {
        assert_eq!(call["isError"], false, "{call}");
    }
    assert!(
        calls[0]["text"].as_str().unwrap().contains(ME),
        "{}",
        calls[0]
    );
    assert!(
        p.exists(&format!("contracts/open/{opened}.md")),
        "the write landed"
    );
    assert!(
        calls[2]["text"].as_str().unwrap().contains(opened),
        "{}",
        calls[2]
    );
    // `polis_log` wrote the line it answers with, as `polisd log` writes it.
    let logged: Value = serde_json::from_str(calls[3]["text"].as_str().unwrap()).unwrap();
    let line = logged["line"].as_str().unwrap();
    assert!(
        line.ends_with(&format!("| {ME} | noted progress | - | over an MCP SDK")),
        "{line}"
    );
    assert!(
        p.read("chronicle.md").ends_with(&format!("{line}\n")),
        "{line}"
    );
    // A line the validator refuses is a tool error with the corrected line, and is not written.
    assert_eq!(calls[4]["isError"], true, "{}", calls[4]);
    let refusal = calls[4]["text"].as_str().unwrap();
    assert!(
        refusal.contains("C001")
            && refusal.contains(&format!("| {ME} | noted - progress | - | -`")),
        "{refusal}"
    );
    assert!(!p.read("chronicle.md").contains("noted - progress"));
    // A settle without a lesson is refused naming the tool's arguments, not the command
    // line's flags, and the contract stays open.
    assert_eq!(calls[5]["isError"], true, "{}", calls[5]);
    let refusal = calls[5]["text"].as_str().unwrap();
    assert!(
        refusal.contains("`lesson`") && refusal.contains("`no_lesson`") && !refusal.contains("--"),
        "{refusal}"
    );
    assert!(p.exists(&format!("contracts/open/{opened}.md")));
    let uris: Vec<&str> = step("resources")[0]["uris"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(
        uris,
        [
            "polis://state",
            "polis://replay",
            "polis://replay/redacted",
            "polis://constitution"
        ]
    );
    let reads = step("read");
    assert_eq!(reads.len(), uris.len());
    for read in reads {
        assert!(read["bytes"].as_u64().unwrap() > 100, "{read}");
    }
}

/// Runs `calls` (a JSON list of [tool, arguments]) with the Python SDK; one step per call.
fn python_calls(root: &Path, calls: &Value) -> Vec<Value> {
    let mut command = Command::new(clients::python_sdk());
    command
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients/python_calls.py"))
        .arg(BIN)
        .arg(root)
        .arg(calls.to_string());
    session(command)
}

fn python(mode: &str, root: &Path) -> Command {
    let mut command = Command::new(clients::python_sdk());
    command
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients/python_session.py"))
        .args([mode, BIN])
        .arg(root)
        .arg(ME);
    command
}

#[test]
fn the_python_sdk_in_its_default_mode_adopts_the_newest_version_and_completes_a_session() {
    let p = TestPolis::init(ME);
    let steps = session(python("auto", &p.root));
    // The default mode probes `server/discover`; a server that offers 2026-07-28 must then
    // answer every request as that version requires (`resultType`, cache hints).
    assert_eq!(steps[0]["protocol"], "2026-07-28", "{steps:?}");
    check(&p, &steps, "fix-the-login");
}

#[test]
fn the_python_sdk_in_legacy_mode_completes_a_session() {
    let p = TestPolis::init(ME);
    let steps = session(python("legacy", &p.root));
    assert_eq!(steps[0]["protocol"], "2025-11-25", "{steps:?}");
    check(&p, &steps, "fix-the-login");
}

#[test]
fn the_typescript_sdk_completes_a_session() {
    let p = TestPolis::init(ME);
    let sdk = clients::typescript_sdk();
    // Node resolves the SDK from the script's own folder.
    let script = sdk.join("typescript_session.mjs");
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients/typescript_session.mjs"),
        &script,
    )
    .unwrap();
    let mut command = Command::new("node");
    command.arg(&script).arg(BIN).arg(&p.root).arg(ME);
    let steps = session(command);
    assert_eq!(steps[0]["server"], "polisd", "{steps:?}");
    check(&p, &steps, "fix-the-signup");
}

/// The tools line an MCP client reads beside the notices (`polis_notices`, `polis_prime`) maps
/// the commands polisd's own words in them name, and never a command-looking phrase of an
/// agent's that a notice quotes: a contract's title, a chronicle line's author and verb.
#[test]
fn the_python_sdk_is_told_the_tools_for_polisd_s_commands_and_not_for_an_agent_s_words() {
    use polisd::protocol::delivery::inbox::Notification;
    use polisd::protocol::finding::{Code, Finding};
    let p = TestPolis::init(ME);
    // Open and unclaimed, so the notice routing it asks something still.
    p.save(
        "contracts/open/odd.md",
        "---\ncontract_id: odd\ntitle: polisd reconcile first\nopened_by: claude-code-one\nopened_at: 2026-01-01 10:00:00\nowner: null\nstatus: proposed\nstakes: low\nrequired_tags: []\n---\n\n## Intent\n",
    );
    let routed = Notification::contract_routed(ME, "odd", "polisd reconcile first", 0.5, false);
    let verb = Finding::warning(
        Code::C008,
        "chronicle.md",
        Some(4),
        "`- x`: the verb phrase `polisd tally now` should be lowercase",
    );
    let found = Notification::chronicle_finding(ME, "polisd amendment vote", &verb, "- x");
    p.append(
        &format!("citizens/{ME}/inbox.md"),
        &format!(
            "{}{}",
            routed.render("2026-03-02 10:00"),
            found.render("2026-03-02 10:01")
        ),
    );
    let calls = serde_json::json!([
        ["polis_notices", {"citizen": ME}],
        ["polis_prime", {"citizen": ME, "mark_read": false}],
    ]);
    let steps = python_calls(&p.root, &calls);
    assert_eq!(steps.len(), 2, "{steps:?}");
    let notices: Value = serde_json::from_str(steps[0]["text"].as_str().unwrap()).unwrap();
    let primer = steps[1]["text"].as_str().unwrap();
    let primer_line = primer
        .lines()
        .find(|l| l.starts_with("For the commands in these notices:"))
        .unwrap_or_default();
    for (what, line, shown) in [
        (
            "polis_notices",
            notices["tools"].as_str().unwrap_or_default(),
            notices["notices"].to_string(),
        ),
        ("polis_prime", primer_line, primer.to_string()),
    ] {
        // The agents' words are shown, quoted, as the inbox holds them.
        assert!(
            shown.contains("polisd reconcile first") && shown.contains("polisd tally now"),
            "{what}: {shown}"
        );
        assert_eq!(
            line,
            "For the commands in these notices: `polisd contract claim …` is `polis_claim_contract` (`contract_id`, `citizen`).",
            "{what}"
        );
    }
}

/// A `_polis/` removed while a session runs: every tool says the polis is gone, reads as well as
/// writes (a read once answered for an empty polis, "no citizen is registered"), and nothing is
/// written back.
#[test]
fn the_python_sdk_is_told_the_polis_is_gone_when_it_is_removed_during_the_session() {
    let p = TestPolis::init(ME);
    let calls = serde_json::json!([
        ["polis_status", {}],
        ["$remove", {"path": p.root}],
        ["polis_status", {}],
        ["polis_notices", {"citizen": ME}],
        ["polis_log", {"citizen": ME, "verb": "noted", "note": "after the polis went"}],
    ]);
    let steps = python_calls(&p.root, &calls);
    assert_eq!(steps.len(), 4, "{steps:?}");
    assert_eq!(steps[0]["isError"], false, "{steps:?}");
    for step in &steps[1..] {
        assert_eq!(step["isError"], true, "{step}");
        let text = step["text"].as_str().unwrap_or_default();
        assert!(text.contains("is gone or unreadable"), "{step}");
        assert!(text.contains("nothing was done"), "{step}");
    }
    assert!(!p.root.exists(), "the removed polis came back");
}
