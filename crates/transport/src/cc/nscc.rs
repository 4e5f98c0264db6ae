//! NSCC, Ultra Ethernet's network-signal congestion control (UEC 1.0's sender-based CC, as
//! uet-htsim implements it: `UecSrc::updateCwndOnAck_NSCC`, `updateCwndOnNack_NSCC`,
//! `quick_adapt` and `fulfill_adjustment` in htsim/sim/uec.cpp): a window from two signals of
//! every acknowledgement, the queueing delay (its round trip less the base round trip) against
//! a target, and the ECN mark, on the `uet` transport (an ACK per packet, a NACK per trimmed
//! one).
//!
//! With `rtt` the network's round trip (`nscc_network_rtt`, by default the flow's own base
//! round trip), `bdp = rtt x line rate`, the target `t = 0.75 rtt` (trimming on), and the
//! scale factors `a = bdp / 150 KB` and `b = t / 12 us` (UEC's reference: 100 Gb/s, 12 us):
//!
//! - **no mark, delay >= t** (fair increase): `inc += 5 mss a x acked`;
//! - **no mark, delay < t** (proportional increase): `inc += 4 mss a b (t - delay) / t x acked`;
//!   or, after a window's bytes all with delay under 1 us, fast increase: `cwnd += 0.25 a x
//!   acked` directly;
//! - **mark, delay >= t** (multiplicative decrease), at most once per base round trip:
//!   `cwnd *= max(1 - 0.8 (avg - t) / avg, 0.5)`, with `avg` the delay's moving average
//!   (gain 1/80; a delay above t without a mark counts as a quarter of the base round trip);
//! - **mark, delay < t**: nothing (the path changes, the window does not).
//!
//! The increases gathered in `inc` are applied when more than 8 packets' bytes have been
//! acknowledged since the last application or a round trip has passed: `cwnd += inc / cwnd`,
//! plus `0.15 mss a` once per round trip. Quick adapt: at the end of each period of a base
//! round trip plus t, if a NACK came, or the delay passed 4 t, and the bytes acknowledged in
//! the period are below an eighth of the largest window, the window falls to those bytes, and
//! marks on the bytes in flight then are ignored. A NACK cuts one packet (unless quick adapt
//! acted), a timeout one packet. The window starts at, and never exceeds, 1.5 bdp of the base
//! round trip, which only ever falls (to the smallest sample); it never goes below one packet.

use super::{AckSample, CcState, CongestionControl, CongestionEvent, FlowInfo, Protocol, TransportKind, TransportPolicy};
use crate::config::TcpConfig;
use fctlab_engine::quantity::Duration;
use fctlab_engine::{BitsPerSec, Nanos};
use serde::{Deserialize, Serialize};

/// NSCC's parameters (keys of `[transport.nscc]`).
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct NsccConfig {
    /// The network's round trip the constants scale with; none: the flow's base round trip
    /// (uet-htsim uses the network's longest, `calculate_rtt` in main_uec.cpp).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nscc_network_rtt: Option<Duration>,
    /// The target queueing delay as a fraction of the network's round trip (0.75 with
    /// trimming, uec.cpp:104-112).
    pub nscc_target_fraction: f64,
    /// The retransmission timeout (fixed, no backoff; uet-htsim's `_min_rto` default, uec.h:23).
    pub nscc_rto: Duration,
}

impl Default for NsccConfig {
    fn default() -> Self {
        NsccConfig { nscc_network_rtt: None, nscc_target_fraction: 0.75, nscc_rto: Duration(Nanos::from_micros(100)) }
    }
}

/// UEC's reference link: 100 Gb/s, 12 us, whose BDP is 150,000 B (uec.cpp:93-95).
const REFERENCE_BDP: f64 = 150_000.0;
const REFERENCE_RTT_NS: f64 = 12_000.0;
/// The multiplicative decrease's gain, the delay average's, and the fast increase's delay.
const GAMMA: f64 = 0.8;
const DELAY_GAIN: f64 = 0.0125;
const FAST_DELAY_NS: f64 = 1_000.0;
/// Quick adapt acts when the bytes acknowledged in a period fall below the largest window
/// shifted right by this (qa_gate 3).
const QA_GATE: u32 = 3;

/// NSCC's state (behind one pointer: a flow's controller stays small).
#[derive(Clone, Debug)]
pub struct NsccState {
    rate: BitsPerSec,
    /// Bytes on the wire per full packet (mss + header).
    mtu: f64,

    network_rtt_ns: f64,
    target_ns: f64,
    base_rtt_ns: f64,
    max_cwnd: f64,
    cwnd: f64,
    /// The scaled constants (proportional, fair, eta, fast).
    alpha: f64,
    fair: f64,
    eta: f64,
    fast_scale: f64,
    avg_delay_ns: f64,
    inc_bytes: f64,
    received_bytes: f64,
    last_adjust: Nanos,
    last_decrease: Nanos,
    fast_count: f64,
    increasing: bool,
    achieved_bytes: f64,
    qa_end: Option<Nanos>,
    trigger_qa: bool,
    bytes_to_ignore: f64,
    bytes_ignored: f64,
    rto: Nanos,
    /// The algorithm's clock (the transport brings it to each event's time).
    now: Nanos,
}

