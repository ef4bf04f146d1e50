//! The agent CLIs' hook configurations as polisd installs them, and what a hook prints.
//!
//! Pure: settings text in, settings text out. Each CLI keeps its project-level hooks in a JSON
//! file of the same shape — `{"hooks": {"<Event>": [{"matcher": …, "hooks": [{"type":
//! "command", "command": …, "timeout": …}]}]}}` — as their documentation describes:
//!
//! | CLI | file | primer | notices |
//! |---|---|---|---|
//! | Claude Code | `.claude/settings.json` | `SessionStart` (every source: startup, resume, clear, compact) | `PostToolUse`, `UserPromptSubmit` |
//! | Codex CLI | `.codex/hooks.json` | `SessionStart` | `PostToolUse`, `UserPromptSubmit` |
//! | Gemini CLI | `.gemini/settings.json` | `SessionStart` | `AfterTool`, `BeforeAgent` |
//!
//! Codex's `PostCompact` and Gemini's `PreCompress` cannot add context (their output schemas
//! carry only `systemMessage`), so those CLIs get no primer after compaction; the next notices
//! hook still runs. Every entry polisd adds is recognised by its exact command (`<…/polisd> hook
//! <cli> prime|notices`, see [`our_binary`]), so uninstall removes exactly those and nothing a
//! user or another tool wrote. The commands carry no citizen id: the files are shared.
//!
//! An edit splices polisd's entries into the file's text and out of it (see [`jsonc`]): every
//! other byte stays, a person's comments in Gemini CLI's settings too, and what polisd adds is
//! written in the file's own [`Style`] (CRLF, indentation). A file that polisd installed into
//! and uninstalled from reads back as it was.

use super::jsonc;
pub use super::jsonc::Json;

/// An agent CLI with a documented hook mechanism.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Cli {
    Claude,
    Codex,
    Gemini,
}

impl Cli {
    pub const ALL: [Cli; 3] = [Cli::Claude, Cli::Codex, Cli::Gemini];

    pub fn as_str(self) -> &'static str {
        match self {
            Cli::Claude => "claude",
            Cli::Codex => "codex",
            Cli::Gemini => "gemini",
        }
    }

    pub fn parse(text: &str) -> Option<Cli> {
        Cli::ALL.into_iter().find(|c| c.as_str() == text)
    }

    /// The project-level settings file, relative to the project root.
    pub fn settings_path(self) -> &'static str {
        match self {
            Cli::Claude => ".claude/settings.json",
            Cli::Codex => ".codex/hooks.json",
            Cli::Gemini => ".gemini/settings.json",
        }
    }

    /// The CLI's name for people.
    pub fn display(self) -> &'static str {
        match self {
            Cli::Claude => "Claude Code",
            Cli::Codex => "Codex CLI",
            Cli::Gemini => "Gemini CLI",
        }
    }

    /// The hook events polisd installs, with what each one prints.
    pub fn events(self) -> &'static [(&'static str, HookKind)] {
        match self {
            Cli::Claude => &[
                ("SessionStart", HookKind::Prime),
                ("PostToolUse", HookKind::Notices),
                ("UserPromptSubmit", HookKind::Notices),
            ],
            Cli::Codex => &[
                ("SessionStart", HookKind::Prime),
                ("PostToolUse", HookKind::Notices),
                ("UserPromptSubmit", HookKind::Notices),
            ],
            Cli::Gemini => &[
                ("SessionStart", HookKind::Prime),
                ("AfterTool", HookKind::Notices),
                ("BeforeAgent", HookKind::Notices),
            ],
        }
    }

    /// The matcher of the group polisd adds: every tool for tool events; none (every source)
    /// for the others.
    fn matcher(self, event: &str) -> Option<&'static str> {
        match (self, event) {
            (Cli::Claude | Cli::Codex, "PostToolUse") => Some("*"),
            (Cli::Gemini, "AfterTool") => Some(".*"),
            _ => None,
        }
    }

    /// The handler's timeout in the CLI's unit (seconds for Claude and Codex, milliseconds
    /// for Gemini). A hook normally takes milliseconds; this only bounds a stuck disk.
    fn timeout(self) -> u64 {
        match self {
            Cli::Claude | Cli::Codex => 10,
            Cli::Gemini => 10_000,
        }
    }
}

/// What a hook command prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HookKind {
    /// The session primer.
    Prime,
    /// The notices past the read cursor, rate-limited.
    Notices,
}

impl HookKind {
    pub fn as_str(self) -> &'static str {
        match self {
            HookKind::Prime => "prime",
            HookKind::Notices => "notices",
        }
    }
}

/// The command a hook runs: `<bin> hook <cli> <kind>`. It carries no citizen id, because the
/// settings files it goes into are shared through git: the hook finds its id when it runs (see
/// `polisd hook`), from `--as`, `$POLIS_CITIZEN` or the id `hooks install --as` recorded for
/// this person and CLI outside the repository.
pub fn command(bin: &str, cli: Cli, kind: HookKind) -> String {
    hook_command(bin, cli.as_str(), kind)
}

