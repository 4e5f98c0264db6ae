//! The scenario schema and its translation into a [`Scenario`].

use crate::units::{Buffer, Duration, Rate, Size};
use crate::{FlowSpec, MonitorConfig, Scenario, ScenarioError};
use fctlab_engine::{BitsPerSec, Nanos};
use fctlab_net::topology::{LinkParams, NodeSpec, TopologyKind};
use fctlab_net::{BufferLimit, NodeKind, QueueConfig, RedConfig, Topology};
use fctlab_transport::cc;
use fctlab_transport::TcpConfig;
use serde::Deserialize;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct RawScenario {
    name: Option<String>,
    description: Option<String>,
    seed: Option<u64>,
    stop_time: Option<Duration>,
    network: RawNetwork,
    #[serde(default)]
    transport: RawTransport,
    #[serde(default)]
    flows: Vec<RawFlow>,
    #[serde(default)]
    workloads: Vec<crate::workloads::RawWorkload>,
    #[serde(default)]
    monitor: RawMonitor,
}

#[derive(Deserialize, Debug, Default)]
#[serde(deny_unknown_fields)]
struct RawNetwork {
    topology: String,
    // sizes
    hosts: Option<u32>,
    senders: Option<u32>,
    receivers: Option<u32>,
    switches: Option<u32>,
    hosts_per_switch: Option<u32>,
    racks: Option<u32>,
    hosts_per_rack: Option<u32>,
    k: Option<u32>,
    leaves: Option<u32>,
    spines: Option<u32>,
    hosts_per_leaf: Option<u32>,
    nodes: Option<Vec<RawNode>>,
    links: Option<Vec<RawLink>>,
    // links
    link_rate: Option<Rate>,
    link_delay: Option<Duration>,
    buffer: Option<Buffer>,
    host_link_rate: Option<Rate>,
    host_link_delay: Option<Duration>,
    bottleneck_rate: Option<Rate>,
    bottleneck_delay: Option<Duration>,
    bottleneck_buffer: Option<Buffer>,
    fabric_link_rate: Option<Rate>,
    fabric_link_delay: Option<Duration>,
    fabric_buffer: Option<Buffer>,
    core_link_rate: Option<Rate>,
    core_link_delay: Option<Duration>,
    core_buffer: Option<Buffer>,
    nic_buffer: Option<Buffer>,
    // queues
    queue: Option<String>,
    ecn_threshold: Option<Buffer>,
    red_min_threshold: Option<Buffer>,
    red_max_threshold: Option<Buffer>,
    red_max_p: Option<f64>,
    red_weight: Option<f64>,
    red_ecn: Option<bool>,
    red_gentle: Option<bool>,
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct RawNode {
    name: String,
    kind: String,
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct RawLink {
    a: String,
    b: String,
    rate: Option<Rate>,
    delay: Option<Duration>,
    buffer: Option<Buffer>,
}

#[derive(Deserialize, Debug, Default)]
struct RawTransport {
    protocol: Option<String>,
    mss: Option<Size>,
    header_bytes: Option<Size>,
    min_rto: Option<Duration>,
    initial_rto: Option<Duration>,
    max_rto: Option<Duration>,
    initial_cwnd: Option<u32>,
    delayed_ack: Option<bool>,
    delayed_ack_timeout: Option<Duration>,
    sack: Option<bool>,
    ecn: Option<bool>,
    handshake: Option<bool>,
    rwnd: Option<Size>,
    dupthresh: Option<u32>,
    #[serde(flatten)]
    extra: BTreeMap<String, toml::Value>,
}

#[derive(Deserialize, Debug)]
struct RawFlow {
    src: String,
    dst: String,
    size: Option<Size>,
    start: Option<Duration>,
    deadline: Option<Duration>,
    tag: Option<String>,
    group: Option<String>,
    after: Option<String>,
    protocol: Option<String>,
    ecn: Option<bool>,
    #[serde(flatten)]
    extra: BTreeMap<String, toml::Value>,
}

#[derive(Deserialize, Debug, Default)]
#[serde(deny_unknown_fields)]
struct RawMonitor {
    cwnd_interval: Option<Duration>,
    cwnd_flows: Option<toml::Value>,
    queue_interval: Option<Duration>,
    queues: Option<Vec<String>>,
}

const TRANSPORT_KEYS: &[&str] = &[
    "protocol", "mss", "header_bytes", "min_rto", "initial_rto", "max_rto", "initial_cwnd", "delayed_ack", "delayed_ack_timeout",
    "sack", "ecn", "handshake", "rwnd", "dupthresh",
];
const FLOW_KEYS: &[&str] = &["src", "dst", "size", "start", "deadline", "tag", "group", "after", "protocol", "ecn"];

/// Which `[network]` sizing keys each topology takes.
fn topology_keys(topology: &str) -> Option<&'static [&'static str]> {
    Some(match topology {
        "star" => &["hosts"],
        "dumbbell" => &["senders", "receivers", "bottleneck_rate", "bottleneck_delay", "bottleneck_buffer"],
        "chain" => &["switches", "hosts_per_switch", "fabric_link_rate", "fabric_link_delay", "fabric_buffer"],
        "tree" => &["racks", "hosts_per_rack", "core_link_rate", "core_link_delay", "core_buffer"],
        "fattree" => &["k", "fabric_link_rate", "fabric_link_delay", "fabric_buffer"],
        "leafspine" => &["leaves", "spines", "hosts_per_leaf", "fabric_link_rate", "fabric_link_delay", "fabric_buffer"],
        "custom" => &["nodes", "links"],
        _ => return None,
    })
}

const TOPOLOGIES: &str = "star, dumbbell, chain, tree, fattree, leafspine, custom";

/// The format of scenario text.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Format {
    Toml,
    Json,
}

