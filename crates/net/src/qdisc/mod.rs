//! Queue disciplines of output ports: one small trait, one file each, one registration line.
//!
//! A discipline decides what happens to a packet offered to a port ([`Discipline::on_arrival`]:
//! accept, mark CE, drop; or make room by dropping a waiting packet,
//! [`Discipline::make_room`]) and, if it keeps its own order ([`Discipline::ORDERED`]), which
//! waiting packet the transmitter takes next ([`Discipline::pop`]), as Linux's `Qdisc_ops`
//! pairs `enqueue` and `dequeue`. A first-in-first-out discipline leaves the waiting packets
//! to the port, which then knows each packet's transmission time when it accepts it (the fast
//! path, see [`crate::port`]); an ordered one holds them itself and the port asks it for the
//! next one each time the transmitter frees.
//!
//! The buffer limit is the port's, the same for every discipline: a packet that must wait
//! and finds the buffer full is dropped before the discipline is asked, unless the discipline
//! makes room or takes the decision itself ([`Discipline::OWN_ADMISSION`], ns-2's RED, whose
//! estimator also runs for the packets the full buffer drops).
//!
//! A new discipline is one file here and one line in the [`disciplines!`] list at the bottom:
//! its name in scenario files, its keys of `[network]` (parsed in its own file), its state and
//! its tests. `docs/protocols.md` ("A queue discipline in one file") walks through strict
//! priority.

use crate::packet::{PacketId, PacketMeta};
use fctlab_engine::parse::BufferSpec;
use fctlab_engine::{BitsPerSec, Nanos, Rng};
use std::fmt;

/// A buffer size (or threshold) in packets or bytes.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum BufferLimit {
    Packets(u32),
    Bytes(u64),
    Unlimited,
}

impl BufferLimit {
    /// True when a queue of `pkts`/`bytes` has reached this limit.
    #[inline]
    pub fn reached(&self, pkts: u32, bytes: u64) -> bool {
        match *self {
            BufferLimit::Packets(n) => pkts >= n,
            BufferLimit::Bytes(b) => bytes >= b,
            BufferLimit::Unlimited => false,
        }
    }
    /// As the plan writes it (`fctlab_scenario::plan`): `["pkts", n]`, `["bytes", n]` or null.
    pub fn to_json(&self) -> serde_json::Value {
        match *self {
            BufferLimit::Packets(n) => serde_json::json!(["pkts", n]),
            BufferLimit::Bytes(b) => serde_json::json!(["bytes", b]),
            BufferLimit::Unlimited => serde_json::Value::Null,
        }
    }
    /// True when adding a packet of `add_bytes` would exceed this limit.
    #[inline]
    pub fn would_overflow(&self, pkts: u32, bytes: u64, add_bytes: u64) -> bool {
        match *self {
            BufferLimit::Packets(n) => pkts + 1 > n,
            BufferLimit::Bytes(b) => bytes + add_bytes > b,
            BufferLimit::Unlimited => false,
        }
    }
}

/// What the discipline decided for an arriving packet.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    Accept,
    /// Set CE if the packet is ECN-capable (a packet that is not is accepted unmarked, or
    /// dropped when [`Discipline::DROP_UNMARKABLE`]).
    Mark,
    Drop,
}

/// The port's queue as a packet arrives.
#[derive(Copy, Clone, Debug)]
pub struct QueueView {
    pub now: Nanos,
    /// Packets and bytes waiting (the one being transmitted excluded).
    pub waiting_pkts: u32,
    pub waiting_bytes: u64,
    /// When the transmitter frees (or freed).
    pub busy_until: Nanos,
    /// The buffer has no room for the packet (for disciplines that decide that themselves).
    pub full: bool,
}

impl QueueView {
    /// A view of a queue holding `waiting_pkts` / `waiting_bytes` at `now` with a busy
    /// transmitter (tests).
    pub fn busy(now: Nanos, waiting_pkts: u32, waiting_bytes: u64) -> QueueView {
        QueueView { now, waiting_pkts, waiting_bytes, busy_until: Nanos::MAX, full: false }
    }
    /// How long the port has been idle: empty, its transmitter free since before `now`
    /// (zero while it transmits or holds packets).
    #[inline]
    pub fn idle_for(&self) -> Nanos {
        if self.waiting_pkts == 0 && self.busy_until < self.now {
            self.now - self.busy_until
        } else {
            Nanos::ZERO
        }
    }
}

/// A packet waiting in an ordered discipline.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Waiting {
    pub pkt: PacketId,
    pub meta: PacketMeta,
}

/// The link a discipline's port feeds.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct LinkInfo {
    pub rate: BitsPerSec,
    pub delay: Nanos,
}

