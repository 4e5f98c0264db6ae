//! The `[transport]` table: the TCP settings of every connection, the default protocol, and
//! one table per protocol (`[transport.rcp]`) with parameters for every flow of that protocol.

use crate::tables::{de, fields_of, split, At};
use crate::units::Size;
use crate::ScenarioError;
use fctlab_engine::Nanos;
use fctlab_sched::{Policy, Rank};
use fctlab_transport::{cc, Profile, RtoModel, SackRecovery, TcpConfig, TcpSettings, TransportKind, WindowModel};
use serde::Deserialize;

/// The keys of `[transport]` other than the TCP settings (`TcpSettings`) and the protocol
/// tables.
#[derive(Deserialize, Debug, Default)]
#[serde(deny_unknown_fields)]
struct Keys {
    protocol: Option<String>,
    /// The transport of every flow (`tcp`, `homa`); absent: each protocol's own.
    kind: Option<String>,
    /// `linux` (default) or `ns2`: every TCP setting at once; the settings given override it.
    profile: Option<String>,
    /// Flow scheduling per origin-destination pair (SCHED_TCP): `tcp`, `srpt`, `las`, `fair`
    /// or `priority`; absent: no scheduling layer.
    scheduler: Option<String>,
    /// Bytes of a connection's send buffer the layer fills ahead (SCHED_TCP); 0 (default):
    /// the data of each segment is chosen when it is sent (the ideal gtcp).
    send_buffer: Option<Size>,
    /// `priority`: flow tags from first to last class (unlisted tags come after them).
    priority_tags: Option<Vec<String>>,
    /// `priority`: the rank among the flows of one class (`srpt`, `las` or `fair`; default `las`).
    priority_then: Option<String>,
}

/// The keys of `[transport]` other than the protocol tables: its own and the TCP settings'.
pub(crate) fn keys() -> Vec<&'static str> {
    [fields_of::<Keys>(), TcpConfig::KEYS].concat()
}

