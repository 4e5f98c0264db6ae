//! RCP, the Rate Control Protocol (Dukkipati and McKeown; the thesis's rate-based baseline).
//!
//! Every output port offers one rate R to every flow through it and updates it once per
//! control interval T:
//!
//! R(t) = R(t - T) [1 + (T/d) (a (C - y(t)) - b q(t)/d) / C]
//!
//! with C the link rate, y the rate of the traffic that arrived over the interval, q the
//! persistent queue (bits: the smallest queue a packet found on arrival during the interval,
//! XCP's definition, from which RCP's router descends; the queue at the tick when no packet
//! came) and d the average RTT of the flows through the
//! port: a running average of the RTT field their packets carry. T is d. R stays between
//! one 1500-byte packet per d and C (RCP's ns-2 router clips lower, at `min_pprtt_` = 0.01
//! of a 1000-byte packet per average RTT; docs/protocols.md lists this difference and the
//! others from that reference).
//!
//! A packet carries the RCP header (rate, RTT, and the rate echoed back: 12 bytes on data
//! packets and on the ACKs that echo it); each port lowers the rate field to its R. The
//! sender paces at the rate the last ACK (or the SYN-ACK, for a new flow) brought back, so a
//! new flow starts at the rate of its path; it does not react to loss (repairs are paced too).
//!
//! Model choices the papers leave open, listed in docs/protocols.md: the RTT average is an
//! exponential average over packets with gain [`RTT_GAIN`](super::RTT_GAIN); a port that has seen no RTT yet
//! uses `initial_rtt`; a port that has never carried traffic offers
//! `initial_rate_fraction` x C (0.05 C: `init_rate_fact_` of RCP's ns-2 router), so flows that
//! start together at a fresh port do not all start at line rate; a port that stopped after
//! being idle starts again at R = C (the value its update rule reaches on an idle link, in
//! ns-2's router as here); y counts every packet carrying an RCP
//! header (data, requests, and the ACKs that echo one), so other traffic enters only through q.

use super::{AckSample, CcState, CongestionControl, CongestionEvent, FlowInfo, PortControl, PortInfo, PortRtt, PortView, Protocol, TransportPolicy, SendContext, IDLE_INTERVALS};
use fctlab_engine::quantity::Duration;
use fctlab_engine::{BitsPerSec, Nanos};
use fctlab_net::{PacketKind, RouterHeader};
use serde::{Deserialize, Serialize};

/// Bytes of the RCP header on the wire (rate, RTT, reverse rate: 4 bytes each).
pub const HEADER_BYTES: u8 = 12;

/// RCP's header (`HEADER_BYTES` on the wire): the lowest rate offered along the path, which
/// each port lowers to its R, and the sender's RTT estimate, from which ports average d.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct RcpHeader {
    /// Bits per second.
    pub rate_bps: u64,
    /// The sender's smoothed RTT (0: not measured yet).
    pub rtt_ns: u32,
}

impl RcpHeader {
    /// `rate_bps` as a sender writes it: no port has offered a rate yet (each port keeps the
    /// smaller of its rate and this, so the first port's rate replaces it).
    pub const NO_RATE_YET: u64 = u64::MAX;

    pub fn read(h: &RouterHeader) -> RcpHeader {
        RcpHeader { rate_bps: h.u64(0), rtt_ns: h.u32(2) }
    }
    pub fn write(&self, h: &mut RouterHeader) {
        h.set_u64(0, self.rate_bps);
        h.set_u32(2, self.rtt_ns);
        h.wire_bytes = HEADER_BYTES;
    }
    /// A packet's header carrying these fields.
    pub fn header(&self) -> RouterHeader {
        let mut h = RouterHeader::default();
        self.write(&mut h);
        h
    }
}
/// The lowest rate a port offers is this many bits per average RTT (one 1500-byte packet).
pub const MIN_BITS_PER_RTT: f64 = 12_000.0;

/// RCP's parameters (keys of `[transport]` or a flow).
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct RcpConfig {
    /// a: weight of the spare capacity (0.1 in the RCP papers).
    pub alpha: f64,
    /// b: weight of the queue (1 in the RCP papers).
    pub beta: f64,
    /// The RTT a port assumes before a packet has carried one.
    pub initial_rtt: Duration,
    /// The rate a port that has never carried traffic offers, as a fraction of its link rate
    /// (`init_rate_fact_` of RCP's ns-2 router, 0.05 there).
    pub initial_rate_fraction: f64,
}

impl Default for RcpConfig {
    fn default() -> Self {
        RcpConfig { alpha: 0.1, beta: 1.0, initial_rtt: Duration(Nanos::from_millis(1)), initial_rate_fraction: 0.05 }
    }
}

