//! `polisd migrate` on polises written by the reference: one made by the oldest release on PyPI
//! (polis-protocol 2.0.0a0, whose `init` writes no `polis.yml` and signs cards with the old
//! `signature:` field), migrated, checked by that same old release, migrated again (nothing
//! changes) and rolled back (every byte as before); and the same polis migrated by the
//! reference 2.0.1's own `polis migrate --apply`, which must leave the same cards, the same
//! settings and a backup each implementation can roll back.

mod harness;
#[path = "common/reference.rs"]
mod reference;

use harness::{describe, BIN};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The oldest reference release on PyPI.
const OLDEST: &str = "2.0.0a0";
const FOUNDER: &str = "claude-code-alpha";
const SECOND: &str = "codex-agent-beta";

/// A project whose `_polis/` the oldest reference's `polis init` wrote, with two citizens.
fn oldest_reference_polis() -> tempfile::TempDir {
    let project = tempfile::tempdir().unwrap();
    for (id, vendor) in [(FOUNDER, "anthropic"), (SECOND, "openai")] {
        let out = reference::older_reference(OLDEST)
            .args(["init", "--project-root"])
            .arg(project.path())
            .args(["--agent-id", id, "--vendor", vendor, "--model", "m1"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{OLDEST} init: {}", describe(&out));
    }
    project
}

fn root(project: &Path) -> PathBuf {
    project.join("_polis")
}

/// Every file under `dir` with its bytes, outside the backups.
fn tree(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(base: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let path = entry.path();
            let rel = path
                .strip_prefix(base)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            if rel.starts_with(".polis-backups") {
                continue;
            }
            if path.is_dir() {
                walk(base, &path, out);
            } else {
                out.insert(rel, std::fs::read(&path).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

fn polisd(args: &[&str], polis: &Path) -> Output {
    Command::new(BIN)
        .args(args)
        .arg(polis)
        .env("POLISD_STATE_DIR", polis.parent().unwrap().join(".state"))
        .output()
        .unwrap()
}

#[track_caller]
fn json_of(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", describe(out)))
}

#[track_caller]
fn changes(report: &serde_json::Value) -> Vec<(String, String)> {
    report["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["action"].as_str().unwrap().to_string(),
                c["path"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn card(id: &str) -> String {
    format!("citizens/{id}/capability_card.yml")
}

#[test]
fn migrate_brings_the_oldest_reference_polis_up_to_date_and_back() {
    let project = oldest_reference_polis();
    let polis = root(project.path());
    let original = tree(&polis);
    assert!(!original.contains_key("polis.yml"));

    let dry = polisd(&["migrate", "--dry-run", "--json"], &polis);
    assert_eq!(dry.status.code(), Some(0), "{}", describe(&dry));
    let planned = changes(&json_of(&dry));
    let expected: Vec<(String, String)> = [
        ("write-config", "polis.yml".to_string()),
        ("stamp-card", card(FOUNDER)),
        ("stamp-card", card(SECOND)),
    ]
    .into_iter()
    .map(|(a, p)| (a.to_string(), p))
    .collect();
    assert_eq!(planned, expected);
    assert_eq!(tree(&polis), original, "the dry run wrote");
    assert!(
        !polis.join(".polis-backups").exists(),
        "the dry run made a backup"
    );

    let done = polisd(&["migrate", "--json"], &polis);
    assert_eq!(done.status.code(), Some(0), "{}", describe(&done));
    let report = json_of(&done);
    assert_eq!(changes(&report), expected, "{report:#}");
    let backup = report["backup"]
        .as_str()
        .expect("a backup folder")
        .to_string();
    for (rel, bytes) in &original {
        if expected.iter().any(|(_, p)| p == rel) {
            assert_eq!(
                &std::fs::read(polis.join(&backup).join(rel)).unwrap(),
                bytes,
                "{rel}"
            );
        }
    }
    let verify = json_of(&polisd(&["verify", "--json"], &polis));
    for c in verify["cards"].as_array().unwrap() {
        assert_eq!(c["state"], "ok", "{verify:#}");
    }

    // The old release itself finds the polis up to date and its cards intact.
    let said = reference::older_reference(OLDEST)
        .args(["migrate", "--polis-root"])
        .arg(&polis)
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&said.stdout).contains("already up to date"),
        "{}",
        describe(&said)
    );
    let verified = reference::older_reference(OLDEST)
        .args(["verify", "--polis-root"])
        .arg(&polis)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&verified.stdout);
    assert!(verified.status.success(), "{}", describe(&verified));
    assert_eq!(text.matches("  ok ").count(), 2, "{text}");

    let migrated = tree(&polis);
    let again = polisd(&["migrate", "--json"], &polis);
    assert_eq!(again.status.code(), Some(0), "{}", describe(&again));
    let again = json_of(&again);
    assert!(
        changes(&again).is_empty() && again["backup"].is_null(),
        "{again:#}"
    );
    assert_eq!(tree(&polis), migrated, "a second run changed the polis");

    let back = polisd(&["migrate", "--rollback", "--json"], &polis);
    assert_eq!(back.status.code(), Some(0), "{}", describe(&back));
    assert_eq!(tree(&polis), original, "the rollback is not exact");
    let twice = polisd(&["migrate", "--rollback"], &polis);
    assert_eq!(twice.status.code(), Some(0), "{}", describe(&twice));
    assert_eq!(tree(&polis), original);
}

#[test]
fn rollback_refuses_to_lose_an_edit_made_after_the_migration() {
    let project = oldest_reference_polis();
    let polis = root(project.path());
    let original = tree(&polis);
    let done = polisd(&["migrate"], &polis);
    assert_eq!(done.status.code(), Some(0), "{}", describe(&done));
    let edited = format!(
        "{}# a setting of ours\n",
        std::fs::read_to_string(polis.join("polis.yml")).unwrap()
    );
    std::fs::write(polis.join("polis.yml"), &edited).unwrap();
    let before = tree(&polis);

    let refused = polisd(&["migrate", "--rollback"], &polis);
    assert_eq!(refused.status.code(), Some(1), "{}", describe(&refused));
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(
        said.contains("polis.yml") && said.contains("--force"),
        "{said}"
    );
    assert_eq!(said.trim().lines().count(), 1, "{said}");
    assert_eq!(tree(&polis), before, "a refused rollback wrote");

    let forced = polisd(&["migrate", "--rollback", "--force"], &polis);
    assert_eq!(forced.status.code(), Some(0), "{}", describe(&forced));
    assert_eq!(tree(&polis), original);
}

/// A migration stopped half way (its backup and manifest written, the settings and the first
/// card changed, the second card not yet) is finished by a second run, which backs up only
/// what it changes. Two rollbacks then bring back every byte of the original polis: the second
/// passes over the backup the first already restored, and over a backup left without its
/// manifest by a run stopped before it changed anything. Rolling back always the newest
/// backup left the first run's changes in place for good.
#[test]
fn a_migration_stopped_half_way_then_finished_is_undone_by_rolling_back_twice() {
    let project = oldest_reference_polis();
    let polis = root(project.path());
    let original = tree(&polis);

    let first = polisd(&["migrate", "--json"], &polis);
    assert_eq!(first.status.code(), Some(0), "{}", describe(&first));
    let first_backup = json_of(&first)["backup"].as_str().unwrap().to_string();
    // Where the run stopped: the second card was never stamped.
    std::fs::write(polis.join(card(SECOND)), &original[&card(SECOND)]).unwrap();

    let rerun = polisd(&["migrate", "--json"], &polis);
    assert_eq!(rerun.status.code(), Some(0), "{}", describe(&rerun));
    let rerun = json_of(&rerun);
    assert_eq!(
        changes(&rerun),
        [("stamp-card".to_string(), card(SECOND))],
        "{rerun:#}"
    );
    let second_backup = rerun["backup"].as_str().unwrap().to_string();
    assert_ne!(second_backup, first_backup);
    // A later run stopped while it copied its backup: no manifest, nothing changed.
    let orphan = polis.join(".polis-backups/29991231-235959");
    std::fs::create_dir_all(orphan.join("citizens")).unwrap();

    let back = polisd(&["migrate", "--rollback", "--json"], &polis);
    assert_eq!(back.status.code(), Some(0), "{}", describe(&back));
    assert_eq!(json_of(&back)["backup"], second_backup.as_str());
    let back = polisd(&["migrate", "--rollback", "--json"], &polis);
    assert_eq!(back.status.code(), Some(0), "{}", describe(&back));
    assert_eq!(json_of(&back)["backup"], first_backup.as_str());
    assert_eq!(tree(&polis), original, "the polis is not as it was");

    // Nothing left to undo: the newest complete backup, every file unchanged, nothing written.
    let again = polisd(&["migrate", "--rollback", "--json"], &polis);
    assert_eq!(again.status.code(), Some(0), "{}", describe(&again));
    let again = json_of(&again);
    assert_eq!(again["backup"], second_backup.as_str());
    assert!(
        again["files"]
            .as_array()
            .unwrap()
            .iter()
            .all(|f| f["undo"] == "unchanged"),
        "{again:#}"
    );
    assert_eq!(tree(&polis), original);
}

#[test]
fn migrate_refuses_usage_errors_and_reports_what_it_cannot_change() {
    let empty = tempfile::tempdir().unwrap();
    assert_eq!(polisd(&["migrate"], empty.path()).status.code(), Some(2));
    let p = harness::TestPolis::init("founder-agent-1");
    assert_eq!(
        polisd(&["migrate", "--dry-run", "--force"], &p.root)
            .status
            .code(),
        Some(2),
        "--force without --rollback"
    );
    // A polis made by polisd is up to date.
    let fresh = polisd(&["migrate", "--json"], &p.root);
    assert_eq!(fresh.status.code(), Some(0), "{}", describe(&fresh));
    assert!(changes(&json_of(&fresh)).is_empty());
    // A schema newer than polisd's is never lowered: reported, exit 1, nothing written.
    p.save("polis.yml", "schema_version: 3\n");
    let before = tree(&p.root);
    let newer = polisd(&["migrate", "--json"], &p.root);
    assert_eq!(newer.status.code(), Some(1), "{}", describe(&newer));
    let report = json_of(&newer);
    assert_eq!(report["blocked"][0]["path"], "polis.yml", "{report:#}");
    assert_eq!(tree(&p.root), before);
}

/// The reference 2.0.1's own `migrate` command on one copy, polisd's on the other; then each
/// side's settings as the reference loads them, and each backup's manifest.
const PY_MIGRATE: &str = r#"
import contextlib, io, json, os, sys, yaml
from polis.cli import cmd_migrate
from polis import config
ref_root, ours_root = json.load(sys.stdin)
said = io.StringIO()
with contextlib.redirect_stdout(said):
    code = cmd_migrate(["--apply", "--polis-root", ref_root])
if code != 0 or "Applied" not in said.getvalue():
    raise SystemExit("reference migrate failed: " + said.getvalue())
def manifest(root):
    backups = os.path.join(root, ".polis-backups")
    [name] = os.listdir(backups)
    with open(os.path.join(backups, name, "MANIFEST.yml"), encoding="utf-8") as f:
        return [{"path": e["path"], "existed_before": e["existed_before"]} for e in yaml.safe_load(f)]
print(json.dumps({
    "reference": {"config": config.load_config(ref_root), "manifest": manifest(ref_root)},
    "polisd": {"config": config.load_config(ours_root), "manifest": manifest(ours_root)},
}))
"#;

/// The reference 2.0.1's `migrate --rollback`.
const PY_ROLLBACK: &str = r#"
import contextlib, io, json, sys
from polis.cli import cmd_migrate
root = json.load(sys.stdin)
said = io.StringIO()
with contextlib.redirect_stdout(said):
    code = cmd_migrate(["--rollback", "--polis-root", root])
if code != 0:
    raise SystemExit("reference rollback failed: " + said.getvalue())
"#;

/// Two copies of one old polis, with an older `schema_version` in a commented polis.yml.
fn twin_old_polises() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let project = oldest_reference_polis();
    let dir = tempfile::tempdir().unwrap();
    let (theirs, ours) = (dir.path().join("theirs"), dir.path().join("ours"));
    harness::copy_tree(project.path(), &theirs);
    harness::copy_tree(project.path(), &ours);
    (dir, root(&theirs), root(&ours))
}

#[test]
fn migrate_makes_the_changes_the_references_migrate_makes() {
    let (_dir, theirs, ours) = twin_old_polises();
    let original = tree(&ours);
    let out = polisd(&["migrate"], &ours);
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    let both: serde_json::Value = serde_json::from_str(&reference::run_python(
        PY_MIGRATE,
        &serde_json::json!([theirs, ours]).to_string(),
    ))
    .unwrap();
    // The cards: byte for byte what the reference's stamping writes.
    for id in [FOUNDER, SECOND] {
        assert_eq!(
            std::fs::read_to_string(theirs.join(card(id))).unwrap(),
            std::fs::read_to_string(ours.join(card(id))).unwrap(),
            "{id}'s stamped card"
        );
    }
    // The settings, as the reference reads them: the same, with polisd's `timezone` beside.
    let mut ours_config = both["polisd"]["config"].clone();
    assert_eq!(ours_config["timezone"], "UTC", "{both:#}");
    ours_config.as_object_mut().unwrap().remove("timezone");
    assert_eq!(ours_config, both["reference"]["config"], "{both:#}");
    // The backups list the same files in the same order.
    assert_eq!(
        both["polisd"]["manifest"], both["reference"]["manifest"],
        "{both:#}"
    );

    // The reference rolls polisd's migration back exactly.
    reference::run_python(PY_ROLLBACK, &serde_json::json!(ours).to_string());
    assert_eq!(
        tree(&ours),
        original,
        "the reference's rollback of polisd's backup"
    );
}

/// The reference 2.0.1's `migrate` plan (its dry run) of a polis, as text.
const PY_PLAN: &str = r#"
import contextlib, io, json, sys
from polis.cli import cmd_migrate
said = io.StringIO()
with contextlib.redirect_stdout(said):
    cmd_migrate(["--polis-root", json.load(sys.stdin)])
print(said.getvalue())
"#;

/// The reference plans `schema_version 1 -> 2` but its apply merges the old value back over the
/// defaults, so the file keeps `schema_version: 1` and every later run plans the same change.
/// polisd makes the change the plan names, on that one line, and the reference then finds
/// nothing left to do.
#[test]
fn an_older_schema_version_is_raised_keeping_the_comments_where_the_reference_leaves_it() {
    let (_dir, theirs, ours) = twin_old_polises();
    let settings = "# Our team's settings: keep this note.\nschema_version: 1\nrouting:\n  explore_rate: 0.25\n";
    std::fs::write(theirs.join("polis.yml"), settings).unwrap();
    std::fs::write(ours.join("polis.yml"), settings).unwrap();
    let out = polisd(&["migrate", "--json"], &ours);
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    let report = json_of(&out);
    assert_eq!(
        report["changes"][0]["action"], "update-config",
        "{report:#}"
    );
    assert_eq!(report["changes"][0]["detail"], "schema_version 1 -> 2");
    assert_eq!(
        std::fs::read_to_string(ours.join("polis.yml")).unwrap(),
        settings.replace("schema_version: 1", "schema_version: 2"),
        "only the schema_version line changes"
    );
    let both: serde_json::Value = serde_json::from_str(&reference::run_python(
        PY_MIGRATE,
        &serde_json::json!([theirs, ours]).to_string(),
    ))
    .unwrap();
    assert_eq!(both["polisd"]["config"]["schema_version"], 2, "{both:#}");
    assert_eq!(both["reference"]["config"]["schema_version"], 1, "{both:#}");
    let mut same = both["polisd"]["config"].clone();
    same["schema_version"] = 1.into();
    assert_eq!(same, both["reference"]["config"], "{both:#}");
    assert_eq!(
        both["polisd"]["manifest"], both["reference"]["manifest"],
        "{both:#}"
    );
    let plan = |root: &Path| reference::run_python(PY_PLAN, &serde_json::json!(root).to_string());
    assert!(
        plan(&ours).contains("already up to date"),
        "{}",
        plan(&ours)
    );
    assert!(plan(&theirs).contains("update-config: schema_version 1 -> 2"));
}

#[test]
fn polisd_rolls_back_the_references_migration_when_forced() {
    let (_dir, theirs, _ours) = twin_old_polises();
    let original = tree(&theirs);
    reference::run_python(
        &PY_MIGRATE.replace(
            "ref_root, ours_root = json.load(sys.stdin)",
            "ref_root = ours_root = json.load(sys.stdin)[0]",
        ),
        &serde_json::json!([theirs]).to_string(),
    );
    assert_ne!(tree(&theirs), original);
    // The reference's manifest does not say what its migration wrote, so polisd cannot tell
    // a later edit from the migration's own bytes: it asks for --force, and writes nothing.
    let refused = polisd(&["migrate", "--rollback"], &theirs);
    assert_eq!(refused.status.code(), Some(1), "{}", describe(&refused));
    assert_ne!(tree(&theirs), original);
    let forced = polisd(&["migrate", "--rollback", "--force"], &theirs);
    assert_eq!(forced.status.code(), Some(0), "{}", describe(&forced));
    assert_eq!(tree(&theirs), original);
}
