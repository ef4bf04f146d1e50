//! The routing bench: a simulated polis where every citizen has a hidden skill per tag, and
//! routing strategies (the baselines, every [`Policy`], and an all-knowing oracle) compete on
//! the same stream of contracts.
//!
//! The world is built the way the reference's `polis bench` builds it; the
//! learning strategies are scored by the production scoring (SPEC §7) against statistics
//! updated exactly as reconcile does, and only ever see settled quality, never skill. Nothing
//! here touches a polis; the only file written is the optional plot.

use crate::protocol::contracts::contract::Contract;
use crate::protocol::routing::policy::{
    self, History, Outcome, Policy, PolicyInput, PosteriorParams,
};
use crate::protocol::routing::score::{self, Candidate};
use crate::protocol::routing::stats::{self, RoutingStats, Settlement};
use crate::protocol::settings::{Weights, DEFAULT_LESSON_CAP};
use crate::yaml::Value;
use anyhow::Context;
use rand::RngCore;
use serde::Serialize;
use std::collections::HashMap;
use std::fmt;
use std::io::Write;
use std::ops::Range;
use std::path::PathBuf;
use std::str::FromStr;

use super::chart;

/// Cost units of the envelopes `low`, `medium`, `high` (the reference bench's).
const COST_UNITS: [f64; 3] = [1.0, 2.0, 4.0];
const COST_NAMES: [&str; 3] = ["low", "medium", "high"];
/// Width of the window (in contracts) used to measure recovery after a mid-run change.
pub const RECOVERY_WINDOW: usize = 50;
/// Share of the oracle's gain a window must recover to count as recovered.
pub const RECOVERY_SHARE: f64 = 0.8;

/// The bench's worlds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Scenario {
    /// 4 citizens, 5 tags, 500 contracts; nothing changes.
    #[default]
    Default,
    /// As default, but at mid-run the citizen with the lowest mean skill gets better: each of
    /// its skills s becomes 1.2 − s (its card is not updated).
    Drift,
    /// As default, but at mid-run a strong citizen joins (skills uniform in [0.6, 1.0]).
    Newcomer,
    /// 12 citizens, 20 tags, 2,000 contracts.
    Large,
}

impl Scenario {
    pub const ALL: [Scenario; 4] = [
        Scenario::Default,
        Scenario::Drift,
        Scenario::Newcomer,
        Scenario::Large,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Scenario::Default => "default",
            Scenario::Drift => "drift",
            Scenario::Newcomer => "newcomer",
            Scenario::Large => "large",
        }
    }

    /// (contracts, citizens, tags) when the options do not say.
    pub fn sizes(self) -> (usize, usize, usize) {
        match self {
            Scenario::Large => (2000, 12, 20),
            _ => (500, 4, 5),
        }
    }
}

impl fmt::Display for Scenario {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Scenario {
    type Err = anyhow::Error;

    fn from_str(s: &str) -> anyhow::Result<Scenario> {
        Scenario::ALL
            .into_iter()
            .find(|x| x.name() == s.trim())
            .ok_or_else(|| {
                anyhow::anyhow!(
                    "unknown scenario `{s}`; expected default, drift, newcomer or large"
                )
            })
    }
}

/// Parses `--seeds`: `A..B` (B excluded, as in Rust), `A..=B` (B included) or a single seed.
pub fn parse_seeds(text: &str) -> anyhow::Result<Range<u64>> {
    let t = text.trim();
    let bad = || anyhow::anyhow!("bad seed range `{text}`; write A..B (B excluded), A..=B or A");
    let num = |s: &str| s.trim().parse::<u64>().map_err(|_| bad());
    let range = if let Some((a, b)) = t.split_once("..=") {
        num(a)?..num(b)?.checked_add(1).ok_or_else(bad)?
    } else if let Some((a, b)) = t.split_once("..") {
        num(a)?..num(b)?
    } else {
        let a = num(t)?;
        a..a + 1
    };
    if range.is_empty() {
        return Err(bad());
    }
    Ok(range)
}

/// What to run. `None` sizes take the scenario's.
#[derive(Debug, Clone)]
pub struct BenchOptions {
    pub contracts: Option<usize>,
    pub citizens: Option<usize>,
    pub tags: Option<usize>,
    pub seeds: Range<u64>,
    pub scenario: Scenario,
    /// Where to draw the learning curves (PNG), if anywhere.
    pub plot: Option<PathBuf>,
    /// Tuning of the posterior policy (the defaults are what polisd routes with).
    pub posterior: PosteriorParams,
}

impl Default for BenchOptions {
    fn default() -> Self {
        BenchOptions {
            contracts: None,
            citizens: None,
            tags: None,
            seeds: 0..20,
            scenario: Scenario::Default,
            plot: None,
            posterior: PosteriorParams::default(),
        }
    }
}

/// A routing strategy in the bench.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strategy {
    Random,
    RoundRobin,
    /// Always the highest mean self-rating over the contract's tags (no learning).
    StaticSelf,
    Policy(Policy),
    /// Picks by the hidden skill: the ceiling, not a real strategy.
    Oracle,
}

