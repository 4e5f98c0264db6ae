//! `fctlab._core.sched_*`: SCHED_TCP over real sockets (`fctlab-sched-tokio`) for
//! `fctlab.sched`. Each call runs its own tokio runtime with the GIL released, and returns
//! plain lists of dicts; bad arguments raise ValueError naming the argument.

use fctlab_sched::{Policy, Rank};
use fctlab_sched_tokio::frame::Limits;
use fctlab_sched_tokio::{pattern, Delivery, Receiver, RecvConfig, SendConfig, SendReport, Sender};
use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use std::net::SocketAddr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

fn addr(what: &str, s: &str) -> PyResult<SocketAddr> {
    s.parse().map_err(|_| {
        PyValueError::new_err(format!("{what}: {s:?} is not an address HOST:PORT (an IP address and a port)"))
    })
}

fn policy(name: &str, then: &str) -> PyResult<Policy> {
    let then = Rank::from_name(then).map_err(|m| PyValueError::new_err(format!("priority_then: {m}")))?;
    Policy::from_name(name, then).map_err(|m| PyValueError::new_err(format!("policy: {m}")))
}

fn seconds(what: &str, s: f64) -> PyResult<Duration> {
    if s.is_finite() && s > 0.0 && s < 1e6 {
        Ok(Duration::from_secs_f64(s))
    } else {
        Err(PyValueError::new_err(format!("{what}: expected a positive number of seconds, got {s}")))
    }
}

fn unix_s(t: SystemTime) -> f64 {
    t.duration_since(UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64())
}

fn runtime() -> PyResult<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| PyOSError::new_err(format!("starting the I/O runtime: {e}")))
}

/// The largest message the bindings send (its bytes are held while it is handed out).
const MAX_MESSAGE: u64 = 1 << 32;

#[allow(clippy::too_many_arguments)]
fn send_config(
    policy_name: &str,
    then: &str,
    chunk_bytes: u32,
    send_buffer_bytes: Option<u32>,
    timeout_s: f64,
) -> PyResult<SendConfig> {
    let mut cfg = SendConfig::new(policy(policy_name, then)?);
    if !(64..=(1 << 20)).contains(&chunk_bytes) {
        return Err(PyValueError::new_err(format!("chunk_bytes: expected 64 B to 1 MiB, got {chunk_bytes} B")));
    }
    cfg.chunk_bytes = chunk_bytes;
    cfg.send_buffer_bytes = send_buffer_bytes;
    cfg.timeout = seconds("timeout_s", timeout_s)?;
    Ok(cfg)
}

fn check_workload(sizes: &[u64], starts_s: &[f64], classes: &[u32]) -> PyResult<()> {
    if starts_s.len() != sizes.len() || classes.len() != sizes.len() {
        return Err(PyValueError::new_err(format!(
            "sizes, starts_s and classes must have one length (got {}, {}, {})",
            sizes.len(),
            starts_s.len(),
            classes.len()
        )));
    }
    if let Some((i, s)) = sizes.iter().enumerate().find(|(_, &s)| s > MAX_MESSAGE) {
        return Err(PyValueError::new_err(format!(
            "sizes[{i}]: {s} B is above the {MAX_MESSAGE} B a message may have"
        )));
    }
    if let Some((i, t)) = starts_s.iter().enumerate().find(|(_, t)| !(t.is_finite() && **t >= 0.0 && **t < 1e6)) {
        return Err(PyValueError::new_err(format!("starts_s[{i}]: expected seconds >= 0, got {t}")));
    }
    Ok(())
}

/// Sends message k (id base + k, `sizes[k]` bytes of [`pattern`]) at `starts_s[k]` seconds.
async fn send_all(
    to: SocketAddr,
    cfg: SendConfig,
    base: u64,
    sizes: &[u64],
    starts_s: &[f64],
    classes: &[u32],
) -> (SystemTime, Vec<SendReport>) {
    let epoch = SystemTime::now();
    let t0 = tokio::time::Instant::now();
    let mut tx = Sender::new(to, cfg, base);
    let mut order: Vec<usize> = (0..sizes.len()).collect();
    order.sort_by(|a, b| starts_s[*a].total_cmp(&starts_s[*b]).then(a.cmp(b)));
    let mut ids = vec![0u64; sizes.len()];
    for k in order {
        tokio::time::sleep_until(t0 + Duration::from_secs_f64(starts_s[k])).await;
        ids[k] = tx.send(pattern(base + k as u64, sizes[k] as usize), classes[k]);
    }
    let mut reports = tx.finish().await;
    // Back in the caller's order (ids follow send order).
    reports.sort_by_key(|r| ids.iter().position(|&i| i == r.message));
    (epoch, reports)
}

fn report_list(py: Python<'_>, epoch: SystemTime, base: u64, reports: &[SendReport]) -> PyResult<PyObject> {
    let out = PyList::empty_bound(py);
    for r in reports {
        let d = PyDict::new_bound(py);
        d.set_item("message", r.message)?;
        d.set_item("index", r.message - base)?;
        d.set_item("size_bytes", r.size)?;
        d.set_item("class", r.class)?;
        d.set_item("start_unix_s", unix_s(epoch) + r.started.as_secs_f64())?;
        d.set_item("transfer_s", r.transfer.map(|t| t.as_secs_f64()))?;
        d.set_item("error", r.error.clone())?;
        out.append(d)?;
    }
    Ok(out.into())
}

