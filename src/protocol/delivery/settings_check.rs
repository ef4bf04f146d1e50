//! Why an agent CLI skips polisd's hooks although they are in its project settings: a team's
//! edit elsewhere in the shared file that the CLI reads as "no hooks here" or "not this group".
//!
//! Each check is what the pinned CLI does, seen with it in the tests (`tests/agent_clis/`):
//! - Codex CLI 0.171.0 reads `.codex/hooks.json` as one typed document and refuses all of it,
//!   every hook, for one key it does not know at the top level, one value of a type it does
//!   not take, or one key it reads given twice in an object (serde_json would take the last;
//!   its typed reading refuses a repeated field), anywhere in the file; and it skips a matcher group whose matcher is not a valid
//!   regex (Rust's `regex`, the one it uses; `*`, empty and plain names are not patterns).
//! - Claude Code 2.1.332 checks its settings files against its schema and skips a file with
//!   an error entirely ("Files with errors are skipped entirely"), its hooks too; and a group
//!   whose matcher is not a valid regex never matches. polisd checks the settings a team
//!   commonly edits (`model`, `permissions`, the hooks), not the whole schema.
//! - Gemini CLI 0.61.0 compares a `SessionStart` group's matcher with the session's source
//!   (`startup`, `resume`, `clear`) as plain text, and a tool group's matcher that is not a valid
//!   regex with the tool's name as plain text, so such a group never fires.
//! - Both Codex and Gemini read a file that starts with a byte-order mark as no JSON at all:
//!   Codex lists none of its hooks, Gemini refuses to start. (Claude Code drops the mark.)
//!
//! Pure: settings text in, one line per reason out, each saying what to change.

use crate::protocol::delivery::agent_hooks::{self, is_ours, Cli};
use crate::protocol::delivery::codex_trust::{fits_i64, takes_matcher, CODEX_EVENTS};
use crate::protocol::delivery::jsonc::{Doc, Duplicate, Step};
use serde_json::Value;

/// A settings text as `cli` reads it (Gemini CLI's with comments): the tree with its places,
/// and the value; `None` for a text that is not a JSON object (`installed` reports it).
fn read(cli: Cli, path: &str, text: Option<&str>) -> Option<(Doc, Value)> {
    let (_, _, doc) = agent_hooks::parse_doc(cli, path, text).ok()??;
    let value = serde_json::to_value(doc.root.to_json()).ok()?;
    Some((doc, value))
}

/// What `cli` makes of a settings text, from one reading of it.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Skipped {
    /// Why it skips polisd's hooks, one line per reason, each saying what to change.
    pub reasons: Vec<String>,
    /// Whether it refuses the whole file, every hook in it: then whether the person trusts
    /// the hooks does not matter, and is not worth a word.
    pub whole: bool,
}

impl Skipped {
    fn whole(reason: String) -> Skipped {
        Skipped {
            reasons: vec![reason],
            whole: true,
        }
    }
}

/// Why `cli` skips polisd's hooks in `text` (the file `path`, as it is or as install is about
/// to write it). A text that is not a JSON object says nothing here: `installed` reports it.
pub fn skipped(cli: Cli, path: &str, text: Option<&str>) -> Skipped {
    if let Some(line) = byte_order_mark(cli, path, text) {
        return Skipped::whole(line);
    }
    let Some((doc, root)) = read(cli, path, text) else {
        return Skipped::default();
    };
    match cli {
        Cli::Codex => codex(path, &doc, &root),
        Cli::Gemini => Skipped {
            reasons: gemini(path, &root),
            whole: false,
        },
        Cli::Claude => claude(path, &root),
    }
}

/// The line that says `cli` refuses the file `text` as a whole for what only the team can
/// mend, if it does: a byte-order mark (Codex CLI, Gemini CLI), or a key Codex reads given
/// twice (which of the two values was meant is theirs to say). `hooks install` refuses to
/// edit such a file, `hooks status` reports it.
pub fn refused_edit(cli: Cli, path: &str, text: Option<&str>) -> Option<String> {
    if let Some(line) = byte_order_mark(cli, path, text) {
        return Some(line);
    }
    if cli != Cli::Codex {
        return None;
    }
    let (doc, root) = read(Cli::Codex, path, text)?;
    codex_repeated(&doc, &root).map(|d| repeated_line(path, d))
}

