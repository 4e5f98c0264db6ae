//! Congestion control: one small trait, one file per algorithm, static dispatch.
//!
//! A new algorithm is one file here (its state, an `XConfig` whose `Default` holds the
//! published values, the trait impl and its unit tests) plus one line in [`AnyCc`],
//! [`CcConfig`] and [`REGISTRY`].
//!
//! The sender keeps the window in [`CcState`] and calls the hooks:
//! - [`CongestionControl::on_ack`] for every ACK outside loss recovery that acknowledges new
//!   data (or carries an ECN echo);
//! - [`CongestionControl::on_congestion`] once per window on loss, on ECN echo, or on timeout;
//! - [`CongestionControl::on_feedback`] with the router header an ACK echoes.

pub mod atcp;
pub mod dctcp;
pub mod newreno;

use crate::params::Params;
use fctlab_engine::{BitsPerSec, Nanos};
use fctlab_net::RouterHeader;

pub use atcp::{Atcp, AtcpConfig, WeightFunction};
pub use dctcp::{Dctcp, DctcpConfig};
pub use newreno::{NewReno, NewRenoConfig};

/// What an algorithm may know about its flow when it is created.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct FlowInfo {
    pub start: Nanos,
    /// Relative deadline of the flow, if it has one.
    pub deadline: Option<Nanos>,
}

/// The window state the sender and the algorithm share.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct CcState {
    pub cwnd_bytes: u64,
    pub ssthresh_bytes: u64,
    pub mss_bytes: u64,
}

impl CcState {
    pub fn in_slow_start(&self) -> bool {
        self.cwnd_bytes < self.ssthresh_bytes
    }
}

/// What one ACK tells the algorithm.
#[derive(Copy, Clone, Debug, Default)]
pub struct AckSample {
    pub now: Nanos,
    /// Newly acknowledged bytes (cumulative ACK advance).
    pub acked_bytes: u64,
    /// Of those, bytes the receiver reports as CE-marked.
    pub ce_bytes: u64,
    /// The ACK carries ECN-echo.
    pub ece: bool,
    pub rtt: Option<Nanos>,
    pub snd_una: u64,
    pub snd_nxt: u64,
    /// Bytes handed to the network so far (first transmissions), for size-aware algorithms.
    pub bytes_sent: u64,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum CongestionEvent {
    /// Fast retransmit: a loss detected by duplicate ACKs or SACK.
    Loss { flight_bytes: u64 },
    /// ECN echo (at most once per window).
    Ecn { flight_bytes: u64 },
    /// Retransmission timeout.
    Timeout { flight_bytes: u64 },
}

/// The congestion-control hooks. Defaults are Reno's behaviour or no-ops.
pub trait CongestionControl {
    fn on_ack(&mut self, st: &mut CcState, ack: &AckSample);

    /// Multiplicative decrease. Default: RFC 5681, ssthresh = max(flight/2, 2 MSS); the window
    /// falls to ssthresh (loss, ECN) or to one segment (timeout).
    fn on_congestion(&mut self, st: &mut CcState, ev: CongestionEvent) {
        reno_decrease(st, ev, 0.5)
    }

    /// Router feedback echoed by the receiver.
    fn on_feedback(&mut self, _st: &mut CcState, _hdr: &RouterHeader) {}

    /// A rate to pace at, for rate-based algorithms.
    fn pacing_rate(&self) -> Option<BitsPerSec> {
        None
    }