/// A configuration error: the `[network]` key it concerns and what was expected.
#[derive(Clone, Debug, PartialEq)]
pub struct KeyError {
    pub key: String,
    pub message: String,
}

impl KeyError {
    pub fn new(key: &str, message: impl Into<String>) -> KeyError {
        KeyError { key: key.to_string(), message: message.into() }
    }
}

/// A queue discipline: its scenario name and keys, its state on one port, its decisions.
pub trait Discipline: Clone + fmt::Debug + Sized {
    /// `queue = "..."` in `[network]`.
    const NAME: &'static str;
    /// Its parameters as the port runs them.
    type Config: Clone + fmt::Debug + PartialEq;
    /// The `[network]` keys it reads (all of them start with its own prefix).
    const KEYS: &'static [&'static str];
    /// Its parameters from the keys of `[network]` it reads (only those are in `keys`).
    fn parse(keys: toml::Table) -> Result<Self::Config, KeyError>;
    /// Its parameters as other engines read them from the plan (`fctlab_scenario::plan`),
    /// by the names docs/plan.md lists; empty for a discipline without any.
    fn describe(cfg: &Self::Config) -> serde_json::Map<String, serde_json::Value>;
    /// Its state on one port; `rng` is the port's own stream.
    fn new(cfg: &Self::Config, link: &LinkInfo, rng: Rng) -> Self;
    /// The decision for a packet offered to the port.
    fn on_arrival(&mut self, q: &QueueView, meta: &PacketMeta) -> Verdict;

    /// A [`Verdict::Mark`] on a packet that is not ECN-capable drops it (RED in ECN mode).
    const DROP_UNMARKABLE: bool = false;
    /// [`Discipline::on_arrival`] always accepts (DropTail): the port does not ask.
    const PASSIVE: bool = false;
    /// The discipline sees every arrival, also one the full buffer drops, and decides itself
    /// (from [`QueueView::full`]).
    fn own_admission(&self) -> bool {
        false
    }
    /// Whether ns-2's buffer model (`buffer_model = "ns2"`) finds the buffer full for a
    /// packet of `wire` bytes with `pkts` / `bytes` waiting: DropTail's rule (drop-tail.cc
    /// 91-93: waiting + 1 >= N, or waiting bytes + the packet's >= B) unless overridden.
    fn ns2_full(&self, limit: BufferLimit, pkts: u32, bytes: u64, wire: u64) -> bool {
        match limit {
            BufferLimit::Packets(n) => pkts + 1 >= n,
            BufferLimit::Bytes(b) => bytes + wire >= b,
            BufferLimit::Unlimited => false,
        }
    }

    /// The discipline holds the waiting packets and chooses the next one ([`Discipline::push`],
    /// [`Discipline::pop`]); otherwise the port sends them in arrival order.
    const ORDERED: bool = false;
    /// An accepted packet that must wait (ordered disciplines).
    fn push(&mut self, _w: Waiting) {
        unreachable!("{} keeps no packets", Self::NAME)
    }
    /// The next packet to transmit (ordered disciplines).
    fn pop(&mut self) -> Option<Waiting> {
        None
    }
    /// The buffer is full for `incoming`: a waiting packet of at least `min_bytes` bytes to
    /// drop in its place, if the discipline prefers that (ordered disciplines). The port counts
    /// the drop, hands the victim back to the simulation and admits `incoming` (a
    /// [`Verdict::Drop`] from [`Discipline::on_arrival`] no longer refuses it).
    fn make_room(&mut self, _incoming: &PacketMeta, _min_bytes: u64) -> Option<Waiting> {
        None
    }
    /// Every packet the discipline holds (for accounting at the end of a run).
    fn held(&self, _out: &mut Vec<PacketId>) {}

    /// The packet priority the discipline gives a flow with tag `tag` (0 highest); the
    /// simulation writes it into every packet of the flow. Disciplines that classify by flow
    /// tag set `CLASSIFIES`.
    const CLASSIFIES: bool = false;
    fn class_of(_cfg: &Self::Config, _tag: &str) -> u8 {
        0
    }
    /// The average queue estimate, for disciplines that keep one (reports).
    fn average(&self) -> Option<f64> {
        None
    }
    /// The buffer of its ports where the scenario gives none (`[network] buffer`), for a
    /// discipline designed around one (pFabric's small buffers).
    const DEFAULT_BUFFER: Option<BufferLimit> = None;
    /// Host NICs run the discipline too unless `nic_queue` says otherwise (pFabric's hosts
    /// schedule their packets as its switches do); otherwise NICs are DropTail by default.
    const AT_NICS: bool = false;
    /// The discipline trims (an ordered one): the port asks [`Discipline::trim`] before its
    /// buffer decides, so that a packet is trimmed rather than dropped.
    const TRIMS: bool = false;
    /// Whether to cut the arriving packet to a header of this many bytes on the wire (its
    /// payload gone, flagged `flags::TRIMMED`) and queue that instead (trimming disciplines).
    fn trim(&mut self, _q: &QueueView, _meta: &PacketMeta) -> Option<u16> {
        None
    }
}

