//! Routing policies: given every candidate's score breakdown (SPEC §7, computed by the router)
//! and what the polis has learned so far, decide which citizen gets the contract, and say why.
//!
//! A policy never changes the H/S/C/A/L numbers — those stay the reference's — it only picks.
//! Policies are pure: no I/O, no clock; every random draw comes from the RNG the caller passes
//! in, so a seed fixes the pick. `epsilon-greedy` is the reference's pick; `ucb` and `thompson`
//! follow the reference bench.s formulas exactly; `posterior` (the default) is polisd's own, described on
//! [`Policy::Posterior`].

pub use crate::protocol::routing::estimate::PosteriorParams;
use crate::protocol::routing::estimate::{self, Estimate};
pub use crate::protocol::routing::history::{History, Outcome};
use crate::protocol::routing::score::{Candidate, Score};
use crate::protocol::settings::Weights;
use rand::rngs::StdRng;
use rand::{Rng, RngCore, SeedableRng};
use std::fmt;
use std::str::FromStr;

/// Everything a policy needs for one contract.
#[derive(Debug, Clone, Copy)]
pub struct PolicyInput<'a> {
    /// The contract's required tags, duplicates removed.
    pub tags: &'a [String],
    /// Every candidate's score as [`score::score_all`] returns them: by total, highest first,
    /// ties in citizen-id order.
    pub scores: &'a [Score],
    pub history: &'a History,
    pub weights: Weights,
    /// The exploration rate `epsilon-greedy` uses (already adapted by the caller if wanted).
    pub explore_rate: f64,
    /// Every citizen's card as the router read it (self-ratings by tag), so `posterior` can
    /// see what settled work shows self-ratings are worth; may be empty.
    pub cards: &'a [Candidate],
}

/// What a policy saw for one candidate.
#[derive(Debug, Clone, PartialEq)]
pub struct Seen {
    pub citizen: String,
    /// The number the policy ranked by (may be infinite for `ucb`).
    pub value: f64,
    /// Named quantities behind `value`, e.g. `("posterior_mean", 3.9)`, in display order.
    pub details: Vec<(&'static str, f64)>,
    /// Why the candidate could not win, if it could not (e.g. it is away).
    pub excluded: Option<&'static str>,
}

/// A policy's decision.
#[derive(Debug, Clone, PartialEq)]
pub struct Pick {
    /// The chosen citizen; `None` only when there were no candidates.
    pub citizen: Option<String>,
    /// True when the pick was made by exploring: for `posterior`, every exploration turn
    /// (its draw may confirm the leader); for the others, a pick off their greedy choice.
    pub exploration: bool,
    /// The chosen citizen's score total (what `recommendation_score` records).
    pub score: f64,
    /// One entry per candidate, in input order.
    pub seen: Vec<Seen>,
    /// One sentence on why the winner won.
    pub reason: String,
}

/// The details that are counts, printed without decimals.
const COUNTS: [&str; 2] = ["settlements", "n"];

impl Pick {
    /// What `route --explain` prints after the score breakdown: one line per candidate with
    /// what the policy saw, then the winner and why.
    pub fn explain(&self) -> String {
        let mut text = String::new();
        for s in &self.seen {
            text.push_str(&format!("  {:<24} value {:>8.3}", s.citizen, s.value));
            for (name, v) in &s.details {
                // Counts are whole numbers: `settlements 1`, not `settlements 1.000`.
                if COUNTS.contains(name) && v.fract() == 0.0 && v.abs() < 1e15 {
                    text.push_str(&format!("  {name} {}", *v as i64));
                } else {
                    text.push_str(&format!("  {name} {v:.3}"));
                }
            }
            if let Some(why) = s.excluded {
                text.push_str(&format!("  (excluded: {why})"));
            }
            text.push('\n');
        }
        match &self.citizen {
            Some(c) => text.push_str(&format!("  -> {c}: {}\n", self.reason)),
            None => text.push_str(&format!("  -> nobody: {}\n", self.reason)),
        }
        text
    }
}

/// A routing policy, as named by `routing.policy` in `polis.yml`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Policy {
    /// The reference's pick (SPEC §7): with probability `explore_rate` choose among the
    /// non-leaders weighted by `max(total, 0.0001)`, else the leader.
    EpsilonGreedy,
    /// `total + √2·√(ln N / n_i)`, n_i = Σ over the tags of the citizen's `contracts_completed`,
    /// N = Σ n_i; infinite when n_i = 0; ties to the lowest id. Uses no randomness.
    Ucb,
    /// A draw from N(total, σ(n_i)), σ(0) = 2, σ(n) = √2/√n; the highest draw wins.
    Thompson,
    /// polisd's default. Per citizen, one estimate of its expected settlement quality (1–5)
    /// on every tag it has settled work on ([`estimate`]): each tag starts at the citizen's
    /// self-rating for it, held as loosely as one settlement ([`PosteriorParams::prior_weight`]);
    /// a settlement observes the mean over its tags, so a two-tag settlement teaches about both
    /// jointly and work on one tag alone tells how to credit the other; older settlements count
    /// as noisier ([`PosteriorParams::drift`]), so recent work outweighs old. A citizen that
    /// changed at once (a new model behind the card) is noticed too: the estimate also weighs
    /// the chance that its work changed at one of its latest settlements, or unseen since the
    /// polis last gave it work. The contract's posterior is the mean over its tags.
    /// On `explore_rate` of the turns (an exploration turn) one draw from it (Thompson
    /// sampling, spread scaled by [`PosteriorParams::sample_scale`]) stands in for H and S;
    /// on the others its mean plus [`PosteriorParams::optimism`] spreads does, so a clear
    /// leader keeps at least 1 − explore_rate of the picks. Cost fit, availability and
    /// lessons are added with the score's own weights. An away citizen never wins while
    /// another exists.
    #[default]
    Posterior,
}

