//! The agent CLIs themselves. Claude Code, Gemini CLI and Codex CLI, installed from npm
//! (`common/clients.rs`, pinned releases), each run real sessions in a project where
//! `polisd hooks install` wrote its settings, against a model API on 127.0.0.1
//! (`model_api.rs`). The test reads what the model was shown:
//! - the primer, from the session-start hook;
//! - a message another agent wrote to the citizen's inbox before the session;
//! - one written while the session works, shown after the model's next tool call;
//! - each notice exactly once: once shown it is read, and the next session does not show it
//!   again;
//! - a contract `polisd run` routed to the citizen, and the daemon's notice of it;
//! - the primer again after Claude Code compacts the conversation;
//! - polisd's MCP tools, once the server is added as docs/agent-clients.md says, and a call
//!   of one that claims a contract in the polis; after `hooks uninstall`, no primer, and the
//!   server the CLI added is kept;
//! - nothing in a folder Gemini CLI does not trust, which `hooks status` and `hooks install`
//!   then say;
//! - for Codex CLI, no hook it has no current approval for: never approved, or changed since
//!   (`codex_review.rs`, which asks Codex's own app server how it judges each hook);
//! - for Aider, which has no hooks, the bridge pointer, and the primer the `load:` file
//!   `hooks install --aider` sets brings (`aider.rs`).
//!
//! Each CLI runs headless (`claude -p`, `gemini -p`, `codex exec`), with a throw-away home that
//! holds only what a user sets up once: an API key and base address, and the trust each CLI asks
//! before it runs a project's hooks (Gemini's trusted folders; for Codex, whose trust is
//! recorded from its interactive review, the documented flag for automation that vets its
//! hooks, except in the test of that review's record).

mod aider;
#[path = "../common/clients.rs"]
mod clients;
mod codex_review;
#[path = "../harness/mod.rs"]
mod harness;
mod model_api;
#[path = "../common/reference.rs"]
mod reference;
mod settings_checks;

use harness::{wait_until, KilledGroup, TestPolis, BIN, DEADLINE};
use model_api::{ModelApi, Turn};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const ME: &str = "agent-under-test";
const OTHER: &str = "codex-frontend-one";

/// How one CLI is set up and started.
struct Cli {
    /// `hooks install --<flag>`.
    flag: &'static str,
    /// The CLI's command, which is also its name in `polisd hook <cli>`.
    bin: &'static str,
    /// The project settings file `hooks install` writes.
    settings: &'static str,
    /// The user-level set-up in `home`, once: an API key's kind, a model provider.
    setup: fn(home: &Path, project: &Path),
    /// What the person records, once, to let the CLI run the project's hooks.
    trust: fn(home: &Path, project: &Path),
    /// The arguments of a headless session with this prompt, against the model API at `url`.
    args: fn(prompt: &str, url: &str) -> Vec<String>,
    /// The command that adds polisd's MCP server for `project`, as docs/agent-clients.md
    /// gives it, and what lets a headless session call its tools without asking.
    mcp_add: fn(project: &Path) -> Vec<String>,
    mcp_allow: &'static [&'static str],
    /// The environment of a session against the model API at `url`.
    env: fn(home: &Path, url: &str) -> Vec<(String, String)>,
    /// The model's call of a tool that reads `file`, as the CLI names it.
    read_tool: fn(file: &Path) -> Turn,
}

fn owned(words: &[&str]) -> Vec<String> {
    words.iter().map(|w| w.to_string()).collect()
}

