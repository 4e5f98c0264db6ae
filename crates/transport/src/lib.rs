//! Transport: TCP sender and receiver state machines and the congestion controls.
//!
//! The state machines are pure: every call takes the current time and appends the packets it
//! wants to send to an output vector. They own no timers and no sockets; the simulation asks
//! them for their next deadline ([`TcpSender::timer_deadline`], [`TcpReceiver::delack_deadline`])
//! and calls them back. The same design lets a host-side scheduling layer sit between
//! application flows and connections.
//!
//! Congestion control is behind one small trait in [`cc`]; each algorithm is one file there.

pub mod cc;
pub mod config;
pub mod receiver;
pub mod rtt;
pub mod scoreboard;
pub mod sender;

pub use cc::{AnyCc, CcConfig, CcState, CongestionControl, CongestionEvent, FlowInfo, Protocol};
pub use config::{
    EcnReaction, Exported, NewRenoRecovery, Profile, RtoModel, SackRecovery, TcpConfig, TcpSettings, WindowModel,
};
pub use receiver::TcpReceiver;
pub use sender::TcpSender;
