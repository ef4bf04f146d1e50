//! A git operation that stops halfway (a rebase, a merge or a cherry-pick waiting for a person
//! to resolve a conflict in another file) leaves the polis as a mix of both sides: lines of
//! commits not yet replayed are missing. The daemon holds its findings until the operation
//! ends, then tells only what still stands.

use super::{commit_all, git, git_command, project, quiet, two_clones, ALPHA};
use crate::harness::*;

/// Runs git in `dir` like [`git`], returning whether it succeeded (a stopped rebase fails).
fn git_may_fail(dir: &std::path::Path, args: &[&str]) -> bool {
    git_command(dir, args).output().unwrap().status.success()
}

/// The file both clones change, so that B's rebase stops on it.
fn notes(p: &TestPolis) -> std::path::PathBuf {
    project(p).join("notes.txt")
}

/// Two clones whose next `pull --rebase` in B stops on a conflict in `notes.txt`: A has pushed
/// its side (with whatever `on_a` adds to its polis), B has committed its own.
fn conflicting_clones(on_a: impl FnOnce(&TestPolis)) -> (tempfile::TempDir, TestPolis, TestPolis) {
    let (origin, a, b) = two_clones();
    std::fs::write(notes(&a), "from A\n").unwrap();
    on_a(&a);
    commit_all(&a, "a");
    git(&project(&a), &["push", "-q", "origin", "main"]);
    std::fs::write(notes(&b), "from B\n").unwrap();
    commit_all(&b, "b1");
    (origin, a, b)
}

#[test]
fn a_rebase_stopped_on_a_conflict_does_not_report_the_lines_it_has_yet_to_replay() {
    let (_origin, _a, b) = conflicting_clones(|_| {});
    let line = chronicle_line(ALPHA, "noted", "-", "in the commit after the conflict");
    b.append("chronicle.md", &line);
    commit_all(&b, "b2");
    let daemon = b.start_daemon();

    assert!(!git_may_fail(
        &project(&b),
        &["pull", "-q", "--rebase", "origin", "main"]
    ));
    assert!(!b.read("chronicle.md").contains(line.trim_end()));
    wait_for(&b, "the daemon to hold its finding for the rebase", || {
        b.count(ALPHA, "chronicle-finding") > 0
            || daemon
                .log_text()
                .contains("in progress; held findings wait")
    });
    assert_eq!(b.count(ALPHA, "chronicle-finding"), 0, "told mid-rebase");

    std::fs::write(notes(&b), "from both\n").unwrap();
    git(&project(&b), &["add", "notes.txt"]);
    assert!(git_may_fail(&project(&b), &["rebase", "--continue"]));
    wait_for(&b, "the held finding to resolve itself", || {
        daemon
            .log_text()
            .contains("resolved itself within the settling window")
    });
    assert_eq!(b.count(ALPHA, "chronicle-finding"), 0);
    assert_eq!(b.read("chronicle.md").matches(line.trim_end()).count(), 1);
}

/// A notice appended to an inbox while a rebase waits for a person makes a tracked file dirty,
/// and `git rebase --continue` then refuses ("You must edit all merge conflicts"). Notices
/// wait for the rebase to end.
#[test]
fn a_rebase_stopped_on_a_conflict_gets_no_notice_until_it_ends() {
    let (_origin, _a, b) = conflicting_clones(|a| {
        a.save(
            "contracts/settled/parser.md",
            &super::settled("parser", super::BETA, ALPHA, 4, "2026-03-02 10:00:00"),
        );
        // As A's daemon would have: the stats committed with the settlement.
        ok(a.polisd(&["reconcile"]));
    });
    let daemon = b.start_daemon();

    assert!(!git_may_fail(
        &project(&b),
        &["pull", "-q", "--rebase", "origin", "main"]
    ));
    assert!(b.exists("contracts/settled/parser.md"));
    wait_for(&b, "the daemon to hold its notice for the rebase", || {
        b.count(super::BETA, "contract-settled") > 0
            || daemon.log_text().contains("in progress; notices wait")
    });
    assert_eq!(
        b.count(super::BETA, "contract-settled"),
        0,
        "told mid-rebase"
    );

    std::fs::write(notes(&b), "from both\n").unwrap();
    git(&project(&b), &["add", "notes.txt"]);
    let status = git(&project(&b), &["status", "--porcelain"]);
    assert!(
        git_may_fail(&project(&b), &["rebase", "--continue"]),
        "{status}"
    );
    wait_for(&b, "the notice after the rebase", || {
        b.count(super::BETA, "contract-settled") == 1
    });
}

