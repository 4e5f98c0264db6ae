//! DCTCP (RFC 8257; Alizadeh et al., SIGCOMM 2010).
//!
//! Switches mark CE when their queue exceeds a threshold K (`queue = "ecn"` with
//! `ecn_threshold`); the receiver echoes the marked bytes precisely (see `receiver.rs`: an ACK
//! is sent at once when the CE state of arriving segments changes, RFC 8257 section 3.2). The
//! sender keeps the fraction of marked bytes as a moving average `alpha` and, once per window
//! of data in which marks arrived, cuts the window by `alpha / 2`:
//!
//! - per window of data: `F = marked bytes / acked bytes`, `alpha = (1 - g) * alpha + g * F`
//!   (RFC 8257 section 3.3, steps 6-9);
//! - on an ECN echo (at most once per window): `cwnd = cwnd * (1 - alpha / 2)` (step 10),
//!   never below two segments (Linux's `dctcp_ssthresh` floor);
//! - losses and timeouts: as NewReno.
//!
//! Without marks DCTCP behaves exactly like NewReno.

use super::{additive_increase, slow_start, AckSample, CcState, CongestionControl, CongestionEvent, FlowInfo, Protocol, TransportPolicy};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct DctcpConfig {
    /// EWMA gain g (RFC 8257 recommends 1/16). Key `dctcp_g`.
    #[serde(rename = "dctcp_g")]
    pub g: f64,
    /// Initial alpha (RFC 8257: 1, the conservative choice). Key `dctcp_alpha_init`.
    #[serde(rename = "dctcp_alpha_init")]
    pub alpha_init: f64,
}

impl Default for DctcpConfig {
    fn default() -> Self {
        DctcpConfig { g: 1.0 / 16.0, alpha_init: 1.0 }
    }
}

impl Protocol for Dctcp {
    const NAMES: &'static [&'static str] = &["dctcp"];
    const REQUIRES_ECN: bool = true;
    type Config = DctcpConfig;
    fn check(cfg: &DctcpConfig) -> Result<(), String> {
        if !(cfg.g > 0.0 && cfg.g <= 1.0) {
            return Err(format!("`dctcp_g` must be in (0, 1], got {}", cfg.g));
        }
        if !(0.0..=1.0).contains(&cfg.alpha_init) {
            return Err(format!("`dctcp_alpha_init` must be in [0, 1], got {}", cfg.alpha_init));
        }
        Ok(())
    }
    fn new(cfg: &DctcpConfig, _info: &FlowInfo) -> Self {
        Dctcp::new(cfg.clone())
    }
}

#[derive(Clone, Debug)]
pub struct Dctcp {
    cfg: DctcpConfig,
    alpha: f64,
    acc_bytes: u64,
    /// End (snd_nxt) of the observation window; alpha is updated when snd_una passes it.
    window_end: u64,
    window_acked: u64,
    window_marked: u64,
}

impl Dctcp {
    pub fn new(cfg: DctcpConfig) -> Self {
        Dctcp { alpha: cfg.alpha_init, cfg, acc_bytes: 0, window_end: 0, window_acked: 0, window_marked: 0 }
    }
    pub fn alpha(&self) -> f64 {
        self.alpha
    }
}

/// The transport as it is.
impl TransportPolicy for Dctcp {}

impl CongestionControl for Dctcp {
    fn on_ack(&mut self, st: &mut CcState, ack: &AckSample) {
        self.window_acked += ack.acked_bytes;
        self.window_marked += ack.ce_bytes.min(ack.acked_bytes);
        if ack.snd_una > self.window_end {
            if self.window_acked > 0 {
                let f = self.window_marked as f64 / self.window_acked as f64;
                self.alpha = (1.0 - self.cfg.g) * self.alpha + self.cfg.g * f;
            }
            self.window_end = ack.snd_nxt;
            self.window_acked = 0;
            self.window_marked = 0;
        }
        let mut acked = ack.acked_bytes;
        if st.in_slow_start() {
            acked = slow_start(st, acked);
        }
        if acked > 0 {
            additive_increase(st, acked, 1.0, &mut self.acc_bytes);
        }
    }