/// `[transport]` after validation.
pub(crate) struct Transport {
    pub tcp: TcpConfig,
    /// The protocol of flows that name none.
    pub default_protocol: String,
    /// The transport every flow runs on, if `kind` names one.
    pub kind: Option<TransportKind>,
    /// The profile the settings start from.
    pub profile: Profile,
    /// Each protocol's table (`[transport.rcp]`), by the protocol's canonical name; its keys
    /// are checked to be that protocol's.
    pub protocol_params: Vec<(&'static str, toml::Table)>,
    pub scheduler: Option<crate::SchedulerConfig>,
}

pub(crate) fn build(table: toml::Table, file: &str) -> Result<Transport, ScenarioError> {
    let at = At { file, prefix: "transport" };
    let err = |key: &str, m: String| at.err(key, m);
    let (own, rest) = split(table, fields_of::<Keys>());
    let (settings, rest) = split(rest, TcpConfig::KEYS);
    let protocol_params = protocol_tables(rest, &at, &keys())?;
    let t: Keys = de(own, at)?;
    let settings: TcpSettings = de(settings, at)?;
    let profile = match t.profile.as_deref() {
        None => Profile::Linux,
        Some(name) => Profile::from_name(name).ok_or_else(|| {
            err("profile", format!("unknown profile \"{name}\" (known: {})", Profile::NAMES.join(", ")))
        })?,
    };
    let tcp = profile.resolve(settings).map_err(|(key, m)| err(key, m))?;
    check_tcp(&tcp, &err)?;
    let kind = t.kind.as_deref().map(TransportKind::from_name).transpose().map_err(|m| err("kind", m))?;
    // Without `protocol`, the first protocol that runs on the transport (`tcp` on TCP).
    let default_protocol = match (&t.protocol, kind) {
        (Some(p), _) => p.clone(),
        (None, Some(k)) => cc::REGISTRY.iter().find(|r| r.transports[0] == k).map_or("tcp", |r| r.names[0]).into(),
        (None, None) => "tcp".into(),
    };
    let reg = cc::lookup(&default_protocol).map_err(|m| err("protocol", m))?;
    runs_on(reg, kind).map_err(|m| err("protocol", m))?;
    let scheduler = scheduler(&t, &err)?;
    Ok(Transport { tcp, default_protocol, kind, profile, protocol_params, scheduler })
}

/// Whether the protocol `reg` runs on the transport `kind` (any, if None): its flows run on its
/// first transport; the error names it.
pub(crate) fn runs_on(reg: &cc::Registration, kind: Option<TransportKind>) -> Result<(), String> {
    match kind {
        Some(k) if reg.transports[0] != k => Err(format!(
            "protocol \"{}\" runs on transport {}, not on {k} (`[transport] kind`)",
            reg.names[0], reg.transports[0]
        )),
        _ => Ok(()),
    }
}

/// The TCP settings' checks across keys (ranges, and the combinations that cannot run).
fn check_tcp(tcp: &TcpConfig, err: &dyn Fn(&str, String) -> ScenarioError) -> Result<(), ScenarioError> {
    let mss = tcp.mss_bytes as u64;
    if !(64..=64_000).contains(&mss) {
        return Err(err("mss", format!("must be between 64B and 64000B, got {mss}B")));
    }
    if tcp.header_bytes > 1000 {
        return Err(err("header_bytes", format!("must be at most 1000B, got {}B", tcp.header_bytes)));
    }
    if tcp.initial_ssthresh_bytes.is_some_and(|b| b < 2 * mss) {
        return Err(err("initial_ssthresh", format!("must be at least two segments ({}B)", 2 * mss)));
    }
    if tcp.initial_cwnd_segments == 0 {
        return Err(err("initial_cwnd", "must be at least 1 segment".into()));
    }
    if tcp.min_rto == Nanos::ZERO {
        return Err(err("min_rto", "must be positive".into()));
    }
    if tcp.initial_rto < tcp.min_rto {
        return Err(err("initial_rto", format!("must not be below min_rto ({})", tcp.min_rto)));
    }
    if tcp.max_rto < tcp.min_rto {
        return Err(err("max_rto", "must not be below min_rto".into()));
    }
    if tcp.rwnd_bytes < mss {
        return Err(err("rwnd", format!("must be at least one segment ({mss}B)")));
    }
    if tcp.tail_loss_probe && tcp.sack && tcp.sack_recovery == SackRecovery::Ns2 {
        return Err(err(
            "tail_loss_probe",
            "needs sack_recovery = \"rfc6675\" (ns-2's Sack1 recovery has no loss probe)".into(),
        ));
    }
    if tcp.rack && (!tcp.sack || tcp.sack_recovery == SackRecovery::Ns2) {
        return Err(err("rack", "needs sack = true with sack_recovery = \"rfc6675\" (RACK reads SACKed data)".into()));
    }
    if tcp.window_model == WindowModel::Ns2 && tcp.cwr {
        return Err(err("window_model", "\"ns2\" needs cwr = false (ns-2 has no CWR state)".into()));
    }
    if tcp.rto_model == RtoModel::Ns2 && tcp.rto_granularity == Nanos::ZERO {
        return Err(err("rto_model", "\"ns2\" needs rto_granularity (ns-2's tcpTick_) above 0".into()));
    }
    if tcp.dupthresh == 0 {
        return Err(err("dupthresh", "must be at least 1".into()));
    }
    if tcp.ack_interval == 0 {
        return Err(err("ack_interval", "must be at least 1 packet".into()));
    }
    if tcp.irn_rto_low == Nanos::ZERO {
        return Err(err("irn_rto_low", "must be above 0".into()));
    }
    if tcp.irn_rto_high < tcp.irn_rto_low {
        return Err(err("irn_rto_high", "must be at least irn_rto_low".into()));
    }
    Ok(())
}

fn scheduler(
    t: &Keys,
    err: &dyn Fn(&str, String) -> ScenarioError,
) -> Result<Option<crate::SchedulerConfig>, ScenarioError> {
    let Some(name) = t.scheduler.as_deref() else {
        for (key, given) in [
            ("send_buffer", t.send_buffer.is_some()),
            ("priority_tags", t.priority_tags.is_some()),
            ("priority_then", t.priority_then.is_some()),
        ] {
            if given {
                return Err(err(key, "applies to the flow scheduling layer only; set `scheduler` too".into()));
            }
        }
        return Ok(None);
    };
    let then = match t.priority_then.as_deref() {
        None => Rank::Las,
        Some(r) => Rank::from_name(r).map_err(|m| err("priority_then", m))?,
    };
    let policy = Policy::from_name(name, then).map_err(|m| err("scheduler", m))?;
    if !matches!(policy, Policy::Priority(_)) {
        for (key, given) in [("priority_tags", t.priority_tags.is_some()), ("priority_then", t.priority_then.is_some())]
        {
            if given {
                return Err(err(key, format!("applies to scheduler = \"priority\" only (scheduler is \"{name}\")")));
            }
        }
    }
    let send_buffer = t.send_buffer.map_or(0, |s| s.0);
    if send_buffer > 1 << 40 {
        return Err(err("send_buffer", format!("must be at most 1TB, got {send_buffer}B")));
    }
    Ok(Some(crate::SchedulerConfig {
        policy,
        send_buffer_bytes: send_buffer,
        priority_tags: t.priority_tags.clone().unwrap_or_default(),
    }))
}

/// The keys of `[transport]` that are not TCP settings: each must be a protocol's table of
/// parameters (`[transport.rcp]`). A protocol parameter written directly under `[transport]`
/// (the older flat form) is an error naming its table.
fn protocol_tables(
    rest: toml::Table,
    at: &At,
    own: &[&str],
) -> Result<Vec<(&'static str, toml::Table)>, ScenarioError> {
    let mut tables: Vec<(&'static str, toml::Table)> = Vec::new();
    for (k, v) in rest {
        let Ok(reg) = cc::lookup(&k) else {
            return Err(at.err(&k, not_a_protocol_table(&k, own)));
        };
        let name = reg.names[0];
        if tables.iter().any(|(n, _)| *n == name) {
            return Err(at.err(&k, format!("a second table of protocol \"{name}\" (under another of its names)")));
        }
        let toml::Value::Table(t) = v else {
            return Err(at.err(&k, format!("expected a table of {name}'s parameters: [transport.{k}]")));
        };
        let keys = (reg.keys)();
        if let Some(bad) = t.keys().find(|x| !keys.contains(&x.as_str())) {
            return Err(at.err(&format!("{k}.{bad}"), unknown_parameter(name, keys)));
        }
        tables.push((name, t));
    }
    Ok(tables)
}

/// The error for key `k` of a table whose own keys are `own` and which may also hold
/// protocol tables: a protocol parameter out of its table names the tables it belongs in.
pub(crate) fn not_a_protocol_table(k: &str, own: &[&str]) -> String {
    let owners: Vec<&str> = cc::REGISTRY.iter().filter(|r| (r.keys)().contains(&k)).map(|r| r.names[0]).collect();
    if !owners.is_empty() {
        let tables: Vec<String> = owners.iter().map(|p| format!("`{p} = {{ {k} = ... }}`")).collect();
        return format!(
            "a protocol parameter goes in its protocol's table: {} (in [transport]: [transport.{}])",
            tables.join(" or "),
            owners[0]
        );
    }
    let mut known: Vec<&str> = own.to_vec();
    known.extend(cc::REGISTRY.iter().map(|r| r.names[0]));
    let message = crate::tables::unknown_key(k, &known);
    if crate::tables::closest(k, &known).is_some() {
        message
    } else {
        message + "; a protocol's parameters go in a table named after it"
    }
}

/// The error for a key that protocol `name` does not have.
pub(crate) fn unknown_parameter(name: &str, keys: &[&str]) -> String {
    if keys.is_empty() {
        format!("unknown key ({name} has no parameters)")
    } else {
        format!("unknown key ({name}'s parameters: {})", keys.join(", "))
    }
}
