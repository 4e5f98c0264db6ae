//! `topology = "ring"`: `switches` switches `sw0`, `sw1`, ... in a ring (each linked to the
//! next, the last to the first), each with `hosts_per_switch` hosts (`h0`, `h1`, ... in switch
//! order). The worked example of a topology in one file (docs/architecture.md, "A topology"):
//! built only with the `example-topologies` feature and run from a scenario by
//! `crates/sim/tests/examples.rs`.

use super::{need, switches_with_hosts, LinkParams, Links, Size, Topology, TopologyKind};
use crate::qdisc::{Buffer, KeyError};
use fctlab_engine::quantity::{Duration, Rate};
use serde::Deserialize;

/// Its keys of `[network]`, besides those every topology takes (`link_rate`, `queue`, ...).
#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
pub struct RingKeys {
    switches: Option<u32>,
    hosts_per_switch: Option<u32>,
    fabric_link_rate: Option<Rate>,
    fabric_link_delay: Option<Duration>,
    fabric_buffer: Option<Buffer>,
}

/// Its keys checked, with the parameters of its switch-to-switch links.
#[derive(Clone, Debug)]
pub struct Ring {
    pub switches: u32,
    pub hosts_per_switch: u32,
    pub fabric: LinkParams,
}

impl TopologyKind for Ring {
    const NAME: &'static str = "ring";
    type Keys = RingKeys;

    fn new(k: RingKeys, links: &Links) -> Result<Ring, KeyError> {
        Ok(Ring {
            // Fewer than 3 switches make no ring (2 would be linked twice).
            switches: need(Self::NAME, k.switches, "switches", 3)?,
            hosts_per_switch: need(Self::NAME, Some(k.hosts_per_switch.unwrap_or(1)), "hosts_per_switch", 1)?,
            fabric: links.level(k.fabric_link_rate, k.fabric_link_delay, k.fabric_buffer),
        })
    }

    fn size(&self) -> Size {
        Size::switches_with_hosts(self.switches, self.hosts_per_switch)
    }

    fn build(&self, links: &Links, t: &mut Topology) -> Result<(), KeyError> {
        let sws = switches_with_hosts(t, self.switches, self.hosts_per_switch, links);
        for (i, &sw) in sws.iter().enumerate() {
            t.link(sw, sws[(i + 1) % sws.len()], self.fabric, "fabric");
        }
        Ok(())
    }
}
