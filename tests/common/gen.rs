//! Random YAML values for comparison tests, and their hand-off to Python as tagged JSON (JSON
//! alone cannot say "date", "big int", "NaN" or "mapping with int keys").
#![allow(dead_code)]

use chrono::{NaiveDate, NaiveDateTime, NaiveTime};
use polisd::yaml::{Mapping, Timestamp, Value};
use rand::rngs::StdRng;
use rand::Rng;
use serde_json::json;

/// Python that turns the tagged JSON back into Python values: `dec(x)`.
pub const PY_DECODE: &str = r#"
import datetime, json, sys
def dec(x):
    if isinstance(x, list):
        return [dec(i) for i in x]
    if isinstance(x, dict):
        (t, v), = x.items()
        if t == 'm': return {dec(k): dec(val) for k, val in v}
        if t == 'i': return int(v)
        if t == 'f': return float(v)
        if t == 'd': return datetime.date.fromisoformat(v)
        if t == 'dt': return datetime.datetime.fromisoformat(v)
        raise ValueError(t)
    return x
"#;

/// The tagged-JSON form `PY_DECODE` reads.
pub fn tagged(v: &Value) -> serde_json::Value {
    match v {
        Value::Null => serde_json::Value::Null,
        Value::Bool(b) => json!(b),
        Value::Int(i) => json!({"i": i.to_string()}),
        Value::BigInt(s) => json!({"i": s}),
        Value::Float(f) => json!({"f": polisd::yaml::python_float_repr(*f)}),
        Value::Str(s) => json!(s),
        Value::Date(d) => json!({"d": d.format("%Y-%m-%d").to_string()}),
        Value::DateTime(ts) => json!({"dt": ts.python_str('T')}),
        Value::Seq(items) => serde_json::Value::Array(items.iter().map(tagged).collect()),
        Value::Map(m) => {
            json!({"m": m.iter().map(|(k, v)| json!([tagged(k), tagged(v)])).collect::<Vec<_>>()})
        }
    }
}

const WORDS: &[&str] = &[
    "alpha",
    "Beta",
    "x",
    "rust",
    "review",
    "ünïcödé",
    "日本語",
    "😀",
    "naïve",
    "Ωmega",
    "tag-1",
    "a_b",
    "x.y",
    "C++",
    "e.g.",
    "http://x.org/a?b=c",
    "50%",
    "don't",
    "“quoted”",
];
const PUNCT: &[&str] = &[
    ":",
    ": ",
    " #",
    "#",
    "'",
    "\"",
    "\\",
    "- ",
    "-",
    "?",
    "? ",
    ",",
    "[",
    "]",
    "{",
    "}",
    "&",
    "*",
    "!",
    "|",
    ">",
    "%",
    "@",
    "`",
    "---",
    "...",
    " ",
    "  ",
    "\n",
    "\n\n",
    " \n",
    "\n ",
    "\t",
    "\r",
    "\r\n",
    "\u{85}",
    "\u{2028}",
    "\u{2029}",
    "\u{a0}",
    "\u{feff}",
    "\u{7}",
    "\u{1b}",
    "\0",
    "\u{e000}",
    "\u{fffd}",
    "\u{fffe}",
    "\u{1F600}",
    "\u{10FFFF}",
    "\u{7f}",
    "\u{9f}",
    "\u{d7ff}",
];
const WHOLE: &[&str] = &[
    "yes",
    "No",
    "ON",
    "off",
    "y",
    "n",
    "true",
    "False",
    "~",
    "null",
    "Null",
    "",
    "1.0",
    "0x1F",
    "0o7",
    "012",
    "08",
    "1_000",
    "1e3",
    "1.0e+3",
    ".5",
    "+1",
    "-1",
    "1:30",
    "1:30.5",
    "2026-03-02",
    "2026-3-2",
    "2026-03-02 10:11:12",
    "2026-03-02T10:11:12Z",
    "2026-02-30",
    "2026-03-02 10:11",
    "<<",
    "=",
    ".inf",
    "-.inf",
    ".NaN",
    "0b101",
    "-",
    "?",
    ":",
    "#",
    "!",
    "&a",
    "*a",
    "- x",
    "a: b",
    "a #b",
    "a#b",
    "---",
    "--- x",
    "...",
    "'",
    "\"",
    " ",
    "0",
    "-0",
    "1,000",
    "[]",
    "{}",
    "medium",
    "sha256:abc",
];

pub fn word(rng: &mut StdRng) -> String {
    WORDS[rng.random_range(0..WORDS.len())].to_string()
}

/// Prose of about `len` characters: words separated by single spaces (or sometimes double).
pub fn prose(rng: &mut StdRng, len: usize) -> String {
    let mut s = String::new();
    while s.chars().count() < len {
        if !s.is_empty() {
            s.push_str(if rng.random_bool(0.05) { "  " } else { " " });
        }
        let w = if rng.random_bool(0.8) {
            [
                "the", "card", "agent", "writes", "tests", "for", "protocol", "evidence", "and",
            ][rng.random_range(0..9)]
            .to_string()
        } else {
            word(rng)
        };
        s.push_str(&w);
    }
    s
}

