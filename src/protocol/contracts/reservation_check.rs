//! What is wrong with the entries of `reservations.yml` as written by hand: wrong types,
//! missing fields, a citizen nobody registered, a path held twice, paths outside the project
//! or not in their plain form, stamps that are not times, a key misspelt. Each problem comes
//! with the line it is on and its fix. polisd still reads such an entry as best it can (the
//! reference keeps it too), but it may guard nothing, or nobody may be able to release it.
//!
//! Pure: the file's text and its parsed entries in, problems out. `polisd check` reports them,
//! `polisd reservations` prints them under their entry, and the daemon tells each entry's
//! citizen.

use crate::protocol::arg::{Action, Names};
use crate::protocol::contracts::record_check::did_you_mean;
use crate::protocol::contracts::reservation::{
    fold, held_as, normalize, Entry, Expiry, HeldAs, PathError,
};
use crate::yaml::Value;

/// The keys an entry may have: the reference's, and polisd's `contract`.
pub const KEYS: [&str; 6] = [
    "citizen",
    "paths",
    "reserved_at",
    "expires_at",
    "note",
    "contract",
];

/// How a stamp is written, for the fixes.
const STAMP: &str = "YYYY-MM-DDTHH:MM:SS+00:00";

/// One thing wrong with one entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// The entry's index in the file (0-based).
    pub entry: usize,
    /// The 1-based line the problem is on (the entry's first line when no better one is
    /// known); `None` when the file is written in flow style.
    pub line: Option<usize>,
    /// What is wrong, and the fix.
    pub message: String,
    /// The id the entry names, when it names one, unregistered or not: who should fix it.
    pub citizen: Option<String>,
}

