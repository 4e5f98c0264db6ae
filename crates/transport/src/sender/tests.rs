//! The sender's behaviour on hand-made ACK sequences.

use super::*;
use crate::cc::newreno::NewRenoConfig;
use crate::cc::CcConfig;
use fctlab_net::SackBlock;

const MSS: u64 = 1000;

fn sender(cwnd_segments: u32) -> TcpSender {
    let cfg = TcpConfig {
        mss_bytes: MSS as u32,
        initial_cwnd_segments: cwnd_segments,
        min_rto: Nanos::from_millis(10),
        ..Default::default()
    };
    TcpSender::new(
        FlowId(0),
        NodeId(0),
        NodeId(1),
        None,
        &cfg,
        CcConfig::NewReno(NewRenoConfig {}).build(&Default::default()),
        false,
    )
}

/// An ACK for `ack` carrying SACK blocks given in segments.
fn ack(s: &mut TcpSender, t_us: u64, ack_seg: u64, blocks: &[(u64, u64)], out: &mut Vec<Packet>) {
    let mut p = Packet { kind: PacketKind::Ack, ack: ack_seg * MSS, ts_echo_ns: 0, ..Default::default() };
    for (i, &(a, b)) in blocks.iter().take(3).enumerate() {
        p.sack[i] = SackBlock { start: a * MSS, end: b * MSS };
    }
    p.sack_len = blocks.len().min(3) as u8;
    s.on_packet(Nanos::from_micros(t_us), &p, out);
}

fn seqs(out: &[Packet]) -> Vec<u64> {
    out.iter().map(|p| p.seq / MSS).collect()
}

#[test]
fn initial_window_then_one_segment_per_ack_in_avoidance() {
    let mut s = sender(10);
    let mut out = Vec::new();
    s.start(Nanos::ZERO, &mut out);
    assert_eq!(seqs(&out), (0..10).collect::<Vec<_>>(), "the initial window, back to back");
    assert!(s.timer_deadline().is_some());
    // Lose segment 0: three SACKed duplicates start recovery (cwnd and ssthresh 5), the
    // ACK of everything sent so far ends it in congestion avoidance.
    out.clear();
    ack(&mut s, 100, 0, &[(1, 2)], &mut out);
    ack(&mut s, 101, 0, &[(1, 3)], &mut out);
    ack(&mut s, 102, 0, &[(1, 4)], &mut out);
    let sent_max = seqs(&out).into_iter().max().unwrap_or(0).max(9);
    out.clear();
    ack(&mut s, 200, sent_max + 1, &[], &mut out);
    assert!(!s.in_recovery(), "{}", s.describe());
    assert_eq!((s.st.cwnd_bytes, s.st.ssthresh_bytes), (5 * MSS, 5 * MSS), "{}", s.describe());
    assert_eq!(out.len(), 5, "a window of new segments after recovery: {:?}", seqs(&out));
    // In avoidance each ACK of one segment releases one new segment, and once per window
    // of acknowledged data (5, then 6 segments) the window grows by one: two go out.
    let mut next_ack = sent_max + 1;
    let mut per_ack = Vec::new();
    for i in 0..22 {
        out.clear();
        next_ack += 1;
        ack(&mut s, 300 + i, next_ack, &[], &mut out);
        per_ack.push(out.len());
    }
    let growth: Vec<usize> = per_ack.iter().enumerate().filter(|(_, &n)| n == 2).map(|(i, _)| i).collect();
    assert!(per_ack.iter().all(|&n| n == 1 || n == 2), "{per_ack:?}");
    assert_eq!(growth.len(), 3, "one extra segment per window: {per_ack:?}");
    assert_eq!((growth[1] - growth[0], growth[2] - growth[1]), (6, 7), "windows of 6 and 7 segments: {per_ack:?}");
    assert_eq!(s.st.cwnd_bytes, 8 * MSS);
}

/// ns-2's `Agent/TCP` defaults (the `ns2` profile): two segments to start, and a loss that
/// leaves fewer than three duplicate ACKs waits for the retransmission timer, which is at
/// least 200 ms and counts whole 10 ms ticks.
#[test]
fn ns2_profile_starts_with_two_segments_and_times_out_without_three_dupacks() {
    let cfg = TcpConfig { handshake: false, ..crate::Profile::Ns2.config() };
    let mss = cfg.mss_bytes as u64;
    let cc = CcConfig::NewReno(NewRenoConfig {}).build(&Default::default());
    let mut s = TcpSender::new(FlowId(0), NodeId(0), NodeId(1), Some(5 * mss), &cfg, cc, false);
    let mut out = Vec::new();
    s.start(Nanos::ZERO, &mut out);
    assert_eq!(out.iter().map(|p| p.seq / mss).collect::<Vec<_>>(), vec![0, 1], "initial window of 2 segments");
    assert_eq!(s.st.ssthresh_bytes, 20 * mss, "ssthresh starts at window_ (20 packets)");
    // Segment 0 is acked after 1 ms (slow start: 2 more), then segment 1 is lost: the two
    // segments after it bring only two duplicate ACKs.
    let ack_at = |s: &mut TcpSender, t_us: u64, seg: u64, out: &mut Vec<Packet>| {
        let p = Packet { kind: PacketKind::Ack, ack: seg * mss, ts_echo_ns: 0, ..Default::default() };
        s.on_packet(Nanos::from_micros(t_us), &p, out);
    };
    out.clear();
    ack_at(&mut s, 1000, 1, &mut out);
    assert_eq!(out.iter().map(|p| p.seq / mss).collect::<Vec<_>>(), vec![2, 3]);
    out.clear();
    ack_at(&mut s, 2000, 1, &mut out);
    ack_at(&mut s, 2001, 1, &mut out);
    assert!(!out.iter().any(|p| p.has(flags::RETX)), "no fast retransmit on two duplicate ACKs");
    let deadline = s.timer_deadline().expect("the timer runs");
    assert!(
        deadline - Nanos::from_micros(1000) >= Nanos::from_millis(200),
        "RTO {deadline} is at least min RTO after the last new ACK"
    );
    assert_eq!(deadline.as_nanos() % 10_000_000, (1_000_000), "RTO of whole 10 ms ticks after the ACK that armed it");
    s.on_timer(deadline, &mut out);
    assert!(out.iter().any(|p| p.has(flags::RETX) && p.seq == mss), "segment 1 is sent again after the timeout");
    assert_eq!((s.timeouts, s.first_timeouts, s.ecn_timeouts), (1, 0, 0), "a data timeout: segment 0 was acknowledged");
}

