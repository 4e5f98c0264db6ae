//! The library over loopback: every message arrives byte-identical under every policy, and
//! each fault case fails only the messages it concerns.

use fctlab_sched::{Policy, Rank};
use fctlab_sched_tokio::frame::{self, HEADER_BYTES};
use fctlab_sched_tokio::{Delivery, Receiver, RecvConfig, SendConfig, Sender};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

fn payload(seed: u64, len: usize) -> Vec<u8> {
    fctlab_sched_tokio::pattern(seed, len)
}

fn local() -> SocketAddr {
    "127.0.0.1:0".parse().unwrap()
}

async fn collect(rx: &mut Receiver, n: usize, limit: Duration) -> Vec<Delivery> {
    let mut out = Vec::new();
    while out.len() < n {
        match tokio::time::timeout(limit, rx.next()).await {
            Ok(Some(d)) => out.push(d),
            _ => break,
        }
    }
    out
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
        let mut tx = Sender::new(rx.local_addr(), cfg, 1000);
        let mut want = HashMap::new();
        for (k, &n) in sizes.iter().enumerate() {
            let data = payload(k as u64, n);
            let id = tx.send(data.clone(), (k % 2) as u32);
            want.insert(id, data);
            if k % 3 == 0 {
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
        }
        let got = collect(&mut rx, sizes.len(), Duration::from_secs(20)).await;
        let reports = tx.finish().await;
        assert_eq!(got.len(), sizes.len(), "{policy}: {got:?}");
        for d in got {
            match d {
                Delivery::Message { id, data, .. } => {
                    assert!(want.remove(&id).is_some_and(|w| w == data), "{policy}: message {id} differs")
                }
                Delivery::Error { id, error } => panic!("{policy}: message {id:?}: {error}"),
            }
        }
        assert!(want.is_empty());
        for r in &reports {
            assert!(r.error.is_none() && r.transfer.is_some(), "{policy}: {r:?}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn srpt_delivers_a_small_message_before_a_large_one_sent_first() {
    // 4 MB, then 20 KB a moment later: under SRPT the small one takes the large one's
    // connection's next chunks and completes first; under tcp it shares with it.
    for (policy, small_first) in [(Policy::Ranked(Rank::Srpt), true)] {
        let mut rx = Receiver::bind(local(), RecvConfig::default()).await.unwrap();
        let mut cfg = SendConfig::new(policy);
        cfg.chunk_bytes = 8192;
        cfg.send_buffer_bytes = Some(16 * 1024);
        let mut tx = Sender::new(rx.local_addr(), cfg, 0);
        let big = tx.send(payload(1, 4_000_000), 0);
        tokio::time::sleep(Duration::from_millis(1)).await;
        let small = tx.send(payload(2, 20_000), 0);
        let got = collect(&mut rx, 2, Duration::from_secs(20)).await;
        let order: Vec<u64> = got
            .iter()
            .map(|d| match d {
                Delivery::Message { id, .. } => *id,
                e => panic!("{e:?}"),
            })
            .collect();
        assert_eq!(order[0] == small, small_first, "{policy}: order {order:?} (big {big}, small {small})");
        tx.finish().await;
    }
}

/// Sends raw bytes on one connection and closes it, abruptly (RST) when `reset`.
async fn raw(addr: SocketAddr, bytes: &[u8], reset: bool) {
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(bytes).await.unwrap();
    if reset {
        // Zero linger: the close sends a reset at once (so dropping does not block).
        #[allow(deprecated)]
        s.set_linger(Some(Duration::ZERO)).unwrap();
        drop(s);
    } else {
        s.shutdown().await.unwrap();
        // Keep the socket until the receiver has read it.
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn frame(id: u64, offset: u64, total: u64, chunk: &[u8]) -> Vec<u8> {
    let mut v = Vec::new();
    frame::encode(id, offset, total, chunk, &mut v);
    v
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn faults_fail_their_messages_and_the_others_arrive() {
    let cfg = RecvConfig {
        limits: frame::Limits { max_chunk: 64 * 1024, max_message: 1 << 30 },
        max_buffered_bytes: 1 << 20,
        idle_timeout: Duration::from_millis(300),
    };
    let mut rx = Receiver::bind(local(), cfg).await.unwrap();
    let addr = rx.local_addr();
    let good = payload(9, 1000);
    // 1. a truncated frame: header and half its chunk, then the connection ends
    let f = frame(1, 0, 1000, &good);
    raw(addr, &f[..HEADER_BYTES + 500], false).await;
    // 2. a wrong magic, 3. a wrong version
    let mut f = frame(2, 0, 1000, &good);
    f[0] = b'Z';
    raw(addr, &f, false).await;
    let mut f = frame(3, 0, 1000, &good);
    f[4] = 2;
    raw(addr, &f, false).await;
    // 4. a length beyond the message, 5. offset + length overflowing, 6. a chunk past the limit
    raw(addr, &frame(4, 900, 1000, &good[..200]), false).await;
    let mut f = frame(5, 0, 1000, &good[..10]);
    f[16..24].copy_from_slice(&(u64::MAX - 3).to_be_bytes());
    raw(addr, &f, false).await;
    let mut f = frame(6, 0, 1 << 20, &good[..10]);
    f[24..28].copy_from_slice(&(1u32 << 30).to_be_bytes());
    raw(addr, &f[..HEADER_BYTES], false).await;
    // 7. a declared size of a terabyte (refused, nothing allocated)
    raw(addr, &frame(7, 0, 1 << 40, &good[..10]), false).await;
    // 8. a checksum mismatch
    let mut f = frame(8, 0, 1000, &good);
    f[HEADER_BYTES + 10] ^= 0x40;
    raw(addr, &f, false).await;
    // 9. a connection reset in the middle of a message: its first half, then RST
    raw(addr, &frame(9, 0, 1000, &good[..500]), true).await;
    // 10. a message larger than what the receiver holds for incomplete messages
    let big = payload(10, 60_000);
    let mut f = Vec::new();
    for k in 0..20u64 {
        f.extend(frame(10, k * 60_000, 2_000_000, &big));
    }
    raw(addr, &f, false).await;
    // ...and a good message, whole, after all that
    raw(addr, &frame(11, 0, 1000, &good), false).await;
    let got = collect(&mut rx, 11, Duration::from_secs(5)).await;
    let mut errors: HashMap<Option<u64>, Vec<String>> = HashMap::new();
    let mut delivered = Vec::new();
    for d in got {
        match d {
            Delivery::Message { id, data, .. } => delivered.push((id, data)),
            Delivery::Error { id, error } => errors.entry(id).or_default().push(error),
        }
    }
    assert_eq!(delivered, vec![(11, good.clone())], "errors: {errors:?}");
    let has = |id: Option<u64>, text: &str| errors.get(&id).is_some_and(|v| v.iter().any(|e| e.contains(text)));
    assert!(has(Some(1), "inside a chunk (500 of 1000 B)"), "{errors:?}");
    assert!(has(None, "not a fctlab scheduling frame"), "{errors:?}");
    assert!(has(None, "frame version 2"), "{errors:?}");
    assert!(has(Some(4), "beyond its size"), "{errors:?}");
    assert!(has(Some(5), "beyond its size"), "{errors:?}");
    assert!(has(Some(6), "the limit is 65536 B"), "{errors:?}");
    assert!(has(Some(7), "size 1099511627776 B, the limit"), "{errors:?}");
    assert!(has(Some(8), "checksum mismatch"), "{errors:?}");
    assert!(has(Some(9), "incomplete (500 of 1000 B)"), "{errors:?}");
    assert!(has(Some(10), "the limit is 1048576 B"), "{errors:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_receiver_that_stops_reading_fails_the_messages_in_time() {
    // A listener that accepts and never reads: the sender's writes stall once the socket
    // buffers are full, and the messages fail after the timeout instead of hanging.
    let l = tokio::net::TcpListener::bind(local()).await.unwrap();
    let addr = l.local_addr().unwrap();
    let hold = tokio::spawn(async move {
        let mut keep = Vec::new();
        while let Ok((s, _)) = l.accept().await {
            keep.push(s);
        }
    });
    let mut cfg = SendConfig::new(Policy::Ranked(Rank::Srpt));
    cfg.timeout = Duration::from_millis(500);
    cfg.send_buffer_bytes = Some(16 * 1024);
    let mut tx = Sender::new(addr, cfg, 0);
    tx.send(payload(1, 8_000_000), 0);
    tx.send(payload(2, 100), 0);
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
async fn an_unreachable_receiver_is_a_clear_error() {
    // A port nothing listens on (bound, then closed).
    let addr = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let mut cfg = SendConfig::new(Policy::Tcp);
    cfg.timeout = Duration::from_secs(2);
    let mut tx = Sender::new(addr, cfg, 0);
    tx.send(payload(1, 10), 0);
    let r = tx.finish().await;
    let e = r[0].error.as_deref().unwrap();
    assert!(e.contains(&format!("connecting to {addr}")), "{e}");
}
