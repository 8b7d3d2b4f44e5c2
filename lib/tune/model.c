/*
 * model: the cost model of the tuning loop: feature vectors of
 * configurations (cached by index, as AutoTVM does, cleared at 100000
 * entries) and an XGBoost model per task, fit on the throughputs measured so
 * far normalised by their maximum, with AutoTVM's settings: rank:pairwise
 * (or squared error), early stopping after 20 rounds without improvement on
 * the training set itself.
 *
 * Transfer learning, as AutoTVM's XGBoostCostModel with a base model: the
 * base model is trained on history records (other runs, same hardware,
 * same operator); the task's own model is then fit on top of the base
 * model's output weighted by 1 / 2^(n / 64), n the task's records so far,
 * and predicts on top of it the same way, until that weight falls under
 * 0.05 and the base model is dropped. Before the first record the plan
 * comes from the base model alone.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "store/store.h"
#include "tune_int.h"

#define FCACHE_MAX 100000
#define BASE_CLOSE 0.05

#define RFEI_TREES 10       /* bagged boosters of the rfei ensemble */

struct tn_model {
	xgb_model *bst;                 /* xgb */
	xgb_model *ens[RFEI_TREES];     /* rfei: one per bootstrap resample */
	int nens;
};

/* ---- feature cache ------------------------------------------------------- */

void fcache_free(tn_fcache *f)
{
	free(f->key);
	free(f->val);
	memset(f, 0, sizeof *f);
}

static uint64_t mix(uint64_t x)
{
	x ^= x >> 31;
	x *= 0x9e3779b97f4a7c15ULL;
	x ^= x >> 29;
	return x;
}

/* The slot of index idx (empty if absent). */
static int64_t fslot(const tn_fcache *f, uint64_t idx)
{
	int64_t i = (int64_t)(mix(idx) & (uint64_t)(f->cap - 1));
	while (f->key[i] && f->key[i] != idx + 1)
		i = (i + 1) & (f->cap - 1);
	return i;
}

static int fcache_init(tn_fcache *f, int d)
{
	f->d = d;
	f->cap = 4096;
	f->n = 0;
	free(f->key);
	free(f->val);
	f->key = calloc((size_t)f->cap, sizeof *f->key);
	f->val = malloc(sizeof *f->val * (size_t)f->cap * (size_t)(d > 0 ? d : 1));
	if (!f->key || !f->val)
		return tk_seterr(TK_ENOMEM, "out of memory for the feature cache");
	return TK_OK;
}

static int fcache_grow(tn_fcache *f)
{
	tn_fcache g = { 0 };
	g.d = f->d;
	g.cap = f->cap * 2;
	g.key = calloc((size_t)g.cap, sizeof *g.key);
	g.val = malloc(sizeof *g.val * (size_t)g.cap * (size_t)(f->d > 0 ? f->d : 1));
	if (!g.key || !g.val) {
		fcache_free(&g);
		return tk_seterr(TK_ENOMEM, "out of memory for the feature cache");
	}
	for (int64_t i = 0; i < f->cap; i++)
		if (f->key[i]) {
			int64_t j = fslot(&g, f->key[i] - 1);
			g.key[j] = f->key[i];
			memcpy(&g.val[j * g.d], &f->val[i * f->d], sizeof(float) * (size_t)f->d);
			g.n++;
		}
	fcache_free(f);
	*f = g;
	return TK_OK;
}

int model_features(tn_ctx *C, tn_task *t, const sp_config *c, int n, float *out, int *dp)
{
	int rc;
	if (!t->fc.key) {
		int d;
		if ((rc = feat_length(C->feat, t->space, &d)) || (rc = fcache_init(&t->fc, d)))
			return rc;
	}
	if (t->fc.n + n > FCACHE_MAX) {
		if ((rc = fcache_init(&t->fc, t->fc.d)))
			return rc;
	}
	int d = t->fc.d;
	*dp = d;
	for (int i = 0; i < n; i++) {
		uint64_t idx = sp_index(t->space, &c[i]);
		int64_t s = fslot(&t->fc, idx);
		if (!t->fc.key[s]) {
			if (2 * (t->fc.n + 1) > t->fc.cap) {
				if ((rc = fcache_grow(&t->fc)))
					return rc;
				s = fslot(&t->fc, idx);
			}
			if ((rc = feat_extract(C->feat, t->space, &c[i], &t->fc.val[s * d], NULL)))
				return rc;
			t->fc.key[s] = idx + 1;
			t->fc.n++;
		}
		memcpy(&out[(size_t)i * (size_t)d], &t->fc.val[s * d], sizeof(float) * (size_t)d);
	}
	return TK_OK;
}

/* ---- the model ------------------------------------------------------------- */

