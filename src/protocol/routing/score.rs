//! The score of every citizen for an open contract (SPEC §7).
//!
//! Pure: candidates, stats, lessons and settings in, score breakdowns out. It reads
//! no file and no clock; the random draw comes from a seedable generator. Scores follow the
//! reference's `score_citizen` operation for operation so they agree to the last bits; the
//! random draw need not match the reference's.

use crate::protocol::contracts::contract::Contract;
use crate::protocol::contracts::lesson::{lessons_score, Lesson};
use crate::protocol::routing::stats::{RoutingStats, DEFAULT_EXPLORE_RATE};
use crate::protocol::settings::{Settings, Weights};
use crate::yaml::Value;
use serde::Serialize;
use std::collections::HashMap;

/// What the router needs to know about one citizen (from its card and status).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Candidate {
    pub id: String,
    /// Tag → `self_rating` as a number (missing = 0). Tags whose card entry is empty or not a
    /// mapping are absent, as the reference skips them.
    pub self_ratings: HashMap<String, f64>,
    /// `cost_envelope.relative` (missing = `medium`); `None` when it is not a string.
    pub cost: Option<String>,
    /// Status `state` (no status, or no key = `idle`); `None` when it is not a string.
    pub state: Option<String>,
    /// Whether `blockers` is non-empty.
    pub has_blockers: bool,
}

impl Candidate {
    /// Builds a candidate from a parsed capability card and status frontmatter (`Null` or an
    /// empty mapping when the citizen has no `status.md`). Values the reference would crash on
    /// count as missing.
    pub fn from_card(id: &str, card: &Value, status: &Value) -> Candidate {
        let mut self_ratings = HashMap::new();
        if let Some(tags) = card.get("capability_tags").as_map() {
            for (tag, entry) in tags.iter() {
                let Some(tag) = tag.as_str() else { continue };
                if !entry.is_truthy() {
                    continue;
                }
                let Some(m) = entry.as_map() else { continue };
                let rating = match m.get("self_rating") {
                    None => 0.0,
                    Some(v) => crate::protocol::contracts::lesson::python_float(v)
                        .filter(|_| !matches!(v, Value::Str(_)))
                        .unwrap_or(0.0),
                };
                let rating = crate::protocol::citizens::card::counted_rating(rating);
                self_ratings.insert(tag.to_string(), rating);
            }
        }
        let envelope = card.get("cost_envelope");
        let cost = match envelope.as_map() {
            Some(m) => match m.get("relative") {
                None => Some("medium".to_string()),
                Some(v) => v.as_str().map(str::to_string),
            },
            None => Some("medium".to_string()),
        };
        let state = match status.as_map().and_then(|m| m.get("state")) {
            None => Some("idle".to_string()),
            Some(v) => v.as_str().map(str::to_string),
        };
        Candidate {
            id: id.to_string(),
            self_ratings,
            cost,
            state,
            has_blockers: status.get("blockers").is_truthy(),
        }
    }
}

/// One citizen's score (SPEC §7), serialised with the reference's keys.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Score {
    pub citizen: String,
    pub historical: f64,
    pub self_rating: f64,
    pub cost_fit: f64,
    pub availability: f64,
    pub lessons: f64,
    pub applied_lessons: Vec<String>,
    pub total: f64,
}

/// `cf(n)`: confidence in a history of `n` settlements.
pub fn confidence_factor(n: f64) -> f64 {
    if n <= 0.0 {
        0.0
    } else {
        1.0 - 1.0 / (1.0 + n / 3.0)
    }
}

/// H: mean over the contract's tags of `(avg_quality/5)·cf(n)`.
pub fn historical(citizen: &str, tags: &[String], stats: &RoutingStats) -> f64 {
    if tags.is_empty() {
        return 0.0;
    }
    let mut total = 0.0;
    for tag in tags {
        if let Some(c) = stats.citizen(tag, citizen) {
            total += (c.avg_quality_score / 5.0) * confidence_factor(c.contracts_completed as f64);
        }
    }
    total / tags.len() as f64
}

/// S: mean over the contract's tags of `self_rating/5`.
pub fn self_rating(candidate: &Candidate, tags: &[String]) -> f64 {
    if tags.is_empty() {
        return 0.0;
    }
    let mut total = 0.0;
    for tag in tags {
        if let Some(r) = candidate.self_ratings.get(tag) {
            total += r / 5.0;
        }
    }
    total / tags.len() as f64
}

