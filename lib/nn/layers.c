/*
 * nn layers: forward/backward pairs of linear, ReLU, layer norm, residual,
 * masked pooling, embedding, masked multi-head self-attention and sparse
 * graph convolution. Shape key and contracts in nn.h: B batch, L sequence
 * length, E input width, F output width, H heads, N nodes or rows, V
 * vocabulary, R rows of a layer norm.
 */
#include "nn.h"

#include <assert.h>
#include <cblas.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- linear ---------------------------------------------------------- */

void nn_linear_forward(float *y, const float *x, const float *w, const float *b,
                       int B, int E, int F)
{
	float beta = 0;
	if (b) {
		for (int i = 0; i < B; i++)
			memcpy(y + (size_t)i * F, b, F * sizeof *y);
		beta = 1;
	}
	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, B, F, E, 1.0f, x, E, w, E, beta, y, F);
}

void nn_linear_backward(float *dx, float *dw, float *db, const float *dy, const float *x,
                        const float *w, int B, int E, int F)
{
	if (dx)
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, B, E, F, 1.0f, dy, F, w, E,
		            1.0f, dx, E);
	cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, F, E, B, 1.0f, dy, F, x, E, 1.0f, dw, E);
	if (db)
		for (int i = 0; i < B; i++)
			for (int f = 0; f < F; f++)
				db[f] += dy[(size_t)i * F + f];
}

/* ---- ReLU, residual ---------------------------------------------------- */

void nn_relu_forward(float *y, const float *x, size_t n)
{
	/* Without branches: a ReLU's signs are a coin toss to the branch
	 * predictor, and a mispredicted branch per element cost more than the
	 * layer's matrix product feeding it. */
	for (size_t i = 0; i < n; i++) {
		uint32_t u;
		memcpy(&u, &x[i], sizeof u);
		u &= ~(uint32_t)((int32_t)u >> 31); /* a set sign bit clears it all */
		memcpy(&y[i], &u, sizeof u);
	}
}

void nn_relu_backward(float *dx, const float *dy, const float *y, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (y[i] > 0)
			dx[i] += dy[i];
}

void nn_residual_forward(float *y, const float *a, const float *c, size_t n)
{
	for (size_t i = 0; i < n; i++)
		y[i] = a[i] + c[i];
}

void nn_residual_backward(float *da, float *dc, const float *dy, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		da[i] += dy[i];
		dc[i] += dy[i];
	}
}

/* ---- layer norm -------------------------------------------------------- */

void nn_layernorm_forward(float *y, float *mean, float *rstd, const float *x, const float *g,
                          const float *b, int R, int E)
{
	for (int r = 0; r < R; r++) {
		const float *xr = x + (size_t)r * E;
		float *yr = y + (size_t)r * E;
		double m = 0, var = 0;
		for (int e = 0; e < E; e++)
			m += xr[e];
		m /= E;
		for (int e = 0; e < E; e++)
			var += (xr[e] - m) * (xr[e] - m);
		var /= E;
		float s = (float)(1.0 / sqrt(var + 1e-5));
		for (int e = 0; e < E; e++)
			yr[e] = ((xr[e] - (float)m) * s) * g[e] + b[e];
		mean[r] = (float)m;
		rstd[r] = s;
	}
}

void nn_layernorm_backward(float *dx, float *dg, float *db, const float *dy, const float *x,
                           const float *mean, const float *rstd, const float *g, int R, int E)
{
	for (int r = 0; r < R; r++) {
		const float *xr = x + (size_t)r * E, *dyr = dy + (size_t)r * E;
		float *dxr = dx + (size_t)r * E;
		float m = mean[r], s = rstd[r];
		/* The two means the gradient through the normalisation needs. */
		double dnorm_mean = 0, dnorm_norm_mean = 0;
		for (int e = 0; e < E; e++) {
			float norm = (xr[e] - m) * s, dnorm = g[e] * dyr[e];
			dnorm_mean += dnorm;
			dnorm_norm_mean += dnorm * norm;
		}
		dnorm_mean /= E;
		dnorm_norm_mean /= E;
		for (int e = 0; e < E; e++) {
			float norm = (xr[e] - m) * s, dnorm = g[e] * dyr[e];
			db[e] += dyr[e];
			dg[e] += norm * dyr[e];
			dxr[e] += (dnorm - (float)dnorm_mean - norm * (float)dnorm_norm_mean) * s;
		}
	}
}

