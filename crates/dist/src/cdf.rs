//! Empirical flow-size distributions given as cumulative distribution functions.
//!
//! A [`Cdf`] is a list of points `(size_bytes, cumulative probability)`, sorted by both. It is
//! sampled by inverse transform with **linear interpolation** between consecutive points:
//!
//! - a segment between `(s_i, p_i)` and `(s_{i+1}, p_{i+1})` spreads the probability
//!   `p_{i+1} - p_i` uniformly over `[s_i, s_{i+1}]`;
//! - a vertical step (two points with the same size) is a point mass at that size;
//! - if the first point has `p_0 > 0`, it is a point mass of `p_0` at the first size.
//!
//! The mean is therefore `sum_i (p_{i+1} - p_i) (s_i + s_{i+1}) / 2` plus the point masses.
//!
//! Linear interpolation is what the tools the shipped files come from use (the HPCC ns-3 traffic
//! generator for the byte/percent files, and the mean the PIAS ns-2 scripts set for the
//! data-mining file). The other common rule, the "step" or "upper point" rule (draw the smallest
//! listed size whose probability is at least `u`, as the Homa simulator does), gives a different
//! distribution of the same points with a larger mean: 2,434,900 B instead of 1,711,250 B for
//! `websearch`, 9,467 instead of 5,117 packets for `datamining`. Since the mean sets the arrival
//! rate for a target load, the rule matters; here it is always linear.
//!
//! # File format
//!
//! Plain text; `#` starts a comment (to the end of the line) and blank lines are ignored. Each
//! data line is either `<size> <cum_prob>` or the ns-2 `EmpiricalRandomVariable` form
//! `<size> <weight> <cum_prob>`, whose middle column is ignored. Sizes are in units of
//! `size_unit_bytes` (1 for bytes, 1460 for the packet-based ns-2 files). Probabilities are in
//! `[0, 1]`, or in percent (`[0, 100]`) when the last one is 100. The last probability must be 1
//! (or 100).

use fctlab_engine::Rng;

/// Slack allowed on the last probability (as a fraction of 1): files written with rounded
/// decimals may end at 0.9999999 or 100.00001.
const LAST_PROB_SLACK: f64 = 1e-6;

/// The five distributions shipped with fctlab, in the order of [`Cdf::builtin_names`].
const BUILTINS: [Builtin; 5] = [
    Builtin {
        name: "websearch",
        file: "websearch_dctcp.txt",
        text: include_str!("../cdfs/websearch_dctcp.txt"),
        size_unit_bytes: 1.0,
    },
    Builtin {
        name: "datamining",
        file: "datamining_vl2_packets.txt",
        text: include_str!("../cdfs/datamining_vl2_packets.txt"),
        size_unit_bytes: 1460.0,
    },
    Builtin {
        name: "fb_hadoop",
        file: "fb_hadoop.txt",
        text: include_str!("../cdfs/fb_hadoop.txt"),
        size_unit_bytes: 1.0,
    },
    Builtin {
        name: "google_rpc",
        file: "google_rpc2008.txt",
        text: include_str!("../cdfs/google_rpc2008.txt"),
        size_unit_bytes: 1.0,
    },
    Builtin {
        name: "alibaba_storage",
        file: "ali_storage2019.txt",
        text: include_str!("../cdfs/ali_storage2019.txt"),
        size_unit_bytes: 1.0,
    },
];

const BUILTIN_NAMES: [&str; 5] =
    [BUILTINS[0].name, BUILTINS[1].name, BUILTINS[2].name, BUILTINS[3].name, BUILTINS[4].name];

struct Builtin {
    name: &'static str,
    file: &'static str,
    text: &'static str,
    size_unit_bytes: f64,
}

/// An empirical flow-size distribution, sampled with linear interpolation between its points.
///
/// Always valid: at least two points, sizes and probabilities non-decreasing, probabilities in
/// `[0, 1]`, the first probability `0` (a leading point mass is stored as a vertical step from
/// probability 0), the last exactly `1`, and a largest size above 0.
#[derive(Clone, Debug, PartialEq)]
pub struct Cdf {
    /// `(size_bytes, cumulative probability)`.
    points: Vec<(f64, f64)>,
    /// Where the points came from (a builtin name or a file name), for messages.
    source: String,
}

