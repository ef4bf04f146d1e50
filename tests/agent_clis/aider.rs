//! Aider, which has no hooks, in real sessions (`aider --message`, headless) against the model
//! API's Chat Completions. The test reads what the model was shown:
//! - with only the bridge pointer `AGENTS.md` under `read:` in `.aider.conf.yml`, the pointer in
//!   the first request, once; when the model answers with the command the pointer asks for
//!   (`polisd prime --as ID` in a shell block, Aider's "suggested shell commands"),
//!   `--yes-always` does not run it: Aider asks for an explicit yes for shell commands, and
//!   `--yes-always` answers no;
//! - where `polisd hooks install --aider --as ID` ran, Aider's `load:` file runs
//!   `/run polisd hook aider prime` before the first turn: the primer, with an early message,
//!   in the first request, once; the message read and not shown by the next session; and
//!   after `hooks uninstall --aider`, no primer and the team's config as it was;
//! - a person's comment after polisd's entries: still installed to Aider and to `hooks status`,
//!   and gone with the entries on uninstall, which leaves a config Aider reads as before;
//! - a switch in the config that is not `true` or `false`, which stops Aider at start and which
//!   `hooks status` names with its line.

use crate::harness::{self, wait_until, KilledGroup, TestPolis, BIN, DEADLINE};
use crate::model_api::{ModelApi, Turn};
use crate::{clients, message, primer_heading, shown, ME};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// What the bridge pointer asks every agent, in AGENTS.md.
const POINTER: &str = "run `polisd prime --as <your-citizen-id>`";

/// The model the session names: litellm's OpenAI provider, at the model API.
const MODEL: &str = "openai/polis-test";

struct AiderProject {
    polis: TestPolis,
    home: PathBuf,
}

/// A team's Aider settings, before polisd.
const TEAM_CONFIG: &str = "# the team's Aider settings\nmap-tokens: 1024\n";

impl AiderProject {
    /// A polis whose person ran `polisd hooks install --aider --as ME` over the team's config.
    fn new() -> AiderProject {
        let project = AiderProject::bare(TEAM_CONFIG);
        let out = project.install();
        assert!(out.status.success(), "{}", harness::describe(&out));
        project
    }

    /// `polisd hooks install --aider --as ME`, run by the person in the project.
    fn install(&self) -> std::process::Output {
        self.polisd()
            .args(["hooks", "install", "--aider", "--as", ME])
            .output()
            .unwrap()
    }

    /// `polisd hooks uninstall --aider`, run by the person in the project.
    fn uninstall(&self) -> std::process::Output {
        self.polisd()
            .args(["hooks", "uninstall", "--aider"])
            .output()
            .unwrap()
    }

    /// A polis whose Aider config is `config`, written by hand.
    fn bare(config: &str) -> AiderProject {
        let polis = TestPolis::init(ME);
        let home = polis.dir.path().join("home");
        std::fs::create_dir_all(&home).unwrap();
        // The model's size, given to Aider so it fetches no model list from the network.
        std::fs::write(
            home.join("model-metadata.json"),
            json!({ MODEL: {"max_input_tokens": 128000, "max_output_tokens": 4096,
                            "input_cost_per_token": 0, "output_cost_per_token": 0,
                            "litellm_provider": "openai", "mode": "chat"}})
            .to_string(),
        )
        .unwrap();
        let project = AiderProject { polis, home };
        std::fs::write(project.dir().join(".aider.conf.yml"), config).unwrap();
        project
    }

    fn dir(&self) -> PathBuf {
        self.polis.root.parent().unwrap().to_path_buf()
    }

    /// `polisd` on the person's `PATH`, as Aider runs it.
    fn path(&self) -> String {
        format!(
            "{}:{}",
            Path::new(BIN).parent().unwrap().display(),
            std::env::var("PATH").unwrap_or_default()
        )
    }

    fn polisd(&self) -> Command {
        let mut cmd = Command::new(BIN);
        cmd.env("POLISD_STATE_DIR", &self.polis.state_dir)
            .env("PATH", self.path())
            .env("HOME", &self.home)
            .env_remove("POLIS_CITIZEN")
            .current_dir(self.dir());
        cmd
    }

    fn unread(&self) -> usize {
        crate::unread_notices(self.polisd()).len()
    }

    /// One headless Aider session at the project root, offline: `--message`, then Aider exits.
    /// `polisd` is on its `PATH`, as for the person. Returns what Aider printed.
    #[track_caller]
    fn session(&self, api: &ModelApi, prompt: &str, more: &[&str]) -> String {
        let (ok, output) = self.try_session(api, prompt, more);
        assert!(ok, "Aider failed: {output}");
        output
    }

