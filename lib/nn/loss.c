/*
 * nn losses: mean squared error (masked, for multi-head models), the
 * pairwise logistic rank loss and TLP's LambdaRank. Each returns the loss
 * and adds its gradient with respect to the predictions when asked.
 * Shape key: N = predictions, G = groups (a group's rows contiguous).
 */
#define _GNU_SOURCE /* qsort_r */
#include "nn.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>

float nn_mse_loss(float *dpred, const float *pred, const float *y, const float *mask, int N)
{
	double sum = 0;
	int count = 0;
	for (int i = 0; i < N; i++)
		if (!mask || mask[i] != 0) {
			double d = (double)pred[i] - y[i];
			sum += d * d;
			count++;
		}
	if (!count)
		return 0;
	if (dpred)
		for (int i = 0; i < N; i++)
			if (!mask || mask[i] != 0)
				dpred[i] += 2.0f * (pred[i] - y[i]) / (float)count;
	return (float)(sum / count);
}

/* log(1 + exp(-z)) without overflow. */
static double softplus_neg(double z)
{
	return z > 0 ? log1p(exp(-z)) : -z + log1p(exp(z));
}

float nn_rank_loss(float *dpred, const float *pred, const float *y, const unsigned *group, int G)
{
	double loss = 0;
	size_t start = 0;
	for (int g = 0; g < G; g++) {
		size_t end = start + group[g];
		for (size_t i = start; i < end; i++)
			for (size_t j = start; j < end; j++) {
				if (!(y[i] > y[j]))
					continue;
				double z = (double)pred[i] - pred[j];
				loss += softplus_neg(z);
				if (dpred) {
					/* d/dz log(1 + e^-z) = -1 / (1 + e^z) */
					float s = (float)(1.0 / (1.0 + exp(z)));
					dpred[i] -= s;
					dpred[j] += s;
				}
			}
		start = end;
	}
	return (float)loss;
}

/* Sort indices by the values in ctx, descending, ties by index (qsort_r). */
static int cmp_pred_desc(const void *pa, const void *pb, void *ctx)
{
	const float *p = ctx;
	int a = *(const int *)pa, b = *(const int *)pb;
	if (p[a] != p[b])
		return p[a] > p[b] ? -1 : 1;
	return a < b ? -1 : a > b;
}

float nn_lambdarank_loss(float *dpred, int *work, const float *pred, const float *y,
                         const unsigned *group, int G)
{
	const double eps = 1e-10;
	double loss = 0;
	size_t start = 0;
	for (int g = 0; g < G; g++) {
		int n = (int)group[g];
		const float *p = pred + start, *t = y + start;
		int *order = work + start;
		/* The ideal DCG: the labels in descending order (clamping at 0
		 * keeps that order). */
		double maxdcg = 0;
		for (int i = 0; i < n; i++)
			order[i] = i;
		qsort_r(order, n, sizeof *order, cmp_pred_desc, (void *)t);
		for (int r = 0; r < n; r++)
			maxdcg += (exp2(t[order[r]] > 0 ? t[order[r]] : 0) - 1) / log2(2.0 + r);
		if (maxdcg < eps)
			maxdcg = eps;
		for (int i = 0; i < n; i++)
			order[i] = i;
		qsort_r(order, n, sizeof *order, cmp_pred_desc, (void *)p);
		for (int a = 0; a < n; a++) {
			int i = order[a];
			double gi = (exp2(t[i] > 0 ? t[i] : 0) - 1) / maxdcg, di = 1 / log2(2.0 + a);
			for (int b = 0; b < n; b++) {
				int j = order[b];
				if (!(t[i] > t[j]))
					continue;
				double gj = (exp2(t[j] > 0 ? t[j] : 0) - 1) / maxdcg;
				double w = fabs(di - 1 / log2(2.0 + b)) * fabs(gi - gj);
				double z = (double)p[i] - p[j];
				double sig = 1 / (1 + exp(-z));
				/* (max(sig, eps))^w, clamped at eps again, as allRank does. */
				double lp = w * log2(sig > eps ? sig : eps);
				double lmin = log2(eps);
				if (lp < lmin) {
					loss -= lmin;
					continue;
				}
				loss -= lp;
				if (dpred && sig > eps) {
					/* d/dz -w log2(sigmoid(z)) = -w (1 - sigmoid(z)) / ln 2 */
					float d = (float)(w * (1 - sig) / M_LN2);
					dpred[start + i] -= d;
					dpred[start + j] += d;
				}
			}
		}
		start += n;
	}
	return (float)loss;
}
