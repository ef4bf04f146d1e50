//! Agents doing random protocol work on every machine, synced by git through one remote or by
//! two real Syncthing instances: the machines converge.

use super::{
    assert_converged, commit_all, found, git, machine, project, pull, quiet, two_clones,
    with_settling, ALPHA, BETA, FOUNDER,
};
use crate::harness::*;
use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// Runs a polisd command, asserting it succeeded; its JSON answer.
#[track_caller]
fn run_ok(p: &TestPolis, args: &[&str]) -> serde_json::Value {
    succeeded(args, p.polisd(args))
}

/// The JSON answer of a command that must have succeeded.
fn succeeded(args: &[&str], out: std::process::Output) -> serde_json::Value {
    assert!(
        out.status.success(),
        "polisd {args:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or(serde_json::Value::Null)
}

/// The chronicle line a command answered with, newline included.
fn line_in(v: &serde_json::Value) -> Option<String> {
    v["line"]
        .as_str()
        .or(v["chronicle"]["line"].as_str())
        .map(|l| format!("{l}\n"))
}

/// The contract ids in one folder of a clone whose `status` is `status`.
fn contracts_with(p: &TestPolis, folder: &str, status: &str) -> Vec<String> {
    let mut out: Vec<String> = fs::read_dir(p.path(&format!("contracts/{folder}")))
        .map(|d| d.flatten().collect::<Vec<_>>())
        .unwrap_or_default()
        .iter()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let id = name.strip_suffix(".md")?.to_string();
            let text = fs::read_to_string(e.path()).ok()?;
            text.contains(&format!("\nstatus: {status}\n"))
                .then_some(id)
        })
        .collect();
    out.sort();
    out
}

/// One agent on each machine doing random protocol work for the sync tests, as agents do: each
/// call runs one command. Agents claim and settle only what their own machine opened: two
/// machines claiming one contract is a real conflict between agents (P011), not the sync's.
struct RandomWork {
    rng: rand::rngs::StdRng,
    opened: [usize; 3],
    proposed: usize,
    votes: BTreeMap<(String, String), &'static str>,
}

impl RandomWork {
    fn seeded(seed: u64) -> Self {
        use rand::SeedableRng;
        RandomWork {
            rng: rand::rngs::StdRng::seed_from_u64(seed),
            opened: [0; 3],
            proposed: 0,
            votes: BTreeMap::new(),
        }
    }

    /// A number in `0..n`.
    fn below(&mut self, n: usize) -> usize {
        use rand::Rng;
        self.rng.random_range(0..n)
    }

    fn open(&mut self, p: &TestPolis, m: usize, me: &str) -> serde_json::Value {
        self.opened[m] += 1;
        let title = format!("task {m} {}", self.opened[m]);
        run_ok(
            p,
            &[
                "contract", "open", "--title", &title, "--by", me, "--tags", "rust", "--json",
            ],
        )
    }

    /// One of the contracts machine `m` opened that is now `status`, if any.
    fn own(&mut self, p: &TestPolis, m: usize, status: &str) -> Option<String> {
        let mine: Vec<String> = contracts_with(p, "open", status)
            .into_iter()
            .filter(|id| id.starts_with(&format!("task-{m}-")))
            .collect();
        (!mine.is_empty()).then(|| mine[self.below(mine.len())].clone())
    }

    fn claim(&mut self, p: &TestPolis, m: usize, me: &str) -> Option<serde_json::Value> {
        let id = self.own(p, m, "proposed")?;
        Some(run_ok(p, &["contract", "claim", &id, "--as", me, "--json"]))
    }

    fn settle(&mut self, p: &TestPolis, m: usize, quality: usize) -> Option<serde_json::Value> {
        let id = self.own(p, m, "claimed")?;
        let (quality, lesson) = (quality.to_string(), format!("what {id} taught"));
        Some(run_ok(
            p,
            &[
                "contract",
                "settle",
                &id,
                "--quality",
                &quality,
                "--minutes",
                "20",
                "--lesson",
                &lesson,
                "--impact",
                "3",
                "--json",
            ],
        ))
    }

    fn propose(&mut self, p: &TestPolis, m: usize, me: &str) -> serde_json::Value {
        self.proposed += 1;
        let title = format!("rule {m} {}", self.proposed);
        run_ok(
            p,
            &[
                "amendment",
                "propose",
                "--title",
                &title,
                "--by",
                me,
                "--quorum",
                "9",
                "--json",
            ],
        )
    }

