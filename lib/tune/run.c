/*
 * run: a tuning job from start to end (tn_tune): set up the tasks and the
 * measurer, begin (or resume) a run in the store, share the budget between
 * tasks (round robin, then the Ansor task scheduler's gradient rule), and
 * for each batch: ask the task's tuner, measure, store, learn, report.
 */
#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "record/record.h"
#include "store/store_report.h"
#include "store/store_tuning.h"
#include "train/train.h"
#include "tune_int.h"

/* ---- options ------------------------------------------------------------- */

void tn_opts_default(tn_opts *o)
{
	memset(o, 0, sizeof *o);
	o->trials = 200;
	snprintf(o->model, sizeof o->model, "xgb");
	snprintf(o->search, sizeof o->search, "sa");
	o->plan_size = 64;
	o->epsilon = 0.05;
	o->batch = 16;
	o->round = 64;
	o->seed = 1;
	o->regtile = -1;
	o->confirm = 8;
	o->bound = TN_BOUND;
	o->cover = 16;
	o->ctl.cv = 0.1;
	o->ctl.share = 0.5;
	o->ctl.batches = 4;
	o->ctl.top = 8;
	o->bo_kappa = 2;
	o->alpha = 1;
	o->adapt = TN_ADAPT_AUTO;
	o->guard = 1;
	sr_sa_opts_default(&o->sa);
	o->sa.max_scores = -1; /* the model's: tuner.c sa_opts */
	ms_opts_default(&o->ms);
}

/* ---- tasks ----------------------------------------------------------------- */

typedef struct hw_pick {
	const char *want;  /* key or id text, or "" */
	int64_t id;
	char key[640];
} hw_pick;

static int pick_hw(void *p, int64_t id, const char *key, int64_t n)
{
	hw_pick *h = p;
	char ids[24];
	snprintf(ids, sizeof ids, "%lld", (long long)id);
	if (!h->want[0] || !strcmp(h->want, key) || !strcmp(h->want, ids)) {
		h->id = id;
		snprintf(h->key, sizeof h->key, "%s", key);
		return 1; /* the first match has the most records */
	}
	return 0;
}

typedef struct pool_ctx {
	tn_task *t;
	int cap;
} pool_ctx;

/* One configuration of the dataset into t's pool; texts this space does
 * not parse (another version's) are left out. */
static int pool_add(void *p, const char *text)
{
	pool_ctx *P = p;
	tn_task *t = P->t;
	sp_config c;
	if (sp_parse(t->space, text, &c))
		return TK_OK;
	if (t->npool == P->cap) {
		int cap = P->cap ? 2 * P->cap : 64;
		sp_config *q = realloc(t->pool, sizeof *q * (size_t)cap);
		if (!q)
			return tk_seterr(TK_ENOMEM, "out of memory");
		t->pool = q;
		P->cap = cap;
	}
	t->pool[t->npool++] = c;
	return TK_OK;
}

/* --replay-pool: the configurations of t the dataset measured on t->dhw. */
static int pool_load(tn_ctx *C, tn_task *t)
{
	pool_ctx P = { t, 0 };
	int rc = store_task_configs(C->data, t->key, t->dhw, pool_add, &P);
	if (!rc && t->npool == 0)
		rc = tk_seterr(TK_EINVAL, "the replay dataset has no configuration of %s that this"
		               " version parses", t->key);
	return rc;
}

/* t's cost model: the job's on the features asked for, or by default
 * those the model reads on t (cm_feature: knob without a loop nest, as
 * an imported task's or a simulated accelerator's); or for an operator the
 * model file was not trained on (C->ops) the other model, from scratch on
 * itervar features (knob for a task without a program). */
static int task_model(const tn_ctx *C, tn_task *t)
{
	int nest = t->space->prog && !(C->target && (C->target->flags & TK_TARGET_SIMULATED));
	t->mk = C->mk;
	t->feat = C->feat >= 0 ? C->feat : cm_feature(C->mk, nest);
	t->fixed = C->fixed;
	/* the guard's model from scratch: the plain tune's, on its features */
	t->guarded = C->scratch && C->fixed;
	t->sfeat = t->guarded ? cm_feature(C->scratch, nest) : t->feat;
	if (!C->other || tk_list_has(C->ops, t->key, strcspn(t->key, ":")))
		return TK_OK;
	t->guarded = 0;
	t->mk = C->other;
	t->fixed = NULL;
	t->feat = t->space->prog && (C->other->features & 1u << FEAT_ITERVAR) ? FEAT_ITERVAR
	                                                                      : FEAT_KNOB;
	if (!(C->other->features & 1u << t->feat))
		return tk_seterr(TK_EINVAL, "%s: the other model %s does not take %s features", t->key,
		                 C->other->name, feat_kind_name(t->feat));
	return TK_OK;
}

