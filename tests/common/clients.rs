//! The clients the tests run polisd with, installed by the tests themselves under `target/`
//! the first time a test needs one (once, under a lock, renamed into place only when complete;
//! see [`super::reference::ensure_built`]): the official MCP Python SDK (`mcp`, latest from
//! PyPI) in a virtualenv, the official TypeScript SDK (`@modelcontextprotocol/sdk`, latest from
//! npm) in an npm folder, Aider (`aider-chat`, pinned) in a virtualenv, and Claude Code,
//! Gemini CLI and Codex CLI (pinned) in an npm folder.
//! A missing `python3` or `npm`, or no registry, is a failure that says what to install.
#![allow(dead_code)]

use crate::reference::{ensure_built, step as run, target_dir};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// A virtualenv `target/<name>` with `package` installed from PyPI, usable once its Python
/// runs `check` successfully; returns that Python. (The venv is built elsewhere and renamed
/// into place, which breaks its scripts' `#!` lines but not its Python: run modules with it.)
fn venv_with(name: &str, package: &str, check: &[&str]) -> Result<PathBuf, String> {
    let venv = target_dir().join(name);
    let usable = |dir: &Path| {
        Command::new(dir.join("bin/python"))
            .args(check)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    ensure_built(&venv, usable, |partial| {
        run(
            Command::new("python3").args(["-m", "venv"]).arg(partial),
            "`python3 -m venv` (on Debian: apt-get install python3-venv)",
        )?;
        run(
            Command::new(partial.join("bin/python")).args([
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
                package,
            ]),
            &format!("`pip install {package}` (is PyPI reachable?)"),
        )
    })
    .map(|venv| venv.join("bin/python"))
    .map_err(|e| format!("{}: {e}", venv.display()))
}

/// Aider (`aider-chat` from PyPI, a pinned release) in a virtualenv: the Python to run
/// `python -m aider` with.
pub fn aider_python() -> PathBuf {
    venv_with("aider", AIDER, &["-m", "aider", "--version"])
        .unwrap_or_else(|e| panic!("the Aider test needs Aider in {e}"))
}

/// The Aider release the test reads its start-up lines from.
const AIDER: &str = "aider-chat==0.86.2";

/// The Python of a virtualenv with the official MCP Python SDK.
pub fn python_sdk() -> PathBuf {
    venv_with("mcp-python-sdk", "mcp", &["-c", "import mcp.client"])
        .unwrap_or_else(|e| panic!("the MCP conformance tests need the official Python SDK in {e}"))
}

/// A folder `target/<name>` whose `node_modules` has `packages` from npm, usable once
/// `installed` (a path under the folder) exists.
fn npm_folder(name: &str, packages: &[&str], installed: &str) -> Result<PathBuf, String> {
    let dir = target_dir().join(name);
    ensure_built(
        &dir,
        |dir: &Path| dir.join(installed).exists(),
        |partial| {
            std::fs::create_dir_all(partial).map_err(|e| e.to_string())?;
            std::fs::write(
                partial.join("package.json"),
                format!(r#"{{"name": "polisd-{name}", "private": true, "type": "module"}}"#),
            )
            .map_err(|e| e.to_string())?;
            run(
                Command::new("npm")
                    .args(["install", "--silent", "--no-audit", "--no-fund"])
                    .args(packages)
                    .current_dir(partial),
                &format!(
                    "`npm install {}` (is node with npm installed, npm reachable?)",
                    packages.join(" ")
                ),
            )
        },
    )
    .map_err(|e| format!("{}: {e}", dir.display()))
}

/// A folder whose `node_modules` has the official MCP TypeScript SDK.
pub fn typescript_sdk() -> PathBuf {
    npm_folder(
        "mcp-typescript-sdk",
        &["@modelcontextprotocol/sdk"],
        "node_modules/@modelcontextprotocol/sdk/package.json",
    )
    .unwrap_or_else(|e| panic!("the MCP conformance tests need the official TypeScript SDK in {e}"))
}

/// The agent CLIs whose hooks polisd installs, pinned: the releases the test of their
/// sessions was written against (a new release may change what a session sends).
const AGENT_CLIS: [&str; 3] = [
    "@anthropic-ai/claude-code@2.1.332",
    "@google/gemini-cli@0.61.0",
    "@openai/codex@0.171.0",
];

/// A folder whose `node_modules/.bin` has `claude`, `gemini` and `codex`, the real Claude
/// Code, Gemini CLI and Codex CLI from npm (each CLI's native build comes as an optional
/// dependency from the same registry).
pub fn agent_clis() -> PathBuf {
    npm_folder("agent-clis", &AGENT_CLIS, "node_modules/.bin/codex")
        .map(|dir| dir.join("node_modules/.bin"))
        .unwrap_or_else(|e| panic!("the agent CLI sessions need the CLIs in {e}"))
}
