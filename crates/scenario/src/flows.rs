//! The `[[flows]]` entries, and what building any flow needs (the context shared with the
//! workload generators): host names, protocols and their parameters, flow groups.

use crate::flowlist::FlowList;
use crate::tables::{fields_of, split};
use crate::units::{Duration, Size};
use crate::{FlowSpec, ScenarioError};
use fctlab_engine::Nanos;
use fctlab_net::{NodeKind, Topology};
use fctlab_transport::{cc, TcpConfig};
use serde::Deserialize;
use std::sync::Arc;

/// The keys of a `[[flows]]` entry (every other key is a parameter of its protocol).
#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct FlowKeys {
    src: String,
    dst: String,
    size: Option<Size>,
    start: Option<Duration>,
    deadline: Option<Duration>,
    tag: Option<String>,
    group: Option<String>,
    after: Option<String>,
    protocol: Option<String>,
    ecn: Option<bool>,
}

/// The explicit flows and, by index, the name each waits for (`after`).
pub(crate) type ExplicitFlows = (Vec<FlowSpec>, Vec<(usize, String)>);

/// Builds the `[[flows]]` entries, in file order. Returns them with their `after` names, which
/// [`resolve_afters`] resolves once the workloads have added their flows and groups.
pub(crate) fn explicit_flows(entries: Vec<toml::Table>, ctx: &mut FlowCtx<'_>) -> Result<ExplicitFlows, ScenarioError> {
    let mut flows = Vec::with_capacity(entries.len());
    let mut afters: Vec<(usize, String)> = Vec::new();
    let own = fields_of::<FlowKeys>();
    for (i, entry) in entries.into_iter().enumerate() {
        let prefix = format!("flows[{i}]");
        let at = crate::tables::At { file: &ctx.file, prefix: &prefix };
        let (keys, extra) = split(entry, own);
        let f: FlowKeys = crate::tables::de(keys, at)?;
        let key = |k: &str| format!("flows[{i}].{k}");
        let src = ctx.host(&f.src, &key("src"))?;
        let dst = ctx.host(&f.dst, &key("dst"))?;
        if src == dst {
            return Err(ctx.err(&key("dst"), format!("a flow from \"{}\" to itself", f.src)));
        }
        if let Some(s) = f.size {
            if s.0 == 0 {
                return Err(ctx.err(&key("size"), "must be positive (omit `size` for a long-lived flow)"));
            }
        }
        let (mut ccfg, ecn) = ctx.protocol(f.protocol.as_deref(), f.ecn, &extra, &prefix, own)?;
        if let Some(note) =
            crate::derived::settle(&mut ccfg, None, ctx.priority_bands).map_err(|m| ctx.err(&prefix, m))?
        {
            if !ctx.derived.iter().any(|d| d.starts_with("flows:")) {
                ctx.derived.push(format!("flows: {note}"));
            }
        }
        if f.size.is_none() && ctx.stop_time.is_none() {
            return Err(ctx.err(&key("size"), "a long-lived flow (no `size`) needs a top-level `stop_time`"));
        }
        let group_id = ctx.group(f.group.as_deref().unwrap_or_default());
        let group = ctx.group_name(group_id);
        if let Some(a) = &f.after {
            afters.push((i, a.clone()));
        }
        flows.push(FlowSpec {
            src,
            dst,
            size_bytes: f.size.map(|s| s.0),
            start: f.start.map(|d| d.0).unwrap_or(Nanos::ZERO),
            deadline: f.deadline.map(|d| d.0),
            tag: ctx.label(f.tag.as_deref()),
            group,
            group_id,
            after: None,
            cc: std::sync::Arc::new(ccfg),
            ecn,
        });
    }
    Ok((flows, afters))
}

/// Resolves the `after` of explicit flows: each names a group some flow belongs to.
/// The `[[flows]]` entries are the first flows of the list (a drawn flow has no group).
pub(crate) fn resolve_afters(
    flows: &mut FlowList,
    afters: Vec<(usize, String)>,
    ctx: &FlowCtx<'_>,
) -> Result<(), ScenarioError> {
    for (i, a) in afters {
        let g = ctx
            .group_ids
            .get(a.as_str())
            .copied()
            .filter(|&g| flows.listed_flows().any(|(_, f)| f.group_id == Some(g)));
        let Some(g) = g else {
            return Err(ctx.err(&format!("flows[{i}].after"), format!("no flow belongs to group \"{a}\"")));
        };
        let Some(f) = flows.listed_mut().nth(i) else { continue };
        if f.group_id == Some(g) {
            return Err(ctx.err(&format!("flows[{i}].after"), format!("a flow cannot wait for its own group \"{a}\"")));
        }
        f.after = Some(g);
    }
    check_no_cycles(flows.listed_flows().map(|(_, f)| f), &ctx.groups).map_err(|m| ctx.err("flows", m))
}

