//! pFabric's switch port (Alizadeh et al., "pFabric: Minimal Near-Optimal Datacenter
//! Transport", SIGCOMM 2013, section 4.1). Every packet carries a rank, its flow's remaining
//! size ([`crate::packet::rank_of_bytes`]; ACKs and packets of protocols that set none rank
//! 0, first). The port keeps its few waiting packets in arrival order and
//! - sends next the earliest waiting packet of the flow that has the lowest-ranked packet
//!   (the most urgent flow goes first, and its packets leave in order: a flow never starves
//!   its own older packets);
//! - when the buffer is full, drops the highest-ranked packet among the arriving one and
//!   those waiting (the newest of equals), so that the arriving packet takes its place.
//!
//! Both are linear scans, as in the paper's hardware argument: pFabric's buffers hold about
//! two bandwidth-delay products (its default here is the paper's 36 KB per port, 24 packets).
//! With a byte buffer, a waiting packet is dropped only if that frees room for the arriving
//! one: the victim is the highest-ranked of the packets large enough. Hosts' NICs run it too
//! (as the paper's hosts do) unless `nic_queue = "droptail"`.

use super::{BufferLimit, keys_as, Discipline, KeyError, LinkInfo, QueueView, Verdict, Waiting};
use crate::packet::{PacketId, PacketMeta};
use fctlab_engine::Rng;
use serde::Deserialize;

/// The buffer of a pFabric port unless the scenario gives one: the paper's 36 KB (2 x the
/// bandwidth-delay product of its 10 Gb/s fabric, section 5.1).
pub const PFABRIC_BUFFER: BufferLimit = BufferLimit::Bytes(36_000);

/// pFabric on one port (its packets behind one pointer: the port stays small, a Vec itself
/// being three words).
#[derive(Clone, Debug)]
#[allow(clippy::box_collection)]
pub struct PFabric(Box<Vec<Waiting>>);

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Keys {}

impl PFabric {
    /// The waiting packets' ids in arrival order (tests).
    pub fn waiting(&self) -> Vec<u32> {
        self.0.iter().map(|w| w.pkt.0).collect()
    }
}

