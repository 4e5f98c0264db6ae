//! Workload generators: exact flows for deterministic patterns, statistics for random ones,
//! and closed-loop rounds in the simulator.

mod common;
use common::*;
use fctlab_engine::Nanos;
use fctlab_scenario::schema::Format;

/// A loaded scenario with every flow drawn.
struct Loaded {
    flows: Vec<fctlab_scenario::FlowSpec>,
    topology: fctlab_net::Topology,
    groups: Vec<std::sync::Arc<str>>,
}

fn load(toml: &str) -> Loaded {
    let sc = fctlab_scenario::load(toml, "w.toml", Format::Toml, &[]).unwrap_or_else(|e| panic!("{e}"));
    Loaded { flows: sc.flows.to_vec(), topology: sc.topology, groups: sc.groups }
}
fn load_err(toml: &str) -> fctlab_scenario::ScenarioError {
    fctlab_scenario::load(toml, "w.toml", Format::Toml, &[]).expect_err("should fail")
}

const STAR16: &str =
    "seed = 3\n[network]\ntopology = \"star\"\nhosts = 16\nlink_rate = \"10Gbps\"\nlink_delay = \"2us\"\n";

#[test]
fn poisson_offered_load_matches_request_and_arrivals_are_exponential() {
    let n = 200_000;
    let sc = load(&format!("{STAR16}[[workloads]]\nkind = \"poisson\"\nsenders = \"all\"\nreceivers = \"all\"\nsizes = \"websearch\"\nload = 0.6\ncount = {n}\n"));
    assert_eq!(sc.flows.len(), n);
    let total_bytes: f64 = sc.flows.iter().map(|f| f.size_bytes.unwrap() as f64).sum();
    let span_s = sc.flows.last().unwrap().start.as_secs_f64();
    let capacity_bytes_per_s = 16.0 * 10e9 / 8.0;
    let offered = total_bytes / span_s / capacity_bytes_per_s;
    assert!((offered - 0.6).abs() / 0.6 < 0.02, "offered load {offered}");
    // Kolmogorov-Smirnov test of the inter-arrival times against the exponential law with
    // the requested rate (lambda = load * capacity / mean size).
    let mean_size = 1_711_250.0;
    let lambda = 0.6 * capacity_bytes_per_s / mean_size;
    let mut gaps: Vec<f64> = sc.flows.windows(2).map(|w| (w[1].start - w[0].start).as_secs_f64()).collect();
    gaps.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let m = gaps.len() as f64;
    let d = gaps
        .iter()
        .enumerate()
        .map(|(i, &x)| {
            let cdf = 1.0 - (-lambda * x).exp();
            (cdf - i as f64 / m).abs().max(((i + 1) as f64 / m - cdf).abs())
        })
        .fold(0.0, f64::max);
    let critical = 1.63 / m.sqrt(); // alpha = 0.01
    assert!(d < critical, "KS statistic {d} >= {critical}");
    // no self-flows, every host used
    assert!(sc.flows.iter().all(|f| f.src != f.dst));
}

#[test]
fn poisson_until_and_rate_and_many_to_one() {
    let sc = load(&format!(
        "{STAR16}[[workloads]]\nkind = \"poisson\"\nsenders = [\"h1\", \"h2\", \"h3\"]\nreceivers = [\"h0\"]\npattern = \"many_to_one\"\nsizes = \"10KB\"\narrival_rate = \"1000/ms\"\nuntil = \"100ms\"\nstart = \"5ms\"\ntag = \"rpc\"\n"
    ));
    let n = sc.flows.len() as f64;
    assert!((n - 100_000.0).abs() < 5.0 * 100_000f64.sqrt(), "{n} arrivals for an expected 100000");
    let h0 = sc.topology.find("h0").unwrap();
    for f in &sc.flows {
        assert_eq!(f.dst, h0);
        assert_eq!(f.size_bytes, Some(10_000));
        assert_eq!(&*f.tag, "rpc");
        assert!(f.start >= Nanos::from_millis(5) && f.start < Nanos::from_millis(105));
    }
}

