//! Installing polisd's session hooks into the agent CLIs' project settings, the bridge
//! pointers (`CLAUDE.md`, `AGENTS.md`, `GEMINI.md`, `.agents/skills/polis-protocol/SKILL.md`),
//! and Aider's `read:` entry for `AGENTS.md` with its `load:` command file, which runs the
//! primer (Aider has no hooks; see [`crate::protocol::delivery::aider`]).
//!
//! Each change is planned in full before anything is written: every settings file is read and
//! edited in memory (see [`crate::protocol::delivery::agent_hooks`]), and a file that is not valid JSON,
//! has an unexpected shape, is a link or is read-only refuses the whole command with nothing
//! written. Writes go through the project writer, which may write only those files, and replace
//! each file by compare-before-replace (a file edited meanwhile is not overwritten).

use crate::fs::snapshot;
use crate::fs::writer::{CompareOutcome, Writer};
use crate::protocol::delivery::agent_hooks::{self, Cli, ConfigError};
use crate::protocol::delivery::aider::{self, AiderConfigError};
use crate::protocol::delivery::settings_check;
use std::path::Path;

/// The largest settings or pointer file polisd edits.
const MAX_FILE: u64 = 4 * 1024 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum HooksError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Aider(#[from] AiderConfigError),
    #[error("{0}")]
    Unreadable(String),
    /// A file the CLI refuses, which polisd will not edit until a person fixes it.
    #[error("{0}")]
    Refused(String),
    #[error("{path} is read-only; make it writable (`chmod u+w {path}`) or edit it by hand — polisd changed nothing")]
    ReadOnly { path: String },
    #[error("{path} is not valid TOML ({reason}); Codex cannot read it either — fix it, polisd changed nothing")]
    NotToml { path: String, reason: String },
    #[error("{path} changed while polisd was editing it; run the command again")]
    Changed { path: String },
    #[error(transparent)]
    Write(#[from] crate::fs::writer::WriteError),
    #[error("the hooks would run `{bin}`, which is not an executable file or on PATH (the agent CLI would fail with exit 127); install polisd there or pass --bin /absolute/path/to/polisd — polisd changed nothing")]
    NoBinary { bin: String },
    #[error("`{bin}` is not named `polisd`: polisd knows its own hooks in the shared settings files by that name (for `hooks status`, `hooks uninstall` and the next `hooks install`, on every teammate's machine), so these could never be found again; link it under that name (`ln -s {link} ~/.local/bin/polisd`) and pass that path — polisd changed nothing")]
    NotNamedPolisd {
        bin: String,
        /// `bin` as one shell word, for the command the message suggests.
        link: String,
    },
    #[error(transparent)]
    State(#[from] crate::fs::state::StateError),
    #[error("{path} exists and is not the command file polisd writes for Aider; move it away (or remove it) and run this again — polisd changed nothing")]
    ForeignLoadFile { path: String },
}

/// What a planned change is to polisd's per-user record of the settings files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recorded {
    /// Not a settings file (a bridge pointer).
    No,
    /// Hooks installed: remember the text before, to give it back on uninstall.
    Install,
    /// Hooks removed: forget it.
    Uninstall,
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
    /// Remove the file instead: polisd created it, and uninstall found it as polisd wrote it.
    pub remove: bool,
    #[serde(skip)]
    pub recorded: Recorded,
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
            recorded: Recorded::No,
        }
    }
}

/// The `_polis/` folder of a project, whose state folder keeps the per-user records.
fn polis_of(project_root: &Path) -> std::path::PathBuf {
    project_root.join(crate::protocol::layout::POLIS_DIR)
}

fn sha256(text: &str) -> String {
    crate::protocol::digest::sha256_hex(text.as_bytes())
}

/// Where `bin` is, as a shell would find it: a path with a `/` as it is, a bare name on `PATH`;
/// `None` when there is no executable file there.
pub fn resolve_binary(bin: &str) -> Option<std::path::PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let executable = |p: &Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if bin.contains('/') {
        let p = Path::new(bin);
        return executable(p).then(|| p.to_path_buf());
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(bin))
        .find(|p| executable(p))
}

