//! Stamps that are the same on every machine: notices headed with their cause's time, and
//! reflection's proposals named and dated by their evidence, so a sync has nothing to
//! reconcile; when two drafts of one proposal meet, the fuller one is kept.

use super::{
    commit_all, found, git, machine, project, pull, quiet, settled, syncthing, tree, two_clones,
    ALPHA, BETA, FOUNDER,
};
use crate::harness::*;
use std::collections::BTreeMap;
use std::fs;
use std::path::PathBuf;

/// A fake clock for one daemon (`POLISD_FAKE_NOW_FILE`): `offset` from the real one.
fn clock_file(p: &TestPolis, offset: chrono::Duration) -> PathBuf {
    let path = p.dir.path().join("now");
    fs::write(&path, (chrono::Utc::now() + offset).to_rfc3339()).unwrap();
    path
}

/// Two clones, one copied from the other; `prepare` runs on the first before the copy.
fn two_copies(prepare: impl FnOnce(&TestPolis)) -> (TestPolis, TestPolis) {
    let a = machine(|d| d.join("project"));
    fs::create_dir_all(a.root.parent().unwrap()).unwrap();
    found(a.root.parent().unwrap());
    prepare(&a);
    let b = machine(|d| d.join("project"));
    copy_tree(a.root.parent().unwrap(), b.root.parent().unwrap());
    (a, b)
}

/// "no wall-clock values in generated files": two daemons whose clocks are two days
/// apart see the same synced causes (a settlement, one without a quality, a proposed
/// amendment, a chronicle line that breaks a rule) and write byte-identical inboxes: each
/// notice's heading is its cause's time (`settled_at`, `proposed_at`, the line's stamp),
/// neither machine's clock, so a sync of the inboxes has nothing to reconcile.
#[test]
fn two_daemons_with_different_clocks_write_byte_identical_inboxes() {
    let (a, b) = two_copies(|a| {
        for who in [ALPHA, BETA] {
            a.append(
                "chronicle.md",
                &chronicle_line(who, "joined polis", "-", "hi"),
            );
        }
    });
    let clock_a = clock_file(&a, chrono::Duration::hours(1));
    let clock_b = clock_file(&b, chrono::Duration::days(2) + chrono::Duration::hours(5));
    let _da = a.start_daemon_with(&[("POLISD_FAKE_NOW_FILE", &clock_a)]);
    let _db = b.start_daemon_with(&[("POLISD_FAKE_NOW_FILE", &clock_b)]);
    let inbox = |who: &str| format!("citizens/{who}/inbox.md");
    // Each cause reaches both machines (as a sync brings it) before the next one.
    let both =
        |rel: &str, text: &str, append: bool, what: &str, done: &dyn Fn(&TestPolis) -> bool| {
            for p in [&a, &b] {
                if append {
                    p.append(rel, text);
                } else {
                    p.save(rel, text);
                }
            }
            for p in [&a, &b] {
                wait_for(p, what, || done(p));
            }
        };
    both(
        "contracts/settled/parser.md",
        &settled("parser", BETA, ALPHA, 5, "2026-03-02 10:00:00"),
        false,
        "the contract-settled notice",
        &|p| p.count(BETA, "contract-settled") == 1,
    );
    both(
        "contracts/settled/lexer.md",
        &settled("lexer", BETA, ALPHA, 5, "2026-03-03 16:45:00").replace("quality_score: 5\n", ""),
        false,
        "the quality-defaulted notice",
        &|p| p.count(ALPHA, "quality-defaulted") == 1 && p.count(BETA, "contract-settled") == 2,
    );
    both(
        "amendments/proposed/2026-03-04-shorter-notes.md",
        &format!(
            "---\namendment_id: 2026-03-04-shorter-notes\ntitle: Shorter notes\nproposed_by: {FOUNDER}\n\
             proposed_at: '2026-03-04 08:30:00'\nstatus: proposed\nquorum_required: 3\n\
             votes: {{agree: [], disagree: [], abstain: [], request_changes: []}}\n\
             ratified_at: null\nexpires_at: '2099-01-01'\n---\n\n## Proposal\n\nShorter notes.\n"
        ),
        false,
        "the amendment-proposed notices",
        &|p| p.count(ALPHA, "amendment-proposed") == 1 && p.count(BETA, "amendment-proposed") == 1,
    );
    // A high-stakes contract claimed with no reviewer: stamped with its claim's line (which
    // came first, so it also draws a C006 finding: its link did not exist yet).
    let claim = format!(
        "- {} | {ALPHA} | claimed contract | [[contracts/open/vault]] | mine\n",
        (chrono::Utc::now() - chrono::Duration::hours(2)).format("%Y-%m-%d %H:%M")
    );
    both("chronicle.md", &claim, true, "the C006 notice", &|p| {
        p.count(ALPHA, "chronicle-finding") == 1
    });
    both(
        "contracts/open/vault.md",
        &format!(
            "---\ncontract_id: vault\ntitle: Vault\nopened_by: {BETA}\nopened_at: '2026-03-01 07:00:00'\n\
             owner: {ALPHA}\nstatus: claimed\nstakes: high\nrequired_tags: [rust]\n---\n\n## Intent\n\nLock it.\n"
        ),
        false,
        "the review-needed notice",
        &|p| p.count(ALPHA, "review-needed") == 1,
    );
    let bad = chronicle_line(ALPHA, "Finished The Tests", "-", "uppercase verb");
    both(
        "chronicle.md",
        &bad,
        true,
        "the chronicle-finding notice",
        &|p| p.count(ALPHA, "chronicle-finding") == 2,
    );
    for who in [ALPHA, BETA, FOUNDER] {
        assert_eq!(
            a.read(&inbox(who)),
            b.read(&inbox(who)),
            "{who}'s inbox differs between the machines"
        );
    }
    let beta = a.read(&inbox(BETA));
    assert!(
        beta.contains("\n### 2026-03-02 10:00 from polis-daemon\n"),
        "{beta}"
    );
    assert!(
        beta.contains("\n### 2026-03-03 16:45 from polis-daemon\n"),
        "{beta}"
    );
    assert!(
        beta.contains("\n### 2026-03-04 08:30 from polis-daemon\n"),
        "{beta}"
    );
    let alpha = a.read(&inbox(ALPHA));
    // The heading of the block that holds `kind`'s marker.
    let heading = |text: &str, kind: &str| -> String {
        let at = text.find(&format!("<!-- polisd:{kind}:")).unwrap();
        let start = text[..at].rfind("\n### ").unwrap() + 5;
        text[start..start + 16].to_string()
    };
    assert_eq!(heading(&alpha, "review-needed"), &claim[2..18], "{alpha}");
    assert_eq!(heading(&alpha, "quality-defaulted"), "2026-03-03 16:45");
    assert!(
        alpha.contains(&format!("\n### {} from polis-daemon\n", &bad[2..18])),
        "{alpha}"
    );
    // Neither daemon's clock is in a heading (that is what they wrote before).
    for clock in [&clock_a, &clock_b] {
        let now = chrono::DateTime::parse_from_rfc3339(fs::read_to_string(clock).unwrap().trim())
            .unwrap()
            .with_timezone(&chrono::Utc);
        let heading = format!("### {} from polis-daemon", now.format("%Y-%m-%d %H:%M"));
        for who in [ALPHA, BETA] {
            assert!(!a.read(&inbox(who)).contains(&heading), "{heading}");
        }
    }
}

