/*
 * guard: guided tuning that never hurts. A trained model of a file
 * (--model-file) ranks well on the tasks it was trained near and can rank
 * a task of another kind worse than nothing; nothing in the model itself
 * says which. So a task tuned with a model file also keeps a model fitted
 * from scratch on its own records, the plain tune's (xgb, or rfei where
 * the file's kind has a deviation), refit after every measured batch, and
 * both are judged on what neither has learnt from: each new batch is
 * scored by both before either fits on it, and each model keeps the share
 * of the pairs of configurations (a faster and a slower, or a valid and
 * an invalid) with one of the batch's in them, within the batch and
 * against the earlier records, that it put in the order they measured,
 * summed over the batches so far. The plan of the next batch is searched
 * on the file's (adapted) model while it ranks at least as well, on the
 * one from scratch once that ranks better by more than TN_GUARD_MARGIN
 * over TN_GUARD_MIN_BATCHES batches or more, and back again the same way.
 * Which model planned each batch and the two shares go to the run log
 * (guard:TASK, guard_file:TASK, guard_scratch:TASK at the batch's first
 * trial).
 *
 * Pairwise order is what the tuner uses a model for (the search keeps the
 * best-scored candidates) and what the rank objective trains; it needs no
 * common scale between the two models' scores. Pairs within the batch
 * alone would judge the model that planned it unfairly: the batch is its
 * top-scored candidates, and among those the highest scores are as much
 * its largest errors as its fastest kernels (an xgb of the A4000 guiding
 * replays on the A100 ranked its own picks below chance, 0.43-0.48, while
 * they were within 13% of the optimum). Against the earlier records the
 * question is whether the new picks are placed where they measured: a
 * good model's picks above what was known, a wrong model's below. The
 * pairs among the earlier records are left out: both models learnt them.
 */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/store_tuning.h"
#include "train/train.h"
#include "tune_int.h"

void tn_rank_pairs(const float *score, const float *y, int n, int from, double *agree,
                   double *pairs)
{
	assert((score && y) || n <= 0);
	assert(agree && pairs);
	for (int j = from > 0 ? from : 1; j < n; j++)
		for (int i = 0; i < j; i++) {
			if (y[i] == y[j])
				continue; /* no order to get right */
			*pairs += 1;
			if (score[i] == score[j])
				*agree += 0.5; /* a coin would do as well */
			else if ((score[i] > score[j]) == (y[i] > y[j]))
				*agree += 1;
		}
}

void tn_guard_add(tn_guard *g, const float *sfile, const float *sscratch, const float *y, int n,
                  int from)
{
	tn_rank_pairs(sfile, y, n, from, &g->agree[TN_GUARD_FILE], &g->pairs[TN_GUARD_FILE]);
	tn_rank_pairs(sscratch, y, n, from, &g->agree[TN_GUARD_SCRATCH], &g->pairs[TN_GUARD_SCRATCH]);
	g->batches++;
}

double tn_guard_rate(const tn_guard *g, int who)
{
	assert(who == TN_GUARD_FILE || who == TN_GUARD_SCRATCH);
	return g->pairs[who] > 0 ? g->agree[who] / g->pairs[who] : -1;
}

int tn_guard_pick(const tn_guard *g, int current)
{
	int other = !current;
	double now = tn_guard_rate(g, current), alt = tn_guard_rate(g, other);
	if (g->batches < TN_GUARD_MIN_BATCHES || now < 0 || alt < 0)
		return current;
	return alt > now + TN_GUARD_MARGIN ? other : current;
}

/* ---- in the tuning loop --------------------------------------------------- */

/* The earlier records a new batch is paired with at most, the latest: the
 * cost of a batch's scoring stays bounded in a long run (a TLP scores a
 * few hundred configurations in well under a second), and they are the
 * region the search is in. */
#define GUARD_PAST 512

int guard_setup(const tn_opts *o, tn_ctx *C)
{
	C->scratch = NULL;
	if (!o->model_file[0] || !o->guard || !C->model_based || (C->mk->flags & CM_HIDDEN))
		return TK_OK; /* ml2's explorer plans through its own stages */
	/* where the file's model scores by a deviation, so must the other */
	return cm_lookup(C->mk->flags & CM_UNCERTAINTY ? "rfei" : "xgb", &C->scratch);
}

/* Features of c[0..n) for t's model from scratch into a new *x. */
static int scratch_rows(tn_ctx *C, tn_task *t, const sp_config *c, int n, float **x, int *d)
{
	int rc = model_width_of(t, 1, d);
	*x = NULL;
	if (rc)
		return rc;
	if (!(*x = malloc(sizeof **x * (size_t)(n > 0 ? n : 1) * (size_t)*d)))
		return tk_seterr(TK_ENOMEM, "out of memory");
	rc = model_features_of(C, t, 1, c, n, *x, d);
	if (rc) {
		free(*x);
		*x = NULL;
	}
	return rc;
}

