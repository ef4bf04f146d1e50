//! The one-shot commands. Each gathers inputs with [`crate::fs::snapshot`], calls the pure core and
//! hands writes to [`crate::fs::writer`]; the daemon calls the same functions.

/// `println!` for what a command prints on its own output: text read from the polis may hold
/// control or bidi characters an agent wrote, so they are escaped
/// ([`crate::protocol::input::escape_for_terminal`]) on the way out.
macro_rules! say {
    () => {{ $crate::commands::printed(); println!() }};
    ($($t:tt)*) => {{
        $crate::commands::printed();
        println!("{}", $crate::protocol::input::escape_for_terminal(&format!($($t)*)))
    }};
}

/// `print!` with the same escaping as [`say!`].
macro_rules! say_part {
    ($($t:tt)*) => {{
        $crate::commands::printed();
        print!("{}", $crate::protocol::input::escape_for_terminal(&format!($($t)*)))
    }};
}

/// `eprintln!` with the same escaping as [`say!`], best-effort: a reader that closed stderr
/// (a hook's CLI gone, `2>&-`) must not turn a message into a panic.
macro_rules! tell {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(
            std::io::stderr(),
            "{}",
            $crate::protocol::input::escape_for_terminal(&format!($($t)*))
        );
    }};
}

pub mod activity;
pub mod agent;
pub mod amendment;
pub mod check;
pub mod cli;
pub mod config;
pub mod context;
pub mod contract;
pub mod council;
pub mod demo;
pub mod git_setup;
pub mod guardrail;
pub mod help_map;
pub mod init;
pub mod lesson;
pub mod log;
pub mod merge_driver;
pub mod migrate;
pub mod queue;
pub mod ready;
pub mod reflect;
pub mod register;
pub mod reserve;
pub mod review;
pub mod route;
pub mod session;
pub mod status;
pub mod terminal;
pub mod verify;

use crate::commands::cli::Deferred;
use crate::commands::cli::{Command, RouteArgs, ServiceCommand, TallyArgs};
use crate::daemon::service::ServiceAction;
use crate::fs::snapshot::Polis;
use crate::fs::writer::{WriteOutcome, Writer};
use crate::protocol::clock::PolisTime;
use crate::protocol::finding::Severity;
use anyhow::Context;
use std::path::{Path, PathBuf};

/// Parses the process arguments, runs the command and maps its outcome to an exit code: 0
/// success, 1 refused or findings, 2 usage.
pub fn run() -> std::process::ExitCode {
    use clap::{CommandFactory as _, FromArgMatches as _};
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    if let Err(refused) = refuse_control_characters(&args) {
        let line = format!("{refused}; nothing was written");
        if asks_for_json(&args) {
            say!("{}", serde_json::json!({ "ok": false, "error": line }));
        }
        tell!("polisd: {line}");
        return std::process::ExitCode::from(2);
    }
    let matches = match help_map::grouped(cli::Cli::command()).try_get_matches() {
        Ok(matches) => matches,
        // Exit 2 is how an agent CLI's hook blocks (Claude Code erases the prompt): a hook
        // command this polisd cannot parse (a newer polisd's flag, a typo) adds nothing instead.
        Err(e)
            if subcommand(&args).as_deref() == Some("hook")
                && !matches!(
                    e.kind(),
                    clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion
                ) =>
        {
            session::hook_unparsed(&args, &e.to_string());
            return std::process::ExitCode::SUCCESS;
        }
        Err(e) => {
            // A value refused by its parser (an id that could become a path, a system
            // identity, a link out of _polis/) is a value that can never be right, as a line
            // break in a title is: with --json it is answered as JSON too.
            if matches!(
                e.kind(),
                clap::error::ErrorKind::InvalidValue | clap::error::ErrorKind::ValueValidation
            ) && asks_for_json(&args)
            {
                let text = e.render().to_string();
                let first = text.lines().next().unwrap_or_default();
                let line = refusal_text(&first.strip_prefix("error: ").unwrap_or(first));
                say!("{}", serde_json::json!({ "ok": false, "error": line }));
            }
            // clap quotes a rejected value whole; a value of any length may be passed. Help
            // and the version are no refusal: they go to standard output as clap prints them.
            if e.use_stderr() && e.render().to_string().len() > LONGEST_MESSAGE {
                let text = e.render().to_string();
                eprintln!(
                    "{}",
                    crate::protocol::input::short_words(text.trim_end(), LONG_WORD)
                );
                return std::process::ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2));
            }
            e.exit()
        }
    };
    let cli = cli::Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    let json = wants_json(&matches);
    if !matches!(
        cli.command,
        Command::Run(Deferred(_))
            | Command::Serve(Deferred(_))
            | Command::Mcp(_)
            | Command::Hook(_)
    ) {
        die_quietly_on_closed_pipe();
    }
    match dispatch(cli.command) {
        Ok(code) => std::process::ExitCode::from(code),
        Err(err) => {
            let line = refusal_text(&chain_text(&err));
            // With --json an agent parses standard output whatever happened, as the agents'
            // commands print it; unless the command already printed its result there.
            if json && !PRINTED.load(std::sync::atomic::Ordering::Relaxed) {
                say!("{}", serde_json::json!({ "ok": false, "error": line }));
            }
            tell!("polisd: {line}");
            let usage = err
                .downcast_ref::<crate::fs::locate::LocateError>()
                .is_some()
                || err.downcast_ref::<Usage>().is_some();
            std::process::ExitCode::from(if usage { 2 } else { 1 })
        }
    }
}

