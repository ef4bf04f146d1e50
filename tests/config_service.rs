//! The configuration file and `polisd service`: config.example.toml documents every key, config
//! errors are located, and `service install|uninstall|status` render, write and run what they
//! should — in temporary homes, with a scripted service manager.

use polisd::daemon::config::{self, ConfigError};
use polisd::daemon::service::{
    self, render_launchd_plist, render_systemd_unit, CommandOutput, Context, Paths, Platform,
    Runner, ServiceAction, LAUNCHD_LABEL,
};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

const EXAMPLE: &str = include_str!("../config.example.toml");

// ------------------------------------------------------------------------------------------
// config.example.toml and config errors

#[test]
fn example_config_documents_every_accepted_key() {
    let documented = config::keys_of_document(EXAMPLE).expect("config.example.toml is TOML");
    let accepted = config::accepted_keys();
    let undocumented: Vec<_> = accepted.difference(&documented).collect();
    let unknown: Vec<_> = documented.difference(&accepted).collect();
    assert!(
        undocumented.is_empty() && unknown.is_empty(),
        "config.example.toml is out of step with the code\n  accepted but not documented: {undocumented:?}\n  documented but not accepted: {unknown:?}"
    );
}

#[test]
fn example_config_parses_and_shows_the_defaults() {
    let cfg = config::parse(
        EXAMPLE,
        Path::new("/cfg/config.toml"),
        Some(Path::new("/home/u")),
    )
    .unwrap_or_else(|e| panic!("config.example.toml does not load: {e}"));
    let default = config::Config::default();
    assert_eq!(
        cfg.watch, default.watch,
        "[watch] values are not the defaults"
    );
    assert_eq!(
        cfg.behaviour, default.behaviour,
        "[behaviour] values are not the defaults"
    );
    assert_eq!(cfg.notifications, default.notifications);
    assert_eq!(cfg.log, default.log);
    assert_eq!(cfg.polises.len(), 1);
    assert_eq!(cfg.polises[0].path, PathBuf::from("/home/u/project"));
}

#[test]
fn config_error_names_file_line_key_and_accepted_values() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("config.toml");
    std::fs::write(
        &file,
        "[watch]\ndebounce = \"200ms\"\nbackend = \"fsevents\"\n",
    )
    .unwrap();
    let err = config::load(Some(&file)).unwrap_err();
    let text = err.to_string();
    assert!(
        matches!(err, ConfigError::Invalid { line: 3, .. }),
        "{err:?}"
    );
    for want in [
        file.display().to_string(),
        ":3:".into(),
        "watch.backend".into(),
        "auto".into(),
        "native".into(),
        "poll".into(),
    ] {
        assert!(text.contains(&want), "{text:?} does not mention {want:?}");
    }
}

#[test]
fn config_unknown_key_error_names_the_key_and_alternatives() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("config.toml");
    std::fs::write(&file, "[[polis]]\npath = \"/p\"\nauto_rout = false\n").unwrap();
    let text = config::load(Some(&file)).unwrap_err().to_string();
    assert!(text.contains(":3:"), "{text}");
    assert!(text.contains("polis.auto_rout"), "{text}");
    assert!(text.contains("auto_route"), "{text}");
}

#[test]
fn config_named_by_flag_must_exist() {
    let dir = tempfile::tempdir().unwrap();
    let err = config::load(Some(&dir.path().join("absent.toml"))).unwrap_err();
    assert!(matches!(err, ConfigError::Missing { .. }), "{err:?}");
    assert!(err.to_string().contains("--config"), "{err}");
}

// ------------------------------------------------------------------------------------------
// A scripted service manager

#[derive(Default)]
struct Script {
    /// Answers by command prefix ("systemctl --user is-active"); unlisted commands succeed.
    answers: BTreeMap<String, CommandOutput>,
    calls: Vec<String>,
}

impl Script {
    fn answer(mut self, prefix: &str, success: bool, stdout: &str, stderr: &str) -> Self {
        self.answers.insert(
            prefix.to_string(),
            CommandOutput {
                success,
                stdout: stdout.into(),
                stderr: stderr.into(),
            },
        );
        self
    }

    fn systemd_unreachable() -> Self {
        Script::default().answer(
            "systemctl --user show-environment",
            false,
            "",
            "Failed to connect to bus: No medium found\n",
        )
    }
}