static int task_open(tn_ctx *C, const char *key, double weight, tn_task **out)
{
	int rc;
	tn_task *t = calloc(1, sizeof *t);
	*out = NULL;
	if (!t)
		return tk_seterr(TK_ENOMEM, "out of memory");
	t->weight = weight;
	sr_set_init(&t->visited);
	if ((rc = ms_task_open_target(key, C->target, C->o->seed, &t->mt)) == TK_OK) {
		t->space = t->mt->space;
		t->flops = t->mt->prog->flops;
		t->key = strdup(t->mt->prog->key);
	} else if (!C->data) {
		tuner_task_free(t);
		return rc;
	} else {
		char *json = NULL;
		double flops = 0;
		if ((rc = store_task_space_json(C->data, key, &json)) || !json) {
			free(json);
			tuner_task_free(t);
			return rc ? rc : tk_seterr(TK_EINVAL, "task %s has neither a template nor a space", key);
		}
		rc = sp_space_from_json(json, &t->own_space);
		free(json);
		if (rc || (rc = store_task_flops(C->data, key, &flops))) {
			tuner_task_free(t);
			return rc;
		}
		t->space = t->own_space;
		t->flops = flops;
		t->key = strdup(key);
	}
	if (!t->key) {
		tuner_task_free(t);
		return tk_seterr(TK_ENOMEM, "out of memory");
	}
	if ((rc = task_model(C, t))) {
		tuner_task_free(t);
		return rc;
	}
	if (t->feat != FEAT_KNOB && !t->space->prog && C->model_based) {
		tuner_task_free(t);
		if (C->feat < 0)
			return tk_seterr(TK_EINVAL, "%s has no program: model %s reads %s features,"
			                 " which need one", key, C->mk->name, feat_kind_name(t->feat));
		return tk_seterr(TK_EINVAL, "%s has no program: only --feature knob applies to it", key);
	}
	tk_rng_seed(&t->rng, C->o->seed, tk_hash64(t->key, strlen(t->key), 0));
	t->epsilon = C->o->epsilon;
	t->free_search = C->sk->free_state;
	if (C->data) {
		hw_pick h = { C->o->replay_hw, 0, "" };
		rc = store_task_hardware(C->data, t->key, pick_hw, &h);
		if (rc < 0 || (rc != 1 && rc != TK_OK)) {
			tuner_task_free(t);
			return rc;
		}
		if (!h.id) {
			tuner_task_free(t);
			return tk_seterr(TK_EINVAL, "the replay dataset has no records of %s%s%s", key,
			                 C->o->replay_hw[0] ? " on hardware " : "", C->o->replay_hw);
		}
		t->dhw = h.id;
		if (C->o->replay_pool && (rc = pool_load(C, t))) {
			tuner_task_free(t);
			return rc;
		}
	}
	*out = t;
	return TK_OK;
}

/* ---- scheduling -------------------------------------------------------------- */

#define SCHED_ALPHA 0.2
#define SCHED_WINDOW 3

/* Ansor's gradient rule: the task whose weighted latency is expected to
 * fall the most, from its recent improvement and from what another round
 * could give. */
static int pick_task(tn_task **tk, int n, tk_rng *rng)
{
	int best = -1, nmin = 0;
	double g_min = INFINITY;
	for (int i = 0; i < n; i++) {
		tn_task *t = tk[i];
		if (t->done)
			continue;
		if (t->rounds == 0)
			return i; /* round robin first */
		double cost = t->best_lat > 0 ? t->best_lat : 1e10;
		double back = 0;
		if (t->nhist >= SCHED_WINDOW) {
			double now = t->hist[(t->nhist - 1) % 8], then = t->hist[(t->nhist - SCHED_WINDOW) % 8];
			back = (now - then) / SCHED_WINDOW;
		}
		double fwd = -cost / t->rounds;
		double g = t->weight * (SCHED_ALPHA * back + (1 - SCHED_ALPHA) * fwd);
		if (g < g_min - 1e-15) {
			g_min = g;
			best = i;
			nmin = 1;
		} else if (fabs(g - g_min) <= 1e-15 && tk_rng_below(rng, (uint32_t)++nmin) == 0) {
			best = i;
		}
	}
	return best;
}

static double net_latency(tn_task **tk, int n)
{
	double s = 0;
	for (int i = 0; i < n; i++) {
		if (!(tk[i]->best_lat > 0))
			return -1;
		s += tk[i]->weight * tk[i]->best_lat;
	}
	return s;
}

/* The estimated latency as the store ranks the records (store_best, what
 * report best shows): each task's best configuration by its median over
 * its repeated measurements, from every run on the hardware, rather than
 * the fastest single record the search saw. -1 if a task has none. */
typedef struct final_best {
	tn_task **tk;
	int n;
	double *lat;
} final_best;

static int got_best(void *p, const store_rec *r)
{
	final_best *F = p;
	for (int i = 0; i < F->n; i++)
		if (!strcmp(F->tk[i]->key, r->task))
			F->lat[i] = r->median;
	return 0;
}

static int stored_net_latency(tk_store *st, int64_t hw_id, tn_task **tk, int n, double *out)
{
	final_best F = { tk, n, calloc((size_t)n, sizeof(double)) };
	int rc;
	*out = -1;
	if (!F.lat)
		return tk_seterr(TK_ENOMEM, "out of memory");
	if (!(rc = store_best(st, hw_id, got_best, &F))) {
		double s = 0;
		for (int i = 0; i < n && s >= 0; i++)
			s = F.lat[i] > 0 ? s + tk[i]->weight * F.lat[i] : -1;
		*out = s;
	}
	free(F.lat);
	return rc;
}

/* ---- resuming ------------------------------------------------------------------- */

typedef struct reload {
	tn_ctx *C;
	tn_task **tk;
	int n;
	int rc;
	double last_at;
	int prior;         /* earlier runs' records: each configuration once */
} reload;

static int reload_rec(void *p, const store_rec *rec)
{
	reload *R = p;
	tn_task *t = NULL;
	for (int i = 0; i < R->n; i++)
		if (!strcmp(R->tk[i]->key, rec->task))
			t = R->tk[i];
	if (!t)
		return 0;
	sp_config c;
	if (sp_parse(t->space, rec->config, &c))
		return 0;
	ms_result r;
	memset(&r, 0, sizeof r);
	r.error = rec->error;
	r.run.median = rec->median;
	r.run.bounded = rec->bounded;
	if (R->prior && sr_set_has(&t->visited, sp_index(t->space, &c)))
		return 0; /* this run's own, or timed again to confirm it */
	if ((R->rc = sr_set_add(&t->visited, sp_index(t->space, &c))) ||
	    (R->rc = tuner_update(R->C, t, &c, &r, 1)))
		return 1;
	if (rec->at > R->last_at)
		R->last_at = rec->at;
	return 0;
}