/// Every problem of every entry. `is_citizen` says whether an id has a capability card; the
/// fixes name commands as `names` does.
pub fn check(
    text: &str,
    entries: &[Entry],
    is_citizen: &dyn Fn(&str) -> bool,
    names: Names,
) -> Vec<Problem> {
    let lines: Vec<&str> = text.lines().collect();
    let starts = entry_lines(&lines, entries.len());
    let mut out = Vec::new();
    // Each citizen's folded paths already seen, with the line that holds them.
    let mut held: Vec<(String, String, Option<usize>)> = Vec::new();
    for (i, e) in entries.iter().enumerate() {
        let span = starts.as_ref().map(|s| {
            let end = s.get(i + 1).copied().unwrap_or(lines.len() + 1);
            (s[i], end)
        });
        // The line of `key` within the entry (else the entry's first line).
        let line_of = |needle: &dyn Fn(&str) -> bool| -> Option<usize> {
            let (start, end) = span?;
            (start..end)
                .find(|&n| lines.get(n - 1).is_some_and(|l| needle(l)))
                .or(Some(start))
        };
        let key_line = |key: &str| line_of(&|l: &str| is_key_line(l, key));
        let mut push = |line: Option<usize>, message: String| {
            out.push(Problem {
                entry: i,
                line,
                message,
                citizen: e.citizen.clone(),
            })
        };
        let Value::Map(map) = &e.raw else {
            push(
                span.map(|s| s.0),
                format!(
                    "this entry is a {}, not a mapping, so it holds nothing; remove it, or write it as {} does (citizen, paths, reserved_at, expires_at)",
                    kind(&e.raw),
                    names.action(&Action::Reserve)
                ),
            );
            continue;
        };
        match e.raw.get("citizen") {
            Value::Null => push(
                span.map(|s| s.0),
                "this entry names no `citizen`, so nobody can release it; add `citizen: <id>` or remove the entry".to_string(),
            ),
            Value::Str(id) if !is_citizen(id) => push(
                key_line("citizen"),
                format!(
                    "`{}` is not a registered citizen (no capability card), so the entry may never be released; correct the id, or let go of it with {}",
                    shortened(id),
                    names.action(&Action::Release {
                        by: shortened(id),
                        path: None,
                    })
                ),
            ),
            Value::Str(_) => {}
            other => push(
                key_line("citizen"),
                format!(
                    "`citizen` is {}, not an id, so nobody can release this entry; write `citizen: <id>`",
                    kind(other)
                ),
            ),
        }
        match e.raw.get("paths") {
            Value::Seq(items) => {
                for item in items {
                    if matches!(item, Value::Null | Value::Seq(_) | Value::Map(_)) {
                        push(
                            key_line("paths"),
                            format!(
                                "`paths` holds {}, not a path, and it is ignored; remove it",
                                kind(item)
                            ),
                        );
                    }
                }
            }
            Value::Null => {}
            Value::Map(_) => push(
                key_line("paths"),
                "`paths` is a mapping, not a list, so this entry guards nothing; write the paths as a list: `paths: [src/a.rs]`".to_string(),
            ),
            one => push(
                key_line("paths"),
                format!(
                    "`paths` is one value, not a list; write it as a list: `paths: [{}]`",
                    shortened(&one.python_str())
                ),
            ),
        }
        if e.paths.is_empty() {
            push(
                key_line("paths"),
                "this entry holds no path, so it guards nothing; name its paths as a list under `paths`, or remove it".to_string(),
            );
        }
        let mut own: Vec<String> = Vec::new();
        for (k, path) in e.paths.iter().enumerate() {
            // The n-th line writing this path, so a path written twice points at its second.
            let nth = e.paths[..k].iter().filter(|p| *p == path).count();
            let line = span
                .and_then(|(start, end)| {
                    (start..end)
                        .filter(|&n| lines.get(n - 1).is_some_and(|l| item_is(l, path)))
                        .nth(nth)
                })
                .or_else(|| key_line("paths"));
            let compared = match normalize(path, &[]) {
                Err(err) => {
                    push(line, refused_path(path, &err));
                    continue;
                }
                Ok(n) => {
                    if &n != path {
                        push(
                            line,
                            format!(
                                "`{}` is compared as written, so it may miss an overlap; write it as `{}`",
                                shortened(path),
                                shortened(&n)
                            ),
                        );
                    }
                    fold(&n)
                }
            };
            if own.contains(&compared) {
                push(
                    line,
                    format!(
                        "`{}` is listed twice in this entry (one file, whatever its case); remove one",
                        shortened(path)
                    ),
                );
                continue;
            }
            own.push(compared.clone());
            let Some(who) = &e.citizen else { continue };
            match held.iter().find(|(c, p, _)| c == who && *p == compared) {
                Some((_, _, first)) => push(
                    line,
                    format!(
                        "`{}` is held already by another entry of `{}`{}; remove it from one of them",
                        shortened(path),
                        shortened(who),
                        first.map_or(String::new(), |n| format!(" (line {n})"))
                    ),
                ),
                None => held.push((who.clone(), compared, line)),
            }
        }
        match (e.raw.get("reserved_at"), e.reserved_at) {
            (_, Some(_)) => {}
            (Value::Null, None) => push(
                span.map(|s| s.0),
                format!("this entry has no `reserved_at`, so the end of its citizen's work never releases it; add `reserved_at: {STAMP}`"),
            ),
            (v, None) => push(
                key_line("reserved_at"),
                format!(
                    "`reserved_at` `{}` is not a time, so the end of its citizen's work never releases this entry; write it as {STAMP}",
                    shortened(&v.python_str())
                ),
            ),
        }
        if let Expiry::Unreadable(text) = &e.expires {
            push(
                key_line("expires_at"),
                format!(
                    "expires_at `{}` is not a time, so this reservation holds until released; write it as {STAMP}",
                    shortened(text)
                ),
            );
        }
        for key in ["note", "contract"] {
            let v = e.raw.get(key);
            if matches!(v, Value::Seq(_) | Value::Map(_)) {
                let effect = if key == "note" {
                    "it is ignored; write it as one line of text"
                } else {
                    "the contract's end will not release this entry; write `contract: <id>`"
                };
                push(
                    key_line(key),
                    format!("`{key}` is {}, not text, so {effect}", kind(v)),
                );
            }
        }
        for (k, _) in map.iter() {
            let Some(k) = k.as_str() else { continue };
            if KEYS.contains(&k) {
                continue;
            }
            // Other keys are the agents' own (the reference keeps them); a near miss of a
            // known one is a typo that silently changes what the entry does.
            if let Some(meant) = did_you_mean(k, &KEYS) {
                push(
                    key_line(k),
                    format!(
                        "unknown key `{}`, which polisd ignores; did you mean `{meant}`?",
                        shortened(k)
                    ),
                );
            }
        }
    }
    out
}

