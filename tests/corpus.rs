//! The bad-input corpus: one case per file in `tests/corpus/*.case`, each with
//! the finding it must draw. Every case is put into its own fresh polis and `polisd check
//! --json` must report the expected finding (or, for input SPEC accepts, none about that path)
//! without crashing. Then all cases go into one polis watched by `polisd run`: the daemon must
//! keep running and reacting, log each case that names a log line, and write nothing outside
//! `_polis/` (the targets of the links are hashed before and after).
//!
//! Case file format (UTF-8 text):
//!
//! ```text
//! # one or more comment lines: what the case is
//! path: contracts/open/x.md        where the input goes, relative to _polis/ (escapes allowed)
//! make: file                       file (default) | big | fifo | unreadable | symlink-outside
//!                                  | symlink-loop | deep-nesting
//! expect: P001 contracts/open/x.md the finding's code and path, or `none`
//! line: 3                          optional: the finding's line
//! message: not valid UTF-8         optional: a substring of the finding's message
//! log: not notifying               optional: a substring the daemon's log must show, or `none`
//!                                  for a finding only `check` makes
//! --- content
//! the file's bytes; `\xHH`, `\r`, `\t` and `\\` are escapes
//! ```
//!
//! Big, binary and special inputs (50 MB, FIFO, unreadable, links, loops) are made at test time,
//! not committed. As root, "unreadable" is checked by running `polisd check` as uid 65534
//! (root reads any file); the daemon part of that case is skipped with a note.

mod harness;

use harness::{wait_until, TestPolis, DEADLINE};
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

const FOUNDER: &str = "founder-one";
const AGENT: &str = "agent-alpha";

#[derive(Debug, Clone)]
struct Case {
    name: String,
    path: String,
    make: String,
    expect: Option<(String, String)>,
    line: Option<u64>,
    message: Option<String>,
    log: Option<String>,
    content: Vec<u8>,
}

fn unescape(s: &str) -> Vec<u8> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 1 < b.len() {
            match b[i + 1] {
                b'x' if i + 3 < b.len() => {
                    let hex = std::str::from_utf8(&b[i + 2..i + 4]).unwrap();
                    out.push(u8::from_str_radix(hex, 16).expect("bad \\x escape"));
                    i += 4;
                    continue;
                }
                b'r' => out.push(b'\r'),
                b't' => out.push(b'\t'),
                b'n' => out.push(b'\n'),
                b'\\' => out.push(b'\\'),
                other => panic!("unknown escape \\{}", other as char),
            }
            i += 2;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    out
}

