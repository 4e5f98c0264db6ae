//! Priority flow control (IEEE 802.1Qbb) in the simulation (`[network] pfc = true`,
//! docs/lossless.md).
//!
//! Every switch counts, for each of its inputs (the port of the upstream node that feeds it)
//! and each packet priority, the bytes it holds that came in by that input: a packet counts
//! from its arrival until its transmission on the way out starts. Above the input's `xoff`
//! the switch sends a pause for that priority back on the link; at or below `xon`, a resume.
//! A pause frame takes the reverse link's serialization of 64 bytes and its propagation delay;
//! it does not wait behind the data packet being sent (at most one full packet's time, 1.2 us
//! at 10 Gbps). The upstream port (a switch's or a host's NIC, all lossless) stops serving the
//! paused priority and goes on with the others ([`fctlab_net::Port::set_paused`]). A packet
//! that finds its input's count above `xoff` plus the headroom is dropped (its cause
//! `buffer_full`): with the headroom the links need, none is.
//!
//! This module holds the state and the thresholds; `lossless.rs` the simulation's steps.

use crate::build::Network;
use fctlab_engine::Nanos;
use fctlab_net::{BufferLimit, Waiting, PFC_PRIORITIES};
use fctlab_scenario::{Scenario, ScenarioError};

/// Bytes of a pause frame on the wire (a minimum Ethernet frame).
pub const FRAME_BYTES: u64 = 64;
/// No input: the packet is not counted at a switch (it left one, or came from a host's send).
pub(crate) const NONE: u32 = u32::MAX;

/// One pause or resume taking effect at a port (the pause monitor): the port that stops or
/// resumes serving `prio`, sent by the node at its far end.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct PauseRecord {
    pub time: Nanos,
    pub port: u32,
    pub prio: u8,
    pub pause: bool,
}

/// Thresholds and counts of every switch input, the input each counted packet came by, and
/// the pause monitor.
pub(crate) struct Pfc {
    pub xoff: Vec<u64>,
    pub xon: Vec<u64>,
    /// `xoff` plus the headroom: above it a packet is dropped.
    pub limit: Vec<u64>,
    pub held: Vec<[u64; PFC_PRIORITIES]>,
    /// The priorities of each input paused now (a pause sent, its resume not yet).
    pub sent: Vec<u8>,
    pub max_held: Vec<u64>,
    pub input_of: Vec<u32>,
    /// When each port is to be woken next, to start its next packet.
    pub wake_at: Vec<Nanos>,
    pub log: Vec<PauseRecord>,
    pub started: Vec<Waiting>,
    /// Each node's output ports.
    pub outputs: Vec<Vec<u32>>,
    /// The pause cycle found, if the run deadlocked: why it stopped.
    pub deadlock: Option<String>,
}

/// `[network]`'s thresholds for the input `p` (a port whose far end is a switch): given, or
/// from its link (docs/lossless.md).
fn thresholds(sc: &Scenario, net: &Network, p: usize, mtu: u64) -> Result<(u64, u64, u64), ScenarioError> {
    let cfg = sc.pfc.as_ref().expect("pfc");
    let port = &net.ports[p];
    let headroom = cfg.headroom.unwrap_or_else(|| {
        // The bytes the link holds in flight: rate × delay, rounded up to a whole byte.
        let bdp = (port.rate.0 as u128 * port.delay.as_nanos() as u128).div_ceil(8_000_000_000);
        (u64::try_from(bdp).unwrap_or(u64::MAX)).saturating_mul(2).saturating_add(2 * mtu + FRAME_BYTES)
    });
    let link = &sc.topology.links[p / 2];
    let buffer = match link.params.buffer {
        BufferLimit::Packets(n) => Some((n as u64).saturating_mul(mtu)),
        BufferLimit::Bytes(b) => Some(b),
        BufferLimit::Unlimited => None,
    };
    let name = |i: u32| sc.topology.nodes[i as usize].name.as_str();
    let xoff = match (cfg.xoff, buffer) {
        (Some(x), _) => x,
        (None, Some(b)) if b >= headroom.saturating_add(2 * mtu) => b - headroom,
        (None, Some(b)) => {
            return Err(sc.error(
                "network.pfc",
                format!(
                    "the buffer of {}->{} ({b}B) leaves no room above the headroom its link needs ({headroom}B: two \
                     propagation delays at its rate, two full packets and a pause frame); give a larger buffer, or \
                     pfc_xoff and pfc_headroom",
                    name(port.from.0),
                    name(port.to.0)
                ),
            ))
        }
        (None, None) => {
            return Err(sc.error("network.pfc", "an unlimited buffer has no pause threshold: give pfc_xoff".to_string()))
        }
    };
    let xon = cfg.xon.unwrap_or(xoff.saturating_sub(2 * mtu));
    let limit = xoff.saturating_add(headroom);
    if xon > xoff {
        return Err(sc.error("network.pfc_xon", format!("must not be above the pause threshold ({xoff}B), got {xon}B")));
    }
    if limit < 2 * mtu {
        return Err(sc.error(
            "network.pfc",
            format!(
                "{}->{}: the pause threshold plus the headroom ({limit}B) must hold two full packets ({}B): a \
                 packet larger than it would be dropped however empty the switch",
                name(port.from.0),
                name(port.to.0),
                2 * mtu
            ),
        ));
    }
    Ok((xoff, xon, limit))
}

impl Pfc {
    pub fn new(sc: &Scenario, net: &Network) -> Result<Pfc, ScenarioError> {
        let n = net.ports.len();
        let mtu = (sc.tcp.mss_bytes as u64 + sc.tcp.header_bytes as u64).max(FRAME_BYTES);
        let mut pfc = Pfc {
            xoff: vec![u64::MAX; n],
            xon: vec![u64::MAX; n],
            limit: vec![u64::MAX; n],
            held: vec![[0; PFC_PRIORITIES]; n],
            sent: vec![0; n],
            max_held: vec![0; n],
            input_of: Vec::new(),
            wake_at: vec![Nanos::MAX; n],
            log: Vec::new(),
            started: Vec::new(),
            outputs: vec![Vec::new(); net.node_is_host.len()],
            deadlock: None,
        };
        for (p, port) in net.ports.iter().enumerate() {
            pfc.outputs[port.from.0 as usize].push(p as u32);
        }
        for p in 0..n {
            if !net.node_is_host[net.ports[p].to.0 as usize] {
                (pfc.xoff[p], pfc.xon[p], pfc.limit[p]) = thresholds(sc, net, p, mtu)?;
            }
        }
        Ok(pfc)
    }

    /// The pause threshold, the resume threshold and the drop limit of input `p` (bytes).
    pub fn thresholds_of(&self, p: usize) -> (u64, u64, u64) {
        (self.xoff[p], self.xon[p], self.limit[p])
    }
}

/// A pause frame's event: the port it stops or resumes, the priority, pause or resume.
pub(crate) fn frame_code(port: usize, prio: usize, pause: bool) -> u32 {
    ((port as u32) << 4) | ((prio as u32) << 1) | pause as u32
}
