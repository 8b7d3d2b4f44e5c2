/*
 * curve: tuning curves of runs (see report.h for the definitions). A run is
 * read from the store once into rp_run: its measurements reduced to steps
 * (which task, when, what latency) and one best-so-far curve per task.
 * Aggregate curves (a network, or the tasks every compared run covered) are
 * computed from the steps, and comparisons line up the curves of several
 * runs task by task. The store is read through store.h and store_report.h
 * (a run's start, a task's best latency on a hardware).
 */
#include "report.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/store_report.h"
#include "task/te.h"

#define RP_FRACTION 0.95   /* "95% of the best known throughput" */
#define RP_ROUNDING 1e-9   /* relative slack when comparing latencies */

const char *rp_unit(const rp_curve *c)
{
	return c->flops > 0 ? "GFLOPS" : "1/s";
}

double rp_throughput(double flops, double lat)
{
	assert(lat > 0);
	return flops > 0 ? flops / lat * 1e-9 : 1 / lat;
}

/* ---- building a run ------------------------------------------------------- */

/* Append a point to c, growing its array. TK_ENOMEM or TK_OK. */
static int curve_push(rp_curve *c, int *pCap, const rp_point *p)
{
	if (c->n == *pCap) {
		int cap = *pCap ? 2 * *pCap : 16;
		rp_point *a = realloc(c->pt, sizeof *a * (size_t)cap);
		if (!a)
			return tk_seterr(TK_ENOMEM, "out of memory");
		c->pt = a;
		*pCap = cap;
	}
	c->pt[c->n++] = *p;
	return TK_OK;
}

/* Trials and seconds to 95% of c->best_known, from c's points. */
static void curve_to95(rp_curve *c)
{
	c->trials_to_95 = -1;
	c->seconds_to_95 = -1;
	if (c->best_known <= 0)
		return;
	for (int i = 0; i < c->n; i++) {
		double lat = c->pt[i].latency;
		if (lat > 0 && RP_FRACTION * lat <= c->best_known * (1 + RP_ROUNDING)) {
			c->trials_to_95 = c->pt[i].trial;
			c->seconds_to_95 = c->pt[i].seconds;
			return;
		}
	}
}

/* Final latency and throughput from the last point. */
static void curve_final(rp_curve *c)
{
	c->final_latency = c->n ? c->pt[c->n - 1].latency : -1;
	c->final_thr = c->final_latency > 0 ? rp_throughput(c->flops, c->final_latency) : 0;
}

void rp_curve_set_best(rp_curve *c, double best)
{
	c->best_known = c->final_latency;
	if (best > 0 && (c->best_known <= 0 || best < c->best_known))
		c->best_known = best;
	curve_to95(c);
}

void rp_curve_clear(rp_curve *c)
{
	if (!c)
		return;
	free(c->task);
	free(c->pt);
	memset(c, 0, sizeof *c);
}

void rp_run_free(rp_run *r)
{
	if (!r)
		return;
	for (int i = 0; i < r->ncurve; i++)
		rp_curve_clear(&r->curve[i]);
	free(r->curve);
	free(r->step);
	free(r);
}

/* A run under construction: the run plus the capacities of its arrays. */
typedef struct run_builder {
	rp_run *r;
	int capStep, capCurve;
	int *aCapPt;   /* [capCurve] capacity of each curve's points */
} run_builder;

static int builder_init(run_builder *b, int64_t id, double started)
{
	memset(b, 0, sizeof *b);
	if (!(b->r = calloc(1, sizeof *b->r)))
		return tk_seterr(TK_ENOMEM, "out of memory");
	b->r->id = id;
	b->r->started = started;
	return TK_OK;
}

/* The curve of rec's task, created at the end if new; -1 on out of memory. */
static int builder_curve(run_builder *b, const store_rec *rec)
{
	rp_run *r = b->r;
	for (int i = r->ncurve - 1; i >= 0; i--)
		if (r->curve[i].task_id == rec->task_id)
			return i;
	if (r->ncurve == b->capCurve) {
		int cap = b->capCurve ? 2 * b->capCurve : 8;
		rp_curve *a = realloc(r->curve, sizeof *a * (size_t)cap);
		if (!a)
			return -1;
		r->curve = a;
		int *c = realloc(b->aCapPt, sizeof *c * (size_t)cap);
		if (!c)
			return -1;
		b->aCapPt = c;
		b->capCurve = cap;
	}
	rp_curve *c = &r->curve[r->ncurve];
	memset(c, 0, sizeof *c);
	if (!(c->task = strdup(rec->task ? rec->task : "")))
		return -1;
	c->task_id = rec->task_id;
	c->hardware_id = rec->hardware_id;
	c->flops = rec->flops > 0 ? rec->flops : 0;
	c->best_known = -1;
	c->trials_to_95 = -1;
	c->seconds_to_95 = -1;
	c->final_latency = -1;
	b->aCapPt[r->ncurve] = 0;
	return r->ncurve++;
}

