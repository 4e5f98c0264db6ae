//! Quantities with units, as written in scenario files: `"10Gbps"`, `"25us"`, `"10MB"`,
//! `"100pkt"`. Each type deserializes from a string (sizes also from a bare integer of bytes)
//! and explains what it expected when the text does not fit.

pub use fctlab_engine::parse::{parse_duration, parse_rate, parse_size};
pub use fctlab_engine::quantity::{Duration, Rate, Size};
/// Buffers (`"100pkt"`, `"150KB"`, `"unlimited"`): the network crate's type, which the queue
/// disciplines' keys use too.
pub use fctlab_net::qdisc::{parse_buffer, Buffer};

#[cfg(test)]
mod tests {
    use super::*;
    use fctlab_engine::{BitsPerSec, Nanos};
    use fctlab_net::BufferLimit;

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
        assert_eq!(parse_duration("25us").unwrap(), Nanos::from_nanos(25_000));
        assert_eq!(parse_duration("1.5ms").unwrap(), Nanos::from_nanos(1_500_000));
        assert_eq!(parse_duration("2s").unwrap(), Nanos::from_nanos(2_000_000_000));
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
