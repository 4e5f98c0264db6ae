//! TCP parameters shared by every connection of a run (the `[transport]` table).
//!
//! Each setting is declared once, in [`tcp_settings!`] below: its field, the scenario key and
//! the form it is written in, its default (the `linux` profile), and its documentation. The
//! macro derives the rest: [`TcpConfig`], its `Default`, the serde table of settings a scenario
//! gives ([`TcpSettings`]), and the export of the resolved values ([`TcpConfig::export`]).
//! Profiles are data: the `ns2` profile is a table of settings ([`NS2_PROFILE`]) read by the
//! same parser as a scenario's.

use fctlab_engine::quantity::{Duration, Size};
use fctlab_engine::Nanos;
use serde::Deserialize;

/// A setting's value as the bindings and `fctlab validate` report it.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum Exported {
    Bool(bool),
    /// A count or a number of bytes.
    Int(u64),
    /// A time in seconds (the key gets `_s`).
    Seconds(f64),
    /// A named mode.
    Name(&'static str),
    /// Not set (an unlimited initial ssthresh).
    Null,
}

/// How a field's value is reported: the suffix its key gets and the value.
pub trait Export {
    /// Appended to the field's name in the exported key (`_s` for times in seconds).
    const SUFFIX: &'static str = "";
    fn export(&self) -> Exported;
}

impl Export for bool {
    fn export(&self) -> Exported {
        Exported::Bool(*self)
    }
}
impl Export for u32 {
    fn export(&self) -> Exported {
        Exported::Int(*self as u64)
    }
}
impl Export for u64 {
    fn export(&self) -> Exported {
        Exported::Int(*self)
    }
}
impl Export for Option<u64> {
    fn export(&self) -> Exported {
        self.map_or(Exported::Null, Exported::Int)
    }
}
impl Export for Nanos {
    const SUFFIX: &'static str = "_s";
    fn export(&self) -> Exported {
        Exported::Seconds(self.as_secs_f64())
    }
}

/// A field's value from the form it is written in (`W`): a size for a byte count, a time for
/// a duration, the value itself otherwise.
pub trait FromWritten<W>: Sized {
    fn from_written(w: W) -> Result<Self, String>;
}
impl<T> FromWritten<T> for T {
    fn from_written(w: T) -> Result<T, String> {
        Ok(w)
    }
}
impl FromWritten<Size> for u32 {
    fn from_written(w: Size) -> Result<u32, String> {
        u32::try_from(w.0).map_err(|_| format!("must be at most {}B, got {}B", u32::MAX, w.0))
    }
}
impl FromWritten<Size> for u64 {
    fn from_written(w: Size) -> Result<u64, String> {
        Ok(w.0)
    }
}
impl FromWritten<Size> for Option<u64> {
    fn from_written(w: Size) -> Result<Option<u64>, String> {
        Ok(Some(w.0))
    }
}
impl FromWritten<Duration> for Nanos {
    fn from_written(w: Duration) -> Result<Nanos, String> {
        Ok(w.0)
    }
}

