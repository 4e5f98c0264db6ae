//! The simulation's steps of a NIC serving its RoCE queue pairs in turn (`nic.rs` has the
//! state and the rule).

use crate::sim::{Event, Simulation};
use fctlab_engine::Nanos;
use fctlab_net::FlowId;

impl Simulation {
    /// Before RoCE flow `f` acts: whether its NIC can take a packet from it now. If not, it
    /// joins the NIC's line and waits to be woken.
    #[cold]
    #[inline(never)]
    pub(crate) fn nic_gate(&mut self, f: usize) {
        let Some((nic, _)) = self.flows.next_port(FlowId(f as u32), 0) else { return };
        let port = nic.0;
        let mtu = self.scenario.tcp.mss_bytes as u64 + self.scenario.tcp.header_bytes as u64;
        let ready = self.net.ports[port as usize].ready_at(self.now, mtu);
        let waiting = self.nics.line.get(&port).is_some_and(|l| !l.is_empty());
        let gate = match ready {
            None if !waiting => None,
            _ => {
                let line = self.nics.line.entry(port).or_default();
                if !line.contains(&(f as u32)) {
                    line.push_back(f as u32);
                }
                self.nic_wake(port, ready.unwrap_or(self.now));
                Some(Nanos::MAX)
            }
        };
        if let Some(conn) = self.flows.get_mut(f).and_then(|st| st.conn.as_deref_mut()) {
            conn.set_nic_ready(gate);
        }
    }

    /// Schedules NIC port `port`'s wake at `at` (one pending wake per NIC).
    fn nic_wake(&mut self, port: u32, at: Nanos) {
        let at = at.max(self.now);
        let pending = self.nics.wake_at.get(&port).copied();
        if pending.map_or(true, |t| t > at) {
            self.nics.wake_at.insert(port, at);
            self.events.push(at, Event::NicWake(port));
        }
    }

    /// NIC port `port` can take a packet: the queue pairs in line are woken in order until one
    /// puts a packet in, and the next wake follows that packet.
    #[cold]
    #[inline(never)]
    pub(crate) fn on_nic_wake(&mut self, port: u32) {
        if self.nics.wake_at.get(&port) != Some(&self.now) {
            return; // superseded
        }
        self.nics.wake_at.remove(&port);
        let mtu = self.scenario.tcp.mss_bytes as u64 + self.scenario.tcp.header_bytes as u64;
        loop {
            if let Some(t) = self.net.ports[port as usize].ready_at(self.now, mtu) {
                if self.nics.line.get(&port).is_some_and(|l| !l.is_empty()) {
                    self.nic_wake(port, t);
                }
                return;
            }
            let Some(f) = self.nics.line.get_mut(&port).and_then(|l| l.pop_front()) else { return };
            let f = f as usize;
            let now = self.now;
            let Some(conn) = self.flows.get_mut(f).and_then(|st| st.conn.as_deref_mut()) else { continue };
            if !conn.is_roce() {
                continue;
            }
            conn.set_nic_ready(None);
            conn.on_sender_timer(now, &mut self.out);
            self.after_flow_activity(f);
        }
    }
}
