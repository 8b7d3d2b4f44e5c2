/*
 * meta_eval benchmark (not a test): MetaTune's Table 4 at the size of the
 * offline dataset. For each convolution of a held-out network that has
 * records on the evaluation hardware, and each n of SHOTS: n of the task's
 * records are "measured" (drawn at random, REPEATS times), the models learn
 * from them, and the MSE and MSE(D) of their predictions are taken on the
 * task's other records; the rows print the means over tasks and repeats:
 *
 *     method  n  tasks  mse  mse_d
 *
 *   xgb       AutoTVM's XGBoost (squared error, itervar features) fit on
 *             the n records alone (n >= 2)
 *   xgb-xfer  the same on top of a base model (AutoTVM's transfer
 *             learning): xgb fit on the training hardware's records of
 *             every conv2d task outside the network; n = 0 is the base
 *   meta      the meta model (pretrain-meta, graph features) fine-tuned on
 *             the n records as the tuner does; n = 0 is the meta-learnt head
 *
 * Labels are throughputs normalised by the task's best record (known in
 * hindsight, the same for the n records and the others), as `tunekit
 * train` measures models.
 *
 * Build: make build/bench/meta_eval
 * Usage: meta_eval DATASET META_MODEL TRAIN_HW EVAL_HW NETWORK REPEATS N...
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "features/feature.h"
#include "model/cost.h"
#include "model/meta.h"
#include "store/store.h"
#include "task/network.h"
#include "train/train.h"

typedef struct rows {
	tr_set ts;
	float *y;
} rows;

static int load(tk_store *st, int feat, int64_t hw, rows *r)
{
	tr_source src;
	tr_load_opts lo = { feat, hw, NULL, 0, NULL, 0 };
	memset(r, 0, sizeof *r);
	if (tr_load(st, &lo, &r->ts, &src)) {
		fprintf(stderr, "meta_eval: hardware %lld, %s features: %s\n", (long long)hw,
		        feat_kind_name(feat), tk_errmsg());
		return -1;
	}
	r->y = malloc(sizeof *r->y * (size_t)r->ts.n);
	tr_labels(&r->ts, r->y);
	return 0;
}

static int find(const tr_set *ts, const char *key)
{
	for (int t = 0; t < ts->ntask; t++)
		if (!strcmp(ts->tasks[t].key, key))
			return t;
	return -1;
}

static int in_network(const tk_network *net, const char *key)
{
	for (int i = 0; i < net->n; i++) {
		te_prog *p;
		int same = 0;
		if (te_task_parse(net->task[i].task, &p) == TK_OK) {
			same = !strcmp(p->key, key);
			te_prog_free(p);
		}
		if (same)
			return 1;
	}
	return 0;
}

/* Rows idx[0..n) of task t of r as model data (x copied into xb). */
static cm_data data_of(const rows *r, const int *idx, int n, int d, float *xb, float *yb)
{
	for (int i = 0; i < n; i++) {
		memset(xb + (size_t)i * d, 0, sizeof *xb * (size_t)d);
		memcpy(xb + (size_t)i * d, r->ts.xbuf + r->ts.xoff[idx[i]],
		       sizeof *xb * (size_t)(r->ts.nx[idx[i]] < d ? r->ts.nx[idx[i]] : d));
		yb[i] = r->y[idx[i]];
	}
	unsigned *g = NULL;
	return (cm_data){ n, d, xb, yb, 0, g, NULL, NULL };
}

typedef struct acc {
	double mse, mse_d;
	int n;
} acc;

static void metrics(const rows *r, const int *idx, int n, const float *p, acc *a)
{
	int64_t *task = calloc((size_t)n, sizeof *task);
	float *y = malloc(sizeof *y * (size_t)n);
	double *lat = malloc(sizeof *lat * (size_t)n);
	cm_metrics m;
	for (int i = 0; i < n; i++) {
		y[i] = r->y[idx[i]];
		lat[i] = r->ts.lat[idx[i]];
	}
	if (!cm_metrics_compute(n, task, y, lat, p, NULL, &m) && !isnan(m.mse)) {
		a->mse += m.mse;
		a->mse_d += isnan(m.mse_d) ? 0 : m.mse_d;
		a->n++;
	}
	free(task);
	free(y);
	free(lat);
}

