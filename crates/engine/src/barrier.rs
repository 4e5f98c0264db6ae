//! The barrier a conservative parallel engine's threads meet at after each window, and its
//! cost measured (the scaling model's `barrier_ns`).
//!
//! A window of a packet-level run holds microseconds of work, so the barrier spins: a
//! sleeping barrier (a futex wake-up, tens of microseconds) would cost more than the window.
//! Sense-reversing: the last thread to arrive resets the count and flips the generation the
//! others spin on.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Instant;

/// A spinning barrier for a fixed number of threads.
pub struct SpinBarrier {
    threads: usize,
    arrived: AtomicUsize,
    generation: AtomicU64,
}

impl SpinBarrier {
    pub fn new(threads: usize) -> SpinBarrier {
        SpinBarrier { threads: threads.max(1), arrived: AtomicUsize::new(0), generation: AtomicU64::new(0) }
    }

    /// Returns once every thread has called it (in this round).
    pub fn wait(&self) {
        let gen = self.generation.load(Ordering::Acquire);
        if self.arrived.fetch_add(1, Ordering::AcqRel) + 1 == self.threads {
            self.arrived.store(0, Ordering::Relaxed);
            self.generation.store(gen + 1, Ordering::Release);
            return;
        }
        let mut spins = 0u32;
        while self.generation.load(Ordering::Acquire) == gen {
            spins += 1;
            if spins < 1 << 12 {
                std::hint::spin_loop();
            } else {
                // more threads than cores: let the one we wait for run
                std::thread::yield_now();
            }
        }
    }
}

/// Wall nanoseconds per barrier round of `threads` threads that do nothing else (median of
/// five measurements of `rounds` rounds each).
pub fn round_ns(threads: usize, rounds: u32) -> f64 {
    let mut runs: Vec<f64> = (0..5)
        .map(|_| {
            let barrier = SpinBarrier::new(threads);
            let start = Instant::now();
            std::thread::scope(|s| {
                for _ in 0..threads {
                    s.spawn(|| {
                        for _ in 0..rounds {
                            barrier.wait();
                        }
                    });
                }
            });
            start.elapsed().as_nanos() as f64 / rounds.max(1) as f64
        })
        .collect();
    runs.sort_by(f64::total_cmp);
    runs[runs.len() / 2]
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU32;

    #[test]
    fn no_thread_leaves_a_round_before_every_thread_has_reached_it() {
        // each thread adds 1 per round, then checks after the barrier that all of the round's
        // additions are there
        for threads in [1, 2, 3, 8] {
            let barrier = SpinBarrier::new(threads);
            let count = AtomicU32::new(0);
            std::thread::scope(|s| {
                for _ in 0..threads {
                    s.spawn(|| {
                        for round in 1..=200u32 {
                            count.fetch_add(1, Ordering::AcqRel);
                            barrier.wait();
                            assert!(count.load(Ordering::Acquire) >= round * threads as u32);
                            barrier.wait(); // nobody adds for the next round before all checked
                        }
                    });
                }
            });
            assert_eq!(count.load(Ordering::Acquire), 200 * threads as u32);
        }
    }
}
