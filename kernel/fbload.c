// SPDX-License-Identifier: GPL-2.0
/*
 * Loader of a host program object for the namespace testbed (kernel/rcp_host.bpf.c): loads
 * the object with libbpf, registers each of its struct_ops maps (congestion controls) and
 * attaches each sock_ops program to a cgroup, prints "ready" and holds them until its
 * standard input closes (also when its parent dies) or it gets SIGTERM or SIGINT; then it
 * detaches the programs and unregisters the congestion controls, and prints the counters.
 * Nothing is pinned: the sock_ops program goes with this process however it ends; a
 * congestion control registered through a struct_ops map (libbpf before 1.2 has no struct_ops
 * links) stays registered if this process is killed outright, and `fctlab kernel unload`
 * removes it. An unregistered one lives on, unselectable, while sockets still use it.
 *
 *   fctlab-fbload OBJECT.bpf.o CGROUP_DIR
 *
 * Errors go to standard error, the verifier's log included, with exit status 1. Compiled on
 * first use by python/fctlab/testbed/hostprog.py with -lbpf.
 */
#include <bpf/libbpf.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define MAX_LINKS 16

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static int print(enum libbpf_print_level level, const char *fmt, va_list args)
{
	if (level == LIBBPF_DEBUG)
		return 0;
	return vfprintf(stderr, fmt, args);
}

/* Each per-CPU array of the object, summed over CPUs, as one JSON line:
 * {"MAP": [v0, v1, ...], ...}. */
static void print_counters(struct bpf_object *obj)
{
	struct bpf_map *map;
	int ncpu = libbpf_num_possible_cpus(), first = 1;
	unsigned long long vals[256];

	if (ncpu <= 0 || ncpu > 256)
		return;
	printf("{");
	bpf_object__for_each_map(map, obj) {
		if (bpf_map__type(map) != BPF_MAP_TYPE_PERCPU_ARRAY || bpf_map__value_size(map) != 8)
			continue;
		printf("%s\"%s\": [", first ? "" : ", ", bpf_map__name(map));
		first = 0;
		for (unsigned int k = 0; k < bpf_map__max_entries(map); k++) {
			unsigned long long sum = 0;

			if (bpf_map__lookup_elem(map, &k, sizeof(k), vals, 8 * ncpu, 0) == 0)
				for (int c = 0; c < ncpu; c++)
					sum += vals[c];
			printf("%s%llu", k ? ", " : "", sum);
		}
		printf("]");
	}
	printf("}\n");
	fflush(stdout);
}

int main(int argc, char **argv)
{
	struct bpf_link *links[MAX_LINKS];
	struct bpf_object *obj;
	struct bpf_program *prog;
	struct bpf_map *map;
	int n = 0, cg, err, rc = 1;
	struct sigaction sa = { .sa_handler = on_signal };

	if (argc != 3) {
		fprintf(stderr, "usage: %s OBJECT.bpf.o CGROUP_DIR\n", argv[0]);
		return 2;
	}
	libbpf_set_print(print);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN); /* a parent gone: its pipes closed, the cleanup still runs */
	cg = open(argv[2], O_RDONLY | O_DIRECTORY);
	if (cg < 0) {
		fprintf(stderr, "error: cgroup %s: %s\n", argv[2], strerror(errno));
		return 1;
	}
	obj = bpf_object__open_file(argv[1], NULL);
	if (!obj) {
		fprintf(stderr, "error: opening %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	err = bpf_object__load(obj);
	if (err) {
		fprintf(stderr, "error: loading %s: %s\n", argv[1], strerror(-err));
		goto out;
	}
	bpf_object__for_each_map(map, obj) {
		if (bpf_map__type(map) != BPF_MAP_TYPE_STRUCT_OPS || n == MAX_LINKS)
			continue;
		links[n] = bpf_map__attach_struct_ops(map);
		if (!links[n]) {
			fprintf(stderr, "error: registering %s: %s\n", bpf_map__name(map), strerror(errno));
			goto out;
		}
		n++;
	}
	bpf_object__for_each_program(prog, obj) {
		if (bpf_program__type(prog) != BPF_PROG_TYPE_SOCK_OPS || n == MAX_LINKS)
			continue;
		links[n] = bpf_program__attach_cgroup(prog, cg);
		if (!links[n]) {
			fprintf(stderr, "error: attaching %s to %s: %s\n", bpf_program__name(prog), argv[2],
				strerror(errno));
			goto out;
		}
		n++;
	}
	printf("ready\n");
	fflush(stdout);
	while (!stop) {
		struct pollfd p = { .fd = 0, .events = POLLIN };
		char buf[64];

		if (poll(&p, 1, 200) > 0 && read(0, buf, sizeof(buf)) <= 0)
			break; /* standard input closed: the testbed is done */
	}
	rc = 0;
out:
	/* unregister and detach first: printing may fail if the parent is gone */
	while (n > 0)
		bpf_link__destroy(links[--n]);
	if (rc == 0)
		print_counters(obj);
	bpf_object__close(obj);
	close(cg);
	return rc;
}
