//! The receiving side: frames from any connection, messages delivered whole.

use crate::frame::{self, FrameError, Limits, HEADER_BYTES};
use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

/// How a [`Receiver`] runs.
#[derive(Copy, Clone, Debug)]
pub struct RecvConfig {
    pub limits: Limits,
    /// Bytes of incomplete messages held at once; a chunk beyond it fails its message.
    pub max_buffered_bytes: u64,
    /// Once no connection is open, incomplete messages fail after this long.
    pub idle_timeout: Duration,
}

impl Default for RecvConfig {
    fn default() -> RecvConfig {
        RecvConfig { limits: Limits::default(), max_buffered_bytes: 1 << 30, idle_timeout: Duration::from_secs(2) }
    }
}

/// What the receiver hands the application, in completion order.
#[derive(Clone, Debug, PartialEq)]
pub enum Delivery {
    Message {
        id: u64,
        data: Vec<u8>,
        completed_at: SystemTime,
    },
    /// A message that will not be delivered (or bytes that belong to none), and why.
    Error {
        id: Option<u64>,
        error: String,
    },
}

#[derive(Default)]
struct Partial {
    total: u64,
    got: u64,
    chunks: BTreeMap<u64, Vec<u8>>,
}

enum Fate {
    Delivered,
    Failed,
}

#[derive(Default)]
struct Reassembly {
    partial: HashMap<u64, Partial>,
    over: HashMap<u64, Fate>,
    buffered: u64,
    open: usize,
}

struct Shared {
    cfg: RecvConfig,
    state: Mutex<Reassembly>,
    out: mpsc::UnboundedSender<Delivery>,
}

impl Shared {
    fn error(&self, id: Option<u64>, error: String) {
        let _ = self.out.send(Delivery::Error { id, error });
    }

    /// Message `id` fails: its bytes are dropped and later chunks of it ignored.
    fn fail(&self, st: &mut Reassembly, id: u64, error: String) {
        if let Some(p) = st.partial.remove(&id) {
            st.buffered -= p.got;
        }
        if st.over.insert(id, Fate::Failed).is_none() {
            self.error(Some(id), error);
        }
    }

    /// Files a chunk; returns true when it completed its message (delivered).
    fn chunk(&self, f: frame::Frame) -> bool {
        let mut st = self.state.lock().expect("receiver state");
        let id = f.message;
        match st.over.get(&id) {
            Some(Fate::Failed) => return false,
            Some(Fate::Delivered) => {
                self.error(
                    Some(id),
                    format!("message {id}: {} B more at offset {} after it was delivered", f.chunk.len(), f.offset),
                );
                return false;
            }
            None => {}
        }
        let len = f.chunk.len() as u64;
        if st.buffered + len > self.cfg.max_buffered_bytes {
            let held = st.buffered;
            self.fail(
                &mut st,
                id,
                format!(
                    "message {id}: {held} B of incomplete messages held, the limit is {} B",
                    self.cfg.max_buffered_bytes
                ),
            );
            return false;
        }
        let p = st.partial.entry(id).or_insert_with(|| Partial { total: f.total, ..Default::default() });
        if p.total != f.total {
            let was = p.total;
            self.fail(&mut st, id, format!("message {id}: a chunk says {} B in all, an earlier one {was} B", f.total));
            return false;
        }
        // Overlap with the neighbouring chunks (a resent or forged range).
        let before = p.chunks.range(..=f.offset).next_back().map(|(o, c)| o + c.len() as u64 > f.offset);
        let after = p.chunks.range(f.offset..).next().map(|(o, _)| *o < f.offset + len.max(1));
        if before == Some(true) || after == Some(true) {
            self.fail(
                &mut st,
                id,
                format!("message {id}: the chunk at offset {} overlaps one already received", f.offset),
            );
            return false;
        }
        p.got += len;
        let done = p.got == p.total;
        p.chunks.insert(f.offset, f.chunk);
        st.buffered += len;
        if !done {
            return false;
        }
        let p = st.partial.remove(&id).expect("partial");
        st.buffered -= p.got;
        st.over.insert(id, Fate::Delivered);
        // Every byte is here: the size is now known, not merely declared.
        let mut data = Vec::with_capacity(p.total as usize);
        for (_, c) in p.chunks {
            data.extend_from_slice(&c);
        }
        let _ = self.out.send(Delivery::Message { id, data, completed_at: SystemTime::now() });
        true
    }

    /// The last connection closed long enough ago: incomplete messages fail.
    fn expire(&self) {
        let mut st = self.state.lock().expect("receiver state");
        if st.open > 0 {
            return;
        }
        let ids: Vec<u64> = st.partial.keys().copied().collect();
        for id in ids {
            let (got, total) = (st.partial[&id].got, st.partial[&id].total);
            self.fail(
                &mut st,
                id,
                format!("message {id}: incomplete ({got} of {total} B) when the last connection closed"),
            );
        }
    }
}

