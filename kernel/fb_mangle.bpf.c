// SPDX-License-Identifier: GPL-2.0
/*
 * A test tool, not part of any protocol: a tc (clsact egress) classifier that corrupts the
 * feedback option (kernel/fb_option.h) of RCP, RACS or SDC on the packets through a port,
 * writing protocol number 0xEE over the option's protocol byte (the TCP checksum fixed).
 * tests/python/test_testbed_rcp.py puts it on switch ports to check that hosts that receive
 * a malformed option count it and keep their flows going (python/fctlab/testbed/feedback.py,
 * Mangler).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_core_read.h>
#include "fb_option.h"
#include "fb_port.h"

char _license[] SEC("license") = "GPL";

#define MANGLED_PROTO 0xEE

SEC("tc")
int fb_mangle(struct __sk_buff *ctx)
{
	struct fb_segment f = { .proto = FB_PROTO_RCP };
	__u16 word;
	int at;

	for (__u32 proto = FB_PROTO_RCP; proto <= FB_PROTO_SDC; proto++) {
		f.proto = proto;
		at = fb_find(ctx, &f);
		if (at >= 0)
			break;
	}
	if (at < 0)
		return TC_ACT_UNSPEC;
	word = be16_at(f.opt, (at & 31) + FB_OFF_PROTO);
	fb_rewrite16(ctx, &f, at & 31, FB_OFF_PROTO, word, (MANGLED_PROTO << 8) | (word & 0xFF));
	count(STAT_LOWERED);
	return TC_ACT_UNSPEC;
}
