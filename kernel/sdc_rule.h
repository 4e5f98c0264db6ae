/* SPDX-License-Identifier: GPL-2.0 */
/*
 * SDC's port rule in integer arithmetic, shared by the switch-port BPF program
 * (kernel/sdc_port.bpf.c) and the userspace build (kernel/rules_user.c) that
 * tests/python/test_kernel_rules.py checks against the simulator's `SdcPort`
 * (crates/transport/src/cc/sdc.rs).
 *
 * The load factor of an interval of t (eq. 3.4 of the thesis): f = (lambda + q_av) / (C t),
 * lambda the bytes that arrived and q_av the average queue they found, kept as a fixed-point
 * number with 16 fractional bits (the option's 32-bit field). The active flows per class:
 * a packet carries its sender's class and the class it was last counted in (wire numbering
 * A = 3, B = 2, C = 1, 0 none), and a change moves the count. Needs rcp_rule.h first.
 */
#ifndef FCTLAB_SDC_RULE_H
#define FCTLAB_SDC_RULE_H

#define SDC_LOAD_ONE 65536U /* f = 1 */

/* f over an interval of t_ns with bytes_in bytes in and an average queue of q_av_bytes. */
static inline __attribute__((always_inline)) __u32 sdc_load(__u64 capacity_bps, __u64 t_ns, __u64 bytes_in,
							     __u64 q_av_bytes)
{
	/* (lambda + q_av) / t in bits per second, then / C */
	__u64 rate = rcp_mul_div((bytes_in + q_av_bytes) * 8, RCP_NS_PER_S, rcp_clip_ns(t_ns));
	__u64 f;

	if (capacity_bps == 0)
		return 0xFFFFFFFFU;
	f = rcp_mul_div_round(rate, SDC_LOAD_ONE, capacity_bps);
	return f > 0xFFFFFFFFULL ? 0xFFFFFFFFU : (__u32)f;
}

/* The counts of classes A, B, C (counts[0..2]) after a packet of `class` last counted in
 * `prev` (wire numbering). */
static inline __attribute__((always_inline)) void sdc_move(__u32 *counts, __u8 class, int by)
{
	/* explicit cases: the BPF verifier takes constant indices */
	__u32 *c = class == 3 ? &counts[0] : class == 2 ? &counts[1] : class == 1 ? &counts[2] : 0;

	if (!c || (by < 0 && *c == 0))
		return;
	*c += by;
}

static inline __attribute__((always_inline)) void sdc_count(__u32 *counts, __u8 class, __u8 prev)
{
	if (class == prev)
		return;
	sdc_move(counts, prev, -1);
	sdc_move(counts, class, 1);
}

/* The highest active class, wire numbering (0: none). */
static inline __attribute__((always_inline)) __u8 sdc_top(const __u32 *counts)
{
	return counts[0] ? 3 : counts[1] ? 2 : counts[2] ? 1 : 0;
}

#endif