/// NewReno without SACK (the ns2 profile): with two losses in a window, the partial ACK
/// after the first repair sends the second hole at once, and the duplicate ACKs keep new
/// data flowing (window inflation), so recovery ends without a timeout.
#[test]
fn newreno_without_sack_repairs_two_losses_by_partial_ack() {
    let cfg = TcpConfig {
        mss_bytes: MSS as u32,
        initial_cwnd_segments: 20,
        sack: false,
        tail_loss_probe: false,
        ..Default::default()
    };
    let cc = CcConfig::NewReno(NewRenoConfig {}).build(&Default::default());
    let mut s = TcpSender::new(FlowId(0), NodeId(0), NodeId(1), None, &cfg, cc, false);
    let mut out = Vec::new();
    s.start(Nanos::ZERO, &mut out);
    // Segments 0 and 5 are lost: 18 duplicate ACKs for 0 (from 1-4 and 6-19).
    let mut sent_new = 0;
    for i in 0..18 {
        out.clear();
        ack(&mut s, 100 + i, 0, &[], &mut out);
        sent_new += out.iter().filter(|p| !p.has(flags::RETX)).count();
    }
    assert!(s.in_recovery());
    // cwnd 10 segments, 20 outstanding: new data once more than 10 duplicate ACKs arrived
    assert!((6..=9).contains(&sent_new), "new segments sent on duplicate ACKs: {sent_new} {}", s.describe());
    // The retransmitted 0 arrives: the ACK covers 0..5 (partial), 5 goes out at once.
    out.clear();
    ack(&mut s, 200, 5, &[], &mut out);
    assert_eq!(seqs(&out).first(), Some(&5), "{:?} {}", seqs(&out), s.describe());
    assert!(out[0].has(flags::RETX));
    out.clear();
    let top = s.snd_max / MSS;
    ack(&mut s, 300, top, &[], &mut out);
    assert!(!s.in_recovery());
    assert_eq!((s.timeouts, s.retransmits), (0, 2), "{}", s.describe());
}

#[test]
fn sack_recovery_retransmits_each_hole_once_and_detects_lost_retransmissions() {
    let mut s = sender(20);
    let mut out = Vec::new();
    s.start(Nanos::ZERO, &mut out);
    assert_eq!(out.len(), 20);
    out.clear();
    // Segments 0 and 5 are lost; 1..5 and 6..9 arrive, each producing a dup ACK for 0.
    ack(&mut s, 100, 0, &[(1, 2)], &mut out);
    ack(&mut s, 101, 0, &[(1, 3)], &mut out);
    ack(&mut s, 102, 0, &[(1, 4)], &mut out);
    assert!(s.in_recovery(), "{}", s.describe());
    // cwnd halves to 10 segments; the first hole (segment 0) is retransmitted at once
    let rx: Vec<&Packet> = out.iter().filter(|p| p.has(flags::RETX)).collect();
    assert_eq!(rx.len(), 1);
    assert_eq!(rx[0].seq, 0);
    out.clear();
    ack(&mut s, 103, 0, &[(6, 10), (1, 5)], &mut out);
    // pipe (13 segments) is above cwnd (10): nothing may be sent yet
    assert!(out.is_empty(), "{:?}", seqs(&out));
    ack(&mut s, 103, 0, &[(6, 18), (1, 5)], &mut out);
    // segment 5 is now below the highest SACK: retransmitted once, segment 0 not again
    assert_eq!(seqs(&out).iter().filter(|&&q| q == 5).count(), 1, "{:?}", seqs(&out));
    assert!(!seqs(&out).contains(&0));
    out.clear();
    // More SACKs for data sent after the retransmissions, but not beyond 3 segments past
    // the new-data mark: no retransmission is judged lost yet.
    ack(&mut s, 104, 0, &[(6, 21), (1, 5)], &mut out);
    assert!(!seqs(&out).contains(&0) && !seqs(&out).contains(&5), "{:?}", seqs(&out));
    // SACKs far beyond everything sent after the retransmission of 0: it was lost.
    let hi = s.snd_max / MSS;
    out.clear();
    ack(&mut s, 105, 0, &[(6, hi), (1, 5)], &mut out);
    assert!(hi >= 25);
    assert!(seqs(&out).contains(&0), "segment 0 should be sent again: {:?} {}", seqs(&out), s.describe());
    assert!(seqs(&out).contains(&5), "segment 5 should be sent again: {:?} {}", seqs(&out), s.describe());
    // The cumulative ACK ends recovery at the recovery point.
    out.clear();
    ack(&mut s, 106, hi, &[], &mut out);
    assert!(!s.in_recovery());
    assert_eq!(s.retransmits, 4);
}

#[test]
fn ecn_echo_halves_once_per_window() {
    // Without the CWR hold (ns-2): the window drops at once.
    let cfg = TcpConfig { mss_bytes: MSS as u32, initial_cwnd_segments: 20, cwr: false, ..Default::default() };
    let mut s = TcpSender::new(
        FlowId(0),
        NodeId(0),
        NodeId(1),
        None,
        &cfg,
        CcConfig::NewReno(NewRenoConfig {}).build(&Default::default()),
        true,
    );
    let mut out = Vec::new();
    s.start(Nanos::ZERO, &mut out);
    assert_eq!(out.len(), 20);
    let ece = |s: &mut TcpSender, t_us: u64, ack_seg: u64, out: &mut Vec<Packet>| {
        let mut p = Packet { kind: PacketKind::Ack, ack: ack_seg * MSS, ..Default::default() };
        p.flags |= flags::ECE;
        s.on_packet(Nanos::from_micros(t_us), &p, out);
    };
    ece(&mut s, 100, 2, &mut out);
    // halved to half the flight (18 segments)
    assert_eq!(s.st.cwnd_bytes, 9 * MSS, "{}", s.describe());
    // echoes on ACKs of data sent before the reduction, up to and including the last
    // segment then outstanding (20), are the same congestion: no second halving
    for (i, a) in (4..=20).step_by(2).enumerate() {
        ece(&mut s, 101 + i as u64, a, &mut out);
    }
    assert!(s.st.cwnd_bytes >= 9 * MSS, "halved again: {}", s.describe());
    assert!(s.snd_max > 20 * MSS);
    // an echo for data sent after the reduction is a new congestion event
    let before = s.st.cwnd_bytes;
    ece(&mut s, 200, 21, &mut out);
    assert!(s.st.cwnd_bytes < before, "{}", s.describe());
}

