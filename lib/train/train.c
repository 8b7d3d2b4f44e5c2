/*
 * train: the training pipeline of cost models (see train.h): training sets
 * from stored features or from history records, per-task labels, the
 * split by task, parts, fit, metrics and the written model.
 */
#include "train.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "features/feature.h"
#include "measure/measure.h"
#include "store/store_models.h"
#include "store/store_tuning.h"
#include "task/te.h"

/* ---- the set ------------------------------------------------------------ */

void tr_set_free(tr_set *ts)
{
	free(ts->meas);
	free(ts->hw);
	free(ts->task);
	free(ts->lat);
	free(ts->thr);
	free(ts->nx);
	free(ts->xoff);
	free(ts->xbuf);
	for (int i = 0; i < ts->ntask; i++) {
		free(ts->tasks[i].key);
		free(ts->tasks[i].op);
	}
	free(ts->tasks);
	memset(ts, 0, sizeof *ts);
}

/* A row of the set: the one place rows are made. Rows of a task arrive
 * together; a task id or key other than the last row's starts a task. */
typedef struct tr_row {
	int64_t task_id, meas_id, hw_id;
	const char *key, *op;
	int valid;
	double median, flops;
	const float *x;
	int d;
	int head;
	uint64_t space;
} tr_row;

static int set_add(tr_set *ts, const tr_row *r)
{
	tr_task *last = ts->ntask ? &ts->tasks[ts->ntask - 1] : NULL;
	if (!last || last->id != r->task_id || last->head != r->head || strcmp(last->key, r->key)) {
		if (ts->ntask == ts->tcap) {
			int c = ts->tcap ? 2 * ts->tcap : 64;
			tr_task *v = realloc(ts->tasks, sizeof *v * (size_t)c);
			if (!v)
				return tk_seterr(TK_ENOMEM, "out of memory");
			ts->tasks = v;
			ts->tcap = c;
		}
		last = &ts->tasks[ts->ntask++];
		memset(last, 0, sizeof *last);
		last->id = r->task_id;
		last->head = r->head;
		last->space = r->space;
		last->first = ts->n;
		if (!(last->key = strdup(r->key)) || (r->op && !(last->op = strdup(r->op))))
			return tk_seterr(TK_ENOMEM, "out of memory");
	}
	if (ts->n == ts->cap) {
		int c = ts->cap ? 2 * ts->cap : 256, bad = 0;
		void *q;
#define RESIZE(f) do { \
		if ((q = realloc(ts->f, sizeof *ts->f * (size_t)c))) ts->f = q; else bad = 1; \
	} while (0)
		RESIZE(meas);
		RESIZE(hw);
		RESIZE(task);
		RESIZE(lat);
		RESIZE(thr);
		RESIZE(nx);
		RESIZE(xoff);
#undef RESIZE
		if (bad)
			return tk_seterr(TK_ENOMEM, "out of memory");
		ts->cap = c;
	}
	if (ts->xlen + (size_t)r->d > ts->xcap) {
		size_t c = ts->xcap ? ts->xcap : 4096;
		while (c < ts->xlen + (size_t)r->d)
			c *= 2;
		float *nb = realloc(ts->xbuf, sizeof *nb * c);
		if (!nb)
			return tk_seterr(TK_ENOMEM, "out of memory");
		ts->xbuf = nb;
		ts->xcap = c;
	}
	int i = ts->n++;
	int ok = r->valid && r->median > 0;
	ts->meas[i] = r->meas_id;
	ts->hw[i] = r->hw_id;
	ts->task[i] = ts->ntask - 1;
	ts->lat[i] = r->valid ? r->median : -1;
	ts->thr[i] = ok ? (float)(r->flops > 0 ? r->flops / r->median : 1 / r->median) : 0;
	ts->nx[i] = r->d;
	ts->xoff[i] = ts->xlen;
	memcpy(ts->xbuf + ts->xlen, r->x, sizeof *r->x * (size_t)r->d);
	ts->xlen += (size_t)r->d;
	last->n++;
	if (r->d > last->d)
		last->d = r->d;
	return TK_OK;
}

/* Keep only the rows of hardware hw and the tasks that still have rows. */
static void set_keep_hw(tr_set *ts, int64_t hw)
{
	int k = 0, nt = 0;
	for (int t = 0; t < ts->ntask; t++) {
		tr_task *tk = &ts->tasks[t];
		int first = k;
		for (int i = tk->first; i < tk->first + tk->n; i++) {
			if (ts->hw[i] != hw)
				continue;
			ts->meas[k] = ts->meas[i];
			ts->hw[k] = ts->hw[i];
			ts->task[k] = nt;
			ts->lat[k] = ts->lat[i];
			ts->thr[k] = ts->thr[i];
			ts->nx[k] = ts->nx[i];
			ts->xoff[k] = ts->xoff[i];
			k++;
		}
		if (k == first) {
			free(tk->key);
			free(tk->op);
			continue;
		}
		tr_task keep = *tk;
		keep.first = first;
		keep.n = k - first;
		keep.d = 0;
		for (int i = first; i < k; i++)
			keep.d = ts->nx[i] > keep.d ? ts->nx[i] : keep.d;
		ts->tasks[nt++] = keep;
	}
	ts->n = k;
	ts->ntask = nt;
}

