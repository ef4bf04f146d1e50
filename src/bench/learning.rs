//! `polisd bench learning`: the reference's learning mode. Contracts sometimes hit one of a
//! few recurring failure modes; a memoryless team hits a mode every time it recurs, a polis
//! records a lesson the first time and avoids it after, so each mode fails at most once. The
//! figure is the cumulative repeat-error rate of each.

use super::world::SimRng;
use serde::Serialize;
use std::io::Write;

/// The learning mode's result for one seed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LearningReport {
    pub contracts: usize,
    pub modes: usize,
    pub seed: u64,
    /// Cumulative error rate after each contract, with lessons kept.
    pub polis_curve: Vec<f64>,
    /// The same without memory.
    pub memoryless_curve: Vec<f64>,
}

impl LearningReport {
    pub fn polis_final(&self) -> f64 {
        self.polis_curve.last().copied().unwrap_or(0.0)
    }

    pub fn memoryless_final(&self) -> f64 {
        self.memoryless_curve.last().copied().unwrap_or(0.0)
    }
}

/// The reference's defaults: 180 contracts, 14 modes, a mode on 65 % of the contracts.
pub const CONTRACTS: usize = 180;
pub const MODES: usize = 14;
pub const MODE_SHARE: f64 = 0.65;

pub fn run_learning(contracts: usize, modes: usize, seed: u64) -> LearningReport {
    let mut rng = SimRng::new(seed, 2);
    let stream: Vec<Option<usize>> = (0..contracts)
        .map(|_| (rng.unit() < MODE_SHARE).then(|| rng.below(modes.max(1))))
        .collect();
    let curve = |remember: bool| {
        let mut learned = vec![false; modes.max(1)];
        let mut errors = 0usize;
        stream
            .iter()
            .enumerate()
            .map(|(i, mode)| {
                if let Some(m) = *mode {
                    if !(remember && learned[m]) {
                        errors += 1;
                        learned[m] = true;
                    }
                }
                errors as f64 / (i + 1) as f64
            })
            .collect()
    };
    LearningReport {
        contracts,
        modes,
        seed,
        polis_curve: curve(true),
        memoryless_curve: curve(false),
    }
}

/// A curve in eight levels, sampled to about `width` points.
fn sparkline(curve: &[f64], width: usize) -> String {
    const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    let step = (curve.len() / width).max(1);
    let sampled: Vec<f64> = curve.iter().step_by(step).copied().collect();
    let lo = sampled.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = sampled.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let span = if hi > lo { hi - lo } else { 1.0 };
    sampled
        .iter()
        .map(|v| BARS[(((v - lo) / span) * 7.0).clamp(0.0, 7.0) as usize])
        .collect()
}

pub fn write_learning(r: &LearningReport, out: &mut dyn Write) -> std::io::Result<()> {
    let (polis, none) = (r.polis_final(), r.memoryless_final());
    let drop = if none > 0.0 { 1.0 - polis / none } else { 0.0 };
    writeln!(
        out,
        "Learning bench: {} contracts, {} recurring failure modes, seed {}",
        r.contracts, r.modes, r.seed
    )?;
    writeln!(out)?;
    writeln!(out, "Cumulative repeat-error rate (early -> late):")?;
    writeln!(
        out,
        "  memoryless team     : {}  -> {:.0}%",
        sparkline(&r.memoryless_curve, 40),
        100.0 * none
    )?;
    writeln!(
        out,
        "  polis (keeps lessons): {}  -> {:.0}%",
        sparkline(&r.polis_curve, 40),
        100.0 * polis
    )?;
    writeln!(out)?;
    writeln!(
        out,
        "Recording a lesson at the first failure and injecting it after cuts the repeat-error\n\
         rate {:.0}% below a memoryless team: each failure mode recurs at most once.",
        100.0 * drop
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_mode_fails_at_most_once_with_lessons() {
        let r = run_learning(CONTRACTS, MODES, 0);
        let errors = (r.polis_final() * CONTRACTS as f64).round() as usize;
        assert!(errors <= MODES);
        assert!(r.polis_final() < r.memoryless_final());
        // Without memory, the error rate is the share of contracts that hit a mode.
        assert!((r.memoryless_final() - MODE_SHARE).abs() < 0.12);
    }
}
