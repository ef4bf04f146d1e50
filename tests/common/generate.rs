//! Deterministic generated polises for comparison tests and benchmarks: settled contracts for
//! reconcile (SPEC §6) and citizens, statuses, stats, lessons and open contracts for routing
//! (SPEC §7). Everything comes from a seeded `StdRng`, so a seed names a polis.
//!
//! Generated inputs stay inside what the reference handles the way SPEC describes (no BOM, no
//! string `required_tags`, no mixed time styles in one polis); the named edge-case tests cover
//! the rest.
#![allow(dead_code)]

use rand::rngs::StdRng;
use rand::seq::IndexedRandom;
use rand::Rng;
use std::path::Path;

/// A file to write: path relative to `_polis/`, and its bytes.
pub type File = (String, String);

/// Writes generated files under `root` (the `_polis/` folder).
pub fn write_tree(root: &Path, files: &[File]) {
    for (rel, text) in files {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().expect("files live in folders")).expect("mkdir");
        std::fs::write(&p, text).expect("write generated file");
    }
}

pub const OWNERS: &[&str] = &[
    "alice-agent",
    "bob-builder",
    "carol-coder",
    "dave-docs-bot",
    "erin-reviewer",
    "frank-tester",
    "grace-ops-01",
    "heidi-analyst",
    "zoë-agent-x",
];

/// Tags, including non-ASCII ones and ones PyYAML must quote as keys.
pub const TAGS: &[&str] = &[
    "python",
    "docs",
    "rust",
    "data-eng",
    "ml",
    "frontend",
    "café",
    "日本語",
    "naïve-tag",
    "yes",
    "2024",
    "null",
    "a:b",
];

/// How `settled_at` is written; one style per polis, as the reference needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeStyle {
    /// `2026-03-02 10:00:00`, a naive datetime.
    Unquoted,
    /// `2026-03-02T10:00:00+02:00`, aware datetimes with varying offsets.
    Aware,
    /// `'2026-03-02 10:00'`, a string.
    Quoted,
    /// `2026-03-02`, a date.
    DateOnly,
}

pub const TIME_STYLES: [TimeStyle; 4] = [
    TimeStyle::Unquoted,
    TimeStyle::Aware,
    TimeStyle::Quoted,
    TimeStyle::DateOnly,
];

/// A tag as a YAML flow/block scalar that reads back as that string.
pub fn yaml_str(rng: &mut StdRng, s: &str) -> String {
    let needs = matches!(s, "yes" | "2024" | "null") || s.contains(':');
    if needs || rng.random_bool(0.15) {
        if rng.random_bool(0.5) {
            format!("'{s}'")
        } else {
            format!("\"{s}\"")
        }
    } else {
        s.to_string()
    }
}

fn time_text(rng: &mut StdRng, style: TimeStyle, minute: i64) -> String {
    let base = chrono::NaiveDate::from_ymd_opt(2025, 11, 1)
        .unwrap()
        .and_hms_opt(0, 0, 0)
        .unwrap();
    let t = base + chrono::Duration::minutes(minute);
    match style {
        TimeStyle::Unquoted => t.format("%Y-%m-%d %H:%M:%S").to_string(),
        TimeStyle::Aware => {
            // The same instant written with different offsets: ties across offsets.
            let off_h = *[0i64, 2, -5, 9].choose(rng).unwrap();
            let local = t + chrono::Duration::hours(off_h);
            let sign = if off_h < 0 { '-' } else { '+' };
            format!(
                "{}{sign}{:02}:00",
                local.format("%Y-%m-%dT%H:%M:%S"),
                off_h.abs()
            )
        }
        TimeStyle::Quoted => {
            let s = t.format("%Y-%m-%d %H:%M").to_string();
            if rng.random_bool(0.5) {
                format!("'{s}'")
            } else {
                format!("\"{s}\"")
            }
        }
        TimeStyle::DateOnly => t.format("%Y-%m-%d").to_string(),
    }
}