fn load_cases() -> Vec<Case> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus");
    let mut names: Vec<PathBuf> = fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "case"))
        .collect();
    names.sort();
    names
        .into_iter()
        .map(|file| {
            let text = fs::read_to_string(&file).unwrap();
            let (head, content) = match text.split_once("--- content\n") {
                Some((h, c)) => (h, c),
                None => (text.as_str(), ""),
            };
            let mut case = Case {
                name: file.file_stem().unwrap().to_string_lossy().to_string(),
                path: String::new(),
                make: "file".into(),
                expect: None,
                line: None,
                message: None,
                log: None,
                content: unescape(content),
            };
            for l in head.lines() {
                if l.starts_with('#') || l.trim().is_empty() {
                    continue;
                }
                let (k, v) = l
                    .split_once(": ")
                    .unwrap_or_else(|| panic!("{}: bad line {l:?}", case.name));
                match k {
                    "path" => case.path = String::from_utf8(unescape(v)).unwrap(),
                    "make" => case.make = v.to_string(),
                    "expect" if v == "none" => case.expect = None,
                    "expect" => {
                        let (code, path) = v.split_once(' ').unwrap();
                        case.expect =
                            Some((code.to_string(), String::from_utf8(unescape(path)).unwrap()));
                    }
                    "line" => case.line = Some(v.parse().unwrap()),
                    "message" => case.message = Some(v.to_string()),
                    "log" => case.log = Some(v.to_string()),
                    other => panic!("{}: unknown key {other}", case.name),
                }
            }
            assert!(!case.path.is_empty(), "{}: no path", case.name);
            case
        })
        .collect()
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Puts a case into the polis at `root`; `outside` is a folder outside `_polis/` for link
/// targets. Returns the outside files the case links to.
fn apply(case: &Case, root: &Path, outside: &Path) -> Vec<PathBuf> {
    let path = root.join(&case.path);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    let _ = fs::remove_file(&path);
    let mut targets = Vec::new();
    match case.make.as_str() {
        "file" => fs::write(&path, &case.content).unwrap(),
        "big" => {
            // A valid frontmatter, then 50 MB of body.
            let mut bytes = case.content.clone();
            let line = b"filler text that goes on and on and on and on and on and on and on\n";
            while bytes.len() < 50 * 1024 * 1024 {
                bytes.extend_from_slice(line);
            }
            fs::write(&path, bytes).unwrap();
        }
        "deep-nesting" => {
            let depth = 100_000;
            let mut bytes = b"---\nnested: ".to_vec();
            bytes.extend(std::iter::repeat_n(b'[', depth));
            bytes.extend(std::iter::repeat_n(b']', depth));
            bytes.extend_from_slice(b"\n---\n\nbody\n");
            fs::write(&path, bytes).unwrap();
        }
        "fifo" => {
            let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
            // SAFETY: a valid NUL-terminated path.
            assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
        }
        "unreadable" => {
            fs::write(&path, &case.content).unwrap();
            fs::set_permissions(&path, fs::Permissions::from_mode(0o000)).unwrap();
        }
        "symlink-outside" => {
            let target = outside.join(format!("{}.target", case.name));
            fs::write(&target, &case.content).unwrap();
            std::os::unix::fs::symlink(&target, &path).unwrap();
            targets.push(target);
        }
        "symlink-loop" => {
            let name = path.file_name().unwrap().to_owned();
            std::os::unix::fs::symlink(&name, &path).unwrap();
        }
        other => panic!("{}: unknown make {other}", case.name),
    }
    targets
}

fn check_json(p: &TestPolis, as_nobody: bool) -> (serde_json::Value, String) {
    let bin = if as_nobody {
        harness::bin_for_others(p.dir.path())
    } else {
        PathBuf::from(harness::BIN)
    };
    let mut cmd = Command::new(bin);
    cmd.args(["check", "--json"])
        .arg(&p.root)
        .env("POLISD_STATE_DIR", &p.state_dir);
    if as_nobody {
        use std::os::unix::process::CommandExt;
        cmd.uid(65534).gid(65534);
    }
    let out = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(
        matches!(out.status.code(), Some(0) | Some(1)),
        "check crashed or failed (status {:?}): {stderr}",
        out.status
    );
    (
        serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("check --json printed no JSON ({e}): {stderr}")),
        stderr,
    )
}

/// Makes the temporary folder traversable for uid 65534 (the unreadable case as root).
fn open_up(dir: &Path) {
    for e in walk(dir) {
        let meta = fs::symlink_metadata(&e).unwrap();
        if meta.is_dir() {
            fs::set_permissions(&e, fs::Permissions::from_mode(0o755)).unwrap();
        }
    }
    fs::set_permissions(dir, fs::Permissions::from_mode(0o755)).unwrap();
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if e.file_type().is_ok_and(|t| t.is_dir()) {
            out.extend(walk(&p));
        }
        out.push(p);
    }
    out
}

