//! What a citizen's record says about the quality it will deliver on one contract: the
//! posterior that [`Policy::Posterior`](super::policy::Policy::Posterior) ranks by.
//!
//! One estimate over every tag the citizen has settled work on. Each tag starts at the
//! citizen's own self-rating for it (the card's, else the router's S), held as loosely as
//! [`PosteriorParams::prior_weight`] settlements. A settlement observes the mean of its tags, so
//! a two-tag settlement teaches about both jointly, and what the citizen did on the other tag
//! alone tells how much of the quality to credit to this one. Older settlements count as
//! noisier ([`PosteriorParams::drift`]), so recent work outweighs old.
//!
//! A citizen can also change at once: a new model behind the card, a new person. So the
//! estimate is a mixture over when that happened, if it did:
//! - never: the whole record, as above;
//! - at one of its latest [`PosteriorParams::change_window`] settlements: the work from there
//!   on alone, from a looser prior ([`PosteriorParams::changed_prior_weight`]), since the card
//!   may not have caught up. A priori each such settlement is a change with odds
//!   [`PosteriorParams::change_odds`]; the record then weighs each split by how much better
//!   the work before and after it fits two separate estimates than one;
//! - since its last settlement, unseen: the loose prior alone, with odds that grow with every
//!   contract the polis settled without it ([`PosteriorParams::unseen_change_odds`]). This is
//!   what sends a citizen the polis stopped picking back to work now and then.
//!
//! Every part is Gaussian and solved in information form (the normal equations, held as a
//! Cholesky factor). The two sides of the splits grow one settlement at a time by rank-one
//! updates of that factor, so a candidate costs one factoring plus, per split, a few d² steps
//! for d tags: every one of the latest settlements is weighed, however many tags the citizen
//! works on.

use crate::protocol::routing::history::History;
use crate::protocol::routing::score::{Candidate, Score};
use std::borrow::Cow;

/// Tuning of [`Policy::Posterior`](super::policy::Policy::Posterior). The defaults are the
/// values the routing bench was run with (docs/performance.md, routing); they are in quality
/// points (1–5).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PosteriorParams {
    /// How many settlements the self-rating is worth as a prior.
    pub prior_weight: f64,
    /// Spread of one settlement's quality around the citizen's expected quality.
    pub noise: f64,
    /// How fast old work loses weight: a settlement `age` settlements ago (anywhere in the
    /// polis) counts as if its noise variance were `noise² + drift²·age`.
    pub drift: f64,
    /// Multiplies the posterior spread when sampling on an exploration turn.
    pub sample_scale: f64,
    /// Spreads added to the mean on exploit turns (optimism under uncertainty), so a citizen
    /// the polis knows little about is preferred over an equal-looking one it knows well.
    pub optimism: f64,
    /// Width, in spreads, of the interval that makes a leader clear (1.96: 95 %).
    pub leader_z: f64,
    /// Prior odds that a citizen changed (a new model, a new person behind the card) at any
    /// one of its latest settlements.
    pub change_odds: f64,
    /// How many of a citizen's latest settlements may be where it changed.
    pub change_window: usize,
    /// Prior odds, per contract the polis settled since a citizen's last settlement, that it
    /// changed unseen.
    pub unseen_change_odds: f64,
    /// How many settlements the self-rating is worth as a prior after a change: less than
    /// before, since the card may not have caught up.
    pub changed_prior_weight: f64,
}

impl PosteriorParams {
    /// The defaults, as a constant.
    pub const DEFAULT: PosteriorParams = PosteriorParams {
        prior_weight: 1.0,
        noise: 0.7,
        drift: 0.015,
        sample_scale: 0.3,
        optimism: 0.5,
        leader_z: 1.96,
        change_odds: 0.005,
        change_window: 30,
        unseen_change_odds: 0.0015,
        changed_prior_weight: 0.3,
    };
}

impl Default for PosteriorParams {
    fn default() -> Self {
        PosteriorParams::DEFAULT
    }
}

