//! The arguments of the long-running processes and their setup: `run`, `serve`, `service` and
//! `config`.

use super::PolisPath;
use clap::{Args, Subcommand};
use std::path::PathBuf;

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
