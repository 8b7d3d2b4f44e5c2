/*
 * Unit tests of lib/nn: every backward pass against central finite
 * differences of its forward pass (including masked positions), forward
 * passes against naive double-precision references, the losses against
 * hand-worked values, the optimisers' steps, checkpoints (round trip and
 * refusal of corrupt, truncated, other-version and other-model files), and
 * two small end-to-end fits (an MLP regression with Adam, a ranking with
 * LambdaRank).
 *
 * Shape key as in nn.h: B batch, L sequence length, E input width, F output
 * width, H heads, N rows or nodes, V vocabulary.
 */
#include "nn/nn.h"
#include "unit.h"

static tk_rng rng;

static void randn(float *p, size_t n, float s)
{
	for (size_t i = 0; i < n; i++)
		p[i] = s * (float)tk_rng_normal(&rng);
}

/* sum y * r in double: the scalar whose gradient with respect to y is r. */
static double dot(const float *y, const float *r, size_t n)
{
	double s = 0;
	for (size_t i = 0; i < n; i++)
		s += (double)y[i] * r[i];
	return s;
}

typedef double (*loss_fn)(void);

/* The worst difference between grad[0..n) and central differences of f as
 * each x[i] moves by +-h, relative to the largest gradient element (at
 * least 1e-3): a per-tensor relative error. */
static double fd_err(loss_fn f, float *x, const float *grad, size_t n, float h)
{
	double worst = 0, scale = 1e-3;
	for (size_t i = 0; i < n; i++) {
		float save = x[i];
		x[i] = save + h;
		double lp = f();
		x[i] = save - h;
		double lm = f();
		x[i] = save;
		double num = (lp - lm) / (2.0 * h);
		double d = fabs(num - grad[i]);
		worst = d > worst ? d : worst;
		scale = fabs(num) > scale ? fabs(num) : scale;
		scale = fabs(grad[i]) > scale ? fabs(grad[i]) : scale;
	}
	return worst / scale;
}

#define CHECK_GRAD(f, x, grad, n, h, tol) do { \
	double e_ = fd_err(f, x, grad, n, h); \
	if (!(e_ <= (tol))) { \
		unit_failures++; \
		fprintf(stderr, "%s:%d: %s: gradient of %s: relative error %.3g > %g\n", __FILE__, \
		        __LINE__, unit_current, #x, e_, (double)(tol)); \
	} \
} while (0)

static int all_zero(const float *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != 0)
			return 0;
	return 1;
}

/* ---- linear -------------------------------------------------------------- */

enum { LB = 3, LE = 4, LF = 5 };
static float lin_x[LB * LE], lin_w[LF * LE], lin_b[LF], lin_y[LB * LF], lin_r[LB * LF];

static double lin_loss(void)
{
	nn_linear_forward(lin_y, lin_x, lin_w, lin_b, LB, LE, LF);
	return dot(lin_y, lin_r, LB * LF);
}

TEST(test_linear)
{
	float dx[LB * LE] = { 0 }, dw[LF * LE] = { 0 }, db[LF] = { 0 };
	tk_rng_seed(&rng, 1, 1);
	randn(lin_x, LB * LE, 1), randn(lin_w, LF * LE, 1), randn(lin_b, LF, 1);
	randn(lin_r, LB * LF, 1);
	lin_loss();
	/* the forward pass against the definition */
	for (int i = 0; i < LB; i++)
		for (int f = 0; f < LF; f++) {
			double s = lin_b[f];
			for (int e = 0; e < LE; e++)
				s += (double)lin_x[i * LE + e] * lin_w[f * LE + e];
			CHECK_NEAR(lin_y[i * LF + f], s, 1e-5);
		}
	nn_linear_backward(dx, dw, db, lin_r, lin_x, lin_w, LB, LE, LF);
	CHECK_GRAD(lin_loss, lin_x, dx, LB * LE, 1e-2f, 5e-4);
	CHECK_GRAD(lin_loss, lin_w, dw, LF * LE, 1e-2f, 5e-4);
	CHECK_GRAD(lin_loss, lin_b, db, LF, 1e-2f, 5e-4);
	/* gradients accumulate: a second pass doubles them */
	float dw1 = dw[7], dx1 = dx[5], db1 = db[2];
	nn_linear_backward(dx, dw, db, lin_r, lin_x, lin_w, LB, LE, LF);
	CHECK_NEAR(dw[7], 2 * dw1, 1e-5);
	CHECK_NEAR(dx[5], 2 * dx1, 1e-5);
	CHECK_NEAR(db[2], 2 * db1, 1e-5);
	/* without a bias and without an input gradient */
	float dw2[LF * LE] = { 0 };
	nn_linear_forward(lin_y, lin_x, lin_w, NULL, LB, LE, LF);
	CHECK_NEAR(lin_y[0], dot(lin_x, lin_w, LE), 1e-5);
	nn_linear_backward(NULL, dw2, NULL, lin_r, lin_x, lin_w, LB, LE, LF);
	CHECK_NEAR(dw2[7], dw1, 1e-5);
}

