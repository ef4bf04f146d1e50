//! `polisd init`: scaffold a polis the reference accepts, never overwriting a file.

use crate::commands::Usage;
use crate::protocol::citizens::register::{single_quoted, NewCitizen};
use crate::protocol::clock::{PolisTime, PolisZone};
use crate::protocol::layout;
use anyhow::{bail, Context};
use chrono::Datelike;
use std::path::{Path, PathBuf};

/// A new polis's `polis.yml`: the protocol settings (schema v2) with their defaults, the
/// values the reference's `write_config` writes, plus polisd's `timezone`.
pub const POLIS_YML: &str = crate::protocol::settings::NEW_FILE;

/// What the founder told `init`.
#[derive(Debug, Clone)]
pub struct InitParams {
    pub agent_id: String,
    pub project_name: String,
    pub vendor: String,
    pub model: String,
    /// The founder's agent CLI (the card's `tool`).
    pub tool: String,
}

/// The founding citizen, with the one tag a fresh card rates.
fn founder(params: &InitParams) -> NewCitizen {
    NewCitizen {
        agent_id: params.agent_id.clone(),
        vendor: params.vendor.clone(),
        model: params.model.clone(),
        tool: params.tool.clone(),
        tags: vec![("general-reasoning".to_string(), 3)],
        cost: "medium".to_string(),
    }
}

/// The files of a new polis, relative to `_polis/`, with their contents. Pure: the caller
/// decides which of them to write.
pub fn scaffold(params: &InitParams, time: &PolisTime) -> anyhow::Result<Vec<(String, String)>> {
    if !layout::is_agent_id(&params.agent_id) {
        bail!(
            "`{}` is not a valid agent id: use 8 to 40 lowercase letters, digits and hyphens, \
             starting with a letter (for example `claude-code-1`)",
            params.agent_id
        );
    }
    let quarter = format!("{}-Q{}", time.now.year(), (time.now.month() - 1) / 3 + 1);
    let fill = |template: &str| {
        template
            .replace("{agent_id}", &params.agent_id)
            .replace("{project_name_yaml}", &single_quoted(&params.project_name))
            .replace("{project_name_note}", &note_text(&params.project_name))
            .replace("{project_name}", &params.project_name)
            .replace("{vendor}", &single_quoted(&params.vendor))
            .replace("{model}", &single_quoted(&params.model))
            .replace("{now}", &time.second_stamp())
            .replace("{minute}", &time.minute_stamp())
            .replace("{today}", &time.now.format("%Y-%m-%d").to_string())
            .replace("{quarter}", &quarter)
    };
    let citizen_files = founder(params)
        .files(time)
        .context("writing the founder's files")?;
    let mut files = vec![
        (
            "CONSTITUTION.md".to_string(),
            fill(include_str!("templates/CONSTITUTION.md")),
        ),
        (
            "README.md".to_string(),
            fill(include_str!("templates/README.md")),
        ),
        (
            "index.md".to_string(),
            fill(include_str!("templates/index.md")),
        ),
        (
            "chronicle.md".to_string(),
            fill(include_str!("templates/chronicle.md")),
        ),
        ("polis.yml".to_string(), fill(POLIS_YML)),
        (
            layout::ROUTING_STATS.to_string(),
            fill(include_str!("templates/routing_stats.yml")),
        ),
    ];
    files.extend(citizen_files);
    files.extend([(
        layout::CONTRACT_TEMPLATE.to_string(),
        fill(include_str!("templates/contract_TEMPLATE.md")),
    )]);
    for dir in [
        "contracts/open",
        "contracts/settled",
        "contracts/abandoned",
        "lessons",
        "reviews",
        "amendments/proposed",
        "amendments/ratified",
    ] {
        files.push((format!("{dir}/.gitkeep"), String::new()));
    }
    Ok(files)
}

/// Free text as a chronicle note: one line, no field separator.
fn note_text(text: &str) -> String {
    let one_line = text.replace(['\n', '\r'], " ").replace(" | ", " / ");
    if one_line.trim().is_empty() {
        "-".to_string()
    } else {
        one_line
    }
}

/// What `init` did (or, with `--dry-run`, would do).
#[derive(Debug, serde::Serialize)]
pub struct InitReport {
    pub polis: PathBuf,
    pub dry_run: bool,
    pub created: Vec<String>,
    pub kept: Vec<String>,
}

/// Checks everything `init` needs before anything is written: the id, the project root (it
/// must exist and be a folder; `init` creates only `_polis/` inside it), and `_polis/` itself
/// (a folder if present). Errors are usage errors.
pub fn validate(project_root: &Path, params: &InitParams) -> Result<(), Usage> {
    founder(params)
        .validate()
        .map_err(|e| Usage(format!("{e}; nothing was written")))?;
    // The name is written into headings (`# Constitution of …`, index.md's `# …`): a line
    // break there would write lines of structure of its own.
    if let Some((at, held)) = crate::protocol::input::line_break(&params.project_name) {
        return Err(Usage(format!(
            "the project name is one line, and --project-name holds {held} at character {at}: \
             write it on one line; nothing was written"
        )));
    }
    match std::fs::metadata(project_root) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => {
            return Err(Usage(format!(
                "{} is not a folder; pass the project root that should hold `_polis/`",
                project_root.display()
            )))
        }
        Err(_) => {
            return Err(Usage(format!(
                "the project root {} does not exist; create it first (`mkdir -p {}`), init \
                 creates only `_polis/` inside it",
                project_root.display(),
                project_root.display()
            )))
        }
    }
    let root = project_root.join("_polis");
    if let Ok(m) = std::fs::symlink_metadata(&root) {
        if !m.is_dir() {
            return Err(Usage(format!(
                "{} exists and is not a folder (a symbolic link or a file); nothing was written",
                root.display()
            )));
        }
    }
    Ok(())
}

