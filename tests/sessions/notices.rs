//! Notices in an inbox: read once, shown for what they are now, never swallowed, archived.

use super::*;

#[test]
fn one_line_inbox_notes_reach_the_primer_notices_and_the_hooks_once_each() {
    let p = polis();
    let root = p.root.to_str().unwrap().to_string();
    let note = |body: &str| {
        p.append(
            &format!("citizens/{ME}/inbox.md"),
            &format!("- 2026-03-02 11:15 | from {OTHER} | {body}\n"),
        );
    };
    let unread = |p: &TestPolis| {
        let out = p.polisd(&[
            "notices", "--polis", &root, "--as", ME, "--unread", "--json",
        ]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_str::<Value>(&text(&out)).unwrap()["notices"].clone()
    };
    // The primer shows it and marks it read.
    note("Primer, please.");
    let primed = p.polisd(&["prime", "--polis", &root, "--as", ME]);
    assert!(
        text(&primed).contains("Primer, please."),
        "{}",
        text(&primed)
    );
    assert_eq!(unread(&p), json!([]));
    // The notices hook delivers it once.
    note("Hook, please.");
    let payload = claude_post_tool_use(&p);
    let args = ["--as", ME, "--interval", "0"];
    let first = hook(&p, "claude", "notices", &args, &payload);
    assert!(context(&first, "PostToolUse").contains("Hook, please."));
    assert_eq!(text(&hook(&p, "claude", "notices", &args, &payload)), "");
    assert_eq!(unread(&p), json!([]));
    // `notices` lists it, and marks it read when asked.
    note("Command, please.");
    let listed = unread(&p);
    assert_eq!(listed.as_array().unwrap().len(), 1, "{listed}");
    assert_eq!(listed[0]["from"], OTHER);
    assert_eq!(listed[0]["text"], "Command, please.");
    let marked = p.polisd(&["notices", "--polis", &root, "--as", ME, "--mark-read"]);
    assert!(text(&marked).contains("Command, please."));
    assert_eq!(unread(&p), json!([]));
}

#[test]
fn a_notice_whose_record_has_moved_on_is_shown_as_outdated_not_as_a_call_to_act() {
    // Proposed, then ratified before the citizen's session: the proposal's notice still asks
    // for a vote on a file that is gone, while the primer's own section says no vote waits.
    let p = polis();
    p.save(
        "amendments/ratified/2026-01-03-floor.md",
        "---\namendment_id: 2026-01-03-floor\ntitle: A quality floor\nproposed_by: codex-frontend-one\nstatus: ratified\n---\n",
    );
    let block = |kind: &str, id: &str, text: &str, link: &str| {
        format!("\n### 2026-03-02 10:00 from polis-daemon\n\n{text}\n\n[[{link}]]\n<!-- polisd:{kind}:{id} -->\n\n---\n")
    };
    p.append(
        &format!("citizens/{ME}/inbox.md"),
        &(block(
            "amendment-proposed",
            "00000000000000a1",
            "A new amendment was proposed. Read it and vote.",
            "amendments/proposed/2026-01-03-floor",
        ) + &block(
            "amendment-ratified",
            "00000000000000a2",
            "The amendment was ratified.",
            "amendments/ratified/2026-01-03-floor",
        )),
    );
    let out = p.polisd(&["prime", "--as", ME, "--no-mark-read"]);
    let primer = text(&out);
    assert!(
        primer.contains("## Amendments waiting for your vote\n- none"),
        "{primer}"
    );
    let line = |id: &str| {
        primer
            .lines()
            .find(|l| l.contains(id))
            .unwrap_or_else(|| panic!("{id} not shown:\n{primer}"))
            .to_string()
    };
    let proposed = line("00000000000000a1");
    assert!(
        proposed.contains("outdated")
            && proposed.contains("amendments/proposed/2026-01-03-floor")
            && proposed.contains("no longer exists"),
        "{proposed}"
    );
    assert!(!line("00000000000000a2").contains("outdated"));
    // The notices hook says the same.
    let hooked = hook(
        &p,
        "claude",
        "notices",
        &["--as", ME, "--interval", "0"],
        &claude_post_tool_use(&p),
    );
    let ctx = context(&hooked, "PostToolUse");
    let proposed = ctx
        .lines()
        .find(|l| l.contains("00000000000000a1"))
        .unwrap();
    assert!(proposed.contains("outdated"), "{ctx}");
}

#[test]
fn a_message_with_an_unclosed_code_fence_does_not_swallow_the_notices_after_it() {
    // A model's message cut short mid-fence: every block appended after it (polisd's own
    // notices too) read as code, never shown and never marked read.
    let p = polis();
    message(
        &p,
        ME,
        "2026-03-02 11:15",
        OTHER,
        "Here is the diff:\n```diff\n- old\n+ new",
    );
    p.append(
        &format!("citizens/{ME}/inbox.md"),
        "\n### 2026-03-02 11:20 from polis-daemon\n\nThe router recommends you for `add-cache`.\n\n[[contracts/open/add-cache]]\n<!-- polisd:contract-routed:00000000000000c1 -->\n\n---\n",
    );
    p.append(
        &format!("citizens/{ME}/inbox.md"),
        "- 2026-03-02 11:25 | from codex-frontend-one | and a one-line note\n",
    );
    message(&p, ME, "2026-03-02 11:30", OTHER, "Last one.");
    assert_eq!(unread_count(&p), 4);
    let args = ["--as", ME, "--interval", "0"];
    let ctx = context(
        &hook(&p, "claude", "notices", &args, &claude_post_tool_use(&p)),
        "PostToolUse",
    );
    for needle in [
        "4 new notices",
        "00000000000000c1",
        "and a one-line note",
        "Last one.",
    ] {
        assert!(ctx.contains(needle), "{needle:?} in {ctx}");
    }
}

#[test]
fn inbox_archive_moves_only_old_read_notices() {
    let p = polis();
    message(&p, ME, "2020-01-01 10:00", OTHER, "Old and read.");
    message(&p, ME, "2020-01-02 10:00", OTHER, "Old and unread.");
    let out = p.polisd(&["notices", "--as", ME, "--json"]);
    let v: Value = serde_json::from_str(&text(&out)).unwrap();
    let old_read = v["notices"][1]["id"].as_str().unwrap().to_string();
    // Mark only the first one read, through the cursor in status.md.
    let status = p.read(&format!("citizens/{ME}/status.md"));
    p.save(
        &format!("citizens/{ME}/status.md"),
        &status.replace(
            "last_seen_amendment: null\n",
            &format!("last_seen_amendment: null\nnotices_read: ['{old_read}']\n"),
        ),
    );
    let out = p.polisd(&["inbox", "archive", "--as", ME, "--json"]);
    assert!(out.status.success(), "{out:?}");
    let r: Value = serde_json::from_str(&text(&out)).unwrap();
    assert_eq!(
        (r["moved"].as_u64(), r["unread"].as_u64()),
        (Some(1), Some(1))
    );
    let inbox = p.read(&format!("citizens/{ME}/inbox.md"));
    let archive = p.read(&format!("citizens/{ME}/inbox-archive.md"));
    assert!(inbox.contains("Old and unread.") && !inbox.contains("Old and read."));
    assert!(archive.contains("Old and read.") && !archive.contains("unread"));
    // A second run moves nothing twice.
    let again = p.polisd(&["inbox", "archive", "--as", ME, "--json"]);
    let r: Value = serde_json::from_str(&text(&again)).unwrap();
    assert_eq!(r["moved"].as_u64(), Some(0));
    assert_eq!(p.read(&format!("citizens/{ME}/inbox-archive.md")), archive);
}

/// An age past what a duration holds is a usage error, and one past the calendar (older than
/// any date) archives nothing: neither panics.
#[test]
fn inbox_archive_with_an_enormous_age_neither_panics_nor_moves_anything() {
    let p = polis();
    message(&p, ME, "2020-01-01 10:00", OTHER, "Old.");
    let inbox = p.read(&format!("citizens/{ME}/inbox.md"));
    let out = p.polisd(&[
        "inbox",
        "archive",
        "--as",
        ME,
        "--older-than",
        "99999999999999d",
    ]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("99999999999999d"),
        "{out:?}"
    );
    let out = p.polisd(&[
        "inbox",
        "archive",
        "--as",
        ME,
        "--older-than",
        "100000000d",
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let r: Value = serde_json::from_str(&text(&out)).unwrap();
    assert_eq!(r["moved"].as_u64(), Some(0), "{r}");
    assert_eq!(p.read(&format!("citizens/{ME}/inbox.md")), inbox);
}

#[test]
fn a_recommendation_for_a_contract_another_citizen_claimed_is_shown_as_outdated() {
    // Routed to me, then claimed by someone else before my session: "to take it, set owner"
    // is past, and the primer's own "Routed to you" section no longer lists it.
    let p = polis();
    let contract = |id: &str, owner: &str| {
        p.save(
            &format!("contracts/open/{id}.md"),
            &format!("---\ncontract_id: {id}\ntitle: Work {id}\nopened_by: {OTHER}\nopened_at: 2026-01-01 10:00:00\nowner: {owner}\nstatus: claimed\nrequired_tags: [rust]\nrouting:\n  recommended_by_router: {ME}\n---\n"),
        );
    };
    contract("taken-cache", OTHER);
    contract("open-cache", "null");
    let routed = |id: &str, marker: &str| {
        format!("\n### 2026-03-02 10:00 from polis-daemon\n\nThe router recommends you for the new open contract `{id}`. To take it, set `owner: {ME}`.\n\n[[contracts/open/{id}]]\n<!-- polisd:contract-routed:{marker} -->\n\n---\n")
    };
    p.append(
        &format!("citizens/{ME}/inbox.md"),
        &(routed("taken-cache", "00000000000000b1") + &routed("open-cache", "00000000000000b2")),
    );
    let primer = text(&p.polisd(&["prime", "--as", ME, "--no-mark-read"]));
    let line = |id: &str| primer.lines().find(|l| l.contains(id)).unwrap().to_string();
    let taken = line("00000000000000b1");
    assert!(
        taken.contains("outdated") && taken.contains("claimed by 'codex-frontend-one'"),
        "{taken}"
    );
    assert!(!line("00000000000000b2").contains("outdated"));
}

/// Runs `polisd <args>` as `ME` from the project folder with its stdout a pipe nobody reads any
/// more (a reader that went away, as `… | head -0` does): nothing it prints is ever seen.
fn unheard(p: &TestPolis, args: &[&str]) {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let status = Command::new(BIN)
        .args(args)
        .env("POLISD_STATE_DIR", &p.state_dir)
        .env_remove("POLIS_CITIZEN")
        .current_dir(project(p))
        .stdin(Stdio::null())
        .stdout(writer)
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert_ne!(status.code(), Some(0), "{args:?} cannot have printed");
}

/// `notices --mark-read` and `prime` mark read only what reached their reader: a reader gone
/// before the list was printed leaves every notice unread.
#[test]
fn notices_never_printed_are_never_marked_read() {
    let p = polis();
    message(&p, ME, "2026-03-02 11:15", OTHER, "Printed, or unread.");
    for args in [
        &["notices", "--as", ME, "--unread", "--mark-read"][..],
        &["notices", "--as", ME, "--mark-read", "--json"],
        &["prime", "--as", ME],
        &["prime", "--as", ME, "--json"],
    ] {
        unheard(&p, args);
        assert_eq!(
            unread_count(&p),
            1,
            "`polisd {}` marked read a notice it never printed",
            args.join(" ")
        );
    }
    let heard = p.polisd(&["notices", "--as", ME, "--unread", "--mark-read"]);
    assert!(
        text(&heard).contains("Printed, or unread."),
        "{}",
        text(&heard)
    );
    assert_eq!(unread_count(&p), 0);
}
