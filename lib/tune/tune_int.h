/*
 * tune_int: the pieces of the tuning loop shared by its files: the state of
 * one task being tuned (tn_task), the measurers (real, replay), and the
 * cost model adapter. Not for use outside lib/tune.
 */
#ifndef TK_TUNE_INT_H
#define TK_TUNE_INT_H

#include <string.h>

#include "features/feature.h"
#include "model/cost.h"
#include "record/record.h"
#include "tune.h"

/* ---- feature cache: configuration index -> feature vector -------------- */

typedef struct tn_fcache {
	int d;            /* vector length */
	int64_t cap, n;   /* slots, used */
	uint64_t *key;    /* index + 1, 0 = empty */
	float *val;       /* cap * d */
} tn_fcache;

/* ---- one task ------------------------------------------------------------- */

#define CTL_MAXQ 1000     /* the controller's batches at most (ctl.batches) */

typedef struct tn_task {
	char *key;
	double flops, weight;
	ms_task *mt;          /* template tasks: owns the program and the space */
	sp_space *space;      /* mt->space, or owned (imported tasks) */
	sp_space *own_space;
	int64_t task_id;      /* in the output store */
	int64_t dhw;          /* replay: hardware id in the dataset */
	sp_config *pool;      /* --replay-pool: the configurations the dataset */
	int npool;            /* measured on dhw (NULL: the whole space) */

	/* its cost model: the job's (C->mk on C->feat, the file's C->fixed), or
	 * for an operator the model file was not trained on C->other on other
	 * features and no file */
	const cm_kind *mk;
	int feat;             /* FEAT_* */
	cm_model *fixed;      /* C->fixed or NULL */
	int width;            /* 0, or the model file's feature length where it is
	                         longer than the task's: the rows are padded with
	                         zeros, as train pads the rows of a store's
	                         narrower tasks (model_width) */

	tk_rng rng;
	sr_set visited;       /* indices measured (or proposed) in this run */
	int64_t trials, invalid, last_improve;
	double best_thr, best_lat; /* throughput = flops/latency (1/latency if no flops) */
	int done;             /* space exhausted or stopped early */

	/* training data */
	int nx, capx;
	sp_config *xc;
	float *ys;            /* throughput, 0 for invalid */
	unsigned char *bnd;   /* 1: that trial's timing stopped at the bound (the
	                         model learns from it; the confirmation skips it) */

	/* model-based plan */
	sp_config *plan;
	int nplan, plan_pt, fits;
	double fit_s;         /* wall seconds in model_fit */
	cm_model *model;      /* NULL before the first fit */
	cm_model *base;       /* transfer learning: model of the history, or NULL */
	double base_w;        /* its weight in the last fit: 1 / 2^(records / 64) */
	void *search;         /* the search's own state, or NULL */
	void (*free_search)(void *); /* its sr_kind.free_state */
	double epsilon;       /* random share of each plan: o->epsilon, or with
	                         SR_CONTEXT_EPSILON the model's deviation after
	                         each fit */
	int logged_fits;      /* fits whose epsilon is in the run log */

	tn_fcache fc;
	tn_fcache sc;         /* scores (d = 1) under the current model (model_predict) */

	/* ML2Tuner's explorer (a model with CM_HIDDEN) */
	tn_fcache hc;         /* hidden features by configuration index */
	int ml2_fit_nx;       /* records at its last fit */
	int ml2_dropped;      /* candidates V dropped since the last log */
	int ml2_compiled;     /* candidates compiled for A since the last log */
	int ml2_failed;       /* ... that did not compile, so were not measured */
	int ml2_nse;          /* held-out valid records scored at refits ... */
	double ml2_se_p, ml2_se_a; /* ... and the squared errors of P and A on them */

	/* the controller's (control.c) */
	int predicting;       /* measuring stopped: the model answers the trials */
	int64_t measured, predicted; /* trials of each kind in this process */
	int cscored;          /* moses: the model scored the batch being measured ... */
	double cmu;           /* ... with this mean score */
	double cmean[CTL_MAXQ]; /* the model's mean score of each measured batch (ring) */
	int ncmean;
	sp_config *ctop;      /* the best predicted configurations (o->ctl.top) */
	float *ctop_s;        /* their scores */
	int nctop;

	/* the guard of a model file (guard.c) */
	int guarded;          /* 1: t has a model file and C->scratch beside it */
	cm_model *scratch;    /* C->scratch fitted on t's records, or NULL */
	int sfeat;            /* its features (FEAT_*) ... */
	tn_fcache sfc;        /* ... cached here when they are not t->feat */
	int scratch_nx;       /* the records it was fitted on */
	int chooser;          /* TN_GUARD_*: the model the plan is searched on */
	int replan;           /* the chooser changed: plan again before the next batch */
	tn_guard guard;       /* how each ranked the batches neither had learnt */
	int64_t gbatches, gscratch; /* measured batches, those the scratch model planned */
	int glast;            /* the chooser of the last measured batch */

	/* scheduling */
	int rounds;
	double hist[8];       /* best latency after each of the last rounds */
	int nhist;
} tn_task;