/// Writes the scaffold under `project_root/_polis/`, skipping files that exist; with
/// `dry_run`, writes nothing and reports what it would create. Everything is checked first.
pub fn run(project_root: &Path, params: &InitParams, dry_run: bool) -> anyhow::Result<InitReport> {
    validate(project_root, params)?;
    let root = project_root.join("_polis");
    let zone = PolisZone::default();
    let files = scaffold(params, &PolisTime::system(zone))?;
    let mut report = InitReport {
        polis: root.clone(),
        dry_run,
        created: Vec::new(),
        kept: Vec::new(),
    };
    if dry_run {
        for (rel, _) in files {
            if root.join(&rel).exists() {
                report.kept.push(rel);
            } else {
                report.created.push(rel);
            }
        }
        return Ok(report);
    }
    std::fs::create_dir(&root)
        .or_else(|e| {
            if e.kind() == std::io::ErrorKind::AlreadyExists {
                Ok(())
            } else {
                Err(e)
            }
        })
        .with_context(|| format!("creating {}", root.display()))?;
    let writer = crate::fs::writer::Writer::new(&root)?;
    for (rel, content) in files {
        if writer.create_new(&rel, content.as_bytes())? {
            report.created.push(rel);
        } else {
            report.kept.push(rel);
        }
    }
    // A polis founded by someone else: this citizen joins it, as `register` would say.
    let card = layout::card_path(&params.agent_id).unwrap_or_default();
    if report.kept.iter().any(|r| r == layout::CHRONICLE) && report.created.contains(&card) {
        let now = PolisTime::system(crate::operations::session::polis_zone(&root));
        let line = founder(params).joined_line(&now);
        writer.append_locked(layout::CHRONICLE, line.as_bytes())?;
    }
    Ok(report)
}

/// Waits for the project folder's lock (racers with different state folders meet there),
/// then creates `_polis/` if it is missing (the transition lock is named after the folder, so
/// every racer must see the same one) and waits for the polis's transition lock, which the
/// other commands of this machine take.
fn take_turn(
    project_root: &Path,
    params: &InitParams,
) -> anyhow::Result<(
    crate::fs::locate::ProjectLock,
    crate::fs::state::TransitionLock,
)> {
    validate(project_root, params)?;
    let project = crate::fs::locate::lock_project(project_root)
        .with_context(|| format!("locking {}", project_root.display()))?;
    let root = project_root.join("_polis");
    match std::fs::create_dir(&root) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e).with_context(|| format!("creating {}", root.display())),
    }
    Ok((project, crate::fs::state::transition_lock(&root)?))
}

/// The project name made from a folder's name: a line break or a control character in it
/// (which the name may not hold, as `--project-name` may not) becomes a space, so a folder
/// named oddly gets a polis rather than a refusal about a flag nobody passed.
fn default_name(folder: &str) -> String {
    folder
        .split(|c: char| crate::protocol::input::line_break(&c.to_string()).is_some())
        .filter(|part| !part.trim().is_empty())
        .map(str::trim)
        .collect::<Vec<_>>()
        .join(" ")
}

