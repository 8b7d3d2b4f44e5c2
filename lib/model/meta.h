/*
 * meta: MetaTune's cost model (Ryu and Sung, 2021) beyond its row of the
 * model table (cost.h's "meta"): the meta-training that `tunekit
 * pretrain-meta` runs. Supervised pre-training of the whole network on a
 * labelled set, then model-agnostic meta-learning (MAML, Finn et al. 2017)
 * of the regression head over few-shot tasks, the GCN embedding frozen as
 * the paper does, and a few-shot evaluation on held-out tasks. The model is
 * then an ordinary "meta" model: saved, loaded and fine-tuned by the tuner
 * through the table.
 *
 * Which MAML: first-order (FOMAML). The outer gradient is the query loss's
 * gradient at the adapted head, not differentiated through the inner
 * steps: lib/nn has no second derivatives (no backward pass of a backward
 * pass), and Finn et al. report that the first-order approximation learns
 * about as well (Sec. 5.2); it also costs one backward pass per step, not
 * a Hessian product.
 *
 * Shapes: rows of a cm_data are graph vectors (D = FEAT_GRAPH_LEN); a
 * task's rows are contiguous, labels normalised per task.
 */
#ifndef TK_META_H
#define TK_META_H

#include <stdint.h>

#include "cost.h"

extern const cm_kind cm_meta;

typedef struct meta_opts {
	double alpha;        /* inner-loop (task) learning rate, SGD */
	double beta;         /* meta learning rate (Adam on the head) */
	int inner_steps;     /* SGD steps of the inner loop */
	int tasks_per_batch; /* few-shot tasks per meta-step */
	int ways, shots;     /* N dataset tasks per few-shot task, K support rows each */
	int queries;         /* query rows per dataset task */
	int epochs;          /* supervised pre-training epochs; 0: enough for
	                        META_MINSTEPS steps, at least META_EPOCHS */
	int meta_steps;      /* meta-steps (outer updates) */
	int finetune_steps;  /* the model's update later: SGD steps from the
	                        meta-learnt head (0: inner_steps, the
	                        adaptation MAML trained the head for) */
	int heads;           /* the update's ensemble of fine-tuned heads */
	uint64_t seed;
} meta_opts;

/* alpha 0.01, beta 0.001, 5 inner steps, 4 tasks per batch, 3 ways, 4
 * shots, 4 queries, epochs 0, 300 meta-steps, finetune 200, 5 heads, seed 1. */
void meta_opts_default(meta_opts *o);
/* TK_EINVAL naming the first option out of its range. */
int meta_opts_check(const meta_opts *o);

/* The dataset tasks few-shot tasks are drawn from: task t is rows first[t]
 * .. first[t] + n[t] - 1 of the data, of class cls[t] (its operator). */
typedef struct meta_tasks {
	int ntask;
	const int *first, *n, *cls;
} meta_tasks;

/* Progress: phase META_PRETRAIN reports each epoch's mean training loss
 * (loss; before unused), META_MAML each meta-step's mean query loss after
 * adaptation (loss) and before it (before). A callback that returns
 * non-zero stops the training (TK_EINTR). */
enum { META_PRETRAIN, META_MAML };
typedef struct meta_progress {
	int phase, step, total;
	double loss, before;
} meta_progress;
typedef int (*meta_cb)(void *ctx, const meta_progress *p);

/* Supervised pre-training (Algorithm 1, lines 1-5): a new meta model fit on
 * every row of train (MSE, Adam) for o->epochs epochs, reported through cb
 * (may be NULL). TK_EINVAL for rows that are not graph vectors or labels
 * that are not numbers; *out NULL on error. */
int meta_pretrain(const meta_opts *o, const cm_data *train, meta_cb cb, void *ctx,
                  cm_model **out);

/* MAML of m's head (Algorithm 1, lines 7-13) over few-shot tasks drawn
 * from t: each of o->tasks_per_batch tasks per meta-step takes o->ways
 * dataset tasks (of different classes where there are enough), o->shots
 * support and o->queries query rows of each; the head adapts on the
 * support rows with o->inner_steps SGD steps of o->alpha, and the mean
 * gradient of the query loss at the adapted heads moves the head by Adam
 * with o->beta. The model then keeps o->alpha, o->finetune_steps and
 * o->heads for its updates and is marked meta-trained. TK_EINVAL if m is
 * not a meta model, or fewer than o->ways tasks have o->shots + o->queries
 * rows; m is unchanged on error. */
int meta_maml(cm_model *m, const meta_opts *o, const cm_data *d, const meta_tasks *t,
              meta_cb cb, void *ctx);

/* Few-shot evaluation on the tasks of t: for each, the model's update on
 * shots random rows (the tuner's fine-tuning), then the MSE on the task's
 * other rows, before (*before) and after (*after) the update, averaged over
 * the tasks with more than shots rows (*ntask; NaN when none). m is
 * unchanged. */
int meta_eval(cm_model *m, const cm_data *d, const meta_tasks *t, int shots, uint64_t seed,
              double *before, double *after, int *ntask);

#endif