/* ---- from stored features ------------------------------------------------ */

typedef struct store_fill {
	tr_set *ts;
	int rc;
} store_fill;

static int got_row(void *ctx, const store_train_row *r)
{
	store_fill *f = ctx;
	tr_set *ts = f->ts;
	if (!r->x) {
		if (ts->nmissing < 3)
			ts->missing[ts->nmissing] = r->meas_id;
		ts->nmissing++;
		return 0;
	}
	tr_row row = { r->task_id, r->meas_id, r->hardware_id, r->task, NULL, r->valid, r->median,
	               r->flops, r->x, r->n, 0, 0 };
	if ((f->rc = set_add(ts, &row)))
		return 1;
	return 0;
}

typedef struct hw_list {
	int n, cap, rc;
	store_hw_count *h;   /* keys strdup'd */
} hw_list;

static int hw_add(void *ctx, const store_hw_count *h)
{
	hw_list *l = ctx;
	if (l->n == l->cap) {
		int c = l->cap ? 2 * l->cap : 16;
		store_hw_count *v = realloc(l->h, sizeof *v * (size_t)c);
		if (!v)
			return l->rc = tk_seterr(TK_ENOMEM, "out of memory"), 1;
		l->h = v;
		l->cap = c;
	}
	l->h[l->n] = *h;
	if (!(l->h[l->n].key = strdup(h->key ? h->key : "")))
		return l->rc = tk_seterr(TK_ENOMEM, "out of memory"), 1;
	l->n++;
	return 0;
}

