/*
 * measurer: where the tuning loop's measurements come from: the real
 * pipeline (lib/measure: compile, run, check on this CPU) or a replayed
 * dataset, another store whose records are looked up by task and
 * configuration text on one hardware. A replayed configuration that the
 * dataset never measured is unmeasurable (invalid config). A replayed
 * measurement costs, in simulated seconds, what it cost when it was made:
 * its compile time plus its timed calls (number x repeats x mean), so
 * curves against time mean the same for real and replayed runs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "schedule/sched.h"
#include "store/store_tuning.h"
#include "tune_int.h"

typedef struct lookup_ctx {
	tk_store *data;
	ms_result *r;
	double cost;
	int rc;
} lookup_ctx;

static int got_record(void *p, const store_rec *rec)
{
	lookup_ctx *L = p;
	ms_result *r = L->r;
	r->error = rec->error;
	r->compile_s = rec->compile_s;
	L->cost = rec->compile_s > 0 ? rec->compile_s : 0;
	if (rec->error != MEAS_OK) {
		snprintf(r->msg, sizeof r->msg, "%s", rec->message ? rec->message : meas_error_name(rec->error));
		return 0;
	}
	r->run.error = MEAS_OK;
	r->run.median = rec->median;
	r->run.mean = rec->mean > 0 ? rec->mean : rec->median;
	r->run.std = rec->std > 0 ? rec->std : 0;
	r->run.number = rec->number > 0 ? rec->number : 1;
	r->run.bounded = rec->bounded;
	double *times = NULL;
	int nt = 0;
	if (rec->nrepeat > 0 && !(L->rc = store_meas_times(L->data, rec->id, &times, &nt))) {
		if (nt > RUN_MAXREPEAT)
			nt = RUN_MAXREPEAT;
		memcpy(r->run.times, times, sizeof(double) * (size_t)nt);
		r->run.nrepeat = nt;
		free(times);
	} else if (!L->rc) {
		r->run.times[0] = rec->median;
		r->run.nrepeat = 1;
	}
	L->cost += r->run.mean * r->run.number * (r->run.nrepeat ? r->run.nrepeat : 1);
	return 0;
}

static int replay(tn_ctx *C, tn_task *t, const sp_config *c, int n, ms_result *out, double *cost)
{
	int rc = TK_OK;
	*cost = 0;
	for (int i = 0; i < n && !rc; i++) {
		ms_result *r = &out[i];
		tk_sb sb;
		memset(r, 0, sizeof *r);
		r->idx = (int64_t)sp_index(t->space, &c[i]);
		tk_sb_init(&sb);
		sp_format(&sb, t->space, &c[i]);
		r->config = tk_sb_take(&sb);
		r->sched = NULL;
		if (t->space->prog) {
			sc_sched s;
			if (!sc_from_config(t->space, &c[i], &s) && !sc_print(&sb, t->space->prog, &s))
				r->sched = tk_sb_take(&sb);
			tk_sb_free(&sb);
		}
		if (!r->sched)
			r->sched = strdup("");
		if (!r->config || !r->sched) {
			rc = tk_seterr(TK_ENOMEM, "out of memory");
			break;
		}
		lookup_ctx L = { C->data, r, 0, TK_OK };
		rc = store_lookup(C->data, t->key, r->config, t->dhw, got_record, &L);
		if (rc == TK_ENOTFOUND) {
			rc = TK_OK;
			r->error = MEAS_INVALID_CONFIG;
			snprintf(r->msg, sizeof r->msg, "absent from the replay dataset");
		} else if (!rc) {
			rc = L.rc;
		}
		*cost += L.cost;
	}
	if (rc)
		ms_results_free(out, n);
	return rc;
}

int measurer_run(tn_ctx *C, tn_task *t, const sp_config *c, int n, ms_result *out,
                 double *cost, int bound)
{
	if (C->data)
		return replay(C, t, c, n, out, cost);
	*cost = 0;
	/* with model A on the CPU, the measured kernels' compiler facts are
	 * kept, so their hidden features (A trains on them) compile nothing */
	ms_opts o = C->o->ms;
	o.reports = C->hidden && C->o->ml2_stages != TN_ML2_V;
	/* bounded timing: the best so far is the one of the earlier batches */
	o.run.bound_s = bound && C->o->bound > 0 && t->best_lat > 0 ? C->o->bound * t->best_lat : 0;
	return ms_measure(t->mt, C->target, &o, c, n, out);
}
