//! Routing scores (SPEC §7) against the Python reference's `score_citizen`: on generated
//! polises (cards, statuses, stats, lessons, polis.yml, open contracts) every part of every
//! score must agree within 1e-9, `applied_lessons` exactly, and the explore rates too.

#[path = "common/generate.rs"]
mod generate;
#[path = "common/reference.rs"]
mod reference;

use polisd::protocol::contracts::contract::Contract;
use polisd::protocol::contracts::lesson::{self, Lesson};
use polisd::protocol::frontmatter;
use polisd::protocol::routing::score::{self, Candidate, Context, Score};
use polisd::protocol::routing::stats::{self, RoutingStats};
use polisd::protocol::settings;
use polisd::yaml::{self, Value};
use rand::rngs::StdRng;
use rand::SeedableRng;
use std::path::{Path, PathBuf};

const PY_ROUTE: &str = r#"
import contextlib, io, json, sys
from pathlib import Path
from polis import routing as R
from polis import config as C
out = []
for d in json.load(sys.stdin):
    root = Path(d)
    with contextlib.redirect_stdout(io.StringIO()):
        citizens = R.load_citizens(root)
        stats = R.load_routing_stats(root)
        lessons = R.load_lessons(root)
        explore_rate = stats.get("explore_rate", 0.15)
        weights = R.WEIGHTS_DEFAULT
        if C.has_config(root):
            rc = C.load_config(root).get("routing", {}) or {}
            weights = rc.get("weights", R.WEIGHTS_DEFAULT)
            explore_rate = rc.get("explore_rate", explore_rate)
        contracts = {}
        for p in sorted((root / "contracts" / "open").glob("*.md")):
            fm, _ = R.parse_frontmatter(p.read_text(encoding="utf-8"))
            req = fm.get("required_tags") or []
            conf = [stats.get("tags", {}).get(t, {}).get("leader_confidence", 0.0) for t in req]
            adaptive = R.adaptive_explore_rate(explore_rate, min(conf) if conf else 0.0)
            scores = [R.score_citizen(cid, card, R.load_citizen_status(root, cid), fm, stats,
                                      weights, lessons)
                      for cid, card in citizens.items()]
            contracts[p.name] = {"scores": scores, "adaptive": adaptive}
    out.append({"explore_rate": explore_rate, "contracts": contracts})
print(json.dumps(out))
"#;

/// What polisd computes for one polis: explore rate, and per open contract the adaptive rate
/// and the scores.
struct Ours {
    explore_rate: f64,
    contracts: Vec<(String, f64, Vec<Score>)>,
}

fn read(p: &Path) -> Option<String> {
    std::fs::read_to_string(p).ok()
}

fn md_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries {
        let p = e.unwrap().path();
        if p.is_dir() {
            md_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "md") {
            out.push(p);
        }
    }
}

