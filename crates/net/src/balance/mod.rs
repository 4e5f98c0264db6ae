//! Path selection: which of the equal-cost next hops a packet takes at a node.
//!
//! Per-flow ECMP (the default) is not here: a flow's paths are computed once when it starts
//! ([`crate::Routes::path`]) and every packet of the flow follows them. The other policies
//! choose per packet, at every node the packet passes, among the ports [`crate::Routes`]
//! lists toward its destination: one file each, one line in [`REGISTRY`].
//!
//! A policy keeps its state per node (a counter, a flowlet table of fixed size, a random
//! stream), never per flow, as a switch can; it reads only its own node's queues.
//! Per-packet choice costs one table read (the candidates) and at most one random draw.

mod adaptive;
mod flowlet;
mod permutation;
mod reps;
mod round_robin;
mod spray;

pub use adaptive::Adaptive;
pub use flowlet::Flowlet;
pub use permutation::Permutation;
pub use reps::Reps;
pub use round_robin::RoundRobin;
pub use spray::Spray;

use crate::packet::{FlowId, PortId};
use crate::port::Port;
use crate::qdisc::KeyError;
use fctlab_engine::Nanos;

/// What a policy knows of the packet it routes.
#[derive(Copy, Clone, Debug)]
pub struct Hop {
    pub now: Nanos,
    /// The node the packet is at (index into the run's nodes).
    pub node: u32,
    pub flow: FlowId,
    /// The entropy value its sender wrote (0-127; 0 unless the sender chooses paths). A
    /// policy that reads it may rewrite it for the switches after this one.
    pub entropy: u8,
}

/// One path-selection policy's state over the whole network (per node inside).
pub trait Choose {
    /// The port among `candidates` (two or more, all on shortest paths) the packet takes.
    /// `ports` are the run's ports, for policies that read their node's queues.
    fn choose(&mut self, hop: &mut Hop, candidates: &[PortId], ports: &mut [Port]) -> PortId;
}

/// `[network] load_balancing` and its keys, as the run builds it.
#[derive(Clone, Debug, PartialEq)]
pub enum Balance {
    /// Per-flow ECMP: one path per flow, by a hash of the flow (the default).
    Ecmp,
    /// Each packet a random next hop at every node.
    Spray,
    /// Each node sends its packets to its next hops in turn.
    RoundRobin,
    /// Each flow sends its packets over all its paths in turn, in an order shuffled each round;
    /// the switches read the path from the packet.
    Permutation,
    /// A packet that follows its flow's last one through the node within `gap` takes the same
    /// port; after a longer gap, a new random one.
    Flowlet { gap: Nanos },
    /// The next hop whose queue (at this node) holds the fewest bytes, ties at random.
    Adaptive,
    /// The next hop by a hash of the flow and the entropy value its sender chose (REPS: the
    /// sender recycles the values of packets that came back unmarked).
    Reps,
}

/// A policy's name in scenario files, its keys, and what it is.
pub struct Registration {
    pub name: &'static str,
    pub keys: &'static [&'static str],
    pub summary: &'static str,
}

/// Every policy, by its `load_balancing` name.
pub static REGISTRY: &[Registration] = &[
    Registration { name: "ecmp", keys: &[], summary: "one path per flow, by a hash of the flow (per-flow ECMP)" },
    Registration { name: "spray", keys: &[], summary: "every packet a random next hop at every switch" },
    Registration { name: "round_robin", keys: &[], summary: "every switch sends to its next hops in turn" },
    Registration {
        name: "permutation",
        keys: &[],
        summary: "every flow sends over all its paths in turn, shuffled each round (the sender chooses)",
    },
    Registration {
        name: "flowlet",
        keys: &["flowlet_gap"],
        summary: "a new random next hop after a gap of flowlet_gap in a flow (a fixed table per switch)",
    },
    Registration { name: "adaptive", keys: &[], summary: "the next hop with the fewest bytes queued at the switch" },
    Registration {
        name: "reps",
        keys: &[],
        summary: "the next hop by the entropy value the sender chose: REPS reuses the values of packets acknowledged unmarked",
    },
];

/// Every key a policy reads from `[network]`.
pub fn all_keys() -> impl Iterator<Item = &'static str> {
    REGISTRY.iter().flat_map(|r| r.keys.iter().copied())
}

/// The flowlet gap when `flowlet_gap` is not given: a few base round trips of a three-tier
/// fat-tree at 10-100 Gb/s, so that a flowlet boundary lets queues ahead drain.
pub const DEFAULT_FLOWLET_GAP: Nanos = Nanos::from_micros(100);