    /// [`AiderProject::session`]: whether Aider ended well, and what it printed.
    fn try_session(&self, api: &ModelApi, prompt: &str, more: &[&str]) -> (bool, String) {
        let log = self.home.join("aider.out");
        let file = std::fs::File::create(&log).unwrap();
        let path = self.path();
        let mut aider = KilledGroup::spawn(
            Command::new(clients::aider_python())
                .args(["-m", "aider", "--message", prompt])
                .args(["--model", MODEL, "--openai-api-key", "sk-test"])
                .arg("--openai-api-base")
                .arg(format!("{}/v1", api.url))
                .arg("--model-metadata-file")
                .arg(self.home.join("model-metadata.json"))
                // The edit format Aider gives the common chat models; it is the one that reads
                // a model's shell blocks as commands to suggest.
                .args(["--edit-format", "diff"])
                .args(["--no-git", "--no-check-update", "--no-analytics"])
                .args(["--no-show-release-notes", "--no-show-model-warnings"])
                .args(["--no-pretty", "--no-fancy-input"])
                .args(more)
                .current_dir(self.dir())
                .env("HOME", &self.home)
                .env("PATH", path)
                .env("POLISD_STATE_DIR", &self.polis.state_dir)
                .env_remove("POLIS_CITIZEN")
                .env_remove("OPENAI_API_KEY")
                .env_remove("OPENAI_API_BASE")
                // litellm's own model list, not the one it would fetch.
                .env("LITELLM_LOCAL_MODEL_COST_MAP", "True")
                .stdin(Stdio::null())
                .stdout(file.try_clone().unwrap())
                .stderr(file),
        )
        .unwrap();
        let mut status = None;
        wait_until("Aider to end its session", DEADLINE, || {
            status = aider.child().try_wait().unwrap();
            status.is_some()
        });
        let output = std::fs::read_to_string(&log).unwrap_or_default();
        (status.unwrap().success(), output)
    }
}

