//! `migrate`: bringing a polis written by an older reference version up to the current layout,
//! the changes the reference's `polis migrate` makes: `polis.yml` at schema v2 (created when
//! missing, its `schema_version` raised when older) and every capability card stamped with a
//! current `content_hash` (cards with none, with only the old `signature:`, or edited since
//! they were stamped). Also the backup manifest (`.polis-backups/<stamp>/MANIFEST.yml`) in the
//! reference's format, so either implementation can roll back the other's migration.
//!
//! Pure: texts in, planned changes, manifests and rollback decisions out. What cannot be
//! changed safely is a [`Blocked`] item naming the fix, never a guess. Where polisd differs
//! from the reference on purpose: an existing `polis.yml` keeps every byte but its
//! `schema_version` line (the reference rewrites the whole file and drops its comments), a
//! newer schema is never lowered, and a card the reference would skip or stamp wrongly is
//! reported instead.

use crate::protocol::citizens::card::{self, VerifyState};
use crate::protocol::digest::sha256_hex;
use crate::protocol::layout;
use crate::yaml::{self, DumpOptions, EmitError, Mapping, Value};
use serde::Serialize;

/// The schema this polisd writes and reads.
pub const SCHEMA_VERSION: i64 = 2;
/// Where backups live, relative to `_polis/` (the reference's folder, so its `--rollback`
/// finds polisd's backups and the other way round).
pub const BACKUP_DIR: &str = ".polis-backups";
/// The list of what a backup holds, inside each backup folder.
pub const MANIFEST: &str = "MANIFEST.yml";

/// What one change does, named as the reference names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Action {
    /// Create `polis.yml` with every default setting.
    WriteConfig,
    /// Raise `polis.yml`'s `schema_version`.
    UpdateConfig,
    /// Stamp a capability card with its `content_hash`.
    StampCard,
}

impl Action {
    pub fn as_str(self) -> &'static str {
        match self {
            Action::WriteConfig => "write-config",
            Action::UpdateConfig => "update-config",
            Action::StampCard => "stamp-card",
        }
    }
}

/// One planned change of one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    pub action: Action,
    /// Relative to `_polis/`.
    pub path: String,
    /// What changes, in a few words (`claude-code-one: legacy -> content_hash`).
    pub detail: String,
    /// The file's text now (`None`: it does not exist yet).
    pub before: Option<String>,
    /// The file's text after the change.
    pub after: String,
}

/// Something the migration would change but cannot safely: the file and what to do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Blocked {
    pub path: String,
    pub reason: String,
}

/// The migration of one polis: the changes to make, in order, and what needs a person.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Plan {
    pub changes: Vec<Change>,
    pub blocked: Vec<Blocked>,
}

/// A file as the caller read it: absent, its text, or why it could not be read.
pub type Read<'a> = Option<Result<&'a str, String>>;

/// What the plan looks at.
pub struct Inputs<'a> {
    /// `polis.yml`.
    pub polis_yml: Read<'a>,
    /// Every `citizens/<folder>/capability_card.yml` that exists: the folder name and the
    /// card's text (or why it could not be read).
    pub cards: Vec<(&'a str, Result<&'a str, String>)>,
}

/// The changes that bring the polis up to date, in the reference's order: the settings file,
/// then the cards by citizen id. Planning twice over the result plans nothing.
pub fn plan(inputs: &Inputs<'_>) -> Plan {
    let mut plan = Plan::default();
    match plan_config(inputs.polis_yml.clone()) {
        Ok(Some(change)) => plan.changes.push(change),
        Ok(None) => {}
        Err(blocked) => plan.blocked.push(blocked),
    }
    let mut cards: Vec<_> = inputs.cards.iter().collect();
    cards.sort_by_key(|(citizen, _)| *citizen);
    for (citizen, text) in cards {
        match plan_card(citizen, text.as_deref().map_err(String::as_str)) {
            Ok(Some(change)) => plan.changes.push(change),
            Ok(None) => {}
            Err(blocked) => plan.blocked.push(blocked),
        }
    }
    plan
}

fn blocked(path: &str, reason: impl Into<String>) -> Blocked {
    Blocked {
        path: path.to_string(),
        reason: reason.into(),
    }
}