/// The sender side: the rate its path granted.
#[derive(Clone, Debug)]
pub struct Rcp {
    rate: BitsPerSec,
    nic_rate: BitsPerSec,
    srtt: Option<Nanos>,
}

impl Protocol for Rcp {
    const NAMES: &'static [&'static str] = &["rcp"];
    const ROUTER_ASSISTED: bool = true;
    type Config = RcpConfig;
    fn check(cfg: &RcpConfig) -> Result<(), String> {
        if !(cfg.alpha > 0.0 && cfg.alpha.is_finite()) {
            return Err("`alpha` must be a positive number".into());
        }
        if !(cfg.beta >= 0.0 && cfg.beta.is_finite()) {
            return Err("`beta` must be zero or a positive number".into());
        }
        if cfg.initial_rtt.0 == Nanos::ZERO {
            return Err("`initial_rtt` must be above zero".into());
        }
        if !(cfg.initial_rate_fraction > 0.0 && cfg.initial_rate_fraction <= 1.0) {
            return Err("`initial_rate_fraction` must be above 0 and at most 1 (a fraction of the link rate)".into());
        }
        Ok(())
    }
    fn new(_cfg: &RcpConfig, info: &FlowInfo) -> Self {
        Rcp { rate: BitsPerSec(0), nic_rate: info.nic_rate, srtt: None }
    }
    const PORT_KEYS: &'static [&'static str] = &["alpha", "beta", "initial_rtt", "initial_rate_fraction"];
    fn port(cfg: &RcpConfig, link: &PortInfo) -> Option<Box<dyn PortControl>> {
        Some(Box::new(RcpPort::new(cfg, link)))
    }
}

/// The transport as it is.
impl TransportPolicy for Rcp {}

impl CongestionControl for Rcp {
    fn on_ack(&mut self, _st: &mut CcState, ack: &AckSample) {
        if let Some(r) = ack.rtt {
            self.srtt = Some(r);
        }
    }
    /// Rates come from the routers: losses and echoes change nothing.
    fn on_congestion(&mut self, _st: &mut CcState, _ev: CongestionEvent) {}
    fn on_feedback(&mut self, _st: &mut CcState, hdr: &RouterHeader) {
        let hdr = RcpHeader::read(hdr);
        if hdr.rate_bps > 0 {
            self.rate = BitsPerSec(hdr.rate_bps.min(self.nic_rate.0.max(1)));
        }
    }
    fn pacing_rate(&self) -> Option<BitsPerSec> {
        Some(self.rate)
    }
    fn stamp(&mut self, ctx: &SendContext, hdr: &mut RouterHeader) -> bool {
        self.srtt = ctx.srtt.or(self.srtt);
        RcpHeader { rate_bps: RcpHeader::NO_RATE_YET, rtt_ns: ctx.rtt_field() }.write(hdr);
        true
    }
    /// At least one packet per RTT, so that a flow whose rate fell very low still hears of a
    /// higher one.
    fn round(&self) -> Option<Nanos> {
        self.srtt
    }
}

/// The port side: R, the running RTT average and the bytes of the current interval.
#[derive(Clone, Debug)]
pub struct RcpPort {
    capacity_bps: f64,
    alpha: f64,
    beta: f64,
    /// The offered rate R, bits per second.
    rate_bps: f64,
    /// d.
    rtt: PortRtt,
    bytes_in: u64,
    /// Smallest queue an arriving packet found in this interval ([`RcpPort::NO_PACKET_YET`]
    /// before the first).
    min_queue_bytes: u64,
    last_tick: Nanos,
    idle: u32,
    stopped: bool,
    /// The port has carried traffic before (a restart after idling offers C).
    used: bool,
}

impl RcpPort {
    /// `min_queue_bytes` of an interval no packet has arrived in: above any queue, so that
    /// the first packet's queue is the minimum.
    const NO_PACKET_YET: u64 = u64::MAX;

    pub fn new(cfg: &RcpConfig, link: &PortInfo) -> RcpPort {
        let c = link.capacity.0 as f64;
        RcpPort {
            capacity_bps: c,
            alpha: cfg.alpha,
            beta: cfg.beta,
            rate_bps: (cfg.initial_rate_fraction * c).clamp((MIN_BITS_PER_RTT / cfg.initial_rtt.0.as_secs_f64()).min(c), c),
            rtt: PortRtt::new(cfg.initial_rtt.0),
            bytes_in: 0,
            min_queue_bytes: Self::NO_PACKET_YET,
            last_tick: Nanos::ZERO,
            idle: 0,
            stopped: true,
            used: false,
        }
    }

