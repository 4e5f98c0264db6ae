//! D2TCP, deadline-aware data-center TCP (Vamanan, Hasan and Vijaykumar, "Deadline-aware
//! datacenter TCP", SIGCOMM 2012).
//!
//! DCTCP's window with a deadline-imminence factor in its reduction. The sender keeps DCTCP's
//! estimate `alpha` of the fraction of marked bytes (the same code and `dctcp_*` keys as
//! `protocol = "dctcp"`, RFC 8257 section 3.3) and, once per window in which marks arrived,
//! cuts the window by a penalty that depends on how close the flow is to its deadline
//! (section 3.1 of the paper):
//!
//! - d = Tc / D: Tc is the time the flow still needs at its current rate, D the time left
//!   to its deadline. As in the paper, Tc = B / (3/4 W) round trips (B the bytes not yet
//!   acknowledged, W the window: a window that saws between W/2 and W averages 3/4 W),
//!   here in seconds with the flow's smoothed RTT: Tc = B x SRTT / (3/4 W);
//! - d is kept within [`d2tcp_d_min`, `d2tcp_d_max`] = [0.5, 2], the paper's bounds;
//! - p = alpha^d, and on an ECN echo `cwnd = cwnd (1 - p / 2)`, never below two segments.
//!
//! A near-deadline flow (d > 1) has p < alpha and backs off less than DCTCP would; a
//! far-deadline flow (d < 1) backs off more. Flows without a deadline, long-lived flows and
//! flows before their first RTT sample use d = 1, which is DCTCP exactly. A flow whose deadline
//! has passed (D <= 0) uses the upper bound, the limit of Tc / D as D falls to zero; the paper
//! does not quench flows, and neither does this. Growth, losses and timeouts are DCTCP's
//! (NewReno's). Deadlines come from the flow's or the workload's `deadline`, relative to the
//! flow's start.

use super::dctcp::DctcpConfig;
use super::{AckSample, CcState, CongestionControl, CongestionEvent, Dctcp, FlowInfo, Protocol, TransportPolicy};
use fctlab_engine::Nanos;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct D2tcpConfig {
    /// DCTCP's EWMA gain g. Key `dctcp_g`.
    #[serde(rename = "dctcp_g")]
    pub g: f64,
    /// DCTCP's initial alpha. Key `dctcp_alpha_init`.
    #[serde(rename = "dctcp_alpha_init")]
    pub alpha_init: f64,
    /// Lower bound of the imminence factor d (the paper's 0.5). Key `d2tcp_d_min`.
    #[serde(rename = "d2tcp_d_min")]
    pub d_min: f64,
    /// Upper bound of d (the paper's 2). Key `d2tcp_d_max`.
    #[serde(rename = "d2tcp_d_max")]
    pub d_max: f64,
}

impl Default for D2tcpConfig {
    fn default() -> Self {
        let d = DctcpConfig::default();
        D2tcpConfig { g: d.g, alpha_init: d.alpha_init, d_min: 0.5, d_max: 2.0 }
    }
}

impl Protocol for D2tcp {
    const NAMES: &'static [&'static str] = &["d2tcp"];
    const REQUIRES_ECN: bool = true;
    type Config = D2tcpConfig;
    fn check(cfg: &D2tcpConfig) -> Result<(), String> {
        <Dctcp as Protocol>::check(&DctcpConfig { g: cfg.g, alpha_init: cfg.alpha_init })?;
        if !(cfg.d_min > 0.0 && cfg.d_min.is_finite()) {
            return Err(format!("`d2tcp_d_min` must be a positive number, got {}", cfg.d_min));
        }
        if !(cfg.d_max >= cfg.d_min && cfg.d_max.is_finite()) {
            return Err(format!(
                "`d2tcp_d_max` must be a number at least `d2tcp_d_min` ({}), got {}",
                cfg.d_min, cfg.d_max
            ));
        }
        Ok(())
    }
    fn new(cfg: &D2tcpConfig, info: &FlowInfo) -> Self {
        D2tcp {
            dctcp: Dctcp::new(DctcpConfig { g: cfg.g, alpha_init: cfg.alpha_init }),
            d_min: cfg.d_min,
            d_max: cfg.d_max,
            size: info.size,
            deadline_at: info.deadline.map(|d| info.start + d),
            srtt: None,
            now: info.start,
            snd_una: 0,
        }
    }
}

#[derive(Clone, Debug)]
pub struct D2tcp {
    dctcp: Dctcp,
    d_min: f64,
    d_max: f64,
    /// Bytes the flow sends (None: long-lived).
    size: Option<u64>,
    /// The absolute time of the deadline (None: no deadline).
    deadline_at: Option<Nanos>,
    /// Smoothed RTT of the ACKs' samples (gain 1/8, RFC 6298).
    srtt: Option<Nanos>,
    /// Time and cumulative ACK of the latest ACK (the reduction follows it).
    now: Nanos,
    snd_una: u64,
}

impl D2tcp {
    /// DCTCP's alpha.
    pub fn alpha(&self) -> f64 {
        self.dctcp.alpha()
    }

