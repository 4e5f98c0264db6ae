//! The `roce` transport: RDMA messages as RoCEv2 NICs send them.
//!
//! A message is sent in packets of `mss` payload bytes, in order, from its first byte at
//! the rate its congestion control gives ([`crate::cc::CongestionControl::pacing_rate`]; the
//! NIC's line rate when it gives none), within the window it keeps (`cwnd`; unlimited unless
//! the algorithm sets one). There is no slow start: the first packet leaves at line rate.
//!
//! The receiver ([`RoceReceiver`]) accepts packets in order only:
//! - the next expected packet is acknowledged, every `ack_interval` packets and always the one
//!   that completes the message (an ACK carries the next byte expected);
//! - a packet beyond it is dropped and answered with a NACK carrying the byte expected, once
//!   per gap and again for the same byte only after `nack_interval`;
//! - a duplicate (below the byte expected) is answered with an ACK, so that a sender whose ACK
//!   was lost learns where the receiver stands;
//! - a packet that arrives with a CE mark makes the receiver send a congestion notification
//!   packet (CNP), at most one per `cnp_interval` for the flow (DCQCN's notification point).
//!
//! The sender goes back to the byte a NACK names and sends everything again from there
//! (go-back-N). A retransmission timeout (RFC 6298's estimator from the ACKs' timestamp
//! echoes, bounded by `min_rto` and `max_rto`, doubling on each expiry) does the same when
//! nothing comes back. CNPs go to the congestion control as
//! [`CongestionEvent::Notification`]; a timer-driven algorithm's own timer
//! ([`crate::transport::TransportPolicy::deadline`]) is part of the sender's timer. A router-assisted
//! algorithm (HPCC) stamps its header on each data packet, the switches on the way rewrite it,
//! and the acknowledgement brings it back to the algorithm.
//!
//! With `roce_recovery = "irn"` the transport recovers as IRN does (Mittal et al., "Revisiting
//! Network Support for RDMA", SIGCOMM 2018):
//! - the receiver keeps packets out of order and answers each with a NACK that carries the byte
//!   expected and the packet's own sequence number (a selective acknowledgement);
//! - the sender, on the first NACK, resends only the packets below the highest one acknowledged
//!   selectively that have not arrived, before new ones, until the cumulative acknowledgement
//!   passes what it had sent then;
//! - it keeps at most one bandwidth-delay product of its path outstanding (BDP-FC: the flow's
//!   base RTT times its line rate, in whole packets);
//! - its timeout is fixed: `irn_rto_low` while at most [`crate::config::IRN_FEW_PACKETS`]
//!   packets are in flight, `irn_rto_high` otherwise, and it then resends what has not arrived.
//!
//! What is not modelled: read/write semantics (a message is one send of `size` bytes), and
//! IRN's per-packet NACK processing limits at the NIC.

mod receiver;
#[cfg(test)]
mod tests;

pub use receiver::RoceReceiver;

use crate::cc::{AckSample, AnyCc, CcState, CongestionEvent, SendContext};
use crate::config::{RoceRecovery, TcpConfig, IRN_FEW_PACKETS};
use crate::rtt::RttEstimator;
use crate::transport::Transport;
use fctlab_engine::{BitsPerSec, Nanos};
use fctlab_net::packet::flags;
use fctlab_net::{FlowId, NodeId, Packet, PacketKind};
use std::collections::BTreeSet;

/// The sending side of a `roce` flow (a queue pair's requester).
pub struct RoceSender {
    pub flow: FlowId,
    src: NodeId,
    dst: NodeId,
    cfg: TcpConfig,
    /// Bytes of the message (`u64::MAX`: long-lived).
    size: u64,
    pub cc: AnyCc,
    /// The window (`cwnd_bytes`; [`CcState::SSTHRESH_UNLIMITED`] unless the algorithm sets
    /// one) and the segment size.
    pub st: CcState,
    /// The NIC's line rate: the rate of an algorithm that gives none.
    line_rate: BitsPerSec,
    snd_una: u64,
    snd_nxt: u64,
    /// The highest byte sent so far (exclusive).
    snd_max: u64,
    /// When the next packet may leave at the current rate.
    next_departure: Nanos,
    /// The last packet's time and wire bytes (the gap to the next one is taken at the rate
    /// current when the next one is due, as a NIC's rate limiter does).
    last_departure: Nanos,
    last_wire_bytes: u64,
    rtt: RttEstimator,
    rto_deadline: Option<Nanos>,
    backoff: u32,
    ect: bool,
    /// A router-assisted algorithm's header owner (see `RouterHeader::owner`), if it stamps one.
    router: Option<u8>,
    /// When the host's NIC can take this queue pair's next packet, if not now (the NIC's
    /// arbitration among its queue pairs: see [`RoceSender::set_nic_ready`]).
    nic_ready: Option<Nanos>,
    /// IRN (`roce_recovery = "irn"`): the packets acknowledged selectively above `snd_una`
    /// (their first bytes), the end of the range whose other packets count as lost, the next
    /// candidate for resending, and the byte that ends the recovery (None: not in one).
    irn: bool,
    sacked: BTreeSet<u64>,
    lost_below: u64,
    rtx_next: u64,
    recovery_until: Option<u64>,
    /// IRN's BDP-FC: bytes the sender may have outstanding (u64::MAX: no cap).
    bdp_cap: u64,
    /// Packets sent, first transmissions and retransmissions.
    pub packets_sent: u64,
    /// Packets sent again (after a NACK or a timeout).
    pub retransmits: u64,
    pub timeouts: u64,
    pub nacks: u64,
    pub cnps: u64,
    pub completed_at: Option<Nanos>,
}

