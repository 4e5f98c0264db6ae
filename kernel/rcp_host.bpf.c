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
#include "fb_host.h"

char _license[] SEC("license") = "GPL";

#define RCP_CC "fctlab_rcp"
#define RCP_CC_LEN 10

static __always_inline void on_parse(struct bpf_sock_ops *skops)
{
	struct fb_option o;
	struct fb_sock *s;
	__u32 r;

	s = fb_parsed(skops, &o, FB_PROTO_RCP);
	if (!s)
		return;
	if (s->role == ROLE_RECEIVER && !(o.flags & FB_FLAG_ECHO)) {
		s->fwd_kbps = bpf_ntohl(o.rate_kbps);
	} else if (s->role == ROLE_SENDER && (o.flags & FB_FLAG_ECHO)) {
		r = bpf_ntohl(o.echo_kbps);
		if (r != 0 && r != FB_NO_RATE_YET) /* else no port stamped it: keep what we have */
			fb_set_rate(skops, s, r, FRAME_OVERHEAD + FB_LEN); /* every segment has the option */
	}
}

static __always_inline void on_write(struct bpf_sock_ops *skops)
{
	struct fb_option o = {}, syn;
	struct fb_sock *s = fb_state(skops);
	bool synack = (skops->skb_tcp_flags & (TCPHDR_SYN | TCPHDR_ACK)) == (TCPHDR_SYN | TCPHDR_ACK);

	o.kind = FB_KIND;
	o.len = FB_LEN;
	o.exid = bpf_htons(FB_EXID);
	o.proto = FB_PROTO_RCP;
	o.rate_kbps = bpf_htonl(FB_NO_RATE_YET);
	if (synack) { /* the listener answers a SYN: echo the SYN's rate */
		o.flags = FB_FLAG_ECHO;
		if (fb_load_option(skops, &syn, BPF_LOAD_HDR_OPT_TCP_SYN, FB_PROTO_RCP) == 1)
			o.echo_kbps = syn.rate_kbps;
	} else if (s && s->role == ROLE_RECEIVER) {
		o.flags = FB_FLAG_ECHO;
		o.echo_kbps = bpf_htonl(s->fwd_kbps);
	} else {
		o.rtt_ns = bpf_htonl((skops->srtt_us >> 3) * 1000);
	}
	fb_store(skops, &o);
}

FB_SOCKOPS_PROGRAM(RCP_CC, RCP_CC_LEN, fb_reserve_always, on_write, on_parse)

SEC("struct_ops")
void BPF_PROG(fctlab_rcp_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	fb_rate_cong_avoid(sk, ack, acked);
}

FB_RATE_CONGESTION_CONTROL(fctlab_rcp, fctlab_rcp_cong_avoid)