fn read(project_root: &Path, rel: &str) -> Result<Option<String>, HooksError> {
    snapshot::read_text(project_root, rel, Some(MAX_FILE))
        .map_err(|f| HooksError::Unreadable(format!("{}: {}", f.path, f.message)))
}

/// A file outside the project (the person's own settings, an absolute `load:`), read within
/// bounds: a regular file, its links followed as the CLI follows them, never a named pipe or a
/// device, which would hold the command forever (opened without blocking, then checked).
fn read_outside(path: &Path) -> Option<String> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .ok()?;
    if !file.metadata().ok()?.is_file() {
        return None;
    }
    let mut text = String::new();
    file.take(MAX_FILE).read_to_string(&mut text).ok()?;
    Some(text)
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
) -> Result<Vec<Planned>, HooksError> {
    if !clis.is_empty() {
        check_binary(bin)?;
    }
    let mut out = Vec::new();
    for cli in clis {
        let rel = cli.settings_path();
        let before = read(project_root, rel)?;
        if let Some(line) = settings_check::refused_edit(*cli, rel, before.as_deref()) {
            return Err(HooksError::Refused(format!(
                "{line} — polisd changed nothing"
            )));
        }
        let after = agent_hooks::install(*cli, before.as_deref(), bin)?;
        let mut plan = Planned::new(
            rel,
            format!("install {} hooks", cli.display()),
            before,
            after,
        );
        plan.recorded = Recorded::Install;
        out.push(plan);
    }
    Ok(out)
}

/// Refuses a `bin` the hooks could not run, or that polisd would not know again as its own.
fn check_binary(bin: &str) -> Result<(), HooksError> {
    if resolve_binary(bin).is_none() {
        return Err(HooksError::NoBinary { bin: bin.into() });
    }
    // The same test that finds them again later: a hook it would not know as polisd's would
    // be added a second time by every install and left behind by status and uninstall.
    let command = agent_hooks::command(bin, Cli::Claude, agent_hooks::HookKind::Prime);
    if agent_hooks::our_binary(&command, Cli::Claude).is_none() {
        return Err(HooksError::NotNamedPolisd {
            bin: bin.into(),
            link: crate::protocol::delivery::agent_hooks::shell_word(bin),
        });
    }
    Ok(())
}

/// Aider's config with `AGENTS.md` under `read:` and `load:` naming polisd's command file, and
/// that file, so every Aider session started at the project root reads the bridge pointer and
/// has the primer before its first turn.
pub fn plan_aider_install(project_root: &Path, bin: &str) -> Result<Vec<Planned>, HooksError> {
    check_binary(bin)?;
    let rel = aider::CONFIG_PATH;
    let before = read(project_root, rel)?;
    let after = aider::with_load(Some(&aider::with_bridge(before.as_deref())?))?;
    let mut config = Planned::new(
        rel,
        format!(
            "Aider reads {} and loads {} at session start",
            aider::BRIDGE_FILE,
            aider::LOAD_FILE
        ),
        before,
        after,
    );
    config.recorded = Recorded::Install;
    let rel = aider::LOAD_FILE;
    let before = read(project_root, rel)?;
    if let Some(text) = &before {
        // Only polisd's own file is rewritten (another binary's command, say): anything a
        // person added is theirs.
        if !aider::is_polisd_load_file(text) {
            return Err(HooksError::ForeignLoadFile { path: rel.into() });
        }
    }
    let file = Planned::new(
        rel,
        "Aider's session-start commands: the primer".into(),
        before,
        aider::load_file(bin),
    );
    Ok(vec![config, file])
}

