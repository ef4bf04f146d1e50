//! Reflection: every detector on a polis built to trigger it, silence on a healthy
//! one and below the minimum evidence, the daemon filing a proposal once (not again after a
//! restart, nor once it is ratified), a declined slug coming back only with doubled evidence,
//! the tally ratifying a reflect proposal, and the reference's three detectors deciding the same
//! on the reference's own test fixtures.

mod harness;
#[path = "common/reference.rs"]
mod reference;

use harness::{chronicle_line, wait_for, TestPolis};
use serde_json::Value as Json;
use std::collections::BTreeSet;

const FOUNDER: &str = "founder-agent";
const CLAUDE: &str = "claude-dev";
const CODEX: &str = "codex-dev";

fn polis() -> TestPolis {
    let p = TestPolis::init(FOUNDER);
    p.citizen(
        CLAUDE,
        "anthropic",
        &[("backend", 4), ("frontend", 4)],
        "medium",
    );
    p.citizen(
        CODEX,
        "openai",
        &[("backend", 4), ("frontend", 4)],
        "medium",
    );
    p.append(
        "chronicle.md",
        &chronicle_line(CLAUDE, "joined polis", "-", "hello"),
    );
    p.append(
        "chronicle.md",
        &chronicle_line(CODEX, "joined polis", "-", "hello"),
    );
    p
}

/// A settled contract as the reference's fixture writes it.
fn settled_text(
    id: &str,
    tag: &str,
    owner: &str,
    quality: u8,
    recommended: Option<&str>,
) -> String {
    let routing = recommended.map_or(" {}".to_string(), |r| {
        format!("\n  recommended_by_router: {r}")
    });
    // Yesterday: a proposal is dated by its newest evidence, and evidence older than the 30
    // days a proposal stays open is held as stale.
    let at = (chrono::Utc::now() - chrono::Duration::days(1)).format("%Y-%m-%d 10:00:00");
    format!(
        "---\ncontract_id: {id}\nstatus: settled\nowner: {owner}\nrequired_tags: [{tag}]\n\
         quality_score: {quality}\nstakes: medium\nreview: {{required: false}}\nrouting:{routing}\n\
         settled_at: '{at}'\n---\n# {id}\n"
    )
}

fn settle(p: &TestPolis, id: &str, tag: &str, owner: &str, quality: u8, rec: Option<&str>) {
    p.save(
        &format!("contracts/settled/{id}.md"),
        &settled_text(id, tag, owner, quality, rec),
    );
}

fn reflect_json(p: &TestPolis, extra: &[&str]) -> Vec<Json> {
    let mut args = vec!["reflect", "--json"];
    args.extend(extra);
    let out = p.polisd(&args);
    assert!(
        out.status.success(),
        "reflect failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Json = serde_json::from_slice(&out.stdout).unwrap();
    v["proposals"].as_array().unwrap().clone()
}

fn kinds(proposals: &[Json]) -> BTreeSet<String> {
    proposals
        .iter()
        .map(|p| p["kind"].as_str().unwrap().to_string())
        .collect()
}

fn proposed_with_slug(p: &TestPolis, slug: &str) -> Vec<String> {
    let mut out = Vec::new();
    for folder in ["amendments/proposed", "amendments/ratified"] {
        let Ok(entries) = std::fs::read_dir(p.path(folder)) else {
            continue;
        };
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') || !name.ends_with(".md") {
                continue; // polisd's temporary files while it writes
            }
            let text = std::fs::read_to_string(e.path()).unwrap_or_default();
            if text.contains(&format!("reflect_slug: {slug}\n")) {
                out.push(format!("{folder}/{}", e.file_name().to_string_lossy()));
            }
        }
    }
    out
}