/// Group dependencies (`after`) must not form a cycle, or the flows would never start.
pub(crate) fn check_no_cycles<'f>(
    flows: impl Iterator<Item = &'f FlowSpec>,
    groups: &[Arc<str>],
) -> Result<(), String> {
    let n = groups.len();
    let mut edges: Vec<Vec<usize>> = vec![Vec::new(); n];
    for f in flows {
        if let (Some(g), Some(a)) = (f.group_id, f.after) {
            edges[a as usize].push(g as usize);
        }
    }
    // 0 = unseen, 1 = on stack, 2 = done
    let mut state = vec![0u8; n];
    for start in 0..n {
        if state[start] != 0 {
            continue;
        }
        let mut stack = vec![(start, 0usize)];
        state[start] = 1;
        while let Some(&mut (v, ref mut i)) = stack.last_mut() {
            if *i < edges[v].len() {
                let w = edges[v][*i];
                *i += 1;
                match state[w] {
                    0 => {
                        state[w] = 1;
                        stack.push((w, 0));
                    }
                    1 => return Err(format!("groups wait for each other in a cycle (through \"{}\")", groups[w])),
                    _ => {}
                }
            } else {
                state[v] = 2;
                stack.pop();
            }
        }
    }
    Ok(())
}

/// What flow construction needs from the rest of the scenario: host names, protocol
/// defaults, and the group names seen so far.
pub(crate) struct FlowCtx<'a> {
    pub file: String,
    pub topology: &'a Topology,
    pub tcp: TcpConfig,
    /// `[transport]`'s protocol tables (`[transport.rcp]`), by canonical name.
    pub transport_params: &'a [(&'static str, toml::Table)],
    /// The protocols the flows built so far use (canonical names).
    pub used_protocols: Vec<&'static str>,
    pub default_protocol: String,
    /// `[transport] kind`: the transport every flow's protocol must run on.
    pub kind: Option<fctlab_transport::TransportKind>,
    pub groups: Vec<Arc<str>>,
    /// Each group's index in `groups` (a closed-loop workload names one group per round).
    pub group_ids: std::collections::HashMap<Arc<str>, u32>,
    /// The empty name, shared by every flow without a tag or group.
    pub empty: Arc<str>,
    pub stop_time: Option<Nanos>,
    /// Flows listed up front so far (`[[flows]]` and the workloads generated before).
    pub listed: u64,
    /// The bands of the switch ports (`priority_bands`; 8 for other disciplines), which bound
    /// the demotion thresholds a workload derives.
    pub priority_bands: usize,
    /// What was derived or defaulted for parameters left out, one sentence each, prefixed by
    /// where (the plan's `derived`).
    pub derived: Vec<String>,
}

