/*
 * tune: the learned tuning loop, AutoTVM's model-based tuner, over one task
 * or a whole network under one budget.
 *
 * Per task (tuner.c), AutoTVM's ModelBasedTuner: trials come in plans of
 * plan_size configurations found by the search strategy on the cost model;
 * the last epsilon share of each plan is random; configurations already
 * measured are skipped; the model is refit whenever plan_size new records
 * have arrived. Before the first fit everything is random. Strategies:
 * the searches of search/search.h (sr_kinds[]: sa anneals on the model, or
 * without one on the measured throughput itself) and the cost models of
 * model/cost.h (cm_kinds[]; a model that takes a base model can start from
 * one trained on history, whose weight decays as 1/2^(n/64)). A trained
 * model of a file plans from the first trial, adapted to each task's
 * records, and a model fitted from scratch beside it takes over the plans
 * while it ranks the new measurements better (guard.c).
 *
 * Over several tasks (run.c): one round of `round` trials per task in
 * turn, then the Ansor task scheduler's gradient rule picks the task whose
 * weighted latency is expected to fall fastest; the estimated network
 * latency is sum(weight * best latency).
 *
 * Measurements come from a measurer: the real one (compile, run, check on
 * this CPU) or a replayed dataset (another store's records looked up by task
 * and configuration; configurations absent from it are unmeasurable). Real
 * measurements are bounded (tn_opts.bound): a trial already K times slower
 * than its task's best after one timed repeat is timed no further, and its
 * record, marked bounded, is never a best nor confirmed. Every
 * batch is stored through a record session; an interrupted run keeps its
 * records and can be resumed (its options are kept in run.params).
 */
#ifndef TK_TUNE_H
#define TK_TUNE_H

#include <signal.h>
#include <stdint.h>

#include "measure/measure.h"
#include "model/cost.h"
#include "search/search.h"
#include "store/store.h"

/* ---- controllers (control.c) -------------------------------------------
 *
 * The controllers of what a job measures (--controller): a row of
 * tn_ctls[] each, a name, a summary, flags and hooks a job calls per task
 * (on lib/tune's own job and task, tune_int.h); NULL hooks are not
 * called. Each returns TK_OK or an error that ends the job.
 * `tunekit help controllers` prints the table. */
struct tn_job;
struct tn_task;
enum {
	TN_CTL_MODEL = 1 << 0,   /* needs a model and a search that plans on it */
	TN_CTL_ANSWERS = 1 << 1, /* the model answers trials, which are not records:
	                            its runs cannot be resumed, and the trials of
	                            each kind go to the run log */
};
typedef struct tn_ctl {
	const char *name, *summary;
	unsigned flags;          /* TN_CTL_* */
	/* before a measured batch c[0..n) of t */
	int (*before)(struct tn_job *J, struct tn_task *t, const sp_config *c, int n);
	/* after it was stored and learnt from */
	int (*after)(struct tn_job *J, struct tn_task *t);
	/* in place of measuring once t->predicting is set: a batch of up to
	 * want trials the model answers (*got of them, counted in J->used) */
	int (*answer)(struct tn_job *J, struct tn_task *t, int want, int *got);
	/* after the budget */
	int (*end)(struct tn_job *J, struct tn_task *t);
} tn_ctl;
extern const tn_ctl *const tn_ctls[]; /* "none" first */
extern const int tn_nctls;

/* The controller of what a job measures and its options. */
typedef struct tn_ctl_opts {
	int kind;                 /* a row of the controller table (control.c):
	                             0 "none", 1 "moses": Moses' adaptive
	                             controller */
	double cv;                /* moses: stop measuring a task when the CV of
	                             the model's mean predictions over its last
	                             batches is under this (0.1) */
	double share;             /* measure at most this share of a task's
	                             trials (0.5) */
	int batches;              /* the CV is over this many measured batches (4) */
	int top;                  /* measure the best this many predicted
	                             configurations of each task at the end (8) */
} tn_ctl_opts;

