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