#[test]
fn corpus_each_case_reported_by_check() {
    let cases = load_cases();
    assert!(cases.len() >= 20, "the corpus lost cases: {}", cases.len());
    let mut failures = Vec::new();
    for case in &cases {
        let p = TestPolis::init(FOUNDER);
        p.citizen(AGENT, "test", &[("rust", 4)], "medium");
        let outside = p.dir.path().join("outside");
        fs::create_dir_all(&outside).unwrap();
        apply(case, &p.root, &outside);
        let as_nobody = case.make == "unreadable" && is_root();
        if as_nobody {
            open_up(p.dir.path());
        }
        let (json, _) = check_json(&p, as_nobody);
        let findings = json["findings"].as_array().cloned().unwrap_or_default();
        let about: Vec<&serde_json::Value> = findings
            .iter()
            .filter(|f| {
                case.expect
                    .as_ref()
                    .map_or(f["path"] == case.path.as_str(), |(_, path)| {
                        f["path"] == path.as_str()
                    })
            })
            .collect();
        match &case.expect {
            None => {
                if !about.is_empty() {
                    failures.push(format!(
                        "{}: expected no finding about {:?}, got {about:#?}",
                        case.name, case.path
                    ));
                }
            }
            Some((code, _)) => {
                let hit = about.iter().any(|f| {
                    f["code"] == code.as_str()
                        && case.line.is_none_or(|l| f["line"] == l)
                        && case.message.as_ref().is_none_or(|m| {
                            f["message"]
                                .as_str()
                                .is_some_and(|s| s.contains(m.as_str()))
                        })
                });
                if !hit {
                    failures.push(format!(
                        "{}: expected {code} (line {:?}, message {:?}); findings about the path: {about:#?}",
                        case.name, case.line, case.message
                    ));
                }
            }
        }
        // Nothing went to the rest of the disk either.
        if case.make == "unreadable" {
            // Leave the temporary folder removable.
            let _ = fs::set_permissions(p.root.join(&case.path), fs::Permissions::from_mode(0o644));
        }
    }
    println!("corpus: {} cases checked with `polisd check`", cases.len());
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// `>>` onto chronicle.md, only when it is a regular file (never through a link).
fn append_via_file(p: &TestPolis, line: &str) {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    if let Ok(mut f) = fs::OpenOptions::new()
        .append(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(p.path("chronicle.md"))
    {
        f.write_all(line.as_bytes()).unwrap();
    }
}

fn sha(path: &Path) -> String {
    use sha2::Digest;
    let bytes = fs::read(path).unwrap();
    format!("{:x}", sha2::Sha256::digest(bytes))
}

#[test]
fn corpus_daemon_keeps_running_and_writes_nothing_outside() {
    let cases = load_cases();
    let p = TestPolis::init(FOUNDER);
    p.citizen(AGENT, "test", &[("rust", 4)], "medium");
    p.append(
        "chronicle.md",
        &harness::chronicle_line(AGENT, "joined polis", "-", "hello"),
    );
    let outside = p.dir.path().join("outside");
    fs::create_dir_all(&outside).unwrap();
    let mut daemon = p.start_daemon();
    // Everything outside `_polis/` but polisd's own state and log, before the cases.
    let around = || -> Vec<(PathBuf, String)> {
        let mut v: Vec<(PathBuf, String)> = walk(p.dir.path())
            .into_iter()
            .filter(|e| {
                !e.starts_with(&p.root)
                    && !e.starts_with(&p.state_dir)
                    && !e.ends_with("daemon.log")
                    && fs::symlink_metadata(e).is_ok_and(|m| m.is_file())
            })
            .map(|e| {
                let h = sha(&e);
                (e, h)
            })
            .collect();
        v.sort();
        v
    };
    let around_before = around();
    let mut targets = Vec::new();
    let mut hashes: Vec<(PathBuf, String)> = Vec::new();
    let mut logged = 0;
    // One case at a time: each is waited for in the log before the next may replace its path.
    for case in &cases {
        if case.make == "unreadable" && is_root() {
            println!("corpus: {}: skipped for the daemon (running as root reads any file; `check` covered it as uid 65534)", case.name);
            continue;
        }
        let made = apply(case, &p.root, &outside);
        hashes.extend(made.iter().map(|t| (t.clone(), sha(t))));
        targets.extend(made);
        if case.path.starts_with("citizens/agent-alpha/inbox") {
            // A notice for agent-alpha must be due for polisd to try (and refuse) the link.
            append_via_file(
                &p,
                "- 2026-02-30 10:00 | agent-alpha | noted progress | - | corpus\n",
            );
        }
        // A log line holding all of these: the case's own log text, or its finding.
        let want: Option<Vec<String>> = match case.log.as_deref() {
            // A finding only `check` makes (a value the router reads its own way): nothing to log.
            Some("none") => None,
            _ => case.log.clone().map(|l| vec![l]).or_else(|| {
                let (code, path) = case.expect.as_ref()?;
                // Findings from reading a file (the daemon logs those; the rest is `check`'s).
                ["P001", "P002", "P004"].contains(&code.as_str()).then(|| {
                    vec![
                        polisd::protocol::finding::printable(path.clone()),
                        format!("error {code}"),
                    ]
                })
            }),
        };
        if let Some(want) = want {
            harness::wait_for(
                &p,
                &format!("{}: the daemon log to mention {want:?}", case.name),
                || {
                    assert!(
                        daemon.is_running(),
                        "the daemon died:\n{}",
                        daemon.log_text()
                    );
                    daemon
                        .log_text()
                        .lines()
                        .any(|l| want.iter().all(|w| l.contains(w.as_str())))
                },
            );
            logged += 1;
        }
    }
    let before = hashes;
    // The daemon still reacts: a fresh settlement is reconciled.
    p.save(
        "contracts/settled/after-corpus.md",
        "---\ncontract_id: after-corpus\nopened_by: founder-one\nopened_at: 2026-11-01 09:00:00\n\
         owner: agent-alpha\nstatus: settled\nrequired_tags: [rust]\nsettled_at: 2026-11-02 10:00:00\n\
         quality_score: 4\nactual_minutes: 30\n---\n\nDone.\n",
    );
    wait_until(
        "the settlement after the corpus to be reconciled",
        DEADLINE,
        || {
            assert!(
                daemon.is_running(),
                "the daemon died:\n{}",
                daemon.log_text()
            );
            fs::read_to_string(p.path("contracts/routing_stats.yml"))
                .is_ok_and(|s| s.contains("agent-alpha"))
        },
    );
    assert!(
        daemon.is_running(),
        "the daemon died:\n{}",
        daemon.log_text()
    );
    for (t, hash) in &before {
        assert_eq!(&sha(t), hash, "{} was written through a link", t.display());
    }
    let around_after: Vec<(PathBuf, String)> = around()
        .into_iter()
        .filter(|(e, _)| !targets.contains(e))
        .collect();
    assert_eq!(around_after, around_before, "polisd wrote outside _polis/");
    let stray: Vec<PathBuf> = walk(&outside)
        .into_iter()
        .filter(|e| !targets.contains(e))
        .collect();
    assert!(
        stray.is_empty(),
        "polisd created files outside _polis/: {stray:?}"
    );
    println!(
        "corpus: {} cases in one polis; {logged} seen in the daemon's log; the daemon kept \
         running; {} link targets unchanged",
        cases.len(),
        targets.len()
    );
}

/// Runs `polisd check` on `root` and returns its peak resident memory in KiB (`wait4`).
fn check_peak_rss_kib(root: &Path, state: &Path) -> i64 {
    let child = Command::new(harness::BIN)
        .args(["check", "--json"])
        .arg(root)
        .env("POLISD_STATE_DIR", state)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut status = 0;
    // SAFETY: a zeroed rusage is a valid out-parameter; the pid is our own child, waited once.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let pid = child.id() as i32;
    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(r, pid, "wait4: {}", std::io::Error::last_os_error());
    std::mem::forget(child);
    usage.ru_maxrss
}

/// A 1.5 KB alias bomb in `polis.yml` once cost 124 MB before the node bound
/// tripped. The bound is relative to the file's size now: the bomb costs `polisd check` a few
/// MB more than the same polis without it.
#[test]
fn corpus_small_alias_bomb_costs_a_few_megabytes() {
    let p = TestPolis::init(FOUNDER);
    let state = p.dir.path().join("rss-state");
    let plain = check_peak_rss_kib(&p.root, &state);
    let mut bomb = String::from("# an alias bomb of about 1.5 KB\ntimezone: UTC\n");
    bomb.push_str("a0: &a0 [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n");
    for i in 1..12 {
        let prev = format!("*a{}", i - 1);
        let refs = [prev.as_str(); 10].join(",");
        bomb.push_str(&format!("a{i}: &a{i} [{refs}]\n"));
    }
    while bomb.len() < 1500 {
        bomb.push_str("# padding to the size of the reported file\n");
    }
    fs::write(p.root.join("polis.yml"), &bomb).unwrap();
    let with_bomb = check_peak_rss_kib(&p.root, &state);
    let extra_mib = (with_bomb - plain) as f64 / 1024.0;
    eprintln!(
        "polisd check: {plain} KiB plain, {with_bomb} KiB with the bomb (+{extra_mib:.1} MiB)"
    );
    assert!(
        extra_mib < 8.0,
        "a {} byte alias bomb cost {extra_mib:.1} MiB",
        bomb.len()
    );
}