/// Linux's CWR state: after an ECN echo the window never grows until the data outstanding
/// at the echo is acknowledged; proportional rate reduction spreads the sending over that
/// round (about ssthresh/prior_cwnd per segment delivered) and ends at ssthresh.
#[test]
fn ecn_reduction_holds_the_window_until_its_round_ends() {
    use crate::cc::dctcp::DctcpConfig;
    let cfg = TcpConfig {
        mss_bytes: MSS as u32,
        initial_cwnd_segments: 20,
        initial_ssthresh_bytes: Some(20 * MSS),
        ..Default::default()
    };
    assert!(cfg.cwr, "the linux profile holds the window in CWR");
    let dctcp = CcConfig::Dctcp(DctcpConfig { g: 1.0 / 16.0, alpha_init: 1.0 }).build(&Default::default());
    let mut s = TcpSender::new(FlowId(0), NodeId(0), NodeId(1), None, &cfg, dctcp, true);
    let mut out = Vec::new();
    s.start(Nanos::ZERO, &mut out);
    assert_eq!(out.len(), 20);
    let ack_at = |s: &mut TcpSender, t_us: u64, seg: u64, ece: bool, out: &mut Vec<Packet>| {
        let mut p = Packet { kind: PacketKind::Ack, ack: seg * MSS, ts_echo_ns: 0, ..Default::default() };
        if ece {
            p.flags |= flags::ECE;
            p.ce_bytes_echo = MSS as u32;
        }
        s.on_packet(Nanos::from_micros(t_us), &p, out);
    };
    // The first ACK echoes a mark: alpha 1 halves the window's target to 10 segments.
    out.clear();
    ack_at(&mut s, 100, 1, true, &mut out);
    assert!(s.in_cwr());
    let high_seq = s.cwr.unwrap().high_seq / MSS;
    assert_eq!(s.st.ssthresh_bytes, 10 * MSS, "{}", s.describe());
    let mut sent = out.len();
    let mut cwnds = vec![s.st.cwnd_bytes];
    // Every segment outstanding at the echo is acknowledged, one ACK each, no new marks.
    for seg in 2..=high_seq {
        out.clear();
        ack_at(&mut s, 100 + seg, seg, false, &mut out);
        sent += out.len();
        if s.in_cwr() {
            cwnds.push(s.st.cwnd_bytes);
        }
    }
    assert!(cwnds.windows(2).all(|w| w[1] <= w[0]), "the window grew during CWR: {cwnds:?}");
    assert!(s.in_cwr(), "CWR lasts while snd_una has not passed {high_seq}: {}", s.describe());
    // PRR: over the round about ssthresh/prior = 1/2 of the delivered segments were sent,
    // not a burst at the end.
    assert!((9..=11).contains(&sent), "{sent} segments sent in the reduction's round");
    // The next ACK passes high_seq: CWR ends at ssthresh and growth resumes.
    out.clear();
    ack_at(&mut s, 200, high_seq + 1, false, &mut out);
    assert!(!s.in_cwr());
    assert!(s.st.cwnd_bytes >= 10 * MSS && s.st.cwnd_bytes < 11 * MSS, "{}", s.describe());
}

/// ATCP under CWR, one halving per congestion episode (the kernel ATCP's rule): an echo
/// for data sent during the reduction's round, arriving after CWR ended, starts a new CWR
/// round with the window kept (ssthresh = cwnd); the next echo for later data halves. With
/// `halving = "per-window"` the same echo halves a second time.
#[test]
fn atcp_halves_once_per_episode_under_cwr() {
    use crate::cc::atcp::{AtcpConfig, Halving, WeightFunction};
    let run = |halving: Halving| {
        let cfg = TcpConfig {
            mss_bytes: MSS as u32,
            initial_cwnd_segments: 20,
            initial_ssthresh_bytes: Some(20 * MSS),
            ..Default::default()
        };
        assert!(cfg.cwr);
        let atcp = CcConfig::Atcp(AtcpConfig { function: WeightFunction::Fixed { weight: 1.0 }, halving })
            .build(&Default::default());
        let mut s = TcpSender::new(FlowId(0), NodeId(0), NodeId(1), None, &cfg, atcp, true);
        let mut out = Vec::new();
        s.start(Nanos::ZERO, &mut out);
        let mut t = 100;
        let mut ack_at = |s: &mut TcpSender, seg: u64, ece: bool| {
            let mut p = Packet { kind: PacketKind::Ack, ack: seg * MSS, ts_echo_ns: 0, ..Default::default() };
            if ece {
                p.flags |= flags::ECE;
                p.ce_bytes_echo = MSS as u32;
            }
            t += 1;
            s.on_packet(Nanos::from_micros(t), &p, &mut Vec::new());
        };
        // A mark on the first window: half the flight (19 segments), CWR until 20 is passed.
        ack_at(&mut s, 1, true);
        assert!(s.in_cwr());
        let first = s.st.ssthresh_bytes;
        assert_eq!(first, 9500, "{}", s.describe());
        for seg in 2..=20 {
            ack_at(&mut s, seg, false);
        }
        ack_at(&mut s, 21, false);
        assert!(!s.in_cwr(), "{}", s.describe());
        assert_eq!(s.st.cwnd_bytes, first);
        // PRR kept sending during the round: segments 20.. went out before CWR ended.
        let ended_at = s.snd_nxt / MSS;
        assert!(ended_at >= 28, "{}", s.describe());
        // An echo for one of them (sent before the reduction ended).
        ack_at(&mut s, 22, true);
        assert!(s.in_cwr(), "any echo outside CWR starts CWR: {}", s.describe());
        let second = s.st.ssthresh_bytes;
        // Its round passes without growth; then data sent after it is marked.
        let high = s.cwr.unwrap().high_seq / MSS;
        for seg in 23..=high + 1 {
            ack_at(&mut s, seg, false);
        }
        assert!(!s.in_cwr());
        assert!(s.snd_una / MSS > ended_at);
        ack_at(&mut s, high + 2, true);
        (first, second, s.st.ssthresh_bytes)
    };
    let (first, second, third) = run(Halving::PerEpisode);
    assert_eq!(second, first, "the echo for the reduction's own packets keeps the window");
    assert!(third < 6 * MSS, "a later echo halves: {third}");
    let (first, second, _) = run(Halving::PerWindow);
    assert!(second < 6 * MSS, "per window, the same echo halves again: {first} -> {second}");
}

