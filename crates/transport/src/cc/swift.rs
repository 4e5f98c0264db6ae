//! Swift (Kumar et al., "Swift: Delay is Simple and Effective for Congestion Control in the
//! Datacenter", SIGCOMM 2020): a window from the round-trip delay against a target that scales
//! with the path's hops and the flow's own window, on the `roce` transport.
//!
//! The target delay is `base_target + hops h + fs`, with `hops` the switches on the flow's
//! path, `h = base_target / hop_scale` and the flow-scaling term
//! `fs = clamp(fs_alpha / sqrt(cwnd) + fs_beta, 0, fs_range)` (cwnd in packets), where
//! `fs_alpha` and `fs_beta` make fs run from `fs_range` at `fs_min_cwnd` packets to 0 at
//! `fs_max_cwnd`: flows with small windows get larger targets, which evens out the share.
//!
//! On each acknowledgement with delay d (the round trip of the packet it answers):
//! - `d < target`: additive increase, `cwnd += ai mss acked / cwnd` (or `ai acked` below one
//!   packet);
//! - otherwise, at most once per round trip:
//!   `cwnd *= max(1 - beta (d - target) / d, 1 - max_mdf)`.
//!
//! A loss (a NACK) cuts by `1 - max_mdf` at most once per round trip; `retx_reset` timeouts in
//! a row bring the window to `min_cwnd`. The window stays between `min_cwnd` and `max_cwnd`;
//! below one packet the sender paces one packet per `rtt mss / cwnd`.
//!
//! Swift also keeps an endpoint window on the delay inside the receiving host. fctlab's hosts
//! deliver without delay, so only the fabric window is modelled. Defaults are htsim's
//! (`SwiftSrc`), the implementation the crosscheck compares with.

use super::{AckSample, CcState, CongestionControl, CongestionEvent, FlowInfo, Protocol, TransportKind, TransportPolicy};
use fctlab_engine::quantity::{Duration, Size};
use fctlab_engine::{BitsPerSec, Nanos};
use serde::{Deserialize, Serialize};

/// Swift's parameters (keys of `[transport.swift]`).
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct SwiftConfig {
    /// Additive increase, packets per round trip.
    pub swift_ai: f64,
    /// Multiplicative decrease factor.
    pub swift_beta: f64,
    /// The largest cut at once.
    pub max_mdf: f64,
    /// The base target delay.
    pub base_target: Duration,
    /// h = base_target / hop_scale per switch on the path.
    pub hop_scale: f64,
    /// The flow-scaling range, as a multiple of base_target.
    pub fs_range: f64,
    pub fs_min_cwnd: f64,
    pub fs_max_cwnd: f64,
    pub min_cwnd: Size,
    /// The largest window, packets.
    pub max_cwnd: f64,
    /// Timeouts in a row that bring the window to `min_cwnd`.
    pub retx_reset: u32,
    /// The first window; none: one base BDP (the line rate over the flow's base RTT).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub swift_initial_window: Option<Size>,
}

impl Default for SwiftConfig {
    fn default() -> Self {
        SwiftConfig {
            swift_ai: 1.0,
            swift_beta: 0.8,
            max_mdf: 0.5,
            base_target: Duration(Nanos::from_micros(20)),
            hop_scale: 6.55,
            fs_range: 5.0,
            fs_min_cwnd: 0.1,
            fs_max_cwnd: 100.0,
            min_cwnd: Size(10),
            max_cwnd: 1000.0,
            retx_reset: 5,
            swift_initial_window: None,
        }
    }
}

#[derive(Clone, Debug)]
pub struct Swift {
    ai: f64,
    beta: f64,
    max_mdf: f64,
    /// base_target + hops h, and the flow-scaling constants, nanoseconds.
    fixed_target: f64,
    fs_range: f64,
    fs_alpha: f64,
    fs_beta: f64,
    min_cwnd: f64,
    max_cwnd: f64,
    retx_reset: u32,
    mss: f64,
    /// The window, bytes (fractional).
    cwnd: f64,
    srtt: Option<f64>,
    last_decrease: Option<Nanos>,
    now: Nanos,
    retx: u32,
}