/* The checker itself fails on a gradient that is slightly wrong. */
TEST(test_fd_catches_wrong_gradient)
{
	float dx[LB * LE] = { 0 }, dw[LF * LE] = { 0 }, db[LF] = { 0 };
	tk_rng_seed(&rng, 2, 1);
	randn(lin_x, LB * LE, 1), randn(lin_w, LF * LE, 1), randn(lin_b, LF, 1);
	randn(lin_r, LB * LF, 1);
	lin_loss();
	nn_linear_backward(dx, dw, db, lin_r, lin_x, lin_w, LB, LE, LF);
	CHECK(fd_err(lin_loss, lin_w, dw, LF * LE, 1e-2f) <= 1e-3);
	dw[3] *= 1.02f;
	CHECK(fd_err(lin_loss, lin_w, dw, LF * LE, 1e-2f) > 1e-3);
}

/* ---- ReLU, residual -------------------------------------------------------- */

enum { RN = 12 };
static float relu_x[RN], relu_y[RN], relu_r[RN];

static double relu_loss(void)
{
	nn_relu_forward(relu_y, relu_x, RN);
	return dot(relu_y, relu_r, RN);
}

TEST(test_relu)
{
	float dx[RN] = { 0 };
	tk_rng_seed(&rng, 3, 1);
	randn(relu_x, RN, 1), randn(relu_r, RN, 1);
	/* keep inputs clear of the kink by more than the step */
	for (int i = 0; i < RN; i++)
		relu_x[i] += relu_x[i] >= 0 ? 0.1f : -0.1f;
	relu_loss();
	nn_relu_backward(dx, relu_r, relu_y, RN);
	CHECK_GRAD(relu_loss, relu_x, dx, RN, 1e-2f, 5e-4);
	for (int i = 0; i < RN; i++)
		CHECK(relu_x[i] < 0 ? dx[i] == 0 : dx[i] == relu_r[i]);
}

static float res_a[RN], res_c[RN], res_y[RN], res_r[RN];

static double res_loss(void)
{
	nn_residual_forward(res_y, res_a, res_c, RN);
	return dot(res_y, res_r, RN);
}

TEST(test_residual)
{
	float da[RN] = { 0 }, dc[RN] = { 0 };
	tk_rng_seed(&rng, 4, 1);
	randn(res_a, RN, 1), randn(res_c, RN, 1), randn(res_r, RN, 1);
	res_loss();
	nn_residual_backward(da, dc, res_r, RN);
	CHECK_GRAD(res_loss, res_a, da, RN, 1e-2f, 5e-4);
	CHECK_GRAD(res_loss, res_c, dc, RN, 1e-2f, 5e-4);
}

/* ---- layer norm -------------------------------------------------------------- */

enum { NR = 4, NE = 6 };
static float ln_x[NR * NE], ln_g[NE], ln_b[NE], ln_y[NR * NE], ln_r[NR * NE], ln_mean[NR],
	ln_rstd[NR];

static double ln_loss(void)
{
	nn_layernorm_forward(ln_y, ln_mean, ln_rstd, ln_x, ln_g, ln_b, NR, NE);
	return dot(ln_y, ln_r, NR * NE);
}

TEST(test_layernorm)
{
	float dx[NR * NE] = { 0 }, dg[NE] = { 0 }, db[NE] = { 0 };
	tk_rng_seed(&rng, 5, 1);
	randn(ln_x, NR * NE, 2), randn(ln_g, NE, 1), randn(ln_b, NE, 1), randn(ln_r, NR * NE, 1);
	ln_loss();
	/* with g = 1 and b = 0 each row would have mean 0 and variance ~1 */
	double m = 0;
	for (int e = 0; e < NE; e++)
		m += (ln_y[e] - ln_b[e]) / ln_g[e];
	CHECK_NEAR(m / NE, 0, 1e-4);
	nn_layernorm_backward(dx, dg, db, ln_r, ln_x, ln_mean, ln_rstd, ln_g, NR, NE);
	CHECK_GRAD(ln_loss, ln_x, dx, NR * NE, 1e-2f, 5e-4);
	CHECK_GRAD(ln_loss, ln_g, dg, NE, 1e-2f, 5e-4);
	CHECK_GRAD(ln_loss, ln_b, db, NE, 1e-2f, 5e-4);
}

/* ---- pooling ------------------------------------------------------------------ */

enum { PB = 3, PL = 5, PE = 3 };
static const int pool_len[PB] = { 3, 0, 5 };
static float pool_x[PB * PL * PE], pool_y[PB * PE], pool_r[PB * PE];
static int pool_arg[PB * PE], pool_kind;

static double pool_loss(void)
{
	nn_pool_forward(pool_y, pool_arg, pool_x, pool_len, PB, PL, PE, pool_kind);
	return dot(pool_y, pool_r, PB * PE);
}

