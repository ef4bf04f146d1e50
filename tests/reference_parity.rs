//! The reference's own scenarios for what a person reads: `polis report` (the replay: each
//! settled contract with its quality, minutes and lesson; lessons, guardrails, reservations;
//! redaction that hides identities and paths) and `polis contract show` (the file's path, then
//! its text, as the reference repository's own test pins it). The polis is built by the
//! reference's own code, then read by polisd. Fails, never skips, when the reference is missing.

mod harness;
#[path = "common/reference.rs"]
mod reference;

use std::path::Path;
use std::process::Command;

/// The reference's report fixture (its `_make_polis`), plus a lesson naming the contract in
/// `related_contracts`; prints the contract id.
const MAKE_POLIS: &str = r##"
import sys
from pathlib import Path
from polis import guardrails, reservations
from polis.contracts import claim_contract, open_contract, settle_contract
root = Path(sys.stdin.read().strip())
root.mkdir(parents=True)
(root / "CONSTITUTION.md").write_text("# c\n", encoding="utf-8")
cdir = root / "citizens" / "claude-research-acme"
cdir.mkdir(parents=True)
(cdir / "capability_card.yml").write_text(
    "agent_id: claude-research-acme\nvendor: anthropic\n"
    "capability_tags:\n  research: {self_rating: 4}\n", encoding="utf-8")
cid = open_contract(root, "Secret Acme task", ["research"], "claude-research-acme")["contract_id"]
claim_contract(root, cid, "claude-research-acme")
settle_contract(root, cid, quality=4, minutes=30)
ldir = root / "lessons" / "research"
ldir.mkdir(parents=True)
(ldir / "l1.md").write_text(
    "---\nlesson_id: L1\nstatus: accepted\ncapability_tags: [research]\n"
    "routing_effect:\n  - citizen: claude-research-acme\n    tags: [research]\n    delta: 0.05\n---\nbody\n",
    encoding="utf-8")
(ldir / "l2.md").write_text(
    "---\nlesson_id: L2-from-the-task\nstatus: accepted\ncapability_tags: [research]\n"
    f"related_contracts: [{cid}]\n---\nCheck the acme sources.\n",
    encoding="utf-8")
guardrails.add_guardrail(root, "Check the sources twice.", ["research"], cid)
reservations.reserve(root, "claude-research-acme", ["src/secret/path.py"])
print(cid)
"##;

/// A polis made by the reference, at `<tmp>/_polis`; returns its contract id.
fn reference_polis(tmp: &Path) -> String {
    let root = tmp.join("_polis");
    reference::run_python(MAKE_POLIS, &root.display().to_string())
        .trim()
        .to_string()
}

fn polisd(tmp: &Path, args: &[&str]) -> String {
    let out = Command::new(harness::BIN)
        .args(args)
        .env("POLISD_STATE_DIR", tmp.join("state"))
        .current_dir(tmp)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn the_report_shows_each_settlement_lessons_guardrails_and_reservations() {
    let tmp = tempfile::tempdir().unwrap();
    let cid = reference_polis(tmp.path());
    let polis = tmp.path().join("_polis");
    let polis = polis.to_str().unwrap();
    for format in ["md", "html"] {
        let text = polisd(tmp.path(), &["report", polis, "--format", format]);
        // The reference's assertions on its replay.
        for wanted in [
            "quality",
            "30",
            "L1",
            cid.as_str(),
            "claude-research-acme",
            "src/secret/path.py",
            "Check the sources twice.",
        ] {
            assert!(text.contains(wanted), "{format}: no {wanted:?} in\n{text}");
        }
        assert!(
            text.contains("L2-from-the-task"),
            "{format}: the contract's lesson"
        );
        assert!(text.contains("Guardrails (1)"), "{format}");
        assert!(text.contains("Reservations in force (1)"), "{format}");
        assert!(
            text.contains("Lessons with a routing effect (1)"),
            "{format}"
        );
    }
    let md = polisd(tmp.path(), &["report", polis]);
    assert!(
        md.contains(&format!(
            "- `{cid}`: owner `claude-research-acme`, quality 4, 30 min, lesson L2-from-the-task"
        )),
        "{md}"
    );
    assert!(
        md.contains("claude-research-acme +0.05 on research"),
        "{md}"
    );
}

#[test]
fn the_redacted_report_hides_every_identity_tag_vendor_date_and_text() {
    let tmp = tempfile::tempdir().unwrap();
    let cid = reference_polis(tmp.path());
    let polis = tmp.path().join("_polis");
    let polis = polis.to_str().unwrap();
    let guardrail_id = std::fs::read_dir(tmp.path().join("_polis/guardrails"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "md"))
        .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
        .expect("the reference's guardrail file");
    let secrets = [
        "claude-research-acme",
        "anthropic",
        "research",
        "src/secret/path.py",
        "secret",
        "Secret Acme task",
        "Acme",
        "Check the sources",
        "acme sources",
        "L1",
        "L2-from-the-task",
        cid.as_str(),
        guardrail_id.as_str(),
        "_polis",
    ];
    let date = regex::Regex::new(r"\d{4}-\d{2}-\d{2}").unwrap();
    for format in ["md", "html"] {
        let text = polisd(
            tmp.path(),
            &["report", polis, "--format", format, "--redact"],
        );
        for secret in secrets {
            assert!(
                !text.to_lowercase().contains(&secret.to_lowercase()),
                "{format}: {secret:?} shows in\n{text}"
            );
        }
        assert!(!date.is_match(&text), "{format}: a date shows in\n{text}");
        assert!(text.contains("redacted"), "{format}");
        // Still a report: the counts and the shape stay.
        assert!(text.contains("Guardrails (1)"), "{format}");
        assert!(text.contains("Reservations in force (1)"), "{format}");
    }
}

#[test]
fn contract_show_prints_the_path_then_the_file_as_the_reference_does() {
    let tmp = tempfile::tempdir().unwrap();
    let cid = reference_polis(tmp.path());
    let polis = tmp.path().join("_polis");
    // One open and one abandoned contract beside the settled one, made by the reference too.
    let more = reference::run_python(
        r#"
import sys
from polis.contracts import abandon_contract, open_contract
root = sys.stdin.read().strip()
a = open_contract(root, "Still open", ["research"], "claude-research-acme")["contract_id"]
b = open_contract(root, "Doomed", [], "claude-research-acme")["contract_id"]
abandon_contract(root, b, reason="descoped")
print(a, b)
"#,
        &polis.display().to_string(),
    );
    let ids: Vec<&str> = std::iter::once(cid.as_str())
        .chain(more.split_whitespace())
        .collect();
    assert_eq!(ids.len(), 3);
    for id in ids {
        // The packaged reference (2.0.1) has no `contract show` yet; its repository's test
        // pins the output: the path its `find_contract` gives, a newline, the file's text.
        let path = reference::run_python(
            r#"
import sys
from polis.contracts import find_contract
root, cid = sys.stdin.read().split()
path, _state = find_contract(root, cid)
print(path.resolve())
"#,
            &format!("{} {id}", polis.display()),
        );
        let path = path.trim_end();
        let theirs = format!("{path}\n{}", std::fs::read_to_string(path).unwrap());
        let ours = polisd(
            tmp.path(),
            &["contract", "show", id, "--polis", polis.to_str().unwrap()],
        );
        assert_eq!(ours, theirs, "{id}");
    }
}