/// The command of the hook `name` (a [`Cli`]'s name, or `aider`, whose only hook is the primer
/// its `load:` file runs), spelled as [`command`] spells it.
pub fn hook_command(bin: &str, name: &str, kind: HookKind) -> String {
    format!("{} hook {name} {}", shell_word(bin), kind.as_str())
}

/// `word` as one word of a POSIX shell command: as it is when every character is plain,
/// single-quoted otherwise, so a path with spaces, quotes or `$` survives being pasted into
/// a shell or written into a hook's command.
pub fn shell_word(word: &str) -> String {
    if !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+".contains(c))
    {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// The words of a command as `sh` splits the commands polisd writes (plain words and
/// single-quoted ones); `None` for anything else (another tool's command).
fn words(command: &str) -> Option<Vec<String>> {
    let mut out = Vec::new();
    let mut word: Option<String> = None;
    let mut chars = command.chars();
    while let Some(c) = chars.next() {
        match c {
            ' ' => out.extend(word.take()),
            '\'' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next()? {
                        '\'' => break,
                        c => w.push(c),
                    }
                }
            }
            '\\' => word.get_or_insert_with(String::new).push(chars.next()?),
            c if c.is_ascii_alphanumeric() || "/._-+=:".contains(c) => {
                word.get_or_insert_with(String::new).push(c)
            }
            _ => return None,
        }
    }
    out.extend(word);
    Some(out)
}

/// The binary of a command polisd installed for `cli`, when the command is exactly one of
/// polisd's: `<…/polisd> hook <cli> <prime|notices>`, optionally with ` --as <id>` (as older
/// versions wrote it) and ` --interval <seconds>` (as the guide tells a team that wants the
/// notices checked more often), each once. Anything else — a wrapper, an `echo`, another
/// tool whose command merely contains these words — is not polisd's.
pub fn our_binary(command: &str, cli: Cli) -> Option<String> {
    hook_binary(command, cli.as_str(), &[HookKind::Prime, HookKind::Notices])
}

/// [`our_binary`] for the hook `name` of one of `kinds`.
pub fn hook_binary(command: &str, name: &str, kinds: &[HookKind]) -> Option<String> {
    let w = words(command)?;
    let named_polisd = std::path::Path::new(w.first()?)
        .file_name()
        .is_some_and(|n| n == "polisd");
    let options = w.get(4..).unwrap_or_default();
    let shape = options.len() % 2 == 0
        && options.chunks(2).enumerate().all(|(i, pair)| {
            let once = options.chunks(2).position(|p| p[0] == pair[0]) == Some(i);
            once && match pair[0].as_str() {
                "--as" => true,
                "--interval" => !pair[1].is_empty() && pair[1].bytes().all(|b| b.is_ascii_digit()),
                _ => false,
            }
        });
    (named_polisd
        && w.len() >= 4
        && shape
        && w[1] == "hook"
        && w[2] == name
        && kinds.iter().any(|k| w[3] == k.as_str()))
    .then(|| w[0].clone())
}

/// The citizen id an older install wrote into one of polisd's commands (`--as ID`), if any.
pub fn written_id(command: &str) -> Option<String> {
    let w = words(command)?;
    let at = w.iter().position(|x| x == "--as")?;
    w.get(at + 1).cloned()
}

/// The `--interval` of the first of polisd's notices commands for `cli` in `hooks`, if it
/// has one.
fn notices_interval(cli: Cli, hooks: &Json) -> Option<String> {
    let Json::Obj(events) = hooks else {
        return None;
    };
    events
        .iter()
        .filter_map(|(_, groups)| match groups {
            Json::Arr(groups) => Some(groups),
            _ => None,
        })
        .flatten()
        .filter_map(|group| match group.get("hooks") {
            Some(Json::Arr(handlers)) => Some(handlers),
            _ => None,
        })
        .flatten()
        .filter_map(|h| h.get("command").and_then(Json::as_str))
        .filter(|c| is_ours(c, cli))
        .filter_map(words)
        .find_map(|w| {
            let at = w.iter().position(|x| x == "--interval")?;
            (w[3] == "notices")
                .then(|| w.get(at + 1).cloned())
                .flatten()
        })
}

/// Whether a handler's command is one polisd installed (for this CLI).
pub fn is_ours(command: &str, cli: Cli) -> bool {
    our_binary(command, cli).is_some()
}

/// Why a settings file cannot be edited. Nothing is written when this is returned.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error("{path} is not valid JSON (line {line}, column {column}: {reason}); fix or remove it, polisd changes nothing until then")]
    NotJson {
        path: String,
        line: usize,
        column: usize,
        reason: String,
    },
    #[error("{path}: {what} is {found}, not {wanted}; polisd does not rewrite what it does not understand, so fix it by hand")]
    Shape {
        path: String,
        what: String,
        found: &'static str,
        wanted: &'static str,
    },
}

/// Whether `cli` reads its settings with comments: Gemini CLI does (see [`jsonc`]).
fn with_comments(cli: Cli) -> bool {
    cli == Cli::Gemini
}

