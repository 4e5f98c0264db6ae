/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the switch-port programs of router-assisted protocols share (kernel/rcp_port.bpf.c,
 * kernel/racs_port.bpf.c): finding the feedback option (kernel/fb_option.h) in a segment,
 * reading the port's queue, rewriting an option field with the TCP checksum fixed, and the
 * counters `fb_port_stats` (python/fctlab/testbed/feedback.py, PORT_STATS, names them).
 *
 * Include after vmlinux.h, bpf_helpers.h, bpf_endian.h, bpf_core_read.h and fb_option.h.
 * Every program returns TC_ACT_UNSPEC: it never drops or redirects, and a filter after it
 * on the same hook (the ECN marker) still runs.
 */
#ifndef FCTLAB_FB_PORT_H
#define FCTLAB_FB_PORT_H

#define TC_ACT_UNSPEC (-1)
#define ETH_HLEN 14
#define ETH_P_IP 0x0800
#define IPPROTO_TCP_ 6
#define TCP_CSUM_OFF 16
#define MAX_OPT 40
#define IDLE_INTERVALS 10

/* Counters: packets seen, with the protocol's option (forward, echoes), fields lowered,
 * without the option, with another protocol's, malformed; and the sum over the protocol's
 * packets of the queue each found (packets), for the mean queue an arriving packet finds;
 * and the control intervals ended. */
enum {
	STAT_SEEN,
	STAT_DATA,
	STAT_ECHO,
	STAT_LOWERED,
	STAT_NO_OPTION,
	STAT_OTHER_PROTO,
	STAT_MALFORMED,
	STAT_QUEUE_PKTS_SUM,
	STAT_INTERVALS, /* control intervals ended */
	STAT_N
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, STAT_N);
	__type(key, __u32);
	__type(value, __u64);
} fb_port_stats SEC(".maps");

extern void *bpf_cast_to_kern_ctx(void *obj) __ksym;

static __always_inline void add(__u32 which, __u64 n)
{
	__u64 *v = bpf_map_lookup_elem(&fb_port_stats, &which);

	if (v)
		*v += n;
}

static __always_inline void count(__u32 which)
{
	add(which, 1);
}

/* A segment's TCP options and where the protocol's option is among them: the search runs
 * one option per step of bpf_loop (the verifier then checks one step, not every path
 * through 40 bytes). */
struct fb_segment {
	__u8 opt[64];
	__u32 n;       /* bytes of options */
	__u32 i;       /* the next option's offset */
	__u32 proto;   /* the protocol looked for */
	int result;    /* offset of its option; -1 none, -2 malformed, -3 another protocol's */
	__u32 tcp_off; /* offset of the TCP header in the frame */
};

static long fb_find_step(__u32 k, struct fb_segment *f)
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
			f->result = f->opt[(i + FB_OFF_PROTO) & 63] == f->proto ? (int)i : -3;
		return 1;
	}
	f->i = i + len;
	return 0;
}

/* Loads the TCP options of an IPv4 TCP frame into `f` and finds the option of `f->proto`;
 * returns its offset within the options (at most 20), or -1 after counting why there is
 * none. */
static __always_inline int fb_find(struct __sk_buff *ctx, struct fb_segment *f)
{
	struct iphdr ip;
	struct tcphdr tcp;
	__u32 ihl, doff, optlen;

	count(STAT_SEEN);
	if (ctx->protocol != bpf_htons(ETH_P_IP) || bpf_skb_load_bytes(ctx, ETH_HLEN, &ip, sizeof(ip)) < 0 ||
	    ip.protocol != IPPROTO_TCP_) {
		count(STAT_NO_OPTION);
		return -1;
	}
	ihl = ip.ihl * 4;
	f->tcp_off = ETH_HLEN + ihl;
	if (ihl < sizeof(ip) || bpf_skb_load_bytes(ctx, f->tcp_off, &tcp, sizeof(tcp)) < 0) {
		count(STAT_NO_OPTION);
		return -1;
	}
	doff = tcp.doff * 4;
	optlen = doff > sizeof(tcp) ? doff - sizeof(tcp) : 0;
	if (optlen < FB_LEN || optlen > MAX_OPT ||
	    bpf_skb_load_bytes(ctx, f->tcp_off + sizeof(tcp), f->opt, FB_LEN + ((optlen - FB_LEN) & 31)) < 0) {
		count(optlen > MAX_OPT ? STAT_MALFORMED : STAT_NO_OPTION);
		return -1;
	}
	f->n = optlen;
	f->result = -1;
	bpf_loop(MAX_OPT, fb_find_step, f, 0);
	if (f->result < 0) {
		count(f->result == -1 ? STAT_NO_OPTION : f->result == -2 ? STAT_MALFORMED : STAT_OTHER_PROTO);
		return -1;
	}
	return f->result & 31;
}

/* The big-endian fields at opt[at]. */
static __always_inline __u32 be32_at(const __u8 *opt, __u32 at)
{
	return (__u32)opt[at] << 24 | (__u32)opt[at + 1] << 16 | (__u32)opt[at + 2] << 8 | opt[at + 3];
}

static __always_inline __u16 be16_at(const __u8 *opt, __u32 at)
{
	return (__u16)opt[at] << 8 | opt[at + 1];
}

/* The port's queue as a packet arrives: bytes (returned) and packets (`qlen`), from the
 * device's root qdisc, as kernel/ecn_mark.bpf.c reads it. */
static __always_inline __u64 fb_queue(struct __sk_buff *ctx, __u64 *qlen)
{
	struct sk_buff *skb = bpf_cast_to_kern_ctx(ctx);
	struct net_device *dev = skb->dev;
	struct Qdisc *qd;

	*qlen = 0;
	if (!dev)
		return 0;
	qd = BPF_CORE_READ(dev, qdisc);
	if (!qd)
		return 0;
	*qlen = BPF_CORE_READ(qd, q.qlen);
	return BPF_CORE_READ(qd, qstats.backlog);
}

/* Rewrites the 4-byte field at `field` of the option found at `at` (options offset), with
 * the TCP checksum updated (the field is 16-bit aligned: the option is 4-aligned). */
static __always_inline void fb_rewrite32(struct __sk_buff *ctx, const struct fb_segment *f, __u32 at, __u32 field,
					 __u32 old, __u32 new)
{
	__be32 o = bpf_htonl(old), n = bpf_htonl(new);

	bpf_l4_csum_replace(ctx, f->tcp_off + TCP_CSUM_OFF, o, n, sizeof(n));
	bpf_skb_store_bytes(ctx, f->tcp_off + sizeof(struct tcphdr) + at + field, &n, sizeof(n), 0);
}

static __always_inline void fb_rewrite16(struct __sk_buff *ctx, const struct fb_segment *f, __u32 at, __u32 field,
					 __u16 old, __u16 new)
{
	__be16 o = bpf_htons(old), n = bpf_htons(new);

	bpf_l4_csum_replace(ctx, f->tcp_off + TCP_CSUM_OFF, o, n, sizeof(n));
	bpf_skb_store_bytes(ctx, f->tcp_off + sizeof(struct tcphdr) + at + field, &n, sizeof(n), 0);
}

#endif
