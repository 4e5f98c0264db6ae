//! Packets and the packet pool.

/// Index of a flow in the simulation.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct FlowId(pub u32);
/// Index of a node (host or switch).
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct NodeId(pub u32);
/// Index of an output port (one direction of a link).
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct PortId(pub u32);
/// Index of a packet in the [`PacketPool`].
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct PacketId(pub u32);

#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
#[repr(u8)]
pub enum PacketKind {
    #[default]
    Data,
    Ack,
    Syn,
    SynAck,
    /// The sender's last packet: it has sent all its data once. Sent by flows whose protocol
    /// carries a router header, so that switches see the flow leave (header only, never
    /// acknowledged).
    Fin,
    /// A negative acknowledgement (the `roce` transport): the receiver got a packet beyond
    /// the next byte it expects (`ack`), and the sender goes back to it.
    Nack,
    /// A congestion notification packet (the `roce` transport): the receiver saw a CE mark.
    Cnp,
    /// A pull (the `ndp` transport): the receiver's host lets the sender send one more packet
    /// ([`Packet::pull_no`]).
    Pull,
}

impl PacketKind {
    /// The kind as results write it.
    pub fn name(self) -> &'static str {
        match self {
            PacketKind::Data => "data",
            PacketKind::Ack => "ack",
            PacketKind::Syn => "syn",
            PacketKind::SynAck => "synack",
            PacketKind::Fin => "fin",
            PacketKind::Nack => "nack",
            PacketKind::Cnp => "cnp",
            PacketKind::Pull => "pull",
        }
    }

    /// Travels from the flow's receiver to its sender.
    #[inline]
    pub fn is_reverse(self) -> bool {
        // One bit per kind (a test on every packet sent).
        const REVERSE: u32 = 1 << PacketKind::Ack as u32
            | 1 << PacketKind::SynAck as u32
            | 1 << PacketKind::Nack as u32
            | 1 << PacketKind::Cnp as u32
            | 1 << PacketKind::Pull as u32;
        REVERSE >> self as u32 & 1 != 0
    }
}

/// One SACK block: bytes [start, end) received above the cumulative ACK.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
pub struct SackBlock {
    pub start: u64,
    pub end: u64,
}

/// The header that router-assisted protocols add to a packet: written by the sender, read and
/// rewritten by switch ports on the way (only on packets whose `flags::ROUTER` is set) and
/// echoed by the receiver on its next ACK.
///
/// The network does not know its fields: each protocol declares its own header in its own file
/// (RCP's, RACS's and SDC's in `fctlab_transport::cc`) and packs it into `words` with the typed
/// accessors below. `owner` says which of the run's router-assisted protocols wrote it (so that
/// a port running several hands each packet to the right one), `wire_bytes` how many bytes it
/// occupies on the wire (added to the packet's size by the sender and to the ACK that echoes it
/// by the receiver).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
pub struct RouterHeader {
    pub words: [u32; RouterHeader::WORDS],
    /// The run's router-assisted protocol (its index among those the run's flows use).
    pub owner: u8,
    /// Bytes this header occupies on the wire.
    pub wire_bytes: u8,
}

impl RouterHeader {
    /// 32-bit words a protocol may use (the record stays 48 bytes): room for HPCC's telemetry
    /// of five hops, two words each, and its hop count.
    pub const WORDS: usize = 11;

    #[inline]
    pub fn u32(&self, i: usize) -> u32 {
        self.words[i]
    }
    #[inline]
    pub fn set_u32(&mut self, i: usize, v: u32) {
        self.words[i] = v;
    }
    /// Words `i` and `i + 1` as one u64 (low word first).
    #[inline]
    pub fn u64(&self, i: usize) -> u64 {
        self.words[i] as u64 | (self.words[i + 1] as u64) << 32
    }
    #[inline]
    pub fn set_u64(&mut self, i: usize, v: u64) {
        self.words[i] = v as u32;
        self.words[i + 1] = (v >> 32) as u32;
    }
    #[inline]
    pub fn f32(&self, i: usize) -> f32 {
        f32::from_bits(self.words[i])
    }
    #[inline]
    pub fn set_f32(&mut self, i: usize, v: f32) {
        self.words[i] = v.to_bits();
    }
    /// Byte `b` (0-3) of word `i`.
    #[inline]
    pub fn u8(&self, i: usize, b: usize) -> u8 {
        (self.words[i] >> (8 * b)) as u8
    }
    #[inline]
    pub fn set_u8(&mut self, i: usize, b: usize, v: u8) {
        self.words[i] = self.words[i] & !(0xff << (8 * b)) | (v as u32) << (8 * b);
    }
}