    /// A vote on one proposed amendment, if any, answered with the command's arguments and
    /// output: the caller decides whether a refusal is expected. A vote that repeated the
    /// citizen's last one would be the same line twice in one minute, one event written twice
    /// (P024), so it changes sides.
    fn vote(
        &mut self,
        p: &TestPolis,
        me: &str,
        why: &str,
    ) -> Option<(Vec<String>, std::process::Output)> {
        let open: Vec<String> = fs::read_dir(p.path("amendments/proposed"))
            .map(|d| {
                d.flatten()
                    .filter_map(|e| {
                        e.file_name()
                            .to_string_lossy()
                            .strip_suffix(".md")
                            .map(str::to_string)
                    })
                    .collect()
            })
            .unwrap_or_default();
        if open.is_empty() {
            return None;
        }
        let aid = open[self.below(open.len())].clone();
        let vote = match self.votes.get(&(me.to_string(), aid.clone())).copied() {
            Some("agree") => "disagree",
            Some(_) => "agree",
            None => ["agree", "disagree"][self.below(2)],
        };
        self.votes.insert((me.to_string(), aid.clone()), vote);
        let args: Vec<String> = [
            "amendment",
            "vote",
            &aid,
            "--as",
            me,
            "--vote",
            vote,
            "--rationale",
            why,
            "--json",
        ]
        .map(str::to_string)
        .into();
        let out = p.polisd(&args.iter().map(String::as_str).collect::<Vec<_>>());
        Some((args, out))
    }

    fn log(&self, p: &TestPolis, me: &str, note: &str) -> serde_json::Value {
        run_ok(p, &["log", "--as", me, "noted", "--note", note, "--json"])
    }
}

