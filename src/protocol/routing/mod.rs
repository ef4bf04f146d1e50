//! Routing a contract to a citizen (SPEC §7), in one place: every candidate's score
//! ([`score`], the reference's numbers) and the policy that picks one ([`policy`]).
//!
//! Pure: the shell gathers the inputs (cards, stats, lessons, settlements) and the random
//! generator; [`recommend`] scores and picks.
pub mod stats;

pub mod estimate;
pub mod history;
pub mod overrides;
pub mod policy;
pub mod rules;
pub mod score;

use crate::protocol::contracts::contract::Contract;
use crate::protocol::contracts::lesson::Lesson;
use crate::protocol::routing::stats::{RoutingStats, Settlement, SettlementView};
use crate::protocol::settings::Settings;
use policy::{History, Policy, PolicyInput, UnknownPolicy};
use rand::rngs::StdRng;
use score::{Candidate, Score};
use serde::Serialize;

/// The router's answer, serialised with the reference's keys.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Recommendation {
    pub recommendation: Option<String>,
    pub score: f64,
    pub exploration: bool,
    pub explore_rate: f64,
    /// Sorted by total, highest first (stable).
    pub scores: Vec<Score>,
}

/// The seed of the daemon's draw for a contract: the first 8 bytes of SHA-256 over its path
/// and bytes. Two daemons that route the same new contract on two synced machines then draw
/// alike and write the same routing block, instead of two edits that conflict (docs/sync.md).
pub fn seed_for(rel: &str, text: &str) -> u64 {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    h.update(rel.as_bytes());
    h.update([0]);
    h.update(text.as_bytes());
    let d = h.finalize();
    u64::from_le_bytes([d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7]])
}

/// Everything a routing decision reads.
#[derive(Debug, Clone, Copy)]
pub struct Inputs<'a> {
    pub candidates: &'a [Candidate],
    pub contract: &'a Contract,
    pub stats: &'a RoutingStats,
    /// Lessons that affect routing, in path order.
    pub lessons: &'a [&'a Lesson],
    pub settings: &'a Settings,
    /// Settled contracts in any order; the learning policies replay them.
    pub settlements: &'a [Settlement],
    /// The history of `settlements`, when the caller keeps it between routings (built here
    /// otherwise).
    pub history: Option<&'a History>,
    /// The citizens with a chronicle line in the activity window (SPEC §8). A routing rule's
    /// target outside it is inactive and falls through to the policy; `None` counts everyone.
    pub active: Option<&'a std::collections::BTreeSet<String>>,
}

/// A recommendation and, for `--explain`, what the policy saw.
#[derive(Debug, Clone)]
pub struct Routed {
    pub recommendation: Recommendation,
    pub policy: Policy,
    /// The policy's own explanation (empty for `epsilon-greedy`, whose scores say it all).
    pub explanation: String,
    /// The routing rule that matched, if one did; when it applied, it decided.
    pub rule: Option<rules::RuleMatch>,
}

/// The policy that routes: the one asked for, else `routing.policy` of `polis.yml`, else the
/// default.
pub fn policy_for(settings: &Settings, asked: Option<Policy>) -> Result<Policy, UnknownPolicy> {
    match (asked, settings.policy.as_deref()) {
        (Some(p), _) => Ok(p),
        (None, Some(name)) => name.parse(),
        (None, None) => Ok(Policy::default()),
    }
}

/// The finding about a `routing.policy` of `polis.yml` that names no policy: `route` refuses
/// it and the daemon routes nothing until it is fixed, so every reader of the polis says so.
pub fn policy_finding(settings: &Settings) -> Option<crate::protocol::finding::Finding> {
    use crate::protocol::finding::{quoted, Code, Finding};
    let name = settings.policy.as_deref()?;
    name.parse::<Policy>().err()?;
    let names: Vec<&str> = Policy::ALL.iter().map(|p| p.name()).collect();
    Some(Finding::warning(
        Code::BadYaml,
        crate::protocol::layout::POLIS_YML,
        None,
        format!(
            "`routing.policy: {}` is not a routing policy; write one of {} (until then `polisd route` refuses and polisd routes no contract)",
            quoted(name),
            names.join(", ")
        ),
    ))
}

