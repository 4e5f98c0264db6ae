//! Shortest-path routing with per-flow ECMP.
//!
//! For every node and destination host the table holds the output ports that lie on a
//! shortest path (hop count). A packet picks one of them by a hash of its flow id and the
//! node, so a flow keeps one path and different flows spread over equal-cost paths. Hosts
//! never forward transit traffic. A hop is two array reads and a hash: no search.

use crate::packet::{FlowId, NodeId, PortId};
use crate::port::Port;
use fctlab_engine::rng::splitmix64;
use std::collections::VecDeque;

/// `host_index` of a switch: it has no host number.
const NOT_A_HOST: u32 = u32::MAX;
/// A node's distance to a host it cannot reach (yet, while the search runs).
const UNREACHED: u32 = u32::MAX;

pub struct Routes {
    hosts: u32,
    /// `host_index[node]` is the host number of a node, or [`NOT_A_HOST`] for switches.
    host_index: Vec<u32>,
    /// `offsets[node * hosts + h] .. offsets[node * hosts + h + 1]` indexes `next`.
    offsets: Vec<u32>,
    next: Vec<PortId>,
    salt: u64,
    /// The most hops between two hosts that reach each other.
    longest: u32,
}

impl Routes {
    /// Builds the tables. `host_nodes[h]` is the node id of host `h`.
    pub fn build(nodes: usize, host_nodes: &[NodeId], ports: &[Port], salt: u64) -> Routes {
        let hosts = host_nodes.len();
        let mut host_index = vec![NOT_A_HOST; nodes];
        for (h, n) in host_nodes.iter().enumerate() {
            host_index[n.0 as usize] = h as u32;
        }
        // Reverse adjacency: for each node, the ports that lead into it.
        let mut into: Vec<Vec<u32>> = vec![Vec::new(); nodes];
        for (i, p) in ports.iter().enumerate() {
            into[p.to.0 as usize].push(i as u32);
        }
        let mut offsets = Vec::with_capacity(nodes * hosts + 1);
        let mut next = Vec::new();
        // dist[dst_host][node]
        let mut dists: Vec<Vec<u32>> = Vec::with_capacity(hosts);
        let mut queue = VecDeque::new();
        for &dst in host_nodes {
            let mut dist = vec![UNREACHED; nodes];
            dist[dst.0 as usize] = 0;
            queue.clear();
            queue.push_back(dst.0);
            while let Some(v) = queue.pop_front() {
                let v = v as usize;
                if v != dst.0 as usize && host_index[v] != NOT_A_HOST {
                    continue; // hosts do not forward
                }
                for &pi in &into[v] {
                    let u = ports[pi as usize].from.0 as usize;
                    if dist[u] == UNREACHED {
                        dist[u] = dist[v] + 1;
                        queue.push_back(u as u32);
                    }
                }
            }
            dists.push(dist);
        }
        let longest = dists
            .iter()
            .flat_map(|d| host_nodes.iter().map(|h| d[h.0 as usize]))
            .filter(|&d| d != UNREACHED)
            .max()
            .unwrap_or(0);
        // Outgoing ports per node, in port order (deterministic).
        let mut out: Vec<Vec<u32>> = vec![Vec::new(); nodes];
        for (i, p) in ports.iter().enumerate() {
            out[p.from.0 as usize].push(i as u32);
        }
        for n in 0..nodes {
            for dist in dists.iter() {
                offsets.push(next.len() as u32);
                let d = dist[n];
                if d == UNREACHED || d == 0 {
                    continue;
                }
                for &pi in &out[n] {
                    let to = ports[pi as usize].to.0 as usize;
                    if dist[to] != UNREACHED && dist[to] + 1 == d {
                        next.push(PortId(pi));
                    }
                }
            }
        }
        offsets.push(next.len() as u32);
        Routes { hosts: hosts as u32, host_index, offsets, next, salt, longest }
    }

    /// The most hops on a path between two hosts (every path a flow takes is a shortest one).
    pub fn longest_host_path(&self) -> u32 {
        self.longest
    }

    /// Host number of `node`, if it is a host.
    #[inline]
    pub fn host_of(&self, node: NodeId) -> Option<u32> {
        let h = self.host_index[node.0 as usize];
        (h != NOT_A_HOST).then_some(h)
    }

    /// Equal-cost next-hop ports from `node` toward node `dst` (a host).
    #[inline]
    pub fn candidates(&self, node: NodeId, dst: NodeId) -> &[PortId] {
        let h = self.host_index[dst.0 as usize];
        if h == NOT_A_HOST {
            return &[];
        }
        let i = node.0 as usize * self.hosts as usize + h as usize;
        &self.next[self.offsets[i] as usize..self.offsets[i + 1] as usize]
    }

    /// The output port a packet of `flow` takes at `node` toward host node `dst`.
    #[inline]
    pub fn next_hop(&self, node: NodeId, dst: NodeId, flow: FlowId) -> Option<PortId> {
        let c = self.candidates(node, dst);
        match c.len() {
            0 => None,
            1 => Some(c[0]),
            n => {
                let h = splitmix64(self.salt ^ ((flow.0 as u64) << 32) ^ node.0 as u64);
                Some(c[((h as u128 * n as u128) >> 64) as usize])
            }
        }
    }

    /// True when `dst` can be reached from `src`.
    pub fn reachable(&self, src: NodeId, dst: NodeId) -> bool {
        src == dst || !self.candidates(src, dst).is_empty()
    }

    /// The ports a packet of `flow` crosses from `src` to `dst`, or None if unreachable.
    pub fn path(&self, src: NodeId, dst: NodeId, flow: FlowId, ports: &[Port]) -> Option<Vec<PortId>> {
        let mut path = Vec::new();
        let mut at = src;
        while at != dst {
            let p = self.next_hop(at, dst, flow)?;
            path.push(p);
            at = ports[p.0 as usize].to;
            if path.len() > ports.len() {
                return None;
            }
        }
        Some(path)
    }
}
