//! `fctlab-sim SCENARIO.toml [--set key=value ...] [--ties fifo|keyed]`: runs a scenario with
//! the Rust core alone and prints its summary (used for profiling; the `fctlab` command is the
//! user interface). `--ties keyed` orders simultaneous events by their own keys.

use fctlab_scenario::schema::Format;
use fctlab_sim::Simulation;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(path) = args.first() else {
        eprintln!("usage: fctlab-sim SCENARIO.toml [--set key=value ...] [--ties fifo|keyed]");
        return ExitCode::from(2);
    };
    let mut overrides = Vec::new();
    let mut ties = fctlab_engine::Ties::Fifo;
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
    ExitCode::SUCCESS
}