/// An error and its causes on one line, as anyhow's `{:#}` writes them, but a cause the text
/// already quotes is not repeated: polisd's writer and state errors put the system's error in
/// their own message and also give it as their source.
pub fn chain_text(err: &anyhow::Error) -> String {
    let mut text = err.to_string();
    for cause in err.chain().skip(1) {
        let cause = cause.to_string();
        if !text.contains(&cause) {
            text.push_str(": ");
            text.push_str(&cause);
        }
    }
    text
}

/// A refusal as a command prints it: an echoed value of any length quoted by its start.
pub fn refusal_text(err: &dyn std::fmt::Display) -> String {
    crate::protocol::input::short_words(&err.to_string(), LONG_WORD)
}

/// Past this many bytes a refusal is read for long words to quote short ([`LONG_WORD`]).
const LONGEST_MESSAGE: usize = 2_000;
/// A word of a refusal longer than this is an echoed value, quoted by its start.
const LONG_WORD: usize = 200;

/// Whether the command given asked for `--json`.
fn wants_json(matches: &clap::ArgMatches) -> bool {
    let mut leaf = matches;
    while let Some((_, sub)) = leaf.subcommand() {
        leaf = sub;
    }
    matches!(leaf.try_get_one::<bool>("json"), Ok(Some(true)))
}

/// Whether the command line asks for `--json` of a command that has it, for a command line
/// refused before it could be parsed whole (clap stops at the first value its parser
/// refuses): the command is the path of subcommand names the arguments start with.
fn asks_for_json(args: &[std::ffi::OsString]) -> bool {
    use clap::CommandFactory as _;
    let mut root = cli::Cli::command();
    // Each command's arguments are added when it is built (`Deferred`).
    root.build();
    let mut leaf = &root;
    for arg in args {
        let name = arg.to_string_lossy();
        if name.starts_with('-') {
            continue;
        }
        match leaf.find_subcommand(&*name) {
            Some(sub) => leaf = sub,
            None => break,
        }
    }
    leaf.get_arguments().any(|a| a.get_id() == "json")
        && args
            .iter()
            .take_while(|a| *a != "--")
            .any(|a| a == "--json")
}

