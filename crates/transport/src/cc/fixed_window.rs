//! An example algorithm: a fixed congestion window, never grown or cut (loss recovery and
//! timeouts still go through the sender). Not a protocol to study: it is the worked example of
//! `docs/protocols.md` and the algorithm the tests register through the one-line path. Built
//! only with the `example-protocols` feature.

use super::{AckSample, CcState, CongestionControl, CongestionEvent, FlowInfo, Protocol, TransportPolicy};
use serde::{Deserialize, Serialize};

/// Parameters: the window in segments (key `window`, default 4).
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct FixedWindowConfig {
    pub window: u32,
}

impl Default for FixedWindowConfig {
    fn default() -> Self {
        FixedWindowConfig { window: 4 }
    }
}

#[derive(Clone, Debug)]
pub struct FixedWindow {
    window_segments: u64,
}

impl Protocol for FixedWindow {
    const NAMES: &'static [&'static str] = &["fixed_window"];
    type Config = FixedWindowConfig;
    fn check(cfg: &FixedWindowConfig) -> Result<(), String> {
        if cfg.window == 0 {
            return Err("`window` must be at least 1 segment".into());
        }
        Ok(())
    }
    fn new(cfg: &FixedWindowConfig, _info: &FlowInfo) -> Self {
        FixedWindow { window_segments: cfg.window as u64 }
    }
}

/// The transport as it is.
impl TransportPolicy for FixedWindow {}

impl CongestionControl for FixedWindow {
    fn on_ack(&mut self, st: &mut CcState, _ack: &AckSample) {
        st.cwnd_bytes = self.window_segments * st.mss_bytes;
        st.ssthresh_bytes = st.cwnd_bytes;
    }
    fn on_congestion(&mut self, st: &mut CcState, _ev: CongestionEvent) {
        st.cwnd_bytes = self.window_segments * st.mss_bytes;
        st.ssthresh_bytes = st.cwnd_bytes;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_stays_put() {
        let mut cc = FixedWindow::new(&FixedWindowConfig { window: 3 }, &FlowInfo::default());
        let mut st = CcState { cwnd_bytes: 10_000, ssthresh_bytes: u64::MAX, mss_bytes: 1000 };
        cc.on_ack(&mut st, &AckSample { acked_bytes: 1000, ..Default::default() });
        assert_eq!(st.cwnd_bytes, 3000);
        cc.on_congestion(&mut st, CongestionEvent::Loss { flight_bytes: 3000 });
        assert_eq!(st.cwnd_bytes, 3000);
    }
}
