//! Packet trimming (NDP's switch, and Ultra Ethernet's): two bands, headers first. Data
//! packets wait in the data band; a data packet that finds `trim_threshold` waiting there is
//! not dropped but cut to its header (`trim_header_bytes` on the wire, its payload gone) and
//! queued in the header band, with control packets (ACKs, NACKs, pulls) and the other trimmed
//! headers. The transmitter serves the header band first, so that a receiver learns of every
//! trimmed packet within about a header's time per queue and asks for it again. The port's
//! `buffer` bounds both bands together: a header that finds it full is dropped, and counted
//! as a dropped trimmed header (`trimmed_header` in drops.parquet).
//!
//! With `trim_ecn_threshold`, an ECN-capable data packet is marked when the data band holds
//! that much (the marking NSCC and EQDS read beside trimming).

use super::{keys_as, Buffer, BufferLimit, Discipline, KeyError, LinkInfo, QueueView, Verdict, Waiting};
use crate::packet::{flags, PacketId, PacketKind, PacketMeta};
use fctlab_engine::Rng;
use serde::Deserialize;
use std::collections::VecDeque;

/// The data band's length at which data is trimmed when no `trim_threshold` is given: NDP's
/// switches keep 8 packets of data per port (Handley et al., SIGCOMM 2017, section 3.1).
pub const DEFAULT_THRESHOLD: BufferLimit = BufferLimit::Packets(8);
/// A trimmed header's bytes on the wire when no `trim_header_bytes` is given: NDP's 64-byte
/// header (its paper's simulations and htsim's `ACKSIZE`/header size).
pub const DEFAULT_HEADER_BYTES: u16 = 64;

#[derive(Clone, Debug, PartialEq)]
pub struct TrimConfig {
    /// Data waiting at which an arriving data packet is trimmed.
    pub threshold: BufferLimit,
    /// A trimmed packet's bytes on the wire.
    pub header_bytes: u16,
    /// Mark ECN-capable data when the data band holds this much.
    pub ecn_threshold: Option<BufferLimit>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Keys {
    trim_threshold: Option<Buffer>,
    trim_header_bytes: Option<fctlab_engine::quantity::Size>,
    trim_ecn_threshold: Option<Buffer>,
}

/// The two bands of a trimming port (behind one pointer: the port stays small).
#[derive(Clone, Debug)]
pub struct Trim(Box<Bands>);

#[derive(Clone, Debug)]
pub struct Bands {
    cfg: TrimConfig,
    headers: VecDeque<Waiting>,
    data: VecDeque<Waiting>,
    data_pkts: u32,
    data_bytes: u64,
}

impl Trim {
    /// A packet that goes to the header band: anything but untrimmed data.
    fn is_header(meta: &PacketMeta) -> bool {
        meta.kind != PacketKind::Data || meta.has(flags::TRIMMED)
    }
    /// Packets waiting in the header and data bands (tests).
    pub fn lengths(&self) -> (usize, usize) {
        (self.0.headers.len(), self.0.data.len())
    }
}

impl Discipline for Trim {
    const NAME: &'static str = "trim";
    type Config = TrimConfig;
    const KEYS: &'static [&'static str] = &["trim_threshold", "trim_header_bytes", "trim_ecn_threshold"];
    const ORDERED: bool = true;
    const TRIMS: bool = true;

    fn parse(keys: toml::Table) -> Result<TrimConfig, KeyError> {
        let k: Keys = keys_as(keys)?;
        let header_bytes = match k.trim_header_bytes {
            None => DEFAULT_HEADER_BYTES,
            Some(s) => match u16::try_from(s.0) {
                Ok(b) if b > 0 => b,
                _ => return Err(KeyError::new("trim_header_bytes", format!("expected 1 to 65535 bytes, got {} B", s.0))),
            },
        };
        let threshold = k.trim_threshold.map_or(DEFAULT_THRESHOLD, |b| b.0);
        if threshold == BufferLimit::Unlimited {
            return Err(KeyError::new("trim_threshold", "a trimming queue needs a finite threshold (e.g. \"8pkt\")"));
        }
        Ok(TrimConfig { threshold, header_bytes, ecn_threshold: k.trim_ecn_threshold.map(|b| b.0) })
    }

    fn describe(c: &TrimConfig) -> serde_json::Map<String, serde_json::Value> {
        use serde_json::json;
        serde_json::Map::from_iter([
            ("threshold".to_string(), c.threshold.to_json()),
            ("header_bytes".to_string(), json!(c.header_bytes)),
            ("ecn_threshold".to_string(), c.ecn_threshold.as_ref().map_or(serde_json::Value::Null, BufferLimit::to_json)),
        ])
    }