/* Add one record (the next in trial order). */
static int builder_add(run_builder *b, const store_rec *rec)
{
	rp_run *r = b->r;
	int ic = builder_curve(b, rec);
	if (ic < 0)
		return tk_seterr(TK_ENOMEM, "out of memory");
	if (r->nstep == b->capStep) {
		int cap = b->capStep ? 2 * b->capStep : 64;
		rp_step *a = realloc(r->step, sizeof *a * (size_t)cap);
		if (!a)
			return tk_seterr(TK_ENOMEM, "out of memory");
		r->step = a;
		b->capStep = cap;
	}
	rp_curve *c = &r->curve[ic];
	rp_step *s = &r->step[r->nstep++];
	s->curve = ic;
	s->seconds = rec->at - r->started;
	s->latency = rec->valid && rec->median > 0 ? rec->median : -1;

	rp_point p = { c->n + 1, s->seconds, -1, 0 };
	if (c->n)
		p.latency = c->pt[c->n - 1].latency;
	if (s->latency > 0 && (p.latency < 0 || s->latency < p.latency))
		p.latency = s->latency;
	if (p.latency > 0)
		p.thr = rp_throughput(c->flops, p.latency);
	return curve_push(c, &b->aCapPt[ic], &p);
}

/* Finish the run: finals, own best as best known. Takes b->r into *out. */
static void builder_finish(run_builder *b, rp_run **out)
{
	rp_run *r = b->r;
	for (int i = 0; i < r->ncurve; i++) {
		curve_final(&r->curve[i]);
		rp_curve_set_best(&r->curve[i], -1);
	}
	free(b->aCapPt);
	b->aCapPt = NULL;
	b->r = NULL;
	*out = r;
}

static void builder_abort(run_builder *b)
{
	rp_run_free(b->r);
	free(b->aCapPt);
	b->r = NULL;
	b->aCapPt = NULL;
}

int rp_run_build(int64_t id, double started, const store_rec *aRec, int nRec, rp_run **out)
{
	run_builder b;
	int rc;
	assert(out && (aRec || nRec == 0) && nRec >= 0);
	*out = NULL;
	if ((rc = builder_init(&b, id, started)))
		return rc;
	for (int i = 0; i < nRec; i++)
		if ((rc = builder_add(&b, &aRec[i]))) {
			builder_abort(&b);
			return rc;
		}
	builder_finish(&b, out);
	return TK_OK;
}

int rp_run_find(const rp_run *r, const char *task)
{
	for (int i = 0; i < r->ncurve; i++)
		if (!strcmp(r->curve[i].task, task))
			return i;
	return -1;
}

/* ---- from the store ----------------------------------------------------------- */

/* The lowest valid median of every curve's task on its hardware. */
static int run_best_known(tk_store *s, rp_run *r)
{
	for (int i = 0; i < r->ncurve; i++) {
		rp_curve *c = &r->curve[i];
		double best;
		int rc = store_task_best(s, c->task_id, c->hardware_id, &best);
		if (rc)
			return rc;
		rp_curve_set_best(c, best);
	}
	return TK_OK;
}

static int load_rec(void *p, const store_rec *rec)
{
	return builder_add(p, rec);
}

int rp_run_load(tk_store *s, int64_t id, rp_run **out)
{
	run_builder b;
	int rc;
	assert(s && out);
	*out = NULL;
	if ((rc = builder_init(&b, id, 0)))
		return rc;
	if ((rc = store_run_info(s, id, &b.r->started, b.r->method, sizeof b.r->method)) ||
	    (rc = store_run_records(s, id, load_rec, &b))) {
		builder_abort(&b);
		return rc;
	}
	builder_finish(&b, out);
	if ((rc = run_best_known(s, *out))) {
		rp_run_free(*out);
		*out = NULL;
	}
	return rc;
}

/* ---- aggregates ---------------------------------------------------------------- */

/* Nominal flops of a task into *f (0 if unknown); 1 if tunekit's operator
 * declares them (0 for a reorder, which does none), 0 for an imported task
 * without a flops figure. */
static int task_flops(const char *task, double *f)
{
	te_prog *p;
	*f = 0;
	if (te_task_parse(task, &p))
		return 0;
	*f = p->flops;
	te_prog_free(p);
	return 1;
}

