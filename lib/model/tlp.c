/*
 * tlp: the "tlp" and "mtl-tlp" rows of the cost-model table, the attention
 * cost model of TLP (Zhai et al., ASPLOS 2023) over schedule-primitive
 * sequences, with one decoder head per hardware for MTL-TLP.
 *
 * Shape key: B = sequences of a batch, L = positions of a sequence (rows of
 * a feature vector, D = L x E), E = floats per position (cm_params.seq_e),
 * T = valid positions of a batch (the sum of the sequence lengths), H = the
 * hidden width (256), A = attention heads (8), K = decoder heads (1 for tlp,
 * one per hardware for mtl-tlp).
 *
 * The network, as the paper's Figure 7 and its reference code, per position:
 *   encoder   E -> 64 -> 128 -> 256 -> H, linear + ReLU each
 *   attention one A-head self-attention over the sequence's valid positions
 *             (packed q,k,v projection, output projection), plus residual
 *   2 blocks  h = ReLU(h W^T + b) + h
 *   decoder   H -> 256 -> 128 -> 64 -> 1 (linear + ReLU, the last linear),
 *             the head of the row's hardware
 * and the score of a sequence is the sum of its positions' outputs. A
 * sequence's length is its number of leading positions that are not all
 * zero (padding rows are zero; every primitive row has a one-hot kind).
 * Work runs on the T valid positions packed together, not on B x L:
 * attention takes each sequence's packed rows as a batch of one.
 *
 * The label is the task's best latency over the row's latency (throughput
 * normalised per task, 0 for invalid rows); the loss is lambdarank (rank,
 * the default) or MSE, over groups of at most TLP_CHUNK rows of one task
 * and head drawn afresh each epoch (of an auxiliary head's rows, a share
 * cm_params.aux_fraction of the groups, drawn afresh too). AdamW with a
 * linear warm-up and a cosine decay, gradients clipped to norm 1. The
 * model trains a number of epochs (rounds; by default TLP_EPOCHS, or more
 * on small data, to take at least TLP_MINSTEPS steps); given validation
 * rows (cm_fit's valid), it keeps the epoch that ranked them best
 * (cm_ndcg, as xgb stops) and says so as its "rounds", which `tunekit
 * train` uses to fit again on the training and validation rows together
 * (CM_EPOCHS: train gives it validation tasks, never the holdout).
 * Deterministic given the seed, up to OpenBLAS's summation order.
 *
 * An update (the tuner's refit after a plan) fine-tunes the network it has
 * on all the records so far for about TLP_UPDATESTEPS steps (at least one
 * epoch), rather than training a new one from scratch.
 *
 * An adaptation to new hardware (cm_adapt, `tunekit transfer`) trains the
 * network further on the target's rows alone (by default TLP_EPOCHS epochs
 * at a tenth of the training rate, TLP_ADAPT_LR): every parameter
 * (fine-tuning), or Moses' lottery ticket: each epoch, the parameters most
 * salient on the target, |w * dL/dw| summed over its first batches, are
 * trained and the others decay toward zero (see tlp_ticket). Moses' domain-
 * adversarial term (its eq. 6) is not implemented. A multi-head model
 * adapts its target head (head 0) and the backbone.
 *
 * mtl-tlp is the same network with K heads: the backbone (encoder,
 * attention, blocks) is shared, rows of hardware k train head k only (the
 * loss of a row is masked for the other heads), and predictions use head 0,
 * the target. With one hardware it is tlp. From version 2 a multi-head
 * network also has a shared decoder, trained by every row, and head k's
 * output is added to it: each head is a residual on what all the hardware
 * agree on, its last layer zero at the start, so that a target with a few
 * hundred rows starts from the auxiliary heads' ranking and learns only
 * where it differs (version 1's heads, each a decoder of its own, started
 * from nothing and ranked worse than TLP on the target's rows alone;
 * BENCHMARKS.md). Version 1 files still load and predict as they were
 * trained. The nearer the auxiliary hardware, the more this helps.
 *
 * Payload: a header of TLP_MAGIC, the version, E, L, K and the objective,
 * then the parameter block as an nn checkpoint whose tag hashes the shape.
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cost.h"
#include "features/feature.h"
#include "metrics.h"
#include "nn/nn.h"

#define TLP_H 256
#define TLP_A 8
#define TLP_NRES 2
#define TLP_MAXHEAD 16
#define TLP_BMAX 128       /* sequences per batch */
#define TLP_CHUNK 32       /* rows of one task and head per ranking group */
#define TLP_EPOCHS 30
#define TLP_MINSTEPS 1000  /* by default, at least this many steps */
#define TLP_UPDATESTEPS 200 /* an update fine-tunes for this many steps */
#define TLP_LR 1e-3f
#define TLP_ADAPT_LR 1e-4f /* adaptation to new hardware: a tenth of training's */
#define TLP_MAGIC 0x4d504c54u /* "TLPM" */
#define TLP_VERSION 2u      /* 2: a multi-head network's shared decoder */
#define TLP_HEADER 32

static const int enc_dim[4] = { 64, 128, 256, TLP_H };
static const int dec_dim[4] = { 256, 128, 64, 1 };

/* The parameters, pointers into one block. */
typedef struct tlp_w {
	float *enc_w[4], *enc_b[4];
	float *qkv_w, *qkv_b;    /* (3H, H), (3H) */
	float *proj_w, *proj_b;  /* (H, H), (H) */
	float *res_w[TLP_NRES], *res_b[TLP_NRES];
	/* decoders: head k, and after the K heads the shared one (shared) */
	float *dec_w[TLP_MAXHEAD + 1][4], *dec_b[TLP_MAXHEAD + 1][4];
} tlp_w;

