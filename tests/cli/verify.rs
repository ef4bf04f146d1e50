//! `polisd verify`: card stamps checked, and fixed the way the reference fixes them.

use super::{
    copy_tree, describe, edit_founder_card, json, keys, reference_ok, set, stdout, FOUNDER,
    FOUNDER_CARD,
};
use crate::harness::TestPolis;
use std::path::{Path, PathBuf};

#[test]
fn verify_ok_after_init() {
    let p = TestPolis::init(FOUNDER);
    let out = p.polisd(&["verify"]);
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    assert!(
        stdout(&out).starts_with(&format!("  ok     {FOUNDER}\n")),
        "{}",
        describe(&out)
    );
    let report = json(&p.polisd(&["verify", "--json"]));
    assert_eq!(keys(&report), set(&["cards"]));
    let cards = report["cards"].as_array().unwrap();
    assert_eq!(cards.len(), 1);
    assert_eq!(keys(&cards[0]), set(&["citizen", "state", "digest"]));
    assert_eq!(cards[0]["citizen"], FOUNDER);
    assert_eq!(cards[0]["state"], "ok");
    assert_eq!(cards[0]["digest"].as_str().unwrap().len(), 64);
    assert!(p
        .read(FOUNDER_CARD)
        .contains(cards[0]["digest"].as_str().unwrap()));
}

#[test]
fn verify_detects_mismatch_after_card_edit_and_exits_1() {
    let p = TestPolis::init(FOUNDER);
    edit_founder_card(&p);
    let out = p.polisd(&["verify"]);
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    assert!(
        stdout(&out).contains(&format!("mismatch {FOUNDER}")),
        "{}",
        describe(&out)
    );
    let out = p.polisd(&["verify", "--json"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(json(&out)["cards"][0]["state"], "mismatch");
}

fn card_paths(root: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(root.join("citizens"))
        .unwrap()
        .map(|e| e.unwrap().path().join("capability_card.yml"))
        .filter(|p| p.exists())
        .collect();
    out.sort();
    out
}

#[test]
fn verify_fix_stamps_like_the_reference_and_the_reference_then_says_ok() {
    let p = TestPolis::init(FOUNDER);
    edit_founder_card(&p);
    // An unstamped card and a legacy one (only `signature:`).
    p.citizen("codex-second-two", "openai", &[("python", 4)], "low");
    p.save(
        "citizens/gemini-third-three/capability_card.yml",
        "agent_id: gemini-third-three\nvendor: google\ncapability_tags:\n  docs:\n    self_rating: 3\n\
         signature: \"gemini-third-three:2026-01-01:sha256:00\"\n",
    );
    let theirs = p.dir.path().join("reference-copy");
    copy_tree(&p.root, &theirs);

    let out = p.polisd(&["verify", "--fix"]);
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    let text = stdout(&out);
    for (who, was) in [
        (FOUNDER, "mismatch"),
        ("codex-second-two", "unstamped"),
        ("gemini-third-three", "legacy"),
    ] {
        assert!(
            text.contains(&format!("ok     {who} (stamped; was {was})")),
            "{who}:\n{text}"
        );
    }
    let after = p.polisd(&["verify", "--json"]);
    assert_eq!(after.status.code(), Some(0), "{}", describe(&after));
    let cards = json(&after);
    assert!(
        cards["cards"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["state"] == "ok"),
        "{cards:#}"
    );

    // The reference stamps the same bytes...
    let theirs_str = theirs.to_str().unwrap();
    reference_ok(
        &["verify", "--fix", "--polis-root", theirs_str],
        p.dir.path(),
    );
    let ours = card_paths(&p.root);
    let refs = card_paths(&theirs);
    assert_eq!(ours.len(), 3);
    assert_eq!(ours.len(), refs.len());
    for (a, b) in ours.iter().zip(&refs) {
        assert_eq!(
            std::fs::read_to_string(a).unwrap(),
            std::fs::read_to_string(b).unwrap(),
            "{} differs from the reference's stamp",
            a.display()
        );
    }
    // ...and accepts ours.
    let verdict = reference_ok(
        &["verify", "--polis-root", p.root.to_str().unwrap()],
        p.dir.path(),
    );
    for who in [FOUNDER, "codex-second-two", "gemini-third-three"] {
        assert!(
            verdict.contains(&format!("ok     {who}\n")),
            "{who}:\n{verdict}"
        );
    }
}
