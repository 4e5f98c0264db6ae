//! Loss recovery's state and rules (RFC 6675 with RFC 6582's recovery point): the SACK
//! scoreboard, the duplicate ACKs, the retransmissions of this recovery, and the pipe and
//! next-hole rules over them. The sender decides when recovery starts and ends and what the
//! window is; this part keeps what is known about the data outstanding.

use crate::scoreboard::RangeSet;
use fctlab_net::SackBlock;
use std::collections::VecDeque;

/// Retransmissions remembered for lost-retransmission detection, at most.
const REXMITS_KEPT: usize = 4096;

#[derive(Debug)]
pub(super) struct Recovery {
    /// In fast recovery.
    pub active: bool,
    /// snd_max when the last recovery (or ECN reduction, with ns-2's shared `recover_`, or
    /// timeout) started: a new recovery needs losses above it (RFC 6582).
    pub recover: u64,
    /// Duplicate ACKs counted (as the recovery in use counts them).
    pub dupacks: u32,
    /// Bytes above the cumulative ACK that the receiver SACKed.
    pub sacked: RangeSet,
    /// Bytes retransmitted in this recovery, not yet SACKed or acknowledged.
    pub retx: RangeSet,
    /// Bytes below this count as lost in recovery even without SACK evidence.
    pub lost_hint: u64,
    /// Retransmissions of this recovery in sending order: (seq, end, snd_nxt when sent).
    pub rexmits: VecDeque<(u64, u64, u64)>,
    /// RACK decides what is lost (`lost_hint` alone): SACKed data above a hole no longer marks
    /// it lost by itself.
    pub rack: bool,
}

impl Recovery {
    pub fn new() -> Self {
        Recovery {
            active: false,
            recover: 0,
            dupacks: 0,
            sacked: RangeSet::new(),
            retx: RangeSet::new(),
            lost_hint: 0,
            rexmits: VecDeque::new(),
            rack: false,
        }
    }

    /// An ACK's SACK blocks, above its cumulative ACK `ack` and below `snd_max`, into the
    /// scoreboard (tcp_sacktag_write_queue); a SACKed retransmission is no longer in flight.
    #[inline]
    pub fn tag(&mut self, blocks: &[SackBlock], ack: u64, snd_max: u64) {
        for b in blocks {
            let (s, e) = (b.start.max(ack), b.end.min(snd_max));
            if s < e {
                self.sacked.insert(s, e);
                self.retx.remove(s, e);
            }
        }
    }

    /// Everything below `ack` is acknowledged.
    #[inline]
    pub fn acked_to(&mut self, ack: u64) {
        self.sacked.remove_below(ack);
        self.retx.remove_below(ack);
    }

    /// Recovery starts: losses up to `snd_max` belong to it, and the first unacknowledged
    /// segment counts as lost (NewReno's rule, all there is without SACK).
    pub fn start(&mut self, snd_una: u64, snd_max: u64, mss: u64) {
        self.active = true;
        self.recover = snd_max;
        self.lost_hint = snd_una + mss;
        self.forget_retransmissions();
    }

    /// No retransmission of this recovery counts as sent any more.
    #[inline]
    pub fn forget_retransmissions(&mut self) {
        self.retx.clear();
        self.rexmits.clear();
    }

    /// Every byte up to `snd_max` not SACKed is lost, retransmissions included.
    pub fn all_lost(&mut self, snd_max: u64) {
        self.forget_retransmissions();
        self.lost_hint = snd_max;
    }

    /// Upper end of the region whose unSACKed bytes count as lost.
    #[inline]
    pub fn lost_limit(&self, snd_max: u64) -> u64 {
        if self.rack {
            return self.lost_hint.min(snd_max);
        }
        self.sacked.highest().unwrap_or(0).max(self.lost_hint).min(snd_max)
    }

