//! `polisd config example | check [FILE] | path`: the configuration file for someone who has
//! only the installed binary. The example is embedded at build time, so the commented list of
//! every key is always the one this binary accepts (a test keeps it in step with the parser).

use crate::commands::cli::{ConfigArgs, ConfigCommand};
use crate::daemon::config::{self, ConfigError, Location, Origin};
use anyhow::Context;
use std::io::Write;
use std::path::{Path, PathBuf};

/// `config.example.toml`, every key with its default and what it does.
pub const EXAMPLE: &str = include_str!("../../config.example.toml");

/// The example's `[[polis]] path` line, a placeholder for the project it is printed in.
const EXAMPLE_PATH: &str = "path = \"~/project\"";

/// The line (1-based) of [`EXAMPLE_PATH`] in the example, for the hint when no project is found.
fn example_path_line() -> usize {
    EXAMPLE
        .lines()
        .position(|l| l == EXAMPLE_PATH)
        .map_or(0, |i| i + 1)
}

/// The example, watching `project` when the command runs inside one, so that
/// `polisd config example > "$(polisd config path)"` gives a file `config check` passes.
fn example_watching(project: Option<&Path>) -> std::borrow::Cow<'static, str> {
    match project {
        None => EXAMPLE.into(),
        Some(project) => {
            // A TOML basic string: quotes, backslashes and control characters escaped.
            let quoted = toml::Value::String(project.display().to_string()).to_string();
            EXAMPLE
                .replacen(EXAMPLE_PATH, &format!("path = {quoted}"), 1)
                .into()
        }
    }
}

pub fn run(args: ConfigArgs, out: &mut dyn Write) -> anyhow::Result<u8> {
    match args.command {
        ConfigCommand::Example => {
            let cwd = std::env::current_dir().context("reading the working directory")?;
            let project = crate::fs::locate::locate(None, &cwd)
                .ok()
                .and_then(|polis| polis.parent().map(Path::to_path_buf));
            if project.is_none() {
                eprintln!(
                    "polisd: no polis in {} or above it; set `path` on line {} to your project \
                     before `polisd config check`, or run this from inside the project",
                    cwd.display(),
                    example_path_line()
                );
            }
            out.write_all(example_watching(project.as_deref()).as_bytes())?;
            Ok(0)
        }
        ConfigCommand::Path { json } => {
            let location = locate(None)?;
            let exists = location.path.is_file();
            if json {
                let row = serde_json::json!({
                    "path": location.path,
                    "origin": origin_key(&location.origin),
                    "exists": exists,
                });
                writeln!(out, "{}", serde_json::to_string_pretty(&row)?)?;
            } else {
                writeln!(out, "{}", location.path.display())?;
                if !exists {
                    eprintln!(
                        "polisd: no file there yet (chosen by {}); `polisd config example > {}` \
                         writes a commented one to edit",
                        location.origin.describe(),
                        location.path.display()
                    );
                }
            }
            Ok(0)
        }
        ConfigCommand::Check { file, json } => check(file.as_deref(), json, out),
    }
}

fn origin_key(origin: &Origin) -> &'static str {
    match origin {
        Origin::Flag => "argument",
        Origin::Env => "env",
        Origin::Default => "default",
    }
}

fn locate(file: Option<&Path>) -> anyhow::Result<Location> {
    let cwd = std::env::current_dir().context("reading the working directory")?;
    let env = std::env::var_os(config::ENV_VAR);
    config::resolve_location(file, env.as_deref(), config::default_path(), &cwd)
        .ok_or(ConfigError::NoConfigDir)
        .map_err(Into::into)
}

/// One problem `config check` found.
#[derive(Debug, serde::Serialize)]
struct Problem {
    line: Option<usize>,
    message: String,
}

fn check(file: Option<&Path>, json: bool, out: &mut dyn Write) -> anyhow::Result<u8> {
    let location = locate(file)?;
    let cwd = std::env::current_dir().context("reading the working directory")?;
    let mut problems = Vec::new();
    let mut polises: Vec<PathBuf> = Vec::new();
    let defaults = !location.path.exists() && location.origin == Origin::Default;
    match config::load_from(&location, config::home_dir().as_deref()) {
        Ok(cfg) => {
            for entry in &cfg.polises {
                if crate::fs::locate::locate(Some(&entry.path), &cwd).is_err() {
                    problems.push(Problem {
                        line: Some(entry.line),
                        message: format!(
                            "[[polis]] path {} has no _polis/CONSTITUTION.md (create it with \
                             `polisd init`, or fix the path)",
                            entry.path.display()
                        ),
                    });
                }
                polises.push(entry.path.clone());
            }
        }
        Err(ConfigError::Invalid {
            line, message, key, ..
        }) => problems.push(Problem {
            line: Some(line),
            message: match key {
                Some(key) => format!("key `{key}`: {message}"),
                None => message,
            },
        }),
        // Named as an argument here, not with the `--config` the message would cite.
        Err(ConfigError::Missing { path, .. }) if file.is_some() => problems.push(Problem {
            line: None,
            message: format!(
                "config file {} does not exist; `polisd config example > {}` writes a commented one to edit",
                path.display(),
                path.display()
            ),
        }),
        Err(other) => problems.push(Problem {
            line: None,
            message: other.to_string(),
        }),
    }
    if json {
        let row = serde_json::json!({
            "path": location.path,
            "exists": location.path.is_file(),
            "ok": problems.is_empty(),
            "polises": polises,
            "problems": problems,
        });
        writeln!(out, "{}", serde_json::to_string_pretty(&row)?)?;
    } else if problems.is_empty() {
        if defaults {
            writeln!(
                out,
                "ok: no config file at {}; polisd uses its defaults and watches only the \
                 polises given to `polisd run` (`polisd config example` shows every key)",
                location.path.display()
            )?;
        } else {
            writeln!(
                out,
                "ok: {} ({} {})",
                location.path.display(),
                polises.len(),
                if polises.len() == 1 {
                    "polis"
                } else {
                    "polises"
                }
            )?;
        }
    } else {
        for p in &problems {
            match p.line {
                Some(line) => writeln!(out, "{}:{line}: {}", location.path.display(), p.message)?,
                None => writeln!(out, "{}", p.message)?,
            }
        }
        writeln!(
            out,
            "`polisd config example` shows every key, its default and what it accepts"
        )?;
    }
    Ok(u8::from(!problems.is_empty()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_example_holds_its_placeholder_once_on_a_line_of_its_own() {
        assert_eq!(EXAMPLE.matches(EXAMPLE_PATH).count(), 1);
        assert!(example_path_line() > 0);
    }

    #[test]
    fn the_example_watches_the_project_it_is_printed_in_quoted_as_toml() {
        let project = Path::new("/home/a \"b\"\\c/projet-été");
        let text = example_watching(Some(project));
        let table: toml::Table = toml::from_str(&text).unwrap();
        let polis = &table["polis"].as_array().unwrap()[0];
        assert_eq!(polis["path"].as_str(), Some(project.to_str().unwrap()));
        assert_eq!(text.lines().count(), EXAMPLE.lines().count());
        assert_eq!(example_watching(None), EXAMPLE);
    }
}
