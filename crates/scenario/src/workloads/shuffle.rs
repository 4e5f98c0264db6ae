//! `kind = "shuffle"`: MapReduce jobs: every mapper sends a block to every reducer.

use super::{Gen, Workload};
use crate::units::{Duration, Size};
use crate::ScenarioError;
use serde::Deserialize;

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
pub struct Shuffle {
    mappers: Option<toml::Value>,
    reducers: Option<toml::Value>,
    block_size: Option<Size>,
    jobs: Option<u64>,
    arrival_rate: Option<String>,
    job_interval: Option<Duration>,
}

impl Workload for Shuffle {
    const KIND: &'static str = "shuffle";

    fn generate(&self, g: &mut Gen<'_, '_>) -> Result<(), ScenarioError> {
        let mappers = g.hosts(self.mappers.as_ref(), "mappers")?;
        let reducers = g.hosts(self.reducers.as_ref(), "reducers")?;
        let block = self
            .block_size
            .ok_or_else(|| {
                g.err(
                    "block_size",
                    "a \"shuffle\" workload needs `block_size` (bytes each mapper sends each reducer)",
                )
            })?
            .0;
        if block == 0 {
            return Err(g.err("block_size", "must be positive"));
        }
        if !mappers.iter().any(|m| reducers.iter().any(|r| r != m)) {
            return Err(g.err("reducers", "no mapper-reducer pair between different hosts"));
        }
        let per_job = mappers.len() as u128 * reducers.len() as u128;
        g.at_most_flows("jobs", self.jobs.unwrap_or(1) as u128 * per_job, "jobs × mappers × reducers")?;
        for (j, at) in g.job_starts(self.jobs, self.arrival_rate.as_ref(), self.job_interval)?.into_iter().enumerate() {
            let group = format!("shuffle{}:{j}", g.index);
            for &m in &mappers {
                for &r in &reducers {
                    if m != r {
                        g.push(m, r, Some(block), at, &group, None);
                    }
                }
            }
        }
        Ok(())
    }
}
