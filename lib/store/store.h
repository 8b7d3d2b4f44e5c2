/*
 * store: the SQLite record store every tunekit subcommand shares.
 *
 * The schema lives in schemas/store.sql (embedded at build time); its version
 * is PRAGMA user_version and store_open() migrates older files forward. The
 * database runs in WAL mode with a busy timeout so a reader at the end of a
 * pipeline never blocks the writer at its start. Writers group each batch in
 * store_begin()/store_commit(): a killed process loses at most the batch in
 * flight, never anything committed.
 *
 * All functions return TK_OK or an error code with tk_errmsg() set:
 * TK_ESTORE for SQLite failures (busy, full, I/O), TK_ECORRUPT when the file
 * is not a tunekit store or is damaged, TK_ENOTFOUND for absent ids.
 */
#ifndef TK_STORE_H
#define TK_STORE_H

#include <stdint.h>

#include "base/meas.h"

typedef struct tk_store tk_store;

#define STORE_VERSION 4

enum {
	STORE_READONLY = 1 /* open an existing store without creating or migrating */
};

/* Open (creating if absent unless STORE_READONLY) the store at path and
 * migrate it to STORE_VERSION. On success *out owns the connection; free with
 * store_close(). A file that is not SQLite, has foreign tables, or carries a
 * user_version newer than this build gives TK_ECORRUPT and *out = NULL. */
int store_open(const char *path, int flags, tk_store **out);
void store_close(tk_store *s); /* NULL is allowed */

/* Transactions (BEGIN IMMEDIATE / COMMIT / ROLLBACK). Not nestable. */
int store_begin(tk_store *s);
int store_commit(tk_store *s);
int store_rollback(tk_store *s);

/* Get-or-create rows. Strings are copied; the caller keeps ownership. */
typedef struct store_hw {
	const char *key;  /* identity, unique */
	const char *kind; /* "cpu", "simulated", "imported", "replay" */
	const char *cpu, *isa, *cc, *spec; /* may be NULL */
	int threads;      /* 0 if unknown */
} store_hw;
int store_hardware_get(tk_store *s, const store_hw *hw, int64_t *id);
int store_task_get(tk_store *s, const char *key, const char *op, double flops,
                   int64_t *id);
/* idx < 0 stores NULL. If (task_id, text) exists its id is returned and
 * sched/idx are left as they are. */
int store_config_get(tk_store *s, int64_t task_id, int64_t idx, const char *text,
                     const char *sched, int64_t *id);

typedef struct store_run {
	const char *argv, *method, *replay; /* replay may be NULL */
	int64_t seed, hardware_id;
} store_run;
int store_run_begin(tk_store *s, const store_run *r, int64_t *id);
int store_run_end(tk_store *s, int64_t id); /* sets ended = now */
/* The hardware a run was begun on (0 if it has none, as an import);
 * TK_ENOTFOUND for an unknown run. */
int store_run_hardware(tk_store *s, int64_t run_id, int64_t *hw_id);
/* Make this connection the one writer of run_id, until store_close() or the
 * process's end (a lock in the file PATH-lock beside the store, which a
 * SIGKILL releases too). TK_ESTORE "run R is being tuned by process P" when
 * another connection owns it; TK_OK at once for an in-memory store. */
int store_run_own(tk_store *s, int64_t run_id);

typedef struct store_meas {
	int64_t config_id, hardware_id, run_id; /* run_id 0 stores NULL */
	int trial;
	int valid, error;        /* error: MEAS_* of base/meas.h */
	const char *message;     /* may be NULL */
	double mean, std, median;/* seconds; ignored (NULL) when !valid */
	int number, nrepeat;
	const double *times;     /* nrepeat values, may be NULL if nrepeat == 0 */
	double compile_s;
	double at;               /* 0 means now */
	double load;             /* load average per CPU before the timed runs; <= 0:
	                            unknown (stored as NULL) */
	int bounded;             /* 1: timed once, past tune's bound (valid only) */
} store_meas;
int store_meas_add(tk_store *s, const store_meas *m, int64_t *id);