TEST(test_pool)
{
	tk_rng_seed(&rng, 6, 1);
	/* distinct values 0.1 apart, shuffled, so a max is clear of the step */
	for (int i = 0; i < PB * PL * PE; i++)
		pool_x[i] = 0.1f * (float)i - 2;
	for (int i = PB * PL * PE - 1; i > 0; i--) {
		int j = (int)tk_rng_below(&rng, (uint32_t)i + 1);
		float t = pool_x[i];
		pool_x[i] = pool_x[j], pool_x[j] = t;
	}
	randn(pool_r, PB * PE, 1);
	for (pool_kind = NN_POOL_SUM; pool_kind <= NN_POOL_MAX; pool_kind++) {
		float dx[PB * PL * PE] = { 0 };
		pool_loss();
		/* the empty sequence pools to 0 */
		CHECK(all_zero(pool_y + PE, PE));
		/* sequence 0 against the definition */
		for (int e = 0; e < PE; e++) {
			double s = 0, mx = -1e9;
			for (int l = 0; l < pool_len[0]; l++) {
				s += pool_x[l * PE + e];
				mx = pool_x[l * PE + e] > mx ? pool_x[l * PE + e] : mx;
			}
			double want = pool_kind == NN_POOL_SUM ? s : pool_kind == NN_POOL_MEAN ? s / 3 : mx;
			CHECK_NEAR(pool_y[e], want, 1e-5);
		}
		nn_pool_backward(dx, pool_r, pool_arg, pool_len, PB, PL, PE, pool_kind);
		CHECK_GRAD(pool_loss, pool_x, dx, PB * PL * PE, 1e-3f, 2e-3);
		/* padding gets nothing: positions 3, 4 of sequence 0, all of 1 */
		CHECK(all_zero(dx + 3 * PE, 2 * PE));
		CHECK(all_zero(dx + PL * PE, PL * PE));
	}
}

/* ---- embedding ------------------------------------------------------------------ */

enum { EN = 6, EV = 4, EE = 3 };
static const int emb_idx[EN] = { 2, -1, 0, 2, 3, -1 };
static float emb_t[EV * EE], emb_y[EN * EE], emb_r[EN * EE];

static double emb_loss(void)
{
	nn_embedding_forward(emb_y, emb_idx, emb_t, EN, EV, EE);
	return dot(emb_y, emb_r, EN * EE);
}

TEST(test_embedding)
{
	float dt[EV * EE] = { 0 };
	tk_rng_seed(&rng, 7, 1);
	randn(emb_t, EV * EE, 1), randn(emb_r, EN * EE, 1);
	emb_loss();
	CHECK(all_zero(emb_y + EE, EE));
	CHECK(emb_y[3 * EE + 1] == emb_t[2 * EE + 1]);
	nn_embedding_backward(dt, emb_r, emb_idx, EN, EV, EE);
	CHECK_GRAD(emb_loss, emb_t, dt, EV * EE, 1e-2f, 5e-4);
	CHECK(all_zero(dt + EE, EE)); /* row 1 is never looked up */
}

/* ---- attention ------------------------------------------------------------------- */

enum { AB = 3, AL = 4, AE = 6, AH = 2 };
static const int att_len[AB] = { 4, 2, 0 };
static float att_qkv[AB * AL * 3 * AE], att_out[AB * AL * AE], att_a[AB * AH * AL * AL],
	att_r[AB * AL * AE];

static double att_loss(void)
{
	nn_attention_forward(att_out, att_a, att_qkv, att_len, AB, AL, AE, AH);
	return dot(att_out, att_r, AB * AL * AE);
}

TEST(test_attention)
{
	float dqkv[AB * AL * 3 * AE] = { 0 }, scratch[AL * AL];
	int D = AE / AH;
	tk_rng_seed(&rng, 8, 1);
	randn(att_qkv, AB * AL * 3 * AE, 1), randn(att_r, AB * AL * AE, 1);
	att_loss();
	/* the forward pass against a naive double-precision reference */
	for (int b = 0; b < AB; b++)
		for (int h = 0; h < AH; h++)
			for (int i = 0; i < AL; i++)
				for (int d = 0; d < D; d++) {
					int n = att_len[b];
					double want = 0;
					if (i < n) {
						double s[AL], mx = -1e30, sum = 0;
						const float *q = att_qkv + (b * AL + i) * 3 * AE + h * D;
						for (int j = 0; j < n; j++) {
							const float *k = att_qkv + (b * AL + j) * 3 * AE + AE + h * D;
							s[j] = 0;
							for (int t = 0; t < D; t++)
								s[j] += (double)q[t] * k[t];
							s[j] /= sqrt(D);
							mx = s[j] > mx ? s[j] : mx;
						}
						for (int j = 0; j < n; j++)
							sum += s[j] = exp(s[j] - mx);
						for (int j = 0; j < n; j++)
							want += s[j] / sum * att_qkv[(b * AL + j) * 3 * AE + 2 * AE + h * D + d];
					}
					CHECK_NEAR(att_out[(b * AL + i) * AE + h * D + d], want, 1e-5);
				}
	/* each valid query's weights sum to 1 over the valid keys; padding
	 * rows and columns are 0 */
	for (int b = 0; b < AB; b++)
		for (int h = 0; h < AH; h++)
			for (int i = 0; i < AL; i++) {
				const float *row = att_a + (((size_t)b * AH + h) * AL + i) * AL;
				double sum = 0;
				for (int j = 0; j < att_len[b]; j++)
					sum += row[j];
				CHECK_NEAR(sum, i < att_len[b] ? 1 : 0, 1e-6);
				CHECK(all_zero(row + att_len[b], AL - att_len[b]));
			}
	nn_attention_backward(dqkv, scratch, att_r, att_qkv, att_a, att_len, AB, AL, AE, AH);
	CHECK_GRAD(att_loss, att_qkv, dqkv, AB * AL * 3 * AE, 1e-2f, 5e-4);
	/* padding: positions 2, 3 of sequence 1 and all of sequence 2 get no
	 * gradient, and their outputs are 0 */
	CHECK(all_zero(dqkv + (AL + 2) * 3 * AE, (2 + AL) * 3 * AE));
	CHECK(all_zero(att_out + (AL + 2) * AE, (2 + AL) * AE));
	/* the valid positions do get one */
	CHECK(!all_zero(dqkv + AL * 3 * AE, 2 * 3 * AE));
}

