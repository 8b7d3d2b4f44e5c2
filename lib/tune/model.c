/*
 * model: the cost model of the tuning loop, through the model table
 * (model/cost.h): feature vectors of configurations (cached by index, as
 * AutoTVM does, cleared at 100000 entries or FCACHE_BYTES, whichever comes
 * first: a graph vector is 2210 floats) and the task's model, fit on
 * the throughputs measured so far normalised by their maximum, with
 * AutoTVM's settings: the --objective (a model that ranks) and early
 * stopping after 20 rounds without improvement on the training set itself,
 * or --xgb-rounds rounds. A model with uncertainty scores configurations by
 * expected improvement over the best measured (AdaTune).
 *
 * Transfer learning, as AutoTVM's XGBoostCostModel with a base model (for
 * models that take one, CM_TRANSFER): the base model is trained on history
 * records (other runs, the same hardware or --transfer-hardware; tasks of
 * the same operator, or for imported tasks the same task key or knob
 * space, with features of the same length) by the training pipeline
 * (train/train.h); the task's own model is then fit on
 * top of the base model's output weighted by 1 / 2^(n / 64), n the task's
 * records so far, and predicts on top of it the same way, until that
 * weight falls under 0.05 and the base model is dropped. Before the first
 * record the plan comes from the base model alone.
 *
 * A trained model of a file (--model-file) scores every task as it is, or
 * with --adapt, a copy of it per task is adapted to the task's records at
 * every refit by a transfer method (Moses' ticket, fine-tuning, more
 * boosting rounds: cm_adapt), online transfer as Moses tunes. Beside it
 * the guard (guard.c) fits a model from scratch, and the search plans on
 * that one while the guard says so.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "measure/hidden.h"
#include "search/search.h"
#include "train/train.h"
#include "tune_int.h"

#define FCACHE_MAX 100000
/* A task's feature cache at most (its table's capacity is 2 to 4 times
 * its entries): 100000 itervar vectors fit, graph vectors 3800. */
#define FCACHE_BYTES ((size_t)128 << 20)
#define BASE_CLOSE 0.05

#define EARLY_STOP 20   /* AutoTVM: rounds without improvement on the training set */

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

/* Whether n more entries overflow the cache: past FCACHE_MAX entries or
 * FCACHE_BYTES at the largest capacity they can take. */
static int fcache_full(const tn_fcache *f, int n)
{
	size_t most = FCACHE_BYTES / (4 * sizeof(float) * (size_t)(f->d > 0 ? f->d : 1));
	return f->n + n > FCACHE_MAX || (size_t)(f->n + n) > (most > 1024 ? most : 1024);
}

int model_width_of(const tn_task *t, int scratch, int *d)
{
	int feat = scratch ? t->sfeat : t->feat, rc = feat_length(feat, t->space, d);
	if (!rc && feat == t->feat && t->width > *d)
		*d = t->width; /* the guard's model shares the rows it shares the kind of */
	return rc;
}

int model_width(const tn_task *t, int *d)
{
	return model_width_of(t, 0, d);
}

/* One row of d floats: c's own features of kind feat, the first own of
 * them, zeros after. */
static int extract(const tn_task *t, int feat, const sp_config *c, float *row, int own, int d)
{
	if (own < d)
		memset(row + own, 0, sizeof *row * (size_t)(d - own));
	return feat_extract(feat, t->space, c, row, NULL);
}

int model_features(tn_ctx *C, tn_task *t, const sp_config *c, int n, float *out, int *dp)
{
	return model_features_of(C, t, 0, c, n, out, dp);
}

int model_features_of(tn_ctx *C, tn_task *t, int scratch, const sp_config *c, int n, float *out,
                      int *dp)
{
	int rc, feat = scratch ? t->sfeat : t->feat;
	tn_fcache *fc = scratch && t->sfeat != t->feat ? &t->sfc : &t->fc;
	if (!fc->key) {
		int d;
		if ((rc = model_width_of(t, scratch, &d)) || (rc = fcache_init(fc, d)))
			return rc;
	}
	if (fcache_full(fc, n)) {
		if ((rc = fcache_init(fc, fc->d)))
			return rc;
	}
	int d = fc->d, own = d;
	*dp = d;
	/* rows wider than the kind's (t->width) end in zeros */
	if (t->width > 0 && (rc = feat_length(feat, t->space, &own)))
		return rc;
	for (int i = 0; i < n; i++) {
		uint64_t idx = sp_index(t->space, &c[i]);
		int64_t s = fslot(fc, idx);
		if (!fc->key[s] && fcache_full(fc, 1)) {
			/* a call larger than the cache: the rest goes uncached */
			if ((rc = extract(t, feat, &c[i], &out[(size_t)i * (size_t)d], own, d)))
				return rc;
			continue;
		}
		if (!fc->key[s]) {
			if (2 * (fc->n + 1) > fc->cap) {
				if ((rc = fcache_grow(fc)))
					return rc;
				s = fslot(fc, idx);
			}
			if ((rc = extract(t, feat, &c[i], &fc->val[s * d], own, d)))
				return rc;
			fc->key[s] = idx + 1;
			fc->n++;
		}
		memcpy(&out[(size_t)i * (size_t)d], &fc->val[s * d], sizeof(float) * (size_t)d);
	}
	return TK_OK;
}

