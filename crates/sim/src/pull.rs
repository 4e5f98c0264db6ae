//! The pull pacer of each host that receives `ndp` flows (`crate::ndp` in fctlab_transport):
//! its state and the simulation's steps.
//!
//! A receiving host owes its flows one pull per data packet or trimmed header that arrives.
//! It sends them one full packet time apart at `ndp_pull_rate` of its link rate, whatever
//! flow they are for, so that the data they bring back fills its downlink and no more. A pull
//! due while the pacer is idle and the spacing since the last has passed rides on the ACK or
//! NACK that asked for it; otherwise the flow joins the pacer's line, and the pacer sends the
//! pulls in line one per spacing, taking the flows in turn (each flow's pulls in order).
//! A flow whose receiver has every packet gets no more pulls.

use crate::conn::Conn;
use crate::sim::{Event, Simulation};
use fctlab_engine::Nanos;
use fctlab_net::NodeId;
use std::collections::VecDeque;

/// One receiving host's pacer.
pub(crate) struct Pacer {
    /// Time between two pulls.
    spacing: Nanos,
    /// When the last pull left.
    last: Option<Nanos>,
    /// Flows owed pulls, in turn, with how many each is owed.
    line: VecDeque<(u32, u32)>,
    /// The pending wake, if one is scheduled.
    wake_at: Option<Nanos>,
}

impl Pacer {
    pub fn new(spacing: Nanos) -> Pacer {
        Pacer { spacing, last: None, line: VecDeque::new(), wake_at: None }
    }

    /// Whether a pull may leave now, on the reply that asks for it.
    fn free(&self, now: Nanos) -> bool {
        self.line.is_empty() && self.last.map_or(true, |t| now >= t + self.spacing)
    }

    /// Flow `f` is owed one more pull.
    fn owe(&mut self, f: u32) {
        match self.line.iter_mut().find(|(g, _)| *g == f) {
            Some((_, n)) => *n += 1,
            None => self.line.push_back((f, 1)),
        }
    }

    /// The next flow to pull, in turn.
    fn next(&mut self) -> Option<u32> {
        let (f, n) = self.line.pop_front()?;
        if n > 1 {
            self.line.push_back((f, n - 1));
        }
        Some(f)
    }
}

/// Makes sure host `node` of the `nodes` has a pacer in `pacers` (with its first `ndp` flow's
/// spacing).
pub(crate) fn ensure(pacers: &mut Vec<Option<Box<Pacer>>>, nodes: usize, node: NodeId, spacing: Nanos) {
    if pacers.len() < nodes {
        pacers.resize_with(nodes, || None);
    }
    let slot = &mut pacers[node.0 as usize];
    if slot.is_none() {
        *slot = Some(Box::new(Pacer::new(spacing)));
    }
}

impl Simulation {
    /// The time between two pulls of a host whose link runs at `rate_bps`, for packets of
    /// `wire` bytes, at `fraction` of the rate.
    pub(crate) fn pull_spacing(wire: u64, rate_bps: u64, fraction: f64) -> Nanos {
        let ns = wire as f64 * 8e9 / (rate_bps as f64 * fraction);
        Nanos::from_nanos(ns.ceil() as u64)
    }

    /// Flow `f`'s receiver at host `node` sent a reply (the last packet in `out`) and is owed
    /// a pull for it: on the reply if the pacer is free, else in the pacer's line.
    #[cold]
    #[inline(never)]
    pub(crate) fn pull_for(&mut self, node: NodeId, f: usize) {
        let now = self.now;
        let Some(Some(pacer)) = self.pacers.get_mut(node.0 as usize) else { return };
        if pacer.free(now) {
            pacer.last = Some(now);
            let Some(Conn::Ndp { rcv, .. }) = self.flows.get_mut(f).and_then(|st| st.conn.as_deref_mut()) else {
                return;
            };
            if let Some(reply) = self.out.last_mut() {
                rcv.stamp_pull(reply);
            }
            return;
        }
        pacer.owe(f as u32);
        let at = pacer.last.map_or(now, |t| t + pacer.spacing).max(now);
        if pacer.wake_at.is_none() {
            pacer.wake_at = Some(at);
            self.events.push(at, Event::PullWake(node.0));
        }
    }

    /// Host `node`'s pacer may send its next pull.
    pub(crate) fn on_pull_wake(&mut self, node: u32) {
        let now = self.now;
        let Some(Some(pacer)) = self.pacers.get_mut(node as usize) else { return };
        pacer.wake_at = None;
        // The next flow in line that still needs pulls.
        let mut sent = None;
        while let Some(f) = pacer.next() {
            let Some(Conn::Ndp { rcv, .. }) = self.flows.get_mut(f as usize).and_then(|st| st.conn.as_deref_mut())
            else {
                continue;
            };
            if rcv.has_everything() {
                continue;
            }
            self.out.push(rcv.pull(now));
            sent = Some(f);
            break;
        }
        let Some(Some(pacer)) = self.pacers.get_mut(node as usize) else { return };
        if sent.is_some() {
            pacer.last = Some(now);
        }
        if !pacer.line.is_empty() {
            let at = now + pacer.spacing;
            pacer.wake_at = Some(at);
            self.events.push(at, Event::PullWake(node));
        }
        if let Some(f) = sent {
            self.after_flow_activity(f as usize);
        }
    }
}
