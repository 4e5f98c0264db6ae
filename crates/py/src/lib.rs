//! `fctlab._core`: the Python bindings of the simulator. Only conversion lives here; the
//! Python package (`python/fctlab`) is the user interface.

// pyo3's `#[pyfunction]` expansion converts every `PyResult` error into `PyErr`, which
// clippy reports at each signature; and a Python function's keyword arguments are its
// parameters, however many.
#![allow(clippy::useless_conversion, clippy::too_many_arguments)]

mod sched;

use fctlab_engine::Nanos;
use fctlab_scenario::schema::Format;
use fctlab_scenario::FlowPart;
use fctlab_sim::{Results, Row, RunStatus, Simulation};
use fctlab_transport::Exported;
use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};
use std::time::Instant;

create_exception!(_core, ScenarioError, PyException, "A scenario file or override is invalid.");

fn parse_format(format: &str) -> PyResult<Format> {
    match format {
        "toml" => Ok(Format::Toml),
        "json" => Ok(Format::Json),
        other => Err(pyo3::exceptions::PyValueError::new_err(format!("unknown scenario format {other:?}"))),
    }
}

fn load(text: &str, file: &str, format: &str, overrides: Vec<String>, unset: Vec<String>) -> PyResult<Simulation> {
    let sc = fctlab_scenario::load_with(text, file, parse_format(format)?, &overrides, &unset)
        .map_err(|e| ScenarioError::new_err(e.to_string()))?;
    Simulation::new(sc).map_err(|e| ScenarioError::new_err(e.to_string()))
}

/// Validates a scenario and describes it.
#[pyfunction]
#[pyo3(signature = (text, file, format="toml", overrides=vec![], unset=vec![]))]
fn validate(
    py: Python<'_>,
    text: &str,
    file: &str,
    format: &str,
    overrides: Vec<String>,
    unset: Vec<String>,
) -> PyResult<PyObject> {
    let sim = load(text, file, format, overrides, unset)?;
    let sc = sim.scenario();
    let d = PyDict::new_bound(py);
    d.set_item("name", &sc.name)?;
    d.set_item("topology", &sc.topology.kind)?;
    d.set_item("hosts", sc.host_names())?;
    d.set_item("switches", sc.topology.nodes.len() - sc.host_names().len())?;
    d.set_item("links", sc.topology.links.len())?;
    // Counted by part: a drawn part's flows share their protocol and all have a size.
    let mut long_lived = 0;
    let mut per_protocol: Vec<(&str, usize)> = Vec::new();
    let mut count = |name: &'static str, n: usize| match per_protocol.iter_mut().find(|(p, _)| *p == name) {
        Some((_, c)) => *c += n,
        None => per_protocol.push((name, n)),
    };
    for (_, part) in sc.flows.parts() {
        match part {
            FlowPart::Listed(v) => {
                for f in v {
                    long_lived += f.size_bytes.is_none() as usize;
                    count(f.cc.name(), 1);
                }
            }
            FlowPart::Drawn(d) => count(d.template().cc.name(), part.len()),
        }
    }
    d.set_item("flows", sc.flows.len())?;
    d.set_item("long_lived_flows", long_lived)?;
    d.set_item("stop_time_s", sc.stop_time.map(|t| t.as_secs_f64()))?;
    d.set_item("seed", sc.seed)?;
    d.set_item("scenario_sha256", &sc.sha256)?;
    let t = &sc.tcp;
    let tr = PyDict::new_bound(py);
    tr.set_item("profile", sc.profile.name())?;
    for (key, value) in t.export() {
        match value {
            Exported::Bool(b) => tr.set_item(key, b)?,
            Exported::Int(n) => tr.set_item(key, n)?,
            Exported::Seconds(x) => tr.set_item(key, x)?,
            Exported::Name(n) => tr.set_item(key, n)?,
            Exported::Null => tr.set_item(key, py.None())?,
        }
    }
    let protocols = PyDict::new_bound(py);
    for (name, n) in per_protocol {
        protocols.set_item(name, n)?;
    }
    tr.set_item("protocols", protocols)?;
    // The flow scheduling layer: its policy as the simulator prints it, and its send buffer.
    tr.set_item("scheduler", sc.scheduler.as_ref().map(|c| c.policy.to_string()))?;
    tr.set_item("send_buffer_bytes", sc.scheduler.as_ref().map(|c| c.send_buffer_bytes))?;
    d.set_item("transport", tr)?;
    d.set_item("derived", &sc.derived)?;
    Ok(d.into())
}

