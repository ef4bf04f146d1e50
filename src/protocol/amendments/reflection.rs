//! Reflection: the protocol improving itself (SPEC §8's amendments, proposed from evidence).
//!
//! Detectors read what the polis already records (settled contracts, chronicle findings,
//! decided amendments, stale claims, lessons) and return [`Proposal`]s: an amendment with its
//! evidence and a concrete change. [`dedup`] decides which of them may be filed, and
//! [`render`] writes the amendment file's text. Pure: the caller gathers the inputs and files
//! the proposals through the application layer; nothing here ratifies anything.
//!
//! The first three detectors are the reference's (`polis reflect`), with its thresholds and
//! slugs; quality is read the way reconcile reads it (frontmatter, then body, then the
//! default 3), where the reference skips a contract without a frontmatter `quality_score`.

use crate::protocol::clock::PolisTime;
use crate::protocol::layout;
use crate::yaml::{Mapping, Value};
use chrono::{Duration, NaiveDate, NaiveDateTime};
use std::collections::{BTreeMap, BTreeSet};

/// The system citizen that signs reflection's proposals (SPEC §2).
pub const REFLECTOR: &str = "polis-reflector";
/// A quality at or below this is low (the reference's `LOW_QUALITY`).
pub const LOW_QUALITY: u8 = 2;
/// How far a peer must beat the favoured citizen's mean quality for a misroute.
pub const MISROUTE_GAP: f64 = 1.0;
/// How many pieces of evidence make a pattern recurring (`--min-evidence`).
pub const DEFAULT_MIN_EVIDENCE: usize = 3;
/// The window of the chronicle-finding detector.
pub const FINDING_WINDOW_DAYS: i64 = 30;
/// The window of the expiring-amendments detector.
pub const EXPIRY_WINDOW_DAYS: i64 = 90;
/// A rejected or expired slug is not proposed again for this long, unless its evidence doubled.
pub const REPROPOSE_AFTER_DAYS: i64 = 90;
/// How long a proposal stays open (the reference's 30 days).
pub const PROPOSAL_DAYS: i64 = 30;
/// Proposals carry this quorum: SPEC §8 raises anything lower to 2 anyway.
pub const PROPOSAL_QUORUM: u32 = 2;

/// One settled contract as the reference's detectors see it.
#[derive(Debug, Clone, PartialEq)]
pub struct SettledEvidence {
    pub contract_id: String,
    pub owner: Option<String>,
    pub tags: Vec<String>,
    pub quality: u8,
    pub recommended: Option<String>,
    /// High stakes, or a review required or assigned: low quality here was not unguarded.
    pub guarded: bool,
    /// When it settled (`settled_at`, else `opened_at`, SPEC §6), in the polis timezone.
    pub settled_at: Option<NaiveDateTime>,
}

/// A chronicle finding with who caused it and when (from the daemon's validation).
#[derive(Debug, Clone, PartialEq)]
pub struct FindingEvidence {
    pub code: String,
    pub author: String,
    pub stamp: NaiveDateTime,
    pub line: String,
}

/// A decided or pending amendment, for the expiry detector and for [`dedup`].
#[derive(Debug, Clone, PartialEq)]
pub struct AmendmentEvidence {
    pub id: String,
    pub status: String,
    pub ratified: bool,
    /// `reflect_slug`, for proposals reflection filed.
    pub reflect_slug: Option<String>,
    /// How much evidence the proposal cited (`evidence_count`, else the length of its lists).
    pub evidence_count: usize,
    /// When it was proposed, and when it expires(d).
    pub proposed_at: Option<NaiveDateTime>,
    pub expires_at: Option<NaiveDateTime>,
}

/// An open, claimed contract that has gone quiet (SPEC §9's `contract-stale`).
#[derive(Debug, Clone, PartialEq)]
pub struct StaleEvidence {
    pub contract_id: String,
    pub tags: Vec<String>,
    /// When it went stale: its last chronicle line (or its opening) + 14 days.
    pub since: Option<NaiveDateTime>,
}

/// A lesson, with the impact routing reads from it.
#[derive(Debug, Clone, PartialEq)]
pub struct LessonEvidence {
    pub lesson_id: String,
    pub tags: Vec<String>,
    pub impact: f64,
    /// `filed_at`.
    pub filed_at: Option<NaiveDateTime>,
}

/// Everything the detectors read.
#[derive(Debug, Clone, Default)]
pub struct Evidence {
    /// In path order, as the reference lists `contracts/settled/`.
    pub settled: Vec<SettledEvidence>,
    pub findings: Vec<FindingEvidence>,
    pub amendments: Vec<AmendmentEvidence>,
    pub stale: Vec<StaleEvidence>,
    pub lessons: Vec<LessonEvidence>,
    /// The `settled contract` lines that say `no lesson` (a settle with `--no-lesson`), as
    /// findings with the code `no-lesson`.
    pub no_lessons: Vec<FindingEvidence>,
    /// `routing.lesson_impact_floor` and `routing.explore_rate` as `polis.yml` sets them.
    pub lesson_impact_floor: f64,
    pub explore_rate: f64,
    /// The polis's clock: the newest chronicle stamp (lines in the future left out), the time
    /// of a proposal whose evidence records none.
    pub clock: Option<NaiveDateTime>,
}

/// The detectors, by the `kind` their proposals carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Detector {
    ChronicMisroute,
    RecurringLowQuality,
    StakesMiscalibration,
    RepeatedFinding,
    ExpiringAmendments,
    StaleTag,
    RoutingOverrides,
    LessonImpactFloor,
    SettledWithoutLesson,
}

impl Detector {
    pub const ALL: [Detector; 9] = [
        Detector::ChronicMisroute,
        Detector::RecurringLowQuality,
        Detector::StakesMiscalibration,
        Detector::RepeatedFinding,
        Detector::ExpiringAmendments,
        Detector::StaleTag,
        Detector::RoutingOverrides,
        Detector::LessonImpactFloor,
        Detector::SettledWithoutLesson,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Detector::ChronicMisroute => "chronic-misroute",
            Detector::RecurringLowQuality => "recurring-low-quality",
            Detector::StakesMiscalibration => "stakes-miscalibration",
            Detector::RepeatedFinding => "repeated-finding",
            Detector::ExpiringAmendments => "expiring-amendments",
            Detector::StaleTag => "stale-tag",
            Detector::RoutingOverrides => "routing-overrides",
            Detector::LessonImpactFloor => "lesson-impact-floor",
            Detector::SettledWithoutLesson => "settled-without-lesson",
        }
    }

    pub fn parse(text: &str) -> Option<Detector> {
        Detector::ALL.into_iter().find(|d| d.as_str() == text)
    }
}