/// `polisd init` from the command line: check, write (or not), print.
pub fn command(args: crate::commands::cli::InitArgs) -> anyhow::Result<u8> {
    let project_name = args.project_name.clone().unwrap_or_else(|| {
        std::fs::canonicalize(&args.project_root)
            .ok()
            .and_then(|p| p.file_name().map(|n| default_name(&n.to_string_lossy())))
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| "project".to_string())
    });
    let params = InitParams {
        agent_id: args.agent_id,
        project_name,
        vendor: args.vendor,
        model: args.model,
        tool: args.tool,
    };
    // `--git-setup` outside a repository is refused before anything is written.
    if args.git_setup && !crate::fs::git::inside_repo(&absolute(&args.project_root)) {
        return Err(crate::commands::Refused(format!(
            "{} is not inside a git repository; run `git init` first, or leave out \
             --git-setup (nothing was written)",
            args.project_root.display()
        ))
        .into());
    }
    // A bridge pointer polisd cannot edit (a link, a file it cannot read) refuses init before
    // the first write; it is planned again below, under the turn, for what it holds then.
    if !args.no_bridge && !args.dry_run {
        validate(&args.project_root, &params)?;
        crate::operations::agent_hooks::plan_bridge(&args.project_root)?;
    }
    // Racing inits in one folder (agents started at once) take turns: the first founds the
    // polis, each next one finds it and adds only its own citizen, and the pointer files
    // beside `_polis/` are edited one at a time rather than refused as changed under them.
    let _turn = if args.dry_run {
        None
    } else {
        Some(take_turn(&args.project_root, &params)?)
    };
    let report = run(&args.project_root, &params, args.dry_run)?;
    // The bridge pointers sit at the project root, beside `_polis/`: planned for a dry run too,
    // so that it lists every file `init` would write.
    let bridge = if args.no_bridge {
        Vec::new()
    } else {
        crate::operations::agent_hooks::plan_bridge(&args.project_root)?
    };
    let bridge_changes: Vec<_> = bridge.iter().filter(|p| p.changes()).collect();
    let git = if args.git_setup && !report.dry_run {
        let writer = crate::fs::writer::Writer::new(&report.polis)?;
        let program = std::env::current_exe()
            .map(|p| p.display().to_string())
            .unwrap_or_else(|_| "polisd".to_string());
        Some(crate::operations::sync::git_setup(
            &report.polis,
            &writer,
            &program,
        )?)
    } else {
        None
    };
    if !report.dry_run {
        // The protocol's skill points every agent CLI at the constitution; an existing file
        // keeps its text and gets (or updates) polisd's marked section.
        crate::operations::agent_hooks::apply(&args.project_root, &bridge)?;
    }
    if args.json {
        let mut v = serde_json::to_value(&report)?;
        if let Some(obj) = v.as_object_mut() {
            let listed: Vec<_> = bridge_changes
                .iter()
                .map(|p| {
                    serde_json::json!({
                        "path": p.path,
                        "action": if p.before.is_none() { "create" } else { "update" },
                    })
                })
                .collect();
            obj.insert("bridge".into(), serde_json::Value::Array(listed));
        }
        if let (Some(git), Some(obj)) = (&git, v.as_object_mut()) {
            obj.insert("git_setup".into(), serde_json::to_value(git)?);
        }
        println!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(0);
    }
    if report.dry_run {
        // The headline counts what the list below shows, the bridge pointers included.
        let bridge = match bridge_changes.len() {
            0 => String::new(),
            n => format!(", {n} bridge files to write at the project root"),
        };
        println!(
            "dry run: would initialise {}: {} files to create, {} already present and kept{bridge}; \
             nothing was written",
            report.polis.display(),
            report.created.len(),
            report.kept.len()
        );
        for rel in &report.created {
            println!("  create {rel}");
        }
        for p in &bridge_changes {
            let verb = if p.before.is_none() {
                "create"
            } else {
                "update"
            };
            println!("  {verb} ../{} (project root)", p.path);
        }
        if args.git_setup {
            println!("  create or update .gitattributes (git-setup; and merge.polisd.driver in git config)");
        }
    } else {
        println!(
            "initialised {}: {} files created, {} already present and kept",
            report.polis.display(),
            report.created.len(),
            report.kept.len()
        );
        // On an existing polis the few files added are the news (a new founder's card, a
        // missing folder); a fresh polis's full list would only repeat the scaffold.
        if !report.kept.is_empty() {
            for rel in &report.created {
                println!("  created {rel}");
            }
        }
    }
    for rel in &report.kept {
        println!("  kept {rel}");
    }
    if !report.dry_run {
        for p in &bridge_changes {
            println!(
                "  {} {}",
                if p.before.is_none() {
                    "wrote"
                } else {
                    "updated"
                },
                p.path
            );
        }
    }
    if let Some(git) = &git {
        println!(
            "{} merge.polisd.driver and {} {}: git merges the chronicle and the inboxes by line \
             id (run `polisd git-setup` once in every other clone; docs/sync.md)",
            if git.driver_written { "set" } else { "kept" },
            if git.gitattributes_written {
                "wrote"
            } else {
                "kept"
            },
            git.gitattributes
        );
    } else if !report.dry_run
        && crate::fs::git::inside_repo(&report.polis)
        // A citizen joining a clone that is already set up has nothing to run.
        && crate::fs::git::Repo::find(&report.polis)
            .and_then(|r| {
                r.config_get(&format!(
                    "merge.{}.driver",
                    crate::protocol::merge::DRIVER_NAME
                ))
            })
            .is_none()
    {
        println!(
            "this project is a git repository: run `polisd git-setup {}` so that git merges the \
             chronicle and the inboxes by line id (once in every clone; docs/sync.md)",
            args.project_root.display()
        );
    }
    if !report.dry_run {
        println!(
            "next: `polisd register ID --vendor V --model M --tool CLI --tags tag:rating` for each further \
             citizen, `polisd contract open --title T --as {}` to open a contract (or copy \
             contracts/TEMPLATE.md), and `polisd run` to keep the polis current",
            params.agent_id
        );
    }
    Ok(0)
}

/// `path` made absolute against the working directory (it may not exist yet), so its
/// ancestors include the folders above a relative path.
fn absolute(path: &std::path::Path) -> std::path::PathBuf {
    if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir()
            .map(|d| d.join(path))
            .unwrap_or_else(|_| path.to_path_buf())
    }
}
