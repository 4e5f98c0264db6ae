//! The event loop.

use crate::results::{CwndSample, FlowResult, LinkResult, QueueSample, Results, Summary};
use crate::VERSION;
use fctlab_engine::{EventQueue, Nanos, Rng};
use fctlab_net::{BufferLimit, EnqueueOutcome, FlowId, NodeId, NodeKind, Packet, PacketId, PacketKind, PacketMeta, PacketPool, Port, PortId, QueueConfig, Routes};
use fctlab_scenario::{Scenario, ScenarioError};
use fctlab_transport::{TcpConfig, TcpReceiver, TcpSender};
use std::time::Instant;

#[derive(Copy, Clone, Debug)]
enum Event {
    /// The head packet of a port's ring arrives at the far end.
    Arrival(u32),
    /// One or more flows start now.
    FlowStart,
    /// A flow whose group dependency completed starts now.
    StartDependent(u32),
    Rto(u32),
    DelAck(u32),
    QueueSample,
    CwndSample,
}

/// A connection: both ends of one flow.
struct Conn {
    snd: TcpSender,
    rcv: TcpReceiver,
}

struct FlowRecord {
    src: NodeId,
    dst: NodeId,
    size: Option<u64>,
    start: Nanos,
    deadline: Option<Nanos>,
    protocol: &'static str,
    ideal: Option<Nanos>,
    finish: Option<Nanos>,
    started: bool,
    bytes_delivered: u64,
    retransmits: u64,
    timeouts: u64,
    packets_sent: u64,
}

const NONE: u64 = u64::MAX;

/// Without a `stop_time`, a run ends when every flow has completed, or at this simulated
/// time at the latest (flows that cannot complete, e.g. behind a dead link, are then reported
/// unfinished instead of running forever).
pub const DEFAULT_HORIZON: Nanos = Nanos::from_secs(3600);

#[derive(Copy, Clone)]
struct FlowTimers {
    rto_at: u64,
    delack_at: u64,
}

/// Where a run stands after [`Simulation::advance`].
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum RunStatus {
    /// Stopped at the requested limit; more to do.
    Paused,
    /// The run is over: stop time reached, or every flow done and nothing left to happen.
    Finished,
}

pub struct Simulation {
    scenario: Scenario,
    now: Nanos,
    events: EventQueue<Event>,
    pool: PacketPool,
    ports: Vec<Port>,
    port_level: Vec<&'static str>,
    node_is_host: Vec<bool>,
    routes: Routes,
    tcp: TcpConfig,
    flows: Vec<FlowRecord>,
    conns: Vec<Option<Box<Conn>>>,
    timers: Vec<FlowTimers>,
    start_order: Vec<u32>,
    next_start: usize,
    /// Flows of each group not yet completed.
    group_open: Vec<u32>,
    /// Flows waiting for each group to complete.
    dependents: Vec<Vec<u32>>,
    /// Dependent flows scheduled to start but not started yet.
    dependent_starts_pending: usize,
    out: Vec<Packet>,
    open_flows: usize,
    long_lived_running: usize,
    /// Sampled ports and their names ("a->b"), formatted once.
    sampled_ports: Vec<(u32, String)>,
    samples: Option<Vec<QueueSample>>,
    cwnd_samples: Option<Vec<CwndSample>>,
    cwnd_traced: Vec<u32>,
    /// Bytes acknowledged per traced flow at the previous sample.
    cwnd_last_acked: Vec<u64>,
    // counters
    data_packets_delivered: u64,
    payload_bytes_delivered: u64,
    packets_created: u64,
    packets_consumed: u64,
    no_route_drops: u64,
    late_packets: u64,
    flows_started: u64,
    loop_wall: std::time::Duration,
    finished: bool,
}

