//! The run-time state of the run's flows, in pages of [`PAGE`] flows by flow id: each flow's
//! state and the ports of its paths. A page exists from the start of its first flow until
//! every flow in it has been retired (its row handed out while rows are streamed), so that
//! the state held follows the flows alive, not every flow of the run. A run that does not
//! stream its rows never retires a flow.

use crate::build::HOP_REVERSE;
use crate::conn::Conn;
use fctlab_engine::{Nanos, OptNanos};
use fctlab_net::{FlowId, NodeId, PortId};
use fctlab_scenario::FlowSpec;

/// A flow's counters: read from its connection while it runs, kept here once it completes
/// (kept small: one of these exists per flow of the run).
#[derive(Copy, Clone, Debug, Default)]
pub(crate) struct FlowCounts {
    pub bytes_delivered: u64,
    pub retransmits: u64,
    pub packets_sent: u64,
    pub timeouts: u32,
    pub first_timeouts: u32,
    pub ecn_timeouts: u32,
    pub loss_probes: u32,
    /// Data packets that arrived above a hole, and retransmissions that arrived with nothing
    /// new (TCP's receiver counts them).
    pub out_of_order: u32,
    pub spurious_retransmits: u32,
    /// The smallest and the mean RTT the sender measured (none before the first sample).
    pub rtt_min: OptNanos,
    pub rtt_mean: Nanos,
    pub left_slow_start: bool,
}

/// A count kept in 32 bits per flow (timeouts and probes: each waits at least a round trip,
/// so no run comes near the limit); saturates rather than wraps.
fn count32(n: u64) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

impl FlowCounts {
    pub fn of(c: &Conn) -> FlowCounts {
        let (rtt, bytes_delivered, retransmits, packets_sent, timeouts) = match c {
            Conn::Tcp { snd, rcv } => {
                (snd.rtt_measured(), rcv.bytes_delivered(), snd.retransmits, snd.packets_sent, snd.timeouts)
            }
            Conn::Roce { snd, rcv } => {
                (snd.rtt_measured(), rcv.bytes_delivered(), snd.retransmits, snd.packets_sent, snd.timeouts)
            }
            Conn::Ndp { snd, rcv } => {
                (snd.rtt_measured(), rcv.bytes_delivered(), snd.retransmits, snd.packets_sent, snd.timeouts)
            }
            Conn::Uet { snd, rcv } => {
                (snd.rtt_measured(), rcv.bytes_delivered(), snd.retransmits, snd.packets_sent, snd.timeouts)
            }
            Conn::Eqds { snd, rcv } => {
                (snd.rtt_measured(), rcv.bytes_delivered(), snd.retransmits, snd.packets_sent, snd.timeouts)
            }
        };
        let mut counts = FlowCounts {
            bytes_delivered,
            retransmits,
            packets_sent,
            timeouts: count32(timeouts),
            rtt_min: rtt.map(|(min, _)| min).into(),
            rtt_mean: rtt.map_or(Nanos::ZERO, |(_, mean)| mean),
            ..FlowCounts::default()
        };
        // What only TCP counts.
        if let Conn::Ndp { rcv, .. } | Conn::Uet { rcv, .. } = c {
            counts.out_of_order = count32(rcv.out_of_order);
        }
        if let Conn::Eqds { rcv, .. } = c {
            counts.out_of_order = count32(rcv.out_of_order());
        }
        if let Conn::Tcp { snd, rcv } = c {
            counts.out_of_order = count32(rcv.out_of_order_packets);
            counts.spurious_retransmits = count32(rcv.spurious_retransmits);
            counts.first_timeouts = snd.first_timeouts;
            counts.ecn_timeouts = snd.ecn_timeouts;
            counts.loss_probes = count32(snd.probes);
            counts.left_slow_start = snd.left_slow_start;
        }
        counts
    }
}

