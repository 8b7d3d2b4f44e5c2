/*
 * overlap: whether compiling beside a timed kernel biases its timing on
 * this machine. With overlap, ms_measure compiles half of a batch while the
 * other half is timed; that is worth its time only where the compilers,
 * on the other cores, leave the timed kernel's timings as they were: a
 * machine with cores to spare and no shared resource the kernel is bound
 * by. Where they share what the kernel is bound by (two cores of one
 * cache and memory bus, a virtual machine's cores on shared host cores),
 * the kernel runs slower beside them and every timing is off.
 *
 * So the machine is asked once: a kernel of the probe's own that streams
 * from memory is timed in rounds alone and beside a compiler (building
 * that kernel again and again), in turn, and the verdict with its figures
 * is kept in a file beside the default measurement lock (run_lock_default),
 * one per user and boot, like the lock itself. It allows overlap when the
 * median beside a compile is within MS_OVERLAP_BIAS of the median alone
 * and the spread of the repeats is not much wider.
 */
#define _GNU_SOURCE
#include "measure.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/util.h"

#define PROBE_ROUNDS 5     /* rounds alone and beside a compile, in turn */
#define PROBE_REPEAT 5
#define PROBE_REPEAT_MS 50 /* long repeats: a compiler's passes change within one */

/* The verdict file: "overlap" beside the default measurement lock. */
static int verdict_path(char *path, size_t n)
{
	char lock[4096], dir[4096];
	int rc = run_lock_default(lock, sizeof lock);
	if (rc)
		return rc;
	tk_dirname(dir, sizeof dir, lock);
	if ((size_t)snprintf(path, n, "%s/overlap", dir) >= n)
		return tk_seterr(TK_EIO, "overlap verdict: path too long");
	return TK_OK;
}

int ms_overlap_load(ms_overlap *v, int *found)
{
	char path[4096], buf[512];
	assert(v && found);
	memset(v, 0, sizeof *v);
	*found = 0;
	int rc = verdict_path(path, sizeof path);
	if (rc)
		return rc;
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? TK_OK : tk_seterr(TK_EIO, "cannot read %s: %s", path,
		                                            strerror(errno));
	ssize_t k = read(fd, buf, sizeof buf - 1);
	close(fd);
	buf[k > 0 ? k : 0] = 0;
	/* anything else is no verdict: the machine is asked again */
	*found = sscanf(buf, "tunekit-overlap 1 allowed %d alone %lf with %lf alone_cv %lf "
	                "with_cv %lf", &v->allowed, &v->alone_s, &v->with_s, &v->alone_cv,
	                &v->with_cv) == 5 && (v->allowed == 0 || v->allowed == 1);
	return TK_OK;
}

int ms_overlap_store(const ms_overlap *v)
{
	char path[4096], tmp[4200], buf[512];
	int rc = verdict_path(path, sizeof path);
	if (rc)
		return rc;
	snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
	int n = snprintf(buf, sizeof buf, "tunekit-overlap 1 allowed %d alone %.9g with %.9g "
	                 "alone_cv %.6g with_cv %.6g\n", v->allowed, v->alone_s, v->with_s,
	                 v->alone_cv, v->with_cv);
	return tk_write_renamed(tmp, path, buf, (size_t)n, 0600);
}

int ms_overlap_judge(ms_overlap *v)
{
	assert(v);
	v->allowed = v->alone_s > 0 && v->with_s <= v->alone_s * (1 + MS_OVERLAP_BIAS) &&
	             v->with_cv <= (v->alone_cv * 1.5 > v->alone_cv + 0.02 ? v->alone_cv * 1.5
	                                                                    : v->alone_cv + 0.02);
	return v->allowed;
}

/* The compiler beside the timed kernel: src built again and again, each
 * time as a new kernel (a comment makes its cache key new), into a
 * private directory of its own, until stop is set. */
typedef struct compile_loop {
	const tk_target *tg;
	build_opts bo;
	const char *src;
	int stop;          /* set by the timing thread (atomic) */
	int failed;        /* a build did not run or failed: no compiler was beside */
	pthread_t thread;
} compile_loop;

