//! Transports, and what a protocol asks of the transport its flows run on.
//!
//! A connection has two parts with two owners, as Linux splits `tcp_ack` from
//! `tcp_congestion_ops` and quinn its connection from its `Controller`:
//! - its **transport** owns what it sends and how it reacts to what comes back: segments,
//!   acknowledgements, loss recovery, timers ([`Transport`], implemented by
//!   [`crate::TcpSender`]);
//! - its **congestion control** ([`crate::cc::CongestionControl`]) owns only the window or the
//!   rate, and sees a few events: bytes acknowledged (with their marks and an RTT sample), a
//!   congestion event with its kind, and router feedback.
//!
//! Some protocols ask more of the transport than a window: the settings their flows run with
//! (pFabric's fixed timeout and line-rate start), a band and rank on every packet (pFabric,
//! PIAS, Homa), or, for receiver-driven transports, the receiver's grants ([`TransportPolicy`]).
//! Each protocol names the transports it runs on (`Protocol::TRANSPORTS`, the first its
//! default); `[transport] kind` picks one for every flow, and a protocol that does not run on
//! it is refused by name.
//!
//! The transports ([`TransportKind`]):
//! - `tcp`: a byte stream with cumulative and selective acknowledgements, NewReno/SACK loss
//!   recovery, retransmission timeouts and ECN (`crates/transport/src/sender/`,
//!   `crates/transport/src/receiver.rs`);
//! - `homa`: receiver-driven messages: the receiving host grants what each message may send
//!   and asks again for what it misses ([`HostReceiver`]); no per-packet acknowledgements.
//!   The sender is the TCP sender's segmentation and timers, sending what the grants allow.
//! - `roce`: RDMA messages as RoCEv2 NICs send them: at the rate the congestion control sets
//!   (line rate without one), accepted in order only, go-back-N on a NACK or a timeout, and
//!   congestion notification packets from the receiver on CE marks ([`crate::roce`]).
//! - `ndp`: NDP's messages: a first window at line rate, then one packet per pull from the
//!   receiving host's pacer; an ACK per packet and a NACK per trimmed header ([`crate::ndp`]).
//! - `eqds`: EQDS's datagrams: a speculative first window, then one packet's credit per pull
//!   from the receiving host's pacer, the sender's demand in each data packet ([`crate::eqds`]).
//! - `uet`: Ultra Ethernet's packet delivery under a sender's window (NSCC): an ACK per
//!   packet with its ECN echo, a NACK per trimmed packet, one fixed timeout ([`crate::uet`]).

use crate::config::TcpConfig;
use fctlab_engine::Nanos;
use fctlab_net::{Packet, PacketKind, RouterHeader};
use std::fmt;

/// The transports a connection can run on.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum TransportKind {
    /// A TCP byte stream (sender-driven, acknowledged per packet).
    Tcp,
    /// Receiver-driven messages (Homa): the receiver grants, the sender follows.
    Homa,
    /// RDMA messages over RoCEv2: in-order delivery, go-back-N, CNPs ([`crate::roce`]).
    Roce,
    /// NDP's messages: a first window, then one packet per pull from the receiving host; an
    /// ACK per packet, a NACK per trimmed header ([`crate::ndp`]).
    Ndp,
    /// Ultra Ethernet's packet delivery with a sender's window: an ACK per packet with its ECN
    /// echo, a NACK per trimmed packet, a fixed timeout ([`crate::uet`]).
    Uet,
    /// EQDS's datagrams: a speculative first window, then one packet's credit per pull from
    /// the receiving host ([`crate::eqds`]).
    Eqds,
}

