/*
 * Unit tests for lib/measure: target specs, the compile cache and the
 * measuring harness, with small hand-written kernels (N = 1000 floats:
 * out = in0 * in1 + 1) built into a private cache under /tmp.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "measure/build.h"
#include "measure/run.h"
#include "measure/target.h"
#include "util/util.h"
#include "unit.h"

#define N 1000

static char cache[64];
static tk_target native;

/* ---- kernels -------------------------------------------------------- */

#define ABI "const int tk_abi = 1;\n"
#define NOWS "const unsigned long tk_workspace_floats = 0;\n"
#define KERNEL "void tk_kernel(float *const *b, float *ws)\n"

static const char k_good[] = ABI NOWS KERNEL
	"{ for (int i = 0; i < 1000; i++) b[0][i] = b[1][i] * b[2][i] + 1.0f; }\n";
static const char k_good2[] = ABI NOWS KERNEL
	"{ float *o = b[0]; const float *x = b[1], *y = b[2];\n"
	"  for (int i = 999; i >= 0; i--) o[i] = y[i] * x[i] + 1.0f; }\n";
static const char k_segv[] = ABI NOWS KERNEL
	"{ *(volatile int *)0 = 1; }\n";
static const char k_loop[] = ABI NOWS KERNEL
	"{ volatile int go = 1; while (go) ; }\n";
static const char k_wrong[] = ABI NOWS KERNEL
	"{ for (int i = 0; i < 1000; i++) b[0][i] = b[1][i] * b[2][i] + 1.0f;\n"
	"  b[0][123] = 42.0f; }\n";
static const char k_unwritten[] = ABI NOWS KERNEL
	"{ for (int i = 0; i < 1000; i++) if (i != 7) b[0][i] = b[1][i] * b[2][i] + 1.0f; }\n";
static const char k_nosym[] = ABI NOWS
	"void tk_kernel_misspelt(float *const *b, float *ws) { }\n";
static const char k_abort[] = "#include <stdlib.h>\n" ABI NOWS KERNEL
	"{ abort(); }\n";
static const char k_badabi[] = "const int tk_abi = 2;\n" NOWS KERNEL
	"{ for (int i = 0; i < 1000; i++) b[0][i] = b[1][i] * b[2][i] + 1.0f; }\n";
static const char k_exit[] = "#include <stdlib.h>\n" ABI NOWS KERNEL
	"{ exit(3); }\n";
/* Right the first time (output still NaN), wrong once it reads its own output. */
static const char k_stateful[] = ABI NOWS KERNEL
	"{ float d = b[0][0] == b[0][0] ? 1.0f : 0.0f;\n"
	"  for (int i = 0; i < 1000; i++) b[0][i] = b[1][i] * b[2][i] + 1.0f + d; }\n";
static const char k_overrun[] = ABI NOWS KERNEL
	"{ for (int i = 0; i <= 1000; i++) b[0][i] = b[1][i % 1000] * b[2][i % 1000] + 1.0f; }\n";
static const char k_hugews[] = ABI
	"const unsigned long tk_workspace_floats = 1UL << 40;\n" KERNEL "{ }\n";
/* Uses 4096 floats of workspace, and insists that it is 64-byte aligned. */
static const char k_ws[] = "#include <stdint.h>\n" ABI
	"const unsigned long tk_workspace_floats = 4096;\n" KERNEL
	"{ for (int i = 0; i < 4096; i++) ws[i] = (float)(i % 1000);\n"
	"  float bad = ((uintptr_t)ws % 64 || (uintptr_t)b[0] % 64) ? 5.0f : 0.0f;\n"
	"  for (int i = 0; i < 1000; i++)\n"
	"    b[0][i] = b[1][(int)ws[i + 3000]] * b[2][i] + 1.0f + bad; }\n";
/* Right only when the process may run on exactly one CPU. */
static const char k_pinned[] = "#define _GNU_SOURCE\n#include <sched.h>\n" ABI NOWS KERNEL
	"{ cpu_set_t s; sched_getaffinity(0, sizeof s, &s);\n"
	"  float bad = CPU_COUNT(&s) == 1 ? 0.0f : 9.0f;\n"
	"  for (int i = 0; i < 1000; i++) b[0][i] = b[1][i] * b[2][i] + 1.0f + bad; }\n";
