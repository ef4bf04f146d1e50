//! The files the agents' commands write, compared with the Python reference's `polis contract
//! open|claim|settle|abandon` and `polis guardrail add` run on a copy of the same polis. They
//! must be the same bytes apart from timestamps and the documented differences: polisd also
//! writes chronicle lines, a `## Settlement` section and (with no daemon) `routing_stats.yml`.
//! Fails, never skips, when the reference is missing.

mod harness;
#[path = "common/reference.rs"]
mod reference;

use harness::{copy_tree, TestPolis};
use std::collections::BTreeMap;
use std::path::Path;

const FOUNDER: &str = "claude-founder-one";

/// Drives the reference's application layer with the same arguments as the commands below.
const REFERENCE: &str = r#"
import sys, json
from polis import contracts, guardrails
root = sys.stdin.read().strip()
guardrails.add_guardrail(root, "Run the auth tests before merging", ["python"], source_contract="old-bug")
guardrails.add_guardrail(root, "A guardrail: with punctuation, and a long text that is cut at forty-eight characters", ["sql"])
contracts.open_contract(root, "Fix the login bug!", ["python", "auth"], "claude-founder-one", stakes="high", cost_ceiling="low", deadline="2026-12-24")
contracts.open_contract(root, "Fix the login bug!", ["python"], "claude-founder-one")
contracts.open_contract(root, "Café: naïve UTF-8 title", [], "claude-founder-one", stakes="low")
r = contracts.claim_contract(root, "fix-the-login-bug", "claude-founder-one")
assert r["ok"], r
r = contracts.claim_contract(root, "fix-the-login-bug-2", "claude-founder-one")
assert r["ok"], r
r = contracts.settle_contract(root, "fix-the-login-bug-2", 4, minutes=25)
assert r["ok"], r
r = contracts.abandon_contract(root, "caf-na-ve-utf-8-title", reason="duplicate of fix-the-login-bug")
assert r["ok"], r
print("done")
"#;