impl Protocol for Swift {
    const NAMES: &'static [&'static str] = &["swift"];
    const TRANSPORTS: &'static [TransportKind] = &[TransportKind::Roce];
    type Config = SwiftConfig;
    fn check(cfg: &SwiftConfig) -> Result<(), String> {
        if !(cfg.max_mdf > 0.0 && cfg.max_mdf < 1.0) {
            return Err(format!("`max_mdf` must be in (0, 1), got {}", cfg.max_mdf));
        }
        if !(cfg.fs_min_cwnd > 0.0 && cfg.fs_min_cwnd < cfg.fs_max_cwnd) {
            return Err("`fs_min_cwnd` must be positive and below `fs_max_cwnd`".into());
        }
        if cfg.hop_scale <= 0.0 {
            return Err("`hop_scale` must be positive".into());
        }
        if cfg.min_cwnd.0 == 0 {
            return Err("`min_cwnd` must be at least 1B".into());
        }
        Ok(())
    }
    fn new(cfg: &SwiftConfig, info: &FlowInfo) -> Self {
        let base = cfg.base_target.0.as_nanos() as f64;
        let fs_range = cfg.fs_range * base;
        let fs_alpha = fs_range / (1.0 / cfg.fs_min_cwnd.sqrt() - 1.0 / cfg.fs_max_cwnd.sqrt());
        let mss = info.mss_bytes.max(1) as f64;
        let bdp = (info.nic_rate.0 as u128 * info.base_rtt.as_nanos() as u128 / 8_000_000_000) as f64;
        let first = cfg.swift_initial_window.map_or(bdp, |s| s.0 as f64);
        let (min_cwnd, max_cwnd) = (cfg.min_cwnd.0 as f64, cfg.max_cwnd * mss);
        Swift {
            ai: cfg.swift_ai,
            beta: cfg.swift_beta,
            max_mdf: cfg.max_mdf,
            fixed_target: base + info.hops as f64 * base / cfg.hop_scale,
            fs_range,
            fs_alpha,
            fs_beta: -fs_alpha / cfg.fs_max_cwnd.sqrt(),
            min_cwnd,
            max_cwnd,
            retx_reset: cfg.retx_reset.max(1),
            mss,
            cwnd: first.clamp(min_cwnd, max_cwnd.max(min_cwnd)),
            srtt: None,
            last_decrease: None,
            now: Nanos::ZERO,
            retx: 0,
        }
    }
}

impl Swift {
    /// The target delay at the current window, nanoseconds.
    pub fn target(&self) -> f64 {
        let fs = (self.fs_alpha / (self.cwnd / self.mss).sqrt() + self.fs_beta).clamp(0.0, self.fs_range);
        self.fixed_target + fs
    }
    /// The window, bytes.
    pub fn window(&self) -> f64 {
        self.cwnd
    }

    /// A decrease is allowed once per round trip.
    fn can_decrease(&self) -> bool {
        match (self.last_decrease, self.srtt) {
            (Some(t), Some(rtt)) => (self.now.saturating_sub(t)).as_nanos() as f64 >= rtt,
            _ => true,
        }
    }

    fn set(&mut self, st: &mut CcState, cwnd: f64) {
        let cwnd = cwnd.clamp(self.min_cwnd, self.max_cwnd.max(self.min_cwnd));
        if cwnd < self.cwnd {
            self.last_decrease = Some(self.now);
        }
        self.cwnd = cwnd;
        st.cwnd_bytes = (cwnd.ceil() as u64).max(1);
    }
}

/// The window a flow starts with.
impl TransportPolicy for Swift {
    fn init(&mut self, st: &mut CcState) {
        st.cwnd_bytes = (self.cwnd.ceil() as u64).max(1);
    }
}

