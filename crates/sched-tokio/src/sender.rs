//! The sending side: a session announcing every message, one connection per message, the
//! policy filling each chunk.

use crate::frame::{self, HEADER_BYTES};
use crate::session::{self, Challenge, Key, SessionId, CHALLENGE_BYTES, REPLY_BYTES};
use crate::NOTICE_BYTES;
use fctlab_sched::{Candidate, Policy, VirtualQueue};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// A chunk handed to a connection: (message, offset, bytes handed out, message size, the
/// message's data).
type Chunk = (u32, u64, u64, u64, Arc<Vec<u8>>);

/// How a [`Sender`] runs.
#[derive(Copy, Clone, Debug)]
pub struct SendConfig {
    pub policy: Policy,
    /// Payload bytes per chunk (one frame, one `write`): 16 KiB by default.
    pub chunk_bytes: u32,
    /// The sockets' send buffer (`SO_SNDBUF`), bytes; None: the kernel's default (autotuned).
    pub send_buffer_bytes: Option<u32>,
    /// Longest wait for a connection or the session's reply, for one chunk's write, and for
    /// the completion notices once everything is written: 30 s by default.
    pub timeout: Duration,
    /// How often the session's control connection says it is alive (1 s; the receiver's
    /// `read_timeout` must be longer).
    pub heartbeat: Duration,
    /// The key shared with the receiver: each open and join carries its MAC. None: the
    /// receiver must not require one.
    pub key: Option<Key>,
}

impl SendConfig {
    pub fn new(policy: Policy) -> SendConfig {
        SendConfig {
            policy,
            chunk_bytes: 16 * 1024,
            send_buffer_bytes: None,
            timeout: Duration::from_secs(30),
            heartbeat: Duration::from_secs(1),
            key: None,
        }
    }
}

/// What became of one message.
#[derive(Clone, Debug, PartialEq)]
pub struct SendReport {
    /// Its index in the session's table.
    pub message: u32,
    pub size: u64,
    pub class: u32,
    /// Since the sender was opened; None when it was never sent.
    pub started: Option<Duration>,
    /// From `send` to the receiver's completion notice; None when it did not complete.
    pub transfer: Option<Duration>,
    pub error: Option<String>,
}

impl SendReport {
    /// Reports for a table none of whose messages could be sent, each with `error`.
    pub fn all_failed(table: &[(u64, u32)], error: &str) -> Vec<SendReport> {
        (0..table.len())
            .map(|k| SendReport {
                message: k as u32,
                size: table[k].0,
                class: table[k].1,
                started: None,
                transfer: None,
                error: Some(error.to_string()),
            })
            .collect()
    }
}

struct Message {
    /// Its bytes until every one has been handed to a connection (then released).
    data: Arc<Vec<u8>>,
    size: u64,
    class: u32,
    start: Option<Instant>,
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
}

impl State {
    fn fail(&mut self, id: u32, why: &str) {
        if let Some(m) = self.messages.get_mut(id as usize) {
            if m.done.is_none() && m.error.is_none() {
                m.error = Some(why.to_string());
            }
        }
    }
    /// The next chunk for connection `owner`, at most `room` bytes.
    fn next_chunk(&mut self, owner: u32, room: u64) -> Option<Chunk> {
        if self.policy.uses_tcp_twins() {
            // tcp's twin of each pending message: the bytes its own connection has left (the
            // kernel's window is not read, so no rate: FAIR ranks by bytes left).
            for c in self.pending.iter_mut() {
                let m = &self.messages[c.id as usize];
                c.tcp = VirtualQueue {
                    remaining: m.size.saturating_sub(m.own_written),
                    finished_at_ns: m.own_finished_at.map(|t| t.duration_since(self.epoch).as_nanos() as u64),
                    rate_bytes_per_s: 0.0,
                };
            }
        }
        let now_ns = self.epoch.elapsed().as_nanos() as u64;
        let i = self.policy.choose(owner as u64, &self.pending, now_ns)?;
        let c = &mut self.pending[i];
        let n = room.min(c.remaining);
        let offset = c.attained;
        c.remaining -= n;
        c.attained += n;
        let id = c.id as u32;
        let data = self.messages[id as usize].data.clone();
        if c.remaining == 0 {
            self.pending.remove(i);
            // The chunks in flight hold the bytes they need: a sender keeps no more than the
            // messages not yet handed out.
            self.messages[id as usize].data = Arc::new(Vec::new());
        }
        Some((id, offset, n, self.messages[id as usize].size, data))
    }
}

/// Sends one session's messages to one receiver over a pool of TCP connections (one per
/// message).
pub struct Sender {
    addr: SocketAddr,
    cfg: SendConfig,
    session: SessionId,
    state: Arc<Mutex<State>>,
    tasks: Vec<JoinHandle<()>>,
    control: Option<(oneshot::Sender<()>, JoinHandle<()>)>,
}