/* ---- graph convolution ------------------------------------------------------------ */

enum { GN = 5, GE = 3, GF = 4 };
static nn_csr gcn_a;
static float gcn_x[GN * GE], gcn_w[GF * GE], gcn_b[GF], gcn_y[GN * GF], gcn_xw[GN * GF],
	gcn_r[GN * GF];

static double gcn_loss(void)
{
	nn_gcn_forward(gcn_y, gcn_xw, gcn_x, &gcn_a, gcn_w, gcn_b, GN, GE, GF);
	return dot(gcn_y, gcn_r, GN * GF);
}

TEST(test_gcn)
{
	/* a path 0-1-2-3, a duplicate edge and a reversed one, node 4 alone */
	const int src[] = { 0, 1, 2, 1, 2 }, dst[] = { 1, 2, 3, 0, 1 };
	float dx[GN * GE] = { 0 }, dw[GF * GE] = { 0 }, db[GF] = { 0 }, scratch[GN * GF];
	double A[GN][GN] = { { 0 } }, deg[GN] = { 0 };
	CHECK_EQ_INT(nn_gcn_adjacency(&gcn_a, src, dst, 5, GN), TK_OK);
	CHECK_EQ_INT(gcn_a.nnz, 2 * 3 + GN);
	/* the dense D^-1/2 (A + I) D^-1/2 */
	for (int i = 0; i < GN; i++)
		A[i][i] = 1;
	for (int i = 0; i < 3; i++)
		A[i][i + 1] = A[i + 1][i] = 1;
	for (int i = 0; i < GN; i++)
		for (int j = 0; j < GN; j++)
			deg[i] += A[i][j];
	for (int i = 0; i < GN; i++)
		for (int p = gcn_a.rowptr[i]; p < gcn_a.rowptr[i + 1]; p++) {
			int j = gcn_a.col[p];
			CHECK(A[i][j] == 1);
			CHECK_NEAR(gcn_a.val[p], 1 / sqrt(deg[i] * deg[j]), 1e-6);
		}
	tk_rng_seed(&rng, 9, 1);
	randn(gcn_x, GN * GE, 1), randn(gcn_w, GF * GE, 1), randn(gcn_b, GF, 1);
	randn(gcn_r, GN * GF, 1);
	gcn_loss();
	for (int i = 0; i < GN; i++)
		for (int f = 0; f < GF; f++) {
			double want = gcn_b[f];
			for (int j = 0; j < GN; j++)
				for (int e = 0; e < GE; e++)
					want += A[i][j] / sqrt(deg[i] * deg[j]) * gcn_x[j * GE + e] * gcn_w[f * GE + e];
			CHECK_NEAR(gcn_y[i * GF + f], want, 1e-5);
		}
	nn_gcn_backward(dx, dw, db, scratch, gcn_r, gcn_x, &gcn_a, gcn_w, GN, GE, GF);
	CHECK_GRAD(gcn_loss, gcn_x, dx, GN * GE, 1e-2f, 5e-4);
	CHECK_GRAD(gcn_loss, gcn_w, dw, GF * GE, 1e-2f, 5e-4);
	CHECK_GRAD(gcn_loss, gcn_b, db, GF, 1e-2f, 5e-4);
	nn_csr_free(&gcn_a);
	const int bad[] = { 5 };
	CHECK_EQ_INT(nn_gcn_adjacency(&gcn_a, bad, dst, 1, GN), TK_EINVAL);
	CHECK(gcn_a.rowptr == NULL);
}

/* ---- losses ----------------------------------------------------------------------- */

enum { SN = 9 };
static const unsigned sgroup[] = { 4, 5 };
static float s_pred[SN], s_y[SN], s_mask[SN];
static int s_work[SN];

static double mse_loss(void)
{
	return nn_mse_loss(NULL, s_pred, s_y, s_mask, SN);
}

static double rank_loss(void)
{
	return nn_rank_loss(NULL, s_pred, s_y, sgroup, 2);
}

static double lrank_loss(void)
{
	return nn_lambdarank_loss(NULL, s_work, s_pred, s_y, sgroup, 2);
}

