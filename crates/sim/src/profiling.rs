//! The window profile (`window_profile.rs`) of a run: which node each event acts at.

use crate::sim::{Event, Simulation};
use crate::window_profile::{ProfileReport, WindowProfile};
use fctlab_engine::Nanos;
use fctlab_net::partition::Partition;

impl Simulation {
    /// Counts the run's events by part and window of `partition` from now on (before the run
    /// starts; not with packet captures, whose loop it does not run).
    pub fn profile_windows(&mut self, partition: Partition) -> Result<(), String> {
        if self.events.events_processed() > 0 {
            return Err("the window profile can be set only before the run starts".into());
        }
        if self.capture.is_some() {
            return Err("the window profile does not run with packet captures ([monitor] pcap)".into());
        }
        if partition.of_node.len() != self.scenario.topology.nodes.len() {
            return Err("the partition is of another network".into());
        }
        self.window_profile = Some(Box::new(WindowProfile::new(partition)));
        Ok(())
    }

    /// The window profile so far, if one runs.
    pub fn window_profile(&self) -> Option<ProfileReport> {
        Some(self.window_profile.as_deref()?.report(self.loop_wall.as_secs_f64()))
    }

    /// The node an event acts at, if it is one node's (`None`: the workload's arrivals and the
    /// monitors' samples, and pause frames, which name a port and a class together).
    fn event_node(&self, ev: Event) -> Option<usize> {
        let port = |p: u32| &self.net.ports[p as usize];
        Some(match ev {
            Event::Arrival(p) => port(p).to.0 as usize,
            Event::PortTick(p) | Event::PfcWake(p) | Event::NicWake(p) => port(p).from.0 as usize,
            Event::Rto(f) | Event::StartDependent(f) => self.spec(f as usize)?.src,
            Event::DelAck(f) => self.spec(f as usize)?.dst,
            Event::PullWake(n) => n as usize,
            Event::FlowStart | Event::QueueSample | Event::CwndSample | Event::PfcFrame(_) => return None,
        })
    }

    /// Counts event `ev` at time `t` (before it runs).
    #[inline(never)]
    pub(crate) fn profile_event(&mut self, t: Nanos, ev: Event) {
        let node = self.event_node(ev);
        let from = match ev {
            Event::Arrival(p) => Some(self.net.ports[p as usize].from.0 as usize),
            _ => None,
        };
        self.window_profile.as_deref_mut().expect("the profiled loop runs with a profile").record(t, node, from);
    }
}
