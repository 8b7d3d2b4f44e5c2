/*
 * random.h: the benchmark's input generator, shared by driver.c and blas.c
 * so that the library candidates and the kernels are checked on the same
 * inputs: uniform in [-1, 1), from a 64-bit LCG's high bits; deterministic.
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

#endif
