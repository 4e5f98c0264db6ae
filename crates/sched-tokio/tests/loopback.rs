//! The library over loopback: every message arrives byte-identical under every policy; one
//! receiver serves sessions one after another and at once; each fault case fails only the
//! messages it concerns, and bytes of no session's announced message are refused without
//! touching a delivery.

use fctlab_sched::{Policy, Rank};
use fctlab_sched_tokio::frame::{self, HEADER_BYTES};
use fctlab_sched_tokio::session::{self, SessionId};
use fctlab_sched_tokio::{Delivery, Key, Receiver, RecvConfig, SendConfig, Sender};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Held by the test that loads both cores (the hog and the flood) and by the one that
/// measures an ordering in time, so that they do not run at once.
static TIMING: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn payload(seed: u64, len: usize) -> Vec<u8> {
    fctlab_sched_tokio::pattern(seed, len)
}

fn local() -> SocketAddr {
    "127.0.0.1:0".parse().unwrap()
}

/// Deliveries until `n` announced messages have been delivered or failed (sessions' opening
/// and closing and refusals are kept too), or `limit` passes without one.
async fn collect(rx: &mut Receiver, n: usize, limit: Duration) -> Vec<Delivery> {
    let mut out = Vec::new();
    let mut messages = 0;
    while messages < n {
        match tokio::time::timeout(limit, rx.next()).await {
            Ok(Some(d)) => {
                messages += match d {
                    Delivery::Message { .. } | Delivery::Failed { .. } => 1,
                    Delivery::Unsent { first, last, .. } => (last - first + 1) as usize,
                    _ => 0,
                };
                out.push(d)
            }
            _ => break,
        }
    }
    out
}