impl Runner for Script {
    fn run(&mut self, argv: &[String]) -> std::io::Result<CommandOutput> {
        let line = argv.join(" ");
        self.calls.push(line.clone());
        let best = self
            .answers
            .iter()
            .filter(|(prefix, _)| line.starts_with(prefix.as_str()))
            .max_by_key(|(prefix, _)| prefix.len());
        Ok(best.map(|(_, o)| o.clone()).unwrap_or(CommandOutput {
            success: true,
            ..CommandOutput::default()
        }))
    }
}

/// A temporary home with a polis at `~/proj`, the working directory inside it.
struct Home {
    dir: tempfile::TempDir,
}

impl Home {
    fn new() -> Home {
        let dir = tempfile::tempdir().unwrap();
        let polis = dir.path().join("proj/_polis");
        std::fs::create_dir_all(&polis).unwrap();
        std::fs::write(polis.join("CONSTITUTION.md"), "# Constitution\n").unwrap();
        std::fs::create_dir_all(dir.path().join("proj/src")).unwrap();
        Home { dir }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn paths(&self) -> Paths {
        Paths::under_home(
            self.path(),
            &self.path().join("proj/src"),
            Path::new(env!("CARGO_BIN_EXE_polisd")),
        )
    }

    /// Runs an action; returns exit code and output.
    #[track_caller]
    fn run(
        &self,
        platform: Platform,
        script: &mut Script,
        action: ServiceAction,
        dry_run: bool,
    ) -> (u8, String) {
        let mut ctx = Context {
            paths: self.paths(),
            platform,
            runner: script,
            uid: 501,
        };
        let mut out = Vec::new();
        let code =
            service::run_with(&mut ctx, action, dry_run, None, &mut out).unwrap_or_else(|e| {
                panic!(
                    "{action:?} failed: {e:#}\n{}",
                    String::from_utf8_lossy(&out)
                )
            });
        (code, String::from_utf8(out).unwrap())
    }

    fn files(&self) -> Vec<PathBuf> {
        fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
            for e in std::fs::read_dir(dir).unwrap() {
                let p = e.unwrap().path();
                if p.is_dir() {
                    walk(&p, out);
                } else {
                    out.push(p);
                }
            }
        }
        let mut out = Vec::new();
        walk(self.path(), &mut out);
        out.sort();
        out
    }
}

/// The indented file body `install --dry-run` prints after "would write <path>:".
#[track_caller]
fn printed_file(output: &str, path: &Path) -> String {
    let header = format!("would write {}:", path.display());
    let start = output
        .find(&header)
        .unwrap_or_else(|| panic!("no {header:?} in\n{output}"));
    output[start + header.len()..]
        .lines()
        .skip(1)
        .take_while(|l| l.starts_with("    ") || l.is_empty())
        .map(|l| l.strip_prefix("    ").unwrap_or(l))
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
}

#[track_caller]
fn unit_value<'a>(unit: &'a str, key: &str) -> &'a str {
    unit.lines()
        .find_map(|l| l.strip_prefix(key).and_then(|r| r.strip_prefix('=')))
        .unwrap_or_else(|| panic!("no {key}= in\n{unit}"))
}

// ------------------------------------------------------------------------------------------
// systemd

#[test]
fn install_dry_run_renders_systemd_unit_with_absolute_paths_and_writes_nothing() {
    let home = Home::new();
    let before = home.files();
    let mut script = Script::systemd_unreachable();
    let (code, out) = home.run(Platform::Systemd, &mut script, ServiceAction::Install, true);
    assert_eq!(code, 0);
    assert_eq!(home.files(), before, "--dry-run wrote something");
    // The commands it ends with need the file a real install writes, and it says so.
    assert!(out.contains("this dry run wrote nothing"), "{out}");

    let unit_path = home.path().join(".config/systemd/user/polisd.service");
    let unit = printed_file(&out, &unit_path);
    let config_path = home.path().join(".config/polisd/config.toml");
    assert_eq!(
        unit_value(&unit, "ExecStart"),
        format!(
            "{} run --config {}",
            env!("CARGO_BIN_EXE_polisd"),
            config_path.display()
        )
    );
    for (key, value) in [
        ("Type", "notify"),
        ("ExecReload", "/bin/kill -HUP $MAINPID"),
        ("WatchdogSec", "30"),
        ("Restart", "on-failure"),
        ("StateDirectory", "polisd"),
        ("NoNewPrivileges", "yes"),
        ("WantedBy", "default.target"),
    ] {
        assert_eq!(unit_value(&unit, key), value, "{key}");
    }
    assert!(!unit.contains("@POLISD_"), "placeholder left in\n{unit}");
    // The daemon serves the dashboard on TCP (127.0.0.1:7341 by default, or any IPv4 or IPv6
    // address): a unit that allows only Unix sockets would start without it.
    let families: Vec<&str> = unit_value(&unit, "RestrictAddressFamilies")
        .split_whitespace()
        .collect();
    for family in ["AF_UNIX", "AF_INET", "AF_INET6"] {
        assert!(
            families.contains(&family),
            "{family} not allowed: {families:?}"
        );
    }

    // The first config lists the polis found from the working directory.
    let cfg = printed_file(&out, &config_path);
    let parsed = config::parse(&cfg, &config_path, None).unwrap();
    assert_eq!(parsed.polis_paths(), vec![home.path().join("proj")]);

    // The manager is unreachable: the exact commands are printed, and nothing else was run.
    assert!(out.contains("Failed to connect to bus"), "{out}");
    assert!(
        out.contains("    systemctl --user daemon-reload\n"),
        "{out}"
    );
    assert!(
        out.contains("    systemctl --user enable --now polisd.service\n"),
        "{out}"
    );
    assert_eq!(script.calls, vec!["systemctl --user show-environment"]);
}

