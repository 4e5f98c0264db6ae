//! The `uet` transport: Ultra Ethernet's packet delivery as uet-htsim's `UecSrc` runs it with
//! its sender-based congestion control: a window of bytes in flight (the protocol's: NSCC),
//! an acknowledgement of every packet with its ECN echo, a NACK for every trimmed packet, and
//! one fixed retransmission timeout.
//!
//! - A packet may leave while the bytes in flight, its own included, fit in the window.
//! - An ACK frees its packet's bytes and gives the algorithm the bytes, the echo and the round
//!   trip of the packet it answers (not of a retransmission).
//! - A NACK frees its packet's bytes and queues it to be sent again; resent packets go first,
//!   lowest first. The algorithm sees a loss.
//! - The timer runs for the oldest packet in flight: after the protocol's timeout without its
//!   ACK or NACK it is counted lost, queued again, and the algorithm sees a timeout; the timer
//!   then runs for the next oldest. There is no backoff.
//!
//! The receiver is NDP's ([`crate::ndp::NdpReceiver`]: an ACK per packet, a NACK per trimmed
//! header, at once); pulls play no part. uet-htsim acknowledges every 16 KB by default
//! (`-sack_threshold`); fctlab acknowledges every packet, as uet-htsim does with
//! `-sack_threshold` below a packet's size.

#[cfg(test)]
mod tests;

use crate::cc::{AckSample, AnyCc, CcState, CongestionEvent};
use crate::config::TcpConfig;
use crate::ndp::Segments;
use crate::rtt::RttEstimator;
use crate::transport::Transport;
use fctlab_engine::Nanos;
use fctlab_net::packet::flags;
use fctlab_net::{FlowId, NodeId, Packet, PacketKind};
use std::collections::{BTreeSet, VecDeque};

/// One packet sent and not acknowledged yet.
#[derive(Copy, Clone, Debug)]
struct Outstanding {
    acked: bool,
    /// Counted in the bytes in flight (not acknowledged, NACKed nor timed out since sent).
    in_flight: bool,
    /// When it was last sent.
    sent: Nanos,
}

pub struct UetSender {
    seg: Segments,
    pub cc: AnyCc,
    pub st: CcState,
    /// Packets `base..next` have been sent.
    base: u64,
    next: u64,
    window: VecDeque<Outstanding>,
    rtx: BTreeSet<u64>,
    in_flight: u64,
    rtt: RttEstimator,
    rto: Nanos,
    bytes_acked: u64,
    pub packets_sent: u64,
    pub retransmits: u64,
    pub timeouts: u64,
    pub nacks: u64,
}

