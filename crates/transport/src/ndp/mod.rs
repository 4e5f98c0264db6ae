//! The `ndp` transport: NDP's messages (Handley et al., "Re-architecting datacenter networks
//! and stacks for low latency and high performance", SIGCOMM 2017), over switches that trim
//! (`queue = "trim"`) and spray (`[network] load_balancing`).
//!
//! - **The sender** sends its first window (`ndp_initial_window` packets) at once, at its
//!   NIC's line rate. From then on it sends one packet per pull: a NACKed packet first (lowest
//!   first), else its next new one. Pulls are numbered per flow ([`fctlab_net::Packet::pull_no`]),
//!   so a lost pull is made up by the next one; a pull that finds nothing to send is kept, and
//!   a later NACK spends it at once.
//! - **The receiver** answers every data packet with an ACK of it and every trimmed header
//!   with a NACK of it, at once, and asks its host's pull pacer for one pull per packet or
//!   header ([`NdpReceiver::on_packet`]).
//! - **The pull pacer** of each receiving host (the simulation's, `crates/sim/src/pull.rs`)
//!   spaces the pulls of all the host's flows one full packet time apart at `ndp_pull_rate` of
//!   the host's link rate, in turn among the flows. A pull due while the pacer is idle rides
//!   on the ACK or NACK; otherwise a separate PULL packet follows when its time comes.
//! - **Losses.** A trimmed packet comes back as a NACK. A header or a pull the network drops
//!   is found by the sender's timer: after `ndp_rto` without a word from the receiver while
//!   packets are outstanding, it queues every unacknowledged packet for resending and sends
//!   the lowest at once, whose ACK restarts the pulls (the timeout doubles while nothing comes
//!   back).
//!
//! Every packet carries a full segment except a flow's last, which carries what is left
//! (`whole_packets = true` pads it, as htsim's NDP does).

mod receiver;
#[cfg(test)]
mod tests;

pub use receiver::NdpReceiver;

use crate::cc::{AnyCc, CcState};
use crate::config::TcpConfig;
use crate::rtt::RttEstimator;
use crate::transport::Transport;
use fctlab_engine::Nanos;
use fctlab_net::packet::flags;
use fctlab_net::{FlowId, NodeId, Packet, PacketKind};
use std::collections::{BTreeSet, VecDeque};

/// The number of packets of a flow of `size` bytes with `mss`-byte segments (a flow of no
/// bytes still sends one packet; a long-lived one never ends).
pub fn packets_of(size: u64, mss: u64) -> u64 {
    if size == u64::MAX {
        u64::MAX
    } else {
        size.div_ceil(mss).max(1)
    }
}

/// Payload bytes of packet `i` of a flow of `size` bytes.
pub fn payload_of(i: u64, size: u64, mss: u64, whole: bool) -> u64 {
    if whole {
        mss
    } else {
        mss.min(size.saturating_sub(i * mss))
    }
}

/// A message's data packets: its ends, its size, and each packet's bytes; shared by the
/// transports made for trimming switches (`ndp`, `eqds`, `uet`).
#[derive(Copy, Clone, Debug)]
pub struct Segments {
    pub flow: FlowId,
    pub src: NodeId,
    pub dst: NodeId,
    /// Bytes of the message (`u64::MAX`: long-lived), and its packets.
    pub size: u64,
    pub packets: u64,
    pub mss: u64,
    pub header_bytes: u32,
    /// Every packet full (`whole_packets`).
    pub whole: bool,
}

impl Segments {
    /// The packets of `size` bytes (None: long-lived) from `src` to `dst` with `cfg`'s sizes.
    pub fn new(flow: FlowId, src: NodeId, dst: NodeId, size: Option<u64>, cfg: &TcpConfig) -> Segments {
        let mss = cfg.mss_bytes.max(1) as u64;
        let size = size.unwrap_or(u64::MAX);
        let packets = packets_of(size, mss);
        Segments { flow, src, dst, size, packets, mss, header_bytes: cfg.header_bytes, whole: cfg.whole_packets }
    }

