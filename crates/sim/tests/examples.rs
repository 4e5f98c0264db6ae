//! The example workload kind and topology, each one file and one registration line
//! (`workloads/periodic.rs` with the `example-workloads` feature of fctlab-scenario,
//! `topology/ring.rs` with the `example-topologies` feature of fctlab-net; docs/architecture.md
//! walks through both): known to the scenario reader, run from TOML, named in its errors.

mod common;
use common::*;
use fctlab_scenario::schema::Format;

/// Four switches in a ring, one host each, and `workload` (a `[[workloads]]` entry).
fn ring(workload: &str) -> String {
    format!(
        "seed = 1\n[network]\ntopology = \"ring\"\nswitches = 4\nlink_rate = \"1Gbps\"\nlink_delay = \"10us\"\n\n[[workloads]]\n{workload}\n"
    )
}

fn load(toml: &str) -> Result<fctlab_scenario::Scenario, fctlab_scenario::ScenarioError> {
    fctlab_scenario::load(toml, "t.toml", Format::Toml, &[])
}

#[test]
fn a_workload_kind_registered_in_one_line_runs_from_a_scenario() {
    let r = run(&ring(
        "kind = \"periodic\"\nsrc = \"h0\"\ndst = \"h2\"\nsize = \"100KB\"\ncount = 5\ninterval = \"2ms\"\nstart = \"1ms\"\ntag = \"p\"",
    ));
    assert_eq!(r.flows.len(), 5);
    for (i, f) in r.flows.iter().enumerate() {
        assert_eq!((&*f.src, &*f.dst, f.size_bytes, &*f.tag), ("h0", "h2", Some(100_000), "p"));
        let start = f.start_s.unwrap();
        assert!((start - (1e-3 + 2e-3 * i as f64)).abs() < 1e-9, "flow {i} starts at {start} s");
        assert!(f.completed, "flow {i}");
    }

    // Its keys are its own: another kind names it, and its checks speak for it.
    let e = load(&ring("kind = \"poisson\"\ninterval = \"1ms\"")).unwrap_err();
    assert_eq!(e.key, "workloads[0].interval");
    assert!(e.message.starts_with("not used by a \"poisson\" workload"), "{e}");
    let e = load(&ring("kind = \"periodc\"")).unwrap_err();
    assert!(e.message.contains("known: ") && e.message.contains("periodic"), "{e}");
    let e = load(&ring("kind = \"periodic\"\nsrc = \"h0\"\ndst = \"h0\"\nsize = \"1KB\"")).unwrap_err();
    assert_eq!((e.key.as_str(), e.message.as_str()), ("workloads[0].dst", "a flow from a host to itself"));
    let e =
        load(&ring("kind = \"periodic\"\nsrc = \"h0\"\ndst = \"h1\"\nsize = \"1KB\"\ncount = 30000000")).unwrap_err();
    assert_eq!(e.key, "workloads[0].count");
    assert!(e.message.contains("more than this simulator accepts in one run"), "{e}");
}

#[test]
fn a_topology_registered_in_one_line_runs_from_a_scenario() {
    // h0 and h3 sit on neighbouring switches through the link that closes the ring.
    let r = run(&ring("kind = \"periodic\"\nsrc = \"h0\"\ndst = \"h3\"\nsize = \"50KB\""));
    assert!(r.flows[0].completed);
    let used = |a: &str, b: &str| {
        let l = r.links.iter().find(|l| l.src == a && l.dst == b).unwrap_or_else(|| panic!("no link {a}->{b}"));
        if a.starts_with("sw") && b.starts_with("sw") {
            assert_eq!(l.level, "fabric");
        }
        l.tx_packets
    };
    assert!(used("sw0", "sw3") > 0, "the flow takes the closing link");
    assert_eq!(used("sw0", "sw1"), 0, "and not the long way round");
    assert!(used("h0", "sw0") > 0);
    let s = load(&ring("kind = \"periodic\"\nsrc = \"h0\"\ndst = \"h1\"\nsize = \"1KB\"")).unwrap();
    assert_eq!((s.topology.kind.as_str(), s.topology.nodes.len(), s.topology.links.len()), ("ring", 8, 8));

    // Its name, keys and checks in the scenario reader's errors.
    let with = |from: &str, to: &str| load(&ring("kind = \"periodic\"").replace(from, to)).unwrap_err();
    let e = with("\"ring\"", "\"rng\"");
    assert!(e.message.contains("known: ") && e.message.contains("ring"), "{e}");
    let e = with("switches = 4", "switches = 2");
    assert_eq!((e.key.as_str(), e.message.as_str()), ("network.switches", "must be at least 3, got 2"));
    let e = with("switches = 4", "switches = 4\nracks = 2");
    assert_eq!(e.key, "network.racks");
    assert!(e.message.starts_with("not used by topology \"ring\" (its keys: switches, hosts_per_switch"), "{e}");
    let e = with("switches = 4", "switches = 400000\nhosts_per_switch = 1000");
    assert_eq!(e.key, "network.switches");
    assert!(e.message.contains("switches × (hosts_per_switch + 1) = 400,400,000 nodes"), "{e}");
}
