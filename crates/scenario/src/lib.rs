//! Scenario files: the TOML (or JSON) schema, units, overrides and validation.
//!
//! [`load`] turns the text of a scenario plus `key=value` overrides into a validated
//! [`Scenario`]: a built topology, the TCP configuration, one congestion-control
//! configuration per flow, and the flows themselves. Every error names the file, the key and
//! what was expected; nothing here panics on bad input.

mod deadline;
mod derived;
mod flowlist;
mod flows;
pub mod limits;
mod monitor;
mod network;
mod paths;
pub mod plan;
pub mod schema;
mod tables;
mod trace;
mod transport;
pub mod units;
pub mod workloads;

use fctlab_engine::Nanos;
use fctlab_net::{BufferLimit, BufferModel, NodeKind, QueueConfig, Topology};
use fctlab_transport::{CcConfig, TcpConfig};
use std::fmt;

pub use flowlist::{Draws, FlowFeed, FlowList, FlowPart};
pub use schema::{load, load_with};

/// The keys a scenario's `[transport]` table takes besides one table per protocol (the TCP
/// settings, `protocol`, `profile` and the scheduling layer's), and those of `[monitor]`: the
/// tables docs/scenarios.md lists key by key (a test checks the lists against these).
pub fn table_keys() -> Vec<(&'static str, Vec<&'static str>)> {
    vec![("transport", transport::keys()), ("monitor", monitor::keys().to_vec())]
}

/// A scenario error: where (file and key) and what was expected.
#[derive(Clone, Debug, PartialEq)]
pub struct ScenarioError {
    pub file: String,
    /// Dotted key path, e.g. `network.link_rate` or `flows[3].dst` (empty: the whole file).
    pub key: String,
    pub message: String,
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let one_line = self.message.replace('\n', " ");
        let message = cut_long_words(&one_line);
        if self.key.is_empty() {
            write!(f, "{}: {}", self.file, message)
        } else {
            write!(f, "{}: {}: {}", self.file, cut_long_words(&self.key), message)
        }
    }
}

/// `s` with every word (a run without spaces) longer than 60 characters cut to its first 40
/// and its length: a value or key of megabytes echoed by a message stays one short line.
fn cut_long_words(s: &str) -> std::borrow::Cow<'_, str> {
    const LONGEST: usize = 60;
    if s.split(' ').all(|w| w.len() <= LONGEST) {
        return std::borrow::Cow::Borrowed(s);
    }
    let words: Vec<String> = s
        .split(' ')
        .map(|w| {
            let n = w.chars().count();
            if n <= LONGEST {
                w.to_string()
            } else {
                format!("{}... ({n} characters)", w.chars().take(40).collect::<String>())
            }
        })
        .collect();
    std::borrow::Cow::Owned(words.join(" "))
}

impl std::error::Error for ScenarioError {}

/// One flow of the scenario.
#[derive(Clone, Debug)]
pub struct FlowSpec {
    /// Node indices into the topology.
    pub src: usize,
    pub dst: usize,
    /// Bytes to transfer; None for a long-lived flow.
    pub size_bytes: Option<u64>,
    pub start: Nanos,
    /// Relative deadline (met if the flow completes within it).
    pub deadline: Option<Nanos>,
    /// Shared by the flows of its workload or trace part (a tag of any length costs one copy).
    pub tag: std::sync::Arc<str>,
    /// Group name ("" for none); flows of one incast round or shuffle job share one (one copy).
    pub group: std::sync::Arc<str>,
    /// Index of `group` in [`Scenario::groups`].
    pub group_id: Option<u32>,
    /// Start only once every flow of this group has completed; `start` is then the delay
    /// after that moment (closed-loop workloads: incast rounds, request/response).
    pub after: Option<u32>,
    /// Shared by the flows of one workload (a million generated flows hold one copy).
    pub cc: std::sync::Arc<CcConfig>,
    /// Data packets carry ECT.
    pub ecn: bool,
}

/// Queue sampling requested by `[monitor]`.
#[derive(Clone, Debug, Default)]
pub struct MonitorConfig {
    /// Sample the congestion window (and delivery rate, weight) of `cwnd_flows` this often.
    pub cwnd_interval: Option<Nanos>,
    /// Flow ids to trace; None (the default, or "all") means every flow.
    pub cwnd_flows: Option<Vec<u64>>,
    pub queue_interval: Option<Nanos>,
    /// Link names "a->b"; empty means every switch port.
    pub queues: Vec<String>,
    /// Record every packet a port drops (`drops.parquet`).
    pub drops: bool,
    /// Packet captures (`pcap/*.pcap`), when asked for.
    pub pcap: Option<PcapConfig>,
}

/// `[monitor] pcap`: the hosts and links to capture, the time window and the packet limit.
#[derive(Clone, Debug)]
pub struct PcapConfig {
    /// Host names (its NIC's both directions) and link names "a->b" (that output port).
    pub points: Vec<String>,
    /// Packets leaving (or, on a host's receiving side, arriving) in [from, until) are kept.
    pub from: Nanos,
    pub until: Option<Nanos>,
    /// Each capture keeps at most this many packets; the rest are counted.
    pub max_packets: u64,
}

