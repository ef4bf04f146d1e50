//! One polis on several machines, clones and worktrees (docs/sync.md): two real `polisd run`
//! processes on two copies of a polis, synced by real `git` operations or by a file-copy sync
//! that keeps both versions as conflict copies the way Syncthing does, while agents act on
//! both sides. And one test per scar of the tools before us: a union merge that brings a
//! record back (beads#1485), a merge driver declared but not configured (overdeck#1901),
//! conflict markers read as records (tbd#155), and an mtime that lies (beads#321).
//!
//! One test binary (one link), its tests in a module per concept; the machines, the file-copy
//! sync and the git clones they share are here.

#[path = "../harness/mod.rs"]
mod harness;

mod conflict_copies;
mod driver;
mod git_clones;
mod held_copies;
mod lost_notices;
mod notices;
mod paused_git;
mod random_work;
mod scars;
mod stamps;
mod worktrees;

use harness::*;
use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

const ALPHA: &str = "alpha-agent-one";
const BETA: &str = "beta-agent-two";
const FOUNDER: &str = "founder-agent";

/// git in `dir` with a fixed identity, no system or user config, and no editor to wait for.
fn git_command(dir: &Path, args: &[&str]) -> Command {
    let mut git = Command::new("git");
    git.arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_AUTHOR_NAME", "test")
        .env("GIT_AUTHOR_EMAIL", "test@example.com")
        .env("GIT_COMMITTER_NAME", "test")
        .env("GIT_COMMITTER_EMAIL", "test@example.com")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_EDITOR", "true")
        .env("HOME", dir);
    git
}