impl RoceSender {
    /// A sender of `size` bytes (None: long-lived) from `src` to `dst`, whose NIC sends at
    /// `line_rate`.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        flow: FlowId,
        src: NodeId,
        dst: NodeId,
        size: Option<u64>,
        cfg: &TcpConfig,
        cc: AnyCc,
        ecn: bool,
        line_rate: BitsPerSec,
    ) -> RoceSender {
        let mut st = CcState {
            cwnd_bytes: CcState::SSTHRESH_UNLIMITED,
            ssthresh_bytes: CcState::SSTHRESH_UNLIMITED,
            mss_bytes: cfg.mss_bytes as u64,
        };
        let mut cc = cc;
        cc.init(&mut st);
        let router = cc.router_assisted().then_some(0);
        RoceSender {
            flow,
            src,
            dst,
            cfg: *cfg,
            size: size.unwrap_or(u64::MAX),
            cc,
            st,
            line_rate,
            snd_una: 0,
            snd_nxt: 0,
            snd_max: 0,
            next_departure: Nanos::ZERO,
            last_departure: Nanos::ZERO,
            last_wire_bytes: 0,
            rtt: RttEstimator::new(cfg),
            rto_deadline: None,
            backoff: 0,
            ect: ecn,
            router,
            nic_ready: None,
            irn: cfg.roce_recovery == RoceRecovery::Irn,
            sacked: BTreeSet::new(),
            lost_below: 0,
            rtx_next: 0,
            recovery_until: None,
            bdp_cap: u64::MAX,
            packets_sent: 0,
            retransmits: 0,
            timeouts: 0,
            nacks: 0,
            cnps: 0,
            completed_at: None,
        }
    }

    /// The host's NIC can take a packet of this queue pair at `at` (None: now). The simulation
    /// says so before each call: a NIC serves its queue pairs as its port drains, so that a
    /// host's flows together never send faster than its link or while it is paused, whatever
    /// each one's own rate.
    pub fn set_nic_ready(&mut self, at: Option<Nanos>) {
        self.nic_ready = at;
    }

    /// The flow's base RTT: with IRN, its outstanding bytes are capped at this times the line
    /// rate, in whole packets (BDP-FC).
    pub fn set_base_rtt(&mut self, base_rtt: Nanos) {
        if self.irn && base_rtt > Nanos::ZERO {
            let bdp = (base_rtt.as_nanos() as u128 * self.line_rate.0 as u128 / 8_000_000_000) as u64;
            let mss = self.st.mss_bytes.max(1);
            self.bdp_cap = bdp.div_ceil(mss).max(1) * mss;
        }
    }

    /// A router-assisted algorithm's headers belong to the run's `owner`-th such protocol.
    pub fn set_router_owner(&mut self, owner: u8) {
        if self.router.is_some() {
            self.router = Some(owner);
        }
    }

    pub fn config(&self) -> &TcpConfig {
        &self.cfg
    }
    pub fn srtt(&self) -> Option<Nanos> {
        self.rtt.srtt()
    }
    /// The smallest and the mean of the RTTs measured so far (None before the first).
    pub fn rtt_measured(&self) -> Option<(Nanos, Nanos)> {
        self.rtt.measured()
    }

    /// The rate the sender sends at now: its algorithm's, or the line rate.
    pub fn rate(&self) -> BitsPerSec {
        self.cc.pacing_rate().unwrap_or(self.line_rate).min(self.line_rate)
    }

    fn done(&self) -> bool {
        self.snd_una >= self.size
    }

    /// Brings the algorithm's clock to `now` (and runs its timers that are due), before it is
    /// told anything at `now`: a notification then acts at the time it arrives.
    fn advance(&mut self, now: Nanos) {
        self.cc.on_timer(&mut self.st, now);
    }

    /// When the next packet may leave: the last one's bytes at the current rate after it left.
    fn departure(&self) -> Option<Nanos> {
        let rate = self.rate();
        if rate.0 == 0 {
            return None;
        }
        Some(if self.packets_sent == 0 {
            Nanos::ZERO
        } else {
            self.last_departure + rate.tx_time(self.last_wire_bytes)
        })
    }

    /// Whether the window lets another new packet go.
    fn window_open(&self) -> bool {
        self.snd_nxt < self.size && self.snd_nxt - self.snd_una < self.st.cwnd_bytes.min(self.bdp_cap)
    }

    /// IRN in recovery: the next packet to resend (its first byte), one below the highest
    /// selectively acknowledged packet (or all sent, after a timeout) that has not arrived.
    fn next_lost(&self) -> Option<u64> {
        self.recovery_until?;
        self.first_lost(self.rtx_next.max(self.snd_una))
    }

    /// Whether anything may go now, window and recovery considered.
    fn can_send(&self) -> bool {
        self.window_open() || self.next_lost().is_some()
    }

    /// The retransmission timeout from now: IRN's fixed pair, or the estimator's.
    fn rto(&self, backed_off: bool) -> Nanos {
        if self.irn {
            let mss = self.st.mss_bytes.max(1);
            let in_flight = (self.snd_max - self.snd_una).div_ceil(mss).saturating_sub(self.sacked.len() as u64);
            return if in_flight <= IRN_FEW_PACKETS { self.cfg.irn_rto_low } else { self.cfg.irn_rto_high };
        }
        if backed_off {
            self.rtt.backed_off(self.backoff)
        } else {
            self.rtt.rto()
        }
    }

    /// Sends what the rate and the window let go now (at most one packet per call: the next
    /// one waits for the previous one's bytes at the rate).
    fn pump(&mut self, now: Nanos, out: &mut Vec<Packet>) {
        if self.done() || !self.can_send() {
            self.next_departure = Nanos::MAX;
            return;
        }
        let nic = self.nic_ready.unwrap_or(Nanos::ZERO);
        match self.departure() {
            Some(at) if at <= now && nic <= now => {
                self.send_next(now, out);
                self.next_departure = if self.can_send() { self.departure().unwrap_or(Nanos::MAX) } else { Nanos::MAX };
            }
            Some(at) => self.next_departure = at.max(nic).max(now),
            None => self.next_departure = Nanos::MAX,
        }
    }

    fn send_next(&mut self, now: Nanos, out: &mut Vec<Packet>) {
        // IRN resends a lost packet before any new one; go-back-N resends by moving snd_nxt.
        let lost = self.next_lost();
        let seq = lost.unwrap_or(self.snd_nxt);
        let len = (self.size - seq).min(self.st.mss_bytes);
        let retx = seq < self.snd_max;
        let wire = len + self.cfg.header_bytes as u64;
        let mut f = if self.ect { flags::ECT } else { 0 };
        if retx {
            f |= flags::RETX;
            self.retransmits += 1;
        }
        out.push(Packet {
            flow: self.flow,
            src: self.src,
            dst: self.dst,
            kind: PacketKind::Data,
            flags: f,
            wire_bytes: wire as u32,
            payload_bytes: len as u32,
            seq,
            ts_sent_ns: now.as_nanos(),
            ..Default::default()
        });
        if lost.is_some() {
            self.rtx_next = seq + len;
        } else {
            self.snd_nxt += len;
            self.snd_max = self.snd_max.max(self.snd_nxt);
        }
        let mut wire = wire;
        if let (Some(owner), Some(p)) = (self.router, out.last_mut()) {
            let ctx = SendContext {
                now,
                kind: PacketKind::Data,
                size: (self.size != u64::MAX).then_some(self.size),
                bytes_sent: self.snd_max,
                seq,
                snd_una: self.snd_una,
                sacked_bytes: 0,
                srtt: self.rtt.srtt(),
                mss_bytes: self.st.mss_bytes,
            };
            if self.cc.stamp(&ctx, &mut p.router) {
                p.router.owner = owner;
                p.flags |= flags::ROUTER;
                p.wire_bytes += p.router.wire_bytes as u32;
                wire = p.wire_bytes as u64;
            }
        }
        self.packets_sent += 1;
        self.last_departure = now;
        self.last_wire_bytes = wire;
        self.cc.on_sent(now, wire);
        if self.rto_deadline.is_none() {
            self.rto_deadline = Some(now + self.rto(true));
        }
    }

    fn on_ack(&mut self, now: Nanos, p: &Packet) {
        if p.ack <= self.snd_una {
            return;
        }
        // The round trip of the packet this acknowledgement answers (its timestamp echoed).
        let sample = (p.ts_echo_ns > 0).then(|| now.saturating_sub(Nanos::from_nanos(p.ts_echo_ns)));
        if let Some(r) = sample {
            self.rtt.sample(r);
        }
        let acked = p.ack.min(self.snd_max) - self.snd_una;
        self.snd_una += acked;
        self.snd_nxt = self.snd_nxt.max(self.snd_una);
        self.backoff = 0;
        if self.irn {
            self.sacked = self.sacked.split_off(&self.snd_una);
            if self.recovery_until.is_some_and(|r| self.snd_una >= r) {
                self.recovery_until = None;
            }
        }
        self.rto_deadline = (self.snd_una < self.snd_max).then(|| now + self.rto(false));
        let sample = AckSample {
            now,
            acked_bytes: acked,
            ce_bytes: 0,
            ece: false,
            rtt: sample,
            snd_una: self.snd_una,
            snd_nxt: self.snd_nxt,
            bytes_sent: self.snd_max,
        };
        self.cc.on_ack(&mut self.st, &sample);
        if p.has(flags::ROUTER) {
            self.cc.on_feedback(&mut self.st, &p.router);
        }
        if self.done() && self.completed_at.is_none() {
            self.completed_at = Some(now);
            self.rto_deadline = None;
        }
    }

    /// IRN: the first packet from the byte `from` below the highest selectively acknowledged
    /// one (or all sent, after a timeout) that has not arrived.
    fn first_lost(&self, from: u64) -> Option<u64> {
        let mss = self.st.mss_bytes.max(1);
        let mut seq = from;
        while seq < self.lost_below.min(self.snd_max) {
            if !self.sacked.contains(&seq) {
                return Some(seq);
            }
            seq += mss;
        }
        None
    }

    /// Go-back-N: everything from the byte `from` is sent again.
    fn go_back(&mut self, from: u64) {
        self.snd_nxt = from.max(self.snd_una).min(self.snd_max);
    }
}