    /// RFC 6675's pipe: bytes outstanding (`snd_una`..`snd_nxt`) minus those SACKed, minus, in
    /// recovery, the holes judged lost and not retransmitted. Without SACK, in recovery, each
    /// duplicate ACK stands for one segment that has left the network (RFC 6582's window
    /// inflation). `sack1`: ns-2's Sack1, whose window outside recovery counts from the
    /// cumulative ACK (tcp-sack1.cc:434).
    #[inline(always)]
    pub fn pipe(&self, snd_una: u64, snd_nxt: u64, snd_max: u64, sack: bool, sack1: bool, mss: u64) -> u64 {
        let left = match (sack, self.active) {
            (true, false) if sack1 => 0,
            (true, _) => self.sacked.covered_in(snd_una, snd_nxt),
            (false, true) => self.dupacks as u64 * mss,
            (false, false) => 0,
        };
        let outstanding = (snd_nxt - snd_una).saturating_sub(left);
        if !self.active {
            return outstanding;
        }
        let (from, to) = (snd_una, self.lost_limit(snd_max));
        let lost =
            if to > from { (to - from) - self.sacked.covered_in(from, to) - self.retx.covered_in(from, to) } else { 0 };
        outstanding.saturating_sub(lost)
    }

    /// The next lost hole to retransmit, at most `mss` long: (seq, len), neither SACKed nor
    /// retransmitted yet.
    #[inline(always)]
    pub fn next_hole(&self, snd_una: u64, snd_max: u64, mss: u64) -> Option<(u64, u64)> {
        let limit = self.lost_limit(snd_max);
        let mut s = snd_una;
        while s < limit {
            let (g, gap_end) = self.sacked.next_gap(s);
            if g >= limit {
                return None;
            }
            let (r, r_end) = self.retx.next_gap(g);
            if r != g {
                s = r; // g lies in a retransmitted range; continue after it
                continue;
            }
            let end = gap_end.min(r_end).min(limit).min(g + mss);
            return Some((g, end - g));
        }
        None
    }

    /// `seq..seq + len` was retransmitted while snd_nxt was `snd_nxt`; with SACK it is watched
    /// for a second loss.
    #[inline]
    pub fn retransmitted(&mut self, seq: u64, len: u64, snd_nxt: u64, sack: bool) {
        self.retx.insert(seq, seq + len);
        if sack && self.rexmits.len() < REXMITS_KEPT {
            self.rexmits.push_back((seq, seq + len, snd_nxt));
        }
    }

    /// A retransmission is lost when data first sent after it has been SACKed `beyond` bytes
    /// further while it is still missing (the rule Linux applies to retransmissions): its hole
    /// becomes eligible again instead of waiting for the timeout.
    #[inline]
    pub fn detect_lost_retransmissions(&mut self, beyond: u64) {
        let highest = self.sacked.highest().unwrap_or(0);
        while let Some(&(seq, end, mark)) = self.rexmits.front() {
            if self.retx.covered_in(seq, end) == 0 {
                self.rexmits.pop_front(); // acknowledged or SACKed meanwhile
            } else if highest >= mark + beyond {
                self.rexmits.pop_front();
                self.retx.remove(seq, end);
            } else {
                break;
            }
        }
    }

