//! REPS, recycled entropy packet spraying (Ultra Ethernet): the sender chooses each packet's
//! path by the entropy value it writes in it, and the switches hash that value with the flow
//! and the node (as ECMP hashes a UDP source port). A value whose packet came back
//! acknowledged without an ECN mark names a path that was not congested: the sender keeps it
//! in a ring of [`RING`] values and uses each kept value once, oldest first, for a later
//! packet; with none kept it draws a fresh value among [`VALUES`]. Marked or trimmed packets'
//! values are not kept. So a flow's packets settle on the paths that deliver them unmarked,
//! and leave a path as soon as it marks.
//!
//! As uet-htsim's `UecMpReps` (uec_mp.cpp:137-196, buffer_reps.cpp): a ring of 8, each value
//! reused once, one value recycled per acknowledgement, the value drawn at random otherwise.
//! Its freeze after a timeout (10 ms of reusing the ring's values whatever their state, then
//! 16 random draws) is not modelled. Entropy values are 7 bits here (uet-htsim draws among
//! its `-paths`, 64 by default).
//!
//! Both directions of a flow keep their own ring (its data's and its acknowledgements'); the
//! simulation echoes each data packet's value on the reply it causes ([`Reps::on_reply`]).

use super::{pick, Choose, Hop};
use crate::packet::{FlowId, PortId};
use crate::port::Port;
use fctlab_engine::rng::splitmix64;
use fctlab_engine::Rng;

/// Values a sender keeps for reuse.
pub const RING: usize = 8;
/// Entropy values a sender draws among.
pub const VALUES: u64 = 128;

/// One direction's ring: values kept, oldest first, each used once.
#[derive(Clone, Default)]
struct Ring {
    values: [u8; RING],
    /// Slots of the ring holding a value not used yet (bit i: slot i).
    fresh: u8,
    /// The slot the next kept value overwrites (the oldest).
    next: u8,
}

impl Ring {
    fn keep(&mut self, v: u8) {
        let i = self.next as usize;
        self.values[i] = v;
        self.fresh |= 1 << i;
        self.next = ((i + 1) % RING) as u8;
    }
    /// The oldest fresh value, used up.
    fn take(&mut self) -> Option<u8> {
        (0..RING).map(|k| (self.next as usize + k) % RING).find(|&i| self.fresh & (1 << i) != 0).map(|i| {
            self.fresh &= !(1 << i);
            self.values[i]
        })
    }
}

pub struct Reps {
    salt: u64,
    /// Flow f's data direction at 2f, its replies' at 2f + 1 (allocated for the run's flows).
    rings: Vec<Ring>,
    rng: Rng,
    /// Values reused and values drawn (tests, reports).
    pub recycled: u64,
    pub drawn: u64,
}

impl Reps {
    pub fn new(flows: usize, seed: u64, salt: u64) -> Reps {
        Reps {
            salt,
            rings: vec![Ring::default(); 2 * flows],
            rng: Rng::stream(seed, 0x4_0000_0000),
            recycled: 0,
            drawn: 0,
        }
    }

    /// The entropy value of flow `flow`'s next packet in that direction (`reverse`: a reply).
    pub fn entropy(&mut self, flow: FlowId, reverse: bool) -> u8 {
        let kept = self.rings.get_mut(2 * flow.0 as usize + reverse as usize).and_then(Ring::take);
        match kept {
            Some(v) => {
                self.recycled += 1;
                v
            }
            None => {
                self.drawn += 1;
                self.rng.below(VALUES) as u8
            }
        }
    }

    /// A reply reached flow `flow`'s sender (`reverse`: a reply to a reply, never kept),
    /// echoing `value`, the entropy of the packet it answers: kept unless the packet was
    /// `marked` (an ECN echo) or trimmed (a NACK).
    pub fn on_reply(&mut self, flow: FlowId, value: u8, marked: bool) {
        if marked {
            return;
        }
        if let Some(r) = self.rings.get_mut(2 * flow.0 as usize) {
            r.keep(value);
        }
    }
}

impl Choose for Reps {
    #[inline]
    fn choose(&mut self, hop: &mut Hop, candidates: &[PortId], _ports: &mut [Port]) -> PortId {
        let h = splitmix64(self.salt ^ (hop.flow.0 as u64) << 32 ^ (hop.entropy as u64) << 24 ^ hop.node as u64);
        candidates[pick(h, candidates.len())]
    }
}
