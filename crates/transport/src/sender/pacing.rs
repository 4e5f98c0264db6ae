//! Pacing of rate-based algorithms (RCP, RACS): a segment leaves only once the previous one's
//! bytes have been sent at the granted rate, within a window of two rate x SRTT products.

use fctlab_engine::{BitsPerSec, Nanos};

/// When the last paced transmission left and its wire bytes.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct Pacer {
    pub at: Nanos,
    bytes: u64,
}

impl Pacer {
    /// When the next segment may leave at `rate`.
    #[inline]
    pub fn next_departure(&self, rate: BitsPerSec) -> Nanos {
        self.at + rate.tx_time(self.bytes)
    }

    /// A transmission of `bytes` on the wire left at `now`.
    #[inline]
    pub fn sent(&mut self, now: Nanos, bytes: u64) {
        self.at = now;
        self.bytes = bytes;
    }
}

/// A paced flow's window: two rate x SRTT products (none before the first sample), at least
/// two segments, so that a wrong rate cannot flood the network.
#[inline]
pub(super) fn window(rate: BitsPerSec, srtt: Option<Nanos>, mss: u64) -> u64 {
    let rtt = srtt.unwrap_or(Nanos::ZERO);
    let bdp = (rate.0 as u128 * rtt.as_nanos() as u128 / 4_000_000_000) as u64; // 2 x rate x RTT, bytes
    bdp.max(2 * mss)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_next_segment_waits_for_the_last_ones_bytes_at_the_rate() {
        let mut p = Pacer::default();
        assert_eq!(p.next_departure(BitsPerSec(1_000_000_000)), Nanos::ZERO);
        p.sent(Nanos::from_micros(5), 1500);
        assert_eq!(p.next_departure(BitsPerSec(1_000_000_000)), Nanos::from_micros(5) + Nanos::from_nanos(12_000));
        assert_eq!(p.next_departure(BitsPerSec(100_000_000)), Nanos::from_micros(5) + Nanos::from_nanos(120_000));
    }

    #[test]
    fn the_window_is_two_rate_rtt_products_and_at_least_two_segments() {
        // 1 Gbps x 100 us = 12,500 B; twice that.
        assert_eq!(window(BitsPerSec(1_000_000_000), Some(Nanos::from_micros(100)), 1460), 25_000);
        assert_eq!(window(BitsPerSec(1_000_000_000), None, 1460), 2920);
        assert_eq!(window(BitsPerSec(10_000_000), Some(Nanos::from_micros(100)), 1460), 2920);
    }
}