/// The 1-based first line of each entry of the `reservations:` block list, when the text has
/// exactly `count` of them (a flow-style file has none to point at).
/// The problem of a path the commands would refuse, saying what it holds as written: an
/// entry that claims the whole project, or a folder of it, while its message calls the path
/// empty or outside would block every other citizen without a word of why.
fn refused_path(path: &str, err: &PathError) -> String {
    match held_as(path) {
        HeldAs::Everything => format!(
            "`{}` holds the whole project, so every other citizen's reservation is refused while \
             it stands; name what you will edit instead, or write `**` if the whole project is \
             meant",
            shortened(path)
        ),
        HeldAs::Path(n) => format!(
            "`{}` is read as `{}`, inside the project (its leading `/` dropped); write `{}`, or \
             remove it if a path outside the project was meant",
            shortened(path),
            shortened(&n),
            shortened(&n)
        ),
        HeldAs::Other => err.to_string(),
    }
}

fn entry_lines(lines: &[&str], count: usize) -> Option<Vec<usize>> {
    let key = lines.iter().position(|l| {
        l.strip_prefix("reservations")
            .is_some_and(|r| r.trim_start().starts_with(':'))
    })?;
    let mut indent = None;
    let mut starts = Vec::new();
    for (n, line) in lines.iter().enumerate().skip(key + 1) {
        let body = line.trim_start();
        if body.is_empty() || body.starts_with('#') {
            continue;
        }
        let at = line.len() - body.len();
        let item = body == "-" || body.starts_with("- ");
        match indent {
            None if item => indent = Some(at),
            None => return None,
            Some(i) if at < i || (at == i && !item) => break,
            Some(_) => {}
        }
        if item && Some(at) == indent {
            starts.push(n + 1);
        }
    }
    (starts.len() == count).then_some(starts)
}

/// Whether `line` writes `key:` (as a key of the entry, maybe on its `- ` line).
fn is_key_line(line: &str, key: &str) -> bool {
    let body = line.trim_start();
    let body = body.strip_prefix("- ").map_or(body, str::trim_start);
    body.strip_prefix(key)
        .is_some_and(|r| r.trim_start().starts_with(':'))
}

/// Whether `line` is the list item `- <path>` (quoted or not).
fn item_is(line: &str, path: &str) -> bool {
    let body = line.trim_start();
    let body = body.strip_prefix("- ").map_or(body, str::trim_start);
    let body = body.strip_prefix("paths:").map_or(body, str::trim_start);
    // A bare `paths:` holds no item, not the empty path.
    let unquoted = body.trim_matches(|c| c == '\'' || c == '"');
    !body.is_empty() && unquoted == path
}

/// What a value is, in a message.
fn kind(v: &Value) -> &'static str {
    match v {
        Value::Seq(_) => "a list",
        Value::Map(_) => "a mapping",
        Value::Null => "empty",
        Value::Bool(_) => "true or false",
        Value::Int(_) | Value::BigInt(_) | Value::Float(_) => "a number",
        Value::Date(_) | Value::DateTime(_) => "a date",
        Value::Str(_) => "text",
    }
}

