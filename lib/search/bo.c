/*
 * bo: the "bo" row of the search table, batch Bayesian optimisation over
 * the knobs as MetaTune pairs with its cost model. The surrogate is the
 * model's mean and deviation (sr_env.dist: meta's ensemble of fine-tuned
 * heads, rfei's bagged trees); the acquisition is the upper confidence
 * bound mu + kappa * sigma (sr_env.kappa); and a batch is chosen for
 * diversity by local penalisation (Gonzalez et al., AISTATS 2016) in knob
 * space.
 *
 * The acquisition is maximised over the discrete space by the annealing
 * optimiser of search.c (sr_sa: random walks that change one knob, chains
 * kept between plans), which returns the R = BO_POOL * num best distinct
 * unvisited configurations. From those the batch is picked greedily: the
 * next is the one whose acquisition, shifted so that the worst candidate
 * weighs half the best, times the penalty of every one already picked is
 * highest. The penalty of a
 * candidate x near a picked p is 1 - exp(-(h(x, p) / BO_RHO)^2), h the
 * number of knobs on which they differ (0 for p itself; 0.22 at one knob,
 * 0.63 at two, 0.89 at three): a batch does not spend its trials on
 * neighbours of one point unless the acquisition says they are worth
 * far more than points elsewhere.
 *
 * UCB rather than expected improvement: before a model has been fine-tuned
 * its deviation is 0 everywhere and EI over the best measured is 0 almost
 * everywhere, where UCB is still the mean.
 */
#include "search.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define BO_POOL 4     /* candidates per slot of the batch */
#define BO_RHO 2.0    /* knobs at which the penalty is 1 - 1/e */

typedef struct bo_state {
	sr_sa *sa;
} bo_state;

static void bo_free(void *state)
{
	bo_state *b = state;
	if (!b)
		return;
	sr_sa_free(b->sa);
	free(b);
}

typedef struct acq_ctx {
	const sr_env *e;
	float *mu, *sd;
	int cap;
} acq_ctx;

/* UCB of n configurations. */
static int acquisition(void *p, const sp_config *c, int n, float *out)
{
	acq_ctx *a = p;
	if (n > a->cap) {
		float *mu = realloc(a->mu, sizeof *mu * (size_t)n), *sd;
		if (mu)
			a->mu = mu;
		sd = realloc(a->sd, sizeof *sd * (size_t)n);
		if (sd)
			a->sd = sd;
		if (!mu || !sd)
			return tk_seterr(TK_ENOMEM, "out of memory");
		a->cap = n;
	}
	int rc = a->e->dist(a->e->dist_ctx, c, n, a->mu, a->sd);
	for (int i = 0; !rc && i < n; i++)
		out[i] = a->mu[i] + (float)a->e->kappa * a->sd[i];
	return rc;
}

static int hamming(const sp_space *sp, const sp_config *x, const sp_config *y)
{
	int d = 0;
	for (int k = 0; k < sp->nknob; k++)
		d += x->v[k] != y->v[k];
	return d;
}

int sr_local_penalise(const sp_space *sp, const sp_config *cand, const float *acq, int n, int k,
                      int *pick)
{
	float lo = 0, hi = 0;
	double *w = malloc(sizeof *w * (size_t)(n > 0 ? n : 1));
	char *taken = calloc((size_t)(n > 0 ? n : 1), 1);
	if (!w || !taken) {
		free(w);
		free(taken);
		return tk_seterr(TK_ENOMEM, "out of memory");
	}
	for (int i = 0; i < n; i++) {
		lo = i == 0 || acq[i] < lo ? acq[i] : lo;
		hi = i == 0 || acq[i] > hi ? acq[i] : hi;
	}
	/* positive weights that penalties shrink: the acquisition shifted so
	 * that the worst candidate weighs half the best */
	double span = hi - lo > 1e-6 ? hi - lo : 1e-6;
	for (int i = 0; i < n; i++)
		w[i] = (double)acq[i] - lo + span;
	for (int j = 0; j < k && j < n; j++) {
		int best = -1;
		for (int i = 0; i < n; i++)
			if (!taken[i] && (best < 0 || w[i] > w[best]))
				best = i;
		pick[j] = best;
		taken[best] = 1;
		for (int i = 0; i < n; i++) {
			double h = hamming(sp, &cand[i], &cand[best]) / BO_RHO;
			w[i] *= 1.0 - exp(-h * h);
		}
	}
	free(w);
	free(taken);
	return TK_OK;
}

static int bo_plan(void **state, const sr_env *e, const sr_sa_opts *o, sr_score_fn score,
                   void *ctx, int num, sp_config *out, float *scores, int *nout)
{
	bo_state *b = *state;
	int rc, got = 0, pool = BO_POOL * num;
	*nout = 0;
	if (!e->dist)
		return tk_seterr(TK_EINVAL, "bo needs a model with a deviation");
	if (!b && !(b = *state = calloc(1, sizeof *b)))
		return tk_seterr(TK_ENOMEM, "out of memory");
	if (!b->sa && (rc = sr_sa_new(e->space, o, &b->sa)))
		return rc;
	acq_ctx a = { e, NULL, NULL, 0 };
	sp_config *cand = malloc(sizeof *cand * (size_t)pool);
	float *acq = malloc(sizeof *acq * (size_t)pool);
	int *pick = malloc(sizeof *pick * (size_t)num);
	if (!cand || !acq || !pick) {
		rc = tk_seterr(TK_ENOMEM, "out of memory");
		goto done;
	}
	if ((rc = sr_sa_find(b->sa, acquisition, &a, e->visited, e->rng, pool, cand, acq, &got)))
		goto done;
	int k = got < num ? got : num;
	if ((rc = sr_local_penalise(e->space, cand, acq, got, k, pick)))
		goto done;
	for (int j = 0; j < k; j++) {
		out[j] = cand[pick[j]];
		if (scores)
			scores[j] = acq[pick[j]];
	}
	*nout = k;
done:
	free(a.mu);
	free(a.sd);
	free(cand);
	free(acq);
	free(pick);
	return rc;
}

const sr_kind sr_bo_kind = {
	.name = "bo",
	.summary = "batch Bayesian optimisation: UCB of the model's mean and deviation, a diverse batch",
	.flags = SR_NEEDS_MODEL | SR_NEEDS_UNCERTAINTY,
	.plan = bo_plan,
	.free_state = bo_free,
};
