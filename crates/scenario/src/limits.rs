//! What one run can hold: the latest time it reaches and the most flows it accepts. Every
//! module that reads flows checks against these (`[[flows]]`, workloads, traces).

use fctlab_engine::Nanos;

/// The latest time a run can reach: flow starts and `stop_time` beyond it are errors (about
/// 31.7 years; the engine's clock, in nanoseconds, keeps far more room above it).
pub const MAX_TIME: Nanos = Nanos::from_nanos(1_000_000_000_000_000_000);

/// The most flows one run accepts (all workloads of a scenario each checked against it).
pub const MAX_FLOWS: u64 = 20_000_000;

/// What a flow listed up front costs at the peak of a run: its specification, its state and
/// its result row (20,000,000 incast responses, listed, peaked at 2.94 GB: 147 B each).
pub const BYTES_PER_LISTED_FLOW: u64 = 160;

/// What a routing entry (one node toward one host) costs while the routes are computed: its
/// offset, the breadth-first distance, and the next hops of a few equal-cost paths.
pub const BYTES_PER_ROUTE_ENTRY: u64 = 16;

/// The memory a run may take: `FCTLAB_MEMORY` (a size, `"2GB"`) when set, else the machine's
/// available memory (`MemAvailable` of /proc/meminfo); None where neither is known.
pub fn memory_budget() -> Result<Option<u64>, String> {
    if let Ok(v) = std::env::var("FCTLAB_MEMORY") {
        return fctlab_engine::parse::parse_size(v.trim()).map(Some).map_err(|m| format!("FCTLAB_MEMORY: {m}"));
    }
    let Ok(info) = std::fs::read_to_string("/proc/meminfo") else { return Ok(None) };
    let kib = info
        .lines()
        .find_map(|l| l.strip_prefix("MemAvailable:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok());
    Ok(kib.map(|k| k.saturating_mul(1024)))
}

/// `n` with its digits in groups of three (`1,000,000`).
pub(crate) fn digits(n: u128) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Bytes as "3.2 GB", "410 MB" or "12 kB".
fn shown_bytes(b: u128) -> String {
    if b >= 1_000_000_000 {
        format!("{:.1} GB", b as f64 / 1e9)
    } else if b >= 1_000_000 {
        format!("{} MB", b.div_ceil(1_000_000))
    } else {
        format!("{} kB", b.div_ceil(1_000))
    }
}

/// Refuses what would need `need_bytes` of memory (`what`, e.g. "20,000,000 flows listed up
/// front") when that is more than [`memory_budget`], before any of it is allocated; `fewer`
/// says what to reduce.
pub(crate) fn check_memory(need_bytes: u128, what: &str, fewer: &str) -> Result<(), String> {
    let Some(budget) = memory_budget()? else { return Ok(()) };
    if need_bytes <= budget as u128 {
        return Ok(());
    }
    let source =
        if std::env::var_os("FCTLAB_MEMORY").is_some() { "FCTLAB_MEMORY" } else { "the machine's available memory" };
    Err(format!(
        "{what} need about {}, more than the {} a run may take here ({source}); {fewer}",
        shown_bytes(need_bytes),
        shown_bytes(budget as u128)
    ))
}

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
    let too_large =
        |n: u64| format!("{shown}: {n} bytes, more than a file read whole may hold ({} MiB)", MAX_TEXT_BYTES >> 20);
    if meta.len() > MAX_TEXT_BYTES {
        return Err(too_large(meta.len()));
    }
    let mut data = Vec::new();
    file.take(MAX_TEXT_BYTES + 1).read_to_end(&mut data).map_err(cannot)?;
    if data.len() as u64 > MAX_TEXT_BYTES {
        return Err(too_large(data.len() as u64));
    }
    String::from_utf8(data)
        .map_err(|e| format!("{shown}: not a text (UTF-8) file (byte {})", e.utf8_error().valid_up_to()))
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
