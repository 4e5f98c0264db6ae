// SPDX-License-Identifier: GPL-2.0
/*
 * RCP's hosts for the namespace testbed: the sender and receiver sides of the simulator's
 * `Rcp` (crates/transport/src/cc/rcp.rs), in one object that python/fctlab/testbed/hostprog.py
 * loads with kernel/fbload.c (a sock_ops program attached to the run's cgroup, and the
 * congestion control `fctlab_rcp` registered as struct_ops; both share `fb_sock`).
 *
 * The feedback option (kernel/fb_option.h) on sockets that run `fctlab_rcp`:
 * - the connecting side (the sender) writes it on every segment it sends, SYN included:
 *   rate = "none yet", rtt = its smoothed RTT; switch ports (kernel/rcp_port.bpf.c) lower
 *   the rate to theirs;
 * - the accepting side (the receiver) keeps the rate the last segment arrived with, and
 *   writes it back as the echo on every segment it sends (the SYN-ACK echoes the SYN's);
 * - the sender keeps the last echo in `fb_sock`, and limits its pacing rate to it
 *   (SO_MAX_PACING_RATE).
 * Segments without the option, or with a malformed one, are left alone and counted; a
 * sender that never hears a rate stays a Reno sender.
 *
 * The congestion control: with a rate R from the path, the window is two bandwidth-delay
 * products (2 R SRTT, at least 4 segments) and the pacing (internal to TCP, turned on at
 * init) is limited to R, so the rate governs; losses change neither (RCP does not react to
 * loss; recovery still repairs). Before the first rate it is Reno.
 *
 * Requires Linux >= 6.0 (TCP header options from sock_ops, struct_ops congestion control,
 * sk_storage from struct_ops) and a kernel with BTF.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_endian.h>
#include "fb_option.h"

char _license[] SEC("license") = "GPL";

#define SOL_SOCKET 1
#define SOL_TCP 6
#define SO_MAX_PACING_RATE 47
#define TCP_CONGESTION 13
#define TCPHDR_SYN 0x02
#define TCPHDR_ACK 0x10
#define MIN_CWND 4

enum { ROLE_NONE, ROLE_SENDER, ROLE_RECEIVER };

/* Per socket. */
struct fb_sock {
	__u32 role;
	__u32 rate_kbps;    /* sender: the last echoed rate (0: none yet) */
	__u32 fwd_kbps;     /* receiver: the rate the last segment arrived with */
	__u32 echoes;       /* sender: echoes heard */
};

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct fb_sock);
} fb_sock SEC(".maps");

/* Counters: segments written with the option, parsed with it, without it, malformed. */
enum { STAT_WRITTEN, STAT_PARSED, STAT_NO_OPTION, STAT_MALFORMED, STAT_N };

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, STAT_N);
	__type(key, __u32);
	__type(value, __u64);
} fb_host_stats SEC(".maps");

extern void tcp_reno_cong_avoid(struct sock *sk, __u32 ack, __u32 acked) __ksym;
extern __u32 tcp_reno_ssthresh(struct sock *sk) __ksym;
extern __u32 tcp_reno_undo_cwnd(struct sock *sk) __ksym;

static __always_inline void count(__u32 which)
{
	__u64 *v = bpf_map_lookup_elem(&fb_host_stats, &which);

	if (v)
		*v += 1;
}

static __always_inline bool runs_rcp(struct bpf_sock_ops *skops)
{
	char name[16] = {};

	if (bpf_getsockopt(skops, SOL_TCP, TCP_CONGESTION, name, sizeof(name)))
		return false;
	return name[0] == 'f' && name[1] == 'c' && name[2] == 't' && name[3] == 'l' && name[4] == 'a' &&
	       name[5] == 'b' && name[6] == '_' && name[7] == 'r' && name[8] == 'c' && name[9] == 'p' && name[10] == 0;
}