    /// One application of the update rule over an interval of `t_s` seconds with input
    /// `bytes_in` and `queue_bytes` queued at its end.
    pub fn update(&mut self, t_s: f64, bytes_in: u64, queue_bytes: u64) {
        let c = self.capacity_bps;
        let d = self.rtt.secs();
        let y = bytes_in as f64 * 8.0 / t_s;
        let q = queue_bytes as f64 * 8.0;
        let r = self.rate_bps * (1.0 + (t_s / d) * (self.alpha * (c - y) - self.beta * q / d) / c);
        self.rate_bps = r.clamp((MIN_BITS_PER_RTT / d).min(c), c);
    }

    pub fn avg_rtt(&self) -> Nanos {
        Nanos::from_secs_f64(self.rtt.secs())
    }

    /// A port offering `rate_bps` with the RTT average at `avg_rtt`, to check other
    /// implementations of the rule (the BPF port, kernel/rcp_rule.h) against this one.
    pub fn with_state(cfg: &RcpConfig, link: &PortInfo, rate_bps: f64, avg_rtt: Nanos) -> RcpPort {
        let cfg = RcpConfig { initial_rtt: Duration(avg_rtt), ..cfg.clone() };
        RcpPort { rate_bps, ..RcpPort::new(&cfg, link) }
    }

    /// The offered rate R, bits per second.
    pub fn rate_bps(&self) -> f64 {
        self.rate_bps
    }

    /// One packet's RTT field into the average (0: none); returns the new average, seconds.
    pub fn sample_rtt(&mut self, rtt_ns: u32) -> f64 {
        self.rtt.sample(rtt_ns);
        self.rtt.secs()
    }
}

impl PortControl for RcpPort {
    fn on_packet(&mut self, v: &PortView, kind: PacketKind, wire_bytes: u32, hdr: &mut RouterHeader) {
        if self.stopped {
            self.stopped = false;
            if std::mem::replace(&mut self.used, true) {
                self.rate_bps = self.capacity_bps;
            }
            self.last_tick = v.now;
            self.bytes_in = 0;
        }
        self.bytes_in += wire_bytes as u64;
        self.min_queue_bytes = self.min_queue_bytes.min(v.queue_bytes);
        if kind.is_reverse() {
            return; // an echo on its way back to the sender: counted, not read
        }
        let mut h = RcpHeader::read(hdr);
        self.rtt.sample(h.rtt_ns);
        let r = self.rate_bps as u64;
        if h.rate_bps > r {
            h.rate_bps = r;
            h.write(hdr);
        }
    }

    fn on_tick(&mut self, v: &PortView) -> Option<Nanos> {
        let t = v.now.saturating_sub(self.last_tick);
        if t > Nanos::ZERO {
            self.update(t.as_secs_f64(), self.bytes_in, self.min_queue_bytes.min(v.queue_bytes));
        }
        self.min_queue_bytes = Self::NO_PACKET_YET;
        self.idle = if self.bytes_in == 0 { self.idle + 1 } else { 0 };
        self.bytes_in = 0;
        self.last_tick = v.now;
        if self.idle >= IDLE_INTERVALS && v.queue_pkts == 0 {
            self.stopped = true;
            return None;
        }
        Some(self.interval())
    }

    fn interval(&self) -> Nanos {
        self.rtt.interval()
    }