/* Activations of a batch of at most TLP_BMAX sequences (T <= BMAX x L). */
typedef struct tlp_act {
	float *x;                /* (T, E) */
	float *enc[4];           /* (T, enc_dim[i]) after ReLU */
	float *qkv;              /* (T, 3H) */
	float *att;              /* sequence b's (A, len, len) at attoff[b] */
	float *ao;               /* (T, H) attention output, packed */
	float *h[TLP_NRES + 1];  /* (T, H): h[0] after attention + residual */
	float *r[TLP_NRES];      /* (T, H) ReLU outputs of the blocks */
	float *dec[4];           /* (T, dec_dim[i]) */
	float *sdec[4];          /* (T, dec_dim[i]) the shared decoder's */
	/* gradients */
	float *g0, *g1, *g2;     /* (T, H) each */
	float *gqkv;             /* (T, 3H) */
	float *gdec[4];          /* (T, dec_dim[i]) */
	float *gsdec[3];         /* (T, dec_dim[i]); its last layer's is gdec[3] */
	float *genc[4];          /* (T, enc_dim[i]) */
	float *scratch;          /* (L, L) */
} tlp_act;

typedef struct tlp_net {
	int E, L, K, rank;
	unsigned version;        /* of the file format: TLP_VERSION, or a file's */
	int shared;              /* 1: decoder K is shared, heads are residuals */
	size_t nparam;
	float *param, *grad;     /* (P) each */
	tlp_w w, dw;
	float *actblock;
	tlp_act a;
	int len[TLP_BMAX], off[TLP_BMAX + 1];
	size_t attoff[TLP_BMAX];
	int T;
	int epochs;              /* of the last training (the best on its
	                            validation rows); 0: loaded, unknown */
	struct tlp_net *peer;    /* a second thread's activations and
	                            gradients, on these parameters; or NULL */
	int two;                 /* 1: batches run on two threads (split_begin) */
} tlp_net;

/* ---- layout ----------------------------------------------------------- */

/* Sizes and pointers of the parameter tensors of w, in block order (the
 * decoders of the K heads, then the shared one if any); returns the count. */
static int wlist(tlp_w *w, int E, int K, int shared, float **ptrs[], size_t sizes[])
{
	int n = 0, in = E;
#define ADD(p, sz) (ptrs[n] = &(p), sizes[n] = (size_t)(sz), n++)
	for (int i = 0; i < 4; i++) {
		ADD(w->enc_w[i], enc_dim[i] * in);
		ADD(w->enc_b[i], enc_dim[i]);
		in = enc_dim[i];
	}
	ADD(w->qkv_w, 3 * TLP_H * TLP_H);
	ADD(w->qkv_b, 3 * TLP_H);
	ADD(w->proj_w, TLP_H * TLP_H);
	ADD(w->proj_b, TLP_H);
	for (int i = 0; i < TLP_NRES; i++) {
		ADD(w->res_w[i], TLP_H * TLP_H);
		ADD(w->res_b[i], TLP_H);
	}
	for (int k = 0; k < K + shared; k++) {
		in = TLP_H;
		for (int i = 0; i < 4; i++) {
			ADD(w->dec_w[k][i], dec_dim[i] * in);
			ADD(w->dec_b[k][i], dec_dim[i]);
			in = dec_dim[i];
		}
	}
#undef ADD
	return n;
}

#define TLP_MAXTENSOR (8 + 4 + 2 * TLP_NRES + 8 * (TLP_MAXHEAD + 1))

static void net_free(tlp_net *n)
{
	if (!n)
		return;
	net_free(n->peer);
	free(n->param);
	free(n->grad);
	free(n->actblock);
	free(n);
}

/* A network for rows of E floats per position, L positions, K heads, in
 * the layout of file version `version`, its parameters zero. */
static int net_new(int E, int L, int K, unsigned version, tlp_net **out)
{
	float **ptrs[TLP_MAXTENSOR], **dptrs[TLP_MAXTENSOR];
	size_t sizes[TLP_MAXTENSOR], count;
	tlp_net *n = calloc(1, sizeof *n);
	*out = NULL;
	if (!n)
		return tk_seterr(TK_ENOMEM, "out of memory");
	n->E = E, n->L = L, n->K = K, n->version = version;
	n->shared = version >= 2 && K > 1;
	int nt = wlist(&n->w, E, K, n->shared, ptrs, sizes);
	wlist(&n->dw, E, K, n->shared, dptrs, sizes);
	if (nn_alloc(&n->param, &n->nparam, ptrs, sizes, nt) ||
	    nn_alloc(&n->grad, &count, dptrs, sizes, nt)) {
		net_free(n);
		return tk_seterr(TK_ENOMEM, "out of memory");
	}
	/* Activations. */
	size_t T = (size_t)TLP_BMAX * L, H = TLP_H;
	tlp_act *a = &n->a;
	float **aptr[48];
	size_t asz[48];
	int na = 0;
#define ACT(p, sz) (aptr[na] = &(p), asz[na] = (sz), na++)
	ACT(a->x, T * E);
	for (int i = 0; i < 4; i++) {
		ACT(a->enc[i], T * enc_dim[i]);
		ACT(a->genc[i], T * enc_dim[i]);
		ACT(a->dec[i], T * dec_dim[i]);
		ACT(a->gdec[i], T * dec_dim[i]);
		if (n->shared)
			ACT(a->sdec[i], T * dec_dim[i]);
		if (n->shared && i < 3)
			ACT(a->gsdec[i], T * dec_dim[i]);
	}
	ACT(a->qkv, T * 3 * H);
	ACT(a->att, (size_t)TLP_BMAX * TLP_A * L * L);
	ACT(a->ao, T * H);
	for (int i = 0; i <= TLP_NRES; i++)
		ACT(a->h[i], T * H);
	for (int i = 0; i < TLP_NRES; i++)
		ACT(a->r[i], T * H);
	ACT(a->g0, T * H);
	ACT(a->g1, T * H);
	ACT(a->g2, T * H);
	ACT(a->gqkv, T * 3 * H);
	ACT(a->scratch, (size_t)L * L);
#undef ACT
	if (nn_alloc(&n->actblock, &count, aptr, asz, na)) {
		net_free(n);
		return tk_seterr(TK_ENOMEM, "out of memory");
	}
	*out = n;
	return TK_OK;
}

/* n's peer: its own activations and gradients, n's parameters. */
static int net_peer(tlp_net *n)
{
	tlp_net *p;
	int rc = net_new(n->E, n->L, n->K, n->version, &p);
	if (rc)
		return rc;
	free(p->param);
	p->param = NULL;
	p->w = n->w;
	n->peer = p;
	return TK_OK;
}