int guard_fit(tn_ctx *C, tn_task *t)
{
	float *x = NULL, *y = NULL;
	int d, rc;
	cm_params p;
	cm_model *m = NULL;
	if (!t->guarded || t->nx <= t->scratch_nx || t->best_thr <= 0)
		return TK_OK; /* nothing new, or nothing valid to rank yet */
	if ((rc = scratch_rows(C, t, t->xc, t->nx, &x, &d)))
		return rc;
	if (!(y = malloc(sizeof *y * (size_t)t->nx))) {
		rc = tk_seterr(TK_ENOMEM, "out of memory");
		goto done;
	}
	tr_normalise(t->ys, t->nx, y);
	unsigned group = (unsigned)t->nx;
	cm_data train = { .n = t->nx, .d = d, .x = x, .y = y, .ngroup = 1, .group = &group };
	model_fit_params(C, t, &p);
	p.seq_e = feat_seq_width(t->sfeat);
	if ((rc = cm_fit(C->scratch, &p, &train, NULL, &m)))
		goto done;
	cm_free(t->scratch);
	t->scratch = m;
	t->scratch_nx = t->nx;
	if (t->chooser == TN_GUARD_SCRATCH)
		fcache_free(&t->sc); /* the scores the search sees changed */
done:
	free(x);
	free(y);
	return rc;
}

/* The scores of c[0..n) by the model of the file (adapted, if it is) and
 * by the one from scratch. */
static int score_both(tn_ctx *C, tn_task *t, const sp_config *c, int n, float *sf, float *ss)
{
	int d, rc;
	float *x = NULL;
	cm_model *file = t->model ? t->model : t->fixed;
	if ((rc = model_width(t, &d)))
		return rc;
	if (!(x = malloc(sizeof *x * (size_t)n * (size_t)d)))
		return tk_seterr(TK_ENOMEM, "out of memory");
	if (!(rc = model_features(C, t, c, n, x, &d)))
		rc = cm_predict(file, x, n, d, NULL, sf);
	free(x);
	x = NULL;
	if (!rc && !(rc = scratch_rows(C, t, c, n, &x, &d)))
		rc = cm_predict(t->scratch, x, n, d, NULL, ss);
	free(x);
	return rc;
}

static int guard_log(tn_job *J, tn_task *t, int round)
{
	static const char *const key[3] = { "guard", "guard_file", "guard_scratch" };
	double v[3] = { t->chooser, tn_guard_rate(&t->guard, TN_GUARD_FILE),
	                tn_guard_rate(&t->guard, TN_GUARD_SCRATCH) };
	int rc = TK_OK;
	for (int i = 0; i < 3 && !rc; i++) {
		char k[600];
		if (v[i] < 0)
			continue; /* not scored yet */
		snprintf(k, sizeof k, "%s:%s", key[i], t->key);
		rc = store_run_log(J->s.store, J->s.run_id, round, k, v[i]);
	}
	return rc;
}

int guard_batch(tn_job *J, tn_task *t, const sp_config *c, const ms_result *r, int n)
{
	tn_ctx *C = &J->C;
	int rc = TK_OK, round = (int)J->used;
	if (!t->guarded)
		return TK_OK;
	t->gbatches++;
	t->gscratch += t->chooser == TN_GUARD_SCRATCH;
	t->glast = t->chooser;
	if (t->scratch) {
		/* scored before either model learns from the batch: the batch
		 * against itself and against the GUARD_PAST records before it */
		int past = t->nx < GUARD_PAST ? t->nx : GUARD_PAST, m = past + n;
		const sp_config *xc = t->xc + (t->nx - past);
		sp_config *all = malloc(sizeof *all * (size_t)m);
		float *sf = malloc(sizeof *sf * (size_t)m), *ss = malloc(sizeof *ss * (size_t)m);
		float *y = malloc(sizeof *y * (size_t)m);
		if (!all || !sf || !ss || !y) {
			rc = tk_seterr(TK_ENOMEM, "out of memory");
		} else {
			memcpy(all, xc, sizeof *all * (size_t)past);
			memcpy(all + past, c, sizeof *all * (size_t)n);
			memcpy(y, t->ys + (t->nx - past), sizeof *y * (size_t)past);
			for (int i = 0; i < n; i++)
				y[past + i] = (float)tuner_throughput(t, &r[i]);
			if (!(rc = score_both(C, t, all, m, sf, ss)))
				tn_guard_add(&t->guard, sf, ss, y, m, past);
		}
		free(all);
		free(sf);
		free(ss);
		free(y);
	}
	if (!rc)
		rc = guard_log(J, t, round); /* the model that planned this batch */
	int next = tn_guard_pick(&t->guard, t->chooser);
	if (!rc && next != t->chooser) {
		t->chooser = next;
		t->replan = 1;
		fcache_free(&t->sc);
	}
	return rc;
}

int guard_after(tn_job *J, tn_task *t, int fits)
{
	int rc;
	if (!t->guarded)
		return TK_OK;
	if ((rc = guard_fit(&J->C, t)))
		return rc;
	if (t->replan && t->fits == fits) /* not planned again by a refit */
		rc = tuner_plan(&J->C, t);
	t->replan = 0;
	return rc;
}