#[test]
fn install_without_user_manager_writes_unit_and_config_and_prints_commands() {
    let home = Home::new();
    let mut script = Script::systemd_unreachable();
    let (code, out) = home.run(
        Platform::Systemd,
        &mut script,
        ServiceAction::Install,
        false,
    );
    assert_eq!(code, 0, "{out}");
    let unit =
        std::fs::read_to_string(home.path().join(".config/systemd/user/polisd.service")).unwrap();
    assert!(unit.contains(env!("CARGO_BIN_EXE_polisd")));
    let cfg = config::load(Some(&home.path().join(".config/polisd/config.toml"))).unwrap();
    assert_eq!(cfg.polis_paths(), vec![home.path().join("proj")]);
    assert!(
        out.contains("systemctl --user enable --now polisd.service"),
        "{out}"
    );
    assert_eq!(script.calls, vec!["systemctl --user show-environment"]);

    // A second install changes nothing and keeps the config.
    std::fs::write(
        home.path().join(".config/polisd/config.toml"),
        "[[polis]]\npath = \"~/proj\"\n[log]\nlevel = \"debug\"\n",
    )
    .unwrap();
    let (_, out) = home.run(
        Platform::Systemd,
        &mut script,
        ServiceAction::Install,
        false,
    );
    assert!(out.contains("is up to date"), "{out}");
    let kept = std::fs::read_to_string(home.path().join(".config/polisd/config.toml")).unwrap();
    assert!(kept.contains("debug"));
}

#[test]
fn install_with_user_manager_reloads_enables_and_starts() {
    let home = Home::new();
    let mut script =
        Script::default().answer("systemctl --user is-active", false, "inactive\n", "");
    let (code, out) = home.run(
        Platform::Systemd,
        &mut script,
        ServiceAction::Install,
        false,
    );
    assert_eq!(code, 0, "{out}");
    let run: Vec<_> = script
        .calls
        .iter()
        .filter(|c| !c.contains("show-environment") && !c.contains("is-active"))
        .cloned()
        .collect();
    assert_eq!(
        run,
        vec![
            "systemctl --user daemon-reload",
            "systemctl --user enable --now polisd.service"
        ]
    );
    assert!(
        out.contains("$ systemctl --user enable --now polisd.service"),
        "{out}"
    );
}

#[test]
fn install_restarts_a_running_service_so_a_new_unit_or_binary_takes_effect() {
    let home = Home::new();
    let unit = home.path().join(".config/systemd/user/polisd.service");
    std::fs::create_dir_all(unit.parent().unwrap()).unwrap();
    std::fs::write(&unit, "[Service]\nExecStart=/old/polisd run\n").unwrap();
    let mut script = Script::default().answer("systemctl --user is-active", true, "active\n", "");
    home.run(
        Platform::Systemd,
        &mut script,
        ServiceAction::Install,
        false,
    );
    assert!(
        script
            .calls
            .contains(&"systemctl --user restart polisd.service".to_string()),
        "{:?}",
        script.calls
    );
}

#[test]
fn install_refuses_an_invalid_existing_config() {
    let home = Home::new();
    let cfg = home.path().join(".config/polisd/config.toml");
    std::fs::create_dir_all(cfg.parent().unwrap()).unwrap();
    std::fs::write(&cfg, "[watch]\nbackend = \"fast\"\n").unwrap();
    let mut script = Script::systemd_unreachable();
    let mut ctx = Context {
        paths: home.paths(),
        platform: Platform::Systemd,
        runner: &mut script,
        uid: 0,
    };
    let err = service::run_with(
        &mut ctx,
        ServiceAction::Install,
        false,
        None,
        &mut Vec::new(),
    )
    .unwrap_err();
    assert!(err.to_string().contains("watch.backend"), "{err:#}");
    assert!(!home
        .path()
        .join(".config/systemd/user/polisd.service")
        .exists());
}

