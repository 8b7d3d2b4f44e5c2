/*
 * measure: measure configurations of a task on a target. A batch is built
 * in parallel (and cached), then run one kernel at a time, each checked
 * against the reference before its time is believed. The runs of a batch
 * happen under the measurement lock (run.h), so that no two tunekit
 * processes time kernels at once; compiles do not take it. Where this
 * machine allows it (overlap.c), the second half of a batch compiles while
 * the first half is timed.
 *
 * This is the one place the pipeline task -> space -> schedule -> code ->
 * measurement comes together; callers (tune, measure) store the results.
 *
 * On a simulated accelerator (a vta-sim target, lib/vta) the same calls
 * take the accelerator's space; a batch is lowered to VTA programs (the
 * device compiler's rejections are records at once) and each program runs
 * in the simulator in a child process, its output checked against the
 * reference and its latency the simulated cycles at the board's clock.
 */
#ifndef TK_MEASURE_H
#define TK_MEASURE_H

#include <stdint.h>

#include "build.h"
#include "run.h"
#include "base/target.h"
#include "space/space.h"
#include "task/te.h"
#include "vta/vta.h"

/* Wall seconds of ms_measure's phases and what its builds did, and those
 * of ms_hidden's builds (hidden.h). */
typedef struct ms_time {
	double codegen_s;  /* configurations to C source (schedule, lowering, emitting) */
	double compile_s;  /* the builds, parallel, cache lookups included; with
	                      overlap only the wait for the second half's, so
	                      that the phases add up to the wall time */
	double run_s;      /* the reference (once per task) and the runs: check and timing */
	double ref_s;      /* the part of run_s that computing the inputs and the reference
	                      added: it runs beside the first batch's compilers, and only
	                      its time beyond theirs is counted */
	int64_t compiled;  /* kernels compiled (or tried: errors and timeouts count) */
	int64_t cached;    /* kernels found in the build cache */
	double hidden_s;   /* the part of codegen_s and compile_s that ms_hidden spent
	                      building kernels for their hidden features */
} ms_time;

/* A task on a vta-sim target: its workload and data. */
typedef struct ms_vta {
	vta_hw hw;
	vta_shape shape;
	int8_t *inp, *wgt; /* packed inputs (owned), once ready */
	size_t ninp, nwgt;
	int8_t *expect;    /* the expected output, operator layout (owned) */
} ms_vta;

typedef struct ms_task {
	te_prog *prog;     /* owned */
	ms_vta *vta;       /* owned; NULL unless opened for a vta-sim target */
	sp_space *space;   /* owned */
	uint64_t seed;     /* of the random inputs */
	int ready;         /* inputs and reference computed */
	int ref_cached;    /* the reference came from the cache (build_ref_load) */
	float **in;        /* prog->ninput arrays */
	size_t *in_n;
	double *ref, *refabs;
	run_io io;
	int overlap_probed;  /* this machine was asked about overlap (ms_opts.overlap) */
	ms_time time;      /* where ms_measure's time went, summed over its calls */
} ms_task;

/* Parse task, build its space. The inputs and the reference are computed
 * on first measurement, from PCG32 seeded with seed. TK_EINVAL for a
 * malformed task. Free with ms_task_free(). */
int ms_task_open(const char *task, uint64_t seed, ms_task **out);
/* ms_task_open for target tg: a CPU target (or tg NULL) as ms_task_open; a
 * vta-sim target the accelerator's space (vta_space_create), and TK_EUNSUPP
 * for an operator it cannot run. The task is then measured on targets of
 * the same kind only. */
int ms_task_open_target(const char *task, const tk_target *tg, uint64_t seed, ms_task **out);
void ms_task_free(ms_task *t);

/* Progress of a batch: phase "build" or "run", done of total. */
typedef void (*ms_progress_fn)(void *ctx, const char *phase, int done, int total);

