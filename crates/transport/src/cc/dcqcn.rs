//! DCQCN (Zhu et al., "Congestion Control for Large-Scale RDMA Deployments", SIGCOMM 2015):
//! the rate-based congestion control of RoCEv2 NICs, on the `roce` transport.
//!
//! Switches mark packets by RED on the instantaneous queue (Kmin, Kmax, Pmax); the receiver
//! (notification point) turns a marked packet into a CNP, at most one per `cnp_interval` per
//! flow (the `roce` transport's receiver). The sender (reaction point) keeps a current rate
//! Rc, a target rate Rt and alpha, and starts at line rate:
//! - **On a CNP**: Rt = Rc, Rc = max(Rc (1 - alpha/2), `min_rate`), alpha = (1 - g) alpha + g;
//!   the increase stages, the byte counter and both timers start again.
//! - **Alpha timer**: every `alpha_timer` without a CNP, alpha = (1 - g) alpha.
//! - **Rate increase**: an event every `rate_timer` (the timer stage T counts them) and every
//!   `byte_counter` bytes sent (the byte-counter stage BC). On each: fast recovery while
//!   max(T, BC) <= F (`fast_recovery`): Rc = (Rt + Rc) / 2; hyper increase once
//!   min(T, BC) > F: Rt += (min(T, BC) - F) `rate_hai`, Rc = (Rt + Rc) / 2; additive increase
//!   otherwise: Rt += `rate_ai`, Rc = (Rt + Rc) / 2. Neither rate passes the line rate, and
//!   increases stop once Rc is there.
//!   Without a byte counter (`byte_counter = "0B"`), BC is taken as T - 1: F events of fast
//!   recovery, one of additive increase, then hyper increase.
//!
//! The timers are kept as times, not events: alpha's decay over k periods is applied when
//! alpha is next needed (the same arithmetic as k timer events), and the rate timer is the
//! algorithm's deadline ([`TransportPolicy::deadline`]), so a flow's rate rises on time even
//! while it sends nothing.
//!
//! Defaults: g, the timers, the byte counter, F and the CNP interval as the DCQCN paper and
//! htsim's `DCQCNSrc` set them (g = 1/256, 55 us, 55 us, 10 MB, 5, 50 us); the increase steps
//! and the floor as the HPCC paper's DCQCN runs set them (its ns-3 fork's `mix/config.txt`:
//! `RATE_AI 50Mb/s`, `RATE_HAI 100Mb/s`, `MIN_RATE 100Mb/s`). docs/lossless.md lists each.

use super::{CcState, CongestionControl, CongestionEvent, FlowInfo, Protocol, TransportKind, TransportPolicy};
use fctlab_engine::quantity::{Duration, Rate, Size};
use fctlab_engine::{BitsPerSec, Nanos};
use serde::{Deserialize, Serialize};

/// DCQCN's parameters (keys of `[transport.dcqcn]`).
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct DcqcnConfig {
    /// The gain of alpha's moving average (g).
    pub dcqcn_g: f64,
    /// Alpha decays once per this period without a CNP (K).
    pub alpha_timer: Duration,
    /// A rate-increase event per this period since the last CNP (T).
    pub rate_timer: Duration,
    /// A rate-increase event per this many bytes sent (B); 0: no byte counter.
    pub byte_counter: Size,
    /// Increase events of fast recovery (F).
    pub fast_recovery: u32,
    /// The target rate's additive increase (R_AI).
    pub rate_ai: Rate,
    /// The target rate's hyper increase per stage beyond F (R_HAI).
    pub rate_hai: Rate,
    /// The rate never falls below this.
    pub min_rate: Rate,
}

impl Default for DcqcnConfig {
    fn default() -> Self {
        DcqcnConfig {
            dcqcn_g: 1.0 / 256.0,
            alpha_timer: Duration(Nanos::from_micros(55)),
            rate_timer: Duration(Nanos::from_micros(55)),
            byte_counter: Size(10_000_000),
            fast_recovery: 5,
            rate_ai: Rate(BitsPerSec(50_000_000)),
            rate_hai: Rate(BitsPerSec(100_000_000)),
            min_rate: Rate(BitsPerSec(100_000_000)),
        }
    }
}

