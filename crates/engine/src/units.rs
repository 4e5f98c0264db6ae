//! Units of the simulator. Time is an integer count of nanoseconds; nothing else means time.

use std::fmt;
use std::ops::{Add, AddAssign, Sub};

/// An optional time in the eight bytes of a [`Nanos`]: a time, or none ([`OptNanos::NONE`],
/// stored as `u64::MAX`, which no run reaches). For state kept per flow, where
/// `Option<Nanos>` would take sixteen. None orders after every time.
#[derive(Copy, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct OptNanos(u64);

impl OptNanos {
    pub const NONE: OptNanos = OptNanos(u64::MAX);

    /// `t`; `Nanos::MAX` itself cannot be held (it reads back as none).
    #[inline]
    pub const fn some(t: Nanos) -> OptNanos {
        OptNanos(t.0)
    }
    #[inline]
    pub const fn get(self) -> Option<Nanos> {
        if self.0 == u64::MAX {
            None
        } else {
            Some(Nanos(self.0))
        }
    }
    #[inline]
    pub const fn is_some(self) -> bool {
        self.0 != u64::MAX
    }
    #[inline]
    pub const fn is_none(self) -> bool {
        self.0 == u64::MAX
    }
    /// Whether `t` comes before this time (always, when there is none).
    #[inline]
    pub const fn after(self, t: Nanos) -> bool {
        t.0 < self.0
    }
}

impl Default for OptNanos {
    fn default() -> Self {
        OptNanos::NONE
    }
}

impl From<Option<Nanos>> for OptNanos {
    fn from(t: Option<Nanos>) -> Self {
        t.map_or(OptNanos::NONE, OptNanos::some)
    }
}

impl fmt::Debug for OptNanos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.get().fmt(f)
    }
}

/// Simulated time or duration in integer nanoseconds. The count is reached outside the engine
/// only through [`Nanos::from_nanos`] and [`Nanos::as_nanos`]; arithmetic is by operators and
/// methods.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Nanos(pub(crate) u64);

impl Nanos {
    pub const ZERO: Nanos = Nanos(0);
    pub const MAX: Nanos = Nanos(u64::MAX);

    #[inline]
    pub const fn from_nanos(ns: u64) -> Nanos {
        Nanos(ns)
    }
    #[inline]
    pub const fn from_micros(us: u64) -> Nanos {
        Nanos(us.saturating_mul(1_000))
    }
    #[inline]
    pub const fn from_millis(ms: u64) -> Nanos {
        Nanos(ms.saturating_mul(1_000_000))
    }
    #[inline]
    pub const fn from_secs(s: u64) -> Nanos {
        Nanos(s.saturating_mul(1_000_000_000))
    }
    /// Rounds to the nearest nanosecond; negative or NaN inputs give zero.
    pub fn from_secs_f64(s: f64) -> Nanos {
        if s.is_nan() || s <= 0.0 {
            Nanos(0)
        } else {
            Nanos((s * 1e9).round() as u64)
        }
    }
    /// The count of nanoseconds.
    #[inline]
    pub const fn as_nanos(self) -> u64 {
        self.0
    }
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 * 1e-9
    }
    #[inline]
    pub const fn saturating_sub(self, o: Nanos) -> Nanos {
        Nanos(self.0.saturating_sub(o.0))
    }
    #[inline]
    pub const fn saturating_add(self, o: Nanos) -> Nanos {
        Nanos(self.0.saturating_add(o.0))
    }
    /// `k` times this duration, saturating at [`Nanos::MAX`].
    #[inline]
    pub const fn mul(self, k: u64) -> Nanos {
        Nanos(self.0.saturating_mul(k))
    }
    /// This duration divided by `k`, rounded down.
    #[inline]
    pub const fn div(self, k: u64) -> Nanos {
        Nanos(self.0 / k)
    }
}

