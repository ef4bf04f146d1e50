//! An MCP session over stdio: tools, errors, and a server that keeps serving.

use super::*;

fn tool_text(v: &Value) -> &str {
    v["result"]["content"][0]["text"].as_str().unwrap()
}

#[test]
fn mcp_session_over_stdio_initializes_lists_tools_calls_them_and_answers_errors() {
    let p = polis();
    message(&p, ME, "2026-03-02 11:15", OTHER, "Over MCP.");
    let (mut mcp, init) = mcp_session(&p, "2025-06-18");
    assert!(init["result"]["capabilities"]["tools"].is_object());

    let tools = mcp.request(2, "tools/list", json!({}));
    let names: Vec<&str> = tools["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    for name in [
        "polis_status",
        "polis_list_contracts",
        "polis_route",
        "polis_prime",
        "polis_notices",
        "polis_council_status",
        "polis_council_write",
        "polis_review",
        "polis_log",
        "polis_file_lesson",
        "polis_propose_amendment",
    ] {
        assert!(names.contains(&name), "{name} missing from {names:?}");
    }
    // Every session pays for these bytes: 26 tools came to about 9.8 KB; a new tool must
    // earn its place here.
    let schema_bytes = tools["result"].to_string().len();
    assert!(
        schema_bytes < 10 * 1024 + 512,
        "tool schemas cost {schema_bytes} bytes"
    );

    let status = mcp.call(3, "polis_status", json!({}));
    assert_eq!(status["result"]["isError"], false);
    let s: Value = serde_json::from_str(tool_text(&status)).unwrap();
    let citizens = s["citizens"].as_array().unwrap();
    assert!(
        citizens.contains(&json!(ME)) && citizens.contains(&json!(OTHER)),
        "{s}"
    );

    let primer = mcp.call(4, "polis_prime", json!({"citizen": ME}));
    assert!(tool_text(&primer).contains("Over MCP."));
    let notices = mcp.call(5, "polis_notices", json!({"citizen": ME}));
    let n: Value = serde_json::from_str(tool_text(&notices)).unwrap();
    assert_eq!(n["notices"], json!([]), "the primer marked it read");

    let failing = mcp.call(6, "polis_prime", json!({"citizen": "nobody-at-all"}));
    assert_eq!(failing["result"]["isError"], true);
    assert!(tool_text(&failing).contains("not a citizen"));
    let missing = mcp.call(7, "polis_route", json!({}));
    assert_eq!(missing["error"]["code"], -32602, "{missing}");

    let unknown_tool = mcp.call(8, "polis_nope", json!({}));
    assert_eq!(unknown_tool["error"]["code"], -32602, "{unknown_tool}");
    let unknown_method = mcp.request(9, "polis/nope", json!({}));
    assert_eq!(unknown_method["error"]["code"], -32601, "{unknown_method}");
    let unknown_resource = mcp.request(10, "resources/read", json!({"uri": "polis://nope"}));
    assert_eq!(
        unknown_resource["error"]["code"], -32002,
        "{unknown_resource}"
    );
    let constitution = mcp.request(11, "resources/read", json!({"uri": "polis://constitution"}));
    assert!(
        constitution["result"]["contents"][0]["text"]
            .as_str()
            .unwrap()
            .len()
            > 100
    );
    let state = mcp.request(12, "resources/read", json!({"uri": "polis://state"}));
    let st: Value =
        serde_json::from_str(state["result"]["contents"][0]["text"].as_str().unwrap()).unwrap();
    assert!(st["status"]["citizens"].is_array());
    // A full contract lifecycle through the same operations as the commands.
    let opened = mcp.call(
        20,
        "polis_open_contract",
        json!({"title": "Speed up the parser", "opened_by": OTHER, "required_tags": ["rust"],
               "acceptance": ["benchmarks improve"]}),
    );
    assert_eq!(opened["result"]["isError"], false, "{opened}");
    let o: Value = serde_json::from_str(tool_text(&opened)).unwrap();
    let cid = o["contract_id"].as_str().unwrap().to_string();
    assert!(p.exists(&format!("contracts/open/{cid}.md")));
    let listed = mcp.call(21, "polis_list_contracts", json!({}));
    assert!(tool_text(&listed).contains(&cid));
    let routed = mcp.call(22, "polis_route", json!({"contract_id": cid, "seed": 1}));
    assert_eq!(routed["result"]["isError"], false, "{routed}");
    let context = mcp.call(23, "polis_context", json!({"contract_id": cid}));
    assert!(
        tool_text(&context).contains("benchmarks improve"),
        "{context}"
    );
    let claimed = mcp.call(
        24,
        "polis_claim_contract",
        json!({"contract_id": cid, "citizen": ME}),
    );
    assert_eq!(claimed["result"]["isError"], false, "{claimed}");
    let second = mcp.call(
        25,
        "polis_claim_contract",
        json!({"contract_id": cid, "citizen": OTHER}),
    );
    assert_eq!(second["result"]["isError"], true, "{second}");
    assert!(
        tool_text(&second).contains(ME),
        "the loser is told who owns it: {second}"
    );
    let guard = mcp.call(
        26,
        "polis_add_guardrail",
        json!({"text": "run cargo bench", "tags": ["rust"]}),
    );
    assert_eq!(guard["result"]["isError"], false, "{guard}");
    let primer = mcp.call(27, "polis_prime", json!({"citizen": ME}));
    assert!(
        tool_text(&primer).contains("guardrail (must pass): `run cargo bench`"),
        "{primer}"
    );
    let bad = mcp.call(
        28,
        "polis_settle_contract",
        json!({"contract_id": cid, "quality": 9}),
    );
    assert_eq!(bad["error"]["code"], -32602, "{bad}");
    assert!(p.exists(&format!("contracts/open/{cid}.md")));
    // An impact rates a lesson: without one it would be dropped unsaid.
    let unrated = mcp.call(
        128,
        "polis_settle_contract",
        json!({"contract_id": cid, "quality": 4, "impact": 4, "no_lesson": "trivial"}),
    );
    assert!(
        unrated["error"]["code"] == -32602 || unrated["result"]["isError"] == true,
        "{unrated}"
    );
    assert!(p.exists(&format!("contracts/open/{cid}.md")));
    let settled = mcp.call(
        29,
        "polis_settle_contract",
        json!({"contract_id": cid, "quality": 4, "minutes": 30,
               "lesson": "Profile before optimising: the parser, not the lexer, was slow.",
               "impact": 4,
               "suggest": [format!("{OTHER}:Profile the parser, then the lexer")]}),
    );
    assert_eq!(settled["result"]["isError"], false, "{settled}");
    assert!(p.exists(&format!("contracts/settled/{cid}.md")));
    assert!(
        p.read(&format!("contracts/settled/{cid}.md")).contains(&format!(
            "### Suggested next citizen\n- **Citizen**: {OTHER}\n- **Reason**: Profile the parser, then the lexer\n"
        )),
        "the suggestion block, as `--suggest` writes it"
    );
    assert!(!p.exists(&format!("contracts/open/{cid}.md")));
    let shown = mcp.call(30, "polis_show_contract", json!({"contract_id": cid}));
    assert!(
        tool_text(&shown).contains("\"state\": \"settled\""),
        "{shown}"
    );
    assert!(p
        .read("chronicle.md")
        .contains(&format!("settled contract | [[contracts/settled/{cid}]]")));

    mcp.send("this is not json");
    let parse = mcp.response(Value::Null);
    assert_eq!(parse["error"]["code"], -32700, "{parse}");
    // The session goes on after a parse error.
    let after = mcp.request(13, "ping", json!({}));
    assert!(after.get("result").is_some(), "{after}");
}

