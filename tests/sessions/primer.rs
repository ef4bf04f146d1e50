//! The session primer: its sections and bound, and the citizen's own files it cannot read or
//! record in.

use super::*;

#[test]
fn primer_shows_each_section_within_6kb_and_marks_what_it_shows_read() {
    let p = polis();
    p.save(
        "contracts/open/add-cache.md",
        "---\ncontract_id: add-cache\ntitle: Add a cache\nopened_by: codex-frontend-one\nopened_at: 2026-01-01 10:00:00\nowner: null\nstatus: proposed\nstakes: low\nrequired_tags: [rust]\nrouting:\n  recommended_by_router: claude-code-one\n  recommendation_score: 0.712\n  exploration: false\n---\n\n## Intent\n",
    );
    p.save(
        "contracts/open/old-claim.md",
        "---\ncontract_id: old-claim\ntitle: Fix the login\nopened_by: codex-frontend-one\nopened_at: 2020-01-01 10:00:00\nowner: claude-code-one\nstatus: claimed\nrequired_tags: [auth]\n---\n",
    );
    p.save(
        "lessons/auth/2026-01-02-tokens.md",
        "---\nlesson_id: 2026-01-02-tokens\nfiled_by: codex-frontend-one\ncapability_tags: [auth]\nquality_impact: 3\n---\n\nRotate tokens before testing the login.\n",
    );
    p.save(
        "amendments/proposed/2026-01-03-floor.md",
        "---\namendment_id: 2026-01-03-floor\ntitle: A quality floor\nproposed_by: codex-frontend-one\nproposed_at: 2026-01-03 10:00:00\nstatus: proposed\nexpires_at: '2099-01-01'\n---\n",
    );
    for i in 0..40 {
        message(
            &p,
            ME,
            &format!("2026-02-01 10:{i:02}"),
            OTHER,
            &format!("Message {i}. {}", "words ".repeat(60)),
        );
    }
    let out = p.polisd(&["prime", "--as", ME, "--json"]);
    assert!(out.status.success(), "{out:?}");
    let v: Value = serde_json::from_str(&text(&out)).unwrap();
    let primer = v["markdown"].as_str().unwrap();
    assert!(primer.len() <= 6 * 1024, "{} bytes", primer.len());
    for needle in [
        "# Polis primer for `claude-code-one`",
        "`add-cache` `Add a cache` (rust, stakes low, score 0.712)",
        "`old-claim` `Fix the login` (claimed; no chronicle line about it in the last 14 d, opened",
        "STALE",
        "`2026-01-03-floor` `A quality floor`",
        "lesson `2026-01-02-tokens` (auth): `Rotate tokens before testing the login.`",
        "Message 39.",
        "more: `polisd notices --as claude-code-one --unread`",
        "## How to act",
    ] {
        assert!(primer.contains(needle), "missing {needle:?} in\n{primer}");
    }
    // The commands "How to act" names exist, with the flags it names.
    for (cmd, flags) in [
        (&["contract", "claim"][..], &["--as"][..]),
        (&["log"], &["--as", "--link"]),
        (&["contract", "settle"], &["--quality", "--as"]),
        (&["amendment", "vote"], &["--as", "--vote"]),
        (&["notices"], &["--as", "--unread"]),
    ] {
        let mut args = cmd.to_vec();
        args.push("--help");
        let help = text(&p.polisd(&args));
        for f in flags {
            assert!(help.contains(f), "`polisd {}` has no {f}", cmd.join(" "));
        }
        assert!(
            primer.contains(&format!("polisd {}", cmd.join(" "))),
            "{cmd:?} not named"
        );
    }
    // Newest first, and what was shown is now read: the rest stays unread.
    assert!(primer.find("Message 39.") < primer.find("Message 38."));
    let shown = v["shown_notices"].as_array().unwrap().len();
    assert!(shown > 0 && shown < 40);
    let notices = p.polisd(&["notices", "--as", ME, "--unread", "--json"]);
    let n: Value = serde_json::from_str(&text(&notices)).unwrap();
    assert_eq!(n["notices"].as_array().unwrap().len(), 40 - shown);
    assert!(p
        .read(&format!("citizens/{ME}/status.md"))
        .contains("notices_read: ["));
}

