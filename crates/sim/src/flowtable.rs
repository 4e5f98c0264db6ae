//! The run-time state of the run's flows, in pages of [`PAGE`] flows by flow id: each flow's
//! state and the ports of its paths. A page exists from the start of its first flow until
//! every flow in it has been retired (its row handed out while rows are streamed), so that
//! the state held follows the flows alive, not every flow of the run. A run that does not
//! stream its rows never retires a flow.

use crate::build::HOP_REVERSE;
use crate::sim::{Conn, FlowState};
use fctlab_net::{FlowId, PortId};

/// Flows per page: small, so that a long flow keeps little else alive with it.
pub(crate) const PAGE: usize = 64;

/// A page in place in the table (its states on the heap).
type Page = PageData;

struct PageData {
    /// Made in place (a page built on the stack would be copied to the heap).
    states: Box<[FlowState; PAGE]>,
    /// The ports of its started flows' paths (see [`PathRef`]), in the order they started.
    ports: Vec<PortId>,
}

/// Where a flow's paths are in its page's `ports`: `span[0]` its data path, `span[1]` its ACK
/// path, each as (first, end) indices (a page holds at most 64 flows of 2 x 127 ports).
#[derive(Copy, Clone, Debug, Default)]
pub(crate) struct PathRef {
    span: [(u16, u16); 2],
}

pub(crate) struct FlowTable {
    /// By page: its flows' state, from its first flow's start until its last one's retirement.
    pages: Vec<Option<Page>>,
    /// By page: its flows not retired yet (0 once it is gone).
    open: Vec<u32>,
    len: usize,
}

impl FlowTable {
    pub fn new(len: usize) -> FlowTable {
        let n = len.div_ceil(PAGE);
        let open = (0..n).map(|p| PAGE.min(len - p * PAGE) as u32).collect();
        FlowTable { pages: (0..n).map(|_| None).collect(), open, len }
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
        self.pages[f / PAGE].get_or_insert_with(|| {
            let states: Box<[FlowState]> = (0..PAGE).map(|_| FlowState::default()).collect();
            let states = states.try_into().unwrap_or_else(|_| unreachable!("PAGE states were made"));
            PageData { states, ports: Vec::new() }
        })
    }

    /// Gives flow `f` (starting now) its paths: `fill` appends the ports of its data path,
    /// then those of its ACK path, and returns how many of each.
    pub fn set_paths(&mut self, f: usize, fill: impl FnOnce(&mut Vec<PortId>) -> (u8, u8)) -> &[PortId] {
        let page = self.page(f);
        let at = page.ports.len();
        let (fwd, rev) = fill(&mut page.ports);
        let (a, m) = (at as u16, (at + fwd as usize) as u16);
        page.states[f % PAGE].path = PathRef { span: [(a, m), (m, m + rev as u16)] };
        &page.ports[at..]
    }

    /// The port a packet of `flow` takes next, and its metadata's hop index moved past it;
    /// None when its path is done (which forwarding never asks for) or the flow has no state.
    #[inline(always)]
    pub fn next_port(&self, flow: FlowId, hop: u8) -> Option<(PortId, u8)> {
        let f = flow.0 as usize;
        let page = self.pages.get(f / PAGE)?.as_ref()?;
        let (first, end) = page.states[f % PAGE].path.span[(hop >> 7) as usize];
        let at = first + (hop & !HOP_REVERSE) as u16;
        (at < end).then(|| (page.ports[at as usize], hop + 1))
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
        t.open(1).rto_at = OptNanos::some(fctlab_engine::Nanos(7));
        assert_eq!(t.pages_live(), 1);
        assert_eq!(t.get(1).map(|s| s.rto_at.get()), Some(Some(fctlab_engine::Nanos(7))));
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
        assert!(walk(&t, 2, 0).is_empty(), "a flow of the page that has not started has no path");
        assert!(walk(&t, PAGE as u32, 0).is_empty(), "a page not made has none either");
        for f in 0..PAGE {
            t.retire(f);
        }
        assert!(walk(&t, 3, 0).is_empty(), "a retired page's paths are gone with it");
    }
}