/// `check`'s findings on a clone, but the harness citizens' missing status files (P015).
fn findings_but_missing_status(p: &TestPolis) -> Vec<serde_json::Value> {
    let check: serde_json::Value =
        serde_json::from_slice(&p.polisd(&["check", "--json"]).stdout).unwrap();
    check["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["code"] != "P015")
        .cloned()
        .collect()
}

/// Commits what a clone has, merges the others' work and pushes: the sync of one machine.
fn sync_clone(p: &TestPolis) {
    commit_all(p, "sync");
    pull(p);
    git(&project(p), &["push", "-q", "origin", "main"]);
}

/// Three machines, one citizen on each, 200 random operations (seeded): opens, claims,
/// settles, proposals, votes and log lines, each machine syncing through one git remote at
/// random moments. Then each machine's daemon runs, and the machines sync until nothing is left
/// to commit. The polises are identical, hold no conflict marker, every agent line once, the
/// same `routing_stats.yml` as a rebuild, and no notice the final state does not justify.
#[test]
fn three_git_clones_after_200_random_operations_are_identical() {
    let seed: u64 = std::env::var("POLISD_SYNC_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20261205);
    let mut work = RandomWork::seeded(seed);
    let (_origin, a, b) = two_clones();
    let url = _origin.path().display().to_string();
    let c = machine(|d| {
        git(d, &["clone", "-q", &url, "project"]);
        d.join("project")
    });
    assert!(c.polisd(&["git-setup", "--program", BIN]).status.success());
    let machines = [&a, &b, &c];
    let citizens = [ALPHA, BETA, FOUNDER];
    let mut lines: Vec<String> = Vec::new();
    for step in 0..200 {
        let m = work.below(3);
        let (p, me) = (machines[m], citizens[m]);
        let note = format!("step {step}");
        let answer = match work.below(100) {
            0..=17 => Some(work.open(p, m, me)),
            18..=32 => work.claim(p, m, me),
            33..=47 => {
                let quality = work.below(5) + 1;
                work.settle(p, m, quality)
            }
            48..=54 => Some(work.propose(p, m, me)),
            55..=69 => work.vote(p, me, &note).map(|(args, out)| {
                succeeded(&args.iter().map(String::as_str).collect::<Vec<_>>(), out)
            }),
            70..=79 => Some(work.log(p, me, &note)),
            _ => {
                sync_clone(p);
                None
            }
        };
        if let Some(line) = answer.as_ref().and_then(line_in) {
            lines.push(line);
        }
    }
    // Every machine's daemon derives its notices, and the machines sync until they agree.
    let daemons: Vec<Daemon> = machines.iter().map(|p| p.start_daemon()).collect();
    for _ in 0..6 {
        for p in machines {
            quiet(p);
            sync_clone(p);
        }
        for p in machines {
            quiet(p);
            commit_all(p, "sync");
            pull(p);
        }
        let heads: BTreeSet<String> = machines
            .iter()
            .map(|p| git(&project(p), &["rev-parse", "HEAD"]))
            .collect();
        let clean = machines
            .iter()
            .all(|p| git(&project(p), &["status", "--porcelain"]).is_empty());
        if clean && heads.len() == 1 {
            break;
        }
    }
    drop(daemons);
    assert_converged(&a, &b, &[]);
    assert_converged(&b, &c, &[]);
    let chronicle = a.read("chronicle.md");
    for l in &lines {
        assert_eq!(
            chronicle.lines().filter(|h| *h == l.trim_end()).count(),
            1,
            "seed {seed}: {l:?} once in\n{chronicle}"
        );
    }
    assert_eq!(
        a.read("contracts/routing_stats.yml"),
        c.read("contracts/routing_stats.yml")
    );
    // The final state holds no finding (but the harness citizens' missing status files), so
    // no notice may report one, or a sync conflict or a divergence.
    let findings = findings_but_missing_status(&a);
    assert!(findings.is_empty(), "seed {seed}: {findings:#?}");
    let unjustified: Vec<Marker> = a
        .all_markers()
        .into_iter()
        .filter(|m| {
            [
                "chronicle-finding",
                "record-finding",
                "sync-conflict",
                "worktree-diverged",
            ]
            .contains(&m.kind.as_str())
        })
        .collect();
    assert!(unjustified.is_empty(), "seed {seed}: {unjustified:#?}");
    assert!(
        work.opened.iter().sum::<usize>() > 10 && work.proposed > 3,
        "the run did some of everything"
    );
}

// ---------------------------------------------------------------------------------------------
// Two real Syncthing instances on localhost

/// A free TCP port on localhost (bound, read and released).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// One Syncthing instance: its home, device id and ports.
struct Syncthing {
    home: PathBuf,
    id: String,
    listen: u16,
    gui: u16,
}

/// The Debian package's binary; a missing one fails the test, naming it.
const SYNCTHING: &str = "/usr/bin/syncthing";

impl Syncthing {
    /// Generates keys and a device id in a home of its own (`HOME` too, so nothing is
    /// created in the user's).
    fn generate(home: PathBuf) -> Syncthing {
        assert!(
            Path::new(SYNCTHING).is_file(),
            "{SYNCTHING} is missing: install the Debian package `syncthing` (apt-get install syncthing)"
        );
        let out = Command::new(SYNCTHING)
            .args(["generate", "--no-default-folder"])
            .arg(format!("--home={}", home.display()))
            .env("HOME", &home)
            .output()
            .unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let id = regex::Regex::new(r"[A-Z0-9]{7}(-[A-Z0-9]{7}){7}")
            .unwrap()
            .find(&text)
            .unwrap_or_else(|| panic!("no device id from `syncthing generate`: {text}"))
            .as_str()
            .to_string();
        Syncthing {
            home,
            id,
            listen: free_port(),
            gui: free_port(),
        }
    }

    /// Writes a config that shares `folder` with `peers` only (each machine with every other):
    /// no discovery, relays, NAT or usage reporting; the watcher's delay at one second, and a
    /// peer that was not listening yet tried again a second later (not Syncthing's minute).
    fn configure(&self, folder: &Path, peers: &[&Syncthing]) {
        let device = |s: &Syncthing| {
            format!(
                "    <device id=\"{}\" name=\"{}\" compression=\"metadata\" introducer=\"false\">\n        <address>tcp://127.0.0.1:{}</address>\n    </device>\n",
                s.id, s.listen, s.listen
            )
        };
        let members: String = std::iter::once(self)
            .chain(peers.iter().copied())
            .map(|s| format!("        <device id=\"{}\"></device>\n", s.id))
            .collect();
        let devices: String = std::iter::once(self)
            .chain(peers.iter().copied())
            .map(device)
            .collect();
        let config = format!(
            "<configuration version=\"36\">\n    <folder id=\"polis\" label=\"polis\" path=\"{}\" type=\"sendreceive\" rescanIntervalS=\"10\" fsWatcherEnabled=\"true\" fsWatcherDelayS=\"1\" ignorePerms=\"false\" autoNormalize=\"true\">\n{}        <minDiskFree unit=\"%\">0</minDiskFree>\n        <maxConflicts>-1</maxConflicts>\n        <markerName>.stfolder</markerName>\n        <order>random</order>\n        <maxConcurrentWrites>2</maxConcurrentWrites>\n        <weakHashThresholdPct>25</weakHashThresholdPct>\n    </folder>\n{}    <gui enabled=\"true\" tls=\"false\">\n        <address>127.0.0.1:{}</address>\n        <apikey>polisd-test-{}</apikey>\n    </gui>\n    <options>\n        <listenAddress>tcp://127.0.0.1:{}</listenAddress>\n        <reconnectionIntervalS>1</reconnectionIntervalS>\n        <globalAnnounceEnabled>false</globalAnnounceEnabled>\n        <localAnnounceEnabled>false</localAnnounceEnabled>\n        <relaysEnabled>false</relaysEnabled>\n        <natEnabled>false</natEnabled>\n        <urAccepted>-1</urAccepted>\n        <crashReportingEnabled>false</crashReportingEnabled>\n        <autoUpgradeIntervalH>0</autoUpgradeIntervalH>\n        <startBrowser>false</startBrowser>\n        <minHomeDiskFree unit=\"%\">0</minHomeDiskFree>\n    </options>\n</configuration>\n",
            folder.display(),
            members,
            devices,
            self.gui,
            self.listen,
            self.listen
        );
        fs::write(self.home.join("config.xml"), config).unwrap();
        fs::create_dir_all(folder.join(".stfolder")).unwrap();
        // polisd's own temporary files never travel.
        fs::write(folder.join(".stignore"), ".polisd-*\n").unwrap();
    }

    /// Starts the instance, killed when the returned guard is dropped (pass or fail).
    fn start(&self) -> Killed {
        let log = fs::File::create(self.home.join("syncthing.log")).unwrap();
        Killed::new(
            Command::new(SYNCTHING)
                .arg("serve")
                .arg(format!("--home={}", self.home.display()))
                .args(["--no-browser", "--no-restart", "--no-default-folder"])
                .env("HOME", &self.home)
                .env("STNOUPGRADE", "1")
                .stdout(log.try_clone().unwrap())
                .stderr(log)
                .spawn()
                .unwrap(),
        )
    }
}

/// The tree of a polis as Syncthing leaves it to compare: its own in-flight files left out.
/// Files that vanish while it reads (a transfer renamed into place) are left out.
fn synced_tree(root: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with(".syncthing.") || name.starts_with(".polisd-") {
                continue;
            }
            match e.file_type() {
                Ok(t) if t.is_dir() => stack.push(e.path()),
                Ok(t) if t.is_file() => {
                    if let Ok(bytes) = fs::read(e.path()) {
                        let rel = e.path().strip_prefix(root).unwrap().display().to_string();
                        out.insert(rel, bytes);
                    }
                }
                _ => {}
            }
        }
    }
    out
}