async fn open_socket(addr: SocketAddr, send_buffer: Option<u32>) -> std::io::Result<TcpStream> {
    let sock = if addr.is_ipv4() { TcpSocket::new_v4()? } else { TcpSocket::new_v6()? };
    if let Some(b) = send_buffer {
        sock.set_send_buffer_size(b)?;
    }
    let s = sock.connect(addr).await?;
    s.set_nodelay(true)?;
    Ok(s)
}

async fn connect(addr: SocketAddr, cfg: &SendConfig, send_buffer: Option<u32>) -> Result<TcpStream, String> {
    match tokio::time::timeout(cfg.timeout, open_socket(addr, send_buffer)).await {
        Ok(Ok(s)) => Ok(s),
        Ok(Err(e)) => Err(format!("connecting to {addr}: {e}")),
        Err(_) => Err(format!("connecting to {addr}: no answer within {:?}", cfg.timeout)),
    }
}

/// The receiver's challenge, the first bytes of every connection: Err when it is not one,
/// or asks for a key this sender does not have.
async fn challenge(s: &mut TcpStream, cfg: &SendConfig) -> Result<Challenge, String> {
    let mut b = [0u8; CHALLENGE_BYTES];
    match tokio::time::timeout(cfg.timeout, s.read_exact(&mut b)).await {
        Err(_) => return Err(format!("no challenge from the receiver within {:?}", cfg.timeout)),
        Ok(Err(e)) => return Err(format!("no challenge from the receiver ({e})")),
        Ok(Ok(_)) => {}
    }
    let c = Challenge::parse(&b).map_err(|e| e.to_string())?;
    if c.key_required && cfg.key.is_none() {
        return Err("the receiver requires a key: give the sender its key (--key-file PATH or FCTLAB_SCHED_KEY)".into());
    }
    Ok(c)
}

/// Opens the session on the control connection: the table out, the receiver's reply in.
async fn handshake(addr: SocketAddr, cfg: &SendConfig, session: SessionId, sizes: &[u64]) -> Result<TcpStream, String> {
    let mut s = connect(addr, cfg, None).await?;
    let exchange = async {
        let c = challenge(&mut s, cfg).await.map_err(|e| format!("opening a session: {e}"))?;
        let open = session::encode_open(session, sizes, cfg.key.as_ref(), &c.nonce);
        s.write_all(&open).await.map_err(|e| format!("opening a session: {e}"))?;
        let mut r = [0u8; REPLY_BYTES];
        s.read_exact(&mut r).await.map_err(|e| format!("opening a session: no reply from the receiver ({e})"))?;
        match session::parse_reply(&r).map_err(|e| e.to_string())? {
            None => Ok(()),
            Some(len) => {
                let mut reason = vec![0u8; len];
                let _ = s.read_exact(&mut reason).await;
                Err(format!("the receiver refused the session: {}", String::from_utf8_lossy(&reason)))
            }
        }
    };
    match tokio::time::timeout(cfg.timeout, exchange).await {
        Ok(Ok(())) => Ok(s),
        Ok(Err(e)) => Err(format!("{addr}: {e}")),
        Err(_) => Err(format!("{addr}: opening a session: no reply within {:?}", cfg.timeout)),
    }
}

/// Says the session is alive every `every` until told to close it.
async fn keep_alive(mut s: TcpStream, every: Duration, mut close: oneshot::Receiver<()>) {
    loop {
        tokio::select! {
            _ = &mut close => break,
            _ = tokio::time::sleep(every) => {
                if s.write_all(&[session::HEARTBEAT]).await.is_err() {
                    return;
                }
            }
        }
    }
    let _ = s.write_all(&[session::CLOSE]).await;
    let _ = s.shutdown().await;
}

impl Sender {
    /// Opens a session with the receiver at `addr` announcing `table`, each message's (size,
    /// class): its messages are then sent by index with [`Sender::send`]. Err: the receiver
    /// could not be reached or refused the session (the reason given).
    pub async fn open(addr: SocketAddr, cfg: SendConfig, table: &[(u64, u32)]) -> Result<Sender, String> {
        let session = SessionId::random();
        let sizes: Vec<u64> = table.iter().map(|m| m.0).collect();
        let control = handshake(addr, &cfg, session, &sizes).await?;
        let (tx, rx) = oneshot::channel();
        let keeper = tokio::spawn(keep_alive(control, cfg.heartbeat, rx));
        let messages = table
            .iter()
            .map(|&(size, class)| Message {
                data: Arc::new(Vec::new()),
                size,
                class,
                start: None,
                done: None,
                error: None,
                own_written: 0,
                own_finished_at: None,
            })
            .collect();
        let state = State { policy: cfg.policy, epoch: Instant::now(), messages, pending: Vec::new() };
        Ok(Sender {
            addr,
            cfg,
            session,
            state: Arc::new(Mutex::new(state)),
            tasks: Vec::new(),
            control: Some((tx, keeper)),
        })
    }

    pub fn session(&self) -> SessionId {
        self.session
    }

