//! `topology = "fattree"`: a k-ary fat-tree: (k/2)² core switches `core0`, ..., k pods of k/2
//! aggregation switches `agg<pod>_<j>` and k/2 edge switches `edge<pod>_<i>`, k/2 hosts on each
//! edge switch (`h0`, `h1`, ... in pod and edge order).

use super::{need, LinkParams, Links, NodeKind, Size, Topology, TopologyKind};
use crate::qdisc::{Buffer, KeyError};
use fctlab_engine::quantity::{Duration, Rate};
use serde::Deserialize;

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
pub struct FatTreeKeys {
    k: Option<u32>,
    fabric_link_rate: Option<Rate>,
    fabric_link_delay: Option<Duration>,
    fabric_buffer: Option<Buffer>,
}

#[derive(Clone, Debug)]
pub struct FatTree {
    pub k: u32,
    pub fabric: LinkParams,
}

impl TopologyKind for FatTree {
    const NAME: &'static str = "fattree";
    type Keys = FatTreeKeys;

    fn new(keys: FatTreeKeys, links: &Links) -> Result<FatTree, KeyError> {
        let k = need(Self::NAME, keys.k, "k", 2)?;
        if k % 2 != 0 || k > 64 {
            return Err(KeyError::new("k", format!("a fat-tree needs an even k between 2 and 64, got {k}")));
        }
        Ok(FatTree { k, fabric: links.level(keys.fabric_link_rate, keys.fabric_link_delay, keys.fabric_buffer) })
    }

    fn size(&self) -> Size {
        let k = self.k as u128;
        Size {
            nodes: k * k * k / 4 + 5 * k * k / 4,
            hosts: k * k * k / 4,
            links: 3 * k * k * k / 4,
            formula: "k³/4 + 5k²/4",
            keys: vec![("k", self.k)],
        }
    }

    fn build(&self, links: &Links, t: &mut Topology) -> Result<(), KeyError> {
        let k = self.k;
        if k < 2 || k % 2 != 0 {
            return Err(KeyError::new("", format!("fat-tree needs an even k of at least 2, got {k}")));
        }
        let half = k / 2;
        let cores: Vec<usize> = (0..half * half).map(|i| t.add(format!("core{i}"), NodeKind::Switch)).collect();
        let mut hid = 0;
        for p in 0..k {
            let aggs: Vec<usize> = (0..half).map(|j| t.add(format!("agg{p}_{j}"), NodeKind::Switch)).collect();
            for (j, &a) in aggs.iter().enumerate() {
                for m in 0..half as usize {
                    t.link(a, cores[j * half as usize + m], self.fabric, "fabric");
                }
            }
            for i in 0..half {
                let e = t.add(format!("edge{p}_{i}"), NodeKind::Switch);
                for &a in &aggs {
                    t.link(e, a, self.fabric, "fabric");
                }
                for _ in 0..half {
                    let h = t.add(format!("h{hid}"), NodeKind::Host);
                    hid += 1;
                    t.link(h, e, links.host, "host");
                }
            }
        }
        Ok(())
    }
}