/// Sends a workload to a receiver and reports each message.
#[pyfunction]
#[pyo3(signature = (to, sizes, starts_s, classes, policy, priority_then="las", chunk_bytes=16384, send_buffer_bytes=None, timeout_s=30.0, base=0))]
#[allow(clippy::too_many_arguments)]
pub fn sched_send(
    py: Python<'_>,
    to: &str,
    sizes: Vec<u64>,
    starts_s: Vec<f64>,
    classes: Vec<u32>,
    policy: &str,
    priority_then: &str,
    chunk_bytes: u32,
    send_buffer_bytes: Option<u32>,
    timeout_s: f64,
    base: u64,
) -> PyResult<PyObject> {
    let to = addr("to", to)?;
    let cfg = send_config(policy, priority_then, chunk_bytes, send_buffer_bytes, timeout_s)?;
    check_workload(&sizes, &starts_s, &classes)?;
    let rt = runtime()?;
    let (epoch, reports) = py.allow_threads(|| rt.block_on(send_all(to, cfg, base, &sizes, &starts_s, &classes)));
    report_list(py, epoch, base, &reports)
}

/// One delivery as the bindings report it: message id (None: bytes of no message), size,
/// completion (Unix seconds), error.
type Received = (Option<u64>, u64, Option<f64>, Option<String>);

async fn receive(rx: &mut Receiver, expect: Option<usize>, deadline: Duration, verify: bool, out: &mut Vec<Received>) {
    let end = tokio::time::Instant::now() + deadline;
    let mut messages = 0;
    while expect.map_or(true, |n| messages < n) {
        let Ok(Some(d)) = tokio::time::timeout_at(end, rx.next()).await else { break };
        match d {
            Delivery::Message { id, data, completed_at } => {
                messages += 1;
                let bad = verify && data != pattern(id, data.len());
                let err = bad.then(|| format!("message {id}: its bytes are not the ones sent"));
                out.push((Some(id), data.len() as u64, Some(unix_s(completed_at)), err));
            }
            Delivery::Error { id, error } => {
                if id.is_some() {
                    messages += 1;
                }
                out.push((id, 0, None, Some(error)));
            }
        }
    }
}

fn delivery_list(py: Python<'_>, got: &[Received]) -> PyResult<PyObject> {
    let out = PyList::empty_bound(py);
    for (id, size, at, err) in got {
        let d = PyDict::new_bound(py);
        d.set_item("message", *id)?;
        d.set_item("size_bytes", *size)?;
        d.set_item("completed_unix_s", *at)?;
        d.set_item("error", err.clone())?;
        out.append(d)?;
    }
    Ok(out.into())
}

fn recv_config(idle_timeout_s: f64, max_buffered_bytes: u64) -> PyResult<RecvConfig> {
    Ok(RecvConfig {
        limits: Limits { max_chunk: 1 << 20, max_message: MAX_MESSAGE },
        max_buffered_bytes,
        idle_timeout: seconds("idle_timeout_s", idle_timeout_s)?,
    })
}

/// Receives messages on `listen` until `expect` messages have been delivered or failed, or
/// `timeout_s` has passed; `verify` checks every byte against the sender's pattern.
#[pyfunction]
#[pyo3(signature = (listen, expect=None, timeout_s=60.0, verify=true, idle_timeout_s=2.0, max_buffered_bytes=1 << 30))]
pub fn sched_recv(
    py: Python<'_>,
    listen: &str,
    expect: Option<usize>,
    timeout_s: f64,
    verify: bool,
    idle_timeout_s: f64,
    max_buffered_bytes: u64,
) -> PyResult<PyObject> {
    let at = addr("listen", listen)?;
    let deadline = seconds("timeout_s", timeout_s)?;
    let cfg = recv_config(idle_timeout_s, max_buffered_bytes)?;
    let rt = runtime()?;
    let got = py.allow_threads(|| {
        rt.block_on(async {
            let mut rx = Receiver::bind(at, cfg).await.map_err(|e| format!("listening on {at}: {e}"))?;
            let mut got = Vec::new();
            receive(&mut rx, expect, deadline, verify, &mut got).await;
            Ok::<_, String>(got)
        })
    });
    delivery_list(py, &got.map_err(PyOSError::new_err)?)
}

/// A workload over loopback in one process: a receiver on 127.0.0.1 and a sender to it.
/// Returns (sender reports, receiver deliveries).
#[pyfunction]
#[pyo3(signature = (sizes, starts_s, classes, policy, priority_then="las", chunk_bytes=16384, send_buffer_bytes=None, timeout_s=60.0))]
#[allow(clippy::too_many_arguments)]
pub fn sched_loopback(
    py: Python<'_>,
    sizes: Vec<u64>,
    starts_s: Vec<f64>,
    classes: Vec<u32>,
    policy: &str,
    priority_then: &str,
    chunk_bytes: u32,
    send_buffer_bytes: Option<u32>,
    timeout_s: f64,
) -> PyResult<(PyObject, PyObject)> {
    let cfg = send_config(policy, priority_then, chunk_bytes, send_buffer_bytes, timeout_s)?;
    check_workload(&sizes, &starts_s, &classes)?;
    let deadline = seconds("timeout_s", timeout_s)?;
    let rcfg = recv_config(2.0, 1 << 30)?;
    let rt = runtime()?;
    let res = py.allow_threads(|| {
        rt.block_on(async {
            let mut rx = Receiver::bind("127.0.0.1:0".parse().expect("address"), rcfg)
                .await
                .map_err(|e| format!("listening on loopback: {e}"))?;
            let to = rx.local_addr();
            let n = sizes.len();
            let recv = async {
                let mut got = Vec::new();
                receive(&mut rx, Some(n), deadline, true, &mut got).await;
                got
            };
            let (sent, got) = tokio::join!(send_all(to, cfg, 0, &sizes, &starts_s, &classes), recv);
            Ok::<_, String>((sent, got))
        })
    });
    let ((epoch, reports), got) = res.map_err(PyOSError::new_err)?;
    Ok((report_list(py, epoch, 0, &reports)?, delivery_list(py, &got)?))
}
