//! Amendments ratified, expired or rejected once, each told to the right citizens.

use super::{
    amendment, assert_no_duplicate_markers, chronicle_barrier, count_lines_containing,
    four_citizens, today, ALPHA, BRAVO, CHARLIE, FOUNDER,
};
use crate::harness::{chronicle_stamp, wait_for, TestPolis};

#[test]
fn daemon_amendment_ratified_moved_chronicled_notified() {
    let p = four_citizens();
    let daemon = p.start_daemon();
    let id = format!("{}-quality-floor", today());
    let proposed = format!("amendments/proposed/{id}.md");
    let ratified = format!("amendments/ratified/{id}.md");

    p.save(&proposed, &amendment(&id, ALPHA, &[], ""));
    wait_for(&p, "amendment-proposed notices", || {
        [FOUNDER, BRAVO, CHARLIE]
            .iter()
            .all(|c| p.count(c, "amendment-proposed") == 1)
    });

    // Two agrees (the proposer and a body vote) are below the quorum of 3.
    let bravo_vote =
        "\n## Response from bravo-agent (agree)\n\nYes, low-impact lessons are noise.\n";
    p.save(&proposed, &amendment(&id, ALPHA, &[], bravo_vote));
    chronicle_barrier(&p, 1);
    assert!(
        p.exists(&proposed) && !p.exists(&ratified),
        "ratified below quorum"
    );

    // A frontmatter vote reaches it.
    let v3 = amendment(&id, ALPHA, &[CHARLIE], bravo_vote);
    p.save(&proposed, &v3);
    wait_for(&p, "the amendment to move to ratified/", || {
        p.exists(&ratified) && !p.exists(&proposed)
    });
    let text = p.read(&ratified);
    assert!(text.contains("\nstatus: ratified\n"), "{text}");
    let stamp = regex::Regex::new(r"\nratified_at: '\d{4}-\d\d-\d\d \d\d:\d\d:\d\d'\n").unwrap();
    assert!(stamp.is_match(&text), "{text}");
    // Only the status and ratified_at lines changed.
    let keep = |t: &str| -> Vec<String> {
        t.lines()
            .filter(|l| !l.starts_with("status:") && !l.starts_with("ratified_at:"))
            .map(str::to_string)
            .collect()
    };
    assert_eq!(keep(&text), keep(&v3));

    let line = format!("| polis-daemon | ratified amendment | [[amendments/ratified/{id}]] |");
    wait_for(&p, "the ratified amendment chronicle line", || {
        count_lines_containing(&p.read("chronicle.md"), &line) == 1
    });
    wait_for(
        &p,
        "amendment-ratified notices to every active citizen",
        || {
            [FOUNDER, ALPHA, BRAVO, CHARLIE]
                .iter()
                .all(|c| p.count(c, "amendment-ratified") == 1)
        },
    );

    // Nothing happens twice: not on later changes, not at a rescan.
    chronicle_barrier(&p, 2);
    daemon.kill9();
    let _daemon = p.start_daemon();
    chronicle_barrier(&p, 3);
    assert_eq!(count_lines_containing(&p.read("chronicle.md"), &line), 1);
    for c in [FOUNDER, ALPHA, BRAVO, CHARLIE] {
        assert_eq!(p.count(c, "amendment-ratified"), 1, "{c}");
    }
    for c in [FOUNDER, BRAVO, CHARLIE] {
        assert_eq!(p.count(c, "amendment-proposed"), 1, "{c}");
    }
    assert_eq!(
        p.count(ALPHA, "amendment-proposed"),
        0,
        "the proposer is not told"
    );
    for c in [ALPHA, BRAVO, CHARLIE] {
        assert_eq!(
            p.count(c, "chronicle-finding"),
            0,
            "{c}: {}",
            p.read("chronicle.md")
        );
    }
    assert_no_duplicate_markers(&p);
}

