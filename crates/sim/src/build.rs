//! Building a run from a validated scenario: the output ports of every link, the routes, and
//! each flow's paths (for its ideal completion time).

use crate::ideal::ideal_fct;
use fctlab_engine::{Nanos, Rng};
use fctlab_net::{FlowId, NodeId, NodeKind, Port, PortId, Routes};
use fctlab_scenario::{Scenario, ScenarioError};

/// The network of a run: ports (two per link, `a -> b` then `b -> a`), their levels, which
/// nodes are hosts, and the routing tables.
pub(crate) struct Network {
    pub ports: Vec<Port>,
    /// Where each port sits (`docs/results.md`, `level`), by port index.
    pub port_level: Vec<&'static str>,
    pub node_is_host: Vec<bool>,
    /// Shortest-path tables; needed only to compute the flows' paths (see [`FlowPaths`]).
    pub routes: Option<Routes>,
}

impl Network {
    /// Builds ports and routes. Fails (never panics) when the topology is disconnected.
    pub fn build(scenario: &Scenario) -> Result<Network, ScenarioError> {
        let topo = &scenario.topology;
        let n = topo.nodes.len();
        let node_is_host: Vec<bool> = topo.nodes.iter().map(|x| x.kind == NodeKind::Host).collect();
        let mut ports = Vec::with_capacity(topo.links.len() * 2);
        let mut port_level = Vec::with_capacity(topo.links.len() * 2);
        for l in &topo.links {
            for (from, to) in [(l.a, l.b), (l.b, l.a)] {
                let pid = ports.len() as u64;
                let (limit, queue) = if node_is_host[from] {
                    (scenario.nic_buffer, scenario.nic_queue.clone())
                } else {
                    (l.params.buffer, scenario.switch_queue.clone())
                };
                ports.push(
                    Port::new(
                        NodeId(from as u32),
                        NodeId(to as u32),
                        l.params.rate,
                        l.params.delay,
                        limit,
                        &queue,
                        Rng::stream(scenario.seed, 0x1_0000_0000 + pid),
                    )
                    .with_buffer_model(scenario.buffer_model),
                );
                port_level.push(l.level);
            }
        }
        let host_nodes: Vec<NodeId> = (0..n).filter(|&i| node_is_host[i]).map(|i| NodeId(i as u32)).collect();
        let routes = Routes::build(n, &host_nodes, &ports, fctlab_engine::rng::splitmix64(scenario.seed ^ 0xEC3F));
        // Connectivity: every host reaches every other host.
        if let Some(&first) = host_nodes.first() {
            for &h in &host_nodes[1..] {
                if !routes.reachable(first, h) || !routes.reachable(h, first) {
                    return Err(scenario.error(
                        "network",
                        format!(
                            "the topology is disconnected: no path between hosts \"{}\" and \"{}\"",
                            topo.nodes[first.0 as usize].name, topo.nodes[h.0 as usize].name
                        ),
                    ));
                }
            }
        }
        Ok(Network { ports, port_level, node_is_host, routes: Some(routes) })
    }

    /// Each flow's paths (the ports its data and its ACKs cross, ECMP choice included) and
    /// its ideal completion time on them (None for a long-lived flow).
    pub fn flow_paths(&self, scenario: &Scenario) -> Result<(FlowPaths, Vec<Option<Nanos>>), ScenarioError> {
        let routes = self.routes.as_ref().expect("paths are computed while the tables exist");
        let mut paths = FlowPaths { offsets: Vec::with_capacity(2 * scenario.flows.len() + 1), ports: Vec::new() };
        paths.offsets.push(0);
        let mut ideal = Vec::with_capacity(scenario.flows.len());
        for (i, f) in scenario.flows.iter().enumerate() {
            let (src, dst) = (NodeId(f.src as u32), NodeId(f.dst as u32));
            let fwd = routes.path(src, dst, FlowId(i as u32), &self.ports);
            let rev = routes.path(dst, src, FlowId(i as u32), &self.ports);
            let (Some(fwd), Some(rev)) = (fwd, rev) else {
                return Err(
                    scenario.error(&format!("flows[{i}]"), "no route between its hosts (the topology is disconnected)")
                );
            };
            if fwd.len() > MAX_HOPS || rev.len() > MAX_HOPS {
                return Err(scenario.error(&format!("flows[{i}]"), format!("its path has more than {MAX_HOPS} hops")));
            }
            ideal.push(f.size_bytes.map(|size| ideal_fct(size, &fwd, &rev, &self.ports, &scenario.tcp)));
            for p in [fwd, rev] {
                paths.ports.extend(p);
                paths.offsets.push(paths.ports.len() as u32);
            }
        }
        Ok((paths, ideal))
    }
}

/// The longest path a flow may take (the hop index is 7 bits of a packet's metadata).
pub(crate) const MAX_HOPS: usize = 127;

/// The ports every flow's packets cross, computed once when the run is built: forwarding is
/// one lookup by (flow, direction, hop) instead of a routing-table search per hop, and the
/// tables are not consulted while the simulation runs.
pub(crate) struct FlowPaths {
    /// `offsets[2f]..offsets[2f+1]`: flow f's data path; `offsets[2f+1]..offsets[2f+2]`: its ACK path.
    offsets: Vec<u32>,
    ports: Vec<PortId>,
}

/// `PacketMeta::hop`: bit 7 is the direction (set: toward the flow's source).
pub(crate) const HOP_REVERSE: u8 = 0x80;

impl FlowPaths {
    /// The port a packet takes next, and its metadata's hop index moved past it; None when
    /// its path is done (which forwarding never asks for).
    #[inline]
    pub fn next(&self, flow: FlowId, hop: u8) -> Option<(PortId, u8)> {
        let path = 2 * flow.0 as usize + (hop >> 7) as usize;
        let at = self.offsets[path] as usize + (hop & 0x7f) as usize;
        (at < self.offsets[path + 1] as usize).then(|| (self.ports[at], hop + 1))
    }
}
