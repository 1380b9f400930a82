/*
 * cpgflood — a flood client for corosync's CPG, the anchor of
 * scripts/bench-mcast.sh: it joins a CPG group, multicasts COUNT messages
 * of SIZE bytes in agreed order (CPG_TYPE_AGREED) as fast as corosync
 * takes them (or RATE per second), delivers everyone's, and prints one
 * line in the form of 'mcast bench': delivered messages per second and
 * the latency of every message it delivers (delivery time minus send
 * time), as mcast bench counts it.
 *
 *   cpgflood GROUP MEMBERS COUNT SIZE [RATE [spin]]
 *
 * It waits until the group has MEMBERS members before it sends, and ends
 * once it has delivered MEMBERS * COUNT messages.
 *
 * At a RATE, between two sends it waits in ppoll(2) on the CPG descriptor
 * until the next send is due, and dispatches what came: an event loop, as
 * a CPG client such as pacemaker's runs (and as mcast bench waits in Go's
 * netpoller), so that a delivery costs the client a wake-up. With "spin"
 * it calls cpg_dispatch(CS_DISPATCH_ALL), which does not block, in a loop
 * until the send is due: every client then keeps a CPU busy and sees a
 * delivery without a wake-up (on a 2-core host at 3, 5 and 9 clients, both
 * CPUs are busy for the whole run). Before "spin" was an option that was
 * the only way it waited.
 */
#define _GNU_SOURCE
#include <corosync/cpg.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint32_t members_now;
static uint64_t delivered, first_ns, last_ns, *lat;
static size_t nlat, maxlat;

static void on_deliver(cpg_handle_t h, const struct cpg_name *g, uint32_t nodeid, uint32_t pid, void *msg, size_t len) {
	(void)h; (void)g;
	uint64_t t = now_ns();
	if (delivered++ == 0) first_ns = t;
	last_ns = t;
	/* Every delivery's latency, as mcast bench counts it: each client
	 * stamps its messages with CLOCK_MONOTONIC, one clock for every
	 * process of the host. */
	(void)nodeid; (void)pid;
	if (len >= 16 && nlat < maxlat) {
		uint64_t sent;
		memcpy(&sent, (char *)msg + 8, 8);
		lat[nlat++] = t - sent;
	}
}

static void on_confchg(cpg_handle_t h, const struct cpg_name *g, const struct cpg_address *m, size_t n,
		       const struct cpg_address *l, size_t nl, const struct cpg_address *j, size_t nj) {
	(void)h; (void)g; (void)m; (void)l; (void)nl; (void)j; (void)nj;
	members_now = (uint32_t)n;
}

static int cmp(const void *a, const void *b) {
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
	if (argc < 5) {
		fprintf(stderr, "usage: cpgflood GROUP MEMBERS COUNT SIZE [RATE [spin]]\n");
		return 64;
	}
	uint32_t want = (uint32_t)atoi(argv[2]);
	uint64_t count = strtoull(argv[3], 0, 10), rate = argc > 5 ? strtoull(argv[5], 0, 10) : 0;
	size_t size = (size_t)atoi(argv[4]);
	int spin = argc > 6 && strcmp(argv[6], "spin") == 0;
	if (size < 16) size = 16;
	maxlat = (size_t)want * count;
	lat = calloc(maxlat, sizeof *lat);
	cpg_callbacks_t cb = {.cpg_deliver_fn = on_deliver, .cpg_confchg_fn = on_confchg};
	cpg_handle_t h;
	if (cpg_initialize(&h, &cb) != CS_OK) {
		fprintf(stderr, "cpgflood: cannot reach corosync\n");
		return 69;
	}
	struct cpg_name name;
	name.length = (uint32_t)strlen(argv[1]);
	memcpy(name.value, argv[1], name.length);
	if (cpg_join(h, &name) != CS_OK) {
		fprintf(stderr, "cpgflood: cannot join %s\n", argv[1]);
		return 69;
	}
	int fd;
	cpg_fd_get(h, &fd);
	while (members_now < want) cpg_dispatch(h, CS_DISPATCH_ONE);
	char *buf = calloc(1, size);
	memset(buf + 16, 'a', size - 16);
	uint64_t start = now_ns(), gap = rate ? 1000000000u / rate : 0;
	for (uint64_t seq = 1; seq <= count;) {
		if (gap) {
			uint64_t at = start + (seq - 1) * gap;
			for (uint64_t now; (now = now_ns()) < at;) {
				if (spin) {
					cpg_dispatch(h, CS_DISPATCH_ALL);
					continue;
				}
				struct timespec ts = {.tv_sec = (time_t)((at - now) / 1000000000u), .tv_nsec = (long)((at - now) % 1000000000u)};
				struct pollfd p = {.fd = fd, .events = POLLIN};
				if (ppoll(&p, 1, &ts, NULL) > 0) cpg_dispatch(h, CS_DISPATCH_ALL);
			}
		}
		uint64_t t = now_ns();
		memcpy(buf, &seq, 8);
		memcpy(buf + 8, &t, 8);
		struct iovec iov = {.iov_base = buf, .iov_len = size};
		cs_error_t err = cpg_mcast_joined(h, CPG_TYPE_AGREED, &iov, 1);
		if (err == CS_ERR_TRY_AGAIN) {
			struct pollfd p = {.fd = fd, .events = POLLIN};
			poll(&p, 1, 1);
			cpg_dispatch(h, CS_DISPATCH_ALL);
			continue;
		}
		if (err != CS_OK) {
			fprintf(stderr, "cpgflood: mcast failed: %d\n", err);
			return 69;
		}
		seq++;
		cpg_dispatch(h, CS_DISPATCH_ALL);
	}
	while (delivered < (uint64_t)want * count) cpg_dispatch(h, CS_DISPATCH_ONE);
	qsort(lat, nlat, sizeof *lat, cmp);
	double secs = (double)(last_ns - first_ns) / 1e9;
	printf("corosync cpg agreed size %zu: sent %llu, delivered %llu in %.2fs: %.0f msgs/s; latency p50 %.1fus p99 %.1fus\n",
	       size, (unsigned long long)count, (unsigned long long)delivered, secs, (double)delivered / secs,
	       nlat ? (double)lat[nlat / 2] / 1e3 : 0.0, nlat ? (double)lat[nlat * 99 / 100] / 1e3 : 0.0);
	cpg_finalize(h);
	return 0;
}
