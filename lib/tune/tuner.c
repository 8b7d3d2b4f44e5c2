/*
 * tuner: what to measure next for one task, and learning from what was
 * measured. The model-based path follows AutoTVM's ModelBasedTuner
 * (next_batch/update): a plan of plan_size configurations from the search's
 * plan on the model (simulated annealing), the last epsilon share of it
 * random, refits every plan_size records. A model that fine-tunes
 * (CM_FINETUNE: meta) is instead updated on every measured batch and plans
 * batch configurations at a time. Without a model, or with a
 * search that plans on none, the search proposes by itself (random, grid,
 * or annealing chains whose steps are measured). The model and the search
 * are rows of their tables (t->mk, C->sk): nothing here names one.
 */
#include <assert.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tune_int.h"

double tuner_throughput(const tn_task *t, const ms_result *r)
{
	if (r->error != MEAS_OK || !(r->run.median > 0))
		return 0;
	return (t->flops > 0 ? t->flops : 1.0) / r->run.median;
}

typedef struct dist_ctx {
	tn_ctx *C;
	tn_task *t;
} dist_ctx;

static int dist(void *p, const sp_config *c, int n, float *mu, float *sd)
{
	dist_ctx *d = p;
	return model_predict_dist(d->C, d->t, c, n, mu, sd);
}

/* What the search sees of t; dc holds the model's deviation callback's
 * context and must live as long as the env. */
static sr_env env_of(tn_ctx *C, tn_task *t, dist_ctx *dc)
{
	/* model-free annealing: the temperature falls from 1 to 0 over the
	 * task's share of the budget */
	double total = C->o->trials > 0 ? (double)C->o->trials : 1;
	double temp = 1 - (double)t->trials / total;
	int unc = cm_is_model(t->mk) && (t->mk->flags & CM_UNCERTAINTY);
	*dc = (dist_ctx){ C, t };
	sr_env e = { t->space, &t->visited, &t->rng, C->o->batch, temp < 1e-3 ? 1e-3 : temp,
	             t->best_thr, unc ? dist : NULL, dc, C->o->bo_kappa };
	return e;
}

/* Ansor's evolutionary search scores about 2048 x 4 programs for a round
 * of 64 measured; an annealing run on a network's scores (CM_COSTLY, 0.3
 * to 0.6 ms a row on 2 cores) gets as many, where AutoTVM's 128 chains x
 * up to 500 steps would ask for 64,000, 20-40 s per plan. */
#define COSTLY_SCORES 8192

/* The annealing options for t's model: --sa-scores, or its default. */
static sr_sa_opts sa_opts(const tn_ctx *C, const tn_task *t)
{
	sr_sa_opts o = C->o->sa;
	if (o.max_scores < 0)
		o.max_scores = cm_is_model(t->mk) && (t->mk->flags & CM_COSTLY) ? COSTLY_SCORES : 0;
	return o;
}

/* Configurations per plan and records per refit: the batch for a model
 * that fine-tunes (a cheap update, wanted after every measured batch),
 * else AutoTVM's plan_size. */
static int plan_len(const tn_ctx *C, const tn_task *t)
{
	return (t->mk->flags & CM_FINETUNE) ? C->o->batch : C->o->plan_size;
}

/* A random unvisited configuration of the task's pool (--replay-pool):
 * a few random draws, then a scan from a random start. */
static int pool_unvisited(tn_task *t, sp_config *c)
{
	uint32_t n = (uint32_t)t->npool;
	for (int k = 0; k < 64; k++) {
		const sp_config *p = &t->pool[tk_rng_below(&t->rng, n)];
		if (!sr_set_has(&t->visited, sp_index(t->space, p))) {
			*c = *p;
			return 1;
		}
	}
	for (uint32_t i = 0, at = tk_rng_below(&t->rng, n); i < n; i++) {
		const sp_config *p = &t->pool[(at + i) % n];
		if (!sr_set_has(&t->visited, sp_index(t->space, p))) {
			*c = *p;
			return 1;
		}
	}
	return 0;
}

static int random_unvisited(tn_task *t, sp_config *c)
{
	if (t->pool)
		return pool_unvisited(t, c);
	return sr_random_unvisited(t->space, &t->visited, &t->rng, c);
}