/// The plan of a scenario (`fctlab_scenario::plan`) as JSON text: the network with one port
/// per link direction and its discipline, every flow as the simulator starts it with its
/// protocol's resolved settings, the transport settings and the monitors. `fctlab.plan`
/// reads it; docs/plan.md lists its fields.
#[pyfunction]
#[pyo3(signature = (text, file, format="toml", overrides=vec![], unset=vec![], flows=true))]
fn plan(
    text: &str,
    file: &str,
    format: &str,
    overrides: Vec<String>,
    unset: Vec<String>,
    flows: bool,
) -> PyResult<String> {
    let sim = load(text, file, format, overrides, unset)?;
    Ok(fctlab_scenario::plan::plan_json(sim.scenario(), flows))
}

/// Runs a scenario. `progress(sim_time_s, flows_completed, flows_total)` is called about
/// every `progress_interval_s` wall seconds. Ctrl-C stops the run and returns what was
/// measured so far, with `summary["interrupted"] = True`. `on_flows(columns)`, if given, is
/// called between slices of the run with the rows of the flows that finished meanwhile (in
/// that order, as `flows` columns); the result's `flows` then holds the other rows only.
#[pyfunction]
#[pyo3(signature = (text, file, format="toml", overrides=vec![], progress=None, progress_interval_s=0.5, unset=vec![], on_flows=None))]
fn run(
    py: Python<'_>,
    text: &str,
    file: &str,
    format: &str,
    overrides: Vec<String>,
    progress: Option<PyObject>,
    progress_interval_s: f64,
    unset: Vec<String>,
    on_flows: Option<PyObject>,
) -> PyResult<PyObject> {
    let mut sim = load(text, file, format, overrides, unset)?;
    if on_flows.is_some() {
        sim.stream_flow_rows();
    }
    let total = sim.scenario().flows.len();
    let stop = sim.scenario().stop_time;
    // Advance in slices of simulated time so signals and progress are handled between them;
    // the slice adapts so that each takes roughly 20-200 ms of wall time.
    let mut slice = match stop {
        Some(s) => s.div(200).max(Nanos::from_micros(1)),
        None => Nanos::from_millis(1),
    };
    let mut interrupted = false;
    let mut last_report = Instant::now();
    let mut until = Nanos::ZERO;
    let mut labels = Vec::new();
    // Back to the interpreter after at least 0.1 s of wall time (or the progress interval, if
    // shorter), also while the first, short slices grow: taking the interpreter lock back waits
    // for whichever thread holds it (the results writer loading its libraries, at first).
    let visit_s = match progress {
        Some(_) if progress_interval_s < 0.1 => progress_interval_s.max(0.0),
        _ => 0.1,
    };
    loop {
        let status = py.allow_threads(|| {
            let t0 = Instant::now();
            loop {
                until = until.saturating_add(slice);
                let t = Instant::now();
                let status = sim.advance(until);
                let took = t.elapsed().as_secs_f64();
                if took < 0.02 && slice < Nanos::from_secs(10) {
                    slice = slice.mul(2);
                } else if took > 0.2 && slice > Nanos::from_micros(1) {
                    slice = slice.div(2);
                }
                if status == RunStatus::Finished || sim.failure().is_some() || t0.elapsed().as_secs_f64() >= visit_s {
                    return status;
                }
            }
        });
        if let Some(cb) = on_flows.as_ref() {
            let rows = sim.take_flow_rows();
            if !rows.is_empty() {
                cb.call1(py, (table_to_py_sharing(py, &rows, &mut labels)?,))?;
            }
        }
        if let Some(m) = sim.failure() {
            return Err(ScenarioError::new_err(m));
        }
        if status == RunStatus::Finished {
            break;
        }
        if py.check_signals().is_err() {
            interrupted = true;
            break;
        }
        if let Some(cb) = progress.as_ref() {
            if last_report.elapsed().as_secs_f64() >= progress_interval_s {
                last_report = Instant::now();
                cb.call1(py, (sim.now().as_secs_f64(), sim.flows_completed(), total))?;
            }
        }
    }
    let results = sim.results(interrupted);
    to_py(py, &results)
}

