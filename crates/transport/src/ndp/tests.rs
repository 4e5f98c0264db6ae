use super::*;
use crate::cc::{configure, CcConfig, FlowInfo};
use fctlab_engine::Nanos;

const MSS: u64 = 9000;

fn cfg() -> TcpConfig {
    TcpConfig { mss_bytes: MSS as u32, header_bytes: 64, ..TcpConfig::default() }
}

fn ndp(params: &str) -> CcConfig {
    configure("ndp", params.parse().unwrap()).unwrap()
}

fn sender(size: u64, params: &str) -> NdpSender {
    let cc = ndp(params).build(&FlowInfo::default());
    NdpSender::new(FlowId(0), NodeId(0), NodeId(1), Some(size), &cfg(), cc, false)
}

fn t(us: u64) -> Nanos {
    Nanos::from_micros(us)
}

/// A reply of `kind` naming packet `i`, with pull number `pull`.
fn reply(kind: PacketKind, i: u64, pull: u32) -> Packet {
    Packet { kind, seq: i * MSS, pull_no: pull, ..Default::default() }
}

fn seqs(out: &[Packet]) -> Vec<u64> {
    out.iter().map(|p| p.seq / MSS).collect()
}

#[test]
fn the_first_window_leaves_at_once_and_then_each_pull_releases_one_packet() {
    let mut s = sender(100 * MSS, "ndp_initial_window = 4");
    let mut out = Vec::new();
    s.start(t(0), &mut out);
    assert_eq!(seqs(&out), [0, 1, 2, 3], "the first window, at once");
    assert!(out.iter().all(|p| p.wire_bytes == MSS as u32 + 64));
    out.clear();
    s.on_packet(t(10), &reply(PacketKind::Ack, 0, 0), &mut out);
    assert!(out.is_empty(), "an ACK without a pull releases nothing");
    s.on_packet(t(11), &reply(PacketKind::Ack, 1, 1), &mut out);
    assert_eq!(seqs(&out), [4], "pull 1: one packet");
    out.clear();
    // Pull 2 is lost: pull 3 releases two.
    s.on_packet(t(12), &reply(PacketKind::Pull, 0, 3), &mut out);
    assert_eq!(seqs(&out), [5, 6]);
    out.clear();
    // An old pull number releases nothing.
    s.on_packet(t(13), &reply(PacketKind::Pull, 0, 2), &mut out);
    assert!(out.is_empty());
}

#[test]
fn a_nacked_packet_goes_before_new_data_and_spends_a_pull_kept_from_before() {
    let mut s = sender(6 * MSS, "ndp_initial_window = 6");
    let mut out = Vec::new();
    s.start(t(0), &mut out);
    assert_eq!(out.len(), 6, "the whole message in the first window");
    out.clear();
    for i in [0, 1, 3, 5] {
        s.on_packet(t(5), &reply(PacketKind::Ack, i, 0), &mut out);
    }
    // A pull with nothing left to send is kept...
    s.on_packet(t(6), &reply(PacketKind::Pull, 0, 1), &mut out);
    assert!(out.is_empty());
    // ...and a NACK spends it at once; the next NACK waits for its pull.
    s.on_packet(t(7), &reply(PacketKind::Nack, 4, 0), &mut out);
    assert_eq!(seqs(&out), [4]);
    assert!(out[0].has(flags::RETX));
    out.clear();
    s.on_packet(t(8), &reply(PacketKind::Nack, 2, 0), &mut out);
    assert!(out.is_empty());
    s.on_packet(t(9), &reply(PacketKind::Pull, 0, 2), &mut out);
    assert_eq!(seqs(&out), [2]);
    out.clear();
    for i in [2, 4] {
        s.on_packet(t(20), &reply(PacketKind::Ack, i, 0), &mut out);
    }
    assert!(s.is_complete());
    assert_eq!((s.retransmits, s.nacks, s.bytes_acked()), (2, 2, 6 * MSS));
}

#[test]
fn nacked_packets_are_resent_lowest_first() {
    let mut s = sender(20 * MSS, "ndp_initial_window = 8");
    let mut out = Vec::new();
    s.start(t(0), &mut out);
    out.clear();
    for i in [6, 2, 4] {
        s.on_packet(t(5), &reply(PacketKind::Nack, i, 0), &mut out);
    }
    s.on_packet(t(6), &reply(PacketKind::Pull, 0, 4), &mut out);
    assert_eq!(seqs(&out), [2, 4, 6, 8], "the three NACKed, lowest first, then new data");
}

#[test]
fn a_silent_receiver_times_the_sender_out_and_it_resends_the_lowest_outstanding_packet() {
    let mut s = sender(10 * MSS, "ndp_initial_window = 3\nndp_rto = \"100us\"");
    let mut out = Vec::new();
    s.start(t(0), &mut out);
    s.on_packet(t(20), &reply(PacketKind::Ack, 1, 0), &mut out);
    assert_eq!(s.timer_deadline(), Some(t(120)), "the timer runs from the last word of the receiver");
    out.clear();
    s.on_timer(t(120), &mut out);
    assert_eq!(seqs(&out), [0], "the lowest outstanding packet goes at once");
    assert_eq!(s.timer_deadline(), Some(t(320)), "the timeout doubles while nothing comes back");
    out.clear();
    // The rest waits for pulls.
    s.on_packet(t(330), &reply(PacketKind::Ack, 0, 1), &mut out);
    assert_eq!(seqs(&out), [2]);
    assert_eq!(s.timeouts, 1);
}

#[test]
fn the_receiver_acks_data_nacks_trimmed_headers_and_wants_a_pull_for_each_until_it_has_all() {
    let mut r = NdpReceiver::new(FlowId(0), NodeId(1), NodeId(0), Some(3 * MSS - 100), &cfg());
    let mut out = Vec::new();
    let data = |i: u64| Packet {
        kind: PacketKind::Data,
        seq: i * MSS,
        payload_bytes: MSS.min(3 * MSS - 100 - i * MSS) as u32,
        ts_sent_ns: 7,
        ..Default::default()
    };
    assert!(r.on_packet(t(1), &data(1), &mut out));
    assert_eq!((out[0].kind, out[0].seq, out[0].ack, out[0].ts_echo_ns), (PacketKind::Ack, MSS, 0, 7));
    let mut header = data(0);
    header.flags |= flags::TRIMMED;
    header.payload_bytes = 0;
    assert!(r.on_packet(t(2), &header, &mut out));
    assert_eq!((out[1].kind, out[1].seq), (PacketKind::Nack, 0));
    assert!(r.on_packet(t(3), &data(0), &mut out));
    assert_eq!(out[2].ack, 2 * MSS, "the cumulative ACK jumps over the packet that arrived early");
    assert!(r.on_packet(t(3), &data(1), &mut out), "a duplicate is acknowledged and pulled for");
    assert_eq!(r.duplicate_packets, 1);
    assert!(!r.on_packet(t(4), &data(2), &mut out), "the last packet: no pull needed");
    assert!(r.has_everything());
    assert_eq!(r.bytes_delivered(), 3 * MSS - 100);
    assert_eq!((r.out_of_order, r.trimmed_headers), (1, 1));
    let mut ack = out[0].clone();
    r.stamp_pull(&mut ack);
    assert_eq!(ack.pull_no, 1);
    assert_eq!(r.pull(t(5)).pull_no, 2, "pull numbers count up per flow");
}