/// Sends `sizes` (message k carries `payload(seed + k)`) in one session, `gap` apart.
async fn send_session(to: SocketAddr, cfg: SendConfig, seed: u64, sizes: &[usize], gap: Duration) -> Sender {
    let table: Vec<(u64, u32)> = sizes.iter().enumerate().map(|(k, &n)| (n as u64, (k % 2) as u32)).collect();
    let mut tx = Sender::open(to, cfg, &table).await.unwrap();
    for (k, &n) in sizes.iter().enumerate() {
        tx.send(k as u32, payload(seed + k as u64, n)).unwrap();
        tokio::time::sleep(gap).await;
    }
    tx
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_message_arrives_whole_under_every_policy() {
    let sizes: Vec<usize> =
        vec![0, 1, 100, 16 * 1024, 16 * 1024 + 1, 50_000, 300_000, 2_000_000, 7, 1_000_000, 123_457, 40_000];
    for policy in [
        Policy::Tcp,
        Policy::Ranked(Rank::Srpt),
        Policy::Ranked(Rank::Las),
        Policy::Ranked(Rank::Fair),
        Policy::Priority(Rank::Srpt),
    ] {
        let mut rx = Receiver::bind(local(), RecvConfig::default()).await.unwrap();
        let mut cfg = SendConfig::new(policy);
        cfg.chunk_bytes = 4096;
        cfg.send_buffer_bytes = Some(32 * 1024);
        let tx = send_session(rx.local_addr(), cfg, 1000, &sizes, Duration::from_millis(1)).await;
        let got = collect(&mut rx, sizes.len(), Duration::from_secs(20)).await;
        let reports = tx.finish().await;
        let mut seen = 0;
        for d in got {
            match d {
                Delivery::Message { id, data, .. } => {
                    seen += 1;
                    assert_eq!(data, payload(1000 + id as u64, sizes[id as usize]), "{policy}: message {id} differs")
                }
                Delivery::Opened { messages, .. } => assert_eq!(messages as usize, sizes.len()),
                d => panic!("{policy}: {d:?}"),
            }
        }
        assert_eq!(seen, sizes.len());
        for r in &reports {
            assert!(r.error.is_none() && r.transfer.is_some(), "{policy}: {r:?}");
        }
        // The sender closed the session: the receiver says so, with every message delivered.
        match tokio::time::timeout(Duration::from_secs(5), rx.next()).await {
            Ok(Some(Delivery::Closed { delivered, failed: 0, how, .. })) => {
                assert_eq!(delivered as usize, sizes.len());
                assert!(how.contains("the sender closed"), "{how}");
            }
            d => panic!("{policy}: {d:?}"),
        }
        assert_eq!(rx.open_sessions(), 0);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_receiver_serves_sessions_in_a_row_and_at_once() {
    let mut rx = Receiver::bind(local(), RecvConfig::default()).await.unwrap();
    let to = rx.local_addr();
    let sizes = [5_000usize, 70_000, 0, 1, 300_000, 16_384];
    let mut cfg = SendConfig::new(Policy::Ranked(Rank::Srpt));
    cfg.chunk_bytes = 8192;
    let mut by_session: HashMap<SessionId, (u64, Vec<u32>)> = HashMap::new();
    let mut all = Vec::new();
    // Three in a row (each numbering its messages from 0), then two at once.
    for seed in [10u64, 20, 30] {
        let tx = send_session(to, cfg, seed, &sizes, Duration::ZERO).await;
        by_session.insert(tx.session(), (seed, Vec::new()));
        all.extend(collect(&mut rx, sizes.len(), Duration::from_secs(10)).await);
        assert!(tx.finish().await.iter().all(|r| r.error.is_none()));
    }
    let (a, b) = tokio::join!(
        send_session(to, cfg, 40, &sizes, Duration::from_millis(1)),
        send_session(to, cfg, 50, &sizes, Duration::from_millis(1))
    );
    by_session.insert(a.session(), (40, Vec::new()));
    by_session.insert(b.session(), (50, Vec::new()));
    all.extend(collect(&mut rx, 2 * sizes.len(), Duration::from_secs(10)).await);
    let (ra, rb) = tokio::join!(a.finish(), b.finish());
    assert!(ra.iter().chain(&rb).all(|r| r.error.is_none()), "{ra:?} {rb:?}");
    for d in all {
        match d {
            Delivery::Message { session, id, data, .. } => {
                let (seed, ids) = by_session.get_mut(&session).expect("a known session");
                assert_eq!(data, payload(*seed + id as u64, sizes[id as usize]));
                ids.push(id);
            }
            Delivery::Opened { .. } | Delivery::Closed { failed: 0, .. } => {}
            d => panic!("{d:?}"),
        }
    }
    // Every message of every session exactly once.
    for (_, mut ids) in by_session.into_values() {
        ids.sort();
        assert_eq!(ids, (0..sizes.len() as u32).collect::<Vec<_>>());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn srpt_delivers_a_small_message_before_a_large_one_sent_first() {
    // 16 MB, then 20 KB a moment later: under SRPT the small one takes the large one's
    // connection's next chunks and completes first.
    let _alone = TIMING.lock().await;
    let mut rx = Receiver::bind(local(), RecvConfig::default()).await.unwrap();
    let mut cfg = SendConfig::new(Policy::Ranked(Rank::Srpt));
    cfg.chunk_bytes = 8192;
    cfg.send_buffer_bytes = Some(16 * 1024);
    let tx = send_session(rx.local_addr(), cfg, 1, &[16_000_000, 20_000], Duration::from_millis(1)).await;
    let got = collect(&mut rx, 2, Duration::from_secs(20)).await;
    let order: Vec<u32> = got
        .iter()
        .filter_map(|d| match d {
            Delivery::Message { id, .. } => Some(*id),
            Delivery::Opened { .. } => None,
            e => panic!("{e:?}"),
        })
        .collect();
    assert_eq!(order, vec![1, 0]);
    tx.finish().await;
}

/// Sends raw bytes on one connection and closes it, abruptly (RST) when `reset`.
async fn raw(addr: SocketAddr, bytes: &[u8], reset: bool) {
    let mut s = TcpStream::connect(addr).await.unwrap();
    let _ = s.write_all(bytes).await;
    if reset {
        // Zero linger: the close sends a reset at once (so dropping does not block).
        #[allow(deprecated)]
        s.set_linger(Some(Duration::ZERO)).unwrap();
        drop(s);
    } else {
        let _ = s.shutdown().await;
        // Keep the socket until the receiver has read it.
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn frame(id: u64, offset: u64, total: u64, chunk: &[u8]) -> Vec<u8> {
    let mut v = Vec::new();
    frame::encode(id, offset, total, chunk, &mut v);
    v
}

/// The receiver's challenge on a new connection.
async fn challenge(s: &mut TcpStream) -> session::Challenge {
    let mut c = [0u8; session::CHALLENGE_BYTES];
    s.read_exact(&mut c).await.unwrap();
    session::Challenge::parse(&c).unwrap()
}

/// Opens session `sid` by hand (announcing `sizes`, signed with `key`): the control
/// connection, the reply's reason (empty: accepted).
async fn open_keyed(addr: SocketAddr, sid: SessionId, sizes: &[u64], key: Option<&Key>) -> (TcpStream, Vec<u8>) {
    let mut s = TcpStream::connect(addr).await.unwrap();
    let c = challenge(&mut s).await;
    s.write_all(&session::encode_open(sid, sizes, key, &c.nonce)).await.unwrap();
    let mut r = [0u8; session::REPLY_BYTES];
    s.read_exact(&mut r).await.unwrap();
    let mut reason = vec![0u8; session::parse_reply(&r).unwrap().unwrap_or(0)];
    s.read_exact(&mut reason).await.unwrap();
    (s, reason)
}

async fn open_by_hand(addr: SocketAddr, sid: SessionId, sizes: &[u64]) -> (TcpStream, Vec<u8>) {
    open_keyed(addr, sid, sizes, None).await
}

/// A join (no MAC: a receiver without a key) and frames.
fn joined(sid: SessionId, frames: &[u8]) -> Vec<u8> {
    let mut v = session::encode_join(sid, None, &[0; session::NONCE_BYTES]);
    v.extend_from_slice(frames);
    v
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn faults_fail_their_messages_and_forgeries_are_refused() {
    let cfg = RecvConfig {
        limits: frame::Limits { max_chunk: 64 * 1024, max_message: 1 << 30 },
        max_buffered_bytes: 1 << 20,
        read_timeout: Duration::from_secs(3),
        max_sessions: 2,
        max_messages: 100,
        ..RecvConfig::default()
    };
    let mut rx = Receiver::bind(local(), cfg).await.unwrap();
    let addr = rx.local_addr();
    let sid = SessionId::random();
    let mut sizes = vec![1000u64; 12];
    sizes[10] = 2_000_000;
    let (mut control, reason) = open_by_hand(addr, sid, &sizes).await;
    assert!(reason.is_empty());
    let good = payload(9, 1000);
    let j = |f: &[u8]| joined(sid, f);
    // 1. a truncated frame: header and half its chunk, then the connection ends
    let f = frame(1, 0, 1000, &good);
    raw(addr, &j(&f[..HEADER_BYTES + 500]), false).await;
    // 2. a wrong magic, 3. a wrong version (both name no message: refused)
    let mut f = frame(2, 0, 1000, &good);
    f[0] = b'Z';
    raw(addr, &j(&f), false).await;
    let mut f = frame(3, 0, 1000, &good);
    f[4] = 2;
    raw(addr, &j(&f), false).await;
    // 4. a length beyond the message, 5. offset + length overflowing, 6. a chunk past the limit
    raw(addr, &j(&frame(4, 900, 1000, &good[..200])), false).await;
    let mut f = frame(5, 0, 1000, &good[..10]);
    f[16..24].copy_from_slice(&(u64::MAX - 3).to_be_bytes());
    raw(addr, &j(&f), false).await;
    let mut f = frame(6, 0, 1 << 20, &good[..10]);
    f[24..28].copy_from_slice(&(1u32 << 30).to_be_bytes());
    raw(addr, &j(&f[..HEADER_BYTES]), false).await;
    // 7. a declared size of a terabyte (refused from the header, nothing allocated)
    raw(addr, &j(&frame(7, 0, 1 << 40, &good[..10])), false).await;
    // 8. a checksum mismatch
    let mut f = frame(8, 0, 1000, &good);
    f[HEADER_BYTES + 10] ^= 0x40;
    raw(addr, &j(&f), false).await;
    // 9. a connection reset after the message's first half
    raw(addr, &j(&frame(9, 0, 1000, &good[..500])), true).await;
    // 10. a message larger than what a session may hold of incomplete messages
    raw(addr, &j(&frame(10, 0, 2_000_000, &good)), false).await;
    // Forgeries, none of which may touch message 0 or 11:
    // a frame with no preamble (a sender without sessions), a join of a session never
    // opened, a frame of a message the session did not announce, a size other than the
    // announced one, an open whose table fails its checksum, an open of too many messages.
    raw(addr, &frame(0, 0, 1000, &good), false).await;
    raw(addr, &joined(SessionId([1; 16]), &frame(0, 0, 1000, &good)), false).await;
    raw(addr, &j(&frame(99, 0, 1000, &good)), false).await;
    raw(addr, &j(&frame(11, 0, 999, &good[..999])), false).await;
    let mut bad_open = session::encode_open(SessionId::random(), &[5, 6], None, &[0; session::NONCE_BYTES]);
    bad_open[30] ^= 1;
    raw(addr, &bad_open, false).await;
    let (_c, reason) = open_by_hand(addr, SessionId::random(), &[1; 101]).await;
    assert!(String::from_utf8_lossy(&reason).contains("a session of 101 messages, the limit is 100"));
    // ...and the real messages 0 and 11, whole, after all that; 0 in two halves on two
    // connections.
    raw(addr, &j(&frame(0, 0, 1000, &good[..600])), false).await;
    raw(addr, &j(&frame(0, 600, 1000, &good[600..])), false).await;
    raw(addr, &j(&frame(11, 0, 1000, &good)), false).await;
    // A chunk of the delivered message 11 again: refused, the delivery stands.
    raw(addr, &j(&frame(11, 0, 1000, &good)), false).await;
    control.write_all(&[session::CLOSE]).await.unwrap();
    let got = collect(&mut rx, 12, Duration::from_secs(5)).await;
    let mut failed: HashMap<u32, String> = HashMap::new();
    let mut refused = Vec::new();
    let mut delivered = Vec::new();
    for d in got {
        match d {
            Delivery::Message { id, data, session, .. } => {
                assert_eq!(session, sid);
                delivered.push((id, data))
            }
            Delivery::Failed { id, error, .. } => assert!(failed.insert(id, error).is_none(), "{id} failed twice"),
            Delivery::Refused { error, .. } => refused.push(error),
            Delivery::Opened { session, .. } => assert_eq!(session, sid),
            d => panic!("{d:?}"),
        }
    }
    delivered.sort();
    assert_eq!(delivered, vec![(0, good.clone()), (11, good.clone())], "failed: {failed:?}");
    let has = |id: u32, text: &str| failed.get(&id).is_some_and(|e| e.contains(text));
    assert!(has(1, "inside a chunk (500 of 1000 B)"), "{failed:?}");
    assert!(has(4, "beyond its size"), "{failed:?}");
    assert!(has(5, "beyond its size"), "{failed:?}");
    assert!(has(6, "the limit is 65536 B"), "{failed:?}");
    assert!(has(7, "size 1099511627776 B, the limit"), "{failed:?}");
    assert!(has(8, "checksum mismatch"), "{failed:?}");
    assert!(has(9, "incomplete (500 of 1000 B) when the sender closed the session"), "{failed:?}");
    assert!(has(10, "more than the 1048576 B"), "{failed:?}");
    // 2 and 3 were announced but none of their bytes came with a session's frame.
    assert!(has(2, "incomplete (0 of 1000 B)") && has(3, "incomplete (0 of 1000 B)"), "{failed:?}");
    assert_eq!(failed.len(), 10, "{failed:?}");
    let refusal = |text: &str| refused.iter().any(|e| e.contains(text));
    for text in [
        "not a fctlab scheduling frame",
        "frame version 2",
        "before any session preamble",
        "which is not open here",
        "message 99: session",
        "a chunk says 999 B in all, the session announced 1000 B",
        "checksum mismatch in the session's message table",
        "a session of 101 messages",
        "after it was delivered",
    ] {
        assert!(refusal(text), "no refusal saying {text:?}: {refused:?}");
    }
    assert_eq!(rx.counters().refused as usize, refused.len());
    assert_eq!(rx.counters().sessions_opened, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_end_when_their_heartbeats_stop_and_when_the_receiver_stops() {
    let cfg = RecvConfig { read_timeout: Duration::from_millis(400), ..RecvConfig::default() };
    let mut rx = Receiver::bind(local(), cfg).await.unwrap();
    let addr = rx.local_addr();
    let sid = SessionId::random();
    // Opened by hand, no heartbeats: half of message 0 arrives, then silence.
    let (_control, _) = open_by_hand(addr, sid, &[1000, 10]).await;
    raw(addr, &joined(sid, &frame(0, 0, 1000, &payload(0, 500))), false).await;
    let got = collect(&mut rx, 2, Duration::from_secs(3)).await;
    let fails: Vec<&String> =
        got.iter().filter_map(|d| if let Delivery::Failed { error, .. } = d { Some(error) } else { None }).collect();
    assert_eq!(fails.len(), 2, "{got:?}");
    assert!(fails[0].contains("incomplete (500 of 1000 B) when no heartbeat from the sender for 400ms"), "{got:?}");
    // A real sender's session stays open while it beats; stopping the receiver abandons it.
    let mut scfg = SendConfig::new(Policy::Tcp);
    scfg.heartbeat = Duration::from_millis(100);
    let tx = Sender::open(addr, scfg, &[(10, 0)]).await.unwrap();
    tokio::time::sleep(Duration::from_millis(1000)).await;
    assert_eq!(rx.open_sessions(), 1);
    let rest = rx.stop("the receiver stopped");
    assert!(
        rest.iter().any(|d| matches!(d, Delivery::Failed { error, .. } if error.contains("incomplete (0 of 10 B) when the receiver stopped"))),
        "{rest:?}"
    );
    drop(tx);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_over_its_buffer_waits_for_room_instead_of_failing() {
    // 64 KB of incomplete messages at most, twelve 50 KB messages sent at once under SRPT:
    // chunks wait for room (their connections stop reading) and every message arrives.
    let cfg = RecvConfig { max_buffered_bytes: 64 * 1024, ..RecvConfig::default() };
    let mut rx = Receiver::bind(local(), cfg).await.unwrap();
    let mut scfg = SendConfig::new(Policy::Ranked(Rank::Srpt));
    scfg.chunk_bytes = 4096;
    let sizes = [50_000usize; 12];
    let tx = send_session(rx.local_addr(), scfg, 7, &sizes, Duration::ZERO).await;
    let got = collect(&mut rx, sizes.len(), Duration::from_secs(20)).await;
    let reports = tx.finish().await;
    assert_eq!(got.iter().filter(|d| matches!(d, Delivery::Message { .. })).count(), sizes.len(), "{got:?}");
    assert!(reports.iter().all(|r| r.error.is_none()), "{reports:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_sent_side_by_side_under_a_small_budget_do_not_block_each_other() {
    // Two 40 KB messages under a 64 KB budget, each on its own connection: 32 KB of each, then
    // the rest of each. Taken chunk by chunk, the first halves would fill the budget and both
    // rests would wait for room that only their completion frees, until both failed. Each
    // admitted message reserves its whole size instead: the second waits for the first.
    let cfg =
        RecvConfig { max_buffered_bytes: 64 * 1024, read_timeout: Duration::from_secs(2), ..RecvConfig::default() };
    let mut rx = Receiver::bind(local(), cfg).await.unwrap();
    let addr = rx.local_addr();
    let sid = SessionId::random();
    let (_control, _) = open_by_hand(addr, sid, &[40_000, 40_000]).await;
    let (p0, p1) = (payload(1, 40_000), payload(2, 40_000));
    let mut a = TcpStream::connect(addr).await.unwrap();
    let mut b = TcpStream::connect(addr).await.unwrap();
    a.write_all(&joined(sid, &frame(0, 0, 40_000, &p0[..32_000]))).await.unwrap();
    b.write_all(&joined(sid, &frame(1, 0, 40_000, &p1[..32_000]))).await.unwrap();
    tokio::time::sleep(Duration::from_millis(50)).await;
    a.write_all(&frame(0, 32_000, 40_000, &p0[32_000..])).await.unwrap();
    b.write_all(&frame(1, 32_000, 40_000, &p1[32_000..])).await.unwrap();
    let got = collect(&mut rx, 2, Duration::from_secs(5)).await;
    let data: Vec<&Vec<u8>> =
        got.iter().filter_map(|d| if let Delivery::Message { data, .. } = d { Some(data) } else { None }).collect();
    assert_eq!(
        data.len(),
        2,
        "{:?}",
        got.iter().filter(|d| !matches!(d, Delivery::Message { .. })).collect::<Vec<_>>()
    );
    assert!(data.contains(&&p0) && data.contains(&&p1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_connections_beyond_the_cap_do_not_stop_a_sender() {
    let cfg = RecvConfig { max_connections: 16, ..RecvConfig::default() };
    let mut rx = Receiver::bind(local(), cfg).await.unwrap();
    let addr = rx.local_addr();
    let mut idle = Vec::new();
    for _ in 0..100 {
        idle.push(TcpStream::connect(addr).await.unwrap());
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let tx = send_session(addr, SendConfig::new(Policy::Tcp), 3, &[1000, 200_000, 5], Duration::ZERO).await;
    let got = collect(&mut rx, 3, Duration::from_secs(10)).await;
    assert!(tx.finish().await.iter().all(|r| r.error.is_none()), "{got:?}");
    assert!(rx.counters().evicted >= 80, "{:?}", rx.counters());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_receiver_that_stops_reading_fails_the_messages_in_time() {
    // A receiver that accepts the session and never reads a message's connection: the
    // sender's writes stall once the socket buffers are full, and the messages fail after
    // the timeout instead of hanging.
    let l = tokio::net::TcpListener::bind(local()).await.unwrap();
    let addr = l.local_addr().unwrap();
    let hold = tokio::spawn(async move {
        let mut keep = Vec::new();
        let hello = session::Challenge::fresh(false).encode();
        let (mut c, _) = l.accept().await.unwrap();
        c.write_all(&hello).await.unwrap();
        let mut open = vec![0u8; 24 + 4 + 16 + 4 + 32];
        c.read_exact(&mut open).await.unwrap();
        c.write_all(&session::encode_reply(None)).await.unwrap();
        keep.push(c);
        while let Ok((mut s, _)) = l.accept().await {
            let _ = s.write_all(&hello).await;
            keep.push(s);
        }
    });
    let mut cfg = SendConfig::new(Policy::Ranked(Rank::Srpt));
    cfg.timeout = Duration::from_millis(500);
    cfg.send_buffer_bytes = Some(16 * 1024);
    let mut tx = Sender::open(addr, cfg, &[(8_000_000, 0), (100, 0)]).await.unwrap();
    tx.send(0, payload(1, 8_000_000)).unwrap();
    tx.send(1, payload(2, 100)).unwrap();
    assert!(tx.send(1, payload(2, 100)).unwrap_err().contains("sent already"));
    assert!(tx.send(2, vec![]).unwrap_err().contains("announced 2 messages"));
    let t0 = std::time::Instant::now();
    let reports = tokio::time::timeout(Duration::from_secs(10), tx.finish()).await.expect("the sender hung");
    assert!(t0.elapsed() < Duration::from_secs(5));
    for r in &reports {
        let e = r.error.as_deref().unwrap_or_default();
        assert!(r.transfer.is_none() && (e.contains("stopped reading") || e.contains("no completion notice")), "{r:?}");
    }
    assert!(reports.iter().any(|r| r.error.as_deref().unwrap().contains("stopped reading")), "{reports:?}");
    hold.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_or_refusing_receiver_is_a_clear_error() {
    // A port nothing listens on (bound, then closed).
    let addr = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let mut cfg = SendConfig::new(Policy::Tcp);
    cfg.timeout = Duration::from_secs(2);
    let e = Sender::open(addr, cfg, &[(10, 0)]).await.err().unwrap();
    assert!(e.contains(&format!("connecting to {addr}")), "{e}");
    // A receiver with room for one session refuses a second, saying why.
    let rx = Receiver::bind(local(), RecvConfig { max_sessions: 1, ..RecvConfig::default() }).await.unwrap();
    let _first = Sender::open(rx.local_addr(), cfg, &[(10, 0)]).await.unwrap();
    let e = Sender::open(rx.local_addr(), cfg, &[(10, 0)]).await.err().unwrap();
    assert!(
        e.contains("the receiver refused the session: 1 sessions are open, the receiver's limit, and none is idle"),
        "{e}"
    );
}

fn key(secret: &str) -> Key {
    Key::new(secret.as_bytes()).unwrap()
}

/// Connects and reads the challenge: the connection and its nonce.
async fn connect(addr: SocketAddr) -> (TcpStream, [u8; session::NONCE_BYTES]) {
    let mut s = TcpStream::connect(addr).await.unwrap();
    let c = challenge(&mut s).await;
    (s, c.nonce)
}

/// Sends `bytes` on `s`, closes its side and reads until the receiver closes (or 2 s).
async fn send_and_close(mut s: TcpStream, bytes: &[u8]) {
    let _ = s.write_all(bytes).await;
    let _ = s.shutdown().await;
    let mut sink = [0u8; 64];
    let _ = tokio::time::timeout(Duration::from_secs(2), async {
        while matches!(s.read(&mut sink).await, Ok(n) if n > 0) {}
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_a_key_forged_opens_and_joins_and_replayed_joins_are_refused_and_counted() {
    let k = key("the receiver's key, 32 bytes....");
    let wrong = key("a key that is not the receiver's");
    let cfg = RecvConfig { key: Some(k), read_timeout: Duration::from_secs(3), ..RecvConfig::default() };
    let mut rx = Receiver::bind(local(), cfg).await.unwrap();
    let addr = rx.local_addr();
    // Senders without the key, or with another one, are refused, saying why.
    let mut scfg = SendConfig::new(Policy::Tcp);
    scfg.timeout = Duration::from_secs(5);
    let e = Sender::open(addr, scfg, &[(10, 0)]).await.err().unwrap();
    assert!(e.contains("the receiver requires a key"), "{e}");
    scfg.key = Some(wrong);
    let e = Sender::open(addr, scfg, &[(10, 0)]).await.err().unwrap();
    assert!(e.contains("refused the session: an open whose MAC does not match the receiver's key"), "{e}");
    // A forged open by hand: the table signed with another key.
    let (_c, reason) = open_keyed(addr, SessionId::random(), &[5], Some(&wrong)).await;
    assert!(String::from_utf8_lossy(&reason).contains("MAC does not match"));
    // A real session, opened with the key.
    let sid = SessionId::random();
    let (mut control, reason) = open_keyed(addr, sid, &[1000, 1000], Some(&k)).await;
    assert!(reason.is_empty(), "{}", String::from_utf8_lossy(&reason));
    let good = payload(5, 1000);
    // Message 0 on a real join: these are the bytes an observer captures.
    let (s, nonce) = connect(addr).await;
    let mut captured = session::encode_join(sid, Some(&k), &nonce);
    captured.extend_from_slice(&frame(0, 0, 1000, &good));
    send_and_close(s, &captured).await;
    // The same bytes again on a new connection: a replay (another nonce).
    let (s, _) = connect(addr).await;
    send_and_close(s, &captured).await;
    // Joins forged by an observer who knows the session id: another key's MAC, and zeros.
    let (s, nonce) = connect(addr).await;
    let mut forged = session::encode_join(sid, Some(&wrong), &nonce);
    forged.extend_from_slice(&frame(1, 0, 1000, &[0u8; 1000]));
    send_and_close(s, &forged).await;
    let (s, nonce) = connect(addr).await;
    let mut zeros = session::encode_join(sid, None, &nonce);
    zeros.extend_from_slice(&frame(1, 0, 1000, &[0u8; 1000]));
    send_and_close(s, &zeros).await;
    // Message 1 on a real join.
    let (s, nonce) = connect(addr).await;
    let mut real = session::encode_join(sid, Some(&k), &nonce);
    real.extend_from_slice(&frame(1, 0, 1000, &good));
    send_and_close(s, &real).await;
    control.write_all(&[session::CLOSE]).await.unwrap();
    let got = collect(&mut rx, 2, Duration::from_secs(5)).await;
    let mut delivered = Vec::new();
    let mut refused = Vec::new();
    for d in got {
        match d {
            Delivery::Message { id, data, session, .. } => {
                assert_eq!(session, sid);
                delivered.push((id, data));
            }
            Delivery::Refused { error, .. } => refused.push(error),
            Delivery::Opened { .. } => {}
            d => panic!("{d:?}"),
        }
    }
    delivered.sort();
    assert_eq!(delivered, vec![(0, good.clone()), (1, good.clone())], "{refused:?}");
    let c = rx.counters();
    // The sender without a key left before its preamble: a refusal, not a forgery.
    assert_eq!((c.forged_opens, c.forged_joins, c.replayed_joins), (2, 2, 1), "{c:?} {refused:?}");
    assert_eq!((c.sessions_opened, c.sessions_refused), (1, 2), "{c:?}");
    assert_eq!(c.refused, 6, "{c:?} {refused:?}");
    for text in ["an open whose MAC does not match", "a replayed join", "a join whose MAC does not match"] {
        assert!(refused.iter().any(|e| e.contains(text)), "no refusal saying {text:?}: {refused:?}");
    }
    // A real sender with the key: every message arrives.
    scfg.key = Some(k);
    let tx = send_session(addr, scfg, 70, &[3000, 0, 200_000], Duration::ZERO).await;
    let got = collect(&mut rx, 3, Duration::from_secs(10)).await;
    assert_eq!(got.iter().filter(|d| matches!(d, Delivery::Message { .. })).count(), 3, "{got:?}");
    assert!(tx.finish().await.iter().all(|r| r.error.is_none()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_key_only_loopback_is_served() {
    for at in ["0.0.0.0:0", "[::]:0", "192.0.2.1:5000"] {
        let addr: SocketAddr = at.parse().unwrap();
        let e = Receiver::bind(addr, RecvConfig::default()).await.err().expect("refused");
        let text = e.to_string();
        assert!(!text.contains('\n') && text.contains("loopback only") && text.contains(&addr.to_string()), "{text}");
        assert!(text.contains("--key-file PATH or FCTLAB_SCHED_KEY"), "{text}");
    }
    for at in ["127.0.0.1:0", "127.0.0.2:0"] {
        assert!(Receiver::bind(at.parse().unwrap(), RecvConfig::default()).await.is_ok(), "{at}");
    }
}

/// The resident memory of this process, bytes (VmRSS of /proc/self/status).
fn rss_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap() * 1024
}

/// Raises this process's soft limit on file descriptors to `want` (at most the hard limit):
/// the limit now.
fn raise_descriptors(want: u64) -> u64 {
    let mut r = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: plain system calls on a local struct.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) != 0 {
            return 1024;
        }
        if r.rlim_cur < want {
            r.rlim_cur = want.min(r.rlim_max);
            libc::setrlimit(libc::RLIMIT_NOFILE, &r);
            libc::getrlimit(libc::RLIMIT_NOFILE, &mut r);
        }
    }
    r.rlim_cur
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_sender_completes_while_one_client_hogs_connections_and_another_floods_one_byte_chunks() {
    let _alone = TIMING.lock().await;
    // Both ends of every connection live in this process: 2 descriptors each.
    let limit = raise_descriptors(4096);
    let hogs = 1030.min(limit.saturating_sub(400) as usize / 2);
    assert!(hogs >= 300, "too few file descriptors for this test ({limit})");
    let k = key("a key shared by all three clients");
    let cfg = RecvConfig { key: Some(k), ..RecvConfig::default() };
    let mut rx = Receiver::bind(local(), cfg).await.unwrap();
    let addr = rx.local_addr();
    let rss_before = rss_bytes();
    // The hog, a holder of the key: four sessions of 1,000 messages, and as many joined
    // connections as it can get, all silent; then silent connections that never join.
    let mut hog_controls = Vec::new();
    let mut hog_sessions = Vec::new();
    for _ in 0..4 {
        let sid = SessionId::random();
        let (control, reason) = open_keyed(addr, sid, &[1000; 1000], Some(&k)).await;
        assert!(reason.is_empty());
        hog_controls.push(control);
        hog_sessions.push(sid);
    }
    let mut held = Vec::new();
    for i in 0..hogs {
        let Ok(Ok(mut s)) = tokio::time::timeout(Duration::from_secs(2), TcpStream::connect(addr)).await else {
            break;
        };
        let mut c = [0u8; session::CHALLENGE_BYTES];
        // A join beyond what the receiver holds may be closed before its challenge.
        if !matches!(tokio::time::timeout(Duration::from_secs(2), s.read_exact(&mut c)).await, Ok(Ok(_))) {
            held.push(s);
            continue;
        }
        let nonce = session::Challenge::parse(&c).unwrap().nonce;
        let _ = s.write_all(&session::encode_join(hog_sessions[i % 4], Some(&k), &nonce)).await;
        held.push(s);
    }
    for _ in 0..hogs / 4 {
        if let Ok(Ok(s)) = tokio::time::timeout(Duration::from_secs(2), TcpStream::connect(addr)).await {
            held.push(s);
        }
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let c = rx.counters();
    assert!(rx.connections() <= 1024, "{} connections", rx.connections());
    // The flood: another session's 8 MiB message in one-byte chunks, as fast as it goes.
    let flood_sid = SessionId::random();
    let flood_size: u64 = 8 << 20;
    let (_flood_control, reason) = open_keyed(addr, flood_sid, &[flood_size], Some(&k)).await;
    assert!(reason.is_empty());
    let flood = tokio::spawn(async move {
        let (mut s, nonce) = connect(addr).await;
        let mut buf = session::encode_join(flood_sid, Some(&k), &nonce);
        let (mut sent, t0) = (0u64, std::time::Instant::now());
        while t0.elapsed() < Duration::from_secs(6) && sent < flood_size {
            for _ in 0..4096 {
                frame::encode(0, sent, flood_size, &[sent as u8], &mut buf);
                sent += 1;
            }
            if s.write_all(&buf).await.is_err() {
                break;
            }
            buf.clear();
        }
        (sent, s)
    });
    tokio::time::sleep(Duration::from_millis(500)).await;
    // The real sender: 10 messages, each arriving.
    let mut scfg = SendConfig::new(Policy::Ranked(Rank::Srpt));
    scfg.key = Some(k);
    scfg.timeout = Duration::from_secs(20);
    let sizes = [1000usize, 50_000, 300_000, 2_000_000, 10, 0, 16_384, 123_456, 700_000, 4_000];
    let t0 = std::time::Instant::now();
    let tx = send_session(addr, scfg, 90, &sizes, Duration::ZERO).await;
    let reports = tokio::time::timeout(Duration::from_secs(40), tx.finish()).await.expect("the sender hung");
    let done = reports.iter().filter(|r| r.error.is_none()).count();
    assert_eq!(done, 10, "{reports:?}");
    let took = t0.elapsed();
    let (flooded, _s) = flood.await.unwrap();
    let c2 = rx.counters();
    let rss_growth = rss_bytes().saturating_sub(rss_before);
    // The receiver's own accounting: the flood's message reserves its size and bookkeeping
    // (one-byte chunks or not), the real messages theirs, nothing else.
    let bound = fctlab_sched_tokio::reserved_for(flood_size)
        + sizes.iter().map(|&n| fctlab_sched_tokio::reserved_for(n as u64)).sum::<u64>();
    assert!(c2.peak_reserved_bytes <= bound, "{c2:?} (bound {bound})");
    assert!(flooded >= 50_000, "the flood sent only {flooded} one-byte chunks");
    // This process holds both ends of every connection and the test's own buffers: under
    // 256 MB more than before, where the flood alone cost 95 B per byte before it was stored
    // in blocks.
    assert!(rss_growth < 256 << 20, "RSS grew by {} MB", rss_growth >> 20);
    // Connections beyond the receiver's 1,024 were closed to make room (not joined in time,
    // else the hog's), and the receiver never held more.
    assert!(c.evicted > 0, "{c:?} {c2:?}");
    let _ = collect(&mut rx, 0, Duration::from_millis(1)).await;
    println!(
        "{hogs} hogging joins, {flooded} one-byte chunks: 10 of 10 messages in {took:?}; RSS +{} MB; {c2:?}",
        rss_growth >> 20
    );
    drop(held);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_session_makes_room_for_a_new_one_and_tables_are_bounded() {
    let cfg = RecvConfig {
        max_sessions: 2,
        idle_session: Duration::from_millis(300),
        max_table_bytes: 1000 * fctlab_sched_tokio::TABLE_BYTES_PER_MESSAGE,
        ..RecvConfig::default()
    };
    let mut rx = Receiver::bind(local(), cfg).await.unwrap();
    let addr = rx.local_addr();
    // Two sessions that hold their slots and send nothing.
    let (_a, r) = open_by_hand(addr, SessionId::random(), &[10; 100]).await;
    let (_b, r2) = open_by_hand(addr, SessionId::random(), &[10; 100]).await;
    assert!(r.is_empty() && r2.is_empty());
    // A table larger than all the room: refused, saying so.
    let (_c, r) = open_by_hand(addr, SessionId::random(), &[10; 1001]).await;
    assert!(String::from_utf8_lossy(&r).contains("no room for a table of 1001 messages"), "{r:?}");
    tokio::time::sleep(Duration::from_millis(400)).await;
    // A real sender gets in: the idle session longest without a frame makes room.
    let tx = send_session(addr, SendConfig::new(Policy::Tcp), 5, &[1000, 20_000], Duration::ZERO).await;
    // (The closed session's 100 messages fail, saying why.)
    let got = collect(&mut rx, 102, Duration::from_secs(10)).await;
    assert!(tx.finish().await.iter().all(|r| r.error.is_none()), "{got:?}");
    assert_eq!(got.iter().filter(|d| matches!(d, Delivery::Message { .. })).count(), 2, "{got:?}");
    assert!(
        got.iter().any(|d| matches!(d, Delivery::Closed { how, .. } if how.contains("to make room for a new one"))),
        "{got:?}"
    );
    assert_eq!(rx.counters().sessions_evicted, 1);
    // The closed session's 100 messages, none of which started: one delivery.
    let unsent: Vec<_> = got.iter().filter(|d| matches!(d, Delivery::Unsent { .. })).collect();
    assert!(
        matches!(unsent[..], [Delivery::Unsent { first: 0, last: 99, error, .. }] if error.contains("none of their bytes arrived when the session was closed to make room")),
        "{unsent:?}"
    );
    assert!(rx.table_bytes() <= 1000 * fctlab_sched_tokio::TABLE_BYTES_PER_MESSAGE);
    // A session's joins are capped at twice its messages and two.
    let sid = SessionId::random();
    let (_d, r) = open_by_hand(addr, sid, &[10]).await;
    assert!(r.is_empty(), "{}", String::from_utf8_lossy(&r));
    let mut joins = Vec::new();
    for _ in 0..6 {
        let mut s = TcpStream::connect(addr).await.unwrap();
        challenge(&mut s).await;
        s.write_all(&joined(sid, &[])).await.unwrap();
        joins.push(s);
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let refused = collect(&mut rx, 1, Duration::from_millis(300)).await;
    let over: Vec<_> = refused
        .iter()
        .filter(|d| matches!(d, Delivery::Refused { error, .. } if error.contains("connections joined, its limit")))
        .collect();
    assert_eq!(over.len(), 2, "{refused:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn half_sent_tables_do_not_keep_a_sender_out() {
    // Room for two tables of 1,000,000 messages; twenty opens announce that many and stop
    // halfway through their tables.
    let _alone = TIMING.lock().await;
    let per_table = 1_000_000 * fctlab_sched_tokio::TABLE_BYTES_PER_MESSAGE;
    let cfg = RecvConfig { max_table_bytes: 2 * per_table + 1000, ..RecvConfig::default() };
    let mut rx = Receiver::bind(local(), cfg).await.unwrap();
    let addr = rx.local_addr();
    let mut stalled = Vec::new();
    for _ in 0..20 {
        let (mut s, nonce) = connect(addr).await;
        let open = session::encode_open(SessionId::random(), &vec![1000u64; 1_000_000], None, &nonce);
        // The preamble, the count and half the sizes; then nothing.
        let _ = tokio::time::timeout(Duration::from_secs(2), s.write_all(&open[..28 + 4_000_000])).await;
        stalled.push(s);
        assert!(rx.table_bytes() <= cfg.max_table_bytes, "{} B of tables", rx.table_bytes());
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(rx.table_bytes() <= cfg.max_table_bytes, "{} B of tables", rx.table_bytes());
    let tx = send_session(addr, SendConfig::new(Policy::Tcp), 8, &[5000, 0, 70_000], Duration::ZERO).await;
    let got = collect(&mut rx, 3, Duration::from_secs(10)).await;
    assert!(tx.finish().await.iter().all(|r| r.error.is_none()), "{got:?}");
    assert!(rx.counters().evicted >= 18, "{:?}", rx.counters());
    drop(stalled);
}