impl Simulation {
    /// Builds the network and flow table of a validated scenario. Fails (never panics) when a
    /// flow has no route or the topology is disconnected.
    pub fn new(scenario: Scenario) -> Result<Simulation, ScenarioError> {
        let topo = &scenario.topology;
        let n = topo.nodes.len();
        let node_is_host: Vec<bool> = topo.nodes.iter().map(|x| x.kind == NodeKind::Host).collect();
        let mut ports = Vec::with_capacity(topo.links.len() * 2);
        let mut port_level = Vec::with_capacity(topo.links.len() * 2);
        for l in &topo.links {
            for (from, to) in [(l.a, l.b), (l.b, l.a)] {
                let pid = ports.len() as u64;
                let (limit, queue) = if node_is_host[from] {
                    (scenario.nic_buffer, QueueConfig::DropTail)
                } else {
                    (l.params.buffer, scenario.switch_queue.clone())
                };
                ports.push(Port::new(
                    NodeId(from as u32),
                    NodeId(to as u32),
                    l.params.rate,
                    l.params.delay,
                    limit,
                    &queue,
                    Rng::stream(scenario.seed, 0x1_0000_0000 + pid),
                ));
                port_level.push(l.level);
            }
        }
        let host_nodes: Vec<NodeId> = (0..n).filter(|&i| node_is_host[i]).map(|i| NodeId(i as u32)).collect();
        let routes = Routes::build(n, &host_nodes, &ports, fctlab_engine::rng::splitmix64(scenario.seed ^ 0xEC3F));
        // Connectivity: every host reaches every other host.
        if let Some(&first) = host_nodes.first() {
            for &h in &host_nodes[1..] {
                if !routes.reachable(first, h) || !routes.reachable(h, first) {
                    return Err(scenario.error(
                        "network",
                        format!(
                            "the topology is disconnected: no path between hosts \"{}\" and \"{}\"",
                            topo.nodes[first.0 as usize].name, topo.nodes[h.0 as usize].name
                        ),
                    ));
                }
            }
        }
        let tcp = scenario.tcp;
        let mut flows = Vec::with_capacity(scenario.flows.len());
        for (i, f) in scenario.flows.iter().enumerate() {
            let (src, dst) = (NodeId(f.src as u32), NodeId(f.dst as u32));
            let fwd = routes.path(src, dst, FlowId(i as u32), &ports);
            let rev = routes.path(dst, src, FlowId(i as u32), &ports);
            let (Some(fwd), Some(rev)) = (fwd, rev) else {
                return Err(scenario.error(&format!("flows[{i}]"), "no route between its hosts (the topology is disconnected)"));
            };
            let ideal = f.size_bytes.map(|size| ideal_fct(size, &fwd, &rev, &ports, &tcp));
            flows.push(FlowRecord {
                src,
                dst,
                size: f.size_bytes,
                start: f.start,
                deadline: f.deadline,
                protocol: f.cc.name(),
                ideal,
                finish: None,
                started: false,
                bytes_delivered: 0,
                retransmits: 0,
                timeouts: 0,
                packets_sent: 0,
            });
        }
        let mut group_open = vec![0u32; scenario.groups.len()];
        let mut dependents: Vec<Vec<u32>> = vec![Vec::new(); scenario.groups.len()];
        for (i, f) in scenario.flows.iter().enumerate() {
            if let Some(g) = f.group_id {
                group_open[g as usize] += 1;
            }
            if let Some(a) = f.after {
                dependents[a as usize].push(i as u32);
            }
        }
        let mut start_order: Vec<u32> = (0..flows.len() as u32).filter(|&i| scenario.flows[i as usize].after.is_none()).collect();
        start_order.sort_by_key(|&i| (flows[i as usize].start, i));
        let mut sampled_ports = Vec::new();
        if scenario.monitor.queue_interval.is_some() {
            let all = scenario.monitor.queues.is_empty() || scenario.monitor.queues.iter().any(|q| q == "all");
            for (pi, p) in ports.iter().enumerate() {
                let wanted = if all {
                    !node_is_host[p.from.0 as usize]
                } else {
                    scenario.monitor.queues.iter().any(|q| {
                        q.split_once("->").is_some_and(|(a, b)| {
                            a.trim() == topo.nodes[p.from.0 as usize].name && b.trim() == topo.nodes[p.to.0 as usize].name
                        })
                    })
                };
                if wanted {
                    let name = format!("{}->{}", topo.nodes[p.from.0 as usize].name, topo.nodes[p.to.0 as usize].name);
                    sampled_ports.push((pi as u32, name));
                }
            }
        }
        let nflows = flows.len();
        let mut sim = Simulation {
            now: Nanos::ZERO,
            events: EventQueue::new(),
            pool: PacketPool::new(),
            ports,
            port_level,
            node_is_host,
            routes,
            tcp,
            conns: (0..nflows).map(|_| None).collect(),
            timers: vec![FlowTimers { rto_at: NONE, delack_at: NONE }; nflows],
            flows,
            start_order,
            next_start: 0,
            group_open,
            dependents,
            dependent_starts_pending: 0,
            out: Vec::with_capacity(64),
            open_flows: 0,
            long_lived_running: 0,
            samples: scenario.monitor.queue_interval.map(|_| Vec::new()),
            cwnd_samples: scenario.monitor.cwnd_interval.map(|_| Vec::new()),
            cwnd_traced: match &scenario.monitor.cwnd_flows {
                None => (0..nflows as u32).collect(),
                Some(ids) => ids.iter().map(|&f| f as u32).collect(),
            },
            cwnd_last_acked: vec![0; scenario.monitor.cwnd_flows.as_ref().map_or(nflows, |ids| ids.len())],
            sampled_ports,
            scenario,
            data_packets_delivered: 0,
            payload_bytes_delivered: 0,
            packets_created: 0,
            packets_consumed: 0,
            no_route_drops: 0,
            late_packets: 0,
            flows_started: 0,
            loop_wall: std::time::Duration::ZERO,
            finished: false,
        };
        if let Some(&first) = sim.start_order.first() {
            let t = sim.flows[first as usize].start;
            sim.events.push(t, Event::FlowStart);
        }
        if sim.samples.is_some() {
            sim.events.push(Nanos::ZERO, Event::QueueSample);
        }
        if sim.cwnd_samples.is_some() {
            sim.events.push(Nanos::ZERO, Event::CwndSample);
        }
        Ok(sim)
    }