/* About 100 us a call, every call alike. */
static const char k_steady[] = ABI NOWS KERNEL
	"{ for (int r = 0; r < 100; r++) {\n"
	"    for (int i = 0; i < 1000; i++) b[0][i] = b[1][i] * b[2][i] + 1.0f;\n"
	"    __asm__ volatile(\"\" ::: \"memory\"); } }\n";
/* The same, but every other run of 50 calls is four times slower: injected
 * jitter that no number of 50-call micro-batches averages away. */
static const char k_jitter[] = ABI NOWS KERNEL
	"{ static long c; int rep = (c++ / 50) % 2 ? 400 : 100;\n"
	"  for (int r = 0; r < rep; r++) {\n"
	"    for (int i = 0; i < 1000; i++) b[0][i] = b[1][i] * b[2][i] + 1.0f;\n"
	"    __asm__ volatile(\"\" ::: \"memory\"); } }\n";
/* OpenMP, right only with 2 threads. */
static const char k_omp[] = "#include <omp.h>\n" ABI NOWS KERNEL
	"{ float bad = omp_get_max_threads() == 2 ? 0.0f : 7.0f;\n"
	"  #pragma omp parallel for\n"
	"  for (int i = 0; i < 1000; i++) b[0][i] = b[1][i] * b[2][i] + 1.0f + bad; }\n";

/* ---- helpers -------------------------------------------------------- */

static float in0[N], in1[N];
static double ref[N], refabs[N];
static const float *ins[2] = { in0, in1 };
static const size_t in_n[2] = { N, N };

static run_io make_io(void)
{
	for (int i = 0; i < N; i++) {
		in0[i] = (float)i * 0.01f;
		in1[i] = 1.0f + (float)(i % 7) * 0.5f;
		ref[i] = (double)in0[i] * in1[i] + 1.0;
		refabs[i] = fabs((double)in0[i] * in1[i]) + 1.0;
	}
	run_io io = { 2, ins, in_n, N, ref, refabs, 1e-5, 1e-6 };
	return io;
}

static int file_exists(const char *path)
{
	return path[0] && access(path, F_OK) == 0;
}

