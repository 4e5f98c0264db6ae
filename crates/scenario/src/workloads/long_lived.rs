//! `kind = "long_lived"`: flows that run until the scenario's `stop_time`.

use super::{Gen, Workload};
use crate::ScenarioError;
use serde::Deserialize;

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
pub struct LongLived {
    senders: Option<toml::Value>,
    receivers: Option<toml::Value>,
    pattern: Option<String>,
}

impl Workload for LongLived {
    const KIND: &'static str = "long_lived";

    fn generate(&self, g: &mut Gen<'_, '_>) -> Result<(), ScenarioError> {
        if g.ctx.stop_time.is_none() {
            return Err(g.err("kind", "long-lived flows need a top-level `stop_time`"));
        }
        let senders = g.hosts(self.senders.as_ref(), "senders")?;
        let receivers = g.hosts(self.receivers.as_ref(), "receivers")?;
        // Default: pairs when the sets line up without a host paired with itself, else all-to-all.
        let pairable = senders.len() == receivers.len() && senders.iter().zip(&receivers).all(|(s, r)| s != r);
        let pattern = self.pattern.as_deref().unwrap_or(if pairable { "pairs" } else { "all_to_all" });
        match pattern {
            "pairs" => {
                g.check_pairs(&senders, &receivers)?;
                for i in 0..senders.len() {
                    g.push(senders[i], receivers[i], None, g.start, "", None);
                }
            }
            "all_to_all" => {
                g.at_most_flows("senders", senders.len() as u128 * receivers.len() as u128, "senders × receivers")?;
                for &s in &senders {
                    for &d in &receivers {
                        if s != d {
                            g.push(s, d, None, g.start, "", None);
                        }
                    }
                }
            }
            other => {
                return Err(g.err(
                    "pattern",
                    format!("unknown pattern \"{other}\" for long-lived flows (known: pairs, all_to_all)"),
                ))
            }
        }
        Ok(())
    }
}