#[test]
fn incast_rounds_are_exact_and_closed_loop() {
    let toml = format!(
        "{STAR16}[transport]\nmin_rto = \"1ms\"\n[[workloads]]\nkind = \"incast\"\nclient = \"h0\"\nservers = [\"h1\", \"h2\", \"h3\", \"h4\", \"h5\", \"h6\", \"h7\", \"h8\"]\nresponse_size = \"25KB\"\nrounds = 20\n"
    );
    let sc = load(&toml);
    assert_eq!(sc.flows.len(), 160);
    assert!(sc.flows.iter().all(|f| f.size_bytes == Some(25_000)));
    assert_eq!(sc.groups.len(), 20);
    let r = run(&toml);
    assert!(r.flows.iter().all(|f| f.completed && f.bytes_delivered == 25_000));
    // each round starts exactly when the last response of the previous round arrived
    for round in 1..20 {
        let prev_end = r
            .flows
            .iter()
            .filter(|f| f.group == format!("incast0:{}", round - 1))
            .map(|f| f.finish_s.unwrap())
            .fold(0.0, f64::max);
        let starts: Vec<f64> =
            r.flows.iter().filter(|f| f.group == format!("incast0:{round}")).map(|f| f.start_s.unwrap()).collect();
        assert_eq!(starts.len(), 8);
        for s in starts {
            assert!((s - prev_end).abs() < 1e-12, "round {round} starts at {s}, previous ended {prev_end}");
        }
    }
}

#[test]
fn shuffle_jobs_and_partition_aggregate() {
    let toml = format!(
        "{STAR16}[[workloads]]\nkind = \"shuffle\"\nmappers = [\"h0\", \"h1\", \"h2\", \"h3\"]\nreducers = [\"h2\", \"h3\", \"h4\"]\nblock_size = \"1MB\"\njobs = 3\njob_interval = \"10ms\"\n[[workloads]]\nkind = \"partition_aggregate\"\naggregator = \"h10\"\nworkers = [\"h11\", \"h12\", \"h13\"]\nresponse_size = \"20KB\"\njobs = 2\narrival_rate = \"100/s\"\n"
    );
    let sc = load(&toml);
    // shuffle: 4 mappers x 3 reducers minus 2 local pairs = 10 flows per job
    let shuffle: Vec<_> = sc.flows.iter().filter(|f| f.group.starts_with("shuffle0:")).collect();
    assert_eq!(shuffle.len(), 30);
    assert!(shuffle.iter().all(|f| f.size_bytes == Some(1_000_000) && f.src != f.dst));
    assert_eq!(shuffle.iter().filter(|f| &*f.group == "shuffle0:2").count(), 10);
    assert!(shuffle.iter().filter(|f| &*f.group == "shuffle0:2").all(|f| f.start == Nanos::from_millis(20)));
    // partition-aggregate: 3 requests then 3 responses per job
    let pa: Vec<_> = sc.flows.iter().filter(|f| f.group.starts_with("pa1:")).collect();
    assert_eq!(pa.len(), 12);
    let r = run(&toml);
    for j in 0..2 {
        let req_end = r
            .flows
            .iter()
            .filter(|f| f.group == format!("pa1:{j}:requests"))
            .map(|f| f.finish_s.unwrap())
            .fold(0.0, f64::max);
        for f in r.flows.iter().filter(|f| f.group == format!("pa1:{j}")) {
            assert!(f.completed && f.bytes_delivered == 20_000);
            assert!((f.start_s.unwrap() - req_end).abs() < 1e-12);
        }
    }
}