/// Set once a command has printed on standard output.
static PRINTED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Records that a command printed on standard output ([`say!`], [`say_part!`]).
pub fn printed() {
    PRINTED.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// Every argument an agent passes is text that may reach a file or a terminal, so control
/// characters are refused in all of them at once, before parsing (a usage error). `hook` and
/// `merge-driver` are left to themselves: their arguments come from the agent CLIs' settings
/// and git, and a hook must always exit 0.
fn refuse_control_characters(
    args: &[std::ffi::OsString],
) -> Result<(), crate::protocol::input::InputError> {
    if matches!(subcommand(args).as_deref(), Some("hook" | "merge-driver")) {
        return Ok(());
    }
    for (n, arg) in args.iter().enumerate() {
        // A value that is not UTF-8 is clap's to refuse; only the readable part is checked here.
        crate::protocol::input::check_text(&format!("argument {}", n + 1), &arg.to_string_lossy())?;
    }
    Ok(())
}

/// The command named by the process arguments: the first that is not an option.
fn subcommand(args: &[std::ffi::OsString]) -> Option<String> {
    args.iter()
        .find(|a| !a.to_string_lossy().starts_with('-'))
        .map(|a| a.to_string_lossy().into_owned())
}

/// A one-shot command piped into `head` ends like any Unix tool when the reader goes away,
/// instead of panicking in `println!`. Its writes are done before it prints, so nothing is cut
/// short. The servers keep Rust's default (a closed pipe is an error they handle), and so do
/// the hooks: an agent CLI that stopped reading must still see exit 0, and a hook's answer
/// already handles a failed write.
fn die_quietly_on_closed_pipe() {
    // SAFETY: restoring the default disposition of one signal before any thread is started.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
}

/// A usage error found after argument parsing (exit code 2).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Usage(pub String);

/// A command refused what it was asked, before writing anything (exit code 1).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Refused(pub String);

/// Runs a command; the `u8` is the process exit code.
pub fn dispatch(command: Command) -> anyhow::Result<u8> {
    match command {
        Command::Check(Deferred(args)) => check::run(args),
        Command::Verify(Deferred(args)) => verify::run(args),
        Command::Reflect(Deferred(args)) => reflect::run(args),
        Command::Ready(Deferred(args)) => ready::run(args),
        Command::Status(Deferred(args)) => status::run(args),
        Command::Activity(Deferred(args)) => activity::run(args, &mut terminal::stdout()),
        Command::Run(Deferred(args)) => crate::daemon::run_with(
            crate::daemon::RunOptions {
                paths: args.paths,
                config: args.config,
                log_level: args.log_level,
            },
            Some(Box::new(crate::dashboard::beside_daemon)),
        ),
        Command::Serve(Deferred(args)) => serve(args),
        Command::Report(Deferred(args)) => report(args),
        Command::Reconcile(Deferred(args)) => reconcile(&locate(args.path.get())?, args.json),
        Command::Route(Deferred(args)) => route(args),
        Command::Tally(Deferred(args)) => tally(args),
        Command::Init(Deferred(args)) => init::command(args),
        Command::Register(Deferred(args)) => register::run(args),
        Command::Migrate(Deferred(args)) => migrate::run(args),
        Command::Service(Deferred(args)) => {
            let action = match args.action {
                ServiceCommand::Install => ServiceAction::Install,
                ServiceCommand::Uninstall => ServiceAction::Uninstall,
                ServiceCommand::Status { json } => ServiceAction::Status { json },
            };
            crate::daemon::service::run(
                action,
                args.dry_run,
                args.config.as_deref(),
                &mut terminal::stdout(),
            )
        }
        Command::Bench(Deferred(crate::commands::cli::BenchCommand::Routing(Deferred(args)))) => {
            use crate::bench::simulation;
            let all = args.scenario.trim() == "all";
            let opts = simulation::BenchOptions {
                contracts: args.contracts,
                citizens: args.citizens,
                tags: args.tags,
                seeds: simulation::parse_seeds(&args.seeds).map_err(|e| Usage(e.to_string()))?,
                scenario: if all {
                    simulation::Scenario::Default
                } else {
                    args.scenario
                        .parse()
                        .map_err(|e: anyhow::Error| Usage(e.to_string()))?
                },
                plot: args.plot,
                ..Default::default()
            };
            // With --json the tables are not printed: the reports are.
            let mut out: Box<dyn std::io::Write> = if args.json {
                Box::new(std::io::sink())
            } else {
                Box::new(terminal::stdout())
            };
            let reports = if all {
                simulation::run_all_worlds(&opts, &mut out)?
            } else {
                vec![simulation::run_bench(&opts, &mut out)?]
            };
            drop(out);
            if args.json {
                say!("{}", serde_json::to_string_pretty(&reports)?);
            }
            Ok(0)
        }
        Command::Bench(Deferred(crate::commands::cli::BenchCommand::Learning(Deferred(args)))) => {
            use crate::bench::learning;
            let report = learning::run_learning(args.contracts, learning::MODES, args.seed);
            let out = &mut std::io::stdout().lock();
            if args.json {
                serde_json::to_writer_pretty(&mut *out, &report)?;
                std::io::Write::write_all(out, b"\n")?;
            } else {
                learning::write_learning(&report, out)?;
            }
            Ok(0)
        }
        Command::GitSetup(Deferred(args)) => git_setup::run(args),
        Command::MergeDriver(Deferred(args)) => merge_driver::run(args),
        Command::Config(Deferred(args)) => config::run(args, &mut terminal::stdout()),
        Command::Completions(Deferred(args)) => {
            let mut cmd = cli::whole_command();
            clap_complete::generate(args.shell, &mut cmd, "polisd", &mut std::io::stdout());
            Ok(0)
        }
        Command::Man(Deferred(args)) => man(args),
        Command::Reserve(Deferred(args)) => reserve::reserve(args),
        Command::Release(Deferred(args)) => reserve::release(args),
        Command::Reservations(Deferred(args)) => reserve::list(args),
        Command::Contract(Deferred(c)) => contract::run(c),
        Command::Amendment(Deferred(c)) => amendment::run(c),
        Command::Log(Deferred(a)) => log::run(a),
        Command::Lesson(Deferred(c)) => lesson::run(c),
        Command::Review(Deferred(a)) => review::run(a),
        Command::Queue(Deferred(a)) => queue::run(a),
        Command::Council(Deferred(c)) => council::run(c),
        Command::Context(Deferred(a)) => context::run(a),
        Command::Guardrail(Deferred(c)) => guardrail::run(c),
        Command::Demo(Deferred(args)) => {
            crate::commands::demo::run(args.keep, args.keep_running, &mut terminal::stdout())
        }
        Command::Prime(Deferred(args)) => session::prime(args),
        Command::Notices(Deferred(args)) => session::notices(args),
        Command::Inbox(Deferred(command)) => session::inbox(command),
        Command::Hooks(Deferred(command)) => session::hooks(command),
        Command::Hook(Deferred(args)) => session::hook(args),
        Command::Mcp(Deferred(args)) => crate::mcp::serve(&locate(args.path.get())?),
    }
}

/// `polisd man`: the main page on standard output, or with `--dir` every page it names.
fn man(args: crate::commands::cli::ManArgs) -> anyhow::Result<u8> {
    // clap's `help` subcommand has no page of its own: `--help` is on every page.
    let mut whole = cli::whole_command().disable_help_subcommand(true);
    whole.build();
    let Some(dir) = args.dir else {
        clap_mangen::Man::new(whole).render(&mut std::io::stdout())?;
        return Ok(0);
    };
    if !dir.is_dir() {
        return Err(Usage(format!(
            "--dir {} is not a folder; create it first (`mkdir -p {}`)",
            dir.display(),
            dir.display()
        ))
        .into());
    }
    // Only polisd's writer writes under `_polis/`.
    let canonical = std::fs::canonicalize(&dir)
        .with_context(|| format!("reading the folder {}", dir.display()))?;
    if let Ok(root) = crate::fs::locate::locate(None, &canonical) {
        if canonical.starts_with(crate::fs::snapshot::canonical_root(&root)) {
            return Err(Usage(format!(
                "--dir {} is inside the polis; write the manual pages elsewhere",
                dir.display()
            ))
            .into());
        }
    }
    // Each page is a new file renamed into place: a name that is a link (symbolic or hard) to
    // another file, perhaps in a polis, is replaced rather than written through.
    let write_page = |path: &Path, page: &[u8]| -> anyhow::Result<()> {
        use std::io::Write as _;
        use std::os::unix::fs::PermissionsExt as _;
        // Readable as a file `std::fs::write` makes (the umask applies), not the owner's only.
        let mut file = tempfile::Builder::new()
            .permissions(std::fs::Permissions::from_mode(0o666))
            .tempfile_in(&dir)?;
        file.write_all(page)?;
        file.persist(path)?;
        Ok(())
    };
    // The main page exactly as printed, then one page per visible command, named as the
    // SUBCOMMANDS sections name them (clap's display name, `polisd-contract-open`).
    let main = dir.join("polisd.1");
    let mut page = Vec::new();
    clap_mangen::Man::new(whole.clone()).render(&mut page)?;
    write_page(&main, &page).with_context(|| format!("writing {}", main.display()))?;
    let mut written = 1;
    let mut stack: Vec<clap::Command> = whole.get_subcommands().cloned().collect();
    while let Some(cmd) = stack.pop() {
        if cmd.is_hide_set() {
            continue;
        }
        stack.extend(cmd.get_subcommands().cloned());
        let man = clap_mangen::Man::new(cmd);
        let path = dir.join(man.get_filename());
        let mut page = Vec::new();
        man.render(&mut page)?;
        write_page(&path, &page).with_context(|| format!("writing {}", path.display()))?;
        written += 1;
    }
    say!("wrote {written} manual pages to {}", dir.display());
    Ok(0)
}

/// `polisd serve`: the dashboard alone.
fn serve(args: crate::commands::cli::ServeArgs) -> anyhow::Result<u8> {
    let root = locate(args.path.get())?;
    let config = crate::daemon::config::load(args.config.as_deref())?;
    crate::daemon::init_logging(&config, None);
    let mut options = crate::dashboard::Options::from_config(&config.dashboard);
    if let Some(listen) = &args.listen {
        match listen.parse() {
            Ok(addr) => options.listen = addr,
            Err(_) => {
                return Err(Usage(format!(
                    "--listen {listen:?} is not an address and port; write e.g. 127.0.0.1:7341"
                ))
                .into())
            }
        }
    }
    let watch = crate::daemon::watch::WatchConfig {
        debounce: config.watch.debounce,
        max_delay: Some(config.watch.max_delay),
        poll_interval: config.watch.poll_interval,
        force_poll: config.watch.backend == crate::daemon::config::Backend::Poll,
        ..Default::default()
    };
    crate::dashboard::serve_alone(root, options, watch, args.json)
}

/// `polisd report`: a snapshot to standard output or a file outside `_polis/`.
fn report(args: crate::commands::cli::ReportArgs) -> anyhow::Result<u8> {
    let format: crate::dashboard::report::Format = args.format.parse().map_err(Usage)?;
    let root = locate(args.path.get())?;
    if let Some(out) = &args.out {
        let dir = out
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let canon = std::fs::canonicalize(dir)
            .with_context(|| format!("the folder of --out {} does not exist", out.display()))?;
        // The file itself too, when it is there: a symbolic link is written through, and one
        // to a file not there yet would create it wherever it points.
        let target = match std::fs::canonicalize(out) {
            Ok(target) => target,
            Err(_) if std::fs::symlink_metadata(out).is_ok_and(|m| m.is_symlink()) => {
                return Err(Refused(format!(
                    "--out {} is a symbolic link to nothing, which polisd would create wherever it points (perhaps in the polis); remove it, or write the report elsewhere",
                    out.display()
                ))
                .into())
            }
            Err(_) => canon,
        };
        if target.starts_with(crate::fs::snapshot::canonical_root(&root)) {
            return Err(Refused(format!(
                "--out {} is inside the polis; write the report elsewhere",
                out.display()
            ))
            .into());
        }
        // Writing a file truncates it under every name it has, and another may be in the polis.
        if let Ok(meta) = std::fs::metadata(out) {
            use std::os::unix::fs::MetadataExt as _;
            if meta.is_file() && meta.nlink() > 1 {
                return Err(Refused(format!(
                    "--out {} has {} hard links, and another name of it may be in the polis; \
                     remove it first, or write the report elsewhere",
                    out.display(),
                    meta.nlink()
                ))
                .into());
            }
        }
    }
    let snapshot = crate::dashboard::view::read(&root, 0);
    let name = crate::dashboard::view::PolisView::name_of(&root);
    let redaction = args
        .redact
        .then(|| crate::dashboard::report::Redaction::for_polis(&root));
    let text = crate::dashboard::report::render(&snapshot, &name, format, redaction.as_ref());
    match &args.out {
        Some(out) => {
            std::fs::write(out, &text).with_context(|| format!("writing {}", out.display()))?;
            if args.json {
                say!(
                    "{}",
                    serde_json::json!({ "format": args.format, "redacted": args.redact, "out": out, "bytes": text.len() })
                );
            } else {
                say!("wrote {} ({} bytes)", out.display(), text.len());
            }
        }
        None => say_part!("{text}"),
    }
    Ok(0)
}

/// The `_polis/` folder a command works on (SPEC §1).
pub fn locate(path: Option<&Path>) -> anyhow::Result<PathBuf> {
    let cwd = std::env::current_dir().context("reading the working directory")?;
    Ok(crate::fs::locate::locate(path, &cwd)?)
}

fn reconcile(root: &Path, json: bool) -> anyhow::Result<u8> {
    let writer = Writer::new(root)?;
    // A bar on a terminal for a big polis; nothing at all when stderr is a file or a pipe.
    let bar = progress_bar("reading settled contracts");
    let (done, findings) =
        crate::operations::reconcile_settled_with_progress(root, &writer, &|n, total| {
            if n == 1 {
                bar.set_length(total as u64);
            }
            bar.inc(1);
        })?;
    bar.finish_and_clear();
    let settled_findings: Vec<_> = findings
        .iter()
        .filter(|f| f.path.starts_with("contracts/settled/"))
        .collect();
    let exit = exit_for(settled_findings.iter().map(|f| f.severity));
    if json {
        let stats = match done.outcome {
            None => "no settled folder",
            Some(WriteOutcome::Written) => "updated",
            Some(WriteOutcome::Unchanged) => "unchanged",
        };
        say!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "replayed": done.replayed,
                "routing_stats": stats,
                "findings": settled_findings,
            }))?
        );
        return Ok(exit);
    }
    for f in &settled_findings {
        tell!("{f}");
    }
    match done.outcome {
        None => say!("no contracts/settled/ folder: nothing to reconcile, nothing written"),
        Some(WriteOutcome::Written) => say!(
            "replayed {} settlements; contracts/routing_stats.yml updated",
            done.replayed
        ),
        Some(WriteOutcome::Unchanged) => say!(
            "replayed {} settlements; contracts/routing_stats.yml unchanged",
            done.replayed
        ),
    }
    Ok(exit)
}

