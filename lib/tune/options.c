/*
 * options: the tuning options described once. Each row names a field of
 * tn_opts with its key in run.params, its command-line flag (if tune has
 * one), its type and range and its help line; the run-parameter record
 * (tn_opts_format/parse), the range checks, and cmd/tune.c's parser and
 * --help all come from this table.
 */
#include <assert.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "train/train.h"
#include "tune_int.h"

#define F(field) offsetof(tn_opts, field), sizeof(((tn_opts *)0)->field)
#define BIG 1e15

/* ---- the names of enumerated options ------------------------------------ */

static const char *objective_name(int v)
{
	static const char *const n[] = { [TN_RANK] = "rank", [TN_REG] = "reg" };
	return v >= 0 && v < ArraySize(n) ? n[v] : NULL;
}

static const char *stages_name(int v)
{
	static const char *const n[] = { [TN_ML2_VA] = "VA", [TN_ML2_V] = "V", [TN_ML2_A] = "A" };
	return v >= 0 && v < ArraySize(n) ? n[v] : NULL;
}

static const char *controller_name(int v)
{
	return v >= 0 && v < tn_nctls ? tn_ctls[v]->name : NULL;
}

/* 0: never refit (an older run's ""); else a row of tr_methods[], or
 * after them auto */
static const char *adapt_name(int v)
{
	return v == 0 ? "" : v > 0 && v <= tr_nmethods ? tr_methods[v - 1].name
	                   : v == TN_ADAPT_AUTO ? "auto" : NULL;
}

static const char *guard_name(int v)
{
	static const char *const n[] = { "off", "on" };
	return v >= 0 && v < ArraySize(n) ? n[v] : NULL;
}

/* 0: auto; else a row of cm_kinds[] */
static const char *model_name(int v)
{
	return v == 0 ? "auto" : v > 0 && v <= cm_nkinds ? cm_kinds[v - 1]->name : NULL;
}


/* ---- the table --------------------------------------------------------- */

