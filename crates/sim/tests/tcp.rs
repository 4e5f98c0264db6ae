//! Properties of TCP over the simulated network: link-rate throughput, slow-start cost,
//! fairness, loss recovery.

mod common;
use common::*;
use fctlab_engine::Nanos;

const PAYLOAD_FRACTION: f64 = 1460.0 / 1500.0;

#[test]
fn single_flow_reaches_payload_rate_on_idle_path() {
    let toml = r#"
stop_time = "1s"
[network]
topology = "star"
hosts = 2
link_rate = "1Gbps"
link_delay = "300us"
[[flows]]
src = "h0"
dst = "h1"
"#;
    let mut s = sim(toml);
    s.advance(Nanos::from_millis(200));
    let d1 = s.results(false).flows[0].bytes_delivered;
    s.advance(Nanos::from_millis(700));
    let d2 = s.results(false).flows[0].bytes_delivered;
    let rate = (d2 - d1) as f64 * 8.0 / 0.5;
    let payload_rate = 1e9 * PAYLOAD_FRACTION;
    assert!(rate >= 0.95 * payload_rate, "steady-state goodput {rate:.3e} < 95% of {payload_rate:.3e}");
    assert!(rate <= payload_rate * 1.0001, "goodput {rate:.3e} above the payload rate");
}

#[test]
fn ten_megabytes_complete_within_five_percent_of_ideal_plus_slow_start() {
    let toml = r#"
[network]
topology = "star"
hosts = 2
link_rate = "1Gbps"
link_delay = "300us"
[transport]
initial_cwnd = 10
[[flows]]
src = "h0"
dst = "h1"
size = "10MB"
"#;
    let r = run(toml);
    let f = &r.flows[0];
    assert!(f.completed);
    assert_eq!(f.bytes_delivered, 10_000_000);
    let ideal = f.ideal_fct_s.unwrap();
    // Slow-start cost: rounds in which the window (10, 20, 40, ... segments) is below the
    // bandwidth-delay product each lose (RTT - window * packet time).
    let pkt_time = 1500.0 * 8.0 / 1e9;
    let rtt = 4.0 * 300e-6 + 2.0 * pkt_time + 2.0 * 40.0 * 8.0 / 1e9;
    let mut w = 10.0;
    let mut cost = 0.0;
    while w * pkt_time < rtt {
        cost += rtt - w * pkt_time;
        w *= 2.0;
    }
    let bound = ideal + cost;
    let fct = f.fct_s.unwrap();
    assert!(fct >= ideal, "fct {fct} below ideal {ideal}");
    assert!(fct <= 1.05 * bound, "fct {fct} more than 5% above ideal+slow start {bound} (ideal {ideal}, cost {cost})");
    eprintln!("fct {fct} ideal {ideal} bound {bound} retransmits {}", f.retransmits);
}

fn fairness_case(n: usize) {
    // The thesis' evaluation set-up: 1 Gbps, 300 us links, 100-packet buffers.
    let toml = dumbbell_long_lived(n, "1Gbps", "300us", "100pkt", "1.1s", "");
    let mut s = sim(&toml);
    s.advance(Nanos::from_millis(100));
    let before: Vec<u64> = s.results(false).flows.iter().map(|f| f.bytes_delivered).collect();
    s.run();
    let r = s.results(false);
    let x: Vec<f64> = r.flows.iter().zip(&before).map(|(f, b)| (f.bytes_delivered - b) as f64 * 8.0).collect();
    let total: f64 = x.iter().sum();
    let payload_rate = 1e9 * PAYLOAD_FRACTION;
    let j = jain(&x);
    assert!(total >= 0.95 * payload_rate, "n={n}: aggregate goodput {total:.3e} < 95% of {payload_rate:.3e}");
    assert!(j >= 0.95, "n={n}: Jain fairness {j:.4} < 0.95 (per-flow bits {x:?})");
    assert!(r.summary.drops > 0, "n={n}: expected a congested bottleneck");
}

#[test]
fn newreno_fair_and_efficient_2_flows() {
    fairness_case(2);
}
#[test]
fn newreno_fair_and_efficient_8_flows() {
    fairness_case(8);
}
#[test]
fn newreno_fair_and_efficient_32_flows() {
    fairness_case(32);
}

fn many_to_one(extra_transport: &str, queue: &str) -> String {
    many_to_one_buffer(extra_transport, queue, "20pkt")
}

fn many_to_one_buffer(extra_transport: &str, queue: &str, buffer: &str) -> String {
    let mut s = format!(
        "seed = 5\n[network]\ntopology = \"star\"\nhosts = 9\nlink_rate = \"1Gbps\"\nlink_delay = \"20us\"\nbuffer = \"{buffer}\"\n{queue}\n[transport]\nmin_rto = \"5ms\"\n{extra_transport}\n"
    );
    for i in 1..9 {
        for j in 0..4 {
            s += &format!(
                "[[flows]]\nsrc = \"h{i}\"\ndst = \"h0\"\nsize = \"{}KB\"\nstart = \"{}us\"\n",
                50 + 150 * j + 7 * i,
                300 * j
            );
        }
    }
    s
}