/// A settings text as `cli` reads it: its byte-order mark, the text after it, and the tree
/// with its places; `None` for an absent or blank text (a file polisd may create).
pub fn parse_doc<'t>(
    cli: Cli,
    path: &str,
    text: Option<&'t str>,
) -> Result<Option<(&'t str, &'t str, jsonc::Doc)>, ConfigError> {
    let Some(text) = text.filter(|t| !t.trim().is_empty()) else {
        return Ok(None);
    };
    let body = text.strip_prefix('\u{feff}').unwrap_or(text);
    let bom = &text[..text.len() - body.len()];
    let doc = jsonc::parse(body, with_comments(cli)).map_err(|e| ConfigError::NotJson {
        path: path.to_string(),
        line: e.line,
        column: e.column,
        reason: e.reason,
    })?;
    if !matches!(doc.root.kind, jsonc::Kind::Obj(_)) {
        return Err(ConfigError::Shape {
            path: path.to_string(),
            what: "the file".into(),
            found: doc.root.to_json().type_name(),
            wanted: "an object",
        });
    }
    Ok(Some((bom, body, doc)))
}

/// A settings text as `cli` reads it, as a tree; an absent or blank text is an empty object.
pub fn parse(cli: Cli, path: &str, text: Option<&str>) -> Result<Json, ConfigError> {
    Ok(parse_doc(cli, path, text)?.map_or(Json::Obj(Vec::new()), |(_, _, doc)| doc.root.to_json()))
}

/// How a settings file is written, so that polisd's edit keeps it: a byte-order mark, CRLF
/// line ends, the indentation unit, and whether the file ends with a line end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Style {
    bom: bool,
    crlf: bool,
    indent: String,
    final_newline: bool,
}

impl Style {
    /// The style of an existing text; two spaces and a final line end for a new file.
    pub fn of(text: Option<&str>) -> Style {
        let Some(text) = text.filter(|t| !t.trim_start_matches('\u{feff}').trim().is_empty())
        else {
            return Style {
                bom: text.is_some_and(|t| t.starts_with('\u{feff}')),
                crlf: text.is_some_and(|t| t.contains("\r\n")),
                indent: "  ".into(),
                final_newline: text.is_none_or(|t| t.ends_with('\n')),
            };
        };
        let indent = text
            .lines()
            .skip(1)
            .map(|l| &l[..l.len() - l.trim_start_matches([' ', '\t']).len()])
            .find(|lead| !lead.is_empty())
            .unwrap_or("  ")
            .to_string();
        Style {
            bom: text.starts_with('\u{feff}'),
            crlf: text.contains("\r\n"),
            indent,
            final_newline: text.ends_with('\n'),
        }
    }

    /// The line end of the file: CRLF if it has one.
    fn eol(&self) -> &'static str {
        if self.crlf {
            "\r\n"
        } else {
            "\n"
        }
    }
}

fn render(value: &Json, style: &Style) -> String {
    let mut out = jsonc::pretty(value, &style.indent);
    if style.final_newline {
        out.push('\n');
    }
    if style.crlf {
        out = out.replace('\n', "\r\n");
    }
    if style.bom {
        out.insert(0, '\u{feff}');
    }
    out
}

/// The group polisd adds on `event` for `cli`: its matcher, if the event takes one, and one
/// handler running `bin`, with the team's notices `interval` if it set one.
fn our_group(cli: Cli, event: &str, kind: HookKind, bin: &str, interval: Option<&str>) -> Json {
    let mut handler = Vec::new();
    if cli == Cli::Gemini {
        handler.push((
            "name".to_string(),
            Json::Str(format!("polisd-{}", kind.as_str())),
        ));
    }
    handler.push(("type".to_string(), Json::Str("command".into())));
    let mut run = command(bin, cli, kind);
    if let (HookKind::Notices, Some(seconds)) = (kind, interval) {
        run.push_str(&format!(" --interval {seconds}"));
    }
    handler.push(("command".to_string(), Json::Str(run)));
    handler.push(("timeout".to_string(), Json::Num(cli.timeout().into())));
    let mut group = Vec::new();
    if let Some(m) = cli.matcher(event) {
        group.push(("matcher".to_string(), Json::Str(m.into())));
    }
    group.push(("hooks".to_string(), Json::Arr(vec![Json::Obj(handler)])));
    Json::Obj(group)
}

