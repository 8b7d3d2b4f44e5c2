/*
 * cmd: what every subcommand shares: the command table entry, the option
 * table and its parser, the common options, the context the dispatcher sets
 * up (store, terminal or pipe), and small output helpers (record streams,
 * tables, progress). Only cmd/ prints or exits.
 */
#ifndef TK_CMD_H
#define TK_CMD_H

#include <signal.h>
#include <stdint.h>
#include <stdio.h>

#include "measure/run.h"
#include "model/metrics.h"
#include "store/store.h"
#include "util/util.h"

/* Exit statuses (man/tunekit.1, EXIT STATUS). */
enum {
	EXIT_OK = 0,
	EXIT_FAIL = 1,     /* the work could not be done (I/O, target, out of memory) */
	EXIT_USAGE = 2,    /* bad command line or malformed input */
	EXIT_STORE = 3,    /* the store cannot be used: missing (to read), corrupt, too new, locked */
	EXIT_INTR = 130    /* interrupted; everything committed is kept */
};

/* ---- options ------------------------------------------------------------ */

enum { OPT_END, OPT_FLAG, OPT_STRING, OPT_INT, OPT_DOUBLE, OPT_LIST };

typedef struct opt {
	int type;
	const char *name;  /* long name without "--" */
	char sname;        /* short name, or 0 */
	void *value;       /* int*, const char**, int64_t*, double*, or opt_list* */
	const char *argh;  /* argument name in the help ("N", "PATH") */
	const char *help;
} opt;

/* A repeatable string option (OPT_LIST). */
typedef struct opt_list {
	int n;
	const char **v;
} opt_list;

#define OPT_END_ { OPT_END, NULL, 0, NULL, NULL, NULL }

/* Options every subcommand accepts. */
typedef struct common_opts {
	const char *db;       /* --db, default $TUNEKIT_DB, else tunekit.db */
	const char *target;   /* --target, default native */
	int64_t seed;         /* --seed, default 1 */
	int64_t jobs;         /* --jobs, default number of CPUs */
	int quiet;            /* -q */
	int help;             /* -h, --help */
} common_opts;

/* Measurement options of measure and tune, parsed into an ms_cli whose
 * fields start unset (ms_cli_init) and then applied over the command's own
 * starting point, so that a resumed tuning run keeps what it stored. */
typedef struct ms_cli {
	const char *cache_dir, *evaluator, *measure_lock, *clock, *overlap;
	int64_t number, repeat, warmup, microbatch;  /* INT64_MIN: unset */
	double min_repeat_ms, timeout, build_timeout, build_adapt, cv; /* NAN: unset */
	int flush;
} ms_cli;

#define MS_CLI_OPTIONS(m) \
	{ OPT_INT, "number", 0, &(m).number, "N", "calls per repeat (default 0: from --min-repeat-ms)" }, \
	{ OPT_INT, "repeat", 0, &(m).repeat, "N", "timed repeats per kernel (default 5)" }, \
	{ OPT_DOUBLE, "min-repeat-ms", 0, &(m).min_repeat_ms, "MS", "minimum length of a repeat (default 10)" }, \
	{ OPT_INT, "warmup", 0, &(m).warmup, "N", "untimed calls before timing, after the checked call (default 0)" }, \
	{ OPT_FLAG, "flush-cache", 0, &(m).flush, NULL, "flush the CPU caches between repeats" }, \
	{ OPT_STRING, "clock", 0, &(m).clock, "C", "time wall time (default) or cpu: the CPU time, steadier on a busy machine" }, \
	{ OPT_STRING, "evaluator", 0, &(m).evaluator, "E", "fixed (number x repeat calls) or adaptive (stop at a low CV)" }, \
	{ OPT_DOUBLE, "cv", 0, &(m).cv, "X", "adaptive: stop once the CV of per-batch throughputs is under X (0.1)" }, \
	{ OPT_INT, "microbatch", 0, &(m).microbatch, "N", "adaptive: calls per micro-batch (50)" }, \
	{ OPT_DOUBLE, "timeout", 0, &(m).timeout, "S", "limit of one kernel run in seconds (default 10)" }, \
	{ OPT_DOUBLE, "build-timeout", 0, &(m).build_timeout, "S", "limit of one compilation in seconds" }, \
	{ OPT_DOUBLE, "build-adapt", 0, &(m).build_adapt, "X", "stop a compilation past X times its batch's median, at least 5 s (default 5; 0: never)" }, \
	{ OPT_STRING, "cache-dir", 0, &(m).cache_dir, "DIR", "compiled-kernel cache (default $TUNEKIT_CACHE or ~/.cache/tunekit)" }, \
	{ OPT_STRING, "measure-lock", 0, &(m).measure_lock, "PATH", "time kernels holding this lock file, or none (default: one per user)" }, \
	{ OPT_STRING, "overlap", 0, &(m).overlap, "WHEN", "compile half a batch while the other half is timed: auto (where this machine allows it), on, off" }