TEST(test_losses)
{
	float d[SN] = { 0 };
	tk_rng_seed(&rng, 10, 1);
	/* predictions 0.05 apart at least, so a step does not reorder them */
	for (int i = 0; i < SN; i++)
		s_pred[i] = 0.05f * (float)i;
	for (int i = SN - 1; i > 0; i--) {
		int j = (int)tk_rng_below(&rng, (uint32_t)i + 1);
		float t = s_pred[i];
		s_pred[i] = s_pred[j], s_pred[j] = t;
	}
	for (int i = 0; i < SN; i++) {
		s_y[i] = (float)tk_rng_unif(&rng);
		s_mask[i] = i % 3 != 1;
	}
	s_y[2] = s_y[0]; /* a tie: no pair */
	nn_mse_loss(d, s_pred, s_y, s_mask, SN);
	CHECK_GRAD(mse_loss, s_pred, d, SN, 1e-3f, 2e-3);
	CHECK(d[1] == 0 && d[4] == 0 && d[7] == 0);
	nn_zero(d, SN);
	nn_rank_loss(d, s_pred, s_y, sgroup, 2);
	CHECK_GRAD(rank_loss, s_pred, d, SN, 1e-3f, 2e-3);
	nn_zero(d, SN);
	nn_lambdarank_loss(d, s_work, s_pred, s_y, sgroup, 2);
	CHECK_GRAD(lrank_loss, s_pred, d, SN, 1e-3f, 2e-3);
	CHECK(!all_zero(d, SN));

	/* hand-worked values */
	float p2[2] = { 0, 0 }, y2[2] = { 3, 1 }, m2[2] = { 1, 0 }, d2[2] = { 0 };
	unsigned g2[1] = { 2 };
	int w2[2];
	CHECK_NEAR(nn_mse_loss(d2, p2, y2, m2, 2), 9, 1e-6);
	CHECK_NEAR(d2[0], -6, 1e-6);
	CHECK(d2[1] == 0);
	CHECK_NEAR(nn_rank_loss(NULL, p2, y2, g2, 1), log(2), 1e-6);
	/* y = {1, 0} at equal scores: maxDCG 1, G = {1, 0}, ranks 1 and 2, so
	 * the weight is 1 - 1/log2(3) and the loss weight * -log2(1/2) */
	float yl[2] = { 1, 0 };
	CHECK_NEAR(nn_lambdarank_loss(NULL, w2, p2, yl, g2, 1), 1 - 1 / log2(3), 1e-6);
	/* ranked right and confidently, the loss nearly vanishes */
	float pg[2] = { 10, -10 };
	CHECK(nn_lambdarank_loss(NULL, w2, pg, yl, g2, 1) < 1e-6);
}

/* ---- optimisers ------------------------------------------------------------------- */

TEST(test_optimisers)
{
	float p[3] = { 1, -2, 0.5f }, g[3] = { 0.3f, -4, 0 }, m[3] = { 0 }, v[3] = { 0 };
	nn_adam o;
	nn_adam_default(&o);
	o.lr = 0.1f;
	nn_adam_step(p, m, v, g, 3, &o);
	/* the first Adam step moves by lr against the gradient's sign */
	CHECK_NEAR(p[0], 0.9, 1e-5);
	CHECK_NEAR(p[1], -1.9, 1e-5);
	CHECK_NEAR(p[2], 0.5, 1e-7);
	CHECK_EQ_INT(o.t, 1);
	/* SGD with weight decay shrinks a parameter with no gradient */
	float q[2] = { 1, -1 }, z[2] = { 0, 0 }, vel[2] = { 0, 0 };
	nn_sgd_step(q, NULL, z, 2, 0.1f, 0, 0.5f);
	CHECK_NEAR(q[0], 0.95, 1e-6);
	CHECK_NEAR(q[1], -0.95, 1e-6);
	/* momentum: the second step carries the first */
	float r[1] = { 0 }, gr[1] = { 1 };
	nn_sgd_step(r, vel, gr, 1, 0.1f, 0.9f, 0);
	nn_sgd_step(r, vel, gr, 1, 0.1f, 0.9f, 0);
	CHECK_NEAR(r[0], -0.1 - 0.19, 1e-6);
	/* clipping */
	float c[2] = { 3, 4 };
	CHECK_NEAR(nn_clip_grad_norm(c, 2, 1), 5, 1e-6);
	CHECK_NEAR(c[0], 0.6, 1e-6);
	CHECK_NEAR(nn_clip_grad_norm(c, 2, 10), 1, 1e-6);
	CHECK_NEAR(c[1], 0.8, 1e-6);
	/* the schedule: warm-up, peak, cosine to the floor */
	CHECK_NEAR(nn_lr_schedule(1, 0, 10, 110, 0.1f), 0.1, 1e-6);
	CHECK_NEAR(nn_lr_schedule(1, 9, 10, 110, 0.1f), 1, 1e-6);
	CHECK_NEAR(nn_lr_schedule(1, 10, 10, 110, 0.1f), 1, 1e-6);
	CHECK_NEAR(nn_lr_schedule(1, 60, 10, 110, 0.1f), 0.55, 1e-6);
	CHECK_NEAR(nn_lr_schedule(1, 110, 10, 110, 0.1f), 0.1, 1e-6);
}

/* Moses' ticket: saliency is |w * g|, not |w| or |g| alone; the top share
 * exactly, ties in index order, or a threshold on xi / max xi; a masked
 * step trains the ticket and decays the rest toward zero. */