/// The paths `git status --porcelain` names in `dir` (renames by their new path).
fn dirty_paths(dir: &std::path::Path) -> Vec<String> {
    git(dir, &["status", "--porcelain"])
        .lines()
        .map(|l| {
            l[3..]
                .rsplit(" -> ")
                .next()
                .unwrap()
                .trim_matches('"')
                .to_string()
        })
        .collect()
}

/// An agent settles a contract while a rebase waits for a person: the stats, the index's state
/// block, the notices would all dirty tracked files, and `git rebase --continue` then refuses
/// them or the person meets conflicts they did not make. They wait for the rebase to end
/// (`end`: `--continue` after resolving, or `--abort`), then are written once.
fn derived_writes_wait_for_a_stopped_rebase(end: &str) {
    let (_origin, _a, b) = conflicting_clones(|_| {});
    let daemon = b.start_daemon();
    let stats_before = b.read("contracts/routing_stats.yml");

    assert!(!git_may_fail(
        &project(&b),
        &["pull", "-q", "--rebase", "origin", "main"]
    ));
    let held = |log: &str| log.matches("in progress; notices wait").count();
    let before = held(&daemon.log_text());
    // Untracked, so an abort leaves it where it is, as it leaves an agent's work.
    b.save(
        "contracts/settled/lexer.md",
        &super::settled("lexer", super::BETA, ALPHA, 5, "2026-03-02 10:00:00"),
    );
    let ours = ["notes.txt", "_polis/contracts/settled/lexer.md"];
    let polisd_wrote = || {
        dirty_paths(&project(&b))
            .into_iter()
            .filter(|p| !ours.contains(&p.as_str()))
            .collect::<Vec<_>>()
    };
    wait_for(&b, "the daemon to see the settlement mid-rebase", || {
        held(&daemon.log_text()) > before || !polisd_wrote().is_empty()
    });
    assert_eq!(polisd_wrote(), Vec::<String>::new(), "written mid-rebase");
    assert_eq!(b.read("contracts/routing_stats.yml"), stats_before);
    assert_eq!(b.count(super::BETA, "contract-settled"), 0);

    if end == "--continue" {
        std::fs::write(notes(&b), "from both\n").unwrap();
        git(&project(&b), &["add", "notes.txt"]);
    }
    let status = git(&project(&b), &["status", "--porcelain"]);
    assert!(git_may_fail(&project(&b), &["rebase", end]), "{status}");
    wait_for(&b, "the derived writes after the rebase", || {
        b.count(super::BETA, "contract-settled") == 1
            && b.read("contracts/routing_stats.yml") == b.expected_stats()
            && b.read("contracts/routing_stats.yml") != stats_before
    });
    assert!(daemon.log_text().contains("polisd catches up"));
    quiet(&b);
    assert_eq!(b.count(super::BETA, "contract-settled"), 1, "told twice");
}

#[test]
fn derived_writes_wait_for_a_stopped_rebase_then_follow_its_continue() {
    derived_writes_wait_for_a_stopped_rebase("--continue");
}

#[test]
fn derived_writes_wait_for_a_stopped_rebase_then_follow_its_abort() {
    derived_writes_wait_for_a_stopped_rebase("--abort");
}

