//! What a sequential run says about a conservative parallel engine on the same run: each event
//! is counted for the part of the network it acts in (a [`Partition`]), in windows of
//! simulated time one lookahead long, and each packet that crosses the cut is counted.
//!
//! A conservative engine runs a window's events of every part at once, then exchanges the
//! packets that crossed the cut and waits at a barrier, so a window takes as long as its
//! busiest part. The profile gives that model's inputs ([`ProfileReport`]): the events of the
//! busiest part summed over windows, the windows that hold events (an engine skips empty ones,
//! starting its next window at the earliest pending event), the cut packets, and the run's
//! time per event; [`ProfileReport::predicted_speedup`] puts them together with a barrier's
//! cost. The run itself is unchanged: the same events in the same order.

use fctlab_engine::Nanos;
use fctlab_net::partition::Partition;

/// The counts of a run under way.
pub(crate) struct WindowProfile {
    part: Partition,
    window_ns: u64,
    window: u64,
    counts: Vec<u64>,
    busy: bool,
    sum_of_max: u64,
    windows_busy: u64,
    per_part: Vec<u64>,
    global: u64,
    cut_packets: u64,
}

/// The model's inputs, measured.
#[derive(Clone, Debug, PartialEq)]
pub struct ProfileReport {
    pub parts: usize,
    /// The window: the partition's lookahead (with one part, the whole run is one window).
    pub lookahead_ns: Option<u64>,
    pub cut_links: usize,
    /// Ports each part owns.
    pub ports_per_part: Vec<usize>,
    /// Events in all.
    pub events: u64,
    /// Events of no one part (flow arrivals from the workload, monitors' samples): run apart.
    pub events_global: u64,
    pub events_per_part: Vec<u64>,
    /// Windows holding at least one event.
    pub windows_busy: u64,
    /// Over the windows, the work of each window's busiest part: its events, and one more
    /// for each packet it took in across the cut.
    pub sum_of_max: u64,
    /// Packets that arrived across the cut.
    pub cut_packets: u64,
    /// Wall seconds of the sequential loop (profile included).
    pub loop_wall_s: f64,
}

impl ProfileReport {
    /// The predicted speed-up of a conservative engine with one thread per part over the
    /// sequential loop: the sequential work (every event at the measured time per event)
    /// over the parallel one, which is each window's busiest part (the handing over of a
    /// packet across the cut costed as one more event of the part it enters), the events of
    /// no part run apart, and a barrier per busy window (`barrier_ns`).
    pub fn predicted_speedup(&self, barrier_ns: f64) -> f64 {
        let per_event_ns = if self.events > 0 { self.loop_wall_s * 1e9 / self.events as f64 } else { 0.0 };
        let parallel =
            (self.sum_of_max + self.events_global) as f64 * per_event_ns + self.windows_busy as f64 * barrier_ns;
        if parallel > 0.0 {
            self.events as f64 * per_event_ns / parallel
        } else {
            1.0
        }
    }
}

impl WindowProfile {
    pub(crate) fn new(part: Partition) -> WindowProfile {
        let parts = part.parts;
        WindowProfile {
            window_ns: part.lookahead.map_or(u64::MAX, |l| l.as_nanos().max(1)),
            part,
            window: 0,
            counts: vec![0; parts],
            busy: false,
            sum_of_max: 0,
            windows_busy: 0,
            per_part: vec![0; parts],
            global: 0,
            cut_packets: 0,
        }
    }

    /// Counts an event at time `t` of the node `node` (`None`: of no one part) and, for a
    /// packet's arrival, whether it crossed the cut from node `from`.
    #[inline]
    pub(crate) fn record(&mut self, t: Nanos, node: Option<usize>, from: Option<usize>) {
        let window = t.as_nanos() / self.window_ns;
        if window != self.window {
            self.close_window();
            self.window = window;
        }
        match node {
            Some(n) => {
                let p = self.part.of_node[n] as usize;
                self.counts[p] += 1;
                self.per_part[p] += 1;
                if from.is_some_and(|a| self.part.of_node[a] != self.part.of_node[n]) {
                    // handed over at the window's end: one more event's work for its part
                    self.cut_packets += 1;
                    self.counts[p] += 1;
                }
            }
            None => self.global += 1,
        }
        self.busy = true;
    }

    /// What was counted so far, with the loop's wall time.
    pub(crate) fn report(&self, loop_wall_s: f64) -> ProfileReport {
        let open = if self.busy { self.counts.iter().copied().max().unwrap_or(0) } else { 0 };
        ProfileReport {
            parts: self.part.parts,
            lookahead_ns: self.part.lookahead.map(|l| l.as_nanos()),
            cut_links: self.part.cut_links.len(),
            ports_per_part: self.part.ports.clone(),
            events: self.per_part.iter().sum::<u64>() + self.global,
            events_global: self.global,
            events_per_part: self.per_part.clone(),
            windows_busy: self.windows_busy + u64::from(self.busy),
            sum_of_max: self.sum_of_max + open,
            cut_packets: self.cut_packets,
            loop_wall_s,
        }
    }

    fn close_window(&mut self) {
        if self.busy {
            self.sum_of_max += self.counts.iter().copied().max().unwrap_or(0);
            self.windows_busy += 1;
            self.counts.iter_mut().for_each(|c| *c = 0);
            self.busy = false;
        }
    }
}