typedef struct tn_opts {
	int64_t trials;           /* total budget of measurements */
	double time_budget;       /* seconds (simulated when replayed) for this
	                             invocation, checked between batches; 0: none */
	char model[16];           /* a name of cm_kinds[] */
	char search[16];          /* a name of sr_kinds[] */
	char feature[16];         /* a name of feat_kind_name(), or "": the one
	                             the model reads on each task (cm_feature) */
	int objective;            /* TN_RANK (pairwise) or TN_REG (squared error) */
	int plan_size;            /* 64 */
	double epsilon;           /* 0.05 */
	int diversity;            /* 0: off; else candidates = diversity * plan_size */
	int64_t early_stop;       /* per task, trials without improvement (0: off) */
	int batch;                /* configurations built and stored together */
	int round;                /* trials per scheduling round (networks) */
	uint64_t seed;
	sr_sa_opts sa;
	int xgb_rounds;           /* 0: xgb's default with early stopping */
	double bo_kappa;          /* bo: the deviation's weight in the UCB (2) */
	int confirm;              /* after the budget, measure the fastest this
	                             many unbounded configurations of each task
	                             twice more (not in replays); 0: off */
	double bound;             /* bounded timing: a trial whose first timed
	                             repeat takes more than bound x its task's best
	                             latency so far is timed no further (its record
	                             is marked bounded); 0: off, else at least 1.
	                             Not in replays nor the confirmation */
	int cover;                /* until each loop order (value of the order
	                             knob) has this many trials, plans give it
	                             up to plan_size / 8 slots; 0: off */
	int regtile;              /* samplers draw register tiles of at most this
	                             many vectors (sp_limit_regtile); -1: the
	                             target's registers minus 2; 0: no limit.
	                             Not applied to replayed tasks */
	char transfer_from[512];  /* history store (tn_stores.history), "" for none */
	char model_file[512];     /* a trained model (tn_stores.model) that scores
	                             candidates, adapted (adapt) and guarded
	                             (guard); "" for none */
	int other_model;          /* with a model_file that names the operators it
	                             was trained on (a meta model): the model of
	                             the tasks of other operators, on itervar
	                             features (knob without a program): 1 + its
	                             row of cm_kinds[] ("none": the file's model
	                             for all), or 0 "auto": xgb, or rfei for a
	                             search that needs a deviation */
	int adapt;                /* with model_file: 0 (never refit), or 1 + the
	                             row of tr_methods[] (moses, finetune,
	                             xgb-warm) that adapts a copy of it to each
	                             task's records at every refit, or TN_ADAPT_AUTO
	                             (the default): the kind's cheap way,
	                             xgb-warm for boosted trees, finetune for
	                             networks, none for a kind that has neither */
	int guard;                /* with model_file: 1 (the default) also fit a
	                             model from scratch on each task's records and
	                             plan on it while it ranks the new batches
	                             better (guard.c); 0: the file's model alone */
	char transfer_hw[256];    /* its hardware (key or id) to learn from, ""
	                             for the target's own (the same CPU at another
	                             thread count has another key) */
	char replay[512];         /* dataset store (tn_stores.replay), "" for real
	                             measurement */
	char replay_hw[256];      /* dataset hardware key or id, "" to choose */
	int prior;                /* 1: each task starts from its earlier records
	                             on the target (tune --until): never measured
	                             again, in the model's data, not in the budget */
	int replay_pool;          /* 1: search only the configurations the
	                             dataset measured (a sampled dataset) */
	char network[256];        /* network name or file, "" if tasks given */
	char shard[32];           /* "I/K": tune only share I of K of the tasks
	                             (tk_shard) with the same share of the
	                             budget; "" for all of them */
	tn_ctl_opts ctl;          /* the controller of what is measured */
	double alpha;             /* ML2Tuner (a model with CM_HIDDEN): (alpha + 1) x
	                             batch candidates pass V and are compiled; A picks
	                             the batch among them (1) */
	int ml2_stages;           /* its stages besides P: TN_ML2_VA (default),
	                             TN_ML2_V or TN_ML2_A (the ablations) */
	ms_opts ms;               /* real measurement options */
} tn_opts;

enum { TN_RANK, TN_REG };                    /* tn_opts.objective */
#define TN_ADAPT_AUTO (tr_nmethods + 1)     /* tn_opts.adapt: the kind's way */

/* The default bound of bounded timing (tn_opts.bound). A kernel that shares
 * its core with one other runnable process takes about twice its time, so a
 * bound of 2 could stop the timing of a true contender on a busy machine;
 * at 3 it takes more than that to mistake one, and the candidates far from
 * the best, where most of a tune's timed seconds go, are still cut short. */