/// Declares the TCP settings: for each, its documentation, `field: type as written-form`, its
/// scenario key, and its default.
macro_rules! tcp_settings {
    ($($(#[$m:meta])* $field:ident: $ty:ty as $w:ty, key $key:literal, default $default:expr;)+) => {
        /// The TCP settings of a run (see each field; docs/scenarios.md has a row per key).
        #[derive(Copy, Clone, Debug, PartialEq)]
        pub struct TcpConfig {
            $($(#[$m])* pub $field: $ty,)+
        }

        impl Default for TcpConfig {
            /// The `linux` profile.
            fn default() -> Self {
                TcpConfig { $($field: $default,)+ }
            }
        }

        /// The TCP settings a scenario gives, each as written (absent: the profile's value).
        #[derive(Deserialize, Debug, Default)]
        #[serde(deny_unknown_fields)]
        pub struct TcpSettings {
            $(#[serde(rename = $key, default)] $field: Option<$w>,)+
        }

        impl TcpSettings {
            /// Whether the scenario gives `key`.
            pub fn gives(&self, key: &str) -> bool {
                $(if key == $key { return self.$field.is_some(); })+
                false
            }

            /// Writes the settings given over `cfg`; Err names the key whose value does not fit.
            pub fn apply(self, cfg: &mut TcpConfig) -> Result<(), (&'static str, String)> {
                $(if let Some(v) = self.$field {
                    cfg.$field = <$ty as FromWritten<$w>>::from_written(v).map_err(|m| ($key, m))?;
                })+
                Ok(())
            }
        }

        impl TcpConfig {
            /// The scenario keys of the settings, in declaration order.
            pub const KEYS: &'static [&'static str] = &[$($key),+];

            /// Each setting as `(field name + its unit suffix, value)`, in declaration order:
            /// `mss_bytes`, `min_rto_s`, ...
            pub fn export(&self) -> Vec<(String, Exported)> {
                vec![$((format!("{}{}", stringify!($field), <$ty as Export>::SUFFIX), Export::export(&self.$field)),)+]
            }
        }
    };
}

tcp_settings! {
    /// Maximum segment size: payload bytes per data packet.
    mss_bytes: u32 as Size, key "mss", default 1460;
    /// IP + TCP header bytes added to every packet on the wire (data and ACK).
    header_bytes: u32 as Size, key "header_bytes", default 40;
    /// Initial congestion window in segments.
    initial_cwnd_segments: u32 as u32, key "initial_cwnd", default 10;
    /// Lower bound of the retransmission timeout.
    min_rto: Nanos as Duration, key "min_rto", default Nanos::from_millis(200);
    /// The RTO before the first RTT sample (with the `linux` profile, 5 x `min_rto` when the
    /// scenario gives `min_rto` only: see `Profile::resolve`).
    initial_rto: Nanos as Duration, key "initial_rto", default Nanos::from_secs(1);
    /// Upper bound of the RTO, backoff included.
    max_rto: Nanos as Duration, key "max_rto", default Nanos::from_secs(60);
    /// Acknowledge every second full segment (or after `delayed_ack_timeout`).
    delayed_ack: bool as bool, key "delayed_ack", default false;
    delayed_ack_timeout: Nanos as Duration, key "delayed_ack_timeout", default Nanos::from_millis(40);
    /// Selective acknowledgements and scoreboard-based loss recovery (RFC 2018, RFC 6675).
    sack: bool as bool, key "sack", default true;
    /// ECN-capable transport: data packets carry ECT, the sender reacts to ECE.
    ecn: bool as bool, key "ecn", default false;
    /// Open each connection with SYN / SYN-ACK before sending data.
    handshake: bool as bool, key "handshake", default false;
    /// Receiver window: bytes the sender may have outstanding.
    rwnd_bytes: u64 as Size, key "rwnd", default 4 << 20;
    /// Duplicate ACKs (or segments SACKed) that trigger fast retransmit.
    dupthresh: u32 as u32, key "dupthresh", default 3;
    /// Initial slow-start threshold; None: unlimited (slow start until the first loss).
    initial_ssthresh_bytes: Option<u64> as Size, key "initial_ssthresh", default None;
    /// Retransmission-timer granularity: the RTO is rounded up to a multiple of it (ns-2's
    /// `tcpTick_`). Zero: exact.
    rto_granularity: Nanos as Duration, key "rto_granularity", default Nanos::ZERO;
    /// Linux's CWR state after an ECN echo: the window falls to the new ssthresh by
    /// proportional rate reduction (RFC 6937) and does not grow until the data outstanding at
    /// the echo is acknowledged. Off: the window drops at once and keeps growing.
    cwr: bool as bool, key "cwr", default true;
    /// Tail loss probe (RFC 8985 section 7, as Linux schedules it): with SACK, outside
    /// recovery, a probe segment goes out 2 SRTT (plus 2 ms, or plus min RTO with one
    /// segment in flight) after the last transmission, if that is before the RTO.
    tail_loss_probe: bool as bool, key "tail_loss_probe", default true;
    /// RACK's loss detection by time (RFC 8985 section 6, Linux's `tcp_recovery = 1`): a
    /// segment is lost once a later-sent one is delivered and a round trip plus a reordering
    /// window have passed, so that reordering within the window costs no retransmission.
    /// Needs `sack`.
    rack: bool as bool, key "rack", default false;
    /// Loss recovery with SACK: RFC 6675 (with lost-retransmission detection) or ns-2.35's
    /// `Agent/TCP/Sack1` (`tcp/tcp-sack1.cc` with its `ScoreBoardRQ`). Used only with `sack`.
    sack_recovery: SackRecovery as SackRecovery, key "sack_recovery", default SackRecovery::Rfc6675;
    /// ns-2's `singledup_` limited transmit: each of the first `dupthresh - 1` duplicate ACKs
    /// sends one new segment if it fits in cwnd plus the duplicate ACKs (`TcpAgent::send_one`).
    singledup: bool as bool, key "singledup", default false;
    /// ns-2's `TcpAgent::sendmsg`: a flow of S bytes sends ceil(S / mss) full segments.
    whole_packets: bool as bool, key "whole_packets", default false;
    /// The reaction to ECN echoes: Linux/RFC 3168 (ssthresh = flight / 2, at least 2 segments)
    /// or ns-2.35's `TcpAgent::ecn()` and `slowdown()` (see `EcnReaction::Ns2`).
    ecn_reaction: EcnReaction as EcnReaction, key "ecn_reaction", default EcnReaction::Linux;
    /// The window of `tcp` and `atcp`: bytes (RFC 5681 with byte counting) or ns-2.35's
    /// (`WindowModel::Ns2`).
    window_model: WindowModel as WindowModel, key "window_model", default WindowModel::Bytes;
    /// RTT sampling, RTO computation and backoff: RFC 6298 or ns-2.35's (`RtoModel::Ns2`).
    rto_model: RtoModel as RtoModel, key "rto_model", default RtoModel::Rfc6298;
    /// NewReno recovery without SACK: RFC 6582 or ns-2.35's `Agent/TCP/Newreno`
    /// (`NewRenoRecovery::Ns2`).
    newreno_recovery: NewRenoRecovery as NewRenoRecovery, key "newreno_recovery", default NewRenoRecovery::Rfc6582;
    /// The `roce` transport: data packets per acknowledgement (1: every packet, the HPCC ns-3
    /// fork's `L2_ACK_INTERVAL 1`); the packet that completes a message is acknowledged at once.
    ack_interval: u32 as u32, key "ack_interval", default 1;
    /// The `roce` transport: a receiver NACKs a gap once, and again for the same missing byte
    /// only after this long (the HPCC ns-3 fork's `NACK Generation Interval`, 500 us).
    nack_interval: Nanos as Duration, key "nack_interval", default Nanos::from_micros(500);
    /// The `roce` transport: a receiver sends at most one CNP per flow per interval (DCQCN's
    /// notification point, N = 50 us in the DCQCN paper).
    cnp_interval: Nanos as Duration, key "cnp_interval", default Nanos::from_micros(50);
    /// The `roce` transport's loss recovery: go-back-N (RoCEv2 NICs) or IRN's selective
    /// repeat with its BDP cap and two fixed timeouts (Mittal et al., SIGCOMM 2018).
    roce_recovery: RoceRecovery as RoceRecovery, key "roce_recovery", default RoceRecovery::GoBackN;
    /// IRN's timeout while at most [`IRN_FEW_PACKETS`] packets are in flight (RTO_low, 100 us).
    irn_rto_low: Nanos as Duration, key "irn_rto_low", default Nanos::from_micros(100);
    /// IRN's timeout otherwise (RTO_high, 320 us).
    irn_rto_high: Nanos as Duration, key "irn_rto_high", default Nanos::from_micros(320);
}

/// IRN's N: with at most this many packets in flight its sender waits `irn_rto_low` for an
/// acknowledgement, otherwise `irn_rto_high` (the IRN paper's N = 3).
pub const IRN_FEW_PACKETS: u64 = 3;

/// Defines a `[transport]` key given by name: its variants, their scenario names, and its
/// deserialization from them.
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
        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let name = String::deserialize(d)?;
                $name::from_name(&name).ok_or_else(|| {
                    serde::de::Error::custom(format!("unknown value \"{name}\" (known: {})", $name::NAMES.join(", ")))
                })
            }
        }
        impl Export for $name {
            fn export(&self) -> Exported {
                Exported::Name(self.name())
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

named_enum! {
    /// How the `roce` transport recovers from losses (`[transport] roce_recovery`).
    RoceRecovery {
        /// The receiver drops packets out of order and NACKs the byte it expects; the sender
        /// sends everything again from there.
        GoBackN = "go_back_n",
        /// IRN: the receiver keeps packets out of order and NACKs each with its own sequence
        /// number; the sender resends only what was not received, keeps at most one BDP of the
        /// flow's path outstanding, and times out after `irn_rto_low` or `irn_rto_high`.
        Irn = "irn",
    }
}

named_enum! {
    /// How a SACK sender recovers from losses (`[transport] sack_recovery`).
    SackRecovery {
        /// RFC 6675's pipe and loss rules, with lost-retransmission detection.
        Rfc6675 = "rfc6675",
        /// ns-2.35's `Sack1TcpAgent`: a pipe counted in packets (`pipe_`), holes below the
        /// highest SACK retransmitted once each in order, a lost retransmission left to the timer.
        Ns2 = "ns2",
    }
}

named_enum! {
    /// How a sender reacts to ECN echoes (`[transport] ecn_reaction`).
    EcnReaction {
        /// RFC 3168 as Linux does it: at most once per window and not in loss recovery, the
        /// algorithm's decrease (for `tcp` ssthresh = max(flight / 2, 2 segments)).
        Linux = "linux",
        /// ns-2.35's `TcpAgent::ecn()` (`tcp/tcp.cc`): the window halves (`slowdown`, with
        /// `precisionReduce_`: cwnd = min(cwnd, rwnd) / 2, at least one segment; ssthresh its
        /// whole segments, at least two), once per window of data (`recover_`, shared with loss
        /// recovery), ACKs carrying ECE do not open the window, and the first data packet of a
        /// flow without handshake (seqno 0) is not ECN-capable.
        Ns2 = "ns2",
    }
}

named_enum! {
    /// A named set of TCP settings (`[transport] profile`). Keys given in the scenario override
    /// the profile's values.
    Profile {
        /// A modern Linux-like TCP: initial window 10, SACK, 1460 B segments, 200 ms minimum
        /// RTO (the defaults of `tcp_settings!`).
        Linux = "linux",
        /// ns-2.35's `Agent/TCP` defaults, the simulator of the papers ([`NS2_PROFILE`]).
        Ns2 = "ns2",
    }
}

/// The `ns2` profile: ns-2.35's defaults, each with its line of `tcl/lib/ns-default.tcl`
/// (`Agent/TCP`, and `Agent/TCPSink` for ACKs) or the code it comes from. Keys not listed keep
/// the `linux` value. docs/scenarios.md has the same table with its sources.
pub const NS2_PROFILE: &str = r#"
mss = "1000B"                  # Agent/TCP set packetSize_ 1000
header_bytes = "40B"           # Agent/TCP set tcpip_base_hdr_size_ 40
initial_cwnd = 2               # Agent/TCP set windowInit_ 2
min_rto = "200ms"              # Agent/TCP set minrto_ 0.2
initial_rto = "3s"             # Agent/TCP set rtxcur_init_ 3.0
max_rto = "60s"                # Agent/TCP set maxrto_ 60
delayed_ack = false            # Agent/TCPSink: one ACK per packet
delayed_ack_timeout = "100ms"  # Agent/TCPSink/DelAck set interval_ 100ms (used with delayed_ack)
sack = false                   # Agent/TCP(/Newreno): no SACK
ecn = false                    # Agent/TCP set ecn_ 0
handshake = true               # Agent/TCP set syn_ true
rwnd = "20000B"                # Agent/TCP set window_ 20 (packets)
dupthresh = 3                  # Agent/TCP set numdupacks_ 3
initial_ssthresh = "20000B"    # TcpAgent::reset(): ssthresh_ = int(wnd_)
rto_granularity = "10ms"       # Agent/TCP set tcpTick_ 0.01
cwr = false                    # Agent/TCP has no CWR state
tail_loss_probe = false        # no TLP in ns-2.35
rack = false                   # no RACK in ns-2.35
sack_recovery = "ns2"          # Agent/TCP/Sack1 when sack = true
singledup = true               # Agent/TCP set singledup_ 1
whole_packets = true           # TcpAgent::sendmsg counts whole packets
ecn_reaction = "ns2"           # TcpAgent::ecn(), precisionReduce_ true
window_model = "ns2"           # opencwnd(), slowdown(), window()
rto_model = "ns2"              # rtt_update(), rtt_timeout(), newack()
newreno_recovery = "ns2"       # Agent/TCP/Newreno
ack_interval = 1               # (the roce transport's; ns-2 has none)
nack_interval = "500us"        # (the roce transport's)
cnp_interval = "50us"          # (the roce transport's)
roce_recovery = "go_back_n"    # (the roce transport's)
irn_rto_low = "100us"          # (the roce transport's)
irn_rto_high = "320us"         # (the roce transport's)
"#;

impl Profile {
    /// The profile's settings.
    pub fn config(self) -> TcpConfig {
        let mut cfg = TcpConfig::default();
        if self == Profile::Ns2 {
            // A constant of this file, read by the scenario's own parser; its test below.
            let settings: TcpSettings = toml::from_str(NS2_PROFILE).expect("the ns2 profile parses");
            settings.apply(&mut cfg).expect("the ns2 profile's values fit");
        }
        cfg
    }

    /// The settings of a scenario that starts from this profile and gives `settings`. One
    /// default depends on another key: with the `linux` profile, a scenario that gives
    /// `min_rto` but not `initial_rto` gets 5 x `min_rto` (1 s with the 200 ms default, as in
    /// RFC 6298 and Linux), so that data-center settings of `min_rto` scale it too; ns-2's
    /// `rtxcur_init_` does not depend on `minrto_`.
    pub fn resolve(self, settings: TcpSettings) -> Result<TcpConfig, (&'static str, String)> {
        let scale_initial_rto = self == Profile::Linux && settings.gives("min_rto") && !settings.gives("initial_rto");
        let mut cfg = self.config();
        settings.apply(&mut cfg)?;
        if scale_initial_rto {
            cfg.initial_rto = cfg.min_rto.mul(5);
        }
        Ok(cfg)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ns2_profile_is_ns2s_defaults_over_linuxs() {
        let ns2 = Profile::Ns2.config();
        assert_eq!((ns2.mss_bytes, ns2.initial_cwnd_segments, ns2.rwnd_bytes), (1000, 2, 20_000));
        assert_eq!((ns2.initial_rto, ns2.rto_granularity), (Nanos::from_secs(3), Nanos::from_millis(10)));
        assert_eq!(ns2.initial_ssthresh_bytes, Some(20_000));
        assert_eq!((ns2.sack_recovery, ns2.window_model), (SackRecovery::Ns2, WindowModel::Ns2));
        assert!(ns2.handshake && ns2.singledup && !ns2.cwr && !ns2.tail_loss_probe);
        assert_eq!(Profile::Linux.config(), TcpConfig::default());
        // Every setting appears in the ns2 table, so the profile is complete on its own.
        let given: TcpSettings = toml::from_str(NS2_PROFILE).unwrap();
        for key in TcpConfig::KEYS {
            assert!(given.gives(key), "{key} missing from NS2_PROFILE");
        }
    }

    #[test]
    fn settings_apply_over_the_profile_with_their_units() {
        let s: TcpSettings = toml::from_str("mss = \"9000B\"\nmin_rto = \"1ms\"\nsack_recovery = \"ns2\"").unwrap();
        let cfg = Profile::Linux.resolve(s).unwrap();
        assert_eq!((cfg.mss_bytes, cfg.min_rto), (9000, Nanos::from_millis(1)));
        assert_eq!(cfg.initial_rto, Nanos::from_millis(5), "linux scales the initial RTO with min_rto");
        assert_eq!(cfg.sack_recovery, SackRecovery::Ns2);
        let s: TcpSettings = toml::from_str("min_rto = \"1ms\"").unwrap();
        assert_eq!(Profile::Ns2.resolve(s).unwrap().initial_rto, Nanos::from_secs(3));
        let s: TcpSettings = toml::from_str("mss = \"5GB\"").unwrap();
        assert_eq!(Profile::Linux.resolve(s).unwrap_err().0, "mss");
        let e = toml::from_str::<TcpSettings>("window_model = \"packets\"").unwrap_err().to_string();
        assert!(e.contains("unknown value \"packets\" (known: bytes, ns2)"), "{e}");
        assert!(toml::from_str::<TcpSettings>("msss = 1").is_err());
    }

    #[test]
    fn the_export_names_each_field_with_its_unit() {
        let e = TcpConfig::default().export();
        assert_eq!(e.len(), TcpConfig::KEYS.len());
        assert!(e.contains(&("mss_bytes".to_string(), Exported::Int(1460))));
        assert!(e.contains(&("min_rto_s".to_string(), Exported::Seconds(0.2))));
        assert!(e.contains(&("initial_ssthresh_bytes".to_string(), Exported::Null)));
        assert!(e.contains(&("rto_model".to_string(), Exported::Name("rfc6298"))));
    }
}