/* Both cores without OpenBLAS's threads: where OpenBLAS may use two or
 * more, batches run on two threads of one BLAS thread each. A layer's
 * products are small (a batch's positions by 256), and what is not a
 * product ran on one core: scoring 1.5 times and training 1.2 times as
 * fast as OpenBLAS on two threads (BENCHMARKS.md). Returns what to give
 * split_end: the BLAS threads to restore, 0 when nothing changed (one
 * BLAS thread, or nested in a split already). */
static int split_begin(tlp_net *n)
{
	int t;
	if (n->two || (t = nn_blas_threads()) < 2 || (!n->peer && net_peer(n)))
		return 0;
	nn_set_blas_threads(1);
	n->two = 1;
	return t;
}

static void split_end(tlp_net *n, int t)
{
	if (!t)
		return;
	n->two = 0;
	nn_set_blas_threads(t);
}

/* PyTorch's default initialisation of a linear layer: weights and biases
 * uniform in +-1/sqrt(fan_in); with a shared decoder, the heads' last
 * layers zero (every head starts as the shared decoder). */
static void net_init(tlp_net *n, tk_rng *r)
{
	tlp_w *w = &n->w;
	int in = n->E;
#define INIT(wt, bs, out, fin) do { \
		float bound = 1.0f / sqrtf((float)(fin)); \
		nn_init_uniform(wt, (size_t)(out) * (fin), bound, r); \
		nn_init_uniform(bs, (size_t)(out), bound, r); \
	} while (0)
	for (int i = 0; i < 4; i++) {
		INIT(w->enc_w[i], w->enc_b[i], enc_dim[i], in);
		in = enc_dim[i];
	}
	INIT(w->qkv_w, w->qkv_b, 3 * TLP_H, TLP_H);
	INIT(w->proj_w, w->proj_b, TLP_H, TLP_H);
	for (int i = 0; i < TLP_NRES; i++)
		INIT(w->res_w[i], w->res_b[i], TLP_H, TLP_H);
	for (int k = 0; k < n->K + n->shared; k++) {
		in = TLP_H;
		for (int i = 0; i < 4; i++) {
			INIT(w->dec_w[k][i], w->dec_b[k][i], dec_dim[i], in);
			in = dec_dim[i];
		}
		if (n->shared && k < n->K) {
			nn_zero(w->dec_w[k][3], (size_t)dec_dim[3] * dec_dim[2]);
			nn_zero(w->dec_b[k][3], (size_t)dec_dim[3]);
		}
	}
#undef INIT
}

/* ---- forward and backward ------------------------------------------------ */

/* Leading positions of row x (L positions of E floats) that are not all 0. */
static int seq_len(const float *x /* (L, E) */, int L, int E)
{
	int len = L;
	while (len > 0) {
		const float *p = x + (size_t)(len - 1) * E;
		int zero = 1;
		for (int e = 0; e < E && zero; e++)
			zero = p[e] == 0.0f;
		if (!zero)
			break;
		len--;
	}
	return len;
}

/* dy[i] = 0 where the ReLU output y[i] is 0: the ReLU's backward in place. */
static void relu_mask(float *dy /* (N) */, const float *y /* (N) */, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (y[i] <= 0.0f)
			dy[i] = 0.0f;
}

static void linear_relu(float *y, const float *x, const float *w, const float *b, int T, int in,
                        int out)
{
	nn_linear_forward(y, x, w, b, T, in, out);
	nn_relu_forward(y, y, (size_t)T * out);
}

/* Decoder k on the nt positions h (nt, H) into y[i] (nt, dec_dim[i]). */
static void dec_forward(tlp_net *n, int k, float *y[4], const float *h, int nt)
{
	const float *in_x = h;
	int in = TLP_H;
	for (int i = 0; i < 4; i++) {
		nn_linear_forward(y[i], in_x, n->w.dec_w[k][i], n->w.dec_b[k][i], nt, in, dec_dim[i]);
		if (i < 3)
			nn_relu_forward(y[i], y[i], (size_t)nt * dec_dim[i]);
		in_x = y[i];
		in = dec_dim[i];
	}
}

/* Its backward: from gy[3] (nt, 1), accumulate into n->grad and into gh
 * (nt, H); gy[0..2] are overwritten. */
static void dec_backward(tlp_net *n, int k, float *gy[4], float *const y[4], const float *h,
                         float *gh, int nt)
{
	for (int i = 3; i >= 0; i--) {
		int in = i ? dec_dim[i - 1] : TLP_H;
		const float *x = i ? y[i - 1] : h;
		float *gx = i ? gy[i - 1] : gh;
		if (i)
			nn_zero(gx, (size_t)nt * in);
		nn_linear_backward(gx, n->dw.dec_w[k][i], n->dw.dec_b[k][i], gy[i], x, n->w.dec_w[k][i],
		                   nt, in, dec_dim[i]);
		if (i)
			relu_mask(gx, y[i - 1], (size_t)nt * in);
	}
}

/* Scores of B <= TLP_BMAX sequences x (B, L*E); rows of sequence b use
 * decoder head[b] (NULL: all 0), and sequences of one head must be
 * contiguous (the caller orders a batch by head). */