    fn new(cfg: &TrimConfig, _: &LinkInfo, _: Rng) -> Trim {
        Trim(Box::new(Bands {
            cfg: cfg.clone(),
            headers: VecDeque::new(),
            data: VecDeque::new(),
            data_pkts: 0,
            data_bytes: 0,
        }))
    }

    fn trim(&mut self, _: &QueueView, meta: &PacketMeta) -> Option<u16> {
        let b = &self.0;
        let over = b.cfg.threshold.would_overflow(b.data_pkts, b.data_bytes, meta.wire_bytes as u64);
        (!Self::is_header(meta) && over).then_some(b.cfg.header_bytes)
    }

    fn on_arrival(&mut self, _: &QueueView, meta: &PacketMeta) -> Verdict {
        if Self::is_header(meta) {
            return Verdict::Accept;
        }
        let b = &self.0;
        match b.cfg.ecn_threshold {
            Some(k) if k.reached(b.data_pkts, b.data_bytes) => Verdict::Mark,
            _ => Verdict::Accept,
        }
    }

    fn push(&mut self, w: Waiting) {
        if Self::is_header(&w.meta) {
            self.0.headers.push_back(w);
        } else {
            self.0.data_pkts += 1;
            self.0.data_bytes += w.meta.wire_bytes as u64;
            self.0.data.push_back(w);
        }
    }

    fn pop(&mut self) -> Option<Waiting> {
        if let Some(w) = self.0.headers.pop_front() {
            return Some(w);
        }
        let w = self.0.data.pop_front()?;
        self.0.data_pkts -= 1;
        self.0.data_bytes -= w.meta.wire_bytes as u64;
        Some(w)
    }

    fn held(&self, out: &mut Vec<PacketId>) {
        out.extend(self.0.headers.iter().chain(&self.0.data).map(|w| w.pkt));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fctlab_engine::{BitsPerSec, Nanos};

    fn trim(keys: &str) -> Trim {
        let link = LinkInfo { rate: BitsPerSec(10_000_000_000), delay: Nanos::from_nanos(1000) };
        Trim::new(&Trim::parse(keys.parse().unwrap()).unwrap(), &link, Rng::stream(0, 0))
    }

    fn data(id: u32) -> Waiting {
        Waiting { pkt: PacketId(id), meta: PacketMeta { kind: PacketKind::Data, wire_bytes: 9000, ..Default::default() } }
    }

    #[test]
    fn data_past_the_threshold_is_trimmed_and_headers_go_first() {
        let mut q = trim("trim_threshold = \"2pkt\"");
        let v = QueueView::busy(Nanos::ZERO, 0, 0);
        for id in 0..2 {
            assert_eq!(q.on_arrival(&v, &data(id).meta), Verdict::Accept);
            q.push(data(id));
        }
        assert_eq!(q.trim(&v, &data(2).meta), Some(DEFAULT_HEADER_BYTES));
        let mut header = data(2);
        header.meta.flags |= flags::TRIMMED;
        header.meta.wire_bytes = DEFAULT_HEADER_BYTES;
        assert_eq!(q.on_arrival(&v, &header.meta), Verdict::Accept, "a trimmed header is never trimmed again");
        q.push(header);
        let ack = Waiting { pkt: PacketId(3), meta: PacketMeta { kind: PacketKind::Ack, wire_bytes: 64, ..Default::default() } };
        q.push(ack);
        assert_eq!(q.lengths(), (2, 2));
        let order: Vec<u32> = std::iter::from_fn(|| q.pop()).map(|w| w.pkt.0).collect();
        assert_eq!(order, vec![2, 3, 0, 1]);
    }

    #[test]
    fn ecn_marks_data_in_the_data_band_and_bad_keys_are_named() {
        let mut q = trim("trim_threshold = \"8pkt\"\ntrim_ecn_threshold = \"1pkt\"");
        let v = QueueView::busy(Nanos::ZERO, 0, 0);
        assert_eq!(q.on_arrival(&v, &data(0).meta), Verdict::Accept);
        q.push(data(0));
        assert_eq!(q.on_arrival(&v, &data(1).meta), Verdict::Mark);
        let e = Trim::parse("trim_threshold = \"unlimited\"".parse().unwrap()).unwrap_err();
        assert_eq!(e.key, "trim_threshold");
        let e = Trim::parse("trim_header_bytes = \"0B\"".parse().unwrap()).unwrap_err();
        assert_eq!(e.key, "trim_header_bytes");
        let e = Trim::parse("trim_headers = 1".parse().unwrap()).unwrap_err();
        assert!(e.message.contains("trim_headers"), "{}", e.message);
    }
}