impl Strategy {
    pub const ALL: [Strategy; 8] = [
        Strategy::Random,
        Strategy::RoundRobin,
        Strategy::StaticSelf,
        Strategy::Policy(Policy::EpsilonGreedy),
        Strategy::Policy(Policy::Ucb),
        Strategy::Policy(Policy::Thompson),
        Strategy::Policy(Policy::Posterior),
        Strategy::Oracle,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Strategy::Random => "random",
            Strategy::RoundRobin => "round-robin",
            Strategy::StaticSelf => "static-self",
            Strategy::Policy(p) => p.name(),
            Strategy::Oracle => "oracle",
        }
    }
}

/// The bench's random numbers: xoshiro256** seeded through splitmix64, written out here so a
/// seed gives the same world whatever version of `rand` is in the lock file.
#[derive(Debug, Clone)]
pub struct SimRng {
    s: [u64; 4],
}

impl SimRng {
    /// A generator for one `stream` (world, contracts, picks) of one seed.
    pub fn new(seed: u64, stream: u64) -> SimRng {
        let mut x = seed ^ stream.wrapping_mul(0xD1B5_4A32_D192_ED03);
        let mut next = || {
            x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = x;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        };
        SimRng {
            s: [next(), next(), next(), next()],
        }
    }

    fn unit(&mut self) -> f64 {
        policy::unit_f64(self)
    }

    fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.unit()
    }

    /// A uniform index below `n` (n > 0).
    fn below(&mut self, n: usize) -> usize {
        ((self.unit() * n as f64) as usize).min(n - 1)
    }

    fn gauss(&mut self, sd: f64) -> f64 {
        sd * policy::standard_normal(self)
    }
}

impl RngCore for SimRng {
    fn next_u32(&mut self) -> u32 {
        (self.next_u64() >> 32) as u32
    }

    fn next_u64(&mut self) -> u64 {
        let s = &mut self.s;
        let result = s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        result
    }

    fn fill_bytes(&mut self, dst: &mut [u8]) {
        for chunk in dst.chunks_mut(8) {
            let bytes = self.next_u64().to_le_bytes();
            chunk.copy_from_slice(&bytes[..chunk.len()]);
        }
    }
}

/// One simulated citizen.
#[derive(Debug, Clone, PartialEq)]
pub struct SimCitizen {
    pub id: String,
    /// Hidden skill per tag (index into [`World::tags`]), in [0.2, 1.0].
    pub skill: Vec<f64>,
    /// The card's self-rating per tag, 1–5.
    pub self_rating: Vec<u8>,
    /// Index into low/medium/high.
    pub cost: usize,
    /// The contract index from which the citizen exists (0 for the founders).
    pub joins_at: usize,
}

impl SimCitizen {
    pub fn cost_envelope(&self) -> &'static str {
        COST_NAMES[self.cost]
    }
}

/// One simulated contract.
#[derive(Debug, Clone, PartialEq)]
pub struct SimContract {
    /// One or two distinct tag indexes.
    pub tags: Vec<usize>,
    /// The settlement noise, N(0, 0.6): drawn once per contract so every strategy faces the
    /// same luck and differences come from the picks alone.
    pub noise: f64,
}

/// A mid-run change of one citizen's skills.
#[derive(Debug, Clone, PartialEq)]
pub struct Drift {
    pub at: usize,
    pub citizen: usize,
    pub skill: Vec<f64>,
}

/// A bench world: citizens, the contract stream, and what changes at mid-run.
#[derive(Debug, Clone, PartialEq)]
pub struct World {
    pub tags: Vec<String>,
    pub citizens: Vec<SimCitizen>,
    pub contracts: Vec<SimContract>,
    pub drift: Option<Drift>,
    /// The contract index where the scenario changes (drift or newcomer), if it does.
    pub change_at: Option<usize>,
}