impl FlowCtx<'_> {
    pub fn err(&self, key: &str, message: impl Into<String>) -> ScenarioError {
        ScenarioError { file: self.file.clone(), key: key.to_string(), message: message.into() }
    }

    pub fn host_list(&self) -> String {
        let names: Vec<&str> =
            self.topology.nodes.iter().filter(|n| n.kind == NodeKind::Host).map(|n| n.name.as_str()).collect();
        if names.len() <= 6 {
            names.join(", ")
        } else {
            format!("{}, {}, {}, ..., {} ({} hosts)", names[0], names[1], names[2], names[names.len() - 1], names.len())
        }
    }

    /// The node index of host `name`; `key` names the scenario key for errors.
    pub fn host(&self, name: &str, key: &str) -> Result<usize, ScenarioError> {
        match self.topology.find(name) {
            Some(idx) if self.topology.nodes[idx].kind == NodeKind::Host => Ok(idx),
            Some(_) => Err(self.err(key, format!("\"{name}\" is a switch, not a host (hosts: {})", self.host_list()))),
            None => Err(self.err(
                key,
                format!("unknown host \"{name}\" (hosts of this {}: {})", self.topology.kind, self.host_list()),
            )),
        }
    }

    /// A set of hosts written as one string: `"all"`, a name, a prefix pattern (`"s*"`), an
    /// inclusive range on the numeric suffix (`"h8..h31"`), or the hosts attached to a switch
    /// (`"under:leaf1"`). `key` names the scenario key for errors.
    pub fn host_set(&self, s: &str, key: &str) -> Result<Vec<usize>, ScenarioError> {
        let topo = self.topology;
        if s == "all" {
            return Ok(topo.hosts().map(|(i, _)| i).collect());
        }
        if let Some(p) = s.strip_suffix('*') {
            let l: Vec<usize> = topo.hosts().filter(|(_, n)| n.name.starts_with(p)).map(|(i, _)| i).collect();
            if l.is_empty() {
                return Err(self.err(key, format!("no host name starts with \"{p}\" (hosts: {})", self.host_list())));
            }
            return Ok(l);
        }
        if let Some(sw) = s.strip_prefix("under:") {
            let node = topo.find(sw).filter(|&i| topo.nodes[i].kind == NodeKind::Switch).ok_or_else(|| {
                let switches: Vec<&str> =
                    topo.nodes.iter().filter(|n| n.kind == NodeKind::Switch).map(|n| n.name.as_str()).collect();
                let shown = if switches.len() <= 8 {
                    switches.join(", ")
                } else {
                    format!(
                        "{}, ..., {} ({} switches)",
                        switches[..4].join(", "),
                        switches[switches.len() - 1],
                        switches.len()
                    )
                };
                self.err(key, format!("\"{s}\": no switch \"{sw}\" (switches: {shown})"))
            })?;
            let mut l: Vec<usize> = topo
                .links
                .iter()
                .filter_map(|lk| {
                    if lk.a == node {
                        Some(lk.b)
                    } else if lk.b == node {
                        Some(lk.a)
                    } else {
                        None
                    }
                })
                .filter(|&h| topo.nodes[h].kind == NodeKind::Host)
                .collect();
            l.sort();
            l.dedup();
            if l.is_empty() {
                return Err(self.err(key, format!("\"{s}\": no host is attached to switch \"{sw}\"")));
            }
            return Ok(l);
        }
        if let Some((a, b)) = s.split_once("..") {
            let split = |x: &str| -> Option<(String, u64)> {
                let digits = x.len() - x.trim_end_matches(|c: char| c.is_ascii_digit()).len();
                if digits == 0 {
                    return None;
                }
                let (p, n) = x.split_at(x.len() - digits);
                Some((p.to_string(), n.parse().ok()?))
            };
            let bad = |m: String| self.err(key, format!("range \"{s}\": {m}"));
            let ((pa, lo), (pb, hi)) = match (split(a.trim()), split(b.trim())) {
                (Some(x), Some(y)) => (x, y),
                _ => {
                    return Err(bad("write it as two names with the same prefix and a number, e.g. \"h8..h31\"".into()))
                }
            };
            if pa != pb {
                return Err(bad(format!("the two ends have different prefixes (\"{pa}\" and \"{pb}\")")));
            }
            if hi < lo {
                return Err(bad(format!("the range is reversed ({lo} > {hi})")));
            }
            let mut l = Vec::new();
            for n in lo..=hi {
                let name = format!("{pa}{n}");
                l.push(
                    self.host(&name, key)
                        .map_err(|_| bad(format!("\"{name}\" is not a host (hosts: {})", self.host_list())))?,
                );
            }
            return Ok(l);
        }
        Ok(vec![self.host(s, key)?])
    }

    /// Interns a group name ("" is no group).
    pub fn group(&mut self, name: &str) -> Option<u32> {
        if name.is_empty() {
            return None;
        }
        if let Some(&i) = self.group_ids.get(name) {
            return Some(i);
        }
        let i = self.groups.len() as u32;
        let name: Arc<str> = Arc::from(name);
        self.groups.push(name.clone());
        self.group_ids.insert(name, i);
        Some(i)
    }

    /// The shared name of group `id` (the empty name for none).
    pub fn group_name(&self, id: Option<u32>) -> Arc<str> {
        id.map_or_else(|| self.empty.clone(), |i| self.groups[i as usize].clone())
    }

    /// A shared copy of an entry's tag (the empty name for none).
    pub fn label(&self, tag: Option<&str>) -> Arc<str> {
        tag.filter(|t| !t.is_empty()).map_or_else(|| self.empty.clone(), Arc::from)
    }

    /// Resolves a protocol and its parameters: its `[transport]` table first, then the
    /// entry's own table of them (`rcp = { alpha = 0.2 }`, among `extra`: the entry's keys that
    /// are not in `own_keys`). Returns the configuration and whether data packets are
    /// ECN-capable.
    pub fn protocol(
        &mut self,
        protocol: Option<&str>,
        ecn: Option<bool>,
        extra: &toml::Table,
        prefix: &str,
        own_keys: &[&str],
    ) -> Result<(fctlab_transport::CcConfig, bool), ScenarioError> {
        let protocol = protocol.unwrap_or(&self.default_protocol).to_string();
        let reg = cc::lookup(&protocol).map_err(|m| self.err(&format!("{prefix}.protocol"), m))?;
        crate::transport::runs_on(reg, self.kind).map_err(|m| self.err(&format!("{prefix}.protocol"), m))?;
        let name = reg.names[0];
        let proto_keys = (reg.keys)();
        let mut params =
            self.transport_params.iter().find(|(n, _)| *n == name).map(|(_, t)| t.clone()).unwrap_or_default();
        for (k, v) in extra {
            let Ok(other) = cc::lookup(k) else {
                return Err(self.err(&format!("{prefix}.{k}"), crate::transport::not_a_protocol_table(k, own_keys)));
            };
            if other.names[0] != name {
                return Err(self.err(
                    &format!("{prefix}.{k}"),
                    format!("parameters of {}, but this entry's protocol is \"{protocol}\"", other.names[0]),
                ));
            }
            let toml::Value::Table(t) = v else {
                return Err(self.err(
                    &format!("{prefix}.{k}"),
                    format!("expected a table of {name}'s parameters, such as {k} = {{ key = value }}"),
                ));
            };
            for (pk, pv) in t {
                if !proto_keys.contains(&pk.as_str()) {
                    return Err(
                        self.err(&format!("{prefix}.{k}.{pk}"), crate::transport::unknown_parameter(name, proto_keys))
                    );
                }
                params.insert(pk.clone(), pv.clone());
            }
        }
        // A bad value is reported where it is written: the entry's table, or [transport.<name>].
        let own_table = extra.iter().find_map(|(k, v)| (cc::lookup(k).is_ok()).then_some(v)).and_then(|v| v.as_table());
        let ccfg = reg.configure(params).map_err(|mut e| {
            // A check across keys names the key in backquotes: report it there.
            if e.key.is_none() {
                e.key = e.message.split('`').skip(1).step_by(2).find(|k| proto_keys.contains(k)).map(String::from);
            }
            e
        });
        let in_transport = |k: &str| {
            own_table.map_or(true, |t| !t.contains_key(k))
                && self.transport_params.iter().any(|(n, t)| *n == name && t.contains_key(k))
        };
        let ccfg = ccfg.map_err(|e| match e.key {
            Some(k) if in_transport(&k) => {
                self.err(&format!("transport.{name}.{k}"), crate::tables::clean_serde_message(&e.message))
            }
            Some(k) => self.err(&format!("{prefix}.{name}.{k}"), crate::tables::clean_serde_message(&e.message)),
            None => self.err(prefix, e.message),
        })?;
        if !self.used_protocols.contains(&name) {
            self.used_protocols.push(name);
        }
        let ecn = ecn.unwrap_or(self.tcp.ecn) || ccfg.requires_ecn();
        Ok((ccfg, ecn))
    }

    /// Every `[transport]` protocol table must serve a flow: one whose protocol no flow uses
    /// is an error naming its first key (unless an override switched protocols: see
    /// `schema::overrides_a_protocol`).
    pub fn check_unused_tables(&self) -> Result<(), ScenarioError> {
        for (name, table) in self.transport_params {
            if self.used_protocols.contains(name) {
                continue;
            }
            let key = match table.keys().next() {
                Some(k) => format!("transport.{name}.{k}"),
                None => format!("transport.{name}"),
            };
            let used = if self.used_protocols.is_empty() { "none".to_string() } else { self.used_protocols.join(", ") };
            return Err(self.err(
                &key,
                format!(
                    "no flow uses {name} (the flows' protocols: {used}), so nothing reads this; remove \
                     [transport.{name}] or give flows protocol = \"{name}\""
                ),
            ));
        }
        Ok(())
    }
}
