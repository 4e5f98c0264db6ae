// SPDX-License-Identifier: GPL-2.0
/*
 * RACS's hosts for the namespace testbed: the sender and receiver sides of the simulator's
 * `Racs` (crates/transport/src/cc/racs.rs), loaded as kernel/rcp_host.bpf.c is (a sock_ops
 * program and the congestion control `fctlab_racs`, sharing `fb_sock`; kernel/fb_host.h).
 *
 * The sender (the connecting side of a socket that runs `fctlab_racs`) sends a rate request,
 * the RACS feedback option (kernel/fb_option.h), once per round: on its SYN (w_p = 0: it
 * admits the flow), then on the first segment after each round t_trans (the interval the
 * path's ports gave; the sender's SRTT until then), and on its FIN (w_c = 0: it leaves).
 * Segments between requests carry no option. A request carries the flow's weight w_c and
 * that of its previous request w_p; ports lower its rate to w_c C / W and its t_trans to
 * their interval. The weight comes from the socket's mark (SO_MARK), which the testbed sets:
 * a fixed `weight` x 256; or a sized flow's size with FB_MARK_SIZED, whose weight is eq. 4.1,
 * w = w_min + w_max exp(-a f_r) with f_r its remaining size in segments, looked up in a table
 * the testbed computes from the flow's (w_min, w_max, a) (.rodata: w x 256 at f_r = 0, 1, 2,
 * ... segments, linear between entries, w_min past the end); a socket without a mark (a
 * long-lived flow) has `w_min`.
 *
 * The receiver keeps the rate and t_trans the last request arrived with and echoes them on
 * every segment it sends (the SYN-ACK echoes the SYN's). The sender takes the first echo
 * (the SYN's answer) as its admission and each later one's rate as its rate: the window and
 * pacing of kernel/fb_host.h. Its initial window is one segment, and between admission and
 * the first rate its window does not grow (the simulator's sender sends nothing then); a
 * sender never admitted (its path does not run RACS) is Reno.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_endian.h>
#include "fb_option.h"
#include "fb_host.h"
#include "host_rules.h"

char _license[] SEC("license") = "GPL";

#define RACS_CC "fctlab_racs"
#define RACS_CC_LEN 11

/* Mirrored by python/fctlab/testbed/hostprog.py (PARAMS); keep them in step. */
struct racs_host_params {
	__u32 w_min; /* x 256: the weight of a socket without a mark */
	__u32 table_len; /* entries of `table` in use (0: sized flows have w_min) */
	__u16 table[RACS_WEIGHT_TABLE]; /* eq. 4.1 x 256 at f_r = 0, 1, 2, ... segments */
};

const volatile struct racs_host_params racs_host_params = {
	.w_min = 256,
};

static __always_inline __u32 weight_of(struct bpf_sock_ops *skops)
{
	struct bpf_sock *sk = skops->sk;
	__u32 mark = sk ? sk->mark : 0, rem;

	if (fb_remaining(skops, &rem))
		return racs_weight_left(racs_host_params.table, racs_host_params.table_len, racs_host_params.w_min, rem,
					skops->mss_cache);
	return mark ? (mark > 0xFFFF ? 0xFFFF : mark) : racs_host_params.w_min;
}

/* Whether the segment about to be written carries a request (sender) or an echo. */
static __always_inline bool carries_option(struct bpf_sock_ops *skops, struct fb_sock *s)
{
	__u8 flags = skops->skb_tcp_flags;

	if ((flags & (TCPHDR_SYN | TCPHDR_ACK)) == (TCPHDR_SYN | TCPHDR_ACK))
		return true; /* the listener's answer to a SYN */
	if (!s)
		return false;
	if (s->role == ROLE_RECEIVER)
		return true;
	if (s->fin_sent) /* it has left: the ACKs it sends after its FIN are no requests */
		return false;
	return (flags & (TCPHDR_SYN | TCPHDR_FIN)) || bpf_ktime_get_ns() >= s->next_request_ns;
}

static __always_inline void on_len(struct bpf_sock_ops *skops)
{
	/* the MSS must leave room for the option whenever it may be written */
	if ((skops->args[0] & BPF_WRITE_HDR_TCP_CURRENT_MSS) || carries_option(skops, fb_state(skops)))
		bpf_reserve_hdr_opt(skops, FB_LEN, 0);
}

