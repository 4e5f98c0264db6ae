//! `kind = "incast"`: rounds of responses to one client, each round starting when the previous one has completed.

use super::{Gen, Workload};
use crate::units::{Duration, Size};
use fctlab_engine::Nanos;
use crate::ScenarioError;
use serde::Deserialize;

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
pub struct Incast {
    client: Option<String>,
    servers: Option<toml::Value>,
    response_size: Option<Size>,
    sizes: Option<toml::Value>,
    rounds: Option<u64>,
    round_gap: Option<Duration>,
}

impl Workload for Incast {
    const KIND: &'static str = "incast";

    fn generate(&self, g: &mut Gen<'_, '_>) -> Result<(), ScenarioError> {
        let client = g.host(self.client.as_ref(), "client")?;
        let servers = g.hosts(self.servers.as_ref(), "servers")?;
        if servers.contains(&client) {
            return Err(g.err("servers", "the client cannot also be a server"));
        }
        let dist = g.response_dist(self.response_size, self.sizes.as_ref())?;
        let rounds = self.rounds.unwrap_or(1);
        if rounds == 0 || rounds > 1_000_000 {
            return Err(g.err("rounds", format!("must be between 1 and 1,000,000, got {rounds}")));
        }
        g.at_most_flows("rounds", rounds as u128 * servers.len() as u128, "rounds × servers")?;
        let gap = self.round_gap.map(|d| d.0).unwrap_or(Nanos::ZERO);
        let mut prev: Option<u32> = None;
        for r in 0..rounds {
            let group = format!("incast{}:{r}", g.index);
            let start = if r == 0 { g.start } else { gap };
            for &s in &servers {
                let size = dist.sample(&mut g.rng);
                g.push(s, client, Some(size), start, &group, prev);
            }
            prev = g.ctx.group(&group);
        }
        Ok(())
    }
}