/* A measurement joined with its task, config and hardware, as queries
 * return it. Strings point into the statement and are valid only during
 * the callback. */
typedef struct store_rec {
	int64_t id, config_id, task_id, hardware_id, run_id;
	int trial, valid, error;
	const char *task, *config, *sched, *hardware, *message;
	int64_t idx;            /* -1 if NULL */
	double flops, mean, std, median, compile_s, at;
	int number, nrepeat;
	double load;            /* load average per CPU when timed, -1 if unknown */
	const char *hw_kind;    /* the hardware's kind: cpu, simulated, imported, replay */
	int bounded;            /* 1: its timing stopped at the bound (tune --bound):
	                           one repeat, and never a task's best */
} store_rec;
/* Callback: return 0 to continue, non-zero to stop (that value is returned
 * by the query function as its result). */
typedef int (*store_rec_cb)(void *ctx, const store_rec *r);

/* The best valid configuration per (task, hardware), ordered by task key
 * then hardware key, as its median measurement: a configuration measured
 * n times is ranked by its (n/2 + 1)-th fastest record (the median, the
 * slower middle one of an even count), so one lucky timing does not make
 * it best; that record is passed. Bounded records (store_rec.bounded) are
 * not counted: a task whose only valid records are bounded has no best.
 * hardware_id 0 means all hardware. */
int store_best(tk_store *s, int64_t hardware_id, store_rec_cb cb, void *ctx);
/* One measurement by id; TK_ENOTFOUND if absent. */
int store_meas_get(tk_store *s, int64_t id, store_rec_cb cb, void *ctx);
/* Every measurement of a run in trial order. */
int store_run_records(tk_store *s, int64_t run_id, store_rec_cb cb, void *ctx);
/* Every measurement on the hardware with this key (or this id, in decimal;
 * NULL: every hardware) of the task with this key (NULL: every task), by
 * task key then id (none if the store does not know the hardware). */
int store_hw_records(tk_store *s, const char *hw_key, const char *task, store_rec_cb cb,
                     void *ctx);
/* The distinct configurations measured on that hardware (key or decimal
 * id) of that task, valid or not, into *n (0 for an unknown hardware). */
int store_hw_configs(tk_store *s, const char *hw_key, const char *task, int64_t *n);

/* Lowest median of the valid measurements of (task, config text) on a
 * hardware; TK_ENOTFOUND if there is none. */
int store_config_median(tk_store *s, int64_t task_id, const char *config, int64_t hardware_id,
                        double *median);

/* Decode the times BLOB of measurement id into a malloc'd array the caller
 * frees; *n receives the count. */
int store_meas_times(tk_store *s, int64_t id, double **times, int *n);

typedef struct store_runinfo {
	int64_t id, seed, hardware_id;
	const char *argv, *method, *replay, *hardware;
	double started, ended; /* ended < 0 if NULL */
	int64_t ntrials, nvalid;
	int64_t nbounded;      /* valid records whose timing stopped at tune's bound */
	double best_median;    /* < 0 if no valid unbounded record */
	/* the time split of tune and measure from the run log, summed over
	 * the processes of the run; each < 0 when the run logged none: seconds
	 * in search, model fits, compilation, running (the reference
	 * included); kernels compiled, cached; seconds of code generation, of
	 * the reference (part of run_s), of storing the records */
	double search_s, fit_s, compile_s, run_s, compiled, cached;
	double codegen_s, ref_s, store_s;
	/* tune's adaptive controller: trials measured and trials the model
	 * answered, summed over tasks; < 0 when the run logged none */
	double measured, predicted;
	/* tune's guard of a model file: the model each measured batch was
	 * planned on, in trial order, one character a batch: 'f' the file's,
	 * 's' the one fitted from scratch; NULL when the run logged none */
	const char *guard;
} store_runinfo;
typedef int (*store_run_cb)(void *ctx, const store_runinfo *r);
/* All runs in id order. */
int store_runs(tk_store *s, store_run_cb cb, void *ctx);

#endif
