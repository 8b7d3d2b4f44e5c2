/*
 * ml2: the "ml2" row of the cost-model table, ML2Tuner's three XGBoost
 * models (Cha et al., ML2Tuner) behind one handle:
 *
 *   P  performance: ranks (or regresses) the visible features of the valid
 *      rows only (y > 0), AutoTVM's settings (the xgb row's fit);
 *   V  validity: a logistic classifier of valid (y > 0) against invalid on
 *      the visible features of every row (cm_params.validity);
 *   A  advanced: P's objective on the visible features of the valid rows
 *      followed by their hidden features (what compiling them decided,
 *      cm_data.xh), when the rows have them.
 *
 * predict is P's score, screen V's probability of valid (1 until both
 * classes were seen), pick A's score (P's when the rows had no hidden
 * features, or none are given). The tuner's explorer (lib/tune) uses them
 * through the CM_HIDDEN flag: P ranks, V filters, A picks the final batch.
 *
 * Shapes: N rows, D visible features, DH hidden features, NV valid rows.
 * Payload: "ML2\0", version 1, then for P, V, A a 32-bit length (0: no
 * such model) and the xgb row's payload, little-endian.
 */
#include <stdlib.h>
#include <string.h>

#include "cost.h"
#include "features/feature.h"

extern const cm_kind cm_xgb;

#define ML2_MAGIC "ML2"
#define ML2_VERSION 1

typedef struct ml2_state {
	cm_model *p, *v, *a;     /* v and a may be NULL */
	int dh;                  /* hidden features A was fit on (0: no A) */
} ml2_state;

static void ml2_free(void *s)
{
	ml2_state *m = s;
	if (m) {
		cm_free(m->p);
		cm_free(m->v);
		cm_free(m->a);
		free(m);
	}
}

/* The valid rows of d (y > 0) as a new data set with rows of D (+ DH
 * hidden when with_hidden) features, one group; *x and *y malloc'd. */
static int valid_rows(const cm_data *d, int with_hidden, float **x, float **y, unsigned *group,
                      cm_data *out)
{
	int nv = 0, w = d->d + (with_hidden ? d->dh : 0);
	for (int i = 0; i < d->n; i++)
		nv += d->y[i] > 0;
	*x = malloc(sizeof **x * (size_t)(nv > 0 ? nv : 1) * (size_t)w);
	*y = malloc(sizeof **y * (size_t)(nv > 0 ? nv : 1));
	if (!*x || !*y)
		return tk_seterr(TK_ENOMEM, "out of memory");
	for (int i = 0, k = 0; i < d->n; i++) {
		if (!(d->y[i] > 0))
			continue;
		memcpy(*x + (size_t)k * (size_t)w, d->x + (size_t)i * (size_t)d->d,
		       sizeof **x * (size_t)d->d);
		if (with_hidden)
			memcpy(*x + (size_t)k * (size_t)w + d->d, d->xh + (size_t)i * (size_t)d->dh,
			       sizeof **x * (size_t)d->dh);
		(*y)[k++] = d->y[i];
	}
	*group = (unsigned)nv;
	*out = (cm_data){ .n = nv, .d = w, .x = *x, .y = *y, .ngroup = 1, .group = group };
	return TK_OK;
}

static int ml2_fit(const cm_params *p, const cm_data *tr, const cm_data *va, void **state)
{
	ml2_state *m = calloc(1, sizeof *m);
	float *x = NULL, *y = NULL;
	unsigned group;
	cm_data vd;
	int rc, nv = 0, ninv;
	(void)va; /* trained like the tuner's models: early stopping on the training set */
	*state = NULL;
	if (!m)
		return tk_seterr(TK_ENOMEM, "out of memory");
	for (int i = 0; i < tr->n; i++)
		nv += tr->y[i] > 0;
	ninv = tr->n - nv;
	cm_params q = *p;
	q.validity = 0;
	/* P on the valid rows; with fewer than two, on every row */
	if (nv >= 2) {
		if (!(rc = valid_rows(tr, 0, &x, &y, &group, &vd)))
			rc = cm_fit(&cm_xgb, &q, &vd, NULL, &m->p);
	} else {
		cm_data all = { .n = tr->n, .d = tr->d, .x = tr->x, .y = tr->y, .ngroup = tr->ngroup,
		                .group = tr->group };
		rc = cm_fit(&cm_xgb, &q, &all, NULL, &m->p);
	}
	free(x);
	free(y);
	x = y = NULL;
	/* V on every row, once both classes are there */
	if (!rc && nv > 0 && ninv > 0) {
		cm_params qv = *p;
		qv.validity = 1;
		cm_data all = { .n = tr->n, .d = tr->d, .x = tr->x, .y = tr->y };
		rc = cm_fit(&cm_xgb, &qv, &all, NULL, &m->v);
	}
	/* A on the valid rows' visible and hidden features */
	if (!rc && tr->xh && tr->dh > 0 && nv >= 2) {
		if (!(rc = valid_rows(tr, 1, &x, &y, &group, &vd)))
			rc = cm_fit(&cm_xgb, &q, &vd, NULL, &m->a);
		m->dh = rc ? 0 : tr->dh;
	}
	free(x);
	free(y);
	if (rc) {
		ml2_free(m);
		return rc;
	}
	*state = m;
	return TK_OK;
}

static int ml2_predict(void *s, const float *x, int n, int d, const float *margin, float *out)
{
	(void)margin;
	return cm_predict(((ml2_state *)s)->p, x, n, d, NULL, out);
}

