//! D3, deadline-driven delivery (Wilson, Ballani, Karagiannis and Rowstron, "Better never
//! than late: meeting deadlines in datacenter networks", SIGCOMM 2011, section 4).
//!
//! Sender. Once per round trip a flow asks the routers on its path for a rate: its desired
//! rate r = s / d, s the bytes not yet acknowledged and d the time left to its deadline
//! (section 4.1), or 0 for a flow without a deadline, which then gets the fair share only.
//! The request rides on the first packet of the round (the SYN for the first, a header-only
//! packet when the flow has nothing else to send). The answer comes back on the ACK; the flow
//! sends at the smallest allocation along its path until the next answer, nothing before the
//! first. Here d is the time left less one round trip (the answer takes one to come back,
//! and the last bytes half of one), and at least one round trip. Quenching (section 4.1,
//! `d3_quench`): a flow whose deadline has passed, or whose desired rate exceeds its own
//! link's rate, can no longer meet its deadline; the paper terminates it, here it is demoted:
//! it asks for r = 0 from then on and finishes on the fair share, so it is still delivered
//! and reported (as having missed its deadline).
//!
//! Router (section 4.2), with O(1) state per output port and none per flow: the allocation
//! counter A (the sum of the allocations it has given), the demand counter D (the sum of the
//! desired rates), the number of flows N (SYN adds one, FIN removes one) and the link rate
//! C. A request carries the flow's current desired rate r, its previous one r_p and its
//! previous allocation a_p at this port, which the port takes back first: A -= a_p,
//! D += r - r_p. With the fair share fs = (C - D) / N (0 when D >= C) and the capacity left
//! C - A, the port grants greedily, first come first served: a = r + fs if C - A >= r
//! (at most C - A), else a = C - A, what is left; then A += a. A FIN takes back a_p and r_p.
//!
//! The allocation vector (section 4.1): the header carries one allocation per port of the
//! path, [`SLOTS`] of them, and the index of the next. The sender writes its previous
//! allocations into the vector; each port reads its own entry as a_p, overwrites it with its
//! new grant and moves the index on; the receiver echoes the header, so the sender learns
//! each port's grant, sends at the smallest, and hands the vector back with its next request.
//! The header (`HEADER_BYTES` = 28 bytes, on one packet per round trip, the SYN and the FIN)
//! also carries the request's number and the sender's RTT. Allocations travel as 16-bit
//! floating-point rates (kbit/s, 11-bit mantissa: exact below
//! 2.048 Mbit/s, within 0.1% above, rounded down), and a port counts in A exactly the rounded
//! value it wrote, so that what a flow takes back is what it was given. Ports beyond the
//! [`SLOTS`]th of a path leave the header as it is and allocate nothing.
//!
//! Model choices the paper leaves open, listed in docs/protocols.md:
//! - one request at a time: the next waits for the answer to the last, so that a_p is the
//!   allocation the port gave. An answer rides on the ACK of the request's packet (which a
//!   delayed ACK may hold back); an ACK of that packet without it means it was lost, and so
//!   do [`D3::ANSWER_ROUNDS`] round trips without one for a header-only request (acknowledged
//!   at once). The next request then hands back the allocations of the last answer;
//! - a flow stops asking once what it has left to send fits in two rounds at its rate, so
//!   that its FIN follows the answer to its last request;
//! - the desired rate counts the bytes on the wire (each segment's `header_bytes`), over the
//!   time left less one round trip (at least one round trip);
//! - queues: a flow keeps its old rate for a round trip after a port has changed its
//!   allocation, so allocations that add up to C still build queues in transients, which
//!   nothing would drain. A port sets aside the rate that drains its queue within the
//!   requesting sender's RTT (a field of the header) from the fair share only:
//!   fs = (C - q / RTT - D) / N, so desired rates are still granted from all of C while the
//!   extra shrinks until the queue is gone;
//! - a port whose last flow has left resets A and D (a request or FIN lost on its way leaves
//!   crumbs that would otherwise stay);
//! - a flow sends nothing before the answer to its SYN; one granted nothing asks again at once
//!   and then every round trip.

