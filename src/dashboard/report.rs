//! `polisd report`: a self-contained snapshot of a polis, as markdown or as one HTML file (no
//! script, the stylesheet inline), like the reference's `polis report`: the queue, contracts
//! (each settled one with its quality, minutes and lessons), citizens, tags, lessons with a
//! routing effect, guardrails, reservations, amendments and findings. With `redact`, every
//! citizen id, contract id, amendment id, lesson id, guardrail id, tag and path becomes a
//! stable pseudonym (the first hex digits of a SHA-256 keyed with this machine's key, so the
//! same id reads the same in every report made here and a guess cannot be checked), and free text (titles, messages, queue details, guardrail texts, notes),
//! vendors and dates are left out, so a report can be shared.

use super::view::Snapshot;
use crate::protocol::layout::ContractFolder;
use maud::{html, PreEscaped, DOCTYPE};
use std::fmt::Write as _;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Markdown,
    Html,
}

impl std::str::FromStr for Format {
    type Err = String;
    fn from_str(s: &str) -> Result<Format, String> {
        match s {
            "md" | "markdown" => Ok(Format::Markdown),
            "html" => Ok(Format::Html),
            other => Err(format!("--format {other:?}: use md or html")),
        }
    }
}

/// What the report shows, already redacted when asked.
struct Data {
    name: String,
    now: String,
    redacted: bool,
    citizens: Vec<[String; 4]>,
    counts: [usize; 3],
    open: Vec<[String; 5]>,
    tags: Vec<(String, String, String, Vec<[String; 3]>)>,
    amendments: Vec<[String; 5]>,
    /// Who runs the tally that would move an amendment (`Summary::who_tallies`), when
    /// one would; commands in backticks.
    who_tallies: Option<String>,
    findings: (usize, usize, Vec<[String; 3]>),
    queue: Vec<[String; 2]>,
    /// contract, owner, quality, minutes, lessons.
    settled: Vec<[String; 5]>,
    /// lesson, filed by, routing effect.
    lessons: Vec<[String; 3]>,
    /// guardrail, tags, text.
    guardrails: Vec<[String; 3]>,
    /// citizen, paths, until.
    reservations: Vec<[String; 3]>,
    /// citizen, overrides, their mean quality, followed, their mean quality.
    overrides: Vec<[String; 5]>,
}

/// Left out of a redacted report.
const WITHHELD: &str = "—";

/// What a redacted report's pseudonyms are keyed with: this machine's key for the polis
/// (`fs::state::report_key`). Unkeyed, anyone could hash `tag` and `rust`, or a guessed citizen
/// id, and find it in the report.
pub struct Redaction {
    key: [u8; 32],
}

impl Redaction {
    /// The key kept for `polis_root`; when the state folder cannot keep one, a key for this
    /// report alone (its pseudonyms then match no other report's), with a warning.
    pub fn for_polis(polis_root: &std::path::Path) -> Redaction {
        let key = crate::fs::state::report_key(polis_root).unwrap_or_else(|e| {
            tracing::warn!(
                "{e}; this redacted report's pseudonyms will not match another report's"
            );
            rand::random()
        });
        Redaction { key }
    }

    /// A stable pseudonym: `kind-` and six hex digits of SHA-256 over the key, the kind and
    /// the value.
    fn pseudonym(&self, kind: &str, value: &str) -> String {
        let mut bytes = self.key.to_vec();
        bytes.extend_from_slice(format!("{kind}\0{value}").as_bytes());
        let h = crate::protocol::digest::sha256_hex(&bytes);
        format!("{kind}-{}", &h[..6])
    }
}