fn quality_part(rng: &mut StdRng) -> (Option<String>, String) {
    let q = rng.random_range(1..=5);
    match rng.random_range(0..9) {
        0 | 1 => (Some(format!("quality_score: {q}")), String::new()),
        2 => {
            let wild = *[0, 6, -1, 9, 100].choose(rng).unwrap();
            (Some(format!("quality_score: {wild}")), String::new())
        }
        3 => (
            Some("quality_score: null".into()),
            format!("Quality self-score: {q}\n"),
        ),
        4 => (
            None,
            format!(
                "{}\n",
                [
                    format!("### Quality self-score: {q}"),
                    format!("quality self_score:{q}"),
                    format!("  ## QUALITY SELF SCORE : {q}  "),
                    format!("Quality Self-Score:   {q}"),
                ]
                .choose(rng)
                .unwrap()
            ),
        ),
        5 => (None, format!("### Quality self-score\n\n{q}\n")),
        6 => (
            Some("quality_score: '4'".into()),
            format!("## Quality self-score\n\n{q}\n"),
        ),
        // Missing: 3 is assumed; the prose must not be read as a score.
        _ => (None, "I scored 5/5 in usability.\n".into()),
    }
}

fn minutes_part(rng: &mut StdRng) -> (Option<String>, String) {
    let m = rng.random_range(1..=600);
    match rng.random_range(0..7) {
        0 | 1 => (Some(format!("actual_minutes: {m}")), String::new()),
        2 => {
            let wild = *[0, -5].choose(rng).unwrap();
            (Some(format!("actual_minutes: {wild}")), String::new())
        }
        3 => (
            Some("actual_minutes: null".into()),
            format!(
                "{}\n",
                [
                    format!("actual_minutes: {m}"),
                    format!("- actual minutes: {m}"),
                    format!("### Actual_Minutes: {m}"),
                    format!("* actual_minutes:{m}"),
                ]
                .choose(rng)
                .unwrap()
            ),
        ),
        4 => (None, format!("actual minutes: {m}\n")),
        _ => (
            None,
            "Took 6 actual_minutes per paper x 12 papers.\n".into(),
        ),
    }
}

fn tag_list(rng: &mut StdRng, pool: &[&str], max: usize) -> Vec<String> {
    let n = rng.random_range(0..=max.min(pool.len()));
    let mut tags: Vec<String> = Vec::new();
    while tags.len() < n {
        let t = pool.choose(rng).unwrap().to_string();
        if !tags.contains(&t) {
            tags.push(t);
        }
    }
    tags
}

fn tags_yaml(rng: &mut StdRng, key: &str, tags: &[String]) -> String {
    if tags.is_empty() {
        return match rng.random_range(0..3) {
            0 => format!("{key}: []\n"),
            1 => format!("{key}: null\n"),
            _ => String::new(),
        };
    }
    let items: Vec<String> = tags.iter().map(|t| yaml_str(rng, t)).collect();
    if rng.random_bool(0.5) {
        format!("{key}: [{}]\n", items.join(", "))
    } else {
        let mut s = format!("{key}:\n");
        for i in items {
            s.push_str(&format!("- {i}\n"));
        }
        s
    }
}

