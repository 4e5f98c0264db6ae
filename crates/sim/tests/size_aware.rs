//! Size-aware scheduling in the network, end to end: pFabric (`protocol = "pfabric"` over
//! `queue = "pfabric"`), PIAS (`protocol = "pias"` over `queue = "priority"` with per-band
//! marking) and Homa (`protocol = "homa"`, receiver grants over `queue = "priority"`) beside
//! DCTCP, on the same web-search flows.

mod common;
use common::*;

/// Web-search flows at 60% load on a 16-host leaf-spine (10 Gbps hosts, 40 Gbps fabric),
/// under the given `[network]` queue lines and `[transport]` lines.
fn websearch(queue: &str, transport: &str, count: u32) -> String {
    format!(
        "seed = 3\n[network]\ntopology = \"leafspine\"\nleaves = 4\nspines = 2\nhosts_per_leaf = 4\n\
         link_rate = \"10Gbps\"\nlink_delay = \"1us\"\nfabric_link_rate = \"40Gbps\"\nfabric_link_delay = \"1us\"\n\
         {queue}\n[transport]\n{transport}\n\
         [[workloads]]\nkind = \"poisson\"\nsenders = \"all\"\nreceivers = \"all\"\nsizes = \"websearch\"\n\
         load = 0.6\ncount = {count}\n"
    )
}

const PFABRIC: (&str, &str) = ("queue = \"pfabric\"", "protocol = \"pfabric\"");
const PIAS: (&str, &str) = (
    "queue = \"priority\"\npriority_ecn_threshold = \"65pkt\"\npriority_ecn_per_port = true\nbuffer = \"250pkt\"\nnic_queue = \"switch\"",
    "protocol = \"pias\"\nmin_rto = \"1ms\"",
);
const DCTCP: (&str, &str) = (
    "queue = \"ecn\"\necn_threshold = \"65pkt\"\nbuffer = \"250pkt\"\nnic_queue = \"switch\"",
    "protocol = \"dctcp\"\nmin_rto = \"1ms\"",
);

const HOMA: (&str, &str) = (
    "queue = \"priority\"\nbuffer = \"250pkt\"\nnic_queue = \"pfabric\"\nnic_buffer = \"250pkt\"",
    "protocol = \"homa\"",
);

/// (mean FCT, mean ideal FCT) of the flows under 100 KB, and whether every flow completed.
fn small_flows(r: &fctlab_sim::Results) -> (f64, f64, bool) {
    let small: Vec<_> = r.flows.iter().filter(|f| f.size_bytes.is_some_and(|s| s < 100_000)).collect();
    let mean = |v: Vec<f64>| v.iter().sum::<f64>() / v.len() as f64;
    (
        mean(small.iter().filter_map(|f| f.fct_s).collect()),
        mean(small.iter().filter_map(|f| f.ideal_fct_s).collect()),
        r.flows.iter().all(|f| f.completed),
    )
}

#[test]
fn pfabric_serves_small_flows_near_ideal_and_pias_lands_between_it_and_dctcp() {
    let [pf, pias, dctcp] = [PFABRIC, PIAS, DCTCP].map(|(q, t)| small_flows(&run(&websearch(q, t, 600))));
    eprintln!("small flows' mean FCT / ideal: pfabric {pf:?}, pias {pias:?}, dctcp {dctcp:?}");
    assert!(pf.2 && pias.2 && dctcp.2, "every flow completes");
    // The pFabric paper's headline: flows under 100 KB within a small factor of the ideal,
    // far below DCTCP's.
    assert!(pf.0 < 1.5 * pf.1, "pfabric {:.1} us against ideal {:.1} us", pf.0 * 1e6, pf.1 * 1e6);
    assert!(pf.0 < dctcp.0, "pfabric {} dctcp {}", pf.0, dctcp.0);
    // PIAS, without sizes, between the two.
    assert!(pf.0 < pias.0 && pias.0 < dctcp.0, "pfabric {} pias {} dctcp {}", pf.0, pias.0, dctcp.0);
}

#[test]
fn a_pfabric_run_is_deterministic_and_its_ports_keep_the_small_default_buffer() {
    let s = websearch(PFABRIC.0, PFABRIC.1, 150);
    let (a, b) = (run(&s), run(&s));
    let fcts = |r: &fctlab_sim::Results| r.flows.iter().map(|f| f.fct_s.map(f64::to_bits)).collect::<Vec<_>>();
    assert_eq!(fcts(&a), fcts(&b));
    // 36 KB at every port, the hosts' NICs included (they run pFabric too).
    assert!(
        a.links.iter().all(|l| l.buffer_bytes == Some(36_000)),
        "{:?}",
        a.links.iter().map(|l| l.buffer_bytes).collect::<Vec<_>>()
    );
    assert!(a.links.iter().all(|l| l.max_queue_bytes <= 36_000));
}