/// The removal of polisd's hooks for `clis`, and of Aider's `read:` entry when `with_aider`;
/// files without them are left out.
pub fn plan_uninstall(
    project_root: &Path,
    clis: &[Cli],
    with_aider: bool,
) -> Result<Vec<Planned>, HooksError> {
    let mut out = Vec::new();
    for cli in clis {
        let what = format!("remove {} hooks", cli.display());
        let plan = plan_removal(project_root, cli.settings_path(), what, |before| {
            Ok(agent_hooks::uninstall(*cli, before)?)
        })?;
        out.extend(plan);
    }
    if with_aider {
        let what = format!(
            "Aider no longer reads {} nor loads {}",
            aider::BRIDGE_FILE,
            aider::LOAD_FILE
        );
        out.extend(plan_removal(
            project_root,
            aider::CONFIG_PATH,
            what,
            |before| {
                let read = aider::without_bridge(before)?;
                let load = aider::without_load(read.as_deref().or(before))?;
                Ok(load.or(read))
            },
        )?);
        // The command file goes when it is as polisd writes it; lines a person added keep it.
        let rel = aider::LOAD_FILE;
        if let Some(text) = read(project_root, rel)? {
            if aider::is_polisd_load_file(&text) {
                let mut plan = Planned::new(
                    rel,
                    "Aider's session-start commands".into(),
                    Some(text),
                    String::new(),
                );
                plan.remove = true;
                out.push(plan);
            }
        }
    }
    Ok(out)
}

/// Taking back what polisd added to the file `rel`: the bytes from before its first install
/// when the file is as polisd left it, else `edit`'s text without polisd's part (`None`: the
/// file holds none).
fn plan_removal(
    project_root: &Path,
    rel: &str,
    what: String,
    edit: impl FnOnce(Option<&str>) -> Result<Option<String>, HooksError>,
) -> Result<Option<Planned>, HooksError> {
    let before = read(project_root, rel)?;
    let record = crate::fs::state::install_record(&polis_of(project_root), rel)
        .filter(|r| before.as_deref().map(sha256).as_ref() == Some(&r.written_sha256));
    let mut plan = match (record, edit(before.as_deref())?) {
        (Some(record), _) => {
            let mut plan = Planned::new(
                rel,
                what,
                before,
                record.original.clone().unwrap_or_default(),
            );
            plan.remove = record.original.is_none();
            plan
        }
        (None, Some(after)) => Planned::new(rel, what, before, after),
        (None, None) => return Ok(None),
    };
    plan.recorded = Recorded::Uninstall;
    Ok(Some(plan))
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
    for p in plans {
        remember(project_root, p)?;
    }
    Ok(written)
}

/// Keeps (or drops) the per-user record of a settings file polisd edited: what it wrote and
/// what was there before polisd's first install, so uninstall can give those bytes back.
fn remember(project_root: &Path, p: &Planned) -> Result<(), HooksError> {
    let polis = polis_of(project_root);
    match p.recorded {
        Recorded::No => {}
        Recorded::Uninstall => crate::fs::state::set_install_record(&polis, &p.path, None)?,
        Recorded::Install => {
            let earlier = crate::fs::state::install_record(&polis, &p.path);
            let original = match earlier {
                // Installed over polisd's own earlier write: the original is still the first.
                Some(r) if p.before.as_deref().map(sha256) == Some(r.written_sha256.clone()) => {
                    r.original
                }
                // Unchanged and never recorded (hooks a teammate committed): nothing to keep.
                _ if !p.changes() => return Ok(()),
                _ => p.before.clone(),
            };
            let record = crate::fs::state::InstallRecord {
                written_sha256: sha256(&p.after),
                original,
            };
            crate::fs::state::set_install_record(&polis, &p.path, Some(record))?;
        }
    }
    Ok(())
}

/// What `hooks status` reports for one CLI.
#[derive(Debug, Clone, serde::Serialize)]
pub struct CliStatus {
    pub cli: &'static str,
    pub path: &'static str,
    pub exists: bool,
    /// polisd's hooks found, as (event, command).
    pub hooks: Vec<(String, String)>,
    /// The files the CLI reads into every session for polisd (Aider's `read:` entry).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub reads: Vec<String>,
    /// The team's own `load:` file, which does not run polisd's primer (Aider takes one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub foreign_load: Option<String>,
    /// The citizen the hooks act as for this person, and where that comes from.
    pub citizen: Option<String>,
    /// Every reason polisd's hooks will not fire, or not as someone: an unreadable file, a
    /// missing binary, hooks switched off, no or a wrong citizen id.
    pub problems: Vec<String>,
}

