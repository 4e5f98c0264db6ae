use fctlab_engine::Nanos;
use fctlab_scenario::schema::Format;
use fctlab_sim::Simulation;
fn main() {
    let a: Vec<String> = std::env::args().collect();
    let text = std::fs::read_to_string(&a[1]).unwrap();
    let f: usize = a[2].parse().unwrap();
    let step: u64 = a[3].parse().unwrap();
    let n: u64 = a[4].parse().unwrap();
    let mut s = Simulation::new(fctlab_scenario::load(&text, "x", Format::Toml, &[]).unwrap()).unwrap();
    for i in 1..=n {
        s.advance(Nanos(i * step));
        let r = s.results(false);
        println!(
            "t={}us sent={} retx={} | {}",
            i * step / 1000,
            r.flows[f].packets_sent,
            r.flows[f].retransmits,
            s.describe_flow(f).chars().take(600).collect::<String>()
        );
    }
}