static int space_exhausted(const tn_task *t)
{
	return (uint64_t)t->visited.n >= (t->pool ? (uint64_t)t->npool : t->space->size);
}

static int take(tn_task *t, const sp_config *c, sp_config *out, int *n)
{
	int rc = sr_set_add(&t->visited, sp_index(t->space, c));
	if (!rc)
		out[(*n)++] = *c;
	return rc;
}

/* ---- the model-based tuner ------------------------------------------------ */

typedef struct score_ctx {
	tn_ctx *C;
	tn_task *t;
	int panel;   /* configurations that make no order-2 panel score -FLT_MAX */
} score_ctx;

static int score(void *p, const sp_config *c, int n, float *out)
{
	score_ctx *s = p;
	int rc = model_predict(s->C, s->t, c, n, out);
	for (int i = 0; !rc && s->panel && i < n; i++)
		if (!sp_panel(s->t->space, &c[i]))
			out[i] = -FLT_MAX;
	return rc;
}

#define CSA_K 64 /* unmeasured configurations epsilon is estimated on */

/* AdaTune's contextual epsilon: the ensemble's mean standard deviation on
 * CSA_K random unmeasured configurations over the best measured throughput
 * (1 in the model's normalised units), clamped to [0, 1]. */
static int context_epsilon(tn_ctx *C, tn_task *t)
{
	sp_config c[CSA_K];
	float mu[CSA_K], sd[CSA_K];
	int k = 0, rc;
	while (k < CSA_K && random_unvisited(t, &c[k]))
		k++;
	if (k == 0)
		return TK_OK;
	if ((rc = model_predict_dist(C, t, c, k, mu, sd)))
		return rc;
	double s = 0;
	for (int i = 0; i < k; i++)
		s += sd[i];
	t->epsilon = s / k;
	t->epsilon = t->epsilon < 0 ? 0 : t->epsilon > 1 ? 1 : t->epsilon;
	return TK_OK;
}

/* ---- loop orders the plan must try ---------------------------------------
 *
 * A model knows only the loop orders it has seen measured. With a base
 * model from other shapes, or a first plan that happens to favour one order,
 * the annealing can leave another order (a whole other loop structure) all
 * but untried, however well it would do here: the base model of a square
 * GEMM ranks the BLAS order low on BERT's 128-row shapes, where it is the
 * best. Until each value of the order knob has o->cover measured trials,
 * every plan gives up to plan_size / 8 of its slots per missing value to
 * the model's best configurations with that order (an annealing with the
 * knob held fixed), in place of its lowest-ranked entries; so tiles are
 * still chosen by the model, and the model then learns each order from its
 * own good points. Ansor keeps a population per sketch for the same reason.
 * Order 2 is only itself with its weight packed in panels (sp_panel): its
 * slots go to configurations that pack the panel read, in panels that fit
 * (without that, the model's favourite tiles from the other orders make
 * panels too large to be panels, and order 2 is tried as a copy of order 0).
 */
#define ORDER_MAX 8 /* values of the order knob covered (the templates have 3) */

static int order_knob(const sp_space *sp)
{
	for (int k = 0; k < sp->nknob; k++)
		if (sp->knob[k].role == KR_ORDER && sp->knob[k].kind == KNOB_ENUM && sp->knob[k].n > 1)
			return k;
	return -1;
}

static int in_plan(const tn_task *t, const sp_config *c, int n)
{
	uint64_t x = sp_index(t->space, c);
	for (int i = 0; i < n; i++)
		if (sp_index(t->space, &t->plan[i]) == x)
			return 1;
	return 0;
}

/* The knob of the panel read's packing, -1 if none. */
static int panel_pack_knob(const sp_space *sp)
{
	for (int k = 0; sp->panel_read >= 0 && k < sp->nknob; k++)
		if (sp->knob[k].role == KR_PACK && sp->knob[k].read == sp->panel_read)
			return k;
	return -1;
}

/* How many of c[0..n) have order value v of knob k (and, with panels, make
 * an order-2 panel). */
static int count_order(const sp_space *sp, const sp_config *c, int n, int k, int v, int panels)
{
	int m = 0;
	for (int i = 0; i < n; i++)
		m += c[i].v[k] == v && (!panels || sp_panel(sp, &c[i]));
	return m;
}

/* Whether c counts towards the cover of its order value (an order-2
 * entry without panels is order 2 in name only). */
