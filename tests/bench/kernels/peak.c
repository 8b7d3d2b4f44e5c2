/*
 * peak: the FP32 peak of this CPU as an FMA-throughput microbenchmark, the
 * physical limit `make bench-kernels` compares every kernel with. Each thread
 * runs CHAINS independent accumulator chains of vector fused multiply-adds,
 * acc = acc * x + y, enough to cover the FMA latency times the number of FMA
 * pipes, so the loop is bound by FMA throughput alone. The vector width is
 * the widest the compiler targets (build with -march=native): __m512 with
 * AVX-512F, __m256 with AVX2 and FMA, else scalar mul+add.
 *
 *   usage: peak [-r ROUNDS] [-s SECONDS] [THREADS...]    (default 1 2)
 *
 * For each thread count it runs ROUNDS rounds of about SECONDS each, all
 * threads released together by a barrier, and prints the median over the
 * rounds as a TSV line: threads, GFLOPS of all threads, GFLOPS per thread,
 * and the minimum and maximum round. Lines starting with '#' describe the
 * method. Exit status 0 on success, 2 on a bad command line, 1 if a thread
 * cannot be started.
 */
#define _GNU_SOURCE
#include <immintrin.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAXTHREADS 64
#define MAXROUNDS 101

#include "fma.h"

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

typedef struct worker {
	pthread_t tid;
	pthread_barrier_t *start;
	long iters;
	float sink;
} worker;

static void *worker_main(void *p)
{
	worker *w = p;
	pthread_barrier_wait(w->start);
	w->sink = fma_loop(w->iters);
	return NULL;
}

/* Seconds for nthread threads to each run iters steps, from the barrier
 * that releases them until the last one is joined. Exits with status 1 if a
 * thread cannot be started (the others wait at the barrier). */
static double run_round(int nthread, long iters)
{
	worker w[MAXTHREADS];
	pthread_barrier_t start;
	double t0;

	if (pthread_barrier_init(&start, NULL, (unsigned)nthread + 1)) {
		fprintf(stderr, "peak: cannot create a barrier\n");
		exit(1);
	}
	for (int i = 0; i < nthread; i++) {
		w[i].start = &start;
		w[i].iters = iters;
		if (pthread_create(&w[i].tid, NULL, worker_main, &w[i])) {
			fprintf(stderr, "peak: cannot start thread %d of %d\n", i + 1, nthread);
			exit(1);
		}
	}
	pthread_barrier_wait(&start);
	t0 = now();
	for (int i = 0; i < nthread; i++)
		pthread_join(w[i].tid, NULL);
	double t = now() - t0;
	pthread_barrier_destroy(&start);
	return t;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static void usage(void)
{
	fprintf(stderr, "usage: peak [-r ROUNDS] [-s SECONDS] [THREADS...]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	int rounds = 7, nthreads[MAXTHREADS], nt = 0, opt;
	double seconds = 0.3;
	char *end;

	while ((opt = getopt(argc, argv, "r:s:")) != -1) {
		switch (opt) {
		case 'r':
			rounds = (int)strtol(optarg, &end, 10);
			if (*end || rounds < 1 || rounds > MAXROUNDS)
				usage();
			break;
		case 's':
			seconds = strtod(optarg, &end);
			if (*end || !(seconds > 0 && seconds <= 60))
				usage();
			break;
		default:
			usage();
		}
	}
	for (int i = optind; i < argc; i++) {
		long v = strtol(argv[i], &end, 10);
		if (*end || v < 1 || v > MAXTHREADS || nt == MAXTHREADS)
			usage();
		nthreads[nt++] = (int)v;
	}
	if (!nt) {
		nthreads[nt++] = 1;
		nthreads[nt++] = 2;
	}

	/* Steps per round: calibrated on one thread. */
	long iters = 1L << 20;
	double t;
	while ((t = run_round(1, iters)) < 0.05)
		iters *= 2;
	iters = (long)((double)iters * seconds / t) + 1;
	double flops1 = (double)iters * CHAINS * LANES * FLOPS_PER_OP;

	printf("# FP32 peak: %s, %d independent chains per thread, "
	       "%d rounds of %.2f s, median\n", ISA, CHAINS, rounds, seconds);
	printf("threads\tgflops\tgflops_per_thread\tmin_gflops\tmax_gflops\n");
	for (int i = 0; i < nt; i++) {
		double g[MAXROUNDS];
		for (int r = 0; r < rounds; r++) {
			t = run_round(nthreads[i], iters);
			g[r] = flops1 * nthreads[i] / t * 1e-9;
		}
		qsort(g, (size_t)rounds, sizeof g[0], cmp_double);
		double med = g[rounds / 2];
		if (rounds % 2 == 0)
			med = 0.5 * (g[rounds / 2 - 1] + g[rounds / 2]);
		printf("%d\t%.1f\t%.1f\t%.1f\t%.1f\n", nthreads[i], med, med / nthreads[i], g[0],
		       g[rounds - 1]);
	}
	return 0;
}
