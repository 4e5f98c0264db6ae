// SPDX-License-Identifier: MIT
/*
 * fctlab delay line: forwards Ethernet frames between two interfaces of one network
 * namespace, each frame leaving `delay` nanoseconds after it arrived, in arrival order.
 *
 *   fctlab-delayline NETNS DEV_A DEV_B DELAY_NS
 *
 * The testbed's kernels have no netem, so a link's propagation delay is emulated here: the
 * node in the middle of the link owns two veths, and this program reads every frame that
 * arrives on one (AF_PACKET) and sends it out of the other once its time has come. Frames
 * are read and written with their virtio-net header (PACKET_VNET_HDR), which carries the
 * checksum-offload state: a TCP segment whose checksum the sender left to the (virtual)
 * hardware keeps that state instead of leaving with a wrong checksum.
 *
 * Each direction has a FIFO (a byte ring of RING_BYTES). A frame that does not fit is
 * dropped and counted. The program prints "ready" once its sockets are bound, runs until
 * SIGTERM or SIGINT (or its parent dies), and then prints one JSON line with its counters:
 * frames forwarded per direction, frames dropped, and the largest lateness of a frame past
 * its due time (timer and scheduling latency).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define RING_BYTES (32u << 20) /* per direction: 32 MB, 250 ms at 1 Gbps */
#define MAX_FRAME (65536 + 64) /* a frame with its virtio-net header */

struct rec {
	uint64_t due_ns;
	uint32_t len;  /* 0: wrap marker, the next record starts at offset 0 */
	uint32_t pad;
	unsigned char data[];
};

struct ring {
	unsigned char *buf;
	size_t head, tail; /* bytes: records live in [head, tail) modulo the wrap marker */
	size_t used;
};

struct dir {
	int in, out;
	const char *name;
	struct ring q;
	uint64_t forwarded, dropped;
};

static volatile sig_atomic_t stopping;

static void on_signal(int sig)
{
	(void)sig;
	stopping = 1;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static size_t rec_size(uint32_t len)
{
	return (sizeof(struct rec) + len + 7) & ~(size_t)7;
}

/* Space for a record of `len` bytes at the tail, wrapping if needed; NULL when full. */
static struct rec *ring_reserve(struct ring *r, uint32_t len)
{
	size_t need = rec_size(len);

	if (r->used + need > RING_BYTES)
		return NULL;
	if (r->tail >= r->head && r->used > 0) {
		if (RING_BYTES - r->tail >= need)
			return (struct rec *)(r->buf + r->tail);
		if (r->head >= need) { /* wrap: mark the end and start again at 0 */
			if (RING_BYTES - r->tail >= sizeof(struct rec))
				((struct rec *)(r->buf + r->tail))->len = 0;
			r->used += RING_BYTES - r->tail;
			r->tail = 0;
			return (struct rec *)r->buf;
		}
		return NULL;
	}
	if (r->used == 0) {
		r->head = r->tail = 0;
		return need <= RING_BYTES ? (struct rec *)r->buf : NULL;
	}
	return r->head - r->tail >= need ? (struct rec *)(r->buf + r->tail) : NULL;
}

static void ring_commit(struct ring *r, uint32_t len)
{
	size_t n = rec_size(len);

	r->tail += n;
	r->used += n;
}

static struct rec *ring_front(struct ring *r)
{
	struct rec *x;

	if (r->used == 0)
		return NULL;
	if (RING_BYTES - r->head < sizeof(struct rec) || ((struct rec *)(r->buf + r->head))->len == 0) {
		r->used -= RING_BYTES - r->head;
		r->head = 0;
		if (r->used == 0)
			return NULL;
	}
	x = (struct rec *)(r->buf + r->head);
	return x;
}

static void ring_pop(struct ring *r)
{
	size_t n = rec_size(((struct rec *)(r->buf + r->head))->len);

	r->head += n;
	r->used -= n;
	if (r->used == 0)
		r->head = r->tail = 0;
}

static int open_dev(const char *dev)
{
	struct sockaddr_ll sll = { 0 };
	int one = 1, buf = 8 << 20;
	int fd = socket(AF_PACKET, SOCK_RAW | SOCK_NONBLOCK, htons(ETH_P_ALL));

	if (fd < 0)
		return -1;
	if (setsockopt(fd, SOL_PACKET, PACKET_VNET_HDR, &one, sizeof(one)) < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &buf, sizeof(buf));
	setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &buf, sizeof(buf));
	sll.sll_family = AF_PACKET;
	sll.sll_protocol = htons(ETH_P_ALL);
	sll.sll_ifindex = (int)if_nametoindex(dev);
	if (sll.sll_ifindex == 0 || bind(fd, (struct sockaddr *)&sll, sizeof(sll)) < 0)
		return -1;
	return fd;
}

