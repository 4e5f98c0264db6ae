//! `fctlab-sim SCENARIO.toml [--set key=value ...] [--ties fifo|keyed] [--window-profile PARTS]`:
//! runs a scenario with the Rust core alone and prints its summary (used for profiling; the
//! `fctlab` command is the user interface). `--ties keyed` orders simultaneous events by their
//! own keys. `--window-profile PARTS` splits the network into PARTS parts and prints, beside
//! the summary, what the run says about a parallel engine on them (`window_profile.rs`), with
//! the speed-up it predicts at a barrier cost measured here (with as many threads as parts, at
//! most one per core) and at each cost `--barrier-ns NS[,NS...]` gives (for machines with more
//! cores than this one).

use fctlab_scenario::schema::Format;
use fctlab_sim::Simulation;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(path) = args.first() else {
        eprintln!("usage: fctlab-sim SCENARIO.toml [--set key=value ...] [--ties fifo|keyed] [--window-profile PARTS [--barrier-ns NS,...]]");
        return ExitCode::from(2);
    };
    let mut overrides = Vec::new();
    let mut ties = fctlab_engine::Ties::Fifo;
    let mut profile_parts: Option<usize> = None;
    let mut barrier_ns: Vec<f64> = Vec::new();
    let mut it = args[1..].iter();
    while let Some(a) = it.next() {
        match (a.as_str(), it.next()) {
            ("--set", Some(kv)) => overrides.push(kv.clone()),
            ("--ties", Some(t)) if t == "fifo" => ties = fctlab_engine::Ties::Fifo,
            ("--ties", Some(t)) if t == "keyed" => ties = fctlab_engine::Ties::Keyed,
            ("--ties", Some(t)) => {
                eprintln!("error: --ties {t}: expected fifo or keyed");
                return ExitCode::from(2);
            }
            ("--barrier-ns", Some(b)) => match b.split(',').map(str::parse::<f64>).collect::<Result<Vec<f64>, _>>() {
                Ok(v) if v.iter().all(|b| b.is_finite() && *b >= 0.0) => barrier_ns = v,
                _ => {
                    eprintln!("error: --barrier-ns {b}: expected nanoseconds (at least 0), comma-separated");
                    return ExitCode::from(2);
                }
            },
            ("--window-profile", Some(n)) => match n.parse::<usize>() {
                Ok(n) if n >= 1 => profile_parts = Some(n),
                _ => {
                    eprintln!("error: --window-profile {n}: expected a number of parts, at least 1");
                    return ExitCode::from(2);
                }
            },
            _ => {
                eprintln!("error: unexpected argument {a}");
                return ExitCode::from(2);
            }
        }
    }
    let text = match fctlab_scenario::limits::read_text_file(std::path::Path::new(path)) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let sim = fctlab_scenario::load(&text, path, Format::Toml, &overrides).and_then(Simulation::new);
    let mut sim = match sim {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    if let Err(e) = sim.set_ties(ties) {
        eprintln!("error: {e}");
        return ExitCode::from(2);
    }
    if let Some(parts) = profile_parts {
        let partition = fctlab_net::partition::Partition::of(&sim.scenario().topology, parts);
        if let Err(e) = partition.and_then(|p| sim.profile_windows(p)) {
            eprintln!("error: --window-profile {parts}: {e}");
            return ExitCode::from(2);
        }
    }
    // As the bindings run it: the rows of finished flows handed out (and here dropped) as
    // the run goes on, in slices of simulated time.
    sim.stream_flow_rows();
    let slice = sim
        .scenario()
        .stop_time
        .map_or(fctlab_engine::Nanos::from_millis(1), |s| s.div(200).max(fctlab_engine::Nanos::from_micros(1)));
    let mut until = fctlab_engine::Nanos::ZERO;
    loop {
        until = until.saturating_add(slice);
        let status = sim.advance(until);
        drop(sim.take_flow_rows());
        if let Some(m) = sim.failure() {
            eprintln!("error: {m}");
            return ExitCode::from(2);
        }
        if status == fctlab_sim::RunStatus::Finished {
            break;
        }
    }
    let r = sim.results(false);
    let s = &r.summary;
    println!(
        "sim_time_s={:.6} wall_time_s={:.3} events={} events_per_s={:.0} data_packets_delivered={} data_pkts_per_wall_s={:.0} flows={}/{} drops={} ecn_marks={}",
        s.sim_time_s, s.wall_time_s, s.events, s.events_per_s, s.data_packets_delivered, s.data_packets_delivered_per_wall_s,
        s.flows_completed, s.flows_total, s.drops, s.ecn_marks
    );
    if let Some(p) = sim.window_profile() {
        let measured = fctlab_engine::barrier::round_ns(p.parts.min(available_cores()), 200_000);
        println!(
            "parts={} lookahead_ns={} cut_links={} ports_per_part={:?} events={} events_global={} events_per_part={:?} windows_busy={} sum_of_max={} cut_packets={} loop_wall_s={:.3}",
            p.parts, p.lookahead_ns.map_or("none".into(), |l| l.to_string()), p.cut_links, p.ports_per_part, p.events,
            p.events_global, p.events_per_part, p.windows_busy, p.sum_of_max, p.cut_packets, p.loop_wall_s
        );
        println!(
            "barrier_ns_measured={measured:.0} (threads={}) predicted_speedup={:.2}",
            p.parts.min(available_cores()),
            p.predicted_speedup(measured)
        );
        for b in barrier_ns {
            println!("barrier_ns={b:.0} predicted_speedup={:.2}", p.predicted_speedup(b));
        }
    }
    ExitCode::SUCCESS
}

/// The cores this process may run on.
fn available_cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}