/// Reflection on day D on clone A and on day D+1 on clone B (B's daemon was off on
/// D and has not received A's proposal yet) files the same proposal under the same id with
/// the same bytes, because the id, `proposed_at` and `expires_at` come from the evidence (the
/// newest settlement it cites), not from the day each ran; after a Syncthing-style sync the
/// polis holds one file per proposal, and no conflict copy of one.
#[test]
fn reflection_on_two_days_on_two_clones_files_one_proposal() {
    let yesterday = (chrono::Utc::now() - chrono::Duration::days(1)).format("%Y-%m-%d 10:00:00");
    let (a, b) = two_copies(|a| {
        for who in [ALPHA, BETA] {
            a.append(
                "chronicle.md",
                &chronicle_line(who, "joined polis", "-", "hi"),
            );
        }
        // Alpha is the router's pick on `rust`, and beta does much better there.
        for (i, (owner, quality)) in [
            (ALPHA, 1),
            (ALPHA, 1),
            (ALPHA, 1),
            (BETA, 5),
            (BETA, 5),
            (BETA, 5),
        ]
        .into_iter()
        .enumerate()
        {
            let id = format!("work-{i}");
            a.save(
                &format!("contracts/settled/{id}.md"),
                &format!(
                    "---\ncontract_id: {id}\nopened_by: {FOUNDER}\nstatus: settled\nowner: {owner}\n\
                     required_tags: [rust]\nquality_score: {quality}\nstakes: medium\n\
                     review: {{required: false}}\nrouting:\n  recommended_by_router: {ALPHA}\n\
                     settled_at: '{yesterday}'\n---\n# {id}\n"
                ),
            );
        }
    });
    let proposals = |p: &TestPolis| -> BTreeMap<String, Vec<u8>> {
        tree(&p.root)
            .into_iter()
            .filter(|(rel, _)| rel.starts_with("amendments/") && !rel.contains("/."))
            .collect()
    };
    let nudge = chronicle_line(FOUNDER, "noted", "-", "a new day");
    let clock_a = clock_file(&a, chrono::Duration::zero());
    let da = a.start_daemon_with(&[("POLISD_FAKE_NOW_FILE", &clock_a)]);
    a.append("chronicle.md", &nudge);
    wait_for(&a, "A's proposals", || proposals(&a).len() >= 2);
    quiet(&a);
    drop(da);
    // B's daemon runs the next day, on the same files but A's proposals.
    let clock_b = clock_file(&b, chrono::Duration::days(1));
    let _db = b.start_daemon_with(&[("POLISD_FAKE_NOW_FILE", &clock_b)]);
    b.append("chronicle.md", &nudge);
    wait_for(&b, "B's proposals", || proposals(&b).len() >= 2);
    quiet(&b);
    let (on_a, on_b) = (proposals(&a), proposals(&b));
    assert_eq!(
        on_a.keys().collect::<Vec<_>>(),
        on_b.keys().collect::<Vec<_>>(),
        "the two days named the proposals differently"
    );
    assert_eq!(on_a, on_b, "the same proposal, other bytes");
    let mut last = BTreeMap::new();
    syncthing(&a.root, &b.root, &mut last, "amendments");
    let synced = proposals(&a);
    assert_eq!(synced, proposals(&b));
    assert_eq!(
        synced,
        on_a,
        "one file per proposal after the sync: {:?}",
        synced.keys()
    );
    let misroute: Vec<_> = synced
        .keys()
        .filter(|k| k.contains("misroute-rust"))
        .collect();
    assert_eq!(misroute.len(), 1, "{misroute:?}");
    let day = &yesterday.to_string()[..10];
    assert!(
        misroute[0].contains(&format!("/{day}-misroute-rust.md")),
        "{misroute:?}"
    );
}

