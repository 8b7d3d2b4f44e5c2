/*
 * meta: the "meta" row of the cost-model table, MetaTune's cost model (Ryu
 * and Sung, 2021) over graph features (features/graph.c), and its
 * meta-training (meta.h): supervised pre-training, first-order MAML of the
 * regression head, and the fine-tuning that the tuner's updates run.
 *
 * Shape key: B = rows of a batch, N = super-graph nodes (FEAT_GRAPH_N), F =
 * node features (FEAT_GRAPH_F), H = GCN width (64), G = readout width (2H),
 * D1, D2 = the head's hidden widths (64), M = fine-tuned heads (ensemble),
 * P = parameters of a block, Q = parameters of the head.
 *
 * The network, as the paper's Figure 3, for the graph of one row:
 *   input     node features times a per-feature scale fixed at the first
 *             fit (1 / the largest magnitude of the feature in the training
 *             rows), so every feature is within [-1, 1]
 *   GCN 1     h1 = ReLU(A (x W1^T + P1) + b1), A the Kipf-Welling
 *             normalised adjacency of the row's edges (nn_gcn_adjacency);
 *             P1 (N, H) is a learnt vector per node slot: the slot's one-hot
 *             appended to its features, which makes the super-graph's
 *             positions (which axis, which level) visible to the network
 *   GCN 2     h2 = ReLU(A (h1 W2^T) + b2)
 *   readout   weighted sum and max (dgl-lifesci's WeightedSumAndMax):
 *             g = [sum_n sigmoid(h2_n . a + c) h2_n ; max_n h2_n]  (G)
 *   head      three fully connected layers G -> D1 -> D2 -> 1, ReLU
 *             between them: the predicted throughput, normalised per task
 * The loss is the mean squared error against the labels (the objective
 * "rank" of the table's callers is not used: MAML regresses).
 *
 * Parameters: one block, the embedding (W1, P1, b1, W2, b2, a, c) first and
 * the head (F1, f1, F2, f2, F3, f3) last, so the head is one contiguous
 * run of Q floats that MAML and fine-tuning copy, adapt and average.
 *
 * Fit (the table's fit; pre-training): every row, Adam (lr 3e-3, warm-up
 * and cosine decay), batches of META_BMAX rows, gradients clipped to norm
 * 1, for rounds epochs (default: at least META_EPOCHS and META_MINSTEPS
 * steps). Update (the tuner's refit, a fine-tune): the embedding stays;
 * M heads start from the model's head and take finetune_steps SGD steps of
 * alpha (full batch, or META_FTBATCH rows at a time) on all the records so
 * far, head 0 on the records themselves, heads 1.. on bootstrap resamples
 * of them. Predictions are the heads' mean and their deviation the
 * uncertainty (predict_dist); before any update, the model's own head with
 * deviation 0. The base head is kept: each update starts from it, as
 * MAML's adaptation does, not from the last update.
 *
 * Payload: a header (META_MAGIC, META_VERSION, N, F, H, EMAX, the
 * super-graph template's identifier, the graph feature version, flags,
 * alpha, finetune steps, heads, then the F input scales) and the parameter
 * block as an nn checkpoint whose tag hashes the shape. A model of another
 * super-graph or feature version does not load (TK_ECORRUPT naming both).
 * The fine-tuned heads are not saved.
 */
#include "meta.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "features/feature.h"
#include "nn/nn.h"

#define N FEAT_GRAPH_N
#define F FEAT_GRAPH_F
#define EMAX FEAT_GRAPH_EMAX
#define DLEN FEAT_GRAPH_LEN
#define H 64
#define G (2 * H)
#define D1 64
#define D2 64
#define META_BMAX 64        /* rows per batch of the embedding */
#define META_EPOCHS 30
#define META_MINSTEPS 2000
#define META_LR 3e-3f
#define META_FTBATCH 256    /* fine-tuning batch at most */
/* The update's SGD steps by default: many more than the 5 inner steps MAML
 * adapts with. On 10 held-out kernels of the meta-training set after 16
 * records, 5 steps gave MSE 0.0166 / MSE(D) 0.0463, 200 steps 0.0159 /
 * 0.0383; on 33 network convolutions 0.041 / 0.113 against 0.028 / 0.061
 * (tests/bench/meta.sh's models, 2026-11-27). */
#define META_FTSTEPS 200
#define META_MAXHEADS 16
#define META_MAGIC 0x4154454du /* "META" */
#define META_VERSION 1u
#define META_HEADER (56 + 4 * F)
#define META_TRAINED 1u     /* flag: meta-trained (MAML) */

/* The head's tensors (in a block or in a copy of the head's run). */
typedef struct meta_head {
	float *f1w, *f1b;   /* (D1, G), (D1) */
	float *f2w, *f2b;   /* (D2, D1), (D2) */
	float *f3w, *f3b;   /* (1, D2), (1) */
} meta_head;

/* The parameters, pointers into one block. */
typedef struct meta_w {
	float *w1, *p1, *b1; /* (H, F), (N, H), (H) */
	float *w2, *b2;      /* (H, H), (H) */
	float *ga, *gc;      /* (H), (1): the readout's gate */
	meta_head h;
} meta_w;

/* Activations of a batch of B <= META_BMAX rows (BN = B x N node rows). */
typedef struct meta_act {
	float *x;            /* (BN, F) scaled node features */
	float *xw;           /* (BN, H) x W1^T + P1 */
	float *r1;           /* (BN, H) */
	float *xw2;          /* (BN, H) */
	float *r2;           /* (BN, H) */
	float *gate;         /* (BN) */
	float *gmax;         /* (B, H) */
	float *g;            /* (B, G) */
	float *z1, *z2;      /* (B, D1), (B, D2) */
	/* gradients */
	float *dg;           /* (B, G) */
	float *dz1, *dz2;    /* (B, D1), (B, D2) */
	float *dr1, *dr2;    /* (BN, H) */
	float *scratch;      /* (BN, H) */
	int *argmax;         /* (B, H) */
	int *len;            /* (B) all N */
} meta_act;

typedef struct meta_net {
	size_t nparam, head_off, head_n;
	float *param, *grad;  /* (P) */
	meta_w w, dw;
	float scale[F];
	unsigned flags;       /* META_TRAINED */
	float alpha;          /* the update's step */
	int ft_steps, heads;  /* the update's steps and ensemble */
	int nens;             /* fine-tuned heads, 0 before an update */
	float *ens;           /* (M, Q) */
	/* the batch */
	float *actblock;
	meta_act a;
	nn_csr adj;           /* block-diagonal adjacency of the batch */
	int B;
} meta_net;

