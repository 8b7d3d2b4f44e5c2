/*
 * cost: the cost-model interface. A kind of cost model is a row of
 * cm_kinds[] (cost.c): a name, a summary, the feature kinds it accepts,
 * capability flags and its operations (fit, update, predict, predict a
 * mean and a deviation, save, load). The tuner, `tunekit train` and
 * `tunekit help models` see models only through this table and the opaque
 * cm_model handle; adding a model is one new file and one row.
 *
 * Shapes: N = rows, D = features per row (row-major x[N*D]). Labels y[N]
 * are throughputs normalised per task (1 = the task's best, 0 = invalid);
 * for ranking, rows of one group (task) are contiguous and group[] gives
 * each group's size. A model that takes a base model (CM_TRANSFER) fits
 * and predicts on top of per-row base margins (the base model's output).
 *
 * The row "none" has no operations: the model-free choice (searches that
 * would plan on a model propose from the measurements instead).
 */
#ifndef TK_COST_H
#define TK_COST_H

#include <stddef.h>
#include <stdint.h>

#include "model/modelfile.h"
#include "util/util.h"

enum {
	CM_UNCERTAINTY = 1 << 0, /* predict_dist: a mean and a deviation per row */
	CM_TRANSFER = 1 << 1,    /* fits and predicts on top of base margins */
	CM_RANK = 1 << 2,        /* can fit the pairwise ranking objective */
	CM_MULTIHEAD = 1 << 3,   /* learns from rows of several heads (cm_data.head) */
	CM_EI = 1 << 4,          /* the tuner scores by the expected improvement of
	                            its mean and deviation (AdaTune); needs
	                            CM_UNCERTAINTY */
	CM_FINETUNE = 1 << 5,    /* a trained model is a starting point: the tuner
	                            gives each task its own copy of a model file
	                            and updates it on the task's records */
	CM_CLASSIFY = 1 << 6,    /* can fit a validity classifier (cm_params.validity) */
	CM_HIDDEN = 1 << 7,      /* ML2Tuner's explorer: learns from hidden features
	                            (cm_data.xh) besides the visible ones and selects
	                            through the kind's screen and pick operations */
	CM_EPOCHS = 1 << 8,      /* trains in epochs and keeps the best on its valid
	                            rows; `train` gives it validation tasks only,
	                            never the holdout (a fixed number of epochs
	                            without them) */
	CM_COSTLY = 1 << 9,      /* a row's score is a network's forward pass (about
	                            a thousand times an xgb tree walk): the tuner's
	                            annealing runs on a budget of scores */
};

typedef struct cm_params {
	int rank;                /* 1: pairwise ranking (if CM_RANK), 0: squared error */
	int validity;            /* 1 (CM_CLASSIFY only): a binary classifier of
	                            validity (ML2Tuner's model V): a row is valid
	                            when its label y > 0, the model predicts the
	                            probability of valid (logistic); rank is
	                            then ignored */
	uint64_t seed;
	int rounds;              /* boosting rounds at most; 0: the model's default */
	int early_stop;          /* stop after this many rounds without improvement
	                            on valid, or on the training set itself when
	                            no valid is given; 0: never */
	int nthread;             /* 0: the library's default */
	const char *tree_method; /* NULL: the library's default */
	tk_rng *rng;             /* draws of resampling models (bootstrap); NULL:
	                            a generator seeded from seed */
	double aux_fraction;     /* multi-head models that train in epochs: the
	                            share of the auxiliary hardware's rows (head
	                            > 0) each epoch trains on, drawn afresh every
	                            epoch; 0 or 1: all of them */
	int seq_e;               /* sequence models: floats per position of a row
	                            (D = L x seq_e, padding positions all zero);
	                            0: the whole row is one position */
	void (*progress)(void *ctx, int done, int total);
	void *progress_ctx;      /* fit and adapt of models that train in epochs
	                            (tlp, mtl-tlp): progress is called after each
	                            epoch with the epochs done and in all; NULL:
	                            not called */
} cm_params;

/* Defaults: rank, seed 1, rounds 0, early_stop 0, one thread. */
void cm_params_default(cm_params *p);

