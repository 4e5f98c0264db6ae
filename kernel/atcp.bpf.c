// SPDX-License-Identifier: GPL-2.0
/*
 * ATCP (Adaptive TCP) as a BPF struct_ops TCP congestion control.
 *
 * NewReno with a weighted additive increase: in congestion avoidance the window grows by
 * w segments per round trip instead of one. Slow start, the halving on loss
 * (tcp_reno_ssthresh) and undo are Reno's, called as kernel kfuncs. Two flows with weights
 * a and b sharing a drop-tail bottleneck converge to rates a : b (Theorem 1 of the ATCP
 * design paper).
 *
 * One object registers four congestion controls:
 *   atcp      weight from a weight-size function of the bytes acked so far
 *             (step: W_H while bytes_acked <= T, else W_L; linear: W_H up to T1, W_L from
 *             T2 on, linear in between);
 *   atcp_w1   fixed weight w_fixed[0] (default 1), for rate control (Theorem 1);
 *   atcp_w2   fixed weight w_fixed[1] (default 2);
 *   atcp_w3   fixed weight w_fixed[2] (default 3).
 * An application picks one per socket with setsockopt(TCP_CONGESTION, "atcp_w2").
 * All parameters live in .rodata (`atcp_params`) and are written into the object before
 * it is loaded (python/fctlab/kernel.py), so they change without recompiling.
 *
 * Differences from the simulator's ATCP (crates/transport/src/cc/atcp.rs):
 *   - The weight follows tp->bytes_acked (bytes the peer acknowledged), not the bytes
 *     sent: the kernel has no per-connection "bytes sent by the application" counter that
 *     a congestion control may read. The two differ by at most one window.
 *   - Weights are fixed point, 1024 = 1.0 segment per RTT; thresholds are whole bytes.
 *   - Weight functions: step, linear and fixed only. The exponential and the
 *     deadline-driven "time" functions need floating point or an application deadline
 *     and are not provided.
 *   - The increase is per ACKed segment (acked * w / cwnd, accumulated in fixed point),
 *     as Linux's tcp_cong_avoid_ai, not per byte; the accumulator is cleared on every
 *     window reduction.
 *   - Loss recovery, RTO, SACK, delayed ACKs, pacing and TSO are the kernel's, not the
 *     simulator's model of them.
 *   - One halving per congestion episode. The simulator sets cwnd to half the flight at
 *     once, so the sender pauses and the queue drains before any packet sent after the
 *     reduction reaches it. Linux reduces gradually over the next round trip (PRR) and
 *     keeps sending at half rate meanwhile; those packets meet the same full queue, are
 *     marked or dropped, and a second halving follows one round trip after the first.
 *     Theorem 1 assumes one halving per congestion event for both flows, so `atcp`
 *     ignores a loss or ECN echo for data sent before its previous reduction ended
 *     (sequence below `quiet_until`, snd_nxt when the CWR/Recovery state was left).
 *     The signal still starts the kernel's recovery (retransmission, CWR state); only
 *     the window is kept. `reno` has no such rule, and `fctlab kernel status` shows
 *     the setting (`halving`: per-episode by default, per-window as Linux's reno).
 *
 * Requires Linux >= 5.13 (struct_ops tcp_congestion_ops with kfunc calls to
 * tcp_slow_start, tcp_cong_avoid_ai, tcp_reno_ssthresh, tcp_reno_undo_cwnd), a kernel
 * with BTF, and libbpf >= 1.0 (SEC("struct_ops") with BPF_PROG).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

char _license[] SEC("license") = "GPL";

#define ATCP_ONE 1024U /* fixed point: 1024 = weight 1.0 (one segment per RTT) */

#define ATCP_FN_STEP 0
#define ATCP_FN_LINEAR 1

/* The layout is mirrored by python/fctlab/kernel.py (PARAMS_FORMAT); keep them in step. */
struct atcp_params {
	__u32 function;       /* ATCP_FN_STEP or ATCP_FN_LINEAR (instance "atcp") */
	__u32 w_high;         /* W_H, fixed point */
	__u32 w_low;          /* W_L, fixed point */
	__u32 w_fixed[3];     /* weights of atcp_w1, atcp_w2, atcp_w3, fixed point */
	__u64 threshold;      /* step: T, bytes */
	__u64 threshold_low;  /* linear: T1, bytes */
	__u64 threshold_high; /* linear: T2, bytes (> T1) */
	__u32 one_halving;    /* 1: one halving per congestion episode (see above) */
	__u32 unused;
};

