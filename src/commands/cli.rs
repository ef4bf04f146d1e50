//! The command line: argument definitions grouped by topic, and the dispatch to commands.
//!
//! Exit codes: 0 success, 1 findings with errors or a failed action, 2 usage errors (clap's
//! own, and a PATH that is not a polis).

use clap::{ArgMatches, Args, FromArgMatches, Parser, Subcommand};
use std::path::PathBuf;

/// A subcommand's arguments (or its own subcommands), added to its `Command` only when clap
/// enters that subcommand (to parse it or print its help), or at once in [`whole_command`]. A
/// command builds its own arguments, not those of the sixty others: building the whole tree was
/// 18% of a small command's CPU (`perf` of `polisd contract show`).
#[derive(Debug, Clone)]
pub struct Deferred<T>(pub T);

impl<T: FromArgMatches> FromArgMatches for Deferred<T> {
    fn from_arg_matches(matches: &ArgMatches) -> Result<Self, clap::Error> {
        T::from_arg_matches(matches).map(Deferred)
    }

    fn from_arg_matches_mut(matches: &mut ArgMatches) -> Result<Self, clap::Error> {
        T::from_arg_matches_mut(matches).map(Deferred)
    }

    fn update_from_arg_matches(&mut self, matches: &ArgMatches) -> Result<(), clap::Error> {
        self.0.update_from_arg_matches(matches)
    }

    fn update_from_arg_matches_mut(&mut self, matches: &mut ArgMatches) -> Result<(), clap::Error> {
        self.0.update_from_arg_matches_mut(matches)
    }
}

impl<T: Args> Args for Deferred<T> {
    fn augment_args(cmd: clap::Command) -> clap::Command {
        deferred(cmd, T::augment_args, |cmd| {
            keeping_about(cmd, T::augment_args)
        })
    }

    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        deferred(cmd, T::augment_args_for_update, |cmd| {
            keeping_about(cmd, T::augment_args_for_update)
        })
    }

    fn group_id() -> Option<clap::Id> {
        T::group_id()
    }
}

