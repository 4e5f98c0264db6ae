//! RACS, Router Assisted Capacity Sharing (the thesis's chapter 4): weighted processor
//! sharing at the routers, with weights from the flows' remaining sizes.
//!
//! Sender. A flow's weight is w = w_min + w_max exp(-a f_r) (eq. 4.1), f_r its remaining size
//! (bytes not yet sent, in segments); a long-lived flow has f_r infinite, so w = w_min, and
//! `weight` fixes w for experiments. Once per round t_trans a rate request travels on one of
//! its packets: w_c (the current weight), w_p (the weight of its previous request), an RTT
//! and the rate and t_trans fields that routers lower. The SYN is the first request
//! (w_p = 0): it admits the flow; the rate comes with the answer to the next request, one
//! round later, and the flow sends nothing before (thesis 4.2, "Incast & initial rate
//! assignment"). The FIN is the last (w_c = 0). A flow granted less than a segment per round
//! sends a header-only request each round. The header is 20 bytes (five 4-byte fields).
//!
//! Router (per output port, no per-flow state). Each request updates W += w_c - w_p (eq.
//! 4.3) and is granted R = w_c C / W (eq. 4.2) if that is below the rate field. Allocation is
//! slotted: W as it stood at the start of the current measurement interval t_p is the one
//! rates divide by, the running W collects the requests of the interval; t_p is the average
//! RTT that requests carry and goes back as t_trans (the smallest along the path). A grant
//! divides by the larger of the interval's W and the running W: the thesis admits a flow
//! with its SYN so that its first request, a round later, finds it counted, but with t_p equal
//! to the RTT that request can arrive before the next interval starts; the running W already
//! counts every admitted flow.
//!
//! Model choices the thesis leaves open, listed in docs/protocols.md: w_min = 1, w_max = 9,
//! a = 1/50 per segment (see `RacsConfig`); a request is processed as it is offered to a port,
//! before the buffer decides (so a request dropped there still counts there); the RTT average
//! and idle rules are RCP's ([`PortRtt`], `initial_rtt`, [`IDLE_INTERVALS`]).

use super::{AckSample, CcState, CongestionControl, CongestionEvent, FlowInfo, PortControl, PortInfo, PortRtt, PortView, Protocol, TransportPolicy, SendContext, IDLE_INTERVALS};
use fctlab_engine::quantity::Duration;
use fctlab_engine::{BitsPerSec, Nanos};
use fctlab_net::{PacketKind, RouterHeader};
use serde::{Deserialize, Serialize};

/// Bytes of the rate request on the wire (w_c, w_p, rate, RTT, t_trans).
pub const HEADER_BYTES: u8 = 20;

/// RACS's rate request (`HEADER_BYTES` on the wire): the sender's weight now and as last
/// advertised (w_c, w_p), the grant along the path (lowered to each port's w_c C / W), the
/// sender's RTT, and the smallest control interval along the path (t_trans).
#[derive(Copy, Clone, Debug, Default, PartialEq)]
pub struct RacsHeader {
    pub weight: f32,
    pub prev_weight: f32,
    /// Bits per second.
    pub rate_bps: u64,
    /// The sender's smoothed RTT (0: not measured yet).
    pub rtt_ns: u32,
    pub interval_ns: u32,
}

impl RacsHeader {
    /// `rate_bps` as a sender writes it: no port has granted a rate yet.
    pub const NO_RATE_YET: u64 = u64::MAX;
    /// `interval_ns` as a sender writes it: no port has given its control interval yet.
    pub const NO_INTERVAL_YET: u32 = u32::MAX;

    pub fn read(h: &RouterHeader) -> RacsHeader {
        RacsHeader { rate_bps: h.u64(0), weight: h.f32(2), prev_weight: h.f32(3), rtt_ns: h.u32(4), interval_ns: h.u32(5) }
    }
    pub fn write(&self, h: &mut RouterHeader) {
        h.set_u64(0, self.rate_bps);
        h.set_f32(2, self.weight);
        h.set_f32(3, self.prev_weight);
        h.set_u32(4, self.rtt_ns);
        h.set_u32(5, self.interval_ns);
        h.wire_bytes = HEADER_BYTES;
    }
    /// A packet's header carrying these fields.
    pub fn header(&self) -> RouterHeader {
        let mut h = RouterHeader::default();
        self.write(&mut h);
        h
    }
}

