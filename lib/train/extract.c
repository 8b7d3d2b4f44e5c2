/*
 * extract: feature vectors of stored configurations, a batch per
 * transaction (see extract.h). Tasks are parsed once and kept in a small
 * table looked up by key, the last one first: configurations come in id
 * order, so a task's come mostly together.
 */
#include "extract.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "features/feature.h"
#include "measure/hidden.h"
#include "space/space.h"
#include "store/store_features.h"
#include "task/te.h"
#include "util/util.h"

/* A task seen in the store, parsed once. */
typedef struct xt_task {
	char *key;
	te_prog *prog;
	sp_space *sp;
	ms_task *mt;         /* opened for the target (vta-sim, or hidden features) */
	int len;             /* feature length for this task */
	char *why;           /* set: the task's configurations are skipped for this reason */
	int64_t nskip;
} xt_task;

struct tr_extract {
	tk_store *st;
	int kind, version, batch;
	const char *kname;
	const tk_target *tg; /* NULL: template spaces of this CPU */
	const ms_opts *mo;
	uint64_t seed;
	int on_target;       /* tasks are opened for tg (ms_task_open_target) */
	int ntask, last;
	xt_task *task;
	float *v;            /* (vcap) one feature vector */
	int vcap;
	char *cfg_why;       /* first configuration that did not parse */
	tr_extract_stats s;
};

int tr_extract_new(tk_store *st, int kind, int batch, const tk_target *tg, const ms_opts *mo,
                   uint64_t seed, tr_extract **out)
{
	*out = NULL;
	if (!feat_kind_name(kind) || batch < 1 || (kind == FEAT_HIDDEN && (!tg || !mo)))
		return tk_seterr(TK_EINVAL, "bad feature kind or batch");
	tr_extract *x = calloc(1, sizeof *x);
	if (!x)
		return tk_seterr(TK_ENOMEM, "out of memory");
	x->st = st;
	x->kind = kind;
	x->kname = feat_kind_name(kind);
	x->version = feat_version(kind);
	x->batch = batch;
	x->tg = tg;
	x->mo = mo;
	x->seed = seed;
	x->on_target = kind == FEAT_HIDDEN || (tg && tg->kind == TK_TARGET_VTA_SIM);
	*out = x;
	return TK_OK;
}

void tr_extract_free(tr_extract *x)
{
	if (!x)
		return;
	for (int i = 0; i < x->ntask; i++) {
		free(x->task[i].key);
		free(x->task[i].why);
		sp_space_free(x->task[i].sp);
		te_prog_free(x->task[i].prog);
		ms_task_free(x->task[i].mt);
	}
	free(x->task);
	free(x->v);
	free(x->cfg_why);
	free(x);
}

static char *join(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	char *s = malloc(la + lb + 1);
	if (s) {
		memcpy(s, a, la);
		memcpy(s + la, b, lb + 1);
	}
	return s;
}

/* Parse a task once: its space, or why its configurations are skipped. */
static int task_open(tr_extract *x, xt_task *t, const char *space)
{
	int rc;
	if (space && x->kind != FEAT_KNOB) {
		t->why = join(x->kname, " features need a template task; imported tasks get knob"
		                        " features only");
		return t->why ? TK_OK : TK_ENOMEM;
	}
	if (space)
		rc = sp_space_from_json(space, &t->sp);
	else if (x->on_target)
		rc = ms_task_open_target(t->key, x->tg, x->seed, &t->mt);
	else if (!(rc = te_task_parse(t->key, &t->prog)))
		rc = sp_space_create(t->prog, &t->sp);
	if (!rc && t->mt && x->kind == FEAT_HIDDEN)
		rc = ms_hidden_length(t->mt, &t->len);
	else if (!rc)
		rc = feat_length(x->kind, t->mt ? t->mt->space : t->sp, &t->len);
	if (rc == TK_ENOMEM)
		return rc;
	if (rc) {
		t->why = join("", tk_errmsg());
		return t->why ? TK_OK : TK_ENOMEM;
	}
	if (t->len > x->vcap) {
		float *v = realloc(x->v, sizeof *v * (size_t)t->len);
		if (!v)
			return TK_ENOMEM;
		x->v = v;
		x->vcap = t->len;
	}
	return TK_OK;
}

