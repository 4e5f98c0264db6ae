//! The TCP receiver: cumulative ACKs with SACK blocks, optional delayed ACKs, ECN echo and
//! the echo of router header fields.
//!
//! ECN: every ACK sets ECE when a data segment it acknowledges arrived with CE, and reports
//! the number of CE-marked payload bytes it covers, so that the sender sees the marking
//! fraction exactly (the information DCTCP needs). With delayed ACKs, an ACK is sent at once
//! when the CE state of arriving segments changes, so each ACK covers segments of one state.
//!
//! Router headers: the header of the latest packet that carried one (`flags::ROUTER`) goes
//! back on the next ACK (or the SYN-ACK), once, with its bytes added to the ACK. A data packet
//! without payload (a paced flow's header-only request) is acknowledged at once.

use crate::config::{SackRecovery, TcpConfig};
use crate::scoreboard::RangeSet;
use fctlab_engine::Nanos;
use fctlab_net::packet::flags;
use fctlab_net::{FlowId, NodeId, Packet, PacketKind, RouterHeader, SackBlock};

pub struct TcpReceiver {
    flow: FlowId,
    node: NodeId,
    peer: NodeId,
    cfg: TcpConfig,
    rcv_nxt: u64,
    ooo: RangeSet,
    /// Unacknowledged in-order segments (delayed ACK).
    pending_segments: u32,
    pending_ce_bytes: u64,
    last_ce: bool,
    pending_ts: u64,
    /// The header to echo and, while one waits, `flags::ROUTER` and its size (else 0).
    pending_router: RouterHeader,
    echo_flag: u8,
    echo_bytes: u32,
    delack_deadline: Option<Nanos>,
    /// Data packets that arrived (including duplicates).
    pub data_packets: u64,
    pub duplicate_packets: u64,
}

impl TcpReceiver {
    pub fn new(flow: FlowId, node: NodeId, peer: NodeId, cfg: &TcpConfig) -> Self {
        TcpReceiver {
            flow,
            node,
            peer,
            cfg: *cfg,
            rcv_nxt: 0,
            ooo: RangeSet::new(),
            pending_segments: 0,
            pending_ce_bytes: 0,
            last_ce: false,
            pending_ts: 0,
            pending_router: RouterHeader::default(),
            echo_flag: 0,
            echo_bytes: 0,
            delack_deadline: None,
            data_packets: 0,
            duplicate_packets: 0,
        }
    }

    /// In-order bytes received (delivered to the application).
    pub fn bytes_delivered(&self) -> u64 {
        self.rcv_nxt
    }
    pub fn delack_deadline(&self) -> Option<Nanos> {
        self.delack_deadline
    }

    pub fn on_packet(&mut self, now: Nanos, p: &Packet, out: &mut Vec<Packet>) {
        match p.kind {
            PacketKind::Syn => {
                let mut ack = Packet {
                    flow: self.flow,
                    src: self.node,
                    dst: self.peer,
                    kind: PacketKind::SynAck,
                    wire_bytes: self.cfg.header_bytes,
                    ts_echo_ns: p.ts_sent_ns,
                    ..Default::default()
                };
                if p.has(flags::ROUTER) {
                    Self::echo(&mut ack, p.router);
                }
                out.push(ack);
            }
            PacketKind::Data => self.on_data(now, p, out),
            _ => {}
        }
    }

    /// The bytes the SACK blocks of an ACK add to its size. With `sack_recovery = "ns2"` the
    /// receiver is ns-2's `Sack1TcpSink`, which adds 8 bytes per block to the ACK it sends
    /// (`add_to_ack`, tcp/tcp-sink.cc:755); otherwise SACK blocks are not counted on the wire.
    fn sack_option_bytes(&self, blocks: usize) -> u32 {
        if self.cfg.sack && self.cfg.sack_recovery == SackRecovery::Ns2 {
            8 * blocks as u32
        } else {
            0
        }
    }

