//! Round-trip time estimation and the retransmission timeout (RFC 6298).

use crate::config::TcpConfig;
use fctlab_engine::Nanos;

#[derive(Clone, Debug)]
pub struct RttEstimator {
    srtt_ns: u64,
    rttvar_ns: u64,
    has_sample: bool,
    min_rto: Nanos,
    max_rto: Nanos,
    granularity: Nanos,
    rto: Nanos,
    /// Smallest RTT seen (base RTT estimate).
    pub min_rtt: Nanos,
}

impl RttEstimator {
    pub fn new(cfg: &TcpConfig) -> Self {
        RttEstimator {
            srtt_ns: 0,
            rttvar_ns: 0,
            has_sample: false,
            min_rto: cfg.min_rto,
            max_rto: cfg.max_rto,
            granularity: cfg.rto_granularity,
            rto: cfg.initial_rto.max(cfg.min_rto),
            min_rtt: Nanos::MAX,
        }
    }

    /// Feeds one RTT measurement (RFC 6298 section 2, with alpha = 1/8 and beta = 1/4).
    pub fn sample(&mut self, r: Nanos) {
        let r = r.0;
        if !self.has_sample {
            self.srtt_ns = r;
            self.rttvar_ns = r / 2;
            self.has_sample = true;
        } else {
            let diff = self.srtt_ns.abs_diff(r);
            self.rttvar_ns = (3 * self.rttvar_ns + diff) / 4;
            self.srtt_ns = (7 * self.srtt_ns + r) / 8;
        }
        self.min_rtt = self.min_rtt.min(Nanos(r));
        let mut rto = self.srtt_ns + 4 * self.rttvar_ns;
        if self.granularity.0 > 0 {
            // A coarse timer counts whole ticks: round up (ns-2's tcpTick_).
            rto = rto.div_ceil(self.granularity.0) * self.granularity.0;
        }
        self.rto = Nanos(rto).max(self.min_rto).min(self.max_rto);
    }

    /// The current timeout before backoff.
    pub fn rto(&self) -> Nanos {
        self.rto
    }
    /// The timeout after `shift` consecutive expirations (doubling, capped at max_rto).
    pub fn backed_off(&self, shift: u32) -> Nanos {
        Nanos(self.rto.0.saturating_mul(1u64 << shift.min(20))).min(self.max_rto)
    }
    pub fn srtt(&self) -> Option<Nanos> {
        self.has_sample.then_some(Nanos(self.srtt_ns))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc6298_first_and_second_sample() {
        let cfg = TcpConfig { min_rto: Nanos::from_millis(1), ..Default::default() };
        let mut e = RttEstimator::new(&cfg);
        assert_eq!(e.rto(), Nanos::from_secs(1));
        e.sample(Nanos::from_millis(10));
        // srtt 10, rttvar 5 -> rto 30 ms
        assert_eq!(e.rto(), Nanos::from_millis(30));
        e.sample(Nanos::from_millis(20));
        // rttvar = 3/4*5 + 1/4*10 = 6.25, srtt = 11.25 -> 36.25 ms
        assert_eq!(e.rto(), Nanos(36_250_000));
        assert_eq!(e.backed_off(2), Nanos(145_000_000));
    }

    #[test]
    fn coarse_timer_rounds_up_to_whole_ticks() {
        let cfg = TcpConfig { min_rto: Nanos::from_millis(1), rto_granularity: Nanos::from_millis(10), ..Default::default() };
        let mut e = RttEstimator::new(&cfg);
        e.sample(Nanos::from_millis(10)); // 30 ms: already whole ticks
        assert_eq!(e.rto(), Nanos::from_millis(30));
        e.sample(Nanos::from_millis(20)); // 36.25 ms -> 40 ms
        assert_eq!(e.rto(), Nanos::from_millis(40));
    }

    #[test]
    fn min_rto_floor() {
        let cfg = TcpConfig { min_rto: Nanos::from_millis(10), ..Default::default() };
        let mut e = RttEstimator::new(&cfg);
        e.sample(Nanos::from_micros(100));
        assert_eq!(e.rto(), Nanos::from_millis(10));
    }
}