/* ---- layout --------------------------------------------------------------- */

static int head_list(meta_head *h, float **ptrs[], size_t sizes[])
{
	int n = 0;
#define ADD(p, sz) (ptrs[n] = &(p), sizes[n] = (size_t)(sz), n++)
	ADD(h->f1w, D1 * G);
	ADD(h->f1b, D1);
	ADD(h->f2w, D2 * D1);
	ADD(h->f2b, D2);
	ADD(h->f3w, D2);
	ADD(h->f3b, 1);
	return n;
}

/* Sizes and pointers of the tensors of w in block order; returns the count. */
static int wlist(meta_w *w, float **ptrs[], size_t sizes[])
{
	int n = 0;
	ADD(w->w1, H * F);
	ADD(w->p1, N * H);
	ADD(w->b1, H);
	ADD(w->w2, H * H);
	ADD(w->b2, H);
	ADD(w->ga, H);
	ADD(w->gc, 1);
#undef ADD
	return n + head_list(&w->h, ptrs + n, sizes + n);
}

#define META_MAXTENSOR 16

/* Point h at a head laid out from base (the head's run of a block). */
static void head_at(meta_head *h, float *base)
{
	float **ptrs[6];
	size_t sizes[6];
	int n = head_list(h, ptrs, sizes);
	nn_layout(base, ptrs, sizes, n);
}

static void net_free(meta_net *m)
{
	if (!m)
		return;
	free(m->param);
	free(m->grad);
	free(m->ens);
	free(m->actblock);
	free(m->a.argmax);
	free(m->a.len);
	nn_csr_free(&m->adj);
	free(m);
}

/* A network with zero parameters and unit scales. */
static int net_new(meta_net **out)
{
	float **ptrs[META_MAXTENSOR], **dptrs[META_MAXTENSOR];
	size_t sizes[META_MAXTENSOR], count;
	meta_net *m = calloc(1, sizeof *m);
	*out = NULL;
	if (!m)
		return tk_seterr(TK_ENOMEM, "out of memory");
	int nt = wlist(&m->w, ptrs, sizes);
	wlist(&m->dw, dptrs, sizes);
	if (nn_alloc(&m->param, &m->nparam, ptrs, sizes, nt) ||
	    nn_alloc(&m->grad, &count, dptrs, sizes, nt))
		goto oom;
	m->head_off = (size_t)(m->w.h.f1w - m->param);
	m->head_n = m->nparam - m->head_off;
	for (int f = 0; f < F; f++)
		m->scale[f] = 1.0f;
	m->alpha = 0.01f;
	m->ft_steps = META_FTSTEPS;
	m->heads = 5;
	size_t BN = (size_t)META_BMAX * N, B = META_BMAX;
	meta_act *a = &m->a;
	float **aptr[24];
	size_t asz[24];
	int na = 0;
#define ACT(p, sz) (aptr[na] = &(p), asz[na] = (sz), na++)
	ACT(a->x, BN * F);
	ACT(a->xw, BN * H);
	ACT(a->r1, BN * H);
	ACT(a->xw2, BN * H);
	ACT(a->r2, BN * H);
	ACT(a->gate, BN);
	ACT(a->gmax, B * H);
	ACT(a->g, B * G);
	ACT(a->z1, B * D1);
	ACT(a->z2, B * D2);
	ACT(a->dg, B * G);
	ACT(a->dz1, B * D1);
	ACT(a->dz2, B * D2);
	ACT(a->dr1, BN * H);
	ACT(a->dr2, BN * H);
	ACT(a->scratch, BN * H);
#undef ACT
	if (nn_alloc(&m->actblock, &count, aptr, asz, na))
		goto oom;
	a->argmax = malloc(sizeof *a->argmax * B * H);
	a->len = malloc(sizeof *a->len * B);
	m->adj.rowptr = malloc(sizeof *m->adj.rowptr * (BN + 1));
	m->adj.col = malloc(sizeof *m->adj.col * B * (N + 2 * EMAX));
	m->adj.val = malloc(sizeof *m->adj.val * B * (N + 2 * EMAX));
	if (!a->argmax || !a->len || !m->adj.rowptr || !m->adj.col || !m->adj.val)
		goto oom;
	for (int b = 0; b < META_BMAX; b++)
		a->len[b] = N;
	*out = m;
	return TK_OK;
oom:
	net_free(m);
	return tk_seterr(TK_ENOMEM, "out of memory");
}

/* PyTorch's default initialisation of linear layers (uniform in
 * +-1/sqrt(fan_in)); the slot vectors like a bias of the first layer. */
static void net_init(meta_net *m, tk_rng *r)
{
	meta_w *w = &m->w;
#define INIT(p, n, fin) nn_init_uniform(p, (size_t)(n), 1.0f / sqrtf((float)(fin)), r)
	INIT(w->w1, H * F, F);
	INIT(w->p1, N * H, F);
	INIT(w->b1, H, F);
	INIT(w->w2, H * H, H);
	INIT(w->b2, H, H);
	INIT(w->ga, H, H);
	INIT(w->gc, 1, H);
	INIT(w->h.f1w, D1 * G, G);
	INIT(w->h.f1b, D1, G);
	INIT(w->h.f2w, D2 * D1, D1);
	INIT(w->h.f2b, D2, D1);
	INIT(w->h.f3w, D2, D2);
	INIT(w->h.f3b, 1, D2);
#undef INIT
}

/* ---- the batch's graphs ----------------------------------------------------- */

static int check_shape(int d)
{
	if (d != DLEN)
		return tk_seterr(TK_EINVAL, "meta reads graph vectors of %d values (the super-graph),"
		                 " got %d", DLEN, d);
	return TK_OK;
}

/* Scaled node features of B rows into a->x and their block-diagonal
 * normalised adjacency into m->adj. TK_EINVAL for an edge outside the
 * super-graph (a graph larger than it). */