/// The same on folders a sync tool keeps: each machine drafted one proposal from the
/// settlements it had seen, the sync kept one draft and the other as a conflict copy, and the
/// daemon keeps the fuller draft and removes the copy; after the next sync both machines hold
/// that one file and no copy.
#[test]
fn a_conflict_copy_of_a_reflection_draft_is_settled_to_the_fuller_draft() {
    let (a, b) = two_copies(|_| {});
    for (p, side, count) in [(&a, "a", 3), (&b, "b", 4)] {
        draft_from_settlements(p, side, count);
    }
    let drafts = stakes_drafts;
    let fuller = drafts(&b);
    assert_eq!(fuller.len(), 1, "{:?}", fuller.keys());
    let mut last = BTreeMap::new();
    let (_, conflicts) = syncthing(&a.root, &b.root, &mut last, "amendments");
    assert!(conflicts > 0, "each side drafted its own bytes");
    // The sync kept A's draft (three settlements) and B's as the copy.
    assert_eq!(drafts(&b).len(), 2, "{:?}", drafts(&b).keys());
    let _daemon = b.start_daemon();
    wait_for(&b, "the copy settled", || drafts(&b) == fuller);
    syncthing(&a.root, &b.root, &mut last, "amendments");
    assert_eq!(drafts(&a), fuller);
    assert_eq!(drafts(&b), fuller);
    assert_eq!(b.count(FOUNDER, "sync-conflict"), 0);
}

