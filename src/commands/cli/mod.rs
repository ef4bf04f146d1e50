//! The command line: argument definitions grouped by topic, and the dispatch to commands.
//!
//! Exit codes: 0 success, 1 findings with errors or a failed action, 2 usage errors (clap's
//! own, and a PATH that is not a polis).

use clap::{ArgMatches, Args, FromArgMatches, Parser, Subcommand};

mod agent;
mod daemon;
mod polis;
mod session;
mod tools;

pub use agent::*;
pub use daemon::*;
pub use polis::*;
pub use session::*;
pub use tools::*;

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
    /// with a MANIFEST.yml; `--rollback` puts the newest backup back (again: the one before).
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
    /// CLI, and Aider's `load:` file.
    #[command(subcommand)]
    Hooks(Deferred<HooksCommand>),
    /// What an installed hook runs: reads the agent CLI's JSON payload on stdin, prints what it
    /// adds to the session, and always exits 0.
    #[command(hide = true)]
    Hook(Deferred<HookArgs>),
    /// Serve the polis to an agent over MCP (stdio).
    Mcp(Deferred<PolisArg>),
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

    /// Whoever acts (a citizen, or the person answering the queue) is named `--as` or `--by`,
    /// whichever an agent reaches for, on every command: `contract open` and `settle` were
    /// written with `--by`, `claim` and `vote` with `--as`, and an agent that learned one
    /// spelling should not meet a usage error on the other.
    #[test]
    fn every_acting_flag_takes_both_as_and_by() {
        let mut one_spelling = Vec::new();
        let mut seen = 0;
        each_command(|shown, at| {
            for arg in at.get_arguments() {
                let mut names: Vec<&str> = arg.get_long().into_iter().collect();
                names.extend(arg.get_all_aliases().unwrap_or_default());
                let has = |n: &str| names.contains(&n);
                if has("as") || has("by") {
                    seen += 1;
                    if !(has("as") && has("by")) {
                        one_spelling.push(format!("{shown} --{}", names[0]));
                    }
                }
            }
        });
        assert!(seen > 15, "only {seen} acting flags found");
        assert!(
            one_spelling.is_empty(),
            "acting flags with one spelling:\n  {}",
            one_spelling.join("\n  ")
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