TEST(test_ticket)
{
	/* big weight and tiny gradient, tiny weight and big gradient, both
	 * moderate: only the last is salient */
	float w[6] = { 10, 0.001f, 2, -3, 0, 0.5f }, g[6] = { 0.001f, 10, -2, 1, 5, 0 };
	float xi[6], work[6];
	unsigned char mask[6];
	nn_saliency(xi, w, g, 6);
	CHECK_NEAR(xi[0], 0.01, 1e-6);
	CHECK_NEAR(xi[2], 4, 1e-6);
	CHECK_NEAR(xi[3], 3, 1e-6);
	CHECK_EQ_INT(nn_ticket_mask(mask, xi, 6, 1.0 / 6, 0, work), 1);
	CHECK(mask[2] && !mask[0] && !mask[1] && !mask[3]);
	CHECK_EQ_INT(nn_ticket_mask(mask, xi, 6, 0.5, 0, work), 3);
	CHECK(mask[2] && mask[3] && !mask[4] && !mask[5]);
	CHECK(mask[0] + mask[1] == 1); /* 0.01 and 0.01: the first of the tie */
	CHECK(mask[0]);
	CHECK_EQ_INT(nn_ticket_mask(mask, xi, 6, 0, 0, work), 0);
	CHECK_EQ_INT(nn_ticket_mask(mask, xi, 6, 1, 0, work), 6);
	/* threshold: xi / max >= 0.7 keeps 4 and 3 */
	CHECK_EQ_INT(nn_ticket_mask(mask, xi, 6, 0, 0.7, work), 2);
	CHECK(mask[2] && mask[3]);
	float zero[3] = { 0, 0, 0 };
	CHECK_EQ_INT(nn_ticket_mask(mask, zero, 3, 0, 0.5, work), 0);
	/* many ties and a large block: exactly round(ratio * n), the right ones */
	enum { N = 1001 };
	static float big[N], bw[N];
	static unsigned char bm[N];
	for (int i = 0; i < N; i++)
		big[i] = (float)(i % 7);
	size_t k = nn_ticket_mask(bm, big, N, 0.3, 0, bw);
	CHECK_EQ_INT(k, 300);
	int bad = 0;
	float lowest_in = 1e9f, highest_out = -1;
	for (int i = 0; i < N; i++) {
		if (bm[i])
			lowest_in = big[i] < lowest_in ? big[i] : lowest_in;
		else
			highest_out = big[i] > highest_out ? big[i] : highest_out;
	}
	bad += lowest_in < highest_out;
	CHECK(!bad);
	/* the masked step: the ticket moves as Adam, the rest only shrinks */
	float p[2] = { 1, 1 }, gr[2] = { 0.5f, 0.5f }, m[2] = { 0 }, v[2] = { 0 };
	unsigned char mk[2] = { 1, 0 };
	nn_adam o;
	nn_adam_default(&o);
	o.lr = 0.1f;
	nn_adam_step_masked(p, m, v, gr, mk, 2, &o, 0.5f);
	CHECK_NEAR(p[0], 0.9, 1e-5);
	CHECK_NEAR(p[1], 0.95, 1e-6);
	CHECK(m[1] == 0 && v[1] == 0 && m[0] != 0);
	for (int i = 0; i < 100; i++)
		nn_adam_step_masked(p, m, v, gr, mk, 2, &o, 0.5f);
	CHECK(fabsf(p[1]) < 0.01f && p[1] > 0);
	CHECK_EQ_INT(o.t, 101);
	/* no mask: nn_adam_step */
	float q[2] = { 1, 1 }, q2[2] = { 1, 1 }, m1[2] = { 0 }, v1[2] = { 0 }, m2[2] = { 0 }, v2[2] = { 0 };
	nn_adam o1, o2;
	nn_adam_default(&o1);
	nn_adam_default(&o2);
	nn_adam_step(q, m1, v1, gr, 2, &o1);
	nn_adam_step_masked(q2, m2, v2, gr, NULL, 2, &o2, 0.5f);
	CHECK(!memcmp(q, q2, sizeof q));
}

/* ---- a model: the parameter block, checkpoints, a fit ------------------------------ */

/* A two-layer MLP, E -> F -> 1, its tensors in one block. */
enum { ME = 2, MF = 32, MB = 256 };
typedef struct mlp {
	float *w1; /* (F,E) */
	float *b1; /* (F) */
	float *w2; /* (1,F) */
	float *b2; /* (1) */
} mlp;
static const size_t mlp_sizes[] = { MF * ME, MF, MF, 1 };

static float *mlp_block(mlp *m, size_t *n)
{
	float *block;
	float **const ptrs[] = { &m->w1, &m->b1, &m->w2, &m->b2 };
	if (nn_alloc(&block, n, ptrs, mlp_sizes, ArraySize(mlp_sizes)))
		return NULL;
	return block;
}

TEST(test_layout)
{
	mlp m;
	size_t n;
	float *block = mlp_block(&m, &n);
	CHECK(block != NULL);
	if (!block)
		return;
	CHECK_EQ_INT(n, MF * ME + 2 * MF + 1);
	CHECK(m.w1 == block && m.b1 == block + MF * ME && m.w2 == m.b1 + MF && m.b2 == m.w2 + MF);
	CHECK(all_zero(block, n));
	CHECK(((uintptr_t)block & 63) == 0);
	free(block);
}