static int load_batch(meta_net *m, const float *x /* (B, DLEN) */, int B)
{
	meta_act *a = &m->a;
	nn_csr *A = &m->adj;
	int src[EMAX], dst[EMAX], nnz = 0;
	A->n = B * N;
	A->rowptr[0] = 0;
	for (int b = 0; b < B; b++) {
		const float *row = x + (size_t)b * DLEN, *e = row + N * F;
		float *xb = a->x + (size_t)b * N * F;
		for (int i = 0; i < N * F; i++)
			xb[i] = row[i] * m->scale[i % F];
		int ne = 0;
		for (int k = 0; k < EMAX; k++) {
			float s = e[2 * k], t = e[2 * k + 1];
			if (s == t)
				continue; /* an unused pair */
			if (!(s >= 0 && s < N && t >= 0 && t < N) || s != floorf(s) || t != floorf(t))
				return tk_seterr(TK_EINVAL, "meta: edge %d (%g -> %g) of row %d is outside the"
				                 " super-graph's %d nodes", k, s, t, b, N);
			src[ne] = (int)s;
			dst[ne] = (int)t;
			ne++;
		}
		nn_csr g;
		int rc = nn_gcn_adjacency(&g, src, dst, ne, N);
		if (rc)
			return rc;
		for (int i = 0; i < N; i++) {
			for (int p = g.rowptr[i]; p < g.rowptr[i + 1]; p++) {
				A->col[nnz] = b * N + g.col[p];
				A->val[nnz] = g.val[p];
				nnz++;
			}
			A->rowptr[b * N + i + 1] = nnz;
		}
		nn_csr_free(&g);
	}
	A->nnz = nnz;
	m->B = B;
	return TK_OK;
}

/* y = A z + b. */
static void csr_mul(float *y /* (R, K) */, const nn_csr *A, const float *z /* (R, K) */,
                    const float *b /* (K) */, int K)
{
	for (int i = 0; i < A->n; i++) {
		float *yi = y + (size_t)i * K;
		for (int k = 0; k < K; k++)
			yi[k] = b[k];
		for (int p = A->rowptr[i]; p < A->rowptr[i + 1]; p++) {
			const float *t = z + (size_t)A->col[p] * K;
			float v = A->val[p];
			for (int k = 0; k < K; k++)
				yi[k] += v * t[k];
		}
	}
}

/* dz = A^T dy (dz is overwritten). */
static void csr_mul_t(float *dz /* (R, K) */, const nn_csr *A, const float *dy /* (R, K) */, int K)
{
	nn_zero(dz, (size_t)A->n * K);
	for (int i = 0; i < A->n; i++) {
		const float *dyi = dy + (size_t)i * K;
		for (int p = A->rowptr[i]; p < A->rowptr[i + 1]; p++) {
			float *t = dz + (size_t)A->col[p] * K;
			float v = A->val[p];
			for (int k = 0; k < K; k++)
				t[k] += v * dyi[k];
		}
	}
}

/* dy[i] = 0 where the ReLU output y[i] is 0: the ReLU's backward in place. */
static void relu_mask(float *dy, const float *y, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (y[i] <= 0.0f)
			dy[i] = 0.0f;
}

static float sigmoid(float t)
{
	return t >= 0 ? 1.0f / (1.0f + expf(-t)) : expf(t) / (1.0f + expf(t));
}

/* ---- forward and backward ------------------------------------------------------ */

/* The readout g (B, G) of the batch load_batch loaded. */
static void embed_forward(meta_net *m)
{
	meta_act *a = &m->a;
	const meta_w *w = &m->w;
	const int B = m->B, BN = B * N;
	nn_linear_forward(a->xw, a->x, w->w1, NULL, BN, F, H);
	for (int b = 0; b < B; b++)
		nn_residual_forward(a->xw + (size_t)b * N * H, a->xw + (size_t)b * N * H, w->p1,
		                    (size_t)N * H);
	csr_mul(a->r1, &m->adj, a->xw, w->b1, H);
	nn_relu_forward(a->r1, a->r1, (size_t)BN * H);
	nn_gcn_forward(a->r2, a->xw2, a->r1, &m->adj, w->w2, w->b2, BN, H, H);
	nn_relu_forward(a->r2, a->r2, (size_t)BN * H);
	nn_pool_forward(a->gmax, a->argmax, a->r2, a->len, B, N, H, NN_POOL_MAX);
	for (int b = 0; b < B; b++) {
		float *gs = a->g + (size_t)b * G;
		nn_zero(gs, H);
		for (int n = 0; n < N; n++) {
			const float *h = a->r2 + ((size_t)b * N + n) * H;
			float t = w->gc[0];
			for (int k = 0; k < H; k++)
				t += h[k] * w->ga[k];
			float s = a->gate[b * N + n] = sigmoid(t);
			for (int k = 0; k < H; k++)
				gs[k] += s * h[k];
		}
		memcpy(gs + H, a->gmax + (size_t)b * H, sizeof *gs * H);
	}
}

/* Accumulate into m->dw the embedding's gradient given dg (B, G), for the
 * batch of the last embed_forward. */
static void embed_backward(meta_net *m, const float *dg /* (B, G) */)
{
	meta_act *a = &m->a;
	const meta_w *w = &m->w;
	meta_w *dw = &m->dw;
	const int B = m->B, BN = B * N;
	nn_zero(a->dr2, (size_t)BN * H);
	nn_zero(a->gmax, (size_t)B * H);
	for (int b = 0; b < B; b++) {
		const float *dgs = dg + (size_t)b * G;
		memcpy(a->gmax + (size_t)b * H, dgs + H, sizeof *dgs * H); /* d of the max */
		for (int n = 0; n < N; n++) {
			const float *h = a->r2 + ((size_t)b * N + n) * H;
			float *dh = a->dr2 + ((size_t)b * N + n) * H, s = a->gate[b * N + n], q = 0;
			for (int k = 0; k < H; k++) {
				dh[k] += s * dgs[k];
				q += dgs[k] * h[k];
			}
			float dt = q * s * (1.0f - s);
			for (int k = 0; k < H; k++) {
				dh[k] += dt * w->ga[k];
				dw->ga[k] += dt * h[k];
			}
			dw->gc[0] += dt;
		}
	}
	nn_pool_backward(a->dr2, a->gmax, a->argmax, a->len, B, N, H, NN_POOL_MAX);
	relu_mask(a->dr2, a->r2, (size_t)BN * H);
	nn_zero(a->dr1, (size_t)BN * H);
	nn_gcn_backward(a->dr1, dw->w2, dw->b2, a->scratch, a->dr2, a->r1, &m->adj, w->w2, BN, H, H);
	relu_mask(a->dr1, a->r1, (size_t)BN * H);
	/* r1 = relu(A xw + b1), xw = x W1^T + P1 */
	csr_mul_t(a->scratch, &m->adj, a->dr1, H);
	for (int i = 0; i < BN; i++)
		for (int k = 0; k < H; k++) {
			dw->b1[k] += a->dr1[(size_t)i * H + k];
			dw->p1[(size_t)(i % N) * H + k] += a->scratch[(size_t)i * H + k];
		}
	nn_linear_backward(NULL, dw->w1, NULL, a->scratch, a->x, w->w1, BN, F, H);
}

