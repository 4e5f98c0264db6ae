use super::*;
use crate::packet::{NodeId, Packet, PacketPool};
use crate::qdisc::{BufferLimit, QueueConfig};
use fctlab_engine::{BitsPerSec, Rng};

/// Four 1 Gbps ports out of node 0.
fn four_ports() -> Vec<Port> {
    (0..4)
        .map(|i| {
            Port::new(
                NodeId(0),
                NodeId(1 + i),
                BitsPerSec(1_000_000_000),
                Nanos::from_micros(1),
                BufferLimit::Packets(100),
                &QueueConfig::DropTail(()),
                Rng::stream(0, i as u64),
            )
        })
        .collect()
}

const CANDIDATES: [PortId; 4] = [PortId(0), PortId(1), PortId(2), PortId(3)];

fn hop(now_us: u64, flow: u32, entropy: u8) -> Hop {
    Hop { now: Nanos::from_micros(now_us), node: 0, flow: FlowId(flow), entropy }
}

/// How many of `n` packets of flow 1, one per microsecond, each port gets.
fn spread(b: &mut Balancer, n: u64, entropy: impl Fn(u64) -> u8) -> [u32; 4] {
    let mut ports = four_ports();
    let mut counts = [0u32; 4];
    for i in 0..n {
        let p = b.next(&mut hop(i, 1, entropy(i)), &CANDIDATES, &mut ports).unwrap();
        counts[p.0 as usize] += 1;
    }
    counts
}

fn build(name: &str, gap: Option<Nanos>) -> Balancer {
    Balance::from_name(name, gap).unwrap().build(1, 4, 7, 11).unwrap()
}

#[test]
fn spraying_spreads_one_flows_packets_evenly_over_every_next_hop() {
    let counts = spread(&mut build("spray", None), 4000, |_| 0);
    for c in counts {
        assert!((900..1100).contains(&c), "{counts:?}");
    }
    assert_eq!(counts, spread(&mut build("spray", None), 4000, |_| 0), "the same seed draws the same");
}

#[test]
fn round_robin_gives_each_next_hop_its_turn() {
    assert_eq!(spread(&mut build("round_robin", None), 400, |_| 0), [100; 4]);
}

#[test]
fn a_flowlet_keeps_its_next_hop_until_a_gap_longer_than_the_threshold() {
    let mut b = build("flowlet", Some(Nanos::from_micros(50)));
    let mut ports = four_ports();
    let mut first = Vec::new();
    for flowlet in 0..40u64 {
        let t0 = flowlet * 1000; // 1 ms apart: every flowlet starts after a long gap
        let p0 = b.next(&mut hop(t0, 1, 0), &CANDIDATES, &mut ports).unwrap();
        for i in 1..20 {
            // packets 10 us apart, 190 us in all: never a gap of more than 50 us
            assert_eq!(b.next(&mut hop(t0 + 10 * i, 1, 0), &CANDIDATES, &mut ports), Some(p0));
        }
        first.push(p0);
    }
    first.sort();
    first.dedup();
    assert_eq!(first.len(), 4, "forty flowlets of one flow took every next hop");
}

#[test]
fn adaptive_routing_takes_the_least_queued_next_hop_and_breaks_ties_at_random() {
    let mut b = build("adaptive", None);
    let mut ports = four_ports();
    let mut pool = PacketPool::new();
    // Queue 3, 1, 0 and 2 packets behind the first transmission of ports 0, 1, 2 and 3.
    for (port, n) in [(0usize, 4), (1, 2), (2, 1), (3, 3)] {
        for _ in 0..n {
            let p = Packet { wire_bytes: 1500, ..Default::default() };
            let meta = p.meta();
            ports[port].enqueue(Nanos::ZERO, pool.alloc(p), meta);
        }
    }
    for i in 0..20 {
        assert_eq!(b.next(&mut hop(0, i, 0), &CANDIDATES, &mut ports), Some(PortId(2)));
    }
    let mut idle = four_ports();
    let counts: Vec<PortId> = (0..200).map(|i| b.next(&mut hop(0, i, 0), &CANDIDATES, &mut idle).unwrap()).collect();
    for c in CANDIDATES {
        assert!(counts.iter().filter(|&&p| p == c).count() > 20, "ties spread: {counts:?}");
    }
}