/// `polis.yml`: created when missing; its `schema_version` raised when it is set and older.
/// An unset `schema_version` is schema v2 already (the reference merges the file over its
/// defaults before it compares).
fn plan_config(text: Read<'_>) -> Result<Option<Change>, Blocked> {
    let path = layout::POLIS_YML;
    let text = match text {
        None => {
            return Ok(Some(Change {
                action: Action::WriteConfig,
                path: path.to_string(),
                detail: format!("create polis.yml (schema v{SCHEMA_VERSION})"),
                before: None,
                after: crate::protocol::settings::NEW_FILE.to_string(),
            }))
        }
        Some(Err(why)) => return Err(blocked(path, format!("cannot read it: {why}"))),
        Some(Ok(text)) => text,
    };
    let settings = match yaml::load(text) {
        Ok(Value::Map(m)) => m,
        Ok(Value::Null) => return Ok(None),
        Ok(_) => {
            return Err(blocked(
                path,
                "polis.yml is not a mapping of settings; make it one (`schema_version: 2` on \
                 its own line is enough), then run `polisd migrate` again",
            ))
        }
        Err(e) => {
            return Err(blocked(
                path,
                format!(
                    "polis.yml is not valid YAML (line {}: {}); fix it, then run `polisd \
                     migrate` again",
                    e.line, e.message
                ),
            ))
        }
    };
    let Some(version) = settings.get("schema_version") else {
        return Ok(None);
    };
    if is_current_schema(version) {
        return Ok(None);
    }
    if let Value::Int(newer) = version {
        if *newer > SCHEMA_VERSION {
            return Err(blocked(
                path,
                format!(
                    "polis.yml says schema_version {newer}, newer than the schema v{SCHEMA_VERSION} \
                     this polisd knows; upgrade polisd rather than migrate the polis down"
                ),
            ));
        }
    }
    let after = set_schema_version(text, &settings).ok_or_else(|| {
        blocked(
            path,
            format!(
                "polisd edits only a top-level `schema_version: …` line, and this file has \
                 none it can edit safely; set `schema_version: {SCHEMA_VERSION}` by hand"
            ),
        )
    })?;
    Ok(Some(Change {
        action: Action::UpdateConfig,
        path: path.to_string(),
        detail: format!(
            "schema_version {} -> {SCHEMA_VERSION}",
            version.python_str()
        ),
        before: Some(text.to_string()),
        after,
    }))
}

/// Python's `value == 2`: an int or a float equal to two (a boolean is 0 or 1).
fn is_current_schema(value: &Value) -> bool {
    match value {
        Value::Int(n) => *n == SCHEMA_VERSION,
        Value::Float(f) => *f == SCHEMA_VERSION as f64,
        _ => false,
    }
}

/// `text` with its one top-level `schema_version:` line replaced by the current version, every
/// other byte kept. `None` when there is not exactly one such line, or when the result would
/// read back as anything but the same settings with the new version (a value spread over
/// several lines, say).
fn set_schema_version(text: &str, settings: &Mapping) -> Option<String> {
    let is_key_line = |line: &str| {
        line.strip_prefix("schema_version")
            .is_some_and(|rest| rest.trim_start_matches([' ', '\t']).starts_with(':'))
    };
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let mut at = lines.iter().enumerate().filter(|(_, l)| is_key_line(l));
    let (index, line) = at.next()?;
    if at.next().is_some() {
        return None;
    }
    let ending = &line[line.trim_end_matches(['\r', '\n']).len()..];
    let mut out = String::with_capacity(text.len());
    for (i, l) in lines.iter().enumerate() {
        if i == index {
            out.push_str(&format!("schema_version: {SCHEMA_VERSION}{ending}"));
        } else {
            out.push_str(l);
        }
    }
    let Ok(Value::Map(back)) = yaml::load(&out) else {
        return None;
    };
    let without_version = |m: &Mapping| {
        let mut m = m.clone();
        m.remove("schema_version");
        m
    };
    let same = back.get("schema_version") == Some(&Value::Int(SCHEMA_VERSION))
        && without_version(&back) == without_version(settings);
    same.then_some(out)
}

