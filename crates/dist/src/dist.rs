//! Parametric and empirical flow-size distributions.
//!
//! Every distribution is sampled by inverse transform from `rng.uniform()`: one uniform per
//! sample, except [`SizeDist::Lognormal`], which takes exactly two (Box-Muller). A fixed number
//! of draws per sample keeps a workload's stream aligned: the i-th flow always gets the i-th
//! draw(s), whatever sizes the earlier flows got.
//!
//! Samples are rounded to the nearest whole byte and are at least 1 byte. Rounding moves a
//! sample by at most 0.5 B and the floor by at most 1 B, so the mean of the samples is within
//! 1 B of [`SizeDist::mean_bytes`], which is the mean of the continuous distribution. Samples
//! above `u64::MAX` bytes (possible only in the far tail of a Pareto with a shape close to 1)
//! saturate.

use std::f64::consts::PI;
use std::fmt;

use fctlab_engine::Rng;

use crate::cdf::{round_size, Cdf};

/// A flow-size distribution. Build it with the constructors ([`SizeDist::pareto`], ...), which
/// validate the parameters; a value built directly can be checked with [`SizeDist::validate`].
#[derive(Clone, Debug, PartialEq)]
pub enum SizeDist {
    /// Every flow has `size_bytes`.
    Fixed { size_bytes: u64 },
    /// Uniform over the integers `min_bytes..=max_bytes`.
    Uniform { min_bytes: u64, max_bytes: u64 },
    /// Exponential with the given mean.
    Exponential { mean_bytes: f64 },
    /// Lognormal with the given mean; `sigma` is the standard deviation of the underlying
    /// normal, and its mean is `mu = ln(mean_bytes) - sigma^2 / 2`.
    Lognormal { mean_bytes: f64, sigma: f64 },
    /// Classic Pareto: `P(S > x) = (x_m / x)^shape` for `x >= x_m`, with the scale
    /// `x_m = mean_bytes (shape - 1) / shape` chosen so that the mean is `mean_bytes`.
    Pareto { shape: f64, mean_bytes: f64 },
    /// Pareto of the second kind (Lomax): `P(S > x) = (1 + c x)^-alpha` for `x >= 0`, with `c`
    /// per byte. Mean `1 / (c (alpha - 1))`.
    ParetoC { alpha: f64, c_per_byte: f64 },
    /// Pareto with shape `shape` truncated to `[min_bytes, max_bytes]`:
    /// `P(S <= x) = (1 - (min/x)^shape) / (1 - (min/max)^shape)`.
    BoundedPareto { shape: f64, min_bytes: f64, max_bytes: f64 },
    /// An empirical CDF, linearly interpolated (see [`Cdf`]).
    Empirical(Cdf),
}

impl SizeDist {
    /// Every flow has `size_bytes` (at least 1).
    pub fn fixed(size_bytes: u64) -> Result<SizeDist, String> {
        validated(SizeDist::Fixed { size_bytes })
    }

    /// Uniform over the integers `min_bytes..=max_bytes`, with `1 <= min_bytes <= max_bytes`.
    pub fn uniform(min_bytes: u64, max_bytes: u64) -> Result<SizeDist, String> {
        validated(SizeDist::Uniform { min_bytes, max_bytes })
    }

    /// Exponential with mean `mean_bytes > 0`.
    pub fn exponential(mean_bytes: f64) -> Result<SizeDist, String> {
        validated(SizeDist::Exponential { mean_bytes })
    }

    /// Lognormal with mean `mean_bytes > 0` and underlying-normal standard deviation
    /// `sigma >= 0`.
    pub fn lognormal(mean_bytes: f64, sigma: f64) -> Result<SizeDist, String> {
        validated(SizeDist::Lognormal { mean_bytes, sigma })
    }

    /// Classic Pareto with `shape > 1` and mean `mean_bytes > 0` ("shape 1.2, mean 25 KB").
    pub fn pareto(shape: f64, mean_bytes: f64) -> Result<SizeDist, String> {
        validated(SizeDist::Pareto { shape, mean_bytes })
    }

