//! The daemon as a process: where it watches, how it stops, what it logs, and what a crash and
//! a restart leave behind.

use super::{
    amendment, assert_no_duplicate_markers, chronicle_barrier, count_lines_containing,
    four_citizens, open_contract, today, wait_for_stats, Settled, ALPHA, BRAVO, CHARLIE, FOUNDER,
};
use crate::harness::{self, chronicle_line, chronicle_stamp, wait_for, TestPolis};
use std::collections::BTreeMap;
use std::fs;
use std::process::Command;

/// Every (recipient, kind) with how many markers of that kind the recipient has, for markers
/// that are not barrier notices.
fn marker_counts(p: &TestPolis) -> BTreeMap<(String, String), usize> {
    let mut out = BTreeMap::new();
    for m in p.all_markers() {
        *out.entry((m.recipient, m.kind)).or_default() += 1;
    }
    out
}

#[test]
fn daemon_kill9_restart_mid_scene() {
    let p = four_citizens();
    let daemon = p.start_daemon();
    let id = format!("{}-quality-floor", today());
    let proposed = format!("amendments/proposed/{id}.md");

    // Act one, watched.
    Settled {
        id: "k1-parser",
        opener: FOUNDER,
        owner: ALPHA,
        tags: &["rust"],
        settled_at: "2026-11-10 10:00:00",
        quality: Some(4),
        minutes: 40,
        body: "",
    }
    .settle_by_mv(&p);
    wait_for_stats(&p, "stats after k1");
    p.save(&proposed, &amendment(&id, BRAVO, &[], ""));
    wait_for(&p, "amendment-proposed notices", || {
        [FOUNDER, ALPHA, CHARLIE]
            .iter()
            .all(|c| p.count(c, "amendment-proposed") == 1)
    });
    // A settlement with no quality, and the crash right after it: the daemon may or may not
    // have acted on it.
    Settled {
        id: "k2-guide",
        opener: ALPHA,
        owner: BRAVO,
        tags: &["docs"],
        settled_at: "2026-11-11 10:00:00",
        quality: None,
        minutes: 30,
        body: "",
    }
    .settle_by_save(&p);
    daemon.kill9();

    // Act two, while polisd is down.
    let votes = "\n## Response from charlie-agent (agree)\n\nAgreed.\n";
    p.save(&proposed, &amendment(&id, BRAVO, &[ALPHA], votes));
    p.append(
        "chronicle.md",
        &format!(
            "- {} | {CHARLIE} | voted without fields\n",
            chronicle_stamp()
        ),
    );
    p.save(
        "contracts/open/k3-cache.md",
        &open_contract("k3-cache", FOUNDER, &["rust"]),
    );
    Settled {
        id: "k4-deploy",
        opener: CHARLIE,
        owner: ALPHA,
        tags: &["ops"],
        settled_at: "2026-11-12 10:00:00",
        quality: Some(5),
        minutes: 25,
        body: "",
    }
    .settle_by_mv(&p);

    // Act three: polisd catches up once.
    let daemon = p.start_daemon();
    wait_for_stats(&p, "stats after the restart");
    wait_for(&p, "the amendment to be ratified", || {
        p.exists(&format!("amendments/ratified/{id}.md")) && !p.exists(&proposed)
    });
    let expected: BTreeMap<(String, String), usize> = [
        (FOUNDER, "contract-settled"),
        (ALPHA, "contract-settled"),
        (CHARLIE, "contract-settled"),
        (BRAVO, "quality-defaulted"),
        (FOUNDER, "amendment-proposed"),
        (ALPHA, "amendment-proposed"),
        (CHARLIE, "amendment-proposed"),
        (FOUNDER, "amendment-ratified"),
        (ALPHA, "amendment-ratified"),
        (BRAVO, "amendment-ratified"),
        (CHARLIE, "amendment-ratified"),
        (CHARLIE, "chronicle-finding"),
    ]
    .iter()
    .map(|(c, k)| ((c.to_string(), k.to_string()), 1))
    .collect();
    let without_routing = |p: &TestPolis| {
        let mut counts = marker_counts(p);
        let routed: usize = counts
            .iter()
            .filter(|((_, k), _)| k == "contract-routed")
            .map(|(_, n)| *n)
            .sum();
        counts.retain(|(_, k), _| k != "contract-routed");
        (counts, routed)
    };
    wait_for(&p, "every notice of the scene", || {
        without_routing(&p) == (expected.clone(), 1)
    });
    let ratified_line =
        format!("| polis-daemon | ratified amendment | [[amendments/ratified/{id}]] |");
    assert_eq!(
        count_lines_containing(&p.read("chronicle.md"), &ratified_line),
        1
    );
    assert_no_duplicate_markers(&p);

    // Another crash and restart changes nothing.
    let inboxes: Vec<_> = p.all_markers();
    let stats = p.read("contracts/routing_stats.yml");
    daemon.kill9();
    let _daemon = p.start_daemon();
    chronicle_barrier(&p, 1);
    let mut after = p.all_markers();
    after.retain(|m| !(m.recipient == FOUNDER && m.kind == "chronicle-finding"));
    assert_eq!(after, inboxes);
    assert_eq!(p.read("contracts/routing_stats.yml"), stats);
    assert_eq!(p.expected_stats(), stats);
    assert_eq!(
        count_lines_containing(&p.read("chronicle.md"), &ratified_line),
        1
    );
}