    pub fn now(&self) -> Nanos {
        self.now
    }
    pub fn scenario(&self) -> &Scenario {
        &self.scenario
    }
    pub fn flows_completed(&self) -> usize {
        self.flows.iter().filter(|f| f.finish.is_some()).count()
    }
    /// Diagnostic description of flow `f`'s connection state.
    pub fn describe_flow(&self, f: usize) -> String {
        match self.conns.get(f).and_then(|c| c.as_deref()) {
            Some(c) => format!("sender: {} | receiver delivered={} | timers rto_at={} delack_at={}", c.snd.describe(), c.rcv.bytes_delivered(), self.timers[f].rto_at, self.timers[f].delack_at),
            None => "not active".to_string(),
        }
    }
    pub fn is_finished(&self) -> bool {
        self.finished
    }

    /// Runs until simulated time `until` (inclusive), the stop time, or the end of the run.
    pub fn advance(&mut self, until: Nanos) -> RunStatus {
        if self.finished {
            return RunStatus::Finished;
        }
        let wall = Instant::now();
        let stop = self.scenario.stop_time.unwrap_or(DEFAULT_HORIZON);
        let status = loop {
            let Some(t) = self.events.peek_time() else {
                self.finished = true;
                break RunStatus::Finished;
            };
            if t > stop {
                self.now = stop;
                self.finished = true;
                break RunStatus::Finished;
            }
            if t > until {
                self.now = until;
                break RunStatus::Paused;
            }
            let (t, ev) = self.events.pop().expect("peeked");
            self.now = t;
            self.dispatch(ev);
            if self.open_flows == 0
                && self.long_lived_running == 0
                && self.next_start >= self.start_order.len()
                && self.dependent_starts_pending == 0
            {
                self.finished = true;
                break RunStatus::Finished;
            }
        };
        self.loop_wall += wall.elapsed();
        status
    }

    /// Runs to the end.
    pub fn run(&mut self) -> RunStatus {
        self.advance(Nanos::MAX)
    }

