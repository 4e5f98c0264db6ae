//! Demotion thresholds of a multi-level feedback queue for a flow-size distribution and a
//! load: the queueing model PIAS optimises (Bai et al., "Information-Agnostic Flow Scheduling
//! for Commodity Data Centers", NSDI 2015, and its journal version), solved exactly.
//!
//! The model. A flow sends its bytes below the first threshold `a_1` in the highest-priority
//! queue, its bytes from `a_1` to `a_2` in the second, and so on; the last queue takes the rest.
//! Flows arrive as a Poisson process at load `rho` (a fraction of the link). Queue `l` is an
//! M/M/1 queue that serves what queues `1..=l` carry (a lower queue waits for every higher
//! one), so its load is `rho_l = rho * E[min(X, a_l)] / E[X]`, and a flow that reaches it
//! spends `1 / (1 - rho_l)` in it (in units of a unit service time). A flow whose size is in
//! `[a_(l-1), a_l)` passes through queues `1..=l`, and the mean time over flows is
//!
//! ```text
//! T = sum over l of P(X > a_(l-1)) / (1 - rho_l)        (a_0 = 0, a_K = infinity)
//! ```
//!
//! which is the paper's `sum_l theta_l sum_(m <= l) T_m` with the sums exchanged
//! (`theta_l = F(a_l) - F(a_(l-1))`). One difference, chosen: a queue's load counts the bytes
//! flows actually send in it, `E[min(X, a_l)] - E[min(X, a_(l-1))]`; the paper's form counts
//! every flow that reaches a queue as sending the queue's whole span.
//!
//! The solution. `T` is a sum of terms that each depend on two consecutive thresholds, so
//! dynamic programming over a grid of candidate thresholds finds the grid's global optimum
//! (the paper uses a numerical solver). The distribution is taken at [`GRID`] evenly spaced
//! quantiles, and the candidates are every [`GRID`]`/`[`CANDIDATES`]-th of them: thresholds
//! fall within 1/2048 of the optimum in probability. Using fewer thresholds than the queues
//! allow is one of the choices: each queue a flow passes through costs it a wait, so the
//! optimum often leaves queues unused.

use crate::SizeDist;

/// Quantiles the distribution is taken at.
pub const GRID: usize = 1 << 16;
/// Candidate thresholds (every `GRID / CANDIDATES`-th quantile).
pub const CANDIDATES: usize = 1 << 11;

/// A flow-size distribution as the model sees it: [`GRID`] quantiles, with the survival
/// function and the truncated means the model needs.
pub struct Model {
    /// The quantiles, ascending.
    x: Vec<f64>,
    /// `prefix[i]`: the sum of `x[..i]`.
    prefix: Vec<f64>,
    mean: f64,
    load: f64,
}

/// The thresholds that minimise the model, and what the model gives for them.
#[derive(Clone, Debug, PartialEq)]
pub struct Thresholds {
    /// Demotion thresholds in bytes, rising; fewer than the queues when that is better.
    pub bytes: Vec<u64>,
    /// The model's mean time `T` with these thresholds (1 / (1 - rho) with none).
    pub mean_time: f64,
}

impl Model {
    /// The model of `dist` at `load` (a fraction of the link, strictly between 0 and 1).
    pub fn new(dist: &SizeDist, load: f64) -> Result<Model, String> {
        if !(load > 0.0 && load < 1.0) {
            return Err(format!(
                "the queueing model needs a load strictly between 0 and 1 (an overloaded queue has no mean), got {load}"
            ));
        }
        let mut x: Vec<f64> = (0..GRID).map(|i| dist.quantile((i as f64 + 0.5) / GRID as f64)).collect();
        if x.iter().any(|v| !v.is_finite() || *v < 0.0) {
            return Err(format!("{}: a quantile is not a finite size", dist.describe()));
        }
        x.sort_by(f64::total_cmp);
        let mut prefix = Vec::with_capacity(GRID + 1);
        let mut sum = 0.0;
        prefix.push(0.0);
        for v in &x {
            sum += v;
            prefix.push(sum);
        }
        let mean = sum / GRID as f64;
        if mean <= 0.0 {
            return Err(format!("{}: the mean size is 0", dist.describe()));
        }
        Ok(Model { x, prefix, mean, load })
    }

    /// `P(X > a)` and `E[min(X, a)]` over the quantiles.
    fn survival_and_truncated_mean(&self, a: f64) -> (f64, f64) {
        let at_or_below = self.x.partition_point(|&v| v <= a);
        let above = (GRID - at_or_below) as f64;
        (above / GRID as f64, (self.prefix[at_or_below] + above * a) / GRID as f64)
    }

    /// The time in a queue whose load is that of the bytes below `a`: `1 / (1 - rho_l)`.
    fn wait(&self, truncated_mean: f64) -> f64 {
        1.0 / (1.0 - self.load * truncated_mean / self.mean)
    }