/* The head on B rows of readouts g: out (B). z1, z2 keep the activations. */
static void head_forward(const meta_head *h, float *out /* (B) */, float *z1 /* (B, D1) */,
                         float *z2 /* (B, D2) */, const float *g /* (B, G) */, int B)
{
	nn_linear_forward(z1, g, h->f1w, h->f1b, B, G, D1);
	nn_relu_forward(z1, z1, (size_t)B * D1);
	nn_linear_forward(z2, z1, h->f2w, h->f2b, B, D1, D2);
	nn_relu_forward(z2, z2, (size_t)B * D2);
	nn_linear_forward(out, z2, h->f3w, h->f3b, B, D2, 1);
}

/* Accumulate into dh the head's gradient given dout (B), and into dg (may
 * be NULL) the readout's; dz1, dz2 are work space. */
static void head_backward(meta_head *dh, float *dg /* (B, G) or NULL */, float *dz1 /* (B, D1) */,
                          float *dz2 /* (B, D2) */, const float *dout /* (B) */,
                          const float *g /* (B, G) */, const float *z1 /* (B, D1) */,
                          const float *z2 /* (B, D2) */, const meta_head *h, int B)
{
	nn_zero(dz2, (size_t)B * D2);
	nn_linear_backward(dz2, dh->f3w, dh->f3b, dout, z2, h->f3w, B, D2, 1);
	relu_mask(dz2, z2, (size_t)B * D2);
	nn_zero(dz1, (size_t)B * D1);
	nn_linear_backward(dz1, dh->f2w, dh->f2b, dz2, z1, h->f2w, B, D1, D2);
	relu_mask(dz1, z1, (size_t)B * D1);
	if (dg)
		nn_zero(dg, (size_t)B * G);
	nn_linear_backward(dg, dh->f1w, dh->f1b, dz1, g, h->f1w, B, G, D1);
}

/* Readouts of n rows into g (n, G), META_BMAX at a time. */
static int embed_rows(meta_net *m, float *g /* (n, G) */, const float *x /* (n, DLEN) */, int n)
{
	for (int i = 0; i < n; i += META_BMAX) {
		int B = n - i < META_BMAX ? n - i : META_BMAX, rc;
		if ((rc = load_batch(m, x + (size_t)i * DLEN, B)))
			return rc;
		embed_forward(m);
		memcpy(g + (size_t)i * G, m->a.g, sizeof *g * (size_t)B * G);
	}
	return TK_OK;
}

/* ---- training --------------------------------------------------------------------- */

static int check_data(const cm_data *d)
{
	int rc = check_shape(d->d);
	if (rc)
		return rc;
	if (d->margin)
		return tk_seterr(TK_EINVAL, "meta takes no base model");
	for (int i = 0; i < d->n; i++)
		if (!isfinite(d->y[i]))
			return tk_seterr(TK_EINVAL, "meta: label %d is not a number", i);
	return TK_OK;
}

/* Per-feature scales: 1 / the largest magnitude over the rows' nodes. */
static void fit_scale(meta_net *m, const cm_data *d)
{
	float mx[F] = { 0 };
	for (int i = 0; i < d->n; i++) {
		const float *row = d->x + (size_t)i * DLEN;
		for (int j = 0; j < N * F; j++) {
			float v = fabsf(row[j]);
			if (v > mx[j % F])
				mx[j % F] = v;
		}
	}
	for (int f = 0; f < F; f++)
		m->scale[f] = mx[f] > 0 ? 1.0f / mx[f] : 1.0f;
}

static void shuffle(int *v, int n, tk_rng *r)
{
	for (int i = n - 1; i > 0; i--) {
		int j = (int)tk_rng_below(r, (uint32_t)i + 1), t = v[i];
		v[i] = v[j];
		v[j] = t;
	}
}

/* Supervised training of the whole network on every row of d. */
static int train_all(meta_net *m, const cm_data *d, int epochs, tk_rng *r, meta_cb cb, void *ctx)
{
	int *order = malloc(sizeof *order * (size_t)d->n), rc = TK_OK;
	float *xb = malloc(sizeof *xb * (size_t)META_BMAX * DLEN), yb[META_BMAX], out[META_BMAX];
	float dout[META_BMAX];
	float *mo = calloc(m->nparam, sizeof *mo), *vo = calloc(m->nparam, sizeof *vo);
	if (!order || !xb || !mo || !vo) {
		rc = tk_seterr(TK_ENOMEM, "out of memory");
		goto done;
	}
	nn_adam opt;
	nn_adam_default(&opt);
	opt.weight_decay = 1e-4f;
	int steps_epoch = (d->n + META_BMAX - 1) / META_BMAX, total = epochs * steps_epoch, step = 0;
	for (int i = 0; i < d->n; i++)
		order[i] = i;
	for (int ep = 0; ep < epochs && !rc; ep++) {
		double sum = 0;
		shuffle(order, d->n, r);
		for (int i0 = 0; i0 < d->n && !rc; i0 += META_BMAX) {
			int B = d->n - i0 < META_BMAX ? d->n - i0 : META_BMAX;
			for (int b = 0; b < B; b++) {
				memcpy(xb + (size_t)b * DLEN, d->x + (size_t)order[i0 + b] * DLEN,
				       sizeof *xb * DLEN);
				yb[b] = d->y[order[i0 + b]];
			}
			if ((rc = load_batch(m, xb, B)))
				break;
			embed_forward(m);
			head_forward(&m->w.h, out, m->a.z1, m->a.z2, m->a.g, B);
			memset(dout, 0, sizeof dout);
			sum += nn_mse_loss(dout, out, yb, NULL, B) * B;
			nn_zero(m->grad, m->nparam);
			head_backward(&m->dw.h, m->a.dg, m->a.dz1, m->a.dz2, dout, m->a.g, m->a.z1, m->a.z2,
			              &m->w.h, B);
			embed_backward(m, m->a.dg);
			nn_clip_grad_norm(m->grad, m->nparam, 1.0f);
			opt.lr = nn_lr_schedule(META_LR, step++, steps_epoch, total, 0.01f);
			nn_adam_step(m->param, mo, vo, m->grad, m->nparam, &opt);
		}
		meta_progress p = { META_PRETRAIN, ep + 1, epochs, sum / d->n, NAN };
		if (!rc && cb && cb(ctx, &p))
			rc = tk_seterr(TK_EINTR, "interrupted");
	}
done:
	free(order);
	free(xb);
	free(mo);
	free(vo);
	return rc;
}

