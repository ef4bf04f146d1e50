//! The chairman's `reviews/<cid>/verdict.md`: its required form ([`check`]), and the edit that
//! records the decision in the contract's `review:` block ([`set_review_field`]).
//!
//! A verdict must be falsifiable and actionable: kill criteria with a condition, a date and a
//! consequence; exactly one concrete next step; 2 to 4 decision options; dissent kept.

use super::Mode;
use crate::protocol::contracts::review::Decision;
use crate::protocol::finding::quoted;
use crate::protocol::frontmatter;
use crate::yaml::Value;
use regex::Regex;
use std::sync::LazyLock;

/// A verdict's sections, as `##` headings, in the council seed's order (order is not
/// checked). Which are required depends on the mode ([`required`]); a section present is
/// checked for its form whatever the mode.
pub const SECTIONS: [&str; 12] = [
    "Selected panel",
    "Chairman",
    "Acceptable compromises",
    "Kill criteria",
    "Concrete next step",
    "Unresolved questions",
    "Key agreements",
    "Key disagreements",
    "Decision options",
    "Recommended next steps",
    "Confidence",
    "Execution reliability",
];

/// The sections a mode requires, as the seed lists them: compromises, kill criteria and the
/// next step in full; kill criteria and the next step in quick; the next step in a duo.
pub fn required(mode: Mode) -> &'static [&'static str] {
    match mode {
        Mode::Full => &[
            "Acceptable compromises",
            "Kill criteria",
            "Concrete next step",
        ],
        Mode::Quick => &["Kill criteria", "Concrete next step"],
        Mode::Duo => &["Concrete next step"],
    }
}

/// Verbs that start an action producing something one can point at.
const ARTIFACT_VERBS: [&str; 40] = [
    "write",
    "open",
    "merge",
    "ship",
    "file",
    "measure",
    "draft",
    "publish",
    "add",
    "create",
    "run",
    "build",
    "deploy",
    "record",
    "commit",
    "release",
    "submit",
    "implement",
    "fix",
    "remove",
    "delete",
    "benchmark",
    "document",
    "send",
    "post",
    "land",
    "revert",
    "replace",
    "rename",
    "migrate",
    "split",
    "tag",
    "prototype",
    "test",
    "profile",
    "settle",
    "claim",
    "start",
    "close",
    "move",
];

/// Verbs that put the decision off instead of acting on it.
const DEFERRAL_VERBS: [&str; 16] = [
    "think", "consider", "discuss", "revisit", "reflect", "wait", "explore", "ponder", "decide",
    "evaluate", "keep", "continue", "monitor", "look", "talk", "see",
];

/// Why a Concrete next step's one action is not an action (`None`: it is).
fn weak_step(action: &str) -> Option<String> {
    let plain = action.replace(['*', '`', '_'], "");
    let first = plain
        .split_whitespace()
        .next()
        .unwrap_or("")
        .trim_matches(|c: char| !c.is_alphanumeric())
        .to_lowercase();
    let examples = "write, open, merge, ship, file, measure, …";
    if DEFERRAL_VERBS.contains(&first.as_str()) {
        return Some(format!(
            "the Concrete next step `{}` defers the decision; name the one action that produces an artifact, starting with a verb such as {examples}",
            quoted(action.trim())
        ));
    }
    if !ARTIFACT_VERBS.contains(&first.as_str()) {
        return Some(format!(
            "the Concrete next step `{}` does not start with a verb that produces an artifact; start it with one such as {examples}",
            quoted(action.trim())
        ));
    }
    None
}

static KILL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(?i:if)\s+\S.*?\s+by\s+.*\d{4}-\d{2}-\d{2}.*?,\s*invalidated\s*(?:→|->)\s*\S.*$")
        .unwrap()
});

/// A valid verdict's decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    pub decision: Decision,
}

/// The sections of a markdown body by heading (`#` to `######`), lower-cased titles.
fn sections(body: &str) -> Vec<(String, Vec<&str>)> {
    let mut out: Vec<(String, Vec<&str>)> = Vec::new();
    let mut fence = false;
    for line in body.lines() {
        if line.trim_start().starts_with("```") {
            fence = !fence;
        }
        let t = line.trim();
        if !fence && t.starts_with('#') {
            let title = t
                .trim_start_matches('#')
                .trim()
                .trim_end_matches(':')
                .trim();
            out.push((title.to_lowercase(), Vec::new()));
        } else if let Some((_, lines)) = out.last_mut() {
            lines.push(line);
        }
    }
    out
}

