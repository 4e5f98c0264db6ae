//! The receiving side: sessions opened by senders, frames from the connections that joined
//! them, messages delivered whole.

use crate::frame::{self, FrameError, Limits, HEADER_BYTES};
use crate::session::{self, Preamble, SessionId, PREAMBLE_BYTES};
use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, Notify};
use tokio::task::AbortHandle;
use tokio::time::Instant;

/// How a [`Receiver`] runs.
#[derive(Copy, Clone, Debug)]
pub struct RecvConfig {
    pub limits: Limits,
    /// Bytes of incomplete messages one session may hold, counted whole: a message's first
    /// chunk reserves its full size. A first chunk beyond it waits (its connection stops
    /// reading: back-pressure) until a message completes or `read_timeout` passes, when its
    /// message fails; a message larger than this fails at once. An admitted message's later
    /// chunks never wait, so the messages admitted always complete.
    pub max_buffered_bytes: u64,
    /// Longest silence: for a connection's preamble, inside a frame, between a session's
    /// heartbeats, and for room under `max_buffered_bytes`.
    pub read_timeout: Duration,
    /// Connections held at once; beyond it (or when the process runs out of file descriptors)
    /// the oldest connection that has not yet joined a session is closed to make room.
    pub max_connections: usize,
    /// Sessions open at once.
    pub max_sessions: usize,
    /// Messages one session may announce.
    pub max_messages: u32,
}

impl Default for RecvConfig {
    fn default() -> RecvConfig {
        RecvConfig {
            limits: Limits::default(),
            max_buffered_bytes: 1 << 30,
            read_timeout: Duration::from_secs(10),
            max_connections: 1024,
            max_sessions: 64,
            max_messages: 1_000_000,
        }
    }
}

/// What the receiver hands the application, in the order it happened.
#[derive(Clone, Debug, PartialEq)]
pub enum Delivery {
    /// A sender opened a session announcing `messages` messages.
    Opened { session: SessionId, peer: SocketAddr, messages: u32 },
    /// Message `id` of `session`, whole.
    Message { session: SessionId, id: u32, data: Vec<u8>, completed_at: SystemTime },
    /// Announced message `id` of `session` will not be delivered, and why.
    Failed { session: SessionId, id: u32, error: String },
    /// The session ended (`how`); every announced message was delivered or failed before this.
    Closed { session: SessionId, delivered: u32, failed: u32, how: String },
    /// Bytes that belong to no open session's announced message, or a connection that never
    /// joined one: refused and counted, never delivered. Only the first
    /// [`Receiver::REFUSALS_LOGGED`] are handed out; [`Counters::refused`] counts them all.
    Refused { peer: Option<SocketAddr>, error: String },
}

/// Running totals (see [`Receiver::counters`]).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    pub sessions_opened: u64,
    pub sessions_refused: u64,
    /// Frames and connections refused (see [`Delivery::Refused`]).
    pub refused: u64,
    /// Connections closed to make room before they joined a session.
    pub evicted: u64,
    /// Failed accepts (for want of file descriptors, mostly).
    pub accept_errors: u64,
}

const WAITING: u8 = 0;
const DELIVERED: u8 = 1;
const FAILED: u8 = 2;

#[derive(Default)]
struct Partial {
    got: u64,
    chunks: BTreeMap<u64, Vec<u8>>,
}

struct Session {
    sizes: Vec<u64>,
    fate: Vec<u8>,
    partial: HashMap<u32, Partial>,
    /// Room reserved by the incomplete messages (each its whole size).
    buffered: u64,
    delivered: u32,
    failed: u32,
}

#[derive(Default)]
struct State {
    sessions: HashMap<SessionId, Session>,
    connections: usize,
    next_connection: u64,
    /// Connections that have not joined a session yet, oldest first.
    unjoined: BTreeMap<u64, AbortHandle>,
    refusals_logged: usize,
}

#[derive(Default)]
struct Tally {
    sessions_opened: AtomicU64,
    sessions_refused: AtomicU64,
    refused: AtomicU64,
    evicted: AtomicU64,
    accept_errors: AtomicU64,
}

struct Shared {
    cfg: RecvConfig,
    state: Mutex<State>,
    out: mpsc::UnboundedSender<Delivery>,
    /// Signalled when a session's buffered bytes fall.
    room: Notify,
    /// Signalled when a connection closes.
    closed: Notify,
    tally: Tally,
}