TEST(test_checkpoint)
{
	mlp a, b;
	size_t n, nb, len;
	float *pa = mlp_block(&a, &n), *pb = mlp_block(&b, &nb);
	void *buf;
	const char *path = tpath("ckpt");
	CHECK(pa && pb);
	if (!pa || !pb)
		return;
	tk_rng_seed(&rng, 11, 1);
	randn(pa, n, 1);
	CHECK_EQ_INT(nn_ckpt_write(path, pa, n, 42), TK_OK);
	CHECK_EQ_INT(nn_ckpt_read(path, pb, nb, 42), TK_OK);
	CHECK(!memcmp(pa, pb, n * sizeof *pa));
	CHECK(b.b2[0] == a.b2[0]);
	/* other tag, other size, missing file */
	CHECK_EQ_INT(nn_ckpt_read(path, pb, nb, 43), TK_ECORRUPT);
	CHECK_EQ_INT(nn_ckpt_read(path, pb, nb - 1, 42), TK_ECORRUPT);
	CHECK_EQ_INT(nn_ckpt_read(tpath("none"), pb, nb, 42), TK_EIO);

	CHECK_EQ_INT(nn_ckpt_save(pa, n, 42, &buf, &len), TK_OK);
	CHECK_EQ_INT(len, NN_CKPT_HEADER + n * sizeof(float));
	unsigned char *c = buf;
	nn_zero(pb, nb);
	/* a flipped parameter bit, a wrong magic, another version, a short buffer */
	c[NN_CKPT_HEADER + 17] ^= 4;
	CHECK_EQ_INT(nn_ckpt_load(pb, nb, 42, c, len), TK_ECORRUPT);
	CHECK(strstr(tk_errmsg(), "hash") != NULL);
	c[NN_CKPT_HEADER + 17] ^= 4;
	c[0] ^= 1;
	CHECK_EQ_INT(nn_ckpt_load(pb, nb, 42, c, len), TK_ECORRUPT);
	c[0] ^= 1;
	c[4] = 2;
	CHECK_EQ_INT(nn_ckpt_load(pb, nb, 42, c, len), TK_ECORRUPT);
	CHECK(strstr(tk_errmsg(), "version 2") != NULL);
	c[4] = 1;
	CHECK_EQ_INT(nn_ckpt_load(pb, nb, 42, c, len - 1), TK_ECORRUPT);
	CHECK_EQ_INT(nn_ckpt_load(pb, nb, 42, c, 10), TK_ECORRUPT);
	CHECK(all_zero(pb, nb)); /* nothing read from a refused buffer */
	CHECK_EQ_INT(nn_ckpt_load(pb, nb, 42, c, len), TK_OK);
	CHECK(!memcmp(pa, pb, n * sizeof *pa));
	/* a file with a trailing byte is refused too */
	FILE *f = fopen(tpath("long"), "wb");
	CHECK(f && fwrite(c, 1, len, f) == len && fputc(0, f) == 0 && fclose(f) == 0);
	CHECK_EQ_INT(nn_ckpt_read(tpath("long"), pb, nb, 42), TK_ECORRUPT);
	/* and a file of another version */
	c[4] = 2;
	f = fopen(tpath("v2"), "wb");
	CHECK(f && fwrite(c, 1, len, f) == len && fclose(f) == 0);
	CHECK_EQ_INT(nn_ckpt_read(tpath("v2"), pb, nb, 42), TK_ECORRUPT);
	CHECK(strstr(tk_errmsg(), "version 2") != NULL);
	free(buf);
	free(pa);
	free(pb);
}

/* y = sin(3 x0) + x1^2 - 0.5 on x uniform in [-1, 1]^2; the MLP with Adam
 * must bring the training MSE from its start (> 0.1) below 0.01. */
/* Fit the MLP for steps steps of full-batch Adam from seed 12; the loss of
 * the first and the last step into *first and *last; the parameter block
 * (caller frees) or NULL if out of memory. */
static float *mlp_fit(int steps, float *first, float *last, size_t *np)
{
	mlp m, dm, mm, vm;
	size_t n;
	float *p = mlp_block(&m, &n), *dp = mlp_block(&dm, &n), *pm = mlp_block(&mm, &n),
	      *pv = mlp_block(&vm, &n);
	/* activations: one block too */
	struct { float *x, *y, *pre, *h, *out, *dpre, *dh, *dout; } act;
	const size_t act_sizes[] = { MB * ME, MB, MB * MF, MB * MF, MB, MB * MF, MB * MF, MB };
	float **const act_ptrs[] = { &act.x, &act.y, &act.pre, &act.h, &act.out, &act.dpre, &act.dh,
	                             &act.dout };
	float *pa = NULL;
	nn_adam o;
	tk_rng r;
	if (!p || !dp || !pm || !pv || nn_alloc(&pa, NULL, act_ptrs, act_sizes, 8)) {
		free(p), free(dp), free(pm), free(pv), free(pa);
		return NULL;
	}
	tk_rng_seed(&r, 12, 1);
	for (int i = 0; i < MB; i++) {
		float x0 = (float)(2 * tk_rng_unif(&r) - 1), x1 = (float)(2 * tk_rng_unif(&r) - 1);
		act.x[i * ME] = x0, act.x[i * ME + 1] = x1;
		act.y[i] = sinf(3 * x0) + x1 * x1 - 0.5f;
	}
	nn_init_uniform(m.w1, MF * ME, 1 / sqrtf(ME), &r);
	nn_init_uniform(m.w2, MF, 1 / sqrtf(MF), &r);
	nn_adam_default(&o);
	o.lr = 1e-2f;
	for (int step = 0; step < steps; step++) {
		nn_linear_forward(act.pre, act.x, m.w1, m.b1, MB, ME, MF);
		nn_relu_forward(act.h, act.pre, MB * MF);
		nn_linear_forward(act.out, act.h, m.w2, m.b2, MB, MF, 1);
		nn_zero(dp, n);
		nn_zero(act.dpre, MB * MF);
		nn_zero(act.dh, MB * MF);
		nn_zero(act.dout, MB);
		*last = nn_mse_loss(act.dout, act.out, act.y, NULL, MB);
		if (step == 0)
			*first = *last;
		nn_linear_backward(act.dh, dm.w2, dm.b2, act.dout, act.h, m.w2, MB, MF, 1);
		nn_relu_backward(act.dpre, act.dh, act.h, MB * MF);
		nn_linear_backward(NULL, dm.w1, dm.b1, act.dpre, act.x, m.w1, MB, ME, MF);
		nn_clip_grad_norm(dp, n, 10);
		nn_adam_step(p, pm, pv, dp, n, &o);
	}
	free(dp), free(pm), free(pv), free(pa);
	*np = n;
	return p;
}