/// Parses, overrides and validates a scenario.
///
/// `file` names the source in error messages. `overrides` are `key=value` strings applied
/// before validation (`network.link_rate=10Gbps`, `flows.0.size=1MB`, `seed=7`); a value that
/// parses as a TOML value is used as such, anything else as a string.
pub fn load(text: &str, file: &str, format: Format, overrides: &[String]) -> Result<Scenario, ScenarioError> {
    let err = |key: &str, message: String| ScenarioError { file: file.to_string(), key: key.to_string(), message };
    let mut root: toml::Value = match format {
        Format::Toml => toml::from_str::<toml::Table>(text).map(toml::Value::Table).map_err(|e| {
            let msg = e.message().to_string();
            let at = e.span().map(|s| line_col(text, s.start));
            match at {
                Some((l, c)) => err("", format!("invalid TOML at line {l}, column {c}: {}", msg.replace('\n', " "))),
                None => err("", format!("invalid TOML: {msg}")),
            }
        })?,
        Format::Json => serde_json::from_str::<toml::Value>(text).map_err(|e| err("", format!("invalid scenario data: {e}")))?,
    };
    for o in overrides {
        apply_override(&mut root, o).map_err(|m| err(&format!("--set {o}"), m))?;
    }
    let mut hasher = Sha256::new();
    hasher.update(text.as_bytes());
    for o in overrides {
        hasher.update(b"\n--set ");
        hasher.update(o.as_bytes());
    }
    let sha256 = hasher.finalize().iter().map(|b| format!("{b:02x}")).collect::<String>();

    let raw: RawScenario = serde_path_to_error::deserialize(root).map_err(|e| {
        let path = e.path().to_string();
        let key = if path == "." { String::new() } else { path };
        err(&key, clean_serde_message(&e.inner().to_string()))
    })?;
    build(raw, file, sha256)
}

fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
    (line, col)
}

fn clean_serde_message(m: &str) -> String {
    // The TOML value deserializer appends "in `key`"; the key is reported separately.
    let m = m.split("\nin `").next().unwrap_or(m).trim();
    if let Some(rest) = m.strip_prefix("unknown field ") {
        return format!("unknown key {rest}");
    }
    if let Some(rest) = m.strip_prefix("missing field ") {
        return format!("missing required key {rest}");
    }
    let m = m
        .replace("invalid type: ", "wrong type: ")
        .replace('\n', " ")
        .replace("expected u32", "expected a whole number of at least 0")
        .replace("expected u64", "expected a whole number of at least 0")
        .replace("expected f64", "expected a number")
        .replace("expected a boolean", "expected true or false");
    // serde names internal structs ("expected struct RawNetwork"); say what the user writes.
    let mut out = String::new();
    let mut rest = m.as_str();
    while let Some(i) = rest.find("struct Raw") {
        out.push_str(&rest[..i]);
        out.push_str("a table");
        let tail = &rest[i + "struct Raw".len()..];
        let skip = tail.find(|c: char| !c.is_alphanumeric()).unwrap_or(tail.len());
        rest = &tail[skip..];
    }
    out.push_str(rest);
    out
}