/// Tail loss probe (linux profile): a flow whose last segments are lost sends a probe about
/// two round trips after its last transmission and recovers by SACK, far before the RTO.
#[test]
fn lost_tail_is_recovered_by_a_probe_before_the_rto() {
    let cfg = TcpConfig { mss_bytes: MSS as u32, initial_cwnd_segments: 10, ..Default::default() };
    let cc = CcConfig::NewReno(NewRenoConfig {}).build(&Default::default());
    let mut s = TcpSender::new(FlowId(0), NodeId(0), NodeId(1), Some(10 * MSS), &cfg, cc, false);
    let mut out = Vec::new();
    s.start(Nanos::ZERO, &mut out);
    assert_eq!(out.len(), 10);
    // Segments 0..7 arrive (RTT 100 us); 7, 8 and 9 are lost.
    for seg in 1..=7u64 {
        out.clear();
        let p = Packet { kind: PacketKind::Ack, ack: seg * MSS, ts_echo_ns: 0, ..Default::default() };
        s.on_packet(Nanos::from_micros(100), &p, &mut out);
        assert!(out.is_empty());
    }
    let due = s.timer_deadline().expect("a timer runs");
    let rto_due = Nanos::from_micros(100) + Nanos::from_millis(200);
    assert!(due <= Nanos::from_micros(100 + 2 * 100) + probe::PROBE_SLACK, "probe due at {due}");
    out.clear();
    s.on_timer(due, &mut out);
    assert_eq!((out.len(), out[0].seq / MSS, s.probes), (1, 9, 1), "the probe resends the last segment");
    // The probe arrives: its ACK SACKs segment 9, and RACK judges 7 and 8 lost.
    out.clear();
    let mut p = Packet { kind: PacketKind::Ack, ack: 7 * MSS, ts_echo_ns: due.as_nanos(), ..Default::default() };
    p.sack[0] = SackBlock { start: 9 * MSS, end: 10 * MSS };
    p.sack_len = 1;
    let t = due + Nanos::from_micros(100);
    s.on_packet(t, &p, &mut out);
    assert!(s.in_recovery(), "{}", s.describe());
    assert_eq!(seqs(&out), vec![7, 8], "both holes retransmitted at once");
    out.clear();
    let p = Packet { kind: PacketKind::Ack, ack: 10 * MSS, ts_echo_ns: t.as_nanos(), ..Default::default() };
    let done = t + Nanos::from_micros(100);
    s.on_packet(done, &p, &mut out);
    assert!(s.is_complete());
    assert_eq!(s.timeouts, 0);
    assert!(done < rto_due.div(10), "recovered at {done}, the RTO was due at {rto_due}");

    // Without the probe (ns-2 has none) the same loss waits for the timeout.
    let cfg = TcpConfig { tail_loss_probe: false, ..cfg };
    let cc = CcConfig::NewReno(NewRenoConfig {}).build(&Default::default());
    let mut s = TcpSender::new(FlowId(0), NodeId(0), NodeId(1), Some(10 * MSS), &cfg, cc, false);
    s.start(Nanos::ZERO, &mut out);
    for seg in 1..=7u64 {
        let p = Packet { kind: PacketKind::Ack, ack: seg * MSS, ts_echo_ns: 0, ..Default::default() };
        s.on_packet(Nanos::from_micros(100), &p, &mut out);
    }
    assert_eq!(s.timer_deadline(), Some(rto_due));
}

/// The ns2 profile with SACK (ns-2's `Agent/TCP/Sack1`), no handshake, a large receiver
/// window and an initial window of 20 segments.
fn ns2_sack1(size: Option<u64>) -> TcpSender {
    let cfg = TcpConfig {
        sack: true,
        handshake: false,
        initial_cwnd_segments: 20,
        rwnd_bytes: 100 * MSS,
        initial_ssthresh_bytes: Some(100 * MSS),
        ..crate::Profile::Ns2.config()
    };
    assert_eq!(cfg.mss_bytes as u64, MSS);
    TcpSender::new(
        FlowId(0),
        NodeId(0),
        NodeId(1),
        size,
        &cfg,
        CcConfig::NewReno(NewRenoConfig {}).build(&Default::default()),
        false,
    )
}

/// Sack1 recovery: pipe_ counted in packets, each hole below the highest SACK sent once,
/// new data past the holes while pipe_ < cwnd_, and a lost retransmission left to the
/// retransmission timer (ns-2 has no lost-retransmission detection).
#[test]
fn sack1_lost_retransmission_waits_for_the_timer_while_new_data_flows() {
    let mut s = ns2_sack1(None);
    let mut out = Vec::new();
    s.start(Nanos::ZERO, &mut out);
    assert_eq!(seqs(&out), (0..20).collect::<Vec<_>>());
    out.clear();
    ack(&mut s, 100, 1, &[], &mut out); // slow start: 20, 21
    assert_eq!(seqs(&out), vec![20, 21]);
    // Segments 1 and 5 are lost. Two duplicate ACKs: one new segment each (singledup).
    out.clear();
    ack(&mut s, 101, 1, &[(2, 3)], &mut out);
    ack(&mut s, 102, 1, &[(2, 4)], &mut out);
    assert_eq!(seqs(&out), vec![22, 23]);
    // The third: fast retransmit of 1; pipe_ = 23 outstanding - 3 = 20 > cwnd_ 10.5.
    out.clear();
    ack(&mut s, 103, 1, &[(2, 5)], &mut out);
    assert!(s.in_recovery());
    assert_eq!(seqs(&out), vec![1]);
    assert_eq!((s.st.cwnd_bytes, s.st.ssthresh_bytes), (10_500, 10 * MSS), "half of 21 segments");
    // Segments 6..=23 arrive, each ACK takes one packet out of pipe_: from pipe_ 20 down
    // to 9, then one packet per ACK: hole 5 first, then new data.
    let mut sent = Vec::new();
    for k in 6..=23u64 {
        out.clear();
        ack(&mut s, 104 + k, 1, &[(6, k + 1), (2, 5)], &mut out);
        sent.extend(seqs(&out));
    }
    assert_eq!(sent.iter().filter(|&&q| q == 5).count(), 1, "{sent:?}");
    assert_eq!(sent[0], 5, "the hole goes first: {sent:?}");
    assert!(!sent.contains(&1), "1 was retransmitted already: {sent:?}");
    assert_eq!(sent[1..], (24..24 + sent.len() as u64 - 1).collect::<Vec<_>>(), "then new data: {sent:?}");
    // The retransmission of 1 is lost; 5 and the new data arrive. SACKs far beyond the
    // retransmission do not send 1 again: new data keeps flowing, within pipe_ < cwnd_.
    let top = s.snd_max / MSS;
    let deadline = s.timer_deadline().expect("the timer runs");
    let mut more = Vec::new();
    for k in 24..top {
        out.clear();
        ack(&mut s, 200 + k, 1, &[(2, k + 1)], &mut out);
        more.extend(seqs(&out));
    }
    assert!(!more.contains(&1) && !more.is_empty(), "{more:?}");
    assert!(more.iter().all(|&q| q >= top), "only new data: {more:?}");
    assert_eq!(s.retransmits, 2);
    assert_eq!(s.timer_deadline(), Some(deadline), "duplicate ACKs do not restart the timer");
    out.clear();
    s.on_timer(deadline, &mut out);
    assert_eq!((seqs(&out), s.timeouts), (vec![1], 1), "the timer repairs the lost retransmission");
    assert_eq!((s.first_timeouts, s.ecn_timeouts), (0, 0), "after a loss recovery: a data timeout");
    assert!(!s.in_recovery());
}

