//! The plan: a scenario as every engine runs it, resolved once (defaults, profile, overrides,
//! workloads drawn with the scenario's seed) and written as JSON. The simulator runs the
//! [`Scenario`] itself; ns-2, htsim, ns-3, the namespace testbed and the socket scheduler read
//! this plan (`python/fctlab/plan.py`), so they start the same flows on the same network.
//! docs/plan.md lists its fields.
//!
//! Times are integer nanoseconds (`_ns`), rates bits per second, sizes bytes; buffers are
//! `["pkts", n]`, `["bytes", n]` or null (unlimited).

use fctlab_net::NodeKind;
use fctlab_transport::config::Exported;
use serde::Serialize;
use serde_json::{Map, Value};

use crate::Scenario;

/// Bumped when a field changes meaning or goes; readers refuse another version.
pub const PLAN_VERSION: u32 = 1;

#[derive(Serialize)]
struct Plan<'a> {
    plan_version: u32,
    name: &'a str,
    file: &'a str,
    scenario_sha256: &'a str,
    seed: u64,
    stop_time_ns: Option<u64>,
    topology: &'a str,
    nodes: Vec<Node<'a>>,
    /// One per link direction: the output port of `src` toward `dst`.
    ports: Vec<Port<'a>>,
    buffer_model: &'static str,
    transport: Map<String, Value>,
    scheduler: Option<Value>,
    monitor: Value,
    groups: Vec<&'a str>,
    /// Protocol parameters the scenario left out and how they were filled in, one sentence each.
    derived: &'a [String],
    /// Priority flow control: `{"xoff": B, "xon": B, "headroom": B}` as given (null: from each
    /// link), or null for a lossy network.
    pfc: Value,
    switch_buffer: Value,
    /// Per-packet path choice: `{"policy": name}` (and `"flowlet_gap_ns"` for flowlets), or
    /// null for per-flow ECMP.
    load_balancing: Value,
    flows: Vec<Flow<'a>>,
}

#[derive(Serialize)]
struct Node<'a> {
    name: &'a str,
    kind: &'static str,
}

#[derive(Serialize)]
struct Port<'a> {
    src: &'a str,
    dst: &'a str,
    /// The index of the link in the topology (both directions share it).
    link: usize,
    rate_bps: u64,
    delay_ns: u64,
    buffer: Value,
    /// The discipline: `kind` and its parameters (`Discipline::describe`).
    queue: Value,
    /// The link's level (`"nic"` for a host's own port).
    level: &'static str,
    nic: bool,
}

#[derive(Serialize)]
struct Flow<'a> {
    flow_id: usize,
    src: &'a str,
    dst: &'a str,
    size_bytes: Option<u64>,
    start_ns: u64,
    deadline_ns: Option<u64>,
    tag: String,
    group: String,
    after: Option<&'a str>,
    protocol: &'static str,
    ecn: bool,
    /// The protocol's settings, every one resolved (its defaults included).
    params: Value,
}

fn exported(v: Exported) -> Value {
    match v {
        Exported::Bool(b) => b.into(),
        Exported::Int(n) => n.into(),
        Exported::Seconds(x) => x.into(),
        Exported::Name(n) => n.into(),
        Exported::Null => Value::Null,
    }
}

fn ports(sc: &Scenario) -> Vec<Port<'_>> {
    let topo = &sc.topology;
    let mut out = Vec::with_capacity(2 * topo.links.len());
    for (i, l) in topo.links.iter().enumerate() {
        for (a, b) in [(l.a, l.b), (l.b, l.a)] {
            let nic = topo.nodes[a].kind == NodeKind::Host;
            out.push(Port {
                src: &topo.nodes[a].name,
                dst: &topo.nodes[b].name,
                link: i,
                rate_bps: l.params.rate.0,
                delay_ns: l.params.delay.as_nanos(),
                buffer: if nic { sc.nic_buffer.to_json() } else { l.params.buffer.to_json() },
                queue: if nic { sc.nic_queue.describe() } else { sc.switch_queue.describe() },
                level: if nic { "nic" } else { l.level },
                nic,
            });
        }
    }
    out
}