    fn on_congestion(&mut self, st: &mut CcState, ev: CongestionEvent) {
        match ev {
            CongestionEvent::Ecn { .. } => {
                let cwnd = (st.cwnd_bytes as f64 * (1.0 - self.alpha / 2.0)) as u64;
                st.cwnd_bytes = cwnd.max(2 * st.mss_bytes);
                st.ssthresh_bytes = st.cwnd_bytes;
            }
            other => super::reno_decrease(st, other, 0.5),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1000;

    /// Feeds `windows` windows of 10 segments, marking `marked` of each window's 10 ACKs.
    fn feed(cc: &mut Dctcp, st: &mut CcState, windows: u64, marked: u64) {
        let mut una = 0u64;
        for _ in 0..windows {
            let nxt = una + 10 * MSS;
            for i in 0..10 {
                una += MSS;
                let ce = if i < marked { MSS } else { 0 };
                cc.on_ack(st, &AckSample { acked_bytes: MSS, ce_bytes: ce, ece: ce > 0, snd_una: una, snd_nxt: nxt + MSS, ..Default::default() });
            }
        }
    }

    #[test]
    fn alpha_tracks_the_marking_fraction() {
        for (marked, want) in [(0u64, 0.0f64), (3, 0.3), (10, 1.0)] {
            let mut cc = Dctcp::new(DctcpConfig { alpha_init: 1.0 - want.min(0.5), ..Default::default() });
            let mut st = CcState { cwnd_bytes: 10 * MSS, ssthresh_bytes: 10 * MSS, mss_bytes: MSS };
            feed(&mut cc, &mut st, 200, marked);
            assert!((cc.alpha() - want).abs() < 0.01, "marked {marked}/10: alpha {}", cc.alpha());
        }
    }

    #[test]
    fn alpha_follows_the_ewma_with_gain_g() {
        let mut cc = Dctcp::new(DctcpConfig { alpha_init: 0.0, ..Default::default() });
        let mut st = CcState { cwnd_bytes: 10 * MSS, ssthresh_bytes: 10 * MSS, mss_bytes: MSS };
        // Every byte marked: after n window updates alpha = 1 - (1 - g)^n.
        feed(&mut cc, &mut st, 5, 10);
        let n = 5.0; // one update per window (the first at its first ACK, since window_end starts at 0)
        let want = 1.0 - (1.0f64 - 1.0 / 16.0).powf(n);
        assert!((cc.alpha() - want).abs() < 0.02, "alpha {} want {want}", cc.alpha());
    }

    #[test]
    fn cut_is_alpha_over_two_and_without_marks_it_is_newreno() {
        let mut cc = Dctcp::new(DctcpConfig { alpha_init: 0.5, ..Default::default() });
        let mut st = CcState { cwnd_bytes: 100 * MSS, ssthresh_bytes: CcState::SSTHRESH_UNLIMITED, mss_bytes: MSS };
        cc.on_congestion(&mut st, CongestionEvent::Ecn { flight_bytes: 100 * MSS });
        assert_eq!(st.cwnd_bytes, 75 * MSS);
        // equivalence with NewReno when nothing is marked
        let mut reno = super::super::NewReno::new(super::super::newreno::NewRenoConfig {});
        let mut d = Dctcp::new(DctcpConfig::default());
        let (mut s1, mut s2) = (CcState { cwnd_bytes: 10 * MSS, ssthresh_bytes: 40 * MSS, mss_bytes: MSS }, CcState { cwnd_bytes: 10 * MSS, ssthresh_bytes: 40 * MSS, mss_bytes: MSS });
        for i in 1..500u64 {
            let a = AckSample { acked_bytes: MSS, snd_una: i * MSS, snd_nxt: (i + 10) * MSS, ..Default::default() };
            reno.on_ack(&mut s1, &a);
            d.on_ack(&mut s2, &a);
            assert_eq!(s1, s2);
        }
    }
}
