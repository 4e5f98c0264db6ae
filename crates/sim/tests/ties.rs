//! Events of equal time ordered by their own keys (`Ties::Keyed`, the order a run split among
//! threads keeps) rather than the order they were scheduled in: the same bytes on every run,
//! and the same network behaviour, the order of simultaneous events aside.

mod common;
use common::*;
use fctlab_engine::Ties;
use fctlab_sim::Results;

fn run_with(toml: &str, ties: Ties) -> Results {
    let mut s = sim(toml);
    s.set_ties(ties).unwrap();
    s.run();
    s.results(false)
}

/// What a run's flows came to, to the bit.
fn outcome(r: &Results) -> Vec<(u64, u64, Option<u64>, u64)> {
    r.flows.iter().map(|f| (f.flow_id, f.bytes_delivered, f.fct_s.map(f64::to_bits), f.retransmits)).collect()
}

fn mean_fct(r: &Results) -> f64 {
    let fcts: Vec<f64> = r.flows.iter().filter_map(|f| f.fct_s).collect();
    fcts.iter().sum::<f64>() / fcts.len() as f64
}

/// Scenarios whose events often fall on the same nanosecond: synchronised incasts and
/// permutations on symmetric fabrics, under TCP, DCTCP, Homa and lossless RoCE.
fn scenarios() -> Vec<(&'static str, String)> {
    let fabric = |topo: &str, transport: &str, workload: &str| {
        format!("seed = 3\n[network]\n{topo}\nlink_rate = \"10Gbps\"\nlink_delay = \"1us\"\n{transport}\n[[workloads]]\n{workload}\n")
    };
    let leafspine = "topology = \"leafspine\"\nleaves = 4\nspines = 2\nhosts_per_leaf = 4\nbuffer = \"100pkt\"";
    vec![
        (
            "dctcp incast",
            fabric(
                &format!("{leafspine}\nqueue = \"ecn\"\necn_threshold = \"20pkt\""),
                "[transport]\nprotocol = \"dctcp\"\nmin_rto = \"1ms\"",
                "kind = \"incast\"\nclient = \"h0\"\nservers = \"h4..h15\"\nresponse_size = \"200KB\"\nrounds = 4",
            ),
        ),
        (
            "tcp permutation",
            fabric(
                "topology = \"fattree\"\nk = 4\nbuffer = \"50pkt\"",
                "[transport]\nprotocol = \"tcp\"\nmin_rto = \"1ms\"",
                "kind = \"permutation\"\nsenders = \"all\"\nreceivers = \"all\"\nsizes = \"1MB\"",
            ),
        ),
        (
            "homa websearch",
            fabric(
                &format!("{leafspine}\nqueue = \"priority\"\nnic_queue = \"pfabric\""),
                "[transport]\nprotocol = \"homa\"",
                "kind = \"poisson\"\nsenders = \"all\"\nreceivers = \"all\"\nsizes = \"websearch\"\nload = 0.5\ncount = 150",
            ),
        ),
        (
            "lossless roce incast",
            fabric(
                &format!("{leafspine}\npfc = true"),
                "[transport]\nprotocol = \"dcqcn\"",
                "kind = \"incast\"\nclient = \"h5\"\nservers = \"h6..h15\"\nresponse_size = \"100KB\"\nrounds = 2",
            ),
        ),
    ]
}

#[test]
fn keyed_ties_give_the_same_bytes_on_every_run() {
    for (name, toml) in scenarios() {
        let a = run_with(&toml, Ties::Keyed);
        let b = run_with(&toml, Ties::Keyed);
        assert_eq!(outcome(&a), outcome(&b), "{name}");
        assert_eq!(a.summary.events, b.summary.events, "{name}");
    }
}

#[test]
fn keyed_ties_move_only_simultaneous_events() {
    // Against push order: every flow completes and delivers its bytes under both, and the
    // mean completion time moves by a few percent at most. Some run must differ somewhere, or
    // no event ever shared its time with another and this showed nothing.
    let mut any_differs = false;
    for (name, toml) in scenarios() {
        let fifo = run_with(&toml, Ties::Fifo);
        let keyed = run_with(&toml, Ties::Keyed);
        assert_eq!(fifo.flows.len(), keyed.flows.len(), "{name}");
        for (f, k) in fifo.flows.iter().zip(&keyed.flows) {
            assert!(f.completed && k.completed, "{name}: flow {} ({} / {})", f.flow_id, f.completed, k.completed);
            assert_eq!(f.bytes_delivered, k.bytes_delivered, "{name}: flow {}", f.flow_id);
        }
        let (mf, mk) = (mean_fct(&fifo), mean_fct(&keyed));
        assert!((mk / mf - 1.0).abs() < 0.05, "{name}: mean FCT {mf} s in push order, {mk} s keyed");
        any_differs |= outcome(&fifo) != outcome(&keyed);
    }
    assert!(any_differs, "no scenario had simultaneous events whose order mattered");
}

#[test]
fn the_order_of_ties_is_set_before_the_run_only() {
    let toml = &scenarios()[0].1;
    let mut s = sim(toml);
    s.set_ties(Ties::Keyed).unwrap();
    s.advance(fctlab_engine::Nanos::from_micros(50));
    let e = s.set_ties(Ties::Fifo).unwrap_err();
    assert!(e.contains("only before the run starts"), "{e}");
}
