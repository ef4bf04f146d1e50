//! Faults against the real `polisd run`: the disk refusing a write (a file-size
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
        Piped::spawn_with(p, envs, "", None)
    }

    /// [`Piped::spawn`] with more `[watch]` settings, and as another user when `uid` is given.
    fn spawn_with(p: &TestPolis, envs: &[(&str, &Path)], watch: &str, uid: Option<u32>) -> Piped {
        let config = p.dir.path().join("polisd.toml");
        fs::write(
            &config,
            format!(
                "[watch]\ndebounce = \"50ms\"\n{watch}\n[log]\nlevel = \"debug\"\nformat = \"text\"\n\n[dashboard]\nlisten = \"127.0.0.1:0\"\n"
            ),
        )
        .unwrap();
        let mut cmd = Command::new(match uid {
            Some(_) => harness::bin_for_others(p.dir.path()),
            None => PathBuf::from(BIN),
        });
        if let Some(uid) = uid {
            use std::os::unix::process::CommandExt;
            cmd.uid(uid).gid(uid);
        }
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
        let start = std::time::Instant::now();
        while self.log().matches(needle).count() < n {
            assert!(alive(pid), "the daemon died:\n{}", self.log());
            if start.elapsed() > DEADLINE {
                let log = self.log();
                let lines: Vec<&str> = log.lines().collect();
                panic!(
                    "timed out after {DEADLINE:?} waiting for: {what}\n--- log (end) ---\n{}",
                    lines[lines.len().saturating_sub(40)..].join("\n")
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
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
    // Twenty settlements with eighty tags each: the stats of even one of them are over 16 KiB
    // (so a pass that sees only the first few, on a loaded machine, fails the same way), while
    // the state file and the inboxes stay under it.
    for i in 0..20 {
        let tags: Vec<String> = (0..80).map(|t| format!("tag-{i}-{t}")).collect();
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
    // of it in one pass and queues every notice at once: the first half for the founder, the
    // second for bravo.
    Piped::start(&p, &[]).kill9();
    for i in 0..N {
        let opener = if i < N / 2 { FOUNDER } else { BRAVO };
        p.save(
            &format!("contracts/settled/s-{i:04}.md"),
            &settled(&format!("s-{i:04}"), opener, ALPHA, &["rust".to_string()]),
        );
    }
    // Bravo's inbox is locked (as another appender holding it would): the delivery stops in
    // the middle, after the founder's notices, and stays there until the kill.
    let held = fs::File::open(p.path(&format!("citizens/{BRAVO}/inbox.md"))).unwrap();
    fs4::fs_std::FileExt::lock_exclusive(&held).unwrap();
    let d = Piped::spawn(&p, &[]);
    let state = p.polis_state_dir().join("state.json");
    let outbox_len = || -> Option<usize> {
        let json: serde_json::Value = serde_json::from_slice(&fs::read(&state).ok()?).ok()?;
        json["outbox"].as_array().map(Vec::len)
    };
    wait_until(
        "the delivery waiting for bravo's inbox",
        Duration::from_secs(120),
        || {
            assert!(alive(d.pid()), "the daemon died:\n{}", d.log());
            waits_for_a_lock(d.pid())
        },
    );
    d.kill9();
    drop(held);
    // Saved only before and after the delivery, the outbox would read N, then 0: a length in
    // between is a checkpoint.
    let saved = outbox_len().expect("a saved outbox");
    assert!(
        saved > 0 && saved < N,
        "no checkpoint: the outbox saved holds {saved}"
    );
    let delivered = p.count(FOUNDER, "contract-settled");
    assert_eq!(
        delivered,
        N / 2,
        "the founder's notices, all before bravo's"
    );
    assert!(
        delivered >= N - saved,
        "the checkpoint claims {} delivered, the inbox holds {delivered}",
        N - saved
    );
    assert_eq!(p.count(BRAVO, "contract-settled"), 0);
    let d = Piped::spawn(&p, &[]);
    wait_until("every settlement told once", DEADLINE, || {
        assert!(alive(d.pid()), "the daemon died:\n{}", d.log());
        p.count(BRAVO, "contract-settled") >= N / 2
    });
    for who in [FOUNDER, BRAVO] {
        assert_eq!(p.count(who, "contract-settled"), N / 2, "{who}");
        harness::markers_in(who, &p.read(&format!("citizens/{who}/inbox.md")))
            .iter()
            .fold(std::collections::BTreeSet::new(), |mut seen, m| {
                assert!(seen.insert(m.clone()), "sent twice: {m:?}");
                seen
            });
    }
}

/// Whether process `pid` waits for an advisory lock another process holds (a `->` line of
/// its own in `/proc/locks`).
fn waits_for_a_lock(pid: i32) -> bool {
    fs::read_to_string("/proc/locks").is_ok_and(|locks| {
        locks.lines().any(|l| {
            let mut fields = l.split_whitespace().skip(1);
            fields.next() == Some("->") && fields.nth(3) == Some(pid.to_string().as_str())
        })
    })
}

// ---------------------------------------------------------------------------------------------
// Second round: half-written files, links out, restored folders, a second daemon.

/// Writes `head`, pauses, then writes `tail` on the same open file (`O_TRUNC`), as an agent
/// streaming its output into a file does. Returns whether the path still named the inode
/// being written when the writer closed it (polisd's rename would have replaced it).
fn write_in_two_steps(path: &Path, head: &str, tail: &str, pause: Duration) -> bool {
    use std::io::Write;
    use std::os::unix::fs::MetadataExt;
    let mut f = fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)
        .unwrap();
    f.write_all(head.as_bytes()).unwrap();
    // The agent's own pause, not a wait for polisd.
    std::thread::sleep(pause);
    f.write_all(tail.as_bytes()).unwrap();
    let ino = f.metadata().unwrap().ino();
    let same = fs::symlink_metadata(path).is_ok_and(|m| m.ino() == ino);
    drop(f);
    same
}

/// Whether the kernel grants a read lease on a file in `dir` (Linux, a local file system).
fn leases_work(dir: &Path) -> bool {
    use std::os::fd::AsRawFd;
    let path = dir.join(".lease-probe.tmp");
    fs::write(&path, "probe").unwrap();
    let f = fs::File::open(&path).unwrap();
    // SAFETY: fcntl on a descriptor we own, no pointers.
    let ok = unsafe { libc::fcntl(f.as_raw_fd(), libc::F_SETLEASE, libc::F_RDLCK) } == 0;
    drop(f);
    let _ = fs::remove_file(&path);
    ok
}

/// About `n` bytes of body text, numbered so a lost part shows.
fn body_text(n: usize) -> String {
    let mut out = String::new();
    let mut i = 0;
    while out.len() < n {
        out.push_str(&format!("Line {i} of the part written after the pause.\n"));
        i += 1;
    }
    out
}

/// SPEC §11, an agent writes a contract (or an amendment ratifiable from its
/// first half) in two steps with a pause of 0.1–3 s. polisd routes (or ratifies and moves) only
/// after the writer closed the file, and every byte the agent wrote survives.
#[test]
fn fault_half_written_files_are_edited_only_after_the_writer_closes() {
    let p = four_citizens();
    // Where the file system grants no lease (some overlay or network mounts), only the
    // stability window protects a writer that pauses: make it longer than the longest pause.
    let watch = if leases_work(&p.root) {
        ""
    } else {
        println!("no file leases on this file system: testing the stability window alone");
        "stability = \"5s\"\n"
    };
    let d = Piped::spawn_with(&p, &[], watch, None);
    d.wait_log("the initial scan", "initial scan done", 1);
    let pauses = [100u64, 500, 1500, 3000];
    let tail = body_text(1387);
    let mut writers = Vec::new();
    for (i, ms) in pauses.iter().enumerate() {
        let path = p.path(&format!("contracts/open/half-{i}.md"));
        let head = format!(
            "---\ncontract_id: half-{i}\ntitle: Half {i}\nopened_by: {FOUNDER}\nopened_at: 2026-11-01 09:00:00\n\
             owner: null\nstatus: proposed\nstakes: low\nrequired_tags: [rust]\nrouting:\n  \
             recommended_by_router: null\n  recommendation_score: null\n  exploration: null\n---\n\n\
             ## Intent\n\nThe first part.\n"
        );
        let (tail, ms) = (tail.clone(), *ms);
        writers.push(std::thread::spawn(move || {
            write_in_two_steps(&path, &head, &tail, Duration::from_millis(ms))
        }));
    }
    let amendment_tail = body_text(1258);
    let amendment = {
        let path = p.path("amendments/proposed/2026-11-01-half.md");
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        let head = format!(
            "---\namendment_id: 2026-11-01-half\ntitle: Half\nproposed_by: {ALPHA}\n\
             proposed_at: 2026-11-01 09:00:00\nstatus: proposed\nquorum_required: 2\nvotes:\n  \
             agree: [{ALPHA}, {BRAVO}]\n  disagree: []\n  abstain: []\n  request_changes: []\n\
             ratified_at: null\n---\n\n## Proposal\n\nThe first part.\n"
        );
        let tail = amendment_tail.clone();
        std::thread::spawn(move || {
            write_in_two_steps(&path, &head, &tail, Duration::from_millis(1500))
        })
    };
    for (w, ms) in writers.into_iter().zip(pauses) {
        assert!(
            w.join().unwrap(),
            "the contract written with a {ms} ms pause was replaced while still open"
        );
    }
    assert!(
        amendment.join().unwrap(),
        "the amendment was edited or moved while still open"
    );
    for (i, ms) in pauses.iter().enumerate() {
        let rel = format!("contracts/open/half-{i}.md");
        wait_until(&format!("{rel} routed"), DEADLINE, || {
            assert!(alive(d.pid()), "the daemon died:\n{}", d.log());
            !p.read(&rel).contains("recommended_by_router: null")
        });
        let text = p.read(&rel);
        assert!(
            text.contains("The first part.\n") && text.ends_with(&tail),
            "{ms} ms pause: the agent's bytes are not all there:\n{text}"
        );
    }
    let ratified = "amendments/ratified/2026-11-01-half.md";
    wait_until("the amendment ratified and moved", DEADLINE, || {
        assert!(alive(d.pid()), "the daemon died:\n{}", d.log());
        p.read(ratified).contains("status: ratified")
    });
    let text = p.read(ratified);
    assert!(
        text.contains("The first part.\n") && text.ends_with(&amendment_tail),
        "the amendment lost bytes:\n{text}"
    );
    assert!(!p.exists("amendments/proposed/2026-11-01-half.md"));
    assert_eq!(
        p.read("chronicle.md")
            .matches("| ratified amendment |")
            .count(),
        1
    );
}

/// A second `polisd run` on the same polis with another state directory
/// (another user config, a container) does not start, because the `_polis/` folder itself is
/// locked; each invalid line draws one notice, not two.
#[test]
fn fault_second_daemon_with_another_state_dir_stands_aside() {
    let p = four_citizens();
    let d = Piped::start(&p, &[]);
    let other_state = p.dir.path().join("state-two");
    let mut second = Piped::spawn(&p, &[("POLISD_STATE_DIR", other_state.as_path())]);
    wait_until("the second daemon to exit", DEADLINE, || {
        matches!(second.child.try_wait(), Ok(Some(_)))
    });
    let status = second.child.wait().unwrap();
    assert!(!status.success());
    // The reader thread may not have drained the exited daemon's stderr yet.
    wait_until("the second daemon's refusal in its log", DEADLINE, || {
        second.log().contains("another polisd already watches")
    });
    for i in 0..12 {
        p.append(
            "chronicle.md",
            &format!(
                "- {} | {ALPHA} | broken line {i}\n",
                harness::chronicle_stamp()
            ),
        );
    }
    wait_until("twelve notices", DEADLINE, || {
        assert!(alive(d.pid()), "the daemon died:\n{}", d.log());
        p.count(ALPHA, "chronicle-finding") >= 12
    });
    // A barrier after them: the thirteenth shows every pass on the twelve is done.
    p.append(
        "chronicle.md",
        &format!(
            "- {} | {ALPHA} | broken barrier\n",
            harness::chronicle_stamp()
        ),
    );
    wait_until("the barrier notice", DEADLINE, || {
        p.count(ALPHA, "chronicle-finding") >= 13
    });
    assert_eq!(p.count(ALPHA, "chronicle-finding"), 13);
}

/// An `inbox.md` hard-linked to a file outside the polis is never written;
/// the daemon says so, and the notice waits until the inbox is a plain file again.
#[test]
fn fault_hard_linked_inbox_is_never_written() {
    let p = four_citizens();
    let d = Piped::start(&p, &[]);
    let outside = p.dir.path().join("outside-notes.md");
    fs::write(&outside, "someone else's notes\n").unwrap();
    let inbox = p.path(&format!("citizens/{ALPHA}/inbox.md"));
    let original = fs::read(&inbox).unwrap();
    fs::remove_file(&inbox).unwrap();
    fs::hard_link(&outside, &inbox).unwrap();
    p.append(
        "chronicle.md",
        &format!("- {} | {ALPHA} | broken line\n", harness::chronicle_stamp()),
    );
    d.wait_log("the refusal logged", "hard links", 1);
    assert_eq!(
        fs::read_to_string(&outside).unwrap(),
        "someone else's notes\n"
    );
    // A plain single-link inbox again: the notice that waited goes out, once.
    fs::remove_file(&inbox).unwrap();
    fs::write(&inbox, &original).unwrap();
    wait_until("the notice once the inbox is plain", DEADLINE, || {
        assert!(alive(d.pid()), "the daemon died:\n{}", d.log());
        p.count(ALPHA, "chronicle-finding") == 1
    });
    assert_eq!(
        fs::read_to_string(&outside).unwrap(),
        "someone else's notes\n"
    );
    assert_eq!(d.log().matches("hard links").count(), 1, "reported once");
}

/// `Contracts/settled` replaced by a link to a folder outside the
/// polis is not entered, at once or after a restart's full scan; the link is a finding.
#[test]
fn fault_symlinked_settled_folder_is_not_entered() {
    let p = four_citizens();
    fs::create_dir_all(p.path("contracts/settled")).unwrap();
    let d = Piped::start(&p, &[]);
    let before = p.read("contracts/routing_stats.yml");
    let outside = p.dir.path().join("elsewhere");
    fs::create_dir_all(&outside).unwrap();
    for i in 0..5 {
        fs::write(
            outside.join(format!("out-{i}.md")),
            settled(&format!("out-{i}"), FOUNDER, CHARLIE, &["ops".to_string()]),
        )
        .unwrap();
    }
    fs::remove_dir_all(p.path("contracts/settled")).unwrap();
    std::os::unix::fs::symlink(&outside, p.path("contracts/settled")).unwrap();
    d.wait_log("the link reported", "symbolic link to a folder", 1);
    let barrier = |d: &Piped, n: usize| {
        p.append(
            "chronicle.md",
            &format!(
                "- {} | {ALPHA} | broken line {n}\n",
                harness::chronicle_stamp()
            ),
        );
        wait_until("the barrier notice", DEADLINE, || {
            assert!(alive(d.pid()), "the daemon died:\n{}", d.log());
            p.count(ALPHA, "chronicle-finding") == n
        });
    };
    barrier(&d, 1);
    d.kill9();
    let d = Piped::start(&p, &[]);
    barrier(&d, 2);
    assert_eq!(p.read("contracts/routing_stats.yml"), before);
    assert!(!p.read("contracts/routing_stats.yml").contains(CHARLIE));
    assert_eq!(p.count(FOUNDER, "contract-settled"), 0);
}

/// `Routing_stats.yml` blocked by a folder (then by a link) is refused; once
/// the blocker is removed, the stats are rebuilt without waiting for another settlement.
#[test]
fn fault_stats_file_rebuilt_once_the_blocker_is_removed() {
    let p = four_citizens();
    fs::create_dir_all(p.path("contracts/settled")).unwrap();
    p.save(
        "contracts/settled/first.md",
        &settled("first", FOUNDER, ALPHA, &["rust".to_string()]),
    );
    let d = Piped::start(&p, &[]);
    let stats = "contracts/routing_stats.yml";
    wait_until("the first stats", DEADLINE, || {
        p.read(stats).contains(ALPHA)
    });
    let outside = p.dir.path().join("outside-stats.yml");
    fs::write(&outside, "not yours\n").unwrap();
    for (round, blocker) in ["folder", "link"].iter().enumerate() {
        fs::remove_file(p.path(stats)).unwrap();
        match *blocker {
            "folder" => fs::create_dir(p.path(stats)).unwrap(),
            _ => std::os::unix::fs::symlink(&outside, p.path(stats)).unwrap(),
        }
        let owner = [BRAVO, CHARLIE][round];
        p.save(
            &format!("contracts/settled/blocked-{round}.md"),
            &settled(
                &format!("blocked-{round}"),
                FOUNDER,
                owner,
                &["rust".to_string()],
            ),
        );
        d.wait_log("the refusal", "reconcile:", round + 1);
        match *blocker {
            "folder" => fs::remove_dir(p.path(stats)).unwrap(),
            _ => fs::remove_file(p.path(stats)).unwrap(),
        }
        wait_until(
            &format!("the stats rebuilt after the {blocker}"),
            DEADLINE,
            || {
                assert!(alive(d.pid()), "the daemon died:\n{}", d.log());
                p.read(stats).contains(owner)
            },
        );
        assert_eq!(p.read(stats), p.expected_stats());
    }
    assert_eq!(fs::read_to_string(&outside).unwrap(), "not yours\n");
}

/// Recursively gives `path` to `uid` (without following links).
fn chown_tree(path: &Path, uid: u32) {
    std::os::unix::fs::lchown(path, Some(uid), Some(uid)).unwrap();
    if fs::symlink_metadata(path).unwrap().is_dir() {
        for e in fs::read_dir(path).unwrap().flatten() {
            chown_tree(&e.path(), uid);
        }
    }
}

/// A settled contract the daemon cannot read is reported; once it is made
/// readable (`chown` + `chmod`, which change neither its size nor its mtime) it is counted.
/// As root the daemon runs as `nobody`, so that "unreadable" means something.
#[test]
fn fault_settled_file_made_readable_is_counted() {
    use std::os::unix::fs::PermissionsExt;
    let p = four_citizens();
    fs::create_dir_all(p.path("contracts/settled")).unwrap();
    p.save(
        "contracts/settled/open-one.md",
        &settled("open-one", FOUNDER, BRAVO, &["rust".to_string()]),
    );
    let secret = p.path("contracts/settled/secret.md");
    fs::write(
        &secret,
        settled("secret", FOUNDER, CHARLIE, &["ops".to_string()]),
    )
    .unwrap();
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    const NOBODY: u32 = 65534;
    let uid = if root {
        chown_tree(p.dir.path(), NOBODY);
        std::os::unix::fs::lchown(&secret, Some(0), Some(0)).unwrap();
        fs::set_permissions(&secret, fs::Permissions::from_mode(0o600)).unwrap();
        Some(NOBODY)
    } else {
        fs::set_permissions(&secret, fs::Permissions::from_mode(0o000)).unwrap();
        None
    };
    let d = Piped::spawn_with(&p, &[], "", uid);
    d.wait_log("the initial scan", "initial scan done", 1);
    d.wait_log("the unreadable file reported", "secret.md", 1);
    assert!(!p.read("contracts/routing_stats.yml").contains(CHARLIE));
    if root {
        std::os::unix::fs::lchown(&secret, Some(NOBODY), Some(NOBODY)).unwrap();
    }
    fs::set_permissions(&secret, fs::Permissions::from_mode(0o644)).unwrap();
    wait_until("the readable file counted", DEADLINE, || {
        assert!(alive(d.pid()), "the daemon died:\n{}", d.log());
        p.read("contracts/routing_stats.yml").contains(CHARLIE)
    });
    assert_eq!(p.read("contracts/routing_stats.yml"), p.expected_stats());
}

/// Every file under `dir`, relative, in the byte order `git checkout` writes them.
fn files_in_checkout_order(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![PathBuf::new()];
    while let Some(rel) = stack.pop() {
        for e in fs::read_dir(dir.join(&rel)).unwrap().flatten() {
            let child = rel.join(e.file_name());
            if e.file_type().unwrap().is_dir() {
                stack.push(child);
            } else {
                out.push(child);
            }
        }
    }
    out.sort_by(|a, b| {
        a.as_os_str()
            .as_encoded_bytes()
            .cmp(b.as_os_str().as_encoded_bytes())
    });
    out
}

/// `Rm -rf _polis`, then a restore file by file in checkout order
/// (`chronicle.md` before `citizens/`) from a copy holding one new invalid line. The line's
/// author hears of it once; the contracts settled before polisd came draw no notice; the stats
/// file is not rewritten from a half-restored folder.
#[test]
fn fault_polis_restored_file_by_file_notices_once() {
    let p = four_citizens();
    fs::create_dir_all(p.path("contracts/settled")).unwrap();
    for i in 0..6 {
        // No quality: each would also draw `quality-defaulted` if announced.
        let mut c = settled(&format!("old-{i}"), FOUNDER, ALPHA, &["rust".to_string()]);
        c = c.replace("quality_score: 4\n", "");
        p.save(&format!("contracts/settled/old-{i}.md"), &c);
    }
    let d = Piped::spawn_with(&p, &[], "stability = \"1s\"\n", None);
    d.wait_log("the initial scan", "initial scan done", 1);
    let backup = p.dir.path().join("backup");
    copy_tree(&p.root, &backup);
    {
        use std::io::Write;
        let mut f = fs::OpenOptions::new()
            .append(true)
            .open(backup.join("chronicle.md"))
            .unwrap();
        writeln!(
            f,
            "- {} | {ALPHA} | broken line",
            harness::chronicle_stamp()
        )
        .unwrap();
    }
    // The daemon may still be writing (a notice, the stats) while the folder goes: a file it
    // creates mid-removal leaves the folder not empty, so remove until it is gone.
    wait_until("the polis removed", DEADLINE, || {
        fs::remove_dir_all(&p.root).is_ok() || !p.root.exists()
    });
    d.wait_log("the removal noticed", "PolisRemoved", 1);
    let writes_before = d.log().matches("routing_stats.yml rebuilt").count();
    for rel in files_in_checkout_order(&backup) {
        let to = p.root.join(&rel);
        fs::create_dir_all(to.parent().unwrap()).unwrap();
        fs::copy(backup.join(&rel), &to).unwrap();
        // A checkout's pace: files land a few milliseconds apart.
        std::thread::sleep(Duration::from_millis(5));
    }
    wait_until("the finding told to its author", DEADLINE, || {
        assert!(alive(d.pid()), "the daemon died:\n{}", d.log());
        p.count(ALPHA, "chronicle-finding") == 1
    });
    // A barrier: a second invalid line's notice shows the passes after the restore are done.
    p.append(
        "chronicle.md",
        &format!("- {} | {BRAVO} | broken line\n", harness::chronicle_stamp()),
    );
    wait_until("the barrier notice", DEADLINE, || {
        p.count(BRAVO, "chronicle-finding") == 1
    });
    assert_eq!(p.count(ALPHA, "chronicle-finding"), 1);
    assert_eq!(p.count(FOUNDER, "contract-settled"), 0);
    assert_eq!(p.count(ALPHA, "quality-defaulted"), 0);
    let writes = d.log().matches("routing_stats.yml rebuilt").count() - writes_before;
    eprintln!("routing_stats.yml written {writes} times during and after the restore");
    assert!(
        writes <= 1,
        "routing_stats.yml written {writes} times during the restore"
    );
    assert_eq!(p.read("contracts/routing_stats.yml"), p.expected_stats());
}

/// `_polis/` deleted and a backup renamed into its place in one step (`mv backup _polis`, as a
/// restore tool does). The whole restored folder is validated again: a broken line in the middle
/// of the chronicle and an open contract with findings, both new to this daemon, are told once
/// each; a finding told before the removal is not told again.
#[test]
fn fault_polis_restored_by_rename_is_revalidated_and_each_finding_told_once() {
    let p = four_citizens();
    let d = Piped::start(&p, &[]);
    p.append(
        "chronicle.md",
        &format!("- {} | {BRAVO} | broken line\n", harness::chronicle_stamp()),
    );
    wait_until("the finding told before the removal", DEADLINE, || {
        p.count(BRAVO, "chronicle-finding") == 1
    });
    let backup = p.dir.path().join("backup");
    copy_tree(&p.root, &backup);
    // The backup differs from what the daemon last saw: a broken line between two old ones (a
    // restore is not an append) and a contract missing its id and with a misspelt key.
    let chronicle = fs::read_to_string(backup.join("chronicle.md")).unwrap();
    let first_line_end = chronicle.find("\n- ").expect("a second chronicle line") + 1;
    let stamp = chronicle[first_line_end + 2..].split(" | ").next().unwrap();
    let mut restored = chronicle.clone();
    restored.insert_str(
        first_line_end,
        &format!("- {stamp} | {ALPHA} | broken line\n"),
    );
    fs::write(backup.join("chronicle.md"), restored).unwrap();
    fs::create_dir_all(backup.join("contracts/open")).unwrap();
    fs::write(
        backup.join("contracts/open/quick-fix.md"),
        format!(
            "---\ntitle: Quick fix\nopened_by: {ALPHA}\nopened_at: {stamp}\nowner: null\n\
             status: proposed\nstakes: low\nrequired_tag: [rust]\n---\n\n## Intent\n\nFix it.\n"
        ),
    )
    .unwrap();
    wait_until("the polis removed", DEADLINE, || {
        fs::remove_dir_all(&p.root).is_ok() || !p.root.exists()
    });
    d.wait_log("the removal noticed", "PolisRemoved", 1);
    fs::rename(&backup, &p.root).unwrap();
    wait_until("the restored contract's findings told", DEADLINE, || {
        assert!(alive(d.pid()), "the daemon died:\n{}", d.log());
        p.count(ALPHA, "record-finding") >= 2
    });
    wait_until("the restored middle line's finding told", DEADLINE, || {
        assert!(alive(d.pid()), "the daemon died:\n{}", d.log());
        p.count(ALPHA, "chronicle-finding") == 1
    });
    // A barrier: a later line's notice shows the passes after the restore are done.
    p.append(
        "chronicle.md",
        &format!(
            "- {} | {CHARLIE} | broken line\n",
            harness::chronicle_stamp()
        ),
    );
    wait_until("the barrier notice", DEADLINE, || {
        p.count(CHARLIE, "chronicle-finding") == 1
    });
    assert_eq!(p.count(ALPHA, "chronicle-finding"), 1, "{}", d.log());
    assert_eq!(p.count(BRAVO, "chronicle-finding"), 1, "{}", d.log());
    let records = p.count(ALPHA, "record-finding");
    let about_contract = p.findings_about("contracts/open/quick-fix.md");
    assert_eq!(
        records,
        about_contract.len(),
        "each contract finding told once:\n{about_contract:#?}"
    );
}

/// A finding whose recipient cannot be resolved yet (the author has no card
/// and there is no index keeper) waits, and goes out once the author's card appears.
#[test]
fn fault_finding_without_a_recipient_waits_for_one() {
    let p = four_citizens();
    p.save("index.md", "---\nfile_type: index\n---\n\n# Index\n");
    let d = Piped::start(&p, &[]);
    const LATE: &str = "late-comer-agent";
    p.append(
        "chronicle.md",
        &format!("- {} | {LATE} | broken line\n", harness::chronicle_stamp()),
    );
    d.wait_log("the finding logged", "late-comer-agent | broken line", 1);
    // The inbox first: the notice may go out the moment the card lands.
    p.save(
        &format!("citizens/{LATE}/inbox.md"),
        &format!("---\nfile_type: inbox\nowner: {LATE}\n---\n"),
    );
    p.save(
        &format!("citizens/{LATE}/capability_card.yml"),
        &format!("agent_id: {LATE}\nvendor: openai\nmodel: test\ncapability_tags:\n  rust:\n    self_rating: 3\n"),
    );
    wait_until("the finding told once the card is there", DEADLINE, || {
        assert!(alive(d.pid()), "the daemon died:\n{}", d.log());
        p.count(LATE, "chronicle-finding") == 1
    });
}

/// A line stamped in year 9999 (C004) never becomes the "newest earlier line" for
/// C005, so the lines after it are checked as usual: a broken link still draws C006, and a
/// line backdated by days (against the last real line) still draws C005.
#[test]
fn fault_year_9999_line_does_not_silence_the_lines_after_it() {
    let p = four_citizens();
    let d = Piped::start(&p, &[]);
    p.append(
        "chronicle.md",
        &format!("- 9999-12-31 23:59 | {ALPHA} | time travelled | - | far ahead\n"),
    );
    p.append(
        "chronicle.md",
        &chronicle_line(ALPHA, "linked", "[[nowhere/at/all]]", "a broken link"),
    );
    let backdated = (chrono::Utc::now() - chrono::Duration::days(3)).format("%Y-%m-%d %H:%M");
    p.append(
        "chronicle.md",
        &format!("- {backdated} | {BRAVO} | noted | - | three days late\n"),
    );
    wait_until("C004, C006 and C005 told", DEADLINE, || {
        assert!(alive(d.pid()), "the daemon died:\n{}", d.log());
        p.count(ALPHA, "chronicle-finding") == 2 && p.count(BRAVO, "chronicle-finding") == 1
    });
    let bravo = p.read(&format!("citizens/{BRAVO}/inbox.md"));
    assert!(bravo.contains("(C005)"), "{bravo}");
}

/// `contracts/settled/` the daemon and `polisd reconcile` cannot list (permissions): once read
/// as an empty folder, so `routing_stats.yml` was rebuilt from nothing (`tags: {}`, every
/// settlement forgotten) and `polisd check` said nothing about it. Now the stats are left as
/// they are, the command exits 1 naming the folder and the `chmod`, `check` reports P001 on the
/// folder, and once it is listable again the daemon's stats are the full ones.
/// As root the commands and the daemon run as `nobody`, so that "unlistable" means something.
#[test]
fn fault_unlistable_settled_folder_keeps_the_stats_and_is_reported() {
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::process::CommandExt;
    let p = four_citizens();
    fs::create_dir_all(p.path("contracts/settled")).unwrap();
    p.save(
        "contracts/settled/done-one.md",
        &settled("done-one", FOUNDER, BRAVO, &["rust".to_string()]),
    );
    let stats = p.expected_stats();
    p.save("contracts/routing_stats.yml", &stats);
    let folder = p.path("contracts/settled");
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    const NOBODY: u32 = 65534;
    let uid = if root {
        chown_tree(p.dir.path(), NOBODY);
        std::os::unix::fs::lchown(&folder, Some(0), Some(0)).unwrap();
        Some(NOBODY)
    } else {
        None
    };
    fs::set_permissions(&folder, fs::Permissions::from_mode(0o300)).unwrap();
    let bin = harness::bin_for_others(p.dir.path());
    let run = |args: &[&str]| {
        let mut cmd = Command::new(&bin);
        cmd.args(args)
            .arg("--polis")
            .arg(&p.root)
            .env("POLISD_STATE_DIR", &p.state_dir);
        if let Some(uid) = uid {
            cmd.uid(uid).gid(uid);
        }
        cmd.output().unwrap()
    };
    let out = run(&["reconcile"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{}", harness::describe(&out));
    assert!(
        stderr.contains("cannot list contracts/settled/") && stderr.contains("chmod u+rx"),
        "{stderr}"
    );
    assert_eq!(p.read("contracts/routing_stats.yml"), stats);
    let check = run(&["check", "--json"]);
    let findings: serde_json::Value = serde_json::from_slice(&check.stdout).unwrap();
    let about_folder: Vec<_> = findings["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["path"] == "contracts/settled" && f["code"] == "P001")
        .collect();
    assert_eq!(about_folder.len(), 1, "{findings:#}");

    let d = Piped::spawn_with(&p, &[], "", uid);
    d.wait_log("the refused reconcile", "cannot list contracts/settled/", 1);
    assert_eq!(p.read("contracts/routing_stats.yml"), stats);
    fs::set_permissions(&folder, fs::Permissions::from_mode(0o755)).unwrap();
    d.wait_log("the initial scan", "initial scan done", 1);
    assert!(alive(d.pid()), "the daemon died:\n{}", d.log());
    assert_eq!(p.read("contracts/routing_stats.yml"), stats);
}
