//! Queue options end to end: ns-2.35's RED (`red_variant = "ns2"`), the NIC's discipline
//! (`nic_queue`) and ns-2's buffer semantics (`buffer_model`).

mod common;
use common::*;
use fctlab_scenario::schema::Format;

/// Four long-lived ECN-capable flows across a 1 Gbps dumbbell, with `network` lines added.
fn scenario(network: &str) -> String {
    let base = dumbbell_long_lived(4, "1Gbps", "20us", "100pkt", "30ms", "ecn = true");
    base.replacen("[transport]", &format!("{network}\n[transport]"), 1)
}

fn level_sum(r: &fctlab_sim::Results, level: &str, f: impl Fn(&fctlab_sim::LinkResult) -> u64) -> u64 {
    r.links.iter().filter(|l| l.level == level).map(f).sum()
}

#[test]
fn ns2_red_runs_and_marks_at_the_bottleneck() {
    let r = run(&scenario("queue = \"red\"\nred_variant = \"ns2\"\nred_ecn = true\nred_min_threshold = \"20pkt\"\nred_weight = 0.01\nbuffer_model = \"ns2\"\nnic_queue = \"switch\""));
    assert!(r.summary.payload_bytes_delivered > 2_000_000, "{:?}", r.summary);
    let marks = level_sum(&r, "bottleneck", |l| l.ecn_marks);
    assert!(marks > 0, "no marks at the bottleneck");
    // (The automatic weight, about 4e-6 at 1 Gbps, would take some 250,000 arrivals to follow
    // the queue.) thresh_ 20 in byte mode is 20 × 500 bytes: the queue stays near 10 KB, far below 100 packets.
    let max_q = r.links.iter().filter(|l| l.level == "bottleneck").map(|l| l.max_queue_pkts).max().unwrap();
    assert!(max_q < 100, "bottleneck queue {max_q}");
    // Same seed, same bytes.
    let again = run(&scenario("queue = \"red\"\nred_variant = \"ns2\"\nred_ecn = true\nred_min_threshold = \"20pkt\"\nred_weight = 0.01\nbuffer_model = \"ns2\"\nnic_queue = \"switch\""));
    assert_eq!(r.summary.payload_bytes_delivered, again.summary.payload_bytes_delivered);
    // With the automatic thresholds (625 and 1875 mean packets at 1 Gbps) nothing is marked
    // before the 100-packet buffer fills.
    let auto = run(&scenario("queue = \"red\"\nred_variant = \"ns2\"\nred_ecn = true"));
    assert_eq!(auto.summary.ecn_marks, 0);
}

#[test]
fn nic_queue_switch_runs_the_switch_discipline_at_the_hosts() {
    // Threshold marking at 1 packet: a sender's NIC queue holds more than that at once.
    for q in ["queue = \"ecn\"\necn_threshold = \"1pkt\"", "queue = \"red\"\nred_variant = \"ns2\"\nred_ecn = true\nred_bytes = false\nred_min_threshold = \"1pkt\"\nred_max_threshold = \"2pkt\"\nred_weight = 1.0\nred_mark_p = 1.0"] {
        let host = run(&scenario(&format!("{q}\nnic_queue = \"switch\"")));
        assert!(level_sum(&host, "nic", |l| l.ecn_marks) > 0, "{q}: no marks at the NICs");
        let plain = run(&scenario(q));
        assert_eq!(level_sum(&plain, "nic", |l| l.ecn_marks), 0, "{q}");
    }
}

#[test]
fn ns2_buffer_model_holds_one_packet_less() {
    let max_q = |model: &str| {
        let mut s = dumbbell_long_lived(4, "1Gbps", "20us", "10pkt", "20ms", "");
        s = s.replacen("[transport]", &format!("buffer_model = \"{model}\"\n[transport]"), 1);
        let r = run(&s);
        assert!(level_sum(&r, "bottleneck", |l| l.drops) > 0);
        r.links.iter().filter(|l| l.level == "bottleneck").map(|l| l.max_queue_pkts).max().unwrap()
    };
    assert_eq!(max_q("waiting"), 10);
    assert_eq!(max_q("ns2"), 9);
}

