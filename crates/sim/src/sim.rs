//! The event loop: events, flows starting and completing, packets moving between ports and
//! hosts, and timers.

use crate::build::{Network, HOP_REVERSE};
use crate::conn::Conn;
use crate::flowtable::{FlowCounts, FlowTable};
use crate::monitor::{DropSite, Monitor};
use crate::pcap::Capture;
use crate::sched::HostLayer;
use fctlab_engine::{EventQueue, Nanos, OptNanos};
use fctlab_net::balance::Balancer;
use fctlab_net::packet::flags;
use fctlab_net::{
    DropCause, EnqueueOutcome, FlowId, NodeId, Packet, PacketId, PacketKind, PacketMeta, PacketPool, PortId,
};
use fctlab_scenario::{FlowFeed, FlowPart, FlowSpec, Scenario, ScenarioError};
use fctlab_transport::cc::{PortControl, PortInfo, PortView};
use fctlab_transport::transport::{Grant, HostReceiver, Incoming};
use fctlab_transport::{FlowInfo, RoceReceiver, RoceSender, TransportKind};
use std::time::Instant;

#[derive(Copy, Clone, Debug)]
pub(crate) enum Event {
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
    /// The control interval of a port running a router-assisted protocol ended.
    PortTick(u32),
    /// A pause frame arrives at the port it stops or resumes (`pfc::frame_code`).
    PfcFrame(u32),
    /// A lossless port's transmitter frees: its next packet starts.
    PfcWake(u32),
    /// A host's NIC port can take a packet from the RoCE queue pairs in its line (`nic.rs`).
    NicWake(u32),
    /// A host's pull pacer may send its next pull (`pull.rs`), by node.
    PullWake(u32),
}

impl fctlab_engine::TieKey for Event {
    /// The event's kind and the port, flow, node or frame it acts on: equal only for equal
    /// events.
    #[inline]
    fn tie_key(&self) -> u64 {
        let (kind, id) = match *self {
            Event::Arrival(p) => (0, p),
            Event::FlowStart => (1, 0),
            Event::StartDependent(f) => (2, f),
            Event::Rto(f) => (3, f),
            Event::DelAck(f) => (4, f),
            Event::QueueSample => (5, 0),
            Event::CwndSample => (6, 0),
            Event::PortTick(p) => (7, p),
            Event::PfcFrame(c) => (8, c),
            Event::PfcWake(p) => (9, p),
            Event::NicWake(p) => (10, p),
            Event::PullWake(n) => (11, n),
        };
        (kind as u64) << 32 | id as u64
    }
}

/// Without a `stop_time`, a run ends when every flow has completed, or at this simulated
/// time at the latest (flows that cannot complete, e.g. behind a dead link, are then reported
/// unfinished instead of running forever).
pub const DEFAULT_HORIZON: Nanos = Nanos::from_secs(3600);

/// Where a run stands after [`Simulation::advance`].
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum RunStatus {
    /// Stopped at the requested limit; more to do.
    Paused,
    /// The run is over: stop time reached, or every flow done and nothing left to happen.
    Finished,
}

/// Counters of the whole run.
#[derive(Copy, Clone, Debug, Default)]
pub(crate) struct RunCounts {
    pub data_packets_delivered: u64,
    pub payload_bytes_delivered: u64,
    pub packets_created: u64,
    pub packets_consumed: u64,
    pub no_route_drops: u64,
    pub late_packets: u64,
    pub flows_started: u64,
    /// Trimmed headers that reached their host.
    pub trimmed_delivered: u64,
}

pub struct Simulation {
    pub(crate) scenario: Scenario,
    pub(crate) now: Nanos,
    pub(crate) events: EventQueue<Event>,
    pub(crate) pool: PacketPool,
    pub(crate) net: Network,
    pub(crate) flows: FlowTable,
    /// Flows completed, and flows started in the `[measure]` window (every flow's state is
    /// not kept to the end).
    pub(crate) flows_completed: u64,
    pub(crate) flows_measured: u64,
    /// Flows that start at a fixed time, by start time (drawn ones drawn as they start).
    feed: FlowFeed,
    /// Flows of each group not yet completed.
    group_open: Vec<u32>,
    /// Flows waiting for each group to complete.
    dependents: Vec<Vec<u32>>,
    /// Dependent flows scheduled to start but not started yet.
    dependent_starts_pending: usize,
    pub(crate) out: Vec<Packet>,
    open_flows: usize,
    long_lived_running: usize,
    pub(crate) monitor: Monitor,
    pub(crate) counts: RunCounts,
    pub(crate) loop_wall: std::time::Duration,
    finished: bool,
    /// The switch side of each router-assisted protocol the run's flows use (in the order
    /// of their first flows), one per output port: protocol k's control of port p at
    /// `k * ports + p` (empty when no flow uses one); and whether each control's timer runs.
    port_ctl: Vec<Box<dyn PortControl>>,
    port_ticking: Vec<bool>,
    /// The router-assisted protocols, k above.
    router_names: Vec<&'static str>,
    /// The flow scheduling layer, when `[transport] scheduler` asks for one, and the flows
    /// its last step completed.
    pub(crate) host: Option<HostLayer>,
    host_done: Vec<u32>,
    /// The queue discipline that gives flows packet priorities by their tags (strict
    /// priority), if one of the run's does.
    classifier: Option<fctlab_net::QueueConfig>,
    /// The receiving side of the receiver-driven protocol (Homa) at each host that receives
    /// its flows, by node (empty until such a flow starts), and the grants of its last step.
    receivers: Vec<Option<Box<dyn HostReceiver>>>,
    grants: Vec<Grant>,
    /// Packet captures (`[monitor] pcap`).
    pub(crate) capture: Option<Box<Capture>>,
    /// Rows of finished flows are handed out during the run ([`Simulation::stream_flow_rows`]).
    pub(crate) streaming: bool,
    /// Priority flow control (`[network] pfc = true`), and whether the run has it.
    pub(crate) pfc: Option<Box<crate::pfc::Pfc>>,
    pub(crate) pfc_on: bool,
    /// A shared buffer per switch without PFC (`[network] switch_buffer`): its dynamic
    /// thresholds at the output queues.
    shared: Option<Box<crate::shared::SharedEgress>>,
    /// Flows whose rows are final and not handed out yet, in the order they became final.
    pub(crate) final_rows: Vec<u32>,
    /// The RoCE queue pairs waiting for their NIC (`nic.rs`).
    pub(crate) nics: crate::nic::Nics,
    /// Per-packet path choice (`[network] load_balancing`), or none: per-flow ECMP, each
    /// packet following its flow's paths.
    pub(crate) balance: Option<fctlab_net::balance::Balancer>,
    /// The pull pacer of each host that receives `ndp` flows, by node (`pull.rs`).
    pub(crate) pacers: Vec<Option<Box<crate::pacer::Pacer>>>,
    /// Events counted by part and window of a partition (`window_profile.rs`), if asked for.
    pub(crate) window_profile: Option<Box<crate::window_profile::WindowProfile>>,
}