/// Sack1 ends recovery at the recovery point with the window the halving left (no
/// deflation to ssthresh), and a first data packet lost without a handshake cannot be
/// fast-retransmitted (ns-2's `highest_ack_ > recover_` test with `recover_` = 0).
#[test]
fn sack1_recovery_ends_at_the_recovery_point_and_the_first_packet_needs_the_timer() {
    let mut s = ns2_sack1(None);
    let mut out = Vec::new();
    s.start(Nanos::ZERO, &mut out);
    out.clear();
    for k in 1..=5u64 {
        ack(&mut s, 100 + k, 0, &[(1, k + 1)], &mut out);
    }
    assert!(!s.in_recovery(), "{}", s.describe());
    assert!(!seqs(&out).contains(&0));
    let mut s = ns2_sack1(None);
    s.start(Nanos::ZERO, &mut out);
    ack(&mut s, 100, 1, &[], &mut out);
    for k in 2..=4u64 {
        ack(&mut s, 100 + k, 1, &[(2, k + 1)], &mut out);
    }
    assert!(s.in_recovery());
    let cwnd = s.st.cwnd_bytes;
    let top = s.snd_max / MSS;
    ack(&mut s, 200, top, &[], &mut out);
    assert!(!s.in_recovery());
    assert_eq!(s.st.cwnd_bytes, cwnd, "cwnd_ stays at half the window");
}

/// ns-2's `singledup_`: the first two duplicate ACKs each send one new segment, if it fits
/// in cwnd plus the duplicate ACKs (TcpAgent::send_one), without SACK as with it.
#[test]
fn singledup_sends_one_new_segment_per_early_duplicate_ack() {
    for singledup in [true, false] {
        let cfg = TcpConfig { handshake: false, initial_cwnd_segments: 4, singledup, ..crate::Profile::Ns2.config() };
        let cc = CcConfig::NewReno(NewRenoConfig {}).build(&Default::default());
        let mut s = TcpSender::new(FlowId(0), NodeId(0), NodeId(1), None, &cfg, cc, false);
        let mut out = Vec::new();
        s.start(Nanos::ZERO, &mut out);
        ack(&mut s, 100, 1, &[], &mut out); // cwnd 5: segments 4, 5
        out.clear();
        // Segment 1 is lost: 2, 3 and 4 bring duplicate ACKs.
        ack(&mut s, 101, 1, &[], &mut out);
        let first = seqs(&out);
        out.clear();
        ack(&mut s, 102, 1, &[], &mut out);
        let second = seqs(&out);
        if singledup {
            assert_eq!((first, second), (vec![6], vec![7]), "one new segment per duplicate ACK");
        } else {
            assert!(first.is_empty() && second.is_empty());
        }
        out.clear();
        ack(&mut s, 103, 1, &[], &mut out);
        assert!(s.in_recovery());
        assert_eq!(seqs(&out)[0], 1, "fast retransmit on the third");
    }
    // The window test: 5 outstanding, cwnd 4 (+1 per duplicate ACK): the first duplicate
    // ACK may not send (6 > 4 + 1), the second may (6 <= 4 + 2).
    let cfg = TcpConfig { handshake: false, initial_cwnd_segments: 5, ..crate::Profile::Ns2.config() };
    let mut out = Vec::new();
    let mut s2 = TcpSender::new(
        FlowId(0),
        NodeId(0),
        NodeId(1),
        None,
        &cfg,
        CcConfig::NewReno(NewRenoConfig {}).build(&Default::default()),
        false,
    );
    s2.start(Nanos::ZERO, &mut out);
    assert_eq!(s2.snd_max, 5 * MSS);
    s2.set_cwnd_segments(4.0);
    out.clear();
    ack(&mut s2, 101, 0, &[], &mut out);
    assert!(out.is_empty(), "5 + 1 > 4 + 1: {:?}", seqs(&out));
    ack(&mut s2, 102, 0, &[], &mut out);
    assert_eq!(seqs(&out), vec![5], "5 + 1 <= 4 + 2");
}

/// ns-2.35's `Agent/TCP/Newreno` as the ns2 profile has it, without handshake.
fn ns2_newreno(initial_cwnd: u32) -> TcpSender {
    let cfg = TcpConfig { handshake: false, initial_cwnd_segments: initial_cwnd, ..crate::Profile::Ns2.config() };
    TcpSender::new(
        FlowId(0),
        NodeId(0),
        NodeId(1),
        None,
        &cfg,
        CcConfig::NewReno(NewRenoConfig {}).build(&Default::default()),
        false,
    )
}

/// `window_model = "ns2"`: opencwnd() (+1 in slow start, increase_num_ / cwnd_ after,
/// ATCP's weight as increase_num_), int(cwnd_) whole segments sent, and slowdown()
/// halving windowd() = min(cwnd_, window_) on a loss and a timeout, not the flight.
#[test]
fn ns2_window_opens_by_increase_over_cwnd_and_halves_min_of_cwnd_and_window() {
    let mut s = ns2_newreno(2);
    let mut out = Vec::new();
    s.start(Nanos::ZERO, &mut out);
    ack(&mut s, 100, 1, &[], &mut out);
    assert_eq!(s.ns2.cwnd, 3.0, "slow start: +1");
    s.st.ssthresh_bytes = 4 * MSS;
    s.set_cwnd_segments(4.5);
    out.clear();
    ack(&mut s, 200, 2, &[], &mut out);
    assert_eq!(s.ns2.cwnd, 4.5 + 1.0 / 4.5, "congestion avoidance: +1/cwnd");
    assert_eq!(seqs(&out), vec![4, 5], "int(4.72) = 4 segments outstanding");
    // cwnd_ above window_ (20): a loss halves min(cwnd_, window_), whatever is in flight.
    s.set_cwnd_segments(30.0);
    for t in 0..3 {
        ack(&mut s, 300 + t, 2, &[], &mut out);
    }
    assert!(s.in_recovery());
    assert_eq!((s.ns2.cwnd, s.st.ssthresh_bytes), (10.0, 10 * MSS), "{}", s.describe());
    // A timeout: ssthresh_ = int(min(cwnd_, window_) / 2), cwnd_ = 1.
    s.set_cwnd_segments(9.5);
    let t = s.timer_deadline().unwrap();
    s.on_timer(t, &mut out);
    assert_eq!((s.ns2.cwnd, s.st.ssthresh_bytes), (1.0, 4 * MSS));
    // ATCP's weight enters as increase_num_.
    let cfg = TcpConfig { handshake: false, ..crate::Profile::Ns2.config() };
    let atcp = crate::cc::atcp::AtcpConfig {
        function: crate::cc::atcp::WeightFunction::Fixed { weight: 2.0 },
        halving: Default::default(),
    };
    let mut a = TcpSender::new(
        FlowId(0),
        NodeId(0),
        NodeId(1),
        None,
        &cfg,
        CcConfig::Atcp(atcp).build(&Default::default()),
        false,
    );
    a.start(Nanos::ZERO, &mut out);
    a.st.ssthresh_bytes = 2 * MSS;
    a.set_cwnd_segments(4.0);
    ack(&mut a, 100, 1, &[], &mut out);
    assert_eq!(a.ns2.cwnd, 4.5, "+ weight / cwnd");
}