/// Accepts connections and delivers messages.
pub struct Receiver {
    addr: SocketAddr,
    rx: mpsc::UnboundedReceiver<Delivery>,
    task: tokio::task::JoinHandle<()>,
}

impl Receiver {
    /// Listens on `addr` (port 0: any free port; see [`Receiver::local_addr`]).
    pub async fn bind(addr: SocketAddr, cfg: RecvConfig) -> std::io::Result<Receiver> {
        let listener = TcpListener::bind(addr).await?;
        let addr = listener.local_addr()?;
        let (tx, rx) = mpsc::unbounded_channel();
        let shared = Arc::new(Shared { cfg, state: Mutex::new(Reassembly::default()), out: tx });
        let task = tokio::spawn(accept_loop(listener, shared));
        Ok(Receiver { addr, rx, task })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The next delivery; None once the receiver has stopped.
    pub async fn next(&mut self) -> Option<Delivery> {
        self.rx.recv().await
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    loop {
        let idle = {
            let st = shared.state.lock().expect("receiver state");
            st.open == 0 && !st.partial.is_empty()
        };
        tokio::select! {
            r = listener.accept() => match r {
                Ok((stream, peer)) => {
                    shared.state.lock().expect("receiver state").open += 1;
                    let shared = shared.clone();
                    tokio::spawn(async move {
                        serve(stream, peer, &shared).await;
                        shared.state.lock().expect("receiver state").open -= 1;
                    });
                }
                Err(e) => shared.error(None, format!("accepting a connection: {e}")),
            },
            _ = tokio::time::sleep(shared.cfg.idle_timeout), if idle => shared.expire(),
            // Re-check the idle condition now and then (a connection may have closed).
            _ = tokio::time::sleep(Duration::from_millis(50)), if !idle => {}
        }
    }
}

/// One connection: frames in, completion notices out.
async fn serve(stream: TcpStream, peer: SocketAddr, shared: &Shared) {
    let limits = shared.cfg.limits;
    let (mut rd, mut wr) = stream.into_split();
    // Never more than one frame's worth, whatever a header claims.
    let cap = HEADER_BYTES + limits.max_chunk as usize;
    let mut buf: Vec<u8> = Vec::with_capacity(cap.min(64 * 1024));
    let mut tmp = vec![0u8; 64 * 1024];
    loop {
        let n = match rd.read(&mut tmp).await {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) => {
                report_cut(shared, &buf, &limits, peer, &format!("connection error: {e}"));
                return;
            }
        };
        buf.extend_from_slice(&tmp[..n]);
        let mut notices = Vec::new();
        loop {
            match frame::decode(&buf, &limits) {
                Ok(Some((f, used))) => {
                    buf.drain(..used);
                    let id = f.message;
                    if shared.chunk(f) {
                        notices.extend_from_slice(&id.to_be_bytes());
                    }
                }
                Ok(None) => break,
                Err(e) => {
                    bad_frame(shared, e, peer);
                    let _ = wr.write_all(&notices).await;
                    return;
                }
            }
        }
        if !notices.is_empty() {
            let _ = wr.write_all(&notices).await;
        }
    }
    if !buf.is_empty() {
        report_cut(shared, &buf, &limits, peer, "the connection ended");
    }
    let _ = wr.shutdown().await;
}

fn bad_frame(shared: &Shared, e: FrameError, peer: SocketAddr) {
    let msg = format!("from {peer}: {e}; connection closed");
    match e.message() {
        Some(id) => {
            let mut st = shared.state.lock().expect("receiver state");
            shared.fail(&mut st, id, msg);
        }
        None => shared.error(None, msg),
    }
}

/// The connection ended with `buf` holding part of a frame.
fn report_cut(shared: &Shared, buf: &[u8], limits: &Limits, peer: SocketAddr, how: &str) {
    if buf.is_empty() {
        return;
    }
    let header: Option<&[u8; HEADER_BYTES]> = buf.get(..HEADER_BYTES).and_then(|h| h.try_into().ok());
    match header.map(|h| frame::parse_header(h, limits)) {
        Some(Ok(h)) => {
            let mut st = shared.state.lock().expect("receiver state");
            let got = buf.len() - HEADER_BYTES;
            shared.fail(
                &mut st,
                h.message,
                format!("message {}: {how} inside a chunk ({got} of {} B) from {peer}", h.message, h.len),
            );
        }
        Some(Err(e)) => bad_frame(shared, e, peer),
        None => {
            shared.error(None, format!("{how} inside a frame header ({} of {HEADER_BYTES} B) from {peer}", buf.len()))
        }
    }
}
