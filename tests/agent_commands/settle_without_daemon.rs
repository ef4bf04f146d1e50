//! `contract settle` with no daemon running: it rebuilds `routing_stats.yml` itself, from the
//! ledger of settled contracts, to the bytes a full reconcile writes.

use super::*;

/// Opens, claims and settles one contract with the agents' commands (no daemon running).
fn open_claim_settle(p: &TestPolis, title: &str, owner: &str, quality: &str) -> String {
    let out = ok(p.polisd(&[
        "contract", "open", "--title", title, "--by", FOUNDER, "--tags", "python", "--json",
    ]));
    let opened: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let id = opened["contract_id"].as_str().unwrap().to_string();
    ok(p.polisd(&["contract", "claim", &id, "--as", owner]));
    ok(p.polisd(&[
        "contract",
        "settle",
        &id,
        "--quality",
        quality,
        "--no-lesson",
        "routing is the point here",
    ]));
    id
}

/// The ledger's records (`None` when not trusted) and how many journal frames follow its
/// snapshot.
fn ledger(p: &TestPolis) -> (Option<Vec<String>>, usize) {
    let (restored, journal) = polisd::fs::state::read_ledger_in(&p.polis_state_dir());
    let paths = match restored {
        polisd::fs::state::Restored::Records { records, .. } => {
            Some(records.iter().map(|r| r.path.to_string()).collect())
        }
        _ => None,
    };
    (paths, journal)
}

#[test]
fn settle_without_a_daemon_reconciles_from_the_ledger_to_a_full_reconciles_bytes() {
    const WORKER: &str = "codex-worker-one";
    let p = TestPolis::init(FOUNDER);
    p.citizen(WORKER, "openai", &[("python", 3)], "medium");
    let stats = |p: &TestPolis| p.read("contracts/routing_stats.yml");
    // A daemon met the polis once, so settlements made since are news to it.
    p.start_daemon().kill9();

    // Each settle journals one line for its own file after the daemon's (empty) snapshot, and
    // the second one more when it read the first's file again (the first read it within a tick
    // of moving it in, which it always does unless this machine is very slow): no snapshot.
    let first = open_claim_settle(&p, "First job", WORKER, "4");
    assert_eq!(stats(&p), p.expected_stats());
    let second = open_claim_settle(&p, "Second job", FOUNDER, "2");
    assert_eq!(stats(&p), p.expected_stats());
    let (paths, journal) = ledger(&p);
    assert!((2..=3).contains(&journal), "{journal} lines: {paths:?}");
    assert_eq!(
        paths,
        Some(vec![
            format!("contracts/settled/{first}.md"),
            format!("contracts/settled/{second}.md")
        ])
    );

    // A settled file edited behind the ledger's back (same size: only the fingerprint tells)
    // and one removed: the next settle reads the edit, drops the removed one, and still writes
    // a full reconcile's bytes.
    let rel = format!("contracts/settled/{first}.md");
    let edited = p
        .read(&rel)
        .replacen("quality_score: 4", "quality_score: 5", 1);
    assert_ne!(edited, p.read(&rel));
    p.save(&rel, &edited);
    std::fs::remove_file(p.path(&format!("contracts/settled/{second}.md"))).unwrap();
    open_claim_settle(&p, "Third job", WORKER, "3");
    let after_edit = stats(&p);
    assert_eq!(after_edit, p.expected_stats());
    assert!(
        after_edit.contains("avg_quality_score: 4.0"),
        "{after_edit}"
    );
    assert!(!after_edit.contains(FOUNDER), "{after_edit}");

    // A daemon restarted now restores the commands' journal, yet announces their settlements
    // (no daemon counted them): the first and the third (the second was removed).
    let daemon = p.start_daemon();
    harness::wait_until(
        "the opener told of two settlements",
        harness::DEADLINE,
        || p.count(FOUNDER, "contract-settled") == 2,
    );
    assert!(daemon.log_text().contains("restored the ledger"));
    daemon.kill9();

    // A damaged snapshot, then no ledger at all: both fall back to reading every file, with
    // the same bytes, and leave a fresh snapshot.
    let file = p.polis_state_dir().join("settled.ledger");
    let mut damaged = std::fs::read(&file).unwrap();
    let at = damaged
        .windows(WORKER.len())
        .position(|w| w == WORKER.as_bytes())
        .expect("the ledger names the worker");
    damaged[at] = b'C';
    std::fs::write(&file, damaged).unwrap();
    assert_eq!(ledger(&p).0, None);
    open_claim_settle(&p, "Fourth job", WORKER, "1");
    assert_eq!(stats(&p), p.expected_stats());
    let only_snapshot = |p: &TestPolis| {
        let (paths, journal) = ledger(p);
        paths.is_some() && journal == 0
    };
    assert!(only_snapshot(&p), "{:?}", ledger(&p));
    std::fs::remove_file(&file).unwrap();
    open_claim_settle(&p, "Fifth job", WORKER, "5");
    assert_eq!(stats(&p), p.expected_stats());
    assert!(only_snapshot(&p), "{:?}", ledger(&p));

    // A daemon started afterwards restores what the commands left; the settlements no daemon
    // counted yet are still news to the opener (the commands' records say so).
    let _daemon = p.start_daemon();
    harness::wait_until(
        "the opener told of the four settlements by another citizen",
        harness::DEADLINE,
        || p.count(FOUNDER, "contract-settled") == 4,
    );
    assert_eq!(stats(&p), p.expected_stats());
}

