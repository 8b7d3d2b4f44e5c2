/*
 * meta: `tunekit pretrain-meta`'s pipeline (train.h, tr_pretrain_meta): a
 * dataset store's graph-feature rows -> labels per task -> held-out tasks
 * put aside -> MetaTune's supervised pre-training and first-order MAML
 * (model/meta.h) -> the few-shot evaluation -> the model file, the model
 * table, and a run whose log is the loss curve.
 */
#include "train.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "features/feature.h"
#include "store/store_tuning.h"
#include "task/te.h"

/* ---- progress and the loss curve ----------------------------------------- */

typedef struct curve {
	int n[2], cap[2];
	double *loss[2], *before;   /* per phase; before: MAML's pre-adaptation loss */
	const tr_meta_hooks *h;
	int rc;
} curve;

static int on_step(void *ctx, const meta_progress *p)
{
	curve *c = ctx;
	int ph = p->phase;
	if (c->n[ph] == c->cap[ph]) {
		int cap = c->cap[ph] ? 2 * c->cap[ph] : 256;
		double *v = realloc(c->loss[ph], sizeof *v * (size_t)cap);
		if (!v)
			return c->rc = tk_seterr(TK_ENOMEM, "out of memory"), 1;
		c->loss[ph] = v;
		if (ph == META_MAML) {
			if (!(v = realloc(c->before, sizeof *v * (size_t)cap)))
				return c->rc = tk_seterr(TK_ENOMEM, "out of memory"), 1;
			c->before = v;
		}
		c->cap[ph] = cap;
	}
	if (ph == META_MAML)
		c->before[c->n[ph]] = p->before;
	c->loss[ph][c->n[ph]++] = p->loss;
	if (c->h && c->h->progress)
		c->h->progress(c->h->ctx, p);
	return c->h && c->h->stop && *c->h->stop;
}

/* Mean of v[from .. to). */
static double mean(const double *v, int from, int to)
{
	double s = 0;
	for (int i = from; i < to; i++)
		s += v[i];
	return to > from ? s / (to - from) : NAN;
}

static int log_curve(tk_store *st, int64_t run, const curve *c)
{
	int rc = store_begin(st);
	for (int i = 0; !rc && i < c->n[META_PRETRAIN]; i++)
		rc = store_run_log(st, run, i + 1, "pretrain_loss", c->loss[META_PRETRAIN][i]);
	for (int i = 0; !rc && i < c->n[META_MAML]; i++) {
		rc = store_run_log(st, run, i + 1, "meta_loss", c->loss[META_MAML][i]);
		if (!rc)
			rc = store_run_log(st, run, i + 1, "meta_loss_before", c->before[i]);
	}
	if (!rc)
		return store_commit(st);
	store_rollback(st);
	return rc;
}

/* ---- the held-out tasks and the classes -------------------------------------- */

/* Mark task key (any spelling) held out: 1 if the set has it. */
static int hold_task(tr_set *ts, const char *key)
{
	te_prog *p = NULL;
	const char *k = key;
	int found = 0;
	if (te_task_parse(key, &p) == TK_OK)
		k = p->key;
	for (int t = 0; t < ts->ntask; t++)
		if (!strcmp(ts->tasks[t].key, k) || !strcmp(ts->tasks[t].key, key)) {
			ts->tasks[t].holdout = 1;
			found = 1;
		}
	te_prog_free(p);
	return found;
}

/* Mark in sel the rows of pre-training (2: a seeded share of the tasks not
 * held out, all of them when share is 1), of MAML alone (0) and held out
 * (1). */
