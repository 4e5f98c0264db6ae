//! TIMELY (Mittal et al., "TIMELY: RTT-based Congestion Control for the Datacenter",
//! SIGCOMM 2015): a rate from the gradient of the round-trip time, on the `roce` transport.
//!
//! Once per round trip (when an acknowledgement covers the data sent at the last update), with
//! `rtt` the round trip of the packet it answers and `prev` the one of the last update:
//! - the difference `rtt - prev` enters a moving average with gain `timely_alpha`, and the
//!   gradient is that average over `min_rtt`;
//! - below `t_low`, the rate rises by `rate_ai` (by `rate_hai` after five rises in a row);
//! - above `t_high`, it falls to `R (1 - beta (1 - t_high / rtt))`;
//! - between them, a gradient of zero or less raises it as below `t_low`, and a positive one
//!   lowers it to `R (1 - beta gradient)` (not below zero).
//!
//! The rate stays between `min_rate` and the line rate, and starts at line rate. This is the
//! algorithm as the HPCC ns-3 fork runs it (`RdmaHw::UpdateRateTimely`), the paper's
//! per-completion-event update taken once per round trip.

use super::{AckSample, CcState, CongestionControl, FlowInfo, Protocol, TransportKind, TransportPolicy};
use fctlab_engine::quantity::{Duration, Rate};
use fctlab_engine::{BitsPerSec, Nanos};
use serde::{Deserialize, Serialize};

/// TIMELY's parameters (keys of `[transport.timely]`).
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct TimelyConfig {
    /// The gain of the RTT difference's moving average.
    pub timely_alpha: f64,
    /// The multiplicative decrease factor.
    pub timely_beta: f64,
    pub t_low: Duration,
    pub t_high: Duration,
    /// The RTT that normalizes the gradient.
    pub min_rtt: Duration,
    /// The additive step (delta); none: 0.1% of the line rate (the fork's `run.py`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timely_rate_ai: Option<Rate>,
    /// The step after five rises in a row; none: five additive steps.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timely_rate_hai: Option<Rate>,
    pub timely_min_rate: Rate,
}

impl Default for TimelyConfig {
    fn default() -> Self {
        TimelyConfig {
            timely_alpha: 0.875,
            timely_beta: 0.8,
            t_low: Duration(Nanos::from_micros(50)),
            t_high: Duration(Nanos::from_micros(500)),
            min_rtt: Duration(Nanos::from_micros(20)),
            timely_rate_ai: None,
            timely_rate_hai: None,
            timely_min_rate: Rate(BitsPerSec(100_000_000)),
        }
    }
}

#[derive(Clone, Debug)]
pub struct Timely {
    alpha: f64,
    beta: f64,
    t_low: f64,
    t_high: f64,
    min_rtt: f64,
    rai: f64,
    rhai: f64,
    min_rate: f64,
    line: f64,
    rate: f64,
    /// Rises in a row.
    stage: u32,
    /// The moving average of the RTT difference, nanoseconds.
    rtt_diff: f64,
    /// The RTT at the last update, nanoseconds, and snd_nxt then (0: none yet).
    last_rtt: f64,
    last_update_seq: u64,
}

impl Protocol for Timely {
    const NAMES: &'static [&'static str] = &["timely"];
    const TRANSPORTS: &'static [TransportKind] = &[TransportKind::Roce];
    type Config = TimelyConfig;
    fn check(cfg: &TimelyConfig) -> Result<(), String> {
        for (key, v) in [("timely_alpha", cfg.timely_alpha), ("timely_beta", cfg.timely_beta)] {
            if !(v > 0.0 && v <= 1.0) {
                return Err(format!("`{key}` must be in (0, 1], got {v}"));
            }
        }
        if cfg.t_low.0 >= cfg.t_high.0 {
            return Err(format!("`t_low` ({}) must be below `t_high` ({})", cfg.t_low.0, cfg.t_high.0));
        }
        if cfg.min_rtt.0 == Nanos::ZERO {
            return Err("`min_rtt` must be positive".into());
        }
        if cfg.timely_min_rate.0 .0 == 0 {
            return Err("`timely_min_rate` must be positive".into());
        }
        Ok(())
    }
    fn new(cfg: &TimelyConfig, info: &FlowInfo) -> Self {
        let line = info.nic_rate.0 as f64;
        let rai = cfg.timely_rate_ai.map_or(line * 0.001, |r| r.0 .0 as f64);
        Timely {
            alpha: cfg.timely_alpha,
            beta: cfg.timely_beta,
            t_low: cfg.t_low.0.as_nanos() as f64,
            t_high: cfg.t_high.0.as_nanos() as f64,
            min_rtt: cfg.min_rtt.0.as_nanos() as f64,
            rai,
            rhai: cfg.timely_rate_hai.map_or(5.0 * rai, |r| r.0 .0 as f64),
            min_rate: (cfg.timely_min_rate.0 .0 as f64).min(line),
            line,
            rate: line,
            stage: 0,
            rtt_diff: 0.0,
            last_rtt: 0.0,
            last_update_seq: 0,
        }
    }
}

