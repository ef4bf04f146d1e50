//! YAML that PyYAML's safe loader rejects is a finding in polisd too (SPEC §2): generated
//! near-YAML frontmatter (the constructs agents get wrong: stray colons, unclosed quotes and
//! brackets, bad indentation, tabs, misplaced `-` and `?`, anchors and tags, control characters)
//! is loaded by both,
//! and every text PyYAML refuses must be refused by polisd; every text both read must read as
//! the same value.

#[path = "common/gen.rs"]
mod gen;
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
    texts.extend((0..1500).map(|_| frontmatter_like(&mut rng)));
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

/// Python that loads each text with PyYAML's safe loader and hands back the value in the
/// tagged JSON of `gen::tagged` (or `{"err": name}`).
const PY_LOAD_TAGGED: &str = r#"
import datetime, json, sys, yaml
def enc(v):
    if v is None or isinstance(v, (bool, str)): return v
    if isinstance(v, int): return {"i": str(v)}
    if isinstance(v, float): return {"f": repr(v)}
    if isinstance(v, datetime.datetime): return {"dt": v.isoformat('T')}
    if isinstance(v, datetime.date): return {"d": v.isoformat()}
    if isinstance(v, list): return [enc(i) for i in v]
    if isinstance(v, dict): return {"m": [[enc(k), enc(x)] for k, x in v.items()]}
    raise ValueError(type(v))
out = []
for t in json.load(sys.stdin):
    try:
        out.append(enc(yaml.safe_load(t)))
    except Exception as e:
        out.append({"err": type(e).__name__})
print(json.dumps(out))
"#;

/// Scalars as agents write them, with the characters and words YAML types specially.
fn scalar_text(rng: &mut StdRng) -> String {
    const ATOMS: &[&str] = &[
        "word",
        "two words",
        "yes",
        "No",
        "on",
        "OFF",
        "null",
        "~",
        "<<",
        "=",
        "-",
        "--",
        ".inf",
        "-.Inf",
        ".NaN",
        "0x1F",
        "0o17",
        "017",
        "1_000",
        "+12",
        "3.14",
        "1e3",
        "6.0e-2",
        "1:30",
        "190:20:30",
        "2026-12-01",
        "2026-12-01 10:30",
        "2026-12-01T10:30:00Z",
        "2026-12-01 10:30:00.5 +02:00",
        "'single'",
        "\"dou\\tble\"",
        "a #b",
        "x:y",
        "ü✓",
        "0b1010",
        "0b1_0",
        "0x_1F",
        "1__0",
        "-0",
        "+0.5",
        ".5",
        "1.",
        "1.5e+3",
        "1.5E3",
        "+.inf",
        "-1_000.5",
        "1:20:30.5",
        "0.1e10",
        "1e",
        "09",
        "0o8",
        "\"\\x41\\u00e9\\N\\_\\L\\P\"",
        "'it''s'",
        "\"a\\\nb\"",
        "2001-12-14t21:59:43.10-05:00",
        "2001-12-14 21:59:43.10 -5",
        "2026-1-2",
        "2026-01-02T03:04:05",
        "2026-01-02 03:04:05.123456789",
        "Y",
        "n",
        "y",
        "NO",
        "True",
        "TRUE",
        "tRUE",
        "Null",
        "NULL",
        "nULL",
        "!!str 12",
        "!!int '12'",
        "!!float 1",
        "!!bool yes",
        "!!null ''",
        "!!timestamp 2026-01-02",
        "%",
        "@x",
        "a|b",
        "a>b",
        "a, b",
        "[]",
        "{}",
        "\"\"",
        "''",
        "a\\b",
        "\"\\\"\"",
        "12:60",
        "1_2:30",
        "0x",
        "0xG",
        "12e3",
        "12.e3",
        "1.2.3",
        "1,000",
        "$5",
        "é",
        "\"\\u263A\"",
        "\"\\U0001F600\"",
        // Characters YAML's reader refuses anywhere.
        "a\u{1}b",
        "\u{1b}[31m",
        "x\u{7f}",
        "'\u{9f}'",
        "\u{fffe}",
    ];
    let n = rng.random_range(1..3);
    (0..n)
        .map(|_| ATOMS[rng.random_range(0..ATOMS.len())])
        .collect::<Vec<_>>()
        .join(" ")
}