#[derive(Clone, Debug)]
pub struct Dcqcn {
    g: f64,
    alpha_timer: Nanos,
    rate_timer: Nanos,
    byte_counter: u64,
    f: u32,
    rai: f64,
    rhai: f64,
    min_rate: f64,
    line: f64,
    /// Current and target rates, bits per second.
    rc: f64,
    rt: f64,
    alpha: f64,
    /// The time alpha's timer started (the last CNP), and the periods since applied.
    alpha_since: Nanos,
    alpha_periods: u64,
    /// The timer and byte-counter stages, and the bytes counted towards the next event.
    t_stage: u32,
    bc_stage: u32,
    bytes: u64,
    /// The next rate-increase event of the timer (none before the first CNP, or at line rate).
    next_increase: Option<Nanos>,
    /// The latest time the transport gave (the CNP's time).
    now: Nanos,
}

impl Protocol for Dcqcn {
    const NAMES: &'static [&'static str] = &["dcqcn"];
    const TRANSPORTS: &'static [TransportKind] = &[TransportKind::Roce];
    const REQUIRES_ECN: bool = true;
    type Config = DcqcnConfig;
    fn check(cfg: &DcqcnConfig) -> Result<(), String> {
        if !(cfg.dcqcn_g > 0.0 && cfg.dcqcn_g <= 1.0) {
            return Err(format!("`dcqcn_g` must be in (0, 1], got {}", cfg.dcqcn_g));
        }
        for (key, d) in [("alpha_timer", cfg.alpha_timer), ("rate_timer", cfg.rate_timer)] {
            if d.0 == Nanos::ZERO {
                return Err(format!("`{key}` must be positive"));
            }
        }
        if cfg.min_rate.0 .0 == 0 {
            return Err("`min_rate` must be positive".into());
        }
        Ok(())
    }
    fn new(cfg: &DcqcnConfig, info: &FlowInfo) -> Self {
        let line = info.nic_rate.0 as f64;
        Dcqcn {
            g: cfg.dcqcn_g,
            alpha_timer: cfg.alpha_timer.0,
            rate_timer: cfg.rate_timer.0,
            byte_counter: cfg.byte_counter.0,
            f: cfg.fast_recovery,
            rai: cfg.rate_ai.0 .0 as f64,
            rhai: cfg.rate_hai.0 .0 as f64,
            min_rate: (cfg.min_rate.0 .0 as f64).min(line),
            line,
            rc: line,
            rt: line,
            alpha: 1.0,
            alpha_since: info.start,
            alpha_periods: 0,
            t_stage: 0,
            bc_stage: 0,
            bytes: 0,
            next_increase: None,
            now: info.start,
        }
    }
}

impl Dcqcn {
    /// Applies the alpha timer's periods that ended by `now`.
    fn decay_alpha(&mut self, now: Nanos) {
        let periods = now.saturating_sub(self.alpha_since).as_nanos() / self.alpha_timer.as_nanos().max(1);
        if periods > self.alpha_periods {
            let k = (periods - self.alpha_periods).min(i32::MAX as u64) as i32;
            self.alpha *= (1.0 - self.g).powi(k);
            self.alpha_periods = periods;
        }
    }

    /// One rate-increase event.
    fn increase(&mut self) {
        let t = self.t_stage;
        let (hi, lo) = if self.byte_counter == 0 {
            (t, t.saturating_sub(1))
        } else {
            (t.max(self.bc_stage), t.min(self.bc_stage))
        };
        if hi <= self.f {
            // fast recovery
        } else if lo > self.f {
            self.rt += (lo - self.f) as f64 * self.rhai;
        } else {
            self.rt += self.rai;
        }
        self.rt = self.rt.min(self.line);
        self.rc = ((self.rt + self.rc) / 2.0).min(self.line);
        if self.rc >= self.line {
            self.next_increase = None;
        }
    }

    /// The current rate, bits per second (for tests and traces).
    pub fn current_rate(&self) -> f64 {
        self.rc
    }
    /// The target rate, bits per second.
    pub fn target_rate(&self) -> f64 {
        self.rt
    }
    /// Alpha as of the last event.
    pub fn alpha(&self) -> f64 {
        self.alpha
    }
}