/// What became of a chunk.
enum Filed {
    Stored,
    /// It completed its message, which was delivered.
    Completed,
    /// The session holds `max_buffered_bytes`: try again once there is room.
    NoRoom(frame::Frame),
    /// It names no announced message or disagrees with the table: refuse it, end the connection.
    Refused(String),
    /// Its message had already failed, or its session is gone.
    Ignored,
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn refuse(&self, st: &mut State, peer: Option<SocketAddr>, error: String) {
        self.tally.refused.fetch_add(1, Ordering::Relaxed);
        if st.refusals_logged < Receiver::REFUSALS_LOGGED {
            st.refusals_logged += 1;
            let _ = self.out.send(Delivery::Refused { peer, error });
        }
    }

    /// Message `id` of `sid` fails: its bytes are dropped and later chunks of it ignored.
    fn fail(&self, st: &mut State, sid: SessionId, id: u32, error: String) {
        let Some(s) = st.sessions.get_mut(&sid) else { return };
        let Some(fate) = s.fate.get_mut(id as usize) else { return };
        if *fate != WAITING {
            return;
        }
        *fate = FAILED;
        s.failed += 1;
        if s.partial.remove(&id).is_some() {
            s.buffered -= s.sizes[id as usize];
            self.room.notify_waiters();
        }
        let _ = self.out.send(Delivery::Failed { session: sid, id, error });
    }

    /// Files a chunk of session `sid` that came from `peer`.
    fn file(&self, sid: SessionId, f: frame::Frame) -> Filed {
        let cap = self.cfg.max_buffered_bytes;
        let mut st = self.lock();
        let Some(s) = st.sessions.get_mut(&sid) else { return Filed::Ignored };
        let n = s.sizes.len();
        let Some(id) = u32::try_from(f.message).ok().filter(|&i| (i as usize) < n) else {
            return Filed::Refused(format!(
                "message {}: session {sid} announced {n} messages (ids 0 to {})",
                f.message,
                n.saturating_sub(1) as i64
            ));
        };
        let size = s.sizes[id as usize];
        if f.total != size {
            return Filed::Refused(format!(
                "message {id}: a chunk says {} B in all, the session announced {size} B",
                f.total
            ));
        }
        match s.fate[id as usize] {
            FAILED => return Filed::Ignored,
            DELIVERED => {
                return Filed::Refused(format!(
                    "message {id}: {} B more at offset {} after it was delivered",
                    f.chunk.len(),
                    f.offset
                ))
            }
            _ => {}
        }
        let len = f.chunk.len() as u64;
        if size > cap {
            let e = format!("message {id}: {size} B, more than the {cap} B a session may hold of incomplete messages");
            self.fail(&mut st, sid, id, e);
            return Filed::Ignored;
        }
        // A message's first chunk reserves room for the whole message, so that an admitted
        // message can always complete: were room taken chunk by chunk, messages each holding
        // part of the budget could all wait for room that only their completion frees.
        if !s.partial.contains_key(&id) {
            if s.buffered + size > cap {
                return Filed::NoRoom(f);
            }
            s.buffered += size;
        }
        let p = s.partial.entry(id).or_default();
        // Overlap with the neighbouring chunks (a resent range).
        let before = p.chunks.range(..=f.offset).next_back().map(|(o, c)| o + c.len() as u64 > f.offset);
        let after = p.chunks.range(f.offset..).next().map(|(o, _)| *o < f.offset + len.max(1));
        if before == Some(true) || after == Some(true) {
            let e = format!("message {id}: the chunk at offset {} overlaps one already received", f.offset);
            self.fail(&mut st, sid, id, e);
            return Filed::Ignored;
        }
        p.got += len;
        let done = p.got == size;
        p.chunks.insert(f.offset, f.chunk);
        if !done {
            return Filed::Stored;
        }
        let p = s.partial.remove(&id).expect("partial");
        s.buffered -= size;
        s.fate[id as usize] = DELIVERED;
        s.delivered += 1;
        self.room.notify_waiters();
        // Every byte is here: the size is now known, not merely declared.
        let mut data = Vec::with_capacity(size as usize);
        for (_, c) in p.chunks {
            data.extend_from_slice(&c);
        }
        let _ = self.out.send(Delivery::Message { session: sid, id, data, completed_at: SystemTime::now() });
        Filed::Completed
    }

