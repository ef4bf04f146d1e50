//! Aider has no hooks. What it puts in front of the model at every session start is the list
//! of files under `read:` in its project config, `.aider.conf.yml` (read at the git root and
//! in the folder Aider starts in), and what the commands of its one `load:` file add. Listing
//! the bridge pointer `AGENTS.md` under `read:` is how the pointer reaches a session; `load:`
//! naming polisd's command file ([`LOAD_FILE`]), which holds `/run polisd hook aider prime`,
//! is how the primer does, before the first turn (a command the model suggests runs only on a
//! person's explicit yes, which `--yes-always` does not give).
//!
//! The config is the person's own file, so an edit adds or removes one entry and nothing else:
//! a line appended, an item inserted, or the one `read:` line rewritten. Every edit is read
//! back and compared with the file before it (every other key unchanged, the list changed by
//! exactly that entry); a file polisd cannot edit that way is refused, to be edited by hand.

use super::agent_hooks::{self, HookKind};
use crate::yaml::{self, Value};

/// Aider's project config, relative to the project root.
pub const CONFIG_PATH: &str = ".aider.conf.yml";
/// The file Aider is given to read: the bridge pointer.
pub const BRIDGE_FILE: &str = "AGENTS.md";

/// polisd's command file, relative to the project root. Aider opens a `load:` file relative to
/// the folder it starts in, as it does `read:`, so both are found from the project root. Not
/// named `.aider…`: Aider offers to git-ignore `.aider*`, which would keep it from teammates.
pub const LOAD_FILE: &str = ".polis.aider";
/// The name of Aider in `polisd hook aider prime` and in the per-user identity record.
pub const HOOK_NAME: &str = "aider";

/// The command file's text: Aider runs each line as if typed in the chat and skips `#` lines;
/// `/run` adds the command's output to the chat (once the person, or `--yes-always`, says yes).
pub fn load_file(bin: &str) -> String {
    format!(
        "# polisd's (`polisd hooks install --aider`): Aider runs this at session start, as `load:`\n\
         # in .aider.conf.yml asks, and adds the primer (with your unread notices) to the chat.\n\
         /run {}\n",
        agent_hooks::hook_command(bin, HOOK_NAME, HookKind::Prime)
    )
}

/// The primer command of a `/run` line polisd writes, if `line` is one.
fn primer_command(line: &str) -> Option<&str> {
    let command = line.trim().strip_prefix("/run ")?.trim();
    agent_hooks::hook_binary(command, HOOK_NAME, &[HookKind::Prime]).map(|_| command)
}

/// The primer command a `load:` file runs, if one of its lines is polisd's.
pub fn runs_primer(text: &str) -> Option<String> {
    text.lines().find_map(primer_command).map(str::to_string)
}

/// Whether `text` is a command file as polisd writes it (for any binary): polisd's comment
/// lines and its one command, nothing a person added.
pub fn is_polisd_load_file(text: &str) -> bool {
    runs_primer(text).is_some_and(|command| {
        agent_hooks::hook_binary(&command, HOOK_NAME, &[HookKind::Prime])
            .is_some_and(|bin| load_file(&bin) == text)
    })
}

/// What a config's `load:` names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Load {
    None,
    /// polisd's command file.
    Ours,
    /// Another file: the team's own.
    Other(String),
}

fn is_load_file(name: &str) -> bool {
    name.trim_start_matches("./") == LOAD_FILE
}

/// The config's `load:`.
pub fn load_of(text: Option<&str>) -> Result<Load, AiderConfigError> {
    Ok(load_in(&top_level(text, SET_LOAD_BY_HAND)?))
}

/// What `load:` names among a config's top-level `entries`.
fn load_in(entries: &[(Value, Value)]) -> Load {
    match entries.iter().find(|(k, _)| k.as_str() == Some("load")) {
        None | Some((_, Value::Null)) => Load::None,
        Some((_, Value::Str(name))) if is_load_file(name) => Load::Ours,
        Some((_, Value::Str(name))) => Load::Other(name.clone()),
        Some((_, other)) => Load::Other(crate::protocol::finding::quoted(&flow(other))),
    }
}