use super::{AckSample, CcState, CongestionControl, CongestionEvent, FlowInfo, PortControl, PortInfo, PortView, Protocol, SendContext, TransportPolicy};
use fctlab_engine::{BitsPerSec, Nanos};
use fctlab_net::{PacketKind, RouterHeader};
use serde::{Deserialize, Serialize};

/// Ports of a path that can allocate: entries in the header's allocation vector.
pub const SLOTS: usize = 8;

/// Bytes of the D3 header on the wire: the desired rate and the previous one (4 bytes each),
/// the index of the next port and the request's number (1 byte each), the sender's RTT
/// (2 bytes) and the allocation vector ([`SLOTS`] entries of 2 bytes).
pub const HEADER_BYTES: u8 = 4 + 4 + 1 + 1 + 2 + 2 * SLOTS as u8;

/// A rate in kbit/s as a 16-bit floating-point number: mantissa m (11 bits) and exponent e
/// (5 bits), value m x 2^e, rounded down. Exact below 2,048 kbit/s.
pub fn encode_kbps(kbps: u64) -> u16 {
    if kbps < 2048 {
        return kbps as u16;
    }
    let top = 63 - kbps.leading_zeros() as u64; // at least 11
    let e = top - 10;
    if e > 31 {
        return u16::MAX; // 2047 x 2^31 kbit/s: above any link
    }
    ((e << 11) | (kbps >> e)) as u16
}

/// The rate an encoded allocation stands for, kbit/s.
pub fn decode_kbps(code: u16) -> u64 {
    ((code & 0x7ff) as u64) << (code >> 11)
}

/// A rate in bits per second as an allocation entry carries it, and the value it stands for.
pub fn quantize_bps(bps: u64) -> (u16, u64) {
    let code = encode_kbps(bps / 1000);
    (code, decode_kbps(code) * 1000)
}

/// D3's header (`HEADER_BYTES` on the wire).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct D3Header {
    /// The desired rate r, kbit/s (0: none; a FIN's).
    pub desired_kbps: u32,
    /// The desired rate of the flow's previous request, r_p (kbit/s).
    pub prev_desired_kbps: u32,
    /// The index of the next port on the path (ports that have allocated so far).
    pub hop: u8,
    /// The request's number, so the sender knows the answer to the one it waits for.
    pub seq: u8,
    /// The sender's smoothed RTT, microseconds (0: not measured yet), over which ports
    /// drain their queue.
    pub rtt_us: u16,
    /// Per port of the path: the previous allocation on the way out, the new one on the way
    /// back (encoded, [`encode_kbps`]).
    pub alloc: [u16; SLOTS],
}

impl D3Header {
    pub fn read(h: &RouterHeader) -> D3Header {
        let mut alloc = [0u16; SLOTS];
        for (i, a) in alloc.iter_mut().enumerate() {
            *a = (h.u32(3 + i / 2) >> (16 * (i % 2))) as u16;
        }
        D3Header { desired_kbps: h.u32(0), prev_desired_kbps: h.u32(1), hop: h.u8(2, 0), seq: h.u8(2, 1), rtt_us: (h.u32(2) >> 16) as u16, alloc }
    }
    pub fn write(&self, h: &mut RouterHeader) {
        h.set_u32(0, self.desired_kbps);
        h.set_u32(1, self.prev_desired_kbps);
        h.set_u32(2, self.hop as u32 | (self.seq as u32) << 8 | (self.rtt_us as u32) << 16);
        for k in 0..SLOTS / 2 {
            h.set_u32(3 + k, self.alloc[2 * k] as u32 | (self.alloc[2 * k + 1] as u32) << 16);
        }
        h.wire_bytes = HEADER_BYTES;
    }
    /// A packet's header carrying these fields.
    pub fn header(&self) -> RouterHeader {
        let mut h = RouterHeader::default();
        self.write(&mut h);
        h
    }
}

/// D3's parameters.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct D3Config {
    /// Quench flows that can no longer meet their deadline (section 4.1): past it, or asking
    /// for more than their own link's rate. Key `d3_quench`.
    #[serde(rename = "d3_quench")]
    pub quench: bool,
}

