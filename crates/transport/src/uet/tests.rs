use super::*;
use crate::cc::{configure, FlowInfo};
use fctlab_engine::BitsPerSec;

const MSS: u64 = 4086;
const WIRE: u64 = 4150;

/// A sender of `n` packets under NSCC at 100 Gb/s whose network round trip is 1 us: a window
/// of 1.5 x 12,500 B, four packets.
fn sender(n: u64) -> UetSender {
    let cfg = TcpConfig { mss_bytes: MSS as u32, header_bytes: 64, ..TcpConfig::default() };
    let info = FlowInfo {
        nic_rate: BitsPerSec(100_000_000_000),
        base_rtt: Nanos::from_micros(1),
        mss_bytes: MSS as u32,
        header_bytes: 64,
        ..Default::default()
    };
    let cc = configure("nscc", "nscc_rto = \"50us\"".parse().unwrap()).unwrap().build(&info);
    UetSender::new(FlowId(0), NodeId(0), NodeId(1), Some(n * MSS), &cfg, cc)
}

fn t(us: u64) -> Nanos {
    Nanos::from_micros(us)
}

fn reply(kind: PacketKind, i: u64, sent: Nanos) -> Packet {
    Packet { kind, seq: i * MSS, ts_echo_ns: sent.as_nanos(), ..Default::default() }
}

fn seqs(out: &[Packet]) -> Vec<u64> {
    out.iter().map(|p| p.seq / MSS).collect()
}

#[test]
fn the_window_bounds_the_bytes_in_flight_and_an_ack_lets_the_next_packet_go() {
    let mut s = sender(20);
    let mut out = Vec::new();
    s.start(t(0), &mut out);
    assert_eq!(seqs(&out), [0, 1, 2, 3], "18,750 B of window: four packets of 4,150 B");
    assert_eq!(s.in_flight(), 4 * WIRE);
    assert!(out.iter().all(|p| p.has(flags::ECT)));
    out.clear();
    s.on_packet(t(1), &reply(PacketKind::Ack, 0, t(0)), &mut out);
    assert_eq!(seqs(&out), [4]);
}

#[test]
fn a_nacked_packet_is_sent_again_before_new_ones_lowest_first() {
    let mut s = sender(20);
    let mut out = Vec::new();
    s.start(t(0), &mut out);
    out.clear();
    s.on_packet(t(1), &reply(PacketKind::Nack, 2, t(0)), &mut out);
    s.on_packet(t(1), &reply(PacketKind::Nack, 1, t(0)), &mut out);
    // Each NACK freed its bytes and cost the window a packet: nothing fits yet.
    assert!(out.is_empty(), "{:?}", seqs(&out));
    s.on_packet(t(2), &reply(PacketKind::Ack, 0, t(0)), &mut out);
    s.on_packet(t(2), &reply(PacketKind::Ack, 3, t(0)), &mut out);
    assert_eq!(seqs(&out)[..2], [1, 2], "the NACKed packets go again before any new one, lowest first");
    assert!(out[0].has(flags::RETX) && out[1].has(flags::RETX));
    assert_eq!(s.nacks, 2);
}

#[test]
fn the_timer_runs_for_the_oldest_packet_in_flight_and_counts_it_lost() {
    let mut s = sender(3);
    let mut out = Vec::new();
    s.start(t(0), &mut out);
    assert_eq!(s.timer_deadline(), Some(t(50)));
    out.clear();
    s.on_packet(t(10), &reply(PacketKind::Ack, 1, t(0)), &mut out);
    s.on_packet(t(10), &reply(PacketKind::Ack, 2, t(0)), &mut out);
    s.on_timer(t(50), &mut out);
    assert_eq!(seqs(&out), [0], "packet 0 timed out and goes again");
    assert_eq!((s.timeouts, s.retransmits), (1, 1));
    assert_eq!(s.timer_deadline(), Some(t(100)), "the timer runs again for the packet resent");
    out.clear();
    s.on_packet(t(60), &reply(PacketKind::Ack, 0, t(50)), &mut out);
    assert!(s.is_complete());
    assert_eq!(s.bytes_acked(), 3 * MSS);
}
