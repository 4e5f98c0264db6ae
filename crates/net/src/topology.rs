//! Topology builders: star, dumbbell, chain, tree, fat-tree, leaf-spine and custom.
//!
//! A builder returns a [`Topology`]: named nodes and bidirectional links with their rate,
//! propagation delay and buffer. Names follow one scheme per topology (documented in
//! `docs/scenarios.md`) so scenario files can refer to hosts.

use crate::qdisc::BufferLimit;
use fctlab_engine::{BitsPerSec, Nanos};
use std::collections::HashMap;

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum NodeKind {
    Host,
    Switch,
}

#[derive(Clone, Debug)]
pub struct NodeSpec {
    pub name: String,
    pub kind: NodeKind,
}

/// Rate, delay and buffer of a link (both directions).
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct LinkParams {
    pub rate: BitsPerSec,
    pub delay: Nanos,
    pub buffer: BufferLimit,
}

/// A bidirectional link between nodes `a` and `b` (indices into `Topology::nodes`).
#[derive(Clone, Debug)]
pub struct LinkSpec {
    pub a: usize,
    pub b: usize,
    pub params: LinkParams,
    /// Where the link sits ("host", "bottleneck", "core", "fabric", "chain", "custom").
    pub level: &'static str,
}

#[derive(Clone, Debug, Default)]
pub struct Topology {
    pub kind: String,
    pub nodes: Vec<NodeSpec>,
    pub links: Vec<LinkSpec>,
}

/// Parameters of every topology kind.
#[derive(Clone, Debug)]
pub enum TopologyKind {
    Star { hosts: u32 },
    Dumbbell { senders: u32, receivers: u32, bottleneck: LinkParams },
    Chain { switches: u32, hosts_per_switch: u32, fabric: LinkParams },
    Tree { racks: u32, hosts_per_rack: u32, core: LinkParams },
    FatTree { k: u32, fabric: LinkParams },
    LeafSpine { leaves: u32, spines: u32, hosts_per_leaf: u32, fabric: LinkParams },
    Custom { nodes: Vec<NodeSpec>, links: Vec<(String, String, LinkParams)> },
}

impl Topology {
    fn add(&mut self, name: String, kind: NodeKind) -> usize {
        self.nodes.push(NodeSpec { name, kind });
        self.nodes.len() - 1
    }
    fn link(&mut self, a: usize, b: usize, params: LinkParams, level: &'static str) {
        self.links.push(LinkSpec { a, b, params, level });
    }

    pub fn hosts(&self) -> impl Iterator<Item = (usize, &NodeSpec)> {
        self.nodes.iter().enumerate().filter(|(_, n)| n.kind == NodeKind::Host)
    }