/// The self-rating a citizen of this skill writes on its card: overconfident and compressed.
fn self_rating(skill: f64, rng: &mut SimRng) -> u8 {
    let raw = (3.2 + 1.6 * skill + rng.uniform(-0.5, 0.5)).round_ties_even();
    raw.clamp(1.0, 5.0) as u8
}

fn make_citizen(i: usize, n_tags: usize, lo: f64, joins_at: usize, rng: &mut SimRng) -> SimCitizen {
    let skill: Vec<f64> = (0..n_tags).map(|_| rng.uniform(lo, 1.0)).collect();
    let self_rating = skill.iter().map(|&s| self_rating(s, rng)).collect();
    SimCitizen {
        id: format!("agent-{i:02}"),
        skill,
        self_rating,
        cost: rng.below(3),
        joins_at,
    }
}

impl World {
    /// Builds the world of one seed. Founders, then any newcomer, come from the world stream;
    /// the contracts from their own stream, so the same seed gives the same contracts for any
    /// number of citizens.
    pub fn generate(
        scenario: Scenario,
        n_contracts: usize,
        n_citizens: usize,
        n_tags: usize,
        seed: u64,
    ) -> World {
        let mut rng = SimRng::new(seed, 0);
        let tags: Vec<String> = (0..n_tags).map(|i| format!("tag-{i:02}")).collect();
        let mut citizens: Vec<SimCitizen> = (0..n_citizens)
            .map(|i| make_citizen(i, n_tags, 0.2, 0, &mut rng))
            .collect();
        let mid = n_contracts / 2;
        let mut drift = None;
        let mut change_at = None;
        match scenario {
            Scenario::Newcomer => {
                citizens.push(make_citizen(n_citizens, n_tags, 0.6, mid, &mut rng));
                change_at = Some(mid);
            }
            Scenario::Drift if !citizens.is_empty() => {
                let mean = |c: &SimCitizen| c.skill.iter().sum::<f64>();
                let weakest = (0..citizens.len())
                    .min_by(|&a, &b| mean(&citizens[a]).total_cmp(&mean(&citizens[b])))
                    .expect("at least one citizen");
                let skill = citizens[weakest].skill.iter().map(|s| 1.2 - s).collect();
                drift = Some(Drift {
                    at: mid,
                    citizen: weakest,
                    skill,
                });
                change_at = Some(mid);
            }
            _ => {}
        }
        let mut seq = SimRng::new(seed, 1);
        let contracts = (0..n_contracts)
            .map(|_| {
                let k = if n_tags >= 2 && seq.unit() < 0.5 {
                    2
                } else {
                    1
                };
                let mut pool: Vec<usize> = (0..n_tags).collect();
                let mut picked = Vec::with_capacity(k);
                for j in 0..k.min(n_tags) {
                    let r = j + seq.below(n_tags - j);
                    pool.swap(j, r);
                    picked.push(pool[j]);
                }
                SimContract {
                    tags: picked,
                    noise: seq.gauss(0.6),
                }
            })
            .collect();
        World {
            tags,
            citizens,
            contracts,
            drift,
            change_at,
        }
    }

    /// Skill of citizen `c` on tag `t` for contract `k` (after any drift).
    pub fn skill(&self, c: usize, t: usize, k: usize) -> f64 {
        match &self.drift {
            Some(d) if d.citizen == c && k >= d.at => d.skill[t],
            _ => self.citizens[c].skill[t],
        }
    }

    /// Mean skill of citizen `c` over contract `k`'s tags.
    pub fn mean_skill(&self, c: usize, k: usize) -> f64 {
        let tags = &self.contracts[k].tags;
        tags.iter().map(|&t| self.skill(c, t, k)).sum::<f64>() / tags.len() as f64
    }

    /// The settled quality when citizen `c` does contract `k`: round(4·skill + 1 + noise),
    /// clamped to 1–5 (Python's round, half to even).
    pub fn quality(&self, c: usize, k: usize) -> f64 {
        (4.0 * self.mean_skill(c, k) + 1.0 + self.contracts[k].noise)
            .round_ties_even()
            .clamp(1.0, 5.0)
    }

    /// The quality citizen `c` is expected to deliver on contract `k`, before noise.
    pub fn expected_quality(&self, c: usize, k: usize) -> f64 {
        4.0 * self.mean_skill(c, k) + 1.0
    }

    fn present(&self, k: usize) -> Vec<usize> {
        (0..self.citizens.len())
            .filter(|&c| self.citizens[c].joins_at <= k)
            .collect()
    }
}