impl Default for D3Config {
    fn default() -> Self {
        D3Config { quench: true }
    }
}

/// The sender side.
#[derive(Clone, Debug)]
pub struct D3 {
    quench: bool,
    nic_rate: BitsPerSec,
    header_bytes: u32,
    /// The deadline's absolute time (None: no deadline).
    deadline_at: Option<Nanos>,
    rate: BitsPerSec,
    /// The allocations of the last answer, per port (the next request's a_p).
    alloc: [u16; SLOTS],
    prev_desired_kbps: u32,
    seq: u8,
    /// When the request waiting for its answer left.
    outstanding: Option<Nanos>,
    /// The stream offset whose acknowledgement covers the packet that carried it (an ACK of
    /// it without the answer means the answer was lost), and whether that packet was
    /// header-only (acknowledged at once, so an answer is late after a few round trips).
    request_covered_by: u64,
    request_header_only: bool,
    next_request: Nanos,
    srtt: Option<Nanos>,
    quenched: bool,
    /// An answer has come back (the SYN's, at first).
    answered: bool,
}

impl Protocol for D3 {
    const NAMES: &'static [&'static str] = &["d3"];
    const ROUTER_ASSISTED: bool = true;
    type Config = D3Config;
    fn new(cfg: &D3Config, info: &FlowInfo) -> Self {
        D3 {
            quench: cfg.quench,
            nic_rate: info.nic_rate,
            header_bytes: info.header_bytes,
            deadline_at: info.deadline.map(|d| info.start + d),
            rate: BitsPerSec(0),
            alloc: [0; SLOTS],
            prev_desired_kbps: 0,
            seq: 0,
            outstanding: None,
            request_covered_by: 0,
            request_header_only: false,
            next_request: Nanos::ZERO,
            srtt: None,
            quenched: false,
            answered: false,
        }
    }
    fn port(_cfg: &D3Config, link: &PortInfo) -> Option<Box<dyn PortControl>> {
        Some(Box::new(D3Port::new(link)))
    }
}

impl D3 {
    /// Round trips a header-only request (acknowledged at once) may wait for its answer before
    /// the flow takes the answer as lost and asks again.
    pub const ANSWER_ROUNDS: u64 = 16;

    /// The desired rate, bits per second, at `ctx.now` (and quenching, when it applies).
    pub fn desired_bps(&mut self, ctx: &SendContext) -> u64 {
        let (Some(at), Some(left_bytes)) = (self.deadline_at, ctx.unacknowledged()) else { return 0 };
        if self.quenched {
            return 0;
        }
        let rtt = self.srtt.unwrap_or(Nanos::ZERO).as_nanos() as i128;
        let left = at.as_nanos() as i128 - ctx.now.as_nanos() as i128;
        let nic = self.nic_rate.0.max(1);
        if left <= 0 {
            if self.quench {
                self.quenched = true;
                return 0;
            }
            return nic;
        }
        let d = (left - rtt).max(rtt).max(1);
        // On the wire: each segment of `mss` payload bytes carries `header_bytes` more.
        let mss = ctx.mss_bytes.max(1) as u128;
        let wire_bytes = left_bytes as u128 * (mss + self.header_bytes as u128) / mss;
        let r = (wire_bytes * 8 * 1_000_000_000 / d as u128).min(u64::MAX as u128) as u64;
        if r > nic && self.quench {
            self.quenched = true;
            return 0;
        }
        r.clamp(1000.min(nic), nic) // at least 1 kbit/s: a deadline flow always asks for some
    }

    /// The flow has been quenched.
    pub fn quenched(&self) -> bool {
        self.quenched
    }

    fn request(&mut self, ctx: &SendContext, hdr: &mut RouterHeader, desired_kbps: u32) {
        self.seq = self.seq.wrapping_add(1);
        let rtt_us = self.srtt.map_or(0, |r| (r.as_nanos() / 1000).clamp(1, u16::MAX as u64) as u16);
        D3Header { desired_kbps, prev_desired_kbps: self.prev_desired_kbps, hop: 0, seq: self.seq, rtt_us, alloc: self.alloc }.write(hdr);
        self.prev_desired_kbps = desired_kbps;
        self.outstanding = Some(ctx.now);
        self.request_covered_by = ctx.bytes_sent;
        self.request_header_only = ctx.kind == PacketKind::Data && ctx.bytes_sent == ctx.seq;
        self.next_request = ctx.now + self.srtt.unwrap_or(Nanos::ZERO);
    }
}

