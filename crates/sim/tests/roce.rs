//! The `roce` transport end to end: RoCE at line rate over lossless and lossy fabrics, and
//! DCQCN's rate control cutting the pauses of an incast.

mod common;
use common::*;

/// `n` hosts of a leaf-spine fabric's first leaf sending `size` each to a host of the second
/// leaf at once (the receiver's port the bottleneck, a spine between): `protocol` over
/// `queue` lines, `pfc` in `[network]`.
fn incast(n: usize, size: &str, protocol: &str, pfc: bool, queue: &str) -> String {
    let mut s = format!(
        "seed = 1\n[network]\ntopology = \"leafspine\"\nleaves = 2\nspines = 1\nhosts_per_leaf = {n}\n\
         link_rate = \"10Gbps\"\nlink_delay = \"1us\"\nfabric_link_rate = \"40Gbps\"\nfabric_link_delay = \"1us\"\n\
         buffer = \"100pkt\"\npfc = {pfc}\n{queue}\n\
         [transport]\nprotocol = \"{protocol}\"\nmss = \"1000B\"\nheader_bytes = \"48B\"\nmin_rto = \"1ms\"\n"
    );
    for i in 0..n {
        s += &format!("[[flows]]\nsrc = \"h{i}\"\ndst = \"h{n}\"\nsize = \"{size}\"\n");
    }
    s
}

/// DCQCN's marking: RED on the instantaneous queue (weight 1) from 5 KB to 100 KB of bytes
/// waiting (the DCQCN paper's Kmin, and a Kmax within the 100-packet buffer), Pmax 1%.
const RED: &str = "queue = \"red\"\nred_min_threshold = \"5KB\"\nred_max_threshold = \"100KB\"\nred_max_p = 0.01\n\
                   red_weight = 1.0\nred_gentle = false\nred_ecn = true";

fn drops(r: &fctlab_sim::Results) -> u64 {
    r.links.iter().map(|l| l.drops).sum::<u64>() + r.flows.iter().map(|f| f.drops).sum::<u64>()
}

fn last_finish(r: &fctlab_sim::Results) -> f64 {
    r.flows.iter().filter_map(|f| f.finish_s).fold(0.0, f64::max)
}

#[test]
fn a_lossless_roce_incast_loses_nothing_and_keeps_the_bottleneck_busy() {
    let r = run(&incast(4, "2MB", "roce", true, "queue = \"droptail\""));
    assert_eq!(drops(&r), 0);
    assert!(r.flows.iter().all(|f| f.completed && f.retransmits == 0 && f.timeouts == 0));
    // 8 MB of payload, 8.38 MB on the wire, through the receiver's 10 Gbps port: 6.7 ms at the
    // least; PFC keeps the port fed, so the last flow ends within 5% of that.
    let ideal = 4.0 * 2e6 * 1048.0 / 1000.0 * 8.0 / 10e9;
    let last = last_finish(&r);
    assert!(last >= ideal && last < 1.05 * ideal, "last flow at {last} s, the port's own time {ideal} s");
}

#[test]
fn lossy_roce_recovers_by_going_back() {
    let r = run(&incast(4, "1MB", "roce", false, "queue = \"droptail\""));
    assert!(drops(&r) > 0, "an incast at line rate overflows a lossy 100-packet buffer");
    assert!(r.flows.iter().all(|f| f.completed && f.bytes_delivered == 1_000_000));
    assert!(r.flows.iter().map(|f| f.retransmits).sum::<u64>() > 0);
}

#[test]
fn irn_resends_what_was_lost_where_go_back_n_resends_the_window() {
    // Twelve senders: their BDP caps (about 12 packets each on this path) together pass the
    // receiver's 100-packet buffer.
    let lossy = |recovery: &str| {
        let toml = incast(12, "1MB", "roce", false, "queue = \"droptail\"")
            .replace("[transport]\n", &format!("[transport]\nroce_recovery = \"{recovery}\"\n"));
        run(&toml)
    };
    let (gbn, irn) = (lossy("go_back_n"), lossy("irn"));
    for r in [&gbn, &irn] {
        assert!(drops(r) > 0);
        assert!(r.flows.iter().all(|f| f.completed && f.bytes_delivered == 1_000_000));
    }
    let resent = |r: &fctlab_sim::Results| r.flows.iter().map(|f| f.retransmits).sum::<u64>();
    let lost = |r: &fctlab_sim::Results| r.flows.iter().map(|f| f.drops).sum::<u64>();
    // IRN resends what was dropped, about once each; going back resends the packets behind
    // each loss as well, which are dropped in turn.
    assert!(resent(&irn) <= lost(&irn) + 12 * 3, "irn resent {} for {} lost", resent(&irn), lost(&irn));
    assert!(resent(&gbn) > lost(&gbn), "go-back-N resent {} for {} lost", resent(&gbn), lost(&gbn));
    assert!(10 * lost(&irn) < lost(&gbn), "lost: irn {}, go-back-N {}", lost(&irn), lost(&gbn));
    // 12 MB of payload through the receiver's 10 Gbps port: 10.06 ms at the least.
    let own = 12.0 * 1e6 * 1048.0 / 1000.0 * 8.0 / 10e9;
    assert!(last_finish(&irn) < 1.05 * own, "irn ends at {} s, the port's own time {own} s", last_finish(&irn));
    assert!(last_finish(&gbn) > 2.0 * own, "go-back-N ends at {} s", last_finish(&gbn));
}

