//! Per-packet load balancing and packet trimming end to end (`[network] load_balancing`,
//! `queue = "trim"`): sprayed packets use every path, runs are the same for the same seed,
//! reordering is counted at the receivers, and no trimmed packet is lost without a count.

mod common;
use common::*;

/// One 4 MB flow between pods of a k=4 fat-tree (four paths through the core), DCTCP.
fn one_flow(policy: &str) -> String {
    format!(
        "seed = 3\n[network]\ntopology = \"fattree\"\nk = 4\nlink_rate = \"10Gbps\"\nlink_delay = \"1us\"\n\
         buffer = \"100pkt\"\nqueue = \"ecn\"\necn_threshold = \"20pkt\"\nload_balancing = \"{policy}\"\n\
         [transport]\nprotocol = \"dctcp\"\nmin_rto = \"1ms\"\n\
         [[flows]]\nsrc = \"h0\"\ndst = \"h15\"\nsize = \"4MB\"\n"
    )
}

/// The source pod's uplinks to the core that carried more than `min` packets.
fn core_links_used(r: &fctlab_sim::Results, min: u64) -> usize {
    r.links.iter().filter(|l| l.src.starts_with("agg0_") && l.dst.starts_with("core") && l.tx_packets > min).count()
}

#[test]
fn spraying_sends_one_flow_over_every_core_path_where_ecmp_keeps_one() {
    let ecmp = run(&one_flow("ecmp"));
    let spray = run(&one_flow("spray"));
    let rr = run(&one_flow("round_robin"));
    let perm = run(&one_flow("permutation"));
    assert_eq!(core_links_used(&ecmp, 10), 1, "ECMP keeps the flow on one path: one uplink to the core");
    // Upward: the source pod's two aggregation switches each have two core uplinks.
    assert_eq!(core_links_used(&spray, 100), 2 * 2, "sprayed packets take every uplink");
    assert_eq!(core_links_used(&rr, 100), 2 * 2, "round-robin packets take every uplink");
    assert_eq!(core_links_used(&perm, 100), 2 * 2, "a sender spraying over its paths takes every uplink");
    // Over its paths in turn, the sender gives each of the four the same share (to within a
    // round: the last one may be cut short, and a retransmission adds one).
    let mut shares: Vec<u64> = perm
        .links
        .iter()
        .filter(|l| l.src.starts_with("agg0_") && l.dst.starts_with("core"))
        .map(|l| l.tx_packets)
        .collect();
    shares.sort();
    assert!(shares[3] - shares[0] <= 2 + perm.flows[0].retransmits, "{shares:?}");
    for r in [&ecmp, &spray, &rr, &perm] {
        assert!(r.flows.iter().all(|f| f.completed));
    }
}

#[test]
fn every_policy_gives_the_same_bytes_for_the_same_seed() {
    for policy in ["spray", "round_robin", "permutation", "flowlet", "adaptive", "reps"] {
        let toml = one_flow(policy).replace(
            "[[flows]]",
            "[[workloads]]\nkind = \"permutation\"\nsenders = \"all\"\nsizes = \"300KB\"\n[[flows]]",
        );
        let (a, b) = (run(&toml), run(&toml));
        let key = |r: &fctlab_sim::Results| {
            r.flows
                .iter()
                .map(|f| (f.finish_s.map(f64::to_bits), f.retransmits, f.out_of_order_packets))
                .collect::<Vec<_>>()
        };
        assert_eq!(key(&a), key(&b), "{policy}");
        assert!(a.flows.iter().all(|f| f.completed), "{policy}");
    }
}

#[test]
fn sprayed_packets_arrive_out_of_order_and_the_receiver_counts_them() {
    // Unequal queues on the four paths: a permutation beside the flow.
    let toml = one_flow("spray")
        .replace("[[flows]]", "[[workloads]]\nkind = \"permutation\"\nsenders = \"all\"\nsizes = \"2MB\"\n[[flows]]");
    let r = run(&toml);
    let ooo: u64 = r.flows.iter().map(|f| f.out_of_order_packets).sum();
    assert!(ooo > 0, "sprayed over queues of different lengths, some packets overtake others");
    // Alone on one path with room for its whole window, a flow's packets keep their order.
    let alone = run(&one_flow("ecmp").replace("100pkt", "2000pkt"));
    assert_eq!(alone.links.iter().map(|l| l.drops).sum::<u64>(), 0);
    assert_eq!(alone.flows[0].out_of_order_packets, 0);
    assert_eq!(alone.flows[0].spurious_retransmits, 0);
}

/// A random LCG step (the test's own stream).
fn next(state: &mut u64) -> u64 {
    *state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    *state >> 33
}

