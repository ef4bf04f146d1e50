//! Installing polisd's session hooks into the agent CLIs' project settings, and the bridge
//! pointers (`CLAUDE.md`, `AGENTS.md`, `GEMINI.md`, `.agents/skills/polis-protocol/SKILL.md`).
//!
//! Each change is planned in full before anything is written: every settings file is read and
//! edited in memory (see [`crate::protocol::delivery::agent_hooks`]), and a file that is not valid JSON,
//! has an unexpected shape, is a link or is read-only refuses the whole command with nothing
//! written. Writes go through the project writer, which may write only those files, and replace
//! each file by compare-before-replace (a file edited meanwhile is not overwritten).

use crate::fs::snapshot;
use crate::fs::writer::{CompareOutcome, Writer};
use crate::protocol::delivery::agent_hooks::{self, Cli, ConfigError};
use std::path::Path;

/// The largest settings or pointer file polisd edits.
const MAX_FILE: u64 = 4 * 1024 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum HooksError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("{0}")]
    Unreadable(String),
    #[error("{path} is read-only; make it writable (`chmod u+w {path}`) or edit it by hand — polisd changed nothing")]
    ReadOnly { path: String },
    #[error("{path} is not valid TOML ({reason}); Codex cannot read it either — fix it, polisd changed nothing")]
    NotToml { path: String, reason: String },
    #[error("{path} changed while polisd was editing it; run the command again")]
    Changed { path: String },
    #[error(transparent)]
    Write(#[from] crate::fs::writer::WriteError),
}

/// One file change, planned.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Planned {
    /// Relative to the project root.
    pub path: String,
    /// What the change is, for people: `install claude hooks`, `add bridge section`, ….
    pub what: String,
    #[serde(skip)]
    pub before: Option<String>,
    #[serde(skip)]
    pub after: String,
    /// Remove the file instead: uninstall left nothing in a file install created (`{}`).
    pub remove: bool,
}

impl Planned {
    /// Whether applying it changes the file.
    pub fn changes(&self) -> bool {
        self.remove || self.before.as_deref() != Some(self.after.as_str())
    }

    fn new(path: &str, what: String, before: Option<String>, after: String) -> Planned {
        Planned {
            path: path.to_string(),
            what,
            before,
            after,
            remove: false,
        }
    }
}

fn read(project_root: &Path, rel: &str) -> Result<Option<String>, HooksError> {
    snapshot::read_text(project_root, rel, Some(MAX_FILE))
        .map_err(|f| HooksError::Unreadable(format!("{}: {}", f.path, f.message)))
}

/// Refuses a file that exists without any write permission bit (root included: the bits
/// say what the owner wants).
fn check_writable(project_root: &Path, rel: &str) -> Result<(), HooksError> {
    if let Ok(meta) = std::fs::symlink_metadata(project_root.join(rel)) {
        if meta.permissions().readonly() {
            return Err(HooksError::ReadOnly {
                path: rel.to_string(),
            });
        }
    }
    Ok(())
}

/// The install of polisd's hooks for `clis` (each file's new text).
pub fn plan_install(
    project_root: &Path,
    clis: &[Cli],
    bin: &str,
    citizen: Option<&str>,
) -> Result<Vec<Planned>, HooksError> {
    let mut out = Vec::new();
    for cli in clis {
        let rel = cli.settings_path();
        let before = read(project_root, rel)?;
        let after = agent_hooks::install(*cli, before.as_deref(), bin, citizen)?;
        out.push(Planned::new(
            rel,
            format!("install {} hooks", cli.display()),
            before,
            after,
        ));
    }
    Ok(out)
}

/// The removal of polisd's hooks for `clis`; files without polisd hooks are left out.
pub fn plan_uninstall(project_root: &Path, clis: &[Cli]) -> Result<Vec<Planned>, HooksError> {
    let mut out = Vec::new();
    for cli in clis {
        let rel = cli.settings_path();
        let before = read(project_root, rel)?;
        if let Some(after) = agent_hooks::uninstall(*cli, before.as_deref())? {
            let mut plan = Planned::new(
                rel,
                format!("remove {} hooks", cli.display()),
                before,
                after,
            );
            plan.remove = plan.after.trim() == "{}";
            out.push(plan);
        }
    }
    Ok(out)
}

