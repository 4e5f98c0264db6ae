//! The `[network]` table: the keys every topology takes (link rates, delays and buffers, the
//! queue disciplines), then the topology's own keys, read and built by its kind in
//! `fctlab_net::topology` (one file each, found here through its registry by
//! `topology = "..."`), and the switch queue discipline's keys, read by the discipline.

use crate::tables::{de, split, tag, At};
use crate::units::{Buffer, Duration, Rate};
use crate::ScenarioError;
use fctlab_engine::{BitsPerSec, Nanos};
use fctlab_net::qdisc::{self, KeyError};
use fctlab_net::topology::{self, LinkParams, Links, Size};
use fctlab_net::{BufferLimit, BufferModel, QueueConfig, Topology};
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
    /// Priority flow control: lossless switches and NICs (docs/lossless.md).
    pfc: Option<bool>,
    pfc_xoff: Option<crate::units::Size>,
    pfc_xon: Option<crate::units::Size>,
    pfc_headroom: Option<crate::units::Size>,
    /// A buffer shared by each switch's output queues (docs/lossless.md).
    switch_buffer: Option<crate::units::Size>,
    buffer_alpha: Option<f64>,
    pfc_alpha: Option<f64>,
    /// Path selection: per-flow ECMP or a per-packet policy (docs/load_balancing.md).
    load_balancing: Option<String>,
    flowlet_gap: Option<Duration>,
}

/// The network of a scenario: the built topology, the switch and NIC queue disciplines, the NIC
/// buffer and what a buffer holds.
pub(crate) struct Network {
    pub topology: Topology,
    pub switch_queue: QueueConfig,
    pub nic_queue: QueueConfig,
    pub nic_buffer: BufferLimit,
    pub buffer_model: BufferModel,
    pub pfc: Option<crate::PfcConfig>,
    pub shared_buffer: Option<crate::SharedBuffer>,
    pub balance: fctlab_net::balance::Balance,
}

/// Nodes and links a topology is limited to: what one run can hold, checked from the sizes
/// before anything is built, so that a mistyped size is refused at once.
pub const MAX_NODES: u64 = 1_000_000;
pub const MAX_LINKS: u64 = 4_000_000;
/// Routing keeps, while the run is built, the ports towards every destination host from every
/// node: nodes × hosts entries of about 8 bytes each, at most this many (1.6 GB).
pub const MAX_ROUTE_ENTRIES: u64 = 200_000_000;

use crate::limits::digits;

/// Refuses a topology whose sizes give more than [`MAX_NODES`] nodes, [`MAX_LINKS`] links or
/// [`MAX_ROUTE_ENTRIES`] routing entries (one per node and destination host), naming the
/// largest of its size keys, before any of it is allocated.
fn check_size(size: &Size, err: &dyn Fn(&str, String) -> ScenarioError) -> Result<(), ScenarioError> {
    let Size { nodes, hosts, links, formula, keys } = size;
    let (nodes, hosts, links) = (*nodes, *hosts, *links);
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
    let entries = nodes * hosts;
    crate::limits::check_memory(
        entries * crate::limits::BYTES_PER_ROUTE_ENTRY as u128,
        &format!("{} nodes × {} hosts = {} routing entries", digits(nodes), digits(hosts), digits(entries)),
        "a smaller topology",
    )
    .map_err(|m| err(key, m))?;
    Ok(())
}

