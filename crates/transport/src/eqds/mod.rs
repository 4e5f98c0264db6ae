//! The `eqds` transport: EQDS's edge-queued datagrams (Olteanu et al., "An edge-queued
//! datagram service for all datacenter traffic", NSDI 2022), as htsim's `EqdsSrc` and
//! `EqdsSink` run them (csg-htsim sim/eqds.cpp), over trimming switches.
//!
//! - **The sender** starts speculating: it may send a first window (`eqds_initial_window`
//!   packets) without credit. It hands its packets to its NIC one at a time, as its line rate
//!   lets them go (as htsim's `EqdsNIC` takes them), so the first word from the receiver (an
//!   ACK, a NACK or a pull) can end the speculation while the window is still going out: what
//!   is left of it is given up. From then on it sends on credit:
//!   each pull grants one full packet's bytes, spent as a balance that may go below zero (a
//!   packet may leave while the balance is above zero). Every new data packet tells the
//!   receiver how many pulls the sender wants in all ([`fctlab_net::Packet::pull_no`] of a data
//!   packet: the pulls received so far plus those its remaining bytes, up to one window, need
//!   beyond the credit it holds). NACKed packets go first, lowest first.
//! - **The receiver** acknowledges every packet and NACKs every trimmed header, at once
//!   (NDP's receiver), keeps the highest number of pulls asked for, and owes its sender a
//!   retransmission's pulls for each trimmed header.
//! - **The pull pacer** of each receiving host (`crates/sim/src/pull.rs`) sends one pull per
//!   full packet time at `eqds_pull_rate` of its link rate, to the flows owed retransmission
//!   pulls first, then in turn to the flows whose demand it has not met; when none is owed
//!   anything it stops, and the next demand is pulled at once.
//! - **Losses.** A fixed timeout (`eqds_rto`) runs for the oldest packet in flight: it is sent
//!   again at once (without credit), which brings an ACK and a pull.

mod receiver;
#[cfg(test)]
mod tests;

pub use receiver::{EqdsReceiver, Owed};

use crate::cc::{AnyCc, CcState};
use crate::config::TcpConfig;
use crate::ndp::Segments;
use crate::rtt::RttEstimator;
use crate::transport::Transport;
use fctlab_engine::{BitsPerSec, Nanos};
use fctlab_net::packet::flags;
use fctlab_net::{FlowId, NodeId, Packet, PacketKind};
use std::collections::{BTreeSet, VecDeque};

#[derive(Copy, Clone, Debug)]
struct Outstanding {
    acked: bool,
    /// Sent and neither acknowledged, NACKed nor timed out since.
    in_flight: bool,
    sent: Nanos,
}

pub struct EqdsSender {
    seg: Segments,
    ecn: bool,
    pub cc: AnyCc,
    /// The first window (the window trace reads it).
    pub st: CcState,
    /// The first window in bytes.
    window_bytes: i64,
    speculating: bool,
    /// Speculative credit left, and credit from pulls (may be below zero).
    spec_credit: i64,
    pull_credit: i64,
    /// The highest pull number received.
    pulls: u32,
    base: u64,
    next: u64,
    window: VecDeque<Outstanding>,
    rtx: BTreeSet<u64>,
    rtt: RttEstimator,
    rto: Nanos,
    /// The sender's line rate, and when its NIC can take the next packet.
    line_rate: BitsPerSec,
    next_send: Nanos,
    bytes_acked: u64,
    pub packets_sent: u64,
    pub retransmits: u64,
    pub timeouts: u64,
    pub nacks: u64,
}

