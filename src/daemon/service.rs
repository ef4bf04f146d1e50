//! `polisd service install|uninstall|status`: polisd as a user service — a systemd user unit on
//! Linux, a launchd LaunchAgent on macOS.
//!
//! Rendering the unit and the plist from the checked-in templates is pure. The action layer
//! writes only the unit or plist, a first config file, and the launchd log folder; it runs the
//! service manager only when it is reachable, and otherwise prints the exact commands. It never
//! touches a polis. Home, XDG folders, the binary path and the command runner are injected so
//! tests work in temporary folders without a service manager.

use crate::daemon::config;
use anyhow::{bail, Context as _};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The systemd unit's file name.
pub const UNIT_NAME: &str = "polisd.service";
/// The LaunchAgent's label (its plist is `<label>.plist`).
pub const LAUNCHD_LABEL: &str = "dev.polisd.polisd";

const UNIT_TEMPLATE: &str = include_str!("../../systemd/polisd.service");
const PLIST_TEMPLATE: &str = include_str!("../../launchd/dev.polisd.polisd.plist");

const BINARY: &str = "@POLISD_BINARY@";
const CONFIG: &str = "@POLISD_CONFIG@";
const LOG_DIR: &str = "@POLISD_LOG_DIR@";

/// What `polisd service` was asked to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServiceAction {
    Install,
    Uninstall,
    /// With `json`, the status as one JSON object.
    Status {
        json: bool,
    },
}

/// The service manager polisd installs itself into.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Platform {
    Systemd,
    Launchd,
}

impl Platform {
    /// launchd on macOS, systemd everywhere else.
    pub fn current() -> Platform {
        if cfg!(target_os = "macos") {
            Platform::Launchd
        } else {
            Platform::Systemd
        }
    }
}

/// A path that cannot go into a unit file or plist.
#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    #[error("the {what} path {} is not absolute; service managers do not know your working directory", path.display())]
    NotAbsolute { what: &'static str, path: PathBuf },
    #[error("the {what} path {} is not valid UTF-8 or holds a control character; move it to a plain path", path.display())]
    Unrepresentable { what: &'static str, path: PathBuf },
}

fn checked<'a>(what: &'static str, path: &'a Path) -> Result<&'a str, RenderError> {
    if !path.is_absolute() {
        return Err(RenderError::NotAbsolute {
            what,
            path: path.to_path_buf(),
        });
    }
    match path.to_str() {
        Some(s) if !s.chars().any(char::is_control) => Ok(s),
        _ => Err(RenderError::Unrepresentable {
            what,
            path: path.to_path_buf(),
        }),
    }
}

/// One argument of a systemd `ExecStart=` line: `%` and `$` doubled (specifiers and variables),
/// double-quoted with C escapes when it holds a space, quote or backslash.
fn systemd_word(s: &str) -> String {
    let escaped = s.replace('%', "%%").replace('$', "$$");
    if escaped.contains(|c: char| c.is_whitespace() || c == '"' || c == '\'' || c == '\\') {
        format!("\"{}\"", escaped.replace('\\', "\\\\").replace('"', "\\\""))
    } else {
        escaped
    }
}

/// Splits an `ExecStart=` value rendered by [`systemd_word`] back into arguments.
fn systemd_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut chars = line.chars().peekable();
    loop {
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        let Some(&first) = chars.peek() else { break };
        let mut word = String::new();
        if first == '"' || first == '\'' {
            chars.next();
            while let Some(c) = chars.next() {
                match c {
                    '\\' => word.extend(chars.next()),
                    c if c == first => break,
                    c => word.push(c),
                }
            }
        } else {
            while let Some(c) = chars.next_if(|c| !c.is_whitespace()) {
                if c == '\\' {
                    word.extend(chars.next());
                } else {
                    word.push(c);
                }
            }
        }
        words.push(word.replace("%%", "%").replace("$$", "$"));
    }
    words
}

fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&apos;")
}

fn xml_unescape(s: &str) -> String {
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&apos;", "'")
        .replace("&amp;", "&")
}

/// The user unit for `binary run --config config`, from `systemd/polisd.service`.
pub fn render_systemd_unit(binary: &Path, config: &Path) -> Result<String, RenderError> {
    let binary = systemd_word(checked("polisd binary", binary)?);
    let config = systemd_word(checked("config file", config)?);
    Ok(UNIT_TEMPLATE
        .replace(BINARY, &binary)
        .replace(CONFIG, &config))
}