static int default_epochs(int n)
{
	int steps = (n + META_BMAX - 1) / META_BMAX, e = (META_MINSTEPS + steps - 1) / steps;
	return e > META_EPOCHS ? e : META_EPOCHS;
}

/* ---- the head on cached readouts: MAML and fine-tuning ----------------------------- */

/* Work space for the head on up to R rows. */
typedef struct head_work {
	int R;
	float *z1, *z2, *dz1, *dz2, *out, *dout; /* (R, D1), (R, D2), ..., (R) */
	float *grad;                             /* (Q) */
	float *g, *y;                            /* (R, G), (R): gathered rows */
	meta_head dh;
} head_work;

static void hw_free(head_work *w)
{
	free(w->z1), free(w->z2), free(w->dz1), free(w->dz2), free(w->out), free(w->dout);
	free(w->grad), free(w->g), free(w->y);
	memset(w, 0, sizeof *w);
}

static int hw_new(head_work *w, int R, size_t Q)
{
	memset(w, 0, sizeof *w);
	w->R = R;
	w->z1 = malloc(sizeof *w->z1 * (size_t)R * D1);
	w->z2 = malloc(sizeof *w->z2 * (size_t)R * D2);
	w->dz1 = malloc(sizeof *w->dz1 * (size_t)R * D1);
	w->dz2 = malloc(sizeof *w->dz2 * (size_t)R * D2);
	w->out = malloc(sizeof *w->out * (size_t)R);
	w->dout = malloc(sizeof *w->dout * (size_t)R);
	w->grad = malloc(sizeof *w->grad * Q);
	w->g = malloc(sizeof *w->g * (size_t)R * G);
	w->y = malloc(sizeof *w->y * (size_t)R);
	if (!w->z1 || !w->z2 || !w->dz1 || !w->dz2 || !w->out || !w->dout || !w->grad || !w->g || !w->y) {
		hw_free(w);
		return tk_seterr(TK_ENOMEM, "out of memory");
	}
	head_at(&w->dh, w->grad);
	return TK_OK;
}

/* MSE of the head (a run of Q floats) on n rows g, y; with grad, its
 * gradient into w->grad (overwritten). */
static double head_loss(head_work *w, size_t Q, float *head /* (Q) */, const float *g /* (n, G) */,
                        const float *y /* (n) */, int n, int grad)
{
	meta_head h;
	head_at(&h, head);
	head_forward(&h, w->out, w->z1, w->z2, g, n);
	if (!grad)
		return nn_mse_loss(NULL, w->out, y, NULL, n);
	memset(w->dout, 0, sizeof *w->dout * (size_t)n);
	double loss = nn_mse_loss(w->dout, w->out, y, NULL, n);
	nn_zero(w->grad, Q);
	head_backward(&w->dh, NULL, w->dz1, w->dz2, w->dout, g, w->z1, w->z2, &h, n);
	return loss;
}

/* steps SGD steps of lr on the head from its current value, on rows
 * g, y (n of them; batches of at most w->R, in turn). */
static void head_sgd(head_work *w, size_t Q, float *head, const float *g, const float *y, int n,
                     int steps, float lr)
{
	for (int s = 0, i0 = 0; s < steps; s++) {
		int B = n < w->R ? n : w->R;
		if (i0 + B > n)
			i0 = 0;
		head_loss(w, Q, head, g + (size_t)i0 * G, y + i0, B, 1);
		nn_clip_grad_norm(w->grad, Q, 10.0f);
		for (size_t q = 0; q < Q; q++)
			head[q] -= lr * w->grad[q];
		i0 += B;
	}
}

/* ---- the model row ------------------------------------------------------------------ */

static void mfree(void *s)
{
	net_free(s);
}

static int new_fitted(const cm_data *d, int epochs, uint64_t seed, meta_cb cb, void *ctx,
                      meta_net **out)
{
	meta_net *m;
	tk_rng r;
	int rc;
	*out = NULL;
	if ((rc = check_data(d)))
		return rc;
	if (d->n < 2)
		return tk_seterr(TK_EINVAL, "meta: %d rows to train on, need at least 2", d->n);
	if ((rc = net_new(&m)))
		return rc;
	tk_rng_seed(&r, seed, 0x6d657461 /* "meta" */);
	net_init(m, &r);
	fit_scale(m, d);
	if ((rc = train_all(m, d, epochs > 0 ? epochs : default_epochs(d->n), &r, cb, ctx))) {
		net_free(m);
		return rc;
	}
	*out = m;
	return TK_OK;
}

static int mfit(const cm_params *p, const cm_data *tr, const cm_data *va, void **state)
{
	meta_net *m;
	int rc = new_fitted(tr, p->rounds, p->seed, NULL, NULL, &m);
	*state = rc ? NULL : m;
	return rc;
}

/* The update: M heads fine-tuned from the base head on all rows (head 0
 * on the rows, the others on bootstrap resamples). */
static int finetune(meta_net *m, const cm_data *d, uint64_t seed)
{
	int rc = check_data(d), n = d->n, M = m->heads;
	if (rc)
		return rc;
	if (n < 1)
		return TK_OK;
	size_t Q = m->head_n;
	head_work w;
	float *g = malloc(sizeof *g * (size_t)n * G), *ens = malloc(sizeof *ens * Q * (size_t)M);
	if (!g || !ens || (rc = hw_new(&w, n < META_FTBATCH ? n : META_FTBATCH, Q))) {
		free(g);
		free(ens);
		return rc ? rc : tk_seterr(TK_ENOMEM, "out of memory");
	}
	tk_rng r;
	tk_rng_seed(&r, seed, 0x6674 /* "ft" */);
	float *gb = malloc(sizeof *gb * (size_t)n * G), *yb = malloc(sizeof *yb * (size_t)n);
	if (!gb || !yb)
		rc = tk_seterr(TK_ENOMEM, "out of memory");
	if (!rc)
		rc = embed_rows(m, g, d->x, n);
	for (int k = 0; !rc && k < M; k++) {
		float *head = ens + (size_t)k * Q;
		memcpy(head, m->param + m->head_off, sizeof *head * Q);
		for (int i = 0; i < n; i++) {
			int j = k ? (int)tk_rng_below(&r, (uint32_t)n) : i;
			memcpy(gb + (size_t)i * G, g + (size_t)j * G, sizeof *gb * G);
			yb[i] = d->y[j];
		}
		head_sgd(&w, Q, head, gb, yb, n, m->ft_steps, m->alpha);
	}
	if (!rc) {
		free(m->ens);
		m->ens = ens;
		m->nens = M;
		ens = NULL;
	}
	free(g);
	free(gb);
	free(yb);
	free(ens);
	hw_free(&w);
	return rc;
}

