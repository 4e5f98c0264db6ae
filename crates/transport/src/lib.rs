//! Transport: TCP sender and receiver state machines and the congestion controls.
//!
//! The state machines are pure: every call takes the current time and appends the packets it
//! wants to send to an output vector. They own no timers and no sockets; the simulation asks
//! them for their next deadline ([`TcpSender::timer_deadline`], [`TcpReceiver::delack_deadline`])
//! and calls them back. The same design lets a host-side scheduling layer sit between
//! application flows and connections.
//!
//! A connection's transport (what it sends, how it recovers: [`transport`], the TCP sender)
//! and its congestion control (the window or rate: one small trait in [`cc`], each algorithm
//! one file there) are separate parts.

pub mod cc;
pub mod config;
pub mod eqds;
pub mod ndp;
pub mod receiver;
pub mod roce;
pub mod rtt;
pub mod scoreboard;
pub mod sender;
pub mod transport;
pub mod uet;

pub use cc::{AnyCc, CcConfig, CcState, CongestionControl, CongestionEvent, FlowInfo, Protocol};
pub use config::{
    EcnReaction, Exported, NewRenoRecovery, Profile, RtoModel, SackRecovery, TcpConfig, TcpSettings, WindowModel,
};
pub use eqds::{EqdsReceiver, EqdsSender};
pub use ndp::{NdpReceiver, NdpSender};
pub use receiver::TcpReceiver;
pub use roce::{RoceReceiver, RoceSender};
pub use sender::TcpSender;
pub use transport::{Transport, TransportKind, TransportPolicy};
pub use uet::UetSender;
