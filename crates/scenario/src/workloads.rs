//! Workload generators: `[[workloads]]` entries that expand into flows.
//!
//! Kinds: `poisson` (open-loop arrivals at a load or rate), `incast` (rounds of responses to
//! one client, each round starting when the previous one has completed), `partition_aggregate`
//! (requests to workers, then their responses), `permutation`, `shuffle` (MapReduce jobs),
//! `long_lived` and `trace` (CSV replay). Every entry draws from its own random stream,
//! derived from the scenario seed and the entry's position, so adding an entry leaves the
//! flows of the others unchanged. See `docs/workloads.md`.

use crate::deadline::Deadline;
use crate::flowlist::{DrawPlan, Draws, FlowPart, Pattern};
use crate::flows::FlowCtx;
pub use crate::limits::MAX_FLOWS;
use crate::limits::{past_max_time, MAX_TIME};
use crate::paths::relative_to;
use crate::tables::{de, fields_of, split, tag, tagged_tables, At};
use crate::units::{parse_duration, parse_size, Duration, Size};
use crate::{FlowSpec, ScenarioError};
use fctlab_dist::{Cdf, SizeDist};
use fctlab_engine::{Nanos, Rng};
use serde::Deserialize;

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

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct Poisson {
    senders: Option<toml::Value>,
    receivers: Option<toml::Value>,
    pattern: Option<String>,
    sizes: Option<toml::Value>,
    load: Option<f64>,
    load_link: Option<String>,
    arrival_rate: Option<String>,
    count: Option<u64>,
    until: Option<Duration>,
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct Incast {
    client: Option<String>,
    servers: Option<toml::Value>,
    response_size: Option<Size>,
    sizes: Option<toml::Value>,
    rounds: Option<u64>,
    round_gap: Option<Duration>,
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct PartitionAggregate {
    aggregator: Option<String>,
    workers: Option<toml::Value>,
    request_size: Option<Size>,
    response_size: Option<Size>,
    sizes: Option<toml::Value>,
    jobs: Option<u64>,
    arrival_rate: Option<String>,
    job_interval: Option<Duration>,
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct Permutation {
    senders: Option<toml::Value>,
    receivers: Option<toml::Value>,
    sizes: Option<toml::Value>,
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct Shuffle {
    mappers: Option<toml::Value>,
    reducers: Option<toml::Value>,
    block_size: Option<Size>,
    jobs: Option<u64>,
    arrival_rate: Option<String>,
    job_interval: Option<Duration>,
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct LongLived {
    senders: Option<toml::Value>,
    receivers: Option<toml::Value>,
    pattern: Option<String>,
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct Trace {
    file: Option<String>,
}

tagged_tables! {
    /// A workload entry by its `kind`, with the keys of that kind.
    enum Kind {
        "poisson" => Poisson(Poisson),
        "incast" => Incast(Incast),
        "partition_aggregate" => PartitionAggregate(PartitionAggregate),
        "permutation" => Permutation(Permutation),
        "shuffle" => Shuffle(Shuffle),
        "long_lived" => LongLived(LongLived),
        "trace" => Trace(Trace),
    }
}

struct Gen<'c, 'a> {
    ctx: &'c mut FlowCtx<'a>,
    kind: &'static str,
    index: usize,
    prefix: String,
    rng: Rng,
    cc: std::sync::Arc<fctlab_transport::CcConfig>,
    ecn: bool,
    deadline: Deadline,
    tag: String,
    start: Nanos,
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
    let own = Kind::keys_of(&kind_name).ok_or_else(|| {
        at.err("kind", format!("unknown workload kind \"{kind_name}\" (known: {})", Kind::NAMES.join(", ")))
    })?;
    let common_keys = fields_of::<Common>();
    if let Some(k) = entry.keys().find(|k| {
        !own.contains(&k.as_str()) && !common_keys.contains(&k.as_str()) && Kind::tag_taking(k, &kind_name).is_some()
    }) {
        return Err(at.err(k, format!("not used by a \"{kind_name}\" workload (its keys: {})", own.join(", "))));
    }
    entry.remove("kind");
    let (common, rest) = split(entry, common_keys);
    let (specific, protocol_params) = split(rest, own);
    let mut common_table = common;
    common_table.insert("kind".into(), toml::Value::String(kind_name.clone()));
    let c: Common = de(common_table, at)?;
    let w = Kind::parse(&kind_name, specific, at)?;
    let mut own_keys: Vec<&str> = common_keys.to_vec();
    own_keys.extend(own.iter());
    let (cc, ecn) = ctx.protocol(c.protocol.as_deref(), c.ecn, &protocol_params, &prefix, &own_keys)?;
    let deadline = parse_deadline(ctx, &prefix, c.deadline.as_ref())?;
    let mut g = Gen {
        rng: Rng::stream(seed, 0x3000_0000 + index as u64),
        ctx,
        kind: w.name(),
        index,
        prefix,
        cc: std::sync::Arc::new(cc),
        ecn,
        deadline,
        tag: c.tag.clone().unwrap_or_default(),
        start: c.start.map(|d| d.0).unwrap_or(Nanos::ZERO),
        out: Vec::new(),
        drawn: None,
    };
    match &w {
        Kind::Poisson(w) => g.poisson(w)?,
        Kind::Incast(w) => g.incast(w)?,
        Kind::PartitionAggregate(w) => g.partition_aggregate(w)?,
        Kind::Permutation(w) => g.permutation(w)?,
        Kind::Shuffle(w) => g.shuffle(w)?,
        Kind::LongLived(w) => g.long_lived(w)?,
        Kind::Trace(w) => g.trace(w)?,
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

    /// Flows per second from `arrival_rate`, or from `load` given the mean size.
    fn rate_per_s(&self, w: &Poisson, mean_bytes: Option<f64>, receivers: &[usize]) -> Result<f64, ScenarioError> {
        match (w.load, w.arrival_rate.as_ref()) {
            (Some(_), Some(_)) => Err(self.err("load", "give either `load` or `arrival_rate`, not both")),
            (None, Some(r)) => {
                if w.load_link.is_some() {
                    return Err(self.err("load_link", "only used with `load`"));
                }
                parse_per_second(r).map_err(|m| self.err("arrival_rate", m))
            }
            (Some(load), None) => {
                if !(load > 0.0 && load.is_finite()) {
                    return Err(self.err("load", format!("must be a positive number (a fraction of the receivers' capacity; above 1 overloads them), got {load}")));
                }
                let mean =
                    mean_bytes.ok_or_else(|| self.err("load", "needs `sizes` to turn a load into an arrival rate"))?;
                let capacity: f64 = match w.load_link.as_deref() {
                    // A fraction of one named link (e.g. a bottleneck).
                    Some(name) => self.link_rate_bps(name)?,
                    None => {
                        let mut distinct = receivers.to_vec();
                        distinct.sort();
                        distinct.dedup();
                        distinct.iter().map(|&h| self.access_rate_bps(h)).sum()
                    }
                };
                Ok(load * capacity / (8.0 * mean))
            }
            (None, None) => {
                Err(self.err("load", format!("a \"{}\" workload needs `load` or `arrival_rate`", self.kind)))
            }
        }
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
            group: String::new(),
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
            group: group.to_string(),
            group_id,
            after,
            ..self.template()
        };
        self.out.push(spec);
    }

    fn poisson(&mut self, w: &Poisson) -> Result<(), ScenarioError> {
        let senders = self.hosts(w.senders.as_ref(), "senders")?;
        let receivers = self.hosts(w.receivers.as_ref(), "receivers")?;
        let dist = self.sizes(w.sizes.as_ref(), true)?.expect("required");
        let pattern = w.pattern.as_deref().unwrap_or("all_to_all");
        match pattern {
            "all_to_all" => {
                if senders.len() == 1 && receivers.len() == 1 && senders[0] == receivers[0] {
                    return Err(self.err("receivers", "senders and receivers are the same single host"));
                }
            }
            "pairs" => {
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
            }
            "many_to_one" => {
                if receivers.len() != 1 {
                    return Err(self.err("receivers", "pattern \"many_to_one\" needs exactly one receiver"));
                }
                if senders.iter().all(|&s| s == receivers[0]) {
                    return Err(self.err("senders", "no sender other than the receiver"));
                }
            }
            other => {
                return Err(
                    self.err("pattern", format!("unknown pattern \"{other}\" (known: all_to_all, pairs, many_to_one)"))
                )
            }
        }
        let rate = self.rate_per_s(w, Some(dist.mean_bytes()), &receivers)?;
        if !(rate > 0.0 && rate.is_finite()) {
            return Err(self.err("arrival_rate", "the arrival rate must be positive"));
        }
        let (count, until) = (w.count, w.until.map(|d| d.0));
        if count.is_none() && until.is_none() {
            return Err(
                self.err("count", "a \"poisson\" workload needs `count` (flows) or `until` (a duration) to end")
            );
        }
        if count.is_some_and(|c| c > MAX_FLOWS) {
            return Err(self.err(
                "count",
                format!("{} flows is more than this simulator accepts in one run (20,000,000)", count.unwrap_or(0)),
            ));
        }
        // Refused before drawing when the window's expected count is clearly beyond the limit
        // (the draw itself stops at the limit too).
        if let (None, Some(u)) = (count, until) {
            let expected = rate * u.as_secs_f64();
            if expected > 1.1 * MAX_FLOWS as f64 {
                return Err(self.err(
                    "until",
                    format!(
                        "about {expected:.0} flows at {rate:.0} per second, more than this simulator accepts in one run \
                         (20,000,000); shorten `until` or set `count`"
                    ),
                ));
            }
        }
        let template = self.template();
        let plan = DrawPlan {
            rng: self.rng.clone(),
            senders,
            receivers,
            pattern: match pattern {
                "pairs" => Pattern::Pairs,
                "many_to_one" => Pattern::ManyToOne,
                _ => Pattern::AllToAll,
            },
            sizes: dist,
            mean_gap_ns: 1e9 / rate,
            count: count.unwrap_or(u64::MAX),
            until,
            start: self.start,
            deadline: self.deadline.clone(),
            template,
        };
        // Drawn once here to count them and check each; drawn again as the run needs them.
        let draws = Draws::counted(plan, |n, f| {
            if n > MAX_FLOWS {
                return Err(self.err("until", "more than 20,000,000 flows; shorten `until` or set `count`"));
            }
            if f.start > MAX_TIME {
                return Err(self.ctx.err(&self.prefix, past_max_time(f.start)));
            }
            Ok(())
        })?;
        self.drawn = Some(draws);
        Ok(())
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

    fn incast(&mut self, w: &Incast) -> Result<(), ScenarioError> {
        let client = self.host(w.client.as_ref(), "client")?;
        let servers = self.hosts(w.servers.as_ref(), "servers")?;
        if servers.contains(&client) {
            return Err(self.err("servers", "the client cannot also be a server"));
        }
        let dist = self.response_dist(w.response_size, w.sizes.as_ref())?;
        let rounds = w.rounds.unwrap_or(1);
        if rounds == 0 || rounds > 1_000_000 {
            return Err(self.err("rounds", format!("must be between 1 and 1,000,000, got {rounds}")));
        }
        self.at_most_flows("rounds", rounds as u128 * servers.len() as u128, "rounds × servers")?;
        let gap = w.round_gap.map(|d| d.0).unwrap_or(Nanos::ZERO);
        let mut prev: Option<u32> = None;
        for r in 0..rounds {
            let group = format!("incast{}:{r}", self.index);
            let start = if r == 0 { self.start } else { gap };
            for &s in &servers {
                let size = dist.sample(&mut self.rng);
                self.push(s, client, Some(size), start, &group, prev);
            }
            prev = self.ctx.group(&group);
        }
        Ok(())
    }

    /// Refuses a workload that would generate more flows than one run accepts, before any of
    /// them is generated; `key` is the size that multiplies them (`n` = `what` flows).
    fn at_most_flows(&self, key: &str, n: u128, what: &str) -> Result<(), ScenarioError> {
        if n > MAX_FLOWS as u128 {
            return Err(self
                .err(key, format!("{what} = {n} flows is more than this simulator accepts in one run (20,000,000)")));
        }
        Ok(())
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
                    starts.push(self.start + Nanos(t.round() as u64));
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

    fn partition_aggregate(&mut self, w: &PartitionAggregate) -> Result<(), ScenarioError> {
        let agg = self.host(w.aggregator.as_ref(), "aggregator")?;
        let workers = self.hosts(w.workers.as_ref(), "workers")?;
        if workers.contains(&agg) {
            return Err(self.err("workers", "the aggregator cannot also be a worker"));
        }
        // A request size of 0: requests are not modelled, the responses start at the job's time.
        let request = w.request_size.map(|s| s.0).unwrap_or(1_000);
        let dist = self.response_dist(w.response_size, w.sizes.as_ref())?;
        let per_job = workers.len() as u128 * if request == 0 { 1 } else { 2 };
        self.at_most_flows("jobs", w.jobs.unwrap_or(1) as u128 * per_job, "jobs × workers (× 2 with requests)")?;
        for (j, at) in self.job_starts(w.jobs, w.arrival_rate.as_ref(), w.job_interval)?.into_iter().enumerate() {
            let r = format!("pa{}:{j}", self.index);
            let (start, after) = if request == 0 {
                (at, None)
            } else {
                let q = format!("pa{}:{j}:requests", self.index);
                for &wk in &workers {
                    self.push(agg, wk, Some(request), at, &q, None);
                }
                (Nanos::ZERO, self.ctx.group(&q))
            };
            for &wk in &workers {
                let size = dist.sample(&mut self.rng);
                self.push(wk, agg, Some(size), start, &r, after);
            }
        }
        Ok(())
    }

    fn permutation(&mut self, w: &Permutation) -> Result<(), ScenarioError> {
        let senders = self.hosts(w.senders.as_ref(), "senders")?;
        let receivers = match w.receivers.as_ref() {
            Some(v) => self.hosts(Some(v), "receivers")?,
            None => senders.clone(),
        };
        if receivers.len() < senders.len() {
            return Err(self.err(
                "receivers",
                format!("needs at least as many receivers as senders ({} < {})", receivers.len(), senders.len()),
            ));
        }
        let dist = self.sizes(w.sizes.as_ref(), false)?;
        if dist.is_none() && self.ctx.stop_time.is_none() {
            return Err(
                self.err("sizes", "without `sizes` the flows are long-lived and the scenario needs `stop_time`")
            );
        }
        // A random assignment with no host sending to itself (retry a shuffle; bounded).
        let mut perm: Vec<usize> = receivers.clone();
        let mut ok = false;
        for _ in 0..1000 {
            for i in (1..perm.len()).rev() {
                let j = self.rng.below(i as u64 + 1) as usize;
                perm.swap(i, j);
            }
            if senders.iter().zip(&perm).all(|(s, d)| s != d) {
                ok = true;
                break;
            }
        }
        if !ok {
            return Err(self.err("receivers", "cannot pair every sender with a different receiver"));
        }
        for (i, &s) in senders.iter().enumerate() {
            let size = dist.as_ref().map(|d| d.sample(&mut self.rng));
            self.push(s, perm[i], size, self.start, "", None);
        }
        Ok(())
    }

    fn shuffle(&mut self, w: &Shuffle) -> Result<(), ScenarioError> {
        let mappers = self.hosts(w.mappers.as_ref(), "mappers")?;
        let reducers = self.hosts(w.reducers.as_ref(), "reducers")?;
        let block = w
            .block_size
            .ok_or_else(|| {
                self.err(
                    "block_size",
                    "a \"shuffle\" workload needs `block_size` (bytes each mapper sends each reducer)",
                )
            })?
            .0;
        if block == 0 {
            return Err(self.err("block_size", "must be positive"));
        }
        if !mappers.iter().any(|m| reducers.iter().any(|r| r != m)) {
            return Err(self.err("reducers", "no mapper-reducer pair between different hosts"));
        }
        let per_job = mappers.len() as u128 * reducers.len() as u128;
        self.at_most_flows("jobs", w.jobs.unwrap_or(1) as u128 * per_job, "jobs × mappers × reducers")?;
        for (j, at) in self.job_starts(w.jobs, w.arrival_rate.as_ref(), w.job_interval)?.into_iter().enumerate() {
            let group = format!("shuffle{}:{j}", self.index);
            for &m in &mappers {
                for &r in &reducers {
                    if m != r {
                        self.push(m, r, Some(block), at, &group, None);
                    }
                }
            }
        }
        Ok(())
    }

    fn long_lived(&mut self, w: &LongLived) -> Result<(), ScenarioError> {
        if self.ctx.stop_time.is_none() {
            return Err(self.err("kind", "long-lived flows need a top-level `stop_time`"));
        }
        let senders = self.hosts(w.senders.as_ref(), "senders")?;
        let receivers = self.hosts(w.receivers.as_ref(), "receivers")?;
        // Default: pairs when the sets line up without a host paired with itself, else all-to-all.
        let pairable = senders.len() == receivers.len() && senders.iter().zip(&receivers).all(|(s, r)| s != r);
        let pattern = w.pattern.as_deref().unwrap_or(if pairable { "pairs" } else { "all_to_all" });
        match pattern {
            "pairs" => {
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
                for i in 0..senders.len() {
                    if senders[i] == receivers[i] {
                        return Err(self.err("receivers", format!("pair {i} is a host to itself")));
                    }
                    self.push(senders[i], receivers[i], None, self.start, "", None);
                }
            }
            "all_to_all" => {
                self.at_most_flows("senders", senders.len() as u128 * receivers.len() as u128, "senders × receivers")?;
                for &s in &senders {
                    for &d in &receivers {
                        if s != d {
                            self.push(s, d, None, self.start, "", None);
                        }
                    }
                }
            }
            other => {
                return Err(self.err(
                    "pattern",
                    format!("unknown pattern \"{other}\" for long-lived flows (known: pairs, all_to_all)"),
                ))
            }
        }
        Ok(())
    }

    fn trace(&mut self, w: &Trace) -> Result<(), ScenarioError> {
        let name = w.file.clone().ok_or_else(|| self.err("file", "a \"trace\" workload needs `file` (a CSV file)"))?;
        let template = self.template();
        let entry = crate::trace::Entry {
            scenario_file: &self.ctx.file,
            name: &name,
            topology: self.ctx.topology,
            host_list: self.ctx.host_list(),
            start: self.start,
            deadline: self.deadline.clone(),
            template,
        };
        let loaded = crate::trace::load(entry).map_err(|m| self.err("file", m))?;
        if loaded.count > MAX_FLOWS {
            return Err(self.err(
                "file",
                format!("{} flows, more than this simulator accepts in one run (20,000,000)", loaded.count),
            ));
        }
        if let (true, Some(t)) = (loaded.sorted, loaded.past_max_time) {
            return Err(self.ctx.err(&self.prefix, past_max_time(t)));
        }
        if loaded.sorted {
            // Read again as the run goes on, one flow as each starts.
            self.drawn = Some(Draws::trace(loaded.plan, loaded.count));
            return Ok(());
        }
        // Unsorted: held, so that the run can start them in time order.
        let mut rows = loaded.plan.rows().map_err(|m| self.err("file", m))?;
        let mut record = csv::StringRecord::new();
        while let Some(f) = loaded.plan.next(&mut rows, &mut record).map_err(|m| self.err("file", m))? {
            self.out.push(f);
        }
        Ok(())
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

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct FixedDist {
    size: Option<Size>,
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct UniformDist {
    min: Option<Size>,
    max: Option<Size>,
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct ExponentialDist {
    mean: Option<Size>,
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct LognormalDist {
    mean: Option<Size>,
    sigma: Option<f64>,
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct ParetoDist {
    shape: Option<f64>,
    mean: Option<Size>,
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct ParetoCDist {
    alpha: Option<f64>,
    c: Option<f64>,
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct BoundedParetoDist {
    shape: Option<f64>,
    min: Option<Size>,
    max: Option<Size>,
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct CdfDist {
    file: Option<String>,
    /// The unit of the file's sizes: "B" (default), "KB", ..., or "pkt" (1460 B).
    unit: Option<String>,
}

tagged_tables! {
    /// A size distribution written as a table, by its `dist`.
    enum DistTable {
        "fixed" => Fixed(FixedDist),
        "uniform" => Uniform(UniformDist),
        "exponential" => Exponential(ExponentialDist),
        "lognormal" => Lognormal(LognormalDist),
        "pareto" => Pareto(ParetoDist),
        "pareto_c" => ParetoC(ParetoCDist),
        "bounded_pareto" => BoundedPareto(BoundedParetoDist),
        "cdf" => Cdf(CdfDist),
    }
}

/// `sizes = "websearch" | "10KB" | { dist = ..., ... }`.
pub(crate) fn parse_sizes(ctx: &FlowCtx<'_>, key: &str, v: &toml::Value) -> Result<SizeDist, ScenarioError> {
    let err = |k: &str, m: String| ctx.err(k, m);
    match v {
        toml::Value::String(s) => {
            if let Some(c) = Cdf::builtin(s) {
                return SizeDist::empirical(c).map_err(|m| err(key, m));
            }
            match parse_size(s) {
                Ok(b) => SizeDist::fixed(b).map_err(|m| err(key, m)),
                Err(_) => Err(err(
                    key,
                    format!("\"{s}\" is neither a shipped distribution ({}) nor a size like \"10KB\"", Cdf::builtin_names().join(", ")),
                )),
            }
        }
        toml::Value::Integer(b) if *b > 0 => SizeDist::fixed(*b as u64).map_err(|m| err(key, m)),
        toml::Value::Table(t) => {
            let at = At { file: &ctx.file, prefix: key };
            let dist = tag(t, "dist", at)?;
            let allowed = DistTable::keys_of(&dist)
                .ok_or_else(|| err(&format!("{key}.dist"), format!("unknown distribution \"{dist}\" (known: {})", DistTable::NAMES.join(", "))))?;
            if let Some(k) = t.keys().find(|k| *k != "dist" && !allowed.contains(&k.as_str())) {
                return Err(err(&format!("{key}.{k}"), format!("not a parameter of \"{dist}\" (its parameters: {})", allowed.join(", "))));
            }
            let mut params = t.clone();
            params.remove("dist");
            let need = |k: &str| err(&format!("{key}.{k}"), format!("\"{dist}\" needs `{k}`"));
            let size = |v: Option<Size>, k: &str| v.map(|s| s.0).ok_or_else(|| need(k));
            let num = |v: Option<f64>, k: &str| v.ok_or_else(|| need(k));
            let r = match DistTable::parse(&dist, params, at)? {
                DistTable::Fixed(d) => SizeDist::fixed(size(d.size, "size")?),
                DistTable::Uniform(d) => SizeDist::uniform(size(d.min, "min")?, size(d.max, "max")?),
                DistTable::Exponential(d) => SizeDist::exponential(size(d.mean, "mean")? as f64),
                DistTable::Lognormal(d) => SizeDist::lognormal(size(d.mean, "mean")? as f64, num(d.sigma, "sigma")?),
                DistTable::Pareto(d) => SizeDist::pareto(num(d.shape, "shape")?, size(d.mean, "mean")? as f64),
                DistTable::ParetoC(d) => SizeDist::pareto_c(num(d.alpha, "alpha")?, num(d.c, "c")?),
                DistTable::BoundedPareto(d) => SizeDist::bounded_pareto(num(d.shape, "shape")?, size(d.min, "min")? as f64, size(d.max, "max")? as f64),
                DistTable::Cdf(d) => {
                    let file = d.file.ok_or_else(|| need("file"))?;
                    let unit = match d.unit.as_deref() {
                        None => 1.0,
                        Some("pkt" | "packets") => 1460.0,
                        Some(u) => parse_size(&format!("1{u}")).map_err(|m| err(&format!("{key}.unit"), m))? as f64,
                    };
                    let path = relative_to(&ctx.file, &file);
                    let text = std::fs::read_to_string(&path).map_err(|e| err(&format!("{key}.file"), format!("cannot read {}: {e}", path.display())))?;
                    let cdf = Cdf::parse(&text, unit, &path.display().to_string()).map_err(|m| err(&format!("{key}.file"), m))?;
                    SizeDist::empirical(cdf)
                }
            };
            r.map_err(|m| err(key, m))
        }
        other => Err(err(key, format!("expected a distribution name (\"websearch\"), a size (\"10KB\") or a table {{ dist = ... }}, got {other}"))),
    }
}