/// ECN and TCP flag bits.
pub mod flags {
    /// ECN-capable transport (ECT codepoint set by the sender).
    pub const ECT: u8 = 1 << 0;
    /// Congestion experienced (set by a switch on an ECT packet).
    pub const CE: u8 = 1 << 1;
    /// ECN echo (set by the receiver on an ACK).
    pub const ECE: u8 = 1 << 2;
    /// Congestion window reduced (sender to receiver).
    pub const CWR: u8 = 1 << 3;
    /// The data segment is a retransmission.
    pub const RETX: u8 = 1 << 4;
    /// The packet carries a [`RouterHeader`](super::RouterHeader): switch ports running a
    /// router-assisted protocol read it (on an ACK it is the receiver's echo).
    pub const ROUTER: u8 = 1 << 5;
    /// The sender set the packet's priority and rank itself ([`Packet::prio`],
    /// [`Packet::rank`]): protocols that tag packets (pFabric, PIAS).
    pub const TAGGED: u8 = 1 << 6;
    /// A switch cut the data packet to its header (its payload is gone; its sequence number
    /// says which it was): trimming disciplines.
    pub const TRIMMED: u8 = 1 << 7;
}

/// A packet's rank for disciplines that order by it (pFabric): a byte count (the flow's
/// remaining size) in 16 bits, smaller first. Counts below 2,048 are exact; above, each
/// power of two is split in 1,024 steps (0.1% apart), so that the order of two counts is kept
/// wherever they differ by more than that, up to any u64.
pub fn rank_of_bytes(bytes: u64) -> u16 {
    if bytes < 2048 {
        return bytes as u16;
    }
    let top = 63 - bytes.leading_zeros() as u64; // at least 11
    let shift = top - 10;
    let mantissa = (bytes >> shift) & 0x3ff;
    (2048 + (shift - 1) * 1024 + mantissa) as u16
}

/// A packet. Plain data, kept small; moved between components by [`PacketId`].
#[derive(Clone, Debug, Default)]
pub struct Packet {
    pub flow: FlowId,
    pub src: NodeId,
    pub dst: NodeId,
    pub kind: PacketKind,
    pub flags: u8,
    pub sack_len: u8,
    /// Bytes on the wire (payload plus headers); what queues and links count.
    pub wire_bytes: u32,
    pub payload_bytes: u32,
    /// First payload byte (data) or the sequence acknowledged up to (ACK: next expected byte).
    pub seq: u64,
    pub ack: u64,
    pub sack: [SackBlock; 3],
    /// Time the sender handed the packet to its NIC (timestamp option).
    pub ts_sent_ns: u64,
    /// Echo of the timestamp of the data packet that triggered this ACK.
    pub ts_echo_ns: u64,
    pub router: RouterHeader,
    /// Number of payload bytes with CE covered by this ACK (receiver's precise echo).
    pub ce_bytes_echo: u32,
    /// The priority band and rank the sender gave the packet (with `flags::TAGGED`; see
    /// [`PacketMeta::prio`], [`PacketMeta::rank`]). Carried into the network, not kept.
    pub prio: u8,
    pub rank: u16,
    /// The entropy value (0-127) that chooses the packet's path where switches hash it
    /// (`[network] load_balancing = "reps"`); on a packet handed to its receiver, the value
    /// it carried. Carried into the network, not kept.
    pub entropy: u8,
    /// The `ndp` transport: the pull number a pull (or an ACK or NACK that carries one)
    /// gives, counted per flow from 1 (0: none). The sender may have sent one packet per pull
    /// number after its first window: a lost pull is made up by the next.
    pub pull_no: u32,
    /// On a reply (an ACK or NACK), the entropy value of the data packet it answers (the
    /// simulation writes it): a sender choosing paths by entropy (REPS) learns which values
    /// came back unmarked.
    pub entropy_echo: u8,
}