#[test]
fn the_primer_survives_an_inbox_and_a_status_it_cannot_read_and_names_them() {
    let p = polis();
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("elsewhere.md");
    let notice = "\n### 2026-03-02 11:15 from codex-frontend-one\n\nFrom outside.\n\n---\n";
    std::fs::write(&target, notice).unwrap();
    std::fs::remove_file(p.path(&format!("citizens/{ME}/inbox.md"))).unwrap();
    std::os::unix::fs::symlink(&target, p.path(&format!("citizens/{ME}/inbox.md"))).unwrap();
    let out = p.polisd(&["prime", "--as", ME]);
    assert!(out.status.success(), "{}", harness::describe(&out));
    let primer = text(&out);
    assert!(
        primer.starts_with("# Polis primer for `claude-code-one`"),
        "{primer}"
    );
    assert!(
        primer.contains("citizens/claude-code-one/inbox.md")
            && primer.contains("symbolic link")
            && primer.contains("replace it with a regular file"),
        "the file and the fix are named: {primer}"
    );
    assert!(!primer.contains("From outside."), "read through a link");
    assert!(
        !primer.contains("## Unread notices (newest first)\n- none"),
        "an inbox it cannot read is not an empty one: {primer}"
    );
    // The hook's primer too: the model is the one to tell.
    let hooked = hook(
        &p,
        "claude",
        "prime",
        &["--as", ME],
        &json!({"cwd": project(&p),
        "hook_event_name": "SessionStart", "source": "startup"}),
    );
    assert!(context(&hooked, "SessionStart").contains("symbolic link"));
    // A status.md that is a link: the primer still comes, and nothing is written through it.
    let status_target = outside.path().join("status.md");
    std::fs::write(
        &status_target,
        "---\nagent_id: claude-code-one\nstate: away\n---\n",
    )
    .unwrap();
    std::fs::remove_file(p.path(&format!("citizens/{ME}/status.md"))).ok();
    std::os::unix::fs::symlink(&status_target, p.path(&format!("citizens/{ME}/status.md")))
        .unwrap();
    let out = p.polisd(&["prime", "--as", ME]);
    assert!(out.status.success(), "{}", harness::describe(&out));
    let primer = text(&out);
    assert!(
        primer.contains("citizens/claude-code-one/status.md"),
        "{primer}"
    );
    assert!(
        !primer.contains("state `away`"),
        "read through a link: {primer}"
    );
    assert_eq!(
        std::fs::read_to_string(&status_target).unwrap(),
        "---\nagent_id: claude-code-one\nstate: away\n---\n"
    );
    assert_eq!(std::fs::read_to_string(&target).unwrap(), notice);
    // The whole citizen folder a link: its card cannot be read either; still a primer.
    let folder = outside.path().join("folder");
    std::fs::rename(p.path(&format!("citizens/{OTHER}")), &folder).unwrap();
    std::os::unix::fs::symlink(&folder, p.path(&format!("citizens/{OTHER}"))).unwrap();
    let files = |dir: &std::path::Path| {
        let mut all: Vec<(PathBuf, Vec<u8>)> = std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .map(|e| (e.path(), std::fs::read(e.path()).unwrap()))
            .collect();
        all.sort();
        all
    };
    let before = files(&folder);
    let out = p.polisd(&["prime", "--as", OTHER]);
    assert!(out.status.success(), "{}", harness::describe(&out));
    let primer = text(&out);
    assert!(
        primer.contains("has no readable capability card")
            && primer.contains("'citizens/codex-frontend-one' is a symbolic link to a folder"),
        "{primer}"
    );
    assert!(files(&folder) == before, "written through the link");
}

#[test]
fn a_status_md_polisd_cannot_edit_is_named_to_the_model_by_the_primer_and_the_notices_hook() {
    // Its read cursor cannot be written, so notices can never become read: the model must
    // learn why (the CLIs show a hook's stderr only in their logs), from each hook.
    let p = polis();
    let status = "---\nagent_id: claude-code-one\nstate: working\n\n# Status (never closed)\n";
    p.save(&format!("citizens/{ME}/status.md"), status);
    message(&p, ME, "2026-03-02 11:15", OTHER, "Can you see me?");
    let args = ["--as", ME, "--interval", "0"];
    let told = context(
        &hook(&p, "claude", "notices", &args, &claude_post_tool_use(&p)),
        "PostToolUse",
    );
    for needle in [
        "1 new notice",
        "citizens/claude-code-one/status.md",
        "never closed",
    ] {
        assert!(told.contains(needle), "{needle:?} in {told}");
    }
    assert!(told.len() < 600, "one short paragraph: {told}");
    let primed = hook(
        &p,
        "claude",
        "prime",
        &["--as", ME],
        &json!({"cwd": project(&p),
        "hook_event_name": "SessionStart", "source": "startup"}),
    );
    let primer = context(&primed, "SessionStart");
    let head = &primer[..primer.find("\n## ").unwrap()];
    assert!(
        head.contains("citizens/claude-code-one/status.md") && head.contains("never closed"),
        "{primer}"
    );
    assert!(primer.contains("Can you see me?"));
    assert_eq!(p.read(&format!("citizens/{ME}/status.md")), status);
    assert_eq!(unread_count(&p), 1);
}

