//! One polis on several machines, clones and worktrees (docs/sync.md): two real `polisd run`
//! processes on two copies of a polis, synced by real `git` operations or by a file-copy sync
//! that keeps both versions as conflict copies the way Syncthing does, while agents act on
//! both sides. And one test per scar of the tools before us: a union merge that brings a
//! record back (beads#1485), a merge driver declared but not configured (overdeck#1901),
//! conflict markers read as records (tbd#155), and an mtime that lies (beads#321).

mod harness;

use harness::*;
use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

const ALPHA: &str = "alpha-agent-one";
const BETA: &str = "beta-agent-two";
const FOUNDER: &str = "founder-agent";

/// Runs git in `dir` with a fixed identity; panics with its output on failure.
#[track_caller]
fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_AUTHOR_NAME", "test")
        .env("GIT_AUTHOR_EMAIL", "test@example.com")
        .env("GIT_COMMITTER_NAME", "test")
        .env("GIT_COMMITTER_EMAIL", "test@example.com")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", dir)
        .output()
        .unwrap();
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
// git

#[test]
fn two_daemons_on_two_git_clones_converge() {
    let origin = tempfile::tempdir().unwrap();
    git(origin.path(), &["init", "-q", "--bare", "-b", "main", "."]);
    let url = origin.path().display().to_string();
    let a = machine(|d| {
        git(d, &["clone", "-q", &url, "project"]);
        d.join("project")
    });
    let project_a = a.root.parent().unwrap().to_path_buf();
    found(&project_a);
    let setup = a.polisd(&["git-setup", "--program", BIN]);
    assert!(
        setup.status.success(),
        "{}",
        String::from_utf8_lossy(&setup.stderr)
    );
    git(&project_a, &["add", "-A"]);
    git(&project_a, &["commit", "-qm", "found the polis"]);
    git(&project_a, &["push", "-q", "origin", "main"]);
    let b = machine(|d| {
        git(d, &["clone", "-q", &url, "project"]);
        d.join("project")
    });
    let project_b = b.root.parent().unwrap().to_path_buf();
    assert!(b.polisd(&["git-setup", "--program", BIN]).status.success());

    let _da = a.start_daemon();
    let _db = b.start_daemon();
    let mut lines = Vec::new();

    // Each side: an agent's line, a settlement (committed at once, before its daemon writes
    // anything, so the other daemon derives the same notices on its own), a new contract.
    let la = chronicle_line(ALPHA, "noted", "-", "working on the parser");
    a.append("chronicle.md", &la);
    // The settlement suggests a next citizen: each daemon dispatches the follow-up
    // on its own, A's now and B's once it pulls the settlement.
    let parser = settled("parser", BETA, ALPHA, 5, "2026-03-02 10:00:00").replace(
        "Done.\n",
        &format!("Done.\n\n### Suggested next citizen\n- **Citizen**: {BETA}\n- **Reason**: Fuzz the parser.\n- **Context**: src/parser.rs\n"),
    );
    a.save("contracts/settled/parser.md", &parser);
    git(&project_a, &["add", "_polis/contracts/settled/parser.md"]);
    git(&project_a, &["commit", "-qm", "settle parser"]);
    git(&project_a, &["push", "-q", "origin", "main"]);
    let follow_up = "contracts/open/parser-next-1.md";
    wait_for(&a, "A's follow-up contract", || {
        a.root.join(follow_up).is_file() && a.count(BETA, "handoff-opened") == 1
    });
    let dispatched_on_a = Instant::now();
    // On B the agents use polisd's commands instead of editing files: open, claim
    // and settle a contract, and log a line; every one appends its chronicle line.
    let line_of = |out: std::process::Output| -> String {
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let line = v["line"].as_str().or(v["chronicle"]["line"].as_str());
        format!("{}\n", line.unwrap())
    };
    let lb = line_of(b.polisd(&[
        "log",
        "--as",
        BETA,
        "noted",
        "--note",
        "working on the lexer",
        "--json",
    ]));
    let opened = line_of(b.polisd(&[
        "contract", "open", "--title", "Lexer", "--by", ALPHA, "--tags", "rust", "--json",
    ]));
    let claimed = line_of(b.polisd(&["contract", "claim", "lexer", "--as", BETA, "--json"]));
    let settled_b = line_of(b.polisd(&[
        "contract",
        "settle",
        "lexer",
        "--no-lesson",
        "sync is the point here",
        "--quality",
        "3",
        "--minutes",
        "15",
        "--json",
    ]));
    assert!(opened.contains("opened contract"));
    lines.extend([la, lb, claimed, settled_b]);
    // Both daemons notify the opener of the settlement they see.
    wait_for(&a, "A's contract-settled notice", || {
        a.count(BETA, "contract-settled") == 1
    });
    wait_for(&b, "B's contract-settled notice", || {
        b.count(ALPHA, "contract-settled") == 1
    });
    // B dispatches in a later second than A did: a follow-up stamped with the wall clock
    // would differ between the machines, and git would stop on an add/add conflict.
    while dispatched_on_a.elapsed() < Duration::from_millis(1100) {
        std::thread::sleep(Duration::from_millis(50));
    }
    git(
        &project_b,
        &["pull", "-q", "--no-rebase", "--no-edit", "origin", "main"],
    );
    // B's daemon now sees `parser` too and tells beta, as A's did on A, and opens the same
    // follow-up, byte for byte.
    wait_for(&b, "B's notice about the pulled settlement", || {
        b.count(BETA, "contract-settled") == 1
            && b.root.join(follow_up).is_file()
            && b.count(BETA, "handoff-opened") == 1
    });
    assert_eq!(b.read(follow_up), a.read(follow_up));

    // Sync until nothing is left to commit: every side commits what it has, B merges A's
    // history and pushes, A pulls.
    for _ in 0..4 {
        quiet(&a);
        quiet(&b);
        for project in [&project_a, &project_b] {
            git(project, &["add", "-A"]);
            if !git(project, &["status", "--porcelain"]).is_empty() {
                git(project, &["commit", "-qm", "sync"]);
            }
        }
        git(
            &project_a,
            &["pull", "-q", "--no-rebase", "--no-edit", "origin", "main"],
        );
        git(&project_a, &["push", "-q", "origin", "main"]);
        git(
            &project_b,
            &["pull", "-q", "--no-rebase", "--no-edit", "origin", "main"],
        );
        git(&project_b, &["push", "-q", "origin", "main"]);
        git(
            &project_a,
            &["pull", "-q", "--no-rebase", "--no-edit", "origin", "main"],
        );
        quiet(&a);
        quiet(&b);
        let clean = |p: &Path| git(p, &["status", "--porcelain"]).is_empty();
        if clean(&project_a) && clean(&project_b) {
            break;
        }
    }
    assert_converged(&a, &b, &lines);
    assert_eq!(a.count(BETA, "contract-settled"), 1);
    assert_eq!(a.count(ALPHA, "contract-settled"), 1);
    assert_eq!(a.count(BETA, "handoff-opened"), 1);
    let chronicle = a.read("chronicle.md");
    assert_eq!(
        chronicle
            .lines()
            .filter(|l| l.contains("| opened contract | [[contracts/open/parser-next-1]]"))
            .count(),
        1,
        "the follow-up's line once:\n{chronicle}"
    );
}