/// The daemon crashes while a rebase waits for a person, after it counted a settlement that
/// suggests a next citizen but before it could write the handoff (held for the rebase). The
/// daemon started again must not take the counted settlement for an old one: once the rebase
/// ends (`end`), the follow-up, its notice and the owner's post-it nudge are written, once
/// each, as they would have been without the crash. It is started again while the rebase still
/// waits, or (`back_after_the_end`) only once it ended.
fn a_crash_during_a_stopped_rebase_keeps_the_handoffs_held_for_it(
    end: &str,
    back_after_the_end: bool,
) {
    let (_origin, _a, b) = conflicting_clones(|_| {});
    let daemon = b.start_daemon();

    assert!(!git_may_fail(
        &project(&b),
        &["pull", "-q", "--rebase", "origin", "main"]
    ));
    let lexer = super::settled("lexer", super::BETA, ALPHA, 5, "2026-03-02 10:00:00").replace(
        "Done.\n",
        &format!(
            "Done.\n\n### Suggested next citizen\n- **Citizen**: {}\n- **Reason**: Fuzz the lexer.\n",
            super::BETA
        ),
    );
    // Untracked, so an abort leaves it where it is, as it leaves an agent's work.
    b.save("contracts/settled/lexer.md", &lexer);
    b.wait_for_ledger("contracts/settled/lexer.md");
    let follow_up = "contracts/open/lexer-next-1.md";
    assert!(!b.exists(follow_up), "a handoff written mid-rebase");
    daemon.kill9();

    let end_rebase = || {
        if end == "--continue" {
            std::fs::write(notes(&b), "from both\n").unwrap();
            git(&project(&b), &["add", "notes.txt"]);
        }
        let status = git(&project(&b), &["status", "--porcelain"]);
        assert!(git_may_fail(&project(&b), &["rebase", end]), "{status}");
    };
    let daemon = if back_after_the_end {
        end_rebase();
        b.start_daemon()
    } else {
        let daemon = b.start_daemon();
        assert!(!b.exists(follow_up), "a handoff written mid-rebase");
        assert_eq!(b.count(super::BETA, "handoff-opened"), 0);
        end_rebase();
        daemon
    };
    wait_for(&b, "the held handoff after the rebase", || {
        b.exists(follow_up) && b.count(super::BETA, "handoff-opened") == 1
    });
    quiet(&b);
    drop(daemon);
    assert_eq!(b.count(super::BETA, "handoff-opened"), 1, "told twice");
    assert_eq!(b.count(super::BETA, "contract-settled"), 1);
    assert_eq!(b.count(ALPHA, "postit-missing"), 1);
    let opened = b
        .read("chronicle.md")
        .matches("| opened contract | [[contracts/open/lexer-next-1]]")
        .count();
    assert_eq!(opened, 1, "the follow-up's line once");
}

#[test]
fn a_crash_during_a_stopped_rebase_keeps_the_handoffs_held_for_it_then_follows_its_continue() {
    a_crash_during_a_stopped_rebase_keeps_the_handoffs_held_for_it("--continue", false);
}

#[test]
fn a_crash_during_a_stopped_rebase_keeps_the_handoffs_held_for_it_then_follows_its_abort() {
    a_crash_during_a_stopped_rebase_keeps_the_handoffs_held_for_it("--abort", false);
}

#[test]
fn a_crash_during_a_stopped_rebase_keeps_the_handoffs_held_for_it_past_its_end_while_down() {
    a_crash_during_a_stopped_rebase_keeps_the_handoffs_held_for_it("--continue", true);
}

/// `git bisect` checks out older commits one after another until the person says which one
/// broke something: meanwhile the chronicle lacks every line committed after the commit under
/// test. Nothing is lost (`git bisect reset` brings them back), so nothing is told: a C009
/// notice then would stay behind as a false alarm, in an inbox that git shows as changed.
#[test]
fn a_bisect_does_not_report_the_lines_of_the_commits_it_left_out() {
    let (_origin, _a, b) = two_clones();
    let lines: Vec<String> = (1..=4)
        .map(|i| chronicle_line(ALPHA, "noted", "-", &format!("step {i}")))
        .collect();
    for (i, line) in lines.iter().enumerate() {
        b.append("chronicle.md", line);
        commit_all(&b, &format!("step {}", i + 1));
    }
    let daemon = b.start_daemon();

    git(&project(&b), &["bisect", "start", "HEAD", "HEAD~4"]);
    assert!(!b.read("chronicle.md").contains(lines[3].trim_end()));
    wait_for(&b, "the daemon to hold its findings for the bisect", || {
        b.count(ALPHA, "chronicle-finding") > 0
            || daemon
                .log_text()
                .contains("in progress; held findings wait")
    });
    assert_eq!(b.count(ALPHA, "chronicle-finding"), 0, "told mid-bisect");

    git(&project(&b), &["bisect", "reset"]);
    wait_for(&b, "the held findings to resolve themselves", || {
        daemon.log_text().contains("polisd catches up")
            && daemon
                .log_text()
                .contains("resolved itself within the settling window")
    });
    quiet(&b);
    assert_eq!(b.count(ALPHA, "chronicle-finding"), 0);
    assert_eq!(git(&project(&b), &["status", "--porcelain"]), "");
}