/// `rto_model = "ns2"`: the backoff of a timeout stays until a segment first sent after
/// it is acknowledged (newack(): rtt_active_ and seqno >= rtt_seq_), not on the first
/// new ACK; RTT samples come from the one timed segment.
#[test]
fn ns2_backoff_is_kept_until_the_timed_segment_is_acknowledged() {
    let mut s = ns2_newreno(2);
    let mut out = Vec::new();
    s.start(Nanos::ZERO, &mut out); // 0 and 1, 0 timed
    ack(&mut s, 30_000, 1, &[], &mut out); // 3 ticks: RTO max(90 ms, minrto_ 200 ms)
    assert_eq!(s.rtt.rto(), Nanos::from_millis(200));
    assert_eq!(s.ns2.timed.map(|t| t.0), Some(3 * MSS), "segment 2, the first sent untimed, is timed");
    let t = s.timer_deadline().unwrap();
    out.clear();
    s.on_timer(t, &mut out);
    assert_eq!((s.backoff, seqs(&out)), (1, vec![1]));
    assert!(s.ns2.timed.is_none());
    // The retransmission is acknowledged: the backoff stays (RFC 6298 would end it).
    let t1 = t + Nanos::from_millis(30);
    out.clear();
    s.on_packet(t1, &Packet { kind: PacketKind::Ack, ack: 2 * MSS, ..Default::default() }, &mut out);
    assert_eq!(s.backoff, 1);
    assert_eq!(s.timer_deadline(), Some(t1 + Nanos::from_millis(400)));
    assert_eq!(seqs(&out), vec![2, 3], "resent from the timeout: not timed");
    ack(&mut s, (t1.as_nanos() / 1000) + 10_000, 4, &[], &mut out);
    assert_eq!(s.backoff, 1, "still no segment sent after the timeout acknowledged");
    let timed_end = s.ns2.timed.map(|t| t.0).unwrap();
    assert_eq!(timed_end, 5 * MSS, "segment 4, the first new one, is timed");
    ack(&mut s, (t1.as_nanos() / 1000) + 20_000, 5, &[], &mut out);
    assert_eq!(s.backoff, 0, "the timed segment is acknowledged");
}

/// `newreno_recovery = "ns2"`: a partial ACK that acknowledges more packets than dupwnd_
/// shrinks cwnd_ (partial_window_deflation_), recovery ends with cwnd_ kept and opened,
/// and an ACK at the recovery point exactly allows no new fast retransmit.
#[test]
fn ns2_newreno_deflates_the_window_and_needs_an_ack_beyond_the_recovery_point() {
    let mut s = ns2_newreno(10);
    let mut out = Vec::new();
    s.start(Nanos::ZERO, &mut out);
    ack(&mut s, 100, 1, &[], &mut out); // cwnd 11: 1..=11 outstanding
    for t in 0..3 {
        ack(&mut s, 200 + t, 1, &[], &mut out); // singledup sends 12 and 13, then the fast retransmit
    }
    assert!(s.in_recovery());
    assert_eq!(s.rec.recover, 14 * MSS);
    assert_eq!((s.ns2.cwnd, s.st.ssthresh_bytes), (5.5, 5 * MSS));
    ack(&mut s, 300, 1, &[], &mut out); // dupwnd_ 4
    out.clear();
    // 7 packets acknowledged, dupwnd_ 4: cwnd_ -= 3, dupwnd_ = 1; 8 goes out at once.
    ack(&mut s, 400, 8, &[], &mut out);
    assert_eq!((s.ns2.cwnd, s.rec.dupacks), (2.5, 1), "{}", s.describe());
    assert_eq!(seqs(&out), vec![8]);
    ack(&mut s, 500, 14, &[], &mut out);
    assert!(!s.in_recovery());
    assert_eq!(s.ns2.cwnd, 3.5, "kept, then opened by one (below ssthresh_)");
    assert!(s.snd_max > 14 * MSS);
    for t in 0..3 {
        ack(&mut s, 600 + t, 14, &[], &mut out);
    }
    assert!(!s.in_recovery(), "highest_ack_ == recover_: no fast retransmit");
}

/// `whole_packets`: a flow of 2500 B with 1000 B segments sends three full segments and is
/// complete only when the third is acknowledged.
#[test]
fn whole_packets_rounds_a_flow_up_to_full_segments() {
    for whole_packets in [true, false] {
        let cfg = TcpConfig { handshake: false, whole_packets, ..crate::Profile::Ns2.config() };
        let cc = CcConfig::NewReno(NewRenoConfig {}).build(&Default::default());
        let mut s = TcpSender::new(FlowId(0), NodeId(0), NodeId(1), Some(2500), &cfg, cc, false);
        let mut out = Vec::new();
        s.start(Nanos::ZERO, &mut out);
        ack(&mut s, 100, 2, &[], &mut out);
        let last = out.last().unwrap();
        assert_eq!((last.seq, last.payload_bytes), (2000, if whole_packets { 1000 } else { 500 }));
        let p = Packet { kind: PacketKind::Ack, ack: 2500, ..Default::default() };
        s.on_packet(Nanos::from_micros(200), &p, &mut out);
        assert_eq!(s.is_complete(), !whole_packets);
        let p = Packet { kind: PacketKind::Ack, ack: 3000, ..Default::default() };
        s.on_packet(Nanos::from_micros(300), &p, &mut out);
        assert!(s.is_complete());
    }
}

