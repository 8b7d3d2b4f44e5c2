/*
 * control: the table of controllers of what a tuning job measures
 * (tn_ctls[], --controller). A controller is a row of hooks the job
 * calls before and after each measured batch of a task, in place of
 * measuring once the controller says the task's model answers, and at
 * the end of the budget; the row "none" has none and every trial is
 * measured. Adding a controller is its hooks and one row.
 *
 * moses: Moses' adaptive controller (section 3.5): a task's trials are
 * measured until its cost model is certain, then the model answers the
 * rest. Before each measured batch the model scores the batch's
 * configurations, and the controller keeps the mean score of each batch;
 * once the last ctl.batches means have a coefficient of variation (their
 * standard deviation over the absolute value of their mean) under ctl.cv,
 * or the task has measured ctl.share of its trials (of the budget for one
 * task, of an even share of it in a network), the task stops measuring,
 * though never before its model's first fit. Its later trials are the
 * model's alone: configurations the search plans on the model (a new plan
 * on the same model when one runs out), scored and not measured, counted
 * in the budget; after the budget the ctl.top of them the model scores
 * best are measured. The counts go to the run log per task
 * (trials:measured:TASK with those final measurements,
 * trials:predicted:TASK).
 */
#include <math.h>
#include <stdlib.h>

#include "tune_int.h"

static int has_model(const tn_task *t)
{
	return t->model || t->base || t->fixed;
}

/* The mean of the model's scores of cfg[0..n) into *mu. */
static int score_mean(tn_ctx *C, tn_task *t, const sp_config *cfg, int n, float *score,
                      double *mu)
{
	int rc = model_predict(C, t, cfg, n, score);
	double s = 0;
	for (int i = 0; !rc && i < n; i++)
		s += score[i];
	*mu = n > 0 ? s / n : 0;
	return rc;
}

/* Keep the ctl.top best of n predicted configurations. */
static int keep_top(const tn_ctx *C, tn_task *t, const sp_config *c, const float *s, int n)
{
	int k = C->o->ctl.top;
	if (k <= 0)
		return TK_OK;
	if (!t->ctop) {
		t->ctop = malloc(sizeof *t->ctop * (size_t)k);
		t->ctop_s = malloc(sizeof *t->ctop_s * (size_t)k);
		if (!t->ctop || !t->ctop_s)
			return tk_seterr(TK_ENOMEM, "out of memory");
	}
	for (int i = 0; i < n; i++) {
		int at = t->nctop < k ? t->nctop++ : -1;
		if (at < 0) {
			int worst = 0;
			for (int j = 1; j < k; j++)
				if (t->ctop_s[j] < t->ctop_s[worst])
					worst = j;
			if (!(s[i] > t->ctop_s[worst]))
				continue;
			at = worst;
		}
		t->ctop[at] = c[i];
		t->ctop_s[at] = s[i];
	}
	return TK_OK;
}

/* Before a measured batch of t: the model's mean score of it, once t
 * has a model. */
static int moses_before(tn_job *J, tn_task *t, const sp_config *c, int n)
{
	float *score;
	int rc;
	if (!(t->cscored = has_model(t)))
		return TK_OK;
	if (!(score = malloc(sizeof *score * (size_t)n)))
		return tk_seterr(TK_ENOMEM, "out of memory");
	rc = score_mean(&J->C, t, c, n, score, &t->cmu);
	free(score);
	return rc;
}

/* After a measured batch of t: whether t stops measuring. */
static int moses_after(tn_job *J, tn_task *t)
{
	const tn_opts *o = J->C.o;
	int q = o->ctl.batches;
	if (t->cscored)
		t->cmean[t->ncmean++ % CTL_MAXQ] = t->cmu;
	if (!has_model(t))
		return TK_OK;
	double budget = J->ntask > 1 ? (double)o->trials / J->ntask : (double)o->trials;
	if ((double)t->measured >= o->ctl.share * budget) {
		t->predicting = 1;
		return TK_OK;
	}
	if (t->ncmean < q)
		return TK_OK;
	double m = 0, v = 0;
	for (int i = 1; i <= q; i++)
		m += t->cmean[(t->ncmean - i) % CTL_MAXQ];
	m /= q;
	for (int i = 1; i <= q; i++) {
		double d = t->cmean[(t->ncmean - i) % CTL_MAXQ] - m;
		v += d * d;
	}
	if (fabs(m) > 1e-12 && sqrt(v / q) / fabs(m) < o->ctl.cv)
		t->predicting = 1;
	return TK_OK;
}

/* A batch of trials the model answers: planned, scored, not measured. */
static int moses_answer(tn_job *J, tn_task *t, int want, int *got)
{
	tn_ctx *C = &J->C;
	sp_config *cfg = malloc(sizeof *cfg * (size_t)want);
	float *score = malloc(sizeof *score * (size_t)want);
	int n = 0, rc;
	double mu, t0 = tk_now();
	*got = 0;
	if (!cfg || !score)
		rc = tk_seterr(TK_ENOMEM, "out of memory");
	else if (!(rc = tuner_next_predicted(C, t, want, cfg, &n)) && n > 0 &&
	         !(rc = score_mean(C, t, cfg, n, score, &mu)))
		rc = keep_top(C, t, cfg, score, n);
	double think = tk_now() - t0;
	J->tuner_s += think;
	J->sim_clock += think;
	if (!rc) {
		J->used += n;
		t->predicted += n;
		*got = n;
	}
	free(cfg);
	free(score);
	return rc;
}

/* After the budget: measure the best predicted configurations of t. */
static int moses_end(tn_job *J, tn_task *t)
{
	int n = t->nctop, rc;
	if (n == 0)
		return TK_OK;
	ms_result *r = calloc((size_t)n, sizeof *r);
	int64_t *ids = calloc((size_t)n, sizeof *ids);
	double cost = 0;
	if (!r || !ids) {
		rc = tk_seterr(TK_ENOMEM, "out of memory");
		goto done;
	}
	if ((rc = measurer_run(&J->C, t, t->ctop, n, r, &cost, 1)))
		goto done;
	if (J->C.data)
		for (int i = 0; i < n; i++)
			r[i].at = J->sim_clock + cost * (i + 1) / n;
	J->sim_clock += cost;
	if (!(rc = job_keep(J, t, r, n, ids)))
		rc = tuner_update(&J->C, t, t->ctop, r, n);
	t->measured += n;
	t->nctop = 0;
	ms_results_free(r, n);
done:
	free(r);
	free(ids);
	return rc;
}

static const tn_ctl ctl_none = {
	.name = "none",
	.summary = "every trial is measured",
};

static const tn_ctl ctl_moses = {
	.name = "moses",
	.summary = "Moses: stop measuring a task once its model is certain; the model answers the rest",
	.flags = TN_CTL_MODEL | TN_CTL_ANSWERS,
	.before = moses_before,
	.after = moses_after,
	.answer = moses_answer,
	.end = moses_end,
};

const tn_ctl *const tn_ctls[] = { &ctl_none, &ctl_moses };
const int tn_nctls = ArraySize(tn_ctls);