    #[inline]
    fn dispatch(&mut self, ev: Event) {
        match ev {
            Event::Arrival(p) => {
                let (pid, meta, next) = self.ports[p as usize].pop_arrival(self.now);
                if let Some(t) = next {
                    self.events.push(t, Event::Arrival(p));
                }
                let to = self.ports[p as usize].to;
                self.receive(to, pid, meta);
            }
            Event::FlowStart => self.start_due_flows(),
            Event::StartDependent(f) => {
                self.dependent_starts_pending -= 1;
                self.start_flow(f as usize);
            }
            Event::Rto(f) => self.on_timer(f, true),
            Event::DelAck(f) => self.on_timer(f, false),
            Event::QueueSample => self.sample_queues(),
            Event::CwndSample => self.sample_cwnd(),
        }
    }

    #[inline]
    fn receive(&mut self, node: NodeId, pid: PacketId, meta: PacketMeta) {
        if !self.node_is_host[node.0 as usize] {
            // Forwarding reads only the metadata the port carried, not the packet.
            match self.routes.next_hop(node, meta.dst, meta.flow) {
                Some(port) => self.enqueue(port, pid, meta),
                None => {
                    self.no_route_drops += 1;
                    self.pool.free(pid);
                }
            }
            return;
        }
        self.pool.get_mut(pid).flags = meta.flags;
        let p = self.pool.get(pid);
        let f = p.flow.0 as usize;
        self.packets_consumed += 1;
        if p.kind == PacketKind::Data {
            self.data_packets_delivered += 1;
            self.payload_bytes_delivered += p.payload_bytes as u64;
        }
        let Some(conn) = self.conns[f].as_deref_mut() else {
            self.late_packets += 1;
            self.pool.free(pid);
            return;
        };
        match p.kind {
            PacketKind::Data | PacketKind::Syn => conn.rcv.on_packet(self.now, p, &mut self.out),
            PacketKind::Ack | PacketKind::SynAck => conn.snd.on_packet(self.now, p, &mut self.out),
        }
        self.pool.free(pid);
        self.after_flow_activity(f);
    }

    /// Sends what a flow produced, completes it if done, and re-arms its timers.
    #[inline]
    fn after_flow_activity(&mut self, f: usize) {
        self.flush_out();
        let conn = self.conns[f].as_deref().expect("active flow");
        if conn.snd.is_complete() {
            self.complete(f);
            return;
        }
        let rto = conn.snd.rto_deadline();
        let delack = conn.rcv.delack_deadline();
        let timers = &mut self.timers[f];
        if let Some(d) = rto {
            if d.0 < timers.rto_at {
                timers.rto_at = d.0;
                self.events.push(d, Event::Rto(f as u32));
            }
        }
        if let Some(d) = delack {
            if d.0 < timers.delack_at {
                timers.delack_at = d.0;
                self.events.push(d, Event::DelAck(f as u32));
            }
        }
    }

    fn on_timer(&mut self, f: u32, rto: bool) {
        let f = f as usize;
        let at = if rto { &mut self.timers[f].rto_at } else { &mut self.timers[f].delack_at };
        if *at != self.now.0 {
            return; // superseded
        }
        *at = NONE;
        let now = self.now;
        let Some(conn) = self.conns[f].as_deref_mut() else { return };
        if rto {
            match conn.snd.rto_deadline() {
                Some(d) if d <= now => conn.snd.on_rto(now, &mut self.out),
                _ => {}
            }
        } else {
            match conn.rcv.delack_deadline() {
                Some(d) if d <= now => conn.rcv.on_delack_timer(now, &mut self.out),
                _ => {}
            }
        }
        self.after_flow_activity(f);
    }

    #[inline]
    fn flush_out(&mut self) {
        let mut out = std::mem::take(&mut self.out);
        for p in out.drain(..) {
            let src = p.src;
            let meta = p.meta();
            let pid = self.pool.alloc(p);
            self.packets_created += 1;
            match self.routes.next_hop(src, meta.dst, meta.flow) {
                Some(port) => self.enqueue(port, pid, meta),
                None => {
                    self.no_route_drops += 1;
                    self.pool.free(pid);
                }
            }
        }
        self.out = out;
    }

    #[inline]
    fn enqueue(&mut self, port: PortId, pid: PacketId, meta: PacketMeta) {
        match self.ports[port.0 as usize].enqueue(self.now, pid, meta) {
            EnqueueOutcome::Accepted { schedule_arrival: Some(t) } => self.events.push(t, Event::Arrival(port.0)),
            EnqueueOutcome::Accepted { schedule_arrival: None } => {}
            EnqueueOutcome::Dropped => self.pool.free(pid),
        }
    }