    /// Payload bytes of packet `i`.
    pub fn payload(&self, i: u64) -> u64 {
        payload_of(i, self.size, self.mss, self.whole)
    }

    /// Bytes on the wire of packet `i`.
    pub fn wire(&self, i: u64) -> u64 {
        self.payload(i) + self.header_bytes as u64
    }

    /// Of packet `i`'s payload, the message's own bytes (the padding of a whole last packet
    /// left out).
    pub fn own_bytes(&self, i: u64) -> u64 {
        self.payload(i).min(self.size.saturating_sub(i * self.mss))
    }

    /// Data packet `i` leaving at `now` with `flags`.
    pub fn packet(&self, i: u64, now: Nanos, flags: u8) -> Packet {
        let payload = self.payload(i) as u32;
        Packet {
            flow: self.flow,
            src: self.src,
            dst: self.dst,
            kind: PacketKind::Data,
            flags,
            wire_bytes: payload + self.header_bytes,
            payload_bytes: payload,
            seq: i * self.mss,
            ts_sent_ns: now.as_nanos(),
            ..Default::default()
        }
    }
}

pub struct NdpSender {
    seg: Segments,
    ecn: bool,
    pub cc: AnyCc,
    /// The first window (read by the window trace; it limits nothing after the start).
    pub st: CcState,
    initial_window: u64,
    /// Packets `base..next` have been sent: whether each is acknowledged.
    base: u64,
    next: u64,
    acked: VecDeque<bool>,
    /// NACKed (or timed-out) packets to send again, lowest first.
    rtx: BTreeSet<u64>,
    /// The highest pull number received, and pulls spent.
    max_pull: u32,
    last_pull: u32,
    rtt: RttEstimator,
    rto: Nanos,
    max_rto: Nanos,
    backoff: u32,
    /// When the receiver was last heard from (or the flow started).
    last_heard: Nanos,
    bytes_acked: u64,
    pub packets_sent: u64,
    pub retransmits: u64,
    pub timeouts: u64,
    pub nacks: u64,
    pub pulls: u64,
}

impl NdpSender {
    /// A sender of `size` bytes (None: long-lived) with the scenario's settings `cfg` (its
    /// protocol tunes the first window and the timeout).
    pub fn new(
        flow: FlowId,
        src: NodeId,
        dst: NodeId,
        size: Option<u64>,
        cfg: &TcpConfig,
        cc: AnyCc,
        ecn: bool,
    ) -> Self {
        let mut own = *cfg;
        cc.tune(&mut own);
        let mss = own.mss_bytes.max(1) as u64;
        let seg = Segments::new(flow, src, dst, size, &own);
        let initial_window = own.initial_cwnd_segments.max(1) as u64;
        NdpSender {
            seg,
            ecn,
            cc,
            st: CcState {
                cwnd_bytes: initial_window * mss,
                ssthresh_bytes: CcState::SSTHRESH_UNLIMITED,
                mss_bytes: mss,
            },
            initial_window,
            base: 0,
            next: 0,
            acked: VecDeque::new(),
            rtx: BTreeSet::new(),
            max_pull: 0,
            last_pull: 0,
            rtt: RttEstimator::new(&own),
            rto: own.min_rto,
            max_rto: own.max_rto.max(own.min_rto),
            backoff: 0,
            last_heard: Nanos::ZERO,
            bytes_acked: 0,
            packets_sent: 0,
            retransmits: 0,
            timeouts: 0,
            nacks: 0,
            pulls: 0,
        }
    }

    pub fn srtt(&self) -> Option<Nanos> {
        self.rtt.srtt()
    }
    pub fn rtt_measured(&self) -> Option<(Nanos, Nanos)> {
        self.rtt.measured()
    }

    fn done(&self) -> bool {
        self.base >= self.seg.packets
    }

