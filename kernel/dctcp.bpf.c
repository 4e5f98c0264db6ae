// SPDX-License-Identifier: GPL-2.0
/*
 * DCTCP (RFC 8257) as a BPF struct_ops TCP congestion control, registered as
 * "fctlab_dctcp", for kernels built without tcp_dctcp (the testbed's senders under
 * `protocol = "dctcp"` and PIAS).
 *
 * The sender keeps alpha, the running fraction of its bytes that came back marked:
 *   once per window of data (when snd_una passes the window's end),
 *   F = CE-marked segments delivered / segments delivered in that window,
 *   alpha = (1 - g) * alpha + g * F, g = 1/2^shift_g (default 1/16);
 * and on an ECN echo cuts the window by alpha / 2: cwnd - cwnd * alpha / 2. A loss halves it
 * as Reno does; the window grows as Reno's (slow start, then one segment per round trip).
 *
 * As a receiver it sends an ACK at once when the CE state of arriving segments changes,
 * first for the segments before the change if an ACK was being delayed, so that each ACK's
 * ECN echo covers segments of one state (RFC 8257, section 3.2).
 *
 * The same algorithm as the simulator's `protocol = "dctcp"` (crates/transport/src/cc/
 * dctcp.rs) with these differences: alpha is fixed point (1024 = 1.0) and counts segments
 * (the kernel's delivered and delivered_ce), not bytes; the reduction happens once per
 * window through the kernel's CWR state; loss recovery, RTO, pacing and TSO are the kernel's.
 *
 * Parameters live in .rodata (`dctcp_params`); python/fctlab/kernel.py writes them.
 * Requires Linux >= 5.13 (struct_ops tcp_congestion_ops; kfuncs tcp_reno_cong_avoid and
 * tcp_reno_undo_cwnd; the helper bpf_tcp_send_ack) and a kernel with BTF.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

char _license[] SEC("license") = "GPL";

#define ALPHA_ONE 1024U

/* Macros of include/net/tcp.h, which BTF does not carry. */
#ifndef TCP_ECN_DEMAND_CWR
#define TCP_ECN_DEMAND_CWR 4
#endif
#ifndef TCP_CONG_NEEDS_ECN
#define TCP_CONG_NEEDS_ECN 0x2
#endif

/* Mirrored by python/fctlab/kernel.py (DCTCP_PARAMS_FORMAT); keep them in step. */
struct dctcp_params {
	__u32 shift_g;    /* g = 1 / 2^shift_g */
	__u32 alpha_init; /* fixed point, at most ALPHA_ONE */
};

const volatile struct dctcp_params dctcp_params = {
	.shift_g = 4,
	.alpha_init = ALPHA_ONE,
};

/* Per-socket state, kept in icsk_ca_priv. */
struct dctcp_state {
	__u32 alpha;           /* fixed point */
	__u32 window_end;      /* snd_nxt when the current observation window began */
	__u32 delivered_start; /* tp->delivered then */
	__u32 ce_start;        /* tp->delivered_ce then */
	__u32 cwnd_before;     /* the window before the last reduction (undo) */
	__u32 rcv_nxt_seen;    /* receiver: rcv_nxt when the CE state last changed or was seen */
	__u32 last_ce;         /* receiver: the last segment arrived CE-marked */
};

_Static_assert(sizeof(struct dctcp_state) <= sizeof(((struct inet_connection_sock *)0)->icsk_ca_priv),
	       "struct dctcp_state does not fit ICSK_CA_PRIV_SIZE");

extern void tcp_reno_cong_avoid(struct sock *sk, __u32 ack, __u32 acked) __ksym;

static __always_inline struct tcp_sock *tcp_of(const struct sock *sk)
{
	return (struct tcp_sock *)sk;
}

static __always_inline struct dctcp_state *state_of(const struct sock *sk)
{
	return (struct dctcp_state *)((struct inet_connection_sock *)sk)->icsk_ca_priv;
}

static __always_inline void new_window(const struct tcp_sock *tp, struct dctcp_state *s)
{
	s->window_end = tp->snd_nxt;
	s->delivered_start = tp->delivered;
	s->ce_start = tp->delivered_ce;
}

SEC("struct_ops")
void BPF_PROG(fctlab_dctcp_init, struct sock *sk)
{
	struct tcp_sock *tp = tcp_of(sk);
	struct dctcp_state *s = state_of(sk);
	__u32 a = dctcp_params.alpha_init;

	s->alpha = a < ALPHA_ONE ? a : ALPHA_ONE;
	s->cwnd_before = 0;
	s->rcv_nxt_seen = tp->rcv_nxt;
	s->last_ce = 0;
	new_window(tp, s);
}