/// `request_size = "0B"`: no request flows; each job's responses start together at the
/// job's start time.
#[test]
fn partition_aggregate_without_requests_starts_responses_at_the_job_time() {
    let toml = format!(
        "{STAR16}[[workloads]]\nkind = \"partition_aggregate\"\naggregator = \"h10\"\nworkers = [\"h11\", \"h12\", \"h13\"]\nrequest_size = \"0B\"\nresponse_size = \"20KB\"\njobs = 3\njob_interval = \"5ms\"\nstart = \"1ms\"\n"
    );
    let sc = load(&toml);
    assert_eq!(sc.flows.len(), 9, "three responses per job, no requests");
    for (i, f) in sc.flows.iter().enumerate() {
        let job = i as u64 / 3;
        assert_eq!(
            (&*f.group, f.after, f.start.as_nanos()),
            (format!("pa0:{job}").as_str(), None, 1_000_000 + job * 5_000_000)
        );
        assert_eq!(sc.topology.nodes[f.dst].name, "h10");
    }
}

#[test]
fn permutation_pairs_each_sender_with_another_host() {
    let sc = load(&format!("{STAR16}[[workloads]]\nkind = \"permutation\"\nsenders = \"all\"\nsizes = {{ dist = \"uniform\", min = \"10KB\", max = \"20KB\" }}\n"));
    assert_eq!(sc.flows.len(), 16);
    let mut dsts: Vec<usize> = sc.flows.iter().map(|f| f.dst).collect();
    dsts.sort();
    dsts.dedup();
    assert_eq!(dsts.len(), 16);
    assert!(sc.flows.iter().all(|f| f.src != f.dst));
    assert!(sc.flows.iter().all(|f| (10_000..=20_000).contains(&f.size_bytes.unwrap())));
}