    /// Session `sid` ends: its messages not delivered fail, its state goes.
    fn close(&self, sid: SessionId, how: &str) {
        let mut st = self.lock();
        let Some(s) = st.sessions.get(&sid) else { return };
        let open: Vec<(u32, u64, u64)> = s
            .fate
            .iter()
            .enumerate()
            .filter(|(_, f)| **f == WAITING)
            .map(|(k, _)| (k as u32, s.partial.get(&(k as u32)).map_or(0, |p| p.got), s.sizes[k]))
            .collect();
        for (id, got, size) in open {
            self.fail(&mut st, sid, id, format!("message {id}: incomplete ({got} of {size} B) when {how}"));
        }
        let s = st.sessions.remove(&sid).expect("session");
        let _ =
            self.out.send(Delivery::Closed { session: sid, delivered: s.delivered, failed: s.failed, how: how.into() });
        self.room.notify_waiters();
    }
}

/// Decrements the connection count however a connection's task ends (also when aborted).
struct ConnectionGuard {
    shared: Arc<Shared>,
    id: u64,
}

impl Drop for ConnectionGuard {
    fn drop(&mut self) {
        let mut st = self.shared.lock();
        st.connections -= 1;
        st.unjoined.remove(&self.id);
        drop(st);
        self.shared.closed.notify_waiters();
    }
}

/// Accepts sessions and delivers their messages.
pub struct Receiver {
    addr: SocketAddr,
    rx: mpsc::UnboundedReceiver<Delivery>,
    shared: Arc<Shared>,
    task: tokio::task::JoinHandle<()>,
}

impl Receiver {
    /// Refusals handed out as [`Delivery::Refused`]; later ones are only counted.
    pub const REFUSALS_LOGGED: usize = 100;