fn data(s: &Snapshot, name: &str, redaction: Option<&Redaction>) -> Data {
    let redact = redaction.is_some();
    let pseudonym = |kind: &str, value: &str| {
        redaction.map_or_else(|| value.to_string(), |r| r.pseudonym(kind, value))
    };
    let who = |id: &str| {
        if redact {
            pseudonym("citizen", id)
        } else {
            id.to_string()
        }
    };
    let text = |t: &str| {
        if redact {
            WITHHELD.to_string()
        } else {
            t.to_string()
        }
    };
    let tag = |t: &str| {
        if redact {
            pseudonym("tag", t)
        } else {
            t.to_string()
        }
    };
    let id_of = |kind: &str, id: &str| {
        if redact {
            pseudonym(kind, id)
        } else {
            id.to_string()
        }
    };
    let contract = |id: &str| {
        if redact {
            pseudonym("contract", id)
        } else {
            id.to_string()
        }
    };
    let citizens = s
        .summary
        .citizens
        .iter()
        .map(|c| {
            [
                who(&c.id),
                text(c.vendor.as_deref().unwrap_or("")),
                c.state.clone(),
                s.unread.get(&c.id).copied().unwrap_or(0).to_string(),
            ]
        })
        .collect();
    let c = &s.summary.contracts;
    let open = s
        .polis
        .contracts
        .iter()
        .filter(|c| c.folder == ContractFolder::Open)
        .map(|f| {
            let k = &f.contract;
            [
                contract(&f.file.stem),
                text(k.title.as_deref().unwrap_or("")),
                k.status.clone().unwrap_or_default(),
                k.owner.as_deref().map(who).unwrap_or_default(),
                k.stakes.clone().unwrap_or_default(),
            ]
        })
        .collect();
    let tags = s
        .stats
        .tags
        .iter()
        .map(|t| {
            (
                tag(&t.tag),
                t.leader.as_deref().map(who).unwrap_or_default(),
                t.leader_confidence
                    .map(|c| format!("{c:.3}"))
                    .unwrap_or_default(),
                t.citizens
                    .iter()
                    .map(|c| {
                        [
                            who(&c.citizen),
                            c.contracts_completed.to_string(),
                            format!("{:.2}", c.avg_quality_score),
                        ]
                    })
                    .collect(),
            )
        })
        .collect();
    let amendments = s
        .summary
        .amendments
        .iter()
        .map(|a| {
            [
                if redact {
                    pseudonym("amendment", &a.amendment_id)
                } else {
                    a.amendment_id.clone()
                },
                text(a.title.as_deref().unwrap_or("")),
                format!("{} of {}", a.agrees, a.quorum),
                text(a.expires.as_deref().unwrap_or("")),
                a.tally_would().to_string(),
            ]
        })
        .collect();
    // Nothing moves an amendment at quorum until a tally runs: say whether one will, as
    // `status` and the pages do.
    let who_tallies = s.summary.who_tallies();
    let f = &s.summary.findings;
    let newest = f
        .newest
        .iter()
        .map(|x| {
            [
                x.code.as_str().to_string(),
                if redact {
                    pseudonym("path", &x.path)
                } else {
                    format!(
                        "{}{}",
                        x.path,
                        x.line.map(|l| format!(":{l}")).unwrap_or_default()
                    )
                },
                text(&x.message),
            ]
        })
        .collect();
    let queue = s
        .queue
        .iter()
        .map(|q| {
            let kind = q.key.split('/').next().unwrap_or("item");
            if redact {
                [format!("{kind} item"), pseudonym("item", &q.key)]
            } else {
                [q.title.clone(), q.action.clone()]
            }
        })
        .collect();
    let overrides = s
        .overrides()
        .into_iter()
        .map(|o| {
            [
                who(&o.citizen),
                o.overrides.to_string(),
                format!("{:.2}", o.quality_when_overriding),
                o.followed.to_string(),
                o.quality_when_followed
                    .map_or_else(|| "—".to_string(), |q| format!("{q:.2}")),
            ]
        })
        .collect();
    let lessons_of = lessons_by_contract(s);
    let settled = s
        .state
        .settled
        .iter()
        .map(|(path, st)| {
            let stem = crate::protocol::layout::record_stem(path);
            [
                contract(stem),
                who(st.owner),
                if st.quality_defaulted {
                    format!("{} (assumed)", st.quality)
                } else {
                    st.quality.to_string()
                },
                format!("{}", st.minutes),
                lessons_of
                    .get(stem)
                    .map(|ids| {
                        ids.iter()
                            .map(|l| id_of("lesson", l))
                            .collect::<Vec<_>>()
                            .join(", ")
                    })
                    .unwrap_or_default(),
            ]
        })
        .collect();
    let lessons = s
        .polis
        .lessons
        .iter()
        .filter_map(|f| {
            let l = &f.lesson;
            let effects = l.routing_effect.as_ref()?;
            let shown: Vec<String> = effects
                .iter()
                .filter_map(|e| {
                    let tags: Vec<String> =
                        e.tags.iter().filter_map(|t| t.as_str()).map(tag).collect();
                    Some(format!(
                        "{} {:+} on {}",
                        who(e.citizen.as_deref()?),
                        e.delta?,
                        if tags.is_empty() {
                            "any tag".to_string()
                        } else {
                            tags.join(",")
                        }
                    ))
                })
                .collect();
            Some([
                id_of("lesson", &l.lesson_id),
                l.filed_by.as_deref().map(who).unwrap_or_default(),
                shown.join("; "),
            ])
        })
        .collect();
    let guardrails = s
        .guardrails
        .iter()
        .map(|g| {
            [
                id_of("guardrail", &g.guardrail_id),
                g.tags.iter().map(|t| tag(t)).collect::<Vec<_>>().join(", "),
                text(&crate::protocol::delivery::notice::one_line(&g.text, 200)),
            ]
        })
        .collect();
    let reservations = s
        .reservations
        .as_ref()
        .map(|list| {
            list.iter()
                .map(|r| {
                    [
                        r.citizen.as_deref().map(who).unwrap_or_default(),
                        r.paths
                            .iter()
                            .map(|p| id_of("path", p))
                            .collect::<Vec<_>>()
                            .join(", "),
                        text(r.expires_at.as_deref().unwrap_or("released")),
                    ]
                })
                .collect()
        })
        .unwrap_or_default();
    Data {
        name: if redact {
            "polis".into()
        } else {
            name.to_string()
        },
        now: text(&s.now.minute_stamp()),
        redacted: redact,
        citizens,
        counts: [c.open, c.settled, c.abandoned],
        open,
        tags,
        amendments,
        who_tallies,
        findings: (f.errors, f.warnings, newest),
        queue,
        settled,
        lessons,
        guardrails,
        reservations,
        overrides,
    }
}