#[test]
fn mcp_answers_bad_bytes_oversized_messages_and_bad_arguments_with_errors_and_keeps_serving() {
    let p = polis();
    let (mut mcp, _) = mcp_session(&p, "2025-11-25");
    let chronicle = p.read("chronicle.md");

    // A byte that is not UTF-8: a parse error, and the session goes on.
    mcp.send_bytes(b"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}\xff");
    let parse = mcp.response(Value::Null);
    assert_eq!(parse["error"]["code"], -32700, "{parse}");
    assert!(mcp.request(3, "ping", json!({})).get("result").is_some());

    // A message of several megabytes: refused, its text not echoed back.
    let huge = format!(
        r#"{{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{{"name":"polis_open_contract","arguments":{{"title":"{}","opened_by":"{ME}"}}}}}}"#,
        "x".repeat(3 * 1024 * 1024)
    );
    mcp.send(&huge);
    let big = mcp.response(Value::Null);
    assert_eq!(big["error"]["code"], -32600, "{big}");
    assert!(big.to_string().len() < 500);

    // Arguments the tool's schema rejects: −32602 naming the key, nothing written.
    for (id, tool, args, key) in [
        (5, "polis_tally", json!({"dryRun": true}), "dryRun"),
        (
            6,
            "polis_open_contract",
            json!({"title": "T", "opened_by": ME, "required_tags": "rust"}),
            "required_tags",
        ),
        (
            7,
            "polis_open_contract",
            json!({"title": "x".repeat(100_000), "opened_by": ME}),
            "title",
        ),
        (
            8,
            "polis_claim_contract",
            json!({"contract_id": "c", "citizen": ME, "force": "yes"}),
            "force",
        ),
    ] {
        let answer = mcp.call(id, tool, args);
        assert_eq!(answer["error"]["code"], -32602, "{answer}");
        let message = answer["error"]["message"].as_str().unwrap();
        assert!(message.contains(&format!("`{key}`")), "{message}");
        assert!(
            message.len() < 400,
            "a short message: {} bytes",
            message.len()
        );
    }
    let array = mcp.request(
        9,
        "tools/call",
        json!({"name": "polis_status", "arguments": [1, 2]}),
    );
    assert_eq!(array["error"]["code"], -32602, "{array}");
    assert!(array["error"]["message"]
        .as_str()
        .unwrap()
        .contains("`arguments`"));
    // Params a method the server answers cannot take: −32602 saying what is wrong, never
    // −32601, which tells the client the method does not exist.
    for (id, method, params, said) in [
        (11, "tools/call", json!({"name": 5}), "`params.name`"),
        (12, "tools/call", json!({"arguments": {}}), "`params.name`"),
        (13, "resources/read", json!({}), "`params.uri`"),
        (
            14,
            "resources/read",
            json!({"uri": ["polis://state"]}),
            "`params.uri`",
        ),
        (15, "initialize", json!({}), "`params.protocolVersion`"),
    ] {
        let answer = mcp.request(id, method, params);
        assert_eq!(answer["error"]["code"], -32602, "{answer}");
        let message = answer["error"]["message"].as_str().unwrap();
        assert!(
            message.contains(method) && message.contains(said),
            "{message}"
        );
    }

    assert!(mcp.request(10, "ping", json!({})).get("result").is_some());
    assert_eq!(
        p.read("chronicle.md"),
        chronicle,
        "a rejected call writes nothing"
    );
    assert!(!p.exists("contracts/open/t.md"));
}