fn apply_override(root: &mut toml::Value, o: &str) -> Result<(), String> {
    let (key, value) = o.split_once('=').ok_or_else(|| "expected key=value".to_string())?;
    let key = key.trim();
    if key.is_empty() {
        return Err("expected key=value with a non-empty key".into());
    }
    let value = value.trim();
    let parsed = toml::from_str::<toml::Table>(&format!("v = {value}"))
        .ok()
        .and_then(|mut t| t.remove("v"))
        .filter(|v| !matches!(v, toml::Value::Float(f) if !f.is_finite()))
        .unwrap_or_else(|| toml::Value::String(value.to_string()));
    let parts: Vec<&str> = key.split('.').collect();
    let mut cur = root;
    for (i, part) in parts.iter().enumerate() {
        let last = i + 1 == parts.len();
        cur = match cur {
            toml::Value::Table(t) => {
                if last {
                    t.insert(part.to_string(), parsed);
                    return Ok(());
                }
                if !t.contains_key(*part) && parts[i + 1].parse::<usize>().is_ok() {
                    return Err(format!("`{}` has no entry {} (the list is empty or missing)", parts[..=i].join("."), parts[i + 1]));
                }
                t.entry(part.to_string()).or_insert_with(|| toml::Value::Table(toml::Table::new()))
            }
            toml::Value::Array(a) => {
                let idx: usize = part.parse().map_err(|_| format!("`{part}` is not an index into the list at this point of the key"))?;
                let len = a.len();
                let slot = a.get_mut(idx).ok_or_else(|| format!("index {idx} is out of range (the list has {len} entries)"))?;
                if last {
                    *slot = parsed;
                    return Ok(());
                }
                slot
            }
            _ => return Err(format!("`{}` is not a table", parts[..i].join("."))),
        };
    }
    Ok(())
}