static int ml2_screen(void *s, const float *x, int n, int d, float *out)
{
	ml2_state *m = s;
	if (!m->v) {
		for (int i = 0; i < n; i++)
			out[i] = 1;
		return TK_OK;
	}
	return cm_predict(m->v, x, n, d, NULL, out);
}

static int ml2_pick(void *s, const float *x, int n, int d, const float *xh, int dh, float *out)
{
	ml2_state *m = s;
	if (!m->a || !xh || dh != m->dh)
		return cm_predict(m->p, x, n, d, NULL, out); /* no hidden features: A = P */
	int w = d + dh;
	float *xa = malloc(sizeof *xa * (size_t)(n > 0 ? n : 1) * (size_t)w);
	if (!xa)
		return tk_seterr(TK_ENOMEM, "out of memory");
	for (int i = 0; i < n; i++) {
		memcpy(xa + (size_t)i * (size_t)w, x + (size_t)i * (size_t)d, sizeof *xa * (size_t)d);
		memcpy(xa + (size_t)i * (size_t)w + d, xh + (size_t)i * (size_t)dh,
		       sizeof *xa * (size_t)dh);
	}
	int rc = cm_predict(m->a, xa, n, w, NULL, out);
	free(xa);
	return rc;
}

static int ml2_save(void *s, void **buf, size_t *len)
{
	ml2_state *m = s;
	cm_model *part[3] = { m->p, m->v, m->a };
	void *pb[3] = { NULL, NULL, NULL };
	size_t pl[3] = { 0, 0, 0 }, total = 12 + 4;
	int rc = TK_OK;
	*buf = NULL;
	for (int i = 0; i < 3 && !rc; i++)
		if (part[i] && !(rc = cm_save(part[i], &pb[i], &pl[i])))
			total += 4 + pl[i];
	unsigned char *b = rc ? NULL : malloc(total + 12);
	if (!rc && !b)
		rc = tk_seterr(TK_ENOMEM, "out of memory");
	if (!rc) {
		size_t at = 0;
		memcpy(b, ML2_MAGIC, 4);
		tk_put_le32(b + 4, ML2_VERSION);
		tk_put_le32(b + 8, (uint32_t)m->dh);
		at = 12;
		for (int i = 0; i < 3; i++) {
			tk_put_le32(b + at, (uint32_t)pl[i]);
			memcpy(b + at + 4, pb[i], pl[i]);
			at += 4 + pl[i];
		}
		*buf = b;
		*len = at;
	}
	for (int i = 0; i < 3; i++)
		free(pb[i]);
	return rc;
}

static int ml2_load(const void *buf, size_t len, void **state)
{
	const unsigned char *b = buf;
	ml2_state *m;
	cm_model **part[3];
	size_t at = 12;
	int rc = TK_OK;
	*state = NULL;
	if (len < 12 || memcmp(b, ML2_MAGIC, 4) || tk_get_le32(b + 4) != ML2_VERSION)
		return tk_seterr(TK_ECORRUPT, "not an ml2 payload of version %d", ML2_VERSION);
	if (!(m = calloc(1, sizeof *m)))
		return tk_seterr(TK_ENOMEM, "out of memory");
	m->dh = (int)tk_get_le32(b + 8);
	part[0] = &m->p, part[1] = &m->v, part[2] = &m->a;
	for (int i = 0; i < 3 && !rc; i++) {
		if (at + 4 > len) {
			rc = tk_seterr(TK_ECORRUPT, "ml2 payload cut short");
			break;
		}
		size_t l = tk_get_le32(b + at);
		at += 4;
		if (l > len - at)
			rc = tk_seterr(TK_ECORRUPT, "ml2 payload cut short");
		else if (l > 0)
			rc = cm_load(&cm_xgb, b + at, l, part[i]);
		at += l;
	}
	if (!rc && !m->p)
		rc = tk_seterr(TK_ECORRUPT, "ml2 payload without its model P");
	if (rc) {
		ml2_free(m);
		return rc;
	}
	*state = m;
	return TK_OK;
}

static int ml2_importance(void *s, int *d, double **gain)
{
	ml2_state *m = s;
	return cm_importance(m->a ? m->a : m->p, d, gain);
}

static int ml2_describe(void *s, mf_meta *meta)
{
	ml2_state *m = s;
	mf_meta own;
	memset(&own, 0, sizeof own);
	int rc = cm_describe(m->p, &own);
	const char *obj = mf_get(&own, "objective");
	if (!rc && obj)
		rc = mf_set(meta, "objective", obj);
	if (!rc)
		rc = mf_set(meta, "ml2_models", m->a ? (m->v ? "P+V+A" : "P+A") : m->v ? "P+V" : "P");
	return rc;
}

const cm_kind cm_ml2 = {
	.name = "ml2",
	.summary = "ML2Tuner: XGBoost P ranks, V screens out invalid, A picks on hidden features",
	.features = 1u << FEAT_KNOB | 1u << FEAT_ITERVAR | 1u << FEAT_CURVE | 1u << FEAT_TLP,
	.feature = FEAT_ITERVAR,
	.flags = CM_RANK | CM_HIDDEN,
	.fit = ml2_fit,
	.predict = ml2_predict,
	.screen = ml2_screen,
	.pick = ml2_pick,
	.save = ml2_save,
	.load = ml2_load,
	.importance = ml2_importance,
	.describe = ml2_describe,
	.free = ml2_free,
};