/// Its timers and its byte counter, which the `roce` transport runs.
impl TransportPolicy for Dcqcn {
    fn deadline(&self) -> Option<Nanos> {
        self.next_increase
    }

    fn on_timer(&mut self, _st: &mut CcState, now: Nanos) {
        self.now = now;
        while let Some(at) = self.next_increase.filter(|&at| at <= now) {
            self.t_stage = self.t_stage.saturating_add(1);
            self.next_increase = Some(at + self.rate_timer);
            self.increase();
        }
    }

    fn on_sent(&mut self, now: Nanos, wire_bytes: u64) {
        self.now = now;
        if self.byte_counter == 0 || self.rc >= self.line {
            return;
        }
        self.bytes += wire_bytes;
        if self.bytes >= self.byte_counter {
            self.bytes -= self.byte_counter;
            self.bc_stage = self.bc_stage.saturating_add(1);
            self.increase();
        }
    }
}

impl CongestionControl for Dcqcn {
    fn on_congestion(&mut self, _st: &mut CcState, ev: CongestionEvent) {
        if !matches!(ev, CongestionEvent::Notification { .. }) {
            return; // go-back-N recovers losses; the rate answers CNPs only
        }
        let now = self.now;
        self.decay_alpha(now);
        self.rt = self.rc;
        self.rc = (self.rc * (1.0 - self.alpha / 2.0)).max(self.min_rate);
        self.alpha = (1.0 - self.g) * self.alpha + self.g;
        self.alpha_since = now;
        self.alpha_periods = 0;
        self.t_stage = 0;
        self.bc_stage = 0;
        self.bytes = 0;
        self.next_increase = Some(now + self.rate_timer);
    }

    fn pacing_rate(&self) -> Option<BitsPerSec> {
        Some(BitsPerSec(self.rc.max(1.0) as u64))
    }

}

#[cfg(test)]
mod tests {
    use super::*;

    const GBPS: u64 = 1_000_000_000;

    fn dcqcn(cfg: DcqcnConfig) -> (Dcqcn, CcState) {
        let info = FlowInfo { nic_rate: BitsPerSec(100 * GBPS), ..Default::default() };
        (Dcqcn::new(&cfg, &info), CcState { cwnd_bytes: u64::MAX / 2, ssthresh_bytes: u64::MAX / 2, mss_bytes: 1000 })
    }

    fn cnp(d: &mut Dcqcn, st: &mut CcState, at: Nanos) {
        d.on_timer(st, at);
        d.on_congestion(st, CongestionEvent::Notification { flight_bytes: 0 });
    }

    #[test]
    fn the_first_cnp_halves_the_rate_and_keeps_the_target() {
        let (mut d, mut st) = dcqcn(DcqcnConfig::default());
        assert_eq!(d.pacing_rate(), Some(BitsPerSec(100 * GBPS)), "line rate from the start");
        assert_eq!(d.deadline(), None, "no timer before the first CNP");
        cnp(&mut d, &mut st, Nanos::from_micros(10));
        // alpha starts at 1: Rc = Rc (1 - 1/2); Rt = the rate before; alpha = (1-g) + g = 1.
        assert_eq!(d.current_rate(), 50e9);
        assert_eq!(d.target_rate(), 100e9);
        assert_eq!(d.alpha(), 1.0);
        assert_eq!(d.deadline(), Some(Nanos::from_micros(65)));
    }

    #[test]
    fn a_quiet_timer_recovers_half_the_gap_and_alpha_decays_per_period() {
        let (mut d, mut st) = dcqcn(DcqcnConfig::default());
        cnp(&mut d, &mut st, Nanos::ZERO);
        // One rate-timer period without a CNP: fast recovery, Rc = (Rt + Rc) / 2.
        d.on_timer(&mut st, Nanos::from_micros(55));
        assert_eq!(d.current_rate(), 75e9);
        assert_eq!(d.target_rate(), 100e9);
        // A second CNP 110 us after the first: alpha decayed over two periods first.
        cnp(&mut d, &mut st, Nanos::from_micros(110));
        let g = 1.0 / 256.0;
        let alpha_before = (1.0f64 - g).powi(2);
        // The timer fired again at 110 us (Rc = 87.5 G) before the CNP cut it.
        let rc = 87.5e9 * (1.0 - alpha_before / 2.0);
        assert!((d.current_rate() - rc).abs() < 1.0, "{} against {rc}", d.current_rate());
        assert!((d.alpha() - ((1.0 - g) * alpha_before + g)).abs() < 1e-12);
        assert_eq!(d.target_rate(), 87.5e9);
    }

