/*
 * metrics: how good a cost model's predictions are, in the measures of the
 * seed papers, computed per task over rows in any order. Rows are sorted by
 * (task, row) once; every per-task measure then walks one contiguous run.
 * The definitions, precisely (n rows, tasks t with n_t rows):
 *
 *   mse, rmse  mean of (p - y)^2 over all rows, and its square root.
 *   mse_d      MetaTune's MSE(D): the same mean over D, the rows of each
 *              task with y > 0 and y at least the ceil(n_t / 4)-th largest
 *              y of the task (ties at the cut are in D).
 *   top-k      TLP's top-k score, per task: the best latency of the task
 *              over the best latency among the k rows with the highest p
 *              (fewer if n_t < k; equal p in row order), invalid rows
 *              counting as infinitely slow, so 0 if all k are invalid;
 *              tasks without a valid row are left out; the weighted mean
 *              over tasks (TLP divides weighted sums instead).
 *   spearman   per task with n_t >= 3 and some spread in y: the Pearson
 *              correlation of the ranks of p and y (tied values share
 *              their mean rank), 0 if p is constant; the plain mean over
 *              those tasks.
 *
 * A measure with no row or task to average over is NaN.
 *
 * Shapes: N = rows; T = tasks; R = rows of one task.
 */
#include "metrics.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>

#include "../util/util.h"

typedef struct task_row {
	int64_t t;
	int i;
} task_row;

/* By (task, row): qsort has no context argument, so the key is copied. */
static int by_task(const void *a, const void *b)
{
	const task_row *x = a, *y = b;
	if (x->t != y->t)
		return x->t < y->t ? -1 : 1;
	return (x->i > y->i) - (x->i < y->i);
}

typedef struct item {
	double v;
	int i; /* position in the task run */
} item;

/* Descending value, then ascending position. */
static int by_value_desc(const void *a, const void *b)
{
	const item *x = a, *y = b;
	if (x->v != y->v)
		return x->v > y->v ? -1 : 1;
	return (x->i > y->i) - (x->i < y->i);
}

/* Ranks (1-based, ties averaged) of v[R] into rank[R]; tmp has R items. */
static void rank_avg(const double *v, int r, double *rank, item *tmp)
{
	for (int i = 0; i < r; i++) {
		tmp[i].v = v[i];
		tmp[i].i = i;
	}
	qsort(tmp, (size_t)r, sizeof *tmp, by_value_desc);
	for (int a = 0, b; a < r; a = b) {
		for (b = a + 1; b < r && tmp[b].v == tmp[a].v; b++)
			;
		double mean = (a + 1 + b) / 2.0; /* ranks a+1 .. b */
		for (int i = a; i < b; i++)
			rank[tmp[i].i] = mean;
	}
}

/* Pearson correlation of x[R] and y[R]; *ok = 0 if y has no spread, and
 * the result is 0 if x has none. */
static double pearson(const double *x, const double *y, int r, int *ok)
{
	double mx = 0, my = 0, sxy = 0, sxx = 0, syy = 0;
	for (int i = 0; i < r; i++) {
		mx += x[i];
		my += y[i];
	}
	mx /= r;
	my /= r;
	for (int i = 0; i < r; i++) {
		sxy += (x[i] - mx) * (y[i] - my);
		sxx += (x[i] - mx) * (x[i] - mx);
		syy += (y[i] - my) * (y[i] - my);
	}
	*ok = syy > 0;
	if (!*ok || sxx <= 0)
		return 0;
	return sxy / sqrt(sxx * syy);
}