impl Simulation {
    /// Builds the network and flow table of a validated scenario. Fails (never panics) when a
    /// flow has no route or the topology is disconnected.
    pub fn new(scenario: Scenario) -> Result<Simulation, ScenarioError> {
        let net = Network::build(&scenario)?;
        let flows = FlowTable::new(scenario.flows.len());
        let mut group_open = vec![0u32; scenario.groups.len()];
        let mut dependents: Vec<Vec<u32>> = vec![Vec::new(); scenario.groups.len()];
        // (A drawn flow has no group and waits for none.)
        for (i, f) in scenario.flows.listed_flows() {
            if let Some(g) = f.group_id {
                group_open[g as usize] += 1;
            }
            if let Some(a) = f.after {
                dependents[a as usize].push(i as u32);
            }
        }
        let feed = scenario.flows.feed();
        let monitor = Monitor::new(&scenario, &net);
        let capture = Capture::new(&scenario, &net);
        let (port_ctl, router_names) = router_families(&scenario, &net)?;
        let port_ticking = vec![false; port_ctl.len()];
        if scenario.scheduler.is_some() {
            let roce = one_configuration(&scenario, |cc| cc.transport() == TransportKind::Roce, |_| &[], "")?;
            if let Some((i, cc)) = roce.first() {
                return Err(scenario.error(
                    "transport.scheduler",
                    format!(
                        "the flow scheduling layer runs over TCP connections, and flows[{i}] runs protocol \"{}\" on the roce transport",
                        cc.name()
                    ),
                ));
            }
        }
        let shared = match (&scenario.shared_buffer, &scenario.pfc) {
            (Some(b), None) => Some(Box::new(crate::shared::SharedEgress::new(b, &net))),
            _ => None,
        };
        let host = HostLayer::new(&scenario);
        let classifier = [&scenario.switch_queue, &scenario.nic_queue].into_iter().find(|q| q.classifies()).cloned();
        let pfc = match scenario.pfc {
            Some(_) => Some(Box::new(crate::pfc::Pfc::new(&scenario, &net)?)),
            None => None,
        };
        let balance = scenario.balance.build(
            net.node_is_host.len(),
            scenario.flows.len(),
            scenario.seed,
            fctlab_engine::rng::splitmix64(scenario.seed ^ 0x4E95),
        );
        let mut sim = Simulation {
            balance,
            pacers: Vec::new(),
            window_profile: None,
            now: Nanos::ZERO,
            events: EventQueue::new(),
            pool: PacketPool::new(),
            net,
            flows,
            flows_completed: 0,
            flows_measured: 0,
            feed,
            group_open,
            dependents,
            dependent_starts_pending: 0,
            out: Vec::with_capacity(64),
            open_flows: 0,
            long_lived_running: 0,
            monitor,
            scenario,
            counts: RunCounts::default(),
            loop_wall: std::time::Duration::ZERO,
            finished: false,
            port_ctl,
            port_ticking,
            router_names,
            host,
            host_done: Vec::new(),
            classifier,
            receivers: Vec::new(),
            grants: Vec::new(),
            capture,
            streaming: false,
            final_rows: Vec::new(),
            nics: Default::default(),
            pfc_on: pfc.is_some(),
            shared,
            pfc,
        };
        if let Some((t, _)) = sim.feed.peek() {
            sim.events.push(t, Event::FlowStart);
        }
        if sim.monitor.queues.is_some() {
            sim.events.push(Nanos::ZERO, Event::QueueSample);
        }
        if sim.monitor.cwnd.is_some() {
            sim.events.push(Nanos::ZERO, Event::CwndSample);
        }
        Ok(sim)
    }

    /// Orders events of equal time by their own key rather than the order they were
    /// scheduled in (`Ties::Keyed`: the order a run split among threads keeps), or back.
    /// Only before the run starts (later: an error).
    pub fn set_ties(&mut self, ties: fctlab_engine::Ties) -> Result<(), String> {
        if self.events.events_processed() > 0 {
            return Err("the order of simultaneous events can be set only before the run starts".into());
        }
        let mut q = EventQueue::with_ties(ties);
        while let Some((t, ev)) = self.events.pop() {
            q.push(t, ev);
        }
        self.events = q;
        Ok(())
    }

    pub fn now(&self) -> Nanos {
        self.now
    }
    pub fn scenario(&self) -> &Scenario {
        &self.scenario
    }
    pub fn flows_completed(&self) -> usize {
        self.flows_completed as usize
    }
    /// Pages of flow state held now (see `FlowTable`): with rows streamed, they follow the
    /// flows alive, not every flow of the run.
    pub fn flow_state_pages(&self) -> usize {
        self.flows.pages_live()
    }
    pub fn is_finished(&self) -> bool {
        self.finished
    }

