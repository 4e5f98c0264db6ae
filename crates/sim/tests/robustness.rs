//! Bad input never panics: thousands of mangled scenario files give either a valid scenario
//! or an error naming a key, never a crash.

use fctlab_engine::{Nanos, Rng};
use fctlab_scenario::schema::Format;
use fctlab_sim::Simulation;

const BASE: &str = include_str!("../../../scenarios/examples/demo.toml");

const TOKENS: &[&str] = &[
    "\"1Gbps\"",
    "\"-5MB\"",
    "0",
    "-1",
    "1e400",
    "\"\"",
    "true",
    "\"0pkt\"",
    "\"unlimited\"",
    "[]",
    "{}",
    "\"all\"",
    "\"s*\"",
    "\"ecn\"",
    "\"red\"",
    "\"atcp\"",
    "\"dctcp\"",
    "\"fattree\"",
    "\"custom\"",
    "4294967296",
    "\"1ns\"",
    "\"99999s\"",
    "=",
    "[[flows]]",
    "[network]",
    "\"h0\"",
    "\"left\"",
];

fn mangle(text: &str, rng: &mut Rng) -> String {
    let mut lines: Vec<String> = text.lines().map(|l| l.to_string()).collect();
    for _ in 0..(1 + rng.below(3)) {
        let i = rng.below(lines.len() as u64) as usize;
        match rng.below(4) {
            0 => {
                lines.remove(i);
            }
            1 => {
                // replace the value after '='
                if let Some((k, _)) = lines[i].split_once('=') {
                    let t = TOKENS[rng.below(TOKENS.len() as u64) as usize];
                    lines[i] = format!("{k}= {t}");
                }
            }
            2 => {
                let t = TOKENS[rng.below(TOKENS.len() as u64) as usize];
                lines.insert(i, t.to_string());
            }
            _ => {
                let l = &lines[i];
                if !l.is_empty() {
                    let cut = rng.below(l.len() as u64) as usize;
                    let cut = (0..=cut).rev().find(|&c| l.is_char_boundary(c)).unwrap_or(0);
                    lines[i] = l[..cut].to_string();
                }
            }
        }
    }
    lines.join("\n")
}

#[test]
fn mangled_scenarios_never_panic() {
    let mut rng = Rng::stream(2024, 7);
    let (mut ok, mut err) = (0, 0);
    for _ in 0..3000 {
        let text = mangle(BASE, &mut rng);
        let outcome = std::panic::catch_unwind(|| {
            match fctlab_scenario::load(&text, "m.toml", Format::Toml, &[]).and_then(Simulation::new) {
                Ok(mut sim) => {
                    // a short stretch of simulation must not panic either
                    sim.advance(Nanos::from_millis(2));
                    let _ = sim.results(false);
                    true
                }
                Err(e) => {
                    assert!(e.to_string().starts_with("m.toml: "), "{e}");
                    assert!(!e.to_string().contains('\n'), "{e}");
                    false
                }
            }
        });
        match outcome {
            Ok(true) => ok += 1,
            Ok(false) => err += 1,
            Err(_) => panic!("panic on input:\n{text}"),
        }
    }
    assert!(ok > 100 && err > 100, "ok {ok} err {err}: the mangling should produce both");
}

/// Every shipped scenario file (scenarios/ and the benchmarks), the seeds of the fuzzer.
fn shipped() -> Vec<(String, String)> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut out = Vec::new();
    let mut dirs = vec![root.join("scenarios"), root.join("python/fctlab/benchmarks")];
    while let Some(d) = dirs.pop() {
        let mut entries: Vec<_> = std::fs::read_dir(&d).expect("scenario folder").flatten().map(|e| e.path()).collect();
        entries.sort();
        for p in entries {
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|e| e == "toml") {
                let text = std::fs::read_to_string(&p).expect("scenario text");
                // sweep files are not scenarios
                if !text.contains("\n[axes]") && !text.starts_with("base =") {
                    out.push((p.display().to_string(), text));
                }
            }
        }
    }
    out
}

