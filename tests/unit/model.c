/*
 * Unit tests for lib/model and the model queries of lib/store: XGBoost
 * training on synthetic data it must learn (rank and reg objectives, task
 * groups, early stopping), save/load round trips with identical
 * predictions, the metrics on small cases computed by hand, model files
 * (round trip, atomic replacement, every kind of corruption), and training
 * rows, hardware counts and the model table of a small store. Files live in
 * a mkdtemp() directory removed at exit.
 */
#include "unit.h"

#include <dirent.h>
#include <math.h>
#include <sqlite3.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#include "features/feature.h"
#include "model/builtin.h"
#include "model/cost.h"
#include "model/metrics.h"
#include "model/modelfile.h"
#include "model/xgb.h"
#include "store/store.h"
#include "store/store_int.h"
#include "store/store_models.h"
#include "train/train.h"
#include "util/sha256.h"
#include "util/util.h"

/* ---- helpers -------------------------------------------------------- */

static int dir_entries(void)
{
	DIR *d = opendir(unit_tmpdir);
	struct dirent *e;
	int n = 0;
	if (!d)
		return -1;
	while ((e = readdir(d)))
		n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	closedir(d);
	return n;
}

static void write_file(const char *path, const void *buf, size_t n)
{
	FILE *f = fopen(path, "wb");
	if (!f || fwrite(buf, 1, n, f) != n || fclose(f)) {
		perror(path);
		exit(2);
	}
}

/* Spearman correlation of a[n] and b[n] (distinct values assumed). */
static double spearman(const float *a, const float *b, int n)
{
	double *ra = malloc(sizeof *ra * (size_t)n), *rb = malloc(sizeof *rb * (size_t)n);
	for (int i = 0; i < n; i++) {
		ra[i] = rb[i] = 0;
		for (int j = 0; j < n; j++) {
			ra[i] += a[j] < a[i] ? 1 : a[j] == a[i] && j != i ? 0.5 : 0;
			rb[i] += b[j] < b[i] ? 1 : b[j] == b[i] && j != i ? 0.5 : 0;
		}
	}
	double m = (n - 1) / 2.0, sab = 0, saa = 0, sbb = 0;
	for (int i = 0; i < n; i++) {
		sab += (ra[i] - m) * (rb[i] - m);
		saa += (ra[i] - m) * (ra[i] - m);
		sbb += (rb[i] - m) * (rb[i] - m);
	}
	free(ra);
	free(rb);
	return saa > 0 && sbb > 0 ? sab / sqrt(saa * sbb) : 0;
}

/* Synthetic rows: D = 4 uniform features; y = 0.6 [x0 > 0.5] + 0.4 x1. */
enum { SD = 4 };
static void synth(tk_rng *r, int n, float *x, float *y)
{
	for (int i = 0; i < n; i++) {
		for (int j = 0; j < SD; j++)
			x[i * SD + j] = (float)tk_rng_unif(r);
		y[i] = (x[i * SD] > 0.5f ? 0.6f : 0.0f) + 0.4f * x[i * SD + 1];
	}
}

/* ---- xgb ------------------------------------------------------------ */

/* Base margins (transfer learning): a model trained on top of a margin
 * learns the residual, and predicting with margins adds them row by row. */
TEST(xgb_base_margin)
{
	enum { N = 300 };
	static float x[N * SD], y[N], base[N], p0[N], p1[N];
	tk_rng r;
	tk_rng_seed(&r, 11, 2);
	synth(&r, N, x, y);
	for (int i = 0; i < N; i++) {
		base[i] = (float)(3 * x[i * SD + 2]);  /* what the base model knows */
		y[i] += base[i];                        /* the residual is left to learn */
	}
	xgb_params prm;
	xgb_params_default(&prm, "reg:squarederror");
	prm.nthread = 1;
	prm.rounds = 60;
	prm.early_stop = 0;
	xgb_data tr = { N, SD, x, y, 0, NULL, base };
	xgb_model *m = NULL;
	CHECK_EQ_INT(xgb_train(&prm, &tr, NULL, &m), TK_OK);
	if (!m)
		return;
	CHECK_EQ_INT(xgb_predict_margin(m, x, N, SD, base, p1), TK_OK);
	CHECK_EQ_INT(xgb_predict(m, x, N, SD, p0), TK_OK);
	double se1 = 0, se0 = 0;
	for (int i = 0; i < N; i++) {
		se1 += (p1[i] - y[i]) * (p1[i] - y[i]);
		se0 += (p0[i] - y[i]) * (p0[i] - y[i]);
		/* the trees are the same; only the margin differs */
		CHECK_NEAR(p1[i] - p0[i] - base[i], p1[0] - p0[0] - base[0], 1e-4);
	}
	CHECK(se1 / N < 0.01);     /* with its margins it fits */
	CHECK(se0 / N > 0.1);      /* without them it does not: it learnt the residual */
	xgb_free(m);
}

/* Train objective on 400 rows in 4 groups with a 100-row validation set,
 * then check the rank correlation on 200 new rows, the round trip through
 * xgb_save/xgb_load and early stopping. */
static void learn_and_reload(const char *objective)
{
	enum { N = 400, NV = 100, NT = 200 };
	static float x[N * SD], y[N], xv[NV * SD], yv[NV], xt[NT * SD], yt[NT], p[NT], p2[NT];
	unsigned group[4] = { 100, 100, 100, 100 }, gv = NV;
	tk_rng r;
	tk_rng_seed(&r, 7, 1);
	synth(&r, N, x, y);
	synth(&r, NV, xv, yv);
	synth(&r, NT, xt, yt);

	xgb_params prm;
	xgb_params_default(&prm, objective);
	prm.nthread = 1;
	xgb_data tr = { N, SD, x, y, 4, group, NULL }, va = { NV, SD, xv, yv, 1, &gv, NULL };
	xgb_model *m = NULL, *m2 = NULL;
	CHECK_EQ_INT(xgb_train(&prm, &tr, &va, &m), TK_OK);
	if (!m)
		return;
	int rounds = xgb_rounds(m);
	CHECK(rounds >= 1 && rounds < 8000 - 50);
	CHECK_EQ_INT(xgb_predict(m, xt, NT, SD, p), TK_OK);
	double rho = spearman(p, yt, NT);
	CHECK(rho > 0.9);
	if (!(rho > 0.9))
		fprintf(stderr, "  %s: rank correlation %.3f\n", objective, rho);
	if (!strcmp(objective, "reg:squarederror")) {
		double se = 0;
		for (int i = 0; i < NT; i++)
			se += (p[i] - yt[i]) * (p[i] - yt[i]);
		CHECK(sqrt(se / NT) < 0.1);
	}

	void *buf = NULL;
	size_t len = 0;
	CHECK_EQ_INT(xgb_save(m, &buf, &len), TK_OK);
	CHECK(len > 100);
	CHECK_EQ_INT(xgb_load(buf, len, &m2), TK_OK);
	if (m2) {
		CHECK_EQ_INT(xgb_rounds(m2), rounds);
		CHECK_EQ_INT(xgb_predict(m2, xt, NT, SD, p2), TK_OK);
		CHECK(memcmp(p, p2, sizeof p) == 0);
		/* several models on one matrix: each as if predicted alone */
		static float pm[3 * NT];
		xgb_model *three[3] = { m, m2, m };
		CHECK_EQ_INT(xgb_predict_many(three, 3, xt, NT, SD, NULL, pm), TK_OK);
		for (int k = 0; k < 3; k++)
			CHECK(memcmp(pm + k * NT, p, sizeof p) == 0);
	}
	/* a damaged payload is refused, not crashed on */
	xgb_model *bad = NULL;
	CHECK_EQ_INT(xgb_load(buf, len / 2, &bad), TK_ECORRUPT);
	CHECK_EQ_INT(xgb_load("not a model at all", 18, &bad), TK_ECORRUPT);
	CHECK(bad == NULL);
	free(buf);
	xgb_free(m2);
	xgb_free(m);
}

TEST(xgb_rank_learns_and_reloads)
{
	learn_and_reload("rank:pairwise");
}

TEST(xgb_reg_learns_and_reloads)
{
	learn_and_reload("reg:squarederror");
}

/* Without a validation set, a fixed number of rounds; early stopping keeps
 * fewer rounds than were trained, and predictions use just those. */
TEST(xgb_rounds_and_early_stop)
{
	enum { N = 200 };
	static float x[N * SD], y[N], xv[N * SD], yv[N];
	tk_rng r;
	tk_rng_seed(&r, 3, 1);
	synth(&r, N, x, y);
	synth(&r, N, xv, yv);
	xgb_params prm;
	xgb_params_default(&prm, "reg:squarederror");
	prm.nthread = 1;
	xgb_data tr = { N, SD, x, y, 0, NULL, NULL }, va = { N, SD, xv, yv, 0, NULL, NULL };
	xgb_model *m = NULL;
	CHECK_EQ_INT(xgb_train(&prm, &tr, NULL, &m), TK_OK);
	CHECK(m && xgb_rounds(m) == XGB_ROUNDS_NOVALID);
	xgb_free(m);
	m = NULL;
	prm.rounds = 17;
	prm.early_stop = 0;
	CHECK_EQ_INT(xgb_train(&prm, &tr, &va, &m), TK_OK);
	CHECK(m && xgb_rounds(m) == 17);
	xgb_free(m);
	m = NULL;

	/* deep unregularised trees on noisy labels overfit within a few rounds:
	 * early stopping must keep exactly the rounds r that minimise the
	 * validation RMSE of r-round models (r <= kept + early_stop), and
	 * predict as the r-round model does */
	prm.rounds = 300;
	prm.early_stop = 5;
	prm.eta = 0.5;
	prm.max_depth = 8;
	prm.min_child_weight = 0;
	prm.gamma = 0;
	prm.lambda = 0;
	for (int i = 0; i < N; i++)
		y[i] += (float)(0.3 * tk_rng_normal(&r));
	CHECK_EQ_INT(xgb_train(&prm, &tr, &va, &m), TK_OK);
	if (!m)
		return;
	int kept = xgb_rounds(m), best = 0;
	static float p[N], pb[N], pr[N];
	double best_se = HUGE_VAL;
	CHECK(kept >= 1 && kept < 300 - 5);
	CHECK_EQ_INT(xgb_predict(m, xv, N, SD, p), TK_OK);
	for (int rounds = 1; rounds <= kept + 5; rounds++) {
		xgb_params pf = prm;
		xgb_model *f = NULL;
		double se = 0;
		pf.early_stop = 0;
		pf.rounds = rounds;
		CHECK_EQ_INT(xgb_train(&pf, &tr, NULL, &f), TK_OK);
		if (!f)
			return;
		CHECK_EQ_INT(xgb_predict(f, xv, N, SD, pr), TK_OK);
		for (int i = 0; i < N; i++)
			se += (pr[i] - yv[i]) * (pr[i] - yv[i]);
		if (se < best_se - 1e-9) {
			best_se = se;
			best = rounds;
			memcpy(pb, pr, sizeof pb);
		}
		xgb_free(f);
	}
	CHECK_EQ_INT(kept, best);
	CHECK(memcmp(p, pb, sizeof p) == 0);
	xgb_free(m);
}