const tn_optdesc tn_optdescs[] = {
	{ "trials", "trials", TN_I64, F(trials), 1, BIG, "N", "measurement budget (default 200)", 0 },
	{ "time_budget", "time-budget", TN_DBL, F(time_budget), 0, BIG, "S",
	  "also stop after S seconds (simulated with --replay)", 0 },
	{ "model", "model", TN_STR, F(model), 0, 0, "NAME",
	  "cost model (default xgb; see 'tunekit help models')", TN_KEEP },
	{ "search", "search", TN_STR, F(search), 0, 0, "NAME",
	  "search (default sa; see 'tunekit help searches')", TN_KEEP },
	{ "feature", "feature", TN_STR, F(feature), 0, 0, "KIND",
	  "features of the model: itervar, knob, curve, tlp, graph (default: the model's;"
	  " knob without a loop nest)", TN_KEEP },
	{ "objective", "objective", TN_ENUM, F(objective), 0, 0, "OBJ",
	  "rank (default, pairwise) or reg (squared error)", TN_KEEP },
	{ "plan_size", "plan-size", TN_INT, F(plan_size), 1, 1e6, "N",
	  "trials planned per model fit (default 64)", 0 },
	{ "epsilon", "epsilon", TN_DBL, F(epsilon), 0, 1, "E", "random share of each plan (default 0.05)", 0 },
	{ "diversity", "diversity", TN_INT, F(diversity), 0, 1000, "R",
	  "diversity-aware selection from R x plan candidates", 0 },
	{ "early_stop", "early-stop", TN_I64, F(early_stop), 0, BIG, "N",
	  "stop a task after N trials without improvement", 0 },
	{ "batch", "batch", TN_INT, F(batch), 1, 1e6, "N",
	  "configurations built and stored together (default 16)", 0 },
	{ "round", "round", TN_INT, F(round), 1, 1e9, "N",
	  "trials per scheduling round of a network (default 64, at most trials / tasks)", 0 },
	{ "seed", NULL, TN_U64, F(seed), 0, 0, NULL, NULL, 0 },
	{ "xgb_rounds", "xgb-rounds", TN_INT, F(xgb_rounds), 0, 1e6, "N",
	  "fixed boosting rounds of the model (default: early stopping)", 0 },
	{ "bo_kappa", "bo-kappa", TN_DBL, F(bo_kappa), 0, 100, "K",
	  "bo: weight of the model's deviation in the acquisition mu + K sigma (default 2)", 0 },
	{ "sa_chains", "sa-chains", TN_INT, F(sa.chains), 1, 1e6, "N",
	  "simulated annealing chains (default 128)", 0 },
	{ "sa_iters", "sa-iters", TN_INT, F(sa.iters), 1, 1e9, "N", "simulated annealing steps (default 500)", 0 },
	{ "sa_scores", "sa-scores", TN_INT, F(sa.max_scores), -1, 1e9, "N",
	  "model scores one annealing run may ask for (default 8192 on a network's scores:"
	  " tlp, mtl-tlp; else 0: no limit)", 0 },
	{ "sa_early_stop", NULL, TN_INT, F(sa.early_stop), 1, 1e9, NULL, NULL, 0 },
	{ "regtile", "regtile", TN_INT, F(regtile), -1, 1e6, "N",
	  "draw register tiles of at most N vectors (default: the ISA's registers - 2; 0: any)", 0 },
	{ "confirm", "confirm", TN_INT, F(confirm), 0, 1e6, "K",
	  "then measure the K fastest configurations of each task twice more (default 8; 0: off)", 0 },
	{ "bound", "bound", TN_DBL, F(bound), 1, BIG, "K",
	  "time a trial no further once its first timed repeat is past K x its task's best"
	  " latency so far (default 3; 0: off)", TN_OFF0 },
	{ "cover", "cover", TN_INT, F(cover), 0, 1e6, "N",
	  "until each loop order has N trials, give it plan-size/8 of each plan (default 16; 0: off)", 0 },
	{ "model_file", "model-file", TN_STR, F(model_file), 0, 0, "FILE",
	  "score candidates with this trained model (tunekit train), adapted and guarded", TN_KEEP },
	{ "other_model", "other-model", TN_ENUM, F(other_model), 0, 0, "NAME",
	  "with a meta model: tasks of operators it was not meta-trained on use this model"
	  " (default auto: xgb, or rfei for bo; none: the meta model for all)", TN_KEEP },
	{ "adapt", "adapt", TN_ENUM, F(adapt), 0, 0, "METHOD",
	  "with --model-file: adapt it to each task's records at every refit (default auto:"
	  " xgb-warm or finetune; moses, none)", TN_KEEP },
	{ "guard", "guard", TN_ENUM, F(guard), 0, 0, "on|off",
	  "with --model-file: plan on a model fitted from scratch while it ranks the new"
	  " measurements better (default on)", TN_KEEP },
	{ "alpha", "alpha", TN_DBL, F(alpha), 0, 100, "A",
	  "ml2: (A + 1) x batch candidates pass V and are compiled, A picks the batch (default 1)",
	  TN_KEEP },
	{ "ml2_stages", "ml2-stages", TN_ENUM, F(ml2_stages), 0, 0, "S",
	  "ml2: stages besides P: VA (default), V (no compile) or A (no validity filter)", TN_KEEP },
	{ "transfer_from", "transfer-from", TN_STR, F(transfer_from), 0, 0, "DB",
	  "history store for a transfer-learning base model", TN_KEEP },
	{ "transfer_hw", "transfer-hardware", TN_STR, F(transfer_hw), 0, 0, "HW",
	  "its hardware (key or id) to learn from (default: the target's)", TN_KEEP },
	{ "replay", "replay", TN_STR, F(replay), 0, 0, "DB",
	  "answer measurements from the records of this store", TN_KEEP },
	{ "replay_hw", "replay-hardware", TN_STR, F(replay_hw), 0, 0, "HW",
	  "hardware key or id in the replay store", TN_KEEP },
	{ "replay_pool", "replay-pool", TN_INT, F(replay_pool), 0, 1, "0|1",
	  "1: search only the configurations the replay store measured (a sampled dataset)",
	  TN_KEEP },
	{ "network", NULL, TN_STR, F(network), 0, 0, NULL, NULL, TN_KEEP },
	{ "prior", NULL, TN_INT, F(prior), 0, 1, NULL, NULL, TN_KEEP },
	{ "shard", "shard", TN_STR, F(shard), 0, 0, "I/K",
	  "tune the I-th of K shares of the tasks, with that share of the trials (see tunekit merge)",
	  TN_KEEP },
	{ "controller", "controller", TN_ENUM, F(ctl.kind), 0, 0, "NAME",
	  "none (default) or moses: stop measuring a task once its model is certain", TN_KEEP },
	{ "controller_cv", "controller-cv", TN_DBL, F(ctl.cv), 0, 100, "X",
	  "moses: once the CV of the model's batch means is under X (default 0.1)", TN_KEEP },
	{ "controller_share", "controller-share", TN_DBL, F(ctl.share), 0, 1, "P",
	  "moses: measure at most this share of a task's trials (default 0.5)", TN_KEEP },
	{ "controller_batches", "controller-batches", TN_INT, F(ctl.batches), 2, 1000, "Q",
	  "moses: the CV is over the last Q measured batches (default 4)", TN_KEEP },
	{ "controller_top", "controller-top", TN_INT, F(ctl.top), 0, 1e6, "K",
	  "moses: then measure the K best predicted configurations of a task (default 8)", TN_KEEP },
	/* the measurement options (common to measure and tune: cmd's ms_cli) */
	{ "jobs", NULL, TN_INT, F(ms.jobs), 1, 4096, NULL, NULL, 0 },
	{ "build_timeout", NULL, TN_DBL, F(ms.build_timeout), 0, BIG, NULL, NULL, 0 },
	{ "build_adapt", NULL, TN_DBL, F(ms.build_adapt), 0, BIG, NULL, NULL, 0 },
	{ "number", NULL, TN_INT, F(ms.run.number), 0, 1e9, NULL, NULL, 0 },
	{ "repeat", NULL, TN_INT, F(ms.run.repeat), 1, 1e9, NULL, NULL, 0 },
	{ "min_repeat_ms", NULL, TN_DBL, F(ms.run.min_repeat_ms), 0, BIG, NULL, NULL, 0 },
	{ "warmup", NULL, TN_INT, F(ms.run.warmup), 0, 1e9, NULL, NULL, 0 },
	{ "flush_cache", NULL, TN_INT, F(ms.run.flush_cache), 0, 1, NULL, NULL, 0 },
	{ "timeout", NULL, TN_DBL, F(ms.run.timeout_s), 0, BIG, NULL, NULL, 0 },
	{ "adaptive", NULL, TN_INT, F(ms.run.adaptive), 0, 1, NULL, NULL, 0 },
	{ "microbatch", NULL, TN_INT, F(ms.run.microbatch), 0, 1e9, NULL, NULL, 0 },
	{ "cv", NULL, TN_DBL, F(ms.run.cv), 0, BIG, NULL, NULL, 0 },
	{ "cpu_clock", NULL, TN_INT, F(ms.run.cpu_clock), 0, 1, NULL, NULL, 0 },
};
const int tn_noptdesc = (int)(sizeof tn_optdescs / sizeof tn_optdescs[0]);

