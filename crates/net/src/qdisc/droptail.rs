//! DropTail: every packet the buffer has room for is accepted.

use super::{keys_as, Discipline, KeyError, LinkInfo, QueueView, Verdict};
use crate::packet::PacketMeta;
use fctlab_engine::Rng;
use serde::Deserialize;

#[derive(Copy, Clone, Debug, Default, PartialEq)]
pub struct DropTail;

/// No keys.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Keys {}

impl Discipline for DropTail {
    const NAME: &'static str = "droptail";
    type Config = ();
    const KEYS: &'static [&'static str] = &[];
    const PASSIVE: bool = true;

    fn parse(keys: toml::Table) -> Result<(), KeyError> {
        keys_as::<Keys>(keys).map(|_| ())
    }
    fn describe(_: &()) -> serde_json::Map<String, serde_json::Value> {
        serde_json::Map::new()
    }
    fn new(_: &(), _: &LinkInfo, _: Rng) -> DropTail {
        DropTail
    }
    #[inline]
    fn on_arrival(&mut self, _: &QueueView, _: &PacketMeta) -> Verdict {
        Verdict::Accept
    }
}