/// Codex CLI (serde_json) and Gemini CLI (`JSON.parse`) read a byte-order mark as a character
/// that no JSON may start with: Codex then runs none of the file's hooks, and Gemini refuses to
/// start ("Please fix the configuration file(s)"). polisd keeps the mark in its own edits.
fn byte_order_mark(cli: Cli, path: &str, text: Option<&str>) -> Option<String> {
    let outcome = match cli {
        Cli::Codex => "runs none of its hooks",
        Cli::Gemini => "refuses to start",
        Cli::Claude => return None,
    };
    text.filter(|t| t.starts_with('\u{feff}')).map(|_| {
        format!(
            "{path} starts with a byte-order mark, which {} reads as a character, so it {outcome}: save the file as UTF-8 without one (remove its first 3 bytes)",
            cli.display()
        )
    })
}

fn repeated_line(path: &str, d: &Duplicate) -> String {
    let mut place = String::new();
    for step in &d.at {
        match step {
            Step::Key(k) if place.is_empty() => place.push_str(k),
            Step::Key(k) => place.push_str(&format!(".{k}")),
            Step::Index(i) => place.push_str(&format!("[{i}]")),
        }
    }
    let place = if place.is_empty() {
        "the top-level object".to_string()
    } else {
        format!("`{place}`")
    };
    format!(
        "{path} line {}: Codex CLI refuses the whole file (the key `{}` appears twice in {place}) and runs none of its hooks: keep one `{}` there and remove the other",
        d.line, d.key, d.key
    )
}

/// The first key the file repeats where Codex reads it: its typed reading refuses a field
/// given twice (a key it does not read, it skips, repeated or not).
fn codex_repeated<'d>(doc: &'d Doc, root: &Value) -> Option<&'d Duplicate> {
    doc.duplicates
        .iter()
        .find(|d| codex_reads(&d.at, &d.key, root))
}

/// Whether Codex reads `key` in the object at `at`.
fn codex_reads(at: &[Step], key: &str, root: &Value) -> bool {
    let event = |e: &str| CODEX_EVENTS.contains(&e);
    match at {
        [] => ["hooks", "description"].contains(&key),
        [Step::Key(h)] if h == "hooks" => event(key),
        [Step::Key(h), Step::Key(e), Step::Index(_)] if h == "hooks" && event(e) => {
            ["matcher", "hooks"].contains(&key)
        }
        [Step::Key(h), Step::Key(e), Step::Index(g), Step::Key(hs), Step::Index(i)]
            if h == "hooks" && event(e) && hs == "hooks" =>
        {
            // A prompt or agent handler's fields Codex does not read.
            let kind = root["hooks"][e.as_str()][*g]["hooks"][*i]["type"].as_str();
            key == "type"
                || (kind == Some("command")
                    && (["command", "async"].contains(&key)
                        || CODEX_OPTIONAL.iter().any(|(k, _, _)| *k == key)))
        }
        _ => false,
    }
}

/// The groups holding one of polisd's handlers for `cli`: (event, group).
fn our_groups(cli: Cli, root: &Value) -> Vec<(&str, &Value)> {
    let Some(events) = root.get("hooks").and_then(Value::as_object) else {
        return Vec::new();
    };
    events
        .iter()
        .filter_map(|(event, groups)| Some((event.as_str(), groups.as_array()?)))
        .flat_map(|(event, groups)| groups.iter().map(move |g| (event, g)))
        .filter(|(_, g)| {
            g.get("hooks").and_then(Value::as_array).is_some_and(|hs| {
                hs.iter().any(|h| {
                    h.get("command")
                        .and_then(Value::as_str)
                        .is_some_and(|c| is_ours(c, cli))
                })
            })
        })
        .collect()
}

