//! ATCP, Adaptive TCP: NewReno whose additive increase is the flow's weight `w` segments per
//! round trip instead of one (the weighted AIMD of Theorem 1 in the ATCP design paper: two
//! flows with weights a and b and equal halving converge to rates a : b).
//!
//! The weight comes from a weight-size function of the bytes the flow has sent so far, so a
//! flow needs no size information from the application:
//!
//! - `step` (the paper's final design): `W_H` while sent <= T, else `W_L`
//!   (defaults W_H = 3, W_L = 1, T = 10 MB);
//! - `linear`: `W_H` up to T1, `W_L` beyond T2, linear in between;
//! - `exponential`: `W_H` up to T1, `W_L` beyond T2, geometric in between
//!   (`W_H * (W_L / W_H)^((s - T1) / (T2 - T1))`);
//! - `fixed`: a constant weight (the rate-control mode of Theorem 1);
//! - `time`: the weight-time function the paper's discussion sketches for deadlines: the
//!   weight rises linearly from `W_L` to `W_H` over the flow's deadline, then drops to
//!   `w_late` once the deadline has passed.
//!
//! Slow start and multiplicative decrease (one half) are NewReno's.

use super::{additive_increase, slow_start, AckSample, CcState, CongestionControl, FlowInfo};
use crate::params::Params;
use fctlab_engine::Nanos;

pub const KEYS: &[&str] = &["weight_function", "weight", "w_high", "w_low", "w_late", "threshold", "threshold_low", "threshold_high"];

#[derive(Clone, Debug, PartialEq)]
pub enum WeightFunction {
    Step { w_high: f64, w_low: f64, threshold_bytes: u64 },
    Linear { w_high: f64, w_low: f64, t1_bytes: u64, t2_bytes: u64 },
    Exponential { w_high: f64, w_low: f64, t1_bytes: u64, t2_bytes: u64 },
    Fixed { weight: f64 },
    Time { w_high: f64, w_low: f64, w_late: f64 },
}

#[derive(Clone, Debug, PartialEq)]
pub struct AtcpConfig {
    pub function: WeightFunction,
}

impl Default for AtcpConfig {
    fn default() -> Self {
        // The paper's choice: W_H = 3, W_L = 1, T = 10 MB.
        AtcpConfig { function: WeightFunction::Step { w_high: 3.0, w_low: 1.0, threshold_bytes: 10_000_000 } }
    }
}

fn positive(name: &str, v: f64) -> Result<f64, String> {
    if v > 0.0 && v.is_finite() {
        Ok(v)
    } else {
        Err(format!("`{name}` must be a positive number, got {v}"))
    }
}

impl AtcpConfig {
    pub fn from_params(p: &Params) -> Result<Self, String> {
        let kind = p.str("weight_function")?.unwrap_or("step").to_string();
        let w_high = positive("w_high", p.f64("w_high")?.unwrap_or(3.0))?;
        let w_low = positive("w_low", p.f64("w_low")?.unwrap_or(1.0))?;
        let only = |allowed: &[&str]| -> Result<(), String> {
            for k in KEYS {
                if *k != "weight_function" && !allowed.contains(k) && p.get(k).is_some() {
                    return Err(format!("`{k}` is not used by weight_function \"{kind}\" (it takes: {})", allowed.join(", ")));
                }
            }
            Ok(())
        };
        let function = match kind.as_str() {
            "step" => {
                only(&["w_high", "w_low", "threshold"])?;
                WeightFunction::Step { w_high, w_low, threshold_bytes: p.bytes("threshold")?.unwrap_or(10_000_000) }
            }
            "linear" | "exponential" => {
                only(&["w_high", "w_low", "threshold_low", "threshold_high"])?;
                let t1 = p.bytes("threshold_low")?.ok_or_else(|| format!("weight_function \"{kind}\" needs `threshold_low` (T1)"))?;
                let t2 = p.bytes("threshold_high")?.ok_or_else(|| format!("weight_function \"{kind}\" needs `threshold_high` (T2)"))?;
                if t2 <= t1 {
                    return Err(format!("`threshold_high` ({t2} B) must be above `threshold_low` ({t1} B)"));
                }
                if kind == "linear" {
                    WeightFunction::Linear { w_high, w_low, t1_bytes: t1, t2_bytes: t2 }
                } else {
                    WeightFunction::Exponential { w_high, w_low, t1_bytes: t1, t2_bytes: t2 }
                }
            }
            "fixed" => {
                only(&["weight"])?;
                let w = p.f64("weight")?.ok_or("weight_function \"fixed\" needs `weight`")?;
                WeightFunction::Fixed { weight: positive("weight", w)? }
            }
            "time" => {
                only(&["w_high", "w_low", "w_late"])?;
                WeightFunction::Time { w_high, w_low, w_late: positive("w_late", p.f64("w_late")?.unwrap_or(0.5))? }
            }
            other => return Err(format!("unknown weight_function \"{other}\" (known: step, linear, exponential, fixed, time)")),
        };
        Ok(AtcpConfig { function })
    }
}