int rp_aggregate(const rp_run *r, int n, const char *const *aTask, const double *aWeight,
                 const char *name, rp_curve *out)
{
	int *aSlot = NULL, cap = 0, nHave = 0, rc = TK_OK;
	double *aBest = NULL, flops = 0, known = 0;
	int anyNoFlops = 0;

	assert(r && out && n >= 0 && (aTask || n == 0));
	memset(out, 0, sizeof *out);
	out->best_known = out->final_latency = -1;
	out->trials_to_95 = -1;
	out->seconds_to_95 = -1;
	if (!(out->task = strdup(name)))
		return tk_seterr(TK_ENOMEM, "out of memory");
	aSlot = malloc(sizeof *aSlot * (size_t)(n + 1));
	aBest = malloc(sizeof *aBest * (size_t)(n + 1));
	if (!aSlot || !aBest) {
		rc = tk_seterr(TK_ENOMEM, "out of memory");
		goto done;
	}
	for (int j = 0; j < n; j++) {
		double w = aWeight ? aWeight[j] : 1;
		aSlot[j] = rp_run_find(r, aTask[j]);
		aBest[j] = -1;
		/* the run's figure; the operator's declaration only where the
		 * run has none (a reorder declares 0 and is no unknown) */
		double f = aSlot[j] >= 0 ? r->curve[aSlot[j]].flops : 0, fdecl;
		int declared = 1;
		if (f <= 0) {
			declared = task_flops(aTask[j], &fdecl);
			if (aSlot[j] < 0)
				f = fdecl;
		}
		if (f > 0)
			flops += w * f;
		else if (!declared)
			anyNoFlops = 1;
		if (aSlot[j] < 0) {
			out->nmissing++;
			known = -1;
		} else if (known >= 0 && r->curve[aSlot[j]].best_known > 0) {
			known += w * r->curve[aSlot[j]].best_known;
		} else {
			known = -1;
		}
	}
	out->flops = anyNoFlops ? 0 : flops;
	out->best_known = n > 0 && known > 0 ? known : -1;

	for (int i = 0; i < r->nstep; i++) {
		const rp_step *s = &r->step[i];
		rp_point p = { i + 1, s->seconds, -1, 0 };
		for (int j = 0; j < n; j++)
			if (aSlot[j] == s->curve && s->latency > 0) {
				if (aBest[j] < 0)
					nHave++;
				if (aBest[j] < 0 || s->latency < aBest[j])
					aBest[j] = s->latency;
			}
		if (n > 0 && nHave == n) {
			p.latency = 0;
			for (int j = 0; j < n; j++)
				p.latency += (aWeight ? aWeight[j] : 1) * aBest[j];
			if (p.latency > 0)
				p.thr = rp_throughput(out->flops, p.latency);
			else
				p.latency = -1;
		}
		if ((rc = curve_push(out, &cap, &p)))
			goto done;
	}
	curve_final(out);
	if (out->best_known > 0 && out->final_latency > 0 && out->final_latency < out->best_known)
		out->best_known = out->final_latency;
	curve_to95(out);
done:
	free(aSlot);
	free(aBest);
	if (rc)
		rp_curve_clear(out);
	return rc;
}

int rp_network_curve(const rp_run *r, const tk_network *net, rp_curve *out)
{
	int n = net->n, rc;
	const char **aTask = malloc(sizeof *aTask * (size_t)(n + 1));
	double *aW = malloc(sizeof *aW * (size_t)(n + 1));
	size_t len = strlen(net->name) + sizeof "network:";
	char *name = malloc(len);
	memset(out, 0, sizeof *out);
	if (!aTask || !aW || !name) {
		rc = tk_seterr(TK_ENOMEM, "out of memory");
	} else {
		for (int i = 0; i < n; i++) {
			aTask[i] = net->task[i].task;
			aW[i] = net->task[i].weight;
		}
		snprintf(name, len, "network:%s", net->name);
		rc = rp_aggregate(r, n, aTask, aW, name, out);
	}
	free(aTask);
	free(aW);
	free(name);
	return rc;
}

/* ---- comparison ------------------------------------------------------------------ */

void rp_compare_free(rp_compare *c)
{
	if (!c)
		return;
	for (int i = 0; i < c->nrow; i++) {
		free(c->row[i].cell);
		free(c->row[i].ratio);
	}
	free(c->row);
	if (c->summary)
		for (int j = 0; j < c->nrun; j++)
			rp_curve_clear(&c->summary[j]);
	free(c->summary);
	free(c);
}

