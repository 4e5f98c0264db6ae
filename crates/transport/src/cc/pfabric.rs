//! pFabric's end hosts (Alizadeh et al., "pFabric: Minimal Near-Optimal Datacenter
//! Transport", SIGCOMM 2013, section 4.2), over `queue = "pfabric"` ports.
//!
//! Every packet carries its flow's remaining size as its rank: the bytes the receiver has not
//! reported yet, acknowledged or SACKed (`size - snd_una - sacked`, as the authors' simulator
//! computes it), so that the switches serve the flow closest to completion first. ACKs rank 0.
//! A long-lived flow ranks last.
//!
//! The rate control is the paper's minimal one:
//! - flows start at line rate: the initial window is one bandwidth-delay product
//!   (`pfabric_initial_window`, default 12 segments: the paper's 18 KB for its 10 Gb/s fabric
//!   with a 14.6 us round trip);
//! - slow start and additive increase per ACK as TCP, SACK;
//! - no fast retransmission: losses are found by a fixed retransmission timeout of about three
//!   round trips (`pfabric_rto`, default the paper's 45 us), without backoff;
//! - on a timeout the window falls to one segment and ssthresh to half the window before it;
//! - probe mode: after `pfabric_probe_after` consecutive timeouts (default the paper's 5), a
//!   flow whose packets keep being dropped (in pFabric, a starved large flow) resends one byte
//!   per timeout rather than a full segment, until an ACK answers; it then slow-starts again.

use super::newreno::{NewReno, NewRenoConfig};
use super::{
    AckSample, CcState, CongestionControl, CongestionEvent, FlowInfo, PacketPriority, Protocol, SendContext,
    TransportPolicy,
};
use crate::config::TcpConfig;
use fctlab_engine::quantity::Duration;
use fctlab_engine::Nanos;
use fctlab_net::rank_of_bytes;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct PFabricConfig {
    /// The initial window in segments (one bandwidth-delay product). Key `pfabric_initial_window`.
    #[serde(rename = "pfabric_initial_window")]
    pub initial_window: u32,
    /// The fixed retransmission timeout (about 3 round trips). Key `pfabric_rto`.
    #[serde(rename = "pfabric_rto")]
    pub rto: Duration,
    /// Consecutive timeouts after which the flow probes with one-byte segments (0: never).
    /// Key `pfabric_probe_after`.
    #[serde(rename = "pfabric_probe_after")]
    pub probe_after: u32,
}

impl Default for PFabricConfig {
    fn default() -> Self {
        PFabricConfig { initial_window: 12, rto: Duration(Nanos::from_micros(45)), probe_after: 5 }
    }
}

#[derive(Clone, Debug)]
pub struct PFabric {
    cfg: PFabricConfig,
    /// The window grows as TCP's.
    reno: NewReno,
}

impl Protocol for PFabric {
    const NAMES: &'static [&'static str] = &["pfabric"];
    type Config = PFabricConfig;
    const TAGS_PACKETS: bool = true;
    fn check(cfg: &PFabricConfig) -> Result<(), String> {
        if cfg.initial_window == 0 {
            return Err("`pfabric_initial_window` must be at least 1 segment".into());
        }
        if cfg.rto.0 == Nanos::ZERO {
            return Err("`pfabric_rto` must be positive".into());
        }
        Ok(())
    }
    fn new(cfg: &PFabricConfig, _info: &FlowInfo) -> Self {
        PFabric { cfg: cfg.clone(), reno: NewReno::new(NewRenoConfig {}) }
    }
}

impl CongestionControl for PFabric {
    fn on_ack(&mut self, st: &mut CcState, ack: &AckSample) {
        self.reno.on_ack(st, ack)
    }

    /// Only timeouts reach here (fast retransmission is off): ssthresh to half the window
    /// before the timeout, the window to one segment.
    fn on_congestion(&mut self, st: &mut CcState, ev: CongestionEvent) {
        match ev {
            CongestionEvent::Timeout { .. } => {
                st.ssthresh_bytes = (st.cwnd_bytes / 2).max(2 * st.mss_bytes);
                st.cwnd_bytes = st.mss_bytes;
            }
            other => super::reno_decrease(st, other, 0.5),
        }
    }
}

/// pFabric's end hosts run TCP with its minimal loss recovery, and rank every packet.
impl TransportPolicy for PFabric {

    fn priority(&self, ctx: &SendContext) -> PacketPriority {
        PacketPriority { band: 0, rank: ctx.unacknowledged().map_or(u16::MAX, rank_of_bytes) }
    }

    fn tune(&self, tcp: &mut TcpConfig) {
        tcp.initial_cwnd_segments = self.cfg.initial_window;
        // A fixed timeout: the RTO estimator's bounds both at the timeout, no backoff.
        (tcp.min_rto, tcp.max_rto, tcp.initial_rto) = (self.cfg.rto.0, self.cfg.rto.0, self.cfg.rto.0);
        tcp.rto_granularity = Nanos::ZERO;
        // No fast retransmission: neither duplicate ACKs, SACKed bytes nor probes start a repair.
        tcp.dupthresh = u32::MAX;
        tcp.tail_loss_probe = false;
        tcp.delayed_ack = false;
    }

    fn probe_after_timeouts(&self) -> Option<u32> {
        (self.cfg.probe_after > 0).then_some(self.cfg.probe_after)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fctlab_net::PacketKind;

    fn ctx(size: Option<u64>, una: u64, sacked: u64) -> SendContext {
        SendContext {
            now: Nanos::ZERO,
            kind: PacketKind::Data,
            size,
            bytes_sent: una + sacked,
            seq: una,
            snd_una: una,
            sacked_bytes: sacked,
            srtt: None,
            mss_bytes: 1460,
        }
    }

    #[test]
    fn the_rank_is_the_remaining_size_not_yet_reported_by_the_receiver() {
        let p = PFabric::new(&PFabricConfig::default(), &FlowInfo::default());
        assert_eq!(p.priority(&ctx(Some(1500), 0, 0)).rank, 1500);
        assert_eq!(p.priority(&ctx(Some(1500), 1000, 300)).rank, 200);
        assert!(p.priority(&ctx(Some(10_000_000), 0, 0)).rank > p.priority(&ctx(Some(1_000_000), 0, 0)).rank);
        assert_eq!(p.priority(&ctx(None, 0, 0)).rank, u16::MAX, "a long-lived flow ranks last");
    }

    #[test]
    fn flows_start_at_a_bdp_with_a_fixed_timeout_and_no_fast_retransmit() {
        let cfg = PFabricConfig { initial_window: 20, rto: Duration(Nanos::from_micros(30)), probe_after: 5 };
        let mut tcp = TcpConfig::default();
        PFabric::new(&cfg, &FlowInfo::default()).tune(&mut tcp);
        assert_eq!(tcp.initial_cwnd_segments, 20);
        assert_eq!((tcp.min_rto, tcp.max_rto, tcp.initial_rto), (Nanos::from_micros(30), Nanos::from_micros(30), Nanos::from_micros(30)));
        assert_eq!((tcp.dupthresh, tcp.tail_loss_probe), (u32::MAX, false));
        let mut st = CcState { cwnd_bytes: 40 * 1460, ssthresh_bytes: CcState::SSTHRESH_UNLIMITED, mss_bytes: 1460 };
        let mut p = PFabric::new(&cfg, &FlowInfo::default());
        p.on_congestion(&mut st, CongestionEvent::Timeout { flight_bytes: 7 * 1460 });
        assert_eq!((st.cwnd_bytes, st.ssthresh_bytes), (1460, 20 * 1460), "half the window, not of the flight");
    }
}