const tn_optdesc *tn_optdesc_find(const char *key)
{
	for (int i = 0; i < tn_noptdesc; i++)
		if (!strcmp(tn_optdescs[i].key, key))
			return &tn_optdescs[i];
	return NULL;
}

/* I/K ("", no shard, is a stored value only: see tn_opts_parse). */
static int shard_check(const char *text)
{
	tk_shard sh;
	return tk_shard_parse(text, &sh);
}

/* The options of type TN_ENUM: what their values are in messages
 * ("unknown controller 'x'") and the name of each value v (NULL past the
 * last). */
static const struct {
	const char *key, *what;
	const char *(*name)(int v);
} enums[] = {
	{ "objective", "objective", objective_name },
	{ "ml2_stages", "ml2 stages", stages_name },
	{ "controller", "controller", controller_name },
	{ "adapt", "transfer method", adapt_name },
	{ "guard", "guard", guard_name },
	{ "other_model", "model", model_name },
};

static int enum_of(const tn_optdesc *d)
{
	for (int i = 0; i < ArraySize(enums); i++)
		if (!strcmp(d->key, enums[i].key))
			return i;
	assert(!"an option of type TN_ENUM without names");
	return 0;
}

/* The string options that have a form, with its check: TK_OK, or TK_EINVAL
 * with the message set. */
