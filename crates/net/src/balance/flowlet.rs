//! Flowlet switching: a packet that follows the last packet of its flow through the switch
//! within the gap takes the same next hop; after a longer gap (a flowlet boundary, where the
//! queues ahead have had time to drain) a new one at random, as LetFlow picks.
//!
//! Each switch keeps a table of [`TABLE`] entries indexed by a hash of the flow (as switch
//! hardware keeps a flowlet table of fixed size): flows that share an entry share its
//! flowlets. An entry holds the time of its last packet and the index of its choice among
//! the candidates.

use super::{node_stream, pick, Choose, Hop};
use crate::packet::PortId;
use crate::port::Port;
use fctlab_engine::rng::splitmix64;
use fctlab_engine::{Nanos, Rng};

/// Entries of each switch's flowlet table.
pub const TABLE: usize = 4096;

#[derive(Copy, Clone)]
struct Entry {
    last: Nanos,
    choice: u32,
}

pub struct Flowlet {
    gap: Nanos,
    /// Node `n`'s table at `n * TABLE ..`, allocated when the node first routes a packet
    /// (hosts with one port never do).
    tables: Vec<Option<Box<[Entry]>>>,
    rngs: Vec<Rng>,
}

impl Flowlet {
    pub fn new(nodes: usize, gap: Nanos, seed: u64) -> Flowlet {
        Flowlet {
            gap,
            tables: (0..nodes).map(|_| None).collect(),
            rngs: (0..nodes).map(|n| node_stream(seed, n)).collect(),
        }
    }
}

impl Choose for Flowlet {
    fn choose(&mut self, hop: &mut Hop, candidates: &[PortId], _ports: &mut [Port]) -> PortId {
        let n = hop.node as usize;
        let table =
            self.tables[n].get_or_insert_with(|| vec![Entry { last: Nanos::ZERO, choice: u32::MAX }; TABLE].into());
        let e = &mut table[(splitmix64(hop.flow.0 as u64) as usize) & (TABLE - 1)];
        let fresh = e.choice == u32::MAX || hop.now.saturating_sub(e.last) > self.gap;
        if fresh || e.choice as usize >= candidates.len() {
            e.choice = pick(self.rngs[n].next_u64(), candidates.len()) as u32;
        }
        e.last = hop.now;
        candidates[e.choice as usize]
    }
}
