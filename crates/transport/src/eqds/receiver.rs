//! The receiving side of an `eqds` flow: NDP's ACKs and NACKs, and what its host's pacer owes
//! it: pulls up to the number its sender asked for, and a retransmission's pulls for each
//! trimmed header (see [`super`]).

use crate::config::TcpConfig;
use crate::ndp::NdpReceiver;
use fctlab_engine::Nanos;
use fctlab_net::packet::flags;
use fctlab_net::{FlowId, NodeId, Packet, PacketKind};

pub struct EqdsReceiver {
    inner: NdpReceiver,
    /// The most pulls the sender asked for, and the pulls sent.
    target: u32,
    pulled: u32,
    /// Retransmission pulls owed (one per trimmed header).
    rtx_owed: u32,
}

/// What a flow's receiver is owed by its host's pacer.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Owed {
    Nothing,
    /// Pulls toward its sender's demand.
    Demand,
    /// A retransmission's pull (served first).
    Retransmission,
}

impl EqdsReceiver {
    pub fn new(flow: FlowId, node: NodeId, peer: NodeId, size: Option<u64>, cfg: &TcpConfig) -> EqdsReceiver {
        EqdsReceiver { inner: NdpReceiver::new(flow, node, peer, size, cfg), target: 0, pulled: 0, rtx_owed: 0 }
    }

    pub fn bytes_delivered(&self) -> u64 {
        self.inner.bytes_delivered()
    }
    pub fn out_of_order(&self) -> u64 {
        self.inner.out_of_order
    }

    /// A data packet or a trimmed header arrived: its ACK or NACK goes to `out`.
    pub fn on_packet(&mut self, now: Nanos, p: &Packet, out: &mut Vec<Packet>) {
        if p.kind != PacketKind::Data {
            return;
        }
        self.target = self.target.max(p.pull_no);
        if p.has(flags::TRIMMED) {
            self.rtx_owed += 1;
        }
        self.inner.on_packet(now, p, out);
    }

    /// What the pacer owes this flow now.
    pub fn owed(&self) -> Owed {
        if self.inner.has_everything() {
            Owed::Nothing
        } else if self.rtx_owed > 0 {
            Owed::Retransmission
        } else if self.pulled < self.target {
            Owed::Demand
        } else {
            Owed::Nothing
        }
    }

    /// The next pull (one full packet of credit).
    pub fn pull(&mut self, now: Nanos) -> Packet {
        self.rtx_owed = self.rtx_owed.saturating_sub(1);
        self.pulled += 1;
        let mut p = self.inner.pull(now);
        p.pull_no = self.pulled;
        p
    }
}