/// What the model sees of a Chat Completions request: its messages' text.
fn messages(body: &str) -> String {
    let v: Value = serde_json::from_str(body).unwrap();
    v["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].as_str().unwrap_or_default().to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

/// With only the bridge pointer under `read:` (no `load:` file), the pointer reaches the model
/// once; the command it asks for, suggested by the model, is not run by `--yes-always` (Aider
/// requires an explicit yes for shell commands), so no primer follows and the inbox stays
/// unread. This is why `hooks install --aider` sets a `load:` file.
#[test]
fn aider_session_shows_the_bridge_pointer_once_and_yes_always_runs_no_suggested_command() {
    let project = AiderProject::bare("read: AGENTS.md\n");
    project.message("Early word: the parser review waits for you (token EARLY-7Q).");
    let prime = format!("I start as the pointer says.\n\n```bash\npolisd prime --as {ME}\n```\n");
    let api = ModelApi::start(move |_, _| Turn::Text(prime.clone()));
    let output = project.session(&api, "Start your session.", &["--yes-always"]);
    let turns = api.turns();
    assert!(!turns.is_empty(), "Aider asked the model: {output}");
    assert!(
        turns[0].path.starts_with("/v1/chat/completions"),
        "{}",
        turns[0].path
    );
    let first = messages(&turns[0].body);
    assert_eq!(shown(&first, POINTER), 1, "the pointer, once: {first}");
    assert!(
        output.contains(&format!("polisd prime --as {ME}")),
        "Aider shows the suggested command: {output}"
    );
    assert!(
        !output.contains(&primer_heading()),
        "`--yes-always` runs no shell command: {output}"
    );
    for turn in &turns {
        assert_eq!(shown(&messages(&turn.body), &primer_heading()), 0);
    }
    assert_eq!(
        project.unread(),
        1,
        "prime never ran, so the notice is unread"
    );
}

/// Where only `polisd hooks install --aider --as ME` ran, a headless Aider session gets its
/// primer by itself: the `load:` file runs `/run polisd hook aider prime` before the message,
/// so the primer, with the early message, is in the model's first request, once, and the
/// message is then read. The next session shows the primer and not the message; after
/// `hooks uninstall --aider` a session shows no primer and the team's config is as it was.
#[test]
fn aider_session_primes_itself_where_hooks_install_ran_and_not_after_uninstall() {
    let project = AiderProject::new();
    project.message("Early word: the parser review waits for you (token EARLY-7Q).");
    let api = ModelApi::start(|_, _| Turn::Text("on it".into()));
    let output = project.session(&api, "What is waiting for me?", &["--yes-always"]);
    let turns = api.turns();
    assert_eq!(turns.len(), 1, "{output}");
    let first = messages(&turns[0].body);
    assert_eq!(shown(&first, &primer_heading()), 1, "{first}");
    assert_eq!(shown(&first, "EARLY-7Q"), 1, "{first}");
    assert_eq!(shown(&first, POINTER), 1, "{first}");
    assert_eq!(project.unread(), 0, "the primer showed the message");

    let api = ModelApi::start(|_, _| Turn::Text("on it".into()));
    let output = project.session(&api, "Anything new?", &["--yes-always"]);
    let turns = api.turns();
    assert_eq!(turns.len(), 1, "{output}");
    let first = messages(&turns[0].body);
    assert_eq!(shown(&first, &primer_heading()), 1, "{first}");
    assert_eq!(
        shown(&first, "EARLY-7Q"),
        0,
        "read, so not shown again: {first}"
    );

    let out = project.uninstall();
    assert!(out.status.success(), "{}", harness::describe(&out));
    assert_eq!(
        std::fs::read_to_string(project.dir().join(".aider.conf.yml")).unwrap(),
        TEAM_CONFIG
    );
    let api = ModelApi::start(|_, _| Turn::Text("on it".into()));
    let output = project.session(&api, "Anything new?", &["--yes-always"]);
    let turns = api.turns();
    assert!(!turns.is_empty(), "{output}");
    for turn in &turns {
        let body = messages(&turn.body);
        assert_eq!(shown(&body, &primer_heading()), 0, "{body}");
        assert_eq!(shown(&body, POINTER), 0, "{body}");
    }
}

impl AiderProject {
    fn message(&self, text: &str) {
        message(&self.polis.path(&format!("citizens/{ME}/inbox.md")), text);
    }
}

/// A key in `.aider.conf.yml` that is none of Aider's options stops Aider at start: no session,
/// so no primer. `hooks status` (and `hooks install --aider`, which keeps the key) says which
/// key; once it is gone, the session has the primer and the status nothing to say of it.
#[test]
fn aider_stops_at_a_config_key_that_is_no_option_and_hooks_status_says_so() {
    let project = AiderProject::new();
    let config = project.dir().join(".aider.conf.yml");
    let original = std::fs::read_to_string(&config).unwrap();
    std::fs::write(&config, format!("{original}team-note: kept\n")).unwrap();
    const SAID: &str = "has the key `team-note`, which is no option of Aider 0.86.2";
    let out = project.polisd().args(["hooks", "status"]).output().unwrap();
    assert!(
        harness::describe(&out).contains(SAID),
        "{}",
        harness::describe(&out)
    );
    assert_eq!(out.status.code(), Some(1));
    let out = project.install();
    assert!(
        String::from_utf8_lossy(&out.stdout).contains(SAID),
        "install warns: {}",
        harness::describe(&out)
    );
    let api = ModelApi::start(|_, _| Turn::Text("on it".into()));
    let (ok, output) = project.try_session(&api, "Hello?", &["--yes-always"]);
    assert!(!ok && output.contains("unrecognized arguments"), "{output}");
    assert!(api.turns().is_empty(), "no session, so no primer");

    std::fs::write(&config, &original).unwrap();
    let out = project.polisd().args(["hooks", "status"]).output().unwrap();
    let said = harness::describe(&out);
    assert!(!said.contains(SAID), "{said}");
    let api = ModelApi::start(|_, _| Turn::Text("on it".into()));
    project.session(&api, "Hello?", &["--yes-always"]);
    assert_eq!(shown(&messages(&api.turns()[0].body), &primer_heading()), 1);
}

/// What Aider read from its config file in a `--verbose` session: the keys and values it shows
/// under "Config File (…)".
fn config_values(output: &str) -> String {
    let mut lines = output
        .lines()
        .skip_while(|l| !l.starts_with("Config File ("));
    let heading = lines
        .next()
        .unwrap_or_else(|| panic!("no config shown: {output}"));
    let values: Vec<&str> = lines.take_while(|l| l.starts_with("  ")).collect();
    format!("{heading}\n{}", values.join("\n"))
}

/// A person's comment after polisd's entries (`read: AGENTS.md # c`, `load: .polis.aider  #
/// …`) leaves them polisd's: Aider still reads the pointer and runs the primer, `hooks status`
/// says so, and `hooks uninstall --aider` takes the entries out with the comments on them,
/// says so in one line, and gives back the team's config byte for byte, which Aider reads as
/// it did before the install.
#[test]
fn aider_config_with_a_persons_comment_on_polisd_s_entries_uninstalls_to_what_aider_read_before() {
    const TEAM: &str = "# the team's Aider settings\nmap-tokens: 1024  # big repo\n";
    let project = AiderProject::bare(TEAM);
    let config = project.dir().join(".aider.conf.yml");
    let verbose = ["--yes-always", "--verbose"];
    let api = ModelApi::start(|_, _| Turn::Text("on it".into()));
    let before = config_values(&project.session(&api, "Hello?", &verbose));

    let out = project.install();
    assert!(out.status.success(), "{}", harness::describe(&out));
    let installed = std::fs::read_to_string(&config).unwrap();
    let commented = installed
        .replace("read: AGENTS.md\n", "read: AGENTS.md # c\n")
        .replace("load: .polis.aider\n", "load: .polis.aider  # primer\n");
    assert_ne!(commented, installed, "{installed}");
    std::fs::write(&config, &commented).unwrap();

    let out = project
        .polisd()
        .args(["hooks", "status", "--json"])
        .output()
        .unwrap();
    let status: Value = serde_json::from_slice(&out.stdout).unwrap();
    let aider = status
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["cli"] == "aider")
        .unwrap();
    assert_eq!(aider["reads"], json!(["AGENTS.md"]), "{aider}");
    assert_eq!(aider["hooks"].as_array().map(Vec::len), Some(1), "{aider}");
    assert!(aider.get("foreign_load").is_none(), "{aider}");
    assert_eq!(aider["problems"], json!([]), "{aider}");
    let api = ModelApi::start(|_, _| Turn::Text("on it".into()));
    let output = project.session(&api, "Hello?", &["--yes-always"]);
    let first = messages(&api.turns()[0].body);
    assert_eq!(shown(&first, &primer_heading()), 1, "{output}\n{first}");
    assert_eq!(shown(&first, POINTER), 1, "{first}");

    let out = project.uninstall();
    assert!(out.status.success(), "{}", harness::describe(&out));
    let said = String::from_utf8_lossy(&out.stdout);
    let notes: Vec<&str> = said.lines().filter(|l| l.contains("`# c`")).collect();
    assert_eq!(notes.len(), 1, "one line names the comments: {said}");
    assert!(notes[0].contains("`# primer`"), "{said}");
    assert_eq!(std::fs::read_to_string(&config).unwrap(), TEAM);
    assert!(!project.dir().join(".polis.aider").exists());
    let api = ModelApi::start(|_, _| Turn::Text("on it".into()));
    let after = config_values(&project.session(&api, "Hello?", &verbose));
    assert_eq!(after, before);
    assert!(before.contains("map-tokens:"), "{before}");
}

/// `auto-commits: maybe` stops Aider at start (a switch takes `true` or `false`): no session,
/// so no primer. `hooks status` names the file, line and fix; once fixed, the session runs.
#[test]
fn aider_stops_at_a_switch_that_is_not_true_or_false_and_hooks_status_says_so() {
    let project = AiderProject::new();
    let config = project.dir().join(".aider.conf.yml");
    let original = std::fs::read_to_string(&config).unwrap();
    let line = original.lines().count() + 1;
    std::fs::write(&config, format!("{original}auto-commits: maybe\n")).unwrap();
    let out = project.polisd().args(["hooks", "status"]).output().unwrap();
    let said = harness::describe(&out);
    assert!(
        said.contains(&format!(
            ".aider.conf.yml line {line}: Aider 0.86.2 stops at start"
        )) && said.contains("`auto-commits:`")
            && said.contains("write `true` or `false`"),
        "{said}"
    );
    assert_eq!(out.status.code(), Some(1));
    let api = ModelApi::start(|_, _| Turn::Text("on it".into()));
    let (ok, output) = project.try_session(&api, "Hello?", &["--yes-always"]);
    assert!(
        !ok && output.contains("Unexpected value for auto-commits"),
        "{output}"
    );
    assert!(api.turns().is_empty(), "no session, so no primer");

    std::fs::write(&config, format!("{original}auto-commits: false\n")).unwrap();
    let out = project.polisd().args(["hooks", "status"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", harness::describe(&out));
    let api = ModelApi::start(|_, _| Turn::Text("on it".into()));
    project.session(&api, "Hello?", &["--yes-always"]);
    assert_eq!(shown(&messages(&api.turns()[0].body), &primer_heading()), 1);
}