typedef struct cm_data {
	int n, d;
	const float *x;          /* (N, D) */
	const float *y;          /* (N) */
	int ngroup;              /* 0 if no groups */
	const unsigned *group;   /* (ngroup) sizes summing to N */
	const float *margin;     /* (N) base margins, or NULL */
	const int *head;         /* (N) multi-head models (CM_MULTIHEAD): the head
	                            (hardware) of each row's label, 0 the target
	                            the model predicts for; NULL: all 0 */
	int dh;                  /* hidden features per row (CM_HIDDEN), 0: none */
	const float *xh;         /* (N, DH) what compiling each row's configuration
	                            decided (features of kind hidden), or NULL */
} cm_data;

/* Ways a trained model adapts to new hardware from the new hardware's
 * records (cm_adapt; `tunekit transfer`). */
enum {
	CM_ADAPT_FINETUNE = 1 << 0, /* train every parameter further (TenSet's transfer) */
	CM_ADAPT_TICKET = 1 << 1,   /* Moses: train the parameters most salient on the
	                               target, |w * dL/dw|, re-chosen every epoch; the
	                               others decay toward zero (eq. 5 and 7) */
	CM_ADAPT_BOOST = 1 << 2,    /* boosting rounds added on the target's records */
};

typedef struct cm_adapt_opts {
	int method;              /* one CM_ADAPT_* */
	int epochs;              /* networks: epochs; boosting: rounds added;
	                            0: the kind's default */
	double lr;               /* networks: peak learning rate; 0: the kind's default */
	double ratio;            /* ticket: share of the parameters trained (0 to 1) */
	double threshold;        /* ticket: > 0 trains those with saliency at least
	                            this share of the largest instead of a ratio */
	double decay;            /* ticket: the others shrink by lr x decay x w a step */
} cm_adapt_opts;

/* What an adaptation did. */
typedef struct cm_adapt_info {
	int epochs, steps;       /* networks: epochs and optimiser steps; boosting:
	                            rounds added (epochs) and rounds in all (steps) */
	double trained;          /* mean share of the parameters trained per step
	                            (1 but for a ticket) */
} cm_adapt_info;

/* Defaults: fine-tune, the kind's epochs and rate, ratio 0.5, no
 * threshold, decay 1. */
void cm_adapt_default(cm_adapt_opts *a);

typedef struct cm_kind {
	const char *name;
	const char *summary;
	unsigned features;       /* accepted feature kinds: bit 1 << FEAT_* */
	int feature;             /* the kind it reads when none is asked for
	                            (FEAT_*, one of features; see cm_feature) */
	unsigned flags;          /* CM_* */
	/* Fit on train (valid may be NULL) into a new *state. */
	int (*fit)(const cm_params *p, const cm_data *train, const cm_data *valid, void **state);
	/* Learn from all records so far (the old ones and the new); NULL: refit. */
	int (*update)(void *state, const cm_params *p, const cm_data *all);
	/* Predict n rows (margin may be NULL) into out[n]. */
	int (*predict)(void *state, const float *x, int n, int d, const float *margin, float *out);
	/* Mean and deviation of n rows (CM_UNCERTAINTY only, else NULL). */
	int (*predict_dist)(void *state, const float *x, int n, int d, float *mu, float *sd);
	int (*save)(void *state, void **buf, size_t *len);
	int (*load)(const void *buf, size_t len, void **state);
	/* Adapt the state in place to a target's rows (no heads, no margins)
	 * by one of the methods of adapts (CM_ADAPT_*); NULL if adapts is 0.
	 * On error the state may be partly adapted: the caller drops it. */
	unsigned adapts;
	int (*adapt)(void *state, const cm_params *p, const cm_adapt_opts *a, const cm_data *target,
	             cm_adapt_info *info);
	/* CM_HIDDEN only (else NULL). screen: the probability that each of n
	 * rows (visible features) is valid, into out[n] (model V; 1 before
	 * any invalid row was seen). pick: scores of n rows from visible and
	 * hidden features (model A; xh may be NULL when no hidden features
	 * exist, then the visible model's scores) into out[n]. */
	int (*screen)(void *state, const float *x, int n, int d, float *out);
	int (*pick)(void *state, const float *x, int n, int d, const float *xh, int dh, float *out);
	/* The importance of each feature the model reads (XGBoost's total
	 * gain; ml2: A's, visible then hidden, or P's without A): *gain a
	 * malloc'd array of *d values. NULL for kinds without one. */
	int (*importance)(void *state, int *d, double **gain);
	/* Add the kind's own meta keys (objective, rounds, ...); may be NULL. */
	int (*describe)(void *state, mf_meta *m);
	void (*free)(void *state);
} cm_kind;