static void net_forward(tlp_net *n, float *score /* (B) */, const float *x /* (B, L*E) */,
                        const int *head /* (B) or NULL */, int B)
{
	tlp_act *a = &n->a;
	const int E = n->E, L = n->L, H = TLP_H;
	n->off[0] = 0;
	for (int b = 0; b < B; b++) {
		const float *xb = x + (size_t)b * L * E;
		n->len[b] = L > 1 ? seq_len(xb, L, E) : 1;
		if (n->len[b] == 0)
			n->len[b] = 1; /* an all-zero row still gets a score */
		memcpy(a->x + (size_t)n->off[b] * E, xb, sizeof *xb * (size_t)n->len[b] * E);
		n->off[b + 1] = n->off[b] + n->len[b];
		n->attoff[b] = b ? n->attoff[b - 1] + (size_t)TLP_A * n->len[b - 1] * n->len[b - 1] : 0;
	}
	int T = n->T = n->off[B], in = E;
	const float *prev = a->x;
	for (int i = 0; i < 4; i++) {
		linear_relu(a->enc[i], prev, n->w.enc_w[i], n->w.enc_b[i], T, in, enc_dim[i]);
		prev = a->enc[i];
		in = enc_dim[i];
	}
	nn_linear_forward(a->qkv, prev, n->w.qkv_w, n->w.qkv_b, T, H, 3 * H);
	/* A sequence's packed rows are a batch of one of its own length. */
	for (int b = 0; b < B; b++)
		nn_attention_forward(a->ao + (size_t)n->off[b] * H, a->att + n->attoff[b],
		                     a->qkv + (size_t)n->off[b] * 3 * H, &n->len[b], 1, n->len[b], H,
		                     TLP_A);
	nn_linear_forward(a->h[0], a->ao, n->w.proj_w, n->w.proj_b, T, H, H);
	nn_residual_forward(a->h[0], a->h[0], prev, (size_t)T * H);
	for (int i = 0; i < TLP_NRES; i++) {
		linear_relu(a->r[i], a->h[i], n->w.res_w[i], n->w.res_b[i], T, H, H);
		nn_residual_forward(a->h[i + 1], a->r[i], a->h[i], (size_t)T * H);
	}
	/* Decoders, one contiguous run of sequences per head. */
	for (int b0 = 0, b1; b0 < B; b0 = b1) {
		int k = head ? head[b0] : 0;
		for (b1 = b0 + 1; b1 < B && (head ? head[b1] : 0) == k; b1++)
			;
		int t0 = n->off[b0], nt = n->off[b1] - t0;
		float *y[4];
		for (int i = 0; i < 4; i++)
			y[i] = a->dec[i] + (size_t)t0 * dec_dim[i];
		dec_forward(n, k, y, a->h[TLP_NRES] + (size_t)t0 * H, nt);
	}
	if (n->shared)
		dec_forward(n, n->K, a->sdec, a->h[TLP_NRES], T);
	for (int b = 0; b < B; b++) {
		double s = 0;
		for (int t = n->off[b]; t < n->off[b + 1]; t++)
			s += a->dec[3][t] + (n->shared ? a->sdec[3][t] : 0.0f);
		score[b] = (float)s;
	}
}

/* Accumulate into n->grad the gradient of a loss with dscore (B) over the
 * batch of the last net_forward. */
static void net_backward(tlp_net *n, const float *dscore /* (B) */, const int *head, int B)
{
	tlp_act *a = &n->a;
	const int H = TLP_H, T = n->T;
	for (int b = 0; b < B; b++)
		for (int t = n->off[b]; t < n->off[b + 1]; t++)
			a->gdec[3][t] = dscore[b];
	float *gh = a->g0; /* gradient of h[NRES] */
	nn_zero(gh, (size_t)T * H);
	for (int b0 = 0, b1; b0 < B; b0 = b1) {
		int k = head ? head[b0] : 0;
		for (b1 = b0 + 1; b1 < B && (head ? head[b1] : 0) == k; b1++)
			;
		int t0 = n->off[b0], nt = n->off[b1] - t0;
		float *y[4], *gy[4];
		for (int i = 0; i < 4; i++) {
			y[i] = a->dec[i] + (size_t)t0 * dec_dim[i];
			gy[i] = a->gdec[i] + (size_t)t0 * dec_dim[i];
		}
		dec_backward(n, k, gy, y, a->h[TLP_NRES] + (size_t)t0 * H, gh + (size_t)t0 * H, nt);
	}
	if (n->shared) {
		/* Its output's gradient is the heads': a position's score is the sum. */
		float *gy[4] = { a->gsdec[0], a->gsdec[1], a->gsdec[2], a->gdec[3] };
		dec_backward(n, n->K, gy, a->sdec, a->h[TLP_NRES], gh, T);
	}
	/* Residual blocks: h[i+1] = relu(h[i] W^T + b) + h[i]. */
	float *gnext = a->g1;
	for (int i = TLP_NRES - 1; i >= 0; i--) {
		float *gr = a->g2;
		memcpy(gnext, gh, sizeof *gh * (size_t)T * H);   /* the residual path */
		memcpy(gr, gh, sizeof *gh * (size_t)T * H);
		relu_mask(gr, a->r[i], (size_t)T * H);
		nn_linear_backward(gnext, n->dw.res_w[i], n->dw.res_b[i], gr, a->h[i], n->w.res_w[i],
		                   T, H, H);
		float *s = gh;
		gh = gnext;
		gnext = s;
	}
	/* h[0] = proj(attention) + enc[3]: gh flows to both. */
	float *genc3 = a->genc[3], *gao = a->g2; /* gh is g0 or g1 */
	memcpy(genc3, gh, sizeof *gh * (size_t)T * H);
	nn_zero(gao, (size_t)T * H);
	nn_linear_backward(gao, n->dw.proj_w, n->dw.proj_b, gh, a->ao, n->w.proj_w, T, H, H);
	nn_zero(a->gqkv, (size_t)T * 3 * H);
	for (int b = 0; b < B; b++)
		nn_attention_backward(a->gqkv + (size_t)n->off[b] * 3 * H, a->scratch,
		                      gao + (size_t)n->off[b] * H, a->qkv + (size_t)n->off[b] * 3 * H,
		                      a->att + n->attoff[b], &n->len[b], 1, n->len[b], H, TLP_A);
	nn_linear_backward(genc3, n->dw.qkv_w, n->dw.qkv_b, a->gqkv, a->enc[3], n->w.qkv_w, T, H,
	                   3 * H);
	for (int i = 3; i >= 0; i--) {
		relu_mask(a->genc[i], a->enc[i], (size_t)T * enc_dim[i]);
		int in = i ? enc_dim[i - 1] : n->E;
		float *gx = i ? a->genc[i - 1] : NULL;
		if (gx)
			nn_zero(gx, (size_t)T * in);
		nn_linear_backward(gx, n->dw.enc_w[i], n->dw.enc_b[i], a->genc[i],
		                   i ? a->enc[i - 1] : a->x, n->w.enc_w[i], T, in, enc_dim[i]);
	}
}