/// The runtime state of one flow, from its start until its row is out (see [`FlowTable`]).
/// Times are [`OptNanos`] (none until they happen).
#[derive(Default)]
pub(crate) struct FlowState {
    /// Its specification when it was drawn as it started (a listed flow's stays in
    /// [`Scenario::flows`](fctlab_scenario::Scenario::flows)).
    pub drawn: Option<Box<FlowSpec>>,
    /// Its best-case completion time on its paths (none for a long-lived flow).
    pub ideal: OptNanos,
    /// Its packets' priority, when a queue discipline of the run classifies flows by their
    /// tags (strict priority); 0 otherwise.
    pub prio: u8,
    /// Both ends of its connection, while it is open.
    pub conn: Option<Box<Conn>>,
    /// When the flow started.
    pub started_at: OptNanos,
    /// When every byte of it was acknowledged.
    pub finish: OptNanos,
    /// When the connection opened for it completed (the same time, unless a scheduling layer
    /// moved its data to other connections).
    pub conn_finish: OptNanos,
    /// The time of the one pending retransmission-timer event, if any.
    pub rto_at: OptNanos,
    /// The time of the one pending delayed-ACK event, if any.
    pub delack_at: OptNanos,
    /// Counters at completion.
    pub final_counts: FlowCounts,
    /// Its packets that ports dropped (data and ACKs).
    pub drops: u32,
    /// Its packets in the network (sent, neither received nor dropped yet), counted while
    /// rows are streamed.
    pub packets_alive: u32,
    /// Its row is final and waits to be handed out (see [`Simulation::take_flow_rows`](crate::Simulation::take_flow_rows)).
    pub streamed: bool,
}

/// Flows per page: small, so that a long flow keeps little else alive with it.
pub(crate) const PAGE: usize = 64;

/// A page in place in the table (its states on the heap).
type Page = PageData;

struct PageData {
    /// Made in place (a page built on the stack would be copied to the heap).
    states: Box<[FlowState; PAGE]>,
    /// Each flow's paths, apart from the states: forwarding reads nothing else of a flow.
    paths: Box<[PathRef; PAGE]>,
    /// The ports of the paths too long to be held in their [`PathRef`], in the order their
    /// flows started.
    ports: Vec<PortId>,
    /// Each flow's source and destination host, for runs whose packets choose their next
    /// hops themselves (`[network] load_balancing`; empty otherwise).
    ends: Vec<[NodeId; 2]>,
}

/// Ports a flow's two paths keep in its [`PathRef`] (a path between two hosts of a fat-tree
/// or leaf-spine crosses at most six ports each way).
const INLINE: usize = 14;
/// `PathRef::spill` of paths held inline.
const HELD_INLINE: u16 = u16::MAX;

/// A flow's paths: its data path's `fwd` ports then its ACK path's `rev` ports, in `ports`
/// when they fit, else in the page's `ports` from `spill` (a page holds at most 64 flows of
/// 2 x 127 ports). One cache line: forwarding reads the next port in the line it reads the
/// lengths from.
#[derive(Copy, Clone, Debug)]
#[repr(C, align(64))]
pub(crate) struct PathRef {
    fwd: u8,
    rev: u8,
    spill: u16,
    /// The flow whose paths these are (for [`FlowTable::recent`]).
    flow: u32,
    ports: [PortId; INLINE],
}

impl PathRef {
    const NONE: PathRef = PathRef { fwd: 0, rev: 0, spill: HELD_INLINE, flow: u32::MAX, ports: [PortId(0); INLINE] };

    /// The port at hop `hop` (its direction in the top bit) of paths held inline.
    #[inline(always)]
    fn port(&self, hop: u8, spilled: &[PortId]) -> Option<(PortId, u8)> {
        let (base, len) = if hop & HOP_REVERSE != 0 { (self.fwd, self.rev) } else { (0, self.fwd) };
        let i = hop & !HOP_REVERSE;
        if i >= len {
            return None;
        }
        let at = (base + i) as usize; // at most 2 x 127
        let port =
            if self.spill == HELD_INLINE { *self.ports.get(at)? } else { *spilled.get(self.spill as usize + at)? };
        Some((port, hop + 1))
    }
}

/// The most entries of [`FlowTable::recent`].
const RECENT_MAX: usize = 8192;

pub(crate) struct FlowTable {
    /// By page: its flows' state, from its first flow's start until its last one's retirement.
    pages: Vec<Option<Page>>,
    /// By page: its flows not retired yet (0 once it is gone).
    open: Vec<u32>,
    len: usize,
    /// A copy of the inline paths of flows that started recently, by flow id modulo its
    /// length (a power of two): forwarding finds a flow's next port in one read when the
    /// entry is its flow's (flow ids are not reused), else in its page.
    recent: Box<[PathRef]>,
}

impl FlowTable {
    pub fn new(len: usize) -> FlowTable {
        let n = len.div_ceil(PAGE);
        let open = (0..n).map(|p| PAGE.min(len - p * PAGE) as u32).collect();
        let recent = vec![PathRef::NONE; len.next_power_of_two().clamp(1, RECENT_MAX)].into_boxed_slice();
        FlowTable { pages: (0..n).map(|_| None).collect(), open, len, recent }
    }

    /// Flows of the run.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Flow `f`'s state, its page made if it has none yet (when the flow starts; a retired
    /// flow does not start again).
    pub fn open(&mut self, f: usize) -> &mut FlowState {
        &mut self.page(f).states[f % PAGE]
    }