#[test]
fn install_outside_a_polis_without_config_says_what_to_do() {
    let home = tempfile::tempdir().unwrap();
    let mut script = Script::systemd_unreachable();
    let mut ctx = Context {
        paths: Paths::under_home(home.path(), home.path(), Path::new("/usr/bin/polisd")),
        platform: Platform::Systemd,
        runner: &mut script,
        uid: 0,
    };
    let err = service::run_with(
        &mut ctx,
        ServiceAction::Install,
        false,
        None,
        &mut Vec::new(),
    )
    .unwrap_err();
    let text = format!("{err:#}");
    assert!(
        text.contains("polisd config example") && text.contains("polis"),
        "{text}"
    );
}

#[test]
fn status_reports_installed_running_and_watched_polises() {
    let home = Home::new();
    let mut script =
        Script::default().answer("systemctl --user is-active", false, "inactive\n", "");
    let (code, out) = home.run(
        Platform::Systemd,
        &mut script,
        ServiceAction::Status { json: false },
        false,
    );
    assert_eq!(code, 3, "{out}");
    assert!(out.contains("installed: no"), "{out}");

    home.run(
        Platform::Systemd,
        &mut script,
        ServiceAction::Install,
        false,
    );
    let mut script = Script::default().answer("systemctl --user is-active", true, "active\n", "");
    let (code, out) = home.run(
        Platform::Systemd,
        &mut script,
        ServiceAction::Status { json: false },
        false,
    );
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("installed: yes"), "{out}");
    assert!(out.contains("running:   yes"), "{out}");
    assert!(
        out.contains(&format!("    {}\n", home.path().join("proj").display())),
        "{out}"
    );

    let mut script = Script::default().answer("systemctl --user is-active", true, "active\n", "");
    let (code, out) = home.run(
        Platform::Systemd,
        &mut script,
        ServiceAction::Status { json: true },
        false,
    );
    assert_eq!(code, 0, "{out}");
    let st: serde_json::Value = serde_json::from_str(&out).expect(&out);
    assert_eq!(st["installed"], true, "{out}");
    assert_eq!(st["running"], true, "{out}");
    assert_eq!(st["config_error"], serde_json::Value::Null, "{out}");
    assert_eq!(
        st["polises"][0]["path"],
        home.path().join("proj").display().to_string(),
        "{out}"
    );

    let mut script = Script::systemd_unreachable();
    let (code, out) = home.run(
        Platform::Systemd,
        &mut script,
        ServiceAction::Status { json: false },
        false,
    );
    assert_eq!(code, 3);
    assert!(out.contains("running:   unknown"), "{out}");
    let mut script = Script::systemd_unreachable();
    let (code, out) = home.run(
        Platform::Systemd,
        &mut script,
        ServiceAction::Status { json: true },
        false,
    );
    assert_eq!(code, 3);
    let st: serde_json::Value = serde_json::from_str(&out).expect(&out);
    assert_eq!(st["running"], serde_json::Value::Null, "{out}");
}

#[test]
fn uninstall_stops_and_removes_the_unit_and_keeps_the_config() {
    let home = Home::new();
    let mut script = Script::default();
    home.run(
        Platform::Systemd,
        &mut script,
        ServiceAction::Install,
        false,
    );
    let unit = home.path().join(".config/systemd/user/polisd.service");
    assert!(unit.exists());

    let mut script = Script::default();
    let (code, out) = home.run(
        Platform::Systemd,
        &mut script,
        ServiceAction::Uninstall,
        true,
    );
    assert_eq!(code, 0);
    assert!(unit.exists(), "--dry-run removed the unit");
    assert!(
        out.contains("systemctl --user disable --now polisd.service"),
        "{out}"
    );

    let mut script = Script::default();
    let (code, _) = home.run(
        Platform::Systemd,
        &mut script,
        ServiceAction::Uninstall,
        false,
    );
    assert_eq!(code, 0);
    assert!(!unit.exists());
    assert!(script
        .calls
        .contains(&"systemctl --user disable --now polisd.service".into()));
    assert!(home.path().join(".config/polisd/config.toml").exists());
}

