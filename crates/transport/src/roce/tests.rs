//! The `roce` transport on hand-made packet sequences.

use super::*;
use crate::cc::{configure, FlowInfo};

const GBPS: u64 = 1_000_000_000;

fn cfg() -> TcpConfig {
    TcpConfig {
        mss_bytes: 1000,
        header_bytes: 48,
        min_rto: Nanos::from_micros(100),
        initial_rto: Nanos::from_millis(1),
        ..TcpConfig::default()
    }
}

fn sender(protocol: &str, size: u64) -> RoceSender {
    let info = FlowInfo { nic_rate: BitsPerSec(10 * GBPS), ..Default::default() };
    let cc = configure(protocol, toml::Table::new()).unwrap().build(&info);
    RoceSender::new(FlowId(0), NodeId(0), NodeId(1), Some(size), &cfg(), cc, protocol == "dcqcn", BitsPerSec(10 * GBPS))
}

fn receiver(size: u64) -> RoceReceiver {
    RoceReceiver::new(FlowId(0), NodeId(1), NodeId(0), Some(size), &cfg())
}

/// Runs the sender's timer until it has nothing due before `until`, collecting what it sends.
fn run_until(s: &mut RoceSender, until: Nanos, out: &mut Vec<Packet>) {
    while let Some(d) = s.timer_deadline().filter(|&d| d <= until) {
        s.on_timer(d, out);
    }
}

#[test]
fn packets_leave_at_line_rate_one_transmission_apart() {
    let mut s = sender("roce", 5000);
    let mut out = Vec::new();
    s.start(Nanos::ZERO, &mut out);
    assert_eq!(out.len(), 1, "one packet now, the next when its bytes have left");
    run_until(&mut s, Nanos::from_micros(100), &mut out);
    assert_eq!(out.len(), 5);
    // 1,048 B at 10 Gbps: 838.4 ns, rounded up to 839 ns.
    let times: Vec<u64> = out.iter().map(|p| p.ts_sent_ns).collect();
    assert_eq!(times, vec![0, 839, 1678, 2517, 3356]);
    assert_eq!(out.iter().map(|p| p.seq).collect::<Vec<_>>(), vec![0, 1000, 2000, 3000, 4000]);
    assert!(out.iter().all(|p| p.wire_bytes == 1048 && !p.has(flags::ECT)));
}

#[test]
fn the_receiver_acknowledges_in_order_packets_and_nacks_a_gap_once() {
    let mut s = sender("roce", 4000);
    let mut r = receiver(4000);
    let mut data = Vec::new();
    s.start(Nanos::ZERO, &mut data);
    run_until(&mut s, Nanos::from_micros(10), &mut data);
    assert_eq!(data.len(), 4);
    let mut replies = Vec::new();
    r.on_packet(Nanos::from_micros(5), &data[0], &mut replies);
    // The second packet is lost: the third and fourth are beyond the byte expected.
    r.on_packet(Nanos::from_micros(6), &data[2], &mut replies);
    r.on_packet(Nanos::from_micros(7), &data[3], &mut replies);
    let kinds: Vec<(PacketKind, u64)> = replies.iter().map(|p| (p.kind, p.ack)).collect();
    assert_eq!(kinds, vec![(PacketKind::Ack, 1000), (PacketKind::Nack, 1000)], "one NACK per gap");
    assert_eq!((r.bytes_delivered(), r.out_of_order), (1000, 2));
    // The sender goes back to byte 1000 and sends the rest again.
    let mut again = Vec::new();
    for p in &replies {
        s.on_packet(Nanos::from_micros(8), p, &mut again);
    }
    run_until(&mut s, Nanos::from_micros(20), &mut again);
    assert_eq!(again.iter().map(|p| p.seq).collect::<Vec<_>>(), vec![1000, 2000, 3000]);
    assert!(again.iter().all(|p| p.has(flags::RETX)));
    assert_eq!((s.retransmits, s.nacks), (3, 1));
    let mut acks = Vec::new();
    for p in &again {
        r.on_packet(Nanos::from_micros(21), p, &mut acks);
    }
    assert_eq!(acks.last().map(|p| (p.kind, p.ack)), Some((PacketKind::Ack, 4000)));
    for p in &acks {
        s.on_packet(Nanos::from_micros(22), p, &mut Vec::new());
    }
    assert!(s.is_complete());
    assert_eq!(s.timer_deadline(), None);
}