/// The bridge pointers: polisd's marked section added to (or updated in) each pointer file, and
/// a `SKILL.md` where none exists (an existing one gets the section).
pub fn plan_bridge(project_root: &Path) -> Result<Vec<Planned>, HooksError> {
    let section = agent_hooks::bridge_section();
    let mut out = Vec::new();
    for rel in ["CLAUDE.md", "AGENTS.md", "GEMINI.md"] {
        let before = read(project_root, rel)?;
        let after = agent_hooks::upsert_section(before.as_deref(), &section);
        out.push(Planned::new(
            rel,
            "bridge pointer to _polis/CONSTITUTION.md".into(),
            before,
            after,
        ));
    }
    let rel = ".agents/skills/polis-protocol/SKILL.md";
    let before = read(project_root, rel)?;
    let after = match &before {
        Some(text) => agent_hooks::upsert_section(Some(text), &section),
        None => agent_hooks::skill_file(),
    };
    out.push(Planned::new(rel, "skill pointer".into(), before, after));
    Ok(out)
}

/// Writes the planned changes; refuses all of them (nothing written) when any target is
/// read-only. A file that changed since it was planned is not overwritten.
pub fn apply(project_root: &Path, plans: &[Planned]) -> Result<usize, HooksError> {
    for p in plans.iter().filter(|p| p.changes()) {
        check_writable(project_root, &p.path)?;
    }
    let writer = Writer::for_project(project_root)?;
    let mut written = 0;
    for p in plans.iter().filter(|p| p.changes()) {
        if p.remove {
            // Only the bytes planned from are removed; a file edited meanwhile stays.
            if read(project_root, &p.path)? != p.before {
                return Err(HooksError::Changed {
                    path: p.path.clone(),
                });
            }
            writer.remove(&p.path)?;
            written += 1;
            continue;
        }
        match &p.before {
            None => {
                if !writer.create_new(&p.path, p.after.as_bytes())? {
                    return Err(HooksError::Changed {
                        path: p.path.clone(),
                    });
                }
            }
            Some(before) => {
                match writer.compare_and_replace(&p.path, before.as_bytes(), p.after.as_bytes())? {
                    CompareOutcome::Written | CompareOutcome::Unchanged => {}
                    // Another process is writing it right now: the same answer as a change.
                    CompareOutcome::Conflict { .. } | CompareOutcome::NotSettled { .. } => {
                        return Err(HooksError::Changed {
                            path: p.path.clone(),
                        })
                    }
                }
            }
        }
        written += 1;
    }
    Ok(written)
}

/// What `hooks status` reports for one CLI.
#[derive(Debug, Clone, serde::Serialize)]
pub struct CliStatus {
    pub cli: &'static str,
    pub path: &'static str,
    pub exists: bool,
    /// polisd's hooks found, as (event, command).
    pub hooks: Vec<(String, String)>,
    /// Why the file could not be read, or a warning about the CLI's own settings.
    pub problems: Vec<String>,
}

/// polisd's hooks in each CLI's project settings.
pub fn status(project_root: &Path) -> Vec<CliStatus> {
    Cli::ALL
        .into_iter()
        .map(|cli| {
            let rel = cli.settings_path();
            let mut problems = Vec::new();
            let text = match read(project_root, rel) {
                Ok(t) => t,
                Err(e) => {
                    problems.push(e.to_string());
                    None
                }
            };
            let hooks = match agent_hooks::installed(cli, text.as_deref()) {
                Ok(h) => h,
                Err(e) => {
                    problems.push(e.to_string());
                    Vec::new()
                }
            };
            if cli == Cli::Codex {
                match codex_features(project_root) {
                    Ok(warnings) => problems.extend(warnings),
                    Err(e) => problems.push(e.to_string()),
                }
            }
            CliStatus {
                cli: cli.as_str(),
                path: rel,
                exists: text.is_some(),
                hooks,
                problems,
            }
        })
        .collect()
}

/// Codex turns hooks off with `[features] hooks = false` (or the older `codex_hooks`) in
/// `.codex/config.toml`; say so rather than report hooks that never run. A config that is not
/// TOML is an error: installing hooks Codex cannot load would only hide the problem.
pub fn codex_features(project_root: &Path) -> Result<Vec<String>, HooksError> {
    let rel = ".codex/config.toml";
    let Some(text) = read(project_root, rel)? else {
        return Ok(Vec::new());
    };
    let value: toml::Table = toml::from_str(&text).map_err(|e| HooksError::NotToml {
        path: rel.to_string(),
        reason: e.message().to_string(),
    })?;
    let features = value.get("features").and_then(|f| f.as_table());
    let off =
        |key: &str| features.and_then(|f| f.get(key)).and_then(|v| v.as_bool()) == Some(false);
    Ok(if off("hooks") || off("codex_hooks") {
        vec![format!(
            "{rel} sets `[features] hooks = false`: Codex runs no hooks until it is removed"
        )]
    } else {
        Vec::new()
    })
}