    /// Why the run cannot go on as its scenario says, if it cannot: a trace file read as the
    /// run goes on changed since the scenario was loaded. The flows after that point of the
    /// trace do not start; the caller reports the error instead of results.
    pub fn failure(&self) -> Option<String> {
        let deadlock = self.pfc.as_deref().and_then(|p| p.deadlock.as_deref());
        self.feed.failure().or(deadlock).map(|m| format!("{}: {m}", self.scenario.file))
    }

    /// Runs until simulated time `until` (inclusive), the stop time, or the end of the run.
    pub fn advance(&mut self, until: Nanos) -> RunStatus {
        if self.finished {
            return RunStatus::Finished;
        }
        let wall = Instant::now();
        // Copies of the loop: the one without captures has no test for them per packet, the
        // one without a window profile none for it.
        let status = match (self.capture.is_some(), self.balance.is_some(), self.window_profile.is_some()) {
            (true, _, _) => self.event_loop::<true, true, false>(until),
            (false, true, false) => self.event_loop::<false, true, false>(until),
            (false, false, false) => self.event_loop::<false, false, false>(until),
            (false, true, true) => self.event_loop::<false, true, true>(until),
            (false, false, true) => self.event_loop::<false, false, true>(until),
        };
        self.loop_wall += wall.elapsed();
        status
    }

    /// Handles events up to `until`; `CAPTURE`: hands packets to the captures.
    #[inline(never)]
    /// `SPRAY`: a per-packet path choice may run (the loop without one never asks).
    /// `PROFILE`: each event is counted in the window profile first.
    fn event_loop<const CAPTURE: bool, const SPRAY: bool, const PROFILE: bool>(&mut self, until: Nanos) -> RunStatus {
        let stop = self.scenario.stop_time.unwrap_or(DEFAULT_HORIZON);
        loop {
            let Some(t) = self.events.peek_time() else {
                self.finished = true;
                return RunStatus::Finished;
            };
            if t > stop {
                self.now = stop;
                self.finished = true;
                return RunStatus::Finished;
            }
            if t > until {
                self.now = until;
                return RunStatus::Paused;
            }
            let (t, ev) = self.events.pop().expect("peeked");
            self.now = t;
            if PROFILE {
                self.profile_event(t, ev);
            }
            self.prefetch_ahead::<SPRAY>();
            self.dispatch::<CAPTURE, SPRAY>(ev);
            if self.open_flows == 0
                && self.long_lived_running == 0
                && self.feed.remaining() == 0
                && self.dependent_starts_pending == 0
            {
                self.finished = true;
                return RunStatus::Finished;
            }
        }
    }

    /// Ends the run now (a deadlock): nothing is left to happen.
    #[cold]
    pub(crate) fn stop_now(&mut self) {
        while self.events.pop().is_some() {}
        self.finished = true;
    }

    /// Runs to the end.
    pub fn run(&mut self) -> RunStatus {
        self.advance(Nanos::MAX)
    }

    /// Most events are arrivals at a port chosen at random among thousands: the cache lines
    /// the next ones need are requested ahead, each step needing the line the step before
    /// requested one event earlier: the port of the event after next but one, the ring head
    /// of the one after next, and for the next its packet when it arrives at a host, else the
    /// port it goes to.
    #[inline(always)]
    fn prefetch_ahead<const SPRAY: bool>(&self) {
        let ports = &self.net.ports;
        if let Some(&Event::Arrival(q)) = self.events.upcoming(2) {
            if let Some(port) = ports.get(q as usize) {
                fctlab_engine::prefetch(port);
            }
        }
        if let Some(&Event::Arrival(q)) = self.events.upcoming(1) {
            if let Some(port) = ports.get(q as usize) {
                port.prefetch_head();
            }
        }
        if let Some(&Event::Arrival(q)) = self.events.upcoming(0) {
            if let Some(port) = ports.get(q as usize) {
                if let Some((pid, meta)) = port.head() {
                    if self.net.node_is_host[port.to.0 as usize] {
                        self.pool.prefetch(pid);
                    } else if SPRAY {
                        // (A packet that chooses its next hop at the node has no port to
                        // prefetch yet.)
                    } else if let Some(next) =
                        self.flows.next_port(meta.flow, meta.hop).and_then(|(p, _)| ports.get(p.0 as usize))
                    {
                        fctlab_engine::prefetch(next);
                    }
                }
            }
        }
    }

    #[inline(always)]
    fn dispatch<const CAPTURE: bool, const SPRAY: bool>(&mut self, ev: Event) {
        match ev {
            Event::Arrival(p) => {
                if CAPTURE {
                    self.capture_head(p as usize);
                }
                let (pid, meta, next) = self.net.ports[p as usize].pop_arrival(self.now);
                if let Some(t) = next {
                    self.events.push(t, Event::Arrival(p));
                }
                if self.pfc_on {
                    self.pfc_touched(p as usize);
                }
                let to = self.net.ports[p as usize].to;
                self.receive::<SPRAY>(to, pid, meta, p);
            }
            Event::FlowStart => self.start_due_flows(),
            Event::StartDependent(f) => {
                self.dependent_starts_pending -= 1;
                self.start_flow(f as usize, None);
            }
            Event::Rto(f) => self.on_timer(f, true),
            Event::DelAck(f) => self.on_timer(f, false),
            Event::QueueSample => self.sample_queues(),
            Event::CwndSample => self.sample_cwnd(),
            Event::PortTick(p) => self.port_tick(p as usize),
            Event::PfcFrame(c) => self.on_pfc_frame(c),
            Event::PfcWake(p) => self.on_pfc_wake(p),
            Event::NicWake(p) => self.on_nic_wake(p),
            Event::PullWake(n) => self.on_pull_wake(n),
        }
    }