    /// Sends packet `i` (again when `retx`).
    fn send(&mut self, now: Nanos, i: u64, retx: bool, out: &mut Vec<Packet>) {
        let mut f = if self.ecn { flags::ECT } else { 0 };
        if retx {
            f |= flags::RETX;
            self.retransmits += 1;
        }
        self.packets_sent += 1;
        out.push(self.seg.packet(i, now, f));
    }

    /// Sends the next packet owed: a NACKed one (lowest first), else a new one. False when
    /// there is none.
    fn send_one(&mut self, now: Nanos, out: &mut Vec<Packet>) -> bool {
        while let Some(i) = self.rtx.pop_first() {
            if i >= self.base && !self.acked[(i - self.base) as usize] {
                self.send(now, i, true, out);
                return true;
            }
        }
        if self.next < self.seg.packets {
            let i = self.next;
            self.next += 1;
            self.acked.push_back(false);
            self.send(now, i, false, out);
            return true;
        }
        false
    }

    /// Spends the pulls received and not spent yet.
    fn send_pulled(&mut self, now: Nanos, out: &mut Vec<Packet>) {
        while self.last_pull < self.max_pull && self.send_one(now, out) {
            self.last_pull += 1;
        }
    }

    /// The packet a reply names (by its sequence number), if it is outstanding.
    fn outstanding(&self, seq: u64) -> Option<u64> {
        let i = seq / self.seg.mss;
        (i >= self.base && i < self.next && !self.acked[(i - self.base) as usize]).then_some(i)
    }

    fn on_ack(&mut self, now: Nanos, p: &Packet) {
        let Some(i) = self.outstanding(p.seq) else { return };
        self.acked[(i - self.base) as usize] = true;
        self.bytes_acked += self.seg.own_bytes(i);
        if p.ts_echo_ns > 0 && !p.has(flags::RETX) {
            self.rtt.sample(now.saturating_sub(Nanos::from_nanos(p.ts_echo_ns)));
        }
        while self.acked.front() == Some(&true) {
            self.acked.pop_front();
            self.base += 1;
        }
    }
}

impl Transport for NdpSender {
    fn start(&mut self, now: Nanos, out: &mut Vec<Packet>) {
        self.last_heard = now;
        for _ in 0..self.initial_window {
            if !self.send_one(now, out) {
                break;
            }
        }
    }

    fn on_packet(&mut self, now: Nanos, p: &Packet, out: &mut Vec<Packet>) {
        self.last_heard = now;
        self.backoff = 0;
        match p.kind {
            PacketKind::Ack => self.on_ack(now, p),
            PacketKind::Nack => {
                self.nacks += 1;
                if let Some(i) = self.outstanding(p.seq) {
                    self.rtx.insert(i);
                }
            }
            PacketKind::Pull => self.pulls += 1,
            _ => {}
        }
        self.max_pull = self.max_pull.max(p.pull_no);
        if !self.done() {
            self.send_pulled(now, out);
        }
    }

    fn on_timer(&mut self, now: Nanos, out: &mut Vec<Packet>) {
        match self.timer_deadline() {
            Some(d) if d <= now => {}
            _ => return,
        }
        self.timeouts += 1;
        self.backoff += 1;
        self.last_heard = now;
        // Everything outstanding is owed again; the lowest goes now, and its ACK brings the
        // pulls for the rest.
        for (k, &a) in self.acked.iter().enumerate() {
            if !a {
                self.rtx.insert(self.base + k as u64);
            }
        }
        self.send_one(now, out);
    }

    fn timer_deadline(&self) -> Option<Nanos> {
        if self.done() || self.base == self.next {
            return None;
        }
        let rto = Nanos::from_nanos(self.rto.as_nanos().saturating_mul(1u64 << self.backoff.min(16))).min(self.max_rto);
        Some(self.last_heard + rto)
    }

    fn is_complete(&self) -> bool {
        self.done()
    }
    fn bytes_acked(&self) -> u64 {
        self.bytes_acked
    }
    fn bytes_sent(&self) -> u64 {
        (self.next * self.seg.mss).min(self.seg.size)
    }
}
