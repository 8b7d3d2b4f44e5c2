/*
 * record: sessions that store measurement batches, and the record-stream
 * reader (see record.h).
 */
#include "record.h"

#include <stdlib.h>
#include <string.h>

void rec_target_hw(const tk_target *t, store_hw *hw)
{
	store_hw h = {
		.key = t->key, .kind = "cpu", .cpu = t->cpu, .isa = t->isa,
		.cc = t->cc_version, .spec = t->spec, .threads = t->threads,
	};
	if (t->flags & TK_TARGET_SIMULATED) {
		/* a simulator: no compiler, no threads of this machine */
		h.kind = "simulated";
		h.cc = NULL;
		h.threads = 0;
	}
	*hw = h;
}

typedef struct resume_ctx {
	int64_t hw_id;
	int n;
} resume_ctx;

static int count_rec(void *p, const store_rec *r)
{
	resume_ctx *c = p;
	c->hw_id = r->hardware_id;
	if (r->trial + 1 > c->n)
		c->n = r->trial + 1;
	return 0;
}

int rec_resume(rec_session *s, tk_store *st, int64_t run_id)
{
	resume_ctx c = { 0, 0 };
	int rc;
	memset(s, 0, sizeof *s);
	s->store = st;
	s->run_id = run_id;
	if ((rc = store_run_own(st, run_id)) || (rc = store_run_records(st, run_id, count_rec, &c)))
		return rc;
	s->hw_id = c.hw_id;
	s->trial = c.n;
	/* a run killed before its first batch has no record to say it */
	if (!s->hw_id && (rc = store_run_hardware(st, run_id, &s->hw_id)))
		return rc;
	if (!s->hw_id)
		return tk_seterr(TK_EINVAL, "run %lld has no hardware to resume on", (long long)run_id);
	return TK_OK;
}

int rec_begin(rec_session *s, tk_store *st, const store_hw *hw, const char *argv,
              const char *method, int64_t seed, const char *replay)
{
	int rc;
	memset(s, 0, sizeof *s);
	s->store = st;
	if ((rc = store_hardware_get(st, hw, &s->hw_id)))
		return rc;
	store_run r = { .argv = argv, .method = method, .replay = replay, .seed = seed,
	                .hardware_id = s->hw_id };
	if ((rc = store_run_begin(st, &r, &s->run_id)))
		return rc;
	return store_run_own(st, s->run_id);
}

int rec_task(rec_session *s, const te_prog *p, int64_t *task_id)
{
	return store_task_get(s->store, p->key, p->op, p->flops, task_id);
}

int rec_batch(rec_session *s, int64_t task_id, const ms_result *r, int n, int64_t *ids)
{
	int rc = store_begin(s->store);
	if (rc)
		return rc;
	for (int i = 0; i < n; i++) {
		int64_t cid, mid;
		const run_result *rr = &r[i].run;
		if ((rc = store_config_get(s->store, task_id, r[i].idx, r[i].config, r[i].sched, &cid)))
			goto fail;
		store_meas m = {
			.config_id = cid, .hardware_id = s->hw_id, .run_id = s->run_id,
			.trial = s->trial + i, .valid = r[i].error == MEAS_OK, .error = r[i].error,
			.message = r[i].error ? r[i].msg : NULL, .compile_s = r[i].compile_s,
			.at = r[i].at, .load = r[i].load,
		};
		if (m.valid) {
			m.mean = rr->mean;
			m.std = rr->std;
			m.median = rr->median;
			m.number = rr->number;
			m.nrepeat = rr->nrepeat;
			m.times = rr->times;
			m.bounded = rr->bounded;
		}
		if ((rc = store_meas_add(s->store, &m, &mid)))
			goto fail;
		if (ids)
			ids[i] = mid;
	}
	if ((rc = store_commit(s->store)))
		goto fail;
	s->trial += n;
	return TK_OK;
fail:;
	char why[512];
	snprintf(why, sizeof why, "%s", tk_errmsg());
	store_rollback(s->store);
	return tk_seterr(rc, "%s", why);
}

int rec_end(rec_session *s)
{
	return store_run_end(s->store, s->run_id);
}

/* ---- streams ----------------------------------------------------------------- */

void rec_stream_init(rec_stream *r, FILE *f, const char *name)
{
	memset(r, 0, sizeof *r);
	r->f = f;
	r->name = name;
	r->c_id = r->c_task = r->c_config = -1;
}

void rec_stream_free(rec_stream *r)
{
	free(r->line);
	r->line = NULL;
}

static int split(rec_stream *r)
{
	r->nfield = 0;
	char *p = r->line;
	for (;;) {
		if (r->nfield == REC_MAXCOL)
			return tk_seterr(TK_EINVAL, "%s:%d: more than %d columns", r->name, r->lineno,
			                 REC_MAXCOL);
		r->field[r->nfield++] = p;
		char *tab = strchr(p, '\t');
		if (!tab)
			return TK_OK;
		*tab = 0;
		p = tab + 1;
	}
}

static int find_col(const rec_stream *r, const char *name)
{
	for (int i = 0; i < r->nfield; i++)
		if (!strcmp(r->field[i], name))
			return i;
	return -1;
}

int rec_stream_next(rec_stream *r, const char **task, const char **config, int64_t *id)
{
	int rc;
	for (;;) {
		ssize_t len = getline(&r->line, &r->cap, r->f);
		if (len < 0)
			return 0;
		r->lineno++;
		while (len && (r->line[len - 1] == '\n' || r->line[len - 1] == '\r'))
			r->line[--len] = 0;
		if (!len || r->line[0] == '#')
			continue;
		if ((rc = split(r)))
			return -rc;
		if (!r->started) {
			r->started = 1;
			int ct = find_col(r, "task"), cc = find_col(r, "config"), ci = find_col(r, "id");
			if (ct >= 0 || cc >= 0 || ci >= 0) {
				r->header = 1;
				r->ncol = r->nfield;
				r->c_task = ct;
				r->c_config = cc;
				r->c_id = ci;
				continue;
			}
			r->c_task = 0;
			r->c_config = 1;
		}
		int need = r->c_task;
		if (r->c_config > need)
			need = r->c_config;
		if (r->c_id > need)
			need = r->c_id;
		if (r->header && r->nfield < r->ncol) {
			tk_seterr(TK_EINVAL, "%s:%d: %d columns, fewer than the header's %d", r->name,
			          r->lineno, r->nfield, r->ncol);
			return -TK_EINVAL;
		}
		if (r->nfield <= need) {
			tk_seterr(TK_EINVAL, "%s:%d: expected %s", r->name, r->lineno,
			          r->header ? "as many columns as the header" : "TASK<TAB>CONFIG");
			return -TK_EINVAL;
		}
		*task = r->c_task >= 0 ? r->field[r->c_task] : NULL;
		*config = r->c_config >= 0 ? r->field[r->c_config] : NULL;
		*id = -1;
		if (r->c_id >= 0 && (tk_parse_i64(r->field[r->c_id], id) || *id < 1)) {
			tk_seterr(TK_EINVAL, "%s:%d: id '%s' is not a record id", r->name, r->lineno,
			          r->field[r->c_id]);
			return -TK_EINVAL;
		}
		return 1;
	}
}