impl Cdf {
    /// Builds a distribution from `(size_bytes, cumulative probability)` points with
    /// probabilities in `[0, 1]`. `source` names the origin in error messages and in
    /// [`Cdf::source`]. Errors name the offending point by its index.
    pub fn from_points(points: &[(f64, f64)], source: &str) -> Result<Cdf, String> {
        let mut checked = Vec::with_capacity(points.len());
        for (i, &(size, prob)) in points.iter().enumerate() {
            let prev = checked.last().copied();
            check_point(size, prob, prev, 1.0).map_err(|e| format!("{source}: point {i}: {e}"))?;
            checked.push((size, prob));
        }
        finish(checked, source).map_err(|e| format!("{source}: {e}"))
    }

    /// Parses the plain format described in the [module documentation](self). Sizes are
    /// multiplied by `size_unit_bytes`. Errors start with `source:line:` and say what is wrong.
    pub fn parse(text: &str, size_unit_bytes: f64, source: &str) -> Result<Cdf, String> {
        if !(size_unit_bytes.is_finite() && size_unit_bytes > 0.0) {
            return Err(format!("{source}: size unit must be a positive number of bytes (got {size_unit_bytes})"));
        }
        // (line number, size in file units, probability as written)
        let mut rows: Vec<(usize, f64, f64)> = Vec::new();
        for (idx, raw) in text.lines().enumerate() {
            let line_no = idx + 1;
            let data = raw.split('#').next().unwrap_or("").trim();
            if data.is_empty() {
                continue;
            }
            let cols: Vec<&str> = data.split_whitespace().collect();
            if cols.len() != 2 && cols.len() != 3 {
                return Err(format!(
                    "{source}:{line_no}: expected 2 columns `<size> <cum_prob>` or 3 columns \
                     `<size> <weight> <cum_prob>`, found {} in {data:?}",
                    cols.len()
                ));
            }
            let number = |s: &str, what: &str| -> Result<f64, String> {
                match s.parse::<f64>() {
                    Ok(v) if v.is_finite() => Ok(v),
                    _ => Err(format!("{source}:{line_no}: {what} {s:?} is not a finite number")),
                }
            };
            let size = number(cols[0], "size")?;
            if cols.len() == 3 {
                number(cols[1], "weight")?;
            }
            let prob = number(cols[cols.len() - 1], "cumulative probability")?;
            rows.push((line_no, size, prob));
        }
        let Some(&(last_line, _, last_prob)) = rows.last() else {
            return Err(format!("{source}: no data lines; a CDF needs at least 2 points"));
        };
        if rows.len() < 2 {
            return Err(format!("{source}:{last_line}: only 1 data point; a CDF needs at least 2 points"));
        }
        let scale = if (last_prob - 100.0).abs() <= 100.0 * LAST_PROB_SLACK {
            100.0
        } else if (last_prob - 1.0).abs() <= LAST_PROB_SLACK {
            1.0
        } else {
            return Err(format!(
                "{source}:{last_line}: last cumulative probability is {last_prob}; it must be 1 \
                 (or 100 when probabilities are in percent)"
            ));
        };
        let mut points: Vec<(f64, f64)> = Vec::with_capacity(rows.len());
        for (k, &(line_no, size, prob)) in rows.iter().enumerate() {
            let prev = k.checked_sub(1).map(|j| (rows[j].1, rows[j].2));
            check_point(size, prob, prev, scale).map_err(|e| format!("{source}:{line_no}: {e}"))?;
            points.push((size * size_unit_bytes, prob / scale));
        }
        finish(points, source).map_err(|e| format!("{source}:{last_line}: {e}"))
    }

    /// The shipped distribution called `name` (see [`Cdf::builtin_names`]), or `None`.
    pub fn builtin(name: &str) -> Option<Cdf> {
        let b = BUILTINS.iter().find(|b| b.name == name)?;
        let source = format!("{} ({})", b.name, b.file);
        // The embedded files are checked by the tests below, so this cannot fail.
        Some(Cdf::parse(b.text, b.size_unit_bytes, &source).expect("builtin CDF is valid"))
    }

