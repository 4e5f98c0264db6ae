//! TCP parameters shared by every connection of a run (the `[transport]` table).

use fctlab_engine::Nanos;

#[derive(Copy, Clone, Debug, PartialEq)]
pub struct TcpConfig {
    /// Maximum segment size: payload bytes per data packet.
    pub mss_bytes: u32,
    /// IP + TCP header bytes added to every packet on the wire (data and ACK).
    pub header_bytes: u32,
    /// Initial congestion window in segments.
    pub initial_cwnd_segments: u32,
    pub min_rto: Nanos,
    pub initial_rto: Nanos,
    pub max_rto: Nanos,
    /// Acknowledge every second full segment (or after `delayed_ack_timeout`).
    pub delayed_ack: bool,
    pub delayed_ack_timeout: Nanos,
    /// Selective acknowledgements and scoreboard-based loss recovery (RFC 2018, RFC 6675).
    pub sack: bool,
    /// ECN-capable transport: data packets carry ECT, the sender reacts to ECE.
    pub ecn: bool,
    /// Open each connection with SYN / SYN-ACK before sending data.
    pub handshake: bool,
    /// Receiver window: bytes the sender may have outstanding.
    pub rwnd_bytes: u64,
    /// Duplicate ACKs (or segments SACKed) that trigger fast retransmit.
    pub dupthresh: u32,
    /// Initial slow-start threshold; None: unlimited (slow start until the first loss).
    pub initial_ssthresh_bytes: Option<u64>,
    /// Retransmission-timer granularity: the RTO is rounded up to a multiple of it (ns-2's
    /// `tcpTick_`). Zero: exact.
    pub rto_granularity: Nanos,
    /// Linux's CWR state after an ECN echo: the window falls to the new ssthresh by
    /// proportional rate reduction (RFC 6937) and does not grow until the data outstanding at
    /// the echo is acknowledged. Off: the window drops at once and keeps growing.
    pub cwr: bool,
    /// Tail loss probe (RFC 8985 section 7, as Linux schedules it): with SACK, outside
    /// recovery, a probe segment goes out 2 SRTT (plus 2 ms, or plus min RTO with one
    /// segment in flight) after the last transmission, if that is before the RTO.
    pub tail_loss_probe: bool,
    /// Loss recovery with SACK: RFC 6675 (with lost-retransmission detection) or ns-2.35's
    /// `Agent/TCP/Sack1` (`tcp/tcp-sack1.cc` with its `ScoreBoardRQ`). Used only with `sack`.
    pub sack_recovery: SackRecovery,
    /// ns-2's `singledup_` limited transmit: each of the first `dupthresh - 1` duplicate ACKs
    /// sends one new segment if it fits in cwnd plus the duplicate ACKs (`TcpAgent::send_one`).
    pub singledup: bool,
    /// ns-2's `TcpAgent::sendmsg`: a flow of S bytes sends ceil(S / mss) full segments.
    pub whole_packets: bool,
    /// The reaction to ECN echoes: Linux/RFC 3168 (ssthresh = flight / 2, at least 2 segments)
    /// or ns-2.35's `TcpAgent::ecn()` and `slowdown()` (see `EcnReaction::Ns2`).
    pub ecn_reaction: EcnReaction,
    /// The window of `tcp` and `atcp`: bytes (RFC 5681 with byte counting) or ns-2.35's
    /// (`WindowModel::Ns2`).
    pub window_model: WindowModel,
    /// RTT sampling, RTO computation and backoff: RFC 6298 or ns-2.35's (`RtoModel::Ns2`).
    pub rto_model: RtoModel,
    /// NewReno recovery without SACK: RFC 6582 or ns-2.35's `Agent/TCP/Newreno`
    /// (`NewRenoRecovery::Ns2`).
    pub newreno_recovery: NewRenoRecovery,
}