fn codex(path: &str, doc: &Doc, root: &Value) -> Skipped {
    if let Some(d) = codex_repeated(doc, root) {
        return Skipped::whole(repeated_line(path, d));
    }
    if let Some(reason) = codex_refusal(root) {
        return Skipped::whole(format!(
            "{path}: Codex CLI refuses the whole file ({reason}) and runs none of its hooks: fix that (it takes only `hooks` and `description` at the top)"
        ));
    }
    let mut out = Vec::new();
    for (event, group) in our_groups(Cli::Codex, root) {
        let Some(matcher) = group.get("matcher").and_then(Value::as_str) else {
            continue;
        };
        if takes_matcher(event) && !codex_matcher_valid(matcher) {
            out.push(format!(
                "{path}: Codex CLI skips polisd's {event} group, whose matcher {} is not a valid regex: use \"*\" (every tool) or a valid pattern",
                quoted(matcher)
            ));
        }
    }
    Skipped {
        reasons: out,
        whole: false,
    }
}

/// Codex's test of a matcher: every occurrence (`*`, empty), plain names joined by `|`, else
/// a regex its engine compiles.
fn codex_matcher_valid(matcher: &str) -> bool {
    matcher.is_empty()
        || matcher == "*"
        || matcher
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '|')
        || regex::Regex::new(matcher).is_ok()
}

/// What makes Codex refuse the file as a whole, as its typed reading of it would say: the
/// first key or value it does not take.
fn codex_refusal(root: &Value) -> Option<String> {
    let Value::Object(top) = root else {
        return None;
    };
    if let Some(key) = top
        .keys()
        .find(|k| !["hooks", "description"].contains(&k.as_str()))
    {
        return Some(format!("unknown key `{key}`"));
    }
    if let Some(d) = top
        .get("description")
        .filter(|d| !d.is_null() && !d.is_string())
    {
        return Some(format!("`description` is {}, not text", kind(d)));
    }
    let hooks = match top.get("hooks") {
        None => return None,
        Some(Value::Object(events)) => events,
        Some(other) => return Some(format!("`hooks` is {}, not an object", kind(other))),
    };
    // Codex ignores an event it does not know, whatever it holds.
    for (event, groups) in hooks
        .iter()
        .filter(|(e, _)| CODEX_EVENTS.contains(&e.as_str()))
    {
        let at = format!("hooks.{event}");
        let Value::Array(groups) = groups else {
            return Some(format!("`{at}` is {}, not a list", kind(groups)));
        };
        for (g, group) in groups.iter().enumerate() {
            let at = format!("{at}[{g}]");
            let Value::Object(group) = group else {
                return Some(format!("`{at}` is {}, not an object", kind(group)));
            };
            if let Some(m) = group
                .get("matcher")
                .filter(|m| !m.is_null() && !m.is_string())
            {
                return Some(format!("`{at}.matcher` is {}, not text", kind(m)));
            }
            let handlers = match group.get("hooks") {
                None => continue,
                Some(Value::Array(handlers)) => handlers,
                Some(other) => return Some(format!("`{at}.hooks` is {}, not a list", kind(other))),
            };
            for (h, handler) in handlers.iter().enumerate() {
                if let Some(reason) = codex_handler_refusal(handler) {
                    return Some(format!("`{at}.hooks[{h}]` {reason}"));
                }
            }
        }
    }
    None
}

/// A handler's field: its key, whether a value fits, and what fits, for people.
type Field = (&'static str, fn(&Value) -> bool, &'static str);

/// The optional fields of a command handler Codex reads.
const CODEX_OPTIONAL: [Field; 5] = [
    ("commandWindows", Value::is_string, "text"),
    ("command_windows", Value::is_string, "text"),
    ("timeout", Value::is_u64, "a whole number of seconds"),
    ("statusMessage", Value::is_string, "text"),
    ("additionalContextLimit", fits_i64, "a whole number"),
];

/// Why Codex would not take one handler: its `type` (`command`, `prompt` or `agent`), and
/// for a command the types of the fields it reads.
fn codex_handler_refusal(handler: &Value) -> Option<String> {
    let Value::Object(fields) = handler else {
        return Some(format!("is {}, not an object", kind(handler)));
    };
    match fields.get("type") {
        None => return Some("has no `type`".into()),
        Some(Value::String(t)) if t == "command" => {}
        Some(Value::String(t)) if t == "prompt" || t == "agent" => return None,
        Some(Value::String(t)) => {
            return Some(format!(
                "has `type` {}, not \"command\", \"prompt\" or \"agent\"",
                quoted(t)
            ))
        }
        Some(other) => return Some(format!("has a `type` that is {}", kind(other))),
    }
    match fields.get("command") {
        Some(Value::String(_)) => {}
        None => return Some("has no `command`".into()),
        Some(other) => return Some(format!("has a `command` that is {}", kind(other))),
    }
    for (key, fits, wanted) in CODEX_OPTIONAL {
        match fields.get(key) {
            None | Some(Value::Null) => {}
            Some(v) if fits(v) => {}
            Some(v) => return Some(format!("has a `{key}` that is {}, not {wanted}", kind(v))),
        }
    }
    match fields.get("async") {
        None | Some(Value::Bool(_)) => None,
        Some(v) => Some(format!(
            "has an `async` that is {}, not true or false",
            kind(v)
        )),
    }
}