#[test]
fn uninstall_without_user_manager_removes_the_enable_link() {
    let home = Home::new();
    let mut script = Script::systemd_unreachable();
    home.run(
        Platform::Systemd,
        &mut script,
        ServiceAction::Install,
        false,
    );
    let dir = home.path().join(".config/systemd/user");
    let link = dir.join("default.target.wants/polisd.service");
    std::fs::create_dir_all(link.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(dir.join("polisd.service"), &link).unwrap();
    let (_, out) = home.run(
        Platform::Systemd,
        &mut script,
        ServiceAction::Uninstall,
        false,
    );
    assert!(std::fs::symlink_metadata(&link).is_err(), "{out}");
    assert!(!dir.join("polisd.service").exists());
    assert!(
        out.contains("systemctl --user stop polisd.service"),
        "{out}"
    );
}

/// `systemd-analyze --user verify` on the unit `install` renders. It needs the real binary (it
/// checks ExecStart is executable) and a runtime directory, which containers often lack.
#[test]
fn systemd_analyze_verify_accepts_the_rendered_unit() {
    if Command::new("systemd-analyze")
        .arg("--version")
        .output()
        .is_err()
    {
        println!("NOTE: systemd-analyze is not installed; skipping the unit verification (CI installs it)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let unit = render_systemd_unit(
        Path::new(env!("CARGO_BIN_EXE_polisd")),
        &dir.path().join("cfg dir/config.toml"),
    )
    .unwrap();
    let (ok, complaints) = verify_unit(dir.path(), &unit);
    assert!(
        ok && complaints.is_empty(),
        "systemd-analyze rejects the unit:\n{complaints}\n{unit}"
    );

    // The check can fail: an unknown key is only a warning to systemd, and it must be caught.
    let broken = unit.replace("[Service]\n", "[Service]\nWatchdogSecs=30\n");
    let (_, complaints) = verify_unit(dir.path(), &broken);
    assert!(
        complaints.contains("WatchdogSecs"),
        "the broken unit passed:\n{complaints}"
    );
}

/// Runs `systemd-analyze --user verify`; returns success and the stderr lines about the unit.
fn verify_unit(dir: &Path, unit: &str) -> (bool, String) {
    let file = dir.join("polisd.service");
    std::fs::write(&file, unit).unwrap();
    let runtime = dir.join("runtime");
    std::fs::create_dir_all(&runtime).unwrap();
    let mut cmd = Command::new("systemd-analyze");
    cmd.args(["--user", "verify"]).arg(&file);
    if std::env::var_os("XDG_RUNTIME_DIR").is_none() {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&runtime, std::fs::Permissions::from_mode(0o700)).unwrap();
        cmd.env("XDG_RUNTIME_DIR", &runtime);
    }
    let out = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let complaints: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("polisd.service"))
        .collect();
    let ok = out.status.success();
    let mut text = complaints.join("\n");
    if !ok {
        text = format!("exit {:?}\n{stderr}", out.status.code());
    }
    (ok, text)
}

// ------------------------------------------------------------------------------------------
// launchd

#[test]
fn install_dry_run_renders_a_launchd_plist_that_parses() {
    let home = Home::new();
    let before = home.files();
    let mut script = Script::default();
    let (code, out) = home.run(Platform::Launchd, &mut script, ServiceAction::Install, true);
    assert_eq!(code, 0);
    assert_eq!(home.files(), before, "--dry-run wrote something");
    let plist_path = home
        .path()
        .join(format!("Library/LaunchAgents/{LAUNCHD_LABEL}.plist"));
    let text = printed_file(&out, &plist_path);
    let root = plist::parse(&text).unwrap_or_else(|e| panic!("not a property list: {e}\n{text}"));
    let log_dir = home.path().join("Library/Logs/polisd");
    check_plist(
        &root,
        &log_dir,
        &home.path().join(".config/polisd/config.toml"),
    );
    // On macOS, plutil checks it too; elsewhere the structural parse above stands alone.
    let file = home.path().join("check.plist");
    std::fs::write(&file, &text).unwrap();
    if let Ok(lint) = Command::new("plutil").arg("-lint").arg(&file).output() {
        assert!(
            lint.status.success(),
            "plutil: {}",
            String::from_utf8_lossy(&lint.stdout)
        );
    }
    assert!(
        out.contains(&format!(
            "launchctl bootstrap gui/501 {}",
            plist_path.display()
        )),
        "{out}"
    );
}