/* Groups: in each task x1 is constant and the tasks' label ranges differ.
 * Ranked within tasks, x1 tells nothing; ranked as one group, x1 separates
 * the tasks' labels and the model leans on it. */
TEST(xgb_groups_rank_within_task)
{
	enum { N = 200 };
	static float x[N * 2 * SD], y[N * 2], a[N], b[N];
	static float q0[N * SD], q1[N * SD];
	tk_rng r;
	tk_rng_seed(&r, 5, 1);
	for (int i = 0; i < 2 * N; i++) {
		for (int j = 0; j < SD; j++)
			x[i * SD + j] = (float)tk_rng_unif(&r);
		x[i * SD + 1] = i < N ? 0.0f : 1.0f;
		y[i] = 0.5f * x[i * SD] + (i < N ? 0.0f : 0.5f);
	}
	for (int i = 0; i < N; i++) {
		memcpy(q0 + i * SD, x + i * SD, sizeof(float) * SD);
		memcpy(q1 + i * SD, x + i * SD, sizeof(float) * SD);
		q1[i * SD + 1] = 1.0f;
	}
	double shift[2];
	for (int grouped = 0; grouped < 2; grouped++) {
		unsigned g[2] = { N, N };
		xgb_params prm;
		xgb_params_default(&prm, NULL);
		prm.nthread = 1;
		prm.rounds = 30;
		prm.early_stop = 0;
		xgb_data tr = { 2 * N, SD, x, y, grouped ? 2 : 0, g, NULL };
		xgb_model *m = NULL;
		CHECK_EQ_INT(xgb_train(&prm, &tr, NULL, &m), TK_OK);
		if (!m)
			return;
		CHECK_EQ_INT(xgb_predict(m, q0, N, SD, a), TK_OK);
		CHECK_EQ_INT(xgb_predict(m, q1, N, SD, b), TK_OK);
		double lo = HUGE_VAL, hi = -HUGE_VAL, d = 0;
		for (int i = 0; i < N; i++) {
			d += b[i] - a[i];
			lo = a[i] < lo ? a[i] : lo;
			hi = a[i] > hi ? a[i] : hi;
		}
		shift[grouped] = d / N / (hi - lo); /* x1's effect over the x0 spread */
		xgb_free(m);
	}
	CHECK(shift[0] > 0.5);              /* one group: x1 matters a lot */
	CHECK(fabs(shift[1]) < 0.1);        /* per task: hardly at all */
	if (!(shift[0] > 0.5) || !(fabs(shift[1]) < 0.1))
		fprintf(stderr, "  x1 effect: one group %.3f, grouped %.3f\n", shift[0], shift[1]);
}

TEST(xgb_rejects_bad_data)
{
	float x[8] = { 0 }, y[2] = { 0 }, out[2];
	unsigned g[2] = { 1, 2 };
	xgb_params prm;
	xgb_params_default(&prm, NULL);
	prm.nthread = 1;
	xgb_model *m = NULL;
	xgb_data bad_groups = { 2, 4, x, y, 2, g, NULL };
	CHECK_EQ_INT(xgb_train(&prm, &bad_groups, NULL, &m), TK_EINVAL);
	CHECK(m == NULL);
	xgb_data empty = { 0, 4, x, y, 0, NULL, NULL };
	CHECK_EQ_INT(xgb_train(&prm, &empty, NULL, &m), TK_EINVAL);
	xgb_data ok = { 2, 4, x, y, 0, NULL, NULL }, other_d = { 4, 2, x, y, 0, NULL, NULL };
	CHECK_EQ_INT(xgb_train(&prm, &ok, &other_d, &m), TK_EINVAL);
	prm.objective = "no:such";
	CHECK(xgb_train(&prm, &ok, NULL, &m) != TK_OK);
	CHECK(strstr(tk_errmsg(), "xgboost") != NULL);
	xgb_params_default(&prm, NULL);
	prm.nthread = 1;
	prm.rounds = 2;
	CHECK_EQ_INT(xgb_train(&prm, &ok, NULL, &m), TK_OK);
	if (m) {
		CHECK_EQ_INT(xgb_predict(m, x, 2, 4, out), TK_OK);
		CHECK_EQ_INT(xgb_predict(m, x, 2, 3, out), TK_EINVAL);
	}
	xgb_free(m);
}

/* ---- metrics -------------------------------------------------------- */

/* Two tasks, rows interleaved:
 *
 *   row task   y     lat   p      p - y
 *   0   A=7   1.00   1.0   0.9   -0.1
 *   1   B=3   1.00   3.0   0.1   -0.9
 *   2   A     0.50   2.0   0.2   -0.3
 *   3   A     0.25   4.0   0.5    0.25
 *   4   B     0.50   6.0   0.4   -0.1
 *   5   A     0     -1     1.0    1.0   (invalid)
 *
 * MSE  = (0.01 + 0.81 + 0.09 + 0.0625 + 0.01 + 1) / 6 = 1.9825 / 6
 *      = 0.330416667; RMSE = sqrt of that = 0.574818
 * MSE(D): A has 4 rows, ceil(4/4) = 1: D_A = {0}; B: ceil(2/4) = 1:
 *      D_B = {1}; (0.01 + 0.81) / 2 = 0.41
 * top-1: A's highest p is row 5, invalid: 0; B's is row 4: 3/6 = 0.5;
 *      mean 0.25; with weights 3 (row 0, A) and 1 (row 1, B):
 *      (3*0 + 1*0.5) / 4 = 0.125
 * top-5: A: all 4 rows, best valid 1.0: 1; B: 3/3 = 1; so 1
 * Spearman: A's ranks by p (high = 1): rows 0,2,3,5 -> 2,4,3,1; by y:
 *      1,2,3,4; d = 1,2,0,-3, sum d^2 = 14, 1 - 6*14/(4*15) = -0.4;
 *      B has 2 rows: left out; so -0.4
 */
TEST(metrics_hand_computed)
{
	int64_t task[] = { 7, 3, 7, 7, 3, 7 };
	float y[] = { 1, 1, 0.5f, 0.25f, 0.5f, 0 };
	double lat[] = { 1, 3, 2, 4, 6, -1 };
	float p[] = { 0.9f, 0.1f, 0.2f, 0.5f, 0.4f, 1.0f };
	double w[] = { 3, 1, 100, 100, 100, 100 }; /* only rows 0 and 1 count */
	cm_metrics m;
	CHECK_EQ_INT(cm_metrics_compute(6, task, y, lat, p, NULL, &m), TK_OK);
	CHECK_EQ_INT(m.n, 6);
	CHECK_EQ_INT(m.ntask, 2);
	CHECK_NEAR(m.mse, 1.9825 / 6, 1e-6);
	CHECK_NEAR(m.rmse, sqrt(1.9825 / 6), 1e-6);
	CHECK_NEAR(m.mse_d, 0.41, 1e-6);
	CHECK_NEAR(m.top1, 0.25, 1e-12);
	CHECK_NEAR(m.top5, 1.0, 1e-12);
	CHECK_NEAR(m.spearman, -0.4, 1e-12);
	CHECK_EQ_INT(cm_metrics_compute(6, task, y, lat, p, w, &m), TK_OK);
	CHECK_NEAR(m.top1, 0.125, 1e-12);
	CHECK_NEAR(m.top5, 1.0, 1e-12);
}

/* NDCG with linear gains, by hand. Group 1: y = 1, 0.5, 0 ranked by p as
 * 0, 0.5, 1: DCG = 0.5 / log2(3) + 1 / 2 = 0.81546, ideal = 1 + 0.5 /
 * log2(3) = 1.31546, 0.61991. Group 2 has no positive label: left out.
 * Group 3: p ties; the lowest label first: 0 then 1, DCG 1 / log2(3),
 * ideal 1: 0.63093. Mean 0.62542. One group of all rows (ngroup 0) too. */
TEST(ndcg_hand_computed)
{
	float y[] = { 1, 0.5f, 0, 0, 0, 1, 0 }, p[] = { 0.1f, 0.2f, 0.3f, 5, 6, 0.4f, 0.4f };
	unsigned group[] = { 3, 2, 2 };
	void *work = malloc(cm_ndcg_work(7));
	double g1 = (0.5 / log2(3) + 0.5) / (1 + 0.5 / log2(3)), g3 = 1 / log2(3);
	CHECK_NEAR(cm_ndcg(7, y, p, 3, group, work), (g1 + g3) / 2, 1e-6);
	CHECK_NEAR(cm_ndcg(3, y, p, 0, NULL, work), g1, 1e-6);
	CHECK_NEAR(cm_ndcg(2, y + 3, p + 3, 0, NULL, work), 0, 0);
	free(work);
}

/* Ties share their mean rank: p = 0.3, 0.3, 0.2, 0.1 ranks 1.5, 1.5, 3, 4
 * (deviations -1, -1, 0.5, 1.5) against y = 1, 0.5, 0.2, 0.4 ranked
 * 1, 2, 4, 3 (deviations -1.5, -0.5, 1.5, 0.5): rho = 3.5 / sqrt(4.5 * 5)
 * = 0.737864787 (ties ranked 1, 1 would give 0.7746, by row order 0.8).
 * top-1 with tied p takes the first row: lat 1.0, the best: score 1. */
