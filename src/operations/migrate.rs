//! Migrating a polis written by an older reference version, and undoing it. The rules (what
//! changes, the backup manifest, when a file may be put back) are
//! [`crate::protocol::migration`]'s; here they meet the folder: read it, copy every file about to
//! change into `_polis/.polis-backups/<stamp>/` with a manifest, then write, all through the one
//! writer and under the transition lock, so two migrations (or a migration and a rollback)
//! never interleave. Running it again changes nothing; a rollback puts back only files that
//! still hold what the migration wrote, unless forced.

use crate::fs::snapshot::{self, MAX_RECORD_BYTES};
use crate::fs::writer::Writer;
use crate::operations::{edit_agent_file_now, lookup, OpError};
use crate::protocol::clock::PolisTime;
use crate::protocol::layout;
use crate::protocol::migration::{
    self, Action, Blocked, Change, ManifestEntry, Plan, Undo, BACKUP_DIR, MANIFEST,
};
use serde::Serialize;
use std::path::Path;

/// One change, as reported.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Changed {
    pub action: Action,
    /// Relative to `_polis/`.
    pub path: String,
    pub detail: String,
}

impl From<&Change> for Changed {
    fn from(c: &Change) -> Changed {
        Changed {
            action: c.action,
            path: c.path.clone(),
            detail: c.detail.clone(),
        }
    }
}

/// What a migration did, or would do in a dry run.
#[derive(Debug, Clone, Serialize)]
pub struct Migration {
    pub dry_run: bool,
    /// The changes made (in a dry run: every change that would be made).
    pub changes: Vec<Changed>,
    /// What was not changed and needs a person, with what to do.
    pub blocked: Vec<Blocked>,
    /// The backup folder, relative to `_polis/`, when anything was written.
    pub backup: Option<String>,
}

/// What a rollback did to one file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Undone {
    pub path: String,
    pub undo: Undo,
    /// Set when `--force` put back a file edited after the migration: what was lost.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub forced: Option<String>,
}

/// What a rollback did, or would do in a dry run.
#[derive(Debug, Clone, Serialize)]
pub struct Rollback {
    pub dry_run: bool,
    /// The backup restored, relative to `_polis/`.
    pub backup: String,
    pub files: Vec<Undone>,
}

/// The migration the polis at `root` needs now.
pub fn plan(root: &Path) -> Plan {
    let read =
        |rel: &str| snapshot::read_text(root, rel, Some(MAX_RECORD_BYTES)).map_err(|f| f.message);
    let polis_yml = read(layout::POLIS_YML).transpose();
    let cards: Vec<(String, Result<String, String>)> = lookup::card_files(root)
        .into_iter()
        .filter_map(|(id, rel)| read(&rel).transpose().map(|text| (id, text)))
        .collect();
    migration::plan(&migration::Inputs {
        polis_yml: polis_yml
            .as_ref()
            .map(|r| r.as_deref().map_err(Clone::clone)),
        cards: cards
            .iter()
            .map(|(id, text)| (id.as_str(), text.as_deref().map_err(Clone::clone)))
            .collect(),
    })
}

/// Brings the polis up to date: backs up every file about to change, then changes them. A
/// dry run reads and reports only. A file that changes while polisd migrates it is left as
/// it is and reported as blocked.
pub fn migrate(writer: &Writer, time: &PolisTime, dry_run: bool) -> Result<Migration, OpError> {
    let _lock = if dry_run {
        None
    } else {
        Some(writer.transition_lock()?)
    };
    let plan = plan(writer.root());
    let mut report = Migration {
        dry_run,
        changes: Vec::new(),
        blocked: plan.blocked,
        backup: None,
    };
    if dry_run || plan.changes.is_empty() {
        report.changes = plan.changes.iter().map(Changed::from).collect();
        return Ok(report);
    }
    report.backup = Some(back_up(writer, time, &plan.changes)?);
    for change in &plan.changes {
        if apply(writer, change)? {
            report.changes.push(change.into());
        } else {
            report.blocked.push(Blocked {
                path: change.path.clone(),
                reason: "it changed while polisd migrated it, so it was left as it is; run \
                         `polisd migrate` again"
                    .to_string(),
            });
        }
    }
    Ok(report)
}

/// Copies every file the changes touch into a new backup folder, then its manifest; returns
/// the folder. Nothing in the polis is changed yet when this fails.
fn back_up(writer: &Writer, time: &PolisTime, changes: &[Change]) -> Result<String, OpError> {
    let taken = snapshot::subdirs(writer.root(), BACKUP_DIR);
    let dir = format!("{BACKUP_DIR}/{}", migration::backup_name(time.now, &taken));
    let taken_meanwhile = || {
        OpError::Migration(format!(
            "{dir} appeared while polisd wrote its backup (another migration?); nothing in the \
             polis was changed: run `polisd migrate` again"
        ))
    };
    for change in changes {
        if let Some(before) = &change.before {
            if !writer.create_new(format!("{dir}/{}", change.path), before.as_bytes())? {
                return Err(taken_meanwhile());
            }
        }
    }
    let entries: Vec<ManifestEntry> = changes.iter().map(ManifestEntry::of).collect();
    let manifest = migration::manifest_text(&entries)?;
    if !writer.create_new(format!("{dir}/{MANIFEST}"), manifest.as_bytes())? {
        return Err(taken_meanwhile());
    }
    Ok(dir)
}