    /// A packet with a router header is offered to port `port`: its control reads and may
    /// rewrite the header (in the packet itself), and starts its timer if it was idle.
    #[inline(never)]
    fn port_control(&mut self, port: PortId, pid: PacketId, meta: PacketMeta) {
        let nports = self.net.ports.len();
        let hdr = self.pool.router_mut(pid);
        let i = hdr.owner as usize * nports + port.0 as usize;
        let Some(ctl) = self.port_ctl.get_mut(i) else { return };
        let p = &mut self.net.ports[port.0 as usize];
        let (queue_pkts, queue_bytes) = p.queue_at(self.now);
        let v = PortView { now: self.now, queue_pkts, queue_bytes, tx_bytes: p.tx_bytes() };
        ctl.on_packet(&v, meta.kind, meta.wire_bytes as u32, hdr);
        if !self.port_ticking[i] {
            self.port_ticking[i] = true;
            let t = self.now + ctl.interval();
            self.events.push(t, Event::PortTick(i as u32));
        }
    }

    /// Control `i`'s interval ended (protocol `i / ports`, port `i % ports`).
    fn port_tick(&mut self, i: usize) {
        let port = i % self.net.ports.len();
        let p = &mut self.net.ports[port];
        let (queue_pkts, queue_bytes) = p.queue_at(self.now);
        let v = PortView { now: self.now, queue_pkts, queue_bytes, tx_bytes: p.tx_bytes() };
        match self.port_ctl[i].on_tick(&v) {
            Some(dt) => self.events.push(self.now + dt, Event::PortTick(i as u32)),
            None => self.port_ticking[i] = false,
        }
    }