impl Transport for RoceSender {
    fn start(&mut self, now: Nanos, out: &mut Vec<Packet>) {
        self.advance(now);
        self.pump(now, out);
    }

    fn on_packet(&mut self, now: Nanos, p: &Packet, out: &mut Vec<Packet>) {
        self.advance(now);
        match p.kind {
            PacketKind::Ack => self.on_ack(now, p),
            PacketKind::Nack if self.irn => {
                self.nacks += 1;
                self.on_ack(now, p);
                if p.seq >= self.snd_una && p.seq < self.snd_max {
                    self.sacked.insert(p.seq);
                    self.lost_below = self.lost_below.max(p.seq);
                }
                if self.recovery_until.is_none() && self.first_lost(self.snd_una).is_some() {
                    // The first NACK of a loss: resend what is missing, once, until the
                    // cumulative acknowledgement passes what was sent by now.
                    self.recovery_until = Some(self.snd_max);
                    self.rtx_next = self.snd_una;
                    let flight = self.snd_nxt - self.snd_una;
                    self.cc.on_congestion(&mut self.st, CongestionEvent::Loss { flight_bytes: flight });
                }
            }
            PacketKind::Nack => {
                self.nacks += 1;
                self.on_ack(now, p);
                let flight = self.snd_nxt - self.snd_una;
                self.cc.on_congestion(&mut self.st, CongestionEvent::Loss { flight_bytes: flight });
                self.go_back(p.ack);
            }
            PacketKind::Cnp => {
                self.cnps += 1;
                let flight = self.snd_nxt - self.snd_una;
                self.cc.on_congestion(&mut self.st, CongestionEvent::Notification { flight_bytes: flight });
            }
            _ => {}
        }
        self.pump(now, out);
    }