int main(int argc, char **argv)
{
	if (argc < 8) {
		fprintf(stderr, "usage: meta_eval DATASET META_MODEL TRAIN_HW EVAL_HW NETWORK REPEATS N...\n");
		return 2;
	}
	tk_store *st;
	tk_network *net;
	mf_meta mm;
	cm_model *meta;
	int64_t train_hw = atoll(argv[3]), eval_hw = atoll(argv[4]);
	int repeats = atoi(argv[6]), nshot = argc - 7;
	if (store_open(argv[1], STORE_READONLY, &st) || net_load(argv[5], &net) ||
	    cm_read(argv[2], &mm, &meta)) {
		fprintf(stderr, "meta_eval: %s\n", tk_errmsg());
		return 1;
	}
	rows g, it, base_rows;
	if (load(st, FEAT_GRAPH, eval_hw, &g) || load(st, FEAT_ITERVAR, eval_hw, &it) ||
	    load(st, FEAT_ITERVAR, train_hw, &base_rows))
		return 1;
	/* the base model of xgb-xfer: conv2d tasks outside the network */
	int dit = 0, nb = 0;
	for (int i = 0; i < base_rows.ts.n; i++)
		dit = base_rows.ts.nx[i] > dit ? base_rows.ts.nx[i] : dit;
	char *sel = calloc((size_t)base_rows.ts.n, 1);
	for (int i = 0; i < base_rows.ts.n; i++) {
		const char *key = base_rows.ts.tasks[base_rows.ts.task[i]].key;
		sel[i] = !strncmp(key, "conv2d:", 7) && !in_network(net, key);
		nb += sel[i];
	}
	tr_part bp;
	tr_part_build(&base_rows.ts, base_rows.y, sel, 1, dit, &bp);
	cm_params p;
	cm_params_default(&p);
	p.rank = 0;
	p.early_stop = 20;
	cm_model *base = NULL;
	cm_data bd = tr_part_data(&bp);
	if (cm_fit(cm_find("xgb"), &p, &bd, NULL, &base)) {
		fprintf(stderr, "meta_eval: base model: %s\n", tk_errmsg());
		return 1;
	}
	fprintf(stderr, "meta_eval: base model of %d records of hardware %lld\n", nb,
	        (long long)train_hw);

	enum { XGB, XFER, META, NMETHOD };
	static const char *const names[NMETHOD] = { "xgb", "xgb-xfer", "meta" };
	acc *a = calloc((size_t)NMETHOD * nshot, sizeof *a);
	int ntask = 0;
	tk_rng rng;
	tk_rng_seed(&rng, 1, 0x6d657661);
	for (int t = 0; t < g.ts.ntask; t++) {
		const tr_task *gt = &g.ts.tasks[t];
		int ti = find(&it.ts, gt->key);
		if (strncmp(gt->key, "conv2d:", 7) || !in_network(net, gt->key) || ti < 0)
			continue;
		const tr_task *itt = &it.ts.tasks[ti];
		int n = gt->n < itt->n ? gt->n : itt->n;
		ntask++;
		int *perm = malloc(sizeof *perm * (size_t)n), *gi = malloc(sizeof *gi * (size_t)n);
		int *ii = malloc(sizeof *ii * (size_t)n);
		float *xg = malloc(sizeof *xg * (size_t)n * FEAT_GRAPH_LEN), *yg = malloc(sizeof *yg * n);
		float *xi = malloc(sizeof *xi * (size_t)n * dit), *yi = malloc(sizeof *yi * n);
		float *pr = malloc(sizeof *pr * (size_t)n), *mg = malloc(sizeof *mg * (size_t)n);
		for (int rep = 0; rep < repeats; rep++) {
			for (int i = 0; i < n; i++)
				perm[i] = i;
			for (int i = n - 1; i > 0; i--) {
				int j = (int)tk_rng_below(&rng, (uint32_t)i + 1), x = perm[i];
				perm[i] = perm[j];
				perm[j] = x;
			}
			/* the same records by measurement in both feature sets */
			for (int i = 0; i < n; i++) {
				gi[i] = gt->first + perm[i];
				ii[i] = -1;
				for (int j = itt->first; j < itt->first + itt->n; j++)
					if (it.ts.meas[j] == g.ts.meas[gi[i]])
						ii[i] = j;
				if (ii[i] < 0)
					ii[i] = itt->first + perm[i] % itt->n;
			}
			for (int s = 0; s < nshot; s++) {
				int k = atoi(argv[7 + s]), rest = n - k;
				if (k < 0 || rest < 2)
					continue;
				/* test rows: k .. n */
				cm_data tg = data_of(&g, gi + k, rest, FEAT_GRAPH_LEN, xg + (size_t)k * FEAT_GRAPH_LEN, yg + k);
				cm_data tit = data_of(&it, ii + k, rest, dit, xi + (size_t)k * dit, yi + k);
				cm_data kg = data_of(&g, gi, k, FEAT_GRAPH_LEN, xg, yg);
				cm_data kit = data_of(&it, ii, k, dit, xi, yi);
				/* xgb alone */
				if (k >= 2) {
					cm_model *m = NULL;
					if (!cm_fit(cm_find("xgb"), &p, &kit, NULL, &m) &&
					    !cm_predict(m, tit.x, rest, dit, NULL, pr))
						metrics(&it, ii + k, rest, pr, &a[XGB * nshot + s]);
					cm_free(m);
				}
				/* xgb on the base model */
				cm_predict(base, tit.x, rest, dit, NULL, mg);
				if (k == 0) {
					metrics(&it, ii + k, rest, mg, &a[XFER * nshot + s]);
				} else {
					float *km = malloc(sizeof *km * (size_t)k);
					cm_model *m = NULL;
					cm_predict(base, kit.x, k, dit, NULL, km);
					kit.margin = km;
					if (!cm_fit(cm_find("xgb"), &p, &kit, NULL, &m) &&
					    !cm_predict(m, tit.x, rest, dit, mg, pr))
						metrics(&it, ii + k, rest, pr, &a[XFER * nshot + s]);
					cm_free(m);
					free(km);
				}
				/* meta, fine-tuned */
				cm_model *m = NULL;
				if (!cm_clone(meta, &m) && (k == 0 || !cm_update(m, &p, &kg)) &&
				    !cm_predict(m, tg.x, rest, FEAT_GRAPH_LEN, NULL, pr))
					metrics(&g, gi + k, rest, pr, &a[META * nshot + s]);
				cm_free(m);
			}
		}
		free(perm), free(gi), free(ii), free(xg), free(yg), free(xi), free(yi), free(pr), free(mg);
	}
	printf("method\tn\ttasks\tmse\tmse_d\n");
	for (int mth = 0; mth < NMETHOD; mth++)
		for (int s = 0; s < nshot; s++) {
			const acc *c = &a[mth * nshot + s];
			if (!c->n)
				continue;
			printf("%s\t%s\t%d\t%.4f\t%.4f\n", names[mth], argv[7 + s], ntask, c->mse / c->n,
			       c->mse_d / c->n);
		}
	return ntask ? 0 : 1;
}
