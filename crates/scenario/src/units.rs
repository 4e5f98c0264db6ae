//! Quantities with units, as written in scenario files: `"10Gbps"`, `"25us"`, `"10MB"`,
//! `"100pkt"`. Each type deserializes from a string (sizes also from a bare integer of bytes)
//! and explains what it expected when the text does not fit.

use fctlab_engine::{BitsPerSec, Nanos};
use fctlab_net::BufferLimit;
use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;
use std::fmt;

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
        "" => return Err(format!("expected a time with a unit like \"25us\" or \"10ms\", got the bare number \"{s}\"")),
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
pub fn parse_buffer(s: &str) -> Result<BufferLimit, String> {
    let t = s.trim();
    if t.eq_ignore_ascii_case("unlimited") || t.eq_ignore_ascii_case("inf") {
        return Ok(BufferLimit::Unlimited);
    }
    let (v, unit) = split_number(t).ok_or_else(|| format!("expected a buffer like \"100pkt\", \"150KB\" or \"unlimited\", got \"{s}\""))?;
    match unit.as_str() {
        "pkt" | "pkts" | "p" | "packets" | "packet" => {
            if v < 0.0 || v.fract() != 0.0 || v > u32::MAX as f64 {
                return Err(format!("a packet count must be a whole non-negative number, got \"{s}\""));
            }
            Ok(BufferLimit::Packets(v as u32))
        }
        "" => Err(format!("expected a buffer with a unit like \"100pkt\" or \"150KB\", got the bare number \"{s}\"")),
        _ => parse_size(t).map(BufferLimit::Bytes).map_err(|_| format!("expected a buffer like \"100pkt\", \"150KB\" or \"unlimited\", got \"{s}\"")),
    }
}

macro_rules! string_quantity {
    ($name:ident, $inner:ty, $parse:ident, $what:expr, $allow_int:expr) => {
        #[derive(Copy, Clone, Debug, PartialEq)]
        pub struct $name(pub $inner);

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct V;
                impl<'de> Visitor<'de> for V {
                    type Value = $name;
                    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                        f.write_str($what)
                    }
                    fn visit_str<E: de::Error>(self, s: &str) -> Result<$name, E> {
                        $parse(s).map($name).map_err(E::custom)
                    }
                    fn visit_i64<E: de::Error>(self, v: i64) -> Result<$name, E> {
                        if $allow_int {
                            $parse(&format!("{v}B")).map($name).map_err(E::custom)
                        } else {
                            Err(E::custom(format!("expected {} with a unit in quotes, got the bare number {v}", $what)))
                        }
                    }
                    fn visit_u64<E: de::Error>(self, v: u64) -> Result<$name, E> {
                        self.visit_i64(v as i64)
                    }
                    fn visit_f64<E: de::Error>(self, v: f64) -> Result<$name, E> {
                        Err(E::custom(format!("expected {} with a unit in quotes, got the bare number {v}", $what)))
                    }
                }
                d.deserialize_any(V)
            }
        }
    };
}

string_quantity!(Rate, BitsPerSec, parse_rate, "a rate such as \"10Gbps\"", false);
string_quantity!(Duration, Nanos, parse_duration, "a time such as \"25us\"", false);
string_quantity!(Size, u64, parse_size, "a size such as \"10MB\"", true);
string_quantity!(Buffer, BufferLimit, parse_buffer, "a buffer such as \"100pkt\"", false);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates() {
        assert_eq!(parse_rate("10Gbps").unwrap(), BitsPerSec(10_000_000_000));
        assert_eq!(parse_rate("1.5 Mbps").unwrap(), BitsPerSec(1_500_000));
        assert!(parse_rate("1Gbs").unwrap_err().contains("\"1Gbs\""));
        assert!(parse_rate("100").unwrap_err().contains("bare number"));
        assert!(parse_rate("0Gbps").is_err());
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("25us").unwrap(), Nanos(25_000));
        assert_eq!(parse_duration("1.5ms").unwrap(), Nanos(1_500_000));
        assert_eq!(parse_duration("2s").unwrap(), Nanos(2_000_000_000));
        assert!(parse_duration("10MB").is_err());
        assert!(parse_duration("-1ms").unwrap_err().contains("negative"));
    }

    #[test]
    fn sizes_and_buffers() {
        assert_eq!(parse_size("10MB").unwrap(), 10_000_000);
        assert_eq!(parse_size("64KiB").unwrap(), 65536);
        assert_eq!(parse_size("1460").unwrap(), 1460);
        assert!(parse_size("-5MB").unwrap_err().contains("negative"));
        assert!(parse_size("10Mb").unwrap_err().contains("bits"));
        assert_eq!(parse_buffer("100pkt").unwrap(), BufferLimit::Packets(100));
        assert_eq!(parse_buffer("150KB").unwrap(), BufferLimit::Bytes(150_000));
        assert_eq!(parse_buffer("unlimited").unwrap(), BufferLimit::Unlimited);
        assert!(parse_buffer("100").unwrap_err().contains("bare number"));
    }
}