/* ---- pooling ----------------------------------------------------------- */

void nn_pool_forward(float *y, int *argmax, const float *x, const int *len, int B, int L, int E,
                     int kind)
{
	assert(kind == NN_POOL_SUM || kind == NN_POOL_MEAN || kind == NN_POOL_MAX);
	assert(kind != NN_POOL_MAX || argmax);
	for (int b = 0; b < B; b++) {
		int n = len[b];
		float *yb = y + (size_t)b * E;
		const float *xb = x + (size_t)b * L * E;
		assert(n >= 0 && n <= L);
		if (kind == NN_POOL_MAX) {
			int *ab = argmax + (size_t)b * E;
			for (int e = 0; e < E; e++) {
				yb[e] = 0;
				ab[e] = -1;
			}
			for (int l = 0; l < n; l++)
				for (int e = 0; e < E; e++)
					if (ab[e] < 0 || xb[(size_t)l * E + e] > yb[e]) {
						yb[e] = xb[(size_t)l * E + e];
						ab[e] = l;
					}
			continue;
		}
		for (int e = 0; e < E; e++)
			yb[e] = 0;
		for (int l = 0; l < n; l++)
			for (int e = 0; e < E; e++)
				yb[e] += xb[(size_t)l * E + e];
		if (kind == NN_POOL_MEAN && n > 0)
			for (int e = 0; e < E; e++)
				yb[e] /= (float)n;
	}
}

void nn_pool_backward(float *dx, const float *dy, const int *argmax, const int *len, int B,
                      int L, int E, int kind)
{
	for (int b = 0; b < B; b++) {
		int n = len[b];
		const float *dyb = dy + (size_t)b * E;
		float *dxb = dx + (size_t)b * L * E;
		if (kind == NN_POOL_MAX) {
			const int *ab = argmax + (size_t)b * E;
			for (int e = 0; e < E; e++)
				if (ab[e] >= 0)
					dxb[(size_t)ab[e] * E + e] += dyb[e];
			continue;
		}
		float s = kind == NN_POOL_MEAN && n > 0 ? 1.0f / (float)n : 1.0f;
		for (int l = 0; l < n; l++)
			for (int e = 0; e < E; e++)
				dxb[(size_t)l * E + e] += dyb[e] * s;
	}
}

/* ---- embedding --------------------------------------------------------- */

void nn_embedding_forward(float *y, const int *idx, const float *table, int N, int V, int E)
{
	for (int i = 0; i < N; i++) {
		assert(idx[i] < V);
		if (idx[i] < 0)
			memset(y + (size_t)i * E, 0, E * sizeof *y);
		else
			memcpy(y + (size_t)i * E, table + (size_t)idx[i] * E, E * sizeof *y);
	}
}

void nn_embedding_backward(float *dtable, const float *dy, const int *idx, int N, int V, int E)
{
	for (int i = 0; i < N; i++) {
		if (idx[i] < 0)
			continue;
		assert(idx[i] < V);
		float *d = dtable + (size_t)idx[i] * E;
		const float *g = dy + (size_t)i * E;
		for (int e = 0; e < E; e++)
			d[e] += g[e];
	}
}

/* ---- multi-head self-attention ----------------------------------------- */

/* Each (sequence, head) is three small matrix products over its n valid
 * positions: S = q k^T * scale, softmax by rows, out = S v. q, k and v are
 * column slices of qkv (leading dimension 3E), the head's output a column
 * slice of out (leading dimension E). */
