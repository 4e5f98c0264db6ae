//! CUBIC (RFC 9438; Ha, Rhee and Xu, "CUBIC: A New TCP-Friendly High-Speed TCP Variant",
//! SIGOPS OSR 2008), as Linux's `net/ipv4/tcp_cubic.c` computes it.
//!
//! After a congestion event the window grows along a cubic function of the time since the
//! event, centred on the window before it (W_max): fast far below W_max, flat near it, fast
//! again beyond (RFC 9438 section 4.2, eq. 1):
//!
//! - `W_cubic(t) = C (t - K)^3 + W_max`, with `K = cbrt((W_max - cwnd_epoch) / C)` (eq. 2), t in
//!   seconds since the epoch began, windows in segments, `C` = `cubic_c` (0.4);
//! - per ACK, the window moves towards `W_cubic(t + min RTT)`: it grows by one segment every
//!   `cnt = cwnd / (target - cwnd)` segments acknowledged (Linux's `bictcp_update` and
//!   `tcp_cong_avoid_ai`), at least every 2; at or above the target, one per `100 cwnd`;
//! - the Reno-friendly region (section 4.3): a Reno window `W_est` grows from cwnd_epoch by one
//!   segment per `cwnd / alpha_cubic` acknowledged (`alpha_cubic = 3 (1 - beta) / (1 + beta)`,
//!   Linux's `beta_scale`), and CUBIC grows at least as fast as it while it is ahead;
//! - before the first congestion event (no W_max), growth is at least one segment per 20
//!   acknowledged (Linux's initial limit);
//! - on loss or an ECN echo (section 4.6): `ssthresh = max(cwnd * beta, 2)` segments, `beta` =
//!   `cubic_beta` (0.7), and a new epoch; with fast convergence (section 4.7,
//!   `cubic_fast_convergence`), a window below the previous W_max lowers W_max to
//!   `cwnd (1 + beta) / 2`, else W_max is the window;
//! - on a timeout (section 4.8): ssthresh as above, the window one segment, and W_max and the
//!   epoch forgotten (Linux's `bictcp_reset` on entering Loss).
//!
//! Slow start is the simulator's (RFC 3465 byte counting, as `tcp`): HyStart++ is not modelled.
//! Differences from the kernel, all of timing granularity: time is the simulator's nanoseconds
//! (the kernel counts `t` and `K` in 1/1024 s and updates `cnt` at most once per jiffy, or when
//! the window changes, and `C` is the fixed point 410/1024 x 1/1024), the cube root is exact, and
//! an idle period does not shift the epoch (the kernel's `CA_EVENT_TX_START`).

use super::{slow_start, AckSample, CcState, CongestionControl, CongestionEvent, FlowInfo, Protocol, TransportPolicy};
use fctlab_engine::Nanos;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct CubicConfig {
    /// The multiplicative decrease factor beta (RFC 9438: 0.7; Linux: 717/1024). Key `cubic_beta`.
    #[serde(rename = "cubic_beta")]
    pub beta: f64,
    /// The cubic function's constant C, segments per second cubed (RFC 9438: 0.4). Key `cubic_c`.
    #[serde(rename = "cubic_c")]
    pub c: f64,
    /// Fast convergence (RFC 9438 section 4.7; on in Linux). Key `cubic_fast_convergence`.
    #[serde(rename = "cubic_fast_convergence")]
    pub fast_convergence: bool,
    /// The Reno-friendly region (RFC 9438 section 4.3; on in Linux). Key `cubic_reno_friendly`.
    #[serde(rename = "cubic_reno_friendly")]
    pub reno_friendly: bool,
}

impl Default for CubicConfig {
    fn default() -> Self {
        CubicConfig { beta: 0.7, c: 0.4, fast_convergence: true, reno_friendly: true }
    }
}

/// The state of one congestion-avoidance epoch (from a congestion event, or from leaving slow
/// start, to the next).
#[derive(Copy, Clone, Debug, PartialEq)]
struct Epoch {
    start: Nanos,
    /// K, seconds, and the window the cubic function is centred on (segments).
    k_s: f64,
    origin: f64,
    /// The Reno-friendly window W_est (segments), and segments acknowledged towards its growth.
    reno_cwnd: u64,
    reno_acked: u64,
}

