//! `topology = "leafspine"`: `spines` spine switches `spine0`, ... each linked to every one of
//! `leaves` leaf switches `leaf0`, ..., each with `hosts_per_leaf` hosts (`h0`, `h1`, ... in
//! leaf order).

use super::{need, LinkParams, Links, NodeKind, Size, Topology, TopologyKind};
use crate::qdisc::{Buffer, KeyError};
use fctlab_engine::quantity::{Duration, Rate};
use serde::Deserialize;

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
pub struct LeafSpineKeys {
    leaves: Option<u32>,
    spines: Option<u32>,
    hosts_per_leaf: Option<u32>,
    fabric_link_rate: Option<Rate>,
    fabric_link_delay: Option<Duration>,
    fabric_buffer: Option<Buffer>,
}

#[derive(Clone, Debug)]
pub struct LeafSpine {
    pub leaves: u32,
    pub spines: u32,
    pub hosts_per_leaf: u32,
    pub fabric: LinkParams,
}

impl TopologyKind for LeafSpine {
    const NAME: &'static str = "leafspine";
    type Keys = LeafSpineKeys;

    fn new(k: LeafSpineKeys, links: &Links) -> Result<LeafSpine, KeyError> {
        Ok(LeafSpine {
            leaves: need(Self::NAME, k.leaves, "leaves", 1)?,
            spines: need(Self::NAME, k.spines, "spines", 1)?,
            hosts_per_leaf: need(Self::NAME, k.hosts_per_leaf, "hosts_per_leaf", 1)?,
            fabric: links.level(k.fabric_link_rate, k.fabric_link_delay, k.fabric_buffer),
        })
    }

    fn size(&self) -> Size {
        let (l, s, h) = (self.leaves as u128, self.spines as u128, self.hosts_per_leaf as u128);
        Size {
            nodes: l * (h + 1) + s,
            hosts: l * h,
            links: l * (h + s),
            formula: "leaves × (hosts_per_leaf + 1) + spines",
            keys: vec![("leaves", self.leaves), ("spines", self.spines), ("hosts_per_leaf", self.hosts_per_leaf)],
        }
    }

    fn build(&self, links: &Links, t: &mut Topology) -> Result<(), KeyError> {
        let sp: Vec<usize> = (0..self.spines).map(|i| t.add(format!("spine{i}"), NodeKind::Switch)).collect();
        for l in 0..self.leaves {
            let leaf = t.add(format!("leaf{l}"), NodeKind::Switch);
            for &s in &sp {
                t.link(leaf, s, self.fabric, "fabric");
            }
            for j in 0..self.hosts_per_leaf {
                let h = t.add(format!("h{}", l * self.hosts_per_leaf + j), NodeKind::Host);
                t.link(h, leaf, links.host, "host");
            }
        }
        Ok(())
    }
}
