use super::*;
use crate::cc::{configure, CcConfig};

const MSS: u32 = 4086;
const MTU: f64 = 4150.0;

/// A flow at 100 Gb/s whose network round trip is 12 us (UEC's reference: a = 1, and with a
/// 0.75 target, b = 0.75).
fn nscc(params: &str) -> (Nscc, CcState) {
    let info = FlowInfo {
        nic_rate: BitsPerSec(100_000_000_000),
        base_rtt: Nanos::from_micros(12),
        mss_bytes: MSS,
        header_bytes: 64,
        ..Default::default()
    };
    let cfg = match configure("nscc", params.parse().unwrap()).unwrap() {
        CcConfig::Nscc(c) => c,
        _ => unreachable!(),
    };
    let mut n = Nscc::new(&cfg, &info);
    let mut st = CcState { cwnd_bytes: 0, ssthresh_bytes: CcState::SSTHRESH_UNLIMITED, mss_bytes: MSS as u64 };
    n.init(&mut st);
    (n, st)
}

fn ack(at_us: f64, rtt_us: f64, marked: bool, in_flight: u64) -> AckSample {
    AckSample {
        now: Nanos::from_nanos((at_us * 1000.0) as u64),
        acked_bytes: MTU as u64,
        ece: marked,
        rtt: Some(Nanos::from_nanos((rtt_us * 1000.0) as u64)),
        snd_una: 0,
        snd_nxt: in_flight,
        ..Default::default()
    }
}

#[test]
fn the_window_starts_at_one_and_a_half_bdps_and_never_passes_it() {
    let (mut n, mut st) = nscc("");
    assert_eq!(st.cwnd_bytes, 225_000, "1.5 x 150,000 B");
    for k in 0..200 {
        n.on_ack(&mut st, &ack(20.0 + k as f64 * 0.3, 12.0, false, 100_000));
    }
    assert_eq!(st.cwnd_bytes, 225_000);
}

#[test]
fn marks_with_a_delay_above_the_target_cut_at_most_once_per_base_round_trip_and_by_half_at_most() {
    let (mut n, mut st) = nscc("");
    // A delay of 30 us (target 9 us): the average climbs, marks cut.
    let mut cuts = Vec::new();
    let mut last = st.cwnd_bytes;
    for k in 0..400 {
        let t = 20.0 + k as f64 * 0.5;
        n.on_ack(&mut st, &ack(t, 42.0, true, 100_000));
        if st.cwnd_bytes < last {
            cuts.push((t, last as f64 / st.cwnd_bytes as f64));
        }
        last = st.cwnd_bytes;
    }
    assert!(!cuts.is_empty(), "marked acknowledgements with a high delay cut the window");
    for w in cuts.windows(2) {
        assert!(w[1].0 - w[0].0 > 12.0, "one cut per base round trip at most: {cuts:?}");
    }
    assert!(cuts.iter().all(|&(_, f)| f <= 2.001), "{cuts:?}");
    assert!(st.cwnd_bytes as f64 >= MTU);
}

#[test]
fn unmarked_acknowledgements_below_the_target_grow_the_window_after_a_cut() {
    let (mut n, mut st) = nscc("");
    n.on_congestion(&mut st, CongestionEvent::Timeout { flight_bytes: 0 });
    let after_timeout = st.cwnd_bytes;
    assert_eq!(after_timeout as f64, 225_000.0 - MTU, "a timeout takes one packet");
    for k in 0..40 {
        n.on_ack(&mut st, &ack(20.0 + k as f64 * 0.4, 14.0, false, 100_000));
    }
    assert!(st.cwnd_bytes > after_timeout, "{} <= {after_timeout}", st.cwnd_bytes);
}

#[test]
fn a_nack_after_a_thin_period_makes_quick_adapt_take_the_window_down_to_what_arrived() {
    let (mut n, mut st) = nscc("");
    // The first period starts with the first acknowledgement (its bytes count before it).
    n.on_ack(&mut st, &ack(10.0, 12.0, false, 200_000));
    // A period of base RTT + target (12 + 9 us) later, with one packet acknowledged in it,
    // a NACK: quick adapt.
    n.on_ack(&mut st, &ack(20.0, 12.0, false, 200_000));
    n.on_timer(&mut st, Nanos::from_micros(40));
    n.on_congestion(&mut st, CongestionEvent::Loss { flight_bytes: 200_000 });
    assert_eq!(st.cwnd_bytes as f64, MTU, "the window falls to the bytes acknowledged in the period");
    // Marks on the bytes then in flight are ignored.
    let before = st.cwnd_bytes;
    n.on_ack(&mut st, &ack(41.0, 60.0, true, 200_000));
    assert_eq!(st.cwnd_bytes, before);
}

#[test]
fn bad_parameters_are_named() {
    let bad = |t: &str| configure("nscc", t.parse().unwrap()).unwrap_err().message;
    assert!(bad("nscc_target_fraction = 0.0").contains("nscc_target_fraction"));
    assert!(bad("nscc_rto = \"0s\"").contains("nscc_rto"));
    assert!(bad("nscc_network_rtt = \"0s\"").contains("nscc_network_rtt"));
}