/// The settings texts besides the project file in which `cli` can switch hooks off: its
/// project-local and user files (the user's from `$HOME`).
fn other_settings(cli: Cli) -> Vec<(String, Option<std::path::PathBuf>)> {
    let home = user_home();
    let user = |rel: &str| {
        home.as_ref()
            .map(|h| (format!("~/{rel}"), Some(h.join(rel))))
    };
    match cli {
        Cli::Claude => [
            Some((".claude/settings.local.json".to_string(), None)),
            user(".claude/settings.json"),
        ]
        .into_iter()
        .flatten()
        .collect(),
        Cli::Gemini => user(".gemini/settings.json").into_iter().collect(),
        Cli::Codex => Vec::new(),
    }
}

/// The citizen id `cli`'s hooks of this person resolve to (as `polisd hook` resolves it,
/// short of an `--as` in the command): `$POLIS_CITIZEN`, else the id `hooks install --as`
/// recorded.
pub fn identity(polis_root: &Path, cli: Cli) -> Option<String> {
    identity_of(polis_root, cli.as_str())
}

/// [`identity`] for the hook `name` (a CLI's name, or `aider`).
pub fn identity_of(polis_root: &Path, name: &str) -> Option<String> {
    std::env::var("POLIS_CITIZEN")
        .ok()
        .filter(|c| !c.trim().is_empty())
        .or_else(|| crate::fs::state::hook_identity(polis_root, name))
}

/// polisd's hooks in each CLI's project settings and Aider's `read:` entry, and every reason
/// they would not reach a session.
pub fn status(project_root: &Path) -> Vec<CliStatus> {
    let mut rows = hook_status(project_root);
    rows.push(aider_status(project_root));
    rows
}

/// Whether Aider reads the bridge pointer and runs polisd's primer from its `load:` file (or
/// the team's own), and why it would not.
fn aider_status(project_root: &Path) -> CliStatus {
    let rel = aider::CONFIG_PATH;
    let mut problems = Vec::new();
    let text = read(project_root, rel).unwrap_or_else(|e| {
        problems.push(e.to_string());
        None
    });
    let reads = match aider::reads_bridge(text.as_deref()) {
        Ok(true) => vec![aider::BRIDGE_FILE.to_string()],
        Ok(false) => Vec::new(),
        Err(e) => {
            problems.push(e.to_string());
            Vec::new()
        }
    };
    if !reads.is_empty() {
        let pointer = read(project_root, aider::BRIDGE_FILE).ok().flatten();
        if !pointer.is_some_and(|t| t.contains(agent_hooks::BRIDGE_START)) {
            problems.push(format!(
                "Aider reads {}, which has no polisd bridge section: run `polisd hooks install --aider`",
                aider::BRIDGE_FILE
            ));
        }
    }
    problems.extend(aider_refusals(text.as_deref()));
    let load = aider::load_of(text.as_deref()).unwrap_or(aider::Load::None);
    let file = match &load {
        aider::Load::None => None,
        aider::Load::Ours => Some(aider::LOAD_FILE.to_string()),
        aider::Load::Other(file) => Some(file.clone()),
    };
    // Aider opens it from the folder it starts in: the project root.
    let command = file.as_ref().and_then(|f| {
        let path = Path::new(f);
        let text = if path.is_absolute() {
            read_outside(path)
        } else {
            read(project_root, f).ok().flatten()
        };
        text.as_deref().and_then(aider::runs_primer)
    });
    let mut foreign_load = None;
    match (&load, &command) {
        (aider::Load::Ours, None) => problems.push(format!(
            "{rel} loads {}, which does not run polisd's primer (missing or edited): run `polisd hooks install --aider`",
            aider::LOAD_FILE
        )),
        (aider::Load::Other(f), None) => {
            foreign_load = Some(f.clone());
            // Only a problem where polisd was meant to reach Aider sessions.
            if !reads.is_empty() {
                problems.push(format!(
                    "{rel} loads {f}, the team's file, which does not run polisd's primer: add the line `/run polisd hook aider prime` to it"
                ));
            }
        }
        _ => {}
    }
    let polis = polis_of(project_root);
    let mut citizen = identity_of(&polis, aider::HOOK_NAME);
    let hooks: Vec<(String, String)> = command
        .into_iter()
        .map(|c| ("load".to_string(), c))
        .collect();
    if !hooks.is_empty() {
        let bins = hooks.iter().filter_map(|(_, c)| {
            agent_hooks::hook_binary(c, aider::HOOK_NAME, &[agent_hooks::HookKind::Prime])
        });
        let runs = Runner {
            name: aider::HOOK_NAME,
            what: "the load file runs",
            fails: "",
            purpose: "Aider's primer",
        };
        let (who, why) = runs.acting_citizen(&polis, &hooks, bins, citizen);
        citizen = who;
        problems.extend(why);
    }
    CliStatus {
        cli: aider::HOOK_NAME,
        path: rel,
        exists: text.is_some(),
        hooks,
        reads,
        foreign_load,
        citizen,
        problems,
    }
}