#define TN_BOUND 3.0
enum { TN_ML2_VA, TN_ML2_V, TN_ML2_A };      /* tn_opts.ml2_stages */

/* Defaults: xgb, sa, the model's features, rank, plan 64, epsilon 0.05, batch 16, regtile -1,
 * confirm 8, bound TN_BOUND, cover 16, controller none (cv 0.1, share 0.5, 4 batches, top 8). */
void tn_opts_default(tn_opts *o);

/* The options described once (options.c): a row per field of tn_opts,
 * with its key in run.params, tune's command-line flag (NULL: set through
 * the common or measurement options), type, accepted range of numbers and
 * help line. An option of type TN_ENUM is an int field whose values 0, 1,
 * ... have names (options.c): the text given and stored is the name,
 * parsed once into the value. */
enum { TN_INT, TN_I64, TN_U64, TN_DBL, TN_STR, TN_ENUM };
enum {
	TN_KEEP = 1,              /* a resumed run keeps its own value */
	TN_OFF0 = 2,              /* a number: 0 (off) is accepted besides min..max */
};
typedef struct tn_optdesc {
	const char *key, *flag;
	int type;
	size_t off, size;             /* of the field in tn_opts */
	double min, max;              /* numbers only */
	const char *argh, *help;
	unsigned flags;
} tn_optdesc;
extern const tn_optdesc tn_optdescs[];
extern const int tn_noptdesc;
/* The row of a run.params key, or NULL. */
const tn_optdesc *tn_optdesc_find(const char *key);
/* Parse text into d's field of o; TK_EINVAL ("'x' is not an integer",
 * "... is out of range (a to b)", or what is wrong with a string that has
 * a form, as --shard I/K) leaves o unchanged. */
int tn_opt_set(tn_opts *o, const tn_optdesc *d, const char *text);
/* Every number of o within its row's range; TK_EINVAL naming the first
 * that is not. */
int tn_opts_check(const tn_opts *o);

/* Options as "key=value" lines (stored in run.params) and back, one line
 * per row of tn_optdescs and one "task=WEIGHT TASK" per task. The parse
 * leaves unknown keys alone and returns TK_EINVAL for bad values. */
char *tn_opts_format(const tn_opts *o, int ntask, char *const *task, const double *weight);
int tn_opts_parse(const char *text, tn_opts *o, int *ntask, char ***task, double **weight);

/* What a tuning job reports as it goes. */
typedef struct tn_status {
	const char *task;         /* current task */
	int64_t done, total;      /* trials */
	double best_gflops;       /* of the current task (1/s units if no flops) */
	int per_second;           /* best_gflops is in 1/s: the task has no flops */
	double invalid;           /* share of invalid trials so far */
	double elapsed, eta;      /* seconds */
	double net_latency;       /* estimated network latency, < 0 if not a network */
} tn_status;

typedef struct tn_hooks {
	void *ctx;
	/* after every batch (may be NULL) */
	void (*progress)(void *ctx, const tn_status *s);
	/* the stored records of a batch, for the record stream (may be NULL);
	 * a non-zero return aborts the job with that code */
	int (*records)(void *ctx, const char *task, double flops, int64_t hw_id, int64_t run_id,
	               int trial0, const ms_result *r, const int64_t *ids, int n);
	volatile sig_atomic_t *stop; /* set asynchronously to stop after a batch */
} tn_hooks;

/* Summary of a finished (or stopped) job. */
typedef struct tn_result {
	int64_t run_id, hw_id, trials, invalid;
	int64_t confirmed;        /* measurements of the confirmation, not in trials */
	int64_t bounded;          /* trials whose timing stopped at the bound */
	int64_t measured, predicted; /* the controller: trials measured (the final top
	                             configurations included) and trials the model
	                             answered; 0 without it */
	double seconds;
	double net_latency;       /* sum of weight x best latency per task, ranked as
	                             report best ranks (store_best); < 0 if some task
	                             has no valid record */
	int64_t history;          /* records the transfer base models learnt from */
	int other;                /* tasks of operators the model file was not
	                             trained on, tuned by o->other_model */
	char other_model[16];     /* its name */
	int64_t guard_batches;    /* measured batches of tasks with a guard (guard.c) */
	int64_t guard_scratch;    /* ... of them planned on the model from scratch */
	int guard_fell;           /* tasks whose last batch that model planned */
	char guard_model[16];     /* its name */
} tn_result;