/// The permission modes Claude Code 2.1.332 takes (`manual` is its old name for `default`).
const CLAUDE_MODES: [&str; 7] = [
    "acceptEdits",
    "auto",
    "bypassPermissions",
    "default",
    "dontAsk",
    "plan",
    "manual",
];

fn claude(path: &str, root: &Value) -> Skipped {
    let mut out = Vec::new();
    let refusal = claude_refusal(root);
    let whole = refusal.is_some();
    if let Some(reason) = refusal {
        out.push(format!(
            "{path}: Claude Code skips the whole file, its hooks too, for {reason}: fix it (`claude` shows the settings errors at start)"
        ));
    }
    for (event, group) in our_groups(Cli::Claude, root) {
        let Some(matcher) = group.get("matcher").and_then(Value::as_str) else {
            continue;
        };
        let plain = matcher.is_empty()
            || matcher == "*"
            || matcher
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "_|, -".contains(c));
        if !plain && !js_regex_valid(matcher) {
            out.push(format!(
                "{path}: Claude Code finds polisd's {event} matcher {} no valid regex, so the group never runs: use \"*\" (every tool) or a valid pattern",
                quoted(matcher)
            ));
        }
    }
    Skipped {
        reasons: out,
        whole,
    }
}

/// The first error Claude Code's schema finds in the settings a team commonly edits.
fn claude_refusal(root: &Value) -> Option<String> {
    let strings = |v: &Value| v.as_array().is_some_and(|a| a.iter().all(Value::is_string));
    if let Some(m) = root.get("model").filter(|m| !m.is_string()) {
        return Some(format!("`model`, which is {}, not text", kind(m)));
    }
    if let Some(reason) = claude_hooks_refusal(root) {
        return Some(reason);
    }
    let permissions = root.get("permissions")?;
    let Value::Object(permissions) = permissions else {
        return Some(format!(
            "`permissions`, which is {}, not an object",
            kind(permissions)
        ));
    };
    if let Some(mode) = permissions.get("defaultMode") {
        if !mode.as_str().is_some_and(|m| CLAUDE_MODES.contains(&m)) {
            return Some(format!(
                "`permissions.defaultMode` {}, not one of {}",
                serde_json::to_string(mode).unwrap_or_default(),
                CLAUDE_MODES[..6].join(", ")
            ));
        }
    }
    ["allow", "deny", "ask"].into_iter().find_map(|key| {
        let list = permissions.get(key)?;
        (!strings(list)).then(|| format!("`permissions.{key}`, which is not a list of rules"))
    })
}

/// The handler types Claude Code 2.1.332 takes.
const CLAUDE_TYPES: [&str; 5] = ["command", "prompt", "agent", "http", "mcp_tool"];

/// A hook handler anywhere in the file that Claude Code's schema refuses, which skips the
/// file: a `type` it does not know, a `timeout` that is not a number.
fn claude_hooks_refusal(root: &Value) -> Option<String> {
    let events = root.get("hooks")?.as_object()?;
    for (event, groups) in events {
        for (g, group) in groups.as_array().into_iter().flatten().enumerate() {
            let at = format!("hooks.{event}[{g}]");
            let handlers = group.get("hooks").and_then(Value::as_array);
            for (h, handler) in handlers.into_iter().flatten().enumerate() {
                let at = format!("{at}.hooks[{h}]");
                // A handler without a type, or a matcher that is not text, it takes.
                let unknown = handler
                    .get("type")
                    .and_then(Value::as_str)
                    .is_some_and(|t| !CLAUDE_TYPES.contains(&t));
                if unknown {
                    return Some(format!(
                        "`{at}.type`, which is not one of {}",
                        CLAUDE_TYPES.join(", ")
                    ));
                }
                if let Some(t) = handler.get("timeout").filter(|t| !t.is_number()) {
                    return Some(format!(
                        "`{at}.timeout`, which is {}, not a number",
                        kind(t)
                    ));
                }
            }
        }
    }
    None
}