/// `[transport] scheduler`: SCHED_TCP's layer between each origin-destination pair's flows and
/// its connections (`docs/schedtcp.md`).
#[derive(Clone, Debug)]
pub struct SchedulerConfig {
    pub policy: fctlab_sched::Policy,
    /// How far ahead of what a connection has sent its data is chosen: 0 for the ideal gtcp
    /// (at transmission), else the bytes a send buffer holds (SCHED_TCP: not preempted).
    pub send_buffer_bytes: u64,
    /// `priority`: class 0 is the first tag, and so on; other tags come after them all.
    pub priority_tags: Vec<String>,
}

impl SchedulerConfig {
    /// The class of a flow with tag `tag` under `priority`.
    pub fn class_of(&self, tag: &str) -> u32 {
        self.priority_tags.iter().position(|t| t == tag).unwrap_or(self.priority_tags.len()) as u32
    }
}

/// The measurement window (`[measure]`): flows that start at or after `from` and before
/// `until` are measured; the others run (they load the network) but metrics leave them out.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Measure {
    pub from: Nanos,
    /// None: no end.
    pub until: Option<Nanos>,
}

impl Measure {
    /// Whether a flow that started at `start` is measured.
    pub fn contains(&self, start: Nanos) -> bool {
        start >= self.from && self.until.map_or(true, |u| start < u)
    }
}

/// A validated scenario, ready to simulate.
#[derive(Clone, Debug)]
pub struct Scenario {
    pub file: String,
    pub name: String,
    pub seed: u64,
    pub stop_time: Option<Nanos>,
    pub topology: Topology,
    /// Discipline of switch output ports.
    pub switch_queue: QueueConfig,
    /// Discipline of host NIC output queues (DropTail, or the switches' with `nic_queue = "switch"`).
    pub nic_queue: QueueConfig,
    /// Buffer of host NIC output queues.
    pub nic_buffer: BufferLimit,
    /// What a buffer limit holds (`buffer_model`), for every port.
    pub buffer_model: BufferModel,
    pub tcp: TcpConfig,
    /// The `[transport] profile` the TCP settings started from.
    pub profile: fctlab_transport::Profile,
    /// Listed, or drawn when needed ([`FlowList`]).
    pub flows: FlowList,
    /// Names of flow groups, indexed by `FlowSpec::group_id` and `FlowSpec::after`.
    pub groups: Vec<std::sync::Arc<str>>,
    pub monitor: MonitorConfig,
    /// The flow scheduling layer of every origin-destination pair, if any.
    pub scheduler: Option<SchedulerConfig>,
    /// `[measure]`: the flows whose start falls in this window are the measured ones.
    pub measure: Option<Measure>,
    /// SHA-256 of the scenario text and the overrides applied to it.
    pub sha256: String,
    /// Protocol parameters left out and derived from a workload or defaulted, one sentence
    /// each, prefixed by the entry (`workloads[0]: pias_thresholds derived from ...`).
    pub derived: Vec<String>,
    /// Priority flow control (`[network] pfc = true`): lossless switches and NICs.
    pub pfc: Option<PfcConfig>,
    /// `[network] switch_buffer`: one buffer per switch shared by its output queues.
    pub shared_buffer: Option<SharedBuffer>,
    /// `[network] load_balancing`: how packets choose among equal-cost next hops.
    pub balance: fctlab_net::balance::Balance,
}

/// `[network] pfc = true`: each switch counts the bytes it holds from each input and priority,
/// pauses that input's sender above `xoff` and resumes it at `xon`; bytes in B. Left out: from
/// each link (docs/lossless.md): the headroom is what arrives after a pause is sent (two
/// propagation delays at the link's rate, two full packets and the pause frame), `xoff` the
/// port's buffer less the headroom, `xon` two full packets below `xoff`.
/// `[network] switch_buffer`: each switch holds one buffer of `bytes` for all its output
/// queues. Without PFC a queue may hold at most `alpha` times the buffer left free (dynamic
/// thresholds, Choudhury and Hahne); with PFC an input pauses its sender when the bytes it
/// holds pass `pfc_alpha` times the shared space left free (the HPCC fork's MMU), and output
/// queues take what comes.
#[derive(Clone, Debug, PartialEq)]
pub struct SharedBuffer {
    pub bytes: u64,
    pub alpha: f64,
    /// None: 1/8 for a port at the hosts' rate, doubled for each doubling of the rate above it.
    pub pfc_alpha: Option<f64>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct PfcConfig {
    pub xoff: Option<u64>,
    pub xon: Option<u64>,
    pub headroom: Option<u64>,
}

impl Scenario {
    pub fn host_names(&self) -> Vec<&str> {
        self.topology.nodes.iter().filter(|n| n.kind == NodeKind::Host).map(|n| n.name.as_str()).collect()
    }
    pub fn error(&self, key: &str, message: impl Into<String>) -> ScenarioError {
        ScenarioError { file: self.file.clone(), key: key.to_string(), message: message.into() }
    }
}
