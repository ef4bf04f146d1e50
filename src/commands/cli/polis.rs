//! The arguments of the commands over one polis: where it is, `activity`, `check`, `migrate`,
//! `route`, `tally`, `ready`, `reflect`, `verify`, `init` and `register`.

use super::{acting_id, contract_id, AgentOpts};
use clap::Args;
use std::path::PathBuf;

/// The polis a command works on: a positional PATH or `--polis PATH` (as the agents' commands
/// take it).
#[derive(Debug, Args, Clone, Default)]
pub struct PolisPath {
    /// Project root or `_polis/` folder (default: found from the working directory).
    #[arg(value_name = "PATH")]
    pub path: Option<PathBuf>,
    /// The same, as a flag.
    #[arg(
        long = "polis",
        visible_alias = "polis-root",
        value_name = "PATH",
        conflicts_with = "path"
    )]
    pub polis: Option<PathBuf>,
}

impl PolisPath {
    pub fn get(&self) -> Option<&std::path::Path> {
        self.polis.as_deref().or(self.path.as_deref())
    }
}

#[derive(Debug, Args)]
pub struct PolisArg {
    #[command(flatten)]
    pub path: PolisPath,
}

#[derive(Debug, Args)]
pub struct JsonPolisArg {
    #[command(flatten)]
    pub path: PolisPath,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ActivityArgs {
    #[command(flatten)]
    pub path: PolisPath,
    /// Keep printing what the daemon does (Ctrl-C stops).
    #[arg(short = 'f', long)]
    pub follow: bool,
    /// How many of the newest entries to show first.
    #[arg(short = 'n', long, default_value_t = 50)]
    pub lines: usize,
    /// Print JSON (one array; with -f, one object per line).
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    #[command(flatten)]
    pub polis: JsonPolisArg,
    /// First write polis.yml with every default setting when the polis has none (an existing
    /// polis.yml is kept as it is).
    #[arg(long)]
    pub write_config: bool,
}

#[derive(Debug, Args)]
pub struct MigrateArgs {
    #[command(flatten)]
    pub polis: JsonPolisArg,
    /// List every change (and what blocks one) and write nothing.
    #[arg(long, visible_alias = "plan")]
    pub dry_run: bool,
    /// Apply the migration: the default, accepted for the reference's spelling.
    #[arg(long, conflicts_with_all = ["dry_run", "rollback"])]
    pub apply: bool,
    /// Restore the newest backup in `_polis/.polis-backups/` with something left to undo:
    /// changed files go back to their copies, created files are removed. Run it again to undo
    /// the migration before.
    #[arg(long)]
    pub rollback: bool,
    /// With --rollback: restore even files edited after the migration (those edits are lost).
    #[arg(long, requires = "rollback")]
    pub force: bool,
}

#[derive(Debug, Args)]
pub struct RouteArgs {
    /// The open contract's id (its file name without `.md`).
    #[arg(value_parser = contract_id)]
    pub contract_id: String,
    #[command(flatten)]
    pub path: PolisPath,
    /// Show every candidate's score breakdown.
    #[arg(long)]
    pub explain: bool,
    /// Write the recommendation into the contract's routing block.
    #[arg(long)]
    pub apply: bool,
    /// Widen exploration when the tags' leaders are uncertain.
    #[arg(long)]
    pub adaptive: bool,
    /// Seed for the random draw, for reproducible picks.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Print JSON (the reference's `recommend()` keys).
    #[arg(long)]
    pub json: bool,
    /// The routing policy: posterior (default), epsilon-greedy (the reference's), ucb,
    /// thompson. Default: `routing.policy` in polis.yml.
    #[arg(long)]
    pub policy: Option<String>,
}

#[derive(Debug, Args)]
pub struct TallyArgs {
    #[command(flatten)]
    pub path: PolisPath,
    /// Decide but write nothing (no status edits, moves, chronicle lines or notices).
    #[arg(long)]
    pub dry_run: bool,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ReadyArgs {
    /// The citizen whose queue to list.
    #[arg(long = "as", visible_alias = "by", value_name = "ID", value_parser = acting_id)]
    pub citizen: String,
    #[command(flatten)]
    pub opts: AgentOpts,
}

#[derive(Debug, Args)]
pub struct ReflectArgs {
    #[command(flatten)]
    pub path: PolisPath,
    /// File the new proposals in amendments/proposed/ (default: only show them).
    #[arg(long)]
    pub apply: bool,
    /// How many contracts, lines or amendments make a pattern recurring.
    #[arg(long, default_value_t = crate::protocol::amendments::reflection::DEFAULT_MIN_EVIDENCE, value_name = "N")]
    pub min_evidence: usize,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct VerifyArgs {
    #[command(flatten)]
    pub path: PolisPath,
    /// Stamp a fresh content_hash on every card that lacks one or no longer matches.
    #[arg(long)]
    pub fix: bool,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct InitArgs {
    /// The project root; `_polis/` is created inside it.
    #[arg(default_value = ".")]
    pub project_root: PathBuf,
    /// The founding citizen's id (`^[a-z][a-z0-9-]{7,39}$`).
    #[arg(long)]
    pub agent_id: String,
    /// Human-readable project name (default: the folder's name).
    #[arg(long)]
    pub project_name: Option<String>,
    /// The founder's vendor (anthropic, openai, google, meta, mistral, other).
    #[arg(long, default_value = "other")]
    pub vendor: String,
    /// The founder's model identifier.
    #[arg(long, default_value = "unknown")]
    pub model: String,
    /// The agent CLI the founder works in (`claude code`, `codex`, `gemini cli`…): its card's
    /// `tool`.
    #[arg(long, default_value = "unknown")]
    pub tool: String,
    /// Also run `polisd git-setup`: register the merge driver for the chronicle, inboxes and
    /// routing_stats.yml in this git clone (offered when the project is a git repository).
    #[arg(long)]
    pub git_setup: bool,
    /// Do not write the bridge pointers (CLAUDE.md, AGENTS.md, GEMINI.md and
    /// .agents/skills/polis-protocol/SKILL.md at the project root).
    #[arg(long)]
    pub no_bridge: bool,
    /// Check everything and list the files that would be created; write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct RegisterArgs {
    /// The new citizen's id (`^[a-z][a-z0-9-]{7,39}$`).
    pub agent_id: String,
    #[command(flatten)]
    pub path: PolisPath,
    /// Its vendor (anthropic, openai, google, meta, mistral, other).
    #[arg(long)]
    pub vendor: String,
    /// Its model identifier.
    #[arg(long)]
    pub model: String,
    /// The agent CLI it works in (`claude code`, `codex`, `gemini cli`…): its card's `tool`.
    #[arg(long, default_value = "unknown")]
    pub tool: String,
    /// Capability tags with self-ratings 1-5: `python:4,docs:3`, or the flag once a tag
    /// (`--tags python:4 --tags docs:3`).
    #[arg(long, required = true, value_name = "TAG:RATING,…")]
    pub tags: Vec<String>,
    /// Its relative cost: low, medium or high.
    #[arg(long, default_value = "medium")]
    pub cost: String,
    /// Check and list what would be written; write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}