    /// The controls of port `i`, one per router-assisted protocol of the run.
    fn controls_of(&self, i: usize) -> impl Iterator<Item = &dyn PortControl> + '_ {
        let n = self.net.ports.len();
        self.port_ctl.iter().skip(i).step_by(n.max(1)).map(|c| &**c)
    }

    /// The rate the control of port `i` offers now (router-assisted runs; the first protocol
    /// that offers one).
    pub fn port_offered_rate(&self, i: usize) -> Option<f64> {
        self.controls_of(i).find_map(|c| c.offered_rate())
    }

    /// The active flows per class that the control of port `i` counts (class-based protocols).
    pub fn port_class_counts(&self, i: usize) -> Option<Vec<u32>> {
        self.controls_of(i).find_map(|c| c.class_counts())
    }

    /// Packet `pid` arrives at `node` by port `input` (the upstream node's output port).
    #[inline(always)]
    fn receive<const SPRAY: bool>(&mut self, node: NodeId, pid: PacketId, meta: PacketMeta, input: u32) {
        if !self.net.node_is_host[node.0 as usize] {
            // Forwarding reads only the metadata the port carried, not the packet: the next
            // port of its flow's path.
            let next = if SPRAY { self.route(node, &meta) } else { self.flows.next_port(meta.flow, meta.hop) };
            match next {
                Some((port, hop)) => {
                    // A lossless switch counts it against its input first (past the headroom:
                    // dropped).
                    if self.pfc_on && !self.pfc_in(input, pid, &meta) {
                        self.net.ports[input as usize].count_drop();
                        return self.dropped(DropSite::Port(input as usize), pid, DropCause::full_for(&meta));
                    }
                    self.enqueue(port, pid, PacketMeta { hop, ..meta })
                }
                None => self.dropped(DropSite::Node(node.0 as usize), pid, DropCause::NoRoute),
            }
            return;
        }
        let mut p = self.pool.take(pid);
        p.flags = meta.flags;
        if meta.has(flags::TRIMMED) {
            // A switch cut it to its header: the payload is gone.
            self.counts.trimmed_delivered += 1;
            p.payload_bytes = 0;
            p.wire_bytes = meta.wire_bytes as u32;
        }
        if SPRAY && self.balance.is_some() {
            p.entropy = meta.hop & !HOP_REVERSE;
        }
        let f = p.flow.0 as usize;
        self.counts.packets_consumed += 1;
        if p.kind == PacketKind::Data && p.payload_bytes > 0 {
            self.counts.data_packets_delivered += 1;
            self.counts.payload_bytes_delivered += p.payload_bytes as u64;
        }
        // (A flow with a packet in the network is not retired: its state is there.)
        let Some(st) = self.flows.get_mut(f) else { return };
        if self.streaming {
            st.packets_alive -= 1;
        }
        let Some(conn) = st.conn.as_deref_mut() else {
            // (A FIN was for the switches on the way; the receiver has nothing to do with it.)
            self.counts.late_packets += (p.kind != PacketKind::Fin) as u64;
            if self.streaming && st.packets_alive == 0 {
                self.row_final(f);
            }
            return;
        };
        match p.kind {
            PacketKind::Data | PacketKind::Syn => {
                let before = self.out.len();
                let wants = conn.on_data(self.now, &p, &mut self.out);
                if let (true, Some(Balancer::Reps(_))) = (SPRAY, &self.balance) {
                    // The replies it caused echo its entropy value (bit 7: an echo is there).
                    for r in &mut self.out[before..] {
                        r.entropy_echo = p.entropy | 0x80;
                    }
                }
                if wants {
                    if conn.is_pulled() {
                        self.pull_for(node, f);
                    } else {
                        self.host_grants(node, f);
                    }
                }
            }
            PacketKind::Ack | PacketKind::SynAck | PacketKind::Nack | PacketKind::Cnp | PacketKind::Pull => {
                if let (true, Some(Balancer::Reps(b))) = (SPRAY, self.balance.as_mut()) {
                    if p.entropy_echo & 0x80 != 0 && p.kind != PacketKind::Cnp {
                        let marked = p.has(flags::ECE) || p.kind == PacketKind::Nack;
                        b.on_reply(p.flow, p.entropy_echo & 0x7f, marked);
                    }
                }
                if conn.is_roce() {
                    self.nic_gate(f);
                }
                if let Some(conn) = self.flows.get_mut(f).and_then(|st| st.conn.as_deref_mut()) {
                    conn.on_reply(self.now, &p, &mut self.out)
                }
            }
            PacketKind::Fin => {} // for the switches on the way
        }
        self.after_flow_activity(f);
    }

    /// A data packet of a receiver-driven flow reached its host `node`: the host's side
    /// decides the grants, which the receivers of their flows send.
    #[cold]
    #[inline(never)]
    fn host_grants(&mut self, node: NodeId, f: usize) {
        let Some((_, rcv)) = self.flows.get_mut(f).and_then(|st| st.conn.as_deref()).and_then(Conn::tcp) else {
            return;
        };
        let msg = Incoming { flow: f as u32, size: rcv.message_size(), received: rcv.bytes_received() };
        let Some(Some(r)) = self.receivers.get_mut(node.0 as usize) else { return };
        let mut grants = std::mem::take(&mut self.grants);
        r.on_data(msg, &mut grants);
        for g in grants.drain(..) {
            let Some(st) = self.flows.get_mut(g.flow as usize) else { continue };
            let Some((_, rcv)) = st.conn.as_deref_mut().and_then(Conn::tcp_mut) else { continue };
            rcv.grant(self.now, g.offset, g.band, &mut self.out);
            if g.flow != msg.flow {
                self.after_flow_activity(g.flow as usize);
            }
        }
        self.grants = grants;
    }

    /// Sends what a flow produced, completes it if done, and re-arms its timers.
    #[inline]
    pub(crate) fn after_flow_activity(&mut self, f: usize) {
        self.flush_out();
        if self.host.is_some() {
            self.sync_host(f);
        }
        let Some(st) = self.flows.get_mut(f) else { return };
        let Some(conn) = st.conn.as_deref() else { return };
        let Some((rto, delack)) = conn.open_deadlines() else {
            self.complete(f);
            return;
        };
        // A deadline already past is due now: an event is never scheduled before the clock,
        // and its timer would otherwise wait for a time that has gone.
        let now = self.now;
        let rto = rto.map(|d| d.max(now));
        let delack = delack.map(|d| d.max(now));
        // One pending event per timer: a deadline that moved earlier gets a new event; one
        // that moved later is re-armed when the earlier event pops (see `on_timer`).
        if let Some(d) = rto {
            if st.rto_at.after(d) {
                st.rto_at = OptNanos::some(d);
                self.events.push(d, Event::Rto(f as u32));
            }
        }
        if let Some(d) = delack {
            if st.delack_at.after(d) {
                st.delack_at = OptNanos::some(d);
                self.events.push(d, Event::DelAck(f as u32));
            }
        }
    }

    /// Lets the scheduling layer catch up with connection `f`, and completes the flows whose
    /// last bytes that acknowledged.
    #[inline(never)]
    fn sync_host(&mut self, f: usize) {
        let Some(host) = self.host.as_mut() else { return };
        let mut done = std::mem::take(&mut self.host_done);
        host.sync(f, &self.flows, self.now, &mut done);
        for j in done.drain(..) {
            self.flow_done(j as usize);
        }
        self.host_done = done;
    }

    fn on_timer(&mut self, f: u32, rto: bool) {
        let f = f as usize;
        // (A retired flow's state is gone, and so is its timer.)
        let Some(st) = self.flows.get_mut(f) else { return };
        let at = if rto { &mut st.rto_at } else { &mut st.delack_at };
        if *at != OptNanos::some(self.now) {
            return; // superseded
        }
        *at = OptNanos::NONE;
        let now = self.now;
        if rto && st.conn.as_deref().is_some_and(Conn::is_roce) {
            self.nic_gate(f);
        }
        let Some(conn) = self.flows.get_mut(f).and_then(|st| st.conn.as_deref_mut()) else { return };
        if rto {
            match conn.sender_deadline() {
                Some(d) if d <= now => conn.on_sender_timer(now, &mut self.out),
                _ => {}
            }
        } else {
            match conn.receiver_deadline() {
                Some(d) if d <= now => conn.on_receiver_timer(now, &mut self.out),
                _ => {}
            }
        }
        self.after_flow_activity(f);
    }

    #[inline]
    fn flush_out(&mut self) {
        let mut out = std::mem::take(&mut self.out);
        // (Read once: per-flow ECMP's packets take their flow's path with no further test.)
        let spray = self.balance.is_some();
        for p in out.drain(..) {
            // Data and SYNs follow the flow's data path, ACKs and SYN-ACKs its reverse path.
            let reverse = p.kind.is_reverse();
            let mut meta = PacketMeta { hop: if reverse { HOP_REVERSE } else { 0 }, ..p.meta() };
            if spray {
                meta.hop |= self.sender_entropy(&p, reverse);
            }
            let from = p.src;
            if self.streaming || self.classifier.is_some() {
                if let Some(st) = self.flows.get_mut(meta.flow.0 as usize) {
                    st.packets_alive += self.streaming as u32;
                    // A packet its sender tagged keeps its band.
                    if !p.has(flags::TAGGED) {
                        meta.prio = st.prio;
                    }
                }
            }
            let pid = self.pool.alloc(p);
            self.counts.packets_created += 1;
            let next = if spray { self.route(from, &meta) } else { self.flows.next_port(meta.flow, meta.hop) };
            match next {
                Some((port, hop)) => self.enqueue(port, pid, PacketMeta { hop, ..meta }),
                None => {
                    let host = self.pool.get(pid).src;
                    self.dropped(DropSite::Node(host.0 as usize), pid, DropCause::NoRoute);
                }
            }
        }
        self.out = out;
    }

    /// Per-packet path choice: the entropy value a packet leaving its sender carries in its
    /// hop byte (beside the direction).
    #[cold]
    #[inline(never)]
    fn sender_entropy(&mut self, p: &Packet, reverse: bool) -> u8 {
        match self.balance.as_mut() {
            None => 0,
            // (The sender sprays over its paths in turn: their numbers.)
            Some(Balancer::Permutation(b)) => b.entropy(p.flow, reverse),
            // (REPS: a value acknowledged unmarked before, or a fresh one.)
            Some(Balancer::Reps(b)) => b.entropy(p.flow, reverse) & !HOP_REVERSE,
            // (The value the sender wrote.)
            Some(_) => p.entropy & !HOP_REVERSE,
        }
    }

    /// The port a packet at `node` takes next, and its metadata's hop byte after it: the
    /// next port of its flow's path, or under per-packet path choice the balancer's choice
    /// among the node's ports toward the packet's host (the hop byte then carries the
    /// direction and the sender's entropy value, which the balancer may rewrite).
    #[inline(always)]
    fn route(&mut self, node: NodeId, meta: &PacketMeta) -> Option<(PortId, u8)> {
        let Some(b) = self.balance.as_mut() else { return self.flows.next_port(meta.flow, meta.hop) };
        let to = self.flows.end_of(meta.flow, meta.hop & HOP_REVERSE != 0)?;
        let candidates = self.net.routes.candidates(node, to);
        let mut hop =
            fctlab_net::balance::Hop { now: self.now, node: node.0, flow: meta.flow, entropy: meta.hop & !HOP_REVERSE };
        let port = b.next(&mut hop, candidates, &mut self.net.ports)?;
        Some((port, meta.hop & HOP_REVERSE | hop.entropy & !HOP_REVERSE))
    }

    #[inline(always)]
    fn enqueue(&mut self, port: PortId, pid: PacketId, meta: PacketMeta) {
        if meta.has(flags::ROUTER) {
            self.port_control(port, pid, meta);
        }
        if let Some(sh) = self.shared.as_deref() {
            if !sh.admits(&mut self.net, port.0 as usize, meta.wire_bytes as u64, self.now) {
                let p = &mut self.net.ports[port.0 as usize];
                p.count_drop();
                return self.dropped(DropSite::Port(port.0 as usize), pid, DropCause::full_for(&meta));
            }
        }
        match self.net.ports[port.0 as usize].enqueue(self.now, pid, meta) {
            EnqueueOutcome::Accepted { schedule_arrival: Some(t) } => self.events.push(t, Event::Arrival(port.0)),
            EnqueueOutcome::Accepted { schedule_arrival: None } => {}
            EnqueueOutcome::Dropped(cause) => {
                if self.pfc_on {
                    self.pfc_forget(pid, &meta);
                }
                self.dropped(DropSite::Port(port.0 as usize), pid, cause)
            }
            EnqueueOutcome::Replaced { dropped } => {
                self.dropped(DropSite::Port(port.0 as usize), dropped, DropCause::PushedOut)
            }
        }
        if self.pfc_on {
            self.pfc_touched(port.0 as usize);
        }
    }

    /// Packet `pid` was dropped at `site` for `cause`: counted for its flow, traced, freed.
    #[cold]
    #[inline(never)]
    fn dropped(&mut self, site: DropSite, pid: PacketId, cause: DropCause) {
        if cause == DropCause::NoRoute {
            self.counts.no_route_drops += 1;
        }
        let p = self.pool.take(pid);
        if let Some(st) = self.flows.get_mut(p.flow.0 as usize) {
            st.drops += 1;
        }
        if self.streaming {
            self.packet_gone(p.flow.0 as usize);
        }
        self.monitor.record_drop(self.now, site, &p, cause);
    }

    /// Hands the head packet of port `p`, about to arrive, to the captures that tap the port.
    #[cold]
    #[inline(never)]
    fn capture_head(&mut self, p: usize) {
        let Some(cap) = self.capture.as_deref_mut() else { return };
        let port = &self.net.ports[p];
        if !cap.taps(p) {
            return;
        }
        let (Some((pid, meta)), Some((tx_start, arrive))) = (port.head(), port.head_times()) else { return };
        // The flags the network carried (marks) are in the metadata until the packet lands.
        let pkt = Packet { flags: meta.flags, ..self.pool.get(pid) };
        cap.record(p, port.from, port.to, tx_start, arrive, &pkt);
    }

    fn start_due_flows(&mut self) {
        while let Some((start, _)) = self.feed.peek() {
            if start > self.now {
                self.events.push(start, Event::FlowStart);
                return;
            }
            if let Some((f, drawn)) = self.feed.pop() {
                self.start_flow(f as usize, drawn);
            }
        }
    }

    /// Starts flow `f`, listed or `drawn` now: its state, its paths, its connection.
    fn start_flow(&mut self, f: usize, drawn: Option<FlowSpec>) {
        let drawn = drawn.map(Box::new);
        let Some(spec) = drawn.as_deref().or_else(|| self.scenario.flows.listed(f)) else { return };
        let id = FlowId(f as u32);
        if self.balance.is_some() {
            let (src, dst) = (NodeId(spec.src as u32), NodeId(spec.dst as u32));
            self.flows.set_ends(f, src, dst);
            if let Some(Balancer::Permutation(b)) = self.balance.as_mut() {
                b.set_paths(id, false, self.net.paths_between(src, dst));
                b.set_paths(id, true, self.net.paths_between(dst, src));
            }
        }
        let mut lens = (0, 0);
        let path = self.flows.set_paths(f, |out| {
            lens = self.net.paths_into(id, spec, out);
            lens
        });
        let (fwd, rev) = path.split_at(lens.0 as usize);
        // (The receiving host's link: the first port of the ACK path is its NIC.)
        let rcv_rate = rev.first().map(|p| self.net.ports[p.0 as usize].rate);
        let tcp = &self.scenario.tcp;
        let ideal = spec.size_bytes.map(|size| crate::ideal::ideal_fct(size, fwd, rev, &self.net.ports, tcp));
        // (The switches on the data path: every port but the sender's NIC.)
        let hops = fwd.len().saturating_sub(1) as u32;
        let base_rtt = if matches!(spec.cc.transport(), TransportKind::Roce | TransportKind::Uet) {
            crate::ideal::base_rtt(fwd, rev, &self.net.ports, tcp)
        } else {
            Nanos::ZERO
        };
        // A flow whose source has no path to its destination (its packets are dropped as
        // `no_route`) has no first port whose rate to take: unlimited.
        let nic_rate = fwd.first().map_or(fctlab_engine::BitsPerSec(u64::MAX), |p| self.net.ports[p.0 as usize].rate);
        let st = self.flows.open(f);
        st.started_at = OptNanos::some(self.now);
        st.ideal = ideal.into();
        // A protocol that tags its packets sets their bands itself; its ACKs go first.
        st.prio = match &self.classifier {
            Some(q) if !spec.cc.tags_packets() => q.class_of(&spec.tag),
            _ => 0,
        };
        self.counts.flows_started += 1;
        if self.scenario.measure.map_or(true, |m| m.contains(self.now)) {
            self.flows_measured += 1;
        }
        let (src, dst) = (NodeId(spec.src as u32), NodeId(spec.dst as u32));
        let info = FlowInfo {
            start: self.now,
            deadline: spec.deadline,
            size: spec.size_bytes,
            nic_rate,
            header_bytes: tcp.header_bytes,
            base_rtt,
            hops,
            mss_bytes: tcp.mss_bytes,
        };
        let owner = spec
            .cc
            .router_assisted()
            .then(|| self.router_names.iter().position(|n| *n == spec.cc.name()).unwrap_or(0) as u8);
        let kind = spec.cc.transport();
        // A pulled flow's receiving host paces its pulls: full packets at its link's rate (the
        // first port of the ACK path is its NIC), at the protocol's fraction of it.
        let pacer = matches!(kind, TransportKind::Ndp | TransportKind::Eqds).then(|| {
            let wire = tcp.mss_bytes as u64 + tcp.header_bytes as u64;
            Self::pull_spacing(wire, rcv_rate.unwrap_or(nic_rate).0, spec.cc.pull_rate().unwrap_or(1.0))
        });
        let ends = (src, dst);
        let conn = if matches!(kind, TransportKind::Ndp | TransportKind::Eqds | TransportKind::Uet) {
            Conn::new_trimmed(kind, id, ends, spec.size_bytes, tcp, spec.cc.build(&info), spec.ecn, nic_rate)
        } else if kind == TransportKind::Roce {
            let mut snd = RoceSender::new(id, src, dst, spec.size_bytes, tcp, spec.cc.build(&info), spec.ecn, nic_rate);
            snd.set_base_rtt(base_rtt);
            if let Some(o) = owner {
                snd.set_router_owner(o);
            }
            let rcv = RoceReceiver::new(id, dst, src, spec.size_bytes, tcp);
            Box::new(Conn::Roce { snd, rcv })
        } else {
            let host = if spec.cc.receiver_driven() {
                let n = self.net.node_is_host.len();
                self.receivers.resize_with(n, || None);
                let slot = &mut self.receivers[dst.0 as usize];
                if slot.is_none() {
                    *slot = spec.cc.receiver();
                }
                slot.as_deref()
            } else {
                None
            };
            Conn::new_tcp(id, (src, dst), spec.size_bytes, tcp, spec.cc.build(&info), spec.ecn, owner, host)
        };
        if let Some(spacing) = pacer {
            crate::pacer::ensure(&mut self.pacers, self.net.node_is_host.len(), dst, spacing);
        }
        if spec.size_bytes.is_some() {
            self.open_flows += 1;
        } else {
            self.long_lived_running += 1;
        }
        let st = self.flows.open(f);
        st.conn = Some(conn);
        if st.conn.as_deref().is_some_and(Conn::is_roce) {
            self.nic_gate(f);
        }
        let st = self.flows.open(f);
        if let Some(conn) = st.conn.as_deref_mut() {
            conn.start(self.now, &mut self.out);
        }
        st.drawn = drawn;
        if let Some(h) = self.host.as_mut() {
            h.open(f);
        }
        self.after_flow_activity(f);
    }

    /// One of flow `f`'s packets left the network (received or dropped).
    #[inline(always)]
    fn packet_gone(&mut self, f: usize) {
        let Some(st) = self.flows.get_mut(f) else { return };
        st.packets_alive -= 1;
        if st.packets_alive == 0 {
            self.row_final(f);
        }
    }

    /// Hands out the rows of finished flows while the run goes on: [`Simulation::take_flow_rows`]
    /// then returns each flow's row once it is final, and [`Simulation::results`] only the
    /// rows not taken. A row is final when the flow has finished, its connection has closed and
    /// none of its packets is left in the network (a later drop would change its `drops`). Not
    /// with a flow scheduling layer, whose flows' rows all come at the end.
    /// Call it before the run starts.
    pub fn stream_flow_rows(&mut self) {
        self.streaming = self.host.is_none() && self.counts.packets_created == 0;
    }

    /// Notes flow `f`'s row as final if it is (see [`Simulation::stream_flow_rows`]).
    #[cold]
    fn row_final(&mut self, f: usize) {
        let Some(st) = self.flows.get_mut(f) else { return };
        if st.streamed || st.finish.is_none() || st.packets_alive > 0 || st.conn.is_some() {
            return;
        }
        st.streamed = true;
        self.final_rows.push(f as u32);
    }

    /// Flow `f`'s connection has completed.
    fn complete(&mut self, f: usize) {
        let Some(st) = self.flows.get_mut(f) else { return };
        let Some(conn) = st.conn.take() else { return };
        st.conn_finish = OptNanos::some(self.now);
        st.final_counts = FlowCounts::of(&conn);
        st.rto_at = OptNanos::NONE;
        st.delack_at = OptNanos::NONE;
        self.open_flows -= 1;
        if !self.host.as_ref().is_some_and(|h| h.schedules(f)) {
            self.flow_done(f);
        }
        if self.streaming {
            self.row_final(f);
        }
    }

    /// Every byte of flow `f` has been acknowledged.
    fn flow_done(&mut self, f: usize) {
        if let Some(st) = self.flows.get_mut(f) {
            st.finish = OptNanos::some(self.now);
        }
        self.flows_completed += 1;
        if let Some(g) = self.scenario.flows.listed(f).and_then(|s| s.group_id) {
            let open = &mut self.group_open[g as usize];
            *open -= 1;
            if *open == 0 {
                // The group is complete: start the flows waiting for it, each after its delay.
                let waiting = std::mem::take(&mut self.dependents[g as usize]);
                for d in waiting {
                    let delay = self.scenario.flows.listed(d as usize).map_or(Nanos::ZERO, |s| s.start);
                    self.dependent_starts_pending += 1;
                    self.events.push(self.now + delay, Event::StartDependent(d));
                }
            }
        }
    }

    fn sample_queues(&mut self) {
        let Some(interval) = self.scenario.monitor.queue_interval else { return };
        self.monitor.sample_queues(self.now, &mut self.net);
        // Keep sampling only while something else can still happen.
        if !self.events.is_empty() || self.feed.remaining() > 0 {
            self.events.push(self.now + interval, Event::QueueSample);
        }
    }

    fn sample_cwnd(&mut self) {
        let Some(interval) = self.scenario.monitor.cwnd_interval else { return };
        let flows = &self.flows;
        self.monitor.sample_cwnd(self.now, interval, |f| flows.conn(f).map(Conn::window_view));
        if !self.events.is_empty() || self.feed.remaining() > 0 {
            self.events.push(self.now + interval, Event::CwndSample);
        }
    }
}

