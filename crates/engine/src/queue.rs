//! The event queue: a timing wheel over integer nanoseconds.
//!
//! Nearly every event of a packet-level run is due within microseconds (a packet's arrival at
//! the far end of a link), so the queue is built for the near future:
//! - a **wheel** of [`SLOTS`] slots of [`SLOT_NS`] nanoseconds covers the span
//!   `[base, base + SPAN_NS)`. Pushing into a slot prepends to its list (one node write, no
//!   comparison); a bitmap of non-empty slots finds the next one;
//! - the **current slot**'s events, taken out of the wheel, sorted, are popped in order; an
//!   event pushed at or before the current slot's end is inserted there in order;
//! - events past the span wait in a binary heap (`far`). When the wheel is empty, its span
//!   moves to the earliest of them and those inside it move in.
//!
//! Ties: under [`Ties::Fifo`] events at equal times run in the order they were pushed (a slot
//! list is newest first; reversed it is in push order, and the sort by time is stable; far
//! events carry their push sequence). Under [`Ties::Keyed`] they run in the order of each
//! event's own [`TieKey`], which names
//! the event (its kind and the port, flow or node it acts on), so the order among events of
//! equal time does not depend on the order they were pushed in: events with equal keys are
//! equal events, and which of two equal events runs first changes nothing. A run depends
//! only on the scenario and the seed under either.

use crate::units::Nanos;
use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

/// log2 of a slot's width in nanoseconds.
const SLOT_BITS: u32 = 4;
/// Width of a slot: 16 ns. A k=16 fat-tree permutation at 10 Gbps has about 12 events in
/// one, a k=8 one about 1.5: few enough to sort cheaply, wide enough that the bitmap scan
/// stays short (widths from 8 to 32 ns measured; 16 was the fastest at both sizes).
pub const SLOT_NS: u64 = 1 << SLOT_BITS;
/// log2 of the number of slots.
const WHEEL_BITS: u32 = 14;
/// Slots in the wheel.
pub const SLOTS: usize = 1 << WHEEL_BITS;
/// Time the wheel covers: 262 us (16,384 slots; events further ahead, like retransmission timers, wait in
/// the far heap).
pub const SPAN_NS: u64 = SLOT_NS << WHEEL_BITS;
const NIL: u32 = u32::MAX;

/// How events of equal time are ordered.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
pub enum Ties {
    /// In the order they were pushed.
    #[default]
    Fifo,
    /// By their [`TieKey`]: independent of the order they were pushed in.
    Keyed,
}

/// An event's key among events of equal time under [`Ties::Keyed`]: equal keys only for
/// equal events.
pub trait TieKey {
    fn tie_key(&self) -> u64;
}

/// The order of an event: its time, then its tie key (one comparison).
#[inline(always)]
fn order(t: u64, key: u64) -> u128 {
    (t as u128) << 64 | key as u128
}

#[derive(Copy, Clone)]
struct Node<E> {
    time: u64,
    ev: E,
    /// Next (older) node of the same slot, or the next free node.
    next: u32,
}

/// An event past the wheel's span, ordered by (time, tie key) only.
struct Far<E> {
    time: u64,
    seq: u64,
    ev: E,
}

/// An event of the current slot (its tie key, under [`Ties::Keyed`], read from the event).
#[derive(Copy, Clone)]
struct Entry<E> {
    time: u64,
    ev: E,
}

impl<E> PartialEq for Far<E> {
    fn eq(&self, other: &Self) -> bool {
        (self.time, self.seq) == (other.time, other.seq)
    }
}
impl<E> Eq for Far<E> {}
impl<E> PartialOrd for Far<E> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<E> Ord for Far<E> {
    fn cmp(&self, other: &Self) -> Ordering {
        (self.time, self.seq).cmp(&(other.time, other.seq))
    }
}

/// A deterministic monotone priority queue of events.
pub struct EventQueue<E> {
    /// Newest-first list of each slot's events (indices into `nodes`); the current slot's is
    /// always empty (its events are in `current`).
    heads: Box<[u32]>,
    /// Bit `s` set: slot `s` has events.
    occupied: Box<[u64]>,
    nodes: Vec<Node<E>>,
    free: u32,
    /// The earliest events, in order, read from `pos`: the current slot's, and any pushed
    /// before its end.
    current: Vec<Entry<E>>,
    pos: usize,
    /// The current slot and the start of the wheel's span.
    cur: usize,
    base: u64,
    /// Events at or past `base + SPAN_NS` when they were pushed.
    far: BinaryHeap<Reverse<Far<E>>>,
    ties: Ties,
    /// The next far event's push sequence (its tie key under [`Ties::Fifo`]).
    far_seq: u64,
    last: u64,
    len: usize,
    popped: u64,
}

