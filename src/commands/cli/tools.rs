//! The arguments of the tools: `bench`, `report`, `man`, `completions`, `demo`, `git-setup` and
//! `merge-driver`.

use super::{Deferred, JsonPolisArg, PolisPath};
use clap::{Args, Subcommand};
use std::path::PathBuf;

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