impl Packet {
    #[inline]
    pub fn has(&self, flag: u8) -> bool {
        self.flags & flag != 0
    }
    /// The fields switches need, carried beside the packet id through the network.
    #[inline]
    pub fn meta(&self) -> PacketMeta {
        PacketMeta {
            flow: self.flow,
            // At most 65,535: a segment and its headers are bounded so (`mss` at most 64,000 B,
            // `header_bytes` at most 1,000 B, a router header at most 255 B), as IPv4's 16-bit
            // total length bounds a real packet.
            wire_bytes: self.wire_bytes as u16,
            rank: self.rank,
            flags: self.flags,
            hop: 0,
            kind: self.kind,
            prio: self.prio,
        }
    }
}

/// What forwarding needs of a packet: its flow (whose path it follows), size (queues) and ECN
/// flags (marking). Ports keep it beside the packet id, so a packet crossing a switch is
/// forwarded without reading the packet itself (a cache miss per hop saved). The flags here
/// are authoritative while the packet is in the network and are written back to the packet
/// when it reaches its host.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
pub struct PacketMeta {
    pub flow: FlowId,
    pub wire_bytes: u16,
    /// Its rank for disciplines that order packets by one (pFabric: smaller first; see
    /// [`rank_of_bytes`]). Set by the sender (`flags::TAGGED`), 0 otherwise.
    pub rank: u16,
    pub flags: u8,
    /// Where the packet is on its flow's path: the direction (bit 7: 0 from the flow's
    /// source, 1 toward it) and the index of the next port (bits 0-6). Set by the simulation.
    pub hop: u8,
    /// The packet's kind, so that switches see SYNs and FINs without reading the packet.
    pub kind: PacketKind,
    /// Its priority for disciplines that have bands (0 highest). Set by the sender
    /// (`flags::TAGGED`), else by the simulation from the flow's tag as the packet enters the
    /// network (see [`crate::qdisc::Discipline::class_of`]).
    pub prio: u8,
}

impl PacketMeta {
    #[inline]
    pub fn has(&self, flag: u8) -> bool {
        self.flags & flag != 0
    }
}

/// The part of a packet every packet has, as the pool keeps it: one 64-byte line. A data
/// packet's SACK blocks (never used) and a plain-TCP packet's router header (never used) are
/// not in it; the pool keeps those beside it, written and read only for the packets that
/// carry them.
#[derive(Copy, Clone, Debug, Default)]
#[repr(C, align(64))]
struct PacketCore {
    flow: FlowId,
    src: NodeId,
    dst: NodeId,
    kind: PacketKind,
    flags: u8,
    sack_len: u8,
    entropy_echo: u8,
    wire_bytes: u32,
    payload_bytes: u32,
    seq: u64,
    ack: u64,
    ts_sent_ns: u64,
    ts_echo_ns: u64,
    ce_bytes_echo: u32,
    pull_no: u32,
}

/// A pool of packets with a free list: no allocation per packet once warmed up. A packet in
/// the pool is its 64-byte core plus, only when it carries them, its SACK blocks and router
/// header (kept in arrays beside the cores, indexed alike).
#[derive(Default)]
pub struct PacketPool {
    cores: Vec<PacketCore>,
    sacks: Vec<[SackBlock; 3]>,
    routers: Vec<RouterHeader>,
    free: Vec<u32>,
    live: u32,
    peak_live: u32,
}

impl PacketPool {
    pub fn new() -> Self {
        Self::default()
    }