#[test]
fn install_with_launchd_replaces_a_loaded_agent() {
    let home = Home::new();
    let mut script = Script::default().answer(
        &format!("launchctl print gui/501/{LAUNCHD_LABEL}"),
        true,
        "state = running\npid = 42\n",
        "",
    );
    let (code, out) = home.run(
        Platform::Launchd,
        &mut script,
        ServiceAction::Install,
        false,
    );
    assert_eq!(code, 0, "{out}");
    let plist = home
        .path()
        .join(format!("Library/LaunchAgents/{LAUNCHD_LABEL}.plist"));
    let root = plist::parse(&std::fs::read_to_string(&plist).unwrap()).unwrap();
    check_plist(
        &root,
        &home.path().join("Library/Logs/polisd"),
        &home.path().join(".config/polisd/config.toml"),
    );
    assert!(home.path().join("Library/Logs/polisd").is_dir());
    let target = format!("gui/501/{LAUNCHD_LABEL}");
    let bootout = script
        .calls
        .iter()
        .position(|c| *c == format!("launchctl bootout {target}"));
    let bootstrap = script
        .calls
        .iter()
        .position(|c| *c == format!("launchctl bootstrap gui/501 {}", plist.display()));
    assert!(
        matches!((bootout, bootstrap), (Some(a), Some(b)) if a < b),
        "{:?}",
        script.calls
    );

    let (code, out) = home.run(
        Platform::Launchd,
        &mut script,
        ServiceAction::Status { json: false },
        false,
    );
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("running:   yes"), "{out}");
}

#[test]
fn rendered_plist_escapes_xml_in_paths() {
    let text = render_launchd_plist(
        Path::new("/Users/a&b/bin/polisd"),
        Path::new("/Users/a&b/<cfg>.toml"),
        Path::new("/Users/a&b/Library/Logs/polisd"),
    )
    .unwrap();
    let root = plist::parse(&text).unwrap();
    let plist::Value::Dict(d) = root else {
        panic!()
    };
    assert_eq!(
        d["ProgramArguments"],
        plist::Value::Array(
            [
                "/Users/a&b/bin/polisd",
                "run",
                "--config",
                "/Users/a&b/<cfg>.toml"
            ]
            .map(|s| plist::Value::String(s.into()))
            .to_vec()
        )
    );
}

#[track_caller]
fn check_plist(root: &plist::Value, log_dir: &Path, config: &Path) {
    use plist::Value::*;
    let Dict(d) = root else {
        panic!("the plist's root is not a dict: {root:?}")
    };
    assert_eq!(d["Label"], String(LAUNCHD_LABEL.into()));
    let Array(args) = &d["ProgramArguments"] else {
        panic!("ProgramArguments is not an array")
    };
    assert_eq!(
        args,
        &vec![
            String(env!("CARGO_BIN_EXE_polisd").into()),
            String("run".into()),
            String("--config".into()),
            String(config.display().to_string()),
        ]
    );
    assert_eq!(d["RunAtLoad"], Bool(true));
    let Dict(keep) = &d["KeepAlive"] else {
        panic!("KeepAlive is not a dict")
    };
    assert_eq!(keep["SuccessfulExit"], Bool(false));
    assert_eq!(d["ProcessType"], String("Background".into()));
    for key in ["StandardOutPath", "StandardErrorPath"] {
        let String(p) = &d[key] else { panic!("{key}") };
        assert!(
            Path::new(p).is_absolute() && Path::new(p).starts_with(log_dir),
            "{key} = {p}"
        );
    }
}

/// A small XML property-list reader: enough to prove the rendered plist is well formed and has
/// the structure launchd reads, without a dependency.
mod plist {
    use std::collections::BTreeMap;

    #[derive(Debug, Clone, PartialEq)]
    pub enum Value {
        Dict(BTreeMap<String, Value>),
        Array(Vec<Value>),
        String(String),
        Integer(i64),
        Bool(bool),
    }

    #[derive(Debug, PartialEq)]
    enum Token {
        Open(String),
        Close(String),
        Empty(String),
        Text(String),
    }

    fn unescape(s: &str) -> Result<String, String> {
        let mut out = String::new();
        let mut rest = s;
        while let Some(i) = rest.find('&') {
            out.push_str(&rest[..i]);
            let end = rest[i..].find(';').ok_or("unterminated entity")? + i;
            out.push(match &rest[i + 1..end] {
                "amp" => '&',
                "lt" => '<',
                "gt" => '>',
                "quot" => '"',
                "apos" => '\'',
                e => return Err(format!("unknown entity &{e};")),
            });
            rest = &rest[end + 1..];
        }
        if rest.contains('<') || rest.contains('>') {
            return Err(format!("bare < or > in text {s:?}"));
        }
        out.push_str(rest);
        Ok(out)
    }

