//! Faults (issue 5 part 3) against the real `polisd run`: the disk refusing a write (a file-size
//! limit set on the running daemon with `prlimit`, which needs no mount and works without
//! root), an inotify queue overflow (the daemon is stopped with SIGSTOP while more events than
//! `fs.inotify.max_queued_events` pile up), `_polis/` deleted and restored, and the clock jumping
//! a month ahead (the `POLISD_FAKE_NOW_FILE` test hook, read at every pass). Plus a FIFO named
//! like a record, which once hung the daemon. Every effect is waited for with a deadline.

mod harness;

use harness::{chronicle_line, copy_tree, wait_until, TestPolis, BIN, DEADLINE};
use std::fs;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const FOUNDER: &str = "founder-one";
const ALPHA: &str = "alpha-agent";
const BRAVO: &str = "bravo-agent";
const CHARLIE: &str = "charlie-agent";

/// A daemon whose log goes through a pipe into memory: a file-size limit on the daemon must
/// not also silence its log (a pipe is not subject to RLIMIT_FSIZE).
struct Piped {
    child: Child,
    log: Arc<Mutex<String>>,
}

impl Piped {
    fn start(p: &TestPolis, envs: &[(&str, &Path)]) -> Piped {
        let d = Piped::spawn(p, envs);
        d.wait_log("the initial scan", "initial scan done", 1);
        d
    }

    /// Starts the daemon without waiting for its first pass.
    fn spawn(p: &TestPolis, envs: &[(&str, &Path)]) -> Piped {
        let config = p.dir.path().join("polisd.toml");
        fs::write(
            &config,
            "[watch]\ndebounce = \"50ms\"\n\n[log]\nlevel = \"debug\"\nformat = \"text\"\n\n[dashboard]\nlisten = \"127.0.0.1:0\"\n",
        )
        .unwrap();
        let mut cmd = Command::new(BIN);
        cmd.arg("run")
            .arg(&p.root)
            .arg("--config")
            .arg(&config)
            .env("POLISD_STATE_DIR", &p.state_dir)
            .env("NO_COLOR", "1")
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        for (k, v) in envs {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().unwrap();
        let log = Arc::new(Mutex::new(String::new()));
        let stderr = child.stderr.take().unwrap();
        let sink = log.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let mut l = sink.lock().unwrap();
                l.push_str(&line);
                l.push('\n');
            }
        });
        Piped { child, log }
    }

    fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// Waits until `needle` occurs at least `n` times in the log, the daemon alive.
    #[track_caller]
    fn wait_log(&self, what: &str, needle: &str, n: usize) {
        let pid = self.pid();
        wait_until(what, DEADLINE, || {
            assert!(alive(pid), "the daemon died:\n{}", self.log());
            self.log().matches(needle).count() >= n
        });
    }

    fn kill9(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Piped {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn alive(pid: i32) -> bool {
    // SAFETY: signal 0 checks for existence only; waitpid WNOHANG reaps nothing we still need
    // (the Child is waited on when dropped), and a zombie counts as dead.
    let mut status = 0;
    unsafe { libc::kill(pid, 0) == 0 && libc::waitpid(pid, &mut status, libc::WNOHANG) == 0 }
}

fn four_citizens() -> TestPolis {
    let p = TestPolis::init(FOUNDER);
    p.citizen(ALPHA, "openai", &[("rust", 4)], "low")
        .citizen(BRAVO, "google", &[("rust", 3)], "medium")
        .citizen(CHARLIE, "mistral", &[("ops", 4)], "high");
    for id in [ALPHA, BRAVO, CHARLIE] {
        p.append(
            "chronicle.md",
            &chronicle_line(id, "joined polis", "-", "hi"),
        );
    }
    p
}

fn settled(id: &str, opener: &str, owner: &str, tags: &[String]) -> String {
    format!(
        "---\ncontract_id: {id}\ntitle: Contract {id}\nopened_by: {opener}\nopened_at: 2026-11-01 09:00:00\n\
         owner: {owner}\nstatus: settled\nstakes: low\nrequired_tags: [{}]\nsettled_at: 2026-11-02 10:00:00\n\
         quality_score: 4\nactual_minutes: 30\n---\n\nDone.\n",
        tags.join(", ")
    )
}

fn temp_files(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).into_iter().flatten().flatten() {
            let name = e.file_name().to_string_lossy().to_string();
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(e.path());
            } else if name.starts_with(".polisd-") && name.ends_with(".tmp") {
                out.push(e.path());
            }
        }
    }
    out
}