    #[test]
    fn after_fast_recovery_the_target_rises_additively_then_hyper() {
        let cfg = DcqcnConfig { byte_counter: Size(0), fast_recovery: 2, ..Default::default() };
        let (mut d, mut st) = dcqcn(cfg);
        cnp(&mut d, &mut st, Nanos::ZERO);
        cnp(&mut d, &mut st, Nanos::from_nanos(1)); // Rt = 50 G, Rc = 25 G (alpha 1)
        let (rt0, mut rc) = (d.target_rate(), d.current_rate());
        assert_eq!((rt0, rc), (50e9, 25e9));
        let step = |d: &mut Dcqcn, st: &mut CcState, k: u64| d.on_timer(st, Nanos::from_nanos(1) + Nanos::from_micros(55 * k));
        // T = 1, 2: fast recovery, the target stays.
        for k in 1..=2 {
            step(&mut d, &mut st, k);
            rc = (rt0 + rc) / 2.0;
            assert_eq!((d.target_rate(), d.current_rate()), (rt0, rc));
        }
        // T = 3: one additive increase (BC is taken as T - 1 = 2 = F without a byte counter).
        step(&mut d, &mut st, 3);
        assert_eq!(d.target_rate(), rt0 + 50e6);
        // T = 4, 5: hyper increase by (min(T, BC) - F) R_HAI = 1, then 2 steps.
        step(&mut d, &mut st, 4);
        assert_eq!(d.target_rate(), rt0 + 50e6 + 100e6);
        step(&mut d, &mut st, 5);
        assert_eq!(d.target_rate(), rt0 + 50e6 + 100e6 + 200e6);
    }

    #[test]
    fn the_byte_counter_and_the_timer_make_additive_increase_between_them() {
        let cfg = DcqcnConfig { byte_counter: Size(10_000), fast_recovery: 1, ..Default::default() };
        let (mut d, mut st) = dcqcn(cfg);
        cnp(&mut d, &mut st, Nanos::ZERO);
        cnp(&mut d, &mut st, Nanos::from_nanos(1));
        let rt0 = d.target_rate();
        // Two timer events: T = 2 > F = 1, BC = 0: additive increase on the second.
        d.on_timer(&mut st, Nanos::from_nanos(1) + Nanos::from_micros(110));
        assert_eq!(d.target_rate(), rt0 + 50e6);
        // 20,000 bytes sent: BC = 2, min(T, BC) = 2 > F: hyper increase by (2 - 1) R_HAI.
        d.on_sent(Nanos::from_micros(120), 10_000);
        assert_eq!(d.target_rate(), rt0 + 50e6 + 50e6, "BC = 1: additive");
        d.on_sent(Nanos::from_micros(121), 10_000);
        assert_eq!(d.target_rate(), rt0 + 100e6 + 100e6);
    }

    #[test]
    fn the_rate_never_falls_below_the_floor_nor_rises_past_the_line() {
        let (mut d, mut st) = dcqcn(DcqcnConfig::default());
        for k in 0..200 {
            cnp(&mut d, &mut st, Nanos::from_nanos(k));
        }
        assert_eq!(d.current_rate(), 100e6);
        let mut t = Nanos::from_micros(1);
        for _ in 0..100_000 {
            t += Nanos::from_micros(55);
            d.on_timer(&mut st, t);
        }
        assert_eq!(d.current_rate(), 100e9);
        assert_eq!(d.deadline(), None, "at line rate the timer stops");
    }

    #[test]
    fn bad_parameters_are_refused_naming_the_key() {
        assert!(Dcqcn::check(&DcqcnConfig { dcqcn_g: 0.0, ..Default::default() }).unwrap_err().contains("dcqcn_g"));
        let e = Dcqcn::check(&DcqcnConfig { rate_timer: Duration(Nanos::ZERO), ..Default::default() }).unwrap_err();
        assert!(e.contains("rate_timer"), "{e}");
    }
}
