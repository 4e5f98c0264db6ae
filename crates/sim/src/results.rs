//! Results of a run and their schema: one row type per result table (flows, links, queue
//! samples, congestion-window samples) and the run's summary.
//!
//! This file is the one definition of every result column. [`result_table!`] declares a row
//! type and derives from it the table's [`Schema`] (column names, Arrow types, nullability)
//! and the conversion of rows into [`Column`]s in Arrow's memory layout, which the Python
//! bindings hand to pyarrow without restating anything. `docs/results.md` documents every
//! column; a test checks it against these schemas.

use serde::{Deserialize, Serialize};

/// The Arrow type of a column.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ColumnType {
    Int64,
    Float64,
    Utf8,
    Bool,
    /// Strings stored once each and referred to by an int32 index per row (Arrow's
    /// dictionary encoding): the column of a label many rows share, which costs its length
    /// once however many rows carry it.
    Label,
}

impl ColumnType {
    /// The type's name as `docs/results.md` and pyarrow write it.
    pub fn name(self) -> &'static str {
        match self {
            ColumnType::Int64 => "int64",
            ColumnType::Float64 => "float64",
            ColumnType::Utf8 => "string",
            ColumnType::Bool => "bool",
            ColumnType::Label => "string (dictionary)",
        }
    }
}

/// One column of a result table.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct ColumnSpec {
    pub name: &'static str,
    pub ty: ColumnType,
    pub nullable: bool,
}

/// A table's name (its file is `<name>.parquet`) and columns.
#[derive(Copy, Clone, Debug)]
pub struct Schema {
    pub table: &'static str,
    pub columns: &'static [ColumnSpec],
}

/// A column's values in Arrow's layout: `validity` is the little-endian validity bitmap
/// (None: no nulls), `offsets` the i32 offsets of a string column, `data` the values (i64 or
/// f64 little endian, UTF-8 bytes, a bitmap of booleans, or the i32 indices of a label
/// column), and `dictionary` a label column's distinct strings.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Column {
    pub len: usize,
    pub null_count: usize,
    pub validity: Option<Vec<u8>>,
    pub offsets: Option<Vec<u8>>,
    pub data: Vec<u8>,
    pub dictionary: Option<Box<Column>>,
}

/// Builds a [`Column`] value by value.
#[derive(Default)]
pub struct ColumnBuilder {
    col: Column,
    valid: Vec<bool>,
    bits: Vec<bool>,
    offsets: Vec<i32>,
    /// A label column's distinct strings so far: by the address of a shared string (rows of
    /// one workload hold one), then by value.
    labels: Option<Box<Labels>>,
}

#[derive(Default)]
struct Labels {
    values: ColumnBuilder,
    by_address: std::collections::HashMap<usize, i32>,
    by_value: std::collections::HashMap<std::sync::Arc<str>, i32>,
}

fn pack_bits(bits: &[bool]) -> Vec<u8> {
    let mut out = vec![0u8; bits.len().div_ceil(8)];
    for (i, &b) in bits.iter().enumerate() {
        if b {
            out[i / 8] |= 1 << (i % 8);
        }
    }
    out
}

impl ColumnBuilder {
    fn push_valid(&mut self, valid: bool) {
        self.valid.push(valid);
        self.col.len += 1;
        if !valid {
            self.col.null_count += 1;
        }
    }
    pub fn finish(mut self) -> Column {
        if self.col.null_count > 0 {
            self.col.validity = Some(pack_bits(&self.valid));
        }
        if !self.offsets.is_empty() {
            self.col.offsets = Some(self.offsets.iter().flat_map(|o| o.to_le_bytes()).collect());
        }
        if !self.bits.is_empty() {
            self.col.data = pack_bits(&self.bits);
        }
        if let Some(labels) = self.labels {
            self.col.dictionary = Some(Box::new(labels.values.finish()));
        }
        self.col
    }
}

/// A Rust type that fills one column: its Arrow type, whether it may be null, and how a
/// value is appended.
pub trait ColumnValue {
    const TYPE: ColumnType;
    const NULLABLE: bool = false;
    fn append(&self, b: &mut ColumnBuilder);
}

/// Counts and sizes are unsigned through the simulator and written as Arrow int64, whose
/// differences do not wrap in pandas or SQL as unsigned ones would. No value reaches 2^63:
/// sizes are at most 2^53 B and times 10^18 ns by the scenario checks, and a count of
/// simulated packets or bytes would need more events than a run can process; a value past
/// i64 (none can be) is written as i64::MAX, never as a negative number.
impl ColumnValue for u64 {
    const TYPE: ColumnType = ColumnType::Int64;
    fn append(&self, b: &mut ColumnBuilder) {
        b.col.data.extend_from_slice(&i64::try_from(*self).unwrap_or(i64::MAX).to_le_bytes());
        b.push_valid(true);
    }
}