static int covers(const sp_space *sp, const sp_config *c, int k, const int *panels)
{
	return !panels[c->v[k]] || sp_panel(sp, c);
}

static int cover_orders(tn_ctx *C, tn_task *t)
{
	int k = order_knob(t->space), rc = TK_OK;
	int usable = t->nplan - (int)(t->epsilon * plan_len(C, t));
	int slots = plan_len(C, t) / 8 > 0 ? plan_len(C, t) / 8 : 1;
	if (k < 0 || C->o->cover <= 0 || usable <= 0)
		return TK_OK;
	int nv = t->space->knob[k].n, need[ORDER_MAX] = { 0 }, quota[ORDER_MAX] = { 0 };
	int have[ORDER_MAX] = { 0 }, panels[ORDER_MAX] = { 0 }, keep_from = usable;
	if (nv > ORDER_MAX)
		return TK_OK;
	int pk = panel_pack_knob(t->space);
	for (int v = 0; v < nv; v++) {
		/* order 2 counts only where it makes panels */
		panels[v] = t->space->knob[k].cand[v] == 2 && pk >= 0;
		quota[v] = C->o->cover - count_order(t->space, t->xc, t->nx, k, v, panels[v]);
		quota[v] = quota[v] < 0 ? 0 : quota[v] < slots ? quota[v] : slots;
		have[v] = count_order(t->space, t->plan, usable, k, v, panels[v]);
		need[v] = quota[v] - have[v];
	}
	sp_config *cand = malloc(sizeof *cand * (size_t)(slots + usable));
	float *sc = malloc(sizeof *sc * (size_t)(slots + usable));
	if (!cand || !sc) {
		free(cand);
		free(sc);
		return tk_seterr(TK_ENOMEM, "out of memory");
	}
	for (int v = 0; v < nv && !rc; v++) {
		if (need[v] <= 0)
			continue;
		sr_sa_opts o = sa_opts(C, t);
		sr_sa *sa;
		score_ctx s = { C, t, 0 };
		int got = 0;
		o.persistent = 0;
		o.nfix = 1;
		o.fix_knob[0] = k;
		o.fix_value[0] = v;
		if (panels[v]) {
			o.fix_knob[o.nfix] = pk;
			o.fix_value[o.nfix++] = 1; /* candidate 1 of the pack knob {0, 1}: packed */
			s.panel = 1;
		}
		if ((rc = sr_sa_new(t->space, &o, &sa)))
			break;
		rc = sr_sa_find(sa, score, &s, &t->visited, &t->rng, need[v] + usable, cand, sc, &got);
		sr_sa_free(sa);
		for (int j = 0; j < got && need[v] > 0 && !rc; j++) {
			if (sc[j] == -FLT_MAX || in_plan(t, &cand[j], usable))
				continue;
			/* the lowest-ranked entry its order's cover can spare
			 * (every order may lack trials at first: an order with
			 * more entries than its quota gives up the surplus) */
			int at = keep_from - 1, w = 0;
			for (; at >= 0; at--) {
				w = t->plan[at].v[k];
				if (!covers(t->space, &t->plan[at], k, panels) || have[w] > quota[w])
					break;
			}
			if (at < 0)
				break;
			if (covers(t->space, &t->plan[at], k, panels))
				have[w]--;
			memmove(&t->plan[at], &t->plan[at + 1], sizeof *t->plan * (size_t)(keep_from - 1 - at));
			t->plan[--keep_from] = cand[j];
			need[v]--;
		}
	}
	free(cand);
	free(sc);
	return rc;
}

typedef struct ranked {
	float s;
	int i;
} ranked;

static int by_score_desc(const void *a, const void *b)
{
	const ranked *x = a, *y = b;
	if (x->s != y->s)
		return x->s > y->s ? -1 : 1;
	return (x->i > y->i) - (x->i < y->i);
}

/* The plan of a task searched in its pool (--replay-pool): the model scores
 * every unvisited configuration of the pool, the best want are the plan,
 * highest first (TenSet's and TLP's search on a measured pool). */