static void hw_free(hw_list *l)
{
	for (int i = 0; i < l->n; i++)
		free((char *)l->h[i].key);
	free(l->h);
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

static int rows(tk_store *st, int64_t hw, int feat, const int64_t *ids, int nid, tr_set *ts)
{
	store_fill f = { ts, TK_OK };
	int rc = store_train_rows(st, hw, feat_kind_name(feat), feat_version(feat), ids, nid, got_row, &f);
	return f.rc ? f.rc : rc;
}

/* Append the rows of auxiliary hardware hw to ts as tasks of head. */
static int load_aux(tk_store *st, int feat, int64_t hw, int head, tr_set *ts)
{
	tr_set aux = { 0 };
	int rc = rows(st, hw, feat, NULL, 0, &aux);
	if (!rc) {
		set_keep_hw(&aux, hw);
		if (aux.n == 0)
			rc = tk_seterr(TK_EINVAL, "auxiliary hardware %lld has no records with %s features",
			               (long long)hw, feat_kind_name(feat));
	}
	for (int t = 0; !rc && t < aux.ntask; t++) {
		const tr_task *tk = &aux.tasks[t];
		for (int i = tk->first; !rc && i < tk->first + tk->n; i++) {
			double lat = aux.lat[i];
			tr_row r = { tk->id, aux.meas[i], aux.hw[i], tk->key, tk->op, lat > 0,
			             lat > 0 ? lat : 0, lat > 0 ? aux.thr[i] * lat : 0,
			             aux.xbuf + aux.xoff[i], aux.nx[i], head, tk->space };
			rc = set_add(ts, &r);
		}
	}
	tr_set_free(&aux);
	return rc;
}

/* Records in st with features of kind feat, into *n. */
static int count_feat(tk_store *st, int feat, int64_t *n)
{
	hw_list hl = { 0 };
	int rc = store_hardware_counts(st, feat_kind_name(feat), feat_version(feat), hw_add, &hl);
	*n = 0;
	for (int h = 0; h < hl.n; h++)
		*n += hl.h[h].nfeat;
	rc = hl.rc ? hl.rc : rc;
	hw_free(&hl);
	return rc;
}

int tr_default_feature(tk_store *st, const cm_kind *k, int *feat)
{
	int64_t own, knob;
	int rc;
	*feat = cm_feature(k, 1);
	if (*feat == cm_feature(k, 0))
		return TK_OK;
	if ((rc = count_feat(st, *feat, &own)) || own > 0)
		return rc;
	if (!(rc = count_feat(st, cm_feature(k, 0), &knob)) && knob > 0)
		*feat = cm_feature(k, 0);
	return rc;
}

int tr_load(tk_store *st, const tr_load_opts *o, tr_set *ts, tr_source *src)
{
	const char *kname = feat_kind_name(o->feat);
	int64_t *ids = o->ids;
	int nid = o->nid, rc;
	hw_list hl = { 0 };
	memset(src, 0, sizeof *src);
	if ((rc = store_hardware_counts(st, kname, feat_version(o->feat), hw_add, &hl))) {
		rc = hl.rc ? hl.rc : rc;
		goto done;
	}
	src->hw_id = o->hardware;
	if (ids) {
		qsort(ids, (size_t)nid, sizeof *ids, cmp_i64);
		int k = 0;
		for (int i = 0; i < nid; i++)
			if (k == 0 || ids[k - 1] != ids[i])
				ids[k++] = ids[i];
		nid = k;
		if ((rc = rows(st, 0, o->feat, ids, nid, ts)))
			goto done;
		if (ts->n + ts->nmissing < nid) {
			rc = tk_seterr(TK_EINVAL, "%lld of %d records are not in the store",
			               (long long)(nid - ts->n - ts->nmissing), nid);
			goto done;
		}
		if (ts->nmissing > 0) {
			rc = tk_seterr(TK_EINVAL, "%lld of %d records have no %s features (measurement "
			               "%lld%s); run 'tunekit extract-features --kind %s' on them first",
			               (long long)ts->nmissing, nid, kname, (long long)ts->missing[0],
			               ts->nmissing > 1 ? ", ..." : "", kname);
			goto done;
		}
		/* the hardware with the most of these records */
		for (int h = 0, nbest = 0; !o->hardware && h < hl.n; h++) {
			int c = 0;
			for (int i = 0; i < ts->n; i++)
				c += ts->hw[i] == hl.h[h].id;
			src->ncand += c > 0;
			if (c > nbest) {
				nbest = c;
				src->hw_id = hl.h[h].id;
			}
		}
		src->chosen = !o->hardware;
	} else {
		if (hl.n == 0) {
			rc = tk_seterr(TK_EINVAL, "no records in the store (run 'tunekit measure' first)");
			goto done;
		}
		if (!src->hw_id) {
			for (int h = 0; h < hl.n; h++)
				src->ncand += hl.h[h].nfeat > 0;
			src->hw_id = hl.h[0].id;
			src->chosen = 1;
		}
	}
	const store_hw_count *hw = NULL;
	for (int h = 0; h < hl.n; h++)
		if (hl.h[h].id == src->hw_id)
			hw = &hl.h[h];
	if (!hw) {
		rc = tk_seterr(TK_EINVAL, "hardware %lld has no records%s", (long long)src->hw_id,
		               ids ? " among those given" : "");
		goto done;
	}
	snprintf(src->hw_key, sizeof src->hw_key, "%s", hw->key);
	src->hw_nrec = hw->nrec;
	src->hw_nfeat = hw->nfeat;
	if (!ids) {
		if (hw->nfeat == 0) {
			rc = tk_seterr(TK_EINVAL, "none of the %lld records of hardware %lld has %s"
			               " features (version %d); run 'tunekit extract-features --kind %s'"
			               " first", (long long)hw->nrec, (long long)src->hw_id, kname,
			               feat_version(o->feat), kname);
			goto done;
		}
		if ((rc = rows(st, src->hw_id, o->feat, NULL, 0, ts)))
			goto done;
	}
	set_keep_hw(ts, src->hw_id);
	if (ts->n == 0) {
		rc = tk_seterr(TK_EINVAL, "no records of hardware %lld to train on",
		               (long long)src->hw_id);
		goto done;
	}
	for (int k = 0; k < o->naux && !rc; k++) {
		int64_t a = o->aux[k];
		for (int j = 0; j < k; j++)
			if (o->aux[j] == a)
				rc = tk_seterr(TK_EINVAL, "auxiliary hardware %lld is given twice", (long long)a);
		if (!rc && a == src->hw_id)
			rc = tk_seterr(TK_EINVAL, "auxiliary hardware %lld is the target", (long long)a);
		if (!rc)
			rc = load_aux(st, o->feat, a, k + 1, ts);
	}
done:
	hw_free(&hl);
	return rc;
}

/* ---- from history records -------------------------------------------------- */

typedef struct history {
	tr_set *ts;
	tk_store *hs;
	int feat;
	char *key;            /* the task of the last record */
	ms_task *mt;          /* its template, NULL if it has none */
	sp_space *own;        /* or its imported space, NULL if neither */
	const sp_space *space;/* whichever it has, NULL if none */
	uint64_t hash;        /* sp_space_hash(space) */
	double flops;
	int d;
	float *x;             /* (D) */
	int rc;
} history;

/* The space of task key in H->hs: its template's, or the one an import
 * stored; H->space NULL if it has neither or feat does not apply. */
static void history_task(history *H, const char *key)
{
	char *json = NULL;
	if (!ms_task_open(key, 0, &H->mt)) {
		H->space = H->mt->space;
		H->flops = H->mt->prog->flops;
	} else if (!store_task_space_json(H->hs, key, &json) && json &&
	           !sp_space_from_json(json, &H->own)) {
		H->space = H->own;
		if (store_task_flops(H->hs, key, &H->flops))
			H->flops = 0;
	}
	free(json);
	if (H->space && feat_length(H->feat, H->space, &H->d))
		H->space = NULL; /* features that do not apply: itervar of an imported space */
	if (H->space)
		H->hash = sp_space_hash(H->space);
}

static int got_record(void *p, const store_rec *rec)
{
	history *H = p;
	sp_config c;
	if (!H->key || strcmp(H->key, rec->task)) {
		free(H->key);
		ms_task_free(H->mt);
		sp_space_free(H->own);
		H->mt = NULL;
		H->own = NULL;
		H->space = NULL;
		if (!(H->key = strdup(rec->task)))
			return H->rc = tk_seterr(TK_ENOMEM, "out of memory"), 1;
		history_task(H, rec->task);
		if (H->space) {
			float *x = realloc(H->x, sizeof *x * (size_t)(H->d > 0 ? H->d : 1));
			if (!x)
				return H->rc = tk_seterr(TK_ENOMEM, "out of memory"), 1;
			H->x = x;
		}
	}
	if (!H->space || sp_parse(H->space, rec->config, &c) ||
	    feat_extract(H->feat, H->space, &c, H->x, NULL))
		return 0;
	tr_row row = { rec->task_id, rec->id, rec->hardware_id, rec->task,
	               H->mt ? H->mt->prog->op : NULL, rec->valid, rec->median, H->flops, H->x,
	               H->d, 0, H->hash };
	if ((H->rc = set_add(H->ts, &row)))
		return 1;
	return 0;
}

int tr_set_from_history(tk_store *hs, const char *hw_key, int feat, tr_set *ts)
{
	history H;
	memset(&H, 0, sizeof H);
	H.ts = ts;
	H.hs = hs;
	H.feat = feat;
	int rc = store_hw_records(hs, hw_key, NULL, got_record, &H);
	if (rc == 1)
		rc = H.rc;
	free(H.key);
	ms_task_free(H.mt);
	sp_space_free(H.own);
	free(H.x);
	return rc;
}

/* ---- labels ------------------------------------------------------------------ */

void tr_normalise(const float *thr, int n, float *y)
{
	float ymax = 0;
	for (int i = 0; i < n; i++)
		ymax = thr[i] > ymax ? thr[i] : ymax;
	for (int i = 0; i < n; i++)
		y[i] = ymax > 0 ? thr[i] / ymax : 0;
}

void tr_labels(const tr_set *ts, float *y)
{
	for (int t = 0; t < ts->ntask; t++) {
		const tr_task *tk = &ts->tasks[t];
		tr_normalise(&ts->thr[tk->first], tk->n, &y[tk->first]);
	}
}

/* ---- split -------------------------------------------------------------------- */

static int find_task(const tr_set *ts, const char *key)
{
	for (int i = 0; i < ts->ntask; i++)
		if (!strcmp(ts->tasks[i].key, key))
			return i;
	return -1;
}

/* The first k of a seeded shuffle of 0..n-1 into perm[n]. */
static void shuffle(int *perm, int n, uint64_t seed)
{
	tk_rng rng;
	tk_rng_seed(&rng, seed, 0x686f6c646f7574ULL /* "holdout" */);
	for (int i = 0; i < n; i++)
		perm[i] = i;
	for (int i = n - 1; i > 0; i--) {
		int j = (int)tk_rng_below(&rng, (uint32_t)i + 1), x = perm[i];
		perm[i] = perm[j];
		perm[j] = x;
	}
}

/* round(f * n) clamped to 1 .. n-1 */
static int share(double f, int n)
{
	int k = (int)floor(f * n + 0.5);
	return k < 1 ? 1 : k > n - 1 ? n - 1 : k;
}

/* Set the int flag at offset off of every task (every head) whose key is
 * key, in any spelling. TK_ENOTFOUND (no message) if none has it. */
static int mark_task(tr_set *ts, const char *key, size_t off)
{
	te_prog *p = NULL;
	int t = find_task(ts, key);
	if (t < 0 && te_task_parse(key, &p) == TK_OK)
		t = find_task(ts, key = p->key);
	if (t < 0) {
		te_prog_free(p);
		return TK_ENOTFOUND;
	}
	for (; t < ts->ntask; t++)
		if (!strcmp(ts->tasks[t].key, key))
			*(int *)((char *)&ts->tasks[t] + off) = 1;
	te_prog_free(p);
	return TK_OK;
}

int tr_split(tr_set *ts, const tr_split_opts *o, char *hold, int *nhold, int *by_rows)
{
	int ntarget = 0;
	memset(hold, 0, (size_t)ts->n);
	*nhold = 0;
	*by_rows = 0;
	while (ntarget < ts->ntask && !ts->tasks[ntarget].head)
		ntarget++;
	if (o->nvalid > 0 && o->ntasks == 0 && o->holdout > 0 && ntarget < 2)
		return tk_seterr(TK_EINVAL, "one task: it cannot be both held out and validated on");
	if (o->ntasks > 0) {
		for (int i = 0; i < o->ntasks; i++) {
			int rc = mark_task(ts, o->tasks[i], offsetof(tr_task, holdout));
			if (rc == TK_ENOTFOUND)
				return tk_seterr(TK_EINVAL, "held-out task %s: no records of that task to"
				                 " train on", o->tasks[i]);
			if (rc)
				return rc;
		}
	} else if (o->holdout > 0 && ntarget >= 2) {
		int k = share(o->holdout, ntarget), *perm = malloc(sizeof *perm * (size_t)ntarget);
		if (!perm)
			return tk_seterr(TK_ENOMEM, "out of memory");
		shuffle(perm, ntarget, o->seed);
		for (int i = 0; i < k; i++) /* the target's tasks come first */
			ts->tasks[perm[i]].holdout = 1;
		free(perm);
		/* the same tasks on every head */
		for (int t = ntarget; t < ts->ntask; t++) {
			int h = find_task(ts, ts->tasks[t].key);
			ts->tasks[t].holdout = h >= 0 && ts->tasks[h].holdout;
		}
	} else if (o->holdout > 0) {
		/* one task: hold out rows at random instead */
		int n = ts->ntask ? ts->tasks[0].n : 0, k, *perm;
		if (n < 2)
			return tk_seterr(TK_EINVAL, "one record: nothing to hold out");
		k = share(o->holdout, n);
		if (!(perm = malloc(sizeof *perm * (size_t)n)))
			return tk_seterr(TK_ENOMEM, "out of memory");
		shuffle(perm, n, o->seed);
		for (int i = 0; i < k; i++)
			hold[perm[i]] = 1;
		free(perm);
		*nhold = k;
		*by_rows = 1;
		return TK_OK;
	}
	for (int i = 0; i < o->nvalid; i++) {
		int rc = mark_task(ts, o->valid[i], offsetof(tr_task, valid));
		if (rc == TK_ENOTFOUND)
			return tk_seterr(TK_EINVAL, "validation task %s: no records of that task",
			                 o->valid[i]);
		if (rc)
			return rc;
	}
	int ntrain = 0;
	for (int t = 0; t < ts->ntask; t++) {
		const tr_task *tk = &ts->tasks[t];
		for (int i = 0; i < tk->n; i++) {
			hold[tk->first + i] = tk->holdout ? (tk->head ? TR_OUT : TR_HOLD)
			                      : tk->valid ? TR_VALID : TR_TRAIN;
			*nhold += tk->holdout && !tk->head;
			ntrain += !tk->holdout && !tk->valid && !tk->head;
		}
	}
	if (ntrain == 0)
		return tk_seterr(TK_EINVAL, "every task is held out%s: nothing left to train on",
		                 o->nvalid ? " or validates" : "");
	return TK_OK;
}

void tr_subsample(const tr_set *ts, char *sel, double frac, uint64_t seed, int *nkept)
{
	int n = 0, k, *perm;
	*nkept = 0;
	for (int i = 0; i < ts->n; i++)
		n += (sel[i] == TR_TRAIN || sel[i] == TR_VALID) && !ts->tasks[ts->task[i]].head;
	if (n == 0)
		return;
	k = (int)floor(frac * n + 0.5);
	k = k < 1 ? 1 : k > n ? n : k;
	if (!(perm = malloc(sizeof *perm * (size_t)n))) {
		*nkept = n; /* keep all rather than fail: the caller sees the count */
		return;
	}
	shuffle(perm, n, seed ^ 0x7375627361ULL);
	/* perm[i] < k keeps the i-th target training row */
	for (int i = 0, j = 0; i < ts->n; i++)
		if ((sel[i] == TR_TRAIN || sel[i] == TR_VALID) && !ts->tasks[ts->task[i]].head)
			sel[i] = perm[j++] < k ? sel[i] : TR_OUT;
	free(perm);
	*nkept = k;
}

/* ---- parts ------------------------------------------------------------------------ */

int tr_part_build(const tr_set *ts, const float *y, const char *sel, int want, int d, tr_part *pt)
{
	memset(pt, 0, sizeof *pt);
	pt->d = d;
	for (int i = 0; i < ts->n; i++)
		pt->n += sel[i] == want;
	size_t n = pt->n ? (size_t)pt->n : 1;
	pt->x = calloc(n * (size_t)(d > 0 ? d : 1), sizeof *pt->x);
	pt->y = malloc(n * sizeof *pt->y);
	pt->p = malloc(n * sizeof *pt->p);
	pt->lat = malloc(n * sizeof *pt->lat);
	pt->meas = malloc(n * sizeof *pt->meas);
	pt->task = malloc(n * sizeof *pt->task);
	pt->head = malloc(n * sizeof *pt->head);
	pt->weight = malloc(n * sizeof *pt->weight);
	pt->group = malloc(n * sizeof *pt->group);
	if (!pt->x || !pt->y || !pt->p || !pt->lat || !pt->meas || !pt->task || !pt->head || !pt->weight ||
	    !pt->group)
		return tk_seterr(TK_ENOMEM, "out of memory");
	int k = 0;
	for (int i = 0; i < ts->n; i++) {
		if (sel[i] != want)
			continue;
		int nx = ts->nx[i] < d ? ts->nx[i] : d;
		memcpy(pt->x + (size_t)k * (size_t)d, ts->xbuf + ts->xoff[i], sizeof *pt->x * (size_t)nx);
		pt->y[k] = y[i];
		pt->lat[k] = ts->lat[i];
		pt->meas[k] = ts->meas[i];
		pt->task[k] = ts->task[i];
		const tr_task *tk = &ts->tasks[ts->task[i]];
		pt->head[k] = tk->head;
		pt->weight[k] = tk->weight > 0 ? tk->weight : 1;
		pt->nhead = tk->head + 1 > pt->nhead ? tk->head + 1 : pt->nhead;
		if (k == 0 || pt->task[k - 1] != ts->task[i]) {
			pt->group[pt->ngroup++] = 1;
			pt->ntask++;
		} else {
			pt->group[pt->ngroup - 1]++;
		}
		k++;
	}
	return TK_OK;
}

void tr_part_free(tr_part *pt)
{
	free(pt->x);
	free(pt->y);
	free(pt->p);
	free(pt->lat);
	free(pt->meas);
	free(pt->task);
	free(pt->head);
	free(pt->weight);
	free(pt->group);
	memset(pt, 0, sizeof *pt);
}

cm_data tr_part_data(const tr_part *pt)
{
	return (cm_data){ pt->n, pt->d, pt->x, pt->y, pt->ngroup, pt->group, NULL,
	                  pt->nhead > 1 ? pt->head : NULL, 0, NULL };
}

int tr_eval(cm_model *m, tr_part *pt, cm_metrics *out)
{
	int rc = cm_predict(m, pt->x, pt->n, pt->d, NULL, pt->p);
	return rc ? rc : cm_metrics_compute(pt->n, pt->task, pt->y, pt->lat, pt->p, pt->weight, out);
}

int tr_eval_tasks(const tr_part *pt, const double *weight, cm_metrics *out)
{
	size_t cap = (size_t)(pt->n > 0 ? pt->n : 1);
	int64_t *task = malloc(sizeof *task * cap);
	float *y = malloc(sizeof *y * cap), *p = malloc(sizeof *p * cap);
	double *lat = malloc(sizeof *lat * cap), *w = malloc(sizeof *w * cap);
	int n = 0, rc = TK_OK;
	memset(out, 0, sizeof *out);
	if (!task || !y || !p || !lat || !w) {
		rc = tk_seterr(TK_ENOMEM, "out of memory");
		goto done;
	}
	for (int i = 0; i < pt->n; i++)
		if (weight[pt->task[i]] > 0) {
			task[n] = pt->task[i], y[n] = pt->y[i], p[n] = pt->p[i];
			lat[n] = pt->lat[i], w[n++] = weight[pt->task[i]];
		}
	if (n)
		rc = cm_metrics_compute(n, task, y, lat, p, w, out);
done:
	free(task), free(y), free(p), free(lat), free(w);
	return rc;
}

/* ---- fit ---------------------------------------------------------------------------- */

/* The rounds (epochs) model m kept: its "rounds" meta key, 0 if none. */
static int fit_rounds(cm_model *m)
{
	mf_meta mm;
	int64_t v = 0;
	memset(&mm, 0, sizeof mm);
	if (cm_describe(m, &mm) == TK_OK) {
		const char *r = mf_get(&mm, "rounds");
		if (!r || tk_parse_i64(r, &v) || v < 0 || v > 1000000)
			v = 0;
	}
	return (int)v;
}

int tr_fit_eval(const cm_kind *k, const cm_params *p, const tr_set *ts, const char *hold,
                tr_fit *f)
{
	float *y = malloc(sizeof *y * (size_t)(ts->n > 0 ? ts->n : 1));
	char *sel = malloc((size_t)(ts->n > 0 ? ts->n : 1));
	int rc, nvalid = 0;
	memset(f, 0, sizeof *f);
	if (!y || !sel) {
		rc = tk_seterr(TK_ENOMEM, "out of memory");
		goto done;
	}
	tr_labels(ts, y);
	for (int i = 0; i < ts->n; i++) {
		f->d = ts->nx[i] > f->d ? ts->nx[i] : f->d;
		nvalid += hold[i] == TR_VALID && !ts->tasks[ts->task[i]].head;
	}
	/* sel: 4 marks the target's rows of a part, the rest as hold */
	for (int i = 0; i < ts->n; i++)
		sel[i] = hold[i] == TR_VALID && !ts->tasks[ts->task[i]].head ? 4 : hold[i];
	if ((rc = tr_part_build(ts, y, hold, TR_TRAIN, f->d, &f->train)) ||
	    (rc = tr_part_build(ts, y, hold, TR_HOLD, f->d, &f->hold)) ||
	    (nvalid && (rc = tr_part_build(ts, y, sel, 4, f->d, &f->valid))))
		goto done;
	cm_params q = *p;
	/* early stopping on: the validation rows, else the holdout, never the
	 * holdout for a kind of CM_EPOCHS */
	tr_part none = { 0 };
	const tr_part *stop = nvalid ? &f->valid : k->flags & CM_EPOCHS ? &none : &f->hold;
	q.early_stop = stop->n > 0 ? TR_EARLY_STOP : 0;
	cm_data dtr = tr_part_data(&f->train), dst = tr_part_data(stop);
	double t0 = tk_now();
	rc = cm_fit(k, &q, &dtr, stop->n > 0 ? &dst : NULL, &f->m);
	f->validity = p->validity;
	if (!rc && nvalid) {
		/* Measured on the validation rows, then fit again with them. */
		if ((rc = tr_eval(f->m, &f->valid, &f->mvalid)) ||
		    (p->validity &&
		     (rc = cm_metrics_classify(f->valid.n, f->valid.y, f->valid.p, &f->cvalid))))
			goto done;
		int rounds = fit_rounds(f->m);
		cm_free(f->m);
		f->m = NULL;
		tr_part_free(&f->train);
		for (int i = 0; i < ts->n; i++)
			sel[i] = hold[i] == TR_VALID ? TR_TRAIN : hold[i];
		if ((rc = tr_part_build(ts, y, sel, TR_TRAIN, f->d, &f->train)))
			goto done;
		q.rounds = rounds > 0 ? rounds : p->rounds;
		q.early_stop = 0;
		dtr = tr_part_data(&f->train);
		rc = cm_fit(k, &q, &dtr, NULL, &f->m);
	}
	f->seconds = tk_now() - t0;
	if (rc)
		goto done;
	/* the target's training rows, for the metrics */
	for (int i = 0; i < ts->n; i++)
		sel[i] = (hold[i] == TR_TRAIN || hold[i] == TR_VALID) && !ts->tasks[ts->task[i]].head
		         ? 4 : TR_OUT;
	if ((rc = tr_part_build(ts, y, sel, 4, f->d, &f->train0)) ||
	    (rc = tr_eval(f->m, &f->train0, &f->mtrain)) || (rc = tr_eval(f->m, &f->hold, &f->mhold)))
		goto done;
	if (p->validity &&
	    !(rc = cm_metrics_classify(f->train0.n, f->train0.y, f->train0.p, &f->ctrain)))
		rc = cm_metrics_classify(f->hold.n, f->hold.y, f->hold.p, &f->chold);
done:
	free(y);
	free(sel);
	return rc;
}

void tr_fit_free(tr_fit *f)
{
	tr_part_free(&f->train);
	tr_part_free(&f->train0);
	tr_part_free(&f->hold);
	tr_part_free(&f->valid);
	cm_free(f->m);
	memset(f, 0, sizeof *f);
}

/* ---- the model file ------------------------------------------------------------------- */

static int meta_metrics(mf_meta *mm, const char *prefix, const cm_metrics *m)
{
	static const char *const names[] = { "rmse", "mse", "mse_d", "top1", "top5", "spearman" };
	double v[] = { m->rmse, m->mse, m->mse_d, m->top1, m->top5, m->spearman };
	int rc = TK_OK;
	for (int i = 0; i < ArraySize(names) && !rc; i++) {
		char key[32], val[32];
		if (isnan(v[i]))
			continue; /* nothing to measure on: no key */
		snprintf(key, sizeof key, "%s_%s", prefix, names[i]);
		snprintf(val, sizeof val, "%.6g", v[i]);
		rc = mf_set(mm, key, val);
	}
	return rc;
}

static int meta_class(mf_meta *mm, const char *prefix, const cm_class_metrics *m)
{
	static const char *const names[] = { "accuracy", "precision", "recall", "auc" };
	double v[] = { m->accuracy, m->precision, m->recall, m->auc };
	int rc = TK_OK;
	for (int i = 0; i < ArraySize(names) && !rc; i++) {
		char key[32], val[32];
		if (isnan(v[i]))
			continue;
		snprintf(key, sizeof key, "%s_%s", prefix, names[i]);
		snprintf(val, sizeof val, "%.6g", v[i]);
		rc = mf_set(mm, key, val);
	}
	return rc;
}

/* The meta as key=value lines for the store (malloc'd), NULL if out of memory. */
static char *meta_text(const mf_meta *mm)
{
	tk_sb sb;
	tk_sb_init(&sb);
	for (int i = 0; i < mm->n; i++)
		tk_sb_printf(&sb, "%s=%s\n", mm->key[i], mm->val[i]);
	return tk_sb_take(&sb);
}

int tr_write_model(tk_store *st, const char *path, cm_model *m, const mf_meta *mm,
                   int64_t hw_id, int64_t *model_id)
{
	void *payload = NULL, *file = NULL;
	size_t plen = 0, flen = 0;
	char *meta = NULL;
	int rc = cm_save(m, &payload, &plen);
	if (!rc)
		rc = mf_write(path, mm, payload, plen);
	if (!rc)
		rc = mf_encode(mm, payload, plen, &file, &flen);
	if (!rc && !(meta = meta_text(mm)))
		rc = tk_seterr(TK_ENOMEM, "out of memory");
	if (!rc)
		rc = store_model_add(st, cm_kind_of(m)->name, hw_id, meta, file, flen, model_id);
	free(payload);
	free(file);
	free(meta);
	return rc;
}

int tr_save(tk_store *st, const char *path, const tr_fit *f, const tr_source *src, int feat,
            const cm_params *p, int64_t *model_id)
{
	return tr_save_meta(st, path, f, src, feat, p, NULL, model_id);
}

int tr_save_meta(tk_store *st, const char *path, const tr_fit *f, const tr_source *src, int feat,
                 const cm_params *p, const mf_meta *extra, int64_t *model_id)
{
	mf_meta mm;
	char v[8][48];
	int rc;
	memset(&mm, 0, sizeof mm);
	snprintf(v[0], 48, "%d", feat_version(feat));
	snprintf(v[1], 48, "%d", f->d);
	snprintf(v[2], 48, "%lld", (long long)src->hw_id);
	snprintf(v[3], 48, "%d", f->train.n);
	snprintf(v[4], 48, "%d", f->hold.n);
	snprintf(v[5], 48, "%llu", (unsigned long long)p->seed);
	snprintf(v[6], 48, "%lld", (long long)time(NULL));
	snprintf(v[7], 48, "%d", f->valid.n);
	const char *kv[][2] = {
		{ "feature", feat_kind_name(feat) }, { "feature_version", v[0] },
		{ "feature_length", v[1] }, { "hardware", src->hw_key }, { "hardware_id", v[2] },
		{ "n_train", v[3] }, { "n_holdout", v[4] }, { "seed", v[5] }, { "created", v[6] },
	};
	rc = cm_describe(f->m, &mm);
	for (int i = 0; i < ArraySize(kv) && !rc; i++)
		rc = mf_set(&mm, kv[i][0], kv[i][1]);
	if (!rc && p->tree_method)
		rc = mf_set(&mm, "tree_method", p->tree_method);
	if (!rc && p->aux_fraction > 0 && p->aux_fraction < 1) {
		char af[32];
		snprintf(af, sizeof af, "%g", p->aux_fraction);
		rc = mf_set(&mm, "aux_fraction", af);
	}
	for (int i = 0; extra && i < extra->n && !rc; i++)
		rc = mf_set(&mm, extra->key[i], extra->val[i]);
	if (!rc && f->validity)
		rc = mf_set(&mm, "label", "validity");
	if (!rc)
		rc = f->validity ? meta_class(&mm, "holdout", &f->chold)
		                 : meta_metrics(&mm, "holdout", &f->mhold);
	if (!rc)
		rc = f->validity ? meta_class(&mm, "train", &f->ctrain)
		                 : meta_metrics(&mm, "train", &f->mtrain);
	if (!rc && f->valid.n > 0)
		rc = mf_set(&mm, "n_valid", v[7]);
	if (!rc && f->valid.n > 0)
		rc = f->validity ? meta_class(&mm, "valid", &f->cvalid)
		                 : meta_metrics(&mm, "valid", &f->mvalid);
	if (!rc)
		rc = tr_write_model(st, path, f->m, &mm, src->hw_id, model_id);
	return rc;
}