TEST(metrics_ties_and_edges)
{
	int64_t task[] = { 1, 1, 1, 1 };
	float y[] = { 1.0f, 0.5f, 0.2f, 0.4f };
	double lat[] = { 1, 2, 5, 2.5 };
	float p[] = { 0.3f, 0.3f, 0.2f, 0.1f };
	cm_metrics m;
	CHECK_EQ_INT(cm_metrics_compute(4, task, y, lat, p, NULL, &m), TK_OK);
	CHECK_NEAR(m.spearman, 3.5 / sqrt(22.5), 1e-12);
	CHECK_NEAR(m.top1, 1.0, 1e-12);

	/* constant predictions: rank correlation 0; the first row is row 0 */
	float pc[] = { 0.5f, 0.5f, 0.5f };
	float y2[] = { 0.2f, 1.0f, 0.5f };
	double lat2[] = { 5, 1, 2 };
	CHECK_EQ_INT(cm_metrics_compute(3, task, y2, lat2, pc, NULL, &m), TK_OK);
	CHECK_NEAR(m.spearman, 0, 1e-12);
	CHECK_NEAR(m.top1, 0.2, 1e-12);

	/* a task with no valid row is left out of top-k and Spearman (no
	 * spread in y) and of MSE(D) (no y > 0); alone, those are NaN */
	float y0[] = { 0, 0, 0 };
	double lat0[] = { -1, -1, -1 };
	CHECK_EQ_INT(cm_metrics_compute(3, task, y0, lat0, p, NULL, &m), TK_OK);
	CHECK(isnan(m.top1) && isnan(m.top5) && isnan(m.spearman) && isnan(m.mse_d));
	CHECK_NEAR(m.mse, (0.09 + 0.09 + 0.04) / 3, 1e-6);

	CHECK_EQ_INT(cm_metrics_compute(0, NULL, NULL, NULL, NULL, NULL, &m), TK_OK);
	CHECK_EQ_INT(m.n, 0);
	CHECK_EQ_INT(m.ntask, 0);
	CHECK(isnan(m.rmse) && isnan(m.top1));

	/* MSE(D) with ties at the cut: 8 rows, ceil(8/4) = 2, the 2nd largest
	 * y is 0.5 and three rows have it: D = {1.0, 0.5, 0.5, 0.5}, errors
	 * 0.1 each: MSE(D) = 0.01 */
	int64_t t8[8] = { 0 };
	float y8[] = { 1, 0.5f, 0.5f, 0.5f, 0.2f, 0.1f, 0, 0 };
	double l8[] = { 1, 2, 2, 2, 5, 10, -1, -1 };
	float p8[] = { 1.1f, 0.6f, 0.4f, 0.6f, 0.2f, 0.1f, 0, 0 };
	CHECK_EQ_INT(cm_metrics_compute(8, t8, y8, l8, p8, NULL, &m), TK_OK);
	CHECK_NEAR(m.mse_d, 0.01, 1e-6);
}

/* ---- model files ---------------------------------------------------- */

TEST(modelfile_round_trip)
{
	mf_meta m, r;
	memset(&m, 0, sizeof m);
	CHECK_EQ_INT(mf_set(&m, "kind", "xgb"), TK_OK);
	CHECK_EQ_INT(mf_set(&m, "hardware", "Intel(R) Xeon(R) CPU|avx512|gcc 12|threads=1"), TK_OK);
	CHECK_EQ_INT(mf_set(&m, "n_train", "12"), TK_OK);
	CHECK_EQ_INT(mf_set(&m, "holdout_top1", "nan"), TK_OK);
	CHECK_EQ_INT(mf_set(&m, "empty", ""), TK_OK);
	CHECK_EQ_INT(mf_set(&m, "n_train", "1234"), TK_OK); /* replaces */
	CHECK_EQ_INT(m.n, 5);
	CHECK_EQ_STR(mf_get(&m, "n_train"), "1234");
	CHECK(mf_get(&m, "nope") == NULL);
	CHECK_EQ_INT(mf_set(&m, "payload", "3"), TK_EINVAL);
	CHECK_EQ_INT(mf_set(&m, "bad key", "x"), TK_EINVAL);
	CHECK_EQ_INT(mf_set(&m, "", "x"), TK_EINVAL);
	CHECK_EQ_INT(mf_set(&m, "k", "two\nlines"), TK_EINVAL);
	char longv[700];
	memset(longv, 'v', sizeof longv - 1);
	longv[sizeof longv - 1] = 0;
	CHECK_EQ_INT(mf_set(&m, "k", longv), TK_EINVAL);
	CHECK_EQ_INT(mf_set(&m, "n_holdout", "many"), TK_EINVAL); /* numeric keys checked */
	CHECK_EQ_INT(mf_set(&m, "train_rmse", "0.5x"), TK_EINVAL);

	const char payload[] = "\0binary\nend\npayload 9\n\xff";
	const char *path = tpath("a.model");
	int before = dir_entries();
	CHECK_EQ_INT(mf_write(path, &m, payload, sizeof payload), TK_OK);
	CHECK_EQ_INT(dir_entries(), before + 1); /* no temp file left behind */
	void *got = NULL;
	size_t len = 0;
	CHECK_EQ_INT(mf_read(path, &r, &got, &len), TK_OK);
	CHECK_EQ_INT(len, sizeof payload);
	CHECK(got && memcmp(got, payload, sizeof payload) == 0);
	CHECK_EQ_INT(r.n, m.n);
	for (int i = 0; i < m.n; i++)
		CHECK_EQ_STR(mf_get(&r, m.key[i]), m.val[i]);
	free(got);

	/* the file starts with the magic and the keys in order */
	FILE *f = fopen(path, "rb");
	char head[64] = "";
	CHECK(f && fgets(head, sizeof head, f));
	CHECK_EQ_STR(head, "tunekit-model 1\n");
	CHECK(f && fgets(head, sizeof head, f));
	CHECK_EQ_STR(head, "kind xgb\n");
	if (f)
		fclose(f);

	/* rewriting replaces the file atomically */
	CHECK_EQ_INT(mf_set(&m, "kind", "other"), TK_OK);
	CHECK_EQ_INT(mf_write(path, &m, "", 0), TK_OK);
	CHECK_EQ_INT(mf_read(path, &r, &got, &len), TK_OK);
	CHECK_EQ_STR(mf_get(&r, "kind"), "other");
	CHECK_EQ_INT(len, 0);
	free(got);
	CHECK_EQ_INT(dir_entries(), before + 1);

	/* the encoder writes what mf_write writes; the decoder reads it */
	void *buf = NULL;
	size_t n = 0;
	CHECK_EQ_INT(mf_encode(&m, "xyz", 3, &buf, &n), TK_OK);
	CHECK_EQ_INT(mf_decode(buf, n, &r, &got, &len), TK_OK);
	CHECK(len == 3 && got && !memcmp(got, "xyz", 3));
	free(got);
	/* ... and checks the payload's checksum: any byte changed is refused */
	CHECK(n >= 3 && strstr((const char *)buf, "\npayload_sha256 "));
	((char *)buf)[n - 2] ^= 1;
	got = (void *)1;
	CHECK_EQ_INT(mf_decode(buf, n, &r, &got, &len), TK_ECORRUPT);
	CHECK(got == NULL && strstr(tk_errmsg(), "checksum") != NULL);
	CHECK_EQ_INT(mf_set(&m, "payload_sha256", "x"), TK_EINVAL);
	free(buf);

	/* full */
	memset(&m, 0, sizeof m);
	char key[16];
	for (int i = 0; i < MF_MAXKEY; i++) {
		snprintf(key, sizeof key, "k%d", i);
		CHECK_EQ_INT(mf_set(&m, key, "v"), TK_OK);
	}
	CHECK_EQ_INT(mf_set(&m, "one_more", "v"), TK_EINVAL);
	CHECK_EQ_INT(mf_set(&m, "k0", "replaced"), TK_OK);

	CHECK_EQ_INT(mf_read(tpath("missing.model"), &r, &got, &len), TK_EIO);
	CHECK(got == NULL);
}

#define SUM_EMPTY "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" /* SHA-256 of no bytes */

/* A model file whose container is sound but whose payload its kind's
 * loader refuses: the path once, then the loader's message, whole (it was
 * formatted into the buffer it was read from, and came out garbled). */
TEST(modelfile_load_error_message)
{
	mf_meta m;
	memset(&m, 0, sizeof m);
	CHECK_EQ_INT(mf_set(&m, "kind", "rfei"), TK_OK);
	const char *path = tpath("refused.model");
	CHECK_EQ_INT(mf_write(path, &m, "not an rfei payload", 19), TK_OK);
	cm_model *model = NULL;
	mf_meta got;
	CHECK_EQ_INT(cm_read(path, &got, &model), TK_ECORRUPT);
	CHECK(model == NULL);
	const char *e = tk_errmsg(), *p = strstr(e, path);
	CHECK(p == e && strstr(p + 1, path) == NULL);
	CHECK(!strncmp(e + strlen(path), ": ", 2) && strlen(e) > strlen(path) + 10);
	if (p != e || strstr(e + 1, path))
		fprintf(stderr, "  message: %s\n", e);
	char again[512];
	snprintf(again, sizeof again, "%s", e);
	tk_seterr(TK_EIO, "%s: %s", "outer", tk_errmsg());
	CHECK(!strncmp(tk_errmsg(), "outer: ", 7) && !strcmp(tk_errmsg() + 7, again));
}

