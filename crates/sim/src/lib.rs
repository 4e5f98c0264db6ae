//! The simulation: builds ports, routes and hosts from a [`Scenario`], runs the event loop and
//! collects per-flow and per-link results.
//!
//! Event kinds are few and small: the arrival of a port's head packet at the far end, the
//! next flow start, the start of a flow that waited for a group, per-flow timers
//! (retransmission, delayed ACK), the control-interval tick of a router-assisted port, and
//! queue and window samples. Timers are cancelled
//! lazily: a flow keeps the time of its one scheduled timer event, and an event that no longer
//! matches is ignored when it pops; a deadline that moved later is re-armed then. So a flow
//! has at most one pending event per timer however many ACKs move its deadline.
//!
//! A [`Simulation`] owns everything it uses; any number can exist in one process.

mod build;
mod collect;
mod conn;
mod flowtable;
mod ideal;
mod lossless;
mod monitor;
mod nic;
mod pacer;
mod pcap;
mod pfc;
mod profiling;
mod pull;
mod queue_pairs;
mod results;
mod sched;
mod shared;
mod sim;
mod window_profile;

pub use pcap::{ipv4_of, ports_of, PcapFile, ROUTER_OPTION_EXID};
pub use pfc::{Blocked, PauseRecord};
pub use results::{
    Column, ColumnSpec, ColumnType, CwndSample, DropRecord, FlowResult, Label, LinkResult, PfcRecord, QueueSample,
    Results, Row, Schema, Summary, SCHEMAS,
};
pub use sim::{RunStatus, Simulation, DEFAULT_HORIZON};
pub use window_profile::ProfileReport;

/// Version of the simulator, reported in every summary.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