/// `augment` applied to `cmd`, with the description the subcommand's variant gave it kept.
/// Undeferred, the variant's doc comment is set after the arguments are added, and so wins
/// over the doc comment of an argument struct (or one it flattens); deferred, the arguments
/// come last, so the variant's description is put back.
fn keeping_about(cmd: clap::Command, augment: fn(clap::Command) -> clap::Command) -> clap::Command {
    let about = cmd.get_about().cloned();
    let long_about = cmd.get_long_about().cloned();
    let cmd = augment(cmd);
    let Some(about) = about else {
        return cmd;
    };
    let cmd = cmd.about(about);
    match long_about {
        Some(long_about) => cmd.long_about(long_about),
        None => cmd.long_about(None::<&'static str>),
    }
}

impl<T: Subcommand> Subcommand for Deferred<T> {
    fn augment_subcommands(cmd: clap::Command) -> clap::Command {
        deferred(cmd, T::augment_subcommands, |cmd| {
            keeping_about(cmd, T::augment_subcommands)
        })
    }

    fn augment_subcommands_for_update(cmd: clap::Command) -> clap::Command {
        deferred(cmd, T::augment_subcommands_for_update, |cmd| {
            keeping_about(cmd, T::augment_subcommands_for_update)
        })
    }

    fn has_subcommand(name: &str) -> bool {
        T::has_subcommand(name)
    }
}

/// The whole command tree built as it was before [`Deferred`]: every subcommand's arguments
/// added at once, as the completions and the man page read it (clap's own `help` subcommand
/// mirrors the tree as it stands when the root is built, so nothing may wait to be added).
pub fn whole_command() -> clap::Command {
    use clap::CommandFactory as _;
    WHOLE.set(true);
    let cmd = super::help_map::grouped(Cli::command());
    WHOLE.set(false);
    cmd
}

thread_local! {
    /// Set while [`whole_command`] builds the tree on this thread.
    static WHOLE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// `augment` applied to `cmd` when it is used, or now when the whole tree is being built.
fn deferred(
    cmd: clap::Command,
    augment: fn(clap::Command) -> clap::Command,
    later: fn(clap::Command) -> clap::Command,
) -> clap::Command {
    if WHOLE.get() {
        augment(cmd)
    } else {
        cmd.defer(later)
    }
}

#[derive(Debug, Parser)]
#[command(
    name = "polisd",
    version = concat!(env!("CARGO_PKG_VERSION"), " (commit ", env!("POLISD_COMMIT"), ")"),
    about = "Keeps a Polis Protocol folder (_polis/) current while AI agents edit plain files",
    long_about = "polisd validates chronicle lines, rebuilds routing stats, tallies amendments, \
routes new contracts and writes inbox notifications for a _polis/ folder. Run `polisd run` as a \
service to do it continuously, or the one-shot commands below."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Report every finding in a polis (chronicle rules, unreadable files, bad records).
    #[command(visible_alias = "doctor")]
    Check(Deferred<CheckArgs>),
    /// Rebuild contracts/routing_stats.yml from the settled contracts.
    Reconcile(Deferred<JsonPolisArg>),
    /// Recommend a citizen for an open contract.
    Route(Deferred<RouteArgs>),
    /// Tally amendment votes; ratify, expire or reject by the quorum rules.
    Tally(Deferred<TallyArgs>),
    /// Find recurring friction in the polis's records and propose amendments that fix it.
    Reflect(Deferred<ReflectArgs>),
    /// Check capability cards' content_hash (tamper evidence).
    Verify(Deferred<VerifyArgs>),
    /// Summarize a polis: citizens, contracts, leaders, amendments, findings, daemon.
    Status(Deferred<JsonPolisArg>),
    /// Show what the daemon did to a polis, newest last, with the cause of each write.
    Activity(Deferred<ActivityArgs>),
    /// Scaffold a new polis with a founding citizen.
    Init(Deferred<InitArgs>),
    /// Bring a polis written by an older reference version up to date (backup first).
    ///
    /// Creates polis.yml (schema v2) or raises its schema_version, and stamps every capability
    /// card that lacks a current content_hash, as the reference's `polis migrate --apply`
    /// does. Every file about to change is first copied into `_polis/.polis-backups/<stamp>/`
    /// with a MANIFEST.yml; `--rollback` puts the newest backup back.
    Migrate(Deferred<MigrateArgs>),
    /// Add a citizen to a polis.
    ///
    /// Writes a stamped capability card, status, inbox, journal and its `joined polis`
    /// chronicle line.
    Register(Deferred<RegisterArgs>),
    /// Watch one or more polises and keep them current (the daemon); serves the dashboard.
    Run(Deferred<RunArgs>),
    /// Serve the dashboard for one polis (its pages and its console), without the daemon.
    Serve(Deferred<ServeArgs>),
    /// Write a self-contained snapshot of a polis (markdown or HTML), optionally redacted.
    Report(Deferred<ReportArgs>),
    /// Install, remove or inspect polisd as a user service (systemd or launchd).
    Service(Deferred<ServiceArgs>),
    /// Print, check or locate polisd's own configuration file.
    Config(Deferred<ConfigArgs>),
    /// Open, claim, settle, abandon, show and list contracts.
    #[command(subcommand)]
    Contract(Deferred<ContractCommand>),
    /// Propose, vote on and list amendments.
    #[command(subcommand)]
    Amendment(Deferred<AmendmentCommand>),
    /// Append one validated chronicle line.
    ///
    /// A wrong line is refused, with a corrected example.
    Log(Deferred<LogArgs>),
    /// File a lesson.
    #[command(subcommand)]
    Lesson(Deferred<LessonCommand>),
    /// Review a contract: write reviews/<stamp>-<cid>.md and announce the decision.
    Review(Deferred<ReviewArgs>),
    /// List what waits for a person (new citizens, deferred handoffs, chaining hints); answer.
    ///
    /// The person's decisions: `polisd queue` lists them, `polisd queue answer KEY accept|
    /// decline|later --by NAME` answers one (recorded in the chronicle).
    Queue(Deferred<QueueArgs>),
    /// Start, follow and write to a council review of a contract.
    ///
    /// Council review: several citizens deliberate on a contract in rounds, and a chairman
    /// writes a falsifiable verdict (start, status, write a member's contribution).
    #[command(subcommand)]
    Council(Deferred<CouncilCommand>),
    /// Print the context packet to read before starting a contract.
    Context(Deferred<ContextArgs>),
    /// Add and list guardrails (must-pass criteria inherited by new contracts).
    #[command(subcommand)]
    Guardrail(Deferred<GuardrailCommand>),
    /// List the contracts a citizen can start now.
    ///
    /// The contracts a citizen can start now: unowned, every dependency settled, no overlap
    /// with work in progress; recommended ones first, then by how much they unblock.
    Ready(Deferred<ReadyArgs>),
    /// Play a short scene on a temporary polis to show what polisd does.
    Demo(Deferred<DemoArgs>),
    /// Register polisd's merge driver in this clone's git config and _polis/.gitattributes.
    GitSetup(Deferred<GitSetupArgs>),
    /// git's merge driver for the chronicle, inboxes and routing_stats.yml (run by git).
    #[command(hide = true)]
    MergeDriver(Deferred<MergeDriverArgs>),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completions(Deferred<CompletionsArgs>),
    /// Print the manual page (roff), or write every command's page with --dir.
    ///
    /// `polisd man --dir ~/.local/share/man/man1` (docs/install.md).
    Man(Deferred<ManArgs>),
    /// Reserve project paths (files, folders or globs) so other citizens leave them alone.
    Reserve(Deferred<ReserveArgs>),
    /// Release paths you reserved (everything you hold when no PATH is given).
    Release(Deferred<ReleaseArgs>),
    /// List the reservations in `_polis/reservations.yml`: who holds what, until when.
    Reservations(Deferred<ReservationsArgs>),
    /// Measure polisd against alternatives on simulated worlds.
    #[command(subcommand)]
    Bench(Deferred<BenchCommand>),
    /// Print a citizen's session primer.
    ///
    /// Who it is, what is routed to it, its claims, votes and unread notices (at most about
    /// 6 KB).
    Prime(Deferred<PrimeArgs>),
    /// List a citizen's inbox notices, newest first; mark them read.
    Notices(Deferred<NoticesArgs>),
    /// Keep a citizen's inbox small.
    #[command(subcommand)]
    Inbox(Deferred<InboxCommand>),
    /// Install, remove or inspect the agent CLIs' session hooks.
    ///
    /// polisd's session hooks in the project settings of Claude Code, Codex CLI and Gemini
    /// CLI.
    #[command(subcommand)]
    Hooks(Deferred<HooksCommand>),
    /// What an installed hook runs: reads the agent CLI's JSON payload on stdin, prints what it
    /// adds to the session, and always exits 0.
    #[command(hide = true)]
    Hook(Deferred<HookArgs>),
    /// Serve the polis to an agent over MCP (stdio).
    Mcp(Deferred<PolisArg>),
}

/// The citizen a session acts as.
#[derive(Debug, Args, Clone)]
pub struct AsArg {
    /// The citizen id (default: $POLIS_CITIZEN).
    #[arg(long = "as", env = "POLIS_CITIZEN", value_name = "ID", value_parser = acting_id)]
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
    /// Aider, which has no hooks: lists AGENTS.md under `read:` in `.aider.conf.yml`, so every
    /// session started at the project root reads the bridge pointer.
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
    #[arg(long = "as", value_name = "ID", value_parser = acting_id)]
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
    /// claude, codex or gemini.
    pub cli: String,
    /// prime (session start) or notices (after tool calls and between turns).
    pub kind: String,
    /// The citizen id (default: $POLIS_CITIZEN, else the id `hooks install --as` recorded for
    /// this person and CLI).
    #[arg(long = "as", value_name = "ID")]
    pub citizen: Option<String>,
    /// At most one notices check per this many seconds.
    #[arg(long, default_value_t = 60)]
    pub interval: u64,
}

#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// Compare routing strategies (random, round-robin, self-ratings, every policy, the oracle)
    /// on the reference bench's simulated world.
    Routing(Deferred<BenchRoutingArgs>),
    /// The reference's learning mode: the repeat-error rate of a team that keeps lessons
    /// against one that does not.
    Learning(Deferred<BenchLearningArgs>),
}

