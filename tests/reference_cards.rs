//! Capability cards against the reference (SPEC §4): `content_hash`, `verify_card` and
//! `stamp_card_file` of polis-protocol 2.0.1 on generated card files.

#[path = "common/gen.rs"]
mod gen;
#[path = "common/reference.rs"]
mod reference;

use polisd::protocol::citizens::card::{self, StampError, VerifyState};
use polisd::yaml::{dump, DumpOptions, Mapping, Value};
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use serde_json::json;

/// Per card file: the reference's hash and verification of the file as read, and the file it
/// writes when stamping (plus that file's own verification).
const PY_CARDS: &str = r#"
import json, os, sys, tempfile, yaml
from polis import integrity
out = []
with tempfile.TemporaryDirectory() as d:
    for i, text in enumerate(json.load(sys.stdin.buffer)):
        path = os.path.join(d, f"card{i}.yml")
        with open(path, "wb") as f:
            f.write(text.encode("utf-8"))
        row = {}
        try:
            with open(path, encoding="utf-8") as f:
                card = yaml.safe_load(f.read()) or {}
            row["hash"] = integrity.content_hash(card)
            payload = {k: v for k, v in card.items() if k not in ("content_hash", "signature")}
            row["canonical"] = yaml.safe_dump(payload, sort_keys=True, default_flow_style=False, allow_unicode=True)
            v = integrity.verify_card(card)
            row["state"], row["stored"] = v["state"], v["stored"]
            integrity.stamp_card_file(path)
            with open(path, "rb") as f:
                stamped = f.read().decode("utf-8")
            row["stamped"] = stamped
            row["stamped_state"] = integrity.verify_card(yaml.safe_load(stamped) or {})["state"]
        except Exception as e:
            row["error"] = f"{type(e).__name__}: {e}"
        out.append(row)
print(json.dumps(out))
"#;

fn s(x: &str) -> Value {
    Value::Str(x.to_string())
}

/// `key: value` written by our own emitter (PyYAML's style), indented under a parent.
fn field(rng: &mut StdRng, key: &str, value: Value, indent: usize) -> String {
    let mut m = Mapping::new();
    m.insert(s(key), value);
    let opts = DumpOptions {
        sort_keys: false,
        allow_unicode: rng.random_bool(0.7),
    };
    let text = dump(&Value::Map(m), &opts).expect("generated values are representable");
    text.lines()
        .map(|l| format!("{}{l}\n", " ".repeat(indent)))
        .collect()
}

/// A one-line string value in a hand-picked style: plain, single- or double-quoted.
fn inline_string(rng: &mut StdRng, text: &str) -> String {
    match rng.random_range(0..3) {
        0 => serde_json::to_string(text).unwrap(), // JSON strings are YAML double-quoted scalars
        1 if !text.contains('\n') => format!("'{}'", text.replace('\'', "''")),
        _ => serde_json::to_string(text).unwrap(),
    }
}

fn block_scalar(rng: &mut StdRng, key: &str, indent: usize) -> String {
    let pad = " ".repeat(indent + 2);
    let header = ["|", ">", "|-", ">-", "|+"][rng.random_range(0..5)];
    let mut out = format!("{}{key}: {header}\n", " ".repeat(indent));
    for i in 0..rng.random_range(1..6) {
        let line = if i > 0 && rng.random_bool(0.2) {
            String::new()
        } else {
            let n = rng.random_range(5..140);
            let mut l = gen::prose(rng, n);
            if rng.random_bool(0.2) {
                l.push_str(" — überprüfe «Ärger» 😀");
            }
            if rng.random_bool(0.1) {
                l.push_str(": with colon # and hash");
            }
            l
        };
        if line.is_empty() {
            out.push('\n');
        } else {
            out.push_str(&format!("{pad}{line}\n"));
        }
    }
    out
}