static const struct {
	const char *key;
	int (*check)(const char *text);
} str_checks[] = {
	{ "shard", shard_check },
};

/* The number in field d of o, as a double (for the range check). */
static double get_num(const tn_opts *o, const tn_optdesc *d)
{
	const char *p = (const char *)o + d->off;
	switch (d->type) {
	case TN_INT: return *(const int *)p;
	case TN_I64: return (double)*(const int64_t *)p;
	case TN_U64: return (double)*(const uint64_t *)p;
	case TN_DBL: return *(const double *)p;
	case TN_ENUM: return *(const int *)p;
	}
	return 0;
}

static int in_range(const tn_optdesc *d, double v)
{
	return d->type == TN_STR || d->type == TN_U64 || d->type == TN_ENUM ||
	       (v >= d->min && v <= d->max) || ((d->flags & TN_OFF0) && v == 0);
}

/* The range of d's numbers for messages: "a to b", or "0, or a to b". */
static const char *range_text(const tn_optdesc *d, char *buf, size_t n)
{
	snprintf(buf, n, "%s%.15g to %.15g", d->flags & TN_OFF0 ? "0, or " : "", d->min, d->max);
	return buf;
}

int tn_opt_set(tn_opts *o, const tn_optdesc *d, const char *text)
{
	char *p = (char *)o + d->off;
	int64_t i;
	double x;
	if (d->type == TN_STR) {
		int rc;
		if (strlen(text) >= d->size)
			return tk_seterr(TK_EINVAL, "'%.40s...' is too long (at most %zu characters)", text,
			                 d->size - 1);
		for (int i = 0; i < ArraySize(str_checks); i++)
			if (!strcmp(d->key, str_checks[i].key) && (rc = str_checks[i].check(text)))
				return rc;
		memcpy(p, text, strlen(text) + 1);
		return TK_OK;
	}
	if (d->type == TN_ENUM) {
		const char *(*name)(int) = enums[enum_of(d)].name;
		char names[256];
		size_t len = 0;
		for (int v = 0; name(v); v++)
			if (!strcmp(text, name(v))) {
				*(int *)p = v;
				return TK_OK;
			}
		names[0] = 0;
		for (int v = 0; name(v) && len < sizeof names; v++)
			if (*name(v))
				len += (size_t)snprintf(names + len, sizeof names - len, "%s%s",
				                        len ? ", " : "", name(v));
		return tk_seterr(TK_EINVAL, "unknown %s '%s' (%s)", enums[enum_of(d)].what, text,
		                 names);
	}
	if (d->type == TN_DBL) {
		if (tk_parse_f64(text, &x) || !isfinite(x))
			return tk_seterr(TK_EINVAL, "'%s' is not a number", text);
	} else if (tk_parse_i64(text, &i)) {
		return tk_seterr(TK_EINVAL, "'%s' is not an integer", text);
	} else {
		x = (double)i;
	}
	char range[80];
	if (!in_range(d, x))
		return tk_seterr(TK_EINVAL, "%s is out of range (%s)", text,
		                 range_text(d, range, sizeof range));
	switch (d->type) {
	case TN_INT: *(int *)p = (int)i; break;
	case TN_I64: *(int64_t *)p = i; break;
	case TN_U64: *(uint64_t *)p = (uint64_t)i; break;
	case TN_DBL: *(double *)p = x; break;
	}
	return TK_OK;
}

