//! NewReno congestion control (RFC 5681 window growth, RFC 6582 recovery in the sender).
//!
//! Slow start with appropriate byte counting (RFC 3465, L = 2 MSS), congestion avoidance of
//! one MSS per window of acknowledged bytes, and the default Reno decrease (halve on loss or
//! ECN echo, one segment on timeout). Loss recovery itself (fast retransmit, SACK
//! scoreboard, partial ACKs) lives in the sender and is shared by every algorithm.

use super::{
    additive_increase, reno_decrease, slow_start, AckSample, CcState, CongestionControl, CongestionEvent, FlowInfo,
    Protocol, TransportPolicy,
};
use serde::{Deserialize, Serialize};

/// NewReno has no parameters of its own (the `[transport]` TCP settings apply).
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct NewRenoConfig {}

#[derive(Clone, Debug)]
pub struct NewReno {
    acc_bytes: u64,
}

impl NewReno {
    pub fn new(_cfg: NewRenoConfig) -> Self {
        NewReno { acc_bytes: 0 }
    }
}

impl Protocol for NewReno {
    const NAMES: &'static [&'static str] = &["tcp", "newreno", "reno"];
    const NS2_AGENT: bool = true;
    type Config = NewRenoConfig;
    fn new(cfg: &NewRenoConfig, _info: &FlowInfo) -> Self {
        NewReno::new(cfg.clone())
    }
}

/// The transport as it is.
impl TransportPolicy for NewReno {}

impl CongestionControl for NewReno {
    /// Reno's halving (RFC 5681).
    fn on_congestion(&mut self, st: &mut CcState, ev: CongestionEvent) {
        reno_decrease(st, ev, 0.5)
    }

    fn on_ack(&mut self, st: &mut CcState, ack: &AckSample) {
        let mut acked = ack.acked_bytes;
        if st.in_slow_start() {
            acked = slow_start(st, acked);
        }
        if acked > 0 {
            additive_increase(st, acked, 1.0, &mut self.acc_bytes);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{CongestionControl, CongestionEvent};
    use super::*;

    const MSS: u64 = 1000;

    fn state(cwnd: u64, ssthresh: u64) -> CcState {
        CcState { cwnd_bytes: cwnd * MSS, ssthresh_bytes: ssthresh * MSS, mss_bytes: MSS }
    }
    fn ack(cc: &mut NewReno, st: &mut CcState, bytes: u64) {
        cc.on_ack(st, &AckSample { acked_bytes: bytes, ..Default::default() });
    }

    #[test]
    fn slow_start_doubles_per_window() {
        let mut cc = NewReno::new(NewRenoConfig {});
        let mut st = state(10, 1000);
        for _ in 0..10 {
            ack(&mut cc, &mut st, MSS);
        }
        assert_eq!(st.cwnd_bytes, 20 * MSS);
    }

    #[test]
    fn congestion_avoidance_adds_one_mss_per_window() {
        let mut cc = NewReno::new(NewRenoConfig {});
        let mut st = state(10, 10);
        for _ in 0..10 {
            ack(&mut cc, &mut st, MSS);
        }
        assert_eq!(st.cwnd_bytes, 11 * MSS);
        for _ in 0..10 {
            ack(&mut cc, &mut st, MSS);
        }
        assert_eq!(st.cwnd_bytes, 11 * MSS); // 10 of 11 acked
        ack(&mut cc, &mut st, MSS);
        assert_eq!(st.cwnd_bytes, 12 * MSS);
    }

    #[test]
    fn halves_on_loss_and_resets_on_timeout() {
        let mut cc = NewReno::new(NewRenoConfig {});
        let mut st = state(20, 100);
        cc.on_congestion(&mut st, CongestionEvent::Loss { flight_bytes: 20 * MSS });
        assert_eq!((st.cwnd_bytes, st.ssthresh_bytes), (10 * MSS, 10 * MSS));
        cc.on_congestion(&mut st, CongestionEvent::Timeout { flight_bytes: 3 * MSS });
        assert_eq!((st.cwnd_bytes, st.ssthresh_bytes), (MSS, 2 * MSS));
    }

    #[test]
    fn stretch_acks_grow_the_window_by_bounded_amounts() {
        // After a timeout a single cumulative ACK may cover megabytes.
        let mut cc = NewReno::new(NewRenoConfig {});
        let mut st = state(2, 3);
        ack(&mut cc, &mut st, 5_000 * MSS);
        assert!(st.cwnd_bytes <= 4 * MSS, "slow start past ssthresh: cwnd {}", st.cwnd_bytes / MSS);
        let mut st = state(10, 10);
        ack(&mut cc, &mut st, 5_000 * MSS);
        assert_eq!(st.cwnd_bytes, 11 * MSS, "congestion avoidance: one segment per window at most");
    }

    #[test]
    fn slow_start_stops_at_ssthresh() {
        let mut cc = NewReno::new(NewRenoConfig {});
        let mut st = state(9, 10);
        ack(&mut cc, &mut st, 2 * MSS);
        // 1 MSS fills to ssthresh, the other MSS counts toward congestion avoidance
        assert_eq!(st.cwnd_bytes, 10 * MSS);
    }
}
