//! `topology = "tree"`: a `core` switch over `racks` top-of-rack switches `tor0`, ..., each
//! with `hosts_per_rack` hosts (`h0`, `h1`, ... in rack order).

use super::{need, LinkParams, Links, NodeKind, Size, Topology, TopologyKind};
use crate::qdisc::{Buffer, KeyError};
use fctlab_engine::quantity::{Duration, Rate};
use serde::Deserialize;

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
pub struct TreeKeys {
    racks: Option<u32>,
    hosts_per_rack: Option<u32>,
    core_link_rate: Option<Rate>,
    core_link_delay: Option<Duration>,
    core_buffer: Option<Buffer>,
}

#[derive(Clone, Debug)]
pub struct Tree {
    pub racks: u32,
    pub hosts_per_rack: u32,
    pub core: LinkParams,
}

impl TopologyKind for Tree {
    const NAME: &'static str = "tree";
    type Keys = TreeKeys;

    fn new(k: TreeKeys, links: &Links) -> Result<Tree, KeyError> {
        Ok(Tree {
            racks: need(Self::NAME, k.racks, "racks", 1)?,
            hosts_per_rack: need(Self::NAME, k.hosts_per_rack, "hosts_per_rack", 1)?,
            core: links.level(k.core_link_rate, k.core_link_delay, k.core_buffer),
        })
    }

    fn size(&self) -> Size {
        let (r, h) = (self.racks as u128, self.hosts_per_rack as u128);
        Size {
            nodes: r * (h + 1) + 1,
            hosts: r * h,
            links: r * (h + 1),
            formula: "racks × (hosts_per_rack + 1) + 1",
            keys: vec![("racks", self.racks), ("hosts_per_rack", self.hosts_per_rack)],
        }
    }

    fn build(&self, links: &Links, t: &mut Topology) -> Result<(), KeyError> {
        let c = t.add("core".into(), NodeKind::Switch);
        for r in 0..self.racks {
            let tor = t.add(format!("tor{r}"), NodeKind::Switch);
            t.link(tor, c, self.core, "core");
            for j in 0..self.hosts_per_rack {
                let h = t.add(format!("h{}", r * self.hosts_per_rack + j), NodeKind::Host);
                t.link(h, tor, links.host, "host");
            }
        }
        Ok(())
    }
}