/// The files of `contracts/settled/` for one polis of `n` settled contracts (plus a few
/// files reconcile must ignore). Timestamps repeat, so ties are common.
pub fn settled_polis(rng: &mut StdRng, n: usize, style: TimeStyle) -> Vec<File> {
    let owners: Vec<&str> = {
        let k = rng.random_range(1..=OWNERS.len());
        OWNERS.choose_multiple(rng, k).copied().collect()
    };
    let tags: Vec<&str> = {
        let k = rng.random_range(1..=TAGS.len());
        TAGS.choose_multiple(rng, k).copied().collect()
    };
    let span = (n as i64 / 3).max(1);
    let mut files = Vec::with_capacity(n + 3);
    for i in 0..n {
        let owner = owners.choose(rng).unwrap();
        let t = tag_list(rng, &tags, 3);
        let minute = rng.random_range(0..span)
            * if style == TimeStyle::DateOnly {
                1440
            } else {
                37
            };
        let when = time_text(rng, style, minute);
        let (q_fm, q_body) = quality_part(rng);
        let (m_fm, m_body) = minutes_part(rng);
        let mut fm = format!("contract_id: c-{i:05}\ntitle: Contract {i}\nopened_by: {owner}\n");
        match rng.random_range(0..6) {
            0 => fm.push_str(&format!("opened_at: {when}\n")),
            1 => fm.push_str(&format!("opened_at: {when}\nsettled_at: null\n")),
            _ => fm.push_str(&format!("settled_at: {when}\n")),
        }
        fm.push_str(&format!("owner: {owner}\nstatus: settled\nstakes: low\n"));
        fm.push_str(&tags_yaml(rng, "required_tags", &t));
        fm.push_str("routing:\n  recommended_by_router: null\n  override: null\n");
        for line in [q_fm, m_fm].into_iter().flatten() {
            fm.push_str(&line);
            fm.push('\n');
        }
        let mut body = format!("\n# Contract {i}\n\n## Settlement\n\n");
        let parts = if rng.random_bool(0.5) {
            [q_body, m_body]
        } else {
            [m_body, q_body]
        };
        for p in parts {
            body.push_str(&p);
            body.push('\n');
        }
        let mut text = format!("---\n{fm}---\n{body}");
        if rng.random_bool(0.1) {
            text = text.replace('\n', "\r\n");
        }
        files.push((format!("contracts/settled/c-{i:05}.md"), text));
    }
    // Files reconcile must pass over.
    files.push((
        "contracts/settled/still-claimed.md".into(),
        format!(
            "---\nstatus: claimed\nowner: {}\nrequired_tags: [docs]\n---\n",
            owners[0]
        ),
    ));
    files.push((
        "contracts/settled/notes.txt".into(),
        "---\nstatus: settled\nowner: x\n---\n".into(),
    ));
    files
}

/// A settled polis of `n` contracts for reconcile benchmarks (unquoted times).
pub fn settled_files(seed: u64, n: usize) -> Vec<File> {
    use rand::SeedableRng;
    let mut rng = StdRng::seed_from_u64(seed);
    settled_polis(&mut rng, n, TimeStyle::Unquoted)
}

/// A routing polis for benchmarks (see [`routing_polis`]).
pub fn routing_files(seed: u64) -> Vec<File> {
    use rand::SeedableRng;
    routing_polis(&mut StdRng::seed_from_u64(seed))
}