static int choose_pretrain(const tr_set *ts, double share, uint64_t seed, char *sel)
{
	int nt = 0, k, *perm = malloc(sizeof *perm * (size_t)(ts->ntask ? ts->ntask : 1));
	char *pre = calloc((size_t)(ts->ntask ? ts->ntask : 1), 1);
	if (!perm || !pre) {
		free(perm);
		free(pre);
		return tk_seterr(TK_ENOMEM, "out of memory");
	}
	for (int t = 0; t < ts->ntask; t++)
		if (!ts->tasks[t].holdout)
			perm[nt++] = t;
	tk_rng r;
	tk_rng_seed(&r, seed, 0x707265 /* "pre" */);
	for (int i = nt - 1; i > 0; i--) {
		int j = (int)tk_rng_below(&r, (uint32_t)i + 1), x = perm[i];
		perm[i] = perm[j];
		perm[j] = x;
	}
	k = share >= 1 ? nt : (int)floor(share * nt + 0.5);
	k = k < 1 ? 1 : k;
	for (int i = 0; i < k && i < nt; i++)
		pre[perm[i]] = 1;
	for (int i = 0; i < ts->n; i++) {
		const tr_task *t = &ts->tasks[ts->task[i]];
		sel[i] = t->holdout ? 1 : pre[ts->task[i]] ? 2 : 0;
	}
	free(perm);
	free(pre);
	return TK_OK;
}

/* A part's tasks as meta_tasks: rows of group g are contiguous; the class
 * of a task is its operator (the key up to ':'). The arrays are malloc'd
 * into *first, *n, *cls (freed by the caller). */
static int part_tasks(const tr_part *pt, const tr_set *ts, meta_tasks *mt, int **first, int **n,
                      int **cls)
{
	int G = pt->ngroup, at = 0;
	*first = malloc(sizeof **first * (size_t)(G ? G : 1));
	*n = malloc(sizeof **n * (size_t)(G ? G : 1));
	*cls = malloc(sizeof **cls * (size_t)(G ? G : 1));
	if (!*first || !*n || !*cls)
		return tk_seterr(TK_ENOMEM, "out of memory");
	for (int g = 0; g < G; g++) {
		(*first)[g] = at;
		(*n)[g] = (int)pt->group[g];
		const char *key = ts->tasks[pt->task[at]].key, *colon = strchr(key, ':');
		size_t len = colon ? (size_t)(colon - key) : strlen(key);
		(*cls)[g] = g;
		for (int h = 0; h < g; h++) {
			const char *k2 = ts->tasks[pt->task[(*first)[h]]].key;
			if (!strncmp(k2, key, len) && (k2[len] == ':' || !k2[len])) {
				(*cls)[g] = (*cls)[h];
				break;
			}
		}
		at += (int)pt->group[g];
	}
	*mt = (meta_tasks){ G, *first, *n, *cls };
	return TK_OK;
}

/* ---- the model file ------------------------------------------------------------- */

static int set_num(mf_meta *mm, const char *key, const char *fmt, double v)
{
	char b[48];
	if (isnan(v))
		return TK_OK; /* nothing measured: no key */
	snprintf(b, sizeof b, fmt, v);
	return mf_set(mm, key, b);
}

/* strcmp of a[0..n) and b[0..m) */
static int op_cmp(const char *a, size_t n, const char *b, size_t m)
{
	int c = strncmp(a, b, n < m ? n : m);
	return c ? c : (n > m) - (n < m);
}

/* The operators (task keys up to ':') of the tasks meta-trained on, not
 * held out, in order and comma-separated into buf: what tune trusts the
 * model with. */
static int trained_ops(const tr_set *ts, char *buf, size_t size)
{
	size_t at = 0, last = 0;
	const char *prev = NULL;
	buf[0] = 0;
	for (;;) { /* the least operator after prev, until none is left */
		const char *best = NULL;
		size_t blen = 0;
		for (int i = 0; i < ts->ntask; i++) {
			const char *key = ts->tasks[i].key;
			size_t len = strcspn(key, ":");
			if (ts->tasks[i].holdout || (prev && op_cmp(key, len, prev, last) <= 0) ||
			    (best && op_cmp(key, len, best, blen) >= 0))
				continue;
			best = key;
			blen = len;
		}
		if (!best)
			return TK_OK;
		if (at + blen + 2 > size)
			return tk_seterr(TK_EINVAL, "too many operators in the meta-training set to name");
		at += (size_t)snprintf(buf + at, size - at, "%s%.*s", at ? "," : "", (int)blen, best);
		prev = best;
		last = blen;
	}
}