/* ---- the job ------------------------------------------------------------------------ */

/* Seconds: simulated when replaying, else the monotonic clock. */
static double job_clock(const tn_job *J)
{
	return J->C.data ? J->sim_clock : tk_now();
}

static int out_of_time(const tn_job *J)
{
	return J->C.o->time_budget > 0 && job_clock(J) - J->clock0 >= J->C.o->time_budget;
}

int job_keep(tn_job *J, tn_task *t, const ms_result *r, int n, int64_t *ids)
{
	const tn_hooks *h = J->h;
	int trial0 = J->s.trial;
	int rc = rec_batch(&J->s, t->task_id, r, n, ids);
	for (int i = 0; !rc && i < n; i++)
		J->bounded += r[i].error == MEAS_OK && r[i].run.bounded;
	if (!rc && h && h->records)
		rc = h->records(h->ctx, t->key, t->flops, J->s.hw_id, J->s.run_id, trial0, r, ids, n);
	return rc;
}

/* ML2Tuner's explorer: what V dropped and what was compiled for the
 * batch, and the held-out errors of P and A at each refit, into the run
 * log (round: trials so far), then zeroed. */
static int ml2_log(tn_job *J, tn_task *t)
{
	const char *key[] = { "ml2_dropped", "ml2_compiled", "ml2_failed", "ml2_heldout",
	                      "ml2_sse_p", "ml2_sse_a" };
	double v[] = { t->ml2_dropped, t->ml2_compiled, t->ml2_failed, t->ml2_nse, t->ml2_se_p,
	               t->ml2_se_a };
	int rc = TK_OK;
	for (int i = 0; i < 6 && !rc; i++) {
		char k[600];
		if (i >= 3 && t->ml2_nse == 0)
			break;
		snprintf(k, sizeof k, "%s:%s", key[i], t->key);
		rc = store_run_log(J->s.store, J->s.run_id, (int)J->used, k, v[i]);
	}
	t->ml2_dropped = t->ml2_compiled = t->ml2_failed = t->ml2_nse = 0;
	t->ml2_se_p = t->ml2_se_a = 0;
	return rc;
}

/* A measured batch of up to want trials of t (*got of them). */
static int run_batch(tn_job *J, tn_task *t, int want, int *got)
{
	tn_ctx *C = &J->C;
	sp_config *cfg = malloc(sizeof *cfg * (size_t)want);
	ms_result *r = calloc((size_t)want, sizeof *r);
	int64_t *ids = calloc((size_t)want, sizeof *ids);
	int n = 0, rc;
	double cost = 0;
	*got = 0;
	if (!cfg || !r || !ids) {
		rc = tk_seterr(TK_ENOMEM, "out of memory");
		goto done;
	}
	double t0 = tk_now();
	if ((rc = tuner_next(C, t, want, cfg, &n)) || n == 0)
		goto done;
	if (C->ctl->before && (rc = C->ctl->before(J, t, cfg, n)))
		goto done;
	double think = tk_now() - t0; /* replay: the model and search time is real */
	J->tuner_s += think;
	if ((rc = measurer_run(C, t, cfg, n, r, &cost, 1)))
		goto done;
	cost += think;
	if (C->data)
		for (int i = 0; i < n; i++)
			r[i].at = J->sim_clock + cost * (i + 1) / n;
	J->sim_clock += cost;
	if ((rc = job_keep(J, t, r, n, ids)))
		goto free_results;
	for (int i = 0; i < n; i++)
		J->invalid += r[i].error != MEAS_OK;
	t0 = tk_now();
	int fits = t->fits;
	rc = guard_batch(J, t, cfg, r, n); /* before any model learns from it */
	J->used += n;
	if (!rc)
		rc = tuner_update(C, t, cfg, r, n);
	if (!rc)
		rc = guard_after(J, t, fits);
	J->tuner_s += tk_now() - t0;
	t->measured += n;
	if (!rc && C->ctl->after)
		rc = C->ctl->after(J, t);
	if (!rc && (C->mk->flags & CM_HIDDEN))
		rc = ml2_log(J, t);
	if (!rc && (C->sk->flags & SR_CONTEXT_EPSILON) && t->fits > t->logged_fits) {
		char key[600];
		snprintf(key, sizeof key, "epsilon:%s", t->key);
		if (!(rc = store_run_log(J->s.store, J->s.run_id, t->fits, key, t->epsilon)))
			t->logged_fits = t->fits;
	}
	*got = n;
free_results:
	ms_results_free(r, n);
done:
	free(cfg);
	free(r);
	free(ids);
	return rc;
}

/* ---- confirmation ---------------------------------------------------------
 *
 * On a noisy machine a task's best record is partly its luckiest timing:
 * the fastest of 300 single measurements were, on this project's benchmark
 * machine, 10-30% above what the same kernels measured again. After the
 * budget, the o->confirm fastest distinct configurations of each task are
 * measured twice more, in turns (1..K, 1..K), and stored as records of the
 * run after its trials, so each has three records; store_best ranks a
 * configuration by its median record. That alone would hand the crown to
 * the (K+1)-th configuration, whose one lucky record now beats the medians
 * of the confirmed ones; so the confirmation goes on, K at a time, with the
 * fastest unconfirmed configurations whose one record is above the best
 * median of three so far, until there are none (at most CONFIRM_ROUNDS
 * rounds): the best is then one that was fast every time. Replays are not
 * confirmed: a dataset answers the same every time. */
#define CONFIRM_ROUNDS 8

static float median3(float a, float b, float c)
{
	float lo = a < b ? a : b, hi = a < b ? b : a;
	return c < lo ? lo : c > hi ? hi : c;
}

