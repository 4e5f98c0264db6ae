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
 * Once per interval T = d a bpf_timer applies RCP's rule (kernel/rcp_rule.h, the same code
 * a userspace build checks against the simulator's). As in the simulator, a port that has
 * never carried traffic offers initial_rate_fraction x C (at least one packet per d), a port
 * idle for 10 intervals with an empty queue stops its timer, and one that starts again
 * after being used offers C.
 *
 * The queue is read from the device's root qdisc as kernel/ecn_mark.bpf.c reads it. The
 * timer cannot read it: an interval without packets uses the queue the last packet found.
 * Packets without the option, with another protocol, or with a malformed option (a length
 * other than 20, an option running past the header, a misaligned option) are left alone and
 * counted; the program never drops or redirects (TC_ACT_UNSPEC: a filter after it, such as
 * the ECN marker, still runs).
 *
 * State is one element of the array `rcp_port`, guarded by a spin lock against the port's
 * other CPUs and the timer. Parameters are in .rodata (`rcp_params`), written into a copy of
 * the object before `tc` loads it (python/fctlab/testbed/feedback.py), one copy per port.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_core_read.h>
#include "fb_option.h"
#include "rcp_rule.h"

char _license[] SEC("license") = "GPL";

#define TC_ACT_UNSPEC (-1) /* on to the next filter (the ECN marker), or send */
#define ETH_HLEN 14
#define ETH_P_IP 0x0800
#define IPPROTO_TCP_ 6
#define CLOCK_MONOTONIC 1
#define TCP_CSUM_OFF 16
#define MAX_OPT 40
#define IDLE_INTERVALS 10
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
	struct bpf_timer timer;
	__u64 rate_bps;
	__u64 avg_rtt_fx; /* ns << RCP_RTT_FRAC_BITS */
	__u64 bytes_in;
	__u64 min_queue_bytes;
	__u64 last_queue_bytes;
	__u64 last_tick_ns;
	__u64 intervals;
	__u32 idle;
	__u8 running;
	__u8 used;
	__u8 timer_ready;
	__u8 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct rcp_state);
} rcp_port SEC(".maps");

/* Counters: packets seen, with an RCP option (data, echoes), rates lowered, without the
 * option, of another protocol, malformed options; and the sum over the RCP packets of the
 * queue each found (packets), from which the mean queue an arriving packet finds. */
enum {
	STAT_SEEN,
	STAT_DATA,
	STAT_ECHO,
	STAT_LOWERED,
	STAT_NO_OPTION,
	STAT_OTHER_PROTO,
	STAT_MALFORMED,
	STAT_QUEUE_PKTS_SUM,
	STAT_N
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, STAT_N);
	__type(key, __u32);
	__type(value, __u64);
} rcp_stats SEC(".maps");

extern void *bpf_cast_to_kern_ctx(void *obj) __ksym;

static __always_inline void add(__u32 which, __u64 n)
{
	__u64 *v = bpf_map_lookup_elem(&rcp_stats, &which);

	if (v)
		*v += n;
}

static __always_inline void count(__u32 which)
{
	add(which, 1);
}

/* The big-endian 32-bit field at opt[at] (at <= 60). */
static __always_inline __u32 be32_at(const __u8 *opt, __u32 at)
{
	return (__u32)opt[at] << 24 | (__u32)opt[at + 1] << 16 | (__u32)opt[at + 2] << 8 | opt[at + 3];
}

static __always_inline __u64 initial_rate(void)
{
	__u64 c = rcp_params.capacity_bps;
	__u64 r = rcp_mul_div(c, rcp_params.initial_rate_ppm, RCP_PPM);
	__u64 lo = rcp_mul_div(RCP_MIN_BITS_PER_RTT, RCP_NS_PER_S, rcp_clip_ns(rcp_params.initial_rtt_ns));

	if (lo > c)
		lo = c;
	return r < lo ? lo : r > c ? c : r;
}

