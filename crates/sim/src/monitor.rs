//! Monitors: periodic samples of queue lengths and congestion windows, and the drop trace
//! (`[monitor]`).

use crate::build::Network;
use crate::conn::WindowView;
use crate::results::{CwndSample, DropRecord, QueueSample};
use fctlab_engine::Nanos;
use fctlab_net::Packet;
use fctlab_scenario::Scenario;
use std::sync::Arc;

/// What a run samples and the samples so far.
pub(crate) struct Monitor {
    /// Sampled ports and their names ("a->b"), formatted once.
    sampled_ports: Vec<(u32, String)>,
    pub queues: Option<Vec<QueueSample>>,
    pub cwnd: Option<Vec<CwndSample>>,
    cwnd_traced: Vec<u32>,
    /// Bytes acknowledged per traced flow at the previous sample.
    cwnd_last_acked: Vec<u64>,
    /// Every dropped packet, when traced; the names its rows use: each port's ("a->b"), then
    /// each node's (for a packet a switch had no route for).
    pub drops: Option<Vec<DropRecord>>,
    drop_names: Vec<Arc<str>>,
    /// Ports among `drop_names` (the nodes' names follow them).
    drop_ports: usize,
}

impl Monitor {
    pub fn new(scenario: &Scenario, net: &Network) -> Monitor {
        let topo = &scenario.topology;
        let m = &scenario.monitor;
        let mut sampled_ports = Vec::new();
        if m.queue_interval.is_some() {
            let all = m.queues.is_empty() || m.queues.iter().any(|q| q == "all");
            for (pi, p) in net.ports.iter().enumerate() {
                let (from, to) = (&topo.nodes[p.from.0 as usize].name, &topo.nodes[p.to.0 as usize].name);
                let wanted = if all {
                    !net.node_is_host[p.from.0 as usize]
                } else {
                    m.queues.iter().any(|q| q.split_once("->").is_some_and(|(a, b)| a.trim() == from && b.trim() == to))
                };
                if wanted {
                    sampled_ports.push((pi as u32, format!("{from}->{to}")));
                }
            }
        }
        let nflows = scenario.flows.len();
        let cwnd_traced: Vec<u32> = match &m.cwnd_flows {
            None => (0..nflows as u32).collect(),
            Some(ids) => ids.iter().map(|&f| f as u32).collect(),
        };
        let drop_names = if m.drops {
            let node = |n: fctlab_net::NodeId| topo.nodes[n.0 as usize].name.as_str();
            let ports = net.ports.iter().map(|p| Arc::from(format!("{}->{}", node(p.from), node(p.to))));
            ports.chain(topo.nodes.iter().map(|n| Arc::from(n.name.as_str()))).collect()
        } else {
            Vec::new()
        };
        Monitor {
            drops: m.drops.then(Vec::new),
            drop_names,
            drop_ports: net.ports.len(),
            sampled_ports,
            queues: m.queue_interval.map(|_| Vec::new()),
            cwnd: m.cwnd_interval.map(|_| Vec::new()),
            cwnd_last_acked: vec![0; cwnd_traced.len()],
            cwnd_traced,
        }
    }

    /// Samples the queue of every monitored port at `now`.
    pub fn sample_queues(&mut self, now: Nanos, net: &mut Network) {
        let Some(s) = self.queues.as_mut() else { return };
        for (pi, name) in &self.sampled_ports {
            let (pk, by) = net.ports[*pi as usize].queue_at(now);
            s.push(QueueSample {
                time_s: now.as_secs_f64(),
                link_id: *pi as u64,
                link: name.clone(),
                queue_pkts: pk as u64,
                queue_bytes: by,
            });
        }
    }

    /// Samples the window of every traced flow that is running at `now`; `sender(f)` is flow
    /// f's sender if it is running.
    pub fn sample_cwnd(&mut self, now: Nanos, interval: Nanos, sender: impl Fn(usize) -> Option<WindowView>) {
        let Some(s) = self.cwnd.as_mut() else { return };
        for (k, &f) in self.cwnd_traced.iter().enumerate() {
            let Some(snd) = sender(f as usize) else { continue };
            let acked = snd.acked;
            let rate = (acked - self.cwnd_last_acked[k]) as f64 * 8.0 / interval.as_secs_f64();
            self.cwnd_last_acked[k] = acked;
            s.push(CwndSample {
                time_s: now.as_secs_f64(),
                flow_id: f as u64,
                cwnd_bytes: snd.cwnd_bytes,
                ssthresh_bytes: snd.ssthresh_bytes,
                rate_bps: rate,
                weight: snd.weight,
                pacing_bps: snd.pacing.map(|r| r.0 as f64),
            });
        }
    }
}

/// Where a packet was dropped: at an output port, or at a node with no route for it.
#[derive(Copy, Clone, Debug)]
pub(crate) enum DropSite {
    Port(usize),
    Node(usize),
}

impl Monitor {
    /// Traces packet `p`, dropped at `now` at `site` for `cause`.
    pub fn record_drop(&mut self, now: Nanos, site: DropSite, p: &Packet, cause: fctlab_net::DropCause) {
        let Some(d) = self.drops.as_mut() else { return };
        let (link_id, name) = match site {
            DropSite::Port(i) => (Some(i as u64), self.drop_names[i].clone()),
            DropSite::Node(n) => (None, self.drop_names[self.drop_ports + n].clone()),
        };
        d.push(DropRecord {
            time_s: now.as_secs_f64(),
            link_id,
            link: name,
            flow_id: p.flow.0 as u64,
            kind: p.kind.name(),
            seq: if p.kind.is_reverse() { p.ack } else { p.seq },
            payload_bytes: p.payload_bytes as u64,
            retransmission: p.has(fctlab_net::packet::flags::RETX),
            cause: cause.name(),
        });
    }
}