/// The transport as it is.
impl TransportPolicy for D3 {}

impl CongestionControl for D3 {
    /// An ACK that covers the packet of the awaited request but did not bring its answer
    /// (answers come before the ACK's other news): the answer was lost.
    fn on_ack(&mut self, _st: &mut CcState, ack: &AckSample) {
        if self.outstanding.is_some() && !self.request_header_only && ack.snd_una >= self.request_covered_by {
            self.outstanding = None;
        }
    }
    /// Rates come from the routers: losses and echoes change nothing.
    fn on_congestion(&mut self, _st: &mut CcState, _ev: CongestionEvent) {}
    fn on_feedback(&mut self, _st: &mut CcState, hdr: &RouterHeader) {
        let h = D3Header::read(hdr);
        if self.outstanding.is_none() || h.seq != self.seq {
            return; // an answer given up on
        }
        self.outstanding = None;
        self.answered = true;
        self.alloc = h.alloc;
        let ports = (h.hop as usize).min(SLOTS);
        let lowest = h.alloc[..ports].iter().map(|&a| decode_kbps(a) * 1000).min();
        self.rate = BitsPerSec(lowest.unwrap_or(u64::MAX).min(self.nic_rate.0.max(1)));
    }
    fn pacing_rate(&self) -> Option<BitsPerSec> {
        Some(self.rate)
    }
    fn stamp(&mut self, ctx: &SendContext, hdr: &mut RouterHeader) -> bool {
        self.srtt = ctx.srtt.or(self.srtt);
        match ctx.kind {
            PacketKind::Fin => {
                // The last request's allocations and demand go back.
                D3Header { desired_kbps: 0, prev_desired_kbps: self.prev_desired_kbps, hop: 0, seq: self.seq, rtt_us: 0, alloc: self.alloc }.write(hdr);
                self.alloc = [0; SLOTS];
                self.prev_desired_kbps = 0;
                true
            }
            PacketKind::Syn => {
                // (Again after a timeout: the routers that counted the first one count it twice.)
                self.alloc = [0; SLOTS];
                self.prev_desired_kbps = 0;
                let r = (self.desired_bps(ctx) / 1000).min(u32::MAX as u64) as u32;
                self.request(ctx, hdr, r);
                true
            }
            _ => {
                let round = self.srtt.unwrap_or(Nanos::ZERO);
                // One request at a time: the next waits for the answer (the ACK of a data packet
                // may be delayed), or, for a header-only request, acknowledged at once, for
                // `ANSWER_ROUNDS` round trips.
                if let Some(t) = self.outstanding {
                    if !self.request_header_only || ctx.now < t + Nanos::from_nanos(round.as_nanos() * Self::ANSWER_ROUNDS) {
                        return false;
                    }
                }
                if ctx.now < self.next_request {
                    return false;
                }
                // What is left to send fits in two rounds at the current rate: no more requests,
                // so the FIN finds the last answer back.
                let unsent = ctx.remaining().unwrap_or(u64::MAX);
                let two_rounds = self.rate.0 as u128 * round.as_nanos() as u128 / 4_000_000_000;
                if self.rate.0 > 0 && (unsent as u128) <= two_rounds {
                    return false;
                }
                let r = (self.desired_bps(ctx) / 1000).min(u32::MAX as u64) as u32;
                self.request(ctx, hdr, r);
                true
            }
        }
    }
    /// A round trip; none before the SYN's answer (the SYN's timeout repeats it). A flow
    /// granted nothing by that answer has not measured a round trip here yet (the SYN-ACK
    /// brings the sender's first sample, not an ACK of data): it asks again at once, and its
    /// request learns the round trip from the sender.
    fn round(&self) -> Option<Nanos> {
        self.answered.then(|| self.srtt.unwrap_or(Nanos::ZERO).max(Nanos::from_micros(1)))
    }
}