/// Makes one change; `false` when the file no longer holds what the plan read.
fn apply(writer: &Writer, change: &Change) -> Result<bool, OpError> {
    match &change.before {
        None => Ok(writer.create_new(&change.path, change.after.as_bytes())?),
        Some(before) => Ok(edit_agent_file_now(
            writer,
            writer.root(),
            &change.path,
            |now| (now == before).then(|| change.after.clone()),
        )?),
    }
}

/// Restores the newest backup that has something left to undo: every file the migration
/// changed goes back to its copy, every file it created is removed. Refused, with nothing
/// written, when a file was edited after the migration (the edit would be lost), unless
/// `force`.
///
/// A backup whose files are all as they were before its migration (a rollback restored it
/// already), or that has no manifest (its migration stopped while writing the backup, before
/// it changed anything: the manifest is written last, by the reference too), is passed over
/// for the one before it. So repeated rollbacks undo migrations newest first, and a migration
/// stopped half way and then finished by a second run is undone by two rollbacks instead of
/// leaving the first run's changes for good.
pub fn rollback(writer: &Writer, force: bool, dry_run: bool) -> Result<Rollback, OpError> {
    let _lock = if dry_run {
        None
    } else {
        Some(writer.transition_lock()?)
    };
    let root = writer.root();
    let names = snapshot::subdirs(root, BACKUP_DIR);
    let backups = migration::backups_newest_first(&names);
    let Some(newest) = backups.first() else {
        return Err(OpError::Migration(format!(
            "no backup in _polis/{BACKUP_DIR}/ to roll back to; nothing was written"
        )));
    };
    // The newest backup already undone, reported as such when no older one has more to undo.
    let mut undone = None;
    let mut chosen = None;
    for name in &backups {
        let dir = format!("{BACKUP_DIR}/{name}");
        let Some(plan) = backup_plan(root, &dir)? else {
            continue;
        };
        if plan.iter().all(|(step, _, _)| step.undo == Undo::Unchanged) {
            undone.get_or_insert((dir, plan));
            continue;
        }
        chosen = Some((dir, plan));
        break;
    }
    let Some((dir, plan)) = chosen.or(undone) else {
        return Err(OpError::Migration(format!(
            "{BACKUP_DIR}/{newest}/{MANIFEST} is missing, as in every backup here: the \
             migration that made it stopped before it changed anything; nothing was written: \
             run `polisd migrate` to finish it"
        )));
    };
    let conflicts: Vec<String> = plan
        .iter()
        .filter_map(|(step, _, _)| {
            let why = step.conflict.as_ref()?;
            Some(format!("{} ({why})", step.path))
        })
        .collect();
    if !conflicts.is_empty() && !force {
        return Err(OpError::Migration(format!(
            "rolling back {dir} would lose changes made since the migration: {}; nothing was \
             written: look at them, then run `polisd migrate --rollback --force` to restore \
             the backup anyway",
            conflicts.join(", ")
        )));
    }
    let mut report = Rollback {
        dry_run,
        backup: dir.clone(),
        files: Vec::new(),
    };
    for (step, backup, current) in plan {
        if !dry_run {
            undo(writer, &step, backup.as_deref(), current.as_deref())?;
        }
        report.files.push(Undone {
            path: step.path,
            undo: step.undo,
            forced: step.conflict,
        });
    }
    Ok(report)
}

/// One file of a rollback: what to do, the backup's copy, the file as it is now.
type Step = (migration::UndoStep, Option<String>, Option<String>);

/// The rollback of the backup in `dir` (relative to `_polis/`), file by file; `None` when it
/// has no manifest.
fn backup_plan(root: &Path, dir: &str) -> Result<Option<Vec<Step>>, OpError> {
    let read = |rel: &str| snapshot::read_text(root, rel, Some(MAX_RECORD_BYTES));
    let unusable = |why: String| {
        OpError::Migration(format!(
            "{dir}/{MANIFEST} cannot be used: {why}; nothing was written: restore the files \
             from {dir} by hand"
        ))
    };
    let Some(manifest) = read(&format!("{dir}/{MANIFEST}"))? else {
        return Ok(None);
    };
    let entries = migration::parse_manifest(&manifest).map_err(unusable)?;
    let mut plan = Vec::new();
    for entry in &entries {
        let backup = match entry.existed_before {
            true => read(&format!("{dir}/{}", entry.path))?,
            false => None,
        };
        let current = read(&entry.path)?;
        let step = migration::undo_step(entry, backup.as_deref(), current.as_deref());
        if entry.existed_before && backup.is_none() {
            return Err(unusable(format!(
                "it lists {} but holds no copy of it",
                entry.path
            )));
        }
        plan.push((step, backup, current));
    }
    Ok(Some(plan))
}

