/*
 * xgb: gradient-boosted trees through the libxgboost C API with AutoTVM's
 * defaults (depth 3, eta 0.3, gamma 1e-4, pairwise ranking). Training adds
 * one round at a time; with a validation set it scores the validation
 * predictions after every round (XGBoost keeps them cached, so a round costs
 * one new tree) and stops after early_stop rounds without improvement,
 * keeping only the rounds up to the best one (the booster is sliced), so
 * that prediction, saving and xgb_rounds() all see the same model. The
 * score is ours, not an XGBoost eval_metric: XGBoost 1.7's "ndcg" and
 * "map" cast labels to integers, which turns normalised throughputs in
 * [0, 1] into "the best of the task or nothing". We use NDCG with linear
 * gains averaged over groups (cm_ndcg, metrics.h) for ranking objectives,
 * and RMSE for the others. XGBoost's console output is silenced.
 *
 * Shapes: N = rows, D = features per row, G = groups (tasks).
 */
#include "xgb.h"

#include <assert.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <xgboost/c_api.h>

#include "../util/util.h"
#include "metrics.h"

struct xgb_model {
	BoosterHandle h;
	int rounds;       /* boosting rounds kept */
	int d;            /* features per row the booster was trained on */
};

void xgb_params_default(xgb_params *p, const char *objective)
{
	assert(p);
	memset(p, 0, sizeof *p);
	p->objective = objective ? objective : "rank:pairwise";
	p->max_depth = 3;
	p->eta = 0.3;
	p->gamma = 1e-4;
	p->min_child_weight = 1;
	p->subsample = 1;
	p->lambda = 1;
	p->alpha = 0;
	p->rounds = 8000;
	p->early_stop = 50;
	p->nthread = 0;
	p->seed = 1;
	p->num_parallel_tree = 1;
}

void xgb_params_set(xgb_params *p, const char *objective, uint64_t seed, int nthread,
                    const char *tree_method, int rounds, int early_stop)
{
	xgb_params_default(p, objective);
	p->seed = seed;
	p->nthread = nthread;
	p->tree_method = tree_method;
	p->early_stop = early_stop;
	p->rounds = rounds > 0 ? rounds : early_stop ? p->rounds : XGB_ROUNDS_NOVALID;
}

/* The TK_EIO (or rc) error for a failed XGBoost call named what, with the
 * first line of XGBoost's message (the rest is its stack trace), less its
 * "[hh:mm:ss] file.cc:line: " prefix. */
static int xgb_err(int rc, const char *what)
{
	const char *e = XGBGetLastError(), *c;
	if (!e || !*e)
		e = "failed";
	if (e[0] == '[' && (c = strstr(e, "] ")) && c - e < 16)
		e = c + 2;
	if ((c = strstr(e, ": ")) && c - e < 200 && memchr(e, ':', (size_t)(c - e)) &&
	    !memchr(e, ' ', (size_t)(c - e)) && !memchr(e, '\n', (size_t)(c - e)))
		e = c + 2; /* "src/learner.cc:123: " */
	int n = (int)strcspn(e, "\n");
	while (n > 0 && (e[n - 1] == ' ' || e[n - 1] == '\r'))
		n--;
	return tk_seterr(rc, "xgboost: %s: %.*s", what, n, e);
}

/* XGBoost's console messages go nowhere: errors reach the caller as
 * return codes. */
static void xgb_log_discard(const char *msg)
{
	(void)msg;
}

/* Silence XGBoost's console (warnings on stderr included); once per process. */
static void xgb_quiet(void)
{
	static int done;
	if (!done) {
		XGBSetGlobalConfig("{\"verbosity\": 0}");
		XGBRegisterLogCallback(xgb_log_discard);
		done = 1;
	}
}

/* Check that data is consistent: n > 0 rows of d > 0 features (d equal to
 * want_d unless want_d is 0), groups summing to n. */
static int data_check(const xgb_data *a, int want_d, const char *name)
{
	if (!a || a->n <= 0 || a->d <= 0 || !a->x || !a->y)
		return tk_seterr(TK_EINVAL, "xgboost: empty %s set", name);
	if (want_d && a->d != want_d)
		return tk_seterr(TK_EINVAL, "xgboost: %s set has %d features, training set %d", name,
		                 a->d, want_d);
	if (a->ngroup < 0 || (a->ngroup > 0 && !a->group))
		return tk_seterr(TK_EINVAL, "xgboost: bad groups in the %s set", name);
	long long sum = 0;
	for (int i = 0; i < a->ngroup; i++)
		sum += a->group[i];
	if (a->ngroup > 0 && sum != a->n)
		return tk_seterr(TK_EINVAL, "xgboost: %s groups cover %lld rows of %d", name, sum, a->n);
	return TK_OK;
}