#[test]
fn mcp_tally_applies_the_outcome_as_the_command_does() {
    let p = polis();
    let proposed = p.polisd(&[
        "amendment",
        "propose",
        "--title",
        "Quality floor",
        "--by",
        ME,
        "--json",
    ]);
    assert!(proposed.status.success(), "{}", text(&proposed));
    let aid = serde_json::from_str::<Value>(&text(&proposed)).unwrap()["amendment_id"]
        .as_str()
        .unwrap()
        .to_string();
    let (mut mcp, _) = mcp_session(&p, "2025-06-18");
    let voted = mcp.call(
        2,
        "polis_vote",
        json!({"amendment_id": aid, "citizen": OTHER, "vote": "agree"}),
    );
    assert_eq!(voted["result"]["isError"], false, "{voted}");

    // A dry run reports what a tally would decide and writes nothing.
    let before = p.read("chronicle.md");
    let dry = mcp.call(3, "polis_tally", json!({"dry_run": true}));
    let d: Value = serde_json::from_str(tool_text(&dry)).unwrap();
    assert_eq!(d["results"][0]["action"], "ratified", "{d}");
    assert!(p.exists(&format!("amendments/proposed/{aid}.md")));
    assert_eq!(p.read("chronicle.md"), before);

    // The tally itself ratifies, moves, chronicles and notifies, like `polisd tally`.
    let applied = mcp.call(4, "polis_tally", json!({}));
    assert_eq!(applied["result"]["isError"], false, "{applied}");
    let a: Value = serde_json::from_str(tool_text(&applied)).unwrap();
    assert_eq!(a["results"][0]["amendment_id"], aid.as_str(), "{a}");
    assert_eq!(a["results"][0]["action"], "ratified", "{a}");
    assert_eq!(a["undelivered"], json!([]), "{a}");
    let moved = format!("amendments/ratified/{aid}.md");
    assert!(p.exists(&moved) && !p.exists(&format!("amendments/proposed/{aid}.md")));
    assert!(p.read(&moved).contains("status: ratified"));
    assert!(p.read("chronicle.md").contains(&format!(
        "| ratified amendment | [[amendments/ratified/{aid}]]"
    )));
    assert_eq!(p.count(OTHER, "amendment-ratified"), 1);

    // Again: nothing left to tally, nothing written twice.
    let chronicle = p.read("chronicle.md");
    let again = mcp.call(5, "polis_tally", json!({}));
    let g: Value = serde_json::from_str(tool_text(&again)).unwrap();
    assert_eq!(g["results"], json!([]), "{g}");
    assert_eq!(p.read("chronicle.md"), chronicle);
    assert_eq!(p.count(OTHER, "amendment-ratified"), 1);
}

