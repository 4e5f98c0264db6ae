//! The `[transport]` table: the TCP settings of every connection, the default protocol, and
//! one table per protocol (`[transport.rcp]`) with parameters for every flow of that protocol.

use crate::tables::{de, fields_of, split, At};
use crate::units::{Duration, Size};
use crate::ScenarioError;
use fctlab_engine::Nanos;
use fctlab_sched::{Policy, Rank};
use fctlab_transport::{cc, EcnReaction, NewRenoRecovery, Profile, RtoModel, SackRecovery, TcpConfig, WindowModel};
use serde::Deserialize;

/// The TCP keys of `[transport]` (every other key is a protocol parameter).
#[derive(Deserialize, Debug, Default)]
#[serde(deny_unknown_fields)]
struct Keys {
    protocol: Option<String>,
    /// `linux` (default) or `ns2`: every TCP setting at once; the keys below override it.
    profile: Option<String>,
    initial_ssthresh: Option<Size>,
    rto_granularity: Option<Duration>,
    mss: Option<Size>,
    header_bytes: Option<Size>,
    min_rto: Option<Duration>,
    initial_rto: Option<Duration>,
    max_rto: Option<Duration>,
    initial_cwnd: Option<u32>,
    delayed_ack: Option<bool>,
    delayed_ack_timeout: Option<Duration>,
    sack: Option<bool>,
    ecn: Option<bool>,
    handshake: Option<bool>,
    rwnd: Option<Size>,
    dupthresh: Option<u32>,
    cwr: Option<bool>,
    tail_loss_probe: Option<bool>,
    /// `rfc6675` or `ns2` (ns-2.35's Agent/TCP/Sack1): SACK loss recovery.
    sack_recovery: Option<String>,
    /// ns-2's singledup_ limited transmit.
    singledup: Option<bool>,
    /// ns-2's whole-packet flows (ceil(size / mss) full segments).
    whole_packets: Option<bool>,
    /// `linux` or `ns2` (ns-2.35's TcpAgent::ecn()): the reaction to ECN echoes.
    ecn_reaction: Option<String>,
    /// `bytes` or `ns2` (ns-2.35's cwnd in segments: opencwnd(), slowdown(), window()).
    window_model: Option<String>,
    /// `rfc6298` or `ns2` (ns-2.35's timed segment, tick RTTs and backoff).
    rto_model: Option<String>,
    /// `rfc6582` or `ns2` (ns-2.35's Agent/TCP/Newreno recovery without SACK).
    newreno_recovery: Option<String>,
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

/// The keys of `[transport]` other than the protocol tables.
pub(crate) fn keys() -> &'static [&'static str] {
    fields_of::<Keys>()
}

