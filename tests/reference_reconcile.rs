//! Reconcile (SPEC §6) against the Python reference: generated polises must give
//! `routing_stats.yml` byte for byte except `last_updated`, and the reference's defects that
//! SPEC fixes are pinned by comparing polisd on the defective input with the reference on a
//! corrected twin.

#[path = "common/generate.rs"]
mod generate;
#[path = "common/reference.rs"]
mod reference;

use generate::{File, TimeStyle, TIME_STYLES};
use polisd::protocol::clock::PolisZone;
use polisd::protocol::contracts::contract::read_settled;
use polisd::protocol::finding::{Code, Finding};
use polisd::protocol::routing::stats::{self, Settlement};
use polisd::yaml::Value;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::path::{Path, PathBuf};

/// Runs the reference's `reconcile_stats` on each polis in one Python process. Per polis:
/// the file it wrote, or the exception it raised.
fn reference_reconcile(roots: &[PathBuf]) -> Vec<Result<String, String>> {
    let script = r#"
import contextlib, io, json, sys, traceback
from pathlib import Path
from polis.routing import reconcile_stats
out = []
for d in json.load(sys.stdin):
    root = Path(d)
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            reconcile_stats(root)
        out.append({"ok": (root / "contracts" / "routing_stats.yml").read_text(encoding="utf-8")})
    except Exception as e:
        out.append({"err": f"{type(e).__name__}: {e}"})
print(json.dumps(out))
"#;
    let input = serde_json::to_string(&roots).unwrap();
    let stdout = reference::run_python(script, &input);
    let rows: Vec<serde_json::Value> = serde_json::from_str(&stdout).expect("JSON from Python");
    rows.into_iter()
        .map(|r| match r.get("ok") {
            Some(v) => Ok(v.as_str().unwrap().to_string()),
            None => Err(r["err"].as_str().unwrap().to_string()),
        })
        .collect()
}

/// polisd's reconcile of a polis on disk: the file's text and the findings.
fn ours(root: &Path) -> (String, Vec<Finding>, Vec<Settlement>) {
    let dir = root.join("contracts/settled");
    let mut settlements = Vec::new();
    let mut findings = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "md") || !path.is_file() {
            continue;
        }
        let rel = path
            .strip_prefix(root)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let raw = std::fs::read_to_string(&path).unwrap();
        let read = read_settled(&rel, &raw, PolisZone::default());
        findings.extend(read.findings);
        settlements.extend(read.settlement);
    }
    let st = stats::reconcile(&settlements, &Value::Null, &Value::Null);
    (stats::render(&st).expect("render"), findings, settlements)
}

/// The text after the `last_updated` line, which is the one line allowed to differ.
#[track_caller]
fn after_last_updated(text: &str) -> &str {
    let (first, rest) = text.split_once('\n').expect("at least one line");
    assert!(
        first.starts_with("last_updated: "),
        "first line is {first:?}"
    );
    rest
}

fn polis(dir: &Path, name: &str, files: &[File]) -> PathBuf {
    let root = dir.join(name).join("_polis");
    std::fs::create_dir_all(root.join("contracts/settled")).unwrap();
    generate::write_tree(&root, files);
    root
}

