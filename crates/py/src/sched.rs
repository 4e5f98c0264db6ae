//! `fctlab._core.sched_*`: SCHED_TCP over real sockets (`fctlab-sched-tokio`) for
//! `fctlab.sched`. Each call runs its own tokio runtime with the GIL released, and returns
//! plain lists of dicts; bad arguments raise ValueError naming the argument.

use fctlab_sched::{Policy, Rank};
use fctlab_sched_tokio::frame::Limits;
use fctlab_sched_tokio::{pattern, Delivery, Key, Receiver, RecvConfig, SendConfig, SendReport, Sender, SessionId};
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

/// The pre-shared key from its secret's bytes.
fn key(secret: Option<&[u8]>) -> PyResult<Option<Key>> {
    secret.map(|b| Key::new(b).map_err(|m| PyValueError::new_err(format!("key: {m}")))).transpose()
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
    secret: Option<&[u8]>,
) -> PyResult<SendConfig> {
    let mut cfg = SendConfig::new(policy(policy_name, then)?);
    cfg.key = key(secret)?;
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

/// Opens a session announcing the workload, then sends message k (`sizes[k]` bytes of
/// [`pattern`]) at `starts_s[k]` seconds: (the Unix time the starts count from, one report per
/// message in the caller's order).
async fn send_all(
    to: SocketAddr,
    cfg: SendConfig,
    sizes: &[u64],
    starts_s: &[f64],
    classes: &[u32],
) -> (SystemTime, Vec<SendReport>) {
    let table: Vec<(u64, u32)> = sizes.iter().copied().zip(classes.iter().copied()).collect();
    let mut tx = match Sender::open(to, cfg, &table).await {
        Ok(tx) => tx,
        Err(e) => return (SystemTime::now(), SendReport::all_failed(&table, &e)),
    };
    let epoch = SystemTime::now();
    let t0 = tokio::time::Instant::now();
    let mut order: Vec<usize> = (0..sizes.len()).collect();
    order.sort_by(|a, b| starts_s[*a].total_cmp(&starts_s[*b]).then(a.cmp(b)));
    for k in order {
        tokio::time::sleep_until(t0 + Duration::from_secs_f64(starts_s[k])).await;
        tx.send(k as u32, pattern(k as u64, sizes[k] as usize)).expect("an announced message of its size");
    }
    (epoch, tx.finish().await)
}

fn report_list(py: Python<'_>, epoch: SystemTime, starts_s: &[f64], reports: &[SendReport]) -> PyResult<PyObject> {
    let out = PyList::empty_bound(py);
    for r in reports {
        let d = PyDict::new_bound(py);
        let k = r.message as usize;
        d.set_item("message", r.message)?;
        d.set_item("index", r.message)?;
        d.set_item("size_bytes", r.size)?;
        d.set_item("class", r.class)?;
        // A message never sent (the session did not open) counts from its planned start.
        let started = r.started.map_or(starts_s[k], |s| s.as_secs_f64());
        d.set_item("start_unix_s", unix_s(epoch) + started)?;
        d.set_item("transfer_s", r.transfer.map(|t| t.as_secs_f64()))?;
        d.set_item("error", r.error.clone())?;
        out.append(d)?;
    }
    Ok(out.into())
}

/// Sends a workload to a receiver in one session and reports each message; `key` is the
/// pre-shared key's secret (None: the receiver must not require one).
#[pyfunction]
#[pyo3(signature = (to, sizes, starts_s, classes, policy, priority_then="las", chunk_bytes=16384, send_buffer_bytes=None, timeout_s=30.0, key=None))]
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
    key: Option<Vec<u8>>,
) -> PyResult<PyObject> {
    let to = addr("to", to)?;
    let cfg = send_config(policy, priority_then, chunk_bytes, send_buffer_bytes, timeout_s, key.as_deref())?;
    check_workload(&sizes, &starts_s, &classes)?;
    let rt = runtime()?;
    let (epoch, reports) = py.allow_threads(|| rt.block_on(send_all(to, cfg, &sizes, &starts_s, &classes)));
    report_list(py, epoch, &starts_s, &reports)
}