/// `[transport]` after validation.
pub(crate) struct Transport {
    pub tcp: TcpConfig,
    /// The protocol of flows that name none.
    pub default_protocol: String,
    /// The profile the settings start from.
    pub profile: Profile,
    /// Each protocol's table (`[transport.rcp]`), by the protocol's canonical name; its keys
    /// are checked to be that protocol's.
    pub protocol_params: Vec<(&'static str, toml::Table)>,
    pub scheduler: Option<crate::SchedulerConfig>,
}

/// A setting given by name (`key = "name"`), or `default` when the scenario does not give it.
fn named<T>(
    err: &impl Fn(&str, String) -> ScenarioError,
    key: &str,
    given: Option<&str>,
    default: T,
    from_name: fn(&str) -> Option<T>,
    names: &[&str],
) -> Result<T, ScenarioError> {
    match given {
        None => Ok(default),
        Some(name) => {
            from_name(name).ok_or_else(|| err(key, format!("unknown value \"{name}\" (known: {})", names.join(", "))))
        }
    }
}

pub(crate) fn build(table: toml::Table, file: &str) -> Result<Transport, ScenarioError> {
    let at = At { file, prefix: "transport" };
    let err = |key: &str, m: String| at.err(key, m);
    let own = fields_of::<Keys>();
    let (keys, rest) = split(table, own);
    let protocol_params = protocol_tables(rest, &at, own)?;
    let t: Keys = de(keys, at)?;
    let profile = match t.profile.as_deref() {
        None => Profile::Linux,
        Some(name) => Profile::from_name(name).ok_or_else(|| {
            err("profile", format!("unknown profile \"{name}\" (known: {})", Profile::NAMES.join(", ")))
        })?,
    };
    let d = profile.config();
    let mss = t.mss.map(|s| s.0).unwrap_or(d.mss_bytes as u64);
    if !(64..=65_000).contains(&mss) {
        return Err(err("mss", format!("must be between 64B and 65000B, got {mss}B")));
    }
    let header = t.header_bytes.map(|s| s.0).unwrap_or(d.header_bytes as u64);
    if header > 1000 {
        return Err(err("header_bytes", format!("must be at most 1000B, got {header}B")));
    }
    // The ns-2 modes: each a name from its list, or the profile's value.
    let sack_recovery = named(
        &err,
        "sack_recovery",
        t.sack_recovery.as_deref(),
        d.sack_recovery,
        SackRecovery::from_name,
        SackRecovery::NAMES,
    )?;
    let ecn_reaction = named(
        &err,
        "ecn_reaction",
        t.ecn_reaction.as_deref(),
        d.ecn_reaction,
        EcnReaction::from_name,
        EcnReaction::NAMES,
    )?;
    let window_model = named(
        &err,
        "window_model",
        t.window_model.as_deref(),
        d.window_model,
        WindowModel::from_name,
        WindowModel::NAMES,
    )?;
    let rto_model =
        named(&err, "rto_model", t.rto_model.as_deref(), d.rto_model, RtoModel::from_name, RtoModel::NAMES)?;
    let newreno_recovery = named(
        &err,
        "newreno_recovery",
        t.newreno_recovery.as_deref(),
        d.newreno_recovery,
        NewRenoRecovery::from_name,
        NewRenoRecovery::NAMES,
    )?;
    let tcp = TcpConfig {
        mss_bytes: mss as u32,
        header_bytes: header as u32,
        initial_cwnd_segments: t.initial_cwnd.unwrap_or(d.initial_cwnd_segments),
        min_rto: t.min_rto.map(|x| x.0).unwrap_or(d.min_rto),
        // Default initial RTO of the linux profile: five times the minimum (1 s with the
        // 200 ms default, as in RFC 6298 and Linux), so data-center settings of min_rto scale
        // it too. ns-2's rtxcur_init_ does not depend on minrto_.
        initial_rto: t.initial_rto.map(|x| x.0).unwrap_or_else(|| match (t.min_rto, profile) {
            (Some(m), Profile::Linux) => m.0.mul(5),
            _ => d.initial_rto,
        }),
        max_rto: t.max_rto.map(|x| x.0).unwrap_or(d.max_rto),
        delayed_ack: t.delayed_ack.unwrap_or(d.delayed_ack),
        delayed_ack_timeout: t.delayed_ack_timeout.map(|x| x.0).unwrap_or(d.delayed_ack_timeout),
        sack: t.sack.unwrap_or(d.sack),
        ecn: t.ecn.unwrap_or(d.ecn),
        handshake: t.handshake.unwrap_or(d.handshake),
        rwnd_bytes: t.rwnd.map(|x| x.0).unwrap_or(d.rwnd_bytes),
        dupthresh: t.dupthresh.unwrap_or(d.dupthresh),
        initial_ssthresh_bytes: t.initial_ssthresh.map(|x| x.0).or(d.initial_ssthresh_bytes),
        rto_granularity: t.rto_granularity.map(|x| x.0).unwrap_or(d.rto_granularity),
        cwr: t.cwr.unwrap_or(d.cwr),
        tail_loss_probe: t.tail_loss_probe.unwrap_or(d.tail_loss_probe),
        sack_recovery,
        singledup: t.singledup.unwrap_or(d.singledup),
        whole_packets: t.whole_packets.unwrap_or(d.whole_packets),
        ecn_reaction,
        window_model,
        rto_model,
        newreno_recovery,
    };
    check_tcp(&tcp, mss, &err)?;
    let default_protocol = t.protocol.clone().unwrap_or_else(|| "tcp".into());
    cc::lookup(&default_protocol).map_err(|m| err("protocol", m))?;
    let scheduler = scheduler(&t, &err)?;
    Ok(Transport { tcp, default_protocol, profile, protocol_params, scheduler })
}

/// The TCP settings' checks across keys (ranges, and the combinations that cannot run).
fn check_tcp(tcp: &TcpConfig, mss: u64, err: &dyn Fn(&str, String) -> ScenarioError) -> Result<(), ScenarioError> {
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
    if tcp.window_model == WindowModel::Ns2 && tcp.cwr {
        return Err(err("window_model", "\"ns2\" needs cwr = false (ns-2 has no CWR state)".into()));
    }
    if tcp.rto_model == RtoModel::Ns2 && tcp.rto_granularity == Nanos::ZERO {
        return Err(err("rto_model", "\"ns2\" needs rto_granularity (ns-2's tcpTick_) above 0".into()));
    }
    if tcp.dupthresh == 0 {
        return Err(err("dupthresh", "must be at least 1".into()));
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
