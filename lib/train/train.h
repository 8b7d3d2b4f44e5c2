/*
 * train: the one training pipeline of cost models: records from the store
 * -> feature vectors -> labels -> split by task -> fit -> metrics -> model
 * file and model table. `tunekit train` runs all of it; the tuner's
 * transfer learning builds its base models from a training set of the
 * history (tr_set_from_history, tr_part_build, cm_fit); the tuner's refits
 * normalise their labels with tr_normalise.
 *
 * Shapes: N = rows of a set or part, D = features per row.
 *
 * A training set holds rows in store order, the rows of a task contiguous;
 * each row keeps its latency and its throughput (FLOPs over latency, or
 * 1 over latency for tasks without FLOPs; 0 when invalid). Labels are
 * throughputs over the best of the row's task (tr_labels).
 */
#ifndef TK_TRAIN_H
#define TK_TRAIN_H

#include <stdint.h>

#include <signal.h>

#include "model/cost.h"
#include "model/meta.h"
#include "model/metrics.h"
#include "store/store.h"

typedef struct tr_task {
	int64_t id;          /* task id in the store (0 if unknown) */
	char *key;
	char *op;            /* operator (history sets), or NULL */
	uint64_t space;      /* history sets: sp_space_hash of its search space */
	int first, n;        /* rows first .. first+n-1 */
	int d;               /* longest feature vector of its rows */
	int holdout;         /* held out by tr_split */
	int valid;           /* a validation task of tr_split (not held out) */
	int head;            /* 0: the target hardware; k: auxiliary hardware k (tr_load) */
	double weight;       /* in metrics (occurrences in a network); 0 counts as 1 */
} tr_task;

typedef struct tr_set {
	int n, cap;          /* rows */
	int64_t *meas, *hw;  /* (N) measurement and hardware ids (0 if unknown) */
	int *task;           /* (N) index into tasks */
	double *lat;         /* (N) median seconds, -1 if invalid */
	float *thr;          /* (N) throughput, 0 if invalid */
	int *nx;             /* (N) feature length of the row */
	size_t *xoff;        /* (N) offset of its features in xbuf */
	float *xbuf;
	size_t xlen, xcap;
	int ntask, tcap;
	tr_task *tasks;
	int64_t nmissing;    /* rows asked for that have no features */
	int64_t missing[3];  /* the first of their measurement ids */
} tr_set;

/* A set starts zeroed; tr_set_free() frees what it holds and zeroes it. */
void tr_set_free(tr_set *ts);

/* ---- sources ---------------------------------------------------------- */

typedef struct tr_load_opts {
	int feat;                /* FEAT_* whose stored features the rows have */
	int64_t hardware;        /* 0: the hardware with the most such records */
	int64_t *ids;            /* only these measurements (sorted and
	                            deduplicated in place), or NULL: all */
	int nid;
	const int64_t *aux;      /* auxiliary hardware (multi-head models): their
	                            rows follow the target's, as tasks of head
	                            1..naux; not with ids */
	int naux;
} tr_load_opts;

/* What tr_load found, for the caller's messages. */
typedef struct tr_source {
	int64_t hw_id;
	char hw_key[640];
	int64_t hw_nrec;         /* records of the hardware */
	int64_t hw_nfeat;        /* ... with features (every one when ids are given) */
	int ncand;               /* hardware targets with such records */
	int chosen;              /* hw_id was chosen as the one with the most */
} tr_source;

/* The feature kind a model of kind k trains on when none is asked for,
 * into *feat: the kind's own (cm_feature), or knob when no record in st
 * has features of the kind's own but some have knob features and k takes
 * knob (the records of imported tasks, which have no loop nest). Errors of
 * the store only. */
int tr_default_feature(tk_store *st, const cm_kind *k, int *feat);

/* The rows of one hardware that have stored features of o->feat (see
 * 'tunekit extract-features'), then those of each auxiliary hardware.
 * TK_EINVAL with a message for: no records, ids not in the store or
 * without features, a hardware without records or features, an auxiliary
 * hardware that is the target or given twice. On error ts may hold rows;
 * free it either way. */
int tr_load(tk_store *st, const tr_load_opts *o, tr_set *ts, tr_source *src);

/* The records of hardware hw_key in hs with features of kind feat
 * extracted from their configurations: the records of template tasks, and
 * of imported tasks whose search space hs keeps (Kernel Tuner, AutoTVM;
 * knob features only), whose configurations parse (others are skipped).
 * Each task's op (template tasks) and space hash are set. TK_OK with an
 * empty set if there are none. */