    /// Lomax `P(S > x) = (1 + c x)^-alpha`, with `alpha > 1` and `c_per_byte > 0`.
    /// `pareto_c(3.0, 1e-7)` has mean 5 MB.
    pub fn pareto_c(alpha: f64, c_per_byte: f64) -> Result<SizeDist, String> {
        validated(SizeDist::ParetoC { alpha, c_per_byte })
    }

    /// Pareto with `shape > 0` truncated to `[min_bytes, max_bytes]`, `1 <= min_bytes < max_bytes`.
    pub fn bounded_pareto(shape: f64, min_bytes: f64, max_bytes: f64) -> Result<SizeDist, String> {
        validated(SizeDist::BoundedPareto { shape, min_bytes, max_bytes })
    }

    /// An empirical distribution. Never fails: a [`Cdf`] is checked when it is built.
    pub fn empirical(cdf: Cdf) -> Result<SizeDist, String> {
        validated(SizeDist::Empirical(cdf))
    }

    /// Checks the parameters; the error names the distribution, the parameter (as written in
    /// scenario files) and its valid range.
    pub fn validate(&self) -> Result<(), String> {
        match *self {
            SizeDist::Fixed { size_bytes } => {
                if size_bytes < 1 {
                    return Err("fixed: size must be at least 1 B (got 0)".to_string());
                }
            }
            SizeDist::Uniform { min_bytes, max_bytes } => {
                if min_bytes < 1 {
                    return Err("uniform: min must be at least 1 B (got 0)".to_string());
                }
                if max_bytes < min_bytes {
                    return Err(format!("uniform: max must be >= min (got min = {min_bytes} B, max = {max_bytes} B)"));
                }
            }
            SizeDist::Exponential { mean_bytes } => positive("exponential", "mean", mean_bytes, " B")?,
            SizeDist::Lognormal { mean_bytes, sigma } => {
                positive("lognormal", "mean", mean_bytes, " B")?;
                if !(sigma.is_finite() && sigma >= 0.0) {
                    return Err(format!(
                        "lognormal: sigma must be a finite number >= 0 (got {sigma}); it is the \
                         standard deviation of ln(size)"
                    ));
                }
            }
            SizeDist::Pareto { shape, mean_bytes } => {
                if !(shape.is_finite() && shape > 1.0) {
                    return Err(format!(
                        "pareto: shape must be > 1 (got {shape}); the mean is infinite for \
                         shape <= 1 (use bounded_pareto for such shapes)"
                    ));
                }
                positive("pareto", "mean", mean_bytes, " B")?;
            }
            SizeDist::ParetoC { alpha, c_per_byte } => {
                if !(alpha.is_finite() && alpha > 1.0) {
                    return Err(format!(
                        "pareto_c: alpha must be > 1 (got {alpha}); the mean is infinite for \
                         alpha <= 1"
                    ));
                }
                positive("pareto_c", "c", c_per_byte, " per byte")?;
            }
            SizeDist::BoundedPareto { shape, min_bytes, max_bytes } => {
                positive("bounded_pareto", "shape", shape, "")?;
                if !(min_bytes.is_finite() && min_bytes >= 1.0) {
                    return Err(format!("bounded_pareto: min must be at least 1 B (got {min_bytes} B)"));
                }
                if !(max_bytes.is_finite() && max_bytes > min_bytes) {
                    return Err(format!(
                        "bounded_pareto: max must be larger than min (got min = {min_bytes} B, \
                         max = {max_bytes} B)"
                    ));
                }
            }
            SizeDist::Empirical(_) => {}
        }
        Ok(())
    }