/// RACS's parameters.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct RacsConfig {
    /// w_min: the weight of a flow with much left to send (default 1).
    pub w_min: f64,
    /// w_max: added for a flow with nothing left (default 9: a flow's weight ranges over
    /// 1..10, the gain of SDC's class A over class C, G_AC = 10).
    pub w_max: f64,
    /// a, per segment of remaining size (default 1/50: the bonus falls by e at SDC's class-A
    /// threshold of 50 segments).
    pub a: f64,
    /// A fixed weight instead of eq. 4.1.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub weight: Option<f64>,
    /// The RTT a port assumes before a request has carried one.
    pub initial_rtt: Duration,
}

impl Default for RacsConfig {
    fn default() -> Self {
        RacsConfig { w_min: 1.0, w_max: 9.0, a: 0.02, weight: None, initial_rtt: Duration(Nanos::from_millis(1)) }
    }
}

impl RacsConfig {
    /// Eq. 4.1 for `remaining` segments (None: a long-lived flow).
    pub fn weight_of(&self, remaining: Option<f64>) -> f64 {
        match (self.weight, remaining) {
            (Some(w), _) => w,
            (None, Some(r)) => self.w_min + self.w_max * (-self.a * r).exp(),
            (None, None) => self.w_min,
        }
    }
}

/// The sender side.
#[derive(Clone, Debug)]
pub struct Racs {
    cfg: RacsConfig,
    nic_rate: BitsPerSec,
    rate: BitsPerSec,
    /// The weight of the last request (w_p of the next).
    last_weight: f64,
    /// The answer to the SYN has come back: the next answers carry rates.
    admitted: bool,
    t_trans: Option<Nanos>,
    next_request: Nanos,
}

impl Protocol for Racs {
    const NAMES: &'static [&'static str] = &["racs"];
    const ROUTER_ASSISTED: bool = true;
    type Config = RacsConfig;
    fn check(cfg: &RacsConfig) -> Result<(), String> {
        if !(cfg.w_min > 0.0 && cfg.w_min.is_finite()) {
            return Err("`w_min` must be a positive number".into());
        }
        if !(cfg.w_max >= 0.0 && cfg.w_max.is_finite()) {
            return Err("`w_max` must be zero or a positive number".into());
        }
        if !(cfg.a >= 0.0 && cfg.a.is_finite()) {
            return Err("`a` must be zero or a positive number (per segment)".into());
        }
        if cfg.weight.is_some_and(|w| !(w > 0.0 && w.is_finite())) {
            return Err("`weight` must be a positive number".into());
        }
        if cfg.initial_rtt.0 == Nanos::ZERO {
            return Err("`initial_rtt` must be above zero".into());
        }
        Ok(())
    }
    fn new(cfg: &RacsConfig, info: &FlowInfo) -> Self {
        Racs { cfg: cfg.clone(), nic_rate: info.nic_rate, rate: BitsPerSec(0), last_weight: 0.0, admitted: false, t_trans: None, next_request: Nanos::ZERO }
    }
    const PORT_KEYS: &'static [&'static str] = &["initial_rtt"];
    fn port(cfg: &RacsConfig, link: &PortInfo) -> Option<Box<dyn PortControl>> {
        Some(Box::new(RacsPort::new(cfg, link)))
    }
}

/// The transport as it is.
impl TransportPolicy for Racs {}