/// Defines a two-valued `[transport]` key: its variants and their scenario names.
macro_rules! named_enum {
    ($(#[$m:meta])* $name:ident { $($(#[$vm:meta])* $v:ident = $s:literal),+ $(,)? }) => {
        $(#[$m])*
        #[derive(Copy, Clone, Debug, PartialEq, Eq)]
        pub enum $name { $($(#[$vm])* $v),+ }
        impl $name {
            pub const NAMES: &'static [&'static str] = &[$($s),+];
            pub fn from_name(name: &str) -> Option<Self> {
                match name { $($s => Some($name::$v),)+ _ => None }
            }
            pub fn name(self) -> &'static str {
                match self { $($name::$v => $s),+ }
            }
        }
    };
}

named_enum! {
    /// How `tcp` and `atcp` keep their window (`[transport] window_model`).
    WindowModel {
        /// In bytes: slow start with appropriate byte counting (RFC 3465, L = 2 MSS),
        /// congestion avoidance of one MSS (ATCP: w MSS) per window of acknowledged bytes,
        /// ssthresh = max(flight / 2, 2 MSS) on a loss or timeout.
        Bytes = "bytes",
        /// ns-2.35's `TcpAgent`: cwnd a double in segments, +1 per new ACK in slow start and
        /// `increase_num_ / cwnd` in congestion avoidance (`opencwnd`, `wnd_option_ 1`; ATCP's
        /// weight is `increase_num_`), `slowdown()` halving min(cwnd, rwnd) (`windowd()`) on a
        /// loss or timeout, and int(min(cwnd, rwnd)) whole segments sent (`window()`).
        Ns2 = "ns2",
    }
}

named_enum! {
    /// How RTTs are sampled and the RTO kept (`[transport] rto_model`).
    RtoModel {
        /// RFC 6298 on a timestamp echo of every ACK of new data; the backoff ends on any.
        Rfc6298 = "rfc6298",
        /// ns-2.35's `TcpAgent` without timestamps: one timed segment at a time, its RTT in
        /// whole ticks, SRTT and RTTVAR in fixed point, and the backoff kept until the timed
        /// segment (one first sent after the timeout or fast retransmit) is acknowledged.
        Ns2 = "ns2",
    }
}

named_enum! {
    /// NewReno recovery without SACK (`[transport] newreno_recovery`).
    NewRenoRecovery {
        /// RFC 6582: a new fast retransmit once the cumulative ACK reaches the recovery
        /// point, the window set to ssthresh when recovery ends.
        Rfc6582 = "rfc6582",
        /// ns-2.35's `NewRenoTcpAgent`: partial window deflation that may shrink cwnd, a new
        /// fast retransmit only beyond the recovery point, cwnd kept (and opened) on the ACK
        /// that ends recovery.
        Ns2 = "ns2",
    }
}

/// How a SACK sender recovers from losses (`[transport] sack_recovery`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum SackRecovery {
    /// RFC 6675's pipe and loss rules, with lost-retransmission detection.
    Rfc6675,
    /// ns-2.35's `Sack1TcpAgent`: a pipe counted in packets (`pipe_`), holes below the highest
    /// SACK retransmitted once each in order, a lost retransmission left to the timer.
    Ns2,
}

impl SackRecovery {
    pub const NAMES: &'static [&'static str] = &["rfc6675", "ns2"];
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "rfc6675" => Some(SackRecovery::Rfc6675),
            "ns2" => Some(SackRecovery::Ns2),
            _ => None,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            SackRecovery::Rfc6675 => "rfc6675",
            SackRecovery::Ns2 => "ns2",
        }
    }
}

/// How a sender reacts to ECN echoes (`[transport] ecn_reaction`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum EcnReaction {
    /// RFC 3168 as Linux does it: at most once per window and not in loss recovery, the
    /// algorithm's decrease (for `tcp` ssthresh = max(flight / 2, 2 segments)).
    Linux,
    /// ns-2.35's `TcpAgent::ecn()` (`tcp/tcp.cc`): the window halves (`slowdown`, with
    /// `precisionReduce_`: cwnd = min(cwnd, rwnd) / 2, at least one segment; ssthresh its
    /// whole segments, at least two), once per window of data (`recover_`, shared with loss
    /// recovery), ACKs carrying ECE do not open the window, and the first data packet of a
    /// flow without handshake (seqno 0) is not ECN-capable.
    Ns2,
}

impl EcnReaction {
    pub const NAMES: &'static [&'static str] = &["linux", "ns2"];
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "linux" => Some(EcnReaction::Linux),
            "ns2" => Some(EcnReaction::Ns2),
            _ => None,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            EcnReaction::Linux => "linux",
            EcnReaction::Ns2 => "ns2",
        }
    }
}

