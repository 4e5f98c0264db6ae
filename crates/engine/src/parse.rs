//! Parsing quantities written with units: `"10Gbps"`, `"25us"`, `"10MB"`, `"100pkt"`.
//!
//! Decimal prefixes are powers of 1000 (KB = 1000 B), binary ones powers of 1024 (KiB).

use crate::units::{BitsPerSec, Nanos};

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
    let expect = || format!("expected a rate with a unit like \"10Gbps\", \"100Mbps\" or \"500Kbps\", got \"{s}\"");
    let (v, unit) = split_number(s).ok_or_else(expect)?;
    let mult = match unit.to_ascii_lowercase().as_str() {
        "bps" | "b/s" => 1.0,
        "kbps" | "kb/s" => 1e3,
        "mbps" | "mb/s" => 1e6,
        "gbps" | "gb/s" => 1e9,
        "tbps" | "tb/s" => 1e12,
        "" => return Err(format!("expected a rate with a unit like \"10Gbps\", got the bare number \"{s}\"")),
        _ => return Err(expect()),
    };
    if v <= 0.0 || !v.is_finite() {
        return Err(format!("a rate must be positive, got \"{s}\""));
    }
    Ok(BitsPerSec((v * mult).round() as u64))
}

/// Parses a duration such as "25us" or "1.5ms".
pub fn parse_duration(s: &str) -> Result<Nanos, String> {
    let expect = || format!("expected a time with a unit like \"25us\", \"10ms\" or \"1s\", got \"{s}\"");
    let (v, unit) = split_number(s).ok_or_else(expect)?;
    let mult = match unit.as_str() {
        "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        "min" => 60e9,
        "" => {
            return Err(format!("expected a time with a unit like \"25us\" or \"10ms\", got the bare number \"{s}\""))
        }
        _ => return Err(expect()),
    };
    if v < 0.0 || !v.is_finite() {
        return Err(format!("a time must not be negative, got \"{s}\""));
    }
    Ok(Nanos((v * mult).round() as u64))
}

/// Parses a size such as "10MB" (decimal: KB = 1000 B) or "64KiB" (binary).
pub fn parse_size(s: &str) -> Result<u64, String> {
    let expect = || format!("expected a size with a unit like \"10MB\", \"64KB\" or \"1460B\", got \"{s}\"");
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
            return Err(format!("\"{s}\" is in bits; sizes are in bytes (B, KB, MB, GB, KiB, MiB)"))
        }
        _ => return Err(expect()),
    };
    if v < 0.0 || !v.is_finite() {
        return Err(format!("a size must not be negative, got \"{s}\""));
    }
    let bytes = v * mult;
    if (bytes - bytes.round()).abs() > 1e-6 {
        return Err(format!("\"{s}\" is not a whole number of bytes"));
    }
    Ok(bytes.round() as u64)
}

/// Parses a buffer: "100pkt" (packets), a size ("150KB"), or "unlimited".
pub fn parse_buffer(s: &str) -> Result<BufferSpec, String> {
    let t = s.trim();
    if t.eq_ignore_ascii_case("unlimited") || t.eq_ignore_ascii_case("inf") {
        return Ok(BufferSpec::Unlimited);
    }
    let (v, unit) = split_number(t)
        .ok_or_else(|| format!("expected a buffer like \"100pkt\", \"150KB\" or \"unlimited\", got \"{s}\""))?;
    match unit.as_str() {
        "pkt" | "pkts" | "p" | "packets" | "packet" => {
            if v < 0.0 || v.fract() != 0.0 || v > u32::MAX as f64 {
                return Err(format!("a packet count must be a whole non-negative number, got \"{s}\""));
            }
            Ok(BufferSpec::Packets(v as u32))
        }
        "" => Err(format!("expected a buffer with a unit like \"100pkt\" or \"150KB\", got the bare number \"{s}\"")),
        _ => parse_size(t)
            .map(BufferSpec::Bytes)
            .map_err(|_| format!("expected a buffer like \"100pkt\", \"150KB\" or \"unlimited\", got \"{s}\"")),
    }
}