    fn tokens(text: &str) -> Result<Vec<Token>, String> {
        let mut out = Vec::new();
        let mut rest = text;
        while !rest.is_empty() {
            if let Some(r) = rest.strip_prefix("<?") {
                rest = &r[r.find("?>").ok_or("unterminated <?")? + 2..];
            } else if let Some(r) = rest.strip_prefix("<!--") {
                let end = r.find("-->").ok_or("unterminated comment")?;
                if r[..end].contains("--") {
                    return Err("`--` inside a comment".into());
                }
                rest = &r[end + 3..];
            } else if let Some(r) = rest.strip_prefix("<!") {
                rest = &r[r.find('>').ok_or("unterminated <!")? + 1..];
            } else if let Some(r) = rest.strip_prefix('<') {
                let end = r.find('>').ok_or("unterminated tag")?;
                let tag = &r[..end];
                let name = |t: &str| t.split_whitespace().next().unwrap_or("").to_string();
                out.push(if let Some(t) = tag.strip_prefix('/') {
                    Token::Close(name(t))
                } else if let Some(t) = tag.strip_suffix('/') {
                    Token::Empty(name(t))
                } else {
                    Token::Open(name(tag))
                });
                rest = &r[end + 1..];
            } else {
                let end = rest.find('<').unwrap_or(rest.len());
                let t = &rest[..end];
                if !t.trim().is_empty() {
                    out.push(Token::Text(unescape(t)?));
                }
                rest = &rest[end..];
            }
        }
        Ok(out)
    }

    pub fn parse(text: &str) -> Result<Value, String> {
        let toks = tokens(text)?;
        let mut i = 0;
        if toks.first() != Some(&Token::Open("plist".into())) {
            return Err("no <plist> root".into());
        }
        i += 1;
        let v = value(&toks, &mut i)?;
        if toks.get(i) != Some(&Token::Close("plist".into())) || i + 1 != toks.len() {
            return Err("content after the root value".into());
        }
        Ok(v)
    }

    fn text_until(toks: &[Token], i: &mut usize, tag: &str) -> Result<String, String> {
        let s = match toks.get(*i) {
            Some(Token::Text(s)) => {
                *i += 1;
                s.clone()
            }
            _ => String::new(),
        };
        match toks.get(*i) {
            Some(Token::Close(t)) if t == tag => {
                *i += 1;
                Ok(s)
            }
            other => Err(format!("expected </{tag}>, found {other:?}")),
        }
    }

    fn value(toks: &[Token], i: &mut usize) -> Result<Value, String> {
        let tok = toks.get(*i).ok_or("unexpected end")?;
        *i += 1;
        match tok {
            Token::Empty(t) if t == "true" => Ok(Value::Bool(true)),
            Token::Empty(t) if t == "false" => Ok(Value::Bool(false)),
            Token::Empty(t) if t == "string" => Ok(Value::String(String::new())),
            Token::Open(t) if t == "string" => text_until(toks, i, "string").map(Value::String),
            Token::Open(t) if t == "integer" => text_until(toks, i, "integer")?
                .trim()
                .parse()
                .map(Value::Integer)
                .map_err(|e| format!("bad integer: {e}")),
            Token::Open(t) if t == "array" => {
                let mut items = Vec::new();
                while toks.get(*i) != Some(&Token::Close("array".into())) {
                    items.push(value(toks, i)?);
                }
                *i += 1;
                Ok(Value::Array(items))
            }
            Token::Open(t) if t == "dict" => {
                let mut map = BTreeMap::new();
                loop {
                    match toks.get(*i) {
                        Some(Token::Close(t)) if t == "dict" => {
                            *i += 1;
                            return Ok(Value::Dict(map));
                        }
                        Some(Token::Open(t)) if t == "key" => {
                            *i += 1;
                            let k = text_until(toks, i, "key")?;
                            let v = value(toks, i)?;
                            if map.insert(k.clone(), v).is_some() {
                                return Err(format!("duplicate key {k}"));
                            }
                        }
                        other => return Err(format!("expected <key> in dict, found {other:?}")),
                    }
                }
            }
            other => Err(format!("unexpected {other:?}")),
        }
    }
}

// ------------------------------------------------------------------------------------------
// `polisd config example | check | path`: the installed binary carries its own example

fn polisd_config(args: &[&str], env: &[(&str, &Path)]) -> std::process::Output {
    polisd_config_in(&std::env::temp_dir(), args, env)
}

