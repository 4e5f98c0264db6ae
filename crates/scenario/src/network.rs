//! The `[network]` table: the topology (one struct per kind), link rates, delays and buffers,
//! and the switch queue discipline.

use crate::tables::{de, quoted, split, tag, tagged_tables, At};
use crate::units::{Buffer, Duration, Rate};
use crate::ScenarioError;
use fctlab_engine::{BitsPerSec, Nanos};
use fctlab_net::topology::{LinkParams, NodeSpec, TopologyKind};
use fctlab_net::{BufferLimit, BufferModel, NodeKind, Ns2RedConfig, QueueConfig, RedConfig, Topology};
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
    ecn_threshold: Option<Buffer>,
    red_min_threshold: Option<Buffer>,
    red_max_threshold: Option<Buffer>,
    red_max_p: Option<f64>,
    red_weight: Option<f64>,
    red_ecn: Option<bool>,
    red_gentle: Option<bool>,
    red_variant: Option<String>,
    red_mark_p: Option<f64>,
    red_wait: Option<bool>,
    red_bytes: Option<bool>,
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
    let (specific, unknown) = split(rest, own);
    if let Some(k) = unknown.keys().next() {
        if TopologyTable::tag_taking(k, &topo_name).is_some() {
            return Err(err(k, format!("not used by topology \"{topo_name}\" (its keys: {})", own.join(", "))));
        }
        let mut known = vec!["topology"];
        known.extend(common_keys);
        known.extend(own);
        return Err(err(k, format!("unknown key `{k}`, expected one of {}", quoted(&known))));
    }
    // The keys given, in the order Common declares them (for "only used with" checks).
    let given: Vec<&'static str> = common_keys.iter().copied().filter(|k| common.contains_key(*k)).collect();
    let net: Common = de(common, at)?;
    let topo = TopologyTable::parse(&topo_name, specific, at)?;

    // --- topology ---
    let need = |v: Option<u32>, k: &str, min: u32| -> Result<u32, ScenarioError> {
        let v = v.ok_or_else(|| err(k, format!("topology \"{topo_name}\" needs `{k}`")))?;
        if v < min {
            return Err(err(k, format!("must be at least {min}, got {v}")));
        }
        Ok(v)
    };
    let rate = net.link_rate.map(|r| r.0).unwrap_or(BitsPerSec(1_000_000_000));
    let delay = net.link_delay.map(|d| d.0).unwrap_or(Nanos::from_micros(10));
    let buffer = net.buffer.map(|b| b.0).unwrap_or(BufferLimit::Packets(100));
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
    let switch_queue = queue(&net, &given, at)?;
    let nic_queue = match net.nic_queue.as_deref().unwrap_or("droptail") {
        "droptail" => QueueConfig::DropTail,
        "switch" => switch_queue.clone(),
        other => return Err(err("nic_queue", format!("expected \"droptail\" or \"switch\", got \"{other}\""))),
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

/// The switch queue discipline from `queue` and its keys (`given`: the keys the table sets).
/// The `red_*` keys belong to RED, `ecn_threshold` to threshold marking.
fn queue(net: &Common, given: &[&str], at: At<'_>) -> Result<QueueConfig, ScenarioError> {
    let err = |key: &str, m: String| at.err(key, m);
    let queue_name = net.queue.as_deref().unwrap_or("droptail");
    if queue_name != "red" {
        if let Some(k) = given.iter().find(|k| k.starts_with("red_")) {
            return Err(err(k, format!("only used with queue = \"red\" (queue is \"{queue_name}\")")));
        }
    }
    if queue_name != "ecn" && net.ecn_threshold.is_some() {
        return Err(err("ecn_threshold", format!("only used with queue = \"ecn\" (queue is \"{queue_name}\")")));
    }
    let pkts = |b: Option<Buffer>, key: &str, default: f64| -> Result<f64, ScenarioError> {
        match b.map(|b| b.0) {
            None => Ok(default),
            Some(BufferLimit::Packets(n)) => Ok(n as f64),
            Some(_) => Err(err(key, "RED thresholds are in packets, e.g. \"5pkt\"".into())),
        }
    };
    Ok(match queue_name {
        "droptail" => QueueConfig::DropTail,
        "ecn" => {
            let threshold = net.ecn_threshold.map(|b| b.0).ok_or_else(|| {
                err(
                    "ecn_threshold",
                    "queue = \"ecn\" needs `ecn_threshold` (the marking threshold K, e.g. \"20pkt\")".into(),
                )
            })?;
            QueueConfig::Ecn { threshold }
        }
        "red" => {
            let d = RedConfig::default();
            let ns2 = match net.red_variant.as_deref().unwrap_or("classic") {
                "classic" => false,
                "ns2" => true,
                other => return Err(err("red_variant", format!("expected \"classic\" or \"ns2\", got \"{other}\""))),
            };
            if !ns2 {
                if let Some(k) = given.iter().find(|k| NS2_RED_KEYS.contains(k)) {
                    return Err(err(k, "only used with red_variant = \"ns2\" (red_variant is \"classic\")".into()));
                }
            }
            let check_p_w = |max_p: f64, weight: f64| -> Result<(), ScenarioError> {
                if !(0.0..=1.0).contains(&max_p) {
                    return Err(err("red_max_p", format!("must be a probability in [0, 1], got {max_p}")));
                }
                if !(weight > 0.0 && weight <= 1.0) {
                    return Err(err("red_weight", format!("must be in (0, 1], got {weight}")));
                }
                Ok(())
            };
            if ns2 {
                let cfg = ns2_red(net, at)?;
                check_p_w(cfg.max_p, cfg.weight.unwrap_or(1.0))?;
                return Ok(QueueConfig::Red(RedConfig { ns2: Some(cfg), ..d }));
            }
            let cfg = RedConfig {
                min_threshold_pkts: pkts(net.red_min_threshold, "red_min_threshold", d.min_threshold_pkts)?,
                max_threshold_pkts: pkts(net.red_max_threshold, "red_max_threshold", d.max_threshold_pkts)?,
                max_p: net.red_max_p.unwrap_or(d.max_p),
                weight: net.red_weight.unwrap_or(d.weight),
                ecn: net.red_ecn.unwrap_or(false),
                gentle: net.red_gentle.unwrap_or(d.gentle),
                ns2: None,
            };
            if cfg.min_threshold_pkts >= cfg.max_threshold_pkts {
                return Err(err("red_max_threshold", "must be above red_min_threshold".into()));
            }
            check_p_w(cfg.max_p, cfg.weight)?;
            QueueConfig::Red(cfg)
        }
        other => return Err(err("queue", format!("unknown queue \"{other}\" (known: droptail, ecn, red)"))),
    })
}

/// The keys only ns-2's RED takes.
const NS2_RED_KEYS: [&str; 3] = ["red_mark_p", "red_wait", "red_bytes"];

/// ns-2.35's RED: ns-default.tcl's `Queue/RED` values, overridden by the keys given. A
/// threshold `"Npkt"` is ns-2's `thresh_ N`: N mean packets of `mean_pktsize_` (500) bytes in
/// byte mode, N packets with `red_bytes = false`; a byte threshold is taken as it is (byte
/// mode only).
fn ns2_red(net: &Common, at: At<'_>) -> Result<Ns2RedConfig, ScenarioError> {
    let err = |key: &str, m: String| at.err(key, m);
    let d = Ns2RedConfig::default();
    let bytes = net.red_bytes.unwrap_or(d.bytes);
    let threshold = |b: Option<Buffer>, key: &str| -> Result<Option<f64>, ScenarioError> {
        let t = match b.map(|b| b.0) {
            None => return Ok(None),
            Some(BufferLimit::Packets(n)) => n as f64,
            Some(BufferLimit::Bytes(b)) if bytes => b as f64 / d.mean_pktsize as f64,
            Some(BufferLimit::Bytes(_)) => {
                return Err(err(key, "with red_bytes = false RED thresholds are in packets, e.g. \"5pkt\"".into()))
            }
            Some(BufferLimit::Unlimited) => {
                return Err(err(key, "RED thresholds are in packets (\"5pkt\") or bytes (\"30KB\")".into()))
            }
        };
        if t <= 0.0 {
            return Err(err(key, "must be above zero (leave it out for ns-2's automatic threshold)".into()));
        }
        Ok(Some(t))
    };
    let min_threshold = threshold(net.red_min_threshold, "red_min_threshold")?;
    let max_threshold = threshold(net.red_max_threshold, "red_max_threshold")?;
    if let (Some(lo), Some(hi)) = (min_threshold, max_threshold) {
        if hi < lo {
            return Err(err("red_max_threshold", "must not be below red_min_threshold".into()));
        }
    }
    let mark_p = net.red_mark_p.unwrap_or(d.mark_p);
    // Above 1 is allowed, as in ns-2: every hit on an ECN-capable packet is then a mark.
    if !(mark_p >= 0.0 && mark_p.is_finite()) {
        return Err(err("red_mark_p", format!("must be a number >= 0 (above 1: always mark), got {mark_p}")));
    }
    Ok(Ns2RedConfig {
        min_threshold,
        max_threshold,
        weight: net.red_weight,
        max_p: net.red_max_p.unwrap_or(d.max_p),
        mark_p,
        wait: net.red_wait.unwrap_or(d.wait),
        bytes,
        gentle: net.red_gentle.unwrap_or(d.gentle),
        ecn: net.red_ecn.unwrap_or(d.ecn),
        ..d
    })
}