/* Number of files in dir whose name contains s. */
static int count_files(const char *dir, const char *s)
{
	DIR *d = opendir(dir);
	int n = 0;
	struct dirent *e;
	while (d && (e = readdir(d)))
		if (strstr(e->d_name, s) && strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			n++;
	if (d)
		closedir(d);
	return n;
}

static void remove_dir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char path[512];
	while (d && (e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		unlink(path);
	}
	if (d)
		closedir(d);
	rmdir(dir);
}

/* Build one source with the native target; returns the status. */
static int build1(const char *src, build_job *job, double timeout_s)
{
	memset(job, 0, sizeof *job);
	job->src = src;
	int rc = build_run(&native, cache, job, 1, 1, timeout_s);
	CHECK_EQ_INT(rc, TK_OK);
	return job->status;
}

/* ---- target --------------------------------------------------------- */

TEST(test_target_native)
{
	tk_target t, t2, t3;
	CHECK_EQ_INT(tk_target_parse(NULL, &t), TK_OK);
	CHECK(!strcmp(t.isa, "avx512") || !strcmp(t.isa, "avx2") || !strcmp(t.isa, "sse2"));
	CHECK_EQ_INT(t.vlen, !strcmp(t.isa, "avx512") ? 16 : !strcmp(t.isa, "avx2") ? 8 : 4);
	if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
	    __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq"))
		CHECK_EQ_STR(t.isa, "avx512");
	CHECK_EQ_INT(t.threads, 1);
	CHECK_EQ_STR(t.cc, "cc");
	CHECK_EQ_STR(t.opt, "-O3");
	CHECK(t.cc_version[0] && !strchr(t.cc_version, '\n'));
	CHECK(t.cpu[0]);
	CHECK(!strncmp(t.cflags, "-O3 ", 4));
	CHECK(strstr(t.cflags, "-fPIC") && strstr(t.cflags, "-shared"));
	CHECK(!strstr(t.cflags, "-fopenmp") && !strstr(t.cflags, "fast-math"));
	char want[160];
	snprintf(want, sizeof want, "cpu:cc=cc,isa=%s,opt=-O3,threads=1", t.isa);
	CHECK_EQ_STR(t.spec, want);
	CHECK(strstr(t.key, t.cpu) && strstr(t.key, t.cc_version) && strstr(t.key, "threads=1"));

	CHECK_EQ_INT(tk_target_parse("native", &t2), TK_OK);
	CHECK_EQ_STR(t2.spec, t.spec);
	CHECK_EQ_INT(tk_target_parse("", &t3), TK_OK);
	CHECK_EQ_STR(t3.key, t.key);
	CHECK_EQ_INT(tk_target_parse("cpu:", &t3), TK_OK);
	CHECK_EQ_STR(t3.spec, t.spec);
	/* The canonical spec parses to itself. */
	CHECK_EQ_INT(tk_target_parse(t.spec, &t3), TK_OK);
	CHECK_EQ_STR(t3.spec, t.spec);
	CHECK_EQ_STR(t3.key, t.key);
}

TEST(test_target_keys)
{
	tk_target t, t2;
	CHECK_EQ_INT(tk_target_parse("cpu:isa=sse2,threads=2", &t), TK_OK);
	CHECK_EQ_STR(t.spec, "cpu:cc=cc,isa=sse2,opt=-O3,threads=2");
	CHECK_EQ_INT(t.vlen, 4);
	CHECK_EQ_INT(t.threads, 2);
	CHECK(strstr(t.cflags, "-fopenmp") != NULL);
	CHECK(strstr(t.cflags, "-march=x86-64") != NULL);
	CHECK(strstr(t.key, "|sse2|") != NULL);
	/* Keys sort, whatever the order given. */
	CHECK_EQ_INT(tk_target_parse("cpu:threads=2,isa=sse2", &t2), TK_OK);
	CHECK_EQ_STR(t2.spec, t.spec);

	CHECK_EQ_INT(tk_target_parse("cpu:isa=sse2,threads=1", &t2), TK_OK);
	CHECK(strcmp(t.key, t2.key) != 0);
	CHECK(!strstr(t2.cflags, "-fopenmp"));

	CHECK_EQ_INT(tk_target_parse("cpu:opt=-O2,cc=gcc", &t2), TK_OK);
	CHECK_EQ_STR(t2.cc, "gcc");
	CHECK(!strncmp(t2.cflags, "-O2 ", 4));
	CHECK(strstr(t2.spec, "cc=gcc,") && strstr(t2.spec, "opt=-O2,"));
	CHECK(strstr(t2.key, "|-O2|") != NULL);

	if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
		CHECK_EQ_INT(tk_target_parse("cpu:isa=avx2", &t2), TK_OK);
		CHECK_EQ_INT(t2.vlen, 8);
		CHECK(strstr(t2.cflags, "-march=haswell") != NULL);
	}
}

TEST(test_target_errors)
{
	static const struct { const char *spec; const char *names; } bad[] = {
		{ "cpu:isa=", "isa" },
		{ "cpu:foo=1", "foo" },
		{ "gpu", "gpu" },
		{ "cpu:threads=0", "threads" },
		{ "cpu:threads=257", "257" },
		{ "cpu:threads=two", "two" },
		{ "cpu:threads=2,threads=3", "duplicate" },
		{ "cpu:isa=avx9", "avx9" },
		{ "cpu:opt=-Ofast", "-Ofast" },
		{ "cpu:isa", "isa" },
		{ "cpu:isa=sse2,", "empty" },
		{ "cpu:cc=", "cc" },
		{ "nativex", "nativex" },
	};
	for (int i = 0; i < ArraySize(bad); i++) {
		tk_target t;
		tk_seterr(TK_OK, "%s", "");
		int rc = tk_target_parse(bad[i].spec, &t);
		if (rc != TK_EINVAL || !strstr(tk_errmsg(), bad[i].names) || strchr(tk_errmsg(), '\n'))
			fprintf(stderr, "spec '%s': rc %d, message '%s'\n", bad[i].spec, rc, tk_errmsg());
		CHECK_EQ_INT(rc, TK_EINVAL);
		CHECK(strstr(tk_errmsg(), bad[i].names) != NULL);
	}
	tk_target t;
	CHECK_EQ_INT(tk_target_parse("cpu:cc=/nonexistent/tunekit-cc", &t), TK_EUNSUPP);
	CHECK(strstr(tk_errmsg(), "compiler not found") != NULL);
}

