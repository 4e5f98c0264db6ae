//! NDP end to end (`protocol = "ndp"` over `queue = "trim"` and `load_balancing = "spray"`):
//! a permutation of long flows fills the hosts' links where ECMP DCTCP leaves collisions, an
//! incast ends near the receiver's link time without a drop, and a run repeats byte for byte.

mod common;
use common::*;

/// A permutation of `size` flows on a k = 4 fat-tree at 10 Gbps with 9000-byte packets: NDP
/// sprayed by its senders over all their paths in turn, over trimming switches, or DCTCP over
/// ECMP.
fn permutation(ndp: bool, size: &str) -> String {
    let (network, transport) = if ndp {
        (
            "queue = \"trim\"\ntrim_threshold = \"8pkt\"\nnic_queue = \"trim\"\nload_balancing = \"permutation\"",
            // A first window above the pull loop's round trip (about 8 packets of 9 KB at
            // 10 Gbps over six hops, with queueing): 30 packets.
            "protocol = \"ndp\"\nndp = { ndp_initial_window = 30 }",
        )
    } else {
        ("queue = \"ecn\"\necn_threshold = \"20pkt\"", "protocol = \"dctcp\"\nmin_rto = \"1ms\"")
    };
    format!(
        "seed = 2\n[network]\ntopology = \"fattree\"\nk = 4\nlink_rate = \"10Gbps\"\nlink_delay = \"1us\"\n\
         buffer = \"200pkt\"\n{network}\n[transport]\n{transport}\nmss = \"9000B\"\nheader_bytes = \"64B\"\n\
         [[workloads]]\nkind = \"permutation\"\nsenders = \"all\"\nsizes = \"{size}\"\n"
    )
}

/// Each flow's mean rate over its life, as a fraction of the 10 Gbps host links, averaged.
fn mean_link_share(r: &fctlab_sim::Results) -> f64 {
    let shares: Vec<f64> =
        r.flows.iter().map(|f| f.size_bytes.unwrap() as f64 * 8.0 / f.fct_s.unwrap() / 10e9).collect();
    shares.iter().sum::<f64>() / shares.len() as f64
}

#[test]
fn ndp_with_spraying_and_trimming_fills_a_permutation_where_ecmp_dctcp_collides() {
    let ndp = run(&permutation(true, "10MB"));
    let dctcp = run(&permutation(false, "10MB"));
    assert!(ndp.flows.iter().all(|f| f.completed) && dctcp.flows.iter().all(|f| f.completed));
    let (n, d) = (mean_link_share(&ndp), mean_link_share(&dctcp));
    assert!(n >= 0.90, "NDP: {n:.3} of the link rate on average");
    assert!(d < 0.90, "ECMP DCTCP: {d:.3}: collisions on core links hold some flows back");
    // (Sprayed over every path in turn, the queues seldom reach the trimming threshold; the
    // incast below trims.)
    assert_eq!(ndp.links.iter().map(|l| l.drops).sum::<u64>(), 0, "trimming drops nothing");
}

#[test]
fn an_ndp_incast_ends_near_the_receivers_link_time_without_a_drop() {
    let n = 15;
    let mut s = format!(
        "seed = 1\n[network]\ntopology = \"star\"\nhosts = {}\nlink_rate = \"10Gbps\"\nlink_delay = \"1us\"\n\
         buffer = \"100pkt\"\nqueue = \"trim\"\nnic_queue = \"trim\"\n\
         [transport]\nprotocol = \"ndp\"\nmss = \"9000B\"\nheader_bytes = \"64B\"\n[monitor]\ndrops = true\n",
        n + 1
    );
    for i in 0..n {
        s += &format!("[[flows]]\nsrc = \"h{i}\"\ndst = \"h{n}\"\nsize = \"1MB\"\n");
    }
    let r = run(&s);
    assert!(r.flows.iter().all(|f| f.completed));
    let trimmed: u64 = r.links.iter().map(|l| l.trimmed_packets).sum();
    assert!(trimmed > 0, "fifteen first windows at once overflow the receiver's port: it trims");
    assert_eq!(r.drops.as_ref().unwrap().len(), 0);
    // The receiver's link carries the 15 MB (112 packets of 9064 B per flow) once, plus the
    // trimmed packets sent again, and the pulls keep it busy.
    let wire = n as f64 * 112.0 * 9064.0 * 8.0 / 10e9;
    let last = r.flows.iter().map(|f| f.finish_s.unwrap()).fold(0.0, f64::max);
    assert!(last < wire * 1.10, "the last flow ends at {last:.6} s, the link's own time is {wire:.6} s");
}

#[test]
fn an_ndp_run_repeats_byte_for_byte() {
    let (a, b) = (run(&permutation(true, "1MB")), run(&permutation(true, "1MB")));
    let key = |r: &fctlab_sim::Results| {
        r.flows
            .iter()
            .map(|f| (f.finish_s.map(f64::to_bits), f.retransmits, f.out_of_order_packets))
            .collect::<Vec<_>>()
    };
    assert_eq!(key(&a), key(&b));
}