/// The port side: A, D and N, and the link rate C.
#[derive(Clone, Debug)]
pub struct D3Port {
    capacity_bps: u64,
    /// A: the sum of the allocations given, bits per second.
    allocated_bps: u64,
    /// D: the sum of the desired rates.
    demand_bps: u64,
    /// N: flows that sent a SYN and no FIN yet.
    flows: u32,
}

impl D3Port {
    pub fn new(link: &PortInfo) -> D3Port {
        D3Port { capacity_bps: link.capacity.0, allocated_bps: 0, demand_bps: 0, flows: 0 }
    }

    /// A, D and N.
    pub fn counters(&self) -> (u64, u64, u32) {
        (self.allocated_bps, self.demand_bps, self.flows)
    }

    /// One request of kind `kind` for `desired_bps` (r), with the flow's previous desired rate
    /// and allocation here (r_p, a_p). Returns the allocation (encoded, and its value in
    /// bits per second, which A counts); a FIN's is 0.
    pub fn grant(&mut self, kind: PacketKind, desired_bps: u64, prev_desired_bps: u64, prev_alloc_bps: u64) -> (u16, u64) {
        self.grant_draining(kind, desired_bps, prev_desired_bps, prev_alloc_bps, 0)
    }

    /// [`D3Port::grant`] with `drain_bps` of the link set aside to drain its queue: the fair
    /// share is (C - drain - D) / N (desired rates are granted from all of C).
    pub fn grant_draining(&mut self, kind: PacketKind, desired_bps: u64, prev_desired_bps: u64, prev_alloc_bps: u64, drain_bps: u64) -> (u16, u64) {
        match kind {
            PacketKind::Syn => self.flows += 1,
            PacketKind::Fin => self.flows = self.flows.saturating_sub(1),
            _ => {}
        }
        self.allocated_bps = self.allocated_bps.saturating_sub(prev_alloc_bps);
        self.demand_bps = self.demand_bps.saturating_sub(prev_desired_bps);
        if kind == PacketKind::Fin {
            if self.flows == 0 {
                (self.allocated_bps, self.demand_bps) = (0, 0);
            }
            return (0, 0);
        }
        self.demand_bps += desired_bps;
        let c = self.capacity_bps;
        let left = c.saturating_sub(self.allocated_bps);
        let fair_share = c.saturating_sub(drain_bps).saturating_sub(self.demand_bps) / self.flows.max(1) as u64;
        let a = if left >= desired_bps { (desired_bps + fair_share).min(left) } else { left };
        let (code, value) = quantize_bps(a);
        self.allocated_bps += value;
        (code, value)
    }
}

impl PortControl for D3Port {
    fn on_packet(&mut self, v: &PortView, kind: PacketKind, _wire_bytes: u32, raw: &mut RouterHeader) {
        if kind.is_reverse() {
            return; // an echo on its way back
        }
        let mut h = D3Header::read(raw);
        let i = h.hop as usize;
        if i >= SLOTS {
            return;
        }
        let prev_alloc = decode_kbps(h.alloc[i]) * 1000;
        // The queue drained within the sender's round trip (none before it has measured one).
        let drain_bps = if h.rtt_us > 0 { v.queue_bytes * 8 * 1_000_000 / h.rtt_us as u64 } else { 0 };
        let (code, _) = self.grant_draining(kind, h.desired_kbps as u64 * 1000, h.prev_desired_kbps as u64 * 1000, prev_alloc, drain_bps);
        h.alloc[i] = code;
        h.hop += 1;
        h.write(raw);
    }

    /// No periodic work: the counters change with requests only.
    fn on_tick(&mut self, _v: &PortView) -> Option<Nanos> {
        None
    }

    fn interval(&self) -> Nanos {
        Nanos::from_millis(1)
    }

    /// The capacity not yet allocated, C - A.
    fn offered_rate(&self) -> Option<f64> {
        Some(self.capacity_bps.saturating_sub(self.allocated_bps) as f64)
    }

