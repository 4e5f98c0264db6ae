//! Congestion control: one small trait, one file per algorithm, static dispatch.
//!
//! A new algorithm is one file here plus one line in the [`protocols!`] list at the bottom of
//! this file. The file holds the algorithm's state, its parameters as a serde struct whose
//! `Default` holds the published values, the [`CongestionControl`] hooks, the
//! [`TransportPolicy`] hooks it needs (usually none: `impl TransportPolicy for X {}`), the
//! [`Protocol`] registration (its scenario names, the transports it runs on and how to build
//! it) and its unit tests. The scenario parser, the `known:` lists of error messages,
//! `fctlab._core.protocols()` and the results pick the algorithm up from that line.
//! `docs/protocols.md` walks through an example.
//!
//! A congestion control owns the window or the rate and nothing else: the transport
//! (`crate::transport`, the TCP sender) keeps the window in [`CcState`] and calls its hooks:
//! - [`CongestionControl::on_ack`] for every ACK outside loss recovery that acknowledges new
//!   data (or carries an ECN echo): bytes acknowledged, of them CE-marked, an RTT sample;
//! - [`CongestionControl::on_congestion`] once per window on loss, on ECN echo, or on timeout;
//! - [`CongestionControl::on_feedback`] with the router header an ACK echoes.
//!
//! It never sees the transport's internals (its scoreboard, its recovery, its timers): what it
//! needs of them comes in the samples. An algorithm that wants more of the transport (its
//! settings, tags on its packets, grants) asks through [`TransportPolicy`].
//!
//! Router-assisted algorithms (`Protocol::ROUTER_ASSISTED`) also fill a [`RouterHeader`] on
//! the packets they send ([`CongestionControl::stamp`]) and bring a switch side: a
//! [`PortControl`] that every output port of the run keeps (O(1) state per port) and that
//! reads and rewrites the header of each packet carrying one. Rate-based algorithms return a
//! rate from [`CongestionControl::pacing_rate`] and the sender paces at it.
//!
//! Algorithms that schedule in the network (`Protocol::TAGS_PACKETS`: pFabric, PIAS, Homa) give
//! each packet they send a band and a rank ([`TransportPolicy::priority`]), which the
//! switches' queue disciplines read; their ACKs go in band 0 with rank 0. An algorithm that
//! brings its own loss recovery adjusts the TCP settings of its flows
//! ([`TransportPolicy::tune`]).
//!
//! Receiver-driven algorithms (Homa, on the `homa` transport) bring a receiving host's side, a
//! [`HostReceiver`] that every host receiving their flows keeps: it sees each data packet's
//! message and answers with grants, which the flow's receiver sends in the algorithm's header
//! instead of per-packet acknowledgements. The sender hands them to
//! [`TransportPolicy::on_grant`], sends up to [`TransportPolicy::send_limit`] and resends what
//! [`TransportPolicy::take_resend`] asks.

use crate::config::TcpConfig;
pub use crate::transport::{CcState, HostReceiver, PacketPriority, SendContext, TransportKind, TransportPolicy};
use fctlab_engine::{BitsPerSec, Nanos};
use fctlab_net::{PacketKind, RouterHeader};
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::fmt;

/// Parameters as JSON (see [`CcConfig::params_json`]).
pub type Json = serde_json::Value;

/// What an algorithm may know about its flow when it is created.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct FlowInfo {
    pub start: Nanos,
    /// Relative deadline of the flow, if it has one.
    pub deadline: Option<Nanos>,
    /// Bytes the flow sends (None: long-lived).
    pub size: Option<u64>,
    /// Rate of the sender's own link.
    pub nic_rate: BitsPerSec,
    /// Bytes of header on each of its packets on the wire (`header_bytes`), for algorithms
    /// that turn a payload rate into a rate on the wire.
    pub header_bytes: u32,
    /// The round trip of a full data packet and its acknowledgement on the flow's paths with
    /// no queueing (the `roce` transport's flows; zero for others): HPCC's base RTT.
    pub base_rtt: Nanos,
    /// Switches on the flow's data path (Swift's hop scaling).
    pub hops: u32,
    /// Payload bytes per packet (`mss`).
    pub mss_bytes: u32,
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
    /// A congestion notification packet from the receiver (the `roce` transport's CNP).
    Notification { flight_bytes: u64 },
}