static void *compile_thread(void *p)
{
	compile_loop *c = p;
	size_t n = strlen(c->src) + 64;
	char *src = malloc(n);
	c->failed = !src;
	for (long i = 0; src && !__atomic_load_n(&c->stop, __ATOMIC_ACQUIRE); i++) {
		build_job j;
		memset(&j, 0, sizeof j);
		j.fd = -1;
		snprintf(src, n, "/* overlap probe %ld %ld */\n%s", (long)getpid(), i, c->src);
		j.src = src;
		if (build_run(c->tg, &c->bo, &j, 1) || j.status != BUILD_OK) {
			c->failed = 1;
			build_jobs_close(&j, 1);
			break;
		}
		build_jobs_close(&j, 1);
	}
	free(src);
	return NULL;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* The probe's kernel: each of PROBE_OUT outputs sums PROBE_RUN floats of
 * one input of PROBE_OUT x PROBE_RUN, 32 MiB, more than a last-level cache
 * holds: it streams from memory, the resource a compiler on another core
 * shares with it most. A kernel whose data fits in a core's own caches may
 * not feel a compiler where this one does; the verdict is for the kernel
 * that feels it most. */
#define PROBE_OUT 1024
#define PROBE_RUN 8192
static const char probe_src[] =
	"const int tk_abi = 1;\n"
	"const unsigned long tk_workspace_floats = 0;\n"
	"void tk_kernel(float *const *bufs, float *ws)\n"
	"{\n"
	"  (void)ws;\n"
	"  for (int i = 0; i < 1024; i++) {\n"
	"    const float *x = bufs[1] + (long)i * 8192;\n"
	"    float s[8] = { 0 };\n"
	"    for (int j = 0; j < 8192; j += 8)\n"
	"      for (int k = 0; k < 8; k++) s[k] += x[j + k];\n"
	"    bufs[0][i] = ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));\n"
	"  }\n"
	"}\n";

/* The probe's input (values in [-1, 1) from a fixed LCG) and reference. */
typedef struct probe_data {
	float *in;
	double ref[PROBE_OUT], refabs[PROBE_OUT];
	const float *ins[1];
	size_t in_n[1];
	run_io io;
} probe_data;

static int probe_data_make(probe_data *d)
{
	size_t n = (size_t)PROBE_OUT * PROBE_RUN;
	uint32_t x = 12345;
	if (!(d->in = aligned_alloc(64, n * sizeof *d->in)))
		return tk_seterr(TK_ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++) {
		x = x * 1664525u + 1013904223u;
		d->in[i] = (float)((double)(x >> 8) / (1 << 23) - 1.0);
	}
	for (int i = 0; i < PROBE_OUT; i++) {
		double s = 0, a = 0;
		for (int j = 0; j < PROBE_RUN; j++) {
			s += d->in[(size_t)i * PROBE_RUN + j];
			a += fabs(d->in[(size_t)i * PROBE_RUN + j]);
		}
		d->ref[i] = s;
		d->refabs[i] = a;
	}
	d->ins[0] = d->in;
	d->in_n[0] = n;
	run_io io = { 1, d->ins, d->in_n, PROBE_OUT, d->ref, d->refabs, 1e-5, 1e-6 };
	d->io = io;
	return TK_OK;
}

int ms_overlap_probe(const tk_target *tg, const ms_opts *o, ms_overlap *v)
{
	assert(tg && o && v);
	double med[2][PROBE_ROUNDS], cv[2][PROBE_ROUNDS];
	char dir[4200];
	const char *cache = o->cache_dir ? o->cache_dir : build_default_cache();
	build_opts bo = { cache, o->cache_max, 1, o->build_timeout, 0, 0, BUILD_REPORTS_NONE };
	build_job kernel;
	probe_data d;
	int rc;
	memset(v, 0, sizeof *v);
	memset(&kernel, 0, sizeof kernel);
	memset(&d, 0, sizeof d);
	kernel.fd = -1;
	kernel.src = probe_src;
	if ((rc = build_run(tg, &bo, &kernel, 1)))
		return rc;
	if (kernel.status != BUILD_OK) {
		build_jobs_close(&kernel, 1);
		return tk_seterr(TK_EIO, "overlap probe: its kernel does not compile: %s", kernel.msg);
	}
	if ((rc = probe_data_make(&d))) {
		build_jobs_close(&kernel, 1);
		return rc;
	}
	snprintf(dir, sizeof dir, "%s/overlap-probe-XXXXXX", cache);
	if (!mkdtemp(dir)) {
		rc = tk_seterr(TK_EIO, "cannot make a directory in %s: %s", cache, strerror(errno));
		goto out;
	}
	run_opts ro = o->run;
	ro.number = 0;
	ro.repeat = PROBE_REPEAT;
	ro.min_repeat_ms = PROBE_REPEAT_MS;
	ro.warmup = 1; /* the first rounds' calls may still fault the input in */
	ro.bound_s = 0;
	ro.adaptive = 0;
	ro.flush_cache = 0;
	ro.cpu_clock = 0; /* the bias in what a user waits, whatever the clock timed */
	for (int round = 0; round < 2 * PROBE_ROUNDS && !rc; round++) {
		/* in pairs, alone first in even pairs, beside a compile first in odd ones */
		int beside = (round % 2) ^ ((round / 2) % 2);
		compile_loop c = { tg, { dir, 0, 1, o->build_timeout, 0, 0, BUILD_REPORTS_NONE },
		                   probe_src, 0, 0, 0 };
		int started = beside && pthread_create(&c.thread, NULL, compile_thread, &c) == 0;
		if (beside && !started) {
			rc = tk_seterr(TK_EIO, "cannot start a thread");
			break;
		}
		if (started) {
			struct timespec ts = { 0, 200000000L }; /* the compiler under way */
			nanosleep(&ts, NULL);
		}
		run_result r;
		rc = run_kernel(&kernel, tg, &d.io, &ro, &r);
		if (started) {
			__atomic_store_n(&c.stop, 1, __ATOMIC_RELEASE);
			pthread_join(c.thread, NULL);
		}
		if (!rc && r.error != MEAS_OK)
			rc = tk_seterr(TK_EIO, "overlap probe: its kernel failed: %s", r.msg);
		if (!rc && c.failed)
			rc = tk_seterr(TK_EIO, "overlap probe: the compiler beside the kernel failed");
		if (!rc) {
			med[beside][round / 2] = r.median;
			cv[beside][round / 2] = r.mean > 0 ? r.std / r.mean : 0;
		}
	}
	build_cache_trim(dir, 0, NULL);
	rmdir(dir);
	if (!rc) {
		v->alone_s = median(med[0], PROBE_ROUNDS);
		v->with_s = median(med[1], PROBE_ROUNDS);
		v->alone_cv = median(cv[0], PROBE_ROUNDS);
		v->with_cv = median(cv[1], PROBE_ROUNDS);
		ms_overlap_judge(v);
	}
out:
	build_jobs_close(&kernel, 1);
	free(d.in);
	return rc;
}
