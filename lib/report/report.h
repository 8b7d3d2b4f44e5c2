/*
 * report: what a run achieved, computed from the store for `tunekit report`:
 * tuning curves (the best throughput found so far after each trial and
 * against the seconds since the run started), how many trials and seconds
 * a run needed to reach 95% of the best throughput known for a task, a
 * comparison of runs on the same tasks, the models of the store, and SVG
 * line charts of curves written into a string buffer. Nothing here prints:
 * cmd/report.c formats the results as tables and writes the files.
 *
 * Definitions used throughout (and in man/tunekit-report.1):
 *   - throughput of a latency L for a task of F flops per call is F / L / 1e9
 *     GFLOPS, or 1 / L calls per second ("1/s") when F is 0 (imported tasks
 *     without a flops figure);
 *   - the curve of a task in a run has one point per measurement of that task
 *     in the run, in trial order; point k (1-based) holds the lowest valid
 *     latency among the task's first k measurements of the run ("best so
 *     far"), and the seconds since the run started at that measurement
 *     (`at - started`, which also holds for replayed runs);
 *   - the best known latency of a task is the lowest valid median of all the
 *     store's measurements of that task on that hardware, from any run;
 *   - trials (seconds) to 95% is the first point whose best-so-far
 *     throughput is at least 95% of the best known throughput, i.e. whose
 *     best-so-far latency is at most best known / 0.95 (relative rounding of
 *     1e-9 allowed); never reached is reported as -1;
 *   - an aggregate curve treats several tasks as one workload with weights
 *     (a network, or the tasks every compared run covered, weight 1): after
 *     each measurement of the run its latency is the weighted sum of the
 *     tasks' best latencies so far, defined once every task has a valid
 *     measurement; its trials count every measurement of the run; its
 *     flops are the weighted sum of its tasks' (a reorder, layout_transform,
 *     adds none), and it is in 1/s if a task's flops are unknown.
 */
#ifndef TK_REPORT_H
#define TK_REPORT_H

#include <stdint.h>

#include "store/store.h"
#include "task/network.h"
#include "util/util.h"

/* One point of a curve. */
typedef struct rp_point {
	int trial;        /* 1-based: measurements so far (of the task; of the run for aggregates) */
	double seconds;   /* seconds since the run started, at this measurement */
	double latency;   /* best-so-far latency in seconds; < 0 if none valid yet */
	double thr;       /* its throughput (GFLOPS or 1/s); 0 if none valid yet */
} rp_point;

/* The curve of one task (or aggregate) in one run. */
typedef struct rp_curve {
	char *task;            /* canonical task key, or the aggregate's name */
	int64_t task_id;       /* 0 for aggregates */
	int64_t hardware_id;   /* of the task's first measurement; 0 for aggregates */
	double flops;          /* per call (weighted sum for aggregates); 0: throughput in 1/s */
	int n;                 /* points */
	rp_point *pt;          /* pt[0..n) */
	double best_known;     /* best known latency (see above); < 0 if none */
	int trials_to_95;      /* trial of the first point at 95%; -1 if never */
	double seconds_to_95;  /* its seconds; -1 if never */
	double final_latency;  /* best latency of the run; < 0 if none valid */
	double final_thr;      /* its throughput; 0 if none valid */
	int nmissing;          /* aggregates: tasks the run has no measurement of */
} rp_curve;

/* One measurement of a run, reduced to what curves need. */
typedef struct rp_step {
	int curve;        /* index into rp_run.curve */
	double seconds;   /* at - started */
	double latency;   /* valid median in seconds; < 0 if invalid */
} rp_step;

/* A run's curves: one per task, in order of the task's first measurement. */
typedef struct rp_run {
	int64_t id;
	double started;
	char method[64];  /* run.method ("" when built from records alone) */
	int nstep;
	rp_step *step;    /* every measurement of the run in trial order */
	int ncurve;
	rp_curve *curve;
} rp_run;

/* The unit of a curve's throughput: "GFLOPS", or "1/s" when flops is 0. */
const char *rp_unit(const rp_curve *c);
/* Throughput of latency lat (> 0) for a task of flops per call. */
double rp_throughput(double flops, double lat);

/* Build the curves of run id (started at `started`, Unix seconds) from its
 * records aRec[0..nRec) in trial order (store_run_records order; only task,
 * task_id, hardware_id, flops, valid, median and at are read). The best
 * known latency of each task is first its best in this run; refine it with
 * rp_curve_set_best(). On success *out is a new run the caller frees with
 * rp_run_free(); TK_ENOMEM otherwise, with *out = NULL. */
int rp_run_build(int64_t id, double started, const store_rec *aRec, int nRec, rp_run **out);
void rp_run_free(rp_run *r); /* NULL is allowed */

/* Set the best known latency of c to the lower of best (ignored if <= 0)
 * and c's own final latency, and recompute trials/seconds to 95%. */