/// The posterior of one citizen's expected quality (1–5) on the contract.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Estimate {
    pub mean: f64,
    /// The spread (standard deviation) of the mean.
    pub spread: f64,
    /// Settlements seen on the contract's tags.
    pub evidence: f64,
    /// How likely it is that the citizen changed at one of its latest settlements.
    pub changed: f64,
    /// How likely it is that it changed unseen, since its last settlement.
    pub unseen: f64,
    /// Contracts the polis settled since the citizen's last settlement; None if it has none.
    pub idle: Option<usize>,
}

/// One settlement as a row of the normal equations.
struct Row {
    /// The local columns of its tags; each carries 1/len of the quality.
    columns: Vec<usize>,
    noise_var: f64,
    quality: f64,
}

impl Row {
    /// What each of its columns carries: 1/len.
    fn share(&self) -> f64 {
        1.0 / self.columns.len().max(1) as f64
    }
}

/// The normal equations' sums besides the information matrix. Additive.
struct Sums {
    eta: Vec<f64>,
    /// Σ y²/σ² (for the prior, Σ m²/σ²).
    squares: f64,
    /// Σ ln σ².
    log_vars: f64,
}

impl Sums {
    fn empty(d: usize) -> Sums {
        Sums {
            eta: vec![0.0; d],
            squares: 0.0,
            log_vars: 0.0,
        }
    }

    fn add(&mut self, row: &Row) {
        let v = row.noise_var;
        for &a in &row.columns {
            self.eta[a] += row.share() * row.quality / v;
        }
        self.squares += row.quality * row.quality / v;
        self.log_vars += v.ln();
    }
}

/// What a prior or some settlements add to the normal equations. Additive, so the work
/// before a citizen's latest settlements is summed once.
struct Terms {
    /// The information matrix, d×d row major.
    info: Vec<f64>,
    sums: Sums,
}

impl Terms {
    fn empty(d: usize) -> Terms {
        Terms {
            info: vec![0.0; d * d],
            sums: Sums::empty(d),
        }
    }

    /// Independent Gaussian priors, one (mean, variance) a column.
    fn prior(columns: impl ExactSizeIterator<Item = (f64, f64)>) -> Terms {
        let d = columns.len();
        let mut prior = Terms::empty(d);
        for (j, (m, v)) in columns.enumerate() {
            prior.info[j * d + j] = 1.0 / v;
            prior.sums.eta[j] = m / v;
            prior.sums.squares += m * m / v;
            prior.sums.log_vars += v.ln();
        }
        prior
    }

    fn add(&mut self, d: usize, row: &Row) {
        let weight = row.share() * row.share() / row.noise_var;
        for &a in &row.columns {
            for &b in &row.columns {
                self.info[a * d + b] += weight;
            }
        }
        self.sums.add(row);
    }
}

/// One part of the mixture: the contract's mean and its variance, and the log evidence of the
/// settlements it was fitted to (up to a constant every part shares).
#[derive(Debug, Clone, Copy)]
struct Fit {
    mean: f64,
    var: f64,
    log_evidence: f64,
}

/// The prior over the citizen's local tags and the contract's weights on them.
struct Model {
    d: usize,
    prior: Terms,
    /// 1/k on each of the contract's k tags, 0 elsewhere.
    weights: Vec<f64>,
}

/// The normal equations of a prior and some settlements, held as the Cholesky factor of their
/// information matrix, so that a settlement is added by a rank-one update (d² work) instead
/// of factoring again (d³): the two sides of every split grow one settlement at a time.
struct Factor {
    d: usize,
    /// Lower triangle of L with L·Lᵀ = information, d×d row major.
    lower: Vec<f64>,
    /// Over the prior and the settlements.
    sums: Sums,
    /// Scratch for [`Factor::add`].
    spare: Vec<f64>,
}