/* Each malformed file must give TK_ECORRUPT (and no payload). */
TEST(modelfile_corruption)
{
	static const struct {
		const char *what, *text;
		size_t len; /* 0: strlen */
	} cases[] = {
		{ "empty file", "", 0 },
		{ "no magic", "hello\nkind xgb\npayload 0\nend\n", 0 },
		{ "other version", "tunekit-model 2\nkind xgb\npayload 0\nend\n", 0 },
		{ "magic without newline", "tunekit-model 1", 0 },
		{ "no end", "tunekit-model 1\nkind xgb\npayload 3\n", 0 },
		{ "end without newline", "tunekit-model 1\nkind xgb\npayload 0\nend", 0 },
		{ "truncated payload", "tunekit-model 1\nkind xgb\npayload 10\nend\n12345", 0 },
		{ "trailing bytes", "tunekit-model 1\nkind xgb\npayload 2\nend\n12345", 0 },
		{ "bad payload length", "tunekit-model 1\nkind xgb\npayload 1x\nend\n1", 0 },
		{ "negative payload length", "tunekit-model 1\nkind xgb\npayload -1\nend\n", 0 },
		{ "empty payload length", "tunekit-model 1\nkind xgb\npayload \nend\n", 0 },
		{ "no payload key", "tunekit-model 1\nkind xgb\nend\n", 0 },
		{ "no kind key", "tunekit-model 1\nfeature knob\npayload 0\nend\n", 0 },
		{ "duplicate key", "tunekit-model 1\nkind xgb\nkind xgb\npayload 0\nend\n", 0 },
		{ "duplicate payload", "tunekit-model 1\nkind xgb\npayload 0\npayload 0\nend\n", 0 },
		{ "line without a value", "tunekit-model 1\nkind\npayload 0\nend\n", 0 },
		{ "bad key", "tunekit-model 1\nki/nd xgb\npayload 0\nend\n", 0 },
		{ "blank line", "tunekit-model 1\nkind xgb\n\npayload 0\nend\n", 0 },
		{ "bad integer", "tunekit-model 1\nkind xgb\nn_train 12abc\npayload 0\nend\n", 0 },
		{ "bad feature_length", "tunekit-model 1\nkind xgb\nfeature_length 1.5\npayload 0\nend\n", 0 },
		{ "bad metric", "tunekit-model 1\nkind xgb\nholdout_rmse fast\npayload 0\nend\n", 0 },
		{ "bad created", "tunekit-model 1\nkind xgb\ncreated yesterday\npayload 0\nend\n", 0 },
		{ "NUL in a value", "tunekit-model 1\nkind x\0b\npayload 0\nend\n", 39 },
		{ "no checksum", "tunekit-model 1\nkind xgb\npayload 2\nend\nok", 0 },
		{ "wrong checksum", "tunekit-model 1\nkind xgb\npayload 2\npayload_sha256 " SUM_EMPTY
		  "\nend\nok", 0 },
		{ "short checksum", "tunekit-model 1\nkind xgb\npayload 0\npayload_sha256 e3b0\nend\n", 0 },
		{ "uppercase checksum", "tunekit-model 1\nkind xgb\npayload 0\npayload_sha256 "
		  "E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855\nend\n", 0 },
		{ "duplicate checksum", "tunekit-model 1\nkind xgb\npayload 0\npayload_sha256 " SUM_EMPTY
		  "\npayload_sha256 " SUM_EMPTY "\nend\n", 0 },
	};
	const char *path = tpath("bad.model");
	for (int i = 0; i < ArraySize(cases); i++) {
		mf_meta m;
		void *got = (void *)1;
		size_t len = 0, n = cases[i].len ? cases[i].len : strlen(cases[i].text);
		write_file(path, cases[i].text, n);
		int rc = mf_read(path, &m, &got, &len);
		if (rc != TK_ECORRUPT)
			fprintf(stderr, "  case '%s': rc %d (%s)\n", cases[i].what, rc, tk_errmsg());
		CHECK_EQ_INT(rc, TK_ECORRUPT);
		CHECK(got == NULL);
		CHECK(strstr(tk_errmsg(), path) != NULL);
	}

	/* more than MF_MAXKEY keys */
	tk_sb sb;
	tk_sb_init(&sb);
	tk_sb_puts(&sb, "tunekit-model 1\nkind xgb\n");
	for (int i = 1; i <= MF_MAXKEY; i++)
		tk_sb_printf(&sb, "k%d v\n", i);
	tk_sb_puts(&sb, "payload 0\nend\n");
	mf_meta m;
	void *got = NULL;
	size_t len;
	CHECK_EQ_INT(mf_decode(sb.s, sb.n, &m, &got, &len), TK_ECORRUPT);
	CHECK(strstr(tk_errmsg(), "more than") != NULL);
	/* ... and exactly MF_MAXKEY is fine */
	tk_sb_clear(&sb);
	tk_sb_puts(&sb, "tunekit-model 1\nkind xgb\n");
	for (int i = 1; i < MF_MAXKEY; i++)
		tk_sb_printf(&sb, "k%d v\n", i);
	char sum[SHA256_HEX];
	sha256_hex("ok", 2, sum);
	tk_sb_printf(&sb, "payload 2\npayload_sha256 %s\nend\nok", sum);
	CHECK_EQ_INT(mf_decode(sb.s, sb.n, &m, &got, &len), TK_OK);
	CHECK_EQ_INT(m.n, MF_MAXKEY);
	free(got);
	tk_sb_free(&sb);
}

/* ---- the store's model queries -------------------------------------- */

typedef struct rows {
	int n;
	int64_t meas[16], task[16], hw[16];
	int valid[16], nx[16];
	double median[16];
	float x0[16];
	char key[16][48];
} rows;

static int rows_cb(void *ctx, const store_train_row *r)
{
	rows *c = ctx;
	if (c->n < 16) {
		c->meas[c->n] = r->meas_id;
		c->task[c->n] = r->task_id;
		c->hw[c->n] = r->hardware_id;
		c->valid[c->n] = r->valid;
		c->median[c->n] = r->median;
		c->nx[c->n] = r->n;
		c->x0[c->n] = r->x ? r->x[0] : -1;
		snprintf(c->key[c->n], sizeof c->key[0], "%s", r->task);
	}
	c->n++;
	return 0;
}

typedef struct hws {
	int n;
	store_hw_count h[4];
} hws;

static int hws_cb(void *ctx, const store_hw_count *h)
{
	hws *c = ctx;
	if (c->n < 4) {
		c->h[c->n] = *h;
		c->h[c->n].key = NULL;
	}
	c->n++;
	return 0;
}

static int models_cb(void *ctx, const store_model *m)
{
	store_model *out = ctx;
	*out = *m;
	out->kind = out->meta = out->hardware = NULL;
	return 0;
}

/* Store a feature row the way extract-features does. */
static void put_feature(tk_store *s, int64_t config_id, const char *kind, int version,
                        const float *v, int n)
{
	unsigned char *blob;
	int len;
	sqlite3_stmt *st;
	CHECK_EQ_INT(store_floats_encode(v, n, &blob, &len), TK_OK);
	CHECK(sqlite3_prepare_v2(store_db(s), "INSERT INTO feature(config_id, kind, version, n,"
	                         " data) VALUES (?1, ?2, ?3, ?4, ?5)", -1, &st, NULL) == SQLITE_OK);
	sqlite3_bind_int64(st, 1, config_id);
	sqlite3_bind_text(st, 2, kind, -1, SQLITE_STATIC);
	sqlite3_bind_int(st, 3, version);
	sqlite3_bind_int(st, 4, n);
	sqlite3_bind_blob(st, 5, blob, len, SQLITE_STATIC);
	CHECK(sqlite3_step(st) == SQLITE_DONE);
	sqlite3_finalize(st);
	free(blob);
}

static int64_t add_meas(tk_store *s, int64_t cfg, int64_t hw, int valid, double median)
{
	store_meas m;
	int64_t id = 0;
	memset(&m, 0, sizeof m);
	m.config_id = cfg;
	m.hardware_id = hw;
	m.valid = valid;
	m.error = valid ? 0 : 4;
	m.mean = m.median = median;
	m.number = 1;
	CHECK_EQ_INT(store_meas_add(s, &m, &id), TK_OK);
	return id;
}

TEST(store_training_rows_and_models)
{
	tk_store *s = NULL;
	CHECK_EQ_INT(store_open(tpath("m.db"), 0, &s), TK_OK);
	if (!s)
		return;
	store_hw ha = { .key = "cpu-a", .kind = "cpu" }, hb = { .key = "cpu-b", .kind = "cpu" };
	int64_t hwa, hwb, t1, t2, c1, c2, c3, c4;
	CHECK_EQ_INT(store_hardware_get(s, &ha, &hwa), TK_OK);
	CHECK_EQ_INT(store_hardware_get(s, &hb, &hwb), TK_OK);
	/* t2 is created first so that task id order differs from key order */
	CHECK_EQ_INT(store_task_get(s, "dense:k=9,m=9,n=9", "dense", 1458, &t2), TK_OK);
	CHECK_EQ_INT(store_task_get(s, "dense:k=8,m=8,n=8", "dense", 1024, &t1), TK_OK);
	CHECK_EQ_INT(store_config_get(s, t1, 0, "c=1", "s\n", &c1), TK_OK);
	CHECK_EQ_INT(store_config_get(s, t1, 1, "c=2", "s\n", &c2), TK_OK);
	CHECK_EQ_INT(store_config_get(s, t2, 0, "c=1", "s\n", &c3), TK_OK);
	CHECK_EQ_INT(store_config_get(s, t2, 1, "c=2", "s\n", &c4), TK_OK);
	float v1[3] = { 1, 2, 3 }, v2[3] = { 4, 5, 6 }, v3[2] = { 7, 8 };
	put_feature(s, c1, "knob", 1, v1, 3);
	put_feature(s, c2, "knob", 1, v2, 3);
	put_feature(s, c3, "knob", 1, v3, 2);
	put_feature(s, c4, "knob", 2, v3, 2); /* another version */
	put_feature(s, c4, "itervar", 1, v3, 2);
	int64_t m1 = add_meas(s, c3, hwa, 1, 2e-3);  /* t2 */
	int64_t m2 = add_meas(s, c1, hwa, 1, 1e-3);  /* t1 */
	int64_t m3 = add_meas(s, c2, hwa, 0, 0);     /* t1, invalid */
	int64_t m4 = add_meas(s, c4, hwa, 1, 3e-3);  /* t2, no knob v1 feature */
	int64_t m5 = add_meas(s, c1, hwb, 1, 5e-3);  /* other hardware */

	rows r = { 0 };
	CHECK_EQ_INT(store_train_rows(s, hwa, "knob", 1, NULL, 0, rows_cb, &r), TK_OK);
	CHECK_EQ_INT(r.n, 3);
	/* by task id (t2 first), then measurement id */
	CHECK(r.meas[0] == m1 && r.meas[1] == m2 && r.meas[2] == m3);
	CHECK(r.task[0] == t2 && r.task[1] == t1 && r.task[2] == t1);
	CHECK_EQ_STR(r.key[0], "dense:k=9,m=9,n=9");
	CHECK(r.valid[0] && r.valid[1] && !r.valid[2]);
	CHECK_NEAR(r.median[1], 1e-3, 1e-15);
	CHECK_NEAR(r.median[2], -1, 0);
	CHECK(r.nx[0] == 2 && r.nx[1] == 3 && r.x0[0] == 7 && r.x0[1] == 1 && r.x0[2] == 4);

	memset(&r, 0, sizeof r);
	CHECK_EQ_INT(store_train_rows(s, 0, "knob", 1, NULL, 0, rows_cb, &r), TK_OK);
	CHECK_EQ_INT(r.n, 4); /* m5 too */

	/* by ids: m4 has no features (n = 0), 999 is absent, m2 given twice */
	int64_t ids[] = { m4, 999, m2, m2, m5 };
	memset(&r, 0, sizeof r);
	CHECK_EQ_INT(store_train_rows(s, 0, "knob", 1, ids, 5, rows_cb, &r), TK_OK);
	CHECK_EQ_INT(r.n, 3);
	CHECK(r.meas[0] == m4 && r.nx[0] == 0 && r.x0[0] == -1);
	CHECK(r.meas[1] == m2 && r.meas[2] == m5 && r.hw[2] == hwb);
	memset(&r, 0, sizeof r);
	CHECK_EQ_INT(store_train_rows(s, hwb, "knob", 1, ids, 5, rows_cb, &r), TK_OK);
	CHECK(r.n == 1 && r.meas[0] == m5);

	/* a damaged BLOB is reported */
	CHECK(sqlite3_exec(store_db(s), "UPDATE feature SET n = 5 WHERE kind = 'knob' AND version = 1"
	                   " AND n = 2", NULL, NULL, NULL) == SQLITE_OK);
	memset(&r, 0, sizeof r);
	CHECK_EQ_INT(store_train_rows(s, hwa, "knob", 1, NULL, 0, rows_cb, &r), TK_ECORRUPT);

	hws h = { 0 };
	CHECK_EQ_INT(store_hardware_counts(s, "knob", 1, hws_cb, &h), TK_OK);
	CHECK_EQ_INT(h.n, 2);
	CHECK(h.h[0].id == hwa && h.h[0].nrec == 4 && h.h[0].nvalid == 3 && h.h[0].nfeat == 3);
	CHECK(h.h[1].id == hwb && h.h[1].nrec == 1 && h.h[1].nfeat == 1);
	memset(&h, 0, sizeof h);
	CHECK_EQ_INT(store_hardware_counts(s, "itervar", 1, hws_cb, &h), TK_OK);
	CHECK(h.n == 2 && h.h[0].id == hwa && h.h[0].nfeat == 1 && h.h[1].nfeat == 0);

	int64_t mid = 0;
	CHECK_EQ_INT(store_model_add(s, "xgb", hwa, "kind=xgb\nn_train=3\n", "\0abc", 4, &mid), TK_OK);
	CHECK(mid > 0);
	store_model got;
	memset(&got, 0, sizeof got);
	CHECK_EQ_INT(store_models(s, models_cb, &got), TK_OK);
	CHECK(got.id == mid && got.hardware_id == hwa && got.size == 4 && got.created > 1e9);
	void *data = NULL;
	size_t len = 0;
	CHECK_EQ_INT(store_model_data(s, mid, &data, &len), TK_OK);
	CHECK(len == 4 && data && !memcmp(data, "\0abc", 4));
	free(data);
	CHECK_EQ_INT(store_model_data(s, mid + 1, &data, &len), TK_ENOTFOUND);
	store_close(s);
}