int tn_opts_check(const tn_opts *o)
{
	for (int i = 0; i < tn_noptdesc; i++) {
		const tn_optdesc *d = &tn_optdescs[i];
		double v = get_num(o, d);
		char range[80];
		if (!in_range(d, v))
			return tk_seterr(TK_EINVAL, "%s%s %.15g is out of range (%s)",
			                 d->flag ? "--" : "", d->flag ? d->flag : d->key, v,
			                 range_text(d, range, sizeof range));
	}
	return TK_OK;
}

char *tn_opts_format(const tn_opts *o, int ntask, char *const *task, const double *weight)
{
	tk_sb sb;
	tk_sb_init(&sb);
	for (int i = 0; i < tn_noptdesc; i++) {
		const tn_optdesc *d = &tn_optdescs[i];
		const char *p = (const char *)o + d->off;
		switch (d->type) {
		case TN_STR: tk_sb_printf(&sb, "%s=%s\n", d->key, p); break;
		case TN_ENUM:
			tk_sb_printf(&sb, "%s=%s\n", d->key, enums[enum_of(d)].name(*(const int *)p));
			break;
		case TN_INT: tk_sb_printf(&sb, "%s=%d\n", d->key, *(const int *)p); break;
		case TN_I64: tk_sb_printf(&sb, "%s=%lld\n", d->key, (long long)*(const int64_t *)p); break;
		case TN_U64:
			tk_sb_printf(&sb, "%s=%llu\n", d->key, (unsigned long long)*(const uint64_t *)p);
			break;
		case TN_DBL: tk_sb_printf(&sb, "%s=%.17g\n", d->key, *(const double *)p); break;
		}
	}
	for (int i = 0; i < ntask; i++)
		tk_sb_printf(&sb, "task=%.17g %s\n", weight ? weight[i] : 1.0, task[i]);
	return tk_sb_take(&sb);
}

int tn_opts_parse(const char *text, tn_opts *o, int *ntask, char ***task, double **weight)
{
	char *copy = strdup(text), *save = NULL;
	int rc = TK_OK, n = 0;
	char **tv = NULL;
	double *wv = NULL;
	if (!copy)
		return tk_seterr(TK_ENOMEM, "out of memory");
	for (char *line = strtok_r(copy, "\n", &save); line && !rc; line = strtok_r(NULL, "\n", &save)) {
		char *eq = strchr(line, '=');
		if (!eq)
			continue;
		*eq = 0;
		const char *k = line, *v = eq + 1;
		if (strcmp(k, "task")) {
			const tn_optdesc *d = tn_optdesc_find(k);
			char why[256];
			if (d && d->type == TN_STR && !*v) {
				*((char *)o + d->off) = 0; /* unset: no form to check */
				continue;
			}
			if (d && (rc = tn_opt_set(o, d, v))) {
				snprintf(why, sizeof why, "%s", tk_errmsg());
				rc = tk_seterr(TK_EINVAL, "bad run parameter %s: %s", k, why);
			}
			continue; /* keys of other versions are left alone */
		}
		char *sp = strchr(v, ' ');
		char **t2 = realloc(tv, sizeof *tv * (size_t)(n + 1));
		double *w2 = realloc(wv, sizeof *wv * (size_t)(n + 1));
		if (t2)
			tv = t2;
		if (w2)
			wv = w2;
		if (!t2 || !w2 || !sp) {
			rc = sp ? tk_seterr(TK_ENOMEM, "out of memory")
			        : tk_seterr(TK_EINVAL, "bad task line in run parameters");
			break;
		}
		*sp = 0;
		if (tk_parse_f64(v, &wv[n])) {
			rc = tk_seterr(TK_EINVAL, "bad task weight in run parameters: %s", v);
			break;
		}
		if (!(tv[n] = strdup(sp + 1))) {
			rc = tk_seterr(TK_ENOMEM, "out of memory");
			break;
		}
		n++;
	}
	free(copy);
	if (rc) {
		for (int i = 0; i < n; i++)
			free(tv[i]);
		free(tv);
		free(wv);
		return rc;
	}
	*ntask = n;
	*task = tv;
	*weight = wv;
	return TK_OK;
}
