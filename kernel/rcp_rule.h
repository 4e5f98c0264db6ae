/* SPDX-License-Identifier: GPL-2.0 */
/*
 * RCP's port rule in integer arithmetic, shared by the switch-port BPF program
 * (kernel/rcp_port.bpf.c) and a userspace build of the same code (kernel/rules_user.c),
 * which tests/python/test_kernel_rules.py feeds the inputs it feeds the simulator's port
 * (crates/transport/src/cc/rcp.rs, `RcpPort::update` and `PortRtt::sample`).
 *
 * The simulator's rule, once per control interval T:
 *
 *   R' = R [1 + (T/d) (a (C - y) - b q/d) / C],   clipped to [min(12000 bits / d, C), C]
 *
 * with C the link rate, y the input rate over the interval, q the persistent queue (bits)
 * and d the average RTT. BPF has no floating point and, before its v4 instruction set, no
 * signed division, so everything here is unsigned 64-bit arithmetic:
 *
 * - a and b are given in millionths (alpha_ppm, beta_ppm);
 * - a(C - y) - b q/d is kept as a gain and a loss, both non-negative, and their difference's
 *   sign is carried apart;
 * - products that could pass 2^64 are taken as mul_div(x, m, n) = (x / n) m + (x % n) m / n;
 * - the relative change (T/d)(...)/C is a fixed-point number with 26 fractional bits,
 *   rounded to the nearest, so the new rate is exact to about 1.5e-8 of R. This needs
 *   C below 2^38 bits per second (275 Gbps).
 *
 * The RTT average moves 1/50 of the way to each sample (the simulator's RTT_GAIN = 0.02),
 * kept in nanoseconds with 10 fractional bits.
 *
 * The includer defines the fixed-width types __u8, __u32 and __u64 (vmlinux.h, or <stdint.h>).
 */
#ifndef FCTLAB_RCP_RULE_H
#define FCTLAB_RCP_RULE_H

#define RCP_NS_PER_S 1000000000ULL
#define RCP_PPM 1000000ULL
#define RCP_FRAC_BITS 26
#define RCP_MAX_FRAC (1ULL << 37) /* a relative change of 2^11: clipped to [min, C] anyway */
#define RCP_RTT_FRAC_BITS 10
#define RCP_RTT_GAIN_INV 50 /* the average moves 1/50 of the way per sample */
#define RCP_MIN_BITS_PER_RTT 12000ULL /* one 1500-byte packet per average RTT */
/* Longest interval and RTT the arithmetic takes (4 s: the remainders in mul_div stay below 2^64). */
#define RCP_MAX_NS (4ULL * RCP_NS_PER_S)

struct rcp_rule {
	__u64 capacity_bps; /* C */
	__u32 alpha_ppm;    /* a, millionths */
	__u32 beta_ppm;     /* b, millionths */
};

/* x m / n without overflow when (x % n) m < 2^64: n and m below about 2^32 here. */
static inline __attribute__((always_inline)) __u64 rcp_mul_div(__u64 x, __u64 m, __u64 n)
{
	return (x / n) * m + (x % n) * m / n;
}

/* The same, rounded to the nearest. */
static inline __attribute__((always_inline)) __u64 rcp_mul_div_round(__u64 x, __u64 m, __u64 n)
{
	return (x / n) * m + ((x % n) * m + n / 2) / n;
}

static inline __attribute__((always_inline)) __u64 rcp_clip_ns(__u64 ns)
{
	return ns < 1 ? 1 : ns > RCP_MAX_NS ? RCP_MAX_NS : ns;
}

/* The lowest rate a port offers: one 1500-byte packet per d, but never above C. */
static inline __attribute__((always_inline)) __u64 rcp_min_rate(const struct rcp_rule *p, __u64 d_ns)
{
	__u64 lo = rcp_mul_div(RCP_MIN_BITS_PER_RTT, RCP_NS_PER_S, rcp_clip_ns(d_ns));

	return lo < p->capacity_bps ? lo : p->capacity_bps;
}

/* The rate after an interval of t_ns with bytes_in bytes in and queue_bytes queued, from
 * rate_bps, with the average RTT d_ns. */
static inline __attribute__((always_inline)) __u64 rcp_update(const struct rcp_rule *p, __u64 rate_bps, __u64 d_ns, __u64 t_ns,
			       __u64 bytes_in, __u64 queue_bytes)
{
	__u64 c = p->capacity_bps, y, qrate, gain, loss, mag, frac, delta, r, lo;
	int up;

	if (c == 0)
		return rate_bps;
	d_ns = rcp_clip_ns(d_ns);
	t_ns = rcp_clip_ns(t_ns);
	y = rcp_mul_div(bytes_in * 8, RCP_NS_PER_S, t_ns);
	qrate = rcp_mul_div(queue_bytes * 8, RCP_NS_PER_S, d_ns); /* q / d, bits per second */
	gain = rcp_mul_div(c, p->alpha_ppm, RCP_PPM);
	loss = rcp_mul_div(y, p->alpha_ppm, RCP_PPM) + rcp_mul_div(qrate, p->beta_ppm, RCP_PPM);
	up = gain >= loss;
	mag = up ? gain - loss : loss - gain;                          /* |a(C - y) - b q/d| */
	mag = rcp_mul_div(mag, t_ns, d_ns);                            /* x T/d */
	frac = rcp_mul_div_round(mag, 1ULL << RCP_FRAC_BITS, c);       /* / C, 26 fraction bits */
	if (frac > RCP_MAX_FRAC)
		frac = RCP_MAX_FRAC;
	delta = rcp_mul_div_round(rate_bps, frac, 1ULL << RCP_FRAC_BITS);
	r = up ? rate_bps + delta : (delta >= rate_bps ? 0 : rate_bps - delta);
	lo = rcp_min_rate(p, d_ns);
	return r < lo ? lo : r > c ? c : r;
}

/* The RTT average (ns << RCP_RTT_FRAC_BITS) after one packet's RTT field (0: none). */
static inline __attribute__((always_inline)) __u64 rcp_rtt_sample(__u64 avg_fx, __u32 rtt_ns)
{
	__u64 s = (__u64)rtt_ns << RCP_RTT_FRAC_BITS;

	if (rtt_ns == 0)
		return avg_fx;
	return s >= avg_fx ? avg_fx + (s - avg_fx) / RCP_RTT_GAIN_INV : avg_fx - (avg_fx - s) / RCP_RTT_GAIN_INV;
}

#endif