#[test]
fn a_claim_whose_last_line_is_older_than_the_window_read_is_not_said_to_have_none() {
    // The primer reads the chronicle back to the stale window only: a line about the claim
    // before that is not seen, and the primer must not claim there is none.
    let p = polis();
    let ago = |days: i64| {
        (chrono::Utc::now() - chrono::Duration::days(days))
            .format("%Y-%m-%d %H:%M")
            .to_string()
    };
    p.save(
        "contracts/open/old-claim.md",
        &format!("---\ncontract_id: old-claim\ntitle: Fix the login\nopened_by: {OTHER}\nopened_at: {}:00\nowner: {ME}\nstatus: claimed\nrequired_tags: [auth]\n---\n", ago(30)),
    );
    let mut lines = format!(
        "- {} | {ME} | worked on | [[contracts/open/old-claim]] | halfway\n",
        ago(20)
    );
    for i in 0..900 {
        lines.push_str(&format!(
            "- {} | {OTHER} | worked on | - | other work, line {i}, padded to fill a chunk\n",
            ago(16)
        ));
    }
    p.append("chronicle.md", &lines);
    let primer = text(&p.polisd(&["prime", "--as", ME, "--no-mark-read"]));
    let claim = primer
        .lines()
        .find(|l| l.contains("`old-claim`"))
        .unwrap_or_else(|| panic!("{primer}"));
    assert!(
        claim.contains("no chronicle line about it in the last 14 d") && claim.contains("STALE"),
        "{claim}"
    );
}

#[test]
fn a_last_seen_event_an_agent_wrote_by_hand_in_iso_form_is_its_cursor() {
    // The entry routine tells agents to update `last_seen_event` themselves; they write ISO
    // forms. Unread, the primer said there was none and showed again what they had seen.
    let ago = |hours: i64| chrono::Utc::now() - chrono::Duration::hours(hours);
    for cursor in [
        ago(2).format("%Y-%m-%dT%H:%M:%SZ").to_string(),
        ago(2).format("'%Y-%m-%dT%H:%M'").to_string(),
        ago(2).format("%Y-%m-%d %H:%M:%S+00:00").to_string(),
        format!(
            "'- {} | {OTHER} | reviewed code | - | -'",
            ago(2).format("%Y-%m-%d %H:%M")
        ),
    ] {
        let p = polis();
        p.save(
            &format!("citizens/{ME}/status.md"),
            &format!("---\nagent_id: {ME}\nstate: working\nlast_seen_event: {cursor}\n---\n"),
        );
        let line = |h: i64, note: &str| {
            format!(
                "- {} | {OTHER} | reviewed code | - | {note}\n",
                ago(h).format("%Y-%m-%d %H:%M")
            )
        };
        p.append(
            "chronicle.md",
            &(line(3, "seen before") + &line(1, "new since")),
        );
        let primer = text(&p.polisd(&["prime", "--as", ME, "--no-mark-read"]));
        assert!(
            primer.contains("Since your last session:"),
            "{cursor}: {primer}"
        );
        assert!(primer.contains("new since"), "{cursor}: {primer}");
        assert!(!primer.contains("seen before"), "{cursor}: {primer}");
    }
}

/// A primer whose reader is gone before it is printed (`polisd prime … | head -0`, a session
/// that died) was never seen: its notices stay unread and the cursor stays where it was.
#[test]
fn a_primer_nobody_read_marks_nothing_read() {
    let p = polis();
    message(
        &p,
        ME,
        "2026-03-02 10:00",
        OTHER,
        "Please look at the login form.",
    );
    let status = format!("citizens/{ME}/status.md");
    let before = p.read(&status);
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let out = Command::new(BIN)
        .args(["prime", "--as", ME])
        .env("POLISD_STATE_DIR", &p.state_dir)
        .current_dir(&p.root)
        .stdout(writer)
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    assert!(!out.status.success(), "{out:?}");
    assert_eq!(p.read(&status), before, "the status was recorded");
    assert_eq!(unread_count(&p), 1);
    // Read for real, it counts.
    let shown = p.polisd(&["prime", "--as", ME]);
    assert!(text(&shown).contains("login form"), "{}", text(&shown));
    assert_eq!(unread_count(&p), 0);
}