    /// A timeout: the scoreboard is discarded and losses up to `snd_max` belong to it.
    pub fn timed_out(&mut self, snd_max: u64) {
        self.active = false;
        self.recover = snd_max;
        self.sacked.clear();
        self.forget_retransmissions();
        self.dupacks = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1000;

    fn block(a: u64, b: u64) -> SackBlock {
        SackBlock { start: a * MSS, end: b * MSS }
    }

    /// Ten segments out, segments 0 and 2 lost, 1 and 3..10 SACKed.
    fn two_holes() -> Recovery {
        let mut r = Recovery::new();
        r.tag(&[block(1, 2), block(3, 10)], 0, 10 * MSS);
        r
    }

    #[test]
    fn the_scoreboard_keeps_sacked_bytes_within_the_window() {
        let mut r = Recovery::new();
        r.tag(&[block(2, 4), block(0, 1), block(8, 30)], MSS / 2, 10 * MSS);
        assert_eq!(r.sacked.ranges(), vec![(MSS / 2, MSS), (2 * MSS, 4 * MSS), (8 * MSS, 10 * MSS)]);
        r.acked_to(3 * MSS);
        assert_eq!(r.sacked.ranges(), vec![(3 * MSS, 4 * MSS), (8 * MSS, 10 * MSS)]);
    }

    #[test]
    fn pipe_counts_outstanding_minus_sacked_minus_lost_holes() {
        let mut r = two_holes();
        // Outside recovery: 10 out, 8 SACKed.
        assert_eq!(r.pipe(0, 10 * MSS, 10 * MSS, true, false, MSS), 2 * MSS);
        // ns-2's Sack1 counts from the cumulative ACK outside recovery.
        assert_eq!(r.pipe(0, 10 * MSS, 10 * MSS, true, true, MSS), 10 * MSS);
        // In recovery both holes lie below the highest SACK: lost, so nothing is in flight.
        r.start(0, 10 * MSS, MSS);
        assert_eq!(r.pipe(0, 10 * MSS, 10 * MSS, true, false, MSS), 0);
        // A retransmission of hole 0 is in flight again.
        r.retransmitted(0, MSS, 10 * MSS, true);
        assert_eq!(r.pipe(0, 10 * MSS, 10 * MSS, true, false, MSS), MSS);
    }

    #[test]
    fn without_sack_each_duplicate_ack_takes_a_segment_out_of_the_pipe() {
        let mut r = Recovery::new();
        r.start(0, 10 * MSS, MSS);
        r.dupacks = 3;
        // 10 out, 3 left the network, segment 0 lost and not resent.
        assert_eq!(r.pipe(0, 10 * MSS, 10 * MSS, false, false, MSS), 6 * MSS);
    }

    #[test]
    fn holes_go_out_in_order_each_once() {
        let mut r = two_holes();
        r.start(0, 10 * MSS, MSS);
        assert_eq!(r.next_hole(0, 10 * MSS, MSS), Some((0, MSS)));
        r.retransmitted(0, MSS, 10 * MSS, true);
        assert_eq!(r.next_hole(0, 10 * MSS, MSS), Some((2 * MSS, MSS)));
        r.retransmitted(2 * MSS, MSS, 10 * MSS, true);
        assert_eq!(r.next_hole(0, 10 * MSS, MSS), None);
        // Above the highest SACK nothing is judged lost.
        let mut r = Recovery::new();
        r.tag(&[block(1, 2)], 0, 10 * MSS);
        r.start(0, 10 * MSS, MSS);
        r.retransmitted(0, MSS, 10 * MSS, true);
        assert_eq!(r.next_hole(0, 10 * MSS, MSS), None);
    }

    #[test]
    fn a_retransmission_is_lost_once_later_data_is_sacked_far_enough_beyond() {
        let mut r = Recovery::new();
        r.tag(&[block(1, 2)], 0, 10 * MSS);
        r.start(0, 10 * MSS, MSS);
        r.retransmitted(0, MSS, 10 * MSS, true); // sent when snd_nxt was segment 10
        r.tag(&[block(10, 12)], 0, 13 * MSS);
        r.detect_lost_retransmissions(3 * MSS);
        assert_eq!(r.next_hole(0, 13 * MSS, MSS), Some((2 * MSS, MSS)), "not yet: 2 segments beyond");
        r.tag(&[block(12, 13)], 0, 13 * MSS);
        r.detect_lost_retransmissions(3 * MSS);
        assert_eq!(r.next_hole(0, 13 * MSS, MSS), Some((0, MSS)), "3 segments beyond: lost again");
        assert!(r.rexmits.is_empty());
    }

    #[test]
    fn a_timeout_discards_the_scoreboard() {
        let mut r = two_holes();
        r.start(0, 10 * MSS, MSS);
        r.dupacks = 4;
        r.timed_out(12 * MSS);
        assert!(!r.active && r.sacked.total() == 0 && r.dupacks == 0);
        assert_eq!(r.recover, 12 * MSS);
    }
}