/* ---- hidden features (ML2Tuner) ---------------------------------------------- */

int model_hidden_length(tn_ctx *C, tn_task *t)
{
	int d = 0;
	if (!C->hidden || !t->mt || ms_hidden_length(t->mt, &d))
		return 0;
	return d;
}

int model_hidden(tn_ctx *C, tn_task *t, const sp_config *c, int n, float *out, int *dh,
                 int *okp)
{
	int d = model_hidden_length(C, t), rc, nmiss = 0;
	*dh = d;
	if (d == 0)
		return TK_OK;
	/* a cache row: the d features, then 1 if the configuration compiled */
	if (!t->hc.key && (rc = fcache_init(&t->hc, d + 1)))
		return rc;
	if (fcache_full(&t->hc, n) && (rc = fcache_init(&t->hc, d + 1)))
		return rc;
	sp_config *miss = malloc(sizeof *miss * (size_t)(n > 0 ? n : 1));
	float *hv = malloc(sizeof *hv * (size_t)(n > 0 ? n : 1) * (size_t)d);
	int *ok = malloc(sizeof *ok * (size_t)(n > 0 ? n : 1));
	if (!miss || !hv || !ok) {
		rc = tk_seterr(TK_ENOMEM, "out of memory");
		goto done;
	}
	for (int i = 0; i < n; i++)
		if (!t->hc.key[fslot(&t->hc, sp_index(t->space, &c[i]))])
			miss[nmiss++] = c[i];
	/* the compiles of a batch run together, the target's compilers at once */
	if (nmiss > 0 && (rc = ms_hidden(t->mt, C->target, &C->o->ms, miss, nmiss, hv, ok)))
		goto done;
	for (int i = 0; i < nmiss; i++) {
		uint64_t idx = sp_index(t->space, &miss[i]);
		int64_t s = fslot(&t->hc, idx);
		if (t->hc.key[s])
			continue; /* the same configuration twice */
		if (2 * (t->hc.n + 1) > t->hc.cap) {
			if ((rc = fcache_grow(&t->hc)))
				goto done;
			s = fslot(&t->hc, idx);
		}
		memcpy(&t->hc.val[s * (d + 1)], &hv[(size_t)i * (size_t)d], sizeof(float) * (size_t)d);
		t->hc.val[s * (d + 1) + d] = ok[i] ? 1.0f : 0.0f;
		t->hc.key[s] = idx + 1;
		t->hc.n++;
	}
	for (int i = 0; i < n; i++) {
		int64_t s = fslot(&t->hc, sp_index(t->space, &c[i]));
		memcpy(&out[(size_t)i * (size_t)d], &t->hc.val[s * (d + 1)], sizeof(float) * (size_t)d);
		if (okp)
			okp[i] = t->hc.val[s * (d + 1) + d] != 0;
	}
	t->ml2_compiled += nmiss;
	rc = TK_OK;
done:
	free(miss);
	free(hv);
	free(ok);
	return rc;
}

/* Before a refit of an ML2Tuner model: the squared errors of P and A on
 * the valid records measured since the last fit, which neither has seen
 * (labels y, normalised as the refit's); only for squared-error models,
 * whose outputs are on the labels' scale. */