fn route(args: RouteArgs) -> anyhow::Result<u8> {
    let policy = args
        .policy
        .as_deref()
        .map(str::parse::<crate::protocol::routing::policy::Policy>)
        .transpose()
        .map_err(|e| Usage(e.to_string()))?;
    let root = locate(args.path.get())?;
    let polis = Polis::read(&root);
    let contract = crate::operations::route::open_contract(&polis, &args.contract_id)?;
    let options = crate::operations::route::RouteOptions {
        adaptive: args.adaptive,
        seed: args.seed,
        policy,
    };
    let routed = crate::operations::route::recommend(&polis, contract, &options)?;
    let rec = &routed.recommendation;
    // Applied before anything is printed, so a failed write is not reported after a result.
    let applied = if args.apply {
        let writer = Writer::new(&root)?;
        Some(crate::operations::route::apply(
            &polis, &writer, contract, rec,
        )?)
    } else {
        None
    };
    if args.json {
        say!("{}", serde_json::to_string_pretty(rec)?);
    } else {
        if args.explain {
            match &routed.rule {
                Some(m) if m.applied => say!("Routing {} matched and decided.", m.rule),
                Some(m) => say!(
                    "Routing {} matched, but {} is not available (not registered, away, left or inactive for 14 days): the policy decides.",
                    m.rule, m.route_to
                ),
                None => say!("No routing rule matched: the policy decides."),
            }
            say_part!("{}", route::explain(rec));
            if !routed.explanation.is_empty() {
                say!("Policy `{}`:", routed.policy);
                say_part!("{}", routed.explanation);
            }
        }
        say!(
            "Recommendation: {}",
            rec.recommendation.as_deref().unwrap_or("(none)")
        );
        say!("  Score: {:.3}", rec.score);
        say!("  Exploration pick: {}", rec.exploration);
    }
    if let Some(changed) = applied {
        if !args.json {
            say!(
                "  {} {}",
                if changed {
                    "Applied to"
                } else {
                    "Already recorded in"
                },
                contract.file.rel
            );
        }
    }
    Ok(0)
}