/// Per contract id, the lessons naming it in `related_contracts` (a list or one string).
fn lessons_by_contract(s: &Snapshot) -> std::collections::HashMap<String, Vec<String>> {
    let mut out: std::collections::HashMap<String, Vec<String>> = Default::default();
    for f in &s.polis.lessons {
        let l = &f.lesson;
        let related: Vec<&str> = match &l.related_contracts {
            crate::yaml::Value::Seq(items) => items.iter().filter_map(|v| v.as_str()).collect(),
            other => other.as_str().into_iter().collect(),
        };
        for c in related {
            out.entry(c.to_string())
                .or_default()
                .push(l.lesson_id.clone());
        }
    }
    out
}

/// The report of `s` (a polis named `name`) in `format`.
pub fn render(s: &Snapshot, name: &str, format: Format, redaction: Option<&Redaction>) -> String {
    let d = data(s, name, redaction);
    match format {
        Format::Markdown => markdown(&d),
        Format::Html => html_page(&d),
    }
}

/// Agent text in the markdown (a table cell, a heading, a line): pipes and newlines would
/// break the row or start a block of its own, and a `<` would open a tag or a comment that a
/// viewer rendering markdown's raw HTML obeys (an image, a `<details>` hiding the queue, a
/// `<!--` swallowing what follows). `\<` is CommonMark's escape: it reads as `<`.
fn cell(t: &str) -> String {
    t.replace('|', "\\|")
        .replace('<', "\\<")
        .replace(['\n', '\r'], " ")
}