/// Values the mutations write: sizes at and beyond every limit, units wrong and right, the
/// other types.
const VALUES: &[&str] = &[
    "1000000000",
    "4294967296",
    "9223372036854775807",
    "99999",
    "0",
    "-1",
    "1.5",
    "1e400",
    "nan",
    "true",
    "\"\"",
    "\"0s\"",
    "\"1ns\"",
    "\"99999s\"",
    "\"-5ms\"",
    "\"10Gbs\"",
    "\"100Tbps\"",
    "\"1pkt\"",
    "\"0pkt\"",
    "\"unlimited\"",
    "\"1PB\"",
    "\"all\"",
    "\"h0..h99999\"",
    "\"ns2\"",
    "\"red\"",
    "\"ecn\"",
    "\"rcp\"",
    "\"sdc\"",
    "\"srpt\"",
    "[]",
    "[0, 1]",
    "{}",
    // past every range: 2^64 - 1, 2^63, 1e300, with and without units
    "18446744073709551615",
    "9223372036854775808",
    "1e300",
    "\"18446744073709551615B\"",
    "\"9223372036854775808B\"",
    "\"18446744074s\"",
    "\"9007199254740993B\"",
    "\"1e300s\"",
    "\"999999999999999999999999Gbps\"",
    "\"0.0000001ns\"",
    "\"18446744073709551615pkt\"",
];

/// A string value of `n` characters (a tag, a name or a unit thousands of characters long).
fn huge(n: usize) -> String {
    format!("\"{}\"", "9".repeat(n))
}

/// One to three random edits of a scenario: a value replaced (by one of [`VALUES`] or the
/// value of another line), a line removed, duplicated or cut, a `key = value` line moved
/// elsewhere, or the text cut short.
fn mutate(text: &str, pool: &[String], rng: &mut Rng) -> String {
    let mut lines: Vec<String> = text.lines().map(|l| l.to_string()).collect();
    if lines.is_empty() {
        return String::new();
    }
    let pick = |rng: &mut Rng, n: usize| rng.below(n as u64) as usize;
    for _ in 0..(1 + rng.below(3)) {
        let i = pick(rng, lines.len());
        match rng.below(7) {
            0 | 1 => {
                if let Some((k, _)) = lines[i].split_once('=') {
                    lines[i] = if rng.below(20) == 0 {
                        format!("{k}= {}", huge(1 + pick(rng, 200_000)))
                    } else {
                        format!("{k}= {}", VALUES[pick(rng, VALUES.len())])
                    };
                }
            }
            2 => {
                let other = &pool[pick(rng, pool.len())];
                if let (Some((k, _)), Some((_, v))) = (lines[i].split_once('='), other.split_once('=')) {
                    lines[i] = format!("{k}={v}");
                }
            }
            3 => {
                lines.remove(i);
                if lines.is_empty() {
                    return String::new();
                }
            }
            4 => {
                let l = lines[i].clone();
                let j = pick(rng, lines.len());
                lines.insert(j, l);
            }
            5 => {
                let other = pool[pick(rng, pool.len())].clone();
                lines.insert(i, other);
            }
            _ => {
                let l = &lines[i];
                let cut = pick(rng, l.len() + 1);
                let cut = (0..=cut).rev().find(|&c| l.is_char_boundary(c)).unwrap_or(0);
                lines[i] = l[..cut].to_string();
            }
        }
    }
    lines.join("\n")
}

