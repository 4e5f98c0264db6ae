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

type Page = Box<PageData>;

struct PageData {
    states: [FlowState; PAGE],
    /// The ports of its started flows' paths (see [`PathRef`]), in the order they started.
    ports: Vec<PortId>,
}

/// Where a flow's paths are in its page's `ports`: its data path from `at`, `fwd` ports
/// long, then its ACK path, `rev` ports long.
#[derive(Copy, Clone, Debug, Default)]
pub(crate) struct PathRef {
    at: u32,
    fwd: u8,
    rev: u8,
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
            Box::new(PageData { states: std::array::from_fn(|_| FlowState::default()), ports: Vec::new() })
        })
    }

    /// Gives flow `f` (starting now) its paths: `fill` appends the ports of its data path,
    /// then those of its ACK path, and returns how many of each.
    pub fn set_paths(&mut self, f: usize, fill: impl FnOnce(&mut Vec<PortId>) -> (u8, u8)) -> &[PortId] {
        let page = self.page(f);
        let at = page.ports.len();
        let (fwd, rev) = fill(&mut page.ports);
        page.states[f % PAGE].path = PathRef { at: at as u32, fwd, rev };
        &page.ports[at..]
    }

    /// The port a packet of `flow` takes next, and its metadata's hop index moved past it;
    /// None when its path is done (which forwarding never asks for) or the flow has no state.
    #[inline(always)]
    pub fn next_port(&self, flow: FlowId, hop: u8) -> Option<(PortId, u8)> {
        let f = flow.0 as usize;
        let page = self.pages.get(f / PAGE)?.as_deref()?;
        let r = page.states[f % PAGE].path;
        let (from, len) = if hop & HOP_REVERSE != 0 { (r.at + r.fwd as u32, r.rev) } else { (r.at, r.fwd) };
        let i = hop & 0x7f;
        (i < len).then(|| (page.ports[(from + i as u32) as usize], hop + 1))
    }

    /// Flow `f`'s state: None before its page exists (not started) and after it was retired.
    #[inline(always)]
    pub fn get(&self, f: usize) -> Option<&FlowState> {
        self.pages.get(f / PAGE).and_then(|p| p.as_deref()).map(|p| &p.states[f % PAGE])
    }

    #[inline(always)]
    pub fn get_mut(&mut self, f: usize) -> Option<&mut FlowState> {
        self.pages.get_mut(f / PAGE).and_then(|p| p.as_deref_mut()).map(|p| &mut p.states[f % PAGE])
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
}
