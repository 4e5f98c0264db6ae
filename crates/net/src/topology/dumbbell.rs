//! `topology = "dumbbell"`: senders `s0`, `s1`, ... on switch `left`, receivers `r0`, ... on
//! switch `right`, and one bottleneck link `left`-`right`.

use super::{need, LinkParams, Links, NodeKind, Size, Topology, TopologyKind};
use crate::qdisc::{Buffer, KeyError};
use fctlab_engine::quantity::{Duration, Rate};
use serde::Deserialize;

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
pub struct DumbbellKeys {
    senders: Option<u32>,
    receivers: Option<u32>,
    bottleneck_rate: Option<Rate>,
    bottleneck_delay: Option<Duration>,
    bottleneck_buffer: Option<Buffer>,
}

#[derive(Clone, Debug)]
pub struct Dumbbell {
    pub senders: u32,
    pub receivers: u32,
    pub bottleneck: LinkParams,
}

impl TopologyKind for Dumbbell {
    const NAME: &'static str = "dumbbell";
    type Keys = DumbbellKeys;

    fn new(k: DumbbellKeys, links: &Links) -> Result<Dumbbell, KeyError> {
        Ok(Dumbbell {
            senders: need(Self::NAME, k.senders, "senders", 1)?,
            receivers: need(Self::NAME, k.receivers, "receivers", 1)?,
            bottleneck: links.level(k.bottleneck_rate, k.bottleneck_delay, k.bottleneck_buffer),
        })
    }

    fn size(&self) -> Size {
        let h = self.senders as u128 + self.receivers as u128;
        Size {
            nodes: h + 2,
            hosts: h,
            links: h + 1,
            formula: "senders + receivers + 2",
            keys: vec![("senders", self.senders), ("receivers", self.receivers)],
        }
    }

    fn build(&self, links: &Links, t: &mut Topology) -> Result<(), KeyError> {
        let l = t.add("left".into(), NodeKind::Switch);
        let r = t.add("right".into(), NodeKind::Switch);
        for i in 0..self.senders {
            let h = t.add(format!("s{i}"), NodeKind::Host);
            t.link(h, l, links.host, "host");
        }
        for i in 0..self.receivers {
            let h = t.add(format!("r{i}"), NodeKind::Host);
            t.link(r, h, links.host, "host");
        }
        t.link(l, r, self.bottleneck, "bottleneck");
        Ok(())
    }
}