/* Measure configurations top[0..n) of t twice more, in turns; *bar rises to
 * the best median of three among them. */
static int confirm_round(tn_job *J, tn_task *t, const int *top, int n, float *bar)
{
	int m = 2 * n, rc;
	sp_config *cfg = malloc(sizeof *cfg * (size_t)m);
	ms_result *r = calloc((size_t)m, sizeof *r);
	int64_t *ids = calloc((size_t)m, sizeof *ids);
	double cost;
	if (!cfg || !r || !ids) {
		rc = tk_seterr(TK_ENOMEM, "out of memory");
		goto done;
	}
	for (int i = 0; i < m; i++)
		cfg[i] = t->xc[top[i % n]];
	if ((rc = measurer_run(&J->C, t, cfg, m, r, &cost, 0)))
		goto done;
	rc = job_keep(J, t, r, m, ids);
	J->confirmed += m;
	for (int i = 0; i < n; i++) {
		float y = median3(t->ys[top[i]], (float)tuner_throughput(t, &r[i]),
		                  (float)tuner_throughput(t, &r[n + i]));
		*bar = y > *bar ? y : *bar;
	}
	ms_results_free(r, m);
done:
	free(cfg);
	free(r);
	free(ids);
	return rc;
}

static int confirm_task(tn_job *J, tn_task *t)
{
	int k = J->C.o->confirm, rc = TK_OK;
	int *top = malloc(sizeof *top * (size_t)k);
	sr_set done;
	float bar = 0;
	sr_set_init(&done);
	if (!top)
		return tk_seterr(TK_ENOMEM, "out of memory");
	for (int round = 0; round < CONFIRM_ROUNDS && !rc; round++) {
		int n = 0;
		for (; n < k && !rc; n++) {
			int best = -1;
			for (int i = 0; i < t->nx; i++)
				if (!t->bnd[i] && /* one timing, far from the best: never confirmed */
				    t->ys[i] > bar && (best < 0 || t->ys[i] > t->ys[best]) &&
				    !sr_set_has(&done, sp_index(t->space, &t->xc[i])))
					best = i;
			if (best < 0)
				break;
			top[n] = best;
			rc = sr_set_add(&done, sp_index(t->space, &t->xc[best]));
		}
		if (n == 0 || rc)
			break;
		rc = confirm_round(J, t, top, n, &bar);
	}
	sr_set_free(&done);
	free(top);
	return rc;
}

/* Where this process's tuning time went, into the run log under round =
 * trials so far (a resumed run adds its own rows): seconds of search (the
 * tuner less its model fits and the builds for hidden features), fit,
 * codegen, compile and run, and the kernels compiled and found in the
 * build cache (the builds for hidden features included). */
static int log_time(tn_job *J)
{
	double v[8] = { J->tuner_s, 0, 0, 0, 0, 0, 0, 0 };
	static const char *const key[8] = { "seconds:search", "seconds:fit", "seconds:codegen",
	                                    "seconds:compile", "seconds:run", "kernels:compiled",
	                                    "kernels:cached", "seconds:reference" };
	for (int i = 0; i < J->ntask; i++) {
		const tn_task *t = J->tk[i];
		v[0] -= t->fit_s;
		v[1] += t->fit_s;
		if (t->mt) {
			v[0] -= t->mt->time.hidden_s; /* the search's compiles are compile time */
			v[2] += t->mt->time.codegen_s;
			v[3] += t->mt->time.compile_s;
			v[4] += t->mt->time.run_s;
			v[5] += (double)t->mt->time.compiled;
			v[6] += (double)t->mt->time.cached;
			v[7] += t->mt->time.ref_s;
		}
	}
	if (v[0] < 0)
		v[0] = 0;
	for (int i = 0; i < 8; i++) {
		int rc = store_run_log(J->s.store, J->s.run_id, (int)J->used, key[i], v[i]);
		if (rc)
			return rc;
	}
	for (int i = 0; i < J->ntask && (J->C.ctl->flags & TN_CTL_ANSWERS); i++) {
		char k[700];
		int rc;
		snprintf(k, sizeof k, "trials:measured:%s", J->tk[i]->key);
		if ((rc = store_run_log(J->s.store, J->s.run_id, (int)J->used, k,
		                        (double)J->tk[i]->measured)))
			return rc;
		snprintf(k, sizeof k, "trials:predicted:%s", J->tk[i]->key);
		if ((rc = store_run_log(J->s.store, J->s.run_id, (int)J->used, k,
		                        (double)J->tk[i]->predicted)))
			return rc;
	}
	/* and per task the model's fits (refits and fine-tuning updates) */
	for (int i = 0; J->C.model_based && i < J->ntask; i++) {
		char k[600];
		snprintf(k, sizeof k, "fits:%s", J->tk[i]->key);
		int rc = store_run_log(J->s.store, J->s.run_id, (int)J->used, k, J->tk[i]->fits);
		if (rc)
			return rc;
	}
	return TK_OK;
}

static void report(tn_job *J, tn_task *t)
{
	const tn_opts *o = J->C.o;
	const tn_hooks *h = J->h;
	if (!h || !h->progress)
		return;
	tn_status s;
	s.task = t->key;
	s.done = J->used;
	s.total = o->trials;
	s.best_gflops = t->best_thr * (t->flops > 0 ? 1e-9 : 1);
	s.per_second = !(t->flops > 0);
	s.invalid = J->used ? (double)J->invalid / (double)J->used : 0;
	s.elapsed = tk_now() - J->start;
	s.eta = J->used ? s.elapsed / (double)J->used * (double)(o->trials - J->used) : 0;
	s.net_latency = J->ntask > 1 ? net_latency(J->tk, J->ntask) : -1;
	h->progress(h->ctx, &s);
}

