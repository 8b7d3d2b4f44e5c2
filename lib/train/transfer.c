/*
 * transfer: a trained cost model adapted to another hardware target (see
 * train.h): the table of ways (tr_methods[]), the target's records from
 * the store with features of the model's kind, a random share of them to
 * adapt on and the rest to measure on, and the adaptation itself, which
 * the model's row of the cost-model table does (cm_adapt). The source
 * model is measured on the same held-out records before it adapts, so the
 * gain of a method is one subtraction.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "features/feature.h"
#include "store/store_models.h"
#include "train.h"

const tr_method tr_methods[] = {
	{ "moses", "Moses: train the parameters most salient on the target (a lottery "
	  "ticket, re-drawn every epoch) and decay the others toward zero", CM_ADAPT_TICKET, 0 },
	{ "finetune", "train every parameter on the target (TenSet's transfer)",
	  CM_ADAPT_FINETUNE, 0 },
	{ "xgb-warm", "more boosting rounds on the target on top of the source's trees",
	  CM_ADAPT_BOOST, 0 },
	{ "none", "the source model as it is", 0, 0 },
	{ "scratch", "a new model of the source's kind fit on the target's records alone", 0, 1 },
};
const int tr_nmethods = ArraySize(tr_methods);

int tr_method_lookup(const char *name, const tr_method **out)
{
	char names[128] = "";
	*out = NULL;
	for (int i = 0; i < tr_nmethods; i++) {
		if (name && !strcmp(name, tr_methods[i].name)) {
			*out = &tr_methods[i];
			return TK_OK;
		}
		size_t len = strlen(names);
		snprintf(names + len, sizeof names - len, "%s%s", i ? ", " : "", tr_methods[i].name);
	}
	return tk_seterr(TK_EINVAL, "unknown transfer method '%s' (%s)", name ? name : "", names);
}

void tr_transfer_free(tr_transfer *t)
{
	tr_fit_free(&t->f);
	tr_set_free(&t->ts);
	memset(t, 0, sizeof *t);
}

/* The kinds of the model table that adapt by way, as "a, b" into buf. */
static void adapting_kinds(char *buf, size_t size, int way)
{
	size_t len = 0;
	buf[0] = 0;
	for (int i = 0; i < cm_nkinds; i++)
		if (cm_kinds[i]->adapts & (unsigned)way) {
			int w = snprintf(buf + len, size - len, "%s%s", len ? ", " : "", cm_kinds[i]->name);
			if (w < 0 || (size_t)w >= size - len)
				break;
			len += (size_t)w;
		}
}

int tr_model_features(const char *path, const mf_meta *m, int *feat, int *d)
{
	const char *name = mf_get(m, "feature"), *ver = mf_get(m, "feature_version");
	const char *len = mf_get(m, "feature_length");
	const char *label = mf_get(m, "label");
	int64_t v, l;
	if (label && !strcmp(label, "validity"))
		return tk_seterr(TK_EINVAL, "%s is a validity model (train --objective validity),"
		                 " not a performance model", path);
	if (!name || (*feat = feat_kind_parse(name)) < 0 || !ver || tk_parse_i64(ver, &v) || !len ||
	    tk_parse_i64(len, &l) || l < 1 || l > 1 << 20)
		return tk_seterr(TK_EINVAL, "%s: no feature kind, version and length this tunekit"
		                 " knows", path);
	if (v != feat_version(*feat))
		return tk_seterr(TK_EINVAL, "%s: trained on %s features version %lld; this tunekit"
		                 " extracts version %d (train it again)", path, name, (long long)v,
		                 feat_version(*feat));
	*d = (int)l;
	return TK_OK;
}

typedef struct hw_find {
	const char *want;
	int64_t id;
	int n;
	char ids[96];            /* "1, 2, 3" of the first few */
} hw_find;

static int hw_match(void *ctx, const store_hw_count *h)
{
	hw_find *f = ctx;
	char id[24];
	size_t len = strlen(f->ids);
	snprintf(id, sizeof id, "%lld", (long long)h->id);
	if (len + strlen(id) + 8 < sizeof f->ids)
		snprintf(f->ids + len, sizeof f->ids - len, "%s%s", f->n ? ", " : "", id);
	else if (!strstr(f->ids, "..."))
		snprintf(f->ids + len, sizeof f->ids - len, ", ...");
	f->n++;
	if (!strcmp(f->want, id) || (h->key && !strcmp(f->want, h->key)))
		f->id = h->id;
	return 0;
}

