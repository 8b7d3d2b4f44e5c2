/*
 * train: fit a cost model (XGBoost, AutoTVM's settings) on the records of
 * one hardware target that have feature vectors, measure it on held-out
 * tasks with the papers' metrics, and write it as a model file and into
 * the store's model table. Labels are throughputs normalised per task
 * (best valid record = 1, invalid = 0); rows are grouped by task for the
 * ranking objective; the holdout (whole tasks, or rows when there is one
 * task) is the validation set of early stopping.
 */
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cmd.h"
#include "features/feature.h"
#include "model/metrics.h"
#include "model/modelfile.h"
#include "model/xgb.h"
#include "record/record.h"
#include "store/store_models.h"
#include "task/te.h"

static const char *const usage[] = {
	"tunekit train [--model xgb] [--objective rank|reg] [--feature itervar|knob|curve]\n"
	"              [--hardware ID] [--holdout F | --holdout-task TASK...] [--rounds N]\n"
	"              [--out FILE] [OPTIONS] [-]",
	"Train a cost model on the records of one hardware ID (default: the one with the most\n"
	"records that have features) whose configurations have features of --feature (see\n"
	"'tunekit extract-features'). With -, only the records of the record stream on\n"
	"standard input (its id column). Labels are throughputs normalised per task. Holds out\n"
	"whole tasks (--holdout, --holdout-task) to stop early on and to measure the model.\n"
	"Prints RMSE, MSE, MSE(D), top-1, top-5 and Spearman on the training set and the\n"
	"holdout (a table on a terminal, TSV otherwise), writes the model file and adds the\n"
	"model to the store.",
};

static struct {
	const char *model, *objective, *feature, *out, *format, *tree_method;
	int64_t hardware, rounds;
	double holdout;
	opt_list holdout_task;
} o;

static const opt options[] = {
	{ OPT_STRING, "model", 0, &o.model, "NAME", "the model: xgb (default)" },
	{ OPT_STRING, "objective", 0, &o.objective, "OBJ", "rank (pairwise ranking, default) or reg (squared error)" },
	{ OPT_STRING, "feature", 0, &o.feature, "KIND", "itervar (default), knob or curve" },
	{ OPT_INT, "hardware", 0, &o.hardware, "ID", "train on the records of this hardware id" },
	{ OPT_DOUBLE, "holdout", 0, &o.holdout, "F", "hold out this fraction of the tasks (0 to 1)" },
	{ OPT_LIST, "holdout-task", 0, &o.holdout_task, "TASK", "hold out this task (repeatable)" },
	{ OPT_INT, "rounds", 0, &o.rounds, "N", "boosting rounds at most (default 8000 with a holdout, else 200)" },
	{ OPT_STRING, "tree-method", 0, &o.tree_method, "M", "XGBoost tree_method: auto (default), exact, approx, hist" },
	{ OPT_STRING, "out", 'o', &o.out, "FILE", "model file to write (default tunekit.model)" },
	{ OPT_STRING, "format", 'f', &o.format, "FMT", "table, tsv or json (default: table on a terminal)" },
	OPT_END_
};

#define EARLY_STOP 50  /* rounds without improvement on the holdout */

/* ---- the training set ------------------------------------------------------ */

typedef struct task_ent {
	int64_t id;
	char *key;
	int first, n;       /* rows first .. first+n-1 */
	int holdout;
} task_ent;

/* Rows in store order (by task id, then measurement id). */
typedef struct trainset {
	int n, cap;
	int64_t *meas, *task, *hw;
	double *lat;        /* median seconds, -1 if invalid */
	int *nx;
	size_t *xoff;
	float *xbuf;
	size_t xlen, xcap;
	int ntask, tcap;
	task_ent *tasks;    /* after ts_tasks(): the tasks of the rows */
	int nkey, kcap;
	task_ent *keys;     /* every task id seen, with its key */
	int64_t nmissing, missing[3]; /* ids without features (stdin) */
	int oom;
} trainset;

static void *grow(void *p, int *cap, int need, size_t size, int *oom)
{
	if (need <= *cap)
		return p;
	int c = *cap ? *cap : 256;
	while (c < need)
		c *= 2;
	void *q = realloc(p, size * (size_t)c);
	if (!q) {
		*oom = 1;
		return p;
	}
	*cap = c;
	return q;
}