impl NsccState {
    fn bdp(&self, rtt_ns: f64) -> f64 {
        rtt_ns * 1e-9 * self.rate.as_f64() / 8.0
    }

    fn bound(&mut self) {
        self.cwnd = self.cwnd.clamp(self.mtu, self.max_cwnd.max(self.mtu));
    }

    /// A delay sample into the average (`marked`: the ACK echoed ECN).
    fn average(&mut self, delay_ns: f64, marked: bool) {
        let sample = if !marked && delay_ns > self.target_ns { self.base_rtt_ns / 4.0 } else { delay_ns };
        self.avg_delay_ns = DELAY_GAIN * sample + (1.0 - DELAY_GAIN) * self.avg_delay_ns;
    }

    /// Quick adapt at `now` (see the module documentation); true when this ACK or NACK
    /// changes nothing else.
    fn quick_adapt(&mut self, now: Nanos, loss: bool, marked: bool, delay_ns: f64, in_flight: f64) -> bool {
        if self.bytes_ignored < self.bytes_to_ignore && marked {
            return true;
        }
        let mut acted = false;
        let due = self.qa_end.map_or(true, |t| now > t);
        if due {
            if self.qa_end.is_some()
                && (self.trigger_qa || loss || delay_ns > 4.0 * self.target_ns)
                && self.achieved_bytes < self.max_cwnd / f64::from(1u32 << QA_GATE)
            {
                self.cwnd = self.achieved_bytes.max(self.mtu);
                self.bytes_to_ignore = in_flight;
                self.bytes_ignored = 0.0;
                self.trigger_qa = false;
                acted = true;
            }
            self.achieved_bytes = 0.0;
            self.qa_end = Some(now + Nanos::from_nanos((self.base_rtt_ns + self.target_ns) as u64));
        }
        if acted {
            self.inc_bytes = 0.0;
            self.received_bytes = 0.0;
        }
        acted
    }

    /// Applies the gathered increases (UEC's fulfill adjustment).
    fn fulfill(&mut self, now: Nanos) {
        let period = Nanos::from_nanos(self.network_rtt_ns as u64);
        if self.received_bytes > 8.0 * self.mtu || now.saturating_sub(self.last_adjust) > period {
            self.cwnd += (self.inc_bytes / self.cwnd).floor();
            if now.saturating_sub(self.last_adjust) >= period {
                self.cwnd += self.eta;
                self.last_adjust = now;
            }
            self.inc_bytes = 0.0;
            self.received_bytes = 0.0;
        }
    }

    /// The window in bytes (tests).
    pub fn window(&self) -> f64 {
        self.cwnd
    }
}

#[derive(Clone, Debug)]
pub struct Nscc(Box<NsccState>);

impl std::ops::Deref for Nscc {
    type Target = NsccState;
    fn deref(&self) -> &NsccState {
        &self.0
    }
}

impl std::ops::DerefMut for Nscc {
    fn deref_mut(&mut self) -> &mut NsccState {
        &mut self.0
    }
}

impl Protocol for Nscc {
    const NAMES: &'static [&'static str] = &["nscc"];
    const TRANSPORTS: &'static [TransportKind] = &[TransportKind::Uet];
    const REQUIRES_ECN: bool = true;
    type Config = NsccConfig;

    fn check(cfg: &NsccConfig) -> Result<(), String> {
        if !(cfg.nscc_target_fraction > 0.0 && cfg.nscc_target_fraction <= 10.0) {
            return Err(format!("nscc_target_fraction: expected a fraction in (0, 10], got {}", cfg.nscc_target_fraction));
        }
        if cfg.nscc_network_rtt.is_some_and(|d| d.0 == Nanos::ZERO) {
            return Err("nscc_network_rtt: must be above 0s".into());
        }
        if cfg.nscc_rto.0 == Nanos::ZERO {
            return Err("nscc_rto: must be above 0s".into());
        }
        Ok(())
    }

    fn new(cfg: &NsccConfig, info: &FlowInfo) -> Self {
        let mss = info.mss_bytes.max(1) as f64;
        let mtu = mss + info.header_bytes as f64;
        let rtt = cfg.nscc_network_rtt.map_or(info.base_rtt, |d| d.0).max(Nanos::from_nanos(1)).as_nanos() as f64;
        let target = cfg.nscc_target_fraction * rtt;
        let rate = info.nic_rate;
        let bdp = rtt * 1e-9 * rate.as_f64() / 8.0;
        let a = bdp / REFERENCE_BDP;
        let b = target / REFERENCE_RTT_NS;
        let max_cwnd = (1.5 * bdp).max(mtu);
        Nscc(Box::new(NsccState {
            rate,
            mtu,

            network_rtt_ns: rtt,
            target_ns: target,
            base_rtt_ns: rtt,
            max_cwnd,
            cwnd: max_cwnd,
            alpha: 4.0 * mss * a * b / target,
            fair: 5.0 * mss * a,
            eta: 0.15 * mss * a,
            fast_scale: 0.25 * a,
            avg_delay_ns: 0.0,
            inc_bytes: 0.0,
            received_bytes: 0.0,
            last_adjust: info.start,
            last_decrease: info.start,
            fast_count: 0.0,
            increasing: false,
            achieved_bytes: 0.0,
            qa_end: None,
            trigger_qa: false,
            bytes_to_ignore: 0.0,
            bytes_ignored: 0.0,
            rto: cfg.nscc_rto.0,
            now: info.start,
        }))
    }
}

