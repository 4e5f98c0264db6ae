//! Partitions of a network for a parallel engine, and the window profile a sequential run
//! gives of them: parts hold whole pods or leaves, the lookahead is the cut links' least delay,
//! every event is counted once, and the run is the same with the profile as without.

mod common;
use common::*;
use fctlab_net::partition::{Partition, MIN_PACKET_BYTES};
use fctlab_net::topology::Topology;

const FATTREE: &str = "seed = 2\nstop_time = \"3ms\"\n[network]\ntopology = \"fattree\"\nk = 4\nlink_rate = \"10Gbps\"\nlink_delay = \"1us\"\nbuffer = \"50pkt\"\n[transport]\nmin_rto = \"1ms\"\n[[workloads]]\nkind = \"permutation\"\nsenders = \"all\"\nreceivers = \"all\"\nsizes = \"200KB\"\n";

fn part_of(t: &Topology, p: &Partition, name: &str) -> u16 {
    p.of_node[t.find(name).unwrap_or_else(|| panic!("no node {name}"))]
}

#[test]
fn a_fat_tree_splits_by_pod_and_its_cores_spread_evenly() {
    let s = sim(FATTREE);
    let t = &s.scenario().topology;
    for (parts, pods_per_part) in [(4, 1), (2, 2)] {
        let p = Partition::of(t, parts).unwrap();
        for pod in 0..4 {
            let want = (pod / pods_per_part) as u16;
            for name in [format!("edge{pod}_0"), format!("edge{pod}_1"), format!("agg{pod}_0"), format!("agg{pod}_1")] {
                assert_eq!(part_of(t, &p, &name), want, "{name} in {parts} parts");
            }
            for h in 4 * pod..4 * pod + 4 {
                assert_eq!(part_of(t, &p, &format!("h{h}")), want, "h{h} in {parts} parts");
            }
        }
        let mut cores = vec![0; parts];
        for c in 0..4 {
            cores[part_of(t, &p, &format!("core{c}")) as usize] += 1;
        }
        assert_eq!(cores, vec![4 / parts; parts], "cores in {parts} parts");
        assert!(p.ports.iter().all(|&n| n == p.ports[0]), "{:?}", p.ports);
        // only fabric links are cut, each 1 us plus a 40-byte packet at 10 Gb/s
        assert!(p.cut_links.iter().all(|&l| t.links[l].level == "fabric"));
        assert_eq!(p.lookahead.unwrap().as_nanos(), 1_000 + MIN_PACKET_BYTES * 8 / 10);
    }
    let one = Partition::of(t, 1).unwrap();
    assert!(one.cut_links.is_empty() && one.lookahead.is_none() && one.of_node.iter().all(|&x| x == 0));
    assert!(Partition::of(t, 0).is_err() && Partition::of(t, t.nodes.len() + 1).is_err());
}

#[test]
fn a_leaf_spine_splits_by_runs_of_leaves() {
    let s = sim("[network]\ntopology = \"leafspine\"\nleaves = 6\nspines = 3\nhosts_per_leaf = 2\n[[flows]]\nsrc = \"h0\"\ndst = \"h11\"\nsize = \"10KB\"\n");
    let t = &s.scenario().topology;
    let p = Partition::of(t, 3).unwrap();
    let leaves: Vec<u16> = (0..6).map(|l| part_of(t, &p, &format!("leaf{l}"))).collect();
    assert_eq!(leaves, vec![0, 0, 1, 1, 2, 2]);
    let mut spines: Vec<u16> = (0..3).map(|l| part_of(t, &p, &format!("spine{l}"))).collect();
    spines.sort();
    assert_eq!(spines, vec![0, 1, 2]);
}

#[test]
fn the_profile_counts_every_event_once_and_leaves_the_run_as_it_was() {
    let plain = {
        let mut s = sim(FATTREE);
        s.run();
        s.results(false)
    };
    let mut s = sim(FATTREE);
    let partition = Partition::of(&s.scenario().topology, 4).unwrap();
    s.profile_windows(partition).unwrap();
    s.run();
    let r = s.window_profile().unwrap();
    let profiled = s.results(false);
    // the same run, to the bit
    let bits = |r: &fctlab_sim::Results| -> Vec<_> {
        r.flows.iter().map(|f| (f.bytes_delivered, f.fct_s.map(f64::to_bits), f.retransmits)).collect()
    };
    assert_eq!(bits(&plain), bits(&profiled));
    assert_eq!(plain.summary.events, profiled.summary.events);
    // every event counted once: in a part or as no part's
    assert_eq!(r.events, profiled.summary.events);
    assert_eq!(r.events_per_part.iter().sum::<u64>() + r.events_global, r.events);
    // the busiest part per window is at least the mean part's, at most all of it (and the
    // packets it took in across the cut)
    let in_parts = r.events - r.events_global;
    assert!(r.sum_of_max * 4 >= in_parts && r.sum_of_max <= in_parts + r.cut_packets, "{r:?}");
    assert!(r.windows_busy > 100 && r.windows_busy as u128 <= 3_000_000 / r.lookahead_ns.unwrap() as u128 + 1);
    // a permutation of 16 hosts over 4 pods sends most flows between pods: across the cut
    assert!(r.cut_packets > r.events / 20, "{r:?}");
    assert!(r.events_per_part.iter().all(|&e| e > in_parts / 8), "{r:?}");
    let s1 = r.predicted_speedup(0.0);
    assert!(s1 > 1.0 && s1 <= 4.0, "{s1}");
    assert!(r.predicted_speedup(1e6) < s1, "a dearer barrier predicts less");
}

#[test]
fn one_part_is_the_sequential_run_and_the_profile_is_refused_once_running() {
    let mut s = sim(FATTREE);
    let partition = Partition::of(&s.scenario().topology, 1).unwrap();
    s.profile_windows(partition).unwrap();
    s.run();
    let r = s.window_profile().unwrap();
    assert_eq!((r.windows_busy, r.cut_packets), (1, 0));
    assert_eq!(r.sum_of_max, r.events - r.events_global);
    assert!((r.predicted_speedup(0.0) - 1.0).abs() < 1e-9);
    let other = Partition::of(&sim(FATTREE).scenario().topology, 2).unwrap();
    assert!(s.profile_windows(other).unwrap_err().contains("before the run starts"));
}