fn ours(p: &Path, args: &[&str]) {
    let out = std::process::Command::new(harness::BIN)
        .args(args)
        .arg("--polis")
        .arg(p)
        .env("POLISD_STATE_DIR", p.join("../state"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The files under `dirs`, timestamps replaced by `<TS>` and polisd's Settlement section cut.
fn files(root: &Path, dirs: &[&str]) -> BTreeMap<String, String> {
    let stamp = regex::Regex::new(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}").unwrap();
    let mut out = BTreeMap::new();
    for dir in dirs {
        let Ok(entries) = std::fs::read_dir(root.join(dir)) else {
            continue;
        };
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if !name.ends_with(".md") {
                continue;
            }
            let text = std::fs::read_to_string(e.path()).unwrap();
            let text = match text.find("\n## Settlement\n") {
                Some(at) => text[..at].to_string(),
                None => text,
            };
            out.insert(
                format!("{dir}/{name}"),
                stamp.replace_all(&text, "<TS>").into_owned(),
            );
        }
    }
    out
}

#[test]
fn contract_lifecycle_and_guardrails_write_the_reference_files() {
    let base = TestPolis::init(FOUNDER);
    let work = tempfile::tempdir().unwrap();
    let theirs = work.path().join("theirs/_polis");
    let mine = work.path().join("mine/_polis");
    copy_tree(&base.root, &theirs);
    copy_tree(&base.root, &mine);
    assert_eq!(
        reference::run_python(REFERENCE, theirs.to_str().unwrap()).trim(),
        "done"
    );

    ours(
        &mine,
        &[
            "guardrail",
            "add",
            "--text",
            "Run the auth tests before merging",
            "--tags",
            "python",
            "--from",
            "old-bug",
        ],
    );
    ours(
        &mine,
        &[
            "guardrail",
            "add",
            "--text",
            "A guardrail: with punctuation, and a long text that is cut at forty-eight characters",
            "--tags",
            "sql",
        ],
    );
    ours(
        &mine,
        &[
            "contract",
            "open",
            "--title",
            "Fix the login bug!",
            "--tags",
            "python,auth",
            "--by",
            FOUNDER,
            "--stakes",
            "high",
            "--cost-ceiling",
            "low",
            "--deadline",
            "2026-12-24",
        ],
    );
    ours(
        &mine,
        &[
            "contract",
            "open",
            "--title",
            "Fix the login bug!",
            "--tags",
            "python",
            "--by",
            FOUNDER,
        ],
    );
    ours(
        &mine,
        &[
            "contract",
            "open",
            "--title",
            "Café: naïve UTF-8 title",
            "--by",
            FOUNDER,
            "--stakes",
            "low",
        ],
    );
    ours(
        &mine,
        &["contract", "claim", "fix-the-login-bug", "--as", FOUNDER],
    );
    ours(
        &mine,
        &["contract", "claim", "fix-the-login-bug-2", "--as", FOUNDER],
    );
    // The reference has no review command, so the settle compared byte for byte is of a
    // medium-stakes contract; the high-stakes one is refused (below) and stays claimed.
    ours(
        &mine,
        &[
            "contract",
            "settle",
            "fix-the-login-bug-2",
            "--no-lesson",
            "compared with the reference",
            "--quality",
            "4",
            "--minutes",
            "25",
        ],
    );
    ours(
        &mine,
        &[
            "contract",
            "abandon",
            "caf-na-ve-utf-8-title",
            "--reason",
            "duplicate of fix-the-login-bug",
        ],
    );
    // polisd's one difference in the lifecycle: a stakes: high contract waits for a review
    // sign-off. The refusal writes nothing, so the files below still equal the reference's.
    let refused = std::process::Command::new(harness::BIN)
        .args([
            "contract",
            "settle",
            "fix-the-login-bug",
            "--no-lesson",
            "compared with the reference",
            "--quality",
            "4",
            "--polis",
        ])
        .arg(&mine)
        .env("POLISD_STATE_DIR", mine.join("../state"))
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(1), "{refused:?}");
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("stakes: high"),
        "{refused:?}"
    );

    let dirs = [
        "contracts/open",
        "contracts/settled",
        "contracts/abandoned",
        "guardrails",
    ];
    let (a, b) = (files(&theirs, &dirs), files(&mine, &dirs));
    assert_eq!(
        a.keys().collect::<Vec<_>>(),
        b.keys().collect::<Vec<_>>(),
        "the same files"
    );
    for (path, text) in &a {
        assert_eq!(&b[path], text, "{path} differs from the reference's");
    }
    assert_eq!(a.len(), 5, "{:?}", a.keys());
    // What polisd adds: the Settlement section and the chronicle lines.
    assert!(
        std::fs::read_to_string(mine.join("contracts/settled/fix-the-login-bug-2.md"))
            .unwrap()
            .contains("\n## Settlement\n")
    );
    // The reference keeps working on the folder polisd wrote.
    let listed = reference::run_python(
        r#"
import sys
from polis import contracts, context
root = sys.stdin.read().strip()
rows = contracts.list_contracts(root, "open")
print(",".join(r["contract_id"] for r in rows))
r = contracts.claim_contract(root, rows[0]["contract_id"], "claude-founder-one")
assert r["ok"], r
p = context.build_packet(root, "fix-the-login-bug")
assert p["ok"] and p["guardrails"], p
"#,
        mine.to_str().unwrap(),
    );
    assert_eq!(listed.trim(), "fix-the-login-bug");
    let chronicle = std::fs::read_to_string(mine.join("chronicle.md")).unwrap();
    for verb in [
        "opened contract",
        "claimed contract",
        "settled contract",
        "abandoned contract",
    ] {
        assert!(
            chronicle.contains(&format!("| {verb} |")),
            "{verb}: {chronicle}"
        );
    }
}
