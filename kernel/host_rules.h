/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The senders' size rules of RACS and SDC in integer arithmetic, shared by the host BPF
 * programs (kernel/racs_host.bpf.c, kernel/sdc_host.bpf.c) and the userspace build
 * (kernel/rules_user.c) that tests/python/test_kernel_rules.py checks against the
 * simulator's `RacsConfig::weight_of` and `SdcConfig::class_of`
 * (crates/transport/src/cc/{racs,sdc}.rs). Both take a flow's remaining bytes (the bytes
 * not yet sent) and its segment size. Needs `barrier_var` (bpf/bpf_helpers.h, or the
 * userspace build's own).
 */
#ifndef FCTLAB_HOST_RULES_H
#define FCTLAB_HOST_RULES_H

#define RACS_WEIGHT_TABLE 1024 /* a power of 2: indices are masked with it */

/* RACS's eq. 4.1, w = w_min + w_max exp(-a f_r) x 256, for `rem` bytes left in segments of
 * `mss` bytes (f_r = rem / mss), from `table`: the weight at 0, 1, 2, ... segments left, its
 * first `n` entries in use, linear between entries; w_min past them. */
static inline __attribute__((always_inline)) __u32 racs_weight_left(const volatile __u16 *table, __u32 n,
								    __u32 w_min, __u32 rem, __u32 mss)
{
	__u32 i, j, frac, hi, lo;

	if (mss == 0)
		mss = 1460;
	i = rem / mss;
	if (n > RACS_WEIGHT_TABLE)
		n = RACS_WEIGHT_TABLE;
	if (i + 1 >= n || i + 1 >= RACS_WEIGHT_TABLE)
		return w_min;
	/* the masks change nothing (i + 1 < RACS_WEIGHT_TABLE) but show the BPF verifier the
	 * bounds, which the compiler would otherwise keep only for i + 1 */
	j = i + 1;
	barrier_var(i);
	barrier_var(j);
	hi = table[i & (RACS_WEIGHT_TABLE - 1)];
	lo = table[j & (RACS_WEIGHT_TABLE - 1)];
	frac = (rem % mss) * 256 / mss;
	return hi > lo ? hi - (((hi - lo) * frac) >> 8) : hi;
}

/* SDC's class in wire numbering (A = 3, B = 2, C = 1) of a flow with `rem` bytes left in
 * segments of `mss`: A while at most `r_a` segments remain (rem <= r_a mss, the simulator's
 * ceil(rem / mss) <= r_a), B up to `r_b`, C beyond. */
static inline __attribute__((always_inline)) __u32 sdc_class_left(__u32 rem, __u32 mss, __u32 r_a, __u32 r_b)
{
	__u64 m = mss ? mss : 1460;

	if (rem <= r_a * m)
		return 3;
	if (rem <= r_b * m)
		return 2;
	return 1;
}

#endif