#[derive(Debug, Args)]
pub struct BenchLearningArgs {
    /// Contracts in the run.
    #[arg(long, default_value_t = 180)]
    pub contracts: usize,
    /// The seed.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct BenchRoutingArgs {
    /// Contracts per run (default: the scenario's).
    #[arg(long)]
    pub contracts: Option<usize>,
    /// Seeds: A..B (B excluded), A..=B, or one seed.
    #[arg(long, default_value = "0..20")]
    pub seeds: String,
    /// Citizens in the world (default: the scenario's).
    #[arg(long)]
    pub citizens: Option<usize>,
    /// Capability tags in the world (default: the scenario's).
    #[arg(long)]
    pub tags: Option<usize>,
    /// all (every world, then one summary table), default, drift (one citizen's skills
    /// change at mid-run), newcomer (a strong citizen joins at mid-run), large (12 citizens,
    /// 20 tags, 2,000 contracts), teams (vendors, price tiers, several tags) or churn
    /// (citizens join, leave, go away and come back).
    #[arg(long, default_value = "all")]
    pub scenario: String,
    /// Draw the learning curves (running mean quality) to this PNG file.
    #[arg(long)]
    pub plot: Option<PathBuf>,
    /// Print every world's report as JSON (a list, one report per world).
    #[arg(long)]
    pub json: bool,
}

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
    /// Restore the newest backup in `_polis/.polis-backups/`: changed files go back to their
    /// copies, created files are removed.
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
    #[arg(long = "as", value_name = "ID", value_parser = acting_id)]
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