/// A JSON value as the Python object `json.loads` would give.
fn json_to_py(py: Python<'_>, v: &serde_json::Value) -> PyResult<PyObject> {
    use serde_json::Value;
    Ok(match v {
        Value::Null => py.None(),
        Value::Bool(b) => b.into_py(py),
        Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => i.into_py(py),
            (None, Some(u)) => u.into_py(py),
            _ => n.as_f64().unwrap_or(f64::NAN).into_py(py),
        },
        Value::String(s) => s.into_py(py),
        Value::Array(a) => {
            let l = PyList::empty_bound(py);
            for x in a {
                l.append(json_to_py(py, x)?)?;
            }
            l.into()
        }
        Value::Object(o) => {
            let d = PyDict::new_bound(py);
            for (k, x) in o {
                d.set_item(k, json_to_py(py, x)?)?;
            }
            d.into()
        }
    })
}

/// Every registered congestion control: a list of dicts with `names` (the first is the one
/// results report), `keys` (its parameters), `defaults` (their published values) and
/// `requires_ecn`, `router_assisted` (switches take part: see docs/protocols.md) and
/// `transports` (the transports it runs on, its default first).
#[pyfunction]
fn protocols(py: Python<'_>) -> PyResult<PyObject> {
    let out = PyList::empty_bound(py);
    for r in fctlab_transport::cc::REGISTRY {
        let d = PyDict::new_bound(py);
        d.set_item("names", r.names.to_vec())?;
        d.set_item("keys", (r.keys)().to_vec())?;
        d.set_item("defaults", json_to_py(py, &(r.defaults)())?)?;
        d.set_item("requires_ecn", r.requires_ecn)?;
        d.set_item("router_assisted", r.router_assisted)?;
        d.set_item("transports", r.transports.iter().map(|k| k.name()).collect::<Vec<_>>())?;
        out.append(d)?;
    }
    Ok(out.into())
}

/// A table's columns as `(len, null_count, validity, offsets, data, dictionary)` tuples in
/// schema order: the Arrow buffers of each column as bytes (validity and offsets None where
/// absent), and a label column's strings as such a tuple of their own (None for the others).
fn table_to_py<R: Row>(py: Python<'_>, rows: &[R]) -> PyResult<PyObject> {
    table_to_py_sharing(py, rows, &mut Vec::new())
}

/// [`table_to_py`] of one of several batches of a table: a label column whose strings are
/// those of the previous batch (`previous`, by column) hands out the same Python object, so
/// the batches share one copy of them (a workload's tag, however long, is held once).
fn table_to_py_sharing<R: Row>(
    py: Python<'_>,
    rows: &[R],
    previous: &mut Vec<Option<(fctlab_sim::Column, PyObject)>>,
) -> PyResult<PyObject> {
    let out = PyList::empty_bound(py);
    for (i, c) in R::columns(rows).into_iter().enumerate() {
        if previous.len() <= i {
            previous.push(None);
        }
        let dictionary = match &c.dictionary {
            None => py.None(),
            Some(d) => match &previous[i] {
                Some((seen, obj)) if seen == &**d => obj.clone_ref(py),
                _ => {
                    let obj = column_to_py(py, d, py.None());
                    previous[i] = Some(((**d).clone(), obj.clone_ref(py)));
                    obj
                }
            },
        };
        out.append(column_to_py(py, &c, dictionary))?;
    }
    Ok(out.into())
}

fn column_to_py(py: Python<'_>, c: &fctlab_sim::Column, dictionary: PyObject) -> PyObject {
    let bytes = |b: &Option<Vec<u8>>| -> PyObject {
        b.as_ref().map_or_else(|| py.None(), |b| PyBytes::new_bound(py, b).into())
    };
    (c.len, c.null_count, bytes(&c.validity), bytes(&c.offsets), PyBytes::new_bound(py, &c.data), dictionary)
        .into_py(py)
}