#[test]
fn reflect_the_references_detectors_fire_on_their_patterns() {
    let p = polis();
    for i in 0..3 {
        settle(&p, &format!("bad-{i}"), "backend", CLAUDE, 1, Some(CLAUDE));
        settle(&p, &format!("good-{i}"), "backend", CODEX, 5, Some(CLAUDE));
        settle(&p, &format!("lq-{i}"), "frontend", CLAUDE, 2, None);
    }
    let all = reflect_json(&p, &[]);
    assert_eq!(
        kinds(&all),
        BTreeSet::from([
            "chronic-misroute".to_string(),
            "recurring-low-quality".into(),
            "stakes-miscalibration".into()
        ]),
        "{all:#?}"
    );
    let misroute = all
        .iter()
        .find(|p| p["kind"] == "chronic-misroute")
        .unwrap();
    assert_eq!(misroute["slug"], "misroute-backend");
    assert_eq!(misroute["setting"]["key"], "routing.explore_rate");
    assert!(
        all.iter().all(|p| p["written"] == false),
        "a preview writes nothing"
    );
    assert!(!p.exists("amendments/proposed/x"), "sanity");
    assert!(proposed_with_slug(&p, "misroute-backend").is_empty());
}

#[test]
fn reflect_is_silent_on_a_healthy_polis_and_below_the_minimum_evidence() {
    let p = polis();
    for i in 0..4 {
        settle(&p, &format!("ok-{i}"), "backend", CODEX, 5, Some(CODEX));
    }
    for i in 0..2 {
        settle(&p, &format!("few-{i}"), "frontend", CLAUDE, 1, None);
    }
    assert_eq!(reflect_json(&p, &[]), Vec::<Json>::new());
    // The same two contracts are a pattern when one asks for less evidence.
    assert!(kinds(&reflect_json(&p, &["--min-evidence", "2"])).contains("recurring-low-quality"));
}

#[test]
fn reflect_friction_detectors_fire_on_their_patterns() {
    let p = polis();
    let bravo = "bravo-agent1";
    p.citizen(bravo, "google", &[("docs", 4)], "low");
    // The same rule (C008, a verb not in the past tense's lower case) broken by three citizens.
    for who in [CLAUDE, CODEX, bravo] {
        p.append(
            "chronicle.md",
            &chronicle_line(who, "Finished The Tests", "-", "x"),
        );
    }
    // Three amendments that expired recently.
    let recent = (chrono::Utc::now() - chrono::Duration::days(3)).format("%Y-%m-%d");
    for i in 0..3 {
        p.save(
            &format!("amendments/proposed/2026-01-0{i}-rule-{i}.md"),
            &format!(
                "---\namendment_id: 2026-01-0{i}-rule-{i}\ntitle: Rule {i}\nproposed_by: {CLAUDE}\n\
                 proposed_at: '2026-01-01 00:00:00'\nstatus: expired\nquorum_required: 2\n\
                 votes: {{agree: [], disagree: [], abstain: [], request_changes: []}}\n\
                 ratified_at: null\nexpires_at: '{recent}'\n---\n\n## Proposal\n\nA rule.\n"
            ),
        );
    }
    // Three claimed `infra` contracts, quiet for a month.
    for i in 0..3 {
        p.save(
            &format!("contracts/open/infra-{i}.md"),
            &format!(
                "---\ncontract_id: infra-{i}\ntitle: Infra {i}\nopened_by: {FOUNDER}\n\
                 opened_at: '2026-01-01 00:00:00'\nowner: {CODEX}\nstatus: claimed\nstakes: low\n\
                 required_tags: [infra]\n---\n\n## Intent\n\nWork.\n"
            ),
        );
    }
    // Three `docs` contracts settled by someone other than the router's pick.
    for i in 0..3 {
        settle(&p, &format!("docs-{i}"), "docs", bravo, 4, Some(CLAUDE));
    }
    // Lessons below the impact floor on a tag that keeps settling badly (reviewed, so the
    // stakes detector stays quiet).
    for i in 0..3 {
        p.save(
            &format!("contracts/settled/ml-{i}.md"),
            &settled_text(&format!("ml-{i}"), "ml", CLAUDE, 1, None)
                .replace("review: {required: false}", "review: {required: true}"),
        );
        p.save(
            &format!("lessons/ml-{i}.md"),
            &format!(
                "---\nlesson_id: ml-{i}\nfiled_by: {CLAUDE}\nfiled_at: '2026-11-01 00:00:00'\n\
                 capability_tags: [ml]\nquality_impact: 0.02\n---\n\nA small lesson.\n"
            ),
        );
    }
    let found = kinds(&reflect_json(&p, &[]));
    for kind in [
        "repeated-finding",
        "expiring-amendments",
        "stale-tag",
        "routing-overrides",
        "lesson-impact-floor",
        "recurring-low-quality",
    ] {
        assert!(found.contains(kind), "{kind} did not fire: {found:?}");
    }
    assert!(!found.contains("stakes-miscalibration"), "{found:?}");
}

