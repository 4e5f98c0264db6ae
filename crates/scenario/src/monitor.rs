//! The `[monitor]` table: which queues and congestion windows to sample, and how often; the
//! drop trace; packet captures.

use crate::tables::At;
use crate::units::Duration;
use crate::{MonitorConfig, PcapConfig, ScenarioError};
use fctlab_engine::Nanos;
use fctlab_net::Topology;
use serde::Deserialize;

#[derive(Deserialize, Debug, Default)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawMonitor {
    cwnd_interval: Option<Duration>,
    cwnd_flows: Option<toml::Value>,
    queue_interval: Option<Duration>,
    queues: Option<Vec<String>>,
    drops: Option<bool>,
    pcap: Option<Vec<String>>,
    pcap_from: Option<Duration>,
    pcap_until: Option<Duration>,
    pcap_max_packets: Option<i64>,
}

/// The keys of `[monitor]`.
pub(crate) fn keys() -> &'static [&'static str] {
    crate::tables::fields_of::<RawMonitor>()
}

/// Packets a capture keeps at most unless `pcap_max_packets` says otherwise.
pub const DEFAULT_PCAP_MAX_PACKETS: u64 = 100_000;
/// The most `pcap_max_packets` may be (about 15 GB of memory held by the capture).
const MAX_PCAP_PACKETS: i64 = 100_000_000;

/// Validates `[monitor]` against the topology and the number of flows.
pub(crate) fn build(
    m: &RawMonitor,
    file: &str,
    topology: &Topology,
    nflows: usize,
) -> Result<MonitorConfig, ScenarioError> {
    let at = At { file, prefix: "monitor" };
    let cwnd_flows = match &m.cwnd_flows {
        None => None,
        Some(toml::Value::String(s)) if s == "all" => None,
        Some(toml::Value::Array(a)) => {
            let mut ids = Vec::with_capacity(a.len());
            for (i, v) in a.iter().enumerate() {
                match v.as_integer() {
                    Some(id) if id >= 0 && (id as usize) < nflows => ids.push(id as u64),
                    _ => {
                        return Err(at.err(
                            &format!("cwnd_flows[{i}]"),
                            format!("expected a flow id between 0 and {}, got {v}", nflows.saturating_sub(1)),
                        ))
                    }
                }
            }
            Some(ids)
        }
        Some(other) => return Err(at.err("cwnd_flows", format!("expected a list of flow ids or \"all\", got {other}"))),
    };
    if m.cwnd_flows.is_some() && m.cwnd_interval.is_none() {
        return Err(at.err("cwnd_flows", "needs `cwnd_interval` (how often to sample)"));
    }
    if m.cwnd_interval.is_some_and(|d| d.0 == Nanos::ZERO) {
        return Err(at.err("cwnd_interval", "must be positive"));
    }
    let monitor = MonitorConfig {
        cwnd_interval: m.cwnd_interval.map(|d| d.0),
        cwnd_flows,
        queue_interval: m.queue_interval.map(|d| d.0),
        queues: m.queues.clone().unwrap_or_default(),
        drops: m.drops.unwrap_or(false),
        pcap: pcap(m, &at, topology)?,
    };
    if monitor.queue_interval == Some(Nanos::ZERO) {
        return Err(at.err("queue_interval", "must be positive"));
    }
    if !monitor.queues.is_empty() && monitor.queue_interval.is_none() {
        return Err(at.err("queues", "needs `queue_interval` (how often to sample)"));
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
            return Err(at.err(
                &format!("queues[{i}]"),
                format!("\"{q}\" is not a link; write \"a->b\" with two adjacent node names, or \"all\""),
            ));
        }
    }
    Ok(monitor)
}

/// `pcap`, `pcap_from`, `pcap_until`, `pcap_max_packets`: what to capture, checked against
/// the topology.
fn pcap(m: &RawMonitor, at: &At, topology: &Topology) -> Result<Option<PcapConfig>, ScenarioError> {
    let Some(points) = &m.pcap else {
        for (key, set) in [
            ("pcap_from", m.pcap_from.is_some()),
            ("pcap_until", m.pcap_until.is_some()),
            ("pcap_max_packets", m.pcap_max_packets.is_some()),
        ] {
            if set {
                return Err(at.err(key, "needs `pcap` (the hosts or links to capture)"));
            }
        }
        return Ok(None);
    };
    let mut seen = Vec::new();
    for (i, p) in points.iter().enumerate() {
        let key = format!("pcap[{i}]");
        if let Some((a, b)) = p.split_once("->") {
            let (a, b) = (topology.find(a.trim()), topology.find(b.trim()));
            let adjacent = matches!((a, b), (Some(a), Some(b))
                if topology.links.iter().any(|l| (l.a == a && l.b == b) || (l.a == b && l.b == a)));
            if !adjacent {
                return Err(at.err(&key, format!("\"{p}\" is not a link; write \"a->b\" with two adjacent node names")));
            }
        } else {
            match topology.find(p.trim()) {
                Some(n) if topology.nodes[n].kind == fctlab_net::NodeKind::Host => {}
                Some(_) => {
                    return Err(at
                        .err(&key, format!("\"{p}\" is a switch; capture one of its links (\"{p}->NEXT\") or a host")))
                }
                None => return Err(at.err(&key, format!("\"{p}\" is neither a host nor a link \"a->b\""))),
            }
        }
        if seen.contains(&p.trim()) {
            return Err(at.err(&key, format!("\"{p}\" is listed twice")));
        }
        seen.push(p.trim());
    }
    let from = m.pcap_from.map_or(Nanos::ZERO, |d| d.0);
    let until = m.pcap_until.map(|d| d.0);
    if until.is_some_and(|u| u <= from) {
        return Err(at.err("pcap_until", "must be after `pcap_from`"));
    }
    let max_packets = match m.pcap_max_packets {
        None => DEFAULT_PCAP_MAX_PACKETS,
        Some(n) if (1..=MAX_PCAP_PACKETS).contains(&n) => n as u64,
        Some(n) => return Err(at.err("pcap_max_packets", format!("expected 1 to {MAX_PCAP_PACKETS}, got {n}"))),
    };
    Ok(Some(PcapConfig { points: points.iter().map(|p| p.trim().to_string()).collect(), from, until, max_packets }))
}