#[test]
fn a_second_nack_for_the_same_byte_waits_for_the_nack_interval() {
    let mut r = receiver(10_000);
    let p = |seq: u64| Packet { kind: PacketKind::Data, seq, payload_bytes: 1000, ..Default::default() };
    let mut out = Vec::new();
    r.on_packet(Nanos::from_micros(1), &p(2000), &mut out);
    r.on_packet(Nanos::from_micros(2), &p(3000), &mut out);
    r.on_packet(Nanos::from_micros(501), &p(4000), &mut out);
    assert_eq!(out.len(), 2, "{:?}", out.iter().map(|p| (p.kind, p.ack)).collect::<Vec<_>>());
    assert!(out.iter().all(|p| p.kind == PacketKind::Nack && p.ack == 0));
    // A duplicate is answered with an ACK of where the receiver stands.
    r.on_packet(Nanos::from_micros(502), &p(0), &mut out);
    r.on_packet(Nanos::from_micros(503), &p(0), &mut out);
    assert_eq!(out.last().map(|p| (p.kind, p.ack)), Some((PacketKind::Ack, 1000)));
    assert_eq!(r.duplicate_packets, 1);
}

#[test]
fn ack_interval_acknowledges_every_nth_packet_and_the_last() {
    let mut r = RoceReceiver::new(FlowId(0), NodeId(1), NodeId(0), Some(3500), &TcpConfig { ack_interval: 2, ..cfg() });
    let mut out = Vec::new();
    for (i, len) in [1000u32, 1000, 1000, 500].into_iter().enumerate() {
        let p = Packet { kind: PacketKind::Data, seq: i as u64 * 1000, payload_bytes: len, ..Default::default() };
        r.on_packet(Nanos::from_micros(i as u64), &p, &mut out);
    }
    assert_eq!(out.iter().map(|p| p.ack).collect::<Vec<_>>(), vec![2000, 3500]);
}

#[test]
fn marked_packets_bring_at_most_one_cnp_per_interval() {
    let mut r = receiver(u64::MAX);
    let mut out = Vec::new();
    for us in [0u64, 10, 49, 50, 120] {
        let p = Packet {
            kind: PacketKind::Data,
            seq: r.bytes_delivered(),
            payload_bytes: 1000,
            flags: flags::ECT | flags::CE,
            ..Default::default()
        };
        r.on_packet(Nanos::from_micros(us), &p, &mut out);
    }
    let cnps: Vec<u64> = out.iter().filter(|p| p.kind == PacketKind::Cnp).map(|p| p.ts_echo_ns).collect();
    assert_eq!(r.cnps_sent, 3, "at 0, 50 and 120 us");
    assert_eq!(cnps.len(), 3);
    assert!(out.iter().filter(|p| p.kind == PacketKind::Cnp).all(|p| p.wire_bytes == 48 && p.dst == NodeId(0)));
}

#[test]
fn a_cnp_slows_a_dcqcn_sender_and_the_gap_between_packets_grows() {
    let mut s = sender("dcqcn", 1_000_000);
    let mut out = Vec::new();
    s.start(Nanos::ZERO, &mut out);
    run_until(&mut s, Nanos::from_nanos(2000), &mut out);
    assert!(out.iter().all(|p| p.has(flags::ECT)), "DCQCN's packets are ECN-capable");
    let before = out.len();
    let cnp = Packet { kind: PacketKind::Cnp, ..Default::default() };
    s.on_packet(Nanos::from_nanos(2000), &cnp, &mut out);
    assert_eq!(s.rate(), BitsPerSec(5 * GBPS), "the first CNP halves the rate (alpha = 1)");
    run_until(&mut s, Nanos::from_micros(20), &mut out);
    let gaps: Vec<u64> = out[before..].windows(2).map(|w| w[1].ts_sent_ns - w[0].ts_sent_ns).collect();
    // 1,048 B at 5 Gbps: 1,677 ns (rounded up).
    assert!(gaps.iter().all(|&g| g == 1677), "{gaps:?}");
    // The rate timer brings it back towards the target rate while the flow sends.
    run_until(&mut s, Nanos::from_micros(60), &mut out);
    assert_eq!(s.rate(), BitsPerSec(7_500_000_000));
}

