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
pub enum PacketKind {
    #[default]
    Data,
    Ack,
    Syn,
    SynAck,
}

/// One SACK block: bytes [start, end) received above the cumulative ACK.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
pub struct SackBlock {
    pub start: u64,
    pub end: u64,
}

/// Header fields that routers stamp on data packets and receivers echo back on ACKs.
///
/// Router-assisted transports use them: an explicit rate (RCP, RACS: routers lower `rate_bps`
/// to their fair-share rate), a load factor or class feedback (SDC), and a flow weight or
/// remaining size that senders advertise to routers. A field left at its default means "not
/// set"; switches that do not take part leave them alone.
#[derive(Copy, Clone, Debug, PartialEq, Default)]
pub struct RouterHeader {
    /// Lowest rate offered along the path (0 = not stamped).
    pub rate_bps: u64,
    /// A value the sender advertises to routers (weight, remaining size, class).
    pub advertised: u64,
    /// Largest load factor or class seen along the path, in protocol-defined units.
    pub feedback: u32,
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
        PacketMeta { dst: self.dst, flow: self.flow, wire_bytes: self.wire_bytes, flags: self.flags, hop: 0 }
    }
}

/// What forwarding needs of a packet: its destination and flow (routing), size (queues) and
/// ECN flags (marking). Ports keep it beside the packet id, so a packet crossing a switch is
/// forwarded without reading the packet itself (a cache miss per hop saved). The flags here
/// are authoritative while the packet is in the network and are written back to the packet
/// when it reaches its host.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
pub struct PacketMeta {
    pub dst: NodeId,
    pub flow: FlowId,
    pub wire_bytes: u32,
    pub flags: u8,
    /// Where the packet is on its flow's path: the direction (bit 7: 0 from the flow's
    /// source, 1 toward it) and the index of the next port (bits 0-6). Set by the simulation.
    pub hop: u8,
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
        assert_eq!(std::mem::size_of::<Packet>(), 136);
        assert_eq!(std::mem::size_of::<PacketMeta>(), 16);
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