    /// One flow size in whole bytes, at least 1, from one `rng.uniform()` (two for
    /// `Lognormal`).
    pub fn sample(&self, rng: &mut Rng) -> u64 {
        match self {
            SizeDist::Fixed { size_bytes } => {
                rng.uniform(); // keeps one draw per sample, like the others
                *size_bytes
            }
            SizeDist::Uniform { min_bytes, max_bytes } => {
                let span = max_bytes - min_bytes; // count - 1; may be u64::MAX
                let k = (rng.uniform() * (span as f64 + 1.0)) as u64;
                min_bytes + k.min(span)
            }
            SizeDist::Lognormal { mean_bytes, sigma } => {
                // Box-Muller, cosine branch: z = sqrt(-2 ln(1 - u1)) cos(2 pi u2) is standard
                // normal. The sine partner is discarded so that `sample` needs no state and
                // always takes exactly two draws.
                let u1 = rng.uniform();
                let u2 = rng.uniform();
                let z = (-2.0 * (-u1).ln_1p()).sqrt() * (2.0 * PI * u2).cos();
                let mu = mean_bytes.ln() - sigma * sigma / 2.0;
                round_size((mu + sigma * z).exp())
            }
            SizeDist::Exponential { .. }
            | SizeDist::Pareto { .. }
            | SizeDist::ParetoC { .. }
            | SizeDist::BoundedPareto { .. }
            | SizeDist::Empirical(_) => round_size(self.quantile(rng.uniform())),
        }
    }

    /// The size in bytes (not rounded) below which a fraction `u` of flows fall, `u` in
    /// `[0, 1)`: the inverse of the distribution function, as [`SizeDist::sample`] applies it
    /// (the uniform is continuous here; the lognormal inverts the normal distribution function
    /// numerically, to a relative error below 1e-8).
    pub fn quantile(&self, u: f64) -> f64 {
        match self {
            SizeDist::Fixed { size_bytes } => *size_bytes as f64,
            SizeDist::Uniform { min_bytes, max_bytes } => {
                *min_bytes as f64 + u * (*max_bytes as f64 - *min_bytes as f64 + 1.0)
            }
            // -mean ln(1 - u), with 1 - u in (0, 1]
            SizeDist::Exponential { mean_bytes } => -mean_bytes * (-u).ln_1p(),
            SizeDist::Lognormal { mean_bytes, sigma } => {
                let mu = mean_bytes.ln() - sigma * sigma / 2.0;
                (mu + sigma * normal_quantile(u)).exp()
            }
            SizeDist::Pareto { shape, mean_bytes } => {
                // x_m (1 - u)^(-1/shape)
                let scale = mean_bytes * (shape - 1.0) / shape;
                scale * (-(-u).ln_1p() / shape).exp()
            }
            // ((1 - u)^(-1/alpha) - 1) / c
            SizeDist::ParetoC { alpha, c_per_byte } => (-(-u).ln_1p() / alpha).exp_m1() / c_per_byte,
            SizeDist::BoundedPareto { shape, min_bytes, max_bytes } => {
                // min (1 - u (1 - (min/max)^shape))^(-1/shape)
                let q = -(shape * (min_bytes / max_bytes).ln()).exp_m1();
                let x = min_bytes * (-(-u * q).ln_1p() / shape).exp();
                x.clamp(*min_bytes, *max_bytes)
            }
            SizeDist::Empirical(cdf) => cdf.quantile(u),
        }
    }

    /// The mean in bytes of the (continuous) distribution. The mean of the samples, which are
    /// rounded to whole bytes and at least 1 B, is within 1 B of it.
    pub fn mean_bytes(&self) -> f64 {
        match self {
            SizeDist::Fixed { size_bytes } => *size_bytes as f64,
            SizeDist::Uniform { min_bytes, max_bytes } => (*min_bytes as f64 + *max_bytes as f64) / 2.0,
            SizeDist::Exponential { mean_bytes }
            | SizeDist::Lognormal { mean_bytes, .. }
            | SizeDist::Pareto { mean_bytes, .. } => *mean_bytes,
            SizeDist::ParetoC { alpha, c_per_byte } => 1.0 / (c_per_byte * (alpha - 1.0)),
            SizeDist::BoundedPareto { shape, min_bytes, max_bytes } => {
                bounded_pareto_mean(*shape, *min_bytes, *max_bytes)
            }
            SizeDist::Empirical(cdf) => cdf.mean_bytes(),
        }
    }