/// What a receiver saw: rows of deliveries, failures and refusals, the sessions, and whether
/// it stopped for a signal.
#[derive(Default)]
struct Received {
    rows: Vec<Row>,
    sessions: Vec<SessionRow>,
    interrupted: bool,
}

/// A delivered, failed or refused message (or frame), or a run of messages that failed
/// before any of their bytes came (`message` to `last_message`).
struct Row {
    kind: &'static str,
    session: Option<String>,
    message: Option<u32>,
    last_message: Option<u32>,
    size: u64,
    completed_unix_s: Option<f64>,
    error: Option<String>,
}

/// A session: who opened it, how many messages it announced, and how it ended.
struct SessionRow {
    session: String,
    peer: String,
    messages: u32,
    delivered: Option<u32>,
    failed: Option<u32>,
    ended: Option<String>,
}

impl Received {
    /// Files one delivery: how many announced messages it settles.
    fn take(&mut self, d: Delivery, verify: bool) -> usize {
        let row = |kind, session: Option<SessionId>, message: Option<u32>, size, completed_unix_s, error| Row {
            kind,
            session: session.map(|s| s.to_string()),
            message,
            last_message: message,
            size,
            completed_unix_s,
            error,
        };
        match d {
            Delivery::Message { session, id, data, completed_at } => {
                let bad = verify && data != pattern(id as u64, data.len());
                let err = bad.then(|| format!("message {id}: its bytes are not the ones sent"));
                let at = Some(unix_s(completed_at));
                self.rows.push(row("delivered", Some(session), Some(id), data.len() as u64, at, err));
                1
            }
            Delivery::Failed { session, id, error } => {
                self.rows.push(row("failed", Some(session), Some(id), 0, None, Some(error)));
                1
            }
            Delivery::Unsent { session, first, last, error } => {
                let mut r = row("failed", Some(session), Some(first), 0, None, Some(error));
                r.last_message = Some(last);
                self.rows.push(r);
                (last - first + 1) as usize
            }
            Delivery::Refused { error, .. } => {
                self.rows.push(row("refused", None, None, 0, None, Some(error)));
                0
            }
            Delivery::Opened { session, peer, messages } => {
                self.sessions.push(SessionRow {
                    session: session.to_string(),
                    peer: peer.to_string(),
                    messages,
                    delivered: None,
                    failed: None,
                    ended: None,
                });
                0
            }
            Delivery::Closed { session, delivered, failed, how } => {
                let sid = session.to_string();
                if let Some(s) = self.sessions.iter_mut().find(|s| s.session == sid) {
                    (s.delivered, s.failed, s.ended) = (Some(delivered), Some(failed), Some(how));
                }
                0
            }
        }
    }
}

/// Takes deliveries until `expect` announced messages have been delivered or failed, the
/// deadline, or `stop()` says so (checked every 100 ms); then stops the receiver, abandoning
/// open sessions with `how`.
async fn receive(
    rx: &mut Receiver,
    expect: Option<usize>,
    deadline: Option<Duration>,
    verify: bool,
    stop: impl Fn() -> bool,
    got: &mut Received,
) {
    let end = deadline.map(|d| tokio::time::Instant::now() + d);
    let mut settled = 0;
    let how = loop {
        if expect.is_some_and(|n| settled >= n) {
            break "the receiver had the messages it expected";
        }
        if end.is_some_and(|e| tokio::time::Instant::now() >= e) {
            break "the receiver's time was up";
        }
        if stop() {
            got.interrupted = true;
            break "the receiver was interrupted";
        }
        match tokio::time::timeout(Duration::from_millis(100), rx.next()).await {
            Ok(Some(d)) => settled += got.take(d, verify),
            Ok(None) => break "the receiver stopped",
            Err(_) => {}
        }
    };
    if expect.is_some_and(|n| settled >= n) {
        // Let the senders hear their last completion notices and close their sessions.
        let linger = tokio::time::Instant::now() + Duration::from_secs(2);
        while rx.open_sessions() > 0 && tokio::time::Instant::now() < linger {
            if let Ok(Some(d)) = tokio::time::timeout(Duration::from_millis(20), rx.next()).await {
                got.take(d, verify);
            }
        }
    }
    for d in rx.stop(how) {
        got.take(d, verify);
    }
}