impl ColumnValue for f64 {
    const TYPE: ColumnType = ColumnType::Float64;
    fn append(&self, b: &mut ColumnBuilder) {
        b.col.data.extend_from_slice(&self.to_le_bytes());
        b.push_valid(true);
    }
}

impl ColumnValue for bool {
    const TYPE: ColumnType = ColumnType::Bool;
    fn append(&self, b: &mut ColumnBuilder) {
        b.bits.push(*self);
        b.push_valid(true);
    }
}

/// Arrow's string offsets are i32: a string column holds at most 2 GiB of text (a label
/// column holds each distinct string once).
fn append_str(s: &str, b: &mut ColumnBuilder) {
    if b.offsets.is_empty() {
        b.offsets.push(0);
    }
    b.col.data.extend_from_slice(s.as_bytes());
    let end = i32::try_from(b.col.data.len()).expect("a result string column holds more than 2 GiB of text");
    b.offsets.push(end);
    b.push_valid(true);
}

/// A string many rows share (a flow's tag or group), written as a dictionary column: each
/// distinct string once, an index per row.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Label(pub std::sync::Arc<str>);

impl std::ops::Deref for Label {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl PartialEq<&str> for Label {
    fn eq(&self, o: &&str) -> bool {
        &*self.0 == *o
    }
}

impl PartialEq<String> for Label {
    fn eq(&self, o: &String) -> bool {
        *self.0 == **o
    }
}

impl ColumnValue for Label {
    const TYPE: ColumnType = ColumnType::Label;
    fn append(&self, b: &mut ColumnBuilder) {
        let labels = b.labels.get_or_insert_with(Default::default);
        let address = self.0.as_ptr() as usize;
        let index = match labels.by_address.get(&address) {
            Some(&i) => i,
            None => {
                let i = match labels.by_value.get(&self.0) {
                    Some(&i) => i,
                    None => {
                        let i = labels.values.col.len as i32;
                        append_str(&self.0, &mut labels.values);
                        labels.by_value.insert(self.0.clone(), i);
                        i
                    }
                };
                // the address is only a shortcut while the row's string is alive (the rows
                // hold it until the column is built), so two strings never share one
                labels.by_address.insert(address, i);
                i
            }
        };
        b.col.data.extend_from_slice(&index.to_le_bytes());
        b.push_valid(true);
    }
}

impl ColumnValue for String {
    const TYPE: ColumnType = ColumnType::Utf8;
    fn append(&self, b: &mut ColumnBuilder) {
        append_str(self, b)
    }
}

/// A string shared by many rows (a node's name in every row of its flows).
impl ColumnValue for std::sync::Arc<str> {
    const TYPE: ColumnType = ColumnType::Utf8;
    fn append(&self, b: &mut ColumnBuilder) {
        append_str(self, b)
    }
}

/// A name from a fixed set (a protocol, a policy).
impl ColumnValue for &'static str {
    const TYPE: ColumnType = ColumnType::Utf8;
    fn append(&self, b: &mut ColumnBuilder) {
        append_str(self, b)
    }
}

impl<T: ColumnValue + Default> ColumnValue for Option<T> {
    const TYPE: ColumnType = T::TYPE;
    const NULLABLE: bool = true;
    fn append(&self, b: &mut ColumnBuilder) {
        match self {
            Some(v) => v.append(b),
            None => {
                // A null still takes a slot in the data (Arrow's layout).
                T::default().append(b);
                b.col.null_count += 1;
                *b.valid.last_mut().expect("a slot was just pushed") = false;
            }
        }
    }
}

/// A row type whose rows form one result table.
pub trait Row {
    const SCHEMA: Schema;
    /// The rows as columns, in schema order.
    fn columns(rows: &[Self]) -> Vec<Column>
    where
        Self: Sized;
}