/* The model of the tasks the model file was not trained on (C->other):
 * o->other_model, chosen for the search with "auto", none with "none"; a
 * model fitted from scratch that the search can plan on. */
static int other_model(const tn_opts *o, tn_ctx *C)
{
	int rc;
	assert(o->other_model >= 0 && o->other_model <= cm_nkinds);
	C->other = o->other_model ? cm_kinds[o->other_model - 1] : NULL;
	if (C->other && !cm_is_model(C->other)) { /* none: the file's model for all */
		C->other = NULL;
		return TK_OK;
	}
	if (!C->other &&
	    (rc = cm_lookup(C->sk->flags & SR_NEEDS_UNCERTAINTY ? "rfei" : "xgb", &C->other)))
		return rc;
	const char *name = C->other->name;
	if (!cm_is_model(C->other) || (C->other->flags & (CM_HIDDEN | CM_FINETUNE)))
		return tk_seterr(TK_EINVAL, "--other-model %s: not a model fitted from scratch"
		                 " (xgb, rfei, ...)", name);
	if ((C->sk->flags & SR_NEEDS_UNCERTAINTY) && !(C->other->flags & CM_UNCERTAINTY))
		return tk_seterr(TK_EINVAL, "--other-model %s has no deviation for %s", name,
		                 C->sk->name);
	return TK_OK;
}

/* The way a model file adapts (o->adapt) into C->adapt, and its row of
 * tr_methods[] into *tm (NULL: never refit). Auto, the default, is the
 * kind's cheap way to learn the task's own records: more boosting rounds
 * on top of the file's trees (a few trees on a few hundred rows), or for
 * a network a few epochs of every parameter (TenSet's fine-tuning, on as
 * few rows); a kind with neither keeps the file's model as it is. */
static int adapt_resolve(const tn_opts *o, tn_ctx *C, const tr_method **tm)
{
	static const unsigned cheap[] = { CM_ADAPT_BOOST, CM_ADAPT_FINETUNE };
	*tm = NULL;
	C->adapt = 0;
	if (o->adapt == TN_ADAPT_AUTO) {
		for (int i = 0; o->model_file[0] && i < ArraySize(cheap) && !*tm; i++)
			for (int k = 0; k < tr_nmethods && !*tm; k++)
				if ((C->mk->adapts & cheap[i]) && (unsigned)tr_methods[k].adapt == cheap[i])
					*tm = &tr_methods[k];
	} else if (o->adapt) {
		assert(o->adapt > 0 && o->adapt <= tr_nmethods);
		*tm = &tr_methods[o->adapt - 1];
		if (!o->model_file[0])
			return tk_seterr(TK_EINVAL, "--adapt adapts a trained model: give --model-file");
		if (!(*tm)->adapt && !(*tm)->scratch) {
			*tm = NULL; /* none: the file's model as it is */
			return TK_OK;
		}
		if (!(*tm)->adapt || !(C->mk->adapts & (unsigned)(*tm)->adapt))
			return tk_seterr(TK_EINVAL, "--adapt %s does not adapt a model of kind %s",
			                 (*tm)->name, C->mk->name);
	}
	if (*tm)
		C->adapt = (*tm)->adapt;
	return TK_OK;
}

/* Resolve the model, search and feature kind of o into C and check that
 * they go together, from the tables' flags. */
static int check_opts(const tn_opts *o, tn_ctx *C)
{
	char names[256];
	int rc;
	C->feat = -1; /* by default each task's model's (task_model) */
	if (o->feature[0] && (C->feat = feat_kind_parse(o->feature)) < 0)
		return tk_seterr(TK_EINVAL, "unknown feature kind '%s' (knob, itervar, curve, tlp, graph,"
		                 " hidden)", o->feature);
	if (C->feat == FEAT_HIDDEN)
		return tk_seterr(TK_EINVAL, "hidden features come from compiling the candidates: the"
		                 " ml2 model reads them beside the --feature it ranks on");
	if ((rc = cm_lookup(o->model, &C->mk)) || (rc = sr_lookup(o->search, &C->sk)))
		return rc;
	assert(C->sk->next || C->sk->plan);
	C->model_based = cm_is_model(C->mk) && C->sk->plan;
	if ((C->sk->flags & SR_NEEDS_UNCERTAINTY) && !(C->mk->flags & CM_UNCERTAINTY)) {
		cm_names(names, sizeof names, CM_UNCERTAINTY, 1);
		return tk_seterr(TK_EINVAL, "%s needs a model with uncertainty: --model %s", C->sk->name,
		                 names);
	}
	if ((C->sk->flags & SR_NEEDS_MODEL) && !cm_is_model(C->mk)) {
		cm_names(names, sizeof names, 0, 1);
		return tk_seterr(TK_EINVAL, "%s needs a model: --model %s", C->sk->name, names);
	}
	if (C->feat >= 0 && cm_is_model(C->mk) && !(C->mk->features & 1u << C->feat))
		return tk_seterr(TK_EINVAL, "model %s does not take %s features", C->mk->name,
		                 o->feature);
	if ((rc = adapt_resolve(o, C, &C->adapt_method)))
		return rc;
	if ((rc = other_model(o, C)) || (rc = guard_setup(o, C)))
		return rc;
	if ((C->mk->flags & CM_HIDDEN) && !C->model_based)
		return tk_seterr(TK_EINVAL, "model %s needs a search that plans on it", C->mk->name);
	assert(o->ctl.kind >= 0 && o->ctl.kind < tn_nctls);
	C->ctl = tn_ctls[o->ctl.kind];
	if ((C->ctl->flags & TN_CTL_MODEL) && !C->model_based) {
		cm_names(names, sizeof names, 0, 1);
		return tk_seterr(TK_EINVAL, "controller %s needs a model (%s) and a search that plans"
		                 " on it", C->ctl->name, names);
	}
	if (o->replay_pool && !o->replay[0])
		return tk_seterr(TK_EINVAL, "--replay-pool searches a replay store's configurations:"
		                 " give --replay");
	if (o->transfer_hw[0] && !o->transfer_from[0])
		return tk_seterr(TK_EINVAL, "a transfer hardware needs a history store (--transfer-from)");
	if (o->transfer_from[0] && (!(C->mk->flags & CM_TRANSFER) || !C->model_based)) {
		cm_names(names, sizeof names, CM_TRANSFER, 1);
		return tk_seterr(TK_EINVAL, "transfer learning needs a model that takes a base model "
		                 "(%s) and a search that plans on it", names);
	}
	return tn_opts_check(o);
}

