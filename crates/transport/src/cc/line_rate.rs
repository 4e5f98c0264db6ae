//! RoCE without congestion control: every message leaves at its NIC's line rate and recovers
//! from loss by go-back-N (the `roce` transport). The baseline of lossless fabrics, where PFC
//! alone keeps the buffers from overflowing; htsim's `RoceSrc` is the same sender.

use super::{CongestionControl, FlowInfo, Protocol, TransportKind, TransportPolicy};
use serde::{Deserialize, Serialize};

/// No parameters.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct LineRateConfig {}

#[derive(Clone, Debug)]
pub struct LineRate;

impl Protocol for LineRate {
    const NAMES: &'static [&'static str] = &["roce"];
    const TRANSPORTS: &'static [TransportKind] = &[TransportKind::Roce];
    type Config = LineRateConfig;
    fn new(_cfg: &LineRateConfig, _info: &FlowInfo) -> Self {
        LineRate
    }
}

/// The transport as it is.
impl TransportPolicy for LineRate {}

/// No window and no rate: the transport sends at line rate.
impl CongestionControl for LineRate {}
