/*
 * blas: one candidate library baseline of `make bench-kernels`. It times
 * cblas_sgemm of one BLAS (OpenBLAS with -DBLAS_OPENBLAS, BLIS with
 * -DBLAS_BLIS) on a dense or batch_matmul workload, after checking its
 * result against a float64 reference on sampled output elements. OpenBLAS
 * picks its kernel ("core type") when the library loads, from the CPU or
 * from OPENBLAS_CORETYPE, so each core type is one process:
 * tests/bench/kernels.sh runs this program once per candidate and kernel,
 * in interleaved sweeps, and keeps the fastest correct one
 * (tests/bench/kernels/select.awk).
 *
 * Shape key:
 *   dense         C[M,N] = A[M,K] * B[K,N]           (row-major, B stored K x N)
 *   batch_matmul  C[Bt,M,N] = A[Bt,M,K] * B[Bt,K,N]
 *
 * The inputs are those of driver.c (the same generator and seeds), so the
 * kernel checked here is checked on the data the driver times it on. The
 * check: NSAMPLE output elements, spread over the output, each within
 * 2 rtol sum|terms| of the float64 dot product, rtol = 16 FLT_EPSILON
 * (1 + sqrt(K)), as driver.c checks tunekit against the library. A wrong
 * kernel (a core type the CPU cannot run correctly) is reported, not timed.
 *
 * Timing: blocks of at least MIN_MS after a warm-up call, median of ROUNDS
 * blocks; with THREADS = 1 the process is pinned to the last CPU, as the
 * driver pins itself.
 *
 *   usage: blas [-r ROUNDS] [-m MIN_MS] TASK THREADS
 *          blas -l      (BLIS: list its configurations, "id<TAB>name")
 *
 * BLIS picks its configuration at run time too, and takes BLIS_ARCH_TYPE
 * as a number, which -l maps to names. On a CPU it does not know (a Xeon
 * newer than BLIS 0.9.0) it falls back to an AVX2 one, hence the list.
 *
 * Prints one TSV line: library, version, kernel, check ("ok" or "wrong"),
 * median seconds per call ("-" when wrong), GFLOPS. Exit status: 0 timed,
 * 1 wrong result (the line is printed, nothing timed), 2 bad command line
 * or out of memory. A benchmark program, not library code: it prints and
 * exits.
 */
#define _GNU_SOURCE
#include <float.h>
#include <math.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "random.h"

#if defined(BLAS_OPENBLAS)
#include <cblas.h>
#elif defined(BLAS_BLIS)
#include <blis.h>
#else
#error "build with -DBLAS_OPENBLAS or -DBLAS_BLIS"
#endif

#define MAXROUNDS 101
#define NSAMPLE 512

static void die(const char *msg, const char *arg)
{
	fprintf(stderr, "blas: %s%s\n", msg, arg ? arg : "");
	exit(2);
}

static void usage(void)
{
	die("usage: blas [-r ROUNDS] [-m MIN_MS] TASK THREADS | blas -l", NULL);
}

/* "dense:m=..,n=..,k=.." or "batch_matmul:b=..,m=..,n=..,k=..". */
static void task_parse(const char *text, long *b, long *m, long *n, long *k)
{
	char buf[256];
	int bmm = !strncmp(text, "batch_matmul:", 13);
	if (!bmm && strncmp(text, "dense:", 6))
		die("not a dense or batch_matmul task: ", text);
	*b = 1, *m = *n = *k = 0;
	snprintf(buf, sizeof buf, "%s", strchr(text, ':') + 1);
	for (char *save = NULL, *kv = strtok_r(buf, ",", &save); kv;
	     kv = strtok_r(NULL, ",", &save)) {
		char *end;
		long v = kv[0] && kv[1] == '=' ? strtol(kv + 2, &end, 10) : -1;
		if (v < 1 || *end)
			die("bad parameter in ", text);
		if (kv[0] == 'm') *m = v;
		else if (kv[0] == 'n') *n = v;
		else if (kv[0] == 'k') *k = v;
		else if (kv[0] == 'b' && bmm) *b = v;
		else die("unknown parameter in ", text);
	}
	if (*m < 1 || *n < 1 || *k < 1)
		die("needs m, n and k: ", text);
}

static float *floats(long n)
{
	void *p = NULL;
	if (posix_memalign(&p, 64, (size_t)n * sizeof(float)))
		die("out of memory", NULL);
	return p;
}


static long B_, M_, N_, K_;
static float *A_, *Bm_, *C_;

