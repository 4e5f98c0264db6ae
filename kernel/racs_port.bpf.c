// SPDX-License-Identifier: GPL-2.0
/*
 * RACS's switch port for the namespace testbed: a tc (clsact egress) BPF classifier, the
 * counterpart of the simulator's `RacsPort` (crates/transport/src/cc/racs.rs). No per-flow
 * state: the port keeps the running sum of weights W and its value at the start of the
 * interval.
 *
 * A request (a forward segment with the RACS feedback option, kernel/fb_option.h) updates
 * W += w_c - w_p, folds its RTT into the average, and lowers the option's rate to
 * w_c C / W (kernel/racs_rule.h) and its t_trans to the port's interval t_p (the average
 * RTT), fixing the TCP checksum. Echoes are counted and left alone. At the end of each
 * interval t_p the W rates divide by becomes the running W; the interval ends at the first
 * packet after it (a bpf_timer would need the map held by a user-space process, and tc
 * loads the program and exits). W outlives silences, as in the simulator: the flows it
 * counts are silent, not gone.
 *
 * State is one element of `racs_port` under a spin lock. Parameters in .rodata
 * (`racs_params`), written per port by python/fctlab/testbed/feedback.py.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_core_read.h>
#include "fb_option.h"
#include "fb_port.h"
#include "rcp_rule.h"
#include "racs_rule.h"

char _license[] SEC("license") = "GPL";

/* Mirrored by python/fctlab/testbed/feedback.py (RACS_PARAMS_FORMAT); keep them in step. */
struct racs_params {
	__u64 capacity_bps;
	__u64 initial_rtt_ns;
};

const volatile struct racs_params racs_params = {
	.capacity_bps = 100000000,
	.initial_rtt_ns = 1000000,
};

struct racs_state {
	struct bpf_spin_lock lock;
	__u64 w_running; /* x 256 */
	__u64 w_slot;
	__u64 avg_rtt_fx; /* ns << RCP_RTT_FRAC_BITS */
	__u64 last_tick_ns;
	__u8 started;
	__u8 pad[7];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct racs_state);
} racs_port SEC(".maps");

SEC("tc")
int racs_port_egress(struct __sk_buff *ctx)
{
	struct fb_segment f = { .proto = FB_PROTO_RACS };
	struct racs_state *st;
	__u32 key = 0, off, rtt_ns, old_rate, w_c, w_p;
	__u16 old_tp, tp_us;
	__u64 qlen, grant_kbps = ~0ULL, t_p, now;
	int at;
	bool echo, ended = false;

	at = fb_find(ctx, &f);
	if (at < 0)
		return TC_ACT_UNSPEC;
	off = (__u32)at & 31;
	echo = f.opt[off + FB_OFF_FLAGS] & FB_FLAG_ECHO;
	count(echo ? STAT_ECHO : STAT_DATA);
	fb_queue(ctx, &qlen);
	add(STAT_QUEUE_PKTS_SUM, qlen);
	st = bpf_map_lookup_elem(&racs_port, &key);
	if (!st)
		return TC_ACT_UNSPEC;
	w_c = be16_at(f.opt, off + FB_OFF_AUX);
	w_p = be16_at(f.opt, off + FB_OFF_PREV_WEIGHT);
	rtt_ns = be32_at(f.opt, off + FB_OFF_RTT);
	old_rate = be32_at(f.opt, off + FB_OFF_RATE);
	old_tp = be16_at(f.opt, off + FB_OFF_INTERVAL);

	now = bpf_ktime_get_ns();
	bpf_spin_lock(&st->lock);
	if (!st->started) {
		st->avg_rtt_fx = racs_params.initial_rtt_ns << RCP_RTT_FRAC_BITS;
		st->last_tick_ns = now;
		st->started = 1;
	}
	t_p = st->avg_rtt_fx >> RCP_RTT_FRAC_BITS;
	if (now - st->last_tick_ns >= rcp_clip_ns(t_p)) { /* the interval is over */
		st->w_slot = st->w_running;
		st->last_tick_ns = now;
		ended = true;
	}
	if (!echo) {
		st->w_running = racs_after_request(st->w_running, w_c, w_p);
		st->avg_rtt_fx = rcp_rtt_sample(st->avg_rtt_fx, rtt_ns);
		if (w_c > 0)
			grant_kbps = racs_grant(racs_params.capacity_bps, st->w_slot, st->w_running, w_c) / 1000;
	}
	t_p = st->avg_rtt_fx >> RCP_RTT_FRAC_BITS;
	bpf_spin_unlock(&st->lock);
	if (ended)
		count(STAT_INTERVALS);
	if (echo)
		return TC_ACT_UNSPEC;
	if (grant_kbps < old_rate) {
		fb_rewrite32(ctx, &f, off, FB_OFF_RATE, old_rate, (__u32)grant_kbps);
		count(STAT_LOWERED);
	}
	tp_us = t_p / 1000 >= FB_NO_INTERVAL_YET ? FB_NO_INTERVAL_YET - 1 : (__u16)(t_p / 1000);
	if (tp_us < old_tp)
		fb_rewrite16(ctx, &f, off, FB_OFF_INTERVAL, old_tp, tp_us);
	return TC_ACT_UNSPEC;
}