/// The learning strategies' view of the polis: the settlements so far, and the production
/// scoring inputs built from the world once.
struct Learner {
    candidates: Vec<Candidate>,
    contracts: Vec<Contract>,
    /// Tag -> the settlements that required it, as one-tag settlements: a tag's numbers in
    /// reconcile depend only on its own settlements, so replaying these per tag gives the
    /// same figures as replaying everything, at a fraction of the cost.
    settlements: HashMap<String, Vec<Settlement>>,
    history: History,
}

impl Learner {
    fn new(world: &World) -> Learner {
        let candidates = world
            .citizens
            .iter()
            .map(|c| Candidate {
                id: c.id.clone(),
                self_ratings: world
                    .tags
                    .iter()
                    .zip(&c.self_rating)
                    .map(|(t, &r)| (t.clone(), f64::from(r)))
                    .collect(),
                cost: Some(c.cost_envelope().to_string()),
                state: Some("idle".to_string()),
                has_blockers: false,
            })
            .collect();
        // Every bench contract has the default cost ceiling (medium), as the reference's do.
        let contracts = world
            .contracts
            .iter()
            .map(|c| Contract {
                required_tags: c.tags.iter().map(|&t| world.tags[t].clone()).collect(),
                ..Contract::default()
            })
            .collect();
        Learner {
            candidates,
            contracts,
            settlements: HashMap::new(),
            history: History::new(),
        }
    }

    /// The routing stats of `tags` as reconcile rebuilds them from the settlements so far. Each tag's
    /// `leader_confidence` is then replaced by the reference bench's notion of confidence,
    /// `cf(most settlements by one citizen on the tag)`, so the router's adaptive explore
    /// rate is the one the reference bench runs epsilon-greedy with.
    fn stats(&self, tags: &[String]) -> RoutingStats {
        let mut st = RoutingStats::default();
        for tag in tags {
            if let Some(settled) = self.settlements.get(tag) {
                st.tags
                    .extend(stats::reconcile(settled, &Value::Null, &Value::Null).tags);
            }
        }
        for tag in &mut st.tags {
            let most = tag
                .citizens
                .iter()
                .map(|c| c.contracts_completed)
                .max()
                .unwrap_or(0);
            tag.leader_confidence = Some(score::confidence_factor(most as f64));
        }
        st
    }

    fn pick(
        &self,
        world: &World,
        policy: Policy,
        k: usize,
        present: &[usize],
        params: &PosteriorParams,
        rng: &mut SimRng,
    ) -> usize {
        let contract = &self.contracts[k];
        let st = self.stats(&contract.required_tags);
        let ctx = score::Context {
            stats: &st,
            lessons: &[],
            weights: Weights::default(),
            lesson_cap: DEFAULT_LESSON_CAP,
        };
        let candidates: Vec<Candidate> = present
            .iter()
            .map(|&c| self.candidates[c].clone())
            .collect();
        let scores = score::score_all(&candidates, contract, &ctx);
        let input = PolicyInput {
            tags: &contract.required_tags,
            scores: &scores,
            history: &self.history,
            weights: Weights::default(),
            explore_rate: score::adaptive_explore_rate(
                stats::DEFAULT_EXPLORE_RATE,
                &contract.required_tags,
                &st,
            ),
        };
        let pick = policy.pick_with(&input, params, rng);
        let id = pick.citizen.expect("the bench always has candidates");
        *present
            .iter()
            .find(|&&c| world.citizens[c].id == id)
            .expect("the pick is a candidate")
    }

    fn record(&mut self, world: &World, citizen: usize, k: usize, quality: f64) {
        let tags = self.contracts[k].required_tags.clone();
        let base = chrono::NaiveDate::from_ymd_opt(2026, 1, 1)
            .and_then(|d| d.and_hms_opt(0, 0, 0))
            .expect("a valid date");
        for tag in &tags {
            self.settlements
                .entry(tag.clone())
                .or_default()
                .push(Settlement {
                    owner: world.citizens[citizen].id.clone(),
                    tags: vec![tag.clone()],
                    // One settlement a minute, so reconcile replays them in the order they
                    // happened.
                    instant: Some(base + chrono::Duration::minutes(k as i64)),
                    quality: quality as u8,
                    minutes: 30.0,
                    ..Settlement::default()
                });
        }
        self.history.record(Outcome {
            citizen: world.citizens[citizen].id.clone(),
            tags,
            quality,
        });
    }
}

/// One strategy on one world.
#[derive(Debug, Clone)]
struct Run {
    mean_quality: f64,
    cost_per_contract: f64,
    /// Running mean quality after each contract.
    curve: Vec<f64>,
    /// Expected quality (before noise) of each pick.
    expected: Vec<f64>,
}

