/* SPDX-License-Identifier: GPL-2.0 */
/*
 * RACS's port rule in integer arithmetic, shared by the switch-port BPF program
 * (kernel/racs_port.bpf.c) and the userspace build (kernel/rules_user.c) that
 * tests/python/test_kernel_rules.py checks against the simulator's `RacsPort`
 * (crates/transport/src/cc/racs.rs).
 *
 * Weights are fixed point with 8 fractional bits (the option carries them in 16 bits: 1/256
 * to 255.996). Each request updates the running sum W += w_c - w_p (eq. 4.3 of the thesis,
 * never below 0) and is granted R = w_c C / W (eq. 4.2), W being the largest of the sum at
 * the start of the interval, the running sum and w_c itself, rounded down to a whole bit
 * per second. Needs rcp_rule.h (rcp_mul_div) first.
 */
#ifndef FCTLAB_RACS_RULE_H
#define FCTLAB_RACS_RULE_H

#define RACS_W_ONE 256 /* weight 1 */

/* W after a request of weight w_c whose previous request had w_p. */
static inline __attribute__((always_inline)) __u64 racs_after_request(__u64 w, __u32 w_c, __u32 w_p)
{
	if (w_c >= w_p)
		return w + (w_c - w_p);
	return w > (__u64)(w_p - w_c) ? w - (w_p - w_c) : 0;
}

/* The grant of a request of weight w_c > 0, bits per second. */
static inline __attribute__((always_inline)) __u64 racs_grant(__u64 capacity_bps, __u64 w_slot, __u64 w_running,
							       __u32 w_c)
{
	__u64 w = w_slot > w_running ? w_slot : w_running;

	if (w < w_c)
		w = w_c;
	return w ? rcp_mul_div(capacity_bps, w_c, w) : capacity_bps;
}

#endif