fn tally(args: TallyArgs) -> anyhow::Result<u8> {
    let root = locate(args.path.get())?;
    let applied = crate::operations::tally::apply(&root, args.dry_run)?;
    for u in &applied.undelivered {
        tell!("polisd: could not notify {}: {}", u.recipient, u.why);
    }
    let failed = !applied.undelivered.is_empty();
    let results = applied.results;
    // Amendments the tally skipped or read differently from what they say: never silently.
    let malformed = applied.malformed;
    if args.json {
        say!(
            "{}",
            serde_json::to_string_pretty(
                &serde_json::json!({ "results": results, "malformed": malformed })
            )?
        );
    } else {
        if results.is_empty() {
            say!("no proposed amendments");
        }
        for r in &results {
            say!(
                "{:9} {}  ({} agree, quorum {}): {}",
                r.action,
                r.amendment_id,
                r.agrees,
                r.quorum,
                r.detail
            );
        }
        for f in &malformed {
            say!("malformed {f}");
        }
    }
    Ok(u8::from(failed))
}

/// Files below which a progress bar would only flicker.
const PROGRESS_MIN_FILES: u64 = 2_000;

/// A progress bar on stderr when it is a terminal, hidden otherwise (logs, pipes, CI), and
/// hidden until the operation turns out to have at least [`PROGRESS_MIN_FILES`] files.
pub fn progress_bar(what: &'static str) -> ProgressGate {
    ProgressGate {
        bar: indicatif::ProgressBar::hidden(),
        what,
        terminal: std::io::IsTerminal::is_terminal(&std::io::stderr()),
        shown: std::sync::atomic::AtomicBool::new(false),
    }
}

