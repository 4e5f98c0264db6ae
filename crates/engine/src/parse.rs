//! Parsing quantities written with units: `"10Gbps"`, `"25us"`, `"10MB"`, `"100pkt"`.
//!
//! Decimal prefixes are powers of 1000 (KB = 1000 B), binary ones powers of 1024 (KiB).

use crate::units::{BitsPerSec, Nanos};

/// The longest time a scenario may give: 10^6 s (11.6 days). Every time the simulator adds
/// (a start, delays, timers) stays far below the 2^64 ns a `Nanos` holds.
pub const MAX_SECONDS: f64 = 1e6;
/// The largest size: 2^53 bytes (9 PB), exact as a float and positive as a signed 64-bit column.
pub const MAX_SIZE_BYTES: u64 = 1 << 53;
/// The fastest rate: 10^15 bit/s (1 Pbps).
pub const MAX_RATE_BPS: f64 = 1e15;

/// The error for a value above its range: the value as written (cut to 40 characters) and the
/// largest the simulator takes.
const ABOVE: &str = "is above the largest the simulator takes";

/// A value as an error message shows it: cut to 40 characters, with its length when longer.
fn shown(s: &str) -> String {
    let t = s.trim();
    let n = t.chars().count();
    if n <= 40 {
        t.to_string()
    } else {
        format!("{}... ({n} characters)", t.chars().take(40).collect::<String>())
    }
}

fn too_large(what: &str, s: &str, max: &str) -> String {
    format!("{what} \"{}\" {ABOVE} ({max})", shown(s))
}

/// A buffer size (or threshold) in packets or bytes, as parsed from `"100pkt"` or `"150KB"`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum BufferSpec {
    Packets(u32),
    Bytes(u64),
    Unlimited,
}

fn split_number(s: &str) -> Option<(f64, String)> {
    let s = s.trim();
    let end = s.find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-' || c == '+')).unwrap_or(s.len());
    let (num, unit) = s.split_at(end);
    let v: f64 = num.trim().parse().ok()?;
    Some((v, unit.trim().to_string()))
}

/// Parses a rate such as "10Gbps".
pub fn parse_rate(s: &str) -> Result<BitsPerSec, String> {
    let expect =
        || format!("expected a rate with a unit like \"10Gbps\", \"100Mbps\" or \"500Kbps\", got \"{}\"", shown(s));
    let (v, unit) = split_number(s).ok_or_else(expect)?;
    let mult = match unit.to_ascii_lowercase().as_str() {
        "bps" | "b/s" => 1.0,
        "kbps" | "kb/s" => 1e3,
        "mbps" | "mb/s" => 1e6,
        "gbps" | "gb/s" => 1e9,
        "tbps" | "tb/s" => 1e12,
        "" => return Err(format!("expected a rate with a unit like \"10Gbps\", got the bare number \"{}\"", shown(s))),
        _ => return Err(expect()),
    };
    if v <= 0.0 || v.is_nan() {
        return Err(format!("a rate must be positive, got \"{}\"", shown(s)));
    }
    if v * mult > MAX_RATE_BPS {
        return Err(too_large("the rate", s, "1Pbps"));
    }
    Ok(BitsPerSec((v * mult).round() as u64))
}

/// Parses a duration such as "25us" or "1.5ms".
pub fn parse_duration(s: &str) -> Result<Nanos, String> {
    let expect = || format!("expected a time with a unit like \"25us\", \"10ms\" or \"1s\", got \"{}\"", shown(s));
    let (v, unit) = split_number(s).ok_or_else(expect)?;
    let mult = match unit.as_str() {
        "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        "min" => 60e9,
        "" => {
            return Err(format!(
                "expected a time with a unit like \"25us\" or \"10ms\", got the bare number \"{}\"",
                shown(s)
            ))
        }
        _ => return Err(expect()),
    };
    if v < 0.0 || v.is_nan() {
        return Err(format!("a time must not be negative, got \"{}\"", shown(s)));
    }
    if v * mult > MAX_SECONDS * 1e9 {
        return Err(too_large("the time", s, "1000000s"));
    }
    Ok(Nanos((v * mult).round() as u64))
}

