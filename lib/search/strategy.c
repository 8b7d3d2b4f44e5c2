/*
 * strategy: the searches of the tuner as rows of sr_kinds[] (see
 * search.h): random, grid, sa (simulated annealing on a model's scores;
 * without a model, annealing chains whose steps are measured), csa
 * (AdaTune's contextual simulated annealing: sa on a model with
 * uncertainty, the random share of each plan set from its deviation) and
 * bo (batch Bayesian optimisation, its own file bo.c).
 */
#include "search.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int sr_random_unvisited(const sp_space *sp, const sr_set *visited, tk_rng *rng, sp_config *c)
{
	for (int tries = 0; tries < 1000; tries++) {
		sp_sample(sp, rng, c);
		if (!sr_set_has(visited, sp_index(sp, c)))
			return 1;
	}
	/* nearly exhausted: walk the space from a random start */
	uint64_t start = tk_rng_below64(rng, sp->size);
	for (uint64_t k = 0; k < sp->size; k++) {
		uint64_t idx = (start + k) % sp->size;
		if (!sr_set_has(visited, idx)) {
			sp_from_index(sp, idx, c);
			return 1;
		}
	}
	return 0;
}

static int take(const sr_env *e, const sp_config *c, sp_config *out, int *n)
{
	int rc = sr_set_add(e->visited, sp_index(e->space, c));
	if (!rc)
		out[(*n)++] = *c;
	return rc;
}

/* ---- random ------------------------------------------------------------- */

static int random_next(void **state, const sr_env *e, int want, sp_config *out, int *n)
{
	sp_config c;
	int rc = TK_OK;
	*n = 0;
	while (*n < want && (uint64_t)e->visited->n < e->space->size && !rc &&
	       sr_random_unvisited(e->space, e->visited, e->rng, &c))
		rc = take(e, &c, out, n);
	return rc;
}

/* ---- grid: the space in index order --------------------------------------- */

static int grid_next(void **state, const sr_env *e, int want, sp_config *out, int *n)
{
	int64_t *pos = *state;
	int rc = TK_OK;
	*n = 0;
	if (!pos && !(pos = *state = calloc(1, sizeof *pos)))
		return tk_seterr(TK_ENOMEM, "out of memory");
	for (; *n < want && *pos < (int64_t)e->space->size && !rc; ++*pos) {
		sp_config c;
		sp_from_index(e->space, (uint64_t)*pos, &c);
		if (!sr_set_has(e->visited, (uint64_t)*pos))
			rc = take(e, &c, out, n);
	}
	return rc;
}

/* ---- simulated annealing ------------------------------------------------- */

typedef struct anneal {
	sr_sa *sa;            /* on a model: AutoTVM's optimizer, chains kept */
	int nchain;           /* without: chains whose steps are measured */
	sp_config *chain;
	double *thr;          /* throughput of each chain's point, < 0 before it starts */
	int *pending;         /* chain of each proposal of the last batch */
} anneal;

static void anneal_free(void *state)
{
	anneal *a = state;
	if (!a)
		return;
	sr_sa_free(a->sa);
	free(a->chain);
	free(a->thr);
	free(a->pending);
	free(a);
}

static int anneal_state(void **state, anneal **out)
{
	if (!*state && !(*state = calloc(1, sizeof(anneal))))
		return tk_seterr(TK_ENOMEM, "out of memory");
	*out = *state;
	return TK_OK;
}

/* Each chain steps to an unvisited neighbour (a random point to start). */
static int anneal_next(void **state, const sr_env *e, int want, sp_config *out, int *n)
{
	anneal *a = NULL;
	int rc;
	*n = 0;
	if ((rc = anneal_state(state, &a)))
		return rc;
	if (!a->chain) {
		a->nchain = e->chains > 0 ? e->chains : 8;
		a->chain = calloc((size_t)a->nchain, sizeof *a->chain);
		a->thr = calloc((size_t)a->nchain, sizeof *a->thr);
		a->pending = calloc((size_t)a->nchain, sizeof *a->pending);
		if (!a->chain || !a->thr || !a->pending)
			return tk_seterr(TK_ENOMEM, "out of memory");
		for (int i = 0; i < a->nchain; i++)
			a->thr[i] = -1; /* not started */
	}
	if (want > a->nchain)
		want = a->nchain;
	for (int i = 0; i < want && !rc; i++) {
		sp_config c;
		int found = 0;
		if (a->thr[i] >= 0)
			for (int tries = 0; tries < 50 && !found; tries++) {
				sp_neighbor(e->space, e->rng, &a->chain[i], &c);
				found = !sr_set_has(e->visited, sp_index(e->space, &c));
			}
		if (!found && !sr_random_unvisited(e->space, e->visited, e->rng, &c))
			break;
		a->pending[*n] = i;
		rc = take(e, &c, out, n);
	}
	return rc;
}

