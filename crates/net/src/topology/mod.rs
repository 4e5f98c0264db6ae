//! Topologies: one file per kind, one registration line in the [`topologies!`] list at the
//! bottom of this file.
//!
//! A kind ([`TopologyKind`]) holds, in its own file, the struct of its `[network]` keys (serde,
//! `deny_unknown_fields`: its fields are the keys it takes), its checks of them, the sizes it
//! builds (nodes, hosts and links, known before anything is built, so that the scenario reader
//! can refuse a size beyond what one run holds), and its builder: named nodes and bidirectional
//! links with their rate, propagation delay and buffer. Names follow one scheme per kind
//! (documented in `docs/scenarios.md`) so scenario files can refer to hosts.
//!
//! The scenario reader (`crates/scenario/src/network.rs`) knows no kind by name: it reads the
//! keys every topology takes (link defaults, queue discipline), hands the kind's own keys to
//! [`Registration::configure`] and builds the result. `ring.rs` (built with the
//! `example-topologies` feature) is the worked example of `docs/architecture.md`.

use crate::qdisc::BufferLimit;
use crate::qdisc::{keys_as, Buffer, KeyError};
use fctlab_engine::quantity::{fields_of, Duration, Rate};
use fctlab_engine::{BitsPerSec, Nanos};
use serde::de::DeserializeOwned;
use std::fmt;

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

impl Topology {
    /// Adds a node; its index.
    pub fn add(&mut self, name: String, kind: NodeKind) -> usize {
        self.nodes.push(NodeSpec { name, kind });
        self.nodes.len() - 1
    }
    /// Adds a link between nodes `a` and `b` at `level` (a name results report).
    pub fn link(&mut self, a: usize, b: usize, params: LinkParams, level: &'static str) {
        self.links.push(LinkSpec { a, b, params, level });
    }

    pub fn hosts(&self) -> impl Iterator<Item = (usize, &NodeSpec)> {
        self.nodes.iter().enumerate().filter(|(_, n)| n.kind == NodeKind::Host)
    }

    /// Index of the node called `name`.
    pub fn find(&self, name: &str) -> Option<usize> {
        self.nodes.iter().position(|n| n.name == name)
    }
}

/// The link parameters a kind's links start from, as `[network]`'s keys every topology takes
/// give them: those of host (access) links, and the defaults of the others.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Links {
    pub host: LinkParams,
    pub default: LinkParams,
}

impl Links {
    /// The parameters of one level of links: each given key, else the default.
    pub fn level(&self, rate: Option<Rate>, delay: Option<Duration>, buffer: Option<Buffer>) -> LinkParams {
        LinkParams {
            rate: rate.map(|r| r.0).unwrap_or(self.default.rate),
            delay: delay.map(|d| d.0).unwrap_or(self.default.delay),
            buffer: buffer.map(|b| b.0).unwrap_or(self.default.buffer),
        }
    }
}