fn build(raw: RawScenario, file: &str, sha256: String) -> Result<Scenario, ScenarioError> {
    let err = |key: &str, message: String| ScenarioError { file: file.to_string(), key: key.to_string(), message };
    let net = &raw.network;

    // --- topology ---
    let topo_name = net.topology.as_str();
    let allowed = topology_keys(topo_name)
        .ok_or_else(|| err("network.topology", format!("unknown topology \"{topo_name}\" (known: {TOPOLOGIES})")))?;
    let given: Vec<(&str, bool)> = vec![
        ("hosts", net.hosts.is_some()),
        ("senders", net.senders.is_some()),
        ("receivers", net.receivers.is_some()),
        ("switches", net.switches.is_some()),
        ("hosts_per_switch", net.hosts_per_switch.is_some()),
        ("racks", net.racks.is_some()),
        ("hosts_per_rack", net.hosts_per_rack.is_some()),
        ("k", net.k.is_some()),
        ("leaves", net.leaves.is_some()),
        ("spines", net.spines.is_some()),
        ("hosts_per_leaf", net.hosts_per_leaf.is_some()),
        ("nodes", net.nodes.is_some()),
        ("links", net.links.is_some()),
        ("bottleneck_rate", net.bottleneck_rate.is_some()),
        ("bottleneck_delay", net.bottleneck_delay.is_some()),
        ("bottleneck_buffer", net.bottleneck_buffer.is_some()),
        ("fabric_link_rate", net.fabric_link_rate.is_some()),
        ("fabric_link_delay", net.fabric_link_delay.is_some()),
        ("fabric_buffer", net.fabric_buffer.is_some()),
        ("core_link_rate", net.core_link_rate.is_some()),
        ("core_link_delay", net.core_link_delay.is_some()),
        ("core_buffer", net.core_buffer.is_some()),
    ];
    for (k, present) in &given {
        if *present && !allowed.contains(k) {
            return Err(err(
                &format!("network.{k}"),
                format!("not used by topology \"{topo_name}\" (its keys: {})", allowed.join(", ")),
            ));
        }
    }
    let need = |v: Option<u32>, k: &str, min: u32| -> Result<u32, ScenarioError> {
        let v = v.ok_or_else(|| err(&format!("network.{k}"), format!("topology \"{topo_name}\" needs `{k}`")))?;
        if v < min {
            return Err(err(&format!("network.{k}"), format!("must be at least {min}, got {v}")));
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
    let fabric = level(net.fabric_link_rate, net.fabric_link_delay, net.fabric_buffer);
    let kind = match topo_name {
        "star" => TopologyKind::Star { hosts: need(net.hosts, "hosts", 2)? },
        "dumbbell" => TopologyKind::Dumbbell {
            senders: need(net.senders, "senders", 1)?,
            receivers: need(net.receivers, "receivers", 1)?,
            bottleneck: level(net.bottleneck_rate, net.bottleneck_delay, net.bottleneck_buffer),
        },
        "chain" => TopologyKind::Chain {
            switches: need(net.switches, "switches", 1)?,
            hosts_per_switch: match net.hosts_per_switch {
                None => 1,
                Some(_) => need(net.hosts_per_switch, "hosts_per_switch", 1)?,
            },
            fabric,
        },
        "tree" => TopologyKind::Tree {
            racks: need(net.racks, "racks", 1)?,
            hosts_per_rack: need(net.hosts_per_rack, "hosts_per_rack", 1)?,
            core: level(net.core_link_rate, net.core_link_delay, net.core_buffer),
        },
        "fattree" => {
            let k = need(net.k, "k", 2)?;
            if k % 2 != 0 || k > 64 {
                return Err(err("network.k", format!("a fat-tree needs an even k between 2 and 64, got {k}")));
            }
            TopologyKind::FatTree { k, fabric }
        }
        "leafspine" => TopologyKind::LeafSpine {
            leaves: need(net.leaves, "leaves", 1)?,
            spines: need(net.spines, "spines", 1)?,
            hosts_per_leaf: need(net.hosts_per_leaf, "hosts_per_leaf", 1)?,
            fabric,
        },
        "custom" => {
            let nodes_raw = net.nodes.as_ref().ok_or_else(|| err("network.nodes", "topology \"custom\" needs a `nodes` list".into()))?;
            let links_raw = net.links.as_ref().ok_or_else(|| err("network.links", "topology \"custom\" needs a `links` list".into()))?;
            let mut nodes = Vec::new();
            for (i, n) in nodes_raw.iter().enumerate() {
                let kind = match n.kind.as_str() {
                    "host" => NodeKind::Host,
                    "switch" => NodeKind::Switch,
                    other => return Err(err(&format!("network.nodes[{i}].kind"), format!("expected \"host\" or \"switch\", got \"{other}\""))),
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
        _ => unreachable!("checked by topology_keys"),
    };
    let topology = Topology::build(&kind, host).map_err(|m| {
        if m.starts_with("links[") {
            let (k, rest) = m.split_once(": ").unwrap_or((&m, ""));
            err(&format!("network.{k}"), rest.to_string())
        } else {
            err("network", m)
        }
    })?;
    if topology.nodes.len() > 1_000_000 {
        return Err(err("network", format!("{} nodes is more than this simulator supports (1,000,000)", topology.nodes.len())));
    }
    if topo_name == "custom" {
        for (i, n) in topology.nodes.iter().enumerate() {
            if !topology.links.iter().any(|l| l.a == i || l.b == i) {
                return Err(err("network.links", format!("node \"{}\" has no link", n.name)));
            }
        }
    }

    // --- queues ---
    let queue_name = net.queue.as_deref().unwrap_or("droptail");
    let red_keys = [
        ("red_min_threshold", net.red_min_threshold.is_some()),
        ("red_max_threshold", net.red_max_threshold.is_some()),
        ("red_max_p", net.red_max_p.is_some()),
        ("red_weight", net.red_weight.is_some()),
        ("red_ecn", net.red_ecn.is_some()),
        ("red_gentle", net.red_gentle.is_some()),
    ];
    if queue_name != "red" {
        if let Some((k, _)) = red_keys.iter().find(|(_, p)| *p) {
            return Err(err(&format!("network.{k}"), format!("only used with queue = \"red\" (queue is \"{queue_name}\")")));
        }
    }
    if queue_name != "ecn" && net.ecn_threshold.is_some() {
        return Err(err("network.ecn_threshold", format!("only used with queue = \"ecn\" (queue is \"{queue_name}\")")));
    }
    let pkts = |b: Option<Buffer>, key: &str, default: f64| -> Result<f64, ScenarioError> {
        match b.map(|b| b.0) {
            None => Ok(default),
            Some(BufferLimit::Packets(n)) => Ok(n as f64),
            Some(_) => Err(err(&format!("network.{key}"), "RED thresholds are in packets, e.g. \"5pkt\"".into())),
        }
    };
    let switch_queue = match queue_name {
        "droptail" => QueueConfig::DropTail,
        "ecn" => {
            let threshold = net.ecn_threshold.map(|b| b.0).ok_or_else(|| {
                err("network.ecn_threshold", "queue = \"ecn\" needs `ecn_threshold` (the marking threshold K, e.g. \"20pkt\")".into())
            })?;
            QueueConfig::Ecn { threshold }
        }
        "red" => {
            let d = RedConfig::default();
            let cfg = RedConfig {
                min_threshold_pkts: pkts(net.red_min_threshold, "red_min_threshold", d.min_threshold_pkts)?,
                max_threshold_pkts: pkts(net.red_max_threshold, "red_max_threshold", d.max_threshold_pkts)?,
                max_p: net.red_max_p.unwrap_or(d.max_p),
                weight: net.red_weight.unwrap_or(d.weight),
                ecn: net.red_ecn.unwrap_or(false),
                gentle: net.red_gentle.unwrap_or(d.gentle),
            };
            if cfg.min_threshold_pkts >= cfg.max_threshold_pkts {
                return Err(err("network.red_max_threshold", "must be above red_min_threshold".into()));
            }
            if !(0.0..=1.0).contains(&cfg.max_p) {
                return Err(err("network.red_max_p", format!("must be a probability in [0, 1], got {}", cfg.max_p)));
            }
            if !(cfg.weight > 0.0 && cfg.weight <= 1.0) {
                return Err(err("network.red_weight", format!("must be in (0, 1], got {}", cfg.weight)));
            }
            QueueConfig::Red(cfg)
        }
        other => return Err(err("network.queue", format!("unknown queue \"{other}\" (known: droptail, ecn, red)"))),
    };

    // --- transport ---
    let t = &raw.transport;
    let d = TcpConfig::default();
    let mss = t.mss.map(|s| s.0).unwrap_or(d.mss_bytes as u64);
    if !(64..=65_000).contains(&mss) {
        return Err(err("transport.mss", format!("must be between 64B and 65000B, got {mss}B")));
    }
    let header = t.header_bytes.map(|s| s.0).unwrap_or(d.header_bytes as u64);
    if header > 1000 {
        return Err(err("transport.header_bytes", format!("must be at most 1000B, got {header}B")));
    }
    let tcp = TcpConfig {
        mss_bytes: mss as u32,
        header_bytes: header as u32,
        initial_cwnd_segments: t.initial_cwnd.unwrap_or(d.initial_cwnd_segments),
        min_rto: t.min_rto.map(|x| x.0).unwrap_or(d.min_rto),
        // Default initial RTO: five times the minimum (1 s with the 200 ms default, as in
        // RFC 6298 and Linux), so data-center settings of min_rto scale it too.
        initial_rto: t.initial_rto.map(|x| x.0).unwrap_or_else(|| match t.min_rto {
            Some(m) => m.0.mul(5),
            None => d.initial_rto,
        }),
        max_rto: t.max_rto.map(|x| x.0).unwrap_or(d.max_rto),
        delayed_ack: t.delayed_ack.unwrap_or(d.delayed_ack),
        delayed_ack_timeout: t.delayed_ack_timeout.map(|x| x.0).unwrap_or(d.delayed_ack_timeout),
        sack: t.sack.unwrap_or(d.sack),
        ecn: t.ecn.unwrap_or(d.ecn),
        handshake: t.handshake.unwrap_or(d.handshake),
        rwnd_bytes: t.rwnd.map(|x| x.0).unwrap_or(d.rwnd_bytes),
        dupthresh: t.dupthresh.unwrap_or(d.dupthresh),
    };
    if tcp.initial_cwnd_segments == 0 {
        return Err(err("transport.initial_cwnd", "must be at least 1 segment".into()));
    }
    if tcp.min_rto == Nanos::ZERO {
        return Err(err("transport.min_rto", "must be positive".into()));
    }
    if tcp.initial_rto < tcp.min_rto {
        return Err(err("transport.initial_rto", format!("must not be below min_rto ({})", tcp.min_rto)));
    }
    if tcp.max_rto < tcp.min_rto {
        return Err(err("transport.max_rto", "must not be below min_rto".into()));
    }
    if tcp.rwnd_bytes < mss {
        return Err(err("transport.rwnd", format!("must be at least one segment ({mss}B)")));
    }
    if tcp.dupthresh == 0 {
        return Err(err("transport.dupthresh", "must be at least 1".into()));
    }
    let all_cc_keys = cc::all_keys();
    for k in t.extra.keys() {
        if !all_cc_keys.contains(&k.as_str()) {
            let mut known: Vec<&str> = TRANSPORT_KEYS.to_vec();
            known.extend(all_cc_keys.iter());
            return Err(err(&format!("transport.{k}"), format!("unknown key (known: {})", known.join(", "))));
        }
    }
    let default_protocol = t.protocol.clone().unwrap_or_else(|| "tcp".into());
    cc::lookup(&default_protocol).map_err(|m| err("transport.protocol", m))?;

    // --- flows ---
    let stop_time = raw.stop_time.map(|d| d.0);
    let mut ctx = FlowCtx {
        file: file.to_string(),
        topology: &topology,
        tcp,
        transport_extra: &t.extra,
        default_protocol,
        groups: Vec::new(),
        stop_time,
    };
    let mut flows = Vec::with_capacity(raw.flows.len());
    let mut afters: Vec<(usize, String)> = Vec::new();
    for (i, f) in raw.flows.iter().enumerate() {
        let key = |k: &str| format!("flows[{i}].{k}");
        let src = ctx.host(&f.src, &key("src"))?;
        let dst = ctx.host(&f.dst, &key("dst"))?;
        if src == dst {
            return Err(err(&key("dst"), format!("a flow from \"{}\" to itself", f.src)));
        }
        if let Some(s) = f.size {
            if s.0 == 0 {
                return Err(err(&key("size"), "must be positive (omit `size` for a long-lived flow)".into()));
            }
        }
        let (ccfg, ecn) = ctx.protocol(f.protocol.as_deref(), f.ecn, &f.extra, &format!("flows[{i}]"), FLOW_KEYS)?;
        if f.size.is_none() && stop_time.is_none() {
            return Err(err(&key("size"), "a long-lived flow (no `size`) needs a top-level `stop_time`".into()));
        }
        let group = f.group.clone().unwrap_or_default();
        let group_id = ctx.group(&group);
        if let Some(a) = &f.after {
            afters.push((i, a.clone()));
        }
        flows.push(FlowSpec {
            src,
            dst,
            size_bytes: f.size.map(|s| s.0),
            start: f.start.map(|d| d.0).unwrap_or(Nanos::ZERO),
            deadline: f.deadline.map(|d| d.0),
            tag: f.tag.clone().unwrap_or_default(),
            group,
            group_id,
            after: None,
            cc: ccfg,
            ecn,
        });
    }
    for (i, w) in raw.workloads.iter().enumerate() {
        let generated = crate::workloads::generate(w, i, &mut ctx, raw.seed.unwrap_or(1))?;
        flows.extend(generated);
    }
    // `after` on explicit flows names a group that some flow belongs to.
    for (i, a) in afters {
        let g = ctx.groups.iter().position(|g| g == &a).filter(|&g| flows.iter().any(|f| f.group_id == Some(g as u32)));
        let Some(g) = g else {
            return Err(err(&format!("flows[{i}].after"), format!("no flow belongs to group \"{a}\"")));
        };
        if flows[i].group_id == Some(g as u32) {
            return Err(err(&format!("flows[{i}].after"), format!("a flow cannot wait for its own group \"{a}\"")));
        }
        flows[i].after = Some(g as u32);
    }
    check_no_cycles(&flows, &ctx.groups).map_err(|m| err("flows", m))?;
    let groups = std::mem::take(&mut ctx.groups);

    // --- monitor ---
    let cwnd_flows = match &raw.monitor.cwnd_flows {
        None => None,
        Some(toml::Value::String(s)) if s == "all" => None,
        Some(toml::Value::Array(a)) => {
            let mut ids = Vec::with_capacity(a.len());
            for (i, v) in a.iter().enumerate() {
                match v.as_integer() {
                    Some(id) if id >= 0 && (id as usize) < flows.len() => ids.push(id as u64),
                    _ => {
                        return Err(err(&format!("monitor.cwnd_flows[{i}]"), format!("expected a flow id between 0 and {}, got {v}", flows.len().saturating_sub(1))))
                    }
                }
            }
            Some(ids)
        }
        Some(other) => return Err(err("monitor.cwnd_flows", format!("expected a list of flow ids or \"all\", got {other}"))),
    };
    if raw.monitor.cwnd_flows.is_some() && raw.monitor.cwnd_interval.is_none() {
        return Err(err("monitor.cwnd_flows", "needs `cwnd_interval` (how often to sample)".into()));
    }
    if raw.monitor.cwnd_interval.is_some_and(|d| d.0 == Nanos::ZERO) {
        return Err(err("monitor.cwnd_interval", "must be positive".into()));
    }
    let monitor = MonitorConfig {
        cwnd_interval: raw.monitor.cwnd_interval.map(|d| d.0),
        cwnd_flows,
        queue_interval: raw.monitor.queue_interval.map(|d| d.0),
        queues: raw.monitor.queues.clone().unwrap_or_default(),
    };
    if monitor.queue_interval == Some(Nanos::ZERO) {
        return Err(err("monitor.queue_interval", "must be positive".into()));
    }
    if !monitor.queues.is_empty() && monitor.queue_interval.is_none() {
        return Err(err("monitor.queues", "needs `queue_interval` (how often to sample)".into()));
    }
    for (i, q) in monitor.queues.iter().enumerate() {
        if q == "all" {
            continue;
        }
        let ok = q.split_once("->").is_some_and(|(a, b)| {
            let (a, b) = (topology.find(a.trim()), topology.find(b.trim()));
            matches!((a, b), (Some(a), Some(b)) if topology.links.iter().any(|l| (l.a == a && l.b == b) || (l.a == b && l.b == a)))
        });
        if !ok {
            return Err(err(&format!("monitor.queues[{i}]"), format!("\"{q}\" is not a link; write \"a->b\" with two adjacent node names, or \"all\"")));
        }
    }
    let _ = &raw.description;
    Ok(Scenario {
        file: file.to_string(),
        name: raw.name.clone().unwrap_or_else(|| {
            let base = file.rsplit('/').next().unwrap_or(file);
            base.strip_suffix(".toml").or_else(|| base.strip_suffix(".json")).unwrap_or(base).to_string()
        }),
        seed: raw.seed.unwrap_or(1),
        stop_time,
        topology,
        switch_queue,
        nic_buffer: net.nic_buffer.map(|b| b.0).unwrap_or(buffer),
        tcp,
        flows,
        groups,
        monitor,
        sha256,
    })
}

/// Group dependencies (`after`) must not form a cycle, or the flows would never start.
fn check_no_cycles(flows: &[FlowSpec], groups: &[String]) -> Result<(), String> {
    let n = groups.len();
    let mut edges: Vec<Vec<usize>> = vec![Vec::new(); n];
    for f in flows {
        if let (Some(g), Some(a)) = (f.group_id, f.after) {
            edges[a as usize].push(g as usize);
        }
    }
    // 0 = unseen, 1 = on stack, 2 = done
    let mut state = vec![0u8; n];
    for start in 0..n {
        if state[start] != 0 {
            continue;
        }
        let mut stack = vec![(start, 0usize)];
        state[start] = 1;
        while let Some(&mut (v, ref mut i)) = stack.last_mut() {
            if *i < edges[v].len() {
                let w = edges[v][*i];
                *i += 1;
                match state[w] {
                    0 => {
                        state[w] = 1;
                        stack.push((w, 0));
                    }
                    1 => return Err(format!("groups wait for each other in a cycle (through \"{}\")", groups[w])),
                    _ => {}
                }
            } else {
                state[v] = 2;
                stack.pop();
            }
        }
    }
    Ok(())
}

/// What flow construction needs from the rest of the scenario: host names, protocol
/// defaults, and the group names seen so far.
pub(crate) struct FlowCtx<'a> {
    pub file: String,
    pub topology: &'a Topology,
    pub tcp: TcpConfig,
    pub transport_extra: &'a BTreeMap<String, toml::Value>,
    pub default_protocol: String,
    pub groups: Vec<String>,
    pub stop_time: Option<Nanos>,
}

impl FlowCtx<'_> {
    pub fn err(&self, key: &str, message: impl Into<String>) -> ScenarioError {
        ScenarioError { file: self.file.clone(), key: key.to_string(), message: message.into() }
    }

    pub fn host_list(&self) -> String {
        let names: Vec<&str> = self.topology.nodes.iter().filter(|n| n.kind == NodeKind::Host).map(|n| n.name.as_str()).collect();
        if names.len() <= 6 {
            names.join(", ")
        } else {
            format!("{}, {}, {}, ..., {} ({} hosts)", names[0], names[1], names[2], names[names.len() - 1], names.len())
        }
    }

    /// The node index of host `name`; `key` names the scenario key for errors.
    pub fn host(&self, name: &str, key: &str) -> Result<usize, ScenarioError> {
        match self.topology.find(name) {
            Some(idx) if self.topology.nodes[idx].kind == NodeKind::Host => Ok(idx),
            Some(_) => Err(self.err(key, format!("\"{name}\" is a switch, not a host (hosts: {})", self.host_list()))),
            None => Err(self.err(key, format!("unknown host \"{name}\" (hosts of this {}: {})", self.topology.kind, self.host_list()))),
        }
    }

    /// Interns a group name ("" is no group).
    pub fn group(&mut self, name: &str) -> Option<u32> {
        if name.is_empty() {
            return None;
        }
        if let Some(i) = self.groups.iter().position(|g| g == name) {
            return Some(i as u32);
        }
        self.groups.push(name.to_string());
        Some(self.groups.len() as u32 - 1)
    }

    /// Resolves a protocol and its parameters: `[transport]` values first, then `extra` (the
    /// entry's own keys that are not in `own_keys`). Returns the configuration and whether
    /// data packets are ECN-capable.
    pub fn protocol(
        &self,
        protocol: Option<&str>,
        ecn: Option<bool>,
        extra: &BTreeMap<String, toml::Value>,
        prefix: &str,
        own_keys: &[&str],
    ) -> Result<(fctlab_transport::CcConfig, bool), ScenarioError> {
        let protocol = protocol.unwrap_or(&self.default_protocol);
        let reg = cc::lookup(protocol).map_err(|m| self.err(&format!("{prefix}.protocol"), m))?;
        let proto_keys = (reg.keys)();
        let mut params = toml::Table::new();
        for (k, v) in self.transport_extra {
            if proto_keys.contains(&k.as_str()) {
                params.insert(k.clone(), v.clone());
            }
        }
        for (k, v) in extra {
            if !proto_keys.contains(&k.as_str()) {
                let mut known: Vec<&str> = own_keys.to_vec();
                known.extend(proto_keys.iter());
                return Err(self.err(&format!("{prefix}.{k}"), format!("unknown key (with protocol \"{protocol}\" the keys here are: {})", known.join(", "))));
            }
            params.insert(k.clone(), v.clone());
        }
        let ccfg = reg.configure(params).map_err(|e| match e.key {
            Some(k) => self.err(&format!("{prefix}.{k}"), clean_serde_message(&e.message)),
            None => self.err(prefix, e.message),
        })?;
        let ecn = ecn.unwrap_or(self.tcp.ecn) || ccfg.requires_ecn();
        Ok((ccfg, ecn))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load_str(s: &str) -> Result<crate::Scenario, ScenarioError> {
        load(s, "t.toml", Format::Toml, &[])
    }

    const OK: &str = r#"
name = "x"
seed = 3
[network]
topology = "dumbbell"
senders = 2
receivers = 2
link_rate = "1Gbps"
link_delay = "25us"
buffer = "100pkt"
[transport]
min_rto = "10ms"
[[flows]]
src = "s0"
dst = "r1"
size = "10MB"
start = "1ms"
"#;

    #[test]
    fn loads_a_dumbbell() {
        let s = load_str(OK).unwrap();
        assert_eq!(s.seed, 3);
        assert_eq!(s.flows.len(), 1);
        assert_eq!(s.flows[0].size_bytes, Some(10_000_000));
        assert_eq!(s.flows[0].start, Nanos::from_millis(1));
        assert_eq!(s.tcp.min_rto, Nanos::from_millis(10));
        assert_eq!(s.sha256.len(), 64);
    }

    #[test]
    fn errors_name_key_and_expectation() {
        let e = load_str(&OK.replace("link_rate", "link_rat")).unwrap_err();
        assert_eq!(e.key, "network.link_rat");
        assert!(e.message.contains("unknown key `link_rat`"), "{e}");
        let e = load_str(&OK.replace("\"1Gbps\"", "\"1Gbs\"")).unwrap_err();
        assert_eq!(e.key, "network.link_rate");
        assert!(e.message.contains("expected a rate"), "{e}");
        let e = load_str(&OK.replace("\"10MB\"", "\"-10MB\"")).unwrap_err();
        assert_eq!(e.key, "flows[0].size");
        let e = load_str(&OK.replace("\"r1\"", "\"r9\"")).unwrap_err();
        assert_eq!(e.key, "flows[0].dst");
        assert!(e.message.contains("unknown host \"r9\""), "{e}");
        let e = load_str(&OK.replace("size = ", "sise = ")).unwrap_err();
        assert_eq!(e.key, "flows[0].sise");
        let e = load_str(&OK.replace("senders = 2", "senders = 2\nhosts = 4")).unwrap_err();
        assert_eq!(e.key, "network.hosts");
        assert!(e.to_string().starts_with("t.toml: network.hosts: not used by topology \"dumbbell\""), "{e}");
        let e = load_str("[network\n").unwrap_err();
        assert!(e.message.contains("line 1"), "{e}");
    }

    #[test]
    fn overrides_apply() {
        let s = load(OK, "t.toml", Format::Toml, &["network.link_rate=10Gbps".into(), "flows.0.size=\"1MB\"".into(), "seed=9".into()]).unwrap();
        assert_eq!(s.seed, 9);
        assert_eq!(s.flows[0].size_bytes, Some(1_000_000));
        let e = load(OK, "t.toml", Format::Toml, &["flows.3.size=1".into()]).unwrap_err();
        assert!(e.message.contains("out of range"), "{e}");
    }

    #[test]
    fn long_lived_needs_stop_time() {
        let e = load_str(&OK.replace("size = \"10MB\"", "")).unwrap_err();
        assert_eq!(e.key, "flows[0].size");
        let s = load_str(&format!("stop_time = \"1s\"\n{}", OK.replace("size = \"10MB\"", ""))).unwrap();
        assert_eq!(s.flows[0].size_bytes, None);
    }

    #[test]
    fn json_input() {
        let j = r#"{"network": {"topology": "star", "hosts": 3}, "flows": [{"src": "h0", "dst": "h2", "size": "1MB"}]}"#;
        let s = load(j, "<dict>", Format::Json, &[]).unwrap();
        assert_eq!(s.topology.kind, "star");
        assert_eq!(s.flows[0].dst, s.topology.find("h2").unwrap());
    }
}
