//! Helpers shared by the simulator's integration tests.
#![allow(dead_code)]

use fctlab_scenario::schema::Format;
use fctlab_sim::{Results, Simulation};

pub fn sim(toml: &str) -> Simulation {
    let sc = fctlab_scenario::load(toml, "test.toml", Format::Toml, &[]).unwrap_or_else(|e| panic!("{e}"));
    Simulation::new(sc).unwrap_or_else(|e| panic!("{e}"))
}

pub fn run(toml: &str) -> Results {
    let mut s = sim(toml);
    s.run();
    s.results(false)
}

pub fn jain(x: &[f64]) -> f64 {
    let s: f64 = x.iter().sum();
    let s2: f64 = x.iter().map(|v| v * v).sum();
    s * s / (x.len() as f64 * s2)
}

/// A dumbbell with `n` long-lived flows s_i -> r_i.
pub fn dumbbell_long_lived(
    n: usize,
    rate: &str,
    delay: &str,
    buffer: &str,
    stop: &str,
    extra_transport: &str,
) -> String {
    let mut s = format!(
        "seed = 1\nstop_time = \"{stop}\"\n[network]\ntopology = \"dumbbell\"\nsenders = {n}\nreceivers = {n}\nlink_rate = \"{rate}\"\nlink_delay = \"{delay}\"\nbuffer = \"{buffer}\"\n[transport]\nmin_rto = \"10ms\"\n{extra_transport}\n"
    );
    for i in 0..n {
        s += &format!("[[flows]]\nsrc = \"s{i}\"\ndst = \"r{i}\"\nstart = \"{}us\"\n", i * 7);
    }
    s
}