static int on_interval(void *map, int *key, struct rcp_state *st)
{
	struct rcp_rule r = {
		.capacity_bps = rcp_params.capacity_bps,
		.alpha_ppm = rcp_params.alpha_ppm,
		.beta_ppm = rcp_params.beta_ppm,
	};
	__u64 now = bpf_ktime_get_ns(), d, q;
	bool stop;

	bpf_spin_lock(&st->lock);
	d = st->avg_rtt_fx >> RCP_RTT_FRAC_BITS;
	q = st->min_queue_bytes < st->last_queue_bytes ? st->min_queue_bytes : st->last_queue_bytes;
	if (now > st->last_tick_ns)
		st->rate_bps = rcp_update(&r, st->rate_bps, d, now - st->last_tick_ns, st->bytes_in, q);
	st->idle = st->bytes_in == 0 ? st->idle + 1 : 0;
	st->bytes_in = 0;
	st->min_queue_bytes = NO_PACKET_YET;
	st->last_tick_ns = now;
	st->intervals += 1;
	stop = st->idle >= IDLE_INTERVALS && st->last_queue_bytes == 0;
	if (stop)
		st->running = 0;
	bpf_spin_unlock(&st->lock);
	if (!stop)
		bpf_timer_start(&st->timer, rcp_clip_ns(d), 0);
	return 0;
}

/* The search for the RCP option in a segment's TCP options, one option per step of
 * bpf_loop (the verifier then checks one step, not every path through 40 bytes). */
struct find {
	__u8 opt[64];
	__u32 n;      /* bytes of options */
	__u32 i;      /* the next option's offset */
	int result;   /* offset of the RCP option; -1 none, -2 malformed, -3 another protocol's */
};

static long find_step(__u32 k, struct find *f)
{
	__u32 i = f->i;
	__u8 kind, len;

	if (i >= f->n || i >= MAX_OPT)
		return 1;
	kind = f->opt[i & 63];
	if (kind == 0)
		return 1;
	if (kind == 1) {
		f->i = i + 1;
		return 0;
	}
	if (i + 1 >= f->n) {
		f->result = -2;
		return 1;
	}
	len = f->opt[(i + 1) & 63];
	if (len < 2 || i + len > f->n) {
		f->result = -2;
		return 1;
	}
	if (kind == FB_KIND && len >= 4 && ((__u16)f->opt[(i + 2) & 63] << 8 | f->opt[(i + 3) & 63]) == FB_EXID) {
		if (len != FB_LEN || (i & 3) != 0)
			f->result = -2;
		else
			f->result = f->opt[(i + FB_OFF_PROTO) & 63] == FB_PROTO_RCP ? (int)i : -3;
		return 1;
	}
	f->i = i + len;
	return 0;
}

