//! PIAS, Practical Information-Agnostic flow Scheduling (Bai et al., NSDI 2015), over
//! strict-priority ports (`queue = "priority"` with per-band ECN marking,
//! `priority_ecn_threshold`).
//!
//! The sender knows nothing of flow sizes. It tags each packet with a band by the bytes the
//! flow has sent before it (the packet's first byte): band 0 below the first demotion
//! threshold, band 1 below the second, and so on, so that a flow is demoted step by step as
//! it sends, a multi-level feedback queue that approximates least-attained-service first.
//! Its window is DCTCP's (RFC 8257; the same code and `dctcp_*` keys as `protocol = "dctcp"`).
//! ACKs go in band 0.
//!
//! `pias_thresholds` lists the demotion thresholds, ascending, at most one fewer than the bands
//! the ports have (at most 7). Left out, a scenario derives them for each workload that has a
//! size distribution and a load (a `poisson` entry) from the paper's queueing model
//! (`fctlab_dist::mlfq`); for other flows they are [`DEFAULT_THRESHOLDS`], the PIAS authors'
//! simulation setting for the web search workload at 80% load with 8 bands.

use super::dctcp::DctcpConfig;
use super::{
    AckSample, CcState, CongestionControl, CongestionEvent, Dctcp, FlowInfo, PacketPriority, Protocol, SendContext,
    TransportPolicy,
};
use fctlab_engine::quantity::Size;
use serde::{Deserialize, Serialize};

/// The most demotion thresholds (8 bands).
pub const MAX_THRESHOLDS: usize = 7;

/// The thresholds of flows whose workload gives no distribution and load to derive them from:
/// the PIAS authors' setting for web search at 80% load, in their 1460-byte packets 909, 1329,
/// 1648, 1960, 2143, 2337 and 2484 (their ns-2 scripts, `run_pias_dctcp.py`).
pub const DEFAULT_THRESHOLDS: [u64; 7] =
    [909 * 1460, 1329 * 1460, 1648 * 1460, 1960 * 1460, 2143 * 1460, 2337 * 1460, 2484 * 1460];

#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct PiasConfig {
    /// Demotion thresholds, ascending. Key `pias_thresholds`. `None` (left out): derived by the
    /// scenario from the workload, or [`DEFAULT_THRESHOLDS`].
    #[serde(rename = "pias_thresholds", skip_serializing_if = "Option::is_none")]
    pub thresholds: Option<Vec<Size>>,
    /// DCTCP's EWMA gain g. Key `dctcp_g`.
    #[serde(rename = "dctcp_g")]
    pub g: f64,
    /// DCTCP's initial alpha. Key `dctcp_alpha_init`.
    #[serde(rename = "dctcp_alpha_init")]
    pub alpha_init: f64,
}

impl Default for PiasConfig {
    fn default() -> Self {
        let d = DctcpConfig::default();
        PiasConfig { thresholds: None, g: d.g, alpha_init: d.alpha_init }
    }
}

#[derive(Clone, Debug)]
pub struct Pias {
    thresholds: Vec<u64>,
    dctcp: Dctcp,
}

impl Pias {
    /// The band of a packet whose first byte is the flow's `offset`th.
    pub fn band_of(&self, offset: u64) -> u8 {
        self.thresholds.iter().take_while(|&&t| offset >= t).count() as u8
    }
}

impl Protocol for Pias {
    const NAMES: &'static [&'static str] = &["pias"];
    const REQUIRES_ECN: bool = true;
    const TAGS_PACKETS: bool = true;
    type Config = PiasConfig;
    fn check(cfg: &PiasConfig) -> Result<(), String> {
        let t = cfg.thresholds.as_deref().unwrap_or_default();
        if t.len() > MAX_THRESHOLDS {
            return Err(format!("`pias_thresholds` has {} thresholds; at most {MAX_THRESHOLDS} (8 bands)", t.len()));
        }
        if let Some(i) = (1..t.len()).find(|&i| t[i].0 <= t[i - 1].0) {
            return Err(format!(
                "`pias_thresholds` must rise: [{i}] = {}B is not above [{}] = {}B",
                t[i].0,
                i - 1,
                t[i - 1].0
            ));
        }
        <Dctcp as Protocol>::check(&DctcpConfig { g: cfg.g, alpha_init: cfg.alpha_init })
    }
    fn new(cfg: &PiasConfig, _info: &FlowInfo) -> Self {
        Pias {
            thresholds: match &cfg.thresholds {
                Some(t) => t.iter().map(|s| s.0).collect(),
                None => DEFAULT_THRESHOLDS.to_vec(),
            },
            dctcp: Dctcp::new(DctcpConfig { g: cfg.g, alpha_init: cfg.alpha_init }),
        }
    }
}

