//! `polisd doctor --write-config` against the reference's `polis doctor --write-config`
//! (polis-protocol 2.0.1): on a polis without polis.yml both write the same settings.

mod harness;
#[path = "common/reference.rs"]
mod reference;

use harness::BIN;
use std::process::Command;

/// Runs the reference's own `doctor` command (its CLI function) on one copy, loads both
/// polis.yml files with PyYAML and prints them as JSON: `{"reference": …, "polisd": …}`.
const PY_DOCTOR: &str = r#"
import contextlib, io, json, sys, yaml
from polis.cli import cmd_doctor
ref_root, ours_root = json.load(sys.stdin)
said = io.StringIO()
with contextlib.redirect_stdout(said):
    try:
        cmd_doctor(["--write-config", "--polis-root", ref_root])
    except SystemExit:
        pass
if "wrote" not in said.getvalue():
    raise SystemExit("reference doctor wrote nothing: " + said.getvalue())
load = lambda root: yaml.safe_load(open(root + "/polis.yml", encoding="utf-8"))
print(json.dumps({"reference": load(ref_root), "polisd": load(ours_root)}))
"#;

/// A fresh polis with its polis.yml removed (a polis from before schema v2).
fn polis_without_config() -> harness::TestPolis {
    let polis = harness::TestPolis::init("founder-agent-1");
    std::fs::remove_file(polis.root.join("polis.yml")).unwrap();
    polis
}

#[test]
fn doctor_write_config_writes_the_reference_settings() {
    let (ours, theirs) = (polis_without_config(), polis_without_config());
    let (ours, theirs) = (&ours.root, &theirs.root);
    let out = Command::new(BIN)
        .args(["doctor", "--write-config", "--json"])
        .arg(ours)
        .output()
        .unwrap();
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["config"]["written"], true, "{report:#}");
    let both: serde_json::Value = serde_json::from_str(&reference::run_python(
        PY_DOCTOR,
        &serde_json::json!([theirs, ours]).to_string(),
    ))
    .unwrap();
    let reference = both["reference"].as_object().unwrap();
    assert!(!reference.is_empty());
    // Every setting the reference writes, with its value; polisd adds only `timezone`.
    for (key, value) in reference {
        assert_eq!(&both["polisd"][key], value, "polis.yml `{key}`: {both:#}");
    }
    for key in both["polisd"].as_object().unwrap().keys() {
        assert!(
            reference.contains_key(key) || key == "timezone",
            "polisd writes `{key}` the reference does not: {both:#}"
        );
    }
}

/// An existing polis.yml is the polis's own: kept byte for byte, comments included.
#[test]
fn doctor_write_config_keeps_an_existing_polis_yml() {
    let polis = polis_without_config();
    let root = &polis.root;
    let mine = "# ours\nschema_version: 2\nrouting:\n  explore_rate: 0.3\n";
    std::fs::write(root.join("polis.yml"), mine).unwrap();
    let out = Command::new(BIN)
        .args(["doctor", "--write-config"])
        .arg(root)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("kept polis.yml"), "{text}");
    assert_eq!(
        std::fs::read_to_string(root.join("polis.yml")).unwrap(),
        mine
    );
}