/// The LaunchAgent for `binary run --config config`, logging into `log_dir`, from
/// `launchd/dev.polisd.polisd.plist`.
pub fn render_launchd_plist(
    binary: &Path,
    config: &Path,
    log_dir: &Path,
) -> Result<String, RenderError> {
    let binary = xml_escape(checked("polisd binary", binary)?);
    let config = xml_escape(checked("config file", config)?);
    let log_dir = xml_escape(checked("log folder", log_dir)?.trim_end_matches('/'));
    Ok(PLIST_TEMPLATE
        .replace(BINARY, &binary)
        .replace(CONFIG, &config)
        .replace(LOG_DIR, &log_dir))
}

/// The program arguments of an installed unit or plist (binary first), to tell which binary
/// and config an installed service uses.
pub fn installed_arguments(platform: Platform, text: &str) -> Option<Vec<String>> {
    match platform {
        Platform::Systemd => text
            .lines()
            .find_map(|l| l.trim().strip_prefix("ExecStart="))
            .map(systemd_words),
        Platform::Launchd => {
            let start = text.find("<key>ProgramArguments</key>")?;
            let rest = &text[start..];
            let array = &rest[rest.find("<array>")?..rest.find("</array>")?];
            Some(
                array
                    .split("<string>")
                    .skip(1)
                    .filter_map(|s| s.split("</string>").next())
                    .map(xml_unescape)
                    .collect(),
            )
        }
    }
}

fn config_argument(args: &[String]) -> Option<PathBuf> {
    let i = args.iter().position(|a| a == "--config")?;
    args.get(i + 1).map(PathBuf::from)
}

/// Where things live. Built from the environment by [`Paths::from_env`]; tests build one under a
/// temporary home with [`Paths::under_home`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Paths {
    pub home: PathBuf,
    /// The working directory: where `install` looks for a polis, and the base of relative paths.
    pub cwd: PathBuf,
    /// The absolute path of the polisd binary the service should run.
    pub binary: PathBuf,
    /// The config file used when neither `--config` nor `$POLISD_CONFIG` names one.
    pub default_config: PathBuf,
    /// `$POLISD_CONFIG`, if set.
    pub env_config: Option<PathBuf>,
    /// `~/.config/systemd/user` (`$XDG_CONFIG_HOME/systemd/user`).
    pub systemd_user_dir: PathBuf,
    /// `~/Library/LaunchAgents`.
    pub launch_agents_dir: PathBuf,
    /// `~/Library/Logs/polisd`.
    pub launchd_log_dir: PathBuf,
}

impl Paths {
    /// The real locations for this user and the running binary.
    pub fn from_env() -> anyhow::Result<Paths> {
        let base = directories::BaseDirs::new()
            .context("cannot tell your home directory (is HOME set?)")?;
        let home = base.home_dir().to_path_buf();
        let cwd = std::env::current_dir().context("cannot read the working directory")?;
        let default_config =
            config::default_path().context("cannot tell your config directory (is HOME set?)")?;
        Ok(Paths {
            binary: current_binary()?,
            env_config: std::env::var_os(config::ENV_VAR)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from),
            default_config,
            systemd_user_dir: base.config_dir().join("systemd/user"),
            launch_agents_dir: home.join("Library/LaunchAgents"),
            launchd_log_dir: home.join("Library/Logs/polisd"),
            home,
            cwd,
        })
    }

    /// A Linux-style layout under `home` (`.config/…`, `Library/…`), for tests.
    pub fn under_home(home: &Path, cwd: &Path, binary: &Path) -> Paths {
        Paths {
            home: home.to_path_buf(),
            cwd: cwd.to_path_buf(),
            binary: binary.to_path_buf(),
            default_config: home.join(".config/polisd").join(config::FILE_NAME),
            env_config: None,
            systemd_user_dir: home.join(".config/systemd/user"),
            launch_agents_dir: home.join("Library/LaunchAgents"),
            launchd_log_dir: home.join("Library/Logs/polisd"),
        }
    }

    pub fn unit_file(&self) -> PathBuf {
        self.systemd_user_dir.join(UNIT_NAME)
    }

    pub fn plist_file(&self) -> PathBuf {
        self.launch_agents_dir
            .join(format!("{LAUNCHD_LABEL}.plist"))
    }

    fn service_file(&self, platform: Platform) -> PathBuf {
        match platform {
            Platform::Systemd => self.unit_file(),
            Platform::Launchd => self.plist_file(),
        }
    }

    fn config_location(&self, flag: Option<&Path>) -> config::Location {
        config::resolve_location(
            flag,
            self.env_config.as_deref().map(Path::as_os_str),
            Some(self.default_config.clone()),
            &self.cwd,
        )
        .expect("a default config path is always given")
    }
}