/// A crash at any point of a ratification (status edit, move, chronicle line, notices) is
/// finished by the next start, once: the kill lands at a different moment each round.
#[test]
fn daemon_kill9_at_varying_points_of_a_ratification() {
    let p = four_citizens();
    let mut daemon = p.start_daemon();
    let vote = "\n## Response from bravo-agent (agree)\n\nYes.\n";
    for round in 0..8u64 {
        let id = format!("{}-round-{round}", today());
        p.save(
            &format!("amendments/proposed/{id}.md"),
            &amendment(&id, ALPHA, &[CHARLIE], vote),
        );
        // Only varies where the kill lands; every outcome must be right.
        std::thread::sleep(std::time::Duration::from_millis(round * 7));
        daemon.kill9();
        daemon = p.start_daemon();
        let line = format!("| polis-daemon | ratified amendment | [[amendments/ratified/{id}]] |");
        wait_for(
            &p,
            &format!("round {round}: ratified, chronicled, notified"),
            || {
                p.exists(&format!("amendments/ratified/{id}.md"))
                    && !p.exists(&format!("amendments/proposed/{id}.md"))
                    && count_lines_containing(&p.read("chronicle.md"), &line) == 1
                    && [FOUNDER, ALPHA, BRAVO, CHARLIE]
                        .iter()
                        .all(|c| p.count(c, "amendment-ratified") == round as usize + 1)
            },
        );
    }
    chronicle_barrier(&p, 1);
    let chronicle = p.read("chronicle.md");
    assert_eq!(
        count_lines_containing(&chronicle, "| polis-daemon | ratified amendment |"),
        8,
        "{chronicle}"
    );
    for c in [FOUNDER, ALPHA, BRAVO, CHARLIE] {
        assert_eq!(p.count(c, "amendment-ratified"), 8, "{c}");
    }
    assert_no_duplicate_markers(&p);
}

#[test]
fn daemon_sigterm_exits_0_and_clears_its_status() {
    let p = four_citizens();
    let mut daemon = p.start_daemon();
    wait_for(&p, "daemon.json", || p.daemon_status().is_some());
    let pid = daemon.child.id() as libc::pid_t;
    // SAFETY: signalling our own child process by its pid.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    let mut code = None;
    wait_for(&p, "the daemon to exit after SIGTERM", || {
        code = daemon.child.try_wait().unwrap().map(|s| s.code());
        code.is_some()
    });
    assert_eq!(code, Some(Some(0)), "{}", daemon.log_text());
    assert!(p.daemon_status().is_none(), "daemon.json left behind");
}