fn run_strategy(world: &World, strategy: Strategy, seed: u64, params: &PosteriorParams) -> Run {
    let mut rng = SimRng::new(seed, 100);
    let mut learner = matches!(strategy, Strategy::Policy(_)).then(|| Learner::new(world));
    let mut rr = 0usize;
    let n = world.contracts.len();
    let (mut total_q, mut total_cost) = (0.0, 0.0);
    let mut curve = Vec::with_capacity(n);
    let mut expected = Vec::with_capacity(n);
    for k in 0..n {
        let present = world.present(k);
        let tags = &world.contracts[k].tags;
        let chosen = match (strategy, &learner) {
            (Strategy::Random, _) => present[rng.below(present.len())],
            (Strategy::RoundRobin, _) => {
                rr += 1;
                present[(rr - 1) % present.len()]
            }
            (Strategy::StaticSelf, _) => first_max(&present, |c| {
                tags.iter()
                    .map(|&t| world.citizens[c].self_rating[t] as f64)
                    .sum()
            }),
            (Strategy::Oracle, _) => first_max(&present, |c| world.mean_skill(c, k)),
            (Strategy::Policy(policy), Some(l)) => {
                l.pick(world, policy, k, &present, params, &mut rng)
            }
            (Strategy::Policy(_), None) => unreachable!("a policy strategy has a learner"),
        };
        let q = world.quality(chosen, k);
        total_q += q;
        total_cost += COST_UNITS[world.citizens[chosen].cost];
        if let Some(l) = &mut learner {
            l.record(world, chosen, k, q);
        }
        curve.push(total_q / (k + 1) as f64);
        expected.push(world.expected_quality(chosen, k));
    }
    Run {
        mean_quality: total_q / n as f64,
        cost_per_contract: total_cost / n as f64,
        curve,
        expected,
    }
}

/// The first of `items` with the highest key (Python's `max` keeps the first).
fn first_max(items: &[usize], key: impl Fn(usize) -> f64) -> usize {
    let mut best = items[0];
    let mut best_key = key(best);
    for &c in &items[1..] {
        let k = key(c);
        if k > best_key {
            best = c;
            best_key = k;
        }
    }
    best
}

/// How fast a strategy recovered after a mid-run change, over the seeds.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Recovery {
    /// Per seed: contracts after the change until the last [`RECOVERY_WINDOW`] picks are back
    /// at the share of the oracle's expected gain (over an average citizen) that the strategy
    /// held in the quarter of the run before the change, or at [`RECOVERY_SHARE`] if that was
    /// higher; `None` when that never happens before the run ends.
    pub per_seed: Vec<Option<usize>>,
    /// Share of the oracle's expected gain held in the quarter before the change (seed mean).
    pub before: f64,
    /// Share of the oracle's expected gain over everything after the change (seed mean).
    pub after: f64,
}

impl Recovery {
    pub fn recovered(&self) -> usize {
        self.per_seed.iter().flatten().count()
    }

    /// Median over seeds, counting a seed that never recovered as never (None when more than
    /// half never did).
    pub fn median(&self) -> Option<usize> {
        let mut v: Vec<usize> = self
            .per_seed
            .iter()
            .map(|r| r.unwrap_or(usize::MAX))
            .collect();
        v.sort_unstable();
        let m = v.get(v.len() / 2).copied()?;
        (m != usize::MAX).then_some(m)
    }

    pub fn mean_of_recovered(&self) -> Option<f64> {
        let r: Vec<usize> = self.per_seed.iter().flatten().copied().collect();
        (!r.is_empty()).then(|| r.iter().sum::<usize>() as f64 / r.len() as f64)
    }
}

/// One strategy's results over all seeds.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StrategyResult {
    pub strategy: String,
    /// Mean settled quality, averaged over seeds.
    pub mean_quality: f64,
    /// Cost units per contract, averaged over seeds.
    pub cost_per_contract: f64,
    /// (mean quality − round-robin's) / (oracle's − round-robin's), on the seed averages.
    pub oracle_gain: f64,
    /// The same share computed per seed, then averaged.
    pub oracle_gain_per_seed: f64,
    /// Seeds where its mean quality is strictly above static self-rating's.
    pub seeds_beating_static: usize,
    /// Seeds where its cost per contract is at most round-robin's.
    pub seeds_cost_within_round_robin: usize,
    /// Running mean quality after each contract, averaged over seeds.
    pub curve: Vec<f64>,
    /// After a mid-run change (drift, newcomer): how fast it recovered.
    pub recovery: Option<Recovery>,
}

