//! SDC, Size-aware Delivery Control (the thesis's chapter 3): class-based AIMD whose classes
//! follow the flow's remaining size, with a router load factor as the congestion signal.
//!
//! Sender. Classes A, B, C (high to low) each have (gamma, alpha, beta); a flow is in class A
//! while at most `r_a_segments` remain to be sent, B up to `r_b_segments`, C beyond (a
//! long-lived flow is C), so it graduates to higher classes as it drains. Its window grows by
//! the factor (1 + gamma) per RTT until the first overload (eq. 3.1), then by alpha segments
//! per RTT while the load factor f it hears is below 1 (eq. 3.2), and falls to beta w when
//! f >= 1 (eq. 3.3), once per overload (no second cut within two RTTs of one). Dynamic remapping (section 3.2.1) from the
//! highest class active on the path: a flow of that class uses class A's parameters, the others
//! their own. (With A active: all keep theirs; B and C only: B uses A's, C its own; one class
//! alone: it uses A's.) Losses cut by beta too; a timeout goes back to one segment.
//!
//! Router (per output port, counters only). Every t_p the port computes
//! f = (lambda + q_av) / (C t_p) (eq. 3.4): lambda the bytes that arrived in the interval,
//! q_av the average queue (bytes) the interval's arrivals found. It counts the active flows of
//! each class: a packet carries the sender's class and the class it was last counted in, so a
//! SYN adds a flow, a FIN removes it and a flow that graduates moves its count. Each packet
//! leaves with the largest f and the highest active class along its path; the receiver echoes
//! both. With `stamp = "last"` each port writes its own f over the one the packet carries, so
//! the last port on the path decides (the thesis does not say how the f of several routers
//! combine; see `SdcStamp`). The thesis carries f in the ECN bits and the class in the ToS field: fctlab counts no
//! header bytes for them, and carries f unquantized.
//!
//! Parameters (section 3.4.5): thresholds 50 and 100 segments, gains G_AC = 10 and G_BC = 2
//! over class C's (alpha, beta) = (0.5, 0.5). Eq. 3.18 gives each class one equation for two
//! unknowns; fctlab keeps alpha at class C's and solves beta, and where beta would pass 0.9
//! (the top of the range the thesis names) it fixes beta = 0.9 and solves alpha: class A
//! (0.789, 0.9), class B (0.5, 0.714). gamma = 1 (doubling per RTT, as TCP's slow start) for
//! every class and t_p = the average RTT (the model's T = t_p) are fctlab's choices.

use super::{additive_increase, AckSample, CcState, CongestionControl, CongestionEvent, FlowInfo, PortControl, PortInfo, PortRtt, PortView, Protocol, TransportPolicy, SendContext, IDLE_INTERVALS};
use fctlab_engine::quantity::Duration;
use fctlab_engine::Nanos;
use fctlab_net::{PacketKind, RouterHeader};
use serde::{Deserialize, Serialize};

/// Class indices (A is the highest priority).
pub const A: usize = 0;
pub const B: usize = 1;
pub const C: usize = 2;

/// SDC's header: the sender's class now and as the ports last counted it, the largest load
/// factor and the highest active class along the path, and the sender's RTT. No bytes on the
/// wire (the thesis carries them in the ECN bits and the ToS field, see above).
#[derive(Copy, Clone, Debug, Default, PartialEq)]
pub struct SdcHeader {
    pub class: u8,
    pub prev_class: u8,
    pub top_class: u8,
    pub load: f32,
    /// The sender's smoothed RTT (0: not measured yet).
    pub rtt_ns: u32,
}

impl SdcHeader {
    pub fn read(h: &RouterHeader) -> SdcHeader {
        SdcHeader { load: h.f32(0), rtt_ns: h.u32(1), class: h.u8(2, 0), prev_class: h.u8(2, 1), top_class: h.u8(2, 2) }
    }
    pub fn write(&self, h: &mut RouterHeader) {
        h.set_f32(0, self.load);
        h.set_u32(1, self.rtt_ns);
        h.set_u8(2, 0, self.class);
        h.set_u8(2, 1, self.prev_class);
        h.set_u8(2, 2, self.top_class);
        h.wire_bytes = 0;
    }
    /// Only the fields ports change (`load`, `top_class`), back into `h`.
    #[inline]
    pub fn write_path(&self, h: &mut RouterHeader) {
        h.set_f32(0, self.load);
        h.set_u8(2, 2, self.top_class);
    }
    /// A packet's header carrying these fields.
    pub fn header(&self) -> RouterHeader {
        let mut h = RouterHeader::default();
        self.write(&mut h);
        h
    }
}