    fn start_due_flows(&mut self) {
        while self.next_start < self.start_order.len() {
            let f = self.start_order[self.next_start] as usize;
            if self.flows[f].start > self.now {
                self.events.push(self.flows[f].start, Event::FlowStart);
                return;
            }
            self.next_start += 1;
            self.start_flow(f);
        }
    }

    fn start_flow(&mut self, f: usize) {
        let spec = &self.scenario.flows[f];
        let rec = &mut self.flows[f];
        rec.started = true;
        rec.start = self.now;
        self.flows_started += 1;
        let id = FlowId(f as u32);
        let info = fctlab_transport::FlowInfo { start: self.now, deadline: rec.deadline };
        let snd = TcpSender::new(id, rec.src, rec.dst, rec.size, &self.tcp, spec.cc.build(&info), spec.ecn);
        let rcv = TcpReceiver::new(id, rec.dst, rec.src, &self.tcp);
        if rec.size.is_some() {
            self.open_flows += 1;
        } else {
            self.long_lived_running += 1;
        }
        let mut conn = Box::new(Conn { snd, rcv });
        conn.snd.start(self.now, &mut self.out);
        self.conns[f] = Some(conn);
        self.after_flow_activity(f);
    }

    fn complete(&mut self, f: usize) {
        let conn = self.conns[f].take().expect("active flow");
        let rec = &mut self.flows[f];
        rec.finish = Some(self.now);
        rec.bytes_delivered = conn.rcv.bytes_delivered();
        rec.retransmits = conn.snd.retransmits;
        rec.timeouts = conn.snd.timeouts;
        rec.packets_sent = conn.snd.packets_sent;
        self.timers[f] = FlowTimers { rto_at: NONE, delack_at: NONE };
        self.open_flows -= 1;
        if let Some(g) = self.scenario.flows[f].group_id {
            let open = &mut self.group_open[g as usize];
            *open -= 1;
            if *open == 0 {
                // The group is complete: start the flows waiting for it, each after its delay.
                let waiting = std::mem::take(&mut self.dependents[g as usize]);
                for d in waiting {
                    let delay = self.scenario.flows[d as usize].start;
                    self.dependent_starts_pending += 1;
                    self.events.push(self.now + delay, Event::StartDependent(d));
                }
            }
        }
    }

    fn sample_queues(&mut self) {
        let Some(interval) = self.scenario.monitor.queue_interval else { return };
        let now = self.now;
        if let Some(s) = self.samples.as_mut() {
            for (pi, name) in &self.sampled_ports {
                let (pk, by) = self.ports[*pi as usize].queue_at(now);
                s.push(QueueSample { time_s: now.as_secs_f64(), link_id: *pi as u64, link: name.clone(), queue_pkts: pk as u64, queue_bytes: by });
            }
        }
        // Keep sampling only while something else can still happen.
        if !self.events.is_empty() || self.next_start < self.start_order.len() {
            self.events.push(now + interval, Event::QueueSample);
        }
    }

    fn sample_cwnd(&mut self) {
        let Some(interval) = self.scenario.monitor.cwnd_interval else { return };
        let now = self.now;
        if let Some(s) = self.cwnd_samples.as_mut() {
            for (k, &f) in self.cwnd_traced.iter().enumerate() {
                let Some(c) = self.conns[f as usize].as_deref() else { continue };
                let acked = c.snd.bytes_acked();
                let rate = (acked - self.cwnd_last_acked[k]) as f64 * 8.0 / interval.as_secs_f64();
                self.cwnd_last_acked[k] = acked;
                s.push(CwndSample {
                    time_s: now.as_secs_f64(),
                    flow_id: f as u64,
                    cwnd_bytes: c.snd.st.cwnd_bytes,
                    ssthresh_bytes: (c.snd.st.ssthresh_bytes < u64::MAX / 4).then_some(c.snd.st.ssthresh_bytes),
                    rate_bps: rate,
                    weight: c.snd.cc.weight(),
                });
            }
        }
        if !self.events.is_empty() || self.next_start < self.start_order.len() {
            self.events.push(now + interval, Event::CwndSample);
        }
    }