void rp_curve_set_best(rp_curve *c, double best);

/* Load run id from the store: its records, curves and each task's best
 * known latency on its hardware across all runs. TK_ENOTFOUND if there is
 * no such run; store errors as store.h. The caller frees *out. */
int rp_run_load(tk_store *s, int64_t id, rp_run **out);

/* The index of the curve of task (canonical key) in r, or -1. */
int rp_run_find(const rp_run *r, const char *task);

/* Fill *out with the aggregate curve named name of the n tasks aTask with
 * weights aWeight (NULL: all 1) in run r: one point per measurement of the
 * run. Its flops are the weighted sum of the tasks' flops, or 0 if any task
 * has none; its best known latency is the weighted sum of the tasks' best
 * known latencies (none if a task is missing). Tasks without measurements
 * in r are counted in nmissing and leave the curve without values. The
 * caller frees with rp_curve_clear(). TK_ENOMEM or TK_OK. */
int rp_aggregate(const rp_run *r, int n, const char *const *aTask, const double *aWeight,
                 const char *name, rp_curve *out);
void rp_curve_clear(rp_curve *c);

/* The aggregate curve of network net in run r, named "network:NAME", with
 * the network's tasks and weights (see rp_aggregate). */
int rp_network_curve(const rp_run *r, const tk_network *net, rp_curve *out);

/* ---- comparison ------------------------------------------------------- */

/* One task (or the summary) across the compared runs. */
typedef struct rp_cmp_row {
	const char *task;      /* points into a run's curve, or the summary name */
	const char *unit;      /* "GFLOPS" or "1/s" */
	double best_known_thr; /* throughput of the best known latency; 0 if none */
	int ncovered;          /* runs with measurements of the task */
	const rp_curve **cell; /* [nrun]: the task's curve in each run, NULL if absent */
	double *ratio;         /* [nrun]: final_thr / the first run's; < 0 if undefined */
} rp_cmp_row;

typedef struct rp_compare {
	int nrun;
	const rp_run *const *run; /* the runs compared, as given */
	int nrow;
	rp_cmp_row *row;       /* tasks in order of first appearance (first run first), then the summary */
	rp_curve *summary;     /* [nrun]: each run's aggregate curve (the last row's cells) */
	int ncommon;           /* tasks of the summary (common tasks, or the network's) */
} rp_compare;

/* Compare runs aRun[0..nRun) (nRun >= 1; the first is the reference of the
 * ratios). The last row is the summary: the aggregate, named "all", of the
 * tasks every run covered, each with weight 1; or, when net is not NULL,
 * the network's tasks with its weights, named "network:NAME". The runs must
 * outlive *out; free with rp_compare_free(). TK_ENOMEM or TK_OK. */
int rp_compare_build(const rp_run *const *aRun, int nRun, const tk_network *net,
                     rp_compare **out);
void rp_compare_free(rp_compare *c); /* NULL is allowed */

/* ---- models ------------------------------------------------------------ */

/* The metrics `tunekit train` stores in a model's meta text, in this order. */
#define RP_MODEL_NKEY 13
extern const char *const rp_model_keys[RP_MODEL_NKEY];

typedef struct rp_model {
	int64_t id, hardware_id;    /* hardware_id 0 if NULL */
	const char *kind;
	double created;             /* Unix seconds */
	const char *val[RP_MODEL_NKEY]; /* value of rp_model_keys[i], NULL if absent */
} rp_model;
/* Callback: 0 continues, non-zero stops (returned by rp_models). Strings
 * are valid only during the call. */
typedef int (*rp_model_cb)(void *ctx, const rp_model *m);

/* Every model of the store in id order, with the metrics parsed from its
 * meta text ("key value" or "key=value" lines; other keys are ignored).
 * Store errors as store.h. */
int rp_models(tk_store *s, rp_model_cb cb, void *ctx);

/* Parse one meta text into aVal[RP_MODEL_NKEY] (pointers into buf, which is
 * modified in place: a writable copy of the text). Missing keys are NULL. */
void rp_model_meta_parse(char *buf, const char **aVal);

/* ---- loss curves of training runs ------------------------------------------ */

/* The loss curve of a run of `tunekit pretrain-meta`, from its run log: one
 * point per epoch of the supervised pre-training (its mean training loss)
 * and per MAML meta-step (the mean query loss after adapting, and before),
 * pre-training first, each in step order. before is NaN where not logged. */
enum { RP_LOSS_PRETRAIN, RP_LOSS_MAML };
typedef struct rp_loss_pt {
	int phase, step;
	double loss, before;
} rp_loss_pt;
typedef struct rp_loss {
	int n;
	rp_loss_pt *pt;
} rp_loss;
/* Read run's curve into *out (empty for a run that logged none); free it
 * with rp_loss_free. Store errors as store.h. */