/// What a topology builds, counted from its keys before it is built.
#[derive(Clone, Debug, PartialEq)]
pub struct Size {
    pub nodes: u128,
    pub hosts: u128,
    pub links: u128,
    /// How `nodes` follows from the keys ("hosts + 1"), for the error that refuses too many.
    pub formula: &'static str,
    /// The keys that size it, with their values: that error names the largest.
    pub keys: Vec<(&'static str, u32)>,
}

impl Size {
    /// The size of `switches` switches with `per_switch` hosts each (`chain`, `ring`).
    pub fn switches_with_hosts(switches: u32, per_switch: u32) -> Size {
        let (s, h) = (switches as u128, per_switch as u128);
        Size {
            nodes: s * (h + 1),
            hosts: s * h,
            links: s * (h + 1),
            formula: "switches × (hosts_per_switch + 1)",
            keys: vec![("switches", switches), ("hosts_per_switch", per_switch)],
        }
    }
}

/// Adds `switches` switches `sw0`, `sw1`, ..., each with `per_switch` hosts (`h0`, `h1`, ... in
/// switch order) on host links; returns the switches' nodes (`chain`, `ring`).
pub fn switches_with_hosts(t: &mut Topology, switches: u32, per_switch: u32, links: &Links) -> Vec<usize> {
    let sws: Vec<usize> = (0..switches).map(|i| t.add(format!("sw{i}"), NodeKind::Switch)).collect();
    for (i, &sw) in sws.iter().enumerate() {
        for j in 0..per_switch {
            let h = t.add(format!("h{}", i as u32 * per_switch + j), NodeKind::Host);
            t.link(h, sw, links.host, "host");
        }
    }
    sws
}

/// A size key's value, required (`topology = "name"` needs it) and at least `min`.
pub fn need(name: &str, v: Option<u32>, key: &str, min: u32) -> Result<u32, KeyError> {
    let v = v.ok_or_else(|| KeyError::new(key, format!("topology \"{name}\" needs `{key}`")))?;
    if v < min {
        return Err(KeyError::new(key, format!("must be at least {min}, got {v}")));
    }
    Ok(v)
}

/// A topology kind: its scenario name and keys, its checks, its size and its builder.
pub trait TopologyKind: Clone + fmt::Debug + Sized {
    /// `topology = "..."` in `[network]`.
    const NAME: &'static str;
    /// Its own keys of `[network]`: a serde struct with `deny_unknown_fields`.
    type Keys: DeserializeOwned;
    /// Checks its keys and resolves the parameters of its links from `links`.
    fn new(keys: Self::Keys, links: &Links) -> Result<Self, KeyError>;
    /// The nodes, hosts and links it builds.
    fn size(&self) -> Size;
    /// Adds its nodes and links to `t` (empty); an error names the key at fault ("" for none).
    fn build(&self, links: &Links, t: &mut Topology) -> Result<(), KeyError>;
    /// A check of the built topology (which has hosts), beyond those of `new` and `build`.
    fn check_built(&self, _t: &Topology) -> Result<(), KeyError> {
        Ok(())
    }
}

/// One registry entry.
pub struct Registration {
    pub name: &'static str,
    keys: fn() -> &'static [&'static str],
    configure: fn(toml::Table, &Links) -> Result<TopologyConfig, KeyError>,
}

impl Registration {
    /// The keys of `[network]` the kind takes (besides those every topology takes).
    pub fn keys(&self) -> &'static [&'static str] {
        (self.keys)()
    }
    /// The kind's configuration from its keys of `[network]` (only those are in `keys`).
    pub fn configure(&self, keys: toml::Table, links: &Links) -> Result<TopologyConfig, KeyError> {
        (self.configure)(keys, links)
    }
}

fn configure<T: TopologyKind>(keys: toml::Table, links: &Links) -> Result<T, KeyError> {
    T::new(keys_as::<T::Keys>(keys)?, links)
}

/// The registry entry of topology `name`.
pub fn lookup(name: &str) -> Option<&'static Registration> {
    REGISTRY.iter().find(|r| r.name == name)
}

/// The kind other than `except` that takes `key` (the first in list order).
pub fn kind_taking(key: &str, except: &str) -> Option<&'static str> {
    REGISTRY.iter().find(|r| r.name != except && r.keys().contains(&key)).map(|r| r.name)
}