    /// Collects the results (callable at any point; unfinished flows are marked so).
    pub fn results(&mut self, interrupted: bool) -> Results {
        let now = self.now;
        let topo = &self.scenario.topology;
        let name = |n: NodeId| topo.nodes[n.0 as usize].name.clone();
        let mut flows = Vec::with_capacity(self.flows.len());
        for (i, rec) in self.flows.iter().enumerate() {
            let spec = &self.scenario.flows[i];
            let (delivered, retx, tos, sent) = match self.conns[i].as_deref() {
                Some(c) => (c.rcv.bytes_delivered(), c.snd.retransmits, c.snd.timeouts, c.snd.packets_sent),
                None => (rec.bytes_delivered, rec.retransmits, rec.timeouts, rec.packets_sent),
            };
            let fct = rec.finish.map(|t| (t - rec.start).as_secs_f64());
            let ideal = rec.ideal.map(|d| d.as_secs_f64());
            flows.push(FlowResult {
                flow_id: i as u64,
                src: name(rec.src),
                dst: name(rec.dst),
                size_bytes: rec.size,
                bytes_delivered: delivered,
                start_s: rec.started.then(|| rec.start.as_secs_f64()),
                finish_s: rec.finish.map(|t| t.as_secs_f64()),
                fct_s: fct,
                ideal_fct_s: ideal,
                slowdown: match (fct, ideal) {
                    (Some(f), Some(i)) if i > 0.0 => Some(f / i),
                    _ => None,
                },
                completed: rec.finish.is_some(),
                protocol: rec.protocol.to_string(),
                retransmits: retx,
                timeouts: tos,
                deadline_s: rec.deadline.map(|d| d.as_secs_f64()),
                tag: spec.tag.clone(),
                group: spec.group.clone(),
                packets_sent: sent,
            });
        }
        let sim_s = now.as_secs_f64();
        let mut links = Vec::with_capacity(self.ports.len());
        let (mut drops, mut marks) = (0, 0);
        for (i, p) in self.ports.iter_mut().enumerate() {
            let mean_q = p.mean_queue_pkts(now);
            drops += p.stats.drops;
            marks += p.stats.ecn_marks;
            let (bp, bb) = match p.limit {
                BufferLimit::Packets(n) => (Some(n as u64), None),
                BufferLimit::Bytes(b) => (None, Some(b)),
                BufferLimit::Unlimited => (None, None),
            };
            links.push(LinkResult {
                link_id: i as u64,
                src: name(p.from),
                dst: name(p.to),
                level: if self.node_is_host[p.from.0 as usize] { "nic".to_string() } else { self.port_level[i].to_string() },
                rate_bps: p.rate.as_f64(),
                delay_s: p.delay.as_secs_f64(),
                buffer_pkts: bp,
                buffer_bytes: bb,
                tx_packets: p.stats.tx_packets,
                tx_bytes: p.stats.tx_bytes,
                drops: p.stats.drops,
                ecn_marks: p.stats.ecn_marks,
                utilization: if sim_s > 0.0 { p.stats.tx_bytes as f64 * 8.0 / (p.rate.as_f64() * sim_s) } else { 0.0 },
                max_queue_pkts: p.stats.max_queue_pkts as u64,
                max_queue_bytes: p.stats.max_queue_bytes,
                mean_queue_pkts: mean_q,
            });
        }
        let wall = self.loop_wall.as_secs_f64();
        let events = self.events.events_processed();
        let summary = Summary {
            scenario_name: self.scenario.name.clone(),
            scenario_sha256: self.scenario.sha256.clone(),
            seed: self.scenario.seed,
            version: VERSION.to_string(),
            sim_time_s: sim_s,
            wall_time_s: wall,
            events,
            events_per_s: if wall > 0.0 { events as f64 / wall } else { 0.0 },
            data_packets_delivered: self.data_packets_delivered,
            data_packets_delivered_per_wall_s: if wall > 0.0 { self.data_packets_delivered as f64 / wall } else { 0.0 },
            payload_bytes_delivered: self.payload_bytes_delivered,
            flows_total: self.flows.len() as u64,
            flows_completed: self.flows.iter().filter(|f| f.finish.is_some()).count() as u64,
            flows_started: self.flows_started,
            drops: drops + self.no_route_drops,
            ecn_marks: marks,
            packets_created: self.packets_created,
            packets_consumed: self.packets_consumed,
            packets_in_network: self.pool.live() as u64,
            peak_packets_in_network: self.pool.peak_live() as u64,
            late_packets: self.late_packets,
            interrupted,
        };
        Results { flows, links, queues: self.samples.clone(), cwnd: self.cwnd_samples.clone(), summary }
    }
}