    /// The names accepted by [`Cdf::builtin`].
    pub fn builtin_names() -> &'static [&'static str] {
        &BUILTIN_NAMES
    }

    /// One size drawn by inverse transform from one `rng.uniform()`, rounded to the nearest
    /// byte and at least 1 byte.
    #[inline]
    pub fn sample(&self, rng: &mut Rng) -> u64 {
        round_size(self.quantile(rng.uniform()))
    }

    /// The size in bytes (not rounded) below which a fraction `u` of flows fall: the inverse of
    /// the piecewise-linear CDF. `u` is clamped to `[0, 1]`.
    pub fn quantile(&self, u: f64) -> f64 {
        let pts = &self.points;
        let last = pts[pts.len() - 1];
        if u >= 1.0 || u.is_nan() {
            return last.0; // also NaN
        }
        if u <= 0.0 {
            return pts[0].0;
        }
        // First point with probability > u; it exists because the last probability is 1 > u,
        // and it is not the first point because that one has probability 0 < u.
        let j = pts.partition_point(|&(_, p)| p <= u);
        let (s0, p0) = pts[j - 1];
        let (s1, p1) = pts[j];
        s0 + (u - p0) / (p1 - p0) * (s1 - s0)
    }

    /// The exact mean in bytes of the piecewise-linear distribution (point masses included).
    /// Samples, rounded to whole bytes and at least 1 byte, have a mean within 1 byte of it.
    pub fn mean_bytes(&self) -> f64 {
        self.points.windows(2).map(|w| (w[1].1 - w[0].1) * (w[0].0 + w[1].0) / 2.0).sum()
    }

    /// The points `(size_bytes, cumulative probability)`, starting at probability 0 and ending
    /// at 1. A leading point mass appears as two points with the same size.
    pub fn points(&self) -> &[(f64, f64)] {
        &self.points
    }

    /// The smallest size in bytes.
    pub fn min_bytes(&self) -> f64 {
        self.points[0].0
    }

    /// The largest size in bytes.
    pub fn max_bytes(&self) -> f64 {
        self.points[self.points.len() - 1].0
    }

    /// Where the distribution came from: `"websearch (websearch_dctcp.txt)"` for a builtin,
    /// the `source` given to [`Cdf::parse`] or [`Cdf::from_points`] otherwise.
    pub fn source(&self) -> &str {
        &self.source
    }
}

/// Checks one point against the range and the previous point, all in the caller's units
/// (`scale` is 1 for probabilities in [0, 1] and 100 for percent).
fn check_point(size: f64, prob: f64, prev: Option<(f64, f64)>, scale: f64) -> Result<(), String> {
    if !size.is_finite() || size < 0.0 {
        return Err(format!("size {size} must be a finite number >= 0"));
    }
    if !prob.is_finite() || prob < 0.0 || prob > scale * (1.0 + LAST_PROB_SLACK) {
        let range = if scale == 100.0 { "[0, 100] (percent)" } else { "[0, 1]" };
        return Err(format!("cumulative probability {prob} is outside {range}"));
    }
    if let Some((prev_size, prev_prob)) = prev {
        if size < prev_size {
            return Err(format!("size {size} is smaller than the previous size {prev_size}; sizes must not decrease"));
        }
        if prob < prev_prob {
            return Err(format!(
                "cumulative probability {prob} is smaller than the previous one {prev_prob}; \
                 probabilities must not decrease"
            ));
        }
    }
    Ok(())
}

/// Final checks on points already in bytes and [0, 1]: count, last probability, a positive
/// largest size; then the leading point mass becomes a vertical step from probability 0.
fn finish(mut points: Vec<(f64, f64)>, source: &str) -> Result<Cdf, String> {
    if points.len() < 2 {
        return Err(format!("{} point(s); a CDF needs at least 2 points", points.len()));
    }
    let last = points.len() - 1;
    if (points[last].1 - 1.0).abs() > LAST_PROB_SLACK {
        return Err(format!("last cumulative probability is {}; it must be 1", points[last].1));
    }
    if points[last].0 <= 0.0 {
        return Err("the largest size is 0; flows need at least 1 byte".to_string());
    }
    points[last].1 = 1.0;
    for p in points.iter_mut() {
        p.1 = p.1.min(1.0);
    }
    if points[0].1 > 0.0 {
        points.insert(0, (points[0].0, 0.0));
    }
    Ok(Cdf { points, source: source.to_string() })
}

