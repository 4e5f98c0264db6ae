//! The event queue: a radix heap over integer nanoseconds, FIFO among equal times.
//!
//! A discrete-event simulation never schedules an event before the one it is processing, so
//! the keys are monotone and a radix heap applies: an event goes into bucket
//! `bit_length(time XOR last)`, where `last` is the time of the most recent minimum. Bucket 0
//! holds the events at exactly `last`, in push order. When it empties, the lowest non-empty
//! bucket is redistributed around its minimum; every event moves down at most 64 times in
//! its life and usually a few, so push is O(1) and pop amortized nearly so, with no
//! comparisons between unrelated events.
//!
//! Ties: events with equal times always share a bucket (the bucket depends only on the time
//! and `last`), buckets keep push order, and redistribution preserves it, so events at the
//! same instant run in the order they were scheduled. A run depends only on the scenario and
//! the seed.

use crate::units::Nanos;

const BUCKETS: usize = 65;

/// A deterministic monotone priority queue of events.
pub struct EventQueue<E> {
    buckets: Vec<Vec<(u64, E)>>,
    /// Read position in bucket 0 (its events are consumed from the front).
    head0: usize,
    last: u64,
    len: usize,
    popped: u64,
}

impl<E: Copy> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E: Copy> EventQueue<E> {
    pub fn new() -> Self {
        EventQueue { buckets: (0..BUCKETS).map(|_| Vec::new()).collect(), head0: 0, last: 0, len: 0, popped: 0 }
    }

    #[inline]
    fn bucket_of(&self, t: u64) -> usize {
        if t == self.last {
            0
        } else {
            64 - (t ^ self.last).leading_zeros() as usize
        }
    }

    /// Schedules `ev` at `time`, which must not be earlier than the last event popped (a time
    /// in the past is treated as that time). Events at equal times pop in push order.
    #[inline]
    pub fn push(&mut self, time: Nanos, ev: E) {
        debug_assert!(time.0 >= self.last, "event scheduled in the past: {} < {}", time.0, self.last);
        let t = time.0.max(self.last);
        let b = self.bucket_of(t);
        self.buckets[b].push((t, ev));
        self.len += 1;
    }

    /// Makes bucket 0 non-empty (if any event is pending) by redistributing the lowest
    /// non-empty bucket around its minimum.
    #[inline]
    fn settle(&mut self) -> bool {
        if self.head0 < self.buckets[0].len() {
            return true;
        }
        if self.len == 0 {
            return false;
        }
        self.buckets[0].clear();
        self.head0 = 0;
        let i = match (1..BUCKETS).find(|&i| !self.buckets[i].is_empty()) {
            Some(i) => i,
            None => return false,
        };
        let mut moving = std::mem::take(&mut self.buckets[i]);
        self.last = moving.iter().map(|e| e.0).min().expect("non-empty bucket");
        for &(t, ev) in &moving {
            let b = self.bucket_of(t);
            self.buckets[b].push((t, ev));
        }
        moving.clear();
        self.buckets[i] = moving; // keep the allocation
        true
    }

    /// Removes and returns the earliest event.
    #[inline]
    pub fn pop(&mut self) -> Option<(Nanos, E)> {
        if !self.settle() {
            return None;
        }
        let (t, ev) = self.buckets[0][self.head0];
        self.head0 += 1;
        self.len -= 1;
        self.popped += 1;
        Some((Nanos(t), ev))
    }

    /// Time of the earliest pending event.
    #[inline]
    pub fn peek_time(&mut self) -> Option<Nanos> {
        self.settle().then_some(Nanos(self.last))
    }

    pub fn len(&self) -> usize {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// Number of events popped so far (the "events" figure of a run).
    pub fn events_processed(&self) -> u64 {
        self.popped
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn orders_by_time_then_insertion() {
        let mut q = EventQueue::new();
        q.push(Nanos(5), 'a');
        q.push(Nanos(1), 'b');
        q.push(Nanos(5), 'c');
        q.push(Nanos(1), 'd');
        q.push(Nanos(3), 'e');
        let order: Vec<char> = std::iter::from_fn(|| q.pop().map(|(_, e)| e)).collect();
        assert_eq!(order, vec!['b', 'd', 'e', 'a', 'c']);
        assert_eq!(q.events_processed(), 5);
        assert!(q.is_empty());
    }

    #[test]
    fn interleaved_pushes_keep_time_then_fifo_order() {
        let mut q = EventQueue::new();
        for (t, c) in [(10, 'a'), (20, 'b'), (30, 'c')] {
            q.push(Nanos(t), c);
        }
        assert_eq!(q.pop(), Some((Nanos(10), 'a')));
        assert_eq!(q.len(), 2);
        q.push(Nanos(25), 'd');
        q.push(Nanos(20), 'e'); // same time as 'b', pushed later: after it
        q.push(Nanos(10), 'f'); // at the current time: next
        let order: Vec<(u64, char)> = std::iter::from_fn(|| q.pop().map(|(t, e)| (t.0, e))).collect();
        assert_eq!(order, vec![(10, 'f'), (20, 'b'), (20, 'e'), (25, 'd'), (30, 'c')]);
    }

    #[test]
    fn matches_a_reference_priority_queue() {
        // Random monotone workload against a sorted reference keyed by (time, push sequence).
        let mut rng = crate::Rng::stream(11, 3);
        let mut q = EventQueue::new();
        let mut reference: std::collections::BTreeSet<(u64, u64)> = Default::default();
        let mut seq = 0u64;
        let mut now = 0u64;
        for _ in 0..200_000 {
            if rng.below(3) < 2 || reference.is_empty() {
                let dt = match rng.below(4) {
                    0 => 0,
                    1 => rng.below(10),
                    2 => rng.below(100_000),
                    _ => rng.below(1 << 40),
                };
                q.push(Nanos(now + dt), seq);
                reference.insert((now + dt, seq));
                seq += 1;
            } else {
                let want = *reference.iter().next().unwrap();
                reference.remove(&want);
                assert_eq!(q.peek_time(), Some(Nanos(want.0)));
                let (t, s) = q.pop().unwrap();
                assert_eq!((t.0, s), want);
                now = t.0;
            }
            assert_eq!(q.len(), reference.len());
        }
    }
}
