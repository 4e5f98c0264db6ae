//! A scenario file as a whole: its top-level keys, overrides, the content hash, and the
//! order in which its tables are read. Each table has a module of its own: `network`,
//! `transport`, `flows`, `workloads`, `monitor`.

use crate::flows::FlowCtx;
use crate::limits::{past_max_time, MAX_FLOWS, MAX_TIME};
use crate::monitor::RawMonitor;
use crate::units::Duration;
use crate::{Scenario, ScenarioError};
use serde::Deserialize;
use sha2::{Digest, Sha256};

/// The top level of a scenario file. The tables whose keys depend on a tag or carry protocol
/// parameters stay TOML tables here and are read by their modules.
#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct RawScenario {
    name: Option<String>,
    #[allow(dead_code)]
    description: Option<String>,
    seed: Option<u64>,
    stop_time: Option<Duration>,
    network: toml::Table,
    #[serde(default)]
    transport: toml::Table,
    #[serde(default)]
    flows: Vec<toml::Table>,
    #[serde(default)]
    workloads: Vec<toml::Table>,
    #[serde(default)]
    monitor: RawMonitor,
    measure: Option<RawMeasure>,
}

/// `[measure]`: the measurement window.
#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct RawMeasure {
    from: Option<Duration>,
    until: Option<Duration>,
}

/// The format of scenario text.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Format {
    Toml,
    Json,
}

/// Parses, overrides and validates a scenario.
///
/// `file` names the source in error messages. `overrides` are `key=value` strings applied
/// before validation (`network.link_rate=10Gbps`, `flows.0.size=1MB`, `seed=7`); a value that
/// parses as a TOML value is used as such, anything else as a string.
pub fn load(text: &str, file: &str, format: Format, overrides: &[String]) -> Result<Scenario, ScenarioError> {
    load_with(text, file, format, overrides, &[])
}

/// As [`load`], then removes each dotted key of `unset` (`network.ecn_threshold`,
/// `flows.0.deadline`) after the overrides; a key that is not there is an error naming it.
pub fn load_with(
    text: &str,
    file: &str,
    format: Format,
    overrides: &[String],
    unset: &[String],
) -> Result<Scenario, ScenarioError> {
    let err = |key: &str, message: String| ScenarioError { file: file.to_string(), key: key.to_string(), message };
    // a bad FCTLAB_MEMORY is named once, here, not by the first check that reads it
    crate::limits::memory_budget().map_err(|m| err("", m))?;
    let mut root: toml::Value = match format {
        Format::Toml => toml::from_str::<toml::Table>(text).map(toml::Value::Table).map_err(|e| {
            let msg = e.message().to_string();
            let at = e.span().map(|s| line_col(text, s.start));
            match at {
                Some((l, c)) => err("", format!("invalid TOML at line {l}, column {c}: {}", msg.replace('\n', " "))),
                None => err("", format!("invalid TOML: {msg}")),
            }
        })?,
        Format::Json => {
            serde_json::from_str::<toml::Value>(text).map_err(|e| err("", format!("invalid scenario data: {e}")))?
        }
    };
    for o in overrides {
        apply_override(&mut root, o).map_err(|m| err(&format!("--set {o}"), m))?;
    }
    for k in unset {
        remove_key(&mut root, k).map_err(|m| err(&format!("--unset {k}"), m))?;
    }
    let mut hasher = Sha256::new();
    hasher.update(text.as_bytes());
    for o in overrides {
        hasher.update(b"\n--set ");
        hasher.update(o.as_bytes());
    }
    for k in unset {
        hasher.update(b"\n--unset ");
        hasher.update(k.as_bytes());
    }
    let sha256 = hasher.finalize().iter().map(|b| format!("{b:02x}")).collect::<String>();

    let raw: RawScenario = serde_path_to_error::deserialize(root).map_err(|e| {
        let path = e.path().to_string();
        let key = if path == "." { String::new() } else { path };
        err(&key, crate::tables::clean_serde_message(&e.inner().to_string()))
    })?;
    build(raw, file, sha256, overrides.iter().any(|o| overrides_a_protocol(o)))
}

