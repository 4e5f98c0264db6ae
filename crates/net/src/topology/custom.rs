//! `topology = "custom"`: the `nodes` (named hosts and switches) and `links` a scenario lists.
//! Links that touch a host default to the host-link rate and delay.

use super::{LinkParams, Links, NodeKind, NodeSpec, Size, Topology, TopologyKind};
use crate::qdisc::{Buffer, KeyError};
use fctlab_engine::quantity::{Duration, Rate};
use serde::Deserialize;
use std::collections::HashMap;

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
pub struct CustomKeys {
    nodes: Option<Vec<CustomNode>>,
    links: Option<Vec<CustomLink>>,
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct CustomNode {
    name: String,
    kind: String,
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct CustomLink {
    a: String,
    b: String,
    rate: Option<Rate>,
    delay: Option<Duration>,
    buffer: Option<Buffer>,
}

#[derive(Clone, Debug)]
pub struct Custom {
    pub nodes: Vec<NodeSpec>,
    pub links: Vec<(String, String, LinkParams)>,
}

impl TopologyKind for Custom {
    const NAME: &'static str = "custom";
    type Keys = CustomKeys;

    fn new(k: CustomKeys, links: &Links) -> Result<Custom, KeyError> {
        let nodes_raw = k.nodes.ok_or_else(|| KeyError::new("nodes", "topology \"custom\" needs a `nodes` list"))?;
        let links_raw = k.links.ok_or_else(|| KeyError::new("links", "topology \"custom\" needs a `links` list"))?;
        let mut nodes = Vec::new();
        for (i, n) in nodes_raw.iter().enumerate() {
            let kind = match n.kind.as_str() {
                "host" => NodeKind::Host,
                "switch" => NodeKind::Switch,
                other => {
                    return Err(KeyError::new(
                        &format!("nodes[{i}].kind"),
                        format!("expected \"host\" or \"switch\", got \"{other}\""),
                    ))
                }
            };
            nodes.push(NodeSpec { name: n.name.clone(), kind });
        }
        let is_host = |name: &str| nodes.iter().any(|n| n.name == name && n.kind == NodeKind::Host);
        let links = links_raw
            .iter()
            .map(|l| {
                let mut p = links.level(l.rate, l.delay, l.buffer);
                if is_host(&l.a) || is_host(&l.b) {
                    p.rate = l.rate.map(|r| r.0).unwrap_or(links.host.rate);
                    p.delay = l.delay.map(|d| d.0).unwrap_or(links.host.delay);
                }
                (l.a.clone(), l.b.clone(), p)
            })
            .collect();
        Ok(Custom { nodes, links })
    }

    fn size(&self) -> Size {
        let hosts = self.nodes.iter().filter(|x| x.kind == NodeKind::Host).count() as u128;
        Size {
            nodes: self.nodes.len() as u128,
            hosts,
            links: self.links.len() as u128,
            formula: "its nodes",
            keys: vec![("nodes", 0)],
        }
    }

    fn build(&self, _links: &Links, t: &mut Topology) -> Result<(), KeyError> {
        let mut index: HashMap<&str, usize> = HashMap::new();
        for n in &self.nodes {
            if index.insert(n.name.as_str(), t.nodes.len()).is_some() {
                return Err(KeyError::new("", format!("node name \"{}\" is used twice", n.name)));
            }
            t.nodes.push(n.clone());
        }
        for (i, (a, b, params)) in self.links.iter().enumerate() {
            let at = format!("links[{i}]");
            let ia = *index.get(a.as_str()).ok_or_else(|| KeyError::new(&at, format!("unknown node \"{a}\"")))?;
            let ib = *index.get(b.as_str()).ok_or_else(|| KeyError::new(&at, format!("unknown node \"{b}\"")))?;
            if ia == ib {
                return Err(KeyError::new(&at, format!("a link from \"{a}\" to itself")));
            }
            t.link(ia, ib, *params, "custom");
        }
        Ok(())
    }

    fn check_built(&self, t: &Topology) -> Result<(), KeyError> {
        for (i, n) in t.nodes.iter().enumerate() {
            if !t.links.iter().any(|l| l.a == i || l.b == i) {
                return Err(KeyError::new("links", format!("node \"{}\" has no link", n.name)));
            }
        }
        Ok(())
    }
}