fn pairs(vars: &[(&str, &str)]) -> Vec<(String, String)> {
    vars.iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn write(path: PathBuf, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

const CLAUDE: Cli = Cli {
    flag: "--claude",
    bin: "claude",
    settings: ".claude/settings.json",
    setup: |_, _| {},
    // A headless Claude Code session asks for no workspace trust.
    trust: |_, _| {},
    args: |prompt, _| owned(&["-p", prompt, "--output-format", "json"]),
    mcp_add: |project| {
        let project = project.to_str().unwrap();
        owned(&["mcp", "add", "polis", "--", "polisd", "mcp", project])
    },
    mcp_allow: &["--allowedTools", "mcp__polis"],
    env: |_, url| {
        pairs(&[
            ("ANTHROPIC_BASE_URL", url),
            ("ANTHROPIC_API_KEY", "sk-ant-test"),
            ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1"),
            ("DISABLE_AUTOUPDATER", "1"),
        ])
    },
    read_tool: |file| Turn::Tool {
        name: "Read".into(),
        input: json!({"file_path": file}),
        namespace: None,
    },
};

const GEMINI: Cli = Cli {
    flag: "--gemini",
    bin: "gemini",
    settings: ".gemini/settings.json",
    setup: |home, _| {
        write(
            home.join(".gemini/settings.json"),
            r#"{"security": {"auth": {"selectedType": "gemini-api-key"}}}"#,
        );
    },
    // What choosing "trust folder" in Gemini CLI records: without it the CLI does not start
    // headless, and runs no project hooks.
    trust: |home, project| {
        write(
            home.join(".gemini/trustedFolders.json"),
            &json!({ project.to_str().unwrap(): "TRUST_FOLDER" }).to_string(),
        );
    },
    // A model named, so the CLI does not first ask a router model which one to use.
    args: |prompt, _| owned(&["-m", "gemini-2.5-flash", "-p", prompt]),
    mcp_add: |project| {
        let project = project.to_str().unwrap();
        owned(&["mcp", "add", "polis", "polisd", "mcp", project])
    },
    mcp_allow: &[
        "--allowed-mcp-server-names",
        "polis",
        "--approval-mode",
        "yolo",
    ],
    env: |_, url| {
        pairs(&[
            ("GEMINI_API_KEY", "test-key"),
            ("GOOGLE_GEMINI_BASE_URL", url),
        ])
    },
    read_tool: |file| Turn::Tool {
        name: "read_file".into(),
        input: json!({"file_path": file}),
        namespace: None,
    },
};

const CODEX: Cli = Cli {
    flag: "--codex",
    bin: "codex",
    settings: ".codex/hooks.json",
    setup: |home, project| {
        write(
            home.join(".codex/config.toml"),
            &format!(
                "model = \"gpt-5\"\nmodel_provider = \"local\"\n\n\
                 [model_providers.local]\nname = \"local\"\n\
                 wire_api = \"responses\"\nenv_key = \"LOCAL_MODEL_KEY\"\n\n\
                 [features]\nhooks = true\n\n[projects.\"{}\"]\ntrust_level = \"trusted\"\n",
                project.display()
            ),
        );
    },
    // The project's trust is in the config above; its hooks' trust, recorded by Codex's
    // interactive review, is given by `--dangerously-bypass-hook-trust` below.
    trust: |_, _| {},
    args: |prompt, url| {
        let base = format!("model_providers.local.base_url=\"{url}/v1\"");
        owned(&[
            "exec",
            "--skip-git-repo-check",
            "--dangerously-bypass-hook-trust",
            "-c",
            &base,
            prompt,
        ])
    },
    mcp_add: |project| {
        let project = project.to_str().unwrap();
        owned(&["mcp", "add", "polis", "--", "polisd", "mcp", project])
    },
    mcp_allow: &["--dangerously-bypass-approvals-and-sandbox"],
    env: |_, _| vec![("LOCAL_MODEL_KEY".to_string(), "test-key".to_string())],
    read_tool: |file| Turn::Tool {
        name: "exec_command".into(),
        input: json!({"cmd": format!("cat {}", file.display())}),
        namespace: None,
    },
};

/// A project with a polis, two citizens, and the CLI's hooks installed for `ME` by a person
/// whose home is `home`.
struct Project {
    polis: TestPolis,
    home: PathBuf,
    /// The person's `PATH`: polisd, the agent CLIs, then the test's own.
    path: String,
}

impl Project {
    fn new(cli: &Cli) -> Project {
        let polis = TestPolis::init(ME);
        polis.citizen(OTHER, "openai", &[("frontend", 4)], "medium");
        let home = polis.dir.path().join("home");
        std::fs::create_dir_all(&home).unwrap();
        let path = format!(
            "{}:{}:{}",
            Path::new(BIN).parent().unwrap().display(),
            clients::agent_clis().display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let project = Project { polis, home, path };
        (cli.setup)(&project.home, &project.dir());
        let out = project.run(&["hooks", "install", cli.flag, "--as", ME]);
        assert!(out.status.success(), "{}", harness::describe(&out));
        // The notices hook checks at most once a minute; the guide tells a team that wants
        // every tool call checked to say `--interval 0`, and polisd still knows the hook.
        let settings = project.dir().join(cli.settings);
        let text = std::fs::read_to_string(&settings).unwrap();
        let notices = format!("hook {} notices\"", cli.bin);
        assert!(text.contains(&notices), "{text}");
        let edited = text.replace(
            &notices,
            &format!("hook {} notices --interval 0\"", cli.bin),
        );
        std::fs::write(&settings, edited).unwrap();
        let out = project.run(&["hooks", "status"]);
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("3 hook(s), acting as agent-under-test"),
            "{}",
            harness::describe(&out)
        );
        write(
            project.dir().join("NOTES.md"),
            "the notes a tool call reads\n",
        );
        project
    }

    fn dir(&self) -> PathBuf {
        self.polis.root.parent().unwrap().to_path_buf()
    }

    /// `program` started as the person at this machine: their home, their polisd state
    /// folder and `PATH`, in the project.
    fn as_person(&self, program: &Path) -> Command {
        let mut cmd = Command::new(program);
        cmd.env("HOME", &self.home)
            .env("POLISD_STATE_DIR", &self.polis.state_dir)
            .env("PATH", &self.path)
            .env_remove("POLIS_CITIZEN")
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("CODEX_HOME")
            .current_dir(self.dir());
        cmd
    }

    fn polisd(&self) -> Command {
        self.as_person(Path::new(BIN))
    }

    /// `polisd ARGS` in the project, run to its end.
    fn run(&self, args: &[&str]) -> std::process::Output {
        self.polisd().args(args).output().unwrap()
    }

    /// A message from `OTHER` in `ME`'s inbox, written as an agent writes one.
    fn message(&self, text: &str) {
        message(&self.polis.path(&format!("citizens/{ME}/inbox.md")), text);
    }

    fn unread(&self) -> Vec<Value> {
        unread_notices(self.polisd())
    }

    /// One headless session of `cli` with `prompt` against `api`; panics with its output if
    /// the CLI fails.
    #[track_caller]
    fn session(&self, cli: &Cli, api: &ModelApi, prompt: &str) {
        self.session_with(cli, api, prompt, &[]);
    }

    /// [`Project::session`] with more arguments for the CLI.
    #[track_caller]
    fn session_with(&self, cli: &Cli, api: &ModelApi, prompt: &str, more: &[&str]) {
        let (ok, output) = self.try_session(cli, api, prompt, more);
        assert!(
            ok,
            "{} failed: {output}\nrequests: {:#?}",
            cli.bin,
            api.seen().iter().map(|s| &s.path).collect::<Vec<_>>()
        );
    }

    /// One headless session: whether the CLI ended well, and what it printed.
    fn try_session(
        &self,
        cli: &Cli,
        api: &ModelApi,
        prompt: &str,
        more: &[&str],
    ) -> (bool, String) {
        let log = self.polis.dir.path().join(format!("{}.log", cli.bin));
        let file = std::fs::File::create(&log).unwrap();
        // Its own group: the npm launcher starts the native CLI, which starts MCP servers.
        let mut cli_group = KilledGroup::spawn(
            self.as_person(&clients::agent_clis().join(cli.bin))
                .args(more)
                .args((cli.args)(prompt, &api.url))
                .envs((cli.env)(&self.home, &api.url))
                .stdin(Stdio::null())
                .stdout(file.try_clone().unwrap())
                .stderr(file),
        )
        .unwrap();
        let mut status = None;
        wait_until(&format!("{} to end its session", cli.bin), DEADLINE, || {
            status = cli_group.child().try_wait().unwrap();
            status.is_some()
        });
        let output = std::fs::read_to_string(&log).unwrap_or_default();
        (status.unwrap().success(), output)
    }

    /// The first request to the model of one session of `cli` with the prompt "Hello?",
    /// answered "hello": where a session-start hook's output shows.
    #[track_caller]
    fn first_request(&self, cli: &Cli) -> String {
        let api = ModelApi::start(|_, _| Turn::Text("hello".into()));
        self.session(cli, &api, "Hello?");
        let turns = api.turns();
        turns[0].body.clone()
    }

    /// What `polisd hooks status` prints.
    fn hooks_status(&self) -> String {
        let out = self.run(&["hooks", "status"]);
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    }
}

fn message(inbox: &Path, text: &str) {
    use std::io::Write;
    let block = format!(
        "\n### {} from {OTHER}\n\n{text}\n\n---\n",
        harness::chronicle_stamp()
    );
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(inbox)
        .unwrap();
    f.write_all(block.as_bytes()).unwrap();
}

/// How many times `needle` is in a request's body.
fn shown(body: &str, needle: &str) -> usize {
    body.matches(needle).count()
}

/// The start of a request's body, for a failure's message (a CLI's request carries its whole
/// system prompt and tool list).
fn excerpt(body: &str) -> String {
    body.chars().take(3000).collect()
}

fn primer_heading() -> String {
    format!("Polis primer for `{ME}`")
}

/// One CLI: a first session shows the primer and the early message before the model's first
/// turn, and the message written during the session after its tool call; each once. A second
/// session shows the primer and neither message.
fn sessions_show_the_primer_and_each_notice_once(cli: &Cli) {
    let project = Project::new(cli);
    (cli.trust)(&project.home, &project.dir());
    const EARLY: &str = "Early word: the parser review waits for you (token EARLY-7Q).";
    const LATER: &str = "Later word: the build is green again (token LATER-3K).";
    project.message(EARLY);
    assert_eq!(project.unread().len(), 1, "the early message is unread");

    let inbox = project.polis.path(&format!("citizens/{ME}/inbox.md"));
    let notes = project.dir().join("NOTES.md");
    let read = (cli.read_tool)(&notes);
    let api = ModelApi::start(move |turn, _| {
        if turn == 0 {
            // Another agent writes while the session is at work.
            message(&inbox, LATER);
            read.clone()
        } else {
            Turn::Text("done".into())
        }
    });
    project.session(cli, &api, "Look at the notes, then stop.");
    let turns = api.turns();
    assert!(turns.len() >= 2, "{} made {} turns", cli.bin, turns.len());
    let (first, last) = (&turns[0].body, &turns[turns.len() - 1].body);
    assert_eq!(
        shown(first, &primer_heading()),
        1,
        "{}: the primer in the first turn: {first}",
        cli.bin
    );
    assert!(
        shown(first, "EARLY-7Q") >= 1,
        "{}: the early message before the first turn",
        cli.bin
    );
    assert_eq!(
        shown(first, "LATER-3K"),
        0,
        "{}: the later message was not written yet",
        cli.bin
    );
    assert!(
        shown(last, "LATER-3K") >= 1,
        "{}: the later message after the tool call: {}",
        cli.bin,
        excerpt(last)
    );
    assert!(
        project.unread().is_empty(),
        "{}: both messages were shown, so both are read: {:?}",
        cli.bin,
        project.unread()
    );

    let again = ModelApi::start(|_, _| Turn::Text("nothing new".into()));
    project.session(cli, &again, "Anything new?");
    let turns = again.turns();
    assert!(!turns.is_empty());
    for turn in &turns {
        assert_eq!(
            (shown(&turn.body, "EARLY-7Q"), shown(&turn.body, "LATER-3K")),
            (0, 0),
            "{}: a message once shown is not shown again",
            cli.bin
        );
    }
    assert!(
        shown(&turns[0].body, &primer_heading()) == 1,
        "{}: every session starts with the primer",
        cli.bin
    );
}

#[test]
fn claude_code_sessions_show_the_primer_and_each_notice_once() {
    sessions_show_the_primer_and_each_notice_once(&CLAUDE);
}

#[test]
fn gemini_cli_sessions_show_the_primer_and_each_notice_once() {
    sessions_show_the_primer_and_each_notice_once(&GEMINI);
}

#[test]
fn codex_cli_sessions_show_the_primer_and_each_notice_once() {
    sessions_show_the_primer_and_each_notice_once(&CODEX);
}

/// Gemini CLI runs no hooks in a folder the person has not trusted, and `hooks status` says
/// so; once it is trusted, the session has the primer and the status has nothing to say.
#[test]
fn gemini_cli_runs_the_hooks_only_in_a_trusted_folder_and_hooks_status_says_which() {
    let project = Project::new(&GEMINI);
    let out = project.run(&["hooks", "install", "--gemini", "--as", ME]);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("not in ~/.gemini/trustedFolders.json"),
        "install says so too: {}",
        harness::describe(&out)
    );
    let status = project.hooks_status();
    assert!(
        status.contains("not in ~/.gemini/trustedFolders.json"),
        "{status}"
    );
    let api = ModelApi::start(|_, _| Turn::Text("hello".into()));
    let (ok, output) = project.try_session(&GEMINI, &api, "Hello?", &[]);
    assert!(
        !ok,
        "headless Gemini CLI refuses an untrusted folder: {output}"
    );
    assert!(
        api.turns().is_empty(),
        "no session started, so nothing was shown"
    );

    (GEMINI.trust)(&project.home, &project.dir());
    let status = project.hooks_status();
    assert!(!status.contains("trustedFolders.json"), "{status}");
    let first = project.first_request(&GEMINI);
    assert_eq!(shown(&first, &primer_heading()), 1);
}

/// Codex CLI as a script runs it: `codex exec` without `--dangerously-bypass-hook-trust`,
/// so it runs only the hooks the person trusted in its interactive review.
const CODEX_UNBYPASSED: Cli = Cli {
    args: |prompt, url| {
        (CODEX.args)(prompt, url)
            .into_iter()
            .filter(|a| a != "--dangerously-bypass-hook-trust")
            .collect()
    },
    ..CODEX
};

/// What Codex CLI 0.171.0 records in `~/.codex/config.toml` when the person approves
/// polisd's three hooks in its review (`codex`, then "Trust all and continue"), for the
/// hooks file `Project::new` leaves: a table per handler, keyed by the hooks file, the
/// event, and the handler's place, holding Codex's hash of the handler.
fn codex_review_record(project: &Path) -> String {
    let file = project.join(".codex/hooks.json");
    [
        (
            "post_tool_use",
            "495e33d5bf0600cc8f2a0b6bc46331280c27f1231b30d295c5a87d2f440c440a",
        ),
        (
            "session_start",
            "8bc241722dd4845a7800a49d59563f2821d2785e231aa309175f949c5e8d7d64",
        ),
        (
            "user_prompt_submit",
            "9a10123b95f7173a15325020c05ec559e03685189f57d99a0953c3a0def81851",
        ),
    ]
    .iter()
    .map(|(event, hash)| {
        format!(
            "\n[hooks.state.\"{}:{event}:0:0\"]\ntrusted_hash = \"sha256:{hash}\"\n",
            file.display()
        )
    })
    .collect()
}

/// `hooks status --json`'s row for Codex, and the exit code.
fn codex_status(project: &Project) -> (Value, Option<i32>) {
    let out = project.run(&["hooks", "status", "--json"]);
    let rows: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", harness::describe(&out)));
    let row = rows
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["cli"] == "codex")
        .unwrap()
        .clone();
    (row, out.status.code())
}

