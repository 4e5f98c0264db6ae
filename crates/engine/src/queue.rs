//! The event queue: a binary heap ordered by (time, insertion sequence).
//!
//! Ties at the same simulated time are broken by the order in which events were pushed, so a
//! run depends only on the scenario and the seed, never on heap internals or hashing.

use crate::units::Nanos;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

struct Entry<E> {
    time: Nanos,
    seq: u64,
    ev: E,
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, o: &Self) -> bool {
        self.time == o.time && self.seq == o.seq
    }
}
impl<E> Eq for Entry<E> {}
impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl<E> Ord for Entry<E> {
    #[inline]
    fn cmp(&self, o: &Self) -> Ordering {
        // Reversed: BinaryHeap is a max-heap and we want the earliest event first.
        o.time.cmp(&self.time).then_with(|| o.seq.cmp(&self.seq))
    }
}

/// A deterministic priority queue of events.
///
/// Popping leaves the popped entry at the top of the heap, marked consumed; the next push
/// replaces it in place (one sift-down instead of a removal plus an insertion). Handlers
/// usually schedule at least one event, so most pops cost half of a plain heap's.
pub struct EventQueue<E> {
    heap: BinaryHeap<Entry<E>>,
    next_seq: u64,
    popped: u64,
    top_consumed: bool,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E> EventQueue<E> {
    pub fn new() -> Self {
        EventQueue { heap: BinaryHeap::with_capacity(1024), next_seq: 0, popped: 0, top_consumed: false }
    }

    /// Schedules `ev` at `time`. Events at equal times pop in push order.
    #[inline]
    pub fn push(&mut self, time: Nanos, ev: E) {
        let seq = self.next_seq;
        self.next_seq += 1;
        let entry = Entry { time, seq, ev };
        if self.top_consumed {
            self.top_consumed = false;
            // Replacing the (consumed) top sifts the new entry down when the guard drops.
            *self.heap.peek_mut().expect("consumed top exists") = entry;
        } else {
            self.heap.push(entry);
        }
    }

    #[inline]
    fn discard_consumed(&mut self) {
        if self.top_consumed {
            self.top_consumed = false;
            self.heap.pop();
        }
    }

    /// Removes and returns the earliest event.
    #[inline]
    pub fn pop(&mut self) -> Option<(Nanos, E)>
    where
        E: Copy,
    {
        self.discard_consumed();
        let top = self.heap.peek()?;
        let out = (top.time, top.ev);
        self.top_consumed = true;
        self.popped += 1;
        Some(out)
    }

    /// Time of the earliest pending event.
    #[inline]
    pub fn peek_time(&mut self) -> Option<Nanos> {
        self.discard_consumed();
        self.heap.peek().map(|e| e.time)
    }

    pub fn len(&self) -> usize {
        self.heap.len() - self.top_consumed as usize
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
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
    fn push_after_pop_replaces_the_top_in_order() {
        let mut q = EventQueue::new();
        for (t, c) in [(10, 'a'), (20, 'b'), (30, 'c')] {
            q.push(Nanos(t), c);
        }
        assert_eq!(q.pop(), Some((Nanos(10), 'a')));
        assert_eq!(q.len(), 2);
        q.push(Nanos(25), 'd'); // replaces the consumed 'a'
        q.push(Nanos(20), 'e'); // same time as 'b', pushed later: after it
        let order: Vec<(u64, char)> = std::iter::from_fn(|| q.pop().map(|(t, e)| (t.0, e))).collect();
        assert_eq!(order, vec![(20, 'b'), (20, 'e'), (25, 'd'), (30, 'c')]);
    }
}
