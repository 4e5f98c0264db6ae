//! Strict priority: one FIFO band per priority, the transmitter always takes the head of the
//! highest non-empty band (Linux's `prio` qdisc without its filters). A packet's band is its
//! priority field. A protocol that tags its packets sets it per packet (PIAS: by the bytes the
//! flow has sent); other flows get theirs from their tag: the first tag of `priority_tags` is
//! band 0 (served first), the second band 1, and so on; every other flow is in the last band.
//! `priority_bands` sets the number of bands (default: one per tag plus one; 8 without tags).
//! The bands share the port's buffer; `priority_band_buffer` also limits each band. With
//! `priority_ecn_threshold`, an ECN-capable packet is marked when its own band holds that much
//! (per-band DCTCP marking), or with `priority_ecn_per_port = true` when the whole port does
//! (per-port marking, as the PIAS authors' simulations mark). With `priority_pushout`, a packet that finds the buffer full
//! pushes out the newest packet of the lowest band below its own, if there is one
//! (shared-buffer push-out); otherwise it is dropped.
//!
//! This file is the worked example of docs/protocols.md ("A queue discipline in one file").

use super::{BufferLimit, keys_as, Buffer, Discipline, KeyError, LinkInfo, QueueView, Verdict, Waiting};
use crate::packet::{PacketId, PacketMeta};
use fctlab_engine::Rng;
use serde::Deserialize;
use std::collections::VecDeque;

/// The most bands a port has (the 3 bits of an IP precedence, as in 802.1p).
pub const MAX_BANDS: usize = 8;

#[derive(Clone, Debug, PartialEq)]
pub struct PriorityConfig {
    /// Flow tags, highest priority first; one band each, plus one for every other flow.
    pub tags: Vec<String>,
    /// Bands of each port (at least one per tag plus one).
    pub bands: usize,
    /// Each band holds at most this much (besides the port's shared buffer).
    pub band_buffer: Option<BufferLimit>,
    /// Mark CE on an ECN-capable packet whose band holds this much.
    pub ecn_threshold: Option<BufferLimit>,
    /// Compare the threshold with the whole port's waiting packets rather than the band's.
    pub ecn_per_port: bool,
    /// A full buffer drops a waiting packet of a lower band rather than the arriving one.
    pub pushout: bool,
}

/// Strict priority on one port (its state behind one pointer: the port stays small).
#[derive(Clone, Debug)]
pub struct StrictPriority(Box<Bands>);

/// The bands of a strict-priority port.
#[derive(Clone, Debug)]
pub struct Bands {
    bands: Vec<VecDeque<Waiting>>,
    /// Packets and bytes waiting in each band.
    pkts: Vec<u32>,
    bytes: Vec<u64>,
    ecn_threshold: Option<BufferLimit>,
    ecn_per_port: bool,
    band_buffer: Option<BufferLimit>,
    pushout: bool,
}

impl std::ops::Deref for StrictPriority {
    type Target = Bands;
    fn deref(&self) -> &Bands {
        &self.0
    }
}