static int plan_on_pool(tn_ctx *C, tn_task *t, int want)
{
	int n = 0, rc = TK_OK;
	sp_config *c = malloc(sizeof *c * (size_t)t->npool);
	float *sc = malloc(sizeof *sc * (size_t)t->npool);
	ranked *rk = malloc(sizeof *rk * (size_t)t->npool);
	score_ctx s = { C, t, 0 };
	if (!c || !sc || !rk) {
		rc = tk_seterr(TK_ENOMEM, "out of memory");
		goto done;
	}
	for (int i = 0; i < t->npool; i++)
		if (!sr_set_has(&t->visited, sp_index(t->space, &t->pool[i])))
			c[n++] = t->pool[i];
	if (n > 0 && (rc = score(&s, c, n, sc)))
		goto done;
	for (int i = 0; i < n; i++)
		rk[i] = (ranked){ sc[i], i };
	qsort(rk, (size_t)n, sizeof *rk, by_score_desc);
	if (want > n)
		want = n;
	free(t->plan);
	if (!(t->plan = malloc(sizeof *t->plan * (size_t)(want ? want : 1)))) {
		rc = tk_seterr(TK_ENOMEM, "out of memory");
		goto done;
	}
	for (int i = 0; i < want; i++)
		t->plan[i] = c[rk[i].i];
	t->nplan = want;
	t->plan_pt = 0;
done:
	free(c);
	free(sc);
	free(rk);
	return rc;
}

/* A new plan of plan_len trials from the search on t's model, refit first
 * when fit is set. */
static int plan_on_model(tn_ctx *C, tn_task *t, int fit)
{
	int rc, plan = plan_len(C, t), want = plan;
	double t0 = tk_now();
	rc = fit ? model_fit(C, t) : TK_OK;
	t->fit_s += tk_now() - t0;
	if (rc)
		return rc;
	if ((C->sk->flags & SR_CONTEXT_EPSILON) && t->nx > 0 && (rc = context_epsilon(C, t)))
		return rc;
	if (t->pool) {
		if (!(rc = plan_on_pool(C, t, plan)))
			t->fits += fit;
		return rc;
	}
	if (C->o->diversity > 1)
		want = plan * C->o->diversity;
	sp_config *cand = malloc(sizeof *cand * (size_t)want);
	float *sc = malloc(sizeof *sc * (size_t)want);
	int *pick = malloc(sizeof *pick * (size_t)plan);
	int got = 0;
	score_ctx s = { C, t, 0 };
	if (!cand || !sc || !pick) {
		rc = tk_seterr(TK_ENOMEM, "out of memory");
		goto done;
	}
	dist_ctx dc;
	sr_env e = env_of(C, t, &dc);
	sr_sa_opts so = sa_opts(C, t);
	if ((rc = C->sk->plan(&t->search, &e, &so, score, &s, want, cand, sc, &got)))
		goto done;
	free(t->plan);
	t->plan = malloc(sizeof *t->plan * (size_t)(got ? got : 1));
	if (!t->plan) {
		rc = tk_seterr(TK_ENOMEM, "out of memory");
		goto done;
	}
	if (C->o->diversity > 1 && got > plan) {
		/* AutoTVM: submodular pick on diversity alone (scores times 0) */
		if ((rc = sr_diverse(t->space, cand, NULL, got, plan, 1.0, pick)))
			goto done;
		for (int i = 0; i < plan; i++)
			t->plan[i] = cand[pick[i]];
		t->nplan = plan;
	} else {
		memcpy(t->plan, cand, sizeof *cand * (size_t)got);
		t->nplan = got;
	}
	t->plan_pt = 0;
	t->fits += fit;
	rc = cover_orders(C, t);
done:
	free(cand);
	free(sc);
	free(pick);
	return rc;
}

static int replan(tn_ctx *C, tn_task *t)
{
	return plan_on_model(C, t, 1);
}

int tuner_plan(tn_ctx *C, tn_task *t)
{
	return plan_on_model(C, t, 0);
}

/* ---- ML2Tuner's explorer ----------------------------------------------------
 *
 * For a model with CM_HIDDEN once it is fit: candidates come in the plan's
 * order (the search on P's scores; a new plan on the same model when it
 * runs out, then random ones), V drops those it predicts invalid
 * (probability under 1/2; they count as visited and are never measured),
 * until (alpha + 1) x want have passed; their hidden features are computed
 * (the compile, cached for the refits) and A's scores pick the want to
 * measure. The ablations leave out V (stages "A") or A (stages "V": the
 * first want that pass V, nothing compiled). */