    /// Sends message `id` of the table: opens its connection and returns at once (call
    /// within a tokio runtime). Err, and nothing sent, when `id` is not in the table, was
    /// sent before, or `data` is not the announced size.
    pub fn send(&mut self, id: u32, data: Vec<u8>) -> Result<(), String> {
        let size = data.len() as u64;
        {
            let mut st = self.state.lock().expect("sender state");
            let n = st.messages.len();
            let Some(m) = st.messages.get_mut(id as usize) else {
                return Err(format!("message {id}: the session announced {n} messages"));
            };
            if m.start.is_some() {
                return Err(format!("message {id}: sent already"));
            }
            if size != m.size {
                return Err(format!("message {id}: {size} B, the session announced {} B", m.size));
            }
            m.start = Some(Instant::now());
            m.data = Arc::new(data);
            let class = m.class;
            if size > 0 {
                st.pending.push(Candidate {
                    id: id as u64,
                    remaining: size,
                    attained: 0,
                    class,
                    tcp: VirtualQueue::default(),
                });
            }
        }
        let (addr, cfg, state, sid) = (self.addr, self.cfg, self.state.clone(), self.session);
        self.tasks.push(tokio::spawn(async move { connection(id, size, addr, cfg, sid, state).await }));
        Ok(())
    }

    /// Waits for every connection to finish, closes the session, and reports every message
    /// of the table, in order.
    pub async fn finish(mut self) -> Vec<SendReport> {
        for t in std::mem::take(&mut self.tasks) {
            let _ = t.await;
        }
        if let Some((close, keeper)) = self.control.take() {
            let _ = close.send(());
            let _ = keeper.await;
        }
        let st = self.state.lock().expect("sender state");
        let pending: std::collections::HashMap<u64, u64> = st.pending.iter().map(|c| (c.id, c.remaining)).collect();
        st.messages
            .iter()
            .enumerate()
            .map(|(k, m)| {
                let error = match (&m.start, &m.done, &m.error) {
                    (None, _, _) => Some("never sent".to_string()),
                    (_, Some(_), _) => None,
                    (_, None, Some(e)) => Some(e.clone()),
                    (_, None, None) => Some(match pending.get(&(k as u64)) {
                        Some(left) => {
                            format!("{left} of {} B never handed to a connection (a connection failed)", m.size)
                        }
                        None => "no completion notice from the receiver".to_string(),
                    }),
                };
                SendReport {
                    message: k as u32,
                    size: m.size,
                    class: m.class,
                    started: m.start.map(|s| s.duration_since(st.epoch)),
                    transfer: m.done.zip(m.start).map(|(d, s)| d.duration_since(s)),
                    error,
                }
            })
            .collect()
    }
}

/// Message `owner`'s connection: joins the session, carries `vq` bytes of whichever messages
/// the policy chooses, then closes once the receiver has answered.
async fn connection(owner: u32, vq: u64, addr: SocketAddr, cfg: SendConfig, sid: SessionId, state: Arc<Mutex<State>>) {
    let lock = || state.lock().expect("sender state");
    let mut stream = match connect(addr, &cfg, cfg.send_buffer_bytes).await {
        Ok(s) => s,
        Err(e) => return lock().fail(owner, &e),
    };
    let nonce = match challenge(&mut stream, &cfg).await {
        Ok(c) => c.nonce,
        Err(e) => return lock().fail(owner, &format!("{addr}: joining the session: {e}")),
    };
    let (mut rd, mut wr) = stream.into_split();
    let notices = {
        let state = state.clone();
        tokio::spawn(async move {
            let mut b = [0u8; NOTICE_BYTES];
            while rd.read_exact(&mut b).await.is_ok() {
                let id = u64::from_be_bytes(b);
                let mut st = state.lock().expect("sender state");
                if let Some(m) = usize::try_from(id).ok().and_then(|k| st.messages.get_mut(k)) {
                    if m.done.is_none() && m.error.is_none() {
                        m.done = Some(Instant::now());
                    }
                }
            }
        })
    };
    let mut carried: Vec<u32> = Vec::new();
    let mut left = vq;
    let mut buf = Vec::with_capacity(HEADER_BYTES + cfg.chunk_bytes as usize);
    let mut failed = write(&mut wr, &session::encode_join(sid, cfg.key.as_ref(), &nonce), cfg.timeout).await.err();
    if vq == 0 && failed.is_none() {
        // An empty message travels as one empty frame on its own connection.
        frame::encode(owner as u64, 0, 0, &[], &mut buf);
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
        frame::encode(id as u64, offset, total, &data[offset as usize..(offset + n) as usize], &mut buf);
        if !carried.contains(&id) {
            carried.push(id);
        }
        if let Err(e) = write(&mut wr, &buf, cfg.timeout).await {
            failed = Some(e);
            break;
        }
        left -= n;
        let mut st = lock();
        let m = &mut st.messages[owner as usize];
        m.own_written += n;
        if left == 0 {
            m.own_finished_at = Some(Instant::now());
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