int cm_metrics_compute(int n, const int64_t *task, const float *y, const double *lat,
                       const float *p, const double *weight, cm_metrics *out)
{
	task_row *tr = NULL;
	int *order = NULL;
	item *tmp = NULL;
	double *a = NULL; /* 4 arrays of R: p, y, rank p, rank y */
	double se = 0, se_d = 0, w1 = 0, w5 = 0, wsum = 0, rho = 0;
	int n_d = 0, ntop = 0, nrho = 0;

	assert(out && n >= 0 && (n == 0 || (task && y && lat && p)));
	out->n = n;
	out->ntask = 0;
	tr = malloc(sizeof *tr * (size_t)(n ? n : 1));
	order = malloc(sizeof *order * (size_t)(n ? n : 1));
	tmp = malloc(sizeof *tmp * (size_t)(n ? n : 1));
	a = malloc(sizeof *a * 4 * (size_t)(n ? n : 1));
	if (!tr || !order || !tmp || !a) {
		free(tr);
		free(order);
		free(tmp);
		free(a);
		return tk_seterr(TK_ENOMEM, "out of memory");
	}
	for (int i = 0; i < n; i++) {
		tr[i].t = task[i];
		tr[i].i = i;
	}
	qsort(tr, (size_t)n, sizeof *tr, by_task);
	for (int i = 0; i < n; i++)
		order[i] = tr[i].i;
	free(tr);

	for (int s = 0, e; s < n; s = e) {
		for (e = s + 1; e < n && task[order[e]] == task[order[s]]; e++)
			;
		const int *row = order + s;
		int r = e - s, k;
		double *ap = a, *ay = a + r, *rp = a + 2 * r, *ry = a + 3 * r;
		out->ntask++;
		for (int i = 0; i < r; i++) {
			ap[i] = p[row[i]];
			ay[i] = y[row[i]];
			se += (ap[i] - ay[i]) * (ap[i] - ay[i]);
		}

		/* MSE(D): the top quarter by measured throughput */
		k = (r + 3) / 4;
		for (int i = 0; i < r; i++) {
			tmp[i].v = ay[i];
			tmp[i].i = i;
		}
		qsort(tmp, (size_t)r, sizeof *tmp, by_value_desc);
		double cut = tmp[k - 1].v;
		for (int i = 0; i < r; i++)
			if (ay[i] > 0 && ay[i] >= cut) {
				se_d += (ap[i] - ay[i]) * (ap[i] - ay[i]);
				n_d++;
			}

		/* top-1 and top-5 */
		double best = HUGE_VAL;
		for (int i = 0; i < r; i++)
			if (lat[row[i]] > 0 && lat[row[i]] < best)
				best = lat[row[i]];
		if (best < HUGE_VAL) {
			double w = weight ? weight[row[0]] : 1, top = HUGE_VAL, s1 = 0, s5 = 0;
			for (int i = 0; i < r; i++) {
				tmp[i].v = ap[i];
				tmp[i].i = i;
			}
			qsort(tmp, (size_t)r, sizeof *tmp, by_value_desc);
			for (int i = 0; i < r && i < 5; i++) {
				double l = lat[row[tmp[i].i]];
				if (l > 0 && l < top)
					top = l;
				if (i == 0)
					s1 = top < HUGE_VAL ? best / top : 0;
			}
			s5 = top < HUGE_VAL ? best / top : 0;
			w1 += w * s1;
			w5 += w * s5;
			wsum += w;
			ntop++;
		}

		/* Spearman */
		if (r >= 3) {
			int ok;
			rank_avg(ap, r, rp, tmp);
			rank_avg(ay, r, ry, tmp);
			double c = pearson(rp, ry, r, &ok);
			if (ok) {
				rho += c;
				nrho++;
			}
		}
	}
	out->mse = n ? se / n : NAN;
	out->rmse = n ? sqrt(out->mse) : NAN;
	out->mse_d = n_d ? se_d / n_d : NAN;
	out->top1 = ntop && wsum > 0 ? w1 / wsum : NAN;
	out->top5 = ntop && wsum > 0 ? w5 / wsum : NAN;
	out->spearman = nrho ? rho / nrho : NAN;
	free(order);
	free(tmp);
	free(a);
	return TK_OK;
}

/* ---- the validity classifier ------------------------------------------------ */