/// Why Aider would start no session with the config `text`: each key that is no option of
/// the Aider polisd knows (0.86.2; a later one may take more, so the line says which), and
/// each value of a checked key that Aider refuses.
fn aider_refusals(text: Option<&str>) -> Vec<String> {
    let rel = aider::CONFIG_PATH;
    aider::unknown_options(text)
        .into_iter()
        .map(|key| format!(
            "{rel} has the key `{key}`, which is no option of Aider 0.86.2: that Aider stops at start (\"unrecognized arguments\"; a value with a space it takes for a file to create instead); remove or correct it, unless a later Aider takes it"
        ))
        .chain(aider::bad_values(text).into_iter().map(|b| {
            let at = b.line.map(|n| format!(" line {n}")).unwrap_or_default();
            format!(
                "{rel}{at}: Aider 0.86.2 stops at start on this value of `{}:` (\"{}\"), unless the command line sets it: {}",
                b.key, b.aider_says, b.fix
            )
        }))
        .collect()
}

/// What `hooks uninstall --aider` tells the person: the comments they wrote on (or among) the
/// lines polisd took out of the config, which went with those lines.
pub fn aider_uninstall_warnings(plans: &[Planned]) -> Vec<String> {
    let rel = aider::CONFIG_PATH;
    plans
        .iter()
        .filter(|p| p.path == rel && !p.remove)
        .filter_map(|p| {
            let dropped = aider::dropped_comments(p.before.as_deref()?, &p.after);
            let shown: Vec<String> = dropped.iter().map(|c| format!("`{c}`")).collect();
            match shown.len() {
                0 => None,
                1 => Some(format!(
                    "{rel}: your comment {} was on polisd's line, so it goes with it",
                    shown[0]
                )),
                _ => Some(format!(
                    "{rel}: your comments {} were on polisd's lines, so they go with them",
                    shown.join(", ")
                )),
            }
        })
        .collect()
}

/// What `hooks install --aider` warns of in the config it is about to write: the team's keys
/// it keeps that stop Aider at start.
pub fn aider_install_warnings(plans: &[Planned]) -> Vec<String> {
    plans
        .iter()
        .filter(|p| p.path == aider::CONFIG_PATH)
        .flat_map(|p| aider_refusals(Some(&p.after)))
        .collect()
}

