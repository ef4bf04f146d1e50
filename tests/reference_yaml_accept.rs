//! YAML that PyYAML's safe loader rejects is a finding in polisd too (SPEC §2): generated
//! near-YAML frontmatter (the constructs agents get wrong: stray colons, unclosed quotes and
//! brackets, bad indentation, tabs, misplaced `-` and `?`, anchors and tags) is loaded by both,
//! and every text PyYAML refuses must be refused by polisd.

#[path = "common/reference.rs"]
mod reference;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const PIECES: [&str; 44] = [
    "key: value",
    ": : bad yaml",
    ": value",
    "key:",
    "- item",
    "  - item",
    "key: [a, b",
    "key: {a: 1",
    "key: 'open",
    "key: \"open",
    "key: a: b",
    "? complex",
    "\tkey: tab",
    "key:\tvalue",
    "  nested: 1",
    "    deeper: 2",
    "key: &anchor 1",
    "other: *anchor",
    "other: *missing",
    "key: !!int abc",
    "key: !custom x",
    "key: |",
    "  literal",
    "key: >",
    "- - x",
    "key: - x",
    "[a, b]",
    "{a: 1}",
    "key: @at",
    "key: `tick",
    "%YAML 1.1",
    "---",
    "...",
    "key: value # comment",
    "#comment",
    "'quoted': 1",
    "key: ]",
    "key: }",
    "key: ,",
    "a: b: c",
    "key: <<",
    "- <<",
    "<<: *anchor",
    "key: [<<]",
];

fn snippet(rng: &mut StdRng) -> String {
    let n = rng.random_range(1..5);
    let mut lines = Vec::new();
    for _ in 0..n {
        lines.push(PIECES[rng.random_range(0..PIECES.len())]);
    }
    lines.join("\n") + "\n"
}

#[test]
fn yaml_pyyaml_rejects_polisd_rejects_too() {
    let mut rng = StdRng::seed_from_u64(0x5eed_ba11);
    let mut texts: Vec<String> = (0..3000).map(|_| snippet(&mut rng)).collect();
    texts.push(": : bad yaml\n".into());
    texts.sort();
    texts.dedup();
    let script = r#"
import json, sys, yaml
out = []
for t in json.load(sys.stdin):
    try:
        yaml.safe_load(t)
        out.append(None)
    except Exception as e:
        out.append(type(e).__name__)
print(json.dumps(out))
"#;
    let verdicts: Vec<Option<String>> = serde_json::from_str(&reference::run_python(
        script,
        &serde_json::to_string(&texts).unwrap(),
    ))
    .unwrap();
    let mut accepted_wrongly = Vec::new();
    let mut rejected_wrongly = Vec::new();
    for (text, verdict) in texts.iter().zip(&verdicts) {
        let ours = polisd::yaml::load(text);
        match (verdict, &ours) {
            (Some(err), Ok(v)) => accepted_wrongly.push(format!("{text:?} ({err}) -> {v:?}")),
            (None, Err(e)) => rejected_wrongly.push(format!("{text:?}: {e}")),
            _ => {}
        }
    }
    assert!(
        accepted_wrongly.is_empty(),
        "{} of {} texts PyYAML rejects are accepted by polisd, e.g.:\n{}",
        accepted_wrongly.len(),
        texts.len(),
        accepted_wrongly
            .iter()
            .take(60)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
    eprintln!(
        "{} texts PyYAML accepts that polisd refuses",
        rejected_wrongly.len()
    );
}
