//! The writer, the state directory and the watcher against real temp folders.

use polisd::fs::writer::{
    sha256, CompareOutcome, RemoveOutcome, RenameOutcome, WriteError, WriteOutcome, Writer,
};
use std::fs;
use std::io::Write;
use std::os::unix::fs::{symlink, MetadataExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

struct Polis {
    _dir: tempfile::TempDir,
    root: PathBuf,
    outside: PathBuf,
}

impl Polis {
    fn new() -> Polis {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("project").join("_polis");
        fs::create_dir_all(root.join("citizens")).unwrap();
        fs::write(root.join("CONSTITUTION.md"), "# c\n").unwrap();
        let outside = dir.path().join("outside");
        fs::create_dir(&outside).unwrap();
        let root = fs::canonicalize(root).unwrap();
        Polis {
            _dir: dir,
            root,
            outside,
        }
    }

    fn writer(&self) -> Writer {
        Writer::new(&self.root).unwrap()
    }

    #[track_caller]
    fn read(&self, rel: &str) -> String {
        fs::read_to_string(self.root.join(rel)).unwrap()
    }
}

/// Every `.polisd-*` name anywhere under `dir`.
fn temp_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap().flatten() {
            let ft = e.file_type().unwrap();
            if ft.is_dir() {
                stack.push(e.path());
            } else if e.file_name().to_string_lossy().starts_with(".polisd-") {
                out.push(e.path());
            }
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// writer

#[test]
fn writer_symlinked_inbox_pointing_outside_is_refused_and_target_unchanged() {
    let p = Polis::new();
    let w = p.writer();
    let victim = p.outside.join("secret.md");
    fs::write(&victim, "outside\n").unwrap();
    fs::create_dir_all(p.root.join("citizens/claude-code-1")).unwrap();
    symlink(&victim, p.root.join("citizens/claude-code-1/inbox.md")).unwrap();

    let err = w
        .append_locked("citizens/claude-code-1/inbox.md", b"### notice\n")
        .unwrap_err();
    assert!(matches!(err, WriteError::Symlink { .. }), "{err}");
    let err = w
        .replace_atomic("citizens/claude-code-1/inbox.md", b"x\n")
        .unwrap_err();
    assert!(matches!(err, WriteError::Symlink { .. }), "{err}");
    let err = w
        .compare_and_replace("citizens/claude-code-1/inbox.md", b"outside\n", b"x\n")
        .unwrap_err();
    assert!(matches!(err, WriteError::Symlink { .. }), "{err}");
    let err = w.remove("citizens/claude-code-1/inbox.md").unwrap_err();
    assert!(matches!(err, WriteError::Symlink { .. }), "{err}");
    assert_eq!(fs::read_to_string(&victim).unwrap(), "outside\n");
    assert!(
        fs::symlink_metadata(p.root.join("citizens/claude-code-1/inbox.md"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
}

#[test]
fn writer_symlinked_folder_pointing_outside_is_refused() {
    let p = Polis::new();
    let w = p.writer();
    symlink(&p.outside, p.root.join("citizens/claude-code-2")).unwrap();
    for result in [
        w.append_locked("citizens/claude-code-2/inbox.md", b"x\n")
            .map(|_| ()),
        w.replace_atomic("citizens/claude-code-2/inbox.md", b"x\n")
            .map(|_| ()),
        w.replace_atomic("citizens/claude-code-2/new/deeper.md", b"x\n")
            .map(|_| ()),
    ] {
        assert!(
            matches!(result, Err(WriteError::Symlink { .. })),
            "{result:?}"
        );
    }
    assert_eq!(
        fs::read_dir(&p.outside).unwrap().count(),
        0,
        "nothing written outside"
    );
}

#[test]
fn writer_parent_component_and_absolute_paths_are_refused() {
    let p = Polis::new();
    let w = p.writer();
    let escape = "../../outside/x.md";
    assert!(matches!(
        w.replace_atomic(escape, b"x"),
        Err(WriteError::Escapes(_))
    ));
    assert!(matches!(
        w.append_locked("citizens/../../x.md", b"x"),
        Err(WriteError::Escapes(_))
    ));
    let abs = p.outside.join("x.md");
    assert!(matches!(
        w.replace_atomic(&abs, b"x"),
        Err(WriteError::Absolute(_))
    ));
    assert!(matches!(
        w.rename_within("CONSTITUTION.md", "../x.md"),
        Err(WriteError::Escapes(_))
    ));
    assert_eq!(fs::read_dir(&p.outside).unwrap().count(), 0);
    assert!(!p.root.parent().unwrap().join("x.md").exists());
}

#[test]
fn writer_non_regular_targets_are_refused() {
    let p = Polis::new();
    let w = p.writer();
    fs::create_dir(p.root.join("adir")).unwrap();
    assert!(matches!(
        w.replace_atomic("adir", b"x"),
        Err(WriteError::NotRegular { kind: "folder", .. })
    ));
    let fifo = p.root.join("contracts-fifo.md");
    let ok = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success();
    assert!(ok, "mkfifo failed");
    assert!(matches!(
        w.append_locked("contracts-fifo.md", b"x\n"),
        Err(WriteError::NotRegular { kind: "FIFO", .. })
    ));
    assert!(matches!(
        w.replace_atomic("contracts-fifo.md", b"x\n"),
        Err(WriteError::NotRegular { kind: "FIFO", .. })
    ));
    // A file where a folder belongs.
    assert!(matches!(
        w.replace_atomic("CONSTITUTION.md/x", b"x\n"),
        Err(WriteError::NotADirectory { .. })
    ));
    assert!(temp_files(&p.root).is_empty());
}

#[test]
fn writer_unchanged_content_is_not_rewritten() {
    let p = Polis::new();
    let w = p.writer();
    let rel = "contracts/routing_stats.yml";
    assert_eq!(
        w.replace_atomic(rel, b"a: 1\n").unwrap(),
        WriteOutcome::Written
    );
    // Push mtime into the past so a rewrite could not hide inside timestamp granularity.
    let old = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000_000);
    fs::File::options()
        .write(true)
        .open(p.root.join(rel))
        .unwrap()
        .set_modified(old)
        .unwrap();
    let before = fs::metadata(p.root.join(rel)).unwrap();
    assert_eq!(
        w.replace_atomic(rel, b"a: 1\n").unwrap(),
        WriteOutcome::Unchanged
    );
    let after = fs::metadata(p.root.join(rel)).unwrap();
    assert_eq!(before.ino(), after.ino());
    assert_eq!(after.modified().unwrap(), old);

    assert_eq!(
        w.replace_atomic(rel, b"a: 2\n").unwrap(),
        WriteOutcome::Written
    );
    let changed = fs::metadata(p.root.join(rel)).unwrap();
    assert_ne!(
        before.ino(),
        changed.ino(),
        "replaced by rename, not in place"
    );
    assert_eq!(p.read(rel), "a: 2\n");
    assert!(temp_files(&p.root).is_empty());
}

#[test]
fn writer_replace_keeps_permissions_and_creates_parents() {
    use std::os::unix::fs::PermissionsExt;
    let p = Polis::new();
    let w = p.writer();
    fs::write(p.root.join("index.md"), "old\n").unwrap();
    fs::set_permissions(p.root.join("index.md"), fs::Permissions::from_mode(0o640)).unwrap();
    w.replace_atomic("index.md", b"new\n").unwrap();
    let mode = fs::metadata(p.root.join("index.md")).unwrap().mode() & 0o777;
    assert_eq!(mode, 0o640);
    w.replace_atomic("amendments/ratified/2026-01-01-x.md", b"x\n")
        .unwrap();
    assert_eq!(p.read("amendments/ratified/2026-01-01-x.md"), "x\n");
    // A fresh file is not left at tempfile's private 0600.
    let mode = fs::metadata(p.root.join("amendments/ratified/2026-01-01-x.md"))
        .unwrap()
        .mode();
    assert_ne!(mode & 0o044, 0, "fresh file mode {mode:o} too narrow");
}

#[test]
fn writer_append_adds_missing_newline() {
    let p = Polis::new();
    let w = p.writer();
    fs::write(p.root.join("chronicle.md"), "- agent line without newline").unwrap();
    w.append_locked("chronicle.md", b"- polis-daemon line\n")
        .unwrap();
    assert_eq!(
        p.read("chronicle.md"),
        "- agent line without newline\n- polis-daemon line\n"
    );
    w.append_locked("chronicle.md", b"- second\n").unwrap();
    assert_eq!(
        p.read("chronicle.md"),
        "- agent line without newline\n- polis-daemon line\n- second\n"
    );
    // Missing file: created, no leading newline; empty file: none either.
    w.append_locked("citizens/claude-code-1/inbox.md", b"### n\n")
        .unwrap();
    assert_eq!(p.read("citizens/claude-code-1/inbox.md"), "### n\n");
    fs::write(p.root.join("empty.md"), "").unwrap();
    w.append_locked("empty.md", b"x\n").unwrap();
    assert_eq!(p.read("empty.md"), "x\n");
    // The ledger knows the whole file after an append.
    assert!(w.is_own_write("empty.md", &sha256(b"x\n")));
}

#[test]
fn writer_concurrent_appends_never_interleave() {
    let p = Polis::new();
    let w = std::sync::Arc::new(p.writer());
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let w = w.clone();
            std::thread::spawn(move || {
                for i in 0..50 {
                    let line = format!("- thread {t} line {i} {}\n", "x".repeat(200));
                    w.append_locked("chronicle.md", line.as_bytes()).unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let text = p.read("chronicle.md");
    let lines: Vec<_> = text.lines().collect();
    assert_eq!(lines.len(), 200);
    assert!(lines
        .iter()
        .all(|l| l.starts_with("- thread ") && l.ends_with(&"x".repeat(200))));
}

#[test]
fn writer_compare_and_replace_detects_concurrent_change() {
    let p = Polis::new();
    let w = p.writer();
    let rel = "contracts/open/fix-login.md";
    fs::create_dir_all(p.root.join("contracts/open")).unwrap();
    fs::write(p.root.join(rel), "routing: old\n").unwrap();
    let seen = fs::read(p.root.join(rel)).unwrap();
    // An agent edits the contract after polisd read it.
    fs::write(p.root.join(rel), "routing: old\nagent: note\n").unwrap();
    let out = w
        .compare_and_replace(rel, &seen, b"routing: new\n")
        .unwrap();
    assert_eq!(
        out,
        CompareOutcome::Conflict {
            current: Some(b"routing: old\nagent: note\n".to_vec())
        }
    );
    assert_eq!(
        p.read(rel),
        "routing: old\nagent: note\n",
        "agent bytes kept"
    );
    // Recompute from the current bytes and try again: now it goes through.
    let current = fs::read(p.root.join(rel)).unwrap();
    assert_eq!(
        w.compare_and_replace(rel, &current, b"routing: new\nagent: note\n")
            .unwrap(),
        CompareOutcome::Written
    );
    assert_eq!(p.read(rel), "routing: new\nagent: note\n");
    let again = fs::read(p.root.join(rel)).unwrap();
    assert_eq!(
        w.compare_and_replace(rel, &again, &again).unwrap(),
        CompareOutcome::Unchanged
    );
    // A file that vanished is a conflict too.
    fs::remove_file(p.root.join(rel)).unwrap();
    assert_eq!(
        w.compare_and_replace(rel, &again, b"x").unwrap(),
        CompareOutcome::Conflict { current: None }
    );
    assert!(temp_files(&p.root).is_empty());
}

#[test]
fn writer_rename_within_never_overwrites_and_replays() {
    let p = Polis::new();
    let w = p.writer();
    let from = "amendments/proposed/2026-01-01-quorum.md";
    let to = "amendments/ratified/2026-01-01-quorum.md";
    fs::create_dir_all(p.root.join("amendments/proposed")).unwrap();
    fs::write(p.root.join(from), "status: ratified\n").unwrap();
    assert_eq!(w.rename_within(from, to).unwrap(), RenameOutcome::Moved);
    assert!(!p.root.join(from).exists());
    assert_eq!(p.read(to), "status: ratified\n");
    assert!(w.is_own_removal(from));
    assert!(w.is_own_write(to, &sha256(b"status: ratified\n")));
    // Replayed: nothing left to move.
    assert_eq!(
        w.rename_within(from, to).unwrap(),
        RenameOutcome::AlreadyMoved
    );
    // A sync tool brought the proposed copy back with the same bytes: it is removed.
    fs::write(p.root.join(from), "status: ratified\n").unwrap();
    assert_eq!(
        w.rename_within(from, to).unwrap(),
        RenameOutcome::AlreadyMoved
    );
    assert!(!p.root.join(from).exists());
    // A different file at the target is never overwritten.
    fs::write(p.root.join(from), "status: proposed\nother\n").unwrap();
    assert!(matches!(
        w.rename_within(from, to),
        Err(WriteError::TargetExists { .. })
    ));
    assert_eq!(p.read(to), "status: ratified\n");
    assert_eq!(p.read(from), "status: proposed\nother\n");
    assert!(matches!(
        w.rename_within("amendments/proposed/none.md", "amendments/ratified/none.md"),
        Err(WriteError::Missing(_))
    ));
}

#[test]
fn writer_remove_conflict_copy() {
    let p = Polis::new();
    let w = p.writer();
    let rel = "chronicle.sync-conflict-20260101-120000-ABC.md";
    fs::write(p.root.join(rel), "- x\n").unwrap();
    assert_eq!(w.remove(rel).unwrap(), RemoveOutcome::Removed);
    assert_eq!(w.remove(rel).unwrap(), RemoveOutcome::AlreadyGone);
    assert!(w.is_own_removal(rel));
    fs::create_dir(p.root.join("d")).unwrap();
    assert!(matches!(w.remove("d"), Err(WriteError::NotRegular { .. })));
}

#[test]
fn writer_stale_temp_files_are_cleaned() {
    let p = Polis::new();
    let w = p.writer();
    let old = SystemTime::now() - Duration::from_secs(3600);
    let stale = p.root.join("citizens/.polisd-abc123.tmp");
    fs::write(&stale, "partial").unwrap();
    fs::File::options()
        .write(true)
        .open(&stale)
        .unwrap()
        .set_modified(old)
        .unwrap();
    let fresh = p.root.join(".polisd-inflight.tmp");
    fs::write(&fresh, "writing").unwrap();
    let other = p.root.join("notes.tmp");
    fs::write(&other, "agent temp").unwrap();
    fs::create_dir(p.root.join(".polisd-dir.tmp")).unwrap();
    let outside_tmp = p.outside.join(".polisd-out.tmp");
    fs::write(&outside_tmp, "x").unwrap();
    symlink(&p.outside, p.root.join("linked")).unwrap();

    let removed = w.clean_stale_temp_files(Duration::from_secs(60)).unwrap();
    assert_eq!(removed, vec![PathBuf::from("citizens/.polisd-abc123.tmp")]);
    assert!(!stale.exists());
    assert!(
        fresh.exists(),
        "a temp file younger than min_age may be in flight"
    );
    assert!(other.exists());
    assert!(p.root.join(".polisd-dir.tmp").is_dir());
    assert!(outside_tmp.exists(), "links are not followed");
    let removed = w.clean_stale_temp_files(Duration::ZERO).unwrap();
    assert_eq!(removed, vec![PathBuf::from(".polisd-inflight.tmp")]);
}

/// Runs in a child process under `ulimit -f` (SIGXFSZ ignored, so the write fails with EFBIG
/// instead of killing the process); the parent checks the aftermath. Works as root, where a
/// read-only folder would not stop the write.
#[test]
fn writer_failed_write_leaves_old_file_and_no_temp() {
    const NAME: &str = "writer_failed_write_leaves_old_file_and_no_temp";
    if let Some(root) = std::env::var_os("POLISD_TEST_FSIZE_ROOT") {
        let w = Writer::new(Path::new(&root)).unwrap();
        let big = vec![b'y'; 256 * 1024];
        let err = w.replace_atomic("index.md", &big).unwrap_err();
        match &err {
            // tempfile wraps the OS error with its path, so match on the message.
            WriteError::Io { source, .. } => assert!(source.to_string().contains("os error 27")),
            other => panic!("expected EFBIG, got {other}"),
        }
        let err = w.append_locked("chronicle.md", &big).unwrap_err();
        assert!(
            matches!(err, WriteError::Io { .. } | WriteError::ShortWrite { .. }),
            "{err}"
        );
        return;
    }
    let p = Polis::new();
    fs::write(p.root.join("index.md"), "old index\n").unwrap();
    fs::write(p.root.join("chronicle.md"), "- old line\n").unwrap();
    let exe = std::env::current_exe().unwrap();
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg("trap '' XFSZ; ulimit -f 16 && exec \"$0\" \"$@\"")
        .arg(exe)
        .args(["--exact", NAME, "--test-threads=1", "--nocapture"])
        .env("POLISD_TEST_FSIZE_ROOT", &p.root)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "child failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(p.read("index.md"), "old index\n");
    assert_eq!(
        p.read("chronicle.md"),
        "- old line\n",
        "partial append undone"
    );
    assert!(temp_files(&p.root).is_empty(), "{:?}", temp_files(&p.root));
}

#[test]
fn writer_refuses_when_root_replaced_by_link() {
    let p = Polis::new();
    let w = p.writer();
    let moved = p.outside.join("moved_polis");
    fs::rename(&p.root, &moved).unwrap();
    symlink(&moved, &p.root).unwrap();
    assert!(matches!(
        w.replace_atomic("index.md", b"x"),
        Err(WriteError::RootGone(_))
    ));
    assert!(!moved.join("index.md").exists());
}

// ---------------------------------------------------------------------------------------------
// state

use polisd::fs::state::{self, DaemonStatus, State};

#[test]
fn state_corrupt_file_is_moved_aside_and_rebuilt() {
    let p = Polis::new();
    let base = tempfile::tempdir().unwrap();
    let mut s = State::load_in(base.path(), &p.root).unwrap();
    s.counters.reconciles = 7;
    s.save().unwrap();
    let file = s.dir().join("state.json");
    fs::write(
        &file,
        b"{\"version\": 1, \"counters\": {\"events\": \"not a number\"",
    )
    .unwrap();
    let s = State::load_in(base.path(), &p.root).unwrap();
    assert_eq!(s.counters.reconciles, 0, "rebuilt from defaults");
    let aside = s.recovered_from.clone().expect("corrupt file moved aside");
    assert!(aside
        .file_name()
        .unwrap()
        .to_string_lossy()
        .starts_with("state.json.corrupt-"));
    assert!(fs::read(&aside).unwrap().starts_with(b"{\"version\""));
    assert!(!file.exists());
    // Non-JSON garbage too.
    fs::write(&file, [0xff, 0x00, 0x13]).unwrap();
    assert!(State::load_in(base.path(), &p.root)
        .unwrap()
        .recovered_from
        .is_some());
}

#[test]
fn state_dir_from_env_is_keyed_by_canonical_polis_path_and_status_is_readable() {
    let p = Polis::new();
    let other = Polis::new();
    let base = tempfile::tempdir().unwrap();
    // The only test that sets the variable; the others use load_in.
    std::env::set_var(state::STATE_DIR_ENV, base.path());
    let s = State::load(&p.root).unwrap();
    assert!(s.dir().starts_with(base.path()));
    let roundabout = p.root.join("citizens/..");
    assert_eq!(State::load(&roundabout).unwrap().dir(), s.dir());
    assert_ne!(State::load(&other.root).unwrap().dir(), s.dir());
    assert_eq!(
        fs::read_to_string(s.dir().join("polis-path")).unwrap(),
        format!("{}\n", p.root.display())
    );

    assert_eq!(state::read_status(&p.root).unwrap(), None);
    let status = s.status("2026-01-01T00:00:00Z", "poll");
    s.write_status(&status).unwrap();
    let read: DaemonStatus = state::read_status(&p.root).unwrap().unwrap();
    assert_eq!(read.pid, std::process::id());
    assert_eq!(read.watch_mode, "poll");
    assert_eq!(read.process_running(), Some(true));
    s.clear_status().unwrap();
    assert_eq!(state::read_status(&p.root).unwrap(), None);
}

#[test]
fn state_daemon_lock_is_exclusive() {
    let p = Polis::new();
    let base = tempfile::tempdir().unwrap();
    let s = State::load_in(base.path(), &p.root).unwrap();
    let lock = s.try_lock_daemon().unwrap().expect("first lock");
    assert!(s.try_lock_daemon().unwrap().is_none());
    assert!(s.daemon_lock_held().unwrap());
    drop(lock);
    assert!(!s.daemon_lock_held().unwrap());
}

// ---------------------------------------------------------------------------------------------
// watch

use polisd::daemon::watch::{
    self, Batch, Event, EventKind, Mode, RescanReason, Source, WatchConfig,
};

fn fast_config() -> WatchConfig {
    WatchConfig {
        debounce: Duration::from_millis(50),
        max_delay: None,
        poll_interval: Duration::from_millis(100),
        rescan_interval: None,
        force_poll: false,
        channel_capacity: 64,
        ..WatchConfig::default()
    }
}

/// Everything the watcher delivered so far, and a way to wait for more.
struct Seen {
    rx: tokio::sync::mpsc::Receiver<Batch>,
    batches: Vec<Batch>,
}

impl Seen {
    fn new(rx: tokio::sync::mpsc::Receiver<Batch>) -> Seen {
        Seen {
            rx,
            batches: Vec::new(),
        }
    }

    fn events(&self) -> impl Iterator<Item = &Event> {
        self.batches.iter().flat_map(|b| b.events.iter())
    }

    fn rescans(&self) -> impl Iterator<Item = &RescanReason> {
        self.batches
            .iter()
            .filter_map(|b| b.rescan.as_ref().map(|r| &r.reason))
    }

    fn has(&self, rel: &str, kind: EventKind) -> bool {
        self.events()
            .any(|e| e.path == Path::new(rel) && e.kind == kind)
    }

    /// Waits (up to 10 s) until `cond` holds over everything received.
    #[track_caller]
    fn wait_for(&mut self, what: &str, cond: impl Fn(&Seen) -> bool) {
        let end = Instant::now() + Duration::from_secs(10);
        loop {
            while let Ok(b) = self.rx.try_recv() {
                self.batches.push(b);
            }
            if cond(self) {
                return;
            }
            assert!(
                Instant::now() < end,
                "timed out waiting for {what}; got {:#?}",
                self.batches
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    fn started(&mut self) {
        self.wait_for("the Started rescan", |s| {
            s.rescans().any(|r| *r == RescanReason::Started)
        });
    }
}

fn start(p: &Polis, config: WatchConfig) -> (watch::Watcher, Seen) {
    let (w, rx) = watch::watch(&p.root, config).unwrap();
    let mut seen = Seen::new(rx);
    seen.started();
    (w, seen)
}

#[test]
fn watch_create_modify_rename_remove_arrive() {
    let p = Polis::new();
    let (w, mut seen) = start(&p, fast_config());
    assert_eq!(
        w.mode(),
        Mode::Native,
        "inotify should work in the test environment"
    );

    fs::write(p.root.join("chronicle.md"), "- a\n").unwrap();
    seen.wait_for("create", |s| s.has("chronicle.md", EventKind::Create));

    fs::OpenOptions::new()
        .append(true)
        .open(p.root.join("chronicle.md"))
        .unwrap()
        .write_all(b"- b\n")
        .unwrap();
    seen.wait_for("modify", |s| s.has("chronicle.md", EventKind::Modify));

    fs::rename(
        p.root.join("chronicle.md"),
        p.root.join("chronicle-2026-Q1.md"),
    )
    .unwrap();
    seen.wait_for("both sides of the rename", |s| {
        s.has("chronicle.md", EventKind::Rename) && s.has("chronicle-2026-Q1.md", EventKind::Rename)
    });

    fs::remove_file(p.root.join("chronicle-2026-Q1.md")).unwrap();
    seen.wait_for("remove", |s| {
        s.has("chronicle-2026-Q1.md", EventKind::Remove)
    });
    assert!(seen.events().all(|e| e.source != Source::Poll));
}

#[test]
fn watch_files_in_a_new_folder_are_reported() {
    let p = Polis::new();
    let (_w, mut seen) = start(&p, fast_config());
    // mkdir -p and a write straight after: the file may predate the folder's inotify watch.
    fs::create_dir_all(p.root.join("citizens/claude-code-9")).unwrap();
    fs::write(
        p.root.join("citizens/claude-code-9/capability_card.yml"),
        "agent_id: claude-code-9\n",
    )
    .unwrap();
    seen.wait_for("the card in the new folder", |s| {
        s.events()
            .any(|e| e.path == Path::new("citizens/claude-code-9/capability_card.yml"))
    });
    // A folder moved in whole: its files were never created under a watch.
    let staged = p.outside.join("contracts");
    fs::create_dir_all(staged.join("open")).unwrap();
    fs::write(staged.join("open/fix.md"), "x\n").unwrap();
    fs::rename(&staged, p.root.join("contracts")).unwrap();
    seen.wait_for("the moved-in contract", |s| {
        s.events()
            .any(|e| e.path == Path::new("contracts/open/fix.md"))
    });
}

#[test]
fn watch_editor_temp_files_are_filtered() {
    let p = Polis::new();
    let (_w, mut seen) = start(&p, fast_config());
    for name in [
        ".index.md.swp",
        "index.md~",
        "4913",
        ".#index.md",
        ".polisd-abc.tmp",
        "index.md.tmp",
    ] {
        fs::write(p.root.join(name), "x").unwrap();
    }
    // A sync tool's conflict copy is passed on: polisd merges or reports it (docs/sync.md).
    let copy = "chronicle.sync-conflict-20260101-000000-ABC.md";
    fs::write(p.root.join(copy), "x").unwrap();
    // An editor's atomic save: temp file renamed over the real one.
    fs::rename(p.root.join("index.md.tmp"), p.root.join("index.md")).unwrap();
    fs::write(p.root.join("marker.md"), "x").unwrap();
    seen.wait_for("the save, the copy and the marker", |s| {
        s.events().any(|e| e.path == Path::new("index.md"))
            && s.events().any(|e| e.path == Path::new(copy))
            && s.events().any(|e| e.path == Path::new("marker.md"))
    });
    let names: Vec<_> = seen.events().map(|e| e.path.clone()).collect();
    for e in seen.events() {
        let name = e.path.file_name().unwrap().to_str().unwrap();
        assert!(
            !polisd::protocol::layout::is_temporary_name(name),
            "{name} leaked: {names:?}"
        );
    }
}

#[test]
fn watch_links_are_not_followed() {
    let p = Polis::new();
    symlink(&p.outside, p.root.join("linked")).unwrap();
    let (_w, mut seen) = start(&p, fast_config());
    fs::write(p.outside.join("elsewhere.md"), "x").unwrap();
    fs::write(p.root.join("marker.md"), "x").unwrap();
    seen.wait_for("marker", |s| s.has("marker.md", EventKind::Create));
    assert!(
        !seen.events().any(|e| e.path.starts_with("linked")),
        "{:?}",
        seen.batches
    );
}

#[track_caller]
fn delete_and_recreate_keeps_events_coming(p: &Polis, seen: &mut Seen) {
    fs::remove_dir_all(&p.root).unwrap();
    seen.wait_for("PolisRemoved", |s| {
        s.rescans().any(|r| *r == RescanReason::PolisRemoved)
    });
    fs::create_dir(&p.root).unwrap();
    fs::write(p.root.join("CONSTITUTION.md"), "# c\n").unwrap();
    seen.wait_for("PolisRecreated", |s| {
        s.rescans().any(|r| *r == RescanReason::PolisRecreated)
    });
    fs::create_dir(p.root.join("reviews")).unwrap();
    seen.wait_for("the new folder", |s| s.has("reviews", EventKind::Create));
    fs::write(p.root.join("reviews/2026-01-01-1200-x.md"), "x\n").unwrap();
    seen.wait_for("a file in the recreated polis", |s| {
        s.events()
            .any(|e| e.path == Path::new("reviews/2026-01-01-1200-x.md"))
    });
}

#[test]
fn watch_delete_and_recreate_polis_keeps_events_coming() {
    let p = Polis::new();
    let (w, mut seen) = start(&p, fast_config());
    assert_eq!(w.mode(), Mode::Native);
    delete_and_recreate_keeps_events_coming(&p, &mut seen);
}

#[test]
fn watch_polis_moved_away_reports_removal_not_its_files() {
    let p = Polis::new();
    let (_w, mut seen) = start(&p, fast_config());
    let moved = p.outside.join("_polis_moved");
    fs::rename(&p.root, &moved).unwrap();
    seen.wait_for("PolisRemoved", |s| {
        s.rescans().any(|r| *r == RescanReason::PolisRemoved)
    });
    let before = seen.events().count();
    fs::write(moved.join("ghost.md"), "x\n").unwrap();
    // Bring a fresh `_polis/` and write a marker: by then any ghost event would have arrived.
    fs::create_dir(&p.root).unwrap();
    seen.wait_for("PolisRecreated", |s| {
        s.rescans().any(|r| *r == RescanReason::PolisRecreated)
    });
    fs::write(p.root.join("marker.md"), "x").unwrap();
    seen.wait_for("marker", |s| s.has("marker.md", EventKind::Create));
    assert!(
        !seen
            .events()
            .skip(before)
            .any(|e| e.path == Path::new("ghost.md")),
        "{:?}",
        seen.batches
    );
}

#[test]
fn watch_forced_poll_mode_works() {
    let p = Polis::new();
    let config = WatchConfig {
        force_poll: true,
        ..fast_config()
    };
    let (w, mut seen) = start(&p, config);
    assert_eq!(w.mode(), Mode::Poll);
    fs::write(p.root.join("chronicle.md"), "- a\n").unwrap();
    seen.wait_for("create by polling", |s| {
        s.has("chronicle.md", EventKind::Create)
    });
    // Polling compares mtimes: make sure the change is visible even on coarse clocks.
    let f = fs::OpenOptions::new()
        .append(true)
        .open(p.root.join("chronicle.md"))
        .unwrap();
    (&f).write_all(b"- b\n").unwrap();
    f.set_modified(SystemTime::now() + Duration::from_secs(5))
        .unwrap();
    seen.wait_for("modify by polling", |s| {
        s.has("chronicle.md", EventKind::Modify)
    });
    fs::remove_file(p.root.join("chronicle.md")).unwrap();
    seen.wait_for("remove by polling", |s| {
        s.has("chronicle.md", EventKind::Remove)
    });
    assert!(seen.events().all(|e| e.source == Source::Poll));
    delete_and_recreate_keeps_events_coming(&p, &mut seen);
}

#[test]
fn watch_timer_asks_for_rescans() {
    let p = Polis::new();
    let config = WatchConfig {
        rescan_interval: Some(Duration::from_millis(100)),
        ..fast_config()
    };
    let (_w, mut seen) = start(&p, config);
    seen.wait_for("two timer rescans", |s| {
        s.rescans().filter(|r| **r == RescanReason::Timer).count() >= 2
    });
}

#[test]
fn watch_stops_when_dropped() {
    let p = Polis::new();
    let (w, rx) = watch::watch(&p.root, fast_config()).unwrap();
    let mut seen = Seen::new(rx);
    seen.started();
    w.stop();
    // The channel closes once the watcher thread has ended.
    let closed = seen.rx.blocking_recv();
    assert_eq!(closed, None);
}

#[test]
fn watch_refuses_a_missing_folder() {
    let p = Polis::new();
    assert!(matches!(
        watch::watch(&p.root.join("nope"), fast_config()),
        Err(watch::WatchError::NotAFolder(_))
    ));
}

/// `[watch] max_delay` reaches the watcher: a file written every 20 ms never goes quiet for
/// the 1 s debounce, yet arrives after the configured 1.2 s, long before the 10 s the watcher
/// would cap it at by itself (ten debounce windows).
#[test]
fn watch_max_delay_delivers_a_file_that_never_goes_quiet() {
    let p = Polis::new();
    let config = WatchConfig {
        debounce: Duration::from_secs(1),
        max_delay: Some(Duration::from_millis(1200)),
        ..fast_config()
    };
    assert_eq!(watch::max_wait(config.debounce), Duration::from_secs(10));
    let (_w, mut seen) = start(&p, config);
    let path = p.root.join("chronicle.md");
    let end = Instant::now() + Duration::from_secs(8);
    let mut file = fs::File::create(&path).unwrap();
    loop {
        use std::io::Write;
        writeln!(file, "- a line").unwrap();
        while let Ok(b) = seen.rx.try_recv() {
            seen.batches.push(b);
        }
        if seen.events().any(|e| e.path == Path::new("chronicle.md")) {
            break;
        }
        assert!(
            Instant::now() < end,
            "a file written without pause was not delivered within 8 s: max_delay was not used"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}