/// A ratification while an agent's chronicle line is half-written (no final newline yet) must
/// not split that line: polisd's `ratified amendment` line goes after the completed line
/// (SPEC §3: a line without its newline is not complete; §11: an agent's bytes are never lost
/// to a polisd edit).
#[test]
fn daemon_ratification_waits_for_a_half_written_chronicle_line() {
    let p = four_citizens();
    let _daemon = p.start_daemon();
    let id = format!("{}-quality-floor", today());
    let proposed = format!("amendments/proposed/{id}.md");
    let ratified = format!("amendments/ratified/{id}.md");
    let bravo_vote = "\n## Response from bravo-agent (agree)\n\nYes.\n";
    p.save(&proposed, &amendment(&id, ALPHA, &[], bravo_vote));
    wait_for(&p, "amendment-proposed notices", || {
        p.count(CHARLIE, "amendment-proposed") == 1
    });

    // Bravo is writing its line; meanwhile charlie's vote reaches the quorum.
    let head = format!("- {} | {BRAVO} | voted on amendment", chronicle_stamp());
    let tail = format!(" | [[amendments/proposed/{id}]] | agreed\n");
    let tallies = |p: &TestPolis| p.daemon_status().map_or(0, |s| s.counters.tallies);
    let before = tallies(&p);
    p.append("chronicle.md", &head);
    wait_for(&p, "a tally after the half line", || tallies(&p) > before);
    let before = tallies(&p);
    p.save(&proposed, &amendment(&id, ALPHA, &[CHARLIE], bravo_vote));
    // The pass that sees the quorum runs before the line is completed.
    wait_for(&p, "a tally after the vote", || tallies(&p) > before);
    p.append("chronicle.md", &tail);

    let line = format!("| polis-daemon | ratified amendment | [[amendments/ratified/{id}]] |");
    wait_for(&p, "the ratification and its chronicle line", || {
        p.exists(&ratified) && count_lines_containing(&p.read("chronicle.md"), &line) == 1
    });
    let chronicle = p.read("chronicle.md");
    assert_eq!(
        count_lines_containing(&chronicle, &format!("{head}{}", tail.trim_end())),
        1,
        "bravo's line was split:\n{chronicle}"
    );
    chronicle_barrier(&p, 1);
    assert_eq!(
        p.count(BRAVO, "chronicle-finding"),
        0,
        "{}",
        p.read("chronicle.md")
    );
    assert_eq!(
        count_lines_containing(&p.read(&format!("citizens/{FOUNDER}/inbox.md")), "(C001)"),
        0,
        "{}",
        p.read("chronicle.md")
    );
}

#[test]
fn daemon_amendment_expired_and_rejected_told_to_proposer() {
    let p = four_citizens();
    let _daemon = p.start_daemon();
    let expired_id = format!("{}-too-late", today());
    let rejected_id = format!("{}-unpopular", today());
    let yesterday = (chrono::Utc::now() - chrono::Duration::days(1))
        .format("%Y-%m-%d")
        .to_string();
    let expired = amendment(&expired_id, ALPHA, &[], "")
        .replace("expires_at: null", &format!("expires_at: {yesterday}"));
    p.save(&format!("amendments/proposed/{expired_id}.md"), &expired);
    // Two of four disagree: the proposer and one silent citizen cannot reach 3.
    let rejected = amendment(&rejected_id, BRAVO, &[], "")
        .replace("disagree: []", "disagree: [charlie-agent, founder-one]");
    p.save(&format!("amendments/proposed/{rejected_id}.md"), &rejected);

    wait_for(
        &p,
        "amendment-expired and amendment-rejected notices",
        || p.count(ALPHA, "amendment-expired") == 1 && p.count(BRAVO, "amendment-rejected") == 1,
    );
    let e = p.read(&format!("amendments/proposed/{expired_id}.md"));
    assert!(e.contains("\nstatus: expired\n"), "{e}");
    let r = p.read(&format!("amendments/proposed/{rejected_id}.md"));
    assert!(r.contains("\nstatus: rejected\n"), "{r}");
    chronicle_barrier(&p, 1);
    let chronicle = p.read("chronicle.md");
    for (verb, id) in [
        ("expired amendment", &expired_id),
        ("rejected amendment", &rejected_id),
    ] {
        let line = format!("| polis-daemon | {verb} | [[amendments/proposed/{id}]] |");
        assert_eq!(count_lines_containing(&chronicle, &line), 1, "{chronicle}");
    }
    for c in [FOUNDER, BRAVO, CHARLIE] {
        assert_eq!(p.count(c, "amendment-expired"), 0, "only the proposer: {c}");
    }
    for c in [FOUNDER, ALPHA, CHARLIE] {
        assert_eq!(
            p.count(c, "amendment-rejected"),
            0,
            "only the proposer: {c}"
        );
    }
    assert_no_duplicate_markers(&p);
}
