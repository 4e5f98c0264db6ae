//! Assembling the results of a run from its flows, ports, monitors and counters.

use crate::flowtable::{FlowCounts, FlowState};
use crate::results::{FlowResult, Label, LinkResult, Results, Summary};
use crate::sim::Simulation;
use crate::VERSION;
use fctlab_net::BufferLimit;
use fctlab_scenario::FlowSpec;
use std::borrow::Cow;

impl Simulation {
    /// Collects the results (callable at any point; unfinished flows are marked so).
    pub fn results(&mut self, interrupted: bool) -> Results {
        let flows = self.flow_rows();
        let (links, drops, marks) = self.link_rows();
        let summary = self.summary(interrupted, drops, marks);
        Results {
            flows,
            links,
            queues: self.monitor.queues.clone(),
            cwnd: self.monitor.cwnd.clone(),
            drops: self.monitor.drops.clone(),
            pfc: self.pfc_rows(),
            pcaps: self.capture.as_ref().map_or_else(Vec::new, |c| c.files()),
            pcap_hosts: self.capture.as_ref().map(|_| crate::pcap::Capture::hosts_file(&self.scenario)),
            summary,
        }
    }

    /// One row per flow, in the order of the scenario; when rows are streamed, the rows not
    /// taken yet.
    fn flow_rows(&self) -> Vec<FlowResult> {
        let names = self.node_names();
        // (A retired flow's row was taken; a flow that never started has no state, and a
        // drawn one that never started is drawn again here, by a walk over the flows.)
        let mut walk = None;
        let mut rows = Vec::new();
        for i in 0..self.flows.len() {
            if self.flows.retired(i) || self.flows.get(i).is_some_and(|s| s.streamed) {
                continue;
            }
            let spec = match self.spec(i) {
                Some(s) => Cow::Borrowed(s),
                None => {
                    let w = walk.get_or_insert_with(|| self.scenario.flows.iter().enumerate().peekable());
                    while w.next_if(|(j, _)| *j < i).is_some() {}
                    match w.next() {
                        Some((_, s)) => s,
                        None => continue,
                    }
                }
            };
            rows.push(self.flow_row(i, &spec, &names));
        }
        rows
    }

    /// Flow `i`'s specification, if it is listed or was drawn when it started.
    pub(crate) fn spec(&self, i: usize) -> Option<&FlowSpec> {
        self.scenario.flows.listed(i).or_else(|| self.flows.get(i).and_then(|s| s.drawn.as_deref()))
    }

    /// The rows that became final since the last call, in that order (rows are streamed once
    /// [`Simulation::stream_flow_rows`] has been called; empty otherwise).
    pub fn take_flow_rows(&mut self) -> Vec<FlowResult> {
        let ids = std::mem::take(&mut self.final_rows);
        if ids.is_empty() {
            return Vec::new();
        }
        let names = self.node_names();
        // (A finished flow started, so its specification is at hand.)
        let rows = ids
            .iter()
            .filter_map(|&i| self.spec(i as usize).map(|spec| self.flow_row(i as usize, spec, &names)))
            .collect();
        for &i in &ids {
            self.flows.retire(i as usize); // its state goes with its page's last flow
        }
        rows
    }

    /// One copy of each node's name, shared by the rows of its flows.
    fn node_names(&self) -> Vec<std::sync::Arc<str>> {
        self.scenario.topology.nodes.iter().map(|n| std::sync::Arc::from(n.name.as_str())).collect()
    }

    /// Flow `i`'s row.
    fn flow_row(&self, i: usize, spec: &FlowSpec, names: &[std::sync::Arc<str>]) -> FlowResult {
        let name = |n: usize| names[n].clone();
        let unstarted = FlowState::default();
        let st = self.flows.get(i).unwrap_or(&unstarted);
        let counts = match st.conn.as_deref() {
            Some(c) => FlowCounts::of(c),
            None => st.final_counts,
        };
        let fct = match (st.started_at.get(), st.finish.get()) {
            (Some(s), Some(f)) => Some((f - s).as_secs_f64()),
            _ => None,
        };
        // (Computed as the flow started; for one that did not, here.)
        let ideal = match st.started_at.get() {
            Some(_) => st.ideal.get(),
            None => self.net.ideal_of(fctlab_net::FlowId(i as u32), spec, &self.scenario.tcp),
        };
        let ideal = ideal.map(|d| d.as_secs_f64());
        let scheduled = self.host.as_ref().filter(|h| h.schedules(i));
        FlowResult {
            flow_id: i as u64,
            src: name(spec.src),
            dst: name(spec.dst),
            size_bytes: spec.size_bytes,
            // (`whole_packets` pads the last segment: the flow's own bytes are at most its size.)
            bytes_delivered: scheduled
                .and_then(|h| h.delivered(i))
                .unwrap_or(counts.bytes_delivered)
                .min(spec.size_bytes.unwrap_or(u64::MAX)),
            start_s: st.started_at.get().map(|t| t.as_secs_f64()),
            finish_s: st.finish.get().map(|t| t.as_secs_f64()),
            fct_s: fct,
            ideal_fct_s: ideal,
            slowdown: match (fct, ideal) {
                (Some(f), Some(i)) if i > 0.0 => Some(f / i),
                _ => None,
            },
            completed: st.finish.is_some(),
            protocol: spec.cc.name(),
            retransmits: counts.retransmits,
            timeouts: counts.timeouts as u64,
            first_timeouts: counts.first_timeouts as u64,
            ecn_timeouts: counts.ecn_timeouts as u64,
            deadline_s: spec.deadline.map(|d| d.as_secs_f64()),
            tag: Label(spec.tag.clone()),
            group: Label(spec.group.clone()),
            packets_sent: counts.packets_sent,
            loss_probes: counts.loss_probes as u64,
            left_slow_start: counts.left_slow_start,
            scheduler: scheduled.map_or("none", |h| h.policy().name()),
            conn_finish_s: st.conn_finish.get().map(|t| t.as_secs_f64()),
            rtt_min_s: counts.rtt_min.get().map(|min| min.as_secs_f64()),
            rtt_mean_s: counts.rtt_min.get().map(|_| counts.rtt_mean.as_secs_f64()),
            drops: st.drops as u64,
            out_of_order_packets: counts.out_of_order as u64,
            spurious_retransmits: counts.spurious_retransmits as u64,
        }
    }