    #[inline]
    pub fn alloc(&mut self, p: Packet) -> PacketId {
        self.live += 1;
        if self.live > self.peak_live {
            self.peak_live = self.live;
        }
        let core = PacketCore {
            flow: p.flow,
            src: p.src,
            dst: p.dst,
            kind: p.kind,
            flags: p.flags,
            sack_len: p.sack_len,
            entropy_echo: p.entropy_echo,
            wire_bytes: p.wire_bytes,
            payload_bytes: p.payload_bytes,
            seq: p.seq,
            ack: p.ack,
            ts_sent_ns: p.ts_sent_ns,
            ts_echo_ns: p.ts_echo_ns,
            ce_bytes_echo: p.ce_bytes_echo,
            pull_no: p.pull_no,
        };
        let i = if let Some(i) = self.free.pop() {
            self.cores[i as usize] = core;
            i as usize
        } else {
            self.cores.push(core);
            self.cores.len() - 1
        };
        if p.sack_len > 0 {
            Self::put(&mut self.sacks, i, p.sack);
        }
        if p.has(flags::ROUTER) {
            Self::put(&mut self.routers, i, p.router);
        }
        PacketId(i as u32)
    }

    /// Stores `v` at `i` of an array beside the cores (grown to reach it).
    #[inline]
    fn put<T: Copy + Default>(side: &mut Vec<T>, i: usize, v: T) {
        if side.len() <= i {
            side.resize(i + 1, T::default());
        }
        side[i] = v;
    }

    /// The packet `id` (its SACK blocks and router header as it carries them).
    #[inline]
    pub fn get(&self, id: PacketId) -> Packet {
        let i = id.0 as usize;
        let c = &self.cores[i];
        Packet {
            flow: c.flow,
            src: c.src,
            dst: c.dst,
            kind: c.kind,
            flags: c.flags,
            sack_len: c.sack_len,
            entropy_echo: c.entropy_echo,
            wire_bytes: c.wire_bytes,
            payload_bytes: c.payload_bytes,
            seq: c.seq,
            ack: c.ack,
            sack: if c.sack_len > 0 { self.sacks[i] } else { Default::default() },
            ts_sent_ns: c.ts_sent_ns,
            ts_echo_ns: c.ts_echo_ns,
            router: if c.flags & flags::ROUTER != 0 { self.routers[i] } else { Default::default() },
            ce_bytes_echo: c.ce_bytes_echo,
            // Not kept: switches read them from the packet's meta.
            prio: 0,
            rank: 0,
            entropy: 0,
            pull_no: c.pull_no,
        }
    }

    /// Asks the CPU for packet `id`'s core (a hint, see [`fctlab_engine::prefetch`]).
    #[inline(always)]
    pub fn prefetch(&self, id: PacketId) {
        if let Some(c) = self.cores.get(id.0 as usize) {
            fctlab_engine::prefetch(c);
        }
    }

    /// Removes the packet `id` from the pool and returns it.
    #[inline]
    pub fn take(&mut self, id: PacketId) -> Packet {
        let p = self.get(id);
        self.free(id);
        p
    }

    /// The router header of packet `id`, which carries one (`flags::ROUTER`).
    #[inline]
    pub fn router_mut(&mut self, id: PacketId) -> &mut RouterHeader {
        &mut self.routers[id.0 as usize]
    }

    #[inline]
    pub fn free(&mut self, id: PacketId) {
        self.live -= 1;
        self.free.push(id.0);
    }