/// Marks polisd's handlers in one event's `groups` for removal: a group left with no handler
/// goes whole, the others lose polisd's handlers. Returns the groups that go and how many
/// handlers went.
fn strip_ours(edit: &mut jsonc::Edit, groups: &jsonc::Node, cli: Cli) -> (Vec<usize>, usize) {
    let jsonc::Kind::Arr(list) = &groups.kind else {
        return (Vec::new(), 0);
    };
    let mut gone_groups = Vec::new();
    let mut removed = 0;
    for (g, group) in list.items.iter().enumerate() {
        let Some(handlers) = group.member("hooks").map(|m| &m.value) else {
            continue;
        };
        let jsonc::Kind::Arr(hs) = &handlers.kind else {
            continue;
        };
        let ours: Vec<usize> = hs
            .items
            .iter()
            .enumerate()
            .filter(|(_, h)| {
                h.member("command")
                    .and_then(|c| c.value.to_json().as_str().map(|c| is_ours(c, cli)))
                    == Some(true)
            })
            .map(|(i, _)| i)
            .collect();
        removed += ours.len();
        if !ours.is_empty() && ours.len() == hs.items.len() {
            gone_groups.push(g);
        } else if !ours.is_empty() {
            edit.change(handlers, &ours, Vec::new());
        }
    }
    (gone_groups, removed)
}

/// The settings text with polisd's hooks for `cli` installed (replacing any polisd installed
/// before). Every byte of the file that is not polisd's stays as it was, comments included:
/// the edit removes polisd's old handlers and appends its groups (and the `hooks` object or
/// event arrays they need) in the file's indentation.
pub fn install(cli: Cli, existing: Option<&str>, bin: &str) -> Result<String, ConfigError> {
    let path = cli.settings_path();
    let style = Style::of(existing);
    let hooks_of = |interval: Option<&str>| {
        let events = cli.events().iter().map(|(event, kind)| {
            let group = our_group(cli, event, *kind, bin, interval);
            (event.to_string(), Json::Arr(vec![group]))
        });
        Json::Obj(events.collect())
    };
    let Some((bom, body, doc)) = parse_doc(cli, path, existing)? else {
        let root = Json::Obj(vec![("hooks".into(), hooks_of(None))]);
        return Ok(render(&root, &style));
    };
    let mut edit = jsonc::Edit::new(body, &style.indent, style.eol());
    match doc.root.member("hooks").map(|m| &m.value) {
        None => edit.change(
            &doc.root,
            &[],
            vec![jsonc::Added::Member("hooks".into(), hooks_of(None))],
        ),
        Some(hooks) => {
            let tree = hooks.to_json();
            if !matches!(tree, Json::Obj(_)) {
                return Err(ConfigError::Shape {
                    path: path.to_string(),
                    what: "`hooks`".into(),
                    found: tree.type_name(),
                    wanted: "an object",
                });
            }
            // A team that set its own notices interval keeps it across a reinstall.
            let interval = notices_interval(cli, &tree);
            let mut new_events = Vec::new();
            for (event, kind) in cli.events() {
                let group = our_group(cli, event, *kind, bin, interval.as_deref());
                let Some(groups) = hooks.member(event).map(|m| &m.value) else {
                    new_events.push(jsonc::Added::Member(
                        event.to_string(),
                        Json::Arr(vec![group]),
                    ));
                    continue;
                };
                if !matches!(groups.kind, jsonc::Kind::Arr(_)) {
                    return Err(ConfigError::Shape {
                        path: path.to_string(),
                        what: format!("`hooks.{event}`"),
                        found: groups.to_json().type_name(),
                        wanted: "an array of hook groups",
                    });
                }
                let (gone, _) = strip_ours(&mut edit, groups, cli);
                edit.change(groups, &gone, vec![jsonc::Added::Item(group)]);
            }
            edit.change(hooks, &[], new_events);
        }
    }
    Ok(format!("{bom}{}", edit.finish()))
}

/// The settings text without polisd's hooks for `cli`; `None` when there were none (nothing to
/// write). Event arrays and the `hooks` object that only polisd's entries filled are removed,
/// so an install followed by an uninstall gives the file back; every other byte stays.
pub fn uninstall(cli: Cli, existing: Option<&str>) -> Result<Option<String>, ConfigError> {
    let path = cli.settings_path();
    let Some((bom, body, doc)) = parse_doc(cli, path, existing)? else {
        return Ok(None);
    };
    let jsonc::Kind::Obj(top) = &doc.root.kind else {
        return Ok(None);
    };
    // The `hooks` the CLI reads: the last, should the key be repeated.
    let Some(at) = top.items.iter().rposition(|m| m.key == "hooks") else {
        return Ok(None);
    };
    let hooks = &top.items[at].value;
    let jsonc::Kind::Obj(events) = &hooks.kind else {
        return Ok(None);
    };
    let style = Style::of(existing);
    let mut edit = jsonc::Edit::new(body, &style.indent, style.eol());
    let mut removed = 0;
    let mut emptied = Vec::new();
    for (e, event) in events.items.iter().enumerate() {
        let (gone, count) = strip_ours(&mut edit, &event.value, cli);
        removed += count;
        match &event.value.kind {
            jsonc::Kind::Arr(groups)
                if !groups.items.is_empty() && gone.len() == groups.items.len() =>
            {
                emptied.push(e)
            }
            _ => edit.change(&event.value, &gone, Vec::new()),
        }
    }
    if removed == 0 {
        return Ok(None);
    }
    if emptied.len() == events.items.len() {
        edit.change(&doc.root, &[at], Vec::new());
    } else {
        edit.change(hooks, &emptied, Vec::new());
    }
    Ok(Some(format!("{bom}{}", edit.finish())))
}

