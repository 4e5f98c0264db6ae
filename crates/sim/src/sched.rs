//! The flow scheduling layer of SCHED_TCP between each origin-destination pair's flows and its
//! connections (`[transport] scheduler`, `docs/schedtcp.md`).
//!
//! Every sized flow still opens its own connection when it starts, of its own size, and that
//! connection runs exactly as plain TCP would: same congestion state, same segments, same
//! times. Only the data in it changes: the layer decides, with the pair's policy, whose bytes
//! each sequence range of a connection carries, and keeps the map (a range's data never
//! changes afterwards, retransmissions included). A connection's own size is its virtual queue
//! (what it would hold under tcp), so the bytes the pair has left to hand out always equal the
//! bytes its connections have left to send.
//!
//! When a range's data is chosen: with `send_buffer = 0` (the ideal gtcp) as the connection
//! sends it for the first time, one segment at a time; otherwise as soon as it fits in the
//! connection's send buffer (acknowledged point plus the buffer), in segment-sized writes that
//! are not preempted (SCHED_TCP over real sockets).
//!
//! A flow completes when every byte of it has been acknowledged on the connections that
//! carried it (cumulatively, as a receiver delivers data to the application in order), which
//! under `tcp` is when its own connection completes.

use crate::flowtable::FlowTable;
use fctlab_engine::Nanos;
use fctlab_scenario::Scenario;
use fctlab_sched::{Candidate, Policy, VirtualQueue};
use std::collections::{HashMap, VecDeque};

/// A flow the layer schedules.
#[derive(Clone, Debug, Default)]
struct Flow {
    size: u64,
    pair: u32,
    class: u32,
    /// Bytes of it acknowledged so far, and delivered in order by the receivers.
    acked: u64,
    delivered: u64,
    /// Bytes of its own connection's sequence space whose data is chosen, and acknowledged.
    mapped: u64,
    credited: u64,
    /// Bytes of its connection's sequence space the receiver has delivered (counted here).
    received: u64,
    /// The data of the chosen ranges of its connection, not yet all acknowledged: (end of
    /// the range, flow whose bytes it carries), contiguous from `credited`.
    pieces: VecDeque<(u64, u32)>,
    /// When its connection sent its last new byte (tcp would have finished sending it then).
    sent_all_at: Option<Nanos>,
}

/// The flows of one origin-destination pair with bytes not yet handed to a connection.
#[derive(Clone, Debug, Default)]
struct Pair {
    pending: Vec<Candidate>,
    /// The last smoothed RTT of any of its connections (rate estimates of new ones).
    srtt: Option<Nanos>,
}

pub(crate) struct HostLayer {
    policy: Policy,
    send_buffer: u64,
    mss: u64,
    initial_cwnd_bytes: u64,
    /// By flow index; None for a flow the layer leaves alone (a long-lived one).
    flows: Vec<Option<Flow>>,
    pairs: Vec<Pair>,
    pieces: Vec<(usize, u64)>,
}

impl HostLayer {
    pub fn new(scenario: &Scenario) -> Option<HostLayer> {
        let cfg = scenario.scheduler.as_ref()?;
        let mut pair_ids: HashMap<(usize, usize), u32> = HashMap::new();
        let flows = scenario
            .flows
            .iter()
            .map(|f| {
                let size = f.size_bytes?;
                let n = pair_ids.len() as u32;
                let pair = *pair_ids.entry((f.src, f.dst)).or_insert(n);
                Some(Flow { size, pair, class: cfg.class_of(&f.tag), ..Default::default() })
            })
            .collect();
        Some(HostLayer {
            policy: cfg.policy,
            send_buffer: cfg.send_buffer_bytes,
            mss: scenario.tcp.mss_bytes as u64,
            initial_cwnd_bytes: scenario.tcp.mss_bytes as u64 * scenario.tcp.initial_cwnd_segments as u64,
            flows,
            pairs: vec![Pair::default(); pair_ids.len()],
            pieces: Vec::new(),
        })
    }

    pub fn policy(&self) -> Policy {
        self.policy
    }

    /// Whether flow `f` goes through the layer.
    pub fn schedules(&self, f: usize) -> bool {
        self.flows[f].is_some()
    }

    /// Flow `f` started: its bytes wait to be handed out.
    pub fn open(&mut self, f: usize) {
        let Some(fl) = &self.flows[f] else { return };
        let c =
            Candidate { id: f as u64, remaining: fl.size, attained: 0, class: fl.class, tcp: VirtualQueue::default() };
        if fl.size > 0 {
            self.pairs[fl.pair as usize].pending.push(c);
        }
    }