/* Metropolis acceptance of each measured step on throughputs relative to
 * the best so far. */
static void anneal_learn(void *state, const sr_env *e, const sp_config *c, const double *thr, int n)
{
	anneal *a = state;
	double best = e->best > 0 ? e->best : 1;
	for (int k = 0; a && k < n && a->chain; k++) {
		int i = a->pending[k];
		double y = thr[k] / best, cur = a->thr[i] < 0 ? -1 : a->thr[i] / best;
		if (cur < 0 || y >= cur || tk_rng_unif(e->rng) < exp((y - cur) / e->temp)) {
			a->chain[i] = c[k];
			a->thr[i] = thr[k];
		}
	}
}

static int anneal_plan(void **state, const sr_env *e, const sr_sa_opts *o, sr_score_fn score,
                       void *ctx, int num, sp_config *out, float *scores, int *nout)
{
	anneal *a = NULL;
	int rc;
	*nout = 0;
	if ((rc = anneal_state(state, &a)) || (!a->sa && (rc = sr_sa_new(e->space, o, &a->sa))))
		return rc;
	return sr_sa_find(a->sa, score, ctx, e->visited, e->rng, num, out, scores, nout);
}

/* ---- the table ------------------------------------------------------------ */

static const sr_kind sr_sa_kind = {
	.name = "sa",
	.summary = "simulated annealing on the model (AutoTVM); without one, on measurements",
	.next = anneal_next,
	.learn = anneal_learn,
	.plan = anneal_plan,
	.free_state = anneal_free,
};

static const sr_kind sr_csa_kind = {
	.name = "csa",
	.summary = "AdaTune: sa whose random share is the model's deviation",
	.flags = SR_NEEDS_MODEL | SR_NEEDS_UNCERTAINTY | SR_CONTEXT_EPSILON,
	.plan = anneal_plan,
	.free_state = anneal_free,
};

static const sr_kind sr_random_kind = {
	.name = "random",
	.summary = "uniformly random configurations, no model",
	.next = random_next,
	.free_state = free,
};

static const sr_kind sr_grid_kind = {
	.name = "grid",
	.summary = "the space in index order, no model",
	.next = grid_next,
	.free_state = free,
};

extern const sr_kind sr_bo_kind; /* bo.c */

const sr_kind *const sr_kinds[] = { &sr_sa_kind, &sr_csa_kind, &sr_bo_kind, &sr_random_kind,
                                    &sr_grid_kind };
const int sr_nkinds = ArraySize(sr_kinds);

const sr_kind *sr_find(const char *name)
{
	for (int i = 0; name && i < sr_nkinds; i++)
		if (!strcmp(sr_kinds[i]->name, name))
			return sr_kinds[i];
	return NULL;
}

void sr_names(char *buf, size_t size)
{
	size_t len = 0;
	buf[0] = 0;
	for (int i = 0; i < sr_nkinds; i++) {
		int w = snprintf(buf + len, size - len, "%s%s", len ? ", " : "", sr_kinds[i]->name);
		if (w < 0 || (size_t)w >= size - len) {
			buf[len] = 0; /* whole names only */
			break;
		}
		len += (size_t)w;
	}
}

int sr_lookup(const char *name, const sr_kind **out)
{
	char names[256];
	if ((*out = sr_find(name)))
		return TK_OK;
	sr_names(names, sizeof names);
	return tk_seterr(TK_EINVAL, "unknown search '%s' (%s)", name ? name : "", names);
}
