/*
 * cost: the table of cost models and the operations on a model handle
 * (see cost.h). A row's own file implements its operations; this file
 * only dispatches, so adding a model is its file and one line below.
 */
#include "cost.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "features/feature.h"

extern const cm_kind cm_xgb, cm_rfei, cm_tlp, cm_mtl_tlp, cm_meta, cm_ml2;

/* The model-free choice: no operations. */
static const cm_kind cm_none = {
	.name = "none",
	.summary = "no model: sa anneals on the measured throughput itself",
	.feature = FEAT_ITERVAR,
};

const cm_kind *const cm_kinds[] = { &cm_xgb, &cm_rfei, &cm_tlp, &cm_mtl_tlp, &cm_meta, &cm_ml2,
                                     &cm_none };
const int cm_nkinds = ArraySize(cm_kinds);

struct cm_model {
	const cm_kind *kind;
	void *state;
};

void cm_params_default(cm_params *p)
{
	memset(p, 0, sizeof *p);
	p->rank = 1;
	p->seed = 1;
	p->nthread = 1;
}

const cm_kind *cm_find(const char *name)
{
	for (int i = 0; name && i < cm_nkinds; i++)
		if (!strcmp(cm_kinds[i]->name, name))
			return cm_kinds[i];
	return NULL;
}

void cm_names(char *buf, size_t size, unsigned need, int fits)
{
	size_t len = 0;
	assert(size > 0);
	buf[0] = 0;
	for (int i = 0; i < cm_nkinds; i++) {
		const cm_kind *k = cm_kinds[i];
		if ((k->flags & need) != need || (fits && !k->fit))
			continue;
		int w = snprintf(buf + len, size - len, "%s%s", len ? ", " : "", k->name);
		if (w < 0 || (size_t)w >= size - len) {
			buf[len] = 0; /* whole names only */
			break;
		}
		len += (size_t)w;
	}
}

int cm_feature(const cm_kind *k, int nest)
{
	assert(k && k->feature >= 0 && k->feature < FEAT_NKIND);
	return nest || !(k->features & 1u << FEAT_KNOB) ? k->feature : FEAT_KNOB;
}

int cm_lookup(const char *name, const cm_kind **out)
{
	char names[256];
	if ((*out = cm_find(name)))
		return TK_OK;
	cm_names(names, sizeof names, 0, 0);
	return tk_seterr(TK_EINVAL, "unknown model '%s' (%s)", name ? name : "", names);
}

static int wrap(const cm_kind *k, void *state, cm_model **out)
{
	if (!(*out = malloc(sizeof **out))) {
		k->free(state);
		return tk_seterr(TK_ENOMEM, "out of memory");
	}
	(*out)->kind = k;
	(*out)->state = state;
	return TK_OK;
}

int cm_fit(const cm_kind *k, const cm_params *p, const cm_data *train, const cm_data *valid,
           cm_model **out)
{
	void *state = NULL;
	int rc;
	*out = NULL;
	if (!cm_is_model(k))
		return tk_seterr(TK_EINVAL, "model %s has nothing to fit", k ? k->name : "(none)");
	if (p->validity && !(k->flags & CM_CLASSIFY)) {
		char names[128];
		cm_names(names, sizeof names, CM_CLASSIFY, 1);
		return tk_seterr(TK_EINVAL, "model %s cannot be a validity classifier (%s)", k->name,
		                 names);
	}
	for (int i = 0; train->head && !(k->flags & CM_MULTIHEAD) && i < train->n; i++)
		if (train->head[i])
			return tk_seterr(TK_EINVAL, "model %s has one head: rows of other hardware"
			                 " need a multi-head model", k->name);
	if ((rc = k->fit(p, train, valid, &state)))
		return rc;
	return wrap(k, state, out);
}

int cm_update(cm_model *m, const cm_params *p, const cm_data *all)
{
	void *state = NULL;
	int rc;
	if (m->kind->update)
		return m->kind->update(m->state, p, all);
	if ((rc = m->kind->fit(p, all, NULL, &state)))
		return rc;
	m->kind->free(m->state);
	m->state = state;
	return TK_OK;
}

int cm_predict(cm_model *m, const float *x, int n, int d, const float *margin, float *out)
{
	return m->kind->predict(m->state, x, n, d, margin, out);
}

int cm_screen(cm_model *m, const float *x, int n, int d, float *out)
{
	if (!m->kind->screen)
		return tk_seterr(TK_EINVAL, "model %s has no validity screen", m->kind->name);
	return m->kind->screen(m->state, x, n, d, out);
}

int cm_pick(cm_model *m, const float *x, int n, int d, const float *xh, int dh, float *out)
{
	if (!m->kind->pick)
		return tk_seterr(TK_EINVAL, "model %s does not read hidden features", m->kind->name);
	assert(dh >= 0 && (dh == 0 || xh));
	return m->kind->pick(m->state, x, n, d, xh, dh, out);
}

int cm_importance(cm_model *m, int *d, double **gain)
{
	*gain = NULL;
	*d = 0;
	if (!m->kind->importance)
		return tk_seterr(TK_EINVAL, "model %s has no feature importance", m->kind->name);
	return m->kind->importance(m->state, d, gain);
}

