//! Workload generators: `[[workloads]]` entries that expand into flows.
//!
//! One file per kind, registered by one line in the [`workloads!`] list at the bottom of this
//! file: `poisson` (open-loop arrivals at a load or rate), `incast` (rounds of responses to
//! one client, each round starting when the previous one has completed), `partition_aggregate`
//! (requests to workers, then their responses), `permutation`, `shuffle` (MapReduce jobs),
//! `long_lived` and `trace` (CSV replay). A kind's file holds the struct of its keys (read with
//! `deny_unknown_fields`; its fields are the keys the kind takes), its checks and limits, and
//! its [`Workload::generate`], which emits flows through [`Gen`]: listed ([`Gen::push`]) or,
//! for a kind that can give millions, a plan the run draws them from as they start
//! ([`Gen::drawn`]). The keys every kind takes (`start`, `deadline`, `tag`, `protocol`, `ecn`),
//! the protocol parameters, host sets (`Gen::hosts`) and sizes (`Gen::sizes`, [`sizes`]) are
//! read here. Every entry draws from its own random stream, derived from the scenario seed and
//! the entry's position, so adding an entry leaves the flows of the others unchanged. See
//! `docs/workloads.md`; `periodic.rs` (built with the `example-workloads` feature) is the
//! worked example of `docs/architecture.md`.

use crate::deadline::Deadline;
use crate::flowlist::{Draws, FlowPart};
use crate::flows::FlowCtx;
use crate::limits::digits;
use crate::tables::{de, fields_of, split, tag, At};
use crate::units::{parse_duration, Duration, Size};
use crate::{FlowSpec, ScenarioError};
use fctlab_dist::SizeDist;
use fctlab_engine::{Nanos, Rng};
use serde::de::DeserializeOwned;
use serde::Deserialize;

pub use crate::limits::MAX_FLOWS;
mod sizes;
pub(crate) use sizes::parse_sizes;

/// Keys every workload kind takes (every key that neither these nor the kind's own struct
/// name is a parameter of the entry's protocol).
#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct Common {
    /// Read before the rest of the entry (it selects the kind's struct); a field here so that
    /// it counts among the keys every kind takes.
    #[allow(dead_code)]
    kind: String,
    start: Option<Duration>,
    deadline: Option<toml::Value>,
    tag: Option<String>,
    protocol: Option<String>,
    ecn: Option<bool>,
}

/// A workload kind: the struct of its keys (serde, `deny_unknown_fields`), its name, and how an
/// entry of it becomes flows.
trait Workload: DeserializeOwned {
    /// `kind = "..."` in `[[workloads]]`.
    const KIND: &'static str;
    /// Checks the entry and emits its flows through `g`: [`Gen::push`] for each listed flow,
    /// or [`Gen::drawn`] set to the plan the run draws them from. Randomness only from
    /// `g.rng`, so that the entry's flows depend on the seed and its position alone.
    fn generate(&self, g: &mut Gen<'_, '_>) -> Result<(), ScenarioError>;
}

/// One registry entry: a kind's name, its keys, and how its table is read.
struct Registration {
    name: &'static str,
    keys: fn() -> &'static [&'static str],
    parse: fn(toml::Table, At<'_>) -> Result<Entry, ScenarioError>,
}

/// The kind other than `except` whose table takes `key` (the first in list order).
fn kind_taking(key: &str, except: &str) -> Option<&'static str> {
    KINDS.iter().find(|k| k.name != except && (k.keys)().contains(&key)).map(|k| k.name)
}