    /// Puts the router header `h` on the ACK `ack`.
    fn echo(ack: &mut Packet, h: RouterHeader) {
        ack.router = h;
        ack.flags |= flags::ROUTER;
        ack.wire_bytes += h.wire_bytes as u32;
    }

    fn on_data(&mut self, now: Nanos, p: &Packet, out: &mut Vec<Packet>) {
        if p.has(flags::ROUTER) {
            self.pending_router = p.router;
            self.echo_flag = flags::ROUTER;
            self.echo_bytes = p.router.wire_bytes as u32;
        }
        if p.payload_bytes == 0 {
            // A header-only request: answered at once, carries no data.
            self.pending_ts = p.ts_sent_ns;
            self.send_ack(out);
            return;
        }
        self.data_packets += 1;
        let (s, e) = (p.seq, p.seq + p.payload_bytes as u64);
        let ce = p.has(flags::CE);
        // A change of CE state flushes the pending (delayed) ACK first.
        if self.cfg.delayed_ack && self.pending_segments > 0 && ce != self.last_ce {
            self.send_ack(out);
        }
        self.last_ce = ce;
        if ce {
            self.pending_ce_bytes += p.payload_bytes as u64;
        }
        self.pending_ts = p.ts_sent_ns;
        let mut immediate = !self.cfg.delayed_ack;
        let mut recent = None;
        if e <= self.rcv_nxt {
            self.duplicate_packets += 1;
            immediate = true;
        } else if s <= self.rcv_nxt {
            self.rcv_nxt = e;
            if !self.ooo.is_empty() {
                immediate = true; // filled (part of) a hole
                if let Some((fs, fe)) = self.ooo.first() {
                    if fs <= self.rcv_nxt {
                        self.rcv_nxt = self.rcv_nxt.max(fe);
                    }
                }
                self.ooo.remove_below(self.rcv_nxt);
            }
        } else {
            recent = Some(self.ooo.insert(s, e));
            immediate = true;
        }
        self.pending_segments += 1;
        if immediate || self.pending_segments >= 2 {
            self.send_ack_with(out, recent);
        } else if self.delack_deadline.is_none() {
            self.delack_deadline = Some(now + self.cfg.delayed_ack_timeout);
        }
    }

    /// The delayed-ACK timer fired.
    pub fn on_delack_timer(&mut self, _now: Nanos, out: &mut Vec<Packet>) {
        self.delack_deadline = None;
        if self.pending_segments > 0 {
            self.send_ack(out);
        }
    }

    fn send_ack(&mut self, out: &mut Vec<Packet>) {
        self.send_ack_with(out, None)
    }

    fn send_ack_with(&mut self, out: &mut Vec<Packet>, recent: Option<(u64, u64)>) {
        let mut sack = [SackBlock::default(); 3];
        let mut n = 0;
        if self.cfg.sack {
            if let Some((s, e)) = recent {
                sack[0] = SackBlock { start: s, end: e };
                n = 1;
            }
            for &(s, e) in self.ooo.ranges().iter().rev() {
                if n == 3 {
                    break;
                }
                if Some((s, e)) != recent {
                    sack[n] = SackBlock { start: s, end: e };
                    n += 1;
                }
            }
        }
        let ce_bytes = self.pending_ce_bytes;
        let router_flag = self.echo_flag;
        out.push(Packet {
            flow: self.flow,
            src: self.node,
            dst: self.peer,
            kind: PacketKind::Ack,
            flags: if ce_bytes > 0 { flags::ECE | router_flag } else { router_flag },
            sack_len: n as u8,
            wire_bytes: self.cfg.header_bytes + self.echo_bytes + self.sack_option_bytes(n),
            router: self.pending_router,
            ack: self.rcv_nxt,
            sack,
            ts_echo_ns: self.pending_ts,
            ce_bytes_echo: ce_bytes.min(u32::MAX as u64) as u32,
            ..Default::default()
        });
        self.pending_segments = 0;
        self.pending_ce_bytes = 0;
        self.echo_flag = 0;
        self.echo_bytes = 0;
        self.delack_deadline = None;
    }
}
