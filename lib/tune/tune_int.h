/*
 * tune_int: the pieces of the tuning loop shared by its files: the state of
 * one task being tuned (tn_task), the measurers (real, replay), and the
 * cost model adapter. Not for use outside lib/tune.
 */
#ifndef TK_TUNE_INT_H
#define TK_TUNE_INT_H

#include <string.h>

#include "features/feature.h"
#include "model/xgb.h"
#include "tune.h"

/* ---- feature cache: configuration index -> feature vector -------------- */

typedef struct tn_fcache {
	int d;            /* vector length */
	int64_t cap, n;   /* slots, used */
	uint64_t *key;    /* index + 1, 0 = empty */
	float *val;       /* cap * d */
} tn_fcache;

/* ---- one task ------------------------------------------------------------- */

typedef struct tn_task {
	char *key;
	double flops, weight;
	ms_task *mt;          /* template tasks: owns the program and the space */
	sp_space *space;      /* mt->space, or owned (imported tasks) */
	sp_space *own_space;
	int64_t task_id;      /* in the output store */
	int64_t dhw;          /* replay: hardware id in the dataset */

	tk_rng rng;
	sr_set visited;       /* indices measured (or proposed) in this run */
	int64_t trials, invalid, last_improve;
	double best_thr, best_lat; /* throughput = flops/latency (1/latency if no flops) */
	int done;             /* space exhausted or stopped early */

	/* training data */
	int nx, capx;
	sp_config *xc;
	float *ys;            /* throughput, 0 for invalid */

	/* model-based plan */
	sp_config *plan;
	int nplan, plan_pt, fits;
	double fit_s;         /* wall seconds in model_fit */
	struct tn_model *model;
	xgb_model *base;      /* transfer learning: model of the history, or NULL */
	double base_w;        /* its weight in the last fit: 1 / 2^(records / 64) */
	sr_sa *sa;
	int64_t grid_pos;     /* grid search cursor */
	double epsilon;       /* random share of each plan: o->epsilon, or with
	                         csa AdaTune's contextual value after each fit */
	int logged_fits;      /* fits whose epsilon is in the run log */

	/* model-free annealing */
	int nchain;
	sp_config *chain;
	double *chain_thr;
	int *pending;         /* chain of each proposed config of the last batch */

	tn_fcache fc;

	/* scheduling */
	int rounds;
	double hist[8];       /* best latency after each of the last rounds */
	int nhist;
} tn_task;

/* Annealing on a score (sa, csa), and annealing on a cost model. */
static inline int tn_annealing(const tn_opts *o)
{
	return !strcmp(o->search, "sa") || !strcmp(o->search, "csa");
}
static inline int tn_model_based(const tn_opts *o)
{
	return tn_annealing(o) && strcmp(o->model, "none");
}

/* The context every part of a job sees. */
typedef struct tn_ctx {
	const tn_opts *o;
	const tk_target *target;
	tk_store *data;       /* replay dataset, or NULL */
	int feat;             /* FEAT_* of o->feature */
} tn_ctx;

/* ---- per-task tuning (tuner.c) -------------------------------------------- */

/* Up to want configurations to measure next (fewer when the space runs
 * out; 0 sets t->done). */
int tuner_next(tn_ctx *C, tn_task *t, int want, sp_config *out, int *n);
/* Before the first trial: with a base model, plan the first batch on it. */
int tuner_start(tn_ctx *C, tn_task *t);
/* Learn from measured results. */
int tuner_update(tn_ctx *C, tn_task *t, const sp_config *c, const ms_result *r, int n);
void tuner_task_free(tn_task *t);
/* Throughput of a result for t (0 if invalid). */
double tuner_throughput(const tn_task *t, const ms_result *r);

/* ---- cost model (model.c) ------------------------------------------------------ */

typedef struct tn_model tn_model;
int model_new(tn_ctx *C, tn_task *t, tn_model **out);
int model_fit(tn_ctx *C, tn_task *t, tn_model *m);
/* Scores for the search: xgb's prediction, or for rfei the expected
 * positive improvement of the ensemble's mean and deviation. */
int model_predict(tn_ctx *C, tn_task *t, tn_model *m, const sp_config *c, int n, float *out);
/* rfei: the ensemble's mean and standard deviation of the normalised
 * throughput (zeros before the first fit). */
int model_predict_dist(tn_ctx *C, tn_task *t, tn_model *m, const sp_config *c, int n,
                       float *mu, float *sd);
void model_free(tn_model *m);
/* Features of configurations of t (cached). out has n * d floats. */
int model_features(tn_ctx *C, tn_task *t, const sp_config *c, int n, float *out, int *d);
/* Transfer learning (AutoTVM's load_history): train a base model per task
 * on the records of the history store at path measured on the hardware
 * with key hw_key, for tasks of the same operator whose feature vectors
 * have the same length. A task with fewer than HISTORY_MIN such records
 * gets none. *nrec receives the number of history records used; TK_EINVAL
 * if no task got a base model. */
#define HISTORY_MIN 64
int model_load_history(tn_ctx *C, tn_task *const *tasks, int ntask, const char *path,
                       const char *hw_key, int64_t *nrec);
void fcache_free(tn_fcache *f);

/* ---- measurement (measurer.c) ------------------------------------------------------ */

/* Measure n configurations of t: for real, or from the replay dataset.
 * *cost receives the simulated seconds of a replayed batch (0 for real
 * measurements, whose time is the wall clock). */
int measurer_run(tn_ctx *C, tn_task *t, const sp_config *c, int n, ms_result *out,
                 double *cost);

#endif