/// Agent text as an inline code span: on one line, fenced by more backticks than it holds in a
/// row (padded when it starts or ends with one), so no backtick in it ends the span early.
/// Inside a span nothing is escaped: a backslash would be shown.
fn code(t: &str) -> String {
    let t = t.replace(['\n', '\r'], " ");
    let longest = t.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest + 1);
    let pad = if t.starts_with('`') || t.ends_with('`') {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{t}{pad}{fence}")
}

fn table(out: &mut String, header: &[&str], rows: impl IntoIterator<Item = Vec<String>>) {
    let _ = writeln!(out, "| {} |", header.join(" | "));
    let _ = writeln!(out, "|{}", "---|".repeat(header.len()));
    for r in rows {
        let cells: Vec<String> = r.iter().map(|c| cell(c)).collect();
        let _ = writeln!(out, "| {} |", cells.join(" | "));
    }
}

fn markdown(d: &Data) -> String {
    let mut out = format!(
        "# Polis report: {}\n\n_{} (polis time){}_\n\n",
        cell(&d.name),
        d.now,
        if d.redacted {
            " · redacted for sharing"
        } else {
            ""
        }
    );
    let _ = writeln!(out, "## Waiting for a person ({})\n", d.queue.len());
    for [t, a] in &d.queue {
        let _ = writeln!(out, "- **{}**: {}", cell(t), cell(a));
    }
    let [o, s, a] = d.counts;
    let _ = writeln!(
        out,
        "\n## Contracts\n\nopen {o} · settled {s} · abandoned {a}\n"
    );
    if !d.open.is_empty() {
        table(
            &mut out,
            &["contract", "title", "status", "owner", "stakes"],
            d.open.iter().map(|r| r.to_vec()),
        );
    }
    if !d.settled.is_empty() {
        let _ = writeln!(out, "\n### Settled ({})\n", d.settled.len());
        for [c, owner, q, m, lessons] in &d.settled {
            let _ = writeln!(
                out,
                "- {}: owner {}, quality {}, {} min{}",
                code(c),
                code(owner),
                q,
                m,
                if lessons.is_empty() {
                    String::new()
                } else {
                    format!(", lesson {}", cell(lessons))
                }
            );
        }
    }
    let _ = writeln!(out, "\n## Citizens\n");
    table(
        &mut out,
        &["citizen", "vendor", "state", "unread"],
        d.citizens.iter().map(|r| r.to_vec()),
    );
    let _ = writeln!(out, "\n## Tags\n");
    for (tag, leader, conf, rows) in &d.tags {
        let _ = writeln!(
            out,
            "### {}\n\nleader {} (confidence {})\n",
            cell(tag),
            cell(leader),
            conf
        );
        table(
            &mut out,
            &["citizen", "settled", "avg quality"],
            rows.iter().map(|r| r.to_vec()),
        );
        out.push('\n');
    }
    let _ = writeln!(
        out,
        "## Lessons with a routing effect ({})\n",
        d.lessons.len()
    );
    table(
        &mut out,
        &["lesson", "filed by", "routing effect"],
        d.lessons.iter().map(|r| r.to_vec()),
    );
    let _ = writeln!(out, "\n## Guardrails ({})\n", d.guardrails.len());
    table(
        &mut out,
        &["guardrail", "tags", "text"],
        d.guardrails.iter().map(|r| r.to_vec()),
    );
    let _ = writeln!(
        out,
        "\n## Reservations in force ({})\n",
        d.reservations.len()
    );
    table(
        &mut out,
        &["citizen", "paths", "until"],
        d.reservations.iter().map(|r| r.to_vec()),
    );
    let _ = writeln!(
        out,
        "\n## Overrides of the router ({})\n",
        d.overrides.len()
    );
    table(
        &mut out,
        &[
            "citizen",
            "overrides",
            "quality when overriding",
            "followed the router",
            "quality when following",
        ],
        d.overrides.iter().map(|r| r.to_vec()),
    );
    let _ = writeln!(out, "\n## Amendments\n");
    table(
        &mut out,
        &[
            "amendment",
            "title",
            "votes",
            "expires",
            "a tally now would",
        ],
        d.amendments.iter().map(|r| r.to_vec()),
    );
    if let Some(who) = &d.who_tallies {
        let _ = writeln!(out, "\nwho tallies: {who}");
    }
    let (e, w, newest) = &d.findings;
    let _ = writeln!(out, "\n## Findings\n\n{e} errors, {w} warnings\n");
    table(
        &mut out,
        &["code", "where", "what"],
        newest.iter().map(|r| r.to_vec()),
    );
    out
}