impl CongestionControl for Swift {
    fn on_ack(&mut self, st: &mut CcState, ack: &AckSample) {
        self.now = ack.now;
        self.retx = 0;
        let Some(rtt) = ack.rtt else { return };
        // (Whether a round trip has passed since the last cut is judged on the RTT before this
        // sample, as htsim does.)
        let can_decrease = self.can_decrease();
        let d = rtt.as_nanos() as f64;
        self.srtt = Some(self.srtt.map_or(d, |s| 0.875 * s + 0.125 * d));
        let target = self.target();
        if d < target {
            let acked = ack.acked_bytes as f64;
            let next = if self.cwnd >= self.mss {
                self.cwnd + self.ai * self.mss * acked / self.cwnd
            } else {
                self.cwnd + self.ai * acked
            };
            self.set(st, next);
        } else if can_decrease {
            let f = (1.0 - self.beta * (d - target) / d).max(1.0 - self.max_mdf);
            self.set(st, self.cwnd * f);
        }
    }
    fn on_congestion(&mut self, st: &mut CcState, ev: CongestionEvent) {
        match ev {
            CongestionEvent::Timeout { .. } => {
                self.retx += 1;
                if self.retx >= self.retx_reset {
                    self.set(st, self.min_cwnd);
                } else if self.can_decrease() {
                    self.set(st, self.cwnd * (1.0 - self.max_mdf));
                }
            }
            CongestionEvent::Loss { .. } if self.can_decrease() => self.set(st, self.cwnd * (1.0 - self.max_mdf)),
            _ => {}
        }
    }
    /// Below one packet of window: one packet per `rtt mss / cwnd`.
    fn pacing_rate(&self) -> Option<BitsPerSec> {
        match self.srtt {
            Some(rtt) if self.cwnd < self.mss => Some(BitsPerSec((self.cwnd * 8.0 / (rtt * 1e-9)).max(1.0) as u64)),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GBPS: u64 = 1_000_000_000;

    fn swift(hops: u32) -> (Swift, CcState) {
        let info = FlowInfo {
            nic_rate: BitsPerSec(100 * GBPS),
            base_rtt: Nanos::from_micros(8),
            hops,
            mss_bytes: 1000,
            ..Default::default()
        };
        let mut s = Swift::new(&SwiftConfig::default(), &info);
        let mut st = CcState { cwnd_bytes: 1, ssthresh_bytes: 1, mss_bytes: 1000 };
        s.init(&mut st);
        (s, st)
    }

    fn ack(s: &mut Swift, st: &mut CcState, at_us: u64, rtt_us: u64, acked: u64) {
        let a = AckSample { now: Nanos::from_micros(at_us), rtt: Some(Nanos::from_micros(rtt_us)), acked_bytes: acked, ..Default::default() };
        s.on_ack(st, &a);
    }

    #[test]
    fn the_target_grows_with_hops_and_with_a_smaller_window() {
        let (s, st) = swift(5);
        // 100 Gbps x 8 us = 100,000 B: 100 packets, where flow scaling ends.
        assert_eq!(st.cwnd_bytes, 100_000);
        let h = 20_000.0 / 6.55;
        assert!((s.target() - (20_000.0 + 5.0 * h)).abs() < 1e-6, "{}", s.target());
        let (mut small, _) = swift(5);
        small.cwnd = 100.0; // 0.1 packet: the whole range, 5 x 20 us
        assert!((small.target() - (20_000.0 + 5.0 * h + 100_000.0)).abs() < 1e-6);
        let (mut mid, _) = swift(5);
        mid.cwnd = 10_000.0; // 10 packets
        let alpha = 100_000.0 / (1.0 / 0.1f64.sqrt() - 1.0 / 10.0);
        let fs = alpha / 10f64.sqrt() - alpha / 10.0;
        assert!((mid.target() - (20_000.0 + 5.0 * h + fs)).abs() < 1e-6);
    }

    #[test]
    fn below_the_target_the_window_grows_one_packet_per_window() {
        let (mut s, mut st) = swift(0);
        ack(&mut s, &mut st, 100, 10, 100_000);
        // A window's worth acknowledged: one packet more.
        assert!((s.window() - 101_000.0).abs() < 1e-6);
    }

    #[test]
    fn above_the_target_the_window_falls_once_per_round_trip() {
        let (mut s, mut st) = swift(0);
        // 40 us against a 20 us target: 1 - 0.8 x 20 / 40 = 0.6.
        ack(&mut s, &mut st, 100, 40, 1000);
        assert!((s.window() - 60_000.0).abs() < 1e-6, "{}", s.window());
        // Again within one RTT: no second cut.
        ack(&mut s, &mut st, 110, 40, 1000);
        assert!((s.window() - 60_000.0).abs() < 1e-6);
        // A round trip later, a very late ACK: the cut is capped at max_mdf (one half).
        ack(&mut s, &mut st, 200, 1000, 1000);
        assert!((s.window() - 30_000.0).abs() < 1e-6, "{}", s.window());
        assert_eq!(st.cwnd_bytes, 30_000);
    }

    #[test]
    fn below_one_packet_the_sender_paces() {
        let (mut s, mut st) = swift(0);
        assert_eq!(s.pacing_rate(), None, "a window of packets sends at line rate");
        for k in 0..20 {
            ack(&mut s, &mut st, 1000 * (k + 1), 1000, 1000);
        }
        assert!(s.window() < 1000.0, "{}", s.window());
        let srtt = s.srtt.unwrap();
        let want = s.window() * 8.0 / (srtt * 1e-9);
        assert_eq!(s.pacing_rate(), Some(BitsPerSec(want as u64)));
    }

    #[test]
    fn timeouts_in_a_row_bring_the_window_to_its_floor() {
        let (mut s, mut st) = swift(0);
        for _ in 0..5 {
            s.on_congestion(&mut st, CongestionEvent::Timeout { flight_bytes: 0 });
        }
        assert_eq!(s.window(), 10.0);
    }
}
