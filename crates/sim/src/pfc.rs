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
    /// For a pause: who it holds up ([`Blocked`]).
    pub blocked: Option<Blocked>,
}

/// Head-of-line blocking at a pause: the packets of the paused priority waiting at the paused
/// port as the pause takes effect, their flows, and of those the flows held up by another
/// link's congestion. The pause comes from the switch at the port's far end, whose count of
/// what came in by this port passed its threshold; the output there holding most of those
/// bytes is the congested link. A flow waiting at the paused port whose next link is another
/// one is a victim: its own way on is not what stopped it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Blocked {
    pub packets: u32,
    pub flows: u32,
    pub victim_flows: u32,
    /// The congested output at the far end (none when it holds nothing from this port).
    pub congested: Option<u32>,
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
    /// Dynamic thresholds over each switch's shared buffer (`switch_buffer`), if given.
    pub shared: Option<SharedPfc>,
}

/// Bytes each input and priority holds before it draws on the shared buffer (the HPCC fork's
/// `SwitchMmu::reserve`).
pub const RESERVE: u64 = 4 * 1024;
/// A resume goes when the shared bytes of an input and priority are this far below its pause
/// threshold (the fork's `resume_offset`).
pub const RESUME_OFFSET: u64 = 3 * 1024;

/// A lossless switch's shared buffer (the HPCC ns-3 fork's `SwitchMmu`): each input and
/// priority holds its first [`RESERVE`] bytes on its own and the rest in the shared space,
/// until its shared bytes pass `alpha` times the shared space left free (the buffer less every
/// input's headroom and reserve and the shared bytes in use). Then it pauses its sender, and
/// what still arrives goes to its headroom; a packet that finds the headroom full is dropped.
/// It resumes once its headroom is empty and its shared bytes are [`RESUME_OFFSET`] below the
/// threshold.
pub(crate) struct SharedPfc {
    /// Each input's switch (an index into `space`), its alpha and its headroom.
    pub switch_of: Vec<u32>,
    pub alpha: Vec<f64>,
    pub headroom: Vec<u64>,
    /// Per input and priority: the bytes taken into the headroom (that arrived past the
    /// threshold), apart from the reserve and shared bytes.
    pub hdrm: Vec<[u64; PFC_PRIORITIES]>,
    /// Per switch: the buffer less every input's headroom and reserve, and the shared bytes
    /// in use.
    pub space: Vec<u64>,
    pub used: Vec<u64>,
}

impl SharedPfc {
    /// Input `i`'s pause threshold now: alpha times the shared space left free.
    pub fn threshold(&self, i: usize) -> u64 {
        let s = self.switch_of[i] as usize;
        (self.space[s].saturating_sub(self.used[s]) as f64 * self.alpha[i]) as u64
    }
}

/// The shared bytes of a count of `held` (what passes the reserve).
pub fn shared_part(held: u64) -> u64 {
    held.saturating_sub(RESERVE)
}

/// `[network]`'s thresholds for the input `p` (a port whose far end is a switch): given, or
/// from its link (docs/lossless.md).
fn thresholds(sc: &Scenario, net: &Network, p: usize, mtu: u64) -> Result<(u64, u64, u64), ScenarioError> {
    let cfg = sc.pfc.as_ref().expect("pfc");
    let port = &net.ports[p];
    let headroom = headroom_of(sc, net, p, mtu);
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
            shared: None,
        };
        for (p, port) in net.ports.iter().enumerate() {
            pfc.outputs[port.from.0 as usize].push(p as u32);
        }
        match &sc.shared_buffer {
            None => {
                for p in 0..n {
                    if !net.node_is_host[net.ports[p].to.0 as usize] {
                        (pfc.xoff[p], pfc.xon[p], pfc.limit[p]) = thresholds(sc, net, p, mtu)?;
                    }
                }
            }
            Some(b) => pfc.shared = Some(shared(sc, net, b, mtu)?),
        }
        Ok(pfc)
    }

    /// The pause threshold, the resume threshold and the drop limit of input `p` (bytes).
    pub fn thresholds_of(&self, p: usize) -> (u64, u64, u64) {
        (self.xoff[p], self.xon[p], self.limit[p])
    }
}

/// The headroom input `p` keeps above its pause threshold: given, or what its link holds in
/// flight both ways (rate × delay, rounded up to a whole byte), two full packets and a pause
/// frame.
fn headroom_of(sc: &Scenario, net: &Network, p: usize, mtu: u64) -> u64 {
    let port = &net.ports[p];
    sc.pfc.as_ref().and_then(|c| c.headroom).unwrap_or_else(|| {
        let bdp = (port.rate.0 as u128 * port.delay.as_nanos() as u128).div_ceil(8_000_000_000);
        (u64::try_from(bdp).unwrap_or(u64::MAX)).saturating_mul(2).saturating_add(2 * mtu + FRAME_BYTES)
    })
}

/// The shared-buffer thresholds of every switch input.
fn shared(
    sc: &Scenario,
    net: &Network,
    b: &fctlab_scenario::SharedBuffer,
    mtu: u64,
) -> Result<SharedPfc, ScenarioError> {
    let n = net.ports.len();
    let nodes = net.node_is_host.len();
    // The hosts' rate: the slowest host link's, where the fork's alpha of 1/8 applies.
    let nic = net.ports.iter().filter(|p| net.node_is_host[p.from.0 as usize]).map(|p| p.rate.0).min().unwrap_or(1);
    let mut sh = SharedPfc {
        switch_of: vec![u32::MAX; n],
        alpha: vec![0.0; n],
        headroom: vec![0; n],
        hdrm: vec![[0; PFC_PRIORITIES]; n],
        space: vec![b.bytes; nodes],
        used: vec![0; nodes],
    };
    for p in 0..n {
        let sw = net.ports[p].to.0 as usize;
        if net.node_is_host[sw] {
            continue;
        }
        let h = headroom_of(sc, net, p, mtu);
        sh.switch_of[p] = sw as u32;
        sh.headroom[p] = h;
        sh.alpha[p] = b.pfc_alpha.unwrap_or_else(|| {
            // 1/8 at the hosts' rate, doubled for each doubling above it (the fork's third.cc).
            let mut a = 1.0 / 8.0;
            let mut rate = net.ports[p].rate.0;
            while rate > nic && a < 1.0 {
                a *= 2.0;
                rate /= 2;
            }
            a
        });
        sh.space[sw] = sh.space[sw].saturating_sub(h + RESERVE);
    }
    for sw in 0..nodes {
        if !net.node_is_host[sw] && sh.space[sw] < 2 * mtu {
            return Err(sc.error(
                "network.switch_buffer",
                format!(
                    "{}B leaves {}B at switch \"{}\" once its inputs' headroom and reserve are set aside; it must hold \
                     two full packets ({}B)",
                    b.bytes,
                    sh.space[sw],
                    sc.topology.nodes[sw].name,
                    2 * mtu
                ),
            ));
        }
    }
    Ok(sh)
}

/// A pause frame's event: the port it stops or resumes, the priority, pause or resume.
pub(crate) fn frame_code(port: usize, prio: usize, pause: bool) -> u32 {
    ((port as u32) << 4) | ((prio as u32) << 1) | pause as u32
}