/* y = sin(3 x0) + x1^2 - 0.5 on x uniform in [-1, 1]^2; the MLP with Adam
 * must bring the training MSE from its start (> 0.1) below 0.01. */
TEST(test_mlp_fit)
{
	float first = 0, loss = 1;
	size_t n;
	float *p = mlp_fit(1500, &first, &loss, &n);
	CHECK(p != NULL);
	CHECK(first > 0.1f);
	CHECK(loss < 0.01f);
	if (!(loss < 0.01f))
		fprintf(stderr, "mlp: loss %g from %g\n", loss, first);
	free(p);
}

/* The same seed gives the same parameters, bit for bit. */
TEST(test_deterministic)
{
	float f1, l1, f2, l2;
	size_t n1, n2;
	float *p1 = mlp_fit(100, &f1, &l1, &n1), *p2 = mlp_fit(100, &f2, &l2, &n2);
	CHECK(p1 && p2);
	if (p1 && p2) {
		CHECK(n1 == n2 && !memcmp(p1, p2, n1 * sizeof *p1));
		CHECK(l1 == l2 && l1 < f1);
	}
	free(p1);
	free(p2);
}

/* Groups of items with 6 features whose relevance is a hidden linear score:
 * a linear scorer trained with LambdaRank must order held-out groups (pairs
 * ordered right > 95%, from about half at the start). */
enum { RG = 24, RS = 16, RE = 6 };

static double pairs_right(const float *s, const float *y, int ng)
{
	long right = 0, all = 0;
	for (int g = 0; g < ng; g++)
		for (int i = g * RS; i < (g + 1) * RS; i++)
			for (int j = g * RS; j < (g + 1) * RS; j++)
				if (y[i] > y[j]) {
					all++;
					right += s[i] > s[j];
				}
	return (double)right / all;
}

TEST(test_lambdarank_fit)
{
	static float x[2 * RG * RS * RE], y[2 * RG * RS], s[2 * RG * RS], ds[RG * RS];
	static int work[RG * RS];
	static unsigned group[RG];
	float hidden[RE], w[RE + 1] = { 0 }, *dw, m[RE + 1] = { 0 }, v[RE + 1] = { 0 }, g[RE + 1];
	nn_adam o;
	tk_rng_seed(&rng, 13, 1);
	randn(hidden, RE, 1);
	randn(x, 2 * RG * RS * RE, 1);
	for (int i = 0; i < 2 * RG * RS; i++) {
		double t = 0;
		for (int e = 0; e < RE; e++)
			t += hidden[e] * x[i * RE + e];
		y[i] = (float)(1 / (1 + exp(-t))); /* relevance in (0, 1) */
	}
	for (int i = 0; i < RG; i++)
		group[i] = RS;
	randn(w, RE, 0.01f);
	dw = g;
	nn_adam_default(&o);
	o.lr = 0.05f;
	nn_linear_forward(s, x, w, w + RE, 2 * RG * RS, RE, 1);
	double before = pairs_right(s + RG * RS, y + RG * RS, RG);
	for (int step = 0; step < 300; step++) {
		nn_linear_forward(s, x, w, w + RE, RG * RS, RE, 1);
		nn_zero(ds, RG * RS);
		nn_zero(dw, RE + 1);
		nn_lambdarank_loss(ds, work, s, y, group, RG);
		nn_linear_backward(NULL, dw, dw + RE, ds, x, w, RG * RS, RE, 1);
		nn_adam_step(w, m, v, dw, RE + 1, &o);
	}
	nn_linear_forward(s, x, w, w + RE, 2 * RG * RS, RE, 1);
	double after = pairs_right(s + RG * RS, y + RG * RS, RG);
	CHECK(before < 0.8);
	CHECK(after > 0.95);
	if (!(after > 0.95))
		fprintf(stderr, "lambdarank: pairs right %.3f (from %.3f)\n", after, before);
}

UNIT_MAIN(test_linear, test_fd_catches_wrong_gradient, test_relu, test_residual,
          test_layernorm, test_pool, test_embedding, test_attention, test_gcn, test_losses,
          test_optimisers, test_ticket, test_layout, test_checkpoint, test_mlp_fit, test_deterministic,
          test_lambdarank_fit)