static __always_inline void on_write(struct bpf_sock_ops *skops)
{
	struct fb_option o = {}, syn;
	struct fb_sock *s = fb_state(skops);
	__u8 flags = skops->skb_tcp_flags;
	__u64 round;
	__u32 w_c;

	o.kind = FB_KIND;
	o.len = FB_LEN;
	o.exid = bpf_htons(FB_EXID);
	o.proto = FB_PROTO_RACS;
	o.rate_kbps = bpf_htonl(FB_NO_RATE_YET);
	if ((flags & (TCPHDR_SYN | TCPHDR_ACK)) == (TCPHDR_SYN | TCPHDR_ACK)) {
		o.flags = FB_FLAG_ECHO;
		if (fb_load_option(skops, &syn, BPF_LOAD_HDR_OPT_TCP_SYN, FB_PROTO_RACS) == 1) {
			o.echo_kbps = syn.rate_kbps;
			o.aux = bpf_htons((__u16)(bpf_ntohl(syn.echo_kbps) & 0xFFFF)); /* its t_trans */
		}
	} else if (!s) {
		return;
	} else if (s->role == ROLE_RECEIVER) {
		o.flags = FB_FLAG_ECHO;
		o.echo_kbps = bpf_htonl(s->fwd_kbps);
		o.aux = bpf_htons((__u16)s->fwd_interval_us);
	} else if (s->fin_sent) {
		return;
	} else {
		if (flags & TCPHDR_FIN)
			s->fin_sent = 1;
		w_c = (flags & TCPHDR_FIN) ? 0 : weight_of(skops);
		o.aux = bpf_htons((__u16)w_c);
		o.rtt_ns = bpf_htonl((skops->srtt_us >> 3) * 1000);
		/* bytes 16-19 of a request: w_p and t_trans */
		o.echo_kbps = bpf_htonl((s->last_weight & 0xFFFF) << 16 | FB_NO_INTERVAL_YET);
		s->last_weight = w_c;
		round = s->interval_us ? (__u64)s->interval_us * 1000 : (__u64)(skops->srtt_us >> 3) * 1000;
		s->next_request_ns = bpf_ktime_get_ns() + round;
	}
	fb_store(skops, &o);
}

static __always_inline void on_parse(struct bpf_sock_ops *skops)
{
	struct fb_option o;
	struct fb_sock *s;
	__u32 r, tp;

	s = fb_parsed(skops, &o, FB_PROTO_RACS);
	if (!s)
		return;
	if (s->role == ROLE_RECEIVER && !(o.flags & FB_FLAG_ECHO)) {
		s->fwd_kbps = bpf_ntohl(o.rate_kbps);
		s->fwd_interval_us = bpf_ntohl(o.echo_kbps) & 0xFFFF;
	} else if (s->role == ROLE_SENDER && (o.flags & FB_FLAG_ECHO)) {
		tp = bpf_ntohs(o.aux);
		if (tp > 0 && tp != FB_NO_INTERVAL_YET)
			s->interval_us = tp;
		if (!s->admitted) {
			s->admitted = 1; /* the SYN's answer: admitted, no rate yet */
			return;
		}
		r = bpf_ntohl(o.echo_kbps);
		if (r != 0 && r != FB_NO_RATE_YET)
			fb_set_rate(skops, s, r, FRAME_OVERHEAD); /* one segment per round has the option */
	}
}

/* The sender's initial window is one segment: the simulator's sender sends nothing before its
 * first rate, and RACS's rule, without a queue term, would keep a queue that initial windows
 * sent together built. */
static __always_inline void on_connect(struct bpf_sock_ops *skops)
{
	int one = 1;

	fb_enable(skops, ROLE_SENDER, RACS_CC, RACS_CC_LEN);
	if (fb_state(skops))
		bpf_setsockopt(skops, SOL_TCP, TCP_BPF_IW, &one, sizeof(one));
}

FB_SOCKOPS_PROGRAM_CONNECT(RACS_CC, RACS_CC_LEN, on_connect, on_len, on_write, on_parse)

SEC("struct_ops")
void BPF_PROG(fctlab_racs_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct fb_sock *s = bpf_sk_storage_get(&fb_sock, sk, 0, 0);

	/* admitted, its rate one round away: no more than the initial window meanwhile (the
	 * simulator's sender sends nothing) */
	if (s && s->admitted && s->rate_kbps == 0)
		return;
	fb_rate_cong_avoid(sk, ack, acked);
}

FB_RATE_CONGESTION_CONTROL(fctlab_racs, fctlab_racs_cong_avoid)