/* ---- build ---------------------------------------------------------- */

TEST(test_build_default_cache)
{
	char *old = getenv("TUNEKIT_CACHE") ? strdup(getenv("TUNEKIT_CACHE")) : NULL;
	setenv("TUNEKIT_CACHE", "/some/where", 1);
	CHECK_EQ_STR(build_default_cache(), "/some/where");
	unsetenv("TUNEKIT_CACHE");
	const char *d = build_default_cache();
	CHECK(d[0] == '/' && strstr(d, "tunekit") != NULL);
	if (old)
		setenv("TUNEKIT_CACHE", old, 1);
	free(old);
}

TEST(test_build_cache)
{
	build_job job, again;
	CHECK_EQ_INT(build1(k_good, &job, 30), BUILD_OK);
	CHECK_EQ_STR(job.msg, "");
	CHECK(file_exists(job.so));
	CHECK(!strncmp(job.so, cache, strlen(cache)));
	CHECK(strstr(job.so, ".so") != NULL);
	CHECK_EQ_INT(job.cached, 0);
	CHECK(job.seconds > 0);

	CHECK_EQ_INT(build1(k_good, &again, 30), BUILD_OK);
	CHECK_EQ_INT(again.cached, 1);
	CHECK_EQ_STR(again.msg, "");
	CHECK(again.seconds == 0);
	CHECK_EQ_STR(again.so, job.so);

	/* Other flags, other object. */
	tk_target o2;
	CHECK_EQ_INT(tk_target_parse("cpu:opt=-O2", &o2), TK_OK);
	memset(&again, 0, sizeof again);
	again.src = k_good;
	CHECK_EQ_INT(build_run(&o2, cache, &again, 1, 1, 30), TK_OK);
	CHECK_EQ_INT(again.status, BUILD_OK);
	CHECK_EQ_INT(again.cached, 0);
	CHECK(strcmp(again.so, job.so) != 0);

	/* A cache directory that cannot be created. */
	memset(&again, 0, sizeof again);
	again.src = k_good;
	CHECK_EQ_INT(build_run(&native, "/proc/tunekit-no/such", &again, 1, 1, 30), TK_EIO);
	CHECK(again.status != BUILD_OK);
}

TEST(test_build_error)
{
	build_job job;
	static const char src[] = ABI NOWS KERNEL "{ this is not C; }\n";
	CHECK_EQ_INT(build1(src, &job, 30), BUILD_ERROR);
	CHECK(strstr(job.msg, "error") != NULL);
	CHECK(strstr(job.msg, "this") != NULL || strstr(job.msg, "unknown type") != NULL);
	CHECK(!strchr(job.msg, '\n'));
	CHECK(!strstr(job.msg, cache)); /* paths are relative to the cache */
	CHECK(strlen(job.msg) <= 420);
	CHECK(job.so[0] == 0);
	CHECK_EQ_INT(job.cached, 0);
	/* Failures are not cached. */
	CHECK_EQ_INT(build1(src, &job, 30), BUILD_ERROR);
	CHECK_EQ_INT(job.cached, 0);
}

/* A compile that never finishes: the source includes a FIFO nobody writes,
 * so cc1 blocks opening it until it is killed. */