fn assert_all_complete_and_conserved(r: &fctlab_sim::Results) {
    for f in &r.flows {
        assert!(f.completed, "flow {} did not complete", f.flow_id);
        assert_eq!(Some(f.bytes_delivered), f.size_bytes, "flow {}", f.flow_id);
    }
    let s = &r.summary;
    assert_eq!(s.packets_created, s.packets_consumed + s.drops + s.packets_in_network, "packet accounting: {s:?}");
    let port_drops: u64 = r.links.iter().map(|l| l.drops).sum();
    assert_eq!(port_drops, s.drops);
    for l in &r.links {
        if let Some(b) = l.buffer_pkts {
            assert!(l.max_queue_pkts <= b, "{}->{}: queue {} above buffer {}", l.src, l.dst, l.max_queue_pkts, b);
        }
    }
}

#[test]
fn incast_with_losses_recovers_with_sack() {
    let r = run(&many_to_one("", ""));
    assert!(r.summary.drops > 0);
    assert!(r.flows.iter().map(|f| f.retransmits).sum::<u64>() > 0);
    assert_all_complete_and_conserved(&r);
}

#[test]
fn incast_with_losses_recovers_without_sack_and_with_delayed_acks() {
    let r = run(&many_to_one("sack = false\ndelayed_ack = true\ndelayed_ack_timeout = \"1ms\"", ""));
    assert!(r.summary.drops > 0);
    assert_all_complete_and_conserved(&r);
}

#[test]
fn handshake_adds_one_round_trip() {
    let base = "[network]\ntopology = \"star\"\nhosts = 2\nlink_delay = \"100us\"\n[[flows]]\nsrc = \"h0\"\ndst = \"h1\"\nsize = \"1000B\"\n";
    let a = run(base);
    let b = run(&base.replace("[network]", "[transport]\nhandshake = true\n[network]"));
    let (fa, fb) = (a.flows[0].fct_s.unwrap(), b.flows[0].fct_s.unwrap());
    // one packet, no queueing: FCT equals the ideal exactly, and the handshake adds an RTT
    assert!((fa - a.flows[0].ideal_fct_s.unwrap()).abs() < 1e-9, "{fa} vs {:?}", a.flows[0].ideal_fct_s);
    assert!((fb - fa - 4.0 * (100e-6 + 320e-9)).abs() < 1e-8, "{fb} - {fa}");
}

#[test]
fn ecn_marking_replaces_drops() {
    let r = run(&many_to_one_buffer("ecn = true", "queue = \"ecn\"\necn_threshold = \"10pkt\"", "100pkt"));
    assert!(r.summary.ecn_marks > 0);
    assert_all_complete_and_conserved(&r);
    let plain = run(&many_to_one_buffer("", "", "100pkt"));
    assert!(plain.summary.drops > 0);
    assert!(r.summary.drops < plain.summary.drops, "ecn drops {} vs droptail {}", r.summary.drops, plain.summary.drops);
}

#[test]
fn red_drops_early() {
    let r = run(&many_to_one(
        "",
        "queue = \"red\"\nred_min_threshold = \"3pkt\"\nred_max_threshold = \"12pkt\"\nred_weight = 0.05",
    ));
    assert!(r.summary.drops > 0);
    assert_all_complete_and_conserved(&r);
}

#[test]
fn determinism_same_seed_same_results() {
    let toml = many_to_one("", "");
    let a = run(&toml);
    let b = run(&toml);
    assert_eq!(a.flows, b.flows);
    assert_eq!(a.links, b.links);
    assert_eq!(a.summary.events, b.summary.events);
}

#[test]
fn ecmp_spreads_flows_over_a_fat_tree() {
    let mut s = String::from("[network]\ntopology = \"fattree\"\nk = 4\nlink_rate = \"1Gbps\"\nlink_delay = \"5us\"\n");
    for i in 0..16 {
        s += &format!("[[flows]]\nsrc = \"h{i}\"\ndst = \"h{}\"\nsize = \"200KB\"\n", (i + 5) % 16);
    }
    let r = run(&s);
    assert_all_complete_and_conserved(&r);
    let used_cores = r
        .links
        .iter()
        .filter(|l| l.src.starts_with("core") && l.tx_packets > 0)
        .map(|l| l.src.clone())
        .collect::<std::collections::BTreeSet<_>>();
    assert!(used_cores.len() >= 3, "ECMP used only {used_cores:?}");
}