#[test]
fn every_trimmed_packet_is_delivered_as_a_header_or_counted_as_a_dropped_one() {
    let mut st = 11u64;
    let (mut trimmed_total, mut header_drops_total) = (0, 0);
    for case in 0..12 {
        let n = 2 + (next(&mut st) % 14) as usize;
        let size = 20 + next(&mut st) % 800;
        let threshold = 2 + next(&mut st) % 12;
        // Small port buffers in some cases, so that headers too are dropped.
        let buffer = threshold + 1 + next(&mut st) % 40;
        let cwnd = 4 + next(&mut st) % 60;
        let mut s = format!(
            "seed = {case}\n[network]\ntopology = \"star\"\nhosts = {}\nlink_rate = \"10Gbps\"\n\
             link_delay = \"1us\"\nbuffer = \"{buffer}pkt\"\nqueue = \"trim\"\ntrim_threshold = \"{threshold}pkt\"\n\
             [transport]\ninitial_cwnd = {cwnd}\nmin_rto = \"1ms\"\n[monitor]\ndrops = true\n",
            n + 1
        );
        for i in 0..n {
            s += &format!(
                "[[flows]]\nsrc = \"h{i}\"\ndst = \"h{n}\"\nsize = \"{size}KB\"\nstart = \"{}us\"\n",
                next(&mut st) % 20
            );
        }
        // A last small flow long after the incast keeps the run going until the network has
        // drained.
        s += "[[flows]]\nsrc = \"h0\"\ndst = \"h1\"\nsize = \"1KB\"\nstart = \"1s\"\n";
        let r = run(&s);
        let trimmed: u64 = r.links.iter().map(|l| l.trimmed_packets).sum();
        let header_drops = r.drops.as_ref().unwrap().iter().filter(|d| d.cause == "trimmed_header").count() as u64;
        assert_eq!(r.summary.packets_in_network, 0, "case {case}: the run drains before its stop time");
        assert_eq!(
            trimmed,
            r.summary.trimmed_headers_delivered + header_drops,
            "case {case}: every trimmed packet is delivered as a header or dropped as one\n{s}"
        );
        assert!(r.flows.iter().all(|f| f.completed), "case {case}");
        trimmed_total += trimmed;
        header_drops_total += header_drops;
    }
    assert!(trimmed_total > 1000, "the incasts must trim ({trimmed_total})");
    assert!(header_drops_total > 0, "some cases must drop headers too, or the count is not tested");
}

/// `one_flow`'s network carrying a permutation of 2 MB DCTCP flows and, with `rack`, RACK's
/// loss detection by time.
fn sprayed_permutation(policy: &str, rack: bool) -> String {
    one_flow(policy)
        .replace("[[flows]]\nsrc = \"h0\"\ndst = \"h15\"\nsize = \"4MB\"\n", "")
        .replace("min_rto = \"1ms\"", &format!("min_rto = \"1ms\"\nrack = {rack}"))
        + "[[workloads]]\nkind = \"permutation\"\nsenders = \"all\"\nsizes = \"2MB\"\n"
}

fn spurious(r: &fctlab_sim::Results) -> u64 {
    r.flows.iter().map(|f| f.spurious_retransmits).sum()
}

#[test]
fn racks_reordering_window_spares_sprayed_tcp_most_spurious_retransmissions() {
    let (dup, rack) = (run(&sprayed_permutation("spray", false)), run(&sprayed_permutation("spray", true)));
    assert!(dup.flows.iter().chain(&rack.flows).all(|f| f.completed));
    assert!(spurious(&dup) > 100, "sprayed, three packets above a hole make TCP resend what was only late");
    assert!(spurious(&rack) * 2 < spurious(&dup), "RACK: {} against {}", spurious(&rack), spurious(&dup));
    // One path per flow: nothing arrives late, and RACK resends no more than the duplicate
    // ACKs do (a tail loss probe may resend a packet that was not lost, either way).
    let (ecmp_dup, ecmp_rack) = (run(&sprayed_permutation("ecmp", false)), run(&sprayed_permutation("ecmp", true)));
    assert!(spurious(&ecmp_rack) <= spurious(&ecmp_dup).max(2), "{} {}", spurious(&ecmp_rack), spurious(&ecmp_dup));
}

#[test]
fn rack_finds_real_losses_and_every_flow_completes() {
    // An incast that overflows the receiver's port: RACK's timer and its time rule repair it.
    let mut s = String::from(
        "seed = 1\n[network]\ntopology = \"star\"\nhosts = 9\nlink_rate = \"10Gbps\"\nlink_delay = \"1us\"\nbuffer = \"30pkt\"\n\
         [transport]\ninitial_cwnd = 32\nmin_rto = \"10ms\"\nrack = true\n[monitor]\ndrops = true\n",
    );
    for i in 0..8 {
        s += &format!("[[flows]]\nsrc = \"h{i}\"\ndst = \"h8\"\nsize = \"500KB\"\n");
    }
    let r = run(&s);
    assert!(!r.drops.as_ref().unwrap().is_empty(), "the incast must lose packets");
    assert!(r.flows.iter().all(|f| f.completed));
    let timeouts: u64 = r.flows.iter().map(|f| f.timeouts).sum();
    let retx: u64 = r.flows.iter().map(|f| f.retransmits).sum();
    assert!(
        retx > timeouts,
        "losses repaired by RACK before the timeout ({retx} retransmissions, {timeouts} timeouts)"
    );
}