/* A configuration timed several times on one hardware is one row: valid if
 * any record is, its latency the median of the valid ones (the mean of the
 * middle two for an even count), its id the first record's; with ids, the
 * records asked for alone. */
TEST(store_training_rows_one_per_config)
{
	tk_store *s = NULL;
	CHECK_EQ_INT(store_open(tpath("agg.db"), 0, &s), TK_OK);
	if (!s)
		return;
	store_hw ha = { .key = "cpu-a", .kind = "cpu" }, hb = { .key = "cpu-b", .kind = "cpu" };
	int64_t hwa, hwb, t, c[4];
	CHECK_EQ_INT(store_hardware_get(s, &ha, &hwa), TK_OK);
	CHECK_EQ_INT(store_hardware_get(s, &hb, &hwb), TK_OK);
	CHECK_EQ_INT(store_task_get(s, "dense:k=8,m=8,n=8", "dense", 1024, &t), TK_OK);
	const char *text[4] = { "c=1", "c=2", "c=3", "c=4" };
	float v[4][2] = { { 1, 0 }, { 2, 0 }, { 3, 0 }, { 4, 0 } };
	for (int i = 0; i < 4; i++) {
		CHECK_EQ_INT(store_config_get(s, t, i, text[i], "s\n", &c[i]), TK_OK);
		put_feature(s, c[i], "knob", 1, v[i], 2);
	}
	int64_t a1 = add_meas(s, c[0], hwa, 1, 3e-3);
	int64_t b1 = add_meas(s, c[1], hwa, 1, 1e-3);
	int64_t d1 = add_meas(s, c[2], hwa, 0, 0);
	int64_t e1 = add_meas(s, c[3], hwa, 0, 0);
	int64_t f1 = add_meas(s, c[0], hwb, 1, 7e-3);
	int64_t a2 = add_meas(s, c[0], hwa, 1, 1e-3);
	add_meas(s, c[1], hwa, 1, 4e-3);
	add_meas(s, c[2], hwa, 1, 5e-3);
	add_meas(s, c[3], hwa, 0, 0);
	int64_t a3 = add_meas(s, c[0], hwa, 1, 2e-3);

	rows r = { 0 };
	CHECK_EQ_INT(store_train_rows(s, 0, "knob", 1, NULL, 0, rows_cb, &r), TK_OK);
	CHECK_EQ_INT(r.n, 5);
	CHECK(r.meas[0] == a1 && r.hw[0] == hwa && r.valid[0] && r.x0[0] == 1);
	CHECK_NEAR(r.median[0], 2e-3, 1e-15);
	CHECK(r.meas[1] == b1 && r.valid[1] && r.x0[1] == 2);
	CHECK_NEAR(r.median[1], 2.5e-3, 1e-15);
	CHECK(r.meas[2] == d1 && r.valid[2] && r.x0[2] == 3);
	CHECK_NEAR(r.median[2], 5e-3, 1e-15);
	CHECK(r.meas[3] == e1 && !r.valid[3] && r.median[3] == -1 && r.x0[3] == 4);
	CHECK(r.meas[4] == f1 && r.hw[4] == hwb && r.valid[4]);
	CHECK_NEAR(r.median[4], 7e-3, 1e-15);

	int64_t ids[] = { a3, a2 };
	memset(&r, 0, sizeof r);
	CHECK_EQ_INT(store_train_rows(s, hwa, "knob", 1, ids, 2, rows_cb, &r), TK_OK);
	CHECK(r.n == 1 && r.meas[0] == a2 && r.valid[0]);
	CHECK_NEAR(r.median[0], 1.5e-3, 1e-15);
	store_close(s);
}


/* ---- the model table ------------------------------------------------------ */

/* Names resolve; an unknown one is refused with the names in the message;
 * the capability flags say what the tuner and the searches rely on. */
/* The feature kind a model reads without --feature: its own on a task with
 * a loop nest, knob on one without if it takes knob. */
TEST(cost_default_features)
{
	CHECK_EQ_INT(cm_feature(cm_find("xgb"), 1), FEAT_ITERVAR);
	CHECK_EQ_INT(cm_feature(cm_find("xgb"), 0), FEAT_KNOB);
	CHECK_EQ_INT(cm_feature(cm_find("rfei"), 1), FEAT_ITERVAR);
	CHECK_EQ_INT(cm_feature(cm_find("tlp"), 1), FEAT_TLP);
	CHECK_EQ_INT(cm_feature(cm_find("mtl-tlp"), 1), FEAT_TLP);
	CHECK_EQ_INT(cm_feature(cm_find("mtl-tlp"), 0), FEAT_KNOB);
	CHECK_EQ_INT(cm_feature(cm_find("ml2"), 1), FEAT_ITERVAR);
	CHECK_EQ_INT(cm_feature(cm_find("meta"), 1), FEAT_GRAPH);
	CHECK_EQ_INT(cm_feature(cm_find("meta"), 0), FEAT_GRAPH); /* no knob: does not apply */
}

TEST(cost_table_names_and_flags)
{
	const cm_kind *k = NULL;
	char names[128];
	CHECK_EQ_INT(cm_lookup("xgb", &k), TK_OK);
	CHECK(k && cm_is_model(k) && (k->flags & CM_TRANSFER) && !(k->flags & CM_UNCERTAINTY));
	CHECK_EQ_INT(cm_lookup("rfei", &k), TK_OK);
	CHECK(k && k->predict_dist && (k->flags & CM_UNCERTAINTY) && !(k->flags & CM_TRANSFER));
	CHECK(k && (k->flags & CM_EI)); /* the tuner scores rfei by expected improvement */
	CHECK_EQ_INT(cm_lookup("meta", &k), TK_OK);
	CHECK(k && (k->flags & CM_UNCERTAINTY) && (k->flags & CM_FINETUNE) && !(k->flags & CM_EI));
	CHECK_EQ_INT(cm_lookup("none", &k), TK_OK);
	CHECK(k && !cm_is_model(k));
	CHECK_EQ_INT(cm_lookup("svm", &k), TK_EINVAL);
	CHECK(k == NULL);
	CHECK(strstr(tk_errmsg(), "unknown model 'svm' (xgb, rfei, tlp, mtl-tlp, meta, ml2, none)") != NULL);
	cm_names(names, sizeof names, CM_UNCERTAINTY, 1);
	CHECK_EQ_STR(names, "rfei, meta");
	cm_names(names, sizeof names, 0, 1);
	CHECK_EQ_STR(names, "xgb, rfei, tlp, mtl-tlp, meta, ml2");
	cm_names(names, 5, 0, 0);   /* cut short, still terminated */
	CHECK_EQ_STR(names, "xgb");
	for (int i = 0; i < cm_nkinds; i++) {
		k = cm_kinds[i];
		CHECK(k->name && k->summary && cm_find(k->name) == k);
		/* a model has every operation but update; "none" none */
		if (cm_is_model(k))
			CHECK(k->predict && k->save && k->load && k->free && k->features &&
			      (k->features & 1u << k->feature)); /* it takes what it reads by default */
		else
			CHECK(!k->predict && !k->save && !k->load);
		CHECK(!(k->flags & CM_UNCERTAINTY) == !k->predict_dist);
		CHECK(!k->adapts == !k->adapt);
		CHECK(!(k->flags & CM_EI) || (k->flags & CM_UNCERTAINTY));
	}
	cm_model *m = NULL;
	cm_params p;
	cm_params_default(&p);
	cm_data d = { 0 };
	CHECK_EQ_INT(cm_fit(cm_find("none"), &p, &d, NULL, &m), TK_EINVAL);
	CHECK(m == NULL);
}