/// Puts one file back. The file must still hold what the rollback was decided on.
fn undo(
    writer: &Writer,
    step: &migration::UndoStep,
    backup: Option<&str>,
    current: Option<&str>,
) -> Result<(), OpError> {
    let changed_meanwhile = || {
        OpError::Migration(format!(
            "{} changed while polisd rolled it back, so it was left as it is; run `polisd \
             migrate --rollback` again",
            step.path
        ))
    };
    let done = match (step.undo, backup, current) {
        (Undo::Unchanged, _, _) => true,
        (Undo::Restore, Some(backup), Some(current)) => {
            edit_agent_file_now(writer, writer.root(), &step.path, |now| {
                (now == current).then(|| backup.to_string())
            })?
        }
        (Undo::Restore, Some(backup), None) => writer.create_new(&step.path, backup.as_bytes())?,
        (Undo::Remove, _, Some(current)) => {
            let now = snapshot::read_text(writer.root(), &step.path, Some(MAX_RECORD_BYTES))?;
            now.as_deref() == Some(current) && {
                writer.remove(&step.path)?;
                true
            }
        }
        (Undo::Restore, None, _) | (Undo::Remove, _, None) => true,
    };
    if done {
        Ok(())
    } else {
        Err(changed_meanwhile())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::clock::PolisZone;

    const LEGACY_CARD: &str = "agent_id: claude-code-one\ncapability_tags:\n  py:\n    self_rating: 4\n\nsignature: \"claude-code-one:2026:sha256:00\"\n";
    const CARD: &str = "citizens/claude-code-one/capability_card.yml";

    fn old_polis() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("CONSTITUTION.md"), "# c\n").unwrap();
        std::fs::create_dir_all(dir.path().join("citizens/claude-code-one")).unwrap();
        std::fs::write(dir.path().join(CARD), LEGACY_CARD).unwrap();
        dir
    }

    fn time() -> PolisTime {
        PolisTime {
            zone: PolisZone::default(),
            now: chrono::NaiveDate::from_ymd_opt(2026, 6, 5)
                .and_then(|d| d.and_hms_opt(9, 8, 7))
                .unwrap(),
        }
    }

    fn writer(dir: &tempfile::TempDir) -> Writer {
        Writer::unrecorded(dir.path()).unwrap()
    }

    #[test]
    fn migrate_backs_up_writes_and_then_has_nothing_to_do() {
        let dir = old_polis();
        let w = writer(&dir);
        let dry = migrate(&w, &time(), true).unwrap();
        assert_eq!(dry.changes.len(), 2);
        assert!(!dir.path().join("polis.yml").exists());
        assert!(!dir.path().join(BACKUP_DIR).exists());

        let done = migrate(&w, &time(), false).unwrap();
        assert_eq!(done.changes, dry.changes);
        assert_eq!(
            done.backup.as_deref(),
            Some(".polis-backups/20260605-090807")
        );
        let backup = dir.path().join(".polis-backups/20260605-090807");
        assert_eq!(
            std::fs::read_to_string(backup.join(CARD)).unwrap(),
            LEGACY_CARD
        );
        assert!(std::fs::read_to_string(backup.join(MANIFEST))
            .unwrap()
            .starts_with("- path: polis.yml\n  existed_before: false\n"));
        assert!(std::fs::read_to_string(dir.path().join(CARD))
            .unwrap()
            .contains("content_hash: \"sha256:"));

        let again = migrate(&w, &time(), false).unwrap();
        assert!(again.changes.is_empty() && again.blocked.is_empty() && again.backup.is_none());
    }

    #[test]
    fn rollback_restores_exactly_and_refuses_to_lose_a_later_edit() {
        let dir = old_polis();
        let w = writer(&dir);
        migrate(&w, &time(), false).unwrap();
        let stamped = std::fs::read_to_string(dir.path().join(CARD)).unwrap();
        std::fs::write(dir.path().join(CARD), format!("{stamped}# mine\n")).unwrap();
        let refused = rollback(&w, false, false).unwrap_err();
        assert!(refused.to_string().contains("--force"), "{refused}");
        assert!(dir.path().join("polis.yml").exists());

        std::fs::write(dir.path().join(CARD), &stamped).unwrap();
        let done = rollback(&w, false, false).unwrap();
        let undos: Vec<Undo> = done.files.iter().map(|f| f.undo).collect();
        assert_eq!(undos, [Undo::Remove, Undo::Restore]);
        assert_eq!(
            std::fs::read_to_string(dir.path().join(CARD)).unwrap(),
            LEGACY_CARD
        );
        assert!(!dir.path().join("polis.yml").exists());
        let again = rollback(&w, false, false).unwrap();
        assert!(again.files.iter().all(|f| f.undo == Undo::Unchanged));
    }

    #[test]
    fn rollback_without_a_backup_is_refused() {
        let dir = old_polis();
        let e = rollback(&writer(&dir), false, false).unwrap_err();
        assert!(e.to_string().contains("no backup"), "{e}");
    }
}
