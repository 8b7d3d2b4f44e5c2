/*
 * store_merge: one store from many. Stores filled on other machines (or by
 * the shards of one job on this one) are appended to an output store, one
 * input at a time, each in one transaction: a killed merge leaves the output
 * as it was before that input. Inputs are only read (opened read-only and
 * attached with mode=ro); nothing recorded in the output is changed or
 * removed, except that a run's end time may move later and its parameters
 * may be filled in.
 *
 * Identity, the rules that make merging the same input twice add nothing:
 *
 *   hardware       by key (cpu|isa|compiler|opt|threads=N, or a device);
 *   task           by key (the canonical task string); a task without a
 *                  space gets the input's space;
 *   configuration  by (task key, configuration text);
 *   run            by (started, method, argv, seed, replay, hardware key),
 *                  and only if every trial number both have holds the
 *                  same measurement (same configuration, same time
 *                  taken); a run that diverged (resumed separately in two
 *                  copies of a store) is appended as a run of its own, so
 *                  a run's trial numbers stay unique. Runs of different
 *                  hosts never collide: their local ids play no part;
 *   measurement    by (configuration, hardware, run, trial, time taken);
 *   run log row    by (run, round, key);  foreign record by (format, text);
 *   feature        by (configuration, kind, version);
 *   model          by (kind, hardware key, created, meta, data). Its meta
 *                  is kept as written, ids in it are those of its source.
 *
 * Functions return TK_OK or an error code with tk_errmsg() set, as in
 * store.h.
 */
#ifndef TK_STORE_MERGE_H
#define TK_STORE_MERGE_H

#include <signal.h>
#include <stdint.h>

#include "store.h"

/* What one input added to the output. */
typedef struct store_merge_stats {
	int64_t hardware, tasks, configs; /* rows new in the output */
	int64_t runs;                     /* runs new in the output */
	int64_t runs_known;               /* runs the output already had */
	int64_t records;                  /* measurements new in the output */
	int64_t duplicates;               /* measurements the output already had */
	int64_t logs, foreign, features, models; /* new rows of those tables */
} store_merge_stats;

/* Check, without writing to it, that path is a record store this build can
 * merge: a tunekit store of schema version STORE_VERSION that passes
 * SQLite's integrity_check and foreign_key_check. Returns TK_OK;
 * TK_EINVAL if path is the same file as out_path (which may be NULL or
 * absent); TK_ECORRUPT for a file that is not a store or is damaged (a
 * partial copy); TK_ESTORE if it cannot be opened or is of an older
 * version. */
int store_merge_check(const char *path, const char *out_path);

/* Open (creating if absent) the output store of a merge at path, as
 * store_open(path, 0, out) does, on a connection that can attach inputs.
 * Free with store_close(). */
int store_merge_open(const char *path, tk_store **out);

/* Append the store at path (which should have passed store_merge_check)
 * to out in one transaction, counting what it added into *st. stop (may be
 * NULL) is polled as SQLite works: once it is set the merge of this input
 * is rolled back and TK_EINTR returned. On any error out is as it was and
 * *st is zero. TK_ECORRUPT if path is not a store of STORE_VERSION;
 * TK_ESTORE for SQLite failures (out locked, disk full). */
int store_merge(tk_store *out, const char *path, volatile sig_atomic_t *stop,
                store_merge_stats *st);

#endif