/// The daemons' settling window in the Syncthing test: polisd's default.
const SETTLING: &str = "10s";

/// Two machines synced by two real Syncthing instances, each running polisd, 100 random
/// operations on each side: they converge, with every agent line once, the same stats, and no
/// P009, C009, C006 or P018 that the transfer itself caused.
#[test]
fn two_daemons_on_two_real_syncthing_instances_converge() {
    syncthing_converges(2, 100, 20261206);
}

/// A team of three: three machines each sharing the polis with both others (Syncthing's full
/// mesh, so a change can reach a machine by two ways at once), each running polisd, 60 random
/// operations on each. The same promises as with two. Before the daemon put back the lines a
/// sync tool's replace lost, this lost an agent's lines in about one run in five.
#[test]
fn three_daemons_on_three_real_syncthing_instances_converge() {
    syncthing_converges(3, 60, 20261207);
}

/// `n` machines (at most 3) synced by real Syncthing instances, each sharing the polis with
/// every other, each running polisd while its agent does `operations` random operations.
fn syncthing_converges(n: usize, operations: usize, seed: u64) {
    let mut work = RandomWork::seeded(seed);
    let machines: Vec<TestPolis> = (0..n).map(|_| machine(|d| d.join("project"))).collect();
    for p in &machines {
        fs::create_dir_all(project(p)).unwrap();
    }
    found(&project(&machines[0]));
    let instances: Vec<Syncthing> = machines
        .iter()
        .map(|p| Syncthing::generate(p.dir.path().join("syncthing")))
        .collect();
    for (i, (p, st)) in machines.iter().zip(&instances).enumerate() {
        let peers: Vec<&Syncthing> = instances
            .iter()
            .enumerate()
            .filter(|(j, _)| *j != i)
            .map(|(_, peer)| peer)
            .collect();
        st.configure(&project(p), &peers);
    }
    let _running: Vec<Killed> = instances.iter().map(Syncthing::start).collect();
    let converged = || {
        let first = synced_tree(&machines[0].root);
        first.contains_key("CONSTITUTION.md")
            && machines[1..].iter().all(|p| synced_tree(&p.root) == first)
    };
    wait_until(
        "every machine to receive the polis",
        Duration::from_secs(120),
        converged,
    );
    // The shipped window: Syncthing's watcher holds back a folder that keeps changing for up to
    // six times `fsWatcherDelayS` (here 6 s), so a contract can arrive that long after the
    // chronicle line that links to it.
    for p in &machines {
        with_settling(p, SETTLING);
    }
    let _daemons: Vec<Daemon> = machines.iter().map(|p| p.start_daemon()).collect();

    let citizens = [ALPHA, BETA, FOUNDER];
    let mut lines = Vec::new();
    let mut done = vec![0; n];
    while done.iter().any(|d| *d < operations) {
        let busy: Vec<usize> = (0..n).filter(|m| done[*m] < operations).collect();
        let m = busy[work.below(busy.len())];
        done[m] += 1;
        let (p, me) = (&machines[m], citizens[m]);
        let note = format!("step {m} {}", done[m]);
        let answer = match work.below(100) {
            0..=19 => Some(work.open(p, m, me)),
            20..=39 => work.claim(p, m, me),
            40..=59 => work.settle(p, m, 4),
            60..=64 => Some(work.propose(p, m, me)),
            // The daemon may have rejected the amendment meanwhile (its quorum is out of
            // reach): the vote is refused then, and writes nothing.
            65..=79 => work
                .vote(p, me, &note)
                .map(|(_, out)| {
                    serde_json::from_slice(&out.stdout).unwrap_or(serde_json::Value::Null)
                })
                .filter(|v: &serde_json::Value| v["ok"] != false),
            _ => Some(work.log(p, me, &note)),
        };
        if let Some(line) = answer.as_ref().and_then(line_in) {
            lines.push(line);
        }
        // Agents take a moment between actions; the sync runs meanwhile.
        std::thread::sleep(Duration::from_millis(work.below(60) as u64));
    }
    // Converged: the same tree on every machine, unchanged across the settling window.
    wait_until("the machines to converge", Duration::from_secs(240), || {
        if !converged() {
            std::thread::sleep(Duration::from_millis(300));
            return false;
        }
        // Longer than the settling window: a held finding is told within it.
        let before = synced_tree(&machines[0].root);
        std::thread::sleep(Duration::from_millis(12_000));
        converged() && synced_tree(&machines[0].root) == before
    });
    if let Ok(dir) = std::env::var("POLISD_SYNC_DEBUG") {
        let dir = Path::new(&dir).join(format!("{n}-machines"));
        let dir = dir.as_path();
        fs::create_dir_all(dir).unwrap();
        for ((p, st), name) in machines.iter().zip(&instances).zip(["a", "b", "c"]) {
            let _ = fs::copy(
                p.dir.path().join("daemon.log"),
                dir.join(format!("{name}-daemon.log")),
            );
            let _ = fs::copy(
                st.home.join("syncthing.log"),
                dir.join(format!("{name}-syncthing.log")),
            );
            let _ = fs::write(
                dir.join(format!("{name}-chronicle.md")),
                p.read("chronicle.md"),
            );
        }
        fs::write(dir.join("lines.txt"), lines.concat()).unwrap();
    }
    for other in &machines[1..] {
        assert_converged(&machines[0], other, &[]);
    }
    // Every agent's line once, the third machine's citizen (the founder) included.
    let chronicle = machines[0].read("chronicle.md");
    for l in &lines {
        let times = chronicle.lines().filter(|h| *h == l.trim_end()).count();
        if times != 1 {
            let logs: Vec<(PathBuf, PathBuf)> = machines
                .iter()
                .zip(&instances)
                .map(|(p, st)| {
                    (
                        p.dir.path().join("daemon.log"),
                        st.home.join("syncthing.log"),
                    )
                })
                .collect();
            panic!(
                "{l:?} {times} times in\n{chronicle}\n{}",
                what_the_logs_say(l, &logs)
            );
        }
    }
    for p in &machines {
        for m in p.all_markers() {
            assert_ne!(m.kind, "sync-conflict", "{m:?}");
        }
        for id in citizens {
            let inbox = p.read(&format!("citizens/{id}/inbox.md"));
            for code in ["C009", "C006", "P009", "P018"] {
                let told: Vec<&str> = inbox
                    .split("\n---\n")
                    .filter(|b| b.contains(code))
                    .collect();
                assert!(
                    told.is_empty(),
                    "{code} told to {id}:\n{}",
                    told.join("\n---\n")
                );
            }
        }
    }
    assert_every_notice_sent_is_there_once(&machines, &_daemons);
    let findings = findings_but_missing_status(&machines[0]);
    assert!(findings.is_empty(), "{findings:#?}");
}

