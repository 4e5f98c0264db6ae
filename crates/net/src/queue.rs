//! Queue disciplines of switch output ports: DropTail, ECN threshold marking and RED.
//!
//! A discipline only decides what happens to an arriving packet (accept, mark CE, drop early);
//! the buffer limit itself is enforced by the port, the same way for every discipline.

use crate::port::BufferLimit;
use fctlab_engine::{Nanos, Rng};

/// RED parameters (Floyd and Jacobson 1993), thresholds in packets.
#[derive(Clone, Debug, PartialEq)]
pub struct RedConfig {
    pub min_threshold_pkts: f64,
    pub max_threshold_pkts: f64,
    /// Marking/drop probability at `max_threshold_pkts`.
    pub max_p: f64,
    /// Weight of the EWMA of the queue length.
    pub weight: f64,
    /// Mark ECN-capable packets instead of dropping them.
    pub ecn: bool,
    /// Gentle RED: probability rises from max_p to 1 between max and twice max.
    pub gentle: bool,
}

impl Default for RedConfig {
    fn default() -> Self {
        // ns-2/ns-3 defaults: min 5, max 15, max_p 0.02 (1/linterm 50), w_q 0.002, gentle.
        RedConfig { min_threshold_pkts: 5.0, max_threshold_pkts: 15.0, max_p: 0.02, weight: 0.002, ecn: false, gentle: true }
    }
}

/// Which discipline a port runs.
#[derive(Clone, Debug, PartialEq, Default)]
pub enum QueueConfig {
    #[default]
    DropTail,
    /// Mark CE on ECN-capable packets that arrive when the queue holds `threshold` or more
    /// (DCTCP-style instantaneous threshold K). Packets that are not ECN-capable are not marked.
    Ecn { threshold: BufferLimit },
    Red(RedConfig),
}

/// What the discipline decided for an arriving packet.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    Accept,
    Mark,
    Drop,
}

/// Run-time state of a discipline.
#[derive(Clone, Debug)]
pub enum QueueState {
    DropTail,
    Ecn { threshold: BufferLimit },
    /// Boxed: RED's state is large and read only by RED ports, the others stay compact.
    Red(Box<RedState>),
}

#[derive(Clone, Debug)]
pub struct RedState {
    cfg: RedConfig,
    avg: f64,
    count: i64,
    rng: Rng,
    /// Transmission time of a typical (full-size) packet, for the idle-time decay.
    typical_tx: Nanos,
}

impl QueueState {
    pub fn new(cfg: &QueueConfig, rng: Rng, typical_tx: Nanos) -> QueueState {
        match cfg {
            QueueConfig::DropTail => QueueState::DropTail,
            QueueConfig::Ecn { threshold } => QueueState::Ecn { threshold: *threshold },
            QueueConfig::Red(c) => QueueState::Red(Box::new(RedState { cfg: c.clone(), avg: 0.0, count: -1, rng, typical_tx })),
        }
    }

    /// Decides for a packet arriving to a queue holding `q_pkts` packets / `q_bytes` bytes.
    /// `idle_for` is how long the queue has been empty (zero when it is busy).
    #[inline]
    pub fn on_arrival(&mut self, q_pkts: u32, q_bytes: u64, idle_for: Nanos) -> Verdict {
        match self {
            QueueState::DropTail => Verdict::Accept,
            QueueState::Ecn { threshold } => {
                if threshold.reached(q_pkts, q_bytes) {
                    Verdict::Mark
                } else {
                    Verdict::Accept
                }
            }
            QueueState::Red(r) => r.on_arrival(q_pkts, idle_for),
        }
    }

    /// Average queue estimate (RED) for reporting.
    pub fn red_avg(&self) -> Option<f64> {
        match self {
            QueueState::Red(r) => Some(r.avg),
            _ => None,
        }
    }
}

impl RedState {
    fn on_arrival(&mut self, q_pkts: u32, idle_for: Nanos) -> Verdict {
        let c = &self.cfg;
        if q_pkts == 0 && idle_for > Nanos::ZERO {
            let m = idle_for.0 as f64 / self.typical_tx.0.max(1) as f64;
            self.avg *= (1.0 - c.weight).powf(m);
        }
        self.avg = (1.0 - c.weight) * self.avg + c.weight * q_pkts as f64;
        let avg = self.avg;
        let pb = if avg < c.min_threshold_pkts {
            self.count = -1;
            return Verdict::Accept;
        } else if avg < c.max_threshold_pkts {
            c.max_p * (avg - c.min_threshold_pkts) / (c.max_threshold_pkts - c.min_threshold_pkts)
        } else if c.gentle && avg < 2.0 * c.max_threshold_pkts {
            c.max_p + (1.0 - c.max_p) * (avg - c.max_threshold_pkts) / c.max_threshold_pkts
        } else {
            self.count = 0;
            return if c.ecn { Verdict::Mark } else { Verdict::Drop };
        };
        self.count += 1;
        let denom = 1.0 - self.count as f64 * pb;
        let pa = if denom <= 0.0 { 1.0 } else { (pb / denom).min(1.0) };
        if self.rng.uniform() < pa {
            self.count = 0;
            if c.ecn {
                Verdict::Mark
            } else {
                Verdict::Drop
            }
        } else {
            Verdict::Accept
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ecn_marks_at_threshold() {
        let mut q = QueueState::new(&QueueConfig::Ecn { threshold: BufferLimit::Packets(20) }, Rng::stream(1, 1), Nanos(1200));
        assert_eq!(q.on_arrival(19, 0, Nanos::ZERO), Verdict::Accept);
        assert_eq!(q.on_arrival(20, 0, Nanos::ZERO), Verdict::Mark);
    }

    #[test]
    fn red_never_acts_below_min_and_always_above_twice_max() {
        let cfg = RedConfig { weight: 1.0, ..Default::default() };
        let mut q = QueueState::new(&QueueConfig::Red(cfg), Rng::stream(1, 1), Nanos(1200));
        // With weight 1 the average is the queue length: below min_threshold (5) no arrival
        // is ever dropped, beyond twice max_threshold (30, gentle RED) every one is.
        for qlen in 0..5 {
            for _ in 0..1000 {
                assert_eq!(q.on_arrival(qlen, 0, Nanos::ZERO), Verdict::Accept, "queue {qlen}");
            }
        }
        for qlen in 31..200 {
            for _ in 0..200 {
                assert_eq!(q.on_arrival(qlen, 0, Nanos::ZERO), Verdict::Drop, "queue {qlen}");
            }
        }
    }

    #[test]
    fn red_drop_fraction_between_thresholds() {
        // avg fixed at 10 (weight 1): pb = 0.02 * 5/10 = 0.01; with the count correction the
        // drops are spaced about uniformly, about one per 1/pb * ~0.5..1 arrivals.
        let cfg = RedConfig { weight: 1.0, gentle: false, ..Default::default() };
        let mut q = QueueState::new(&QueueConfig::Red(cfg), Rng::stream(3, 9), Nanos(1200));
        let n = 100_000;
        let drops = (0..n).filter(|_| q.on_arrival(10, 0, Nanos::ZERO) == Verdict::Drop).count();
        let frac = drops as f64 / n as f64;
        assert!(frac > 0.01 && frac < 0.03, "drop fraction {frac}");
    }
}