/// Rounds a size in bytes to the nearest whole byte, at least 1 (saturating at `u64::MAX`).
#[inline]
pub(crate) fn round_size(bytes: f64) -> u64 {
    (bytes.round() as u64).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rel_err(a: f64, b: f64) -> f64 {
        (a - b).abs() / b.abs()
    }

    /// Second moment of the piecewise-linear distribution: uniform on each segment.
    fn second_moment(cdf: &Cdf) -> f64 {
        cdf.points()
            .windows(2)
            .map(|w| {
                let (a, b) = (w[0].0, w[1].0);
                (w[1].1 - w[0].1) * (a * a + a * b + b * b) / 3.0
            })
            .sum()
    }

    fn sampled_mean(cdf: &Cdf, n: usize, stream: u64) -> f64 {
        let mut rng = Rng::stream(1, stream);
        (0..n).map(|_| cdf.sample(&mut rng) as f64).sum::<f64>() / n as f64
    }

    /// Linear-interpolation means listed in the README of the data folder the files come from.
    const README_MEANS: [(&str, f64); 5] = [
        ("websearch", 1_711_250.0),
        ("datamining", 5_116.6 * 1460.0),
        ("fb_hadoop", 120_420.8),
        ("google_rpc", 2_891.6),
        ("alibaba_storage", 40_869.8),
    ];

    #[test]
    fn every_builtin_parses_and_has_the_documented_mean() {
        assert_eq!(Cdf::builtin_names().len(), README_MEANS.len());
        for (name, mean) in README_MEANS {
            assert!(Cdf::builtin_names().contains(&name));
            let cdf = Cdf::builtin(name).unwrap();
            assert_eq!(cdf.points()[0].1, 0.0);
            assert_eq!(cdf.points().last().unwrap().1, 1.0);
            let m = cdf.mean_bytes();
            assert!(rel_err(m, mean) < 1e-3, "{name}: mean {m} B, README {mean} B");
        }
        assert!(Cdf::builtin("nonexistent").is_none());
    }

    #[test]
    fn datamining_is_in_packets_of_1460_bytes() {
        let cdf = Cdf::builtin("datamining").unwrap();
        let m = cdf.mean_bytes();
        assert!(rel_err(m, 7_470_236.0) < 1e-4, "mean {m} B");
        assert_eq!(cdf.min_bytes(), 1460.0);
        assert_eq!(cdf.max_bytes(), 666_667.0 * 1460.0);
    }

    #[test]
    fn builtin_sampled_means_match_within_2_percent() {
        // The 2% check is made at least 4 standard errors wide: n = 10^6, or more when the
        // distribution's tail makes the sample mean noisier. google_rpc has a coefficient of
        // variation of ~22.6 (a 15 MB tail behind a 2.9 KB mean), so the standard error of a
        // 10^6-sample mean is ~2.3% and a 2% check there would be a coin toss; it gets 2*10^7
        // samples. datamining (CV ~8) gets 2.6*10^6 and fb_hadoop (CV ~5.6) 1.25*10^6.
        for (i, name) in Cdf::builtin_names().iter().enumerate() {
            let cdf = Cdf::builtin(name).unwrap();
            let mean = cdf.mean_bytes();
            let cv = (second_moment(&cdf) - mean * mean).sqrt() / mean;
            let n_4sigma = (4.0 * cv / 0.02).powi(2).ceil() as usize;
            let n = n_4sigma.max(1_000_000);
            let m = sampled_mean(&cdf, n, i as u64);
            let m6 = sampled_mean(&cdf, 1_000_000, i as u64);
            println!(
                "{name}: mean_bytes {mean:.1} B, cv {cv:.2}; sampled mean over {n}: {m:.1} B \
                 ({:+.3}%); over 10^6: {m6:.1} B ({:+.3}%)",
                100.0 * (m - mean) / mean,
                100.0 * (m6 - mean) / mean
            );
            assert!(rel_err(m, mean) < 0.02, "{name}: sampled {m} vs {mean} over {n} samples");
        }
    }

    #[test]
    fn datamining_point_mass_at_one_packet_has_half_the_flows() {
        let cdf = Cdf::builtin("datamining").unwrap();
        let mut rng = Rng::stream(5, 1);
        let n = 1_000_000;
        let ones = (0..n).filter(|_| cdf.sample(&mut rng) == 1460).count();
        let f = ones as f64 / n as f64;
        println!("datamining: fraction of 1-packet flows {f:.5}");
        assert!(rel_err(f, 0.5) < 0.005, "fraction {f}");
    }

    #[test]
    fn leading_probability_is_a_point_mass_at_the_first_size() {
        let cdf = Cdf::parse("100 0.3\n200 1\n", 1.0, "t").unwrap();
        assert_eq!(cdf.points(), &[(100.0, 0.0), (100.0, 0.3), (200.0, 1.0)]);
        assert!((cdf.mean_bytes() - (0.3 * 100.0 + 0.7 * 150.0)).abs() < 1e-9);
        let mut rng = Rng::stream(9, 0);
        let n = 200_000;
        let at_first = (0..n).filter(|_| cdf.sample(&mut rng) == 100).count() as f64 / n as f64;
        assert!((at_first - 0.3).abs() < 0.005, "{at_first}");
    }

    #[test]
    fn quantile_interpolates_linearly_and_steps_are_point_masses() {
        let cdf = Cdf::parse("0 0\n10 0.5\n10 0.7\n30 1\n", 1.0, "t").unwrap();
        assert_eq!(cdf.quantile(0.0), 0.0);
        assert_eq!(cdf.quantile(0.25), 5.0);
        assert_eq!(cdf.quantile(0.5), 10.0);
        assert_eq!(cdf.quantile(0.6), 10.0);
        assert!((cdf.quantile(0.85) - 20.0).abs() < 1e-9);
        assert_eq!(cdf.quantile(1.0), 30.0);
        assert_eq!(cdf.quantile(7.0), 30.0);
        assert_eq!(cdf.quantile(-1.0), 0.0);
        // 0.5 * 5 + 0.2 * 10 + 0.3 * 20
        assert!((cdf.mean_bytes() - 10.5).abs() < 1e-12);
        // A flat stretch (same probability, larger size) carries no probability.
        let gap = Cdf::parse("0 0\n10 0.5\n90 0.5\n100 1\n", 1.0, "t").unwrap();
        assert!((gap.quantile(0.75) - 95.0).abs() < 1e-9);
        assert!((gap.mean_bytes() - (0.5 * 5.0 + 0.5 * 95.0)).abs() < 1e-9);
    }

    #[test]
    fn samples_round_to_whole_bytes_and_are_at_least_one() {
        let cdf = Cdf::parse("0 0\n2 1\n", 1.0, "t").unwrap();
        let mut rng = Rng::stream(3, 0);
        let mut seen = [0usize; 3];
        for _ in 0..100_000 {
            let s = cdf.sample(&mut rng);
            assert!((1..=2).contains(&s), "{s}");
            seen[s as usize] += 1;
        }
        // Rounding: [0, 0.5) and [0.5, 1.5) both give 1 byte (75%), [1.5, 2] gives 2 (25%).
        let f1 = seen[1] as f64 / 100_000.0;
        assert!((f1 - 0.75).abs() < 0.01, "{f1}");
    }

    #[test]
    fn sample_draws_exactly_one_uniform() {
        let cdf = Cdf::builtin("websearch").unwrap();
        let mut a = Rng::stream(11, 4);
        let mut b = a.clone();
        cdf.sample(&mut a);
        b.uniform();
        assert_eq!(a.next_u64(), b.next_u64());
    }

    #[test]
    fn formats_percent_fraction_and_three_columns_agree() {
        let frac = Cdf::parse("# c\n\n0 0\n10 0.5 # half\n20 1\n", 1.0, "a").unwrap();
        let pct = Cdf::parse("0 0\n10 50\n20 100\n", 1.0, "b").unwrap();
        let ns2 = Cdf::parse("0 1 0\n10 1 0.5\n20 1 1\n", 1.0, "c").unwrap();
        assert_eq!(frac.points(), pct.points());
        assert_eq!(frac.points(), ns2.points());
        let pkts = Cdf::parse("0 1 0\n10 1 0.5\n20 1 1\n", 1460.0, "d").unwrap();
        assert_eq!(pkts.max_bytes(), 20.0 * 1460.0);
        assert!((pkts.mean_bytes() - 10.0 * 1460.0).abs() < 1e-6);
        // Float slack on the last probability.
        let slack = Cdf::parse("0 0\n10 0.9999999\n", 1.0, "e").unwrap();
        assert_eq!(slack.points()[1].1, 1.0);
        let slack_pct = Cdf::parse("0 0\n10 100.00001\n", 1.0, "f").unwrap();
        assert_eq!(slack_pct.points()[1].1, 1.0);
    }

    #[test]
    fn parse_errors_name_the_line_and_the_problem() {
        let err = |text: &str| Cdf::parse(text, 1.0, "my.cdf").unwrap_err();
        let e = err("# header\n0 0\n10 abc\n20 1\n");
        assert!(e.starts_with("my.cdf:3:") && e.contains("\"abc\" is not a finite number"), "{e}");
        let e = err("0 0\n20 0.5\n10 1\n");
        assert!(e.starts_with("my.cdf:3:") && e.contains("sizes must not decrease"), "{e}");
        let e = err("0 0\n10 0.6\n20 0.5\n30 1\n");
        assert!(e.starts_with("my.cdf:3:") && e.contains("probabilities must not decrease"), "{e}");
        let e = err("0 0\n10 1.5\n20 1\n");
        assert!(e.starts_with("my.cdf:2:") && e.contains("outside [0, 1]"), "{e}");
        let e = err("0 0\n10 -5\n20 100\n");
        assert!(e.starts_with("my.cdf:2:") && e.contains("outside [0, 100]"), "{e}");
        let e = err("0 0\n10 0.5\n20 0.97\n");
        assert!(e.starts_with("my.cdf:3:") && e.contains("last cumulative probability"), "{e}");
        let e = err("# only a comment\n10 1\n");
        assert!(e.starts_with("my.cdf:2:") && e.contains("at least 2 points"), "{e}");
        let e = err("# nothing\n");
        assert!(e.contains("no data lines"), "{e}");
        let e = err("0 0\n10 1 2 1\n");
        assert!(e.starts_with("my.cdf:2:") && e.contains("found 4"), "{e}");
        // Homa's files start with a one-column mean line.
        let e = err("440.79\n1 0\n2 1\n");
        assert!(e.starts_with("my.cdf:1:") && e.contains("found 1"), "{e}");
        let e = err("-5 0\n10 1\n");
        assert!(e.starts_with("my.cdf:1:") && e.contains(">= 0"), "{e}");
        let e = err("0 0\n0 1\n");
        assert!(e.starts_with("my.cdf:2:") && e.contains("largest size is 0"), "{e}");
        let e = Cdf::parse("0 0\n1 1\n", 0.0, "u").unwrap_err();
        assert!(e.contains("size unit"), "{e}");
    }

    #[test]
    fn from_points_checks_like_parse() {
        let cdf = Cdf::from_points(&[(0.0, 0.0), (4.0, 1.0)], "pts").unwrap();
        assert_eq!(cdf.mean_bytes(), 2.0);
        assert_eq!(cdf.source(), "pts");
        let e = Cdf::from_points(&[(0.0, 0.0), (4.0, 0.6), (3.0, 1.0)], "pts").unwrap_err();
        assert!(e.starts_with("pts: point 2:") && e.contains("must not decrease"), "{e}");
        let e = Cdf::from_points(&[(0.0, 0.0), (4.0, 100.0)], "pts").unwrap_err();
        assert!(e.contains("outside [0, 1]"), "{e}");
    }
}