#[test]
fn dcqcn_cuts_the_pauses_of_an_incast_that_line_rate_roce_causes() {
    // (Both ECN-capable, so that RED marks rather than drops: line-rate RoCE ignores the CNPs.)
    let pauses = |protocol: &str| {
        let toml = incast(4, "4MB", protocol, true, RED).replace("[transport]\n", "[transport]\necn = true\n");
        let mut s = sim(&toml);
        s.run();
        let n = s.pfc_log().iter().filter(|p| p.pause).count();
        let r = s.results(false);
        assert_eq!(drops(&r), 0, "{protocol}");
        assert!(r.flows.iter().all(|f| f.completed), "{protocol}");
        (n, r.links.iter().map(|l| l.ecn_marks).sum::<u64>(), last_finish(&r))
    };
    let (roce, roce_marks, roce_end) = pauses("roce");
    let (dcqcn, dcqcn_marks, dcqcn_end) = pauses("dcqcn");
    assert!(roce_marks > 0 && dcqcn_marks > 0);
    assert!(roce > 0 && dcqcn * 2 < roce, "pauses: roce {roce}, dcqcn {dcqcn}");
    // Line-rate RoCE with PFC keeps the bottleneck busy; DCQCN's cuts leave it idle at times
    // (its rate recovers in steps of 55 us) but it stays above 80% busy.
    let own = 4.0 * 4e6 * 1048.0 / 1000.0 * 8.0 / 10e9;
    assert!(roce_end < 1.05 * own, "roce ends at {roce_end} s, the port's own time {own} s");
    assert!(dcqcn_end < own / 0.8, "dcqcn ends at {dcqcn_end} s, the port's own time {own} s");
}

#[test]
fn two_dcqcn_flows_through_one_port_end_close_together() {
    let r = run(&incast(2, "10MB", "dcqcn", true, RED));
    let fct: Vec<f64> = r.flows.iter().filter_map(|f| f.fct_s).collect();
    assert_eq!(fct.len(), 2);
    let (a, b) = (fct[0].min(fct[1]), fct[0].max(fct[1]));
    assert!(a > 0.9 * b, "fcts {a} and {b}: the two flows share the port");
}

#[test]
fn the_scheduling_layer_refuses_roce_flows_by_name() {
    let toml = incast(2, "1MB", "dcqcn", true, RED).replace("[transport]\n", "[transport]\nscheduler = \"srpt\"\n");
    let sc = fctlab_scenario::load(&toml, "test.toml", fctlab_scenario::schema::Format::Toml, &[]).unwrap();
    let e = fctlab_sim::Simulation::new(sc).err().expect("refused").to_string();
    assert!(e.contains("transport.scheduler") && e.contains("\"dcqcn\" on the roce transport"), "{e}");
}

/// The queue of the receiver's port (leaf1 -> h`n`): its time-weighted mean in packets.
fn bottleneck_queue(r: &fctlab_sim::Results, n: usize) -> f64 {
    let dst = format!("h{n}");
    r.links.iter().find(|l| l.src == "leaf1" && l.dst == dst).map(|l| l.mean_queue_pkts).expect("the receiver's port")
}

