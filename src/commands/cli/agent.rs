//! The arguments of the agents' commands: reservations, contracts, councils, amendments, the
//! chronicle, lessons, reviews, the person's queue, context packets and guardrails.

use super::{acting_id, amendment_id, contract_id, link, Deferred};
use crate::protocol::contracts::reservation::MAX_TTL_MINUTES;
use clap::{Args, Subcommand};
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct ReserveArgs {
    /// Paths or globs to reserve (`src/auth.rs`, `docs/`, `src/**/*.rs`), relative to the
    /// working directory; each must lie inside the project.
    #[arg(required = true, value_name = "PATH")]
    pub paths: Vec<String>,
    /// The citizen reserving (your agent id).
    #[arg(long = "as", visible_alias = "by", value_name = "ID", value_parser = acting_id)]
    pub citizen: String,
    /// Let the reservation expire after this many minutes, at most a year (525600; default:
    /// until released).
    #[arg(long = "ttl-min", value_name = "N", value_parser = clap::value_parser!(u32).range(1..=i64::from(MAX_TTL_MINUTES)))]
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
    #[arg(long = "as", visible_alias = "by", value_name = "ID", value_parser = acting_id)]
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
    #[arg(long = "as", visible_alias = "by", value_name = "ID", value_parser = acting_id)]
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
    /// When it is due: `YYYY-MM-DD`, or `"YYYY-MM-DD HH:MM"`.
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
    #[arg(long = "as", visible_alias = "by", value_name = "ID", value_parser = acting_id)]
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
    #[arg(long = "as", visible_alias = "by", value_name = "ID", value_parser = acting_id)]
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
    #[arg(long = "as", visible_alias = "by", value_name = "ID", value_parser = acting_id)]
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
    #[arg(long = "as", visible_alias = "by", value_name = "ID", value_parser = acting_id)]
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
    #[arg(long = "as", visible_alias = "by", value_name = "ID", value_parser = acting_id)]
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
    #[arg(long = "as", visible_alias = "by", value_name = "ID", value_parser = acting_id)]
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
    #[arg(long = "as", visible_alias = "by", value_name = "ID", value_parser = acting_id)]
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
    #[arg(long, visible_alias = "as", value_name = "NAME")]
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
