//! NSCC on the `uet` transport end to end: sprayed by REPS over trimming switches that mark,
//! a permutation fills the hosts' links where per-flow ECMP collides, an incast ends near the
//! receiver's link time without a drop, and a run repeats byte for byte.

mod common;
use common::*;

/// A k = 4 fat-tree at 100 Gbps with uet-htsim's UEC defaults: 4150-byte packets (64 B of
/// header), trimming at 43 packets, marking from 9.
fn network(policy: &str) -> String {
    format!(
        "seed = 3\n[network]\ntopology = \"fattree\"\nk = 4\nlink_rate = \"100Gbps\"\nlink_delay = \"1us\"\n\
         buffer = \"86pkt\"\nqueue = \"trim\"\ntrim_threshold = \"43pkt\"\ntrim_ecn_threshold = \"9pkt\"\n\
         nic_queue = \"trim\"\nload_balancing = \"{policy}\"\n\
         [transport]\nprotocol = \"nscc\"\nmss = \"4086B\"\nheader_bytes = \"64B\"\n[monitor]\ndrops = true\n"
    )
}

fn permutation(policy: &str, size: &str) -> String {
    network(policy) + &format!("[[workloads]]\nkind = \"permutation\"\nsenders = \"all\"\nsizes = \"{size}\"\n")
}

fn mean_link_share(r: &fctlab_sim::Results) -> f64 {
    let s: Vec<f64> = r.flows.iter().map(|f| f.size_bytes.unwrap() as f64 * 8.0 / f.fct_s.unwrap() / 100e9).collect();
    s.iter().sum::<f64>() / s.len() as f64
}

#[test]
fn nscc_sprayed_by_reps_fills_a_permutation_where_ecmp_collides() {
    let reps = run(&permutation("reps", "20MB"));
    let ecmp = run(&permutation("ecmp", "20MB"));
    assert!(reps.flows.iter().all(|f| f.completed) && ecmp.flows.iter().all(|f| f.completed));
    let (r, e) = (mean_link_share(&reps), mean_link_share(&ecmp));
    assert!(r >= 0.85, "NSCC with REPS: {r:.3} of the link rate on average");
    assert!(e < r - 0.1, "NSCC over ECMP: {e:.3}, collisions hold flows back");
    assert_eq!(reps.drops.as_ref().unwrap().len(), 0, "trimming drops nothing");
}

#[test]
fn an_nscc_incast_ends_near_the_receivers_link_time_without_a_drop() {
    let n = 15;
    let mut s = network("reps");
    for i in 0..n {
        s += &format!("[[flows]]\nsrc = \"h{}\"\ndst = \"h0\"\nsize = \"2MB\"\n", i + 1);
    }
    let r = run(&s);
    assert!(r.flows.iter().all(|f| f.completed));
    assert_eq!(r.drops.as_ref().unwrap().len(), 0);
    // 2 MB in 490 packets of up to 4150 B each, fifteen times, over the receiver's link.
    let wire = n as f64 * (2_000_000.0 + 490.0 * 64.0) * 8.0 / 100e9;
    let last = r.flows.iter().map(|f| f.finish_s.unwrap()).fold(0.0, f64::max);
    assert!(last < wire * 1.25, "the last flow ends at {last:.6} s, the link's own time is {wire:.6} s");
}

#[test]
fn an_nscc_run_repeats_byte_for_byte() {
    let (a, b) = (run(&permutation("reps", "1MB")), run(&permutation("reps", "1MB")));
    let key = |r: &fctlab_sim::Results| {
        r.flows.iter().map(|f| (f.finish_s.map(f64::to_bits), f.retransmits)).collect::<Vec<_>>()
    };
    assert_eq!(key(&a), key(&b));
}