struct ms_opts;
struct tk_ctx;
void ms_cli_init(ms_cli *m);
/* Apply the options that were given over *mo, with the environment's
 * TUNEKIT_MEASURE_LOCK (under --measure-lock), TUNEKIT_CACHE_MAX,
 * TUNEKIT_BUILD_ADAPT (under --build-adapt) and TUNEKIT_OVERLAP (under
 * --overlap; auto without either), and
 * show waits for the measurement lock as progress. Returns 0, or the exit
 * status after a one-line error when a value is out of range. */
int ms_cli_apply(struct tk_ctx *ctx, const ms_cli *m, struct ms_opts *mo);
/* The measurement lock to take: opt_lock (--measure-lock), else
 * $TUNEKIT_MEASURE_LOCK; *lock NULL for the default one, *nolock 1 for
 * "none"; *wait shows the wait as progress (its context: ctx). Returns 0, or
 * the exit status after an error (an empty value). */
int ms_lock_choice(struct tk_ctx *ctx, const char *opt_lock, const char **lock, int *nolock,
                   run_wait_fn *wait);

/* ---- commands ------------------------------------------------------------ */

enum {
	NEEDS_STORE = 1,  /* tk_ctx_store() opens the store */
	STORE_WRITE = 2,  /* ... for writing (created if absent) */
	USES_BLAS = 4     /* runs neural models: OpenBLAS's kernels matter */
};

typedef struct tk_ctx tk_ctx;

typedef struct tk_cmd {
	const char *name;
	int (*fn)(int argc, char **argv, tk_ctx *ctx);
	int flags;
	const char *summary;
} tk_cmd;

struct tk_ctx {
	const tk_cmd *cmd;
	const char *prog;      /* "tunekit measure" for messages */
	common_opts common;
	tk_store *store;
	int out_tty, err_tty;  /* stdout / stderr are terminals */
	char *cmdline;         /* the whole command line, for the run table */
};

/* Parse argv against the command's options plus the common ones. Prints a
 * one-line error and returns EXIT_USAGE on bad input; on --help prints the
 * usage and returns -1 (the caller exits 0). On success returns 0 and
 * leaves the operands in argv[0..*nrest). usage[0] is the synopsis line(s),
 * usage[1] the description paragraph. */
int opt_parse(tk_ctx *ctx, int *argc, char **argv, const opt *opts, const char *const *usage);
void opt_usage(tk_ctx *ctx, FILE *f, const opt *opts, const char *const *usage);

/* ---- context helpers ------------------------------------------------------ */

/* Open the store named by --db (once); prints the error and returns the exit
 * status on failure, 0 on success. */
int tk_ctx_store(tk_ctx *ctx, tk_store **out);

/* Print "tunekit CMD: message" to stderr (message from tk_errmsg() if fmt is
 * NULL) and return the exit status that matches rc. */