/// What each machine's daemon and Syncthing logged about a line that did not arrive once: the
/// daemon's lines naming its link or note, its lost-line findings and restores, and Syncthing's
/// conflicts, the last 20 of each, so a rare failure in CI says where the line went.
fn what_the_logs_say(line: &str, logs: &[(PathBuf, PathBuf)]) -> String {
    let fields: Vec<&str> = line.trim_end().split(" | ").collect();
    let marks: Vec<&str> = fields
        .iter()
        .skip(3)
        .copied()
        .filter(|f| f.len() > 2)
        .collect();
    let mut out = String::new();
    for ((daemon, syncthing), name) in logs.iter().zip(["a", "b", "c"]) {
        let pick = |path: &Path, keep: &dyn Fn(&str) -> bool| -> Vec<String> {
            let text = fs::read_to_string(path).unwrap_or_default();
            let kept: Vec<String> = text
                .lines()
                .filter(|l| keep(l))
                .map(str::to_string)
                .collect();
            kept[kept.len().saturating_sub(20)..].to_vec()
        };
        // A finding that resolved itself within the settling window is routine under sync and
        // would fill the excerpt: kept only when it names the line.
        let said = pick(daemon, &|l| {
            marks.iter().any(|m| l.contains(m))
                || !l.contains("resolved itself")
                    && (l.contains("C009") || l.contains("restored") || l.contains("conflict"))
        });
        let conflicts = pick(syncthing, &|l| l.to_lowercase().contains("conflict"));
        out.push_str(&format!(
            "--- machine {name}: daemon\n{}\n--- machine {name}: syncthing\n{}\n",
            said.join("\n"),
            conflicts.join("\n")
        ));
    }
    out
}

