// SPDX-License-Identifier: GPL-2.0
/*
 * PIAS's sender side for the namespace testbed: a tc (clsact egress) BPF classifier on a
 * sending host's interface that tags every TCP data segment with a priority band by the
 * bytes its connection has sent before it, in the IPv4 DSCP field.
 *
 * This is the simulator's `protocol = "pias"` tagging (crates/transport/src/cc/pias.rs,
 * `band_of`): band 0 below the first demotion threshold, band 1 below the second, and so on.
 * The offset of a segment is its sequence number minus the connection's first data
 * sequence number (the SYN's plus one, or, for a connection whose SYN was not seen, the
 * first data segment's), so a retransmission keeps the band of the bytes it carries. A
 * connection is known by its socket cookie; the wrap of the 32-bit sequence space is
 * followed, so flows of more than 4 GiB keep being demoted.
 *
 * The band is written as DSCP = band (TOS byte band << 2), keeping the two ECN bits, with
 * the IPv4 header checksum updated. Segments without payload (SYN, pure ACKs, FIN) keep
 * DSCP 0, band 0, as the simulator sends ACKs in band 0. Packets that are not IPv4 TCP
 * from a local socket are left alone. The switch ports classify on DSCP
 * (python/fctlab/testbed/priority.py). The program never drops or redirects: it returns
 * TC_ACT_UNSPEC, so a filter after it on the same hook (the port's marker and buffer)
 * still runs.
 *
 * The thresholds live in .rodata (`pias_params`), written into a copy of the object before
 * `tc` loads it (python/fctlab/testbed/pias.py). Counters per band are kept in the per-CPU
 * array `pias_stats`.
 *
 * Requires a kernel with BTF (vmlinux.h) and bpf_get_socket_cookie for tc programs.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

char _license[] SEC("license") = "GPL";

#define TC_ACT_UNSPEC (-1) /* go on to the next filter (the port's own program), or send */
#define ETH_HLEN 14
#define ETH_P_IP 0x0800
#define IPPROTO_TCP_ 6
#define MAX_THRESHOLDS 7
#define NBANDS (MAX_THRESHOLDS + 1)
#define IP_CSUM_OFF (ETH_HLEN + 10) /* offsetof(struct iphdr, check) */
#define IP_TOS_OFF (ETH_HLEN + 1)

/* Mirrored by python/fctlab/testbed/pias.py (PARAMS_FORMAT); keep them in step. */
struct pias_params {
	__u32 n_thresholds;   /* how many of `thresholds` are used (0-7) */
	__u32 unused;
	__u64 thresholds[MAX_THRESHOLDS]; /* ascending, bytes */
};

const volatile struct pias_params pias_params = {
	.n_thresholds = 0,
};

/* Per connection: the sequence number of its first data byte and the highest byte offset
 * sent so far (64 bits, across wraps of the sequence space). */
struct pias_flow {
	__u32 first_seq;
	__u32 unused;
	__u64 highest;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64); /* socket cookie */
	__type(value, struct pias_flow);
} pias_flows SEC(".maps");

/* Keys 0-7: data segments sent in that band; 8: segments without payload; 9: packets left
 * alone (not IPv4 TCP, or no socket). */
enum { STAT_NO_PAYLOAD = NBANDS, STAT_SKIPPED, STAT_N };

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, STAT_N);
	__type(key, __u32);
	__type(value, __u64);
} pias_stats SEC(".maps");

static __always_inline void count(__u32 which)
{
	__u64 *v = bpf_map_lookup_elem(&pias_stats, &which);

	if (v)
		*v += 1;
}

static __always_inline __u32 band_of(__u64 offset)
{
	__u32 band = 0;

#pragma unroll
	for (int i = 0; i < MAX_THRESHOLDS; i++) {
		if (i < pias_params.n_thresholds && offset >= pias_params.thresholds[i])
			band = i + 1;
	}
	return band;
}

/* The connection's byte offset of a data segment starting at `seq`: of the offsets that
 * agree with `seq` modulo 2^32, the one nearest the highest sent so far (a retransmission
 * lies a little below it, new data a little above). A SYN records where the data starts and
 * returns -1. */
static __always_inline __s64 offset_of(__u64 cookie, __u32 seq, bool syn)
{
	struct pias_flow *f = bpf_map_lookup_elem(&pias_flows, &cookie);
	struct pias_flow fresh = {};
	__u64 at;

	if (syn || !f) {
		fresh.first_seq = syn ? seq + 1 : seq;
		bpf_map_update_elem(&pias_flows, &cookie, &fresh, BPF_ANY);
		return syn ? -1 : 0;
	}
	at = (f->highest & ~0xffffffffULL) | (__u32)(seq - f->first_seq);
	if (at > f->highest + (1ULL << 31) && at >= (1ULL << 32))
		at -= 1ULL << 32;
	else if (at + (1ULL << 31) < f->highest)
		at += 1ULL << 32;
	if (at > f->highest)
		f->highest = at;
	return (__s64)at;
}

SEC("tc")
int pias_tag(struct __sk_buff *skb)
{
	struct iphdr ip;
	struct tcphdr tcp;
	__u32 ihl, doff, payload, band;
	__u64 cookie;
	__s64 offset;
	__u8 tos;
	__u16 old_word, new_word;

	if (skb->protocol != bpf_htons(ETH_P_IP) ||
	    bpf_skb_load_bytes(skb, ETH_HLEN, &ip, sizeof(ip)) < 0 || ip.protocol != IPPROTO_TCP_) {
		count(STAT_SKIPPED);
		return TC_ACT_UNSPEC;
	}
	ihl = ip.ihl * 4;
	if (ihl < sizeof(ip) || bpf_skb_load_bytes(skb, ETH_HLEN + ihl, &tcp, sizeof(tcp)) < 0) {
		count(STAT_SKIPPED);
		return TC_ACT_UNSPEC;
	}
	cookie = bpf_get_socket_cookie(skb);
	if (!cookie) {
		count(STAT_SKIPPED);
		return TC_ACT_UNSPEC;
	}
	doff = tcp.doff * 4;
	payload = bpf_ntohs(ip.tot_len);
	payload = payload > ihl + doff ? payload - ihl - doff : 0;
	offset = offset_of(cookie, bpf_ntohl(tcp.seq), tcp.syn);
	if (payload == 0 || offset < 0) {
		count(STAT_NO_PAYLOAD);
		return TC_ACT_UNSPEC;
	}
	band = band_of((__u64)offset);
	count(band);
	tos = (__u8)(band << 2) | (ip.tos & 3);
	if (tos == ip.tos)
		return TC_ACT_UNSPEC;
	/* the TOS byte is the low byte of the header's first 16-bit word (version, ihl, tos) */
	old_word = bpf_htons(((__u16)(*(__u8 *)&ip) << 8) | ip.tos);
	new_word = bpf_htons(((__u16)(*(__u8 *)&ip) << 8) | tos);
	bpf_l3_csum_replace(skb, IP_CSUM_OFF, old_word, new_word, 2);
	bpf_skb_store_bytes(skb, IP_TOS_OFF, &tos, 1, 0);
	return TC_ACT_UNSPEC;
}
