//! Aider has no hooks. What it puts in front of the model at every session start is the list
//! of files under `read:` in its project config, `.aider.conf.yml` (read at the git root and
//! in the folder Aider starts in). Listing the bridge pointer `AGENTS.md` there is how the
//! pointer reaches an Aider session: it tells the agent to run `polisd prime`.
//!
//! The config is the person's own file, so an edit adds or removes one entry and nothing else:
//! a line appended, an item inserted, or the one `read:` line rewritten. Every edit is read
//! back and compared with the file before it (every other key unchanged, the list changed by
//! exactly that entry); a file polisd cannot edit that way is refused, to be edited by hand.

use crate::yaml::{self, Value};

/// Aider's project config, relative to the project root.
pub const CONFIG_PATH: &str = ".aider.conf.yml";
/// The file Aider is given to read: the bridge pointer.
pub const BRIDGE_FILE: &str = "AGENTS.md";

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
}

const ADD_BY_HAND: &str = "add `AGENTS.md` to its `read:` list";
const REMOVE_BY_HAND: &str = "remove `AGENTS.md` from its `read:` list";

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
    let edited = match read_line(&lines) {
        // No `read:` key: one line at the end.
        None if !entries.iter().any(|(k, _)| k.as_str() == Some("read")) => {
            let mut out = text.to_string();
            if !out.ends_with('\n') {
                out.push('\n');
            }
            out.push_str("read: ");
            out.push_str(BRIDGE_FILE);
            out.push('\n');
            Some(out)
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
    let edited = read_line(&lines).and_then(|at| {
        let rest = lines[at]["read:".len()..].trim();
        if rest.is_empty() {
            let items = block_items(&lines, at);
            let item = *items.get(pos)?;
            if wanted.is_empty() {
                // The key goes with its last item (and the blank or comment lines between).
                Some(splice(&lines, at, item + 1 - at, &[], text))
            } else {
                Some(splice(&lines, item, 1, &[], text))
            }
        } else if rest.contains('#') {
            None
        } else if wanted.is_empty() {
            Some(splice(&lines, at, 1, &[], text))
        } else {
            Some(splice(&lines, at, 1, &[&flow_line(&wanted)], text))
        }
    });
    verified(edited, &entries, &wanted, REMOVE_BY_HAND).map(Some)
}

/// The one line that starts the top-level `read:` key, if there is exactly one.
fn read_line(lines: &[&str]) -> Option<usize> {
    let mut found = lines
        .iter()
        .enumerate()
        .filter(|(_, l)| l.starts_with("read:"))
        .map(|(i, _)| i);
    let first = found.next()?;
    found.next().is_none().then_some(first)
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
    let eol = if text.contains("\r\n") { "\r\n" } else { "\n" };
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
    let refused = || AiderConfigError::Shape {
        what: "its `read:` entry is written in a way polisd does not edit".into(),
        fix,
    };
    let edited = edited.ok_or_else(refused)?;
    let after = top_level(Some(&edited), fix).map_err(|_| refused())?;
    let others = |entries: &[(Value, Value)]| -> Vec<(Value, Value)> {
        entries
            .iter()
            .filter(|(k, _)| k.as_str() != Some("read"))
            .cloned()
            .collect()
    };
    let same_others = others(before) == others(&after);
    let list = read_list(&after, fix).map_err(|_| refused())?;
    if same_others && list == wanted {
        Ok(edited)
    } else {
        Err(refused())
    }
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
}