/// ns-2's ECN reaction (`TcpAgent::ecn()`, `slowdown()` with `precisionReduce_`): the
/// window halves exactly, with no floor of two segments (one segment at least, ssthresh
/// two), once per window; ACKs with ECN-Echo do not open the window; ns-2's integer
/// window sends one segment at a window of 1.5; the first data packet is not ECT.
#[test]
fn ns2_ecn_reaction_halves_the_window_without_a_two_segment_floor() {
    let cfg = TcpConfig { handshake: false, initial_cwnd_segments: 3, ecn: true, ..crate::Profile::Ns2.config() };
    let cc = CcConfig::NewReno(NewRenoConfig {}).build(&Default::default());
    let mut s = TcpSender::new(FlowId(0), NodeId(0), NodeId(1), None, &cfg, cc, true);
    let mut out = Vec::new();
    s.start(Nanos::ZERO, &mut out);
    assert_eq!(seqs(&out), vec![0, 1, 2]);
    assert!(!out[0].has(flags::ECT) && out[1].has(flags::ECT) && out[2].has(flags::ECT), "seqno 0 is not ECN-capable");
    let ece = |s: &mut TcpSender, t_us: u64, seg: u64, out: &mut Vec<Packet>| {
        let mut p = Packet { kind: PacketKind::Ack, ack: seg * MSS, ts_echo_ns: 0, ..Default::default() };
        p.flags |= flags::ECE;
        p.ce_bytes_echo = MSS as u32;
        s.on_packet(Nanos::from_micros(t_us), &p, out);
    };
    out.clear();
    ece(&mut s, 100, 1, &mut out);
    assert_eq!((s.st.cwnd_bytes, s.st.ssthresh_bytes), (1500, 2 * MSS), "3 segments halve to 1.5, ssthresh 2");
    assert!(out.is_empty(), "2 outstanding, window 1: {:?}", seqs(&out));
    // The rest of the window: the echo repeats (same congestion), no growth, no new cut.
    ece(&mut s, 101, 2, &mut out);
    assert!(out.is_empty());
    ece(&mut s, 102, 3, &mut out);
    assert_eq!(s.st.cwnd_bytes, 1500);
    assert_eq!(seqs(&out), vec![3], "one segment at a time (int window 1)");
    // An echo for the segment sent after the reduction: halved again, down to one segment.
    out.clear();
    ece(&mut s, 200, 4, &mut out);
    assert_eq!((s.st.cwnd_bytes, s.st.ssthresh_bytes), (MSS, 2 * MSS));
    assert_eq!(seqs(&out), vec![4]);
    out.clear();
    ece(&mut s, 300, 5, &mut out);
    assert_eq!(s.st.cwnd_bytes, MSS, "at one segment the window stays one segment");
    // Its last cut was by an echo: a timeout now is counted as one after marks.
    let d = s.timer_deadline().expect("a segment is outstanding");
    s.on_timer(d, &mut out);
    assert_eq!((s.timeouts, s.first_timeouts, s.ecn_timeouts), (1, 0, 1));
    // The retransmission of seqno 0 after a timeout is not ECT either.
    let cfg = TcpConfig { handshake: false, ecn: true, ..crate::Profile::Ns2.config() };
    let mut s = TcpSender::new(
        FlowId(0),
        NodeId(0),
        NodeId(1),
        None,
        &cfg,
        CcConfig::NewReno(NewRenoConfig {}).build(&Default::default()),
        true,
    );
    s.start(Nanos::ZERO, &mut out);
    out.clear();
    let d = s.timer_deadline().unwrap();
    s.on_timer(d, &mut out);
    assert_eq!(seqs(&out), vec![0]);
    assert!(!out[0].has(flags::ECT));
    // With a handshake seqno 0 is the SYN: every data packet is ECT.
    let cfg = TcpConfig { ecn: true, ..crate::Profile::Ns2.config() };
    let mut s = TcpSender::new(
        FlowId(0),
        NodeId(0),
        NodeId(1),
        None,
        &cfg,
        CcConfig::NewReno(NewRenoConfig {}).build(&Default::default()),
        true,
    );
    s.start(Nanos::ZERO, &mut out);
    out.clear();
    let p = Packet { kind: PacketKind::SynAck, ..Default::default() };
    s.on_packet(Nanos::from_micros(10), &p, &mut out);
    assert!(out.iter().all(|p| p.has(flags::ECT)) && !out.is_empty());
}

/// Timeouts by cause: of the SYN; after a window cut by an ECN echo (the RFC 3168 path
/// as DCTCP and the linux profile take it); after a loss recovery that followed such a cut.
#[test]
fn timeouts_are_counted_by_cause() {
    let cfg = TcpConfig {
        mss_bytes: MSS as u32,
        handshake: true,
        ecn: true,
        tail_loss_probe: false,
        min_rto: Nanos::from_millis(10),
        ..Default::default()
    };
    let new = || {
        TcpSender::new(
            FlowId(0),
            NodeId(0),
            NodeId(1),
            None,
            &cfg,
            CcConfig::NewReno(NewRenoConfig {}).build(&Default::default()),
            true,
        )
    };
    let echo = |s: &mut TcpSender, t: Nanos, seg: u64, out: &mut Vec<Packet>| {
        let mut p = Packet { kind: PacketKind::Ack, ack: seg * MSS, ts_echo_ns: 0, ..Default::default() };
        p.flags |= flags::ECE;
        p.ce_bytes_echo = MSS as u32;
        s.on_packet(t, &p, out);
    };
    let mut out = Vec::new();
    let mut s = new();
    s.start(Nanos::ZERO, &mut out);
    let d = s.timer_deadline().unwrap();
    s.on_timer(d, &mut out);
    assert_eq!((s.timeouts, s.first_timeouts, s.ecn_timeouts), (1, 1, 0), "the SYN's timeout");
    out.clear();
    let t = d + Nanos::from_millis(1);
    s.on_packet(t, &Packet { kind: PacketKind::SynAck, ..Default::default() }, &mut out);
    assert!(seqs(&out).len() > 4, "{:?}", seqs(&out));
    // Segment 0 acknowledged with an echo: the window is cut by the mark.
    echo(&mut s, t + Nanos::from_micros(100), 1, &mut out);
    let d = s.timer_deadline().unwrap();
    s.on_timer(d, &mut out);
    assert_eq!((s.timeouts, s.first_timeouts, s.ecn_timeouts), (2, 1, 1), "after a cut by an echo");
    // A cut by an echo, then three duplicate ACKs: the loss recovery is the last cut.
    let mut s = new();
    out.clear();
    s.start(Nanos::ZERO, &mut out);
    s.on_packet(Nanos::from_micros(50), &Packet { kind: PacketKind::SynAck, ..Default::default() }, &mut out);
    echo(&mut s, Nanos::from_micros(100), 1, &mut out);
    for k in 0..3 {
        ack(&mut s, 110 + k, 1, &[(2, 3 + k)], &mut out);
    }
    assert!(s.in_recovery(), "{}", s.describe());
    let d = s.timer_deadline().unwrap();
    s.on_timer(d, &mut out);
    assert_eq!((s.timeouts, s.first_timeouts, s.ecn_timeouts), (1, 0, 0), "a data timeout after a loss recovery");
}

