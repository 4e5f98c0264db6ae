//! The deterministic discrete-event engine of fctlab.
//!
//! This crate knows nothing of networks or TCP. It provides:
//! - [`units`]: integer simulated time ([`Nanos`]) and rates ([`BitsPerSec`]); byte counts are
//!   `u64` with the unit in the name (`cwnd_bytes`), as in the result columns;
//! - [`queue`]: the event queue, ordered by time and, among events of the same instant, by the
//!   order they were scheduled or by a key of each event's own that no order of scheduling
//!   changes ([`queue::Ties`]), so that every run repeats exactly;
//! - [`rng`]: seeded random-number streams, one per component, derived from the scenario seed;
//! - [`barrier`]: the spinning barrier of a parallel engine's windows, and its cost.
//!
//! There is no global state: a simulation owns its queue and streams, so many simulations can
//! run in one process.

pub mod barrier;
pub mod parse;
pub mod quantity;
pub mod queue;
pub mod rng;
pub mod units;

pub use queue::{EventQueue, TieKey, Ties};

/// Asks the CPU to bring the cache line at `p` closer, ahead of its use (a hint: no effect on
/// results; nothing on targets without one).
#[inline(always)]
pub fn prefetch<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch never faults and reads nothing the program sees, whatever the address.
    #[allow(unused_unsafe)]
    unsafe {
        core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(p as *const i8)
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}
pub use rng::Rng;
pub use units::{BitsPerSec, Nanos, OptNanos, TxClock};