    /// A one-line description, e.g. `pareto(shape=1.2, mean=25000 B)`.
    pub fn describe(&self) -> String {
        match self {
            SizeDist::Fixed { size_bytes } => format!("fixed(size={size_bytes} B)"),
            SizeDist::Uniform { min_bytes, max_bytes } => {
                format!("uniform(min={min_bytes} B, max={max_bytes} B)")
            }
            SizeDist::Exponential { mean_bytes } => format!("exponential(mean={mean_bytes} B)"),
            SizeDist::Lognormal { mean_bytes, sigma } => {
                format!("lognormal(mean={mean_bytes} B, sigma={sigma})")
            }
            SizeDist::Pareto { shape, mean_bytes } => {
                format!("pareto(shape={shape}, mean={mean_bytes} B)")
            }
            SizeDist::ParetoC { alpha, c_per_byte } => {
                format!("pareto_c(alpha={alpha}, c={c_per_byte:e} per B, mean={} B)", self.mean_bytes().round())
            }
            SizeDist::BoundedPareto { shape, min_bytes, max_bytes } => format!(
                "bounded_pareto(shape={shape}, min={min_bytes} B, max={max_bytes} B, mean={} B)",
                self.mean_bytes().round()
            ),
            SizeDist::Empirical(cdf) => {
                format!("cdf({}, mean={} B)", cdf.source(), cdf.mean_bytes().round())
            }
        }
    }
}

impl fmt::Display for SizeDist {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.describe())
    }
}

fn validated(d: SizeDist) -> Result<SizeDist, String> {
    d.validate().map(|()| d)
}

fn positive(dist: &str, param: &str, v: f64, unit: &str) -> Result<(), String> {
    if v.is_finite() && v > 0.0 {
        Ok(())
    } else {
        Err(format!("{dist}: {param} must be a finite number > 0 (got {v}{unit})"))
    }
}

/// Mean of the Pareto with shape `a` truncated to `[lo, hi]`, with `r = lo / hi`:
///
/// `a lo (1 - r^(a-1)) / ((a - 1) (1 - r^a))`, which tends to `lo ln(hi/lo) / (1 - r)` as
/// `a -> 1`. Written with `expm1` so that it stays accurate near `a = 1`.
fn bounded_pareto_mean(a: f64, lo: f64, hi: f64) -> f64 {
    let ln_r = (lo / hi).ln();
    let b = a - 1.0;
    // (1 - r^b) / b, and its limit -ln r at b = 0
    let g = if b.abs() < 1e-12 { -ln_r } else { -(b * ln_r).exp_m1() / b };
    a * lo * g / -(a * ln_r).exp_m1()
}