/// `polis_notices` with `mark_read` and `polis_prime` mark read only what reached the client:
/// a client gone before the answer (its end of stdout closed) leaves every notice unread.
#[test]
fn mcp_answers_the_client_never_received_mark_nothing_read() {
    use std::io::{BufRead, BufReader};
    let p = polis();
    message(&p, ME, "2026-03-02 11:15", OTHER, "Answered, or unread.");
    let (reader, writer) = std::io::pipe().unwrap();
    let mut child = Command::new(BIN)
        .arg("mcp")
        .arg(&p.root)
        .env("POLISD_STATE_DIR", &p.state_dir)
        .stdin(Stdio::piped())
        .stdout(writer)
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Killed whatever the test does; after a clean exit this does nothing.
    struct Kill(std::process::Child);
    impl Drop for Kill {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let mut stdin = child.stdin.take().unwrap();
    let mut child = Kill(child);
    let mut send = |v: Value| {
        stdin.write_all(format!("{v}\n").as_bytes()).unwrap();
        stdin.flush().unwrap();
    };
    send(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "test", "version": "1"}}}));
    let mut reader = BufReader::new(reader);
    let mut line = String::new();
    reader.read_line(&mut line).unwrap();
    assert!(line.contains("\"serverInfo\""), "{line}");
    // The client goes away.
    drop(reader);
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "polis_notices", "arguments": {"citizen": ME, "mark_read": true}}}));
    send(json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "polis_prime", "arguments": {"citizen": ME}}}));
    drop(stdin);
    harness::wait_until(
        "polisd mcp to end with its input",
        harness::DEADLINE,
        || child.0.try_wait().unwrap().is_some(),
    );
    assert_eq!(
        unread_count(&p),
        1,
        "an MCP answer that never reached the client marked its notices read"
    );
}

/// A client that sends a second request with the id of one still being answered: both calls
/// wrote, and only one answer came back, so the client never learned of one of its writes.
/// The second is refused with nothing written; every write has its answer.
#[test]
fn mcp_refuses_a_request_whose_id_is_still_being_answered() {
    let p = polis();
    let (mut mcp, _) = mcp_session(&p, "2025-11-25");
    for title in ["Twice one", "Twice two"] {
        mcp.send_request(
            5,
            "tools/call",
            json!({"name": "polis_open_contract",
                   "arguments": {"title": title, "opened_by": ME, "required_tags": ["rust"]}}),
        );
    }
    let answers = [
        mcp.response(json!(5)),
        mcp.message_where("a second answer with id 5", |v| v["id"] == 5),
    ];
    let written = ["twice-one", "twice-two"]
        .iter()
        .filter(|id| p.exists(&format!("contracts/open/{id}.md")))
        .count();
    let results = answers.iter().filter(|a| a.get("result").is_some()).count();
    assert_eq!((written, results), (1, 1), "{answers:#?}");
    let refused = answers.iter().find(|a| a.get("error").is_some()).unwrap();
    assert_eq!(refused["error"]["code"], -32600, "{refused}");
    // The id is free again once answered.
    assert!(mcp.request(5, "ping", json!({})).get("result").is_some());
    // A malformed request, which the SDK answers without its id, does not hold the id.
    for bad in [
        r#"{"jsonrpc":"2.0","id":6,"method":"tools/call","params":5}"#,
        r#"{"jsonrpc":"1.0","id":6,"method":"ping"}"#,
        r#"{"jsonrpc":"2.0","id":6,"method":"ping","params":{"_meta":5}}"#,
        r#"{"jsonrpc":"2.0","id":6,"method":"ping","result":{}}"#,
        r#"{"jsonrpc":"2.0","id":5,"method":"ping","id":6}"#,
    ] {
        mcp.send(bad);
        assert_eq!(mcp.response(Value::Null)["error"]["code"], -32600);
        assert!(mcp.request(6, "ping", json!({})).get("result").is_some());
    }
}