fn to_py(py: Python<'_>, r: &Results) -> PyResult<PyObject> {
    let out = PyDict::new_bound(py);
    out.set_item("flows", table_to_py(py, &r.flows)?)?;
    out.set_item("links", table_to_py(py, &r.links)?)?;
    match &r.queues {
        Some(q) => out.set_item("queues", table_to_py(py, q)?)?,
        None => out.set_item("queues", py.None())?,
    }
    match &r.cwnd {
        Some(c) => out.set_item("cwnd", table_to_py(py, c)?)?,
        None => out.set_item("cwnd", py.None())?,
    }
    match &r.drops {
        Some(d) => out.set_item("drops", table_to_py(py, d)?)?,
        None => out.set_item("drops", py.None())?,
    }
    match &r.pfc {
        Some(d) => out.set_item("pfc", table_to_py(py, d)?)?,
        None => out.set_item("pfc", py.None())?,
    }
    let pcaps = PyList::empty_bound(py);
    for f in &r.pcaps {
        pcaps.append((f.name.as_str(), PyBytes::new_bound(py, &f.bytes), f.packets, f.missed))?;
    }
    out.set_item("pcaps", pcaps)?;
    out.set_item("pcap_hosts", r.pcap_hosts.as_deref())?;
    let summary =
        serde_json::to_value(&r.summary).map_err(|e| pyo3::exceptions::PyRuntimeError::new_err(e.to_string()))?;
    out.set_item("summary", json_to_py(py, &summary)?)?;
    Ok(out.into())
}

/// The simulator's RCP port rule once (`RcpPort::update`): the rate after an interval of
/// `t_s` seconds with `bytes_in` bytes in and `queue_bytes` queued, from `rate_bps`, on a
/// link of `capacity_bps` with the RTT average `avg_rtt_s`; and the average after each of
/// `rtt_samples_ns` (packets' RTT fields) in turn. Returns `(rate_bps, [averages, s])`. For
/// checks of other implementations of the rule against this one.
#[pyfunction]
#[pyo3(signature = (capacity_bps, alpha, beta, rate_bps, avg_rtt_s, t_s, bytes_in, queue_bytes, rtt_samples_ns=vec![]))]
#[allow(clippy::too_many_arguments)]
fn rcp_port_rule(
    capacity_bps: u64,
    alpha: f64,
    beta: f64,
    rate_bps: f64,
    avg_rtt_s: f64,
    t_s: f64,
    bytes_in: u64,
    queue_bytes: u64,
    rtt_samples_ns: Vec<u32>,
) -> (f64, Vec<f64>) {
    use fctlab_transport::cc::rcp::{RcpConfig, RcpPort};
    use fctlab_transport::cc::PortInfo;

    let cfg = RcpConfig { alpha, beta, ..Default::default() };
    let link = PortInfo {
        capacity: fctlab_engine::BitsPerSec(capacity_bps),
        delay: fctlab_engine::Nanos::ZERO,
        host_nic: false,
    };
    let mut p = RcpPort::with_state(&cfg, &link, rate_bps, fctlab_engine::Nanos::from_secs_f64(avg_rtt_s));
    p.update(t_s, bytes_in, queue_bytes);
    let averages = rtt_samples_ns.iter().map(|&s| p.sample_rtt(s)).collect();
    (p.rate_bps(), averages)
}

/// The simulator's RACS port (`RacsPort`) through `events`: `(0, w_c, w_p)` a request with
/// these weights, `(1, 0, 0)` the end of an interval. Returns, per event, the grant in bits
/// per second (0 for an interval's end and for a request of weight 0) and the running W after
/// it. For checks of other implementations of the rule against this one.
#[pyfunction]
fn racs_port_rule(capacity_bps: u64, events: Vec<(u32, f64, f64)>) -> Vec<(u64, f64)> {
    use fctlab_net::{PacketKind, RouterHeader};
    use fctlab_transport::cc::racs::{RacsConfig, RacsHeader, RacsPort};
    use fctlab_transport::cc::{PortControl, PortInfo, PortView};

    let link = PortInfo {
        capacity: fctlab_engine::BitsPerSec(capacity_bps),
        delay: fctlab_engine::Nanos::ZERO,
        host_nic: false,
    };
    let mut p = RacsPort::new(&RacsConfig::default(), &link);
    let v = PortView::default();
    events
        .into_iter()
        .map(|(kind, w_c, w_p)| {
            let mut grant = 0;
            if kind == 1 {
                p.on_tick(&v);
            } else {
                let h = RacsHeader {
                    weight: w_c as f32,
                    prev_weight: w_p as f32,
                    rate_bps: RacsHeader::NO_RATE_YET,
                    rtt_ns: 0,
                    interval_ns: RacsHeader::NO_INTERVAL_YET,
                };
                let mut raw: RouterHeader = h.header();
                p.on_packet(&v, PacketKind::Data, 64, &mut raw);
                if w_c > 0.0 {
                    grant = RacsHeader::read(&raw).rate_bps;
                }
            }
            (grant, p.total_weight())
        })
        .collect()
}