fn scalar_text(rng: &mut StdRng) -> String {
    const PLAIN: &[&str] = &[
        "yes",
        "no",
        "on",
        "off",
        "On",
        "OFF",
        "True",
        "~",
        "null",
        "",
        "0x1F",
        "012",
        "0o17",
        "1_000",
        "1:30",
        "1e3",
        "1.5e3",
        "1.0e+3",
        ".inf",
        "-.inf",
        ".nan",
        "3.14",
        "-7",
        "2026-03-02",
        "2026-03-02 10:11:12",
        "2026-03-02T10:11:12Z",
        "2026-03-02 10:11:12.5",
        "2026-03-02 10:11:12 +02:00",
        "2026-03-02 10:11",
        "medium",
        "low",
        "high",
        "plain words here",
        "https://example.org/x?y=1",
        "a-b_c.d",
        "café",
        "日本語",
    ];
    PLAIN[rng.random_range(0..PLAIN.len())].to_string()
}

fn evidence(rng: &mut StdRng, indent: usize) -> String {
    let pad = " ".repeat(indent);
    match rng.random_range(0..6) {
        0 => {
            let t = gen::prose(rng, 180);
            field(rng, "evidence", s(&t), indent)
        }
        1 => {
            let t = gen::tricky_string(rng);
            field(rng, "evidence", s(&t), indent)
        }
        2 => block_scalar(rng, "evidence", indent),
        3 => {
            let t = gen::prose(rng, 100) + " naïve “quotes” \\ and \t tab";
            format!("{pad}evidence: {}\n", inline_string(rng, &t))
        }
        4 => format!("{pad}evidence: {}\n", gen::prose(rng, 120)), // long plain line
        _ => {
            let items: Vec<String> = (0..rng.random_range(0..3))
                .map(|_| gen::prose(rng, 30))
                .collect();
            if items.is_empty() {
                format!("{pad}evidence: []\n")
            } else {
                let mut out = format!("{pad}evidence:\n");
                for it in items {
                    out.push_str(&format!("{pad}- {it}\n"));
                }
                out
            }
        }
    }
}

fn capability_tags(rng: &mut StdRng) -> String {
    let mut out = String::from("capability_tags:\n");
    if rng.random_bool(0.1) {
        let n = rng.random_range(1..6);
        return format!("capability_tags: {{py: {{self_rating: {n}}}, rust: {{self_rating: 4, evidence: \"x, y\"}}}}\n");
    }
    for _ in 0..rng.random_range(0..5) {
        let tag = [
            "python",
            "rust",
            "code-review",
            "docs",
            "sql",
            "ops",
            "ml",
            "ui",
        ][rng.random_range(0..8)];
        if rng.random_bool(0.1) {
            out.push_str(&format!(
                "  {tag}: {{self_rating: {}}}\n",
                rng.random_range(1..6)
            ));
            continue;
        }
        out.push_str(&format!("  {tag}:\n"));
        let rating = match rng.random_range(0..8) {
            0 => "4.5".to_string(),
            1 => "'3'".to_string(),
            _ => rng.random_range(1..6).to_string(),
        };
        out.push_str(&format!("    self_rating: {rating}\n"));
        if rng.random_bool(0.8) {
            out.push_str(&evidence(rng, 4));
        }
        if rng.random_bool(0.2) {
            out.push_str("    # a comment inside the tag\n");
            out.push_str(&format!("    last_used: {}\n", gen::date(rng)));
        }
    }
    if out == "capability_tags:\n" {
        out = "capability_tags: {}\n".to_string();
    }
    out
}