static int write_model(tk_store *st, const tr_meta_opts *o, const tr_set *ts, cm_model *m,
                       tr_meta_result *r)
{
	char ops[256];
	const meta_opts *mo = &o->mo;
	mf_meta mm;
	char hw[32];
	memset(&mm, 0, sizeof mm);
	snprintf(hw, sizeof hw, "%lld", (long long)r->src.hw_id);
	int rc = cm_describe(m, &mm);
	if (!rc)
		rc = mf_set(&mm, "feature", feat_kind_name(FEAT_GRAPH));
#define NUM(k, f, v) if (!rc) rc = set_num(&mm, k, f, (double)(v))
	NUM("feature_version", "%.0f", feat_version(FEAT_GRAPH));
	NUM("feature_length", "%.0f", FEAT_GRAPH_LEN);
	if (!rc && !(rc = trained_ops(ts, ops, sizeof ops)))
		rc = mf_set(&mm, "operators", ops);
	if (!rc)
		rc = mf_set(&mm, "hardware", r->src.hw_key);
	if (!rc)
		rc = mf_set(&mm, "hardware_id", hw);
	NUM("n_train", "%.0f", r->nrow);
	NUM("n_holdout", "%.0f", r->nhold_row);
	NUM("seed", "%.0f", mo->seed);
	NUM("created", "%.0f", time(NULL));
	NUM("run", "%.0f", r->run_id);
	NUM("alpha", "%g", mo->alpha);
	NUM("beta", "%g", mo->beta);
	NUM("inner_steps", "%.0f", mo->inner_steps);
	NUM("tasks_per_batch", "%.0f", mo->tasks_per_batch);
	NUM("ways", "%.0f", mo->ways);
	NUM("shots", "%.0f", mo->shots);
	NUM("queries", "%.0f", mo->queries);
	NUM("epochs", "%.0f", r->epochs);
	NUM("meta_steps", "%.0f", mo->meta_steps);
	NUM("meta_loss_first", "%.6g", r->meta_first);
	NUM("meta_loss_last", "%.6g", r->meta_last);
	NUM("train_fewshot_mse_before", "%.6g", r->train_before);
	NUM("train_fewshot_mse_after", "%.6g", r->train_after);
	NUM("holdout_fewshot_mse_before", "%.6g", r->hold_before);
	NUM("holdout_fewshot_mse_after", "%.6g", r->hold_after);
#undef NUM
	if (!rc)
		rc = tr_write_model(st, o->path, m, &mm, r->src.hw_id, &r->model_id);
	return rc;
}

/* ---- the pipeline ------------------------------------------------------------------- */

