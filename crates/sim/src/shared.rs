//! A shared-buffer switch without PFC (`[network] switch_buffer`, docs/lossless.md): each
//! switch holds one buffer for all its output queues, and a queue may hold at most `alpha`
//! times the buffer left free (dynamic thresholds, Choudhury and Hahne, "Dynamic queue length
//! thresholds for shared-memory packet switches", IEEE/ACM ToN 1998; Broadcom's MMU). A
//! lossless run keeps its thresholds at the inputs instead (`pfc.rs`).

use crate::build::Network;
use fctlab_engine::Nanos;
use fctlab_scenario::SharedBuffer;

/// Each switch's output ports, for the occupancy of its buffer.
pub(crate) struct SharedEgress {
    bytes: u64,
    alpha: f64,
    /// The output ports of each port's switch (empty for a host's NIC), by port.
    switch_of: Vec<u32>,
    outputs: Vec<Vec<u32>>,
}

impl SharedEgress {
    pub fn new(b: &SharedBuffer, net: &Network) -> SharedEgress {
        let nodes = net.node_is_host.len();
        let mut outputs = vec![Vec::new(); nodes];
        let mut switch_of = vec![u32::MAX; net.ports.len()];
        for (p, port) in net.ports.iter().enumerate() {
            let at = port.from.0 as usize;
            if !net.node_is_host[at] {
                outputs[at].push(p as u32);
                switch_of[p] = at as u32;
            }
        }
        SharedEgress { bytes: b.bytes, alpha: b.alpha, switch_of, outputs }
    }

    /// Whether switch port `port` takes a packet of `wire` bytes at `now`: its switch's buffer
    /// has room for it, and the queue stays within `alpha` times the room left.
    pub fn admits(&self, net: &mut Network, port: usize, wire: u64, now: Nanos) -> bool {
        let sw = self.switch_of[port];
        if sw == u32::MAX {
            return true; // a host's NIC: its own buffer
        }
        let mut used = 0;
        let mut own = 0;
        for &q in &self.outputs[sw as usize] {
            let (_, bytes) = net.ports[q as usize].queue_at(now);
            used += bytes;
            if q as usize == port {
                own = bytes;
            }
        }
        let free = self.bytes.saturating_sub(used);
        wire <= free && (own + wire) as f64 <= self.alpha * free as f64
    }
}