/// polisd's hook commands found in a settings text, by event (for `hooks status`).
pub fn installed(cli: Cli, existing: Option<&str>) -> Result<Vec<(String, String)>, ConfigError> {
    let root = parse(cli, cli.settings_path(), existing)?;
    let mut out = Vec::new();
    if let Some(Json::Obj(events)) = root.get("hooks") {
        for (event, groups) in events {
            let Json::Arr(groups) = groups else { continue };
            for g in groups {
                let Some(Json::Arr(handlers)) = g.get("hooks") else {
                    continue;
                };
                for h in handlers {
                    if let Some(c) = h.get("command").and_then(Json::as_str) {
                        if is_ours(c, cli) {
                            out.push((event.clone(), c.to_string()));
                        }
                    }
                }
            }
        }
    }
    Ok(out)
}

/// Why `cli` would run no hook of polisd's, read from one of its settings texts: Claude Code's
/// `disableAllHooks`, Gemini CLI's hooks switched off (`hooksConfig.enabled`, the older
/// `hooks.enabled` and `tools.enableHooks`) or polisd's hooks named in `hooksConfig.disabled`.
/// A text that is not a JSON object says nothing here (`installed` reports it).
pub fn switched_off(cli: Cli, path: &str, text: Option<&str>) -> Vec<String> {
    let Ok(root) = parse(cli, path, text) else {
        return Vec::new();
    };
    let at = |keys: &[&str]| {
        keys.iter()
            .try_fold(&root, |v, k| v.get(k))
            .and_then(|v| match v {
                Json::Bool(b) => Some(*b),
                _ => None,
            })
    };
    let mut out = Vec::new();
    match cli {
        Cli::Claude => {
            if at(&["disableAllHooks"]) == Some(true) {
                out.push(format!(
                    "{path} sets `disableAllHooks: true`: Claude Code runs no hooks until it is removed"
                ));
            }
        }
        Cli::Gemini => {
            for keys in [
                &["hooksConfig", "enabled"][..],
                &["hooks", "enabled"],
                &["tools", "enableHooks"],
            ] {
                if at(keys) == Some(false) {
                    out.push(format!(
                        "{path} sets `{}: false`: Gemini CLI runs no hooks until it is true",
                        keys.join(".")
                    ));
                }
            }
            let disabled = root.get("hooksConfig").and_then(|h| h.get("disabled"));
            if let Some(Json::Arr(names)) = disabled {
                for name in names.iter().filter_map(Json::as_str) {
                    if name.starts_with("polisd-") {
                        out.push(format!(
                            "{path} lists `{name}` in `hooksConfig.disabled`: Gemini CLI skips it"
                        ));
                    }
                }
            }
        }
        Cli::Codex => {}
    }
    out
}

/// What a hook prints on stdout for `context` at `event`, following each CLI's contract for
/// adding context: `hookSpecificOutput.additionalContext` with the event's name. Claude Code
/// and Codex take no output as "nothing to add"; Gemini CLI wants JSON on every success, so it
/// gets `{}`. `None`: print nothing.
pub fn output(cli: Cli, event: &str, context: &str) -> Option<String> {
    if context.is_empty() {
        return (cli == Cli::Gemini).then(|| "{}".to_string());
    }
    let value = serde_json::json!({
        "hookSpecificOutput": {
            "hookEventName": event,
            "additionalContext": context,
        }
    });
    Some(value.to_string())
}

/// The event a hook answers, `None` when it must add nothing.
///
/// The payload's `hook_event_name` when it is one of the events polisd installs for this CLI
/// (each of them takes `additionalContext`; a hook wired to the other kind's event answers as
/// that event); the kind's first event when the payload names none (a person running the hook
/// by hand, a payload that is not JSON). Any other event — Claude Code's `Stop` or
/// `PreCompact`, Gemini CLI's `PreCompress`… — is `None`: the CLIs take no context there and
/// reject a `hookSpecificOutput` that names another event than the one that fired, so nothing
/// printed would reach the model, and nothing may be marked read.
pub fn event_of(cli: Cli, kind: HookKind, payload_event: Option<&str>) -> Option<&'static str> {
    match payload_event {
        Some(p) => cli.events().iter().map(|(e, _)| *e).find(|e| *e == p),
        None => cli
            .events()
            .iter()
            .find(|(_, k)| *k == kind)
            .map(|(e, _)| *e),
    }
}

/// The kind of hook polisd installs on `event` for `cli`: `Prime` where a session starts,
/// `Notices` where an event fires again and again in one session (after a tool, before a
/// prompt). `None` for an event polisd does not install.
pub fn installed_kind(cli: Cli, event: &str) -> Option<HookKind> {
    cli.events()
        .iter()
        .find(|(e, _)| *e == event)
        .map(|(_, k)| *k)
}

/// The marked section polisd keeps in a bridge pointer file.
pub const BRIDGE_START: &str = "<!-- polisd:bridge:start -->";
pub const BRIDGE_END: &str = "<!-- polisd:bridge:end -->";