int tr_set_from_history(tk_store *hs, const char *hw_key, int feat, tr_set *ts);

/* ---- labels and split --------------------------------------------------- */

/* y[i] = thr[i] / max(thr) (0 when no throughput is positive). */
void tr_normalise(const float *thr, int n, float *y);
/* Labels of every row, normalised per task, into y[ts->n]. */
void tr_labels(const tr_set *ts, float *y);

typedef struct tr_split_opts {
	double holdout;          /* fraction of the tasks held out, 0: none */
	const char *const *tasks; /* or these tasks (keys in any spelling) */
	int ntasks;
	uint64_t seed;
	const char *const *valid; /* validation tasks (keys in any spelling) */
	int nvalid;
} tr_split_opts;

/* What tr_split makes of a row (hold[]). */
enum {
	TR_TRAIN = 0,            /* trained on */
	TR_HOLD = 1,             /* held out: measured, never trained on */
	TR_OUT = 2,              /* neither (an auxiliary head's row of a
	                            held-out task; a row tr_subsample drops) */
	TR_VALID = 3,            /* of a validation task: the fit stops early
	                            on the target's, then the model is fit
	                            again with them (tr_fit_eval) */
};

/* Mark held-out rows in hold[ts->n] (TR_HOLD held out, TR_TRAIN trained
 * on) and their tasks' holdout flags: whole tasks, chosen by a seeded
 * shuffle or named; with one task and a fraction, rows at random instead
 * (*by_rows = 1). A task held out is held out on every head, and the rows
 * of auxiliary heads of held-out tasks are neither trained on nor measured
 * (TR_OUT). The rows of the validation tasks o->valid that are not held
 * out get TR_VALID (every head) and their tasks' valid flags. *nhold
 * receives the held-out rows of the target. TK_EINVAL for a named task
 * without rows, one row to split, or nothing left to train on. */
int tr_split(tr_set *ts, const tr_split_opts *o, char *hold, int *nhold, int *by_rows);

/* Keep a seeded random share frac (0 < frac <= 1; at least one row) of the
 * target's training and validation rows (sel TR_TRAIN or TR_VALID, head
 * 0); the others get TR_OUT, out of the fit and the metrics. *nkept
 * receives the target rows kept. */
void tr_subsample(const tr_set *ts, char *sel, double frac, uint64_t seed, int *nkept);

/* Active selection (train/select.c): keep a share frac (0 < frac <= 1) of
 * the target's training and validation rows (sel TR_TRAIN or TR_VALID,
 * head 0), chosen as TCL's RDU sampler chooses programs to measure: per
 * task round(frac x its rows), at least one, by representativeness,
 * diversity and the disagreement of bagged regressors fit on the rows
 * chosen first, never looking at the labels of rows not chosen; the
 * others get TR_OUT. Deterministic for a seed. *nkept receives the rows
 * kept. TK_ENOMEM, or the regressors' error; on error sel is unchanged. */
int tr_select_active(const tr_set *ts, char *sel, double frac, uint64_t seed, int *nkept);
/* The share F of a --select spec "active:F" into *frac; TK_EINVAL with a
 * message for any other spec or F outside (0, 1]. */
int tr_select_parse(const char *spec, double *frac);

/* ---- parts, fit and metrics ------------------------------------------------ */

/* The rows i with sel[i] == want, features padded to d; groups by task. */
typedef struct tr_part {
	int n, d, ngroup, ntask, nhead;
	float *x;                /* (N, D) */
	float *y;                /* (N) labels */
	float *p;                /* (N) predictions (tr_eval) */
	double *lat;             /* (N) */
	int64_t *meas;           /* (N) measurement id (0 if unknown) */
	int64_t *task;           /* (N) task index */
	int *head;               /* (N) head of the row's task */
	double *weight;          /* (N) weight of the row's task */
	unsigned *group;         /* (ngroup) */
} tr_part;

int tr_part_build(const tr_set *ts, const float *y, const char *sel, int want, int d, tr_part *pt);
void tr_part_free(tr_part *pt);
/* The part as a model's data (heads only when a row is not of head 0). */
cm_data tr_part_data(const tr_part *pt);
/* Predict the part (into pt->p) and measure the predictions. */
int tr_eval(cm_model *m, tr_part *pt, cm_metrics *out);
/* The metrics of the predicted part's rows of the tasks t with weight[t] >
 * 0 (indexed by task, as pt->task), weighted so: one network's share of a
 * holdout of several. out->n = 0 when no row is of such a task. */