/// A change to one `polis.yml` setting that a ratified proposal asks the citizens to make.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct SettingChange {
    /// Dotted path, e.g. `routing.explore_rate`.
    pub key: String,
    pub from: f64,
    pub to: f64,
}

impl SettingChange {
    /// The change as a unified diff of `polis.yml`'s nested key, the way a person applies it.
    pub fn diff(&self) -> String {
        let (section, leaf) = self.key.split_once('.').unwrap_or(("", &self.key));
        let mut out = format!("--- {0}\n+++ {0}\n", layout::POLIS_YML);
        if section.is_empty() {
            out.push_str(&format!("-{leaf}: {}\n+{leaf}: {}\n", self.from, self.to));
        } else {
            out.push_str(&format!(
                "@@ {section}: @@\n {section}:\n-  {leaf}: {}\n+  {leaf}: {}\n",
                self.from, self.to
            ));
        }
        out
    }
}

/// The `setting_change` a reflection proposal carries in its frontmatter, if any.
pub fn setting_change_of(fields: &Value) -> Option<SettingChange> {
    let change = fields.get("setting_change");
    let number = |v: &Value| match v {
        Value::Int(i) => Some(*i as f64),
        Value::Float(f) if f.is_finite() => Some(*f),
        _ => None,
    };
    Some(SettingChange {
        key: change.get("key").as_str()?.to_string(),
        from: number(change.get("from"))?,
        to: number(change.get("to"))?,
    })
}

/// One proposed amendment, before it is rendered.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Proposal {
    pub kind: Detector,
    pub slug: String,
    pub title: String,
    pub affects: Vec<String>,
    pub problem: String,
    pub evidence_contracts: Vec<String>,
    pub evidence_lines: Vec<String>,
    pub metrics: Vec<(String, String)>,
    pub proposed_change: String,
    pub rationale: String,
    pub setting: Option<SettingChange>,
}

impl Proposal {
    /// How much evidence backs it: the contracts or lines it cites.
    pub fn evidence_count(&self) -> usize {
        self.evidence_contracts.len().max(self.evidence_lines.len())
    }
}

/// Runs every detector. `min_evidence` below 1 counts as 1.
pub fn detect(evidence: &Evidence, min_evidence: usize, now: &PolisTime) -> Vec<Proposal> {
    let min = min_evidence.max(1);
    let by_tag = by_tag(&evidence.settled);
    let mut out = Vec::new();
    out.extend(chronic_misroute(&by_tag, min, evidence.explore_rate));
    out.extend(recurring_low_quality(&by_tag, min));
    out.extend(stakes_miscalibration(&by_tag, min));
    out.extend(repeated_findings(&evidence.findings, min, now));
    out.extend(expiring_amendments(&evidence.amendments, min, now));
    out.extend(stale_tags(&evidence.stale, min));
    out.extend(routing_overrides(&by_tag, min));
    out.extend(lesson_impact_floor(
        &by_tag,
        &evidence.lessons,
        evidence.lesson_impact_floor,
        min,
    ));
    out.extend(settled_without_lesson(&evidence.no_lessons, min, now));
    out
}

/// The skill seed's "settling does three things together": a citizen who settled at least
/// `min` contracts with `--no-lesson` in the last [`FINDING_WINDOW_DAYS`] days is skipping the
/// step that makes the team learn.
fn settled_without_lesson(lines: &[FindingEvidence], min: usize, now: &PolisTime) -> Vec<Proposal> {
    let since = now.now - Duration::days(FINDING_WINDOW_DAYS);
    let mut by_author: BTreeMap<&str, Vec<&FindingEvidence>> = BTreeMap::new();
    for l in lines.iter().filter(|l| l.stamp >= since) {
        by_author.entry(l.author.as_str()).or_default().push(l);
    }
    let mut out = Vec::new();
    for (author, hits) in by_author {
        if hits.len() < min {
            continue;
        }
        out.push(Proposal {
            kind: Detector::SettledWithoutLesson,
            slug: format!("no-lesson-{author}"),
            title: format!("`{author}` settles without lessons: {} times", hits.len()),
            affects: vec!["_polis/CONSTITUTION.md".into()],
            problem: format!(
                "In the last {FINDING_WINDOW_DAYS} days `{author}` settled {} contracts with                  `--no-lesson`, so routing and later contracts learn nothing from them.",
                hits.len()
            ),
            evidence_contracts: Vec::new(),
            evidence_lines: hits.iter().map(|l| l.line.clone()).collect(),
            metrics: vec![
                ("citizen".into(), author.to_string()),
                ("settled_without_lesson".into(), hits.len().to_string()),
            ],
            proposed_change: format!(
                "`{author}` files a one-paragraph lesson with every settlement; a settlement \
                 without one names, in its Settlement section, why the work taught nothing new."
            ),
            rationale: "Lessons are how a polis remembers; a habit of skipping them is friction \
                        the chronicle already shows."
                .into(),
            setting: None,
        });
    }
    out
}

/// Settled contracts by tag, tags in first-seen order (the reference's dict order).
fn by_tag(settled: &[SettledEvidence]) -> Vec<(&str, Vec<&SettledEvidence>)> {
    let mut order: Vec<(&str, Vec<&SettledEvidence>)> = Vec::new();
    let mut index: BTreeMap<&str, usize> = BTreeMap::new();
    for c in settled {
        for t in &c.tags {
            let i = *index.entry(t.as_str()).or_insert_with(|| {
                order.push((t.as_str(), Vec::new()));
                order.len() - 1
            });
            order[i].1.push(c);
        }
    }
    order
}

fn mean(xs: impl IntoIterator<Item = f64>) -> Option<f64> {
    let (sum, n) = xs
        .into_iter()
        .fold((0.0, 0usize), |(s, n), x| (s + x, n + 1));
    (n > 0).then(|| sum / n as f64)
}

fn ids(rows: &[&SettledEvidence]) -> Vec<String> {
    rows.iter().map(|c| c.contract_id.clone()).collect()
}