#define ML2_TRIES 64 /* candidates looked at per one wanted, at most */

static int in_list(const tn_task *t, const sp_config *c, const sp_config *v, int n)
{
	uint64_t x = sp_index(t->space, c);
	for (int i = 0; i < n; i++)
		if (sp_index(t->space, &v[i]) == x)
			return 1;
	return 0;
}

/* The next candidate not visited nor in cand[0..n): the plan's, a new
 * plan's (once per call: *replanned), or a random one. 0 if none. */
static int ml2_candidate(tn_ctx *C, tn_task *t, const sp_config *cand, int n, int *replanned,
                         sp_config *c, int *rc)
{
	for (;;) {
		while (t->plan_pt < t->nplan) {
			*c = t->plan[t->plan_pt++];
			if (!sr_set_has(&t->visited, sp_index(t->space, c)) && !in_list(t, c, cand, n))
				return 1;
		}
		if (*replanned)
			break;
		*replanned = 1;
		if ((*rc = plan_on_model(C, t, 0)))
			return 0;
	}
	for (int k = 0; k < 16; k++)
		if (random_unvisited(t, c) && !in_list(t, c, cand, n))
			return 1;
	return 0;
}

/* Sort c[0..n) by p, highest first (n is a batch: insertion sort). */
static void rk_fill_sort(sp_config *c, float *p, int n)
{
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && p[j] > p[j - 1]; j--) {
			sp_config tc = c[j];
			float tp = p[j];
			c[j] = c[j - 1];
			p[j] = p[j - 1];
			c[j - 1] = tc;
			p[j - 1] = tp;
		}
}

