//! Whether Codex CLI trusts polisd's hooks, and so runs them. Codex runs a project hook only
//! once the person approved it in its interactive review (`codex exec` skips the others without
//! a word). Its record is in the user's config (`$CODEX_HOME/config.toml`, by default
//! `~/.codex/config.toml`): a table `[hooks.state."<hooks file>:<event>:<group>:<handler>"]`
//! per handler, keyed by the hooks file's absolute path, the event in snake case and the
//! handler's place in the file (both from 0), holding `trusted_hash` (Codex's hash of its own
//! normalised form of the handler) and, once the person switched it in `/hooks`, `enabled`.
//!
//! A handler runs only while that hash is the hash of the handler as it is now: polisd
//! computes it as Codex CLI 0.171.0 does ([`handler_hash`]) and reports a handler changed
//! since its approval. Where it cannot hash a handler as Codex would, it says nothing of it.
//! Trust is reported, never given: polisd never writes Codex's config.
//! Pure: the caller reads the files and canonicalises the paths.

use crate::protocol::delivery::agent_hooks::{is_ours, Cli};
use std::path::{Path, PathBuf};

/// What decides the trust, as the caller read it.
#[derive(Debug, Clone)]
pub struct TrustInputs<'a> {
    /// The project's `.codex/hooks.json`, as it is or as polisd is about to write it.
    pub hooks: &'a str,
    /// Its absolute path, canonical.
    pub hooks_path: &'a Path,
    /// The user's Codex config, shown as `shown`; `None` when there is none.
    pub config: Option<&'a str>,
    pub shown: &'a str,
}

/// One of polisd's handlers in the hooks file: its event, Codex's name for its place, and
/// Codex's hash of it (`None` when Codex would not hash it).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Place {
    event: String,
    key: String,
    hash: Option<String>,
}

/// polisd's handlers in a hooks file, with the suffix of their Codex key
/// (`<event>:<group>:<handler>`). A file that is not JSON names none.
fn places(hooks: &str) -> Vec<Place> {
    let text = hooks.strip_prefix('\u{feff}').unwrap_or(hooks);
    let Ok(root) = serde_json::from_str::<serde_json::Value>(text) else {
        return Vec::new();
    };
    let Some(events) = root.get("hooks").and_then(|h| h.as_object()) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (event, groups) in events {
        let Some(groups) = groups.as_array() else {
            continue;
        };
        for (g, group) in groups.iter().enumerate() {
            let Some(handlers) = group.get("hooks").and_then(|h| h.as_array()) else {
                continue;
            };
            for (h, handler) in handlers.iter().enumerate() {
                let command = handler.get("command").and_then(|c| c.as_str());
                if command.is_some_and(|c| is_ours(c, Cli::Codex)) {
                    out.push(Place {
                        event: event.clone(),
                        key: format!("{}:{g}:{h}", snake_case(event)),
                        hash: handler_hash(event, group, handler),
                    });
                }
            }
        }
    }
    out
}

/// The events Codex CLI 0.171.0 reads from a hooks file; it ignores any other.
pub const CODEX_EVENTS: [&str; 12] = [
    "PreToolUse",
    "PermissionRequest",
    "PostToolUse",
    "PreCompact",
    "PostCompact",
    "SessionStart",
    "SessionEnd",
    "UserPromptSubmit",
    "SubagentStart",
    "SubagentStop",
    "Stop",
    "Interrupt",
];

