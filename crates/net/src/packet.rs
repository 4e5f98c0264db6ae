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
}

impl PacketKind {
    /// Travels from the flow's receiver to its sender.
    #[inline]
    pub fn is_reverse(self) -> bool {
        matches!(self, PacketKind::Ack | PacketKind::SynAck)
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
/// One record serves every router-assisted protocol; each uses the fields it needs and says
/// how many bytes its header takes on the wire (`wire_bytes`, added to the packet's size by
/// the sender and to the ACK that echoes it by the receiver).
/// - RCP: `rate_bps` (lowered to each port's R), `rtt_ns` (the sender's RTT estimate).
/// - RACS: the rate request: `weight` (w_c), `prev_weight` (w_p), `rate_bps` (lowered to
///   w_c C / W), `rtt_ns`, `interval_ns` (lowered to each port's t_p: t_trans).
/// - SDC: `class` and `prev_class` (the sender's class now and as last counted: ports move
///   their per-class counts), `load` (raised to each port's load factor), `top_class` (raised
///   to the highest class active at a port).
#[derive(Copy, Clone, Debug, PartialEq, Default)]
pub struct RouterHeader {
    /// Lowest rate offered along the path, bits per second.
    pub rate_bps: u64,
    /// The sender's current weight (RACS w_c).
    pub weight: f32,
    /// The weight the sender advertised in its previous request (RACS w_p).
    pub prev_weight: f32,
    /// The sender's smoothed RTT (0: not measured yet).
    pub rtt_ns: u32,
    /// Smallest control interval along the path, nanoseconds.
    pub interval_ns: u32,
    /// Largest load factor along the path.
    pub load: f32,
    /// The sender's class (protocol-defined numbering; 0: none).
    pub class: u8,
    /// The sender's class as ports last counted it (0: not counted yet).
    pub prev_class: u8,
    /// Highest class active along the path.
    pub top_class: u8,
    /// Bytes this header occupies on the wire.
    pub wire_bytes: u8,
}

impl RouterHeader {
    /// `rate_bps` as a sender writes it: no port has offered a rate yet (each port keeps the
    /// smaller of its rate and this, so the first port's rate replaces it).
    pub const NO_RATE_YET: u64 = u64::MAX;
    /// `interval_ns` as a sender writes it: no port has given its control interval yet.
    pub const NO_INTERVAL_YET: u32 = u32::MAX;
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
}

impl Packet {
    #[inline]
    pub fn has(&self, flag: u8) -> bool {
        self.flags & flag != 0
    }
    /// The fields switches need, carried beside the packet id through the network.
    #[inline]
    pub fn meta(&self) -> PacketMeta {
        PacketMeta { flow: self.flow, wire_bytes: self.wire_bytes, flags: self.flags, hop: 0, kind: self.kind, prio: 0 }
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
    pub wire_bytes: u32,
    pub flags: u8,
    /// Where the packet is on its flow's path: the direction (bit 7: 0 from the flow's
    /// source, 1 toward it) and the index of the next port (bits 0-6). Set by the simulation.
    pub hop: u8,
    /// The packet's kind, so that switches see SYNs and FINs without reading the packet.
    pub kind: PacketKind,
    /// Its priority for disciplines that have bands (0 highest; see
    /// [`crate::qdisc::Discipline::class_of`]). Set by the simulation as the packet enters the
    /// network.
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
    wire_bytes: u32,
    payload_bytes: u32,
    seq: u64,
    ack: u64,
    ts_sent_ns: u64,
    ts_echo_ns: u64,
    ce_bytes_echo: u32,
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
            wire_bytes: p.wire_bytes,
            payload_bytes: p.payload_bytes,
            seq: p.seq,
            ack: p.ack,
            ts_sent_ns: p.ts_sent_ns,
            ts_echo_ns: p.ts_echo_ns,
            ce_bytes_echo: p.ce_bytes_echo,
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
            wire_bytes: c.wire_bytes,
            payload_bytes: c.payload_bytes,
            seq: c.seq,
            ack: c.ack,
            sack: if c.sack_len > 0 { self.sacks[i] } else { Default::default() },
            ts_sent_ns: c.ts_sent_ns,
            ts_echo_ns: c.ts_echo_ns,
            router: if c.flags & flags::ROUTER != 0 { self.routers[i] } else { Default::default() },
            ce_bytes_echo: c.ce_bytes_echo,
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
    fn pool_gives_back_every_field_and_the_side_parts_only_of_packets_that_carry_them() {
        let mut pool = PacketPool::new();
        let router =
            RouterHeader { rate_bps: 5, weight: 1.5, rtt_ns: 7, class: 2, wire_bytes: 12, ..Default::default() };
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
        };
        let a = pool.alloc(full.clone());
        assert_eq!(format!("{:?}", pool.get(a)), format!("{full:?}"));
        pool.router_mut(a).rate_bps = 1;
        assert_eq!(pool.take(a).router.rate_bps, 1);
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
