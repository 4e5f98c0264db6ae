// SPDX-License-Identifier: GPL-2.0
/*
 * SDC's switch port for the namespace testbed: a tc (clsact egress) BPF classifier, the
 * counterpart of the simulator's `SdcPort` (crates/transport/src/cc/sdc.rs). Counters only:
 * the bytes and the queue of the current interval, the load factor of the last, and the
 * active flows per class.
 *
 * Every packet with the SDC feedback option (kernel/fb_option.h) counts into the interval
 * (its bytes from the IP header on, and the queue it found). A forward packet moves the
 * class counts (its class and the class it was last counted in), folds its RTT into the
 * average, and leaves with the larger of its load factor and the port's, and the higher of
 * its class field and the port's highest active class, with the TCP checksum fixed. Each
 * interval t_p (the average RTT) gives the load factor f = (lambda + q_av) / (C t_p) (eq. 3.4,
 * kernel/sdc_rule.h); the interval ends at the first packet after it (see
 * kernel/rcp_port.bpf.c), and a packet after 10 silent intervals finds f = 0, as the
 * simulator's port that stopped.
 *
 * State is one element of `sdc_port` under a spin lock. Parameters in .rodata (`sdc_params`),
 * written per port by python/fctlab/testbed/feedback.py.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_core_read.h>
#include "fb_option.h"
#include "fb_port.h"
#include "rcp_rule.h"
#include "sdc_rule.h"

char _license[] SEC("license") = "GPL";

/* Mirrored by python/fctlab/testbed/feedback.py (SDC_PARAMS_FORMAT); keep them in step. */
struct sdc_params {
	__u64 capacity_bps;
	__u64 initial_rtt_ns;
	__u64 t_p_ns; /* a fixed interval (0: the average RTT) */
};

const volatile struct sdc_params sdc_params = {
	.capacity_bps = 100000000,
	.initial_rtt_ns = 1000000,
	.t_p_ns = 0,
};

struct sdc_state {
	struct bpf_spin_lock lock;
	__u32 counts[3]; /* active flows of classes A, B, C */
	__u32 load;      /* f of the last interval, 16.16 */
	__u64 bytes_in;
	__u64 queue_sum;
	__u64 queue_samples;
	__u64 avg_rtt_fx; /* ns << RCP_RTT_FRAC_BITS */
	__u64 last_tick_ns;
	__u8 started;
	__u8 pad[7];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sdc_state);
} sdc_port SEC(".maps");

SEC("tc")
int sdc_port_egress(struct __sk_buff *ctx)
{
	struct fb_segment f = { .proto = FB_PROTO_SDC };
	struct sdc_state *st;
	__u32 key = 0, off, rtt_ns, old_load, load;
	__u16 old_top_word, aux;
	__u8 top;
	__u64 queue, qlen, t_p, now, gap;
	int at;
	bool echo, ended = false;

	at = fb_find(ctx, &f);
	if (at < 0)
		return TC_ACT_UNSPEC;
	off = (__u32)at & 31;
	echo = f.opt[off + FB_OFF_FLAGS] & FB_FLAG_ECHO;
	count(echo ? STAT_ECHO : STAT_DATA);
	queue = fb_queue(ctx, &qlen);
	add(STAT_QUEUE_PKTS_SUM, qlen);
	st = bpf_map_lookup_elem(&sdc_port, &key);
	if (!st)
		return TC_ACT_UNSPEC;
	aux = be16_at(f.opt, off + FB_OFF_AUX);
	rtt_ns = be32_at(f.opt, off + FB_OFF_RTT);
	old_load = be32_at(f.opt, off + FB_OFF_LOAD);
	old_top_word = be16_at(f.opt, off + FB_OFF_TOP);

	now = bpf_ktime_get_ns();
	bpf_spin_lock(&st->lock);
	if (!st->started) {
		st->avg_rtt_fx = sdc_params.initial_rtt_ns << RCP_RTT_FRAC_BITS;
		st->last_tick_ns = now;
		st->started = 1;
	}
	t_p = rcp_clip_ns(sdc_params.t_p_ns ? sdc_params.t_p_ns : st->avg_rtt_fx >> RCP_RTT_FRAC_BITS);
	gap = now - st->last_tick_ns;
	if (gap >= IDLE_INTERVALS * t_p) { /* after a silence: no load */
		st->load = 0;
		st->last_tick_ns = now;
		st->bytes_in = st->queue_sum = st->queue_samples = 0;
	} else if (gap >= t_p) { /* the interval is over */
		st->load = sdc_load(sdc_params.capacity_bps, gap, st->bytes_in,
				    st->queue_samples ? st->queue_sum / st->queue_samples : queue);
		st->last_tick_ns = now;
		st->bytes_in = st->queue_sum = st->queue_samples = 0;
		ended = true;
	}
	st->bytes_in += ctx->len > ETH_HLEN ? ctx->len - ETH_HLEN : 0;
	st->queue_sum += queue;
	st->queue_samples += 1;
	if (!echo) {
		sdc_count(st->counts, aux >> 8, aux & 0xFF);
		st->avg_rtt_fx = rcp_rtt_sample(st->avg_rtt_fx, rtt_ns);
	}
	load = st->load;
	top = sdc_top(st->counts);
	bpf_spin_unlock(&st->lock);
	if (ended)
		count(STAT_INTERVALS);
	if (echo)
		return TC_ACT_UNSPEC;
	if (load > old_load) {
		fb_rewrite32(ctx, &f, off, FB_OFF_LOAD, old_load, load);
		count(STAT_LOWERED); /* (raised: the field a port changed) */
	}
	if (top > (old_top_word & 0xFF))
		fb_rewrite16(ctx, &f, off, FB_OFF_TOP, old_top_word, (old_top_word & 0xFF00) | top);
	return TC_ACT_UNSPEC;
}