/// Where `sent` lies against the thresholds T1 < T2 of a two-threshold weight function.
enum Progress {
    Before,
    Between(f64),
    After,
}

fn progress(sent: u64, t1: u64, t2: u64) -> Progress {
    if sent <= t1 {
        Progress::Before
    } else if sent >= t2 {
        Progress::After
    } else {
        Progress::Between((sent - t1) as f64 / (t2 - t1) as f64)
    }
}

#[derive(Clone, Debug)]
pub struct Atcp {
    cfg: AtcpConfig,
    start: Nanos,
    deadline: Option<Nanos>,
    acc_bytes: u64,
    weight: f64,
}

impl Atcp {
    pub fn new(cfg: AtcpConfig, info: &FlowInfo) -> Self {
        let mut a = Atcp { cfg, start: info.start, deadline: info.deadline, acc_bytes: 0, weight: 1.0 };
        a.weight = a.weight_at(0, info.start);
        a
    }

    /// The weight after `sent` bytes at time `now`.
    pub fn weight_at(&self, sent: u64, now: Nanos) -> f64 {
        match self.cfg.function {
            WeightFunction::Step { w_high, w_low, threshold_bytes } => {
                if sent <= threshold_bytes {
                    w_high
                } else {
                    w_low
                }
            }
            WeightFunction::Linear { w_high, w_low, t1_bytes, t2_bytes } => match progress(sent, t1_bytes, t2_bytes) {
                Progress::Before => w_high,
                Progress::After => w_low,
                Progress::Between(x) => w_high + (w_low - w_high) * x,
            },
            WeightFunction::Exponential { w_high, w_low, t1_bytes, t2_bytes } => match progress(sent, t1_bytes, t2_bytes) {
                Progress::Before => w_high,
                Progress::After => w_low,
                Progress::Between(x) => w_high * (w_low / w_high).powf(x),
            },
            WeightFunction::Fixed { weight } => weight,
            WeightFunction::Time { w_high, w_low, w_late } => match self.deadline {
                None => w_low,
                Some(d) => {
                    let elapsed = now.saturating_sub(self.start);
                    if elapsed > d {
                        w_late
                    } else {
                        w_low + (w_high - w_low) * elapsed.0 as f64 / d.0.max(1) as f64
                    }
                }
            },
        }
    }
}

impl CongestionControl for Atcp {
    fn on_ack(&mut self, st: &mut CcState, ack: &AckSample) {
        self.weight = self.weight_at(ack.bytes_sent, ack.now);
        let mut acked = ack.acked_bytes;
        if st.in_slow_start() {
            acked = slow_start(st, acked);
        }
        if acked > 0 {
            additive_increase(st, acked, self.weight, &mut self.acc_bytes);
        }
    }

    fn weight(&self) -> Option<f64> {
        Some(self.weight)
    }
}

#[cfg(test)]
mod tests {
    use super::super::{CongestionControl, NewReno, NewRenoConfig};
    use super::*;

