// SPDX-License-Identifier: GPL-2.0
/*
 * SDC's hosts for the namespace testbed: the sender and receiver sides of the simulator's
 * `Sdc` (crates/transport/src/cc/sdc.rs), loaded as kernel/rcp_host.bpf.c is (a sock_ops
 * program and the congestion control `fctlab_sdc`, sharing `fb_sock`; kernel/fb_host.h).
 *
 * Every segment of a socket that runs `fctlab_sdc` carries the SDC feedback option
 * (kernel/fb_option.h). The sender writes its class and the class it wrote last (so ports
 * count a flow once: its SYN adds it, its FIN, class 0, removes it), its RTT, and a load
 * factor and top class of 0 that ports raise. A sized flow (its socket mark carries its
 * size, kernel/fb_host.h) is in class A while at most `r_a_segments` remain to be sent, B up
 * to `r_b_segments`, C beyond; a long-lived flow is class C. The receiver keeps what the
 * last segment arrived with and echoes it; the sender keeps the echo.
 *
 * The congestion control, SDC's class-based AIMD: the window doubles per RTT (gamma = 1) until
 * the first overload, then grows by alpha segments per RTT while the load factor f is below
 * 1, and falls to beta times itself when f >= 1, once per overload (no second cut within two
 * RTTs of one). Losses cut by beta too. The class's (alpha, beta) with the simulator's
 * dynamic remapping: a flow whose class is the highest active on its path uses class A's
 * (.rodata `sdc_host_params`, the simulator's defaults: A (0.789, 0.9), B (0.5, 0.714),
 * C (0.5, 0.5)). Before the first echo it is Reno.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_endian.h>
#include "fb_option.h"
#include "fb_host.h"
#include "host_rules.h"

char _license[] SEC("license") = "GPL";

#define SDC_CC "fctlab_sdc"
#define SDC_CC_LEN 10
#define CLASS_C 1
#define CLASS_A 3
#define LOAD_ONE 65536U

/* Mirrored by python/fctlab/testbed/hostprog.py (PARAMS); keep them in step. */
struct sdc_host_params {
	__u32 alpha_milli[3]; /* classes A, B, C: segments per RTT x 1000 */
	__u32 beta_milli[3];  /* x 1000 */
	__u32 r_a_segments;   /* class A: at most this many segments left */
	__u32 r_b_segments;   /* class B: at most this many */
};

const volatile struct sdc_host_params sdc_host_params = {
	.alpha_milli = { 789, 500, 500 },
	.beta_milli = { 900, 714, 500 },
	.r_a_segments = 50,
	.r_b_segments = 100,
};

/* The sender's class in wire numbering: by its remaining size (kernel/host_rules.h), C for a
 * long-lived flow. */
static __always_inline __u32 class_of(struct bpf_sock_ops *skops)
{
	__u32 rem;

	if (!fb_remaining(skops, &rem))
		return CLASS_C;
	return sdc_class_left(rem, skops->mss_cache, sdc_host_params.r_a_segments, sdc_host_params.r_b_segments);
}

/* Per-socket congestion-control state, in icsk_ca_priv. */
struct sdc_ca {
	__u32 mi;        /* still multiplying: no overload yet */
	__u32 acc;       /* additive-increase credit, acked bytes x alpha_milli */
	__u64 frozen_ns; /* no cut before this time */
};

static __always_inline void on_parse(struct bpf_sock_ops *skops)
{
	struct fb_option o;
	struct fb_sock *s;

	s = fb_parsed(skops, &o, FB_PROTO_SDC);
	if (!s)
		return;
	if (s->role == ROLE_RECEIVER && !(o.flags & FB_FLAG_ECHO)) {
		s->load = bpf_ntohl(o.rate_kbps);
		s->top = bpf_ntohl(o.echo_kbps) & 0xFF;
	} else if (s->role == ROLE_SENDER && (o.flags & FB_FLAG_ECHO)) {
		s->load = bpf_ntohl(o.echo_kbps);
		s->top = bpf_ntohs(o.aux) & 0xFF;
		s->echoes += 1;
	}
}

