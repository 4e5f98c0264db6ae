//! Rows streamed while the run goes on: each finished flow's row comes out once, after its
//! last packet has left the network, and with the rows the run keeps they are the rows of a
//! run that streams nothing.

mod common;
use common::*;
use fctlab_engine::Nanos;
use fctlab_sim::{FlowResult, RunStatus};

/// A dumbbell with a small buffer (drops, retransmissions), 2,000 Poisson flows cut off by
/// the stop time, and a long-lived flow.
fn scenario() -> String {
    "seed = 5\nstop_time = \"300ms\"\n[network]\ntopology = \"dumbbell\"\nsenders = 4\nreceivers = 4\n\
     link_rate = \"10Gbps\"\nbottleneck_rate = \"1Gbps\"\nlink_delay = \"5us\"\nbuffer = \"20pkt\"\n\
     [transport]\nmin_rto = \"2ms\"\n[[flows]]\nsrc = \"s0\"\ndst = \"r0\"\n\
     [[workloads]]\nkind = \"poisson\"\nsenders = \"s*\"\nreceivers = \"r*\"\nsizes = { dist = \"pareto\", shape = 1.2, mean = \"25KB\" }\n\
     load = 0.9\nload_link = \"left->right\"\ncount = 2000\n"
        .to_string()
}

#[test]
fn streamed_rows_and_the_rest_are_the_rows_of_a_run_that_streams_nothing() {
    let whole = run(&scenario()).flows;
    let mut s = sim(&scenario());
    s.stream_flow_rows();
    let mut taken: Vec<FlowResult> = Vec::new();
    let mut slices = 0;
    let mut until = Nanos::ZERO;
    loop {
        until += Nanos::from_micros(200);
        let status = s.advance(until);
        let rows = s.take_flow_rows();
        assert!(rows.iter().all(|r| r.completed), "only finished flows are streamed");
        slices += !rows.is_empty() as usize;
        taken.extend(rows);
        if status == RunStatus::Finished {
            break;
        }
    }
    let pages = s.flow_state_pages();
    let rest = s.results(false).flows;
    // State is held only in pages with a flow whose row is not out: of the run's 32 pages of
    // 64 flows, most are gone.
    assert!(pages <= rest.len() && pages < 2001usize.div_ceil(64) / 2, "{pages} pages held, {} rows left", rest.len());
    assert!(slices > 10, "rows came out along the run, in {slices} slices");
    assert!(taken.iter().any(|r| r.drops > 0), "streamed flows include ones that lost packets");
    assert!(rest.iter().any(|r| !r.completed), "unfinished flows stay for the end");
    assert!(rest.windows(2).all(|w| w[0].flow_id < w[1].flow_id), "the rest in the scenario's order");
    let mut all = taken;
    all.extend(rest);
    all.sort_by_key(|r| r.flow_id);
    assert_eq!(all.len(), whole.len(), "each row exactly once");
    assert!(all.windows(2).all(|w| w[0].flow_id < w[1].flow_id));
    assert_eq!(all, whole);
}

#[test]
fn without_streaming_nothing_is_taken() {
    let mut s = sim(&scenario());
    s.advance(Nanos::from_millis(20));
    assert!(s.take_flow_rows().is_empty());
    s.run();
    assert_eq!(s.results(false).flows.len(), 2001);
}

/// The most flow-state pages held at once over a streamed run of `count` Poisson flows at one
/// load, and the run's flows as the scenario holds them.
fn peak_pages(count: u64) -> (usize, usize) {
    let text = format!(
        "seed = 2\n[network]\ntopology = \"leafspine\"\nleaves = 2\nspines = 2\nhosts_per_leaf = 4\n\
         [transport]\nmin_rto = \"1ms\"\n[[workloads]]\nkind = \"poisson\"\nsenders = \"h*\"\nreceivers = \"h*\"\n\
         sizes = {{ dist = \"pareto\", shape = 1.2, mean = \"25KB\" }}\nload = 0.5\ncount = {count}\n"
    );
    let mut s = sim(&text);
    let listed = s.scenario().flows.parts().filter(|(_, p)| matches!(p, fctlab_scenario::FlowPart::Listed(_))).count();
    s.stream_flow_rows();
    let (mut peak, mut done, mut until) = (0, 0, Nanos::ZERO);
    loop {
        until += Nanos::from_micros(100);
        let status = s.advance(until);
        peak = peak.max(s.flow_state_pages());
        done += s.take_flow_rows().len();
        if status == RunStatus::Finished {
            break;
        }
    }
    assert_eq!(done as u64, count, "every flow finished and its row came out");
    (peak, listed)
}

#[test]
fn the_state_held_follows_the_flows_alive_not_the_flows_of_the_run() {
    let (small, listed_small) = peak_pages(2_000);
    let (large, listed_large) = peak_pages(8_000);
    // Open-loop arrivals are drawn as they start: the scenario lists none of them.
    assert_eq!((listed_small, listed_large), (0, 0));
    // Four times the flows at one load: about the same flows alive at once, so about the same
    // pages (the runs' 32 and 125 pages would all be held if nothing were freed).
    assert!(large <= small + small / 2 + 2, "peak pages {small} for 2,000 flows, {large} for 8,000");
    assert!(large < 8_000 / 64 / 4, "{large} of the run's 125 pages held at the peak");
}