#[test]
fn bad_values_name_the_key() {
    let err = |network: &str| {
        let s = scenario(network);
        fctlab_scenario::load(&s, "q.toml", Format::Toml, &[]).err().map(|e| e.to_string()).unwrap_or_default()
    };
    let cases = [
        ("queue = \"red\"\nred_variant = \"ns3\"", "network.red_variant: expected \"classic\" or \"ns2\", got \"ns3\""),
        (
            "nic_queue = \"codel\"",
            "network.nic_queue: expected \"droptail\", \"switch\" or a queue discipline's name, got \"codel\"",
        ),
        ("buffer_model = \"bytes\"", "network.buffer_model: expected \"waiting\" or \"ns2\", got \"bytes\""),
        (
            "queue = \"red\"\nred_wait = false",
            "network.red_wait: only used with red_variant = \"ns2\" (red_variant is \"classic\")",
        ),
        ("red_variant = \"ns2\"", "network.red_variant: only used with queue = \"red\" (queue is \"droptail\")"),
        (
            "queue = \"red\"\nred_variant = \"ns2\"\nred_mark_p = -0.5",
            "network.red_mark_p: must be a number >= 0 (above 1: always mark), got -0.5",
        ),
        (
            "queue = \"red\"\nred_variant = \"ns2\"\nred_bytes = false\nred_min_threshold = \"30KB\"",
            "network.red_min_threshold: with red_bytes = false",
        ),
        (
            "queue = \"red\"\nred_variant = \"ns2\"\nred_min_threshold = \"20pkt\"\nred_max_threshold = \"10pkt\"",
            "network.red_max_threshold: must not be below",
        ),
        ("queue = \"red\"\nred_variant = \"ns2\"\nred_weight = 0.0", "network.red_weight: must be in (0, 1]"),
        ("queue = \"red\"\nred_variant = \"ns2\"\nred_wait = \"yes\"", "network.red_wait:"),
    ];
    for (network, want) in cases {
        let got = err(network);
        assert!(got.contains(want), "{network}: {got}");
    }
    // Byte thresholds are allowed under the ns2 variant, and equal thresholds as in ns-2.
    assert_eq!(
        err("queue = \"red\"\nred_variant = \"ns2\"\nred_min_threshold = \"30KB\"\nred_max_threshold = \"60pkt\""),
        ""
    );
}

/// A long-lived "bulk" flow and twenty 20 KB "query" flows from another host share a 1 Gbps
/// bottleneck with a 200-packet buffer, under `queue_lines`. Returns (the queries' mean FCT in
/// seconds, the bulk flow's bytes, the bottleneck's drops, all queries completed).
fn bulk_and_queries(queue_lines: &str) -> (f64, u64, u64, bool) {
    let mut s = format!(
        "seed = 1\nstop_time = \"120ms\"\n[network]\ntopology = \"dumbbell\"\nsenders = 2\nreceivers = 1\n\
         link_rate = \"1Gbps\"\nlink_delay = \"20us\"\nbuffer = \"200pkt\"\n{queue_lines}\n\
         [transport]\nprotocol = \"tcp\"\n[[flows]]\nsrc = \"s0\"\ndst = \"r0\"\ntag = \"bulk\"\n"
    );
    for k in 0..20 {
        s += &format!(
            "[[flows]]\nsrc = \"s1\"\ndst = \"r0\"\nsize = \"20KB\"\nstart = \"{}ms\"\ntag = \"query\"\n",
            20 + 4 * k
        );
    }
    let r = run(&s);
    let q: Vec<_> = r.flows.iter().filter(|f| f.tag == "query").collect();
    let mean = q.iter().filter_map(|f| f.fct_s).sum::<f64>() / q.len() as f64;
    let bulk = r.flows.iter().find(|f| f.tag == "bulk").map_or(0, |f| f.bytes_delivered);
    let drops = level_sum(&r, "bottleneck", |l| l.drops);
    (mean, bulk, drops, q.iter().all(|f| f.completed))
}

#[test]
fn strict_priority_from_a_scenario_serves_the_listed_tag_first() {
    let (fifo, bulk_fifo, _, all_fifo) = bulk_and_queries("");
    let (prio, bulk_prio, _, all_prio) = bulk_and_queries("queue = \"priority\"\npriority_tags = [\"query\"]");
    assert!(all_fifo && all_prio);
    // Behind the bulk flow's standing queue (up to 200 packets, 2.4 ms) a query takes
    // milliseconds; in the first band it waits for one packet at most.
    eprintln!("query mean FCT: fifo {fifo:.6} s, priority {prio:.6} s; bulk bytes {bulk_fifo} / {bulk_prio}");
    assert!(prio < fifo / 3.0, "priority {prio:.6} s, fifo {fifo:.6} s");
    assert!(prio < 0.0015, "priority {prio:.6} s");
    // The bulk flow still fills the link.
    assert!(bulk_prio as f64 > 0.9 * bulk_fifo as f64, "{bulk_prio} vs {bulk_fifo}");
    // Push-out and per-band marking are accepted, and a tag listed twice is refused.
    let (_, _, _, all) = bulk_and_queries("queue = \"priority\"\npriority_tags = [\"query\"]\npriority_pushout = true");
    assert!(all);
    let bad = dumbbell_long_lived(2, "1Gbps", "20us", "100pkt", "10ms", "").replacen(
        "[transport]",
        "queue = \"priority\"\npriority_tags = [\"a\", \"a\"]\n[transport]",
        1,
    );
    let e = fctlab_scenario::load(&bad, "q.toml", Format::Toml, &[]).err().map(|e| e.to_string()).unwrap_or_default();
    assert!(e.contains("network.priority_tags[1]: \"a\" is listed twice"), "{e}");
    let e = fctlab_scenario::load(&scenario("priority_tags = [\"a\"]"), "q.toml", Format::Toml, &[])
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(e.contains("network.priority_tags: only used with queue = \"priority\" (queue is \"droptail\")"), "{e}");
}
