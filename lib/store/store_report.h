/*
 * store_report: the lookups `tunekit report` and `tunekit export` make
 * besides the record queries of store.h: when a run started, which run is
 * the most recent, the best latency a task has reached on a hardware, a
 * hardware row by id or key, and the list of hardware. All are read-only. Functions return TK_OK or
 * an error code with tk_errmsg() set, as in store.h.
 */
#ifndef TK_STORE_REPORT_H
#define TK_STORE_REPORT_H

#include <stddef.h>
#include <stdint.h>

#include "store.h"

/* When run run_id started (run.started, Unix seconds) into *started, and
 * when method is not NULL its method (e.g. tune/xgb+sa), cut to size - 1
 * bytes. TK_ENOTFOUND ("no run ID") if there is no such run; TK_ESTORE. */
int store_run_info(tk_store *s, int64_t run_id, double *started, char *method, size_t size);

/* The id of the most recent run (the highest id) into *run_id. TK_ENOTFOUND
 * ("the store has no runs") if there is none; TK_ESTORE. */
int store_run_latest(tk_store *s, int64_t *run_id);

/* The lowest median (seconds) of the valid, unbounded measurements of task
 * task_id on hardware hardware_id that have a positive median, from any run, into
 * *median; -1 when there is none (that is not an error). TK_ESTORE. */
int store_task_best(tk_store *s, int64_t task_id, int64_t hardware_id, double *median);

/* Find a hardware row: by id when id > 0, otherwise by its key (NULL is
 * taken as ""). On TK_OK *id_out receives its id and *key_out, *spec_out
 * (either may be NULL) its key and target spec as malloc'd strings the
 * caller frees (*spec_out NULL when the store has no spec: imported
 * hardware). TK_ENOTFOUND ("no hardware ID in the store") when there is no
 * such row, TK_ESTORE, TK_ENOMEM; on error the strings are NULL. */
int store_hardware_find(tk_store *s, int64_t id, const char *key, int64_t *id_out,
                        char **key_out, char **spec_out);

/* Every hardware row with what the store holds of it, by id: its
 * measurements, the valid ones, and the tasks they are of (0s for
 * hardware without records). hardware_id > 0: that row only. cb returns
 * non-zero to stop (that value is returned). TK_ESTORE. */
typedef struct store_hwinfo {
	int64_t id, nrec, nvalid, ntask;
	const char *key, *kind, *spec; /* spec NULL for imported hardware */
} store_hwinfo;
typedef int (*store_hw_cb)(void *ctx, const store_hwinfo *h);
int store_hardware_list(tk_store *s, int64_t hardware_id, store_hw_cb cb, void *ctx);

#endif
