//! Adaptive routing: the next hop whose queue at this switch holds the fewest bytes (local
//! queues only, as a switch sees them), ties broken at random.

use super::{node_stream, pick, Choose, Hop};
use crate::packet::PortId;
use crate::port::Port;
use fctlab_engine::Rng;

pub struct Adaptive {
    rngs: Vec<Rng>,
}

impl Adaptive {
    pub fn new(nodes: usize, seed: u64) -> Adaptive {
        Adaptive { rngs: (0..nodes).map(|n| node_stream(seed, n)).collect() }
    }
}

impl Choose for Adaptive {
    fn choose(&mut self, hop: &mut Hop, candidates: &[PortId], ports: &mut [Port]) -> PortId {
        // Start at a random candidate and keep the first least-queued one after it: ties go
        // to each of them with equal chance, with one draw.
        let n = candidates.len();
        let start = pick(self.rngs[hop.node as usize].next_u64(), n);
        let mut best = candidates[start];
        let mut least = u64::MAX;
        for i in 0..n {
            let c = candidates[(start + i) % n];
            let (_, bytes) = ports[c.0 as usize].queue_at(hop.now);
            if bytes < least {
                least = bytes;
                best = c;
            }
        }
        best
    }
}