impl std::ops::DerefMut for StrictPriority {
    fn deref_mut(&mut self) -> &mut Bands {
        &mut self.0
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Keys {
    priority_tags: Option<Vec<String>>,
    priority_bands: Option<u32>,
    priority_band_buffer: Option<Buffer>,
    priority_ecn_threshold: Option<Buffer>,
    priority_ecn_per_port: Option<bool>,
    priority_pushout: Option<bool>,
}

impl StrictPriority {
    fn band(&self, meta: &PacketMeta) -> usize {
        (meta.prio as usize).min(self.bands.len() - 1)
    }
    /// Packets waiting in each band (tests).
    pub fn band_lengths(&self) -> Vec<u32> {
        self.pkts.clone()
    }
}

impl Discipline for StrictPriority {
    const NAME: &'static str = "priority";
    type Config = PriorityConfig;
    const KEYS: &'static [&'static str] = &[
        "priority_tags",
        "priority_bands",
        "priority_band_buffer",
        "priority_ecn_threshold",
        "priority_ecn_per_port",
        "priority_pushout",
    ];
    const ORDERED: bool = true;
    const CLASSIFIES: bool = true;

    fn parse(keys: toml::Table) -> Result<PriorityConfig, KeyError> {
        let k: Keys = keys_as(keys)?;
        let tags = k.priority_tags.unwrap_or_default();
        if tags.len() >= MAX_BANDS {
            let m = format!("expected at most {} tags (one band each, plus one for other flows), got {}", MAX_BANDS - 1, tags.len());
            return Err(KeyError::new("priority_tags", m));
        }
        if let Some((i, t)) = tags.iter().enumerate().find(|(i, t)| tags[..*i].contains(t)) {
            return Err(KeyError::new(&format!("priority_tags[{i}]"), format!("\"{t}\" is listed twice")));
        }
        let least = tags.len() + 1;
        let bands = match k.priority_bands {
            None if tags.is_empty() => MAX_BANDS,
            None => least,
            Some(n) if (least.max(2)..=MAX_BANDS).contains(&(n as usize)) => n as usize,
            Some(n) => {
                let m = format!("expected {} to {MAX_BANDS} bands (one per tag plus one), got {n}", least.max(2));
                return Err(KeyError::new("priority_bands", m));
            }
        };
        if k.priority_ecn_per_port.is_some() && k.priority_ecn_threshold.is_none() {
            let m = "needs `priority_ecn_threshold` (the threshold to compare the port's queue with)";
            return Err(KeyError::new("priority_ecn_per_port", m.to_string()));
        }
        Ok(PriorityConfig {
            tags,
            bands,
            band_buffer: k.priority_band_buffer.map(|b| b.0),
            ecn_threshold: k.priority_ecn_threshold.map(|b| b.0),
            ecn_per_port: k.priority_ecn_per_port.unwrap_or(false),
            pushout: k.priority_pushout.unwrap_or(false),
        })
    }

    fn describe(c: &PriorityConfig) -> serde_json::Map<String, serde_json::Value> {
        use serde_json::json;
        let opt = |b: &Option<BufferLimit>| b.as_ref().map_or(serde_json::Value::Null, BufferLimit::to_json);
        serde_json::Map::from_iter([
            ("tags".to_string(), json!(c.tags)),
            ("bands".to_string(), json!(c.bands)),
            ("band_buffer".to_string(), opt(&c.band_buffer)),
            ("ecn_threshold".to_string(), opt(&c.ecn_threshold)),
            ("ecn_per_port".to_string(), json!(c.ecn_per_port)),
            ("pushout".to_string(), json!(c.pushout)),
        ])
    }
    fn new(cfg: &PriorityConfig, _: &LinkInfo, _: Rng) -> StrictPriority {
        let n = cfg.bands;
        StrictPriority(Box::new(Bands {
            bands: vec![VecDeque::new(); n],
            pkts: vec![0; n],
            bytes: vec![0; n],
            ecn_threshold: cfg.ecn_threshold,
            ecn_per_port: cfg.ecn_per_port,
            band_buffer: cfg.band_buffer,
            pushout: cfg.pushout,
        }))
    }

    fn class_of(cfg: &PriorityConfig, tag: &str) -> u8 {
        cfg.tags.iter().position(|t| t == tag).unwrap_or(cfg.tags.len()) as u8
    }

    fn on_arrival(&mut self, v: &QueueView, meta: &PacketMeta) -> Verdict {
        let b = self.band(meta);
        if self.band_buffer.is_some_and(|k| k.would_overflow(self.pkts[b], self.bytes[b], meta.wire_bytes as u64)) {
            return Verdict::Drop;
        }
        let (pkts, bytes) = if self.ecn_per_port { (v.waiting_pkts, v.waiting_bytes) } else { (self.pkts[b], self.bytes[b]) };
        match self.ecn_threshold {
            Some(k) if k.reached(pkts, bytes) => Verdict::Mark,
            _ => Verdict::Accept,
        }
    }

    fn push(&mut self, w: Waiting) {
        let b = self.band(&w.meta);
        self.pkts[b] += 1;
        self.bytes[b] += w.meta.wire_bytes as u64;
        self.bands[b].push_back(w);
    }

    fn pop(&mut self) -> Option<Waiting> {
        let b = self.bands.iter().position(|q| !q.is_empty())?;
        let w = self.bands[b].pop_front()?;
        self.pkts[b] -= 1;
        self.bytes[b] -= w.meta.wire_bytes as u64;
        Some(w)
    }

    fn make_room(&mut self, incoming: &PacketMeta, min_bytes: u64) -> Option<Waiting> {
        if !self.pushout {
            return None;
        }
        let mine = self.band(incoming);
        let b = (mine + 1..self.bands.len()).rev().find(|&b| {
            self.bands[b].back().is_some_and(|w| w.meta.wire_bytes as u64 >= min_bytes)
        })?;
        let w = self.bands[b].pop_back()?;
        self.pkts[b] -= 1;
        self.bytes[b] -= w.meta.wire_bytes as u64;
        Some(w)
    }

    fn held(&self, out: &mut Vec<PacketId>) {
        out.extend(self.bands.iter().flatten().map(|w| w.pkt));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fctlab_engine::{BitsPerSec, Nanos};

    fn cfg(tags: &[&str]) -> PriorityConfig {
        PriorityConfig {
            tags: tags.iter().map(|t| t.to_string()).collect(),
            bands: tags.len() + 1,
            band_buffer: None,
            ecn_threshold: None,
            ecn_per_port: false,
            pushout: false,
        }
    }

    fn waiting(id: u32, prio: u8) -> Waiting {
        Waiting { pkt: PacketId(id), meta: PacketMeta { prio, wire_bytes: 1500, ..Default::default() } }
    }

    #[test]
    fn the_highest_band_goes_first_and_each_band_is_fifo() {
        let link = LinkInfo { rate: BitsPerSec(1_000_000_000), delay: Nanos::from_nanos(1000) };
        let mut q = StrictPriority::new(&cfg(&["a", "b"]), &link, Rng::stream(0, 0));
        for (id, prio) in [(1, 2), (2, 1), (3, 2), (4, 0), (5, 1), (6, 9)] {
            q.push(waiting(id, prio));
        }
        // A priority past the last band is in the last band.
        assert_eq!(q.band_lengths(), vec![1, 2, 3]);
        let order: Vec<u32> = std::iter::from_fn(|| q.pop()).map(|w| w.pkt.0).collect();
        assert_eq!(order, vec![4, 2, 5, 1, 3, 6]);
        assert_eq!(q.band_lengths(), vec![0, 0, 0]);
    }

    #[test]
    fn tags_give_bands_and_bad_keys_are_named() {
        let c = cfg(&["query", "web"]);
        assert_eq!(
            [StrictPriority::class_of(&c, "query"), StrictPriority::class_of(&c, "web"), StrictPriority::class_of(&c, "")],
            [0, 1, 2]
        );
        let parse = |t: &str| StrictPriority::parse(toml::from_str(t).unwrap());
        assert_eq!(parse("priority_tags = [\"x\"]\npriority_ecn_threshold = \"10pkt\"").unwrap().ecn_threshold, Some(BufferLimit::Packets(10)));
        assert_eq!(parse("priority_tags = [\"x\", \"x\"]").unwrap_err().key, "priority_tags[1]");
        let eight: Vec<String> = (0..8).map(|i| format!("\"t{i}\"")).collect();
        let many = parse(&format!("priority_tags = [{}]", eight.join(", "))).unwrap_err();
        assert!(many.message.contains("at most 7 tags"), "{}", many.message);
        // Without tags (packets tagged by their senders): 8 bands, or as many as asked.
        assert_eq!(parse("").unwrap().bands, 8);
        assert_eq!(parse("priority_bands = 4").unwrap().bands, 4);
        assert_eq!(parse("priority_tags = [\"x\"]").unwrap().bands, 2);
        let few = parse("priority_tags = [\"x\", \"y\"]\npriority_bands = 2").unwrap_err();
        assert_eq!((few.key.as_str(), few.message.as_str()), ("priority_bands", "expected 3 to 8 bands (one per tag plus one), got 2"));
        assert_eq!(parse("priority_bands = 9").unwrap_err().key, "priority_bands");
    }

    #[test]
    fn pushout_takes_the_newest_packet_of_the_lowest_lower_band() {
        let link = LinkInfo { rate: BitsPerSec(1_000_000_000), delay: Nanos::from_nanos(1000) };
        let mut q = StrictPriority::new(&PriorityConfig { pushout: true, ..cfg(&["a", "b"]) }, &link, Rng::stream(0, 0));
        for (id, prio) in [(1, 1), (2, 2), (3, 2), (4, 0)] {
            q.push(waiting(id, prio));
        }
        assert_eq!(q.make_room(&waiting(9, 0).meta, 0).map(|w| w.pkt.0), Some(3));
        assert_eq!(q.make_room(&waiting(9, 1).meta, 0).map(|w| w.pkt.0), Some(2));
        // Nothing below band 1 is left, and a packet of the last band pushes nothing out.
        assert_eq!(q.make_room(&waiting(9, 1).meta, 0), None);
        assert_eq!(q.make_room(&waiting(9, 2).meta, 0), None);
        assert_eq!(q.make_room(&waiting(9, 0).meta, 2000), None, "a victim too small for a byte buffer");
        assert_eq!(q.band_lengths(), vec![1, 1, 0]);
    }

    #[test]
    fn a_full_band_drops_its_arrivals_and_leaves_the_others_alone() {
        let link = LinkInfo { rate: BitsPerSec(1_000_000_000), delay: Nanos::from_nanos(1000) };
        let c = PriorityConfig { band_buffer: Some(BufferLimit::Packets(2)), ..cfg(&["a"]) };
        let mut q = StrictPriority::new(&c, &link, Rng::stream(0, 0));
        let view = QueueView::busy(Nanos::ZERO, 0, 0);
        for id in 1..=2 {
            assert_eq!(q.on_arrival(&view, &waiting(id, 1).meta), Verdict::Accept);
            q.push(waiting(id, 1));
        }
        assert_eq!(q.on_arrival(&view, &waiting(3, 1).meta), Verdict::Drop);
        assert_eq!(q.on_arrival(&view, &waiting(4, 0).meta), Verdict::Accept);
        q.pop();
        assert_eq!(q.on_arrival(&view, &waiting(5, 1).meta), Verdict::Accept, "room again once one left");
    }

    #[test]
    fn per_band_ecn_marking() {
        let link = LinkInfo { rate: BitsPerSec(1_000_000_000), delay: Nanos::from_nanos(1000) };
        let c = PriorityConfig { ecn_threshold: Some(BufferLimit::Packets(2)), ..cfg(&["a"]) };
        let mut q = StrictPriority::new(&c, &link, Rng::stream(0, 0));
        let view = QueueView::busy(Nanos::ZERO, 0, 0);
        q.push(waiting(1, 1));
        q.push(waiting(2, 1));
        // Band 1 holds 2: its packets are marked; band 0 is empty: its packets are not.
        assert_eq!(q.on_arrival(&view, &waiting(3, 1).meta), Verdict::Mark);
        assert_eq!(q.on_arrival(&view, &waiting(4, 0).meta), Verdict::Accept);
    }

    #[test]
    fn per_port_ecn_marking_counts_every_band() {
        let link = LinkInfo { rate: BitsPerSec(1_000_000_000), delay: Nanos::from_nanos(1000) };
        let c = PriorityConfig { ecn_threshold: Some(BufferLimit::Packets(2)), ecn_per_port: true, ..cfg(&["a"]) };
        let mut q = StrictPriority::new(&c, &link, Rng::stream(0, 0));
        q.push(waiting(1, 1));
        q.push(waiting(2, 1));
        // Two packets wait in band 1: a packet of the empty band 0 is marked too.
        assert_eq!(q.on_arrival(&QueueView::busy(Nanos::ZERO, 2, 2 * 1500), &waiting(3, 0).meta), Verdict::Mark);
        assert_eq!(q.on_arrival(&QueueView::busy(Nanos::ZERO, 1, 1500), &waiting(4, 0).meta), Verdict::Accept);
        let parse = |t: &str| StrictPriority::parse(toml::from_str(t).unwrap());
        assert!(parse("priority_ecn_threshold = \"10pkt\"\npriority_ecn_per_port = true").unwrap().ecn_per_port);
        assert!(parse("priority_ecn_per_port = true").unwrap_err().message.contains("needs `priority_ecn_threshold`"));
    }
}
