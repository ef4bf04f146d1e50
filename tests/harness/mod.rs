//! A fluent harness for integration tests: build a polis in a temporary folder, act on it the
//! way agents do (appends, editor-style saves, `mv`), run the real `polisd` binary, and wait for
//! effects with a deadline — never a fixed sleep.
#![allow(dead_code)]

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

pub const BIN: &str = env!("CARGO_BIN_EXE_polisd");

/// How long any single effect may take to appear before a test fails.
pub const DEADLINE: Duration = Duration::from_secs(60);

/// Polls `condition` until it holds or `deadline` passes; panics naming `what` on timeout.
#[track_caller]
pub fn wait_until(what: &str, deadline: Duration, mut condition: impl FnMut() -> bool) {
    let start = Instant::now();
    while !condition() {
        if start.elapsed() > deadline {
            panic!("timed out after {deadline:?} waiting for: {what}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A temporary project with a `_polis/` folder and its own polisd state directory.
pub struct TestPolis {
    pub dir: tempfile::TempDir,
    pub root: PathBuf,
    pub state_dir: PathBuf,
}

impl TestPolis {
    /// A polis founded by `founder` with `polisd init`.
    #[track_caller]
    pub fn init(founder: &str) -> TestPolis {
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path().join("project");
        fs::create_dir_all(&project).unwrap();
        let state_dir = dir.path().join("state");
        let out = Command::new(BIN)
            .args(["init"])
            .arg(&project)
            .args(["--agent-id", founder, "--vendor", "anthropic"])
            .env("POLISD_STATE_DIR", &state_dir)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "init failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        TestPolis {
            root: project.join("_polis"),
            dir,
            state_dir,
        }
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    pub fn read(&self, rel: &str) -> String {
        fs::read_to_string(self.path(rel)).unwrap_or_default()
    }

    pub fn exists(&self, rel: &str) -> bool {
        self.path(rel).exists()
    }

    /// Writes a file the way an editor saves: a temporary file renamed over the target.
    pub fn save(&self, rel: &str, text: &str) -> &Self {
        let path = self.path(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        let tmp = path.with_file_name(format!(
            ".{}.swp",
            path.file_name().unwrap().to_string_lossy()
        ));
        fs::write(&tmp, text).unwrap();
        fs::rename(&tmp, &path).unwrap();
        self
    }

    /// `echo ... >> file`.
    pub fn append(&self, rel: &str, text: &str) -> &Self {
        let mut f = fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(self.path(rel))
            .unwrap();
        f.write_all(text.as_bytes()).unwrap();
        self
    }

    /// `mv from to`.
    pub fn mv(&self, from: &str, to: &str) -> &Self {
        let to_path = self.path(to);
        fs::create_dir_all(to_path.parent().unwrap()).unwrap();
        fs::rename(self.path(from), to_path).unwrap();
        self
    }

    /// Registers a citizen with a card rating the given tags.
    pub fn citizen(&self, id: &str, vendor: &str, tags: &[(&str, u8)], cost: &str) -> &Self {
        let mut card = format!(
            "agent_id: {id}\nvendor: {vendor}\nmodel: test\nregistered: 2026-01-01 00:00:00\ncapability_tags:\n"
        );
        for (tag, rating) in tags {
            card.push_str(&format!(
                "  {tag}:\n    self_rating: {rating}\n    evidence: test\n"
            ));
        }
        card.push_str(&format!("cost_envelope:\n  relative: {cost}\n"));
        self.save(&format!("citizens/{id}/capability_card.yml"), &card);
        self.save(
            &format!("citizens/{id}/inbox.md"),
            &format!("---\nfile_type: inbox\nowner: {id}\n---\n"),
        );
        self
    }

    /// A one-shot `polisd` command on this polis, not started yet.
    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(BIN);
        cmd.args(args)
            .env("POLISD_STATE_DIR", &self.state_dir)
            .current_dir(&self.root);
        cmd
    }

    /// Runs a one-shot `polisd` command on this polis with the test crash hook `hook` (an
    /// environment variable the binary reads) set, and asserts the hook aborted it.
    #[track_caller]
    pub fn crashed(&self, args: &[&str], hook: &str) {
        let out = self.command(args).env(hook, "1").output().unwrap();
        assert!(
            !out.status.success(),
            "the {hook} hook aborts: {}",
            describe(&out)
        );
    }

    /// Runs a one-shot `polisd` command on this polis.
    pub fn polisd(&self, args: &[&str]) -> Output {
        self.command(args).output().unwrap()
    }

    /// Starts a one-shot `polisd` command on this polis, its output piped, for a test that
    /// acts while it runs (`wait_with_output` collects it).
    pub fn spawn(&self, args: &[&str]) -> Child {
        self.command(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    }

    /// Starts `polisd run` on this polis with a short debounce and waits until its initial
    /// scan is done. The log file is shared by every daemon this polis has had, so it waits
    /// for a *new* "initial scan done" line: the same call restarts a killed daemon.
    pub fn start_daemon(&self) -> Daemon {
        self.start_daemon_with(&[])
    }

    /// [`TestPolis::start_daemon`] with more environment variables (e.g. the
    /// `POLISD_FAKE_NOW_FILE` test clock).
    pub fn start_daemon_with(&self, env: &[(&str, &Path)]) -> Daemon {
        let log = self.dir.path().join("daemon.log");
        let before = fs::read_to_string(&log)
            .unwrap_or_default()
            .matches("initial scan done")
            .count();
        let config = self.dir.path().join("polisd.toml");
        if !config.exists() {
            fs::write(
                &config,
                "[watch]\ndebounce = \"50ms\"\nsettling = \"300ms\"\n\n[log]\nlevel = \"debug\"\n\n[dashboard]\nlisten = \"127.0.0.1:0\"\n",
            )
            .unwrap();
        }
        let stderr = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log)
            .unwrap();
        let child = Command::new(BIN)
            .arg("run")
            .arg(&self.root)
            .arg("--config")
            .arg(&config)
            .env("POLISD_STATE_DIR", &self.state_dir)
            .envs(env.iter().map(|(k, v)| (*k, *v)))
            .stdout(Stdio::null())
            .stderr(stderr)
            .spawn()
            .unwrap();
        let mut daemon = Daemon { child, log };
        wait_until("the daemon to finish its initial scan", DEADLINE, || {
            assert!(
                daemon.is_running(),
                "the daemon exited:\n{}",
                daemon.log_text()
            );
            daemon.log_text().matches("initial scan done").count() > before
        });
        daemon
    }
}

/// A running `polisd run`; killed when dropped.
pub struct Daemon {
    pub child: Child,
    pub log: PathBuf,
}

impl Daemon {
    pub fn log_text(&self) -> String {
        fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// SIGKILL: no chance to clean up, like a crash or power loss.
    pub fn kill9(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Any child process a test starts, killed and reaped when dropped, so a failing assertion never
/// leaves it running. `into_inner` hands the process back to be waited on normally.
pub struct Killed(Option<Child>);

impl Killed {
    pub fn new(child: Child) -> Killed {
        Killed(Some(child))
    }

    /// The process, no longer killed on drop (the caller waits for it).
    pub fn into_inner(mut self) -> Child {
        self.0
            .take()
            .expect("the child is present until into_inner")
    }

    pub fn child(&mut self) -> &mut Child {
        self.0
            .as_mut()
            .expect("the child is present until into_inner")
    }
}

impl Drop for Killed {
    fn drop(&mut self) {
        if let Some(child) = self.0.as_mut() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// A child started in its own process group ([`KilledGroup::spawn`]), the whole group killed
/// and the child reaped when dropped: for a program that starts its own children (a browser's
/// driver, an agent CLI's launcher and the MCP servers it starts), none of which may outlive
/// the test, pass or fail.
pub struct KilledGroup(Child);

impl KilledGroup {
    pub fn spawn(cmd: &mut Command) -> std::io::Result<KilledGroup> {
        use std::os::unix::process::CommandExt as _;
        cmd.process_group(0).spawn().map(KilledGroup)
    }

    pub fn child(&mut self) -> &mut Child {
        &mut self.0
    }
}

impl Drop for KilledGroup {
    fn drop(&mut self) {
        // The group's id is the leader's pid (`process_group(0)`).
        if let Ok(pgid) = i32::try_from(self.0.id()) {
            // SAFETY: kill(2) on our own child's process group; no memory is touched.
            unsafe { libc::kill(-pgid, libc::SIGKILL) };
        }
        let _ = self.0.wait();
    }
}

// ---------------------------------------------------------------------------------------------
// Helpers for the daemon tests (`tests/daemon/`).

/// "Now" as a chronicle stamp (`YYYY-MM-DD HH:MM`, UTC: the timezone `polisd init` writes).
pub fn chronicle_stamp() -> String {
    chrono::Utc::now().format("%Y-%m-%d %H:%M").to_string()
}

/// Every file under `_polis/` with its bytes, to show that a refusal wrote nothing.
pub fn tree(p: &TestPolis) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![p.root.clone()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let path = e.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let rel = path.strip_prefix(&p.root).unwrap().display().to_string();
                out.push((rel, std::fs::read(&path).unwrap()));
            }
        }
    }
    out.sort();
    out
}

/// A complete chronicle line stamped now, newline included.
pub fn chronicle_line(author: &str, verb: &str, link: &str, note: &str) -> String {
    format!(
        "- {} | {author} | {verb} | {link} | {note}\n",
        chronicle_stamp()
    )
}

/// The binary as another user (uid 65534) can run it: [`BIN`] itself when every folder above it
/// lets others through, else a copy in `dir` (a clone under a private home, such as /root).
#[allow(dead_code)]
pub fn bin_for_others(dir: &Path) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let bin = Path::new(BIN);
    let open = bin.ancestors().skip(1).all(|a| {
        a.as_os_str().is_empty()
            || fs::metadata(a).is_ok_and(|m| m.permissions().mode() & 0o001 != 0)
    });
    if open {
        return bin.to_path_buf();
    }
    let copy = dir.join("polisd");
    fs::copy(bin, &copy).unwrap();
    fs::set_permissions(&copy, fs::Permissions::from_mode(0o755)).unwrap();
    copy
}

/// A finished command as a failing assertion shows it: its exit code, then its stdout and its
/// stderr, each under a heading.
pub fn describe(out: &Output) -> String {
    format!(
        "exit {:?}\n--- stdout\n{}--- stderr\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// `out`, which must have succeeded (exit 0); else the test fails showing it.
#[track_caller]
pub fn ok(out: Output) -> Output {
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    out
}

/// Runs `cmd` with `input` on its stdin and its output captured, as an agent CLI runs a hook.
#[allow(dead_code)]
pub fn output_with_stdin(cmd: &mut Command, input: &[u8]) -> Output {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input).unwrap();
    child.wait_with_output().unwrap()
}

/// Copies the tree at `from` into `to` like `cp -r from/. to/`: folders are created, files are
/// copied over whatever is there, symbolic links are skipped (never followed). A file that
/// vanishes while it is copied (a running daemon's `.polisd-*.tmp`, renamed into place) is
/// skipped.
pub fn copy_tree(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap().flatten() {
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        let target = to.join(entry.file_name());
        if kind.is_dir() {
            copy_tree(&entry.path(), &target);
        } else if kind.is_file() {
            // A live daemon's temporary files come and go while the tree is copied.
            match fs::copy(entry.path(), &target) {
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => panic!("copying {}: {e}", entry.path().display()),
            }
        }
    }
}

/// One notification marker (`<!-- polisd:<kind>:<id> -->`) found in an inbox.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Marker {
    pub recipient: String,
    pub kind: String,
    pub id: String,
}

/// The markers in an inbox text, in order.
pub fn markers_in(recipient: &str, text: &str) -> Vec<Marker> {
    let re = regex::Regex::new(r"(?m)^[ \t]*<!-- polisd:([a-z-]+):([0-9a-f]{16}) -->").unwrap();
    re.captures_iter(text)
        .map(|c| Marker {
            recipient: recipient.to_string(),
            kind: c[1].to_string(),
            id: c[2].to_string(),
        })
        .collect()
}

impl TestPolis {
    /// The canonical `_polis/` path (the key of polisd's state folder).
    pub fn canonical_root(&self) -> PathBuf {
        fs::canonicalize(&self.root).unwrap()
    }

    /// The state folder polisd keeps for this polis.
    pub fn polis_state_dir(&self) -> PathBuf {
        polisd::fs::state::polis_state_dir(&self.state_dir, &self.canonical_root())
    }

    /// Waits until the durable ledger in the state folder (`settled.ledger`) records `rel`: the
    /// pass that recorded it has ended, so a kill now loses nothing of it.
    #[track_caller]
    pub fn wait_for_ledger(&self, rel: &str) {
        let dir = self.polis_state_dir();
        wait_for(self, &format!("{rel} in settled.ledger"), || {
            match polisd::fs::state::read_ledger_in(&dir).0 {
                polisd::fs::state::Restored::Records { records, .. } => {
                    records.iter().any(|r| r.path == rel)
                }
                _ => false,
            }
        });
    }

    /// The daemon's status file (`daemon.json`), when it has written one.
    pub fn daemon_status(&self) -> Option<polisd::fs::state::DaemonStatus> {
        let bytes = fs::read(self.polis_state_dir().join("daemon.json")).ok()?;
        serde_json::from_slice(&bytes).ok()
    }

    /// Every notification marker in every citizen's `inbox.md` (symbolic links are not read).
    pub fn all_markers(&self) -> Vec<Marker> {
        let mut out = Vec::new();
        let Ok(entries) = fs::read_dir(self.path("citizens")) else {
            return out;
        };
        let mut ids: Vec<String> = entries
            .flatten()
            .filter_map(|e| e.file_name().to_str().map(str::to_string))
            .collect();
        ids.sort();
        for id in ids {
            out.extend(self.markers(&id));
        }
        out
    }

    /// The markers in one citizen's `inbox.md` (none when it is a symbolic link).
    pub fn markers(&self, citizen: &str) -> Vec<Marker> {
        let rel = format!("citizens/{citizen}/inbox.md");
        match fs::symlink_metadata(self.path(&rel)) {
            Ok(m) if m.file_type().is_file() => markers_in(citizen, &self.read(&rel)),
            _ => Vec::new(),
        }
    }

    /// The findings `polisd check --json` reports about the file `rel` (relative to `_polis/`).
    #[allow(dead_code)]
    pub fn findings_about(&self, rel: &str) -> Vec<serde_json::Value> {
        let out = self.polisd(&["check", "--json"]);
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "check --json: {e}: {}",
                String::from_utf8_lossy(&out.stdout)
            )
        });
        report["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["path"] == rel)
            .cloned()
            .collect()
    }

    /// How many markers of `kind` the citizen's inbox holds.
    pub fn count(&self, citizen: &str, kind: &str) -> usize {
        self.markers(citizen)
            .iter()
            .filter(|m| m.kind == kind)
            .count()
    }

    /// What a one-shot `polisd reconcile` writes for the polis as it is now, computed on a copy
    /// (with its own state folder) so the live folder is not touched.
    pub fn expected_stats(&self) -> String {
        let scratch = tempfile::tempdir().unwrap();
        let copy = scratch.path().join("project").join("_polis");
        copy_tree(&self.root, &copy);
        let out = Command::new(BIN)
            .arg("reconcile")
            .arg(&copy)
            .env("POLISD_STATE_DIR", scratch.path().join("state"))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "reconcile on a copy failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        fs::read_to_string(copy.join("contracts/routing_stats.yml")).unwrap()
    }
}

impl Daemon {
    /// Whether the process is still running.
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }
}

/// Like [`wait_until`], but on timeout the panic message carries the end of the daemon's log
/// and the chronicle, so a failure on a CI machine can be understood from its output alone.
#[track_caller]
pub fn wait_for(p: &TestPolis, what: &str, mut condition: impl FnMut() -> bool) {
    let start = Instant::now();
    while !condition() {
        if start.elapsed() > DEADLINE {
            let log = fs::read_to_string(p.dir.path().join("daemon.log")).unwrap_or_default();
            let lines: Vec<&str> = log.lines().collect();
            let tail = lines[lines.len().saturating_sub(80)..].join("\n");
            panic!(
                "timed out after {DEADLINE:?} waiting for: {what}\n--- daemon log (end) ---\n{tail}\n--- chronicle.md ---\n{}\n--- markers ---\n{:#?}",
                p.read("chronicle.md"),
                p.all_markers()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Whether `dir` is inside a git work tree (a temporary folder on a machine whose /tmp is in
/// one would make "outside a repository" untestable there).
#[allow(dead_code)]
pub fn inside_git(dir: &Path) -> bool {
    dir.ancestors().any(|d| d.join(".git").exists())
}

/// `polisd mcp` on a polis, spoken to over stdio as raw JSON-RPC lines (so a test can also send
/// what no SDK would); killed when dropped, pass or fail.
pub struct McpStdio {
    child: Child,
    lines: std::sync::mpsc::Receiver<String>,
}

impl McpStdio {
    pub fn start(root: &Path, state: &Path) -> McpStdio {
        use std::io::{BufRead, BufReader};
        let mut child = Command::new(BIN)
            .arg("mcp")
            .arg(root)
            .env("POLISD_STATE_DIR", state)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        McpStdio { child, lines }
    }

    pub fn send(&mut self, line: &str) {
        self.send_bytes(line.as_bytes());
    }

    pub fn send_bytes(&mut self, line: &[u8]) {
        let stdin = self.child.stdin.as_mut().unwrap();
        stdin.write_all(line).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    /// The response with this id (`null` for a parse error, which has none), waiting with a
    /// deadline; what comes before it is passed over.
    #[track_caller]
    pub fn response(&mut self, id: serde_json::Value) -> serde_json::Value {
        // An error whose request id could not be read has none (MCP leaves it out).
        self.message_where(&format!("an MCP response with id {id}"), |v| {
            v.get("id").unwrap_or(&serde_json::Value::Null) == &id
        })
    }

    /// The next message the server sends that `wanted` accepts, waiting with a deadline; what
    /// comes before it is passed over. Fails naming `what` when the server ends or the deadline
    /// passes.
    #[track_caller]
    pub fn message_where(
        &mut self,
        what: &str,
        wanted: impl Fn(&serde_json::Value) -> bool,
    ) -> serde_json::Value {
        let deadline = Instant::now() + DEADLINE;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = self
                .lines
                .recv_timeout(left.max(Duration::from_millis(1)))
                .unwrap_or_else(|_| panic!("no {what}: the server ended or was silent"));
            let v: serde_json::Value = serde_json::from_str(&line).unwrap();
            if wanted(&v) {
                return v;
            }
        }
    }

    /// Sends a request without waiting; [`McpStdio::response`] collects its answer.
    pub fn send_request(&mut self, id: u64, method: &str, params: serde_json::Value) {
        let request =
            serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.send(&request.to_string());
    }

    #[track_caller]
    pub fn request(
        &mut self,
        id: u64,
        method: &str,
        params: serde_json::Value,
    ) -> serde_json::Value {
        self.send_request(id, method, params);
        self.response(serde_json::json!(id))
    }

    #[track_caller]
    pub fn call(&mut self, id: u64, tool: &str, args: serde_json::Value) -> serde_json::Value {
        self.request(
            id,
            "tools/call",
            serde_json::json!({"name": tool, "arguments": args}),
        )
    }
}

impl Drop for McpStdio {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
