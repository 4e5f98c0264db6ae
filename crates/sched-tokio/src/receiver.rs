//! The receiving side: sessions opened by senders, frames from the connections that joined
//! them, messages delivered whole.

use crate::frame::{self, FrameError, Limits, HEADER_BYTES};
use crate::reassembly::{reserved_for, Partial};
use crate::session::{self, Challenge, Key, Preamble, SessionId, MAC_BYTES, PREAMBLE_BYTES};
use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, Notify};
use tokio::task::AbortHandle;
use tokio::time::Instant;

/// How a [`Receiver`] runs. Every limit holds against any one client: see docs/schedtcp.md,
/// "Limits and failure modes".
#[derive(Copy, Clone, Debug)]
pub struct RecvConfig {
    pub limits: Limits,
    /// The pre-shared key: every open and join must carry its MAC. None: no check, and
    /// [`Receiver::bind`] listens on loopback addresses only.
    pub key: Option<Key>,
    /// Bytes of incomplete messages one session may hold, counted whole with their
    /// bookkeeping ([`Receiver::reserved_bytes`]): a message's first chunk reserves room for all
    /// of it. A first chunk beyond it waits (its connection stops reading: back-pressure)
    /// until a message completes or `read_timeout` passes, when its message fails; a message
    /// larger than this fails at once. An admitted message's later chunks never wait, so the
    /// messages admitted always complete.
    pub max_buffered_bytes: u64,
    /// The same over every session together. With the defaults each session's budget fits
    /// (`max_sessions` x `max_buffered_bytes`), so no session waits for another's.
    pub max_total_buffered_bytes: u64,
    /// Longest silence: for a connection's preamble, inside a frame, between a session's
    /// heartbeats, and for room under `max_buffered_bytes`.
    pub read_timeout: Duration,
    /// A session that has received no frame for this long is *idle*: when a new session needs
    /// its slot or its table's room, the idle session longest without a frame is closed.
    pub idle_session: Duration,
    /// Connections held at once; beyond it (or when the process runs out of file descriptors)
    /// the oldest connection that has not yet joined a session is closed to make room, else
    /// the oldest connection of the session holding the most.
    pub max_connections: usize,
    /// Connections one session may have joined at once: twice its message count and two,
    /// at most this. A join beyond it is refused.
    pub max_joined_per_session: usize,
    /// Sessions open at once.
    pub max_sessions: usize,
    /// Messages one session may announce.
    pub max_messages: u32,
    /// Bytes of message tables (open sessions' and those being read) at once, each message
    /// counted as [`TABLE_BYTES_PER_MESSAGE`].
    pub max_table_bytes: u64,
}

/// What a session's table holds per message: its size and its fate.
pub const TABLE_BYTES_PER_MESSAGE: u64 = 9;

