/*
 * fma.h: the FMA-throughput loop of the FP32 peak, shared by peak.c (the
 * peak on its own, all threads at once) and driver.c (the peak as one more
 * side of its interleaved rounds, so that a busy machine slows it as much
 * as the kernels it is compared with). CHAINS independent accumulator
 * chains of vector fused multiply-adds, acc = acc * x + y, cover the FMA
 * latency times the number of FMA pipes, so the loop is bound by FMA
 * throughput alone. The vector width is the widest the compiler targets
 * (build with -march=native). Defines ISA (a description), LANES, CHAINS,
 * FLOPS_PER_OP and fma_loop(iters), whose FLOPs are
 * iters * CHAINS * LANES * FLOPS_PER_OP.
 */
#ifndef TK_BENCH_FMA_H
#define TK_BENCH_FMA_H

#include <immintrin.h>

#if defined(__AVX512F__)
#define ISA "avx512 (__m512, _mm512_fmadd_ps)"
#define LANES 16
#define CHAINS 16 /* of 32 registers: 2 FMA pipes x 4 cycles latency, twice over */
typedef __m512 vec;
#define VSET1(x) _mm512_set1_ps(x)
#define VFMA(a, b, c) _mm512_fmadd_ps(a, b, c)
#define VADD(a, b) _mm512_add_ps(a, b)
#define VSUM(a) _mm512_reduce_add_ps(a)
#define FLOPS_PER_OP 2
#elif defined(__AVX2__) && defined(__FMA__)
#define ISA "avx2+fma (__m256, _mm256_fmadd_ps)"
#define LANES 8
#define CHAINS 12 /* of 16 registers; 2 constants */
typedef __m256 vec;
#define VSET1(x) _mm256_set1_ps(x)
#define VFMA(a, b, c) _mm256_fmadd_ps(a, b, c)
#define VADD(a, b) _mm256_add_ps(a, b)
static float vsum(__m256 a)
{
	float f[8];
	_mm256_storeu_ps(f, a);
	return f[0] + f[1] + f[2] + f[3] + f[4] + f[5] + f[6] + f[7];
}
#define VSUM(a) vsum(a)
#define FLOPS_PER_OP 2
#else
#define ISA "scalar (no AVX2+FMA at compile time: mul+add)"
#define LANES 1
#define CHAINS 8
typedef float vec;
#define VSET1(x) (x)
#define VFMA(a, b, c) ((a) * (b) + (c))
#define VADD(a, b) ((a) + (b))
#define VSUM(a) (a)
#define FLOPS_PER_OP 2
#endif

/* Loaded at run time so that the compiler cannot fold the chains. The fixed
 * point of acc = acc * x + y is y / (1 - x) = 1: no overflow, no denormals. */
static volatile float vol_x = 0.999999f, vol_y = 0.000001f;

/* Run iters steps of CHAINS chains; returns their sum so none is dead. */
static float __attribute__((noinline)) fma_loop(long iters)
{
	vec x = VSET1(vol_x), y = VSET1(vol_y);
	vec a[CHAINS];
	for (int c = 0; c < CHAINS; c++)
		a[c] = VSET1((float)c / CHAINS);
	for (long i = 0; i < iters; i++) {
#pragma GCC unroll 16
		for (int c = 0; c < CHAINS; c++)
			a[c] = VFMA(a[c], x, y);
	}
	vec s = a[0];
	for (int c = 1; c < CHAINS; c++)
		s = VADD(s, a[c]);
	return VSUM(s);
}

#endif