/// Codex CLI runs no project hook the person has not trusted in its review (`codex exec`
/// skips them without a word), and `hooks status` (and `hooks install`) says so; once the
/// review's record is there, the session has the primer and the status has nothing to say.
#[test]
fn codex_cli_runs_the_hooks_only_once_trusted_and_hooks_status_says_so() {
    let project = Project::new(&CODEX);
    let out = project.run(&["hooks", "install", "--codex", "--as", ME]);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains("warning: ") && said.contains("approve the hooks it lists"),
        "install says so: {}",
        harness::describe(&out)
    );
    let status = project.hooks_status();
    assert!(
        status.contains("approve the hooks it lists")
            && status.contains("SessionStart")
            && status.contains("~/.codex/config.toml"),
        "{status}"
    );
    let first = project.first_request(&CODEX_UNBYPASSED);
    assert_eq!(
        shown(&first, &primer_heading()),
        0,
        "untrusted hooks do not run: {}",
        excerpt(&first)
    );

    let config = project.home.join(".codex/config.toml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str(&codex_review_record(&project.dir()));
    std::fs::write(&config, text).unwrap();
    let (codex, code) = codex_status(&project);
    assert_eq!(codex["problems"], json!([]), "{codex:#}");
    assert_eq!(code, Some(0));
    let first = project.first_request(&CODEX_UNBYPASSED);
    assert_eq!(
        shown(&first, &primer_heading()),
        1,
        "trusted hooks run: {}",
        excerpt(&first)
    );
}