/// Every notice a daemon logged as sent is in its recipient's inbox exactly once on every
/// machine (a sync tool's replace that lost one was made good), unless a daemon let it go as
/// past; and no marker is there twice. A lost notice is delivered again only once the polis
/// has been quiet for the settling window, which can end after the tree looked settled (a
/// replace in the last moments), so its return is waited for, with a deadline.
fn assert_every_notice_sent_is_there_once(machines: &[TestPolis], daemons: &[Daemon]) {
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let missing = notices_not_there_once(machines, daemons);
        if missing.is_empty() {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{}",
            missing.join("\n\n")
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    for p in machines {
        let mut seen = BTreeSet::new();
        for m in p.all_markers() {
            assert!(
                seen.insert((m.recipient.clone(), m.id.clone())),
                "{m:?} twice"
            );
        }
    }
}

/// Each notice a daemon logged as sent (and did not let go as past) that some machine's inbox
/// does not hold exactly once, with that inbox.
fn notices_not_there_once(machines: &[TestPolis], daemons: &[Daemon]) -> Vec<String> {
    let field = |line: &str, key: &str| {
        line.split_whitespace()
            .find_map(|w| w.strip_prefix(key))
            .map(str::to_string)
    };
    let mut sent = BTreeSet::new();
    let mut let_go = BTreeSet::new();
    for d in daemons {
        for line in d.log_text().lines() {
            let notice = (field(line, "to="), field(line, "kind="), field(line, "id="));
            let (Some(to), Some(kind), Some(id)) = notice else {
                continue;
            };
            if line.contains(" notified ") {
                sent.insert((to, kind, id));
            } else if line.contains("a notice that is past") {
                let_go.insert((to, kind, id));
            }
        }
    }
    assert!(!sent.is_empty(), "no notice was sent");
    let mut missing = Vec::new();
    for p in machines {
        for (to, kind, id) in sent.difference(&let_go) {
            let inbox = p.read(&format!("citizens/{to}/inbox.md"));
            let marker = format!("<!-- polisd:{kind}:{id} -->");
            let times = inbox.matches(&marker).count();
            if times != 1 {
                missing.push(format!("{marker} {times} times, not once, in\n{inbox}"));
            }
        }
    }
    missing
}