static int ts_add(void *ctx, const store_train_row *r)
{
	trainset *ts = ctx;
	if (!r->x) {
		if (ts->nmissing < 3)
			ts->missing[ts->nmissing] = r->meas_id;
		ts->nmissing++;
		return 0;
	}
	if (ts->nkey == 0 || ts->keys[ts->nkey - 1].id != r->task_id) {
		ts->keys = grow(ts->keys, &ts->kcap, ts->nkey + 1, sizeof *ts->keys, &ts->oom);
		if (ts->oom)
			return TK_ENOMEM;
		memset(&ts->keys[ts->nkey], 0, sizeof *ts->keys);
		ts->keys[ts->nkey].id = r->task_id;
		if (!(ts->keys[ts->nkey].key = strdup(r->task)))
			return ts->oom = 1, TK_ENOMEM;
		ts->nkey++;
	}
	if (ts->n == ts->cap) {
		int c = ts->cap ? 2 * ts->cap : 256, bad = 0;
		void *q;
#define RESIZE(f) do { \
		if ((q = realloc(ts->f, sizeof *ts->f * (size_t)c))) ts->f = q; else bad = 1; \
	} while (0)
		RESIZE(meas);
		RESIZE(task);
		RESIZE(hw);
		RESIZE(lat);
		RESIZE(nx);
		RESIZE(xoff);
#undef RESIZE
		if (bad)
			return ts->oom = 1, TK_ENOMEM;
		ts->cap = c;
	}
	if (ts->xlen + (size_t)r->n > ts->xcap) {
		size_t c = ts->xcap ? ts->xcap : 4096;
		while (c < ts->xlen + (size_t)r->n)
			c *= 2;
		float *nb = realloc(ts->xbuf, sizeof *nb * c);
		if (!nb)
			return ts->oom = 1, TK_ENOMEM;
		ts->xbuf = nb;
		ts->xcap = c;
	}
	int i = ts->n++;
	ts->meas[i] = r->meas_id;
	ts->task[i] = r->task_id;
	ts->hw[i] = r->hardware_id;
	ts->lat[i] = r->valid ? r->median : -1;
	ts->nx[i] = r->n;
	ts->xoff[i] = ts->xlen;
	memcpy(ts->xbuf + ts->xlen, r->x, sizeof *r->x * (size_t)r->n);
	ts->xlen += (size_t)r->n;
	return 0;
}

/* Keep only the rows of hardware hw (0: all), then list their tasks. */
static int ts_tasks(trainset *ts, int64_t hw)
{
	int k = 0;
	for (int i = 0; i < ts->n; i++) {
		if (hw && ts->hw[i] != hw)
			continue;
		ts->meas[k] = ts->meas[i];
		ts->task[k] = ts->task[i];
		ts->hw[k] = ts->hw[i];
		ts->lat[k] = ts->lat[i];
		ts->nx[k] = ts->nx[i];
		ts->xoff[k] = ts->xoff[i];
		k++;
	}
	ts->n = k;
	ts->ntask = 0;
	for (int i = 0, ki = 0; i < ts->n; i++) {
		if (ts->ntask && ts->tasks[ts->ntask - 1].id == ts->task[i]) {
			ts->tasks[ts->ntask - 1].n++;
			continue;
		}
		ts->tasks = grow(ts->tasks, &ts->tcap, ts->ntask + 1, sizeof *ts->tasks, &ts->oom);
		if (ts->oom)
			return tk_seterr(TK_ENOMEM, "out of memory");
		while (ki < ts->nkey && ts->keys[ki].id != ts->task[i])
			ki++;
		task_ent *t = &ts->tasks[ts->ntask++];
		memset(t, 0, sizeof *t);
		t->id = ts->task[i];
		t->key = ki < ts->nkey ? ts->keys[ki].key : "?";
		t->first = i;
		t->n = 1;
	}
	return TK_OK;
}

static void ts_free(trainset *ts)
{
	free(ts->meas);
	free(ts->task);
	free(ts->hw);
	free(ts->lat);
	free(ts->nx);
	free(ts->xoff);
	free(ts->xbuf);
	free(ts->tasks);
	for (int i = 0; i < ts->nkey; i++)
		free(ts->keys[i].key);
	free(ts->keys);
}

