//! `kind = "partition_aggregate"`: requests from an aggregator to its workers, then their responses.

use super::{Gen, Workload};
use crate::units::{Duration, Size};
use fctlab_engine::Nanos;
use crate::ScenarioError;
use serde::Deserialize;

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
pub struct PartitionAggregate {
    aggregator: Option<String>,
    workers: Option<toml::Value>,
    request_size: Option<Size>,
    response_size: Option<Size>,
    sizes: Option<toml::Value>,
    jobs: Option<u64>,
    arrival_rate: Option<String>,
    job_interval: Option<Duration>,
}

impl Workload for PartitionAggregate {
    const KIND: &'static str = "partition_aggregate";

    fn generate(&self, g: &mut Gen<'_, '_>) -> Result<(), ScenarioError> {
        let agg = g.host(self.aggregator.as_ref(), "aggregator")?;
        let workers = g.hosts(self.workers.as_ref(), "workers")?;
        if workers.contains(&agg) {
            return Err(g.err("workers", "the aggregator cannot also be a worker"));
        }
        // A request size of 0: requests are not modelled, the responses start at the job's time.
        let request = self.request_size.map(|s| s.0).unwrap_or(1_000);
        let dist = g.response_dist(self.response_size, self.sizes.as_ref())?;
        let per_job = workers.len() as u128 * if request == 0 { 1 } else { 2 };
        g.at_most_flows("jobs", self.jobs.unwrap_or(1) as u128 * per_job, "jobs × workers (× 2 with requests)")?;
        for (j, at) in g.job_starts(self.jobs, self.arrival_rate.as_ref(), self.job_interval)?.into_iter().enumerate() {
            let r = format!("pa{}:{j}", g.index);
            let (start, after) = if request == 0 {
                (at, None)
            } else {
                let q = format!("pa{}:{j}:requests", g.index);
                for &wk in &workers {
                    g.push(agg, wk, Some(request), at, &q, None);
                }
                (Nanos::ZERO, g.ctx.group(&q))
            };
            for &wk in &workers {
                let size = dist.sample(&mut g.rng);
                g.push(wk, agg, Some(size), start, &r, after);
            }
        }
        Ok(())
    }
}
