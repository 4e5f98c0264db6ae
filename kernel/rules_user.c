// SPDX-License-Identifier: GPL-2.0
/*
 * A userspace build of the rules the switch-port BPF programs run, so that tests can feed
 * them the inputs they feed the simulator's ports (tests/python/test_kernel_rules.py builds
 * this file into a shared object and calls it through ctypes). The rules themselves are in
 * the headers, compiled unchanged here and in the BPF programs (the ports' and, in
 * host_rules.h, the senders').
 */
#include <stdint.h>

typedef uint8_t __u8;
typedef uint16_t __u16;
typedef uint32_t __u32;
typedef uint64_t __u64;

#define barrier_var(var) asm volatile("" : "+r"(var))

#include "rcp_rule.h"
#include "racs_rule.h"
#include "sdc_rule.h"
#include "host_rules.h"

uint64_t fctlab_rcp_update(uint64_t capacity_bps, uint32_t alpha_ppm, uint32_t beta_ppm, uint64_t rate_bps,
			   uint64_t d_ns, uint64_t t_ns, uint64_t bytes_in, uint64_t queue_bytes)
{
	struct rcp_rule p = { capacity_bps, alpha_ppm, beta_ppm };

	return rcp_update(&p, rate_bps, d_ns, t_ns, bytes_in, queue_bytes);
}

uint64_t fctlab_rcp_rtt_sample(uint64_t avg_fx, uint32_t rtt_ns)
{
	return rcp_rtt_sample(avg_fx, rtt_ns);
}

/* RACS: a port through a sequence of events, as the simulator's `RacsPort` sees them: for
 * each i, kind[i] 0 = a request (w_c[i], w_p[i], weights x 256), 1 = the end of an interval;
 * grant[i] receives the rate of a request with w_c > 0 (0 otherwise), w_after[i] the running
 * W after the event. */
void fctlab_racs_events(uint64_t capacity_bps, uint32_t n, const uint32_t *kind, const uint32_t *w_c,
			const uint32_t *w_p, uint64_t *grant, uint64_t *w_after)
{
	uint64_t w_running = 0, w_slot = 0;

	for (uint32_t i = 0; i < n; i++) {
		grant[i] = 0;
		if (kind[i] == 1) {
			w_slot = w_running;
		} else {
			w_running = racs_after_request(w_running, w_c[i], w_p[i]);
			if (w_c[i] > 0)
				grant[i] = racs_grant(capacity_bps, w_slot, w_running, w_c[i]);
		}
		w_after[i] = w_running;
	}
}

uint32_t fctlab_sdc_load(uint64_t capacity_bps, uint64_t t_ns, uint64_t bytes_in, uint64_t q_av_bytes)
{
	return sdc_load(capacity_bps, t_ns, bytes_in, q_av_bytes);
}

/* SDC: the class counts through a sequence of packets (class[i], prev[i]); counts_out gets
 * the three counts after each and top_out the highest active class. */
void fctlab_sdc_events(uint32_t n, const uint8_t *class, const uint8_t *prev, uint32_t *counts_out, uint8_t *top_out)
{
	uint32_t counts[3] = { 0, 0, 0 };

	for (uint32_t i = 0; i < n; i++) {
		sdc_count(counts, class[i], prev[i]);
		for (int k = 0; k < 3; k++)
			counts_out[3 * i + k] = counts[k];
		top_out[i] = sdc_top(counts);
	}
}

/* RACS's sender weight (x 256) for rem[i] bytes left in segments of `mss`, from `table`. */
void fctlab_racs_weights(const uint16_t *table, uint32_t table_len, uint32_t w_min, uint32_t mss, uint32_t n,
			 const uint32_t *rem, uint32_t *weight)
{
	for (uint32_t i = 0; i < n; i++)
		weight[i] = racs_weight_left(table, table_len, w_min, rem[i], mss);
}

/* SDC's sender class (wire numbering) for rem[i] bytes left in segments of `mss`. */
void fctlab_sdc_classes(uint32_t mss, uint32_t r_a, uint32_t r_b, uint32_t n, const uint32_t *rem, uint32_t *class)
{
	for (uint32_t i = 0; i < n; i++)
		class[i] = sdc_class_left(rem[i], mss, r_a, r_b);
}