static int task_get(tr_extract *x, const char *key, const char *space, xt_task **out)
{
	if (x->last < x->ntask && !strcmp(x->task[x->last].key, key)) {
		*out = &x->task[x->last];
		return TK_OK;
	}
	for (int i = 0; i < x->ntask; i++)
		if (!strcmp(x->task[i].key, key)) {
			x->last = i;
			*out = &x->task[i];
			return TK_OK;
		}
	xt_task *t = realloc(x->task, sizeof *t * (size_t)(x->ntask + 1));
	if (!t)
		return tk_seterr(TK_ENOMEM, "out of memory");
	x->task = t;
	t = &x->task[x->ntask];
	memset(t, 0, sizeof *t);
	if (!(t->key = strdup(key)))
		return tk_seterr(TK_ENOMEM, "out of memory");
	x->last = x->ntask++;
	*out = t;
	int rc = task_open(x, t, space);
	return rc == TK_ENOMEM ? tk_seterr(rc, "out of memory") : rc;
}

/* Extract and store the features of one configuration (or skip it). */
static int process(tr_extract *x, const store_fcfg *r)
{
	xt_task *t = NULL;
	sp_config c;
	int rc, valid;
	if ((rc = task_get(x, r->task, r->space, &t)))
		return rc;
	if (t->why) {
		t->nskip++;
		x->s.nskip_task++;
		return TK_OK;
	}
	const sp_space *sp = t->mt ? t->mt->space : t->sp;
	if (sp_parse(sp, r->config, &c)) {
		if (!x->s.nskip_cfg++ && !(x->cfg_why = join("", tk_errmsg())))
			return tk_seterr(TK_ENOMEM, "out of memory");
		return TK_OK;
	}
	if (x->kind == FEAT_HIDDEN)
		rc = ms_hidden(t->mt, x->tg, x->mo, &c, 1, x->v, &valid);
	else
		rc = feat_extract(x->kind, sp, &c, x->v, &valid);
	if (rc)
		return rc;
	if ((rc = store_feature_put(x->st, r->config_id, x->kname, x->version, x->v, t->len)))
		return rc;
	x->s.nnew++;
	x->s.ninvalid += !valid;
	return TK_OK;
}

/* Roll back after rc, keeping rc's message. */
static int rollback(tr_extract *x, int rc)
{
	char why[512];
	snprintf(why, sizeof why, "%s", tk_errmsg());
	store_rollback(x->st);
	return tk_seterr(rc, "%s", why);
}

int tr_extract_run(tr_extract *x, int64_t hardware, const int64_t *ids, int nid,
                   volatile sig_atomic_t *stop, tr_extract_progress *progress, void *pctx)
{
	store_ftodo *it;
	const store_fcfg *r = NULL;
	int64_t scope, missing, done = 0;
	int rc = store_feature_todo_open(x->st, x->kname, x->version, hardware, ids, nid, &it);
	if (rc)
		return rc;
	store_feature_todo_counts(it, &scope, &missing);
	x->s.scope += scope;
	do {
		double t0 = tk_now();
		int64_t nb = 0;
		if ((rc = store_begin(x->st)))
			break;
		while (nb < x->batch && !(rc = store_feature_todo_next(it, &r)) && r) {
			if ((rc = process(x, r)))
				break;
			nb++;
		}
		if (rc || (rc = store_commit(x->st))) {
			rc = rollback(x, rc);
			break;
		}
		x->s.busy += tk_now() - t0;
		done += nb;
		if (progress)
			progress(pctx, done, missing);
		if (stop && *stop) {
			rc = tk_seterr(TK_EINTR, "interrupted; the features of %lld configurations are"
			               " stored", (long long)x->s.nnew);
			break;
		}
	} while (r);
	store_feature_todo_free(it);
	return rc;
}

void tr_extract_stats_get(const tr_extract *x, tr_extract_stats *s)
{
	*s = x->s;
}

int tr_extract_skips(const tr_extract *x, int i, const char **task, int64_t *n, const char **why)
{
	for (int j = 0; j < x->ntask; j++) {
		if (!x->task[j].nskip || i--)
			continue;
		*task = x->task[j].key;
		*n = x->task[j].nskip;
		*why = x->task[j].why;
		return 1;
	}
	return 0;
}

const char *tr_extract_cfg_why(const tr_extract *x)
{
	return x->cfg_why;
}