/// Declares every workload kind: `module::Type` per line (`#[cfg(...)]` attributes allowed).
/// Generates the module declarations, [`Entry`] (an entry's keys, dispatched statically) and
/// [`KINDS`] (in the order of the `known:` lists).
macro_rules! workloads {
    ($($(#[$attr:meta])* $module:ident :: $ty:ident),* $(,)?) => {
        $($(#[$attr])* mod $module;)*

        /// A workload entry's keys, by its kind.
        enum Entry {
            $($(#[$attr])* $ty($module::$ty),)*
        }

        impl Entry {
            fn generate(&self, g: &mut Gen<'_, '_>) -> Result<(), ScenarioError> {
                match self {
                    $($(#[$attr])* Entry::$ty(w) => w.generate(g),)*
                }
            }
        }

        /// Every workload kind, by its `kind`.
        static KINDS: &[Registration] = &[
            $($(#[$attr])* Registration {
                name: <$module::$ty as Workload>::KIND,
                keys: fields_of::<$module::$ty>,
                parse: |t, at| de::<$module::$ty>(t, at).map(Entry::$ty),
            },)*
        ];
    };
}

// The kinds. One line each.
workloads! {
    poisson::Poisson,
    incast::Incast,
    partition_aggregate::PartitionAggregate,
    permutation::Permutation,
    shuffle::Shuffle,
    long_lived::LongLived,
    trace::Trace,
    #[cfg(feature = "example-workloads")]
    periodic::Periodic,
}

/// What a kind's [`Workload::generate`] works with: the scenario's hosts and groups (`ctx`),
/// the entry's own random stream, what every flow of the entry shares, and the flows it gives.
struct Gen<'c, 'a> {
    ctx: &'c mut FlowCtx<'a>,
    kind: &'static str,
    index: usize,
    prefix: String,
    rng: Rng,
    cc: std::sync::Arc<fctlab_transport::CcConfig>,
    /// The protocol as the entry gave it, while it leaves out parameters that
    /// [`Gen::derive_parameters`] may still derive (`cc` holds their defaults meanwhile).
    left_out: Option<fctlab_transport::CcConfig>,
    ecn: bool,
    deadline: Deadline,
    tag: std::sync::Arc<str>,
    start: Nanos,
    /// The flows listed so far ([`Gen::push`]).
    out: Vec<FlowSpec>,
    /// Set instead of `out` by a kind whose flows are drawn when needed.
    drawn: Option<Draws>,
}

/// Expands workload entry `index` into flows: listed, or drawn when needed (open-loop
/// arrivals).
pub(crate) fn generate(
    mut entry: toml::Table,
    index: usize,
    ctx: &mut FlowCtx<'_>,
    seed: u64,
) -> Result<FlowPart, ScenarioError> {
    let prefix = format!("workloads[{index}]");
    let file = ctx.file.clone();
    let at = At { file: &file, prefix: &prefix };
    // The kind first: it says which keys the entry takes.
    let kind_name = tag(&entry, "kind", at)?;
    let kind = KINDS.iter().find(|k| k.name == kind_name).ok_or_else(|| {
        let known: Vec<&str> = KINDS.iter().map(|k| k.name).collect();
        at.err("kind", format!("unknown workload kind \"{kind_name}\" (known: {})", known.join(", ")))
    })?;
    let own = (kind.keys)();
    let common_keys = fields_of::<Common>();
    if let Some(k) = entry.keys().find(|k| {
        !own.contains(&k.as_str()) && !common_keys.contains(&k.as_str()) && kind_taking(k, &kind_name).is_some()
    }) {
        return Err(at.err(k, format!("not used by a \"{kind_name}\" workload (its keys: {})", own.join(", "))));
    }
    entry.remove("kind");
    let (common, rest) = split(entry, common_keys);
    let (specific, protocol_params) = split(rest, own);
    let mut common_table = common;
    common_table.insert("kind".into(), toml::Value::String(kind_name.clone()));
    let c: Common = de(common_table, at)?;
    let w = (kind.parse)(specific, at)?;
    let mut own_keys: Vec<&str> = common_keys.to_vec();
    own_keys.extend(own.iter());
    let (mut cc, ecn) = ctx.protocol(c.protocol.as_deref(), c.ecn, &protocol_params, &prefix, &own_keys)?;
    // Left-out parameters take their defaults here; a kind with sizes and a load derives them
    // instead ([`Gen::derive_parameters`]).
    let left_out = crate::derived::left_out(&cc).then(|| cc.clone());
    let defaulted = crate::derived::settle(&mut cc, None, ctx.priority_bands).map_err(|m| at.err("protocol", m))?;
    let deadline = parse_deadline(ctx, &prefix, c.deadline.as_ref())?;
    let tag = ctx.label(c.tag.as_deref());
    let mut g = Gen {
        rng: Rng::stream(seed, 0x3000_0000 + index as u64),
        ctx,
        kind: kind.name,
        index,
        prefix,
        cc: std::sync::Arc::new(cc),
        left_out,
        ecn,
        deadline,
        tag,
        start: c.start.map(|d| d.0).unwrap_or(Nanos::ZERO),
        out: Vec::new(),
        drawn: None,
    };
    w.generate(&mut g)?;
    // A default the kind did not replace with a derived value.
    if let (Some(note), Some(_)) = (defaulted, &g.left_out) {
        let note = format!("{}: {note}", g.prefix);
        g.ctx.derived.push(note);
    }
    Ok(match g.drawn {
        Some(d) => FlowPart::Drawn(d),
        None => FlowPart::Listed(g.out),
    })
}

fn parse_deadline(ctx: &FlowCtx<'_>, prefix: &str, v: Option<&toml::Value>) -> Result<Deadline, ScenarioError> {
    let key = format!("{prefix}.deadline");
    let dur = |v: &toml::Value, k: &str| -> Result<Nanos, ScenarioError> {
        match v {
            toml::Value::String(s) => parse_duration(s).map_err(|m| ctx.err(k, m)),
            other => Err(ctx.err(k, format!("expected a time such as \"30ms\", got {other}"))),
        }
    };
    match v {
        None => Ok(Deadline::None),
        Some(toml::Value::Table(t)) => {
            let mut d = Deadline::ByClass { small: None, medium: None, large: None };
            for (k, val) in t {
                let sub = format!("{key}.{k}");
                let ns = dur(val, &sub)?;
                if let Deadline::ByClass { small, medium, large } = &mut d {
                    match k.as_str() {
                        "small" => *small = Some(ns),
                        "medium" => *medium = Some(ns),
                        "large" => *large = Some(ns),
                        _ => {
                            return Err(ctx.err(
                                &sub,
                                "size classes are small (< 100KB), medium (100KB to 10MB) and large (>= 10MB)",
                            ))
                        }
                    }
                }
            }
            Ok(d)
        }
        Some(other) => Ok(Deadline::Fixed(dur(other, &key)?)),
    }
}

impl Gen<'_, '_> {
    /// `pattern = "pairs"`: as many receivers as senders, sender i to receiver i, none a host
    /// to itself.
    pub fn check_pairs(&self, senders: &[usize], receivers: &[usize]) -> Result<(), ScenarioError> {
        if senders.len() != receivers.len() {
            return Err(self.err(
                "receivers",
                format!(
                    "pattern \"pairs\" needs as many receivers as senders ({} vs {})",
                    receivers.len(),
                    senders.len()
                ),
            ));
        }
        if let Some(i) = (0..senders.len()).find(|&i| senders[i] == receivers[i]) {
            return Err(self.err("receivers", format!("pair {i} is a host to itself")));
        }
        Ok(())
    }

    fn key(&self, k: &str) -> String {
        format!("{}.{k}", self.prefix)
    }
    fn err(&self, k: &str, m: impl Into<String>) -> ScenarioError {
        self.ctx.err(&self.key(k), m)
    }

    /// A set of hosts: a list of names, or one string of [`FlowCtx::host_set`]'s forms
    /// (`"all"`, `"s*"`, `"h8..h31"`, `"under:leaf1"`); a list's entries may be any of them.
    fn hosts(&self, v: Option<&toml::Value>, k: &str) -> Result<Vec<usize>, ScenarioError> {
        let v = v.ok_or_else(|| self.err(k, format!("a \"{}\" workload needs `{k}`", self.kind)))?;
        let list = match v {
            toml::Value::String(s) => self.ctx.host_set(s, &self.key(k))?,
            toml::Value::Array(a) => {
                let mut l = Vec::with_capacity(a.len());
                for (i, x) in a.iter().enumerate() {
                    let name = x.as_str().ok_or_else(|| self.err(&format!("{k}[{i}]"), "expected a host name"))?;
                    l.extend(self.ctx.host_set(name, &self.key(&format!("{k}[{i}]")))?);
                }
                l
            }
            other => return Err(self.err(k, format!("expected a list of host names, \"all\", a prefix like \"s*\", a range like \"h8..h31\" or \"under:SWITCH\", got {other}"))),
        };
        if list.is_empty() {
            return Err(self.err(k, "the host set is empty"));
        }
        Ok(list)
    }

    fn host(&self, name: Option<&String>, k: &str) -> Result<usize, ScenarioError> {
        let name = name.ok_or_else(|| self.err(k, format!("a \"{}\" workload needs `{k}`", self.kind)))?;
        self.ctx.host(name, &self.key(k))
    }

    fn sizes(&self, sizes: Option<&toml::Value>, required: bool) -> Result<Option<SizeDist>, ScenarioError> {
        let Some(v) = sizes else {
            return if required {
                Err(self.err("sizes", format!("a \"{}\" workload needs `sizes`", self.kind)))
            } else {
                Ok(None)
            };
        };
        parse_sizes(self.ctx, &self.key("sizes"), v).map(Some)
    }

    /// Access capacity of host node `h` in bits per second: the sum of its links' rates.
    fn access_rate_bps(&self, h: usize) -> f64 {
        self.ctx.topology.links.iter().filter(|l| l.a == h || l.b == h).map(|l| l.params.rate.as_f64()).sum()
    }

    /// Rate in bits per second of the link named "a->b" (either direction of a link a-b).
    fn link_rate_bps(&self, name: &str) -> Result<f64, ScenarioError> {
        let topo = self.ctx.topology;
        let found = name.split_once("->").and_then(|(a, b)| {
            let (a, b) = (topo.find(a.trim())?, topo.find(b.trim())?);
            topo.links.iter().find(|l| (l.a == a && l.b == b) || (l.a == b && l.b == a))
        });
        found.map(|l| l.params.rate.as_f64()).ok_or_else(|| {
            self.err("load_link", format!("\"{name}\" is not a link; write \"a->b\" with two adjacent node names"))
        })
    }

    /// Derives the protocol parameters the entry left out (PIAS's demotion thresholds) from its
    /// sizes and its load as a fraction of the receivers' links; before [`Gen::template`].
    fn derive_parameters(&mut self, sizes: &SizeDist, load: f64) -> Result<(), ScenarioError> {
        let Some(mut cc) = self.left_out.take() else { return Ok(()) };
        let bands = self.ctx.priority_bands;
        let note = crate::derived::settle(&mut cc, Some((sizes, load)), bands).map_err(|m| self.err("load", m))?;
        self.cc = std::sync::Arc::new(cc);
        if let Some(note) = note {
            let note = format!("{}: {note}", self.prefix);
            self.ctx.derived.push(note);
        }
        Ok(())
    }

    /// What every flow of the entry shares (its protocol, ECN and tag; hosts, size, start and
    /// group filled in per flow).
    fn template(&self) -> FlowSpec {
        FlowSpec {
            src: 0,
            dst: 0,
            size_bytes: None,
            start: Nanos::ZERO,
            deadline: None,
            tag: self.tag.clone(),
            group: self.ctx.empty.clone(),
            group_id: None,
            after: None,
            cc: self.cc.clone(),
            ecn: self.ecn,
        }
    }

    fn push(&mut self, src: usize, dst: usize, size: Option<u64>, start: Nanos, group: &str, after: Option<u32>) {
        let group_id = self.ctx.group(group);
        let spec = FlowSpec {
            src,
            dst,
            size_bytes: size,
            start,
            deadline: self.deadline.for_size(size),
            group: self.ctx.group_name(group_id),
            group_id,
            after,
            ..self.template()
        };
        self.out.push(spec);
    }

    fn response_dist(
        &self,
        response_size: Option<Size>,
        sizes: Option<&toml::Value>,
    ) -> Result<SizeDist, ScenarioError> {
        match (response_size, self.sizes(sizes, false)?) {
            (Some(_), Some(_)) => Err(self.err("sizes", "give either `response_size` or `sizes`, not both")),
            (Some(s), None) => SizeDist::fixed(s.0).map_err(|m| self.err("response_size", m)),
            (None, Some(d)) => Ok(d),
            (None, None) => {
                Err(self.err("response_size", format!("a \"{}\" workload needs `response_size` or `sizes`", self.kind)))
            }
        }
    }

    /// Refuses a workload that would generate more flows than one run accepts, before any of
    /// them is generated; `key` is the size that multiplies them (`n` = `what` flows).
    fn at_most_flows(&self, key: &str, n: u128, what: &str) -> Result<(), ScenarioError> {
        if n > MAX_FLOWS as u128 {
            return Err(self
                .err(key, format!("{what} = {n} flows is more than this simulator accepts in one run (20,000,000)")));
        }
        let listed = self.ctx.listed as u128 + n;
        crate::limits::check_memory(
            listed * crate::limits::BYTES_PER_LISTED_FLOW as u128,
            &format!("{what} = {} flows ({} listed up front in all)", digits(n), digits(listed)),
            "list fewer flows, or draw them as they start (a poisson workload or a trace sorted by start_s)",
        )
        .map_err(|m| self.err(key, m))
    }

    /// Job start times: `jobs` jobs, Poisson at `arrival_rate`, or every `job_interval`.
    fn job_starts(
        &mut self,
        jobs: Option<u64>,
        arrival_rate: Option<&String>,
        job_interval: Option<Duration>,
    ) -> Result<Vec<Nanos>, ScenarioError> {
        let jobs = jobs.unwrap_or(1);
        if jobs == 0 || jobs > 10_000_000 {
            return Err(self.err("jobs", format!("must be between 1 and 10,000,000, got {jobs}")));
        }
        let mut starts = Vec::with_capacity(jobs as usize);
        match (arrival_rate, job_interval) {
            (Some(_), Some(_)) => {
                return Err(self.err("arrival_rate", "give either `arrival_rate` or `job_interval`, not both"))
            }
            (Some(r), None) => {
                let rate = parse_per_second(r).map_err(|m| self.err("arrival_rate", m))?;
                // As for Poisson flows: the first job one random gap after `start`.
                let mut t = 0.0;
                for _ in 0..jobs {
                    t += -(1e9 / rate) * (1.0 - self.rng.uniform()).ln();
                    starts.push(self.start + Nanos::from_nanos(t.round() as u64));
                }
            }
            (None, interval) => {
                let iv = interval.map(|d| d.0).unwrap_or(Nanos::ZERO);
                for j in 0..jobs {
                    starts.push(self.start + iv.mul(j));
                }
            }
        }
        Ok(starts)
    }
}

/// "500/s", "2/ms", "0.5/us" -> per second.
pub fn parse_per_second(s: &str) -> Result<f64, String> {
    let expect = || format!("expected a rate of events like \"500/s\" or \"2/ms\", got \"{s}\"");
    let (n, unit) = s.split_once('/').ok_or_else(expect)?;
    let v: f64 = n.trim().parse().map_err(|_| expect())?;
    let per = match unit.trim() {
        "s" => 1.0,
        "ms" => 1e3,
        "us" => 1e6,
        "min" => 1.0 / 60.0,
        _ => return Err(expect()),
    };
    if !(v > 0.0 && v.is_finite()) {
        return Err(format!("the rate must be positive, got \"{s}\""));
    }
    Ok(v * per)
}
