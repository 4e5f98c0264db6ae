//! `kind = "poisson"`: open-loop arrivals at a load or a rate, from senders to receivers by a
//! pattern. The flows are drawn as the run goes on ([`Draws`]), not listed: an entry can give
//! millions.

use super::{parse_per_second, Gen, Workload};
use crate::flowlist::{DrawPlan, Draws, Pattern};
use crate::limits::{past_max_time, MAX_FLOWS, MAX_TIME};
use crate::units::Duration;
use crate::ScenarioError;
use fctlab_engine::Nanos;
use serde::Deserialize;

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
pub struct Poisson {
    senders: Option<toml::Value>,
    receivers: Option<toml::Value>,
    pattern: Option<String>,
    sizes: Option<toml::Value>,
    load: Option<f64>,
    load_link: Option<String>,
    arrival_rate: Option<String>,
    count: Option<u64>,
    until: Option<Duration>,
}

impl Workload for Poisson {
    const KIND: &'static str = "poisson";

    fn generate(&self, g: &mut Gen<'_, '_>) -> Result<(), ScenarioError> {
        let senders = g.hosts(self.senders.as_ref(), "senders")?;
        let receivers = g.hosts(self.receivers.as_ref(), "receivers")?;
        let dist = g.sizes(self.sizes.as_ref(), true)?.expect("required");
        let pattern = pattern(g, self.pattern.as_deref().unwrap_or("all_to_all"), &senders, &receivers)?;
        let rate = self.rate_per_s(g, Some(dist.mean_bytes()), &receivers)?;
        if !(rate > 0.0 && rate.is_finite()) {
            return Err(g.err("arrival_rate", "the arrival rate must be positive"));
        }
        let load = match self.load {
            Some(load) => load,
            None => rate * 8.0 * dist.mean_bytes() / capacity_bps(g, &receivers),
        };
        g.derive_parameters(&dist, load)?;
        let (count, until) = (self.count, self.until.map(|d| d.0));
        check_end(g, count, until, rate)?;
        let template = g.template();
        let plan = DrawPlan {
            rng: g.rng.clone(),
            senders,
            receivers,
            pattern,
            sizes: dist,
            mean_gap_ns: 1e9 / rate,
            count: count.unwrap_or(u64::MAX),
            until,
            start: g.start,
            deadline: g.deadline.clone(),
            template,
        };
        // Drawn once here to count them and check each; drawn again as the run needs them.
        let draws = Draws::counted(plan, |n, f| {
            if n > MAX_FLOWS {
                return Err(g.err("until", "more than 20,000,000 flows; shorten `until` or set `count`"));
            }
            if f.start > MAX_TIME {
                return Err(g.ctx.err(&g.prefix, past_max_time(f.start)));
            }
            Ok(())
        })?;
        g.drawn = Some(draws);
        Ok(())
    }
}

/// The `pattern` by name, checked against the host sets it pairs.
fn pattern(g: &Gen<'_, '_>, name: &str, senders: &[usize], receivers: &[usize]) -> Result<Pattern, ScenarioError> {
    match name {
        "all_to_all" => {
            if senders.len() == 1 && receivers.len() == 1 && senders[0] == receivers[0] {
                return Err(g.err("receivers", "senders and receivers are the same single host"));
            }
            Ok(Pattern::AllToAll)
        }
        "pairs" => {
            g.check_pairs(senders, receivers)?;
            Ok(Pattern::Pairs)
        }
        "many_to_one" => {
            if receivers.len() != 1 {
                return Err(g.err("receivers", "pattern \"many_to_one\" needs exactly one receiver"));
            }
            if senders.iter().all(|&s| s == receivers[0]) {
                return Err(g.err("senders", "no sender other than the receiver"));
            }
            Ok(Pattern::ManyToOne)
        }
        other => {
            Err(g.err("pattern", format!("unknown pattern \"{other}\" (known: all_to_all, pairs, many_to_one)")))
        }
    }
}

/// The entry ends after `count` flows or at `until`, within the flows one run accepts.
fn check_end(g: &Gen<'_, '_>, count: Option<u64>, until: Option<Nanos>, rate: f64) -> Result<(), ScenarioError> {
    if count.is_none() && until.is_none() {
        return Err(g.err("count", "a \"poisson\" workload needs `count` (flows) or `until` (a duration) to end"));
    }
    if count.is_some_and(|c| c > MAX_FLOWS) {
        return Err(g.err(
            "count",
            format!("{} flows is more than this simulator accepts in one run (20,000,000)", count.unwrap_or(0)),
        ));
    }
    // Refused before drawing when the window's expected count is clearly beyond the limit
    // (the draw itself stops at the limit too).
    if let (None, Some(u)) = (count, until) {
        let expected = rate * u.as_secs_f64();
        if expected > 1.1 * MAX_FLOWS as f64 {
            return Err(g.err(
                "until",
                format!(
                    "about {expected:.0} flows at {rate:.0} per second, more than this simulator accepts in one run \
                     (20,000,000); shorten `until` or set `count`"
                ),
            ));
        }
    }
    Ok(())
}

impl Poisson {
    /// Flows per second from `arrival_rate`, or from `load` given the mean size.
    fn rate_per_s(&self, g: &Gen<'_, '_>, mean_bytes: Option<f64>, receivers: &[usize]) -> Result<f64, ScenarioError> {
        match (self.load, self.arrival_rate.as_ref()) {
            (Some(_), Some(_)) => Err(g.err("load", "give either `load` or `arrival_rate`, not both")),
            (None, Some(r)) => {
                if self.load_link.is_some() {
                    return Err(g.err("load_link", "only used with `load`"));
                }
                parse_per_second(r).map_err(|m| g.err("arrival_rate", m))
            }
            (Some(load), None) => {
                if !(load > 0.0 && load.is_finite()) {
                    return Err(g.err("load", format!("must be a positive number (a fraction of the receivers' capacity; above 1 overloads them), got {load}")));
                }
                let mean =
                    mean_bytes.ok_or_else(|| g.err("load", "needs `sizes` to turn a load into an arrival rate"))?;
                let capacity: f64 = match self.load_link.as_deref() {
                    // A fraction of one named link (e.g. a bottleneck).
                    Some(name) => g.link_rate_bps(name)?,
                    None => capacity_bps(g, receivers),
                };
                Ok(load * capacity / (8.0 * mean))
            }
            (None, None) => Err(g.err("load", format!("a \"{}\" workload needs `load` or `arrival_rate`", g.kind))),
        }
    }
}

/// The receivers' access capacity in bits per second (each receiver once).
fn capacity_bps(g: &Gen<'_, '_>, receivers: &[usize]) -> f64 {
    let mut distinct = receivers.to_vec();
    distinct.sort();
    distinct.dedup();
    distinct.iter().map(|&h| g.access_rate_bps(h)).sum()
}