/* What a job is asked (tn_tune): tasks and options of its own (a shard's
 * share of the trials), and what the run records and shares its rounds
 * by: the options as given and every task. */
typedef struct job_args {
	tk_store *st;
	const tn_stores *in;
	const tk_target *target;
	int ntask;
	char *const *task;
	const double *weight;     /* NULL: all 1 */
	const tn_opts *o;
	int all_ntask;
	char *const *all_task;
	const double *all_weight;
	const tn_opts *all_o;
	const char *argv;
	int64_t resume_run;
} job_args;

/* Opening, 1: the options checked, the tasks opened with their models
 * (the model file's features checked, a copy of it for each task that
 * fine-tunes or adapts it) and their register tiles bounded. */
static int job_tasks(tn_job *J, const job_args *A, tn_result *res)
{
	const tn_opts *o = A->o;
	const tn_stores *in = A->in;
	int rc;
	if ((rc = check_opts(o, &J->C)))
		return rc;
	if (A->ntask < 1)
		return tk_seterr(TK_EINVAL, "no task to tune");
	if (A->resume_run > 0 && (J->C.ctl->flags & TN_CTL_ANSWERS))
		return tk_seterr(TK_EINVAL, "run %lld has the adaptive controller: its predicted trials"
		                 " are not records, so it cannot be resumed", (long long)A->resume_run);
	if ((o->replay[0] && !in->replay) || (o->transfer_from[0] && !in->history) ||
	    (o->model_file[0] && !in->model))
		return tk_seterr(TK_EINVAL, "the replay or history store or the model file is not open");
	if (o->model_file[0] && o->transfer_from[0])
		return tk_seterr(TK_EINVAL, "a trained model (--model-file) is never refit: no"
		                 " --transfer-from with it");
	J->C.fixed = in->model;
	if (!in->model || !in->model_ops[0])
		J->C.other = NULL; /* a file of no named operators serves them all */
	J->C.ops = in->model_ops;
	J->C.data = o->replay[0] ? in->replay : NULL;
	/* hidden features come from compiling for the target measured on: not
	 * when the measurements are replayed from other hardware */
	J->C.hidden = !J->C.data && (J->C.mk->flags & CM_HIDDEN);
	if (!(J->tk = calloc((size_t)A->ntask, sizeof *J->tk)))
		return tk_seterr(TK_ENOMEM, "out of memory");
	for (int i = 0; i < A->ntask; i++, J->ntask++)
		if ((rc = task_open(&J->C, A->task[i], A->weight ? A->weight[i] : 1, &J->tk[i])))
			return rc;
	/* per task: the model file takes its features, and a file that is a
	 * starting point (CM_FINETUNE, or --adapt) gives it a copy to fine-tune
	 * or adapt on its records; or it has the other model */
	int start = J->C.fixed && ((cm_kind_of(J->C.fixed)->flags & CM_FINETUNE) || J->C.adapt);
	for (int i = 0, d; i < J->ntask; i++) {
		tn_task *t = J->tk[i];
		res->other += t->mk != J->C.mk;
		if (!t->fixed)
			continue;
		if ((rc = feat_length(t->feat, t->space, &d)))
			return rc;
		/* a narrower task's rows are padded (train pads a mixed store's) */
		if (d > in->model_d)
			return tk_seterr(TK_EINVAL, "%s: %d %s features, the model file takes %d", t->key, d,
			                 feat_kind_name(t->feat), in->model_d);
		t->width = in->model_d;
		if (start && (rc = cm_clone(J->C.fixed, &t->model)))
			return rc;
	}
	if (J->C.other)
		snprintf(res->other_model, sizeof res->other_model, "%s", J->C.other->name);
	/* the register file of the target measured on bounds the tiles drawn */
	for (int i = 0; i < J->ntask && !J->C.data && o->regtile; i++)
		if (J->tk[i]->space->prog)
			sp_limit_regtile(J->tk[i]->space, A->target->vlen,
			                 o->regtile > 0 ? o->regtile : A->target->nvreg - 2);
	return TK_OK;
}

/* Opening, 2: the hardware the records belong to, the transfer base
 * models, the run begun (or reopened) and its tasks in the store. */