/// Whether override `o` changes a protocol (`transport.protocol`, `flows.N.protocol`,
/// `workloads.N.protocol`): a run that switches protocols this way (a comparison with TCP, a
/// sweep over protocols) may leave the file's protocol tables unused.
fn overrides_a_protocol(o: &str) -> bool {
    let key = o.split_once('=').map_or(o, |(k, _)| k).trim();
    let parts: Vec<&str> = key.split('.').collect();
    matches!(parts.as_slice(), ["transport", "protocol"] | ["flows" | "workloads", _, "protocol"])
}

fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
    (line, col)
}

/// Removes the dotted key `key` (list entries by index) from the scenario tree.
fn remove_key(root: &mut toml::Value, key: &str) -> Result<(), String> {
    let key = key.trim();
    if key.is_empty() {
        return Err("expected a key such as network.ecn_threshold".into());
    }
    let parts: Vec<&str> = key.split('.').collect();
    let mut cur = root;
    for (i, part) in parts.iter().enumerate() {
        let last = i + 1 == parts.len();
        let here = parts[..i].join(".");
        cur = match cur {
            toml::Value::Table(t) => {
                if last {
                    return t.remove(*part).map(|_| ()).ok_or_else(|| {
                        let known: Vec<&str> = t.keys().map(|k| k.as_str()).collect();
                        let within = if here.is_empty() { "the scenario".to_string() } else { format!("`{here}`") };
                        format!("no key `{part}` in {within} to remove (its keys: {})", known.join(", "))
                    });
                }
                t.get_mut(*part).ok_or_else(|| format!("no key `{}` in the scenario", parts[..=i].join(".")))?
            }
            toml::Value::Array(a) => {
                let idx: usize =
                    part.parse().map_err(|_| format!("`{part}` is not an index into the list `{here}`"))?;
                let len = a.len();
                if last {
                    if idx >= len {
                        return Err(format!("index {idx} is out of range (the list has {len} entries)"));
                    }
                    a.remove(idx);
                    return Ok(());
                }
                a.get_mut(idx).ok_or_else(|| format!("index {idx} is out of range (the list has {len} entries)"))?
            }
            _ => return Err(format!("`{here}` is not a table")),
        };
    }
    Ok(())
}

fn apply_override(root: &mut toml::Value, o: &str) -> Result<(), String> {
    let (key, value) = o.split_once('=').ok_or_else(|| "expected key=value".to_string())?;
    let key = key.trim();
    if key.is_empty() {
        return Err("expected key=value with a non-empty key".into());
    }
    let value = value.trim();
    let parsed = toml::from_str::<toml::Table>(&format!("v = {value}"))
        .ok()
        .and_then(|mut t| t.remove("v"))
        .filter(|v| !matches!(v, toml::Value::Float(f) if !f.is_finite()))
        .unwrap_or_else(|| toml::Value::String(value.to_string()));
    let parts: Vec<&str> = key.split('.').collect();
    let mut cur = root;
    for (i, part) in parts.iter().enumerate() {
        let last = i + 1 == parts.len();
        cur = match cur {
            toml::Value::Table(t) => {
                if last {
                    t.insert(part.to_string(), parsed);
                    return Ok(());
                }
                if !t.contains_key(*part) && parts[i + 1].parse::<usize>().is_ok() {
                    return Err(format!(
                        "`{}` has no entry {} (the list is empty or missing)",
                        parts[..=i].join("."),
                        parts[i + 1]
                    ));
                }
                t.entry(part.to_string()).or_insert_with(|| toml::Value::Table(toml::Table::new()))
            }
            toml::Value::Array(a) => {
                let idx: usize = part
                    .parse()
                    .map_err(|_| format!("`{part}` is not an index into the list at this point of the key"))?;
                let len = a.len();
                let slot = a
                    .get_mut(idx)
                    .ok_or_else(|| format!("index {idx} is out of range (the list has {len} entries)"))?;
                if last {
                    *slot = parsed;
                    return Ok(());
                }
                slot
            }
            _ => return Err(format!("`{}` is not a table", parts[..i].join("."))),
        };
    }
    Ok(())
}