extern const cm_kind *const cm_kinds[];
extern const int cm_nkinds;

/* The kind named name, or NULL. */
const cm_kind *cm_find(const char *name);
/* The same; TK_EINVAL with "unknown model 'x' (a, b, c)" if there is none. */
int cm_lookup(const char *name, const cm_kind **out);
/* Names of the kinds that have every flag of need and, if fits, a fit
 * operation, as "a, b, c" into buf (always terminated). */
void cm_names(char *buf, size_t size, unsigned need, int fits);
/* The feature kind a model of kind k reads on a task when none is asked
 * for: its own (k->feature) on a task with a loop nest (nest 1), knob on
 * one without (an imported space, a simulated accelerator's) if k takes
 * knob, else its own, which then does not apply to the task. */
int cm_feature(const cm_kind *k, int nest);
/* Whether k is a model (not the model-free "none"). */
static inline int cm_is_model(const cm_kind *k)
{
	return k && k->fit;
}

typedef struct cm_model cm_model;

/* Fit a new model of kind k. On error *out is NULL. TK_EINVAL if k is not
 * a model or the data are inconsistent. */
int cm_fit(const cm_kind *k, const cm_params *p, const cm_data *train, const cm_data *valid,
           cm_model **out);
/* Update m on every record so far; on error m is unchanged. */
int cm_update(cm_model *m, const cm_params *p, const cm_data *all);
/* Predictions of n rows of d features (margin may be NULL) into out[n]. */
int cm_predict(cm_model *m, const float *x, int n, int d, const float *margin, float *out);
/* ML2Tuner's stages (kinds with CM_HIDDEN): the probability of valid of n
 * rows, and the final scores of n rows from visible and hidden features
 * (xh NULL: none known). TK_EINVAL for a kind without them. */
int cm_screen(cm_model *m, const float *x, int n, int d, float *out);
int cm_pick(cm_model *m, const float *x, int n, int d, const float *xh, int dh, float *out);
/* The importance of each feature (the kind's importance operation): *gain
 * a malloc'd array of *d values, the caller frees. TK_EINVAL for a kind
 * without one. */
int cm_importance(cm_model *m, int *d, double **gain);
/* Mean and deviation; TK_EINVAL for a model without uncertainty. */
int cm_predict_dist(cm_model *m, const float *x, int n, int d, float *mu, float *sd);
/* Adapt m to the rows of target (labels normalised per group, rows of a
 * group contiguous, no heads or margins) by a->method; info (may be NULL)
 * receives what it did. TK_EINVAL if m's kind cannot adapt that way or the
 * rows do not fit it; on any error m is in an unspecified state and should
 * be freed, not used. */
int cm_adapt(cm_model *m, const cm_params *p, const cm_adapt_opts *a, const cm_data *target,
             cm_adapt_info *info);
/* The payload of a model file (malloc'd, caller frees) and back, through
 * the kind's row; cm_load checks the payload's magic and version:
 * TK_ECORRUPT if they are wrong. */
int cm_save(cm_model *m, void **buf, size_t *len);
int cm_load(const cm_kind *k, const void *buf, size_t len, cm_model **out);
/* "kind" and the kind's own keys into meta. */
int cm_describe(cm_model *m, mf_meta *meta);
const cm_kind *cm_kind_of(const cm_model *m);
/* A copy of m (through its save and load operations) into *out; on error
 * *out is NULL. */
int cm_clone(cm_model *m, cm_model **out);
/* For a kind's own operations beyond the table (meta's meta-training,
 * model/meta.h): the state of m if m is of kind k, else NULL; and a new
 * model of kind k around state, which it then owns (on error the state is
 * freed with k->free and *out is NULL). */
void *cm_state(const cm_model *m, const cm_kind *k);
int cm_wrap(const cm_kind *k, void *state, cm_model **out);
/* Read the model file at path (tunekit train writes it) into meta and a
 * model of the kind it names. TK_EIO if it cannot be read, TK_ECORRUPT
 * (naming path) if it is not a model file, names no kind of the table or
 * its payload does not load; on error *out is NULL. */
int cm_read(const char *path, mf_meta *meta, cm_model **out);
/* The same for a model file's bytes in memory; name stands for the path in
 * messages. */
int cm_decode(const char *name, const void *buf, size_t len, mf_meta *meta, cm_model **out);
void cm_free(cm_model *m); /* NULL is allowed */

#endif