int tk_fail(tk_ctx *ctx, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* The exit status for a lib/ error code. */
int tk_exit_status(int rc);

/* Set by SIGINT/SIGTERM; long loops stop at the next safe point. */
extern volatile sig_atomic_t tk_interrupted;

/* The measurement ids of the record stream on standard input (its id
 * column) into a malloc'd *ids (caller frees) of *nid; prints the error
 * and returns the exit status for a stream without ids, no records or a
 * malformed stream, 0 on success. */
int read_stream_ids(tk_ctx *ctx, int64_t **ids, int *nid);

/* ---- output --------------------------------------------------------------- */

/* Progress on stderr, drawn only when stderr is a terminal and not -q:
 * "label [#####.....] done/total extra". progress_end clears the line. */
void progress_draw(tk_ctx *ctx, const char *label, double done, double total, const char *extra);
void progress_end(tk_ctx *ctx);
/* cm_params.progress of a model that trains in epochs (its ctx: a tk_ctx). */
void progress_epochs(void *ctx, int done, int total);

/* A table printed aligned on a terminal, as TSV with a header line
 * otherwise (or when forced with tsv = 1), or as a JSON array of objects. */
enum { FMT_AUTO, FMT_TABLE, FMT_TSV, FMT_JSON };
typedef struct table table;
table *table_new(int ncol, const char *const *header);
/* Append a row of ncol strings (copied; NULL prints empty / null). */
void table_row(table *t, const char *const *cells);
/* The metrics table of train and transfer: a row per set of records
 * (set, rows, tasks, rmse, mse, mse_d, top1, top5, spearman; a metric with
 * nothing to measure on is empty, or "-" in a table of fmt FMT_TABLE). */
table *metrics_table_new(void);
void metrics_row(table *tb, int fmt, const char *set, const cm_metrics *m);
/* The same for a validity classifier (train --objective validity): set,
 * rows, valid, accuracy, precision, recall, auc. */
table *class_table_new(void);
void class_row(table *tb, int fmt, const char *set, const cm_class_metrics *m);
/* Free t without printing it. */
void table_free(table *t);
/* Print to f and free t. Returns EXIT_OK or EXIT_FAIL on a write error. */
int table_print(table *t, FILE *f, int format);
/* Parse --format: "table", "tsv", "json"; -1 if unknown. */
int format_parse(const char *s);
/* --format of a command's standard output: as format_parse, and without
 * one a table on a terminal, else TSV. */
int out_format(const tk_ctx *ctx, const char *s);

/* ---- networks ------------------------------------------------------------ */

/* --layout of a network (tune, report, export, import onnx): the model's
 * NCHW, the blocked variant (import/onnx.h), or auto: both, the one of
 * the smaller estimate chosen from the records. */
enum { LAYOUT_NCHW, LAYOUT_BLOCKED, LAYOUT_AUTO };

/* The LAYOUT_* a --layout value names (NULL: nchw), -1 if none. */
int layout_parse(const char *s);

struct tk_network;
/* The variants of network `name` that --layout `layout` (NULL: nchw)
 * names into nets[0] (and nets[1], the blocked one, for auto), *nnet of
 * them, and the layout into *which. Returns 0, or prints one line and
 * returns the exit status: an unknown layout, a layout without the graph
 * (a network that is no .onnx model), and the errors of loading it. */
int net_load_layout(tk_ctx *ctx, const char *name, const char *layout, int *which,
                    struct tk_network **nets, int *nnet);

/* --layout auto's choice on hardware hw between nets[0] (nchw) and
 * nets[1] (blocked), printed to stderr (unless -q) as one line with both
 * estimates and the choice, into *chosen (0, 1, or -1 when neither has
 * every task tuned). Returns 0, or prints the error and returns the exit
 * status. */
int layout_choose(tk_ctx *ctx, tk_store *st, int64_t hw, struct tk_network *const *nets,
                  int *chosen);

/* While a command computes what it writes only at its end (train,
 * transfer), SIGINT and SIGTERM end the process at once: sig_default
 * saves the handlers and sets the defaults, sig_restore puts them back. */
typedef struct sig_saved {
	struct sigaction old_int, old_term;
} sig_saved;
void sig_default(sig_saved *s);
void sig_restore(const sig_saved *s);

/* Format helpers into caller buffers of at least 32 bytes. */
const char *fmt_seconds(char *buf, double s);   /* "12.3 us", "4.56 ms" */
const char *fmt_num(char *buf, const char *fmt, double v);

#endif