#[derive(Clone, Debug)]
pub struct Cubic {
    cfg: CubicConfig,
    /// W_max, segments (0: no congestion event yet, or forgotten after a timeout).
    w_max: f64,
    epoch: Option<Epoch>,
    /// The smallest RTT measured (Linux's `delay_min`).
    min_rtt: Option<Nanos>,
    /// Bytes acknowledged not yet counted as whole segments, and segments counted towards the
    /// next increment (Linux's `snd_cwnd_cnt`).
    acked_bytes: u64,
    cwnd_cnt: u64,
    /// Linux's `beta_scale` (8 (1024 + beta) / 3 / (1024 - beta), beta in 1/1024): the Reno
    /// window grows by one segment per `cwnd * beta_scale / 8` segments acknowledged.
    beta_scale: u64,
}

impl Protocol for Cubic {
    const NAMES: &'static [&'static str] = &["cubic"];
    type Config = CubicConfig;
    fn check(cfg: &CubicConfig) -> Result<(), String> {
        if !(cfg.beta > 0.0 && cfg.beta < 1.0) {
            return Err(format!("`cubic_beta` must be in (0, 1), got {}", cfg.beta));
        }
        if !(cfg.c > 0.0 && cfg.c.is_finite()) {
            return Err(format!("`cubic_c` must be positive, got {}", cfg.c));
        }
        Ok(())
    }
    fn new(cfg: &CubicConfig, _info: &FlowInfo) -> Self {
        Cubic::new(cfg.clone())
    }
}

impl Cubic {
    pub fn new(cfg: CubicConfig) -> Self {
        let beta = (cfg.beta * 1024.0).round() as u64;
        let beta_scale = 8 * (1024 + beta) / 3 / (1024 - beta).max(1);
        Cubic { cfg, w_max: 0.0, epoch: None, min_rtt: None, acked_bytes: 0, cwnd_cnt: 0, beta_scale }
    }

    /// W_max, segments (0: none).
    pub fn w_max(&self) -> f64 {
        self.w_max
    }

    /// K of the current epoch, seconds (None outside one).
    pub fn k(&self) -> Option<f64> {
        self.epoch.map(|e| e.k_s)
    }

    /// `alpha_cubic` (RFC 9438 section 4.3) as Linux's integer `beta_scale` gives it: segments
    /// acknowledged per one-segment growth of the Reno window.
    fn reno_segments_per_increment(&self, cwnd: u64) -> u64 {
        ((cwnd * self.beta_scale) >> 3).max(1)
    }

    /// A new epoch at `now` with window `cwnd` (segments): K and the origin from W_max (eq. 2).
    fn start_epoch(&mut self, now: Nanos, cwnd: u64) -> Epoch {
        let (k_s, origin) = if self.w_max <= cwnd as f64 {
            (0.0, cwnd as f64)
        } else {
            (((self.w_max - cwnd as f64) / self.cfg.c).cbrt(), self.w_max)
        };
        Epoch { start: now, k_s, origin, reno_cwnd: cwnd, reno_acked: 0 }
    }

    /// Segments to acknowledge per one-segment increment of the window (Linux's `ca->cnt`).
    fn segments_per_increment(&mut self, now: Nanos, cwnd: u64, acked: u64) -> u64 {
        let mut e = match self.epoch {
            Some(e) => e,
            None => self.start_epoch(now, cwnd),
        };
        // Time since the epoch began, one minimum RTT ahead (the window the ACKs now sent will
        // meet: RFC 9438 section 4.2, W_cubic(t + RTT)).
        let t = now.saturating_sub(e.start).as_secs_f64() + self.min_rtt.map_or(0.0, |r| r.as_secs_f64());
        let target = (e.origin + self.cfg.c * (t - e.k_s).powi(3)).max(0.0).floor() as u64;
        let mut cnt = if target > cwnd { cwnd / (target - cwnd) } else { 100 * cwnd };
        if self.w_max == 0.0 {
            cnt = cnt.min(20);
        }
        if self.cfg.reno_friendly {
            e.reno_acked += acked;
            let per = self.reno_segments_per_increment(cwnd);
            e.reno_cwnd += e.reno_acked / per;
            e.reno_acked %= per;
            if e.reno_cwnd > cwnd {
                cnt = cnt.min(cwnd / (e.reno_cwnd - cwnd));
            }
        }
        self.epoch = Some(e);
        cnt.max(2)
    }

    /// W_max and ssthresh (segments) at a congestion event with window `cwnd` (segments):
    /// Linux's `bictcp_recalc_ssthresh`.
    fn reduce(&mut self, cwnd: u64) -> u64 {
        self.epoch = None;
        self.w_max = if self.cfg.fast_convergence && (cwnd as f64) < self.w_max {
            cwnd as f64 * (1.0 + self.cfg.beta) / 2.0
        } else {
            cwnd as f64
        };
        ((cwnd as f64 * self.cfg.beta) as u64).max(2)
    }
}

/// The transport as it is.
impl TransportPolicy for Cubic {}

