/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the host programs of router-assisted protocols share (kernel/rcp_host.bpf.c,
 * kernel/racs_host.bpf.c): per-socket state `fb_sock`, the counters `fb_host_stats`
 * (python/fctlab/testbed/hostprog.py, STATS, names them), turning the header-option
 * callbacks on for the protocol's sockets, reading the feedback option, and the rate-based
 * congestion control: with a rate R from the path the window is 2 R SRTT (at least 4
 * segments) and TCP's internal pacing is limited to R (SO_MAX_PACING_RATE); losses change
 * neither; before the first rate it is Reno.
 *
 * Include after vmlinux.h, bpf_helpers.h, bpf_tracing.h, bpf_endian.h and fb_option.h.
 */
#ifndef FCTLAB_FB_HOST_H
#define FCTLAB_FB_HOST_H

#define SOL_SOCKET 1
#define SOL_TCP 6
#define SO_MAX_PACING_RATE 47
#define TCP_CONGESTION 13
#define TCP_BPF_IW 1001 /* bpf_setsockopt: the initial window, before any data is sent */
#define TCPHDR_FIN 0x01
#define TCPHDR_SYN 0x02
#define TCPHDR_ACK 0x10
#define MIN_CWND 4
#define FRAME_OVERHEAD 66 /* Ethernet, IPv4, TCP and timestamps: a frame's bytes beyond the payload */

enum { ROLE_NONE, ROLE_SENDER, ROLE_RECEIVER };

/* Per socket. */
struct fb_sock {
	__u32 role;
	__u32 rate_kbps;      /* sender: the rate of the path (0: none yet) */
	__u32 fwd_kbps;       /* receiver: the rate the last forward segment arrived with */
	__u32 echoes;         /* sender: echoes heard */
	__u32 last_weight;    /* RACS sender: w_c of the last request (x 256) */
	__u32 interval_us;    /* RACS sender: t_trans heard (0: none yet) */
	__u32 fwd_interval_us;/* RACS receiver: t_trans of the last request */
	__u32 admitted;       /* RACS sender: the SYN's answer has come */
	__u64 next_request_ns;/* RACS sender */
	__u32 load;           /* SDC sender: the load factor heard (16.16); receiver: to echo */
	__u32 top;            /* SDC sender: the highest active class heard; receiver: to echo */
	__u32 last_class;     /* SDC sender: the class of its last segment (wire numbering) */
	__u32 fin_sent;       /* sender: its FIN has been written (no request, no class after it) */
};

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct fb_sock);
} fb_sock SEC(".maps");

/* Counters: segments written with the option, parsed with it, without it, malformed; rates
 * the kernel refused as a pacing limit. */
enum { HSTAT_WRITTEN, HSTAT_PARSED, HSTAT_NO_OPTION, HSTAT_MALFORMED, HSTAT_PACING_REFUSED, HSTAT_N };

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, HSTAT_N);
	__type(key, __u32);
	__type(value, __u64);
} fb_host_stats SEC(".maps");

extern void tcp_reno_cong_avoid(struct sock *sk, __u32 ack, __u32 acked) __ksym;
extern __u32 tcp_reno_ssthresh(struct sock *sk) __ksym;
extern __u32 tcp_reno_undo_cwnd(struct sock *sk) __ksym;

static __always_inline void hcount(__u32 which)
{
	__u64 *v = bpf_map_lookup_elem(&fb_host_stats, &which);

	if (v)
		*v += 1;
}

/* Whether the socket runs the congestion control `cc` (`len` characters). */
static __always_inline bool fb_runs(struct bpf_sock_ops *skops, const char *cc, int len)
{
	char name[16] = {};

	if (bpf_getsockopt(skops, SOL_TCP, TCP_CONGESTION, name, sizeof(name)))
		return false;
	for (int i = 0; i < 15; i++) {
		if (i == len)
			return name[i] == 0;
		if (name[i] != cc[i])
			return false;
	}
	return false;
}

