//! ECN threshold marking (DCTCP's switch, "K"): CE on ECN-capable packets that arrive when the
//! queue holds `ecn_threshold` or more; packets that are not ECN-capable are accepted unmarked.

use super::{BufferLimit, keys_as, Buffer, Discipline, KeyError, LinkInfo, QueueView, Verdict};
use crate::packet::PacketMeta;
use fctlab_engine::Rng;
use serde::Deserialize;

#[derive(Copy, Clone, Debug, PartialEq)]
pub struct EcnThreshold {
    threshold: BufferLimit,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Keys {
    ecn_threshold: Option<Buffer>,
}

impl Discipline for EcnThreshold {
    const NAME: &'static str = "ecn";
    /// The marking threshold K.
    type Config = BufferLimit;
    const KEYS: &'static [&'static str] = &["ecn_threshold"];

    fn parse(keys: toml::Table) -> Result<BufferLimit, KeyError> {
        let k: Keys = keys_as(keys)?;
        k.ecn_threshold.map(|b| b.0).ok_or_else(|| {
            KeyError::new("ecn_threshold", "queue = \"ecn\" needs `ecn_threshold` (the marking threshold K, e.g. \"20pkt\")")
        })
    }
    fn describe(threshold: &BufferLimit) -> serde_json::Map<String, serde_json::Value> {
        serde_json::Map::from_iter([("threshold".to_string(), threshold.to_json())])
    }
    fn new(threshold: &BufferLimit, _: &LinkInfo, _: Rng) -> EcnThreshold {
        EcnThreshold { threshold: *threshold }
    }
    #[inline]
    fn on_arrival(&mut self, q: &QueueView, _: &PacketMeta) -> Verdict {
        if self.threshold.reached(q.waiting_pkts, q.waiting_bytes) {
            Verdict::Mark
        } else {
            Verdict::Accept
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fctlab_engine::{BitsPerSec, Nanos};

    #[test]
    fn marks_at_threshold() {
        let link = LinkInfo { rate: BitsPerSec(10_000_000_000), delay: Nanos::from_nanos(1000) };
        let mut q = EcnThreshold::new(&BufferLimit::Packets(20), &link, Rng::stream(1, 1));
        let view = |n| QueueView::busy(Nanos::ZERO, n, 0);
        assert_eq!(q.on_arrival(&view(19), &PacketMeta::default()), Verdict::Accept);
        assert_eq!(q.on_arrival(&view(20), &PacketMeta::default()), Verdict::Mark);
        assert!(EcnThreshold::parse(toml::Table::new()).unwrap_err().message.contains("needs `ecn_threshold`"));
    }
}
