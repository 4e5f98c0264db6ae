//! The network: packets, output ports (queue + link), queue disciplines, routing and topologies.
//!
//! A directional link is modelled by the output [`Port`] that feeds it: a FIFO buffer, a
//! transmitter of fixed rate and a propagation pipe. Packets live in a [`PacketPool`] and are
//! moved by [`PacketId`]; a port keeps queued and in-flight packets in one ring and needs at
//! most one pending event (the arrival of its head at the far end).

pub mod packet;
pub mod port;
pub mod queue;
pub mod routing;
pub mod topology;

pub use packet::{
    FlowId, NodeId, Packet, PacketId, PacketKind, PacketMeta, PacketPool, PortId, RouterHeader, SackBlock,
};
pub use port::{BufferLimit, BufferModel, EnqueueOutcome, Port, PortStats};
pub use queue::{Ns2RedConfig, QueueConfig, RedConfig};
pub use routing::Routes;
pub use topology::{LinkParams, LinkSpec, NodeKind, NodeSpec, Topology, TopologyKind};
