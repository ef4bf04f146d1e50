//! Finding and running the Python reference (polis-protocol 2.0.1 + PyYAML) for comparison
//! tests. A fresh clone needs nothing prepared: when `$POLISD_REFERENCE_PYTHON` is unset and the
//! repository has no `.venv/`, the first test that needs the reference creates a virtualenv
//! under `target/` (once, under a lock, renamed into place only when complete, so several test
//! binaries starting together neither race nor see half a venv). If it cannot be created
//! (offline, no `python3`), the failure says what to run. Never a silent skip.
#![allow(dead_code)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

/// The reference's package pins, as `pip install` takes them.
pub const PACKAGES: [&str; 2] = ["polis-protocol==2.0.1", "pyyaml>=6"];

/// What a person runs to set the reference up by hand.
pub const MANUAL_SETUP: &str = "python3 -m venv .venv && .venv/bin/pip install \
     'polis-protocol==2.0.1' 'pyyaml>=6' (or set POLISD_REFERENCE_PYTHON to a Python that has \
     both; on Debian or Ubuntu `python3 -m venv` needs `apt-get install python3-venv`)";

/// The Python that has the reference installed: `$POLISD_REFERENCE_PYTHON`, else the repo's
/// `.venv/bin/python`, else `target/polis-reference/bin/python`, created on first use.
/// Panics with what to run when none can be had; the outcome is decided once per process.
pub fn reference_python() -> PathBuf {
    static PYTHON: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    match PYTHON.get_or_init(find_or_create) {
        Ok(python) => python.clone(),
        Err(message) => panic!("{message}"),
    }
}

fn find_or_create() -> Result<PathBuf, String> {
    if let Some(p) = std::env::var_os("POLISD_REFERENCE_PYTHON") {
        let p = PathBuf::from(p);
        if !p.exists() {
            return Err(format!(
                "POLISD_REFERENCE_PYTHON={} does not exist; point it at a Python with \
                 polis-protocol==2.0.1 and pyyaml installed, or unset it to let the tests \
                 create one under target/",
                p.display()
            ));
        }
        return Ok(p);
    }
    let repo_venv = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".venv/bin/python");
    if repo_venv.exists() && has_reference(&repo_venv) {
        return Ok(repo_venv);
    }
    let venv = target_dir().join("polis-reference");
    let usable = |dir: &Path| has_reference(&dir.join("bin/python"));
    ensure_built(&venv, usable, |partial| {
        say(&format!(
            "polisd tests: no Python reference (POLISD_REFERENCE_PYTHON is unset and there is \
             no .venv/); creating one in {} with polis-protocol 2.0.1 and pyyaml from PyPI. \
             This happens once and takes about half a minute.",
            venv.display()
        ));
        create_venv(partial, "python3")?;
        say("polisd tests: the Python reference is ready.");
        Ok(())
    })
    .map_err(|detail| setup_failure(&venv, &detail))?;
    Ok(venv.join("bin/python"))
}

/// The cargo target folder of the running test binary (`target/<profile>/deps/<binary>`).
pub fn target_dir() -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|exe| exe.ancestors().nth(3).map(Path::to_path_buf))
        .filter(|dir| dir.join("CACHEDIR.TAG").exists() || dir.ends_with("target"))
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target"))
}

/// The panic message when the reference could not be created.
pub fn setup_failure(venv: &Path, detail: &str) -> String {
    format!(
        "the comparison tests need the Python reference, and it could not be created in {}: \
         {detail}\nTo set it up by hand (it needs network access to PyPI once), run: \
         {MANUAL_SETUP}",
        venv.display()
    )
}