/* Every ACK: at the end of a window of data, fold the window's marked fraction into alpha. */
SEC("struct_ops")
void BPF_PROG(fctlab_dctcp_in_ack_event, struct sock *sk, __u32 flags)
{
	struct tcp_sock *tp = tcp_of(sk);
	struct dctcp_state *s = state_of(sk);
	__u32 shift = dctcp_params.shift_g, alpha = s->alpha, decay, delivered, marked;

	if ((__s32)(tp->snd_una - s->window_end) < 0)
		return;
	if (shift > 10)
		shift = 10;
	/* alpha -= alpha * g, by at least one unit while alpha is positive */
	decay = alpha >> shift;
	if (decay == 0 && alpha > 0)
		decay = 1;
	alpha -= decay;
	marked = tp->delivered_ce - s->ce_start;
	delivered = tp->delivered - s->delivered_start;
	if (marked) {
		/* alpha += g * F, in fixed point: (marked << 10 >> shift) / delivered */
		__u64 add = ((__u64)marked << (10 - shift)) / (delivered ? delivered : 1);

		alpha = alpha + add < ALPHA_ONE ? alpha + (__u32)add : ALPHA_ONE;
	}
	s->alpha = alpha;
	new_window(tp, s);
}

/* An ECN echo (through CWR) or a loss: the window falls by alpha / 2. */
SEC("struct_ops")
__u32 BPF_PROG(fctlab_dctcp_ssthresh, struct sock *sk)
{
	struct tcp_sock *tp = tcp_of(sk);
	struct dctcp_state *s = state_of(sk);
	__u32 cwnd = tp->snd_cwnd, cut = (__u32)(((__u64)cwnd * s->alpha) >> 11);

	s->cwnd_before = cwnd;
	return cwnd - cut > 2 ? cwnd - cut : 2;
}

static __always_inline void halve_on_loss(struct sock *sk)
{
	struct tcp_sock *tp = tcp_of(sk);

	state_of(sk)->cwnd_before = tp->snd_cwnd;
	tp->snd_ssthresh = tp->snd_cwnd / 2 > 2 ? tp->snd_cwnd / 2 : 2;
}

/* Entering fast recovery: a loss halves the window, as Reno. */
SEC("struct_ops")
void BPF_PROG(fctlab_dctcp_set_state, struct sock *sk, __u8 new_state)
{
	__u8 old = BPF_CORE_READ_BITFIELD((struct inet_connection_sock *)sk, icsk_ca_state);

	if (new_state == TCP_CA_Recovery && new_state != old)
		halve_on_loss(sk);
}

/* The receiver's echo: report a change of CE state at once, in an ACK of its own. */
static __always_inline void ce_changed(struct sock *sk, __u32 ce)
{
	struct inet_connection_sock *icsk = (struct inet_connection_sock *)sk;
	struct tcp_sock *tp = tcp_of(sk);
	struct dctcp_state *s = state_of(sk);

	if (s->last_ce != ce) {
		if (icsk->icsk_ack.pending & ICSK_ACK_TIMER) {
			/* the delayed ACK covers segments of the previous state: send it with that state */
			if (s->last_ce)
				tp->ecn_flags |= TCP_ECN_DEMAND_CWR;
			else
				tp->ecn_flags &= ~TCP_ECN_DEMAND_CWR;
			bpf_tcp_send_ack(sk, s->rcv_nxt_seen);
		}
		icsk->icsk_ack.pending |= ICSK_ACK_NOW;
	}
	s->rcv_nxt_seen = tp->rcv_nxt;
	s->last_ce = ce;
	if (ce)
		tp->ecn_flags |= TCP_ECN_DEMAND_CWR;
	else
		tp->ecn_flags &= ~TCP_ECN_DEMAND_CWR;
}

SEC("struct_ops")
void BPF_PROG(fctlab_dctcp_cwnd_event, struct sock *sk, enum tcp_ca_event ev)
{
	if (ev == CA_EVENT_ECN_IS_CE)
		ce_changed(sk, 1);
	else if (ev == CA_EVENT_ECN_NO_CE)
		ce_changed(sk, 0);
	else if (ev == CA_EVENT_LOSS) /* a timeout */
		halve_on_loss(sk);
}

SEC("struct_ops")
void BPF_PROG(fctlab_dctcp_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	tcp_reno_cong_avoid(sk, ack, acked);
}

SEC("struct_ops")
__u32 BPF_PROG(fctlab_dctcp_undo_cwnd, struct sock *sk)
{
	__u32 cwnd = tcp_of(sk)->snd_cwnd, before = state_of(sk)->cwnd_before;

	return cwnd > before ? cwnd : before;
}

SEC(".struct_ops")
struct tcp_congestion_ops fctlab_dctcp = {
	.init = (void *)fctlab_dctcp_init,
	.in_ack_event = (void *)fctlab_dctcp_in_ack_event,
	.cwnd_event = (void *)fctlab_dctcp_cwnd_event,
	.ssthresh = (void *)fctlab_dctcp_ssthresh,
	.cong_avoid = (void *)fctlab_dctcp_cong_avoid,
	.undo_cwnd = (void *)fctlab_dctcp_undo_cwnd,
	.set_state = (void *)fctlab_dctcp_set_state,
	.flags = TCP_CONG_NEEDS_ECN,
	.name = "fctlab_dctcp",
};