impl CongestionControl for Cubic {
    fn on_ack(&mut self, st: &mut CcState, ack: &AckSample) {
        if let Some(r) = ack.rtt.filter(|r| *r > Nanos::ZERO) {
            self.min_rtt = Some(self.min_rtt.map_or(r, |m| m.min(r)));
        }
        let mut acked = ack.acked_bytes;
        if st.in_slow_start() {
            acked = slow_start(st, acked);
            if acked == 0 {
                return;
            }
        }
        let mss = st.mss_bytes.max(1);
        self.acked_bytes += acked;
        let segments = self.acked_bytes / mss;
        self.acked_bytes %= mss;
        if segments == 0 {
            return;
        }
        let cwnd = (st.cwnd_bytes / mss).max(1);
        let cnt = self.segments_per_increment(ack.now, cwnd, segments);
        // tcp_cong_avoid_ai(tp, cnt, acked)
        let mut grown = 0;
        if self.cwnd_cnt >= cnt {
            self.cwnd_cnt = 0;
            grown += 1;
        }
        self.cwnd_cnt += segments;
        if self.cwnd_cnt >= cnt {
            grown += self.cwnd_cnt / cnt;
            self.cwnd_cnt %= cnt;
        }
        st.cwnd_bytes += grown * mss;
    }