/// Makes `dir` exist and be `usable`, built by `build` exactly once however many threads and
/// processes ask at the same time: under an exclusive lock on `<dir>.lock`, `build` fills
/// `<dir>.partial-<pid>`, which is renamed to `dir` only when it succeeded. A partial folder
/// left by a killed process is removed by the next builder, and so is a `dir` that stopped
/// being usable (its base Python was removed, say). Returns `dir`.
pub fn ensure_built(
    dir: &Path,
    usable: impl Fn(&Path) -> bool,
    build: impl FnOnce(&Path) -> Result<(), String>,
) -> Result<PathBuf, String> {
    if dir.is_dir() && usable(dir) {
        return Ok(dir.to_path_buf());
    }
    let parent = dir.parent().ok_or("the folder has no parent")?;
    let name = dir
        .file_name()
        .ok_or("the folder has no name")?
        .to_string_lossy()
        .into_owned();
    std::fs::create_dir_all(parent).map_err(|e| format!("creating {}: {e}", parent.display()))?;
    let lock_path = parent.join(format!("{name}.lock"));
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .map_err(|e| format!("opening {}: {e}", lock_path.display()))?;
    lock.lock()
        .map_err(|e| format!("locking {}: {e}", lock_path.display()))?;
    // Another process may have finished while this one waited for the lock.
    if dir.is_dir() {
        if usable(dir) {
            return Ok(dir.to_path_buf());
        }
        std::fs::remove_dir_all(dir)
            .map_err(|e| format!("removing the unusable {}: {e}", dir.display()))?;
    }
    let prefix = format!("{name}.partial-");
    for entry in std::fs::read_dir(parent).into_iter().flatten().flatten() {
        if entry.file_name().to_string_lossy().starts_with(&prefix) {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
    let partial = parent.join(format!("{prefix}{}", std::process::id()));
    let result = build(&partial).and_then(|()| {
        std::fs::rename(&partial, dir)
            .map_err(|e| format!("renaming {} to {}: {e}", partial.display(), dir.display()))
    });
    if result.is_err() {
        let _ = std::fs::remove_dir_all(&partial);
    }
    result.map(|()| dir.to_path_buf())
}

/// Creates a virtualenv at `dir` with `python3` and installs [`PACKAGES`] into it.
pub fn create_venv(dir: &Path, python3: &str) -> Result<(), String> {
    create_venv_with(dir, python3, &PACKAGES)
}

/// The `polis` command of an older reference release (`version`, as PyPI names it) in its own
/// virtualenv, `target/polis-reference-<version>/`, created on first use as the 2.0.1 one is.
/// It runs the CLI through the venv's Python: the `bin/polis` script names the folder the venv
/// was built in, which is renamed into place. Panics with what to run when it cannot be had.
pub fn older_reference(version: &str) -> Command {
    let mut polis = Command::new(older_reference_python(version));
    polis.args([
        "-c",
        "import sys; from polis.cli import main; sys.argv[0] = 'polis'; sys.exit(main())",
    ]);
    polis
}

fn older_reference_python(version: &str) -> PathBuf {
    let venv = target_dir().join(format!("polis-reference-{version}"));
    let pin = format!("polis-protocol=={version}");
    let built = ensure_built(
        &venv,
        |dir| has_reference(&dir.join("bin/python")),
        |partial| {
            say(&format!(
                "polisd tests: creating {} with {pin} from PyPI (once).",
                venv.display()
            ));
            create_venv_with(partial, "python3", &[pin.as_str(), "pyyaml>=6"])
        },
    );
    match built {
        Ok(dir) => dir.join("bin/python"),
        Err(detail) => panic!(
            "the migration tests need the reference {version}, and it could not be created in              {}: {detail}\nTo set it up by hand (network access to PyPI once): python3 -m venv              {0} && {0}/bin/pip install '{pin}' 'pyyaml>=6'",
            venv.display()
        ),
    }
}

/// Creates a virtualenv at `dir` with `python3` and installs `packages` into it.
pub fn create_venv_with(dir: &Path, python3: &str, packages: &[&str]) -> Result<(), String> {
    step(
        Command::new(python3).args(["-m", "venv"]).arg(dir),
        &format!("`{python3} -m venv`"),
    )?;
    let python = dir.join("bin/python");
    step(
        Command::new(&python)
            .args([
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
                "--retries",
                "1",
                "--timeout",
                "15",
            ])
            .args(packages),
        &format!("`pip install {}` (is PyPI reachable?)", packages.join(" ")),
    )?;
    if !has_reference(&python) {
        return Err("the new virtualenv cannot import polis and yaml".to_string());
    }
    Ok(())
}

pub fn step(command: &mut Command, what: &str) -> Result<(), String> {
    let out = command
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("{what} could not start: {e}"))?;
    if out.status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    let tail: Vec<&str> = stderr.lines().rev().take(6).collect();
    let tail: Vec<&str> = tail.into_iter().rev().collect();
    Err(format!(
        "{what} failed ({}):\n{}",
        out.status,
        tail.join("\n")
    ))
}

/// Whether `python` can import the reference and PyYAML.
fn has_reference(python: &Path) -> bool {
    Command::new(python)
        .args(["-c", "import polis, yaml"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// A line on the terminal even while the test harness captures output (it captures only the
/// print macros, not the process's standard error).
fn say(line: &str) {
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "{line}");
}

/// Runs `snippet` with the reference Python, `stdin` on its standard input (UTF-8), and returns
/// its standard output. Panics with the Python error if it fails.
pub fn run_python(snippet: &str, stdin: &str) -> String {
    let mut child = Command::new(reference_python())
        .arg("-c")
        .arg(snippet)
        .env("PYTHONIOENCODING", "utf-8")
        .env("PYTHONUTF8", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the reference Python");
    let mut pipe = child.stdin.take().expect("stdin is piped");
    let input = stdin.as_bytes().to_vec();
    // Write from a thread so a large output cannot deadlock against a large input.
    let writer = std::thread::spawn(move || pipe.write_all(&input));
    let out = child
        .wait_with_output()
        .expect("wait for the reference Python");
    writer
        .join()
        .expect("stdin writer thread")
        .expect("write the reference Python's stdin");
    assert!(
        out.status.success(),
        "the reference Python failed ({}):\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("the reference Python printed UTF-8")
}
