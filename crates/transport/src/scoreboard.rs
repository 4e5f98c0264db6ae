//! A set of disjoint byte ranges: the sender's SACK scoreboard and the receiver's
//! out-of-order buffer.

#[derive(Clone, Debug, Default)]
pub struct RangeSet {
    /// Sorted, disjoint, non-adjacent [start, end) ranges.
    ranges: Vec<(u64, u64)>,
    total: u64,
}

impl RangeSet {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds [start, end); returns the merged range that now contains it.
    pub fn insert(&mut self, start: u64, end: u64) -> (u64, u64) {
        if start >= end {
            return (start, end);
        }
        // first range whose end >= start (may merge)
        let i = self.ranges.partition_point(|r| r.1 < start);
        let mut s = start;
        let mut e = end;
        let mut j = i;
        while j < self.ranges.len() && self.ranges[j].0 <= e {
            s = s.min(self.ranges[j].0);
            e = e.max(self.ranges[j].1);
            self.total -= self.ranges[j].1 - self.ranges[j].0;
            j += 1;
        }
        self.ranges.splice(i..j, std::iter::once((s, e)));
        self.total += e - s;
        (s, e)
    }

    /// Removes [start, end) from the set.
    pub fn remove(&mut self, start: u64, end: u64) {
        if start >= end {
            return;
        }
        let i = self.ranges.partition_point(|r| r.1 <= start);
        let mut j = i;
        let mut keep: [(u64, u64); 2] = [(0, 0); 2];
        let mut n = 0;
        while j < self.ranges.len() && self.ranges[j].0 < end {
            let (rs, re) = self.ranges[j];
            self.total -= re - rs;
            if rs < start {
                keep[n] = (rs, start);
                n += 1;
            }
            if re > end {
                keep[n] = (end, re);
                n += 1;
            }
            j += 1;
        }
        for k in &keep[..n] {
            self.total += k.1 - k.0;
        }
        self.ranges.splice(i..j, keep[..n].iter().copied());
    }

    /// Forgets everything below `seq`.
    #[inline]
    pub fn remove_below(&mut self, seq: u64) {
        if !self.ranges.is_empty() {
            self.remove_below_held(seq);
        }
    }

    fn remove_below_held(&mut self, seq: u64) {
        let mut k = 0;
        while k < self.ranges.len() && self.ranges[k].1 <= seq {
            self.total -= self.ranges[k].1 - self.ranges[k].0;
            k += 1;
        }
        if k > 0 {
            self.ranges.drain(..k);
        }
        if let Some(first) = self.ranges.first_mut() {
            if first.0 < seq {
                self.total -= seq - first.0;
                first.0 = seq;
            }
        }
    }

    pub fn clear(&mut self) {
        self.ranges.clear();
        self.total = 0;
    }
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }
    /// Bytes covered.
    pub fn total(&self) -> u64 {
        self.total
    }
    /// End of the highest range.
    pub fn highest(&self) -> Option<u64> {
        self.ranges.last().map(|r| r.1)
    }
    pub fn first(&self) -> Option<(u64, u64)> {
        self.ranges.first().copied()
    }
    pub fn ranges(&self) -> &[(u64, u64)] {
        &self.ranges
    }
    /// Bytes covered inside [a, b).
    pub fn covered_in(&self, a: u64, b: u64) -> u64 {
        if a >= b {
            return 0;
        }
        let mut sum = 0;
        let i = self.ranges.partition_point(|r| r.1 <= a);
        for r in &self.ranges[i..] {
            if r.0 >= b {
                break;
            }
            sum += r.1.min(b) - r.0.max(a);
        }
        sum
    }
    /// The first byte at or after `seq` that is not covered, and where the uncovered run ends
    /// (the start of the next range, or u64::MAX).
    pub fn next_gap(&self, seq: u64) -> (u64, u64) {
        let i = self.ranges.partition_point(|r| r.1 <= seq);
        match self.ranges.get(i) {
            Some(r) if r.0 <= seq => {
                let s = r.1;
                (s, self.ranges.get(i + 1).map_or(u64::MAX, |n| n.0))
            }
            Some(r) => (seq, r.0),
            None => (seq, u64::MAX),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insert_merges_and_counts() {
        let mut s = RangeSet::new();
        s.insert(10, 20);
        s.insert(30, 40);
        assert_eq!(s.total(), 20);
        assert_eq!(s.insert(20, 30), (10, 40));
        assert_eq!(s.ranges(), &[(10, 40)]);
        assert_eq!(s.total(), 30);
        s.insert(5, 12);
        assert_eq!(s.ranges(), &[(5, 40)]);
        s.insert(50, 60);
        s.remove_below(35);
        assert_eq!(s.ranges(), &[(35, 40), (50, 60)]);
        assert_eq!(s.total(), 15);
        assert_eq!(s.covered_in(38, 55), 2 + 5);
        assert_eq!(s.next_gap(36), (40, 50));
        assert_eq!(s.next_gap(45), (45, 50));
        assert_eq!(s.next_gap(70), (70, u64::MAX));
    }

    #[test]
    fn remove_splits_and_trims() {
        let mut s = RangeSet::new();
        s.insert(10, 50);
        s.insert(60, 80);
        s.remove(20, 30);
        assert_eq!(s.ranges(), &[(10, 20), (30, 50), (60, 80)]);
        s.remove(45, 65);
        assert_eq!(s.ranges(), &[(10, 20), (30, 45), (65, 80)]);
        assert_eq!(s.total(), 10 + 15 + 15);
        s.remove(0, 100);
        assert!(s.is_empty() && s.total() == 0);
    }
}
