//! git worktrees of one repository holding diverging copies of a contract: told to the index
//! keeper once an episode.

use super::{founded_repo, git, wait_logged, with_settling, ALPHA, BETA, FOUNDER};
use crate::harness::*;
use std::fs;
use std::path::Path;
use std::time::Duration;

/// git worktrees holding diverging copies of one claimed contract: `status` names both, and
/// the daemon tells the index keeper once.
#[test]
fn two_worktrees_with_diverging_claims_are_reported_once() {
    let (p, project) = founded_repo();
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

/// A race between two worktrees' agents (claims going back and forth) is one episode: one
/// notice to the index keeper, however many times the copies change; once they agree the
/// episode is over, and the next race is told again.
#[test]
fn a_worktree_race_gives_one_notice() {
    let (p, project) = founded_repo();
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
