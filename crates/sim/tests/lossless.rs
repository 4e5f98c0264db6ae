//! Priority flow control end to end (`[network] pfc = true`): incasts that drop packets on
//! lossy ports drop none on lossless ones, every pause is resumed, and a pause behind a
//! congested spine propagates to the senders' switch and their NICs.

mod common;
use common::*;
use fctlab_sim::PauseRecord;

/// `n` hosts of a star sending `size` each to the last host at once, TCP with a large first
/// window, 100-packet buffers; `pfc` lines added to `[network]`.
fn incast(n: usize, size: &str, pfc: &str) -> String {
    let mut s = format!(
        "seed = 1\n[network]\ntopology = \"star\"\nhosts = {}\nlink_rate = \"10Gbps\"\nlink_delay = \"1us\"\n\
         buffer = \"100pkt\"\n{pfc}\n[transport]\ninitial_cwnd = 64\nmin_rto = \"1ms\"\n",
        n + 1
    );
    for i in 0..n {
        s += &format!("[[flows]]\nsrc = \"h{i}\"\ndst = \"h{n}\"\nsize = \"{size}\"\n");
    }
    s
}

/// Drops at ports, and drops counted by the flows (a switch's drop on arrival included).
fn drops(r: &fctlab_sim::Results) -> u64 {
    r.links.iter().map(|l| l.drops).sum::<u64>() + r.flows.iter().map(|f| f.drops).sum::<u64>()
}

/// (from, to) names of port `p` (two per link: a -> b, then b -> a).
fn ends(s: &fctlab_sim::Simulation, p: u32) -> (String, String) {
    let topo = &s.scenario().topology;
    let l = &topo.links[p as usize / 2];
    let (a, b) = if p % 2 == 0 { (l.a, l.b) } else { (l.b, l.a) };
    (topo.nodes[a].name.clone(), topo.nodes[b].name.clone())
}

#[test]
fn an_incast_that_drops_on_lossy_ports_drops_nothing_on_lossless_ones() {
    let lossy = run(&incast(8, "2MB", ""));
    assert!(drops(&lossy) > 0, "the set-up must overflow without PFC");
    let mut s = sim(&incast(8, "2MB", "pfc = true"));
    s.run();
    let log: Vec<PauseRecord> = s.pfc_log().to_vec();
    let r = s.results(false);
    assert_eq!(drops(&r), 0);
    assert!(r.flows.iter().all(|f| f.completed && f.retransmits == 0), "no loss, no retransmission");
    // The senders' NICs were paused, and each pause was resumed.
    assert!(!log.is_empty());
    for rec in log.iter().filter(|x| x.pause) {
        let (from, to) = ends(&s, rec.port);
        assert!(from.starts_with('h') && to == "sw0", "only the senders' NICs feed the switch: {from}->{to}");
    }
    let mut open = std::collections::BTreeMap::new();
    for rec in &log {
        let was = open.insert((rec.port, rec.prio), rec.pause);
        assert_ne!(was, Some(rec.pause), "a pause or resume twice in a row at port {}", rec.port);
    }
    assert!(open.values().all(|&paused| !paused), "every pause resumed by the end");
    // The switch never held more from one input than its pause threshold plus the headroom.
    for p in 0..2 * s.scenario().topology.links.len() {
        if let Some((max, (_, _, limit))) = s.pfc_input(p) {
            assert!(max <= limit, "port {p}: held {max} B, limit {limit} B");
        }
    }
}