/// The running binary, preferring the `polisd` on PATH when it is the same file: a package
/// manager's stable link survives upgrades, the versioned file behind it does not.
fn current_binary() -> anyhow::Result<PathBuf> {
    let exe = std::env::current_exe().context("cannot tell where the polisd binary is")?;
    let real = std::fs::canonicalize(&exe).unwrap_or_else(|_| exe.clone());
    let name = exe.file_name().map(|n| n.to_os_string());
    if let (Some(name), Some(path)) = (name, std::env::var_os("PATH")) {
        for dir in std::env::split_paths(&path).filter(|d| d.is_absolute()) {
            let candidate = dir.join(&name);
            if std::fs::canonicalize(&candidate).is_ok_and(|c| c == real) {
                return Ok(candidate);
            }
        }
    }
    Ok(exe)
}

/// What a finished command said.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CommandOutput {
    pub success: bool,
    pub stdout: String,
    pub stderr: String,
}

/// Runs service-manager commands; tests substitute a script.
pub trait Runner {
    /// Runs `argv[0]` with the rest as arguments. `Err` when it could not be started at all.
    fn run(&mut self, argv: &[String]) -> std::io::Result<CommandOutput>;
}

/// Runs commands for real.
#[derive(Debug, Default)]
pub struct SystemRunner;

impl Runner for SystemRunner {
    fn run(&mut self, argv: &[String]) -> std::io::Result<CommandOutput> {
        let (program, args) = argv.split_first().expect("a command has a program");
        let out = std::process::Command::new(program)
            .args(args)
            .stdin(std::process::Stdio::null())
            .output()?;
        Ok(CommandOutput {
            success: out.status.success(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        })
    }
}

/// Everything an action needs from outside.
pub struct Context<'a> {
    pub paths: Paths,
    pub platform: Platform,
    pub runner: &'a mut dyn Runner,
    /// The user id, for launchd's `gui/<uid>` domain (unused with systemd).
    pub uid: u32,
}

/// The entry point for `polisd service …`: real paths, this platform's service manager.
/// Returns the exit code: 0 on success; for `status`, 0 when installed and running and 3
/// otherwise (the LSB "not running" code `systemctl status` also uses).
pub fn run(
    action: ServiceAction,
    dry_run: bool,
    config_path: Option<&Path>,
    out: &mut dyn Write,
) -> anyhow::Result<u8> {
    let mut runner = SystemRunner;
    let platform = Platform::current();
    let uid = match platform {
        Platform::Launchd => user_id(&mut runner)?,
        Platform::Systemd => 0,
    };
    let mut ctx = Context {
        paths: Paths::from_env()?,
        platform,
        runner: &mut runner,
        uid,
    };
    run_with(&mut ctx, action, dry_run, config_path, out)
}

fn user_id(runner: &mut dyn Runner) -> anyhow::Result<u32> {
    let out = runner
        .run(&argv(&["id", "-u"]))
        .context("cannot run `id -u` to find your user id")?;
    out.stdout
        .trim()
        .parse()
        .with_context(|| format!("`id -u` printed {:?}, not a user id", out.stdout.trim()))
}

/// [`run`] with injected paths, platform and command runner.
pub fn run_with(
    ctx: &mut Context<'_>,
    action: ServiceAction,
    dry_run: bool,
    config_path: Option<&Path>,
    out: &mut dyn Write,
) -> anyhow::Result<u8> {
    match action {
        ServiceAction::Install => install(ctx, dry_run, config_path, out),
        ServiceAction::Uninstall => uninstall(ctx, dry_run, out),
        ServiceAction::Status { json } => status(ctx, config_path, json, out),
    }
}

fn argv(parts: &[&str]) -> Vec<String> {
    parts.iter().map(|s| s.to_string()).collect()
}