static __always_inline void enable(struct bpf_sock_ops *skops, __u32 role)
{
	struct bpf_sock *sk = skops->sk;
	struct fb_sock *s;

	if (!sk || !runs_rcp(skops))
		return;
	s = bpf_sk_storage_get(&fb_sock, sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
	if (s && role != ROLE_NONE)
		s->role = role;
	bpf_sock_ops_cb_flags_set(skops, skops->bpf_sock_ops_cb_flags | BPF_SOCK_OPS_PARSE_ALL_HDR_OPT_CB_FLAG |
						 BPF_SOCK_OPS_WRITE_HDR_OPT_CB_FLAG);
}

/* The option of the segment being parsed (or, with BPF_LOAD_HDR_OPT_TCP_SYN, of the SYN the
 * segment being written answers): 1 when found, 0 when absent, -1 when malformed. */
static __always_inline int load_option(struct bpf_sock_ops *skops, struct fb_option *o, __u64 flags)
{
	long n;

	__builtin_memset(o, 0, sizeof(*o));
	o->kind = FB_KIND;
	o->len = 4; /* search by kind and experiment id */
	o->exid = bpf_htons(FB_EXID);
	n = bpf_load_hdr_opt(skops, o, sizeof(*o), flags);
	if (n < 0)
		return 0;
	if (n != FB_LEN || o->len != FB_LEN || o->proto != FB_PROTO_RCP)
		return -1;
	return 1;
}

static __always_inline void on_parse(struct bpf_sock_ops *skops)
{
	struct bpf_sock *sk = skops->sk;
	struct fb_option o;
	struct fb_sock *s;
	__u64 rate_Bps;
	int found = load_option(skops, &o, 0);

	if (found <= 0) {
		count(found == 0 ? STAT_NO_OPTION : STAT_MALFORMED);
		return;
	}
	count(STAT_PARSED);
	if (!sk)
		return;
	s = bpf_sk_storage_get(&fb_sock, sk, 0, 0);
	if (!s)
		return;
	if (s->role == ROLE_RECEIVER && !(o.flags & FB_FLAG_ECHO)) {
		s->fwd_kbps = bpf_ntohl(o.rate_kbps);
	} else if (s->role == ROLE_SENDER && (o.flags & FB_FLAG_ECHO)) {
		__u32 r = bpf_ntohl(o.echo_kbps);

		if (r == 0 || r == FB_NO_RATE_YET)
			return; /* no port stamped it: keep what we have */
		s->rate_kbps = r;
		s->echoes += 1;
		rate_Bps = (__u64)r * 125;
		bpf_setsockopt(skops, SOL_SOCKET, SO_MAX_PACING_RATE, &rate_Bps, sizeof(rate_Bps));
	}
}

static __always_inline void on_write(struct bpf_sock_ops *skops)
{
	struct bpf_sock *sk = skops->sk;
	struct fb_option o = {}, syn;
	struct fb_sock *s = sk ? bpf_sk_storage_get(&fb_sock, sk, 0, 0) : NULL;
	bool synack = (skops->skb_tcp_flags & (TCPHDR_SYN | TCPHDR_ACK)) == (TCPHDR_SYN | TCPHDR_ACK);

	o.kind = FB_KIND;
	o.len = FB_LEN;
	o.exid = bpf_htons(FB_EXID);
	o.proto = FB_PROTO_RCP;
	o.rate_kbps = bpf_htonl(FB_NO_RATE_YET);
	if (synack) { /* the listener answers a SYN: echo the SYN's rate */
		o.flags = FB_FLAG_ECHO;
		if (load_option(skops, &syn, BPF_LOAD_HDR_OPT_TCP_SYN) == 1)
			o.echo_kbps = syn.rate_kbps;
	} else if (s && s->role == ROLE_RECEIVER) {
		o.flags = FB_FLAG_ECHO;
		o.echo_kbps = bpf_htonl(s->fwd_kbps);
	} else {
		o.rtt_ns = bpf_htonl((skops->srtt_us >> 3) * 1000);
	}
	if (bpf_store_hdr_opt(skops, &o, sizeof(o), 0) == 0)
		count(STAT_WRITTEN);
}

SEC("sockops")
int fb_sockops(struct bpf_sock_ops *skops)
{
	switch (skops->op) {
	case BPF_SOCK_OPS_TCP_CONNECT_CB:
		enable(skops, ROLE_SENDER);
		break;
	case BPF_SOCK_OPS_TCP_LISTEN_CB:
		enable(skops, ROLE_NONE);
		break;
	case BPF_SOCK_OPS_PASSIVE_ESTABLISHED_CB:
		enable(skops, ROLE_RECEIVER);
		break;
	case BPF_SOCK_OPS_HDR_OPT_LEN_CB:
		bpf_reserve_hdr_opt(skops, FB_LEN, 0);
		break;
	case BPF_SOCK_OPS_WRITE_HDR_OPT_CB:
		on_write(skops);
		break;
	case BPF_SOCK_OPS_PARSE_HDR_OPT_CB:
		on_parse(skops);
		break;
	}
	return 1;
}

static __always_inline struct tcp_sock *tcp_of(const struct sock *sk)
{
	return (struct tcp_sock *)sk;
}

static __always_inline __u32 rate_of(struct sock *sk)
{
	struct fb_sock *s = bpf_sk_storage_get(&fb_sock, sk, 0, 0);

	return s ? s->rate_kbps : 0;
}

SEC("struct_ops")
void BPF_PROG(fctlab_rcp_init, struct sock *sk)
{
	sk->sk_pacing_status = SK_PACING_NEEDED;
}

SEC("struct_ops")
void BPF_PROG(fctlab_rcp_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct tcp_sock *tp = tcp_of(sk);
	__u64 r = rate_of(sk), cwnd;

	if (r == 0) {
		tcp_reno_cong_avoid(sk, ack, acked);
		return;
	}
	/* 2 R SRTT in segments: R kbit/s = 125 R bytes/s, srtt_us >> 3 microseconds */
	cwnd = 2 * r * 125 * (tp->srtt_us >> 3) / 1000000 / (tp->mss_cache ? tp->mss_cache : 1460);
	if (cwnd < MIN_CWND)
		cwnd = MIN_CWND;
	if (cwnd > tp->snd_cwnd_clamp)
		cwnd = tp->snd_cwnd_clamp;
	tp->snd_cwnd = cwnd;
}

SEC("struct_ops")
__u32 BPF_PROG(fctlab_rcp_ssthresh, struct sock *sk)
{
	struct tcp_sock *tp = tcp_of(sk);

	if (rate_of(sk) == 0)
		return tcp_reno_ssthresh(sk);
	return tp->snd_cwnd > MIN_CWND ? tp->snd_cwnd : MIN_CWND; /* the rate governs, not losses */
}

SEC("struct_ops")
__u32 BPF_PROG(fctlab_rcp_undo_cwnd, struct sock *sk)
{
	return tcp_reno_undo_cwnd(sk);
}

SEC(".struct_ops")
struct tcp_congestion_ops fctlab_rcp = {
	.init = (void *)fctlab_rcp_init,
	.ssthresh = (void *)fctlab_rcp_ssthresh,
	.cong_avoid = (void *)fctlab_rcp_cong_avoid,
	.undo_cwnd = (void *)fctlab_rcp_undo_cwnd,
	.name = "fctlab_rcp",
};