/// git worktrees holding diverging copies of one claimed contract: `status` names both, and
/// the daemon tells the index keeper once.
#[test]
fn two_worktrees_with_diverging_claims_are_reported_once() {
    let p = machine(|d| {
        let project = d.join("project");
        fs::create_dir_all(&project).unwrap();
        git(&project, &["init", "-q", "-b", "main"]);
        project
    });
    let project = p.root.parent().unwrap().to_path_buf();
    found(&project);
    let open = "contracts/open/tokenizer.md";
    p.save(
        open,
        "---\ncontract_id: tokenizer\ntitle: Tokenizer\nopened_by: founder-agent\nowner: null\nstatus: proposed\nrequired_tags: [rust]\nrouting:\n  recommended_by_router: beta-agent-two\n---\n\n## Intent\n\nTokens.\n",
    );
    git(&project, &["add", "-A"]);
    git(&project, &["commit", "-qm", "open tokenizer"]);
    let wt2 = p.dir.path().join("wt2");
    git(
        &project,
        &[
            "worktree",
            "add",
            "-q",
            wt2.to_str().unwrap(),
            "-b",
            "agent-two",
        ],
    );
    let status = || -> serde_json::Value {
        serde_json::from_slice(&p.polisd(&["status", "--json"]).stdout).unwrap()
    };
    assert_eq!(status()["worktrees"]["diverged"], serde_json::json!([]));

    let daemon = p.start_daemon();
    let claim = |root: &Path, who: &str| {
        let path = root.join(open);
        let text = fs::read_to_string(&path).unwrap();
        fs::write(
            &path,
            text.replace("owner: null", &format!("owner: {who}"))
                .replace("status: proposed", "status: claimed"),
        )
        .unwrap();
    };
    claim(&p.root, ALPHA);
    claim(&wt2.join("_polis"), BETA);
    // The daemon watches its own worktree; the claim there makes it compare.
    wait_for(&p, "the worktree-diverged notice", || {
        p.count(FOUNDER, "worktree-diverged") == 1
    });
    let s = status();
    let common = s["worktrees"]["git_common_dir"].as_str().unwrap();
    assert!(common.ends_with("project/.git"), "{common}");
    let diverged = &s["worktrees"]["diverged"][0];
    assert_eq!(diverged["contract_id"], "tokenizer");
    let copies = diverged["copies"].to_string();
    assert!(copies.contains(ALPHA) && copies.contains(BETA), "{copies}");
    assert!(
        copies.contains("wt2/_polis/contracts/open/tokenizer.md"),
        "{copies}"
    );
    let inbox = p.read(&format!("citizens/{FOUNDER}/inbox.md"));
    assert!(
        inbox.contains("wt2/_polis/contracts/open/tokenizer.md"),
        "{inbox}"
    );
    // Another change in the same contract, the divergence unchanged: nothing new is sent.
    p.append(open, "\nProgress: started.\n");
    let before = daemon.log_text().matches("pass done").count();
    wait_for(&p, "the next pass", || {
        daemon.log_text().matches("pass done").count() > before
    });
    assert_eq!(p.count(FOUNDER, "worktree-diverged"), 1);
}