    /// N, the flows the port counts (one class).
    fn class_counts(&self) -> Option<Vec<u32>> {
        Some(vec![self.flows])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GBPS: u64 = 1_000_000_000;
    const MBPS: u64 = 1_000_000;

    fn port() -> D3Port {
        D3Port::new(&PortInfo { capacity: BitsPerSec(GBPS), delay: Nanos::from_micros(10), host_nic: false })
    }

    #[test]
    fn allocations_are_encoded_exactly_below_2_mbps_and_rounded_down_within_a_thousandth_above() {
        for kbps in [0u64, 1, 999, 2047] {
            assert_eq!(decode_kbps(encode_kbps(kbps)), kbps);
        }
        for kbps in [2048u64, 2049, 123_457, 1_000_000, 10_000_000, 400_000_000, 987_654_321_987] {
            let back = decode_kbps(encode_kbps(kbps));
            assert!(back <= kbps && (kbps - back) as f64 <= kbps as f64 / 1024.0, "{kbps} -> {back}");
        }
        assert_eq!(quantize_bps(250 * MBPS), (encode_kbps(250_000), decode_kbps(encode_kbps(250_000)) * 1000));
    }

    #[test]
    fn the_header_packs_and_unpacks() {
        let h = D3Header { desired_kbps: 123_456, prev_desired_kbps: 7, hop: 3, seq: 200, rtt_us: 65_000, alloc: [1, 2, 3, 4, 5, 6, 7, u16::MAX] };
        assert_eq!(D3Header::read(&h.header()), h);
        assert_eq!(h.header().wire_bytes, 28);
    }

    /// Section 4.2's greedy grant: r + fs while the capacity left covers r, what is left
    /// otherwise; the counters take back the previous allocation and demand. (`q`: a rate as
    /// an allocation entry carries it, rounded down to 11 significant bits.)
    #[test]
    fn requests_below_the_capacity_left_get_r_plus_the_fair_share_and_above_it_what_is_left() {
        let q = |bps: u64| quantize_bps(bps).1;
        let mut p = port();
        // Three flows arrive: SYNs with their desired rates.
        // Flow a: r = 300 Mbps; N = 1, D = 300: fs = 700, a = min(300 + 700, C - A = 1000).
        let (_, a) = p.grant(PacketKind::Syn, 300 * MBPS, 0, 0);
        assert_eq!(a, q(GBPS));
        assert!(a > 999 * MBPS);
        assert_eq!(p.counters(), (a, 300 * MBPS, 1));
        // Flow b: r = 200 Mbps; C - A (64 kbps) is below it: b gets what is left.
        let (_, b) = p.grant(PacketKind::Syn, 200 * MBPS, 0, 0);
        assert_eq!(b, q(GBPS - a));
        assert!(b < MBPS);
        assert_eq!(p.counters(), (GBPS, 500 * MBPS, 2));
        // Flow c, no deadline (r = 0): nothing left, 0 for now.
        let (_, c) = p.grant(PacketKind::Syn, 0, 0, 0);
        assert_eq!(c, 0);
        assert_eq!(p.counters(), (GBPS, 500 * MBPS, 3));
        // Next round, a asks again for 300 and gives back its grant: A = b, D = 500, fs = 500/3;
        // C - A >= 300: a = 300 + 166.7 Mbps.
        let (code, a2) = p.grant(PacketKind::Data, 300 * MBPS, 300 * MBPS, a);
        assert_eq!(a2, q(300 * MBPS + 500 * MBPS / 3));
        assert_eq!(decode_kbps(code) * 1000, a2);
        assert_eq!(p.counters(), (b + a2, 500 * MBPS, 3));
        // b: C - A (533 Mbps) >= 200: b = 200 + 166.7.
        let (_, b2) = p.grant(PacketKind::Data, 200 * MBPS, 200 * MBPS, b);
        assert_eq!(b2, q(200 * MBPS + 500 * MBPS / 3));
        // c: the fair share, as C - A (167 Mbps) still covers it.
        let (_, c2) = p.grant(PacketKind::Data, 0, 0, c);
        assert_eq!(c2, q(500 * MBPS / 3));
        assert!(a2 + b2 + c2 <= GBPS);
        assert_eq!(p.counters(), (a2 + b2 + c2, 500 * MBPS, 3));
        // a now wants 900 Mbps: it gives back a2, and C - A (about 467 Mbps) is below 900:
        // it gets what is left, and the port is allocated in full.
        let (_, a3) = p.grant(PacketKind::Data, 900 * MBPS, 300 * MBPS, a2);
        assert_eq!(a3, q(GBPS - b2 - c2));
        assert_eq!(p.counters(), (a3 + b2 + c2, 1100 * MBPS, 3));
        // D > C: the fair share is 0; c, asking for 0, gets nothing once it has given back its own.
        let (_, c3) = p.grant(PacketKind::Data, 0, 0, c2);
        assert_eq!(c3, 0);
        assert_eq!(p.counters(), (a3 + b2, 1100 * MBPS, 3));
        // FINs take back allocations and demands; the last one leaves the port clean.
        p.grant(PacketKind::Fin, 0, 900 * MBPS, a3);
        assert_eq!(p.counters(), (b2, 200 * MBPS, 2));
        p.grant(PacketKind::Fin, 0, 200 * MBPS, b2);
        assert_eq!(p.counters(), (0, 0, 1));
        p.grant(PacketKind::Fin, 0, 0, c3);
        assert_eq!(p.counters(), (0, 0, 0));
    }

    /// A queue at the port shrinks the fair share (the rate that drains it within the
    /// sender's RTT), not the desired rates.
    #[test]
    fn a_queue_is_drained_from_the_fair_share() {
        let q = |bps: u64| quantize_bps(bps).1;
        let mut p = port();
        // Alone, r = 300: fs would be 700; draining 400 Mbps of queue leaves it 300.
        let (_, a) = p.grant_draining(PacketKind::Syn, 300 * MBPS, 0, 0, 400 * MBPS);
        assert_eq!(a, q(600 * MBPS));
        // Draining more than C - D: fs = 0, r still granted in full.
        let (_, a) = p.grant_draining(PacketKind::Data, 300 * MBPS, 300 * MBPS, a, 900 * MBPS);
        assert_eq!(a, q(300 * MBPS));
        assert_eq!(p.counters(), (a, 300 * MBPS, 1));
    }

    /// Through the header: each port uses its own entry of the vector and moves the index on;
    /// the sender sends at the smallest allocation and hands the vector back next time.
    #[test]
    fn each_port_of_the_path_reads_and_writes_its_own_entry() {
        let mut fast = D3Port::new(&PortInfo { capacity: BitsPerSec(10 * GBPS), delay: Nanos::ZERO, host_nic: false });
        let mut slow = port();
        let info = FlowInfo { nic_rate: BitsPerSec(10 * GBPS), deadline: Some(Nanos::from_millis(1)), size: Some(40_000), ..Default::default() };
        let mut s = D3::new(&D3Config::default(), &info);
        let ctx = |now_us: u64, kind, una| SendContext {
            now: Nanos::from_micros(now_us),
            kind,
            size: Some(40_000),
            bytes_sent: una,
            seq: una,
            snd_una: una,
            sacked_bytes: 0,
            srtt: Some(Nanos::from_micros(100)),
            mss_bytes: 1000,
        };
        let mut h = RouterHeader::default();
        assert!(s.stamp(&ctx(0, PacketKind::Syn, 0), &mut h));
        // 40 kB in 1 ms less a round trip of 100 us: 320 kbit / 900 us = 355.6 Mbps.
        assert_eq!(D3Header::read(&h).desired_kbps, 355_555);
        let v = PortView::default();
        fast.on_packet(&v, PacketKind::Syn, 92, &mut h);
        slow.on_packet(&v, PacketKind::Syn, 92, &mut h);
        let sent = D3Header::read(&h);
        assert_eq!(sent.hop, 2);
        // Alone on each port: r + fs = C there (as the 16-bit entry carries it).
        assert_eq!(sent.alloc[0], encode_kbps(10_000_000));
        assert_eq!(sent.alloc[1], encode_kbps(1_000_000));
        let mut st = CcState { cwnd_bytes: 2000, ssthresh_bytes: u64::MAX, mss_bytes: 1000 };
        assert_eq!(s.pacing_rate(), Some(BitsPerSec(0)));
        s.on_feedback(&mut st, &h);
        assert_eq!(s.pacing_rate(), Some(BitsPerSec(decode_kbps(encode_kbps(1_000_000)) * 1000)));
        // The next request waits a round, then carries the vector back.
        let mut h2 = RouterHeader::default();
        assert!(!s.stamp(&ctx(50, PacketKind::Data, 0), &mut h2));
        assert!(s.stamp(&ctx(100, PacketKind::Data, 0), &mut h2));
        let req = D3Header::read(&h2);
        assert_eq!((req.alloc[0], req.alloc[1], req.prev_desired_kbps, req.hop), (sent.alloc[0], sent.alloc[1], 355_555, 0));
        fast.on_packet(&v, PacketKind::Data, 1092, &mut h2);
        slow.on_packet(&v, PacketKind::Data, 1092, &mut h2);
        // Each port took back exactly its own grant: one flow, A = its new allocation.
        assert_eq!(fast.counters().0, decode_kbps(D3Header::read(&h2).alloc[0]) * 1000);
        assert_eq!(slow.counters().0, decode_kbps(D3Header::read(&h2).alloc[1]) * 1000);
        assert_eq!(slow.counters().2, 1);
        // An answer to another request is ignored; the awaited one sets the rate.
        let mut stale = h2;
        stale.set_u8(2, 1, req.seq.wrapping_sub(1));
        s.on_feedback(&mut st, &stale);
        assert!(s.outstanding.is_some());
        s.on_feedback(&mut st, &h2);
        assert!(s.outstanding.is_none());
        // The FIN gives everything back.
        let mut fin = RouterHeader::default();
        assert!(s.stamp(&ctx(400, PacketKind::Fin, 40_000), &mut fin));
        fast.on_packet(&v, PacketKind::Fin, 66, &mut fin);
        slow.on_packet(&v, PacketKind::Fin, 66, &mut fin);
        assert_eq!(fast.counters(), (0, 0, 0));
        assert_eq!(slow.counters(), (0, 0, 0));
    }

    #[test]
    fn flows_without_deadlines_ask_for_nothing_and_late_flows_are_quenched() {
        let ctx = |now_us: u64, una| SendContext {
            now: Nanos::from_micros(now_us),
            kind: PacketKind::Data,
            size: Some(100_000),
            bytes_sent: una,
            seq: una,
            snd_una: una,
            sacked_bytes: 0,
            srtt: None,
            mss_bytes: 1000,
        };
        let nic = FlowInfo { nic_rate: BitsPerSec(GBPS), size: Some(100_000), ..Default::default() };
        let mut none = D3::new(&D3Config::default(), &nic);
        assert_eq!(none.desired_bps(&ctx(0, 0)), 0);
        // 100 kB in 10 ms: 80 Mbps; past the deadline: quenched, 0 from then on.
        let mut late = D3::new(&D3Config::default(), &FlowInfo { deadline: Some(Nanos::from_millis(10)), ..nic });
        assert_eq!(late.desired_bps(&ctx(0, 0)), 80 * MBPS);
        assert_eq!(late.desired_bps(&ctx(10_000, 50_000)), 0);
        assert!(late.quenched());
        assert_eq!(late.desired_bps(&ctx(0, 0)), 0);
        // Asking for more than its own link: quenched too (100 kB in 0.5 ms is 1.6 Gbps).
        let mut tight = D3::new(&D3Config::default(), &FlowInfo { deadline: Some(Nanos::from_micros(500)), ..nic });
        assert_eq!(tight.desired_bps(&ctx(0, 0)), 0);
        assert!(tight.quenched());
        // Without quenching it asks for its link's rate.
        let mut keep = D3::new(&D3Config { quench: false }, &FlowInfo { deadline: Some(Nanos::from_micros(500)), ..nic });
        assert_eq!(keep.desired_bps(&ctx(0, 0)), GBPS);
        assert_eq!(keep.desired_bps(&ctx(600, 0)), GBPS);
        assert!(!keep.quenched());
    }
}