fn set_fsize_limit(pid: i32, bytes: Option<u64>) {
    let limit = libc::rlimit {
        rlim_cur: bytes.unwrap_or(libc::RLIM_INFINITY),
        rlim_max: libc::RLIM_INFINITY,
    };
    // SAFETY: a valid rlimit for an existing child process; no old value is requested.
    let r = unsafe { libc::prlimit(pid, libc::RLIMIT_FSIZE, &limit, std::ptr::null_mut()) };
    assert_eq!(r, 0, "prlimit: {}", std::io::Error::last_os_error());
}

// ---------------------------------------------------------------------------------------------

/// The disk refuses the new `routing_stats.yml` (EFBIG under a file-size limit, as ENOSPC on a
/// full disk): the old file stays intact, no temporary file is left, the daemon lives on, and
/// once space returns the write happens without any further change to the folder.
#[test]
fn fault_disk_full_old_file_intact_and_written_when_space_returns() {
    let p = four_citizens();
    fs::create_dir_all(p.path("contracts/settled")).unwrap();
    let d = Piped::start(&p, &[]);
    d.wait_log("the first reconcile", "initial scan done", 1);
    let old = p.read("contracts/routing_stats.yml");
    assert!(old.len() < 4096, "{old}");

    set_fsize_limit(d.pid(), Some(16 * 1024));
    // Twenty settlements with ten tags each: the new stats file is far over 16 KiB, while the
    // state file and the inboxes stay under it.
    for i in 0..20 {
        let tags: Vec<String> = (0..10).map(|t| format!("tag-{i}-{t}")).collect();
        p.save(
            &format!("contracts/settled/big-{i:02}.md"),
            &settled(&format!("big-{i:02}"), FOUNDER, ALPHA, &tags),
        );
    }
    d.wait_log("the failed write in the log", "os error 27", 1);
    assert_eq!(
        p.read("contracts/routing_stats.yml"),
        old,
        "old file intact"
    );
    assert!(temp_files(&p.root).is_empty(), "{:?}", temp_files(&p.root));
    // It keeps retrying on its own, and keeps failing while the limit holds.
    d.wait_log("a retry", "retrying after a failed pass", 2);
    assert_eq!(p.read("contracts/routing_stats.yml"), old);

    set_fsize_limit(d.pid(), None);
    let expected = p.expected_stats();
    assert!(expected.len() > 16 * 1024);
    wait_until("the stats written once space returned", DEADLINE, || {
        assert!(alive(d.pid()), "the daemon died:\n{}", d.log());
        p.read("contracts/routing_stats.yml") == expected
    });
    assert!(temp_files(&p.root).is_empty(), "{:?}", temp_files(&p.root));
    // The settlements' notices went out too, once each.
    wait_until("the contract-settled notices", DEADLINE, || {
        p.count(FOUNDER, "contract-settled") == 20
    });
    harness::markers_in(FOUNDER, &p.read(&format!("citizens/{FOUNDER}/inbox.md")))
        .iter()
        .fold(std::collections::BTreeSet::new(), |mut seen, m| {
            assert!(seen.insert(m.clone()), "sent twice: {m:?}");
            seen
        });
}

