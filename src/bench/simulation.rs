//! The routing bench: a simulated polis where every citizen has a hidden skill per tag, and
//! routing strategies (the baselines, every [`Policy`], and an all-knowing oracle) compete on
//! the same stream of contracts.
//!
//! The world is built the way the reference's `polis bench` builds it; the
//! learning strategies are scored by the production scoring (SPEC §7) against statistics
//! updated exactly as reconcile does, and only ever see settled quality, never skill. Nothing
//! here touches a polis; the only file written is the optional plot.

use crate::protocol::contracts::contract::Contract;
use crate::protocol::routing::policy::{History, Outcome, Policy, PolicyInput, PosteriorParams};
use crate::protocol::routing::score::{self, Candidate};
use crate::protocol::routing::stats::{self, RoutingStats, Settlement};
use crate::protocol::settings::{Weights, DEFAULT_LESSON_CAP};
use crate::yaml::Value;
use anyhow::Context;
use serde::Serialize;
use std::collections::HashMap;
use std::io::Write;
use std::ops::Range;
use std::path::PathBuf;

use super::chart;
use super::linucb::{self, LinUcb};
use super::world;

/// Width of the window (in contracts) used to measure recovery after a mid-run change.
pub const RECOVERY_WINDOW: usize = 50;
/// Share of the oracle's gain a window must recover to count as recovered.
pub const RECOVERY_SHARE: f64 = 0.8;
pub use super::world::{Drift, Scenario, SimCitizen, SimContract, SimRng, World};

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
    /// Cost-aware contextual LinUCB, the published routers' baseline ([`linucb`]).
    LinUcb,
    Policy(Policy),
    /// Picks by the hidden skill: the ceiling, not a real strategy.
    Oracle,
}