/// A pass after `what`: an invalid chronicle line's notice comes after every pass before it.
fn barrier(p: &TestPolis, n: usize) {
    p.append(
        "chronicle.md",
        &format!(
            "- {} | {CLAUDE} | barrier {n}\n",
            harness::chronicle_stamp()
        ),
    );
    wait_for(p, "the barrier notice", || {
        p.count(CLAUDE, "chronicle-finding") >= n
    });
}

#[test]
fn reflect_daemon_files_once_survives_a_restart_and_stops_once_ratified() {
    let p = polis();
    for i in 0..3 {
        settle(&p, &format!("bad-{i}"), "backend", CLAUDE, 1, Some(CLAUDE));
    }
    for i in 0..2 {
        settle(&p, &format!("good-{i}"), "backend", CODEX, 5, Some(CLAUDE));
    }
    let d = p.start_daemon();
    // The third good contract makes the misroute; the settlement triggers reflection.
    settle(&p, "good-2", "backend", CODEX, 5, Some(CLAUDE));
    wait_for(&p, "the misroute proposal", || {
        proposed_with_slug(&p, "misroute-backend").len() == 1
    });
    let file = proposed_with_slug(&p, "misroute-backend").remove(0);
    let id = file
        .trim_start_matches("amendments/proposed/")
        .trim_end_matches(".md")
        .to_string();
    let text = p.read(&file);
    assert!(text.contains("proposed_by: polis-reflector\n"), "{text}");
    assert!(text.contains("quorum_required: 2\n"), "{text}");
    assert!(text.contains("```diff\n"), "{text}");
    // Two proposals: the misroute, and the three unreviewed low-quality `bad-*` contracts.
    wait_for(&p, "the amendment-proposed notices", || {
        p.count(CLAUDE, "amendment-proposed") == 2 && p.count(CODEX, "amendment-proposed") == 2
    });
    assert_eq!(proposed_with_slug(&p, "stakes-backend").len(), 1);
    let line = format!("| polis-reflector | proposed amendment | [[amendments/proposed/{id}]]");
    let chronicle = p.read("chronicle.md");
    assert_eq!(chronicle.matches(&line).count(), 1, "{line}\n{chronicle}");

    d.kill9();
    let d = p.start_daemon();
    settle(&p, "good-3", "backend", CODEX, 5, Some(CLAUDE));
    barrier(&p, 1);
    assert_eq!(
        proposed_with_slug(&p, "misroute-backend").len(),
        1,
        "filed again after a restart"
    );
    assert_eq!(p.read("chronicle.md").matches(&line).count(), 1);

    // The citizens vote; the daemon's tally ratifies and the index keeper is told the exact
    // polis.yml change.
    for who in [CLAUDE, CODEX, FOUNDER] {
        p.append(
            &file,
            &format!("\n## Response from {who} (agree)\n\nYes.\n"),
        );
        p.append(
            "chronicle.md",
            &chronicle_line(
                who,
                "voted on amendment",
                &format!("[[amendments/proposed/{id}]]"),
                "agree",
            ),
        );
    }
    wait_for(&p, "the ratification", || {
        p.exists(&format!("amendments/ratified/{id}.md"))
    });
    wait_for(&p, "the setting-change notice", || {
        p.count(FOUNDER, "setting-change") == 1
    });
    let inbox = p.read(&format!("citizens/{FOUNDER}/inbox.md"));
    assert!(inbox.contains("`routing.explore_rate`"), "{inbox}");

    // More evidence: nothing is proposed again once ratified.
    settle(&p, "bad-3", "backend", CLAUDE, 1, Some(CLAUDE));
    barrier(&p, 2);
    assert_eq!(proposed_with_slug(&p, "misroute-backend").len(), 1);
    drop(d);
}