/// A card: stamped when it has no `content_hash`, only the old `signature:`, or one its
/// content no longer matches (as the reference's `verify --fix` and `migrate` do).
fn plan_card(citizen: &str, text: Result<&str, &str>) -> Result<Option<Change>, Blocked> {
    let path = format!("{}/{citizen}/capability_card.yml", layout::CITIZENS_DIR);
    let text = text.map_err(|why| blocked(&path, format!("cannot read it: {why}")))?;
    let parsed = card::parse(text).map_err(|e| {
        blocked(
            &path,
            format!("not stamped: {e}; fix the card, then run `polisd migrate` again"),
        )
    })?;
    let state = parsed.verify().state;
    if matches!(state, VerifyState::Ok | VerifyState::Unverifiable) {
        return Ok(None);
    }
    if !layout::is_agent_id(citizen) {
        return Err(blocked(
            &path,
            "not stamped: the folder name is not a valid agent id; rename the folder first",
        ));
    }
    let after = card::stamp(text).map_err(|e| blocked(&path, format!("not stamped: {e}")))?;
    Ok(Some(Change {
        action: Action::StampCard,
        path,
        detail: format!("{citizen}: {} -> content_hash", state.as_str()),
        before: Some(text.to_string()),
        after,
    }))
}

/// One file a backup accounts for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManifestEntry {
    /// Relative to `_polis/` (and to the backup folder, where its old copy is).
    pub path: String,
    /// Whether the file existed before the migration (then the backup holds its copy; if not,
    /// rolling back removes it).
    pub existed_before: bool,
    /// SHA-256 of what the migration wrote, so a rollback can tell the migration's bytes from a
    /// later edit. polisd's addition; the reference reads past it, and its own manifests lack it.
    pub written: Option<String>,
}

impl ManifestEntry {
    /// The entry for a planned change.
    pub fn of(change: &Change) -> ManifestEntry {
        ManifestEntry {
            path: change.path.clone(),
            existed_before: change.before.is_some(),
            written: Some(format!("sha256:{}", sha256_hex(change.after.as_bytes()))),
        }
    }
}

/// The manifest's text: PyYAML's `safe_dump(entries, sort_keys=False)`, as the reference
/// writes it, with `written` after its two keys.
pub fn manifest_text(entries: &[ManifestEntry]) -> Result<String, EmitError> {
    let key = |k: &str| Value::Str(k.to_string());
    let list = entries
        .iter()
        .map(|e| {
            let mut m: Mapping = [
                (key("path"), Value::Str(e.path.clone())),
                (key("existed_before"), Value::Bool(e.existed_before)),
            ]
            .into_iter()
            .collect();
            if let Some(written) = &e.written {
                m.insert(key("written"), Value::Str(written.clone()));
            }
            Value::Map(m)
        })
        .collect();
    yaml::dump(
        &Value::Seq(list),
        &DumpOptions {
            sort_keys: false,
            allow_unicode: false,
        },
    )
}

/// Reads a manifest. Refuses any path a migration never writes, so a damaged or foreign
/// manifest cannot make a rollback touch other files.
pub fn parse_manifest(text: &str) -> Result<Vec<ManifestEntry>, String> {
    let items = match yaml::load(text) {
        Ok(Value::Seq(items)) => items,
        Ok(Value::Null) => Vec::new(),
        Ok(_) => return Err("it is not a list of files".to_string()),
        Err(e) => return Err(format!("line {}: {}", e.line, e.message)),
    };
    items
        .iter()
        .map(|item| {
            let path = item
                .get("path")
                .as_str()
                .ok_or("an entry has no `path`")?
                .to_string();
            if !is_migrated_path(&path) {
                return Err(format!(
                    "it names `{path}`, which a migration never changes"
                ));
            }
            let existed_before = match item.get("existed_before") {
                Value::Bool(b) => *b,
                _ => return Err(format!("`{path}` has no true/false `existed_before`")),
            };
            let written = match item.get("written") {
                Value::Null => None,
                Value::Str(s) if s.starts_with("sha256:") => Some(s.clone()),
                _ => return Err(format!("`{path}` has a `written` that is not sha256:<hex>")),
            };
            Ok(ManifestEntry {
                path,
                existed_before,
                written,
            })
        })
        .collect()
}