/// RACS's sender weight, eq. 4.1 (`RacsConfig::weight_of`), with (`w_min`, `w_max`, `a`) at
/// each of `remaining` segments left: the definition other implementations tabulate.
#[pyfunction]
fn racs_weight(w_min: f64, w_max: f64, a: f64, remaining: Vec<f64>) -> Vec<f64> {
    use fctlab_transport::cc::racs::RacsConfig;

    let cfg = RacsConfig { w_min, w_max, a, ..RacsConfig::default() };
    remaining.into_iter().map(|r| cfg.weight_of(Some(r))).collect()
}

/// SDC's sender class (`SdcConfig::class_of` with the default classes: 0 = A, 1 = B, 2 = C)
/// of a flow with each of `remaining` bytes left to send in segments of `mss_bytes`.
#[pyfunction]
fn sdc_class(remaining: Vec<u64>, mss_bytes: u64) -> Vec<usize> {
    use fctlab_transport::cc::sdc::SdcConfig;

    let cfg = SdcConfig::default();
    remaining.into_iter().map(|r| cfg.class_of(Some(r), mss_bytes)).collect()
}

/// The simulator's SDC port (`SdcPort`): the load factor of eq. 3.4 for `(bytes_in,
/// q_av_bytes, t_s)` on a link of `capacity_bps`, for each of `intervals`; and, through
/// `packets` (`(class, prev_class)`, header numbering), the class counts and the highest
/// active class after each. For checks of other implementations of the rule against this one.
#[pyfunction]
fn sdc_port_rule(
    capacity_bps: u64,
    intervals: Vec<(u64, f64, f64)>,
    packets: Vec<(u8, u8)>,
) -> (Vec<f64>, Vec<([u32; 3], u8)>) {
    use fctlab_net::PacketKind;
    use fctlab_transport::cc::sdc::{SdcConfig, SdcHeader, SdcPort};
    use fctlab_transport::cc::{PortControl, PortInfo, PortView};

    let link = PortInfo {
        capacity: fctlab_engine::BitsPerSec(capacity_bps),
        delay: fctlab_engine::Nanos::ZERO,
        host_nic: false,
    };
    let mut p = SdcPort::new(&SdcConfig::default(), &link);
    let loads = intervals.iter().map(|&(b, q, t)| p.load_factor(b, q, t)).collect();
    let v = PortView::default();
    let counts = packets
        .into_iter()
        .map(|(class, prev_class)| {
            let mut raw = SdcHeader { class, prev_class, ..SdcHeader::default() }.header();
            p.on_packet(&v, PacketKind::Data, 64, &mut raw);
            (p.counts(), p.top())
        })
        .collect();
    (loads, counts)
}

/// The keys of the scenario tables that docs/scenarios.md lists key by key: `{table: [keys]}`
/// (`transport`: besides one table per protocol; `monitor`).
#[pyfunction]
fn table_keys(py: Python<'_>) -> PyResult<PyObject> {
    let d = PyDict::new_bound(py);
    for (table, keys) in fctlab_scenario::table_keys() {
        d.set_item(table, keys)?;
    }
    Ok(d.into())
}

/// The schema of every result table: `{table: [(column, type, nullable), ...]}` with types
/// `int64`, `float64`, `string` or `bool`, and `summary`: the keys of the summary the core writes.
#[pyfunction]
fn schemas(py: Python<'_>) -> PyResult<PyObject> {
    let d = PyDict::new_bound(py);
    for s in fctlab_sim::SCHEMAS {
        let cols: Vec<(&str, &str, bool)> = s.columns.iter().map(|c| (c.name, c.ty.name(), c.nullable)).collect();
        d.set_item(s.table, cols)?;
    }
    d.set_item("summary", fctlab_sim::Summary::keys().to_vec())?;
    Ok(d.into())
}