TEST(test_build_timeout)
{
	char fifo[128], src[256];
	snprintf(fifo, sizeof fifo, "%s/never.fifo", cache);
	CHECK_EQ_INT(mkfifo(fifo, 0600), 0);
	snprintf(src, sizeof src, "#include \"%s\"\n" ABI NOWS KERNEL "{ }\n", fifo);
	/* Orphans of the killed compiler driver become our children. */
	CHECK_EQ_INT(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
	build_job job;
	double t0 = tk_now();
	CHECK_EQ_INT(build1(src, &job, 1.0), BUILD_TIMEOUT);
	double dt = tk_now() - t0;
	CHECK(dt >= 1.0 && dt < 1.5);
	CHECK(job.seconds >= 1.0);
	CHECK(strstr(job.msg, "timeout") != NULL);
	CHECK(job.so[0] == 0);
	/* cc1 was killed with the driver: no child is left running. */
	pid_t w = 0;
	for (int i = 0; i < 100 && w >= 0; i++) {
		while ((w = waitpid(-1, NULL, WNOHANG)) > 0)
			;
		if (w == 0) {
			struct timespec ts = { 0, 5000000 };
			nanosleep(&ts, NULL);
		}
	}
	CHECK(w < 0 && errno == ECHILD);
	prctl(PR_SET_CHILD_SUBREAPER, 0);
	if (w == 0) { /* release the survivor */
		int fd = open(fifo, O_WRONLY | O_NONBLOCK);
		if (fd >= 0)
			close(fd);
		while (waitpid(-1, NULL, 0) > 0)
			;
	}
	unlink(fifo);
}

TEST(test_build_parallel)
{
	enum { NJ = 5 };
	char src[NJ][256];
	build_job jobs[NJ];
	memset(jobs, 0, sizeof jobs);
	for (int i = 0; i < NJ; i++) {
		/* Job 4 repeats job 1: built once, both get it. */
		snprintf(src[i], sizeof src[i], ABI NOWS KERNEL
		         "{ for (int i = 0; i < 1000; i++) b[0][i] = %d.0f; }\n", i == 4 ? 1 : i);
		jobs[i].src = src[i];
	}
	double t0 = tk_now();
	CHECK_EQ_INT(build_run(&native, cache, jobs, NJ, 2, 30), TK_OK);
	double dt = tk_now() - t0, sum = 0;
	for (int i = 0; i < NJ; i++) {
		CHECK_EQ_INT(jobs[i].status, BUILD_OK);
		CHECK_EQ_STR(jobs[i].msg, "");
		CHECK(file_exists(jobs[i].so));
		sum += jobs[i].seconds;
		if (i < 4) {
			CHECK_EQ_INT(jobs[i].cached, 0);
			for (int j = 0; j < i; j++)
				CHECK(strcmp(jobs[i].so, jobs[j].so) != 0);
		}
	}
	CHECK_EQ_STR(jobs[4].so, jobs[1].so);
	CHECK_EQ_INT(jobs[4].cached, 1);
	/* Two at a time: the wall time is well under the sum of compile times. */
	CHECK(dt < 0.85 * sum);
	/* Nothing in flight is left behind. */
	CHECK_EQ_INT(count_files(cache, ".tmp."), 0);
}

/* ---- run ------------------------------------------------------------ */

/* Build all the run tests' kernels at once, in this order. */
enum { K_GOOD, K_GOOD2, K_SEGV, K_LOOP, K_WRONG, K_UNWRITTEN, K_NOSYM, K_ABORT, K_BADABI,
       K_EXIT, K_STATEFUL, K_OVERRUN, K_HUGEWS, K_WS, K_PINNED, K_STEADY, K_JITTER,
       NKERNEL };
static const char *const kernel_src[NKERNEL] = {
	k_good, k_good2, k_segv, k_loop, k_wrong, k_unwritten, k_nosym, k_abort, k_badabi,
	k_exit, k_stateful, k_overrun, k_hugews, k_ws, k_pinned, k_steady, k_jitter,
};
static build_job kernels[NKERNEL];

static run_result res;

static int run1(int k, const run_opts *o)
{
	run_io io = make_io();
	int rc = run_kernel(kernels[k].so, &native, &io, o, &res);
	CHECK_EQ_INT(rc, TK_OK);
	return res.error;
}

TEST(test_run_build_kernels)
{
	for (int i = 0; i < NKERNEL; i++)
		kernels[i].src = kernel_src[i];
	CHECK_EQ_INT(build_run(&native, cache, kernels, NKERNEL, 2, 60), TK_OK);
	for (int i = 0; i < NKERNEL; i++) {
		if (kernels[i].status != BUILD_OK)
			fprintf(stderr, "kernel %d: %s\n", i, kernels[i].msg);
		CHECK_EQ_INT(kernels[i].status, BUILD_OK);
	}
}

static void check_ok_result(const run_result *r, int repeat)
{
	CHECK_EQ_INT(r->error, MEAS_OK);
	CHECK_EQ_STR(r->msg, "");
	CHECK_EQ_INT(r->nrepeat, repeat);
	CHECK(r->number >= 1);
	double lo = 1e30, hi = 0;
	for (int i = 0; i < r->nrepeat; i++) {
		CHECK(r->times[i] > 0 && r->times[i] < 1e-2);
		lo = r->times[i] < lo ? r->times[i] : lo;
		hi = r->times[i] > hi ? r->times[i] : hi;
	}
	CHECK(r->median >= lo && r->median <= hi);
	CHECK(r->mean >= lo && r->mean <= hi);
	CHECK(r->std >= 0 && r->std <= hi - lo);
	CHECK(r->max_err >= 0 && r->max_err <= 1);
}

TEST(test_run_ok)
{
	run_opts o;
	run_opts_default(&o);
	CHECK_EQ_INT(o.repeat, 5);
	CHECK_EQ_INT(o.number, 0);
	CHECK_EQ_INT(run1(K_GOOD, &o), MEAS_OK);
	check_ok_result(&res, 5);
	/* 1000 multiply-adds take microseconds: many calls make 10 ms. */
	CHECK(res.number > 10);
	CHECK(res.number * res.median > 0.5e-3);
	if (res.error)
		fprintf(stderr, "good kernel: %s\n", res.msg);

	o.number = 7;
	o.repeat = 3;
	o.flush_cache = 1;
	CHECK_EQ_INT(run1(K_GOOD2, &o), MEAS_OK);
	check_ok_result(&res, 3);
	CHECK_EQ_INT(res.number, 7);

	o.repeat = 1;
	CHECK_EQ_INT(run1(K_WS, &o), MEAS_OK);
	check_ok_result(&res, 1);
	CHECK(res.std == 0);
	if (res.error)
		fprintf(stderr, "workspace kernel: %s\n", res.msg);

	CHECK_EQ_INT(run1(K_PINNED, &o), MEAS_OK);
	if (res.error)
		fprintf(stderr, "pinned kernel: %s\n", res.msg);
}

TEST(test_run_cv)
{
	double same[3] = { 2e-3, 2e-3, 2e-3 };
	CHECK(run_cv(same, 3) == 0);
	CHECK(run_cv(same, 1) == 0);
	/* Throughputs 1, 2: mean 1.5, population deviation 0.5. */
	double two[2] = { 1, 0.5 };
	CHECK(fabs(run_cv(two, 2) - 1.0 / 3) < 1e-12);
	/* With more than 4, the extremes (throughputs 100 and 0.01) are dropped. */
	double five[5] = { 0.01, 1, 0.5, 1, 100 };
	double m = (1 + 2 + 1) / 3.0, sd = sqrt((2 * (1 - m) * (1 - m) + (2 - m) * (2 - m)) / 3);
	CHECK(fabs(run_cv(five, 5) - sd / m) < 1e-12);
}

TEST(test_run_adaptive)
{
	run_opts o;
	run_opts_default(&o);
	CHECK_EQ_INT(o.adaptive, 0);
	CHECK_EQ_INT(o.microbatch, 50);
	CHECK(o.cv == 0.1);
	o.adaptive = 1;
	o.number = 100;
	o.repeat = 5; /* a cap of 500 calls: 10 micro-batches of 50 */
	/* A steady kernel stops well before the cap (3 batches unless the
	 * machine stutters: one of three tries must); each batch's time is kept. */
	for (int try = 0; try < 3; try++) {
		CHECK_EQ_INT(run1(K_STEADY, &o), MEAS_OK);
		if (res.nrepeat < 10)
			break;
	}
	CHECK_EQ_INT(res.number, 50);
	CHECK(res.nrepeat >= 3 && res.nrepeat < 10);
	CHECK(run_cv(res.times, res.nrepeat) < 0.1);
	/* A kernel with jitter at the scale of the batches runs to the cap. */
	CHECK_EQ_INT(run1(K_JITTER, &o), MEAS_OK);
	CHECK_EQ_INT(res.number, 50);
	CHECK_EQ_INT(res.nrepeat, 10);
	CHECK(run_cv(res.times, 10) > 0.1);
	/* The fixed evaluator on the same kernel makes number x repeat calls. */
	o.adaptive = 0;
	CHECK_EQ_INT(run1(K_STEADY, &o), MEAS_OK);
	CHECK_EQ_INT(res.number, 100);
	CHECK_EQ_INT(res.nrepeat, 5);
	/* A cap below one micro-batch is one short batch; a cap of more than
	 * RUN_MAXREPEAT batches makes the batches larger. */
	o.adaptive = 1;
	o.number = 10;
	o.repeat = 2;
	CHECK_EQ_INT(run1(K_STEADY, &o), MEAS_OK);
	CHECK_EQ_INT(res.number, 20);
	CHECK_EQ_INT(res.nrepeat, 1);
	o.number = 192;
	o.repeat = 1;
	o.microbatch = 2;
	o.cv = 0; /* never satisfied: runs to the cap */
	CHECK_EQ_INT(run1(K_STEADY, &o), MEAS_OK);
	CHECK_EQ_INT(res.number, 3);
	CHECK_EQ_INT(res.nrepeat, RUN_MAXREPEAT);
}

TEST(test_run_crashes)
{
	run_opts o;
	run_opts_default(&o);
	o.timeout_s = 5;
	CHECK_EQ_INT(run1(K_SEGV, &o), MEAS_RUNTIME_CRASH);
	CHECK(strstr(res.msg, "SIGSEGV") != NULL);
	CHECK_EQ_INT(res.nrepeat, 0);

	CHECK_EQ_INT(run1(K_ABORT, &o), MEAS_RUNTIME_CRASH);
	CHECK(strstr(res.msg, "SIGABRT") != NULL);

	CHECK_EQ_INT(run1(K_NOSYM, &o), MEAS_RUNTIME_CRASH);
	CHECK(strstr(res.msg, "tk_kernel") != NULL);

	CHECK_EQ_INT(run1(K_BADABI, &o), MEAS_RUNTIME_CRASH);
	CHECK(strstr(res.msg, "tk_abi") != NULL);

	CHECK_EQ_INT(run1(K_EXIT, &o), MEAS_RUNTIME_CRASH);
	CHECK(strstr(res.msg, "status 3") != NULL);

	CHECK_EQ_INT(run1(K_HUGEWS, &o), MEAS_RUNTIME_CRASH);
	CHECK(strstr(res.msg, "workspace too large") != NULL);

	run_io io = make_io();
	char missing[128];
	snprintf(missing, sizeof missing, "%s/missing.so", cache);
	CHECK_EQ_INT(run_kernel(missing, &native, &io, &o, &res), TK_OK);
	CHECK_EQ_INT(res.error, MEAS_RUNTIME_CRASH);
	CHECK(strstr(res.msg, "dlopen") != NULL);
}

TEST(test_run_timeout)
{
	run_opts o;
	run_opts_default(&o);
	o.timeout_s = 1;
	double t0 = tk_now();
	CHECK_EQ_INT(run1(K_LOOP, &o), MEAS_RUN_TIMEOUT);
	double dt = tk_now() - t0;
	CHECK(dt >= 1.0 && dt < 1.5);
	CHECK(strstr(res.msg, "run timeout after 1 s") != NULL);
}

TEST(test_run_wrong)
{
	run_opts o;
	run_opts_default(&o);
	o.timeout_s = 5;
	CHECK_EQ_INT(run1(K_WRONG, &o), MEAS_WRONG_ANSWER);
	CHECK(strstr(res.msg, "out[123] = 42 ") != NULL);
	CHECK(strstr(res.msg, "1 of 1000") != NULL);
	CHECK(res.max_err > 1);

	CHECK_EQ_INT(run1(K_UNWRITTEN, &o), MEAS_WRONG_ANSWER);
	CHECK(strstr(res.msg, "out[7] = nan") != NULL);

	CHECK_EQ_INT(run1(K_STATEFUL, &o), MEAS_WRONG_ANSWER);
	CHECK(strstr(res.msg, "after repeated calls") != NULL);

	CHECK_EQ_INT(run1(K_OVERRUN, &o), MEAS_WRONG_ANSWER);
	CHECK(strstr(res.msg, "past the end") != NULL);

	/* A tolerance wide enough to accept the wrong element. */
	run_io io = make_io();
	io.atol = 100;
	CHECK_EQ_INT(run_kernel(kernels[K_WRONG].so, &native, &io, &o, &res), TK_OK);
	CHECK_EQ_INT(res.error, MEAS_OK);
	CHECK(res.max_err > 0.3 && res.max_err <= 1);
}

TEST(test_run_survives)
{
	run_opts o;
	run_opts_default(&o);
	o.repeat = 2;
	CHECK_EQ_INT(run1(K_GOOD, &o), MEAS_OK);
	check_ok_result(&res, 2);
	/* Every child was reaped. */
	errno = 0;
	CHECK(waitpid(-1, NULL, WNOHANG) < 0 && errno == ECHILD);
}

TEST(test_run_threads)
{
	tk_target t2;
	CHECK_EQ_INT(tk_target_parse("cpu:threads=2", &t2), TK_OK);
	build_job job;
	memset(&job, 0, sizeof job);
	job.src = k_omp;
	CHECK_EQ_INT(build_run(&t2, cache, &job, 1, 1, 30), TK_OK);
	CHECK_EQ_INT(job.status, BUILD_OK);
	if (job.status != BUILD_OK)
		fprintf(stderr, "omp kernel: %s\n", job.msg);
	run_opts o;
	run_opts_default(&o);
	o.repeat = 2;
	run_io io = make_io();
	/* The target's thread count wins over the caller's environment. */
	char *old = getenv("OMP_NUM_THREADS") ? strdup(getenv("OMP_NUM_THREADS")) : NULL;
	setenv("OMP_NUM_THREADS", "1", 1);
	CHECK_EQ_INT(run_kernel(job.so, &t2, &io, &o, &res), TK_OK);
	CHECK_EQ_INT(res.error, MEAS_OK);
	if (res.error)
		fprintf(stderr, "omp kernel: %s\n", res.msg);
	if (old)
		setenv("OMP_NUM_THREADS", old, 1);
	else
		unsetenv("OMP_NUM_THREADS");
	free(old);
	/* The same kernel with one thread: wrong (it checks the thread count). */
	CHECK_EQ_INT(run_kernel(job.so, &native, &io, &o, &res), TK_OK);
	CHECK_EQ_INT(res.error, MEAS_WRONG_ANSWER);
}

static void setup(void)
{
	snprintf(cache, sizeof cache, "/tmp/tunekit-measure-XXXXXX");
	if (!mkdtemp(cache)) {
		perror("mkdtemp");
		exit(1);
	}
	if (tk_target_parse(NULL, &native) != TK_OK) {
		fprintf(stderr, "native target: %s\n", tk_errmsg());
		exit(1);
	}
}

static void teardown(void)
{
	remove_dir(cache);
}

UNIT_MAIN(setup, test_target_native, test_target_keys, test_target_errors,
          test_build_default_cache, test_build_cache, test_build_error, test_build_timeout,
          test_build_parallel, test_run_build_kernels, test_run_ok, test_run_cv, test_run_adaptive,
          test_run_crashes,
          test_run_timeout, test_run_wrong, test_run_survives, test_run_threads, teardown)