fn html_page(d: &Data) -> String {
    let [o, s, a] = d.counts;
    let (e, w, newest) = &d.findings;
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'";
                title { "Polis report: " (d.name) }
                style { (PreEscaped(include_str!("static/style.css"))) }
            }
            body {
                header { span.brand { "polisd report" } span.muted { (d.name) " · " (d.now) @if d.redacted { " · redacted for sharing" } } }
                main {
                    h1 { "Polis report: " (d.name) }
                    h2 { "Waiting for a person (" (d.queue.len()) ")" }
                    ul.queue { @for [t, a] in &d.queue { li { span.what { (t) } br; span.muted { (a) } } } }
                    h2 { "Contracts" }
                    div.cards {
                        div.card { div.n { (o) } "open" }
                        div.card { div.n { (s) } "settled" }
                        div.card { div.n { (a) } "abandoned" }
                    }
                    (rows(&["contract", "title", "status", "owner", "stakes"], d.open.iter().map(|r| r.to_vec())))
                    @if !d.settled.is_empty() {
                        h3 { "Settled (" (d.settled.len()) ")" }
                        (rows(&["contract", "owner", "quality", "minutes", "lessons"], d.settled.iter().map(|r| r.to_vec())))
                    }
                    h2 { "Citizens" }
                    (rows(&["citizen", "vendor", "state", "unread"], d.citizens.iter().map(|r| r.to_vec())))
                    h2 { "Tags" }
                    @for (tag, leader, conf, r) in &d.tags {
                        h3 { (tag) }
                        p { "leader " (leader) " (confidence " (conf) ")" }
                        (rows(&["citizen", "settled", "avg quality"], r.iter().map(|x| x.to_vec())))
                    }
                    h2 { "Lessons with a routing effect (" (d.lessons.len()) ")" }
                    (rows(&["lesson", "filed by", "routing effect"], d.lessons.iter().map(|r| r.to_vec())))
                    h2 { "Guardrails (" (d.guardrails.len()) ")" }
                    (rows(&["guardrail", "tags", "text"], d.guardrails.iter().map(|r| r.to_vec())))
                    h2 { "Reservations in force (" (d.reservations.len()) ")" }
                    (rows(&["citizen", "paths", "until"], d.reservations.iter().map(|r| r.to_vec())))
                    h2 { "Overrides of the router (" (d.overrides.len()) ")" }
                    (rows(&["citizen", "overrides", "quality when overriding", "followed the router", "quality when following"], d.overrides.iter().map(|r| r.to_vec())))
                    h2 { "Amendments" }
                    (rows(&["amendment", "title", "votes", "expires", "a tally now would"], d.amendments.iter().map(|r| r.to_vec())))
                    @if let Some(who) = &d.who_tallies { p { "who tallies: " (super::pages::code_spans(who)) } }
                    h2 { "Findings" }
                    p { (e) " errors, " (w) " warnings" }
                    (rows(&["code", "where", "what"], newest.iter().map(|r| r.to_vec())))
                }
            }
        }
    }
    .into_string()
}

fn rows(header: &[&str], body: impl IntoIterator<Item = Vec<String>>) -> maud::Markup {
    html! {
        table {
            thead { tr { @for h in header { th { (h) } } } }
            tbody { @for r in body { tr { @for c in &r { td { (c) } } } } }
        }
    }
}