// Times cannot wrap. Every time a scenario gives is at most `parse::MAX_SECONDS` (10^6 s,
// 10^15 ns) and every time a run reaches at most 10^9 s (10^18 ns), so a sum of two of them
// is far below 2^64 ns (1.8 x 10^19); `+` saturates at [`Nanos::MAX`] all the same, so a
// sum that the checks did not foresee reads "never" instead of wrapping to a near time (one
// conditional move; `fctlab bench` shows no cost). `-` of a later time from an earlier one
// is a bug: it panics in debug builds and gives zero in release builds, never a wrapped
// time.
impl Add for Nanos {
    type Output = Nanos;
    #[inline]
    fn add(self, o: Nanos) -> Nanos {
        Nanos(self.0.saturating_add(o.0))
    }
}
impl AddAssign for Nanos {
    #[inline]
    fn add_assign(&mut self, o: Nanos) {
        *self = *self + o
    }
}
impl Sub for Nanos {
    type Output = Nanos;
    #[inline]
    fn sub(self, o: Nanos) -> Nanos {
        debug_assert!(self.0 >= o.0, "time {} minus a later time {}", self, o);
        Nanos(self.0.saturating_sub(o.0))
    }
}
impl fmt::Display for Nanos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ns = self.0;
        if ns >= 1_000_000_000 && ns % 1_000_000 == 0 {
            write!(f, "{}s", ns as f64 / 1e9)
        } else if ns >= 1_000_000 && ns % 1_000 == 0 {
            write!(f, "{}ms", ns as f64 / 1e6)
        } else if ns >= 1_000 {
            write!(f, "{}us", ns as f64 / 1e3)
        } else {
            write!(f, "{}ns", ns)
        }
    }
}

/// A link or sending rate in bits per second.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct BitsPerSec(pub u64);

impl BitsPerSec {
    /// Serialization time of `bytes` at this rate, rounded up to a whole nanosecond.
    /// This is the one place where bytes and rates become time.
    #[inline]
    pub fn tx_time(self, bytes: u64) -> Nanos {
        let r = self.0.max(1);
        // Fast path: rates that divide 8e12 (every common link rate) take a whole number of
        // picoseconds per byte, and the result needs no 128-bit division.
        if 8_000_000_000_000 % r == 0 {
            let ps_per_byte = 8_000_000_000_000 / r;
            if let Some(ps) = bytes.checked_mul(ps_per_byte) {
                return Nanos(ps.div_ceil(1000));
            }
        }
        let bits = bytes as u128 * 8 * 1_000_000_000;
        // at most 2^53 B at 1 bps: 7.2 x 10^25 ns, past u64; such a time is "never"
        Nanos(u64::try_from(bits.div_ceil(r as u128)).unwrap_or(u64::MAX))
    }
    pub fn as_f64(self) -> f64 {
        self.0 as f64
    }
}

/// Serialization times at one rate with the rate's division done once: what a port uses for
/// every packet it sends. Gives exactly [`BitsPerSec::tx_time`].
#[derive(Copy, Clone, Debug)]
pub struct TxClock {
    rate: BitsPerSec,
    /// Whole picoseconds per byte, or 0 when the rate does not divide 8e12.
    ps_per_byte: u64,
}

impl TxClock {
    pub fn new(rate: BitsPerSec) -> TxClock {
        let r = rate.0.max(1);
        let ps_per_byte = if 8_000_000_000_000 % r == 0 { 8_000_000_000_000 / r } else { 0 };
        TxClock { rate, ps_per_byte }
    }

    #[inline]
    pub fn tx_time(&self, bytes: u64) -> Nanos {
        if self.ps_per_byte != 0 {
            if let Some(ps) = bytes.checked_mul(self.ps_per_byte) {
                return Nanos(ps.div_ceil(1000));
            }
        }
        self.rate.tx_time(bytes)
    }
}