/// A log reader that goes away (`polisd run 2>&1 | tee log`, the pipe's reader killed) leaves
/// the daemon a broken pipe on standard error: it goes on without its log, and a SIGTERM still
/// stops it cleanly.
#[test]
fn daemon_whose_log_reader_went_away_keeps_working() {
    use std::io::{BufRead, BufReader};
    let p = four_citizens();
    let config = p.dir.path().join("pipe.toml");
    fs::write(
        &config,
        "[watch]\ndebounce = \"50ms\"\n\n[log]\nlevel = \"debug\"\n\n[dashboard]\nenabled = false\n",
    )
    .unwrap();
    let mut daemon = harness::Killed::new(
        Command::new(harness::BIN)
            .arg("run")
            .arg(&p.root)
            .arg("--config")
            .arg(&config)
            .env("POLISD_STATE_DIR", &p.state_dir)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let log = daemon.child().stderr.take().unwrap();
    let mut lines = BufReader::new(log).lines();
    assert!(
        lines.any(|l| l.is_ok_and(|l| l.contains("initial scan done"))),
        "the daemon's log ended before its initial scan"
    );
    drop(lines);
    p.save(
        "contracts/open/after-the-pipe.md",
        &open_contract("after-the-pipe", FOUNDER, &["rust"]),
    );
    wait_for(&p, "the contract routed with the log's reader gone", || {
        assert!(
            daemon.child().try_wait().unwrap().is_none(),
            "the daemon stopped when its log's reader went away"
        );
        !p.read("contracts/open/after-the-pipe.md")
            .contains("recommended_by_router: null")
    });
    let pid = daemon.child().id() as libc::pid_t;
    // SAFETY: signalling our own child process by its pid.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    let mut code = None;
    wait_for(&p, "the daemon to exit after SIGTERM", || {
        code = daemon.child().try_wait().unwrap().map(|s| s.code());
        code.is_some()
    });
    assert_eq!(code, Some(Some(0)));
}

/// A test that fails while its daemon runs must not leave the daemon behind (it once kept
/// watching a deleted temporary folder for minutes): dropping the handle kills it.
#[test]
fn a_daemon_whose_test_fails_is_killed_with_its_handle() {
    let p = TestPolis::init(FOUNDER);
    let pid = std::sync::Mutex::new(None);
    let failed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let daemon = p.start_daemon();
        *pid.lock().unwrap() = Some(daemon.child.id());
        panic!("a failing assertion while the daemon runs");
    }));
    assert!(failed.is_err());
    let pid = pid.lock().unwrap().expect("the daemon started");
    // Killed and reaped: no process (not even a zombie) has the pid any more.
    assert!(
        !std::path::Path::new(&format!("/proc/{pid}")).exists(),
        "polisd run (pid {pid}) outlived its failing test"
    );
}

