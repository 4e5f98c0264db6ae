//! What one run can hold: the latest time it reaches and the most flows it accepts. Every
//! module that reads flows checks against these (`[[flows]]`, workloads, traces).

use fctlab_engine::Nanos;

/// The latest time a run can reach: flow starts and `stop_time` beyond it are errors (about
/// 31.7 years; the engine's clock, in nanoseconds, keeps far more room above it).
pub const MAX_TIME: Nanos = Nanos::from_nanos(1_000_000_000_000_000_000);

/// The most flows one run accepts (all workloads of a scenario each checked against it).
pub const MAX_FLOWS: u64 = 20_000_000;

/// The largest text file read whole (a scenario, a size distribution's CDF): 64 MiB. Longer
/// lists of flows go in a trace, which is read as the run goes.
pub const MAX_TEXT_BYTES: u64 = 64 << 20;

/// The text of a file read whole: a regular file of at most [`MAX_TEXT_BYTES`] in UTF-8, or
/// an error naming it (a device such as /dev/zero or a pipe is refused before it is read).
pub fn read_text_file(path: &std::path::Path) -> Result<String, String> {
    use std::io::Read;
    let shown = path.display();
    let cannot = |e: std::io::Error| format!("cannot read {shown}: {e}");
    let file = std::fs::File::open(path).map_err(cannot)?;
    let meta = file.metadata().map_err(cannot)?;
    if !meta.is_file() {
        return Err(format!("{shown}: not a regular file"));
    }
    let too_large = |n: u64| format!("{shown}: {n} bytes, more than a file read whole may hold ({} MiB)", MAX_TEXT_BYTES >> 20);
    if meta.len() > MAX_TEXT_BYTES {
        return Err(too_large(meta.len()));
    }
    let mut data = Vec::new();
    file.take(MAX_TEXT_BYTES + 1).read_to_end(&mut data).map_err(cannot)?;
    if data.len() as u64 > MAX_TEXT_BYTES {
        return Err(too_large(data.len() as u64));
    }
    String::from_utf8(data).map_err(|e| format!("{shown}: not a text (UTF-8) file (byte {})", e.utf8_error().valid_up_to()))
}

/// The error of an entry that gives a flow starting at `start`, past the time a run can span.
pub(crate) fn past_max_time(start: Nanos) -> String {
    format!(
        "draws a flow starting at {:.3e} s, past the {} s a run can span (are its sizes too large for \
         its load, or its rate too low?)",
        start.as_secs_f64(),
        MAX_TIME.as_secs_f64()
    )
}