    fn offered_rate(&self) -> Option<f64> {
        Some(self.rate_bps)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn port() -> RcpPort {
        let cfg = RcpConfig { initial_rtt: Duration(Nanos::from_micros(100)), ..Default::default() };
        RcpPort::new(&cfg, &PortInfo { capacity: BitsPerSec(1_000_000_000), delay: Nanos::from_micros(25), host_nic: false })
    }

    /// R(t) against the rule worked by hand: C = 1 Gbps, d = T = 100 us, R = 500 Mbps,
    /// y = 800 Mbps (10 000 bytes in 100 us), q = 3000 bytes = 24 000 bits:
    /// R' = 500e6 (1 + 1 (0.1 (1e9 - 8e8) - 1 x 24 000 / 1e-4) / 1e9)
    ///    = 500e6 (1 + (2e7 - 2.4e8) / 1e9) = 500e6 x 0.78 = 390 Mbps.
    #[test]
    fn update_rule_matches_a_hand_computation() {
        let mut p = port();
        p.rate_bps = 500e6;
        p.update(100e-6, 10_000, 3000);
        assert!((p.rate_bps - 390e6).abs() < 1.0, "{}", p.rate_bps);
        // Spare capacity and no queue: R grows by (T/d) a (C - y)/C; never beyond C.
        p.rate_bps = 500e6;
        p.update(100e-6, 0, 0);
        assert!((p.rate_bps - 550e6).abs() < 1.0, "{}", p.rate_bps);
        p.rate_bps = 990e6;
        p.update(100e-6, 0, 0);
        assert_eq!(p.rate_bps, 1e9);
    }

    #[test]
    fn packets_are_stamped_with_the_lower_rate_and_feed_the_rtt_average() {
        let mut p = port();
        let v = PortView { now: Nanos::from_nanos(0), ..Default::default() };
        let mut h = RcpHeader { rate_bps: u64::MAX, rtt_ns: 200_000 }.header();
        p.on_packet(&v, PacketKind::Data, 1500, &mut h);
        // A port that never carried traffic offers 0.05 C (50 Mbps), but never less than the
        // lower clip of one 1500-byte packet per d: 12,000 bits / 100 us = 120 Mbps here.
        assert_eq!(RcpHeader::read(&h).rate_bps, 120_000_000);
        let slow = RcpConfig { initial_rtt: Duration(Nanos::from_millis(1)), ..Default::default() };
        let mut q = RcpPort::new(&slow, &PortInfo { capacity: BitsPerSec(1_000_000_000), delay: Nanos::from_micros(25), host_nic: false });
        let mut h2 = RcpHeader { rate_bps: u64::MAX, ..Default::default() }.header();
        q.on_packet(&v, PacketKind::Syn, 52, &mut h2);
        assert_eq!(RcpHeader::read(&h2).rate_bps, 50_000_000); // d = 1 ms: the clip is 12 Mbps, 0.05 C stands
        // d moved 2% of the way from 100 us to 200 us
        assert!((p.rtt.secs() - 102e-6).abs() < 1e-12);
        p.rate_bps = 300e6;
        let mut low = RcpHeader { rate_bps: 100_000_000, ..Default::default() }.header();
        p.on_packet(&v, PacketKind::Data, 1500, &mut low);
        assert_eq!(RcpHeader::read(&low).rate_bps, 100_000_000); // a lower rate upstream stays
        let mut echo = RcpHeader { rate_bps: u64::MAX, ..Default::default() }.header();
        p.on_packet(&v, PacketKind::Ack, 52, &mut echo);
        assert_eq!(RcpHeader::read(&echo).rate_bps, u64::MAX); // echoes are not rewritten
        assert_eq!(p.bytes_in, 1500 + 1500 + 52);
    }

    #[test]
    fn an_idle_port_stops_its_timer_and_restarts_at_full_rate() {
        // (It first offered 0.05 C: it had never carried traffic.)
        let mut p = port();
        let mut h = RouterHeader::default();
        p.on_packet(&PortView::default(), PacketKind::Syn, 52, &mut h);
        let mut t = Nanos::ZERO;
        let mut ticks = 0;
        while let Some(dt) = p.on_tick(&PortView { now: t, ..Default::default() }) {
            t += dt;
            ticks += 1;
            assert!(ticks < 100);
        }
        assert_eq!(ticks, IDLE_INTERVALS as usize);
        p.rate_bps = 1e6;
        p.on_packet(&PortView { now: t, ..Default::default() }, PacketKind::Data, 1500, &mut h);
        assert_eq!(p.rate_bps, 1e9);
    }

    #[test]
    fn the_sender_paces_at_the_echoed_rate_and_ignores_loss() {
        let info = FlowInfo { nic_rate: BitsPerSec(1_000_000_000), ..Default::default() };
        let mut s = Rcp::new(&RcpConfig::default(), &info);
        let mut st = CcState { cwnd_bytes: 3000, ssthresh_bytes: u64::MAX, mss_bytes: 1500 };
        assert_eq!(s.pacing_rate(), Some(BitsPerSec(0)));
        s.on_feedback(&mut st, &RcpHeader { rate_bps: 250_000_000, ..Default::default() }.header());
        assert_eq!(s.pacing_rate(), Some(BitsPerSec(250_000_000)));
        s.on_congestion(&mut st, CongestionEvent::Timeout { flight_bytes: 3000 });
        assert_eq!((s.pacing_rate(), st.cwnd_bytes), (Some(BitsPerSec(250_000_000)), 3000));
        // Never faster than its own link.
        s.on_feedback(&mut st, &RcpHeader { rate_bps: u64::MAX, ..Default::default() }.header());
        assert_eq!(s.pacing_rate(), Some(BitsPerSec(1_000_000_000)));
    }
}