/// The reference's chronic misroute: the citizen the router favours on a tag (the one it
/// recommended most often; a tie goes to the one recommended first, where the reference's
/// pick is arbitrary) averages at least [`MISROUTE_GAP`] below the best owner, who has at least
/// `min` contracts on the tag.
fn chronic_misroute(
    by_tag: &[(&str, Vec<&SettledEvidence>)],
    min: usize,
    explore_rate: f64,
) -> Vec<Proposal> {
    let mut out = Vec::new();
    for (tag, rows) in by_tag {
        let mut by_owner: Vec<(&str, Vec<f64>)> = Vec::new();
        for c in rows {
            let Some(owner) = c.owner.as_deref() else {
                continue;
            };
            match by_owner.iter_mut().find(|(o, _)| *o == owner) {
                Some((_, qs)) => qs.push(f64::from(c.quality)),
                None => by_owner.push((owner, vec![f64::from(c.quality)])),
            }
        }
        if by_owner.len() < 2 {
            continue;
        }
        let mut recs: Vec<(&str, usize)> = Vec::new();
        for r in rows.iter().filter_map(|c| c.recommended.as_deref()) {
            match recs.iter_mut().find(|(c, _)| *c == r) {
                Some((_, n)) => *n += 1,
                None => recs.push((r, 1)),
            }
        }
        let Some(favoured) = recs
            .iter()
            .fold(None::<(&str, usize)>, |best, &(c, n)| match best {
                Some((_, m)) if m >= n => best,
                _ => Some((c, n)),
            })
            .map(|(c, _)| c)
        else {
            continue;
        };
        let means: Vec<(&str, f64, usize)> = by_owner
            .iter()
            .filter_map(|(o, qs)| Some((*o, mean(qs.iter().copied())?, qs.len())))
            .collect();
        let Some(&(_, favoured_mean, favoured_n)) = means.iter().find(|(o, _, _)| *o == favoured)
        else {
            continue;
        };
        // Python's max keeps the first of equal means.
        let Some(&(best, best_mean, best_n)) =
            means
                .iter()
                .fold(None::<&(&str, f64, usize)>, |b, m| match b {
                    Some(b) if b.1 >= m.1 => Some(b),
                    _ => Some(m),
                })
        else {
            continue;
        };
        if best == favoured || best_n < min || best_mean - favoured_mean < MISROUTE_GAP {
            continue;
        }
        let to = ((explore_rate + 0.1).min(0.5) * 100.0).round() / 100.0;
        out.push(Proposal {
            kind: Detector::ChronicMisroute,
            slug: format!("misroute-{tag}"),
            title: format!("Re-weight routing for `{tag}`: the favoured citizen underperforms"),
            affects: vec![
                "_polis/contracts/routing_stats.yml".into(),
                "_polis/polis.yml".into(),
            ],
            problem: format!(
                "On `{tag}` the router recommends `{favoured}` most often (mean quality \
                 {favoured_mean:.1}/5 over {favoured_n} settled), while `{best}` averages \
                 {best_mean:.1}/5 over {best_n}."
            ),
            evidence_contracts: ids(rows),
            evidence_lines: Vec::new(),
            metrics: vec![
                ("tag".into(), tag.to_string()),
                ("favoured".into(), favoured.into()),
                ("favoured_mean".into(), format!("{favoured_mean:.2}")),
                ("best_alternative".into(), best.into()),
                ("best_mean".into(), format!("{best_mean:.2}")),
            ],
            proposed_change: format!(
                "Raise `routing.explore_rate` in polis.yml from {explore_rate} to {to}, and have \
                 `{favoured}` lower its self-rating on `{tag}` to what its settled work shows, so \
                 observed outcomes can promote `{best}`."
            ),
            rationale: "The router keeps exploiting a leader that the settled evidence shows is \
                        worse than a peer; more exploration lets it correct itself."
                .into(),
            setting: (to > explore_rate).then(|| SettingChange {
                key: "routing.explore_rate".into(),
                from: explore_rate,
                to,
            }),
        });
    }
    out
}

/// The reference's recurring low quality: at least `min` contracts on a tag, with a mean
/// quality of [`LOW_QUALITY`] or less.
fn recurring_low_quality(by_tag: &[(&str, Vec<&SettledEvidence>)], min: usize) -> Vec<Proposal> {
    let mut out = Vec::new();
    for (tag, rows) in by_tag {
        if rows.len() < min {
            continue;
        }
        let Some(m) = mean(rows.iter().map(|c| f64::from(c.quality))) else {
            continue;
        };
        if m > f64::from(LOW_QUALITY) {
            continue;
        }
        out.push(Proposal {
            kind: Detector::RecurringLowQuality,
            slug: format!("low-quality-{tag}"),
            title: format!("A standing acceptance check for `{tag}` work"),
            affects: vec!["_polis/CONSTITUTION.md".into()],
            problem: format!(
                "The {} settled contracts tagged `{tag}` average quality {m:.1}/5.",
                rows.len()
            ),
            evidence_contracts: ids(rows),
            evidence_lines: Vec::new(),
            metrics: vec![
                ("tag".into(), tag.to_string()),
                ("n".into(), rows.len().to_string()),
                ("mean_quality".into(), format!("{m:.2}")),
            ],
            proposed_change: format!(
                "Add to the constitution an acceptance check that every `{tag}` contract must pass \
                 before it settles (a checklist or a required review), and file it as a guardrail \
                 on `{tag}` so it reaches every future `{tag}` contract."
            ),
            rationale: "Quality that stays low on one tag is a gap in the process, not bad luck; \
                        a standing check raises the floor for whoever takes the work next."
                .into(),
            setting: None,
        });
    }
    out
}

/// The reference's stakes miscalibration: at least `min` low-quality contracts on a tag that
/// were neither high-stakes nor reviewed.
fn stakes_miscalibration(by_tag: &[(&str, Vec<&SettledEvidence>)], min: usize) -> Vec<Proposal> {
    let mut out = Vec::new();
    for (tag, rows) in by_tag {
        let risky: Vec<&SettledEvidence> = rows
            .iter()
            .copied()
            .filter(|c| c.quality <= LOW_QUALITY && !c.guarded)
            .collect();
        if risky.len() < min {
            continue;
        }
        out.push(Proposal {
            kind: Detector::StakesMiscalibration,
            slug: format!("stakes-{tag}"),
            title: format!("`{tag}` contracts default to high stakes (review required)"),
            affects: vec!["_polis/CONSTITUTION.md".into()],
            problem: format!(
                "{} `{tag}` contracts settled at quality {LOW_QUALITY} or less without being high \
                 stakes or reviewed.",
                risky.len()
            ),
            evidence_contracts: ids(&risky),
            evidence_lines: Vec::new(),
            metrics: vec![
                ("tag".into(), tag.to_string()),
                ("n".into(), risky.len().to_string()),
            ],
            proposed_change: format!(
                "Treat `{tag}` as high stakes by default, so a review by a citizen of another \
                 vendor is required before such a contract settles."
            ),
            rationale: "Low-quality work that settles unreviewed on this tag shows the stakes \
                        rule is miscalibrated for it."
                .into(),
            setting: None,
        });
    }
    out
}