impl Discipline for PFabric {
    const NAME: &'static str = "pfabric";
    type Config = ();
    const KEYS: &'static [&'static str] = &[];
    const ORDERED: bool = true;
    const DEFAULT_BUFFER: Option<BufferLimit> = Some(PFABRIC_BUFFER);
    const AT_NICS: bool = true;

    fn parse(keys: toml::Table) -> Result<(), KeyError> {
        let _: Keys = keys_as(keys)?;
        Ok(())
    }

    fn describe(_: &()) -> serde_json::Map<String, serde_json::Value> {
        serde_json::Map::new()
    }
    fn new(_: &(), _: &LinkInfo, _: Rng) -> PFabric {
        PFabric(Box::default())
    }

    fn on_arrival(&mut self, _: &QueueView, _: &PacketMeta) -> Verdict {
        Verdict::Accept
    }

    fn push(&mut self, w: Waiting) {
        self.0.push(w);
    }

    fn pop(&mut self) -> Option<Waiting> {
        let q = &mut self.0;
        // The first of the lowest rank (the oldest among equals), then its flow's oldest,
        // which is at or before it.
        let mut best = 0;
        for (i, w) in q.iter().enumerate().skip(1) {
            if w.meta.rank < q[best].meta.rank {
                best = i;
            }
        }
        let flow = q.get(best)?.meta.flow;
        let first = q[..=best].iter().position(|w| w.meta.flow == flow).unwrap_or(best);
        Some(q.remove(first))
    }

    fn make_room(&mut self, incoming: &PacketMeta, min_bytes: u64) -> Option<Waiting> {
        let q = &mut self.0;
        // The highest rank, the newest among equals, of the packets that free enough room.
        let mut worst: Option<usize> = None;
        for (i, w) in q.iter().enumerate() {
            if w.meta.wire_bytes as u64 >= min_bytes && worst.map_or(true, |j| w.meta.rank >= q[j].meta.rank) {
                worst = Some(i);
            }
        }
        // The arriving packet is dropped itself unless a waiting one ranks strictly after it.
        let i = worst?;
        (q[i].meta.rank > incoming.rank).then(|| q.remove(i))
    }

    fn held(&self, out: &mut Vec<PacketId>) {
        out.extend(self.0.iter().map(|w| w.pkt));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::FlowId;
    use fctlab_engine::{BitsPerSec, Nanos};

    fn w(id: u32, flow: u32, rank: u16) -> Waiting {
        Waiting { pkt: PacketId(id), meta: PacketMeta { flow: FlowId(flow), rank, wire_bytes: 1500, ..Default::default() } }
    }

    fn port() -> PFabric {
        PFabric::new(&(), &LinkInfo { rate: BitsPerSec(10_000_000_000), delay: Nanos::from_nanos(1000) }, Rng::stream(0, 0))
    }

    #[test]
    fn the_most_urgent_flow_goes_first_and_its_oldest_packet_before_its_newer_ones() {
        let mut q = port();
        // Flow 1's older packet ranks after flow 2's; flow 1's newest packet is the most urgent
        // (its rank fell as its data was acknowledged): flow 1's oldest packet goes first.
        for p in [w(1, 1, 900), w(2, 2, 500), w(3, 1, 100), w(4, 3, 500), w(5, 2, 400)] {
            q.push(p);
        }
        let order: Vec<u32> = std::iter::from_fn(|| q.pop()).map(|w| w.pkt.0).collect();
        // 1 (flow 1 holds rank 100), 3; then flow 2 (rank 400): 2, 5; then flow 3: 4.
        assert_eq!(order, vec![1, 3, 2, 5, 4]);
    }

    #[test]
    fn equal_ranks_leave_in_arrival_order() {
        let mut q = port();
        for p in [w(1, 7, 300), w(2, 8, 300), w(3, 7, 300), w(4, 9, 300)] {
            q.push(p);
        }
        let order: Vec<u32> = std::iter::from_fn(|| q.pop()).map(|w| w.pkt.0).collect();
        assert_eq!(order, vec![1, 2, 3, 4], "FIFO among equals");
    }

    #[test]
    fn a_full_port_drops_the_highest_rank_of_all_including_the_arrival() {
        let mut q = port();
        for p in [w(1, 1, 50), w(2, 2, 800), w(3, 3, 800), w(4, 4, 200)] {
            q.push(p);
        }
        // The newest of the two rank-800 packets makes room for a rank-100 arrival.
        assert_eq!(q.make_room(&w(9, 5, 100).meta, 0).map(|v| v.pkt.0), Some(3));
        assert_eq!(q.make_room(&w(9, 5, 100).meta, 0).map(|v| v.pkt.0), Some(2));
        // Nothing waiting ranks after 200 now: a rank-200 or rank-900 arrival is dropped itself.
        assert_eq!(q.make_room(&w(9, 5, 200).meta, 0), None);
        assert_eq!(q.make_room(&w(9, 5, 900).meta, 0), None);
        assert_eq!(q.waiting(), vec![1, 4]);
        // With a byte buffer the victim must free room: a 40-byte packet frees too little.
        let mut small = port();
        small.push(Waiting { meta: PacketMeta { wire_bytes: 40, ..w(1, 1, 9000).meta }, ..w(1, 1, 9000) });
        small.push(w(2, 2, 5000));
        assert_eq!(small.make_room(&w(9, 5, 100).meta, 1000).map(|v| v.pkt.0), Some(2));
    }

    #[test]
    fn the_port_takes_no_keys_and_has_the_papers_buffer() {
        assert!(PFabric::parse(toml::from_str("pfabric_x = 1").unwrap()).is_err());
        assert_eq!(PFabric::DEFAULT_BUFFER, Some(BufferLimit::Bytes(36_000)));
    }
}
