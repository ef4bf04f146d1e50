//! The emitter against the real PyYAML: generated values must dump to the same bytes as
//! `yaml.safe_dump` / `yaml.dump` with `default_flow_style=False`, for every option set polisd
//! uses.

#[path = "common/gen.rs"]
mod gen;
#[path = "common/reference.rs"]
mod reference;

use polisd::yaml::{dump, DumpOptions, Value};
use rand::rngs::StdRng;
use rand::SeedableRng;

const OPTION_SETS: [DumpOptions; 4] = [
    DumpOptions {
        sort_keys: true,
        allow_unicode: true,
    },
    DumpOptions {
        sort_keys: false,
        allow_unicode: false,
    },
    DumpOptions {
        sort_keys: true,
        allow_unicode: false,
    },
    DumpOptions {
        sort_keys: false,
        allow_unicode: true,
    },
];

/// PyYAML's output per value: the four `safe_dump` option sets, then `yaml.dump` with the
/// routing-stats options (SPEC §6 point 7).
fn pyyaml_dumps(values: &[Value]) -> Vec<Vec<String>> {
    let input: Vec<_> = values.iter().map(gen::tagged).collect();
    let script = format!(
        "{}\n{}",
        gen::PY_DECODE,
        r#"
import yaml
out = []
for x in json.load(sys.stdin.buffer):
    v = dec(x)
    row = [yaml.safe_dump(v, default_flow_style=False, sort_keys=s, allow_unicode=u)
           for s, u in [(True, True), (False, False), (True, False), (False, True)]]
    row.append(yaml.dump(v, default_flow_style=False, sort_keys=False))
    out.append(row)
print(json.dumps(out))
"#
    );
    let stdout = reference::run_python(&script, &serde_json::to_string(&input).unwrap());
    serde_json::from_str(&stdout).expect("reference output is JSON")
}

fn compare(values: &[Value]) {
    let expected = pyyaml_dumps(values);
    let mut failures = Vec::new();
    for (v, want) in values.iter().zip(&expected) {
        for (i, opts) in OPTION_SETS.iter().chain([&DumpOptions::STATS]).enumerate() {
            match dump(v, opts) {
                Ok(got) if got == want[i] => {}
                Ok(got) => failures.push(format!(
                    "{opts:?}\nvalue: {v:?}\npyyaml: {:?}\npolisd: {got:?}",
                    want[i]
                )),
                Err(e) => failures.push(format!("{opts:?}\nvalue: {v:?}\nrefused: {e}")),
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} dumps differ from PyYAML; first ones:\n\n{}",
        failures.len(),
        values.len() * 5,
        failures
            .iter()
            .take(5)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n\n")
    );
}

#[test]
fn pyyaml_dump_bytes_3000_generated_values() {
    let mut rng = StdRng::seed_from_u64(0x9a11_5eed);
    let values: Vec<Value> = (0..3000).map(|_| gen::value(&mut rng, 3)).collect();
    compare(&values);
}

#[test]
fn pyyaml_dump_bytes_top_level_scalars() {
    let mut rng = StdRng::seed_from_u64(7);
    let values: Vec<Value> = (0..500).map(|_| gen::scalar(&mut rng)).collect();
    compare(&values);
}

#[test]
fn pyyaml_dump_bytes_long_strings_fold_at_80() {
    let mut rng = StdRng::seed_from_u64(80);
    let mut values = Vec::new();
    for _ in 0..600 {
        let s = gen::tricky_string(&mut rng);
        let long = gen::prose(&mut rng, 150) + &s + &gen::prose(&mut rng, 40);
        let mut m = polisd::yaml::Mapping::new();
        m.insert(Value::Str(gen::word(&mut rng)), Value::Str(long.clone()));
        let nested = Value::Seq(vec![Value::Map(m.clone()), Value::Str(long)]);
        m.insert(Value::Str("nested".into()), nested);
        values.push(Value::Map(m));
    }
    compare(&values);
}
