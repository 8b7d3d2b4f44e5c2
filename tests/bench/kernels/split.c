/*
 * split: where a multi-threaded kernel's time goes, thread by thread (a
 * benchmark tool, not in CI; see tests/bench/split.sh, which builds it).
 *
 * The kernel is an exported tunekit kernel whose parallel loops split.sh
 * has rewritten to add, per thread, the seconds of its static share to
 * tk_split_s and to note its CPU in tk_split_cpu. Blocks of CALLS calls
 * alternate with blocks of an AVX-512 FMA loop that every thread runs for
 * about as long as its share of the kernel: pure register arithmetic, no
 * memory traffic. A block in which one thread's share of the kernel takes
 * far longer than the other's, while the FMA loop on the same CPU keeps its
 * speed, is memory (shared caches, memory bus) and not the CPU.
 *
 *   usage: split BLOCKS NFLOATS_OUT NFLOATS_IN... (one size per buffer)
 *
 * Prints one line per block: the median over its calls of each thread's
 * time for its share of the kernel, the CPU it ran on, then the same for
 * the FMA loop; a summary follows. Exit status 0, or 2 on a bad command line
 * or allocation failure.
 */
#define _GNU_SOURCE
#include <immintrin.h>
#include <omp.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CALLS 200
#define MAXBUF 8
#define MAXTHR 64

void KERNEL(float *const *bufs, float *ws);
double tk_split_s[MAXTHR]; /* written by the rewritten kernel (split.sh) */
int tk_split_cpu[MAXTHR];

static double fma_t[MAXTHR][2];
static int fma_cpu[MAXTHR];
static volatile float sink;

/* Every thread: iters steps of 16 independent FMA chains. */
static void fma_loop(int nthr, long iters)
{
#pragma omp parallel num_threads(nthr)
	{
		int t = omp_get_thread_num();
		fma_t[t][0] = omp_get_wtime();
		fma_cpu[t] = sched_getcpu();
		__m512 a[16], m = _mm512_set1_ps(0.999999f), c = _mm512_set1_ps(1e-7f);
		for (int j = 0; j < 16; j++)
			a[j] = _mm512_set1_ps((float)j);
		for (long i = 0; i < iters; i++)
			for (int j = 0; j < 16; j++)
				a[j] = _mm512_fmadd_ps(a[j], m, c);
		for (int j = 1; j < 16; j++)
			a[0] = _mm512_add_ps(a[0], a[j]);
		sink += _mm512_reduce_add_ps(a[0]);
		fma_t[t][1] = omp_get_wtime();
	}
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, cmp);
	return v[n / 2];
}

int main(int argc, char **argv)
{
	if (argc < 3 || argc - 2 > MAXBUF) {
		fprintf(stderr, "usage: split BLOCKS NFLOATS_OUT NFLOATS_IN...\n");
		return 2;
	}
	int blocks = atoi(argv[1]), nbuf = argc - 2, nthr = NTHREADS;
	float *bufs[MAXBUF];
	for (int i = 0; i < nbuf; i++) {
		size_t n = (size_t)atol(argv[2 + i]);
		if (!(bufs[i] = aligned_alloc(64, ((n * sizeof(float) + 63) / 64) * 64 + 64)))
			return 2;
		for (size_t j = 0; j < n; j++)
			bufs[i][j] = (float)((j * 7 + (size_t)i) % 13) * 0.1f;
	}
	float *ws = WS_FLOATS ? aligned_alloc(64, ((WS_FLOATS * 4 + 63) / 64) * 64) : NULL;
	if (blocks < 1 || nthr < 2 || nthr > MAXTHR || (WS_FLOATS && !ws))
		return 2;

	/* the FMA loop's length: about one thread's share of a kernel call */
	double share = 0;
	for (int i = 0; i < 20; i++)
		KERNEL(bufs, ws);
	for (int i = 0; i < 20; i++) {
		memset(tk_split_s, 0, sizeof tk_split_s);
		KERNEL(bufs, ws);
		share += tk_split_s[0];
	}
	share /= 20;
	long iters = 1000;
	fma_loop(nthr, iters);
	double f = fma_t[0][1] - fma_t[0][0];
	iters = f > 0 ? (long)(iters * share / f) : iters;

	static double kt[MAXTHR][CALLS], ft[MAXTHR][CALLS];
	int slow = 0;
	double slow_k = 0, slow_f = 0;
	printf("# %d threads, blocks of %d calls; per thread: median seconds of its share "
	       "and its CPU\n", nthr, CALLS);
	for (int b = 0; b < blocks; b++) {
		int kc[MAXTHR], fc[MAXTHR];
		for (int i = 0; i < CALLS; i++) {
			memset(tk_split_s, 0, sizeof tk_split_s);
			KERNEL(bufs, ws);
			for (int t = 0; t < nthr; t++) {
				kt[t][i] = tk_split_s[t];
				kc[t] = tk_split_cpu[t];
			}
		}
		for (int i = 0; i < CALLS; i++) {
			fma_loop(nthr, iters);
			for (int t = 0; t < nthr; t++) {
				ft[t][i] = fma_t[t][1] - fma_t[t][0];
				fc[t] = fma_cpu[t];
			}
		}
		double km[MAXTHR], fm[MAXTHR];
		int lo = 0, hi = 0;
		printf("kernel");
		for (int t = 0; t < nthr; t++) {
			km[t] = median(kt[t], CALLS);
			lo = km[t] < km[lo] ? t : lo;
			hi = km[t] > km[hi] ? t : hi;
			printf(" %.3f ms (cpu %d)", km[t] * 1e3, kc[t]);
		}
		printf("  fma");
		for (int t = 0; t < nthr; t++) {
			fm[t] = median(ft[t], CALLS);
			printf(" %.3f ms (cpu %d)", fm[t] * 1e3, fc[t]);
		}
		printf("\n");
		/* a slow block: one share 1.3x another's; compare that thread's CPU in
		 * the FMA loop (when the FMA loop ran on the same CPUs) */
		if (km[hi] > 1.3 * km[lo] && fc[hi] == kc[hi] && fc[lo] == kc[lo]) {
			slow++;
			slow_k += km[hi] / km[lo];
			slow_f += fm[hi] / fm[lo];
		}
	}
	printf("# %d of %d blocks slow (one thread's share > 1.3x another's): there the slow "
	       "thread's share took %.2fx the fast one's on average, and the FMA loop on the "
	       "same CPUs %.2fx\n", slow, blocks, slow ? slow_k / slow : 0, slow ? slow_f / slow : 0);
	return 0;
}