    fn page(&mut self, f: usize) -> &mut PageData {
        Self::page_in(&mut self.pages, f)
    }

    /// Flow `f`'s page in `pages`, made if it has none yet (a function of the pages alone, so
    /// that the table's other fields stay free to borrow).
    fn page_in(pages: &mut [Option<Page>], f: usize) -> &mut PageData {
        pages[f / PAGE].get_or_insert_with(|| {
            let states: Box<[FlowState]> = (0..PAGE).map(|_| FlowState::default()).collect();
            let states = states.try_into().unwrap_or_else(|_| unreachable!("PAGE states were made"));
            PageData { states, paths: Box::new([PathRef::NONE; PAGE]), ports: Vec::new(), ends: Vec::new() }
        })
    }

    /// Gives flow `f` (starting now) its paths: `fill` appends the ports of its data path,
    /// then those of its ACK path, and returns how many of each.
    pub fn set_paths(&mut self, f: usize, fill: impl FnOnce(&mut Vec<PortId>) -> (u8, u8)) -> &[PortId] {
        let page = Self::page_in(&mut self.pages, f);
        let at = page.ports.len();
        let (fwd, rev) = fill(&mut page.ports);
        let n = page.ports.len() - at;
        let r = &mut page.paths[f % PAGE];
        *r = PathRef { fwd, rev, flow: f as u32, ..PathRef::NONE };
        let mask = self.recent.len() - 1;
        if n <= INLINE {
            r.ports[..n].copy_from_slice(&page.ports[at..]);
            page.ports.truncate(at);
            self.recent[f & mask] = *r;
            &r.ports[..n]
        } else {
            r.spill = at as u16;
            self.recent[f & mask] = PathRef::NONE;
            &page.ports[at..]
        }
    }

    /// Records flow `f`'s source and destination host (per-packet path choice reads them).
    pub fn set_ends(&mut self, f: usize, src: NodeId, dst: NodeId) {
        let page = Self::page_in(&mut self.pages, f);
        if page.ends.is_empty() {
            page.ends = vec![[NodeId(u32::MAX); 2]; PAGE];
        }
        page.ends[f % PAGE] = [src, dst];
    }

    /// The host a packet of `flow` goes to: its destination, or its source when `reverse`.
    #[inline]
    pub fn end_of(&self, flow: FlowId, reverse: bool) -> Option<NodeId> {
        let f = flow.0 as usize;
        let page = self.pages.get(f / PAGE)?.as_ref()?;
        page.ends.get(f % PAGE).map(|e| e[!reverse as usize])
    }

    /// The port a packet of `flow` takes next, and its metadata's hop index moved past it;
    /// None when its path is done (which forwarding never asks for) or the flow has no state.
    #[inline(always)]
    pub fn next_port(&self, flow: FlowId, hop: u8) -> Option<(PortId, u8)> {
        let f = flow.0 as usize;
        let r = &self.recent[f & (self.recent.len() - 1)];
        if r.flow == flow.0 {
            return r.port(hop, &[]);
        }
        let page = self.pages.get(f / PAGE)?.as_ref()?;
        page.paths[f % PAGE].port(hop, &page.ports)
    }

    /// Flow `f`'s state: None before its page exists (not started) and after it was retired.
    #[inline(always)]
    pub fn get(&self, f: usize) -> Option<&FlowState> {
        self.pages.get(f / PAGE).and_then(|p| p.as_ref()).map(|p| &p.states[f % PAGE])
    }

    #[inline(always)]
    pub fn get_mut(&mut self, f: usize) -> Option<&mut FlowState> {
        self.pages.get_mut(f / PAGE).and_then(|p| p.as_mut()).map(|p| &mut p.states[f % PAGE])
    }

    /// Flow `f`'s connection, while it is open.
    #[inline(always)]
    pub fn conn(&self, f: usize) -> Option<&Conn> {
        self.get(f).and_then(|s| s.conn.as_deref())
    }

    /// Whether flow `f` was retired (with its whole page).
    pub fn retired(&self, f: usize) -> bool {
        self.open.get(f / PAGE) == Some(&0)
    }

    /// Flow `f` is done with: its page goes once every flow in it is. Each flow is retired at
    /// most once, after it started.
    pub fn retire(&mut self, f: usize) {
        let p = f / PAGE;
        if self.pages[p].is_some() {
            self.open[p] -= 1;
            if self.open[p] == 0 {
                self.pages[p] = None;
                let mask = self.recent.len() - 1;
                for g in p * PAGE..((p + 1) * PAGE).min(self.len) {
                    if self.recent[g & mask].flow == g as u32 {
                        self.recent[g & mask] = PathRef::NONE;
                    }
                }
            }
        }
    }