fn build(raw: RawScenario, file: &str, sha256: String, protocol_overridden: bool) -> Result<Scenario, ScenarioError> {
    let net = crate::network::build(raw.network, file)?;
    let transport = crate::transport::build(raw.transport, file)?;
    let stop_time = raw.stop_time.map(|d| d.0);
    if stop_time == Some(fctlab_engine::Nanos::ZERO) {
        return Err(ScenarioError {
            file: file.to_string(),
            key: "stop_time".into(),
            message:
                "must be positive (a run of no time measures nothing); leave it out to run until every flow completes"
                    .into(),
        });
    }
    let measure = measure_window(raw.measure.as_ref(), stop_time, file)?;
    let seed = raw.seed.unwrap_or(1);
    let mut ctx = FlowCtx {
        file: file.to_string(),
        topology: &net.topology,
        tcp: transport.tcp,
        transport_params: &transport.protocol_params,
        used_protocols: Vec::new(),
        default_protocol: transport.default_protocol.clone(),
        kind: transport.kind,
        groups: Vec::new(),
        group_ids: Default::default(),
        empty: std::sync::Arc::from(""),
        listed: 0,
        stop_time,
        priority_bands: net.switch_queue.describe().get("bands").and_then(|b| b.as_u64()).map_or(8, |b| b as usize),
        derived: Vec::new(),
    };
    let (flows, afters) = crate::flows::explicit_flows(raw.flows, &mut ctx)?;
    let err = |key: String, message: String| ScenarioError { file: file.to_string(), key, message };
    if let Some(i) = flows.iter().position(|f| f.start > MAX_TIME) {
        return Err(err(format!("flows[{i}].start"), format!("must be at most {} s", MAX_TIME.as_secs_f64())));
    }
    if stop_time.is_some_and(|t| t > MAX_TIME) {
        return Err(err("stop_time".into(), format!("must be at most {} s", MAX_TIME.as_secs_f64())));
    }
    let mut list = crate::flowlist::FlowList::default();
    ctx.listed = flows.len() as u64;
    list.push(crate::flowlist::FlowPart::Listed(flows));
    for (i, w) in raw.workloads.into_iter().enumerate() {
        // (A drawn part checked its start times as it counted its flows.)
        let part = crate::workloads::generate(w, i, &mut ctx, seed)?;
        if let crate::flowlist::FlowPart::Listed(v) = &part {
            ctx.listed += v.len() as u64;
            if let Some(f) = v.iter().find(|f| f.start > MAX_TIME) {
                return Err(err(format!("workloads[{i}]"), past_max_time(f.start)));
            }
        }
        list.push(part);
        if list.len() as u64 > MAX_FLOWS {
            return Err(ScenarioError {
                file: file.to_string(),
                key: format!("workloads[{i}]"),
                message: format!(
                    "with it the scenario has {} flows, more than this simulator accepts in one run (20,000,000)",
                    list.len()
                ),
            });
        }
    }
    let mut flows = list;
    crate::flows::resolve_afters(&mut flows, afters, &ctx)?;
    if !protocol_overridden {
        ctx.check_unused_tables()?;
    }
    let groups = std::mem::take(&mut ctx.groups);
    let derived = std::mem::take(&mut ctx.derived);
    let monitor = crate::monitor::build(&raw.monitor, file, &net.topology, flows.len())?;
    Ok(Scenario {
        file: file.to_string(),
        name: raw.name.clone().unwrap_or_else(|| {
            let base = file.rsplit('/').next().unwrap_or(file);
            base.strip_suffix(".toml").or_else(|| base.strip_suffix(".json")).unwrap_or(base).to_string()
        }),
        seed,
        stop_time,
        topology: net.topology,
        switch_queue: net.switch_queue,
        nic_queue: net.nic_queue,
        nic_buffer: net.nic_buffer,
        buffer_model: net.buffer_model,
        tcp: transport.tcp,
        profile: transport.profile,
        flows,
        groups,
        monitor,
        scheduler: transport.scheduler,
        measure,
        sha256,
        derived,
        pfc: net.pfc,
        shared_buffer: net.shared_buffer,
        balance: net.balance,
    })
}