    /// Catches up with what connection `f` has done: chooses the data of the ranges it has
    /// sent (or may buffer), then credits what it has acknowledged. Returns the flows this
    /// completes, in the order they complete.
    pub fn sync(&mut self, f: usize, table: &FlowTable, now: Nanos, done: &mut Vec<u32>) {
        let Some(fl) = self.flows[f].as_mut() else { return };
        let Some(conn) = table.conn(f) else { return };
        let snd = conn.sender();
        // Clamped to the flow's size: with `whole_packets` the connection pads its last segment.
        let size = fl.size;
        let (sent, acked, received) =
            (snd.bytes_sent().min(size), snd.bytes_acked().min(size), conn.bytes_delivered().min(size));
        if let Some(s) = conn.srtt() {
            self.pairs[fl.pair as usize].srtt = Some(s);
        }
        if sent >= fl.size && fl.sent_all_at.is_none() {
            fl.sent_all_at = Some(now);
        }
        let target =
            if self.send_buffer == 0 { sent } else { fl.size.min(sent.max(acked.saturating_add(self.send_buffer))) };
        while self.flows[f].as_ref().is_some_and(|fl| fl.mapped < target) {
            self.choose_segment(f, table, now);
        }
        self.credit_received(f, received);
        let mut at = self.flows[f].as_ref().expect("scheduled").credited;
        while acked > at {
            let fl = self.flows[f].as_mut().expect("scheduled");
            let Some(&(end, owner)) = fl.pieces.front() else { break };
            let upto = end.min(acked);
            if upto == end {
                fl.pieces.pop_front();
            }
            let o = self.flows[owner as usize].as_mut().expect("scheduled");
            o.acked += upto - at;
            if o.acked == o.size {
                done.push(owner);
            }
            at = upto;
        }
        self.flows[f].as_mut().expect("scheduled").credited = at;
    }

    /// Counts the bytes connection `f`'s receiver has delivered up to `received` to the flows
    /// they belong to (the pieces not yet acknowledged hold them).
    fn credit_received(&mut self, f: usize, received: u64) {
        let fl = self.flows[f].as_mut().expect("scheduled");
        let mut at = fl.received.max(fl.credited);
        if received <= at {
            return;
        }
        fl.received = received;
        let first = fl.pieces.partition_point(|&(end, _)| end <= at);
        for k in first..fl.pieces.len() {
            let fl = self.flows[f].as_ref().expect("scheduled");
            let (end, owner) = fl.pieces[k];
            let upto = end.min(received);
            self.flows[owner as usize].as_mut().expect("scheduled").delivered += upto - at;
            at = upto;
            if at >= received {
                break;
            }
        }
    }

    /// Chooses the data of connection `f`'s next segment-sized range.
    fn choose_segment(&mut self, f: usize, table: &FlowTable, now: Nanos) {
        let fl = self.flows[f].as_ref().expect("scheduled");
        let (from, pair) = (fl.mapped, fl.pair as usize);
        let end = ((from / self.mss + 1) * self.mss).min(fl.size);
        if self.policy.uses_tcp_twins() {
            self.refresh_tcp_twins(pair, table);
        }
        let mut pieces = std::mem::take(&mut self.pieces);
        pieces.clear();
        let pending = &mut self.pairs[pair].pending;
        self.policy.fill(f as u64, pending, end - from, now.as_nanos(), &mut pieces);
        let mut at = from;
        for &(i, n) in &pieces {
            at += n;
            let owner = pending[i].id as u32;
            self.flows[f].as_mut().expect("scheduled").pieces.push_back((at, owner));
        }
        pending.retain(|c| c.remaining > 0);
        // The pair's bytes left equal its connections' bytes left: the range is always full.
        debug_assert_eq!(at, end, "flow {f}: the pair ran out of data before its connections");
        let fl = self.flows[f].as_mut().expect("scheduled");
        fl.mapped = end.max(at);
        self.pieces = pieces;
    }

    /// FAIR's view of tcp: each pending flow's own connection, as tcp would run it alone.
    fn refresh_tcp_twins(&mut self, pair: usize, table: &FlowTable) {
        let srtt = self.pairs[pair].srtt;
        let initial_cwnd = self.initial_cwnd_bytes;
        let Self { pairs, flows, .. } = self;
        for c in pairs[pair].pending.iter_mut() {
            let fl = flows[c.id as usize].as_ref().expect("scheduled");
            let conn = table.conn(c.id as usize);
            let sent = conn.map_or(fl.size, |c| c.sender().bytes_sent());
            // A connection without its own RTT sample yet: the pair's, with the initial window.
            let tcp = conn.and_then(|c| c.tcp());
            let (cwnd, rtt) = match tcp.and_then(|(snd, _)| snd.srtt().map(|r| (snd.st.cwnd_bytes, r))) {
                Some(x) => x,
                None => (initial_cwnd, srtt.unwrap_or(Nanos::ZERO)),
            };
            let rate = if rtt > Nanos::ZERO { cwnd as f64 / rtt.as_secs_f64() } else { 0.0 };
            c.tcp = VirtualQueue {
                remaining: fl.size.saturating_sub(sent),
                finished_at_ns: fl.sent_all_at.map(|t| t.as_nanos()),
                rate_bytes_per_s: rate,
            };
        }
    }

    /// Bytes of flow `f` the receiver has delivered in order so far.
    pub fn delivered(&self, f: usize) -> Option<u64> {
        self.flows[f].as_ref().map(|fl| fl.delivered)
    }
}