#[test]
fn hpcc_keeps_the_receivers_queue_short_and_pauses_little() {
    let run_one = |protocol: &str| {
        let mut s = sim(&incast(4, "4MB", protocol, true, "queue = \"droptail\""));
        s.run();
        let pauses = s.pfc_log().iter().filter(|p| p.pause).count();
        let r = s.results(false);
        assert_eq!(drops(&r), 0, "{protocol}");
        assert!(r.flows.iter().all(|f| f.completed && f.retransmits == 0), "{protocol}");
        (pauses, bottleneck_queue(&r, 4), last_finish(&r), r)
    };
    let (roce_pauses, roce_queue, _, _) = run_one("roce");
    let (pauses, queue, end, r) = run_one("hpcc");
    assert!(pauses * 10 < roce_pauses, "pauses: hpcc {pauses}, roce {roce_pauses}");
    // (Its first round trip, four windows of one base BDP each, queues as line-rate RoCE does;
    // after it the queue stays near empty.)
    assert!(queue * 10.0 < roce_queue, "the receiver's mean queue: hpcc {queue} packets, roce {roce_queue}");
    // Every data packet carries the 42-byte telemetry header: 1,000 + 48 + 42 B on the wire.
    let data: u64 = r.links.iter().filter(|l| l.src == "leaf1" && l.dst == "h4").map(|l| l.tx_bytes).sum();
    let acks = 4 * 4000 * (48 + 42); // one ACK per packet back, each echoing the header
    assert_eq!(data, 4 * 4000 * 1090, "the receiver's link carries the data only ({acks} B of ACKs go the other way)");
    // eta = 0.95: the port's own time at 95% is the bound the incast ends near.
    let own = 4.0 * 4e6 * 1090.0 / 1000.0 * 8.0 / 10e9;
    assert!(end > own && end < own / 0.85, "hpcc ends at {end} s, the port's own time {own} s");
}

#[test]
fn hpcc_refuses_a_link_rate_its_telemetry_cannot_carry() {
    let toml = incast(2, "1MB", "hpcc", true, "queue = \"droptail\"")
        .replace("link_rate = \"10Gbps\"", "link_rate = \"13Gbps\"");
    let sc = fctlab_scenario::load(&toml, "test.toml", fctlab_scenario::schema::Format::Toml, &[]).unwrap();
    let e = fctlab_sim::Simulation::new(sc).err().expect("refused").to_string();
    assert!(e.contains("hpcc cannot run on the link leaf0->h0") && e.contains("13000000000 bps"), "{e}");
}

#[test]
fn swift_holds_the_queue_at_its_target_delay_and_shares_the_port() {
    let mut s = sim(&incast(4, "4MB", "swift", true, "queue = \"droptail\""));
    s.run();
    let pauses = s.pfc_log().iter().filter(|p| p.pause).count();
    let r = s.results(false);
    assert_eq!((drops(&r), pauses), (0, 0));
    let fct: Vec<f64> = r.flows[..4].iter().filter_map(|f| f.fct_s).collect();
    assert!(jain(&fct) > 0.999, "{fct:?}");
    let own = 4.0 * 4e6 * 1048.0 / 1000.0 * 8.0 / 10e9;
    assert!(last_finish(&r) < 1.02 * own, "{} against the port's own {own} s", last_finish(&r));
    // The target: 20 us, plus 3 switches x 20/6.55 us, plus flow scaling at windows of a few
    // packets; the receiver's queue sits within it (1,048 B take 0.84 us at 10 Gbps).
    let q_us = bottleneck_queue(&r, 4) * 1048.0 * 8.0 / 10e9 * 1e6;
    assert!(q_us > 10.0 && q_us < 20.0 + 3.0 * 20.0 / 6.55 + 100.0, "mean queue {q_us} us");
}

#[test]
fn timely_completes_an_incast_without_loss() {
    let r = run(&incast(4, "4MB", "timely", true, "queue = \"droptail\""));
    assert_eq!(drops(&r), 0);
    assert!(r.flows.iter().all(|f| f.completed && f.retransmits == 0));
}

#[test]
fn a_nic_serves_its_queue_pairs_in_turn_and_never_queues_behind_itself() {
    // Four line-rate messages from one host to four others: together they would send four
    // times the NIC's rate; the NIC takes one packet at a time from them in turn.
    let mut toml = String::from(
        "seed = 1\n[network]\ntopology = \"star\"\nhosts = 5\nlink_rate = \"10Gbps\"\nlink_delay = \"1us\"\nbuffer = \"100pkt\"\n\
         pfc = true\n[transport]\nprotocol = \"roce\"\nmss = \"1000B\"\nheader_bytes = \"48B\"\nmin_rto = \"1ms\"\n",
    );
    for d in 1..5 {
        toml += &format!("[[flows]]\nsrc = \"h0\"\ndst = \"h{d}\"\nsize = \"1MB\"\n");
    }
    let r = run(&toml);
    let nic = r.links.iter().find(|l| l.src == "h0").unwrap();
    assert!(nic.max_queue_bytes <= 4 * 1048, "the NIC's queue at its highest: {} B", nic.max_queue_bytes);
    let fct: Vec<f64> = r.flows.iter().filter_map(|f| f.fct_s).collect();
    assert!(jain(&fct) > 0.999, "{fct:?}");
    // 4 MB through the one 10 Gbps NIC.
    let own = 4.0 * 1e6 * 1048.0 / 1000.0 * 8.0 / 10e9;
    assert!(fct.iter().all(|&t| t < 1.02 * own), "{fct:?} against {own} s");
}