/// The same chronicle rule broken by at least `min` distinct citizens within
/// [`FINDING_WINDOW_DAYS`]: the rule is unclear, not the citizens careless.
fn repeated_findings(findings: &[FindingEvidence], min: usize, now: &PolisTime) -> Vec<Proposal> {
    let since = now.now - Duration::days(FINDING_WINDOW_DAYS);
    let mut by_code: BTreeMap<&str, Vec<&FindingEvidence>> = BTreeMap::new();
    for f in findings.iter().filter(|f| f.stamp >= since) {
        by_code.entry(f.code.as_str()).or_default().push(f);
    }
    let mut out = Vec::new();
    for (code, hits) in by_code {
        let authors: BTreeSet<&str> = hits.iter().map(|f| f.author.as_str()).collect();
        if authors.len() < min {
            continue;
        }
        let lines: Vec<String> = hits.iter().map(|f| f.line.clone()).collect();
        out.push(Proposal {
            kind: Detector::RepeatedFinding,
            slug: format!("finding-{}", code.to_ascii_lowercase()),
            title: format!("Clarify chronicle rule {code}: {} citizens broke it", authors.len()),
            affects: vec!["_polis/CONSTITUTION.md".into()],
            problem: format!(
                "In the last {FINDING_WINDOW_DAYS} days {} chronicle lines by {} citizens ({}) drew \
                 {code}.",
                hits.len(),
                authors.len(),
                authors.iter().copied().collect::<Vec<_>>().join(", ")
            ),
            evidence_contracts: Vec::new(),
            evidence_lines: lines,
            metrics: vec![
                ("code".into(), code.to_string()),
                ("lines".into(), hits.len().to_string()),
                ("citizens".into(), authors.len().to_string()),
            ],
            proposed_change: format!(
                "Add to the constitution's chronicle section a worked example of a line that \
                 satisfies {code}, next to the lines above rewritten correctly, so every citizen \
                 reads the rule with an example before writing."
            ),
            rationale: "When several citizens break the same rule, the rule's wording is the \
                        friction; an example is cheaper than a finding per line."
                .into(),
            setting: None,
        });
    }
    out
}

/// At least `min` amendments expired without reaching quorum within [`EXPIRY_WINDOW_DAYS`].
fn expiring_amendments(
    amendments: &[AmendmentEvidence],
    min: usize,
    now: &PolisTime,
) -> Vec<Proposal> {
    let since = now.now - Duration::days(EXPIRY_WINDOW_DAYS);
    let expired: Vec<&AmendmentEvidence> = amendments
        .iter()
        .filter(|a| a.status == "expired" && a.expires_at.is_some_and(|t| t >= since))
        .collect();
    if expired.len() < min {
        return Vec::new();
    }
    let lines: Vec<String> = expired
        .iter()
        .map(|a| format!("[[amendments/proposed/{}]] expired", a.id))
        .collect();
    vec![Proposal {
        kind: Detector::ExpiringAmendments,
        slug: "expiring-amendments".into(),
        title: "Amendments keep expiring without a quorum".into(),
        affects: vec!["_polis/CONSTITUTION.md".into()],
        problem: format!(
            "{} amendments expired in the last {EXPIRY_WINDOW_DAYS} days before enough citizens \
             voted.",
            expired.len()
        ),
        evidence_contracts: Vec::new(),
        evidence_lines: lines,
        metrics: vec![("expired".into(), expired.len().to_string())],
        proposed_change: "Give amendments 45 days instead of 30 before they expire, and have \
                          every citizen read its inbox's `amendment-proposed` notices at session \
                          start; an amendment that is still short of quorum a week before it \
                          expires is raised at the next session of every active citizen."
            .into(),
        rationale: "Proposals that die of silence waste the work of writing them; the quorum \
                    rule is fine if votes arrive."
            .into(),
        setting: None,
    }]
}

/// At least `min` claimed contracts on one tag gone stale.
fn stale_tags(stale: &[StaleEvidence], min: usize) -> Vec<Proposal> {
    let mut by_tag: BTreeMap<&str, Vec<&StaleEvidence>> = BTreeMap::new();
    for s in stale {
        for t in &s.tags {
            by_tag.entry(t.as_str()).or_default().push(s);
        }
    }
    let mut out = Vec::new();
    for (tag, rows) in by_tag {
        if rows.len() < min {
            continue;
        }
        out.push(Proposal {
            kind: Detector::StaleTag,
            slug: format!("stale-{tag}"),
            title: format!("Claims on `{tag}` go stale: a check-in rule"),
            affects: vec!["_polis/CONSTITUTION.md".into()],
            problem: format!(
                "{} claimed `{tag}` contracts have had no chronicle line for 14 days.",
                rows.len()
            ),
            evidence_contracts: rows.iter().map(|s| s.contract_id.clone()).collect(),
            evidence_lines: Vec::new(),
            metrics: vec![
                ("tag".into(), tag.to_string()),
                ("stale".into(), rows.len().to_string()),
            ],
            proposed_change: format!(
                "A citizen holding a `{tag}` contract writes a progress line at least weekly, and \
                 a claim with no line for 14 days is released back to `open` for the router."
            ),
            rationale: "Stale claims block work that another citizen could do; a check-in rule \
                        makes the silence visible before it costs two weeks."
                .into(),
            setting: None,
        });
    }
    out
}