/* Turns the header-option callbacks on for a socket of the protocol, with its role. */
static __always_inline void fb_enable(struct bpf_sock_ops *skops, __u32 role, const char *cc, int len)
{
	struct bpf_sock *sk = skops->sk;
	struct fb_sock *s;

	if (!sk || !fb_runs(skops, cc, len))
		return;
	s = bpf_sk_storage_get(&fb_sock, sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
	if (s && role != ROLE_NONE)
		s->role = role;
	bpf_sock_ops_cb_flags_set(skops, skops->bpf_sock_ops_cb_flags | BPF_SOCK_OPS_PARSE_ALL_HDR_OPT_CB_FLAG |
						 BPF_SOCK_OPS_WRITE_HDR_OPT_CB_FLAG);
}

/* The protocol's option of the segment being parsed (or, with BPF_LOAD_HDR_OPT_TCP_SYN, of
 * the SYN the segment being written answers): 1 when found, 0 when absent, -1 when
 * malformed or of another protocol. */
static __always_inline int fb_load_option(struct bpf_sock_ops *skops, struct fb_option *o, __u64 flags, __u8 proto)
{
	long n;

	__builtin_memset(o, 0, sizeof(*o));
	o->kind = FB_KIND;
	o->len = 4; /* search by kind and experiment id */
	o->exid = bpf_htons(FB_EXID);
	n = bpf_load_hdr_opt(skops, o, sizeof(*o), flags);
	if (n < 0)
		return 0;
	if (n != FB_LEN || o->len != FB_LEN || o->proto != proto)
		return -1;
	return 1;
}

/* The socket's storage, when it has some. */
static __always_inline struct fb_sock *fb_state(struct bpf_sock_ops *skops)
{
	struct bpf_sock *sk = skops->sk;

	return sk ? bpf_sk_storage_get(&fb_sock, sk, 0, 0) : NULL;
}

/* The segment being parsed: its option of `proto` into `o`, counted, and the socket's
 * state, or NULL when there is no option (or a malformed one) or no state. */
static __always_inline struct fb_sock *fb_parsed(struct bpf_sock_ops *skops, struct fb_option *o, __u8 proto)
{
	int found = fb_load_option(skops, o, 0, proto);

	if (found <= 0) {
		hcount(found == 0 ? HSTAT_NO_OPTION : HSTAT_MALFORMED);
		return NULL;
	}
	hcount(HSTAT_PARSED);
	return fb_state(skops);
}

/* A sized flow's socket mark: FB_MARK_SIZED | its size in bytes (the testbed sets it with
 * SO_MARK; a mark without the bit is RACS's fixed weight, or none). */
#define FB_MARK_SIZED 0x80000000U

/* The bytes a sized flow has not sent yet before the segment being written, the simulator's
 * `SendContext::remaining` (size - bytes sent): bytes acknowledged and bytes in flight
 * (snd_nxt - snd_una) count as sent. False when the socket's mark carries no size (a
 * long-lived flow, or a fixed RACS weight). */
static __always_inline bool fb_remaining(struct bpf_sock_ops *skops, __u32 *rem)
{
	struct bpf_sock *sk = skops->sk;
	__u32 mark = sk ? sk->mark : 0, size;
	__u64 sent;

	if (!(mark & FB_MARK_SIZED))
		return false;
	size = mark & ~FB_MARK_SIZED;
	sent = skops->bytes_acked + (__u32)(skops->snd_nxt - skops->snd_una);
	*rem = size > sent ? size - (__u32)sent : 0;
	return true;
}

/* A sender heard the rate of its path, R bits per second of frames on the wire, as the
 * ports' links count them. TCP's pacing counts the payload of its segments only, so the
 * limit is R x MSS / (MSS + `overhead`), `overhead` being the bytes a segment's frame has
 * beyond its payload (Ethernet 14, IPv4 20, TCP 20 and timestamps 12: 66, and 20 more when it
 * carries the option). (bpf_setsockopt takes SO_MAX_PACING_RATE as an int: bytes per second
 * up to 2^32 - 2, 34 Gbps.) */
static __always_inline void fb_set_rate(struct bpf_sock_ops *skops, struct fb_sock *s, __u32 kbps, __u32 overhead)
{
	__u64 mss = skops->mss_cache ? skops->mss_cache : 1460;
	__u64 bps = (__u64)kbps * 125 * mss / (mss + overhead);
	__u32 rate_Bps = bps > 0xFFFFFFFEULL ? 0xFFFFFFFEU : (__u32)bps;

	s->rate_kbps = kbps;
	s->echoes += 1;
	if (bpf_setsockopt(skops, SOL_SOCKET, SO_MAX_PACING_RATE, &rate_Bps, sizeof(rate_Bps)))
		hcount(HSTAT_PACING_REFUSED);
}

static __always_inline void fb_store(struct bpf_sock_ops *skops, struct fb_option *o)
{
	if (bpf_store_hdr_opt(skops, o, sizeof(*o), 0) == 0)
		hcount(HSTAT_WRITTEN);
}

/* The rate-based congestion control's parts. */
static __always_inline __u32 fb_rate_of(struct sock *sk)
{
	struct fb_sock *s = bpf_sk_storage_get(&fb_sock, sk, 0, 0);

	return s ? s->rate_kbps : 0;
}

static __always_inline void fb_rate_init(struct sock *sk)
{
	sk->sk_pacing_status = SK_PACING_NEEDED;
}

static __always_inline void fb_rate_cong_avoid(struct sock *sk, __u32 ack, __u32 acked)
{
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	__u64 r = fb_rate_of(sk), cwnd;

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

static __always_inline __u32 fb_rate_ssthresh(struct sock *sk)
{
	struct tcp_sock *tp = (struct tcp_sock *)sk;

	if (fb_rate_of(sk) == 0)
		return tcp_reno_ssthresh(sk);
	return tp->snd_cwnd > MIN_CWND ? tp->snd_cwnd : MIN_CWND; /* the rate governs, not losses */
}

/* The sock_ops program of a protocol whose congestion control is `cc` (`len` characters):
 * the role of each of its sockets, and the option callbacks `on_len` (reserve room, or not),
 * `on_write` and `on_parse`. */
#define FB_SOCKOPS_PROGRAM(cc, len, on_len, on_write, on_parse)                  \
	static __always_inline void fb_on_connect(struct bpf_sock_ops *skops)    \
	{                                                                        \
		fb_enable(skops, ROLE_SENDER, cc, len);                          \
	}                                                                        \
	FB_SOCKOPS_PROGRAM_CONNECT(cc, len, fb_on_connect, on_len, on_write, on_parse)

/* The same, with `on_connect` run for the connecting side (it must call fb_enable). */
#define FB_SOCKOPS_PROGRAM_CONNECT(cc, len, on_connect, on_len, on_write, on_parse) \
	SEC("sockops")                                                           \
	int fb_sockops(struct bpf_sock_ops *skops)                               \
	{                                                                        \
		switch (skops->op) {                                             \
		case BPF_SOCK_OPS_TCP_CONNECT_CB:                                \
			on_connect(skops);                                       \
			break;                                                   \
		case BPF_SOCK_OPS_TCP_LISTEN_CB:                                 \
			fb_enable(skops, ROLE_NONE, cc, len);                    \
			break;                                                   \
		case BPF_SOCK_OPS_PASSIVE_ESTABLISHED_CB:                        \
			fb_enable(skops, ROLE_RECEIVER, cc, len);                \
			break;                                                   \
		case BPF_SOCK_OPS_HDR_OPT_LEN_CB:                                \
			on_len(skops);                                           \
			break;                                                   \
		case BPF_SOCK_OPS_WRITE_HDR_OPT_CB:                              \
			on_write(skops);                                         \
			break;                                                   \
		case BPF_SOCK_OPS_PARSE_HDR_OPT_CB:                              \
			on_parse(skops);                                         \
			break;                                                   \
		}                                                                \
		return 1;                                                        \
	}

/* Room for the option on every segment. */
static __always_inline void fb_reserve_always(struct bpf_sock_ops *skops)
{
	bpf_reserve_hdr_opt(skops, FB_LEN, 0);
}

/* A rate-based congestion control `cc_name` (RCP, RACS): the window and pacing limit above,
 * with `avoid` its own cong_avoid (it may hold the window before the first rate). */
#define FB_RATE_CONGESTION_CONTROL(cc_name, avoid)                             \
	SEC("struct_ops")                                                        \
	void BPF_PROG(cc_name##_init, struct sock *sk)                              \
	{                                                                        \
		fb_rate_init(sk);                                                \
	}                                                                        \
	SEC("struct_ops")                                                        \
	__u32 BPF_PROG(cc_name##_ssthresh, struct sock *sk)                         \
	{                                                                        \
		return fb_rate_ssthresh(sk);                                     \
	}                                                                        \
	SEC("struct_ops")                                                        \
	__u32 BPF_PROG(cc_name##_undo_cwnd, struct sock *sk)                        \
	{                                                                        \
		return tcp_reno_undo_cwnd(sk);                                   \
	}                                                                        \
	SEC(".struct_ops")                                                       \
	struct tcp_congestion_ops cc_name = {                                       \
		.init = (void *)cc_name##_init,                                     \
		.ssthresh = (void *)cc_name##_ssthresh,                             \
		.cong_avoid = (void *)avoid,                                \
		.undo_cwnd = (void *)cc_name##_undo_cwnd,                           \
		.name = #cc_name,                                                   \
	};

#endif