/// A class as the header numbers it: A = 3, B = 2, C = 1 (higher is more urgent; 0: none),
/// so that ports keep the highest with `max`.
pub fn wire_class(index: usize) -> u8 {
    3 - index as u8
}

/// The index of a header class (1..=3).
pub fn class_index(wire: u8) -> Option<usize> {
    (1..=3).contains(&wire).then(|| 3 - wire as usize)
}

/// How a port combines its load factor with the one a packet carries.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SdcStamp {
    /// The largest f along the path (a flow slows down for any overloaded port on it).
    #[default]
    Max,
    /// The f of the last port on the path (each port overwrites what the packet carries).
    Last,
}

/// SDC's parameters.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct SdcConfig {
    /// r_A: class A holds flows with at most this many segments left (default 50).
    pub r_a_segments: u64,
    /// r_B: class B up to this many (default 100).
    pub r_b_segments: u64,
    /// G_AC, the throughput gain of class A over class C (default 10).
    pub gain_ac: f64,
    /// G_BC (default 2).
    pub gain_bc: f64,
    /// Class C's additive increase, segments per RTT (default 0.5).
    pub alpha_c: f64,
    /// Class C's multiplicative decrease (default 0.5).
    pub beta_c: f64,
    /// The largest beta the derivation of classes A and B may use (default 0.9).
    pub beta_max: f64,
    /// Multiplicative increase per RTT before the first overload, every class (default 1).
    pub gamma: f64,
    /// Fixed AIMD parameters for every class instead (for experiments against the model).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub alpha: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub beta: Option<f64>,
    /// The measurement interval t_p of the ports (default: the average RTT they see).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub t_p: Option<Duration>,
    /// The RTT a port assumes before a packet has carried one.
    pub initial_rtt: Duration,
    /// Which load factor a packet carries: "max" along the path (default) or the "last" port's.
    pub stamp: SdcStamp,
}

impl Default for SdcConfig {
    fn default() -> Self {
        SdcConfig {
            r_a_segments: 50,
            r_b_segments: 100,
            gain_ac: 10.0,
            gain_bc: 2.0,
            alpha_c: 0.5,
            beta_c: 0.5,
            beta_max: 0.9,
            gamma: 1.0,
            alpha: None,
            beta: None,
            t_p: None,
            initial_rtt: Duration(Nanos::from_millis(1)),
            stamp: SdcStamp::Max,
        }
    }
}

/// (alpha, beta) of a class with throughput gain `gain` over a class with (`alpha_ref`,
/// `beta_ref`) by eq. 3.18: alpha kept at `alpha_ref` and beta solved, unless beta would exceed
/// `beta_max`; then beta = `beta_max` and alpha solved.
pub fn derive_class(gain: f64, alpha_ref: f64, beta_ref: f64, beta_max: f64) -> (f64, f64) {
    let k = gain * (1.0 + beta_ref) / (1.0 - beta_ref);
    let beta = (k - 1.0) / (k + 1.0);
    if beta <= beta_max {
        return (alpha_ref, beta);
    }
    let b = beta_max;
    (gain * alpha_ref * (1.0 - b) * (1.0 + beta_ref) / ((1.0 - beta_ref) * (1.0 + b)), b)
}

/// Eq. 3.18: the throughput gain of (a1, b1) over (a2, b2).
pub fn gain(a1: f64, b1: f64, a2: f64, b2: f64) -> f64 {
    a1 * (1.0 - b2) * (1.0 + b1) / (a2 * (1.0 - b1) * (1.0 + b2))
}