#[test]
fn reflect_declined_slug_returns_only_with_doubled_evidence() {
    let p = polis();
    let proposed_at = (chrono::Utc::now() - chrono::Duration::days(10)).format("%Y-%m-%d %H:%M:%S");
    p.save(
        "amendments/proposed/2026-11-01-low-quality-frontend.md",
        &format!(
            "---\namendment_id: 2026-11-01-low-quality-frontend\ntitle: Old\nproposed_by: polis-reflector\n\
             proposed_at: '{proposed_at}'\nstatus: rejected\nkind: recurring-low-quality\n\
             reflect_slug: low-quality-frontend\nevidence_contracts: [a, b, c]\nevidence_count: 3\n\
             quorum_required: 2\nvotes: {{agree: [], disagree: [], abstain: [], request_changes: []}}\n\
             ratified_at: null\nexpires_at: '2026-12-31'\n---\n\nOld.\n"
        ),
    );
    for i in 0..3 {
        settle(&p, &format!("lq-{i}"), "frontend", CLAUDE, 2, None);
    }
    let d = p.start_daemon();
    settle(&p, "lq-3", "frontend", CLAUDE, 2, None);
    barrier(&p, 1);
    assert_eq!(
        proposed_with_slug(&p, "low-quality-frontend").len(),
        1,
        "4 contracts do not double the 3 it was declined with"
    );
    settle(&p, "lq-4", "frontend", CLAUDE, 2, None);
    settle(&p, "lq-5", "frontend", CLAUDE, 2, None);
    wait_for(&p, "the proposal with doubled evidence", || {
        proposed_with_slug(&p, "low-quality-frontend").len() == 2
    });
    drop(d);
}

/// The reference's own test fixtures (its `scripts/test_reflect.py`), decided by both.
#[test]
fn reflect_matches_the_references_detectors_on_its_fixtures() {
    let script = r##"
import json, sys, tempfile
from pathlib import Path
from polis import reflect

def make(root):
    root.mkdir(parents=True)
    (root / "CONSTITUTION.md").write_text("# c\n", encoding="utf-8")
    (root / "chronicle.md").write_text(
        "---\nfile_type: chronicle\n---\n\n- 2026-01-01 00:00 | founder | founded polis | - | -\n",
        encoding="utf-8")
    for cid in ("claude-dev", "codex-dev"):
        d = root / "citizens" / cid
        d.mkdir(parents=True)
        (d / "capability_card.yml").write_text(
            f"agent_id: {cid}\nvendor: x\ncapability_tags:\n  backend: {{self_rating: 4}}\n",
            encoding="utf-8")

def settled(root, cid, tag, owner, quality, recommended=None, stakes="medium"):
    d = root / "contracts" / "settled"
    d.mkdir(parents=True, exist_ok=True)
    routing = f"\n  recommended_by_router: {recommended}" if recommended else ""
    (d / f"{cid}.md").write_text(
        f"---\ncontract_id: {cid}\nstatus: settled\nowner: {owner}\n"
        f"required_tags: [{tag}]\nquality_score: {quality}\nstakes: {stakes}\n"
        f"review: {{required: false}}\nrouting:{routing or ' {}'}\n---\n# {cid}\n",
        encoding="utf-8")

cases = {
  "misroute": [("bad-%d" % i, "backend", "claude-dev", 1, "claude-dev") for i in range(3)]
            + [("good-%d" % i, "backend", "codex-dev", 5, "claude-dev") for i in range(3)],
  "low-quality": [("lq-%d" % i, "frontend", "claude-dev", 2, None) for i in range(3)],
  "stakes": [("sk-%d" % i, "infra", "claude-dev", 1, None) for i in range(3)],
  "healthy": [("ok-%d" % i, "backend", "codex-dev", 5, "codex-dev") for i in range(4)],
  "few": [("few-%d" % i, "backend", "claude-dev", 1, None) for i in range(2)],
}
base = Path(sys.stdin.read().strip())
out = {}
for name, rows in cases.items():
    root = base / name / "_polis"
    make(root)
    for cid, tag, owner, q, rec in rows:
        settled(root, cid, tag, owner, q, recommended=rec)
    out[name] = {"root": str(root), "proposals": [
        {"kind": r["kind"], "slug": r["slug"], "evidence": sorted(r["evidence_contracts"])}
        for r in reflect.reflect(root)]}
print(json.dumps(out))
"##;
    let base = tempfile::tempdir().unwrap();
    let stdout = reference::run_python(script, &base.path().display().to_string());
    let cases: serde_json::Map<String, Json> = serde_json::from_str(&stdout).unwrap();
    assert_eq!(cases.len(), 5);
    let state = base.path().join("state");
    for (name, case) in &cases {
        let root = case["root"].as_str().unwrap();
        let out = std::process::Command::new(harness::BIN)
            .args(["reflect", root, "--json"])
            .env("POLISD_STATE_DIR", &state)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let ours: Json = serde_json::from_slice(&out.stdout).unwrap();
        let reference_kinds = [
            "chronic-misroute",
            "recurring-low-quality",
            "stakes-miscalibration",
        ];
        let decided =
            |proposals: &[Json], evidence_key: &str| -> BTreeSet<(String, String, Vec<String>)> {
                proposals
                    .iter()
                    .filter(|p| reference_kinds.contains(&p["kind"].as_str().unwrap()))
                    .map(|p| {
                        let mut ev: Vec<String> = p[evidence_key]
                            .as_array()
                            .unwrap()
                            .iter()
                            .map(|e| e.as_str().unwrap().to_string())
                            .collect();
                        ev.sort();
                        (
                            p["kind"].as_str().unwrap().into(),
                            p["slug"].as_str().unwrap().into(),
                            ev,
                        )
                    })
                    .collect()
            };
        let theirs = decided(case["proposals"].as_array().unwrap(), "evidence");
        let mine = decided(ours["proposals"].as_array().unwrap(), "evidence_contracts");
        assert_eq!(mine, theirs, "case {name}");
    }
    assert!(
        !cases["misroute"]["proposals"]
            .as_array()
            .unwrap()
            .is_empty(),
        "the fixtures must make the reference propose something"
    );
}

