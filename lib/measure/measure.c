/*
 * measure: build a batch in parallel, run it sequentially under the
 * measurement lock (see measure.h).
 */
#define _GNU_SOURCE /* getloadavg */
#include "measure.h"

#include <assert.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codegen/kernel.h"
#include "hidden.h"
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

int ms_task_open_target(const char *task, const tk_target *tg, uint64_t seed, ms_task **out)
{
	int rc;
	if (!tg || tg->kind == TK_TARGET_CPU)
		return ms_task_open(task, seed, out);
	assert(tg->kind == TK_TARGET_VTA_SIM);
	*out = NULL;
	ms_task *t = calloc(1, sizeof *t);
	if (!t || !(t->vta = calloc(1, sizeof *t->vta))) {
		free(t);
		return tk_seterr(TK_ENOMEM, "out of memory");
	}
	t->seed = seed;
	t->vta->hw = tg->vta;
	if ((rc = te_task_parse(task, &t->prog)) ||
	    (rc = vta_shape_from_prog(t->prog, &t->vta->hw, &t->vta->shape)) ||
	    (rc = vta_space_create(&t->vta->shape, &t->space))) {
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
	if (t->vta) {
		free(t->vta->inp);
		free(t->vta->wgt);
		free(t->vta->expect);
		free(t->vta);
	}
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

/* ---- on a simulated accelerator --------------------------------------------- */

/* The inputs, the reference (from the cache in cache_dir when it holds it)
 * and the expected output of a vta-sim task. */
static int vta_prepare(ms_task *t, const char *cache_dir)
{
	const te_prog *p = t->prog;
	ms_vta *v = t->vta;
	size_t n = (size_t)p->tensor[p->output].size;
	float *in[2] = { NULL, NULL };
	size_t in_n[2] = { 0, 0 };
	double *ref = malloc(n * sizeof *ref), *refabs = malloc(n * sizeof *refabs);
	int rc = TK_OK;
	assert(p->ninput == 2);
	v->expect = malloc(n);
	for (int i = 0; i < 2; i++) {
		in_n[i] = (size_t)p->tensor[p->input[i]].size;
		in[i] = malloc(in_n[i] * sizeof(float));
	}
	if (!ref || !refabs || !v->expect || !in[0] || !in[1]) {
		rc = tk_seterr(TK_ENOMEM, "out of memory for the inputs of %s", p->key);
		goto done;
	}
	vta_random_inputs(p, &v->hw, t->seed, in);
	const char *dir = cache_dir ? cache_dir : build_default_cache();
	char key[SHA256_HEX];
	int found = 0, usable = build_ref_prepare(dir) == TK_OK;
	build_ref_key(p->key, 2, (const float *const *)in, in_n, key);
	if (usable)
		build_ref_load(dir, key, n, ref, refabs, &found);
	if (!found) {
		if ((rc = ref_compute(p, (const float *const *)in, ref, refabs)))
			goto done;
		if (usable)
			build_ref_store(dir, key, n, ref, refabs); /* a failure: a miss next time */
	}
	t->ref_cached = found;
	vta_expect(&v->shape, ref, v->expect);
	if ((rc = vta_pack(&v->hw, &v->shape, (const float *const *)in, &v->inp, &v->ninp, &v->wgt,
	                   &v->nwgt)))
		goto done;
	t->ready = 1;
done:
	free(in[0]);
	free(in[1]);
	free(ref);
	free(refabs);
	return rc;
}

/* What the simulator's child sends back. */
typedef struct vta_outcome {
	vta_result res;
	int64_t nbad;       /* wrong output elements, -1 if not checked */
	int oom;
	char msg[128];      /* the first wrong element */
} vta_outcome;

typedef struct vta_job {
	const ms_vta *v;
	const vta_prog *prog;
} vta_job;

static void vta_child(void *ctx, void *buf, size_t size)
{
	const vta_job *j = ctx;
	vta_outcome *o = buf;
	assert(size == sizeof *o);
	size_t nout = vta_out_bytes(&j->v->hw, &j->v->shape);
	int8_t *out = malloc(nout ? nout : 1);
	o->nbad = -1;
	/* filled by the STOREs: one that is missing shows as wrong */
	if (out)
		memset(out, 0x5a, nout);
	if (!out || vta_run(&j->v->hw, &j->v->shape, j->prog, j->v->inp, j->v->wgt, out, &o->res)) {
		o->oom = 1;
		free(out);
		return;
	}
	if (o->res.status == VTA_OK || o->res.status == VTA_HAZARD)
		o->nbad = vta_check(&j->v->hw, &j->v->shape, out, j->v->expect, o->msg, sizeof o->msg);
	free(out);
}

/* One configuration on the accelerator: lower, then simulate in a child. */
static int vta_measure_one(ms_task *t, const ms_opts *o, const sp_config *c, ms_result *r)
{
	ms_vta *v = t->vta;
	vta_sched sc;
	vta_prog *prog = NULL;
	int status, rc;
	char msg[256];
	tk_sb sb;

	r->idx = (int64_t)sp_index(t->space, c);
	vta_sched_from_config(t->space, c, &sc);
	tk_sb_init(&sb);
	sp_format(&sb, t->space, c);
	r->config = tk_sb_take(&sb);
	vta_sched_format(&sb, &sc);
	r->sched = tk_sb_take(&sb);
	if (!r->config || !r->sched)
		return tk_seterr(TK_ENOMEM, "out of memory");
	double t0 = tk_now();
	if ((rc = vta_lower(&v->hw, &v->shape, &sc, 0, &prog, NULL, &status, msg, sizeof msg)))
		return rc;
	double t1 = tk_now();
	t->time.codegen_s += t1 - t0;
	if (status) {
		r->error = vta_status_meas(status);
		snprintf(r->msg, sizeof r->msg, "%s", msg);
		return TK_OK;
	}
	if (!t->ready && (rc = vta_prepare(t, o->cache_dir))) {
		vta_prog_free(prog);
		return rc;
	}
	double t2 = tk_now();
	t->time.ref_s += t2 - t1;
	vta_job job = { v, prog };
	vta_outcome out;
	int error;
	memset(&out, 0, sizeof out);
	rc = run_call(vta_child, &job, &out, sizeof out, o->run.timeout_s, 1, &error, msg,
	              sizeof msg);
	vta_prog_free(prog);
	t->time.run_s += tk_now() - t1;
	if (rc)
		return rc;
	int64_t nout = v->shape.n * v->shape.k * v->shape.oh * v->shape.ow;
	if (error != MEAS_OK) {
		r->error = error;
		snprintf(r->msg, sizeof r->msg, "%s%.200s", error == MEAS_RUN_TIMEOUT ? "timeout: " : "",
		         msg);
	} else if (out.oom) {
		r->error = MEAS_RUNTIME_CRASH;
		snprintf(r->msg, sizeof r->msg, "runtime crash: the simulator ran out of memory");
	} else if (out.res.status != VTA_OK) {
		r->error = vta_status_meas(out.res.status);
		if (out.nbad > 0)
			snprintf(r->msg, sizeof r->msg, "%.180s; %lld of %lld outputs wrong", out.res.msg,
			         (long long)out.nbad, (long long)nout);
		else
			snprintf(r->msg, sizeof r->msg, "%s", out.res.msg);
	} else if (out.nbad != 0) {
		r->error = MEAS_WRONG_ANSWER;
		snprintf(r->msg, sizeof r->msg, "wrong-answer: %s; %lld of %lld outputs wrong", out.msg,
		         (long long)out.nbad, (long long)nout);
	} else {
		double s = vta_seconds(&v->hw, out.res.cycles);
		r->error = MEAS_OK;
		r->run.error = MEAS_OK;
		r->run.number = 1;
		r->run.nrepeat = 1;
		r->run.times[0] = r->run.mean = r->run.median = s;
	}
	r->run.error = r->error;
	return TK_OK;
}

/* A batch on the accelerator: no build, no measurement lock (nothing is
 * timed on this machine). */
static int vta_measure(ms_task *t, const ms_opts *o, const sp_config *cfg, int n, ms_result *out)
{
	int rc = TK_OK;
	progress(o, "build", n, n);
	for (int i = 0; i < n && !rc; i++) {
		progress(o, "run", i, n);
		rc = vta_measure_one(t, o, &cfg[i], &out[i]);
	}
	progress(o, "run", n, n);
	if (rc)
		ms_results_free(out, n);
	return rc;
}

/* A compiler without gcc's report flags (clang has no -fopt-info) fails
 * every build that asks for reports: build the jobs[0..n) that failed
 * again without them, so that measurement does not depend on the reports.
 * TK_OK, TK_ENOMEM, or build_run's error. */
static int build_again_plain(const tk_target *tg, const build_opts *bo, build_job *jobs, int n)
{
	int m = 0, rc;
	for (int i = 0; i < n; i++)
		m += jobs[i].status == BUILD_ERROR;
	if (m == 0)
		return TK_OK;
	build_job *again = calloc((size_t)m, sizeof *again);
	int *at = calloc((size_t)m, sizeof *at);
	build_opts plain = *bo;
	if (!again || !at) {
		free(again);
		free(at);
		return tk_seterr(TK_ENOMEM, "out of memory");
	}
	plain.reports = BUILD_REPORTS_NONE;
	for (int i = 0, j = 0; i < n; i++)
		if (jobs[i].status == BUILD_ERROR) {
			again[j].src = jobs[i].src;
			at[j++] = i;
		}
	if (!(rc = build_run(tg, &plain, again, m)))
		for (int j = 0; j < m; j++) {
			double s = jobs[at[j]].seconds;
			jobs[at[j]] = again[j]; /* its descriptor moves with it */
			jobs[at[j]].seconds += s;
		}
	free(again);
	free(at);
	return rc;
}

/* Build jobs[0..n) and, when the compiler's reports are asked for, keep
 * their facts and build the ones that failed with them again without
 * (build_again_plain). TK_OK or build_run's error. */
static int build_some(const tk_target *tg, const ms_opts *o, const build_opts *bo,
                      build_job *jobs, int n)
{
	int rc = build_run(tg, bo, jobs, n);
	if (!rc && o->reports) {
		ms_hidden_keep(tg, o, jobs, n);
		rc = build_again_plain(tg, bo, jobs, n);
	}
	return rc;
}

/* build_some on a thread of its own (overlap), its error message carried
 * back. */
typedef struct build_half {
	const tk_target *tg;
	const ms_opts *o;
	build_opts bo;
	build_job *jobs;
	int n;
	int started;       /* the thread runs: join it */
	int rc;
	char msg[512];
	pthread_t thread;
} build_half;

static void *build_thread(void *p)
{
	build_half *b = p;
	b->rc = build_some(b->tg, b->o, &b->bo, b->jobs, b->n);
	if (b->rc)
		snprintf(b->msg, sizeof b->msg, "%s", tk_errmsg());
	return NULL;
}

/* Before the kernels among jobs[from..to) run, if one of them was built:
 * take the lock (when it is not held yet) and read the load, into *load
 * unless it was read before (non-zero). TK_OK, or run_lock_acquire's error. */
static int run_start(run_lock *lock, const ms_opts *o, const build_job *jobs, int from, int to,
                     double *load)
{
	int built = 0, rc;
	for (int j = from; j < to; j++)
		built |= jobs[j].status == BUILD_OK;
	if (!built)
		return TK_OK;
	if (lock && (rc = run_lock_acquire(lock, o->wait, o->wait_ctx)))
		return rc;
	double la[1];
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	if (*load == 0 && getloadavg(la, 1) == 1 && ncpu > 0)
		*load = la[0] / (double)ncpu;
	return TK_OK;
}

/* Run the built kernels among jobs[from..to) (slot[i] maps configuration i
 * to its job, -1 for none) into out[], counting the runs in *ran for the
 * progress (of total). TK_OK, or run_kernel's error. */
static int run_jobs(ms_task *t, const tk_target *tg, const ms_opts *o, build_job *jobs,
                    const int *slot, int n, ms_result *out, int from, int to, int total,
                    double load, int *ran)
{
	int rc = TK_OK;
	for (int i = 0; i < n && !rc; i++) {
		ms_result *r = &out[i];
		if (slot[i] < from || slot[i] >= to)
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
		progress(o, "run", (*ran)++, total);
		r->load = load;
		if ((rc = run_kernel(j, tg, &t->io, &o->run, &r->run)))
			break;
		r->error = r->run.error;
		if (r->error)
			snprintf(r->msg, sizeof r->msg, "%s", r->run.msg);
	}
	return rc;
}

int ms_measure(ms_task *t, const tk_target *tg, const ms_opts *o, const sp_config *cfg,
               int n, ms_result *out)
{
	if (t->vta) {
		assert(tg->kind == TK_TARGET_VTA_SIM);
		memset(out, 0, sizeof *out * (size_t)n);
		return vta_measure(t, o, cfg, n, out);
	}
	assert(tg->kind == TK_TARGET_CPU);
	int rc = TK_OK;
	memset(out, 0, sizeof *out * (size_t)n);
	if (n == 0)
		return TK_OK;
	double t0;
	kn_kernel *k = calloc((size_t)n, sizeof *k);
	build_job *jobs = calloc((size_t)n, sizeof *jobs);
	int *slot = calloc((size_t)n, sizeof *slot);
	run_lock *lock = NULL;
	build_half rest; /* the half of the batch built while the other is timed */
	memset(&rest, 0, sizeof rest);
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
	                  o->build_adapt, o->build_adapt_floor,
	                  o->reports ? BUILD_REPORTS_NEW : BUILD_REPORTS_NONE };
	/* With overlap, the second half of the batch is compiled, by one
	 * compiler fewer, while the first half is timed. */
	int overlap = o->overlap == MS_OVERLAP_ON, probe = 0;
	if (o->overlap == MS_OVERLAP_AUTO && !t->overlap_probed) {
		ms_overlap v;
		int found = 0;
		/* a verdict that cannot be read is none: no overlap, no probe */
		if (ms_overlap_load(&v, &found) == TK_OK) {
			overlap = found && v.allowed;
			probe = !found;
		}
	}
	int half = overlap && bo.njobs >= 2 && nj >= 2 ? (nj + 1) / 2 : nj;
	rest.tg = tg;
	rest.o = o;
	rest.bo = bo;
	rest.bo.njobs = bo.njobs - 1;
	rest.jobs = jobs + half;
	rest.n = nj - half;
	/* The reference is computed while the compilers run: a batch's
	 * compilation waits for its slowest kernel, with cores to spare. */
	ref_job rj = { .t = t, .cache_dir = o->cache_dir };
	int threaded = !t->ready && nj > 0 && !pthread_create(&rj.thread, NULL, ref_thread, &rj);
	if (!threaded)
		ref_thread(&rj);
	rc = build_some(tg, o, &bo, jobs, half);
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
	if (half < nj && pthread_create(&rest.thread, NULL, build_thread, &rest) == 0)
		rest.started = 1;
	else if (half < nj && (rc = build_some(tg, o, &bo, jobs + half, nj - half)))
		goto done;
	progress(o, "build", half, nj);
	double load = 0;
	int ran = 0;
	if ((rc = run_start(lock, o, jobs, 0, half, &load)))
		goto done;
	t0 = tk_now(); /* the wait for the lock is not run time */
	rc = run_jobs(t, tg, o, jobs, slot, n, out, 0, half, nj, load, &ran);
	if (!rc && probe && ran > 0) {
		/* Ask the machine inside this hold of the lock; once per task
		 * whatever comes of it, so that a probe that fails or cannot be
		 * kept is not made again for every batch. */
		ms_overlap v;
		t->overlap_probed = 1;
		if (ms_overlap_probe(tg, o, &v) == TK_OK)
			ms_overlap_store(&v);
	}
	t->time.run_s += tk_now() - t0;
	if (rest.started) {
		t0 = tk_now();
		pthread_join(rest.thread, NULL);
		rest.started = 0;
		t->time.compile_s += tk_now() - t0; /* only the wait is not run time */
		if (!rc && rest.rc)
			rc = tk_seterr(rest.rc, "%s", rest.msg);
	}
	if (half < nj)
		progress(o, "build", nj, nj);
	if (rc || (rc = run_start(lock, o, jobs, half, nj, &load)))
		goto done;
	t0 = tk_now();
	rc = run_jobs(t, tg, o, jobs, slot, n, out, half, nj, nj, load, &ran);
	progress(o, "run", nj, nj);
	t->time.run_s += tk_now() - t0;
done:
	if (rest.started)
		pthread_join(rest.thread, NULL);
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
