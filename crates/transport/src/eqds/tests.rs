use super::*;
use crate::cc::{configure, FlowInfo};

const MSS: u64 = 4086;
const FULL: u64 = 4150;

fn sender(packets: u64, params: &str) -> EqdsSender {
    let cfg = TcpConfig { mss_bytes: MSS as u32, header_bytes: 64, ..TcpConfig::default() };
    let cc = configure("eqds", params.parse().unwrap()).unwrap().build(&FlowInfo::default());
    // A line rate of 4150 B per microsecond: one packet per microsecond.
    let rate = fctlab_engine::BitsPerSec(FULL * 8 * 1_000_000);
    EqdsSender::new(FlowId(0), NodeId(0), NodeId(1), Some(packets * MSS), &cfg, cc, false, rate)
}

fn t(us: u64) -> Nanos {
    Nanos::from_micros(us)
}

fn reply(kind: PacketKind, i: u64, pull: u32) -> Packet {
    Packet { kind, seq: i * MSS, pull_no: pull, ..Default::default() }
}

fn seqs(out: &[Packet]) -> Vec<u64> {
    out.iter().map(|p| p.seq / MSS).collect()
}

/// Starts `s` and lets its NIC take `n` packets, one per microsecond.
fn send_first(s: &mut EqdsSender, n: u64, out: &mut Vec<Packet>) {
    s.start(t(0), out);
    for k in 1..n {
        assert_eq!(s.timer_deadline(), Some(t(k)), "the NIC takes one packet per microsecond");
        s.on_timer(t(k), out);
    }
}

#[test]
fn the_first_window_goes_out_at_the_line_rate_until_the_first_word_back_ends_it() {
    let mut s = sender(100, "eqds_initial_window = 4");
    let mut out = Vec::new();
    send_first(&mut s, 3, &mut out);
    assert_eq!(seqs(&out), [0, 1, 2]);
    // Each data packet asks for the pulls its flow's remaining bytes need, up to a window.
    let asked: Vec<u32> = out.iter().map(|p| p.pull_no).collect();
    assert_eq!(asked, [1, 2, 3], "a window's worth, less the speculative credit left");
    out.clear();
    // An ACK before the window's last packet left: speculation is over, and the rest of the
    // window is given up.
    s.on_packet(t(2) + Nanos::from_nanos(500), &reply(PacketKind::Ack, 0, 0), &mut out);
    s.on_timer(t(3), &mut out);
    assert!(out.is_empty() && s.timer_deadline() != Some(t(3)));
    // Each pull grants one full packet, sent at the line rate.
    s.on_packet(t(5), &reply(PacketKind::Pull, 0, 2), &mut out);
    assert_eq!(seqs(&out), [3]);
    assert_eq!(s.timer_deadline(), Some(t(6)));
    s.on_timer(t(6), &mut out);
    assert_eq!(seqs(&out), [3, 4]);
    assert!(out.iter().all(|p| p.wire_bytes as u64 == FULL));
}

#[test]
fn a_nacked_packet_goes_first_on_the_next_credit() {
    let mut s = sender(100, "eqds_initial_window = 4");
    let mut out = Vec::new();
    send_first(&mut s, 4, &mut out);
    out.clear();
    s.on_packet(t(5), &reply(PacketKind::Nack, 2, 0), &mut out);
    assert!(out.is_empty(), "no credit yet");
    s.on_packet(t(6), &reply(PacketKind::Pull, 0, 1), &mut out);
    assert_eq!(seqs(&out), [2]);
    assert!(out[0].has(flags::RETX));
}

#[test]
fn the_oldest_packet_in_flight_goes_again_after_the_timeout_whatever_the_credit() {
    let mut s = sender(3, "eqds_initial_window = 3\neqds_rto = \"50us\"");
    let mut out = Vec::new();
    send_first(&mut s, 3, &mut out);
    out.clear();
    s.on_packet(t(5), &reply(PacketKind::Ack, 1, 0), &mut out);
    s.on_packet(t(5), &reply(PacketKind::Ack, 2, 0), &mut out);
    assert_eq!(s.timer_deadline(), Some(t(50)));
    s.on_timer(t(50), &mut out);
    assert_eq!(seqs(&out), [0]);
    out.clear();
    s.on_packet(t(60), &reply(PacketKind::Ack, 0, 0), &mut out);
    assert!(s.is_complete());
    assert_eq!((s.timeouts, s.retransmits), (1, 1));
}

#[test]
fn the_receiver_is_owed_a_retransmission_pull_per_trimmed_header_and_pulls_up_to_the_demand() {
    let cfg = TcpConfig { mss_bytes: MSS as u32, header_bytes: 64, ..TcpConfig::default() };
    let mut r = EqdsReceiver::new(FlowId(0), NodeId(1), NodeId(0), Some(10 * MSS), &cfg);
    let mut out = Vec::new();
    let data = |i: u64, asked: u32| Packet {
        kind: PacketKind::Data,
        seq: i * MSS,
        payload_bytes: MSS as u32,
        pull_no: asked,
        ..Default::default()
    };
    r.on_packet(t(1), &data(0, 2), &mut out);
    assert_eq!(r.owed(), Owed::Demand);
    let mut header = data(1, 2);
    header.flags |= flags::TRIMMED;
    r.on_packet(t(2), &header, &mut out);
    assert_eq!(out.iter().map(|p| p.kind).collect::<Vec<_>>(), [PacketKind::Ack, PacketKind::Nack]);
    assert_eq!(r.owed(), Owed::Retransmission);
    assert_eq!(r.pull(t(3)).pull_no, 1);
    assert_eq!(r.owed(), Owed::Demand, "the retransmission's pull is sent; demand is left");
    assert_eq!(r.pull(t(4)).pull_no, 2);
    assert_eq!(r.owed(), Owed::Nothing, "two pulls asked for, two sent");
}
