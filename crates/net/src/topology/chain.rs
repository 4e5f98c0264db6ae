//! `topology = "chain"`: switches `sw0`, `sw1`, ... in a line, each with `hosts_per_switch`
//! hosts (`h0`, `h1`, ... in switch order).

use super::{need, switches_with_hosts, LinkParams, Links, Size, Topology, TopologyKind};
use crate::qdisc::{Buffer, KeyError};
use fctlab_engine::quantity::{Duration, Rate};
use serde::Deserialize;

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
pub struct ChainKeys {
    switches: Option<u32>,
    hosts_per_switch: Option<u32>,
    fabric_link_rate: Option<Rate>,
    fabric_link_delay: Option<Duration>,
    fabric_buffer: Option<Buffer>,
}

#[derive(Clone, Debug)]
pub struct Chain {
    pub switches: u32,
    pub hosts_per_switch: u32,
    pub fabric: LinkParams,
}

impl TopologyKind for Chain {
    const NAME: &'static str = "chain";
    type Keys = ChainKeys;

    fn new(k: ChainKeys, links: &Links) -> Result<Chain, KeyError> {
        Ok(Chain {
            switches: need(Self::NAME, k.switches, "switches", 1)?,
            hosts_per_switch: match k.hosts_per_switch {
                None => 1,
                Some(_) => need(Self::NAME, k.hosts_per_switch, "hosts_per_switch", 1)?,
            },
            fabric: links.level(k.fabric_link_rate, k.fabric_link_delay, k.fabric_buffer),
        })
    }

    fn size(&self) -> Size {
        Size::switches_with_hosts(self.switches, self.hosts_per_switch)
    }

    fn build(&self, links: &Links, t: &mut Topology) -> Result<(), KeyError> {
        let sws = switches_with_hosts(t, self.switches, self.hosts_per_switch, links);
        for w in sws.windows(2) {
            t.link(w[0], w[1], self.fabric, "chain");
        }
        Ok(())
    }
}