/// `polisd run` without PATH and with no polis configured watches the polis found walking up
/// from its working directory, like every other command.
#[test]
fn run_without_path_watches_the_polis_above_the_working_directory() {
    let p = TestPolis::init(FOUNDER);
    let config = p.dir.path().join("empty.toml");
    fs::write(&config, "[watch]\ndebounce = \"50ms\"\n").unwrap();
    let log = p.dir.path().join("walk-up.log");
    let child = Command::new(harness::BIN)
        .args(["run", "--config"])
        .arg(&config)
        .current_dir(p.path("citizens"))
        .env("POLISD_STATE_DIR", &p.state_dir)
        .env("NO_COLOR", "1")
        .stdout(std::process::Stdio::null())
        .stderr(fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let mut daemon = harness::Daemon { child, log };
    let root = p.canonical_root();
    harness::wait_until("the daemon to watch the polis", harness::DEADLINE, || {
        assert!(daemon.is_running(), "exited:\n{}", daemon.log_text());
        let text = daemon.log_text();
        text.contains("initial scan done")
            && (text.contains(&*root.to_string_lossy())
                || text.contains(&*p.root.to_string_lossy()))
    });
}

/// One polis named twice on the command line (its project root and its `_polis/` folder, or
/// through a link) is watched once: the daemon does not stand aside from itself.
#[test]
fn run_given_one_polis_twice_watches_it_once() {
    let p = TestPolis::init(FOUNDER);
    let config = p.dir.path().join("twice.toml");
    fs::write(
        &config,
        "[watch]\ndebounce = \"50ms\"\n\n[dashboard]\nenabled = false\n",
    )
    .unwrap();
    let link = p.dir.path().join("link");
    std::os::unix::fs::symlink(p.root.parent().unwrap(), &link).unwrap();
    let log = p.dir.path().join("twice.log");
    let child = Command::new(harness::BIN)
        .arg("run")
        .arg(p.root.parent().unwrap())
        .arg(&p.root)
        .arg(&link)
        .arg("--config")
        .arg(&config)
        .env("POLISD_STATE_DIR", &p.state_dir)
        .stdout(std::process::Stdio::null())
        .stderr(fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let mut daemon = harness::Daemon { child, log };
    harness::wait_until("the daemon to watch the polis", harness::DEADLINE, || {
        assert!(daemon.is_running(), "exited:\n{}", daemon.log_text());
        daemon.log_text().contains("initial scan done")
    });
    assert_eq!(
        daemon.log_text().matches("initial scan done").count(),
        1,
        "{}",
        daemon.log_text()
    );
}

/// At the default level a log file gets plain text (no colour codes), one info line per
/// validated line and per notice, and the notice's id is the inbox marker's; `status` counts
/// the inbox append as a write.
#[test]
fn daemon_log_file_is_plain_and_names_each_notice_by_its_marker_id() {
    let p = four_citizens();
    let config = p.dir.path().join("info.toml");
    fs::write(
        &config,
        "[watch]\ndebounce = \"50ms\"\n\n[log]\nlevel = \"info\"\n",
    )
    .unwrap();
    let log = p.dir.path().join("info.log");
    let child = Command::new(harness::BIN)
        .arg("run")
        .arg(&p.root)
        .arg("--config")
        .arg(&config)
        .env("POLISD_STATE_DIR", &p.state_dir)
        .env_remove("NO_COLOR")
        .env_remove("RUST_LOG")
        .stdout(std::process::Stdio::null())
        .stderr(fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let daemon = harness::Daemon { child, log };
    wait_for(&p, "the initial scan", || {
        daemon.log_text().contains("initial scan done")
    });
    // C008: the verb phrase is not lowercase.
    p.append(
        "chronicle.md",
        &chronicle_line(ALPHA, "Shipped It", "-", "-"),
    );
    wait_for(&p, "the chronicle-finding notice", || {
        p.count(ALPHA, "chronicle-finding") == 1
    });
    let marker = p
        .markers(ALPHA)
        .into_iter()
        .find(|m| m.kind == "chronicle-finding")
        .unwrap();
    wait_for(&p, "the notice's log line", || {
        daemon.log_text().contains(&format!("id={}", marker.id))
    });
    let text = daemon.log_text();
    assert!(
        !text.contains('\u{1b}'),
        "colour codes in a log file:\n{text}"
    );
    assert!(text.contains("chronicle line validated"), "{text}");
    wait_for(&p, "status to count the inbox append as a write", || {
        p.daemon_status().is_some_and(|s| s.counters.writes >= 1)
    });
}

/// `polisd activity` shows what the daemon did, newest last, with the cause of each write;
/// `-f` keeps printing.
#[test]
fn activity_shows_each_write_with_its_cause_and_follows() {
    use std::io::Read;
    let p = four_citizens();
    let _daemon = p.start_daemon();
    let mut follower = harness::Killed::new(
        Command::new(harness::BIN)
            .args(["activity", "-f"])
            .current_dir(&p.root)
            .env("POLISD_STATE_DIR", &p.state_dir)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    let mut stdout = follower.child().stdout.take().unwrap();
    let followed = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let sink = followed.clone();
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = stdout.read(&mut buf) {
            if n == 0 {
                break;
            }
            sink.lock()
                .unwrap()
                .push_str(&String::from_utf8_lossy(&buf[..n]));
        }
    });
    Settled {
        id: "s1-done",
        opener: FOUNDER,
        owner: ALPHA,
        tags: &["rust"],
        settled_at: "2026-11-02 10:00:00",
        quality: Some(4),
        minutes: 30,
        body: "",
    }
    .settle_by_save(&p);
    // The entry is recorded just after the write it describes: wait for it.
    let activity = || -> Vec<serde_json::Value> {
        let out = p.polisd(&["activity", "--json"]);
        assert_eq!(out.status.code(), Some(0));
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let is_stats_write = |e: &serde_json::Value| {
        e["action"] == "wrote"
            && e["path"] == "contracts/routing_stats.yml"
            && e["cause"]
                .as_str()
                .is_some_and(|c| c.contains("contracts/settled/s1-done.md settled"))
    };
    wait_for(
        &p,
        "the stats write, with its cause, in the activity log",
        || activity().iter().any(is_stats_write),
    );
    let text = String::from_utf8_lossy(&p.polisd(&["activity"]).stdout).into_owned();
    assert!(
        text.contains(
            "wrote       contracts/routing_stats.yml: contracts/settled/s1-done.md settled"
        ),
        "{text}"
    );
    wait_for(&p, "activity -f to print the write", || {
        followed
            .lock()
            .unwrap()
            .contains("contracts/routing_stats.yml")
    });
}

#[test]
fn daemon_restart_restores_the_ledger_checking_fingerprints_and_distrusting_damage() {
    let p = four_citizens();
    let settled = |id: &'static str, owner, quality| Settled {
        id,
        opener: FOUNDER,
        owner,
        tags: &["rust"],
        settled_at: "2026-11-10 10:00:00",
        quality: Some(quality),
        minutes: 30,
        body: "",
    };
    settled("r0-restart", CHARLIE, 4).settle_by_save(&p);
    settled("r1-restart", ALPHA, 4).settle_by_save(&p);
    settled("r2-restart", BRAVO, 2).settle_by_save(&p);
    let daemon = p.start_daemon();
    wait_for_stats(&p, "stats of the first run");
    p.wait_for_ledger("contracts/settled/r2-restart.md");
    daemon.kill9();

    // While no daemon runs: an edit of the same size (only the fingerprint's mtime tells), a
    // new settlement and a removal.
    settled("r1-restart", ALPHA, 5).settle_by_save(&p);
    settled("r3-restart", CHARLIE, 3).settle_by_save(&p);
    fs::remove_file(p.path("contracts/settled/r2-restart.md")).unwrap();
    let daemon = p.start_daemon();
    let stats = wait_for_stats(&p, "stats after a restart with changes made meanwhile");
    assert!(stats.contains("avg_quality_score: 5.0"), "{stats}");
    assert!(!stats.contains(BRAVO), "{stats}");
    let log = daemon.log_text();
    assert_eq!(
        count_lines_containing(&log, "restored the ledger"),
        1,
        "{log}"
    );
    assert_eq!(count_lines_containing(&log, "is not used"), 0, "{log}");
    p.wait_for_ledger("contracts/settled/r3-restart.md");
    // r1 and r2 were there when polisd first met the polis: only r3 is news.
    wait_for(&p, "the opener told of r3", || {
        p.count(FOUNDER, "contract-settled") == 1
    });
    daemon.kill9();

    // A damaged snapshot (r0's owner changed inside it) is not trusted: one log line, every
    // file read again, the stats still a full reconcile's, no notice sent again.
    let ledger = p.polis_state_dir().join("settled.ledger");
    let mut bytes = fs::read(&ledger).unwrap();
    let at = bytes
        .windows(CHARLIE.len())
        .position(|w| w == CHARLIE.as_bytes())
        .expect("the snapshot names r0's owner");
    bytes[at] = b'C';
    fs::write(&ledger, bytes).unwrap();
    settled("r4-restart", ALPHA, 1).settle_by_save(&p);
    let daemon = p.start_daemon();
    let stats = wait_for_stats(&p, "stats after a restart with a damaged snapshot");
    assert!(stats.contains("avg_quality_score: 3.0"), "{stats}");
    let log = daemon.log_text();
    assert_eq!(count_lines_containing(&log, "is not used"), 1, "{log}");
    wait_for(&p, "the opener told of r4", || {
        p.count(FOUNDER, "contract-settled") == 2
    });
    chronicle_barrier(&p, 1);
    assert_eq!(p.count(FOUNDER, "contract-settled"), 2);
    assert_no_duplicate_markers(&p);
}