/// Best-case completion time of `size` bytes over the path `fwd` (ACKs back over `rev`): all
/// segments leave the sender back to back at time zero and cross the store-and-forward path
/// with no other traffic and no window limit; the flow completes when the ACK of the last
/// segment is back. The pipeline is computed packet by packet (a packet starts on a hop when
/// it has arrived there and the previous packet has left); once it is in steady state, the
/// remaining full-size segments advance every hop by the largest per-hop serialization time,
/// so long flows cost no more than short ones. A handshake adds one round trip of
/// header-only packets.
fn ideal_fct(size: u64, fwd: &[PortId], rev: &[PortId], ports: &[Port], tcp: &TcpConfig) -> Nanos {
    let mss = tcp.mss_bytes as u64;
    let hdr = tcp.header_bytes as u64;
    let segments = size.div_ceil(mss).max(1);
    let first_wire = size.min(mss) + hdr;
    let full_wire = mss + hdr;
    let last_wire = size.saturating_sub((segments - 1) * mss) + hdr;
    let hops: Vec<(fctlab_engine::BitsPerSec, Nanos)> = fwd.iter().map(|p| (ports[p.0 as usize].rate, ports[p.0 as usize].delay)).collect();
    let mut fin = vec![Nanos::ZERO; hops.len()];
    let send = |bytes: u64, fin: &mut [Nanos]| -> Nanos {
        pipeline(&hops, Nanos::ZERO, bytes, fin)
    };
    let mut arrival = send(first_wire, &mut fin);
    let mut prev_arrival = None;
    if segments >= 2 {
        let middle = segments - 2;
        let direct = middle.min(hops.len() as u64 + 2);
        let mut a = arrival;
        for _ in 0..direct {
            a = send(full_wire, &mut fin);
        }
        let rest = middle - direct;
        if rest > 0 {
            let step = hops.iter().map(|(r, _)| r.tx_time(full_wire)).max().unwrap_or(Nanos::ZERO);
            for f in fin.iter_mut() {
                *f += step.mul(rest);
            }
            a += step.mul(rest);
        }
        prev_arrival = Some(a);
        arrival = send(last_wire, &mut fin);
    }
    // The last ACK may queue behind the one before it (a short last segment follows its
    // predecessor closely); earlier ACKs are spaced by full-size data and cannot interfere.
    let rhops: Vec<(fctlab_engine::BitsPerSec, Nanos)> = rev.iter().map(|p| (ports[p.0 as usize].rate, ports[p.0 as usize].delay)).collect();
    let mut rfin = vec![Nanos::ZERO; rhops.len()];
    if let Some(a) = prev_arrival {
        pipeline(&rhops, a, hdr, &mut rfin);
    }
    let mut t = pipeline(&rhops, arrival, hdr, &mut rfin);
    if tcp.handshake {
        for p in fwd.iter().chain(rev) {
            let port = &ports[p.0 as usize];
            t += port.rate.tx_time(hdr) + port.delay;
        }
    }
    t
}

/// Sends one packet of `bytes` into a store-and-forward path at time `at`; `fin` holds each
/// hop's finish time of the previous packet and is updated. Returns the arrival time.
fn pipeline(hops: &[(fctlab_engine::BitsPerSec, Nanos)], at: Nanos, bytes: u64, fin: &mut [Nanos]) -> Nanos {
    let mut arrive = at;
    for (i, &(rate, delay)) in hops.iter().enumerate() {
        let start = arrive.max(fin[i]);
        fin[i] = start + rate.tx_time(bytes);
        arrive = fin[i] + delay;
    }
    arrive
}