/// A value as a problem quotes it: on one line (`polisd reservations` prints problems as they
/// are), and by its start and size when long, as every finding quotes agent text.
fn shortened(raw: &str) -> String {
    let one_line: String = raw
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    crate::protocol::finding::quoted(&one_line)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::clock::PolisZone;
    use crate::protocol::contracts::reservation::parse;

    fn problems(text: &str) -> Vec<Problem> {
        let entries = parse(Some(text), PolisZone::parse("UTC").unwrap()).unwrap();
        check(
            text,
            &entries,
            &|id| id.ends_with("-agent"),
            &crate::protocol::arg::flags,
        )
    }

    /// Each problem of `text` as (line, message).
    fn by_line(text: &str) -> Vec<(Option<usize>, String)> {
        problems(text)
            .into_iter()
            .map(|p| (p.line, p.message))
            .collect()
    }

    fn said_on(got: &[(Option<usize>, String)], line: usize, what: &str) {
        assert!(
            got.iter()
                .any(|(l, m)| *l == Some(line) && m.contains(what)),
            "nothing on line {line} saying {what}: {got:#?}"
        )
    }

    #[test]
    fn each_problem_is_on_its_line() {
        let text = "# header\nreservations:\n\
            - citizen: alpha-agent\n  paths:\n  - src/a.rs\n  reserved_at: '2026-03-02T10:00:00+00:00'\n\
            - citizen: alpha-agent\n  paths:\n  - src/b.rs\n  - SRC/A.rs\n  - src/b.rs\n  reserved_at: yesterday\n  expire_at: '2026-03-02T11:00:00+00:00'\n\
            - citizen: [alpha-agent]\n  paths: [src/c.rs]\n  reserved_at: '2026-03-02T10:00:00+00:00'\n  note: {a: 1}\n";
        let got = by_line(text);
        let on = |line: usize, what: &str| said_on(&got, line, what);
        on(
            10,
            "held already by another entry of `alpha-agent` (line 5)",
        );
        on(11, "listed twice in this entry");
        on(12, "`reserved_at` `yesterday` is not a time");
        on(13, "did you mean `expires_at`?");
        on(14, "`citizen` is a list, not an id");
        on(17, "`note` is a mapping, not text");
        assert!(
            !got.iter().any(|(l, _)| l.is_some_and(|l| l < 7)),
            "{got:#?}"
        );
    }

    /// Paths the commands refuse, written by hand, still hold what the overlap reads them as:
    /// the problem says so instead of calling them empty or outside the project.
    #[test]
    fn a_hand_written_path_that_holds_the_whole_project_says_so() {
        let text = "reservations:\n- citizen: alpha-agent\n  paths:\n  - ''\n  - /\n  - /etc\n  - ../x\n  reserved_at: '2026-03-02T10:00:00+00:00'\n";
        let got = by_line(text);
        let on = |line: usize, what: &str| said_on(&got, line, what);
        on(4, "`` holds the whole project");
        on(5, "`/` holds the whole project");
        on(6, "`/etc` is read as `etc`, inside the project");
        on(7, "`../x` is outside the project");
        assert!(!got.iter().any(|(_, m)| m.contains("is empty")), "{got:#?}");
    }

    #[test]
    fn a_well_formed_file_has_no_problem() {
        let text = "reservations:\n- citizen: alpha-agent\n  paths:\n  - src/a.rs\n  - docs\n  reserved_at: '2026-03-02T10:00:00+00:00'\n  expires_at: null\n  note: login\n  contract: fix-login\n  owner_note: kept\n";
        assert_eq!(problems(text), Vec::new());
    }

    #[test]
    fn a_flow_style_file_has_problems_without_lines() {
        let p = problems("reservations: [{citizen: alpha-agent, paths: src/a.rs, reserved_at: '2026-03-02T10:00:00+00:00'}]\n");
        assert_eq!(p.len(), 1, "{p:#?}");
        assert_eq!(p[0].line, None);
    }
}