#[derive(Debug, Args)]
pub struct RunArgs {
    /// Polises to watch (project roots or `_polis/` folders); default: the configuration's.
    pub paths: Vec<PathBuf>,
    /// Configuration file (default: $POLISD_CONFIG, then the user config directory).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Log level: error, warn, info, debug, trace (RUST_LOG overrides).
    #[arg(long)]
    pub log_level: Option<String>,
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    #[command(flatten)]
    pub path: PolisPath,
    /// Address and port (default: `[dashboard] listen` of the configuration, 127.0.0.1:7341).
    /// Off loopback a token is required; it is printed once.
    #[arg(long)]
    pub listen: Option<String>,
    /// Configuration file (default: $POLISD_CONFIG, then the user config directory).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Print the address as JSON (`{"url": ...}`) once listening.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    #[command(flatten)]
    pub path: PolisPath,
    /// md or html (one self-contained file: no script, the stylesheet inline).
    #[arg(long, default_value = "md")]
    pub format: String,
    /// Replace ids and paths with stable pseudonyms and leave free text out, for sharing.
    #[arg(long)]
    pub redact: bool,
    /// Write here instead of standard output (never inside `_polis/`).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Print `{"format", "redacted", "out", "bytes"}` after writing (with --out).
    #[arg(long, requires = "out")]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ServiceArgs {
    #[command(subcommand)]
    pub action: ServiceCommand,
    /// Print what would be written and run, and change nothing.
    #[arg(long, global = true)]
    pub dry_run: bool,
    /// Configuration file the service should use.
    #[arg(long, global = true)]
    pub config: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum ServiceCommand {
    /// Write the user unit (or LaunchAgent) and start it.
    Install,
    /// Stop the service and remove its unit (or LaunchAgent).
    Uninstall,
    /// Say whether the service is installed and running, and what it watches.
    Status {
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Args)]
pub struct ConfigArgs {
    #[command(subcommand)]
    pub command: ConfigCommand,
}

#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    /// Print a commented configuration with every key and its default (a starting point:
    /// `polisd config example > "$(polisd config path)"`).
    Example,
    /// Check a configuration file (default: the one `polisd run` would read); exit 1 on a
    /// problem, naming its line.
    Check {
        /// The file to check.
        file: Option<PathBuf>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Print where polisd looks for its configuration ($POLISD_CONFIG, else the user config
    /// directory).
    Path {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Args)]
pub struct ManArgs {
    /// Write `polisd.1` and one page per command (`polisd-contract-open.1`…, the pages the
    /// main page names) into this existing folder instead of printing the main page.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell: bash, zsh, fish, elvish or powershell.
    pub shell: clap_complete::Shell,
}

#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Keep the demo folder afterwards (it is removed otherwise).
    #[arg(long)]
    pub keep: bool,
    /// Leave the daemon watching the demo polis after the scene (Ctrl-C to stop); implies
    /// --keep.
    #[arg(long)]
    pub keep_running: bool,
}

#[derive(Debug, Args)]
pub struct GitSetupArgs {
    #[command(flatten)]
    pub polis: JsonPolisArg,
    /// The program git should run as the driver (default: this polisd's absolute path).
    #[arg(long)]
    pub program: Option<String>,
}

#[derive(Debug, Args)]
pub struct MergeDriverArgs {
    /// %O: the common ancestor's version (a temporary file).
    pub base: PathBuf,
    /// %A: our version; the merge result is written here.
    pub ours: PathBuf,
    /// %B: their version.
    pub theirs: PathBuf,
    /// %P: the path the result is stored at, relative to the repository. Bytes, not text: git
    /// passes a file's name as it is, UTF-8 or not.
    pub path: PathBuf,
}

#[derive(Debug, Args)]
pub struct ReserveArgs {
    /// Paths or globs to reserve (`src/auth.rs`, `docs/`, `src/**/*.rs`), relative to the
    /// working directory; each must lie inside the project.
    #[arg(required = true, value_name = "PATH")]
    pub paths: Vec<String>,
    /// The citizen reserving (your agent id).
    #[arg(long = "as", value_name = "ID", value_parser = acting_id)]
    pub citizen: String,
    /// Let the reservation expire after this many minutes (default: until released).
    #[arg(long = "ttl-min", value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub ttl_minutes: Option<u32>,
    /// Why you are reserving these paths.
    #[arg(long)]
    pub note: Option<String>,
    /// The open contract the work is for; the reservation is released when it settles or is
    /// abandoned.
    #[arg(long, value_name = "CONTRACT_ID", value_parser = contract_id)]
    pub contract: Option<String>,
    #[command(flatten)]
    pub opts: AgentOpts,
}

#[derive(Debug, Args)]
pub struct ReleaseArgs {
    /// Paths or globs to release (default: everything you hold). A held path is released
    /// when it overlaps one of these.
    #[arg(value_name = "PATH")]
    pub paths: Vec<String>,
    /// The citizen releasing (your agent id).
    #[arg(long = "as", value_name = "ID", value_parser = acting_id)]
    pub citizen: String,
    #[command(flatten)]
    pub opts: AgentOpts,
}

#[derive(Debug, Args)]
pub struct ReservationsArgs {
    /// Include expired entries (the daemon drops them).
    #[arg(long)]
    pub all: bool,
    /// Only the reservations of this citizen.
    #[arg(long = "as", value_name = "ID", value_parser = acting_id)]
    pub citizen: Option<String>,
    #[command(flatten)]
    pub opts: AgentOpts,
}

// ---------------------------------------------------------------------------------------------
// Agents' commands

/// Where the polis is and how to print, shared by the agents' commands.
#[derive(Debug, Args, Clone)]
pub struct AgentOpts {
    /// Project root or `_polis/` folder (default: found from the working directory).
    #[arg(
        long = "polis",
        visible_alias = "polis-root",
        value_name = "PATH",
        global = true
    )]
    pub polis: Option<PathBuf>,
    /// Print JSON (the result, or `{"ok": false, "error": …}` on a refusal).
    #[arg(long, global = true)]
    pub json: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Level {
    Low,
    Medium,
    High,
}