impl TransportKind {
    /// Every transport, in the order error messages list them.
    pub const ALL: &'static [TransportKind] = &[
        TransportKind::Tcp,
        TransportKind::Homa,
        TransportKind::Roce,
        TransportKind::Ndp,
        TransportKind::Uet,
        TransportKind::Eqds,
    ];

    /// The name in scenario files (`[transport] kind = "..."`).
    pub fn name(self) -> &'static str {
        match self {
            TransportKind::Tcp => "tcp",
            TransportKind::Homa => "homa",
            TransportKind::Roce => "roce",
            TransportKind::Ndp => "ndp",
            TransportKind::Uet => "uet",
            TransportKind::Eqds => "eqds",
        }
    }

    /// The transport named `name`, or the error naming the known ones.
    pub fn from_name(name: &str) -> Result<TransportKind, String> {
        Self::ALL.iter().copied().find(|k| k.name() == name).ok_or_else(|| {
            let known: Vec<&str> = Self::ALL.iter().map(|k| k.name()).collect();
            format!("unknown transport \"{name}\" (known: {})", known.join(", "))
        })
    }

    /// The receiving host decides what the sender sends (grants instead of acknowledgements).
    pub const fn receiver_driven(self) -> bool {
        matches!(self, TransportKind::Homa)
    }
}

impl fmt::Display for TransportKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The window state the sender and the algorithm share.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct CcState {
    pub cwnd_bytes: u64,
    /// [`CcState::SSTHRESH_UNLIMITED`] until a loss, an ECN echo or a setting lowers it.
    pub ssthresh_bytes: u64,
    pub mss_bytes: u64,
}

impl CcState {
    /// The slow-start threshold of a window that has none yet: far above any window, with room
    /// left for the arithmetic the algorithms do on it.
    pub const SSTHRESH_UNLIMITED: u64 = u64::MAX / 2;

    pub fn in_slow_start(&self) -> bool {
        self.cwnd_bytes < self.ssthresh_bytes
    }

    /// The slow-start threshold, or None while it is unlimited (an algorithm may have lowered
    /// it below [`CcState::SSTHRESH_UNLIMITED`] without a congestion signal, as by halving it).
    pub fn ssthresh(&self) -> Option<u64> {
        (self.ssthresh_bytes < Self::SSTHRESH_UNLIMITED / 2).then_some(self.ssthresh_bytes)
    }
}

/// What the simulation asks of a connection's sending side, whatever its transport. Every
/// call takes `now` and appends the packets to send to `out`; the sender owns no timer, the
/// caller asks for its deadline and calls back.
pub trait Transport {
    /// Opens the connection or starts sending.
    fn start(&mut self, now: Nanos, out: &mut Vec<Packet>);
    /// A packet from the receiver arrived (an acknowledgement, a grant, a SYN-ACK).
    fn on_packet(&mut self, now: Nanos, p: &Packet, out: &mut Vec<Packet>);
    /// The sender's timer fired at `now` (the caller checked [`Transport::timer_deadline`]).
    fn on_timer(&mut self, now: Nanos, out: &mut Vec<Packet>);
    /// When the sender's timer expires next, if it runs.
    fn timer_deadline(&self) -> Option<Nanos>;
    /// Every byte is acknowledged.
    fn is_complete(&self) -> bool;
    /// Bytes acknowledged so far.
    fn bytes_acked(&self) -> u64;
    /// Bytes sent at least once so far.
    fn bytes_sent(&self) -> u64;
}

/// What the sender knows as a packet leaves, for protocols that fill its router header or tag it.
#[derive(Copy, Clone, Debug)]
pub struct SendContext {
    pub now: Nanos,
    pub kind: PacketKind,
    /// Bytes the flow sends (None: long-lived).
    pub size: Option<u64>,
    /// Bytes sent at least once so far, including this packet's.
    pub bytes_sent: u64,
    /// The packet's first byte (a data packet's sequence number, from 0).
    pub seq: u64,
    pub snd_una: u64,
    /// Bytes above `snd_una` the receiver has reported (SACK).
    pub sacked_bytes: u64,
    pub srtt: Option<Nanos>,
    pub mss_bytes: u64,
}

impl SendContext {
    /// Bytes not yet sent once (the remaining size; None for a long-lived flow).
    pub fn remaining(&self) -> Option<u64> {
        self.size.map(|s| s.saturating_sub(self.bytes_sent))
    }
    /// Bytes the receiver has not reported yet, acknowledged or SACKed (None: long-lived).
    pub fn unacknowledged(&self) -> Option<u64> {
        self.size.map(|s| s.saturating_sub(self.snd_una + self.sacked_bytes))
    }
    /// The SRTT as the router header's `rtt_ns` field carries it (0: not measured yet).
    pub fn rtt_field(&self) -> u32 {
        self.srtt.map_or(0, |r| r.as_nanos().min(u32::MAX as u64) as u32)
    }
}

