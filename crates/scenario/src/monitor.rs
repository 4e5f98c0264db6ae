//! The `[monitor]` table: which queues and congestion windows to sample, and how often.

use crate::tables::At;
use crate::units::Duration;
use crate::{MonitorConfig, ScenarioError};
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
}

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