int rp_loss_load(tk_store *s, int64_t run, rp_loss *out);
void rp_loss_free(rp_loss *l);

/* ---- invalid configurations per batch (invalid.c) ------------------------- */

/* Batch k (1-based) of a run: its trials first .. first + trials - 1 of
 * the run's measurements in trial order, and how many were invalid. */
typedef struct rp_batch {
	int batch, first, trials, invalid;
	double share;          /* invalid / trials */
} rp_batch;

/* The batches of size trials of run r (the last may be short): *out a
 * malloc'd array of *n. TK_EINVAL for size < 1, TK_ENOMEM. */
int rp_invalid_batches(const rp_run *r, int size, rp_batch **out, int *n);
/* Append to sb an SVG chart of the invalid share against the batch, one
 * line per run aRun[i] with batches aBatch[i][0..aN[i]). TK_OK or TK_ENOMEM. */
int rp_invalid_svg(tk_sb *sb, const int64_t *aRun, const rp_batch *const *aBatch, const int *aN,
                   int nrun);

/* ---- SVG charts ---------------------------------------------------------- */

/* One line of a chart: points (x[i], y[i]), i < n, in increasing x. With
 * step set the line holds each y until the next x (a best-so-far curve),
 * and the last y until xend when xend is beyond the last x (the end of the
 * run). Points with non-finite or negative y, and (on a log axis) x <= 0,
 * are skipped. The last drawn point gets a dot, so that a series of one
 * point is visible. */
typedef struct rp_series {
	const char *label;
	int n;
	const double *x, *y;
	int step;
	double xend;
} rp_series;

typedef struct rp_chart {
	const char *title, *xlabel, *ylabel;
	int logx;                  /* logarithmic x axis */
	int nseries;
	const rp_series *series;   /* each drawn as one <path> */
} rp_chart;

/* Append to sb a standalone SVG 1.1 document holding the charts
 * aChart[0..nChart) side by side, each width x height pixels (RP_SVG_W x
 * RP_SVG_H by default), with axes, round-number ticks, labels, a title and
 * a legend in the corner of the plot that hides the fewest line segments.
 * Series i of every chart has the same colour and dash pattern.
 * Text is escaped. TK_ENOMEM if sb ran out of memory, else TK_OK. */
#define RP_SVG_W 800
#define RP_SVG_H 500
int rp_svg(tk_sb *sb, const rp_chart *aChart, int nChart, int width, int height);

/* One tuning curve to plot: the curve, its run, the seconds of the run's
 * last measurement (where the curve ends on a seconds axis), its method. */
typedef struct rp_plot_line {
	const rp_curve *curve;
	int64_t run_id;
	double run_end;
	const char *method; /* the run's, named in the legend (NULL or "": not) */
} rp_plot_line;

enum { RP_X_TRIALS = 1, RP_X_SECONDS = 2 };

/* Append to sb an SVG document of tuning curves aLine[0..n): a chart of the
 * best throughput so far against trials (xaxes & RP_X_TRIALS) and one
 * against seconds (xaxes & RP_X_SECONDS), side by side when both, each
 * RP_SVG_W x RP_SVG_H, the seconds axis logarithmic with logx. Curves are
 * steps, labelled "run ID: TASK" (just the run or just the task when the
 * other is the same for all). The y axis is GFLOPS, or 1/s when every
 * curve has no flops; mixing both plots throughput over best known. TK_OK
 * or TK_ENOMEM. */
int rp_plot_svg(tk_sb *sb, const rp_plot_line *aLine, int n, int xaxes, int logx);

/* Append text to sb with &, <, >, " and ' escaped as XML entities and
 * control characters other than tab and newline replaced by '?'. */
void rp_xml_escape(tk_sb *sb, const char *text);

/* Round tick positions for a linear axis over [lo, hi] (lo < hi): a step
 * of 1, 2 or 5 times a power of ten giving at most max ticks; fills
 * aTick[0..*n) (at most max) within [lo, hi] and returns the step. */
double rp_ticks(double lo, double hi, int max, double *aTick, int *n);

/* ---- layouts (layout.c) ----------------------------------------------- */

/* A network's estimate on one hardware: the sum of weight x best median
 * over the ntuned of its ntask tasks that have a valid record there. */
typedef struct rp_estimate {
	double latency;
	int ntuned, ntask;
} rp_estimate;

/* The estimate of net on hardware hw (> 0) into *out. TK_ENOMEM, or the
 * store's error. */
int rp_net_estimate(tk_store *st, int64_t hw, const tk_network *net, rp_estimate *out);

/* Which of the n estimates --layout auto runs: the smallest latency among
 * those with every task tuned (a partial sum is no estimate); -1 if none
 * is complete. */
int rp_layout_choose(const rp_estimate *e, int n);

#endif