int tr_eval_tasks(const tr_part *pt, const double *weight, cm_metrics *out);

#define TR_EARLY_STOP 50     /* rounds without improvement on the holdout */

/* A fit of a model on a split set, and its metrics. */
typedef struct tr_fit {
	tr_part train, hold;
	tr_part train0;          /* the target's training rows, for metrics */
	tr_part valid;           /* the target's validation rows (n 0: none) */
	int d;
	cm_model *m;
	cm_metrics mtrain, mhold;
	cm_metrics mvalid;       /* of the first fit, the one that stopped on them */
	int validity;            /* a validity classifier (cm_params.validity): */
	cm_class_metrics ctrain, chold, cvalid; /* its metrics (then those of
	                            mtrain, mhold and mvalid compare probabilities
	                            with throughputs and are not written) */
	double seconds;          /* of the fit (both, with validation rows) */
} tr_fit;

/* Fit a model of kind k (parameters p) on the rows of ts with hold
 * TR_TRAIN and measure it on the target's rows of both sides (TR_TRAIN and
 * TR_HOLD). Early stopping (after TR_EARLY_STOP rounds or epochs without
 * improvement): with validation rows (TR_VALID) on the target's of them,
 * after which the model is fit again on the training and validation rows
 * together, with the rounds the first fit kept (its "rounds" meta key; the
 * kind's default if it has none), and measured on both as training rows;
 * else on the held-out rows, if any, unless the kind is of CM_EPOCHS.
 * Free f with tr_fit_free() either way. */
int tr_fit_eval(const cm_kind *k, const cm_params *p, const tr_set *ts, const char *hold,
                tr_fit *f);
void tr_fit_free(tr_fit *f);

/* Write the fitted model as a model file at path and into st's model table
 * (meta: the model's own keys, feature kind and length, hardware, rows,
 * seed, time, tree_method if any, and the metrics as train_* and
 * holdout_*; a validity classifier has label=validity and the
 * classification metrics instead). *model_id receives the store's id. */
int tr_save(tk_store *st, const char *path, const tr_fit *f, const tr_source *src, int feat,
            const cm_params *p, int64_t *model_id);
/* The part of tr_save after the meta: model m with meta mm (every key, the
 * model's own included) written as a model file at path and into st's
 * model table for hardware hw_id. */
int tr_write_model(tk_store *st, const char *path, cm_model *m, const mf_meta *mm,
                   int64_t hw_id, int64_t *model_id);

/* ---- meta-training (tunekit pretrain-meta) ---------------------------------- */

typedef struct tr_meta_opts {
	meta_opts mo;            /* MAML's settings (model/meta.h); mo.seed the seed */
	int64_t hardware;        /* 0: the hardware with the most graph records */
	const char *const *hold; /* tasks held out (keys in any spelling); each
	                            must have records */
	int nhold;
	const char *const *hold_net; /* tasks of held-out networks: those with
	                            records are held out, the others ignored */
	int nhold_net;
	double pretrain_share;   /* the share of the training tasks (0 to 1) the
	                            supervised pre-training sees; with less than
	                            1, MAML draws its tasks from the others */
	const char *path;        /* the model file to write */
	const char *argv;        /* the command line, for the run */
} tr_meta_opts;

typedef struct tr_meta_result {
	tr_source src;
	int ntask, nrow;         /* tasks and rows meta-trained on */
	int npre;                /* rows pre-trained on */
	int nelig;               /* ... of which tasks with shots + queries rows */
	int nhold_task, nhold_row;
	int most;                /* the most rows any training task has */
	double pretrain_s, maml_s;
	int epochs;              /* of the pre-training */
	double pretrain_loss;    /* the last epoch's */
	double meta_first, meta_last; /* mean query loss over the first and last
	                            tenth of the meta-steps */
	/* the few-shot evaluation (meta_eval with mo.shots): on the training
	 * tasks and on the held-out ones (NaN and 0 tasks when none) */
	double train_before, train_after, hold_before, hold_after;
	int train_ntask, hold_ntask;
	int64_t run_id, model_id;
} tr_meta_result;

typedef struct tr_meta_hooks {
	void *ctx;
	/* after each epoch and meta-step (may be NULL) */
	void (*progress)(void *ctx, const meta_progress *p);
	volatile sig_atomic_t *stop; /* set asynchronously to stop (TK_EINTR) */
} tr_meta_hooks;

