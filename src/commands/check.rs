//! `polisd check`: every finding in a polis, for people and for CI.
//!
//! [`crate::operations::findings`] gathers them; `run` only prints and picks the exit code.

use crate::fs::snapshot::Polis;
use crate::operations::{count, findings_and_resolved, reservation_findings};
use crate::protocol::clock::PolisTime;
use crate::protocol::finding::Finding;

pub fn run(args: crate::commands::cli::CheckArgs) -> anyhow::Result<u8> {
    let root = super::locate(args.polis.path.get())?;
    // As the reference's `doctor --write-config`: the settings file first, then the check
    // (which reads it). Never over an existing file, whose comments and values are the polis's.
    let wrote_config = if args.write_config {
        let writer = crate::fs::writer::Writer::new(&root)?;
        Some(writer.create_new(
            crate::protocol::layout::POLIS_YML,
            super::init::POLIS_YML.as_bytes(),
        )?)
    } else {
        None
    };
    let polis = Polis::read(&root);
    let now = PolisTime::system(polis.settings.timezone);
    let (mut found, resolved) = findings_and_resolved(&polis, &now);
    found.extend(reservation_findings(&root, &now));
    found.sort_by(|a, b| (&a.path, a.line).cmp(&(&b.path, b.line)));
    let (errors, warnings) = count(&found);
    if args.polis.json {
        let mut report = serde_json::to_value(report(&found))?;
        report["resolved"] = serde_json::to_value(&resolved)?;
        if let Some(written) = wrote_config {
            report["config"] = serde_json::json!({ "path": "polis.yml", "written": written });
        }
        say!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        match wrote_config {
            Some(true) => say!("wrote polis.yml (schema v2, every setting at its default)"),
            Some(false) => say!("kept polis.yml (it exists; nothing was changed)"),
            None => {}
        }
        for f in &found {
            say!("{f}");
        }
        if !resolved.is_empty() {
            say!("resolved ({}; they no longer count):", resolved.len());
            for r in &resolved {
                say!("  {} (resolved by {})", r.finding, r.resolved_by);
            }
        }
        say!("{}", summary(errors, warnings));
    }
    Ok(u8::from(errors > 0))
}

/// `N errors, M warnings` (singular where it reads so).
pub fn summary(errors: usize, warnings: usize) -> String {
    use crate::protocol::finding::{counted, Severity};
    format!(
        "{}, {}",
        counted(errors, Severity::Error),
        counted(warnings, Severity::Warning)
    )
}

/// The JSON of `check --json`: `{"findings":[{code,severity,path,line,message}],"errors","warnings"}`.
#[derive(Debug, serde::Serialize)]
pub struct Report<'a> {
    pub findings: &'a [Finding],
    pub errors: usize,
    pub warnings: usize,
}

pub fn report(findings: &[Finding]) -> Report<'_> {
    let (errors, warnings) = count(findings);
    Report {
        findings,
        errors,
        warnings,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::finding::Code;

    #[test]
    fn summary_counts_read_naturally() {
        assert_eq!(summary(0, 0), "0 errors, 0 warnings");
        assert_eq!(summary(1, 2), "1 error, 2 warnings");
        assert_eq!(summary(3, 1), "3 errors, 1 warning");
    }

    #[test]
    fn json_has_exactly_the_documented_keys() {
        let f = vec![
            Finding::error(Code::C001, "chronicle.md", Some(7), "bad"),
            Finding::warning(
                Code::CardWithoutTags,
                "citizens/x/capability_card.yml",
                None,
                "w",
            ),
        ];
        let v = serde_json::to_value(report(&f)).unwrap();
        let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
        assert_eq!(keys.len(), 3);
        assert_eq!(v["errors"], 1);
        assert_eq!(v["warnings"], 1);
        let first = v["findings"][0].as_object().unwrap();
        let mut names: Vec<&str> = first.keys().map(String::as_str).collect();
        names.sort_unstable();
        assert_eq!(names, ["code", "line", "message", "path", "severity"]);
        assert_eq!(first["code"], "C001");
        assert_eq!(first["severity"], "error");
        assert_eq!(v["findings"][1]["line"], serde_json::Value::Null);
    }
}