/// Settles `count` low-quality `rust` contracts named `work-<side>-<i>` (yesterday, unguarded)
/// on `p` and runs `polisd reflect --apply` there: a draft of the `stakes-rust` proposal citing
/// them.
fn draft_from_settlements(p: &TestPolis, side: &str, count: usize) {
    let at = (chrono::Utc::now() - chrono::Duration::days(1))
        .format("'%Y-%m-%d 10:00:00'")
        .to_string();
    for i in 0..count {
        let id = format!("work-{side}-{i}");
        p.save(
            &format!("contracts/settled/{id}.md"),
            &settled(&id, FOUNDER, ALPHA, 1, &at),
        );
    }
    let out = p.polisd(&["reflect", "--apply", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The `stakes-rust` drafts in `amendments/proposed/`, by path.
fn stakes_drafts(p: &TestPolis) -> BTreeMap<String, Vec<u8>> {
    tree(&p.root)
        .into_iter()
        .filter(|(rel, _)| rel.starts_with("amendments/proposed/") && rel.contains("stakes-rust"))
        .collect()
}

/// Reflection on two clones that had each seen other low-quality settlements drafts one
/// proposal with other evidence on each: git's merge keeps the draft with the fuller evidence,
/// whichever side pulls, instead of an add/add conflict; a second reflection files nothing new.
#[test]
fn two_clones_drafting_one_proposal_from_other_evidence_merge_to_the_fuller_draft() {
    let (_origin, a, b) = two_clones();
    for (p, side, count) in [(&a, "a", 3), (&b, "b", 4)] {
        draft_from_settlements(p, side, count);
        commit_all(p, "reflected");
    }
    let drafts = stakes_drafts;
    let (on_a, on_b) = (drafts(&a), drafts(&b));
    assert_eq!(on_a.len(), 1, "{:?}", on_a.keys());
    assert_eq!(
        on_a.keys().collect::<Vec<_>>(),
        on_b.keys().collect::<Vec<_>>()
    );
    assert_ne!(on_a, on_b, "the two drafts cite other evidence");
    git(&project(&a), &["push", "-q", "origin", "main"]);
    // `pull` fails on a conflict: without the driver this is an add/add one.
    pull(&b);
    assert_eq!(drafts(&b), on_b, "the draft with four settlements is kept");
    let merged = String::from_utf8(on_b.values().next().unwrap().clone()).unwrap();
    assert!(merged.contains("evidence_count: 4"), "{merged}");
    git(&project(&b), &["push", "-q", "origin", "main"]);
    pull(&a);
    assert_eq!(drafts(&a), on_b);
    let again: serde_json::Value =
        serde_json::from_slice(&b.polisd(&["reflect", "--apply", "--json"]).stdout).unwrap();
    assert!(
        git(&project(&b), &["status", "--porcelain"]).is_empty(),
        "a second reflection wrote: {again:#}"
    );
}

/// A vote made on machine B arrives on machine A as two files, in any order: the vote file
/// and the chronicle line that dates it. A daemon that sees the vote reach the quorum before
/// the line has arrived must not ratify with its own clock: B (and every machine that gets
/// the files in the other order) writes `ratified_at` from the line, and the two ratified
/// files would meet as a conflict copy a person has to sort out. It waits for the settling
/// window, and writes the same bytes as B.
#[test]
fn a_vote_that_arrives_before_its_chronicle_line_is_ratified_as_on_the_voters_machine() {
    let now = chrono::Utc::now();
    let id = "more-tests";
    let link = format!("[[amendments/proposed/{id}]]");
    let (a, b) = two_copies(|a| {
        for who in [ALPHA, BETA] {
            a.append(
                "chronicle.md",
                &chronicle_line(who, "joined polis", "-", "hi"),
            );
        }
        let proposed_at = now - chrono::Duration::hours(2);
        a.save(
            &format!("amendments/proposed/{id}.md"),
            &format!(
                "---\namendment_id: {id}\ntitle: More tests\nproposed_by: {ALPHA}\n\
                 proposed_at: '{}'\nstatus: proposed\nquorum_required: 2\n\
                 votes: {{agree: [], disagree: [], abstain: [], request_changes: []}}\n\
                 ratified_at: null\nexpires_at: '2099-01-01'\n---\n\n## Proposal\n\nMore tests.\n",
                proposed_at.format("%Y-%m-%d %H:%M:%S")
            ),
        );
        a.append(
            "chronicle.md",
            &format!(
                "- {} | {ALPHA} | proposed amendment | {link} | More tests\n",
                proposed_at.format("%Y-%m-%d %H:%M")
            ),
        );
    });
    // Beta votes on B an hour ago; B's own tally ratifies from the vote's line.
    let voted_at = (now - chrono::Duration::hours(1))
        .format("%Y-%m-%d %H:%M")
        .to_string();
    let vote_file = format!("amendments/votes/{id}/{BETA}.md");
    let vote =
        format!("---\namendment_id: {id}\nvoter: {BETA}\nvote: agree\nvoted_at: {voted_at}\n---\n");
    b.save(&vote_file, &vote);
    b.append(
        "chronicle.md",
        &format!("- {voted_at} | {BETA} | voted on amendment | {link} | agree: -\n"),
    );
    ok(b.polisd(&["tally"]));
    let ratified = format!("amendments/ratified/{id}.md");
    let on_b = b.read(&ratified);
    assert!(
        on_b.contains(&format!("ratified_at: '{voted_at}:00'")),
        "{on_b}"
    );

    // On A the vote file comes first, the chronicle a moment later.
    super::with_settling(&a, "3s");
    fs::create_dir_all(a.path(&vote_file).parent().unwrap()).unwrap();
    let daemon = a.start_daemon();
    super::replace_as_a_sync_tool(&a, &vote_file, &vote);
    wait_for(&a, "the tally over the vote", || {
        a.exists(&ratified) || daemon.log_text().contains("waits for the settling window")
    });
    super::replace_as_a_sync_tool(&a, "chronicle.md", &b.read("chronicle.md"));
    wait_for(&a, "the ratification", || a.exists(&ratified));
    assert_eq!(a.read(&ratified), on_b);
}