/// Codex CLI's hash of a command handler of `event` in `group`, as it records it in
/// `trusted_hash` and compares it on every start (Codex CLI 0.171.0): SHA-256 of the compact
/// JSON, keys sorted, of `{event_name, matcher, hooks: [handler]}` where the event is in snake
/// case, the matcher is the group's (dropped for the events that take none) and the handler
/// holds only the fields Codex reads, normalised: `type`, `command`, `timeout` (its default
/// filled in, at least 1), `async`, and `statusMessage` and `additionalContextLimit` when set;
/// an absent value is left out, not written as null. `None` for a handler Codex would not hash:
/// not a command, an event it ignores, or a value of a type it would refuse.
pub fn handler_hash(
    event: &str,
    group: &serde_json::Value,
    handler: &serde_json::Value,
) -> Option<String> {
    use serde_json::Value;
    use std::collections::BTreeMap;
    if !CODEX_EVENTS.contains(&event) || handler.get("type")?.as_str()? != "command" {
        return None;
    }
    // A value absent or null is unset; one of another type makes Codex refuse the file.
    let optional = |value: Option<&Value>, keep: fn(&Value) -> bool| match value {
        None | Some(Value::Null) => Some(None),
        Some(v) => keep(v).then(|| Some(v.clone())),
    };
    // Codex runs the Windows command, when there is one, only on Windows.
    let windows = optional(handler.get("commandWindows"), Value::is_string)?;
    let command = match windows {
        Some(w) if cfg!(windows) => w,
        _ => handler.get("command").filter(|c| c.is_string())?.clone(),
    };
    // An empty command is skipped, never run nor listed.
    if command.as_str()?.trim().is_empty() {
        return None;
    }
    let timeout = optional(handler.get("timeout"), Value::is_u64)?.and_then(|t| t.as_u64());
    let timeout = match event {
        "SessionEnd" | "Interrupt" => timeout.unwrap_or(1).clamp(1, 3),
        _ => timeout.unwrap_or(600).max(1),
    };
    let limit = optional(handler.get("additionalContextLimit"), fits_i64)?;
    let asynchronous = match handler.get("async") {
        None => false,
        Some(v) => v.as_bool()?,
    };
    let mut form: BTreeMap<&str, Value> = BTreeMap::new();
    form.insert("type", Value::from("command"));
    form.insert("command", command);
    form.insert("timeout", Value::from(i64::try_from(timeout).ok()?));
    form.insert("async", Value::Bool(asynchronous));
    if let Some(message) = optional(handler.get("statusMessage"), Value::is_string)? {
        form.insert("statusMessage", message);
    }
    if let Some(limit) = limit {
        form.insert("additionalContextLimit", limit);
    }
    let mut identity: BTreeMap<&str, Value> = BTreeMap::new();
    identity.insert("event_name", Value::from(snake_case(event)));
    identity.insert(
        "hooks",
        Value::Array(vec![serde_json::to_value(form).ok()?]),
    );
    if let Some(matcher) = optional(group.get("matcher"), Value::is_string)? {
        if takes_matcher(event) {
            identity.insert("matcher", matcher);
        }
    }
    // Maps serialise their keys sorted (a BTreeMap, whatever serde_json's features).
    let bytes = serde_json::to_vec(&identity).ok()?;
    Some(format!(
        "sha256:{}",
        crate::protocol::digest::sha256_hex(&bytes)
    ))
}

/// Whether Codex reads a group's matcher on `event`: it ignores one on the events that take
/// none.
pub fn takes_matcher(event: &str) -> bool {
    !matches!(event, "UserPromptSubmit" | "Stop" | "Interrupt")
}

/// Whether Codex takes `value` where it wants a whole number it passes through TOML, whose
/// integers stop at i64::MAX.
pub fn fits_i64(value: &serde_json::Value) -> bool {
    value.as_u64().is_some_and(|n| i64::try_from(n).is_ok())
}

