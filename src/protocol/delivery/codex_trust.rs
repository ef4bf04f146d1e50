//! Whether Codex CLI trusts polisd's hooks, and so runs them. Codex runs a project hook only
//! once the person approved it in its interactive review (`codex exec` skips the others without
//! a word). Its record is in the user's config (`$CODEX_HOME/config.toml`, by default
//! `~/.codex/config.toml`): a table `[hooks.state."<hooks file>:<event>:<group>:<handler>"]`
//! per handler, keyed by the hooks file's absolute path, the event in snake case and the
//! handler's place in the file (both from 0), holding `trusted_hash` (Codex's hash of its own
//! normalised form of the handler) and, once the person switched it in `/hooks`, `enabled`.
//!
//! polisd does not recompute that hash, which is Codex's internal form and may change with
//! it: a handler is reported only when it certainly will not run, that is when its table has
//! no `trusted_hash` at all or says `enabled = false`. A hook changed after it was trusted
//! (Codex then asks again) goes unreported.
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

/// One of polisd's handlers in the hooks file: its event and Codex's name for its place.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Place {
    event: String,
    key: String,
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
                    });
                }
            }
        }
    }
    out
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

/// What the config says of one handler.
#[derive(Debug, Default, Clone, Copy)]
struct State {
    trusted: bool,
    off: bool,
}

/// Why Codex CLI will not run some of polisd's hooks for this person: one line for the hooks
/// it has no trust for, one for those switched off. Empty when it runs them all, or when the
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
            .map(|(_, s)| *s)
            .unwrap_or_default()
    };
    let events = |pick: &dyn Fn(State) -> bool| {
        let mut names: Vec<&str> = ours
            .iter()
            .filter(|p| pick(state_of(p)))
            .map(|p| p.event.as_str())
            .collect();
        // In the order polisd installs them (the parsed file's keys come sorted).
        let rank = |e: &str| Cli::Codex.events().iter().position(|(n, _)| *n == e);
        names.sort_by_key(|e| (rank(e).is_none(), rank(e)));
        names.dedup();
        names.join(", ")
    };
    let mut out = Vec::new();
    let off = events(&|s| s.off);
    if !off.is_empty() {
        out.push(format!(
            "{} switches polisd's {off} hook(s) off (`enabled = false` under `[hooks.state]`): Codex runs them once they are turned on again in `codex`'s /hooks",
            inputs.shown
        ));
    }
    let untrusted = events(&|s| !s.off && !s.trusted);
    if !untrusted.is_empty() {
        out.push(format!(
            "Codex CLI runs a project's hooks only once the person trusted them, and {} has no trust for polisd's {untrusted} hook(s) in {}: start `codex` in the project and approve the hooks it lists (`codex exec` skips untrusted hooks without a word)",
            inputs.shown,
            inputs.hooks_path.display()
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
            trusted: value.get("trusted_hash").is_some_and(|h| h.is_str()),
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
        // Trust recorded for polisd's places (through a link for one); a hash polisd does not
        // check, since it cannot recompute Codex's.
        let all = [
            entry(
                "/p/.codex/hooks.json:session_start:0:0",
                "trusted_hash = \"sha256:aa\"",
            ),
            entry(
                "/link/.codex/hooks.json:post_tool_use:1:0",
                "trusted_hash = \"sha256:bb\"",
            ),
            entry(
                "/p/.codex/hooks.json:user_prompt_submit:0:1",
                "trusted_hash = \"x\"",
            ),
        ]
        .concat();
        assert_eq!(check(Some(&all)), Vec::<String>::new());
        // Trust for another place (the other tool's hook), another file, or no hash.
        let some = [
            entry(
                "/p/.codex/hooks.json:session_start:0:0",
                "trusted_hash = \"sha256:aa\"",
            ),
            entry(
                "/p/.codex/hooks.json:post_tool_use:0:0",
                "trusted_hash = \"sha256:bb\"",
            ),
            entry(
                "/q/.codex/hooks.json:user_prompt_submit:0:1",
                "trusted_hash = \"sha256:cc\"",
            ),
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
        let config = [
            entry(
                "/p/.codex/hooks.json:session_start:0:0",
                "trusted_hash = \"sha256:aa\"\nenabled = false",
            ),
            entry(
                "/p/.codex/hooks.json:post_tool_use:1:0",
                "trusted_hash = \"sha256:bb\"",
            ),
            entry(
                "/p/.codex/hooks.json:user_prompt_submit:0:1",
                "trusted_hash = \"sha256:cc\"",
            ),
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