#[test]
fn reflect_off_in_the_config_files_nothing() {
    let p = polis();
    std::fs::write(
        p.dir.path().join("polisd.toml"),
        "[watch]\ndebounce = \"50ms\"\n\n[behaviour]\nreflect = false\n\n[log]\nlevel = \"debug\"\n",
    )
    .unwrap();
    for i in 0..2 {
        settle(&p, &format!("lq-{i}"), "frontend", CLAUDE, 1, None);
    }
    let d = p.start_daemon();
    settle(&p, "lq-2", "frontend", CLAUDE, 1, None);
    barrier(&p, 1);
    assert!(proposed_with_slug(&p, "low-quality-frontend").is_empty());
    assert!(
        kinds(&reflect_json(&p, &[])).contains("recurring-low-quality"),
        "the pattern is there; only the daemon's reflection is off"
    );
    drop(d);
}

/// Two machines with one synced polis both run reflection on it, seconds apart: the proposal
/// is the same file, byte for byte (a wall-clock `proposed_at` would make git stop on an
/// add/add conflict), and both `proposed amendment` lines carry the id of one cause, so a
/// merge keeps one (docs/sync.md).
#[test]
fn reflect_on_two_synced_machines_files_the_same_bytes_and_one_line_id() {
    let a = polis();
    for i in 0..3 {
        settle(&a, &format!("bad-{i}"), "backend", CLAUDE, 1, Some(CLAUDE));
        settle(&a, &format!("good-{i}"), "backend", CODEX, 5, Some(CLAUDE));
    }
    let b_dir = tempfile::tempdir().unwrap();
    let b = TestPolis {
        root: b_dir.path().join("project/_polis"),
        state_dir: b_dir.path().join("state"),
        dir: b_dir,
    };
    harness::copy_tree(&a.root, &b.root);
    let started = std::time::Instant::now();
    reflect_json(&a, &["--apply"]);
    // B runs in a later second than A.
    while started.elapsed() < std::time::Duration::from_millis(1100) {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    reflect_json(&b, &["--apply"]);
    let files = proposed_with_slug(&a, "misroute-backend");
    assert_eq!(files.len(), 1, "{files:?}");
    assert_eq!(proposed_with_slug(&b, "misroute-backend"), files);
    assert_eq!(a.read(&files[0]), b.read(&files[0]));
    let id_of = |p: &TestPolis| -> Vec<String> {
        p.read("chronicle.md")
            .lines()
            .filter(|l| l.contains("| polis-reflector | proposed amendment |"))
            .map(|l| {
                let at = l
                    .find("<!-- polisd:chronicle:")
                    .unwrap_or_else(|| panic!("no id: {l}"));
                l[at..].to_string()
            })
            .collect()
    };
    let ids = id_of(&a);
    assert!(!ids.is_empty());
    assert_eq!(id_of(&b), ids);
}
