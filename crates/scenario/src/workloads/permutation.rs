//! `kind = "permutation"`: every sender to a different receiver, once.

use super::{Gen, Workload};
use crate::ScenarioError;
use serde::Deserialize;

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
pub struct Permutation {
    senders: Option<toml::Value>,
    receivers: Option<toml::Value>,
    sizes: Option<toml::Value>,
}

impl Workload for Permutation {
    const KIND: &'static str = "permutation";

    fn generate(&self, g: &mut Gen<'_, '_>) -> Result<(), ScenarioError> {
        let senders = g.hosts(self.senders.as_ref(), "senders")?;
        let receivers = match self.receivers.as_ref() {
            Some(v) => g.hosts(Some(v), "receivers")?,
            None => senders.clone(),
        };
        if receivers.len() < senders.len() {
            return Err(g.err(
                "receivers",
                format!("needs at least as many receivers as senders ({} < {})", receivers.len(), senders.len()),
            ));
        }
        let dist = g.sizes(self.sizes.as_ref(), false)?;
        if dist.is_none() && g.ctx.stop_time.is_none() {
            return Err(
                g.err("sizes", "without `sizes` the flows are long-lived and the scenario needs `stop_time`")
            );
        }
        // A random assignment with no host sending to itself (retry a shuffle; bounded).
        let mut perm: Vec<usize> = receivers.clone();
        let mut ok = false;
        for _ in 0..1000 {
            for i in (1..perm.len()).rev() {
                let j = g.rng.below(i as u64 + 1) as usize;
                perm.swap(i, j);
            }
            if senders.iter().zip(&perm).all(|(s, d)| s != d) {
                ok = true;
                break;
            }
        }
        if !ok {
            return Err(g.err("receivers", "cannot pair every sender with a different receiver"));
        }
        for (i, &s) in senders.iter().enumerate() {
            let size = dist.as_ref().map(|d| d.sample(&mut g.rng));
            g.push(s, perm[i], size, g.start, "", None);
        }
        Ok(())
    }
}