void nn_attention_forward(float *out, float *att, const float *qkv, const int *len, int B,
                          int L, int E, int H)
{
	assert(E % H == 0);
	int D = E / H, ld = 3 * E;
	float scale = 1.0f / sqrtf((float)D);
	for (int b = 0; b < B; b++) {
		int n = len[b];
		const float *qb = qkv + (size_t)b * L * ld;
		float *ob = out + (size_t)b * L * E;
		assert(n >= 0 && n <= L);
		memset(ob, 0, (size_t)L * E * sizeof *ob);
		for (int h = 0; h < H; h++) {
			float *a = att + ((size_t)b * H + h) * L * L;
			const float *q = qb + h * D, *k = qb + E + h * D, *v = qb + 2 * E + h * D;
			memset(a, 0, (size_t)L * L * sizeof *a);
			if (n == 0)
				continue;
			cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, n, D, scale, q, ld, k, ld,
			            0.0f, a, L);
			for (int i = 0; i < n; i++) {
				float *r = a + (size_t)i * L, mx = -FLT_MAX, sum = 0;
				for (int j = 0; j < n; j++)
					mx = r[j] > mx ? r[j] : mx;
				for (int j = 0; j < n; j++) {
					r[j] = expf(r[j] - mx);
					sum += r[j];
				}
				for (int j = 0; j < n; j++)
					r[j] /= sum;
			}
			cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, D, n, 1.0f, a, L, v, ld,
			            0.0f, ob + h * D, E);
		}
	}
}

void nn_attention_backward(float *dqkv, float *scratch, const float *dout, const float *qkv,
                           const float *att, const int *len, int B, int L, int E, int H)
{
	assert(E % H == 0);
	int D = E / H, ld = 3 * E;
	float scale = 1.0f / sqrtf((float)D);
	for (int b = 0; b < B; b++) {
		int n = len[b];
		const float *qb = qkv + (size_t)b * L * ld, *dob = dout + (size_t)b * L * E;
		float *dqb = dqkv + (size_t)b * L * ld;
		if (n == 0)
			continue;
		for (int h = 0; h < H; h++) {
			const float *a = att + ((size_t)b * H + h) * L * L;
			const float *q = qb + h * D, *k = qb + E + h * D, *v = qb + 2 * E + h * D;
			const float *dO = dob + h * D;
			float *dq = dqb + h * D, *dk = dqb + E + h * D, *dv = dqb + 2 * E + h * D;
			float *ds = scratch; /* (n,n), leading dimension n */
			/* dv += a^T dO; da = dO v^T */
			cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, n, D, n, 1.0f, a, L, dO, E,
			            1.0f, dv, ld);
			cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, n, D, 1.0f, dO, E, v, ld,
			            0.0f, ds, n);
			/* Through the softmax: ds_ij = a_ij (da_ij - sum_k a_ik da_ik). */
			for (int i = 0; i < n; i++) {
				const float *ar = a + (size_t)i * L;
				float *dr = ds + (size_t)i * n, dot = 0;
				for (int j = 0; j < n; j++)
					dot += ar[j] * dr[j];
				for (int j = 0; j < n; j++)
					dr[j] = ar[j] * (dr[j] - dot);
			}
			/* dq += ds k * scale; dk += ds^T q * scale */
			cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, D, n, scale, ds, n, k, ld,
			            1.0f, dq, ld);
			cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, n, D, n, scale, ds, n, q, ld,
			            1.0f, dk, ld);
		}
	}
}

/* ---- sparse graph convolution ----------------------------------------- */

static int cmp_edge(const void *pa, const void *pb)
{
	const int *a = pa, *b = pb;
	if (a[0] != b[0])
		return a[0] < b[0] ? -1 : 1;
	return a[1] < b[1] ? -1 : a[1] > b[1];
}

