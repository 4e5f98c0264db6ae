//! The ECN reduction round (Linux's CWR state) with proportional rate reduction (RFC 6937 as
//! Linux's `tcp_cwnd_reduction` computes it, in bytes): after an echo the window falls
//! towards the new ssthresh by about ssthresh / prior_cwnd bytes sent per byte delivered, and
//! the round ends once the data outstanding at the echo is acknowledged.

/// An ECN reduction in progress, with PRR's counters.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(super) struct Cwr {
    /// snd_nxt at the echo: CWR ends once snd_una is beyond it.
    pub high_seq: u64,
    /// The window at the echo.
    prior_cwnd: u64,
    /// Bytes delivered (acknowledged or SACKed) since the echo (`prr_delivered`).
    delivered: u64,
    /// Bytes sent since the echo (`prr_out`).
    out: u64,
}

impl Cwr {
    /// The round an echo starts with snd_nxt at `high_seq` and the window at `prior_cwnd`.
    pub fn new(high_seq: u64, prior_cwnd: u64) -> Self {
        Cwr { high_seq, prior_cwnd, delivered: 0, out: 0 }
    }

    /// `len` bytes went out during the round.
    #[inline]
    pub fn sent(&mut self, len: u64) {
        self.out += len;
    }

    /// The round is over once `snd_una` is beyond the data outstanding at the echo.
    #[inline]
    pub fn is_over(&self, snd_una: u64) -> bool {
        snd_una > self.high_seq
    }

    /// One ACK's step: `delivered` more bytes delivered, `pipe` in flight, the cumulative ACK
    /// advanced or not. Returns the window PRR allows (pipe + what may be sent now, at least
    /// one segment), or None when the ACK delivered nothing.
    pub fn step(&mut self, delivered: u64, ack_advanced: bool, pipe: u64, ssthresh: u64, mss: u64) -> Option<u64> {
        if delivered == 0 {
            return None;
        }
        self.delivered += delivered;
        let (mss, pipe, ssthresh) = (mss as i128, pipe as i128, ssthresh as i128);
        let (done, out, prior) = (self.delivered as i128, self.out as i128, self.prior_cwnd as i128);
        let mut sndcnt = if pipe > ssthresh {
            // Proportional: ceil(ssthresh x delivered / prior_cwnd) - out.
            (ssthresh * done + prior - 1) / prior - out
        } else {
            // Slow-start reduction bound back up to ssthresh.
            let s = (done - out).max(delivered as i128) + if ack_advanced { mss } else { 0 };
            s.min(ssthresh - pipe)
        };
        if out == 0 {
            sndcnt = sndcnt.max(mss); // the first ACK lets one segment go
        }
        Some((pipe + sndcnt).max(mss) as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1000;

    #[test]
    fn above_ssthresh_one_segment_goes_out_per_two_delivered_after_a_halving() {
        // 20 segments in flight, ssthresh 10: PRR sends ssthresh / prior = 1/2 per delivery.
        let mut c = Cwr::new(20 * MSS, 20 * MSS);
        // The first ACK: ceil(10 x 1 / 20) = 1 segment, and at least one since none went out.
        assert_eq!(c.step(MSS, true, 19 * MSS, 10 * MSS, MSS), Some(20 * MSS));
        c.sent(MSS);
        // Two delivered in all: ceil(10 x 2 / 20) - 1 sent = 0.
        assert_eq!(c.step(MSS, true, 19 * MSS, 10 * MSS, MSS), Some(19 * MSS));
        // Four delivered in all: ceil(10 x 4 / 20) - 1 = 1 more.
        assert_eq!(c.step(2 * MSS, true, 17 * MSS, 10 * MSS, MSS), Some(18 * MSS));
    }

    #[test]
    fn at_or_below_ssthresh_the_window_grows_back_by_what_was_delivered() {
        let mut c = Cwr::new(20 * MSS, 20 * MSS);
        c.sent(3 * MSS);
        // pipe 6 < ssthresh 10: delivered 3 segments (more than sent since) plus one for the
        // advancing ACK, within ssthresh - pipe = 4.
        assert_eq!(c.step(3 * MSS, true, 6 * MSS, 10 * MSS, MSS), Some(10 * MSS));
        // Without the ACK advancing (SACK only): 1 segment of headroom, as delivered.
        let mut c = Cwr::new(20 * MSS, 20 * MSS);
        c.sent(5 * MSS);
        assert_eq!(c.step(MSS, false, 9 * MSS, 10 * MSS, MSS), Some(10 * MSS));
    }

    #[test]
    fn nothing_delivered_changes_nothing_and_the_round_ends_past_high_seq() {
        let mut c = Cwr::new(20 * MSS, 20 * MSS);
        assert_eq!(c.step(0, false, 19 * MSS, 10 * MSS, MSS), None);
        assert!(!c.is_over(20 * MSS) && c.is_over(20 * MSS + 1));
        // The window never falls below one segment.
        assert_eq!(c.step(MSS, false, 0, MSS, MSS), Some(MSS));
    }
}
