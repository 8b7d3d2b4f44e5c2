/*
 * measure: build a batch in parallel, run it sequentially under the
 * measurement lock (see measure.h).
 */
#define _GNU_SOURCE /* getloadavg */
#include "measure.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codegen/kernel.h"
#include "task/ref.h"

int ms_task_open(const char *task, uint64_t seed, ms_task **out)
{
	int rc;
	*out = NULL;
	ms_task *t = calloc(1, sizeof *t);
	if (!t)
		return tk_seterr(TK_ENOMEM, "out of memory");
	t->seed = seed;
	if ((rc = te_task_parse(task, &t->prog)) || (rc = sp_space_create(t->prog, &t->space))) {
		ms_task_free(t);
		return rc;
	}
	*out = t;
	return TK_OK;
}

void ms_task_free(ms_task *t)
{
	if (!t)
		return;
	if (t->in)
		for (int i = 0; i < t->prog->ninput; i++)
			free(t->in[i]);
	free(t->in);
	free(t->in_n);
	free(t->ref);
	free(t->refabs);
	sp_space_free(t->space);
	te_prog_free(t->prog);
	free(t);
}

/* Compute t's inputs and reference, the reference from the cache in
 * cache_dir (NULL: the default) when it holds it, else computed and put
 * there; a cache that cannot be used is only a miss. */
static int prepare(ms_task *t, const char *cache_dir)
{
	const te_prog *p = t->prog;
	size_t n = (size_t)p->tensor[p->output].size;
	if (t->ready)
		return TK_OK;
	t->in = calloc((size_t)p->ninput, sizeof *t->in);
	t->in_n = calloc((size_t)p->ninput, sizeof *t->in_n);
	t->ref = malloc(n * sizeof *t->ref);
	t->refabs = malloc(n * sizeof *t->refabs);
	if (!t->in || !t->in_n || !t->ref || !t->refabs)
		return tk_seterr(TK_ENOMEM, "out of memory for the inputs of %s", p->key);
	for (int i = 0; i < p->ninput; i++) {
		t->in_n[i] = (size_t)p->tensor[p->input[i]].size;
		if (!(t->in[i] = aligned_alloc(64, (t->in_n[i] * sizeof(float) + 63) & ~(size_t)63)))
			return tk_seterr(TK_ENOMEM, "out of memory for the inputs of %s", p->key);
	}
	ref_random_inputs(p, t->seed, t->in);
	const char *dir = cache_dir ? cache_dir : build_default_cache();
	char key[SHA256_HEX];
	int found = 0, usable = build_ref_prepare(dir) == TK_OK;
	build_ref_key(p->key, p->ninput, (const float *const *)t->in, t->in_n, key);
	if (usable)
		build_ref_load(dir, key, n, t->ref, t->refabs, &found);
	if (!found) {
		int rc = ref_compute(p, (const float *const *)t->in, t->ref, t->refabs);
		if (rc)
			return rc;
		if (usable)
			build_ref_store(dir, key, n, t->ref, t->refabs); /* a failure: a miss next time */
	}
	t->ref_cached = found;
	t->io.nin = p->ninput;
	t->io.in = (const float *const *)t->in;
	t->io.in_n = t->in_n;
	t->io.out_n = n;
	t->io.ref = t->ref;
	t->io.refabs = t->refabs;
	t->io.rtol = ref_rtol(p);
	t->io.atol = 1e-30;
	t->ready = 1;
	return TK_OK;
}

/* prepare() on a thread of its own, its error message carried back (the
 * message buffer is per thread). */
typedef struct ref_job {
	ms_task *t;
	const char *cache_dir;
	pthread_t thread;
	int rc;
	double seconds;    /* its wall time */
	char msg[512];
} ref_job;

static void *ref_thread(void *p)
{
	ref_job *rj = p;
	double t0 = tk_now();
	rj->rc = prepare(rj->t, rj->cache_dir);
	if (rj->rc)
		snprintf(rj->msg, sizeof rj->msg, "%s", tk_errmsg());
	rj->seconds = tk_now() - t0;
	return NULL;
}

void ms_opts_default(ms_opts *o)
{
	memset(o, 0, sizeof *o);
	o->jobs = 2;
	o->build_timeout = 60;
	o->build_adapt = MS_BUILD_ADAPT;
	o->build_adapt_floor = MS_BUILD_ADAPT_FLOOR;
	run_opts_default(&o->run);
}

static void progress(const ms_opts *o, const char *phase, int done, int total)
{
	if (o->progress)
		o->progress(o->ctx, phase, done, total);
}

