//! ns-2.35's TCP arithmetic (the `ns2` profile's modes): `Agent/TCP`'s window in segments
//! (`opencwnd`, `slowdown`), `Agent/TCP/Newreno`'s partial window deflation, and
//! `Agent/TCP/Sack1`'s recovery state. The sender applies them where ns-2 calls them.

/// `TcpAgent::opencwnd` (tcp.cc:1130-1150, `wnd_option_ 1`, `max_ssthresh_ 0`): +1 in slow
/// start (cwnd_ < ssthresh_), else `increase / cwnd_` (`increase_num_`: 1, or ATCP's weight).
#[inline]
pub(super) fn opencwnd(cwnd: f64, ssthresh_segments: f64, increase: f64) -> f64 {
    if cwnd < ssthresh_segments {
        cwnd + 1.0
    } else {
        cwnd + increase / cwnd
    }
}

/// `TcpAgent::slowdown` with `precisionReduce_` (tcp.cc:1252-1350): halfwin = `windowd()` / 2 =
/// min(cwnd_, window_) / 2 as a double; ssthresh_ = int(halfwin), at least 2; cwnd_ = halfwin
/// (at least 1) with `CLOSE_CWND_HALF`, 1 with `CLOSE_CWND_RESTART`. Returns (ssthresh in
/// segments, cwnd).
pub(super) fn slowdown(cwnd: f64, window: f64, cwnd_half: bool) -> (u64, f64) {
    let halfwin = cwnd.min(window) / 2.0;
    ((halfwin as u64).max(2), if cwnd_half { halfwin.max(1.0) } else { 1.0 })
}

/// `NewRenoTcpAgent::partialnewack` with `partial_window_deflation_ 1` (tcp-newreno.cc:62-81):
/// a partial ACK of `deflate` packets with `dupwnd` (`dupwnd_`, the duplicate ACKs counted)
/// lowers dupwnd by deflate - 1 if dupwnd > deflate; else the window shrinks by deflate - dupwnd
/// segments (the window kept at least one) and dupwnd becomes 1. Returns (dupwnd, segments the
/// window shrinks by, if it does).
pub(super) fn partial_window_deflation(dupwnd: u32, deflate: u32) -> (u32, Option<u64>) {
    if dupwnd > deflate {
        (dupwnd - (deflate - 1), None)
    } else {
        (1, Some((deflate - dupwnd) as u64))
    }
}

/// ns-2.35's `Sack1TcpAgent` state (`sack_recovery = "ns2"`).
#[derive(Debug, Default)]
pub(super) struct Sack1 {
    /// `pipe_` in fast recovery, in packets.
    pub pipe: i64,
    /// Holes below this were retransmitted in this recovery (`ScoreBoardRQ`'s `h_seqno_`).
    pub next_retx: u64,
    /// Duplicate ACKs are ignored from a timeout until new data is acknowledged (`timeout_`).
    pub after_timeout: bool,
}

impl Sack1 {
    /// The scoreboard's pointer and the timeout state start again (a new ACK outside recovery,
    /// or the end of one).
    pub fn reset(&mut self) {
        self.next_retx = 0;
        self.after_timeout = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_opens_by_one_in_slow_start_and_by_increase_over_cwnd_after() {
        assert_eq!(opencwnd(2.0, 20.0, 1.0), 3.0);
        assert_eq!(opencwnd(20.0, 20.0, 1.0), 20.05);
        assert_eq!(opencwnd(10.0, 4.0, 2.5), 10.25); // ATCP's weight as increase_num_
    }

    #[test]
    fn slowdown_halves_min_of_cwnd_and_window_exactly_with_floors() {
        assert_eq!(slowdown(15.0, 20.0, true), (7, 7.5));
        assert_eq!(slowdown(30.0, 20.0, true), (10, 10.0), "the receiver's window caps it");
        assert_eq!(slowdown(3.0, 20.0, true), (2, 1.5), "ssthresh at least two, cwnd exact");
        assert_eq!(slowdown(1.0, 20.0, true), (2, 1.0));
        assert_eq!(slowdown(15.0, 20.0, false), (7, 1.0), "a timeout restarts at one segment");
    }

    #[test]
    fn a_partial_ack_deflates_the_duplicate_acks_first_then_the_window() {
        assert_eq!(partial_window_deflation(5, 2), (4, None));
        assert_eq!(partial_window_deflation(2, 2), (1, Some(0)));
        assert_eq!(partial_window_deflation(1, 4), (1, Some(3)));
    }

    #[test]
    fn sack1_starts_again_after_a_new_ack() {
        let mut s = Sack1 { pipe: 3, next_retx: 5000, after_timeout: true };
        s.reset();
        assert_eq!((s.pipe, s.next_retx, s.after_timeout), (3, 0, false));
    }
}