static int mupdate(void *s, const cm_params *p, const cm_data *all)
{
	if (all->head)
		return tk_seterr(TK_EINVAL, "meta: an update takes rows of the target alone");
	return finetune(s, all, p->seed);
}

/* Mean and deviation over the fine-tuned heads (the base head alone, sd
 * 0, before any update) of n rows. */
static int mdist(void *s, const float *x, int n, int d, float *mu, float *sd)
{
	meta_net *m = s;
	int rc = check_shape(d);
	if (rc)
		return rc;
	size_t Q = m->head_n;
	float z1[META_BMAX * D1], z2[META_BMAX * D2], out[META_BMAX];
	for (int i = 0; i < n; i += META_BMAX) {
		int B = n - i < META_BMAX ? n - i : META_BMAX;
		if ((rc = load_batch(m, x + (size_t)i * DLEN, B)))
			return rc;
		embed_forward(m);
		int M = m->nens ? m->nens : 1;
		double s1[META_BMAX] = { 0 }, s2[META_BMAX] = { 0 };
		for (int k = 0; k < M; k++) {
			meta_head h;
			head_at(&h, m->nens ? m->ens + (size_t)k * Q : m->param + m->head_off);
			head_forward(&h, out, z1, z2, m->a.g, B);
			for (int b = 0; b < B; b++) {
				s1[b] += out[b];
				s2[b] += (double)out[b] * out[b];
			}
		}
		for (int b = 0; b < B; b++) {
			double mean = s1[b] / M, var = s2[b] / M - mean * mean;
			mu[i + b] = (float)mean;
			if (sd)
				sd[i + b] = (float)(var > 0 ? sqrt(var) : 0);
		}
	}
	return TK_OK;
}

static int mpredict(void *s, const float *x, int n, int d, const float *margin, float *out)
{
	if (margin)
		return tk_seterr(TK_EINVAL, "meta takes no base model");
	return mdist(s, x, n, d, out, NULL);
}

static uint64_t shape_tag(void)
{
	uint32_t v[7] = { META_VERSION, N, F, H, G, D1, D2 };
	return tk_hash64(v, sizeof v, feat_graph_template());
}

static int msave(void *s, void **buf, size_t *len)
{
	meta_net *m = s;
	void *ck;
	size_t cklen;
	int rc = nn_ckpt_save(m->param, m->nparam, shape_tag(), &ck, &cklen);
	if (rc)
		return rc;
	unsigned char *b = malloc(META_HEADER + cklen);
	if (!b) {
		free(ck);
		return tk_seterr(TK_ENOMEM, "out of memory");
	}
	uint64_t tid = feat_graph_template();
	memset(b, 0, META_HEADER);
	tk_put_le32(b, META_MAGIC);
	tk_put_le32(b + 4, META_VERSION);
	tk_put_le32(b + 8, N);
	tk_put_le32(b + 12, F);
	tk_put_le32(b + 16, H);
	tk_put_le32(b + 20, EMAX);
	memcpy(b + 24, &tid, 8);
	tk_put_le32(b + 32, (uint32_t)feat_version(FEAT_GRAPH));
	tk_put_le32(b + 36, m->flags);
	memcpy(b + 40, &m->alpha, 4);
	tk_put_le32(b + 44, (uint32_t)m->ft_steps);
	tk_put_le32(b + 48, (uint32_t)m->heads);
	memcpy(b + 56, m->scale, 4 * F);
	memcpy(b + META_HEADER, ck, cklen);
	free(ck);
	*buf = b;
	*len = META_HEADER + cklen;
	return TK_OK;
}

static int mload(const void *buf, size_t len, void **state)
{
	const unsigned char *b = buf;
	meta_net *m;
	uint64_t tid;
	int rc;
	*state = NULL;
	if (len < META_HEADER || tk_get_le32(b) != META_MAGIC)
		return tk_seterr(TK_ECORRUPT, "not a meta model");
	if (tk_get_le32(b + 4) != META_VERSION)
		return tk_seterr(TK_ECORRUPT, "meta model of version %u, this tunekit reads %u",
		                 tk_get_le32(b + 4), META_VERSION);
	memcpy(&tid, b + 24, 8);
	if (tk_get_le32(b + 32) != (uint32_t)feat_version(FEAT_GRAPH))
		return tk_seterr(TK_ECORRUPT, "meta model of graph features version %u; this tunekit"
		                 " extracts version %d (pretrain it again)", tk_get_le32(b + 32),
		                 feat_version(FEAT_GRAPH));
	if (tid != feat_graph_template() || tk_get_le32(b + 8) != N || tk_get_le32(b + 12) != F ||
	    tk_get_le32(b + 20) != EMAX)
		return tk_seterr(TK_ECORRUPT, "meta model of super-graph %016llx (%u nodes of %u"
		                 " features); this tunekit's super-graph is %016llx (%d x %d): pretrain"
		                 " it again", (unsigned long long)tid, tk_get_le32(b + 8), tk_get_le32(b + 12),
		                 (unsigned long long)feat_graph_template(), N, F);
	if (tk_get_le32(b + 16) != H)
		return tk_seterr(TK_ECORRUPT, "meta model of width %u, this tunekit's is %d",
		                 tk_get_le32(b + 16), H);
	if ((rc = net_new(&m)))
		return rc;
	m->flags = tk_get_le32(b + 36);
	memcpy(&m->alpha, b + 40, 4);
	m->ft_steps = (int)tk_get_le32(b + 44);
	m->heads = (int)tk_get_le32(b + 48);
	memcpy(m->scale, b + 56, 4 * F);
	int bad = !(m->alpha >= 0 && m->alpha < 100) || m->ft_steps < 0 || m->ft_steps > 1000000 ||
	          m->heads < 1 || m->heads > META_MAXHEADS;
	for (int f = 0; f < F; f++)
		bad |= !isfinite(m->scale[f]);
	if (bad || nn_ckpt_load(m->param, m->nparam, shape_tag(), b + META_HEADER, len - META_HEADER)) {
		net_free(m);
		return tk_seterr(TK_ECORRUPT, "meta model parameters do not match their header");
	}
	*state = m;
	return TK_OK;
}

