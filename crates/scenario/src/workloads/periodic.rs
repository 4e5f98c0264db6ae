//! `kind = "periodic"`: `count` flows of one `size` from `src` to `dst`, one every `interval`
//! from `start`. The worked example of a workload kind in one file (docs/architecture.md,
//! "A workload generator"): built only with the `example-workloads` feature and run from a
//! scenario by `crates/sim/tests/examples.rs`.

use super::{Gen, Workload};
use crate::units::{Duration, Size};
use crate::ScenarioError;
use serde::Deserialize;

/// Its keys of `[[workloads]]`, besides those every kind takes (`start`, `tag`, ...).
#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
pub struct Periodic {
    src: Option<String>,
    dst: Option<String>,
    size: Option<Size>,
    count: Option<u64>,
    interval: Option<Duration>,
}

impl Workload for Periodic {
    const KIND: &'static str = "periodic";

    fn generate(&self, g: &mut Gen<'_, '_>) -> Result<(), ScenarioError> {
        let src = g.host(self.src.as_ref(), "src")?;
        let dst = g.host(self.dst.as_ref(), "dst")?;
        if src == dst {
            return Err(g.err("dst", "a flow from a host to itself"));
        }
        let size = self.size.ok_or_else(|| g.err("size", "a \"periodic\" workload needs `size`"))?.0;
        if size == 0 {
            return Err(g.err("size", "must be positive"));
        }
        let count = self.count.unwrap_or(1);
        if count == 0 {
            return Err(g.err("count", "must be at least 1"));
        }
        // The limit every kind keeps: refused before any flow is made.
        g.at_most_flows("count", count as u128, "count")?;
        let interval = self.interval.map(|d| d.0).unwrap_or_default();
        for i in 0..count {
            g.push(src, dst, Some(size), g.start.saturating_add(interval.mul(i)), "", None);
        }
        Ok(())
    }
}