#[test]
fn a_timeout_goes_back_to_the_first_unacknowledged_byte() {
    let mut s = sender("roce", 3000);
    let mut out = Vec::new();
    s.start(Nanos::ZERO, &mut out);
    run_until(&mut s, Nanos::from_micros(10), &mut out);
    assert_eq!(out.len(), 3);
    // Nothing comes back: the initial RTO (1 ms) expires and the whole message goes again.
    out.clear();
    run_until(&mut s, Nanos::from_micros(1010), &mut out);
    assert_eq!(s.timeouts, 1);
    assert_eq!(out.iter().map(|p| p.seq).collect::<Vec<_>>(), vec![0, 1000, 2000]);
}

#[test]
fn telemetry_on_a_data_packet_comes_back_on_its_acknowledgement() {
    let mut r = receiver(1000);
    let mut p = Packet { kind: PacketKind::Data, payload_bytes: 1000, flags: flags::ROUTER, ..Default::default() };
    p.router.set_u32(0, 77);
    p.router.wire_bytes = 16;
    let mut out = Vec::new();
    r.on_packet(Nanos::ZERO, &p, &mut out);
    assert_eq!(out[0].router.u32(0), 77);
    assert!(out[0].has(flags::ROUTER));
    assert_eq!(out[0].wire_bytes, 48 + 16);
}

#[test]
fn a_cnp_after_a_quiet_spell_restarts_dcqcns_timer_from_its_arrival() {
    // The sender sends, then nothing reaches it for 1 ms (its NIC paused, say); a CNP then
    // cuts the rate and restarts the rate timer from the CNP's arrival, not from the last
    // packet sent: every deadline it gives lies ahead.
    let mut s = sender("dcqcn", 10_000_000);
    let mut out = Vec::new();
    s.start(Nanos::ZERO, &mut out);
    run_until(&mut s, Nanos::from_micros(5), &mut out);
    let at = Nanos::from_millis(1);
    let cnp = Packet { kind: PacketKind::Cnp, ..Default::default() };
    s.on_packet(at, &cnp, &mut out);
    assert_eq!(s.cc.deadline(), Some(at + Nanos::from_micros(55)), "the rate timer runs from the CNP");
    assert!(s.timer_deadline().is_some_and(|d| d >= at));
}

fn irn() -> TcpConfig {
    TcpConfig { roce_recovery: crate::config::RoceRecovery::Irn, ..cfg() }
}

fn irn_sender(size: u64) -> RoceSender {
    let info = FlowInfo { nic_rate: BitsPerSec(10 * GBPS), ..Default::default() };
    let cc = configure("roce", toml::Table::new()).unwrap().build(&info);
    RoceSender::new(FlowId(0), NodeId(0), NodeId(1), Some(size), &irn(), cc, false, BitsPerSec(10 * GBPS))
}

#[test]
fn irn_keeps_packets_out_of_order_and_nacks_each_by_its_own_number() {
    let mut r = RoceReceiver::new(FlowId(0), NodeId(1), NodeId(0), Some(4000), &irn());
    let p = |seq: u64| Packet { kind: PacketKind::Data, seq, payload_bytes: 1000, ..Default::default() };
    let mut out = Vec::new();
    for (us, seq) in [(1, 0), (2, 2000), (3, 3000)] {
        r.on_packet(Nanos::from_micros(us), &p(seq), &mut out);
    }
    let replies: Vec<(PacketKind, u64, u64)> = out.iter().map(|p| (p.kind, p.ack, p.seq)).collect();
    assert_eq!(
        replies,
        vec![(PacketKind::Ack, 1000, 0), (PacketKind::Nack, 1000, 2000), (PacketKind::Nack, 1000, 3000)],
        "every packet out of order is NACKed at once, naming itself"
    );
    assert_eq!((r.bytes_delivered(), r.out_of_order), (1000, 2));
    // The missing packet fills the gap: the two kept ones follow, and one ACK covers all.
    out.clear();
    r.on_packet(Nanos::from_micros(4), &p(1000), &mut out);
    assert_eq!(out.iter().map(|p| (p.kind, p.ack)).collect::<Vec<_>>(), vec![(PacketKind::Ack, 4000)]);
    assert_eq!(r.bytes_delivered(), 4000);
}