/* The context every part of a job sees. */
typedef struct tn_ctx {
	const tn_opts *o;
	const tk_target *target;
	tk_store *data;       /* replay dataset, or NULL */
	int feat;             /* FEAT_* of o->feature; -1 when none is given:
	                         each task's model's (cm_feature) */
	const cm_kind *mk;    /* the cost model's row (o->model) */
	const sr_kind *sk;    /* the search's row (o->search) */
	const tn_ctl *ctl;    /* the controller's row (o->ctl.kind) */
	cm_model *fixed;      /* a trained model scoring every task, never refit
	                         (o->model_file), or NULL */
	int adapt;            /* CM_ADAPT_* of o->adapt: each task's model is a
	                         copy of fixed adapted at every refit; 0: none */
	const struct tr_method *adapt_method; /* its row of tr_methods[], or NULL */
	const cm_kind *other; /* the model of tasks whose operator the model
	                         file was not trained on (o->other_model), or NULL */
	const char *ops;      /* the operators it was trained on ("a,b"), or NULL */
	const cm_kind *scratch; /* the guard's model fitted from scratch beside
	                         the file's (guard.c), or NULL: no guard */
	int model_based;      /* the search plans on the model: a model and a
	                         search with a plan operation */
	int hidden;           /* a model with CM_HIDDEN whose tasks' hidden features
	                         can be had (measured here, not replayed) */
} tn_ctx;

/* ---- a job (run.c) --------------------------------------------------------- */

typedef struct tn_job {
	tn_ctx C;
	tn_task **tk;
	int ntask;
	rec_session s;
	const tn_hooks *h;  /* may be NULL */
	double sim_clock;   /* replay: simulated Unix time */
	double start;
	int64_t used, invalid;
	int64_t confirmed;  /* measurements of the confirmation */
	int64_t bounded;    /* trials whose timing stopped at the bound */
	double clock0;      /* job_clock() when the budget started */
	double tuner_s;     /* wall seconds in tuner_next and tuner_update */
	int64_t round;      /* trials per scheduling round: o->round, but at most
	                       trials / tasks, so that a small budget still
	                       reaches every task of a network */
} tn_job;

/* Store n results of task t (their ids into ids), count the bounded ones
 * and pass them to the record stream. */
int job_keep(tn_job *J, tn_task *t, const ms_result *r, int n, int64_t *ids);

/* ---- per-task tuning (tuner.c) -------------------------------------------- */

/* Up to want configurations to measure next (fewer when the space runs
 * out; 0 sets t->done). */
int tuner_next(tn_ctx *C, tn_task *t, int want, sp_config *out, int *n);
/* The same for trials the model answers alone (the adaptive controller):
 * the plan's configurations without its random share, and when the plan
 * runs out a new one searched on the same model, not refit. */
int tuner_next_predicted(tn_ctx *C, tn_task *t, int want, sp_config *out, int *n);
/* Before the first trial: with a base model, plan the first batch on it. */
int tuner_start(tn_ctx *C, tn_task *t);
/* A new plan searched on t's model as it is (no fit). */
int tuner_plan(tn_ctx *C, tn_task *t);
/* Learn from measured results. */
int tuner_update(tn_ctx *C, tn_task *t, const sp_config *c, const ms_result *r, int n);
void tuner_task_free(tn_task *t);
/* Throughput of a result for t (0 if invalid). */
double tuner_throughput(const tn_task *t, const ms_result *r);

/* ---- cost model (model.c) ------------------------------------------------------ */