    /// The model's mean time `T` with demotion thresholds `bytes` (rising).
    pub fn mean_time(&self, bytes: &[u64]) -> f64 {
        let mut reach = 1.0; // P(X > a_(l-1))
        let mut t = 0.0;
        for &a in bytes {
            let (s, b) = self.survival_and_truncated_mean(a as f64);
            t += reach * self.wait(b);
            reach = s;
        }
        t + reach / (1.0 - self.load)
    }

    /// The thresholds, at most `max_thresholds` of them, that minimise [`Model::mean_time`].
    pub fn optimal(&self, max_thresholds: usize) -> Thresholds {
        // Distinct candidates (a point mass repeats a quantile), as whole bytes.
        let mut cand: Vec<u64> = (1..CANDIDATES).map(|j| self.x[j * (GRID / CANDIDATES)].ceil() as u64).collect();
        cand.dedup();
        let n = cand.len();
        let (s, w): (Vec<f64>, Vec<f64>) = cand
            .iter()
            .map(|&a| {
                let (s, b) = self.survival_and_truncated_mean(a as f64);
                (s, self.wait(b))
            })
            .unzip();
        let last = 1.0 / (1.0 - self.load);
        let mut best = (last, 0usize, 0usize); // (T, thresholds, index of the last)
                                               // cost[j]: the least time of the queues above the last threshold, which is cand[j],
                                               // with `k` thresholds; from[k][j]: the threshold before it.
        let mut cost: Vec<f64> = w.clone();
        let mut from: Vec<Vec<u32>> = Vec::new();
        for k in 1..=max_thresholds.min(n) {
            if k > 1 {
                let mut next = vec![f64::INFINITY; n];
                let mut back = vec![0u32; n];
                for j in 1..n {
                    for i in 0..j {
                        let c = cost[i] + s[i] * w[j];
                        if c < next[j] {
                            next[j] = c;
                            back[j] = i as u32;
                        }
                    }
                }
                cost = next;
                from.push(back);
            }
            for j in 0..n {
                let t = cost[j] + s[j] * last;
                if t < best.0 {
                    best = (t, k, j);
                }
            }
        }
        let (mean_time, k, mut j) = best;
        let mut bytes = Vec::with_capacity(k);
        if k > 0 {
            bytes.push(cand[j]);
            for back in from[..k - 1].iter().rev() {
                j = back[j] as usize;
                bytes.push(cand[j]);
            }
            bytes.reverse();
        }
        Thresholds { bytes, mean_time }
    }
}

/// The demotion thresholds, at most `max_thresholds`, that minimise the model for `dist` at
/// `load`.
pub fn thresholds(dist: &SizeDist, load: f64, max_thresholds: usize) -> Result<Thresholds, String> {
    Ok(Model::new(dist, load)?.optimal(max_thresholds))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Cdf;

    fn websearch() -> SizeDist {
        SizeDist::empirical(Cdf::builtin("websearch").unwrap()).unwrap()
    }

    #[test]
    fn the_optimum_is_no_worse_than_any_threshold_set_tried() {
        let d = websearch();
        for load in [0.3, 0.6, 0.9] {
            let m = Model::new(&d, load).unwrap();
            let best = m.optimal(7);
            assert!((m.mean_time(&best.bytes) - best.mean_time).abs() < 1e-9, "the reported time is the thresholds'");
            assert!(best.mean_time <= 1.0 / (1.0 - load), "no worse than one queue");
            // Exhaustively over one and two thresholds on a coarse grid of sizes.
            let sizes: Vec<u64> = (0..60).map(|i| (1e4 * 1.15f64.powi(i)) as u64).collect();
            for (i, &a) in sizes.iter().enumerate() {
                assert!(m.mean_time(&[a]) >= best.mean_time - 1e-9, "{a}");
                for &b in &sizes[i + 1..] {
                    assert!(m.mean_time(&[a, b]) >= best.mean_time - 1e-9, "{a}, {b}");
                }
            }
        }
    }

    #[test]
    fn a_fixed_size_needs_no_threshold_and_a_bad_load_is_refused() {
        let t = thresholds(&SizeDist::fixed(50_000).unwrap(), 0.5, 7).unwrap();
        assert_eq!((t.bytes.len(), t.mean_time), (0, 2.0));
        for load in [0.0, 1.0, 1.5, f64::NAN] {
            assert!(thresholds(&websearch(), load, 7).unwrap_err().contains("strictly between 0 and 1"), "{load}");
        }
    }

    #[test]
    fn thresholds_rise_and_respect_the_limit() {
        for load in [0.2, 0.5, 0.8, 0.95] {
            for max in [0, 1, 3, 7] {
                let t = thresholds(&websearch(), load, max).unwrap();
                assert!(t.bytes.len() <= max);
                assert!(t.bytes.windows(2).all(|w| w[0] < w[1]), "{:?}", t.bytes);
            }
        }
    }
}