/* MetaTune's meta-training on a dataset store: the rows with graph
 * features of one hardware (tr_load), labels normalised per task, the held
 * out tasks put aside; supervised pre-training on the other tasks' rows,
 * then first-order MAML of the head over few-shot tasks of them
 * (meta_maml); the few-shot evaluation on the training and held-out tasks;
 * the model file at o->path and the store's model table. The run is a row
 * of the run table (method "pretrain-meta") whose log holds the loss of
 * each epoch ("pretrain_loss") and meta-step ("meta_loss", and
 * "meta_loss_before" its tasks' query loss before adaptation), round = the
 * epoch or step. TK_EINVAL, before anything is written, for a dataset
 * without graph features, a held-out task without records, or fewer than
 * mo.ways training tasks with mo.shots + mo.queries rows (the message gives
 * the most any task has); TK_EINTR when stopped through hooks (the run
 * stays unfinished, nothing else is written). */
int tr_pretrain_meta(tk_store *st, const tr_meta_opts *o, const tr_meta_hooks *h,
                     tr_meta_result *res);

/* The same with extra keys (may be NULL) added to the meta. */
int tr_save_meta(tk_store *st, const char *path, const tr_fit *f, const tr_source *src, int feat,
                 const cm_params *p, const mf_meta *extra, int64_t *model_id);

/* ---- transfer ---------------------------------------------------------------- */

/* A way of transfer: a row of tr_methods[]. */
typedef struct tr_method {
	const char *name;
	const char *summary;
	int adapt;               /* the CM_ADAPT_* way the model's row must have, or 0 */
	int scratch;             /* 1: a new model of the source's kind and features,
	                            fit on the target's rows alone (the baseline) */
} tr_method;

extern const tr_method tr_methods[];
extern const int tr_nmethods;
/* The method named name; TK_EINVAL "unknown transfer method 'x' (a, b)"
 * if there is none. */
int tr_method_lookup(const char *name, const tr_method **out);

typedef struct tr_transfer_opts {
	const tr_method *method;
	const char *hardware;    /* the target: a hardware id or key */
	int64_t *ids;            /* only these measurements (sorted in place), or NULL */
	int nid;
	double fraction;         /* adapt on this share of the target's records
	                            (0 < fraction <= 1), drawn at random */
	int64_t budget;          /* and on at most this many; 0: no limit */
	uint64_t seed;
	int rounds;              /* scratch: the kind's rounds or epochs, 0: default */
	cm_adapt_opts adapt;     /* its method is set from method */
	void (*progress)(void *ctx, int done, int total); /* as cm_params' */
	void *progress_ctx;
} tr_transfer_opts;

typedef struct tr_transfer {
	mf_meta src_meta;        /* the source model file's header */
	int feat;                /* its feature kind */
	tr_set ts;               /* the target's records */
	tr_source src;           /* the target hardware */
	tr_fit f;                /* f.m: the adapted model; f.train: the rows it
	                            adapted on, f.hold: the target's other rows,
	                            with their metrics (f.mtrain, f.mhold) */
	cm_metrics msource;      /* the source model as it was, on f.hold (on
	                            f.train when nothing is held out) */
	cm_adapt_info info;
} tr_transfer;

/* The feature kind (FEAT_*) and length *d that the header m of the model
 * file at path names; TK_EINVAL naming path if it names none this tunekit
 * knows or another version of the features than it extracts, or if it is
 * a validity model (label validity: it scores validity, not performance). */
int tr_model_features(const char *path, const mf_meta *m, int *feat, int *d);

/* Read the model file at model_path, check that o->method can transfer
 * its kind, load the target's records that have features of the model's
 * kind (tr_load; feature kind, version and length must match the
 * model's), keep a random share of them to adapt on and the rest to
 * measure on, measure the source model, adapt it (or fit the scratch
 * baseline) and measure the result. Writes nothing. TK_EINVAL with a
 * message for a method that cannot transfer the model, a hardware without
 * records, features that do not match, too few records to adapt on; as
 * cm_read for the model file, but TK_EINVAL for a file that is not a
 * model (rather than TK_ECORRUPT, which is the store's). Free t with tr_transfer_free() either way. */
int tr_transfer_run(tk_store *st, const char *model_path, const tr_transfer_opts *o,
                    tr_transfer *t);
void tr_transfer_free(tr_transfer *t);
/* Write the adapted model as tr_save does, with the keys transfer_method,
 * source_hardware and (for a ticket) transfer_trained in its meta. */
int tr_transfer_save(tk_store *st, const char *path, const tr_transfer *t,
                     const tr_transfer_opts *o, int64_t *model_id);

#endif