/// Declares a row type and its table: `result_table!(name, Type { field: type, ... })`.
macro_rules! result_table {
    ($(#[$meta:meta])* $table:literal, $name:ident { $($(#[$fmeta:meta])* $field:ident : $ty:ty),* $(,)? }) => {
        $(#[$meta])*
        #[derive(Clone, Debug, PartialEq)]
        pub struct $name {
            $($(#[$fmeta])* pub $field: $ty,)*
        }

        impl Row for $name {
            const SCHEMA: Schema = Schema {
                table: $table,
                columns: &[$(ColumnSpec { name: stringify!($field), ty: <$ty as ColumnValue>::TYPE, nullable: <$ty as ColumnValue>::NULLABLE },)*],
            };
            fn columns(rows: &[Self]) -> Vec<Column> {
                vec![$({
                    let mut b = ColumnBuilder::default();
                    for r in rows {
                        r.$field.append(&mut b);
                    }
                    b.finish()
                },)*]
            }
        }
    };
}

result_table!(
    /// One flow's outcome. Times in seconds; `None` where the flow did not complete.
    "flows",
    FlowResult {
        flow_id: u64,
        src: std::sync::Arc<str>,
        dst: std::sync::Arc<str>,
        size_bytes: Option<u64>,
        bytes_delivered: u64,
        /// Actual start time; None for a flow that never started (waiting for a group).
        start_s: Option<f64>,
        finish_s: Option<f64>,
        fct_s: Option<f64>,
        ideal_fct_s: Option<f64>,
        slowdown: Option<f64>,
        completed: bool,
        protocol: &'static str,
        retransmits: u64,
        timeouts: u64,
        /// Of `timeouts`: of the SYN, or before any data was acknowledged.
        first_timeouts: u64,
        /// Of `timeouts`: after the window was last cut by an ECN echo.
        ecn_timeouts: u64,
        deadline_s: Option<f64>,
        tag: Label,
        group: Label,
        packets_sent: u64,
        loss_probes: u64,
        left_slow_start: bool,
        /// The scheduling layer's policy (`[transport] scheduler`), or "none".
        scheduler: &'static str,
        /// When the connection opened for the flow completed.
        conn_finish_s: Option<f64>,
        /// The smallest and the mean RTT the sender measured (None before its first sample).
        rtt_min_s: Option<f64>,
        rtt_mean_s: Option<f64>,
        /// The flow's packets (data and ACKs) that ports dropped.
        drops: u64,
        /// Data packets that arrived above a hole, and retransmissions that arrived with
        /// nothing new (TCP; 0 on the roce transport).
        out_of_order_packets: u64,
        spurious_retransmits: u64,
    }
);

result_table!(
    /// One directional link's counters.
    "links",
    LinkResult {
        link_id: u64,
        src: String,
        dst: String,
        level: String,
        rate_bps: f64,
        delay_s: f64,
        buffer_pkts: Option<u64>,
        buffer_bytes: Option<u64>,
        tx_packets: u64,
        tx_bytes: u64,
        drops: u64,
        ecn_marks: u64,
        utilization: f64,
        max_queue_pkts: u64,
        max_queue_bytes: u64,
        mean_queue_pkts: f64,
        /// Data packets the port cut to their headers (`queue = "trim"`).
        trimmed_packets: u64,
    }
);

result_table!(
    /// A queue-length sample of one port.
    "queues",
    QueueSample {
        time_s: f64,
        link_id: u64,
        link: String,
        queue_pkts: u64,
        queue_bytes: u64,
    }
);

result_table!(
    /// One dropped packet (`[monitor] drops`).
    "drops",
    DropRecord {
        time_s: f64,
        /// The port that dropped it (None: a switch had no route for it).
        link_id: Option<u64>,
        /// The port's name "a->b", or the node without a route.
        link: std::sync::Arc<str>,
        flow_id: u64,
        /// data, ack, syn, synack or fin.
        kind: &'static str,
        /// A data packet's first byte (offset in the flow), an ACK's cumulative ACK.
        seq: u64,
        payload_bytes: u64,
        retransmission: bool,
        /// buffer_full, early, pushed_out, trimmed_header or no_route.
        cause: &'static str,
    }
);

result_table!(
    /// A congestion-window sample of one flow.
    "cwnd",
    CwndSample {
        time_s: f64,
        flow_id: u64,
        cwnd_bytes: u64,
        ssthresh_bytes: Option<u64>,
        /// Delivery rate since the previous sample (acknowledged bytes per second, in bits).
        rate_bps: f64,
        weight: Option<f64>,
        /// The rate a paced sender sends at (rate-based protocols).
        pacing_bps: Option<f64>,
    }
);

impl Summary {
    /// The keys of `summary.json` that the simulator writes.
    pub fn keys() -> &'static [&'static str] {
        fctlab_engine::quantity::fields_of::<Summary>()
    }
}

result_table!(
    /// One pause or resume of priority flow control as it takes effect (`[network] pfc = true`):
    /// the pause monitor.
    "pfc",
    PfcRecord {
        time_s: f64,
        /// The port that stops or resumes serving the priority (as `links.parquet` numbers it).
        link_id: u64,
        /// Its name "a->b": `b` sent the frame.
        link: String,
        prio: u64,
        /// pause or resume.
        event: &'static str,
        /// A pause's head-of-line blocking (None on a resume): the packets of the priority
        /// waiting at the port as it takes effect, their flows, and the link at the far end
        /// that holds most of what came by this port (the congested one).
        waiting_packets: Option<u64>,
        waiting_flows: Option<u64>,
        /// Of those flows, the ones whose next link is not the congested one: held up by
        /// another link's congestion.
        victim_flows: Option<u64>,
        congested_link: Option<String>,
    }
);

/// Every result table's schema, in the order of `docs/results.md`.
pub const SCHEMAS: [Schema; 6] = [
    FlowResult::SCHEMA,
    LinkResult::SCHEMA,
    QueueSample::SCHEMA,
    CwndSample::SCHEMA,
    DropRecord::SCHEMA,
    PfcRecord::SCHEMA,
];

/// Whole-run figures (`summary.json`; its keys are these fields').
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
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
    /// Trimmed headers (`queue = "trim"`) that reached their host.
    pub trimmed_headers_delivered: u64,
    pub interrupted: bool,
    /// `[measure]`: the window's start and end (None: no window, or no end), seconds.
    pub measure_from_s: Option<f64>,
    pub measure_until_s: Option<f64>,
    /// Flows that started inside the window (every started flow when there is none).
    pub flows_measured: u64,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Results {
    pub flows: Vec<FlowResult>,
    pub links: Vec<LinkResult>,
    /// Queue samples, when the scenario asked for them.
    pub queues: Option<Vec<QueueSample>>,
    /// Congestion-window samples, when the scenario asked for them.
    pub cwnd: Option<Vec<CwndSample>>,
    /// Dropped packets, when the scenario asked for them.
    pub drops: Option<Vec<DropRecord>>,
    /// Every pause and resume, when the network is lossless.
    pub pfc: Option<Vec<PfcRecord>>,
    /// Packet captures, when the scenario asked for them, and the hosts' addresses in them
    /// (a hosts file).
    pub pcaps: Vec<crate::pcap::PcapFile>,
    pub pcap_hosts: Option<String>,
    pub summary: Summary,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_follow_the_arrow_layout() {
        let rows = vec![
            CwndSample {
                time_s: 0.5,
                flow_id: 3,
                cwnd_bytes: 10,
                ssthresh_bytes: None,
                rate_bps: 1.0,
                weight: Some(2.0),
                pacing_bps: None,
            },
            CwndSample {
                time_s: 1.0,
                flow_id: 4,
                cwnd_bytes: 20,
                ssthresh_bytes: Some(7),
                rate_bps: 2.0,
                weight: None,
                pacing_bps: Some(5.0),
            },
        ];
        let cols = CwndSample::columns(&rows);
        assert_eq!(cols.len(), CwndSample::SCHEMA.columns.len());
        assert_eq!(cols[1].data, [3i64.to_le_bytes(), 4i64.to_le_bytes()].concat());
        assert_eq!((cols[3].null_count, cols[3].validity.as_deref()), (1, Some(&[0b10u8][..])));
        assert_eq!(&cols[3].data[8..], &7i64.to_le_bytes());
        assert_eq!((cols[5].null_count, cols[5].validity.as_deref()), (1, Some(&[0b01u8][..])));
        assert!(cols[0].validity.is_none());
        let spec = CwndSample::SCHEMA.columns[3];
        assert_eq!((spec.name, spec.ty, spec.nullable), ("ssthresh_bytes", ColumnType::Int64, true));
    }

    #[test]
    fn strings_and_booleans() {
        let mut b = ColumnBuilder::default();
        for s in ["ab", "", "cde"] {
            s.to_string().append(&mut b);
        }
        let c = b.finish();
        assert_eq!(c.data, b"abcde");
        assert_eq!(c.offsets.unwrap(), [0i32, 2, 2, 5].iter().flat_map(|o| o.to_le_bytes()).collect::<Vec<u8>>());
        let mut b = ColumnBuilder::default();
        for v in [true, false, true, true, false, false, false, false, true] {
            v.append(&mut b);
        }
        let c = b.finish();
        assert_eq!((c.len, c.data), (9, vec![0b0000_1101, 0b1]));
    }
}
