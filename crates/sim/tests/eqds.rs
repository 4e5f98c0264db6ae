//! EQDS end to end (`protocol = "eqds"` over trimming switches): a permutation fills the
//! hosts' links, an incast ends near the receiver's link time without a drop, and a run
//! repeats byte for byte.

mod common;
use common::*;

/// A k = 4 fat-tree at 100 Gbps with htsim's EQDS defaults: 4150-byte packets (64 B of
/// header), trimming at 35 packets, each sender spraying over its paths in turn.
fn network() -> String {
    "seed = 3\n[network]\ntopology = \"fattree\"\nk = 4\nlink_rate = \"100Gbps\"\nlink_delay = \"1us\"\n\
     buffer = \"70pkt\"\nqueue = \"trim\"\ntrim_threshold = \"35pkt\"\nnic_queue = \"trim\"\n\
     load_balancing = \"permutation\"\n\
     [transport]\nprotocol = \"eqds\"\nmss = \"4086B\"\nheader_bytes = \"64B\"\n[monitor]\ndrops = true\n"
        .to_string()
}

fn mean_link_share(r: &fctlab_sim::Results) -> f64 {
    let s: Vec<f64> = r.flows.iter().map(|f| f.size_bytes.unwrap() as f64 * 8.0 / f.fct_s.unwrap() / 100e9).collect();
    s.iter().sum::<f64>() / s.len() as f64
}

#[test]
fn eqds_fills_a_permutation_of_long_flows() {
    let r = run(&(network() + "[[workloads]]\nkind = \"permutation\"\nsenders = \"all\"\nsizes = \"20MB\"\n"));
    assert!(r.flows.iter().all(|f| f.completed));
    let share = mean_link_share(&r);
    assert!(share >= 0.90, "EQDS: {share:.3} of the link rate on average");
    assert_eq!(r.drops.as_ref().unwrap().len(), 0);
}

#[test]
fn an_eqds_incast_ends_near_the_receivers_link_time_without_a_drop() {
    let n = 15;
    let mut s = network();
    for i in 0..n {
        s += &format!("[[flows]]\nsrc = \"h{}\"\ndst = \"h0\"\nsize = \"2MB\"\n", i + 1);
    }
    let r = run(&s);
    assert!(r.flows.iter().all(|f| f.completed));
    assert!(r.links.iter().map(|l| l.trimmed_packets).sum::<u64>() > 0, "fifteen first windows at once trim");
    assert_eq!(r.drops.as_ref().unwrap().len(), 0);
    let wire = n as f64 * (2_000_000.0 + 490.0 * 64.0) * 8.0 / 100e9;
    let last = r.flows.iter().map(|f| f.finish_s.unwrap()).fold(0.0, f64::max);
    assert!(last < wire * 1.15, "the last flow ends at {last:.6} s, the link's own time is {wire:.6} s");
}

#[test]
fn an_eqds_run_repeats_byte_for_byte() {
    let toml = network() + "[[workloads]]\nkind = \"permutation\"\nsenders = \"all\"\nsizes = \"1MB\"\n";
    let (a, b) = (run(&toml), run(&toml));
    let key = |r: &fctlab_sim::Results| {
        r.flows.iter().map(|f| (f.finish_s.map(f64::to_bits), f.retransmits)).collect::<Vec<_>>()
    };
    assert_eq!(key(&a), key(&b));
}
