//! The sending side: messages in, one connection per message, the policy fills each chunk.

use crate::frame::{self, HEADER_BYTES};
use crate::NOTICE_BYTES;
use fctlab_sched::{Candidate, Policy, VirtualQueue};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};
use tokio::task::JoinHandle;

/// A chunk handed to a connection: (message, offset, bytes handed out, message size, the
/// message's data).
type Chunk = (u64, u64, u64, u64, Arc<Vec<u8>>);

/// How a [`Sender`] runs.
#[derive(Copy, Clone, Debug)]
pub struct SendConfig {
    pub policy: Policy,
    /// Payload bytes per chunk (one frame, one `write`): 16 KiB by default.
    pub chunk_bytes: u32,
    /// The sockets' send buffer (`SO_SNDBUF`), bytes; None: the kernel's default (autotuned).
    pub send_buffer_bytes: Option<u32>,
    /// Longest wait for a connection, for one chunk's write, and for the completion notices
    /// once everything is written: 30 s by default.
    pub timeout: Duration,
}

impl SendConfig {
    pub fn new(policy: Policy) -> SendConfig {
        SendConfig { policy, chunk_bytes: 16 * 1024, send_buffer_bytes: None, timeout: Duration::from_secs(30) }
    }
}

/// What became of one message.
#[derive(Clone, Debug, PartialEq)]
pub struct SendReport {
    pub message: u64,
    pub size: u64,
    pub class: u32,
    /// Since the sender was created.
    pub started: Duration,
    /// From `send` to the receiver's completion notice; None when it did not complete.
    pub transfer: Option<Duration>,
    pub error: Option<String>,
}

struct Message {
    /// Its bytes until every one has been handed to a connection (then released).
    data: Arc<Vec<u8>>,
    size: u64,
    class: u32,
    start: Instant,
    done: Option<Instant>,
    error: Option<String>,
    /// Bytes its own connection has written (of any message): tcp's progress on it.
    own_written: u64,
    own_finished_at: Option<Instant>,
}

struct State {
    policy: Policy,
    epoch: Instant,
    messages: Vec<Message>,
    /// Messages with bytes not yet handed to a connection.
    pending: Vec<Candidate>,
    index: HashMap<u64, usize>,
    base: u64,
}

impl State {
    fn slot(&self, id: u64) -> Option<usize> {
        self.index.get(&id).copied()
    }
    fn fail(&mut self, id: u64, why: &str) {
        if let Some(k) = self.slot(id) {
            let m = &mut self.messages[k];
            if m.done.is_none() && m.error.is_none() {
                m.error = Some(why.to_string());
            }
        }
    }
    /// The next chunk for connection `owner`, at most `room` bytes: (message, offset, bytes
    /// handed out, message size, the message's data).
    fn next_chunk(&mut self, owner: u64, room: u64) -> Option<Chunk> {
        if self.policy.uses_tcp_twins() {
            // tcp's twin of each pending message: the bytes its own connection has left (the
            // kernel's window is not read, so no rate: FAIR ranks by bytes left).
            for c in self.pending.iter_mut() {
                let m = &self.messages[self.index[&c.id]];
                let size = m.size;
                c.tcp = VirtualQueue {
                    remaining: size.saturating_sub(m.own_written),
                    finished_at_ns: m.own_finished_at.map(|t| t.duration_since(self.epoch).as_nanos() as u64),
                    rate_bytes_per_s: 0.0,
                };
            }
        }
        let now_ns = self.epoch.elapsed().as_nanos() as u64;
        let i = self.policy.choose(owner, &self.pending, now_ns)?;
        let c = &mut self.pending[i];
        let n = room.min(c.remaining);
        let offset = c.attained;
        c.remaining -= n;
        c.attained += n;
        let id = c.id;
        let k = self.index[&id];
        let data = self.messages[k].data.clone();
        if c.remaining == 0 {
            self.pending.remove(i);
            // The chunks in flight hold the bytes they need: a sender keeps no more than the
            // messages not yet handed out.
            self.messages[k].data = Arc::new(Vec::new());
        }
        Some((id, offset, n, self.messages[k].size, data))
    }
}

/// Sends messages to one receiver over a pool of TCP connections (one per message).
pub struct Sender {
    addr: SocketAddr,
    cfg: SendConfig,
    state: Arc<Mutex<State>>,
    tasks: Vec<JoinHandle<()>>,
}

impl Sender {
    /// A sender to the receiver at `addr`. Message ids start at `base` (distinct senders to
    /// one receiver use distinct bases).
    pub fn new(addr: SocketAddr, cfg: SendConfig, base: u64) -> Sender {
        let state = State {
            policy: cfg.policy,
            epoch: Instant::now(),
            messages: Vec::new(),
            pending: Vec::new(),
            index: HashMap::new(),
            base,
        };
        Sender { addr, cfg, state: Arc::new(Mutex::new(state)), tasks: Vec::new() }
    }