impl SdcConfig {
    /// (gamma, alpha, beta) of classes A, B, C.
    pub fn classes(&self) -> [(f64, f64, f64); 3] {
        if let (Some(a), Some(b)) = (self.alpha, self.beta) {
            return [(self.gamma, a, b); 3];
        }
        let (aa, ba) = derive_class(self.gain_ac, self.alpha_c, self.beta_c, self.beta_max);
        let (ab, bb) = derive_class(self.gain_bc, self.alpha_c, self.beta_c, self.beta_max);
        [(self.gamma, aa, ba), (self.gamma, ab, bb), (self.gamma, self.alpha_c, self.beta_c)]
    }
    /// The class of a flow with `remaining` bytes left to send (None: long-lived).
    pub fn class_of(&self, remaining: Option<u64>, mss: u64) -> usize {
        match remaining {
            None => C,
            Some(r) => {
                let segs = r.div_ceil(mss.max(1));
                if segs <= self.r_a_segments {
                    A
                } else if segs <= self.r_b_segments {
                    B
                } else {
                    C
                }
            }
        }
    }
}

/// The sender side.
#[derive(Clone, Debug)]
pub struct Sdc {
    cfg: SdcConfig,
    params: [(f64, f64, f64); 3],
    size: Option<u64>,
    class: usize,
    /// The class the ports last counted this flow in (header numbering; 0: none yet).
    counted: u8,
    /// Multiplicative increase until the first overload.
    mi: bool,
    load: f32,
    top: u8,
    /// No cut before this time (see `on_ack`).
    frozen_until: Nanos,
    rtt: Nanos,
    acc: u64,
}

impl Protocol for Sdc {
    const NAMES: &'static [&'static str] = &["sdc"];
    const ROUTER_ASSISTED: bool = true;
    type Config = SdcConfig;
    fn check(cfg: &SdcConfig) -> Result<(), String> {
        if cfg.r_a_segments == 0 || cfg.r_b_segments < cfg.r_a_segments {
            return Err("`r_a_segments` must be at least 1 and `r_b_segments` at least `r_a_segments`".into());
        }
        if !(cfg.gain_ac >= 1.0 && cfg.gain_bc >= 1.0 && cfg.gain_ac.is_finite() && cfg.gain_bc.is_finite()) {
            return Err("`gain_ac` and `gain_bc` must be numbers of at least 1".into());
        }
        if cfg.gain_ac < cfg.gain_bc {
            return Err("`gain_ac` must be at least `gain_bc` (class A is above class B)".into());
        }
        let beta_ok = |b: f64| b > 0.0 && b < 1.0;
        if !(cfg.alpha_c > 0.0 && cfg.alpha_c.is_finite() && beta_ok(cfg.beta_c) && beta_ok(cfg.beta_max)) {
            return Err("`alpha_c` must be positive, `beta_c` and `beta_max` between 0 and 1".into());
        }
        if !(cfg.gamma > 0.0 && cfg.gamma.is_finite()) {
            return Err("`gamma` must be a positive number".into());
        }
        match (cfg.alpha, cfg.beta) {
            (None, None) => {}
            (Some(a), Some(b)) if a > 0.0 && a.is_finite() && beta_ok(b) => {}
            (Some(_), Some(_)) => return Err("`alpha` must be positive and `beta` between 0 and 1".into()),
            _ => return Err("`alpha` and `beta` go together (fixed parameters for every class)".into()),
        }
        if cfg.initial_rtt.0 == Nanos::ZERO || cfg.t_p.is_some_and(|t| t.0 == Nanos::ZERO) {
            return Err("`initial_rtt` and `t_p` must be above zero".into());
        }
        Ok(())
    }
    fn new(cfg: &SdcConfig, info: &FlowInfo) -> Self {
        Sdc { cfg: cfg.clone(), params: cfg.classes(), size: info.size, class: C, counted: 0, mi: true, load: 0.0, top: 0, frozen_until: Nanos::ZERO, rtt: Nanos::ZERO, acc: 0 }
    }
    const PORT_KEYS: &'static [&'static str] = &["t_p", "initial_rtt", "stamp"];
    fn port(cfg: &SdcConfig, link: &PortInfo) -> Option<Box<dyn PortControl>> {
        Some(Box::new(SdcPort::new(cfg, link)))
    }
}

impl Sdc {
    /// The (gamma, alpha, beta) the flow uses now: class A's if its class is the highest active
    /// on its path, else its own.
    pub fn current(&self) -> (f64, f64, f64) {
        let top = class_index(self.top).unwrap_or(self.class);
        if self.class <= top {
            self.params[A]
        } else {
            self.params[self.class]
        }
    }
    pub fn class(&self) -> usize {
        self.class
    }
}

