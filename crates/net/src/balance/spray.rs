//! Random packet spraying: every packet a next hop drawn at random at every switch (as
//! NDP's and pFabric's fabrics spray).

use super::{node_stream, pick, Choose, Hop};
use crate::packet::PortId;
use crate::port::Port;
use fctlab_engine::Rng;

pub struct Spray {
    /// One random stream per node.
    rngs: Vec<Rng>,
}

impl Spray {
    pub fn new(nodes: usize, seed: u64) -> Spray {
        Spray { rngs: (0..nodes).map(|n| node_stream(seed, n)).collect() }
    }
}

impl Choose for Spray {
    #[inline]
    fn choose(&mut self, hop: &mut Hop, candidates: &[PortId], _ports: &mut [Port]) -> PortId {
        let r = self.rngs[hop.node as usize].next_u64();
        candidates[pick(r, candidates.len())]
    }
}