/// `[measure]`: from (default 0) and until (default: none), checked against each other and
/// `stop_time`.
fn measure_window(
    raw: Option<&RawMeasure>,
    stop_time: Option<fctlab_engine::Nanos>,
    file: &str,
) -> Result<Option<crate::Measure>, ScenarioError> {
    let Some(m) = raw else { return Ok(None) };
    let err = |key: &str, message: String| ScenarioError { file: file.to_string(), key: key.into(), message };
    let from = m.from.map_or(fctlab_engine::Nanos::ZERO, |d| d.0);
    let until = m.until.map(|d| d.0);
    if from > MAX_TIME || until.is_some_and(|u| u > MAX_TIME) {
        return Err(err("measure", format!("times must be at most {} s", MAX_TIME.as_secs_f64())));
    }
    if let Some(u) = until {
        if u <= from {
            return Err(err(
                "measure.until",
                format!("{u} is not after measure.from ({from}): the window holds no flow"),
            ));
        }
    }
    if let Some(stop) = stop_time {
        if from >= stop {
            return Err(err(
                "measure.from",
                format!("{from} is not before stop_time ({stop}): no flow would be measured"),
            ));
        }
    }
    Ok(Some(crate::Measure { from, until }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use fctlab_engine::Nanos;

    fn load_str(s: &str) -> Result<crate::Scenario, ScenarioError> {
        load(s, "t.toml", Format::Toml, &[])
    }

    const OK: &str = r#"
name = "x"
seed = 3
[network]
topology = "dumbbell"
senders = 2
receivers = 2
link_rate = "1Gbps"
link_delay = "25us"
buffer = "100pkt"
[transport]
min_rto = "10ms"
[[flows]]
src = "s0"
dst = "r1"
size = "10MB"
start = "1ms"
"#;

    #[test]
    fn loads_a_dumbbell() {
        let s = load_str(OK).unwrap();
        assert_eq!(s.seed, 3);
        assert_eq!(s.flows.len(), 1);
        assert_eq!(s.flows.to_vec()[0].size_bytes, Some(10_000_000));
        assert_eq!(s.flows.to_vec()[0].start, Nanos::from_millis(1));
        assert_eq!(s.tcp.min_rto, Nanos::from_millis(10));
        assert_eq!(s.sha256.len(), 64);
    }

    #[test]
    fn errors_name_key_and_expectation() {
        let e = load_str(&OK.replace("link_rate", "link_rat")).unwrap_err();
        assert_eq!(e.key, "network.link_rat");
        assert!(e.message.contains("unknown key `link_rat`"), "{e}");
        let e = load_str(&OK.replace("\"1Gbps\"", "\"1Gbs\"")).unwrap_err();
        assert_eq!(e.key, "network.link_rate");
        assert!(e.message.contains("expected a rate"), "{e}");
        let e = load_str(&OK.replace("\"10MB\"", "\"-10MB\"")).unwrap_err();
        assert_eq!(e.key, "flows[0].size");
        let e = load_str(&OK.replace("\"r1\"", "\"r9\"")).unwrap_err();
        assert_eq!(e.key, "flows[0].dst");
        assert!(e.message.contains("unknown host \"r9\""), "{e}");
        let e = load_str(&OK.replace("size = ", "sise = ")).unwrap_err();
        assert_eq!(e.key, "flows[0].sise");
        let e = load_str(&OK.replace("senders = 2", "senders = 2\nhosts = 4")).unwrap_err();
        assert_eq!(e.key, "network.hosts");
        assert!(e.to_string().starts_with("t.toml: network.hosts: not used by topology \"dumbbell\""), "{e}");
        let e = load_str("[network\n").unwrap_err();
        assert!(e.message.contains("line 1"), "{e}");
    }

    #[test]
    fn overrides_apply() {
        let s = load(
            OK,
            "t.toml",
            Format::Toml,
            &["network.link_rate=10Gbps".into(), "flows.0.size=\"1MB\"".into(), "seed=9".into()],
        )
        .unwrap();
        assert_eq!(s.seed, 9);
        assert_eq!(s.flows.to_vec()[0].size_bytes, Some(1_000_000));
        let e = load(OK, "t.toml", Format::Toml, &["flows.3.size=1".into()]).unwrap_err();
        assert!(e.message.contains("out of range"), "{e}");
    }

    #[test]
    fn unset_removes_keys_and_names_missing_ones() {
        let ecn = OK.replace("buffer = \"100pkt\"", "buffer = \"100pkt\"\nqueue = \"ecn\"\necn_threshold = \"20pkt\"");
        // An override that is invalid alone (the threshold only applies to ECN queues) ...
        let e = load(&ecn, "t.toml", Format::Toml, &["network.queue=\"droptail\"".into()]).unwrap_err();
        assert_eq!(e.key, "network.ecn_threshold");
        // ... becomes valid with the key removed.
        let s = load_with(
            &ecn,
            "t.toml",
            Format::Toml,
            &["network.queue=\"droptail\"".into()],
            &["network.ecn_threshold".into()],
        )
        .unwrap();
        assert_eq!(s.switch_queue, fctlab_net::QueueConfig::DropTail(()));
        let e = load_with(OK, "t.toml", Format::Toml, &[], &["network.ecn_threshold".into()]).unwrap_err();
        assert_eq!(e.key, "--unset network.ecn_threshold");
        assert!(e.message.starts_with("no key `ecn_threshold` in `network` to remove (its keys: "), "{e}");
        let s = load_with(OK, "t.toml", Format::Toml, &[], &["flows.0.start".into()]).unwrap();
        assert_eq!(s.flows.to_vec()[0].start, Nanos::ZERO);
        let e = load_with(OK, "t.toml", Format::Toml, &[], &["flows.4".into()]).unwrap_err();
        assert!(e.message.contains("out of range"), "{e}");
        // unsets enter the scenario's hash
        let a = load_with(&ecn, "t.toml", Format::Toml, &[], &["network.ecn_threshold".into(), "network.queue".into()])
            .unwrap();
        assert_ne!(a.sha256, load(&ecn, "t.toml", Format::Toml, &[]).unwrap().sha256);
    }

    #[test]
    fn long_lived_needs_stop_time() {
        let e = load_str(&OK.replace("size = \"10MB\"", "")).unwrap_err();
        assert_eq!(e.key, "flows[0].size");
        let s = load_str(&format!("stop_time = \"1s\"\n{}", OK.replace("size = \"10MB\"", ""))).unwrap();
        assert_eq!(s.flows.to_vec()[0].size_bytes, None);
    }

    #[test]
    fn json_input() {
        let j =
            r#"{"network": {"topology": "star", "hosts": 3}, "flows": [{"src": "h0", "dst": "h2", "size": "1MB"}]}"#;
        let s = load(j, "<dict>", Format::Json, &[]).unwrap();
        assert_eq!(s.topology.kind, "star");
        assert_eq!(s.flows.to_vec()[0].dst, s.topology.find("h2").unwrap());
    }
}