    /// The pause monitor's rows, when the network is lossless.
    fn pfc_rows(&self) -> Option<Vec<crate::results::PfcRecord>> {
        let pfc = self.pfc.as_deref()?;
        let topo = &self.scenario.topology;
        let name = |n: fctlab_net::NodeId| topo.nodes[n.0 as usize].name.as_str();
        Some(
            pfc.log
                .iter()
                .map(|r| {
                    let p = &self.net.ports[r.port as usize];
                    let b = r.blocked;
                    let congested = b.and_then(|b| b.congested).map(|q| {
                        let q = &self.net.ports[q as usize];
                        format!("{}->{}", name(q.from), name(q.to))
                    });
                    crate::results::PfcRecord {
                        time_s: r.time.as_secs_f64(),
                        link_id: r.port as u64,
                        link: format!("{}->{}", name(p.from), name(p.to)),
                        prio: r.prio as u64,
                        event: if r.pause { "pause" } else { "resume" },
                        waiting_packets: b.map(|b| b.packets as u64),
                        waiting_flows: b.map(|b| b.flows as u64),
                        victim_flows: b.map(|b| b.victim_flows as u64),
                        congested_link: congested,
                    }
                })
                .collect(),
        )
    }

    /// One row per port, and the ports' drops and ECN marks in all.
    fn link_rows(&mut self) -> (Vec<LinkResult>, u64, u64) {
        let now = self.now;
        let topo = &self.scenario.topology;
        let sim_s = now.as_secs_f64();
        let net = &mut self.net;
        let name = |n: fctlab_net::NodeId| topo.nodes[n.0 as usize].name.clone();
        let mut links = Vec::with_capacity(net.ports.len());
        let (mut drops, mut marks) = (0, 0);
        for (i, p) in net.ports.iter_mut().enumerate() {
            let mean_q = p.mean_queue_pkts(now);
            drops += p.stats().drops;
            marks += p.stats().ecn_marks;
            let (bp, bb) = match p.limit {
                BufferLimit::Packets(n) => (Some(n as u64), None),
                BufferLimit::Bytes(b) => (None, Some(b)),
                BufferLimit::Unlimited => (None, None),
            };
            links.push(LinkResult {
                link_id: i as u64,
                src: name(p.from),
                dst: name(p.to),
                level: if net.node_is_host[p.from.0 as usize] {
                    "nic".to_string()
                } else {
                    net.port_level[i].to_string()
                },
                rate_bps: p.rate.as_f64(),
                delay_s: p.delay.as_secs_f64(),
                buffer_pkts: bp,
                buffer_bytes: bb,
                tx_packets: p.stats().tx_packets,
                tx_bytes: p.stats().tx_bytes,
                drops: p.stats().drops,
                ecn_marks: p.stats().ecn_marks,
                utilization: if sim_s > 0.0 {
                    p.stats().tx_bytes as f64 * 8.0 / (p.rate.as_f64() * sim_s)
                } else {
                    0.0
                },
                max_queue_pkts: p.stats().max_queue_pkts as u64,
                max_queue_bytes: p.stats().max_queue_bytes,
                mean_queue_pkts: mean_q,
                trimmed_packets: p.stats().trimmed,
            });
        }
        (links, drops, marks)
    }

    /// The whole run's figures.
    fn summary(&self, interrupted: bool, drops: u64, marks: u64) -> Summary {
        let sim_s = self.now.as_secs_f64();
        let wall = self.loop_wall.as_secs_f64();
        let events = self.events.events_processed();
        let c = &self.counts;
        Summary {
            scenario_name: self.scenario.name.clone(),
            scenario_sha256: self.scenario.sha256.clone(),
            seed: self.scenario.seed,
            version: VERSION.to_string(),
            sim_time_s: sim_s,
            wall_time_s: wall,
            events,
            events_per_s: if wall > 0.0 { events as f64 / wall } else { 0.0 },
            data_packets_delivered: c.data_packets_delivered,
            data_packets_delivered_per_wall_s: if wall > 0.0 { c.data_packets_delivered as f64 / wall } else { 0.0 },
            payload_bytes_delivered: c.payload_bytes_delivered,
            flows_total: self.flows.len() as u64,
            flows_completed: self.flows_completed,
            flows_started: c.flows_started,
            drops: drops + c.no_route_drops,
            ecn_marks: marks,
            packets_created: c.packets_created,
            packets_consumed: c.packets_consumed,
            packets_in_network: self.pool.live() as u64,
            peak_packets_in_network: self.pool.peak_live() as u64,
            late_packets: c.late_packets,
            trimmed_headers_delivered: c.trimmed_delivered,
            interrupted,
            // (Whole nanoseconds over 1e9: 30 ms is 0.03 exactly as it prints.)
            measure_from_s: self.scenario.measure.map(|m| m.from.as_nanos() as f64 / 1e9),
            measure_until_s: self.scenario.measure.and_then(|m| m.until.map(|u| u.as_nanos() as f64 / 1e9)),
            flows_measured: self.flows_measured,
        }
    }
}