impl Timely {
    /// The rate in use, bits per second.
    pub fn rate(&self) -> f64 {
        self.rate
    }

    /// One update on an RTT of `rtt` nanoseconds.
    fn update(&mut self, rtt: f64) {
        let diff = (1.0 - self.alpha) * self.rtt_diff + self.alpha * (rtt - self.last_rtt);
        let gradient = diff / self.min_rtt;
        let cut = if rtt < self.t_low {
            None
        } else if rtt > self.t_high {
            Some(1.0 - self.beta * (1.0 - self.t_high / rtt))
        } else if gradient <= 0.0 {
            None
        } else {
            Some((1.0 - self.beta * gradient).max(0.0))
        };
        match cut {
            None => {
                self.rate = (self.rate + if self.stage < 5 { self.rai } else { self.rhai }).min(self.line);
                self.stage += 1;
            }
            Some(c) => {
                self.rate = (self.rate * c).max(self.min_rate);
                self.stage = 0;
            }
        }
        self.rtt_diff = diff;
    }
}

/// The transport as it is.
impl TransportPolicy for Timely {}

impl CongestionControl for Timely {
    fn on_ack(&mut self, _st: &mut CcState, ack: &AckSample) {
        let Some(rtt) = ack.rtt else { return };
        if ack.snd_una <= self.last_update_seq {
            return;
        }
        let rtt = rtt.as_nanos() as f64;
        if self.last_update_seq != 0 {
            self.update(rtt);
        }
        self.last_update_seq = ack.snd_nxt;
        self.last_rtt = rtt;
    }
    fn pacing_rate(&self) -> Option<BitsPerSec> {
        Some(BitsPerSec(self.rate as u64))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GBPS: u64 = 1_000_000_000;

    fn timely() -> Timely {
        Timely::new(&TimelyConfig::default(), &FlowInfo { nic_rate: BitsPerSec(100 * GBPS), ..Default::default() })
    }

    fn ack(t: &mut Timely, snd_una: u64, snd_nxt: u64, rtt_us: u64) {
        let mut st = CcState { cwnd_bytes: 1, ssthresh_bytes: 1, mss_bytes: 1000 };
        t.on_ack(&mut st, &AckSample { snd_una, snd_nxt, rtt: Some(Nanos::from_micros(rtt_us)), ..Default::default() });
    }

    #[test]
    fn above_t_high_the_rate_falls_in_proportion_to_the_excess() {
        let mut t = timely();
        ack(&mut t, 1000, 10_000, 30);
        assert_eq!(t.rate(), 100e9, "the first RTT sets the reference");
        ack(&mut t, 10_001, 20_000, 1000);
        // 1 - 0.8 (1 - 500/1000) = 0.6
        assert!((t.rate() - 60e9).abs() < 1.0, "{}", t.rate());
    }

    #[test]
    fn a_rising_rtt_between_the_thresholds_cuts_by_its_gradient() {
        let mut t = timely();
        ack(&mut t, 1000, 10_000, 60);
        // +10 us: the average difference 0.875 x 10 us, the gradient 8.75 / 20.
        ack(&mut t, 10_001, 20_000, 70);
        let want = 100e9 * (1.0 - 0.8 * (0.875 * 10.0 / 20.0));
        assert!((t.rate() - want).abs() < 1.0, "{} against {want}", t.rate());
        // Acknowledgements within the same round change nothing.
        ack(&mut t, 15_000, 21_000, 400);
        assert!((t.rate() - want).abs() < 1.0);
    }

    #[test]
    fn below_t_low_five_additive_steps_then_hyper_steps() {
        let mut t = timely();
        ack(&mut t, 1000, 10_000, 60);
        ack(&mut t, 10_001, 20_000, 500); // a steep rise: the rate falls to the floor first
        let low = t.rate();
        let mut seq = 20_000;
        let mut rates = vec![];
        for _ in 0..7 {
            ack(&mut t, seq + 1, seq + 10_000, 30);
            seq += 10_000;
            rates.push(t.rate());
        }
        let step = 100e9 * 0.001;
        for (i, r) in rates[..5].iter().enumerate() {
            assert!((r - (low + (i + 1) as f64 * step)).abs() < 1.0, "{rates:?}");
        }
        assert!((rates[5] - (rates[4] + 5.0 * step)).abs() < 1.0, "{rates:?}");
        assert!((rates[6] - (rates[5] + 5.0 * step)).abs() < 1.0, "{rates:?}");
    }

    #[test]
    fn bad_thresholds_are_refused() {
        let cfg = TimelyConfig { t_low: Duration(Nanos::from_micros(600)), ..Default::default() };
        assert!(Timely::check(&cfg).unwrap_err().contains("`t_low`"));
    }
}