static int ml2_heldout(tn_ctx *C, tn_task *t, const float *x, int d, const float *xh, int dh,
                       const float *y)
{
	int from = t->ml2_fit_nx, n = t->nx - from, rc;
	if (!t->model || n <= 0 || C->o->objective != TN_REG)
		return TK_OK;
	float *pp = malloc(sizeof *pp * (size_t)n), *pa = malloc(sizeof *pa * (size_t)n);
	if (!pp || !pa)
		rc = tk_seterr(TK_ENOMEM, "out of memory");
	else if (!(rc = cm_predict(t->model, x + (size_t)from * (size_t)d, n, d, NULL, pp)))
		rc = cm_pick(t->model, x + (size_t)from * (size_t)d, n, d,
		             dh ? xh + (size_t)from * (size_t)dh : NULL, dh, pa);
	for (int i = 0; !rc && i < n; i++) {
		if (!(y[from + i] > 0))
			continue;
		t->ml2_se_p += (pp[i] - y[from + i]) * (pp[i] - y[from + i]);
		t->ml2_se_a += (pa[i] - y[from + i]) * (pa[i] - y[from + i]);
		t->ml2_nse++;
	}
	free(pp);
	free(pa);
	return rc;
}

/* ---- the model ------------------------------------------------------------- */

/* AutoTVM's settings: single-threaded, --xgb-rounds rounds, or else early
 * stopping on the training set; resampling draws from the task's generator. */
void model_fit_params(tn_ctx *C, tn_task *t, cm_params *p)
{
	cm_params_default(p);
	p->rank = C->o->objective != TN_REG;
	p->seed = C->o->seed;
	p->rounds = C->o->xgb_rounds > 0 ? C->o->xgb_rounds : 0;
	p->early_stop = C->o->xgb_rounds > 0 ? 0 : EARLY_STOP;
	p->rng = &t->rng;
	p->seq_e = feat_seq_width(t->feat);
}

/* The base model's output on n rows, weighted by t->base_w. */
static int base_margin(tn_task *t, const float *x, int n, int d, float *margin)
{
	int rc = cm_predict(t->base, x, n, d, NULL, margin);
	for (int i = 0; !rc && i < n; i++)
		margin[i] *= (float)t->base_w;
	return rc;
}

/* Online transfer (o->adapt): t's model starts as a copy of the trained
 * model of the file and is adapted further on all of t's records at each
 * refit, by the transfer method's way (cm_adapt). */
static int adapt_fixed(tn_ctx *C, tn_task *t, const cm_params *p, const cm_data *train)
{
	int rc;
	if (!t->model && (rc = cm_clone(t->fixed, &t->model))) /* run.c clones it first */
		return rc;
	cm_adapt_opts a;
	cm_adapt_default(&a);
	a.method = C->adapt;
	cm_params q = *p;
	q.rounds = 0;
	return cm_adapt(t->model, &q, &a, train, NULL);
}

int model_fit(tn_ctx *C, tn_task *t)
{
	int d, rc;
	float *x = NULL, *y = NULL, *margin = NULL, *xh = NULL;
	cm_params p;
	if ((rc = guard_fit(C, t))) /* the search may plan on it */
		return rc;
	if (t->nx == 0 || (t->fixed && !t->model))
		return TK_OK; /* a trained model that is never refit */
	fcache_free(&t->sc); /* scores of the model before */
	if ((rc = model_width(t, &d)))
		return rc;
	x = malloc(sizeof *x * (size_t)t->nx * (size_t)d);
	y = malloc(sizeof *y * (size_t)t->nx);
	if (!x || !y) {
		rc = tk_seterr(TK_ENOMEM, "out of memory");
		goto done;
	}
	if ((rc = model_features(C, t, t->xc, t->nx, x, &d)))
		goto done;
	tr_normalise(t->ys, t->nx, y);
	unsigned group = (unsigned)t->nx;
	cm_data train = { .n = t->nx, .d = d, .x = x, .y = y, .ngroup = 1, .group = &group };
	if (t->base) {
		t->base_w = pow(2, -t->nx / 64.0);
		if (t->base_w < BASE_CLOSE) {
			cm_free(t->base);
			t->base = NULL;
		} else if (!(margin = malloc(sizeof *margin * (size_t)t->nx))) {
			rc = tk_seterr(TK_ENOMEM, "out of memory");
			goto done;
		} else if ((rc = base_margin(t, x, t->nx, d, margin))) {
			goto done;
		}
		train.margin = margin;
	}
	model_fit_params(C, t, &p);
	if (t->mk->flags & CM_HIDDEN) {
		/* ML2Tuner: the rows' hidden features for A (none when replayed,
		 * nor in the ablation without A) */
		int dh = C->o->ml2_stages != TN_ML2_V ? model_hidden_length(C, t) : 0;
		if (dh > 0 && !(xh = malloc(sizeof *xh * (size_t)t->nx * (size_t)dh))) {
			rc = tk_seterr(TK_ENOMEM, "out of memory");
			goto done;
		}
		if (dh > 0 && (rc = model_hidden(C, t, t->xc, t->nx, xh, &dh, NULL)))
			goto done;
		if ((rc = ml2_heldout(C, t, x, d, xh, dh, y)))
			goto done;
		train.xh = xh;
		train.dh = dh;
		t->ml2_fit_nx = t->nx;
	}
	if (C->adapt && t->fixed)
		rc = adapt_fixed(C, t, &p, &train);
	else if (t->model)
		rc = cm_update(t->model, &p, &train);
	else
		rc = cm_fit(t->mk, &p, &train, NULL, &t->model);
done:
	free(x);
	free(y);
	free(margin);
	free(xh);
	return rc;
}