/// C: the cost-fit table; any pair outside it is 0.5.
pub fn cost_fit(ceiling: Option<&str>, cost: Option<&str>) -> f64 {
    match (ceiling, cost) {
        (Some("low"), Some("low")) => 1.0,
        (Some("low"), Some("medium")) => 0.5,
        (Some("low"), Some("high")) => 0.0,
        (Some("medium"), Some("low" | "medium")) => 1.0,
        (Some("medium"), Some("high")) => 0.5,
        (Some("high"), Some("low" | "medium" | "high")) => 1.0,
        _ => 0.5,
    }
}

/// A: availability from the status.
pub fn availability(candidate: &Candidate) -> f64 {
    match candidate.state.as_deref() {
        Some("idle") => 1.0,
        Some("working") if candidate.has_blockers => 0.5,
        Some("working") => 0.7,
        Some("blocked" | "reviewing") => 0.3,
        Some("away") => 0.0,
        _ => 0.5,
    }
}

/// Everything scoring needs besides the candidates.
#[derive(Debug, Clone, Copy)]
pub struct Context<'a> {
    pub stats: &'a RoutingStats,
    /// Lessons that affect routing (see `lesson::routing_lessons`), in path order.
    pub lessons: &'a [&'a Lesson],
    pub weights: Weights,
    pub lesson_cap: f64,
}

/// SPEC §7: one citizen's score for a contract.
pub fn score(candidate: &Candidate, contract: &Contract, ctx: &Context<'_>) -> Score {
    let tags = &contract.required_tags;
    let h = historical(&candidate.id, tags, ctx.stats);
    let s = self_rating(candidate, tags);
    let c = cost_fit(contract.cost_ceiling(), candidate.cost.as_deref());
    let a = availability(candidate);
    let (bonus, applied) = lessons_score(&candidate.id, tags, ctx.lessons, ctx.lesson_cap);
    let w = ctx.weights;
    // The reference's order of operations, left to right.
    let base = w.history * h + w.self_rating * s + w.cost * c + w.avail * a;
    Score {
        citizen: candidate.id.clone(),
        historical: h,
        self_rating: s,
        cost_fit: c,
        availability: a,
        lessons: bonus,
        applied_lessons: applied,
        total: base + bonus,
    }
}

/// Scores sorted by total, highest first; ties keep citizen-id order.
pub fn score_all(candidates: &[Candidate], contract: &Contract, ctx: &Context<'_>) -> Vec<Score> {
    let mut scores: Vec<Score> = candidates.iter().map(|c| score(c, contract, ctx)).collect();
    scores.sort_by(|a, b| a.citizen.cmp(&b.citizen));
    // NaN sorts last and -0.0 equals 0.0, keeping the comparison a total order.
    let key = |s: &Score| {
        if s.total.is_nan() {
            f64::NEG_INFINITY
        } else {
            s.total + 0.0
        }
    };
    scores.sort_by(|a, b| key(b).total_cmp(&key(a)));
    scores
}

/// The explore rate in force: `polis.yml`'s when it decides, else the stats file's, else 0.15.
pub fn explore_rate(settings: &Settings, stats: &RoutingStats) -> f64 {
    settings
        .explore_rate
        .or_else(|| stats.explore_rate_f64())
        .unwrap_or(DEFAULT_EXPLORE_RATE)
        // A share of the routings; polis.yml's is bounded where it is read, the stats file's
        // here.
        .clamp(0.0, 1.0)
}

/// Adaptive mode: `min(0.5, rate + (1 − min leader_confidence over the tags) · 0.2)`, a tag
/// without a confidence counting as 0.
pub fn adaptive_explore_rate(rate: f64, tags: &[String], stats: &RoutingStats) -> f64 {
    let min_conf = tags
        .iter()
        .map(|t| {
            stats
                .tag(t)
                .and_then(|t| t.leader_confidence)
                .unwrap_or(0.0)
        })
        .reduce(|a, b| if b < a { b } else { a })
        .unwrap_or(0.0);
    let widened = rate + (1.0 - min_conf) * 0.2;
    if widened < 0.5 {
        widened
    } else {
        0.5
    }
}

