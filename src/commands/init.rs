//! `polisd init`: scaffold a polis the reference accepts, never overwriting a file.

use crate::protocol::clock::{PolisTime, PolisZone};
use crate::protocol::layout;
use anyhow::{bail, Context};
use chrono::Datelike;
use std::path::Path;

/// What the founder told `init`.
#[derive(Debug, Clone)]
pub struct InitParams {
    pub agent_id: String,
    pub project_name: String,
    pub vendor: String,
    pub model: String,
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
    let id = &params.agent_id;
    let card = fill(include_str!("templates/capability_card.yml"));
    let card =
        crate::protocol::card::stamp(&card).context("stamping the founder's capability card")?;
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
        (
            "polis.yml".to_string(),
            fill(include_str!("templates/polis.yml")),
        ),
        (
            layout::ROUTING_STATS.to_string(),
            fill(include_str!("templates/routing_stats.yml")),
        ),
        (format!("citizens/{id}/capability_card.yml"), card),
        (
            format!("citizens/{id}/status.md"),
            fill(include_str!("templates/status.md")),
        ),
        (
            format!("citizens/{id}/inbox.md"),
            fill(include_str!("templates/inbox.md")),
        ),
        (
            format!("citizens/{id}/journal.md"),
            fill(include_str!("templates/journal.md")),
        ),
    ];
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

/// A YAML single-quoted scalar: always a string, whatever it looks like.
fn single_quoted(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
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

/// Writes the scaffold under `project_root/_polis/`, skipping files that exist. Returns the
/// paths created and the paths kept.
pub fn run(project_root: &Path, params: &InitParams) -> anyhow::Result<(Vec<String>, Vec<String>)> {
    let root = project_root.join("_polis");
    std::fs::create_dir_all(&root).with_context(|| format!("creating {}", root.display()))?;
    let zone = PolisZone::default();
    let files = scaffold(params, &PolisTime::system(zone))?;
    let writer = crate::fs::writer::Writer::new(&root)?;
    let (mut created, mut kept) = (Vec::new(), Vec::new());
    for (rel, content) in files {
        if writer.create_new(&rel, content.as_bytes())? {
            created.push(rel);
        } else {
            kept.push(rel);
        }
    }
    Ok((created, kept))
}