/// The transport as it is.
impl TransportPolicy for Sdc {}

impl CongestionControl for Sdc {
    fn on_ack(&mut self, st: &mut CcState, ack: &AckSample) {
        self.class = self.cfg.class_of(self.size.map(|s| s.saturating_sub(ack.bytes_sent)), st.mss_bytes);
        let (gamma, alpha, beta) = self.current();
        if let Some(r) = ack.rtt {
            self.rtt = r;
        }
        if self.load >= 1.0 {
            // One cut per overload: the load factor a packet brings back can describe the
            // interval before an earlier cut took effect (up to one interval of measurement
            // plus one RTT of feedback), so overload heard within two RTTs of a cut is the same
            // overload.
            if ack.now >= self.frozen_until {
                st.cwnd_bytes = ((st.cwnd_bytes as f64 * beta) as u64).max(st.mss_bytes);
                st.ssthresh_bytes = st.cwnd_bytes;
                self.mi = false;
                self.frozen_until = ack.now + self.rtt.mul(2);
            }
            return;
        }
        if self.mi {
            st.cwnd_bytes += (ack.acked_bytes.min(st.cwnd_bytes) as f64 * gamma) as u64;
        } else {
            additive_increase(st, ack.acked_bytes, alpha, &mut self.acc);
        }
    }
    fn on_congestion(&mut self, st: &mut CcState, ev: CongestionEvent) {
        let (_, _, beta) = self.current();
        self.mi = false;
        match ev {
            CongestionEvent::Loss { .. } | CongestionEvent::Ecn { .. } | CongestionEvent::Notification { .. } => {
                st.cwnd_bytes = ((st.cwnd_bytes as f64 * beta) as u64).max(2 * st.mss_bytes);
            }
            CongestionEvent::Timeout { .. } => st.cwnd_bytes = st.mss_bytes,
        }
        st.ssthresh_bytes = st.cwnd_bytes.max(2 * st.mss_bytes);
    }
    fn on_feedback(&mut self, _st: &mut CcState, hdr: &RouterHeader) {
        let hdr = SdcHeader::read(hdr);
        self.load = hdr.load;
        self.top = hdr.top_class;
    }
    fn stamp(&mut self, ctx: &SendContext, hdr: &mut RouterHeader) -> bool {
        let class = match ctx.kind {
            PacketKind::Fin => 0,
            _ => {
                self.class = self.cfg.class_of(ctx.remaining(), ctx.mss_bytes);
                wire_class(self.class)
            }
        };
        SdcHeader { class, prev_class: self.counted, rtt_ns: ctx.rtt_field(), ..SdcHeader::default() }.write(hdr);
        self.counted = class;
        true
    }
    fn weight(&self) -> Option<f64> {
        Some(wire_class(self.class) as f64)
    }
}

/// The port side: the load factor of the last interval and the active flows per class.
#[derive(Clone, Debug)]
pub struct SdcPort {
    capacity_bytes_per_s: f64,
    fixed_tp: Option<Nanos>,
    stamp: SdcStamp,
    rtt: PortRtt,
    /// Active flows of classes A, B, C.
    counts: [u32; 3],
    bytes_in: u64,
    queue_sum: u128,
    queue_samples: u64,
    last_tick: Nanos,
    /// f of the last completed interval.
    load: f64,
    idle: u32,
    stopped: bool,
}

impl SdcPort {
    pub fn new(cfg: &SdcConfig, link: &PortInfo) -> SdcPort {
        SdcPort {
            capacity_bytes_per_s: link.capacity.0 as f64 / 8.0,
            fixed_tp: cfg.t_p.map(|d| d.0),
            stamp: cfg.stamp,
            rtt: PortRtt::new(cfg.initial_rtt.0),
            counts: [0; 3],
            bytes_in: 0,
            queue_sum: 0,
            queue_samples: 0,
            last_tick: Nanos::ZERO,
            load: 0.0,
            idle: 0,
            stopped: true,
        }
    }
    /// Active flows of classes A, B, C.
    pub fn counts(&self) -> [u32; 3] {
        self.counts
    }
    pub fn load(&self) -> f64 {
        self.load
    }
    /// The highest active class, header numbering (0: none).
    pub fn top(&self) -> u8 {
        self.counts.iter().position(|&n| n > 0).map_or(0, wire_class)
    }
    /// Eq. 3.4 over an interval of `t_s` seconds.
    pub fn load_factor(&self, bytes_in: u64, q_av_bytes: f64, t_s: f64) -> f64 {
        (bytes_in as f64 + q_av_bytes) / (self.capacity_bytes_per_s * t_s)
    }
}