int ms_measure(ms_task *t, const tk_target *tg, const ms_opts *o, const sp_config *cfg,
               int n, ms_result *out)
{
	int rc = TK_OK;
	memset(out, 0, sizeof *out * (size_t)n);
	if (n == 0)
		return TK_OK;
	double t0;
	kn_kernel *k = calloc((size_t)n, sizeof *k);
	build_job *jobs = calloc((size_t)n, sizeof *jobs);
	int *slot = calloc((size_t)n, sizeof *slot);
	run_lock *lock = NULL;
	for (int i = 0; jobs && i < n; i++)
		jobs[i].fd = -1;
	if (!k || !jobs || !slot) {
		rc = tk_seterr(TK_ENOMEM, "out of memory");
		goto done;
	}
	/* The lock is opened first so that a bad lock path fails before any work. */
	if (!o->nolock && (rc = run_lock_open(o->lock, &lock)))
		goto done;
	int nj = 0;
	t0 = tk_now();
	for (int i = 0; i < n; i++) {
		ms_result *r = &out[i];
		r->idx = (int64_t)sp_index(t->space, &cfg[i]);
		if ((rc = kn_build(t->space, &cfg[i], tg, 0, &k[i])))
			goto done;
		r->config = strdup(k[i].config);
		r->sched = strdup(k[i].sched);
		if (!r->config || !r->sched) {
			rc = tk_seterr(TK_ENOMEM, "out of memory");
			goto done;
		}
		if (!k[i].src) {
			r->error = MEAS_INVALID_CONFIG;
			snprintf(r->msg, sizeof r->msg, "%s", k[i].why);
			slot[i] = -1;
			continue;
		}
		jobs[nj].src = k[i].src;
		slot[i] = nj++;
	}
	progress(o, "build", 0, nj);
	double t1 = tk_now();
	t->time.codegen_s += t1 - t0;
	build_opts bo = { o->cache_dir, o->cache_max, o->jobs > 0 ? o->jobs : 1, o->build_timeout,
	                  o->build_adapt, o->build_adapt_floor };
	/* The reference is computed while the compilers run: a batch's
	 * compilation waits for its slowest kernel, with cores to spare. */
	ref_job rj = { .t = t, .cache_dir = o->cache_dir };
	int threaded = !t->ready && nj > 0 && !pthread_create(&rj.thread, NULL, ref_thread, &rj);
	if (!threaded)
		ref_thread(&rj);
	rc = build_run(tg, &bo, jobs, nj);
	t0 = tk_now();
	if (threaded)
		pthread_join(rj.thread, NULL);
	double t2 = tk_now();
	/* compile_s is the builds' wall time; ref_s (counted in run_s) what
	 * the reference added to it: its wait after the builds when it ran
	 * beside them, its whole time otherwise */
	double ref = threaded ? t2 - t0 : rj.seconds;
	t->time.compile_s += t0 - t1 - (threaded ? 0 : rj.seconds);
	t->time.ref_s += ref;
	t->time.run_s += ref;
	if (!rc && rj.rc)
		rc = tk_seterr(rj.rc, "%s", rj.msg);
	if (rc)
		goto done;
	t0 = t2;
	progress(o, "build", nj, nj);
	int nrun = 0;
	for (int i = 0; i < nj; i++)
		nrun += jobs[i].status == BUILD_OK;
	if (nrun > 0 && lock) {
		if ((rc = run_lock_acquire(lock, o->wait, o->wait_ctx)))
			goto done;
		t0 = tk_now(); /* the wait is not run time */
	}
	double la[1], load = 0;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	if (nrun > 0 && getloadavg(la, 1) == 1 && ncpu > 0)
		load = la[0] / (double)ncpu;
	for (int i = 0, ran = 0; i < n; i++) {
		ms_result *r = &out[i];
		if (slot[i] < 0)
			continue;
		build_job *j = &jobs[slot[i]];
		r->compile_s = j->seconds;
		r->cached = j->cached;
		t->time.cached += j->cached;
		t->time.compiled += !j->cached;
		if (j->status != BUILD_OK) {
			r->error = j->status == BUILD_TIMEOUT ? MEAS_COMPILE_TIMEOUT : MEAS_COMPILE_ERROR;
			snprintf(r->msg, sizeof r->msg, "%.255s", j->msg);
			continue;
		}
		progress(o, "run", ran++, nj);
		r->load = load;
		if ((rc = run_kernel(j, tg, &t->io, &o->run, &r->run)))
			goto done;
		r->error = r->run.error;
		if (r->error)
			snprintf(r->msg, sizeof r->msg, "%s", r->run.msg);
	}
	progress(o, "run", nj, nj);
	t->time.run_s += tk_now() - t0;
done:
	run_lock_close(lock);
	if (jobs)
		build_jobs_close(jobs, n);
	if (k)
		for (int i = 0; i < n; i++)
			kn_kernel_free(&k[i]);
	free(k);
	free(jobs);
	free(slot);
	if (rc)
		ms_results_free(out, n);
	return rc;
}

void ms_results_free(ms_result *r, int n)
{
	for (int i = 0; i < n; i++) {
		free(r[i].config);
		free(r[i].sched);
		r[i].config = r[i].sched = NULL;
	}
}