/// A string meant to hit the emitter's corner cases.
pub fn tricky_string(rng: &mut StdRng) -> String {
    match rng.random_range(0..10) {
        0 | 1 => WHOLE[rng.random_range(0..WHOLE.len())].to_string(),
        2 => {
            let n = rng.random_range(60..260);
            prose(rng, n)
        }
        3 => {
            // Long text without spaces, or with punctuation mixed in.
            let n = rng.random_range(70..200);
            let mut s = String::new();
            while s.chars().count() < n {
                s.push_str(&word(rng));
                if rng.random_bool(0.2) {
                    s.push_str(PUNCT[rng.random_range(0..PUNCT.len())]);
                }
            }
            s
        }
        4 => {
            // Multi-line prose.
            let lines = rng.random_range(2..5);
            (0..lines)
                .map(|_| {
                    let n = rng.random_range(0..120);
                    prose(rng, n)
                })
                .collect::<Vec<_>>()
                .join(if rng.random_bool(0.7) { "\n" } else { "\n\n" })
                + if rng.random_bool(0.3) { "\n" } else { "" }
        }
        _ => {
            let n = rng.random_range(1..8);
            let mut s = String::new();
            for _ in 0..n {
                if rng.random_bool(0.5) {
                    s.push_str(&word(rng));
                } else {
                    s.push_str(PUNCT[rng.random_range(0..PUNCT.len())]);
                }
            }
            s
        }
    }
}

pub fn date(rng: &mut StdRng) -> NaiveDate {
    NaiveDate::from_ymd_opt(
        rng.random_range(1990..2040),
        rng.random_range(1..13),
        rng.random_range(1..29),
    )
    .expect("day < 29 exists in every month")
}

pub fn datetime(rng: &mut StdRng) -> Timestamp {
    let micros = if rng.random_bool(0.3) {
        rng.random_range(0..1_000_000)
    } else {
        0
    };
    let time = NaiveTime::from_hms_micro_opt(
        rng.random_range(0..24),
        rng.random_range(0..60),
        rng.random_range(0..60),
        micros,
    )
    .expect("valid time");
    let offset_seconds = match rng.random_range(0..4) {
        0 => Some(0),
        1 => Some(rng.random_range(-12i32..13) * 3600 + [0, 1800, 2700][rng.random_range(0..3)]),
        _ => None,
    };
    Timestamp {
        local: NaiveDateTime::new(date(rng), time),
        offset_seconds,
    }
}

pub fn float(rng: &mut StdRng) -> f64 {
    match rng.random_range(0..12) {
        0 => f64::INFINITY,
        1 => f64::NEG_INFINITY,
        2 => -0.0,
        3 => 1e17,
        4 => 1.5e-5,
        5 => rng.random_range(0..6) as f64,
        6 => 1e16 * rng.random_range(1..100) as f64,
        7 => 0.1 + 0.2,
        8 => f64::from_bits(rng.random::<u64>() >> 2),
        _ => rng.random_range(-1000.0..1000.0),
    }
}

pub fn scalar(rng: &mut StdRng) -> Value {
    match rng.random_range(0..20) {
        0 => Value::Null,
        1 => Value::Bool(rng.random()),
        2 | 3 => Value::Int(match rng.random_range(0..3) {
            0 => rng.random::<i64>(),
            _ => rng.random_range(-100..1000),
        }),
        4 => Value::BigInt(format!(
            "{}{}",
            if rng.random() { "-" } else { "" },
            "9".repeat(rng.random_range(20..30))
        )),
        5 | 6 => Value::Float(float(rng)),
        7 => Value::Date(date(rng)),
        8 => Value::DateTime(datetime(rng)),
        _ => Value::Str(tricky_string(rng)),
    }
}

/// A key a Python dict can hold next to the others without two of them being equal.
pub fn key(rng: &mut StdRng) -> Value {
    match rng.random_range(0..20) {
        0 => Value::Int(rng.random_range(-5..50)),
        1 => Value::Date(date(rng)),
        2 => Value::Null,
        3..=6 => Value::Str(tricky_string(rng)),
        7 => Value::Str("x".repeat(rng.random_range(120..140))),
        _ => Value::Str(word(rng)),
    }
}

pub fn value(rng: &mut StdRng, depth: usize) -> Value {
    let roll = if depth == 0 {
        0
    } else {
        rng.random_range(0..10)
    };
    match roll {
        7 | 8 => {
            let n = rng.random_range(0..5);
            let mut m = Mapping::new();
            // Keys of one type most of the time, so sort_keys sorts; mixed sometimes.
            let mixed = rng.random_bool(0.2);
            for _ in 0..n {
                let k = if mixed {
                    key(rng)
                } else {
                    Value::Str(tricky_string(rng))
                };
                m.insert(k, value(rng, depth - 1));
            }
            Value::Map(m)
        }
        9 => {
            let n = rng.random_range(0..4);
            Value::Seq((0..n).map(|_| value(rng, depth - 1)).collect())
        }
        _ => scalar(rng),
    }
}
