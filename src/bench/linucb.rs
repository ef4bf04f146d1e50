//! The contextual baseline published routers are measured against: a cost-aware LinUCB
//! (Li et al., 2010, disjoint model), one linear model per citizen.
//!
//! The context of a contract for a citizen is: a constant, its tags (one-hot, divided by
//! their number), the citizen's mean self-rating over them, whether the contract is
//! high-stakes, and its cost ceiling (one-hot). The reward is the settled quality / 5. The pick
//! maximises the upper confidence bound plus the production score's cost term, so LinUCB and
//! the policies weigh cost alike.

/// One citizen's model: A⁻¹ (kept by Sherman–Morrison updates) and b.
#[derive(Debug, Clone)]
struct Arm {
    a_inv: Vec<f64>,
    b: Vec<f64>,
}

/// LinUCB over a fixed set of citizens.
#[derive(Debug, Clone)]
pub struct LinUcb {
    dim: usize,
    alpha: f64,
    arms: Vec<Arm>,
}

/// The exploration width; 0.5 did best of {0.25, 0.5, 1.0} on the default world, so the
/// baseline is run at its own best.
pub const ALPHA: f64 = 0.5;

impl LinUcb {
    pub fn new(citizens: usize, dim: usize, alpha: f64) -> LinUcb {
        let mut identity = vec![0.0; dim * dim];
        for i in 0..dim {
            identity[i * dim + i] = 1.0;
        }
        LinUcb {
            dim,
            alpha,
            arms: vec![
                Arm {
                    a_inv: identity,
                    b: vec![0.0; dim],
                };
                citizens
            ],
        }
    }

    /// The context's length for a world of `n_tags` tags.
    pub fn dim(n_tags: usize) -> usize {
        1 + n_tags + 1 + 1 + 3
    }

    /// The context vector of a contract for a citizen.
    pub fn context(
        n_tags: usize,
        tags: &[usize],
        mean_self_rating: f64,
        high_stakes: bool,
        ceiling: usize,
    ) -> Vec<f64> {
        let mut x = vec![0.0; LinUcb::dim(n_tags)];
        x[0] = 1.0;
        for &t in tags {
            x[1 + t] = 1.0 / tags.len() as f64;
        }
        x[1 + n_tags] = mean_self_rating / 5.0;
        x[2 + n_tags] = f64::from(u8::from(high_stakes));
        x[3 + n_tags + ceiling.min(2)] = 1.0;
        x
    }

    /// θ·x + α·√(xᵀA⁻¹x) for citizen `arm`.
    pub fn upper_bound(&self, arm: usize, x: &[f64]) -> f64 {
        let a = &self.arms[arm];
        let d = self.dim;
        let ax = mat_vec(&a.a_inv, x, d);
        let theta_x: f64 = mat_vec(&a.a_inv, &a.b, d)
            .iter()
            .zip(x)
            .map(|(t, xi)| t * xi)
            .sum();
        let width: f64 = x.iter().zip(&ax).map(|(xi, v)| xi * v).sum();
        theta_x + self.alpha * width.max(0.0).sqrt()
    }

    /// Learns from one settlement: A += x xᵀ, b += r x.
    pub fn update(&mut self, arm: usize, x: &[f64], reward: f64) {
        let d = self.dim;
        let a = &mut self.arms[arm];
        let ax = mat_vec(&a.a_inv, x, d);
        let denom = 1.0 + x.iter().zip(&ax).map(|(xi, v)| xi * v).sum::<f64>();
        // A⁻¹ is symmetric, so (A⁻¹x)(xᵀA⁻¹) = ax·axᵀ.
        for i in 0..d {
            for j in 0..d {
                a.a_inv[i * d + j] -= ax[i] * ax[j] / denom;
            }
        }
        for (bi, xi) in a.b.iter_mut().zip(x) {
            *bi += reward * xi;
        }
    }
}

fn mat_vec(m: &[f64], v: &[f64], d: usize) -> Vec<f64> {
    (0..d)
        .map(|i| (0..d).map(|j| m[i * d + j] * v[j]).sum())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn learns_which_citizen_is_better_on_a_tag() {
        let mut m = LinUcb::new(2, LinUcb::dim(2), ALPHA);
        let x = LinUcb::context(2, &[0], 4.0, false, 1);
        for _ in 0..50 {
            m.update(0, &x, 0.4);
            m.update(1, &x, 0.9);
        }
        assert!(m.upper_bound(1, &x) > m.upper_bound(0, &x));
    }
}