int nn_gcn_adjacency(nn_csr *out, const int *src, const int *dst, int nedge, int n)
{
	size_t m = 2 * (size_t)nedge + n, k = 0;
	int *pairs, nnz = 0;
	float *deg;
	memset(out, 0, sizeof *out);
	for (int i = 0; i < nedge; i++)
		if (src[i] < 0 || src[i] >= n || dst[i] < 0 || dst[i] >= n)
			return tk_seterr(TK_EINVAL, "graph edge %d (%d -> %d) outside nodes 0..%d", i, src[i],
			                 dst[i], n - 1);
	pairs = malloc(2 * m * sizeof *pairs);
	deg = calloc(n ? n : 1, sizeof *deg);
	out->rowptr = calloc((size_t)n + 1, sizeof *out->rowptr);
	if (!pairs || !deg || !out->rowptr)
		goto oom;
	for (int i = 0; i < nedge; i++) {
		pairs[2 * k] = src[i], pairs[2 * k + 1] = dst[i], k++;
		pairs[2 * k] = dst[i], pairs[2 * k + 1] = src[i], k++;
	}
	for (int i = 0; i < n; i++)
		pairs[2 * k] = i, pairs[2 * k + 1] = i, k++;
	qsort(pairs, m, 2 * sizeof *pairs, cmp_edge);
	for (size_t i = 0; i < m; i++)
		if (i == 0 || cmp_edge(pairs + 2 * i, pairs + 2 * (i - 1))) {
			pairs[2 * nnz] = pairs[2 * i], pairs[2 * nnz + 1] = pairs[2 * i + 1];
			nnz++;
		}
	out->n = n;
	out->nnz = nnz;
	out->col = malloc((nnz ? nnz : 1) * sizeof *out->col);
	out->val = malloc((nnz ? nnz : 1) * sizeof *out->val);
	if (!out->col || !out->val)
		goto oom;
	for (int i = 0; i < nnz; i++) {
		deg[pairs[2 * i]] += 1;
		out->rowptr[pairs[2 * i] + 1]++;
	}
	for (int i = 0; i < n; i++)
		out->rowptr[i + 1] += out->rowptr[i];
	for (int i = 0; i < nnz; i++) {
		int r = pairs[2 * i], c = pairs[2 * i + 1];
		out->col[i] = c;
		out->val[i] = 1.0f / sqrtf(deg[r] * deg[c]);
	}
	free(pairs);
	free(deg);
	return TK_OK;
oom:
	free(pairs);
	free(deg);
	nn_csr_free(out);
	return tk_seterr(TK_ENOMEM, "out of memory for a graph of %d nodes", n);
}

void nn_csr_free(nn_csr *a)
{
	free(a->rowptr);
	free(a->col);
	free(a->val);
	memset(a, 0, sizeof *a);
}

void nn_gcn_forward(float *y, float *xw, const float *x, const nn_csr *a, const float *w,
                    const float *b, int N, int E, int F)
{
	assert(a->n == N);
	nn_linear_forward(xw, x, w, NULL, N, E, F);
	for (int i = 0; i < N; i++) {
		float *yi = y + (size_t)i * F;
		for (int f = 0; f < F; f++)
			yi[f] = b ? b[f] : 0;
		for (int p = a->rowptr[i]; p < a->rowptr[i + 1]; p++) {
			const float *t = xw + (size_t)a->col[p] * F;
			float v = a->val[p];
			for (int f = 0; f < F; f++)
				yi[f] += v * t[f];
		}
	}
}

void nn_gcn_backward(float *dx, float *dw, float *db, float *scratch, const float *dy,
                     const float *x, const nn_csr *a, const float *w, int N, int E, int F)
{
	/* d(xw) = A^T dy, scattered row by row. */
	nn_zero(scratch, (size_t)N * F);
	for (int i = 0; i < N; i++) {
		const float *dyi = dy + (size_t)i * F;
		for (int p = a->rowptr[i]; p < a->rowptr[i + 1]; p++) {
			float *t = scratch + (size_t)a->col[p] * F;
			float v = a->val[p];
			for (int f = 0; f < F; f++)
				t[f] += v * dyi[f];
		}
	}
	if (db)
		for (int i = 0; i < N; i++)
			for (int f = 0; f < F; f++)
				db[f] += dy[(size_t)i * F + f];
	nn_linear_backward(dx, dw, NULL, scratch, x, w, N, E, F);
}
