use fctlab_engine::Nanos;
use fctlab_scenario::schema::Format;
use fctlab_sim::Simulation;
/// Two fixed-weight ATCP flows on a dumbbell: `pair A B K RATE DELAY SECS [TRANSPORT_LINE...]`
/// prints the throughput ratio over the last 80% of the run.
fn main() {
    let a: Vec<String> = std::env::args().collect();
    let (wa, wb, k, rate, delay, total): (f64, f64, u32, &str, &str, f64) =
        (a[1].parse().unwrap(), a[2].parse().unwrap(), a[3].parse().unwrap(), &a[4], &a[5], a[6].parse().unwrap());
    let queue = if k > 0 { format!("queue = \"ecn\"\necn_threshold = \"{k}pkt\"\n") } else { String::new() };
    let ecn = if k > 0 { "ecn = true\n" } else { "" };
    // Further arguments are `[transport]` lines, e.g. `cwr=false` or `profile=\"ns2\"`.
    let extra: String = a[7..].iter().map(|l| format!("{l}\n")).collect();
    let toml = format!("seed = 1\nstop_time = \"{total}s\"\n[network]\ntopology = \"dumbbell\"\nsenders = 2\nreceivers = 2\nlink_rate = \"{rate}\"\nlink_delay = \"{delay}\"\nbuffer = \"200pkt\"\n{queue}[transport]\nprotocol = \"atcp\"\nweight_function = \"fixed\"\n{ecn}{extra}min_rto = \"10ms\"\n[[flows]]\nsrc = \"s0\"\ndst = \"r0\"\nweight = {wa}\n[[flows]]\nsrc = \"s1\"\ndst = \"r1\"\nweight = {wb}\nstart = \"1ms\"\n");
    let mut s = Simulation::new(fctlab_scenario::load(&toml, "x", Format::Toml, &[]).unwrap()).unwrap();
    s.advance(Nanos::from_secs_f64(0.2 * total));
    let b: Vec<u64> = s.results(false).flows.iter().map(|f| f.bytes_delivered).collect();
    s.run();
    let r = s.results(false);
    let d: Vec<f64> = r.flows.iter().zip(&b).map(|(f, b)| (f.bytes_delivered - b) as f64).collect();
    println!(
        "w={wa}:{wb} K={k} ratio={:.4} want={:.4} marks={} drops={}",
        d[1] / d[0],
        wb / wa,
        r.summary.ecn_marks,
        r.summary.drops
    );
}