#[test]
fn irn_resends_only_the_lost_packet_then_goes_on_with_new_ones() {
    let mut s = irn_sender(8000);
    let mut r = RoceReceiver::new(FlowId(0), NodeId(1), NodeId(0), Some(8000), &irn());
    let mut data = Vec::new();
    s.start(Nanos::ZERO, &mut data);
    run_until(&mut s, Nanos::from_micros(4), &mut data);
    assert_eq!(data.iter().map(|p| p.seq).collect::<Vec<_>>(), vec![0, 1000, 2000, 3000, 4000]);
    // The second packet is lost; the others arrive and are answered.
    let mut replies = Vec::new();
    for p in data.iter().filter(|p| p.seq != 1000) {
        r.on_packet(Nanos::from_micros(5), p, &mut replies);
    }
    let mut again = Vec::new();
    for p in &replies {
        s.on_packet(Nanos::from_micros(6), p, &mut again);
    }
    run_until(&mut s, Nanos::from_micros(20), &mut again);
    // The ACK of the first packet lets a new one go (5000); the NACKs then start a recovery:
    // byte 1000 once, before the next new packets. Nothing already received goes again.
    assert_eq!(again.iter().map(|p| p.seq).collect::<Vec<_>>(), vec![5000, 1000, 6000, 7000]);
    assert_eq!((s.retransmits, again[1].has(flags::RETX)), (1, true));
    let mut acks = Vec::new();
    for p in &again {
        r.on_packet(Nanos::from_micros(21), p, &mut acks);
    }
    for p in &acks {
        s.on_packet(Nanos::from_micros(22), p, &mut Vec::new());
    }
    assert!(s.is_complete() && r.bytes_delivered() == 8000);
}

#[test]
fn irn_keeps_one_bdp_outstanding_and_times_out_after_its_fixed_pair() {
    let mut s = irn_sender(100_000);
    // 10 us at 10 Gbps: 12,500 bytes, 13 packets of 1,000.
    s.set_base_rtt(Nanos::from_micros(10));
    let mut out = Vec::new();
    s.start(Nanos::ZERO, &mut out);
    run_until(&mut s, Nanos::from_micros(50), &mut out);
    assert_eq!(out.len(), 13, "BDP-FC: no more than the cap outstanding");
    // The first packet's ACK: one new packet may go, and with more than three packets in
    // flight the timer is RTO_high (320 us) from the ACK.
    let ack = Packet { kind: PacketKind::Ack, ack: 1000, ..Default::default() };
    let mut more = Vec::new();
    s.on_packet(Nanos::from_micros(50), &ack, &mut more);
    assert_eq!(more.iter().map(|p| p.seq).collect::<Vec<_>>(), vec![13_000]);
    assert_eq!(s.rto_deadline, Some(Nanos::from_micros(370)));
    // Nothing more comes back: everything outstanding is resent, once.
    let mut again = Vec::new();
    run_until(&mut s, Nanos::from_micros(400), &mut again);
    assert_eq!(s.timeouts, 1);
    assert_eq!(again.iter().map(|p| p.seq).collect::<Vec<_>>(), (1..14).map(|i| i * 1000).collect::<Vec<_>>());
    // With three packets or fewer in flight, RTO_low (100 us).
    let mut t = irn_sender(3000);
    let mut o = Vec::new();
    t.start(Nanos::ZERO, &mut o);
    run_until(&mut t, Nanos::from_micros(5), &mut o);
    assert_eq!(o.len(), 3);
    assert_eq!(t.rto_deadline, Some(Nanos::from_micros(100)));
}
