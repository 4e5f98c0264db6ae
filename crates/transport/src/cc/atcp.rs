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
//!
//! `halving` says how often the window halves under the Linux reactions (`ecn_reaction =
//! "linux"`, RFC 6675 or RFC 6582 recovery): `per-episode` (the default), as the kernel's ATCP
//! (`kernel/atcp.bpf.c`): an ECN echo or a loss for data sent before the previous reduction
//! ended (below snd_nxt when the sender left its CWR or recovery state) still starts CWR or
//! recovery, but the window is kept (ssthresh = cwnd), so a reduction that keeps sending
//! while it lasts (Linux's CWR with proportional rate reduction, `cwr = true`) is not followed
//! by a second halving caused by its own packets; a timeout always halves. `per-window`: every
//! echo or loss after the previous reduction's round halves, as NewReno (and Linux's `reno`).
//! The sender applies the rule (`crate::sender`); ns-2's reactions have their own.

use super::{
    additive_increase, reno_decrease, slow_start, AckSample, CcState, CongestionControl, CongestionEvent, FlowInfo,
    Protocol, TransportPolicy,
};
use fctlab_engine::quantity::Size;
use fctlab_engine::Nanos;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq)]
pub enum WeightFunction {
    Step { w_high: f64, w_low: f64, threshold_bytes: u64 },
    Linear { w_high: f64, w_low: f64, t1_bytes: u64, t2_bytes: u64 },
    Exponential { w_high: f64, w_low: f64, t1_bytes: u64, t2_bytes: u64 },
    Fixed { weight: f64 },
    Time { w_high: f64, w_low: f64, w_late: f64 },
}

/// ATCP's parameters: a validated weight function. Written in scenarios as the flat keys of
/// [`AtcpKeys`].
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(try_from = "AtcpKeys", into = "AtcpKeys")]
pub struct AtcpConfig {
    pub function: WeightFunction,
    pub halving: Halving,
}

/// How often ATCP halves its window (`halving`; see the module documentation).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
pub enum Halving {
    /// Once per congestion episode, as the kernel's ATCP (`kernel/atcp.bpf.c`, its default).
    #[default]
    PerEpisode,
    /// On every signal after the previous reduction's round, as NewReno.
    PerWindow,
}

impl Halving {
    pub const NAMES: &'static [&'static str] = &["per-episode", "per-window"];
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "per-episode" => Some(Halving::PerEpisode),
            "per-window" => Some(Halving::PerWindow),
            _ => None,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Halving::PerEpisode => "per-episode",
            Halving::PerWindow => "per-window",
        }
    }
}

impl Default for AtcpConfig {
    fn default() -> Self {
        // The paper's choice: W_H = 3, W_L = 1, T = 10 MB.
        AtcpConfig { function: WeightFunction::Step { w_high: 3.0, w_low: 1.0, threshold_bytes: 10_000_000 }, halving: Halving::PerEpisode }
    }
}

/// The keys of ATCP's parameters as scenario files write them. Which keys apply depends on
/// `weight_function`; a key the function does not use is an error.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct AtcpKeys {
    /// `step` (default), `linear`, `exponential`, `fixed` or `time`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub weight_function: Option<String>,
    /// The constant weight of `fixed`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub weight: Option<f64>,
    /// W_H (default 3).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub w_high: Option<f64>,
    /// W_L (default 1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub w_low: Option<f64>,
    /// The weight of `time` once the deadline has passed (default 0.5).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub w_late: Option<f64>,
    /// T of `step` (default 10 MB).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub threshold: Option<Size>,
    /// T1 of `linear` and `exponential`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub threshold_low: Option<Size>,
    /// T2 of `linear` and `exponential`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub threshold_high: Option<Size>,
    /// `per-episode` (default) or `per-window`: how often the window halves (any function).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub halving: Option<String>,
}

fn positive(name: &str, v: f64) -> Result<f64, String> {
    if v > 0.0 && v.is_finite() {
        Ok(v)
    } else {
        Err(format!("`{name}` must be a positive number, got {v}"))
    }
}

