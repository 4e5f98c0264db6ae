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

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u32 = 1000;

    fn rcv(delayed_ack: bool, sack: bool) -> TcpReceiver {
        let cfg = TcpConfig {
            delayed_ack,
            sack,
            delayed_ack_timeout: Nanos::from_millis(40),
            header_bytes: 40,
            ..TcpConfig::default()
        };
        TcpReceiver::new(FlowId(7), NodeId(2), NodeId(1), &cfg)
    }

    fn data(seq: u64, flags: u8) -> Packet {
        Packet {
            flow: FlowId(7),
            src: NodeId(1),
            dst: NodeId(2),
            kind: PacketKind::Data,
            flags,
            payload_bytes: MSS,
            wire_bytes: MSS + 40,
            seq,
            ts_sent_ns: 1000 + seq,
            ..Default::default()
        }
    }

    /// Feeds segments (by index) and returns the ACKs they produced.
    fn feed(r: &mut TcpReceiver, segs: &[(u64, u8)]) -> Vec<Packet> {
        let mut out = Vec::new();
        for &(k, f) in segs {
            r.on_packet(Nanos(k), &data(k * MSS as u64, f), &mut out);
        }
        out
    }

    #[test]
    fn in_order_segments_are_acknowledged_cumulatively_each_at_once_without_delayed_acks() {
        let mut r = rcv(false, true);
        let acks = feed(&mut r, &[(0, 0), (1, 0), (2, 0)]);
        let cum: Vec<u64> = acks.iter().map(|a| a.ack).collect();
        assert_eq!(cum, vec![1000, 2000, 3000]);
        let a = &acks[2];
        assert_eq!((a.kind, a.src, a.dst, a.wire_bytes, a.sack_len), (PacketKind::Ack, NodeId(2), NodeId(1), 40, 0));
        // the timestamp of the segment that triggered it is echoed
        assert_eq!(a.ts_echo_ns, 1000 + 2000);
        assert_eq!(r.bytes_delivered(), 3000);
    }

    #[test]
    fn delayed_acks_cover_two_segments_or_wait_for_the_timer() {
        let mut r = rcv(true, false);
        assert!(feed(&mut r, &[(0, 0)]).is_empty());
        assert_eq!(r.delack_deadline(), Some(Nanos(0) + Nanos::from_millis(40)));
        let acks = feed(&mut r, &[(1, 0)]);
        assert_eq!(acks.iter().map(|a| a.ack).collect::<Vec<_>>(), vec![2000]);
        assert_eq!(r.delack_deadline(), None);
        assert!(feed(&mut r, &[(2, 0)]).is_empty());
        let mut out = Vec::new();
        r.on_delack_timer(Nanos::from_millis(40), &mut out);
        assert_eq!(out.iter().map(|a| a.ack).collect::<Vec<_>>(), vec![3000]);
        // nothing pending: the timer sends nothing
        out.clear();
        r.on_delack_timer(Nanos::from_millis(80), &mut out);
        assert!(out.is_empty());
    }

    #[test]
    fn a_hole_gives_immediate_acks_with_the_most_recent_block_first() {
        let mut r = rcv(true, true);
        // 0 arrives (delayed), 2 and 4 arrive above the hole at 1: each acknowledged at once
        let acks = feed(&mut r, &[(0, 0), (2, 0), (4, 0)]);
        assert_eq!(acks.len(), 2);
        let last = &acks[1];
        assert_eq!(last.ack, 1000);
        assert_eq!(last.sack_len, 2);
        assert_eq!((last.sack[0].start, last.sack[0].end), (4000, 5000), "the block just received first");
        assert_eq!((last.sack[1].start, last.sack[1].end), (2000, 3000));
        // filling the hole at 1 moves the cumulative ACK over block 2 at once
        let acks = feed(&mut r, &[(1, 0)]);
        assert_eq!(acks.len(), 1);
        assert_eq!((acks[0].ack, acks[0].sack_len), (3000, 1));
        assert_eq!(r.bytes_delivered(), 3000);
        // a duplicate is acknowledged at once and counted
        let acks = feed(&mut r, &[(0, 0)]);
        assert_eq!((acks.len(), acks[0].ack, r.duplicate_packets), (1, 3000, 1));
    }

    #[test]
    fn ce_marks_are_echoed_with_their_bytes_and_a_change_of_state_flushes_the_delayed_ack() {
        let mut r = rcv(true, false);
        // unmarked, then marked: the change sends the pending ACK (unmarked) first
        let acks = feed(&mut r, &[(0, 0), (1, flags::CE)]);
        assert_eq!(acks.len(), 1);
        assert_eq!((acks[0].ack, acks[0].has(flags::ECE), acks[0].ce_bytes_echo), (1000, false, 0));
        // the next marked segment completes a pair of marked segments: ECE, 2000 bytes
        let acks = feed(&mut r, &[(2, flags::CE)]);
        assert_eq!((acks[0].ack, acks[0].has(flags::ECE), acks[0].ce_bytes_echo), (3000, true, 2000));
    }

    #[test]
    fn a_router_header_is_echoed_once_with_its_bytes() {
        let mut r = rcv(false, false);
        let mut p = data(0, flags::ROUTER);
        p.router.words[0] = 42;
        p.router.wire_bytes = 16;
        let mut out = Vec::new();
        r.on_packet(Nanos(0), &p, &mut out);
        r.on_packet(Nanos(1), &data(1000, 0), &mut out);
        assert_eq!((out[0].has(flags::ROUTER), out[0].router.words[0], out[0].wire_bytes), (true, 42, 56));
        assert_eq!((out[1].has(flags::ROUTER), out[1].wire_bytes), (false, 40));
        // a header-only request (no payload) is answered at once and delivers nothing
        let mut req = data(2000, flags::ROUTER);
        req.payload_bytes = 0;
        out.clear();
        r.on_packet(Nanos(2), &req, &mut out);
        assert_eq!((out.len(), out[0].ack, r.data_packets), (1, 2000, 2));
        // a SYN is answered by a SYN-ACK echoing its timestamp
        let syn = Packet { kind: PacketKind::Syn, ts_sent_ns: 77, ..data(0, 0) };
        out.clear();
        r.on_packet(Nanos(3), &syn, &mut out);
        assert_eq!((out[0].kind, out[0].ts_echo_ns), (PacketKind::SynAck, 77));
    }

    #[test]
    fn ns2_sack_blocks_add_eight_bytes_each_to_the_ack() {
        let cfg = TcpConfig { sack: true, sack_recovery: SackRecovery::Ns2, header_bytes: 40, ..TcpConfig::default() };
        let mut r = TcpReceiver::new(FlowId(7), NodeId(2), NodeId(1), &cfg);
        let acks = feed(&mut r, &[(0, 0), (2, 0), (4, 0)]);
        let last = acks.last().unwrap();
        assert_eq!((last.sack_len, last.wire_bytes), (2, 40 + 16));
    }
}