/* rfei: the mean of its members, a deviation that is larger away from the
 * data, the same fit from the same seed and generator, and the payload
 * round trip with identical predictions; damaged payloads are refused. */
TEST(cost_rfei_fit_dist_and_reload)
{
	enum { N = 200, NT = 50 };
	static float x[N * SD], y[N], xt[NT * SD], yt[NT], mu[NT], sd[NT], mu2[NT], sd2[NT], pm[NT];
	tk_rng r, g1, g2;
	tk_rng_seed(&r, 5, 3);
	synth(&r, N, x, y);
	synth(&r, NT, xt, yt);
	const cm_kind *k = cm_find("rfei");
	cm_params p;
	cm_params_default(&p);
	p.rounds = 30;
	p.seed = 9;
	tk_rng_seed(&g1, 1, 2);
	tk_rng_seed(&g2, 1, 2);
	cm_data d = { N, SD, x, y, 0, NULL, NULL, NULL, 0, NULL };
	cm_model *m = NULL, *m2 = NULL, *m3 = NULL;
	p.rng = &g1;
	CHECK_EQ_INT(cm_fit(k, &p, &d, NULL, &m), TK_OK);
	p.rng = &g2;
	CHECK_EQ_INT(cm_fit(k, &p, &d, NULL, &m2), TK_OK);
	if (!m || !m2)
		return;
	CHECK_EQ_INT(cm_predict_dist(m, xt, NT, SD, mu, sd), TK_OK);
	CHECK_EQ_INT(cm_predict_dist(m2, xt, NT, SD, mu2, sd2), TK_OK);
	CHECK_EQ_INT(cm_predict(m, xt, NT, SD, NULL, pm), TK_OK);
	int same = 0, spread = 0;
	for (int i = 0; i < NT; i++) {
		same += mu[i] == mu2[i] && sd[i] == sd2[i] && pm[i] == mu[i];
		spread += sd[i] > 0;
	}
	CHECK_EQ_INT(same, NT);
	CHECK(spread > NT / 2);              /* bootstrap members disagree */
	CHECK(spearman(mu, yt, NT) > 0.8);
	CHECK_EQ_INT(cm_predict(m, xt, NT, SD, yt, pm), TK_EINVAL); /* no base margins */

	void *buf = NULL;
	size_t len = 0;
	CHECK_EQ_INT(cm_save(m, &buf, &len), TK_OK);
	CHECK(len > 20 && !memcmp(buf, "tunekit-rfei 1 10\n", 18));
	CHECK_EQ_INT(cm_load(k, buf, len, &m3), TK_OK);
	if (m3) {
		CHECK_EQ_INT(cm_predict_dist(m3, xt, NT, SD, mu2, sd2), TK_OK);
		same = 0;
		for (int i = 0; i < NT; i++)
			same += mu[i] == mu2[i] && sd[i] == sd2[i];
		CHECK_EQ_INT(same, NT);
		mf_meta meta;
		memset(&meta, 0, sizeof meta);
		CHECK_EQ_INT(cm_describe(m3, &meta), TK_OK);
		CHECK_EQ_STR(mf_get(&meta, "kind"), "rfei");
		CHECK_EQ_STR(mf_get(&meta, "members"), "10");
	}
	cm_model *bad = NULL;
	char *c = malloc(len);
	memcpy(c, buf, len);
	CHECK_EQ_INT(cm_load(k, c, len / 2, &bad), TK_ECORRUPT);      /* cut short */
	CHECK_EQ_INT(cm_load(k, c, len - 1, &bad), TK_ECORRUPT);
	c[13] = '2';                                                    /* version 2 */
	CHECK_EQ_INT(cm_load(k, c, len, &bad), TK_ECORRUPT);
	CHECK_EQ_INT(cm_load(k, "tunekit-model 1\n", 16, &bad), TK_ECORRUPT);
	CHECK(bad == NULL);
	/* an xgb payload is not an rfei one, nor the other way round */
	CHECK_EQ_INT(cm_load(cm_find("xgb"), buf, len, &bad), TK_ECORRUPT);
	free(c);
	free(buf);
	cm_free(m);
	cm_free(m2);
	cm_free(m3);
}

/* xgb through the table: updates refit, margins reach the trees. */
TEST(cost_xgb_update_and_margin)
{
	enum { N = 300 };
	static float x[N * SD], y[N], base[N], p0[N], p1[N];
	tk_rng r;
	tk_rng_seed(&r, 11, 2);
	synth(&r, N, x, y);
	for (int i = 0; i < N; i++)
		base[i] = (float)(3 * x[i * SD + 2]);
	cm_params p;
	cm_params_default(&p);
	p.rank = 0;
	p.rounds = 40;
	cm_data half = { N / 2, SD, x, y, 0, NULL, NULL, NULL, 0, NULL }, all = { N, SD, x, y, 0, NULL, NULL, NULL, 0, NULL };
	cm_model *m = NULL;
	CHECK_EQ_INT(cm_fit(cm_find("xgb"), &p, &half, NULL, &m), TK_OK);
	if (!m)
		return;
	CHECK_EQ_INT(cm_update(m, &p, &all), TK_OK);
	CHECK_EQ_INT(cm_predict(m, x, N, SD, NULL, p0), TK_OK);
	CHECK_EQ_INT(cm_predict(m, x, N, SD, base, p1), TK_OK);
	double se = 0;
	for (int i = 0; i < N; i++) {
		/* the margins replace the constant base score, row by row */
		CHECK_NEAR(p1[i] - p0[i] - base[i], p1[0] - p0[0] - base[0], 1e-4);
		se += (p0[i] - y[i]) * (p0[i] - y[i]);
	}
	CHECK(se / N < 0.01);    /* it learnt the second half too */
	mf_meta meta;
	memset(&meta, 0, sizeof meta);
	CHECK_EQ_INT(cm_describe(m, &meta), TK_OK);
	CHECK_EQ_STR(mf_get(&meta, "objective"), "reg:squarederror");
	CHECK_EQ_STR(mf_get(&meta, "rounds"), "40");
	cm_free(m);
}

/* xgb warm start (cm_adapt by boosting): a model of one rule, reloaded
 * from its payload as `tunekit transfer` does, continued on a few rows of
 * a shifted rule, keeps its rounds, adds the new ones and fits the shifted
 * rule better than before; it refuses the network ways and rows of
 * another length. */
TEST(cost_xgb_warm_start)
{
	enum { N = 300, NA = 60 };
	static float x[N * SD], y[N], xa[N * SD], ya[N], p[N];
	tk_rng r;
	tk_rng_seed(&r, 12, 2);
	synth(&r, N, x, y);
	synth(&r, N, xa, ya);
	for (int i = 0; i < N; i++) /* the shift: the second feature counts more */
		ya[i] = (ya[i] + 0.8f * xa[i * SD + 1]) / 1.8f;
	cm_params cp;
	cm_params_default(&cp);
	cp.rank = 0;
	cp.rounds = 30;
	cm_data d = { N, SD, x, y, 0, NULL, NULL, NULL, 0, NULL }, da = { NA, SD, xa, ya, 0, NULL, NULL, NULL, 0, NULL };
	cm_model *m = NULL, *w = NULL;
	void *buf;
	size_t len;
	CHECK_EQ_INT(cm_fit(cm_find("xgb"), &cp, &d, NULL, &m), TK_OK);
	if (!m)
		return;
	CHECK_EQ_INT(cm_save(m, &buf, &len), TK_OK);
	CHECK_EQ_INT(cm_load(cm_find("xgb"), buf, len, &w), TK_OK);
	double se0 = 0, se1 = 0;
	CHECK_EQ_INT(cm_predict(w, xa + NA * SD, N - NA, SD, NULL, p), TK_OK);
	for (int i = 0; i < N - NA; i++)
		se0 += (p[i] - ya[NA + i]) * (p[i] - ya[NA + i]);
	cm_adapt_opts a;
	cm_adapt_info info;
	cm_adapt_default(&a);
	a.method = CM_ADAPT_TICKET;
	CHECK_EQ_INT(cm_adapt(w, &cp, &a, &da, &info), TK_EINVAL);
	a.method = CM_ADAPT_FINETUNE;
	CHECK_EQ_INT(cm_adapt(w, &cp, &a, &da, &info), TK_EINVAL);
	a.method = CM_ADAPT_BOOST;
	a.epochs = 20;
	cm_data bad = da;
	bad.d = SD - 1;
	CHECK_EQ_INT(cm_adapt(w, &cp, &a, &bad, &info), TK_EINVAL);
	CHECK_EQ_INT(cm_adapt(w, &cp, &a, &da, &info), TK_OK);
	CHECK_EQ_INT(info.epochs, 20);
	CHECK_EQ_INT(info.steps, 50);
	CHECK_EQ_INT(cm_predict(w, xa + NA * SD, N - NA, SD, NULL, p), TK_OK);
	for (int i = 0; i < N - NA; i++)
		se1 += (p[i] - ya[NA + i]) * (p[i] - ya[NA + i]);
	CHECK(se1 < 0.8 * se0);
	mf_meta meta;
	memset(&meta, 0, sizeof meta);
	CHECK_EQ_INT(cm_describe(w, &meta), TK_OK);
	CHECK_EQ_STR(mf_get(&meta, "rounds"), "50");
	free(buf);
	cm_free(m);
	cm_free(w);
}

/* ---- the training pipeline -------------------------------------------------- */

/* Active selection: each task's share, at most one of a crowd of copies
 * (a uniform draw of 10 of task 0's 100 rows takes about 9 of its 90
 * copies), at least one (the crowd is the most representative), the
 * holdout untouched, the same choice for the same seed. */