static int ml2_next(tn_ctx *C, tn_task *t, int want, sp_config *out, int *n)
{
	int use_v = C->o->ml2_stages != TN_ML2_A, use_a = C->o->ml2_stages != TN_ML2_V;
	int cap = use_a ? (int)ceil((C->o->alpha + 1) * want) : want, got = 0, rc = TK_OK;
	int replanned = 0, tries = 0, fd, dh = 0;
	cap = cap < want ? want : cap;
	sp_config *cand = malloc(sizeof *cand * (size_t)cap);
	sp_config *chunk = malloc(sizeof *chunk * (size_t)cap);
	sp_config *rej = malloc(sizeof *rej * (size_t)want); /* the likeliest V dropped */
	float *rej_p = malloc(sizeof *rej_p * (size_t)want);
	float *x = NULL, *pv = malloc(sizeof *pv * (size_t)cap), *xh = NULL, *sc = NULL;
	ranked *rk = NULL;
	int nrej = 0;
	if (!cand || !chunk || !rej || !rej_p || !pv || (rc = model_width(t, &fd)) ||
	    !(x = malloc(sizeof *x * (size_t)cap * (size_t)(fd > 0 ? fd : 1)))) {
		rc = rc ? rc : tk_seterr(TK_ENOMEM, "out of memory");
		goto done;
	}
	while (got < cap && tries < ML2_TRIES * cap && !rc) {
		int m = 0;
		sp_config c;
		while (got + m < cap && ml2_candidate(C, t, cand, got, &replanned, &c, &rc) &&
		       !in_list(t, &c, chunk, m))
			chunk[m++] = c;
		if (rc || m == 0)
			break;
		tries += m;
		if (use_v && ((rc = model_features(C, t, chunk, m, x, &fd)) ||
		              (rc = cm_screen(t->model, x, m, fd, pv))))
			break;
		for (int i = 0; i < m && !rc; i++) {
			if (use_v && pv[i] < 0.5f) {
				/* predicted invalid: dropped (the want likeliest kept aside) */
				rc = sr_set_add(&t->visited, sp_index(t->space, &chunk[i]));
				t->ml2_dropped++;
				int at = nrej < want ? nrej++ : -1;
				if (at < 0) { /* full: in place of the least likely, if below */
					at = 0;
					for (int j = 1; j < nrej; j++)
						at = rej_p[j] < rej_p[at] ? j : at;
					at = rej_p[at] < pv[i] ? at : -1;
				}
				if (at >= 0) {
					rej[at] = chunk[i];
					rej_p[at] = pv[i];
				}
			} else {
				cand[got++] = chunk[i];
			}
		}
	}
	if (rc)
		goto done;
	if (got < want && nrej > 0) {
		/* fewer than a batch passed V: the batch is filled with those V
		 * found likeliest valid, never measured otherwise (early on V
		 * has seen few valid records and drops nearly everything) */
		rk_fill_sort(rej, rej_p, nrej);
		for (int i = 0; i < nrej && got < want; i++) {
			cand[got++] = rej[i];
			t->ml2_dropped--;
		}
	}
	if (got == 0) {
		/* nothing to screen: a random batch rather than none */
		sp_config c;
		while (*n < want && random_unvisited(t, &c) && !rc)
			rc = take(t, &c, out, n);
		goto done;
	}
	rk = malloc(sizeof *rk * (size_t)got);
	sc = malloc(sizeof *sc * (size_t)got);
	if (!rk || !sc) {
		rc = tk_seterr(TK_ENOMEM, "out of memory");
		goto done;
	}
	for (int i = 0; i < got; i++)
		sc[i] = (float)-i; /* P's order */
	if (use_a) {
		int d1 = model_hidden_length(C, t), *ok = NULL, kept = 0;
		if (d1 > 0 && (!(xh = malloc(sizeof *xh * (size_t)got * (size_t)d1)) ||
		               !(ok = malloc(sizeof *ok * (size_t)got)))) {
			free(ok);
			rc = tk_seterr(TK_ENOMEM, "out of memory");
			goto done;
		}
		if (d1 > 0 && (rc = model_hidden(C, t, cand, got, xh, &dh, ok))) {
			free(ok);
			goto done;
		}
		/* what does not compile is invalid without being measured */
		for (int i = 0; dh && i < got; i++) {
			if (!ok[i]) {
				t->ml2_failed++;
				if ((rc = sr_set_add(&t->visited, sp_index(t->space, &cand[i]))))
					break;
				continue;
			}
			cand[kept] = cand[i];
			memmove(&xh[(size_t)kept * (size_t)dh], &xh[(size_t)i * (size_t)dh],
			        sizeof *xh * (size_t)dh);
			kept++;
		}
		free(ok);
		if (rc)
			goto done;
		got = dh ? kept : got;
		if (got > 0 && ((rc = model_features(C, t, cand, got, x, &fd)) ||
		                (rc = cm_pick(t->model, x, got, fd, dh ? xh : NULL, dh, sc))))
			goto done;
		if (got == 0) {
			/* nothing compiled: a random batch rather than none */
			sp_config c;
			while (*n < want && random_unvisited(t, &c) && !rc)
				rc = take(t, &c, out, n);
			goto done;
		}
	}
	for (int i = 0; i < got; i++)
		rk[i] = (ranked){ sc[i], i };
	qsort(rk, (size_t)got, sizeof *rk, by_score_desc);
	for (int i = 0; i < got && *n < want && !rc; i++)
		rc = take(t, &cand[rk[i].i], out, n);
done:
	free(cand);
	free(chunk);
	free(rej);
	free(rej_p);
	free(x);
	free(pv);
	free(xh);
	free(sc);
	free(rk);
	return rc;
}

int tuner_next(tn_ctx *C, tn_task *t, int want, sp_config *out, int *n)
{
	int rc = TK_OK;
	*n = 0;
	if (C->model_based && (t->mk->flags & CM_HIDDEN) && t->model) {
		rc = ml2_next(C, t, want, out, n);
	} else if (!C->model_based && t->pool) {
		sp_config c;
		while (*n < want && !rc && random_unvisited(t, &c))
			rc = take(t, &c, out, n);
	} else if (!C->model_based) {
		dist_ctx dc;
		sr_env e = env_of(C, t, &dc);
		rc = C->sk->next(&t->search, &e, want, out, n);
	} else {
		/* ModelBasedTuner.next_batch */
		int eps = (int)(t->epsilon * plan_len(C, t));
		while (*n < want && !space_exhausted(t) && !rc) {
			sp_config c;
			while (t->plan_pt < t->nplan &&
			       sr_set_has(&t->visited, sp_index(t->space, &t->plan[t->plan_pt])))
				t->plan_pt++;
			if (t->plan_pt >= t->nplan - eps) {
				if (!random_unvisited(t, &c))
					break;
			} else {
				c = t->plan[t->plan_pt++];
			}
			rc = take(t, &c, out, n);
		}
	}
	if (!rc && *n == 0)
		t->done = 1;
	return rc;
}