fn polisd_config_in(cwd: &Path, args: &[&str], env: &[(&str, &Path)]) -> std::process::Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_polisd"));
    cmd.current_dir(cwd)
        .arg("config")
        .args(args)
        .env_remove(config::ENV_VAR);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

#[test]
fn config_example_prints_the_embedded_example_which_checks_clean() {
    let dir = tempfile::tempdir().unwrap();
    // Outside any project the example is printed as embedded, with a hint to set its path.
    let out = polisd_config_in(dir.path(), &["example"], &[]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8(out.stdout).unwrap(), EXAMPLE);
    let hint = String::from_utf8_lossy(&out.stderr);
    let line = EXAMPLE
        .lines()
        .position(|l| l == "path = \"~/project\"")
        .unwrap()
        + 1;
    assert!(
        hint.contains(&format!("set `path` on line {line}")),
        "{hint}"
    );
    let file = dir.path().join("config.toml");
    std::fs::write(&file, EXAMPLE).unwrap();
    // The example watches `~/project`: give it one.
    let home = dir.path().join("home");
    std::fs::create_dir_all(home.join("project/_polis")).unwrap();
    std::fs::write(home.join("project/_polis/CONSTITUTION.md"), "# c\n").unwrap();
    let out = polisd_config(
        &["check", file.to_str().unwrap(), "--json"],
        &[("HOME", &home)],
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["ok"], true, "{report:#}");
    assert_eq!(report["polises"][0], home.join("project").to_str().unwrap());
    assert_eq!(out.status.code(), Some(0));
}

/// `polisd config example > "$(polisd config path)"`, run inside a project as the help says,
/// gives a file that watches that project and checks clean, with no edit.
#[test]
fn config_example_inside_a_project_watches_it_and_checks_clean() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("my \"quoted\" project");
    std::fs::create_dir_all(project.join("_polis")).unwrap();
    std::fs::create_dir_all(project.join("src/deep")).unwrap();
    std::fs::write(project.join("_polis/CONSTITUTION.md"), "# c\n").unwrap();
    let out = polisd_config_in(&project.join("src/deep"), &["example"], &[]);
    assert_eq!(out.status.code(), Some(0));
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let file = dir.path().join("config.toml");
    std::fs::write(&file, &out.stdout).unwrap();
    let out = polisd_config(&["check", file.to_str().unwrap(), "--json"], &[]);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["ok"], true, "{report:#}");
    assert_eq!(report["polises"], serde_json::json!([project]));
    assert_eq!(out.status.code(), Some(0));
}

#[test]
fn config_check_names_the_line_of_a_bad_key_and_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("config.toml");
    std::fs::write(&file, "[watch]\ndebounce = \"50ms\"\nbakend = \"poll\"\n").unwrap();
    let out = polisd_config(&["check", file.to_str().unwrap()], &[]);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains(&format!("{}:3:", file.display())), "{text}");
    assert!(text.contains("bakend"), "{text}");
    assert!(text.contains("polisd config example"), "{text}");
    // A polis path without a polis is a problem too: `polisd run` would refuse it.
    std::fs::write(&file, "[[polis]]\npath = \"/nonexistent/project\"\n").unwrap();
    let out = polisd_config(&["check", file.to_str().unwrap(), "--json"], &[]);
    assert_eq!(out.status.code(), Some(1));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["problems"][0]["line"], 2, "{report:#}");
}

/// `config check FILE` names its file as an argument, not `--config`, which it does not take;
/// and says how to make the missing file.
#[test]
fn config_check_of_a_missing_file_names_the_argument_and_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("absent.toml");
    let out = polisd_config(&["check", file.to_str().unwrap(), "--json"], &[]);
    assert_eq!(out.status.code(), Some(1));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let message = report["problems"][0]["message"].as_str().unwrap();
    assert!(!message.contains("--config"), "{message}");
    assert!(message.contains("polisd config example >"), "{message}");
}

#[test]
fn config_path_follows_polisd_config_then_the_user_directory() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("elsewhere.toml");
    let out = polisd_config(&["path", "--json"], &[("POLISD_CONFIG", &file)]);
    assert_eq!(out.status.code(), Some(0));
    let row: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(row["path"], file.to_str().unwrap());
    assert_eq!(row["origin"], "env");
    assert_eq!(row["exists"], false);
    let out = polisd_config(
        &["path"],
        &[
            ("HOME", dir.path()),
            ("XDG_CONFIG_HOME", &dir.path().join("xdg")),
        ],
    );
    let printed = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        printed.trim(),
        dir.path().join("xdg/polisd/config.toml").to_str().unwrap()
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("polisd config example >"));
}