fn hook_status(project_root: &Path) -> Vec<CliStatus> {
    let polis = polis_of(project_root);
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
            let mut citizen = identity(&polis, cli);
            if !hooks.is_empty() {
                let bins = hooks
                    .iter()
                    .filter_map(|(_, c)| agent_hooks::our_binary(c, cli));
                let runs = Runner {
                    name: cli.as_str(),
                    what: "the hooks run",
                    fails: ": they fail with exit 127",
                    purpose: "these hooks",
                };
                let (who, why) = runs.acting_citizen(&polis, &hooks, bins, citizen);
                citizen = who;
                problems.extend(why);
                problems.extend(agent_hooks::switched_off(cli, rel, text.as_deref()));
                let skipped = settings_check::skipped(cli, rel, text.as_deref());
                problems.extend(skipped.reasons);
                for (shown, path) in other_settings(cli) {
                    let other = match path {
                        Some(abs) => read_outside(&abs),
                        None => read(project_root, &shown).ok().flatten(),
                    };
                    problems.extend(agent_hooks::switched_off(cli, &shown, other.as_deref()));
                }
                // A file the CLI refuses whole runs no hook, trusted or not: one reason is enough.
                if !skipped.whole {
                    problems.extend(untrusted(project_root, cli, text.as_deref().unwrap_or("")));
                }
            }
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
                reads: Vec::new(),
                foreign_load: None,
                citizen,
                problems,
            }
        })
        .collect()
}

/// How the problems of installed hooks speak of them: the hook's `name` (a CLI's, or `aider`,
/// as `hooks install --NAME` takes it), what runs the binary, what a missing binary does, and
/// what the citizen id is for.
struct Runner {
    name: &'static str,
    what: &'static str,
    fails: &'static str,
    purpose: &'static str,
}

impl Runner {
    /// The citizen the installed `hooks` (running `bins`) act as, from `recorded` unless a
    /// command carries an id an older install wrote into it; and why they would fail or act as
    /// no citizen: a binary that is not there, no id, an id that is no citizen.
    fn acting_citizen(
        &self,
        polis: &Path,
        hooks: &[(String, String)],
        bins: impl Iterator<Item = String>,
        recorded: Option<String>,
    ) -> (Option<String>, Vec<String>) {
        let Runner {
            name,
            what,
            fails,
            purpose,
        } = self;
        let mut problems = Vec::new();
        let mut bins: Vec<String> = bins.collect();
        bins.dedup();
        for bin in bins.iter().filter(|b| resolve_binary(b).is_none()) {
            problems.push(format!(
                "{what} `{bin}`, which is not an executable file or on PATH{fails}; install polisd or run `polisd hooks install --{name} --bin /absolute/path/to/polisd`"
            ));
        }
        // An id an older install wrote into the command wins over the others.
        let citizen = hooks
            .iter()
            .find_map(|(_, c)| agent_hooks::written_id(c))
            .or(recorded);
        match &citizen {
            None => problems.push(format!(
                "no citizen id for {purpose}: run `polisd hooks install --{name} --as <your-id>` (kept for you, outside the repository) or set POLIS_CITIZEN"
            )),
            Some(id) => {
                if let Err(e) = crate::operations::session::check_citizen(polis, id) {
                    problems.push(e.to_string());
                }
            }
        }
        (citizen, problems)
    }
}