fn gemini(path: &str, root: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for (event, group) in our_groups(Cli::Gemini, root) {
        let Some(matcher) = group.get("matcher").and_then(Value::as_str) else {
            continue;
        };
        let m = matcher.trim();
        if m.is_empty() || m == "*" {
            continue;
        }
        // How Gemini CLI compares the matcher, where that can never match.
        let how = match event {
            "SessionStart" if !["startup", "resume", "clear"].contains(&m) => {
                "compares it with the session's source (startup, resume or clear) as plain text"
            }
            // A pattern JavaScript refuses is compared as text.
            "AfterTool" if !js_regex_valid(m) => {
                "finds it no valid regex and compares it with a tool's name as plain text"
            }
            _ => continue,
        };
        out.push(format!(
            "{path}: Gemini CLI {how}, so polisd's {event} group (matcher {}) never runs: remove the matcher or use \"*\"",
            quoted(matcher)
        ));
    }
    out
}

/// Whether JavaScript's `RegExp` takes `pattern`, as far as Rust's engine can tell: a pattern
/// with what only JavaScript has (look-around, back-references) is taken as valid.
fn js_regex_valid(pattern: &str) -> bool {
    let js_only = ["(?=", "(?!", "(?<=", "(?<!", "\\1", "\\k<"];
    js_only.iter().any(|s| pattern.contains(s)) || regex::Regex::new(pattern).is_ok()
}