    /// Packets currently allocated (queued or in flight).
    pub fn live(&self) -> u32 {
        self.live
    }
    pub fn peak_live(&self) -> u32 {
        self.peak_live
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The sizes docs/performance.md states: a packet as the pool keeps it (its core), and
    /// the per-port metadata that switches forward from.
    #[test]
    fn record_sizes_are_as_documented() {
        assert_eq!(std::mem::size_of::<PacketCore>(), 64);
        assert_eq!(std::mem::size_of::<PacketMeta>(), 12);
    }

    #[test]
    fn ranks_keep_the_order_of_byte_counts() {
        let mut counts: Vec<u64> =
            (0..5000u64).chain((12..64).flat_map(|e| [(1u64 << e) - 1, 1 << e, (1 << e) + (1 << (e - 10))])).collect();
        counts.sort();
        let mut last = 0;
        for b in counts {
            let r = rank_of_bytes(b);
            assert!(r >= last, "{b}: {r} < {last}");
            last = r;
        }
        assert_eq!(
            (rank_of_bytes(0), rank_of_bytes(2047), rank_of_bytes(2048), rank_of_bytes(2050)),
            (0, 2047, 2048, 2049)
        );
        // 0.1% apart: a flow 1 MB from done ranks before one 1.002 MB from done.
        assert!(rank_of_bytes(1_000_000) < rank_of_bytes(1_002_000));
        assert!(rank_of_bytes(u64::MAX) < u16::MAX);
    }

    #[test]
    fn pool_reuses_slots() {
        let mut pool = PacketPool::new();
        let a = pool.alloc(Packet { seq: 1, ..Default::default() });
        let b = pool.alloc(Packet { seq: 2, ..Default::default() });
        assert_eq!(pool.live(), 2);
        pool.free(a);
        let c = pool.alloc(Packet { seq: 3, ..Default::default() });
        assert_eq!(c, a);
        assert_eq!(pool.get(c).seq, 3);
        assert_eq!(pool.get(b).seq, 2);
        assert_eq!(pool.peak_live(), 2);
    }

    #[test]
    fn a_router_header_stays_48_bytes_and_its_accessors_round_trip() {
        assert_eq!(std::mem::size_of::<RouterHeader>(), 48);
        let mut h = RouterHeader::default();
        h.set_u64(1, 0x0123_4567_89ab_cdef);
        h.set_f32(0, -2.5);
        h.set_u8(3, 3, 0xfe);
        h.set_u8(3, 0, 0x01);
        assert_eq!((h.u64(1), h.f32(0), h.u8(3, 3), h.u8(3, 0), h.u8(3, 1)), (0x0123_4567_89ab_cdef, -2.5, 0xfe, 1, 0));
        assert_eq!(h.u32(3), 0xfe00_0001);
    }

    #[test]
    fn pool_gives_back_every_field_and_the_side_parts_only_of_packets_that_carry_them() {
        let mut pool = PacketPool::new();
        let mut router = RouterHeader { owner: 1, wire_bytes: 12, ..Default::default() };
        router.set_u64(0, 5);
        router.set_f32(2, 1.5);
        router.set_u8(3, 2, 7);
        let full = Packet {
            flow: FlowId(3),
            src: NodeId(4),
            dst: NodeId(5),
            kind: PacketKind::Ack,
            flags: flags::ROUTER | flags::ECE,
            sack_len: 2,
            wire_bytes: 52,
            payload_bytes: 0,
            seq: 9,
            ack: 1 << 40,
            sack: [SackBlock { start: 1, end: 2 }, SackBlock { start: 3, end: 4 }, SackBlock::default()],
            ts_sent_ns: 11,
            ts_echo_ns: 12,
            router,
            ce_bytes_echo: 13,
            prio: 0,
            rank: 0,
            entropy: 0,
            pull_no: 14,
            entropy_echo: 15,
        };
        let a = pool.alloc(full.clone());
        assert_eq!(format!("{:?}", pool.get(a)), format!("{full:?}"));
        pool.router_mut(a).set_u64(0, u64::MAX - 1);
        let back = pool.take(a).router;
        assert_eq!((back.u64(0), back.f32(2), back.u8(3, 2), back.u8(3, 1)), (u64::MAX - 1, 1.5, 7, 0));
        // The same slot reused by a data packet without them: no stale SACK blocks or header.
        let data = Packet {
            kind: PacketKind::Data,
            payload_bytes: 1460,
            seq: 100,
            sack: full.sack,
            router,
            ..Default::default()
        };
        let b = pool.alloc(data);
        assert_eq!(b, a);
        let back = pool.get(b);
        assert_eq!((back.sack_len, back.sack, back.router), (0, [SackBlock::default(); 3], RouterHeader::default()));
        assert_eq!((back.seq, back.payload_bytes), (100, 1460));
    }
}