/// `polis.yml` or a citizen's card: the only files a migration writes.
pub fn is_migrated_path(path: &str) -> bool {
    path == layout::POLIS_YML
        || path
            .strip_prefix("citizens/")
            .and_then(|rest| rest.strip_suffix("/capability_card.yml"))
            .is_some_and(layout::is_agent_id)
}

/// A backup folder's name: the reference's `%Y%m%d-%H%M%S`, in the polis's time; when that
/// name is taken (two migrations in one second), `-2`, `-3`… after it.
pub fn backup_name(now: chrono::NaiveDateTime, taken: &[String]) -> String {
    let base = now.format("%Y%m%d-%H%M%S").to_string();
    if !taken.contains(&base) {
        return base;
    }
    (2..)
        .map(|n| format!("{base}-{n}"))
        .find(|name| !taken.contains(name))
        .unwrap_or(base)
}

/// Every backup among folder names (others are ignored), newest first: by time stamp, a `-N`
/// suffix after the plain name. The first is the one the reference's rollback picks; the
/// order is the one in which repeated rollbacks undo migrations.
pub fn backups_newest_first(names: &[String]) -> Vec<&str> {
    let mut backups: Vec<_> = names
        .iter()
        .filter_map(|name| backup_order(name).map(|key| (key, name.as_str())))
        .collect();
    backups.sort_by(|a, b| b.cmp(a));
    backups.into_iter().map(|(_, name)| name).collect()
}

fn backup_order(name: &str) -> Option<(&str, u64)> {
    let (stamp, n) = match name.get(15..) {
        Some("") => (name, 1),
        Some(rest) => (&name[..15], rest.strip_prefix('-')?.parse().ok()?),
        None => return None,
    };
    let b = stamp.as_bytes();
    let digits = |r: std::ops::Range<usize>| b[r].iter().all(u8::is_ascii_digit);
    (b.len() == 15 && digits(0..8) && b[8] == b'-' && digits(9..15)).then_some((stamp, n))
}

/// What rolling back does to one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Undo {
    /// Put the backup's copy back.
    Restore,
    /// Remove a file the migration created.
    Remove,
    /// The file is already as it was before the migration.
    Unchanged,
}

/// The rollback of one file, and why it needs `--force` when it does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UndoStep {
    pub path: String,
    pub undo: Undo,
    /// Set when the file changed after the migration: undoing would lose that change.
    pub conflict: Option<String>,
}