TEST(train_select_active)
{
	enum { N0 = 100, N1 = 20, N2 = 10, N = N0 + N1 + N2 };
	tr_set ts;
	memset(&ts, 0, sizeof ts);
	ts.n = ts.cap = N;
	ts.ntask = ts.tcap = 3;
	ts.task = calloc(N, sizeof *ts.task);
	ts.lat = calloc(N, sizeof *ts.lat);
	ts.thr = calloc(N, sizeof *ts.thr);
	ts.nx = calloc(N, sizeof *ts.nx);
	ts.xoff = calloc(N, sizeof *ts.xoff);
	ts.xbuf = calloc(2 * N, sizeof *ts.xbuf);
	ts.tasks = calloc(3, sizeof *ts.tasks);
	for (int i = 0; i < N; i++) {
		int t = i < N0 ? 0 : i < N0 + N1 ? 1 : 2, j = i - (t == 0 ? 0 : t == 1 ? N0 : N0 + N1);
		ts.task[i] = t;
		ts.nx[i] = 2;
		ts.xoff[i] = (size_t)(2 * i);
		/* task 0: 90 copies of (0, 0), then 10 apart; task 1 and 2: a curve */
		ts.xbuf[2 * i] = t == 0 ? (j < 90 ? 0 : (float)(10 * (j - 89))) : (float)j;
		ts.xbuf[2 * i + 1] = t == 0 ? (j < 90 ? 0 : 5) : (float)(j * j);
		ts.lat[i] = 1 + (i * 37 % 11);
		ts.thr[i] = (float)(1 / ts.lat[i]);
	}
	for (int t = 0; t < 3; t++) {
		ts.tasks[t].key = strdup(t == 0 ? "dense:m=1" : t == 1 ? "dense:m=2" : "dense:m=3");
		ts.tasks[t].first = t == 0 ? 0 : t == 1 ? N0 : N0 + N1;
		ts.tasks[t].n = t == 0 ? N0 : t == 1 ? N1 : N2;
		ts.tasks[t].d = 2;
	}
	char sel[N], sel2[N];
	for (int i = 0; i < N; i++)
		sel[i] = i < N0 + N1 ? TR_TRAIN : TR_HOLD;
	memcpy(sel2, sel, sizeof sel);
	int nkept = 0, crowd = 0, spread = 0, t1 = 0;
	CHECK_EQ_INT(tr_select_active(&ts, sel, 0.1, 5, &nkept), TK_OK);
	CHECK_EQ_INT(nkept, 12);
	for (int i = 0; i < N; i++) {
		crowd += i < 90 && sel[i] == TR_TRAIN;
		spread += i >= 90 && i < N0 && sel[i] == TR_TRAIN;
		t1 += i >= N0 && i < N0 + N1 && sel[i] == TR_TRAIN;
		CHECK(sel[i] == TR_TRAIN || sel[i] == (i < N0 + N1 ? TR_OUT : TR_HOLD));
		CHECK(i < N0 + N1 || sel[i] == TR_HOLD);
	}
	CHECK_EQ_INT(crowd, 1);
	CHECK_EQ_INT(spread, 9);
	CHECK_EQ_INT(t1, 2);
	CHECK_EQ_INT(tr_select_active(&ts, sel2, 0.1, 5, &nkept), TK_OK);
	CHECK(!memcmp(sel, sel2, sizeof sel));

	double f = 0;
	CHECK_EQ_INT(tr_select_parse("active:0.1", &f), TK_OK);
	CHECK_NEAR(f, 0.1, 1e-12);
	CHECK_EQ_INT(tr_select_parse("active:1", &f), TK_OK);
	CHECK_EQ_INT(tr_select_parse("active:0", &f), TK_EINVAL);
	CHECK_EQ_INT(tr_select_parse("active:1.5", &f), TK_EINVAL);
	CHECK_EQ_INT(tr_select_parse("active:0.1x", &f), TK_EINVAL);
	CHECK_EQ_INT(tr_select_parse("random:0.1", &f), TK_EINVAL);
	CHECK(strstr(tk_errmsg(), "random:0.1") != NULL);
	tr_set_free(&ts);
}

/* Labels per task, the seeded split by task, parts grouped by task. */
TEST(train_labels_split_parts)
{
	tr_set ts;
	memset(&ts, 0, sizeof ts);
	/* 3 tasks of 4 rows: latencies 1, 2, 4 and an invalid row */
	ts.n = ts.cap = 12;
	ts.ntask = ts.tcap = 3;
	ts.meas = calloc(12, sizeof *ts.meas);
	ts.hw = calloc(12, sizeof *ts.hw);
	ts.task = calloc(12, sizeof *ts.task);
	ts.lat = calloc(12, sizeof *ts.lat);
	ts.thr = calloc(12, sizeof *ts.thr);
	ts.nx = calloc(12, sizeof *ts.nx);
	ts.xoff = calloc(12, sizeof *ts.xoff);
	ts.xbuf = calloc(24, sizeof *ts.xbuf);
	ts.tasks = calloc(3, sizeof *ts.tasks);
	static const double lat[4] = { 1, 2, 4, -1 };
	for (int i = 0; i < 12; i++) {
		ts.task[i] = i / 4;
		ts.lat[i] = lat[i % 4];
		ts.thr[i] = lat[i % 4] > 0 ? (float)(1e9 * (1 + i / 4) / lat[i % 4]) : 0;
		ts.nx[i] = 1 + i % 2;      /* ragged: padded to 2 */
		ts.xoff[i] = (size_t)(2 * i);
		ts.xbuf[2 * i] = (float)i;
		ts.xbuf[2 * i + 1] = 100;
	}
	for (int t = 0; t < 3; t++) {
		char key[16];
		snprintf(key, sizeof key, "dense:m=%d", t);
		ts.tasks[t].key = strdup(key);
		ts.tasks[t].first = 4 * t;
		ts.tasks[t].n = 4;
		ts.tasks[t].d = 2;
	}
	float y[12];
	tr_labels(&ts, y);
	for (int i = 0; i < 12; i++)
		CHECK_NEAR(y[i], lat[i % 4] > 0 ? 1 / lat[i % 4] : 0, 1e-6);

	char hold[12], hold2[12];
	int nhold, by_rows;
	tr_split_opts so = { 0.34, NULL, 0, 7, NULL, 0 };
	CHECK_EQ_INT(tr_split(&ts, &so, hold, &nhold, &by_rows), TK_OK);
	CHECK(nhold == 4 && !by_rows);
	int held = -1;
	for (int t = 0; t < 3; t++)
		if (ts.tasks[t].holdout)
			held = t;
	for (int i = 0; i < 12; i++)
		CHECK_EQ_INT(hold[i], i / 4 == held);
	for (int t = 0; t < 3; t++)
		ts.tasks[t].holdout = 0;
	CHECK_EQ_INT(tr_split(&ts, &so, hold2, &nhold, &by_rows), TK_OK);
	CHECK(!memcmp(hold, hold2, sizeof hold));          /* the same seed, the same task */
	for (int t = 0; t < 3; t++)
		ts.tasks[t].holdout = 0;

	const char *names[] = { "dense:m=1", "dense:m=9" };
	tr_split_opts named = { 0, names, 1, 1, NULL, 0 };
	CHECK_EQ_INT(tr_split(&ts, &named, hold, &nhold, &by_rows), TK_OK);
	CHECK(nhold == 4 && hold[4] && hold[7] && !hold[3] && !hold[8]);
	named.tasks = names + 1;
	CHECK_EQ_INT(tr_split(&ts, &named, hold, &nhold, &by_rows), TK_EINVAL);
	CHECK(strstr(tk_errmsg(), "no records of that task") != NULL);
	for (int t = 0; t < 3; t++)
		ts.tasks[t].holdout = 1;
	tr_split_opts none = { 0, NULL, 0, 1, NULL, 0 };
	CHECK_EQ_INT(tr_split(&ts, &none, hold, &nhold, &by_rows), TK_EINVAL); /* all held out */
	for (int t = 0; t < 3; t++)
		ts.tasks[t].holdout = 0;

	/* Validation tasks: TR_VALID unless held out; a share of the target's
	 * training and validation rows; nothing left to train on. */
	const char *vnames[] = { "dense:m=2", "dense:m=1" }, *bad[] = { "dense:m=9" };
	tr_split_opts val = { 0, names, 1, 1, vnames, 2 };
	CHECK_EQ_INT(tr_split(&ts, &val, hold, &nhold, &by_rows), TK_OK);
	for (int i = 0; i < 12; i++)
		CHECK_EQ_INT(hold[i], i < 4 ? TR_TRAIN : i < 8 ? TR_HOLD : TR_VALID);
	CHECK(nhold == 4 && ts.tasks[2].valid && !ts.tasks[0].valid);
	int nkept;
	tr_subsample(&ts, hold, 0.5, 3, &nkept);
	int ntr = 0, nva = 0, nout = 0;
	for (int i = 0; i < 12; i++) {
		ntr += hold[i] == TR_TRAIN;
		nva += hold[i] == TR_VALID;
		nout += hold[i] == TR_OUT;
		CHECK(i < 4 || i >= 8 || hold[i] == TR_HOLD); /* the holdout stays */
	}
	CHECK(nkept == 4 && ntr + nva == 4 && nout == 4);
	tr_split_opts valbad = { 0, NULL, 0, 1, bad, 1 };
	CHECK_EQ_INT(tr_split(&ts, &valbad, hold, &nhold, &by_rows), TK_EINVAL);
	CHECK(strstr(tk_errmsg(), "validation task dense:m=9") != NULL);
	const char *v2[] = { "dense:m=0", "dense:m=2" };
	tr_split_opts valall = { 0, names, 1, 1, v2, 2 };
	CHECK_EQ_INT(tr_split(&ts, &valall, hold, &nhold, &by_rows), TK_EINVAL);
	CHECK(strstr(tk_errmsg(), "or validates") != NULL);
	for (int t = 0; t < 3; t++)
		ts.tasks[t].holdout = ts.tasks[t].valid = 0;

	memset(hold, 0, sizeof hold);
	hold[4] = hold[5] = 1;
	tr_part pt;
	CHECK_EQ_INT(tr_part_build(&ts, y, hold, 0, 2, &pt), TK_OK);
	CHECK(pt.n == 10 && pt.ngroup == 3 && pt.group[0] == 4 && pt.group[1] == 2 && pt.group[2] == 4);
	CHECK(pt.x[0] == 0 && pt.x[1] == 0);        /* row 0 has 1 feature: padded */
	CHECK(pt.x[2] == 1 && pt.x[3] == 100);
	CHECK(pt.x[8] == 6 && pt.y[4] == y[6]);     /* rows 4 and 5 left out */
	/* tr_eval_tasks: the rows of the tasks given a weight, as if alone */
	for (int i = 0; i < pt.n; i++)
		pt.p[i] = (float)(i % 3);
	CHECK(pt.task[4] == pt.task[5] && pt.task[3] != pt.task[4] && pt.task[6] != pt.task[4]);
	double wt[3] = { 0, 0, 0 };
	cm_metrics one, alone;
	CHECK_EQ_INT(tr_eval_tasks(&pt, wt, &one), TK_OK);
	CHECK_EQ_INT(one.n, 0);
	wt[pt.task[4]] = 2;
	CHECK_EQ_INT(tr_eval_tasks(&pt, wt, &one), TK_OK);
	CHECK_EQ_INT(cm_metrics_compute(2, pt.task + 4, pt.y + 4, pt.lat + 4, pt.p + 4, NULL, &alone),
	             TK_OK);
	CHECK(one.n == 2 && one.ntask == 1);
	CHECK_NEAR(one.rmse, alone.rmse, 1e-12);
	CHECK_NEAR(one.top1, alone.top1, 1e-12);
	CHECK_NEAR(one.mse_d, alone.mse_d, 1e-12);
	tr_part_free(&pt);

	/* tr_normalise: the best is 1, nothing positive gives zeros */
	float thr[3] = { 2, 8, 0 }, z[3] = { 0, 0, 0 }, out[3];
	tr_normalise(thr, 3, out);
	CHECK(out[0] == 0.25f && out[1] == 1 && out[2] == 0);
	tr_normalise(z, 3, out);
	CHECK(out[0] == 0 && out[1] == 0 && out[2] == 0);
	tr_set_free(&ts);
	CHECK(ts.n == 0 && ts.tasks == NULL);
}