/// overdeck#1901: `.gitattributes` named the driver, but a fresh clone's config lacked it, so
/// git merged as text. `check` and the daemon say so until `git-setup` runs in that clone.
#[test]
fn a_declared_but_unconfigured_merge_driver_is_reported() {
    let origin = machine(|d| {
        let project = d.join("project");
        fs::create_dir_all(&project).unwrap();
        git(&project, &["init", "-q", "-b", "main"]);
        project
    });
    let project = origin.root.parent().unwrap().to_path_buf();
    found(&project);
    assert!(origin
        .polisd(&["git-setup", "--program", BIN])
        .status
        .success());
    git(&project, &["add", "-A"]);
    git(&project, &["commit", "-qm", "found"]);
    assert!(origin.polisd(&["check"]).status.success());

    let clone = machine(|d| {
        git(d, &["clone", "-q", project.to_str().unwrap(), "project"]);
        d.join("project")
    });
    let out = clone.polisd(&["check", "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let codes: Vec<&str> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["code"].as_str().unwrap())
        // The harness's citizens have no status.md or journal.md: P015 registry warnings.
        .filter(|c| *c != "P015")
        .collect();
    assert_eq!(codes, ["P025"]);
    let daemon = clone.start_daemon();
    assert!(daemon.log_text().contains("P025"), "{}", daemon.log_text());
    drop(daemon);
    assert!(clone
        .polisd(&["git-setup", "--program", BIN])
        .status
        .success());
    assert!(clone.polisd(&["check"]).status.success());
}

/// beads#1485: a union merge brought deleted records back. Through git and polisd's driver,
/// a notice its owner archived on one branch stays archived when the other branch merges,
/// while plain `merge=union` brings it back.
#[test]
fn a_merge_does_not_bring_an_archived_notice_back() {
    let run = |attributes: Option<&str>| -> String {
        let p = machine(|d| {
            let project = d.join("project");
            fs::create_dir_all(&project).unwrap();
            git(&project, &["init", "-q", "-b", "main"]);
            project
        });
        let project = p.root.parent().unwrap().to_path_buf();
        found(&project);
        match attributes {
            None => assert!(p.polisd(&["git-setup", "--program", BIN]).status.success()),
            Some(a) => fs::write(p.path(".gitattributes"), a).unwrap(),
        }
        let inbox = format!("citizens/{ALPHA}/inbox.md");
        let block = |id: &str, stamp: &str| {
            format!("\n### {stamp} from polis-daemon\n\nSomething.\n\n[[contracts/x]]\n<!-- polisd:contract-settled:{id} -->\n\n---\n")
        };
        p.append(&inbox, &block("00000000000000aa", "2026-03-02 10:00"));
        git(&project, &["add", "-A"]);
        git(&project, &["commit", "-qm", "a notice"]);
        git(&project, &["checkout", "-qb", "other"]);
        p.append(&inbox, &block("00000000000000bb", "2026-03-02 11:00"));
        git(&project, &["commit", "-qam", "another notice"]);
        git(&project, &["checkout", "-q", "main"]);
        // The owner archives the first notice.
        let text = p.read(&inbox);
        let first = block("00000000000000aa", "2026-03-02 10:00");
        p.save(&inbox, &text.replace(&first, ""));
        p.save(&format!("citizens/{ALPHA}/inbox-archive.md"), &first);
        git(&project, &["add", "-A"]);
        git(&project, &["commit", "-qm", "archive"]);
        git(&project, &["merge", "-q", "--no-edit", "other"]);
        p.read(&inbox)
    };
    let merged = run(None);
    assert!(!merged.contains("00000000000000aa"), "{merged}");
    assert!(merged.contains("00000000000000bb"), "{merged}");
    let union = run(Some("citizens/*/inbox.md merge=union\n"));
    assert!(
        union.contains("00000000000000aa"),
        "plain union resurrects it: {union}"
    );
}

/// tbd#155: conflict markers made records vanish while sync reported success. A file with
/// markers is a finding and is never read as a record: the stats leave it out, and once the
/// markers are resolved it counts.
#[test]
fn conflict_markers_are_findings_and_never_records() {
    let p = TestPolis::init(FOUNDER);
    p.citizen(ALPHA, "anthropic", &[("rust", 4)], "medium");
    let good = settled("parser", FOUNDER, ALPHA, 4, "2026-03-02 10:00:00");
    let conflicted = good.replace(
        "quality_score: 4\n",
        "<<<<<<< HEAD\nquality_score: 4\n=======\nquality_score: 2\n>>>>>>> origin/main\n",
    );
    p.save("contracts/settled/parser.md", &conflicted);
    p.append(
        "chronicle.md",
        "<<<<<<< HEAD\n- 2026-03-02 10:00 | alpha-agent-one | noted | - | x\n=======\n>>>>>>> theirs\n",
    );
    let out = p.polisd(&["check", "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let p012: Vec<&str> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["code"] == "P023")
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert_eq!(p012, ["chronicle.md", "contracts/settled/parser.md"]);
    assert!(
        !report.to_string().contains("C001"),
        "marker lines are not validated as lines"
    );
    let daemon = p.start_daemon();
    assert!(!p.read("contracts/routing_stats.yml").contains("parser"));
    assert!(!p.read("contracts/routing_stats.yml").contains(ALPHA));
    p.save("contracts/settled/parser.md", &good);
    wait_for(&p, "the resolved settlement to count", || {
        p.read("contracts/routing_stats.yml").contains(ALPHA)
    });
    drop(daemon);
}

/// beads#321: freshness decided by mtime. A sync tool writes a settled contract with other
/// bytes of the same size and the original's old mtime; polisd still sees the change.
#[test]
fn a_file_copied_with_an_old_mtime_is_still_read() {
    let p = TestPolis::init(FOUNDER);
    p.citizen(ALPHA, "anthropic", &[("rust", 4)], "medium");
    let rel = "contracts/settled/parser.md";
    p.save(
        rel,
        &settled("parser", FOUNDER, ALPHA, 4, "2026-03-02 10:00:00"),
    );
    let old = fs::metadata(p.path(rel)).unwrap().modified().unwrap();
    let _daemon = p.start_daemon();
    wait_for(&p, "the first settlement", || {
        p.read("contracts/routing_stats.yml")
            .contains("avg_quality_score: 4.0")
    });
    // Same size, other quality, and the mtime set back as rsync -t or Syncthing would.
    let edited = settled("parser", FOUNDER, ALPHA, 2, "2026-03-02 10:00:00");
    assert_eq!(edited.len(), fs::read(p.path(rel)).unwrap().len());
    let tmp = p.path("contracts/settled/.parser.md.swp");
    fs::write(&tmp, &edited).unwrap();
    fs::File::options()
        .write(true)
        .open(&tmp)
        .unwrap()
        .set_modified(old)
        .unwrap();
    fs::rename(&tmp, p.path(rel)).unwrap();
    assert_eq!(fs::metadata(p.path(rel)).unwrap().modified().unwrap(), old);
    wait_for(&p, "the copied settlement to count", || {
        p.read("contracts/routing_stats.yml")
            .contains("avg_quality_score: 2.0")
    });
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

#[test]
fn two_daemons_on_folders_synced_with_conflict_copies_converge() {
    let a = machine(|d| d.join("project"));
    fs::create_dir_all(a.root.parent().unwrap()).unwrap();
    found(a.root.parent().unwrap());
    let b = machine(|d| d.join("project"));
    copy_tree(a.root.parent().unwrap(), b.root.parent().unwrap());
    let mut last = tree(&a.root);
    let _da = a.start_daemon();
    let _db = b.start_daemon();
    quiet(&a);
    quiet(&b);

    // Both sides append to the chronicle and settle a contract; each daemon notifies the
    // opener on its own side.
    let la = chronicle_line(ALPHA, "noted", "-", "parser on machine A");
    let lb = chronicle_line(BETA, "noted", "-", "lexer on machine B");
    a.append("chronicle.md", &la);
    b.append("chronicle.md", &lb);
    a.save(
        "contracts/settled/parser.md",
        &settled("parser", BETA, ALPHA, 5, "2026-03-02 10:00:00"),
    );
    b.save(
        "contracts/settled/lexer.md",
        &settled("lexer", ALPHA, BETA, 3, "2026-03-02 11:00:00"),
    );
    wait_for(&a, "A's notice", || a.count(BETA, "contract-settled") == 1);
    wait_for(&b, "B's notice", || b.count(ALPHA, "contract-settled") == 1);
    // The contracts travel first: each daemon then notifies the other opener too, so both
    // inboxes change on both sides and the next sync keeps conflict copies of them.
    syncthing(&a.root, &b.root, &mut last, "contracts/settled");
    wait_for(&a, "A's notice about lexer", || {
        a.count(ALPHA, "contract-settled") == 1
    });
    wait_for(&b, "B's notice about parser", || {
        b.count(BETA, "contract-settled") == 1
    });

    // An agent writes to alpha's inbox on B while the daemons wrote there on both sides.
    let message = format!(
        "\n### {} from {BETA}\n\nCan you review the lexer?\n\n---\n",
        chronicle_stamp()
    );
    b.append(&format!("citizens/{ALPHA}/inbox.md"), &message);
    let mut conflicts = 0;
    for _ in 0..6 {
        quiet(&a);
        quiet(&b);
        let (touched, kept) = syncthing(&a.root, &b.root, &mut last, "");
        conflicts += kept;
        if touched == 0 {
            break;
        }
    }
    assert!(
        conflicts >= 2,
        "the sync kept conflict copies (chronicle, inboxes): {conflicts}"
    );
    assert_converged(&a, &b, &[la, lb]);
    for p in [&a, &b] {
        let inbox = p.read(&format!("citizens/{ALPHA}/inbox.md"));
        assert_eq!(
            inbox.matches("Can you review the lexer?").count(),
            1,
            "{inbox}"
        );
        assert_eq!(p.count(ALPHA, "contract-settled"), 1);
        assert_eq!(p.count(BETA, "contract-settled"), 1);
    }
}

/// SPEC §3 rollover with two daemons: both roll the same chronicle over at the start of a
/// quarter and write the same bytes, so git merges their work without a conflict and the
/// polis holds one archive and one `rolled over chronicle` line.
#[test]
fn rollover_happens_once_with_two_daemons() {
    let origin = tempfile::tempdir().unwrap();
    git(origin.path(), &["init", "-q", "--bare", "-b", "main", "."]);
    let url = origin.path().display().to_string();
    let a = machine(|d| {
        git(d, &["clone", "-q", &url, "project"]);
        d.join("project")
    });
    let project_a = a.root.parent().unwrap().to_path_buf();
    found(&project_a);
    assert!(a.polisd(&["git-setup", "--program", BIN]).status.success());
    git(&project_a, &["add", "-A"]);
    git(&project_a, &["commit", "-qm", "found"]);
    git(&project_a, &["push", "-q", "origin", "main"]);
    let b = machine(|d| {
        git(d, &["clone", "-q", &url, "project"]);
        d.join("project")
    });
    let project_b = b.root.parent().unwrap().to_path_buf();
    assert!(b.polisd(&["git-setup", "--program", BIN]).status.success());
    // The chronicle's first line is from this quarter; move the clock to the next one.
    let first = a.read("chronicle.md");
    let next_quarter = {
        let stamp = first
            .lines()
            .find(|l| l.contains("founded polis"))
            .map(|l| l[2..12].to_string())
            .unwrap();
        let (y, m) = (
            stamp[..4].parse::<i32>().unwrap(),
            stamp[5..7].parse::<u32>().unwrap(),
        );
        let q = (m - 1) / 3 + 1;
        if q == 4 {
            format!("{}-01-01T00:07:00Z", y + 1)
        } else {
            format!("{y}-{:02}-01T00:07:00Z", q * 3 + 1)
        }
    };
    for p in [&a, &b] {
        let now_file = p.dir.path().join("now");
        fs::write(&now_file, &next_quarter).unwrap();
        fs::write(
            p.dir.path().join("polisd.toml"),
            "[watch]\ndebounce = \"50ms\"\n\n[behaviour]\nrollover = true\n\n[log]\nlevel = \"debug\"\n",
        )
        .unwrap();
    }
    let start = |p: &TestPolis| {
        let log = fs::File::create(p.dir.path().join("daemon.log")).unwrap();
        Command::new(BIN)
            .arg("run")
            .arg(&p.root)
            .arg("--config")
            .arg(p.dir.path().join("polisd.toml"))
            .env("POLISD_STATE_DIR", &p.state_dir)
            .env("POLISD_FAKE_NOW_FILE", p.dir.path().join("now"))
            .stderr(log)
            .spawn()
            .unwrap()
    };
    struct Kill(std::process::Child);
    impl Drop for Kill {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let _da = Kill(start(&a));
    let _db = Kill(start(&b));
    let archives = |p: &TestPolis| -> Vec<String> {
        fs::read_dir(&p.root)
            .unwrap()
            .flatten()
            .filter_map(|e| e.file_name().to_str().map(str::to_string))
            .filter(|n| n.starts_with("chronicle-"))
            .collect()
    };
    let deadline = Instant::now() + DEADLINE;
    while archives(&a).is_empty() || archives(&b).is_empty() {
        assert!(Instant::now() < deadline, "both daemons roll over");
        std::thread::sleep(Duration::from_millis(20));
    }
    quiet(&a);
    quiet(&b);
    assert_eq!(a.read("chronicle.md"), b.read("chronicle.md"));
    for (project, msg) in [
        (&project_a, "rolled over on A"),
        (&project_b, "rolled over on B"),
    ] {
        git(project, &["add", "-A"]);
        git(project, &["commit", "-qm", msg]);
    }
    git(&project_a, &["push", "-q", "origin", "main"]);
    git(
        &project_b,
        &["pull", "-q", "--no-rebase", "--no-edit", "origin", "main"],
    );
    git(&project_b, &["push", "-q", "origin", "main"]);
    git(
        &project_a,
        &["pull", "-q", "--no-rebase", "--no-edit", "origin", "main"],
    );
    quiet(&a);
    quiet(&b);
    assert_eq!(archives(&a), archives(&b));
    assert_eq!(archives(&a).len(), 1);
    let chronicle = a.read("chronicle.md");
    assert_eq!(
        chronicle.matches("rolled over chronicle").count(),
        1,
        "{chronicle}"
    );
    assert_eq!(tree(&a.root), tree(&b.root));
}

/// A line from a branch merged days later sits among its peers in timestamp order: it is late,
/// not backdated, and its author is not told otherwise (C005 compares with the lines before it
/// in the merged file, not with the end of the old one).
#[test]
fn a_line_merged_from_an_old_branch_is_not_reported_as_backdated() {
    let p = machine(|d| {
        let project = d.join("project");
        fs::create_dir_all(&project).unwrap();
        git(&project, &["init", "-q", "-b", "main"]);
        project
    });
    let project = p.root.parent().unwrap().to_path_buf();
    found(&project);
    assert!(p.polisd(&["git-setup", "--program", BIN]).status.success());
    git(&project, &["add", "-A"]);
    git(&project, &["commit", "-qm", "found"]);
    // The branch's line is three days older than the founding line on main.
    let old = (chrono::Utc::now() - chrono::Duration::days(3))
        .format("%Y-%m-%d %H:%M")
        .to_string();
    git(&project, &["checkout", "-qb", "old-branch"]);
    let line = format!("- {old} | {ALPHA} | noted | - | written on a branch\n");
    p.append("chronicle.md", &line);
    git(&project, &["commit", "-qam", "a line on a branch"]);
    git(&project, &["checkout", "-q", "main"]);
    for note in ["on main", "still on main"] {
        p.append("chronicle.md", &chronicle_line(BETA, "noted", "-", note));
    }
    git(&project, &["commit", "-qam", "lines on main"]);
    let daemon = p.start_daemon();
    git(&project, &["merge", "-q", "--no-edit", "old-branch"]);
    let chronicle = p.read("chronicle.md");
    assert!(chronicle.find(&line).unwrap() < chronicle.find("founded polis").unwrap());
    // The daemon has read the merged file when a line appended after it is reported.
    p.append("chronicle.md", &chronicle_line(BETA, "NOTED", "-", "probe"));
    wait_for(&p, "the probe's C008 notice", || {
        p.count(BETA, "chronicle-finding") == 1
    });
    assert_eq!(
        p.count(ALPHA, "chronicle-finding"),
        0,
        "{}\n{}",
        daemon.log_text(),
        p.read("chronicle.md")
    );
}

/// `writer = "none"`: this machine's daemon appends and edits nothing (another machine's
/// does), and still keeps routing_stats.yml, whose bytes are the same everywhere.
#[test]
fn a_daemon_with_writer_none_writes_only_the_stats() {
    let p = TestPolis::init(FOUNDER);
    p.citizen(ALPHA, "anthropic", &[("rust", 4)], "medium");
    fs::write(
        p.dir.path().join("polisd.toml"),
        "[watch]\ndebounce = \"50ms\"\n\n[behaviour]\nwriter = \"none\"\n\n[log]\nlevel = \"debug\"\n",
    )
    .unwrap();
    let _daemon = p.start_daemon();
    let open = "---\ncontract_id: lexer\ntitle: Lexer\nopened_by: founder-agent\nowner: null\nstatus: proposed\nrequired_tags: [rust]\nrouting:\n  recommended_by_router: null\n---\n\n## Intent\n\nLex.\n";
    p.save("contracts/open/lexer.md", open);
    p.save(
        "contracts/settled/parser.md",
        &settled("parser", FOUNDER, ALPHA, 4, "2026-03-02 10:00:00"),
    );
    p.append(
        "chronicle.md",
        &chronicle_line(ALPHA, "NOTED", "-", "bad verb"),
    );
    wait_for(&p, "the stats", || {
        p.read("contracts/routing_stats.yml") == p.expected_stats()
            && p.read("contracts/routing_stats.yml").contains(ALPHA)
    });
    let probe = "contracts/settled/probe.md";
    p.save(
        probe,
        &settled("probe", FOUNDER, ALPHA, 2, "2026-03-02 11:00:00"),
    );
    wait_for(&p, "the stats after a second settlement", || {
        p.read("contracts/routing_stats.yml") == p.expected_stats()
    });
    assert_eq!(
        p.read("contracts/open/lexer.md"),
        open,
        "no routing block written"
    );
    assert!(p.all_markers().is_empty(), "{:?}", p.all_markers());
}

/// `writer = "this-machine-only"`: a notice this machine was about to send is already in the
/// inbox though its ledger never sent it, so another machine's polisd writes too; polisd adds
/// nothing and says so once.
#[test]
fn the_only_writer_reports_a_notice_another_machine_delivered() {
    let p = TestPolis::init(FOUNDER);
    p.citizen(ALPHA, "anthropic", &[("rust", 4)], "medium");
    p.citizen(BETA, "openai", &[("rust", 3)], "low");
    fs::write(
        p.dir.path().join("polisd.toml"),
        "[watch]\ndebounce = \"50ms\"\n\n[behaviour]\nwriter = \"this-machine-only\"\n\n[log]\nlevel = \"debug\"\n",
    )
    .unwrap();
    let daemon = p.start_daemon();
    // Another machine's daemon already told beta (its block arrived with the sync).
    let other = polisd::protocol::delivery::inbox::Notification::contract_settled(
        BETA,
        "parser",
        "parser",
        ALPHA,
        Some(5),
    );
    p.append(
        &format!("citizens/{BETA}/inbox.md"),
        &other.render("2026-03-02 10:00"),
    );
    p.save(
        "contracts/settled/parser.md",
        &settled("parser", BETA, ALPHA, 5, "2026-03-02 10:00:00"),
    );
    wait_for(&p, "the report about the other writer", || {
        daemon
            .log_text()
            .contains("another machine's polisd delivers notices too")
    });
    assert_eq!(p.count(BETA, "contract-settled"), 1);
}

/// Conflict copies polisd does not merge: a contract's is reported to the index keeper once,
/// with both paths, and never read as a record; a copy of routing_stats.yml (derived bytes)
/// is removed.
#[test]
fn other_conflict_copies_are_reported_once_and_a_stats_copy_is_removed() {
    let p = TestPolis::init(FOUNDER);
    p.citizen(ALPHA, "anthropic", &[("rust", 4)], "medium");
    let daemon = p.start_daemon();
    let open = "---\ncontract_id: lexer\ntitle: Lexer\nopened_by: founder-agent\nowner: null\nstatus: proposed\nrouting:\n  recommended_by_router: alpha-agent-one\n---\n";
    p.save("contracts/open/lexer.md", open);
    let copy = "contracts/open/lexer (Bob's conflicted copy 2026-03-02).md";
    p.save(
        copy,
        &open.replace("owner: null", &format!("owner: {ALPHA}")),
    );
    let stats_copy = "contracts/routing_stats.sync-conflict-20260302-120000-BBBBBBB.yml";
    p.save(stats_copy, "last_updated: x\n");
    wait_for(&p, "the sync-conflict notice", || {
        p.count(FOUNDER, "sync-conflict") == 1 && !p.exists(stats_copy)
    });
    let inbox = p.read(&format!("citizens/{FOUNDER}/inbox.md"));
    assert!(
        inbox.contains(copy) && inbox.contains("contracts/open/lexer.md"),
        "{inbox}"
    );
    // Another event in the folder: nothing is sent again, and the copy is not a contract.
    p.append("contracts/open/lexer.md", "\nMore.\n");
    let before = daemon.log_text().matches("pass done").count();
    wait_for(&p, "the next pass", || {
        daemon.log_text().matches("pass done").count() > before
    });
    assert_eq!(p.count(FOUNDER, "sync-conflict"), 1);
    assert!(
        p.exists(copy),
        "a copy polisd cannot merge is left for a person"
    );
    let status: serde_json::Value =
        serde_json::from_slice(&p.polisd(&["status", "--json"]).stdout).unwrap();
    assert_eq!(status["contracts"]["open"], 1);
}

/// An inbox conflict copy that arrives while the inbox is still being written (main's
/// stability rule) is not merged then; it is merged as soon as the inbox has been
/// quiet for the window (the deferred inbox's own pass), not at the next rescan minutes later,
/// and the owner's bytes are all kept.
#[test]
fn an_inbox_conflict_copy_waits_for_a_settled_inbox_and_is_merged_then() {
    let p = machine(|d| d.join("project"));
    let project = p.root.parent().unwrap().to_path_buf();
    fs::create_dir_all(&project).unwrap();
    found(&project);
    // A window long enough that the copy is always seen inside it.
    fs::write(
        p.dir.path().join("polisd.toml"),
        "[watch]\ndebounce = \"50ms\"\nstability = \"2s\"\n\n[log]\nlevel = \"debug\"\n\n[dashboard]\nlisten = \"127.0.0.1:0\"\n",
    )
    .unwrap();
    let _d = p.start_daemon();
    let inbox = format!("citizens/{ALPHA}/inbox.md");
    let block = |id: &str, stamp: &str| {
        format!("\n### {stamp} from polis-daemon\n\nSomething.\n\n[[contracts/x]]\n<!-- polisd:contract-settled:{id} -->\n\n---\n")
    };
    let base = p.read(&inbox);
    // The owner writes its inbox and, at once, a sync tool drops the other machine's version.
    p.append(&inbox, &block("00000000000000aa", "2026-03-02 10:00"));
    let copy = format!("citizens/{ALPHA}/inbox.sync-conflict-20260302-120000-BBBBBBB.md");
    p.save(
        &copy,
        &format!("{base}{}", block("00000000000000bb", "2026-03-02 11:00")),
    );
    let started = Instant::now();
    wait_for(&p, "the copy merged into the settled inbox", || {
        !p.exists(&copy) && p.read(&inbox).contains("00000000000000bb")
    });
    assert!(
        started.elapsed() >= Duration::from_millis(1500),
        "merged while the inbox was changing ({:?})",
        started.elapsed()
    );
    let text = p.read(&inbox);
    assert!(text.contains("00000000000000aa"), "{text}");
    assert_eq!(text.matches("<!-- polisd:").count(), 2, "{text}");
}

/// `polisd init --git-setup` registers the driver in a new repository's clone; outside a
/// repository it is refused before anything is written.
#[test]
fn init_with_git_setup_registers_the_driver_and_refuses_outside_git() {
    let d = tempfile::tempdir().unwrap();
    let outside = d.path().join("plain");
    fs::create_dir_all(&outside).unwrap();
    let init = |project: &Path| {
        Command::new(BIN)
            .arg("init")
            .arg(project)
            .args(["--agent-id", FOUNDER, "--git-setup"])
            .env("POLISD_STATE_DIR", d.path().join("state"))
            .output()
            .unwrap()
    };
    if !harness::inside_git(&outside) {
        let out = init(&outside);
        assert_eq!(out.status.code(), Some(1));
        assert!(
            !outside.join("_polis").exists(),
            "written before the refusal"
        );
    }
    let repo = d.path().join("repo");
    fs::create_dir_all(&repo).unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    let out = init(&repo);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(git(&repo, &["config", "--get", "merge.polisd.driver"])
        .contains("merge-driver %O %A %B %P"));
    let attributes = fs::read_to_string(repo.join("_polis/.gitattributes")).unwrap();
    assert!(
        attributes.contains("chronicle.md merge=polisd"),
        "{attributes}"
    );
}

// ---------------------------------------------------------------------------------------------
// Stamps that are the same on every machine

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

// ---------------------------------------------------------------------------------------------
// A team on real sync tools: the settling window, duplicates, votes, episodes, owners

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

/// While a peer catches up, a chronicle line arrives before the contract it links to. The
/// finding is held for the settling window and dropped when the contract arrives within it;
/// a link that still points to nothing once the polis is quiet is told.
#[test]
fn a_link_to_a_contract_still_in_transit_is_not_a_notice() {
    let p = TestPolis::init(FOUNDER);
    p.citizen(ALPHA, "anthropic", &[("rust", 4)], "medium");
    with_settling(&p, "1500ms");
    let daemon = p.start_daemon();
    let contract = settled("parser", FOUNDER, ALPHA, 4, "2026-03-02 10:00:00");
    p.append(
        "chronicle.md",
        &chronicle_line(
            ALPHA,
            "settled contract",
            "[[contracts/settled/parser]]",
            "done",
        ),
    );
    wait_logged(&p, &daemon, "held for the settling window", 1);
    p.save("contracts/settled/parser.md", &contract);
    wait_logged(&p, &daemon, "resolved itself within the settling window", 1);
    assert_eq!(p.count(ALPHA, "chronicle-finding"), 0);

    // A link to a contract that never arrives: told once the window is over.
    p.append(
        "chronicle.md",
        &chronicle_line(
            ALPHA,
            "settled contract",
            "[[contracts/settled/lexer]]",
            "done",
        ),
    );
    wait_for(&p, "the notice about the dangling link", || {
        p.count(ALPHA, "chronicle-finding") == 1
    });
    assert!(p
        .read(&format!("citizens/{ALPHA}/inbox.md"))
        .contains("C006"));
}

/// Syncthing writes an arriving conflict copy under a temporary name first
/// (`.syncthing.<copy>.tmp`): neither a conflict copy nor a record, so no P009 and no notice.
#[test]
fn syncthings_temporary_conflict_copy_is_no_conflict() {
    let p = TestPolis::init(FOUNDER);
    let daemon = p.start_daemon();
    let tmp = ".syncthing.chronicle.sync-conflict-20260302-120000-BBBBBBB.md.tmp";
    p.save(
        tmp,
        "- 2026-03-02 12:00 | founder-agent | noted | - | in flight\n",
    );
    p.append(
        "chronicle.md",
        &chronicle_line(FOUNDER, "noted", "-", "after"),
    );
    wait_logged(&p, &daemon, "chronicle line validated", 1);
    let check: serde_json::Value =
        serde_json::from_slice(&p.polisd(&["check", "--json"]).stdout).unwrap();
    assert!(!check.to_string().contains("P009"), "{check}");
    assert!(p.exists(tmp), "a transfer's file is left alone");
    assert_eq!(p.count(FOUNDER, "sync-conflict"), 0);
    assert!(!daemon.log_text().contains("P009"), "{}", daemon.log_text());
}

/// A chronicle line appended twice (an agent followed "append the missing line" while the
/// line was still in transit) is a P024 finding told to its author, and `check` reports it.
#[test]
fn a_chronicle_line_appended_twice_is_a_finding() {
    let p = TestPolis::init(FOUNDER);
    p.citizen(ALPHA, "anthropic", &[("rust", 4)], "medium");
    let _daemon = p.start_daemon();
    let line = chronicle_line(ALPHA, "noted", "-", "working on the parser");
    p.append("chronicle.md", &line);
    p.append("chronicle.md", &line);
    wait_for(&p, "the duplicate's notice", || {
        p.count(ALPHA, "chronicle-finding") == 1
    });
    assert!(p
        .read(&format!("citizens/{ALPHA}/inbox.md"))
        .contains("P024"));
    let check: serde_json::Value =
        serde_json::from_slice(&p.polisd(&["check", "--json"]).stdout).unwrap();
    let dups: Vec<&serde_json::Value> = check["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["code"] == "P024")
        .collect();
    assert_eq!(dups.len(), 1, "{check}");
}

/// A settled file's finding (P018: its status is not `settled`) reaches the citizen who
/// settled it; when that citizen is gone, the index keeper.
#[test]
fn a_finding_in_a_settled_file_reaches_its_author() {
    let p = TestPolis::init(FOUNDER);
    p.citizen(ALPHA, "anthropic", &[("rust", 4)], "medium");
    let _daemon = p.start_daemon();
    let wrong = |id: &str, owner: &str| {
        settled(id, FOUNDER, owner, 4, "2026-03-02 10:00:00")
            .replace("status: settled", "status: claimed")
    };
    p.save("contracts/settled/parser.md", &wrong("parser", ALPHA));
    wait_for(&p, "the owner's notice", || {
        p.count(ALPHA, "record-finding") == 1
    });
    assert!(p
        .read(&format!("citizens/{ALPHA}/inbox.md"))
        .contains("P018"));
    // Settled by a citizen who left (no card), opened by one who is gone too: the keeper.
    p.save(
        "contracts/settled/lexer.md",
        &wrong("lexer", "gone-agent-one")
            .replace("opened_by: founder-agent", "opened_by: gone-agent-two"),
    );
    wait_for(&p, "the index keeper's notice", || {
        p.count(FOUNDER, "record-finding") == 1
    });
    assert!(p
        .read(&format!("citizens/{FOUNDER}/inbox.md"))
        .contains("lexer"));
}

/// A settled file's finding already there when polisd first meets the polis is not sent (SPEC
/// §3, §9), neither then nor after a restart (the state keeps it as sent, by kind and id); one
/// that comes later is.
#[test]
fn a_finding_in_a_settled_file_before_the_first_meeting_is_never_sent() {
    let p = TestPolis::init(FOUNDER);
    p.citizen(ALPHA, "anthropic", &[("rust", 4)], "medium");
    let wrong = |id: &str| {
        settled(id, FOUNDER, ALPHA, 4, "2026-03-02 10:00:00")
            .replace("status: settled", "status: claimed")
    };
    p.save("contracts/settled/old.md", &wrong("old"));
    let daemon = p.start_daemon();
    p.save("contracts/settled/parser.md", &wrong("parser"));
    wait_for(&p, "the later file's notice", || {
        p.count(ALPHA, "record-finding") == 1
    });
    drop(daemon);
    let _daemon = p.start_daemon();
    p.save("contracts/settled/lexer.md", &wrong("lexer"));
    wait_for(&p, "the notice after the restart", || {
        p.count(ALPHA, "record-finding") == 2
    });
    let inbox = p.read(&format!("citizens/{ALPHA}/inbox.md"));
    assert!(inbox.contains("parser") && inbox.contains("lexer"));
    assert!(!inbox.contains("old.md"), "{inbox}");
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
    assert!(a.polisd(&["git-setup", "--program", BIN]).status.success());
    git(&project_a, &["add", "-A"]);
    git(&project_a, &["commit", "-qm", "found the polis"]);
    git(&project_a, &["push", "-q", "origin", "main"]);
    let b = machine(|d| {
        git(d, &["clone", "-q", &url, "project"]);
        d.join("project")
    });
    assert!(b.polisd(&["git-setup", "--program", BIN]).status.success());
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

/// Two machines vote on one amendment in the same minute: each vote is a file of its own, git
/// merges them without a conflict, and the tally counts both.
#[test]
fn two_machines_voting_on_one_amendment_merge_and_both_count() {
    let (_origin, a, b) = two_clones();
    b.citizen("gamma-agent-three", "google", &[("rust", 2)], "low");
    let out = a.polisd(&[
        "amendment",
        "propose",
        "--title",
        "Reviews for high stakes",
        "--by",
        FOUNDER,
        "--quorum",
        "4",
        "--json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let aid = v["amendment_id"].as_str().unwrap().to_string();
    commit_all(&a, "propose");
    git(&project(&a), &["push", "-q", "origin", "main"]);
    commit_all(&b, "gamma");
    pull(&b);
    for (p, who) in [(&a, ALPHA), (&b, BETA)] {
        let out = p.polisd(&["amendment", "vote", &aid, "--as", who, "--vote", "agree"]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        commit_all(p, "vote");
    }
    git(&project(&b), &["push", "-q", "origin", "main"]);
    pull(&a); // panics on a conflict
    let list: serde_json::Value =
        serde_json::from_slice(&a.polisd(&["amendment", "list", "--json"]).stdout).unwrap();
    let agree = list["amendments"][0]["votes"]["agree"].to_string();
    assert!(agree.contains(ALPHA) && agree.contains(BETA), "{list}");
    for (rel, bytes) in tree(&a.root) {
        assert!(
            !String::from_utf8_lossy(&bytes).contains("<<<<<<<"),
            "{rel}"
        );
    }
    // The tally counts both votes: with the proposer's, 3 of the 4 the quorum asks; gamma's
    // makes 4 and ratifies it.
    let out = a.polisd(&[
        "amendment",
        "vote",
        &aid,
        "--as",
        "gamma-agent-three",
        "--vote",
        "agree",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let _daemon = a.start_daemon();
    wait_for(&a, "the ratification", || {
        a.exists(&format!("amendments/ratified/{aid}.md"))
    });
}

/// A race between two worktrees' agents (claims going back and forth) is one episode: one
/// notice to the index keeper, however many times the copies change; once they agree the
/// episode is over, and the next race is told again.
#[test]
fn a_worktree_race_gives_one_notice() {
    let p = machine(|d| {
        let project = d.join("project");
        fs::create_dir_all(&project).unwrap();
        git(&project, &["init", "-q", "-b", "main"]);
        project
    });
    let project = project(&p);
    found(&project);
    let open = "contracts/open/tokenizer.md";
    let text = "---\ncontract_id: tokenizer\ntitle: Tokenizer\nopened_by: founder-agent\nowner: null\nstatus: proposed\nrequired_tags: [rust]\nrouting:\n  recommended_by_router: beta-agent-two\n---\n\n## Intent\n\nTokens.\n";
    p.save(open, text);
    git(&project, &["add", "-A"]);
    git(&project, &["commit", "-qm", "open tokenizer"]);
    let wt2 = p.dir.path().join("wt2");
    git(
        &project,
        &["worktree", "add", "-q", wt2.to_str().unwrap(), "-b", "two"],
    );
    with_settling(&p, "800ms");
    let daemon = p.start_daemon();
    let claim = |root: &Path, who: &str| {
        let claimed = text
            .replace("owner: null", &format!("owner: {who}"))
            .replace("status: proposed", "status: claimed");
        fs::write(root.join(open), claimed).unwrap();
    };
    // Six changes in a row, each one a different divergence.
    for who in [ALPHA, BETA, FOUNDER, ALPHA, BETA, FOUNDER] {
        claim(&wt2.join("_polis"), who);
        claim(&p.root, if who == ALPHA { BETA } else { ALPHA });
        std::thread::sleep(Duration::from_millis(100));
    }
    wait_for(&p, "the episode's notice", || {
        p.count(FOUNDER, "worktree-diverged") == 1
    });
    let inbox = p.read(&format!("citizens/{FOUNDER}/inbox.md"));
    assert!(inbox.contains("once for this episode"), "{inbox}");
    // The race goes on: still one notice.
    claim(&p.root, FOUNDER);
    let before = daemon.log_text().matches("pass done").count();
    wait_for(&p, "the next pass", || {
        daemon.log_text().matches("pass done").count() > before
    });
    std::thread::sleep(Duration::from_millis(1200));
    assert_eq!(p.count(FOUNDER, "worktree-diverged"), 1);
    // The copies agree: the episode is over. A new race is a new episode.
    fs::write(wt2.join("_polis").join(open), text).unwrap();
    fs::write(p.root.join(open), text).unwrap();
    wait_logged(&p, &daemon, "the worktrees episode is over", 1);
    claim(&p.root, ALPHA);
    wait_for(&p, "the second episode's notice", || {
        p.count(FOUNDER, "worktree-diverged") == 2
    });
}

/// git's rename detection pairs template-similar contracts: A routes X while B settles X and
/// opens a similar Y, and on A's pull A's routing edit would land in Y. polisd writes a
/// routing block only into a contract still local to its clone; a committed one is routed by
/// notice alone, so nothing of A's lands in Y.
#[test]
fn a_routing_never_lands_in_another_contract_through_a_rename() {
    let (_origin, a, b) = two_clones();
    let body = "\n## Intent\n\nMake the parser faster on large inputs, with benchmarks and a short report of what changed and why.\n\n## Acceptance\n\n- Benchmarks in benches/.\n- No regression in the test suite.\n";
    let contract = |id: &str| {
        format!("---\ncontract_id: {id}\ntitle: {id}\nopened_by: {FOUNDER}\nopened_at: 2026-03-02 10:00\nowner: null\nstatus: proposed\nrequired_tags: [rust]\nrouting:\n  recommended_by_router: null\n---\n{body}")
    };
    b.save("contracts/open/x.md", &contract("x"));
    commit_all(&b, "open x");
    git(&project(&b), &["push", "-q", "origin", "main"]);
    let daemon = a.start_daemon();
    pull(&a);
    // A's daemon routes X by notice: the committed file stays as it is.
    wait_for(&a, "the routing notice", || {
        [ALPHA, BETA, FOUNDER]
            .iter()
            .map(|c| a.count(c, "contract-routed"))
            .sum::<usize>()
            == 1
    });
    assert_eq!(a.read("contracts/open/x.md"), contract("x"));
    drop(daemon);
    // B settles X and opens Y, a contract much like X.
    let settled_x = contract("x")
        .replace("owner: null", &format!("owner: {ALPHA}"))
        .replace(
            "status: proposed",
            "status: settled\nsettled_at: 2026-03-02 11:00\nquality_score: 4",
        )
        + "\n## Settlement\n\nDone.\n";
    b.save("contracts/settled/x.md", &settled_x);
    fs::remove_file(b.path("contracts/open/x.md")).unwrap();
    b.save("contracts/open/y.md", &contract("y"));
    commit_all(&b, "settle x, open y");
    git(&project(&b), &["push", "-q", "origin", "main"]);
    commit_all(&a, "a's work");
    pull(&a);
    assert_eq!(a.read("contracts/open/y.md"), contract("y"));
    assert!(!a.exists("contracts/open/x.md"));

    // A contract opened on this clone and not committed yet is routed in place.
    a.save("contracts/open/z.md", &contract("z"));
    let _daemon = a.start_daemon();
    wait_for(&a, "z's routing block", || {
        !a.read("contracts/open/z.md")
            .contains("recommended_by_router: null")
    });
}

/// In a folder Syncthing shares (its `.stfolder` marker above `_polis/`), every contract is
/// seen by the other machine's daemon the moment it lands, and a routing block written on one
/// machine while the other settles the contract brings the open copy back (a modification wins
/// over a deletion). So each is routed by notice alone and its file is left as written.
#[test]
fn in_a_syncthing_folder_contracts_are_routed_by_notice_and_never_edited() {
    let p = machine(|dir| {
        let project = dir.join("project");
        fs::create_dir_all(project.join(".stfolder")).unwrap();
        found(&project);
        project
    });
    let _daemon = p.start_daemon();
    let contract = format!(
        "---\ncontract_id: x\ntitle: x\nopened_by: {FOUNDER}\nopened_at: 2026-03-02 10:00\n\
         owner: null\nstatus: proposed\nrequired_tags: [rust]\nrouting:\n  \
         recommended_by_router: null\n---\n\n## Intent\n\nDo x.\n"
    );
    p.save("contracts/open/x.md", &contract);
    wait_for(&p, "the routing notice", || {
        [ALPHA, BETA, FOUNDER]
            .iter()
            .map(|c| p.count(c, "contract-routed"))
            .sum::<usize>()
            == 1
    });
    assert_eq!(p.read("contracts/open/x.md"), contract);
}

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

    /// Writes a config that shares `folder` with `peer` only: no discovery, relays, NAT or
    /// usage reporting; the watcher's delay at one second.
    fn configure(&self, folder: &Path, peer: &Syncthing) {
        let device = |s: &Syncthing| {
            format!(
                "    <device id=\"{}\" name=\"{}\" compression=\"metadata\" introducer=\"false\">\n        <address>tcp://127.0.0.1:{}</address>\n    </device>\n",
                s.id, s.listen, s.listen
            )
        };
        let config = format!(
            "<configuration version=\"36\">\n    <folder id=\"polis\" label=\"polis\" path=\"{}\" type=\"sendreceive\" rescanIntervalS=\"10\" fsWatcherEnabled=\"true\" fsWatcherDelayS=\"1\" ignorePerms=\"false\" autoNormalize=\"true\">\n        <device id=\"{}\"></device>\n        <device id=\"{}\"></device>\n        <minDiskFree unit=\"%\">0</minDiskFree>\n        <maxConflicts>-1</maxConflicts>\n        <markerName>.stfolder</markerName>\n        <order>random</order>\n        <maxConcurrentWrites>2</maxConcurrentWrites>\n        <weakHashThresholdPct>25</weakHashThresholdPct>\n    </folder>\n{}{}    <gui enabled=\"true\" tls=\"false\">\n        <address>127.0.0.1:{}</address>\n        <apikey>polisd-test-{}</apikey>\n    </gui>\n    <options>\n        <listenAddress>tcp://127.0.0.1:{}</listenAddress>\n        <globalAnnounceEnabled>false</globalAnnounceEnabled>\n        <localAnnounceEnabled>false</localAnnounceEnabled>\n        <relaysEnabled>false</relaysEnabled>\n        <natEnabled>false</natEnabled>\n        <urAccepted>-1</urAccepted>\n        <crashReportingEnabled>false</crashReportingEnabled>\n        <autoUpgradeIntervalH>0</autoUpgradeIntervalH>\n        <startBrowser>false</startBrowser>\n        <minHomeDiskFree unit=\"%\">0</minHomeDiskFree>\n    </options>\n</configuration>\n",
            folder.display(),
            self.id,
            peer.id,
            device(self),
            device(peer),
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

/// Two machines synced by two real Syncthing instances, each running polisd, 100 random
/// operations on each side: they converge, with every agent line once, the same stats, and no
/// P009, C009 or C006 that the transfer itself caused.
#[test]
fn two_daemons_on_two_real_syncthing_instances_converge() {
    let mut work = RandomWork::seeded(20261206);
    let a = machine(|d| d.join("project"));
    let project_a = project(&a);
    fs::create_dir_all(&project_a).unwrap();
    found(&project_a);
    let b = machine(|d| d.join("project"));
    let project_b = project(&b);
    fs::create_dir_all(&project_b).unwrap();
    let sa = Syncthing::generate(a.dir.path().join("syncthing"));
    let sb = Syncthing::generate(b.dir.path().join("syncthing"));
    sa.configure(&project_a, &sb);
    sb.configure(&project_b, &sa);
    let _ka = sa.start();
    let _kb = sb.start();
    let converged = || {
        let ta = synced_tree(&a.root);
        ta == synced_tree(&b.root) && ta.contains_key("CONSTITUTION.md")
    };
    wait_until(
        "B to receive the polis",
        Duration::from_secs(120),
        converged,
    );
    with_settling(&a, "3s");
    with_settling(&b, "3s");
    let _da = a.start_daemon();
    let _db = b.start_daemon();

    let machines = [(&a, ALPHA), (&b, BETA)];
    let mut lines = Vec::new();
    let mut done = [0; 2];
    while done.iter().any(|d| *d < 100) {
        let m = if done[0] >= 100 {
            1
        } else if done[1] >= 100 {
            0
        } else {
            work.below(2)
        };
        done[m] += 1;
        let (p, me) = machines[m];
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
    // Converged: the same tree on both sides, unchanged across the settling window.
    wait_until(
        "the two machines to converge",
        Duration::from_secs(240),
        || {
            if !converged() {
                std::thread::sleep(Duration::from_millis(300));
                return false;
            }
            let before = synced_tree(&a.root);
            std::thread::sleep(Duration::from_millis(4000));
            converged() && synced_tree(&a.root) == before
        },
    );
    if let Ok(dir) = std::env::var("POLISD_SYNC_DEBUG") {
        let dir = Path::new(&dir);
        fs::create_dir_all(dir).unwrap();
        for (name, p, s) in [("a", &a, &sa), ("b", &b, &sb)] {
            let _ = fs::copy(
                p.dir.path().join("daemon.log"),
                dir.join(format!("{name}-daemon.log")),
            );
            let _ = fs::copy(
                s.home.join("syncthing.log"),
                dir.join(format!("{name}-syncthing.log")),
            );
            let _ = fs::write(
                dir.join(format!("{name}-chronicle.md")),
                p.read("chronicle.md"),
            );
        }
        fs::write(dir.join("lines.txt"), lines.concat()).unwrap();
    }
    assert_converged(&a, &b, &lines);
    for p in [&a, &b] {
        for m in p.all_markers() {
            assert_ne!(m.kind, "sync-conflict", "{m:?}");
        }
        for id in [ALPHA, BETA, FOUNDER] {
            let inbox = p.read(&format!("citizens/{id}/inbox.md"));
            for code in ["C009", "C006", "P009"] {
                assert!(!inbox.contains(code), "{code} told to {id}:\n{inbox}");
            }
        }
    }
    let findings = findings_but_missing_status(&a);
    assert!(findings.is_empty(), "{findings:#?}");
}