/// A packet's place in the switches' queues, for protocols that set it per packet: its
/// band (strict-priority ports, 0 first) and its rank (pFabric ports, smaller first; see
/// [`fctlab_net::rank_of_bytes`]).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
pub struct PacketPriority {
    pub band: u8,
    pub rank: u16,
}

/// What a protocol decides in its transport beyond the window or rate. Every hook has a
/// default that leaves the transport as it is; most protocols implement none.
pub trait TransportPolicy {
    /// Adjusts the transport settings this flow runs with, for protocols that define their own
    /// window start or loss recovery (pFabric, Homa). Called once, when the flow starts.
    fn tune(&self, _tcp: &mut TcpConfig) {}

    /// The band and rank of a packet the flow is about to send (protocols whose
    /// `Protocol::TAGS_PACKETS` is set; called for every packet they send).
    fn priority(&self, _ctx: &SendContext) -> PacketPriority {
        PacketPriority::default()
    }

    /// Probe mode (pFabric's): after this many consecutive timeouts, each further timeout
    /// resends one byte of the first unacknowledged segment instead of data, until an ACK of
    /// new data ends the run of timeouts and the flow slow-starts again. None: never.
    fn probe_after_timeouts(&self) -> Option<u32> {
        None
    }

    /// One window reduction per congestion episode (ATCP's `halving = "per-episode"`, as the
    /// kernel's `atcp.bpf.c`): a signal about data sent before the last halving ended keeps the
    /// window. False (the default): every signal outside a reduction halves it.
    fn halving_per_episode(&self) -> bool {
        false
    }

    /// Receiver-driven transports: a grant or resend request from the receiver.
    fn on_grant(&mut self, _hdr: &RouterHeader) {}

    /// Receiver-driven transports: the highest byte the receiver lets the flow send so far
    /// (read after every header the receiver sends). None: no limit.
    fn send_limit(&self) -> Option<u64> {
        None
    }

    /// Receiver-driven transports: a range the receiver asked for again, once.
    fn take_resend(&mut self) -> Option<(u64, u64)> {
        None
    }

    /// The `roce` transport: the window a flow starts with, for an algorithm that keeps one
    /// (HPCC's base RTT times the line rate). Without it the window is unlimited.
    fn init(&mut self, _st: &mut CcState) {}

    /// The `roce` transport, for timer-driven algorithms (DCQCN): when the algorithm's own
    /// timer is due next, if one runs. The transport calls [`TransportPolicy::on_timer`] then,
    /// and reads the rate again.
    fn deadline(&self) -> Option<Nanos> {
        None
    }

    /// The algorithm's clock reaches `now`: the transport calls it before it hands the
    /// algorithm anything at `now` (an acknowledgement, a notification) and when its
    /// [`TransportPolicy::deadline`] is due; the algorithm runs the timer events due by `now`.
    fn on_timer(&mut self, _st: &mut CcState, _now: Nanos) {}

    /// The `roce` transport: a data packet of `wire_bytes` left at `now` (DCQCN's byte counter).
    fn on_sent(&mut self, _now: Nanos, _wire_bytes: u64) {}
}

/// A message at its receiving host, after one of its data packets arrived.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Incoming {
    pub flow: u32,
    /// Its size (carried by each of its packets).
    pub size: u64,
    /// Bytes received so far, in order or not.
    pub received: u64,
}

/// A grant: message `flow` may send up to byte `offset`, its scheduled packets in `band`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Grant {
    pub flow: u32,
    pub offset: u64,
    pub band: u8,
}

/// The receiving host's side of a receiver-driven transport: one per host that receives its
/// flows, keeping what it needs of each message being received.
pub trait HostReceiver: fmt::Debug + Send {
    /// Bytes a message of `size` sends before its first grant.
    fn unscheduled(&self, size: u64) -> u64;
    /// How long a receiver waits for bytes it expects before it asks for them again.
    fn resend_timeout(&self) -> Nanos;
    /// A data packet of `msg` arrived; the grants to send now go to `grants`.
    fn on_data(&mut self, msg: Incoming, grants: &mut Vec<Grant>);
}
