//! What a user reads says what the binary does: README.md, docs/protocol.md, `--help`,
//! `--version`, the man page and the shell completions.

use super::{describe, json, stdout};
use crate::harness::{TestPolis, BIN};
use std::path::Path;
use std::process::Command;

/// The `polisd …` command lines of a markdown text's shell blocks (`sh`, `bash`, `console`), one
/// per command of a `&&` list, as words: a leading `$ `, comments, and what a pipe, a
/// redirection or `&` hands to the shell left out.
fn documented_commands(markdown: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut in_block = false;
    for line in markdown.lines() {
        if let Some(info) = line.trim_start().strip_prefix("```") {
            in_block = !in_block && matches!(info, "sh" | "bash" | "console");
            continue;
        }
        if !in_block {
            continue;
        }
        let line = line.trim_start();
        let line = line.strip_prefix("$ ").unwrap_or(line);
        for command in line.split("&&") {
            let Some(mut words) = shlex::split(command) else {
                continue;
            };
            // What follows a pipe, a redirection or `&` is the shell's, not polisd's.
            let end = words
                .iter()
                .position(|w| matches!(w.as_str(), "|" | "&" | ";" | ">" | ">>" | "<"))
                .unwrap_or(words.len());
            words.truncate(end);
            if words.first().is_some_and(|w| w == "polisd") {
                out.push(words);
            }
        }
    }
    out
}

#[test]
fn every_polisd_command_in_the_readme_and_the_docs_parses() {
    use clap::Parser;
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut pages = vec![root.join("README.md")];
    for entry in std::fs::read_dir(root.join("docs")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "md") {
            pages.push(path);
        }
    }
    let mut checked = 0;
    let mut wrong = Vec::new();
    for page in &pages {
        let text = std::fs::read_to_string(page).unwrap();
        for words in documented_commands(&text) {
            checked += 1;
            match polisd::commands::cli::Cli::try_parse_from(&words) {
                Ok(_) => {}
                Err(e)
                    if matches!(
                        e.kind(),
                        clap::error::ErrorKind::DisplayHelp
                            | clap::error::ErrorKind::DisplayVersion
                    ) => {}
                Err(e) => wrong.push(format!(
                    "{}: `{}`: {}",
                    page.strip_prefix(root).unwrap_or(page).display(),
                    words.join(" "),
                    e.to_string().lines().next().unwrap_or("")
                )),
            }
        }
    }
    assert!(checked >= 40, "only {checked} documented commands found");
    assert!(
        wrong.is_empty(),
        "documented commands that do not parse:\n  {}",
        wrong.join("\n  ")
    );
}

#[test]
fn documented_commands_are_read_as_a_shell_reads_them() {
    let page = "text polisd x\n```sh\n$ polisd log --as a-agent-1 \"blocked on review\" # why\n\
                cargo build && polisd run & # in the background\npolisd status --json | jq .\n```\n```toml\npolisd = 1\n```\n";
    assert_eq!(
        documented_commands(page),
        [
            vec!["polisd", "log", "--as", "a-agent-1", "blocked on review"],
            vec!["polisd", "run"],
            vec!["polisd", "status", "--json"],
        ]
    );
}

#[test]
fn version_names_the_commit_it_was_built_from() {
    let out = Command::new(BIN).arg("--version").output().unwrap();
    let text = stdout(&out);
    let re =
        regex::Regex::new(r"^polisd \d+\.\d+\.\d+ \(commit ([0-9a-f]{12}|unknown)\)\n$").unwrap();
    let caps = re.captures(&text).unwrap_or_else(|| panic!("{text:?}"));
    let head = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    if let Some(head) = head {
        assert_eq!(&caps[1], head, "built from another commit than HEAD");
    }
}