    /// The deadline-imminence factor d for `remaining` bytes not yet acknowledged, a window of
    /// `cwnd` bytes, a round trip of `srtt` and `left` until the deadline (None: no deadline),
    /// within [d_min, d_max].
    pub fn imminence(&self, remaining: u64, cwnd: u64, srtt: Nanos, left: Option<i128>) -> f64 {
        let Some(left_ns) = left else { return 1.0 };
        if left_ns <= 0 {
            return self.d_max;
        }
        // Tc = B / (3/4 W) round trips, in nanoseconds.
        let tc_ns = remaining as f64 * srtt.as_nanos() as f64 / (0.75 * cwnd.max(1) as f64);
        (tc_ns / left_ns as f64).clamp(self.d_min, self.d_max)
    }

    /// The factor d at the latest ACK: 1 without a deadline, a size or an RTT sample.
    pub fn current_imminence(&self, cwnd: u64) -> f64 {
        match (self.size, self.deadline_at, self.srtt) {
            (Some(size), Some(at), Some(srtt)) => {
                let left = at.as_nanos() as i128 - self.now.as_nanos() as i128;
                self.imminence(size.saturating_sub(self.snd_una), cwnd, srtt, Some(left))
            }
            _ => 1.0,
        }
    }
}

/// The penalty p = alpha^d (the paper's gamma correction).
pub fn penalty(alpha: f64, d: f64) -> f64 {
    alpha.clamp(0.0, 1.0).powf(d)
}

/// The window after an ECN echo: `cwnd (1 - p / 2)`, at least two segments.
pub fn reduced_window(cwnd_bytes: u64, p: f64, mss_bytes: u64) -> u64 {
    ((cwnd_bytes as f64 * (1.0 - p / 2.0)) as u64).max(2 * mss_bytes)
}

/// The transport as it is.
impl TransportPolicy for D2tcp {}

impl CongestionControl for D2tcp {
    fn on_ack(&mut self, st: &mut CcState, ack: &AckSample) {
        if let Some(r) = ack.rtt {
            self.srtt = Some(match self.srtt {
                None => r,
                Some(s) => Nanos::from_nanos((7 * s.as_nanos() + r.as_nanos()) / 8),
            });
        }
        self.now = ack.now;
        self.snd_una = ack.snd_una;
        self.dctcp.on_ack(st, ack)
    }

