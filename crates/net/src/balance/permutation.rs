//! Spraying by the sender over all its paths in turn: each flow sends its packets (and its
//! receiver its acknowledgements) over every shortest path once per round, in an order
//! shuffled each round, as htsim's NDP sends over its shuffled path list (`-strat perm`,
//! ndp.cpp). Over a round of P packets each of the flow's P paths carries one.
//!
//! The sender writes a path number in `0..P` into each packet's entropy value
//! ([`Permutation::entropy`]: round r visits the paths in the order a·i + b mod P, with a
//! coprime to P and a and b drawn for the flow, direction and round). Each switch with n next
//! hops takes the number's last digit in base n, turned by an offset of its own for the
//! flow, and passes the rest on: along a path through switches of n1, n2, ... next hops,
//! the numbers 0..n1·n2·... name every path once. Entropy values have 7 bits: flows with more
//! than 128 paths use 128 of them.

use super::{Choose, Hop};
use crate::packet::{FlowId, PortId};
use crate::port::Port;
use fctlab_engine::rng::splitmix64;

/// The most paths a flow sprays over (7 bits of entropy).
pub const MAX_PATHS: u32 = 128;

#[derive(Copy, Clone, Default)]
struct Cursor {
    /// The flow's paths in this direction (0: not set, taken as 1).
    paths: u8,
    /// This round's order: a·i + b mod paths.
    a: u8,
    b: u8,
    /// Packets sent so far.
    sent: u32,
}

pub struct Permutation {
    salt: u64,
    /// Flow f's data direction at 2f, its acknowledgements' at 2f + 1.
    cursors: Vec<Cursor>,
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

impl Permutation {
    pub fn new(flows: usize, salt: u64) -> Permutation {
        Permutation { salt, cursors: vec![Cursor::default(); 2 * flows] }
    }

    /// Flow `flow` has `paths` shortest paths in its data direction (`reverse`: its
    /// acknowledgements').
    pub fn set_paths(&mut self, flow: FlowId, reverse: bool, paths: u64) {
        if let Some(c) = self.cursors.get_mut(2 * flow.0 as usize + reverse as usize) {
            c.paths = paths.clamp(1, MAX_PATHS as u64) as u8;
        }
    }

    /// The path number of the flow's next packet in that direction.
    pub fn entropy(&mut self, flow: FlowId, reverse: bool) -> u8 {
        let Some(c) = self.cursors.get_mut(2 * flow.0 as usize + reverse as usize) else { return 0 };
        let p = c.paths.max(1) as u64;
        let (round, i) = (c.sent as u64 / p, c.sent as u64 % p);
        c.sent = c.sent.wrapping_add(1);
        if i == 0 {
            // A new round: its order, drawn for the flow, the direction and the round.
            let h = splitmix64(self.salt ^ (flow.0 as u64) << 33 ^ (reverse as u64) << 32 ^ round);
            let mut a = 1 + h % p;
            while gcd(a, p) != 1 {
                a = a % p + 1;
            }
            (c.a, c.b) = (a as u8, ((h >> 32) % p) as u8);
        }
        ((c.a as u64 * i + c.b as u64) % p) as u8
    }
}

impl Choose for Permutation {
    #[inline]
    fn choose(&mut self, hop: &mut Hop, candidates: &[PortId], _ports: &mut [Port]) -> PortId {
        let n = candidates.len() as u64;
        let e = hop.entropy as u64;
        let turn = splitmix64(self.salt ^ (hop.flow.0 as u64) << 32 ^ hop.node as u64) % n;
        hop.entropy = (e / n) as u8;
        candidates[((e % n + turn) % n) as usize]
    }
}
