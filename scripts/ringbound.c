/*
 * ringbound — the physical bound of a token ring on this host, beside
 * scripts/bench-mcast.sh's step 6: N processes on loopback pass one UDP
 * datagram (the token) round a ring with no protocol at all: each process
 * sends it on to the next the moment it arrives. It prints the median
 * rotation time (the token back at process 1) and hop time (send by one
 * process to receipt by the next; one host, one CLOCK_MONOTONIC), and the
 * latency that bounds a token protocol: only the token's holder sends
 * (Nita-Rotaru's CS7610 notes, "TOTEM: the single-ring protocol"), so a
 * message waits 0 to n-1 hops for the token (Tanenbaum and van Steen
 * ch. 6, the token ring's "delay before entry"), half a rotation on
 * average, then takes one hop to the others.
 *
 *   ringbound N SECS [LOAD]
 *
 * With LOAD, every process also sends LOAD 64-byte datagrams per second to
 * every other on the same socket as the token (the load of the bench's
 * 1,000 msgs/s per member), and the receiver drops them; the token waits
 * behind them in the socket's queue, as a protocol's would.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAXN 64
#define MAXS (1u << 20) /* hop samples kept per process */
#define RB 64              /* datagrams taken per receive */

static uint64_t now_ns(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cmp(const void *a, const void *b) {
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* A token is 'T' and the sender's send time; load datagrams are 'L'. */
struct frame {
	char kind;
	char pad[7];
	uint64_t sent;
	char fill[48];
};

struct shared {
	uint64_t nhop[MAXN];
	uint64_t nrot, lost, ready;
	uint64_t loadsent[MAXN];
};

static int member(int i, int n, uint64_t end, uint64_t load, int port0, struct shared *sh, uint64_t *hops, uint64_t *rots) {
	int s = socket(AF_INET, SOCK_DGRAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	a.sin_port = htons((uint16_t)(port0 + i));
	if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof a) != 0) {
		perror("ringbound: bind");
		return 69;
	}
	/* Room for a busy host's scheduling gaps under load (root may exceed
	 * rmem_max). */
	int rb = 4 << 20;
	if (setsockopt(s, SOL_SOCKET, SO_RCVBUFFORCE, &rb, sizeof rb) != 0) setsockopt(s, SOL_SOCKET, SO_RCVBUF, &rb, sizeof rb);
	struct sockaddr_in peer[MAXN];
	for (int j = 0; j < n; j++) {
		peer[j] = a;
		peer[j].sin_port = htons((uint16_t)(port0 + j));
	}
	struct sockaddr_in *next = &peer[(i + 1) % n];
	struct frame f;
	memset(&f, 0, sizeof f);
	/* Process 0 starts the token once every process is bound (a busy
	 * host may take long to run them all). */
	__atomic_add_fetch(&sh->ready, 1, __ATOMIC_SEQ_CST);
	uint64_t last = 0;
	int skip = 0;
	if (i == 0) {
		while (__atomic_load_n(&sh->ready, __ATOMIC_SEQ_CST) < (uint64_t)n && now_ns() < end) usleep(1000);
		f.kind = 'T';
		f.sent = last = now_ns();
		sendto(s, &f, sizeof f, 0, (struct sockaddr *)next, sizeof *next);
	}
	uint64_t gap = load ? 1000000000u / load : 0, due = now_ns() + gap;
	for (;;) {
		uint64_t t = now_ns();
		if (t >= end) break;
		if (gap && t >= due) {
			/* One datagram to each other process, in one system call
			 * (the bound is the cheapest way to carry the load). */
			struct frame l;
			memset(&l, 0, sizeof l);
			l.kind = 'L';
			struct iovec iov = {.iov_base = &l, .iov_len = sizeof l};
			struct mmsghdr mm[MAXN];
			int k = 0;
			for (int j = 0; j < n; j++) {
				if (j == i) continue;
				memset(&mm[k], 0, sizeof mm[k]);
				mm[k].msg_hdr.msg_name = &peer[j];
				mm[k].msg_hdr.msg_namelen = sizeof peer[j];
				mm[k].msg_hdr.msg_iov = &iov;
				mm[k].msg_hdr.msg_iovlen = 1;
				k++;
			}
			int sent = sendmmsg(s, mm, (unsigned)k, 0);
			if (sent > 0) sh->loadsent[i] += (uint64_t)sent;
			/* Behind on a busy host, catch up as the bench's senders
			 * do, but never by more than 100 ms of load at once. */
			due += gap;
			if (t > due + 100000000u) due = t;
			continue;
		}
		uint64_t wait_ns = gap ? due - t : end - t;
		if (wait_ns > 100000000u) wait_ns = 100000000u;
		struct timespec ts = {.tv_sec = (time_t)(wait_ns / 1000000000u), .tv_nsec = (long)(wait_ns % 1000000000u)};
		struct pollfd p = {.fd = s, .events = POLLIN};
		if (ppoll(&p, 1, &ts, 0) <= 0) {
			/* A token lost (a full queue) is made again after 1 s
			 * without it; that gap is not a rotation. */
			if (i == 0 && now_ns() - last > 1000000000u && now_ns() < end) {
				sh->lost++;
				f.kind = 'T';
				f.sent = last = now_ns();
				skip = 1;
				sendto(s, &f, sizeof f, 0, (struct sockaddr *)next, sizeof *next);
			}
			continue;
		}
		/* Drain the queue in one system call (up to RB frames): the token
		 * is found however much load is queued before it. */
		struct frame in[RB];
		struct iovec iv[RB];
		struct mmsghdr rm[RB];
		for (int j = 0; j < RB; j++) {
			iv[j].iov_base = &in[j];
			iv[j].iov_len = sizeof in[j];
			memset(&rm[j], 0, sizeof rm[j]);
			rm[j].msg_hdr.msg_iov = &iv[j];
			rm[j].msg_hdr.msg_iovlen = 1;
		}
		int got = recvmmsg(s, rm, RB, MSG_DONTWAIT, 0), tok = -1;
		for (int j = 0; j < got; j++)
			if (rm[j].msg_len == sizeof in[j] && in[j].kind == 'T') tok = j;
		if (tok < 0) continue;
		f = in[tok];
		uint64_t r = now_ns();
		if (sh->nhop[i] < MAXS) hops[sh->nhop[i]++] = r - f.sent;
		if (i == 0) {
			if (!skip && sh->nrot < MAXS) rots[sh->nrot++] = r - last;
			skip = 0;
			last = r;
		}
		f.sent = now_ns();
		sendto(s, &f, sizeof f, 0, (struct sockaddr *)next, sizeof *next);
	}
	return 0;
}

int main(int argc, char **argv) {
	if (argc < 3) {
		fprintf(stderr, "usage: ringbound N SECS [LOAD]\n");
		return 64;
	}
	int n = atoi(argv[1]);
	double secs = atof(argv[2]);
	uint64_t load = argc > 3 ? strtoull(argv[3], 0, 10) : 0;
	if (n < 2 || n > MAXN || secs <= 0) {
		fprintf(stderr, "ringbound: N from 2 to %d, SECS > 0\n", MAXN);
		return 64;
	}
	struct shared *sh = mmap(0, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	uint64_t *hops = mmap(0, (size_t)n * MAXS * 8, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	uint64_t *rots = mmap(0, (size_t)MAXS * 8, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED || hops == MAP_FAILED || rots == MAP_FAILED) {
		perror("ringbound: mmap");
		return 69;
	}
	memset(sh, 0, sizeof *sh);
	srand((unsigned)(now_ns() ^ (uint64_t)getpid()));
	int port0 = 30000 + rand() % 20000;
	uint64_t end = now_ns() + 200000000u + (uint64_t)(secs * 1e9); /* 0.2 s to start */
	pid_t kids[MAXN];
	for (int i = 0; i < n; i++) {
		kids[i] = fork();
		if (kids[i] == 0) _exit(member(i, n, end, load, port0, sh, hops + (size_t)i * MAXS, rots));
		if (kids[i] < 0) {
			perror("ringbound: fork");
			for (int j = 0; j < i; j++) kill(kids[j], SIGKILL);
			return 69;
		}
	}
	int bad = 0;
	for (int i = 0; i < n; i++) {
		int st;
		waitpid(kids[i], &st, 0);
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) bad = 1;
	}
	if (bad) return 69;
	/* All hops into one array, then medians. */
	uint64_t total = 0, sent = 0;
	for (int i = 0; i < n; i++) total += sh->nhop[i], sent += sh->loadsent[i];
	uint64_t *all = malloc((total ? total : 1) * 8);
	uint64_t m = 0;
	for (int i = 0; i < n; i++) {
		memcpy(all + m, hops + (size_t)i * MAXS, sh->nhop[i] * 8);
		m += sh->nhop[i];
	}
	if (total == 0 || sh->nrot < 2) {
		fprintf(stderr, "ringbound: the token did not go round (lost on a busy host?)\n");
		return 1;
	}
	qsort(all, total, 8, cmp);
	qsort(rots + 1, sh->nrot - 1, 8, cmp); /* the first is the start, not a rotation */
	double hop = (double)all[total / 2] / 1e3, rot = (double)rots[1 + (sh->nrot - 1) / 2] / 1e3;
	printf("ring bound, %d processes, %s: %llu rotations, rotation p50 %.1fus, hop p50 %.1fus p99 %.1fus; "
	       "token protocol latency bound (rotation/2 + hop) %.1fus\n",
	       n, load ? "loaded" : "idle", (unsigned long long)(sh->nrot - 1), rot, hop,
	       (double)all[total * 99 / 100] / 1e3, rot / 2 + hop);
	if (sh->lost) printf("ring bound, %d processes: the token was lost and made again %llu times\n", n, (unsigned long long)sh->lost);
	if (load)
		printf("ring bound, %d processes, load: %llu datagrams of 64 bytes sent in %.1fs (%.0f/s per process to each other)\n",
		       n, (unsigned long long)sent, secs + 0.2, (double)sent / (secs + 0.2) / n / (n - 1));
	return 0;
}