#[test]
fn timeout_goes_back_to_one_segment() {
    let mut s = sender(10);
    let mut out = Vec::new();
    s.start(Nanos::ZERO, &mut out);
    out.clear();
    let d = s.timer_deadline().unwrap();
    s.on_timer(d, &mut out);
    assert_eq!(seqs(&out), vec![0]);
    assert_eq!((s.timeouts, s.first_timeouts), (1, 1), "nothing acknowledged yet: the first window's timeout");
    assert_eq!(s.st.cwnd_bytes, MSS);
    // backed off: twice the timeout
    assert_eq!(s.timer_deadline().unwrap() - d, Nanos::from_millis(2000).min(d.mul(2)));
}

/// pFabric's sender: it starts at its initial window, and after `pfabric_probe_after`
/// consecutive timeouts it resends one byte per timeout (probe mode) until an ACK answers;
/// then it slow-starts from one segment. No duplicate ACKs or SACKs start a repair.
#[test]
fn pfabric_probes_with_one_byte_after_five_timeouts_and_slow_starts_when_answered() {
    use crate::cc::pfabric::PFabricConfig;
    let cfg = TcpConfig { mss_bytes: MSS as u32, ..Default::default() };
    let cc = CcConfig::PFabric(PFabricConfig::default()).build(&Default::default());
    let mut s = TcpSender::new(FlowId(0), NodeId(0), NodeId(1), Some(100 * MSS), &cfg, cc, false);
    let mut out = Vec::new();
    s.start(Nanos::ZERO, &mut out);
    assert_eq!(out.len(), 12, "one bandwidth-delay product at once");
    // Segments 1.. arrive, segment 0 is lost: SACKs of many segments start no fast retransmit.
    out.clear();
    for i in 2..=11 {
        ack(&mut s, 10 + i, 0, &[(1, i)], &mut out);
    }
    assert!(out.iter().all(|p| p.seq >= 12 * MSS), "no retransmission before the timeout: {:?}", seqs(&out));
    // Every packet is dropped from now on: five timeouts resend a full segment, 45 us apart.
    let mut sizes = Vec::new();
    for _ in 0..7 {
        let t = s.timer_deadline().expect("a timer");
        out.clear();
        s.on_timer(t, &mut out);
        sizes.push(out.iter().map(|p| p.payload_bytes).collect::<Vec<_>>());
    }
    assert_eq!(sizes[..5], vec![vec![MSS as u32]; 5], "{sizes:?}");
    assert_eq!(sizes[5..], vec![vec![1u32]; 2], "then one byte per timeout: {sizes:?}");
    // The probe is answered (the receiver holds 1..12 too): the flow slow-starts from one segment.
    out.clear();
    ack(&mut s, 1000, 12, &[], &mut out);
    assert_eq!(s.st.cwnd_bytes, 2 * MSS, "one segment, plus one for the ACK: {}", s.describe());
    assert!(
        out.iter().all(|p| p.payload_bytes as u64 == MSS),
        "{:?}",
        out.iter().map(|p| p.payload_bytes).collect::<Vec<_>>()
    );
}

/// Homa's sender: one RTT of bytes at once, then exactly what the receiver grants; a resend
/// request is answered with the range asked for, and a timeout sends one byte only.
#[test]
fn homa_sends_what_is_granted_resends_what_is_asked_and_probes_with_one_byte() {
    use crate::cc::homa::{HomaConfig, HomaHeader};
    use fctlab_engine::quantity::Size;
    let cfg = TcpConfig { mss_bytes: MSS as u32, ..Default::default() };
    let homa = HomaConfig { rtt_bytes: Size(4 * MSS), ..Default::default() };
    let info = crate::FlowInfo { size: Some(20 * MSS), ..Default::default() };
    let mut s =
        TcpSender::new(FlowId(0), NodeId(0), NodeId(1), Some(20 * MSS), &cfg, CcConfig::Homa(homa).build(&info), false);
    let mut out = Vec::new();
    s.start(Nanos::ZERO, &mut out);
    assert_eq!(seqs(&out), vec![0, 1, 2, 3], "the unscheduled bytes");
    assert!(out.iter().all(|p| p.has(flags::TAGGED) && p.prio == 0));
    let control = |s: &mut TcpSender, t_us: u64, ack_seg: u64, h: HomaHeader, out: &mut Vec<Packet>| {
        let mut p = Packet { kind: PacketKind::Ack, ack: ack_seg * MSS, flags: flags::ROUTER, ..Default::default() };
        p.router = h.header();
        s.on_packet(Nanos::from_micros(t_us), &p, out);
    };
    // A grant to byte 7000, in band 5: segments 4-6 go, in that band; nothing beyond.
    out.clear();
    control(&mut s, 10, 1, HomaHeader::Grant { offset: 7 * MSS, band: 5 }, &mut out);
    assert_eq!(seqs(&out), vec![4, 5, 6]);
    assert!(out.iter().all(|p| p.prio == 5));
    // The receiver misses segment 2: it is sent again, and nothing else.
    out.clear();
    control(&mut s, 20, 2, HomaHeader::Resend { start: 2 * MSS, end: 3 * MSS }, &mut out);
    assert_eq!((seqs(&out), s.retransmits), (vec![2], 1));
    // Nothing comes back: the timer (10 ms) sends one byte of the first unacknowledged segment.
    let t = s.timer_deadline().expect("a timer");
    assert!(t >= Nanos::from_millis(10));
    out.clear();
    s.on_timer(t, &mut out);
    assert_eq!(out.iter().map(|p| (p.seq / MSS, p.payload_bytes)).collect::<Vec<_>>(), vec![(2, 1)]);
    // The rest as granted; the last ACK completes the flow.
    out.clear();
    control(&mut s, 30_000, 7, HomaHeader::Grant { offset: 20 * MSS, band: 1 }, &mut out);
    assert_eq!(seqs(&out), (7..20).collect::<Vec<_>>());
    control(&mut s, 30_100, 20, HomaHeader::Grant { offset: 20 * MSS, band: 1 }, &mut out);
    assert!(s.is_complete());
}