impl CongestionControl for Racs {
    fn on_ack(&mut self, _st: &mut CcState, _ack: &AckSample) {}
    /// Rates come from the routers: losses and echoes change nothing.
    fn on_congestion(&mut self, _st: &mut CcState, _ev: CongestionEvent) {}
    fn on_feedback(&mut self, _st: &mut CcState, hdr: &RouterHeader) {
        let hdr = RacsHeader::read(hdr);
        if hdr.interval_ns > 0 && hdr.interval_ns != RacsHeader::NO_INTERVAL_YET {
            self.t_trans = Some(Nanos::from_nanos(hdr.interval_ns as u64));
        }
        if !self.admitted {
            self.admitted = true; // the SYN's answer: admitted, no rate yet
            return;
        }
        if hdr.rate_bps > 0 {
            self.rate = BitsPerSec(hdr.rate_bps.min(self.nic_rate.0.max(1)));
        }
    }
    fn pacing_rate(&self) -> Option<BitsPerSec> {
        Some(self.rate)
    }
    fn stamp(&mut self, ctx: &SendContext, hdr: &mut RouterHeader) -> bool {
        let w_c = match ctx.kind {
            PacketKind::Fin => 0.0,
            PacketKind::Syn => self.weight_now(ctx),
            _ => {
                if ctx.now < self.next_request {
                    return false;
                }
                self.weight_now(ctx)
            }
        };
        let round = self.t_trans.or(ctx.srtt).unwrap_or(Nanos::ZERO);
        self.next_request = ctx.now + round;
        let h = RacsHeader {
            weight: w_c as f32,
            prev_weight: self.last_weight as f32,
            rate_bps: RacsHeader::NO_RATE_YET,
            rtt_ns: ctx.rtt_field(),
            interval_ns: RacsHeader::NO_INTERVAL_YET,
        };
        h.write(hdr);
        // What the routers added is what the next request takes back (f32 as on the wire).
        self.last_weight = h.weight as f64;
        true
    }
    fn round(&self) -> Option<Nanos> {
        self.t_trans
    }
    fn weight(&self) -> Option<f64> {
        Some(self.last_weight)
    }
}

impl Racs {
    fn weight_now(&self, ctx: &SendContext) -> f64 {
        let remaining = ctx.remaining().map(|b| b as f64 / ctx.mss_bytes.max(1) as f64);
        self.cfg.weight_of(remaining)
    }
}

/// The port side: the running W, the W of the current interval, the RTT average.
#[derive(Clone, Debug)]
pub struct RacsPort {
    capacity_bps: f64,
    /// W as requests update it.
    w_running: f64,
    /// W at the start of the interval: rates divide by it.
    w_slot: f64,
    rtt: PortRtt,
    packets: u64,
    idle: u32,
}

impl RacsPort {
    pub fn new(cfg: &RacsConfig, link: &PortInfo) -> RacsPort {
        RacsPort { capacity_bps: link.capacity.0 as f64, w_running: 0.0, w_slot: 0.0, rtt: PortRtt::new(cfg.initial_rtt.0), packets: 0, idle: 0 }
    }
    /// The running sum of weights (W of eq. 4.3).
    pub fn total_weight(&self) -> f64 {
        self.w_running
    }
    /// t_p: the measurement interval.
    pub fn t_p(&self) -> Nanos {
        self.rtt.interval()
    }
}

impl PortControl for RacsPort {
    fn on_packet(&mut self, _v: &PortView, kind: PacketKind, _wire_bytes: u32, raw: &mut RouterHeader) {
        self.packets += 1;
        if kind.is_reverse() {
            return;
        }
        let mut hdr = RacsHeader::read(raw);
        let (w_c, w_p) = (hdr.weight as f64, hdr.prev_weight as f64);
        self.w_running = (self.w_running + w_c - w_p).max(0.0);
        if self.w_running < 1e-6 {
            self.w_running = 0.0; // f32 weights leave crumbs
        }
        self.rtt.sample(hdr.rtt_ns);
        if w_c > 0.0 {
            // Flows admitted (or grown) since the interval began count too.
            let w = self.w_slot.max(self.w_running).max(w_c);
            let r = (w_c * self.capacity_bps / w) as u64;
            if r < hdr.rate_bps {
                hdr.rate_bps = r;
            }
        }
        let tp = self.t_p().as_nanos().min(u32::MAX as u64) as u32;
        if tp < hdr.interval_ns {
            hdr.interval_ns = tp;
        }
        hdr.write(raw);
    }

