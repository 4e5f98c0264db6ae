//! A scenario's flows as the simulator walks them: listed parts and parts drawn when needed
//! (`FlowList`), loaded from a scenario file through the public API.

use fctlab_scenario::schema::{load, Format};

const SCENARIO: &str = r#"
[network]
topology = "star"
hosts = 4
[[flows]]
src = "h0"
dst = "h1"
size = "1MB"
start = "1ms"
[[workloads]]
kind = "poisson"
senders = "all"
receivers = "all"
sizes = "10KB"
arrival_rate = "20000/s"
count = 50
tag = "web"
[[workloads]]
kind = "poisson"
senders = "all"
receivers = "all"
sizes = { dist = "bounded_pareto", shape = 1.1, min = "1KB", max = "1MB" }
arrival_rate = "10000/s"
until = "3ms"
"#;

#[test]
fn drawn_parts_give_the_same_flows_on_every_walk_and_the_feed_orders_them_by_start() {
    let s = load(SCENARIO, "t.toml", Format::Toml, &[]).unwrap();
    let all = s.flows.to_vec();
    assert_eq!(all.len(), s.flows.len());
    assert!(s.flows.len() > 51, "the `until` entry drew some flows");
    assert_eq!(all[0].size_bytes, Some(1_000_000));
    assert!(all[1..51].iter().all(|f| f.size_bytes == Some(10_000) && &*f.tag == "web"));
    for (f, again) in all.iter().zip(s.flows.iter()) {
        assert_eq!((again.src, again.dst, again.start, again.size_bytes), (f.src, f.dst, f.start, f.size_bytes));
    }
    assert!(s.flows.listed(0).is_some() && s.flows.listed(1).is_none() && s.flows.listed(all.len()).is_none());
    let mut feed = s.flows.feed();
    let mut order = Vec::new();
    while let Some((id, drawn)) = feed.pop() {
        assert_eq!(drawn.is_some(), id != 0, "only drawn flows come with their spec");
        if let Some(d) = drawn {
            assert_eq!((d.src, d.dst, d.start), (all[id as usize].src, all[id as usize].dst, all[id as usize].start));
        }
        order.push(id as usize);
    }
    assert_eq!(feed.remaining(), 0);
    let mut expected: Vec<usize> = (0..all.len()).collect();
    expected.sort_by_key(|&i| (all[i].start, i));
    assert_eq!(order, expected);
}