static void drain(struct dir *d, uint64_t delay_ns)
{
	for (;;) {
		struct sockaddr_ll from;
		socklen_t fl = sizeof(from);
		struct rec *x = ring_reserve(&d->q, MAX_FRAME);
		static unsigned char scratch[MAX_FRAME];
		unsigned char *dst = x ? x->data : scratch;
		ssize_t n = recvfrom(d->in, dst, MAX_FRAME, 0, (struct sockaddr *)&from, &fl);

		if (n < 0)
			return; /* EAGAIN or an error: nothing more now */
		if (from.sll_pkttype == PACKET_OUTGOING)
			continue; /* our own transmission on this device */
		if (!x) {
			d->dropped++;
			continue;
		}
		x->due_ns = now_ns() + delay_ns;
		x->len = (uint32_t)n;
		ring_commit(&d->q, (uint32_t)n);
	}
}

static uint64_t send_due(struct dir *d, uint64_t now, uint64_t *late_max)
{
	struct rec *x;

	while ((x = ring_front(&d->q)) != NULL) {
		if (x->due_ns > now)
			return x->due_ns;
		if (now - x->due_ns > *late_max)
			*late_max = now - x->due_ns;
		if (send(d->out, x->data, x->len, MSG_DONTWAIT) < 0)
			d->dropped++;
		else
			d->forwarded++;
		ring_pop(&d->q);
	}
	return UINT64_MAX;
}

int main(int argc, char **argv)
{
	struct dir d[2];
	struct sigaction sa = { 0 };
	sigset_t block, orig;
	uint64_t delay_ns, late_max = 0;
	char path[512];
	int nsfd, i;

	if (argc != 5) {
		fprintf(stderr, "usage: %s NETNS DEV_A DEV_B DELAY_NS\n", argv[0]);
		return 2;
	}
	delay_ns = strtoull(argv[4], NULL, 10);
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	prctl(PR_SET_TIMERSLACK, 1UL);
	{
		/* Best effort: a real-time priority keeps scheduling latency out of the delay
		 * (the program sleeps between frames and needs little CPU). */
		struct sched_param sp = { .sched_priority = 10 };

		sched_setscheduler(0, SCHED_FIFO, &sp);
	}
	snprintf(path, sizeof(path), "/run/netns/%s", argv[1]);
	nsfd = open(path, O_RDONLY | O_CLOEXEC);
	if (nsfd < 0 || setns(nsfd, CLONE_NEWNET) < 0) {
		printf("{\"error\": \"cannot enter namespace %s: %s\"}\n", argv[1], strerror(errno));
		return 1;
	}
	close(nsfd);
	for (i = 0; i < 2; i++) {
		const char *in = argv[2 + i], *out = argv[3 - i];

		d[i].name = in;
		d[i].in = open_dev(in);
		d[i].out = -1;
		d[i].forwarded = d[i].dropped = 0;
		d[i].q.buf = malloc(RING_BYTES);
		d[i].q.head = d[i].q.tail = d[i].q.used = 0;
		if (d[i].in < 0 || !d[i].q.buf) {
			printf("{\"error\": \"cannot open %s: %s\"}\n", in, strerror(errno));
			return 1;
		}
		(void)out;
	}
	d[0].out = d[1].in; /* frames from A leave on B, and back */
	d[1].out = d[0].in;

	sigemptyset(&block);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGINT);
	sigprocmask(SIG_BLOCK, &block, &orig);
	sa.sa_handler = on_signal;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	printf("ready\n");
	fflush(stdout);

	while (!stopping) {
		struct pollfd p[2] = { { d[0].in, POLLIN, 0 }, { d[1].in, POLLIN, 0 } };
		uint64_t now = now_ns(), next = UINT64_MAX, t;
		struct timespec ts;

		for (i = 0; i < 2; i++) {
			t = send_due(&d[i], now, &late_max);
			if (t < next)
				next = t;
		}
		if (next == UINT64_MAX)
			next = now + 100000000ull; /* idle: wake up every 100 ms */
		t = next > now ? next - now : 0;
		ts.tv_sec = (time_t)(t / 1000000000ull);
		ts.tv_nsec = (long)(t % 1000000000ull);
		if (ppoll(p, 2, &ts, &orig) < 0 && errno != EINTR)
			break;
		for (i = 0; i < 2; i++)
			if (p[i].revents & POLLIN)
				drain(&d[i], delay_ns);
	}
	printf("{\"forwarded_from\": {\"%s\": %llu, \"%s\": %llu}, \"drops\": %llu, \"late_max_s\": %.6f}\n",
	       d[0].name, (unsigned long long)d[0].forwarded, d[1].name, (unsigned long long)d[1].forwarded,
	       (unsigned long long)(d[0].dropped + d[1].dropped), late_max / 1e9);
	return 0;
}