impl Level {
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Low => "low",
            Level::Medium => "medium",
            Level::High => "high",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum StateArg {
    Open,
    Settled,
    Abandoned,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum VoteArg {
    Agree,
    Disagree,
    Abstain,
    #[value(name = "request_changes", alias = "request-changes")]
    RequestChanges,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum DecisionArg {
    #[value(name = "signed_off", alias = "signed-off")]
    SignedOff,
    #[value(name = "requested_changes", alias = "requested-changes")]
    RequestedChanges,
    Rejected,
}

/// Splits `a,b , c` into tags.
pub fn split_tags(text: &str) -> Vec<String> {
    text.split(',')
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(str::to_string)
        .collect()
}

#[derive(Debug, Subcommand)]
pub enum ContractCommand {
    /// Open a contract in contracts/open/ (the reference's id rule and file).
    Open(Deferred<ContractOpenArgs>),
    /// Claim an open contract; exactly one of any number of simultaneous claimers wins.
    Claim(Deferred<ContractClaimArgs>),
    /// Settle a claimed contract and move it to contracts/settled/.
    Settle(Deferred<ContractSettleArgs>),
    /// Abandon an open contract and move it to contracts/abandoned/.
    Abandon(Deferred<ContractAbandonArgs>),
    /// Print a contract's file.
    Show(Deferred<ContractIdArgs>),
    /// List the contracts in one folder.
    List(Deferred<ContractListArgs>),
    /// The context packet to read before starting (same as `polisd context`).
    Context(Deferred<ContractIdArgs>),
}

#[derive(Debug, Args)]
pub struct ContractOpenArgs {
    /// The contract's title; its id is made from it.
    #[arg(long)]
    pub title: String,
    /// The opening citizen's id.
    #[arg(long, visible_alias = "as", value_parser = acting_id)]
    pub by: String,
    /// Comma-separated required capability tags.
    #[arg(long, default_value = "")]
    pub tags: String,
    /// How much rides on it: a `high` contract settles only after another citizen (ideally of
    /// another vendor) signs off its review.
    #[arg(long, value_enum, default_value = "medium")]
    pub stakes: Level,
    /// The dearest citizen the router may pick without penalty.
    #[arg(long, value_enum, default_value = "medium")]
    pub cost_ceiling: Level,
    /// When it is due, e.g. `2026-12-31` (written to the contract as given).
    #[arg(long)]
    pub deadline: Option<String>,
    /// An acceptance criterion (repeat for more).
    #[arg(long = "accept", value_name = "CRITERION")]
    pub accept: Vec<String>,
    #[command(flatten)]
    pub opts: AgentOpts,
}

#[derive(Debug, Args)]
pub struct ContractClaimArgs {
    /// The contract's id (its file name without `.md`).
    #[arg(value_parser = contract_id)]
    pub contract_id: String,
    /// The claiming citizen's id.
    #[arg(long = "as", value_name = "ID", value_parser = acting_id)]
    pub citizen: String,
    /// Take the contract over from its current owner.
    #[arg(long)]
    pub force: bool,
    /// Why you take a contract the router recommended for someone else (recorded as its
    /// `routing.override` and an `overrode routing` chronicle line).
    #[arg(long, value_name = "WHY")]
    pub reason: Option<String>,
    #[command(flatten)]
    pub opts: AgentOpts,
}

#[derive(Debug, Args)]
pub struct ContractSettleArgs {
    /// The contract's id (its file name without `.md`).
    #[arg(value_parser = contract_id)]
    pub contract_id: String,
    /// Quality score, 1 to 5.
    #[arg(long, allow_negative_numbers = true)]
    pub quality: i64,
    /// Minutes the work took.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub minutes: Option<u32>,
    /// The settling owner (default: the contract's owner).
    #[arg(long, visible_alias = "as", value_parser = acting_id)]
    pub by: Option<String>,
    /// What came out of it, for the Settlement section.
    #[arg(long)]
    pub outcome: Option<String>,
    /// The lesson filed with the settlement (one paragraph, on the contract's tags). Settling
    /// files a lesson: without one, pass --no-lesson.
    #[arg(long, requires = "impact", conflicts_with = "no_lesson")]
    pub lesson: Option<String>,
    /// The lesson's quality impact, 1 to 5.
    #[arg(long, requires = "lesson", allow_negative_numbers = true)]
    pub impact: Option<i64>,
    /// Settle without a lesson, saying why (recorded in the Settlement section).
    #[arg(long, value_name = "WHY")]
    pub no_lesson: Option<String>,
    /// A person settles a `stakes: high` contract without a review sign-off: `PERSON: WHY`
    /// (recorded in the Settlement section and the chronicle line).
    #[arg(long, value_name = "PERSON: WHY")]
    pub review_override: Option<String>,
    /// Suggest who goes next, as `CITIZEN:REASON` (repeatable): writes a `### Suggested next
    /// citizen` block into the Settlement, which polisd turns into a follow-up contract.
    #[arg(long, value_name = "CITIZEN:REASON")]
    pub suggest: Vec<String>,
    #[command(flatten)]
    pub opts: AgentOpts,
}

#[derive(Debug, Args)]
pub struct ContractAbandonArgs {
    /// The contract's id (its file name without `.md`).
    #[arg(value_parser = contract_id)]
    pub contract_id: String,
    /// Why it is abandoned (recorded in the chronicle line).
    #[arg(long)]
    pub reason: Option<String>,
    /// Who abandons it (default: its owner, else its opener).
    #[arg(long = "as", value_name = "ID", value_parser = acting_id)]
    pub citizen: Option<String>,
    #[command(flatten)]
    pub opts: AgentOpts,
}

#[derive(Debug, Subcommand)]
pub enum CouncilCommand {
    /// Start a council on an open contract (one that did not ask for it, or to choose the
    /// mode or panel by hand).
    Start(Deferred<CouncilStartArgs>),
    /// Show where a council stands: its round, seats, deadline, verdict.
    Status(Deferred<ContractIdArgs>),
    /// Place a member's contribution for the open round where it belongs.
    Write(Deferred<CouncilWriteArgs>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum CouncilModeArg {
    Full,
    Quick,
    Duo,
}

#[derive(Debug, Args)]
pub struct CouncilStartArgs {
    /// The contract's id (its file name without `.md`).
    #[arg(value_parser = contract_id)]
    pub contract_id: String,
    /// full (3 rounds), quick (2 rounds) or duo (2 seats, not anonymised); default: the
    /// contract's `council_mode`, else full.
    #[arg(long, value_enum)]
    pub mode: Option<CouncilModeArg>,
    /// Comma-separated member ids, each optionally `ID:LENS` (default: polisd picks,
    /// different vendors first).
    #[arg(long, value_delimiter = ',', value_name = "ID[:LENS],…")]
    pub panel: Vec<String>,
    /// Seat a triad: three lenses for a domain (architecture, risk, shipping, …).
    #[arg(long, value_name = "DOMAIN", conflicts_with_all = ["panel", "profile"])]
    pub triad: Option<String>,
    /// Seat a profile: classic, exploration-orthogonal or execution-lean.
    #[arg(long, value_name = "NAME", conflicts_with = "panel")]
    pub profile: Option<String>,
    /// The chairman's id (default: the best citizen not on the panel).
    #[arg(long, value_name = "ID")]
    pub chairman: Option<String>,
    /// How long each round stays open, in hours (default: the contract's, else 24).
    #[arg(long, value_name = "HOURS")]
    pub round_hours: Option<f64>,
    /// How many seats polisd picks (2 to 7; default 3, a duo has 2).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u8).range(2..=7))]
    pub panel_size: Option<u8>,
    #[command(flatten)]
    pub opts: AgentOpts,
}

#[derive(Debug, Args)]
pub struct CouncilWriteArgs {
    /// The contract's id (its file name without `.md`).
    #[arg(value_parser = contract_id)]
    pub contract_id: String,
    /// The member writing (your agent id).
    #[arg(long = "as", value_name = "ID", value_parser = acting_id)]
    pub citizen: String,
    /// A markdown file with the contribution (`-` reads standard input).
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    #[command(flatten)]
    pub opts: AgentOpts,
}

#[derive(Debug, Args)]
pub struct ContractIdArgs {
    /// The contract's id (its file name without `.md`).
    #[arg(value_parser = contract_id)]
    pub contract_id: String,
    #[command(flatten)]
    pub opts: AgentOpts,
}

#[derive(Debug, Args)]
pub struct ContractListArgs {
    /// Which folder: open, settled or abandoned.
    #[arg(long, value_enum, default_value = "open")]
    pub state: StateArg,
    /// Only this owner's contracts.
    #[arg(long)]
    pub owner: Option<String>,
    #[command(flatten)]
    pub opts: AgentOpts,
}

#[derive(Debug, Subcommand)]
pub enum AmendmentCommand {
    /// Propose an amendment in amendments/proposed/.
    Propose(Deferred<AmendmentProposeArgs>),
    /// Vote on a proposed amendment (a second vote replaces the first).
    Vote(Deferred<AmendmentVoteArgs>),
    /// List proposed and ratified amendments.
    List(Deferred<AgentOnly>),
}

#[derive(Debug, Args)]
pub struct AgentOnly {
    #[command(flatten)]
    pub opts: AgentOpts,
}

#[derive(Debug, Args)]
pub struct AmendmentProposeArgs {
    /// The amendment's title; its id is made from it.
    #[arg(long)]
    pub title: String,
    /// The proposing citizen's id.
    #[arg(long, visible_alias = "as", value_parser = acting_id)]
    pub by: String,
    /// A markdown file with the problem, the change and the rationale.
    #[arg(long)]
    pub body: Option<PathBuf>,
    /// Expiry date, YYYY-MM-DD (default: 30 days from now).
    #[arg(long)]
    pub expires: Option<String>,
    /// Agree votes needed (default: a majority of active citizens, at least 2).
    #[arg(long)]
    pub quorum: Option<u32>,
    #[command(flatten)]
    pub opts: AgentOpts,
}

#[derive(Debug, Args)]
pub struct AmendmentVoteArgs {
    /// The amendment's id (its file name in amendments/proposed/ without `.md`).
    #[arg(value_parser = amendment_id)]
    pub amendment_id: String,
    /// The voting citizen (your agent id).
    #[arg(long = "as", value_name = "ID", value_parser = acting_id)]
    pub citizen: String,
    /// Your vote.
    #[arg(long, value_enum)]
    pub vote: VoteArg,
    /// Why, in a sentence (recorded with the vote).
    #[arg(long)]
    pub rationale: Option<String>,
    #[command(flatten)]
    pub opts: AgentOpts,
}

#[derive(Debug, Args)]
pub struct LogArgs {
    /// The citizen writing the line (your agent id).
    #[arg(long = "as", value_name = "ID", value_parser = acting_id)]
    pub citizen: String,
    /// The verb phrase, e.g. "blocked on review" (quote it).
    pub verb: String,
    /// A path relative to _polis/ (`[[…]]` optional).
    #[arg(long, value_parser = link)]
    pub link: Option<String>,
    /// A short note, the line's last field.
    #[arg(long)]
    pub note: Option<String>,
    #[command(flatten)]
    pub opts: AgentOpts,
}

#[derive(Debug, Subcommand)]
pub enum LessonCommand {
    /// File a lesson under lessons/<first tag>/.
    File(Deferred<LessonFileArgs>),
}

#[derive(Debug, Args)]
pub struct LessonFileArgs {
    /// The citizen filing it (your agent id).
    #[arg(long = "as", value_name = "ID", value_parser = acting_id)]
    pub citizen: String,
    /// Comma-separated capability tags.
    #[arg(long)]
    pub tags: String,
    /// The contract it came from.
    #[arg(long, value_parser = contract_id)]
    pub contract: Option<String>,
    /// Quality impact, 1 to 5.
    #[arg(long, allow_negative_numbers = true)]
    pub impact: i64,
    /// The lesson: one paragraph.
    pub text: String,
    #[command(flatten)]
    pub opts: AgentOpts,
}

#[derive(Debug, Args)]
pub struct ReviewArgs {
    /// The contract's id (its file name without `.md`).
    #[arg(value_parser = contract_id)]
    pub contract_id: String,
    /// The reviewing citizen (your agent id): not the owner, ideally of another vendor.
    #[arg(long = "as", value_name = "ID", value_parser = acting_id)]
    pub citizen: String,
    /// Your decision.
    #[arg(long, value_enum)]
    pub decision: DecisionArg,
    /// A markdown file with the review's text.
    #[arg(long)]
    pub body: Option<PathBuf>,
    #[command(flatten)]
    pub opts: AgentOpts,
}

#[derive(Debug, Args)]
pub struct QueueArgs {
    #[command(subcommand)]
    pub action: Option<QueueCommand>,
    #[command(flatten)]
    pub opts: AgentOpts,
}

#[derive(Debug, Subcommand)]
pub enum QueueCommand {
    /// Answer one item: accept, decline, or later (hidden for a day).
    Answer(QueueAnswerArgs),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum AnswerArg {
    Accept,
    Decline,
    Later,
}

#[derive(Debug, Args)]
pub struct QueueAnswerArgs {
    /// The item's key, as `polisd queue` lists it (`new-citizen/<contract>/<n>`…).
    pub key: String,
    /// accept, decline, or later (hidden for a day).
    #[arg(value_enum)]
    pub answer: AnswerArg,
    /// The person who decides (a name; recorded in the chronicle).
    #[arg(long, value_name = "NAME")]
    pub by: String,
    /// Why, in a few words (recorded too).
    #[arg(long, default_value = "")]
    pub why: String,
    /// Accepting a new citizen: the id its stub is registered under.
    #[arg(long = "id", value_name = "AGENT_ID")]
    pub agent_id: Option<String>,
    /// Accepting a new citizen: its vendor (default `unknown`, to edit on its card).
    #[arg(long)]
    pub vendor: Option<String>,
    /// Accepting a new citizen: its model (default `unknown`).
    #[arg(long)]
    pub model: Option<String>,
    /// Accepting a new citizen: its capability tags with self-ratings, `python:4,docs:3`
    /// (default: the suggesting contract's tags, rated 3).
    #[arg(long)]
    pub tags: Option<String>,
}

#[derive(Debug, Args)]
pub struct ContextArgs {
    /// The contract's id (its file name without `.md`).
    #[arg(value_parser = contract_id)]
    pub contract_id: String,
    #[command(flatten)]
    pub opts: AgentOpts,
}

#[derive(Debug, Subcommand)]
pub enum GuardrailCommand {
    /// Add a guardrail (no tags: it applies to every contract).
    Add(Deferred<GuardrailAddArgs>),
    /// List the active guardrails.
    List(Deferred<AgentOnly>),
}

#[derive(Debug, Args)]
pub struct GuardrailAddArgs {
    /// The must-pass criterion, in one sentence.
    #[arg(long)]
    pub text: String,
    /// Comma-separated tags it applies to (none: every contract).
    #[arg(long, default_value = "")]
    pub tags: String,
    /// The contract whose failure taught it.
    #[arg(long = "from", value_name = "CID", value_parser = contract_id)]
    pub from: Option<String>,
    #[command(flatten)]
    pub opts: AgentOpts,
}

/// An id an agent acts as (`--as`, `--by`): no system citizen, nothing that could be a path.
fn acting_id(value: &str) -> Result<String, String> {
    crate::protocol::input::check_acting_id(value)
        .map(|()| value.to_string())
        .map_err(|e| e.to_string())
}

/// A contract id: a slug, so it can never name a path outside its folder.
fn contract_id(value: &str) -> Result<String, String> {
    crate::protocol::input::check_slug("contract id", value)
        .map(|()| value.to_string())
        .map_err(|e| e.to_string())
}

/// An amendment id: a slug (`YYYY-MM-DD-<slug>` is one), so it can never name a path.
fn amendment_id(value: &str) -> Result<String, String> {
    crate::protocol::input::check_slug("amendment id", value)
        .map(|()| value.to_string())
        .map_err(|e| e.to_string())
}

/// A chronicle link that stays inside `_polis/`.
fn link(value: &str) -> Result<String, String> {
    crate::protocol::input::check_link(value)
        .map(|()| value.to_string())
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory as _;

    /// Every subcommand's path, from the whole tree.
    fn paths(cmd: &clap::Command, above: &[String], out: &mut Vec<Vec<String>>) {
        for sub in cmd.get_subcommands() {
            let mut path = above.to_vec();
            path.push(sub.get_name().to_string());
            paths(sub, &path, out);
            out.push(path);
        }
    }

    /// Calls `f` with every command of the built tree (a parent's global `--json` reaches its
    /// subcommands only once built) and its path as typed (`contract settle`).
    fn each_command(mut f: impl FnMut(&str, &clap::Command)) {
        let mut all = Vec::new();
        paths(&whole_command(), &[], &mut all);
        let mut whole = whole_command();
        whole.build();
        for path in &all {
            let mut at = &whole;
            for name in path {
                at = at.find_subcommand(name).unwrap();
            }
            f(&path.join(" "), at);
        }
    }

    fn help(mut cmd: clap::Command, path: &[String], flag: &str) -> String {
        let args = std::iter::once("polisd")
            .chain(path.iter().map(String::as_str))
            .chain([flag]);
        match cmd.try_get_matches_from_mut(args) {
            Err(e) if e.kind() == clap::error::ErrorKind::DisplayHelp => e.render().to_string(),
            other => panic!("{path:?} {flag}: no help ({other:?})"),
        }
    }

    /// A command parsed from the deferred tree sees the arguments and the description the whole
    /// tree gives it: each subcommand's short and long help are the same either way.
    #[test]
    fn each_subcommand_reads_the_same_deferred_as_whole() {
        let mut all = Vec::new();
        paths(&whole_command(), &[], &mut all);
        assert!(all.len() > 50, "{} subcommands", all.len());
        assert!(all.iter().any(|p| p == &["contract", "settle"]));
        for path in &all {
            for flag in ["-h", "--help"] {
                let whole = help(whole_command(), path, flag);
                let deferred = help(Cli::command(), path, flag);
                assert_eq!(deferred, whole, "{path:?} {flag}");
            }
        }
    }

    /// Every argument of every command says what it is for in `--help`: agents read the help to
    /// learn a command, and a bare `--as <ID>` teaches nothing.
    #[test]
    fn every_argument_has_its_help() {
        fn bare(cmd: &clap::Command, path: &str, out: &mut Vec<String>) {
            for arg in cmd.get_arguments() {
                let own = !matches!(arg.get_id().as_str(), "help" | "version");
                if own && arg.get_help().is_none() && arg.get_long_help().is_none() {
                    out.push(format!("{path} {}", arg.get_id()));
                }
            }
            for sub in cmd.get_subcommands() {
                bare(sub, &format!("{path} {}", sub.get_name()), out);
            }
        }
        let mut out = Vec::new();
        bare(&whole_command(), "polisd", &mut out);
        assert!(
            out.is_empty(),
            "arguments without help:\n  {}",
            out.join("\n  ")
        );
    }

    /// Every command an agent or a person runs says its result as JSON with `--json`. The
    /// exceptions print something that already has its own format, or serve a protocol.
    #[test]
    fn every_command_takes_json_but_those_with_their_own_format() {
        const OWN_FORMAT: [&str; 10] = [
            "run",               // the daemon: it logs
            "mcp",               // speaks MCP on stdio
            "hook",              // answers in the agent CLI's hook format
            "merge-driver",      // git's merge driver: exit status and the merged file
            "completions",       // a shell script
            "man",               // a man page
            "config example",    // a commented TOML file
            "demo",              // a walk-through for a person
            "service install",   // a one-time setup step: prints what it writes and runs
            "service uninstall", // the same, undone
        ];
        let mut missing = Vec::new();
        each_command(|shown, at| {
            let exempt = OWN_FORMAT
                .iter()
                .any(|e| shown == *e || shown.starts_with(&format!("{e} ")));
            let leaf = at.get_subcommands().next().is_none();
            let json = at.get_arguments().any(|a| a.get_long() == Some("json"));
            if leaf && !exempt && !json {
                missing.push(shown.to_string());
            }
        });
        assert!(missing.is_empty(), "no --json on: {missing:?}");
    }

    /// Every command that works on one polis takes it as `--polis PATH` too: an agent that
    /// learned the flag from one command must not get a usage error from the next.
    #[test]
    fn every_command_taking_a_polis_path_takes_the_polis_flag() {
        let mut missing = Vec::new();
        each_command(|shown, at| {
            let takes_a_polis = at.get_positionals().any(|a| {
                a.get_help().is_some_and(|h| {
                    h.to_string()
                        .starts_with("Project root or `_polis/` folder")
                })
            });
            let flag = at.get_arguments().any(|a| a.get_long() == Some("polis"));
            if takes_a_polis && !flag {
                missing.push(shown.to_string());
            }
        });
        assert!(missing.is_empty(), "no --polis on: {missing:?}");
    }

    /// Parsing a command builds only its own part of the tree.
    #[test]
    fn a_command_parsed_leaves_the_others_unbuilt() {
        let mut cmd = Cli::command();
        cmd.try_get_matches_from_mut(["polisd", "contract", "settle", "c-1", "--quality", "4"])
            .unwrap();
        let args_of = |cmd: &clap::Command, path: &[&str]| {
            let mut at = cmd;
            for name in path {
                at = at.find_subcommand(name).unwrap();
            }
            at.get_arguments().count()
        };
        assert!(args_of(&cmd, &["contract", "settle"]) > 3);
        assert_eq!(args_of(&cmd, &["init"]), 0);
        assert!(args_of(&whole_command(), &["init"]) > 0);
    }
}