/// The congestion-control hooks: seven, each a no-op by default. An algorithm keeps Reno's
/// decrease by calling [`reno_decrease`] from `on_congestion`, and its growth by calling
/// [`slow_start`] and [`additive_increase`] from `on_ack`.
pub trait CongestionControl {
    /// An ACK of new data (or an ECN echo) outside loss recovery: grow the window.
    fn on_ack(&mut self, _st: &mut CcState, _ack: &AckSample) {}

    /// A congestion signal of kind `ev`, at most once per window: the multiplicative decrease.
    fn on_congestion(&mut self, _st: &mut CcState, _ev: CongestionEvent) {}

    /// Router feedback echoed by the receiver.
    fn on_feedback(&mut self, _st: &mut CcState, _hdr: &RouterHeader) {}

    /// A rate to pace at, for rate-based algorithms (`Some(0)`: none granted yet). The sender
    /// then releases one segment per `size / rate`, within a window of two rate x RTT products.
    fn pacing_rate(&self) -> Option<BitsPerSec> {
        None
    }

    /// Fills the router header of a packet the flow is about to send; true to carry it (the
    /// sender then adds `hdr.wire_bytes` to the packet and sets `flags::ROUTER`).
    fn stamp(&mut self, _ctx: &SendContext, _hdr: &mut RouterHeader) -> bool {
        false
    }

    /// For paced flows: the longest the sender may stay silent. When no data packet is due
    /// within it, a header-only packet goes out instead (so that a flow whose rate is below
    /// one packet per round still asks for a rate every round and never starves).
    fn round(&self) -> Option<Nanos> {
        None
    }

    /// The flow's current weight, for weighted algorithms (reported in traces; ns-2's window
    /// model opens by it).
    fn weight(&self) -> Option<f64> {
        None
    }
}