impl Policy {
    pub const ALL: [Policy; 4] = [
        Policy::EpsilonGreedy,
        Policy::Ucb,
        Policy::Thompson,
        Policy::Posterior,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Policy::EpsilonGreedy => "epsilon-greedy",
            Policy::Ucb => "ucb",
            Policy::Thompson => "thompson",
            Policy::Posterior => "posterior",
        }
    }

    /// Decides the pick for one contract. Deterministic for a given RNG state.
    pub fn pick(self, input: &PolicyInput<'_>, rng: &mut dyn RngCore) -> Pick {
        self.pick_with(input, &PosteriorParams::default(), rng)
    }

    /// As [`Policy::pick`], with explicit parameters for the posterior policy (the bench
    /// uses this to show how they were chosen).
    pub fn pick_with(
        self,
        input: &PolicyInput<'_>,
        params: &PosteriorParams,
        rng: &mut dyn RngCore,
    ) -> Pick {
        if input.scores.is_empty() {
            return Pick {
                citizen: None,
                exploration: false,
                score: 0.0,
                seen: Vec::new(),
                reason: "no candidates".to_string(),
            };
        }
        match self {
            Policy::EpsilonGreedy => epsilon_greedy(input, rng),
            Policy::Ucb => ucb(input),
            Policy::Thompson => thompson(input, rng),
            Policy::Posterior => posterior(input, params, rng),
        }
    }
}

impl fmt::Display for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An unknown `routing.policy` value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown routing policy `{0}`; expected one of: epsilon-greedy, ucb, thompson, posterior")]
pub struct UnknownPolicy(pub String);

impl FromStr for Policy {
    type Err = UnknownPolicy;

    fn from_str(s: &str) -> Result<Policy, UnknownPolicy> {
        Policy::ALL
            .into_iter()
            .find(|p| p.name() == s.trim())
            .ok_or_else(|| UnknownPolicy(s.to_string()))
    }
}