/* One thread's share of a batch: a forward (dscore NULL) or a backward. */
typedef struct tlp_half {
	tlp_net *n;
	float *score;
	const float *x, *dscore;
	const int *head;
	int B;
} tlp_half;

static void *half_run(void *arg)
{
	tlp_half *h = arg;
	if (h->B <= 0)
		return NULL;
	if (h->dscore)
		net_backward(h->n, h->dscore, h->head, h->B);
	else
		net_forward(h->n, h->score, h->x, h->head, h->B);
	return NULL;
}

/* h[0] on this thread, h[1] on another (after h[0] here if none starts). */
static void halves_run(tlp_half h[2])
{
	pthread_t t;
	int started = h[1].B > 0 && pthread_create(&t, NULL, half_run, &h[1]) == 0;
	half_run(&h[0]);
	if (started)
		pthread_join(t, NULL);
	else
		half_run(&h[1]);
}

/* ---- the model row ------------------------------------------------------------ */

static int shape(const cm_params *p, int d, int *E, int *L)
{
	*E = p->seq_e > 0 ? p->seq_e : d;
	if (d <= 0 || d % *E)
		return tk_seterr(TK_EINVAL, "tlp: rows of %d features are not positions of %d", d, *E);
	*L = d / *E;
	return TK_OK;
}

/* Predict n rows with head 0 into out, TLP_BMAX at a time. */
static int tpredict(void *s, const float *x, int nrow, int d, const float *margin, float *out)
{
	tlp_net *n = s;
	if (d != n->E * n->L)
		return tk_seterr(TK_EINVAL, "tlp: the model takes %d features per row, got %d",
		                 n->E * n->L, d);
	if (margin)
		return tk_seterr(TK_EINVAL, "tlp takes no base model");
	int t = nrow > TLP_BMAX ? split_begin(n) : 0;
	for (int i = 0; i < nrow;) {
		/* a batch, and on two threads a second one on n's peer */
		int B = nrow - i < TLP_BMAX ? nrow - i : TLP_BMAX;
		int B2 = !n->two ? 0 : nrow - i - B < TLP_BMAX ? nrow - i - B : TLP_BMAX;
		tlp_half h[2] = { { n, out + i, x + (size_t)i * d, NULL, NULL, B },
			          { n->peer, out + i + B, x + (size_t)(i + B) * d, NULL, NULL, B2 } };
		halves_run(h);
		i += B + B2;
	}
	split_end(n, t);
	return TK_OK;
}

/* Ranking groups of one epoch: the rows of each data group (task and
 * head) shuffled and cut into chunks of at most TLP_CHUNK rows; chunk c
 * is order[start[c] .. start[c] + size[c]). A chunk of an auxiliary head
 * (head > 0) is kept with probability aux (1: all). Returns the number of
 * chunks. */
static int epoch_chunks(const cm_data *tr, double aux, tk_rng *r, int *order, int *start,
                        int *size)
{
	int nc = 0, first = 0, ng = tr->ngroup ? tr->ngroup : 1;
	for (int g = 0; g < ng; g++) {
		int gsize = tr->ngroup ? (int)tr->group[g] : tr->n;
		int sample = aux < 1 && gsize > 0 && tr->head && tr->head[first] > 0;
		for (int i = 0; i < gsize; i++)
			order[first + i] = first + i;
		for (int i = gsize - 1; i > 0; i--) {
			int j = (int)tk_rng_below(r, (uint32_t)i + 1), t = order[first + i];
			order[first + i] = order[first + j];
			order[first + j] = t;
		}
		for (int i = 0; i < gsize; i += TLP_CHUNK) {
			if (sample && tk_rng_below(r, 1000000) >= aux * 1e6) /* in millionths */
				continue;
			start[nc] = first + i;
			size[nc++] = gsize - i < TLP_CHUNK ? gsize - i : TLP_CHUNK;
		}
		first += gsize;
	}
	return nc;
}

typedef struct fitwork {
	int *order, *chunk, *perm, *csize, *bhead, *work;
	float *xb, *yb, *score, *dscore;
	unsigned *bgroup;
	float *m, *v;
	float *xi, *xiwork;      /* (P) each: a ticket's saliency */
	unsigned char *mask;     /* (P) a ticket's parameters to train */
} fitwork;

static void fitwork_free(fitwork *w)
{
	free(w->order), free(w->chunk), free(w->perm), free(w->csize), free(w->bhead);
	free(w->work), free(w->xb), free(w->yb), free(w->score), free(w->dscore);
	free(w->bgroup), free(w->m), free(w->v);
	free(w->xi), free(w->xiwork), free(w->mask);
}

/* Moses' lottery ticket (train with a ticket): before each epoch the
 * gradient of the loss on up to TLP_TICKET_BATCHES of that epoch's
 * batches gives each parameter its saliency |w * dL/dw|; the top share
 * ratio (or those over threshold x the largest) are trained that epoch,
 * the others decay toward zero by lr x decay x w a step. */
#define TLP_TICKET_BATCHES 8
typedef struct tlp_ticket {
	double ratio, threshold;
	float decay;
	double trained;          /* out: mean share of the parameters trained */
} tlp_ticket;

/* Batches of one epoch: whole chunks from w->perm[c0..), as many as fit
 * in TLP_BMAX rows; returns the end c1 and fills the batch (rows, labels,
 * heads, ranking groups), ordered by head within the batch. */
static int next_batch(const cm_data *tr, fitwork *w, int c0, int nc, int *B, int *ng)
{
	size_t d = (size_t)tr->d;
	int c1, b = 0;
	*B = 0;
	for (c1 = c0; c1 < nc && *B + w->csize[w->perm[c1]] <= TLP_BMAX; c1++)
		*B += w->csize[w->perm[c1]];
	/* insertion sort of the batch's chunks by head (few chunks) */
	for (int i = c0 + 1; i < c1; i++) {
		int c = w->perm[i], hk = tr->head ? tr->head[w->order[w->chunk[c]]] : 0, j = i;
		while (j > c0 && (tr->head ? tr->head[w->order[w->chunk[w->perm[j - 1]]]] : 0) > hk) {
			w->perm[j] = w->perm[j - 1];
			j--;
		}
		w->perm[j] = c;
	}
	*ng = 0;
	for (int i = c0; i < c1; i++) {
		int c = w->perm[i];
		for (int k = 0; k < w->csize[c]; k++, b++) {
			int row = w->order[w->chunk[c] + k];
			memcpy(w->xb + (size_t)b * d, tr->x + (size_t)row * d, sizeof *w->xb * d);
			w->yb[b] = tr->y[row];
			w->bhead[b] = tr->head ? tr->head[row] : 0;
		}
		w->bgroup[(*ng)++] = (unsigned)w->csize[c];
	}
	return c1;
}