#[cfg(test)]
impl Score {
    /// A candidate with a self-rating of 4 on every tag, fitting the cost ceiling, present and
    /// with no lessons: the policies' tests vary only what they are about.
    pub(crate) fn plain(citizen: &str, total: f64) -> Score {
        Score {
            citizen: citizen.to_string(),
            historical: 0.0,
            self_rating: 0.8,
            cost_fit: 1.0,
            availability: 1.0,
            lessons: 0.0,
            applied_lessons: Vec::new(),
            total,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::routing::stats::{CitizenStats, TagStats};
    use crate::yaml;
    use rand::rngs::StdRng;
    use rand::SeedableRng;

    fn contract(fm: &str) -> Contract {
        Contract::parse(&format!("---\n{fm}\n---\n")).unwrap()
    }

    fn cand(id: &str, card: &str, status: &str) -> Candidate {
        Candidate::from_card(id, &yaml::load(card).unwrap(), &yaml::load(status).unwrap())
    }

    fn stats() -> RoutingStats {
        RoutingStats {
            tags: vec![TagStats {
                tag: "py".into(),
                citizens: vec![CitizenStats {
                    citizen: "alice-agent".into(),
                    contracts_completed: 3,
                    avg_quality_score: 4.0,
                    avg_actual_minutes: 30.0,
                    last_completed: None,
                }],
                leader: Some("alice-agent".into()),
                leader_confidence: Some(0.6),
            }],
            ..Default::default()
        }
    }

    #[test]
    fn score_parts() {
        let st = stats();
        let ctx = Context {
            stats: &st,
            lessons: &[],
            weights: Weights::default(),
            lesson_cap: 0.15,
        };
        let c = contract("required_tags: [py, go]\ncost_ceiling: low");
        let a = cand(
            "alice-agent",
            "capability_tags: {py: {self_rating: 4}, go: {}}\ncost_envelope: {relative: high}",
            "state: working\nblockers: [x]",
        );
        let s = score(&a, &c, &ctx);
        assert_eq!(s.historical, (4.0 / 5.0) * 0.5 / 2.0);
        assert_eq!(s.self_rating, 0.8 / 2.0);
        assert_eq!(s.cost_fit, 0.0);
        assert_eq!(s.availability, 0.5);
    }

    #[test]
    fn missing_and_null_differ_like_the_reference() {
        let none = cand("a-agent-1", "agent_id: a", "{}");
        assert_eq!(none.cost.as_deref(), Some("medium"));
        assert_eq!(availability(&none), 1.0);
        let null = cand(
            "a-agent-1",
            "cost_envelope: {relative: null}",
            "state: null",
        );
        assert_eq!(null.cost, None);
        assert_eq!(availability(&null), 0.5);
        assert_eq!(
            cost_fit(contract("cost_ceiling: null").cost_ceiling(), Some("low")),
            0.5
        );
        assert_eq!(cost_fit(contract("a: 1").cost_ceiling(), Some("high")), 0.5);
    }

    #[test]
    fn pick_is_seeded_and_sorted() {
        let st = stats();
        let ctx = Context {
            stats: &st,
            lessons: &[],
            weights: Weights::default(),
            lesson_cap: 0.15,
        };
        let c = contract("required_tags: [py]");
        let cands = vec![
            cand(
                "bob-agent1",
                "capability_tags: {py: {self_rating: 5}}",
                "{}",
            ),
            cand(
                "alice-agent",
                "capability_tags: {py: {self_rating: 5}}",
                "{}",
            ),
        ];
        let scores = score_all(&cands, &c, &ctx);
        let draw = |rate| {
            let mut rng = StdRng::seed_from_u64(7);
            crate::protocol::routing::policy::epsilon_greedy_draw(&scores, rate, &mut rng)
        };
        let (citizen, exploration, _) = draw(0.0);
        assert_eq!(citizen.as_deref(), Some("alice-agent"));
        assert!(!exploration);
        let (citizen, exploration, _) = draw(1.0);
        assert_eq!(citizen.as_deref(), Some("bob-agent1"));
        assert!(exploration);
    }

    #[test]
    fn adaptive_rate() {
        let st = stats();
        assert!((adaptive_explore_rate(0.15, &["py".into()], &st) - 0.23).abs() < 1e-12);
        assert_eq!(adaptive_explore_rate(0.15, &["zz".into()], &st), 0.35);
        assert_eq!(adaptive_explore_rate(0.45, &[], &st), 0.5);
    }
}