/// The bridge pointer section (the same in `CLAUDE.md`, `AGENTS.md` and `GEMINI.md`).
pub fn bridge_section() -> String {
    format!(
        "{BRIDGE_START}\n## Polis\n\nThis project is coordinated through a Polis: the `_polis/` folder. \
Its rules are in `_polis/CONSTITUTION.md`; read it once per session.\n\n\
At session start (and after your context is compacted), run `polisd prime --as <your-citizen-id>`: \
it prints who you are, the contracts routed to you, your claims, the votes waiting for you and your \
unread notices. Run `polisd notices --as <your-citizen-id> --unread` to see new notices later.\n\
{BRIDGE_END}\n"
    )
}

/// The `SKILL.md` polisd writes under `.agents/skills/polis-protocol/` when none exists.
pub fn skill_file() -> String {
    format!(
        "---\nname: polis-protocol\ndescription: Work as a citizen of the Polis in `_polis/` (contracts, routing, chronicle, amendments). Use whenever `_polis/` exists in the project.\n---\n\n# Polis Protocol\n\n{}",
        bridge_section()
    )
}

/// A file's text with polisd's marked section added (at the end) or replaced in place; every
/// byte outside the section is kept. The section takes the file's line ends: in a file written
/// with CRLF (most of its lines end so, outside the section) it is written with CRLF, so that an
/// editor or `git diff` does not find one file with two kinds of line end.
pub fn upsert_section(existing: Option<&str>, section: &str) -> String {
    let Some(text) = existing.filter(|t| !t.is_empty()) else {
        return section.to_string();
    };
    let span = match (text.find(BRIDGE_START), text.find(BRIDGE_END)) {
        (Some(s), Some(e)) if s < e => {
            let mut end = e + BRIDGE_END.len();
            if text[end..].starts_with("\r\n") {
                end += 2;
            } else if text[end..].starts_with('\n') {
                end += 1;
            }
            Some((s, end))
        }
        _ => None,
    };
    let outside = span.map_or(text.to_string(), |(s, end)| {
        format!("{}{}", &text[..s], &text[end..])
    });
    let crlf_lines = outside.matches("\r\n").count();
    let crlf = crlf_lines > outside.matches('\n').count() - crlf_lines;
    let eol = if crlf { "\r\n" } else { "\n" };
    let section = if crlf {
        section.replace("\r\n", "\n").replace('\n', "\r\n")
    } else {
        section.to_string()
    };
    if let Some((s, end)) = span {
        return format!("{}{section}{}", &text[..s], &text[end..]);
    }
    let sep = if text.ends_with(&format!("{eol}{eol}")) || text.ends_with("\n\n") {
        String::new()
    } else if text.ends_with('\n') {
        eol.to_string()
    } else {
        format!("{eol}{eol}")
    };
    format!("{text}{sep}{section}")
}

#[cfg(test)]
mod tests {
    use super::*;