impl Balance {
    /// The policy named `name` with its keys (`flowlet_gap` already parsed, None if absent).
    pub fn from_name(name: &str, flowlet_gap: Option<Nanos>) -> Result<Balance, KeyError> {
        let b = match name {
            "ecmp" => Balance::Ecmp,
            "spray" => Balance::Spray,
            "round_robin" => Balance::RoundRobin,
            "permutation" => Balance::Permutation,
            "flowlet" => Balance::Flowlet { gap: flowlet_gap.unwrap_or(DEFAULT_FLOWLET_GAP) },
            "adaptive" => Balance::Adaptive,
            "reps" => Balance::Reps,
            other => {
                let known: Vec<&str> = REGISTRY.iter().map(|r| r.name).collect();
                return Err(KeyError::new(
                    "load_balancing",
                    format!("unknown policy \"{other}\" (known: {})", known.join(", ")),
                ));
            }
        };
        if flowlet_gap.is_some() && !matches!(b, Balance::Flowlet { .. }) {
            return Err(KeyError::new("flowlet_gap", "applies with load_balancing = \"flowlet\" only"));
        }
        if let Some(g) = flowlet_gap {
            if g == Nanos::ZERO {
                return Err(KeyError::new("flowlet_gap", "must be above 0s"));
            }
        }
        Ok(b)
    }

    /// Its name in scenario files.
    pub fn name(&self) -> &'static str {
        match self {
            Balance::Ecmp => "ecmp",
            Balance::Spray => "spray",
            Balance::RoundRobin => "round_robin",
            Balance::Permutation => "permutation",
            Balance::Flowlet { .. } => "flowlet",
            Balance::Adaptive => "adaptive",
            Balance::Reps => "reps",
        }
    }

    /// Packets of one flow may take different paths.
    pub fn per_packet(&self) -> bool {
        *self != Balance::Ecmp
    }

    /// Its state for a network of `nodes` nodes and a run of `flows` flows; `seed` is the
    /// run's (each node draws from its own stream). None for per-flow ECMP.
    pub fn build(&self, nodes: usize, flows: usize, seed: u64, salt: u64) -> Option<Balancer> {
        Some(match *self {
            Balance::Ecmp => return None,
            Balance::Spray => Balancer::Spray(Spray::new(nodes, seed)),
            Balance::RoundRobin => Balancer::RoundRobin(RoundRobin::new(nodes)),
            Balance::Permutation => Balancer::Permutation(Permutation::new(flows, salt)),
            Balance::Flowlet { gap } => Balancer::Flowlet(Flowlet::new(nodes, gap, seed)),
            Balance::Adaptive => Balancer::Adaptive(Adaptive::new(nodes, seed)),
            Balance::Reps => Balancer::Reps(Reps::new(flows, seed, salt)),
        })
    }
}

/// The random stream of node `node`'s policy (apart from every port's and flow's streams).
pub(crate) fn node_stream(seed: u64, node: usize) -> fctlab_engine::Rng {
    fctlab_engine::Rng::stream(seed, 0x3_0000_0000 + node as u64)
}

/// A per-packet policy's state (static dispatch).
pub enum Balancer {
    Spray(Spray),
    RoundRobin(RoundRobin),
    Permutation(Permutation),
    Flowlet(Flowlet),
    Adaptive(Adaptive),
    Reps(Reps),
}

impl Balancer {
    /// The port a packet at `hop.node` takes among `candidates` (one or more); a policy that
    /// reads the packet's entropy value may rewrite `hop.entropy` for the next switches.
    #[inline]
    pub fn next(&mut self, hop: &mut Hop, candidates: &[PortId], ports: &mut [Port]) -> Option<PortId> {
        match candidates.len() {
            0 => None,
            1 => Some(candidates[0]),
            _ => Some(match self {
                Balancer::Spray(p) => p.choose(hop, candidates, ports),
                Balancer::RoundRobin(p) => p.choose(hop, candidates, ports),
                Balancer::Permutation(p) => p.choose(hop, candidates, ports),
                Balancer::Flowlet(p) => p.choose(hop, candidates, ports),
                Balancer::Adaptive(p) => p.choose(hop, candidates, ports),
                Balancer::Reps(p) => p.choose(hop, candidates, ports),
            }),
        }
    }
}

/// Index in `0..n` from a 64-bit hash (multiply-shift, no modulo bias worth the name).
#[inline]
pub(crate) fn pick(h: u64, n: usize) -> usize {
    ((h as u128 * n as u128) >> 64) as usize
}

#[cfg(test)]
mod tests;