    /// Listens on `addr` (port 0: any free port; see [`Receiver::local_addr`]).
    pub async fn bind(addr: SocketAddr, cfg: RecvConfig) -> std::io::Result<Receiver> {
        let listener = TcpListener::bind(addr).await?;
        let addr = listener.local_addr()?;
        let (tx, rx) = mpsc::unbounded_channel();
        let shared = Arc::new(Shared {
            cfg,
            state: Mutex::new(State::default()),
            out: tx,
            room: Notify::new(),
            closed: Notify::new(),
            tally: Tally::default(),
        });
        let task = tokio::spawn(accept_loop(listener, shared.clone()));
        Ok(Receiver { addr, rx, shared, task })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The next delivery; None once the receiver has stopped.
    pub async fn next(&mut self) -> Option<Delivery> {
        self.rx.recv().await
    }

    pub fn counters(&self) -> Counters {
        let t = &self.shared.tally;
        Counters {
            sessions_opened: t.sessions_opened.load(Ordering::Relaxed),
            sessions_refused: t.sessions_refused.load(Ordering::Relaxed),
            refused: t.refused.load(Ordering::Relaxed),
            evicted: t.evicted.load(Ordering::Relaxed),
            accept_errors: t.accept_errors.load(Ordering::Relaxed),
        }
    }

    /// Sessions open now.
    pub fn open_sessions(&self) -> usize {
        self.shared.lock().sessions.len()
    }

    /// Stops accepting and abandons every open session (its incomplete messages fail, saying
    /// so): returns the deliveries not yet taken, the abandoned ones last.
    pub fn stop(&mut self, how: &str) -> Vec<Delivery> {
        self.task.abort();
        let open: Vec<SessionId> = self.shared.lock().sessions.keys().copied().collect();
        for sid in open {
            self.shared.close(sid, how);
        }
        let mut out = Vec::new();
        while let Ok(d) = self.rx.try_recv() {
            out.push(d);
        }
        out
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Closes the oldest connection that has not joined a session; false when there is none.
fn evict_oldest(shared: &Shared) -> bool {
    let mut st = shared.lock();
    let Some((_, handle)) = st.unjoined.pop_first() else { return false };
    handle.abort();
    shared.tally.evicted.fetch_add(1, Ordering::Relaxed);
    true
}

fn out_of_descriptors(e: &std::io::Error) -> bool {
    // EMFILE, ENFILE, ENOBUFS, ENOMEM: the process or system is out of something a new
    // connection needs; waiting (or closing another) helps, retrying at once does not.
    matches!(e.raw_os_error(), Some(24 | 23 | 105 | 12))
}

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    let mut backoff = Duration::from_millis(2);
    loop {
        let full = shared.lock().connections >= shared.cfg.max_connections;
        if full && !evict_oldest(&shared) {
            // Every connection has joined a session: wait for one to close.
            let closed = shared.closed.notified();
            let _ = tokio::time::timeout(Duration::from_millis(100), closed).await;
            continue;
        }
        match listener.accept().await {
            Ok((stream, peer)) => {
                backoff = Duration::from_millis(2);
                let shared2 = shared.clone();
                let mut st = shared.lock();
                st.connections += 1;
                st.next_connection += 1;
                let id = st.next_connection;
                let guard = ConnectionGuard { shared: shared.clone(), id };
                let task = tokio::spawn(async move {
                    let _guard = guard;
                    connection(stream, peer, &shared2, id).await;
                });
                st.unjoined.insert(id, task.abort_handle());
            }
            Err(e) => {
                let n = shared.tally.accept_errors.fetch_add(1, Ordering::Relaxed);
                if n == 0 {
                    let mut st = shared.lock();
                    let error =
                        format!("accepting a connection: {e} (backing off; later accept errors are only counted)");
                    if st.refusals_logged < Receiver::REFUSALS_LOGGED {
                        st.refusals_logged += 1;
                        let _ = shared.out.send(Delivery::Refused { peer: None, error });
                    }
                }
                if out_of_descriptors(&e) && evict_oldest(&shared) {
                    // The evicted connection's descriptor is released when its task is dropped.
                    tokio::time::sleep(Duration::from_millis(2)).await;
                } else {
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(Duration::from_millis(500));
                }
            }
        }
    }
}

/// Reads exactly `buf.len()` bytes within `limit`: Err names what happened.
async fn read_within<R: AsyncRead + Unpin>(rd: &mut R, buf: &mut [u8], limit: Duration) -> Result<(), String> {
    let mut got = 0;
    let end = Instant::now() + limit;
    while got < buf.len() {
        match tokio::time::timeout_at(end, rd.read(&mut buf[got..])).await {
            Err(_) => return Err(format!("nothing more within {limit:?} ({got} of {} B read)", buf.len())),
            Ok(Ok(0)) => return Err(format!("the connection ended ({got} of {} B read)", buf.len())),
            Ok(Ok(n)) => got += n,
            Ok(Err(e)) => return Err(format!("connection error: {e} ({got} of {} B read)", buf.len())),
        }
    }
    Ok(())
}

/// One connection: its preamble, then a session's control or a message's frames.
async fn connection(mut stream: TcpStream, peer: SocketAddr, shared: &Arc<Shared>, conn: u64) {
    let limit = shared.cfg.read_timeout;
    let mut pre = [0u8; PREAMBLE_BYTES];
    if let Err(e) = read_within(&mut stream, &mut pre, limit).await {
        let mut st = shared.lock();
        shared.refuse(&mut st, Some(peer), format!("from {peer}: no session preamble: {e}"));
        return;
    }
    match session::parse_preamble(&pre) {
        Err(e) => {
            let mut st = shared.lock();
            shared.refuse(&mut st, Some(peer), format!("from {peer}: {e}; connection closed"));
        }
        Ok(Preamble::Open(sid)) => control(stream, peer, shared, conn, sid, &pre).await,
        Ok(Preamble::Join(sid)) => {
            {
                let mut st = shared.lock();
                if !st.sessions.contains_key(&sid) {
                    let e = format!("from {peer}: joins session {sid}, which is not open here; connection closed");
                    shared.refuse(&mut st, Some(peer), e);
                    return;
                }
                st.unjoined.remove(&conn);
            }
            data(stream, peer, shared, sid).await;
        }
    }
}

/// A session's control connection: the table, the reply, then heartbeats until the close.
async fn control(mut stream: TcpStream, peer: SocketAddr, shared: &Arc<Shared>, conn: u64, sid: SessionId, pre: &[u8]) {
    let cfg = shared.cfg;
    let refuse = |e: String| {
        let mut st = shared.lock();
        shared.refuse(&mut st, Some(peer), format!("from {peer}: session {sid}: {e}"));
    };
    let mut count = [0u8; 4];
    if let Err(e) = read_within(&mut stream, &mut count, cfg.read_timeout).await {
        return refuse(format!("its message table: {e}"));
    }
    let n = match session::parse_count(count, cfg.max_messages) {
        Ok(n) => n,
        Err(e) => {
            shared.tally.sessions_refused.fetch_add(1, Ordering::Relaxed);
            let _ = stream.write_all(&session::encode_reply(Some(&e.to_string()))).await;
            return refuse(e.to_string());
        }
    };
    let mut table = vec![0u8; 8 * n as usize + 4];
    if let Err(e) = read_within(&mut stream, &mut table, cfg.read_timeout).await {
        return refuse(format!("its message table: {e}"));
    }
    let mut head = pre.to_vec();
    head.extend_from_slice(&count);
    let crc: [u8; 4] = table[table.len() - 4..].try_into().expect("4 bytes");
    let sizes = match session::parse_table(&head, &table[..table.len() - 4], crc) {
        Ok(s) => s,
        Err(e) => return refuse(e.to_string()),
    };
    let refusal = {
        let mut st = shared.lock();
        let big = sizes.iter().position(|&s| s > cfg.limits.max_message);
        if st.sessions.contains_key(&sid) {
            Some(format!("session {sid} is already open"))
        } else if st.sessions.len() >= cfg.max_sessions {
            Some(format!("{} sessions are open, the receiver's limit", st.sessions.len()))
        } else if let Some(k) = big {
            Some(format!("message {k}: size {} B, the limit is {} B", sizes[k], cfg.limits.max_message))
        } else {
            st.unjoined.remove(&conn);
            st.sessions.insert(
                sid,
                Session {
                    fate: vec![WAITING; sizes.len()],
                    sizes,
                    partial: HashMap::new(),
                    buffered: 0,
                    delivered: 0,
                    failed: 0,
                },
            );
            None
        }
    };
    if let Some(r) = refusal {
        shared.tally.sessions_refused.fetch_add(1, Ordering::Relaxed);
        let _ = stream.write_all(&session::encode_reply(Some(&r))).await;
        return refuse(r);
    }
    shared.tally.sessions_opened.fetch_add(1, Ordering::Relaxed);
    let _ = shared.out.send(Delivery::Opened { session: sid, peer, messages: n });
    if let Err(e) = stream.write_all(&session::encode_reply(None)).await {
        return shared.close(sid, &format!("its control connection failed ({e})"));
    }
    let mut b = [0u8; 1];
    let how = loop {
        match tokio::time::timeout(cfg.read_timeout, stream.read(&mut b)).await {
            Err(_) => break format!("no heartbeat from the sender for {:?}", cfg.read_timeout),
            Ok(Ok(0)) => break "the sender's control connection ended without closing the session".to_string(),
            Ok(Err(e)) => break format!("the sender's control connection failed ({e})"),
            Ok(Ok(_)) if b[0] == session::HEARTBEAT => continue,
            Ok(Ok(_)) if b[0] == session::CLOSE => break "the sender closed the session".to_string(),
            Ok(Ok(_)) => break format!("the sender sent control byte {:#04x}", b[0]),
        }
    };
    shared.close(sid, &how);
}

/// A message's connection in session `sid`: frames in, completion notices out.
async fn data(stream: TcpStream, peer: SocketAddr, shared: &Arc<Shared>, sid: SessionId) {
    let limits = shared.cfg.limits;
    let limit = shared.cfg.read_timeout;
    let (mut rd, mut wr) = stream.into_split();
    let mut buf: Vec<u8> = Vec::with_capacity(64 * 1024);
    let mut tmp = vec![0u8; 64 * 1024];
    loop {
        // Silence is allowed between frames (the sender's socket may be blocked by ours),
        // not inside one.
        let read = if buf.is_empty() {
            Ok(rd.read(&mut tmp).await)
        } else {
            tokio::time::timeout(limit, rd.read(&mut tmp)).await
        };
        let n = match read {
            Err(_) => return cut(shared, sid, &buf, &limits, peer, &format!("nothing more within {limit:?}")),
            Ok(Ok(0)) => break,
            Ok(Ok(n)) => n,
            Ok(Err(e)) => return cut(shared, sid, &buf, &limits, peer, &format!("connection error: {e}")),
        };
        buf.extend_from_slice(&tmp[..n]);
        let mut notices = Vec::new();
        let mut used_total = 0;
        loop {
            match frame::decode(&buf[used_total..], &limits) {
                Ok(Some((f, used))) => {
                    used_total += used;
                    let id = f.message;
                    match file_waiting(shared, sid, f).await {
                        Ok(true) => notices.extend_from_slice(&id.to_be_bytes()),
                        Ok(false) => {}
                        Err(e) => {
                            {
                                let mut st = shared.lock();
                                let e = format!("from {peer}: session {sid}: {e}; connection closed");
                                shared.refuse(&mut st, Some(peer), e);
                            }
                            let _ = wr.write_all(&notices).await;
                            return;
                        }
                    }
                }
                Ok(None) => break,
                Err(e) => {
                    bad_frame(shared, sid, e, peer);
                    let _ = wr.write_all(&notices).await;
                    return;
                }
            }
        }
        buf.drain(..used_total);
        if !notices.is_empty() {
            let _ = wr.write_all(&notices).await;
        }
        if !shared.lock().sessions.contains_key(&sid) {
            // The session ended (closed by its sender, or abandoned): so does this connection.
            return;
        }
    }
    if !buf.is_empty() {
        cut(shared, sid, &buf, &limits, peer, "the connection ended");
    }
    let _ = wr.shutdown().await;
}

/// Files a chunk, waiting for room up to the read timeout: Ok(true) when it completed its
/// message, Err when it was refused.
async fn file_waiting(shared: &Shared, sid: SessionId, mut f: frame::Frame) -> Result<bool, String> {
    let end = Instant::now() + shared.cfg.read_timeout;
    loop {
        let room = shared.room.notified();
        tokio::pin!(room);
        room.as_mut().enable();
        match shared.file(sid, f) {
            Filed::Completed => return Ok(true),
            Filed::Stored | Filed::Ignored => return Ok(false),
            Filed::Refused(e) => return Err(e),
            Filed::NoRoom(back) => {
                if tokio::time::timeout_at(end, room).await.is_err() {
                    let id = back.message as u32;
                    let cap = shared.cfg.max_buffered_bytes;
                    let mut st = shared.lock();
                    let e = format!(
                        "message {id}: no room for its chunk within {:?} ({cap} B of incomplete messages held)",
                        shared.cfg.read_timeout
                    );
                    shared.fail(&mut st, sid, id, e);
                    return Ok(false);
                }
                f = back;
            }
        }
    }
}

/// A frame failed its checks: the message it names fails if the session announced it.
fn bad_frame(shared: &Shared, sid: SessionId, e: FrameError, peer: SocketAddr) {
    let msg = format!("from {peer}: {e}; connection closed");
    let mut st = shared.lock();
    let announced = e
        .message()
        .and_then(|m| u32::try_from(m).ok())
        .filter(|&m| st.sessions.get(&sid).is_some_and(|s| (m as usize) < s.sizes.len()));
    match announced {
        Some(id) => shared.fail(&mut st, sid, id, msg),
        None => shared.refuse(&mut st, Some(peer), format!("session {sid}: {msg}")),
    }
}

/// The connection ended with `buf` holding part of a frame.
fn cut(shared: &Shared, sid: SessionId, buf: &[u8], limits: &Limits, peer: SocketAddr, how: &str) {
    if buf.is_empty() {
        return;
    }
    let header: Option<&[u8; HEADER_BYTES]> = buf.get(..HEADER_BYTES).and_then(|h| h.try_into().ok());
    match header.map(|h| frame::parse_header(h, limits)) {
        Some(Ok(h)) => {
            let got = buf.len() - HEADER_BYTES;
            let e = format!("message {}: {how} inside a chunk ({got} of {} B) from {peer}", h.message, h.len);
            let mut st = shared.lock();
            match u32::try_from(h.message)
                .ok()
                .filter(|&m| st.sessions.get(&sid).is_some_and(|s| (m as usize) < s.sizes.len()))
            {
                Some(id) => shared.fail(&mut st, sid, id, e),
                None => shared.refuse(&mut st, Some(peer), format!("session {sid}: {e}")),
            }
        }
        Some(Err(e)) => bad_frame(shared, sid, e, peer),
        None => {
            let mut st = shared.lock();
            let e =
                format!("session {sid}: {how} inside a frame header ({} of {HEADER_BYTES} B) from {peer}", buf.len());
            shared.refuse(&mut st, Some(peer), e);
        }
    }
}
