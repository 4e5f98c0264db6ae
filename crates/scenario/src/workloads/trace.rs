//! `kind = "trace"`: the flows of a CSV file (read by `crate::trace`).

use super::{Gen, Workload};
use crate::flowlist::Draws;
use crate::limits::{past_max_time, MAX_FLOWS};
use crate::ScenarioError;
use serde::Deserialize;

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
pub struct Trace {
    file: Option<String>,
}

impl Workload for Trace {
    const KIND: &'static str = "trace";

    fn generate(&self, g: &mut Gen<'_, '_>) -> Result<(), ScenarioError> {
        let name = self.file.clone().ok_or_else(|| g.err("file", "a \"trace\" workload needs `file` (a CSV file)"))?;
        let template = g.template();
        let entry = crate::trace::Entry {
            scenario_file: &g.ctx.file,
            name: &name,
            topology: g.ctx.topology,
            host_list: g.ctx.host_list(),
            start: g.start,
            deadline: g.deadline.clone(),
            template,
        };
        let loaded = crate::trace::load(entry).map_err(|m| g.err("file", m))?;
        if loaded.count > MAX_FLOWS {
            return Err(g.err(
                "file",
                format!("{} flows, more than this simulator accepts in one run (20,000,000)", loaded.count),
            ));
        }
        if let (true, Some(t)) = (loaded.sorted, loaded.past_max_time) {
            return Err(g.ctx.err(&g.prefix, past_max_time(t)));
        }
        if loaded.sorted {
            // Read again as the run goes on, one flow as each starts.
            g.drawn = Some(Draws::trace(loaded.plan, loaded.count));
            return Ok(());
        }
        // Unsorted: held, so that the run can start them in time order.
        g.at_most_flows("file", loaded.count as u128, "lines of an unsorted trace (held whole)")?;
        let mut rows = loaded.plan.rows().map_err(|m| g.err("file", m))?;
        let mut record = csv::StringRecord::new();
        while let Some(f) = loaded.plan.next(&mut rows, &mut record).map_err(|m| g.err("file", m))? {
            g.out.push(f);
        }
        Ok(())
    }
}
