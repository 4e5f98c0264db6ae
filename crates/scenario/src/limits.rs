//! What one run can hold: the latest time it reaches and the most flows it accepts. Every
//! module that reads flows checks against these (`[[flows]]`, workloads, traces).

use fctlab_engine::Nanos;

/// The latest time a run can reach: flow starts and `stop_time` beyond it are errors (about
/// 31.7 years; the engine's clock, in nanoseconds, keeps far more room above it).
pub const MAX_TIME: Nanos = Nanos::from_nanos(1_000_000_000_000_000_000);

/// The most flows one run accepts (all workloads of a scenario each checked against it).
pub const MAX_FLOWS: u64 = 20_000_000;

/// The error of an entry that gives a flow starting at `start`, past the time a run can span.
pub(crate) fn past_max_time(start: Nanos) -> String {
    format!(
        "draws a flow starting at {:.3e} s, past the {} s a run can span (are its sizes too large for \
         its load, or its rate too low?)",
        start.as_secs_f64(),
        MAX_TIME.as_secs_f64()
    )
}
