//! Deadline-aware transports end to end: D2TCP (`protocol = "d2tcp"`, over ECN threshold
//! marking) against DCTCP, and D3 (`protocol = "d3"`, router-assisted) against TCP, on
//! fan-ins into one 1 Gbps port.

mod common;
use common::*;
use fctlab_sim::Results;

const ECN: &str = "queue = \"ecn\"\necn_threshold = \"20pkt\"\nbuffer = \"200pkt\"";
const DROPTAIL: &str = "buffer = \"200pkt\"";

/// Flows with a deadline that met it, and flows with a deadline.
fn met(r: &Results) -> (usize, usize) {
    let with: Vec<_> = r.flows.iter().filter(|f| f.deadline_s.is_some()).collect();
    let ok = with.iter().filter(|f| f.completed && f.fct_s.unwrap_or(f64::MAX) <= f.deadline_s.unwrap_or(0.0)).count();
    (ok, with.len())
}

fn fcts(r: &Results) -> Vec<f64> {
    r.flows.iter().map(|f| f.fct_s.unwrap_or(f64::INFINITY)).collect()
}

/// A star of `n` senders and h0, 1 Gbps links of `delay`, under `queue` and `protocol`, with
/// one flow per sender to h0 of the given (size, deadline), starting 10 us apart.
fn fan_in(protocol: &str, queue: &str, delay: &str, flows: &[(&str, String)]) -> String {
    let mut s = format!(
        "seed = 1\nstop_time = \"1s\"\n[network]\ntopology = \"star\"\nhosts = {}\nlink_rate = \"1Gbps\"\nlink_delay = \"{delay}\"\n{queue}\n\
         [transport]\nprotocol = \"{protocol}\"\nmin_rto = \"10ms\"\n",
        flows.len() + 1
    );
    for (i, (size, deadline)) in flows.iter().enumerate() {
        s += &format!(
            "[[flows]]\nsrc = \"h{}\"\ndst = \"h0\"\nsize = \"{size}\"\ndeadline = \"{deadline}\"\nstart = \"{}us\"\n",
            i + 1,
            i * 10
        );
    }
    s
}

/// Eight senders of 500 KB each into one 1 Gbps port (4 MB: 33 ms at an equal share), every
/// other one due in `near_ms`, the others in twice that.
fn near_and_far(near_ms: u32) -> Vec<(&'static str, String)> {
    (0..8).map(|i| ("500KB", format!("{}ms", if i % 2 == 0 { near_ms } else { 2 * near_ms }))).collect()
}

/// Ten senders into one 1 Gbps port: every fifth is urgent (180 KB due in 5 ms: 288 Mbps), the
/// others loose (150 KB due in 40 ms: 30 Mbps). The desired rates add up to 816 Mbps, below the
/// link, but an equal share (100 Mbps each at first) is too little for the urgent flows.
fn urgent_and_loose() -> Vec<(&'static str, String)> {
    (0..10).map(|i| if i % 5 == 0 { ("180KB", "5ms".to_string()) } else { ("150KB", "40ms".to_string()) }).collect()
}

/// The paper's headline on a shared bottleneck: two 4 MB flows, one due in 50 ms, one in 200 ms.
/// DCTCP shares equally and both finish in about 66 ms, so the near one misses; D2TCP's near
/// flow backs off less (d near 2) and the far one more (d = 0.5), so the near one finishes
/// well before the far one and meets its deadline.
#[test]
fn d2tcp_gives_the_near_deadline_flow_more_of_the_bottleneck_than_the_far_one() {
    let pair = |protocol: &str| {
        run(&format!(
            "seed = 1\nstop_time = \"2s\"\n[network]\ntopology = \"dumbbell\"\nsenders = 2\nreceivers = 2\nlink_rate = \"1Gbps\"\nlink_delay = \"25us\"\n{ECN}\n\
             [transport]\nprotocol = \"{protocol}\"\nmin_rto = \"10ms\"\n\
             [[flows]]\nsrc = \"s0\"\ndst = \"r0\"\nsize = \"4MB\"\ndeadline = \"50ms\"\n\
             [[flows]]\nsrc = \"s1\"\ndst = \"r1\"\nsize = \"4MB\"\ndeadline = \"200ms\"\n"
        ))
    };
    let (d2, dc) = (pair("d2tcp"), pair("dctcp"));
    let (f2, fc) = (fcts(&d2), fcts(&dc));
    eprintln!("FCTs: d2tcp {f2:?}, dctcp {fc:?}");
    assert!(d2.flows.iter().all(|f| f.protocol == "d2tcp"));
    assert!((fc[0] - fc[1]).abs() < 0.05 * fc[1], "DCTCP shares equally: {fc:?}");
    assert_eq!(met(&dc), (1, 2));
    assert!(f2[0] < 0.8 * f2[1], "D2TCP's near-deadline flow finishes well before the far one: {f2:?}");
    assert_eq!(met(&d2), (2, 2));
}