/// How the model calls the tool whose name ends in `tool`, from a request to the model:
/// - offered in the tool list, under the name the CLI gave it (each CLI prefixes an MCP
///   server's tools its own way, and Codex CLI groups them in a namespace per server);
/// - or only named, for a CLI that loads a tool's schema on demand (Claude Code lists MCP
///   tools as deferred, fetched with its `ToolSearch` tool): that search first.
fn call_of(body: &str, tool: &str, input: Value) -> Option<Turn> {
    fn offered(v: &Value, tool: &str, namespace: Option<&str>) -> Option<(Option<String>, String)> {
        match v {
            Value::Object(map) => {
                let name = map.get("name").and_then(Value::as_str);
                if let Some(n) = name.filter(|n| n.ends_with(tool)) {
                    return Some((namespace.map(String::from), n.to_string()));
                }
                let inner = match map.get("type").and_then(Value::as_str) {
                    Some("namespace") => name,
                    _ => namespace,
                };
                map.values().find_map(|v| offered(v, tool, inner))
            }
            Value::Array(items) => items.iter().find_map(|v| offered(v, tool, namespace)),
            _ => None,
        }
    }
    let request: Value = serde_json::from_str(body).ok()?;
    if let Some((namespace, name)) = offered(&request, tool, None) {
        return Some(Turn::Tool {
            name,
            input,
            namespace,
        });
    }
    // The name as the request's text has it (a JSON string, escapes undone).
    fn named(v: &Value, tool: &str) -> Option<String> {
        match v {
            Value::String(text) => {
                let at = text.find(tool)?;
                let start = text[..at]
                    .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .map_or(0, |i| i + 1);
                Some(text[start..at + tool.len()].to_string())
            }
            Value::Object(map) => map.values().find_map(|v| named(v, tool)),
            Value::Array(items) => items.iter().find_map(|v| named(v, tool)),
            _ => None,
        }
    }
    let deferred = named(&request, tool)?;
    Some(Turn::Tool {
        name: "ToolSearch".into(),
        input: json!({"query": format!("select:{deferred}"), "max_results": 1}),
        namespace: None,
    })
}