#[test]
fn slowdown_never_below_one_and_utilization_never_above_one() {
    // Mixed link rates (10G-1G-10G) and sizes that leave a short last segment.
    let mut s = String::from(
        "[network]\ntopology = \"dumbbell\"\nsenders = 3\nreceivers = 3\nlink_rate = \"10Gbps\"\nbottleneck_rate = \"1Gbps\"\nlink_delay = \"5us\"\n",
    );
    for (i, size) in [1461u64, 1u64, 2921, 100_001, 7_777_777].iter().enumerate() {
        s += &format!(
            "[[flows]]\nsrc = \"s{}\"\ndst = \"r{}\"\nsize = \"{size}B\"\nstart = \"{}ms\"\n",
            i % 3,
            (i + 1) % 3,
            i * 20
        );
    }
    let r = run(&s);
    for f in &r.flows {
        assert!(f.completed);
        let sd = f.slowdown.unwrap();
        assert!(sd >= 1.0 - 1e-12, "flow {} size {:?}: slowdown {sd}", f.flow_id, f.size_bytes);
    }
    // the first flow, alone on the path, completes exactly in its ideal time
    assert!((r.flows[0].slowdown.unwrap() - 1.0).abs() < 1e-9, "{:?}", r.flows[0]);
    for l in &r.links {
        assert!(l.utilization <= 1.0 + 1e-12, "{}->{}: {}", l.src, l.dst, l.utilization);
    }
}

#[test]
fn a_flow_that_cannot_finish_ends_at_the_horizon() {
    // Every data packet is dropped at a zero-byte bottleneck buffer? No: a zero buffer still
    // passes packets to an idle link. Use a 1-byte buffer on a link slower than the sender.
    let toml = "[network]\ntopology = \"dumbbell\"\nsenders = 1\nreceivers = 1\nlink_rate = \"1Gbps\"\nbottleneck_rate = \"1Kbps\"\nbottleneck_buffer = \"0pkt\"\n[transport]\nmax_rto = \"100s\"\n[[flows]]\nsrc = \"s0\"\ndst = \"r0\"\nsize = \"10MB\"\n";
    let r = run(toml);
    assert!(!r.flows[0].completed);
    assert_eq!(r.summary.sim_time_s, fctlab_sim::DEFAULT_HORIZON.as_secs_f64());
}

/// `profile = "ns2"` (ns-2.35's Agent/TCP defaults): the window starts at 2 packets and never
/// exceeds `window_` = 20 packets, so a long flow on a fat pipe moves 20 packets per round trip.
/// (cwnd_ itself keeps growing past `window_`, as in ns-2: `window()` takes the minimum.)
#[test]
fn ns2_profile_window_starts_at_two_and_stays_at_most_twenty_packets() {
    let toml = "seed = 1\nstop_time = \"2s\"\n[network]\ntopology = \"dumbbell\"\nsenders = 1\nreceivers = 1\nlink_rate = \"1Gbps\"\nlink_delay = \"1ms\"\nbuffer = \"100pkt\"\n[transport]\nprofile = \"ns2\"\n[monitor]\ncwnd_interval = \"1ms\"\n[[flows]]\nsrc = \"s0\"\ndst = \"r0\"\n";
    let r = run(toml);
    let c = r.cwnd.as_ref().expect("cwnd traced");
    assert_eq!(c[0].cwnd_bytes, 2 * 1000, "initial window 2 packets of 1000 B");
    let max = c.iter().map(|s| s.cwnd_bytes.min(20 * 1000)).max().unwrap();
    assert_eq!(max, 20 * 1000, "the window grows to window_ = 20 packets and no further");
    assert!(c.iter().any(|s| s.cwnd_bytes > 20 * 1000), "cwnd_ is not capped at window_");
    assert_eq!(r.summary.drops, 0);
    // 20 packets per round trip of 6 ms (three 1 ms links each way) plus serialization.
    let late: Vec<f64> = c.iter().filter(|s| s.time_s >= 1.0).map(|s| s.rate_bps).collect();
    let rate = late.iter().sum::<f64>() / late.len() as f64;
    let want = 20.0 * 1000.0 * 8.0 / 6.05e-3;
    assert!((rate - want).abs() / want < 0.05, "rate {rate:.0} bps, window-limited {want:.0}");
    // Keys given explicitly override the profile.
    let r = run(&toml.replace("profile = \"ns2\"", "profile = \"ns2\"\nrwnd = \"40KB\"\ninitial_cwnd = 4"));
    let c = r.cwnd.as_ref().unwrap();
    assert_eq!(c[0].cwnd_bytes, 4 * 1000);
    assert!(c.iter().map(|s| s.cwnd_bytes).max().unwrap() > 20 * 1000);
    let e = fctlab_scenario::load(
        &toml.replace("\"ns2\"", "\"ns3\""),
        "t.toml",
        fctlab_scenario::schema::Format::Toml,
        &[],
    )
    .unwrap_err();
    assert_eq!(e.key, "transport.profile");
    assert!(e.message.contains("unknown profile \"ns3\" (known: linux, ns2)"), "{e}");
}
