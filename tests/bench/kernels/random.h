/*
 * random.h: what driver.c and blas.c must do alike: draw the same inputs
 * (uniform in [-1, 1), from a 64-bit LCG's high bits; deterministic), so
 * that the library candidates and the kernels are checked on the same data,
 * and run a one-thread side on the same CPU (the last one this process may
 * use, as tunekit's measuring child does). Include after <sched.h> with
 * _GNU_SOURCE.
 */
#ifndef TK_BENCH_RANDOM_H
#define TK_BENCH_RANDOM_H

#include <stdint.h>

static void fill_random(float *x, long n, uint64_t seed)
{
	uint64_t st = seed * 0x9e3779b97f4a7c15ULL + 1;
	for (long i = 0; i < n; i++) {
		st = st * 6364136223846793005ULL + 1442695040888963407ULL;
		x[i] = (float)((double)(st >> 40) / (double)(1ULL << 24) * 2.0 - 1.0);
	}
}

static void pin_last_cpu(void)
{
	cpu_set_t set;
	if (sched_getaffinity(0, sizeof set, &set) == 0) {
		int last = -1;
		for (int c = 0; c < CPU_SETSIZE; c++)
			if (CPU_ISSET(c, &set))
				last = c;
		CPU_ZERO(&set);
		CPU_SET(last, &set);
		sched_setaffinity(0, sizeof set, &set);
	}
}

#endif