/// Parses a size such as "10MB" (decimal: KB = 1000 B) or "64KiB" (binary).
pub fn parse_size(s: &str) -> Result<u64, String> {
    let expect = || format!("expected a size with a unit like \"10MB\", \"64KB\" or \"1460B\", got \"{}\"", shown(s));
    let (v, unit) = split_number(s).ok_or_else(expect)?;
    let mult = match unit.as_str() {
        "B" | "" => 1.0,
        "KB" | "kB" => 1e3,
        "MB" => 1e6,
        "GB" => 1e9,
        "TB" => 1e12,
        "KiB" => 1024.0,
        "MiB" => 1048576.0,
        "GiB" => 1073741824.0,
        "b" | "Kb" | "kb" | "Mb" | "Gb" => {
            return Err(format!("\"{}\" is in bits; sizes are in bytes (B, KB, MB, GB, KiB, MiB)", shown(s)))
        }
        _ => return Err(expect()),
    };
    if v < 0.0 || v.is_nan() {
        return Err(format!("a size must not be negative, got \"{}\"", shown(s)));
    }
    let bytes = v * mult;
    if bytes > MAX_SIZE_BYTES as f64 {
        return Err(too_large("the size", s, "2^53 B, 9 PB"));
    }
    if (bytes - bytes.round()).abs() > 1e-6 {
        return Err(format!("\"{}\" is not a whole number of bytes", shown(s)));
    }
    Ok(bytes.round() as u64)
}

/// Parses a buffer: "100pkt" (packets), a size ("150KB"), or "unlimited".
pub fn parse_buffer(s: &str) -> Result<BufferSpec, String> {
    let t = s.trim();
    if t.eq_ignore_ascii_case("unlimited") || t.eq_ignore_ascii_case("inf") {
        return Ok(BufferSpec::Unlimited);
    }
    let (v, unit) = split_number(t).ok_or_else(|| {
        format!("expected a buffer like \"100pkt\", \"150KB\" or \"unlimited\", got \"{}\"", shown(s))
    })?;
    match unit.as_str() {
        "pkt" | "pkts" | "p" | "packets" | "packet" => {
            if v < 0.0 || v.fract() != 0.0 || v > u32::MAX as f64 {
                return Err(format!("a packet count must be a whole non-negative number, got \"{}\"", shown(s)));
            }
            Ok(BufferSpec::Packets(v as u32))
        }
        "" => Err(format!(
            "expected a buffer with a unit like \"100pkt\" or \"150KB\", got the bare number \"{}\"",
            shown(s)
        )),
        _ => parse_size(t).map(BufferSpec::Bytes).map_err(|e| {
            if e.contains(ABOVE) {
                e
            } else {
                format!("expected a buffer like \"100pkt\", \"150KB\" or \"unlimited\", got \"{}\"", shown(s))
            }
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_up_to_the_limits_parse() {
        assert_eq!(parse_duration("1000000s").unwrap(), Nanos(1_000_000_000_000_000));
        assert_eq!(parse_size("9007199254740992B").unwrap(), MAX_SIZE_BYTES);
        assert_eq!(parse_rate("1000Tbps").unwrap(), BitsPerSec(1_000_000_000_000_000));
    }

    #[test]
    fn values_above_the_limits_are_refused_naming_the_limit() {
        for (r, max) in [
            (parse_duration("18446744074s").map(|_| ()), "1000000s"),
            (parse_size("18446744073709551615B").map(|_| ()), "2^53 B"),
            (parse_size("9007199254740994B").map(|_| ()), "2^53 B"),
            (parse_rate("2000Tbps").map(|_| ()), "1Pbps"),
            (parse_buffer("18446744073709551615B").map(|_| ()), "2^53 B"),
        ] {
            let e = r.unwrap_err();
            assert!(e.contains(ABOVE) && e.contains(max), "{e}");
        }
    }

    #[test]
    fn a_long_value_is_cut_in_the_message() {
        let long = format!("{}s", "9".repeat(500));
        let e = parse_duration(&long).unwrap_err();
        assert!(e.len() < 200 && e.contains("... (501 characters)") && e.contains(ABOVE), "{e}");
    }
}