/// A second write of the same size in the clock tick of the first leaves a file's fingerprint
/// as it was. A command that read the file in between (no daemon watching) marks its record to
/// be read again, and the next command does, whatever the fingerprint says.
#[test]
fn a_settled_file_read_in_the_tick_of_its_change_is_read_again_by_the_next_command() {
    use polisd::fs::state::{Fingerprint, LedgerFile, Restored, SettledRecord};
    const WORKER: &str = "codex-worker-one";
    let p = TestPolis::init(FOUNDER);
    p.citizen(WORKER, "openai", &[("python", 3)], "medium");
    p.start_daemon().kill9();
    let stats = |p: &TestPolis| p.read("contracts/routing_stats.yml");

    let first = open_claim_settle(&p, "First job", WORKER, "4");
    let done = std::time::SystemTime::now();
    let rel = format!("contracts/settled/{first}.md");
    let recorded = |p: &TestPolis| -> SettledRecord {
        let (restored, _) = polisd::fs::state::read_ledger_in(&p.polis_state_dir());
        let Restored::Records { records, .. } = restored else {
            panic!("the ledger is trusted: {restored:?}")
        };
        let own = records
            .iter()
            .find(|r| r.path == rel)
            .expect("recorded")
            .to_owned();
        own
    };
    // The settle read its own file moments after moving it in: unless this machine took
    // longer than a tick's margin to get here, the record says to read it again.
    let own = recorded(&p);
    assert!(
        own.reread || !own.fingerprint.may_change_unseen(done),
        "a record of a file read in the tick of its change is trusted: {own:?}"
    );
    // Read again unchanged by the next settle, whose own settlement follows it (same owner,
    // same quality): counted once, beside the replay of the ledger made ahead.
    open_claim_settle(&p, "Next job", WORKER, "4");
    assert_eq!(stats(&p), p.expected_stats());

    // That second write, as if it came in the tick the settle read the file: the ledger holds
    // the file's fingerprint now and the settlement it had before.
    let edited = p
        .read(&rel)
        .replacen("quality_score: 4", "quality_score: 5", 1);
    p.save(&rel, &edited);
    let stale = |reread: bool| {
        let now = std::fs::symlink_metadata(p.path(&rel)).unwrap();
        let lock = LedgerFile::lock_in(&p.state_dir, &p.canonical_root())
            .unwrap()
            .expect("no daemon runs");
        let (mut file, _) = lock.restore(None);
        let was = recorded(&p);
        let record = SettledRecord {
            fingerprint: Fingerprint::of(&now),
            reread,
            ..was
        };
        file.append([Ok(record)]).unwrap();
    };
    // The control: trusted on its fingerprint, the record keeps the stale quality.
    stale(false);
    open_claim_settle(&p, "Second job", FOUNDER, "2");
    assert!(
        stats(&p).contains("avg_quality_score: 4.0"),
        "{}",
        stats(&p)
    );
    assert_ne!(stats(&p), p.expected_stats());
    // Marked, it is read again, and the stats are a full reconcile's.
    stale(true);
    open_claim_settle(&p, "Third job", FOUNDER, "3");
    assert_eq!(stats(&p), p.expected_stats());
    assert!(
        stats(&p).contains("avg_quality_score: 4.5"),
        "{}",
        stats(&p)
    );
}

