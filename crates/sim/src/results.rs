//! Results of a run: one record per flow and per directional link, queue samples and a summary.

/// One flow's outcome. Times in seconds; `None` where the flow did not complete.
#[derive(Clone, Debug, PartialEq)]
pub struct FlowResult {
    pub flow_id: u64,
    pub src: String,
    pub dst: String,
    pub size_bytes: Option<u64>,
    pub bytes_delivered: u64,
    /// Actual start time; None for a flow that never started (waiting for a group).
    pub start_s: Option<f64>,
    pub finish_s: Option<f64>,
    pub fct_s: Option<f64>,
    pub ideal_fct_s: Option<f64>,
    pub slowdown: Option<f64>,
    pub completed: bool,
    pub protocol: String,
    pub retransmits: u64,
    pub timeouts: u64,
    pub deadline_s: Option<f64>,
    pub tag: String,
    pub group: String,
    pub packets_sent: u64,
}

/// One directional link's counters.
#[derive(Clone, Debug, PartialEq)]
pub struct LinkResult {
    pub link_id: u64,
    pub src: String,
    pub dst: String,
    pub level: String,
    pub rate_bps: f64,
    pub delay_s: f64,
    pub buffer_pkts: Option<u64>,
    pub buffer_bytes: Option<u64>,
    pub tx_packets: u64,
    pub tx_bytes: u64,
    pub drops: u64,
    pub ecn_marks: u64,
    pub utilization: f64,
    pub max_queue_pkts: u64,
    pub max_queue_bytes: u64,
    pub mean_queue_pkts: f64,
}

/// Sampled queue lengths, one row per (time, port).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct QueueSamples {
    pub time_s: Vec<f64>,
    pub link_id: Vec<u64>,
    pub link: Vec<String>,
    pub queue_pkts: Vec<u64>,
    pub queue_bytes: Vec<u64>,
}

/// Congestion-window traces, one row per (time, flow).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CwndSamples {
    pub time_s: Vec<f64>,
    pub flow_id: Vec<u64>,
    pub cwnd_bytes: Vec<u64>,
    pub ssthresh_bytes: Vec<Option<u64>>,
    /// Delivery rate since the previous sample (acknowledged bytes per second, in bits).
    pub rate_bps: Vec<f64>,
    pub weight: Vec<Option<f64>>,
}

/// Whole-run figures.
#[derive(Clone, Debug, PartialEq)]
pub struct Summary {
    pub scenario_name: String,
    pub scenario_sha256: String,
    pub seed: u64,
    pub version: String,
    pub sim_time_s: f64,
    /// Wall time of the event loop alone.
    pub wall_time_s: f64,
    pub events: u64,
    pub events_per_s: f64,
    pub data_packets_delivered: u64,
    pub data_packets_delivered_per_wall_s: f64,
    pub payload_bytes_delivered: u64,
    pub flows_total: u64,
    pub flows_completed: u64,
    pub flows_started: u64,
    pub drops: u64,
    pub ecn_marks: u64,
    pub packets_created: u64,
    pub packets_consumed: u64,
    pub packets_in_network: u64,
    pub peak_packets_in_network: u64,
    pub late_packets: u64,
    pub interrupted: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Results {
    pub flows: Vec<FlowResult>,
    pub links: Vec<LinkResult>,
    pub queues: Option<QueueSamples>,
    pub cwnd: Option<CwndSamples>,
    pub summary: Summary,
}