/// Decides how to undo one manifest entry from the backup's copy and the file as it is now.
/// A file is put back only while it still holds what the migration wrote; anything else is a
/// change made since, which a rollback would lose, so it is a conflict.
pub fn undo_step(entry: &ManifestEntry, backup: Option<&str>, current: Option<&str>) -> UndoStep {
    let step = |undo, conflict: Option<&str>| UndoStep {
        path: entry.path.clone(),
        undo,
        conflict: conflict.map(str::to_string),
    };
    let as_migrated = |now: &str| {
        entry.written.as_deref() == Some(&format!("sha256:{}", sha256_hex(now.as_bytes())))
    };
    let unknown = "the backup does not record what the migration wrote (the reference's \
                   backups do not), so polisd cannot tell whether it was edited since";
    if entry.existed_before {
        let Some(backup) = backup else {
            return step(
                Undo::Restore,
                Some("the backup has no copy of it (the backup is incomplete)"),
            );
        };
        match current {
            Some(now) if now == backup => step(Undo::Unchanged, None),
            Some(now) if as_migrated(now) => step(Undo::Restore, None),
            Some(_) if entry.written.is_none() => step(Undo::Restore, Some(unknown)),
            Some(_) => step(Undo::Restore, Some("it was edited after the migration")),
            None => step(Undo::Restore, Some("it was removed after the migration")),
        }
    } else {
        match current {
            None => step(Undo::Unchanged, None),
            Some(now) if as_migrated(now) => step(Undo::Remove, None),
            Some(_) if entry.written.is_none() => step(Undo::Remove, Some(unknown)),
            Some(_) => step(
                Undo::Remove,
                Some("the migration created it and it was edited since"),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LEGACY_CARD: &str = "agent_id: claude-code-one\ncapability_tags:\n  py:\n    self_rating: 4\n\nsignature: \"claude-code-one:x:sha256:00\"\n";

    fn inputs<'a>(polis_yml: Read<'a>, cards: &[(&'a str, &'a str)]) -> Inputs<'a> {
        Inputs {
            polis_yml,
            cards: cards.iter().map(|(c, t)| (*c, Ok(*t))).collect(),
        }
    }

    #[test]
    fn an_old_polis_gets_polis_yml_then_its_cards_stamped() {
        let p = plan(&inputs(
            None,
            &[
                ("codex-agent-two", "agent_id: codex-agent-two\n"),
                ("claude-code-one", LEGACY_CARD),
            ],
        ));
        let got: Vec<(Action, &str, &str)> = p
            .changes
            .iter()
            .map(|c| (c.action, c.path.as_str(), c.detail.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                (
                    Action::WriteConfig,
                    "polis.yml",
                    "create polis.yml (schema v2)"
                ),
                (
                    Action::StampCard,
                    "citizens/claude-code-one/capability_card.yml",
                    "claude-code-one: legacy -> content_hash"
                ),
                (
                    Action::StampCard,
                    "citizens/codex-agent-two/capability_card.yml",
                    "codex-agent-two: unstamped -> content_hash"
                ),
            ]
        );
        assert!(p.blocked.is_empty());
        assert!(!p.changes[1].after.contains("signature"));
    }

    #[test]
    fn planning_over_the_result_plans_nothing() {
        let first = plan(&inputs(
            Some(Ok("schema_version: 1\n")),
            &[("claude-code-one", LEGACY_CARD)],
        ));
        let config = first.changes[0].after.clone();
        let card = first.changes[1].after.clone();
        let again = plan(&inputs(Some(Ok(&config)), &[("claude-code-one", &card)]));
        assert_eq!(again, Plan::default());
    }

    #[test]
    fn an_older_schema_version_line_is_spliced_and_comments_kept() {
        let text = "# our settings\nschema_version: 1   # old\ntimezone: '+02:00'\nrouting:\n  explore_rate: 0.2\n";
        let p = plan(&inputs(Some(Ok(text)), &[]));
        assert_eq!(p.changes.len(), 1);
        let c = &p.changes[0];
        assert_eq!(c.action, Action::UpdateConfig);
        assert_eq!(c.detail, "schema_version 1 -> 2");
        assert_eq!(
            c.after,
            "# our settings\nschema_version: 2\ntimezone: '+02:00'\nrouting:\n  explore_rate: 0.2\n"
        );
    }

    #[test]
    fn current_absent_and_float_schema_versions_need_nothing() {
        for text in [
            "schema_version: 2\n",
            "schema_version: 2.0\n",
            "timezone: UTC\n",
            "",
        ] {
            assert_eq!(
                plan(&inputs(Some(Ok(text)), &[])),
                Plan::default(),
                "{text:?}"
            );
        }
    }

    #[test]
    fn a_string_or_null_schema_version_is_raised() {
        for (text, was) in [
            ("schema_version: '2'\n", "2"),
            ("schema_version:\n", "None"),
        ] {
            let p = plan(&inputs(Some(Ok(text)), &[]));
            assert_eq!(p.changes[0].detail, format!("schema_version {was} -> 2"));
            assert_eq!(p.changes[0].after, "schema_version: 2\n");
        }
    }

    #[test]
    fn a_newer_schema_is_never_lowered() {
        let p = plan(&inputs(Some(Ok("schema_version: 3\n")), &[]));
        assert!(p.changes.is_empty());
        assert!(
            p.blocked[0].reason.contains("upgrade polisd"),
            "{:?}",
            p.blocked
        );
    }

    #[test]
    fn settings_polisd_cannot_splice_are_left_to_a_person() {
        for text in [
            "{schema_version: 1}\n",
            "schema_version: 1\nschema_version: 1\n",
            "schema_version: [1,\n  2]\n",
            "- a list\n",
            "schema_version: [unclosed\n",
        ] {
            let p = plan(&inputs(Some(Ok(text)), &[]));
            assert!(p.changes.is_empty(), "{text:?}: {p:?}");
            assert_eq!(p.blocked.len(), 1, "{text:?}");
        }
    }

    #[test]
    fn stamped_unverifiable_and_unreadable_cards() {
        let ok = card::stamp(LEGACY_CARD).unwrap();
        let p = plan(&inputs(
            Some(Ok("")),
            &[
                ("claude-code-one", &ok),
                ("codex-agent-two", "agent_id: [x\n"),
                ("Bad_Folder", "agent_id: x\n"),
            ],
        ));
        assert!(p.changes.is_empty(), "{p:?}");
        let paths: Vec<&str> = p.blocked.iter().map(|b| b.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "citizens/Bad_Folder/capability_card.yml",
                "citizens/codex-agent-two/capability_card.yml"
            ]
        );
        // A card edited after it was stamped is stamped again, as the reference does.
        let edited = ok.replace("self_rating: 4", "self_rating: 5");
        let p = plan(&inputs(Some(Ok("")), &[("claude-code-one", &edited)]));
        assert_eq!(
            p.changes[0].detail,
            "claude-code-one: mismatch -> content_hash"
        );
    }

    #[test]
    fn the_manifest_reads_like_the_references_and_back() {
        let entries = [
            ManifestEntry {
                path: "polis.yml".into(),
                existed_before: false,
                written: None,
            },
            ManifestEntry {
                path: "citizens/claude-code-one/capability_card.yml".into(),
                existed_before: true,
                written: Some(format!("sha256:{}", "a".repeat(64))),
            },
        ];
        let text = manifest_text(&entries).unwrap();
        assert!(text.starts_with(
            "- path: polis.yml\n  existed_before: false\n- path: citizens/claude-code-one/capability_card.yml\n  existed_before: true\n  written: sha256:aaaa"
        ), "{text}");
        assert_eq!(parse_manifest(&text).unwrap(), entries);
    }

    #[test]
    fn a_manifest_naming_other_files_is_refused() {
        for path in [
            "../x",
            "CONSTITUTION.md",
            "citizens/x/../../y/capability_card.yml",
            "/etc/passwd",
        ] {
            let text = format!("- path: {path}\n  existed_before: true\n");
            assert!(parse_manifest(&text).is_err(), "{path}");
        }
    }

    #[test]
    fn backup_names_and_the_latest() {
        let now = chrono::NaiveDate::from_ymd_opt(2026, 6, 5)
            .unwrap()
            .and_hms_opt(9, 8, 7)
            .unwrap();
        assert_eq!(backup_name(now, &[]), "20260605-090807");
        let taken = vec![
            "20260605-090807".to_string(),
            "20260605-090807-2".to_string(),
        ];
        assert_eq!(backup_name(now, &taken), "20260605-090807-3");
        let names: Vec<String> = [
            "20260605-090807-10",
            "20260605-090807-9",
            "20260101-000000",
            "notes",
            "20260605-0908",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(
            backups_newest_first(&names),
            ["20260605-090807-10", "20260605-090807-9", "20260101-000000"]
        );
        assert!(backups_newest_first(&["x".to_string()]).is_empty());
    }

    #[test]
    fn undo_restores_only_what_the_migration_left() {
        let stamped = "content_hash: x\n";
        let entry = |existed_before, written: Option<&str>| ManifestEntry {
            path: "citizens/claude-code-one/capability_card.yml".into(),
            existed_before,
            written: written.map(|w| format!("sha256:{}", sha256_hex(w.as_bytes()))),
        };
        let card = entry(true, Some(stamped));
        let old = Some("signature: y\n");
        assert_eq!(undo_step(&card, old, Some(stamped)).undo, Undo::Restore);
        assert_eq!(undo_step(&card, old, Some(stamped)).conflict, None);
        assert_eq!(undo_step(&card, old, old).undo, Undo::Unchanged);
        assert!(undo_step(&card, old, Some("edited\n")).conflict.is_some());
        assert!(undo_step(&card, old, None).conflict.is_some());
        assert!(undo_step(&card, None, Some(stamped)).conflict.is_some());
        assert!(undo_step(&entry(true, None), old, Some(stamped))
            .conflict
            .is_some());
        let created = entry(false, Some(stamped));
        assert_eq!(undo_step(&created, None, Some(stamped)).undo, Undo::Remove);
        assert_eq!(undo_step(&created, None, None).undo, Undo::Unchanged);
        assert!(undo_step(&created, None, Some("edited\n"))
            .conflict
            .is_some());
    }
}