fn scheduler(sc: &Scenario) -> Option<Value> {
    sc.scheduler.as_ref().map(|c| {
        let then = match c.policy {
            fctlab_sched::Policy::Priority(r) => r.name(),
            _ => "las",
        };
        serde_json::json!({
            "policy": c.policy.name(),
            "priority_then": then,
            "priority_tags": c.priority_tags,
            "send_buffer_bytes": c.send_buffer_bytes,
        })
    })
}

fn monitor(sc: &Scenario) -> Value {
    let m = &sc.monitor;
    serde_json::json!({
        "cwnd_interval_ns": m.cwnd_interval.map(|t| t.as_nanos()),
        "cwnd_flows": m.cwnd_flows,
        "queue_interval_ns": m.queue_interval.map(|t| t.as_nanos()),
        "drops": m.drops,
        "pcap": m.pcap.as_ref().map(|p| p.points.clone()),
    })
}

/// The plan of a validated scenario, as JSON text; with `flows` false its list of flows is
/// left empty (for what needs only the network and the transport: a million drawn flows take
/// seconds to list).
pub fn plan_json(sc: &Scenario, flows: bool) -> String {
    let topo = &sc.topology;
    let name = |i: usize| topo.nodes[i].name.as_str();
    let mut transport: Map<String, Value> = sc.tcp.export().into_iter().map(|(k, v)| (k, exported(v))).collect();
    transport.insert("profile".into(), sc.profile.name().into());
    let flows: Vec<Flow> = if !flows {
        Vec::new()
    } else {
        sc.flows
            .iter()
            .enumerate()
            .map(|(id, f)| Flow {
                flow_id: id,
                src: name(f.src),
                dst: name(f.dst),
                size_bytes: f.size_bytes,
                start_ns: f.start.as_nanos(),
                deadline_ns: f.deadline.map(|t| t.as_nanos()),
                tag: f.tag.to_string(),
                group: f.group.to_string(),
                after: f.after.map(|g| &*sc.groups[g as usize]),
                protocol: f.cc.name(),
                ecn: f.ecn,
                params: f.cc.params_json(),
            })
            .collect()
    };
    let plan = Plan {
        plan_version: PLAN_VERSION,
        name: &sc.name,
        file: &sc.file,
        scenario_sha256: &sc.sha256,
        seed: sc.seed,
        stop_time_ns: sc.stop_time.map(|t| t.as_nanos()),
        topology: &topo.kind,
        nodes: topo
            .nodes
            .iter()
            .map(|n| Node { name: &n.name, kind: if n.kind == NodeKind::Host { "host" } else { "switch" } })
            .collect(),
        ports: ports(sc),
        buffer_model: match sc.buffer_model {
            fctlab_net::BufferModel::Waiting => "waiting",
            fctlab_net::BufferModel::Ns2 => "ns2",
        },
        transport,
        scheduler: scheduler(sc),
        monitor: monitor(sc),
        groups: sc.groups.iter().map(|g| &**g).collect(),
        derived: &sc.derived,
        pfc: sc
            .pfc
            .as_ref()
            .map_or(Value::Null, |c| serde_json::json!({"xoff": c.xoff, "xon": c.xon, "headroom": c.headroom})),
        switch_buffer: sc
            .shared_buffer
            .as_ref()
            .map_or(Value::Null, |b| serde_json::json!({"bytes": b.bytes, "alpha": b.alpha, "pfc_alpha": b.pfc_alpha})),
        load_balancing: match sc.balance {
            fctlab_net::balance::Balance::Ecmp => Value::Null,
            fctlab_net::balance::Balance::Flowlet { gap } => {
                serde_json::json!({"policy": "flowlet", "flowlet_gap_ns": gap.as_nanos()})
            }
            ref b => serde_json::json!({"policy": b.name()}),
        },
        flows,
    };
    serde_json::to_string(&plan).expect("the plan holds only strings, numbers, bools and nulls")
}
