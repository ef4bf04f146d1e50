//! What leaves the dashboard: the static export (`polisd report` as markdown and HTML, and its
//! redaction), and the notify command run for a new human queue item.

use super::team::{team_member, team_polis, TEAM_TAGS, VENDORS};
use super::*;

#[test]
fn report_md_and_html_are_self_contained_and_redact_hides_ids_and_text() {
    let p = generated_polis();
    let md = p.polisd(&["report", p.root.to_str().unwrap(), "--format", "md"]);
    assert!(
        md.status.success(),
        "{}",
        String::from_utf8_lossy(&md.stderr)
    );
    let md = String::from_utf8(md.stdout).unwrap();
    assert!(
        md.contains("## Waiting for a person") && md.contains(ALPHA) && md.contains("the next job"),
        "{md}"
    );

    let out = p.dir.path().join("report.html");
    let html = p.polisd(&[
        "report",
        p.root.to_str().unwrap(),
        "--format",
        "html",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(
        html.status.success(),
        "{}",
        String::from_utf8_lossy(&html.stderr)
    );
    let html = std::fs::read_to_string(&out).unwrap();
    assert!(
        !html.contains("<script") && !html.contains("<link"),
        "self-contained, no script: {html}"
    );
    assert!(
        html.contains("&lt;script&gt;"),
        "the hostile title is escaped: {html}"
    );

    let redacted = p.polisd(&["report", p.root.to_str().unwrap(), "--redact"]);
    let r = String::from_utf8(redacted.stdout).unwrap();
    for secret in [
        ALPHA,
        BRAVO,
        FOUNDER,
        "the next job",
        "next-job",
        "quorum-rule",
        "pwned",
    ] {
        assert!(!r.contains(secret), "{secret} in the redacted report: {r}");
    }
    assert!(r.contains("citizen-") && r.contains("contract-"), "{r}");
    // A reader cannot test a guess: hashing a known id as the pseudonyms are made, without
    // this machine's key, finds nothing.
    for (kind, guess) in [("citizen", ALPHA), ("citizen", FOUNDER), ("tag", "python")] {
        let unkeyed = polisd::protocol::digest::sha256_hex(format!("{kind}\0{guess}").as_bytes());
        let named = format!("{kind}-{}", &unkeyed[..6]);
        assert!(
            !r.contains(&named),
            "{guess} is {named} in the redacted report: {r}"
        );
    }
    let again = String::from_utf8(
        p.polisd(&["report", p.root.to_str().unwrap(), "--redact"])
            .stdout,
    )
    .unwrap();
    assert_eq!(
        r.lines()
            .filter(|l| l.contains("citizen-"))
            .collect::<Vec<_>>(),
        again
            .lines()
            .filter(|l| l.contains("citizen-"))
            .collect::<Vec<_>>(),
        "stable pseudonyms"
    );

    let inside = p.root.join("report.md");
    let refused = p.polisd(&[
        "report",
        p.root.to_str().unwrap(),
        "--out",
        inside.to_str().unwrap(),
    ]);
    assert_eq!(refused.status.code(), Some(1));
    assert!(!inside.exists(), "nothing written inside the polis");
}

#[test]
fn notify_command_runs_once_for_a_new_human_queue_item() {
    let p = generated_polis();
    let sink = p.dir.path().join("notified.txt");
    std::fs::write(
        p.dir.path().join("polisd.toml"),
        format!(
            "[watch]\ndebounce = \"50ms\"\n\n[log]\nlevel = \"debug\"\n\n[dashboard]\nlisten = \"127.0.0.1:0\"\n\
             notify_command = 'printf \"%s|%s\\n\" \"$POLISD_ITEM_TITLE\" \"$POLISD_ITEM_URL\" >> {}'\n",
            sink.display()
        ),
    )
    .unwrap();
    let daemon = p.start_daemon();
    // Items already waiting at start are not news.
    p.save(
        "contracts/open/urgent-fix.md",
        &contract(
            "urgent-fix",
            "urgent fix",
            Some(BRAVO),
            "claimed",
            &["rust"],
            "",
            "## Intent\n\nx\n",
        ),
    );
    wait_until(
        "the notify_command for the new item",
        Duration::from_secs(30),
        || std::fs::read_to_string(&sink).is_ok_and(|t| t.contains("urgent-fix")),
    );
    let text = std::fs::read_to_string(&sink).unwrap();
    assert_eq!(
        text.lines().count(),
        1,
        "only the new item: {text}\n{}",
        daemon.log_text()
    );
    assert!(text.contains("/p/0/contracts/urgent-fix"), "{text}");
}

#[test]
fn the_redacted_report_of_the_team_shows_no_identity_vendor_tag_date_or_text() {
    let p = team_polis();
    let mut secrets: Vec<String> = (1..=11).map(team_member).collect();
    secrets.push(FOUNDER.into());
    secrets.extend(VENDORS.iter().map(|v| v.to_string()));
    secrets.extend(TEAM_TAGS.iter().map(|t| t.to_string()));
    secrets.extend(
        [
            "settled work",
            "open work",
            "week line",
            "Run the migrations twice",
            "auth rework",
            "src/auth.rs",
            "first note",
            "third note",
            "done-0",
            "open-0",
            "_polis",
        ]
        .map(String::from),
    );
    let date = regex::Regex::new(r"\d{4}-\d{2}-\d{2}").unwrap();
    let style = regex::Regex::new(r"(?s)<style>.*?</style>").unwrap();
    for format in ["md", "html"] {
        let out = p.polisd(&["report", "--format", format, "--redact"]);
        assert!(out.status.success(), "{out:?}");
        let raw = String::from_utf8(out.stdout).unwrap();
        // The inline stylesheet is polisd's own text, not the polis's.
        let text = style.replace_all(&raw, "").to_lowercase();
        assert!(text.len() > 2000, "{format}: a report, not an empty page");
        for secret in &secrets {
            let word =
                regex::Regex::new(&format!(r"\b{}\b", regex::escape(&secret.to_lowercase())))
                    .unwrap();
            assert!(
                !word.is_match(&text),
                "{format}: {secret:?} shows in the redacted report"
            );
        }
        assert!(!date.is_match(&text), "{format}: a date shows");
        // The numbers stay.
        assert!(text.contains("settled (2000)"), "{format}");
    }
}

/// The report lists the amendments as the pages do, and so says who runs the tally that would
/// move one at quorum, in the words `status` and the pages use.
#[test]
fn the_report_says_who_tallies_an_amendment_at_quorum() {
    let p = generated_polis();
    amendment_at_quorum(&p);
    let report = |format: &str| {
        let out = p.polisd(&["report", "--format", format]);
        assert!(out.status.success(), "{out:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    let md = report("md");
    assert!(
        md.contains("who tallies: no daemon watches this polis; run `polisd tally`"),
        "{md}"
    );
    let html = report("html");
    assert!(
        html.contains("who tallies: no daemon watches this polis; run <code>polisd tally</code>"),
        "{html}"
    );
    // This test process stands in for a daemon watching the polis (`daemon.json`, a live pid).
    let state = polisd::fs::state::State::load_in(&p.state_dir, &p.root).unwrap();
    state
        .write_status(&state.status("2026-11-30T09:00:00Z", "native"))
        .unwrap();
    let md = report("md");
    let daemon = format!(
        "who tallies: the daemon watching this polis (`polisd run`, pid {}) does on its next pass",
        std::process::id()
    );
    assert!(md.contains(&daemon), "{md}");
}

/// The markdown report is pasted into issues and opened in viewers that render raw HTML: an
/// agent's title, owner or tag leaves no tag, no comment and no line of its own there, and a
/// backtick in an owner does not end its code span.
#[test]
fn the_markdown_report_keeps_agent_text_out_of_its_structure_and_html() {
    let p = generated_polis();
    // A leader whose name holds a line break, a table row and a tag; another with a backtick.
    let owner = "\"evil\\n## Injected heading\\n| a | b |<img src=x onerror=alert(1)>\"";
    for day in 10..13 {
        p.save(
            &format!("contracts/settled/hostile-{day}.md"),
            &settled(&format!("hostile-{day}"), owner, "ops", 5, day),
        );
    }
    p.save(
        "contracts/settled/tick-1.md",
        &settled("tick-1", "\"tick`s owner\"", "ops", 1, 20),
    );
    assert!(p.polisd(&["reconcile"]).status.success());
    let out = p.polisd(&["report", p.root.to_str().unwrap(), "--format", "md"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let md = String::from_utf8(out.stdout).unwrap();
    // Outside the settled list's code spans, where markdown shows text as it is.
    let outside_code: Vec<&str> = md.lines().filter(|l| !l.starts_with("- `")).collect();
    for raw in ["<script", "<img", "<!--"] {
        assert!(
            !outside_code
                .iter()
                .any(|l| l.match_indices(raw).any(|(i, _)| !l[..i].ends_with('\\'))),
            "raw {raw} in the markdown:\n{md}"
        );
    }
    assert!(md.contains("\\<script>"), "the title shown escaped:\n{md}");
    assert!(
        !md.lines()
            .any(|l| l.starts_with("## Injected") || l.starts_with("| a |")),
        "an owner's line break started a block:\n{md}"
    );
    let leader = md
        .lines()
        .skip_while(|l| *l != "### ops")
        .find(|l| l.starts_with("leader "))
        .expect("the ops leader");
    assert!(
        leader.starts_with("leader evil ## Injected heading \\| a \\| b \\|\\<img"),
        "{leader}"
    );
    assert!(
        md.contains("- `hostile-10`: owner `evil ## Injected heading | a | b |<img src=x onerror=alert(1)>`,"),
        "the owner in a code span, as written:\n{md}"
    );
    assert!(md.contains("owner ``tick`s owner``"), "{md}");
}