impl TryFrom<AtcpKeys> for AtcpConfig {
    type Error = String;
    fn try_from(p: AtcpKeys) -> Result<Self, String> {
        let kind = p.weight_function.clone().unwrap_or_else(|| "step".into());
        let w_high = positive("w_high", p.w_high.unwrap_or(3.0))?;
        let w_low = positive("w_low", p.w_low.unwrap_or(1.0))?;
        let given = [
            ("weight", p.weight.is_some()),
            ("w_high", p.w_high.is_some()),
            ("w_low", p.w_low.is_some()),
            ("w_late", p.w_late.is_some()),
            ("threshold", p.threshold.is_some()),
            ("threshold_low", p.threshold_low.is_some()),
            ("threshold_high", p.threshold_high.is_some()),
        ];
        let only = |allowed: &[&str]| -> Result<(), String> {
            match given.iter().find(|(k, present)| *present && !allowed.contains(k)) {
                Some((k, _)) => Err(format!("`{k}` is not used by weight_function \"{kind}\" (it takes: {})", allowed.join(", "))),
                None => Ok(()),
            }
        };
        let function = match kind.as_str() {
            "step" => {
                only(&["w_high", "w_low", "threshold"])?;
                WeightFunction::Step { w_high, w_low, threshold_bytes: p.threshold.map_or(10_000_000, |s| s.0) }
            }
            "linear" | "exponential" => {
                only(&["w_high", "w_low", "threshold_low", "threshold_high"])?;
                let t1 = p.threshold_low.ok_or_else(|| format!("weight_function \"{kind}\" needs `threshold_low` (T1)"))?.0;
                let t2 = p.threshold_high.ok_or_else(|| format!("weight_function \"{kind}\" needs `threshold_high` (T2)"))?.0;
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
                let w = p.weight.ok_or("weight_function \"fixed\" needs `weight`")?;
                WeightFunction::Fixed { weight: positive("weight", w)? }
            }
            "time" => {
                only(&["w_high", "w_low", "w_late"])?;
                WeightFunction::Time { w_high, w_low, w_late: positive("w_late", p.w_late.unwrap_or(0.5))? }
            }
            other => return Err(format!("unknown weight_function \"{other}\" (known: step, linear, exponential, fixed, time)")),
        };
        let halving = match p.halving.as_deref() {
            None => Halving::default(),
            Some(name) => Halving::from_name(name)
                .ok_or_else(|| format!("`halving`: unknown value \"{name}\" (known: {})", Halving::NAMES.join(", ")))?,
        };
        Ok(AtcpConfig { function, halving })
    }
}

impl From<AtcpConfig> for AtcpKeys {
    fn from(c: AtcpConfig) -> AtcpKeys {
        let f = |s: &str| Some(s.to_string());
        let keys = match c.function {
            WeightFunction::Step { w_high, w_low, threshold_bytes } => {
                AtcpKeys { weight_function: f("step"), w_high: Some(w_high), w_low: Some(w_low), threshold: Some(Size(threshold_bytes)), ..Default::default() }
            }
            WeightFunction::Linear { w_high, w_low, t1_bytes, t2_bytes } => AtcpKeys {
                weight_function: f("linear"),
                w_high: Some(w_high),
                w_low: Some(w_low),
                threshold_low: Some(Size(t1_bytes)),
                threshold_high: Some(Size(t2_bytes)),
                ..Default::default()
            },
            WeightFunction::Exponential { w_high, w_low, t1_bytes, t2_bytes } => AtcpKeys {
                weight_function: f("exponential"),
                w_high: Some(w_high),
                w_low: Some(w_low),
                threshold_low: Some(Size(t1_bytes)),
                threshold_high: Some(Size(t2_bytes)),
                ..Default::default()
            },
            WeightFunction::Fixed { weight } => AtcpKeys { weight_function: f("fixed"), weight: Some(weight), ..Default::default() },
            WeightFunction::Time { w_high, w_low, w_late } => {
                AtcpKeys { weight_function: f("time"), w_high: Some(w_high), w_low: Some(w_low), w_late: Some(w_late), ..Default::default() }
            }
        };
        AtcpKeys { halving: f(c.halving.name()), ..keys }
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

    /// Whether the window halves once per congestion episode (`halving = "per-episode"`).
    pub fn halves_once_per_episode(&self) -> bool {
        self.cfg.halving == Halving::PerEpisode
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
                        w_low + (w_high - w_low) * elapsed.as_nanos() as f64 / d.as_nanos().max(1) as f64
                    }
                }
            },
        }
    }
}