fn ours(root: &Path) -> Ours {
    let (settings, _) = settings::parse(read(&root.join("polis.yml")).as_deref());
    let stats: RoutingStats = read(&root.join("contracts/routing_stats.yml"))
        .map(|t| stats::parse(&t).expect("generated stats parse"))
        .unwrap_or_default();
    let mut candidates = Vec::new();
    for e in std::fs::read_dir(root.join("citizens")).unwrap() {
        let dir = e.unwrap().path();
        let Some(card) = read(&dir.join("capability_card.yml")) else {
            continue;
        };
        let card = yaml::load(&card).unwrap();
        let Some(id) = card.get("agent_id").as_str() else {
            continue;
        };
        let status = read(&root.join("citizens").join(id).join("status.md"))
            .map(|t| frontmatter::parse(&t).unwrap().fields)
            .unwrap_or(Value::Null);
        candidates.push(Candidate::from_card(id, &card, &status));
    }
    let mut lesson_paths = Vec::new();
    md_files(&root.join("lessons"), &mut lesson_paths);
    let rel = |p: &PathBuf| p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
    lesson_paths.sort_by(|a, b| {
        let (a, b) = (rel(a), rel(b));
        lesson::path_order(&a).cmp(&lesson::path_order(&b))
    });
    let lessons: Vec<Lesson> = lesson_paths
        .iter()
        .map(|p| {
            let stem = p.file_stem().unwrap().to_string_lossy();
            Lesson::from_record(&stem, &frontmatter::parse(&read(p).unwrap()).unwrap())
        })
        .collect();
    let routing_lessons = lesson::routing_lessons(&lessons, settings.lesson_impact_floor);
    let ctx = Context {
        stats: &stats,
        lessons: &routing_lessons,
        weights: settings.weights,
        lesson_cap: settings.lesson_cap,
    };
    let explore_rate = score::explore_rate(&settings, &stats);
    let mut open: Vec<PathBuf> = std::fs::read_dir(root.join("contracts/open"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    open.sort();
    let contracts = open
        .iter()
        .map(|p| {
            let c = Contract::parse(&read(p).unwrap()).unwrap();
            let adaptive = score::adaptive_explore_rate(explore_rate, &c.required_tags, &stats);
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name, adaptive, score::score_all(&candidates, &c, &ctx))
        })
        .collect();
    Ours {
        explore_rate,
        contracts,
    }
}

fn close(a: f64, b: &serde_json::Value) -> bool {
    b.as_f64().is_some_and(|b| (a - b).abs() <= 1e-9)
}

#[test]
fn route_scores_match_reference_score_citizen() {
    let tmp = tempfile::tempdir().unwrap();
    let mut rng = StdRng::seed_from_u64(0x47e5);
    let roots: Vec<PathBuf> = (0..250)
        .map(|i| {
            let root = tmp.path().join(format!("p{i:03}")).join("_polis");
            std::fs::create_dir_all(root.join("citizens")).unwrap();
            generate::write_tree(&root, &generate::routing_polis(&mut rng));
            root
        })
        .collect();
    let stdout = reference::run_python(PY_ROUTE, &serde_json::to_string(&roots).unwrap());
    let want: Vec<serde_json::Value> = serde_json::from_str(&stdout).unwrap();
    let mut failures = Vec::new();
    let mut compared = 0;
    let mut with_lessons = 0;
    for (root, want) in roots.iter().zip(&want) {
        let got = ours(root);
        if !close(got.explore_rate, &want["explore_rate"]) {
            failures.push(format!(
                "{root:?}: explore_rate {} vs {}",
                got.explore_rate, want["explore_rate"]
            ));
        }
        let wc = want["contracts"].as_object().unwrap();
        assert_eq!(wc.len(), got.contracts.len(), "{root:?}");
        for (name, adaptive, scores) in &got.contracts {
            let w = &wc[name];
            if !close(*adaptive, &w["adaptive"]) {
                failures.push(format!(
                    "{root:?}/{name}: adaptive {adaptive} vs {}",
                    w["adaptive"]
                ));
            }
            let ws = w["scores"].as_array().unwrap();
            assert_eq!(ws.len(), scores.len(), "{root:?}/{name}");
            for s in scores {
                compared += 1;
                with_lessons += usize::from(!s.applied_lessons.is_empty());
                let r = ws
                    .iter()
                    .find(|r| r["citizen"] == s.citizen.as_str())
                    .unwrap_or_else(|| panic!("{} missing from the reference", s.citizen));
                let parts = [
                    ("historical", s.historical),
                    ("self_rating", s.self_rating),
                    ("cost_fit", s.cost_fit),
                    ("availability", s.availability),
                    ("lessons", s.lessons),
                    ("total", s.total),
                ];
                for (k, v) in parts {
                    if !close(v, &r[k]) {
                        failures.push(format!(
                            "{root:?}/{name} {}: {k} {v} vs {}",
                            s.citizen, r[k]
                        ));
                    }
                }
                let applied: Vec<&str> = r["applied_lessons"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|x| x.as_str().unwrap_or("<null>"))
                    .collect();
                if applied != s.applied_lessons {
                    failures.push(format!(
                        "{root:?}/{name} {}: applied {:?} vs {applied:?}",
                        s.citizen, s.applied_lessons
                    ));
                }
            }
        }
    }
    assert!(compared > 500, "only {compared} scores compared");
    assert!(
        with_lessons > 50,
        "only {with_lessons} scores had lessons applied"
    );
    assert!(
        failures.is_empty(),
        "{} differences over {compared} scores; first ones:\n{}",
        failures.len(),
        failures[..failures.len().min(10)].join("\n")
    );
}

/// SPEC §7's routing edit on contracts the reference itself opened: polisd's splice of its own
/// score must give the bytes the reference's `--apply` writes.
#[test]
fn splice_routing_matches_reference_apply() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("_polis");
    let card = "agent_id: alice-agent\ncapability_tags:\n  python: {self_rating: 4}\n  docs: {self_rating: 2}\ncost_envelope: {relative: high}\n";
    generate::write_tree(
        &root,
        &[(
            "citizens/alice-agent/capability_card.yml".into(),
            card.into(),
        )],
    );
    let script = r#"
import contextlib, io, json, sys
from polis import routing as R
from polis.contracts import open_contract
root = json.load(sys.stdin)
out = []
cases = [("Fix the thing: now", ["python", "docs"], "high", "medium"),
         ("Write docs", ["docs"], "low", "low"),
         ("Café naïve ünïcode", [], "medium", "high"),
         ("Tune it", ["python"], "medium", "medium")]
for title, tags, stakes, ceiling in cases:
    made = open_contract(root, title, tags, "bob-builder", stakes=stakes, cost_ceiling=ceiling)
    original = open(made["path"], encoding="utf-8").read()
    sys.argv = ["route", "--polis-root", root, "--contract", made["path"], "--apply", "--seed", "1"]
    with contextlib.redirect_stdout(io.StringIO()):
        R.main()
    out.append({"original": original, "applied": open(made["path"], encoding="utf-8").read()})
print(json.dumps(out))
"#;
    let stdout = reference::run_python(script, &serde_json::to_string(&root).unwrap());
    let cases: Vec<serde_json::Value> = serde_json::from_str(&stdout).unwrap();
    assert_eq!(cases.len(), 4);
    let cand = Candidate::from_card("alice-agent", &yaml::load(card).unwrap(), &Value::Null);
    let st = RoutingStats::default();
    let settings = polisd::protocol::settings::Settings::default();
    for case in &cases {
        let original = case["original"].as_str().unwrap();
        let contract = Contract::parse(original).unwrap();
        assert!(contract.wants_recommendation());
        let inputs = polisd::protocol::routing::Inputs {
            candidates: std::slice::from_ref(&cand),
            contract: &contract,
            stats: &st,
            lessons: &[],
            settings: &settings,
            settlements: &[],
            active: None,
        };
        let rec = polisd::protocol::routing::recommend(
            &inputs,
            polisd::protocol::routing::policy::Policy::EpsilonGreedy,
            false,
            &mut StdRng::seed_from_u64(1),
        )
        .recommendation;
        let spliced = polisd::protocol::contracts::contract::splice_routing(
            original,
            rec.recommendation.as_deref().unwrap(),
            rec.score,
            rec.exploration,
        )
        .expect("the reference's own contract can be spliced");
        assert_eq!(spliced, case["applied"].as_str().unwrap());
    }
}