/* The validity classifier's metrics, by hand: 6 rows, 3 valid. */
TEST(metrics_classify_by_hand)
{
	float y[] = { 0.5f, 1, 0, 0, 0.2f, 0 };
	float p[] = { 0.9f, 0.4f, 0.6f, 0.1f, 0.7f, 0.2f };
	cm_class_metrics m;
	CHECK_EQ_INT(cm_metrics_classify(6, y, p, &m), TK_OK);
	CHECK_EQ_INT(m.n, 6);
	CHECK_EQ_INT(m.valid, 3);
	/* predicted valid: rows 0, 2, 4 (2 right); invalid 1, 3, 5 (3, 5 right) */
	CHECK_NEAR(m.accuracy, 4.0 / 6, 1e-12);
	CHECK_NEAR(m.precision, 2.0 / 3, 1e-12);
	CHECK_NEAR(m.recall, 2.0 / 3, 1e-12);
	/* pairs valid > invalid: 0.9 beats 3, 0.4 beats 2 (0.1, 0.2), 0.7 beats 3: 8 of 9 */
	CHECK_NEAR(m.auc, 8.0 / 9, 1e-12);
	float same[] = { 1, 1, 1, 1, 1, 1 };
	CHECK_EQ_INT(cm_metrics_classify(6, same, p, &m), TK_OK);
	CHECK(isnan(m.auc)); /* one class: no AUC */
	CHECK_EQ_INT(cm_metrics_classify(0, y, p, &m), TK_OK);
	CHECK(isnan(m.accuracy));
}

/* The ml2 row: V learns which rows are invalid (x0 < 0.3), P ranks the
 * valid ones (y rises with x1), A reads a hidden feature that says what P
 * cannot see; the payload round-trips; importance names A's columns. */
TEST(cost_ml2_stages)
{
	enum { N = 200, D = 2, DH = 1 };
	static float x[N * D], xh[N * DH], y[N];
	tk_rng r;
	tk_rng_seed(&r, 9, 1);
	for (int i = 0; i < N; i++) {
		float a = (float)tk_rng_unif(&r), b = (float)tk_rng_unif(&r), h = (float)tk_rng_unif(&r);
		x[i * D] = a;
		x[i * D + 1] = b;
		xh[i] = h;
		y[i] = a < 0.3f ? 0 : 0.2f * b + 0.8f * h;
	}
	const cm_kind *k = cm_find("ml2");
	CHECK(k && (k->flags & CM_HIDDEN) && k->screen && k->pick);
	cm_params p;
	cm_params_default(&p);
	p.rank = 0;
	p.rounds = 60;
	cm_data d = { .n = N, .d = D, .x = x, .y = y, .dh = DH, .xh = xh };
	cm_model *m = NULL, *m2 = NULL;
	CHECK_EQ_INT(cm_fit(k, &p, &d, NULL, &m), TK_OK);
	if (!m)
		return;
	float pv[2], q[2], pa[2], pp[2];
	float probe[] = { 0.1f, 0.5f, 0.8f, 0.5f };
	float hid[] = { 0.9f, 0.1f };
	CHECK_EQ_INT(cm_screen(m, probe, 2, D, pv), TK_OK);
	CHECK(pv[0] < 0.5f && pv[1] > 0.5f);
	CHECK_EQ_INT(cm_pick(m, probe + 2, 1, D, hid, DH, pa), TK_OK);
	CHECK_EQ_INT(cm_pick(m, probe + 2, 1, D, hid + 1, DH, pa + 1), TK_OK);
	CHECK(pa[0] > pa[1] + 0.3f); /* A sees the hidden feature */
	CHECK_EQ_INT(cm_pick(m, probe + 2, 1, D, NULL, 0, pp), TK_OK);
	CHECK_EQ_INT(cm_predict(m, probe + 2, 1, D, NULL, q), TK_OK);
	CHECK_NEAR(pp[0], q[0], 0); /* without hidden features A is P */
	CHECK_EQ_INT(cm_clone(m, &m2), TK_OK);
	if (m2) {
		float pv2[2];
		CHECK_EQ_INT(cm_screen(m2, probe, 2, D, pv2), TK_OK);
		CHECK_NEAR(pv2[0], pv[0], 1e-6);
		CHECK_NEAR(pv2[1], pv[1], 1e-6);
	}
	int nd = 0;
	double *gain = NULL;
	CHECK_EQ_INT(cm_importance(m, &nd, &gain), TK_OK);
	CHECK_EQ_INT(nd, D + DH);
	if (gain)
		CHECK(gain[2] > gain[0] && gain[2] > gain[1]); /* the hidden column matters most */
	free(gain);
	mf_meta meta;
	memset(&meta, 0, sizeof meta);
	CHECK_EQ_INT(cm_describe(m, &meta), TK_OK);
	CHECK_EQ_STR(mf_get(&meta, "ml2_models"), "P+V+A");
	/* a classifier cannot come from a model without CM_CLASSIFY */
	cm_model *bad = NULL;
	p.validity = 1;
	CHECK_EQ_INT(cm_fit(cm_find("rfei"), &p, &d, NULL, &bad), TK_EINVAL);
	CHECK(bad == NULL);
	/* a corrupt payload is refused */
	unsigned char junk[16] = "ML2";
	CHECK_EQ_INT(cm_load(k, junk, sizeof junk, &bad), TK_ECORRUPT);
	cm_free(m);
	cm_free(m2);
}

/* The built-in models: each decodes (checksum, kind, features) and the
 * nearest follows CPU, then vendor and ISA, then ISA, the most rows first. */
TEST(builtin_models_decode_and_nearest)
{
	int near = -1;
	CHECK(cm_nbuiltins > 0);
	for (int i = 0; i < cm_nbuiltins; i++) {
		const cm_builtin *b = &cm_builtins[i];
		mf_meta meta;
		cm_model *m = NULL;
		CHECK_EQ_INT(cm_decode(b->name, b->data, b->len, &meta, &m), TK_OK);
		CHECK(m && !strcmp(mf_get(&meta, "kind"), b->kind));
		CHECK(!strcmp(mf_get(&meta, "feature"), b->feature));
		cm_free(m);
		/* one byte changed is refused by the checksum, never loaded */
		unsigned char *bad = malloc(b->len);
		memcpy(bad, b->data, b->len);
		bad[b->len - 10] ^= 1;
		CHECK_EQ_INT(cm_decode(b->name, bad, b->len, &meta, &m), TK_ECORRUPT);
		CHECK(m == NULL);
		free(bad);
	}
	for (int i = 0; i < cm_nbuiltins; i++) {
		const cm_builtin *b = &cm_builtins[i], *n = cm_builtin_nearest(b->cpu, b->isa, &near);
		CHECK_EQ_INT(near, CM_NEAR_CPU);
		CHECK(n == b);
	}
	/* another CPU of a vendor: that vendor's model of the ISA with the most rows */
	const cm_builtin *v = cm_builtin_nearest("AMD EPYC (family 99 model 1)", "avx2", &near);
	CHECK(v && near == CM_NEAR_VENDOR && !strncmp(v->cpu, "AMD ", 4) && !strcmp(v->isa, "avx2"));
	for (int i = 0; i < cm_nbuiltins; i++)
		if (!strncmp(cm_builtins[i].cpu, "AMD ", 4) && !strcmp(cm_builtins[i].isa, "avx2"))
			CHECK(cm_builtins[i].rows <= v->rows);
	v = cm_builtin_nearest("Acme CPU (family 1 model 1)", "sse2", &near);
	CHECK(v && near == CM_NEAR_ISA && !strcmp(v->isa, "sse2"));
	CHECK(cm_builtin_nearest("Acme CPU", "neon", &near) == NULL);
	CHECK_EQ_INT(near, CM_NEAR_NONE);
}

UNIT_MAIN(cost_table_names_and_flags, cost_default_features, cost_rfei_fit_dist_and_reload, cost_xgb_update_and_margin,
          cost_xgb_warm_start,
          train_select_active, train_labels_split_parts, xgb_rank_learns_and_reloads, xgb_base_margin, xgb_reg_learns_and_reloads, xgb_rounds_and_early_stop,
          xgb_groups_rank_within_task, xgb_rejects_bad_data, metrics_hand_computed,
          metrics_ties_and_edges, ndcg_hand_computed, modelfile_round_trip, modelfile_corruption, modelfile_load_error_message,
          store_training_rows_and_models, store_training_rows_one_per_config,
          metrics_classify_by_hand, cost_ml2_stages, builtin_models_decode_and_nearest)