static int job_begin(tn_job *J, const job_args *A, tn_result *res)
{
	const tn_opts *o = A->o;
	tk_store *st = A->st;
	store_hw hw;
	char hwkey[700], hwspec[600];
	hw_pick p = { o->replay_hw, 0, "" }; /* hw.cpu points into it until the run begins */
	int rc;
	if (J->C.data) {
		if ((rc = store_task_hardware(J->C.data, J->tk[0]->key, pick_hw, &p)) != 1 && rc)
			return rc;
		for (int i = 1; i < J->ntask; i++)
			if (J->tk[i]->dhw != J->tk[0]->dhw)
				return tk_seterr(TK_EINVAL, "the tasks were measured on different hardware in "
				                 "the replay dataset: give --replay-hardware");
		snprintf(hwkey, sizeof hwkey, "replay:%s", p.key);
		snprintf(hwspec, sizeof hwspec, "replay:%s", o->replay);
		memset(&hw, 0, sizeof hw);
		hw.key = hwkey;
		hw.kind = "replay";
		hw.cpu = p.key;
		hw.spec = hwspec;
	} else {
		rec_target_hw(A->target, &hw);
	}
	/* before the run begins: too little history leaves no empty run behind */
	if (o->transfer_from[0] &&
	    (rc = model_load_history(&J->C, J->tk, J->ntask, A->in->history, o->transfer_from,
	                             o->transfer_hw[0] ? o->transfer_hw : hw.key, &res->history)))
		return rc;
	if (A->resume_run > 0) {
		if ((rc = store_run_reopen(st, A->resume_run)) ||
		    (rc = rec_resume(&J->s, st, A->resume_run)))
			return rc;
		/* measured on the hardware it was begun on, or its records would mix */
		char *key = NULL, *spec = NULL;
		int64_t id;
		if (!J->C.data &&
		    !(rc = store_hardware_find(st, J->s.hw_id, NULL, &id, &key, &spec)) &&
		    strcmp(key, A->target->key))
			rc = tk_seterr(TK_EINVAL, "run %lld was measured on other hardware (%s); resume "
			               "it with --target %s", (long long)A->resume_run, key,
			               spec ? spec : "SPEC");
		free(key);
		free(spec);
		if (rc)
			return rc;
	} else {
		char method[64], *params = tn_opts_format(A->all_o, A->all_ntask, A->all_task,
		                                          A->all_weight);
		const char *adapt = J->C.adapt_method ? J->C.adapt_method->name : "";
		if (J->C.sk->plan)
			snprintf(method, sizeof method, "tune/%s+%s%s%s%s", o->model, o->search,
			         *adapt ? "+" : "", adapt, o->ms.run.adaptive ? "+adaptive" : "");
		else
			snprintf(method, sizeof method, "tune/%s%s", o->search,
			         o->ms.run.adaptive ? "+adaptive" : "");
		if (!params)
			return tk_seterr(TK_ENOMEM, "out of memory");
		rc = rec_begin(&J->s, st, &hw, A->argv, method, (int64_t)o->seed,
		               J->C.data ? o->replay : NULL);
		if (!rc)
			rc = store_run_set_params(st, J->s.run_id, params);
		free(params);
		if (rc)
			return rc;
	}
	for (int i = 0; i < J->ntask; i++) {
		tn_task *t = J->tk[i];
		if (t->mt)
			rc = rec_task(&J->s, t->mt->prog, &t->task_id);
		else
			rc = store_task_get(st, t->key, "kernel-tuner", t->flops, &t->task_id);
		if (rc)
			return rc;
	}
	return TK_OK;
}

/* Opening, 3: the rounds, what the tasks know before the budget (a
 * resumed run's records, earlier runs' with tune --until), and each
 * task's tuner started. */
static int job_known(tn_job *J, const job_args *A)
{
	const tn_opts *o = A->o;
	int rc;
	/* the rounds of the whole network, so that each task of a shard gets
	 * the trials it would get in one process (before the gradient rule) */
	J->round = o->round;
	if (A->all_ntask > 1 && J->round > A->all_o->trials / A->all_ntask)
		J->round = A->all_o->trials / A->all_ntask > 0 ? A->all_o->trials / A->all_ntask : 1;
	J->sim_clock = tk_walltime();
	if (A->resume_run > 0) {
		reload R = { &J->C, J->tk, J->ntask, TK_OK, 0, 0 };
		if ((rc = store_run_records(A->st, A->resume_run, reload_rec, &R)) && rc != 1)
			return rc;
		if ((rc = R.rc))
			return rc;
		for (int i = 0; i < J->ntask; i++) {
			J->used += J->tk[i]->trials;
			J->invalid += J->tk[i]->invalid;
			J->tk[i]->rounds = (int)(J->tk[i]->trials / J->round);
		}
		if (J->C.data && R.last_at > 0)
			J->sim_clock = R.last_at;
	}
	/* tune --until: what earlier runs measured of each task on the target
	 * is known, not measured again, and not part of this run's budget */
	for (int i = 0; o->prior && A->target && i < J->ntask; i++) {
		reload R = { &J->C, &J->tk[i], 1, TK_OK, 0, 1 };
		if ((rc = store_hw_records(A->st, A->target->key, J->tk[i]->key, reload_rec, &R)) &&
		    rc != 1)
			return rc;
		if ((rc = R.rc))
			return rc;
	}
	/* the first plan on a base model or a model file is search time too */
	for (int i = 0; i < J->ntask; i++) {
		double t0 = tk_now(), think;
		if ((rc = tuner_start(&J->C, J->tk[i])))
			return rc;
		think = tk_now() - t0;
		J->tuner_s += think;
		J->sim_clock += think;
	}
	return TK_OK;
}

/* The budget: batches of the task the scheduler picks (one task: all of
 * them), measured or, once the controller says so, answered by the model,
 * until the trials or the time run out or every task is done. */
static int job_budget(tn_job *J)
{
	const tn_opts *o = J->C.o;
	int ntask = J->ntask, rc;
	J->clock0 = job_clock(J);
	while (J->used < o->trials && !out_of_time(J)) {
		int ti = ntask == 1 ? (J->tk[0]->done ? -1 : 0) : pick_task(J->tk, ntask, &J->tk[0]->rng);
		if (ti < 0)
			break; /* every task done */
		tn_task *t = J->tk[ti];
		int64_t left = ntask == 1 ? o->trials - J->used : J->round;
		while (left > 0 && J->used < o->trials && !t->done && !out_of_time(J)) {
			int want = o->batch, got;
			if (want > left)
				want = (int)left;
			if (want > o->trials - J->used)
				want = (int)(o->trials - J->used);
			if ((rc = t->predicting ? J->C.ctl->answer(J, t, want, &got)
			                        : run_batch(J, t, want, &got)))
				return rc;
			left -= got;
			report(J, t);
			if (J->h && J->h->stop && *J->h->stop)
				return tk_seterr(TK_EINTR, "interrupted after %lld trials", (long long)J->used);
			if (got == 0)
				break;
		}
		t->rounds++;
		t->hist[t->nhist++ % 8] = t->best_lat > 0 ? t->best_lat : 1e10;
	}
	return TK_OK;
}