/// Reno-style decrease by `beta` (0.5 halves), shared by the algorithms that keep it.
pub fn reno_decrease(st: &mut CcState, ev: CongestionEvent, beta: f64) {
    let two = 2 * st.mss_bytes;
    match ev {
        CongestionEvent::Loss { flight_bytes }
        | CongestionEvent::Ecn { flight_bytes }
        | CongestionEvent::Notification { flight_bytes } => {
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

/// A congestion control as the scenario and the simulation see it: its names, its
/// parameters and how to build one controller per connection.
pub trait Protocol: CongestionControl + TransportPolicy + Clone + fmt::Debug + Sized {
    /// Names in scenario files (`protocol = "..."`); the first is the canonical one reported
    /// in results.
    const NAMES: &'static [&'static str];
    /// The transports the algorithm runs on; its flows run on the first.
    const TRANSPORTS: &'static [TransportKind] = &[TransportKind::Tcp];
    /// ns-2.35 runs the algorithm as its `Agent/TCP` (tcp, and ATCP by `increase_num_`): under
    /// the `ns2` profile its window, its ECN reaction and its loss recovery are ns-2's. The
    /// others keep their own reaction and Linux's recovery whatever the profile.
    const NS2_AGENT: bool = false;
    /// Data packets are ECN-capable whatever `[transport] ecn` says.
    const REQUIRES_ECN: bool = false;
    /// The parameters, as keys of `[transport]`, a flow or a workload entry. A serde struct
    /// with `deny_unknown_fields` and `default`; its `Default` holds the published values.
    type Config: DeserializeOwned + Serialize + Clone + fmt::Debug + PartialEq + Default;
    /// Checks parameter values that their types cannot (ranges); the message names the key.
    fn check(_cfg: &Self::Config) -> Result<(), String> {
        Ok(())
    }
    /// A fresh controller for one connection.
    fn new(cfg: &Self::Config, info: &FlowInfo) -> Self;
    /// Switches take part: the flow opens with a SYN and closes with a FIN whatever
    /// `[transport] handshake` says, and every output port runs [`Protocol::port`].
    const ROUTER_ASSISTED: bool = false;
    /// The switch side: the control state of one output port (router-assisted algorithms).
    fn port(_cfg: &Self::Config, _link: &PortInfo) -> Option<Box<dyn PortControl>> {
        None
    }
    /// The parameters the switch side reads (keys of `Config`): every flow of a run that uses
    /// the protocol must give them the same values, since the switches run one configuration.
    const PORT_KEYS: &'static [&'static str] = &[];
    /// Whether the switch side can run on an output port (HPCC's telemetry codes a few link
    /// rates only); the message says why not.
    fn check_port(_cfg: &Self::Config, _link: &PortInfo) -> Result<(), String> {
        Ok(())
    }
    /// The sender sets each packet's band and rank ([`TransportPolicy::priority`]).
    const TAGS_PACKETS: bool = false;
    /// The receiving host's side, for algorithms on a receiver-driven transport: the flow's
    /// receiver sends what its host's [`HostReceiver`] grants instead of per-packet
    /// acknowledgements.
    fn receiver(_cfg: &Self::Config) -> Option<Box<dyn HostReceiver>> {
        None
    }
    /// The parameters the host side reads (keys of `Config`): every flow of a run that uses
    /// the protocol must give them the same values, since each host runs one configuration.
    const HOST_KEYS: &'static [&'static str] = &[];
    /// The `ndp` transport: the fraction of a receiving host's link rate at which its pacer
    /// sends pulls (read from the first of the host's flows; `HOST_KEYS` keeps them equal).
    fn pull_rate(_cfg: &Self::Config) -> Option<f64> {
        None
    }
}

/// The output port a [`PortControl`] runs on.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct PortInfo {
    pub capacity: BitsPerSec,
    pub delay: Nanos,
    /// The port is a host's NIC (its link leaves a host), not a switch's output.
    pub host_nic: bool,
}

/// Gain of the per-packet running average of the RTT field at a port (the `RTT_GAIN` that RCP's
/// ns-2 router defines; its running code averages by bytes per interval instead).
pub const RTT_GAIN: f64 = 0.02;
/// Control intervals without a packet after which a port stops its timer.
pub const IDLE_INTERVALS: u32 = 10;

/// The running average of the RTT field that packets carry through a port (RCP's d, the t_p
/// of RACS and SDC): exponential with gain [`RTT_GAIN`] per packet that carries one, from a
/// configured starting value.
#[derive(Copy, Clone, Debug)]
pub struct PortRtt {
    avg_s: f64,
}

impl PortRtt {
    pub fn new(initial: Nanos) -> PortRtt {
        PortRtt { avg_s: initial.as_secs_f64() }
    }
    /// One packet's RTT field (0, not measured yet, is skipped).
    #[inline]
    pub fn sample(&mut self, rtt_ns: u32) {
        if rtt_ns > 0 {
            self.avg_s += RTT_GAIN * (rtt_ns as f64 * 1e-9 - self.avg_s);
        }
    }
    /// The average, seconds.
    pub fn secs(&self) -> f64 {
        self.avg_s
    }
    /// The average as a control interval (at least 1 us).
    pub fn interval(&self) -> Nanos {
        Nanos::from_secs_f64(self.avg_s).max(Nanos::from_micros(1))
    }
}

/// The port's state as a packet arrives or the control interval ends.
#[derive(Copy, Clone, Debug, Default)]
pub struct PortView {
    pub now: Nanos,
    /// Packets and bytes waiting in the buffer (the one being transmitted excluded).
    pub queue_pkts: u32,
    pub queue_bytes: u64,
    /// Bytes the port has delivered across its link so far (HPCC's transmitted bytes).
    pub tx_bytes: u64,
}

