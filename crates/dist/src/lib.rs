//! Flow-size distributions and empirical CDFs; the workload generators in the scenario crate
//! draw from these.
//!
//! - [`cdf`]: [`Cdf`], an empirical distribution given as `(size, cumulative probability)`
//!   points, sampled with linear interpolation between them. It parses the plain text format
//!   used by the HPCC ns-3 traffic generator (`size cdf`, bytes and percent) and by ns-2's
//!   `EmpiricalRandomVariable` (`size weight cdf`, here in packets of 1460 B), and ships five
//!   published data-center workloads: `websearch`, `datamining`, `fb_hadoop`, `google_rpc` and
//!   `alibaba_storage` ([`Cdf::builtin`]).
//! - [`dist`]: [`SizeDist`], the size distribution of a workload: fixed, uniform, exponential,
//!   lognormal, Pareto (classic, Lomax and bounded) or an empirical [`Cdf`].
//! - [`mlfq`]: the demotion thresholds of a multi-level feedback queue (PIAS) that minimise a
//!   queueing model of the mean completion time for a distribution and a load.
//!
//! Sampling takes an [`fctlab_engine::Rng`] stream from the caller and draws a fixed number of
//! uniforms per sample (one; two for the lognormal), by inverse transform, so a workload's
//! stream stays aligned from one run to the next. Sizes are whole bytes, at least 1. Each
//! distribution reports its exact mean ([`SizeDist::mean_bytes`]), from which a generator sets
//! the arrival rate for a target load: `lambda = load * link_rate / (8 * mean_bytes)`.
//!
//! The user documentation, with every formula and the origin of each shipped CDF, is
//! `docs/distributions.md`.

pub mod cdf;
pub mod dist;
pub mod mlfq;

pub use cdf::Cdf;
pub use dist::SizeDist;