impl Protocol for Atcp {
    const NAMES: &'static [&'static str] = &["atcp"];
    const NS2_AGENT: bool = true;
    type Config = AtcpConfig;
    fn new(cfg: &AtcpConfig, info: &FlowInfo) -> Self {
        Atcp::new(cfg.clone(), info)
    }
}

/// ATCP halves once per congestion episode unless `halving = "per-window"`.
impl TransportPolicy for Atcp {
    fn halving_per_episode(&self) -> bool {
        self.halves_once_per_episode()
    }
}

impl CongestionControl for Atcp {
    /// Reno's halving (RFC 5681).
    fn on_congestion(&mut self, st: &mut CcState, ev: CongestionEvent) {
        reno_decrease(st, ev, 0.5)
    }

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
    use super::super::newreno::{NewReno, NewRenoConfig};
    use super::super::CongestionControl;
    use super::*;

    const MSS: u64 = 1000;

    /// Parses ATCP parameters from TOML keys, as a scenario would.
    fn params(toml_keys: &str) -> Result<AtcpConfig, String> {
        match super::super::configure("atcp", toml::from_str(toml_keys).unwrap()).map_err(|e| e.message)? {
            super::super::CcConfig::Atcp(c) => Ok(c),
            other => panic!("configured {other:?}"),
        }
    }

    #[test]
    fn weight_functions() {
        let info = FlowInfo::default();
        let step = Atcp::new(params("").unwrap(), &info);
        assert_eq!(step.weight_at(10_000_000, Nanos::ZERO), 3.0);
        assert_eq!(step.weight_at(10_000_001, Nanos::ZERO), 1.0);
        let lin = params("weight_function = \"linear\"\nthreshold_low = \"1MB\"\nthreshold_high = \"3MB\"").unwrap();
        let lin = Atcp::new(lin, &info);
        assert_eq!(lin.weight_at(2_000_000, Nanos::ZERO), 2.0);
        let exp = params("weight_function = \"exponential\"\nw_high = 4\nthreshold_low = 0\nthreshold_high = 100").unwrap();
        let exp = Atcp::new(exp, &info);
        assert!((exp.weight_at(50, Nanos::ZERO) - 2.0).abs() < 1e-12);
        let time = params("weight_function = \"time\"").unwrap();
        let time = Atcp::new(time, &FlowInfo { start: Nanos::from_nanos(1000), deadline: Some(Nanos::from_nanos(100)), ..Default::default() });
        assert!((time.weight_at(0, Nanos::from_nanos(1050)) - 2.0).abs() < 1e-12);
        assert_eq!(time.weight_at(0, Nanos::from_nanos(1101)), 0.5);
    }

    #[test]
    fn bad_parameters_are_named() {
        let e = params("weight_function = \"fixed\"").unwrap_err();
        assert!(e.contains("needs `weight`"), "{e}");
        let e = params("weight_function = \"fixed\"\nweight = 2\nthreshold = 5").unwrap_err();
        assert!(e.contains("`threshold` is not used"), "{e}");
        let e = params("weight_function = \"fixed\"\nweight = 0").unwrap_err();
        assert!(e.contains("positive"), "{e}");
    }

    #[test]
    fn halving_key() {
        assert_eq!(params("").unwrap().halving, Halving::PerEpisode);
        let c = params("weight_function = \"fixed\"\nweight = 2\nhalving = \"per-window\"").unwrap();
        assert_eq!(c.halving, Halving::PerWindow);
        assert!(!Atcp::new(c.clone(), &FlowInfo::default()).halves_once_per_episode());
        assert!(Atcp::new(params("").unwrap(), &FlowInfo::default()).halves_once_per_episode());
        // written back as scenario keys (flows' `params`), and read again to the same config
        let keys = AtcpKeys::from(c.clone());
        assert_eq!(keys.halving.as_deref(), Some("per-window"));
        assert_eq!(AtcpConfig::try_from(keys).unwrap(), c);
        let e = params("halving = \"sometimes\"").unwrap_err();
        assert!(e.contains("`halving`") && e.contains("per-episode, per-window"), "{e}");
    }

    #[test]
    fn weighted_increase_and_equivalence_with_reno_at_weight_one() {
        let cfg = |w: i64| params(&format!("weight_function = \"fixed\"\nweight = {w}")).unwrap();
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