/// Reads and builds `[network]`.
pub(crate) fn build(mut table: toml::Table, file: &str) -> Result<Network, ScenarioError> {
    let at = At { file, prefix: "network" };
    let err = |key: &str, m: String| at.err(key, m);
    let topo_name = tag(&table, "topology", at)?;
    table.remove("topology");
    let kind = topology::lookup(&topo_name).ok_or_else(|| {
        let known: Vec<&str> = topology::REGISTRY.iter().map(|r| r.name).collect();
        err("topology", format!("unknown topology \"{topo_name}\" (known: {})", known.join(", ")))
    })?;
    let own = kind.keys();
    let common_keys = crate::tables::fields_of::<Common>();
    let (common, rest) = split(table, common_keys);
    // Each queue discipline's keys (`ecn_threshold`, `red_*`, ...) go to the discipline.
    let queue_keys: Vec<&'static str> = qdisc::REGISTRY.iter().flat_map(|r| r.keys.iter().copied()).collect();
    let (queue_table, rest) = split(rest, &queue_keys);
    let (specific, unknown) = split(rest, own);
    if let Some(k) = unknown.keys().next() {
        if topology::kind_taking(k, &topo_name).is_some() {
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
    let links = links(&net);
    let key_err = |e: KeyError| {
        let key = if e.key == "." { "" } else { e.key.as_str() };
        at.err(key, crate::tables::clean_serde_message(&e.message))
    };
    let config = kind.configure(specific, &links).map_err(key_err)?;
    check_size(&config.size(), &err)?;
    let topology = config.build(&links).map_err(|e| err(&e.key, e.message))?;
    if topology.nodes.len() as u64 > MAX_NODES {
        let n = topology.nodes.len() as u128;
        return Err(err(
            "",
            format!("{} nodes is more than this simulator supports ({})", digits(n), digits(MAX_NODES as u128)),
        ));
    }
    let switch_queue = queue(net.queue.as_deref().unwrap_or("droptail"), queue_table, at)?;
    let nic_queue = nic_queue(net.nic_queue.as_deref(), &switch_queue, at)?;
    let buffer_model = match net.buffer_model.as_deref().unwrap_or("waiting") {
        "waiting" => BufferModel::Waiting,
        "ns2" => BufferModel::Ns2,
        other => return Err(err("buffer_model", format!("expected \"waiting\" or \"ns2\", got \"{other}\""))),
    };
    let pfc = pfc(&net, &switch_queue, &nic_queue, buffer_model, &err)?;
    let shared_buffer = shared_buffer(&net, &switch_queue, buffer_model, &err)?;
    let balance = fctlab_net::balance::Balance::from_name(
        net.load_balancing.as_deref().unwrap_or("ecmp"),
        net.flowlet_gap.map(|d| d.0),
    )
    .map_err(key_err)?;
    Ok(Network {
        topology,
        switch_queue,
        nic_queue,
        nic_buffer: net.nic_buffer.map(|b| b.0).unwrap_or(links.default.buffer),
        buffer_model,
        pfc,
        shared_buffer,
        balance,
    })
}

/// `switch_buffer` and its dynamic thresholds, checked against the disciplines they run over.
fn shared_buffer(
    net: &Common,
    switch_queue: &QueueConfig,
    model: BufferModel,
    err: &dyn Fn(&str, String) -> ScenarioError,
) -> Result<Option<crate::SharedBuffer>, ScenarioError> {
    let Some(size) = net.switch_buffer else {
        for (k, given) in [("buffer_alpha", net.buffer_alpha.is_some()), ("pfc_alpha", net.pfc_alpha.is_some())] {
            if given {
                return Err(err(k, "applies with switch_buffer only (a buffer each switch shares)".into()));
            }
        }
        return Ok(None);
    };
    if size.0 == 0 {
        return Err(err("switch_buffer", "must be above 0B".into()));
    }
    for (k, v) in [("buffer_alpha", net.buffer_alpha), ("pfc_alpha", net.pfc_alpha)] {
        if let Some(a) = v {
            if !(a > 0.0 && a.is_finite()) {
                return Err(err(k, format!("must be a positive number, got {a}")));
            }
        }
    }
    let pfc = net.pfc == Some(true);
    if net.pfc_alpha.is_some() && !pfc {
        return Err(err("pfc_alpha", "applies with pfc = true only".into()));
    }
    if net.buffer_alpha.is_some() && pfc {
        return Err(err(
            "buffer_alpha",
            "a lossless switch admits by its inputs' pause thresholds (pfc_alpha), not by its output queues'".into(),
        ));
    }
    if pfc {
        for k in ["pfc_xoff", "pfc_xon"] {
            let given = if k == "pfc_xoff" { net.pfc_xoff.is_some() } else { net.pfc_xon.is_some() };
            if given {
                return Err(err(
                    k,
                    "with switch_buffer the pause thresholds follow the shared buffer's free space (pfc_alpha)".into(),
                ));
            }
        }
    }
    if switch_queue.ordered() {
        return Err(err(
            "queue",
            format!(
                "switch_buffer runs over first-in-first-out queues (droptail, ecn, red); \"{}\" orders packets itself",
                switch_queue.name()
            ),
        ));
    }
    if model == BufferModel::Ns2 {
        return Err(err(
            "buffer_model",
            "switch_buffer counts buffers its own way; use buffer_model = \"waiting\"".into(),
        ));
    }
    Ok(Some(crate::SharedBuffer { bytes: size.0, alpha: net.buffer_alpha.unwrap_or(1.0), pfc_alpha: net.pfc_alpha }))
}

/// `pfc = true` and its thresholds, checked against the disciplines they run over.
fn pfc(
    net: &Common,
    switch_queue: &QueueConfig,
    nic_queue: &QueueConfig,
    model: BufferModel,
    err: &dyn Fn(&str, String) -> ScenarioError,
) -> Result<Option<crate::PfcConfig>, ScenarioError> {
    let given = [("pfc_xoff", net.pfc_xoff), ("pfc_xon", net.pfc_xon), ("pfc_headroom", net.pfc_headroom)];
    if net.pfc != Some(true) {
        if let Some((k, _)) = given.iter().find(|(_, v)| v.is_some()) {
            return Err(err(k, "applies with pfc = true only".into()));
        }
        return Ok(None);
    }
    for (key, q) in [("queue", switch_queue), ("nic_queue", nic_queue)] {
        if let QueueConfig::StrictPriority(c) = q {
            // The bands become the eight priorities; what acts on a band's own holding does not
            // apply to lossless queues.
            let refused = [
                ("priority_band_buffer", c.band_buffer.is_some()),
                ("priority_pushout", c.pushout),
                ("priority_ecn_threshold", c.ecn_threshold.is_some() && !c.ecn_per_port),
            ];
            if let Some((k, _)) = refused.iter().find(|(_, on)| *on) {
                return Err(err(
                    k,
                    "with pfc = true a lossless port holds each priority's packets itself: no band buffer, no \
                     push-out, and ECN marks per port (priority_ecn_per_port = true)"
                        .into(),
                ));
            }
        } else if q.ordered() {
            return Err(err(
                key,
                format!(
                    "pfc = true runs over first-in-first-out queues (droptail, ecn, red) and strict priority; \
                     \"{}\" orders packets itself and is not made lossless yet",
                    q.name()
                ),
            ));
        }
    }
    if model == BufferModel::Ns2 {
        return Err(err(
            "buffer_model",
            "pfc = true counts buffers its own way; use buffer_model = \"waiting\"".into(),
        ));
    }
    let (xoff, xon) = (net.pfc_xoff.map(|s| s.0), net.pfc_xon.map(|s| s.0));
    if let (Some(off), Some(on)) = (xoff, xon) {
        if on > off {
            return Err(err("pfc_xon", format!("must not be above pfc_xoff ({off}B), got {on}B")));
        }
    }
    Ok(Some(crate::PfcConfig { xoff, xon, headroom: net.pfc_headroom.map(|s| s.0) }))
}

/// The discipline of host NICs (`nic_queue`): DropTail, the switches' (`"switch"`, the default
/// of a discipline that runs at NICs too), or another one with its default parameters.
fn nic_queue(name: Option<&str>, switch_queue: &QueueConfig, at: At<'_>) -> Result<QueueConfig, ScenarioError> {
    let at_nics = qdisc::lookup(switch_queue.name()).is_ok_and(|r| r.at_nics);
    let mut q = match name.unwrap_or(if at_nics { "switch" } else { "droptail" }) {
        "droptail" => QueueConfig::DropTail(()),
        "switch" => switch_queue.clone(),
        // Another discipline, with its default parameters (`"pfabric"`: the most urgent flow
        // first, as a Homa sender sends its messages).
        other => match qdisc::lookup(other) {
            Ok(reg) => reg.configure(toml::Table::new()).map_err(|e| at.err("nic_queue", e.message))?,
            Err(_) => {
                return Err(at.err(
                    "nic_queue",
                    format!("expected \"droptail\", \"switch\" or a queue discipline's name, got \"{other}\""),
                ))
            }
        },
    };
    // A NIC holds its own host's packets: under trimming it keeps the two bands (control
    // first) but never cuts its host's data.
    if let QueueConfig::Trim(c) = &mut q {
        c.threshold = BufferLimit::Unlimited;
        c.ecn_threshold = None;
    }
    Ok(q)
}

/// The parameters every topology's links start from: those of host links and the defaults of
/// the others (1 Gbps, 10 us, and 100 packets or the buffer the queue discipline is designed
/// around).
fn links(net: &Common) -> Links {
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
    Links { host, default: LinkParams { rate, delay, buffer } }
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