#[test]
fn completions_and_man_page_come_from_the_command_line_definition() {
    for shell in ["bash", "zsh", "fish"] {
        let out = Command::new(BIN)
            .args(["completions", shell])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{shell}");
        let script = stdout(&out);
        for sub in ["register", "config", "check", "completions"] {
            assert!(script.contains(sub), "{shell} completions lack `{sub}`");
        }
    }
    let out = Command::new(BIN)
        .args(["completions", "tcsh"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(2),
        "an unknown shell is a usage error"
    );
    let man = stdout(&Command::new(BIN).arg("man").output().unwrap());
    assert!(man.contains(".TH polisd 1"), "{man}");
    assert!(man.contains("register"), "{man}");
}

/// What docs/install.md tells a user to install is read by the real tools: bash parses the
/// completion script, and `man` renders the page without a warning from groff.
#[test]
fn completions_parse_in_bash_and_the_man_page_renders_in_man() {
    let tmp = tempfile::tempdir().unwrap();
    let script = tmp.path().join("polisd.bash");
    let out = Command::new(BIN)
        .args(["completions", "bash"])
        .output()
        .unwrap();
    std::fs::write(&script, &out.stdout).unwrap();
    let bash = Command::new("bash")
        .arg("-n")
        .arg(&script)
        .output()
        .expect("bash is needed to check the completion script");
    assert!(bash.status.success(), "{}", describe(&bash));
    let page = tmp.path().join("polisd.1");
    let out = Command::new(BIN).arg("man").output().unwrap();
    std::fs::write(&page, &out.stdout).unwrap();
    let man = Command::new("man")
        .args(["--warnings", "-l"])
        .arg(&page)
        .env("MANPAGER", "cat")
        .env("MANWIDTH", "100")
        .output()
        .expect("man (package man-db) is needed to render the manual page");
    assert!(man.status.success(), "{}", describe(&man));
    let text = stdout(&man);
    assert!(text.contains("contract"), "{text}");
    let warnings = String::from_utf8_lossy(&man.stderr);
    assert!(warnings.trim().is_empty(), "groff warned: {warnings}");
}

/// `man --dir` writes its pages as files of their own: a page name that is a symbolic or hard
/// link to a polis file is replaced, never written through, and a folder inside `_polis/` is
/// refused (only polisd's writer writes there).
#[test]
fn man_dir_never_writes_into_the_polis() {
    let p = TestPolis::init(super::FOUNDER);
    let pages = p.root.parent().unwrap().join("pages");
    std::fs::create_dir(&pages).unwrap();
    std::os::unix::fs::symlink(p.path("chronicle.md"), pages.join("polisd.1")).unwrap();
    std::fs::hard_link(p.path("index.md"), pages.join("polisd-status.1")).unwrap();
    let before = crate::harness::tree(&p);
    let out = Command::new(BIN)
        .args(["man", "--dir"])
        .arg(&pages)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    assert!(
        crate::harness::tree(&p) == before,
        "a page was written into the polis"
    );
    let main = std::fs::symlink_metadata(pages.join("polisd.1")).unwrap();
    assert!(main.is_file(), "the link is replaced by the page");
    let out = Command::new(BIN)
        .args(["man", "--dir"])
        .arg(p.path("citizens"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", describe(&out));
    assert!(
        crate::harness::tree(&p) == before,
        "pages were written into the polis"
    );
}

/// The main page lists each command as `polisd-contract(1)`: `polisd man --dir` writes every
/// page it names, so `man polisd-contract-open` finds one, and each renders without a warning.
#[test]
fn man_dir_writes_every_page_the_main_page_names() {
    let tmp = tempfile::tempdir().unwrap();
    let out = Command::new(BIN)
        .args(["man", "--dir"])
        .arg(tmp.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    let main = std::fs::read_to_string(tmp.path().join("polisd.1")).unwrap();
    assert_eq!(
        main,
        stdout(&Command::new(BIN).arg("man").output().unwrap())
    );
    // roff escapes the hyphens: `polisd\-contract(1)`.
    let named = regex::Regex::new(r"polisd((?:\\?-[a-z]+)+)\(1\)").unwrap();
    let mut pages = vec!["polisd".to_string()];
    let mut at = 0;
    while at < pages.len() {
        let text = std::fs::read_to_string(tmp.path().join(format!("{}.1", pages[at])))
            .unwrap_or_else(|e| panic!("{}.1 is named but not written: {e}", pages[at]));
        for c in named.captures_iter(&text) {
            let page = format!("polisd{}", c[1].replace('\\', ""));
            if !pages.contains(&page) {
                pages.push(page);
            }
        }
        at += 1;
    }
    assert!(
        pages.contains(&"polisd-contract-open".to_string()),
        "{pages:?}"
    );
    let man = Command::new("man")
        .args(["--warnings", "-l"])
        .arg(tmp.path().join("polisd-contract-open.1"))
        .env("MANPAGER", "cat")
        .env("MANWIDTH", "100")
        .output()
        .expect("man (package man-db) is needed to render the manual page");
    assert!(man.status.success(), "{}", describe(&man));
    assert!(stdout(&man).contains("--title"), "{}", describe(&man));
    let warnings = String::from_utf8_lossy(&man.stderr);
    assert!(warnings.trim().is_empty(), "groff warned: {warnings}");
    // A folder that is not there is a usage error; nothing is created.
    let missing = tmp.path().join("no/such");
    let out = Command::new(BIN)
        .args(["man", "--dir"])
        .arg(&missing)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", describe(&out));
    assert!(!tmp.path().join("no").exists());
}

/// docs/protocol.md: every command finds the polis from the working directory or `--polis PATH`.
/// Run from a folder outside any polis, each command given the flag reads the one it names.
#[test]
fn every_command_taking_a_polis_finds_it_by_the_polis_flag() {
    let p = TestPolis::init("claude-founder-one");
    let elsewhere = tempfile::tempdir().unwrap();
    let polis = p.root.to_str().unwrap();
    for args in [
        vec!["tally", "--dry-run", "--json"],
        vec!["reflect", "--json"],
        vec!["verify", "--json"],
        vec!["activity", "--json"],
        vec!["report", "--format", "md"],
        vec![
            "register",
            "second-agent",
            "--vendor",
            "openai",
            "--model",
            "m",
            "--tags",
            "docs:3",
            "--dry-run",
            "--json",
        ],
    ] {
        let out = Command::new(BIN)
            .args(&args)
            .args(["--polis", polis])
            .current_dir(elsewhere.path())
            .env("POLISD_STATE_DIR", &p.state_dir)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{args:?}\n{}", describe(&out));
    }
}

/// `polisd --help` is a map: the commands under headings by use, one line each, no flat list.
#[test]
fn help_groups_the_commands_under_headings() {
    let out = Command::new(BIN).arg("--help").output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    let help = stdout(&out);
    let headings = [
        "The daemon and the rules it applies (each also runs once):",
        "Agents' actions:",
        "Inspection:",
        "Set-up and service:",
    ];
    let mut at = 0;
    for heading in headings {
        let found = help[at..]
            .find(heading)
            .unwrap_or_else(|| panic!("no `{heading}`:\n{help}"));
        at += found;
    }
    assert!(!help.contains("Commands:"), "{help}");
    // The reference's name for `check` stands beside it.
    assert!(help.contains("\n  check, doctor  "), "{help}");
    for (command, heading) in [
        ("run", 0),
        ("contract", 1),
        ("status", 2),
        ("init", 3),
        ("migrate", 3),
    ] {
        let line = format!("\n  {command} ");
        let pos = help
            .find(&line)
            .unwrap_or_else(|| panic!("no `{command}`:\n{help}"));
        let owner = headings
            .iter()
            .rposition(|h| help[..pos].contains(h))
            .unwrap();
        assert_eq!(
            owner, heading,
            "`{command}` under the wrong heading:\n{help}"
        );
    }
    // One line each: every command line starts a description; wrapped lines are rare.
    let commands = help
        .lines()
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .count();
    assert!(commands >= 35, "{help}");
}

/// On a narrow terminal the command map wraps at its width, as clap wraps the about text and
/// the options around it, instead of leaving 100-column lines for the terminal to fold into the
/// names' column. Piped, `COLUMNS` stands for the terminal.
#[test]
fn help_map_wraps_at_a_narrow_terminal_width() {
    for columns in ["60", "72"] {
        let out = Command::new(BIN)
            .arg("--help")
            .env("COLUMNS", columns)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
        let help = stdout(&out);
        let width: usize = columns.parse().unwrap();
        let long: Vec<&str> = help.lines().filter(|l| l.chars().count() > width).collect();
        assert!(long.is_empty(), "wider than {width}: {long:#?}\n{help}");
        assert!(help.contains("\n  check, doctor  "), "{help}");
    }
    // Without a terminal or `COLUMNS`, 100 columns as before.
    let out = Command::new(BIN)
        .arg("--help")
        .env_remove("COLUMNS")
        .output()
        .unwrap();
    let help = stdout(&out);
    assert!(help.lines().all(|l| l.chars().count() <= 100), "{help}");
    assert!(help.lines().any(|l| l.chars().count() > 90), "{help}");
}

// ---------------------------------------------------------------------------------------------
// docs/protocol.md: every example is a real file

/// Writes every example of docs/protocol.md into a polis, in order (`<!-- example: PATH -->`
/// replaces the file, `(moved from OLD)` removes OLD, `<!-- example-append: PATH -->` appends),
/// and checks it.
#[test]
fn protocol_doc_examples_make_a_polis_without_errors() {
    let doc =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/protocol.md"))
            .unwrap();
    let p = TestPolis::init("claude-code-1");
    for (id, vendor) in [("codex-agent-2", "openai"), ("gemini-cli-03", "google")] {
        let out = p.polisd(&[
            "register", id, "--vendor", vendor, "--model", "m", "--tags", "python:3",
        ]);
        assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    }
    let marker = regex::Regex::new(
        r"(?m)^<!-- (example|example-append): (\S+)(?: \(moved from (\S+)\))? -->\n```[a-z]*\n((?s:.*?))```\n",
    )
    .unwrap();
    let mut examples = 0;
    for c in marker.captures_iter(&doc) {
        let (path, body) = (&c[2], &c[4]);
        if let Some(old) = c.get(3) {
            std::fs::remove_file(p.path(old.as_str())).unwrap();
        }
        if &c[1] == "example" {
            p.save(path, body);
        } else {
            p.append(path, body);
        }
        examples += 1;
    }
    assert_eq!(
        examples,
        doc.matches("<!-- example").count(),
        "a marked example did not parse"
    );
    let out = p.polisd(&["check", "--json"]);
    let report = json(&out);
    assert_eq!(report["errors"], 0, "{report:#}");
    // Only C005 (the examples are older than the founding line) may warn.
    let others: Vec<_> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["code"] != "C005")
        .collect();
    assert!(others.is_empty(), "{others:#?}");
    // The retraction in the chronicle section resolves the C008 above it.
    assert!(
        report["resolved"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["code"] == "C008"),
        "{report:#}"
    );
    // The card example's hash is right.
    let verify = json(&p.polisd(&["verify", "--json"]));
    assert!(
        verify["cards"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["state"] == "ok"),
        "{verify:#}"
    );
    // The amendment's three vote forms all count: 3 agree would ratify; here the tally sees
    // claude-code-1 and codex-agent-2 agreeing and gemini-cli-03 requesting changes.
    let tally = json(&p.polisd(&["tally", "--dry-run", "--json"]));
    assert_eq!(tally["results"][0]["agrees"], 2, "{tally:#}");
}

#[test]
fn readme_links_the_protocol_page_and_cites_no_missing_spec() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    assert!(readme.contains("(docs/protocol.md)"));
    assert!(
        !readme.contains("SPEC.md"),
        "README cites SPEC.md, which is not in the repository"
    );
    assert!(
        readme.contains("(docs/guide.md)"),
        "README links the full guide"
    );
    assert!(
        readme.lines().count() < 400,
        "README.md has {} lines: keep it under 400 and move detail to docs/",
        readme.lines().count()
    );
    let issue = regex::Regex::new(r"(?i)\bissues? #?[0-9]+").unwrap();
    let mut texts = vec![("README.md".to_string(), readme.clone())];
    for entry in std::fs::read_dir(root.join("docs")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "md") {
            let text = std::fs::read_to_string(&path).unwrap();
            texts.push((path.display().to_string(), text));
        }
    }
    for (name, text) in &texts {
        if let Some(m) = issue.find(text) {
            panic!(
                "{name} cites an issue number ({}): say what and why instead",
                m.as_str()
            );
        }
    }
    let doc = std::fs::read_to_string(root.join("docs/protocol.md")).unwrap();
    for code in (1..=9)
        .map(|n| format!("C00{n}"))
        .chain((1..=26).map(|n| format!("P{n:03}")))
    {
        assert!(
            doc.contains(&format!("| {code} |")),
            "docs/protocol.md lacks {code}"
        );
    }
    for kind in polisd::protocol::delivery::inbox::Kind::ALL {
        assert!(
            doc.contains(&format!("`{}`", kind.as_str())),
            "docs/protocol.md lacks {kind}"
        );
    }
}