static int mdescribe(void *s, mf_meta *mm)
{
	meta_net *m = s;
	char v[64];
	int rc = mf_set(mm, "objective", "mse");
	snprintf(v, sizeof v, "%016llx", (unsigned long long)feat_graph_template());
	if (!rc)
		rc = mf_set(mm, "supergraph", v);
	if (!rc)
		rc = mf_set(mm, "maml", m->flags & META_TRAINED ? "first-order" : "none");
	snprintf(v, sizeof v, "alpha %g, %d steps, %d heads", m->alpha, m->ft_steps, m->heads);
	return rc ? rc : mf_set(mm, "finetune", v);
}

const cm_kind cm_meta = {
	.name = "meta",
	.summary = "MetaTune: a GCN on the super-graph, MAML-pretrained head fine-tuned per task",
	.features = 1u << FEAT_GRAPH,
	.feature = FEAT_GRAPH,
	.flags = CM_UNCERTAINTY | CM_FINETUNE,
	.fit = mfit,
	.update = mupdate,
	.predict = mpredict,
	.predict_dist = mdist,
	.save = msave,
	.load = mload,
	.describe = mdescribe,
	.free = mfree,
};

/* ---- meta-training ------------------------------------------------------------------ */

void meta_opts_default(meta_opts *o)
{
	memset(o, 0, sizeof *o);
	o->alpha = 0.01;
	o->beta = 0.001;
	o->inner_steps = 5;
	o->tasks_per_batch = 4;
	o->ways = 3;
	o->shots = 4;
	o->queries = 4;
	o->meta_steps = 300;
	o->finetune_steps = META_FTSTEPS;
	o->heads = 5;
	o->seed = 1;
}

int meta_opts_check(const meta_opts *o)
{
	if (!(o->alpha > 0 && o->alpha < 100))
		return tk_seterr(TK_EINVAL, "--alpha must be above 0 and below 100");
	if (!(o->beta > 0 && o->beta < 100))
		return tk_seterr(TK_EINVAL, "--beta must be above 0 and below 100");
	if (o->inner_steps < 1 || o->inner_steps > 10000)
		return tk_seterr(TK_EINVAL, "--inner-steps must be 1 to 10000");
	if (o->tasks_per_batch < 1 || o->tasks_per_batch > 1000)
		return tk_seterr(TK_EINVAL, "--tasks-per-batch must be 1 to 1000");
	if (o->ways < 1 || o->ways > 1000)
		return tk_seterr(TK_EINVAL, "--ways must be 1 to 1000");
	if (o->shots < 1 || o->shots > 100000 || o->queries < 1 || o->queries > 100000)
		return tk_seterr(TK_EINVAL, "--shots and --queries must be 1 to 100000");
	if (o->epochs < 0 || o->epochs > 100000 || o->meta_steps < 0 || o->meta_steps > 10000000)
		return tk_seterr(TK_EINVAL, "--epochs or --meta-steps out of range");
	if (o->finetune_steps < 0 || o->finetune_steps > 1000000)
		return tk_seterr(TK_EINVAL, "--finetune-steps must be 0 to 1000000");
	if (o->heads < 1 || o->heads > META_MAXHEADS)
		return tk_seterr(TK_EINVAL, "--heads must be 1 to %d", META_MAXHEADS);
	return TK_OK;
}

int meta_pretrain(const meta_opts *o, const cm_data *train, meta_cb cb, void *ctx,
                  cm_model **out)
{
	meta_net *m;
	int rc;
	*out = NULL;
	if ((rc = meta_opts_check(o)) || (rc = new_fitted(train, o->epochs, o->seed, cb, ctx, &m)))
		return rc;
	return cm_wrap(&cm_meta, m, out);
}

/* The dataset tasks of one few-shot task: ways of them, distinct, of
 * classes not yet taken while there are some. pick[] receives them. */
static void draw_ways(const meta_tasks *t, const int *elig, int nelig, int ways, tk_rng *r,
                      int *pick)
{
	int taken = 0;
	char *used = calloc((size_t)t->ntask, 1);
	for (int k = 0; k < ways; k++) {
		/* a class not used yet, among the eligible tasks left; else any */
		int best = -1, tries = 0;
		while (best < 0 && tries < 4 * nelig) {
			int c = elig[tk_rng_below(r, (uint32_t)nelig)], fresh = 1;
			tries++;
			if (used && used[c])
				continue;
			for (int j = 0; j < taken; j++)
				fresh &= t->cls[pick[j]] != t->cls[c];
			if (fresh || tries > 2 * nelig)
				best = c;
		}
		if (best < 0) /* every eligible task is used: take the first free one */
			for (int j = 0; j < nelig && best < 0; j++)
				if (!used || !used[elig[j]])
					best = elig[j];
		pick[taken++] = best;
		if (used)
			used[best] = 1;
	}
	free(used);
}