/// A settled contract written by hand, as an agent that edits files leaves it.
fn settled_by_hand(id: &str, owner: &str, quality: u8, day: u32) -> String {
    format!(
        "---\ncontract_id: {id}\ntitle: {id}\nopened_by: {FOUNDER}\nopened_at: 2026-03-{day:02}T09:00:00Z\nowner: {owner}\nstatus: settled\nrequired_tags: [python]\nsettled_at: 2026-03-{day:02}T10:00:00Z\nquality_score: {quality}\nactual_minutes: 20\n---\n\n## Settlement\n\nDone.\n"
    )
}

#[test]
fn settle_without_a_daemon_checks_every_file_listed_while_its_own_move_is_made() {
    // Enough settled files for the folder to be stat'ed in several chunks, on more than one
    // thread, while the settle's own edit and move are made.
    const WORKER: &str = "codex-worker-one";
    const FILES: usize = 900;
    let p = TestPolis::init(FOUNDER);
    p.citizen(WORKER, "openai", &[("python", 3)], "medium");
    for i in 0..FILES {
        let owner = if i % 3 == 0 { FOUNDER } else { WORKER };
        let rel = format!("contracts/settled/hand-{i:04}.md");
        p.save(
            &rel,
            &settled_by_hand(&format!("hand-{i:04}"), owner, 4, 1 + (i % 28) as u32),
        );
    }
    p.start_daemon().kill9();
    let stats = |p: &TestPolis| p.read("contracts/routing_stats.yml");

    // Behind the ledger's back: same-size edits spread over the folder (only the fingerprints
    // tell), removals, and files added by hand.
    for round in 0..2 {
        for i in (round..FILES).step_by(97) {
            let rel = format!("contracts/settled/hand-{i:04}.md");
            let text = p.read(&rel);
            let edited = text.replacen("quality_score: 4", "quality_score: 1", 1);
            let edited = if edited == text {
                text.replacen("quality_score: 1", "quality_score: 5", 1)
            } else {
                edited
            };
            assert_ne!(edited, text);
            p.save(&rel, &edited);
        }
        for i in (round * 7 + 3..FILES).step_by(211) {
            let _ = std::fs::remove_file(p.path(&format!("contracts/settled/hand-{i:04}.md")));
        }
        for i in 0..5 {
            let id = format!("added-{round}-{i}");
            p.save(
                &format!("contracts/settled/{id}.md"),
                &settled_by_hand(&id, WORKER, 2, 20 + i),
            );
        }
        // Once with every chunk matched on the threads that stat'ed it, once as it comes.
        let id = format!("job-{round}");
        ok(p.polisd(&[
            "contract", "open", "--title", &id, "--by", FOUNDER, "--tags", "python",
        ]));
        ok(p.polisd(&["contract", "claim", &id, "--as", WORKER]));
        let mut settle = Command::new(BIN);
        settle
            .args([
                "contract",
                "settle",
                &id,
                "--quality",
                "3",
                "--no-lesson",
                "x",
            ])
            .env("POLISD_STATE_DIR", &p.state_dir)
            .current_dir(&p.root);
        if round == 0 {
            settle.env(polisd::operations::MATCH_WHILE_LISTING_ENV, "1");
        }
        ok(settle.output().unwrap());
        assert_eq!(stats(&p), p.expected_stats(), "round {round}");
    }
    // What the two settles journalled is trusted by the next one, and a settle with nothing
    // else changed still counts its own file.
    open_claim_settle(&p, "Job after", FOUNDER, "5");
    assert_eq!(stats(&p), p.expected_stats());
    let (paths, _) = ledger(&p);
    assert!(paths.is_some_and(|p| p.iter().any(|p| p.ends_with("/job-after.md"))));
}

