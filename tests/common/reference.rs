//! Finding and running the Python reference (polis-protocol 2.0.1 + PyYAML) for comparison
//! tests. A missing reference is a failure with a fix, never a silent skip.
#![allow(dead_code)]

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

/// The Python that has the reference installed: `$POLISD_REFERENCE_PYTHON`, else the repo's
/// `.venv/bin/python` (made by `.ci/run`), else `/tmp/refvenv/bin/python`.
pub fn reference_python() -> PathBuf {
    if let Some(p) = std::env::var_os("POLISD_REFERENCE_PYTHON") {
        let p = PathBuf::from(p);
        assert!(
            p.exists(),
            "POLISD_REFERENCE_PYTHON={} does not exist; point it at a Python with \
             polis-protocol==2.0.1 and pyyaml installed",
            p.display()
        );
        return p;
    }
    let candidates = [
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".venv/bin/python"),
        PathBuf::from("/tmp/refvenv/bin/python"),
    ];
    for p in &candidates {
        if p.exists() {
            return p.clone();
        }
    }
    panic!(
        "the Python reference is missing, so comparison tests cannot run. Run the setup step of \
         .ci/run (it creates .venv/ with `pip install polis-protocol==2.0.1 pyyaml`), or set \
         POLISD_REFERENCE_PYTHON to a Python that has both. Looked in: {candidates:?}"
    );
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
