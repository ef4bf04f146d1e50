//! The routing bench's worlds: citizens with a hidden skill per tag, the contract stream, and
//! what changes during a run. `default`, `drift`, `newcomer` and `large` are built the way the
//! reference's `polis bench` builds its world; `teams` and `churn` look more like real teams
//! (vendors, price tiers, several tags, people who come and go).

use crate::protocol::routing::policy;
use rand::RngCore;
use serde::Serialize;
use std::fmt;
use std::ops::Range;
use std::str::FromStr;

/// Cost units of the envelopes `low`, `medium`, `high` (the reference bench's).
pub const COST_UNITS: [f64; 3] = [1.0, 2.0, 4.0];
/// Cost units of the `teams` world's tiers, in the ratio of real model prices (a small, a
/// mid-size and a frontier model: about 1 : 4 : 19 per token).
pub const TEAM_COST_UNITS: [f64; 3] = [1.0, 4.0, 19.0];
pub const COST_NAMES: [&str; 3] = ["low", "medium", "high"];

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
    /// 9 citizens from 3 vendors, one per price tier: a vendor's citizens share its strengths
    /// by tag, a dearer tier is a little better; contracts carry 1–3 tags and a cost ceiling.
    Teams,
    /// 8 citizens, 6 tags, 1,000 contracts; citizens join late, one leaves for good, two go
    /// away for a stretch and come back.
    Churn,
}

impl Scenario {
    pub const ALL: [Scenario; 6] = [
        Scenario::Default,
        Scenario::Drift,
        Scenario::Newcomer,
        Scenario::Large,
        Scenario::Teams,
        Scenario::Churn,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Scenario::Default => "default",
            Scenario::Drift => "drift",
            Scenario::Newcomer => "newcomer",
            Scenario::Large => "large",
            Scenario::Teams => "teams",
            Scenario::Churn => "churn",
        }
    }

    /// (contracts, citizens, tags) when the options do not say.
    pub fn sizes(self) -> (usize, usize, usize) {
        match self {
            Scenario::Large => (2000, 12, 20),
            Scenario::Teams => (1000, 9, 8),
            Scenario::Churn => (1000, 8, 6),
            _ => (500, 4, 5),
        }
    }

    /// What changes during a run, in a few words (for the report).
    pub fn change(self) -> Option<&'static str> {
        match self {
            Scenario::Drift => Some("the weakest citizen gets better"),
            Scenario::Newcomer => Some("a strong citizen joins"),
            Scenario::Churn => Some("citizens join, leave, go away and come back"),
            _ => None,
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
                    "unknown scenario `{s}`; expected all, default, drift, newcomer, large, teams or churn"
                )
            })
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

    pub fn unit(&mut self) -> f64 {
        policy::unit_f64(self)
    }

    pub fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.unit()
    }

    /// A uniform index below `n` (n > 0).
    pub fn below(&mut self, n: usize) -> usize {
        ((self.unit() * n as f64) as usize).min(n - 1)
    }

    pub fn gauss(&mut self, sd: f64) -> f64 {
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
    /// The contract index from which it is gone for good, if it leaves.
    pub leaves_at: Option<usize>,
    /// Contracts during which it is away (its card says so), if any.
    pub away: Option<Range<usize>>,
}

impl SimCitizen {
    pub fn cost_envelope(&self) -> &'static str {
        COST_NAMES[self.cost]
    }

    /// Whether it is in the polis (joined, not left) at contract `k`.
    pub fn member_at(&self, k: usize) -> bool {
        self.joins_at <= k && self.leaves_at.is_none_or(|l| k < l)
    }

    /// Whether it is in the polis and not away at contract `k`.
    pub fn available_at(&self, k: usize) -> bool {
        self.member_at(k) && self.away.as_ref().is_none_or(|a| !a.contains(&k))
    }
}

/// One simulated contract.
#[derive(Debug, Clone, PartialEq)]
pub struct SimContract {
    /// One to three distinct tag indexes.
    pub tags: Vec<usize>,
    /// The settlement noise, N(0, 0.6): drawn once per contract so every strategy faces the
    /// same luck and differences come from the picks alone.
    pub noise: f64,
    /// Index into low/medium/high (medium, the default ceiling, outside `teams`).
    pub ceiling: usize,
    /// Whether the contract is high-stakes (`teams` only; quality does not depend on it, so a
    /// contextual router must learn to ignore it).
    pub high_stakes: bool,
}

/// A mid-run change of one citizen's skills.
#[derive(Debug, Clone, PartialEq)]
pub struct Drift {
    pub at: usize,
    pub citizen: usize,
    pub skill: Vec<f64>,
}

/// A bench world: citizens, the contract stream, and what changes during the run.
#[derive(Debug, Clone, PartialEq)]
pub struct World {
    pub tags: Vec<String>,
    pub citizens: Vec<SimCitizen>,
    pub contracts: Vec<SimContract>,
    pub drift: Option<Drift>,
    /// The contract index where the scenario changes (drift or newcomer), if it does.
    pub change_at: Option<usize>,
    /// Cost units of low/medium/high in this world.
    pub cost_units: [f64; 3],
}