#[test]
fn a_pause_behind_a_congested_spine_reaches_the_senders_switch_and_their_nics() {
    // Four hosts of leaf 0 send to one host of leaf 1: the congested port is leaf 1's towards
    // the receiver, fed by the spine; the spine then holds what leaf 0 sends it.
    let mut toml = String::from(
        "seed = 1\n[network]\ntopology = \"leafspine\"\nleaves = 2\nspines = 1\nhosts_per_leaf = 4\n\
         link_rate = \"10Gbps\"\nlink_delay = \"1us\"\nfabric_link_rate = \"40Gbps\"\nfabric_link_delay = \"1us\"\n\
         buffer = \"100pkt\"\npfc = true\n[transport]\ninitial_cwnd = 64\nmin_rto = \"1ms\"\n",
    );
    let hosts: Vec<String> = {
        let s = sim(&toml);
        s.scenario().host_names().iter().map(|h| h.to_string()).collect()
    };
    for src in &hosts[..4] {
        toml += &format!("[[flows]]\nsrc = \"{src}\"\ndst = \"{}\"\nsize = \"4MB\"\n", hosts[4]);
    }
    let mut s = sim(&toml);
    s.run();
    let first = |pred: &dyn Fn(&str, &str) -> bool| {
        s.pfc_log().iter().filter(|x| x.pause).find(|x| {
            let (a, b) = ends(&s, x.port);
            pred(&a, &b)
        })
    };
    let is_host = |n: &str| hosts.iter().any(|h| h == n);
    let spine_to_leaf = first(&|a, b| a.contains("spine") && !is_host(b)).expect("the spine paused");
    let leaf_to_spine = first(&|a, b| !is_host(a) && b.contains("spine")).expect("leaf 0 paused");
    let nic = first(&|a, _| is_host(a)).expect("a sender's NIC paused");
    assert!(spine_to_leaf.time <= leaf_to_spine.time && leaf_to_spine.time <= nic.time);
    let r = s.results(false);
    assert_eq!(drops(&r), 0);
    assert!(r.flows.iter().all(|f| f.completed));
}

#[test]
fn a_pause_names_its_congested_link_and_the_flows_it_holds_up_behind_it() {
    // Four hosts of leaf 0 send to h4 of leaf 1; h3 also sends to h5 of leaf 1, whose own
    // link is idle. Leaf 1 pauses the spine for h4's port: h3's flow to h5 waits there too, a
    // victim of head-of-line blocking.
    let mut toml = String::from(
        "seed = 1\n[network]\ntopology = \"leafspine\"\nleaves = 2\nspines = 1\nhosts_per_leaf = 4\n\
         link_rate = \"10Gbps\"\nlink_delay = \"1us\"\nfabric_link_rate = \"40Gbps\"\nfabric_link_delay = \"1us\"\n\
         buffer = \"100pkt\"\npfc = true\n[transport]\ninitial_cwnd = 64\nmin_rto = \"1ms\"\n",
    );
    for src in ["h0", "h1", "h2", "h3"] {
        toml += &format!("[[flows]]\nsrc = \"{src}\"\ndst = \"h4\"\nsize = \"4MB\"\n");
    }
    toml += "[[flows]]\nsrc = \"h3\"\ndst = \"h5\"\nsize = \"4MB\"\n";
    let mut s = sim(&toml);
    s.run();
    let spine = s
        .pfc_log()
        .iter()
        .filter(|x| x.pause)
        .filter(|x| ends(&s, x.port) == ("spine0".to_string(), "leaf1".to_string()))
        .filter_map(|x| x.blocked)
        .collect::<Vec<_>>();
    assert!(!spine.is_empty(), "leaf 1 paused the spine");
    // The congested link is leaf 1's port to h4 while its flows last (h5's own once they are
    // done), and at pauses while h4's port is the congested one, h3's flow to h5 waits too.
    let to_h4 = |b: &fctlab_sim::Blocked| b.congested.map(|q| ends(&s, q)) == Some(("leaf1".into(), "h4".into()));
    assert!(to_h4(&spine[0]), "{:?}", spine[0]);
    assert!(spine.iter().all(|b| b.victim_flows <= 1 && b.victim_flows <= b.flows));
    assert!(spine.iter().any(|b| to_h4(b) && b.victim_flows == 1), "h3 -> h5 held up behind h4's link");
    // The pauses of leaf 0's ports toward the spine name the spine's port to leaf 1: every
    // flow there goes that way, so none is a victim at that hop.
    for b in s.pfc_log().iter().filter(|x| x.pause && ends(&s, x.port).1 == "spine0").filter_map(|x| x.blocked) {
        assert_eq!(b.congested.map(|q| ends(&s, q)), Some(("spine0".into(), "leaf1".into())));
        assert_eq!(b.victim_flows, 0);
    }
    let r = s.results(false);
    let rows = r.pfc.as_ref().expect("the pause monitor's rows");
    let row = rows.iter().find(|x| x.event == "pause" && x.link == "spine0->leaf1").unwrap();
    assert_eq!(row.congested_link.as_deref(), Some("leaf1->h4"));
    assert!(rows.iter().filter(|x| x.event == "resume").all(|x| x.waiting_packets.is_none()));
}