    fn on_tick(&mut self, v: &PortView) -> Option<Nanos> {
        self.w_slot = self.w_running;
        self.idle = if self.packets == 0 { self.idle + 1 } else { 0 };
        self.packets = 0;
        if self.idle >= IDLE_INTERVALS && v.queue_pkts == 0 {
            return None; // W stays: the flows it counts are silent, not gone
        }
        Some(self.t_p())
    }

    fn interval(&self) -> Nanos {
        self.t_p()
    }

    fn offered_rate(&self) -> Option<f64> {
        Some(if self.w_slot > 0.0 { self.capacity_bps / self.w_slot } else { self.capacity_bps })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn port() -> RacsPort {
        let cfg = RacsConfig { initial_rtt: Duration(Nanos::from_micros(100)), ..Default::default() };
        RacsPort::new(&cfg, &PortInfo { capacity: BitsPerSec(1_000_000_000), delay: Nanos::from_micros(25), host_nic: false })
    }

    fn request(p: &mut RacsPort, kind: PacketKind, w_c: f64, w_p: f64) -> RacsHeader {
        let mut h = RacsHeader { weight: w_c as f32, prev_weight: w_p as f32, rate_bps: u64::MAX, interval_ns: u32::MAX, ..Default::default() }.header();
        p.on_packet(&PortView::default(), kind, 64, &mut h);
        RacsHeader::read(&h)
    }

    fn tick(p: &mut RacsPort) {
        p.on_tick(&PortView::default());
    }

    /// W bookkeeping through joins, weight changes and leaves (eq. 4.3), and the slotted
    /// grant R = w C / W (eq. 4.2) with the W of the previous interval.
    #[test]
    fn weights_join_change_and_leave_without_per_flow_state() {
        let mut p = port();
        request(&mut p, PacketKind::Syn, 2.0, 0.0); // flow A joins with 2
        request(&mut p, PacketKind::Syn, 1.0, 0.0); // flow B joins with 1
        assert_eq!(p.total_weight(), 3.0);
        tick(&mut p);
        let a = request(&mut p, PacketKind::Data, 2.0, 2.0);
        let b = request(&mut p, PacketKind::Data, 1.0, 1.0);
        assert_eq!(a.rate_bps, 666_666_666);
        assert_eq!(b.rate_bps, 333_333_333);
        assert_eq!(a.interval_ns, 100_000);
        // A's weight rises to 5 as it drains: W becomes 6 at once, and the grant divides by the
        // larger of the interval's W (3) and the running W (6).
        let a = request(&mut p, PacketKind::Data, 5.0, 2.0);
        assert_eq!(p.total_weight(), 6.0);
        assert_eq!(a.rate_bps, 833_333_333);
        // A flow admitted by its SYN within the interval counts at once too.
        request(&mut p, PacketKind::Syn, 2.0, 0.0);
        assert_eq!(request(&mut p, PacketKind::Data, 1.0, 1.0).rate_bps, 125_000_000);
        request(&mut p, PacketKind::Fin, 0.0, 2.0);
        tick(&mut p);
        let b = request(&mut p, PacketKind::Data, 1.0, 1.0);
        assert_eq!(b.rate_bps, 166_666_666);
        // A leaves (FIN: w_c = 0): B has the link from the next interval on.
        request(&mut p, PacketKind::Fin, 0.0, 5.0);
        assert_eq!(p.total_weight(), 1.0);
        tick(&mut p);
        assert_eq!(request(&mut p, PacketKind::Data, 1.0, 1.0).rate_bps, 1_000_000_000);
        request(&mut p, PacketKind::Fin, 0.0, 1.0);
        assert_eq!(p.total_weight(), 0.0);
    }

    #[test]
    fn a_lower_grant_upstream_stays_and_echoes_are_not_read() {
        let mut p = port();
        request(&mut p, PacketKind::Syn, 1.0, 0.0);
        tick(&mut p);
        let mut h = RacsHeader { weight: 1.0, prev_weight: 1.0, rate_bps: 10, interval_ns: 50_000, ..Default::default() }.header();
        p.on_packet(&PortView::default(), PacketKind::Data, 64, &mut h);
        let back = RacsHeader::read(&h);
        assert_eq!((back.rate_bps, back.interval_ns), (10, 50_000));
        let mut echo = RacsHeader { weight: 7.0, ..Default::default() }.header();
        p.on_packet(&PortView::default(), PacketKind::Ack, 64, &mut echo);
        assert_eq!(p.total_weight(), 1.0);
    }

    #[test]
    fn weights_fall_with_the_remaining_size() {
        let c = RacsConfig::default();
        assert_eq!(c.weight_of(Some(0.0)), 10.0);
        assert!((c.weight_of(Some(50.0)) - (1.0 + 9.0 / std::f64::consts::E)).abs() < 1e-12);
        assert!(c.weight_of(Some(1000.0)) < 1.0 + 1e-7);
        assert_eq!(c.weight_of(None), 1.0);
        assert_eq!(RacsConfig { weight: Some(2.0), ..c }.weight_of(Some(0.0)), 2.0);
    }

    /// The sender's requests: SYN (w_p = 0), one per round, FIN (w_c = 0); the SYN's answer
    /// admits the flow without a rate, the next answer brings one.
    #[test]
    fn sender_requests_once_per_round_and_waits_for_its_first_rate() {
        let info = FlowInfo { nic_rate: BitsPerSec(1_000_000_000), size: Some(15_000), ..Default::default() };
        let mut s = Racs::new(&RacsConfig::default(), &info);
        let mut st = CcState { cwnd_bytes: 3000, ssthresh_bytes: u64::MAX, mss_bytes: 1500 };
        let ctx = |now: u64, kind, sent| SendContext { now: Nanos::from_nanos(now), kind, size: Some(15_000), bytes_sent: sent, seq: 0, snd_una: 0, sacked_bytes: 0, srtt: Some(Nanos::from_nanos(100_000)), mss_bytes: 1500 };
        let mut h = RouterHeader::default();
        assert!(s.stamp(&ctx(0, PacketKind::Syn, 0), &mut h));
        assert_eq!((RacsHeader::read(&h).prev_weight, h.wire_bytes), (0.0, HEADER_BYTES));
        let w_syn = RacsHeader::read(&h).weight;
        assert!((w_syn as f64 - (1.0 + 9.0 * (-0.02f64 * 10.0).exp())).abs() < 1e-5);
        s.on_feedback(&mut st, &RacsHeader { rate_bps: 500_000_000, interval_ns: 80_000, ..Default::default() }.header());
        assert_eq!(s.pacing_rate(), Some(BitsPerSec(0)), "the SYN's answer grants nothing");
        assert_eq!(s.round(), Some(Nanos::from_nanos(80_000)));
        let mut h = RouterHeader::default();
        assert!(s.stamp(&ctx(100_000, PacketKind::Data, 0), &mut h));
        assert_eq!(RacsHeader::read(&h).prev_weight, w_syn);
        s.on_feedback(&mut st, &RacsHeader { rate_bps: 500_000_000, interval_ns: 80_000, ..Default::default() }.header());
        assert_eq!(s.pacing_rate(), Some(BitsPerSec(500_000_000)));
        // Within the round, data packets carry no request.
        assert!(!s.stamp(&ctx(150_000, PacketKind::Data, 3000), &mut RouterHeader::default()));
        let mut h = RouterHeader::default();
        assert!(s.stamp(&ctx(180_000, PacketKind::Data, 3000), &mut h));
        let w = RacsHeader::read(&h).weight;
        let mut h = RouterHeader::default();
        assert!(s.stamp(&ctx(190_000, PacketKind::Fin, 15_000), &mut h));
        let h = RacsHeader::read(&h);
        assert_eq!((h.weight, h.prev_weight), (0.0, w));
    }
}