    /// Builds a topology; `host` is the rate/delay/buffer of host (access) links.
    pub fn build(kind: &TopologyKind, host: LinkParams) -> Result<Topology, String> {
        let mut t = Topology::default();
        match kind {
            TopologyKind::Star { hosts } => {
                t.kind = "star".into();
                let sw = t.add("sw0".into(), NodeKind::Switch);
                for i in 0..*hosts {
                    let h = t.add(format!("h{i}"), NodeKind::Host);
                    t.link(h, sw, host, "host");
                }
            }
            TopologyKind::Dumbbell { senders, receivers, bottleneck } => {
                t.kind = "dumbbell".into();
                let l = t.add("left".into(), NodeKind::Switch);
                let r = t.add("right".into(), NodeKind::Switch);
                for i in 0..*senders {
                    let h = t.add(format!("s{i}"), NodeKind::Host);
                    t.link(h, l, host, "host");
                }
                for i in 0..*receivers {
                    let h = t.add(format!("r{i}"), NodeKind::Host);
                    t.link(r, h, host, "host");
                }
                t.link(l, r, *bottleneck, "bottleneck");
            }
            TopologyKind::Chain { switches, hosts_per_switch, fabric } => {
                t.kind = "chain".into();
                let sws: Vec<usize> = (0..*switches).map(|i| t.add(format!("sw{i}"), NodeKind::Switch)).collect();
                for (i, &sw) in sws.iter().enumerate() {
                    for j in 0..*hosts_per_switch {
                        let h = t.add(format!("h{}", i as u32 * hosts_per_switch + j), NodeKind::Host);
                        t.link(h, sw, host, "host");
                    }
                }
                for w in sws.windows(2) {
                    t.link(w[0], w[1], *fabric, "chain");
                }
            }
            TopologyKind::Tree { racks, hosts_per_rack, core } => {
                t.kind = "tree".into();
                let c = t.add("core".into(), NodeKind::Switch);
                for r in 0..*racks {
                    let tor = t.add(format!("tor{r}"), NodeKind::Switch);
                    t.link(tor, c, *core, "core");
                    for j in 0..*hosts_per_rack {
                        let h = t.add(format!("h{}", r * hosts_per_rack + j), NodeKind::Host);
                        t.link(h, tor, host, "host");
                    }
                }
            }
            TopologyKind::FatTree { k, fabric } => {
                t.kind = "fattree".into();
                let k = *k;
                if k < 2 || k % 2 != 0 {
                    return Err(format!("fat-tree needs an even k of at least 2, got {k}"));
                }
                let half = k / 2;
                let cores: Vec<usize> = (0..half * half).map(|i| t.add(format!("core{i}"), NodeKind::Switch)).collect();
                let mut hid = 0;
                for p in 0..k {
                    let aggs: Vec<usize> = (0..half).map(|j| t.add(format!("agg{p}_{j}"), NodeKind::Switch)).collect();
                    for (j, &a) in aggs.iter().enumerate() {
                        for m in 0..half as usize {
                            t.link(a, cores[j * half as usize + m], *fabric, "fabric");
                        }
                    }
                    for i in 0..half {
                        let e = t.add(format!("edge{p}_{i}"), NodeKind::Switch);
                        for &a in &aggs {
                            t.link(e, a, *fabric, "fabric");
                        }
                        for _ in 0..half {
                            let h = t.add(format!("h{hid}"), NodeKind::Host);
                            hid += 1;
                            t.link(h, e, host, "host");
                        }
                    }
                }
            }
            TopologyKind::LeafSpine { leaves, spines, hosts_per_leaf, fabric } => {
                t.kind = "leafspine".into();
                let sp: Vec<usize> = (0..*spines).map(|i| t.add(format!("spine{i}"), NodeKind::Switch)).collect();
                for l in 0..*leaves {
                    let leaf = t.add(format!("leaf{l}"), NodeKind::Switch);
                    for &s in &sp {
                        t.link(leaf, s, *fabric, "fabric");
                    }
                    for j in 0..*hosts_per_leaf {
                        let h = t.add(format!("h{}", l * hosts_per_leaf + j), NodeKind::Host);
                        t.link(h, leaf, host, "host");
                    }
                }
            }
            TopologyKind::Custom { nodes, links } => {
                t.kind = "custom".into();
                let mut index: HashMap<&str, usize> = HashMap::new();
                for n in nodes {
                    if index.insert(n.name.as_str(), t.nodes.len()).is_some() {
                        return Err(format!("node name \"{}\" is used twice", n.name));
                    }
                    t.nodes.push(n.clone());
                }
                for (i, (a, b, params)) in links.iter().enumerate() {
                    let ia = *index.get(a.as_str()).ok_or_else(|| format!("links[{i}]: unknown node \"{a}\""))?;
                    let ib = *index.get(b.as_str()).ok_or_else(|| format!("links[{i}]: unknown node \"{b}\""))?;
                    if ia == ib {
                        return Err(format!("links[{i}]: a link from \"{a}\" to itself"));
                    }
                    t.link(ia, ib, *params, "custom");
                }
            }
        }
        if t.hosts().count() == 0 {
            return Err("the topology has no hosts".into());
        }
        Ok(t)
    }

    /// Index of the node called `name`.
    pub fn find(&self, name: &str) -> Option<usize> {
        self.nodes.iter().position(|n| n.name == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lp() -> LinkParams {
        LinkParams { rate: BitsPerSec(1_000_000_000), delay: Nanos::from_micros(1), buffer: BufferLimit::Packets(100) }
    }

    #[test]
    fn fattree_sizes() {
        let t = Topology::build(&TopologyKind::FatTree { k: 4, fabric: lp() }, lp()).unwrap();
        assert_eq!(t.hosts().count(), 16);
        assert_eq!(t.nodes.len() - 16, 20); // 4 core + 8 agg + 8 edge
        assert_eq!(t.links.len(), 16 + 16 + 16);
    }

    #[test]
    fn dumbbell_names() {
        let t = Topology::build(&TopologyKind::Dumbbell { senders: 2, receivers: 3, bottleneck: lp() }, lp()).unwrap();
        assert!(t.find("s1").is_some() && t.find("r2").is_some() && t.find("left").is_some());
        assert_eq!(t.links.len(), 6);
    }

    #[test]
    fn custom_rejects_unknown_node() {
        let nodes = vec![NodeSpec { name: "a".into(), kind: NodeKind::Host }];
        let e = Topology::build(&TopologyKind::Custom { nodes, links: vec![("a".into(), "b".into(), lp())] }, lp())
            .unwrap_err();
        assert!(e.contains("unknown node \"b\""), "{e}");
    }
}
