/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The router feedback header of RCP, RACS and SDC as a TCP option, for the namespace testbed:
 * the fields the simulator's router header carries (crates/transport/src/cc/rcp.rs,
 * `RcpHeader`, and its RACS and SDC counterparts) in one fixed-size experimental option
 * (RFC 6994: kind 253 with a 16-bit experiment id), 20 bytes:
 *
 *   offset  size  field
 *        0     1  kind = 253
 *        1     1  length = 20
 *        2     2  experiment id = 0xFC7A
 *        4     1  protocol (FB_PROTO_RCP, FB_PROTO_RACS, FB_PROTO_SDC)
 *        5     1  flags: FB_FLAG_ECHO on a receiver's ACK carrying the feedback back
 *        6     2  aux: RACS's request weight w_c (x 256), or on an echo the interval t_trans
 *                 (us); SDC's class (0 for RCP)
 *        8     4  rtt_ns: the sender's smoothed RTT, ns (0: not measured yet)
 *       12     4  rate_kbps: the lowest rate offered along the path, kbit/s; each port lowers
 *                 it to its own (the sender writes FB_NO_RATE_YET)
 *       16     4  echo_kbps: on an echo, the rate_kbps the data segment arrived with. On a
 *                 RACS request instead: the previous request's weight w_p (x 256, 2 bytes)
 *                 and the smallest interval t_trans along the path (us, 2 bytes; ports
 *                 lower it; the sender writes FB_NO_INTERVAL_YET)
 *
 * SDC uses the fields so: forward, aux = class << 8 | the class last counted (A = 3, B = 2,
 * C = 1, 0 none), rate_kbps = the largest load factor along the path (16.16 fixed point;
 * ports raise it), byte 19 = the highest active class along the path (ports raise it); on an
 * echo, echo_kbps = the load factor and aux = the highest class the data segment arrived
 * with.
 *
 * Multi-byte fields are in network byte order. Every 4-byte field starts 4-aligned within
 * the option, and the kernel places BPF-written options after its own, which it pads to a
 * multiple of 4, so a port can rewrite rate_kbps with a 16-bit-aligned checksum update.
 * Shared by the switch-port programs (kernel/rcp_port.bpf.c) and the hosts' programs; the
 * Python mirror is python/fctlab/testbed/feedback.py (keep them in step).
 */
#ifndef FCTLAB_FB_OPTION_H
#define FCTLAB_FB_OPTION_H

#define FB_KIND 253
#define FB_LEN 20
#define FB_EXID 0xFC7A
#define FB_PROTO_RCP 1
#define FB_PROTO_RACS 2
#define FB_PROTO_SDC 3
#define FB_FLAG_ECHO 0x01
#define FB_NO_RATE_YET 0xFFFFFFFFU
#define FB_NO_INTERVAL_YET 0xFFFFU

#define FB_OFF_PROTO 4
#define FB_OFF_FLAGS 5
#define FB_OFF_AUX 6
#define FB_OFF_RTT 8
#define FB_OFF_RATE 12
#define FB_OFF_ECHO 16
#define FB_OFF_PREV_WEIGHT 16 /* RACS requests */
#define FB_OFF_INTERVAL 18    /* RACS requests */
#define FB_OFF_LOAD 12        /* SDC: the load factor, 16.16 */
#define FB_OFF_TOP 18         /* SDC: the 16-bit word whose low byte is the highest class */

struct fb_option {
	__u8 kind;
	__u8 len;
	__be16 exid;
	__u8 proto;
	__u8 flags;
	__be16 aux;
	__be32 rtt_ns;
	__be32 rate_kbps;
	__be32 echo_kbps;
} __attribute__((packed));

#endif