/// A progress bar drawn only on a terminal and only for long operations.
pub struct ProgressGate {
    bar: indicatif::ProgressBar,
    what: &'static str,
    terminal: bool,
    shown: std::sync::atomic::AtomicBool,
}

impl ProgressGate {
    pub fn set_length(&self, total: u64) {
        self.bar.set_length(total);
        if self.terminal
            && total >= PROGRESS_MIN_FILES
            && !self.shown.swap(true, std::sync::atomic::Ordering::Relaxed)
        {
            self.bar
                .set_draw_target(indicatif::ProgressDrawTarget::stderr());
            if let Ok(style) =
                indicatif::ProgressStyle::with_template("{msg} {bar:40} {pos}/{len} ({elapsed})")
            {
                self.bar.set_style(style);
            }
            self.bar.set_message(self.what);
        }
    }

    pub fn inc(&self, n: u64) {
        self.bar.inc(n);
    }

    pub fn finish_and_clear(&self) {
        self.bar.finish_and_clear();
    }
}

/// 1 when any finding is an error, else 0.
fn exit_for(severities: impl IntoIterator<Item = Severity>) -> u8 {
    u8::from(severities.into_iter().any(|s| s == Severity::Error))
}

/// Delivers a one-shot command's notices ([`crate::operations::deliver_now`]), saying on
/// stderr whom it could not notify; whether every one was delivered.
pub fn deliver_now(
    polis: &Polis,
    writer: &Writer,
    notices: &[crate::protocol::delivery::inbox::Notification],
    now: &PolisTime,
) -> anyhow::Result<bool> {
    let failed = crate::operations::deliver_now(polis, writer, notices, now)?;
    for (who, why) in &failed {
        tell!("polisd: could not notify {who}: {why}");
    }
    Ok(failed.is_empty())
}