impl<E: Copy + TieKey> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E: Copy + TieKey> EventQueue<E> {
    /// A queue whose events of equal time run in push order.
    pub fn new() -> Self {
        Self::with_ties(Ties::Fifo)
    }

    /// A queue whose events of equal time run in the given order.
    pub fn with_ties(ties: Ties) -> Self {
        EventQueue {
            heads: vec![NIL; SLOTS].into_boxed_slice(),
            occupied: vec![0u64; SLOTS / 64].into_boxed_slice(),
            nodes: Vec::new(),
            free: NIL,
            current: Vec::new(),
            pos: 0,
            cur: 0,
            base: 0,
            far: BinaryHeap::new(),
            ties,
            far_seq: 0,
            last: 0,
            len: 0,
            popped: 0,
        }
    }

    /// Schedules `ev` at `time`, which must not be earlier than the last event popped (a time
    /// in the past is treated as that time). Events at equal times pop in the queue's
    /// [`Ties`] order.
    #[inline]
    pub fn push(&mut self, time: Nanos, ev: E) {
        debug_assert!(time.0 >= self.last, "event scheduled in the past: {} < {}", time.0, self.last);
        let t = time.0.max(self.last);
        self.len += 1;
        // (Under `Ties::Fifo` the lists and `current` keep push order, and only far events
        // need their push sequence.)
        let end_of_current = self.base + ((self.cur as u64 + 1) << SLOT_BITS);
        if t < end_of_current {
            self.insert_current(t, ev);
        } else if t - self.base < SPAN_NS {
            self.push_slot(((t - self.base) >> SLOT_BITS) as usize, t, ev);
        } else {
            let seq = if self.ties == Ties::Keyed { ev.tie_key() } else { self.far_seq };
            self.far.push(Reverse(Far { time: t, seq, ev }));
            self.far_seq += 1;
        }
    }

    /// Inserts into the sorted `current`, after the events of equal time and key.
    #[inline]
    fn insert_current(&mut self, t: u64, ev: E) {
        let rest = &self.current[self.pos..];
        let at = self.pos
            + if self.ties == Ties::Keyed {
                let key = order(t, ev.tie_key());
                rest.partition_point(|e| order(e.time, e.ev.tie_key()) <= key)
            } else {
                rest.partition_point(|e| e.time <= t)
            };
        let e = Entry { time: t, ev };
        if at == self.current.len() {
            self.current.push(e);
        } else {
            self.current.insert(at, e);
        }
    }

    #[inline]
    fn push_slot(&mut self, s: usize, t: u64, ev: E) {
        let node = Node { time: t, ev, next: self.heads[s] };
        let i = if self.free != NIL {
            let i = self.free;
            self.free = self.nodes[i as usize].next;
            self.nodes[i as usize] = node;
            i
        } else {
            self.nodes.push(node);
            self.nodes.len() as u32 - 1
        };
        self.heads[s] = i;
        self.occupied[s / 64] |= 1 << (s % 64);
    }

    /// First non-empty slot at or after `from`.
    #[inline]
    fn next_occupied(&self, from: usize) -> Option<usize> {
        let mut w = from / 64;
        if w >= self.occupied.len() {
            return None;
        }
        let mut bits = self.occupied[w] & (!0u64 << (from % 64));
        loop {
            if bits != 0 {
                return Some(w * 64 + bits.trailing_zeros() as usize);
            }
            w += 1;
            if w == self.occupied.len() {
                return None;
            }
            bits = self.occupied[w];
        }
    }

