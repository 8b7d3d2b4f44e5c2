/*
 * select: active selection of the records to train on (`tunekit train
 * --select active:F`), as TCL's RDU sampler chooses the programs to
 * measure: a share F of the target's training records, chosen for their
 * representativeness, diversity and the current model's uncertainty,
 * with no look at the labels of the records not chosen.
 *
 * Each task keeps its share of the pool (round(F x its rows), at least
 * one): a task is the unit a tuner measures, and a ranking model learns
 * nothing from a task that is absent. Within a task, rows are compared by
 * the squared Euclidean distance of their feature vectors, each feature
 * scaled by its deviation over the pool. A row's representativeness is
 * its mean Gaussian similarity to a sample of its task's rows (bandwidth:
 * their mean distance), so a row in a crowd of similar programs stands for
 * many; its diversity is its distance to the nearest row chosen so far, so
 * no two near-copies are chosen while anything else is left. The first
 * half of each task's share is chosen greedily by their product; then the
 * "current model", AdaTune's bagged XGBoost regressors (rfei), is fit on
 * the rows chosen, labelled with their throughputs over the best chosen of
 * their task (all a tuner would know), and the other half is chosen by
 * representativeness x diversity x the members' disagreement on the row.
 *
 * Shapes: N = rows of the set, P = rows of the pool, D = features.
 */
#include "train.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define SEL_SAMPLE 32        /* rows a representativeness is measured against */
#define SEL_ROUNDS 50        /* boosting rounds of each regressor of the committee */

typedef struct sel_ctx {
	const tr_set *ts;
	int d;
	float *inv;              /* (D) 1 / deviation of each feature over the pool, 0 if none */
} sel_ctx;

/* The scaled squared distance of rows i and j of the set. */
static double dist(const sel_ctx *c, int i, int j)
{
	const tr_set *ts = c->ts;
	const float *a = ts->xbuf + ts->xoff[i], *b = ts->xbuf + ts->xoff[j];
	int na = ts->nx[i], nb = ts->nx[j];
	double s = 0;
	for (int k = 0; k < c->d; k++) {
		double x = k < na ? a[k] : 0, y = k < nb ? b[k] : 0, v = (x - y) * c->inv[k];
		s += v * v;
	}
	return s;
}

static int in_pool(const tr_set *ts, const char *sel, int i)
{
	return (sel[i] == TR_TRAIN || sel[i] == TR_VALID) && !ts->tasks[ts->task[i]].head;
}

/* inv[k] = 1 / the deviation of feature k over the pool rows (0 for a
 * constant feature: it cannot tell rows apart). */
static void scale(const tr_set *ts, const char *sel, int d, float *inv)
{
	double *sum = calloc((size_t)d, sizeof *sum), *sq = calloc((size_t)d, sizeof *sq);
	int n = 0;
	if (!sum || !sq) {
		for (int k = 0; k < d; k++)
			inv[k] = 1; /* unscaled rather than fail */
		free(sum), free(sq);
		return;
	}
	for (int i = 0; i < ts->n; i++) {
		if (!in_pool(ts, sel, i))
			continue;
		const float *x = ts->xbuf + ts->xoff[i];
		for (int k = 0; k < ts->nx[i] && k < d; k++)
			sum[k] += x[k], sq[k] += (double)x[k] * x[k];
		n++;
	}
	for (int k = 0; k < d; k++) {
		double m = n ? sum[k] / n : 0, v = n ? sq[k] / n - m * m : 0;
		inv[k] = v > 1e-12 ? (float)(1 / sqrt(v)) : 0;
	}
	free(sum), free(sq);
}

/* Choose k more of the task's pool rows P[0..np) greedily by rep x
 * (dmin / h) x unc (unc may be NULL: 1), marking them in chosen[] and
 * keeping dmin[] (each row's distance to the nearest chosen, INFINITY
 * before any) up to date. A row at distance 0 from a chosen one scores 0;
 * when every row left does, the most representative is taken. */
static void greedy(const sel_ctx *c, const int *P, int np, int k, const double *rep,
                   const double *unc, double h, double *dmin, char *chosen)
{
	for (int step = 0; step < k; step++) {
		int best = -1, fallback = -1;
		double bs = -1, bf = -1;
		for (int a = 0; a < np; a++) {
			if (chosen[a])
				continue;
			double div = isinf(dmin[a]) ? 1 : dmin[a] / h, u = unc ? unc[a] : 1;
			double s = rep[a] * div * u;
			if (s > bs)
				bs = s, best = a;
			if (rep[a] * u > bf)
				bf = rep[a] * u, fallback = a;
		}
		if (best < 0)
			return;
		if (bs <= 0)
			best = fallback;
		chosen[best] = 1;
		for (int a = 0; a < np; a++)
			if (!chosen[a]) {
				double x = dist(c, P[a], P[best]);
				dmin[a] = x < dmin[a] ? x : dmin[a];
			}
	}
}