/* The paper's choice: step, W_H = 3, W_L = 1, T = 10 MB. */
const volatile struct atcp_params atcp_params = {
	.function = ATCP_FN_STEP,
	.w_high = 3 * ATCP_ONE,
	.w_low = 1 * ATCP_ONE,
	.w_fixed = { 1 * ATCP_ONE, 2 * ATCP_ONE, 3 * ATCP_ONE },
	.threshold = 10000000,
	.threshold_low = 1000000,
	.threshold_high = 10000000,
	.one_halving = 1,
	.unused = 0,
};

/* Per-socket state, kept in icsk_ca_priv. */
struct atcp {
	__u64 acc;         /* increase credit: sum of acked * w (fixed point) since the last step */
	__u32 fixed_w;     /* fixed weight of this socket, 0 = use the weight-size function */
	__u32 reduced;     /* the current CWR/Recovery episode halved the window */
	__u32 quiet_until; /* signals for data below this sequence do not halve again */
	__u32 quiet_valid; /* quiet_until is set */
	__u32 kept;        /* the last ssthresh call kept the window */
};

/* The state must fit the kernel's private area (ICSK_CA_PRIV_SIZE, 13 u64 in 6.x). */
_Static_assert(sizeof(struct atcp) <= sizeof(((struct inet_connection_sock *)0)->icsk_ca_priv),
	       "struct atcp does not fit ICSK_CA_PRIV_SIZE");

extern __u32 tcp_slow_start(struct tcp_sock *tp, __u32 acked) __ksym;
extern __u32 tcp_reno_ssthresh(struct sock *sk) __ksym;
extern __u32 tcp_reno_undo_cwnd(struct sock *sk) __ksym;

static __always_inline struct tcp_sock *tcp_sk(const struct sock *sk)
{
	return (struct tcp_sock *)sk;
}

static __always_inline struct atcp *ca_of(const struct sock *sk)
{
	return (struct atcp *)((struct inet_connection_sock *)sk)->icsk_ca_priv;
}

static __always_inline bool in_slow_start(const struct tcp_sock *tp)
{
	return tp->snd_cwnd < tp->snd_ssthresh;
}

/* As the kernel's tcp_is_cwnd_limited(). */
static __always_inline bool cwnd_limited(const struct sock *sk)
{
	const struct tcp_sock *tp = tcp_sk(sk);

	if (in_slow_start(tp))
		return tp->snd_cwnd < 2 * tp->max_packets_out;
	return !!BPF_CORE_READ_BITFIELD(tp, is_cwnd_limited);
}

/* The weight (fixed point) after `acked_bytes` bytes were acknowledged. */
static __always_inline __u32 weight_of(__u64 acked_bytes)
{
	__u32 wh = atcp_params.w_high, wl = atcp_params.w_low;
	__u64 t1 = atcp_params.threshold_low, t2 = atcp_params.threshold_high;
	__u64 span, pos;

	if (atcp_params.function == ATCP_FN_STEP)
		return acked_bytes <= atcp_params.threshold ? wh : wl;
	if (acked_bytes <= t1)
		return wh;
	if (acked_bytes >= t2 || t2 <= t1)
		return wl;
	/* Linear between (T1, W_H) and (T2, W_L); unsigned arithmetic on either slope.
	 * (pos * |wh - wl|) cannot overflow: pos < 2^44 bytes and weights < 2^20. */
	span = t2 - t1;
	pos = acked_bytes - t1;
	if (wh >= wl)
		return wh - (__u32)(pos * (wh - wl) / span);
	return wh + (__u32)(pos * (wl - wh) / span);
}

static __always_inline void init_common(struct sock *sk, __u32 fixed_w)
{
	struct atcp *ca = ca_of(sk);

	ca->acc = 0;
	ca->fixed_w = fixed_w;
	ca->reduced = 0;
	ca->quiet_until = 0;
	ca->quiet_valid = 0;
	ca->kept = 0;
}

SEC("struct_ops")
void BPF_PROG(atcp_init, struct sock *sk)
{
	init_common(sk, 0);
}

SEC("struct_ops")
void BPF_PROG(atcp_w1_init, struct sock *sk)
{
	init_common(sk, atcp_params.w_fixed[0]);
}

SEC("struct_ops")
void BPF_PROG(atcp_w2_init, struct sock *sk)
{
	init_common(sk, atcp_params.w_fixed[1]);
}

SEC("struct_ops")
void BPF_PROG(atcp_w3_init, struct sock *sk)
{
	init_common(sk, atcp_params.w_fixed[2]);
}