impl fmt::Display for BitsPerSec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.0 as f64;
        if b >= 1e9 {
            write!(f, "{}Gbps", b / 1e9)
        } else if b >= 1e6 {
            write!(f, "{}Mbps", b / 1e6)
        } else if b >= 1e3 {
            write!(f, "{}Kbps", b / 1e3)
        } else {
            write!(f, "{}bps", b)
        }
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn an_optional_time_is_a_time_or_none_after_every_time() {
        assert_eq!(OptNanos::default().get(), None);
        assert_eq!(OptNanos::some(Nanos(5)).get(), Some(Nanos(5)));
        assert_eq!(OptNanos::from(Some(Nanos::ZERO)).get(), Some(Nanos::ZERO));
        assert!(OptNanos::NONE.after(Nanos(u64::MAX - 1)) && OptNanos::some(Nanos(5)).after(Nanos(4)));
        assert!(!OptNanos::some(Nanos(5)).after(Nanos(5)));
        assert_eq!(std::mem::size_of::<OptNanos>(), 8);
        assert_eq!(format!("{:?}", OptNanos::some(Nanos(5))), "Some(Nanos(5))");
    }

    use super::*;

    #[test]
    fn tx_clock_gives_the_rate_s_tx_time() {
        for rate in [
            1u64,
            3,
            1_000,
            100_000_000,
            1_000_000_000,
            3_000_000_000,
            10_000_000_000,
            40_000_000_000,
            400_000_000_000,
            8_000_000_000_001,
        ] {
            let clock = TxClock::new(BitsPerSec(rate));
            for bytes in [0u64, 1, 40, 1500, 9000, 123_456_789, u64::MAX / 1000, u64::MAX / 8] {
                assert_eq!(clock.tx_time(bytes), BitsPerSec(rate).tx_time(bytes), "rate {rate} bytes {bytes}");
            }
        }
    }

    #[test]
    fn times_cannot_wrap() {
        use crate::parse::{MAX_RATE_BPS, MAX_SECONDS, MAX_SIZE_BYTES};
        // the largest time a scenario gives, added to the latest a run reaches, stays exact
        let given = Nanos::from_secs(MAX_SECONDS as u64);
        let reached = Nanos::from_secs(1_000_000_000);
        assert_eq!((given + reached).as_nanos(), 1_001_000_000_000_000_000);
        // past that, sums saturate at "never" instead of wrapping to a near time
        assert_eq!(Nanos::MAX + Nanos::from_nanos(1), Nanos::MAX);
        let mut t = Nanos::from_nanos(u64::MAX - 1);
        t += Nanos::from_secs(5);
        assert_eq!(t, Nanos::MAX);
        assert_eq!(Nanos::from_secs(u64::MAX), Nanos::MAX);
        assert_eq!(Nanos::from_millis(u64::MAX / 2), Nanos::MAX);
        assert_eq!(Nanos::from_secs(3).mul(u64::MAX), Nanos::MAX);
        // the largest size at the lowest rate takes longer than u64 nanoseconds: "never"
        assert_eq!(BitsPerSec(1).tx_time(MAX_SIZE_BYTES), Nanos::MAX);
        assert_eq!(BitsPerSec(3).tx_time(MAX_SIZE_BYTES), Nanos::MAX);
        // the largest size at the highest rate is exact
        assert_eq!(BitsPerSec(MAX_RATE_BPS as u64).tx_time(MAX_SIZE_BYTES).as_nanos(), 72_057_594_038);
    }

    #[cfg(not(debug_assertions))]
    #[test]
    fn an_earlier_time_minus_a_later_one_is_zero_in_release_builds() {
        assert_eq!(Nanos::from_nanos(5) - Nanos::from_nanos(9), Nanos::ZERO);
    }

    #[test]
    fn tx_time_rounds_up() {
        assert_eq!(BitsPerSec(10_000_000_000).tx_time(1500), Nanos(1200));
        assert_eq!(BitsPerSec(1_000_000_000).tx_time(1500), Nanos(12_000));
        // 1 byte at 3 bps = 2.666..s -> rounded up
        assert_eq!(BitsPerSec(3).tx_time(1), Nanos(2_666_666_667));
        // fast and slow paths agree
        for rate in [
            100_000_000u64,
            1_000_000_000,
            10_000_000_000,
            25_000_000_000,
            40_000_000_000,
            100_000_000_000,
            400_000_000_000,
            3_000_000_000,
        ] {
            for bytes in [1u64, 40, 41, 1500, 9000, 123_456_789] {
                let exact = (bytes as u128 * 8_000_000_000).div_ceil(rate as u128) as u64;
                assert_eq!(BitsPerSec(rate).tx_time(bytes), Nanos(exact), "{rate} {bytes}");
            }
        }
    }

    #[test]
    fn display() {
        assert_eq!(Nanos::from_micros(25).to_string(), "25us");
        assert_eq!(Nanos::from_millis(10).to_string(), "10ms");
        assert_eq!(BitsPerSec(10_000_000_000).to_string(), "10Gbps");
    }
}