impl UetSender {
    pub fn new(flow: FlowId, src: NodeId, dst: NodeId, size: Option<u64>, cfg: &TcpConfig, cc: AnyCc) -> Self {
        let mut own = *cfg;
        cc.tune(&mut own);
        let mss = own.mss_bytes.max(1) as u64;
        let seg = Segments::new(flow, src, dst, size, &own);
        UetSender {
            seg,
            cc,
            st: CcState {
                cwnd_bytes: mss + own.header_bytes as u64,
                ssthresh_bytes: CcState::SSTHRESH_UNLIMITED,
                mss_bytes: mss,
            },
            base: 0,
            next: 0,
            window: VecDeque::new(),
            rtx: BTreeSet::new(),
            in_flight: 0,
            rtt: RttEstimator::new(&own),
            rto: own.min_rto,
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
    /// Bytes in flight (tests, traces).
    pub fn in_flight(&self) -> u64 {
        self.in_flight
    }

    fn done(&self) -> bool {
        self.base >= self.seg.packets
    }

    /// The packet a reply names, if it is outstanding and not acknowledged.
    fn outstanding(&self, seq: u64) -> Option<u64> {
        let i = seq / self.seg.mss;
        (i >= self.base && i < self.next && !self.window[(i - self.base) as usize].acked).then_some(i)
    }

    /// Packet `i` leaves no longer counted in flight (acknowledged, NACKed or timed out).
    fn leave_flight(&mut self, i: u64) {
        let w = self.seg.wire(i);
        let o = &mut self.window[(i - self.base) as usize];
        if o.in_flight {
            o.in_flight = false;
            self.in_flight -= w;
        }
    }

    fn send(&mut self, now: Nanos, i: u64, retx: bool, out: &mut Vec<Packet>) {
        let mut f = flags::ECT;
        if retx {
            f |= flags::RETX;
            self.retransmits += 1;
        }
        self.packets_sent += 1;
        let w = self.seg.wire(i);
        self.in_flight += w;
        let o = &mut self.window[(i - self.base) as usize];
        o.in_flight = true;
        o.sent = now;
        out.push(self.seg.packet(i, now, f));
    }

    /// Sends what the window lets go: packets to resend first (lowest first), then new ones.
    fn pump(&mut self, now: Nanos, out: &mut Vec<Packet>) {
        loop {
            let resend = loop {
                match self.rtx.first().copied() {
                    Some(i) if i < self.base || self.window[(i - self.base) as usize].acked => {
                        self.rtx.pop_first();
                    }
                    other => break other,
                }
            };
            let i = match resend {
                Some(i) => i,
                None if self.next < self.seg.packets => self.next,
                None => return,
            };
            if self.in_flight + self.seg.wire(i) > self.st.cwnd_bytes.max(self.seg.wire(i)) && self.in_flight > 0 {
                return;
            }
            if resend.is_some() {
                self.rtx.pop_first();
                self.send(now, i, true, out);
            } else {
                self.next += 1;
                self.window.push_back(Outstanding { acked: false, in_flight: false, sent: now });
                self.send(now, i, false, out);
            }
        }
    }

    fn on_ack(&mut self, now: Nanos, p: &Packet) {
        let Some(i) = self.outstanding(p.seq) else { return };
        self.leave_flight(i);
        self.window[(i - self.base) as usize].acked = true;
        let payload = self.seg.own_bytes(i);
        self.bytes_acked += payload;
        let rtt =
            (!p.has(flags::RETX) && p.ts_echo_ns > 0).then(|| now.saturating_sub(Nanos::from_nanos(p.ts_echo_ns)));
        if let Some(r) = rtt {
            self.rtt.sample(r);
        }
        let ece = p.has(flags::ECE);
        let sample = AckSample {
            now,
            acked_bytes: self.seg.wire(i),
            ce_bytes: if ece { payload } else { 0 },
            ece,
            rtt,
            snd_una: 0,
            snd_nxt: self.in_flight,
            bytes_sent: self.next * self.seg.mss,
        };
        self.cc.on_ack(&mut self.st, &sample);
        while self.window.front().is_some_and(|o| o.acked) {
            self.window.pop_front();
            self.base += 1;
        }
    }

    /// The oldest packet in flight, and when it was sent.
    fn oldest(&self) -> Option<(u64, Nanos)> {
        self.window
            .iter()
            .enumerate()
            .filter(|(_, o)| o.in_flight)
            .min_by_key(|(k, o)| (o.sent, *k))
            .map(|(k, o)| (self.base + k as u64, o.sent))
    }
}

impl Transport for UetSender {
    fn start(&mut self, now: Nanos, out: &mut Vec<Packet>) {
        self.cc.on_timer(&mut self.st, now);
        self.cc.init(&mut self.st);
        self.pump(now, out);
    }

    fn on_packet(&mut self, now: Nanos, p: &Packet, out: &mut Vec<Packet>) {
        self.cc.on_timer(&mut self.st, now);
        match p.kind {
            PacketKind::Ack => self.on_ack(now, p),
            PacketKind::Nack => {
                self.nacks += 1;
                if let Some(i) = self.outstanding(p.seq) {
                    self.leave_flight(i);
                    self.rtx.insert(i);
                    let flight = self.in_flight;
                    self.cc.on_congestion(&mut self.st, CongestionEvent::Loss { flight_bytes: flight });
                }
            }
            _ => {}
        }
        if !self.done() {
            self.pump(now, out);
        }
    }

    fn on_timer(&mut self, now: Nanos, out: &mut Vec<Packet>) {
        self.cc.on_timer(&mut self.st, now);
        // Every packet whose time is up, oldest first (one timer, re-run for the next).
        while let Some((i, sent)) = self.oldest() {
            if sent + self.rto > now {
                break;
            }
            self.timeouts += 1;
            self.leave_flight(i);
            self.rtx.insert(i);
            let flight = self.in_flight;
            self.cc.on_congestion(&mut self.st, CongestionEvent::Timeout { flight_bytes: flight });
        }
        self.pump(now, out);
    }

    fn timer_deadline(&self) -> Option<Nanos> {
        if self.done() {
            return None;
        }
        self.oldest().map(|(_, sent)| sent + self.rto)
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
