//! Round-trip time estimation and the retransmission timeout (RFC 6298, or ns-2.35's
//! `TcpAgent` with `rto_model = "ns2"`).

use crate::config::{RtoModel, TcpConfig};
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
    /// Smallest RTT seen.
    min_rtt: Nanos,
    /// Every sample's RTT summed, and the number of samples (the flows table's mean RTT).
    sum_ns: u64,
    samples: u64,
    /// `rto_model = "ns2"`: ns-2's fixed-point estimator in ticks of `granularity`.
    ns2: bool,
    /// ns-2's `t_srtt_` (8 x SRTT in ticks; 0: the next sample initialises) and `t_rttvar_`
    /// (4 x RTTVAR in ticks).
    t_srtt: i64,
    t_rttvar: i64,
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
            sum_ns: 0,
            samples: 0,
            ns2: cfg.rto_model == RtoModel::Ns2,
            t_srtt: 0,
            t_rttvar: 0,
        }
    }

    /// `TcpAgent::rtt_update` (tcp/tcp.cc lines 576-620) without timestamps: the timed
    /// segment left at `sent` and is acknowledged at `now`. The RTT counts the tick
    /// boundaries crossed in between (`int((tao + fmod(sendtime, tcpTick_)) / tcpTick_)`, at
    /// least one; ns-2's random `boot_time_` offset is taken as 0), SRTT and RTTVAR are kept
    /// with 3 and 2 fraction bits (`T_SRTT_BITS`, `T_RTTVAR_BITS`), and `t_rtxcur_` =
    /// (SRTT + 4 RTTVAR) in whole ticks, rounded down (`rttvar_exp_ 2`).
    pub fn sample_ns2(&mut self, sent: Nanos, now: Nanos) {
        let tick = self.granularity.as_nanos().max(1);
        let t_rtt = ((now.as_nanos() / tick) as i64 - (sent.as_nanos() / tick) as i64).max(1);
        self.record(now.saturating_sub(sent));
        if self.t_srtt != 0 {
            let mut delta = t_rtt - (self.t_srtt >> 3);
            self.t_srtt += delta;
            if self.t_srtt <= 0 {
                self.t_srtt = 1;
            }
            delta = delta.abs() - (self.t_rttvar >> 2);
            self.t_rttvar += delta;
            if self.t_rttvar <= 0 {
                self.t_rttvar = 1;
            }
        } else {
            self.t_srtt = t_rtt << 3;
            self.t_rttvar = t_rtt << 1;
        }
        self.has_sample = true;
        self.srtt_ns = self.t_srtt as u64 * tick / 8;
        self.rttvar_ns = self.t_rttvar as u64 * tick / 4;
        let rtxcur = (((self.t_rttvar << 3) + self.t_srtt) >> 3) as u64 * tick;
        // rtt_timeout() with rfc2988_: minrto_ applies before the backoff.
        self.rto = Nanos::from_nanos(rtxcur).max(self.min_rto).min(self.max_rto);
    }

    /// `TcpAgent::rtt_backoff` (tcp/tcp.cc line 622) has doubled `t_backoff_` to
    /// 2^`shift`: beyond 8 the SRTT is cleared (`t_srtt_ = 0`, its value added to
    /// `t_rttvar_`), so that the next sample starts the estimate afresh. The current
    /// `t_rtxcur_` stays.
    pub fn backed_off_ns2(&mut self, shift: u32) {
        if self.ns2 && shift > 3 {
            self.t_rttvar += self.t_srtt >> 3;
            self.t_srtt = 0;
        }
    }

    /// Counts one measured RTT toward the minimum and the mean.
    #[inline]
    fn record(&mut self, r: Nanos) {
        self.min_rtt = self.min_rtt.min(r);
        self.sum_ns += r.as_nanos();
        self.samples += 1;
    }

    /// The smallest and the mean of the RTTs measured so far (None before the first).
    pub fn measured(&self) -> Option<(Nanos, Nanos)> {
        (self.samples > 0).then(|| (self.min_rtt, Nanos::from_nanos(self.sum_ns / self.samples)))
    }

    /// `rto_model = "ns2"`.
    pub fn is_ns2(&self) -> bool {
        self.ns2
    }

    /// Feeds one RTT measurement (RFC 6298 section 2, with alpha = 1/8 and beta = 1/4).
    pub fn sample(&mut self, r: Nanos) {
        let r = r.as_nanos();
        if !self.has_sample {
            self.srtt_ns = r;
            self.rttvar_ns = r / 2;
            self.has_sample = true;
        } else {
            let diff = self.srtt_ns.abs_diff(r);
            self.rttvar_ns = (3 * self.rttvar_ns + diff) / 4;
            self.srtt_ns = (7 * self.srtt_ns + r) / 8;
        }
        self.record(Nanos::from_nanos(r));
        let mut rto = self.srtt_ns + 4 * self.rttvar_ns;
        let tick = self.granularity.as_nanos();
        if tick > 0 {
            // A coarse timer counts whole ticks: round up (ns-2's tcpTick_).
            rto = rto.div_ceil(tick) * tick;
        }
        self.rto = Nanos::from_nanos(rto).max(self.min_rto).min(self.max_rto);
    }

    /// The current timeout before backoff.
    pub fn rto(&self) -> Nanos {
        self.rto
    }
    /// The timeout after `shift` consecutive expirations (doubling, capped at max_rto).
    pub fn backed_off(&self, shift: u32) -> Nanos {
        let t = self.rto.mul(1u64 << shift.min(20)).min(self.max_rto);
        if self.ns2 {
            // rtt_timeout() (tcp/tcp.cc line 540): never below two ticks.
            t.max(self.granularity.mul(2))
        } else {
            t
        }
    }
    pub fn srtt(&self) -> Option<Nanos> {
        self.has_sample.then_some(Nanos::from_nanos(self.srtt_ns))
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
        assert_eq!(e.rto(), Nanos::from_nanos(36_250_000));
        assert_eq!(e.backed_off(2), Nanos::from_nanos(145_000_000));
    }

    #[test]
    fn coarse_timer_rounds_up_to_whole_ticks() {
        let cfg =
            TcpConfig { min_rto: Nanos::from_millis(1), rto_granularity: Nanos::from_millis(10), ..Default::default() };
        let mut e = RttEstimator::new(&cfg);
        e.sample(Nanos::from_millis(10)); // 30 ms: already whole ticks
        assert_eq!(e.rto(), Nanos::from_millis(30));
        e.sample(Nanos::from_millis(20)); // 36.25 ms -> 40 ms
        assert_eq!(e.rto(), Nanos::from_millis(40));
    }

    #[test]
    fn ns2_rto_in_whole_ticks_with_fixed_point_srtt() {
        // ns-2.35 tcpTick_ 0.01, minrto_ 0.2: the RTT counts the tick boundaries crossed.
        let cfg = TcpConfig {
            min_rto: Nanos::from_millis(1),
            rto_granularity: Nanos::from_millis(10),
            rto_model: RtoModel::Ns2,
            ..Default::default()
        };
        let mut e = RttEstimator::new(&cfg);
        // Sent at 5 ms, acknowledged at 38 ms: boundaries 10, 20, 30 -> 3 ticks.
        e.sample_ns2(Nanos::from_millis(5), Nanos::from_millis(38));
        // t_srtt_ = 24, t_rttvar_ = 6 -> (48 + 24) >> 3 = 9 ticks.
        assert_eq!(e.rto(), Nanos::from_millis(90));
        // 1 tick (sent 41 ms, acked 59 ms): delta = -2, t_srtt_ 22, |d| - 1 = 1, t_rttvar_ 7
        // -> (56 + 22) >> 3 = 9 ticks (rounded down from 9.75).
        e.sample_ns2(Nanos::from_millis(41), Nanos::from_millis(59));
        assert_eq!(e.rto(), Nanos::from_millis(90));
        assert_eq!(e.srtt(), Some(Nanos::from_nanos(27_500_000)));
        // A sample of less than a tick counts one tick.
        let mut f = RttEstimator::new(&cfg);
        f.sample_ns2(Nanos::from_millis(1), Nanos::from_millis(2));
        assert_eq!(f.rto(), Nanos::from_millis(30));
        // Backed off past 8, the next sample starts afresh: 3 ticks -> 9 ticks again.
        e.backed_off_ns2(4);
        e.sample_ns2(Nanos::from_millis(100), Nanos::from_millis(130));
        assert_eq!(e.rto(), Nanos::from_millis(90));
        // The backed-off timeout is never below two ticks.
        let g = RttEstimator::new(&TcpConfig { initial_rto: Nanos::from_millis(1), ..cfg });
        assert_eq!(g.backed_off(0), Nanos::from_millis(20));
    }

    #[test]
    fn minimum_and_mean_of_the_measured_rtts() {
        let cfg = TcpConfig::default();
        let mut e = RttEstimator::new(&cfg);
        assert_eq!(e.measured(), None);
        for ms in [30, 10, 20] {
            e.sample(Nanos::from_millis(ms));
        }
        assert_eq!(e.measured(), Some((Nanos::from_millis(10), Nanos::from_millis(20))));
        // ns-2's estimator counts ticks, but the minimum and mean are of the raw times.
        let mut n = RttEstimator::new(&TcpConfig { rto_model: RtoModel::Ns2, ..cfg });
        n.sample_ns2(Nanos::from_millis(5), Nanos::from_millis(8));
        n.sample_ns2(Nanos::from_millis(10), Nanos::from_millis(15));
        assert_eq!(n.measured(), Some((Nanos::from_millis(3), Nanos::from_millis(4))));
    }

    #[test]
    fn min_rto_floor() {
        let cfg = TcpConfig { min_rto: Nanos::from_millis(10), ..Default::default() };
        let mut e = RttEstimator::new(&cfg);
        e.sample(Nanos::from_micros(100));
        assert_eq!(e.rto(), Nanos::from_millis(10));
    }
}