/* The model the search plans on: the one from scratch when the guard
 * chose it (*scratch 1), else the task's own or the file's. */
static cm_model *planner(const tn_task *t, int *scratch)
{
	*scratch = t->chooser == TN_GUARD_SCRATCH && t->scratch;
	return *scratch ? t->scratch : t->model ? t->model : t->fixed;
}

int model_predict_dist(tn_ctx *C, tn_task *t, const sp_config *c, int n, float *mu, float *sd)
{
	int d, rc, scratch;
	cm_model *m = planner(t, &scratch);
	if (!m) {
		for (int i = 0; i < n; i++)
			mu[i] = sd[i] = 0;
		return TK_OK;
	}
	if ((rc = model_width_of(t, scratch, &d)))
		return rc;
	float *x = malloc(sizeof *x * (size_t)(n > 0 ? n : 1) * (size_t)d);
	if (!x)
		rc = tk_seterr(TK_ENOMEM, "out of memory");
	else if (!(rc = model_features_of(C, t, scratch, c, n, x, &d)))
		rc = cm_predict_dist(m, x, n, d, mu, sd);
	free(x);
	return rc;
}

/* The scores of n configurations into out[n] (model_predict, uncached). */
static int predict(tn_ctx *C, tn_task *t, const sp_config *c, int n, float *out)
{
	int d, rc;
	if (t->mk->flags & CM_EI) {
		/* expected positive improvement over the best measured: 1 in the
		 * normalised throughputs the model learnt */
		float *sd = malloc(sizeof *sd * (size_t)(n > 0 ? n : 1));
		if (!sd)
			return tk_seterr(TK_ENOMEM, "out of memory");
		if (!(rc = model_predict_dist(C, t, c, n, out, sd)))
			for (int i = 0; i < n; i++)
				out[i] = (float)sr_ei(out[i], sd[i], 1.0);
		free(sd);
		return rc;
	}
	int scratch; /* a base model comes from history, never with a guard */
	cm_model *m = planner(t, &scratch); /* the task's own, the file's, or the guard's */
	if (!m && !t->base) {
		for (int i = 0; i < n; i++)
			out[i] = 0;
		return TK_OK;
	}
	if ((rc = model_width_of(t, scratch, &d)))
		return rc;
	float *x = malloc(sizeof *x * (size_t)(n > 0 ? n : 1) * (size_t)d);
	float *margin = t->base && m ? malloc(sizeof *margin * (size_t)(n > 0 ? n : 1)) : NULL;
	if (!x || (t->base && m && !margin))
		rc = tk_seterr(TK_ENOMEM, "out of memory");
	else if ((rc = model_features_of(C, t, scratch, c, n, x, &d)))
		;
	else if (!m)
		rc = cm_predict(t->base, x, n, d, NULL, out); /* nothing measured yet */
	else if (!margin || !(rc = base_margin(t, x, n, d, margin)))
		rc = cm_predict(m, x, n, d, margin, out);
	free(x);
	free(margin);
	return rc;
}

/* The scores of the configurations scored under the current model are
 * kept by index (t->sc, emptied when the model changes: model_fit); an
 * annealing search comes back to the same points often. */