/// What a run's outputs can be, given the ranges its inputs are checked against: sizes at most
/// 2^53 B and delivered bytes at most the size, times within what was simulated, counts that
/// never wrapped (a wrapped count is near 2^64), utilization at most the link's capacity.
fn outputs_within_their_inputs_ranges(r: &fctlab_sim::Results) {
    let now = r.summary.sim_time_s;
    let within = |t: Option<f64>| t.map_or(true, |t| t.is_finite() && (0.0..=now + 1e-9).contains(&t));
    const SANE: u64 = 1 << 62;
    for f in &r.flows {
        assert!(f.size_bytes.map_or(true, |b| b > 0 && b <= 1 << 53), "flow {}: size {:?}", f.flow_id, f.size_bytes);
        assert!(
            f.size_bytes.map_or(true, |b| f.bytes_delivered <= b),
            "flow {}: delivered more than its size",
            f.flow_id
        );
        assert!(within(f.start_s) && within(f.finish_s), "flow {}: times past the simulated {now} s", f.flow_id);
        assert!(f.fct_s.map_or(true, |t| t.is_finite() && t >= 0.0), "flow {}: fct {:?}", f.flow_id, f.fct_s);
        assert!(f.slowdown.map_or(true, |x| x.is_finite() && x > 0.0), "flow {}: slowdown {:?}", f.flow_id, f.slowdown);
        for (what, v) in [("retransmits", f.retransmits), ("packets_sent", f.packets_sent), ("drops", f.drops)] {
            assert!(v < SANE, "flow {}: {what} = {v}", f.flow_id);
        }
    }
    for l in &r.links {
        assert!(
            l.utilization.is_finite() && (0.0..=1.0 + 1e-6).contains(&l.utilization),
            "link {}: utilization {}",
            l.link_id,
            l.utilization
        );
        for (what, v) in
            [("tx_bytes", l.tx_bytes), ("tx_packets", l.tx_packets), ("max_queue_bytes", l.max_queue_bytes)]
        {
            assert!(v < SANE, "link {}: {what} = {v}", l.link_id);
        }
    }
}

/// The fuzzer: `FCTLAB_FUZZ_CASES` mutated scenarios (1,000 by default; `make fuzz` runs
/// 10,000) from every shipped scenario, drawn from `FCTLAB_FUZZ_SEED` (default 2026). Each gives a one-line error naming the file, or a
/// scenario that builds and simulates 2 ms without a panic and with every packet accounted
/// for; none takes more than 20 s.
#[test]
fn fuzzed_shipped_scenarios_give_one_line_errors_or_runs_that_conserve_packets() {
    let seeds = shipped();
    assert!(seeds.len() >= 30, "found {} scenario files", seeds.len());
    let pool: Vec<String> =
        seeds.iter().flat_map(|(_, t)| t.lines().filter(|l| l.contains('=')).map(|l| l.to_string())).collect();
    let cases: u64 = std::env::var("FCTLAB_FUZZ_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(1000);
    // FCTLAB_FUZZ_SEED explores other cases (the default set is the one CI runs)
    let seed: u64 = std::env::var("FCTLAB_FUZZ_SEED").ok().and_then(|v| v.parse().ok()).unwrap_or(2026);
    let mut rng = Rng::stream(seed, 11);
    let (mut ran, mut refused) = (0u64, 0u64);
    for case in 0..cases {
        let (name, base) = &seeds[rng.below(seeds.len() as u64) as usize];
        let text = mutate(base, &pool, &mut rng);
        if let Ok(path) = std::env::var("FCTLAB_FUZZ_TRACE") {
            // the case about to run, for one that hangs
            std::fs::write(&path, format!("# case {case} from {name}\n{text}")).expect("trace file");
        }
        let t0 = std::time::Instant::now();
        let outcome = std::panic::catch_unwind(|| {
            match fctlab_scenario::load(&text, "f.toml", Format::Toml, &[]).and_then(Simulation::new) {
                Ok(mut sim) => {
                    sim.advance(Nanos::from_millis(2));
                    let r = sim.results(false);
                    let s = &r.summary;
                    assert_eq!(
                        s.packets_created,
                        s.packets_consumed + s.drops + s.packets_in_network,
                        "packets not accounted for"
                    );
                    outputs_within_their_inputs_ranges(&r);
                    true
                }
                Err(e) => {
                    let m = e.to_string();
                    assert!(m.starts_with("f.toml") && !m.contains('\n'), "not one line naming the file: {m}");
                    false
                }
            }
        });
        let took = t0.elapsed().as_secs_f64();
        match outcome {
            Ok(true) => ran += 1,
            Ok(false) => refused += 1,
            Err(_) => panic!("case {case} (from {name}) panicked on:\n{text}"),
        }
        assert!(took < 20.0, "case {case} (from {name}) took {took:.1} s:\n{text}");
    }
    println!("{cases} cases: {ran} ran, {refused} refused");
    assert!(ran > cases / 10 && refused > cases / 10, "{ran} ran, {refused} refused: the mutations should give both");
}
