/*
 * meta_eval benchmark (not a test): MetaTune's Table 4. For each held-out
 * convolution that has records on the evaluation hardware, and each n of
 * N...: n of the task's records are "measured" (drawn at random, REPEATS
 * times), the models learn from them, and the MSE and MSE(D) of their
 * predictions are taken on the task's other records (at least MINTEST,
 * else the task has no score at that n). Rows print the means
 * over tasks and repeats, per group (a network, or "tasks" for -t) and over
 * all of them:
 *
 *     group  method  n  tasks  mse  mse_d
 *
 *   xgb       AutoTVM's XGBoost (squared error, itervar features) fit on
 *             the n records alone (n >= 2)
 *   xgb-xfer  the same on top of a base model (AutoTVM's transfer
 *             learning): xgb fit on the source store's records (SRC_HW) of
 *             every convolution that is not evaluated, the data the meta
 *             model learnt from; n = 0 is the base
 *   meta      the meta model (pretrain-meta, graph features) fine-tuned on
 *             the n records as the tuner does; n = 0 is the meta-learnt head
 *
 * Labels are throughputs normalised by the task's best record (known in
 * hindsight, the same for the n records and the others), as `tunekit
 * train` measures models.
 *
 * Build: make build/bench/meta_eval
 * Usage: meta_eval [-r REPEATS] [-n NETWORK]... [-t TASK]...
 *                  META_MODEL SRC_DB SRC_HW EVAL_DB EVAL_HW N...
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

/* net_load stores each task in its canonical form: the store's key. */
static int in_network(const tk_network *net, const char *key)
{
	for (int i = 0; i < net->n; i++)
		if (!strcmp(net->task[i].task, key))
			return 1;
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
	return (cm_data){ .n = n, .d = d, .x = xb, .y = yb };
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

/* The canonical key of a task spelling, or NULL. */
static char *canon(const char *task)
{
	te_prog *p;
	if (te_task_parse(task, &p) != TK_OK)
		return NULL;
	char *k = strdup(p->key);
	te_prog_free(p);
	return k;
}

#define MAXGROUP 16
/* Records a task's score needs besides its n: MSE(D) is over the top
 * quarter of them. */
#define MINTEST 16

static void usage(void)
{
	fprintf(stderr, "usage: meta_eval [-r REPEATS] [-n NETWORK]... [-t TASK]... "
	                "META_MODEL SRC_DB SRC_HW EVAL_DB EVAL_HW N...\n");
	exit(2);
}

int main(int argc, char **argv)
{
	int repeats = 3, ngroup = 0, ntk = 0;
	const char *gname[MAXGROUP + 1];
	tk_network *net[MAXGROUP] = { 0 };
	char **tk = calloc((size_t)argc, sizeof *tk);
	int ai = 1;
	for (; ai < argc && argv[ai][0] == '-' && argv[ai][1]; ai += 2) {
		if (ai + 1 >= argc)
			usage();
		if (!strcmp(argv[ai], "-r")) {
			repeats = atoi(argv[ai + 1]);
		} else if (!strcmp(argv[ai], "-n") && ngroup < MAXGROUP) {
			if (net_load(argv[ai + 1], &net[ngroup])) {
				fprintf(stderr, "meta_eval: %s\n", tk_errmsg());
				return 1;
			}
			gname[ngroup] = net[ngroup]->name;
			ngroup++;
		} else if (!strcmp(argv[ai], "-t")) {
			if (!(tk[ntk++] = canon(argv[ai + 1]))) {
				fprintf(stderr, "meta_eval: %s: %s\n", argv[ai + 1], tk_errmsg());
				return 1;
			}
		} else {
			usage();
		}
	}
	if (argc - ai < 6 || (!ngroup && !ntk))
		usage();
	int tgroup = ntk ? ngroup++ : -1; /* the -t tasks are a group of their own */
	if (ntk)
		gname[tgroup] = "tasks";
	gname[ngroup] = "all";
	const char *model = argv[ai], *srcdb = argv[ai + 1], *evaldb = argv[ai + 3];
	int64_t src_hw = atoll(argv[ai + 2]), eval_hw = atoll(argv[ai + 4]);
	char **shot = argv + ai + 5;
	int nshot = argc - ai - 5;
	tk_store *sst, *est;
	mf_meta mm;
	cm_model *meta;
	if (store_open(srcdb, STORE_READONLY, &sst) || store_open(evaldb, STORE_READONLY, &est) ||
	    cm_read(model, &mm, &meta)) {
		fprintf(stderr, "meta_eval: %s\n", tk_errmsg());
		return 1;
	}
	rows g, it, base_rows;
	if (load(est, FEAT_GRAPH, eval_hw, &g) || load(est, FEAT_ITERVAR, eval_hw, &it) ||
	    load(sst, FEAT_ITERVAR, src_hw, &base_rows))
		return 1;

	/* the evaluated tasks: convolutions of a group; their groups as bits */
	unsigned *bits = calloc((size_t)g.ts.ntask, sizeof *bits);
	for (int t = 0; t < g.ts.ntask; t++) {
		const char *key = g.ts.tasks[t].key;
		if (strncmp(key, "conv", 4))
			continue;
		for (int k = 0; k < ngroup; k++)
			if (k == tgroup) {
				for (int j = 0; j < ntk; j++)
					bits[t] |= (unsigned)!strcmp(tk[j], key) << k;
			} else {
				bits[t] |= (unsigned)in_network(net[k], key) << k;
			}
	}
	/* the base model of xgb-xfer: the source's convolutions not evaluated */
	int dit = 0, nb = 0;
	for (int i = 0; i < base_rows.ts.n; i++)
		dit = base_rows.ts.nx[i] > dit ? base_rows.ts.nx[i] : dit;
	for (int i = 0; i < it.ts.n; i++)
		dit = it.ts.nx[i] > dit ? it.ts.nx[i] : dit;
	char *sel = calloc((size_t)base_rows.ts.n, 1);
	for (int i = 0; i < base_rows.ts.n; i++) {
		const char *key = base_rows.ts.tasks[base_rows.ts.task[i]].key;
		int t = find(&g.ts, key);
		sel[i] = !strncmp(key, "conv", 4) && (t < 0 || !bits[t]);
		nb += sel[i];
	}
	tr_part bp;
	cm_params p;
	cm_params_default(&p);
	p.rank = 0;
	p.early_stop = 20;
	cm_model *base = NULL;
	if (!nb) {
		fprintf(stderr, "meta_eval: no records for the base model on hardware %lld\n",
		        (long long)src_hw);
		return 1;
	}
	tr_part_build(&base_rows.ts, base_rows.y, sel, 1, dit, &bp);
	cm_data bd = tr_part_data(&bp);
	if (cm_fit(cm_find("xgb"), &p, &bd, NULL, &base)) {
		fprintf(stderr, "meta_eval: base model: %s\n", tk_errmsg());
		return 1;
	}
	fprintf(stderr, "meta_eval: base model of %d records of %s hardware %lld\n", nb, srcdb,
	        (long long)src_hw);

	enum { XGB, XFER, META, NMETHOD };
	static const char *const names[NMETHOD] = { "xgb", "xgb-xfer", "meta" };
	/* acc[(group * NMETHOD + method) * nshot + shot], group ngroup: all */
	acc *a = calloc((size_t)(ngroup + 1) * NMETHOD * nshot, sizeof *a);
	int *ntask = calloc((size_t)ngroup + 1, sizeof *ntask);
	acc *one = malloc(sizeof *one * (size_t)NMETHOD * nshot);
	tk_rng rng;
	tk_rng_seed(&rng, 1, 0x6d657661);
	for (int t = 0; t < g.ts.ntask; t++) {
		const tr_task *gt = &g.ts.tasks[t];
		int ti = find(&it.ts, gt->key);
		if (!bits[t] || ti < 0)
			continue;
		const tr_task *itt = &it.ts.tasks[ti];
		int n = gt->n < itt->n ? gt->n : itt->n;
		memset(one, 0, sizeof *one * (size_t)NMETHOD * nshot);
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
				int k = atoi(shot[s]), rest = n - k;
				if (k < 0 || rest < MINTEST)
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
						metrics(&it, ii + k, rest, pr, &one[XGB * nshot + s]);
					cm_free(m);
				}
				/* xgb on the base model */
				cm_predict(base, tit.x, rest, dit, NULL, mg);
				if (k == 0) {
					metrics(&it, ii + k, rest, mg, &one[XFER * nshot + s]);
				} else {
					float *km = malloc(sizeof *km * (size_t)k);
					cm_model *m = NULL;
					cm_predict(base, kit.x, k, dit, NULL, km);
					kit.margin = km;
					if (!cm_fit(cm_find("xgb"), &p, &kit, NULL, &m) &&
					    !cm_predict(m, tit.x, rest, dit, mg, pr))
						metrics(&it, ii + k, rest, pr, &one[XFER * nshot + s]);
					cm_free(m);
					free(km);
				}
				/* meta, fine-tuned */
				cm_model *m = NULL;
				if (!cm_clone(meta, &m) && (k == 0 || !cm_update(m, &p, &kg)) &&
				    !cm_predict(m, tg.x, rest, FEAT_GRAPH_LEN, NULL, pr))
					metrics(&g, gi + k, rest, pr, &one[META * nshot + s]);
				cm_free(m);
			}
		}
		/* the task's means, once into each of its groups and into all */
		for (int k = 0; k <= ngroup; k++) {
			if (k < ngroup && !(bits[t] >> k & 1))
				continue;
			ntask[k]++;
			for (int j = 0; j < NMETHOD * nshot; j++) {
				if (!one[j].n)
					continue;
				acc *c = &a[(size_t)k * NMETHOD * nshot + j];
				c->mse += one[j].mse / one[j].n;
				c->mse_d += one[j].mse_d / one[j].n;
				c->n++;
			}
		}
		free(perm), free(gi), free(ii), free(xg), free(yg), free(xi), free(yi), free(pr), free(mg);
	}
	printf("group\tmethod\tn\ttasks\tmse\tmse_d\n");
	for (int k = 0; k <= ngroup; k++)
		for (int mth = 0; mth < NMETHOD; mth++)
			for (int s = 0; s < nshot; s++) {
				const acc *c = &a[((size_t)k * NMETHOD + mth) * nshot + s];
				if (c->n)
					printf("%s\t%s\t%s\t%d\t%.4f\t%.4f\n", gname[k], names[mth], shot[s],
					       c->n, c->mse / c->n, c->mse_d / c->n);
			}
	return ntask[ngroup] ? 0 : 1;
}