/* Add to n->grad the gradient of the batch's loss; on two threads (n->two)
 * the first half of the rows on n, the second on its peer, the loss on
 * the whole batch between. */
static void batch_grad(tlp_net *n, fitwork *w, int B, int ng, int rank)
{
	int B0 = n->two && B >= 16 ? B / 2 : B;
	tlp_half h[2] = { { n, w->score, w->xb, NULL, w->bhead, B0 },
		          { n->peer, w->score + B0, w->xb + (size_t)B0 * n->E * n->L, NULL,
		            w->bhead + B0, B - B0 } };
	halves_run(h);
	memset(w->dscore, 0, sizeof *w->dscore * (size_t)B);
	if (rank)
		nn_lambdarank_loss(w->dscore, w->work, w->score, w->yb, w->bgroup, ng);
	else
		nn_mse_loss(w->dscore, w->score, w->yb, NULL, B);
	h[0].dscore = w->dscore;
	h[1].dscore = w->dscore + B0;
	if (B0 < B)
		nn_zero(n->peer->grad, n->nparam);
	halves_run(h);
	if (B0 < B)
		nn_residual_forward(n->grad, n->grad, n->peer->grad, n->nparam);
}

/* Choose the epoch's ticket into w->mask from the saliency on its first
 * batches; returns the share of the parameters it trains. */
static double draw_ticket(tlp_net *n, const cm_data *tr, fitwork *w, int nc, int rank,
                          const tlp_ticket *tk)
{
	int B, ng;
	nn_zero(n->grad, n->nparam);
	for (int c0 = 0, k = 0; c0 < nc && k < TLP_TICKET_BATCHES; k++) {
		c0 = next_batch(tr, w, c0, nc, &B, &ng);
		batch_grad(n, w, B, ng, rank);
	}
	nn_saliency(w->xi, n->param, n->grad, n->nparam);
	size_t kept = nn_ticket_mask(w->mask, w->xi, n->nparam, tk->ratio, tk->threshold, w->xiwork);
	return (double)kept / (double)n->nparam;
}

/* Train n on tr for epochs epochs at peak rate lr; with a ticket (tk not
 * NULL), only its parameters, re-drawn each epoch. *nstep (may be NULL)
 * receives the optimiser steps taken; p (may be NULL) is told of each
 * epoch (cm_params.progress). With validation rows va (may be NULL; their
 * groups the ranking groups), the network is scored on them after each
 * epoch (cm_ndcg) and ends as it was after the best epoch, training
 * stopping after p->early_stop epochs without improvement (0: never);
 * n->epochs receives the epochs kept. */
static int train(tlp_net *n, const cm_data *tr, const cm_data *va, int epochs, int rank, float lr,
                 tlp_ticket *tk, tk_rng *r, int *nstep, const cm_params *p)
{
	fitwork w = { 0 };
	size_t N = (size_t)tr->n, d = (size_t)tr->d;
	int rc = TK_OK, best = -1, blas = 0;
	double best_score = -HUGE_VAL;
	float *vpred = NULL, *bestp = NULL;
	void *vwork = NULL;
	if (va && va->n > 0 &&
	    (!(vpred = malloc(sizeof *vpred * (size_t)va->n)) || !(vwork = malloc(cm_ndcg_work(va->n))) ||
	     !(bestp = malloc(sizeof *bestp * n->nparam)))) {
		rc = tk_seterr(TK_ENOMEM, "out of memory");
		goto done;
	}
	w.order = malloc(sizeof *w.order * N);
	w.chunk = malloc(sizeof *w.chunk * (N + 1));
	w.perm = malloc(sizeof *w.perm * (N + 1));
	w.csize = malloc(sizeof *w.csize * (N + 1));
	w.bhead = malloc(sizeof *w.bhead * TLP_BMAX);
	w.work = malloc(sizeof *w.work * TLP_BMAX);
	w.xb = malloc(sizeof *w.xb * TLP_BMAX * d);
	w.yb = malloc(sizeof *w.yb * TLP_BMAX);
	w.score = malloc(sizeof *w.score * TLP_BMAX);
	w.dscore = malloc(sizeof *w.dscore * TLP_BMAX);
	w.bgroup = malloc(sizeof *w.bgroup * TLP_BMAX);
	w.m = calloc(n->nparam, sizeof *w.m);
	w.v = calloc(n->nparam, sizeof *w.v);
	if (tk) {
		w.xi = malloc(sizeof *w.xi * n->nparam);
		w.xiwork = malloc(sizeof *w.xiwork * n->nparam);
		w.mask = malloc(n->nparam);
	}
	if (!w.order || !w.chunk || !w.perm || !w.csize || !w.bhead || !w.work || !w.xb || !w.yb ||
	    !w.score || !w.dscore || !w.bgroup || !w.m || !w.v ||
	    (tk && (!w.xi || !w.xiwork || !w.mask))) {
		rc = tk_seterr(TK_ENOMEM, "out of memory");
		goto done;
	}
	nn_adam opt;
	nn_adam_default(&opt);
	opt.lr = lr;
	opt.weight_decay = 1e-4f;
	blas = split_begin(n);
	/* Steps per epoch: about N / BMAX of the rows an epoch draws; the
	 * schedule needs a total. */
	double aux = p && tr->head && p->aux_fraction > 0 && p->aux_fraction < 1 ? p->aux_fraction : 1;
	size_t Nep = N;
	if (aux < 1) {
		size_t na = 0;
		for (size_t i = 0; i < N; i++)
			na += tr->head[i] > 0;
		Nep = N - na + (size_t)((double)na * aux);
	}
	int steps_epoch = (int)((Nep + TLP_BMAX - 1) / TLP_BMAX) + 1, total = epochs * steps_epoch;
	int step = 0;
	double trained = 0;
	for (int ep = 0; ep < epochs; ep++) {
		int nc = epoch_chunks(tr, aux, r, w.order, w.chunk, w.csize);
		for (int c = 0; c < nc; c++)
			w.perm[c] = c;
		for (int i = nc - 1; i > 0; i--) {
			int j = (int)tk_rng_below(r, (uint32_t)i + 1), t = w.perm[i];
			w.perm[i] = w.perm[j];
			w.perm[j] = t;
		}
		double share = tk ? draw_ticket(n, tr, &w, nc, rank, tk) : 1;
		for (int c0 = 0, B, ng; c0 < nc;) {
			c0 = next_batch(tr, &w, c0, nc, &B, &ng);
			nn_zero(n->grad, n->nparam);
			batch_grad(n, &w, B, ng, rank);
			for (size_t i = 0; tk && i < n->nparam; i++)
				if (!w.mask[i])
					n->grad[i] = 0; /* clip what is applied */
			nn_clip_grad_norm(n->grad, n->nparam, 1.0f);
			opt.lr = nn_lr_schedule(lr, step++, steps_epoch, total, 0.01f);
			nn_adam_step_masked(n->param, w.m, w.v, n->grad, tk ? w.mask : NULL, n->nparam, &opt,
			                    tk ? tk->decay : 0);
			trained += share;
		}
		if (p && p->progress)
			p->progress(p->progress_ctx, ep + 1, epochs);
		n->epochs = ep + 1;
		if (!vpred)
			continue;
		if ((rc = tpredict(n, va->x, va->n, va->d, NULL, vpred)))
			goto done;
		double sc = cm_ndcg(va->n, va->y, vpred, va->ngroup, va->group, vwork);
		if (best < 0 || sc > best_score + 1e-12) {
			best = ep;
			best_score = sc;
			memcpy(bestp, n->param, sizeof *bestp * n->nparam);
		} else if (p && p->early_stop > 0 && ep - best >= p->early_stop) {
			break;
		}
	}
	if (best >= 0) {
		memcpy(n->param, bestp, sizeof *bestp * n->nparam);
		n->epochs = best + 1;
	}
	if (tk)
		tk->trained = step ? trained / step : 0;
	if (nstep)
		*nstep = step;
done:
	split_end(n, blas);
	fitwork_free(&w);
	free(vpred);
	free(vwork);
	free(bestp);
	return rc;
}