    fn on_congestion(&mut self, st: &mut CcState, ev: CongestionEvent) {
        let mss = st.mss_bytes.max(1);
        let ssthresh = self.reduce((st.cwnd_bytes / mss).max(1)) * mss;
        st.ssthresh_bytes = ssthresh;
        self.cwnd_cnt = 0;
        match ev {
            CongestionEvent::Loss { .. } | CongestionEvent::Ecn { .. } | CongestionEvent::Notification { .. } => {
                st.cwnd_bytes = ssthresh
            }
            CongestionEvent::Timeout { .. } => {
                st.cwnd_bytes = mss;
                self.w_max = 0.0;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1000;

    fn state(cwnd: u64, ssthresh: u64) -> CcState {
        CcState { cwnd_bytes: cwnd * MSS, ssthresh_bytes: ssthresh * MSS, mss_bytes: MSS }
    }

    /// One ACK of one segment at `t_ms`, with an RTT sample of `rtt_us`.
    fn ack(cc: &mut Cubic, st: &mut CcState, t_ms: f64, rtt_us: u64) {
        let now = Nanos::from_secs_f64(t_ms / 1e3);
        let rtt = Some(Nanos::from_micros(rtt_us));
        cc.on_ack(st, &AckSample { now, acked_bytes: MSS, rtt, ..Default::default() });
    }

    #[test]
    fn a_loss_keeps_beta_of_the_window_and_k_follows_eq_2() {
        let mut cc = Cubic::new(CubicConfig::default());
        let mut st = state(100, 50);
        cc.on_congestion(&mut st, CongestionEvent::Loss { flight_bytes: 100 * MSS });
        assert_eq!((st.cwnd_bytes, st.ssthresh_bytes), (70 * MSS, 70 * MSS));
        assert_eq!(cc.w_max(), 100.0);
        // The next ACK starts the epoch: K = cbrt((W_max - cwnd) / C) = cbrt(30 / 0.4).
        ack(&mut cc, &mut st, 0.0, 100);
        let k = cc.k().unwrap();
        assert!((k - (30.0f64 / 0.4).cbrt()).abs() < 1e-9, "K = {k}");
    }

    #[test]
    fn fast_convergence_lowers_w_max_when_the_window_did_not_regain_it() {
        let mut cc = Cubic::new(CubicConfig::default());
        let mut st = state(100, 50);
        cc.on_congestion(&mut st, CongestionEvent::Loss { flight_bytes: 0 });
        // A second loss at 80 segments, below W_max = 100: W_max = 80 (1 + 0.7) / 2 = 68.
        st.cwnd_bytes = 80 * MSS;
        cc.on_congestion(&mut st, CongestionEvent::Ecn { flight_bytes: 0 });
        assert!((cc.w_max() - 68.0).abs() < 1e-9, "{}", cc.w_max());
        assert_eq!(st.cwnd_bytes, 56 * MSS);
        let mut slow = Cubic::new(CubicConfig { fast_convergence: false, ..Default::default() });
        let mut st = state(100, 50);
        slow.on_congestion(&mut st, CongestionEvent::Loss { flight_bytes: 0 });
        st.cwnd_bytes = 80 * MSS;
        slow.on_congestion(&mut st, CongestionEvent::Loss { flight_bytes: 0 });
        assert_eq!(slow.w_max(), 80.0);
    }

    /// The window over time after a loss at W_max = 100, one segment acknowledged per 100 us
    /// (the RTT): returns (seconds, segments) every 50 ms for `secs`.
    fn trajectory(cfg: CubicConfig, secs: f64) -> Vec<(f64, u64)> {
        let mut cc = Cubic::new(cfg);
        let mut st = state(100, 50);
        cc.on_congestion(&mut st, CongestionEvent::Loss { flight_bytes: 0 });
        let mut out = Vec::new();
        let steps = (secs * 1e4) as u64;
        for i in 0..=steps {
            ack(&mut cc, &mut st, i as f64 * 0.1, 100);
            if i % 500 == 0 {
                out.push((i as f64 * 1e-4, st.cwnd_bytes / MSS));
            }
        }
        out
    }

    #[test]
    fn the_window_follows_the_cubic_concave_then_convex_around_w_max() {
        // Without the Reno-friendly region the window tracks W_cubic(t) = C (t - K)^3 + W_max,
        // K = 4.2 s: it regains W_max at K and leaves it faster and faster beyond.
        let cfg = CubicConfig { reno_friendly: false, ..Default::default() };
        let k = (30.0f64 / 0.4).cbrt();
        for (t, w) in trajectory(cfg, 6.0) {
            let expect = 100.0 + 0.4 * (t + 1e-4 - k).powi(3);
            // one ACK per 100 us lets the window grow by at most 1 segment per 0.2 ms (cnt >= 2)
            assert!((w as f64 - expect).abs() <= 2.0 + 0.02 * expect, "t = {t:.2} s: window {w}, W_cubic {expect:.1}");
        }
    }

    #[test]
    fn in_the_reno_friendly_region_the_window_grows_at_least_as_renos_with_alpha_cubic() {
        // ACKs every 100 us: in 1 s, 10,000 segments acknowledged. The cubic curve reaches
        // W_cubic(1 s) = 100 + 0.4 (1 - 4.22)^3 = 86.6 segments; Reno's window from 70, one
        // segment per window / alpha_cubic acknowledged, gets well beyond it.
        let friendly = trajectory(CubicConfig::default(), 1.0);
        let plain = trajectory(CubicConfig { reno_friendly: false, ..Default::default() }, 1.0);
        let (w_f, w_p) = (friendly.last().unwrap().1, plain.last().unwrap().1);
        let cubic = 100.0 + 0.4 * (1.0 + 1e-4 - (30.0f64 / 0.4).cbrt()).powi(3);
        assert!((w_p as f64 - cubic).abs() <= 3.0, "window {w_p}, W_cubic {cubic:.1}");
        // The Reno window: dW/dn = alpha / W, so W^2 - 70^2 = 2 alpha n with n = 10,000.
        let alpha = 8.0 / 15.0; // Linux's beta_scale = 15
        let reno = (70.0f64 * 70.0 + 2.0 * alpha * 10_000.0).sqrt();
        assert!((w_f as f64 - reno).abs() <= 0.05 * reno, "window {w_f}, Reno-friendly {reno:.1}");
    }

    #[test]
    fn a_timeout_restarts_from_one_segment_and_forgets_w_max() {
        let mut cc = Cubic::new(CubicConfig::default());
        let mut st = state(100, 1000);
        cc.on_congestion(&mut st, CongestionEvent::Timeout { flight_bytes: 0 });
        assert_eq!((st.cwnd_bytes, st.ssthresh_bytes, cc.w_max()), (MSS, 70 * MSS, 0.0));
        // Slow start below ssthresh, as TCP's.
        ack(&mut cc, &mut st, 0.0, 100);
        assert_eq!(st.cwnd_bytes, 2 * MSS);
    }

    #[test]
    fn before_any_loss_growth_is_at_least_one_segment_per_20_acknowledged() {
        let mut cc = Cubic::new(CubicConfig { reno_friendly: false, ..Default::default() });
        let mut st = state(100, 100);
        for i in 0..200 {
            ack(&mut cc, &mut st, i as f64 * 0.1, 100);
        }
        assert!(st.cwnd_bytes >= 109 * MSS, "{}", st.cwnd_bytes / MSS);
    }

    #[test]
    fn the_parameters_are_checked() {
        let check = |cfg: CubicConfig| <Cubic as Protocol>::check(&cfg);
        assert!(check(CubicConfig::default()).is_ok());
        assert!(check(CubicConfig { beta: 1.0, ..Default::default() }).unwrap_err().contains("cubic_beta"));
        assert!(check(CubicConfig { c: 0.0, ..Default::default() }).unwrap_err().contains("cubic_c"));
    }
}