/// One CLI, set up as docs/agent-clients.md says (`<cli> mcp add polis -- polisd mcp
/// PROJECT`), offers the model polisd's tools, and the model's call claims a contract: the
/// claim is in the polis, and the model reads polisd's answer.
fn a_session_claims_a_contract_through_polis_mcp(cli: &Cli) {
    let project = Project::new(cli);
    (cli.trust)(&project.home, &project.dir());
    let out = project.run(&["contract", "open", "--title", "Fix the parser", "--as", ME]);
    assert!(out.status.success(), "{}", harness::describe(&out));
    let out = project
        .as_person(&clients::agent_clis().join(cli.bin))
        .args((cli.mcp_add)(&project.dir()))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", harness::describe(&out));

    let claim = json!({"contract_id": "fix-the-parser", "citizen": ME});
    let api = ModelApi::start(move |_, body| {
        // Once polisd has answered the call (its chronicle line says `claimed contract`), the
        // model is done.
        if body.contains("claimed contract") {
            return Turn::Text("claimed".into());
        }
        call_of(body, "polis_claim_contract", claim.clone())
            .unwrap_or_else(|| Turn::Text("no polis tool was offered".into()))
    });
    project.session_with(cli, &api, "Claim the parser contract.", cli.mcp_allow);
    let turns = api.turns();
    assert!(
        turns[0].body.contains("polis_claim_contract"),
        "{}: polisd's tools offered to the model: {}",
        cli.bin,
        excerpt(&turns[0].body)
    );
    let contract = project.polis.read("contracts/open/fix-the-parser.md");
    assert!(
        contract.contains(&format!("owner: {ME}")),
        "{}: the model's call claimed the contract: {contract}",
        cli.bin
    );
    let last = &turns[turns.len() - 1].body;
    assert!(
        turns.len() >= 2 && last.contains("claimed contract"),
        "{}: the model reads polisd's answer: {}",
        cli.bin,
        excerpt(last)
    );
    assert_eq!(shown(&turns[0].body, &primer_heading()), 1);

    // Uninstalling the hooks, after the CLI itself wrote to its settings, takes out only
    // polisd's hooks: the next session has no primer and still has polisd's tools.
    let out = project.run(&["hooks", "uninstall", cli.flag]);
    assert!(out.status.success(), "{}", harness::describe(&out));
    let after = ModelApi::start(|_, _| Turn::Text("bye".into()));
    project.session_with(cli, &after, "Anything else?", cli.mcp_allow);
    let first = &after.turns()[0].body;
    assert_eq!(
        shown(first, &primer_heading()),
        0,
        "{}: no hooks after uninstall",
        cli.bin
    );
    assert!(
        first.contains("polis_claim_contract"),
        "{}: the MCP server the CLI added is kept",
        cli.bin
    );
}