#[test]
fn settle_waits_for_another_commands_lock_and_lists_the_folder_after_it() {
    const WORKER: &str = "codex-worker-one";
    let p = TestPolis::init(FOUNDER);
    p.citizen(WORKER, "openai", &[("python", 3)], "medium");
    open_claim_settle(&p, "Before", WORKER, "4");
    p.start_daemon().kill9();
    let out = ok(p.polisd(&[
        "contract", "open", "--title", "Waiting", "--by", FOUNDER, "--tags", "python", "--json",
    ]));
    let opened: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let id = opened["contract_id"].as_str().unwrap().to_string();
    ok(p.polisd(&["contract", "claim", &id, "--as", WORKER]));

    // Another command holds the ledger's lock for its reconcile: this settle makes its own
    // change, then waits for the lock before it lists the folder.
    let state_base = p.state_dir.clone();
    let root = p.canonical_root();
    let held = polisd::fs::state::LedgerFile::lock_in(&state_base, &root)
        .unwrap()
        .expect("no daemon runs");
    let settle = Command::new(BIN)
        .args([
            "contract",
            "settle",
            &id,
            "--quality",
            "2",
            "--no-lesson",
            "x",
        ])
        .env("POLISD_STATE_DIR", &state_base)
        .current_dir(&p.root)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let settle = harness::Killed::new(settle);
    harness::wait_until("the settle to move its contract", harness::DEADLINE, || {
        p.exists(&format!("contracts/settled/{id}.md"))
    });
    // Meanwhile the holder moves in a settlement of its own and journals it: listed before
    // the lock, it would be taken for a file removed.
    let other = "contracts/settled/other-holders.md";
    p.save(other, &settled_by_hand("other-holders", FOUNDER, 5, 9));
    let (mut file, _) = held.restore(None);
    let fingerprint = polisd::fs::state::fingerprints_in(&root, "contracts/settled", &[other])[0]
        .expect("the file is there");
    let zone = polisd::protocol::settings::parse(Some(&p.read("polis.yml")))
        .0
        .timezone;
    let read = polisd::operations::read_settled(&root, other, zone).expect("the file reads");
    file.append([Ok(polisd::fs::state::SettledRecord::of(
        other,
        &fingerprint,
        false,
        read.settlement.as_ref().map(|s| s.view()),
    ))])
    .unwrap();
    drop(file);
    let out = settle.into_inner().wait_with_output().unwrap();
    ok(out);
    assert_eq!(p.read("contracts/routing_stats.yml"), p.expected_stats());
}

#[test]
fn a_stats_rebuild_that_fails_after_the_settlement_is_reported_not_an_exit_1() {
    // The settlement is made (moved, recorded) before the stats are rebuilt. When the
    // rebuild cannot write (`routing_stats.yml` replaced by a link), exit 1 would tell the
    // agent it was refused, and its retry would be told the contract is settled already.
    let p = polis_with_contract();
    ok(p.polisd(&["contract", "claim", "fix-the-login-bug", "--as", FOUNDER]));
    let outside = p.dir.path().join("outside-stats.yml");
    std::fs::copy(p.path("contracts/routing_stats.yml"), &outside).unwrap();
    let kept = std::fs::read(&outside).unwrap();
    std::fs::remove_file(p.path("contracts/routing_stats.yml")).unwrap();
    std::os::unix::fs::symlink(&outside, p.path("contracts/routing_stats.yml")).unwrap();
    let out = ok(p.polisd(&[
        "contract",
        "settle",
        "fix-the-login-bug",
        "--quality",
        "4",
        "--no-lesson",
        "x",
        "--json",
    ]));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["ok"], true, "{v}");
    assert!(
        v["reconcile_error"]
            .as_str()
            .is_some_and(|e| e.contains("symbolic link")),
        "{v}"
    );
    assert!(p.exists("contracts/settled/fix-the-login-bug.md"));
    assert_eq!(lines_with(&p, "settled contract"), 1);
    assert_eq!(
        std::fs::read(&outside).unwrap(),
        kept,
        "written through the link"
    );
}
