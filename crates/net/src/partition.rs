//! Partitions of a network for a conservative parallel engine: which part owns each node (its
//! hosts, its ports, the events at them), which links the cut crosses, and the lookahead the
//! cut allows (no packet sent across it can arrive sooner).
//!
//! The rule works on any topology, without knowing its kind:
//! - a *rack* is a switch with hosts on it; a rack and its hosts stay together;
//! - racks are dealt to the parts in the order the topology built them (a fat-tree builds pod
//!   by pod, a leaf-spine leaf by leaf), in runs of about equal weight (a node's weight is its
//!   number of ports, the work its packets bring scales with them): a part holds whole pods
//!   or whole runs of leaves when the numbers allow;
//! - every other switch, nearest the racks first, joins the part most of its already placed
//!   neighbours are in, the lightest such part on a tie (a fat-tree's aggregation switches
//!   join their pod, its core switches spread evenly);
//! - a host with no switch beside it is a rack of its own.

use crate::topology::{NodeKind, Topology};
use fctlab_engine::Nanos;
use std::collections::VecDeque;

/// The smallest packet the simulator sends (a header-only ACK: 40 bytes of TCP/IP headers);
/// with a link's propagation delay, its serialization time bounds how soon a packet sent
/// across a cut can arrive.
pub const MIN_PACKET_BYTES: u64 = 40;

/// A network split into parts.
#[derive(Clone, Debug, PartialEq)]
pub struct Partition {
    /// Number of parts.
    pub parts: usize,
    /// The part of each node (`Topology::nodes`' order).
    pub of_node: Vec<u16>,
    /// Links whose ends are in different parts (`Topology::links`' indices).
    pub cut_links: Vec<usize>,
    /// The least time from a packet's start on a cut link to its arrival: the link's delay
    /// plus the smallest packet's serialization, over the cut links (`None` with one part).
    pub lookahead: Option<Nanos>,
    /// Ports (one per link end) each part owns: the balance of the work.
    pub ports: Vec<usize>,
}

impl Partition {
    /// `topo` in `parts` parts (at least 1, at most the number of nodes, at most 65,536).
    pub fn of(topo: &Topology, parts: usize) -> Result<Partition, String> {
        let n = topo.nodes.len();
        if parts == 0 || parts > n || parts > u16::MAX as usize + 1 {
            return Err(format!("cannot split {n} nodes into {parts} parts (1 to {} parts)", n.min(1 << 16)));
        }
        let mut adj = vec![Vec::new(); n];
        for l in &topo.links {
            adj[l.a].push(l.b);
            adj[l.b].push(l.a);
        }
        let is_host = |i: usize| topo.nodes[i].kind == NodeKind::Host;
        // racks: switches with hosts, and hosts with no switch beside them
        let racks: Vec<usize> =
            (0..n)
                .filter(|&i| {
                    if is_host(i) {
                        adj[i].iter().all(|&j| is_host(j))
                    } else {
                        adj[i].iter().any(|&j| is_host(j))
                    }
                })
                .collect();
        let weight = |i: usize| -> usize {
            adj[i].len() + if is_host(i) { 0 } else { adj[i].iter().filter(|&&j| is_host(j)).count() }
        };
        let total: usize = racks.iter().map(|&r| weight(r)).sum();
        const NONE: u16 = u16::MAX;
        let mut of = vec![NONE; n];
        let mut load = vec![0usize; parts];
        let mut acc = 0;
        for &r in &racks {
            // the part whose share of the racks' weight this rack's middle falls in
            let w = weight(r);
            let p = (((acc * 2 + w) * parts) / (2 * total.max(1))).min(parts - 1);
            acc += w;
            of[r] = p as u16;
            load[p] += w;
            for &h in &adj[r] {
                if is_host(h) && of[h] == NONE {
                    of[h] = p as u16;
                }
            }
        }
        // the other nodes, nearest the placed ones first
        let mut dist = vec![usize::MAX; n];
        let mut queue: VecDeque<usize> = (0..n).filter(|&i| of[i] != NONE).collect();
        for &i in &queue {
            dist[i] = 0;
        }
        let mut order = Vec::new();
        while let Some(i) = queue.pop_front() {
            for &j in &adj[i] {
                if dist[j] == usize::MAX {
                    dist[j] = dist[i] + 1;
                    order.push(j);
                    queue.push_back(j);
                }
            }
        }
        order.extend((0..n).filter(|&i| dist[i] == usize::MAX && of[i] == NONE)); // unreachable
        for i in order {
            let mut votes = vec![0usize; parts];
            for &j in &adj[i] {
                if of[j] != NONE {
                    votes[of[j] as usize] += 1;
                }
            }
            let most = *votes.iter().max().expect("at least one part");
            let p = (0..parts).filter(|&p| votes[p] == most).min_by_key(|&p| (load[p], p)).expect("a part");
            of[i] = p as u16;
            load[p] += adj[i].len();
        }
        let mut ports = vec![0usize; parts];
        let mut cut_links = Vec::new();
        let mut lookahead: Option<Nanos> = None;
        for (k, l) in topo.links.iter().enumerate() {
            ports[of[l.a] as usize] += 1;
            ports[of[l.b] as usize] += 1;
            if of[l.a] != of[l.b] {
                cut_links.push(k);
                let ahead = l.params.delay + l.params.rate.tx_time(MIN_PACKET_BYTES);
                lookahead = Some(lookahead.map_or(ahead, |a| a.min(ahead)));
            }
        }
        Ok(Partition { parts, of_node: of, cut_links, lookahead, ports })
    }
}