static void tfree(void *s)
{
	net_free(s);
}

static int tfit(const cm_params *p, const cm_data *tr, const cm_data *va, void **state)
{
	tlp_net *n;
	int E = 0, L = 0, K = 1, rc;
	tk_rng own, *r = p->rng;
	*state = NULL;
	if (tr->margin)
		return tk_seterr(TK_EINVAL, "tlp takes no base model");
	if (tr->n < 2)
		return tk_seterr(TK_EINVAL, "tlp: %d rows to train on, need at least 2", tr->n);
	if ((rc = shape(p, tr->d, &E, &L)))
		return rc;
	for (int i = 0; tr->head && i < tr->n; i++) {
		if (tr->head[i] < 0 || tr->head[i] >= TLP_MAXHEAD)
			return tk_seterr(TK_EINVAL, "tlp: head %d of row %d is outside 0..%d",
			                 tr->head[i], i, TLP_MAXHEAD - 1);
		K = tr->head[i] + 1 > K ? tr->head[i] + 1 : K;
	}
	for (int i = 0; i < tr->n; i++)
		if (!isfinite(tr->y[i]))
			return tk_seterr(TK_EINVAL, "tlp: label %d is not a number", i);
	if (!r) {
		tk_rng_seed(&own, p->seed, 0x746c70);
		r = &own;
	}
	if ((rc = net_new(E, L, K, TLP_VERSION, &n)))
		return rc;
	n->rank = p->rank;
	net_init(n, r);
	int epochs = p->rounds;
	if (epochs <= 0) {
		int steps = (tr->n + TLP_BMAX - 1) / TLP_BMAX;
		epochs = (TLP_MINSTEPS + steps - 1) / steps;
		epochs = epochs > TLP_EPOCHS ? epochs : TLP_EPOCHS;
	}
	if (va && va->n > 0 && va->d != tr->d) {
		net_free(n);
		return tk_seterr(TK_EINVAL, "tlp: %d features per validation row, %d per training row",
		                 va->d, tr->d);
	}
	if ((rc = train(n, tr, va && va->n > 0 ? va : NULL, epochs, p->rank, TLP_LR, NULL, r, NULL,
	                p))) {
		net_free(n);
		return rc;
	}
	*state = n;
	return TK_OK;
}

static int tupdate(void *s, const cm_params *p, const cm_data *all)
{
	tlp_net *n = s;
	tk_rng own, *r = p->rng;
	if (all->margin || all->head)
		return tk_seterr(TK_EINVAL, "tlp: an update takes rows of the target alone");
	if (all->d != n->E * n->L)
		return tk_seterr(TK_EINVAL, "tlp: the model takes %d features per row, got %d",
		                 n->E * n->L, all->d);
	for (int i = 0; i < all->n; i++)
		if (!isfinite(all->y[i]))
			return tk_seterr(TK_EINVAL, "tlp: label %d is not a number", i);
	if (!r) {
		tk_rng_seed(&own, p->seed, 0x746c7075);
		r = &own;
	}
	int steps = (all->n + TLP_BMAX - 1) / TLP_BMAX;
	return train(n, all, NULL, (TLP_UPDATESTEPS + steps - 1) / steps, n->rank, TLP_LR, NULL, r, NULL,
	             NULL);
}

/* Adapt to a target's rows: fine-tune every parameter, or Moses' ticket.
 * By default TLP_EPOCHS epochs (Moses' 30) at TLP_ADAPT_LR. */
