//! REPS's switch side: the next hop by a hash of the flow, the node and the entropy value the
//! sender wrote in the packet (as ECMP hashes a UDP source port), so that a sender chooses
//! its packets' paths by their entropy values and recycles those that came back unmarked
//! (the sender's part is the transport's). With one entropy value per flow this is per-flow
//! ECMP.

use super::{pick, Choose, Hop};
use crate::packet::PortId;
use crate::port::Port;
use fctlab_engine::rng::splitmix64;

pub struct Reps {
    salt: u64,
}

impl Reps {
    pub fn new(salt: u64) -> Reps {
        Reps { salt }
    }
}

impl Choose for Reps {
    #[inline]
    fn choose(&mut self, hop: &mut Hop, candidates: &[PortId], _ports: &mut [Port]) -> PortId {
        let h = splitmix64(self.salt ^ (hop.flow.0 as u64) << 32 ^ (hop.entropy as u64) << 24 ^ hop.node as u64);
        candidates[pick(h, candidates.len())]
    }
}