SEC("struct_ops")
void BPF_PROG(atcp_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct atcp *ca = ca_of(sk);
	__u64 unit, steps;
	__u32 w, cwnd;

	if (!cwnd_limited(sk))
		return;
	if (in_slow_start(tp)) {
		acked = tcp_slow_start(tp, acked);
		if (!acked)
			return;
	}
	w = ca->fixed_w ? ca->fixed_w : weight_of(tp->bytes_acked);
	if (w == 0)
		w = 1;
	/* w segments per RTT: acked * w / cwnd segments for this ACK, accumulated as credit
	 * in units of 1/(cwnd * ATCP_ONE) segment. */
	cwnd = tp->snd_cwnd;
	if (cwnd == 0)
		cwnd = 1;
	unit = (__u64)cwnd * ATCP_ONE;
	ca->acc += (__u64)acked * w;
	if (ca->acc < unit)
		return;
	steps = ca->acc / unit;
	ca->acc -= steps * unit;
	if (steps > 0xffff) /* bound for the verifier's and the reader's sake */
		steps = 0xffff;
	cwnd += (__u32)steps;
	if (cwnd > tp->snd_cwnd_clamp)
		cwnd = tp->snd_cwnd_clamp;
	tp->snd_cwnd = cwnd;
}

/* Reno's halving; the increase credit of the old window is dropped. A signal about data
 * sent before the previous reduction ended keeps the window (one halving per episode). */
SEC("struct_ops")
__u32 BPF_PROG(atcp_ssthresh, struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct atcp *ca = ca_of(sk);

	if (atcp_params.one_halving && ca->quiet_valid && (__s32)(tp->snd_una - ca->quiet_until) < 0) {
		ca->reduced = 0;
		ca->kept = 1;
		return tp->snd_cwnd > 2 ? tp->snd_cwnd : 2;
	}
	ca->acc = 0;
	ca->reduced = 1;
	ca->kept = 0;
	return tcp_reno_ssthresh(sk);
}

/* Leaving CWR or Recovery after a halving: remember where the reduced window's data ends. */
SEC("struct_ops")
void BPF_PROG(atcp_set_state, struct sock *sk, __u8 new_state)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct atcp *ca = ca_of(sk);

	if (new_state == TCP_CA_Open && ca->reduced) {
		ca->quiet_until = tp->snd_nxt;
		ca->quiet_valid = 1;
		ca->reduced = 0;
	} else if (new_state == TCP_CA_Loss) {
		/* A timeout always halves: undo a kept window of the ssthresh call that
		 * tcp_enter_loss made just before this state change. */
		if (ca->kept) {
			__u32 half = tp->prior_cwnd >> 1;

			tp->snd_ssthresh = half > 2 ? half : 2;
		}
		ca->quiet_valid = 0;
		ca->reduced = 0;
		ca->kept = 0;
	}
}

SEC("struct_ops")
__u32 BPF_PROG(atcp_undo_cwnd, struct sock *sk)
{
	return tcp_reno_undo_cwnd(sk);
}

SEC(".struct_ops")
struct tcp_congestion_ops atcp = {
	.init = (void *)atcp_init,
	.cong_avoid = (void *)atcp_cong_avoid,
	.ssthresh = (void *)atcp_ssthresh,
	.set_state = (void *)atcp_set_state,
	.undo_cwnd = (void *)atcp_undo_cwnd,
	.name = "atcp",
};

SEC(".struct_ops")
struct tcp_congestion_ops atcp_w1 = {
	.init = (void *)atcp_w1_init,
	.cong_avoid = (void *)atcp_cong_avoid,
	.ssthresh = (void *)atcp_ssthresh,
	.set_state = (void *)atcp_set_state,
	.undo_cwnd = (void *)atcp_undo_cwnd,
	.name = "atcp_w1",
};

SEC(".struct_ops")
struct tcp_congestion_ops atcp_w2 = {
	.init = (void *)atcp_w2_init,
	.cong_avoid = (void *)atcp_cong_avoid,
	.ssthresh = (void *)atcp_ssthresh,
	.set_state = (void *)atcp_set_state,
	.undo_cwnd = (void *)atcp_undo_cwnd,
	.name = "atcp_w2",
};

SEC(".struct_ops")
struct tcp_congestion_ops atcp_w3 = {
	.init = (void *)atcp_w3_init,
	.cong_avoid = (void *)atcp_cong_avoid,
	.ssthresh = (void *)atcp_ssthresh,
	.set_state = (void *)atcp_set_state,
	.undo_cwnd = (void *)atcp_undo_cwnd,
	.name = "atcp_w3",
};