typedef struct score_item {
	float p;
	int pos;
} score_item;

static int by_score(const void *a, const void *b)
{
	const score_item *x = a, *y = b;
	return (x->p > y->p) - (x->p < y->p);
}

int cm_metrics_classify(int n, const float *y, const float *p, cm_class_metrics *out)
{
	int tp = 0, fp = 0, fn = 0, tn = 0;
	out->n = n;
	out->valid = 0;
	out->accuracy = out->precision = out->recall = out->auc = NAN;
	if (n <= 0)
		return TK_OK;
	for (int i = 0; i < n; i++) {
		int pos = y[i] > 0, said = p[i] >= 0.5f;
		tp += pos && said;
		fp += !pos && said;
		fn += pos && !said;
		tn += !pos && !said;
	}
	out->valid = tp + fn;
	out->accuracy = (double)(tp + tn) / n;
	if (tp + fp > 0)
		out->precision = (double)tp / (tp + fp);
	if (tp + fn > 0)
		out->recall = (double)tp / (tp + fn);
	if (out->valid == 0 || out->valid == n)
		return TK_OK;
	/* AUC by the rank-sum (Mann-Whitney U), tied scores sharing their mean rank */
	score_item *s = malloc(sizeof *s * (size_t)n);
	if (!s)
		return tk_seterr(TK_ENOMEM, "out of memory");
	for (int i = 0; i < n; i++)
		s[i] = (score_item){ p[i], y[i] > 0 };
	qsort(s, (size_t)n, sizeof *s, by_score);
	double ranks = 0;
	for (int i = 0; i < n;) {
		int j = i, npos = 0;
		while (j < n && s[j].p == s[i].p)
			npos += s[j++].pos;
		ranks += npos * ((i + 1 + j) / 2.0); /* mean of ranks i+1 .. j */
		i = j;
	}
	double np = out->valid, nn = n - out->valid;
	out->auc = (ranks - np * (np + 1) / 2) / (np * nn);
	free(s);
	return TK_OK;
}

/* ---- NDCG ------------------------------------------------------------------------ */

typedef struct ndcg_item {
	float p, y;
} ndcg_item;

/* Descending prediction; among equal predictions the lowest label first. */
static int ndcg_cmp(const void *a, const void *b)
{
	const ndcg_item *x = a, *y = b;
	if (x->p != y->p)
		return x->p > y->p ? -1 : 1;
	return (x->y > y->y) - (x->y < y->y);
}

static int desc_float(const void *a, const void *b)
{
	float x = *(const float *)a, y = *(const float *)b;
	return (x < y) - (x > y);
}

size_t cm_ndcg_work(int n)
{
	return (size_t)(n > 0 ? n : 1) * (sizeof(ndcg_item) + sizeof(float));
}

double cm_ndcg(int n, const float *y, const float *p, int ngroup, const unsigned *group,
               void *work)
{
	unsigned one = (unsigned)n;
	ndcg_item *tmp = work;
	float *gain = (float *)(tmp + (n > 0 ? n : 1));
	int base = 0, nscored = 0;
	double total = 0;
	if (ngroup <= 0) {
		group = &one;
		ngroup = 1;
	}
	for (int g = 0; g < ngroup; base += (int)group[g], g++) {
		int m = (int)group[g];
		double dcg = 0, ideal = 0;
		for (int i = 0; i < m; i++) {
			tmp[i].p = p[base + i];
			tmp[i].y = y[base + i];
			gain[i] = y[base + i];
		}
		qsort(tmp, (size_t)m, sizeof *tmp, ndcg_cmp);
		qsort(gain, (size_t)m, sizeof *gain, desc_float);
		for (int i = 0; i < m; i++) {
			double disc = 1.0 / log2(i + 2.0);
			dcg += tmp[i].y * disc;
			ideal += gain[i] * disc;
		}
		if (ideal > 0) {
			total += dcg / ideal;
			nscored++;
		}
	}
	return nscored ? total / nscored : 0;
}