SEC("tc")
int rcp_port_egress(struct __sk_buff *ctx)
{
	struct sk_buff *skb = bpf_cast_to_kern_ctx(ctx);
	struct find f = { .result = -1 };
	__u8 *opt = f.opt;
	struct iphdr ip;
	struct tcphdr tcp;
	struct rcp_state *st;
	struct net_device *dev;
	struct Qdisc *qd;
	__u32 key = 0, ihl, doff, optlen, off, tcp_off;
	__u64 queue = 0, qlen = 0, rate_kbps, now;
	__u32 rtt_ns, old_rate;
	__be32 old_be, new_be;
	int at;
	bool echo, start_timer = false;

	count(STAT_SEEN);
	if (ctx->protocol != bpf_htons(ETH_P_IP) || bpf_skb_load_bytes(ctx, ETH_HLEN, &ip, sizeof(ip)) < 0 ||
	    ip.protocol != IPPROTO_TCP_) {
		count(STAT_NO_OPTION);
		return TC_ACT_UNSPEC;
	}
	ihl = ip.ihl * 4;
	tcp_off = ETH_HLEN + ihl;
	if (ihl < sizeof(ip) || bpf_skb_load_bytes(ctx, tcp_off, &tcp, sizeof(tcp)) < 0) {
		count(STAT_NO_OPTION);
		return TC_ACT_UNSPEC;
	}
	doff = tcp.doff * 4;
	optlen = doff > sizeof(tcp) ? doff - sizeof(tcp) : 0;
	if (optlen < FB_LEN || optlen > MAX_OPT ||
	    bpf_skb_load_bytes(ctx, tcp_off + sizeof(tcp), opt, FB_LEN + ((optlen - FB_LEN) & 31)) < 0) {
		count(optlen > MAX_OPT ? STAT_MALFORMED : STAT_NO_OPTION);
		return TC_ACT_UNSPEC;
	}
	f.n = optlen;
	bpf_loop(MAX_OPT, find_step, &f, 0);
	at = f.result;
	if (at < 0) {
		count(at == -1 ? STAT_NO_OPTION : at == -2 ? STAT_MALFORMED : STAT_OTHER_PROTO);
		return TC_ACT_UNSPEC;
	}
	off = (__u32)at & 31; /* at most 20: the option ends within 40 bytes */
	echo = opt[off + FB_OFF_FLAGS] & FB_FLAG_ECHO;
	rtt_ns = be32_at(opt, off + FB_OFF_RTT);
	old_rate = be32_at(opt, off + FB_OFF_RATE);
	count(echo ? STAT_ECHO : STAT_DATA);

	dev = skb->dev;
	if (dev) {
		qd = BPF_CORE_READ(dev, qdisc);
		if (qd) {
			queue = BPF_CORE_READ(qd, qstats.backlog);
			qlen = BPF_CORE_READ(qd, q.qlen);
		}
	}
	add(STAT_QUEUE_PKTS_SUM, qlen);
	st = bpf_map_lookup_elem(&rcp_port, &key);
	if (!st)
		return TC_ACT_UNSPEC;
	if (!st->timer_ready) { /* the first packet: once per port */
		if (bpf_timer_init(&st->timer, &rcp_port, CLOCK_MONOTONIC) == 0)
			bpf_timer_set_callback(&st->timer, on_interval);
		st->timer_ready = 1;
	}
	now = bpf_ktime_get_ns();
	bpf_spin_lock(&st->lock);
	if (!st->running) {
		if (!st->used) {
			st->rate_bps = initial_rate();
			st->avg_rtt_fx = rcp_params.initial_rtt_ns << RCP_RTT_FRAC_BITS;
		} else {
			st->rate_bps = rcp_params.capacity_bps;
		}
		st->used = 1;
		st->running = 2; /* 2: start the timer after unlocking */
		st->last_tick_ns = now;
		st->bytes_in = 0;
		st->min_queue_bytes = NO_PACKET_YET;
		st->idle = 0;
	}
	st->bytes_in += ctx->len > ETH_HLEN ? ctx->len - ETH_HLEN : 0;
	if (queue < st->min_queue_bytes)
		st->min_queue_bytes = queue;
	st->last_queue_bytes = queue;
	if (!echo)
		st->avg_rtt_fx = rcp_rtt_sample(st->avg_rtt_fx, rtt_ns);
	rate_kbps = st->rate_bps / 1000;
	if (st->running == 2) {
		st->running = 1;
		start_timer = true;
	}
	bpf_spin_unlock(&st->lock);
	if (start_timer)
		bpf_timer_start(&st->timer, rcp_clip_ns(rcp_params.initial_rtt_ns), 0);

	if (echo || old_rate <= rate_kbps)
		return TC_ACT_UNSPEC;
	old_be = bpf_htonl(old_rate);
	new_be = bpf_htonl((__u32)rate_kbps);
	bpf_l4_csum_replace(ctx, tcp_off + TCP_CSUM_OFF, old_be, new_be, sizeof(new_be));
	bpf_skb_store_bytes(ctx, tcp_off + sizeof(tcp) + off + FB_OFF_RATE, &new_be, sizeof(new_be), 0);
	count(STAT_LOWERED);
	return TC_ACT_UNSPEC;
}
