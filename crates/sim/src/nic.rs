//! A host's NIC serving its RoCE queue pairs in turn (docs/lossless.md, "The roce transport"):
//! the state; `queue_pairs.rs` has the simulation's steps.
//!
//! A queue pair paces itself at its own rate, but a NIC has one port: it takes a packet from
//! its queue pairs only as the port drains. A queue pair that wants to send while the port
//! already holds a packet waiting (or is paused), or while others are in line, joins the
//! NIC's line and waits; when the transmission under way ends, the NIC wakes the queue pairs
//! in line in order until one of them puts a packet in. So the host's flows together never
//! send faster than its link, nor while it is paused, and they share it in turn.

use fctlab_engine::Nanos;
use std::collections::{HashMap, VecDeque};

/// The queue pairs in line at each NIC port, and when each NIC wakes them next.
#[derive(Default)]
pub(crate) struct Nics {
    pub line: HashMap<u32, VecDeque<u32>>,
    pub wake_at: HashMap<u32, Nanos>,
}
