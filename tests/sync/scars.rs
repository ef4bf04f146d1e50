//! One test per scar of the tools before us: a merge driver declared but not configured
//! (overdeck#1901), a union merge that brings a record back (beads#1485), conflict markers read
//! as records (tbd#155), and an mtime that lies (beads#321).

use super::{founded_repo, git, machine, settled, ALPHA, FOUNDER};
use crate::harness::*;
use std::fs;

/// overdeck#1901: `.gitattributes` named the driver, but a fresh clone's config lacked it, so
/// git merged as text. `check` and the daemon say so until `git-setup` runs in that clone.
#[test]
fn a_declared_but_unconfigured_merge_driver_is_reported() {
    let (origin, project) = founded_repo();
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

/// The driver registered by a polisd that has since moved (reinstalled elsewhere, a build
/// folder cleaned): git runs a program that is not there, counts the failure as a conflict and
/// leaves our side of the chronicle alone, the other side's lines out of the work tree and no
/// markers to say so. `check` said nothing; it names the missing program until `git-setup`
/// points the driver at this polisd.
#[test]
fn a_merge_driver_whose_program_is_gone_is_reported() {
    let (p, project) = founded_repo();
    let gone = p.dir.path().join("old install/polisd");
    assert!(p
        .polisd(&["git-setup", "--program", gone.to_str().unwrap()])
        .status
        .success());
    git(&project, &["add", "-A"]);
    git(&project, &["commit", "-qm", "found"]);
    let out = p.polisd(&["check", "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let p025: Vec<&serde_json::Value> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["code"] == "P025")
        .collect();
    assert_eq!(p025.len(), 1, "{report}");
    let message = p025[0]["message"].as_str().unwrap();
    assert!(
        message.contains(gone.to_str().unwrap()) && message.contains("git-setup"),
        "{message}"
    );
    assert!(p.polisd(&["git-setup", "--program", BIN]).status.success());
    assert!(p.polisd(&["check"]).status.success());
}

/// beads#1485: a union merge brought deleted records back. Through git and polisd's driver,
/// a notice its owner archived on one branch stays archived when the other branch merges,
/// while plain `merge=union` brings it back.
#[test]
fn a_merge_does_not_bring_an_archived_notice_back() {
    let run = |attributes: Option<&str>| -> String {
        let (p, project) = founded_repo();
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