    /// Makes slot `s` the current one: its events, in (time, tie key) order, into `current`.
    #[inline(always)] // two call sites in settle_slow; out of line it costs about 2% of a run
    fn take_slot(&mut self, s: usize) {
        self.cur = s;
        self.current.clear();
        self.pos = 0;
        let mut i = std::mem::replace(&mut self.heads[s], NIL);
        self.occupied[s / 64] &= !(1 << (s % 64));
        while i != NIL {
            let n = self.nodes[i as usize];
            self.current.push(Entry { time: n.time, ev: n.ev });
            self.nodes[i as usize].next = self.free;
            self.free = i;
            i = n.next;
        }
        // (The list is newest first: reversed, it is in push order, nearly in time order.)
        self.current.reverse();
        if self.ties == Ties::Keyed {
            // (Equal times and keys only for equal events: their order changes nothing.)
            self.current.sort_unstable_by_key(|e| order(e.time, e.ev.tie_key()));
        } else {
            self.current.sort_by_key(|e| e.time); // stable: push order among equal times
        }
    }

    /// Makes `current` non-empty (if any event is pending).
    #[inline]
    fn settle(&mut self) -> bool {
        if self.pos < self.current.len() {
            return true;
        }
        if self.len == 0 {
            return false;
        }
        self.settle_slow();
        true
    }

    #[inline(never)]
    fn settle_slow(&mut self) {
        if let Some(s) = self.next_occupied(self.cur + 1) {
            self.take_slot(s);
            return;
        }
        // The wheel is empty: its span moves to the earliest far event, and the far events
        // inside the new span move into their slots.
        let first = self.far.peek().expect("pending events are in the wheel or far").0.time;
        self.base = first & !(SPAN_NS - 1);
        let end = self.base + SPAN_NS;
        while self.far.peek().is_some_and(|f| f.0.time < end) {
            let Reverse(Far { time, ev, .. }) = self.far.pop().expect("peeked");
            self.push_slot(((time - self.base) >> SLOT_BITS) as usize, time, ev);
        }
        let s = self.next_occupied(0).expect("the earliest far event is in the new span");
        self.take_slot(s);
    }

    /// Removes and returns the earliest event.
    #[inline]
    pub fn pop(&mut self) -> Option<(Nanos, E)> {
        if !self.settle() {
            return None;
        }
        let Entry { time: t, ev, .. } = self.current[self.pos];
        self.pos += 1;
        self.last = t;
        self.len -= 1;
        self.popped += 1;
        Some((Nanos(t), ev))
    }

    /// Time of the earliest pending event.
    #[inline]
    pub fn peek_time(&mut self) -> Option<Nanos> {
        self.settle().then(|| Nanos(self.current[self.pos].time))
    }