    /// Pages held now (for tests and diagnostics).
    pub fn pages_live(&self) -> usize {
        self.pages.iter().filter(|p| p.is_some()).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fctlab_engine::OptNanos;

    #[test]
    fn a_page_lives_from_its_first_start_to_its_last_retirement() {
        let mut t = FlowTable::new(PAGE + 3);
        assert!(t.get(0).is_none() && t.get(PAGE).is_none());
        t.open(1).rto_at = OptNanos::some(fctlab_engine::Nanos::from_nanos(7));
        assert_eq!(t.pages_live(), 1);
        assert_eq!(t.get(1).map(|s| s.rto_at.get()), Some(Some(fctlab_engine::Nanos::from_nanos(7))));
        assert!(t.get(0).is_some(), "the page holds its other flows' state, default until they start");
        for f in 0..PAGE - 1 {
            t.retire(f);
        }
        assert_eq!(t.pages_live(), 1, "one flow of the page is not retired");
        t.retire(PAGE - 1);
        assert_eq!(t.pages_live(), 0);
        assert!(t.get(1).is_none() && t.retired(1) && !t.retired(PAGE));
        // The last page is short.
        t.open(PAGE + 2);
        for f in PAGE..PAGE + 3 {
            t.retire(f);
        }
        assert_eq!(t.pages_live(), 0);
        assert!(t.get(PAGE + 2).is_none() && t.get(10 * PAGE).is_none());
    }

    #[test]
    fn a_flows_paths_live_in_its_page_and_forwarding_walks_them() {
        let mut t = FlowTable::new(2 * PAGE);
        let ports = |v: &[u32]| v.iter().map(|&p| PortId(p)).collect::<Vec<_>>();
        t.set_paths(3, |out| {
            out.extend(ports(&[10, 11, 12]));
            out.extend(ports(&[20, 21]));
            (3, 2)
        });
        t.set_paths(1, |out| {
            out.extend(ports(&[5]));
            out.extend(ports(&[6]));
            (1, 1)
        });
        let walk = |t: &FlowTable, f: u32, mut hop: u8| {
            let mut seen = Vec::new();
            while let Some((p, next)) = t.next_port(FlowId(f), hop) {
                seen.push(p.0);
                hop = next;
            }
            seen
        };
        assert_eq!(walk(&t, 3, 0), [10, 11, 12]);
        assert_eq!(walk(&t, 3, HOP_REVERSE), [20, 21]);
        assert_eq!((walk(&t, 1, 0), walk(&t, 1, HOP_REVERSE)), (vec![5], vec![6]));
        // Paths too long to be held inline are in the page's ports.
        let (long_fwd, long_rev): (Vec<u32>, Vec<u32>) = ((100..110).collect(), (200..208).collect());
        let got = t.set_paths(5, |out| {
            out.extend(ports(&long_fwd));
            out.extend(ports(&long_rev));
            (10, 8)
        });
        assert_eq!(got.len(), 18);
        assert_eq!((walk(&t, 5, 0), walk(&t, 5, HOP_REVERSE)), (long_fwd, long_rev));
        assert_eq!(walk(&t, 3, 0), [10, 11, 12], "the inline paths are unchanged");
        assert!(walk(&t, 2, 0).is_empty(), "a flow of the page that has not started has no path");
        assert!(walk(&t, PAGE as u32, 0).is_empty(), "a page not made has none either");
        for f in 0..PAGE {
            t.retire(f);
        }
        assert!(walk(&t, 3, 0).is_empty(), "a retired page's paths are gone with it");
    }

    #[test]
    fn two_flows_sharing_an_entry_of_the_recent_paths_each_find_their_own() {
        let mut t = FlowTable::new(RECENT_MAX + PAGE);
        let (a, b) = (1, RECENT_MAX + 1); // the same entry of `recent`
        t.set_paths(a, |out| {
            out.extend([PortId(1), PortId(2)]);
            (1, 1)
        });
        t.set_paths(b, |out| {
            out.extend([PortId(7), PortId(8)]);
            (1, 1)
        });
        let first = |f: usize, hop| t.next_port(FlowId(f as u32), hop).map(|(p, _)| p.0);
        assert_eq!((first(a, 0), first(a, HOP_REVERSE)), (Some(1), Some(2)), "from its page");
        assert_eq!((first(b, 0), first(b, HOP_REVERSE)), (Some(7), Some(8)), "from the entry");
    }
}