impl EqdsSender {
    /// A sender of `size` bytes (None: long-lived) whose NIC runs at `line_rate`.
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
    ) -> Self {
        let mut own = *cfg;
        cc.tune(&mut own);
        let mss = own.mss_bytes.max(1) as u64;
        let seg = Segments::new(flow, src, dst, size, &own);
        let full = mss + own.header_bytes as u64;
        let window_bytes = own.initial_cwnd_segments.max(1) as u64 * full;
        EqdsSender {
            seg,
            ecn,
            cc,
            st: CcState { cwnd_bytes: window_bytes, ssthresh_bytes: CcState::SSTHRESH_UNLIMITED, mss_bytes: mss },
            window_bytes: window_bytes as i64,
            speculating: true,
            spec_credit: window_bytes as i64,
            pull_credit: 0,
            pulls: 0,
            base: 0,
            next: 0,
            window: VecDeque::new(),
            rtx: BTreeSet::new(),
            rtt: RttEstimator::new(&own),
            rto: own.min_rto,
            line_rate,
            next_send: Nanos::ZERO,
            bytes_acked: 0,
            packets_sent: 0,
            retransmits: 0,
            timeouts: 0,
            nacks: 0,
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
    fn full(&self) -> i64 {
        (self.seg.mss + self.seg.header_bytes as u64) as i64
    }
    fn credit(&self) -> i64 {
        self.pull_credit + if self.speculating { self.spec_credit } else { 0 }
    }

    /// The pulls the sender wants in all: those received, plus what its new bytes left (at
    /// most a window) need beyond the credit it holds.
    fn pull_target(&self) -> u32 {
        let left_packets = self.seg.packets.saturating_sub(self.next);
        let backlog = left_packets.saturating_mul(self.full() as u64).min(self.window_bytes as u64) as i64;
        let need = (backlog - self.credit()).max(0);
        self.pulls.saturating_add(((need + self.full() - 1) / self.full()) as u32)
    }

    fn send(&mut self, now: Nanos, i: u64, retx: bool, out: &mut Vec<Packet>) {
        let payload = self.seg.payload(i) as u32;
        let wire = payload + self.seg.header_bytes;
        let mut f = if self.ecn { flags::ECT } else { 0 };
        if retx {
            f |= flags::RETX;
            self.retransmits += 1;
        }
        self.packets_sent += 1;
        // The NIC takes the next packet once this one has gone out.
        let tx = Nanos::from_nanos((wire as u64 * 8_000_000_000).div_ceil(self.line_rate.0.max(1)));
        self.next_send = self.next_send.max(now) + tx;
        let o = &mut self.window[(i - self.base) as usize];
        o.in_flight = true;
        o.sent = now;
        // Credit first from pulls, then (while speculating) from the first window.
        if self.pull_credit > 0 || !self.speculating {
            self.pull_credit -= wire as i64;
        } else {
            self.spec_credit -= wire as i64;
        }
        let target = self.pull_target();
        let mut p = self.seg.packet(i, now, f);
        p.pull_no = target;
        out.push(p);
    }

    /// The next packet owed: a NACKed one (lowest first), else a new one.
    fn next_owed(&mut self) -> Option<(u64, bool)> {
        while let Some(&i) = self.rtx.first() {
            if i >= self.base && !self.window[(i - self.base) as usize].acked {
                return Some((i, true));
            }
            self.rtx.pop_first();
        }
        (self.next < self.seg.packets).then_some((self.next, false))
    }

    /// Whether a packet is owed and there is credit for it.
    fn wants_to_send(&self) -> bool {
        self.credit() > 0 && (self.next < self.seg.packets || !self.rtx.is_empty())
    }

    /// Sends while there is credit and something to send, one packet per transmission time
    /// of its NIC.
    fn pump(&mut self, now: Nanos, out: &mut Vec<Packet>) {
        while self.credit() > 0 && self.next_send <= now {
            let Some((i, retx)) = self.next_owed() else { return };
            if retx {
                self.rtx.pop_first();
            } else {
                self.next += 1;
                self.window.push_back(Outstanding { acked: false, in_flight: false, sent: now });
            }
            self.send(now, i, retx, out);
        }
    }

    fn outstanding(&self, seq: u64) -> Option<u64> {
        let i = seq / self.seg.mss;
        (i >= self.base && i < self.next && !self.window[(i - self.base) as usize].acked).then_some(i)
    }

    /// The oldest packet in flight and when it was sent.
    fn oldest(&self) -> Option<(u64, Nanos)> {
        self.window
            .iter()
            .enumerate()
            .filter(|(_, o)| o.in_flight)
            .min_by_key(|(k, o)| (o.sent, *k))
            .map(|(k, o)| (self.base + k as u64, o.sent))
    }
}

impl Transport for EqdsSender {
    fn start(&mut self, now: Nanos, out: &mut Vec<Packet>) {
        self.pump(now, out);
    }

    fn on_packet(&mut self, now: Nanos, p: &Packet, out: &mut Vec<Packet>) {
        // The first word from the receiver ends the speculation.
        self.speculating = false;
        match p.kind {
            PacketKind::Ack => {
                if let Some(i) = self.outstanding(p.seq) {
                    let o = &mut self.window[(i - self.base) as usize];
                    o.acked = true;
                    o.in_flight = false;
                    self.bytes_acked += self.seg.own_bytes(i);
                    if !p.has(flags::RETX) && p.ts_echo_ns > 0 {
                        self.rtt.sample(now.saturating_sub(Nanos::from_nanos(p.ts_echo_ns)));
                    }
                    while self.window.front().is_some_and(|o| o.acked) {
                        self.window.pop_front();
                        self.base += 1;
                    }
                }
            }
            PacketKind::Nack => {
                self.nacks += 1;
                if let Some(i) = self.outstanding(p.seq) {
                    self.window[(i - self.base) as usize].in_flight = false;
                    self.rtx.insert(i);
                }
            }
            PacketKind::Pull if p.pull_no > self.pulls => {
                self.pull_credit += (p.pull_no - self.pulls) as i64 * self.full();
                self.pulls = p.pull_no;
            }
            _ => {}
        }
        if !self.done() {
            self.pump(now, out);
        }
    }

    fn on_timer(&mut self, now: Nanos, out: &mut Vec<Packet>) {
        if self.wants_to_send() && self.next_send <= now {
            self.pump(now, out);
        }
        let Some((i, sent)) = self.oldest() else { return };
        if sent + self.rto > now {
            return;
        }
        // The oldest packet in flight goes again at once, whatever the credit.
        self.timeouts += 1;
        self.rtx.remove(&i);
        self.send(now, i, true, out);
    }

    fn timer_deadline(&self) -> Option<Nanos> {
        if self.done() {
            return None;
        }
        let rto = self.oldest().map(|(_, sent)| sent + self.rto);
        let send = self.wants_to_send().then_some(self.next_send);
        match (rto, send) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
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