    fn on_congestion(&mut self, st: &mut CcState, ev: CongestionEvent) {
        match ev {
            CongestionEvent::Ecn { .. } => {
                let p = penalty(self.alpha(), self.current_imminence(st.cwnd_bytes));
                st.cwnd_bytes = reduced_window(st.cwnd_bytes, p, st.mss_bytes);
                st.ssthresh_bytes = st.cwnd_bytes;
            }
            other => self.dctcp.on_congestion(st, other),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1000;

    fn d2tcp(size: Option<u64>, deadline: Option<Nanos>, alpha: f64) -> D2tcp {
        let info = FlowInfo { size, deadline, ..Default::default() };
        D2tcp::new(&D2tcpConfig { alpha_init: alpha, ..Default::default() }, &info)
    }

    /// One ACK at `now` (us) that acknowledges up to `una` with an RTT sample of 100 us.
    fn ack(cc: &mut D2tcp, st: &mut CcState, now_us: u64, una: u64) {
        let a = AckSample {
            now: Nanos::from_micros(now_us),
            acked_bytes: 0,
            rtt: Some(Nanos::from_micros(100)),
            snd_una: una,
            snd_nxt: una,
            ..Default::default()
        };
        cc.on_ack(st, &a);
    }

    #[test]
    fn the_penalty_is_alpha_to_the_d_within_the_papers_bounds() {
        let cc = d2tcp(Some(100 * MSS), Some(Nanos::from_millis(10)), 0.5);
        let rtt = Nanos::from_micros(100);
        // 30 segments left, window 10: Tc = 30 / 7.5 = 4 round trips = 400 us.
        // 800 us left: d = 0.5; 400 us: d = 1; 200 us: d = 2.
        assert_eq!(cc.imminence(30 * MSS, 10 * MSS, rtt, Some(800_000)), 0.5);
        assert_eq!(cc.imminence(30 * MSS, 10 * MSS, rtt, Some(400_000)), 1.0);
        assert_eq!(cc.imminence(30 * MSS, 10 * MSS, rtt, Some(200_000)), 2.0);
        assert!((cc.imminence(30 * MSS, 10 * MSS, rtt, Some(320_000)) - 1.25).abs() < 1e-12);
        // Clamped: far from the deadline 0.5, very close (or past it) 2.
        assert_eq!(cc.imminence(30 * MSS, 10 * MSS, rtt, Some(1_000_000_000)), 0.5);
        assert_eq!(cc.imminence(30 * MSS, 10 * MSS, rtt, Some(1000)), 2.0);
        assert_eq!(cc.imminence(30 * MSS, 10 * MSS, rtt, Some(-5)), 2.0);
        // No deadline: d = 1.
        assert_eq!(cc.imminence(30 * MSS, 10 * MSS, rtt, None), 1.0);
        // p = alpha^d.
        assert!((penalty(0.25, 0.5) - 0.5).abs() < 1e-12);
        assert!((penalty(0.25, 1.0) - 0.25).abs() < 1e-12);
        assert!((penalty(0.25, 2.0) - 0.0625).abs() < 1e-12);
        assert_eq!(penalty(0.0, 0.5), 0.0);
        assert_eq!(penalty(1.0, 2.0), 1.0);
    }

    #[test]
    fn the_window_falls_by_p_over_two_near_deadlines_less_than_far_ones() {
        // alpha = 0.25, window 100 segments, 100 us round trips.
        let cut = |size: Option<u64>, deadline_us: Option<u64>| {
            let mut cc = d2tcp(size, deadline_us.map(Nanos::from_micros), 0.25);
            let mut st = CcState { cwnd_bytes: 100 * MSS, ssthresh_bytes: CcState::SSTHRESH_UNLIMITED, mss_bytes: MSS };
            ack(&mut cc, &mut st, 0, 0);
            cc.on_congestion(&mut st, CongestionEvent::Ecn { flight_bytes: 100 * MSS });
            assert_eq!(st.ssthresh_bytes, st.cwnd_bytes);
            st.cwnd_bytes
        };
        // 1500 segments left: Tc = 1500 / 75 = 20 round trips = 2 ms.
        // Deadline in 1 ms: d = 2, p = 1/16, cwnd 100 (1 - 1/32) = 96.875 segments.
        assert_eq!(cut(Some(1500 * MSS), Some(1000)), 96_875);
        // Deadline in 4 ms: d = 0.5, p = 1/2, cwnd 100 x 3/4.
        assert_eq!(cut(Some(1500 * MSS), Some(4000)), 75_000);
        // No deadline and long-lived flows: DCTCP's cut, alpha / 2.
        assert_eq!(cut(Some(1500 * MSS), None), 87_500);
        assert_eq!(cut(None, Some(1000)), 87_500);
        // Never below two segments.
        assert_eq!(reduced_window(2 * MSS, 1.0, MSS), 2 * MSS);
    }

    #[test]
    fn the_imminence_follows_the_acks_time_and_bytes_left() {
        let mut cc = d2tcp(Some(1500 * MSS), Some(Nanos::from_micros(4000)), 0.25);
        let mut st = CcState { cwnd_bytes: 100 * MSS, ssthresh_bytes: CcState::SSTHRESH_UNLIMITED, mss_bytes: MSS };
        ack(&mut cc, &mut st, 0, 0);
        assert_eq!(cc.current_imminence(100 * MSS), 0.5); // 2 ms of work, 4 ms left
        ack(&mut cc, &mut st, 3000, 0);
        assert_eq!(cc.current_imminence(100 * MSS), 2.0); // the same work, 1 ms left
        ack(&mut cc, &mut st, 3000, 1200 * MSS);
        // 300 segments left: Tc = 4 round trips = 400 us, 1 ms left: d = 0.4, clamped to 0.5.
        assert_eq!(cc.current_imminence(100 * MSS), 0.5);
    }

    #[test]
    fn without_a_deadline_it_is_dctcp() {
        let mut a = d2tcp(Some(10_000 * MSS), None, 1.0);
        let mut b = Dctcp::new(DctcpConfig::default());
        let mut s1 = CcState { cwnd_bytes: 10 * MSS, ssthresh_bytes: 40 * MSS, mss_bytes: MSS };
        let mut s2 = s1;
        for i in 1..400u64 {
            let marked = if i % 7 == 0 { MSS } else { 0 };
            let x = AckSample {
                acked_bytes: MSS,
                ce_bytes: marked,
                ece: marked > 0,
                rtt: Some(Nanos::from_micros(100)),
                snd_una: i * MSS,
                snd_nxt: (i + 10) * MSS,
                ..Default::default()
            };
            a.on_ack(&mut s1, &x);
            b.on_ack(&mut s2, &x);
            if marked > 0 {
                a.on_congestion(&mut s1, CongestionEvent::Ecn { flight_bytes: 10 * MSS });
                b.on_congestion(&mut s2, CongestionEvent::Ecn { flight_bytes: 10 * MSS });
            }
            assert_eq!(s1, s2);
            assert_eq!(a.alpha(), b.alpha());
        }
    }

    #[test]
    fn bad_bounds_are_refused_naming_the_key() {
        let bad = D2tcpConfig { d_min: 0.0, ..Default::default() };
        assert!(<D2tcp as Protocol>::check(&bad).unwrap_err().contains("d2tcp_d_min"));
        let bad = D2tcpConfig { d_min: 1.0, d_max: 0.9, ..Default::default() };
        assert!(<D2tcp as Protocol>::check(&bad).unwrap_err().contains("d2tcp_d_max"));
        let bad = D2tcpConfig { g: 0.0, ..Default::default() };
        assert!(<D2tcp as Protocol>::check(&bad).unwrap_err().contains("dctcp_g"));
        assert!(<D2tcp as Protocol>::check(&D2tcpConfig::default()).is_ok());
    }
}