#[test]
fn strict_priority_over_pfc_serves_the_first_band_while_the_bulk_band_is_paused() {
    // Four hosts send bulk to h4 (tag "bulk", band 1) and h0 a 20 KB query (tag "q", band 0)
    // into the middle of it. FIFO lossless ports make the query wait behind the bulk; strict
    // priority serves it first, and only the bulk band is paused.
    let toml = |queue: &str| {
        let mut s = format!(
            "seed = 1\n[network]\ntopology = \"star\"\nhosts = 5\nlink_rate = \"10Gbps\"\nlink_delay = \"1us\"\n\
             buffer = \"100pkt\"\npfc = true\n{queue}\n[transport]\ninitial_cwnd = 64\nmin_rto = \"1ms\"\n"
        );
        for i in 0..4 {
            s += &format!("[[flows]]\nsrc = \"h{i}\"\ndst = \"h4\"\nsize = \"2MB\"\ntag = \"bulk\"\n");
        }
        s + "[[flows]]\nsrc = \"h0\"\ndst = \"h4\"\nsize = \"20KB\"\ntag = \"q\"\nstart = \"1ms\"\n"
    };
    let query_fct = |queue: &str| {
        let mut s = sim(&toml(queue));
        s.run();
        let prios: std::collections::BTreeSet<u8> = s.pfc_log().iter().filter(|p| p.pause).map(|p| p.prio).collect();
        let r = s.results(false);
        assert_eq!(drops(&r), 0, "{queue}");
        assert!(r.flows.iter().all(|f| f.completed), "{queue}");
        (r.flows[4].fct_s.unwrap(), prios)
    };
    let (fifo, _) = query_fct("queue = \"droptail\"");
    let (strict, prios) = query_fct("queue = \"priority\"\npriority_tags = [\"q\", \"bulk\"]");
    assert_eq!(prios, [1u8].into_iter().collect(), "only the bulk band is paused");
    assert!(strict * 3.0 < fifo, "the query: {strict} s with strict priority, {fifo} s first-in-first-out");
}

#[test]
fn a_lossless_port_marks_but_never_drops_early() {
    // RED in ECN mode on lossy ports drops the packets it cannot mark (these flows are not
    // ECN-capable); on lossless ports it lets them through.
    let red = "queue = \"red\"\nred_min_threshold = \"5pkt\"\nred_max_threshold = \"50pkt\"\nred_weight = 1.0\nred_ecn = true";
    let lossy = run(&incast(8, "1MB", red));
    assert!(drops(&lossy) > 0);
    let lossless = run(&incast(8, "1MB", &format!("{red}\npfc = true")));
    assert_eq!(drops(&lossless), 0);
    assert!(lossless.flows.iter().all(|f| f.completed && f.retransmits == 0));
}

/// A small deterministic generator for the property test's cases.
fn next(state: &mut u64) -> u64 {
    *state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    *state >> 33
}