/// What the learning policies learn from: `settlements` (in any order) replayed in the order of
/// SPEC §6 step 4.
pub fn history_of<'s>(settlements: impl Iterator<Item = SettlementView<'s>>) -> History {
    let mut settlements: Vec<SettlementView<'s>> = settlements.collect();
    settlements.sort_by(crate::protocol::routing::stats::replay_order_of_views);
    History::from_outcomes(settlements.into_iter().map(|s| policy::Outcome {
        citizen: s.owner.to_string(),
        tags: s.tags.to_vec(),
        quality: f64::from(s.quality),
    }))
}

/// Scores every candidate and lets `policy` pick one. `adaptive` widens the explore rate where
/// the leaders are uncertain. Only the policies' draws use `rng`, so a seeded generator makes
/// the pick reproducible.
pub fn recommend(inputs: &Inputs<'_>, policy: Policy, adaptive: bool, rng: &mut StdRng) -> Routed {
    let ctx = score::Context {
        stats: inputs.stats,
        lessons: inputs.lessons,
        weights: inputs.settings.weights,
        lesson_cap: inputs.settings.lesson_cap,
    };
    let tags = &inputs.contract.required_tags;
    let rate = score::explore_rate(inputs.settings, inputs.stats);
    let rate = if adaptive {
        score::adaptive_explore_rate(rate, tags, inputs.stats)
    } else {
        rate
    };
    let scores: Vec<Score> = score::score_all(inputs.candidates, inputs.contract, &ctx);
    // Rules before the learned router.
    let (rule_list, _) = rules::parse(&inputs.settings.merged);
    let available = |id: &str| {
        inputs
            .candidates
            .iter()
            .any(|c| c.id == id && c.state.as_deref() != Some("away"))
            && inputs.active.is_none_or(|active| active.contains(id))
    };
    let rule = rules::decide(&rule_list, inputs.contract, &available);
    if let Some(m) = rule.as_ref().filter(|m| m.applied) {
        let score = scores
            .iter()
            .find(|s| s.citizen == m.route_to)
            .map_or(0.0, |s| s.total);
        return Routed {
            recommendation: Recommendation {
                recommendation: Some(m.route_to.clone()),
                score,
                exploration: false,
                explore_rate: rate,
                scores,
            },
            policy,
            explanation: format!("Routing {} decided before the policy.\n", m.rule),
            rule,
        };
    }
    if policy == Policy::EpsilonGreedy {
        // The reference's draw straight from the caller's generator, so `--seed` gives the
        // same pick as it always has.
        let (citizen, exploration, score) = policy::epsilon_greedy_draw(&scores, rate, rng);
        return Routed {
            recommendation: Recommendation {
                recommendation: citizen,
                score,
                exploration,
                explore_rate: rate,
                scores,
            },
            policy,
            explanation: String::new(),
            rule,
        };
    }
    let built;
    let history = match inputs.history {
        Some(history) => history,
        None => {
            built = history_of(inputs.settlements.iter().map(Settlement::view));
            &built
        }
    };
    let input = PolicyInput {
        tags,
        scores: &scores,
        history,
        weights: inputs.settings.weights,
        explore_rate: rate,
        cards: inputs.candidates,
    };
    let pick = policy.pick(&input, rng);
    Routed {
        explanation: pick.explain(),
        recommendation: Recommendation {
            recommendation: pick.citizen,
            score: pick.score,
            exploration: pick.exploration,
            explore_rate: rate,
            scores,
        },
        policy,
        rule,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn a_recommendation_serialises_with_the_references_five_keys() {
        let card = crate::yaml::load("capability_tags: {py: {self_rating: 5}}").unwrap();
        let candidates = [
            Candidate::from_card("alice-agent", &card, &crate::yaml::Value::Null),
            Candidate::from_card("bob-agent1", &card, &crate::yaml::Value::Null),
        ];
        let contract = Contract::parse("---\nrequired_tags: [py]\n---\n").unwrap();
        let inputs = Inputs {
            candidates: &candidates,
            contract: &contract,
            stats: &RoutingStats::default(),
            lessons: &[],
            settings: &Settings::default(),
            settlements: &[],
            history: None,
            active: None,
        };
        let mut rng = StdRng::seed_from_u64(7);
        let routed = recommend(&inputs, Policy::EpsilonGreedy, false, &mut rng);
        let json = serde_json::to_value(&routed.recommendation).unwrap();
        let keys: Vec<_> = json.as_object().unwrap().keys().cloned().collect();
        assert_eq!(
            keys,
            [
                "exploration",
                "explore_rate",
                "recommendation",
                "score",
                "scores"
            ]
        );
        assert!(json["scores"][0].get("applied_lessons").is_some());
    }
}