fn received_dict(py: Python<'_>, got: &Received, counters: fctlab_sched_tokio::Counters) -> PyResult<PyObject> {
    let rows = PyList::empty_bound(py);
    for r in &got.rows {
        let d = PyDict::new_bound(py);
        d.set_item("kind", r.kind)?;
        d.set_item("session", r.session.clone())?;
        d.set_item("message", r.message)?;
        d.set_item("last_message", r.last_message)?;
        d.set_item("size_bytes", r.size)?;
        d.set_item("completed_unix_s", r.completed_unix_s)?;
        d.set_item("error", r.error.clone())?;
        rows.append(d)?;
    }
    let sessions = PyList::empty_bound(py);
    for s in &got.sessions {
        let d = PyDict::new_bound(py);
        d.set_item("session", &s.session)?;
        d.set_item("peer", &s.peer)?;
        d.set_item("messages", s.messages)?;
        d.set_item("delivered", s.delivered)?;
        d.set_item("failed", s.failed)?;
        d.set_item("ended", s.ended.clone())?;
        sessions.append(d)?;
    }
    let c = PyDict::new_bound(py);
    c.set_item("sessions_opened", counters.sessions_opened)?;
    c.set_item("sessions_refused", counters.sessions_refused)?;
    c.set_item("refused", counters.refused)?;
    c.set_item("forged_opens", counters.forged_opens)?;
    c.set_item("forged_joins", counters.forged_joins)?;
    c.set_item("replayed_joins", counters.replayed_joins)?;
    c.set_item("evicted", counters.evicted)?;
    c.set_item("sessions_evicted", counters.sessions_evicted)?;
    c.set_item("accept_errors", counters.accept_errors)?;
    c.set_item("peak_reserved_bytes", counters.peak_reserved_bytes)?;
    let out = PyDict::new_bound(py);
    out.set_item("rows", rows)?;
    out.set_item("sessions", sessions)?;
    out.set_item("counters", c)?;
    out.set_item("interrupted", got.interrupted)?;
    Ok(out.into())
}

/// The receiver's settings; a message may have half a session's budget.
fn recv_config(
    read_timeout_s: f64,
    max_buffered_bytes: u64,
    max_total_buffered_bytes: u64,
    max_connections: usize,
    max_sessions: usize,
    secret: Option<&[u8]>,
) -> PyResult<RecvConfig> {
    let read_timeout = seconds("read_timeout_s", read_timeout_s)?;
    if read_timeout < Duration::from_secs(2) {
        return Err(PyValueError::new_err(format!(
            "read_timeout_s: {read_timeout_s} s is shorter than two of the senders' 1 s heartbeats"
        )));
    }
    if max_connections == 0 {
        return Err(PyValueError::new_err("max_connections: expected at least 1"));
    }
    if max_sessions == 0 {
        return Err(PyValueError::new_err("max_sessions: expected at least 1"));
    }
    if max_buffered_bytes < 1 << 16 || max_total_buffered_bytes < max_buffered_bytes {
        return Err(PyValueError::new_err(format!(
            "max_buffered_bytes: expected 64 KiB to max_total_buffered_bytes ({max_total_buffered_bytes} B), got {max_buffered_bytes} B"
        )));
    }
    Ok(RecvConfig {
        limits: Limits { max_chunk: 1 << 20, max_message: (max_buffered_bytes / 2).min(MAX_MESSAGE) },
        key: key(secret)?,
        max_buffered_bytes,
        max_total_buffered_bytes,
        read_timeout,
        max_connections,
        max_sessions,
        ..RecvConfig::default()
    })
}