impl Default for RecvConfig {
    fn default() -> RecvConfig {
        RecvConfig {
            limits: Limits { max_chunk: 1 << 20, max_message: 32 << 20 },
            key: None,
            max_buffered_bytes: 64 << 20,
            max_total_buffered_bytes: 512 << 20,
            read_timeout: Duration::from_secs(10),
            idle_session: Duration::from_secs(5),
            max_connections: 1024,
            max_joined_per_session: 256,
            max_sessions: 8,
            max_messages: 1_000_000,
            max_table_bytes: 64 << 20,
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
    /// Announced messages `first..=last` of `session`, none of whose bytes arrived, will not
    /// be delivered: the session ended (`error` says how). Runs shorter than
    /// [`Receiver::UNSENT_LISTED`] come as one [`Delivery::Failed`] each instead.
    Unsent { session: SessionId, first: u32, last: u32, error: String },
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
    /// Frames and connections refused (see [`Delivery::Refused`]), the three below included.
    pub refused: u64,
    /// Opens whose MAC did not match the key.
    pub forged_opens: u64,
    /// Joins whose MAC did not match the key (replays not counted here).
    pub forged_joins: u64,
    /// Joins carrying the MAC of an earlier join: bytes captured and sent again.
    pub replayed_joins: u64,
    /// Connections closed to make room: not yet in a session, or of the session holding the most.
    pub evicted: u64,
    /// Idle sessions closed to make room for a new one.
    pub sessions_evicted: u64,
    /// Failed accepts (for want of file descriptors, mostly).
    pub accept_errors: u64,
    /// The most bytes reserved for incomplete messages at once, over every session.
    pub peak_reserved_bytes: u64,
}

const WAITING: u8 = 0;
const DELIVERED: u8 = 1;
const FAILED: u8 = 2;

struct Session {
    sizes: Vec<u64>,
    fate: Vec<u8>,
    partial: HashMap<u32, Partial>,
    /// Room reserved by the incomplete messages ([`reserved_for`] each).
    buffered: u64,
    delivered: u32,
    failed: u32,
    /// Bytes of its table counted in [`State::table_bytes`].
    table_bytes: u64,
    /// When its last frame (or its open) came.
    last_active: Instant,
    /// Its control connection's task.
    control: AbortHandle,
    /// Its joined connections' tasks.
    joined: BTreeMap<u64, AbortHandle>,
    max_joined: usize,
}

#[derive(Default)]
struct State {
    sessions: HashMap<SessionId, Session>,
    connections: usize,
    next_connection: u64,
    /// Connections that have not joined a session yet, oldest first, and when each came.
    unjoined: BTreeMap<u64, (AbortHandle, Instant)>,
    /// The session each joined connection (or control connection) belongs to.
    member: HashMap<u64, SessionId>,
    refusals_logged: usize,
    /// Bytes reserved by every session's incomplete messages.
    buffered: u64,
    /// Bytes of tables held: open sessions' and those being read.
    table_bytes: u64,
    /// Tables being read, by connection: their bytes.
    reading: BTreeMap<u64, u64>,
    /// MACs of the latest accepted joins, to tell a replay from a forgery.
    recent_joins: HashSet<[u8; MAC_BYTES]>,
    recent_order: VecDeque<[u8; MAC_BYTES]>,
}

/// Joins remembered to recognise replays.
const RECENT_JOINS: usize = 4096;

#[derive(Default)]
struct Tally {
    sessions_opened: AtomicU64,
    sessions_refused: AtomicU64,
    refused: AtomicU64,
    forged_opens: AtomicU64,
    forged_joins: AtomicU64,
    replayed_joins: AtomicU64,
    evicted: AtomicU64,
    sessions_evicted: AtomicU64,
    accept_errors: AtomicU64,
    peak_reserved_bytes: AtomicU64,
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
        if let Some(p) = s.partial.remove(&id) {
            s.buffered -= p.reserved;
            st.buffered -= p.reserved;
            self.room.notify_waiters();
        }
        let _ = self.out.send(Delivery::Failed { session: sid, id, error });
    }

    /// Files a chunk of session `sid`.
    fn file(&self, sid: SessionId, f: frame::Frame) -> Filed {
        let (cap, total_cap) = (self.cfg.max_buffered_bytes, self.cfg.max_total_buffered_bytes);
        let mut guard = self.lock();
        let st = &mut *guard;
        let Some(s) = st.sessions.get_mut(&sid) else { return Filed::Ignored };
        s.last_active = Instant::now();
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
        let need = reserved_for(size);
        if size > 0 && !s.partial.contains_key(&id) {
            let cap = cap.min(total_cap);
            if need > cap {
                let e = format!(
                    "message {id}: {size} B ({need} B with its bookkeeping), more than the {cap} B a session may hold of incomplete messages"
                );
                self.fail(st, sid, id, e);
                return Filed::Ignored;
            }
            // A message's first chunk reserves room for the whole message, so that an admitted
            // message can always complete: were room taken chunk by chunk, messages each holding
            // part of the budget could all wait for room that only their completion frees.
            if s.buffered + need > cap || st.buffered + need > total_cap {
                return Filed::NoRoom(f);
            }
            s.buffered += need;
            st.buffered += need;
            self.tally.peak_reserved_bytes.fetch_max(st.buffered, Ordering::Relaxed);
            s.partial.insert(id, Partial::new(size));
        }
        let done = match s.partial.get_mut(&id) {
            None => true, // an empty message: its one empty chunk completes it
            Some(p) => {
                if !p.put(f.offset, &f.chunk) {
                    let e = format!("message {id}: the chunk at offset {} overlaps one already received", f.offset);
                    self.fail(st, sid, id, e);
                    return Filed::Ignored;
                }
                p.got == size
            }
        };
        if !done {
            return Filed::Stored;
        }
        let data = match s.partial.remove(&id) {
            Some(p) => {
                s.buffered -= p.reserved;
                st.buffered -= p.reserved;
                p.assemble()
            }
            None => Vec::new(),
        };
        s.fate[id as usize] = DELIVERED;
        s.delivered += 1;
        self.room.notify_waiters();
        let _ = self.out.send(Delivery::Message { session: sid, id, data, completed_at: SystemTime::now() });
        Filed::Completed
    }

    /// Session `sid` ends: its messages not delivered fail, its state goes.
    fn close(&self, sid: SessionId, how: &str) {
        let mut st = self.lock();
        self.close_locked(&mut st, sid, how);
    }

    fn close_locked(&self, st: &mut State, sid: SessionId, how: &str) {
        let Some(s) = st.sessions.get(&sid) else { return };
        // Messages with bytes here fail one by one; those none of whose bytes came, by runs
        // of consecutive ids: one delivery per run of [`Receiver::UNSENT_LISTED`] or more, so
        // that a session of a million messages that ends costs one, not a million.
        let started: Vec<(u32, u64)> = s.partial.iter().map(|(id, p)| (*id, p.got)).collect();
        for (id, got) in started {
            let size = st.sessions[&sid].sizes[id as usize];
            self.fail(st, sid, id, format!("message {id}: incomplete ({got} of {size} B) when {how}"));
        }
        let s = st.sessions.get_mut(&sid).expect("session");
        let mut runs: Vec<(u32, u32)> = Vec::new();
        for (k, fate) in s.fate.iter_mut().enumerate() {
            if *fate != WAITING {
                continue;
            }
            *fate = FAILED;
            s.failed += 1;
            let k = k as u32;
            match runs.last_mut() {
                Some((_, last)) if *last + 1 == k => *last = k,
                _ => runs.push((k, k)),
            }
        }
        for (first, last) in runs {
            if last - first + 1 < Receiver::UNSENT_LISTED {
                for id in first..=last {
                    let size = s.sizes[id as usize];
                    let error = format!("message {id}: incomplete (0 of {size} B) when {how}");
                    let _ = self.out.send(Delivery::Failed { session: sid, id, error });
                }
            } else {
                let error = format!("messages {first} to {last}: none of their bytes arrived when {how}");
                let _ = self.out.send(Delivery::Unsent { session: sid, first, last, error });
            }
        }
        let s = st.sessions.remove(&sid).expect("session");
        st.table_bytes -= s.table_bytes;
        // Its connections have nothing more to carry: silent ones would hold their
        // descriptors, in no session and not waiting to join, where no eviction finds them.
        s.joined.values().for_each(AbortHandle::abort);
        s.control.abort();
        let _ =
            self.out.send(Delivery::Closed { session: sid, delivered: s.delivered, failed: s.failed, how: how.into() });
        self.room.notify_waiters();
    }

    /// Closes the idle session longest without a frame, with every connection of it: false
    /// when no session is idle.
    fn evict_idle_session(&self, st: &mut State) -> bool {
        let idle = self.cfg.idle_session;
        let now = Instant::now();
        let Some((sid, since)) = st
            .sessions
            .iter()
            .filter(|(_, s)| now.duration_since(s.last_active) >= idle)
            .min_by_key(|(_, s)| s.last_active)
            .map(|(sid, s)| (*sid, now.duration_since(s.last_active)))
        else {
            return false;
        };
        self.tally.sessions_evicted.fetch_add(1, Ordering::Relaxed);
        let how =
            format!("the session was closed to make room for a new one (no frame for {:.1} s)", since.as_secs_f64());
        self.close_locked(st, sid, &how);
        true
    }
}

/// Decrements the connection count however a connection's task ends (also when aborted),
/// and releases what it held.
struct ConnectionGuard {
    shared: Arc<Shared>,
    id: u64,
}

impl Drop for ConnectionGuard {
    fn drop(&mut self) {
        let mut st = self.shared.lock();
        st.connections -= 1;
        st.unjoined.remove(&self.id);
        if let Some(bytes) = st.reading.remove(&self.id) {
            st.table_bytes -= bytes;
        }
        if let Some(sid) = st.member.remove(&self.id) {
            if let Some(s) = st.sessions.get_mut(&sid) {
                s.joined.remove(&self.id);
            }
        }
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

    /// Consecutive messages that never started, when their session ends, from which on they
    /// come as one [`Delivery::Unsent`].
    pub const UNSENT_LISTED: u32 = 16;

    /// Listens on `addr` (port 0: any free port; see [`Receiver::local_addr`]). Without a key
    /// (`cfg.key`), only a loopback address: anyone who can reach the port could open a
    /// session otherwise.
    pub async fn bind(addr: SocketAddr, cfg: RecvConfig) -> std::io::Result<Receiver> {
        let loopback = match addr.ip() {
            std::net::IpAddr::V4(a) => a.is_loopback(),
            std::net::IpAddr::V6(a) => a.is_loopback() || a.to_ipv4_mapped().is_some_and(|v| v.is_loopback()),
        };
        if cfg.key.is_none() && !loopback {
            return Err(std::io::Error::new(
                std::io::ErrorKind::PermissionDenied,
                format!(
                    "a receiver without a key listens on loopback only (127.0.0.0/8 or ::1), not {addr}: give it a key with --key-file PATH or FCTLAB_SCHED_KEY"
                ),
            ));
        }
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
            forged_opens: t.forged_opens.load(Ordering::Relaxed),
            forged_joins: t.forged_joins.load(Ordering::Relaxed),
            replayed_joins: t.replayed_joins.load(Ordering::Relaxed),
            evicted: t.evicted.load(Ordering::Relaxed),
            sessions_evicted: t.sessions_evicted.load(Ordering::Relaxed),
            accept_errors: t.accept_errors.load(Ordering::Relaxed),
            peak_reserved_bytes: t.peak_reserved_bytes.load(Ordering::Relaxed),
        }
    }