int tr_pretrain_meta(tk_store *st, const tr_meta_opts *o, const tr_meta_hooks *h,
                     tr_meta_result *res)
{
	const meta_opts *mo = &o->mo;
	tr_set ts;
	tr_part pre, train, hold;
	float *y = NULL;
	char *sel = NULL;
	int *first = NULL, *n = NULL, *cls = NULL, *hfirst = NULL, *hn = NULL, *hcls = NULL;
	cm_model *m = NULL;
	curve c = { { 0 }, { 0 }, { NULL, NULL }, NULL, h, TK_OK };
	meta_tasks mt, ht;
	int rc, d = FEAT_GRAPH_LEN;
	memset(&ts, 0, sizeof ts);
	memset(&pre, 0, sizeof pre);
	memset(&train, 0, sizeof train);
	memset(&hold, 0, sizeof hold);
	memset(res, 0, sizeof *res);
	res->train_before = res->train_after = res->hold_before = res->hold_after = NAN;
	res->meta_first = res->meta_last = res->pretrain_loss = NAN;
	if ((rc = meta_opts_check(mo)))
		return rc;
	tr_load_opts lo = { FEAT_GRAPH, o->hardware, NULL, 0, NULL, 0 };
	if ((rc = tr_load(st, &lo, &ts, &res->src)))
		goto done;
	for (int i = 0; i < o->nhold && !rc; i++)
		if (!hold_task(&ts, o->hold[i]))
			rc = tk_seterr(TK_EINVAL, "held-out task %s: no records of it with graph features",
			               o->hold[i]);
	for (int i = 0; i < o->nhold_net && !rc; i++)
		hold_task(&ts, o->hold_net[i]);
	if (rc)
		goto done;
	y = malloc(sizeof *y * (size_t)(ts.n ? ts.n : 1));
	sel = malloc((size_t)(ts.n ? ts.n : 1));
	if (!y || !sel) {
		rc = tk_seterr(TK_ENOMEM, "out of memory");
		goto done;
	}
	tr_labels(&ts, y);
	if ((rc = choose_pretrain(&ts, o->pretrain_share, mo->seed, sel)))
		goto done;
	/* sel: 1 held out, 2 pre-training and MAML, 0 MAML alone */
	if ((rc = tr_part_build(&ts, y, sel, 2, d, &pre)) ||
	    (rc = tr_part_build(&ts, y, sel, o->pretrain_share < 1 ? 0 : 2, d, &train)) ||
	    (rc = tr_part_build(&ts, y, sel, 1, d, &hold)) ||
	    (rc = part_tasks(&train, &ts, &mt, &first, &n, &cls)) ||
	    (rc = part_tasks(&hold, &ts, &ht, &hfirst, &hn, &hcls)))
		goto done;
	res->ntask = mt.ntask;
	res->nrow = train.n;
	res->npre = pre.n;
	res->nhold_task = ht.ntask;
	res->nhold_row = hold.n;
	for (int t = 0; t < mt.ntask; t++) {
		res->nelig += n[t] >= mo->shots + mo->queries;
		res->most = n[t] > res->most ? n[t] : res->most;
	}
	if (train.n == 0 || pre.n == 0) {
		rc = tk_seterr(TK_EINVAL, "%s", pre.n ? "no task left for MAML after pre-training's share"
		               : "every task is held out: nothing left to meta-train on");
		goto done;
	}
	if (res->nelig < mo->ways) {
		rc = tk_seterr(TK_EINVAL, "too few configurations per task for %d shots and %d queries:"
		               " %d of the %d tasks have %d or more (the most any has is %d), --ways %d"
		               " needs %d", mo->shots, mo->queries, res->nelig, mt.ntask,
		               mo->shots + mo->queries, res->most, mo->ways, mo->ways);
		goto done;
	}
	store_run sr = { o->argv ? o->argv : "pretrain-meta", "pretrain-meta", NULL,
	                 (int64_t)mo->seed, res->src.hw_id };
	if ((rc = store_run_begin(st, &sr, &res->run_id)))
		goto done;
	cm_data dpre = tr_part_data(&pre), dtr = tr_part_data(&train), dho = tr_part_data(&hold);
	double t0 = tk_now();
	rc = meta_pretrain(mo, &dpre, on_step, &c, &m);
	res->pretrain_s = tk_now() - t0;
	if (!rc) {
		res->epochs = c.n[META_PRETRAIN];
		res->pretrain_loss = res->epochs ? c.loss[META_PRETRAIN][res->epochs - 1] : NAN;
		t0 = tk_now();
		rc = meta_maml(m, mo, &dtr, &mt, on_step, &c);
		res->maml_s = tk_now() - t0;
	}
	if (c.rc)
		rc = c.rc;
	if (rc == TK_EINTR)
		rc = tk_seterr(TK_EINTR, "interrupted; run %lld stays unfinished, no model written",
		               (long long)res->run_id);
	if (rc)
		goto done;
	int k = c.n[META_MAML], tenth = k / 10 > 0 ? k / 10 : 1;
	if (k) {
		res->meta_first = mean(c.loss[META_MAML], 0, tenth < k ? tenth : k);
		res->meta_last = mean(c.loss[META_MAML], k - tenth > 0 ? k - tenth : 0, k);
	}
	if ((rc = meta_eval(m, &dtr, &mt, mo->shots, mo->seed, &res->train_before,
	                    &res->train_after, &res->train_ntask)) ||
	    (hold.n && (rc = meta_eval(m, &dho, &ht, mo->shots, mo->seed, &res->hold_before,
	                               &res->hold_after, &res->hold_ntask))))
		goto done;
	if ((rc = log_curve(st, res->run_id, &c)) || (rc = write_model(st, o, &ts, m, res)))
		goto done;
	rc = store_run_end(st, res->run_id);
done:
	cm_free(m);
	tr_set_free(&ts);
	tr_part_free(&pre);
	tr_part_free(&train);
	tr_part_free(&hold);
	free(y), free(sel);
	free(first), free(n), free(cls), free(hfirst), free(hn), free(hcls);
	free(c.loss[0]), free(c.loss[1]), free(c.before);
	return rc;
}
