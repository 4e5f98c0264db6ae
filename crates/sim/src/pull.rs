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
//!
//! EQDS's flows (`crate::eqds` in fctlab_transport) are pulled by demand instead: a flow is
//! owed pulls while fewer have been sent than its sender asked for, and a retransmission's pull
//! for each trimmed header. The pacer serves the flows owed retransmission pulls first, then
//! (after NDP's line) those owed demand, each list in turn; when nothing is owed it stops, and
//! the next flow owed a pull is pulled at once.

use crate::conn::Conn;
use crate::flowtable::FlowTable;
use crate::sim::{Event, Simulation};
use fctlab_engine::Nanos;
use fctlab_net::{NodeId, Packet};
use fctlab_transport::eqds::Owed;

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
        if let Some(Conn::Eqds { rcv, .. }) = self.flows.get(f).and_then(|st| st.conn.as_deref()) {
            let owed = rcv.owed();
            if owed == Owed::Nothing {
                return;
            }
            let idle = pacer.idle();
            let f = f as u32;
            if owed == Owed::Retransmission && !pacer.rtx.contains(&f) {
                pacer.rtx.push_back(f);
            }
            if !pacer.active.contains(&f) {
                pacer.active.push_back(f);
            }
            if pacer.wake_at.is_none() {
                // An idle pacer pulls at once; a busy one when its spacing has passed.
                let at = if idle { now } else { pacer.last.map_or(now, |t| t + pacer.spacing).max(now) };
                pacer.wake_at = Some(at);
                self.events.push(at, Event::PullWake(node.0));
            }
            return;
        }
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
        // EQDS's retransmission pulls first.
        let mut sent = None;
        while let Some(&f) = pacer.rtx.front() {
            match eqds_pull(&mut self.flows, f, now, true) {
                None => {
                    pacer.rtx.pop_front();
                }
                Some((p, still)) => {
                    pacer.rtx.pop_front();
                    if still == Owed::Retransmission {
                        pacer.rtx.push_back(f);
                    }
                    self.out.push(p);
                    sent = Some(f);
                    break;
                }
            }
        }
        // Then NDP's flows in line, each owed pulls for packets that arrived.
        while sent.is_none() {
            let Some(f) = pacer.next() else { break };
            let Some(Conn::Ndp { rcv, .. }) = self.flows.get_mut(f as usize).and_then(|st| st.conn.as_deref_mut())
            else {
                continue;
            };
            if rcv.has_everything() {
                continue;
            }
            self.out.push(rcv.pull(now));
            sent = Some(f);
        }
        // Then EQDS's flows owed pulls toward their senders' demand, in turn.
        while sent.is_none() {
            let Some(&f) = pacer.active.front() else { break };
            pacer.active.pop_front();
            if let Some((p, still)) = eqds_pull(&mut self.flows, f, now, false) {
                if still != Owed::Nothing {
                    pacer.active.push_back(f);
                }
                self.out.push(p);
                sent = Some(f);
            }
        }
        let Some(Some(pacer)) = self.pacers.get_mut(node as usize) else { return };
        if sent.is_some() {
            pacer.last = Some(now);
        }
        if !pacer.idle() {
            let at = now + pacer.spacing;
            pacer.wake_at = Some(at);
            self.events.push(at, Event::PullWake(node));
        }
        if let Some(f) = sent {
            self.after_flow_activity(f as usize);
        }
    }
}

/// EQDS flow `f`'s next pull, if it is owed one (`retransmission`: only a retransmission's),
/// and what it is owed after it.
fn eqds_pull(flows: &mut FlowTable, f: u32, now: Nanos, retransmission: bool) -> Option<(Packet, Owed)> {
    let Some(Conn::Eqds { rcv, .. }) = flows.get_mut(f as usize).and_then(|st| st.conn.as_deref_mut()) else {
        return None;
    };
    match rcv.owed() {
        Owed::Nothing => None,
        Owed::Demand if retransmission => None,
        _ => {
            let p = rcv.pull(now);
            Some((p, rcv.owed()))
        }
    }
}