/* The stores a job reads besides its own, opened (read-only) and closed
 * by the caller: lib/tune opens none. */
typedef struct tn_stores {
	tk_store *replay;         /* the dataset of o->replay, if it is set */
	tk_store *history;        /* the history of o->transfer_from, if it is set */
	cm_model *model;          /* the model of o->model_file, if it is set, of
	                             kind o->model on o->feature features */
	int model_d;              /* its feature length */
	char model_ops[256];      /* the operators it was trained on, comma-separated
	                             ("": any; o->other_model tunes the others) */
} tn_stores;

/* ---- the guard of a model file (guard.c) --------------------------------
 *
 * Which of two models ranks a task's new measurements better: the model of
 * the file and one fitted from scratch, each scoring a batch before it
 * learns from it. */
enum { TN_GUARD_FILE, TN_GUARD_SCRATCH };
#define TN_GUARD_MARGIN 0.05 /* the other model plans once it ranks better by more */
#define TN_GUARD_MIN_BATCHES 1 /* ... on this many batches at least: a batch of 16
                                  against itself and the 16 before it is 376
                                  pairs, and waiting for a second cost a
                                  wrong model's run a third more latency at
                                  200 trials (tests/bench/guided-replay.sh) */
typedef struct tn_guard {
	double agree[2];          /* pairs put in their measured order ([TN_GUARD_*]),
	                             a tie in score counting 1/2 */
	double pairs[2];          /* pairs of unequal measurements scored */
	int batches;              /* batches both scored */
} tn_guard;
/* Of the pairs i < j of n configurations with j >= from and y[i] != y[j]
 * (throughputs, 0 for an invalid one), add to *pairs how many there are
 * and to *agree how many score orders as y does (a tie in score: 1/2).
 * from 0: every pair; from k: those with one of the new ones k.. in them. */
void tn_rank_pairs(const float *score, const float *y, int n, int from, double *agree,
                   double *pairs);
/* Add n configurations scored by the file's model (sfile) and the one from
 * scratch (sscratch), measured y, of which from.. are a new batch. */
void tn_guard_add(tn_guard *g, const float *sfile, const float *sscratch, const float *y, int n,
                  int from);
/* The share of the pairs the model who (TN_GUARD_*) ordered right; -1
 * before it scored any. */
double tn_guard_rate(const tn_guard *g, int who);
/* The model to plan the next batch on, current planning this one: the
 * other once both scored TN_GUARD_MIN_BATCHES batches and the other's rate
 * is above current's by more than TN_GUARD_MARGIN; else current. */
int tn_guard_pick(const tn_guard *g, int current);

/* Tune the ntask tasks (weights: occurrences; NULL = all 1) with o on
 * target t (ignored when o->replay is set), storing into st, reading the
 * stores in (which must hold those o names); argv is the
 * command line kept with the run. resume_run > 0 continues that run: its
 * records are reloaded and the budget counts them. Returns TK_OK, TK_EINTR
 * when stopped through hooks->stop (the run stays unfinished and can be
 * resumed), TK_EINVAL for bad tasks or options (an unknown model or
 * search, one that needs what the other lacks), other errors.
 *
 * With o->shard "I/K" only the tasks of share I are tuned (task j when
 * j mod K = I - 1), on their share of the budget (task j's is
 * floor(trials (j+1) / ntask) - floor(trials j / ntask)) and with the
 * network's round (o->round, at most trials / ntask): while every task is
 * in its first round, K shards measure what one process would. The run
 * records all ntask tasks and the shard, so a resume tunes the same share.
 * A share with no task or no trials begins no run: TK_OK with
 * res->run_id 0. res->net_latency is -1 for a shard (part of a network). */
int tn_tune(tk_store *st, const tn_stores *in, const tk_target *t, int ntask, char *const *task,
            const double *weight, const tn_opts *o, const char *argv, int64_t resume_run,
            const tn_hooks *hooks, tn_result *res);

/* The trials of task (any spelling) already in the store on the hardware
 * with key hw_key, earlier runs included: its distinct configurations
 * measured there (a configuration timed again to confirm it counts once).
 * 0 when the store knows neither. TK_EINVAL for a malformed task. */
int tn_trials_stored(tk_store *st, const char *hw_key, const char *task, int64_t *n);

#endif
