//! The network: packets, output ports (queue + link), queue disciplines, routing and topologies.
//!
//! A directional link is modelled by the output [`Port`] that feeds it: a buffer run by a
//! queue discipline ([`qdisc`]: one file each, registered in one line), a transmitter of fixed
//! rate and a propagation pipe. Packets live in a [`PacketPool`] and are moved by
//! [`PacketId`]; a port keeps in-flight (and, under a first-in-first-out discipline, queued)
//! packets in one ring and needs at most one pending event (the arrival of its head at the far
//! end).

pub mod balance;
pub mod packet;
pub mod partition;
pub mod port;
pub mod qdisc;
pub mod routing;
pub mod topology;

pub use packet::{
    rank_of_bytes, FlowId, NodeId, Packet, PacketId, PacketKind, PacketMeta, PacketPool, PortId, RouterHeader,
    SackBlock,
};
pub use port::{pfc_priority, BufferModel, DropCause, EnqueueOutcome, PfcQueues, Port, PortStats, PFC_PRIORITIES};
pub use qdisc::{BufferLimit, Ns2RedConfig, QueueConfig, RedConfig, Waiting};
pub use routing::Routes;
pub use topology::{LinkParams, LinkSpec, Links, NodeKind, NodeSpec, Topology, TopologyConfig};
