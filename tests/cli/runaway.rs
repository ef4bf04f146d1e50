//! A finding about a runaway line or value (an agent that appended 100 KB to one line) quotes
//! it by its start and its size, in `check` and `check --json` alike: the report stays a few
//! lines that still name the file, the line and the fix.

use super::{stdout, FOUNDER};
use crate::harness::TestPolis;
use std::process::Output;

/// The most a report about one runaway line or value may print.
const SMALL: usize = 4096;

/// About 100 KB of note: words, so no long word gives it away.
fn runaway_note() -> String {
    "agent text ".repeat(9_400)
}

/// The start of what `out` printed: a failing assertion never prints 100 KB.
fn start(out: &Output) -> String {
    let text = format!(
        "exit {:?}, stdout {} bytes, stderr {} bytes: {}",
        out.status.code(),
        out.stdout.len(),
        out.stderr.len(),
        String::from_utf8_lossy(&out.stdout)
    );
    text.chars().take(300).collect()
}

/// `check` and `check --json` both report in under [`SMALL`] bytes, each naming every text of
/// `naming` (the file and line, what is wrong, the fix); the JSON names `path` and `line`.
#[track_caller]
fn reported_small(p: &TestPolis, path: &str, line: Option<usize>, naming: &[&str]) {
    let out = p.polisd(&["check"]);
    assert!(
        out.stdout.len() + out.stderr.len() < SMALL,
        "{}",
        start(&out)
    );
    let text = stdout(&out);
    for n in naming {
        assert!(text.contains(n), "no `{n}` in: {}", start(&out));
    }
    let out = p.polisd(&["check", "--json"]);
    assert!(
        out.stdout.len() + out.stderr.len() < SMALL,
        "{}",
        start(&out)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", start(&out)));
    let findings = report["findings"].as_array().expect("findings");
    let about: Vec<_> = findings.iter().filter(|f| f["path"] == path).collect();
    assert!(!about.is_empty(), "nothing about {path}: {}", start(&out));
    for f in &about {
        if let Some(line) = line {
            assert_eq!(f["line"], line, "{}", start(&out));
        }
    }
    let messages: String = about
        .iter()
        .map(|f| f["message"].as_str().unwrap_or_default())
        .collect();
    for n in naming.iter().filter(|n| !n.starts_with(path)) {
        assert!(messages.contains(n), "no `{n}` in: {}", start(&out));
    }
}

/// Number of the last line of the chronicle, where an append just landed.
fn last_line(p: &TestPolis) -> usize {
    p.read("chronicle.md").lines().count()
}

#[test]
fn c001_runaway_malformed_line_is_quoted_by_its_start_and_size() {
    let p = TestPolis::init(FOUNDER);
    // No space after the dash (C001), and the corrected example would carry the whole note.
    let line = format!(
        "-2026-03-01 10:00 | {FOUNDER} | worked | - | {}",
        runaway_note()
    );
    p.append("chronicle.md", &format!("{line}\n"));
    let at = last_line(&p);
    let size = format!("({} bytes)", line.len());
    reported_small(
        &p,
        "chronicle.md",
        Some(at),
        &[
            &format!("chronicle.md:{at}: error C001: "),
            "`-2026-03-01 10:00 | claude-founder-one | worked | - | agent text",
            &size,
            "a line must start with `- `",
            "A chronicle line reads `- 2026-03-01 10:00 | claude-founder-one | worked | - | agent text",
        ],
    );
}

#[test]
fn c002_to_c008_runaway_line_with_every_warning_stays_small() {
    let p = TestPolis::init(FOUNDER);
    // Unregistered, linking nothing, an uppercase verb: each finding quotes the line and a
    // corrected one.
    let line = format!(
        "- 2026-03-01 10:00 | nobody-registered-here | Settled Contract | [[contracts/open/ghost]] | {}",
        runaway_note()
    );
    p.append("chronicle.md", &format!("{line}\n"));
    let at = last_line(&p);
    reported_small(
        &p,
        "chronicle.md",
        Some(at),
        &[
            &format!("chronicle.md:{at}: error C002: "),
            &format!("chronicle.md:{at}: warning C006: "),
            &format!("chronicle.md:{at}: warning C008: "),
            &format!("({} bytes)", line.len()),
            "is not a registered citizen",
            "write your own agent id: `- 2026-03-01 10:00 | <your-agent-id> | Settled Contract",
        ],
    );
}

#[test]
fn c001_runaway_link_field_without_spaces_is_quoted_short() {
    let p = TestPolis::init(FOUNDER);
    let line = format!(
        "- 2026-03-01 10:00 | {FOUNDER} | worked | [[{} | x",
        "a".repeat(100_000)
    );
    p.append("chronicle.md", &format!("{line}\n"));
    let at = last_line(&p);
    reported_small(
        &p,
        "chronicle.md",
        Some(at),
        &[
            &format!("chronicle.md:{at}: error C001: "),
            &format!("({} bytes)", line.len()),
            "must be one wikilink `[[path]]` or `-`",
        ],
    );
}

#[test]
fn c002_runaway_author_without_spaces_is_quoted_short() {
    let p = TestPolis::init(FOUNDER);
    let author = "a".repeat(100_000);
    p.append(
        "chronicle.md",
        &format!("- 2026-03-01 10:00 | {author} | worked | - | x\n"),
    );
    let at = last_line(&p);
    reported_small(
        &p,
        "chronicle.md",
        Some(at),
        &[
            &format!("chronicle.md:{at}: error C002: "),
            "(100000 bytes)",
            "is not a registered citizen",
            "write your own agent id: `- 2026-03-01 10:00 | <your-agent-id> | worked | - | x`",
        ],
    );
}

#[test]
fn p019_runaway_owner_of_a_contract_is_quoted_short() {
    let p = TestPolis::init(FOUNDER);
    let owner = "someone else entirely ".repeat(4_600);
    let rel = "contracts/open/runaway-owner.md";
    p.save(
        rel,
        &format!(
            "---\ncontract_id: runaway-owner\ntitle: Runaway\nopened_by: {FOUNDER}\n\
             opened_at: '2026-01-01 10:00:00'\nowner: {owner}\nstatus: claimed\n\
             required_tags:\n- python\n---\n\n# Runaway\n"
        ),
    );
    reported_small(
        &p,
        rel,
        Some(6),
        &[
            &format!("{rel}:6: warning P019: "),
            "`owner: someone else entirely",
            "is not a registered citizen",
            "polisd register",
        ],
    );
}

#[test]
fn p002_runaway_scalar_in_a_yaml_load_error_is_quoted_short() {
    let p = TestPolis::init(FOUNDER);
    let rel = "contracts/open/runaway-flag.md";
    // A tag PyYAML cannot apply: the load error quotes the scalar it refused.
    let value = runaway_note();
    p.save(
        rel,
        &format!(
            "---\ncontract_id: runaway-flag\ntitle: Runaway\nopened_by: {FOUNDER}\n\
             opened_at: '2026-01-01 10:00:00'\nstatus: open\nrequired_tags:\n- python\n\
             urgent: !!bool {value}\n---\n\n# Runaway\n"
        ),
    );
    reported_small(
        &p,
        rel,
        Some(9),
        &[
            &format!("{rel}:9: error P002: "),
            "'agent text agent text",
            &format!("({} bytes)", value.trim_end().len()),
            "is not a boolean",
            "fix the YAML between the `---` fences",
        ],
    );
}

#[test]
fn p002_runaway_routing_rule_regex_is_quoted_short() {
    let p = TestPolis::init(FOUNDER);
    // An unclosed group: the regex error would print the whole pattern (and a caret line).
    let pattern = format!("({}", runaway_note().trim_end());
    let settings = p.read("polis.yml").replacen(
        "routing:\n",
        &format!(
            "routing:\n  rules:\n    - {{when: {{title: '{pattern}'}}, route_to: {FOUNDER}}}\n"
        ),
        1,
    );
    p.save("polis.yml", &settings);
    reported_small(
        &p,
        "polis.yml",
        None,
        &[
            "polis.yml: warning P002: routing.rules entry 1 is ignored",
            "`title` is not a regular expression",
            "(agent text agent text",
            &format!("({} bytes)", pattern.len()),
            "unclosed group",
            "write `{when: {tags: [a, b]}, route_to: <citizen>}`",
        ],
    );
}

#[test]
fn p028_runaway_panel_member_of_a_council_is_quoted_short() {
    let p = TestPolis::init(FOUNDER);
    p.citizen("claude-member-aaaa", "anthropic", &[("arch", 5)], "medium");
    p.citizen("codex-member-bbbb", "openai", &[("arch", 4)], "medium");
    p.citizen("gemini-member-cccc", "google", &[("arch", 3)], "medium");
    p.save(
        "contracts/open/cache.md",
        &format!(
            "---\ncontract_id: cache\ntitle: Replace the cache layer\nopened_by: {FOUNDER}\n\
             opened_at: '2026-11-30 10:00:00'\nowner: {FOUNDER}\nstatus: claimed\n\
             required_tags: [arch]\ncouncil:\n  council_mode: quick\n---\n\n# Cache\n"
        ),
    );
    let out = p.polisd(&["council", "start", "cache"]);
    assert!(out.status.success(), "{}", start(&out));
    // A panel member written by hand as one long text instead of a seat.
    let rel = "reviews/cache/council.md";
    let member = runaway_note();
    let state = p
        .read(rel)
        .replacen("\nseats:\n", &format!("\nseats:\n- {member}\n"), 1);
    p.save(rel, &state);
    reported_small(
        &p,
        rel,
        None,
        &[
            &format!("{rel}: error P028: "),
            "\"agent text agent text",
            &format!("({} bytes)", member.trim_end().len()),
            "expected struct Seat",
            "restore it from version control",
        ],
    );
}
