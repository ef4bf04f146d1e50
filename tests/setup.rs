//! What a newcomer's fresh clone relies on: the comparison harness sets up its own Python
//! reference (built once under a lock, renamed into place when complete, and a setup that cannot
//! work says what to run); `rust-version` is the real minimum of the locked dependencies; the
//! README's install and test commands are the ones CI runs.

#[path = "common/reference.rs"]
mod reference;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::time::Duration;

#[test]
fn reference_venv_is_built_once_when_many_ask_at_the_same_time() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("target").join("polis-reference");
    let builds = Arc::new(AtomicUsize::new(0));
    let start = Arc::new(Barrier::new(6));
    let threads: Vec<_> = (0..6)
        .map(|_| {
            let (dir, builds, start) = (dir.clone(), builds.clone(), start.clone());
            std::thread::spawn(move || {
                start.wait();
                reference::ensure_built(
                    &dir,
                    |d| d.join("bin/python").exists(),
                    |partial| {
                        builds.fetch_add(1, Ordering::SeqCst);
                        std::fs::create_dir_all(partial.join("bin")).unwrap();
                        // Long enough that the others are waiting on the lock meanwhile.
                        std::thread::sleep(Duration::from_millis(300));
                        std::fs::write(partial.join("bin/python"), "complete").unwrap();
                        Ok(())
                    },
                )
            })
        })
        .collect();
    for t in threads {
        assert_eq!(t.join().unwrap(), Ok(dir.clone()));
    }
    assert_eq!(builds.load(Ordering::SeqCst), 1, "built more than once");
    assert_eq!(
        std::fs::read_to_string(dir.join("bin/python")).unwrap(),
        "complete"
    );
    let leftovers: Vec<_> = std::fs::read_dir(dir.parent().unwrap())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("partial"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn reference_venv_half_built_by_a_killed_run_is_never_used() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("polis-reference");
    // What a test binary killed in the middle of `pip install` leaves behind.
    let stale = tmp.path().join("polis-reference.partial-999999");
    std::fs::create_dir_all(stale.join("bin")).unwrap();
    let usable = |d: &std::path::Path| d.join("ok").exists();
    let err = reference::ensure_built(&dir, usable, |_| Err("offline".to_string())).unwrap_err();
    assert_eq!(err, "offline");
    assert!(!dir.exists(), "a failed build must not appear as the venv");
    assert!(!stale.exists(), "the stale partial folder is cleaned up");
    let built = reference::ensure_built(&dir, usable, |partial| {
        std::fs::create_dir_all(partial).map_err(|e| e.to_string())?;
        std::fs::write(partial.join("ok"), "").map_err(|e| e.to_string())
    });
    assert_eq!(built, Ok(dir.clone()));
    // A venv that stopped working is rebuilt, not used.
    std::fs::remove_file(dir.join("ok")).unwrap();
    let rebuilt = reference::ensure_built(&dir, usable, |partial| {
        std::fs::create_dir_all(partial).map_err(|e| e.to_string())?;
        std::fs::write(partial.join("ok"), "again").map_err(|e| e.to_string())
    });
    assert_eq!(rebuilt, Ok(dir.clone()));
    assert_eq!(std::fs::read_to_string(dir.join("ok")).unwrap(), "again");
}

#[test]
fn reference_setup_that_cannot_run_says_what_to_run() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("polis-reference");
    let detail = reference::ensure_built(
        &dir,
        |_| false,
        |partial| reference::create_venv(partial, "/nonexistent/python3"),
    )
    .unwrap_err();
    assert!(detail.contains("-m venv` could not start"), "{detail}");
    let message = reference::setup_failure(&dir, &detail);
    for needle in [
        "python3 -m venv .venv",
        "pip install 'polis-protocol==2.0.1'",
        "POLISD_REFERENCE_PYTHON",
        "python3-venv",
    ] {
        assert!(
            message.contains(needle),
            "`{needle}` missing from: {message}"
        );
    }
    assert!(!dir.exists());
}

#[test]
fn reference_python_imports_polis_and_yaml() {
    let out = reference::run_python(
        "import polis, yaml, importlib.metadata as m; print(m.version('polis-protocol'))",
        "",
    );
    assert_eq!(out.trim(), "2.0.1");
}

fn repo_file(rel: &str) -> String {
    std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)).unwrap()
}

fn parse_version(v: &str) -> (u64, u64) {
    let mut parts = v.split('.').map(|p| p.parse::<u64>().unwrap());
    (parts.next().unwrap(), parts.next().unwrap_or(0))
}

/// The package's own `rust-version` (from Cargo.toml).
fn own_rust_version() -> String {
    repo_file("Cargo.toml")
        .lines()
        .find_map(|l| l.strip_prefix("rust-version = "))
        .expect("Cargo.toml sets rust-version")
        .trim_matches('"')
        .to_string()
}

#[test]
fn rust_version_is_at_least_every_locked_dependency_s() {
    let out = std::process::Command::new(env!("CARGO"))
        // Not --offline: metadata reads every locked package's manifest, and a build downloads
        // only the host's (a Windows-only crate would be missing). The registry is needed
        // once, as for the build itself.
        .args(["metadata", "--format-version", "1", "--locked"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let ours = own_rust_version();
    let (name, needed) = meta["packages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["name"] != "polisd")
        .filter_map(|p| Some((p["name"].as_str()?, p["rust_version"].as_str()?)))
        .max_by_key(|(_, v)| parse_version(v))
        .unwrap();
    assert!(
        parse_version(&ours) >= parse_version(needed),
        "Cargo.toml says rust-version {ours}, but the locked {name} needs {needed}"
    );
    let readme = repo_file("README.md");
    assert!(
        readme.contains(&format!("Rust {ours} or newer")),
        "README.md must name Rust {ours} as the minimum"
    );
}

#[test]
fn readme_install_and_test_commands_are_the_ones_ci_runs() {
    let readme = repo_file("README.md");
    assert!(readme.contains("\ncargo install --locked --path .\n"));
    assert!(readme.contains("\nscripts/test\n"));
    let ci = repo_file(".ci/run");
    let runs: Vec<&str> = ci.lines().filter(|l| l.trim() == "scripts/test").collect();
    assert_eq!(runs.len(), 1, ".ci/run calls the test command exactly once");
    assert!(
        ci.contains("\ncargo package --locked"),
        "CI packages the crate"
    );
    assert!(
        ci.contains("\nscripts/wheel-check\n"),
        "CI builds and installs the wheel"
    );
    // The test command runs the whole suite after bringing its prerequisites.
    let script = repo_file("scripts/test");
    assert!(script.contains("exec cargo test --locked --no-fail-fast"));
    // CI checks the minimum Rust with a toolchain rustup installs.
    assert!(ci.contains("rustup toolchain install \"$msrv\" --profile minimal"));
    assert!(ci.contains("cargo +\"$msrv\" check --locked --all-targets"));
}