/// A buffer size as scenario files write it (`"100pkt"`, `"150KB"`, `"unlimited"`).
pub fn parse_buffer(s: &str) -> Result<BufferLimit, String> {
    Ok(match fctlab_engine::parse::parse_buffer(s)? {
        BufferSpec::Packets(n) => BufferLimit::Packets(n),
        BufferSpec::Bytes(b) => BufferLimit::Bytes(b),
        BufferSpec::Unlimited => BufferLimit::Unlimited,
    })
}
fctlab_engine::string_quantity!(Buffer, BufferLimit, parse_buffer, "a buffer such as \"100pkt\"", false);

/// Parses `keys` as the serde struct `T` (unknown keys are errors naming the key).
pub fn keys_as<T: serde::de::DeserializeOwned>(keys: toml::Table) -> Result<T, KeyError> {
    serde_path_to_error::deserialize(toml::Value::Table(keys))
        .map_err(|e| KeyError { key: e.path().to_string(), message: e.into_inner().to_string() })
}

/// One registry entry.
pub struct Registration {
    pub name: &'static str,
    pub keys: &'static [&'static str],
    /// See [`Discipline::DEFAULT_BUFFER`].
    pub default_buffer: Option<BufferLimit>,
    /// See [`Discipline::AT_NICS`].
    pub at_nics: bool,
    parse: fn(toml::Table) -> Result<QueueConfig, KeyError>,
}

impl Registration {
    /// The discipline's configuration from its keys of `[network]`.
    pub fn configure(&self, keys: toml::Table) -> Result<QueueConfig, KeyError> {
        (self.parse)(keys)
    }
}

/// The registry entry of discipline `name`, or the error naming the known ones.
pub fn lookup(name: &str) -> Result<&'static Registration, String> {
    REGISTRY.iter().find(|r| r.name == name).ok_or_else(|| {
        let known: Vec<&str> = REGISTRY.iter().map(|r| r.name).collect();
        format!("unknown queue \"{name}\" (known: {})", known.join(", "))
    })
}