/// Everything the bench measured.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BenchReport {
    pub scenario: Scenario,
    pub contracts: usize,
    pub citizens: usize,
    pub tags: usize,
    pub seeds: Range<u64>,
    pub change_at: Option<usize>,
    pub results: Vec<StrategyResult>,
}

impl BenchReport {
    pub fn get(&self, strategy: Strategy) -> &StrategyResult {
        self.results
            .iter()
            .find(|r| r.strategy == strategy.name())
            .expect("every strategy runs")
    }
}

/// Per contract: the oracle's expected quality and an average present citizen's.
fn expected_levels(world: &World) -> (Vec<f64>, Vec<f64>) {
    let n = world.contracts.len();
    let mut oracle = Vec::with_capacity(n);
    let mut average = Vec::with_capacity(n);
    for k in 0..n {
        let eq: Vec<f64> = world
            .present(k)
            .iter()
            .map(|&c| world.expected_quality(c, k))
            .collect();
        oracle.push(eq.iter().copied().fold(f64::NEG_INFINITY, f64::max));
        average.push(eq.iter().sum::<f64>() / eq.len() as f64);
    }
    (oracle, average)
}

/// Recovery after the change at `at`: (contracts until recovered, share before, share after).
fn recovery_after(
    levels: &(Vec<f64>, Vec<f64>),
    expected: &[f64],
    at: usize,
) -> (Option<usize>, f64, f64) {
    let (oracle, average) = levels;
    let n = expected.len();
    let share = |r: Range<usize>| {
        let gain: f64 = r.clone().map(|k| oracle[k] - average[k]).sum();
        let got: f64 = r.map(|k| expected[k] - average[k]).sum();
        if gain > 0.0 {
            got / gain
        } else {
            1.0
        }
    };
    // "Recovered" means back at the level it held in the second quarter of the run (after its
    // first learning), or at RECOVERY_SHARE if that level was higher.
    let before = share(at / 2..at);
    let target = before.min(RECOVERY_SHARE);
    let after = share(at..n);
    let recovered = (at..=n.saturating_sub(RECOVERY_WINDOW))
        .find(|&start| share(start..start + RECOVERY_WINDOW) >= target)
        .map(|start| start + RECOVERY_WINDOW - at);
    (recovered, before, after)
}