int model_new(tn_ctx *C, tn_task *t, tn_model **out)
{
	*out = calloc(1, sizeof **out);
	return *out ? TK_OK : tk_seterr(TK_ENOMEM, "out of memory");
}

static void ens_free(tn_model *m)
{
	for (int i = 0; i < m->nens; i++)
		xgb_free(m->ens[i]);
	m->nens = 0;
}

void model_free(tn_model *m)
{
	if (!m)
		return;
	xgb_free(m->bst);
	ens_free(m);
	free(m);
}

/* One booster with AutoTVM's settings on the task's records: single-threaded,
 * --xgb-rounds rounds, or else early stopping on the training set. */
static int fit_one(tn_ctx *C, const char *objective, uint64_t seed, const xgb_data *train,
                   xgb_model **out)
{
	xgb_params p;
	xgb_params_default(&p, objective);
	p.seed = seed;
	p.nthread = 1;
	if (C->o->xgb_rounds > 0) {
		p.rounds = C->o->xgb_rounds;
		p.early_stop = 0;
	} else {
		p.early_stop = 20;
	}
	return xgb_train(&p, train, p.early_stop ? train : NULL, out);
}

/* AdaTune's surrogate: RFEI_TREES boosters, each fit (squared error, so
 * that predictions are normalised throughputs) on a bootstrap resample of
 * the n rows, drawn from the task's generator. */
static int ens_fit(tn_ctx *C, tn_task *t, tn_model *m, const float *x, const float *y, int n, int d)
{
	float *bx = malloc(sizeof *bx * (size_t)n * (size_t)d), *by = malloc(sizeof *by * (size_t)n);
	int rc = TK_OK;
	if (!bx || !by) {
		rc = tk_seterr(TK_ENOMEM, "out of memory");
		goto done;
	}
	ens_free(m);
	for (int k = 0; k < RFEI_TREES && !rc; k++) {
		for (int i = 0; i < n; i++) {
			uint32_t j = tk_rng_below(&t->rng, (uint32_t)n);
			memcpy(&bx[(size_t)i * (size_t)d], &x[(size_t)j * (size_t)d], sizeof *bx * (size_t)d);
			by[i] = y[j];
		}
		xgb_data train = { .n = n, .d = d, .x = bx, .y = by };
		if (!(rc = fit_one(C, "reg:squarederror", C->o->seed + (uint64_t)k, &train,
		                   &m->ens[k])))
			m->nens++;
	}
done:
	free(bx);
	free(by);
	return rc;
}

/* The base model's output on n rows, weighted by t->base_w. */
static int base_margin(tn_task *t, const float *x, int n, int d, float *margin)
{
	int rc = xgb_predict(t->base, x, n, d, margin);
	for (int i = 0; !rc && i < n; i++)
		margin[i] *= (float)t->base_w;
	return rc;
}

int model_fit(tn_ctx *C, tn_task *t, tn_model *m)
{
	int d, rc;
	float *x = NULL, *y = NULL, *margin = NULL;
	if (t->nx == 0)
		return TK_OK;
	if ((rc = feat_length(C->feat, t->space, &d)))
		return rc;
	x = malloc(sizeof *x * (size_t)t->nx * (size_t)d);
	y = malloc(sizeof *y * (size_t)t->nx);
	if (!x || !y) {
		rc = tk_seterr(TK_ENOMEM, "out of memory");
		goto done;
	}
	if ((rc = model_features(C, t, t->xc, t->nx, x, &d)))
		goto done;
	float ymax = 0;
	for (int i = 0; i < t->nx; i++)
		if (t->ys[i] > ymax)
			ymax = t->ys[i];
	for (int i = 0; i < t->nx; i++)
		y[i] = ymax > 0 ? t->ys[i] / ymax : 0;
	if (!strcmp(C->o->model, "rfei")) {
		rc = ens_fit(C, t, m, x, y, t->nx, d);
		goto done;
	}
	unsigned group = (unsigned)t->nx;
	xgb_data train = { .n = t->nx, .d = d, .x = x, .y = y, .ngroup = 1, .group = &group };
	if (t->base) {
		t->base_w = pow(2, -t->nx / 64.0);
		if (t->base_w < BASE_CLOSE) {
			xgb_free(t->base);
			t->base = NULL;
		} else if (!(margin = malloc(sizeof *margin * (size_t)t->nx))) {
			rc = tk_seterr(TK_ENOMEM, "out of memory");
			goto done;
		} else if ((rc = base_margin(t, x, t->nx, d, margin))) {
			goto done;
		}
		train.margin = margin;
	}
	xgb_model *bst;
	if ((rc = fit_one(C, strcmp(C->o->objective, "reg") ? "rank:pairwise" : "reg:squarederror",
	                  C->o->seed, &train, &bst)))
		goto done;
	xgb_free(m->bst);
	m->bst = bst;
done:
	free(x);
	free(y);
	free(margin);
	return rc;
}