/// A polis for routing: cards, statuses, `routing_stats.yml`, lessons, `polis.yml` and
/// open contracts (under `contracts/open/`), shaped to exercise every branch of SPEC §7.
pub fn routing_polis(rng: &mut StdRng) -> Vec<File> {
    let mut files = Vec::new();
    let tags: Vec<&str> = {
        let k = rng.random_range(1..=6);
        TAGS.choose_multiple(rng, k).copied().collect()
    };
    let n_cit = rng.random_range(1..=7);
    let citizens: Vec<&str> = OWNERS.choose_multiple(rng, n_cit).copied().collect();
    let cost = ["low", "medium", "high", "cheap"];
    for id in &citizens {
        let mut card = format!("agent_id: {id}\nvendor: test\n");
        if rng.random_bool(0.9) {
            card.push_str("capability_tags:\n");
            for t in tag_list(rng, &tags, 4) {
                let key = yaml_str(rng, &t);
                match rng.random_range(0..8) {
                    0 => card.push_str(&format!("  {key}: null\n")),
                    1 => card.push_str(&format!("  {key}: {{}}\n")),
                    2 => card.push_str(&format!("  {key}: {{evidence: none}}\n")),
                    3 => card.push_str(&format!("  {key}: {{self_rating: 3.5}}\n")),
                    4 => card.push_str(&format!("  {key}: {{self_rating: true}}\n")),
                    _ => card.push_str(&format!(
                        "  {key}:\n    self_rating: {}\n    evidence: x\n",
                        rng.random_range(0..=5)
                    )),
                }
            }
        }
        match rng.random_range(0..6) {
            0 => {}
            1 => card.push_str("cost_envelope: null\n"),
            2 => card.push_str("cost_envelope: {}\n"),
            3 => card.push_str("cost_envelope:\n  relative: null\n"),
            _ => card.push_str(&format!(
                "cost_envelope:\n  relative: {}\n",
                cost.choose(rng).unwrap()
            )),
        }
        files.push((format!("citizens/{id}/capability_card.yml"), card));
        let state = match rng.random_range(0..12) {
            0 => None,
            1 => Some("state: null\n".to_string()),
            2 => Some("agent_id: x\n".to_string()),
            3 => Some(String::new()),
            n => Some(format!(
                "state: {}\n",
                [
                    "idle",
                    "working",
                    "working",
                    "blocked",
                    "reviewing",
                    "away",
                    "sleeping",
                    "idle",
                    "working"
                ][n as usize - 3]
            )),
        };
        if let Some(state) = state {
            let blockers = [
                "",
                "blockers: []\n",
                "blockers: [waiting-on-review]\n",
                "blockers: null\n",
            ]
            .choose(rng)
            .unwrap();
            let text = if state.is_empty() {
                "no frontmatter here\n".to_string()
            } else {
                format!("---\n{state}{blockers}---\n\n# Status\n")
            };
            files.push((format!("citizens/{id}/status.md"), text));
        }
    }
    // routing_stats.yml, hand-shaped so numbers vary freely.
    if rng.random_bool(0.85) {
        let mut s = String::from("last_updated: '2026-03-02 10:00:00'\n");
        if rng.random_bool(0.7) {
            s.push_str(&format!(
                "explore_rate: {}\n",
                ["0.15", "0.2", "0.05", "0"].choose(rng).unwrap()
            ));
        }
        let mut tag_block = String::new();
        for t in &tags {
            if rng.random_bool(0.2) {
                continue;
            }
            let mut cits = String::new();
            for id in citizens.iter().chain(["someone-else"].iter()) {
                if rng.random_bool(0.3) {
                    continue;
                }
                let n = rng.random_range(0..=25);
                let avg = if rng.random_bool(0.2) {
                    format!("{}", rng.random_range(1..=5))
                } else {
                    format!("{}", rng.random_range(1.0..5.0f64))
                };
                cits.push_str(&format!(
                    "      {id}:\n        contracts_completed: {n}\n        avg_quality_score: {avg}\n        avg_actual_minutes: 30.0\n        last_completed: '2026-03-01'\n"
                ));
            }
            // The reference needs a mapping here, never a bare `citizens:`.
            if cits.is_empty() {
                tag_block.push_str(&format!("  {}:\n    citizens: {{}}\n", yaml_str(rng, t)));
            } else {
                tag_block.push_str(&format!("  {}:\n    citizens:\n{cits}", yaml_str(rng, t)));
            }
            tag_block.push_str(&format!("    leader: {}\n", citizens[0]));
            if rng.random_bool(0.8) {
                tag_block.push_str(&format!(
                    "    leader_confidence: {:.3}\n",
                    rng.random_range(0.5..1.0f64)
                ));
            }
        }
        if tag_block.is_empty() {
            s.push_str("tags: {}\n");
        } else {
            s.push_str("tags:\n");
            s.push_str(&tag_block);
        }
        files.push(("contracts/routing_stats.yml".into(), s));
    }
    // Lessons.
    for i in 0..rng.random_range(0..5) {
        let tag = tags.choose(rng).unwrap();
        let dir: String = tag.chars().filter(|c| c.is_alphanumeric()).collect();
        let id = format!("2026-03-0{}-lesson-{i}", i % 9 + 1);
        let mut fm = String::new();
        if rng.random_bool(0.8) {
            fm.push_str(&format!("lesson_id: {id}\n"));
        }
        fm.push_str(&format!(
            "filed_by: {}\nquality_impact: {}\n",
            citizens[0],
            rng.random_range(1..=5)
        ));
        match rng.random_range(0..7) {
            0 => fm.push_str("status: proposed\n"),
            1 => fm.push_str("status: Accepted\n"),
            2 => fm.push_str("status: null\n"),
            3 => fm.push_str("status: accepted\n"),
            _ => {}
        }
        if rng.random_bool(0.85) {
            fm.push_str("routing_effect:\n");
            for _ in 0..rng.random_range(0..4) {
                let who = if rng.random_bool(0.8) {
                    citizens.choose(rng).unwrap()
                } else {
                    "nobody-here"
                };
                fm.push_str(&format!("- citizen: {who}\n"));
                let et = tag_list(rng, &tags, 2);
                match rng.random_range(0..4) {
                    0 => {}
                    1 => fm.push_str("  tags: []\n"),
                    _ => {
                        let items: Vec<String> = et.iter().map(|t| yaml_str(rng, t)).collect();
                        fm.push_str(&format!("  tags: [{}]\n", items.join(", ")));
                    }
                }
                let delta = match rng.random_range(0..8) {
                    0 => "'0.05'".to_string(),
                    1 => "null".to_string(),
                    2 => "0".to_string(),
                    3 => "' -0.1 '".to_string(),
                    4 => "abc".to_string(),
                    5 => String::new(),
                    _ => format!("{:.3}", rng.random_range(-0.2..0.2f64)),
                };
                if !delta.is_empty() {
                    fm.push_str(&format!("  delta: {delta}\n"));
                }
            }
        } else if rng.random_bool(0.5) {
            fm.push_str("routing_effect: {citizen: x}\n");
        }
        files.push((
            format!("lessons/{dir}/{id}.md"),
            format!("---\n{fm}---\n\nLesson text.\n"),
        ));
    }
    // polis.yml.
    match rng.random_range(0..6) {
        0 => files.push(("polis.yml".into(), "schema_version: 2\n".into())),
        1 => files.push((
            "polis.yml".into(),
            "routing:\n  weights:\n    history: 0.7\n".into(),
        )),
        2 => files.push((
            "polis.yml".into(),
            "routing:\n  explore_rate: 0.3\n  weights: {history: 0.4, self: 0.3, cost: 0.2, avail: 0.1}\n".into(),
        )),
        3 => files.push(("polis.yml".into(), "routing: null\n".into())),
        _ => {}
    }
    // Open contracts.
    for i in 0..rng.random_range(1..=4) {
        let t = tag_list(rng, &tags, 3);
        let mut fm = format!("contract_id: open-{i}\nowner: null\nstatus: proposed\n");
        fm.push_str(&tags_yaml(rng, "required_tags", &t));
        match rng.random_range(0..6) {
            0 => {}
            1 => fm.push_str("cost_ceiling: null\n"),
            2 => fm.push_str("cost_ceiling: premium\n"),
            _ => fm.push_str(&format!(
                "cost_ceiling: {}\n",
                ["low", "medium", "high"].choose(rng).unwrap()
            )),
        }
        fm.push_str("routing:\n  recommended_by_router: null\n  recommendation_score: null\n  exploration: null\n  override: null\n");
        files.push((
            format!("contracts/open/open-{i}.md"),
            format!("---\n{fm}---\n\n## Intent\n"),
        ));
    }
    files
}