/// `PostToolUse` → `post_tool_use`, as Codex names an event in its keys.
fn snake_case(event: &str) -> String {
    let mut out = String::new();
    for (i, c) in event.chars().enumerate() {
        if c.is_ascii_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// What the config says of one handler: the hash of the form the person approved, if any,
/// and whether they switched it off.
#[derive(Debug, Default, Clone)]
struct State {
    trusted: Option<String>,
    off: bool,
}

impl State {
    /// Approved, but in another form than `place` has now: Codex skips it until the person
    /// approves it again. Unknown when polisd cannot hash the handler as Codex does.
    fn stale(&self, place: &Place) -> bool {
        matches!((&self.trusted, &place.hash), (Some(t), Some(h)) if t != h)
    }
}

/// Why Codex CLI will not run some of polisd's hooks for this person: one line for the hooks
/// switched off, one for those it has no trust for, one for those changed since the person
/// approved them. Empty when it runs them all, or when the
/// config says something polisd cannot read with certainty (not TOML: Codex reports that
/// itself; a key for this hooks file in a form polisd does not know).
pub fn untrusted(inputs: &TrustInputs<'_>, canonical: &dyn Fn(&Path) -> PathBuf) -> Vec<String> {
    let ours = places(inputs.hooks);
    if ours.is_empty() {
        return Vec::new();
    }
    let states = match inputs.config {
        None => Some(Vec::new()),
        Some(text) => states(text, inputs.hooks_path, canonical),
    };
    let Some(states) = states else {
        return Vec::new();
    };
    let state_of = |place: &Place| {
        states
            .iter()
            .find(|(key, _)| *key == place.key)
            .map(|(_, s)| s.clone())
            .unwrap_or_default()
    };
    let events = |pick: &dyn Fn(&Place, State) -> bool| {
        let mut names: Vec<&str> = ours
            .iter()
            .filter(|p| pick(p, state_of(p)))
            .map(|p| p.event.as_str())
            .collect();
        // In the order polisd installs them (the parsed file's keys come sorted).
        let rank = |e: &str| Cli::Codex.events().iter().position(|(n, _)| *n == e);
        names.sort_by_key(|e| (rank(e).is_none(), rank(e)));
        names.dedup();
        names.join(", ")
    };
    let mut out = Vec::new();
    let off = events(&|_, s| s.off);
    if !off.is_empty() {
        out.push(format!(
            "{} switches polisd's {off} hook(s) off (`enabled = false` under `[hooks.state]`): Codex runs them once they are turned on again in `codex`'s /hooks",
            inputs.shown
        ));
    }
    let untrusted = events(&|_, s| !s.off && s.trusted.is_none());
    if !untrusted.is_empty() {
        out.push(format!(
            "Codex CLI runs a project's hooks only once the person trusted them, and {} has no trust for polisd's {untrusted} hook(s) in {}: start `codex` in the project and approve the hooks it lists (`codex exec` skips untrusted hooks without a word)",
            inputs.shown,
            inputs.hooks_path.display()
        ));
    }
    let stale = events(&|p, s| !s.off && s.stale(p));
    if !stale.is_empty() {
        out.push(format!(
            "polisd's {stale} hook(s) in {} changed since the person approved them in Codex CLI ({} holds the hash of the approved form), and Codex skips a changed hook until it is approved again (`codex exec` without a word): start `codex` in the project and approve them again in /hooks",
            inputs.hooks_path.display(),
            inputs.shown,
        ));
    }
    out
}

/// Why Codex CLI runs none of the project's hooks for this person: its config records no
/// trust for the project, or marks it untrusted. The record nearest the project counts (the
/// project's folder, else the nearest folder above it, as for a git clone's root). `None` when
/// the project is trusted, or the config is not TOML (Codex reports that itself).
pub fn project_untrusted(
    config: Option<&str>,
    project_root: &Path,
    shown: &str,
    canonical: &dyn Fn(&Path) -> PathBuf,
) -> Option<String> {
    let table: toml::Table = match config {
        None => toml::Table::new(),
        Some(text) => toml::from_str(text).ok()?,
    };
    // Each recorded folder resolved once, with its trust level.
    let levels: Vec<(PathBuf, &str)> = table
        .get("projects")
        .and_then(|p| p.as_table())
        .into_iter()
        .flatten()
        .filter_map(|(key, value)| {
            let level = value.get("trust_level")?.as_str()?;
            Some((canonical(Path::new(key.trim())), level))
        })
        .collect();
    let level_of = |folder: &Path| {
        levels
            .iter()
            .find(|(recorded, _)| recorded == folder)
            .map(|(_, level)| *level)
    };
    let root = project_root.display();
    match project_root.ancestors().find_map(level_of) {
        Some("trusted") => None,
        Some("untrusted") => Some(format!(
            "{shown} marks the project `trust_level = \"untrusted\"`, so Codex CLI reads none of its `.codex/` files and runs none of its hooks: set it to \"trusted\" under `[projects.\"{root}\"]` (`codex exec --trust` does not override an explicit \"untrusted\")"
        )),
        _ => Some(format!(
            "Codex CLI runs a project's hooks only in a project the person trusted, and {shown} records no trust for {root}: start `codex` in the project and trust it, or run `codex exec --trust` there once"
        )),
    }
}

/// The `[hooks.state]` entries of a config that name `hooks_path`, by key suffix; `None` when
/// the config cannot be read with certainty.
fn states(
    config: &str,
    hooks_path: &Path,
    canonical: &dyn Fn(&Path) -> PathBuf,
) -> Option<Vec<(String, State)>> {
    let table: toml::Table = toml::from_str(config).ok()?;
    let Some(entries) = table
        .get("hooks")
        .and_then(|h| h.get("state"))
        .and_then(|s| s.as_table())
    else {
        return Some(Vec::new());
    };
    let shown = hooks_path.to_string_lossy();
    let mut out = Vec::new();
    for (key, value) in entries {
        let key = key.trim();
        let parsed = split_key(key).filter(|(path, _)| canonical(Path::new(path)) == hooks_path);
        let Some((_, suffix)) = parsed else {
            // A key that names this file in another form: Codex changed its keys, so polisd
            // cannot tell which hook it is about.
            if key.contains(shown.as_ref()) {
                return None;
            }
            continue;
        };
        let state = State {
            trusted: value
                .get("trusted_hash")
                .and_then(|h| h.as_str())
                .map(str::to_string),
            off: value.get("enabled").and_then(|e| e.as_bool()) == Some(false),
        };
        out.push((suffix.to_string(), state));
    }
    Some(out)
}

/// `<path>:<event>:<group>:<handler>` split into the path and the rest; the path may hold
/// colons, the rest does not.
fn split_key(key: &str) -> Option<(&str, &str)> {
    let mut cut = key.len();
    for _ in 0..3 {
        cut = key[..cut].rfind(':')?;
    }
    let (path, rest) = (&key[..cut], &key[cut + 1..]);
    let mut parts = rest.split(':');
    let event = parts.next()?;
    let numbers = parts.all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
    (!path.is_empty() && !event.is_empty() && numbers).then_some((path, rest))
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOOKS: &str = r#"{"hooks": {
        "SessionStart": [{"hooks": [{"type": "command", "command": "polisd hook codex prime"}]}],
        "PostToolUse": [
            {"matcher": "Bash", "hooks": [{"type": "command", "command": "./lint.sh"}]},
            {"matcher": "*", "hooks": [{"type": "command", "command": "polisd hook codex notices"}]}
        ],
        "UserPromptSubmit": [{"hooks": [
            {"type": "command", "command": "./audit.sh"},
            {"type": "command", "command": "/opt/bin/polisd hook codex notices --interval 0"}
        ]}]
    }}"#;

    /// Codex CLI 0.171.0's hashes of polisd's three handlers in `HOOKS` (`hooks/list`).
    const PRIME: &str =
        "trusted_hash = \"sha256:01c15a7490e3cab93bc9836d8f55b626990ed28630c69874cd6b074571d46f6f\"";
    const NOTICES: &str =
        "trusted_hash = \"sha256:0b00590533c8236557541f47958007da56c71f0f1406b860650025912da2012d\"";
    const PROMPT: &str =
        "trusted_hash = \"sha256:f29a93402cb270298a9445de12759bf495df03b39b9fe5476960f77f4361065d\"";

    fn check(config: Option<&str>) -> Vec<String> {
        let inputs = TrustInputs {
            hooks: HOOKS,
            hooks_path: Path::new("/p/.codex/hooks.json"),
            config,
            shown: "~/.codex/config.toml",
        };
        // `/link` stands for `/p` through a symbolic link.
        untrusted(&inputs, &|p: &Path| match p.strip_prefix("/link") {
            Ok(rest) => Path::new("/p").join(rest),
            Err(_) => p.to_path_buf(),
        })
    }

    fn entry(key: &str, body: &str) -> String {
        format!("[hooks.state.\"{key}\"]\n{body}\n")
    }

    #[test]
    fn keys_name_polisds_handlers_by_event_group_and_place() {
        let mut keys: Vec<String> = places(HOOKS).into_iter().map(|p| p.key).collect();
        keys.sort();
        assert_eq!(
            keys,
            [
                "post_tool_use:1:0",
                "session_start:0:0",
                "user_prompt_submit:0:1"
            ]
        );
        assert_eq!(
            split_key("/a:b/hooks.json:session_start:0:12"),
            Some(("/a:b/hooks.json", "session_start:0:12"))
        );
        assert_eq!(split_key("/a/hooks.json:session_start:x:0"), None);
        assert_eq!(split_key("session_start:0:0"), None);
    }

    #[test]
    fn a_handler_without_a_trusted_hash_is_untrusted() {
        // No config, or one without any record: all three.
        for config in [None, Some("model = \"gpt-5\"\n")] {
            let out = check(config);
            assert_eq!(out.len(), 1, "{out:?}");
            assert!(
                out[0].contains("SessionStart, PostToolUse, UserPromptSubmit"),
                "{out:?}"
            );
            assert!(out[0].contains("approve the hooks it lists"), "{out:?}");
        }
        // Trust recorded for polisd's places (through a link for one), each for its form.
        let all = [
            entry("/p/.codex/hooks.json:session_start:0:0", PRIME),
            entry("/link/.codex/hooks.json:post_tool_use:1:0", NOTICES),
            entry("/p/.codex/hooks.json:user_prompt_submit:0:1", PROMPT),
        ]
        .concat();
        assert_eq!(check(Some(&all)), Vec::<String>::new());
        // Trust for another place (the other tool's hook), another file, or no hash.
        let some = [
            entry("/p/.codex/hooks.json:session_start:0:0", PRIME),
            entry("/p/.codex/hooks.json:post_tool_use:0:0", NOTICES),
            entry("/q/.codex/hooks.json:user_prompt_submit:0:1", PROMPT),
            entry(
                "/p/.codex/hooks.json:user_prompt_submit:0:1",
                "enabled = true",
            ),
        ]
        .concat();
        let out = check(Some(&some));
        assert_eq!(out.len(), 1, "{out:?}");
        assert!(
            out[0].contains("polisd's PostToolUse, UserPromptSubmit hook(s)"),
            "{out:?}"
        );
    }

    #[test]
    fn a_handler_switched_off_is_reported_as_off() {
        // Off is said alone: a changed hook switched off is off first.
        let config = [
            entry(
                "/p/.codex/hooks.json:session_start:0:0",
                "trusted_hash = \"sha256:aa\"\nenabled = false",
            ),
            entry("/p/.codex/hooks.json:post_tool_use:1:0", NOTICES),
            entry("/p/.codex/hooks.json:user_prompt_submit:0:1", PROMPT),
        ]
        .concat();
        let out = check(Some(&config));
        assert_eq!(out.len(), 1, "{out:?}");
        assert!(
            out[0].contains("polisd's SessionStart hook(s) off"),
            "{out:?}"
        );
    }

    #[test]
    fn a_handler_changed_since_its_approval_is_reported_as_changed() {
        // The approval of the form before `--interval 0` for UserPromptSubmit, and of another
        // binary's command for PostToolUse: Codex calls both "modified" and skips them.
        let config = [
            entry("/p/.codex/hooks.json:session_start:0:0", PRIME),
            entry(
                "/p/.codex/hooks.json:post_tool_use:1:0",
                "trusted_hash = \"sha256:d9d7a6c48d7879b65089e6720cd1f42bb84a6a1e6ce5ad3c5cae0031793fd554\"",
            ),
            entry(
                "/p/.codex/hooks.json:user_prompt_submit:0:1",
                "trusted_hash = \"sha256:ba5e0578b686478e2f8a5ff5bda6a7a30f7b42ad0419ec8825c6f49d7c1567e9\"",
            ),
        ]
        .concat();
        let out = check(Some(&config));
        assert_eq!(out.len(), 1, "{out:?}");
        assert!(
            out[0].starts_with(
                "polisd's PostToolUse, UserPromptSubmit hook(s) in /p/.codex/hooks.json changed since the person approved them"
            ),
            "{out:?}"
        );
        assert!(out[0].contains("approve them again in /hooks"), "{out:?}");
        // A handler polisd cannot hash as Codex does is not called changed.
        let odd = HOOKS.replace(
            r#""command": "polisd hook codex prime""#,
            r#""command": "polisd hook codex prime", "timeout": "10""#,
        );
        let inputs = TrustInputs {
            hooks: &odd,
            hooks_path: Path::new("/p/.codex/hooks.json"),
            config: Some(&config),
            shown: "c",
        };
        let out = untrusted(&inputs, &|p: &Path| p.to_path_buf());
        assert!(!out.concat().contains("SessionStart"), "{out:?}");
    }

    #[test]
    fn what_cannot_be_read_with_certainty_says_nothing() {
        // Not TOML: Codex refuses to start and says so itself.
        assert_eq!(check(Some("[hooks\n")), Vec::<String>::new());
        // A key for this file in a form polisd does not know.
        let other = entry(
            "/p/.codex/hooks.json#session_start",
            "trusted_hash = \"sha256:aa\"",
        );
        assert_eq!(check(Some(&other)), Vec::<String>::new());
        // No polisd hooks, or a hooks file that is not JSON.
        let inputs = |hooks| TrustInputs {
            hooks,
            hooks_path: Path::new("/p/.codex/hooks.json"),
            config: None,
            shown: "c",
        };
        let same = |p: &Path| p.to_path_buf();
        assert!(untrusted(&inputs(r#"{"hooks": {}}"#), &same).is_empty());
        assert!(untrusted(&inputs("{not json"), &same).is_empty());
    }

    /// Codex's hash of the handler at `group`/`handler` of `event` in a hooks file.
    fn hash_in(file: &str, event: &str, group: usize, handler: usize) -> Option<String> {
        let root: serde_json::Value = serde_json::from_str(file).unwrap();
        let group = &root["hooks"][event][group];
        handler_hash(event, group, &group["hooks"][handler])
    }

    fn sha(hex: &str) -> Option<String> {
        Some(format!("sha256:{hex}"))
    }

    // Every hash below is what the real Codex CLI 0.171.0 reports for the handler as
    // `currentHash` (`codex app-server`, `hooks/list`), and records as `trusted_hash` when the
    // person approves it.

    #[test]
    fn polisds_own_handlers_hash_as_codex_hashes_them() {
        // What `hooks install --codex` writes, with `--interval 0` on the notices hooks.
        let file = r#"{"hooks": {
            "SessionStart": [{"hooks": [{"type": "command", "command": "polisd hook codex prime", "timeout": 10}]}],
            "PostToolUse": [{"matcher": "*", "hooks": [{"type": "command", "command": "polisd hook codex notices --interval 0", "timeout": 10}]}],
            "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "polisd hook codex notices --interval 0", "timeout": 10}]}]
        }}"#;
        assert_eq!(
            hash_in(file, "SessionStart", 0, 0),
            sha("8bc241722dd4845a7800a49d59563f2821d2785e231aa309175f949c5e8d7d64")
        );
        assert_eq!(
            hash_in(file, "PostToolUse", 0, 0),
            sha("495e33d5bf0600cc8f2a0b6bc46331280c27f1231b30d295c5a87d2f440c440a")
        );
        assert_eq!(
            hash_in(file, "UserPromptSubmit", 0, 0),
            sha("9a10123b95f7173a15325020c05ec559e03685189f57d99a0953c3a0def81851")
        );
        // Without `--interval 0`: another command, another hash.
        let plain = file.replace(" --interval 0", "");
        assert_eq!(
            hash_in(&plain, "PostToolUse", 0, 0),
            sha("d9d7a6c48d7879b65089e6720cd1f42bb84a6a1e6ce5ad3c5cae0031793fd554")
        );
        assert_eq!(
            hash_in(&plain, "UserPromptSubmit", 0, 0),
            sha("ba5e0578b686478e2f8a5ff5bda6a7a30f7b42ad0419ec8825c6f49d7c1567e9")
        );
    }

    #[test]
    fn the_hash_is_of_codexs_normalised_handler() {
        let file = r#"{"hooks": {
            "SessionStart": [{"matcher": " startup ", "hooks": [
                {"type": "command", "command": "polisd hook codex prime"},
                {"type": "command", "command": "a", "timeout": 0, "statusMessage": "hi \"x\" é\n", "async": true},
                {"type": "command", "command": "b", "timeout": 5, "additionalContextLimit": 100, "description": "z", "commandWindows": "w"},
                {"type": "prompt", "prompt": "p"},
                {"type": "command", "command": "c", "timeout": 7}
            ]}, {"matcher": "", "hooks": [{"type": "command", "command": "d"}]}],
            "UserPromptSubmit": [{"matcher": "[", "hooks": [{"type": "command", "command": "e"}]}],
            "PostToolUse": [{"hooks": [{"type": "command", "command": "g"}]}],
            "Stop": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "h"}]}],
            "SessionEnd": [{"matcher": "X", "hooks": [{"type": "command", "command": "a"}, {"type": "command", "command": "b", "timeout": 9}]}],
            "Interrupt": [{"matcher": "X", "hooks": [{"type": "command", "command": "b", "timeout": 9}]}]
        }}"#;
        let cases = [
            // No timeout: 600 seconds; the matcher as written, spaces and all.
            (
                "SessionStart",
                0,
                0,
                "e8004453f0041386907d7ccbcb0f1f6043bdfc18cb967ea226522405c8550b2e",
            ),
            // A timeout of 0 is 1; the status message and `async` count.
            (
                "SessionStart",
                0,
                1,
                "a43aacbb4da0be1f01d5f854661e3d91d74760b74f0203e19291ea7c292db674",
            ),
            // `additionalContextLimit` counts; fields Codex does not know, and the Windows
            // command on another system, do not.
            (
                "SessionStart",
                0,
                2,
                "3a134047cb88d1d411d587dcdc116079d412d881edbb3d17d648e2e75a998ca3",
            ),
            (
                "SessionStart",
                0,
                4,
                "2a98765ee51392028a0982996731a3c112002f0e7b6d9c82f77e43f3590416c4",
            ),
            // An empty matcher is kept.
            (
                "SessionStart",
                1,
                0,
                "d11370a139311bebe3cbecf6cfe356675266331b1b9b58f8990f9385c6f7cdde",
            ),
            // Events without a matcher drop it, even one that is not a pattern.
            (
                "UserPromptSubmit",
                0,
                0,
                "481b51bc9929ea565f24b6fd5d8554ddf305ba1e5e2bf0a7016464c18f3cba72",
            ),
            (
                "PostToolUse",
                0,
                0,
                "62781e579bb7bed7da971c119c942b3ec90c8fb68f4a6e094efe3dc1f3699a5a",
            ),
            (
                "Stop",
                0,
                0,
                "59650e3320ab25a13185e856eb8f765319adcabda0137e9a7f8a7e5b3121c78c",
            ),
        ];
        for (event, group, handler, hex) in cases {
            assert_eq!(
                hash_in(file, event, group, handler),
                sha(hex),
                "{event}:{group}:{handler}"
            );
        }
        // SessionEnd and Interrupt: 1 second by default, at most 3 (Interrupt drops the matcher).
        let short = [
            (
                "SessionEnd",
                0,
                "5b005f63a9251d592bbe29df8fb5e2983a0b3079d8709dee193748c370e17c51",
            ),
            (
                "SessionEnd",
                1,
                "fa2b1880a87a16e6995a5fec6acd3673d8a1e4d161a8be0083e10a3051abab24",
            ),
            (
                "Interrupt",
                0,
                "55ed59c0d01f6dd3a63ea010776822d62859528e678fa982d7ba34aa0b8c8eb5",
            ),
        ];
        for (event, handler, hex) in short {
            assert_eq!(hash_in(file, event, 0, handler), sha(hex), "{event}");
        }
        // Not a command handler, or one Codex would not load: no hash to compare.
        assert_eq!(hash_in(file, "SessionStart", 0, 3), None);
        let odd = r#"{"hooks": {"SessionStart": [{"hooks": [
            {"type": "command", "command": "x", "timeout": "10"},
            {"type": "command", "command": "x", "async": "yes"},
            {"type": "command", "command": "  "},
            {"type": "command", "command": "x", "timeout": 18446744073709551615}
        ]}], "Notification": [{"hooks": [{"type": "command", "command": "x"}]}]}}"#;
        for handler in 0..4 {
            assert_eq!(hash_in(odd, "SessionStart", 0, handler), None, "{handler}");
        }
        assert_eq!(hash_in(odd, "Notification", 0, 0), None);
    }

    fn project(config: Option<&str>) -> Option<String> {
        project_untrusted(
            config,
            Path::new("/work/p"),
            "~/.codex/config.toml",
            &|p: &Path| match p.strip_prefix("/link") {
                Ok(rest) => Path::new("/work/p").join(rest),
                Err(_) => p.to_path_buf(),
            },
        )
    }

    #[test]
    fn a_project_without_trust_runs_no_hooks() {
        let none = project(None).unwrap();
        assert!(none.contains("records no trust for /work/p"), "{none}");
        assert!(none.contains("codex exec --trust"), "{none}");
        let other = "[projects.\"/elsewhere\"]\ntrust_level = \"trusted\"\n";
        assert!(project(Some(other)).unwrap().contains("records no trust"));
        let untrusted = "[projects.\"/work/p\"]\ntrust_level = \"untrusted\"\n";
        assert!(project(Some(untrusted))
            .unwrap()
            .contains("trust_level = \"untrusted\""));
    }

    #[test]
    fn the_record_nearest_the_project_decides() {
        let trusted = "[projects.\"/link\"]\ntrust_level = \"trusted\"\n";
        assert_eq!(project(Some(trusted)), None, "through a link");
        let parent = "[projects.\"/work\"]\ntrust_level = \"trusted\"\n";
        assert_eq!(project(Some(parent)), None, "a clone's root above it");
        let nearer = format!("{parent}[projects.\"/work/p\"]\ntrust_level = \"untrusted\"\n");
        assert!(project(Some(&nearer)).is_some());
        assert_eq!(project(Some("not = [toml")), None, "Codex says that itself");
    }
}