fn show(argv: &[String]) -> String {
    argv.iter()
        .map(|a| crate::protocol::delivery::agent_hooks::shell_word(a))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Whether the service manager answers; `Err` carries why not, in its own words.
fn manager_reachable(ctx: &mut Context<'_>) -> Result<(), String> {
    let probe = match ctx.platform {
        Platform::Systemd => argv(&["systemctl", "--user", "show-environment"]),
        Platform::Launchd => vec![
            "launchctl".into(),
            "print".into(),
            format!("gui/{}", ctx.uid),
        ],
    };
    match ctx.runner.run(&probe) {
        Ok(o) if o.success => Ok(()),
        Ok(o) => Err(first_line(&o.stderr)
            .or_else(|| first_line(&o.stdout))
            .unwrap_or_else(|| format!("`{}` failed", show(&probe)))),
        Err(e) => Err(format!("cannot run {}: {e}", probe[0])),
    }
}

fn first_line(s: &str) -> Option<String> {
    s.lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .map(str::to_string)
}

fn launchd_target(ctx: &Context<'_>) -> String {
    format!("gui/{}/{LAUNCHD_LABEL}", ctx.uid)
}

/// Whether the service is running now: `Ok(true/false)`, or `Err(why unknown)`.
fn running(ctx: &mut Context<'_>) -> Result<(bool, String), String> {
    manager_reachable(ctx)?;
    match ctx.platform {
        Platform::Systemd => {
            let o = ctx
                .runner
                .run(&argv(&["systemctl", "--user", "is-active", UNIT_NAME]))
                .map_err(|e| e.to_string())?;
            // is-active prints the state and exits non-zero for anything but "active".
            let state = first_line(&o.stdout).unwrap_or_else(|| "unknown".into());
            Ok((o.success && state == "active", state))
        }
        Platform::Launchd => {
            let o = ctx
                .runner
                .run(&["launchctl".into(), "print".into(), launchd_target(ctx)])
                .map_err(|e| e.to_string())?;
            if !o.success {
                return Ok((false, "not loaded".into()));
            }
            let field = |name: &str| {
                o.stdout.lines().find_map(|l| {
                    l.trim()
                        .strip_prefix(name)
                        .and_then(|r| r.trim_start().strip_prefix('='))
                        .map(|v| v.trim().to_string())
                })
            };
            let state = field("state").unwrap_or_else(|| "unknown".into());
            let desc = match field("pid") {
                Some(pid) => format!("{state} (pid {pid})"),
                None => state.clone(),
            };
            Ok((state == "running", desc))
        }
    }
}

/// A first config file listing one polis.
fn first_config(project_root: &Path) -> String {
    let path = toml::Value::String(project_root.display().to_string());
    format!(
        "# polisd configuration, written by `polisd service install`.\n\
         # Every key, with its default: `polisd config example`. Check this file: `polisd config check`.\n\
         # Add a [[polis]] table for each further polis, then `systemctl --user reload polisd`\n\
         # (Linux) or restart the LaunchAgent (macOS).\n\
         \n\
         [[polis]]\n\
         path = {path}\n"
    )
}

/// Writes `text` to `path` atomically (temporary file in the same folder, fsync, rename),
/// creating the folder. Returns false when the file already holds exactly these bytes.
fn write_file(path: &Path, text: &str) -> anyhow::Result<bool> {
    if std::fs::read(path).is_ok_and(|old| old == text.as_bytes()) {
        return Ok(false);
    }
    let dir = path.parent().context("a file to write has a folder")?;
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let mut tmp = tempfile::Builder::new()
        .prefix(".polisd-")
        .suffix(".tmp")
        .tempfile_in(dir)
        .with_context(|| format!("cannot write in {}", dir.display()))?;
    tmp.write_all(text.as_bytes())?;
    tmp.as_file().sync_all()?;
    tmp.persist(path)
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(true)
}

fn print_file(out: &mut dyn Write, verb: &str, path: &Path, text: &str) -> std::io::Result<()> {
    writeln!(out, "{verb} {}:", path.display())?;
    for line in text.lines() {
        writeln!(out, "    {line}")?;
    }
    Ok(())
}

fn install(
    ctx: &mut Context<'_>,
    dry_run: bool,
    config_flag: Option<&Path>,
    out: &mut dyn Write,
) -> anyhow::Result<u8> {
    let location = ctx.paths.config_location(config_flag);
    let config_file = location.path.clone();

    // The config first: a service that would crash-loop on a bad config is not installed.
    let new_config = if config_file.exists() {
        let cfg = config::load_from(&location, Some(&ctx.paths.home))?;
        if cfg.polises.is_empty() {
            writeln!(
                out,
                "note: {} lists no [[polis]]; the service will watch nothing until you add one",
                config_file.display()
            )?;
        }
        for entry in &cfg.polises {
            if crate::fs::locate::locate(Some(&entry.path), &ctx.paths.cwd).is_err() {
                writeln!(
                    out,
                    "note: {} (line {}) has no _polis/CONSTITUTION.md yet",
                    entry.path.display(),
                    entry.line
                )?;
            }
        }
        None
    } else {
        let polis = crate::fs::locate::locate(None, &ctx.paths.cwd).map_err(|e| {
            anyhow::anyhow!(
                "there is no config file at {} to give the service, and none can be written: {e}.\n\
                 Run `polisd service install` inside a project that has a polis, or write that \
                 file yourself (`polisd config example` prints every key)",
                config_file.display()
            )
        })?;
        let root = polis.parent().unwrap_or(&polis).to_path_buf();
        let text = first_config(&root);
        // What we write must be what we read.
        config::parse(&text, &config_file, Some(&ctx.paths.home))
            .context("the generated config does not parse (a polisd bug)")?;
        Some(text)
    };

    let service_file = ctx.paths.service_file(ctx.platform);
    let rendered = match ctx.platform {
        Platform::Systemd => render_systemd_unit(&ctx.paths.binary, &config_file)?,
        Platform::Launchd => {
            render_launchd_plist(&ctx.paths.binary, &config_file, &ctx.paths.launchd_log_dir)?
        }
    };

    let reachable = manager_reachable(ctx);
    let was_running = reachable.is_ok() && running(ctx).is_ok_and(|(r, _)| r);
    let mut commands: Vec<Vec<String>> = Vec::new();
    match ctx.platform {
        Platform::Systemd => {
            commands.push(argv(&["systemctl", "--user", "daemon-reload"]));
            commands.push(argv(&["systemctl", "--user", "enable", "--now", UNIT_NAME]));
            // A running daemon keeps its old unit and binary until restarted; re-running
            // install after an upgrade should leave the new one running.
            if was_running {
                commands.push(argv(&["systemctl", "--user", "restart", UNIT_NAME]));
            }
        }
        Platform::Launchd => {
            let domain = format!("gui/{}", ctx.uid);
            // bootstrap refuses a loaded agent; unloading first also picks up a new plist.
            let loaded = reachable.is_ok()
                && ctx
                    .runner
                    .run(&["launchctl".into(), "print".into(), launchd_target(ctx)])
                    .is_ok_and(|o| o.success);
            if loaded {
                commands.push(vec![
                    "launchctl".into(),
                    "bootout".into(),
                    launchd_target(ctx),
                ]);
            }
            commands.push(vec![
                "launchctl".into(),
                "enable".into(),
                launchd_target(ctx),
            ]);
            commands.push(vec![
                "launchctl".into(),
                "bootstrap".into(),
                domain,
                service_file.display().to_string(),
            ]);
        }
    }

    // Files.
    if let Some(text) = &new_config {
        if dry_run {
            print_file(out, "would write", &config_file, text)?;
        } else {
            write_file(&config_file, text)?;
            writeln!(
                out,
                "wrote {} (watching the polis found here)",
                config_file.display()
            )?;
        }
    } else {
        writeln!(out, "using config {}", config_file.display())?;
    }
    if ctx.platform == Platform::Launchd {
        if dry_run {
            writeln!(out, "would create {}", ctx.paths.launchd_log_dir.display())?;
        } else {
            std::fs::create_dir_all(&ctx.paths.launchd_log_dir).with_context(|| {
                format!("cannot create {}", ctx.paths.launchd_log_dir.display())
            })?;
        }
    }
    if dry_run {
        print_file(out, "would write", &service_file, &rendered)?;
    } else if write_file(&service_file, &rendered)? {
        writeln!(out, "wrote {}", service_file.display())?;
    } else {
        writeln!(out, "{} is up to date", service_file.display())?;
    }
    if ctx
        .paths
        .binary
        .components()
        .any(|c| c.as_os_str() == "target")
    {
        writeln!(
            out,
            "note: the service runs {}, a build folder; `cargo install --path .` gives it a path \
             that `cargo clean` does not remove",
            ctx.paths.binary.display()
        )?;
    }

    // Commands.
    match reachable {
        Ok(()) if dry_run => {
            writeln!(out, "would run:")?;
            for c in &commands {
                writeln!(out, "    {}", show(c))?;
            }
        }
        Ok(()) => {
            for c in &commands {
                writeln!(out, "$ {}", show(c))?;
                let o = ctx
                    .runner
                    .run(c)
                    .with_context(|| format!("cannot run {}", c[0]))?;
                if !o.success {
                    bail!(
                        "`{}` failed: {}",
                        show(c),
                        first_line(&o.stderr).unwrap_or_else(|| "no message".into())
                    );
                }
            }
            match ctx.platform {
                Platform::Systemd => writeln!(
                    out,
                    "polisd is running and starts when you log in; logs: journalctl --user -u polisd\n\
                     To keep it running while you are logged out: loginctl enable-linger"
                )?,
                Platform::Launchd => writeln!(
                    out,
                    "polisd is running and starts when you log in; logs: {}",
                    ctx.paths.launchd_log_dir.display()
                )?,
            }
        }
        Err(why) => {
            let manager = match ctx.platform {
                Platform::Systemd => "the systemd user manager",
                Platform::Launchd => "launchd",
            };
            writeln!(
                out,
                "{manager} cannot be reached here ({why}).\n\
                 {}start the service, run these commands in your login session:",
                if dry_run {
                    "Once `polisd service install` has written the service file (this dry run wrote nothing), to "
                } else {
                    "The service file is in place; to "
                }
            )?;
            for c in &commands {
                writeln!(out, "    {}", show(c))?;
            }
        }
    }
    Ok(0)
}

fn uninstall(ctx: &mut Context<'_>, dry_run: bool, out: &mut dyn Write) -> anyhow::Result<u8> {
    let service_file = ctx.paths.service_file(ctx.platform);
    let installed = service_file.exists();
    let reachable = manager_reachable(ctx);
    let loaded = reachable.is_ok()
        && match ctx.platform {
            Platform::Systemd => installed,
            Platform::Launchd => ctx
                .runner
                .run(&["launchctl".into(), "print".into(), launchd_target(ctx)])
                .is_ok_and(|o| o.success),
        };
    if !installed && !loaded {
        writeln!(
            out,
            "polisd is not installed as a service ({} does not exist)",
            service_file.display()
        )?;
        return Ok(0);
    }

    let stop: Vec<Vec<String>> = match ctx.platform {
        Platform::Systemd => vec![argv(&[
            "systemctl",
            "--user",
            "disable",
            "--now",
            UNIT_NAME,
        ])],
        Platform::Launchd => vec![vec![
            "launchctl".into(),
            "bootout".into(),
            launchd_target(ctx),
        ]],
    };
    let after: Vec<Vec<String>> = match ctx.platform {
        Platform::Systemd => vec![argv(&["systemctl", "--user", "daemon-reload"])],
        Platform::Launchd => vec![],
    };
    // `disable` removes this link; without a reachable manager we remove it ourselves so no
    // dangling link is left behind.
    let wants_link = ctx
        .paths
        .systemd_user_dir
        .join("default.target.wants")
        .join(UNIT_NAME);

    if dry_run {
        if loaded {
            writeln!(out, "would run:")?;
            for c in &stop {
                writeln!(out, "    {}", show(c))?;
            }
        }
        if installed {
            writeln!(out, "would remove {}", service_file.display())?;
        }
        if loaded && !after.is_empty() {
            writeln!(out, "would run:")?;
            for c in &after {
                writeln!(out, "    {}", show(c))?;
            }
        }
        if let Err(why) = &reachable {
            writeln!(out, "(the service manager cannot be reached here: {why})")?;
        }
        return Ok(0);
    }

    if loaded {
        for c in &stop {
            writeln!(out, "$ {}", show(c))?;
            let o = ctx
                .runner
                .run(c)
                .with_context(|| format!("cannot run {}", c[0]))?;
            // bootout of an agent that is not loaded fails harmlessly; anything else is real.
            if !o.success && ctx.platform == Platform::Systemd {
                bail!(
                    "`{}` failed: {}",
                    show(c),
                    first_line(&o.stderr).unwrap_or_else(|| "no message".into())
                );
            }
        }
    }
    if ctx.platform == Platform::Systemd
        && !loaded
        && std::fs::symlink_metadata(&wants_link).is_ok()
    {
        std::fs::remove_file(&wants_link)
            .with_context(|| format!("cannot remove {}", wants_link.display()))?;
        writeln!(out, "removed {}", wants_link.display())?;
    }
    if installed {
        std::fs::remove_file(&service_file)
            .with_context(|| format!("cannot remove {}", service_file.display()))?;
        writeln!(out, "removed {}", service_file.display())?;
    }
    if loaded {
        for c in &after {
            writeln!(out, "$ {}", show(c))?;
            ctx.runner
                .run(c)
                .with_context(|| format!("cannot run {}", c[0]))?;
        }
    }
    if let Err(why) = &reachable {
        writeln!(
            out,
            "the service manager cannot be reached here ({why}); if polisd runs in your login \
             session, stop it there with:"
        )?;
        let cmds = match ctx.platform {
            Platform::Systemd => vec![
                argv(&["systemctl", "--user", "stop", UNIT_NAME]),
                argv(&["systemctl", "--user", "daemon-reload"]),
            ],
            Platform::Launchd => stop.clone(),
        };
        for c in &cmds {
            writeln!(out, "    {}", show(c))?;
        }
    }
    writeln!(
        out,
        "the configuration is kept; delete it yourself if you no longer need it"
    )?;
    Ok(0)
}

/// What `polisd service status` found, for a person (text) or a tool (`--json`).
#[derive(Debug, serde::Serialize)]
struct ServiceStatus {
    service_file: PathBuf,
    installed: bool,
    /// The binary the installed unit runs, and what is wrong with it if anything.
    binary: Option<String>,
    binary_problem: Option<&'static str>,
    /// `None` when the service manager cannot be reached.
    running: Option<bool>,
    /// The manager's word for the state, or why it cannot be reached.
    state: String,
    /// The config file the service uses (`None`: absent, so the defaults).
    config: Option<PathBuf>,
    config_looked_for: PathBuf,
    config_error: Option<String>,
    polises: Vec<WatchedPolis>,
}

#[derive(Debug, serde::Serialize)]
struct WatchedPolis {
    path: PathBuf,
    /// Whether a polis is there (`_polis/CONSTITUTION.md`).
    found: bool,
}

fn status(
    ctx: &mut Context<'_>,
    config_flag: Option<&Path>,
    json: bool,
    out: &mut dyn Write,
) -> anyhow::Result<u8> {
    let st = service_status(ctx, config_flag);
    if json {
        serde_json::to_writer_pretty(&mut *out, &st)?;
        writeln!(out)?;
    } else {
        write_status(&st, out)?;
    }
    let healthy = st.installed && st.running == Some(true) && st.config_error.is_none();
    // 3 is "not running" in the LSB convention service managers use for status.
    Ok(if healthy { 0 } else { 3 })
}

fn service_status(ctx: &mut Context<'_>, config_flag: Option<&Path>) -> ServiceStatus {
    let service_file = ctx.paths.service_file(ctx.platform);
    let installed = std::fs::read_to_string(&service_file).ok();
    let args = installed
        .as_deref()
        .and_then(|text| installed_arguments(ctx.platform, text));
    let binary = args.as_ref().and_then(|a| a.first()).cloned();
    let binary_problem = binary.as_deref().and_then(|b| {
        if !Path::new(b).exists() {
            Some("missing; run `polisd service install` again")
        } else if Path::new(b) != ctx.paths.binary {
            Some("not this polisd")
        } else {
            None
        }
    });
    let from_unit = args.as_deref().and_then(config_argument);
    let (running, state) = match running(ctx) {
        Ok((r, state)) => (Some(r), state),
        Err(why) => (None, why),
    };
    // The config the service uses, unless another was asked about.
    let location = match (config_flag, from_unit) {
        (None, Some(path)) => config::Location {
            path,
            origin: config::Origin::Flag,
        },
        _ => ctx.paths.config_location(config_flag),
    };
    let (config, config_error, polises) = match config::load_from(&location, Some(&ctx.paths.home))
    {
        Ok(cfg) => {
            let polises = cfg
                .polises
                .iter()
                .map(|entry| WatchedPolis {
                    path: entry.path.clone(),
                    found: crate::fs::locate::locate(Some(&entry.path), &ctx.paths.cwd).is_ok(),
                })
                .collect();
            (cfg.file, None, polises)
        }
        Err(e) => (None, Some(e.to_string()), Vec::new()),
    };
    ServiceStatus {
        service_file,
        installed: installed.is_some(),
        binary,
        binary_problem,
        running,
        state,
        config,
        config_looked_for: location.path,
        config_error,
        polises,
    }
}

fn write_status(st: &ServiceStatus, out: &mut dyn Write) -> std::io::Result<()> {
    let file = st.service_file.display();
    if st.installed {
        writeln!(out, "installed: yes ({file})")?;
    } else {
        writeln!(out, "installed: no ({file} does not exist)")?;
    }
    if let Some(binary) = &st.binary {
        let note = st
            .binary_problem
            .map(|p| format!(" — {p}"))
            .unwrap_or_default();
        writeln!(out, "binary:    {binary}{note}")?;
    }
    match st.running {
        Some(true) => writeln!(out, "running:   yes")?,
        Some(false) => writeln!(out, "running:   no ({})", st.state)?,
        None => writeln!(
            out,
            "running:   unknown (the service manager cannot be reached: {})",
            st.state
        )?,
    }
    if let Some(e) = &st.config_error {
        return writeln!(out, "config:    error: {e}");
    }
    match &st.config {
        Some(f) => writeln!(out, "config:    {}", f.display())?,
        None => writeln!(
            out,
            "config:    {} (absent: defaults)",
            st.config_looked_for.display()
        )?,
    }
    if st.polises.is_empty() {
        return writeln!(out, "polises:   none listed");
    }
    writeln!(out, "polises:")?;
    for p in &st.polises {
        let note = if p.found {
            ""
        } else {
            " — no _polis/CONSTITUTION.md there"
        };
        writeln!(out, "    {}{note}", p.path.display())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn systemd_words_round_trip_awkward_paths() {
        for p in [
            "/usr/bin/polisd",
            "/home/a b/polisd",
            "/x/100%/$HOME/\"q\"/back\\slash",
            "/o'k",
        ] {
            let line = format!(
                "{} run --config {}",
                systemd_word(p),
                systemd_word("/c/config.toml")
            );
            assert_eq!(
                systemd_words(&line),
                vec![p, "run", "--config", "/c/config.toml"],
                "{line}"
            );
        }
    }

    #[test]
    fn plist_arguments_round_trip_xml_characters() {
        let text = render_launchd_plist(
            Path::new("/Apps/a&b <c>/polisd"),
            Path::new("/c/config.toml"),
            Path::new("/l"),
        )
        .unwrap();
        assert_eq!(
            installed_arguments(Platform::Launchd, &text).unwrap(),
            vec!["/Apps/a&b <c>/polisd", "run", "--config", "/c/config.toml"]
        );
    }

    #[test]
    fn relative_and_control_paths_are_refused() {
        assert!(matches!(
            render_systemd_unit(Path::new("polisd"), Path::new("/c")),
            Err(RenderError::NotAbsolute { .. })
        ));
        assert!(matches!(
            render_launchd_plist(Path::new("/b"), Path::new("/c\nx"), Path::new("/l")),
            Err(RenderError::Unrepresentable { .. })
        ));
    }

    #[test]
    fn templates_have_each_placeholder_once_and_only_in_values() {
        // A placeholder in a comment would put a path there too, and `--` in a path would end
        // an XML comment early.
        assert_eq!(UNIT_TEMPLATE.matches(BINARY).count(), 1);
        assert_eq!(UNIT_TEMPLATE.matches(CONFIG).count(), 1);
        assert_eq!(PLIST_TEMPLATE.matches(BINARY).count(), 1);
        assert_eq!(PLIST_TEMPLATE.matches(CONFIG).count(), 1);
        assert_eq!(PLIST_TEMPLATE.matches(LOG_DIR).count(), 2);
        let unit =
            render_systemd_unit(Path::new("/a--b/polisd"), Path::new("/c/config.toml")).unwrap();
        assert_eq!(unit.matches("/a--b/polisd").count(), 1);
        let plist =
            render_launchd_plist(Path::new("/a--b/polisd"), Path::new("/c"), Path::new("/l"))
                .unwrap();
        assert_eq!(plist.matches("/a--b/polisd").count(), 1);
    }

    #[test]
    fn first_config_quotes_the_path() {
        let text = first_config(Path::new("/p/with \"quote\""));
        let cfg = config::parse(&text, Path::new("/c/config.toml"), None).unwrap();
        assert_eq!(cfg.polises[0].path, PathBuf::from("/p/with \"quote\""));
    }
}
