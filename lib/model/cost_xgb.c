/*
 * cost_xgb: the "xgb" row of the cost-model table: one XGBoost booster
 * with AutoTVM's settings (pairwise ranking or squared error, depth 3, eta
 * 0.3), trained on top of base margins for transfer learning, or warm
 * started from a trained model by more boosting rounds on new hardware's
 * records (cm_adapt by CM_ADAPT_BOOST). The payload of a model file is
 * xgboost's own serialisation (UBJSON), which carries its own magic and
 * version.
 */
#include <stdio.h>
#include <stdlib.h>

#include "cost.h"
#include "features/feature.h"
#include "xgb.h"

typedef struct xstate {
	xgb_model *bst;
	const char *objective;   /* NULL when loaded from a payload */
} xstate;

static void xfree(void *s)
{
	xstate *x = s;
	if (x) {
		xgb_free(x->bst);
		free(x);
	}
}

static int xnew(xstate **out)
{
	*out = calloc(1, sizeof **out);
	return *out ? TK_OK : tk_seterr(TK_ENOMEM, "out of memory");
}

/* Labels y > 0 as 1 (valid), else 0, for the validity classifier; a
 * malloc'd copy or NULL (out of memory). */
static float *valid_labels(const float *y, int n)
{
	float *v = malloc(sizeof *v * (size_t)(n > 0 ? n : 1));
	for (int i = 0; v && i < n; i++)
		v[i] = y[i] > 0 ? 1.0f : 0.0f;
	return v;
}

static const char *objective_of(const cm_params *p)
{
	return p->validity ? "binary:logistic" : p->rank ? "rank:pairwise" : "reg:squarederror";
}

static int xfit(const cm_params *p, const cm_data *tr, const cm_data *va, void **state)
{
	xgb_params xp;
	xstate *x;
	float *ty = NULL, *vy = NULL;
	int rc;
	*state = NULL;
	if ((rc = xnew(&x)))
		return rc;
	xgb_params_set(&xp, objective_of(p), p->seed, p->nthread, p->tree_method, p->rounds,
	               p->early_stop);
	xgb_data t = { tr->n, tr->d, tr->x, tr->y, tr->ngroup, tr->group, tr->margin };
	xgb_data v = t;
	if (va)
		v = (xgb_data){ va->n, va->d, va->x, va->y, va->ngroup, va->group, va->margin };
	if (p->validity) {
		/* a classifier: labels 0 or 1, no groups */
		if (!(ty = valid_labels(tr->y, tr->n)) || !(vy = valid_labels(v.y, v.n))) {
			rc = tk_seterr(TK_ENOMEM, "out of memory");
			goto done;
		}
		t.y = ty;
		v.y = vy;
		t.ngroup = v.ngroup = 0;
		t.group = v.group = NULL;
	}
	x->objective = xp.objective;
	rc = xgb_train(&xp, &t, xp.early_stop ? &v : NULL, &x->bst);
done:
	free(ty);
	free(vy);
	if (rc) {
		xfree(x);
		return rc;
	}
	*state = x;
	return TK_OK;
}

static int xpredict(void *s, const float *x, int n, int d, const float *margin, float *out)
{
	xstate *m = s;
	return margin ? xgb_predict_margin(m->bst, x, n, d, margin, out)
	              : xgb_predict(m->bst, x, n, d, out);
}

/* Warm start: XGB_WARM_ROUNDS (or a->epochs) rounds more on the target. */
#define XGB_WARM_ROUNDS 20
static int xadapt(void *s, const cm_params *p, const cm_adapt_opts *a, const cm_data *tr,
                  cm_adapt_info *info)
{
	xstate *x = s;
	xgb_params xp;
	int rounds = a->epochs > 0 ? a->epochs : XGB_WARM_ROUNDS;
	xgb_params_set(&xp, p->rank ? "rank:pairwise" : "reg:squarederror", p->seed, p->nthread,
	               p->tree_method, rounds, 0);
	xgb_data t = { tr->n, tr->d, tr->x, tr->y, tr->ngroup, tr->group, NULL };
	int rc = xgb_continue(x->bst, &xp, &t, rounds);
	if (!rc)
		x->objective = xp.objective;
	info->epochs = rounds;
	info->steps = xgb_rounds(x->bst);
	info->trained = 1;
	return rc;
}

static int xsave(void *s, void **buf, size_t *len)
{
	return xgb_save(((xstate *)s)->bst, buf, len);
}

static int xload(const void *buf, size_t len, void **state)
{
	xstate *x;
	int rc;
	*state = NULL;
	if ((rc = xnew(&x)))
		return rc;
	if ((rc = xgb_load(buf, len, &x->bst))) {
		xfree(x);
		return rc;
	}
	*state = x;
	return TK_OK;
}

static int ximportance(void *s, int *d, double **gain)
{
	return xgb_importance(((xstate *)s)->bst, d, gain);
}

static int xdescribe(void *s, mf_meta *m)
{
	xstate *x = s;
	char v[24];
	int rc = TK_OK;
	snprintf(v, sizeof v, "%d", xgb_rounds(x->bst));
	if (x->objective)
		rc = mf_set(m, "objective", x->objective);
	return rc ? rc : mf_set(m, "rounds", v);
}

const cm_kind cm_xgb = {
	.name = "xgb",
	.summary = "XGBoost, AutoTVM's settings; takes a base model (transfer)",
	.features = 1u << FEAT_KNOB | 1u << FEAT_ITERVAR | 1u << FEAT_CURVE | 1u << FEAT_TLP |
	            1u << FEAT_HIDDEN,
	.feature = FEAT_ITERVAR,
	.flags = CM_TRANSFER | CM_RANK | CM_CLASSIFY,
	.fit = xfit,
	.predict = xpredict,
	.adapts = CM_ADAPT_BOOST,
	.adapt = xadapt,
	.save = xsave,
	.load = xload,
	.importance = ximportance,
	.describe = xdescribe,
	.free = xfree,
};