/// The self-rating a citizen of this skill writes on its card: overconfident and compressed.
fn self_rating(skill: f64, rng: &mut SimRng) -> u8 {
    let raw = (3.2 + 1.6 * skill + rng.uniform(-0.5, 0.5)).round_ties_even();
    raw.clamp(1.0, 5.0) as u8
}

fn citizen(i: usize, skill: Vec<f64>, cost: usize, rng: &mut SimRng) -> SimCitizen {
    let self_rating = skill.iter().map(|&s| self_rating(s, rng)).collect();
    SimCitizen {
        id: format!("agent-{i:02}"),
        skill,
        self_rating,
        cost,
        joins_at: 0,
        leaves_at: None,
        away: None,
    }
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
        leaves_at: None,
        away: None,
    }
}

/// `k` distinct tags out of `n_tags`.
fn distinct_tags(k: usize, n_tags: usize, seq: &mut SimRng) -> Vec<usize> {
    let mut pool: Vec<usize> = (0..n_tags).collect();
    let mut picked = Vec::with_capacity(k);
    for j in 0..k.min(n_tags) {
        let r = j + seq.below(n_tags - j);
        pool.swap(j, r);
        picked.push(pool[j]);
    }
    picked
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
        let mut citizens: Vec<SimCitizen> = if scenario == Scenario::Teams {
            team_citizens(n_citizens, n_tags, &mut rng)
        } else {
            (0..n_citizens)
                .map(|i| make_citizen(i, n_tags, 0.2, 0, &mut rng))
                .collect()
        };
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
            Scenario::Churn => churn(&mut citizens, n_contracts, &mut rng),
            _ => {}
        }
        let mut seq = SimRng::new(seed, 1);
        let contracts = (0..n_contracts)
            .map(|_| {
                if scenario == Scenario::Teams {
                    // Half the contracts need one tag, a third two, the rest three.
                    let u = seq.unit();
                    let k = if u < 0.5 {
                        1
                    } else if u < 0.83 {
                        2
                    } else {
                        3
                    };
                    let tags = distinct_tags(k, n_tags, &mut seq);
                    let noise = seq.gauss(0.6);
                    let u = seq.unit();
                    let ceiling = if u < 0.3 {
                        0
                    } else if u < 0.8 {
                        1
                    } else {
                        2
                    };
                    let high_stakes = seq.unit() < 0.2;
                    return SimContract {
                        tags,
                        noise,
                        ceiling,
                        high_stakes,
                    };
                }
                let k = if n_tags >= 2 && seq.unit() < 0.5 {
                    2
                } else {
                    1
                };
                SimContract {
                    tags: distinct_tags(k, n_tags, &mut seq),
                    noise: seq.gauss(0.6),
                    ceiling: 1,
                    high_stakes: false,
                }
            })
            .collect();
        World {
            tags,
            citizens,
            contracts,
            drift,
            change_at,
            cost_units: if scenario == Scenario::Teams {
                TEAM_COST_UNITS
            } else {
                COST_UNITS
            },
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

    /// The citizens who can take contract `k`: members who are not away (every member when
    /// all are away, as the router then still picks).
    pub fn present(&self, k: usize) -> Vec<usize> {
        let here: Vec<usize> = (0..self.citizens.len())
            .filter(|&c| self.citizens[c].available_at(k))
            .collect();
        if !here.is_empty() {
            return here;
        }
        (0..self.citizens.len())
            .filter(|&c| self.citizens[c].member_at(k))
            .collect()
    }
}

/// `teams`: three vendors, each with one citizen per price tier. A vendor's strength on a tag
/// is shared by its citizens (models of one family are good at the same things); a dearer tier
/// adds a little; each citizen varies a little around that.
fn team_citizens(n_citizens: usize, n_tags: usize, rng: &mut SimRng) -> Vec<SimCitizen> {
    const VENDORS: usize = 3;
    const TIER_BONUS: [f64; 3] = [0.0, 0.1, 0.2];
    let strengths: Vec<Vec<f64>> = (0..VENDORS)
        .map(|_| (0..n_tags).map(|_| rng.uniform(0.2, 0.8)).collect())
        .collect();
    (0..n_citizens)
        .map(|i| {
            let (vendor, tier) = (i % VENDORS, (i / VENDORS) % 3);
            let skill = strengths[vendor]
                .iter()
                .map(|&s| (s + TIER_BONUS[tier] + rng.gauss(0.05)).clamp(0.2, 0.999))
                .collect();
            citizen(i, skill, tier, rng)
        })
        .collect()
}

/// `churn`: the last two citizens join at a quarter and at half of the run (the second one
/// strong), the first founder leaves for good somewhere in the second half, and two other
/// founders go away for 10–20 % of the run each and come back.
fn churn(citizens: &mut [SimCitizen], n: usize, rng: &mut SimRng) {
    let len = citizens.len();
    if len < 5 {
        return;
    }
    citizens[len - 2].joins_at = n / 4;
    citizens[len - 1].joins_at = n / 2;
    for s in &mut citizens[len - 1].skill {
        *s = 0.6 + 0.4 * (*s - 0.2) / 0.8;
    }
    citizens[0].leaves_at = Some(n / 2 + rng.below(n / 4 + 1));
    for c in [1, 2] {
        let start = n / 5 + rng.below(n / 2 + 1);
        let length = n / 10 + rng.below(n / 10 + 1);
        citizens[c].away = Some(start..(start + length).min(n));
    }
}