fn quoted(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_default()
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "text",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::delivery::agent_hooks::install;

    type EditFn = Box<dyn FnOnce(&mut Value)>;

    fn edited(cli: Cli, edit: impl FnOnce(&mut Value)) -> String {
        let mut v: Value = serde_json::from_str(&install(cli, None, "polisd").unwrap()).unwrap();
        edit(&mut v);
        v.to_string()
    }

    #[test]
    fn polisd_s_own_files_are_clean() {
        for cli in Cli::ALL {
            let text = install(cli, None, "polisd").unwrap();
            assert_eq!(
                skipped(cli, cli.settings_path(), Some(&text)).reasons,
                Vec::<String>::new()
            );
        }
        assert!(skipped(Cli::Codex, "x", Some("not json"))
            .reasons
            .is_empty());
        assert!(skipped(Cli::Codex, "x", None).reasons.is_empty());
    }

    #[test]
    fn codex_refuses_a_file_with_an_unknown_top_level_key_or_a_mistyped_value() {
        let p = ".codex/hooks.json";
        let cases: Vec<(EditFn, &str)> = vec![
            (
                Box::new(|v| v["$schema"] = "https://x".into()),
                "unknown key `$schema`",
            ),
            (
                Box::new(|v| {
                    v["hooks"]["PreToolUse"] = serde_json::json!([{"matcher": "Bash",
                        "hooks": [{"type": "command", "command": "x", "timeout": "30"}]}])
                }),
                "`hooks.PreToolUse[0].hooks[0]` has a `timeout` that is text",
            ),
            (
                Box::new(|v| {
                    v["hooks"]["Stop"] = serde_json::json!([{"hooks": [{"type": "http"}]}])
                }),
                "`type` \"http\"",
            ),
            (
                Box::new(|v| v["hooks"]["SessionStart"][0]["hooks"][0]["async"] = "no".into()),
                "`async`",
            ),
        ];
        for (edit, said) in cases {
            let reasons = skipped(Cli::Codex, p, Some(&edited(Cli::Codex, edit))).reasons;
            assert_eq!(reasons.len(), 1, "{reasons:?}");
            assert!(reasons[0].contains(said), "{said}: {reasons:?}");
            assert!(reasons[0].contains("refuses the whole file"));
        }
        // What Codex ignores: an event it does not know, a group's or a prompt handler's
        // own keys, a null value.
        let ignored = edited(Cli::Codex, |v| {
            v["description"] = "the team's hooks".into();
            v["hooks"]["Notification"] = serde_json::json!({"anything": 1});
            v["hooks"]["PreToolUse"] = serde_json::json!([{"matcher": null, "note": 1,
                "hooks": [{"type": "prompt", "prompt": 3},
                          {"type": "command", "command": "x", "timeout": null, "name": "n"}]}]);
        });
        assert_eq!(
            skipped(Cli::Codex, p, Some(&ignored)).reasons,
            Vec::<String>::new()
        );
    }

    #[test]
    fn codex_refuses_a_file_that_repeats_a_key_it_reads_and_skips_one_it_does_not() {
        let p = ".codex/hooks.json";
        let installed = install(Cli::Codex, None, "polisd").unwrap();
        // Each as the real Codex CLI 0.171.0 took it (`hooks/list` of its app server).
        let refused = [
            (
                "\"hooks\": {",
                "\"hooks\": {}, \"hooks\": {",
                "`hooks` appears twice in the top-level object",
                2,
            ),
            (
                "\"SessionStart\": [",
                "\"SessionStart\": [],\n\"SessionStart\": [",
                "`SessionStart` appears twice in `hooks`",
                4,
            ),
            (
                "\"timeout\": 10",
                "\"timeout\": 10, \"timeout\": 5",
                "`timeout` appears twice in `hooks.SessionStart[0].hooks[0]`",
                9,
            ),
            (
                "\"type\": \"command\"",
                "\"type\": \"command\", \"type\": \"command\"",
                "`type` appears twice",
                7,
            ),
        ];
        for (from, to, said, line) in refused {
            let text = installed.replacen(from, to, 1);
            let Skipped { reasons, whole } = skipped(Cli::Codex, p, Some(&text));
            assert_eq!(reasons.len(), 1, "{text}: {reasons:?}");
            assert!(reasons[0].contains(said), "{said}: {reasons:?}");
            assert!(
                reasons[0].starts_with(&format!("{p} line {line}: ")),
                "{reasons:?}"
            );
            assert!(whole);
            assert_eq!(
                refused_edit(Cli::Codex, p, Some(&text)).as_ref(),
                reasons.first()
            );
        }
        let ignored = [
            ("\"timeout\": 10", "\"timeout\": 10, \"name\": \"a\", \"name\": \"b\""),
            ("\"hooks\": {", "\"hooks\": {\"Notification\": [], \"Notification\": 1,"),
            ("\"hooks\": {", "\"hooks\": {\"Stop\": [{\"hooks\": [{\"type\": \"prompt\", \"prompt\": \"a\", \"prompt\": \"b\"}]}],"),
        ];
        for (from, to) in ignored {
            let text = installed.replacen(from, to, 1);
            assert_eq!(
                skipped(Cli::Codex, p, Some(&text)),
                Skipped::default(),
                "{text}"
            );
        }
        // Claude Code and Gemini CLI read such a file as JSON.parse does: the last one wins.
        let text = installed.replacen("\"timeout\": 10", "\"timeout\": 10, \"timeout\": 5", 1);
        assert!(skipped(Cli::Claude, p, Some(&text)).reasons.is_empty());
    }

    #[test]
    fn a_byte_order_mark_is_refused_by_codex_and_gemini_and_not_by_claude() {
        for cli in Cli::ALL {
            let path = cli.settings_path();
            let marked = format!("\u{feff}{}", edited(cli, |_| {}));
            let refused = cli != Cli::Claude;
            let Skipped { reasons, whole } = skipped(cli, path, Some(&marked));
            assert_eq!(whole, refused, "{cli:?}");
            assert_eq!(refused_edit(cli, path, Some(&marked)).is_some(), refused);
            assert_eq!(reasons.len(), usize::from(refused), "{reasons:?}");
            assert!(reasons.iter().all(|r| r.contains("byte-order mark")));
        }
    }

    #[test]
    fn codex_skips_a_group_whose_matcher_is_no_regex() {
        let p = ".codex/hooks.json";
        let bad = edited(Cli::Codex, |v| {
            v["hooks"]["PostToolUse"][0]["matcher"] = "Edit(".into()
        });
        let reasons = skipped(Cli::Codex, p, Some(&bad)).reasons;
        assert_eq!(reasons.len(), 1, "{reasons:?}");
        assert!(reasons[0].contains("PostToolUse") && reasons[0].contains("\"Edit(\""));
        for fine in ["", "*", "Edit|Write", "mcp__.*", "^Bash$"] {
            let ok = edited(Cli::Codex, |v| {
                v["hooks"]["PostToolUse"][0]["matcher"] = fine.into()
            });
            assert!(
                skipped(Cli::Codex, p, Some(&ok)).reasons.is_empty(),
                "{fine}"
            );
        }
        // UserPromptSubmit takes no matcher: Codex ignores it.
        let ignored = edited(Cli::Codex, |v| {
            v["hooks"]["UserPromptSubmit"][0]["matcher"] = "[".into()
        });
        assert!(skipped(Cli::Codex, p, Some(&ignored)).reasons.is_empty());
    }

    #[test]
    fn claude_skips_a_file_its_schema_refuses_and_a_group_whose_matcher_is_no_regex() {
        let p = ".claude/settings.json";
        let whole: Vec<(EditFn, &str)> = vec![
            (Box::new(|v| v["model"] = 5.into()), "`model`"),
            (
                Box::new(|v| v["permissions"] = serde_json::json!({"defaultMode": "bogus"})),
                "`permissions.defaultMode` \"bogus\"",
            ),
            (
                Box::new(|v| v["permissions"] = serde_json::json!({"allow": "Bash(ls:*)"})),
                "`permissions.allow`",
            ),
            (
                Box::new(|v| {
                    v["hooks"]["PreToolUse"] = serde_json::json!([{"matcher": "Bash",
                        "hooks": [{"type": "command", "command": "x", "timeout": "30"}]}])
                }),
                "`hooks.PreToolUse[0].hooks[0].timeout`",
            ),
            (
                Box::new(|v| {
                    v["hooks"]["Stop"] = serde_json::json!([{"hooks": [{"type": "bogus"}]}])
                }),
                "`hooks.Stop[0].hooks[0].type`",
            ),
        ];
        for (edit, said) in whole {
            let Skipped { reasons, whole } =
                skipped(Cli::Claude, p, Some(&edited(Cli::Claude, edit)));
            assert_eq!(reasons.len(), 1, "{reasons:?}");
            assert!(whole, "{said}");
            assert!(reasons[0].contains(said), "{said}: {reasons:?}");
        }
        let fine = edited(Cli::Claude, |v| {
            v["permissions"] = serde_json::json!({"defaultMode": "plan", "allow": ["Read"]});
            v["teamNote"] = "kept".into();
            v["env"] = serde_json::json!({"A": 1});
            v["hooks"]["Stop"] = serde_json::json!([{"matcher": 3, "hooks": [{"command": "x"}]}]);
        });
        assert_eq!(
            skipped(Cli::Claude, p, Some(&fine)).reasons,
            Vec::<String>::new()
        );
        let bad = edited(Cli::Claude, |v| {
            v["hooks"]["SessionStart"][0]["matcher"] = "[".into()
        });
        assert!(
            skipped(Cli::Claude, p, Some(&bad)).reasons[0].contains("SessionStart matcher \"[\"")
        );
        let plain = edited(Cli::Claude, |v| {
            v["hooks"]["PostToolUse"][0]["matcher"] = "Edit, Write".into()
        });
        assert!(skipped(Cli::Claude, p, Some(&plain)).reasons.is_empty());
    }

    #[test]
    fn gemini_never_runs_a_group_whose_matcher_cannot_match() {
        let p = ".gemini/settings.json";
        for (event, matcher, never) in [
            ("SessionStart", "startup|resume", true),
            ("SessionStart", "startup", false),
            ("SessionStart", " * ", false),
            ("AfterTool", "[", true),
            ("AfterTool", "read_.*", false),
            ("AfterTool", "(?<!x)y", false),
        ] {
            let text = edited(Cli::Gemini, |v| {
                v["hooks"][event][0]["matcher"] = matcher.into()
            });
            let reasons = skipped(Cli::Gemini, p, Some(&text)).reasons;
            assert_eq!(reasons.len(), usize::from(never), "{matcher}: {reasons:?}");
        }
    }
}