#[test]
fn a_status_state_the_router_does_not_know_is_named_at_the_top_of_the_primer() {
    // `Away` is read exactly, as the reference reads it: the citizen is still routed work.
    let p = polis();
    p.save(
        &format!("citizens/{ME}/status.md"),
        "---\nagent_id: claude-code-one\nstate: Away\nblockers: []\n---\n",
    );
    let primer = text(&p.polisd(&["prime", "--as", ME]));
    let head = &primer[..primer.find("\n## ").unwrap()];
    assert!(
        head.contains("citizens/claude-code-one/status.md")
            && head.contains("'state: Away'")
            && head.contains("write 'state: away'"),
        "{primer}"
    );
}

/// A citizen whose folder polisd may not look into (its permissions) is told what it cannot
/// read, not that it is no citizen and should register: `register` would only meet its own
/// folder.
#[test]
fn a_citizen_folder_it_may_not_read_is_named_not_called_unregistered() {
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::process::CommandExt;
    let p = polis();
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let bin = harness::bin_for_others(p.dir.path());
    // Every folder open to others (a temporary folder is its owner's only), then the
    // citizens' folder closed to all.
    let mut folders = vec![p.dir.path().to_path_buf()];
    while let Some(dir) = folders.pop() {
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        for e in std::fs::read_dir(&dir).unwrap().flatten() {
            if e.file_type().unwrap().is_dir() {
                folders.push(e.path());
            }
        }
    }
    let citizens = p.path("citizens");
    std::fs::set_permissions(&citizens, std::fs::Permissions::from_mode(0o000)).unwrap();
    let run = |args: &[&str]| {
        let mut cmd = Command::new(&bin);
        cmd.args(args)
            .env("POLISD_STATE_DIR", p.dir.path().join("state-of-another"))
            .env_remove("POLIS_CITIZEN")
            .current_dir(project(&p));
        if root {
            cmd.uid(65534).gid(65534);
        }
        cmd.output().unwrap()
    };
    let primed = run(&["prime", "--as", ME, "--no-mark-read"]);
    let notices = run(&["notices", "--as", ME]);
    std::fs::set_permissions(&citizens, std::fs::Permissions::from_mode(0o755)).unwrap();
    for out in [&primed, &notices] {
        let said = format!("{}{}", text(out), String::from_utf8_lossy(&out.stderr));
        assert!(
            !said.contains("is not a citizen") && !said.contains("polisd register"),
            "{}",
            harness::describe(out)
        );
        assert!(
            said.contains("Permission denied"),
            "{}",
            harness::describe(out)
        );
    }
}

/// The primer asks for a vote only where `amendment vote` takes one: an amendment past its
/// deadline (expired, though no tally has said so yet) or with no `status: proposed` refuses
/// every vote, so it is not "waiting for your vote".
#[test]
fn the_primer_asks_for_no_vote_the_vote_command_would_refuse() {
    let p = polis();
    let amendment = |id: &str, extra: &str| {
        p.save(
            &format!("amendments/proposed/{id}.md"),
            &format!(
                "---\namendment_id: {id}\ntitle: T {id}\nproposed_by: {OTHER}\n\
                 proposed_at: '2026-01-03 10:00:00'\n{extra}---\n\nBody.\n"
            ),
        );
    };
    amendment(
        "2026-01-03-open",
        "status: proposed\nexpires_at: '2099-01-01'\n",
    );
    amendment(
        "2026-01-03-past",
        "status: proposed\nexpires_at: '2026-01-10'\n",
    );
    amendment("2026-01-03-unset", "expires_at: '2099-01-01'\n");
    let primer = text(&p.polisd(&["prime", "--as", ME, "--no-mark-read"]));
    let section: String = primer
        .split("## Amendments waiting for your vote\n")
        .nth(1)
        .unwrap_or_else(|| panic!("no vote section:\n{primer}"))
        .split("\n\n")
        .next()
        .unwrap()
        .to_string();
    assert!(section.contains("2026-01-03-open"), "{section}");
    for id in ["2026-01-03-past", "2026-01-03-unset"] {
        assert!(!section.contains(id), "{id} listed:\n{section}");
        let vote = p.polisd(&["amendment", "vote", id, "--as", ME, "--vote", "agree"]);
        assert_eq!(vote.status.code(), Some(1), "{}", text(&vote));
    }
}