impl CongestionControl for Pias {
    fn on_ack(&mut self, st: &mut CcState, ack: &AckSample) {
        self.dctcp.on_ack(st, ack)
    }

    fn on_congestion(&mut self, st: &mut CcState, ev: CongestionEvent) {
        self.dctcp.on_congestion(st, ev)
    }
}

/// PIAS demotes a flow's packets through the bands as it sends.
impl TransportPolicy for Pias {
    fn priority(&self, ctx: &SendContext) -> PacketPriority {
        PacketPriority { band: self.band_of(ctx.seq), rank: 0 }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pias(thresholds: &[u64]) -> Pias {
        let cfg = PiasConfig { thresholds: Some(thresholds.iter().map(|&t| Size(t)).collect()), ..Default::default() };
        Pias::new(&cfg, &FlowInfo::default())
    }

    #[test]
    fn a_flow_is_demoted_at_each_threshold_by_the_bytes_sent_before_the_packet() {
        let p = pias(&[10_000, 100_000, 1_000_000]);
        let bands: Vec<u8> =
            [0, 9_999, 10_000, 99_999, 100_000, 999_999, 1_000_000, u64::MAX].iter().map(|&o| p.band_of(o)).collect();
        assert_eq!(bands, vec![0, 0, 1, 1, 2, 2, 3, 3]);
        assert_eq!(pias(&[]).band_of(u64::MAX), 0, "no thresholds: one band");
    }

    #[test]
    fn thresholds_must_rise_and_fit_eight_bands() {
        let check = |t: &[u64]| {
            let thresholds = Some(t.iter().map(|&t| Size(t)).collect());
            <Pias as Protocol>::check(&PiasConfig { thresholds, ..Default::default() })
        };
        assert!(check(&[1, 2, 3, 4, 5, 6, 7]).is_ok());
        assert!(check(&[1, 2, 3, 4, 5, 6, 7, 8]).unwrap_err().contains("at most 7"));
        assert_eq!(check(&[5, 5]).unwrap_err(), "`pias_thresholds` must rise: [1] = 5B is not above [0] = 5B");
        assert_eq!(PiasConfig::default().thresholds, None, "left out: derived, or the default");
        assert_eq!(Pias::new(&PiasConfig::default(), &FlowInfo::default()).thresholds, DEFAULT_THRESHOLDS.to_vec());
    }

    #[test]
    fn the_window_is_dctcps() {
        let mut p = pias(&[1000]);
        let mut d = Dctcp::new(DctcpConfig::default());
        let (mut s1, mut s2) = (CcState { cwnd_bytes: 10_000, ssthresh_bytes: 40_000, mss_bytes: 1000 }, CcState { cwnd_bytes: 10_000, ssthresh_bytes: 40_000, mss_bytes: 1000 });
        for i in 1..300u64 {
            let a = AckSample { acked_bytes: 1000, ce_bytes: if i % 3 == 0 { 1000 } else { 0 }, snd_una: i * 1000, snd_nxt: (i + 10) * 1000, ..Default::default() };
            p.on_ack(&mut s1, &a);
            d.on_ack(&mut s2, &a);
            if i % 50 == 0 {
                p.on_congestion(&mut s1, CongestionEvent::Ecn { flight_bytes: 10_000 });
                d.on_congestion(&mut s2, CongestionEvent::Ecn { flight_bytes: 10_000 });
            }
            assert_eq!(s1, s2);
        }
    }
}
