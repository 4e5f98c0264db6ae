//! Round-robin spraying: each switch sends its packets to their next hops in turn (one
//! counter per switch, whatever the destination).

use super::{Choose, Hop};
use crate::packet::PortId;
use crate::port::Port;

pub struct RoundRobin {
    turn: Vec<u32>,
}

impl RoundRobin {
    pub fn new(nodes: usize) -> RoundRobin {
        RoundRobin { turn: vec![0; nodes] }
    }
}

impl Choose for RoundRobin {
    #[inline]
    fn choose(&mut self, hop: &mut Hop, candidates: &[PortId], _ports: &mut [Port]) -> PortId {
        let t = &mut self.turn[hop.node as usize];
        *t = t.wrapping_add(1);
        candidates[*t as usize % candidates.len()]
    }
}
