//! The `[network]` table: the topology (one struct per kind), link rates, delays and buffers,
//! and the switch queue discipline.

use crate::tables::{de, split, tag, tagged_tables, At};
use crate::units::{Buffer, Duration, Rate};
use crate::ScenarioError;
use fctlab_engine::{BitsPerSec, Nanos};
use fctlab_net::qdisc;
use fctlab_net::topology::{LinkParams, NodeSpec, TopologyKind};
use fctlab_net::{BufferLimit, BufferModel, NodeKind, QueueConfig, Topology};
use serde::Deserialize;

/// Keys every topology takes: default link parameters and the queue discipline.
#[derive(Deserialize, Debug, Default)]
#[serde(deny_unknown_fields)]
struct Common {
    link_rate: Option<Rate>,
    link_delay: Option<Duration>,
    buffer: Option<Buffer>,
    host_link_rate: Option<Rate>,
    host_link_delay: Option<Duration>,
    nic_buffer: Option<Buffer>,
    queue: Option<String>,
    nic_queue: Option<String>,
    buffer_model: Option<String>,
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct Star {
    hosts: Option<u32>,
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct Dumbbell {
    senders: Option<u32>,
    receivers: Option<u32>,
    bottleneck_rate: Option<Rate>,
    bottleneck_delay: Option<Duration>,
    bottleneck_buffer: Option<Buffer>,
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct Chain {
    switches: Option<u32>,
    hosts_per_switch: Option<u32>,
    fabric_link_rate: Option<Rate>,
    fabric_link_delay: Option<Duration>,
    fabric_buffer: Option<Buffer>,
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct Tree {
    racks: Option<u32>,
    hosts_per_rack: Option<u32>,
    core_link_rate: Option<Rate>,
    core_link_delay: Option<Duration>,
    core_buffer: Option<Buffer>,
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct FatTree {
    k: Option<u32>,
    fabric_link_rate: Option<Rate>,
    fabric_link_delay: Option<Duration>,
    fabric_buffer: Option<Buffer>,
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct LeafSpine {
    leaves: Option<u32>,
    spines: Option<u32>,
    hosts_per_leaf: Option<u32>,
    fabric_link_rate: Option<Rate>,
    fabric_link_delay: Option<Duration>,
    fabric_buffer: Option<Buffer>,
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct Custom {
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

tagged_tables! {
    /// The topology, by `topology = "..."`, with the keys of its kind.
    enum TopologyTable {
        "star" => Star(Star),
        "dumbbell" => Dumbbell(Dumbbell),
        "chain" => Chain(Chain),
        "tree" => Tree(Tree),
        "fattree" => FatTree(FatTree),
        "leafspine" => LeafSpine(LeafSpine),
        "custom" => Custom(Custom),
    }
}

/// The network of a scenario: the built topology, the switch and NIC queue disciplines, the NIC
/// buffer and what a buffer holds.
pub(crate) struct Network {
    pub topology: Topology,
    pub switch_queue: QueueConfig,
    pub nic_queue: QueueConfig,
    pub nic_buffer: BufferLimit,
    pub buffer_model: BufferModel,
}

/// Nodes and links a topology is limited to: what one run can hold, checked from the sizes
/// before anything is built, so that a mistyped size is refused at once.
pub const MAX_NODES: u64 = 1_000_000;
pub const MAX_LINKS: u64 = 4_000_000;
/// Routing keeps, while the run is built, the ports towards every destination host from every
/// node: nodes × hosts entries of about 8 bytes each, at most this many (1.6 GB).
pub const MAX_ROUTE_ENTRIES: u64 = 200_000_000;

/// `n` with its digits in groups of three (`1,000,000`).
fn digits(n: u128) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Refuses a topology whose sizes give more than [`MAX_NODES`] nodes, [`MAX_LINKS`] links or
/// [`MAX_ROUTE_ENTRIES`] routing entries (one per node and destination host), naming the
/// largest of its size keys, before any of it is allocated.
fn check_size(kind: &TopologyKind, err: &dyn Fn(&str, String) -> ScenarioError) -> Result<(), ScenarioError> {
    // u128: no product of two u32 sizes overflows
    let n = |x: u32| x as u128;
    // nodes, hosts, links, the node formula, and the size keys with their values
    let (nodes, hosts, links, formula, keys): (u128, u128, u128, &str, Vec<(&str, u32)>) = match kind {
        TopologyKind::Star { hosts } => (n(*hosts) + 1, n(*hosts), n(*hosts), "hosts + 1", vec![("hosts", *hosts)]),
        TopologyKind::Dumbbell { senders, receivers, .. } => {
            let h = n(*senders) + n(*receivers);
            (h + 2, h, h + 1, "senders + receivers + 2", vec![("senders", *senders), ("receivers", *receivers)])
        }
        TopologyKind::Chain { switches, hosts_per_switch, .. } => (
            n(*switches) * (n(*hosts_per_switch) + 1),
            n(*switches) * n(*hosts_per_switch),
            n(*switches) * (n(*hosts_per_switch) + 1),
            "switches × (hosts_per_switch + 1)",
            vec![("switches", *switches), ("hosts_per_switch", *hosts_per_switch)],
        ),
        TopologyKind::Tree { racks, hosts_per_rack, .. } => (
            n(*racks) * (n(*hosts_per_rack) + 1) + 1,
            n(*racks) * n(*hosts_per_rack),
            n(*racks) * (n(*hosts_per_rack) + 1),
            "racks × (hosts_per_rack + 1) + 1",
            vec![("racks", *racks), ("hosts_per_rack", *hosts_per_rack)],
        ),
        TopologyKind::FatTree { k, .. } => {
            let k = n(*k);
            (k * k * k / 4 + 5 * k * k / 4, k * k * k / 4, 3 * k * k * k / 4, "k³/4 + 5k²/4", vec![("k", k as u32)])
        }
        TopologyKind::LeafSpine { leaves, spines, hosts_per_leaf, .. } => (
            n(*leaves) * (n(*hosts_per_leaf) + 1) + n(*spines),
            n(*leaves) * n(*hosts_per_leaf),
            n(*leaves) * (n(*hosts_per_leaf) + n(*spines)),
            "leaves × (hosts_per_leaf + 1) + spines",
            vec![("leaves", *leaves), ("spines", *spines), ("hosts_per_leaf", *hosts_per_leaf)],
        ),
        TopologyKind::Custom { nodes, links } => {
            let hosts = nodes.iter().filter(|x| x.kind == NodeKind::Host).count() as u128;
            (nodes.len() as u128, hosts, links.len() as u128, "its nodes", vec![("nodes", 0)])
        }
    };
    let (key, _) = keys.iter().copied().max_by_key(|&(_, v)| v).unwrap_or(("", 0));
    let too_many = |what: String, limit: u64| {
        err(key, format!("{what} is more than this simulator supports ({})", digits(limit as u128)))
    };
    if nodes > MAX_NODES as u128 {
        return Err(too_many(format!("{formula} = {} nodes", digits(nodes)), MAX_NODES));
    }
    if links > MAX_LINKS as u128 {
        return Err(too_many(format!("{} links", digits(links)), MAX_LINKS));
    }
    if nodes * hosts > MAX_ROUTE_ENTRIES as u128 {
        let what =
            format!("{} nodes × {} hosts = {} routing entries", digits(nodes), digits(hosts), digits(nodes * hosts));
        return Err(too_many(what, MAX_ROUTE_ENTRIES));
    }
    Ok(())
}

/// Reads and builds `[network]`.
pub(crate) fn build(mut table: toml::Table, file: &str) -> Result<Network, ScenarioError> {
    let at = At { file, prefix: "network" };
    let err = |key: &str, m: String| at.err(key, m);
    let topo_name = tag(&table, "topology", at)?;
    table.remove("topology");
    let own = TopologyTable::keys_of(&topo_name).ok_or_else(|| {
        err("topology", format!("unknown topology \"{topo_name}\" (known: {})", TopologyTable::NAMES.join(", ")))
    })?;
    let common_keys = crate::tables::fields_of::<Common>();
    let (common, rest) = split(table, common_keys);
    // Each queue discipline's keys (`ecn_threshold`, `red_*`, ...) go to the discipline.
    let queue_keys: Vec<&'static str> = qdisc::REGISTRY.iter().flat_map(|r| r.keys.iter().copied()).collect();
    let (queue_table, rest) = split(rest, &queue_keys);
    let (specific, unknown) = split(rest, own);
    if let Some(k) = unknown.keys().next() {
        if TopologyTable::tag_taking(k, &topo_name).is_some() {
            return Err(err(k, format!("not used by topology \"{topo_name}\" (its keys: {})", own.join(", "))));
        }
        let mut known = vec!["topology"];
        known.extend(common_keys);
        known.extend(own);
        let q = net_queue_name(common.get("queue"));
        if let Ok(r) = qdisc::lookup(&q) {
            known.extend(r.keys);
        }
        return Err(err(k, crate::tables::unknown_key(k, &known)));
    }
    let net: Common = de(common, at)?;
    let topo = TopologyTable::parse(&topo_name, specific, at)?;

    let (kind, host, buffer) = topology_kind(topo, &topo_name, &net, at)?;
    check_size(&kind, &err)?;
    let topology = Topology::build(&kind, host).map_err(|m| {
        if m.starts_with("links[") {
            let (k, rest) = m.split_once(": ").unwrap_or((&m, ""));
            err(k, rest.to_string())
        } else {
            err("", m)
        }
    })?;
    if topology.nodes.len() as u64 > MAX_NODES {
        let n = topology.nodes.len() as u128;
        return Err(err(
            "",
            format!("{} nodes is more than this simulator supports ({})", digits(n), digits(MAX_NODES as u128)),
        ));
    }
    if topo_name == "custom" {
        for (i, n) in topology.nodes.iter().enumerate() {
            if !topology.links.iter().any(|l| l.a == i || l.b == i) {
                return Err(err("links", format!("node \"{}\" has no link", n.name)));
            }
        }
    }
    let switch_queue = queue(net.queue.as_deref().unwrap_or("droptail"), queue_table, at)?;
    let at_nics = qdisc::lookup(switch_queue.name()).is_ok_and(|r| r.at_nics);
    let nic_queue = match net.nic_queue.as_deref().unwrap_or(if at_nics { "switch" } else { "droptail" }) {
        "droptail" => QueueConfig::DropTail(()),
        "switch" => switch_queue.clone(),
        // Another discipline, with its default parameters (`"pfabric"`: the most urgent flow
        // first, as a Homa sender sends its messages).
        other => match qdisc::lookup(other) {
            Ok(reg) => reg.configure(toml::Table::new()).map_err(|e| err("nic_queue", e.message))?,
            Err(_) => {
                return Err(err(
                    "nic_queue",
                    format!("expected \"droptail\", \"switch\" or a queue discipline's name, got \"{other}\""),
                ))
            }
        },
    };
    let buffer_model = match net.buffer_model.as_deref().unwrap_or("waiting") {
        "waiting" => BufferModel::Waiting,
        "ns2" => BufferModel::Ns2,
        other => return Err(err("buffer_model", format!("expected \"waiting\" or \"ns2\", got \"{other}\""))),
    };
    Ok(Network {
        topology,
        switch_queue,
        nic_queue,
        nic_buffer: net.nic_buffer.map(|b| b.0).unwrap_or(buffer),
        buffer_model,
    })
}

/// The topology a `[network]` table describes: its kind with each level's link parameters,
/// the host links' parameters, and the default buffer.
fn topology_kind(
    topo: TopologyTable,
    topo_name: &str,
    net: &Common,
    at: At<'_>,
) -> Result<(TopologyKind, LinkParams, BufferLimit), ScenarioError> {
    let err = |key: &str, m: String| at.err(key, m);
    let need = |v: Option<u32>, k: &str, min: u32| -> Result<u32, ScenarioError> {
        let v = v.ok_or_else(|| err(k, format!("topology \"{topo_name}\" needs `{k}`")))?;
        if v < min {
            return Err(err(k, format!("must be at least {min}, got {v}")));
        }
        Ok(v)
    };
    let rate = net.link_rate.map(|r| r.0).unwrap_or(BitsPerSec(1_000_000_000));
    let delay = net.link_delay.map(|d| d.0).unwrap_or(Nanos::from_micros(10));
    // 100 packets, or the buffer the queue discipline is designed around (pFabric's).
    let designed = qdisc::lookup(net.queue.as_deref().unwrap_or("droptail")).ok().and_then(|r| r.default_buffer);
    let buffer = net.buffer.map(|b| b.0).or(designed).unwrap_or(BufferLimit::Packets(100));
    let host = LinkParams {
        rate: net.host_link_rate.map(|r| r.0).unwrap_or(rate),
        delay: net.host_link_delay.map(|d| d.0).unwrap_or(delay),
        buffer,
    };
    let level = |r: Option<Rate>, d: Option<Duration>, b: Option<Buffer>| LinkParams {
        rate: r.map(|r| r.0).unwrap_or(rate),
        delay: d.map(|d| d.0).unwrap_or(delay),
        buffer: b.map(|b| b.0).unwrap_or(buffer),
    };
    let kind = match topo {
        TopologyTable::Star(t) => TopologyKind::Star { hosts: need(t.hosts, "hosts", 2)? },
        TopologyTable::Dumbbell(t) => TopologyKind::Dumbbell {
            senders: need(t.senders, "senders", 1)?,
            receivers: need(t.receivers, "receivers", 1)?,
            bottleneck: level(t.bottleneck_rate, t.bottleneck_delay, t.bottleneck_buffer),
        },
        TopologyTable::Chain(t) => TopologyKind::Chain {
            switches: need(t.switches, "switches", 1)?,
            hosts_per_switch: match t.hosts_per_switch {
                None => 1,
                Some(_) => need(t.hosts_per_switch, "hosts_per_switch", 1)?,
            },
            fabric: level(t.fabric_link_rate, t.fabric_link_delay, t.fabric_buffer),
        },
        TopologyTable::Tree(t) => TopologyKind::Tree {
            racks: need(t.racks, "racks", 1)?,
            hosts_per_rack: need(t.hosts_per_rack, "hosts_per_rack", 1)?,
            core: level(t.core_link_rate, t.core_link_delay, t.core_buffer),
        },
        TopologyTable::FatTree(t) => {
            let k = need(t.k, "k", 2)?;
            if k % 2 != 0 || k > 64 {
                return Err(err("k", format!("a fat-tree needs an even k between 2 and 64, got {k}")));
            }
            TopologyKind::FatTree { k, fabric: level(t.fabric_link_rate, t.fabric_link_delay, t.fabric_buffer) }
        }
        TopologyTable::LeafSpine(t) => TopologyKind::LeafSpine {
            leaves: need(t.leaves, "leaves", 1)?,
            spines: need(t.spines, "spines", 1)?,
            hosts_per_leaf: need(t.hosts_per_leaf, "hosts_per_leaf", 1)?,
            fabric: level(t.fabric_link_rate, t.fabric_link_delay, t.fabric_buffer),
        },
        TopologyTable::Custom(t) => {
            let nodes_raw = t.nodes.ok_or_else(|| err("nodes", "topology \"custom\" needs a `nodes` list".into()))?;
            let links_raw = t.links.ok_or_else(|| err("links", "topology \"custom\" needs a `links` list".into()))?;
            let mut nodes = Vec::new();
            for (i, n) in nodes_raw.iter().enumerate() {
                let kind = match n.kind.as_str() {
                    "host" => NodeKind::Host,
                    "switch" => NodeKind::Switch,
                    other => {
                        return Err(err(
                            &format!("nodes[{i}].kind"),
                            format!("expected \"host\" or \"switch\", got \"{other}\""),
                        ))
                    }
                };
                nodes.push(NodeSpec { name: n.name.clone(), kind });
            }
            // Links that touch a host default to the host-link rate and delay.
            let is_host = |name: &str| nodes.iter().any(|n| n.name == name && n.kind == NodeKind::Host);
            let links = links_raw
                .iter()
                .map(|l| {
                    let mut p = level(l.rate, l.delay, l.buffer);
                    if is_host(&l.a) || is_host(&l.b) {
                        p.rate = l.rate.map(|r| r.0).unwrap_or(host.rate);
                        p.delay = l.delay.map(|d| d.0).unwrap_or(host.delay);
                    }
                    (l.a.clone(), l.b.clone(), p)
                })
                .collect();
            TopologyKind::Custom { nodes, links }
        }
    };
    Ok((kind, host, buffer))
}

/// The `queue` value as written, for naming its keys in an error (before it is checked).
fn net_queue_name(v: Option<&toml::Value>) -> String {
    v.and_then(|v| v.as_str()).unwrap_or("droptail").to_string()
}

/// The switch queue discipline `name`, configured from the discipline keys the table sets
/// (`keys`): a key of another discipline is an error naming the discipline it belongs to.
fn queue(name: &str, keys: toml::Table, at: At<'_>) -> Result<QueueConfig, ScenarioError> {
    let reg = qdisc::lookup(name).map_err(|m| at.err("queue", m))?;
    // Keys in the order the disciplines declare them (the first foreign one is named).
    let foreign = qdisc::REGISTRY
        .iter()
        .filter(|r| r.name != name)
        .flat_map(|r| r.keys.iter().map(move |k| (r.name, *k)))
        .find(|(_, k)| keys.contains_key(*k));
    if let Some((owner, k)) = foreign {
        return Err(at.err(k, format!("only used with queue = \"{owner}\" (queue is \"{name}\")")));
    }
    reg.configure(keys).map_err(|e| {
        let key = if e.key == "." { "" } else { e.key.as_str() };
        at.err(key, crate::tables::clean_serde_message(&e.message))
    })
}