/* A DMatrix of a: features x[N*D] (NaN would be missing; 0 is a value),
 * labels y[N], groups. */
static int dmat_new(const xgb_data *a, DMatrixHandle *out)
{
	DMatrixHandle m;
	*out = NULL;
	if (XGDMatrixCreateFromMat(a->x, (bst_ulong)a->n, (bst_ulong)a->d, NAN, &m))
		return xgb_err(TK_EIO, "cannot create a matrix");
	if (XGDMatrixSetFloatInfo(m, "label", a->y, (bst_ulong)a->n) ||
	    (a->ngroup > 0 && XGDMatrixSetUIntInfo(m, "group", a->group, (bst_ulong)a->ngroup)) ||
	    (a->margin && XGDMatrixSetFloatInfo(m, "base_margin", a->margin, (bst_ulong)a->n))) {
		int rc = xgb_err(TK_EIO, "cannot set labels");
		XGDMatrixFree(m);
		return rc;
	}
	*out = m;
	return TK_OK;
}

static int set_param(BoosterHandle h, const char *name, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int set_param(BoosterHandle h, const char *name, const char *fmt, ...)
{
	char v[64];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(v, sizeof v, fmt, ap);
	va_end(ap);
	if (XGBoosterSetParam(h, name, v)) {
		char what[128];
		snprintf(what, sizeof what, "parameter %s=%s", name, v);
		return xgb_err(TK_EINVAL, what);
	}
	return TK_OK;
}

static int set_params(BoosterHandle h, const xgb_params *p)
{
	int rc = TK_OK;
	if (!rc) rc = set_param(h, "verbosity", "0");
	if (!rc) rc = set_param(h, "objective", "%s", p->objective);
	if (!rc) rc = set_param(h, "max_depth", "%d", p->max_depth);
	if (!rc) rc = set_param(h, "eta", "%.17g", p->eta);
	if (!rc) rc = set_param(h, "gamma", "%.17g", p->gamma);
	if (!rc) rc = set_param(h, "min_child_weight", "%.17g", p->min_child_weight);
	if (!rc) rc = set_param(h, "subsample", "%.17g", p->subsample);
	if (!rc) rc = set_param(h, "lambda", "%.17g", p->lambda);
	if (!rc) rc = set_param(h, "alpha", "%.17g", p->alpha);
	if (!rc) rc = set_param(h, "seed", "%llu", (unsigned long long)(p->seed & 0x7fffffff));
	if (!rc && p->nthread > 0) rc = set_param(h, "nthread", "%d", p->nthread);
	if (!rc && p->tree_method)
		rc = set_param(h, "tree_method", "%s", p->tree_method);
	if (!rc && p->num_parallel_tree > 1)
		rc = set_param(h, "num_parallel_tree", "%d", p->num_parallel_tree);
	return rc;
}

/* Predictions of every round so far on m (cached by XGBoost) into *out,
 * which points into the booster until its next call. */
static int predict_dmat(BoosterHandle h, DMatrixHandle m, const float **out, bst_ulong *len)
{
	static const char cfg[] = "{\"type\": 0, \"training\": false, \"iteration_begin\": 0,"
	                          " \"iteration_end\": 0, \"strict_shape\": false}";
	bst_ulong const *shape;
	bst_ulong dim;
	if (XGBoosterPredictFromDMatrix(h, m, cfg, &shape, &dim, out))
		return xgb_err(TK_EIO, "prediction failed");
	*len = dim > 0 ? shape[0] : 0;
	return TK_OK;
}

/* Validation score of predictions p[N] against v, larger is better:
 * cm_ndcg for ranking objectives, -RMSE otherwise. */
static double valid_score(const xgb_params *p, const xgb_data *v, const float *pred, void *work)
{
	if (strncmp(p->objective, "rank:", 5)) {
		double s = 0;
		for (int i = 0; i < v->n; i++)
			s += ((double)pred[i] - v->y[i]) * ((double)pred[i] - v->y[i]);
		return -sqrt(s / v->n);
	}
	return cm_ndcg(v->n, v->y, pred, v->ngroup, v->group, work);
}

int xgb_train(const xgb_params *p, const xgb_data *train, const xgb_data *valid,
              xgb_model **out)
{
	DMatrixHandle dm[2] = { NULL, NULL };
	BoosterHandle h = NULL;
	void *work = NULL;
	xgb_model *m = NULL;
	int rc, rounds, best = -1, done = 0;
	double best_score = -HUGE_VAL;

	assert(p && out);
	*out = NULL;
	if (!p->objective || p->rounds < 1 || p->max_depth < 0 || p->early_stop < 0)
		return tk_seterr(TK_EINVAL, "xgboost: bad parameters");
	if ((rc = data_check(train, 0, "training")) ||
	    (valid && (rc = data_check(valid, train->d, "validation"))))
		return rc;
	xgb_quiet();
	rounds = p->rounds;
	if (!valid && p->early_stop > 0 && rounds > XGB_ROUNDS_NOVALID)
		rounds = XGB_ROUNDS_NOVALID;
	if (valid && p->early_stop > 0) {
		if (!(work = malloc(cm_ndcg_work(valid->n)))) {
			rc = tk_seterr(TK_ENOMEM, "out of memory");
			goto out;
		}
	}
	if ((rc = dmat_new(train, &dm[0])) || (valid && (rc = dmat_new(valid, &dm[1]))))
		goto out;
	if (XGBoosterCreate(dm, valid ? 2 : 1, &h)) {
		rc = xgb_err(TK_EIO, "cannot create a booster");
		goto out;
	}
	if ((rc = set_params(h, p)))
		goto out;
	for (int i = 0; i < rounds; i++) {
		if (XGBoosterUpdateOneIter(h, i, dm[0])) {
			rc = xgb_err(TK_EIO, "training failed");
			goto out;
		}
		done = i + 1;
		if (!work)
			continue;
		const float *pred;
		bst_ulong len = 0;
		if ((rc = predict_dmat(h, dm[1], &pred, &len)))
			goto out;
		if (len != (bst_ulong)valid->n) {
			rc = tk_seterr(TK_EIO, "xgboost: %llu predictions for %d rows",
			               (unsigned long long)len, valid->n);
			goto out;
		}
		double s = valid_score(p, valid, pred, work);
		if (best < 0 || s > best_score + 1e-12) {
			best = i;
			best_score = s;
		} else if (i - best >= p->early_stop) {
			break;
		}
	}
	if (best >= 0 && best + 1 < done) {
		BoosterHandle cut;
		if (XGBoosterSlice(h, 0, best + 1, 1, &cut)) {
			rc = xgb_err(TK_EIO, "cannot keep the best rounds");
			goto out;
		}
		XGBoosterFree(h);
		h = cut;
		done = best + 1;
	}
	if (!(m = calloc(1, sizeof *m))) {
		rc = tk_seterr(TK_ENOMEM, "out of memory");
		goto out;
	}
	m->h = h;
	m->rounds = done;
	m->d = train->d;
	h = NULL;
	*out = m;
out:
	if (h)
		XGBoosterFree(h);
	for (int i = 0; i < 2; i++)
		if (dm[i])
			XGDMatrixFree(dm[i]);
	free(work);
	return rc;
}

int xgb_continue(xgb_model *m, const xgb_params *p, const xgb_data *train, int rounds)
{
	DMatrixHandle dm = NULL;
	int rc;
	assert(m && p && rounds >= 0);
	if (!p->objective)
		return tk_seterr(TK_EINVAL, "xgboost: bad parameters");
	if ((rc = data_check(train, m->d, "training")))
		return rc;
	xgb_quiet();
	if ((rc = dmat_new(train, &dm)) || (rc = set_params(m->h, p)))
		goto out;
	for (int i = 0; i < rounds; i++) {
		if (XGBoosterUpdateOneIter(m->h, m->rounds, dm)) {
			rc = xgb_err(TK_EIO, "training failed");
			goto out;
		}
		m->rounds++;
	}
out:
	if (dm)
		XGDMatrixFree(dm);
	return rc;
}

int xgb_predict(xgb_model *m, const float *x, int n, int d, float *out)
{
	return xgb_predict_margin(m, x, n, d, NULL, out);
}

int xgb_predict_margin(xgb_model *m, const float *x, int n, int d, const float *margin,
                       float *out)
{
	return xgb_predict_many(&m, 1, x, n, d, margin, out);
}

int xgb_predict_many(xgb_model *const *m, int nm, const float *x, int n, int d,
                     const float *margin, float *out)
{
	DMatrixHandle dm;
	const float *pred;
	bst_ulong len = 0;
	int rc = TK_OK;

	assert(m && nm >= 1 && (n == 0 || (x && out)));
	if (n == 0)
		return TK_OK;
	for (int k = 0; k < nm; k++)
		if (n < 0 || d != m[k]->d)
			return tk_seterr(TK_EINVAL, "xgboost: the model takes %d features per row, "
			                 "not %d", m[k]->d, d);
	/* One matrix for every model: making it costs more than a prediction. */
	if (XGDMatrixCreateFromMat(x, (bst_ulong)n, (bst_ulong)d, NAN, &dm))
		return xgb_err(TK_EIO, "cannot create a matrix");
	if (margin && XGDMatrixSetFloatInfo(dm, "base_margin", margin, (bst_ulong)n))
		rc = xgb_err(TK_EIO, "cannot set base margins");
	for (int k = 0; k < nm && !rc; k++) {
		rc = predict_dmat(m[k]->h, dm, &pred, &len);
		if (!rc && len != (bst_ulong)n)
			rc = tk_seterr(TK_EIO, "xgboost: %llu predictions for %d rows",
			               (unsigned long long)len, n);
		if (!rc)
			memcpy(out + (size_t)k * (size_t)n, pred, sizeof *out * (size_t)n);
	}
	XGDMatrixFree(dm);
	return rc;
}

int xgb_save(xgb_model *m, void **buf, size_t *len)
{
	const char *raw;
	bst_ulong n;

	assert(m && buf && len);
	*buf = NULL;
	*len = 0;
	if (XGBoosterSaveModelToBuffer(m->h, "{\"format\": \"ubj\"}", &n, &raw))
		return xgb_err(TK_EIO, "cannot save the model");
	if (!(*buf = malloc(n ? n : 1)))
		return tk_seterr(TK_ENOMEM, "out of memory");
	memcpy(*buf, raw, n);
	*len = n;
	return TK_OK;
}

/* ---- the payload's structure ------------------------------------------------
 *
 * libxgboost's UBJSON reader trusts the lengths and counts it reads: a
 * typed array whose count runs past the buffer makes it read past it
 * (SIGSEGV; tests/fuzz/found). A model file's checksum stops damage, not a
 * crafted payload, so xgb_load first walks the payload as UBJSON and
 * refuses any length, count or nesting that does not fit. */

#define UBJ_DEPTH 64

typedef struct ubj {
	const unsigned char *b;
	size_t n, at;
} ubj;

/* Bytes of a fixed-size value of marker m; 0 for a marker without one. */
static size_t ubj_size(int m)
{
	switch (m) {
	case 'i': case 'U': case 'C': return 1;
	case 'I': return 2;
	case 'l': case 'd': return 4;
	case 'L': case 'D': return 8;
	}
	return 0;
}

/* An integer (its marker, then big-endian bytes) into *v; 0 if malformed. */
static int ubj_int(ubj *u, int64_t *v)
{
	if (u->at >= u->n)
		return 0;
	int m = u->b[u->at++];
	size_t k = m == 'd' || m == 'D' || m == 'C' ? 0 : ubj_size(m);
	if (k == 0 || k > u->n - u->at)
		return 0;
	uint64_t x = m == 'i' ? (uint64_t)(int64_t)(int8_t)u->b[u->at] : 0;
	if (m != 'i')
		for (size_t i = 0; i < k; i++)
			x = x << 8 | u->b[u->at + i];
	if (m == 'I')
		x = (uint64_t)(int64_t)(int16_t)x;
	else if (m == 'l')
		x = (uint64_t)(int64_t)(int32_t)x;
	u->at += k;
	*v = (int64_t)x;
	return 1;
}

/* One value of marker m (0: read it first); 0 if it does not fit. */
static int ubj_value(ubj *u, int m, int depth)
{
	int64_t len;
	if (!m) {
		if (u->at >= u->n)
			return 0;
		m = u->b[u->at++];
	}
	if (m == 'Z' || m == 'N' || m == 'T' || m == 'F')
		return 1;
	if (ubj_size(m)) {
		if (ubj_size(m) > u->n - u->at)
			return 0;
		u->at += ubj_size(m);
		return 1;
	}
	if (m == 'S' || m == 'H') {
		if (!ubj_int(u, &len) || len < 0 || (uint64_t)len > u->n - u->at)
			return 0;
		u->at += (size_t)len;
		return 1;
	}
	if ((m != '[' && m != '{') || depth >= UBJ_DEPTH)
		return 0;
	int type = 0, obj = m == '{';
	int64_t count = -1;
	if (u->at < u->n && u->b[u->at] == '$') {
		if (u->n - u->at < 2)
			return 0;
		type = u->b[u->at + 1];
		u->at += 2;
		if (u->at >= u->n || u->b[u->at] != '#')
			return 0; /* a type comes with a count */
	}
	if (u->at < u->n && u->b[u->at] == '#') {
		u->at++;
		if (!ubj_int(u, &count) || count < 0)
			return 0;
		if (type && ubj_size(type)) {
			/* a typed run: count x the type's size, all of it inside */
			if ((uint64_t)count > (u->n - u->at) / ubj_size(type))
				return 0;
			if (!obj) {
				u->at += (size_t)count * ubj_size(type);
				return 1;
			}
		}
	}
	for (int64_t i = 0; count < 0 || i < count; i++) {
		if (count < 0) {
			if (u->at >= u->n)
				return 0;
			if (u->b[u->at] == (obj ? '}' : ']')) {
				u->at++;
				return 1;
			}
		}
		if (obj && (!ubj_int(u, &len) || len < 0 || (uint64_t)len > u->n - u->at))
			return 0;
		if (obj)
			u->at += (size_t)len;
		if (!ubj_value(u, type, depth + 1))
			return 0;
	}
	return 1;
}

/* 1 if buf[0..len) is one UBJSON value whose every length fits. */
static int ubj_fits(const void *buf, size_t len)
{
	ubj u = { buf, len, 0 };
	return ubj_value(&u, 0, 0) && u.at == len;
}

int xgb_load(const void *buf, size_t len, xgb_model **out)
{
	BoosterHandle h;
	bst_ulong d = 0;
	int rounds = 0, rc;

	assert(buf && out);
	*out = NULL;
	xgb_quiet();
	if (!ubj_fits(buf, len))
		return tk_seterr(TK_ECORRUPT, "xgboost: not a model (a length or count runs past its end)");
	if (XGBoosterCreate(NULL, 0, &h))
		return xgb_err(TK_EIO, "cannot create a booster");
	if (XGBoosterLoadModelFromBuffer(h, buf, (bst_ulong)len)) {
		rc = xgb_err(TK_ECORRUPT, "not a model");
	} else if (XGBoosterBoostedRounds(h, &rounds) || XGBoosterGetNumFeature(h, &d)) {
		rc = xgb_err(TK_ECORRUPT, "damaged model");
	} else if (d < 1 || rounds < 1) {
		rc = tk_seterr(TK_ECORRUPT, "xgboost: empty model");
	} else if ((rc = set_param(h, "verbosity", "0")) == TK_OK) {
		xgb_model *m = calloc(1, sizeof *m);
		if (!m) {
			rc = tk_seterr(TK_ENOMEM, "out of memory");
		} else {
			m->h = h;
			m->rounds = rounds;
			m->d = (int)d;
			*out = m;
			return TK_OK;
		}
	}
	XGBoosterFree(h);
	return rc;
}

int xgb_rounds(const xgb_model *m)
{
	assert(m);
	return m->rounds;
}

void xgb_free(xgb_model *m)
{
	if (!m)
		return;
	XGBoosterFree(m->h);
	free(m);
}

int xgb_importance(xgb_model *m, int *d, double **gain)
{
	bst_ulong nf = 0, dim = 0;
	const char **names = NULL;
	const bst_ulong *shape = NULL;
	const float *score = NULL;
	*d = m->d;
	if (!(*gain = calloc((size_t)(m->d > 0 ? m->d : 1), sizeof **gain)))
		return tk_seterr(TK_ENOMEM, "out of memory");
	if (XGBoosterFeatureScore(m->h, "{\"importance_type\": \"total_gain\"}", &nf, &names, &dim,
	                          &shape, &score)) {
		free(*gain);
		*gain = NULL;
		return xgb_err(TK_EIO, "feature importance");
	}
	/* features never split on are absent; the others are named f<index> */
	for (bst_ulong i = 0; i < nf; i++) {
		int k;
		if (names[i] && sscanf(names[i], "f%d", &k) == 1 && k >= 0 && k < m->d)
			(*gain)[k] = score[i];
	}
	return TK_OK;
}
