//! The receiving side of a `roce` flow (a queue pair's responder): ACKs, NACKs and CNPs, with
//! packets out of order dropped (go-back-N) or kept (IRN) (see the module documentation of
//! [`super`]).

use crate::config::{RoceRecovery, TcpConfig};
use fctlab_engine::Nanos;
use fctlab_net::packet::flags;
use fctlab_net::{FlowId, NodeId, Packet, PacketKind};
use std::collections::BTreeMap;

pub struct RoceReceiver {
    flow: FlowId,
    node: NodeId,
    peer: NodeId,
    /// Bytes of the message (`u64::MAX`: long-lived).
    size: u64,
    header_bytes: u32,
    ack_interval: u32,
    nack_interval: Nanos,
    cnp_interval: Nanos,
    /// The next byte expected.
    expected: u64,
    /// In-order packets not acknowledged yet.
    unacked: u32,
    /// The byte the last NACK named and when it may be named again.
    last_nack: Option<(u64, Nanos)>,
    /// When the last CNP left.
    last_cnp: Option<Nanos>,
    /// IRN: packets out of order are kept (sequence number -> payload bytes) until the gap
    /// before them fills. Go-back-N drops them.
    irn: bool,
    kept: BTreeMap<u64, u64>,
    /// Data packets that arrived, of them out of order (dropped) and duplicates.
    pub data_packets: u64,
    pub out_of_order: u64,
    pub duplicate_packets: u64,
    pub nacks_sent: u64,
    pub cnps_sent: u64,
}

impl RoceReceiver {
    pub fn new(flow: FlowId, node: NodeId, peer: NodeId, size: Option<u64>, cfg: &TcpConfig) -> RoceReceiver {
        RoceReceiver {
            flow,
            node,
            peer,
            size: size.unwrap_or(u64::MAX),
            header_bytes: cfg.header_bytes,
            ack_interval: cfg.ack_interval.max(1),
            nack_interval: cfg.nack_interval,
            cnp_interval: cfg.cnp_interval,
            expected: 0,
            unacked: 0,
            last_nack: None,
            last_cnp: None,
            irn: cfg.roce_recovery == RoceRecovery::Irn,
            kept: BTreeMap::new(),
            data_packets: 0,
            out_of_order: 0,
            duplicate_packets: 0,
            nacks_sent: 0,
            cnps_sent: 0,
        }
    }

    /// In-order bytes received (delivered to the application).
    pub fn bytes_delivered(&self) -> u64 {
        self.expected
    }

    /// A reply to the sender: an ACK, a NACK or a CNP, header only.
    fn reply(&self, kind: PacketKind, p: &Packet) -> Packet {
        let mut r = Packet {
            flow: self.flow,
            src: self.node,
            dst: self.peer,
            kind,
            wire_bytes: self.header_bytes,
            ack: self.expected,
            ts_echo_ns: p.ts_sent_ns,
            ..Default::default()
        };
        if kind != PacketKind::Cnp && p.has(flags::ROUTER) {
            // The telemetry the data packet collected goes back on its acknowledgement.
            r.router = p.router;
            r.flags |= flags::ROUTER;
            r.wire_bytes += p.router.wire_bytes as u32;
        }
        r
    }

    /// A data packet arrived; the replies go to `out`.
    pub fn on_packet(&mut self, now: Nanos, p: &Packet, out: &mut Vec<Packet>) {
        self.data_packets += 1;
        if p.has(flags::CE) && self.last_cnp.map_or(true, |t| now >= t + self.cnp_interval) {
            self.last_cnp = Some(now);
            self.cnps_sent += 1;
            out.push(self.reply(PacketKind::Cnp, p));
        }
        let len = p.payload_bytes as u64;
        if p.seq == self.expected {
            self.expected += len;
            // (IRN: the packets kept beyond the gap now follow in order.)
            while let Some(n) = self.kept.remove(&self.expected) {
                self.expected += n;
            }
            self.unacked += 1;
            if self.unacked >= self.ack_interval || self.expected >= self.size {
                self.unacked = 0;
                out.push(self.reply(PacketKind::Ack, p));
            }
        } else if self.irn && p.seq > self.expected {
            // IRN keeps it and NACKs it at once, naming it: the sender learns what arrived.
            if self.kept.insert(p.seq, len).is_some() {
                self.duplicate_packets += 1;
            } else {
                self.out_of_order += 1;
            }
            self.nacks_sent += 1;
            let mut nack = self.reply(PacketKind::Nack, p);
            nack.seq = p.seq;
            out.push(nack);
        } else if p.seq > self.expected {
            self.out_of_order += 1;
            let again = match self.last_nack {
                Some((byte, until)) => byte != self.expected || now >= until,
                None => true,
            };
            if again {
                self.last_nack = Some((self.expected, now + self.nack_interval));
                self.nacks_sent += 1;
                out.push(self.reply(PacketKind::Nack, p));
            }
        } else {
            self.duplicate_packets += 1;
            out.push(self.reply(PacketKind::Ack, p));
        }
    }
}
