//! The pull pacer of each host that receives `ndp` or `eqds` flows: its state (the rule is
//! `pull.rs`'s, with the simulation's steps).

use fctlab_engine::Nanos;
use fctlab_net::NodeId;
use std::collections::VecDeque;

/// One receiving host's pacer.
pub(crate) struct Pacer {
    /// Time between two pulls.
    pub spacing: Nanos,
    /// When the last pull left.
    pub last: Option<Nanos>,
    /// Flows owed pulls, in turn, with how many each is owed.
    pub line: VecDeque<(u32, u32)>,
    /// EQDS flows owed a retransmission's pull, and EQDS flows owed pulls, in turn.
    pub rtx: VecDeque<u32>,
    pub active: VecDeque<u32>,
    /// The pending wake, if one is scheduled.
    pub wake_at: Option<Nanos>,
}

impl Pacer {
    pub fn new(spacing: Nanos) -> Pacer {
        Pacer {
            spacing,
            last: None,
            line: VecDeque::new(),
            rtx: VecDeque::new(),
            active: VecDeque::new(),
            wake_at: None,
        }
    }

    /// Whether a pull may leave now, on the reply that asks for it.
    pub fn free(&self, now: Nanos) -> bool {
        self.line.is_empty() && self.last.map_or(true, |t| now >= t + self.spacing)
    }

    /// Flow `f` is owed one more pull.
    pub fn owe(&mut self, f: u32) {
        match self.line.iter_mut().find(|(g, _)| *g == f) {
            Some((_, n)) => *n += 1,
            None => self.line.push_back((f, 1)),
        }
    }

    pub fn idle(&self) -> bool {
        self.line.is_empty() && self.rtx.is_empty() && self.active.is_empty()
    }

    /// The next flow to pull, in turn.
    pub fn next(&mut self) -> Option<u32> {
        let (f, n) = self.line.pop_front()?;
        if n > 1 {
            self.line.push_back((f, n - 1));
        }
        Some(f)
    }
}

/// Makes sure host `node` of the `nodes` has a pacer in `pacers` (with its first `ndp` flow's
/// spacing).
pub(crate) fn ensure(pacers: &mut Vec<Option<Box<Pacer>>>, nodes: usize, node: NodeId, spacing: Nanos) {
    if pacers.len() < nodes {
        pacers.resize_with(nodes, || None);
    }
    let slot = &mut pacers[node.0 as usize];
    if slot.is_none() {
        *slot = Some(Box::new(Pacer::new(spacing)));
    }
}