typedef struct ms_opts {
	int jobs;               /* parallel compilers, >= 1 */
	double build_timeout;   /* seconds per compilation */
	double build_adapt;     /* stop a compilation past this many times its batch's
	                           median (build_opts.adapt); 0: never */
	double build_adapt_floor; /* ... but not before this many seconds */
	const char *cache_dir;  /* NULL: build_default_cache() */
	int64_t cache_max;      /* the cache's size limit in bytes; 0: BUILD_CACHE_MAX_DEFAULT */
	run_opts run;
	ms_progress_fn progress;/* may be NULL */
	void *ctx;
	const char *lock;       /* measurement lock file; NULL: run_lock_default() */
	int nolock;             /* 1: time without taking the lock */
	run_wait_fn wait;       /* called while the lock is awaited; may be NULL */
	void *wait_ctx;
	int overlap;            /* MS_OVERLAP_*: whether the second half of a batch is
	                           compiled, by one compiler fewer, while its first
	                           half is timed */
	int reports;            /* 1: the kernels compiled also write the compiler's
	                           reports, whose facts are kept for ms_hidden
	                           (ms_hidden_keep), so that a kernel measured before
	                           its hidden features are asked for is compiled once;
	                           one that fails so is built again without them */
} ms_opts;

/* ms_opts.overlap. AUTO overlaps where this machine's verdict
 * (ms_overlap_load) allows it; when there is none yet, the first batch to
 * be timed makes it (ms_overlap_probe) and stores it. */
enum { MS_OVERLAP_OFF = 0, MS_OVERLAP_ON = 1, MS_OVERLAP_AUTO = 2 };

#define MS_BUILD_ADAPT 5.0
#define MS_BUILD_ADAPT_FLOOR 5.0

/* Defaults: 2 jobs, 60 s build timeout, a compilation stopped past 5 times
 * its batch's median and 5 s, default cache and size limit,
 * run_opts_default, the default lock, overlap AUTO, no callbacks. */
void ms_opts_default(ms_opts *o);

/* ---- overlap: may compiles run beside timed kernels? (overlap.c) ------- */

#define MS_OVERLAP_BIAS 0.02 /* the largest slowdown of the median allowed */

typedef struct ms_overlap {
	int allowed;              /* 1: overlap biases nothing measurable here */
	double alone_s, with_s;   /* the probe kernel's median latency alone and
	                             beside a compile, medians over the rounds */
	double alone_cv, with_cv; /* the spread of its repeats (std/mean), likewise */
} ms_overlap;

/* This machine's verdict, from the file "overlap" beside the default
 * measurement lock: *found 1 and *v filled, or *found 0 when there is none
 * (or it is unreadable as one). TK_OK, or TK_EIO when the directory is
 * unusable or the file cannot be read. */
int ms_overlap_load(ms_overlap *v, int *found);
/* Write *v as this machine's verdict (atomically). TK_OK or TK_EIO. */
int ms_overlap_store(const ms_overlap *v);
/* Set and return v->allowed from its figures: the median beside a compile
 * at most MS_OVERLAP_BIAS slower, the spread at most 1.5 times (or 0.02
 * more than) the spread alone. */
int ms_overlap_judge(ms_overlap *v);
/* Ask this machine: build the probe's kernel (overlap.c: it streams 32 MiB
 * from memory) for tg into o's cache, time it in rounds of 5 repeats of at
 * least 50 ms alone and beside a compiler building it again and again
 * (into a private directory of the cache, removed after), in turn, and
 * judge (ms_overlap_judge). The caller holds the measurement lock. TK_OK
 * with *v filled; TK_EIO when the kernel fails or the cache cannot be
 * used, TK_ENOMEM. */
int ms_overlap_probe(const tk_target *tg, const ms_opts *o, ms_overlap *v);

typedef struct ms_result {
	char *config, *sched;   /* canonical text and primitive sequence (owned) */
	int64_t idx;            /* index in the space */
	int error;              /* MEAS_* */
	char msg[256];          /* reason when error != MEAS_OK */
	double compile_s;       /* 0 when the build was cached */
	int cached;
	run_result run;         /* times when error == MEAS_OK */
	double load;            /* 1-minute load average per online CPU just before
	                           the batch's timed runs; 0 if unknown or not run */
	double at;              /* when measured, Unix seconds; 0 = now. Replayed
	                           results carry the simulated time */
} ms_result;

/* Measure n configurations of t on target tg (of the kind t was opened for).
 * out[] receives one result per configuration, in order; free them with
 * ms_results_free(). On vta-sim a result has one repeat, the simulated
 * latency, and its message starts with the failure's tag (vta_status_name).
 * Returns TK_OK
 * when every configuration has a result (valid or not), TK_ENOMEM, TK_EIO
 * (cache, lock or processes unusable), TK_EINTR (o->wait stopped the wait
 * for the lock) otherwise. */
int ms_measure(ms_task *t, const tk_target *tg, const ms_opts *o, const sp_config *cfg,
               int n, ms_result *out);
void ms_results_free(ms_result *r, int n);

#endif
