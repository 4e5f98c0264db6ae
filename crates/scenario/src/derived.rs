//! Protocol parameters a scenario derives when they are left out: PIAS's demotion thresholds,
//! from the size distribution and load of the workload whose flows use them
//! (`fctlab_dist::mlfq`, the paper's queueing model), or the protocol's default for flows
//! without both.

use fctlab_dist::{mlfq, SizeDist};
use fctlab_engine::quantity::Size;
use fctlab_transport::cc::pias::{DEFAULT_THRESHOLDS, MAX_THRESHOLDS};
use fctlab_transport::CcConfig;

/// Whether `cc` leaves out a parameter a workload can derive.
pub(crate) fn left_out(cc: &CcConfig) -> bool {
    matches!(cc, CcConfig::Pias(p) if p.thresholds.is_none())
}

/// Fills in what `cc` leaves out: from `basis` (the workload's sizes and load, as a fraction of
/// the receivers' links) when given, the default otherwise. `bands`: the switch ports' bands.
/// Returns what it filled in, as a sentence for the plan's `derived` notes.
pub(crate) fn settle(
    cc: &mut CcConfig,
    basis: Option<(&SizeDist, f64)>,
    bands: usize,
) -> Result<Option<String>, String> {
    let CcConfig::Pias(p) = cc else { return Ok(None) };
    if p.thresholds.is_some() {
        return Ok(None);
    }
    let (bytes, note) = match basis {
        Some((sizes, load)) => {
            let most = bands.saturating_sub(1).min(MAX_THRESHOLDS);
            let t = mlfq::thresholds(sizes, load, most).map_err(|m| {
                format!(
                    "PIAS's demotion thresholds are left out and derived from this workload's sizes and load, \
                     but {m}; give them as [transport.pias] pias_thresholds"
                )
            })?;
            let note = format!(
                "pias_thresholds derived from {} at load {load:.3} for {bands} bands: [{}] (the PIAS model's mean \
                 time {:.3}, against {:.3} with one band)",
                sizes.describe(),
                list(&t.bytes),
                t.mean_time,
                1.0 / (1.0 - load)
            );
            (t.bytes, note)
        }
        None => (
            DEFAULT_THRESHOLDS.to_vec(),
            format!(
                "pias_thresholds left out, and no sizes and load to derive them from: the default [{}] (the \
                 PIAS authors' setting for web search at 80% load)",
                list(&DEFAULT_THRESHOLDS)
            ),
        ),
    };
    p.thresholds = Some(bytes.into_iter().map(Size).collect());
    Ok(Some(note))
}

fn list(bytes: &[u64]) -> String {
    bytes.iter().map(|b| format!("{b} B")).collect::<Vec<_>>().join(", ")
}