    /// The `k`-th next event (0: the earliest) when it is already among the current slot's,
    /// without moving the queue: for looking ahead cheaply (None tells nothing).
    #[inline]
    pub fn upcoming(&self, k: usize) -> Option<&E> {
        self.current.get(self.pos + k).map(|e| &e.ev)
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

    /// A delay for the random tests: none, under 10 ns, under 100 us, up to the wheel's
    /// span, or up to `horizon`, each one time in five.
    fn random_delay(rng: &mut crate::Rng, horizon: u64) -> u64 {
        match rng.below(5) {
            0 => 0,
            1 => rng.below(10),
            2 => rng.below(100_000),
            3 => rng.below(SPAN_NS + 1),
            _ => rng.below(horizon),
        }
    }

    impl TieKey for char {
        fn tie_key(&self) -> u64 {
            *self as u64
        }
    }
    impl TieKey for u64 {
        fn tie_key(&self) -> u64 {
            *self
        }
    }

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
    fn far_events_keep_fifo_order_with_later_pushes_at_the_same_time() {
        // 'a' is pushed while its time is past the span, 'b' at the same time once the span
        // has reached it: 'a' still runs first.
        let t = 3 * SPAN_NS + 7;
        let mut q = EventQueue::new();
        q.push(Nanos(t), 'a');
        q.push(Nanos(t - 5), 'x');
        assert_eq!(q.pop(), Some((Nanos(t - 5), 'x')));
        q.push(Nanos(t), 'b');
        q.push(Nanos(t + SPAN_NS), 'c');
        q.push(Nanos(t), 'd');
        let order: Vec<char> = std::iter::from_fn(|| q.pop().map(|(_, e)| e)).collect();
        assert_eq!(order, vec!['a', 'b', 'd', 'c']);
    }

    #[test]
    fn a_push_before_the_slot_a_peek_moved_to_still_comes_first() {
        // peek_time moves to the next non-empty slot; an event pushed afterwards at an
        // earlier time (still not before the last pop) must pop before it, also across spans.
        for gap in [10 * SLOT_NS, 5 * SPAN_NS] {
            let mut q = EventQueue::new();
            q.push(Nanos(1), 'a');
            q.push(Nanos(gap), 'c');
            assert_eq!(q.pop(), Some((Nanos(1), 'a')));
            assert_eq!(q.peek_time(), Some(Nanos(gap)));
            q.push(Nanos(2), 'b');
            q.push(Nanos(gap), 'd');
            let order: Vec<char> = std::iter::from_fn(|| q.pop().map(|(_, e)| e)).collect();
            assert_eq!(order, vec!['b', 'c', 'd'], "gap {gap}");
        }
    }

    #[test]
    fn matches_a_reference_priority_queue() {
        // Random monotone workloads against a sorted reference keyed by (time, push
        // sequence): delays from zero (same instant) through the wheel's span to far beyond
        // it, with peeks between pushes.
        for (stream, horizon) in [(3u64, 1u64 << 40), (4, 4 * SPAN_NS), (5, 3 * SLOT_NS)] {
            let mut rng = crate::Rng::stream(11, stream);
            let mut q = EventQueue::new();
            let mut reference: std::collections::BTreeSet<(u64, u64)> = Default::default();
            let mut seq = 0u64;
            let mut now = 0u64;
            for _ in 0..200_000 {
                if rng.below(3) < 2 || reference.is_empty() {
                    let dt = random_delay(&mut rng, horizon);
                    q.push(Nanos(now + dt), seq);
                    reference.insert((now + dt, seq));
                    seq += 1;
                } else if rng.below(4) == 0 {
                    assert_eq!(q.peek_time(), reference.iter().next().map(|e| Nanos(e.0)));
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

    #[test]
    fn keyed_ties_run_by_key_whatever_the_push_order() {
        // The same events pushed in two orders, some at the current time while others of
        // that time wait: the same pops.
        let events =
            [(5, 'c'), (1, 'z'), (5, 'a'), (3, 'q'), (5, 'b'), (1, 'y'), (3 * SPAN_NS, 'm'), (3 * SPAN_NS, 'k')];
        let run = |order: &[(u64, char)]| {
            let mut q = EventQueue::with_ties(Ties::Keyed);
            for &(t, e) in order {
                q.push(Nanos(t), e);
            }
            let first = q.pop();
            // pushed at the popped time, after others of it: still by key
            q.push(Nanos(1), 'x');
            let mut out = vec![first.unwrap()];
            out.extend(std::iter::from_fn(|| q.pop()));
            out.into_iter().map(|(t, e)| (t.0, e)).collect::<Vec<_>>()
        };
        let mut reversed = events;
        reversed.reverse();
        let want = vec![
            (1, 'y'),
            (1, 'x'),
            (1, 'z'),
            (3, 'q'),
            (5, 'a'),
            (5, 'b'),
            (5, 'c'),
            (3 * SPAN_NS, 'k'),
            (3 * SPAN_NS, 'm'),
        ];
        assert_eq!(run(&events), want);
        assert_eq!(run(&reversed), want);
    }

    #[test]
    fn keyed_ties_match_a_reference_ordered_by_time_and_key() {
        // Random monotone workloads with many equal times and repeated keys (equal events)
        // against a sorted reference keyed by (time, key).
        for (stream, horizon) in [(6u64, 1u64 << 40), (7, 4 * SPAN_NS), (8, 3 * SLOT_NS)] {
            let mut rng = crate::Rng::stream(12, stream);
            let mut q = EventQueue::with_ties(Ties::Keyed);
            let mut reference: std::collections::BTreeMap<(u64, u64), usize> = Default::default();
            let mut pending = 0usize;
            let mut now = 0u64;
            for _ in 0..200_000 {
                if rng.below(3) < 2 || pending == 0 {
                    let dt = random_delay(&mut rng, horizon);
                    let key = rng.below(50);
                    q.push(Nanos(now + dt), key);
                    *reference.entry((now + dt, key)).or_default() += 1;
                    pending += 1;
                } else {
                    let want = *reference.keys().next().unwrap();
                    let n = reference.get_mut(&want).unwrap();
                    *n -= 1;
                    if *n == 0 {
                        reference.remove(&want);
                    }
                    pending -= 1;
                    let (t, k) = q.pop().unwrap();
                    assert_eq!((t.0, k), want);
                    now = t.0;
                }
                assert_eq!(q.len(), pending);
            }
        }
    }
}