impl TransportPolicy for Nscc {
    fn tune(&self, tcp: &mut TcpConfig) {
        tcp.min_rto = self.rto;
        tcp.max_rto = tcp.max_rto.max(self.rto);
        tcp.ecn = true;
    }

    fn init(&mut self, st: &mut CcState) {
        st.cwnd_bytes = self.cwnd as u64;
    }

    fn on_timer(&mut self, _st: &mut CcState, now: Nanos) {
        self.now = self.now.max(now);
    }
}

impl CongestionControl for Nscc {
    fn on_ack(&mut self, st: &mut CcState, ack: &AckSample) {
        self.0.on_ack(st, ack)
    }

    fn on_congestion(&mut self, st: &mut CcState, ev: CongestionEvent) {
        self.0.on_congestion(st, ev)
    }
}

impl NsccState {
    fn on_ack(&mut self, st: &mut CcState, ack: &AckSample) {
        self.now = self.now.max(ack.now);
        let acked = ack.acked_bytes as f64;
        let in_flight = ack.snd_nxt.saturating_sub(ack.snd_una) as f64;
        let marked = ack.ece;
        self.achieved_bytes += acked;
        self.received_bytes += acked;
        self.bytes_ignored += acked;
        let delay = match ack.rtt {
            Some(r) => {
                let raw = r.as_nanos() as f64;
                if raw < self.base_rtt_ns {
                    // The base round trip only falls; the largest window with it.
                    self.base_rtt_ns = raw;
                    self.max_cwnd = (1.5 * self.bdp(raw)).max(self.mtu);
                }
                let d = raw - self.base_rtt_ns;
                self.average(d, marked);
                d
            }
            None => self.avg_delay_ns,
        };
        if self.quick_adapt(ack.now, false, marked, delay, in_flight) {
            st.cwnd_bytes = self.cwnd as u64;
            return;
        }
        match (marked, delay >= self.target_ns) {
            (false, true) => self.inc_bytes += self.fair * acked,
            (false, false) => {
                if delay < FAST_DELAY_NS {
                    self.fast_count += acked;
                    if self.fast_count > self.cwnd || self.increasing {
                        self.cwnd += acked * self.fast_scale;
                        self.increasing = true;
                    } else {
                        self.inc_bytes += self.alpha * acked * (self.target_ns - delay);
                    }
                } else {
                    self.fast_count = 0.0;
                    self.increasing = false;
                    self.inc_bytes += self.alpha * acked * (self.target_ns - delay);
                }
            }
            (true, true) => {
                self.increasing = false;
                self.fast_count = 0.0;
                let since = ack.now.saturating_sub(self.last_decrease).as_nanos() as f64;
                if self.avg_delay_ns > self.target_ns && since > self.base_rtt_ns {
                    let cut = (1.0 - GAMMA * (self.avg_delay_ns - self.target_ns) / self.avg_delay_ns).max(0.5);
                    self.cwnd = (self.cwnd * cut).max(self.mtu);
                    self.last_decrease = ack.now;
                }
            }
            (true, false) => {}
        }
        self.bound();
        self.fulfill(ack.now);
        self.bound();
        st.cwnd_bytes = self.cwnd as u64;
    }

    fn on_congestion(&mut self, st: &mut CcState, ev: CongestionEvent) {
        match ev {
            // A NACK (a trimmed packet): its bytes ignored, a delay of a network round trip
            // into the average, quick adapt asked for; else one packet off.
            CongestionEvent::Loss { flight_bytes } => {
                self.bytes_ignored += self.mtu;
                self.average(self.network_rtt_ns, true);
                self.trigger_qa = true;
                if !self.quick_adapt(self.now, true, true, 0.0, flight_bytes as f64) {
                    self.cwnd -= self.mtu;
                }
            }
            CongestionEvent::Timeout { .. } => self.cwnd -= self.mtu,
            CongestionEvent::Ecn { .. } | CongestionEvent::Notification { .. } => {}
        }
        self.bound();
        st.cwnd_bytes = self.cwnd as u64;
    }
}

#[cfg(test)]
mod tests;