static __always_inline void on_write(struct bpf_sock_ops *skops)
{
	struct fb_option o = {}, syn;
	struct fb_sock *s = fb_state(skops);
	__u8 flags = skops->skb_tcp_flags;
	__u32 class;

	o.kind = FB_KIND;
	o.len = FB_LEN;
	o.exid = bpf_htons(FB_EXID);
	o.proto = FB_PROTO_SDC;
	if ((flags & (TCPHDR_SYN | TCPHDR_ACK)) == (TCPHDR_SYN | TCPHDR_ACK)) {
		o.flags = FB_FLAG_ECHO;
		if (fb_load_option(skops, &syn, BPF_LOAD_HDR_OPT_TCP_SYN, FB_PROTO_SDC) == 1) {
			o.echo_kbps = syn.rate_kbps;
			o.aux = bpf_htons(bpf_ntohl(syn.echo_kbps) & 0xFF);
		}
	} else if (!s) {
		return;
	} else if (s->role == ROLE_RECEIVER) {
		o.flags = FB_FLAG_ECHO;
		o.echo_kbps = bpf_htonl(s->load);
		o.aux = bpf_htons(s->top & 0xFF);
	} else {
		/* its FIN leaves (class 0), and it stays out of the ports' counts after it */
		if (flags & TCPHDR_FIN)
			s->fin_sent = 1;
		class = s->fin_sent ? 0 : class_of(skops);
		o.aux = bpf_htons((__u16)(class << 8 | (s->last_class & 0xFF)));
		o.rtt_ns = bpf_htonl((skops->srtt_us >> 3) * 1000);
		s->last_class = class;
	}
	fb_store(skops, &o);
}

FB_SOCKOPS_PROGRAM(SDC_CC, SDC_CC_LEN, fb_reserve_always, on_write, on_parse)

static __always_inline struct sdc_ca *ca_of(struct sock *sk)
{
	return (struct sdc_ca *)((struct inet_connection_sock *)sk)->icsk_ca_priv;
}

/* The (alpha, beta) in use, x 1000: class A's when the flow's class (that of the last
 * segment it wrote) is the highest active on its path (dynamic remapping), else its own. */
static __always_inline void params_of(struct fb_sock *s, __u32 *alpha, __u32 *beta)
{
	__u32 own = s->last_class ? s->last_class : CLASS_C, i;

	if (own > CLASS_A)
		own = CLASS_A;
	i = s->top <= own ? 0 : CLASS_A - own; /* A = 0, B = 1, C = 2 */
	if (i > 2)
		i = 2;
	*alpha = sdc_host_params.alpha_milli[i];
	*beta = sdc_host_params.beta_milli[i];
}

SEC("struct_ops")
void BPF_PROG(fctlab_sdc_init, struct sock *sk)
{
	struct sdc_ca *ca = ca_of(sk);

	ca->mi = 1;
	ca->acc = 0;
	ca->frozen_ns = 0;
}

SEC("struct_ops")
void BPF_PROG(fctlab_sdc_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	struct fb_sock *s = bpf_sk_storage_get(&fb_sock, sk, 0, 0);
	struct sdc_ca *ca = ca_of(sk);
	__u32 alpha, beta, cwnd = tp->snd_cwnd;
	__u64 now;

	if (!s || s->echoes == 0) {
		tcp_reno_cong_avoid(sk, ack, acked);
		return;
	}
	params_of(s, &alpha, &beta);
	if (s->load >= LOAD_ONE) {
		now = bpf_ktime_get_ns();
		if (now >= ca->frozen_ns) { /* one cut per overload */
			cwnd = (__u64)cwnd * beta / 1000;
			tp->snd_cwnd = cwnd > 1 ? cwnd : 1;
			tp->snd_ssthresh = tp->snd_cwnd;
			ca->mi = 0;
			ca->frozen_ns = now + 2 * (__u64)(tp->srtt_us >> 3) * 1000;
		}
		return;
	}
	if (ca->mi) {
		tp->snd_cwnd = cwnd + (acked < cwnd ? acked : cwnd); /* gamma = 1 */
	} else {
		/* alpha segments per RTT: a window's worth of ACKs adds alpha */
		ca->acc += acked * alpha;
		if (ca->acc >= cwnd * 1000) {
			ca->acc -= cwnd * 1000;
			tp->snd_cwnd = cwnd + 1;
		}
	}
	if (tp->snd_cwnd > tp->snd_cwnd_clamp)
		tp->snd_cwnd = tp->snd_cwnd_clamp;
}

SEC("struct_ops")
__u32 BPF_PROG(fctlab_sdc_ssthresh, struct sock *sk)
{
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	struct fb_sock *s = bpf_sk_storage_get(&fb_sock, sk, 0, 0);
	__u32 alpha, beta, w;

	if (!s || s->echoes == 0)
		return tcp_reno_ssthresh(sk);
	params_of(s, &alpha, &beta);
	ca_of(sk)->mi = 0;
	w = (__u64)tp->snd_cwnd * beta / 1000;
	return w > 2 ? w : 2;
}

SEC("struct_ops")
__u32 BPF_PROG(fctlab_sdc_undo_cwnd, struct sock *sk)
{
	return tcp_reno_undo_cwnd(sk);
}

SEC(".struct_ops")
struct tcp_congestion_ops fctlab_sdc = {
	.init = (void *)fctlab_sdc_init,
	.ssthresh = (void *)fctlab_sdc_ssthresh,
	.cong_avoid = (void *)fctlab_sdc_cong_avoid,
	.undo_cwnd = (void *)fctlab_sdc_undo_cwnd,
	.name = "fctlab_sdc",
};