int model_predict_dist(tn_ctx *C, tn_task *t, tn_model *m, const sp_config *c, int n,
                       float *mu, float *sd)
{
	int d, rc;
	if (m->nens == 0) {
		for (int i = 0; i < n; i++)
			mu[i] = sd[i] = 0;
		return TK_OK;
	}
	if ((rc = feat_length(C->feat, t->space, &d)))
		return rc;
	float *x = malloc(sizeof *x * (size_t)n * (size_t)d);
	float *p = malloc(sizeof *p * (size_t)n * (size_t)m->nens); /* model k's at p[k*n] */
	if (!x || !p)
		rc = tk_seterr(TK_ENOMEM, "out of memory");
	else if (!(rc = model_features(C, t, c, n, x, &d)))
		rc = xgb_predict_many(m->ens, m->nens, x, n, d, NULL, p);
	for (int i = 0; !rc && i < n; i++) {
		double s1 = 0, s2 = 0;
		for (int k = 0; k < m->nens; k++) {
			double v = p[(size_t)k * (size_t)n + i];
			s1 += v;
			s2 += v * v;
		}
		double mean = s1 / m->nens, var = s2 / m->nens - mean * mean;
		mu[i] = (float)mean;
		sd[i] = (float)(var > 0 ? sqrt(var) : 0);
	}
	free(x);
	free(p);
	return rc;
}

int model_predict(tn_ctx *C, tn_task *t, tn_model *m, const sp_config *c, int n, float *out)
{
	int d, rc;
	if (!strcmp(C->o->model, "rfei")) {
		/* expected positive improvement over the best measured: 1 in the
		 * normalised throughputs the ensemble learnt */
		float *sd = malloc(sizeof *sd * (size_t)(n > 0 ? n : 1));
		if (!sd)
			return tk_seterr(TK_ENOMEM, "out of memory");
		if (!(rc = model_predict_dist(C, t, m, c, n, out, sd)))
			for (int i = 0; i < n; i++)
				out[i] = (float)sr_ei(out[i], sd[i], 1.0);
		free(sd);
		return rc;
	}
	if (!m->bst && !t->base) {
		for (int i = 0; i < n; i++)
			out[i] = 0;
		return TK_OK;
	}
	if ((rc = feat_length(C->feat, t->space, &d)))
		return rc;
	float *x = malloc(sizeof *x * (size_t)n * (size_t)d);
	float *margin = t->base && m->bst ? malloc(sizeof *margin * (size_t)n) : NULL;
	if (!x || (t->base && m->bst && !margin))
		rc = tk_seterr(TK_ENOMEM, "out of memory");
	else if ((rc = model_features(C, t, c, n, x, &d)))
		;
	else if (!m->bst)
		rc = xgb_predict(t->base, x, n, d, out); /* nothing measured yet */
	else if (!margin || !(rc = base_margin(t, x, n, d, margin)))
		rc = xgb_predict_margin(m->bst, x, n, d, margin, out);
	free(x);
	free(margin);
	return rc;
}

/* ---- transfer learning: the base model ---------------------------------------- */

typedef struct hist_task {
	char *key;
	ms_task *mt;          /* NULL: not a template task, its records are skipped */
	int d;
	int n, cap;
	float *x, *y;
} hist_task;

typedef struct history {
	tn_ctx *C;
	hist_task *v;
	int n, cap;
	int rc;
} history;

static void history_free(history *H)
{
	for (int i = 0; i < H->n; i++) {
		free(H->v[i].key);
		ms_task_free(H->v[i].mt);
		free(H->v[i].x);
		free(H->v[i].y);
	}
	free(H->v);
}

/* The history task of key (records come ordered by task: the last one or
 * a new one). NULL with H->rc set on error. */
static hist_task *hist_task_of(history *H, const char *key)
{
	if (H->n && !strcmp(H->v[H->n - 1].key, key))
		return &H->v[H->n - 1];
	if (H->n == H->cap) {
		int cap = H->cap ? 2 * H->cap : 16;
		hist_task *v = realloc(H->v, sizeof *v * (size_t)cap);
		if (!v) {
			H->rc = tk_seterr(TK_ENOMEM, "out of memory");
			return NULL;
		}
		H->v = v;
		H->cap = cap;
	}
	hist_task *h = &H->v[H->n++];
	memset(h, 0, sizeof *h);
	if (!(h->key = strdup(key))) {
		H->rc = tk_seterr(TK_ENOMEM, "out of memory");
		return NULL;
	}
	if (ms_task_open(key, 0, &h->mt) || feat_length(H->C->feat, h->mt->space, &h->d)) {
		ms_task_free(h->mt);
		h->mt = NULL; /* imported or foreign task, or features that do not apply */
	}
	return h;
}