/// Runs the bench, prints its report to `out`, draws the plot if asked, and returns the
/// figures. This is what `polisd bench routing` calls.
pub fn run_bench(opts: &BenchOptions, out: &mut dyn Write) -> anyhow::Result<BenchReport> {
    let (dc, dz, dt) = opts.scenario.sizes();
    let contracts = opts.contracts.unwrap_or(dc);
    let citizens = opts.citizens.unwrap_or(dz);
    let tags = opts.tags.unwrap_or(dt);
    anyhow::ensure!(contracts >= 1, "--contracts must be at least 1");
    anyhow::ensure!(citizens >= 1, "--citizens must be at least 1");
    anyhow::ensure!(tags >= 1, "--tags must be at least 1");
    anyhow::ensure!(!opts.seeds.is_empty(), "the seed range is empty");
    let seeds: Vec<u64> = opts.seeds.clone().collect();

    // runs[seed][strategy]
    let mut runs: Vec<Vec<Run>> = Vec::with_capacity(seeds.len());
    let mut recoveries: Vec<Vec<(Option<usize>, f64, f64)>> = Vec::new();
    let mut change_at = None;
    for &seed in &seeds {
        let world = World::generate(opts.scenario, contracts, citizens, tags, seed);
        change_at = world.change_at;
        let per: Vec<Run> = Strategy::ALL
            .iter()
            .map(|&s| run_strategy(&world, s, seed, &opts.posterior))
            .collect();
        if let Some(at) = world.change_at {
            let levels = expected_levels(&world);
            recoveries.push(
                per.iter()
                    .map(|r| recovery_after(&levels, &r.expected, at))
                    .collect(),
            );
        }
        runs.push(per);
    }

    let n_seeds = seeds.len() as f64;
    let avg =
        |i: usize, f: &dyn Fn(&Run) -> f64| runs.iter().map(|r| f(&r[i])).sum::<f64>() / n_seeds;
    let idx = |s: Strategy| Strategy::ALL.iter().position(|&x| x == s).expect("known");
    let (rr, st, or) = (
        idx(Strategy::RoundRobin),
        idx(Strategy::StaticSelf),
        idx(Strategy::Oracle),
    );
    let rr_q = avg(rr, &|r| r.mean_quality);
    let or_q = avg(or, &|r| r.mean_quality);
    let share = |q: f64, base: f64, top: f64| {
        if top > base {
            (q - base) / (top - base)
        } else {
            0.0
        }
    };
    let results = Strategy::ALL
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let mq = avg(i, &|r| r.mean_quality);
            let per_seed_gain = runs
                .iter()
                .map(|r| share(r[i].mean_quality, r[rr].mean_quality, r[or].mean_quality))
                .sum::<f64>()
                / n_seeds;
            let curve = (0..contracts)
                .map(|k| runs.iter().map(|r| r[i].curve[k]).sum::<f64>() / n_seeds)
                .collect();
            let recovery = change_at.map(|_| Recovery {
                per_seed: recoveries.iter().map(|r| r[i].0).collect(),
                before: recoveries.iter().map(|r| r[i].1).sum::<f64>() / n_seeds,
                after: recoveries.iter().map(|r| r[i].2).sum::<f64>() / n_seeds,
            });
            StrategyResult {
                strategy: s.name().to_string(),
                mean_quality: mq,
                cost_per_contract: avg(i, &|r| r.cost_per_contract),
                oracle_gain: share(mq, rr_q, or_q),
                oracle_gain_per_seed: per_seed_gain,
                seeds_beating_static: runs
                    .iter()
                    .filter(|r| r[i].mean_quality > r[st].mean_quality)
                    .count(),
                seeds_cost_within_round_robin: runs
                    .iter()
                    .filter(|r| r[i].cost_per_contract <= r[rr].cost_per_contract)
                    .count(),
                curve,
                recovery,
            }
        })
        .collect();
    let report = BenchReport {
        scenario: opts.scenario,
        contracts,
        citizens,
        tags,
        seeds: opts.seeds.clone(),
        change_at,
        results,
    };
    write_report(&report, out)?;
    if let Some(path) = &opts.plot {
        plot(&report, path)
            .map_err(anyhow::Error::msg)
            .with_context(|| format!("cannot write the plot to {}", path.display()))?;
        writeln!(out, "\nplot: {}", path.display())?;
    }
    Ok(report)
}

fn write_report(r: &BenchReport, out: &mut dyn Write) -> std::io::Result<()> {
    let seeds = &r.seeds;
    let n_seeds = seeds.end - seeds.start;
    writeln!(
        out,
        "Routing bench: scenario {}, {} contracts, {} citizens, {} tags, seeds {}..{} ({} worlds)",
        r.scenario, r.contracts, r.citizens, r.tags, seeds.start, seeds.end, n_seeds
    )?;
    if let Some(at) = r.change_at {
        let what = match r.scenario {
            Scenario::Drift => "the weakest citizen gets better",
            _ => "a strong citizen joins",
        };
        writeln!(out, "change at contract {at}: {what}")?;
    }
    writeln!(out)?;
    writeln!(
        out,
        "| strategy       | mean quality | cost/contract | oracle gain | (per seed) | beats static | cost <= rr |"
    )?;
    writeln!(
        out,
        "|----------------|-------------:|--------------:|------------:|-----------:|-------------:|-----------:|"
    )?;
    for s in &r.results {
        writeln!(
            out,
            "| {:<14} | {:>12.3} | {:>13.3} | {:>10.1}% | {:>9.1}% | {:>6}/{:<5} | {:>4}/{:<5} |",
            s.strategy,
            s.mean_quality,
            s.cost_per_contract,
            100.0 * s.oracle_gain,
            100.0 * s.oracle_gain_per_seed,
            s.seeds_beating_static,
            n_seeds,
            s.seeds_cost_within_round_robin,
            n_seeds
        )?;
    }
    if r.change_at.is_some() {
        writeln!(out)?;
        writeln!(
            out,
            "Recovery: contracts after the change until the last {RECOVERY_WINDOW} picks are back at the share of the\n\
             oracle's expected gain the strategy held in the quarter before the change (capped at {:.0}%)",
            100.0 * RECOVERY_SHARE
        )?;
        writeln!(out)?;
        writeln!(
            out,
            "| strategy       | gain before | gain after | recovered | median | mean (recovered seeds) |"
        )?;
        writeln!(
            out,
            "|----------------|------------:|-----------:|----------:|-------:|-----------------------:|"
        )?;
        for s in &r.results {
            let Some(rec) = &s.recovery else { continue };
            if matches!(s.strategy.as_str(), "oracle" | "random" | "round-robin") {
                continue;
            }
            let median = rec.median().map_or("never".to_string(), |m| m.to_string());
            let mean = rec
                .mean_of_recovered()
                .map_or("-".to_string(), |m| format!("{m:.0}"));
            writeln!(
                out,
                "| {:<14} | {:>10.1}% | {:>9.1}% | {:>5}/{:<3} | {:>6} | {:>22} |",
                s.strategy,
                100.0 * rec.before,
                100.0 * rec.after,
                rec.recovered(),
                rec.per_seed.len(),
                median,
                mean
            )?;
        }
    }
    let default = r.get(Strategy::Policy(Policy::default()));
    let rr = r.get(Strategy::RoundRobin);
    writeln!(out)?;
    // Targets are set for the default scenario only.
    let targets = r.scenario == Scenario::Default;
    let target = |t: &'static str| if targets { t } else { "" };
    writeln!(out, "Default policy ({}):", Policy::default())?;
    writeln!(
        out,
        "  oracle gain recovered: {:.1}%, per-seed mean {:.1}%{}",
        100.0 * default.oracle_gain,
        100.0 * default.oracle_gain_per_seed,
        target(" (target 80%)")
    )?;
    writeln!(
        out,
        "  better than static self-ratings in {}/{} seeds{}",
        default.seeds_beating_static,
        n_seeds,
        target(" (target: 15 of 20)")
    )?;
    writeln!(
        out,
        "  cost per contract {:.3} vs round-robin {:.3}{}",
        default.cost_per_contract,
        rr.cost_per_contract,
        target(" (target: not higher)")
    )?;
    if let Some(rec) = &default.recovery {
        writeln!(
            out,
            "  after the change: recovered in {}/{} seeds, median {} contracts",
            rec.recovered(),
            rec.per_seed.len(),
            rec.median().map_or("never".to_string(), |m| m.to_string())
        )?;
    }
    Ok(())
}