    const MSS: u64 = 1000;

    fn params(kv: &[(&str, crate::params::ParamValue)]) -> Params {
        let mut p = Params::new();
        for (k, v) in kv {
            p.set(k, v.clone());
        }
        p
    }

    #[test]
    fn weight_functions() {
        use crate::params::ParamValue::*;
        let info = FlowInfo::default();
        let step = Atcp::new(AtcpConfig::from_params(&Params::new()).unwrap(), &info);
        assert_eq!(step.weight_at(10_000_000, Nanos::ZERO), 3.0);
        assert_eq!(step.weight_at(10_000_001, Nanos::ZERO), 1.0);
        let lin = AtcpConfig::from_params(&params(&[("weight_function", Str("linear".into())), ("threshold_low", Str("1MB".into())), ("threshold_high", Str("3MB".into()))])).unwrap();
        let lin = Atcp::new(lin, &info);
        assert_eq!(lin.weight_at(2_000_000, Nanos::ZERO), 2.0);
        let exp = AtcpConfig::from_params(&params(&[("weight_function", Str("exponential".into())), ("w_high", Int(4)), ("threshold_low", Int(0)), ("threshold_high", Int(100))])).unwrap();
        let exp = Atcp::new(exp, &info);
        assert!((exp.weight_at(50, Nanos::ZERO) - 2.0).abs() < 1e-12);
        let time = AtcpConfig::from_params(&params(&[("weight_function", Str("time".into()))])).unwrap();
        let time = Atcp::new(time, &FlowInfo { start: Nanos(1000), deadline: Some(Nanos(100)) });
        assert!((time.weight_at(0, Nanos(1050)) - 2.0).abs() < 1e-12);
        assert_eq!(time.weight_at(0, Nanos(1101)), 0.5);
    }

    #[test]
    fn bad_parameters_are_named() {
        use crate::params::ParamValue::*;
        let e = AtcpConfig::from_params(&params(&[("weight_function", Str("fixed".into()))])).unwrap_err();
        assert!(e.contains("needs `weight`"), "{e}");
        let e = AtcpConfig::from_params(&params(&[("weight_function", Str("fixed".into())), ("weight", Int(2)), ("threshold", Int(5))])).unwrap_err();
        assert!(e.contains("`threshold` is not used"), "{e}");
        let e = AtcpConfig::from_params(&params(&[("weight_function", Str("fixed".into())), ("weight", Int(0))])).unwrap_err();
        assert!(e.contains("positive"), "{e}");
    }

    #[test]
    fn weighted_increase_and_equivalence_with_reno_at_weight_one() {
        use crate::params::ParamValue::*;
        let cfg = |w: i64| AtcpConfig::from_params(&params(&[("weight_function", Str("fixed".into())), ("weight", Int(w))])).unwrap();
        let mut a = Atcp::new(cfg(2), &FlowInfo::default());
        let mut st = CcState { cwnd_bytes: 10 * MSS, ssthresh_bytes: 10 * MSS, mss_bytes: MSS };
        for _ in 0..10 {
            a.on_ack(&mut st, &AckSample { acked_bytes: MSS, ..Default::default() });
        }
        assert_eq!(st.cwnd_bytes, 12 * MSS, "weight 2: two segments per window");
        let mut one = Atcp::new(cfg(1), &FlowInfo::default());
        let mut reno = NewReno::new(NewRenoConfig {});
        let (mut s1, mut s2) = (CcState { cwnd_bytes: 2 * MSS, ssthresh_bytes: 30 * MSS, mss_bytes: MSS }, CcState { cwnd_bytes: 2 * MSS, ssthresh_bytes: 30 * MSS, mss_bytes: MSS });
        for _ in 0..1000 {
            let ack = AckSample { acked_bytes: MSS, ..Default::default() };
            one.on_ack(&mut s1, &ack);
            reno.on_ack(&mut s2, &ack);
            assert_eq!(s1, s2);
        }
    }
}