/// On a tag with at least `min` routed settlements, more than half were done by someone other
/// than the router's recommendation: the cards or the weights disagree with what citizens do.
fn routing_overrides(by_tag: &[(&str, Vec<&SettledEvidence>)], min: usize) -> Vec<Proposal> {
    let mut out = Vec::new();
    for (tag, rows) in by_tag {
        let routed: Vec<&SettledEvidence> = rows
            .iter()
            .copied()
            .filter(|c| c.recommended.is_some() && c.owner.is_some())
            .collect();
        let overridden: Vec<&SettledEvidence> = routed
            .iter()
            .copied()
            .filter(|c| c.recommended != c.owner)
            .collect();
        if overridden.len() < min || overridden.len() * 2 <= routed.len() {
            continue;
        }
        out.push(Proposal {
            kind: Detector::RoutingOverrides,
            slug: format!("overrides-{tag}"),
            title: format!("Citizens keep overriding the router on `{tag}`"),
            affects: vec!["_polis/citizens/".into(), "_polis/polis.yml".into()],
            problem: format!(
                "{} of the {} routed `{tag}` contracts were settled by a citizen other than the \
                 one the router recommended.",
                overridden.len(),
                routed.len()
            ),
            evidence_contracts: ids(&overridden),
            evidence_lines: Vec::new(),
            metrics: vec![
                ("tag".into(), tag.to_string()),
                ("routed".into(), routed.len().to_string()),
                ("overridden".into(), overridden.len().to_string()),
            ],
            proposed_change: format!(
                "Every citizen reviews its `{tag}` self-rating on its capability card against \
                 its settled `{tag}` work, and a contract claimed against the recommendation \
                 says why in its claim line."
            ),
            rationale: "When the team routinely disagrees with the router, its inputs (the \
                        cards) are wrong, and every override is an unrecorded judgement."
                .into(),
            setting: None,
        });
    }
    out
}

/// Lessons on a tag that routing ignores (impact below `routing.lesson_impact_floor`) while the
/// tag's settled quality is low: the evidence says the floor hides lessons that matter.
fn lesson_impact_floor(
    by_tag: &[(&str, Vec<&SettledEvidence>)],
    lessons: &[LessonEvidence],
    floor: f64,
    min: usize,
) -> Vec<Proposal> {
    let ignored: Vec<&LessonEvidence> = lessons
        .iter()
        .filter(|l| l.impact.abs() < floor && l.impact != 0.0)
        .collect();
    let low_tags: Vec<&str> = by_tag
        .iter()
        .filter(|(_, rows)| {
            rows.len() >= min
                && mean(rows.iter().map(|c| f64::from(c.quality)))
                    .is_some_and(|m| m <= f64::from(LOW_QUALITY))
        })
        .map(|(t, _)| *t)
        .collect();
    let hidden: Vec<&LessonEvidence> = ignored
        .into_iter()
        .filter(|l| l.tags.iter().any(|t| low_tags.contains(&t.as_str())))
        .collect();
    if hidden.len() < min {
        return Vec::new();
    }
    let strongest = hidden
        .iter()
        .map(|l| l.impact.abs())
        .fold(0.0_f64, f64::max);
    // Just low enough that every hidden lesson counts, rounded down to two decimals.
    let to = (strongest * 100.0).floor() / 100.0;
    if to >= floor {
        return Vec::new();
    }
    vec![Proposal {
        kind: Detector::LessonImpactFloor,
        slug: "lesson-impact-floor".into(),
        title: format!("Lower `routing.lesson_impact_floor` from {floor} to {to}"),
        affects: vec!["_polis/polis.yml".into()],
        problem: format!(
            "{} lessons on low-quality tags ({}) have an impact below the floor of {floor}, so \
             routing ignores them.",
            hidden.len(),
            low_tags.join(", ")
        ),
        evidence_contracts: Vec::new(),
        evidence_lines: hidden
            .iter()
            .map(|l| format!("lesson {} (impact {})", l.lesson_id, l.impact))
            .collect(),
        metrics: vec![
            ("floor".into(), floor.to_string()),
            ("hidden_lessons".into(), hidden.len().to_string()),
        ],
        proposed_change: format!(
            "Set `routing.lesson_impact_floor` to {to} in polis.yml, so these lessons weigh on \
             routing."
        ),
        rationale: "The floor exists to ignore noise; lessons on the very tags that keep \
                    settling badly are not noise."
            .into(),
        setting: Some(SettingChange {
            key: "routing.lesson_impact_floor".into(),
            from: floor,
            to,
        }),
    }]
}

/// Why a proposal is not filed.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case", tag = "reason")]
pub enum Held {
    /// An amendment of this slug is open.
    Pending { amendment: String },
    /// Its newest evidence is older than the [`PROPOSAL_DAYS`] a proposal stays open, so the
    /// proposal, dated by its evidence, would be expired when filed. New evidence files it.
    Stale { newest_evidence: String },
    /// An amendment of this slug was ratified: it is the rule now.
    Ratified { amendment: String },
    /// Rejected or expired less than [`REPROPOSE_AFTER_DAYS`] ago, and the evidence has not
    /// doubled since.
    Declined {
        amendment: String,
        evidence_then: usize,
    },
}

/// Whether `p` may be filed, given every amendment on file: not while one of its slug is
/// open, never once one was ratified, and after a rejection or expiry only when
/// [`REPROPOSE_AFTER_DAYS`] have passed or the evidence has at least doubled.
pub fn dedup(p: &Proposal, amendments: &[AmendmentEvidence], now: &PolisTime) -> Option<Held> {
    let same = amendments
        .iter()
        .filter(|a| a.reflect_slug.as_deref() == Some(p.slug.as_str()));
    let mut declined = None;
    for a in same {
        if a.ratified || a.status == "ratified" {
            return Some(Held::Ratified {
                amendment: a.id.clone(),
            });
        }
        match a.status.as_str() {
            "rejected" | "expired" => {
                // The protocol records no rejection time: the decision is dated by the
                // expiry (an expired one) or the proposal (a rejected one).
                let decided = if a.status == "expired" {
                    a.expires_at.or(a.proposed_at)
                } else {
                    a.proposed_at
                };
                let recent =
                    decided.is_none_or(|t| now.now - t < Duration::days(REPROPOSE_AFTER_DAYS));
                if recent && p.evidence_count() < 2 * a.evidence_count.max(1) {
                    declined = Some(Held::Declined {
                        amendment: a.id.clone(),
                        evidence_then: a.evidence_count,
                    });
                }
            }
            _ => {
                return Some(Held::Pending {
                    amendment: a.id.clone(),
                })
            }
        }
    }
    declined
}

/// The amendment id of a proposal caused on `day` ([`caused_at`]'s date): the same evidence
/// gives the same id whichever day a daemon runs.
pub fn amendment_id(p: &Proposal, day: NaiveDate) -> String {
    format!("{}-{}", day.format("%Y-%m-%d"), p.slug)
}

