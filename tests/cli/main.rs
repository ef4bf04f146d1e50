//! The one-shot commands `check`, `verify` and `status` (and `reconcile` on a polis the reference
//! built), run as the real binary on temporary polises. Comparison tests run the Python
//! reference and fail, never skip, when it is missing.
//!
//! The tests are grouped by command in modules of one test binary: one link, not one per
//! module.

#[path = "../harness/mod.rs"]
mod harness;
#[path = "../common/reference.rs"]
mod reference;

mod check;
mod docs;
mod init;
mod refusals;
mod routing;
mod runaway;
mod status;
mod verify;

use harness::{copy_tree, describe, TestPolis, BIN};
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Output};

const FOUNDER: &str = "claude-founder-one";
const FOUNDER_CARD: &str = "citizens/claude-founder-one/capability_card.yml";

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[track_caller]
fn json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}):\n{}", describe(out)))
}

fn keys(v: &Value) -> BTreeSet<&str> {
    v.as_object()
        .unwrap_or_else(|| panic!("not an object: {v}"))
        .keys()
        .map(String::as_str)
        .collect()
}

fn set<'a>(items: &[&'a str]) -> BTreeSet<&'a str> {
    items.iter().copied().collect()
}

fn contract(id: &str, status: &str) -> String {
    format!(
        "---\ncontract_id: {id}\ntitle: Twice\nopened_by: {FOUNDER}\nopened_at: '2026-01-01 10:00:00'\n\
         owner: {FOUNDER}\nstatus: {status}\nrequired_tags:\n- python\nquality_score: 4\n\
         actual_minutes: 20\nsettled_at: '2026-01-02 10:00:00'\n---\n\n# Twice\n"
    )
}

/// An edit after stamping: a new top-level field.
fn edit_founder_card(p: &TestPolis) {
    let card = p.read(FOUNDER_CARD);
    assert!(card.contains("content_hash: \"sha256:"), "{card}");
    p.save(
        FOUNDER_CARD,
        &format!("notes: edited after stamping\n{card}"),
    );
}

/// Runs the reference's CLI (`python -m polis.cli ARGS`); returns its output.
fn reference_cli(args: &[&str], cwd: &Path) -> Output {
    Command::new(reference::reference_python())
        .args(["-m", "polis.cli"])
        .args(args)
        .current_dir(cwd)
        .env("PYTHONIOENCODING", "utf-8")
        .env("PYTHONUTF8", "1")
        .output()
        .expect("run the reference CLI")
}

#[track_caller]
fn reference_ok(args: &[&str], cwd: &Path) -> String {
    let out = reference_cli(args, cwd);
    assert!(
        out.status.success(),
        "reference `polis {}` failed:\n{}",
        args.join(" "),
        describe(&out)
    );
    stdout(&out)
}

fn polisd_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .current_dir(dir)
        .env("POLISD_STATE_DIR", dir.join(".state"))
        .output()
        .unwrap()
}