/// A size distribution from a shipped CDF's name, or from the text of a CDF file whose sizes
/// are in units of `unit_bytes` (`fctlab_dist::Cdf::parse`).
fn cdf_dist(cdf: &str, unit_bytes: f64, source: &str) -> PyResult<fctlab_dist::SizeDist> {
    let c = match fctlab_dist::Cdf::builtin(cdf) {
        Some(c) => c,
        None if !cdf.contains('\n') => {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "\"{}\" is neither a shipped distribution ({}) nor a CDF file",
                cdf.chars().take(40).collect::<String>(),
                fctlab_dist::Cdf::builtin_names().join(", ")
            )))
        }
        None => fctlab_dist::Cdf::parse(cdf, unit_bytes, source).map_err(pyo3::exceptions::PyValueError::new_err)?,
    };
    fctlab_dist::SizeDist::empirical(c).map_err(pyo3::exceptions::PyValueError::new_err)
}

/// PIAS's demotion thresholds for a CDF at a load (`fctlab_dist::mlfq`): at most
/// `max_thresholds` thresholds in bytes, and the model's mean time with them.
#[pyfunction]
#[pyo3(signature = (cdf, load, max_thresholds=7, unit_bytes=1.0, source="cdf"))]
fn mlfq_thresholds(
    cdf: &str,
    load: f64,
    max_thresholds: usize,
    unit_bytes: f64,
    source: &str,
) -> PyResult<(Vec<u64>, f64)> {
    let t = fctlab_dist::mlfq::thresholds(&cdf_dist(cdf, unit_bytes, source)?, load, max_thresholds)
        .map_err(pyo3::exceptions::PyValueError::new_err)?;
    Ok((t.bytes, t.mean_time))
}

/// The model's mean time for a CDF at a load with the given demotion thresholds (bytes).
#[pyfunction]
#[pyo3(signature = (cdf, load, thresholds, unit_bytes=1.0, source="cdf"))]
fn mlfq_mean_time(cdf: &str, load: f64, thresholds: Vec<u64>, unit_bytes: f64, source: &str) -> PyResult<f64> {
    if thresholds.windows(2).any(|w| w[0] >= w[1]) {
        return Err(pyo3::exceptions::PyValueError::new_err(format!("thresholds must rise: {thresholds:?}")));
    }
    let m = fctlab_dist::mlfq::Model::new(&cdf_dist(cdf, unit_bytes, source)?, load)
        .map_err(pyo3::exceptions::PyValueError::new_err)?;
    Ok(m.mean_time(&thresholds))
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(validate, m)?)?;
    m.add_function(wrap_pyfunction!(plan, m)?)?;
    m.add_function(wrap_pyfunction!(protocols, m)?)?;
    m.add_function(wrap_pyfunction!(schemas, m)?)?;
    m.add_function(wrap_pyfunction!(table_keys, m)?)?;
    m.add_function(wrap_pyfunction!(rcp_port_rule, m)?)?;
    m.add_function(wrap_pyfunction!(racs_port_rule, m)?)?;
    m.add_function(wrap_pyfunction!(racs_weight, m)?)?;
    m.add_function(wrap_pyfunction!(sdc_port_rule, m)?)?;
    m.add_function(wrap_pyfunction!(sdc_class, m)?)?;
    m.add_function(wrap_pyfunction!(mlfq_thresholds, m)?)?;
    m.add_function(wrap_pyfunction!(mlfq_mean_time, m)?)?;
    m.add_function(wrap_pyfunction!(sched::sched_send, m)?)?;
    m.add_function(wrap_pyfunction!(sched::sched_recv, m)?)?;
    m.add_function(wrap_pyfunction!(sched::sched_loopback, m)?)?;
    m.add("ScenarioError", m.py().get_type_bound::<ScenarioError>())?;
    m.add("VERSION", fctlab_sim::VERSION)?;
    Ok(())
}
