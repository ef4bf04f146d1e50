//! Whether Gemini CLI trusts a project folder, and so runs its hooks. Gemini CLI reads a
//! project's `.gemini/settings.json` (polisd's hooks among it) only in a folder the person
//! trusted: a headless `gemini -p` refuses to start in any other, and an interactive one asks
//! first. Its record is `~/.gemini/trustedFolders.json`, an object from a path to
//! `TRUST_FOLDER` (that folder and everything in it), `TRUST_PARENT` (everything in the
//! path's parent) or `DO_NOT_TRUST`; the longest path that holds the project decides.
//! Pure: the caller reads the files, the environment and the canonical paths.

use std::path::{Path, PathBuf};

/// What decides the trust, as the caller read it.
#[derive(Debug, Clone, Default)]
pub struct TrustInputs<'a> {
    /// `$GEMINI_CLI_TRUST_WORKSPACE`, which overrides the record either way.
    pub env_trust: Option<&'a str>,
    /// The user's `~/.gemini/settings.json`, where `security.folderTrust.enabled: false` turns
    /// trust off (every folder is trusted then).
    pub user_settings: Option<&'a str>,
    /// The trusted-folders record, shown as `shown`.
    pub record: Option<&'a str>,
    pub shown: &'a str,
}

/// A file of Gemini CLI's read as it reads both of these: comments allowed
/// (`strip-json-comments`, then `JSON.parse`).
fn as_gemini_reads(text: &str) -> Option<serde_json::Value> {
    let doc = super::jsonc::parse(text, true).ok()?;
    serde_json::to_value(doc.root.to_json()).ok()
}

/// Why Gemini CLI will not run the project's hooks, if it will not. `project` and the
/// record's paths are compared as given: the caller canonicalises them (`canonical`).
pub fn untrusted(
    project: &Path,
    inputs: &TrustInputs<'_>,
    canonical: &dyn Fn(&Path) -> PathBuf,
) -> Option<String> {
    match inputs.env_trust {
        Some("true") => return None,
        Some("false") => {
            return Some(
                "GEMINI_CLI_TRUST_WORKSPACE=false: Gemini CLI trusts no folder, so it runs no project hooks".to_string(),
            )
        }
        _ => {}
    }
    let settings = inputs.user_settings.and_then(as_gemini_reads);
    let trust_off = settings
        .as_ref()
        .and_then(|s| s.pointer("/security/folderTrust/enabled"))
        .and_then(serde_json::Value::as_bool)
        == Some(false);
    if trust_off {
        return None;
    }
    let how = "start `gemini` in the project once and choose to trust the folder (or set GEMINI_CLI_TRUST_WORKSPACE=true where it runs headless)";
    let record = match inputs.record {
        None => {
            return Some(format!(
                "Gemini CLI runs a project's hooks only in a folder the person trusted, and {} is not in {}: {how}",
                project.display(),
                inputs.shown
            ))
        }
        // A record it cannot read is Gemini CLI's to report (it refuses to start).
        Some(text) => match as_gemini_reads(text) {
            Some(serde_json::Value::Object(rules)) => rules,
            _ => return None,
        },
    };
    let decided = record
        .iter()
        .filter_map(|(path, level)| {
            let level = level.as_str()?;
            let rule = Path::new(path);
            let holds = match level {
                "TRUST_PARENT" => rule.parent().unwrap_or(rule),
                _ => rule,
            };
            project
                .starts_with(canonical(holds))
                .then_some((path.len(), level))
        })
        .max_by_key(|(len, _)| *len)
        .map(|(_, level)| level);
    match decided {
        Some("TRUST_FOLDER" | "TRUST_PARENT") => None,
        Some("DO_NOT_TRUST") => Some(format!(
            "{} marks {} as not trusted (DO_NOT_TRUST): Gemini CLI runs no hooks of this project until that entry is changed",
            inputs.shown,
            project.display()
        )),
        _ => Some(format!(
            "Gemini CLI runs a project's hooks only in a folder the person trusted, and {} is not trusted in {}: {how}",
            project.display(),
            inputs.shown
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(project: &str, record: Option<&str>) -> Option<String> {
        let inputs = TrustInputs {
            record,
            shown: "~/.gemini/trustedFolders.json",
            ..TrustInputs::default()
        };
        untrusted(Path::new(project), &inputs, &|p| p.to_path_buf())
    }

    #[test]
    fn the_longest_rule_that_holds_the_project_decides() {
        let record = r#"{"/work": "TRUST_FOLDER", "/work/secret": "DO_NOT_TRUST",
                         "/home/me/code/x": "TRUST_PARENT"}"#;
        assert_eq!(check("/work/app", Some(record)), None);
        assert_eq!(check("/work", Some(record)), None);
        assert!(check("/work/secret/app", Some(record))
            .unwrap()
            .contains("DO_NOT_TRUST"));
        assert_eq!(
            check("/home/me/code/y", Some(record)),
            None,
            "by the parent"
        );
        assert!(check("/home/me/other", Some(record))
            .unwrap()
            .contains("is not trusted"));
        // A path that merely starts with the same letters is not inside it.
        assert!(check("/workshop", Some(record)).is_some());
    }

    #[test]
    fn no_record_is_untrusted_and_the_switches_win() {
        assert!(check("/p", None).unwrap().contains("is not in"));
        let env = |value| TrustInputs {
            env_trust: Some(value),
            shown: "f",
            ..TrustInputs::default()
        };
        let same = |p: &Path| p.to_path_buf();
        assert_eq!(untrusted(Path::new("/p"), &env("true"), &same), None);
        assert!(untrusted(Path::new("/p"), &env("false"), &same).is_some());
        let off = TrustInputs {
            user_settings: Some(r#"{"security": {"folderTrust": {"enabled": false}}}"#),
            shown: "f",
            ..TrustInputs::default()
        };
        assert_eq!(untrusted(Path::new("/p"), &off, &same), None);
        // A record Gemini CLI cannot read either is its own error to report.
        assert_eq!(check("/p", Some("{not json")), None);
    }

    /// Gemini CLI reads both files with comments allowed, so a person's comments there change
    /// nothing about the trust polisd reports.
    #[test]
    fn comments_in_gemini_s_own_files_are_read_as_gemini_reads_them() {
        let record = "{\n  // my machines\n  \"/work\": \"TRUST_FOLDER\" /* all of it */\n}\n";
        assert_eq!(check("/work/app", Some(record)), None);
        let off = TrustInputs {
            user_settings: Some(
                "{\n  // no prompts here\n  \"security\": {\"folderTrust\": {\"enabled\": false}}\n}",
            ),
            shown: "f",
            ..TrustInputs::default()
        };
        assert_eq!(untrusted(Path::new("/p"), &off, &|p| p.to_path_buf()), None);
    }
}
