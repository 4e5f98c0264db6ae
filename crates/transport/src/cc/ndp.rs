//! NDP (Handley et al., "Re-architecting datacenter networks and stacks for low latency and
//! high performance", SIGCOMM 2017): receiver-driven, over trimming switches (`queue =
//! "trim"`) that spray packets (`[network] load_balancing = "spray"`). The transport does the
//! work (`crate::ndp`: first window at line rate, ACK or NACK per packet, one packet per
//! pull); the protocol holds its parameters.
//!
//! Defaults, and where they come from:
//! - `ndp_initial_window` 15 packets: htsim's NDP driver (`-cwnd`, main_ndp.cpp:81, 603), the
//!   counterpart the crosscheck runs;
//! - `ndp_pull_rate` 0.99: the receiving host's pacer spaces pulls one full packet time apart
//!   at 99% of its link rate (htsim's `NdpPullPacer(…, 0.99)`, main_ndp.cpp:553, ndp.cpp:1817),
//!   so that its downlink queue drains;
//! - `ndp_rto` 1 ms: only a dropped header or pull needs it (trimmed packets come back as
//!   NACKs). htsim's NDP builds with its timer off (`RESEND_ON_TIMEOUT` undefined,
//!   ndp.cpp:1141-1146); fctlab keeps one so that such a flow still completes. 1 ms is about a
//!   hundred base round trips of a 100 Gb/s fat-tree.

use super::{CongestionControl, FlowInfo, Protocol, TransportKind, TransportPolicy};
use crate::config::TcpConfig;
use fctlab_engine::quantity::Duration;
use fctlab_engine::Nanos;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct NdpConfig {
    /// Packets a flow sends before its first pull. Key `ndp_initial_window`.
    #[serde(rename = "ndp_initial_window")]
    pub initial_window: u32,
    /// The fraction of the receiving host's link rate at which its pacer sends pulls. Key
    /// `ndp_pull_rate`.
    #[serde(rename = "ndp_pull_rate")]
    pub pull_rate: f64,
    /// How long a sender with packets outstanding waits for a word from its receiver before
    /// it sends again (doubling while nothing comes). Key `ndp_rto`.
    #[serde(rename = "ndp_rto")]
    pub rto: Duration,
}

impl Default for NdpConfig {
    fn default() -> Self {
        NdpConfig { initial_window: 15, pull_rate: 0.99, rto: Duration(Nanos::from_millis(1)) }
    }
}

#[derive(Clone, Debug)]
pub struct Ndp {
    cfg: NdpConfig,
}

impl Protocol for Ndp {
    const NAMES: &'static [&'static str] = &["ndp"];
    const TRANSPORTS: &'static [TransportKind] = &[TransportKind::Ndp];
    type Config = NdpConfig;
    const HOST_KEYS: &'static [&'static str] = &["ndp_pull_rate"];

    fn check(cfg: &NdpConfig) -> Result<(), String> {
        if cfg.initial_window == 0 {
            return Err("ndp_initial_window: expected at least 1 packet".into());
        }
        if !(cfg.pull_rate > 0.0 && cfg.pull_rate <= 1.0) {
            return Err(format!("ndp_pull_rate: expected a fraction of the link rate in (0, 1], got {}", cfg.pull_rate));
        }
        if cfg.rto.0 == Nanos::ZERO {
            return Err("ndp_rto: must be above 0s".into());
        }
        Ok(())
    }

    fn new(cfg: &NdpConfig, _info: &FlowInfo) -> Self {
        Ndp { cfg: cfg.clone() }
    }

    fn pull_rate(cfg: &NdpConfig) -> Option<f64> {
        Some(cfg.pull_rate)
    }
}

impl TransportPolicy for Ndp {
    fn tune(&self, tcp: &mut TcpConfig) {
        tcp.initial_cwnd_segments = self.cfg.initial_window;
        tcp.min_rto = self.cfg.rto.0;
        tcp.max_rto = tcp.max_rto.max(self.cfg.rto.0);
    }
}

/// No window and no rate: pulls clock the sender.
impl CongestionControl for Ndp {}

#[cfg(test)]
mod tests {
    #[test]
    fn bad_parameters_are_named() {
        let bad = |t: &str| crate::cc::configure("ndp", t.parse().unwrap()).unwrap_err().message;
        assert!(bad("ndp_initial_window = 0").contains("ndp_initial_window"));
        assert!(bad("ndp_pull_rate = 1.5").contains("ndp_pull_rate"));
        assert!(bad("ndp_rto = \"0s\"").contains("ndp_rto"));
        let ok = crate::cc::configure("ndp", toml::Table::new()).unwrap();
        assert_eq!(ok.pull_rate(), Some(0.99));
    }
}