static int tadapt(void *s, const cm_params *p, const cm_adapt_opts *a, const cm_data *tr,
                  cm_adapt_info *info)
{
	tlp_net *n = s;
	tk_rng own, *r = p->rng;
	if (tr->d != n->E * n->L)
		return tk_seterr(TK_EINVAL, "tlp: the model takes %d features per row, got %d",
		                 n->E * n->L, tr->d);
	if (tr->n < 2)
		return tk_seterr(TK_EINVAL, "tlp: %d rows to adapt on, need at least 2", tr->n);
	for (int i = 0; i < tr->n; i++)
		if (!isfinite(tr->y[i]))
			return tk_seterr(TK_EINVAL, "tlp: label %d is not a number", i);
	if (!r) {
		tk_rng_seed(&own, p->seed, 0x746c7061);
		r = &own;
	}
	int epochs = a->epochs > 0 ? a->epochs : TLP_EPOCHS;
	tlp_ticket tk = { a->ratio, a->threshold, (float)a->decay, 1 };
	int ticket = a->method == CM_ADAPT_TICKET, rc;
	if (a->method != CM_ADAPT_FINETUNE && !ticket)
		return tk_seterr(TK_EINVAL, "tlp adapts by fine-tuning or a lottery ticket");
	rc = train(n, tr, NULL, epochs, n->rank, a->lr > 0 ? (float)a->lr : TLP_ADAPT_LR,
	           ticket ? &tk : NULL, r, &info->steps, p);
	info->epochs = epochs;
	info->trained = tk.trained;
	return rc;
}

static uint64_t shape_tag(const tlp_net *n)
{
	uint32_t v[5] = { n->version, (uint32_t)n->E, (uint32_t)n->L, (uint32_t)n->K, TLP_H };
	return tk_hash64(v, sizeof v, 0);
}

static int tsave(void *s, void **buf, size_t *len)
{
	tlp_net *n = s;
	void *ck;
	size_t cklen;
	int rc = nn_ckpt_save(n->param, n->nparam, shape_tag(n), &ck, &cklen);
	if (rc)
		return rc;
	unsigned char *b = malloc(TLP_HEADER + cklen);
	if (!b) {
		free(ck);
		return tk_seterr(TK_ENOMEM, "out of memory");
	}
	memset(b, 0, TLP_HEADER);
	tk_put_le32(b, TLP_MAGIC);
	tk_put_le32(b + 4, n->version);
	tk_put_le32(b + 8, (uint32_t)n->E);
	tk_put_le32(b + 12, (uint32_t)n->L);
	tk_put_le32(b + 16, (uint32_t)n->K);
	tk_put_le32(b + 20, (uint32_t)n->rank);
	memcpy(b + TLP_HEADER, ck, cklen);
	free(ck);
	*buf = b;
	*len = TLP_HEADER + cklen;
	return TK_OK;
}

static int tload(const void *buf, size_t len, void **state)
{
	const unsigned char *b = buf;
	tlp_net *n;
	int rc;
	*state = NULL;
	if (len < TLP_HEADER || tk_get_le32(b) != TLP_MAGIC)
		return tk_seterr(TK_ECORRUPT, "not a tlp model");
	uint32_t version = tk_get_le32(b + 4);
	if (version < 1 || version > TLP_VERSION)
		return tk_seterr(TK_ECORRUPT, "tlp model of version %u, this tunekit reads 1 to %u",
		                 version, TLP_VERSION);
	uint32_t E = tk_get_le32(b + 8), L = tk_get_le32(b + 12), K = tk_get_le32(b + 16);
	if (E < 1 || E > 4096 || L < 1 || L > 256 || K < 1 || K > TLP_MAXHEAD)
		return tk_seterr(TK_ECORRUPT, "tlp model with a bad shape (%u x %u, %u heads)", L, E, K);
	if ((rc = net_new((int)E, (int)L, (int)K, version, &n)))
		return rc;
	n->rank = tk_get_le32(b + 20) != 0;
	if (nn_ckpt_load(n->param, n->nparam, shape_tag(n), b + TLP_HEADER, len - TLP_HEADER)) {
		net_free(n);
		return tk_seterr(TK_ECORRUPT, "tlp model parameters do not match their header");
	}
	*state = n;
	return TK_OK;
}

static int tdescribe(void *s, mf_meta *m)
{
	tlp_net *n = s;
	char v[64];
	int rc = mf_set(m, "objective", n->rank ? "lambdarank" : "mse");
	snprintf(v, sizeof v, "%dx%d", n->L, n->E);
	if (!rc)
		rc = mf_set(m, "sequence", v);
	snprintf(v, sizeof v, "%d", n->K);
	if (!rc)
		rc = mf_set(m, "heads", v);
	snprintf(v, sizeof v, "%d", n->epochs);
	return rc || n->epochs <= 0 ? rc : mf_set(m, "rounds", v);
}

const cm_kind cm_tlp = {
	.name = "tlp",
	.summary = "TLP: attention over schedule-primitive sequences, lambdarank",
	.features = 1u << FEAT_KNOB | 1u << FEAT_ITERVAR | 1u << FEAT_CURVE | 1u << FEAT_TLP,
	.feature = FEAT_TLP,
	.flags = CM_RANK | CM_EPOCHS | CM_COSTLY,
	.fit = tfit,
	.update = tupdate,
	.predict = tpredict,
	.adapts = CM_ADAPT_FINETUNE | CM_ADAPT_TICKET,
	.adapt = tadapt,
	.save = tsave,
	.load = tload,
	.describe = tdescribe,
	.free = tfree,
};

const cm_kind cm_mtl_tlp = {
	.name = "mtl-tlp",
	.summary = "MTL-TLP: TLP's backbone and a decoder shared, a residual head per hardware",
	.features = 1u << FEAT_KNOB | 1u << FEAT_ITERVAR | 1u << FEAT_CURVE | 1u << FEAT_TLP,
	.feature = FEAT_TLP,
	.flags = CM_RANK | CM_MULTIHEAD | CM_EPOCHS | CM_COSTLY,
	.fit = tfit,
	.update = tupdate,
	.predict = tpredict,
	.adapts = CM_ADAPT_FINETUNE | CM_ADAPT_TICKET,
	.adapt = tadapt,
	.save = tsave,
	.load = tload,
	.describe = tdescribe,
	.free = tfree,
};