/* The id of the hardware want names (an id or a key), which must have
 * records. */
static int target_hw(tk_store *st, const char *want, int64_t *id)
{
	hw_find f = { want, 0, 0, "" };
	int rc = store_hardware_counts(st, NULL, 0, hw_match, &f);
	if (rc)
		return rc;
	*id = f.id;
	if (!f.id && f.n)
		return tk_seterr(TK_EINVAL, "no hardware '%s' with records in the store (hardware"
		                 " with records: %s)", want, f.ids);
	if (!f.id)
		return tk_seterr(TK_EINVAL, "no hardware '%s' with records in the store: it has no"
		                 " records", want);
	return TK_OK;
}

/* sel[i] = 0 for the share of rows adapted on (drawn by a seeded shuffle),
 * 1 for the others; returns how many are adapted on. */
static int draw_rows(const tr_set *ts, const tr_transfer_opts *o, char *sel)
{
	int n = ts->n, k = (int)floor(o->fraction * n + 0.5), *perm;
	k = k < 1 ? 1 : k > n ? n : k;
	if (o->budget > 0 && k > o->budget)
		k = (int)o->budget;
	if (!(perm = malloc(sizeof *perm * (size_t)n)))
		return -1;
	tk_rng r;
	tk_rng_seed(&r, o->seed, 0x7472616e73ULL /* "trans" */);
	for (int i = 0; i < n; i++)
		perm[i] = i;
	for (int i = n - 1; i > 0; i--) {
		int j = (int)tk_rng_below(&r, (uint32_t)i + 1), x = perm[i];
		perm[i] = perm[j];
		perm[j] = x;
	}
	memset(sel, 1, (size_t)n);
	for (int i = 0; i < k; i++)
		sel[perm[i]] = 0;
	free(perm);
	return k;
}

/* Labels of the rows adapted on, normalised per task over those rows
 * alone (the held-out rows' best is not theirs to know). */
static void adapted_labels(const tr_set *ts, const char *sel, float *y)
{
	for (int t = 0; t < ts->ntask; t++) {
		const tr_task *tk = &ts->tasks[t];
		float best = 0;
		for (int i = tk->first; i < tk->first + tk->n; i++)
			if (!sel[i] && ts->thr[i] > best)
				best = ts->thr[i];
		for (int i = tk->first; i < tk->first + tk->n; i++)
			y[i] = best > 0 ? ts->thr[i] / best : 0;
	}
}