#[test]
fn reconcile_matches_reference_on_52_generated_polises() {
    let tmp = tempfile::tempdir().unwrap();
    let mut rng = StdRng::seed_from_u64(0x05e7_71ed);
    let mut roots = Vec::new();
    let mut total = 0;
    for i in 0..52 {
        let n = match i {
            0 => 2000,
            1 => 1000,
            2 => 1,
            _ => rng.random_range(1..=250),
        };
        total += n;
        let style = TIME_STYLES[i % TIME_STYLES.len()];
        let files = generate::settled_polis(&mut rng, n, style);
        roots.push(polis(tmp.path(), &format!("p{i:02}"), &files));
    }
    let want = reference_reconcile(&roots);
    let mut failures = Vec::new();
    for (root, want) in roots.iter().zip(&want) {
        let want = want
            .as_ref()
            .unwrap_or_else(|e| panic!("reference failed on {root:?}: {e}"));
        let (got, findings, _) = ours(root);
        assert!(
            findings.iter().all(|f| f.code == Code::QualityDefaulted),
            "{findings:?}"
        );
        if after_last_updated(&got) != after_last_updated(want) {
            failures.push(format!(
                "{root:?}\n--- reference\n{want}\n--- polisd\n{got}"
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} polises ({total} contracts) differ; first:\n{}",
        failures.len(),
        roots.len(),
        failures[0].chars().take(6000).collect::<String>()
    );
}

/// polisd on `files` must equal the reference on `twin` (the same polis without the defect);
/// returns the reference's result on `files` itself, to pin what it does wrong.
#[track_caller]
fn assert_like_reference_on_twin(
    files: &[File],
    twin: &[File],
) -> (Result<String, String>, Vec<Finding>) {
    let tmp = tempfile::tempdir().unwrap();
    let a = polis(tmp.path(), "defect", files);
    let b = polis(tmp.path(), "twin", twin);
    let mut res = reference_reconcile(&[a.clone(), b]);
    let twin_out = res.pop().unwrap().expect("reference reads the twin");
    let (got, findings, _) = ours(&a);
    assert_eq!(after_last_updated(&got), after_last_updated(&twin_out));
    (res.pop().unwrap(), findings)
}

fn settled(name: &str, owner: &str, fm_extra: &str, body: &str) -> File {
    (
        format!("contracts/settled/{name}.md"),
        format!("---\ncontract_id: {name}\nowner: {owner}\nstatus: settled\n{fm_extra}---\n{body}"),
    )
}

#[test]
fn reconcile_mixed_settled_at_styles() {
    let mut files = Vec::new();
    let mut twin = Vec::new();
    let times = [
        ("2026-03-02 10:00:00", "2026-03-02 10:00:00"),
        ("'2026-03-02 09:30'", "2026-03-02 09:30:00"),
        ("2026-03-01", "2026-03-01 00:00:00"),
        ("\"2026-03-03\"", "2026-03-03 00:00:00"),
        ("'2026-03-02 09:30'", "2026-03-02 09:30:00"),
    ];
    for (i, (mixed, unified)) in times.iter().enumerate() {
        let owner = ["alice-agent", "bob-builder"][i % 2];
        let fm = |t: &str| {
            format!("settled_at: {t}\nrequired_tags: [py, docs]\nquality_score: {}\nactual_minutes: {}\n", i % 5 + 1, 10 * i + 7)
        };
        files.push(settled(&format!("c{i}"), owner, &fm(mixed), ""));
        twin.push(settled(&format!("c{i}"), owner, &fm(unified), ""));
    }
    let (reference_on_mixed, _) = assert_like_reference_on_twin(&files, &twin);
    let err = reference_on_mixed.expect_err("the reference cannot sort mixed time styles");
    assert!(err.starts_with("TypeError"), "{err}");
}

#[test]
fn reconcile_string_required_tags_is_one_tag() {
    let files = [settled(
        "c1",
        "alice-agent",
        "settled_at: 2026-03-02 10:00:00\nrequired_tags: python\nquality_score: 4\n",
        "",
    )];
    let twin = [settled(
        "c1",
        "alice-agent",
        "settled_at: 2026-03-02 10:00:00\nrequired_tags: [python]\nquality_score: 4\n",
        "",
    )];
    let (reference, _) = assert_like_reference_on_twin(&files, &twin);
    // The reference iterates the string: one tag per letter.
    assert!(reference.unwrap().contains("\n  p:\n"));
}

#[test]
fn reconcile_duplicated_tags_counted_once() {
    let files = [settled(
        "c1",
        "alice-agent",
        "settled_at: 2026-03-02 10:00:00\nrequired_tags: [py, py, docs]\nquality_score: 4\n",
        "",
    )];
    let twin = [settled(
        "c1",
        "alice-agent",
        "settled_at: 2026-03-02 10:00:00\nrequired_tags: [py, docs]\nquality_score: 4\n",
        "",
    )];
    let (reference, _) = assert_like_reference_on_twin(&files, &twin);
    assert!(reference.unwrap().contains("contracts_completed: 2"));
}

#[test]
fn reconcile_body_quality_outside_1_to_5_clamped() {
    let files = [
        settled(
            "c1",
            "alice-agent",
            "settled_at: 2026-03-02 10:00:00\nrequired_tags: [py]\n",
            "Quality self-score: 9\n",
        ),
        settled(
            "c2",
            "bob-builder",
            "settled_at: 2026-03-02 11:00:00\nrequired_tags: [py]\n",
            "## Quality self-score\n\n0\n",
        ),
    ];
    let twin = [
        settled(
            "c1",
            "alice-agent",
            "settled_at: 2026-03-02 10:00:00\nrequired_tags: [py]\n",
            "Quality self-score: 5\n",
        ),
        settled(
            "c2",
            "bob-builder",
            "settled_at: 2026-03-02 11:00:00\nrequired_tags: [py]\n",
            "## Quality self-score\n\n1\n",
        ),
    ];
    let (reference, _) = assert_like_reference_on_twin(&files, &twin);
    assert!(reference.unwrap().contains("avg_quality_score: 9.0"));
}

#[test]
fn reconcile_bom_and_crlf_settled_file() {
    let fm = "settled_at: 2026-03-02 10:00:00\nrequired_tags: [py]\nactual_minutes: 12\n";
    let body = "## Quality self-score\n\n4\n";
    let (name, text) = settled("c1", "alice-agent", fm, body);
    let files = [(name, format!("\u{feff}{}", text.replace('\n', "\r\n")))];
    let twin = [settled("c1", "alice-agent", fm, body)];
    let (reference, _) = assert_like_reference_on_twin(&files, &twin);
    // The reference keeps the BOM, misses the frontmatter and drops the contract.
    assert!(reference.unwrap().ends_with("tags: {}\n"));
}

#[test]
fn reconcile_bad_file_is_a_finding_not_an_abort() {
    let good = settled(
        "c1",
        "alice-agent",
        "settled_at: 2026-03-02 10:00:00\nrequired_tags: [py]\nquality_score: 4\n",
        "",
    );
    let bad = (
        "contracts/settled/c2.md".to_string(),
        "---\nstatus: settled\nowner: [oops\n---\n".to_string(),
    );
    let no_owner = settled("c3", "null", "required_tags: [py]\n", "");
    let (reference, findings) =
        assert_like_reference_on_twin(&[good.clone(), bad, no_owner], &[good]);
    assert!(reference.is_err(), "the reference aborts on one bad file");
    let codes: Vec<_> = findings.iter().map(|f| (f.path.as_str(), f.code)).collect();
    assert!(
        codes.contains(&("contracts/settled/c2.md", Code::BadYaml)),
        "{codes:?}"
    );
    assert!(
        codes.contains(&("contracts/settled/c3.md", Code::BadSettlement)),
        "{codes:?}"
    );
}

#[test]
fn reconcile_reports_defaulted_quality_for_the_owner() {
    let tmp = tempfile::tempdir().unwrap();
    let root = polis(
        tmp.path(),
        "p",
        &[settled(
            "c1",
            "alice-agent",
            "required_tags: [py]\n",
            "No score here.\n",
        )],
    );
    let (_, findings, settlements) = ours(&root);
    assert_eq!(findings.len(), 1);
    assert_eq!(findings[0].code, Code::QualityDefaulted);
    let told: Vec<_> = stats::quality_defaulted(&settlements)
        .map(|s| s.owner.as_str())
        .collect();
    assert_eq!(told, ["alice-agent"]);
}

#[test]
fn generated_polises_are_deterministic() {
    let a = generate::settled_polis(&mut StdRng::seed_from_u64(1), 20, TimeStyle::Quoted);
    let b = generate::settled_polis(&mut StdRng::seed_from_u64(1), 20, TimeStyle::Quoted);
    assert_eq!(a, b);
}
