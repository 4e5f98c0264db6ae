//! Building a run from a validated scenario: the output ports of every link and the routes,
//! and each flow's paths and ideal completion time when it starts.

use crate::ideal::ideal_fct;
use fctlab_engine::{Nanos, Rng};
use fctlab_net::{BufferLimit, FlowId, NodeId, NodeKind, Port, PortId, Routes};
use fctlab_scenario::{FlowSpec, Scenario, ScenarioError};

/// The network of a run: ports (two per link, `a -> b` then `b -> a`), their levels, which
/// nodes are hosts, and the routing tables.
pub(crate) struct Network {
    pub ports: Vec<Port>,
    /// Where each port sits (`docs/results.md`, `level`), by port index.
    pub port_level: Vec<&'static str>,
    pub node_is_host: Vec<bool>,
    /// Shortest-path tables, from which each flow's paths are computed when it starts.
    pub routes: Routes,
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
                } else if scenario.shared_buffer.is_some() {
                    // The switch's shared buffer decides (`shared.rs`, or the inputs' thresholds).
                    (BufferLimit::Unlimited, scenario.switch_queue.clone())
                } else {
                    (l.params.buffer, scenario.switch_queue.clone())
                };
                let port = Port::new(
                    NodeId(from as u32),
                    NodeId(to as u32),
                    l.params.rate,
                    l.params.delay,
                    limit,
                    &queue,
                    Rng::stream(scenario.seed, 0x1_0000_0000 + pid),
                )
                .with_buffer_model(scenario.buffer_model);
                // Lossless runs: every port, a switch's or a NIC's, obeys pauses.
                ports.push(if scenario.pfc.is_some() { port.with_pfc() } else { port });
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
        let longest = routes.longest_host_path() as usize;
        if longest > MAX_HOPS {
            return Err(scenario.error(
                "network",
                format!("two hosts are {longest} hops apart, more than the {MAX_HOPS} a path may have"),
            ));
        }
        Ok(Network { ports, port_level, node_is_host, routes })
    }

    /// Flow `id`'s paths: the ports its data crosses, then those its ACKs cross (ECMP
    /// choice included), appended to `out`; returns how many of each. Empty when its hosts do
    /// not reach each other (its packets are then dropped as `no_route`; a validated
    /// topology has no such pair).
    pub fn paths_into(&self, id: FlowId, spec: &FlowSpec, out: &mut Vec<PortId>) -> (u8, u8) {
        let (src, dst) = (NodeId(spec.src as u32), NodeId(spec.dst as u32));
        let (Some(fwd), Some(rev)) =
            (self.routes.path(src, dst, id, &self.ports), self.routes.path(dst, src, id, &self.ports))
        else {
            return (0, 0);
        };
        let lens = (fwd.len() as u8, rev.len() as u8); // at most MAX_HOPS (checked when built)
        out.extend(fwd);
        out.extend(rev);
        lens
    }

    /// The shortest paths from host `src` to host `dst`: the product of the next hops each
    /// node offers along one of them (exact where every path branches alike, as in fat-trees
    /// and leaf-spines).
    pub fn paths_between(&self, src: NodeId, dst: NodeId) -> u64 {
        let (mut at, mut paths) = (src, 1u64);
        for _ in 0..=MAX_HOPS {
            if at == dst {
                break;
            }
            let c = self.routes.candidates(at, dst);
            let Some(&first) = c.first() else { break };
            paths = paths.saturating_mul(c.len() as u64);
            at = self.ports[first.0 as usize].to;
        }
        paths
    }

    /// Flow `id`'s best-case completion time on its paths (None for a long-lived flow).
    pub fn ideal_of(&self, id: FlowId, spec: &FlowSpec, tcp: &fctlab_transport::TcpConfig) -> Option<Nanos> {
        let size = spec.size_bytes?;
        let mut ports = Vec::new();
        let (fwd, _) = self.paths_into(id, spec, &mut ports);
        let (fwd, rev) = ports.split_at(fwd as usize);
        Some(ideal_fct(size, fwd, rev, &self.ports, tcp))
    }
}

/// The longest path a flow may take (the hop index is 7 bits of a packet's metadata).
pub(crate) const MAX_HOPS: usize = 127;

/// `PacketMeta::hop`: bit 7 is the direction (set: toward the flow's source).
pub(crate) const HOP_REVERSE: u8 = 0x80;