    /// Sends `data` as one message of class `class` (for `priority`): opens its connection
    /// and returns its id at once (call within a tokio runtime).
    pub fn send(&mut self, data: Vec<u8>, class: u32) -> u64 {
        let size = data.len() as u64;
        let id = {
            let mut st = self.state.lock().expect("sender state");
            let id = st.base + st.messages.len() as u64;
            let k = st.messages.len();
            st.messages.push(Message {
                data: Arc::new(data),
                size,
                class,
                start: Instant::now(),
                done: None,
                error: None,
                own_written: 0,
                own_finished_at: None,
            });
            st.index.insert(id, k);
            if size > 0 {
                st.pending.push(Candidate { id, remaining: size, attained: 0, class, tcp: VirtualQueue::default() });
            }
            id
        };
        let (addr, cfg, state) = (self.addr, self.cfg, self.state.clone());
        self.tasks.push(tokio::spawn(async move { connection(id, size, addr, cfg, state).await }));
        id
    }

    /// Waits for every connection to finish and reports every message, in send order.
    pub async fn finish(self) -> Vec<SendReport> {
        for t in self.tasks {
            let _ = t.await;
        }
        let st = self.state.lock().expect("sender state");
        let pending: HashMap<u64, u64> = st.pending.iter().map(|c| (c.id, c.remaining)).collect();
        st.messages
            .iter()
            .enumerate()
            .map(|(k, m)| {
                let id = st.base + k as u64;
                let error = match (&m.done, &m.error) {
                    (Some(_), _) => None,
                    (None, Some(e)) => Some(e.clone()),
                    (None, None) => Some(match pending.get(&id) {
                        Some(left) => {
                            format!("{left} of {} B never handed to a connection (a connection failed)", m.size)
                        }
                        None => "no completion notice from the receiver".to_string(),
                    }),
                };
                SendReport {
                    message: id,
                    size: m.size,
                    class: m.class,
                    started: m.start.duration_since(st.epoch),
                    transfer: m.done.map(|d| d.duration_since(m.start)),
                    error,
                }
            })
            .collect()
    }
}

async fn open(addr: SocketAddr, send_buffer: Option<u32>) -> std::io::Result<TcpStream> {
    let sock = if addr.is_ipv4() { TcpSocket::new_v4()? } else { TcpSocket::new_v6()? };
    if let Some(b) = send_buffer {
        sock.set_send_buffer_size(b)?;
    }
    let s = sock.connect(addr).await?;
    s.set_nodelay(true)?;
    Ok(s)
}

/// Message `owner`'s connection: carries `vq` bytes of whichever messages the policy chooses,
/// then closes once the receiver has answered.
async fn connection(owner: u64, vq: u64, addr: SocketAddr, cfg: SendConfig, state: Arc<Mutex<State>>) {
    let lock = || state.lock().expect("sender state");
    let stream = match tokio::time::timeout(cfg.timeout, open(addr, cfg.send_buffer_bytes)).await {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => return lock().fail(owner, &format!("connecting to {addr}: {e}")),
        Err(_) => return lock().fail(owner, &format!("connecting to {addr}: no answer within {:?}", cfg.timeout)),
    };
    let (mut rd, mut wr) = stream.into_split();
    let notices = {
        let state = state.clone();
        tokio::spawn(async move {
            let mut b = [0u8; NOTICE_BYTES];
            while rd.read_exact(&mut b).await.is_ok() {
                let id = u64::from_be_bytes(b);
                let mut st = state.lock().expect("sender state");
                if let Some(k) = st.slot(id) {
                    let m = &mut st.messages[k];
                    if m.done.is_none() && m.error.is_none() {
                        m.done = Some(Instant::now());
                    }
                }
            }
        })
    };
    let mut carried: Vec<u64> = Vec::new();
    let mut left = vq;
    let mut buf = Vec::with_capacity(HEADER_BYTES + cfg.chunk_bytes as usize);
    let mut failed = None;
    if vq == 0 {
        // An empty message travels as one empty frame on its own connection.
        frame::encode(owner, 0, 0, &[], &mut buf);
        carried.push(owner);
        if let Err(e) = write(&mut wr, &buf, cfg.timeout).await {
            failed = Some(e);
        }
    }
    while left > 0 && failed.is_none() {
        let Some((id, offset, n, total, data)) = lock().next_chunk(owner, left.min(cfg.chunk_bytes as u64)) else {
            break;
        };
        buf.clear();
        frame::encode(id, offset, total, &data[offset as usize..(offset + n) as usize], &mut buf);
        if !carried.contains(&id) {
            carried.push(id);
        }
        if let Err(e) = write(&mut wr, &buf, cfg.timeout).await {
            failed = Some(e);
            break;
        }
        left -= n;
        let mut st = lock();
        if let Some(k) = st.slot(owner) {
            let m = &mut st.messages[k];
            m.own_written += n;
            if left == 0 {
                m.own_finished_at = Some(Instant::now());
            }
        }
    }
    if let Some(e) = &failed {
        let mut st = lock();
        for id in &carried {
            st.fail(*id, &format!("connection of message {owner}: {e}"));
        }
        return;
    }
    let _ = wr.shutdown().await;
    if tokio::time::timeout(cfg.timeout, notices).await.is_err() {
        let mut st = lock();
        for id in &carried {
            st.fail(*id, &format!("connection of message {owner}: no completion notice within {:?}", cfg.timeout));
        }
    }
}

async fn write(wr: &mut tokio::net::tcp::OwnedWriteHalf, buf: &[u8], timeout: Duration) -> Result<(), String> {
    match tokio::time::timeout(timeout, wr.write_all(buf)).await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(format!("write failed: {e}")),
        Err(_) => Err(format!("the receiver took nothing for {timeout:?} (it stopped reading)")),
    }
}