/* ---- hardware ---------------------------------------------------------------- */

typedef struct hw_list {
	int n, cap, oom;
	store_hw_count *h;  /* keys strdup'd */
} hw_list;

static int hw_add(void *ctx, const store_hw_count *h)
{
	hw_list *l = ctx;
	l->h = grow(l->h, &l->cap, l->n + 1, sizeof *l->h, &l->oom);
	if (l->oom)
		return TK_ENOMEM;
	l->h[l->n] = *h;
	if (!(l->h[l->n].key = strdup(h->key ? h->key : "")))
		return l->oom = 1, TK_ENOMEM;
	l->n++;
	return 0;
}

static void hw_free(hw_list *l)
{
	for (int i = 0; i < l->n; i++)
		free((char *)l->h[i].key);
	free(l->h);
}

static const store_hw_count *hw_find(const hw_list *l, int64_t id)
{
	for (int i = 0; i < l->n; i++)
		if (l->h[i].id == id)
			return &l->h[i];
	return NULL;
}

/* ---- reading ------------------------------------------------------------------ */

static int read_ids(tk_ctx *ctx, int64_t **ids, int *nid)
{
	rec_stream rs;
	const char *task, *config;
	int64_t id;
	int got, cap = 0, oom = 0;
	*ids = NULL;
	*nid = 0;
	rec_stream_init(&rs, stdin, "stdin");
	while ((got = rec_stream_next(&rs, &task, &config, &id)) > 0) {
		if (id < 0) {
			rec_stream_free(&rs);
			return tk_fail(ctx, TK_EINVAL, "stdin: the stream has no id column (give the"
			               " record stream of measure, extract-features or report best)");
		}
		*ids = grow(*ids, &cap, *nid + 1, sizeof **ids, &oom);
		if (oom) {
			rec_stream_free(&rs);
			return tk_fail(ctx, TK_ENOMEM, "out of memory");
		}
		(*ids)[(*nid)++] = id;
	}
	rec_stream_free(&rs);
	if (got < 0)
		return tk_fail(ctx, -got, NULL);
	if (*nid == 0)
		return tk_fail(ctx, TK_EINVAL, "stdin: no records");
	return 0;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

/* ---- holdout -------------------------------------------------------------------- */

static int find_task(const trainset *ts, const char *key)
{
	for (int i = 0; i < ts->ntask; i++)
		if (!strcmp(ts->tasks[i].key, key))
			return i;
	return -1;
}

/* Mark held-out rows in hold[n]. Returns 0 or the exit status. */
static int split(tk_ctx *ctx, trainset *ts, char *hold, int *nhold)
{
	memset(hold, 0, (size_t)ts->n);
	*nhold = 0;
	if (o.holdout_task.n > 0) {
		for (int i = 0; i < o.holdout_task.n; i++) {
			const char *name = o.holdout_task.v[i];
			int t = find_task(ts, name);
			if (t < 0) {
				te_prog *p;
				if (te_task_parse(name, &p) == TK_OK) {
					t = find_task(ts, p->key);
					te_prog_free(p);
				}
			}
			if (t < 0)
				return tk_fail(ctx, TK_EINVAL, "--holdout-task %s: no records of that task to"
				               " train on", name);
			ts->tasks[t].holdout = 1;
		}
	} else if (o.holdout > 0 && ts->ntask >= 2) {
		int k = (int)floor(o.holdout * ts->ntask + 0.5), *perm = malloc(sizeof *perm * (size_t)ts->ntask);
		tk_rng rng;
		if (!perm)
			return tk_fail(ctx, TK_ENOMEM, "out of memory");
		if (k < 1)
			k = 1;
		if (k > ts->ntask - 1)
			k = ts->ntask - 1;
		tk_rng_seed(&rng, (uint64_t)ctx->common.seed, 0x686f6c646f7574ULL /* "holdout" */);
		for (int i = 0; i < ts->ntask; i++)
			perm[i] = i;
		for (int i = ts->ntask - 1; i > 0; i--) {
			int j = (int)tk_rng_below(&rng, (uint32_t)i + 1), x = perm[i];
			perm[i] = perm[j];
			perm[j] = x;
		}
		for (int i = 0; i < k; i++)
			ts->tasks[perm[i]].holdout = 1;
		free(perm);
	} else if (o.holdout > 0) {
		/* one task: hold out rows at random instead */
		int n = ts->n, k = (int)floor(o.holdout * n + 0.5), *perm;
		tk_rng rng;
		if (n < 2)
			return tk_fail(ctx, TK_EINVAL, "one record: nothing to hold out");
		if (k < 1)
			k = 1;
		if (k > n - 1)
			k = n - 1;
		if (!(perm = malloc(sizeof *perm * (size_t)n)))
			return tk_fail(ctx, TK_ENOMEM, "out of memory");
		tk_rng_seed(&rng, (uint64_t)ctx->common.seed, 0x686f6c646f7574ULL);
		for (int i = 0; i < n; i++)
			perm[i] = i;
		for (int i = n - 1; i > 0; i--) {
			int j = (int)tk_rng_below(&rng, (uint32_t)i + 1), x = perm[i];
			perm[i] = perm[j];
			perm[j] = x;
		}
		for (int i = 0; i < k; i++)
			hold[perm[i]] = 1;
		free(perm);
		*nhold = k;
		if (!ctx->common.quiet)
			fprintf(stderr, "%s: one task: holding out %d of its %d records at random instead\n",
			        ctx->prog, k, n);
		return 0;
	}
	for (int t = 0; t < ts->ntask; t++)
		for (int i = 0; i < ts->tasks[t].n && ts->tasks[t].holdout; i++) {
			hold[ts->tasks[t].first + i] = 1;
			++*nhold;
		}
	if (*nhold == ts->n)
		return tk_fail(ctx, TK_EINVAL, "every task is held out: nothing left to train on");
	return 0;
}

/* ---- model ---------------------------------------------------------------------- */

/* One side of the split: rows where hold[i] == side, features padded to d. */
typedef struct part {
	int n, ngroup, ntask;
	float *x, *y, *p;
	double *lat;
	int64_t *task;
	unsigned *group;
} part;

static int part_build(const trainset *ts, const float *label, const char *hold, int side, int d,
                      part *pt)
{
	memset(pt, 0, sizeof *pt);
	for (int i = 0; i < ts->n; i++)
		pt->n += hold[i] == side;
	size_t n = pt->n ? (size_t)pt->n : 1;
	pt->x = calloc(n * (size_t)d, sizeof *pt->x);
	pt->y = malloc(n * sizeof *pt->y);
	pt->p = malloc(n * sizeof *pt->p);
	pt->lat = malloc(n * sizeof *pt->lat);
	pt->task = malloc(n * sizeof *pt->task);
	pt->group = malloc(n * sizeof *pt->group);
	if (!pt->x || !pt->y || !pt->p || !pt->lat || !pt->task || !pt->group)
		return tk_seterr(TK_ENOMEM, "out of memory");
	int k = 0;
	for (int i = 0; i < ts->n; i++) {
		if (hold[i] != side)
			continue;
		memcpy(pt->x + (size_t)k * d, ts->xbuf + ts->xoff[i], sizeof *pt->x * (size_t)ts->nx[i]);
		pt->y[k] = label[i];
		pt->lat[k] = ts->lat[i];
		pt->task[k] = ts->task[i];
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

static void part_free(part *pt)
{
	free(pt->x);
	free(pt->y);
	free(pt->p);
	free(pt->lat);
	free(pt->task);
	free(pt->group);
}

/* ---- output ---------------------------------------------------------------------- */

static const char *const metric_header[] = {
	"set", "rows", "tasks", "rmse", "mse", "mse_d", "top1", "top5", "spearman",
};

static void metric_row(table *tb, int fmt, const char *set, const cm_metrics *m)
{
	char b[8][32];
	double v[] = { m->rmse, m->mse, m->mse_d, m->top1, m->top5, m->spearman };
	const char *cells[9] = { set, b[0], b[1] };
	snprintf(b[0], 32, "%d", m->n);
	snprintf(b[1], 32, "%d", m->ntask);
	for (int i = 0; i < 6; i++) {
		snprintf(b[2 + i], 32, "%.4f", v[i]);
		cells[3 + i] = isnan(v[i]) ? (fmt == FMT_TABLE ? "-" : NULL) : b[2 + i];
	}
	table_row(tb, cells);
}

static int meta_metrics(mf_meta *mm, const char *prefix, const cm_metrics *m)
{
	static const char *const names[] = { "rmse", "mse", "mse_d", "top1", "top5", "spearman" };
	double v[] = { m->rmse, m->mse, m->mse_d, m->top1, m->top5, m->spearman };
	int rc = 0;
	for (int i = 0; i < 6 && !rc; i++) {
		char key[32], val[32];
		if (isnan(v[i]))
			continue; /* nothing to measure on: no key */
		snprintf(key, sizeof key, "%s_%s", prefix, names[i]);
		snprintf(val, sizeof val, "%.6g", v[i]);
		rc = mf_set(mm, key, val);
	}
	return rc;
}

/* The meta as key=value lines for the store (malloc'd). */
static char *meta_text(const mf_meta *mm)
{
	tk_sb sb;
	tk_sb_init(&sb);
	for (int i = 0; i < mm->n; i++)
		tk_sb_printf(&sb, "%s=%s\n", mm->key[i], mm->val[i]);
	return tk_sb_take(&sb);
}

/* Train, evaluate, write. Returns the exit status. */
static int train(tk_ctx *ctx, tk_store *st, trainset *ts, const store_hw_count *hw, int kind)
{
	int d = 0, nhold = 0, rc, status = EXIT_OK;
	char *hold = malloc((size_t)ts->n);
	float *label = malloc(sizeof *label * (size_t)ts->n);
	part tr, ho;
	xgb_model *m = NULL;
	void *payload = NULL, *file = NULL;
	size_t plen = 0, flen = 0;
	char *meta = NULL;
	memset(&tr, 0, sizeof tr);
	memset(&ho, 0, sizeof ho);

	if (!hold || !label) {
		status = tk_fail(ctx, TK_ENOMEM, "out of memory");
		goto out;
	}
	/* labels: throughput over the task's best, 0 if invalid */
	for (int t = 0; t < ts->ntask; t++) {
		task_ent *te = &ts->tasks[t];
		double best = HUGE_VAL;
		for (int i = te->first; i < te->first + te->n; i++)
			if (ts->lat[i] > 0 && ts->lat[i] < best)
				best = ts->lat[i];
		for (int i = te->first; i < te->first + te->n; i++)
			label[i] = ts->lat[i] > 0 ? (float)(best / ts->lat[i]) : 0;
	}
	for (int i = 0; i < ts->n; i++)
		if (ts->nx[i] > d)
			d = ts->nx[i];
	if ((status = split(ctx, ts, hold, &nhold)))
		goto out;
	if ((rc = part_build(ts, label, hold, 0, d, &tr)) || (rc = part_build(ts, label, hold, 1, d, &ho))) {
		status = tk_fail(ctx, rc, NULL);
		goto out;
	}

	xgb_params p;
	xgb_params_default(&p, strcmp(o.objective, "reg") ? "rank:pairwise" : "reg:squarederror");
	p.seed = (uint64_t)ctx->common.seed;
	/* One thread: XGBoost's OpenMP workers spin, and on a shared CPU two
	 * threads were 1.5 to 50 times slower than one (exact and hist alike). */
	p.nthread = 1;
	p.tree_method = o.tree_method && strcmp(o.tree_method, "auto") ? o.tree_method : NULL;
	if (ho.n > 0) {
		p.rounds = o.rounds ? (int)o.rounds : 8000;
		p.early_stop = EARLY_STOP;
	} else {
		p.rounds = o.rounds ? (int)o.rounds : XGB_ROUNDS_NOVALID;
		p.early_stop = 0;
	}
	xgb_data dtr = { tr.n, d, tr.x, tr.y, tr.ngroup, tr.group, NULL };
	xgb_data dho = { ho.n, d, ho.x, ho.y, ho.ngroup, ho.group, NULL };
	if (!ctx->common.quiet) {
		fprintf(stderr, "%s: hardware %lld (%s): %d records of %d task%s, %d features",
		        ctx->prog, (long long)hw->id, hw->key, ts->n, ts->ntask,
		        ts->ntask == 1 ? "" : "s", d);
		if (ho.n > 0)
			fprintf(stderr, "; holding out %d records of %d task%s", ho.n, ho.ntask,
			        ho.ntask == 1 ? "" : "s");
		fputc('\n', stderr);
		if (o.holdout_task.n == 0 && ho.n > 0 && ts->ntask > 1)
			for (int t = 0; t < ts->ntask; t++)
				if (ts->tasks[t].holdout)
					fprintf(stderr, "%s: held out: %s\n", ctx->prog, ts->tasks[t].key);
	}
	/* Nothing is written while XGBoost trains: let a signal end the
	 * process at once rather than after the last round. */
	struct sigaction dfl, old_int, old_term;
	memset(&dfl, 0, sizeof dfl);
	dfl.sa_handler = SIG_DFL;
	sigaction(SIGINT, &dfl, &old_int);
	sigaction(SIGTERM, &dfl, &old_term);
	double t0 = tk_now();
	rc = xgb_train(&p, &dtr, ho.n > 0 ? &dho : NULL, &m);
	double secs = tk_now() - t0;
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	if (!rc && tk_interrupted)
		rc = tk_seterr(TK_EINTR, "interrupted; nothing written");
	if (rc) {
		status = tk_fail(ctx, rc, NULL);
		goto out;
	}
	if ((rc = xgb_predict(m, tr.x, tr.n, d, tr.p)) || (rc = xgb_predict(m, ho.x, ho.n, d, ho.p))) {
		status = tk_fail(ctx, rc, NULL);
		goto out;
	}
	cm_metrics mtr, mho;
	if ((rc = cm_metrics_compute(tr.n, tr.task, tr.y, tr.lat, tr.p, NULL, &mtr)) ||
	    (rc = cm_metrics_compute(ho.n, ho.task, ho.y, ho.lat, ho.p, NULL, &mho))) {
		status = tk_fail(ctx, rc, NULL);
		goto out;
	}

	/* the model file and the store */
	mf_meta mm;
	char v[16][48];
	memset(&mm, 0, sizeof mm);
	snprintf(v[0], 48, "%d", feat_version(kind));
	snprintf(v[1], 48, "%d", d);
	snprintf(v[2], 48, "%lld", (long long)hw->id);
	snprintf(v[3], 48, "%d", tr.n);
	snprintf(v[4], 48, "%d", ho.n);
	snprintf(v[5], 48, "%d", xgb_rounds(m));
	snprintf(v[6], 48, "%lld", (long long)ctx->common.seed);
	snprintf(v[7], 48, "%lld", (long long)time(NULL));
	const char *kv[][2] = {
		{ "kind", "xgb" }, { "objective", p.objective }, { "feature", feat_kind_name(kind) },
		{ "feature_version", v[0] }, { "feature_length", v[1] }, { "hardware", hw->key },
		{ "hardware_id", v[2] }, { "n_train", v[3] }, { "n_holdout", v[4] },
		{ "rounds", v[5] }, { "seed", v[6] }, { "created", v[7] },
	};
	rc = 0;
	for (int i = 0; i < ArraySize(kv) && !rc; i++)
		rc = mf_set(&mm, kv[i][0], kv[i][1]);
	if (!rc && p.tree_method)
		rc = mf_set(&mm, "tree_method", p.tree_method);
	if (!rc)
		rc = meta_metrics(&mm, "holdout", &mho);
	if (!rc)
		rc = meta_metrics(&mm, "train", &mtr);
	if (!rc)
		rc = xgb_save(m, &payload, &plen);
	if (!rc)
		rc = mf_write(o.out, &mm, payload, plen);
	if (!rc)
		rc = mf_encode(&mm, payload, plen, &file, &flen);
	if (!rc && !(meta = meta_text(&mm)))
		rc = tk_seterr(TK_ENOMEM, "out of memory");
	int64_t model_id = 0;
	if (!rc)
		rc = store_model_add(st, "xgb", hw->id, meta, file, flen, &model_id);
	if (rc) {
		status = tk_fail(ctx, rc, NULL);
		goto out;
	}

	int fmt = format_parse(o.format);
	if (fmt == FMT_AUTO)
		fmt = ctx->out_tty ? FMT_TABLE : FMT_TSV;
	table *tb = table_new(ArraySize(metric_header), metric_header);
	if (!tb) {
		status = tk_fail(ctx, TK_ENOMEM, "out of memory");
		goto out;
	}
	metric_row(tb, fmt, "train", &mtr);
	if (ho.n > 0)
		metric_row(tb, fmt, "holdout", &mho);
	status = table_print(tb, stdout, fmt);
	if (!ctx->common.quiet)
		fprintf(stderr, "%s: %s, %d rounds in %.1f s; wrote %s (store model %lld)\n", ctx->prog,
		        p.objective, xgb_rounds(m), secs, o.out, (long long)model_id);
out:
	xgb_free(m);
	part_free(&tr);
	part_free(&ho);
	free(hold);
	free(label);
	free(payload);
	free(file);
	free(meta);
	return status;
}

/* ---- entry -------------------------------------------------------------------------- */

int cmd_train(int argc, char **argv, tk_ctx *ctx)
{
	trainset ts;
	hw_list hl;
	tk_store *st;
	int64_t *ids = NULL;
	int nid = 0, rc, kind, from_stdin = 0, status;
	const char *kname;

	memset(&ts, 0, sizeof ts);
	memset(&hl, 0, sizeof hl);
	o.model = "xgb";
	o.objective = "rank";
	o.feature = "itervar";
	o.out = "tunekit.model";
	if ((rc = opt_parse(ctx, &argc, argv, options, usage)))
		return rc < 0 ? EXIT_OK : rc;
	for (int i = 0; i < argc; i++) {
		if (strcmp(argv[i], "-") || from_stdin)
			return tk_fail(ctx, TK_EINVAL, "unexpected argument '%s'", argv[i]);
		from_stdin = 1;
	}
	if (strcmp(o.model, "xgb"))
		return tk_fail(ctx, TK_EINVAL, "unknown model '%s' (there is xgb)", o.model);
	if (strcmp(o.objective, "rank") && strcmp(o.objective, "reg"))
		return tk_fail(ctx, TK_EINVAL, "unknown objective '%s' (rank or reg)", o.objective);
	if ((kind = feat_kind_parse(o.feature)) < 0)
		return tk_fail(ctx, TK_EINVAL, "unknown feature kind '%s' (itervar, knob or curve)",
		               o.feature);
	if (o.tree_method && strcmp(o.tree_method, "auto") && strcmp(o.tree_method, "exact") &&
	    strcmp(o.tree_method, "approx") && strcmp(o.tree_method, "hist"))
		return tk_fail(ctx, TK_EINVAL, "unknown tree method '%s'", o.tree_method);
	if (format_parse(o.format) < 0)
		return tk_fail(ctx, TK_EINVAL, "unknown format '%s' (table, tsv or json)", o.format);
	if (o.holdout < 0 || o.holdout >= 1)
		return tk_fail(ctx, TK_EINVAL, "--holdout needs a fraction from 0 to below 1");
	if (o.holdout > 0 && o.holdout_task.n > 0)
		return tk_fail(ctx, TK_EINVAL, "give --holdout or --holdout-task, not both");
	if (o.rounds < 0 || o.rounds > 1000000 || o.hardware < 0)
		return tk_fail(ctx, TK_EINVAL, "option out of range (see '%s --help')", ctx->prog);
	if (!*o.out)
		return tk_fail(ctx, TK_EINVAL, "--out needs a file name");
	kname = feat_kind_name(kind);

	if (from_stdin && (status = read_ids(ctx, &ids, &nid)))
		goto out;
	if ((status = tk_ctx_store(ctx, &st)))
		goto out;
	if ((rc = store_hardware_counts(st, kname, feat_version(kind), hw_add, &hl))) {
		status = tk_fail(ctx, rc, hl.oom ? "out of memory" : NULL);
		goto out;
	}

	int64_t hw_id = o.hardware;
	if (from_stdin) {
		qsort(ids, (size_t)nid, sizeof *ids, cmp_i64);
		int k = 0;
		for (int i = 0; i < nid; i++)
			if (k == 0 || ids[k - 1] != ids[i])
				ids[k++] = ids[i];
		nid = k;
		if ((rc = store_train_rows(st, 0, kname, feat_version(kind), ids, nid, ts_add, &ts))) {
			status = tk_fail(ctx, ts.oom ? TK_ENOMEM : rc, ts.oom ? "out of memory" : NULL);
			goto out;
		}
		if (ts.n + ts.nmissing < nid) {
			status = tk_fail(ctx, TK_EINVAL, "stdin: %lld of %d records are not in the store %s",
			                 (long long)(nid - ts.n - ts.nmissing), nid, ctx->common.db);
			goto out;
		}
		if (ts.nmissing > 0) {
			status = tk_fail(ctx, TK_EINVAL, "stdin: %lld of %d records have no %s features"
			                 " (measurement %lld%s); run 'tunekit extract-features --kind %s'"
			                 " on them first", (long long)ts.nmissing, nid, kname,
			                 (long long)ts.missing[0], ts.nmissing > 1 ? ", ..." : "", kname);
			goto out;
		}
		if (!hw_id) {
			/* the hardware with the most of these records */
			int64_t best = 0, nbest = 0, ncand = 0;
			for (int h = 0; h < hl.n; h++) {
				int64_t c = 0;
				for (int i = 0; i < ts.n; i++)
					c += ts.hw[i] == hl.h[h].id;
				ncand += c > 0;
				if (c > nbest) {
					nbest = c;
					best = hl.h[h].id;
				}
			}
			hw_id = best;
			if (ncand > 1 && !ctx->common.quiet)
				fprintf(stderr, "%s: the records are of %lld hardware targets; training on"
				        " hardware %lld, which has the most (choose with --hardware)\n",
				        ctx->prog, (long long)ncand, (long long)hw_id);
		}
	} else {
		if (hl.n == 0) {
			status = tk_fail(ctx, TK_EINVAL, "no records in the store %s (run 'tunekit measure'"
			                 " first)", ctx->common.db);
			goto out;
		}
		if (!hw_id) {
			int ncand = 0;
			for (int h = 0; h < hl.n; h++)
				ncand += hl.h[h].nfeat > 0;
			hw_id = hl.h[0].id;
			if (ncand > 1 && !ctx->common.quiet)
				fprintf(stderr, "%s: %d hardware targets have records with %s features;"
				        " training on hardware %lld (%lld records), which has the most"
				        " (choose with --hardware)\n", ctx->prog, ncand, kname,
				        (long long)hw_id, (long long)hl.h[0].nfeat);
		}
	}
	const store_hw_count *hw = hw_find(&hl, hw_id);
	if (!hw) {
		status = tk_fail(ctx, TK_EINVAL, "hardware %lld has no records%s", (long long)hw_id,
		                 from_stdin ? " on stdin" : "");
		goto out;
	}
	if (!from_stdin) {
		if (hw->nfeat == 0) {
			status = tk_fail(ctx, TK_EINVAL, "none of the %lld records of hardware %lld has %s"
			                 " features (version %d); run 'tunekit extract-features --kind %s'"
			                 " first", (long long)hw->nrec, (long long)hw_id, kname,
			                 feat_version(kind), kname);
			goto out;
		}
		if ((rc = store_train_rows(st, hw_id, kname, feat_version(kind), NULL, 0, ts_add, &ts))) {
			status = tk_fail(ctx, ts.oom ? TK_ENOMEM : rc, ts.oom ? "out of memory" : NULL);
			goto out;
		}
		if (hw->nfeat < hw->nrec && !ctx->common.quiet)
			fprintf(stderr, "%s: %lld of the %lld records of hardware %lld have no %s features"
			        " and are left out ('tunekit extract-features --kind %s' adds them)\n",
			        ctx->prog, (long long)(hw->nrec - hw->nfeat), (long long)hw->nrec,
			        (long long)hw_id, kname, kname);
	}
	if ((rc = ts_tasks(&ts, hw_id))) {
		status = tk_fail(ctx, rc, NULL);
		goto out;
	}
	if (ts.n == 0) {
		status = tk_fail(ctx, TK_EINVAL, "no records of hardware %lld to train on",
		                 (long long)hw_id);
		goto out;
	}
	status = train(ctx, st, &ts, hw, kind);
out:
	ts_free(&ts);
	hw_free(&hl);
	free(ids);
	free(o.holdout_task.v);
	return status;
}