static int got_history(void *p, const store_rec *rec)
{
	history *H = p;
	hist_task *h = hist_task_of(H, rec->task);
	sp_config c;
	if (!h)
		return 1;
	if (!h->mt || sp_parse(h->mt->space, rec->config, &c))
		return 0;
	if (h->n == h->cap) {
		int cap = h->cap ? 2 * h->cap : 64;
		float *x = realloc(h->x, sizeof *x * (size_t)cap * (size_t)h->d);
		if (x)
			h->x = x;
		float *y = x ? realloc(h->y, sizeof *y * (size_t)cap) : NULL;
		if (!y) {
			H->rc = tk_seterr(TK_ENOMEM, "out of memory");
			return 1;
		}
		h->y = y;
		h->cap = cap;
	}
	if (feat_extract(H->C->feat, h->mt->space, &c, &h->x[(size_t)h->n * (size_t)h->d], NULL))
		return 0;
	double f = h->mt->prog->flops;
	h->y[h->n++] = rec->valid && rec->median > 0 ? (float)(f > 0 ? f / rec->median : 1 / rec->median)
	                                              : 0;
	return 0;
}

/* Train t's base model on the history tasks of its operator and feature
 * length; *used receives the rows (0: too few, no base model). */
static int base_train(tn_ctx *C, tn_task *t, const history *H, int64_t *used)
{
	int d, n = 0, ngroup = 0, rc;
	*used = 0;
	if (!t->mt || feat_length(C->feat, t->space, &d))
		return TK_OK;
	for (int i = 0; i < H->n; i++)
		if (H->v[i].mt && H->v[i].d == d && H->v[i].n > 0 &&
		    !strcmp(H->v[i].mt->prog->op, t->mt->prog->op)) {
			n += H->v[i].n;
			ngroup++;
		}
	if (n < HISTORY_MIN)
		return TK_OK;
	float *x = malloc(sizeof *x * (size_t)n * (size_t)d), *y = malloc(sizeof *y * (size_t)n);
	unsigned *group = malloc(sizeof *group * (size_t)ngroup);
	if (!x || !y || !group) {
		rc = tk_seterr(TK_ENOMEM, "out of memory");
		goto done;
	}
	int k = 0, g = 0;
	for (int i = 0; i < H->n; i++) {
		const hist_task *h = &H->v[i];
		if (!h->mt || h->d != d || h->n == 0 || strcmp(h->mt->prog->op, t->mt->prog->op))
			continue;
		float ymax = 0;
		for (int j = 0; j < h->n; j++)
			ymax = h->y[j] > ymax ? h->y[j] : ymax;
		memcpy(&x[(size_t)k * (size_t)d], h->x, sizeof *x * (size_t)h->n * (size_t)d);
		for (int j = 0; j < h->n; j++)
			y[k + j] = ymax > 0 ? h->y[j] / ymax : 0; /* normalised per task */
		k += h->n;
		group[g++] = (unsigned)h->n;
	}
	xgb_params p;
	xgb_params_default(&p, strcmp(C->o->objective, "reg") ? "rank:pairwise" : "reg:squarederror");
	p.seed = C->o->seed;
	p.nthread = 1;
	p.early_stop = 20;
	xgb_data train = { .n = n, .d = d, .x = x, .y = y, .ngroup = ngroup, .group = group };
	if (!(rc = xgb_train(&p, &train, &train, &t->base))) {
		t->base_w = 1;
		*used = n;
	}
done:
	free(x);
	free(y);
	free(group);
	return rc;
}

int model_load_history(tn_ctx *C, tn_task *const *tasks, int ntask, const char *path,
                       const char *hw_key, int64_t *nrec)
{
	tk_store *hs;
	history H = { C, NULL, 0, 0, TK_OK };
	int rc, total = 0;
	*nrec = 0;
	if ((rc = store_open(path, STORE_READONLY, &hs)))
		return rc;
	rc = store_hw_records(hs, hw_key, got_history, &H);
	if (rc == 1)
		rc = H.rc;
	for (int i = 0; i < H.n; i++)
		total += H.v[i].n;
	for (int i = 0; !rc && i < ntask; i++) {
		int64_t used;
		if (!(rc = base_train(C, tasks[i], &H, &used)))
			*nrec += used;
	}
	if (!rc && *nrec == 0)
		rc = tk_seterr(TK_EINVAL, "%s: too little history for transfer: %d usable records on "
		               "hardware %s, fewer than %d of any tuned task's operator", path, total,
		               hw_key, HISTORY_MIN);
	history_free(&H);
	store_close(hs);
	return rc;
}