/// Colours of the curves, one per strategy in [`Strategy::ALL`] order.
const CURVE_COLOURS: [[u8; 3]; 8] = [
    [150, 150, 150], // random
    [90, 90, 90],    // round-robin
    [230, 159, 0],   // static-self
    [213, 94, 0],    // epsilon-greedy
    [86, 180, 233],  // ucb
    [204, 121, 167], // thompson
    [0, 114, 178],   // posterior
    [0, 158, 115],   // oracle
];

/// Draws the seed-averaged running mean quality of every strategy.
pub fn plot(r: &BenchReport, path: &std::path::Path) -> Result<(), String> {
    let mut title = vec![format!(
        "running mean quality - scenario {} - seeds {}..{}",
        r.scenario, r.seeds.start, r.seeds.end
    )];
    let mut sizes = format!(
        "{} contracts, {} citizens, {} tags",
        r.contracts, r.citizens, r.tags
    );
    if let Some(at) = r.change_at {
        sizes.push_str(&format!(" - change at {at} (dashed)"));
    }
    title.push(sizes);
    let series: Vec<chart::Series> = r
        .results
        .iter()
        .zip(CURVE_COLOURS)
        .map(|(s, colour)| chart::Series {
            label: s.strategy.clone(),
            colour,
            points: s.curve.clone(),
            thick: s.strategy == Policy::default().name(),
        })
        .collect();
    chart::line_chart(path, &title, &series, r.change_at)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeds_parse_exclusive_inclusive_and_single() {
        assert_eq!(parse_seeds("0..20").unwrap(), 0..20);
        assert_eq!(parse_seeds("0..=19").unwrap(), 0..20);
        assert_eq!(parse_seeds("7").unwrap(), 7..8);
        assert!(parse_seeds("5..5").is_err());
        assert!(parse_seeds("a..b").is_err());
    }

    #[test]
    fn quality_rounds_half_to_even_and_clamps() {
        let mut w = World::generate(Scenario::Default, 1, 1, 1, 0);
        w.citizens[0].skill[0] = 0.5;
        w.contracts[0].noise = 0.5; // 4·0.5 + 1 + 0.5 = 3.5 → 4 (even)
        assert_eq!(w.quality(0, 0), 4.0);
        w.contracts[0].noise = -0.5; // 2.5 → 2
        assert_eq!(w.quality(0, 0), 2.0);
        w.contracts[0].noise = 9.0;
        assert_eq!(w.quality(0, 0), 5.0);
        w.contracts[0].noise = -9.0;
        assert_eq!(w.quality(0, 0), 1.0);
    }
}