/// The standard normal quantile (Acklam's rational approximation, relative error below
/// 1.2e-9), for `p` in (0, 1); the ends give -inf and +inf.
fn normal_quantile(p: f64) -> f64 {
    const A: [f64; 6] = [
        -3.969683028665376e1,
        2.209460984245205e2,
        -2.759285104469687e2,
        1.38357751867269e2,
        -3.066479806614716e1,
        2.506628277459239,
    ];
    const B: [f64; 5] =
        [-5.447609879822406e1, 1.615858368580409e2, -1.556989798598866e2, 6.680131188771972e1, -1.328068155288572e1];
    const C: [f64; 6] = [
        -7.784894002430293e-3,
        -3.223964580411365e-1,
        -2.400758277161838,
        -2.549732539343734,
        4.374664141464968,
        2.938163982698783,
    ];
    const D: [f64; 4] = [7.784695709041462e-3, 3.224671290700398e-1, 2.445134137142996, 3.754408661907416];
    if p <= 0.0 {
        return f64::NEG_INFINITY;
    }
    if p >= 1.0 {
        return f64::INFINITY;
    }
    let tail = |q: f64| {
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    };
    if p < 0.02425 {
        tail((-2.0 * p.ln()).sqrt())
    } else if p > 1.0 - 0.02425 {
        -tail((-2.0 * (-p).ln_1p()).sqrt())
    } else {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const N: usize = 1_000_000;

    fn samples(d: &SizeDist, n: usize, seed: u64) -> Vec<u64> {
        let mut rng = Rng::stream(seed, 7);
        (0..n).map(|_| d.sample(&mut rng)).collect()
    }

    fn mean(xs: &[u64]) -> f64 {
        xs.iter().map(|&x| x as f64).sum::<f64>() / xs.len() as f64
    }

    fn rel_err(a: f64, b: f64) -> f64 {
        (a - b).abs() / b.abs()
    }

    #[test]
    fn sampled_means_match_mean_bytes_within_2_percent() {
        // Pareto shape 2.5 rather than 1.2: see `pareto_heavy_tail_median` for why.
        let dists = [
            SizeDist::fixed(1_000_000).unwrap(),
            SizeDist::uniform(2_000, 50_000).unwrap(),
            SizeDist::exponential(100_000.0).unwrap(),
            SizeDist::lognormal(100_000.0, 1.0).unwrap(),
            SizeDist::pareto(2.5, 25_000.0).unwrap(),
            SizeDist::pareto_c(3.0, 1e-7).unwrap(),
            SizeDist::bounded_pareto(1.5, 1_000.0, 1e6).unwrap(),
            SizeDist::bounded_pareto(1.0, 1_000.0, 1e5).unwrap(),
            SizeDist::empirical(Cdf::builtin("websearch").unwrap()).unwrap(),
        ];
        for (i, d) in dists.iter().enumerate() {
            let m = mean(&samples(d, N, 100 + i as u64));
            let want = d.mean_bytes();
            println!(
                "{}: mean_bytes {want:.1} B, sampled mean over 10^6: {m:.1} B ({:+.3}%)",
                d.describe(),
                100.0 * (m - want) / want
            );
            assert!(rel_err(m, want) < 0.02, "{}: sampled {m} vs {want}", d.describe());
        }
    }

    #[test]
    fn pareto_heavy_tail_median() {
        // With shape 1.2 the variance is infinite: the sample mean converges like n^(1/1.2 - 1)
        // (about 10% off after 10^6 samples, and dominated by the few largest samples), so a
        // 2% check on it would test luck. The median has a well-behaved sampling distribution;
        // its closed form is x_m 2^(1/shape), with x_m = mean (shape - 1) / shape.
        let (shape, mean_b) = (1.2, 25_000.0);
        let d = SizeDist::pareto(shape, mean_b).unwrap();
        assert_eq!(d.mean_bytes(), mean_b);
        let mut xs = samples(&d, N, 3);
        xs.sort_unstable();
        let median = xs[N / 2] as f64;
        let x_m = mean_b * (shape - 1.0) / shape;
        let want = x_m * 2f64.powf(1.0 / shape);
        println!("pareto(1.2, 25KB): sample median {median} B, closed form {want:.1} B");
        assert!(rel_err(median, want) < 0.005, "median {median} vs {want}");
        assert!(xs[0] as f64 >= x_m.round());
    }

    #[test]
    fn pareto_c_matches_its_survival_function() {
        let (alpha, c) = (3.0, 1e-7);
        let d = SizeDist::pareto_c(alpha, c).unwrap();
        assert!(rel_err(d.mean_bytes(), 5e6) < 1e-12);
        let xs = samples(&d, N, 4);
        for x in [1e5, 1e6, 5e6, 2e7, 5e7] {
            let emp = xs.iter().filter(|&&s| s as f64 > x).count() as f64 / N as f64;
            let want = (1.0 + c * x).powf(-alpha);
            println!("pareto_c: P(S > {x:e}) sampled {emp:.4}, formula {want:.4}");
            assert!((emp - want).abs() < 0.01, "P(S > {x}) = {emp} vs {want}");
        }
    }

    #[test]
    fn bounded_pareto_stays_in_range_and_its_mean_is_exact() {
        let (lo, hi) = (1_000.0, 1e7);
        let d = SizeDist::bounded_pareto(1.1, lo, hi).unwrap();
        let xs = samples(&d, N, 5);
        assert!(xs.iter().all(|&x| x >= lo as u64 && x <= hi as u64));
        // Check the closed-form mean against lo + integral of the survival function, by
        // Simpson's rule in log space.
        for shape in [0.5, 1.0, 1.1, 2.0, 3.5] {
            let d = SizeDist::bounded_pareto(shape, lo, hi).unwrap();
            let r_a = (lo / hi).powf(shape);
            let surv = |x: f64| ((lo / x).powf(shape) - r_a) / (1.0 - r_a);
            let (a, b) = (lo.ln(), hi.ln());
            let n = 20_000;
            let h = (b - a) / n as f64;
            let f = |t: f64| surv(t.exp()) * t.exp();
            let mut integral = f(a) + f(b);
            for k in 1..n {
                integral += f(a + k as f64 * h) * if k % 2 == 1 { 4.0 } else { 2.0 };
            }
            let numeric = lo + integral * h / 3.0;
            assert!(rel_err(d.mean_bytes(), numeric) < 1e-9, "shape {shape}: {} vs {numeric}", d.mean_bytes());
        }
        // The shape = 1 formula joins the general one continuously.
        let at_1 = SizeDist::bounded_pareto(1.0, lo, hi).unwrap().mean_bytes();
        let near_1 = SizeDist::bounded_pareto(1.0 + 1e-7, lo, hi).unwrap().mean_bytes();
        assert!(rel_err(near_1, at_1) < 1e-6, "{at_1} vs {near_1}");
        assert!(rel_err(at_1, lo * hi / (hi - lo) * (hi / lo).ln()) < 1e-12);
    }

    #[test]
    fn uniform_covers_both_ends_inclusive() {
        let d = SizeDist::uniform(5, 8).unwrap();
        let xs = samples(&d, 100_000, 6);
        let mut counts = [0usize; 4];
        for x in xs {
            assert!((5..=8).contains(&x));
            counts[(x - 5) as usize] += 1;
        }
        assert!(counts.iter().all(|&c| (c as f64 / 25_000.0 - 1.0).abs() < 0.03), "{counts:?}");
        assert_eq!(samples(&SizeDist::uniform(7, 7).unwrap(), 10, 1), vec![7; 10]);
        let wide = SizeDist::uniform(1, u64::MAX).unwrap();
        assert!(samples(&wide, 1000, 2).iter().all(|&x| x >= 1));
    }

    #[test]
    fn lognormal_median_is_exp_mu() {
        let (m, sigma) = (100_000.0, 1.0);
        let d = SizeDist::lognormal(m, sigma).unwrap();
        let mut xs = samples(&d, 200_000, 8);
        xs.sort_unstable();
        let median = xs[xs.len() / 2] as f64;
        let want = (m.ln() - sigma * sigma / 2.0).exp();
        assert!(rel_err(median, want) < 0.01, "{median} vs {want}");
        assert_eq!(samples(&SizeDist::lognormal(5_000.0, 0.0).unwrap(), 5, 1), vec![5_000; 5]);
    }

    #[test]
    fn draws_per_sample_are_fixed() {
        let cases = [
            (SizeDist::fixed(10).unwrap(), 1),
            (SizeDist::uniform(1, 100).unwrap(), 1),
            (SizeDist::exponential(10.0).unwrap(), 1),
            (SizeDist::lognormal(10.0, 1.0).unwrap(), 2),
            (SizeDist::pareto(1.2, 10.0).unwrap(), 1),
            (SizeDist::pareto_c(3.0, 0.1).unwrap(), 1),
            (SizeDist::bounded_pareto(1.0, 1.0, 10.0).unwrap(), 1),
            (SizeDist::empirical(Cdf::builtin("google_rpc").unwrap()).unwrap(), 1),
        ];
        for (d, draws) in cases {
            let mut a = Rng::stream(1, 2);
            let mut b = a.clone();
            for _ in 0..10 {
                d.sample(&mut a);
            }
            for _ in 0..10 * draws {
                b.uniform();
            }
            assert_eq!(a.next_u64(), b.next_u64(), "{}", d.describe());
        }
    }

    #[test]
    fn samples_are_at_least_one_byte() {
        let tiny = [
            SizeDist::exponential(0.3).unwrap(),
            SizeDist::pareto_c(2.0, 10.0).unwrap(),
            SizeDist::lognormal(0.5, 2.0).unwrap(),
        ];
        for d in tiny {
            assert!(samples(&d, 10_000, 9).iter().all(|&x| x >= 1), "{}", d.describe());
        }
    }

    #[test]
    fn constructors_reject_bad_parameters_naming_them() {
        let cases: [(Result<SizeDist, String>, &str); 16] = [
            (SizeDist::fixed(0), "fixed: size"),
            (SizeDist::uniform(0, 10), "uniform: min"),
            (SizeDist::uniform(10, 9), "uniform: max must be >= min"),
            (SizeDist::exponential(0.0), "exponential: mean"),
            (SizeDist::exponential(f64::NAN), "exponential: mean"),
            (SizeDist::lognormal(-1.0, 1.0), "lognormal: mean"),
            (SizeDist::lognormal(1.0, -0.5), "lognormal: sigma"),
            (SizeDist::pareto(1.0, 25_000.0), "pareto: shape must be > 1"),
            (SizeDist::pareto(1.2, 0.0), "pareto: mean"),
            (SizeDist::pareto_c(1.0, 1e-7), "pareto_c: alpha must be > 1"),
            (SizeDist::pareto_c(3.0, 0.0), "pareto_c: c must be"),
            (SizeDist::pareto_c(3.0, f64::INFINITY), "pareto_c: c must be"),
            (SizeDist::bounded_pareto(0.0, 1.0, 10.0), "bounded_pareto: shape"),
            (SizeDist::bounded_pareto(1.1, 0.5, 10.0), "bounded_pareto: min"),
            (SizeDist::bounded_pareto(1.1, 10.0, 10.0), "bounded_pareto: max must be larger"),
            (SizeDist::bounded_pareto(1.1, 10.0, f64::NAN), "bounded_pareto: max"),
        ];
        for (res, want) in cases {
            let e = res.unwrap_err();
            assert!(e.starts_with(want) && e.contains("got"), "{e:?} should start with {want:?}");
        }
    }

    #[test]
    fn describe_names_the_parameters() {
        assert_eq!(SizeDist::pareto(1.2, 25_000.0).unwrap().describe(), "pareto(shape=1.2, mean=25000 B)");
        assert_eq!(
            SizeDist::pareto_c(3.0, 1e-7).unwrap().describe(),
            "pareto_c(alpha=3, c=1e-7 per B, mean=5000000 B)"
        );
        assert_eq!(SizeDist::uniform(2_000, 50_000).unwrap().describe(), "uniform(min=2000 B, max=50000 B)");
        assert_eq!(SizeDist::fixed(1_000_000).unwrap().to_string(), "fixed(size=1000000 B)");
        assert_eq!(SizeDist::lognormal(100_000.0, 1.0).unwrap().describe(), "lognormal(mean=100000 B, sigma=1)");
        assert_eq!(
            SizeDist::empirical(Cdf::builtin("websearch").unwrap()).unwrap().describe(),
            "cdf(websearch (websearch_dctcp.txt), mean=1711250 B)"
        );
    }

    #[test]
    fn quantiles_split_the_samples_as_they_say() {
        let dists = [
            SizeDist::uniform(2_000, 50_000).unwrap(),
            SizeDist::exponential(100_000.0).unwrap(),
            SizeDist::lognormal(100_000.0, 1.0).unwrap(),
            SizeDist::pareto(1.2, 25_000.0).unwrap(),
            SizeDist::pareto_c(3.0, 1e-7).unwrap(),
            SizeDist::bounded_pareto(1.5, 1_000.0, 1e6).unwrap(),
            SizeDist::empirical(Cdf::builtin("websearch").unwrap()).unwrap(),
        ];
        for d in &dists {
            let mut xs = samples(d, 200_000, 3);
            xs.sort_unstable();
            for u in [0.1, 0.5, 0.9, 0.99] {
                let q = d.quantile(u);
                let below = xs.partition_point(|&x| (x as f64) <= q) as f64 / xs.len() as f64;
                assert!(
                    (below - u).abs() < 0.005,
                    "{}: {below} of the samples at or below quantile({u}) = {q}",
                    d.describe()
                );
            }
        }
        assert_eq!(SizeDist::fixed(7).unwrap().quantile(0.3), 7.0);
    }

    #[test]
    fn the_normal_quantile_is_exact_to_1e_8() {
        for (p, z) in [(0.5, 0.0), (0.975, 1.959963984540054), (0.001, -3.090232306167813), (0.8413447460685429, 1.0)] {
            assert!((normal_quantile(p) - z).abs() < 1e-8, "{p}: {} against {z}", normal_quantile(p));
        }
        assert_eq!(normal_quantile(0.0), f64::NEG_INFINITY);
    }
}