    /// The flow's current weight, for weighted algorithms (reported in traces).
    fn weight(&self) -> Option<f64> {
        None
    }
}

/// Reno-style decrease by `beta` (0.5 halves), shared by the algorithms that keep it.
pub fn reno_decrease(st: &mut CcState, ev: CongestionEvent, beta: f64) {
    let two = 2 * st.mss_bytes;
    match ev {
        CongestionEvent::Loss { flight_bytes } | CongestionEvent::Ecn { flight_bytes } => {
            st.ssthresh_bytes = ((flight_bytes as f64 * beta) as u64).max(two);
            st.cwnd_bytes = st.ssthresh_bytes;
        }
        CongestionEvent::Timeout { flight_bytes } => {
            st.ssthresh_bytes = ((flight_bytes as f64 * beta) as u64).max(two);
            st.cwnd_bytes = st.mss_bytes;
        }
    }
}

/// Slow start with appropriate byte counting (RFC 3465, L = 2 MSS). Returns the acked bytes
/// left over once the window reaches ssthresh (to be counted in congestion avoidance).
pub fn slow_start(st: &mut CcState, acked: u64) -> u64 {
    let inc = acked.min(2 * st.mss_bytes);
    let room = st.ssthresh_bytes.saturating_sub(st.cwnd_bytes);
    if inc <= room {
        st.cwnd_bytes += inc;
        0
    } else {
        // Only the capped increase counts: a stretch ACK (after a timeout, one cumulative ACK
        // can cover megabytes of out-of-order data) must not turn into window growth.
        st.cwnd_bytes += room;
        inc - room
    }
}

/// Congestion avoidance by byte counting: `segments_per_rtt` MSS per window of acked bytes.
/// `acc` carries the acked bytes not yet turned into window growth.
pub fn additive_increase(st: &mut CcState, acked: u64, segments_per_rtt: f64, acc: &mut u64) {
    // At most one window per ACK counts (a stretch ACK grows the window by at most
    // `segments_per_rtt` segments, as over one round trip).
    *acc += acked.min(st.cwnd_bytes.max(1));
    let w = st.cwnd_bytes.max(1);
    if *acc >= w {
        let windows = *acc / w;
        *acc -= windows * w;
        st.cwnd_bytes += (windows as f64 * segments_per_rtt * st.mss_bytes as f64).round() as u64;
    }
}

/// Static dispatch over every algorithm.
#[derive(Clone, Debug)]
pub enum AnyCc {
    NewReno(NewReno),
    Dctcp(Dctcp),
    Atcp(Atcp),
}

macro_rules! each_cc {
    ($self:expr, $c:ident => $body:expr) => {
        match $self {
            AnyCc::NewReno($c) => $body,
            AnyCc::Dctcp($c) => $body,
            AnyCc::Atcp($c) => $body,
        }
    };
}

impl AnyCc {
    #[inline]
    pub fn on_ack(&mut self, st: &mut CcState, ack: &AckSample) {
        each_cc!(self, c => c.on_ack(st, ack))
    }
    #[inline]
    pub fn on_congestion(&mut self, st: &mut CcState, ev: CongestionEvent) {
        each_cc!(self, c => c.on_congestion(st, ev))
    }
    #[inline]
    pub fn on_feedback(&mut self, st: &mut CcState, hdr: &RouterHeader) {
        each_cc!(self, c => c.on_feedback(st, hdr))
    }
    pub fn pacing_rate(&self) -> Option<BitsPerSec> {
        each_cc!(self, c => c.pacing_rate())
    }
    pub fn weight(&self) -> Option<f64> {
        each_cc!(self, c => c.weight())
    }
}

/// A validated configuration of one algorithm; builds a fresh controller per connection.
#[derive(Clone, Debug, PartialEq)]
pub enum CcConfig {
    NewReno(NewRenoConfig),
    Dctcp(DctcpConfig),
    Atcp(AtcpConfig),
}

impl CcConfig {
    /// A fresh controller for one connection.
    pub fn build(&self, info: &FlowInfo) -> AnyCc {
        match self {
            CcConfig::NewReno(c) => AnyCc::NewReno(NewReno::new(c.clone())),
            CcConfig::Dctcp(c) => AnyCc::Dctcp(Dctcp::new(c.clone())),
            CcConfig::Atcp(c) => AnyCc::Atcp(Atcp::new(c.clone(), info)),
        }
    }
    /// The registry name reported in results.
    pub fn name(&self) -> &'static str {
        match self {
            CcConfig::NewReno(_) => "tcp",
            CcConfig::Dctcp(_) => "dctcp",
            CcConfig::Atcp(_) => "atcp",
        }
    }
    /// Whether data packets of this algorithm are ECN-capable regardless of `[transport] ecn`.
    pub fn requires_ecn(&self) -> bool {
        matches!(self, CcConfig::Dctcp(_))
    }
}

/// One registry entry: names, the parameter keys the algorithm reads, and its parser.
pub struct Registration {
    pub names: &'static [&'static str],
    pub keys: &'static [&'static str],
    pub parse: fn(&Params) -> Result<CcConfig, String>,
}

/// Every algorithm, by scenario name (first name is canonical).
pub static REGISTRY: &[Registration] = &[
    Registration { names: &["tcp", "newreno", "reno"], keys: newreno::KEYS, parse: |p| NewRenoConfig::from_params(p).map(CcConfig::NewReno) },
    Registration { names: &["dctcp"], keys: dctcp::KEYS, parse: |p| DctcpConfig::from_params(p).map(CcConfig::Dctcp) },
    Registration { names: &["atcp"], keys: atcp::KEYS, parse: |p| AtcpConfig::from_params(p).map(CcConfig::Atcp) },
];

/// Looks up `name` and parses its parameters; unknown keys are errors.
pub fn configure(name: &str, params: &Params) -> Result<CcConfig, String> {
    let reg = REGISTRY.iter().find(|r| r.names.contains(&name)).ok_or_else(|| {
        let known: Vec<&str> = REGISTRY.iter().flat_map(|r| r.names.iter().copied()).collect();
        format!("unknown protocol \"{name}\" (known: {})", known.join(", "))
    })?;
    (reg.parse)(params)
}

/// Parameter keys accepted by protocol `name` (empty if unknown).
pub fn keys_of(name: &str) -> &'static [&'static str] {
    REGISTRY.iter().find(|r| r.names.contains(&name)).map_or(&[], |r| r.keys)
}

/// Every parameter key of every algorithm (a key valid for some protocol).
pub fn all_keys() -> Vec<&'static str> {
    let mut v: Vec<&str> = REGISTRY.iter().flat_map(|r| r.keys.iter().copied()).collect();
    v.sort();
    v.dedup();
    v
}
