//! ns-2.35's window (`window_model = "ns2"`): `Agent/TCP`'s `cwnd_`, a double in segments
//! (`opencwnd`, `slowdown`, `window()`), and `Agent/TCP/Newreno`'s partial window deflation.
//! The arithmetic is in plain functions; the sender's methods below apply it to its window.

use super::super::TcpSender;

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

impl TcpSender {
    /// Sets ns-2's `cwnd_` (segments) and the byte window that follows it.
    pub(in crate::sender) fn set_cwnd_segments(&mut self, c: f64) {
        self.ns2.cwnd = c;
        self.st.cwnd_bytes = ((c * self.st.mss_bytes as f64) as u64).max(1);
    }

    /// The window in whole segments: ns-2's `int(cwnd_)` with `window_model = "ns2"`.
    #[inline]
    pub(in crate::sender) fn cwnd_segments(&self) -> u64 {
        if self.ns2.mode.window {
            self.ns2.cwnd as u64
        } else {
            self.st.cwnd_bytes / self.st.mss_bytes
        }
    }

    /// `TcpAgent::opencwnd` (tcp.cc:1130-1150, `wnd_option_ 1`, `max_ssthresh_ 0`): +1 in
    /// slow start (cwnd_ < ssthresh_), else `increase_num_ / cwnd_`, ATCP's weight being
    /// `increase_num_`. cwnd_ is not capped (`window()` applies `window_`).
    pub(in crate::sender) fn ns2_opencwnd(&mut self) {
        let ssthresh = (self.st.ssthresh_bytes / self.st.mss_bytes) as f64;
        self.set_cwnd_segments(opencwnd(self.ns2.cwnd, ssthresh, self.cc.weight().unwrap_or(1.0)));
    }

    /// `TcpAgent::slowdown(CLOSE_SSTHRESH_HALF | CLOSE_CWND_HALF)` (loss, ECN) or
    /// `(CLOSE_SSTHRESH_HALF | CLOSE_CWND_RESTART)` (timeout, `wnd_restart_ 1`) with
    /// `precisionReduce_` (tcp.cc:1252-1350): halfwin = `windowd()` / 2 = min(cwnd_,
    /// window_) / 2 as a double, ssthresh_ = int(halfwin) (at least 2), cwnd_ = halfwin or 1
    /// (at least 1).
    pub(in crate::sender) fn ns2_slowdown(&mut self, cwnd_half: bool) {
        let mss = self.st.mss_bytes;
        let wnd = (self.cfg.rwnd_bytes / mss).max(1) as f64;
        let (ssthresh, cwnd) = slowdown(self.ns2.cwnd, wnd, cwnd_half);
        self.st.ssthresh_bytes = ssthresh * mss;
        self.set_cwnd_segments(cwnd);
    }

    /// ns-2's `slowdown(CLOSE_SSTHRESH_HALF | CLOSE_CWND_HALF)` with `precisionReduce_`
    /// (tcp.cc:1252): half of min(cwnd, rwnd), cwnd exact (at least one segment), ssthresh in
    /// whole segments (at least two).
    pub(in crate::sender) fn ns2_halve(&mut self) {
        if self.ns2.mode.window {
            self.ns2_slowdown(true);
            return;
        }
        let mss = self.st.mss_bytes;
        let half = self.st.cwnd_bytes.min(self.cfg.rwnd_bytes) / 2;
        self.st.ssthresh_bytes = (half / mss).max(2) * mss;
        self.st.cwnd_bytes = half.max(mss);
    }

    /// `NewRenoTcpAgent::partialnewack` with `partial_window_deflation_ 1`
    /// (tcp-newreno.cc:62-81): `deflate` packets acknowledged; if dupwnd_ (the duplicate
    /// ACK count here) exceeds it, dupwnd_ -= deflate - 1, else cwnd_ -= deflate - dupwnd_
    /// (at least one segment) and dupwnd_ = 1.
    pub(in crate::sender) fn ns2_partial_window_deflation(&mut self, acked: u64) {
        let mss = self.st.mss_bytes;
        let (dupacks, by) = partial_window_deflation(self.rec.dupacks, acked.div_ceil(mss) as u32);
        self.rec.dupacks = dupacks;
        if let Some(by) = by {
            if self.ns2.mode.window {
                self.set_cwnd_segments((self.ns2.cwnd - by as f64).max(1.0));
            } else {
                self.st.cwnd_bytes = self.st.cwnd_bytes.saturating_sub(by * mss).max(mss);
            }
        }
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
}