impl Factor {
    /// The prior (its variances multiplied by `looseness`) plus `data`, factored once.
    fn new(model: &Model, data: &Terms, looseness: f64) -> Factor {
        let d = model.d;
        let mut lower: Vec<f64> = model
            .prior
            .info
            .iter()
            .zip(&data.info)
            .map(|(p, x)| p / looseness + x)
            .collect();
        cholesky(&mut lower, d);
        let (prior, data) = (&model.prior.sums, &data.sums);
        Factor {
            d,
            lower,
            sums: Sums {
                eta: prior
                    .eta
                    .iter()
                    .zip(&data.eta)
                    .map(|(p, x)| p / looseness + x)
                    .collect(),
                squares: prior.squares / looseness + data.squares,
                log_vars: prior.log_vars + d as f64 * looseness.ln() + data.log_vars,
            },
            spare: vec![0.0; d],
        }
    }

    /// Adds one settlement: its row adds u·uᵀ to the information, u = (1/len)/σ on its
    /// columns.
    fn add(&mut self, row: &Row) {
        let d = self.d;
        self.sums.add(row);
        let u = &mut self.spare;
        u.iter_mut().for_each(|x| *x = 0.0);
        for &a in &row.columns {
            u[a] += row.share() / row.noise_var.sqrt();
        }
        let Some(first) = u.iter().position(|&x| x != 0.0) else {
            return;
        };
        let l = &mut self.lower;
        for k in first..d {
            if u[k] == 0.0 {
                continue;
            }
            let diag = l[k * d + k];
            let r = diag.hypot(u[k]);
            let (c, s) = (r / diag, u[k] / diag);
            l[k * d + k] = r;
            for i in k + 1..d {
                l[i * d + k] = (l[i * d + k] + s * u[i]) / c;
                u[i] = c * u[i] - s * l[i * d + k];
            }
        }
    }

    /// Solves L·y = b.
    fn forward(&self, b: &[f64]) -> Vec<f64> {
        let (d, l) = (self.d, &self.lower);
        let mut y = b.to_vec();
        for i in 0..d {
            for k in 0..i {
                y[i] -= l[i * d + k] * y[k];
            }
            y[i] /= l[i * d + i];
        }
        y
    }

    /// The contract's mean and variance, and the log evidence of the settlements (up to a
    /// constant every fit shares). With y = L⁻¹η and z = L⁻¹w: the mean wᵀ(LLᵀ)⁻¹η is z·y,
    /// the variance z·z, and ηᵀ(LLᵀ)⁻¹η is y·y.
    fn fit(&self, model: &Model) -> Fit {
        let y = self.forward(&self.sums.eta);
        let z = self.forward(&model.weights);
        let dot = |a: &[f64], b: &[f64]| a.iter().zip(b).map(|(x, y)| x * y).sum::<f64>();
        let log_det_info: f64 = (0..self.d)
            .map(|j| 2.0 * self.lower[j * self.d + j].ln())
            .sum();
        Fit {
            mean: dot(&z, &y),
            var: dot(&z, &z).max(0.0),
            log_evidence: -0.5
                * (self.sums.squares - dot(&y, &y) + self.sums.log_vars + log_det_info),
        }
    }
}

/// Most tags (the contract's and those its citizen settled work on) the joint model is built
/// over; real polises use a few dozen.
pub const MAX_TAGS: usize = 512;