    fn on_timer(&mut self, now: Nanos, out: &mut Vec<Packet>) {
        self.advance(now);
        if self.rto_deadline.is_some_and(|d| d <= now) && !self.done() {
            self.timeouts += 1;
            self.backoff += 1;
            let flight = self.snd_nxt - self.snd_una;
            self.cc.on_congestion(&mut self.st, CongestionEvent::Timeout { flight_bytes: flight });
            if self.irn {
                // Everything sent and not acknowledged selectively is resent.
                self.recovery_until = Some(self.snd_max);
                self.lost_below = self.snd_max;
                self.rtx_next = self.snd_una;
            } else {
                self.go_back(self.snd_una);
            }
            self.rto_deadline = Some(now + self.rto(true));
        }
        self.pump(now, out);
    }

    fn timer_deadline(&self) -> Option<Nanos> {
        if self.done() {
            return None;
        }
        let send = (self.next_departure != Nanos::MAX).then_some(self.next_departure);
        [send, self.rto_deadline, self.cc.deadline()].into_iter().flatten().min()
    }

    fn is_complete(&self) -> bool {
        self.done()
    }
    fn bytes_acked(&self) -> u64 {
        self.snd_una.min(self.size)
    }
    fn bytes_sent(&self) -> u64 {
        self.snd_max
    }
}