#[test]
fn claude_code_claims_a_contract_through_polis_mcp() {
    a_session_claims_a_contract_through_polis_mcp(&CLAUDE);
}

#[test]
fn gemini_cli_claims_a_contract_through_polis_mcp() {
    a_session_claims_a_contract_through_polis_mcp(&GEMINI);
}

#[test]
fn codex_cli_claims_a_contract_through_polis_mcp() {
    a_session_claims_a_contract_through_polis_mcp(&CODEX);
}

/// A contract the daemon routes to the citizen reaches the CLI's next session: `polisd run`
/// routes it and writes the notice, and the session-start hook shows both (the primer's
/// "routed to you" and the notice, which is then read).
fn a_contract_the_daemon_routes_reaches_the_next_session(cli: &Cli) {
    let project = Project::new(cli);
    (cli.trust)(&project.home, &project.dir());
    project
        .polis
        .citizen(ME, "anthropic", &[("parsing", 5)], "low")
        .citizen(OTHER, "openai", &[("parsing", 1)], "high");
    let _daemon = project.polis.start_daemon();
    let out = project
        .polisd()
        .args([
            "contract",
            "open",
            "--title",
            "Port the lexer",
            "--as",
            OTHER,
        ])
        .args(["--tags", "parsing"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", harness::describe(&out));
    wait_until(
        "the daemon's notice in the citizen's inbox",
        DEADLINE,
        || {
            project
                .polis
                .markers(ME)
                .iter()
                .any(|m| m.kind == "contract-routed")
        },
    );
    let api = ModelApi::start(|_, _| Turn::Text("on it".into()));
    project.session(cli, &api, "What is waiting for me?");
    let first = &api.turns()[0].body;
    assert!(
        first.contains("port-the-lexer"),
        "{}: the routed contract in the session: {}",
        cli.bin,
        excerpt(first)
    );
    assert!(
        project.unread().is_empty(),
        "{}: the daemon's notice was shown, so it is read",
        cli.bin
    );
}

#[test]
fn claude_code_sees_a_contract_the_daemon_routed() {
    a_contract_the_daemon_routes_reaches_the_next_session(&CLAUDE);
}

#[test]
fn gemini_cli_sees_a_contract_the_daemon_routed() {
    a_contract_the_daemon_routes_reaches_the_next_session(&GEMINI);
}

#[test]
fn codex_cli_sees_a_contract_the_daemon_routed() {
    a_contract_the_daemon_routes_reaches_the_next_session(&CODEX);
}

/// After Claude Code compacts a session, the model has the primer again, once: compaction
/// replaces the conversation with a summary, and the session-start hook (source `compact`)
/// primes what follows.
#[test]
fn claude_code_has_the_primer_again_after_compacting() {
    let project = Project::new(&CLAUDE);
    let api = ModelApi::start(|_, _| Turn::Text("a summary of the work so far".into()));
    let (ok, output) = project.try_session(&CLAUDE, &api, "Start.", &[]);
    assert!(ok, "{output}");
    let session: Value = output
        .lines()
        .find_map(|l| serde_json::from_str::<Value>(l).ok())
        .unwrap_or_else(|| panic!("claude -p --output-format json prints its result: {output}"));
    let id = session["session_id"].as_str().unwrap().to_string();
    project.session_with(&CLAUDE, &api, "/compact", &["--resume", &id]);
    let before = api.turns().len();
    project.session_with(&CLAUDE, &api, "Go on.", &["--resume", &id]);
    let turns = api.turns();
    assert!(turns.len() > before, "the resumed session asked the model");
    let after = &turns[turns.len() - 1].body;
    assert!(
        after.contains("a summary of the work so far"),
        "the conversation was compacted: {}",
        excerpt(after)
    );
    assert_eq!(
        shown(after, &primer_heading()),
        1,
        "the primer after compaction: {}",
        excerpt(after)
    );
}

/// Codex CLI reads a project's `.codex/` folder, its hooks too, only in a project the person
/// trusted (`[projects."<path>"] trust_level = "trusted"` in `~/.codex/config.toml`, recorded
/// by the first `codex` session there or `codex exec --trust`): with no record, or
/// "untrusted", no hook runs even past the hooks' own review, and `hooks status` says which.
#[test]
fn codex_cli_runs_no_hooks_in_a_project_it_does_not_trust_and_hooks_status_says_so() {
    let project = Project::new(&CODEX);
    let config = project.home.join(".codex/config.toml");
    let trusted = std::fs::read_to_string(&config).unwrap();
    let table = format!("[projects.\"{}\"]\n", project.dir().display());
    let at = trusted.find(&table).expect("the set-up trusts the project");
    for (record, said) in [
        ("", Some("records no trust for")),
        (
            "trust_level = \"untrusted\"\n",
            Some("trust_level = \"untrusted\""),
        ),
        ("trust_level = \"trusted\"\n", None),
    ] {
        let record = if record.is_empty() {
            String::new()
        } else {
            format!("{table}{record}")
        };
        std::fs::write(&config, format!("{}{record}", &trusted[..at])).unwrap();
        let status = project.hooks_status();
        let first = project.first_request(&CODEX);
        match said {
            Some(said) => {
                assert!(
                    status.contains(said) && status.contains("codex exec --trust"),
                    "{record:?}: {status}"
                );
                assert_eq!(
                    shown(&first, &primer_heading()),
                    0,
                    "{record:?}: no hook ran"
                );
            }
            None => {
                assert!(
                    !status.contains("records no trust") && !status.contains("\"untrusted\""),
                    "{status}"
                );
                assert_eq!(
                    shown(&first, &primer_heading()),
                    1,
                    "trusted: the hooks ran"
                );
            }
        }
    }
}

/// `ME`'s unread notices, as `polisd notices --unread --json` lists them, run by `polisd` (a
/// command set up for the project and its person).
fn unread_notices(mut polisd: Command) -> Vec<Value> {
    let out = polisd
        .args(["notices", "--as", ME, "--unread", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", harness::describe(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    v["notices"].as_array().cloned().unwrap_or_default()
}