impl PortControl for SdcPort {
    fn on_packet(&mut self, v: &PortView, kind: PacketKind, wire_bytes: u32, raw: &mut RouterHeader) {
        if self.stopped {
            self.stopped = false;
            self.last_tick = v.now;
            self.bytes_in = 0;
            self.queue_sum = 0;
            self.queue_samples = 0;
        }
        self.bytes_in += wire_bytes as u64;
        self.queue_sum += v.queue_bytes as u128;
        self.queue_samples += 1;
        if kind.is_reverse() {
            return;
        }
        let mut hdr = SdcHeader::read(raw);
        if hdr.prev_class != hdr.class {
            if let Some(i) = class_index(hdr.prev_class) {
                self.counts[i] = self.counts[i].saturating_sub(1);
            }
            if let Some(i) = class_index(hdr.class) {
                self.counts[i] += 1;
            }
        }
        self.rtt.sample(hdr.rtt_ns);
        hdr.load = match self.stamp {
            SdcStamp::Max => hdr.load.max(self.load as f32),
            SdcStamp::Last => self.load as f32,
        };
        hdr.top_class = hdr.top_class.max(self.top());
        hdr.write_path(raw);
    }

    fn on_tick(&mut self, v: &PortView) -> Option<Nanos> {
        let t = v.now.saturating_sub(self.last_tick);
        if t > Nanos::ZERO {
            let q_av = if self.queue_samples > 0 { self.queue_sum as f64 / self.queue_samples as f64 } else { v.queue_bytes as f64 };
            self.load = self.load_factor(self.bytes_in, q_av, t.as_secs_f64());
        }
        self.idle = if self.queue_samples == 0 { self.idle + 1 } else { 0 };
        self.bytes_in = 0;
        self.queue_sum = 0;
        self.queue_samples = 0;
        self.last_tick = v.now;
        if self.idle >= IDLE_INTERVALS && v.queue_pkts == 0 {
            self.stopped = true;
            self.load = 0.0; // nothing arrives: no load (the class counts stay)
            return None;
        }
        Some(self.interval())
    }

    fn interval(&self) -> Nanos {
        self.fixed_tp.map_or_else(|| self.rtt.interval(), |t| t.max(Nanos::from_micros(1)))
    }

