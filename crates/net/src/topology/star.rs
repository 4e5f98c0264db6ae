//! `topology = "star"`: `hosts` hosts `h0`, `h1`, ... on one switch `sw0`.

use super::{need, Links, NodeKind, Size, Topology, TopologyKind};
use crate::qdisc::KeyError;
use serde::Deserialize;

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
pub struct StarKeys {
    hosts: Option<u32>,
}

#[derive(Clone, Debug)]
pub struct Star {
    pub hosts: u32,
}

impl TopologyKind for Star {
    const NAME: &'static str = "star";
    type Keys = StarKeys;

    fn new(keys: StarKeys, _links: &Links) -> Result<Star, KeyError> {
        Ok(Star { hosts: need(Self::NAME, keys.hosts, "hosts", 2)? })
    }

    fn size(&self) -> Size {
        let h = self.hosts as u128;
        Size { nodes: h + 1, hosts: h, links: h, formula: "hosts + 1", keys: vec![("hosts", self.hosts)] }
    }

    fn build(&self, links: &Links, t: &mut Topology) -> Result<(), KeyError> {
        let sw = t.add("sw0".into(), NodeKind::Switch);
        for i in 0..self.hosts {
            let h = t.add(format!("h{i}"), NodeKind::Host);
            t.link(h, sw, links.host, "host");
        }
        Ok(())
    }
}
