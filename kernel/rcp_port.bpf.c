// SPDX-License-Identifier: GPL-2.0
/*
 * RCP's switch port for the namespace testbed: a tc (clsact egress) BPF classifier on a
 * switch port, the counterpart of the simulator's `RcpPort` (crates/transport/src/cc/rcp.rs).
 *
 * Packets carrying the feedback option (kernel/fb_option.h) with protocol RCP are counted
 * into the control interval (their bytes, IP header and beyond, as the simulator's wire
 * bytes; and the smallest queue one found on arrival). On a data segment (no echo flag)
 * the port folds the sender's RTT field into its running average d and lowers the option's
 * rate to its own R, fixing the TCP checksum; echoes on ACKs are counted and left alone.
 * Once per interval T = d RCP's rule (kernel/rcp_rule.h, the same code a userspace build
 * checks against the simulator's) gives the next R. The interval ends at the first packet
 * after it, with T the time since the last update: a bpf_timer would need the map held by a
 * user-space process, and tc loads the program and exits. A packet after 10 intervals of
 * silence starts the port again: at C if it has carried traffic before (the simulator's
 * idle port, which stops its timer after 10 silent intervals and restarts at C), at
 * initial_rate_fraction x C (at least one packet per d) if never.
 *
 * The queue is read from the device's root qdisc as kernel/ecn_mark.bpf.c reads it.
 * Packets without the option, with another protocol, or with a malformed option (a length
 * other than 20, an option running past the header, a misaligned option) are left alone and
 * counted; the program never drops or redirects (TC_ACT_UNSPEC: a filter after it, such as
 * the ECN marker, still runs).
 *
 * State is one element of the array `rcp_port`, guarded by a spin lock against the port's
 * other CPUs. Parameters are in .rodata (`rcp_params`), written into a copy of
 * the object before `tc` loads it (python/fctlab/testbed/feedback.py), one copy per port.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_core_read.h>
#include "fb_option.h"
#include "fb_port.h"
#include "rcp_rule.h"

char _license[] SEC("license") = "GPL";

#define NO_PACKET_YET (~0ULL)

/* Mirrored by python/fctlab/testbed/feedback.py (RCP_PARAMS_FORMAT); keep them in step. */
struct rcp_params {
	__u64 capacity_bps;
	__u32 alpha_ppm;
	__u32 beta_ppm;
	__u64 initial_rtt_ns;
	__u32 initial_rate_ppm; /* the rate a port that never carried traffic offers, x C */
	__u32 unused;
};

const volatile struct rcp_params rcp_params = {
	.capacity_bps = 100000000,
	.alpha_ppm = 100000,
	.beta_ppm = 1000000,
	.initial_rtt_ns = 1000000,
	.initial_rate_ppm = 50000,
};

struct rcp_state {
	struct bpf_spin_lock lock;
	__u64 rate_bps;
	__u64 avg_rtt_fx; /* ns << RCP_RTT_FRAC_BITS */
	__u64 bytes_in;
	__u64 min_queue_bytes;
	__u64 last_tick_ns;
	__u8 used;
	__u8 pad[7];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct rcp_state);
} rcp_port SEC(".maps");

static __always_inline __u64 initial_rate(void)
{
	__u64 c = rcp_params.capacity_bps;
	__u64 r = rcp_mul_div(c, rcp_params.initial_rate_ppm, RCP_PPM);
	__u64 lo = rcp_mul_div(RCP_MIN_BITS_PER_RTT, RCP_NS_PER_S, rcp_clip_ns(rcp_params.initial_rtt_ns));

	if (lo > c)
		lo = c;
	return r < lo ? lo : r > c ? c : r;
}

SEC("tc")
int rcp_port_egress(struct __sk_buff *ctx)
{
	struct fb_segment f = { .proto = FB_PROTO_RCP };
	struct rcp_rule r;
	struct rcp_state *st;
	__u32 key = 0, off, rtt_ns, old_rate;
	__u64 queue, qlen, rate_kbps, now, d, q;
	int at;
	bool echo, ended = false;

	at = fb_find(ctx, &f);
	if (at < 0)
		return TC_ACT_UNSPEC;
	off = (__u32)at & 31; /* at most 20: the option ends within 40 bytes */
	echo = f.opt[off + FB_OFF_FLAGS] & FB_FLAG_ECHO;
	rtt_ns = be32_at(f.opt, off + FB_OFF_RTT);
	old_rate = be32_at(f.opt, off + FB_OFF_RATE);
	count(echo ? STAT_ECHO : STAT_DATA);
	queue = fb_queue(ctx, &qlen);
	add(STAT_QUEUE_PKTS_SUM, qlen);
	st = bpf_map_lookup_elem(&rcp_port, &key);
	if (!st)
		return TC_ACT_UNSPEC;
	r.capacity_bps = rcp_params.capacity_bps;
	r.alpha_ppm = rcp_params.alpha_ppm;
	r.beta_ppm = rcp_params.beta_ppm;
	now = bpf_ktime_get_ns();
	bpf_spin_lock(&st->lock);
	d = st->avg_rtt_fx >> RCP_RTT_FRAC_BITS;
	if (!st->used || now - st->last_tick_ns >= IDLE_INTERVALS * rcp_clip_ns(d)) {
		/* the first packet ever, or the first after a silence: (re)start */
		st->rate_bps = st->used ? rcp_params.capacity_bps : initial_rate();
		if (!st->used)
			st->avg_rtt_fx = rcp_params.initial_rtt_ns << RCP_RTT_FRAC_BITS;
		st->used = 1;
		st->last_tick_ns = now;
		st->bytes_in = 0;
		st->min_queue_bytes = NO_PACKET_YET;
	} else if (now - st->last_tick_ns >= rcp_clip_ns(d)) { /* the interval is over */
		q = st->min_queue_bytes < queue ? st->min_queue_bytes : queue;
		st->rate_bps = rcp_update(&r, st->rate_bps, d, now - st->last_tick_ns, st->bytes_in, q);
		st->last_tick_ns = now;
		st->bytes_in = 0;
		st->min_queue_bytes = NO_PACKET_YET;
		ended = true;
	}
	st->bytes_in += ctx->len > ETH_HLEN ? ctx->len - ETH_HLEN : 0;
	if (queue < st->min_queue_bytes)
		st->min_queue_bytes = queue;
	if (!echo)
		st->avg_rtt_fx = rcp_rtt_sample(st->avg_rtt_fx, rtt_ns);
	rate_kbps = st->rate_bps / 1000;
	bpf_spin_unlock(&st->lock);
	if (ended)
		count(STAT_INTERVALS);

	if (echo || old_rate <= rate_kbps)
		return TC_ACT_UNSPEC;
	fb_rewrite32(ctx, &f, off, FB_OFF_RATE, old_rate, (__u32)rate_kbps);
	count(STAT_LOWERED);
	return TC_ACT_UNSPEC;
}