#[test]
fn reps_takes_one_path_per_entropy_value_and_spreads_over_values() {
    let same = spread(&mut build("reps", None), 100, |_| 5);
    assert_eq!(same.iter().filter(|&&c| c > 0).count(), 1, "{same:?}");
    let over = spread(&mut build("reps", None), 1280, |i| (i % 128) as u8);
    for c in over {
        assert!(c > 200, "{over:?}");
    }
}

#[test]
fn unknown_policies_and_misplaced_keys_are_named() {
    let e = Balance::from_name("sprya", None).unwrap_err();
    assert_eq!(e.key, "load_balancing");
    assert!(
        e.message.contains("known: ecmp, spray, round_robin, permutation, flowlet, adaptive, reps"),
        "{}",
        e.message
    );
    let e = Balance::from_name("spray", Some(Nanos::from_micros(5))).unwrap_err();
    assert_eq!(e.key, "flowlet_gap");
    assert!(Balance::from_name("ecmp", None).unwrap().build(3, 1, 1, 1).is_none());
}

#[test]
fn a_sender_sprays_each_round_over_every_path_once_and_shuffles_the_rounds() {
    // Two levels of four next hops: 16 paths, named by the path number in each packet.
    let mut p = Permutation::new(3, 5);
    p.set_paths(FlowId(2), false, 16);
    let mut ports = four_ports();
    let mut rounds = Vec::new();
    for _ in 0..4 {
        let mut round = Vec::new();
        for _ in 0..16 {
            let e = p.entropy(FlowId(2), false);
            let mut at_first = Hop { now: Nanos::ZERO, node: 10, flow: FlowId(2), entropy: e };
            let a = p.choose(&mut at_first, &CANDIDATES, &mut ports);
            let mut at_second = Hop { node: 20, ..at_first };
            let b = p.choose(&mut at_second, &CANDIDATES, &mut ports);
            round.push((a.0, b.0));
        }
        let mut paths = round.clone();
        paths.sort();
        paths.dedup();
        assert_eq!(paths.len(), 16, "a round of 16 packets takes every path once: {round:?}");
        rounds.push(round);
    }
    rounds.dedup();
    assert!(rounds.len() > 1, "the order changes from round to round");
    // The acknowledgements' direction keeps its own count.
    p.set_paths(FlowId(2), true, 4);
    let acks: Vec<u8> = (0..8).map(|_| p.entropy(FlowId(2), true)).collect();
    assert!(acks.iter().all(|&e| e < 4));
    let mut first: Vec<u8> = acks[..4].to_vec();
    first.sort();
    assert_eq!(first, [0, 1, 2, 3]);
}

#[test]
fn reps_reuses_each_value_acknowledged_unmarked_once_oldest_first_and_draws_otherwise() {
    let mut r = Reps::new(2, 1, 1);
    let first: Vec<u8> = (0..3).map(|_| r.entropy(FlowId(1), false)).collect();
    assert_eq!(r.drawn, 3, "nothing kept yet: every value drawn");
    r.on_reply(FlowId(1), first[0], false);
    r.on_reply(FlowId(1), first[1], true); // marked: not kept
    r.on_reply(FlowId(1), first[2], false);
    assert_eq!(r.entropy(FlowId(1), false), first[0], "the oldest kept value first");
    assert_eq!(r.entropy(FlowId(1), false), first[2]);
    r.entropy(FlowId(1), false);
    assert_eq!((r.recycled, r.drawn), (2, 4), "each kept value used once, then a draw");
    // Nine values kept: the ring holds the last eight.
    for v in 10..19 {
        r.on_reply(FlowId(0), v, false);
    }
    let reused: Vec<u8> = (0..8).map(|_| r.entropy(FlowId(0), false)).collect();
    assert_eq!(reused, (11..19).collect::<Vec<u8>>());
    assert!(r.entropy(FlowId(0), false) < 128);
}