/* The representativeness of each pool row P[a] of one task into rep[a],
 * and the task's bandwidth (mean sampled distance, 1 if none) into *h. */
static void represent(const sel_ctx *c, const int *P, int np, tk_rng *rng, double *rep, double *h)
{
	int m = np - 1 < SEL_SAMPLE ? np - 1 : SEL_SAMPLE;
	double sum = 0;
	int cnt = 0;
	*h = 1;
	if (m <= 0) {
		for (int a = 0; a < np; a++)
			rep[a] = 1;
		return;
	}
	/* rep[a] holds the sampled distances' sum until h is known: a second
	 * pass with the same draws gives the similarities */
	tk_rng r0 = *rng;
	for (int a = 0; a < np; a++)
		for (int s = 0; s < m; s++) {
			int b = (int)tk_rng_below(rng, (uint32_t)np);
			if (b != a)
				sum += dist(c, P[a], P[b]), cnt++;
		}
	*h = cnt && sum > 0 ? sum / cnt : 1;
	*rng = r0;
	for (int a = 0; a < np; a++) {
		double s = 0;
		int k = 0;
		for (int t = 0; t < m; t++) {
			int b = (int)tk_rng_below(rng, (uint32_t)np);
			if (b != a)
				s += exp(-dist(c, P[a], P[b]) / *h), k++;
		}
		rep[a] = k ? s / k : 1;
	}
}

/* Fit rfei on the rows chosen so far (mark[i] set) and put each pool row's
 * deviation across members, over the mean of its task's, into unc[i].
 * TK_OK with unc all 1 when fewer than 2 rows are chosen. */
static int uncertainty(const tr_set *ts, const char *sel, const char *mark, int d, uint64_t seed,
                       double *unc)
{
	int n = 0, np = 0, rc;
	for (int i = 0; i < ts->n; i++) {
		n += mark[i];
		np += in_pool(ts, sel, i);
		unc[i] = 1;
	}
	if (n < 2)
		return TK_OK;
	float *x = calloc((size_t)n * d, sizeof *x), *y = malloc(sizeof *y * n);
	float *px = calloc((size_t)np * d, sizeof *px), *mu = malloc(sizeof *mu * np);
	float *sd = malloc(sizeof *sd * np);
	cm_model *m = NULL;
	if (!x || !y || !px || !mu || !sd) {
		rc = tk_seterr(TK_ENOMEM, "out of memory");
		goto done;
	}
	/* labels: throughput over the best chosen row of the task */
	for (int t = 0, k = 0; t < ts->ntask; t++) {
		const tr_task *tk = &ts->tasks[t];
		float best = 0;
		for (int i = tk->first; i < tk->first + tk->n; i++)
			best = mark[i] && ts->thr[i] > best ? ts->thr[i] : best;
		for (int i = tk->first; i < tk->first + tk->n; i++)
			if (mark[i]) {
				memcpy(x + (size_t)k * d, ts->xbuf + ts->xoff[i],
				       sizeof *x * (size_t)(ts->nx[i] < d ? ts->nx[i] : d));
				y[k++] = best > 0 ? ts->thr[i] / best : 0;
			}
	}
	for (int i = 0, k = 0; i < ts->n; i++)
		if (in_pool(ts, sel, i))
			memcpy(px + (size_t)k++ * d, ts->xbuf + ts->xoff[i],
			       sizeof *px * (size_t)(ts->nx[i] < d ? ts->nx[i] : d));
	cm_params p;
	cm_params_default(&p);
	p.rank = 0;
	p.seed = seed;
	/* a rough guide suffices: a quarter of the default rounds, a quarter the time */
	p.rounds = SEL_ROUNDS;
	p.nthread = 1;
	cm_data data = { .n = n, .d = d, .x = x, .y = y };
	if ((rc = cm_fit(cm_find("rfei"), &p, &data, NULL, &m)) ||
	    (rc = cm_predict_dist(m, px, np, d, mu, sd)))
		goto done;
	for (int t = 0, k = 0; t < ts->ntask; t++) {
		const tr_task *tk = &ts->tasks[t];
		double s = 0;
		int cnt = 0, k0 = k;
		for (int i = tk->first; i < tk->first + tk->n; i++)
			if (in_pool(ts, sel, i))
				s += sd[k++], cnt++;
		s = cnt ? s / cnt : 0;
		for (int i = tk->first, j = k0; i < tk->first + tk->n; i++)
			if (in_pool(ts, sel, i))
				unc[i] = s > 0 ? sd[j++] / s : 1;
	}
done:
	cm_free(m);
	free(x), free(y), free(px), free(mu), free(sd);
	return rc;
}