#[test]
fn homa_keeps_small_messages_within_twice_their_ideal_at_half_load() {
    let (q, t) = HOMA;
    let r = run(&websearch(q, t, 600).replace("load = 0.6", "load = 0.5"));
    assert!(r.flows.iter().all(|f| f.completed), "every message completes");
    // Slowdown: each message's completion time over its own ideal, averaged over those under
    // 100 KB (the Homa paper's metric, for its smallest messages).
    let slowdowns: Vec<f64> = r
        .flows
        .iter()
        .filter(|f| f.size_bytes.is_some_and(|s| s < 100_000))
        .filter_map(|f| Some(f.fct_s? / f.ideal_fct_s?))
        .collect();
    let mean = slowdowns.iter().sum::<f64>() / slowdowns.len() as f64;
    eprintln!("homa: {} small messages, mean slowdown {mean:.2}", slowdowns.len());
    assert!(slowdowns.len() > 200);
    assert!(mean < 2.0, "mean slowdown of small messages {mean:.2}");
    // Grants keep the queues short: no port overflows its 250 packets.
    assert_eq!(r.flows.iter().map(|f| f.drops).sum::<u64>(), 0);
}

#[test]
fn homa_flows_that_disagree_on_a_host_side_key_are_an_error_naming_it() {
    let toml = "[network]\ntopology = \"star\"\nhosts = 3\nlink_rate = \"10Gbps\"\nlink_delay = \"1us\"\n\
                queue = \"priority\"\nnic_queue = \"pfabric\"\n[transport]\nprotocol = \"homa\"\n\
                [[flows]]\nsrc = \"h0\"\ndst = \"h2\"\nsize = \"100KB\"\n\
                [[flows]]\nsrc = \"h1\"\ndst = \"h2\"\nsize = \"100KB\"\nhoma = { homa_overcommit = 2 }\n";
    let sc = fctlab_scenario::load(toml, "test.toml", fctlab_scenario::schema::Format::Toml, &[]).expect("valid");
    let err = fctlab_sim::Simulation::new(sc).err().expect("an error").to_string();
    assert!(err.contains("flows[1].homa.homa_overcommit"), "{err}");
    assert!(err.contains("the receiving hosts run one homa configuration"), "{err}");
    // A key only the senders read may differ.
    run(&toml.replace("homa_overcommit = 2", "homa_timeout = \"20ms\""));
}

#[test]
fn the_transport_kind_picks_its_protocols_and_refuses_a_protocol_that_runs_on_another() {
    let toml = "[network]\ntopology = \"star\"\nhosts = 3\nlink_rate = \"10Gbps\"\nlink_delay = \"1us\"\n\
                queue = \"priority\"\nnic_queue = \"pfabric\"\n[transport]\nkind = \"homa\"\n\
                [[flows]]\nsrc = \"h0\"\ndst = \"h2\"\nsize = \"100KB\"\n";
    let load = |t: &str| fctlab_scenario::load(t, "test.toml", fctlab_scenario::schema::Format::Toml, &[]);
    // Without `protocol`, the flows take the first protocol on the transport.
    let r = run(toml);
    assert_eq!(r.flows[0].protocol, "homa");
    assert_eq!(r.flows[0].size_bytes, Some(100_000));
    // A protocol of another transport, as the default or on one flow: one line naming both.
    let err =
        load(&toml.replace("kind = \"homa\"", "kind = \"homa\"\nprotocol = \"dctcp\"")).err().unwrap().to_string();
    assert_eq!(
        err,
        "test.toml: transport.protocol: protocol \"dctcp\" runs on transport tcp, not on homa (`[transport] kind`)"
    );
    let err = load(&format!("{toml}protocol = \"pias\"\n")).err().unwrap().to_string();
    assert!(
        err.starts_with("test.toml: flows[0].protocol: protocol \"pias\" runs on transport tcp, not on homa"),
        "{err}"
    );
    let err = load(&toml.replace("kind = \"homa\"", "kind = \"tcp\"\nprotocol = \"homa\"")).err().unwrap().to_string();
    assert!(err.contains("protocol \"homa\" runs on transport homa, not on tcp"), "{err}");
    let err = load(&toml.replace("kind = \"homa\"", "kind = \"rdma\"")).err().unwrap().to_string();
    assert_eq!(err, "test.toml: transport.kind: unknown transport \"rdma\" (known: tcp, homa, roce, ndp, uet, eqds)");
}