/* Closing: the controller's end, the confirmation of the fastest, the
 * time split into the run log, and the run ended. */
static int job_close(tn_job *J)
{
	const tn_opts *o = J->C.o;
	int rc;
	for (int i = 0; i < J->ntask && J->C.ctl->end; i++)
		if ((rc = J->C.ctl->end(J, J->tk[i])))
			return rc;
	/* a resumed run whose records go past the budget was confirmed; a
	 * simulator's latencies are exact, nothing to confirm */
	const tk_target *target = J->C.target;
	int exact = target && (target->flags & TK_TARGET_SIMULATED);
	for (int i = 0; i < J->ntask && !J->C.data && !exact && J->used <= o->trials && o->confirm;
	     i++)
		if ((rc = confirm_task(J, J->tk[i])))
			return rc;
	if (!(rc = log_time(J)))
		rc = rec_end(&J->s);
	return rc;
}

/* Tune A's tasks with A's options as a run recording A's all_ options and
 * tasks: open, the budget, close; then the summary into res. */
static int tune_job(const job_args *A, const tn_hooks *h, tn_result *res)
{
	tn_job J;
	int rc;
	memset(&J, 0, sizeof J);
	memset(res, 0, sizeof *res);
	J.C.o = A->o;
	J.C.target = A->target;
	J.h = h;
	J.start = tk_now();
	if (!(rc = job_tasks(&J, A, res)) && !(rc = job_begin(&J, A, res)) &&
	    !(rc = job_known(&J, A)) && !(rc = job_budget(&J)))
		rc = job_close(&J);
	if (rc == TK_EINTR && J.s.run_id > 0)
		log_time(&J); /* the interruption is the error to report */
	res->run_id = J.s.run_id;
	res->hw_id = J.s.hw_id;
	res->trials = J.used;
	res->confirmed = J.confirmed;
	res->bounded = J.bounded;
	for (int i = 0; J.C.ctl && (J.C.ctl->flags & TN_CTL_ANSWERS) && i < J.ntask; i++) {
		res->measured += J.tk[i]->measured;
		res->predicted += J.tk[i]->predicted;
	}
	for (int i = 0; J.tk && i < J.ntask; i++) {
		res->guard_batches += J.tk[i]->gbatches;
		res->guard_scratch += J.tk[i]->gscratch;
		res->guard_fell += J.tk[i]->gbatches > 0 && J.tk[i]->glast == TN_GUARD_SCRATCH;
	}
	if (J.C.scratch)
		snprintf(res->guard_model, sizeof res->guard_model, "%s", J.C.scratch->name);
	res->invalid = J.invalid;
	res->seconds = tk_now() - J.start;
	/* a shard's tasks are only part of the network */
	int whole = J.tk && J.ntask == A->ntask && A->ntask == A->all_ntask;
	res->net_latency = whole ? net_latency(J.tk, J.ntask) : -1;
	if (!rc && whole)
		rc = stored_net_latency(A->st, J.s.hw_id, J.tk, J.ntask, &res->net_latency);
	for (int i = 0; J.tk && i < J.ntask; i++)
		tuner_task_free(J.tk[i]);
	free(J.tk);
	return rc;
}

int tn_tune(tk_store *st, const tn_stores *in, const tk_target *target, int ntask, char *const *task,
            const double *weight, const tn_opts *o, const char *argv, int64_t resume_run,
            const tn_hooks *h, tn_result *res)
{
	job_args A = { st, in, target, ntask, task, weight, o, ntask, task, weight, o, argv,
	               resume_run };
	tk_shard sh;
	int rc;

	if (!o->shard[0])
		return tune_job(&A, h, res);
	memset(res, 0, sizeof *res);
	if ((rc = tk_shard_parse(o->shard, &sh)))
		return rc;
	/* the shard's tasks, and for each the trials one process would give
	 * it in its first rounds: task j's share of the budget is
	 * floor(T (j+1) / n) - floor(T j / n), so the shares add up to T */
	char **sub = malloc(sizeof *sub * (size_t)ntask);
	double *subw = malloc(sizeof *subw * (size_t)ntask);
	tn_opts *mine = malloc(sizeof *mine);
	int n = 0;
	if (!sub || !subw || !mine) {
		rc = tk_seterr(TK_ENOMEM, "out of memory");
		goto done;
	}
	*mine = *o;
	mine->trials = 0;
	for (int j = 0; j < ntask; j++)
		if (tk_shard_has(&sh, j)) {
			sub[n] = task[j];
			subw[n++] = weight ? weight[j] : 1;
			mine->trials += o->trials * (j + 1) / ntask - o->trials * j / ntask;
		}
	A.ntask = n;
	A.task = sub;
	A.weight = subw;
	A.o = mine;
	if (n > 0 && mine->trials > 0) /* else nothing to do: no run */
		rc = tune_job(&A, h, res);
done:
	free(sub);
	free(subw);
	free(mine);
	return rc;
}

int tn_trials_stored(tk_store *st, const char *hw_key, const char *task, int64_t *n)
{
	te_prog *p;
	*n = 0;
	int rc = te_task_parse(task, &p);
	if (rc)
		return rc;
	rc = store_hw_configs(st, hw_key, p->key, n);
	te_prog_free(p);
	return rc;
}
