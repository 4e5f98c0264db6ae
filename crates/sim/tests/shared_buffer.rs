//! A shared-buffer switch (`[network] switch_buffer`): dynamic thresholds at the output queues
//! without PFC, at the inputs with it.

mod common;
use common::*;

/// `senders` hosts of a star each sending `size` to each of `receivers` other hosts at once,
/// 10 Gbps, 1 us links; `extra` lines added to `[network]`.
fn incast(senders: usize, receivers: usize, size: &str, extra: &str) -> String {
    let n = senders + receivers;
    let mut s = format!(
        "seed = 1\n[network]\ntopology = \"star\"\nhosts = {n}\nlink_rate = \"10Gbps\"\nlink_delay = \"1us\"\n{extra}\n\
         [transport]\ninitial_cwnd = 64\nmin_rto = \"1ms\"\nmss = \"1000B\"\nheader_bytes = \"40B\"\n"
    );
    for r in 0..receivers {
        for i in 0..senders {
            s += &format!("[[flows]]\nsrc = \"h{i}\"\ndst = \"h{}\"\nsize = \"{size}\"\n", senders + r);
        }
    }
    s
}

fn queue_max(r: &fctlab_sim::Results, dst: &str) -> u64 {
    r.links.iter().find(|l| l.src == "sw0" && l.dst == dst).map(|l| l.max_queue_bytes).expect("the port")
}

fn drops(r: &fctlab_sim::Results) -> u64 {
    r.links.iter().map(|l| l.drops).sum::<u64>()
}

#[test]
fn one_congested_queue_holds_alpha_over_one_plus_alpha_of_the_buffer() {
    for (alpha, share) in [(1.0, 0.5), (3.0, 0.75)] {
        let r = run(&incast(8, 1, "1MB", &format!("switch_buffer = \"200KB\"\nbuffer_alpha = {alpha}")));
        assert!(drops(&r) > 0, "alpha {alpha}: the incast overflows its share");
        assert!(r.flows.iter().all(|f| f.completed));
        let q = queue_max(&r, "h8") as f64;
        // q <= alpha (B - q): q at most alpha B / (1 + alpha), less a packet's rounding.
        assert!(q <= share * 200_000.0 && q > share * 200_000.0 - 2.0 * 1040.0, "alpha {alpha}: {q} B");
    }
}

#[test]
fn two_congested_queues_share_the_buffer_by_their_thresholds() {
    let r = run(&incast(6, 2, "1MB", "switch_buffer = \"300KB\""));
    // A queue never passes alpha times the room the others leave (q <= B - q, half of it),
    // and both overflow: they share the buffer, neither takes it all.
    for dst in ["h6", "h7"] {
        let q = queue_max(&r, dst) as f64;
        assert!(q <= 150_000.0 && q > 100_000.0, "{dst}: {q} B");
        let l = r.links.iter().find(|l| l.src == "sw0" && l.dst == dst).unwrap();
        assert!(l.drops > 0, "{dst}");
    }
}

#[test]
fn a_lossless_shared_buffer_pauses_by_the_free_space_and_drops_nothing() {
    let mut s = sim(&incast(8, 1, "1MB", "switch_buffer = \"1MB\"\npfc = true"));
    s.run();
    let paused = s.pfc_log().iter().filter(|p| p.pause).count();
    assert!(s.pfc_shared_used().is_some());
    let r = s.results(false);
    assert_eq!(drops(&r), 0);
    assert!(paused > 0, "the incast fills the shared space");
    assert!(r.flows.iter().all(|f| f.completed && f.retransmits == 0));
    // Eight inputs at 1/8 of the free space each: together they hold at most about half of it
    // (n a / (1 + n a) with n a = 1), plus their reserves and headroom.
    let q = queue_max(&r, "h8") as f64;
    assert!(q < 0.5 * 1e6 + 8.0 * (4096.0 + 2.0 * 1250.0 + 2.0 * 1040.0 + 64.0), "{q} B");
}

#[test]
fn shared_buffer_keys_are_checked() {
    let err = |extra: &str| {
        let toml = incast(2, 1, "10KB", extra);
        match fctlab_scenario::load(&toml, "test.toml", fctlab_scenario::schema::Format::Toml, &[]) {
            Err(e) => e.to_string(),
            Ok(sc) => fctlab_sim::Simulation::new(sc).err().map(|e| e.to_string()).unwrap_or_default(),
        }
    };
    assert!(err("buffer_alpha = 2.0").contains("network.buffer_alpha: applies with switch_buffer only"));
    assert!(err("switch_buffer = \"1MB\"\nbuffer_alpha = 0.0").contains("must be a positive number"));
    assert!(err("switch_buffer = \"1MB\"\npfc_alpha = 0.5").contains("network.pfc_alpha: applies with pfc = true only"));
    let e = err("switch_buffer = \"1MB\"\npfc = true\npfc_xoff = \"20KB\"");
    assert!(e.contains("network.pfc_xoff") && e.contains("shared buffer's free space"), "{e}");
    assert!(err("switch_buffer = \"1MB\"\nqueue = \"pfabric\"").contains("first-in-first-out"));
    let e = err("switch_buffer = \"20KB\"\npfc = true");
    assert!(e.contains("network.switch_buffer") && e.contains("two full packets"), "{e}");
}