/// A named set of TCP settings (`[transport] profile`). Keys given in the scenario override
/// the profile's values.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Profile {
    /// A modern Linux-like TCP: initial window 10, SACK, 1460 B segments, 200 ms minimum RTO.
    Linux,
    /// ns-2.35's `Agent/TCP` defaults, the simulator of the papers (docs/scenarios.md lists
    /// each value with its source line in `tcl/lib/ns-default.tcl`).
    Ns2,
}

impl Profile {
    pub const NAMES: &'static [&'static str] = &["linux", "ns2"];

    pub fn from_name(name: &str) -> Option<Profile> {
        match name {
            "linux" => Some(Profile::Linux),
            "ns2" => Some(Profile::Ns2),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Profile::Linux => "linux",
            Profile::Ns2 => "ns2",
        }
    }

    /// The profile's settings.
    pub fn config(self) -> TcpConfig {
        match self {
            Profile::Linux => TcpConfig::default(),
            // ns-2.35 tcl/lib/ns-default.tcl, Agent/TCP (and Agent/TCPSink for ACKs).
            Profile::Ns2 => TcpConfig {
                mss_bytes: 1000,                              // packetSize_ 1000
                header_bytes: 40,                             // tcpip_base_hdr_size_ 40
                initial_cwnd_segments: 2,                     // windowInit_ 2
                min_rto: Nanos::from_millis(200),             // minrto_ 0.2
                initial_rto: Nanos::from_secs(3),             // rtxcur_init_ 3.0
                max_rto: Nanos::from_secs(60),                // maxrto_ 60
                delayed_ack: false,                           // Agent/TCPSink: one ACK per packet
                delayed_ack_timeout: Nanos::from_millis(100), // Agent/TCPSink/DelAck interval_ (unused)
                sack: false,                                  // Agent/TCP(/Newreno): no SACK
                ecn: false,                                   // ecn_ 0
                handshake: true,                              // syn_ true
                rwnd_bytes: 20 * 1000,                        // window_ 20 packets
                dupthresh: 3,                                 // numdupacks_ 3
                initial_ssthresh_bytes: Some(20 * 1000),      // ssthresh_ starts at window_
                rto_granularity: Nanos::from_millis(10),      // tcpTick_ 0.01
                cwr: false,                                   // Agent/TCP has no CWR state
                tail_loss_probe: false,                       // no TLP in ns-2.35
                sack_recovery: SackRecovery::Ns2,             // Agent/TCP/Sack1 when sack = true
                singledup: true,                              // singledup_ 1
                whole_packets: true,                          // TcpAgent::sendmsg counts whole packets
                ecn_reaction: EcnReaction::Ns2,               // TcpAgent::ecn(), precisionReduce_ true
                window_model: WindowModel::Ns2,               // opencwnd(), slowdown(), window()
                rto_model: RtoModel::Ns2,                     // rtt_update(), rtt_timeout(), newack()
                newreno_recovery: NewRenoRecovery::Ns2,       // Agent/TCP/Newreno
            },
        }
    }
}

impl Default for TcpConfig {
    fn default() -> Self {
        TcpConfig {
            mss_bytes: 1460,
            header_bytes: 40,
            initial_cwnd_segments: 10,
            min_rto: Nanos::from_millis(200),
            initial_rto: Nanos::from_secs(1),
            max_rto: Nanos::from_secs(60),
            delayed_ack: false,
            delayed_ack_timeout: Nanos::from_millis(40),
            sack: true,
            ecn: false,
            handshake: false,
            rwnd_bytes: 4 << 20,
            dupthresh: 3,
            initial_ssthresh_bytes: None,
            rto_granularity: Nanos::ZERO,
            cwr: true,
            tail_loss_probe: true,
            sack_recovery: SackRecovery::Rfc6675,
            singledup: false,
            whole_packets: false,
            ecn_reaction: EcnReaction::Linux,
            window_model: WindowModel::Bytes,
            rto_model: RtoModel::Rfc6298,
            newreno_recovery: NewRenoRecovery::Rfc6582,
        }
    }
}