/// One card file's text. `stamp` is the hash to store (or none).
fn card_text(rng: &mut StdRng, n: usize) -> String {
    let id = format!("agent-{n:04}x");
    let mut parts: Vec<String> = vec![
        format!("agent_id: {id}\n"),
        format!(
            "vendor: {}\n",
            ["anthropic", "openai", "'google'", "\"local\"", "Mistral AI"][rng.random_range(0..5)]
        ),
        format!(
            "model: {}\n",
            ["claude-x", "gpt-4.1", "llama 3:70b", "'2026-01-01'", "1.5"][rng.random_range(0..5)]
        ),
        format!("tool: {}\n", scalar_text(rng)),
        format!("registered: {}\n", gen::date(rng)),
        format!(
            "last_card_update: {}\n",
            if rng.random() {
                gen::datetime(rng).python_str(' ')
            } else {
                format!("'{}'", gen::date(rng))
            }
        ),
        capability_tags(rng),
    ];
    parts.push(match rng.random_range(0..4) {
        0 => "languages: []\n".to_string(),
        1 => "languages: [en, de, 日本語]\n".to_string(),
        2 => "languages:\n- en\n- fr\n".to_string(),
        _ => "languages:\n  - en\n  - 'no'\n  - no\n".to_string(),
    });
    if rng.random_bool(0.8) {
        parts.push(match rng.random_range(0..4) {
            0 => "cost_envelope:\n  relative: low\n".to_string(),
            1 => "cost_envelope: {relative: high, usd_per_hour: 1.5}\n".to_string(),
            2 => "cost_envelope: {}\n".to_string(),
            _ => format!(
                "cost_envelope:\n  relative: {}\n  cap: {}\n",
                scalar_text(rng),
                scalar_text(rng)
            ),
        });
    }
    if rng.random_bool(0.7) {
        parts.push(format!(
            "latency_envelope:\n  p50_seconds: {}\n  interactive: {}\n  window: {}\n",
            rng.random_range(1..600),
            scalar_text(rng),
            scalar_text(rng)
        ));
    }
    parts.push(match rng.random_range(0..3) {
        0 => "tools_available: []\n".to_string(),
        1 => "tools_available: [bash, git, 'python3']\n".to_string(),
        _ => "tools_available:\n- bash\n- {name: web, enabled: on}\n- []\n".to_string(),
    });
    if rng.random_bool(0.8) {
        parts.push(if rng.random() {
            block_scalar(rng, "standing_instructions", 0)
        } else {
            let lines: Vec<String> = (0..rng.random_range(2..5))
                .map(|_| gen::prose(rng, 90))
                .collect();
            field(
                rng,
                "standing_instructions",
                s(&(lines.join("\n") + "\n")),
                0,
            )
        });
    }
    for i in 0..rng.random_range(0..4) {
        let key = format!("extra_{i}");
        parts.push(match rng.random_range(0..6) {
            0 => format!("{key}: {}\n", scalar_text(rng)),
            1 => format!(
                "{key}:\n  nested:\n    deeper: {}\n    list: [1, 2.5, {}]\n",
                scalar_text(rng),
                rng.random_range(0..9)
            ),
            2 => format!("{key}: &anchor{i} shared text\n{key}_again: *anchor{i}\n"),
            3 => {
                let v = gen::value(rng, 2);
                field(rng, &key, v, 0)
            }
            4 => format!(
                "# comment {}\n{key}: {} # trailing\n",
                gen::prose(rng, 20),
                rng.random_range(-5..5)
            ),
            _ => {
                let t = gen::tricky_string(rng);
                format!("{key}: {}\n", inline_string(rng, &t))
            }
        });
    }
    // Writers do not keep keys in any order.
    if rng.random_bool(0.5) {
        parts.shuffle(rng);
    }
    let mut text: String = parts.concat();
    if rng.random_bool(0.04) {
        // The reference's stamping drops indented integrity lines too (polisd refuses).
        text.push_str("notes:\n  content_hash: mine\n  signature: theirs\n");
    }
    match rng.random_range(0..8) {
        0 => text.push_str("signature: abc123\n"),
        1 => text.push_str("content_hash: \"sha256:0000000000000000000000000000000000000000000000000000000000000000\"\n"),
        2 => text = format!("content_hash: stale\nsignature: old\n{text}"),
        3 => {
            // Stamped by polisd: the reference must agree it is ok.
            if let Ok(stamped) = card::stamp(&text) {
                text = stamped;
            }
        }
        _ => {}
    }
    match rng.random_range(0..12) {
        0 => text = text.replace('\n', "\r\n"),
        1 => text = format!("\u{feff}{text}"),
        2 => text.push_str("\n\n  \n"),
        3 => text = text.trim_end().to_string(),
        4 => text = format!("---\n{text}"),
        _ => {}
    }
    text
}