int tr_transfer_run(tk_store *st, const char *model_path, const tr_transfer_opts *o,
                    tr_transfer *t)
{
	cm_model *src = NULL;
	float *yall = NULL, *ytr = NULL;
	char *sel = NULL;
	int rc, d = 0, seq;
	int64_t hw;
	memset(t, 0, sizeof *t);
	if ((rc = cm_read(model_path, &t->src_meta, &src)))
		return rc == TK_ECORRUPT ? TK_EINVAL : rc; /* not a model file: bad input */
	const cm_kind *k = cm_kind_of(src);
	if (o->method->adapt && !(k->adapts & (unsigned)o->method->adapt)) {
		char names[128];
		adapting_kinds(names, sizeof names, o->method->adapt);
		rc = tk_seterr(TK_EINVAL, "%s is a model of kind %s; %s transfers models of kind %s",
		               model_path, k->name, o->method->name, names[0] ? names : "(none)");
		goto done;
	}
	if ((rc = tr_model_features(model_path, &t->src_meta, &t->feat, &d)) ||
	    (rc = target_hw(st, o->hardware, &hw)))
		goto done;
	tr_load_opts lo = { t->feat, hw, o->ids, o->nid, NULL, 0 };
	if ((rc = tr_load(st, &lo, &t->ts, &t->src))) {
		if (rc == TK_EINVAL && o->ids && t->ts.n == 0 && t->ts.nmissing == 0)
			rc = tk_seterr(TK_EINVAL, "none of the %d records given is of hardware %lld",
			               o->nid, (long long)hw);
		goto done;
	}
	/* Rows shorter than the model's are padded with zeros, as train pads
	 * the rows of smaller tasks; the longest must be the model's length
	 * (sequences: at most it). */
	seq = feat_seq_width(t->feat) > 0;
	int longest = 0, at = 0;
	for (int i = 0; i < t->ts.n; i++)
		if (t->ts.nx[i] > longest)
			longest = t->ts.nx[i], at = i;
	if (longest > d || (!seq && longest < d)) {
		rc = tk_seterr(TK_EINVAL, "%s takes %d %s features; %s on hardware %lld has %d"
		               " (another operator or search space)", model_path, d,
		               feat_kind_name(t->feat), t->ts.tasks[t->ts.task[at]].key, (long long)hw,
		               longest);
		goto done;
	}
	size_t n = (size_t)(t->ts.n > 0 ? t->ts.n : 1);
	yall = malloc(sizeof *yall * n);
	ytr = malloc(sizeof *ytr * n);
	sel = malloc(n);
	if (!yall || !ytr || !sel) {
		rc = tk_seterr(TK_ENOMEM, "out of memory");
		goto done;
	}
	int nadapt = draw_rows(&t->ts, o, sel);
	if (nadapt < 0) {
		rc = tk_seterr(TK_ENOMEM, "out of memory");
		goto done;
	}
	if ((o->method->adapt || o->method->scratch) && nadapt < 2) {
		rc = tk_seterr(TK_EINVAL, "%d of the %d records of hardware %lld to adapt on; %s needs"
		               " at least 2 (raise --target-fraction or --budget)", nadapt, t->ts.n,
		               (long long)hw, o->method->name);
		goto done;
	}
	tr_labels(&t->ts, yall);
	adapted_labels(&t->ts, sel, ytr);
	tr_fit *f = &t->f;
	f->d = d;
	if ((rc = tr_part_build(&t->ts, ytr, sel, 0, d, &f->train)) ||
	    (rc = tr_part_build(&t->ts, yall, sel, 1, d, &f->hold)))
		goto done;
	/* the source as it was, on the rows the result is measured on */
	if ((rc = tr_eval(src, f->hold.n ? &f->hold : &f->train, &t->msource)))
		goto done;

	cm_params p;
	cm_params_default(&p);
	const char *obj = mf_get(&t->src_meta, "objective");
	p.rank = !obj || !strncmp(obj, "rank", 4) || !strcmp(obj, "lambdarank");
	p.seed = o->seed;
	p.rounds = o->rounds;
	p.seq_e = feat_seq_width(t->feat);
	p.tree_method = mf_get(&t->src_meta, "tree_method");
	p.progress = o->progress;
	p.progress_ctx = o->progress_ctx;
	cm_data dtr = tr_part_data(&f->train);
	cm_adapt_opts a = o->adapt;
	double t0 = tk_now();
	if (o->method->scratch) {
		rc = cm_fit(k, &p, &dtr, NULL, &f->m);
		t->info.trained = 1;
	} else if (o->method->adapt) {
		a.method = o->method->adapt;
		if (!(rc = cm_adapt(src, &p, &a, &dtr, &t->info))) {
			f->m = src;
			src = NULL;
		}
	} else {
		f->m = src;
		src = NULL;
	}
	f->seconds = tk_now() - t0;
	if (!rc && !(rc = tr_eval(f->m, &f->train, &f->mtrain)))
		rc = tr_eval(f->m, &f->hold, &f->mhold);
done:
	cm_free(src);
	free(yall);
	free(ytr);
	free(sel);
	return rc;
}

int tr_transfer_save(tk_store *st, const char *path, const tr_transfer *t,
                     const tr_transfer_opts *o, int64_t *model_id)
{
	mf_meta extra;
	char v[32];
	const char *sh = mf_get(&t->src_meta, "hardware");
	int rc;
	memset(&extra, 0, sizeof extra);
	rc = mf_set(&extra, "transfer_method", o->method->name);
	if (!rc && sh)
		rc = mf_set(&extra, "source_hardware", sh);
	if (!rc && o->method->adapt == CM_ADAPT_TICKET) {
		snprintf(v, sizeof v, "%.4f", t->info.trained);
		rc = mf_set(&extra, "transfer_trained", v);
	}
	cm_params p;
	cm_params_default(&p);
	p.seed = o->seed;
	p.tree_method = mf_get(&t->src_meta, "tree_method");
	return rc ? rc : tr_save_meta(st, path, &t->f, &t->src, t->feat, &p, &extra, model_id);
}
