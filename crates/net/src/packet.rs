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
        PacketMeta { flow: self.flow, wire_bytes: self.wire_bytes, flags: self.flags, hop: 0, kind: self.kind }
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
}

impl PacketMeta {
    #[inline]
    pub fn has(&self, flag: u8) -> bool {
        self.flags & flag != 0
    }
}

/// A pool of packets with a free list: no allocation per packet once warmed up.
#[derive(Default)]
pub struct PacketPool {
    slots: Vec<Packet>,
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
        if let Some(i) = self.free.pop() {
            self.slots[i as usize] = p;
            PacketId(i)
        } else {
            self.slots.push(p);
            PacketId(self.slots.len() as u32 - 1)
        }
    }

    #[inline]
    pub fn get(&self, id: PacketId) -> &Packet {
        &self.slots[id.0 as usize]
    }

    #[inline]
    pub fn get_mut(&mut self, id: PacketId) -> &mut Packet {
        &mut self.slots[id.0 as usize]
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

    /// The sizes docs/performance.md states: the packet record read at the hosts, and the
    /// per-port metadata that switches forward from.
    #[test]
    fn record_sizes_are_as_documented() {
        assert_eq!(std::mem::size_of::<Packet>(), 144);
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
}