int tuner_next_predicted(tn_ctx *C, tn_task *t, int want, sp_config *out, int *n)
{
	int rc = TK_OK, fresh = 0;
	*n = 0;
	assert(C->model_based);
	while (*n < want && !space_exhausted(t) && !rc) {
		while (t->plan_pt < t->nplan &&
		       sr_set_has(&t->visited, sp_index(t->space, &t->plan[t->plan_pt])))
			t->plan_pt++;
		if (t->plan_pt < t->nplan) {
			rc = take(t, &t->plan[t->plan_pt++], out, n);
			fresh = 0;
		} else if (fresh) {
			break; /* a new plan found nothing unvisited */
		} else {
			rc = plan_on_model(C, t, 0);
			fresh = 1;
		}
	}
	if (!rc && *n == 0)
		t->done = 1;
	return rc;
}

int tuner_start(tn_ctx *C, tn_task *t)
{
	int rc = TK_OK;
	if ((t->base || t->fixed) && t->fits == 0 && C->model_based) {
		/* AutoTVM plans the first trials on the base model alone and does
		 * not count that as a fit: the first refit still comes at plan_size
		 * (a trained model from a file plans them likewise) */
		rc = replan(C, t);
		t->fits = 0;
	}
	return rc;
}

int tuner_update(tn_ctx *C, tn_task *t, const sp_config *c, const ms_result *r, int n)
{
	const tn_opts *o = C->o;
	for (int i = 0; i < n; i++) {
		double y = tuner_throughput(t, &r[i]);
		t->trials++;
		if (y <= 0)
			t->invalid++;
		if (y > t->best_thr) {
			t->best_thr = y;
			t->best_lat = r[i].run.median;
			t->last_improve = t->trials;
		}
		if (t->nx == t->capx) {
			int cap = t->capx ? 2 * t->capx : 256;
			sp_config *xc = realloc(t->xc, sizeof *xc * (size_t)cap);
			if (!xc)
				return tk_seterr(TK_ENOMEM, "out of memory");
			t->xc = xc;
			float *ys = realloc(t->ys, sizeof *ys * (size_t)cap);
			if (!ys)
				return tk_seterr(TK_ENOMEM, "out of memory");
			t->ys = ys;
			unsigned char *bnd = realloc(t->bnd, sizeof *bnd * (size_t)cap);
			if (!bnd)
				return tk_seterr(TK_ENOMEM, "out of memory");
			t->bnd = bnd;
			t->capx = cap;
		}
		t->xc[t->nx] = c[i];
		t->bnd[t->nx] = y > 0 && r[i].run.bounded;
		t->ys[t->nx++] = (float)y;
	}
	if (!C->model_based && C->sk->learn) {
		double *thr = malloc(sizeof *thr * (size_t)(n > 0 ? n : 1));
		if (!thr)
			return tk_seterr(TK_ENOMEM, "out of memory");
		for (int i = 0; i < n; i++)
			thr[i] = tuner_throughput(t, &r[i]);
		dist_ctx dc;
		sr_env e = env_of(C, t, &dc);
		C->sk->learn(t->search, &e, c, thr, n);
		free(thr);
	}
	if (o->early_stop > 0 && t->trials - t->last_improve >= o->early_stop)
		t->done = 1;
	/* ModelBasedTuner.update: refit once plan_size (plan_len) more records
	 * arrived */
	if (C->model_based &&
	    t->nx >= plan_len(C, t) * (t->fits + 1) && t->best_thr > 0)
		return replan(C, t);
	return TK_OK;
}

void tuner_task_free(tn_task *t)
{
	if (!t)
		return;
	free(t->key);
	ms_task_free(t->mt);
	sp_space_free(t->own_space);
	sr_set_free(&t->visited);
	free(t->xc);
	free(t->ys);
	free(t->bnd);
	free(t->plan);
	free(t->pool);
	free(t->ctop);
	free(t->ctop_s);
	cm_free(t->model);
	cm_free(t->base);
	cm_free(t->scratch);
	if (t->search)
		t->free_search(t->search);
	fcache_free(&t->fc);
	fcache_free(&t->sc);
	fcache_free(&t->hc);
	fcache_free(&t->sfc);
	free(t);
}