/// Each router-assisted protocol's port controls (protocol k's control of port p at
/// `k * ports + p`), and each protocol's name (k's).
type RouterFamilies = (Vec<Box<dyn PortControl>>, Vec<&'static str>);

/// The switch side of every router-assisted protocol the flows use: for the k-th such protocol
/// (in the order of its first flow), one control per output port at `k * ports + p`, built
/// from that first flow's parameters. Flows of one protocol that disagree on a parameter its
/// switch side reads are an error naming the key: the switches run one configuration of each
/// protocol. (The flows of a drawn part share one configuration: its first flow stands for
/// them.) Receiver-driven protocols are held to their host side's keys likewise: each host
/// runs one configuration of them.
fn router_families(scenario: &Scenario, net: &Network) -> Result<RouterFamilies, ScenarioError> {
    one_configuration(scenario, |cc| cc.receiver_driven(), |cc| cc.host_keys(), "receiving hosts")?;
    let families = one_configuration(scenario, |cc| cc.router_assisted(), |cc| cc.port_keys(), "switches")?;
    let mut ctl = Vec::with_capacity(families.len() * net.ports.len());
    let info = |p: &fctlab_net::Port| PortInfo {
        capacity: p.rate,
        delay: p.delay,
        host_nic: net.node_is_host[p.from.0 as usize],
    };
    for (first, cfg) in &families {
        for (i, p) in net.ports.iter().enumerate() {
            if let Err(m) = cfg.check_port(&info(p)) {
                let topo = &scenario.topology;
                let l = &topo.links[i / 2];
                let (a, b) = if i % 2 == 0 { (l.a, l.b) } else { (l.b, l.a) };
                return Err(scenario.error(
                    &format!("flows[{first}].protocol"),
                    format!(
                        "{} cannot run on the link {}->{}: {m}",
                        cfg.name(),
                        topo.nodes[a].name,
                        topo.nodes[b].name
                    ),
                ));
            }
        }
        for p in &net.ports {
            ctl.push(cfg.port(&info(p)).expect("router-assisted protocols have a switch side"));
        }
    }
    Ok((ctl, families.iter().map(|(_, c)| c.name()).collect()))
}

type Cc = std::sync::Arc<fctlab_transport::CcConfig>;

/// The first flow of each protocol that `applies` to (in the order of its first flow), and an
/// error naming the key when two flows of one such protocol disagree on one of its `keys`
/// (the parameters the `who` read, which run one configuration of it).
fn one_configuration<'a>(
    scenario: &'a Scenario,
    applies: impl Fn(&Cc) -> bool,
    keys: impl Fn(&Cc) -> &'static [&'static str],
    who: &str,
) -> Result<Vec<(usize, &'a Cc)>, ScenarioError> {
    let mut families: Vec<(usize, &std::sync::Arc<fctlab_transport::CcConfig>)> = Vec::new();
    let flows = scenario.flows.parts().flat_map(|(first, part)| -> Box<dyn Iterator<Item = (usize, &Cc)>> {
        match part {
            FlowPart::Listed(v) => Box::new(v.iter().enumerate().map(move |(i, f)| (first + i, &f.cc))),
            FlowPart::Drawn(d) => Box::new(std::iter::once((first, &d.template().cc))),
        }
    });
    for (i, cc) in flows {
        if !applies(cc) {
            continue;
        }
        match families.iter().find(|(_, c)| c.name() == cc.name()) {
            Some(&(j, c)) => {
                if !std::sync::Arc::ptr_eq(cc, c) && **c != **cc {
                    let (mine, theirs) = (cc.params_json(), c.params_json());
                    if let Some(key) = keys(cc).iter().find(|k| mine.get(**k) != theirs.get(**k)) {
                        let show = |v: &_| {
                            let v: &fctlab_transport::cc::Json = v;
                            v.get(*key).map_or("unset".to_string(), |v| v.to_string())
                        };
                        return Err(scenario.error(
                            &format!("flows[{i}].{}.{key}", cc.name()),
                            format!(
                                "{} here, {} in flows[{j}]: the {who} run one {} configuration, so every flow using it gives `{key}` one value",
                                show(&mine),
                                show(&theirs),
                                cc.name()
                            ),
                        ));
                    }
                }
            }
            None => families.push((i, cc)),
        }
    }
    Ok(families)
}
