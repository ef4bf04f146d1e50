//! The arguments of what a running agent session asks: `prime`, `notices`, `inbox archive`,
//! `hooks …` and the hook entry point.

use super::{acting_id, Deferred, JsonPolisArg, PolisPath};
use clap::{Args, Subcommand};

/// The citizen a session acts as.
#[derive(Debug, Args, Clone)]
pub struct AsArg {
    /// The citizen id (default: $POLIS_CITIZEN).
    #[arg(long = "as", visible_alias = "by", env = "POLIS_CITIZEN", value_name = "ID", value_parser = acting_id)]
    pub citizen: String,
}

#[derive(Debug, Args)]
pub struct PrimeArgs {
    #[command(flatten)]
    pub path: PolisPath,
    #[command(flatten)]
    pub who: AsArg,
    /// A peek: record nothing. By default the notices shown become read and status.md gets
    /// `last_seen_event` (the newest chronicle line now seen) and `last_active`.
    #[arg(long)]
    pub no_mark_read: bool,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct NoticesArgs {
    #[command(flatten)]
    pub path: PolisPath,
    #[command(flatten)]
    pub who: AsArg,
    /// Only the notices not read yet.
    #[arg(long)]
    pub unread: bool,
    /// Mark the notices listed as read.
    #[arg(long)]
    pub mark_read: bool,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Subcommand)]
pub enum InboxCommand {
    /// Move read notices to inbox-archive.md.
    Archive(Deferred<InboxArchiveArgs>),
}

#[derive(Debug, Args)]
pub struct InboxArchiveArgs {
    #[command(flatten)]
    pub path: PolisPath,
    #[command(flatten)]
    pub who: AsArg,
    /// Only read notices older than this (`7d`, `12h`, `30m`, `0` for all read notices).
    #[arg(long, default_value = "7d")]
    pub older_than: String,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Subcommand)]
pub enum HooksCommand {
    /// Add polisd's hooks (primer at session start, new notices after tool calls) and the
    /// bridge pointers.
    Install(Deferred<HooksInstallArgs>),
    /// Remove exactly the hooks polisd added.
    Uninstall(Deferred<HooksTargetArgs>),
    /// Show which CLIs have polisd's hooks.
    Status(Deferred<JsonPolisArg>),
}

#[derive(Debug, Args)]
pub struct HooksTargetArgs {
    #[command(flatten)]
    pub path: PolisPath,
    /// Claude Code (`.claude/settings.json`).
    #[arg(long)]
    pub claude: bool,
    /// Codex CLI (`.codex/hooks.json`).
    #[arg(long)]
    pub codex: bool,
    /// Gemini CLI (`.gemini/settings.json`).
    #[arg(long)]
    pub gemini: bool,
    /// Aider (`.aider.conf.yml`): `load: .polis.aider`, which runs the primer at session start,
    /// and AGENTS.md under `read:`, for every session started at the project root.
    #[arg(long)]
    pub aider: bool,
    /// Every CLI above.
    #[arg(long)]
    pub all: bool,
    /// Print what would change and write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct HooksInstallArgs {
    #[command(flatten)]
    pub target: HooksTargetArgs,
    /// The citizen you are in each named CLI. Kept for you in polisd's per-user state, never in
    /// the settings files (teammates share those): a teammate installs as their own id.
    #[arg(long = "as", visible_alias = "by", value_name = "ID", value_parser = acting_id)]
    pub citizen: Option<String>,
    /// The polisd command the hooks run; refused when it is not on PATH (give an absolute path).
    #[arg(long, default_value = "polisd")]
    pub bin: String,
    /// Do not write the bridge pointers (CLAUDE.md, AGENTS.md, GEMINI.md, SKILL.md).
    #[arg(long)]
    pub no_bridge: bool,
}

#[derive(Debug, Args)]
pub struct HookArgs {
    /// claude, codex, gemini or aider.
    pub cli: String,
    /// prime (session start) or notices (after tool calls and between turns; not for aider).
    pub kind: String,
    /// The citizen id (default: $POLIS_CITIZEN, else the id `hooks install --as` recorded for
    /// this person and CLI).
    #[arg(long = "as", visible_alias = "by", value_name = "ID")]
    pub citizen: Option<String>,
    /// At most one notices check per this many seconds.
    #[arg(long, default_value_t = 60)]
    pub interval: u64,
}