    fn class_counts(&self) -> Option<Vec<u32>> {
        Some(self.counts.to_vec())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fctlab_engine::BitsPerSec;

    #[test]
    fn default_classes_follow_eq_3_18() {
        let c = SdcConfig::default().classes();
        let (a, b, cc) = (c[A], c[B], c[C]);
        assert_eq!(cc, (1.0, 0.5, 0.5));
        assert_eq!(a.2, 0.9);
        assert!((a.1 - 0.5 * 10.0 * 0.1 * 1.5 / (0.5 * 1.9)).abs() < 1e-12);
        assert!((b.2 - 5.0 / 7.0).abs() < 1e-12 && b.1 == 0.5);
        assert!((gain(a.1, a.2, cc.1, cc.2) - 10.0).abs() < 1e-9);
        assert!((gain(b.1, b.2, cc.1, cc.2) - 2.0).abs() < 1e-9);
        // the thesis's ordering: A >= B >= C in every parameter
        assert!(a.1 >= b.1 && b.1 >= cc.1 && a.2 >= b.2 && b.2 >= cc.2);
    }

    #[test]
    fn classes_follow_the_remaining_size_and_remap_by_the_highest_active_class() {
        let cfg = SdcConfig::default();
        assert_eq!(cfg.class_of(Some(50 * 1000), 1000), A);
        assert_eq!(cfg.class_of(Some(50 * 1000 + 1), 1000), B);
        assert_eq!(cfg.class_of(Some(100 * 1000), 1000), B);
        assert_eq!(cfg.class_of(Some(100 * 1000 + 1), 1000), C);
        assert_eq!(cfg.class_of(None, 1000), C);
        let mut s = Sdc::new(&cfg, &FlowInfo::default());
        let p = cfg.classes();
        for (own, top, want) in [(C, A, C), (B, A, B), (A, A, A), (B, B, A), (C, B, C), (C, C, A)] {
            s.class = own;
            s.top = wire_class(top);
            assert_eq!(s.current(), p[want], "own {own} top {top}");
        }
    }

    /// Counters on hand-made packet sequences: SYNs add, a graduation moves, FINs remove; the
    /// highest active class and f go out on every packet.
    #[test]
    fn port_counts_classes_and_computes_the_load_factor() {
        let cfg = SdcConfig { initial_rtt: Duration(Nanos::from_micros(100)), ..Default::default() };
        let mut p = SdcPort::new(&cfg, &PortInfo { capacity: BitsPerSec(1_000_000_000), delay: Nanos::from_micros(25), host_nic: false });
        fn pkt(p: &mut SdcPort, kind: PacketKind, class: u8, prev: u8) -> SdcHeader {
            let mut h = SdcHeader { class, prev_class: prev, ..Default::default() }.header();
            p.on_packet(&PortView::default(), kind, 1000, &mut h);
            SdcHeader::read(&h)
        }
        let v = PortView::default();
        pkt(&mut p, PacketKind::Syn, wire_class(C), 0);
        pkt(&mut p, PacketKind::Syn, wire_class(B), 0);
        let h = pkt(&mut p, PacketKind::Data, wire_class(C), wire_class(C));
        assert_eq!(h.top_class, wire_class(B));
        pkt(&mut p, PacketKind::Data, wire_class(A), wire_class(B)); // the B flow graduates to A
        let h = pkt(&mut p, PacketKind::Data, wire_class(C), wire_class(C));
        assert_eq!(h.top_class, wire_class(A));
        assert_eq!(p.counts(), [1, 0, 1]);
        pkt(&mut p, PacketKind::Fin, 0, wire_class(A));
        pkt(&mut p, PacketKind::Fin, 0, wire_class(C));
        assert_eq!(p.counts(), [0, 0, 0]);
        assert_eq!(p.top(), 0);
        // echoes are not counted
        let mut echo = SdcHeader { class: wire_class(A), ..Default::default() }.header();
        p.on_packet(&v, PacketKind::Ack, 60, &mut echo);
        assert_eq!(p.counts(), [0, 0, 0]);
        // f = (lambda + q_av) / (C t_p): 7 packets of 1000 B (+60 B) in 100 us with no queue,
        // against 12 500 B of capacity
        p.on_tick(&PortView { now: Nanos::from_micros(100), ..Default::default() });
        assert!((p.load() - 7060.0 / 12_500.0).abs() < 1e-9, "{}", p.load());
        assert!((p.load_factor(10_000, 5_000.0, 100e-6) - 1.2).abs() < 1e-12);
    }

    #[test]
    fn sender_multiplies_until_overload_then_cuts_by_beta_once_per_window_and_adds_alpha() {
        let cfg = SdcConfig::default();
        let info = FlowInfo { size: None, ..Default::default() };
        let mut s = Sdc::new(&cfg, &info);
        let mut st = CcState { cwnd_bytes: 10_000, ssthresh_bytes: u64::MAX, mss_bytes: 1000 };
        let ack = |t_us: u64, nxt: u64| AckSample { now: Nanos::from_micros(t_us), acked_bytes: 1000, snd_nxt: nxt, rtt: Some(Nanos::from_micros(100)), ..Default::default() };
        // alone (top class = its own C): class A's parameters; MI doubles per window
        s.on_feedback(&mut st, &SdcHeader { top_class: wire_class(C), load: 0.5, ..Default::default() }.header());
        s.on_ack(&mut st, &ack(1000, 10_000));
        assert_eq!(st.cwnd_bytes, 11_000);
        s.on_feedback(&mut st, &SdcHeader { top_class: wire_class(C), load: 1.2, ..Default::default() }.header());
        s.on_ack(&mut st, &ack(2000, 20_000));
        assert_eq!(st.cwnd_bytes, 9900); // beta_A = 0.9
        s.on_ack(&mut st, &ack(2150, 21_000));
        assert_eq!(st.cwnd_bytes, 9900, "one cut per overload: none within two RTTs");
        s.on_ack(&mut st, &ack(2200, 21_000));
        assert_eq!(st.cwnd_bytes, 8910, "a new overload two RTTs later");
        st.cwnd_bytes = 9900;
        s.on_feedback(&mut st, &SdcHeader { top_class: wire_class(A), load: 0.5, ..Default::default() }.header());
        for k in 0..10 {
            s.on_ack(&mut st, &ack(21_000 + 1000 * k, 30_000));
        }
        // with class A active elsewhere, the long flow uses C's alpha = 0.5 segments per window
        assert_eq!(st.cwnd_bytes, 9900 + 500);
    }

    /// Two ports in a row, the first overloaded (f = 1.5) and the second not (f = 0.5): by
    /// default the packet leaves with the larger f, with `stamp = "last"` with the second's.
    #[test]
    fn the_load_factor_stamped_is_the_largest_or_the_last_ports() {
        fn loaded(stamp: SdcStamp, bytes: u64) -> SdcPort {
            let cfg = SdcConfig { t_p: Some(Duration(Nanos::from_micros(100))), stamp, ..Default::default() };
            let mut p = SdcPort::new(&cfg, &PortInfo { capacity: BitsPerSec(1_000_000_000), delay: Nanos::from_micros(25), host_nic: false });
            let mut h = SdcHeader::default().header();
            p.on_packet(&PortView::default(), PacketKind::Data, bytes as u32, &mut h);
            p.on_tick(&PortView { now: Nanos::from_micros(100), ..Default::default() });
            p
        }
        for (stamp, want) in [(SdcStamp::Max, 1.5f32), (SdcStamp::Last, 0.5)] {
            let (mut first, mut second) = (loaded(stamp, 18_750), loaded(stamp, 6_250));
            assert!((first.load() - 1.5).abs() < 1e-9 && (second.load() - 0.5).abs() < 1e-9);
            let mut h = SdcHeader { class: wire_class(C), prev_class: wire_class(C), ..Default::default() }.header();
            let v = PortView { now: Nanos::from_micros(150), ..Default::default() };
            first.on_packet(&v, PacketKind::Data, 1000, &mut h);
            assert_eq!(SdcHeader::read(&h).load, 1.5);
            second.on_packet(&v, PacketKind::Data, 1000, &mut h);
            assert_eq!(SdcHeader::read(&h).load, want, "{stamp:?}");
        }
        // the other way round (an idle port first) both readings give the overloaded port's f
        for stamp in [SdcStamp::Max, SdcStamp::Last] {
            let (mut first, mut second) = (loaded(stamp, 6_250), loaded(stamp, 18_750));
            let mut h = SdcHeader { class: wire_class(C), prev_class: wire_class(C), ..Default::default() }.header();
            let v = PortView { now: Nanos::from_micros(150), ..Default::default() };
            first.on_packet(&v, PacketKind::Data, 1000, &mut h);
            second.on_packet(&v, PacketKind::Data, 1000, &mut h);
            assert_eq!(SdcHeader::read(&h).load, 1.5, "{stamp:?}");
        }
        assert_eq!(SdcConfig::default().stamp, SdcStamp::Max);
    }

    #[test]
    fn stamps_carry_the_class_and_the_class_last_counted() {
        let cfg = SdcConfig::default();
        let mut s = Sdc::new(&cfg, &FlowInfo { size: Some(200_000), ..Default::default() });
        let ctx = |kind, sent| SendContext { now: Nanos::ZERO, kind, size: Some(200_000), bytes_sent: sent, seq: 0, snd_una: 0, sacked_bytes: 0, srtt: None, mss_bytes: 1000 };
        let mut h = RouterHeader::default();
        assert!(s.stamp(&ctx(PacketKind::Syn, 0), &mut h));
        assert_eq!((SdcHeader::read(&h).class, SdcHeader::read(&h).prev_class, h.wire_bytes), (wire_class(C), 0, 0));
        s.stamp(&ctx(PacketKind::Data, 150_000), &mut h); // 50 segments left: class A
        assert_eq!((SdcHeader::read(&h).class, SdcHeader::read(&h).prev_class), (wire_class(A), wire_class(C)));
        s.stamp(&ctx(PacketKind::Fin, 200_000), &mut h);
        assert_eq!((SdcHeader::read(&h).class, SdcHeader::read(&h).prev_class), (0, wire_class(A)));
    }
}