/// Receives on `listen` until `expect` announced messages have been delivered or failed,
/// `timeout_s` has passed (None: no limit), or a signal arrives (Ctrl-C, or a Python signal
/// handler that raises); `verify` checks every byte against the sender's pattern; `key` is
/// the pre-shared key's secret (None: no key, loopback addresses only). Returns a dict: rows,
/// sessions, counters, interrupted.
#[pyfunction]
#[pyo3(signature = (listen, expect=None, timeout_s=None, verify=true, read_timeout_s=10.0, max_buffered_bytes=64 << 20, max_connections=1024, key=None, max_total_buffered_bytes=512 << 20, max_sessions=8))]
#[allow(clippy::too_many_arguments)]
pub fn sched_recv(
    py: Python<'_>,
    listen: &str,
    expect: Option<usize>,
    timeout_s: Option<f64>,
    verify: bool,
    read_timeout_s: f64,
    max_buffered_bytes: u64,
    max_connections: usize,
    key: Option<Vec<u8>>,
    max_total_buffered_bytes: u64,
    max_sessions: usize,
) -> PyResult<PyObject> {
    let at = addr("listen", listen)?;
    let deadline = timeout_s.map(|t| seconds("timeout_s", t)).transpose()?;
    let cfg = recv_config(
        read_timeout_s,
        max_buffered_bytes,
        max_total_buffered_bytes,
        max_connections,
        max_sessions,
        key.as_deref(),
    )?;
    // Signals reach Python's main thread only; elsewhere (a testbed's receiver threads) the
    // receiver never takes the GIL while it runs: a daemon thread that asked for it while the
    // interpreter shuts down would be killed inside Rust code.
    let threading = py.import_bound("threading")?;
    let on_main = threading.call_method0("current_thread")?.is(&threading.call_method0("main_thread")?);
    let rt = runtime()?;
    let res = py.allow_threads(|| {
        rt.block_on(async {
            let mut rx = Receiver::bind(at, cfg).await.map_err(|e| match e.kind() {
                // The refusal of a non-loopback address without a key names it already.
                std::io::ErrorKind::PermissionDenied if cfg.key.is_none() => e.to_string(),
                _ => format!("listening on {at}: {e}"),
            })?;
            let mut got = Received::default();
            // A pending signal (Ctrl-C, SIGTERM) runs its Python handler here; one that
            // raises stops the receiver, and the exception is not re-raised: the caller
            // sees `interrupted`.
            let stop = || on_main && Python::with_gil(|py| py.check_signals().is_err());
            receive(&mut rx, expect, deadline, verify, stop, &mut got).await;
            Ok::<_, String>((got, rx.counters()))
        })
    });
    let (got, counters) = res.map_err(PyOSError::new_err)?;
    received_dict(py, &got, counters)
}

/// A workload over loopback in one process: a receiver on 127.0.0.1 and a sender to it.
/// Returns (sender reports, receiver rows).
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
    let cfg = send_config(policy, priority_then, chunk_bytes, send_buffer_bytes, timeout_s, None)?;
    check_workload(&sizes, &starts_s, &classes)?;
    let deadline = seconds("timeout_s", timeout_s)?;
    // The receiver's budget fits the workload's largest message (twice: a message may have
    // half a session's budget).
    let largest = sizes.iter().copied().max().unwrap_or(0);
    let budget = (64u64 << 20).max(2 * fctlab_sched_tokio::reserved_for(largest));
    let rcfg = recv_config(10.0, budget, budget.max(512 << 20), 1024, 8, None)?;
    let rt = runtime()?;
    let res = py.allow_threads(|| {
        rt.block_on(async {
            let mut rx = Receiver::bind("127.0.0.1:0".parse().expect("address"), rcfg)
                .await
                .map_err(|e| format!("listening on loopback: {e}"))?;
            let to = rx.local_addr();
            let n = sizes.len();
            let recv = async {
                let mut got = Received::default();
                receive(&mut rx, Some(n), Some(deadline), true, || false, &mut got).await;
                got
            };
            let (sent, got) = tokio::join!(send_all(to, cfg, &sizes, &starts_s, &classes), recv);
            Ok::<_, String>((sent, got, rx.counters()))
        })
    });
    let ((epoch, reports), got, counters) = res.map_err(PyOSError::new_err)?;
    Ok((report_list(py, epoch, &starts_s, &reports)?, received_dict(py, &got, counters)?))
}