/// Top-level list items (`- `, `* `, `+ `, `1. `) of a section, continuation lines joined.
fn items(lines: &[&str]) -> Vec<String> {
    static ITEM: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"^(?:[-*+]|\d+[.)])\s+(.*)$").unwrap());
    let mut out: Vec<String> = Vec::new();
    for line in lines {
        if let Some(c) = ITEM.captures(line) {
            out.push(c[1].trim().to_string());
        } else if line.starts_with([' ', '\t']) && !line.trim().is_empty() {
            if let Some(last) = out.last_mut() {
                last.push(' ');
                last.push_str(line.trim());
            }
        }
    }
    out
}

fn paragraphs(lines: &[&str]) -> usize {
    lines
        .split(|l| l.trim().is_empty())
        .filter(|p| !p.is_empty())
        .count()
}

/// Checks a verdict's form for a council of `mode`; every problem, each saying what to write
/// instead.
pub fn check(text: &str, mode: Mode) -> Result<Verdict, Vec<String>> {
    let mut problems = Vec::new();
    let record = match frontmatter::parse(&frontmatter::normalise(text)) {
        Ok(r) => r,
        Err(e) => return Err(vec![format!("its frontmatter cannot be read ({e}); start the file with `---`, `decision: signed_off`, `---`")]),
    };
    let decision = match record.fields.get("decision") {
        Value::Null => {
            problems.push("the frontmatter has no `decision:`; add `decision: signed_off`, `requested_changes` or `rejected`".to_string());
            None
        }
        v => match Decision::parse(&v.python_str()) {
            Decision::Other(o) => {
                problems.push(format!(
                    "`decision: {}` is not one of signed_off, requested_changes, rejected",
                    quoted(&o)
                ));
                None
            }
            d => Some(d),
        },
    };
    let found = sections(&record.body);
    let get = |name: &str| {
        found
            .iter()
            .find(|(t, _)| t == &name.to_lowercase())
            .map(|(_, l)| l.as_slice())
    };
    let mut missing = Vec::new();
    for name in required(mode) {
        match get(name) {
            None => missing.push(name),
            Some(lines) if lines.iter().all(|l| l.trim().is_empty()) => {
                problems.push(format!("the section `## {name}` is empty"))
            }
            Some(_) => {}
        }
    }
    if !missing.is_empty() {
        problems.push(format!(
            "missing section(s) a {} council requires: {}",
            mode.as_str(),
            missing
                .iter()
                .map(|m| format!("`## {m}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    if let Some(lines) = get("Kill criteria").filter(|l| !l.iter().all(|l| l.trim().is_empty())) {
        let list = items(lines);
        if list.is_empty() {
            problems.push("Kill criteria has no list item; write each as `- If <condition> by <YYYY-MM-DD>, invalidated → <consequence>`".into());
        }
        for item in list {
            let plain = item.replace(['*', '`'], "");
            if !KILL.is_match(plain.trim()) {
                problems.push(format!("the kill criterion `{}` is not of the form `If <condition> by <YYYY-MM-DD>, invalidated → <consequence>`", quoted(&item)));
            }
        }
    }
    if let Some(lines) =
        get("Concrete next step").filter(|l| !l.iter().all(|l| l.trim().is_empty()))
    {
        let list = items(lines);
        let n = if list.is_empty() {
            paragraphs(lines)
        } else {
            list.len()
        };
        if n != 1 {
            problems.push(format!("Concrete next step holds {n} actions; keep exactly one (the first thing to do), and move the others to Recommended next steps"));
        } else {
            let action = list.first().cloned().unwrap_or_else(|| {
                lines
                    .iter()
                    .map(|l| l.trim())
                    .filter(|l| !l.is_empty())
                    .collect::<Vec<_>>()
                    .join(" ")
            });
            problems.extend(weak_step(&action));
        }
    }
    if let Some(lines) = get("Decision options").filter(|l| !l.iter().all(|l| l.trim().is_empty()))
    {
        let n = items(lines).len();
        if !(2..=4).contains(&n) {
            problems.push(format!(
                "Decision options lists {n} option(s); list 2 to 4, each with its trade-offs"
            ));
        }
    }
    if let Some(lines) = get("Confidence").filter(|l| !l.iter().all(|l| l.trim().is_empty())) {
        let text = lines.join(" ");
        let words: Vec<String> = text
            .split_whitespace()
            .map(|w| {
                w.trim_matches(|c: char| !c.is_alphanumeric())
                    .to_lowercase()
            })
            .filter(|w| !w.is_empty())
            .collect();
        let level_ok = words
            .first()
            .is_some_and(|w| matches!(w.as_str(), "high" | "medium" | "low"));
        if !level_ok {
            problems.push("Confidence must start with high, medium or low".into());
        } else if words.len() < 3 {
            problems.push("Confidence must say why, after its level".into());
        }
    }
    match (decision, problems.is_empty()) {
        (Some(decision), true) => Ok(Verdict { decision }),
        _ => Err(problems),
    }
}

/// Sets `key: value` inside the top-level `review:` mapping of a contract, keeping every other
/// byte: a block mapping gets its `key:` line replaced or added (at its indentation); a flow
/// mapping on one line is rewritten with the key set; a missing `review:` is added as
/// `review: {key: value}`. `None` when the result would not read back with `review.key ==
/// value` and every other field unchanged (then nothing should be written).
pub fn set_review_field(text: &str, key: &str, value: &str) -> Option<String> {
    let before = frontmatter::parse(&frontmatter::normalise(text)).ok()?;
    let out = frontmatter::splice_block_field(text, "review", key, value)?;
    let after = frontmatter::parse(&frontmatter::normalise(&out)).ok()?;
    let (Some(b), Some(a)) = (before.fields.as_map(), after.fields.as_map()) else {
        return None;
    };
    if after.fields.get("review").get(key).as_str() != Some(value) || before.body != after.body {
        return None;
    }
    for (k, v) in b.iter() {
        let name = k.python_str();
        if name == "review" {
            for (rk, rv) in before
                .fields
                .get("review")
                .as_map()
                .into_iter()
                .flat_map(|m| m.iter())
            {
                let rname = rk.python_str();
                if rname != key && after.fields.get("review").get(&rname) != rv {
                    return None;
                }
            }
        } else if a.get(&name) != Some(v) {
            return None;
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) const VALID: &str = "---\ndecision: requested_changes\n---\n\n## Panel and mode\nfull, 3 seats.\n\n## Chairman\nme.\n\n## Acceptable compromises\n- keep the old path for a release\n\n## Kill criteria\n- If p95 latency rises above 200 ms by 2027-01-15, invalidated → roll back to the old cache\n- If no second vendor reviews the migration by 2027-02-01, invalidated -> reopen the council\n\n## Concrete next step\n- Write the migration plan in docs/migration.md\n\n## Unresolved questions\n- who owns the cache?\n\n## Key agreements\n- the cache is needed\n\n## Key disagreements\n- Member B holds that the TTL is too short\n\n## Decision options\n- ship now: fast, risky\n- ship after a canary: slower, safer\n\n## Confidence\nmedium, because the load test was small.\n";

    #[test]
    fn a_complete_verdict_is_valid() {
        assert_eq!(
            check(VALID, Mode::Full).unwrap().decision,
            Decision::RequestedChanges
        );
    }

    #[test]
    fn every_problem_is_named() {
        let bad = VALID
            .replace("decision: requested_changes", "decision: maybe")
            .replace("## Acceptable compromises\n- keep the old path for a release\n\n", "")
            .replace("- If p95 latency rises above 200 ms by 2027-01-15, invalidated → roll back to the old cache", "- latency might rise")
            .replace("- Write the migration plan in docs/migration.md", "- Write the plan\n- Run the canary")
            .replace("- ship after a canary: slower, safer\n", "")
            .replace("medium, because the load test was small.", "pretty sure");
        let problems = check(&bad, Mode::Full).unwrap_err();
        let all = problems.join("\n");
        for want in [
            "maybe",
            "`## Acceptable compromises`",
            "latency might rise",
            "2 actions",
            "1 option",
            "Confidence must start",
        ] {
            assert!(all.contains(want), "{want} not in:\n{all}");
        }
        assert_eq!(problems.len(), 6, "{all}");
        assert!(check("no frontmatter", Mode::Full).is_err());
    }

    #[test]
    fn a_runaway_decision_kill_criterion_or_next_step_is_quoted_by_its_start_and_size() {
        let long = "maybe later ".repeat(9_000);
        let long = long.trim_end();
        let bad = VALID
            .replace("decision: requested_changes", &format!("decision: {long}"))
            .replace(
                "- If p95 latency rises above 200 ms by 2027-01-15, invalidated → roll back to the old cache",
                &format!("- {long}"),
            )
            .replace(
                "- Write the migration plan in docs/migration.md",
                &format!("- Consider {long}"),
            );
        let problems = check(&bad, Mode::Full).unwrap_err();
        assert_eq!(problems.len(), 3, "{}", problems.join("\n").len());
        for p in &problems {
            assert!(p.len() < 1_000, "{}", &p[..1_000]);
            assert!(p.contains(" bytes)`"), "{p}");
        }
    }

    #[test]
    fn one_paragraph_is_one_next_step() {
        let v = VALID.replace(
            "- Write the migration plan in docs/migration.md",
            "Write the migration plan.",
        );
        assert!(check(&v, Mode::Full).is_ok());
        let v = VALID.replace(
            "- Write the migration plan in docs/migration.md",
            "Write it.\n\nThen ship it.",
        );
        assert!(check(&v, Mode::Full).is_err());
    }

    #[test]
    fn required_sections_follow_the_mode() {
        let no_compromises = VALID.replace(
            "## Acceptable compromises\n- keep the old path for a release\n\n",
            "",
        );
        assert!(
            check(&no_compromises, Mode::Quick).is_ok(),
            "optional in quick"
        );
        assert!(check(&no_compromises, Mode::Full).is_err());
        let no_kill = VALID.replace("## Kill criteria\n- If p95 latency rises above 200 ms by 2027-01-15, invalidated → roll back to the old cache\n- If no second vendor reviews the migration by 2027-02-01, invalidated -> reopen the council\n\n", "");
        assert_ne!(no_kill, VALID);
        let e = check(&no_kill, Mode::Full).unwrap_err().join("\n");
        assert!(
            e.contains("`## Kill criteria`") && e.contains("a full council requires"),
            "{e}"
        );
        assert!(check(&no_kill, Mode::Quick).is_err());
        assert!(
            check(&no_kill, Mode::Duo).is_ok(),
            "encouraged in a duo, not required"
        );
        // Only the next step is required everywhere.
        let bare = "---\ndecision: signed_off\n---\n\n## Concrete next step\nShip the canary build to 5% of users.\n";
        assert!(check(bare, Mode::Duo).is_ok());
        let e = check(
            "---\ndecision: signed_off\n---\n\n## Confidence\nhigh, because.\n",
            Mode::Duo,
        )
        .unwrap_err();
        assert!(e.join(" ").contains("`## Concrete next step`"), "{e:?}");
    }

    #[test]
    fn a_next_step_must_produce_an_artifact_and_not_defer() {
        for weak in [
            "Think about it more.",
            "- Consider a rewrite",
            "**Revisit** this next quarter",
        ] {
            let v = VALID.replace("- Write the migration plan in docs/migration.md", weak);
            let e = check(&v, Mode::Duo).unwrap_err().join(" ");
            assert!(e.contains("defers the decision"), "{weak}: {e}");
        }
        let v = VALID.replace(
            "- Write the migration plan in docs/migration.md",
            "- The team should align",
        );
        let e = check(&v, Mode::Duo).unwrap_err().join(" ");
        assert!(
            e.contains("does not start with a verb that produces an artifact"),
            "{e}"
        );
        for good in [
            "- Merge the flag removal",
            "Measure p95 latency on the canary.",
            "- **File** the migration ticket",
        ] {
            let v = VALID.replace("- Write the migration plan in docs/migration.md", good);
            assert!(check(&v, Mode::Full).is_ok(), "{good}");
        }
    }

    #[test]
    fn review_status_is_set_in_flow_and_block_mappings_keeping_every_other_byte() {
        let flow_text = "---\ncontract_id: x\nreview: {mode: council, panel: [a-citizen-1, b-citizen-2], round_hours: 0.5}\nowner: someone-here\n---\nbody\n";
        let out = set_review_field(flow_text, "status", "signed_off").unwrap();
        assert_eq!(out, "---\ncontract_id: x\nreview: {mode: council, panel: [a-citizen-1, b-citizen-2], round_hours: 0.5, status: signed_off}\nowner: someone-here\n---\nbody\n");
        let block = "---\nreview:\n    mode: council\n    status: null\n# note\nowner: o\n---\n";
        assert_eq!(
            set_review_field(block, "status", "rejected").unwrap(),
            "---\nreview:\n    mode: council\n    status: rejected\n# note\nowner: o\n---\n"
        );
        let block = "---\r\nreview:\r\n  mode: council\r\nowner: o\r\n---\r\n";
        assert_eq!(
            set_review_field(block, "reviewer", "codex-seat-bbbb").unwrap(),
            "---\r\nreview:\r\n  mode: council\r\n  reviewer: codex-seat-bbbb\r\nowner: o\r\n---\r\n"
        );
        let none = "---\ncouncil: {mode: duo}\n---\n";
        assert_eq!(
            set_review_field(none, "status", "signed_off").unwrap(),
            "---\ncouncil: {mode: duo}\nreview: {status: signed_off}\n---\n"
        );
        for null in ["null", "~", "Null  # not yet"] {
            let text = format!("---\nreview: {null}\nowner: o\n---\n");
            let once = set_review_field(&text, "status", "signed_off").unwrap();
            assert_eq!(once, "---\nreview: {status: signed_off}\nowner: o\n---\n");
            assert_eq!(
                set_review_field(&once, "reviewer", "codex-seat-bbbb").unwrap(),
                "---\nreview: {status: signed_off, reviewer: codex-seat-bbbb}\nowner: o\n---\n"
            );
        }
        assert_eq!(set_review_field("no frontmatter", "status", "x"), None);
    }
}
