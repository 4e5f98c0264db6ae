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

use crate::build::Network;
use crate::sim::{Event, Simulation};
use fctlab_engine::Nanos;
use fctlab_net::{BufferLimit, PacketId, PacketMeta, Waiting, PFC_PRIORITIES};
use fctlab_scenario::{Scenario, ScenarioError};

/// Bytes of a pause frame on the wire (a minimum Ethernet frame).
pub const FRAME_BYTES: u64 = 64;
/// No input: the packet is not counted at a switch (it left one, or came from a host's send).
const NONE: u32 = u32::MAX;

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
    xoff: Vec<u64>,
    xon: Vec<u64>,
    /// `xoff` plus the headroom: above it a packet is dropped.
    limit: Vec<u64>,
    held: Vec<[u64; PFC_PRIORITIES]>,
    /// The priorities of each input paused now (a pause sent, its resume not yet).
    sent: Vec<u8>,
    pub max_held: Vec<u64>,
    input_of: Vec<u32>,
    /// When each port is to be woken next, to start its next packet.
    wake_at: Vec<Nanos>,
    pub log: Vec<PauseRecord>,
    started: Vec<Waiting>,
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
        };
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

fn prio_of(meta: &PacketMeta) -> usize {
    (meta.prio as usize).min(PFC_PRIORITIES - 1)
}

/// A pause frame's event: the port it stops or resumes, the priority, pause or resume.
pub(crate) fn frame_code(port: usize, prio: usize, pause: bool) -> u32 {
    ((port as u32) << 4) | ((prio as u32) << 1) | pause as u32
}

impl Simulation {
    /// A packet arrived at a switch by input `input`: counted against it; a pause goes back if
    /// it crossed `xoff`. False: the count is past the headroom, and the packet is dropped.
    #[cold]
    #[inline(never)]
    pub(crate) fn pfc_in(&mut self, input: u32, pid: PacketId, meta: &PacketMeta) -> bool {
        let now = self.now;
        let Some(pfc) = self.pfc.as_deref_mut() else { return true };
        let (i, prio, wire) = (input as usize, prio_of(meta), meta.wire_bytes as u64);
        if pfc.limit[i] != u64::MAX && pfc.held[i][prio].saturating_add(wire) > pfc.limit[i] {
            return false;
        }
        pfc.held[i][prio] += wire;
        pfc.max_held[i] = pfc.max_held[i].max(pfc.held[i][prio]);
        let k = pid.0 as usize;
        if pfc.input_of.len() <= k {
            pfc.input_of.resize(k + 1, NONE);
        }
        pfc.input_of[k] = input;
        if pfc.held[i][prio] > pfc.xoff[i] && pfc.sent[i] & (1 << prio) == 0 {
            pfc.sent[i] |= 1 << prio;
            self.pfc_send(i, prio, true, now);
        }
        true
    }

    /// A pause (or resume) of priority `prio` of port `input`, sent by the switch at its far
    /// end back on the reverse link.
    fn pfc_send(&mut self, input: usize, prio: usize, pause: bool, now: Nanos) {
        let back = &self.net.ports[input ^ 1];
        let t = now + back.rate.tx_time(FRAME_BYTES) + back.delay;
        self.events.push(t, Event::PfcFrame(frame_code(input, prio, pause)));
    }

    /// A packet held at a switch leaves its input's count (its transmission started, or it was
    /// dropped); a resume goes back when the count reaches `xon`.
    fn pfc_out(&mut self, pid: PacketId, meta: &PacketMeta) {
        let now = self.now;
        let Some(pfc) = self.pfc.as_deref_mut() else { return };
        let k = pid.0 as usize;
        let Some(&i) = pfc.input_of.get(k) else { return };
        if i == NONE {
            return;
        }
        pfc.input_of[k] = NONE;
        let (i, prio) = (i as usize, prio_of(meta));
        pfc.held[i][prio] -= meta.wire_bytes as u64;
        if pfc.sent[i] & (1 << prio) != 0 && pfc.held[i][prio] <= pfc.xon[i] {
            pfc.sent[i] &= !(1 << prio);
            self.pfc_send(i, prio, false, now);
        }
    }

    /// After anything touched lossless port `port`: the packets whose transmission started
    /// leave their switch's count, and the port is woken when its transmitter frees.
    #[cold]
    #[inline(never)]
    pub(crate) fn pfc_touched(&mut self, port: usize) {
        let Some(pfc) = self.pfc.as_deref_mut() else { return };
        let mut started = std::mem::take(&mut pfc.started);
        self.net.ports[port].take_started(&mut started);
        for w in started.drain(..) {
            self.pfc_out(w.pkt, &w.meta);
        }
        let now = self.now;
        let wake = self.net.ports[port].pfc_wake(now);
        let Some(pfc) = self.pfc.as_deref_mut() else { return };
        pfc.started = started;
        if let Some(t) = wake {
            if pfc.wake_at[port] != t {
                pfc.wake_at[port] = t;
                self.events.push(t, Event::PfcWake(port as u32));
            }
        }
    }

    /// A dropped packet that a switch counted leaves the count.
    pub(crate) fn pfc_forget(&mut self, pid: PacketId, meta: &PacketMeta) {
        self.pfc_out(pid, meta);
    }

    /// A pause frame arrives at the port it stops or resumes.
    #[cold]
    #[inline(never)]
    pub(crate) fn on_pfc_frame(&mut self, code: u32) {
        let (port, prio, pause) = ((code >> 4) as usize, ((code >> 1) & 7) as usize, code & 1 == 1);
        if let Some(t) = self.net.ports[port].set_paused(self.now, prio, pause) {
            self.events.push(t, Event::Arrival(port as u32));
        }
        if let Some(pfc) = self.pfc.as_deref_mut() {
            pfc.log.push(PauseRecord { time: self.now, port: port as u32, prio: prio as u8, pause });
        }
        self.pfc_touched(port);
    }

    /// A lossless port's transmitter frees: its next packet starts.
    #[cold]
    #[inline(never)]
    pub(crate) fn on_pfc_wake(&mut self, port: u32) {
        let p = port as usize;
        if let Some(pfc) = self.pfc.as_deref_mut() {
            if pfc.wake_at[p] == self.now {
                pfc.wake_at[p] = Nanos::MAX;
            }
        }
        if let Some(t) = self.net.ports[p].serve(self.now) {
            self.events.push(t, Event::Arrival(port));
        }
        self.pfc_touched(p);
    }

    /// The pause monitor: every pause and resume so far, in time order.
    pub fn pfc_log(&self) -> &[PauseRecord] {
        self.pfc.as_deref().map_or(&[], |p| &p.log)
    }

    /// The most bytes of one priority input `p`'s switch held from it, and its thresholds
    /// (pause, resume, drop), if the run is lossless.
    pub fn pfc_input(&self, p: usize) -> Option<(u64, (u64, u64, u64))> {
        self.pfc.as_deref().map(|x| (x.max_held[p], x.thresholds_of(p)))
    }
}