/// The switch side of a router-assisted protocol: the state of one output port. It sees
/// every packet that carries a router header as the packet is offered to the port (before
/// the buffer decides), and runs once per control interval while such packets pass.
pub trait PortControl: fmt::Debug + Send {
    /// A packet carrying a router header is offered to the port; the header may be rewritten.
    fn on_packet(&mut self, v: &PortView, kind: PacketKind, wire_bytes: u32, hdr: &mut RouterHeader);
    /// The control interval ended at `v.now`. Returns the next interval, or None when the port
    /// has been idle long enough to stop (the next packet starts it again).
    fn on_tick(&mut self, v: &PortView) -> Option<Nanos>;
    /// The control interval to use when the port starts (again).
    fn interval(&self) -> Nanos;
    /// The rate the port currently offers, bits per second (for traces and tests).
    fn offered_rate(&self) -> Option<f64> {
        None
    }
    /// Active flows per class, highest class first (class-based protocols; for tests).
    fn class_counts(&self) -> Option<Vec<u32>> {
        None
    }
}

/// A parameter error: the key it concerns (if one) and what was expected.
#[derive(Clone, Debug, PartialEq)]
pub struct ParamError {
    pub key: Option<String>,
    pub message: String,
}

/// One registry entry: names, parameter keys and defaults, and the parser.
pub struct Registration {
    pub names: &'static [&'static str],
    /// The parameter keys the algorithm reads (its config struct's fields).
    pub keys: fn() -> &'static [&'static str],
    /// The published defaults of its parameters, as JSON.
    pub defaults: fn() -> serde_json::Value,
    pub requires_ecn: bool,
    pub router_assisted: bool,
    /// The transports it runs on (see [`Protocol::TRANSPORTS`]).
    pub transports: &'static [TransportKind],
    parse: fn(toml::Table) -> Result<CcConfig, ParamError>,
}

fn parse_config<P: Protocol>(table: toml::Table) -> Result<P::Config, ParamError> {
    let cfg: P::Config = serde_path_to_error::deserialize(toml::Value::Table(table)).map_err(|e| {
        let key = e.path().to_string();
        ParamError { key: (key != ".").then_some(key), message: e.into_inner().to_string() }
    })?;
    P::check(&cfg).map_err(|message| ParamError { key: None, message })?;
    Ok(cfg)
}

