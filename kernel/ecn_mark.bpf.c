// SPDX-License-Identifier: GPL-2.0
/*
 * DCTCP-style ECN threshold marking for the namespace testbed, as a tc (clsact egress)
 * BPF classifier.
 *
 * The kernels the testbed targets may have TBF and HTB but no RED, CoDel or fq_codel, so
 * a switch port that marks CE above a queue threshold K is built from two pieces: the
 * port's TBF queue (rate and buffer), and this program on the same device's egress hook.
 * The hook runs just before the packet is handed to the root qdisc, so the queue the
 * program reads is the one the packet is about to join. A packet is marked when that
 * queue already holds K packets (or K bytes) or more: the simulator's `queue = "ecn"`
 * rule (crates/net/src/queue.rs). Packets that are not ECN-capable are left alone
 * (bpf_skb_ecn_set_ce only marks ECT packets), as in the simulator.
 *
 * The queue length is read from the device's root qdisc (its `q.qlen` and
 * `qstats.backlog`, which TBF keeps for its whole backlog) through the kernel socket
 * buffer that bpf_cast_to_kern_ctx returns. Thresholds live in .rodata (`ecn_params`),
 * written into a copy of the object before `tc` loads it (python/fctlab/testbed/ecn.py),
 * one copy per port. The program never redirects, and drops only with `limit_bytes`.
 *
 * A GSO packet counts as one packet of skb->len bytes when the queue is read, and a mark
 * on it is copied to every segment; the testbed turns GSO/TSO off on its veths so the
 * queue sees wire-sized packets.
 *
 * A strict-priority port (python/fctlab/testbed/priority.py) is an HTB whose classes each
 * hold a queue of their own; its buffer is shared by all classes, as the simulator's
 * `queue = "priority"` shares the port's buffer. With `limit_bytes` set, this program is
 * that shared buffer: a packet that would take the root's backlog above `limit_bytes` is
 * dropped (TC_ACT_SHOT), whatever its class. The HTB root keeps `q.qlen` and
 * `qstats.backlog` for all of its classes together, so marking on it is per-port marking.
 *
 * Counters (seen, marked, over the threshold but not ECN-capable, dropped) are kept in a
 * per-CPU array map `ecn_stats` and read back with bpftool after a run.
 *
 * Requires Linux >= 6.3 (bpf_cast_to_kern_ctx) and a kernel with BTF.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

char _license[] SEC("license") = "GPL";

#define TC_ACT_OK 0
#define TC_ACT_SHOT 2

/* Mirrored by python/fctlab/testbed/ecn.py (PARAMS_FORMAT); keep them in step. */
struct ecn_params {
	__u32 threshold_pkts;  /* mark when the queue holds >= this many packets (0 = unused) */
	__u32 limit_bytes;     /* drop when the queue would exceed this many bytes (0 = unused) */
	__u64 threshold_bytes; /* mark when the queue holds >= this many bytes (0 = unused) */
};

const volatile struct ecn_params ecn_params = {
	.threshold_pkts = 20,
	.limit_bytes = 0,
	.threshold_bytes = 0,
};

enum { STAT_SEEN, STAT_MARKED, STAT_NOT_ECT, STAT_DROPPED, STAT_N };

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, STAT_N);
	__type(key, __u32);
	__type(value, __u64);
} ecn_stats SEC(".maps");

extern void *bpf_cast_to_kern_ctx(void *obj) __ksym;

static __always_inline void count(__u32 which)
{
	__u64 *v = bpf_map_lookup_elem(&ecn_stats, &which);

	if (v)
		*v += 1;
}

SEC("tc")
int ecn_mark(struct __sk_buff *ctx)
{
	struct sk_buff *skb = bpf_cast_to_kern_ctx(ctx);
	struct net_device *dev;
	struct Qdisc *q;
	__u32 qlen, backlog;
	bool over;

	count(STAT_SEEN);
	dev = skb->dev;
	if (!dev)
		return TC_ACT_OK;
	q = BPF_CORE_READ(dev, qdisc);
	if (!q)
		return TC_ACT_OK;
	qlen = BPF_CORE_READ(q, q.qlen);
	backlog = BPF_CORE_READ(q, qstats.backlog);
	if (ecn_params.limit_bytes && (__u64)backlog + ctx->len > ecn_params.limit_bytes) {
		count(STAT_DROPPED);
		return TC_ACT_SHOT;
	}
	over = (ecn_params.threshold_pkts && qlen >= ecn_params.threshold_pkts) ||
	       (ecn_params.threshold_bytes && backlog >= ecn_params.threshold_bytes);
	if (!over)
		return TC_ACT_OK;
	if (bpf_skb_ecn_set_ce(ctx))
		count(STAT_MARKED);
	else
		count(STAT_NOT_ECT);
	return TC_ACT_OK;
}