impl Strategy {
    pub const ALL: [Strategy; 9] = [
        Strategy::Random,
        Strategy::RoundRobin,
        Strategy::StaticSelf,
        Strategy::LinUcb,
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
            Strategy::LinUcb => "linucb",
            Strategy::Policy(p) => p.name(),
            Strategy::Oracle => "oracle",
        }
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
        // Outside `teams` every contract has the default cost ceiling (medium), as the
        // reference's do.
        let contracts = world
            .contracts
            .iter()
            .map(|c| Contract {
                required_tags: c.tags.iter().map(|&t| world.tags[t].clone()).collect(),
                cost_ceiling_raw: Some(Value::Str(world::COST_NAMES[c.ceiling].to_string())),
                stakes: c.high_stakes.then(|| "high".to_string()),
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
    ) -> (usize, bool) {
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
            // The reference bench widens epsilon-greedy's rate where leaders are unsure; the
            // other policies run with the seed's rate as polis.yml states it.
            explore_rate: if policy == Policy::EpsilonGreedy {
                score::adaptive_explore_rate(
                    stats::DEFAULT_EXPLORE_RATE,
                    &contract.required_tags,
                    &st,
                )
            } else {
                stats::DEFAULT_EXPLORE_RATE
            },
            cards: &self.candidates,
        };
        let pick = policy.pick_with(&input, params, rng);
        let id = pick.citizen.expect("the bench always has candidates");
        let chosen = *present
            .iter()
            .find(|&&c| world.citizens[c].id == id)
            .expect("the pick is a candidate");
        (chosen, pick.exploration)
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
    /// Share of the picks a policy reported as exploration.
    explore_share: f64,
}

/// The cost term LinUCB adds to its bound: the production score's, with the default weights.
fn cost_term(world: &World, c: usize, k: usize) -> f64 {
    Weights::default().cost
        * score::cost_fit(
            Some(world::COST_NAMES[world.contracts[k].ceiling]),
            Some(world.citizens[c].cost_envelope()),
        )
}

fn run_strategy(world: &World, strategy: Strategy, seed: u64, params: &PosteriorParams) -> Run {
    let mut rng = SimRng::new(seed, 100);
    let mut learner = matches!(strategy, Strategy::Policy(_)).then(|| Learner::new(world));
    let n_tags = world.tags.len();
    let mut lin = (strategy == Strategy::LinUcb)
        .then(|| LinUcb::new(world.citizens.len(), LinUcb::dim(n_tags), linucb::ALPHA));
    // Quality against cost as the production score weighs them, for LinUCB as for the
    // policies.
    let quality_weight = Weights::default().history + Weights::default().self_rating;
    let mut rr = 0usize;
    let n = world.contracts.len();
    let (mut total_q, mut total_cost, mut explored) = (0.0, 0.0, 0usize);
    let mut curve = Vec::with_capacity(n);
    let mut expected = Vec::with_capacity(n);
    let self_rating = |c: usize, tags: &[usize]| {
        tags.iter()
            .map(|&t| f64::from(world.citizens[c].self_rating[t]))
            .sum::<f64>()
            / tags.len() as f64
    };
    for k in 0..n {
        let present = world.present(k);
        let contract = &world.contracts[k];
        let tags = &contract.tags;
        let context = |c: usize| {
            LinUcb::context(
                n_tags,
                tags,
                self_rating(c, tags),
                contract.high_stakes,
                contract.ceiling,
            )
        };
        let chosen = match (strategy, &learner, &lin) {
            (Strategy::Random, ..) => present[rng.below(present.len())],
            (Strategy::RoundRobin, ..) => {
                rr += 1;
                present[(rr - 1) % present.len()]
            }
            (Strategy::StaticSelf, ..) => first_max(&present, |c| self_rating(c, tags)),
            (Strategy::Oracle, ..) => first_max(&present, |c| world.mean_skill(c, k)),
            (Strategy::LinUcb, _, Some(m)) => first_max(&present, |c| {
                quality_weight * m.upper_bound(c, &context(c)) + cost_term(world, c, k)
            }),
            (Strategy::Policy(policy), Some(l), _) => {
                let (c, exploring) = l.pick(world, policy, k, &present, params, &mut rng);
                explored += usize::from(exploring);
                c
            }
            _ => unreachable!("a learning strategy has its learner"),
        };
        let q = world.quality(chosen, k);
        total_q += q;
        total_cost += world.cost_units[world.citizens[chosen].cost];
        if let Some(l) = &mut learner {
            l.record(world, chosen, k, q);
        }
        if let Some(m) = &mut lin {
            m.update(chosen, &context(chosen), q / 5.0);
        }
        curve.push(total_q / (k + 1) as f64);
        expected.push(world.expected_quality(chosen, k));
    }
    Run {
        mean_quality: total_q / n as f64,
        cost_per_contract: total_cost / n as f64,
        curve,
        expected,
        explore_share: explored as f64 / n as f64,
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
    /// Per seed: contracts after the change until the strategy's picks are back, that is until
    /// the first [`RECOVERY_WINDOW`] picks that hold the share of the oracle's expected gain
    /// (over an average citizen) the strategy held in the quarter of the run before the
    /// change, or [`RECOVERY_SHARE`] if that was higher; `None` when that never happens before
    /// the run ends. Counted to the window's start: counted to its end, a recovery could never
    /// take fewer than [`RECOVERY_WINDOW`] contracts.
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

    /// The 95 % interval of the share of seeds that recover (Wilson's score interval, which
    /// stays inside 0–1 and is not empty at 0 or all of the seeds), as (low, high).
    pub fn recovered_interval(&self) -> (f64, f64) {
        let n = self.per_seed.len() as f64;
        if n == 0.0 {
            return (0.0, 1.0);
        }
        let p = self.recovered() as f64 / n;
        let z2 = 1.96_f64 * 1.96;
        let centre = (p + z2 / (2.0 * n)) / (1.0 + z2 / n);
        let half = (z2 * (p * (1.0 - p) / n + z2 / (4.0 * n * n))).sqrt() / (1.0 + z2 / n);
        ((centre - half).max(0.0), (centre + half).min(1.0))
    }

    /// "29/40 seeds (95% interval 57–84%), median 20 contracts".
    fn summary(&self) -> String {
        let (lo, hi) = self.recovered_interval();
        format!(
            "{}/{} seeds (95% interval {:.0}–{:.0}%), median {}",
            self.recovered(),
            self.per_seed.len(),
            100.0 * lo,
            100.0 * hi,
            self.median()
                .map_or("never".to_string(), |m| format!("{m} contracts"))
        )
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
    /// Half the width of the 95 % interval of `oracle_gain_per_seed` over the seeds
    /// (Student's t).
    pub oracle_gain_interval: f64,
    /// Share of the picks a policy reported as exploration (0 for the others).
    pub explore_share: f64,
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

/// The mean of `xs` and half the width of its 95 % interval (Student's t; 0 for one value).
pub fn mean_interval(xs: &[f64]) -> (f64, f64) {
    let n = xs.len();
    let mean = xs.iter().sum::<f64>() / n as f64;
    if n < 2 {
        return (mean, 0.0);
    }
    let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
    // t(0.975) for 1..=30 degrees of freedom; beyond, the normal's 1.96 is within 2 %.
    const T: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042,
    ];
    let t = T.get(n - 2).copied().unwrap_or(1.96);
    (mean, t * (var / n as f64).sqrt())
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
        .map(|start| start - at);
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
            let gains: Vec<f64> = runs
                .iter()
                .map(|r| share(r[i].mean_quality, r[rr].mean_quality, r[or].mean_quality))
                .collect();
            let (per_seed_gain, gain_interval) = mean_interval(&gains);
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
                oracle_gain_interval: gain_interval,
                explore_share: avg(i, &|r| r.explore_share),
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
        "Routing bench: world {}, {} contracts, {} citizens, {} tags, seeds {}..{} ({} worlds)",
        r.scenario, r.contracts, r.citizens, r.tags, seeds.start, seeds.end, n_seeds
    )?;
    if let (Some(at), Some(what)) = (r.change_at, r.scenario.change()) {
        writeln!(out, "change at contract {at}: {what}")?;
    } else if let Some(what) = r.scenario.change() {
        writeln!(out, "during the run: {what}")?;
    }
    writeln!(out)?;
    writeln!(
        out,
        "| strategy       | mean quality | cost/contract | oracle gain (95% interval) | beats static | explores |"
    )?;
    writeln!(
        out,
        "|----------------|-------------:|--------------:|---------------------------:|-------------:|---------:|"
    )?;
    for s in &r.results {
        writeln!(
            out,
            "| {:<14} | {:>12.3} | {:>13.3} | {:>17.1}% ± {:>4.1} | {:>6}/{:<5} | {:>7.1}% |",
            s.strategy,
            s.mean_quality,
            s.cost_per_contract,
            100.0 * s.oracle_gain_per_seed,
            100.0 * s.oracle_gain_interval,
            s.seeds_beating_static,
            n_seeds,
            100.0 * s.explore_share,
        )?;
    }
    if r.change_at.is_some() {
        writeln!(out)?;
        writeln!(
            out,
            "Recovery: contracts after the change until the next {RECOVERY_WINDOW} picks are back at the share of the\n\
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
    writeln!(out, "Default policy ({}):", Policy::default())?;
    writeln!(
        out,
        "  oracle gain recovered: {:.1}% ± {:.1} (per seed), {:.1}% on the seed means",
        100.0 * default.oracle_gain_per_seed,
        100.0 * default.oracle_gain_interval,
        100.0 * default.oracle_gain,
    )?;
    writeln!(
        out,
        "  better than static self-ratings in {}/{} seeds; cost per contract {:.3} vs round-robin {:.3}",
        default.seeds_beating_static, n_seeds, default.cost_per_contract, rr.cost_per_contract,
    )?;
    if let Some(rec) = &default.recovery {
        writeln!(out, "  after the change: recovered in {}", rec.summary())?;
    }
    Ok(())
}

/// Runs the bench on every world with the same options (sizes left to each world), prints
/// each world's report and then one table of every strategy's oracle-gain share on every
/// world. This is what `polisd bench routing` does without `--scenario`.
pub fn run_all_worlds(
    opts: &BenchOptions,
    out: &mut dyn Write,
) -> anyhow::Result<Vec<BenchReport>> {
    let mut reports = Vec::new();
    for scenario in Scenario::ALL {
        let world_opts = BenchOptions {
            scenario,
            plot: opts.plot.as_deref().map(|p| world_plot(p, scenario)),
            ..opts.clone()
        };
        reports.push(run_bench(&world_opts, out)?);
        writeln!(out)?;
    }
    write_summary(&reports, out)?;
    Ok(reports)
}

/// Where `run_all_worlds` draws a world's curves when asked for `path`: the default world at
/// `path` itself, every other beside it with the world's name added (`curves-drift.png`).
fn world_plot(path: &std::path::Path, scenario: Scenario) -> PathBuf {
    if scenario == Scenario::Default {
        return path.to_path_buf();
    }
    let stem = path.file_stem().unwrap_or_default().to_string_lossy();
    let name = match path.extension() {
        Some(ext) => format!("{stem}-{scenario}.{}", ext.to_string_lossy()),
        None => format!("{stem}-{scenario}"),
    };
    path.with_file_name(name)
}

/// One row per strategy, one column per world: oracle-gain share ± its 95 % interval.
pub fn write_summary(reports: &[BenchReport], out: &mut dyn Write) -> std::io::Result<()> {
    let Some(first) = reports.first() else {
        return Ok(());
    };
    writeln!(
        out,
        "Oracle-gain share by world (mean over seeds {}..{} ± 95% interval):",
        first.seeds.start, first.seeds.end
    )?;
    writeln!(out)?;
    let mut header = "| strategy       |".to_string();
    let mut rule = "|----------------|".to_string();
    for r in reports {
        header.push_str(&format!(" {:>14} |", r.scenario.name()));
        rule.push_str("---------------:|");
    }
    writeln!(out, "{header}")?;
    writeln!(out, "{rule}")?;
    for s in Strategy::ALL {
        let mut row = format!("| {:<14} |", s.name());
        for r in reports {
            let x = r.get(s);
            row.push_str(&format!(
                " {:>7.1}% ± {:>4.1} |",
                100.0 * x.oracle_gain_per_seed,
                100.0 * x.oracle_gain_interval
            ));
        }
        writeln!(out, "{row}")?;
    }
    let default = Strategy::Policy(Policy::default());
    for r in reports {
        if let Some(rec) = &r.get(default).recovery {
            writeln!(
                out,
                "{}: {} recovered in {}",
                r.scenario,
                default.name(),
                rec.summary()
            )?;
        }
    }
    Ok(())
}

/// Colours of the curves, one per strategy in [`Strategy::ALL`] order.
const CURVE_COLOURS: [[u8; 3]; 9] = [
    [150, 150, 150], // random
    [90, 90, 90],    // round-robin
    [230, 159, 0],   // static-self
    [120, 80, 40],   // linucb
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

    fn recovery(recovered: usize, seeds: usize) -> Recovery {
        Recovery {
            per_seed: (0..seeds).map(|i| (i < recovered).then_some(i)).collect(),
            before: 0.9,
            after: 0.8,
        }
    }

    #[test]
    fn the_recovery_count_carries_its_interval() {
        let close = |(lo, hi): (f64, f64), want: (f64, f64)| {
            assert!(
                (lo - want.0).abs() < 1e-3 && (hi - want.1).abs() < 1e-3,
                "{lo} {hi}"
            );
        };
        close(recovery(19, 20).recovered_interval(), (0.764, 0.991));
        close(recovery(29, 40).recovered_interval(), (0.572, 0.839));
        // At either end the interval is not empty and stays inside 0–1.
        close(recovery(0, 10).recovered_interval(), (0.0, 0.278));
        close(recovery(20, 20).recovered_interval(), (0.839, 1.0));
        assert_eq!(
            recovery(29, 40).summary(),
            "29/40 seeds (95% interval 57–84%), median 20 contracts"
        );
        assert_eq!(
            recovery(10, 40).summary(),
            "10/40 seeds (95% interval 14–40%), median never"
        );
    }
}