int tr_select_active(const tr_set *ts, char *sel, double frac, uint64_t seed, int *nkept)
{
	assert(frac > 0 && frac <= 1);
	int d = 0, rc = TK_OK, *P = malloc(sizeof *P * (size_t)(ts->n > 0 ? ts->n : 1));
	double *rep = malloc(sizeof *rep * (size_t)(ts->n > 0 ? ts->n : 1));
	double *dmin = malloc(sizeof *dmin * (size_t)(ts->n > 0 ? ts->n : 1));
	double *unc = malloc(sizeof *unc * (size_t)(ts->n > 0 ? ts->n : 1));
	double *h = malloc(sizeof *h * (size_t)(ts->ntask > 0 ? ts->ntask : 1));
	char *chosen = calloc((size_t)(ts->n > 0 ? ts->n : 1), 1);
	char *mark = calloc((size_t)(ts->n > 0 ? ts->n : 1), 1);
	sel_ctx c = { ts, 0, NULL };
	tk_rng rng;
	*nkept = 0;
	for (int i = 0; i < ts->n; i++)
		d = in_pool(ts, sel, i) && ts->nx[i] > d ? ts->nx[i] : d;
	c.d = d;
	c.inv = malloc(sizeof *c.inv * (size_t)(d > 0 ? d : 1));
	if (!P || !rep || !dmin || !unc || !h || !chosen || !mark || !c.inv) {
		rc = tk_seterr(TK_ENOMEM, "out of memory");
		goto done;
	}
	scale(ts, sel, d, c.inv);
	tk_rng_seed(&rng, seed, 0x73656c656374ULL /* "select" */);
	/* Pass 1: each task's representativeness, then half its share by
	 * representativeness x diversity. Arrays indexed by row of the set:
	 * the task's pool rows are P[first..first+np). */
	for (int t = 0; t < ts->ntask; t++) {
		const tr_task *tk = &ts->tasks[t];
		int np = 0;
		for (int i = tk->first; i < tk->first + tk->n; i++)
			if (in_pool(ts, sel, i))
				P[tk->first + np++] = i;
		if (!np)
			continue;
		int *Pt = P + tk->first, k = (int)floor(frac * np + 0.5);
		k = k < 1 ? 1 : k > np ? np : k;
		represent(&c, Pt, np, &rng, rep + tk->first, &h[t]);
		for (int a = 0; a < np; a++)
			dmin[tk->first + a] = INFINITY;
		greedy(&c, Pt, np, (k + 1) / 2, rep + tk->first, NULL, h[t], dmin + tk->first,
		       chosen + tk->first);
		for (int a = 0; a < np; a++)
			mark[Pt[a]] = chosen[tk->first + a];
	}
	/* The current model's disagreement, from the rows chosen so far. */
	double *u = malloc(sizeof *u * (size_t)(ts->n > 0 ? ts->n : 1));
	if (!u) {
		rc = tk_seterr(TK_ENOMEM, "out of memory");
		goto done;
	}
	if ((rc = uncertainty(ts, sel, mark, d, seed, u))) {
		free(u);
		goto done;
	}
	/* Pass 2: the rest of each share, uncertainty included. */
	for (int t = 0; t < ts->ntask; t++) {
		const tr_task *tk = &ts->tasks[t];
		int np = 0;
		for (int i = tk->first; i < tk->first + tk->n; i++)
			np += in_pool(ts, sel, i);
		if (!np)
			continue;
		int *Pt = P + tk->first, k = (int)floor(frac * np + 0.5), had = 0;
		k = k < 1 ? 1 : k > np ? np : k;
		for (int a = 0; a < np; a++) {
			unc[tk->first + a] = u[Pt[a]];
			had += chosen[tk->first + a];
		}
		greedy(&c, Pt, np, k - had, rep + tk->first, unc + tk->first, h[t], dmin + tk->first,
		       chosen + tk->first);
		for (int a = 0; a < np; a++) {
			sel[Pt[a]] = chosen[tk->first + a] ? sel[Pt[a]] : TR_OUT;
			*nkept += chosen[tk->first + a];
		}
	}
	free(u);
done:
	free(P), free(rep), free(dmin), free(unc), free(h), free(chosen), free(mark), free(c.inv);
	return rc;
}

int tr_select_parse(const char *spec, double *frac)
{
	const char *v = strncmp(spec, "active:", 7) ? NULL : spec + 7;
	char *end;
	double f = v ? strtod(v, &end) : 0;
	if (!v || end == v || *end || !(f > 0 && f <= 1))
		return tk_seterr(TK_EINVAL, "--select: '%s' is not active:F with a share F above 0, at"
		                 " most 1", spec);
	*frac = f;
	return TK_OK;
}