int meta_maml(cm_model *mm, const meta_opts *o, const cm_data *d, const meta_tasks *t,
              meta_cb cb, void *ctx)
{
	meta_net *m = cm_state(mm, &cm_meta);
	int rc;
	if (!m)
		return tk_seterr(TK_EINVAL, "MAML needs a meta model");
	if ((rc = meta_opts_check(o)) || (rc = check_data(d)))
		return rc;
	const int per = o->shots + o->queries;
	int nelig = 0, most = 0;
	int *elig = malloc(sizeof *elig * (size_t)(t->ntask ? t->ntask : 1));
	if (!elig)
		return tk_seterr(TK_ENOMEM, "out of memory");
	for (int i = 0; i < t->ntask; i++) {
		most = t->n[i] > most ? t->n[i] : most;
		if (t->n[i] >= per)
			elig[nelig++] = i;
	}
	if (nelig < o->ways) {
		free(elig);
		return tk_seterr(TK_EINVAL, "%d of %d tasks have the %d configurations a %d-shot task"
		                 " with %d queries needs (the most any has is %d); --ways %d needs %d",
		                 nelig, t->ntask, per, o->shots, o->queries, most, o->ways, o->ways);
	}
	size_t Q = m->head_n;
	const int S = o->ways * o->shots, QR = o->ways * o->queries;
	head_work w;
	float *g = malloc(sizeof *g * (size_t)d->n * G), *theta = malloc(sizeof *theta * Q);
	float *ad = malloc(sizeof *ad * Q), *mg = malloc(sizeof *mg * Q);
	float *mo = calloc(Q, sizeof *mo), *vo = calloc(Q, sizeof *vo);
	float *qg = malloc(sizeof *qg * (size_t)QR * G), *qy = malloc(sizeof *qy * (size_t)QR);
	int *pick = malloc(sizeof *pick * (size_t)o->ways), *perm = malloc(sizeof *perm * (size_t)most);
	rc = hw_new(&w, S > QR ? S : QR, Q);
	if (!rc && (!g || !theta || !ad || !mg || !mo || !vo || !qg || !qy || !pick || !perm))
		rc = tk_seterr(TK_ENOMEM, "out of memory");
	/* the embedding is frozen: every row's readout once */
	if (!rc)
		rc = embed_rows(m, g, d->x, d->n);
	tk_rng r;
	tk_rng_seed(&r, o->seed, 0x6d616d6c /* "maml" */);
	nn_adam opt;
	nn_adam_default(&opt);
	opt.lr = (float)o->beta;
	if (!rc)
		memcpy(theta, m->param + m->head_off, sizeof *theta * Q);
	for (int step = 0; !rc && step < o->meta_steps; step++) {
		double lq = 0, lq0 = 0;
		nn_zero(mg, Q);
		for (int ti = 0; ti < o->tasks_per_batch; ti++) {
			draw_ways(t, elig, nelig, o->ways, &r, pick);
			/* support rows into w.g, w.y; query rows into qg, qy */
			for (int k = 0; k < o->ways; k++) {
				int tk = pick[k], n = t->n[tk];
				for (int i = 0; i < n; i++)
					perm[i] = i;
				for (int i = 0; i < per; i++) { /* a partial shuffle: the first per */
					int j = i + (int)tk_rng_below(&r, (uint32_t)(n - i)), x = perm[i];
					perm[i] = perm[j];
					perm[j] = x;
				}
				for (int i = 0; i < per; i++) {
					int row = t->first[tk] + perm[i];
					int sup = i < o->shots, at = sup ? k * o->shots + i : k * o->queries + i - o->shots;
					memcpy((sup ? w.g : qg) + (size_t)at * G, g + (size_t)row * G, sizeof *g * G);
					(sup ? w.y : qy)[at] = d->y[row];
				}
			}
			memcpy(ad, theta, sizeof *ad * Q);
			lq0 += head_loss(&w, Q, ad, qg, qy, QR, 0);
			for (int s = 0; s < o->inner_steps; s++) {
				head_loss(&w, Q, ad, w.g, w.y, S, 1);
				for (size_t q = 0; q < Q; q++)
					ad[q] -= (float)o->alpha * w.grad[q];
			}
			/* first-order MAML: the query gradient at the adapted head */
			lq += head_loss(&w, Q, ad, qg, qy, QR, 1);
			for (size_t q = 0; q < Q; q++)
				mg[q] += w.grad[q] / (float)o->tasks_per_batch;
		}
		nn_clip_grad_norm(mg, Q, 1.0f);
		nn_adam_step(theta, mo, vo, mg, Q, &opt);
		meta_progress p = { META_MAML, step + 1, o->meta_steps, lq / o->tasks_per_batch,
		                    lq0 / o->tasks_per_batch };
		if (cb && cb(ctx, &p))
			rc = tk_seterr(TK_EINTR, "interrupted");
	}
	if (!rc) {
		memcpy(m->param + m->head_off, theta, sizeof *theta * Q);
		m->flags |= META_TRAINED;
		m->alpha = (float)o->alpha;
		m->ft_steps = o->finetune_steps ? o->finetune_steps : o->inner_steps;
		m->heads = o->heads;
		free(m->ens);
		m->ens = NULL;
		m->nens = 0;
	}
	hw_free(&w);
	free(elig), free(g), free(theta), free(ad), free(mg), free(mo), free(vo);
	free(qg), free(qy), free(pick), free(perm);
	return rc;
}

int meta_eval(cm_model *mm, const cm_data *d, const meta_tasks *t, int shots, uint64_t seed,
              double *before, double *after, int *ntask)
{
	meta_net *m0 = cm_state(mm, &cm_meta);
	int rc = TK_OK, most = 0;
	*before = *after = NAN;
	*ntask = 0;
	if (!m0)
		return tk_seterr(TK_EINVAL, "meta_eval needs a meta model");
	if ((rc = check_shape(d->d)))
		return rc;
	for (int i = 0; i < t->ntask; i++)
		most = t->n[i] > most ? t->n[i] : most;
	cm_model *copy = NULL;
	float *x = malloc(sizeof *x * (size_t)(most ? most : 1) * DLEN);
	float *y = malloc(sizeof *y * (size_t)(most ? most : 1));
	float *p = malloc(sizeof *p * (size_t)(most ? most : 1));
	int *perm = malloc(sizeof *perm * (size_t)(most ? most : 1));
	if (!x || !y || !p || !perm)
		rc = tk_seterr(TK_ENOMEM, "out of memory");
	if (!rc)
		rc = cm_clone(mm, &copy);
	tk_rng r;
	tk_rng_seed(&r, seed, 0x6576616c /* "eval" */);
	double sb = 0, sa = 0;
	for (int i = 0; !rc && i < t->ntask; i++) {
		int n = t->n[i], rest = n - shots;
		if (rest < 1)
			continue;
		meta_net *m = cm_state(copy, &cm_meta);
		for (int j = 0; j < n; j++)
			perm[j] = j;
		shuffle(perm, n, &r);
		for (int j = 0; j < n; j++) {
			memcpy(x + (size_t)j * DLEN, d->x + (size_t)(t->first[i] + perm[j]) * DLEN,
			       sizeof *x * DLEN);
			y[j] = d->y[t->first[i] + perm[j]];
		}
		/* the rows after the shots are the test rows; the base head first */
		m->nens = 0;
		if ((rc = mdist(m, x + (size_t)shots * DLEN, rest, DLEN, p, NULL)))
			break;
		sb += nn_mse_loss(NULL, p, y + shots, NULL, rest);
		cm_data sup = { .n = shots, .d = DLEN, .x = x, .y = y };
		if ((rc = finetune(m, &sup, seed + (uint64_t)i)) ||
		    (rc = mdist(m, x + (size_t)shots * DLEN, rest, DLEN, p, NULL)))
			break;
		sa += nn_mse_loss(NULL, p, y + shots, NULL, rest);
		++*ntask;
	}
	if (!rc && *ntask) {
		*before = sb / *ntask;
		*after = sa / *ntask;
	}
	cm_free(copy);
	free(x), free(y), free(p), free(perm);
	return rc;
}
