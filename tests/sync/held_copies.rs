//! Conflict copies the daemon must not merge: one that already holds git conflict markers (a
//! person's unfinished merge a sync tool carried along) or that is not UTF-8 text. Merged,
//! its markers would land in the chronicle or an inbox, which polisd then stops reading
//! (P023); left silently, its lines would sit unseen. Each is left for a person and told to
//! the index keeper.

use super::{ALPHA, FOUNDER};
use crate::harness::*;

const MARKED: &str = "<<<<<<< ours\n- 2026-03-02 11:58 | founder-agent | noted | - | mine\n=======\n- 2026-03-02 11:59 | founder-agent | noted | - | theirs\n>>>>>>> theirs\n";

#[test]
fn a_chronicle_copy_holding_conflict_markers_is_reported_not_merged() {
    let p = TestPolis::init(FOUNDER);
    let _daemon = p.start_daemon();
    let before = p.read("chronicle.md");
    let copy = "chronicle.sync-conflict-20260302-120000-BBBBBBB.md";
    p.save(copy, &format!("{before}{MARKED}"));
    wait_for(&p, "the sync-conflict notice", || {
        p.count(FOUNDER, "sync-conflict") == 1
    });
    assert_eq!(p.read("chronicle.md"), before, "nothing merged in");
    assert!(p.exists(copy), "the copy is left for a person");
    assert!(p
        .read(&format!("citizens/{FOUNDER}/inbox.md"))
        .contains(copy));
    let check = p.polisd(&["check"]);
    let out = String::from_utf8_lossy(&check.stdout);
    assert!(!out.contains("P023"), "{out}");
    assert!(
        out.contains("P009") && out.contains("conflict markers") && !out.contains("daemon merges"),
        "{out}"
    );
}

#[test]
fn a_chronicle_copy_that_is_not_utf8_is_reported() {
    let p = TestPolis::init(FOUNDER);
    let _daemon = p.start_daemon();
    let before = p.read("chronicle.md");
    let copy = "chronicle (conflict 1).md";
    let mut bytes = before.clone().into_bytes();
    bytes.extend_from_slice(b"- 2026-03-02 11:57 | founder-agent | noted | - | caf\xe9\n");
    std::fs::write(p.path(copy), bytes).unwrap();
    wait_for(&p, "the sync-conflict notice", || {
        p.count(FOUNDER, "sync-conflict") == 1
    });
    assert_eq!(p.read("chronicle.md"), before);
    let check = p.polisd(&["check"]);
    let out = String::from_utf8_lossy(&check.stdout);
    assert!(out.contains("P009") && out.contains("UTF-8"), "{out}");
}

#[test]
fn an_inbox_copy_holding_conflict_markers_is_reported_not_merged() {
    let p = TestPolis::init(FOUNDER);
    p.citizen(ALPHA, "anthropic", &[("rust", 4)], "medium");
    let _daemon = p.start_daemon();
    let inbox = format!("citizens/{ALPHA}/inbox.md");
    let before = p.read(&inbox);
    let copy = format!("citizens/{ALPHA}/inbox.sync-conflict-20260302-120000-BBBBBBB.md");
    p.save(
        &copy,
        &format!("{before}\n### 2026-03-02 12:00 from {FOUNDER}\n\n{MARKED}"),
    );
    wait_for(&p, "the sync-conflict notice", || {
        p.count(FOUNDER, "sync-conflict") == 1
    });
    assert_eq!(p.read(&inbox), before, "nothing merged in");
    assert!(p.exists(&copy));
}