fn frontmatter_like(rng: &mut StdRng) -> String {
    let mut out = String::new();
    let nl = if rng.random_range(0..10) == 0 {
        "\r\n"
    } else {
        "\n"
    };
    for i in 0..rng.random_range(1..6) {
        let key = [
            "title",
            "tags",
            "quality_score",
            "owner",
            "at",
            "<<",
            "yes",
            "a b",
            "'q k'",
            "\"d\"",
        ][rng.random_range(0..10)];
        let s1 = scalar_text(rng);
        let s2 = scalar_text(rng);
        let piece = match rng.random_range(0..16) {
            0 => format!("{key}{i}:\n- {s1}\n- {s2}\n"),
            1 => format!("{key}{i}: [{s1}, {s2}]\n"),
            2 => format!("{key}{i}:\n  sub: {s1}\n"),
            3 => format!("{key}{i}: |\n  {s1}\n"),
            4 => format!("{key}{i}: {s1}\n  {s2}\n"),
            5 => format!("{key}{i}: \"{s1}\n  {s2}\"\n"),
            6 => format!("{key}{i}: '{s1}\n\n  {s2}'\n"),
            7 => format!("{key}{i}: >\n  {s1}\n    {s2}\n\n  {s1}\n"),
            8 => format!("{key}{i}:\n- a: {s1}\n  b: {s2}\n- {s1}\n"),
            9 => format!("{key}{i}: {{a: {s1}, b: [{s2}]}}\n"),
            10 => format!("{key}{i}:   {s1}   # c\n"),
            11 => format!("{key}{i}:\n  # note\n  - {s1}\n\n  - {s2}\n"),
            12 => format!("{key}{i}: |-\n  {s1}\n\n  {s2}\n\n"),
            13 => format!("{key}{i}: >+\n  {s1}\n\n"),
            14 => format!("{key}{i}:\n  - - {s1}\n    - {s2}\n"),
            _ => format!("{key}{i}: {s1}\n"),
        };
        out.push_str(&piece.replace('\n', nl));
    }
    if rng.random_range(0..8) == 0 {
        out = format!("---{nl}{out}");
    }
    if rng.random_range(0..12) == 0 {
        out = format!("\u{feff}{out}");
    }
    out
}

/// What both accept, both read alike: the same types, texts, numbers, dates and key order.
#[test]
fn yaml_values_polisd_reads_are_those_pyyaml_reads() {
    let mut rng = StdRng::seed_from_u64(0x0dd_ba11);
    let mut texts: Vec<String> = (0..4000).map(|_| frontmatter_like(&mut rng)).collect();
    texts.extend((0..1500).map(|_| snippet(&mut rng)));
    texts.sort();
    texts.dedup();
    let theirs: Vec<serde_json::Value> = serde_json::from_str(&reference::run_python(
        PY_LOAD_TAGGED,
        &serde_json::to_string(&texts).unwrap(),
    ))
    .unwrap();
    let mut differ = Vec::new();
    let mut compared = 0;
    for (text, theirs) in texts.iter().zip(&theirs) {
        let Ok(ours) = polisd::yaml::load(text) else {
            continue;
        };
        if theirs.get("err").is_some() {
            continue; // the other test's concern
        }
        compared += 1;
        let ours = gen::tagged(&ours);
        if &ours != theirs {
            differ.push(format!("{text:?}\n  polisd: {ours}\n  PyYAML: {theirs}"));
        }
    }
    assert!(compared > 1000, "only {compared} texts compared");
    assert!(
        differ.is_empty(),
        "{} of {compared} texts read differently, e.g.:\n{}",
        differ.len(),
        differ
            .iter()
            .take(20)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}