/// Declares every topology kind: `module::Type` per line (`#[cfg(...)]` attributes allowed).
/// Generates the module declarations, [`TopologyConfig`] and [`REGISTRY`].
macro_rules! topologies {
    ($($(#[$attr:meta])* $module:ident :: $ty:ident),* $(,)?) => {
        $($(#[$attr])* pub mod $module;)*
        $($(#[$attr])* pub use $module::$ty;)*

        /// A checked topology of one kind, ready to build.
        #[derive(Clone, Debug)]
        pub enum TopologyConfig {
            $($(#[$attr])* $ty($ty),)*
        }

        impl TopologyConfig {
            /// The kind's name in scenario files.
            pub fn name(&self) -> &'static str {
                match self {
                    $($(#[$attr])* TopologyConfig::$ty(_) => <$ty as TopologyKind>::NAME,)*
                }
            }
            /// The nodes, hosts and links it builds.
            pub fn size(&self) -> Size {
                match self {
                    $($(#[$attr])* TopologyConfig::$ty(k) => k.size(),)*
                }
            }
            /// Builds it; `links` gives host links their parameters.
            pub fn build(&self, links: &Links) -> Result<Topology, KeyError> {
                let mut t = Topology { kind: self.name().to_string(), ..Topology::default() };
                match self {
                    $($(#[$attr])* TopologyConfig::$ty(k) => k.build(links, &mut t)?,)*
                }
                if t.hosts().count() == 0 {
                    return Err(KeyError::new("", "the topology has no hosts"));
                }
                match self {
                    $($(#[$attr])* TopologyConfig::$ty(k) => k.check_built(&t)?,)*
                }
                Ok(t)
            }
        }

        /// Every topology kind, by scenario name.
        pub static REGISTRY: &[Registration] = &[
            $($(#[$attr])* Registration {
                name: <$ty as TopologyKind>::NAME,
                keys: fields_of::<<$ty as TopologyKind>::Keys>,
                configure: |t, l| configure::<$ty>(t, l).map(TopologyConfig::$ty),
            },)*
        ];
    };
}

// The kinds. One line each.
topologies! {
    star::Star,
    dumbbell::Dumbbell,
    chain::Chain,
    tree::Tree,
    fattree::FatTree,
    leafspine::LeafSpine,
    custom::Custom,
    #[cfg(feature = "example-topologies")]
    ring::Ring,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lp() -> LinkParams {
        LinkParams { rate: BitsPerSec(1_000_000_000), delay: Nanos::from_micros(1), buffer: BufferLimit::Packets(100) }
    }

    fn links() -> Links {
        Links { host: lp(), default: lp() }
    }

    #[test]
    fn fattree_sizes() {
        let c = TopologyConfig::FatTree(FatTree { k: 4, fabric: lp() });
        let t = c.build(&links()).unwrap();
        assert_eq!(t.kind, "fattree");
        assert_eq!(t.hosts().count(), 16);
        assert_eq!(t.nodes.len() - 16, 20); // 4 core + 8 agg + 8 edge
        assert_eq!(t.links.len(), 16 + 16 + 16);
        let s = c.size();
        assert_eq!((s.nodes, s.hosts, s.links), (t.nodes.len() as u128, 16, t.links.len() as u128));
    }

    #[test]
    fn dumbbell_names() {
        let c = TopologyConfig::Dumbbell(Dumbbell { senders: 2, receivers: 3, bottleneck: lp() });
        let t = c.build(&links()).unwrap();
        assert!(t.find("s1").is_some() && t.find("r2").is_some() && t.find("left").is_some());
        assert_eq!(t.links.len(), 6);
    }

    #[test]
    fn custom_rejects_unknown_node() {
        let nodes = vec![NodeSpec { name: "a".into(), kind: NodeKind::Host }];
        let c = TopologyConfig::Custom(Custom { nodes, links: vec![("a".into(), "b".into(), lp())] });
        let e = c.build(&links()).unwrap_err();
        assert_eq!((e.key.as_str(), e.message.as_str()), ("links[0]", "unknown node \"b\""));
    }

    #[test]
    fn every_size_counts_what_its_builder_builds() {
        let keys = |s: &str| -> toml::Table { s.parse().unwrap() };
        let cases = [
            ("star", "hosts = 3"),
            ("dumbbell", "senders = 2\nreceivers = 3"),
            ("chain", "switches = 3\nhosts_per_switch = 2"),
            ("tree", "racks = 2\nhosts_per_rack = 3"),
            ("fattree", "k = 4"),
            ("leafspine", "leaves = 3\nspines = 2\nhosts_per_leaf = 2"),
        ];
        for (name, k) in cases {
            let c = lookup(name).unwrap().configure(keys(k), &links()).unwrap();
            let t = c.build(&links()).unwrap();
            let s = c.size();
            assert_eq!((s.nodes, s.hosts), (t.nodes.len() as u128, t.hosts().count() as u128), "{name}");
            // At most the links it counted (a chain counts one more than it has).
            assert!(s.links >= t.links.len() as u128, "{name}");
        }
        let e = lookup("star").unwrap().configure(keys("hosts = 1"), &links()).unwrap_err();
        assert_eq!((e.key.as_str(), e.message.as_str()), ("hosts", "must be at least 2, got 1"));
        assert_eq!(kind_taking("fabric_link_rate", "chain"), Some("fattree"));
    }
}