/// The estimate of `s`'s citizen on a contract with these `tags` (duplicates removed), from
/// the polis's `history` and the citizens' `cards` (which may be empty).
pub(super) fn estimate(
    tags: &[String],
    history: &History,
    cards: &[Candidate],
    params: &PosteriorParams,
    s: &Score,
) -> Estimate {
    // The router's S is the mean self-rating over the contract's tags, /5 (missing = 0).
    let fallback = 5.0 * s.self_rating;
    let card = cards.iter().find(|c| c.id == s.citizen);
    let prior_mean = |tag: &str| match card {
        Some(c) => c.self_ratings.get(tag).copied().unwrap_or(0.0),
        None => fallback,
    };
    let prior_var = params.noise * params.noise / params.prior_weight;
    let prior_only = Estimate {
        mean: fallback,
        spread: prior_var.sqrt(),
        evidence: 0.0,
        changed: 0.0,
        unseen: 0.0,
        idle: None,
    };
    // The model is a d×d matrix factored in d³ steps: a hand-written contract or settlement
    // listing 100,000 tags would ask for 80 GB. Past MAX_TAGS the self-ratings alone answer,
    // as for a contract with no tags.
    if tags.is_empty() || tags.len() > MAX_TAGS {
        return prior_only;
    }
    let outcomes = history.outcomes();
    let settled = history.settled_by(&s.citizen);
    // The contract's tags first, then every other tag the citizen settled.
    let k = tags.len();
    let mut local: Vec<&str> = tags.iter().map(String::as_str).collect();
    let fits = settled.iter().all(|&i| {
        for t in &outcomes[i].tags {
            if !local.contains(&t.as_str()) {
                if local.len() == MAX_TAGS {
                    return false;
                }
                local.push(t);
            }
        }
        true
    });
    let kept: Cow<'_, [usize]> = if fits {
        Cow::Borrowed(settled)
    } else {
        // Work over more than MAX_TAGS tags: the latest settlements whose tags fit, so the
        // citizen is still judged by its recent work; one whose tags do not fit is left out.
        local.truncate(k);
        let mut kept = Vec::new();
        for &i in settled.iter().rev() {
            let room = MAX_TAGS - local.len();
            // A settlement's tags are distinct, so these are its new ones (one past the room
            // is enough to know they do not fit).
            let new: Vec<&str> = outcomes[i]
                .tags
                .iter()
                .map(String::as_str)
                .filter(|t| !local.contains(t))
                .take(room + 1)
                .collect();
            if new.len() > room {
                continue;
            }
            local.extend(new);
            kept.push(i);
        }
        kept.reverse();
        Cow::Owned(kept)
    };
    let d = local.len();
    let prior = Terms::prior(local.iter().map(|t| (prior_mean(t), prior_var)));
    let mut weights = vec![0.0; d];
    weights[..k].iter_mut().for_each(|w| *w = 1.0 / k as f64);
    let model = Model { d, prior, weights };

    let n = outcomes.len();
    let rows: Vec<Row> = kept
        .iter()
        .map(|&i| Row {
            columns: outcomes[i]
                .tags
                .iter()
                .filter_map(|t| local.iter().position(|l| l == t))
                .collect(),
            noise_var: params.noise * params.noise + params.drift * params.drift * (n - i) as f64,
            quality: outcomes[i].quality,
        })
        .collect();
    let evidence = rows
        .iter()
        .filter(|r| r.columns.iter().any(|&j| j < k))
        .count() as f64;

    // (prior odds, fit) per part; the first is "never changed". The work before the window
    // is summed once and factored once; from there each side of the splits grows by
    // rank-one updates, one settlement at a time.
    let m = rows.len();
    // The splits are at rows[window..]: a change at one of the latest settlements, never at
    // the first (that is the whole record again).
    let window = if params.change_odds > 0.0 {
        m.saturating_sub(params.change_window).max(1).min(m)
    } else {
        m
    };
    let mut early = Terms::empty(d);
    for row in &rows[..window] {
        early.add(d, row);
    }
    let mut before = Factor::new(&model, &early, 1.0);
    // The evidence of the work before each split, taken before its settlement is added.
    let mut before_evidence = Vec::with_capacity(m - window);
    for row in &rows[window..] {
        before_evidence.push(before.fit(&model).log_evidence);
        before.add(row);
    }
    let whole = before.fit(&model);
    let looseness = params.prior_weight / params.changed_prior_weight;
    let mut parts = vec![(1.0, whole)];
    let mut after = Factor::new(&model, &Terms::empty(d), looseness);
    let fresh = after.fit(&model);
    for (split, evidence) in (window..m).zip(before_evidence).rev() {
        after.add(&rows[split]);
        let fit = after.fit(&model);
        parts.push((
            params.change_odds,
            Fit {
                log_evidence: evidence + fit.log_evidence,
                ..fit
            },
        ));
    }
    // A citizen with no record is idle since the polis began: the longer its card has stood
    // untested, the less it says.
    let idle = settled.last().map(|&i| n - i - 1);
    let seen = parts.len();
    if params.unseen_change_odds > 0.0 {
        parts.push((
            params.unseen_change_odds * idle.unwrap_or(n) as f64,
            Fit {
                log_evidence: whole.log_evidence,
                ..fresh
            },
        ));
    }
    let (mean, spread, weights) = mixture(&parts);
    // An empty float sum is -0.0, which `--explain` would print as "-0.000".
    let share = |w: &[f64]| w.iter().fold(0.0, |a, b| a + b);
    Estimate {
        mean,
        spread,
        evidence,
        changed: share(&weights[1..seen]),
        unseen: share(&weights[seen..]),
        idle,
    }
}