/// When a proposal's evidence was complete: the newest time among what it cites (settlements,
/// chronicle lines with findings, expiries, claims gone stale, filed lessons); the polis's
/// clock ([`Evidence::clock`]) when the cited records hold no time; `None` without either.
/// A pure function of the synced files, so two machines that hold the same evidence date the
/// proposal the same way, whatever day each runs reflection.
pub fn caused_at(p: &Proposal, e: &Evidence) -> Option<NaiveDateTime> {
    let cited: BTreeSet<&str> = p.evidence_contracts.iter().map(String::as_str).collect();
    let lines: BTreeSet<&str> = p.evidence_lines.iter().map(String::as_str).collect();
    let mut times: Vec<NaiveDateTime> = Vec::new();
    times.extend(
        e.settled
            .iter()
            .filter(|c| cited.contains(c.contract_id.as_str()))
            .filter_map(|c| c.settled_at),
    );
    times.extend(
        e.stale
            .iter()
            .filter(|c| cited.contains(c.contract_id.as_str()))
            .filter_map(|c| c.since),
    );
    times.extend(
        e.findings
            .iter()
            .filter(|f| lines.contains(f.line.as_str()))
            .map(|f| f.stamp),
    );
    if p.kind == Detector::ExpiringAmendments {
        times.extend(
            e.amendments
                .iter()
                .filter(|a| {
                    lines.contains(format!("[[amendments/proposed/{}]] expired", a.id).as_str())
                })
                .filter_map(|a| a.expires_at),
        );
    }
    if p.kind == Detector::LessonImpactFloor {
        times.extend(
            e.lessons
                .iter()
                .filter(|l| {
                    lines.contains(format!("lesson {} (impact {})", l.lesson_id, l.impact).as_str())
                })
                .filter_map(|l| l.filed_at),
        );
    }
    times.into_iter().max().or(e.clock)
}

/// [`Held::Stale`] when a proposal caused at `at` would already be past its expiry day at
/// `now` (the [`PROPOSAL_DAYS`] after `at`).
pub fn stale(at: NaiveDateTime, now: &PolisTime) -> Option<Held> {
    let expires = (at + Duration::days(PROPOSAL_DAYS)).date();
    (now.now.date() > expires).then(|| Held::Stale {
        newest_evidence: at.format("%Y-%m-%d %H:%M").to_string(),
    })
}

/// What the amendment operations file for `p`: its title, the frontmatter keys reflection adds
/// after `status` (the reference's `kind`, `reflect_slug`, `affects`, `evidence_contracts`, then
/// `evidence_lines`, `evidence_count` that [`dedup`] compares later, and `setting_change`), the
/// body (problem, evidence, change, rationale) and the expiry date.
#[derive(Debug, Clone, PartialEq)]
pub struct Draft {
    pub title: String,
    pub extra: Vec<(String, Value)>,
    pub body: String,
    pub expires: String,
}

/// `at` is when the proposal was caused ([`caused_at`]): its expiry is [`PROPOSAL_DAYS`]
/// after that, not after the run that files it.
pub fn draft(p: &Proposal, at: NaiveDateTime) -> Draft {
    let s = |t: &str| Value::Str(t.to_string());
    let list = |xs: &[String]| Value::Seq(xs.iter().map(|x| s(x)).collect());
    let mut extra: Vec<(String, Value)> = vec![
        ("kind".into(), s(p.kind.as_str())),
        ("reflect_slug".into(), s(&p.slug)),
        ("affects".into(), list(&p.affects)),
        ("evidence_contracts".into(), list(&p.evidence_contracts)),
    ];
    if !p.evidence_lines.is_empty() {
        extra.push(("evidence_lines".into(), list(&p.evidence_lines)));
    }
    extra.push((
        "evidence_count".into(),
        Value::Int(p.evidence_count() as i64),
    ));
    if let Some(change) = &p.setting {
        let setting: Mapping = [
            (s("key"), s(&change.key)),
            (s("from"), Value::Float(change.from)),
            (s("to"), Value::Float(change.to)),
        ]
        .into_iter()
        .collect();
        extra.push(("setting_change".into(), Value::Map(setting)));
    }
    let metrics: String = p
        .metrics
        .iter()
        .map(|(k, v)| format!("- {k}: {v}\n"))
        .collect();
    let mut evidence = String::new();
    if !p.evidence_contracts.is_empty() {
        evidence.push_str("\nContracts:\n");
        for c in &p.evidence_contracts {
            evidence.push_str(&format!("- [[contracts/settled/{c}]]\n"));
        }
    }
    if !p.evidence_lines.is_empty() {
        evidence.push_str("\nRecords:\n");
        for l in &p.evidence_lines {
            evidence.push_str(&format!("- {}\n", l.replace('\n', " ")));
        }
    }
    let mut change = p.proposed_change.clone();
    if let Some(setting) = &p.setting {
        change.push_str(&format!(
            "\n\nThe change to `polis.yml`, which polisd does not make itself (the file belongs \
             to the citizens):\n\n```diff\n{}```",
            setting.diff()
        ));
    }
    let body = format!(
        "> Drafted by `{REFLECTOR}` from the polis's own records. Nothing changes until the \
         citizens ratify it by the usual vote.\n\n## Problem\n{problem}\n\n## \
         Evidence\n{metrics}{evidence}\n## Proposed change\n{change}\n\n## Rationale\n{rationale}",
        problem = p.problem,
        rationale = p.rationale,
    );
    Draft {
        title: p.title.clone(),
        extra,
        body,
        expires: (at + Duration::days(PROPOSAL_DAYS))
            .date()
            .format("%Y-%m-%d")
            .to_string(),
    }
}

