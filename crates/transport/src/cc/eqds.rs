//! EQDS (Olteanu et al., "An edge-queued datagram service for all datacenter traffic", NSDI
//! 2022): receiver-driven credit over trimming switches. The transport does the work
//! (`crate::eqds`: a speculative first window, then one packet's credit per pull, the
//! sender's demand in every data packet); the protocol holds its parameters.
//!
//! Defaults, from htsim's EQDS driver (csg-htsim `main_eqds.cpp`), the counterpart the
//! crosscheck runs:
//! - `eqds_initial_window` 50 packets (`-cwnd`, main_eqds.cpp:32, 495);
//! - `eqds_pull_rate` 0.99: pulls one full packet time apart at 99% of the receiving host's
//!   link rate (`EqdsPullPacer`, eqds.cpp:1533-1536);
//! - `eqds_rto` 220 us: the driver's `150 us + 6 queue times` for its 35-packet queues at
//!   100 Gb/s (main_eqds.cpp:346: 219.72 us), fixed (eqds.cpp:318-320).

use super::{CongestionControl, FlowInfo, Protocol, TransportKind, TransportPolicy};
use crate::config::TcpConfig;
use fctlab_engine::quantity::Duration;
use fctlab_engine::Nanos;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct EqdsConfig {
    /// Packets a flow may send before any credit. Key `eqds_initial_window`.
    #[serde(rename = "eqds_initial_window")]
    pub initial_window: u32,
    /// The fraction of the receiving host's link rate at which its pacer pulls. Key
    /// `eqds_pull_rate`.
    #[serde(rename = "eqds_pull_rate")]
    pub pull_rate: f64,
    /// The fixed timeout for the oldest packet in flight. Key `eqds_rto`.
    #[serde(rename = "eqds_rto")]
    pub rto: Duration,
}

impl Default for EqdsConfig {
    fn default() -> Self {
        EqdsConfig { initial_window: 50, pull_rate: 0.99, rto: Duration(Nanos::from_micros(220)) }
    }
}

#[derive(Clone, Debug)]
pub struct Eqds {
    cfg: EqdsConfig,
}

impl Protocol for Eqds {
    const NAMES: &'static [&'static str] = &["eqds"];
    const TRANSPORTS: &'static [TransportKind] = &[TransportKind::Eqds];
    type Config = EqdsConfig;
    const HOST_KEYS: &'static [&'static str] = &["eqds_pull_rate"];

    fn check(cfg: &EqdsConfig) -> Result<(), String> {
        if cfg.initial_window == 0 {
            return Err("eqds_initial_window: expected at least 1 packet".into());
        }
        if !(cfg.pull_rate > 0.0 && cfg.pull_rate <= 1.0) {
            return Err(format!("eqds_pull_rate: expected a fraction of the link rate in (0, 1], got {}", cfg.pull_rate));
        }
        if cfg.rto.0 == Nanos::ZERO {
            return Err("eqds_rto: must be above 0s".into());
        }
        Ok(())
    }

    fn new(cfg: &EqdsConfig, _info: &FlowInfo) -> Self {
        Eqds { cfg: cfg.clone() }
    }

    fn pull_rate(cfg: &EqdsConfig) -> Option<f64> {
        Some(cfg.pull_rate)
    }
}

impl TransportPolicy for Eqds {
    fn tune(&self, tcp: &mut TcpConfig) {
        tcp.initial_cwnd_segments = self.cfg.initial_window;
        tcp.min_rto = self.cfg.rto.0;
        tcp.max_rto = tcp.max_rto.max(self.cfg.rto.0);
    }
}

/// No window and no rate: credit clocks the sender.
impl CongestionControl for Eqds {}