static void gemm(void)
{
	for (long z = 0; z < B_; z++)
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)M_, (int)N_, (int)K_,
		            1.0f, A_ + z * M_ * K_, (int)K_, Bm_ + z * K_ * N_, (int)N_, 0.0f,
		            C_ + z * M_ * N_, (int)N_);
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	int rounds = 5, opt, threads;
	double min_ms = 100, t[MAXROUNDS];
	char *end, lib[32], ver[64], kernel[64];

	while ((opt = getopt(argc, argv, "r:m:l")) != -1) {
		if (opt == 'l') {
#ifdef BLAS_BLIS
			for (int id = 0; id < BLIS_NUM_ARCHS; id++)
				printf("%d\t%s\n", id, bli_arch_string((arch_t)id));
			return 0;
#else
			die("-l lists BLIS configurations; this is the OpenBLAS build", NULL);
#endif
		} else if (opt == 'r') {
			rounds = (int)strtol(optarg, &end, 10);
			if (*end || rounds < 1 || rounds > MAXROUNDS)
				usage();
		} else if (opt == 'm') {
			min_ms = strtod(optarg, &end);
			if (*end || !(min_ms >= 0 && min_ms <= 1e5))
				usage();
		} else {
			usage();
		}
	}
	if (argc - optind != 2)
		usage();
	task_parse(argv[optind], &B_, &M_, &N_, &K_);
	threads = (int)strtol(argv[optind + 1], &end, 10);
	if (*end || threads < 1 || threads > 256)
		usage();
	if (threads == 1)
		pin_last_cpu();
#if defined(BLAS_OPENBLAS)
	openblas_set_num_threads(threads);
	/* "OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY Haswell MAX_THREADS=64": the
	 * version is the second word */
	snprintf(lib, sizeof lib, "OpenBLAS");
	if (sscanf(openblas_get_config(), "OpenBLAS %63s", ver) != 1)
		snprintf(ver, sizeof ver, "?");
	snprintf(kernel, sizeof kernel, "%s", openblas_get_corename());
#else
	bli_thread_set_num_threads(threads);
	snprintf(lib, sizeof lib, "BLIS");
	snprintf(ver, sizeof ver, "%s", bli_info_get_version_str());
	snprintf(kernel, sizeof kernel, "%s", bli_arch_string(bli_arch_query_id()));
#endif
	A_ = floats(B_ * M_ * K_);
	Bm_ = floats(B_ * K_ * N_);
	C_ = floats(B_ * M_ * N_);
	fill_random(A_, B_ * M_ * K_, 1);
	fill_random(Bm_, B_ * K_ * N_, 2);
	for (long i = 0; i < B_ * M_ * N_; i++)
		C_[i] = NAN;
	gemm();

	/* NSAMPLE elements at a stride coprime to the output's size mostly */
	long nout = B_ * M_ * N_, step = nout / NSAMPLE > 1 ? nout / NSAMPLE + 1 : 1;
	double rtol = 2 * 16 * FLT_EPSILON * (1 + sqrt((double)K_)), worst = 0;
	for (long e = 0; e < nout; e += step) {
		long z = e / (M_ * N_), i = e / N_ % M_, j = e % N_;
		double ref = 0, mag = 0;
		for (long p = 0; p < K_; p++) {
			double x = (double)A_[(z * M_ + i) * K_ + p] * Bm_[(z * K_ + p) * N_ + j];
			ref += x;
			mag += fabs(x);
		}
		double q = isfinite(C_[e]) ? fabs(C_[e] - ref) / (rtol * mag + 1e-30) : INFINITY;
		worst = q > worst || q != q ? q : worst;
	}
	if (!(worst <= 1)) {
		printf("%s\t%s\t%s\twrong\t-\t-\n", lib, ver, kernel);
		return 1;
	}

	long ncall = 1;
	double t0 = now();
	gemm();
	double s1 = now() - t0;
	ncall = (long)ceil(min_ms * 1e-3 / (s1 > 0 ? s1 : 1e-9));
	ncall = ncall < 1 ? 1 : ncall;
	for (int r = 0; r < rounds; r++) {
		gemm();
		t0 = now();
		for (long i = 0; i < ncall; i++)
			gemm();
		t[r] = (now() - t0) / (double)ncall;
	}
	qsort(t, (size_t)rounds, sizeof t[0], cmp_double);
	double med = rounds % 2 ? t[rounds / 2] : 0.5 * (t[rounds / 2 - 1] + t[rounds / 2]);
	printf("%s\t%s\t%s\tok\t%.6g\t%.2f\n", lib, ver, kernel, med,
	       2.0 * B_ * M_ * N_ * K_ / med * 1e-9);
	return 0;
}