    const USER: &str = r#"{
  "model": "opus",
  "permissions": {
    "allow": [
      "Bash(ls:*)"
    ]
  },
  "hooks": {
    "PostToolUse": [
      {
        "matcher": "Edit",
        "hooks": [
          {
            "type": "command",
            "command": "prettier --write"
          }
        ]
      }
    ]
  },
  "z-last": 1.5
}
"#;

    #[test]
    fn install_then_uninstall_gives_the_file_back() {
        for cli in Cli::ALL {
            let installed = install(cli, Some(USER), "polisd").unwrap();
            assert!(installed.contains("prettier --write"));
            assert!(installed.contains(&format!("\"polisd hook {} prime\"", cli.as_str())));
            assert!(installed.find("\"model\"") < installed.find("\"z-last\""));
            let again = install(cli, Some(&installed), "polisd").unwrap();
            assert_eq!(again, installed, "install is idempotent for {cli:?}");
            let back = uninstall(cli, Some(&installed)).unwrap().unwrap();
            assert_eq!(back, USER, "{cli:?}");
            assert_eq!(uninstall(cli, Some(USER)).unwrap(), None);
        }
    }

    #[test]
    fn install_into_nothing_and_uninstall_removes_the_hooks_key() {
        let installed = install(Cli::Claude, None, "polisd").unwrap();
        let v: serde_json::Value = serde_json::from_str(&installed).unwrap();
        assert_eq!(
            v["hooks"]["SessionStart"][0]["hooks"][0]["command"],
            "polisd hook claude prime"
        );
        assert_eq!(v["hooks"]["PostToolUse"][0]["matcher"], "*");
        assert!(v["hooks"]["SessionStart"][0].get("matcher").is_none());
        assert_eq!(
            uninstall(Cli::Claude, Some(&installed)).unwrap().unwrap(),
            "{}\n"
        );
        let g: serde_json::Value =
            serde_json::from_str(&install(Cli::Gemini, None, "polisd").unwrap()).unwrap();
        assert_eq!(g["hooks"]["AfterTool"][0]["hooks"][0]["timeout"], 10_000);
        assert_eq!(
            g["hooks"]["BeforeAgent"][0]["hooks"][0]["name"],
            "polisd-notices"
        );
    }

    #[test]
    fn bad_files_are_refused_with_the_place() {
        let e = install(Cli::Claude, Some("{\n  \"a\": ,\n}"), "polisd").unwrap_err();
        assert!(matches!(e, ConfigError::NotJson { line: 2, .. }), "{e}");
        let e = install(Cli::Claude, Some("[]"), "polisd").unwrap_err();
        assert!(e.to_string().contains("not an object"), "{e}");
        let e = install(
            Cli::Claude,
            Some(r#"{"hooks": {"SessionStart": {}}}"#),
            "polisd",
        )
        .unwrap_err();
        assert!(e.to_string().contains("hooks.SessionStart"), "{e}");
    }

    #[test]
    fn only_polisd_commands_are_ours() {
        assert!(is_ours("polisd hook claude notices --as x", Cli::Claude));
        assert!(is_ours(
            "polisd hook claude notices --interval 0",
            Cli::Claude
        ));
        assert_eq!(
            written_id("polisd hook claude notices --as ann-agent --interval 0").as_deref(),
            Some("ann-agent")
        );
        assert!(is_ours(
            "polisd hook gemini notices --interval 5 --as x",
            Cli::Gemini
        ));
        assert!(is_ours("/opt/bin/polisd hook codex prime", Cli::Codex));
        assert!(!is_ours("polisd hook codex prime", Cli::Claude));
        assert!(!is_ours("prettier --write", Cli::Claude));
        // Another tool's command that merely contains the words is not polisd's.
        for foreign in [
            "my-wrapper.sh hook claude prime",
            "echo polisd hook claude prime",
            "polisd hook claude prime && curl example.com",
            "polisd hook claude prime --verbose",
            "polisd hook claude prime --interval",
            "polisd hook claude prime --interval soon",
            "polisd hook claude prime --interval 1 --interval 2",
            "polisd hook claude prime --as",
            "not-polisd hook claude prime",
            "FOO=1 polisd hook claude prime",
        ] {
            assert!(!is_ours(foreign, Cli::Claude), "{foreign}");
        }
        let spaced = command("/a b/polisd", Cli::Claude, HookKind::Prime);
        assert_eq!(spaced, "'/a b/polisd' hook claude prime");
        assert_eq!(
            our_binary(&spaced, Cli::Claude).as_deref(),
            Some("/a b/polisd")
        );
    }

    #[test]
    fn a_reinstall_keeps_the_notices_interval_a_team_set() {
        let installed = install(Cli::Claude, Some("{}"), "polisd").unwrap();
        let edited = installed.replace(
            "\"polisd hook claude notices\"",
            "\"polisd hook claude notices --interval 0\"",
        );
        assert_ne!(edited, installed);
        assert_eq!(
            install(Cli::Claude, Some(&edited), "polisd").unwrap(),
            edited
        );
        assert_eq!(
            uninstall(Cli::Claude, Some(&edited)).unwrap().as_deref(),
            Some("{}")
        );
    }

    #[test]
    fn install_then_uninstall_keeps_bom_crlf_tabs_and_an_empty_object() {
        let tabs = "{\n\t\"model\": \"opus\",\n\t\"env\": {\n\t\t\"A\": \"1\"\n\t}\n}\n";
        let crlf = tabs.replace("\t", "    ").replace('\n', "\r\n");
        let bom = format!("\u{feff}{crlf}");
        for original in [
            "{}",
            "{}\n",
            "{}\r\n",
            "\u{feff}{}",
            tabs,
            &crlf,
            &bom,
            "{\"a\": 1}",
        ] {
            for cli in Cli::ALL {
                let installed = install(cli, Some(original), "polisd").unwrap();
                assert_eq!(
                    installed.starts_with('\u{feff}'),
                    original.starts_with('\u{feff}')
                );
                let back = uninstall(cli, Some(&installed)).unwrap().unwrap();
                assert_eq!(back, original, "{cli:?} {original:?}");
            }
        }
    }

    /// Gemini CLI's settings as a person writes them: comments of both kinds, one inside a
    /// string that is no comment, polisd's hooks beside the team's.
    const GEMINI_COMMENTED: &str = r#"// Team settings: keep the comments.
{
  /* the model */ "model": {"name": "gemini-2.5-flash"},
  "mcpServers": {
    "docs": {"httpUrl": "http://docs.example/*v2*/mcp"} // the team's
  },
  "hooks": {
    "AfterTool": [
      // lint after edits
      {"matcher": "write_file", "hooks": [{"type": "command", "command": "npm run lint"}]}
    ]
  }
}
"#;

    #[test]
    fn gemini_settings_with_comments_keep_every_byte_that_is_not_polisd_s() {
        let installed = install(Cli::Gemini, Some(GEMINI_COMMENTED), "polisd").unwrap();
        for kept in [
            "// Team settings: keep the comments.\n{\n  /* the model */ \"model\"",
            "\"http://docs.example/*v2*/mcp\"} // the team's\n",
            "      // lint after edits\n      {\"matcher\": \"write_file\"",
        ] {
            assert!(installed.contains(kept), "{kept}: {installed}");
        }
        let read = installed_hooks(&installed);
        assert_eq!(read.len(), 3, "{installed}");
        assert_eq!(
            install(Cli::Gemini, Some(&installed), "polisd").unwrap(),
            installed
        );
        let back = uninstall(Cli::Gemini, Some(&installed)).unwrap().unwrap();
        assert_eq!(back, GEMINI_COMMENTED);
        // Claude Code and Codex CLI read strict JSON: a comment there is refused, with its place.
        let e = install(Cli::Codex, Some(GEMINI_COMMENTED), "polisd").unwrap_err();
        assert!(
            matches!(
                e,
                ConfigError::NotJson {
                    line: 1,
                    column: 1,
                    ..
                }
            ),
            "{e}"
        );
    }

    fn installed_hooks(text: &str) -> Vec<(String, String)> {
        installed(Cli::Gemini, Some(text)).unwrap()
    }

    #[test]
    fn switched_off_hooks_are_reported() {
        let p = ".claude/settings.json";
        assert_eq!(
            switched_off(Cli::Claude, p, Some(r#"{"disableAllHooks": false}"#)).len(),
            0
        );
        assert!(
            switched_off(Cli::Claude, p, Some(r#"{"disableAllHooks": true}"#))[0]
                .contains("disableAllHooks")
        );
        let g = r#"{"hooksConfig": {"enabled": false, "disabled": ["polisd-notices", "x"]},
                    "tools": {"enableHooks": false}}"#;
        let reasons = switched_off(Cli::Gemini, ".gemini/settings.json", Some(g));
        assert_eq!(reasons.len(), 3, "{reasons:?}");
        assert!(reasons[2].contains("polisd-notices"));
        assert!(switched_off(Cli::Codex, ".codex/hooks.json", Some(g)).is_empty());
    }

    #[test]
    fn output_follows_each_contract() {
        assert_eq!(output(Cli::Claude, "PostToolUse", ""), None);
        assert_eq!(output(Cli::Gemini, "AfterTool", "").as_deref(), Some("{}"));
        let v: serde_json::Value =
            serde_json::from_str(&output(Cli::Codex, "SessionStart", "hi").unwrap()).unwrap();
        assert_eq!(v["hookSpecificOutput"]["hookEventName"], "SessionStart");
        assert_eq!(v["hookSpecificOutput"]["additionalContext"], "hi");
        assert_eq!(
            event_of(Cli::Claude, HookKind::Notices, Some("UserPromptSubmit")),
            Some("UserPromptSubmit")
        );
        assert_eq!(
            event_of(Cli::Claude, HookKind::Prime, Some("PostToolUse")),
            Some("PostToolUse")
        );
        assert_eq!(event_of(Cli::Claude, HookKind::Notices, Some("Stop")), None);
        assert_eq!(
            event_of(Cli::Gemini, HookKind::Notices, Some("PostToolUse")),
            None
        );
        assert_eq!(
            event_of(Cli::Gemini, HookKind::Prime, None),
            Some("SessionStart")
        );
    }

    #[test]
    fn bridge_section_is_added_once_and_updated_in_place() {
        let mine = "# My rules\n\nBe nice.\n";
        let once = upsert_section(Some(mine), &bridge_section());
        assert!(once.starts_with(mine));
        assert_eq!(upsert_section(Some(&once), &bridge_section()), once);
        let old = once.replace("read it once per session", "old words");
        assert_eq!(upsert_section(Some(&old), &bridge_section()), once);
        assert_eq!(upsert_section(None, "x\n"), "x\n");
    }

    #[test]
    fn bridge_section_takes_a_crlf_files_line_ends() {
        let mine = "# My rules\r\n\r\nBe nice.\r\n";
        let once = upsert_section(Some(mine), &bridge_section());
        assert!(once.starts_with(mine));
        // Every line end is CRLF, the blank line before the section included.
        assert_eq!(
            once.matches('\n').count(),
            once.matches("\r\n").count(),
            "{once:?}"
        );
        assert!(once.contains("Be nice.\r\n\r\n<!-- polisd:bridge:start -->\r\n"));
        assert_eq!(upsert_section(Some(&once), &bridge_section()), once);
        // A section an older polisd wrote with LF into the CRLF file is brought into line.
        let lf = format!("{mine}\r\n{}", bridge_section());
        assert_eq!(upsert_section(Some(&lf), &bridge_section()), once);
        // No final line end: a CRLF blank line between.
        let bare = upsert_section(Some("# Rules\r\nBe nice."), &bridge_section());
        assert!(
            bare.starts_with("# Rules\r\nBe nice.\r\n\r\n<!--"),
            "{bare:?}"
        );
        // An LF file stays LF.
        let lf_file = upsert_section(Some("a\nb\n"), &bridge_section());
        assert!(!lf_file.contains('\r'));
    }
}