    /// Bytes reserved now by incomplete messages ([`reserved_for`] each), over every session.
    pub fn reserved_bytes(&self) -> u64 {
        self.shared.lock().buffered
    }

    /// Bytes of message tables held now (open sessions' and those being read).
    pub fn table_bytes(&self) -> u64 {
        self.shared.lock().table_bytes
    }

    /// Connections held now.
    pub fn connections(&self) -> usize {
        self.shared.lock().connections
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

/// How long a new connection has to join or open a session before it may be closed to make
/// room ahead of the connections of the session holding the most: a round trip and a little.
const JOIN_GRACE: Duration = Duration::from_millis(500);

/// Closes a connection to make room: the oldest that has not joined a session within
/// [`JOIN_GRACE`], else the oldest of the session holding the most connections if it holds
/// more than its share (the connections held over the sessions and one), else the oldest not
/// joined; false when there is none. So neither connections that never join (the key
/// unknown) nor one session's many connections keep a new sender out, and a flood of new
/// connections does not close those of a session within its share.
fn evict_one(shared: &Shared) -> bool {
    let mut st = shared.lock();
    let st = &mut *st;
    let stale = st.unjoined.first_key_value().is_some_and(|(_, (_, at))| at.elapsed() >= JOIN_GRACE);
    // Held now, not `max_connections`: descriptors may run out first.
    let share = st.connections / (st.sessions.len() + 1);
    let largest = st.sessions.values_mut().max_by_key(|s| s.joined.len()).filter(|s| s.joined.len() > share);
    if let (false, Some(s)) = (stale, largest) {
        let (id, handle) = s.joined.pop_first().expect("a joined connection");
        st.member.remove(&id);
        handle.abort();
    } else if let Some((_, (handle, _))) = st.unjoined.pop_first() {
        handle.abort();
    } else {
        return false;
    }
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
        if full && !evict_one(&shared) {
            // No connection to close (a tiny max_connections): wait for one to close.
            let closed = shared.closed.notified();
            let _ = tokio::time::timeout(Duration::from_millis(100), closed).await;
            continue;
        }
        if full {
            // The evicted connection's descriptor is released when its task is dropped.
            tokio::task::yield_now().await;
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
                st.unjoined.insert(id, (task.abort_handle(), Instant::now()));
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
                if out_of_descriptors(&e) && evict_one(&shared) {
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

/// One connection: the challenge, its preamble, then a session's control or a message's
/// frames.
async fn connection(mut stream: TcpStream, peer: SocketAddr, shared: &Arc<Shared>, conn: u64) {
    let limit = shared.cfg.read_timeout;
    let challenge = Challenge::fresh(shared.cfg.key.is_some());
    // A peer gone already fails the read below, which says so.
    let _ = tokio::time::timeout(limit, stream.write_all(&challenge.encode())).await;
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
        Ok(Preamble::Open(sid)) => control(stream, peer, shared, conn, sid, &pre, &challenge).await,
        Ok(Preamble::Join(sid)) => {
            let mut tag = [0u8; MAC_BYTES];
            if let Err(e) = read_within(&mut stream, &mut tag, limit).await {
                let mut st = shared.lock();
                shared.refuse(&mut st, Some(peer), format!("from {peer}: joining session {sid}: no MAC: {e}"));
                return;
            }
            {
                let mut guard = shared.lock();
                let st = &mut *guard;
                if let Some(key) = &shared.cfg.key {
                    if !key.verify(&challenge.nonce, &pre, &tag) {
                        let (e, counter) = if st.recent_joins.contains(&tag) {
                            ("a replayed join (the MAC of an earlier connection's join)", &shared.tally.replayed_joins)
                        } else {
                            ("a join whose MAC does not match the receiver's key", &shared.tally.forged_joins)
                        };
                        counter.fetch_add(1, Ordering::Relaxed);
                        shared.refuse(st, Some(peer), format!("from {peer}: session {sid}: {e}; connection closed"));
                        return;
                    }
                    if st.recent_joins.insert(tag) {
                        st.recent_order.push_back(tag);
                        if st.recent_order.len() > RECENT_JOINS {
                            let old = st.recent_order.pop_front().expect("a join");
                            st.recent_joins.remove(&old);
                        }
                    }
                }
                let Some(s) = st.sessions.get_mut(&sid) else {
                    let e = format!("from {peer}: joins session {sid}, which is not open here; connection closed");
                    shared.refuse(st, Some(peer), e);
                    return;
                };
                if s.joined.len() >= s.max_joined {
                    let e = format!(
                        "from {peer}: session {sid} has {} connections joined, its limit (twice its messages and two, at most {}); connection closed",
                        s.joined.len(),
                        shared.cfg.max_joined_per_session
                    );
                    shared.refuse(st, Some(peer), e);
                    return;
                }
                let Some((handle, _)) = st.unjoined.remove(&conn) else {
                    // Closed to make room meanwhile.
                    return;
                };
                s.joined.insert(conn, handle);
                st.member.insert(conn, sid);
            }
            data(stream, peer, shared, sid).await;
        }
    }
}

/// Makes room for a table of `bytes`: idle sessions first, then the oldest tables still
/// being read (not `conn`'s). False when there is not room enough all the same.
fn table_room(shared: &Shared, st: &mut State, conn: u64, bytes: u64) -> bool {
    let max = shared.cfg.max_table_bytes;
    while st.table_bytes + bytes > max {
        if shared.evict_idle_session(st) {
            continue;
        }
        let Some((&other, _)) = st.reading.iter().find(|(c, _)| **c != conn) else { return false };
        let freed = st.reading.remove(&other).expect("a table being read");
        st.table_bytes -= freed;
        if let Some((h, _)) = st.unjoined.remove(&other) {
            h.abort();
        }
        shared.tally.evicted.fetch_add(1, Ordering::Relaxed);
    }
    true
}

/// A session's control connection: the table and its MAC, the reply, then heartbeats until
/// the close.
#[allow(clippy::too_many_arguments)]
async fn control(
    mut stream: TcpStream,
    peer: SocketAddr,
    shared: &Arc<Shared>,
    conn: u64,
    sid: SessionId,
    pre: &[u8],
    challenge: &Challenge,
) {
    let cfg = shared.cfg;
    let refuse = |e: String| {
        let mut st = shared.lock();
        shared.refuse(&mut st, Some(peer), format!("from {peer}: session {sid}: {e}"));
    };
    let reply_refusal = |e: &str| {
        shared.tally.sessions_refused.fetch_add(1, Ordering::Relaxed);
        session::encode_reply(Some(e))
    };
    let mut count = [0u8; 4];
    if let Err(e) = read_within(&mut stream, &mut count, cfg.read_timeout).await {
        return refuse(format!("its message table: {e}"));
    }
    let n = match session::parse_count(count, cfg.max_messages) {
        Ok(n) => n,
        Err(e) => {
            let _ = stream.write_all(&reply_refusal(&e.to_string())).await;
            return refuse(e.to_string());
        }
    };
    // Room for the table before any of it is read, held until the session ends.
    let table_bytes = n as u64 * TABLE_BYTES_PER_MESSAGE;
    let room = {
        let mut st = shared.lock();
        let ok = table_room(shared, &mut st, conn, table_bytes);
        if ok {
            st.table_bytes += table_bytes;
            st.reading.insert(conn, table_bytes);
        }
        ok
    };
    if !room {
        let e = format!("no room for a table of {n} messages ({} B of tables held at most)", cfg.max_table_bytes);
        let _ = stream.write_all(&reply_refusal(&e)).await;
        return refuse(e);
    }
    let sizes = match read_table(&mut stream, shared, pre, count, n, challenge).await {
        Ok(sizes) => sizes,
        Err(TableFault::Quiet(e)) => return refuse(e),
        Err(TableFault::Told(e)) => {
            let _ = stream.write_all(&reply_refusal(&e)).await;
            return refuse(e);
        }
    };
    let refusal = {
        let mut guard = shared.lock();
        let st = &mut *guard;
        let big = sizes.iter().position(|&s| s > cfg.limits.max_message);
        if st.sessions.contains_key(&sid) {
            Some(format!("session {sid} is already open"))
        } else if let Some(k) = big {
            Some(format!("message {k}: size {} B, the limit is {} B", sizes[k], cfg.limits.max_message))
        } else if st.sessions.len() >= cfg.max_sessions && !shared.evict_idle_session(st) {
            Some(format!("{} sessions are open, the receiver's limit, and none is idle", st.sessions.len()))
        } else if let Some((control, _)) = st.unjoined.remove(&conn) {
            st.reading.remove(&conn);
            st.member.insert(conn, sid);
            st.sessions.insert(
                sid,
                Session {
                    fate: vec![WAITING; sizes.len()],
                    sizes,
                    partial: HashMap::new(),
                    buffered: 0,
                    delivered: 0,
                    failed: 0,
                    table_bytes,
                    last_active: Instant::now(),
                    control,
                    joined: BTreeMap::new(),
                    max_joined: (2 * n as usize + 2).min(cfg.max_joined_per_session),
                },
            );
            None
        } else {
            // Closed to make room meanwhile.
            return;
        }
    };
    if let Some(r) = refusal {
        let _ = stream.write_all(&reply_refusal(&r)).await;
        return refuse(r);
    }
    shared.tally.sessions_opened.fetch_add(1, Ordering::Relaxed);
    let _ = shared.out.send(Delivery::Opened { session: sid, peer, messages: n });
    if let Err(e) = stream.write_all(&session::encode_reply(None)).await {
        return shared.close(sid, &format!("its control connection failed ({e})"));
    }
    let how = heartbeats(&mut stream, cfg.read_timeout).await;
    shared.close(sid, &how);
}

/// Why an open's table was not taken: a refusal the sender is not answered (it stopped
/// sending), or one it is told.
enum TableFault {
    Quiet(String),
    Told(String),
}

/// Reads an open's table of `n` sizes piece by piece, holding nothing but the sizes, and
/// checks its CRC and, with a key, its MAC (over the challenge's nonce, the preamble `pre`,
/// the count and the table).
async fn read_table(
    stream: &mut TcpStream,
    shared: &Shared,
    pre: &[u8],
    count: [u8; 4],
    n: u32,
    challenge: &Challenge,
) -> Result<Vec<u64>, TableFault> {
    let cfg = shared.cfg;
    let cut_short = |e: String| TableFault::Quiet(format!("its message table: {e}"));
    let mut crc = crc32fast::Hasher::new();
    let mut mac = cfg.key.map(|k| k.start(&challenge.nonce));
    let mut take = |part: &[u8]| {
        crc.update(part);
        if let Some(m) = &mut mac {
            m.update(part);
        }
    };
    take(pre);
    take(&count);
    let mut sizes = Vec::with_capacity(n as usize);
    let mut piece = vec![0u8; 8 * (n as usize).min(8192)];
    while sizes.len() < n as usize {
        let k = (n as usize - sizes.len()).min(8192);
        let piece = &mut piece[..8 * k];
        read_within(stream, piece, cfg.read_timeout).await.map_err(cut_short)?;
        take(piece);
        sizes.extend(piece.chunks_exact(8).map(|c| u64::from_be_bytes(c.try_into().expect("8 bytes"))));
    }
    let mut tail = [0u8; 4 + MAC_BYTES];
    read_within(stream, &mut tail, cfg.read_timeout).await.map_err(cut_short)?;
    if crc.finalize() != u32::from_be_bytes(tail[..4].try_into().expect("4 bytes")) {
        return Err(TableFault::Quiet(session::SessionError::Checksum.to_string()));
    }
    if let Some(mut m) = mac {
        m.update(&tail[..4]);
        if !m.verify(&tail[4..]) {
            shared.tally.forged_opens.fetch_add(1, Ordering::Relaxed);
            return Err(TableFault::Told("an open whose MAC does not match the receiver's key".to_string()));
        }
    }
    Ok(sizes)
}

/// Reads the sender's heartbeats on its control connection until the session ends; returns
/// how it ended.
async fn heartbeats(stream: &mut TcpStream, timeout: Duration) -> String {
    let mut b = [0u8; 1];
    loop {
        match tokio::time::timeout(timeout, stream.read(&mut b)).await {
            Err(_) => return format!("no heartbeat from the sender for {timeout:?}"),
            Ok(Ok(0)) => return "the sender's control connection ended without closing the session".to_string(),
            Ok(Err(e)) => return format!("the sender's control connection failed ({e})"),
            Ok(Ok(_)) if b[0] == session::HEARTBEAT => continue,
            Ok(Ok(_)) if b[0] == session::CLOSE => return "the sender closed the session".to_string(),
            Ok(Ok(_)) => return format!("the sender sent control byte {:#04x}", b[0]),
        }
    }
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