/// An incast-like mix with tight deadlines: eight 500 KB flows into one port, half due in 28 or
/// 30 ms (below the 33 ms an equal share takes), half in twice that. DCTCP finishes them all
/// together, so the near half misses; D2TCP finishes the near half first and meets more.
#[test]
fn d2tcp_meets_more_deadlines_than_dctcp_in_a_tight_deadline_fan_in() {
    for near_ms in [28, 30] {
        let flows = near_and_far(near_ms);
        let d2 = run(&fan_in("d2tcp", ECN, "50us", &flows));
        let dc = run(&fan_in("dctcp", ECN, "50us", &flows));
        eprintln!("near {near_ms} ms: met d2tcp {:?}, dctcp {:?}", met(&d2), met(&dc));
        assert!(met(&d2).0 > met(&dc).0, "near {near_ms} ms: d2tcp {:?} dctcp {:?}", met(&d2), met(&dc));
        let f = fcts(&d2);
        let latest_near = f.iter().step_by(2).fold(0.0f64, |a, &b| a.max(b));
        let earliest_far = f.iter().skip(1).step_by(2).fold(f64::INFINITY, |a, &b| a.min(b));
        assert!(latest_near < earliest_far, "D2TCP: every near flow before every far one: {f:?}");
    }
}

/// When the desired rates (size over time to the deadline) fit the link, D3's routers grant
/// each flow its rate and every flow meets its deadline: ten flows with 816 Mbps between
/// them, and eight with 924 Mbps (four due in 26 ms, four in 52 ms). After the run, every port
/// has taken back all it allocated (A = 0: no allocation leaked).
#[test]
fn d3_meets_every_deadline_when_the_desired_rates_fit_the_link() {
    for (name, flows) in [("urgent and loose", urgent_and_loose()), ("near and far", near_and_far(26))] {
        for delay in ["10us", "50us"] {
            let mut s = sim(&fan_in("d3", DROPTAIL, delay, &flows));
            s.run();
            let r = s.results(false);
            eprintln!("{name}, {delay}: met {:?}, FCTs {:?}", met(&r), fcts(&r));
            assert_eq!(met(&r), (flows.len(), flows.len()), "{name}, links of {delay}");
            let ports: Vec<f64> = (0..4 * flows.len()).filter_map(|i| s.port_offered_rate(i)).collect();
            assert_eq!(ports.len(), 2 * (flows.len() + 1)); // every output port runs D3's side
            assert!(ports.iter().all(|&left| left == 1e9), "capacity left after the run: {ports:?}");
        }
    }
}

/// The same mixes under TCP (NewReno over drop-tail): an equal share makes the urgent or
/// near flows late, and D3 meets more deadlines.
#[test]
fn d3_meets_more_deadlines_than_tcp_on_the_same_mix() {
    for (name, flows) in [("urgent and loose", urgent_and_loose()), ("near and far", near_and_far(26))] {
        let d3 = run(&fan_in("d3", DROPTAIL, "10us", &flows));
        let tcp = run(&fan_in("tcp", DROPTAIL, "10us", &flows));
        eprintln!("{name}: met d3 {:?}, tcp {:?}", met(&d3), met(&tcp));
        assert!(met(&d3).0 > met(&tcp).0, "{name}: d3 {:?} tcp {:?}", met(&d3), met(&tcp));
    }
}

/// Flows without deadlines ask for nothing and share what is left equally: two long flows of
/// 2 MB under D3 get the same rate and fill the link.
#[test]
fn d3_flows_without_deadlines_share_the_link_equally() {
    let r = run(&format!(
        "seed = 1\nstop_time = \"1s\"\n[network]\ntopology = \"dumbbell\"\nsenders = 2\nreceivers = 2\nlink_rate = \"1Gbps\"\nlink_delay = \"25us\"\n{DROPTAIL}\n\
         [transport]\nprotocol = \"d3\"\n\
         [[flows]]\nsrc = \"s0\"\ndst = \"r0\"\nsize = \"2MB\"\n\
         [[flows]]\nsrc = \"s1\"\ndst = \"r1\"\nsize = \"2MB\"\n"
    ));
    let f = fcts(&r);
    eprintln!("FCTs {f:?}");
    // 4 MB of payload at 1 Gbps (1500-byte packets of 1460 bytes, plus D3's requests): 33 ms.
    let ideal = 4e6 * 8.0 / 1e9 * 1500.0 / 1460.0;
    assert!((f[0] - f[1]).abs() < 0.05 * f[1], "equal shares: {f:?}");
    assert!(f[1] < 1.1 * ideal, "the link stays full: {f:?} against {ideal}");
    assert_eq!(r.summary.drops, 0);
}