/* Fill the unit, best known throughput, coverage and ratios of a row whose
 * cells are set. */
static void row_finish(rp_cmp_row *w, int nRun)
{
	const rp_curve *first = NULL;
	double best = -1;
	w->ncovered = 0;
	for (int j = 0; j < nRun; j++) {
		const rp_curve *c = w->cell[j];
		if (!c)
			continue;
		w->ncovered++;
		if (!first)
			first = c;
		if (c->best_known > 0 && (best < 0 || c->best_known < best))
			best = c->best_known;
	}
	w->unit = first ? rp_unit(first) : "GFLOPS";
	w->best_known_thr = first && best > 0 ? rp_throughput(first->flops, best) : 0;
	for (int j = 0; j < nRun; j++) {
		const rp_curve *c = w->cell[j], *c0 = w->cell[0];
		w->ratio[j] = -1;
		if (c && c0 && c->final_thr > 0 && c0->final_thr > 0)
			w->ratio[j] = c->final_thr / c0->final_thr;
	}
}

/* Append a row with nRun empty cells. NULL on out of memory. */
static rp_cmp_row *row_add(rp_compare *c, int *pCap, const char *task)
{
	if (c->nrow == *pCap) {
		int cap = *pCap ? 2 * *pCap : 16;
		rp_cmp_row *a = realloc(c->row, sizeof *a * (size_t)cap);
		if (!a)
			return NULL;
		c->row = a;
		*pCap = cap;
	}
	rp_cmp_row *w = &c->row[c->nrow];
	memset(w, 0, sizeof *w);
	w->task = task;
	w->cell = calloc((size_t)c->nrun, sizeof *w->cell);
	w->ratio = calloc((size_t)c->nrun, sizeof *w->ratio);
	if (!w->cell || !w->ratio) {
		free(w->cell);
		free(w->ratio);
		return NULL;
	}
	c->nrow++;
	return w;
}

int rp_compare_build(const rp_run *const *aRun, int nRun, const tk_network *net,
                     rp_compare **out)
{
	rp_compare *c;
	int cap = 0, rc = TK_OK;
	const char **aTask = NULL;

	assert(aRun && nRun >= 1 && out);
	*out = NULL;
	if (!(c = calloc(1, sizeof *c)))
		return tk_seterr(TK_ENOMEM, "out of memory");
	c->nrun = nRun;
	c->run = aRun;

	/* One row per task, in order of first appearance. */
	for (int j = 0; j < nRun; j++)
		for (int k = 0; k < aRun[j]->ncurve; k++) {
			const rp_curve *cv = &aRun[j]->curve[k];
			int found = 0;
			for (int i = 0; i < c->nrow && !found; i++)
				found = !strcmp(c->row[i].task, cv->task);
			if (found)
				continue;
			rp_cmp_row *w = row_add(c, &cap, cv->task);
			if (!w)
				goto oom;
			for (int jj = 0; jj < nRun; jj++) {
				int ic = rp_run_find(aRun[jj], cv->task);
				w->cell[jj] = ic >= 0 ? &aRun[jj]->curve[ic] : NULL;
			}
			row_finish(w, nRun);
		}

	/* The summary: the network, or the tasks every run covered. */
	if (!(c->summary = calloc((size_t)nRun, sizeof *c->summary)))
		goto oom;
	if (net) {
		c->ncommon = net->n;
		for (int j = 0; j < nRun; j++)
			if ((rc = rp_network_curve(aRun[j], net, &c->summary[j])))
				goto fail;
	} else {
		if (!(aTask = malloc(sizeof *aTask * (size_t)(c->nrow + 1))))
			goto oom;
		for (int i = 0; i < c->nrow; i++)
			if (c->row[i].ncovered == nRun)
				aTask[c->ncommon++] = c->row[i].task;
		for (int j = 0; j < nRun; j++)
			if ((rc = rp_aggregate(aRun[j], c->ncommon, aTask, NULL, "all", &c->summary[j])))
				goto fail;
	}
	rp_cmp_row *w = row_add(c, &cap, c->summary[0].task);
	if (!w)
		goto oom;
	for (int j = 0; j < nRun; j++)
		w->cell[j] = &c->summary[j];
	row_finish(w, nRun);
	w->ncovered = 0;
	for (int j = 0; j < nRun; j++)
		w->ncovered += c->summary[j].nmissing == 0;
	free(aTask);
	*out = c;
	return TK_OK;
oom:
	rc = tk_seterr(TK_ENOMEM, "out of memory");
fail:
	free(aTask);
	rp_compare_free(c);
	return rc;
}
