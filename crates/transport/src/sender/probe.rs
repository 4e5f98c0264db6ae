//! The tail loss probe (RFC 8985 section 7, scheduled as Linux's `tcp_schedule_loss_probe`):
//! when it is due, and which segment it sends. RACK's time rule on the ACK after a probe is
//! applied where the sender decides to start recovery (`fastretrans_alert`).

use fctlab_engine::Nanos;

/// Extra delay of a loss probe with more than one segment in flight (Linux's
/// `TCP_TIMEOUT_MIN_US`, include/net/tcp.h).
pub(super) const PROBE_SLACK: Nanos = Nanos::from_millis(2);

/// How long after now the probe is due: 2 SRTT, plus 2 ms, or plus `min_rto` with one segment
/// in flight; never after the RTO (`rto_left`, if it runs).
#[inline]
pub(super) fn timeout(srtt: Nanos, one_segment: bool, min_rto: Nanos, rto_left: Option<Nanos>) -> Nanos {
    let t = srtt.mul(2) + if one_segment { min_rto } else { PROBE_SLACK };
    rto_left.map_or(t, |r| t.min(r))
}

/// The probe's segment: a new one if one may be sent (none sent beyond snd_nxt, data left,
/// within the receiver's window), else the last segment again.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(super) enum Probe {
    New { seq: u64, len: u64 },
    Last { seq: u64, len: u64 },
}

/// Which segment the probe sends, for a flow of `size` bytes with `rwnd` and `mss`.
pub(super) fn segment(snd_una: u64, snd_nxt: u64, snd_max: u64, size: u64, rwnd: u64, mss: u64) -> Probe {
    let len = (size - snd_nxt).min(mss);
    if len > 0 && snd_nxt == snd_max && snd_nxt + len <= snd_una + rwnd {
        Probe::New { seq: snd_nxt, len }
    } else {
        let seq = ((snd_max - 1) / mss * mss).max(snd_una);
        Probe::Last { seq, len: snd_max - seq }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1000;

    #[test]
    fn the_probe_is_due_two_srtt_later_plus_slack_and_not_after_the_rto() {
        let (srtt, min_rto) = (Nanos::from_micros(100), Nanos::from_millis(10));
        assert_eq!(timeout(srtt, false, min_rto, None), Nanos::from_micros(2200));
        assert_eq!(timeout(srtt, true, min_rto, None), Nanos::from_micros(10_200));
        assert_eq!(timeout(srtt, true, min_rto, Some(Nanos::from_millis(5))), Nanos::from_millis(5));
    }

    #[test]
    fn the_probe_sends_new_data_if_it_may_else_the_last_segment_again() {
        // 10 segments out of a 20-segment flow: the 11th.
        assert_eq!(segment(0, 10 * MSS, 10 * MSS, 20 * MSS, 100 * MSS, MSS), Probe::New { seq: 10 * MSS, len: MSS });
        // Everything sent: the last segment (a short one) again.
        assert_eq!(segment(0, 9500, 9500, 9500, 100 * MSS, MSS), Probe::Last { seq: 9000, len: 500 });
        // The receiver's window is full: the last segment again.
        assert_eq!(segment(0, 10 * MSS, 10 * MSS, 20 * MSS, 10 * MSS, MSS), Probe::Last { seq: 9 * MSS, len: MSS });
        // After a timeout (snd_nxt behind snd_max): the last segment sent, never below snd_una.
        assert_eq!(
            segment(5 * MSS, 6 * MSS, 10 * MSS, 20 * MSS, 100 * MSS, MSS),
            Probe::Last { seq: 9 * MSS, len: MSS }
        );
    }
}