int model_predict(tn_ctx *C, tn_task *t, const sp_config *c, int n, float *out)
{
	int rc = TK_OK, nm = 0;
	if (!t->sc.key && (rc = fcache_init(&t->sc, 1)))
		return rc;
	if (fcache_full(&t->sc, n) && (rc = fcache_init(&t->sc, 1)))
		return rc;
	int *miss = malloc(sizeof *miss * (size_t)(n > 0 ? n : 1));
	sp_config *mc = malloc(sizeof *mc * (size_t)(n > 0 ? n : 1));
	float *ms = malloc(sizeof *ms * (size_t)(n > 0 ? n : 1));
	if (!miss || !mc || !ms) {
		rc = tk_seterr(TK_ENOMEM, "out of memory");
		goto done;
	}
	for (int i = 0; i < n; i++) {
		int64_t s = fslot(&t->sc, sp_index(t->space, &c[i]));
		if (t->sc.key[s]) {
			out[i] = t->sc.val[s];
		} else {
			miss[nm] = i;
			mc[nm++] = c[i];
		}
	}
	if (nm == 0 || (rc = predict(C, t, mc, nm, ms)))
		goto done;
	for (int j = 0; j < nm; j++) {
		uint64_t idx = sp_index(t->space, &mc[j]);
		int64_t s = fslot(&t->sc, idx);
		out[miss[j]] = ms[j];
		if (t->sc.key[s] || fcache_full(&t->sc, 1))
			continue; /* a configuration twice in c, or no room */
		if (2 * (t->sc.n + 1) > t->sc.cap) {
			if ((rc = fcache_grow(&t->sc)))
				goto done;
			s = fslot(&t->sc, idx);
		}
		t->sc.key[s] = idx + 1;
		t->sc.val[s] = ms[j];
		t->sc.n++;
	}
done:
	free(miss);
	free(mc);
	free(ms);
	return rc;
}

/* ---- transfer learning: the base model ---------------------------------------- */

/* Train t's base model on the history tasks like it (labels y, normalised
 * per task): of its feature length and its operator (template tasks), or
 * the same task or knob space (imported tasks: the same kernel measured on
 * other hardware or at other sizes). *used receives the rows (0: too few,
 * no base model). */
static int base_train(tn_ctx *C, tn_task *t, const tr_set *H, const float *y, char *sel,
                      int64_t *used)
{
	int d, n = 0, rc;
	tr_part pt;
	cm_params p;
	*used = 0;
	if (feat_length(t->feat, t->space, &d))
		return TK_OK;
	uint64_t space = sp_space_hash(t->space);
	for (int k = 0; k < H->ntask; k++) {
		const tr_task *h = &H->tasks[k];
		int same = h->d == d &&
		           ((h->op && t->mt && !strcmp(h->op, t->mt->prog->op)) ||
		            !strcmp(h->key, t->key) || (h->space && h->space == space));
		memset(&sel[h->first], same, (size_t)h->n);
		n += same ? h->n : 0;
	}
	if (n < HISTORY_MIN)
		return TK_OK;
	if ((rc = tr_part_build(H, y, sel, 1, d, &pt)) == TK_OK) {
		cm_data train = tr_part_data(&pt);
		model_fit_params(C, t, &p);
		p.rounds = 0;
		p.early_stop = EARLY_STOP;
		p.rng = NULL;
		if (!(rc = cm_fit(t->mk, &p, &train, NULL, &t->base))) {
			t->base_w = 1;
			*used = n;
		}
	}
	tr_part_free(&pt);
	return rc;
}

int model_load_history(tn_ctx *C, tn_task *const *tasks, int ntask, tk_store *hs,
                       const char *hs_name, const char *hw_key, int64_t *nrec)
{
	tr_set H;
	float *y = NULL;
	char *sel = NULL;
	int rc = TK_OK, nh = 0;
	memset(&H, 0, sizeof H);
	*nrec = 0;
	/* the history's rows of each feature kind the tasks read */
	for (int f = 0; f < FEAT_NKIND && !rc; f++) {
		int used = 0;
		for (int i = 0; i < ntask; i++)
			used |= tasks[i]->feat == f;
		if (!used)
			continue;
		tr_set_free(&H);
		free(y);
		free(sel);
		y = NULL;
		sel = NULL;
		if ((rc = tr_set_from_history(hs, hw_key, f, &H)))
			break;
		nh = H.n > nh ? H.n : nh;
		y = malloc(sizeof *y * (size_t)(H.n > 0 ? H.n : 1));
		sel = malloc((size_t)(H.n > 0 ? H.n : 1));
		if (!y || !sel) {
			rc = tk_seterr(TK_ENOMEM, "out of memory");
			break;
		}
		tr_labels(&H, y);
		for (int i = 0; !rc && i < ntask; i++) {
			int64_t n;
			if (tasks[i]->feat == f && !(rc = base_train(C, tasks[i], &H, y, sel, &n)))
				*nrec += n;
		}
	}
	if (!rc && *nrec == 0)
		rc = tk_seterr(TK_EINVAL, "%s: too little history for transfer: %d usable records on "
		               "hardware %s, fewer than %d of any tuned task's operator, task or knob"
		               " space", hs_name, nh, hw_key, HISTORY_MIN);
	free(y);
	free(sel);
	tr_set_free(&H);
	return rc;
}