/// Declares every discipline: `module::Type` per line. Generates the module declarations,
/// [`AnyQdisc`] (static dispatch over the port states), [`QueueConfig`] and [`REGISTRY`].
macro_rules! disciplines {
    ($($module:ident :: $ty:ident),* $(,)?) => {
        $(pub mod $module;)*
        $(pub use $module::$ty;)*

        /// A validated configuration of one discipline.
        #[derive(Clone, Debug, PartialEq)]
        #[allow(clippy::large_enum_variant)]
        pub enum QueueConfig {
            $($ty(<$ty as Discipline>::Config),)*
        }

        impl QueueConfig {
            /// The discipline's name in scenario files.
            pub fn name(&self) -> &'static str {
                match self {
                    $(QueueConfig::$ty(_) => <$ty as Discipline>::NAME,)*
                }
            }
            /// Its name (`kind`) and parameters ([`Discipline::describe`]), as the plan writes them.
            pub fn describe(&self) -> serde_json::Value {
                let mut m = serde_json::Map::new();
                m.insert("kind".into(), self.name().into());
                match self {
                    $(QueueConfig::$ty(c) => m.extend(<$ty as Discipline>::describe(c)),)*
                }
                serde_json::Value::Object(m)
            }
            /// Its state on one port.
            pub fn build(&self, link: &LinkInfo, rng: Rng) -> AnyQdisc {
                match self {
                    $(QueueConfig::$ty(c) => AnyQdisc::$ty(<$ty as Discipline>::new(c, link, rng)),)*
                }
            }
            /// Whether it holds the waiting packets and chooses the next one itself.
            pub fn ordered(&self) -> bool {
                match self {
                    $(QueueConfig::$ty(_) => <$ty as Discipline>::ORDERED,)*
                }
            }
            /// Whether it gives flows packet priorities by their tags.
            pub fn classifies(&self) -> bool {
                match self {
                    $(QueueConfig::$ty(_) => <$ty as Discipline>::CLASSIFIES,)*
                }
            }
            /// The packet priority of a flow tagged `tag`.
            pub fn class_of(&self, tag: &str) -> u8 {
                match self {
                    $(QueueConfig::$ty(c) => <$ty as Discipline>::class_of(c, tag),)*
                }
            }
        }

        /// A port's discipline, dispatched statically. Held in the port itself: a discipline
        /// with much state keeps it behind a pointer of its own (RED, strict priority), so
        /// that the port stays small and the small ones (an ECN threshold) need no pointer.
        #[derive(Clone, Debug)]
        pub enum AnyQdisc {
            $($ty($ty),)*
        }

        impl AnyQdisc {
            #[inline(always)]
            pub fn on_arrival(&mut self, q: &QueueView, meta: &PacketMeta) -> Verdict {
                match self {
                    $(AnyQdisc::$ty(d) => d.on_arrival(q, meta),)*
                }
            }
            pub fn passive(&self) -> bool {
                match self {
                    $(AnyQdisc::$ty(_) => <$ty as Discipline>::PASSIVE,)*
                }
            }
            pub fn drop_unmarkable(&self) -> bool {
                match self {
                    $(AnyQdisc::$ty(_) => <$ty as Discipline>::DROP_UNMARKABLE,)*
                }
            }
            pub fn own_admission(&self) -> bool {
                match self {
                    $(AnyQdisc::$ty(d) => d.own_admission(),)*
                }
            }
            pub fn ordered(&self) -> bool {
                match self {
                    $(AnyQdisc::$ty(_) => <$ty as Discipline>::ORDERED,)*
                }
            }
            pub fn trims(&self) -> bool {
                match self {
                    $(AnyQdisc::$ty(_) => <$ty as Discipline>::TRIMS,)*
                }
            }
            pub fn trim(&mut self, q: &QueueView, meta: &PacketMeta) -> Option<u16> {
                match self {
                    $(AnyQdisc::$ty(d) => d.trim(q, meta),)*
                }
            }
            pub fn ns2_full(&self, limit: BufferLimit, pkts: u32, bytes: u64, wire: u64) -> bool {
                match self {
                    $(AnyQdisc::$ty(d) => d.ns2_full(limit, pkts, bytes, wire),)*
                }
            }
            pub fn push(&mut self, w: Waiting) {
                match self {
                    $(AnyQdisc::$ty(d) => d.push(w),)*
                }
            }
            pub fn pop(&mut self) -> Option<Waiting> {
                match self {
                    $(AnyQdisc::$ty(d) => d.pop(),)*
                }
            }
            pub fn make_room(&mut self, incoming: &PacketMeta, min_bytes: u64) -> Option<Waiting> {
                match self {
                    $(AnyQdisc::$ty(d) => d.make_room(incoming, min_bytes),)*
                }
            }
            pub fn held(&self, out: &mut Vec<PacketId>) {
                match self {
                    $(AnyQdisc::$ty(d) => d.held(out),)*
                }
            }
            /// The average queue estimate (RED), for reports.
            pub fn average(&self) -> Option<f64> {
                match self {
                    $(AnyQdisc::$ty(d) => d.average(),)*
                }
            }
            /// The discipline's state as type `D`, if the port runs `D` (tests, reports).
            pub fn get<D: Discipline + 'static>(&self) -> Option<&D> {
                let any: &dyn std::any::Any = match self {
                    $(AnyQdisc::$ty(d) => d,)*
                };
                any.downcast_ref::<D>()
            }
        }

        /// Every discipline, by scenario name.
        pub static REGISTRY: &[Registration] = &[
            $(Registration {
                name: <$ty as Discipline>::NAME,
                keys: <$ty as Discipline>::KEYS,
                default_buffer: <$ty as Discipline>::DEFAULT_BUFFER,
                at_nics: <$ty as Discipline>::AT_NICS,
                parse: |t| <$ty as Discipline>::parse(t).map(QueueConfig::$ty),
            },)*
        ];
    };
}

mod red_ns2;
pub use red::RedConfig;
pub use red_ns2::{Ns2RedConfig, Ns2RedState};

disciplines! {
    droptail::DropTail,
    ecn::EcnThreshold,
    red::Red,
    priority::StrictPriority,
    pfabric::PFabric,
    trim::Trim,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_discipline_is_at_most_three_words_in_the_port() {
        assert!(std::mem::size_of::<AnyQdisc>() <= 24, "{}", std::mem::size_of::<AnyQdisc>());
    }

    #[test]
    fn every_key_belongs_to_one_discipline_and_starts_with_its_prefix() {
        let mut seen = std::collections::HashSet::new();
        for r in REGISTRY {
            for k in r.keys {
                assert!(seen.insert(*k), "{k} is declared twice");
                assert!(k.starts_with(&format!("{}_", r.name)), "{k} does not start with {}_", r.name);
            }
        }
        assert!(lookup("fifo").err().unwrap().contains("known: droptail, ecn, red, priority, pfabric, trim"));
    }
}