/// More events than the kernel queue holds (the daemon stopped with SIGSTOP meanwhile), and a
/// settlement among the lost ones: the overflow makes a rescan, which finds the settlement.
#[test]
fn fault_inotify_overflow_rescan_finds_the_lost_change() {
    let max: usize = fs::read_to_string("/proc/sys/fs/inotify/max_queued_events")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(16384);
    let p = four_citizens();
    // The flooded folder exists before the daemon starts, so it is watched and every file
    // created in it queues a kernel event (a folder made while the daemon is stopped would not
    // be watched yet, and its files would queue nothing). Temporary names: only the kernel
    // queue sees them.
    let flood = p.path("lessons/flood");
    fs::create_dir_all(&flood).unwrap();
    let d = Piped::start(&p, &[]);
    d.wait_log("the first pass", "initial scan done", 1);
    // SAFETY: stopping and continuing our own child.
    assert_eq!(unsafe { libc::kill(d.pid(), libc::SIGSTOP) }, 0);
    for i in 0..max + 1000 {
        fs::File::create(flood.join(format!("f{i}.tmp"))).unwrap();
    }
    let c = settled("after-flood", FOUNDER, BRAVO, &["rust".to_string()]);
    p.save("contracts/settled/after-flood.md", &c);
    assert_eq!(unsafe { libc::kill(d.pid(), libc::SIGCONT) }, 0);
    d.wait_log("an overflow rescan", "Overflow", 1);
    let start = std::time::Instant::now();
    while !p.read("contracts/routing_stats.yml").contains(BRAVO) {
        assert!(alive(d.pid()), "the daemon died:\n{}", d.log());
        let log = d.log();
        let tail: Vec<&str> = log.lines().rev().take(30).collect();
        assert!(
            start.elapsed() < DEADLINE,
            "timed out waiting for the settlement to be reconciled; log (newest first):\n{}",
            tail.join("\n")
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert_eq!(p.read("contracts/routing_stats.yml"), p.expected_stats());
    wait_until("the opener told of the settlement", DEADLINE, || {
        p.count(FOUNDER, "contract-settled") == 1
    });
    fs::remove_dir_all(&flood).unwrap();
}

/// `_polis/` deleted (as by a careless `rm -rf` or a sync tool) and restored from a copy: the
/// daemon keeps running, notices the return and reacts to changes again.
#[test]
fn fault_polis_deleted_and_restored_watching_resumes() {
    let p = four_citizens();
    let d = Piped::start(&p, &[]);
    let backup = p.dir.path().join("backup");
    copy_tree(&p.root, &backup);
    fs::remove_dir_all(&p.root).unwrap();
    d.wait_log("the removal noticed", "PolisRemoved", 1);
    copy_tree(&backup, &p.root);
    d.wait_log("the return noticed", "PolisRecreated", 1);
    // Reacting again: an invalid line draws its notice.
    p.append(
        "chronicle.md",
        &format!("- {} | {ALPHA} | broken line\n", harness::chronicle_stamp()),
    );
    wait_until("the finding notice after the restore", DEADLINE, || {
        assert!(alive(d.pid()), "the daemon died:\n{}", d.log());
        p.count(ALPHA, "chronicle-finding") == 1
    });
    // And a settlement is reconciled.
    p.save(
        "contracts/settled/after-restore.md",
        &settled("after-restore", FOUNDER, CHARLIE, &["ops".to_string()]),
    );
    wait_until("the settlement after the restore", DEADLINE, || {
        p.read("contracts/routing_stats.yml").contains(CHARLIE)
    });
}

/// The clock jumps a month ahead (a laptop asleep for a month): the amendment expires and the
/// claimed contract goes stale — each once, across more passes and a SIGKILL/restart.
#[test]
fn fault_clock_jump_a_month_expiries_happen_once() {
    let p = four_citizens();
    let now = chrono::Utc::now();
    let in_three_days = (now + chrono::Duration::days(3)).format("%Y-%m-%d");
    let stamp = now.format("%Y-%m-%d %H:%M:%S");
    p.save(
        "amendments/proposed/2026-11-01-month-rule.md",
        &format!(
            "---\namendment_id: 2026-11-01-month-rule\ntitle: Month rule\nproposed_by: {ALPHA}\n\
             proposed_at: {stamp}\nstatus: proposed\nquorum_required: 4\nvotes:\n  agree: []\n  \
             disagree: []\n  abstain: []\n  request_changes: []\nratified_at: null\n\
             expires_at: {in_three_days}\n---\n\n## Proposal\n\nA rule.\n"
        ),
    );
    p.save(
        "contracts/open/long-job.md",
        &format!(
            "---\ncontract_id: long-job\ntitle: Long job\nopened_by: {FOUNDER}\nopened_at: {stamp}\n\
             owner: {BRAVO}\nstatus: claimed\nstakes: low\nrequired_tags: [rust]\n---\n\n## Intent\n\nLong.\n"
        ),
    );
    let fake = p.dir.path().join("fake-now");
    let d = Piped::start(&p, &[("POLISD_FAKE_NOW_FILE", fake.as_path())]);
    assert_eq!(
        p.read("amendments/proposed/2026-11-01-month-rule.md")
            .matches("status: proposed")
            .count(),
        1
    );
    let later = now + chrono::Duration::days(31);
    fs::write(&fake, later.to_rfc3339()).unwrap();
    // Any change makes a pass (the hourly tick would too).
    let nudge = |n: usize| {
        p.save(
            &format!("citizens/{CHARLIE}/status.md"),
            &format!("---\nagent_id: {CHARLIE}\nstate: idle\nlast_active: {n}\n---\n"),
        );
    };
    nudge(1);
    wait_until("the amendment to expire", DEADLINE, || {
        assert!(alive(d.pid()), "the daemon died:\n{}", d.log());
        p.read("amendments/proposed/2026-11-01-month-rule.md")
            .contains("status: expired")
            && p.count(ALPHA, "amendment-expired") == 1
            && p.count(BRAVO, "contract-stale") == 1
    });
    nudge(2);
    d.kill9();
    let d = Piped::start(&p, &[("POLISD_FAKE_NOW_FILE", fake.as_path())]);
    nudge(3);
    // A barrier: an invalid line's notice shows the passes after the restart are done.
    p.append(
        "chronicle.md",
        &format!(
            "- {} | {ALPHA} | broken line\n",
            later.format("%Y-%m-%d %H:%M")
        ),
    );
    wait_until("the barrier notice", DEADLINE, || {
        assert!(alive(d.pid()), "the daemon died:\n{}", d.log());
        p.count(ALPHA, "chronicle-finding") == 1
    });
    let chronicle = p.read("chronicle.md");
    assert_eq!(
        chronicle.matches("| expired amendment |").count(),
        1,
        "{chronicle}"
    );
    assert_eq!(p.count(ALPHA, "amendment-expired"), 1);
    assert_eq!(p.count(BRAVO, "contract-stale"), 1);
    assert!(p
        .read("chronicle.md")
        .contains(&later.format("%Y-%m-%d").to_string()));
}

/// Regression: a FIFO named like a record made the daemon's own-write check open it for
/// reading, which blocks until a writer comes: the daemon hung for good.
#[test]
fn fault_fifo_named_like_a_record_does_not_block_the_daemon() {
    let p = four_citizens();
    let d = Piped::start(&p, &[]);
    for rel in ["contracts/open/pipe.md", "contracts/settled/pipe.md"] {
        let path = p.path(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    }
    p.append(
        "chronicle.md",
        &format!("- {} | {ALPHA} | broken line\n", harness::chronicle_stamp()),
    );
    wait_until("the notice after the FIFOs", DEADLINE, || {
        assert!(alive(d.pid()), "the daemon died:\n{}", d.log());
        p.count(ALPHA, "chronicle-finding") == 1
    });
    assert!(d.log().contains("contracts/open/pipe.md"), "{}", d.log());
}

/// Regression: a backlog of notices (after downtime) was only recorded as delivered when the
/// whole outbox was done, so a daemon killed during a long delivery re-checked every inbox from
/// the top after each restart (with frequent kills it never got through, as the torture soak
/// showed). Progress is now saved as the outbox drains; each notice still goes out once.
#[test]
fn fault_kill9_during_a_long_delivery_resumes_where_it_was() {
    const N: usize = 1200;
    let p = four_citizens();
    fs::create_dir_all(p.path("contracts/settled")).unwrap();
    // Met once (the baseline), then down while the backlog piles up: the next start finds all
    // of it in one pass and queues every notice at once.
    Piped::start(&p, &[]).kill9();
    for i in 0..N {
        p.save(
            &format!("contracts/settled/s-{i:04}.md"),
            &settled(&format!("s-{i:04}"), FOUNDER, ALPHA, &["rust".to_string()]),
        );
    }
    let d = Piped::spawn(&p, &[]);
    let state = p.polis_state_dir().join("state.json");
    let outbox_len = || -> Option<usize> {
        let json: serde_json::Value = serde_json::from_slice(&fs::read(&state).ok()?).ok()?;
        json["outbox"].as_array().map(Vec::len)
    };
    // Saved only before and after the delivery, the outbox would read N, then 0: a length in
    // between is a checkpoint.
    wait_until(
        "a checkpoint of the draining outbox",
        Duration::from_secs(60),
        || {
            assert!(alive(d.pid()), "the daemon died:\n{}", d.log());
            outbox_len().is_some_and(|n| n > 0 && n < N)
        },
    );
    d.kill9();
    let saved = outbox_len().unwrap();
    let delivered = p.count(FOUNDER, "contract-settled");
    assert!(
        delivered >= N - saved,
        "the checkpoint claims {} delivered, the inbox holds {delivered}",
        N - saved
    );
    let d = Piped::start(&p, &[]);
    wait_until(
        "every settlement told once",
        Duration::from_secs(120),
        || {
            assert!(alive(d.pid()), "the daemon died:\n{}", d.log());
            p.count(FOUNDER, "contract-settled") >= N
        },
    );
    assert_eq!(p.count(FOUNDER, "contract-settled"), N);
    harness::markers_in(FOUNDER, &p.read(&format!("citizens/{FOUNDER}/inbox.md")))
        .iter()
        .fold(std::collections::BTreeSet::new(), |mut seen, m| {
            assert!(seen.insert(m.clone()), "sent twice: {m:?}");
            seen
        });
}