/// Declares every algorithm: `module::Type` per line, one line per algorithm. Generates the
/// module declarations, [`AnyCc`] (static dispatch over controllers), [`CcConfig`] (one
/// validated configuration) and [`REGISTRY`].
macro_rules! protocols {
    ($($(#[$attr:meta])* $module:ident :: $ty:ident),* $(,)?) => {
        $($(#[$attr])* pub mod $module;)*
        $($(#[$attr])* pub use $module::$ty;)*

        /// Static dispatch over every algorithm.
        #[derive(Clone, Debug)]
        pub enum AnyCc {
            $($(#[$attr])* $ty($ty),)*
        }

        impl AnyCc {
            #[inline]
            pub fn on_ack(&mut self, st: &mut CcState, ack: &AckSample) {
                match self {
                    $($(#[$attr])* AnyCc::$ty(c) => c.on_ack(st, ack),)*
                }
            }
            #[inline]
            pub fn on_congestion(&mut self, st: &mut CcState, ev: CongestionEvent) {
                match self {
                    $($(#[$attr])* AnyCc::$ty(c) => c.on_congestion(st, ev),)*
                }
            }
            #[inline]
            pub fn on_feedback(&mut self, st: &mut CcState, hdr: &RouterHeader) {
                match self {
                    $($(#[$attr])* AnyCc::$ty(c) => c.on_feedback(st, hdr),)*
                }
            }
            pub fn pacing_rate(&self) -> Option<BitsPerSec> {
                match self {
                    $($(#[$attr])* AnyCc::$ty(c) => c.pacing_rate(),)*
                }
            }
            pub fn weight(&self) -> Option<f64> {
                match self {
                    $($(#[$attr])* AnyCc::$ty(c) => c.weight(),)*
                }
            }
            pub fn deadline(&self) -> Option<Nanos> {
                match self {
                    $($(#[$attr])* AnyCc::$ty(c) => c.deadline(),)*
                }
            }
            pub fn on_timer(&mut self, st: &mut CcState, now: Nanos) {
                match self {
                    $($(#[$attr])* AnyCc::$ty(c) => c.on_timer(st, now),)*
                }
            }
            pub fn on_sent(&mut self, now: Nanos, wire_bytes: u64) {
                match self {
                    $($(#[$attr])* AnyCc::$ty(c) => c.on_sent(now, wire_bytes),)*
                }
            }
            pub fn init(&mut self, st: &mut CcState) {
                match self {
                    $($(#[$attr])* AnyCc::$ty(c) => c.init(st),)*
                }
            }
            #[inline]
            pub fn stamp(&mut self, ctx: &SendContext, hdr: &mut RouterHeader) -> bool {
                match self {
                    $($(#[$attr])* AnyCc::$ty(c) => c.stamp(ctx, hdr),)*
                }
            }
            pub fn round(&self) -> Option<Nanos> {
                match self {
                    $($(#[$attr])* AnyCc::$ty(c) => c.round(),)*
                }
            }
            #[inline]
            pub fn priority(&self, ctx: &SendContext) -> PacketPriority {
                match self {
                    $($(#[$attr])* AnyCc::$ty(c) => c.priority(ctx),)*
                }
            }
            pub fn tune(&self, tcp: &mut TcpConfig) {
                match self {
                    $($(#[$attr])* AnyCc::$ty(c) => c.tune(tcp),)*
                }
            }
            pub fn probe_after_timeouts(&self) -> Option<u32> {
                match self {
                    $($(#[$attr])* AnyCc::$ty(c) => c.probe_after_timeouts(),)*
                }
            }
            #[inline]
            pub fn send_limit(&self) -> Option<u64> {
                match self {
                    $($(#[$attr])* AnyCc::$ty(c) => c.send_limit(),)*
                }
            }
            pub fn take_resend(&mut self) -> Option<(u64, u64)> {
                match self {
                    $($(#[$attr])* AnyCc::$ty(c) => c.take_resend(),)*
                }
            }
            pub fn halving_per_episode(&self) -> bool {
                match self {
                    $($(#[$attr])* AnyCc::$ty(c) => c.halving_per_episode(),)*
                }
            }
            /// Whether ns-2 runs it as its `Agent/TCP` (see [`Protocol::NS2_AGENT`]).
            pub fn ns2_agent(&self) -> bool {
                match self {
                    $($(#[$attr])* AnyCc::$ty(_) => <$ty as Protocol>::NS2_AGENT,)*
                }
            }
            /// A header the receiver sent back: a router's feedback to the congestion control or,
            /// on a receiver-driven transport, a grant to the transport policy (one dispatch).
            #[inline]
            pub fn on_echo(&mut self, st: &mut CcState, hdr: &RouterHeader) {
                match self {
                    $($(#[$attr])* AnyCc::$ty(c) => {
                        if <$ty as Protocol>::TRANSPORTS[0].receiver_driven() {
                            c.on_grant(hdr)
                        } else {
                            c.on_feedback(st, hdr)
                        }
                    })*
                }
            }
            pub fn on_grant(&mut self, hdr: &RouterHeader) {
                match self {
                    $($(#[$attr])* AnyCc::$ty(c) => c.on_grant(hdr),)*
                }
            }
            /// Whether the sender tags its packets (see [`Protocol::TAGS_PACKETS`]).
            pub fn tags_packets(&self) -> bool {
                match self {
                    $($(#[$attr])* AnyCc::$ty(_) => <$ty as Protocol>::TAGS_PACKETS,)*
                }
            }
            /// Whether the receiving host grants (the algorithm's transport is receiver-driven).
            pub fn receiver_driven(&self) -> bool {
                match self {
                    $($(#[$attr])* AnyCc::$ty(_) => <$ty as Protocol>::TRANSPORTS[0].receiver_driven(),)*
                }
            }
            /// Whether switches take part (see [`Protocol::ROUTER_ASSISTED`]).
            #[inline]
            pub fn router_assisted(&self) -> bool {
                match self {
                    $($(#[$attr])* AnyCc::$ty(_) => <$ty as Protocol>::ROUTER_ASSISTED,)*
                }
            }
        }

        /// A validated configuration of one algorithm; builds a fresh controller per connection.
        #[derive(Clone, Debug, PartialEq)]
        pub enum CcConfig {
            $($(#[$attr])* $ty(<$ty as Protocol>::Config),)*
        }

        impl CcConfig {
            /// A fresh controller for one connection.
            pub fn build(&self, info: &FlowInfo) -> AnyCc {
                match self {
                    $($(#[$attr])* CcConfig::$ty(c) => AnyCc::$ty(<$ty as Protocol>::new(c, info)),)*
                }
            }
            /// The registry name reported in results.
            pub fn name(&self) -> &'static str {
                match self {
                    $($(#[$attr])* CcConfig::$ty(_) => <$ty as Protocol>::NAMES[0],)*
                }
            }
            /// Whether data packets of this algorithm are ECN-capable regardless of `[transport] ecn`.
            pub fn requires_ecn(&self) -> bool {
                match self {
                    $($(#[$attr])* CcConfig::$ty(_) => <$ty as Protocol>::REQUIRES_ECN,)*
                }
            }
            /// Whether switches take part (see [`Protocol::ROUTER_ASSISTED`]).
            pub fn router_assisted(&self) -> bool {
                match self {
                    $($(#[$attr])* CcConfig::$ty(_) => <$ty as Protocol>::ROUTER_ASSISTED,)*
                }
            }
            /// Whether the sender tags its packets (see [`Protocol::TAGS_PACKETS`]).
            pub fn tags_packets(&self) -> bool {
                match self {
                    $($(#[$attr])* CcConfig::$ty(_) => <$ty as Protocol>::TAGS_PACKETS,)*
                }
            }
            /// The transport its flows run on (see [`Protocol::TRANSPORTS`]).
            pub fn transport(&self) -> TransportKind {
                match self {
                    $($(#[$attr])* CcConfig::$ty(_) => <$ty as Protocol>::TRANSPORTS[0],)*
                }
            }
            /// Whether the receiving host grants (its transport is receiver-driven).
            pub fn receiver_driven(&self) -> bool {
                self.transport().receiver_driven()
            }
            /// The pull rate of a receiving host's pacer (the `ndp` transport).
            pub fn pull_rate(&self) -> Option<f64> {
                match self {
                    $($(#[$attr])* CcConfig::$ty(c) => <$ty as Protocol>::pull_rate(c),)*
                }
            }
            /// The receiving host's side, for receiver-driven algorithms.
            pub fn receiver(&self) -> Option<Box<dyn HostReceiver>> {
                match self {
                    $($(#[$attr])* CcConfig::$ty(c) => <$ty as Protocol>::receiver(c),)*
                }
            }
            /// The switch side for one output port, for router-assisted algorithms.
            pub fn port(&self, link: &PortInfo) -> Option<Box<dyn PortControl>> {
                match self {
                    $($(#[$attr])* CcConfig::$ty(c) => <$ty as Protocol>::port(c, link),)*
                }
            }
            /// Whether the switch side can run on a port (see [`Protocol::check_port`]).
            pub fn check_port(&self, link: &PortInfo) -> Result<(), String> {
                match self {
                    $($(#[$attr])* CcConfig::$ty(c) => <$ty as Protocol>::check_port(c, link),)*
                }
            }
            /// The parameters the host side reads (see [`Protocol::HOST_KEYS`]).
            pub fn host_keys(&self) -> &'static [&'static str] {
                match self {
                    $($(#[$attr])* CcConfig::$ty(_) => <$ty as Protocol>::HOST_KEYS,)*
                }
            }
            /// The parameters the switch side reads (see [`Protocol::PORT_KEYS`]).
            pub fn port_keys(&self) -> &'static [&'static str] {
                match self {
                    $($(#[$attr])* CcConfig::$ty(_) => <$ty as Protocol>::PORT_KEYS,)*
                }
            }
            /// The parameters as JSON (keys as in scenario files, sizes in bytes).
            pub fn params_json(&self) -> serde_json::Value {
                match self {
                    $($(#[$attr])* CcConfig::$ty(c) => serde_json::to_value(c).unwrap_or(serde_json::Value::Null),)*
                }
            }
        }

        /// Every algorithm, by scenario name (first name is canonical).
        pub static REGISTRY: &[Registration] = &[
            $($(#[$attr])* Registration {
                names: <$ty as Protocol>::NAMES,
                keys: fctlab_engine::quantity::fields_of::<<$ty as Protocol>::Config>,
                defaults: || serde_json::to_value(<<$ty as Protocol>::Config as Default>::default()).unwrap_or(serde_json::Value::Null),
                requires_ecn: <$ty as Protocol>::REQUIRES_ECN,
                router_assisted: <$ty as Protocol>::ROUTER_ASSISTED,
                transports: <$ty as Protocol>::TRANSPORTS,
                parse: |t| parse_config::<$ty>(t).map(CcConfig::$ty),
            },)*
        ];
    };
}

/// The registry entry of protocol `name`, or the error naming the known ones.
pub fn lookup(name: &str) -> Result<&'static Registration, String> {
    REGISTRY
        .iter()
        .find(|r| r.names.contains(&name))
        .ok_or_else(|| format!("unknown protocol \"{name}\" (known: {})", known_names().join(", ")))
}

/// Every protocol name, canonical names first within each entry.
pub fn known_names() -> Vec<&'static str> {
    REGISTRY.iter().flat_map(|r| r.names.iter().copied()).collect()
}

impl Registration {
    /// Parses this protocol's parameters from a table of keys; unknown keys are errors.
    pub fn configure(&self, params: toml::Table) -> Result<CcConfig, ParamError> {
        (self.parse)(params)
    }
}

/// Looks up `name` and parses its parameters; unknown keys are errors.
pub fn configure(name: &str, params: toml::Table) -> Result<CcConfig, ParamError> {
    lookup(name).map_err(|message| ParamError { key: None, message })?.configure(params)
}

/// Every parameter key of every algorithm (a key valid for some protocol).
pub fn all_keys() -> Vec<&'static str> {
    let mut v: Vec<&str> = REGISTRY.iter().flat_map(|r| (r.keys)().iter().copied()).collect();
    v.sort();
    v.dedup();
    v
}

// The algorithms. One line each; `#[cfg(...)]` attributes are allowed.
protocols! {
    newreno::NewReno,
    cubic::Cubic,
    dctcp::Dctcp,
    d2tcp::D2tcp,
    atcp::Atcp,
    rcp::Rcp,
    racs::Racs,
    d3::D3,
    sdc::Sdc,
    pfabric::PFabric,
    pias::Pias,
    homa::Homa,
    line_rate::LineRate,
    dcqcn::Dcqcn,
    timely::Timely,
    hpcc::Hpcc,
    swift::Swift,
    ndp::Ndp,
    nscc::Nscc,
    eqds::Eqds,
    #[cfg(feature = "example-protocols")]
    fixed_window::FixedWindow,
}