/// Whether a settlement could make one of the reference's detectors fire on its tags, judged
/// from what the ledger keeps (owner, tags, quality): a necessary condition for each, so the
/// daemon reads the files behind a tag only when a proposal is possible there.
pub fn tags_worth_reading<'s>(
    settlements: impl IntoIterator<Item = (&'s str, &'s [String], u8)>,
    min: usize,
) -> BTreeSet<String> {
    #[derive(Default)]
    struct Tally {
        n: usize,
        sum: f64,
        low: usize,
        owners: BTreeMap<String, (usize, f64)>,
    }
    let mut tags: BTreeMap<&str, Tally> = BTreeMap::new();
    for (owner, ts, q) in settlements {
        for t in ts {
            let e = tags.entry(t.as_str()).or_default();
            e.n += 1;
            e.sum += f64::from(q);
            e.low += usize::from(q <= LOW_QUALITY);
            let o = e.owners.entry(owner.to_string()).or_default();
            o.0 += 1;
            o.1 += f64::from(q);
        }
    }
    let min = min.max(1);
    tags.into_iter()
        .filter(|(_, e)| {
            let low_mean = e.n >= min && e.sum / e.n as f64 <= f64::from(LOW_QUALITY);
            let unguarded = e.low >= min;
            let means: Vec<(usize, f64)> = e
                .owners
                .values()
                .map(|(n, s)| (*n, s / *n as f64))
                .collect();
            let worst = means.iter().map(|m| m.1).fold(f64::INFINITY, f64::min);
            let misroute = means
                .iter()
                .any(|(n, m)| *n >= min && m - worst >= MISROUTE_GAP);
            low_mean || unguarded || misroute
        })
        .map(|(t, _)| t.to_string())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::clock::PolisZone;

    fn now() -> PolisTime {
        PolisTime::at_stamp(PolisZone::default(), "2026-06-01 12:00").unwrap()
    }

    fn settled(id: &str, tag: &str, owner: &str, q: u8, rec: Option<&str>) -> SettledEvidence {
        SettledEvidence {
            contract_id: id.into(),
            owner: Some(owner.into()),
            tags: vec![tag.into()],
            quality: q,
            recommended: rec.map(str::to_string),
            guarded: false,
            settled_at: None,
        }
    }

    fn kinds(e: &Evidence) -> Vec<Detector> {
        detect(e, DEFAULT_MIN_EVIDENCE, &now())
            .into_iter()
            .map(|p| p.kind)
            .collect()
    }

    #[test]
    fn chronic_misroute_cites_both_owners() {
        let mut e = Evidence {
            explore_rate: 0.15,
            ..Evidence::default()
        };
        for i in 0..3 {
            e.settled.push(settled(
                &format!("bad-{i}"),
                "backend",
                "claude-dev",
                1,
                Some("claude-dev"),
            ));
        }
        for i in 0..3 {
            e.settled.push(settled(
                &format!("good-{i}"),
                "backend",
                "codex-dev",
                5,
                Some("claude-dev"),
            ));
        }
        let ps = detect(&e, 3, &now());
        let m: Vec<_> = ps
            .iter()
            .filter(|p| p.kind == Detector::ChronicMisroute)
            .collect();
        assert_eq!(m.len(), 1);
        assert_eq!(m[0].slug, "misroute-backend");
        assert!(m[0].evidence_contracts.contains(&"bad-0".to_string()));
        assert!(m[0].evidence_contracts.contains(&"good-0".to_string()));
        assert_eq!(m[0].setting.as_ref().unwrap().to, 0.25);
    }

    #[test]
    fn healthy_history_and_thin_evidence_propose_nothing() {
        let mut e = Evidence::default();
        for i in 0..4 {
            e.settled.push(settled(
                &format!("ok-{i}"),
                "backend",
                "codex-dev",
                5,
                Some("codex-dev"),
            ));
        }
        assert!(kinds(&e).is_empty());
        let mut e = Evidence::default();
        for i in 0..2 {
            e.settled.push(settled(
                &format!("few-{i}"),
                "backend",
                "claude-dev",
                1,
                None,
            ));
        }
        assert!(kinds(&e).is_empty());
    }

    #[test]
    fn low_quality_and_unguarded_stakes() {
        let mut e = Evidence::default();
        for i in 0..3 {
            e.settled.push(settled(
                &format!("lq-{i}"),
                "frontend",
                "claude-dev",
                2,
                None,
            ));
        }
        assert_eq!(
            kinds(&e),
            [
                Detector::RecurringLowQuality,
                Detector::StakesMiscalibration
            ]
        );
        for c in &mut e.settled {
            c.guarded = true;
        }
        assert_eq!(kinds(&e), [Detector::RecurringLowQuality]);
    }

    #[test]
    fn repeated_finding_needs_distinct_citizens_in_the_window() {
        let stamp = |d: &str| NaiveDateTime::parse_from_str(d, "%Y-%m-%d %H:%M").unwrap();
        let f = |who: &str, when: &str| FindingEvidence {
            code: "C008".into(),
            author: who.into(),
            stamp: stamp(when),
            line: format!("- {when} | {who} | Did It | - | x"),
        };
        let mut e = Evidence {
            findings: vec![
                f("aa-agent-1", "2026-05-20 10:00"),
                f("aa-agent-1", "2026-05-21 10:00"),
                f("bb-agent-2", "2026-05-22 10:00"),
            ],
            ..Evidence::default()
        };
        assert!(kinds(&e).is_empty(), "two citizens are not three");
        e.findings.push(f("cc-agent-3", "2026-01-02 10:00"));
        assert!(kinds(&e).is_empty(), "outside the 30-day window");
        e.findings.push(f("cc-agent-3", "2026-05-30 10:00"));
        let ps = detect(&e, 3, &now());
        assert_eq!(ps[0].slug, "finding-c008");
        assert_eq!(ps[0].evidence_count(), 4);
    }

    #[test]
    fn overrides_stale_and_expiry() {
        let mut e = Evidence::default();
        for i in 0..3 {
            e.settled.push(settled(
                &format!("o-{i}"),
                "docs",
                "bob-writer1",
                4,
                Some("amy-writer1"),
            ));
        }
        e.stale = (0..3)
            .map(|i| StaleEvidence {
                contract_id: format!("s-{i}"),
                tags: vec!["infra".into()],
                since: None,
            })
            .collect();
        let stamp = NaiveDateTime::parse_from_str("2026-05-01 00:00", "%Y-%m-%d %H:%M").unwrap();
        e.amendments = (0..3)
            .map(|i| AmendmentEvidence {
                id: format!("a-{i}"),
                status: "expired".into(),
                ratified: false,
                reflect_slug: None,
                evidence_count: 0,
                proposed_at: None,
                expires_at: Some(stamp),
            })
            .collect();
        assert_eq!(
            kinds(&e),
            [
                Detector::ExpiringAmendments,
                Detector::StaleTag,
                Detector::RoutingOverrides
            ]
        );
    }

    #[test]
    fn lesson_floor_contradicted_by_low_quality() {
        let mut e = Evidence {
            lesson_impact_floor: 0.5,
            ..Evidence::default()
        };
        for i in 0..3 {
            e.settled
                .push(settled(&format!("lq-{i}"), "ml", "bob-writer1", 1, None));
            e.settled[i].guarded = true;
            e.lessons.push(LessonEvidence {
                lesson_id: format!("l-{i}"),
                tags: vec!["ml".into()],
                impact: 0.3,
                filed_at: None,
            });
        }
        let ps = detect(&e, 3, &now());
        let p = ps
            .iter()
            .find(|p| p.kind == Detector::LessonImpactFloor)
            .unwrap();
        assert_eq!(p.setting.as_ref().unwrap().to, 0.3);
        assert!(p
            .setting
            .as_ref()
            .unwrap()
            .diff()
            .contains("-  lesson_impact_floor: 0.5\n+  lesson_impact_floor: 0.3\n"));
    }

    fn amendment(status: &str, evidence: usize, proposed: &str) -> AmendmentEvidence {
        AmendmentEvidence {
            id: "2026-01-01-low-quality-frontend".into(),
            status: status.into(),
            ratified: false,
            reflect_slug: Some("low-quality-frontend".into()),
            evidence_count: evidence,
            proposed_at: NaiveDateTime::parse_from_str(proposed, "%Y-%m-%d %H:%M").ok(),
            expires_at: None,
        }
    }

    #[test]
    fn dedup_pending_ratified_and_declined() {
        let mut e = Evidence::default();
        for i in 0..3 {
            e.settled.push(settled(
                &format!("lq-{i}"),
                "frontend",
                "claude-dev",
                2,
                None,
            ));
        }
        let p = detect(&e, 3, &now()).remove(0);
        assert!(matches!(
            dedup(&p, &[amendment("proposed", 3, "2026-05-01 00:00")], &now()),
            Some(Held::Pending { .. })
        ));
        let mut ratified = amendment("ratified", 3, "2026-01-01 00:00");
        ratified.ratified = true;
        assert!(matches!(
            dedup(&p, &[ratified], &now()),
            Some(Held::Ratified { .. })
        ));
        let recent = amendment("rejected", 3, "2026-05-01 00:00");
        assert!(matches!(
            dedup(&p, std::slice::from_ref(&recent), &now()),
            Some(Held::Declined { .. })
        ));
        let doubled = amendment("rejected", 1, "2026-05-01 00:00");
        assert_eq!(
            dedup(&p, &[doubled], &now()),
            None,
            "3 pieces of evidence against 1"
        );
        let old = amendment("rejected", 3, "2025-12-01 00:00");
        assert_eq!(dedup(&p, &[old], &now()), None, "past the 90 days");
    }

    #[test]
    fn rendered_proposal_reads_back_as_an_amendment_with_quorum_two() {
        let mut e = Evidence::default();
        for i in 0..3 {
            e.settled.push(settled(
                &format!("lq-{i}"),
                "frontend",
                "claude-dev",
                2,
                None,
            ));
        }
        let p = detect(&e, 3, &now()).remove(0);
        let id = amendment_id(&p, now().now.date());
        let d = draft(&p, now().now);
        let text = crate::protocol::amendments::amendment::render_new(
            &crate::protocol::amendments::amendment::NewAmendment {
                amendment_id: id.clone(),
                title: d.title,
                proposed_by: REFLECTOR.into(),
                proposed_at: now().second_stamp(),
                quorum_required: Some(PROPOSAL_QUORUM),
                expires_at: d.expires,
                body: d.body,
                extra: d.extra,
            },
        )
        .unwrap();
        let a = crate::protocol::amendments::amendment::parse(&text, &id).unwrap();
        assert_eq!(a.id, "2026-06-01-low-quality-frontend");
        assert_eq!(a.proposed_by.as_deref(), Some(REFLECTOR));
        assert_eq!(a.status.as_deref(), Some("proposed"));
        assert_eq!(a.quorum_required, Value::Int(2));
        assert!(text.contains("- [[contracts/settled/lq-0]]"));
        let record = crate::protocol::frontmatter::parse(&text).unwrap();
        assert_eq!(
            record.fields.get("reflect_slug").as_str(),
            Some("low-quality-frontend")
        );
        assert_eq!(record.fields.get("evidence_count"), &Value::Int(3));
        let keys: Vec<String> = record
            .fields
            .as_map()
            .unwrap()
            .iter()
            .map(|(k, _)| k.python_str())
            .collect();
        assert_eq!(
            keys[..7],
            [
                "amendment_id",
                "title",
                "proposed_by",
                "proposed_at",
                "status",
                "kind",
                "reflect_slug"
            ],
            "the reference's key order"
        );
    }

    #[test]
    fn only_tags_that_could_fire_are_read() {
        let tags = |v: &[String]| v.to_vec();
        let backend = vec!["backend".to_string()];
        let docs = vec!["docs".to_string()];
        let rows = [
            ("a", tags(&backend), 5u8),
            ("a", tags(&backend), 5),
            ("a", tags(&backend), 5),
            ("b", tags(&backend), 3),
            ("a", tags(&docs), 4),
            ("b", tags(&docs), 4),
        ];
        let worth = tags_worth_reading(rows.iter().map(|(o, t, q)| (*o, t.as_slice(), *q)), 3);
        assert_eq!(worth, BTreeSet::from(["backend".to_string()]));
    }

    #[test]
    fn a_proposal_is_dated_by_its_newest_evidence_not_by_the_run() {
        let t = |s: &str| NaiveDateTime::parse_from_str(s, "%Y-%m-%d %H:%M").unwrap();
        let mut e = Evidence {
            clock: Some(t("2026-05-30 08:00")),
            ..Evidence::default()
        };
        for (i, at) in ["2026-05-20 10:00", "2026-05-28 16:45", "2026-05-21 09:00"]
            .iter()
            .enumerate()
        {
            let mut s = settled(&format!("lq-{i}"), "frontend", "claude-dev", 2, None);
            s.settled_at = Some(t(at));
            e.settled.push(s);
        }
        // A settlement on another tag is not this proposal's evidence.
        let mut other = settled("x-1", "backend", "claude-dev", 5, None);
        other.settled_at = Some(t("2026-05-31 00:00"));
        e.settled.push(other);
        let p = detect(&e, 3, &now())
            .into_iter()
            .find(|p| p.slug == "low-quality-frontend")
            .unwrap();
        let at = caused_at(&p, &e).unwrap();
        assert_eq!(at, t("2026-05-28 16:45"));
        // Any day's run names it the same way, and its expiry counts from the evidence.
        assert_eq!(
            amendment_id(&p, at.date()),
            "2026-05-28-low-quality-frontend"
        );
        assert_eq!(draft(&p, at).expires, "2026-06-27");
        assert_eq!(stale(at, &now()), None);
        let later = PolisTime::at_stamp(PolisZone::default(), "2026-06-28 00:01").unwrap();
        assert!(matches!(stale(at, &later), Some(Held::Stale { .. })));
        // Evidence without times: the polis's clock.
        for s in &mut e.settled {
            s.settled_at = None;
        }
        assert_eq!(caused_at(&p, &e), Some(t("2026-05-30 08:00")));
    }
}