/// Records `citizen` as the id this person's hooks act as, for each of the hooks `names` (the
/// CLIs' names, `aider`), in polisd's per-user state (never in the project's files, which
/// teammates share).
pub fn set_identity(project_root: &Path, names: &[&str], citizen: &str) -> Result<(), HooksError> {
    for name in names {
        crate::fs::state::set_hook_identity(&polis_of(project_root), name, citizen)?;
    }
    Ok(())
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

/// Why `cli` will not run polisd's hooks in `hooks` (the project's settings text, as it is or
/// as install is about to write it) for this person: the trust the CLI asks before it runs a
/// project's hooks, which only the person can give. Said only for a CLI the person has run on
/// this machine (its folder in the home exists): a first session asks for the trust itself.
pub fn untrusted(project_root: &Path, cli: Cli, hooks: &str) -> Vec<String> {
    match cli {
        Cli::Claude => Vec::new(),
        Cli::Gemini => gemini_trust(project_root).into_iter().collect(),
        Cli::Codex => codex_trust(project_root, hooks),
    }
}

/// What `hooks install` warns of before writing `plans` for `clis`: the CLIs' own switches and
/// trust that would keep the hooks about to be written from running.
pub fn install_warnings(
    project_root: &Path,
    clis: &[Cli],
    plans: &[Planned],
) -> Result<Vec<String>, HooksError> {
    let mut out = Vec::new();
    for cli in clis {
        if *cli == Cli::Codex {
            out.extend(codex_features(project_root)?);
        }
        // Judged on the hooks file as it will be: Codex keys its trust by each handler's place.
        let planned = plans.iter().find(|p| p.path == cli.settings_path());
        // The team's part of the file, which install keeps, may make the CLI skip it all.
        if let Some(p) = planned {
            let skipped = settings_check::skipped(*cli, &p.path, Some(&p.after));
            out.extend(skipped.reasons);
            if skipped.whole {
                continue;
            }
        }
        out.extend(untrusted(
            project_root,
            *cli,
            planned.map_or("", |p| p.after.as_str()),
        ));
    }
    Ok(out)
}

/// The person's home (`$HOME`), where the CLIs keep their user settings.
fn user_home() -> Option<std::path::PathBuf> {
    std::env::var_os("HOME").map(std::path::PathBuf::from)
}

/// `path` with its links resolved, as the CLIs compare project paths; as given when it cannot
/// be resolved.
fn canonical(path: &Path) -> std::path::PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

/// Why Gemini CLI will not run this project's hooks for this person: the folder is not among
/// those they trusted (`~/.gemini/trustedFolders.json`, or `$GEMINI_CLI_TRUSTED_FOLDERS_PATH`).
fn gemini_trust(project_root: &Path) -> Option<String> {
    use crate::protocol::delivery::gemini_trust::{untrusted, TrustInputs};
    let home = user_home();
    let chosen = std::env::var_os("GEMINI_CLI_TRUSTED_FOLDERS_PATH").map(std::path::PathBuf::from);
    if chosen.is_none() && !home.as_ref().is_some_and(|h| h.join(".gemini").is_dir()) {
        return None;
    }
    let shown = chosen.as_ref().map_or_else(
        || "~/.gemini/trustedFolders.json".to_string(),
        |p| p.display().to_string(),
    );
    let record_path =
        chosen.or_else(|| home.as_ref().map(|h| h.join(".gemini/trustedFolders.json")));
    let read = |p: Option<std::path::PathBuf>| p.and_then(|p| read_outside(&p));
    let record = read(record_path);
    let user_settings = read(home.map(|h| h.join(".gemini/settings.json")));
    let env_trust = std::env::var("GEMINI_CLI_TRUST_WORKSPACE").ok();
    untrusted(
        &canonical(project_root),
        &TrustInputs {
            env_trust: env_trust.as_deref(),
            user_settings: user_settings.as_deref(),
            record: record.as_deref(),
            shown: &shown,
        },
        &canonical,
    )
}

/// Why Codex CLI will not run polisd's hooks in `hooks` (the project's `.codex/hooks.json`,
/// as it is or as install is about to write it) for this person: no trust recorded for them
/// in `$CODEX_HOME/config.toml` (by default `~/.codex/config.toml`), or switched off there; or
/// none for the project itself, without which Codex reads none of its `.codex/` files.
fn codex_trust(project_root: &Path, hooks: &str) -> Vec<String> {
    use crate::protocol::delivery::codex_trust::{project_untrusted, untrusted, TrustInputs};
    let (codex_home, shown) = match std::env::var_os("CODEX_HOME") {
        Some(home) => {
            let home = std::path::PathBuf::from(home);
            let shown = home.join("config.toml").display().to_string();
            (Some(home), shown)
        }
        None => (
            user_home().map(|h| h.join(".codex")),
            "~/.codex/config.toml".to_string(),
        ),
    };
    let Some(codex_home) = codex_home.filter(|h| h.is_dir()) else {
        return Vec::new();
    };
    let config = read_outside(&codex_home.join("config.toml"));
    let root = canonical(project_root);
    if let Some(line) = project_untrusted(config.as_deref(), &root, &shown, &canonical) {
        // The hooks' own review does not matter until Codex reads the project's folder.
        return vec![line];
    }
    let hooks_path = root.join(Cli::Codex.settings_path());
    untrusted(
        &TrustInputs {
            hooks,
            hooks_path: &hooks_path,
            config: config.as_deref(),
            shown: &shown,
        },
        &canonical,
    )
}