#[test]
fn reference_content_hash_200_generated_cards() {
    let mut rng = StdRng::seed_from_u64(0xca4d_5eed);
    let cards: Vec<String> = (0..240).map(|n| card_text(&mut rng, n)).collect();
    let stdout = reference::run_python(PY_CARDS, &serde_json::to_string(&cards).unwrap());
    let rows: Vec<serde_json::Value> = serde_json::from_str(&stdout).unwrap();
    let mut failures = Vec::new();
    let mut compared = 0;
    let mut stamp_refused = 0;
    let (mut refused, mut unverifiable) = (0, 0);
    for (text, row) in cards.iter().zip(&rows) {
        let parsed = card::parse(text);
        if let Some(err) = row.get("error") {
            // The reference cannot read it: polisd must refuse too, not hash it.
            match (parsed, card::stamp(text)) {
                (Err(_), Err(StampError::Card(_))) => refused += 1,
                (p, st) => failures.push(format!(
                    "the reference failed ({err}) but polisd read it ({p:?}, {st:?}):\n{text}"
                )),
            }
            continue;
        }
        let parsed = match parsed {
            Ok(c) => c,
            Err(e) => {
                failures.push(format!("polisd could not parse ({e}):\n{text}"));
                continue;
            }
        };
        if let Some(reason) = parsed.unverifiable {
            // Allowed only for the constructs polisd declares unverifiable.
            let v = parsed.verify();
            let stored = row["stored"].is_string();
            let state_ok = if stored {
                v.state == VerifyState::Unverifiable
            } else {
                json!(v.state.as_str()) == row["state"]
            };
            if !state_ok || !matches!(card::stamp(text), Err(StampError::Unverifiable(_))) {
                failures.push(format!(
                    "unverifiable ({reason}) handled wrongly: {v:?}\n{text}"
                ));
            }
            unverifiable += 1;
            continue;
        }
        let ours = card::content_hash(&parsed.raw);
        if ours.as_ref().ok().map(String::as_str) != row["hash"].as_str() {
            let mut payload = parsed.raw.as_map().cloned().unwrap_or_default();
            payload.remove("content_hash");
            payload.remove("signature");
            let canonical = dump(&Value::Map(payload), &DumpOptions::CARD);
            let want = row["canonical"].as_str().unwrap_or_default();
            let first_diff = canonical.as_deref().map(|c| {
                c.lines()
                    .zip(want.lines())
                    .find(|(a, b)| a != b)
                    .map(|(a, b)| format!("polisd:    {a:?}\nreference: {b:?}"))
            });
            failures.push(format!(
                "content_hash: reference {} polisd {ours:?}\n{first_diff:?}\n{text}",
                row["hash"]
            ));
            continue;
        }
        let v = parsed.verify();
        if json!(v.state.as_str()) != row["state"] || json!(v.stored) != row["stored"] {
            failures.push(format!("verify: reference {row} polisd {v:?}\n{text}"));
        }
        match (card::stamp(text), row["stamped_state"].as_str()) {
            (Ok(ours), Some("ok")) if json!(ours) == row["stamped"] => {}
            (Err(StampError::WouldChangeContent), Some(state)) if state != "ok" => {
                stamp_refused += 1
            }
            (got, _) => failures.push(format!(
                "stamp: reference {} polisd {got:?}\n{text}",
                row["stamped"]
            )),
        }
        compared += 1;
    }
    assert!(
        failures.is_empty(),
        "{} of {} cards differ from the reference; first ones:\n\n{}",
        failures.len(),
        cards.len(),
        failures
            .iter()
            .take(4)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n\n")
    );
    assert!(
        compared >= 200,
        "only {compared} cards compared ({refused} unreadable, {unverifiable} unverifiable)"
    );
    eprintln!(
        "{compared} cards equal ({stamp_refused} of them not stampable), {refused} unreadable by \
         both, {unverifiable} unverifiable"
    );
}

#[test]
fn reference_spec4_test_vector() {
    let text = "agent_id: a\ncapability_tags: {py: {self_rating: 4}}\n";
    let row: serde_json::Value = serde_json::from_str(&reference::run_python(
        PY_CARDS,
        &serde_json::to_string(&[text]).unwrap(),
    ))
    .unwrap();
    let want = "6d7123d79f8a5d066dcfa51be52aad587f88488a3c605881f7fc2e63d6fdcf30";
    assert_eq!(row[0]["hash"], want);
    let parsed = card::parse(text).unwrap();
    assert_eq!(card::content_hash(&parsed.raw).unwrap(), want);
    assert_eq!(parsed.verify().state, VerifyState::Unstamped);
    assert_eq!(json!(card::stamp(text).unwrap()), row[0]["stamped"]);
}
