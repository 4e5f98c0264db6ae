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
//!
//! Receiver-driven flows (Homa, [`TcpReceiver::expect_grants`]) are not acknowledged per
//! packet: the receiver sends the grants its host decides ([`TcpReceiver::grant`]), one
//! acknowledgement when the whole message is in, an answer to a duplicate (a sender's probe),
//! and a resend request when bytes it expects (unscheduled or granted) have not come for the
//! resend timeout. Each of these carries the cumulative ACK and SACK blocks too.

use crate::cc::homa::HomaHeader;
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
    /// The delayed-ACK timer, or for a receiver-driven flow the resend timer.
    delack_deadline: Option<Nanos>,
    /// Receiver-driven flows: what the receiver expects.
    expect: Option<Expect>,
    /// Data packets that arrived (including duplicates).
    pub data_packets: u64,
    pub duplicate_packets: u64,
    /// Data packets that arrived above a hole (reordered on the way, or after a loss).
    pub out_of_order_packets: u64,
    /// Retransmitted data packets whose bytes had all arrived already (spurious).
    pub spurious_retransmits: u64,
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
            expect: None,
            data_packets: 0,
            duplicate_packets: 0,
            out_of_order_packets: 0,
            spurious_retransmits: 0,
        }
    }

    /// In-order bytes received (delivered to the application).
    pub fn bytes_delivered(&self) -> u64 {
        self.rcv_nxt
    }
    pub fn delack_deadline(&self) -> Option<Nanos> {
        self.delack_deadline
    }

    /// Makes this a receiver-driven flow's receiver: a message of `size` bytes, of which the
    /// first `unscheduled` come without a grant, the rest as granted; bytes expected and not
    /// received for `resend_timeout` are asked for again.
    pub fn expect_grants(&mut self, size: u64, unscheduled: u64, resend_timeout: Nanos) {
        self.expect = Some(Expect { size, expected: unscheduled.min(size), resend_timeout, band: 0 });
    }
    pub fn is_receiver_driven(&self) -> bool {
        self.expect.is_some()
    }
    /// A receiver-driven flow's message size (0 for other flows).
    pub fn message_size(&self) -> u64 {
        self.expect.map_or(0, |x| x.size)
    }
    /// Bytes received so far, in order or not.
    pub fn bytes_received(&self) -> u64 {
        self.rcv_nxt + self.ooo.total()
    }

    /// Sends a grant: the sender may send up to byte `offset`, its scheduled packets in `band`.
    pub fn grant(&mut self, now: Nanos, offset: u64, band: u8, out: &mut Vec<Packet>) {
        let Some(x) = self.expect.as_mut() else { return };
        x.expected = x.expected.max(offset.min(x.size));
        x.band = band;
        self.send_control(out, HomaHeader::Grant { offset, band });
        self.arm_resend(now, false);
    }

    /// An ACK carrying Homa's header `h` (and the cumulative ACK and SACK blocks).
    fn send_control(&mut self, out: &mut Vec<Packet>, h: HomaHeader) {
        // (The resend timer is not the delayed-ACK timer: an ACK leaves it alone.)
        let resend_at = self.delack_deadline;
        self.send_ack(out);
        self.delack_deadline = resend_at;
        if let Some(a) = out.last_mut() {
            a.router = h.header();
            a.flags |= flags::ROUTER;
            a.wire_bytes += HomaHeader::WIRE_BYTES as u32;
        }
    }

    /// Receiver-driven flows: the resend timer runs while expected bytes are missing, from
    /// the latest arrival (`restart`) or from now if it was not running.
    fn arm_resend(&mut self, now: Nanos, restart: bool) {
        let Some(x) = self.expect else { return };
        if self.rcv_nxt >= x.expected {
            self.delack_deadline = None;
        } else if restart || self.delack_deadline.is_none() {
            self.delack_deadline = Some(now + x.resend_timeout);
        }
    }

    /// A receiver-driven flow's data segment: no acknowledgement, unless it completes the
    /// message or repeats bytes already received (a sender's probe gets the latest grant).
    fn on_granted_data(&mut self, now: Nanos, p: &Packet) -> Option<HomaHeader> {
        let x = self.expect?;
        self.data_packets += 1;
        self.pending_ts = p.ts_sent_ns;
        let answer = match self.absorb(p.seq, p.seq + p.payload_bytes as u64) {
            Absorbed::Duplicate => Some(HomaHeader::Grant { offset: x.expected, band: x.band }),
            _ if self.rcv_nxt >= x.size => Some(HomaHeader::Grant { offset: x.size, band: x.band }),
            _ => None,
        };
        self.arm_resend(now, true);
        answer
    }

    /// Takes a packet from the sender. True when it was a receiver-driven flow's data packet,
    /// which its host's grants must see.
    pub fn on_packet(&mut self, now: Nanos, p: &Packet, out: &mut Vec<Packet>) -> bool {
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
            PacketKind::Data if self.expect.is_some() => {
                if let Some(h) = self.on_granted_data(now, p) {
                    self.send_control(out, h);
                }
                return true;
            }
            PacketKind::Data => self.on_data(now, p, out),
            _ => {}
        }
        false
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
        let (immediate, recent) = match self.absorb(s, e) {
            Absorbed::InOrder { filled_hole: false } => (!self.cfg.delayed_ack, None),
            Absorbed::Above(block) => {
                self.out_of_order_packets += 1;
                (true, Some(block))
            }
            Absorbed::Duplicate if p.has(flags::RETX) => {
                self.spurious_retransmits += 1;
                (true, self.dsack(s, e))
            }
            Absorbed::Duplicate => (true, self.dsack(s, e)),
            // A duplicate, or a segment that filled (part of) a hole: acknowledged at once.
            _ => (true, None),
        };
        self.pending_segments += 1;
        if immediate || self.pending_segments >= 2 {
            self.send_ack_with(out, recent);
        } else if self.delack_deadline.is_none() {
            self.delack_deadline = Some(now + self.cfg.delayed_ack_timeout);
        }
    }

    /// Takes in bytes `s..e`.
    #[inline]
    fn absorb(&mut self, s: u64, e: u64) -> Absorbed {
        if e <= self.rcv_nxt {
            self.duplicate_packets += 1;
            Absorbed::Duplicate
        } else if s <= self.rcv_nxt {
            self.rcv_nxt = e;
            if self.ooo.is_empty() {
                return Absorbed::InOrder { filled_hole: false };
            }
            if let Some((fs, fe)) = self.ooo.first() {
                if fs <= self.rcv_nxt {
                    self.rcv_nxt = self.rcv_nxt.max(fe);
                }
            }
            self.ooo.remove_below(self.rcv_nxt);
            Absorbed::InOrder { filled_hole: true }
        } else {
            Absorbed::Above(self.ooo.insert(s, e))
        }
    }

    /// The delayed-ACK timer fired (for a receiver-driven flow, the resend timer: the first
    /// missing range of the bytes expected is asked for again).
    pub fn on_delack_timer(&mut self, now: Nanos, out: &mut Vec<Packet>) {
        self.delack_deadline = None;
        if let Some(x) = self.expect {
            if self.rcv_nxt < x.expected {
                let end = self.ooo.first().map_or(x.expected, |(s, _)| s.min(x.expected));
                self.send_control(out, HomaHeader::Resend { start: self.rcv_nxt, end });
                self.arm_resend(now, true);
            }
            return;
        }
        if self.pending_segments > 0 {
            self.send_ack(out);
        }
    }

    fn send_ack(&mut self, out: &mut Vec<Packet>) {
        self.send_ack_with(out, None)
    }

    /// The duplicate `s..e` as the first SACK block of the ACK it causes (a DSACK, RFC 2883:
    /// a block below the cumulative ACK), when the sender runs RACK, which reads it.
    fn dsack(&self, s: u64, e: u64) -> Option<(u64, u64)> {
        (self.cfg.rack && self.cfg.sack).then_some((s, e))
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

/// What a receiver-driven flow's receiver expects.
#[derive(Copy, Clone, Debug)]
struct Expect {
    size: u64,
    /// Bytes sent unscheduled or granted so far.
    expected: u64,
    resend_timeout: Nanos,
    /// The band of the latest grant.
    band: u8,
}

/// Where a data segment's bytes went.
enum Absorbed {
    /// All received before.
    Duplicate,
    /// At the cumulative ACK point; `filled_hole` when out-of-order data was waiting above.
    InOrder { filled_hole: bool },
    /// Above a hole, into this block of out-of-order data.
    Above((u64, u64)),
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
            r.on_packet(Nanos::from_nanos(k), &data(k * MSS as u64, f), &mut out);
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
        assert_eq!(r.delack_deadline(), Some(Nanos::from_nanos(0) + Nanos::from_millis(40)));
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
        r.on_packet(Nanos::from_nanos(0), &p, &mut out);
        r.on_packet(Nanos::from_nanos(1), &data(1000, 0), &mut out);
        assert_eq!((out[0].has(flags::ROUTER), out[0].router.words[0], out[0].wire_bytes), (true, 42, 56));
        assert_eq!((out[1].has(flags::ROUTER), out[1].wire_bytes), (false, 40));
        // a header-only request (no payload) is answered at once and delivers nothing
        let mut req = data(2000, flags::ROUTER);
        req.payload_bytes = 0;
        out.clear();
        r.on_packet(Nanos::from_nanos(2), &req, &mut out);
        assert_eq!((out.len(), out[0].ack, r.data_packets), (1, 2000, 2));
        // a SYN is answered by a SYN-ACK echoing its timestamp
        let syn = Packet { kind: PacketKind::Syn, ts_sent_ns: 77, ..data(0, 0) };
        out.clear();
        r.on_packet(Nanos::from_nanos(3), &syn, &mut out);
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

    #[test]
    fn a_receiver_driven_flow_gets_grants_and_resend_requests_instead_of_acks() {
        let mut r = rcv(false, true);
        let timeout = Nanos::from_millis(5);
        r.expect_grants(6 * MSS as u64, 2 * MSS as u64, timeout);
        let hdr = |p: &Packet| (p.ack, HomaHeader::of(&p.router), p.wire_bytes);
        // Unscheduled data is not acknowledged; the resend timer runs while expected bytes miss.
        assert!(feed(&mut r, &[(0, 0)]).is_empty());
        assert_eq!((r.bytes_received(), r.delack_deadline()), (1000, Some(Nanos::from_nanos(0) + timeout)));
        // The host grants: one packet carrying the grant, the cumulative ACK and its 20 bytes.
        let mut out = Vec::new();
        r.grant(Nanos::from_nanos(5), 4000, 3, &mut out);
        assert_eq!(hdr(&out[0]), (1000, Some(HomaHeader::Grant { offset: 4000, band: 3 }), 60));
        // Segment 1 is lost, 2 arrives: still nothing sent; when the timer fires, the first
        // missing range is asked for again, and the timer runs again.
        assert!(feed(&mut r, &[(2, 0)]).is_empty());
        assert_eq!(r.bytes_received(), 2000);
        out.clear();
        r.on_delack_timer(Nanos::from_nanos(2) + timeout, &mut out);
        assert_eq!(hdr(&out[0]).1, Some(HomaHeader::Resend { start: 1000, end: 2000 }));
        assert_eq!(r.delack_deadline(), Some(Nanos::from_nanos(2) + timeout + timeout));
        // A duplicate (a sender's probe) gets the latest grant back.
        let acks = feed(&mut r, &[(0, 0)]);
        assert_eq!(hdr(&acks[0]).1, Some(HomaHeader::Grant { offset: 4000, band: 3 }));
        // The message's last byte is acknowledged at once, and no timer is left.
        let acks = feed(&mut r, &[(1, 0), (3, 0), (4, 0)]);
        assert!(acks.is_empty());
        r.grant(Nanos::from_nanos(9), 6000, 3, &mut out);
        let acks = feed(&mut r, &[(5, 0)]);
        assert_eq!((acks.len(), acks[0].ack, r.delack_deadline()), (1, 6000, None));
    }
}
