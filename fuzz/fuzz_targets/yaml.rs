//! YAML typing: `yaml::load` on any text never panics; a value that loads and dumps (with the
//! card options and the stats options) loads back equal. An `EmitError` is allowed (the emitter
//! refuses values it cannot reproduce) and only reported, once per kind.
#![no_main]

use libfuzzer_sys::fuzz_target;
use polisd::yaml::{self, DumpOptions, EmitError, Value};
use std::collections::BTreeSet;
use std::sync::Mutex;

static REPORTED: Mutex<BTreeSet<&'static str>> = Mutex::new(BTreeSet::new());

fn kind(e: &EmitError) -> &'static str {
    match e {
        EmitError::UnhashableKey(_) => "UnhashableKey",
        EmitError::EqualKeys(..) => "EqualKeys",
        EmitError::UnpredictableOrder(_) => "UnpredictableOrder",
        EmitError::Unrepresentable(_) => "Unrepresentable",
    }
}

/// Equality that treats NaN as equal to NaN and, for a sorted dump, ignores mapping order
/// (keys are unique after loading, so a lookup per key suffices).
fn same(a: &Value, b: &Value, ordered: bool) -> bool {
    match (a, b) {
        (Value::Float(x), Value::Float(y)) => {
            x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan())
        }
        (Value::Seq(x), Value::Seq(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same(p, q, ordered))
        }
        (Value::Map(x), Value::Map(y)) => {
            if x.len() != y.len() {
                return false;
            }
            if ordered {
                x.iter()
                    .zip(y.iter())
                    .all(|((k1, v1), (k2, v2))| same(k1, k2, ordered) && same(v1, v2, ordered))
            } else {
                x.iter().all(|(k1, v1)| {
                    y.iter()
                        .any(|(k2, v2)| same(k1, k2, ordered) && same(v1, v2, ordered))
                })
            }
        }
        _ => a == b,
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(value) = yaml::load(text) else {
        return;
    };
    for opts in [DumpOptions::CARD, DumpOptions::STATS] {
        match yaml::dump(&value, &opts) {
            Ok(out) => {
                let back = yaml::load(&out).unwrap_or_else(|e| {
                    panic!("dump output does not load: {e}\ninput: {text:?}\ndump: {out:?}")
                });
                assert!(
                    same(&value, &back, !opts.sort_keys),
                    "round trip differs ({opts:?})\ninput: {text:?}\nvalue: {value:?}\ndump: {out:?}\nback: {back:?}"
                );
            }
            Err(e) => {
                let mut seen = REPORTED.lock().unwrap();
                if seen.insert(kind(&e)) {
                    eprintln!("EmitError (reported once per kind): {e}; input: {text:?}");
                }
            }
        }
    }
});
