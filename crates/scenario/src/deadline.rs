//! A workload entry's `deadline`: one for every flow, or one per size class. Workloads read
//! it; the flows they list, draw or replay from a trace each get theirs from it.

use fctlab_engine::Nanos;

/// Size buckets used by per-class deadlines (same edges as the metrics' default buckets).
const SMALL_BELOW: u64 = 100_000;
const LARGE_FROM: u64 = 10_000_000;

#[derive(Clone, Debug)]
pub(crate) enum Deadline {
    None,
    Fixed(Nanos),
    ByClass { small: Option<Nanos>, medium: Option<Nanos>, large: Option<Nanos> },
}

impl Deadline {
    pub(crate) fn for_size(&self, size: Option<u64>) -> Option<Nanos> {
        match self {
            Deadline::None => None,
            Deadline::Fixed(d) => Some(*d),
            Deadline::ByClass { small, medium, large } => match size? {
                s if s < SMALL_BELOW => *small,
                s if s < LARGE_FROM => *medium,
                _ => *large,
            },
        }
    }
}