#[test]
fn trace_replay_exact_and_errors_name_line_and_column() {
    let dir = std::env::temp_dir().join(format!("fctlab-trace-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let good = dir.join("good.csv");
    std::fs::write(
        &good,
        "start_s,src,dst,size_bytes,deadline_s,tag\n0.001,h1,h2,5000,0.01,web\n# comment\n0.002,h3,h4,7000,,backup\n",
    )
    .unwrap();
    let toml = format!("{STAR16}[[workloads]]\nkind = \"trace\"\nfile = \"{}\"\n", good.display());
    let sc = load(&toml);
    assert_eq!(sc.flows.len(), 2);
    assert_eq!(sc.flows[0].size_bytes, Some(5000));
    assert_eq!(sc.flows[0].deadline, Some(fctlab_engine::Nanos::from_millis(10)));
    assert_eq!(sc.flows[1].deadline, None);
    assert_eq!(&*sc.flows[1].tag, "backup");
    let bad = dir.join("bad.csv");
    std::fs::write(&bad, "start_s,src,dst,size_bytes\n0.001,h1,h2,5000\n0.002,h1,h2,lots\n").unwrap();
    let e = load_err(&format!("{STAR16}[[workloads]]\nkind = \"trace\"\nfile = \"{}\"\n", bad.display()));
    assert!(e.message.contains("line 3, column size_bytes"), "{e}");
    std::fs::write(&bad, "start_s,src,dst,size_bytes\n0.001,h1,h99,5000\n").unwrap();
    let e = load_err(&format!("{STAR16}[[workloads]]\nkind = \"trace\"\nfile = \"{}\"\n", bad.display()));
    assert!(e.message.contains("line 2, column dst") && e.message.contains("h99"), "{e}");
    // CSV proper: quoted fields may hold commas; a short line is named by its line number.
    std::fs::write(&good, "start_s,src,dst,size_bytes,tag\n0.001,h1,h2,5000,\"web, front\"\n").unwrap();
    assert_eq!(&*load(&toml).flows[0].tag, "web, front");
    std::fs::write(&bad, "start_s,src,dst,size_bytes\n# a comment\n0.001,h1,h2,5000\n0.002,h1,h2\n").unwrap();
    let e = load_err(&format!("{STAR16}[[workloads]]\nkind = \"trace\"\nfile = \"{}\"\n", bad.display()));
    assert!(e.message.contains("line 4: expected 4 fields, found 3"), "{e}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn deadlines_by_size_class_and_protocol_keys() {
    let sc = load(&format!(
        "{STAR16}[[workloads]]\nkind = \"poisson\"\nsenders = \"all\"\nreceivers = \"all\"\nsizes = {{ dist = \"bounded_pareto\", shape = 1.1, min = \"1KB\", max = \"20MB\" }}\narrival_rate = \"1000/s\"\ncount = 3000\ndeadline = {{ small = \"30ms\", medium = \"300ms\" }}\n"
    ));
    for f in &sc.flows {
        let s = f.size_bytes.unwrap();
        let want = if s < 100_000 {
            Some(30)
        } else if s < 10_000_000 {
            Some(300)
        } else {
            None
        };
        assert_eq!(f.deadline.map(|d| d.as_nanos() / 1_000_000), want, "size {s}");
    }
}

#[test]
fn workload_errors_are_precise() {
    let e = load_err(&format!("{STAR16}[[workloads]]\nkind = \"poison\"\n"));
    assert_eq!(e.key, "workloads[0].kind");
    let e = load_err(&format!(
        "{STAR16}[[workloads]]\nkind = \"incast\"\nclient = \"h0\"\nservers = \"all\"\nresponse_size = \"1KB\"\n"
    ));
    assert!(e.message.contains("client cannot also be a server"), "{e}");
    let e = load_err(&format!("{STAR16}[[workloads]]\nkind = \"poisson\"\nsenders = \"all\"\nreceivers = \"all\"\nsizes = \"websearch\"\nload = 0.5\n"));
    assert_eq!(e.key, "workloads[0].count");
    let e = load_err(&format!("{STAR16}[[workloads]]\nkind = \"poisson\"\nsenders = \"all\"\nreceivers = \"all\"\nsizes = \"webserch\"\nload = 0.5\ncount = 3\n"));
    assert_eq!(e.key, "workloads[0].sizes");
    assert!(e.message.contains("websearch"), "{e}");
    // Size tables: keys come from each distribution's struct.
    let sized = |t: &str| {
        load_err(&format!("{STAR16}[[workloads]]\nkind = \"poisson\"\nsenders = \"all\"\nreceivers = \"all\"\nsizes = {t}\nload = 0.5\ncount = 3\n"))
    };
    let e = sized("{ dist = \"uniform\", min = \"1KB\", mean = \"5KB\" }");
    assert_eq!(
        (e.key.as_str(), e.message.as_str()),
        ("workloads[0].sizes.mean", "not a parameter of \"uniform\" (its parameters: min, max)")
    );
    let e = sized("{ dist = \"lognormal\", mean = \"5KB\" }");
    assert_eq!((e.key.as_str(), e.message.as_str()), ("workloads[0].sizes.sigma", "\"lognormal\" needs `sigma`"));
    let e = sized("{ dist = \"pareto\", shape = \"steep\", mean = \"5KB\" }");
    assert_eq!(e.key, "workloads[0].sizes.shape");
    let e = sized("{ dist = \"zipf\" }");
    assert!(e.key == "workloads[0].sizes.dist" && e.message.contains("known: fixed, uniform"), "{e}");
    let e = load_err(&format!("{STAR16}[[workloads]]\nkind = \"shuffle\"\nmappers = \"all\"\nreducers = \"all\"\nblock_size = \"1MB\"\nrounds = 3\n"));
    assert_eq!(e.key, "workloads[0].rounds");
    let e = load_err(&format!("{STAR16}[[workloads]]\nkind = \"poisson\"\nsenders = \"x*\"\nreceivers = \"all\"\nsizes = \"1KB\"\nload = 0.1\ncount = 1\n"));
    assert_eq!(e.key, "workloads[0].senders");
    let e = load_err(&format!("{STAR16}[[workloads]]\nkind = \"poisson\"\nsenders = \"all\"\nreceivers = \"all\"\nsizes = {{ dist = \"pareto\", shape = 0.9, mean = \"10KB\" }}\nload = 0.1\ncount = 1\n"));
    assert_eq!(e.key, "workloads[0].sizes");
    let e = load_err(&format!("{STAR16}[[workloads]]\nkind = \"poisson\"\nsenders = \"all\"\nreceivers = \"all\"\nsizes = \"1KB\"\nload = 0.1\ncount = 1\nweight = 2\n"));
    assert_eq!(e.key, "workloads[0].weight");
}

#[test]
fn explicit_flows_can_wait_for_a_group() {
    let toml = "[network]\ntopology = \"star\"\nhosts = 3\n[[flows]]\nsrc = \"h0\"\ndst = \"h1\"\nsize = \"100KB\"\ngroup = \"a\"\n[[flows]]\nsrc = \"h1\"\ndst = \"h2\"\nsize = \"10KB\"\nafter = \"a\"\nstart = \"1ms\"\n";
    let r = run(toml);
    let first_end = r.flows[0].finish_s.unwrap();
    assert!((r.flows[1].start_s.unwrap() - (first_end + 1e-3)).abs() < 1e-12);
    let e = load_err(&toml.replace("after = \"a\"", "after = \"zz\""));
    assert_eq!(e.key, "flows[1].after");
    let cyc = "[network]\ntopology = \"star\"\nhosts = 3\n[[flows]]\nsrc = \"h0\"\ndst = \"h1\"\nsize = \"1KB\"\ngroup = \"a\"\nafter = \"b\"\n[[flows]]\nsrc = \"h1\"\ndst = \"h2\"\nsize = \"1KB\"\ngroup = \"b\"\nafter = \"a\"\n";
    assert!(load_err(cyc).message.contains("cycle"));
}

#[test]
fn poisson_load_relative_to_a_named_link() {
    let n = 100_000;
    let sc = load(&format!(
        "seed = 4\n[network]\ntopology = \"dumbbell\"\nsenders = 4\nreceivers = 4\nlink_rate = \"10Gbps\"\nbottleneck_rate = \"1Gbps\"\n[[workloads]]\nkind = \"poisson\"\nsenders = \"s*\"\nreceivers = \"r*\"\nsizes = {{ dist = \"exponential\", mean = \"50KB\" }}\nload = 0.5\nload_link = \"left->right\"\ncount = {n}\n"
    ));
    let total: f64 = sc.flows.iter().map(|f| f.size_bytes.unwrap() as f64).sum();
    let span = sc.flows.last().unwrap().start.as_secs_f64();
    let offered = total * 8.0 / span / 1e9;
    assert!((offered - 0.5).abs() / 0.5 < 0.02, "offered load on the bottleneck {offered}");
    let e = load_err(&format!("{STAR16}[[workloads]]\nkind = \"poisson\"\nsenders = \"all\"\nreceivers = \"all\"\nsizes = \"1KB\"\nload = 0.1\nload_link = \"h0->h1\"\ncount = 1\n"));
    assert_eq!(e.key, "workloads[0].load_link");
}

/// Host sets by range (`"h8..h31"`, inclusive, on the numeric suffix) and by switch
/// (`"under:leaf1"`) on a 4-leaf, 8-hosts-per-leaf leaf-spine.
#[test]
fn host_ranges_and_hosts_under_a_switch() {
    const LS: &str = "seed = 1\nstop_time = \"10ms\"\n[network]\ntopology = \"leafspine\"\nleaves = 4\nspines = 2\nhosts_per_leaf = 8\n";
    let perm = |senders: &str, receivers: &str| {
        format!("{LS}[[workloads]]\nkind = \"permutation\"\nsenders = {senders}\nreceivers = {receivers}\nsizes = \"10KB\"\n")
    };
    let names = |sc: &Loaded, f: fn(&fctlab_scenario::FlowSpec) -> usize| {
        let mut v: Vec<String> = sc.flows.iter().map(|x| sc.topology.nodes[f(x)].name.clone()).collect();
        v.sort_by_key(|n| n[1..].parse::<u32>().unwrap());
        v
    };
    // the hosts of racks 1-3 send, those under leaf0 and leaf1 receive
    let sc = load(&perm("\"h8..h31\"", "[\"under:leaf0\", \"under:leaf1\", \"h16..h23\"]"));
    let want_src: Vec<String> = (8..32).map(|i| format!("h{i}")).collect();
    assert_eq!(names(&sc, |f| f.src), want_src);
    let want_dst: Vec<String> = (0..24).map(|i| format!("h{i}")).collect();
    assert_eq!(names(&sc, |f| f.dst), want_dst);
    let sc = load(&perm("\"under:leaf1\"", "\"under:leaf2\""));
    assert_eq!(names(&sc, |f| f.src), (8..16).map(|i| format!("h{i}")).collect::<Vec<_>>());
    // errors name the range and what exists
    let e = load_err(&perm("\"h31..h8\"", "\"all\""));
    assert_eq!(e.key, "workloads[0].senders");
    assert!(e.message.contains("range \"h31..h8\": the range is reversed"), "{e}");
    let e = load_err(&perm("\"h30..h40\"", "\"all\""));
    assert!(e.message.contains("\"h32\" is not a host") && e.message.contains("(32 hosts)"), "{e}");
    let e = load_err(&perm("\"h8..x9\"", "\"all\""));
    assert!(e.message.contains("different prefixes"), "{e}");
    let e = load_err(&perm("\"under:leaf9\"", "\"all\""));
    assert!(e.message.contains("no switch \"leaf9\"") && e.message.contains("leaf0"), "{e}");
    let e = load_err(&perm("\"under:spine0\"", "\"all\""));
    assert!(e.message.contains("no host is attached to switch \"spine0\""), "{e}");
}

#[test]
fn a_sorted_trace_is_read_as_the_run_goes_on_and_a_changed_file_stops_the_run() {
    let dir = std::env::temp_dir().join(format!("fctlab-trace-stream-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (sorted, unsorted) = (dir.join("sorted.csv"), dir.join("unsorted.csv"));
    // 3,000 flows of 5 KB, one every 20 us, round robin over the hosts (sorted by start).
    let lines: Vec<String> =
        (0..3000).map(|i| format!("{:.6},h{},h{},5000", i as f64 * 20e-6, i % 16, (i + 5) % 16)).collect();
    std::fs::write(&sorted, format!("start_s,src,dst,size_bytes\n{}\n", lines.join("\n"))).unwrap();
    let mut shuffled = lines.clone();
    shuffled.swap(10, 20);
    std::fs::write(&unsorted, format!("start_s,src,dst,size_bytes\n{}\n", shuffled.join("\n"))).unwrap();
    let scenario =
        |f: &std::path::Path| format!("{STAR16}[[workloads]]\nkind = \"trace\"\nfile = \"{}\"\n", f.display());
    let listed = |f: &std::path::Path| {
        let sc = fctlab_scenario::load(&scenario(f), "w.toml", Format::Toml, &[]).unwrap();
        sc.flows.parts().filter(|(_, p)| matches!(p, fctlab_scenario::FlowPart::Listed(_))).count()
    };
    assert_eq!((listed(&sorted), listed(&unsorted)), (0, 1), "a sorted trace is drawn, an unsorted one held");
    // Drawn as the run goes on, the flows are those of the file, each once.
    let rows = run(&scenario(&sorted)).flows;
    assert_eq!(rows.len(), 3000);
    assert!(rows.iter().all(|r| r.completed && r.size_bytes == Some(5000)));
    assert_eq!((&*rows[7].src, &*rows[7].dst), ("h7", "h12"));
    assert!((rows[2999].start_s.unwrap() - 2999.0 * 20e-6).abs() < 1e-9);
    // The file changed under the run: the run stops with an error naming it.
    let mut s = sim(&scenario(&sorted));
    s.advance(fctlab_engine::Nanos::from_millis(1));
    assert!(s.failure().is_none());
    std::fs::write(&sorted, "start_s,src,dst,size_bytes\n0.5,h1,h2,100\n").unwrap();
    s.advance(fctlab_engine::Nanos::from_millis(60));
    let m = s.failure().expect("the change is seen");
    assert!(m.contains("sorted.csv") && m.contains("changed since the scenario was loaded"), "{m}");
    std::fs::remove_dir_all(&dir).ok();
}