#[test]
fn lossless_runs_drop_nothing_over_random_incasts_and_permutations() {
    let mut st = 7u64;
    let mut paused = 0;
    for case in 0..16 {
        let buffer = 30 + next(&mut st) % 170;
        let cwnd = 10 + next(&mut st) % 120;
        let toml = if case % 2 == 0 {
            // An incast of 2 to 12 senders on a star.
            let n = 2 + (next(&mut st) % 11) as usize;
            let size = 50 + next(&mut st) % 2000;
            incast(n, &format!("{size}KB"), "pfc = true")
                .replace("buffer = \"100pkt\"", &format!("buffer = \"{buffer}pkt\""))
                .replace("initial_cwnd = 64", &format!("initial_cwnd = {cwnd}"))
        } else {
            // A random permutation of 16 hosts on a leaf-spine with slower fabric links.
            let s = format!(
                "seed = {case}\n[network]\ntopology = \"leafspine\"\nleaves = 4\nspines = 2\nhosts_per_leaf = 4\n\
                 link_rate = \"10Gbps\"\nlink_delay = \"2us\"\nfabric_link_rate = \"10Gbps\"\nbuffer = \"{buffer}pkt\"\n\
                 pfc = true\nqueue = \"ecn\"\necn_threshold = \"20pkt\"\nnic_queue = \"switch\"\n\
                 [transport]\nprotocol = \"dctcp\"\ninitial_cwnd = {cwnd}\nmin_rto = \"1ms\"\n\
                 [[workloads]]\nkind = \"permutation\"\nsenders = \"all\"\nsizes = \"{}KB\"\n",
                100 + next(&mut st) % 3000
            );
            s
        };
        // Half the cases over a shared buffer per switch (dynamic pause thresholds).
        let shared = 300 + next(&mut st) % 2700;
        let toml = if case % 4 >= 2 {
            toml.replace("pfc = true", &format!("pfc = true\nswitch_buffer = \"{shared}KB\""))
        } else {
            toml
        };
        let mut s = sim(&toml);
        s.run();
        paused += !s.pfc_log().is_empty() as u32;
        let r = s.results(false);
        assert_eq!(drops(&r), 0, "case {case}: {toml}");
        assert!(r.flows.iter().all(|f| f.completed), "case {case}");
    }
    assert!(paused >= 8, "most cases must pause (only {paused} of 16 did): the test would say nothing otherwise");
}

/// A ring of `n` switches, each with one host; every host sends `size` to the host two
/// switches on, so that every ring link carries two flows and waits on the next.
fn ring(n: usize, size: &str) -> String {
    let mut s = String::from(
        "seed = 1\n[network]\ntopology = \"custom\"\nlink_rate = \"10Gbps\"\nlink_delay = \"1us\"\nbuffer = \"50pkt\"\n\
         pfc = true\n[transport]\ninitial_cwnd = 200\nmin_rto = \"1ms\"\n",
    );
    for i in 0..n {
        s += &format!("[[network.nodes]]\nname = \"s{i}\"\nkind = \"switch\"\n[[network.nodes]]\nname = \"h{i}\"\nkind = \"host\"\n");
    }
    for i in 0..n {
        s += &format!(
            "[[network.links]]\na = \"h{i}\"\nb = \"s{i}\"\n[[network.links]]\na = \"s{i}\"\nb = \"s{}\"\n",
            (i + 1) % n
        );
    }
    for i in 0..n {
        s += &format!("[[flows]]\nsrc = \"h{i}\"\ndst = \"h{}\"\nsize = \"{size}\"\n", (i + 2) % n);
    }
    s
}

#[test]
fn a_pause_cycle_stops_the_run_and_names_its_ports() {
    let mut s = sim(&ring(5, "20MB"));
    s.run();
    let why = s.failure().expect("the ring deadlocks");
    assert!(why.contains("priority flow control deadlocked"), "{why}");
    for i in 0..5 {
        assert!(why.contains(&format!("s{i}->s{}", (i + 1) % 5)), "the cycle names every ring link: {why}");
    }
    assert!(s.is_finished() && s.now() < fctlab_engine::Nanos::from_secs(1), "stopped at once");
    // The same flows on a line (no cycle) finish.
    let line = ring(5, "20MB").replace("[[network.links]]\na = \"s4\"\nb = \"s0\"\n", "");
    let r = run(&line.replace("dst = \"h0\"", "dst = \"h4\"").replace("dst = \"h1\"", "dst = \"h2\""));
    assert!(r.flows.iter().all(|f| f.completed) && drops(&r) == 0);
}