/// Runs git in `dir` (see [`git_command`]); panics with its output on failure.
#[track_caller]
fn git(dir: &Path, args: &[&str]) -> String {
    let out = git_command(dir, args).output().unwrap();
    assert!(
        out.status.success(),
        "git {args:?} in {}: {}{}",
        dir.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A polis at `project/_polis` in a fresh folder of its own (its own state folder, log and
/// config), for a clone made by the test.
fn machine(project: impl FnOnce(&Path) -> PathBuf) -> TestPolis {
    let dir = tempfile::tempdir().unwrap();
    let project = project(dir.path());
    TestPolis {
        root: project.join("_polis"),
        state_dir: dir.path().join("state"),
        dir,
    }
}

/// A founded polis with two registered agents, at `project`.
fn found(project: &Path) {
    let out = Command::new(BIN)
        .arg("init")
        .arg(project)
        .args(["--agent-id", FOUNDER])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let p = TestPolis {
        dir: tempfile::tempdir().unwrap(),
        root: project.join("_polis"),
        state_dir: project.join("unused"),
    };
    p.citizen(ALPHA, "anthropic", &[("rust", 4)], "medium");
    p.citizen(BETA, "openai", &[("rust", 3)], "low");
}

fn settled(id: &str, opener: &str, owner: &str, quality: u8, at: &str) -> String {
    format!(
        "---\ncontract_id: {id}\ntitle: {id}\nopened_by: {opener}\nopened_at: {at}\nowner: {owner}\nstatus: settled\nrequired_tags: [rust]\nsettled_at: {at}\nquality_score: {quality}\nactual_minutes: 20\n---\n\n## Settlement\n\nDone.\n"
    )
}

/// Every regular file under `root`, by relative path (`.git`, `state` and Syncthing's
/// resumable partial transfers left out).
fn tree(root: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in fs::read_dir(&dir).unwrap().flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name == ".git" || name.starts_with(".syncthing.") {
                continue;
            }
            let t = e.file_type().unwrap();
            if t.is_dir() {
                stack.push(e.path());
            } else if t.is_file() {
                let rel = e.path().strip_prefix(root).unwrap().display().to_string();
                out.insert(rel, fs::read(e.path()).unwrap());
            }
        }
    }
    out
}

/// Waits until the polis has stopped changing: the same tree twice, 400 ms apart, with
/// `routing_stats.yml` equal to a from-scratch reconcile.
#[track_caller]
fn quiet(p: &TestPolis) {
    wait_for(p, "the polis to settle", || {
        let before = tree(&p.root);
        std::thread::sleep(Duration::from_millis(400));
        before == tree(&p.root) && p.read("contracts/routing_stats.yml") == p.expected_stats()
    });
}

/// The agents' lines of a chronicle (polisd's own and the founder's left out).
fn agent_lines(chronicle: &str) -> Vec<String> {
    chronicle
        .lines()
        .filter(|l| l.contains(ALPHA) || l.contains(BETA))
        .filter(|l| l.starts_with("- "))
        .map(str::to_string)
        .collect()
}

#[track_caller]
fn assert_converged(a: &TestPolis, b: &TestPolis, lines: &[String]) {
    let (ta, tb) = (tree(&a.root), tree(&b.root));
    let only: Vec<_> = ta
        .keys()
        .filter(|k| ta.get(*k) != tb.get(*k))
        .chain(tb.keys().filter(|k| !ta.contains_key(*k)))
        .collect();
    assert!(only.is_empty(), "the trees differ in {only:?}");
    assert_eq!(a.read("contracts/routing_stats.yml"), a.expected_stats());
    let chronicle = a.read("chronicle.md");
    let have = agent_lines(&chronicle);
    for l in lines {
        assert_eq!(
            have.iter().filter(|h| *h == l.trim_end()).count(),
            1,
            "{l:?} once in\n{chronicle}"
        );
    }
    let stamps: Vec<&str> = chronicle
        .lines()
        .filter(|l| l.starts_with("- "))
        .map(|l| &l[2..18])
        .collect();
    let mut sorted = stamps.clone();
    sorted.sort();
    assert_eq!(
        stamps, sorted,
        "the chronicle is in timestamp order:\n{chronicle}"
    );
    for p in [a, b] {
        let markers = p.all_markers();
        let unique: BTreeSet<_> = markers.iter().collect();
        assert_eq!(
            unique.len(),
            markers.len(),
            "a notice is duplicated: {markers:#?}"
        );
        for (rel, bytes) in tree(&p.root) {
            let text = String::from_utf8_lossy(&bytes);
            assert!(!text.contains("<<<<<<<"), "conflict markers in {rel}");
            assert!(
                !rel.contains("sync-conflict"),
                "a conflict copy is left: {rel}"
            );
        }
    }
}

// ---------------------------------------------------------------------------------------------
// A file-copy sync that keeps both versions, as Syncthing does

/// Syncs two folders the way Syncthing does: a file changed on one side since the last sync
/// is copied to the other (its mtime kept); one changed on both sides to different bytes
/// keeps A's version and B's as `<name>.sync-conflict-<date>-<time>-<device>.<ext>` on both
/// sides (the copy is written before the winner, as Syncthing renames the loser aside first);
/// one deleted on one side and unchanged on the other is deleted. `only` limits the sync to
/// paths starting with it. Returns how many files it touched, and how many conflicts it kept.
fn syncthing(
    a: &Path,
    b: &Path,
    last: &mut BTreeMap<String, Vec<u8>>,
    only: &str,
) -> (usize, usize) {
    let (ta, tb) = (tree(a), tree(b));
    let names: BTreeSet<&String> = ta.keys().chain(tb.keys()).collect();
    let (mut touched, mut conflicts) = (0, 0);
    let put = |root: &Path, rel: &str, bytes: &[u8], mtime_from: &Path| {
        let path = root.join(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        let tmp = path.with_file_name(format!(".syncthing.{}.tmp", rel.replace('/', "_")));
        fs::write(&tmp, bytes).unwrap();
        if let Ok(m) = fs::metadata(mtime_from).and_then(|m| m.modified()) {
            let _ = fs::File::options()
                .write(true)
                .open(&tmp)
                .unwrap()
                .set_modified(m);
        }
        fs::rename(&tmp, &path).unwrap();
    };
    for rel in names {
        if !rel.starts_with(only) || rel.contains(".syncthing.") || rel.ends_with(".tmp") {
            continue;
        }
        let (va, vb, vl) = (ta.get(rel), tb.get(rel), last.get(rel));
        match (va, vb) {
            (Some(x), Some(y)) if x == y => {}
            (Some(x), Some(y)) => {
                let a_changed = Some(x) != vl;
                let b_changed = Some(y) != vl;
                if a_changed && b_changed {
                    let (stem, ext) = match rel.rfind('.') {
                        Some(i) if !rel[i..].contains('/') => (&rel[..i], &rel[i..]),
                        _ => (rel.as_str(), ""),
                    };
                    let copy = format!("{stem}.sync-conflict-20260302-120000-BBBBBBB{ext}");
                    put(a, &copy, y, &b.join(rel));
                    put(b, &copy, y, &b.join(rel));
                    put(b, rel, x, &a.join(rel));
                    touched += 3;
                    conflicts += 1;
                } else if a_changed {
                    put(b, rel, x, &a.join(rel));
                    touched += 1;
                } else {
                    put(a, rel, y, &b.join(rel));
                    touched += 1;
                }
            }
            (Some(x), None) => {
                if vl == Some(x) {
                    fs::remove_file(a.join(rel)).unwrap();
                } else {
                    put(b, rel, x, &a.join(rel));
                }
                touched += 1;
            }
            (None, Some(y)) => {
                if vl == Some(y) {
                    fs::remove_file(b.join(rel)).unwrap();
                } else {
                    put(a, rel, y, &b.join(rel));
                }
                touched += 1;
            }
            (None, None) => {}
        }
    }
    let (ta, tb) = (tree(a), tree(b));
    last.retain(|rel, _| !rel.starts_with(only));
    for (rel, bytes) in ta {
        if rel.starts_with(only) && tb.get(&rel) == Some(&bytes) {
            last.insert(rel, bytes);
        }
    }
    (touched, conflicts)
}

// ---------------------------------------------------------------------------------------------
// The settling window

/// Renames `text` over `rel` the way a sync tool puts a peer's version in place.
fn replace_as_a_sync_tool(p: &TestPolis, rel: &str, text: &str) {
    let path = p.path(rel);
    let name = path.file_name().unwrap().to_string_lossy().into_owned();
    // In the same folder, as Syncthing names its temporary files.
    let tmp = path.with_file_name(format!(".syncthing.{name}.tmp"));
    fs::write(&tmp, text).unwrap();
    fs::rename(&tmp, p.path(rel)).unwrap();
}

/// A polis whose daemon's settling window is `window` (the harness's default is short).
fn with_settling(p: &TestPolis, window: &str) {
    fs::write(
        p.dir.path().join("polisd.toml"),
        format!("[watch]\ndebounce = \"50ms\"\nsettling = \"{window}\"\n\n[log]\nlevel = \"debug\"\n\n[dashboard]\nlisten = \"127.0.0.1:0\"\n"),
    )
    .unwrap();
}

/// Waits until the daemon has logged `count` lines holding `text`.
#[track_caller]
fn wait_logged(p: &TestPolis, daemon: &Daemon, text: &str, count: usize) {
    wait_for(p, &format!("{count} log lines with {text:?}"), || {
        daemon.log_text().matches(text).count() >= count
    });
}

// ---------------------------------------------------------------------------------------------
// Clones of one git remote

/// A polis founded in a fresh git repository (branch `main`) on a machine of its own, and that
/// repository's folder.
fn founded_repo() -> (TestPolis, PathBuf) {
    let p = machine(|d| {
        let project = d.join("project");
        fs::create_dir_all(&project).unwrap();
        git(&project, &["init", "-q", "-b", "main"]);
        project
    });
    let project = project(&p);
    found(&project);
    (p, project)
}

/// Two clones of one repository with a founded polis and polisd's merge driver, A's pushed.
fn two_clones() -> (tempfile::TempDir, TestPolis, TestPolis) {
    let origin = tempfile::tempdir().unwrap();
    git(origin.path(), &["init", "-q", "--bare", "-b", "main", "."]);
    let url = origin.path().display().to_string();
    let a = machine(|d| {
        git(d, &["clone", "-q", &url, "project"]);
        d.join("project")
    });
    let project_a = a.root.parent().unwrap().to_path_buf();
    found(&project_a);
    ok(a.polisd(&["git-setup", "--program", BIN]));
    git(&project_a, &["add", "-A"]);
    git(&project_a, &["commit", "-qm", "found the polis"]);
    git(&project_a, &["push", "-q", "origin", "main"]);
    let b = machine(|d| {
        git(d, &["clone", "-q", &url, "project"]);
        d.join("project")
    });
    ok(b.polisd(&["git-setup", "--program", BIN]));
    (origin, a, b)
}

fn project(p: &TestPolis) -> PathBuf {
    p.root.parent().unwrap().to_path_buf()
}

fn commit_all(p: &TestPolis, message: &str) {
    git(&project(p), &["add", "-A"]);
    if !git(&project(p), &["status", "--porcelain"]).is_empty() {
        git(&project(p), &["commit", "-qm", message]);
    }
}

fn pull(p: &TestPolis) {
    git(
        &project(p),
        &["pull", "-q", "--no-rebase", "--no-edit", "origin", "main"],
    );
}