/* Fit (or update) t->model on t's records through the model's row. */
int model_fit(tn_ctx *C, tn_task *t);
/* Scores for the search: the model's prediction (on top of the base
 * model's), or for a model with uncertainty the expected positive
 * improvement of its mean and deviation over the best measured (1 in the
 * normalised throughputs it learnt). Zeros before the first fit. The
 * predictions are kept by configuration (t->sc) until model_fit changes
 * the model, and only those not kept are computed. */
int model_predict(tn_ctx *C, tn_task *t, const sp_config *c, int n, float *out);
/* Mean and deviation of the normalised throughput (zeros before the first
 * fit); only for models with uncertainty. */
int model_predict_dist(tn_ctx *C, tn_task *t, const sp_config *c, int n, float *mu, float *sd);
/* Hidden features of configurations of t (cached; compiled on the CPU)
 * into out (n * *dh floats; room for n * hidden length), and into ok[n]
 * (may be NULL) whether each compiled (lowered and accepted by the
 * compiler). *dh 0 and nothing computed when C->hidden is 0 or t has no
 * template. */
int model_hidden(tn_ctx *C, tn_task *t, const sp_config *c, int n, float *out, int *dh,
                 int *ok);
/* The length model_hidden gives t's rows (0: none). */
int model_hidden_length(tn_ctx *C, tn_task *t);
/* The length of t's feature rows: its feature kind's, or t->width; _of
 * for the rows of the file's model (scratch 0) or of the guard's (1). */
int model_width(const tn_task *t, int *d);
int model_width_of(const tn_task *t, int scratch, int *d);
/* Features of configurations of t (cached). out has n * d floats, d as
 * model_width gives it. */
int model_features(tn_ctx *C, tn_task *t, const sp_config *c, int n, float *out, int *d);
/* The same for t's model from scratch (scratch 1: t->sfeat) or its own
 * (0: model_features). */
int model_features_of(tn_ctx *C, tn_task *t, int scratch, const sp_config *c, int n, float *out,
                      int *d);
/* The parameters every fit of t's models takes (AutoTVM's settings). */
void model_fit_params(tn_ctx *C, tn_task *t, cm_params *p);
/* Transfer learning (AutoTVM's load_history): train a base model per task
 * on the records of the history store hs measured on the hardware with
 * key or id hw_key (hs_name names it in messages), for tasks whose feature
 * vectors have the same length and that are of the same operator, the
 * same task (an imported task measured on other hardware) or have the
 * same knob space (sp_space_hash). A task with fewer
 * than HISTORY_MIN such records gets none. *nrec receives the number of
 * history records used; TK_EINVAL if no task got a base model. */
#define HISTORY_MIN 64
int model_load_history(tn_ctx *C, tn_task *const *tasks, int ntask, tk_store *hs,
                       const char *hs_name, const char *hw_key, int64_t *nrec);
void fcache_free(tn_fcache *f);

/* ---- the guard of a model file (guard.c) -------------------------------------- */

/* C->scratch for o: xgb, or rfei when the file's kind has a deviation;
 * NULL without a model file, with o->guard 0, or when the search does not
 * plan on a model or the model is ml2's. */
int guard_setup(const tn_opts *o, tn_ctx *C);
/* Fit t's model from scratch anew on all its records if some arrived
 * since its last fit and one is valid; no-op for a task without a guard. */
int guard_fit(tn_ctx *C, tn_task *t);
/* After a measured batch c[0..n) of t with results r, before t learns
 * from it: both models score it, the chooser of the next batch is picked,
 * and the one that planned this batch goes to the run log at J->used. */
int guard_batch(tn_job *J, tn_task *t, const sp_config *c, const ms_result *r, int n);
/* After t learnt from the batch (fits: t->fits before it): the model
 * from scratch refit, and a new plan on a new chooser unless a refit just
 * made one. */
int guard_after(tn_job *J, tn_task *t, int fits);

/* ---- measurement (measurer.c) ------------------------------------------------------ */

/* Measure n configurations of t: for real, or from the replay dataset.
 * *cost receives the simulated seconds of a replayed batch (0 for real
 * measurements, whose time is the wall clock). With bound set, real
 * measurements are bounded (tn_opts.bound) by the task's best latency so
 * far, when it has one; replayed ones keep the dataset's own flag. */
int measurer_run(tn_ctx *C, tn_task *t, const sp_config *c, int n, ms_result *out,
                 double *cost, int bound);

#endif
