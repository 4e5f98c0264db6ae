//! The receiving side of an `ndp` flow: an ACK for every data packet, a NACK for every
//! trimmed header, and the pulls its host's pacer lets it send (see [`super`]).

use super::{packets_of, payload_of};
use crate::config::TcpConfig;
use fctlab_engine::Nanos;
use fctlab_net::packet::flags;
use fctlab_net::{FlowId, NodeId, Packet, PacketKind};
use std::collections::VecDeque;

pub struct NdpReceiver {
    flow: FlowId,
    node: NodeId,
    peer: NodeId,
    size: u64,
    packets: u64,
    mss: u64,
    whole: bool,
    header_bytes: u32,
    /// Packets below `base` all arrived; `got[k]`: packet `base + k` arrived.
    base: u64,
    got: VecDeque<bool>,
    delivered: u64,
    pulls_issued: u32,
    pub data_packets: u64,
    pub duplicate_packets: u64,
    /// Data packets that arrived above a missing one.
    pub out_of_order: u64,
    pub trimmed_headers: u64,
}

impl NdpReceiver {
    pub fn new(flow: FlowId, node: NodeId, peer: NodeId, size: Option<u64>, cfg: &TcpConfig) -> NdpReceiver {
        let mss = cfg.mss_bytes.max(1) as u64;
        let size = size.unwrap_or(u64::MAX);
        NdpReceiver {
            flow,
            node,
            peer,
            size,
            packets: packets_of(size, mss),
            mss,
            whole: cfg.whole_packets,
            header_bytes: cfg.header_bytes,
            base: 0,
            got: VecDeque::new(),
            delivered: 0,
            pulls_issued: 0,
            data_packets: 0,
            duplicate_packets: 0,
            out_of_order: 0,
            trimmed_headers: 0,
        }
    }

    /// In-order bytes received.
    pub fn bytes_delivered(&self) -> u64 {
        self.delivered
    }

    /// Every packet of the message has arrived: no more pulls.
    pub fn has_everything(&self) -> bool {
        self.base >= self.packets
    }

    fn reply(&self, kind: PacketKind, p: &Packet) -> Packet {
        Packet {
            flow: self.flow,
            src: self.node,
            dst: self.peer,
            kind,
            flags: if p.has(flags::CE) { flags::ECE } else { 0 } | (p.flags & flags::RETX),
            wire_bytes: self.header_bytes,
            seq: p.seq,
            ack: self.delivered,
            ts_echo_ns: p.ts_sent_ns,
            ..Default::default()
        }
    }

    /// A data packet or a trimmed header arrived: its ACK or NACK goes to `out` (last). True
    /// when the host's pacer owes the flow a pull for it.
    pub fn on_packet(&mut self, _now: Nanos, p: &Packet, out: &mut Vec<Packet>) -> bool {
        if p.kind != PacketKind::Data {
            return false;
        }
        if p.has(flags::TRIMMED) {
            self.trimmed_headers += 1;
            out.push(self.reply(PacketKind::Nack, p));
            return !self.has_everything();
        }
        self.data_packets += 1;
        let i = p.seq / self.mss;
        if i < self.base || self.got.get((i - self.base) as usize) == Some(&true) {
            self.duplicate_packets += 1;
        } else {
            let k = (i - self.base) as usize;
            if self.got.len() <= k {
                self.got.resize(k + 1, false);
            }
            self.got[k] = true;
            if k > 0 {
                self.out_of_order += 1;
            }
            while self.got.front() == Some(&true) {
                self.got.pop_front();
                self.delivered +=
                    payload_of(self.base, self.size, self.mss, self.whole).min(self.size - self.delivered);
                self.base += 1;
            }
        }
        out.push(self.reply(PacketKind::Ack, p));
        !self.has_everything()
    }

    /// Gives the reply `r` (its ACK or NACK just sent) the flow's next pull number.
    pub fn stamp_pull(&mut self, r: &mut Packet) {
        self.pulls_issued += 1;
        r.pull_no = self.pulls_issued;
    }

    /// A pull packet with the flow's next pull number.
    pub fn pull(&mut self, now: Nanos) -> Packet {
        self.pulls_issued += 1;
        Packet {
            flow: self.flow,
            src: self.node,
            dst: self.peer,
            kind: PacketKind::Pull,
            wire_bytes: self.header_bytes,
            ack: self.delivered,
            pull_no: self.pulls_issued,
            ts_sent_ns: now.as_nanos(),
            ..Default::default()
        }
    }
}