/// A value in YAML's flow style, as a person would write it on one line (`[a, 2, {b: c}]`),
/// for a message about a `load:` that is not one file name.
fn flow(value: &Value) -> String {
    match value {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Int(i) => i.to_string(),
        Value::BigInt(digits) => digits.clone(),
        Value::Float(f) => yaml::python_float_repr(*f),
        Value::Str(s) => s.clone(),
        Value::Date(d) => d.to_string(),
        Value::DateTime(t) => t.local.to_string(),
        Value::Seq(items) => format!(
            "[{}]",
            items.iter().map(flow).collect::<Vec<_>>().join(", ")
        ),
        Value::Map(map) => format!(
            "{{{}}}",
            map.iter()
                .map(|(k, v)| format!("{}: {}", flow(k), flow(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// The config with `load:` naming polisd's command file (the text unchanged when it does). A
/// `load:` naming another file is refused: Aider takes one, and it is the team's.
pub fn with_load(text: Option<&str>) -> Result<String, AiderConfigError> {
    let entries = top_level(text, SET_LOAD_BY_HAND)?;
    match load_in(&entries) {
        Load::Ours => return Ok(text.unwrap_or_default().to_string()),
        Load::Other(file) => return Err(AiderConfigError::LoadTaken { file }),
        Load::None => {}
    }
    let text = text.unwrap_or_default();
    // Only an absent key gets a line; a `load:` left empty is the team's to fill or remove.
    let edited = (!entries.iter().any(|(k, _)| k.as_str() == Some("load")))
        .then(|| with_last_line(text, &format!("load: {LOAD_FILE}")));
    verified_load(edited, &entries, Some(LOAD_FILE), SET_LOAD_BY_HAND)
}

/// The line end `text` uses: CRLF if any line has one.
fn line_end(text: &str) -> &'static str {
    if text.contains("\r\n") {
        "\r\n"
    } else {
        "\n"
    }
}

/// `text` with `line` added as its last line, in the line ends the text already uses.
fn with_last_line(text: &str, line: &str) -> String {
    let eol = line_end(text);
    let mut out = text.to_string();
    if !out.is_empty() && !out.ends_with('\n') {
        out.push_str(eol);
    }
    out.push_str(line);
    out.push_str(eol);
    out
}

/// The config without `load:` naming polisd's command file, or `None` when it names another
/// file or none.
pub fn without_load(text: Option<&str>) -> Result<Option<String>, AiderConfigError> {
    let entries = top_level(text, UNSET_LOAD_BY_HAND)?;
    if load_in(&entries) != Load::Ours {
        return Ok(None);
    }
    let text = text.unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    // A comment a person put after polisd's line goes with it (`dropped_comments` tells).
    let edited = key_line(&lines, "load").map(|i| splice(&lines, i, 1, &[], text));
    verified_load(edited, &entries, None, UNSET_LOAD_BY_HAND).map(Some)
}

/// The edit, when reading it back gives every other key as before and `load:` as `wanted`.
fn verified_load(
    edited: Option<String>,
    before: &[(Value, Value)],
    wanted: Option<&str>,
    fix: &'static str,
) -> Result<String, AiderConfigError> {
    verified_key(edited, before, "load", fix, |after| {
        let load = after
            .iter()
            .find(|(k, _)| k.as_str() == Some("load"))
            .map(|(_, v)| v.as_str());
        load == wanted.map(Some)
    })
}

/// The edit, when reading it back gives every top-level key but `key` as before (in `before`)
/// and `key_ok` holds for what it gives: anything else is refused, naming `key`.
fn verified_key(
    edited: Option<String>,
    before: &[(Value, Value)],
    key: &str,
    fix: &'static str,
    key_ok: impl FnOnce(&[(Value, Value)]) -> bool,
) -> Result<String, AiderConfigError> {
    let refused = || AiderConfigError::Shape {
        what: format!("its `{key}:` entry is written in a way polisd does not edit"),
        fix,
    };
    let edited = edited.ok_or_else(refused)?;
    let after = top_level(Some(&edited), fix).map_err(|_| refused())?;
    let others = |entries: &[(Value, Value)]| -> Vec<(Value, Value)> {
        entries
            .iter()
            .filter(|(k, _)| k.as_str() != Some(key))
            .cloned()
            .collect()
    };
    if others(before) == others(&after) && key_ok(&after) {
        Ok(edited)
    } else {
        Err(refused())
    }
}

/// The text of a config polisd creates.
const NEW_CONFIG: &str =
    "# Aider reads these files at every session start: AGENTS.md points the agent at the\n\
                          # Polis Protocol (`polisd hooks install --aider`).\n\
                          read: AGENTS.md\n";

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AiderConfigError {
    #[error("{CONFIG_PATH} is not YAML polisd can read (line {line}: {message}); fix it, or edit its `read:` list by hand — polisd changed nothing")]
    NotYaml { line: usize, message: String },
    #[error("{CONFIG_PATH}: {what}; polisd does not rewrite what it does not understand: {fix} by hand — polisd changed nothing")]
    Shape { what: String, fix: &'static str },
    #[error("{CONFIG_PATH} already has `load: {file}`, and Aider takes one load file: add the line `/run polisd hook aider prime` to {file} yourself (`hooks status` then counts it), or remove that `load:` and run this again — polisd changed nothing")]
    LoadTaken { file: String },
}

const ADD_BY_HAND: &str = "add `AGENTS.md` to its `read:` list";
const REMOVE_BY_HAND: &str = "remove `AGENTS.md` from its `read:` list";
const SET_LOAD_BY_HAND: &str = "add the line `load: .polis.aider`";
const UNSET_LOAD_BY_HAND: &str = "remove the line `load: .polis.aider`";

/// The config's top-level keys and values, in order; an absent or empty file has none.
fn top_level(
    text: Option<&str>,
    fix: &'static str,
) -> Result<Vec<(Value, Value)>, AiderConfigError> {
    let Some(text) = text else {
        return Ok(Vec::new());
    };
    match yaml::load_full(text) {
        Ok(Value::Null) => Ok(Vec::new()),
        Ok(Value::Map(map)) => Ok(map.iter().map(|(k, v)| (k.clone(), v.clone())).collect()),
        Ok(_) => Err(AiderConfigError::Shape {
            what: "the file is not a mapping of options".into(),
            fix,
        }),
        Err(e) => Err(AiderConfigError::NotYaml {
            line: e.line,
            message: e.message,
        }),
    }
}

/// The files under `read:`, as Aider takes them: one name, or a list of names.
fn read_list(
    entries: &[(Value, Value)],
    fix: &'static str,
) -> Result<Vec<String>, AiderConfigError> {
    let shape = || AiderConfigError::Shape {
        what: "`read:` is neither a file name nor a list of file names".into(),
        fix,
    };
    match entries.iter().find(|(k, _)| k.as_str() == Some("read")) {
        None | Some((_, Value::Null)) => Ok(Vec::new()),
        Some((_, Value::Str(name))) => Ok(vec![name.clone()]),
        Some((_, Value::Seq(items))) => items
            .iter()
            .map(|v| v.as_str().map(str::to_string).ok_or_else(shape))
            .collect(),
        Some(_) => Err(shape()),
    }
}

/// The options Aider 0.86.2 takes, as its config's keys (its long options without `--`).
/// Aider refuses a config with any other key ("unrecognized arguments") and starts no
/// session at all.
const OPTIONS: [&str; 172] = [
    "3",
    "35-turbo",
    "35turbo",
    "4",
    "4-turbo",
    "4o",
    "add-gitignore-files",
    "aiderignore",
    "alias",
    "analytics",
    "analytics-disable",
    "analytics-log",
    "analytics-posthog-host",
    "analytics-posthog-project-api-key",
    "anthropic-api-key",
    "api-key",
    "apply",
    "apply-clipboard-edits",
    "architect",
    "assistant-output-color",
    "attribute-author",
    "attribute-co-authored-by",
    "attribute-commit-message-author",
    "attribute-commit-message-committer",
    "attribute-committer",
    "auto-accept-architect",
    "auto-commits",
    "auto-lint",
    "auto-test",
    "browser",
    "cache-keepalive-pings",
    "cache-prompts",
    "chat-history-file",
    "chat-language",
    "chat-mode",
    "check-model-accepts-settings",
    "check-update",
    "code-theme",
    "commit",
    "commit-language",
    "commit-prompt",
    "completion-menu-bg-color",
    "completion-menu-color",
    "completion-menu-current-bg-color",
    "completion-menu-current-color",
    "config",
    "copy-paste",
    "dark-mode",
    "deepseek",
    "detect-urls",
    "dirty-commits",
    "disable-playwright",
    "dry-run",
    "edit-format",
    "editor",
    "editor-edit-format",
    "editor-model",
    "encoding",
    "env-file",
    "exit",
    "fancy-input",
    "file",
    "git",
    "git-commit-verify",
    "gitignore",
    "gui",
    "haiku",
    "help",
    "input-history-file",
    "install-main-branch",
    "just-check-update",
    "light-mode",
    "line-endings",
    "lint",
    "lint-cmd",
    "list-models",
    "llm-history-file",
    "load",
    "map-multiplier-no-files",
    "map-refresh",
    "map-tokens",
    "max-chat-history-tokens",
    "message",
    "message-file",
    "mini",
    "model",
    "model-metadata-file",
    "model-settings-file",
    "models",
    "msg",
    "multiline",
    "no-add-gitignore-files",
    "no-analytics",
    "no-attribute-author",
    "no-attribute-co-authored-by",
    "no-attribute-commit-message-author",
    "no-attribute-commit-message-committer",
    "no-attribute-committer",
    "no-auto-accept-architect",
    "no-auto-commits",
    "no-auto-lint",
    "no-auto-test",
    "no-browser",
    "no-cache-prompts",
    "no-check-model-accepts-settings",
    "no-check-update",
    "no-copy-paste",
    "no-detect-urls",
    "no-dirty-commits",
    "no-dry-run",
    "no-fancy-input",
    "no-git",
    "no-git-commit-verify",
    "no-gitignore",
    "no-gui",
    "no-multiline",
    "no-notifications",
    "no-pretty",
    "no-restore-chat-history",
    "no-show-model-warnings",
    "no-show-release-notes",
    "no-stream",
    "no-suggest-shell-commands",
    "no-verify-ssl",
    "no-watch-files",
    "notifications",
    "notifications-command",
    "o1-mini",
    "o1-preview",
    "openai-api-base",
    "openai-api-deployment-id",
    "openai-api-key",
    "openai-api-type",
    "openai-api-version",
    "openai-organization-id",
    "opus",
    "pretty",
    "read",
    "reasoning-effort",
    "restore-chat-history",
    "set-env",
    "shell-completions",
    "show-diffs",
    "show-model-warnings",
    "show-prompts",
    "show-release-notes",
    "show-repo-map",
    "skip-sanity-check-repo",
    "sonnet",
    "stream",
    "subtree-only",
    "suggest-shell-commands",
    "test",
    "test-cmd",
    "thinking-tokens",
    "timeout",
    "tool-error-color",
    "tool-output-color",
    "tool-warning-color",
    "update",
    "upgrade",
    "user-input-color",
    "verbose",
    "verify-ssl",
    "version",
    "vim",
    "voice-format",
    "voice-input-device",
    "voice-language",
    "watch-files",
    "weak-model",
    "yes-always",
];

/// The keys of the config that Aider 0.86.2 does not take, each of which stops it at start.
/// A text that is not a mapping says nothing here (the other readers report it).
pub fn unknown_options(text: Option<&str>) -> Vec<String> {
    let Ok(entries) = top_level(text, ADD_BY_HAND) else {
        return Vec::new();
    };
    entries
        .iter()
        .filter_map(|(k, _)| k.as_str())
        .filter(|k| !OPTIONS.contains(k))
        .map(str::to_string)
        .collect()
}

/// How Aider 0.86.2 turns a config value into its option, for the keys this was checked for
/// against that Aider (configargparse makes a YAML value Python's `str` of it, a list stays a
/// list, a null is skipped). An option given on the command line wins over the config.
#[derive(Clone, Copy)]
enum Takes {
    /// A switch: `true`, `false`, `yes`, `no`, `on`, `off`, `1` or `0`, in any case.
    Switch,
    /// One value, never a list.
    One,
    /// A whole number.
    Int,
}

const CHECKED_VALUES: [(&str, Takes); 10] = [
    ("auto-commits", Takes::Switch),
    ("auto-lint", Takes::Switch),
    ("auto-test", Takes::Switch),
    ("dirty-commits", Takes::Switch),
    ("gitignore", Takes::Switch),
    ("suggest-shell-commands", Takes::Switch),
    ("vim", Takes::Switch),
    ("yes-always", Takes::Switch),
    ("load", Takes::One),
    ("map-tokens", Takes::Int),
];

/// A config value Aider 0.86.2 stops at (it starts no session): the key, its line (1-based,
/// when it starts one), what Aider says, and what to write instead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadValue {
    pub key: String,
    pub line: Option<usize>,
    pub aider_says: &'static str,
    pub fix: &'static str,
}

/// The values of the checked keys ([`CHECKED_VALUES`]) that stop Aider 0.86.2 at start.
pub fn bad_values(text: Option<&str>) -> Vec<BadValue> {
    let Ok(entries) = top_level(text, ADD_BY_HAND) else {
        return Vec::new();
    };
    let text = text.unwrap_or_default();
    entries
        .iter()
        .filter_map(|(k, v)| {
            let key = k.as_str()?;
            let (_, takes) = CHECKED_VALUES.iter().find(|(c, _)| *c == key)?;
            let (aider_says, fix) = refused_value(*takes, v)?;
            let line = text.lines().position(|l| starts_key(l, key)).map(|i| i + 1);
            Some(BadValue {
                key: key.to_string(),
                line,
                aider_says,
                fix,
            })
        })
        .collect()
}

/// What Aider says of `value` for an option that takes it as `takes`, if it refuses it.
fn refused_value(takes: Takes, value: &Value) -> Option<(&'static str, &'static str)> {
    const SWITCH: &str = "write `true` or `false`";
    match (takes, value) {
        (_, Value::Null) => None,
        // configargparse asserts a switch's value is text: a Python traceback, no session.
        (Takes::Switch, Value::Seq(_)) => Some(("AssertionError", SWITCH)),
        (_, Value::Seq(_)) => Some(("can't be set to a list", "give it one value")),
        (Takes::One, _) => None,
        (Takes::Switch, Value::Bool(_)) => None,
        (Takes::Switch, Value::Int(0 | 1)) => None,
        (Takes::Switch, Value::Str(s))
            if ["true", "false", "yes", "no", "on", "off", "1", "0"]
                .contains(&s.to_ascii_lowercase().as_str()) =>
        {
            None
        }
        (Takes::Switch, _) => Some(("Unexpected value", SWITCH)),
        (Takes::Int, Value::Int(_) | Value::BigInt(_)) => None,
        (Takes::Int, Value::Str(s)) if is_python_int(s) => None,
        (Takes::Int, _) => Some(("invalid int value", "write a whole number, such as 1024")),
    }
}

/// Whether Python's `int()` reads `text`: blanks around, a sign, digits with single `_`.
fn is_python_int(text: &str) -> bool {
    let t = text.trim();
    let digits = t.strip_prefix(['+', '-']).unwrap_or(t);
    !digits.is_empty()
        && digits
            .split('_')
            .all(|part| !part.is_empty() && part.chars().all(|c| c.is_ascii_digit()))
}

fn is_bridge(name: &str) -> bool {
    name.trim_start_matches("./") == BRIDGE_FILE
}

/// Whether Aider, started at the project root, reads the bridge pointer.
pub fn reads_bridge(text: Option<&str>) -> Result<bool, AiderConfigError> {
    let entries = top_level(text, ADD_BY_HAND)?;
    Ok(read_list(&entries, ADD_BY_HAND)?
        .iter()
        .any(|n| is_bridge(n)))
}

/// The config with `AGENTS.md` in its `read:` list (the text unchanged when it is there).
pub fn with_bridge(text: Option<&str>) -> Result<String, AiderConfigError> {
    let entries = top_level(text, ADD_BY_HAND)?;
    let list = read_list(&entries, ADD_BY_HAND)?;
    if list.iter().any(|n| is_bridge(n)) {
        return Ok(text.unwrap_or_default().to_string());
    }
    let Some(text) = text.filter(|t| !t.trim().is_empty()) else {
        return Ok(NEW_CONFIG.to_string());
    };
    let lines: Vec<&str> = text.lines().collect();
    let edited = match key_line(&lines, "read") {
        // No `read:` key: one line at the end.
        None if !entries.iter().any(|(k, _)| k.as_str() == Some("read")) => {
            Some(with_last_line(text, &format!("read: {BRIDGE_FILE}")))
        }
        None => None,
        Some(at) => {
            let rest = lines[at]["read:".len()..].trim();
            if rest.is_empty() {
                // A block list: one item after its last, indented as its items are.
                block_items(&lines, at).last().map(|&last| {
                    let indent = &lines[last][..lines[last].len() - lines[last].trim_start().len()];
                    splice(
                        &lines,
                        last + 1,
                        0,
                        &[&format!("{indent}- {BRIDGE_FILE}")],
                        text,
                    )
                })
            } else if rest.contains('#') {
                None
            } else {
                let mut names = list.clone();
                names.push(BRIDGE_FILE.to_string());
                Some(splice(&lines, at, 1, &[&flow_line(&names)], text))
            }
        }
    };
    let mut wanted = list;
    wanted.push(BRIDGE_FILE.to_string());
    verified(edited, &entries, &wanted, ADD_BY_HAND)
}

/// The config without `AGENTS.md` in its `read:` list, or `None` when it is not there. A
/// `read:` left empty goes with it.
pub fn without_bridge(text: Option<&str>) -> Result<Option<String>, AiderConfigError> {
    let entries = top_level(text, REMOVE_BY_HAND)?;
    let list = read_list(&entries, REMOVE_BY_HAND)?;
    let Some(pos) = list.iter().position(|n| is_bridge(n)) else {
        return Ok(None);
    };
    let text = text.unwrap_or_default();
    let mut wanted = list.clone();
    wanted.remove(pos);
    let lines: Vec<&str> = text.lines().collect();
    // A comment on a line that goes goes with it; one on a line that stays stays.
    let edited = key_line(&lines, "read").and_then(|at| {
        let (value, comment) = split_comment(&lines[at]["read:".len()..]);
        let rest = value.trim();
        if rest.is_empty() {
            let items = block_items(&lines, at);
            let item = *items.get(pos)?;
            if wanted.is_empty() {
                // The key goes with its last item (and the blank or comment lines between).
                Some(splice(&lines, at, item + 1 - at, &[], text))
            } else {
                Some(splice(&lines, item, 1, &[], text))
            }
        } else if wanted.is_empty() {
            Some(splice(&lines, at, 1, &[], text))
        } else {
            let gap = &value[value.trim_end().len()..];
            let line = format!("{}{gap}{comment}", flow_line(&wanted));
            Some(splice(&lines, at, 1, &[&line], text))
        }
    });
    verified(edited, &entries, &wanted, REMOVE_BY_HAND).map(Some)
}

/// Whether `line` starts the top-level `key:`.
fn starts_key(line: &str, key: &str) -> bool {
    line.strip_prefix(key).is_some_and(|r| r.starts_with(':'))
}

/// The one line that starts the top-level `key:`, if there is exactly one.
fn key_line(lines: &[&str], key: &str) -> Option<usize> {
    let mut found = lines
        .iter()
        .enumerate()
        .filter(|(_, l)| starts_key(l, key))
        .map(|(i, _)| i);
    let first = found.next()?;
    found.next().is_none().then_some(first)
}

/// A line split where its YAML comment starts (a `#` at the start or after a blank, outside
/// quotes): what comes before, and the comment (empty when there is none).
fn split_comment(line: &str) -> (&str, &str) {
    let mut quote = None;
    let mut prev: Option<char> = None;
    let mut chars = line.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        match quote {
            Some('"') if c == '\\' => {
                chars.next();
            }
            // `''` inside single quotes is one quote, not the end.
            Some('\'') if c == '\'' && chars.peek().is_some_and(|&(_, n)| n == '\'') => {
                chars.next();
            }
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None => match c {
                '#' if prev.is_none_or(|p| p == ' ' || p == '\t') => return line.split_at(i),
                '\'' | '"' if prev.is_none_or(|p| " \t[{,:-".contains(p)) => quote = Some(c),
                _ => {}
            },
        }
        prev = Some(c);
    }
    (line, "")
}

/// The comments of `before` that `after` no longer has (each as written, from its `#`): what
/// a person wrote on, or among, the lines an edit took out.
pub fn dropped_comments(before: &str, after: &str) -> Vec<String> {
    let comments = |text: &str| -> Vec<String> {
        text.lines()
            .map(|l| split_comment(l).1.trim_end().to_string())
            .filter(|c| !c.is_empty())
            .collect()
    };
    let mut kept = comments(after);
    comments(before)
        .into_iter()
        .filter(|c| match kept.iter().position(|k| k == c) {
            Some(i) => {
                kept.remove(i);
                false
            }
            None => true,
        })
        .collect()
}

/// The lines of a block list's items after the key on line `at`, each a `- name` on one line.
fn block_items(lines: &[&str], at: usize) -> Vec<usize> {
    let mut items = Vec::new();
    for (i, line) in lines.iter().enumerate().skip(at + 1) {
        let trimmed = line.trim_start();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        if !trimmed.starts_with("- ") && trimmed != "-" {
            break;
        }
        items.push(i);
    }
    items
}

/// `read: [a, b]`, each name plain where YAML reads it back as the same text, else quoted.
fn flow_line(names: &[String]) -> String {
    let plain = |n: &str| {
        !n.is_empty()
            && n.chars()
                .all(|c| c.is_ascii_alphanumeric() || "_./~-".contains(c))
            && !n.starts_with(['-', '~'])
    };
    let shown: Vec<String> = names
        .iter()
        .map(|n| {
            if plain(n) {
                n.clone()
            } else {
                serde_json::Value::String(n.clone()).to_string()
            }
        })
        .collect();
    format!("read: [{}]", shown.join(", "))
}

/// `text`'s lines with `count` of them from `at` replaced by `new`, keeping its line ends.
fn splice(lines: &[&str], at: usize, count: usize, new: &[&str], text: &str) -> String {
    let mut out: Vec<&str> = Vec::with_capacity(lines.len() + new.len());
    out.extend_from_slice(&lines[..at]);
    out.extend_from_slice(new);
    out.extend_from_slice(&lines[at + count..]);
    let eol = line_end(text);
    let mut joined = out.join(eol);
    if text.ends_with('\n') && !joined.is_empty() {
        joined.push_str(eol);
    }
    joined
}

/// The edit, when reading it back gives every other key as before and `read:` as `wanted`.
fn verified(
    edited: Option<String>,
    before: &[(Value, Value)],
    wanted: &[String],
    fix: &'static str,
) -> Result<String, AiderConfigError> {
    verified_key(edited, before, "read", fix, |after| {
        read_list(after, fix).is_ok_and(|list| list == wanted)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What Aider takes from a config: the other keys, and the files it reads.
    fn meaning(text: &str) -> (Vec<(Value, Value)>, Vec<String>) {
        let entries = top_level(Some(text), ADD_BY_HAND).unwrap();
        let list = read_list(&entries, ADD_BY_HAND).unwrap();
        let others = entries
            .into_iter()
            .filter(|(k, _)| k.as_str() != Some("read"))
            .collect();
        (others, list)
    }

    fn added(text: &str) -> String {
        with_bridge(Some(text)).unwrap()
    }

    #[test]
    fn a_missing_or_empty_config_becomes_one_that_reads_the_bridge() {
        for before in [None, Some(""), Some("\n")] {
            let after = with_bridge(before).unwrap();
            assert_eq!(after, NEW_CONFIG);
            assert!(reads_bridge(Some(&after)).unwrap());
        }
    }

    #[test]
    fn each_shape_of_read_gets_the_bridge_and_keeps_everything_else() {
        let cases = [
            (
                "model: sonnet\n# my notes\nauto-commits: false\n",
                "model: sonnet\n# my notes\nauto-commits: false\nread: AGENTS.md\n",
            ),
            ("model: sonnet", "model: sonnet\nread: AGENTS.md\n"),
            (
                "read: CONVENTIONS.md\nmodel: sonnet\n",
                "read: [CONVENTIONS.md, AGENTS.md]\nmodel: sonnet\n",
            ),
            (
                "read: [CONVENTIONS.md, \"my notes.md\"]\n",
                "read: [CONVENTIONS.md, \"my notes.md\", AGENTS.md]\n",
            ),
            (
                "read:\n  - CONVENTIONS.md\n  # theirs\n  - docs/style.md\nmodel: x\n",
                "read:\n  - CONVENTIONS.md\n  # theirs\n  - docs/style.md\n  - AGENTS.md\nmodel: x\n",
            ),
            (
                "read:\n- CONVENTIONS.md\nmodel: x\n",
                "read:\n- CONVENTIONS.md\n- AGENTS.md\nmodel: x\n",
            ),
            ("model: x\r\nread: a.md\r\n", "model: x\r\nread: [a.md, AGENTS.md]\r\n"),
            ("model: x\r\n", "model: x\r\nread: AGENTS.md\r\n"),
        ];
        for (before, after) in cases {
            assert_eq!(added(before), after, "from {before:?}");
            assert!(reads_bridge(Some(after)).unwrap());
            // And back: the entry polisd added, and only it, goes.
            let removed = without_bridge(Some(after)).unwrap().unwrap();
            assert_eq!(
                meaning(&removed),
                meaning(before),
                "removing from {after:?}"
            );
        }
    }

    #[test]
    fn a_comment_on_polisd_s_line_goes_with_it_and_every_other_byte_stays() {
        let team = "# team\nmap-tokens: 1024  # big\n";
        let cases = [
            (
                format!("{team}read: AGENTS.md # c\nload: .polis.aider  # mine\n"),
                team.to_string(),
            ),
            (
                "read:\n  - CONVENTIONS.md # theirs\n  - AGENTS.md  # c\n".to_string(),
                "read:\n  - CONVENTIONS.md # theirs\n".to_string(),
            ),
            (
                "read:\n  - AGENTS.md # c\nmodel: x\n".to_string(),
                "model: x\n".to_string(),
            ),
            // The line stays for the team's file, and so does the comment on it.
            (
                "read: [CONVENTIONS.md, AGENTS.md]  # ours\n".to_string(),
                "read: [CONVENTIONS.md]  # ours\n".to_string(),
            ),
            (
                "read: [\"a #1.md\", AGENTS.md] # c\n".to_string(),
                "read: [\"a #1.md\"] # c\n".to_string(),
            ),
        ];
        for (installed, expected) in cases {
            let read = without_bridge(Some(&installed)).unwrap().unwrap();
            let after = without_load(Some(&read)).unwrap().unwrap_or(read);
            assert_eq!(after, expected, "from {installed:?}");
        }
        assert_eq!(
            dropped_comments(
                &format!("{team}read: AGENTS.md # c\nload: .polis.aider  # mine\n"),
                team
            ),
            vec!["# c".to_string(), "# mine".to_string()]
        );
        assert!(dropped_comments("read: [a, AGENTS.md] # c\n", "read: [a] # c\n").is_empty());
    }

    #[test]
    fn a_comment_starts_at_a_hash_after_a_blank_outside_quotes() {
        for (line, comment) in [
            ("read: AGENTS.md # c", "# c"),
            ("# whole", "# whole"),
            ("read: a#b.md", ""),
            ("read: [\"a #b\", 'it''s #x'] #c", "#c"),
            ("read: \"a\\\" #b\"", ""),
            ("read: it's #c", "#c"),
        ] {
            assert_eq!(split_comment(line).1, comment, "{line}");
        }
    }

    #[test]
    fn a_config_that_reads_the_bridge_is_left_as_it_is() {
        for text in [
            "read: AGENTS.md\n",
            "read: [./AGENTS.md]  # ours\n",
            "read:\n - AGENTS.md\n",
        ] {
            assert_eq!(added(text), text);
        }
        assert_eq!(without_bridge(Some("model: x\n")).unwrap(), None);
        assert_eq!(without_bridge(None).unwrap(), None);
    }

    #[test]
    fn removing_the_only_entry_removes_the_key() {
        assert_eq!(
            without_bridge(Some(
                "model: x\nread:\n  - AGENTS.md\nauto-commits: false\n"
            ))
            .unwrap(),
            Some("model: x\nauto-commits: false\n".into())
        );
        assert_eq!(
            without_bridge(Some("read: AGENTS.md\nmodel: x\n")).unwrap(),
            Some("model: x\n".into())
        );
    }

    #[test]
    fn what_polisd_cannot_edit_safely_is_refused_with_the_edit_to_make() {
        for text in [
            "read: CONVENTIONS.md  # mine\n",
            "{model: x, read: a.md}\n",
            "read: >\n  a.md\n",
            "read: a.md\nread: b.md\n",
        ] {
            let err = with_bridge(Some(text)).unwrap_err();
            assert!(
                err.to_string().contains("add `AGENTS.md`"),
                "{text:?}: {err}"
            );
        }
        let err = with_bridge(Some("read: {a: 1}\n")).unwrap_err();
        assert!(err.to_string().contains("neither a file name"), "{err}");
        let err = with_bridge(Some("- a\n- b\n")).unwrap_err();
        assert!(err.to_string().contains("not a mapping"), "{err}");
        let err = with_bridge(Some("model: [\n")).unwrap_err();
        assert!(matches!(err, AiderConfigError::NotYaml { .. }), "{err}");
    }

    #[test]
    fn load_is_added_once_and_removed_to_the_same_bytes() {
        for before in [
            "",
            "model: x\n",
            "model: x",
            "# mine\r\nmodel: x\r\n",
            "read: AGENTS.md\n",
        ] {
            let after = with_load(Some(before)).unwrap();
            assert_eq!(load_of(Some(&after)).unwrap(), Load::Ours, "{before:?}");
            assert!(
                after.starts_with(before.trim_end_matches('\n')),
                "{after:?}"
            );
            assert_eq!(with_load(Some(&after)).unwrap(), after, "idempotent");
            let back = without_load(Some(&after)).unwrap().unwrap();
            let expected = if before == "model: x" {
                "model: x\n"
            } else {
                before
            };
            assert_eq!(back, expected, "{before:?}");
        }
        assert_eq!(
            with_load(Some("# mine\r\nmodel: x\r\n")).unwrap(),
            "# mine\r\nmodel: x\r\nload: .polis.aider\r\n"
        );
        assert_eq!(with_load(None).unwrap(), "load: .polis.aider\n");
        assert_eq!(without_load(Some("model: x\n")).unwrap(), None);
        assert_eq!(without_load(Some("load: team.aider\n")).unwrap(), None);
    }

    #[test]
    fn a_teams_own_load_is_refused_and_an_odd_one_left_to_the_person() {
        let err = with_load(Some("load: team.aider\nmodel: x\n")).unwrap_err();
        assert_eq!(
            err,
            AiderConfigError::LoadTaken {
                file: "team.aider".into()
            }
        );
        assert!(err.to_string().contains("/run polisd hook aider prime"));
        let err = with_load(Some("load:\nmodel: x\n")).unwrap_err();
        assert!(err.to_string().contains("load: .polis.aider"), "{err}");
        let err = without_load(Some("load:\n  .polis.aider\nmodel: x\n")).unwrap_err();
        assert!(err.to_string().contains("remove the line"), "{err}");
        // A `load:` that is no file name is shown as the person wrote it, not as polisd's
        // inner value (`Seq([Str("a"), …])`).
        let err = with_load(Some("load: [a, 2, {b: c}]\n")).unwrap_err();
        assert!(err.to_string().contains("`load: [a, 2, {b: c}]`"), "{err}");
    }

    #[test]
    fn the_command_file_is_known_by_its_command() {
        let text = load_file("/opt/bin/polisd");
        assert!(
            text.contains("\n/run /opt/bin/polisd hook aider prime\n"),
            "{text}"
        );
        assert!(is_polisd_load_file(&text));
        assert!(is_polisd_load_file(&load_file("polisd")));
        assert_eq!(
            runs_primer("/add x.py\n/run polisd hook aider prime\n").as_deref(),
            Some("polisd hook aider prime")
        );
        assert!(!is_polisd_load_file(&format!("{text}/add x.py\n")));
        for foreign in [
            "/run polisd hook aider notices\n",
            "/run polisd hook claude prime\n",
            "/run echo polisd hook aider prime\n",
            "/run polisd prime --as x\n",
        ] {
            assert_eq!(runs_primer(foreign), None, "{foreign}");
        }
    }

    #[test]
    fn aider_refuses_a_value_of_the_wrong_type_for_the_keys_checked() {
        let text = "auto-commits: maybe\nvim: [true]\nload: [a, b]\nmap-tokens: 1.5\n\
                    yes-always: Yes\ngitignore: 1\nauto-lint:\nmap-tokens-x: 1\n";
        let bad: Vec<(String, Option<usize>, &str)> = bad_values(Some(text))
            .into_iter()
            .map(|b| (b.key, b.line, b.aider_says))
            .collect();
        assert_eq!(
            bad,
            vec![
                ("auto-commits".into(), Some(1), "Unexpected value"),
                ("vim".into(), Some(2), "AssertionError"),
                ("load".into(), Some(3), "can't be set to a list"),
                ("map-tokens".into(), Some(4), "invalid int value"),
            ]
        );
        for fine in [
            "auto-commits: false\nmap-tokens: \" 1_024 \"\nload: .polis.aider\n",
            "auto-test: ON\nmap-tokens: -1\nload: 5\n",
        ] {
            assert!(bad_values(Some(fine)).is_empty(), "{fine}");
        }
        assert!(bad_values(Some("map-tokens: true\n")).len() == 1);
        assert!(bad_values(Some("- a\n")).is_empty());
    }

    #[test]
    fn aider_refuses_a_key_it_has_no_option_for() {
        assert_eq!(
            unknown_options(Some(
                "map-tokens: 1024\nmap_tokens: 1\nteam-note: x\nread: AGENTS.md\n"
            )),
            vec!["map_tokens".to_string(), "team-note".to_string()]
        );
        assert!(unknown_options(Some(&with_load(Some("map-tokens: 1\n")).unwrap())).is_empty());
        assert!(unknown_options(Some("[1, 2]")).is_empty());
        assert!(unknown_options(None).is_empty());
    }
}