/// A uniform draw in [0, 1) from the top 53 bits, so a seed gives the same numbers whatever
/// `rand` does to its float conversion.
pub fn unit_f64(rng: &mut dyn RngCore) -> f64 {
    (rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// A standard normal draw (Box–Muller; one of the pair is discarded to keep the state simple).
pub fn standard_normal(rng: &mut dyn RngCore) -> f64 {
    let u1 = 1.0 - unit_f64(rng); // (0, 1], so the log is finite
    let u2 = unit_f64(rng);
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

/// Index of the highest value among the eligible; ties go to the lowest citizen id.
fn best(scores: &[Score], value: impl Fn(usize) -> Option<f64>) -> usize {
    let mut best: Option<(usize, f64)> = None;
    for (i, s) in scores.iter().enumerate() {
        let Some(v) = value(i) else { continue };
        // A NaN (say, from a card's `.nan` self-rating) never wins.
        let v = if v.is_nan() { f64::NEG_INFINITY } else { v };
        let better = match best {
            None => true,
            Some((j, bv)) => v > bv || (v == bv && s.citizen < scores[j].citizen),
        };
        if better {
            best = Some((i, v));
        }
    }
    best.map_or(0, |(i, _)| i)
}

fn finish(
    input: &PolicyInput<'_>,
    winner: usize,
    exploration: bool,
    seen: Vec<Seen>,
    reason: String,
) -> Pick {
    let s = &input.scores[winner];
    Pick {
        citizen: Some(s.citizen.clone()),
        exploration,
        score: s.total,
        seen,
        reason,
    }
}

/// The reference's epsilon-greedy draw over scores sorted by [`score::score_all`]: returns (citizen, exploration,
/// score of the choice).
pub fn epsilon_greedy_draw(
    sorted: &[Score],
    explore_rate: f64,
    rng: &mut StdRng,
) -> (Option<String>, bool, f64) {
    match sorted {
        [] => (None, false, 0.0),
        [only] => (Some(only.citizen.clone()), false, only.total),
        [leader, rest @ ..] => {
            if rng.random::<f64>() < explore_rate {
                let weights: Vec<f64> = rest.iter().map(|s| s.total.max(0.0001)).collect();
                let total_w: f64 = weights.iter().sum();
                let r = total_w * rng.random::<f64>();
                let mut upto = 0.0;
                for (cand, w) in rest.iter().zip(&weights) {
                    upto += w;
                    if upto >= r {
                        return (Some(cand.citizen.clone()), true, cand.total);
                    }
                }
                let last = rest.last().expect("at least one non-leader");
                (Some(last.citizen.clone()), true, last.total)
            } else {
                (Some(leader.citizen.clone()), false, leader.total)
            }
        }
    }
}

fn epsilon_greedy(input: &PolicyInput<'_>, rng: &mut dyn RngCore) -> Pick {
    let seen: Vec<Seen> = input
        .scores
        .iter()
        .map(|s| Seen {
            citizen: s.citizen.clone(),
            value: s.total,
            details: vec![("total", s.total)],
            excluded: None,
        })
        .collect();
    // The router's own pick (one implementation of SPEC §7's draw), fed from our generator.
    let mut draw = StdRng::seed_from_u64(rng.next_u64());
    let (citizen, exploration, score) =
        epsilon_greedy_draw(input.scores, input.explore_rate, &mut draw);
    let reason = if input.scores.len() == 1 {
        "the only candidate".to_string()
    } else if exploration {
        format!(
            "explored (probability {:.3}): a non-leader drawn with weight by total",
            input.explore_rate
        )
    } else {
        format!(
            "the leader by total {score:.3} (exploration probability {:.3} not taken)",
            input.explore_rate
        )
    };
    Pick {
        citizen,
        exploration,
        score,
        seen,
        reason,
    }
}

/// n_i: Σ over the contract's tags of the citizen's `contracts_completed`.
fn tag_count(input: &PolicyInput<'_>, citizen: &str) -> u64 {
    input
        .tags
        .iter()
        .map(|t| input.history.completed(t, citizen))
        .sum()
}

fn ucb(input: &PolicyInput<'_>) -> Pick {
    let counts: Vec<u64> = input
        .scores
        .iter()
        .map(|s| tag_count(input, &s.citizen))
        .collect();
    let big_n: u64 = counts.iter().sum();
    let seen: Vec<Seen> = input
        .scores
        .iter()
        .zip(&counts)
        .map(|(s, &n)| {
            let bonus = if n == 0 {
                f64::INFINITY
            } else {
                std::f64::consts::SQRT_2 * ((big_n as f64).ln() / n as f64).sqrt()
            };
            Seen {
                citizen: s.citizen.clone(),
                value: s.total + bonus,
                details: vec![("total", s.total), ("n", n as f64), ("bonus", bonus)],
                excluded: None,
            }
        })
        .collect();
    let winner = best(input.scores, |i| Some(seen[i].value));
    let greedy = best(input.scores, |i| Some(input.scores[i].total));
    let reason = if counts[winner] == 0 {
        "never settled a contract on these tags, so its bonus is infinite (lowest id among such)"
            .to_string()
    } else {
        format!(
            "highest total + bonus {:.3} (N = {big_n})",
            seen[winner].value
        )
    };
    finish(input, winner, winner != greedy, seen, reason)
}

fn thompson(input: &PolicyInput<'_>, rng: &mut dyn RngCore) -> Pick {
    let seen: Vec<Seen> = input
        .scores
        .iter()
        .map(|s| {
            let n = tag_count(input, &s.citizen);
            let sigma = if n == 0 {
                2.0
            } else {
                std::f64::consts::SQRT_2 / (n as f64).sqrt()
            };
            let sample = s.total + sigma * standard_normal(rng);
            Seen {
                citizen: s.citizen.clone(),
                value: sample,
                details: vec![
                    ("total", s.total),
                    ("n", n as f64),
                    ("sigma", sigma),
                    ("sample", sample),
                ],
                excluded: None,
            }
        })
        .collect();
    let winner = best(input.scores, |i| Some(seen[i].value));
    let greedy = best(input.scores, |i| Some(input.scores[i].total));
    let reason = format!(
        "highest sample {:.3} from N(total {:.3}, σ {:.3})",
        seen[winner].value, input.scores[winner].total, seen[winner].details[2].1
    );
    finish(input, winner, winner != greedy, seen, reason)
}

/// One candidate as the posterior policy sees it, in the score's units (0–1 per weight).
struct Belief {
    /// The posterior of its quality (1–5) on the contract.
    estimate: Estimate,
    /// Cost fit, availability and lessons, weighted as the score weighs them.
    rest: f64,
}

impl Belief {
    fn value(&self, quality_weight: f64, quality: f64) -> f64 {
        quality_weight * quality / 5.0 + self.rest
    }

    /// The value with the quality `z` spreads off the posterior mean.
    fn value_at(&self, quality_weight: f64, z: f64) -> f64 {
        self.value(
            quality_weight,
            self.estimate.mean + z * self.estimate.spread,
        )
    }
}

fn posterior(input: &PolicyInput<'_>, params: &PosteriorParams, rng: &mut dyn RngCore) -> Pick {
    let w = input.weights;
    let qw = w.history + w.self_rating;
    let any_present = input.scores.iter().any(|s| s.availability > 0.0);
    let beliefs: Vec<Belief> = input
        .scores
        .iter()
        .map(|s| Belief {
            estimate: estimate::estimate(input.tags, input.history, input.cards, params, s),
            rest: w.cost * s.cost_fit + w.avail * s.availability + s.lessons,
        })
        .collect();
    let excluded: Vec<Option<&'static str>> = input
        .scores
        .iter()
        .map(|s| (any_present && s.availability <= 0.0).then_some("away"))
        .collect();
    // One turn in `explore_rate` is an exploration turn: the pick is a draw from the posterior
    // (Thompson sampling). Every other turn exploits the highest expected value, counted with
    // a little optimism, so a clear leader keeps at least 1 - explore_rate of the picks. The
    // coin and every candidate's draw are taken on every turn, so one citizen going away does
    // not shift the others' luck.
    let explore_turn = unit_f64(rng) < input.explore_rate;
    let samples: Vec<f64> = beliefs
        .iter()
        .map(|b| b.estimate.mean + params.sample_scale * b.estimate.spread * standard_normal(rng))
        .collect();
    let eligible = |i: usize| excluded[i].is_none();
    let bound = |i: usize, z: f64| beliefs[i].value_at(qw, z);
    let optimistic = |i: usize| bound(i, params.optimism);
    let greedy = best(input.scores, |i| eligible(i).then(|| optimistic(i)));
    let drawn = best(input.scores, |i| {
        eligible(i).then(|| beliefs[i].value(qw, samples[i]))
    });
    let winner = if explore_turn { drawn } else { greedy };
    // A clear leader's interval is above every other's; it then also has the highest
    // optimistic value (its lower bound beats the others' upper bounds), so exploit turns
    // take it.
    let z = params.leader_z;
    let clear_leader = (0..input.scores.len())
        .filter(|&i| i != greedy && eligible(i))
        .all(|i| bound(i, z) < bound(greedy, -z));
    let seen: Vec<Seen> = input
        .scores
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let b = &beliefs[i];
            Seen {
                citizen: s.citizen.clone(),
                value: if explore_turn {
                    b.value(qw, samples[i])
                } else {
                    optimistic(i)
                },
                details: vec![
                    ("posterior_mean", b.estimate.mean),
                    ("spread", b.estimate.spread),
                    ("settlements", b.estimate.evidence),
                    ("changed", b.estimate.changed),
                    ("unseen_change", b.estimate.unseen),
                    ("sample", samples[i]),
                    ("cost_avail_lessons", b.rest),
                ],
                excluded: excluded[i],
            }
        })
        .collect();
    let b = &beliefs[winner];
    let mut quality = format!(
        "posterior mean quality {:.2} ± {:.2} after {} settlements on these tags",
        b.estimate.mean, b.estimate.spread, b.estimate.evidence
    );
    if b.estimate.changed >= 0.5 {
        quality.push_str(&format!(
            "; its latest work breaks with its record (it has likely changed, p {:.2}), so that work counts most",
            b.estimate.changed
        ));
    } else if let (true, Some(idle)) = (b.estimate.unseen >= 0.5, b.estimate.idle) {
        quality.push_str(&format!(
            "; it has had no work for {idle} contracts, so it may have changed unseen (p {:.2})",
            b.estimate.unseen
        ));
    }
    let reason = if !explore_turn {
        format!(
            "exploit (the {:.0}% of turns that take the best estimate): highest value {:.3} (mean + {} spread), {quality}; decided by {}{}",
            100.0 * (1.0 - input.explore_rate),
            optimistic(winner),
            params.optimism,
            deciding_terms(&beliefs, winner, qw, params.optimism),
            if clear_leader { "; a clear leader (its interval above every other's)" } else { "" }
        )
    } else if winner == greedy {
        format!(
            "explore turn (probability {:.2}): the posterior draw {:.2} confirmed the leader; {quality}",
            input.explore_rate, samples[winner]
        )
    } else {
        format!(
            "explore (probability {:.2}): the posterior draw {:.2} beat the leader {}'s; {quality}",
            input.explore_rate, samples[winner], input.scores[greedy].citizen
        )
    };
    // An exploration turn is reported as one even when its draw lands on the leader, so the
    // measured share of exploration picks is the configured `explore_rate`.
    finish(input, winner, explore_turn, seen, reason)
}

/// Which terms put the winner ahead of the runner-up by optimistic value: the quality
/// estimate, the uncertainty bonus (`optimism` spreads), and cost fit with availability and
/// lessons; the ones in its favour are named first.
fn deciding_terms(beliefs: &[Belief], winner: usize, qw: f64, optimism: f64) -> String {
    let value = |i: usize| beliefs[i].value_at(qw, optimism);
    let runner_up = (0..beliefs.len())
        .filter(|&i| i != winner)
        .max_by(|&a, &b| value(a).total_cmp(&value(b)));
    let Some(r) = runner_up else {
        return "being the only candidate".to_string();
    };
    let (a, b) = (&beliefs[winner], &beliefs[r]);
    let terms = [
        ("quality", qw * (a.estimate.mean - b.estimate.mean) / 5.0),
        (
            "uncertainty bonus",
            qw * optimism * (a.estimate.spread - b.estimate.spread) / 5.0,
        ),
        ("cost/availability/lessons", a.rest - b.rest),
    ];
    if terms.iter().all(|(_, d)| *d <= 0.0) {
        return "a tie broken by citizen id".to_string();
    }
    // A difference that shows as 0.000 is not named: it decided nothing a reader can see.
    let shown = |d: f64| (d * 1000.0).round() != 0.0;
    let ahead: Vec<String> = terms
        .iter()
        .filter(|(_, d)| *d > 0.0 && shown(*d))
        .map(|(name, d)| format!("{name} (+{d:.3})"))
        .collect();
    if ahead.is_empty() {
        return "a margin under 0.001".to_string();
    }
    let behind: Vec<String> = terms
        .iter()
        .filter(|(_, d)| *d < 0.0 && shown(*d))
        .map(|(name, d)| format!("{name} {d:+.3}"))
        .collect();
    if behind.is_empty() {
        ahead.join(" and ")
    } else {
        format!("{} (behind on {})", ahead.join(" and "), behind.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_term_that_rounds_to_nothing_is_not_named() {
        let belief = |mean: f64, spread: f64| Belief {
            estimate: Estimate {
                mean,
                spread,
                evidence: 0.0,
                changed: 0.0,
                unseen: 0.0,
                idle: None,
            },
            rest: 0.25,
        };
        // Two cards held equally loosely, the spreads a rounding error apart.
        let beliefs = [belief(4.0, 0.7), belief(0.0, 0.7 + 1e-15)];
        assert_eq!(
            deciding_terms(&beliefs, 0, 0.75, 0.5),
            "quality (+0.600)",
            "nothing it is behind on"
        );
        let beliefs = [belief(4.0, 0.7), belief(4.0 - 1e-9, 0.7)];
        assert_eq!(
            deciding_terms(&beliefs, 0, 0.75, 0.5),
            "a margin under 0.001"
        );
        let beliefs = [belief(4.0, 0.7), belief(4.0, 0.7)];
        assert_eq!(
            deciding_terms(&beliefs, 0, 0.75, 0.5),
            "a tie broken by citizen id"
        );
    }

    #[test]
    fn explain_prints_counts_as_integers() {
        let pick = Pick {
            citizen: Some("alpha-agent".into()),
            exploration: false,
            score: 0.5,
            seen: vec![Seen {
                citizen: "alpha-agent".into(),
                value: 0.5,
                details: vec![("settlements", 1.0), ("spread", 0.25), ("sample", 4.0)],
                excluded: None,
            }],
            reason: "r".into(),
        };
        let text = pick.explain();
        assert!(
            text.contains("settlements 1  spread 0.250  sample 4.000"),
            "{text}"
        );
    }

    struct Fixed(u64);
    impl RngCore for Fixed {
        fn next_u32(&mut self) -> u32 {
            self.next_u64() as u32
        }
        fn next_u64(&mut self) -> u64 {
            // splitmix64, enough for unit tests
            self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        }
        fn fill_bytes(&mut self, dst: &mut [u8]) {
            for b in dst {
                *b = self.next_u64() as u8;
            }
        }
    }

    fn score(citizen: &str, total: f64) -> Score {
        Score::plain(citizen, total)
    }

    #[test]
    fn policy_names_round_trip() {
        for p in Policy::ALL {
            assert_eq!(p.name().parse::<Policy>(), Ok(p));
        }
        assert_eq!(Policy::default(), Policy::Posterior);
        assert!("greedy".parse::<Policy>().is_err());
    }

    #[test]
    fn epsilon_greedy_zero_rate_exploits_first_of_tied_leaders() {
        let scores = [
            score("agent-c", 0.7),
            score("agent-d", 0.7),
            score("agent-b", 0.5),
        ];
        let history = History::new();
        let input = PolicyInput {
            tags: &[],
            scores: &scores,
            history: &history,
            weights: Weights::default(),
            explore_rate: 0.0,
            cards: &[],
        };
        let pick = Policy::EpsilonGreedy.pick(&input, &mut Fixed(1));
        assert_eq!(pick.citizen.as_deref(), Some("agent-c"));
        assert!(!pick.exploration);
    }

    #[test]
    fn epsilon_greedy_full_rate_never_picks_the_leader() {
        let scores = [
            score("agent-c", 0.9),
            score("agent-b", 0.5),
            score("agent-d", 0.1),
        ];
        let history = History::new();
        let input = PolicyInput {
            tags: &[],
            scores: &scores,
            history: &history,
            weights: Weights::default(),
            explore_rate: 1.0,
            cards: &[],
        };
        let mut rng = Fixed(7);
        for _ in 0..50 {
            let pick = Policy::EpsilonGreedy.pick(&input, &mut rng);
            assert_ne!(pick.citizen.as_deref(), Some("agent-c"));
            assert!(pick.exploration);
        }
    }

    #[test]
    fn standard_normal_has_unit_moments() {
        let mut rng = Fixed(3);
        let n = 20_000;
        let draws: Vec<f64> = (0..n).map(|_| standard_normal(&mut rng)).collect();
        let mean = draws.iter().sum::<f64>() / n as f64;
        let var = draws.iter().map(|d| (d - mean).powi(2)).sum::<f64>() / n as f64;
        assert!(mean.abs() < 0.03, "mean {mean}");
        assert!((var - 1.0).abs() < 0.05, "var {var}");
    }

    #[test]
    fn posterior_learns_from_settlements_over_the_self_rating() {
        // agent-a claims 5 but settles 2s; agent-b claims 3 and settles 5s.
        let mut h = History::new();
        for _ in 0..10 {
            for (c, q) in [("agent-a", 2.0), ("agent-b", 5.0)] {
                h.record(Outcome {
                    citizen: c.into(),
                    tags: vec!["py".into()],
                    quality: q,
                });
            }
        }
        let mut a = score("agent-a", 0.0);
        a.self_rating = 1.0;
        let mut b = score("agent-b", 0.0);
        b.self_rating = 0.6;
        let scores = [a, b];
        let tags = ["py".to_string()];
        let input = input(&tags, &scores, &h, 0.15, &[]);
        let mut rng = Fixed(11);
        let wins = (0..100)
            .filter(|_| {
                Policy::Posterior.pick(&input, &mut rng).citizen.as_deref() == Some("agent-b")
            })
            .count();
        assert!(wins >= 95, "agent-b won {wins}/100");
    }

    fn input<'a>(
        tags: &'a [String],
        scores: &'a [Score],
        history: &'a History,
        explore_rate: f64,
        cards: &'a [Candidate],
    ) -> PolicyInput<'a> {
        PolicyInput {
            tags,
            scores,
            history,
            weights: Weights::default(),
            explore_rate,
            cards,
        }
    }

    fn posterior_of(pick: &Pick, citizen: &str) -> f64 {
        let seen = pick.seen.iter().find(|s| s.citizen == citizen).unwrap();
        seen.details
            .iter()
            .find(|(n, _)| *n == "posterior_mean")
            .unwrap()
            .1
    }

    #[test]
    fn work_on_one_tag_alone_tells_how_to_credit_a_two_tag_settlement() {
        // agent-a settles go alone at 5 and [py, go] at 3: its py work is poor (about 1),
        // not 3 as the two-tag settlements alone would suggest (the self-rating, 4, still
        // pulls it up a little).
        let mut h = History::new();
        for _ in 0..10 {
            for (tags, q) in [(vec!["go"], 5.0), (vec!["py", "go"], 3.0)] {
                h.record(Outcome {
                    citizen: "agent-a".into(),
                    tags: tags.into_iter().map(String::from).collect(),
                    quality: q,
                });
            }
        }
        let scores = [score("agent-a", 0.5)];
        let tags = ["py".to_string()];
        let input = input(&tags, &scores, &h, 0.15, &[]);
        let py = posterior_of(&Policy::Posterior.pick(&input, &mut Fixed(1)), "agent-a");
        assert!(py < 2.5, "py estimated at {py}");
    }

    #[test]
    fn each_tag_starts_at_the_cards_own_self_rating() {
        let card = Candidate {
            id: "agent-a".into(),
            self_ratings: [("py".to_string(), 5.0), ("go".to_string(), 3.0)].into(),
            ..Candidate::default()
        };
        let scores = [score("agent-a", 0.5)];
        let history = History::new();
        for (tag, want) in [("py", 5.0), ("go", 3.0)] {
            let tags = [tag.to_string()];
            let input = input(&tags, &scores, &history, 0.15, std::slice::from_ref(&card));
            let got = posterior_of(&Policy::Posterior.pick(&input, &mut Fixed(1)), "agent-a");
            assert!((got - want).abs() < 1e-9, "{tag}: {got}");
        }
    }

    #[test]
    fn an_exploit_turn_prefers_the_less_known_of_two_equal_estimates() {
        // Same mean quality 4; agent-b has one settlement, agent-a forty.
        let mut h = History::new();
        for _ in 0..40 {
            h.record(Outcome {
                citizen: "agent-a".into(),
                tags: vec!["py".into()],
                quality: 4.0,
            });
        }
        h.record(Outcome {
            citizen: "agent-b".into(),
            tags: vec!["py".into()],
            quality: 4.0,
        });
        let scores = [score("agent-a", 0.5), score("agent-b", 0.5)];
        let tags = ["py".to_string()];
        let input = input(&tags, &scores, &h, 0.0, &[]);
        let pick = Policy::Posterior.pick(&input, &mut Fixed(2));
        assert_eq!(pick.citizen.as_deref(), Some("agent-b"));
        assert!(pick.reason.contains("uncertainty bonus"), "{}", pick.reason);
    }

    #[test]
    fn explain_names_every_candidate_and_the_winner() {
        let scores = [score("agent-c", 0.7), score("agent-b", 0.5)];
        let history = History::new();
        let tags = ["py".to_string()];
        let input = input(&tags, &scores, &history, 0.15, &[]);
        let pick = Policy::Posterior.pick(&input, &mut Fixed(5));
        let text = pick.explain();
        assert!(text.contains("agent-b") && text.contains("agent-c"));
        assert!(text.contains("posterior_mean") && text.contains("sample"));
        assert!(text.contains(&format!("-> {}", pick.citizen.unwrap())));
    }
}