/// The mean and spread of a mixture of Gaussian parts, each weighed by its prior odds times
/// its evidence, and each part's weight (they sum to 1).
fn mixture(parts: &[(f64, Fit)]) -> (f64, f64, Vec<f64>) {
    let top = parts
        .iter()
        .map(|(_, f)| f.log_evidence)
        .fold(f64::NEG_INFINITY, f64::max);
    let weights: Vec<f64> = parts
        .iter()
        .map(|(odds, f)| odds * (f.log_evidence - top).exp())
        .collect();
    let total: f64 = weights.iter().sum();
    let weights: Vec<f64> = weights.iter().map(|w| w / total).collect();
    let (mut mean, mut second) = (0.0, 0.0);
    for (w, (_, f)) in weights.iter().zip(parts) {
        mean += w * f.mean;
        second += w * (f.var + f.mean * f.mean);
    }
    (mean, (second - mean * mean).max(0.0).sqrt(), weights)
}

/// Factors `a` (symmetric positive definite, d×d, row major) in place: its lower triangle
/// becomes L with L·Lᵀ = a.
fn cholesky(a: &mut [f64], d: usize) {
    for j in 0..d {
        let mut diag = a[j * d + j];
        for k in 0..j {
            diag -= a[j * d + k] * a[j * d + k];
        }
        // The prior keeps `a` positive definite; the floor only guards rounding.
        let diag = diag.max(1e-12).sqrt();
        a[j * d + j] = diag;
        for i in j + 1..d {
            let mut v = a[i * d + j];
            for k in 0..j {
                v -= a[i * d + k] * a[j * d + k];
            }
            a[i * d + j] = v / diag;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::routing::history::Outcome;

    /// A self-rating of 4 on every tag (no cards given).
    fn score(citizen: &str) -> Score {
        Score::plain(citizen, 0.0)
    }

    fn work(citizen: &str, tag: &str, qualities: &[f64]) -> Vec<Outcome> {
        qualities
            .iter()
            .map(|&quality| Outcome {
                citizen: citizen.to_string(),
                tags: vec![tag.to_string()],
                quality,
            })
            .collect()
    }

    fn of(history: &History, citizen: &str, params: &PosteriorParams) -> Estimate {
        estimate(&["a".to_string()], history, &[], params, &score(citizen))
    }

    const STEADY: PosteriorParams = PosteriorParams {
        change_odds: 0.0,
        unseen_change_odds: 0.0,
        ..PosteriorParams::DEFAULT
    };

    #[test]
    fn a_citizen_that_changed_is_believed_from_its_latest_work() {
        let mut outcomes = work("ann", "a", &[2.0; 40]);
        outcomes.extend(work("ann", "a", &[5.0; 4]));
        let history = History::from_outcomes(outcomes);
        let changed = of(&history, "ann", &PosteriorParams::default());
        let steady = of(&history, "ann", &STEADY);
        assert!(changed.changed > 0.9, "{changed:?}");
        assert!(changed.mean > 4.5, "{changed:?}");
        assert!(steady.mean < 3.0 && steady.changed == 0.0, "{steady:?}");
        assert!(
            steady.changed.is_sign_positive(),
            "printed as -0.000: {steady:?}"
        );
        assert_eq!((changed.unseen, changed.idle), (0.0, Some(0)));
    }

    #[test]
    fn a_change_is_seen_in_a_citizen_with_work_on_many_tags() {
        // 40 tags: every split is still weighed.
        let mut outcomes = Vec::new();
        for i in 0..80 {
            outcomes.extend(work("ann", &format!("t{}", i % 40), &[2.0]));
        }
        // Then better on tags it had done poorly, twice each.
        for t in ["t0", "t1", "t2", "t3", "t4", "t5"] {
            outcomes.extend(work("ann", t, &[5.0]));
        }
        let history = History::from_outcomes(outcomes);
        let params = PosteriorParams::default();
        let e = estimate(&["t0".to_string()], &history, &[], &params, &score("ann"));
        assert!(e.changed > 0.5, "{e:?}");
        assert!(e.mean > 4.0, "{e:?}");
    }

    /// Regression: a contract listing 100,000 tags made `polisd route` ask for 80 GB and
    /// abort, and one settlement listing them kept it busy for minutes. A deadline, not a
    /// benchmark.
    #[test]
    fn thousands_of_tags_are_estimated_from_the_self_ratings() {
        let many: Vec<String> = (0..100_000).map(|i| format!("t{i}")).collect();
        let history = History::from_outcomes(work("ann", "a", &[2.0; 3]));
        let params = PosteriorParams::default();
        let e = estimate(&many, &history, &[], &params, &score("ann"));
        assert_eq!((e.evidence, e.idle), (0.0, None), "{e:?}");
        // A settlement of that many tags is left out; the rest of the record still counts.
        let mut outcomes = work("ann", "a", &[2.0; 3]);
        outcomes.push(Outcome {
            citizen: "ann".into(),
            tags: many,
            quality: 2.0,
        });
        let e = of(&History::from_outcomes(outcomes), "ann", &params);
        assert_eq!(e.evidence, 3.0, "{e:?}");
    }

    /// A citizen whose work spans more tags than the model holds is judged by its latest
    /// work that fits: its record on the contract's tag is not dropped for the prior.
    #[test]
    fn work_over_more_tags_than_the_model_holds_keeps_the_latest() {
        let mut outcomes: Vec<Outcome> = (0..MAX_TAGS + 50)
            .flat_map(|i| work("ann", &format!("t{i}"), &[2.0]))
            .collect();
        outcomes.extend(work("ann", "a", &[5.0; 8]));
        let e = of(&History::from_outcomes(outcomes), "ann", &STEADY);
        assert_eq!(e.evidence, 8.0, "{e:?}");
        assert!(e.mean > 4.5, "{e:?}");
    }

    #[test]
    fn steady_work_is_not_taken_for_a_change() {
        let qualities: Vec<f64> = (0..40).map(|i| [3.0, 4.0, 4.0, 3.0][i % 4]).collect();
        let history = History::from_outcomes(work("ann", "a", &qualities));
        let e = of(&history, "ann", &PosteriorParams::default());
        assert!(e.changed < 0.1 && e.unseen == 0.0, "{e:?}");
        assert!((e.mean - 3.5).abs() < 0.1, "{e:?}");
        assert_eq!(e.evidence, 40.0);
    }

    #[test]
    fn a_citizen_left_without_work_is_given_a_chance_again() {
        let mut outcomes = work("ann", "a", &[2.0; 5]);
        let just_after = History::from_outcomes(outcomes.clone());
        outcomes.extend(work("bob", "a", &[4.0; 300]));
        let long_after = History::from_outcomes(outcomes);
        let params = PosteriorParams {
            drift: 0.0,
            ..PosteriorParams::default()
        };
        let (then, now) = (
            of(&just_after, "ann", &params),
            of(&long_after, "ann", &params),
        );
        assert!(then.changed + then.unseen < 0.05, "{then:?}");
        assert!(now.unseen > 0.3 && now.changed < 0.05, "{now:?}");
        assert_eq!(now.idle, Some(300));
        assert!(now.mean > then.mean + 0.5, "{then:?} {now:?}");
        assert!(now.spread > 2.0 * then.spread, "{then:?} {now:?}");
        // Without unseen changes, the wait alone tells nothing.
        let without = PosteriorParams {
            unseen_change_odds: 0.0,
            ..params
        };
        let quiet = of(&long_after, "ann", &without);
        assert!((quiet.mean - then.mean).abs() < 1e-9, "{quiet:?}");
        // A citizen with no record: its card, untested for 305 contracts, is held loosely too.
        let untried = of(&long_after, "cleo", &params);
        assert_eq!(untried.idle, None, "{untried:?}");
        assert!(
            untried.unseen > 0.3 && untried.changed == 0.0,
            "{untried:?}"
        );
        assert!((untried.mean - 4.0).abs() < 1e-9, "{untried:?}");
        assert!(untried.spread > 0.7, "{untried:?}");
    }

    #[test]
    fn the_evidence_is_the_marginal_likelihood_of_the_work() {
        // One tag, prior N(4, v0), one settlement y with noise variance r: y ~ N(4, v0 + r).
        let (v0, r, y) = (0.49, 0.36, 2.0);
        let model = Model {
            d: 1,
            prior: Terms::prior([(4.0, v0)].into_iter()),
            weights: vec![1.0],
        };
        let mut data = Terms::empty(1);
        data.add(
            1,
            &Row {
                columns: vec![0],
                noise_var: r,
                quality: y,
            },
        );
        for looseness in [1.0, 4.0] {
            let fit = Factor::new(&model, &data, looseness).fit(&model);
            let total = looseness * v0 + r;
            let direct = -0.5 * ((y - 4.0) * (y - 4.0) / total + total.ln());
            assert!(
                (fit.log_evidence - direct).abs() < 1e-12,
                "{fit:?} {direct}"
            );
            let posterior_var = 1.0 / (1.0 / (looseness * v0) + 1.0 / r);
            assert!((fit.var - posterior_var).abs() < 1e-12);
            let posterior_mean = posterior_var * (4.0 / (looseness * v0) + y / r);
            assert!((fit.mean - posterior_mean).abs() < 1e-12);
        }
    }

    #[test]
    fn a_factor_grown_one_settlement_at_a_time_fits_as_one_factored_at_once() {
        let d = 4;
        let prior = Terms::prior((0..d).map(|j| (3.0 + 0.3 * j as f64, 0.49 / (1.0 + j as f64))));
        let model = Model {
            d,
            prior,
            weights: vec![0.5, 0.5, 0.0, 0.0],
        };
        let rows: Vec<Row> = [
            (vec![0], 4.0),
            (vec![1, 2], 2.0),
            (vec![3], 5.0),
            (vec![0, 1, 3], 3.0),
            (vec![2], 1.0),
            (vec![1], 4.0),
        ]
        .into_iter()
        // Then 300 more, drawn: one to three distinct tags each, any quality.
        .chain((0..300u64).map(|i| {
            let draw = i.wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(17);
            let first = (draw % 4) as usize;
            let columns: Vec<usize> = (0..1 + (draw >> 8) as usize % 3)
                .map(|k| (first + k) % d)
                .collect();
            (columns, 1.0 + ((draw >> 16) % 5) as f64)
        }))
        .enumerate()
        .map(|(i, (columns, quality))| Row {
            columns,
            noise_var: 0.49 + 0.01 * i as f64,
            quality,
        })
        .collect();
        for looseness in [1.0, 3.3] {
            let mut grown = Factor::new(&model, &Terms::empty(d), looseness);
            let mut summed = Terms::empty(d);
            for row in &rows {
                grown.add(row);
                summed.add(d, row);
                let (a, b) = (
                    grown.fit(&model),
                    Factor::new(&model, &summed, looseness).fit(&model),
                );
                for (x, y) in [
                    (a.mean, b.mean),
                    (a.var, b.var),
                    (a.log_evidence, b.log_evidence),
                ] {
                    assert!((x - y).abs() < 1e-9 * (1.0 + y.abs()), "{a:?} {b:?}");
                }
            }
        }
    }
}