int cm_predict_dist(cm_model *m, const float *x, int n, int d, float *mu, float *sd)
{
	if (!m->kind->predict_dist)
		return tk_seterr(TK_EINVAL, "model %s has no uncertainty estimate", m->kind->name);
	return m->kind->predict_dist(m->state, x, n, d, mu, sd);
}

void cm_adapt_default(cm_adapt_opts *a)
{
	memset(a, 0, sizeof *a);
	a->method = CM_ADAPT_FINETUNE;
	a->ratio = 0.5;
	a->decay = 1;
}

int cm_adapt(cm_model *m, const cm_params *p, const cm_adapt_opts *a, const cm_data *target,
             cm_adapt_info *info)
{
	cm_adapt_info own;
	assert(a->method == CM_ADAPT_FINETUNE || a->method == CM_ADAPT_TICKET ||
	       a->method == CM_ADAPT_BOOST);
	memset(&own, 0, sizeof own);
	if (!(m->kind->adapts & (unsigned)a->method) || !m->kind->adapt)
		return tk_seterr(TK_EINVAL, "a %s model cannot be adapted by %s", m->kind->name,
		                 a->method == CM_ADAPT_TICKET ? "a lottery ticket (moses)"
		                 : a->method == CM_ADAPT_BOOST ? "more boosting rounds"
		                                               : "fine-tuning its weights");
	if (target->n < 1 || target->head || target->margin)
		return tk_seterr(TK_EINVAL, "%s: adaptation needs rows of the target alone",
		                 m->kind->name);
	if (a->ratio < 0 || a->ratio > 1 || a->threshold < 0 || a->threshold > 1 || a->decay < 0 ||
	    a->lr < 0 || a->epochs < 0)
		return tk_seterr(TK_EINVAL, "%s: adaptation options out of range", m->kind->name);
	int rc = m->kind->adapt(m->state, p, a, target, info ? info : &own);
	return rc;
}

int cm_save(cm_model *m, void **buf, size_t *len)
{
	return m->kind->save(m->state, buf, len);
}

int cm_load(const cm_kind *k, const void *buf, size_t len, cm_model **out)
{
	void *state = NULL;
	int rc;
	*out = NULL;
	if (!cm_is_model(k))
		return tk_seterr(TK_EINVAL, "model %s has nothing to load", k ? k->name : "(none)");
	if ((rc = k->load(buf, len, &state)))
		return rc;
	return wrap(k, state, out);
}

int cm_describe(cm_model *m, mf_meta *meta)
{
	int rc = mf_set(meta, "kind", m->kind->name);
	if (!rc && m->kind->describe)
		rc = m->kind->describe(m->state, meta);
	return rc;
}

/* The model of a model file's decoded meta and payload (freed here);
 * path names it in messages. */
static int cm_of(const char *path, mf_meta *meta, void *payload, size_t len, cm_model **out)
{
	const cm_kind *k;
	int rc;
	if (!cm_is_model(k = cm_find(mf_get(meta, "kind"))))
		rc = tk_seterr(TK_ECORRUPT, "%s: a model of kind '%s', which this tunekit does not have",
		               path, mf_get(meta, "kind"));
	else if ((rc = cm_load(k, payload, len, out)))
		rc = tk_seterr(TK_ECORRUPT, "%s: %s", path, tk_errmsg());
	free(payload);
	return rc;
}

int cm_read(const char *path, mf_meta *meta, cm_model **out)
{
	void *payload = NULL;
	size_t len = 0;
	int rc;
	*out = NULL;
	memset(meta, 0, sizeof *meta);
	if ((rc = mf_read(path, meta, &payload, &len)))
		return rc;
	return cm_of(path, meta, payload, len, out);
}

int cm_decode(const char *name, const void *buf, size_t buflen, mf_meta *meta, cm_model **out)
{
	void *payload = NULL;
	size_t len = 0;
	int rc;
	*out = NULL;
	memset(meta, 0, sizeof *meta);
	if ((rc = mf_decode(buf, buflen, meta, &payload, &len)))
		return tk_seterr(rc, "%s: %s", name, tk_errmsg());
	return cm_of(name, meta, payload, len, out);
}

const cm_kind *cm_kind_of(const cm_model *m)
{
	return m->kind;
}

int cm_clone(cm_model *m, cm_model **out)
{
	void *buf = NULL;
	size_t len = 0;
	int rc = cm_save(m, &buf, &len);
	*out = NULL;
	if (!rc)
		rc = cm_load(m->kind, buf, len, out);
	free(buf);
	return rc;
}

void *cm_state(const cm_model *m, const cm_kind *k)
{
	return m && m->kind == k ? m->state : NULL;
}

int cm_wrap(const cm_kind *k, void *state, cm_model **out)
{
	*out = NULL;
	return wrap(k, state, out);
}

void cm_free(cm_model *m)
{
	if (!m)
		return;
	m->kind->free(m->state);
	free(m);
}
